/* propose.c — the generators in the loop (search/gen.h): checked before
 * anything is written, opened once the graph is ready, and each round:
 * every other generator's call started on the parent it picks, the round
 * generator's batch registered, a finished call taken into the round (or
 * stored as a failed candidate).  Nothing here names a generator: each is a
 * row of the table. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

/* What generator i works in (ctx.s is set at open). */
static void tn_gen_ctx(tn_run *R, int i, kevo_gen_ctx *ctx)
{
    tn_gens *G = &R->G;
    const tn_env *e = &R->e;
    memset(ctx, 0, sizeof *ctx);
    ctx->op = e->op;
    ctx->shape = e->shape_txt;
    ctx->dtype = kevo_dtype_name(e->dt);
    ctx->arch = e->arch;
    ctx->abi_header = e->abi;
    ctx->inputs = e->inputs;
    ctx->ninputs = e->ninputs;
    ctx->outputs = e->outputs;
    ctx->noutputs = e->noutputs;
    ctx->data_dir = R->ro.proc.data_dir;
    ctx->cancel = e->cancel;
    ctx->names = G->list.names;
    ctx->options = G->list.options[i];
    ctx->cmd = &R->o->gen;
    ctx->seed = R->ro.def.seed;
    ctx->calls = G->list.calls[i];
}

kevo_status tn_gens_check(tn_run *R, kevo_err *err)
{
    tn_gens *G = &R->G;
    kevo_status st = KEVO_OK;
    bool any_off = false;
    for (int i = 0; i < G->list.n; i++) {
        const kevo_generator *t = G->list.type[i];
        G->parent[i] = -1;
        G->calls[i] = G->list.calls[i];
        G->asked[i] = -1;
        G->why[i][0] = '\0';
        tn_gen_ctx(R, i, &G->ctx[i]);
        if (t->round)
            G->round = i;
        if (!G->list.listed[i] || t->round || !t->check)
            continue;
        /* the generators this process runs; the others of the run are said to be off */
        kevo_status s = t->check(&G->ctx[i], &G->off[i], err);
        any_off |= G->off[i];
        if (!st)
            st = s;
    }
    /* without the round generator listed it only seeds the others; alone, it proposes the rounds */
    G->ctx[G->round].full = G->list.listed[G->round] || any_off;
    return st;
}

kevo_status tn_gens_open(tn_run *R, kevo_err *err)
{
    tn_gens *G = &R->G;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < G->list.n && !st; i++) {
        const kevo_generator *t = G->list.type[i];
        G->ctx[i].s = &R->s;
        if (!t->round && (!G->list.listed[i] || G->off[i]))
            continue;
        st = t->open(&G->ctx[i], &G->g[i], err);
        if (!st) {
            G->g[i]->type = t;
            G->g[i]->full = G->ctx[i].full;
            if (t->budgeted)
                G->asked[i] = G->g[i]->calls_max;
        }
    }
    return st;
}

void tn_gens_describe(tn_run *R)
{
    tn_gens *G = &R->G;
    for (int i = 0; i < G->list.n; i++) {
        const kevo_generator *t = G->list.type[i];
        if (t->round || !t->describe || !(G->g[i] || G->off[i]))
            continue;
        kv_buf line;
        kv_buf_init(&line);
        t->describe(&G->ctx[i], G->g[i] != NULL, R->run.id, &line);
        if (line.len)
            tn_line(&R->prog, "%s", line.data);
        kv_buf_release(&line);
    }
}

void tn_gens_close(tn_run *R)
{
    tn_gens *G = &R->G;
    for (int i = 0; i < G->list.n; i++) {
        if (!G->g[i])
            continue;
        if (G->busy[i])
            G->g[i]->type->cancel(G->g[i]); /* a call the run no longer waits for: not stored */
        G->g[i]->type->close(G->g[i]);
        G->g[i] = NULL;
        G->busy[i] = false;
    }
}

int64_t tn_gens_budget(const tn_run *R)
{
    const tn_gens *G = &R->G;
    int64_t n = R->ro.def.budget;
    for (int i = 0; i < G->list.n; i++) {
        if (i == G->round || !G->list.type[i]->budgeted || !G->list.listed[i])
            continue;
        const kevo_gen *g = G->g[i];
        n += g && g->calls_max > G->calls[i] ? g->calls_max : G->calls[i];
    }
    return n;
}

/* The run's budget again (a generator stopped early: its calls left go). */
static void tn_budget_update(tn_run *R)
{
    R->stop.budget = tn_gens_budget(R);
    R->prog.budget = R->stop.budget;
}

/* Whether generator i rewrites nodes (not the round generator) and runs here. */
static bool tn_side(const tn_gens *G, int i)
{
    return G->g[i] && i != G->round;
}

/* Each other generator's call: one when none is in flight and its calls
 * allow, on the parent it picks.  Errors: its start's. */
static kevo_status tn_gens_start(tn_run *R, kevo_err *err)
{
    tn_gens *G = &R->G;
    for (int i = 0; i < G->list.n; i++) {
        kevo_gen *g = G->g[i];
        if (!tn_side(G, i) || G->busy[i] || (g->calls_max >= 0 && G->calls[i] >= g->calls_max))
            continue;
        G->parent[i] = g->type->parent(g);
        if (G->parent[i] < 0)
            continue;
        kevo_gen_call call = {.db = R->e.db, .run_id = R->run.id, .parent = G->parent[i], .best = R->best,
                              .k = G->calls[i]};
        kevo_status st = g->type->start(g, &call, err);
        if (st)
            return st;
        G->calls[i]++;
        G->busy[i] = true;
        char what[96];
        snprintf(what, sizeof what, "asking %s", g->type->label);
        tn_bar(&R->prog, R->done, R->best, what);
    }
    return KEVO_OK;
}

/* How many of the round's proposals the budget has room for: the run's
 * budget (tn_gens_budget: budgeted generators' calls counted apart) less
 * what is applied and in flight, a slot for each call in flight and one for
 * each budgeted call still to come. */
static int64_t tn_round_room(tn_run *R, int64_t inflight, bool *busy)
{
    tn_gens *G = &R->G;
    int64_t left = 0, nbusy = 0;
    for (int i = 0; i < G->list.n; i++) {
        if (!tn_side(G, i))
            continue;
        kevo_gen *g = G->g[i];
        nbusy += G->busy[i];
        if (g->calls_max >= 0 && g->calls_max - G->calls[i] > 0)
            left += g->calls_max - G->calls[i];
    }
    *busy = nbusy > 0;
    return R->stop.budget - R->done - inflight - nbusy - left;
}

/* Why each side generator with calls left makes no more: the round ended
 * the search and none has a parent. */
static void tn_gens_no_parent(tn_run *R)
{
    tn_gens *G = &R->G;
    for (int i = 0; i < G->list.n; i++)
        if (tn_side(G, i) && !G->why[i][0] && G->g[i]->calls_max > G->calls[i] &&
            G->g[i]->type->parent(G->g[i]) < 0)
            snprintf(G->why[i], sizeof G->why[i], "no node could be its parent (no candidate compiled, or none "
                     "verified, to rewrite) and the template search had nothing more to propose");
}

/* The round: the round generator's proposals, registered (*ready of them
 * prepared), or *end when it has nothing and nothing is coming.  Errors:
 * the generator's, tn_register's. */
static kevo_status tn_round(tn_run *R, int64_t inflight, int *ready, bool *end, kevo_err *err)
{
    tn_gens *G = &R->G;
    bool busy;
    int64_t room = tn_round_room(R, inflight, &busy);
    int want = (int)(room < R->ro.def.batch ? room : R->ro.def.batch);
    kevo_gen *g = G->g[G->round];
    kevo_gen_source src;
    kevo_gen_source_init(&src);
    kevo_status st = KEVO_OK;
    if (want > 0) {
        tn_trace(&R->e, "propose", want, -1);
        kevo_gen_call call = {.db = R->e.db, .run_id = R->run.id, .parent = -1, .max = want, .best = R->best};
        st = g->type->start(g, &call, err);
        if (!st)
            st = g->type->finish(g, &src, err);
    }
    int n = st ? 0 : src.nprops;
    kevo_stop_facts f = {.done = R->done, .inflight = inflight, .busy = busy};
    if (!st && n == 0 && kevo_stop_check(&R->stop, KEVO_STOP_AT_EMPTY, &f) == KEVO_STOP_END) {
        *end = true;
        tn_gens_no_parent(R);
    }
    if (!st && n > 0) {
        tn_trace(&R->e, "register", n, -1);
        st = tn_register(&R->e, &R->s, R->run.id, R->nrows, R->next_round, src.props, n, NULL, R->works, ready,
                         err);
        tn_trace(&R->e, "registered", *ready, -1);
        R->nrows += n;
    }
    kevo_gen_source_release(&src);
    return st;
}

/* Store a call that gave no candidate to compile (a failed call, an
 * unusable or refused reply): a failed candidate row, the edge of the
 * generator's move from its parent and the call, in one transaction. */
static kevo_status tn_store_failure(tn_run *R, int64_t seq, int parent, const char *move, kevo_gen_source *g,
                                    int64_t *cand_id, kevo_err *err)
{
    tn_env *e = &R->e;
    kevo_cand_row row;
    kevo_cand_row_init(&row);
    row.run_id = R->run.id;
    row.seq = seq;
    snprintf(row.family, sizeof row.family, "%s", g->family);
    row.params = kv_strdup("{}");
    snprintf(row.status, sizeof row.status, "failed");
    snprintf(row.fail, sizeof row.fail, "%s", kevo_fail_name(g->fail));
    row.fail_msg = kv_strdup(g->why);
    row.fitness = 0.0;
    kevo_status st = row.params && row.fail_msg ? kevo_db_begin(e->db, err)
                                                : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    bool open = !st;
    if (!st)
        st = kevo_db_cand_insert(e->db, &row, err);
    *cand_id = row.id;
    if (!st && parent >= 0)
        st = kevo_db_edge_insert(e->db, R->run.id, R->s.nodes[parent].cand_id, row.id, move, err);
    if (!st && g->gen.generator[0]) {
        g->gen.candidate_id = row.id;
        st = kevo_db_generation_put(e->db, &g->gen, err);
    }
    if (!st)
        st = kevo_db_commit(e->db, err);
    else if (open)
        kevo_db_rollback(e->db);
    kevo_cand_row_release(&row);
    return st;
}

/* A generator's failed call (or a repeat of an earlier candidate): stored
 * as a failed candidate at once, counted, and said. */
static kevo_status tn_take_failure(tn_run *R, int i, int parent, kevo_gen_source *src, kevo_err *err)
{
    const kevo_generator *t = R->G.list.type[i];
    const int64_t parent_id = parent >= 0 ? R->s.nodes[parent].cand_id : 0;
    snprintf(src->family, sizeof src->family, "%s_call%lld", t->move, (long long)(R->G.calls[i] - 1));
    int64_t id = 0;
    kevo_status st = tn_store_failure(R, ++R->nrows, parent, t->move, src, &id, err);
    if (!st) {
        R->done++;
        kevo_cand_event c = {.outcome = KEVO_CAND_FAILED, .id = id, .done = R->done, .budget = R->prog.budget,
                             .family = src->family, .config = "", .move = t->move, .parent = parent_id,
                             .fail = kevo_fail_name(src->fail), .why = src->why, .gpu = "", .note = ""};
        tn_cand_event(&R->prog, &c);
    }
    return st;
}

/* A generator's candidate into the round at R->works[*ready] (*ready grows
 * when it was prepared): a new one-point space joins the graph as a family
 * of one; a proposal in a searched family is registered as it is. */
static kevo_status tn_take_candidate(tn_run *R, int i, int parent, kevo_gen_source *src, int *ready, kevo_err *err)
{
    const kevo_generator *t = R->G.list.type[i];
    kevo_proposal p;
    if (src->space) {
        kevo_space *sp = src->space;
        src->space = NULL;
        src->owns_space = false;
        int fam = -1;
        if (!tn_keep_space(&R->e, sp) || (fam = kevo_search_add_space(&R->s, sp)) < 0)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        p = (kevo_proposal){.family = fam, .cfg = src->cfg, .parent = parent, .parent2 = -1};
        snprintf(p.move, sizeof p.move, "%s", t->move);
    } else {
        p = src->props[0];
    }
    int added = 0;
    kevo_status st = tn_register(&R->e, &R->s, R->run.id, R->nrows, R->next_round, &p, 1,
                                 src->gen.generator[0] ? &src->gen : NULL, &R->works[*ready], &added, err);
    if (!st) {
        R->nrows++;
        *ready += added;
    }
    return st;
}

/* Finish generator i's call into the round at R->works[*ready]: a
 * candidate registered (*ready grows), a failure stored at once, nothing
 * dropped.  A generator that cannot go on in this process is closed (its
 * call given back) and the round generator proposes the rounds. */
static kevo_status tn_take(tn_run *R, int i, int *ready, kevo_err *err)
{
    tn_gens *G = &R->G;
    kevo_gen *g = G->g[i];
    const int parent = G->parent[i];
    kevo_gen_source src;
    G->busy[i] = false;
    kevo_status st = g->type->finish(g, &src, err);
    bool nothing = !st && !src.gone && !src.space && src.nprops == 0 && src.fail == KEVO_FAIL_NONE;
    if (!st && (src.gone || nothing))
        G->calls[i]--;
    if (!st && src.gone) { /* nothing answered (a GPU node without a network): not a candidate */
        tn_line(&R->prog, "kevo: %s does not answer (%s): going on with templates", g->type->label, src.why);
        snprintf(G->why[i], sizeof G->why[i], "%s does not answer (%.200s)", g->type->label, src.why);
        g->type->close(g);
        G->g[i] = NULL;
        G->g[G->round]->full = true;
        tn_budget_update(R); /* its calls left are no longer the run's */
    }
    if (st || src.gone || nothing) {
        kevo_gen_source_release(&src);
        return st;
    }
    src.gen.run_id = R->run.id;
    src.gen.parent_id = parent >= 0 ? R->s.nodes[parent].cand_id : 0;
    if (parent >= 0)
        R->s.nodes[parent].rewrites++;
    const kevo_space *same = src.fail == KEVO_FAIL_NONE && src.space
                                 ? kevo_spaces_find(R->e.added, R->e.nadded, src.family)
                                 : NULL;
    if (same) { /* the very source and plan of an earlier candidate */
        src.fail = KEVO_FAIL_REJECTED;
        snprintf(src.why, sizeof src.why, "the reply repeats an earlier candidate (%s)", same->family);
    }
    st = src.fail != KEVO_FAIL_NONE ? tn_take_failure(R, i, parent, &src, err)
                                    : tn_take_candidate(R, i, parent, &src, ready, err);
    kevo_gen_source_release(&src);
    return st;
}

kevo_status tn_propose(tn_run *R, bool propose, kevo_stop_act act, int64_t inflight, int *ready, bool *end,
                       kevo_err *err)
{
    tn_gens *G = &R->G;
    *ready = 0;
    *end = false;
    kevo_status st = propose ? tn_gens_start(R, err) : KEVO_OK;
    bool busy[KEVO_GEN_MAX];
    for (int i = 0; i < G->list.n; i++)
        busy[i] = G->busy[i];
    if (!st && propose)
        st = tn_round(R, inflight, ready, end, err);
    if (st || *end)
        return st;
    /* a call's result: taken when it is there, or waited for when nothing else is to be done */
    for (int i = 0; i < G->list.n && !st && act != KEVO_STOP_DRAIN; i++) {
        if (!busy[i] || !G->g[i] || !(G->g[i]->type->ready(G->g[i]) || (*ready == 0 && inflight == 0)))
            continue;
        char what[96];
        snprintf(what, sizeof what, "waiting for %s", G->g[i]->type->label);
        tn_bar(&R->prog, R->done, R->best, what);
        st = tn_take(R, i, ready, err);
    }
    return st;
}
