/* gen.c — the table of candidate generators, found by name, and what every
 * generator shares: the run's list of them with each one's stored options,
 * the restoring of a stored candidate's space, candidate sources.  Adding a
 * generator: one file with its kevo_generator, one row here. */
#include "search/gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

extern const kevo_generator kevo_gen_template;
extern const kevo_generator kevo_gen_llm;
extern const kevo_generator kevo_gen_mutate;

/* The round generator first: a run proposes its round, then each other
 * generator's call; a run's generators are stored in this order. */
static const kevo_generator *const gn_table[] = {
    &kevo_gen_template,
    &kevo_gen_llm,
    &kevo_gen_mutate,
};

_Static_assert(KV_ARRAY_LEN(gn_table) <= KEVO_GEN_MAX, "KEVO_GEN_MAX holds the table");

const kevo_generator *const *kevo_generator_list(int *n)
{
    *n = (int)KV_ARRAY_LEN(gn_table);
    return gn_table;
}

const kevo_generator *kevo_generator_find(const char *name)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(gn_table); i++)
        if (strcmp(gn_table[i]->name, name) == 0)
            return gn_table[i];
    return NULL;
}

const kevo_generator *kevo_generator_of_move(const char *move)
{
    for (size_t i = 0; move && i < KV_ARRAY_LEN(gn_table); i++)
        if (gn_table[i]->move && strcmp(gn_table[i]->move, move) == 0)
            return gn_table[i];
    return NULL;
}

void kevo_gen_opts_init(kevo_gen_opts *o)
{
    memset(o, 0, sizeof *o);
    kevo_llm_opts *l = &o->llm;
    l->temperature = NAN;
    l->seed = -1;
    l->budget = 10;
    l->max_tokens = 8192;
    l->timeout = 600;
    l->retries = 4;
    l->prompt_tokens = 16384;
    l->prompt_chars = 0;
}

void kevo_gen_source_init(kevo_gen_source *g)
{
    memset(g, 0, sizeof *g);
    kevo_generation_row_init(&g->gen);
}

void kevo_gen_source_release(kevo_gen_source *g)
{
    if (g->owns_space)
        kevo_space_free(g->space);
    g->space = NULL;
    g->owns_space = false;
    kevo_generation_row_release(&g->gen);
}

kevo_status kevo_gen_conflict(kevo_err *err, const kevo_run_row *run, const char *opt, const char *given,
                              const char *stored)
{
    return kevo_err_set(err, KEVO_ERR_ARG,
                        "%s %.200s differs from run %lld's %.200s: a resumed run keeps what it started with "
                        "(start a new run to change it)",
                        opt, given, (long long)run->id, stored[0] ? stored : "(none)");
}

/* ---- the run's list ---- */

void kevo_gen_list_init(kevo_gen_list *L)
{
    memset(L, 0, sizeof *L);
    L->n = (int)KV_ARRAY_LEN(gn_table);
    for (int i = 0; i < L->n; i++)
        L->type[i] = gn_table[i];
}

void kevo_gen_list_release(kevo_gen_list *L)
{
    for (int i = 0; i < L->n; i++)
        free(L->options[i]);
    kevo_gen_list_init(L);
}

/* Parse a --generators list into listed[] (by the table's order); false
 * for an unknown name, an empty list or a repeated name. */
static bool gn_parse(const char *list, bool *listed)
{
    memset(listed, 0, KEVO_GEN_MAX * sizeof *listed);
    if (!list || !*list)
        return false;
    size_t len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        int k = -1;
        for (size_t i = 0; i < KV_ARRAY_LEN(gn_table) && k < 0; i++)
            if (strlen(gn_table[i]->name) == len && strncmp(item, gn_table[i]->name, len) == 0)
                k = (int)i;
        if (k < 0 || listed[k])
            return false;
        listed[k] = true;
    }
    return true;
}

/* The listed names in the table's order into out[n] ("template,llm"). */
static void gn_names(const bool *listed, char *out, size_t n)
{
    kv_buf b;
    kv_buf_init(&b);
    for (size_t i = 0; i < KV_ARRAY_LEN(gn_table); i++)
        if (listed[i])
            kv_buf_printf(&b, "%s%s", b.len ? "," : "", gn_table[i]->name);
    snprintf(out, n, "%s", b.data ? b.data : "");
    kv_buf_release(&b);
}

/* The usage error for a list that names no generator of the table rightly. */
static kevo_status gn_bad_list(const char *list, kevo_err *err)
{
    kv_buf known;
    kv_buf_init(&known);
    for (size_t i = 0; i < KV_ARRAY_LEN(gn_table); i++)
        kv_buf_printf(&known, "%s%s", i == 0 ? "" : i + 1 == KV_ARRAY_LEN(gn_table) ? " and " : ", ",
                      gn_table[i]->name);
    kevo_err_set(err, KEVO_ERR_ARG, "--generators '%.100s': a comma list of %s", list, known.data ? known.data : "");
    kv_buf_release(&known);
    return KEVO_ERR_ARG;
}

/* Each generator's stored options from its options hook ("{}" without). */
static kevo_status gn_options(kevo_gen_list *L, const kevo_gen_opts *cmd, const char *const *stored, bool resume,
                              const kevo_run_row *run, bool *extends, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0; i < L->n && !st; i++) {
        const kevo_generator *t = L->type[i];
        kevo_gen_optreq rq = {.cmd = cmd, .names = L->names, .listed = L->listed[i], .resume = resume,
                              .stored = stored ? stored[i] : NULL, .run = run};
        free(L->options[i]);
        L->options[i] = NULL;
        if (t->options)
            st = t->options(&rq, &L->options[i], extends, err);
        else if (!(L->options[i] = kv_strdup("{}")))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    return st;
}

kevo_status kevo_gen_list_new(kevo_gen_list *L, const char *generators, const kevo_gen_opts *cmd, kevo_err *err)
{
    kevo_gen_list_init(L);
    const char *list = generators ? generators : "";
    if (!gn_parse(list, L->listed)) {
        snprintf(L->names, sizeof L->names, "%.60s", list);
        return gn_bad_list(L->names, err);
    }
    gn_names(L->listed, L->names, sizeof L->names);
    bool extends = false;
    return gn_options(L, cmd, NULL, false, NULL, &extends, err);
}

kevo_status kevo_gen_list_resume(kevo_gen_list *L, const kevo_run_generator *rows, int n, const char *given,
                                 const kevo_gen_opts *cmd, const kevo_run_row *run, bool *extends, kevo_err *err)
{
    kevo_gen_list_init(L);
    const char *stored[KEVO_GEN_MAX] = {NULL};
    bool bad = false; /* a stored name no row of the table has (the DB is untrusted): refused below */
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < L->n && strcmp(rows[i].name, L->type[k]->name) != 0)
            k++;
        if (k == L->n) {
            bad = true;
            snprintf(L->names, sizeof L->names, "%.60s", rows[i].name);
            continue;
        }
        L->listed[k] = rows[i].listed;
        stored[k] = rows[i].options;
        L->calls[k] = rows[i].calls;
    }
    if (n == 0) /* a run of an older kevo, or one without generators stored: templates */
        L->listed[0] = true;
    if (!bad)
        gn_names(L->listed, L->names, sizeof L->names);
    if (given) {
        bool want[KEVO_GEN_MAX];
        char names[64];
        if (gn_parse(given, want))
            gn_names(want, names, sizeof names);
        else
            snprintf(names, sizeof names, "%.60s", given);
        if (strcmp(names, L->names) != 0)
            return kevo_gen_conflict(err, run, "--generators", names, L->names);
    }
    kevo_status st = gn_options(L, cmd, n > 0 ? stored : NULL, true, run, extends, err);
    return !st && bad ? gn_bad_list(L->names, err) : st;
}

void kevo_gen_list_rows(const kevo_gen_list *L, kevo_run_generator *v)
{
    for (int i = 0; i < L->n; i++) {
        memset(&v[i], 0, sizeof v[i]);
        snprintf(v[i].name, sizeof v[i].name, "%s", L->type[i]->name);
        v[i].listed = L->listed[i];
        v[i].options = L->options[i];
        v[i].calls = L->calls[i];
    }
}

const char *kevo_gen_reads(const kevo_gen_opts *cmd, const char *op, const char *path)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(gn_table); i++) {
        const char *what = gn_table[i]->reads ? gn_table[i]->reads(cmd, op, path) : NULL;
        if (what)
            return what;
    }
    return NULL;
}

/* ---- a stored candidate's space ---- */

kevo_status kevo_gen_restore(kevo_db *db, const kevo_cand_row *row, const kevo_op *op, const char *arch,
                             kevo_space **out, kevo_err *err)
{
    *out = NULL;
    for (size_t i = 0; i < KV_ARRAY_LEN(gn_table); i++) { /* a call that gave nothing to compile (or was refused) */
        const char *m = gn_table[i]->move;
        size_t len = m ? strlen(m) : 0;
        if (m && strncmp(row->family, m, len) == 0 && strncmp(row->family + len, "_call", 5) == 0)
            return KEVO_OK;
    }
    for (size_t i = 0; db && i < KV_ARRAY_LEN(gn_table); i++) {
        bool mine = false;
        if (!gn_table[i]->restore)
            continue;
        kevo_status st = gn_table[i]->restore(db, row, op, arch, out, &mine, err);
        if (st || mine)
            return st;
    }
    return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld is of family '%s', which is not loaded",
                        (long long)row->id, row->family);
}
