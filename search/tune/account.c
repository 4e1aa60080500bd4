/* account.c — the run's last lines for each generator with a budget of its
 * own (kevo_generator.budgeted): how many calls it made of those asked,
 * how its candidates failed (by kind), how many compiled and verified, the
 * best one's figures, and, when it made fewer calls than asked, why.
 *
 * A generator's candidates are those hanging on an edge of its move (a
 * failed call is a failed candidate with its edge too), read from the DB,
 * so the account covers the run's earlier processes as well. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

#define TA_KINDS 16 /* failure kinds counted apart; more are summed as "other" */

/* What a generator's candidates came to. */
typedef struct ta_count {
    int made, compiled, verified, failed;
    char kind[TA_KINDS][32];
    int nkind[TA_KINDS], kinds, other;
    const kevo_cand_row *best; /* verified, the highest fitness; NULL none */
} ta_count;

static void ta_fail(ta_count *c, const char *kind)
{
    c->failed++;
    for (int k = 0; k < c->kinds; k++)
        if (strcmp(c->kind[k], kind) == 0) {
            c->nkind[k]++;
            return;
        }
    if (c->kinds == TA_KINDS) {
        c->other++;
        return;
    }
    snprintf(c->kind[c->kinds], sizeof c->kind[0], "%s", kind[0] ? kind : "unknown");
    c->nkind[c->kinds++] = 1;
}

/* Whether candidate id hangs on an edge of move. */
static bool ta_of_move(const kevo_edge_row *edges, int ne, int64_t id, const char *move)
{
    for (int i = 0; i < ne; i++)
        if (edges[i].child_id == id && strcmp(edges[i].op, move) == 0)
            return true;
    return false;
}

static void ta_count_rows(const kevo_cand_row *rows, int n, const kevo_edge_row *edges, int ne, const char *move,
                          ta_count *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < n; i++) {
        const kevo_cand_row *r = &rows[i];
        if (!ta_of_move(edges, ne, r->id, move))
            continue;
        c->made++;
        /* compiled: a binary, unless the compile failed (a failed compile is cached under its key too) */
        c->compiled += r->binary_key[0] != '\0' && strncmp(r->fail, "compile_", 8) != 0;
        if (strcmp(r->status, "failed") == 0)
            ta_fail(c, r->fail);
        if (strcmp(r->status, "ok") == 0) {
            c->verified++;
            double f = isnan(r->fitness) ? r->speedup : r->fitness;
            double b = !c->best ? -1 : isnan(c->best->fitness) ? c->best->speedup : c->best->fitness;
            if (!c->best || (!isnan(f) && f > b))
                c->best = r;
        }
    }
}

/* Why generator i made fewer calls than asked. */
static const char *ta_why(const tn_run *R, int i, char *buf, size_t n)
{
    const tn_gens *G = &R->G;
    const kevo_stop *st = &R->stop;
    if (G->why[i][0])
        return G->why[i];
    if (st->interrupted)
        return "the run was interrupted first";
    if (strcmp(st->reason, "time_limit") == 0 || strcmp(st->reason, "target") == 0 ||
        strcmp(st->reason, "plateau") == 0) {
        snprintf(buf, n, "the run's %s rule held first (nothing more is proposed once it holds)", st->reason);
        return buf;
    }
    if (strcmp(st->reason, "exhausted") == 0)
        return "the search ended with nothing more to propose";
    snprintf(buf, n, "the run ended (%s) first", st->reason);
    return buf;
}

/* The lines of budgeted generator i. */
static void ta_say(tn_run *R, int i, const ta_count *c)
{
    const tn_gens *G = &R->G;
    const char *name = G->list.type[i]->name;
    kv_buf b;
    kv_buf_init(&b);
    if (G->asked[i] >= 0)
        kv_buf_printf(&b, "%s: %lld of %lld calls made", name, (long long)G->calls[i], (long long)G->asked[i]);
    else
        kv_buf_printf(&b, "%s: %lld calls made in the run (none by this process: it is off here)", name,
                      (long long)G->calls[i]);
    kv_buf_printf(&b, "; %d failed", c->failed);
    for (int k = 0; k < c->kinds; k++)
        kv_buf_printf(&b, "%s%s %d", k ? ", " : " (", c->kind[k], c->nkind[k]);
    if (c->other)
        kv_buf_printf(&b, ", other %d", c->other);
    if (c->kinds)
        kv_buf_puts(&b, ")");
    kv_buf_printf(&b, "; %d compiled, %d verified", c->compiled, c->verified);
    tn_line(&R->prog, "%s", b.data ? b.data : name);
    kv_buf_release(&b);
    if (c->best)
        tn_line(&R->prog, "%s: best #%lld %s: %.4f ms, %.2fx the stage-0 baseline, %.2fx the fastest peer, %.1f "
                "TFLOP/s", name, (long long)c->best->id, c->best->family, c->best->median_ms, c->best->speedup,
                c->best->vs_peer, c->best->tflops);
    else if (R->ro.def.compile_only)
        tn_line(&R->prog, "%s: best: none timed (a compile-only run; `kevo tune --resume` on a GPU verifies them)",
                name);
    else
        tn_line(&R->prog, "%s: best: none of its candidates verified", name);
    char buf[256];
    if (G->asked[i] >= 0 && G->calls[i] < G->asked[i])
        tn_line(&R->prog, "%s: stopped after %lld of %lld calls: %s", name, (long long)G->calls[i],
                (long long)G->asked[i], ta_why(R, i, buf, sizeof buf));
}

void tn_gens_account(tn_run *R)
{
    const tn_gens *G = &R->G;
    bool any = false;
    for (int i = 0; i < G->list.n; i++)
        any |= i != G->round && G->list.listed[i] && G->list.type[i]->budgeted;
    if (!any)
        return;
    kevo_cand_row *rows = NULL;
    kevo_edge_row *edges = NULL;
    int n = 0, ne = 0;
    kevo_err err;
    kevo_status st = kevo_db_cand_list(R->e.db, R->run.id, &rows, &n, &err);
    if (!st)
        st = kevo_db_edge_list(R->e.db, R->run.id, &edges, &ne, &err);
    for (int i = 0; i < G->list.n && !st; i++) {
        const kevo_generator *t = G->list.type[i];
        if (i == G->round || !G->list.listed[i] || !t->budgeted || !t->move)
            continue;
        ta_count c;
        ta_count_rows(rows, n, edges, ne, t->move, &c);
        ta_say(R, i, &c);
    }
    if (st)
        tn_line(&R->prog, "kevo: the generators' account could not be read: %s", err.msg);
    kevo_cand_rows_free(rows, n);
    free(edges);
}
