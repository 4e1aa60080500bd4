/* gen_store.c — a run's generators in the DB: run_generators(run, name,
 * options, calls) through db/store.h (kevo_db_run_generators_put/get), one
 * row per generator the run lists.  A generator without options stores
 * "{}".  What a generator's calls left in the run (its generations, or its
 * edges for one that keeps none) is what counts them: the column holds
 * that count as of the run's last write of its generators, and a resume
 * counts again (a killed process may have stored calls since). */
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

/* Calls generator t made in run_id: its generations (a generator that
 * keeps the calls it made), else its edges of its move (one per child);
 * 0 for the round generator. */
static kevo_status gs_calls(kevo_db *db, int64_t run_id, const kevo_generator *t, int64_t *calls, kevo_err *err)
{
    *calls = 0;
    if (!t->move)
        return KEVO_OK;
    kevo_generation_row *gv = NULL;
    int ng = 0;
    kevo_status st = kevo_db_generation_list(db, run_id, &gv, &ng, err);
    for (int i = 0; i < ng && !st; i++)
        *calls += strcmp(gv[i].generator, t->name) == 0;
    kevo_generation_rows_free(gv, ng);
    if (st || *calls > 0)
        return st;
    kevo_edge_row *edges = NULL;
    int ne = 0;
    st = kevo_db_edge_list(db, run_id, &edges, &ne, err);
    for (int i = 0; i < ne && !st; i++)
        *calls += strcmp(edges[i].op, t->move) == 0;
    free(edges);
    return st;
}

kevo_status kevo_gen_store_put(kevo_db *db, int64_t run_id, const kevo_run_generator *v, int n, kevo_err *err)
{
    kevo_run_gen_row rows[KEVO_GEN_MAX];
    int m = 0;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n && !st; i++) {
        if (!v[i].listed)
            continue; /* an unlisted generator keeps its defaults: nothing to store */
        const kevo_generator *t = kevo_generator_find(v[i].name);
        if (!t || m == KEVO_GEN_MAX)
            return kevo_err_set(err, KEVO_ERR_PARSE, "no generator '%s' to store for run %lld", v[i].name,
                                (long long)run_id);
        kevo_run_gen_row *r = &rows[m++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", v[i].name);
        r->options = v[i].options ? v[i].options : (char *)"{}";
        st = gs_calls(db, run_id, t, &r->calls, err);
    }
    return st ? st : kevo_db_run_generators_put(db, run_id, rows, m, err);
}

kevo_status kevo_gen_store_get(kevo_db *db, int64_t run_id, kevo_run_generator **out, int *nout, kevo_err *err)
{
    *out = NULL;
    *nout = 0;
    kevo_run_gen_row *rows = NULL;
    int n = 0;
    kevo_status st = kevo_db_run_generators_get(db, run_id, &rows, &n, err);
    if (st)
        return st;
    kevo_run_generator *v = calloc((size_t)n, sizeof *v);
    if (!v) {
        kevo_run_gen_rows_free(rows, n);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n && !st; i++) {
        /* a name no generator has stays as it is: kevo_gen_list_resume refuses it */
        snprintf(v[i].name, sizeof v[i].name, "%s", rows[i].name);
        v[i].listed = true;
        v[i].options = rows[i].options;
        rows[i].options = NULL;
        v[i].calls = rows[i].calls;
        const kevo_generator *t = kevo_generator_find(rows[i].name);
        if (t)
            st = gs_calls(db, run_id, t, &v[i].calls, err);
    }
    kevo_run_gen_rows_free(rows, n);
    if (st) {
        kevo_run_generators_free(v, n);
        return st;
    }
    *out = v;
    *nout = n;
    return KEVO_OK;
}
