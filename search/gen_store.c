/* gen_store.c — a run's generators in the DB: run_generators(run, name,
 * options, calls), through the public kevo_db API.
 *
 * Until db/ has the table (the request: struct kevo_run_generator and
 * kevo_db_run_generators_put/get in db/store.h), the rows live where runs
 * of schema 5 on keep them: the list of names and the LLM's options in
 * run_llm (one row per run, as kevo has always written it), an LLM's calls
 * as its generations rows, and another generator's calls as its edges.  A
 * generator without options stores "{}". */
#include "search/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void kevo_run_generators_free(kevo_run_generator *v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i].options);
    free(v);
}

kevo_status kevo_gen_store_put(kevo_db *db, int64_t run_id, const kevo_run_generator *v, int n, kevo_err *err)
{
    kevo_run_llm rl;
    memset(&rl, 0, sizeof rl);
    kv_buf names;
    kv_buf_init(&names);
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n && !st; i++) {
        if (v[i].listed)
            kv_buf_printf(&names, "%s%s", names.len ? "," : "", v[i].name);
        if (strcmp(v[i].name, "llm") == 0) /* run_llm's columns: the LLM's options */
            st = kevo_gen_llm_opts_row(v[i].options, &rl, err);
    }
    snprintf(rl.generators, sizeof rl.generators, "%s", names.data ? names.data : "");
    kv_buf_release(&names);
    return st ? st : kevo_db_run_llm_put(db, run_id, &rl, err);
}

/* Calls generator t made in run_id: an LLM's generations, another's edges
 * of its move (one per child). */
static kevo_status gs_calls(kevo_db *db, int64_t run_id, const kevo_generator *t, int64_t *calls, kevo_err *err)
{
    *calls = 0;
    if (!t->move)
        return KEVO_OK;
    if (strcmp(t->name, "llm") == 0) {
        kevo_generation_row *gv = NULL;
        int ng = 0;
        kevo_status st = kevo_db_generation_list(db, run_id, &gv, &ng, err);
        kevo_generation_rows_free(gv, ng);
        *calls = ng;
        return st;
    }
    kevo_edge_row *edges = NULL;
    int ne = 0;
    kevo_status st = kevo_db_edge_list(db, run_id, &edges, &ne, err);
    for (int i = 0; i < ne && !st; i++)
        *calls += strcmp(edges[i].op, t->move) == 0;
    free(edges);
    return st;
}

/* The stored list into v's listed flags, token by token (the DB is
 * untrusted): a name no row has, or one named twice, ends it and is
 * returned in *bad (what the run stored, for the refusal). */
static void gs_listed(const char *list, kevo_run_generator *v, int n, bool *bad)
{
    *bad = !*list;
    for (const char *p = list; *p && !*bad;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < n && !(strlen(v[k].name) == len && strncmp(p, v[k].name, len) == 0))
            k++;
        if (k == n || v[k].listed) {
            *bad = true;
            break;
        }
        v[k].listed = true;
        p += len;
        if (*p && !*++p)
            *bad = true; /* a trailing comma */
    }
}

kevo_status kevo_gen_store_get(kevo_db *db, int64_t run_id, kevo_run_generator **out, int *nout, kevo_err *err)
{
    *out = NULL;
    *nout = 0;
    kevo_run_llm rl;
    kevo_status st = kevo_db_run_llm_get(db, run_id, &rl, err);
    if (st)
        return st;
    int n;
    const kevo_generator *const *t = kevo_generator_list(&n);
    kevo_run_generator *v = calloc((size_t)n + 1, sizeof *v);
    if (!v)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        snprintf(v[i].name, sizeof v[i].name, "%s", t[i]->name);
    bool bad = false;
    gs_listed(rl.generators, v, n, &bad);
    for (int i = 0; i < n && !st; i++) {
        if (strcmp(t[i]->name, "llm") == 0)
            st = kevo_gen_llm_opts_json(&rl, &v[i].options, err);
        else if (!(v[i].options = kv_strdup("{}")))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        if (!st)
            st = gs_calls(db, run_id, t[i], &v[i].calls, err);
    }
    int m = n;
    if (!st && bad) { /* what the run stored, as a row no generator has: the resume refuses it */
        snprintf(v[m].name, sizeof v[m].name, "%.60s", rl.generators);
        v[m++].listed = true;
    }
    if (st) {
        kevo_run_generators_free(v, n);
        return st;
    }
    *out = v;
    *nout = m;
    return KEVO_OK;
}
