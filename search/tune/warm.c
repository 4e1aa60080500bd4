/* warm.c — warm start: the winners of earlier runs at the nearest shapes
 * (same op, dtype and arch) seed a new run; stored with it, so that a
 * resume proposes the same. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

#define TN_WARM_RUNS 3 /* nearest earlier runs whose winners seed a new run */

/* How far apart two shapes of an op are: the sum over its symbols of
 * |ln(a / b)| (a symbol either lacks counts as equal). */
static double tn_shape_distance(const kevo_op *op, const kevo_syms *a, const kevo_syms *b)
{
    double d = 0;
    for (int i = 0; i < op->nsymbols; i++) {
        int64_t x, y;
        if (kevo_syms_get(a, op->symbols[i], &x) && kevo_syms_get(b, op->symbols[i], &y) && x > 0 && y > 0)
            d += fabs(log((double)x / (double)y));
    }
    return d;
}

/* The winners of the TN_WARM_RUNS runs of db nearest to the run's shape:
 * same op, dtype and arch, finished, measured on a GPU, one shape, not the
 * run `self`, and of a family this run searches.  *v malloc'd. */
static kevo_status tn_warm_collect(const tn_env *e, kevo_db *db, int64_t self, kevo_warm_seed **v, int *n,
                                   kevo_err *err)
{
    *v = NULL;
    *n = 0;
    int64_t *ids = NULL;
    int nids = 0;
    kevo_status st = kevo_db_run_ids(db, &ids, &nids, err);
    kevo_warm_seed *w = calloc((size_t)nids + 1, sizeof *w);
    if (!st && !w)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int i = 0; i < nids && !st; i++) {
        kevo_run_row r;
        kevo_syms shape;
        kevo_err e2;
        if (ids[i] == self || kevo_db_run_get(db, ids[i], &r, &e2) || strcmp(r.op, e->op->name) ||
            strcmp(r.dtype, kevo_dtype_name(e->dt)) || strcmp(r.arch, e->arch) || r.compile_only || r.nshapes > 0 ||
            strcmp(r.status, "done") || e->op->parse_shape(r.shape, &shape, &e2))
            continue;
        kevo_cand_row c;
        if (kevo_db_cand_best(db, r.id, &c, &e2))
            continue;
        kevo_config cfg;
        kevo_space *sp = kevo_spaces_find(e->spaces, e->nspaces, c.family);
        /* another DB's params are untrusted: only a configuration of the family's domains seeds the run */
        if (sp && strlen(c.params) < sizeof w[m].params && !kevo_config_parse_stored(sp, c.params, "warm start",
                                                                                      &cfg, &e2)) {
            snprintf(w[m].family, sizeof w[m].family, "%s", c.family);
            snprintf(w[m].params, sizeof w[m].params, "%s", c.params);
            w[m].from_run = r.id;
            snprintf(w[m].from_shape, sizeof w[m].from_shape, "%s", r.shape);
            w[m].distance = tn_shape_distance(e->op, &e->shape, &shape);
            m++;
        }
        kevo_cand_row_release(&c);
    }
    free(ids);
    if (st) {
        free(w);
        return st;
    }
    /* nearest first (ties: the later run), the first TN_WARM_RUNS distinct configurations */
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && (w[j].distance < w[j - 1].distance ||
                                  (w[j].distance == w[j - 1].distance && w[j].from_run > w[j - 1].from_run));
             j--) {
            kevo_warm_seed t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    int k = 0;
    for (int i = 0; i < m && k < TN_WARM_RUNS; i++) {
        bool dup = false;
        for (int j = 0; j < k && !dup; j++)
            dup = strcmp(w[j].family, w[i].family) == 0 && strcmp(w[j].params, w[i].params) == 0;
        if (!dup)
            w[k++] = w[i];
    }
    *v = w;
    *n = k;
    return KEVO_OK;
}

void tn_warm_apply(const tn_env *e, kevo_search *s, const kevo_warm_seed *v, int n)
{
    for (int i = 0; i < n; i++) {
        kevo_space *sp = kevo_spaces_find(e->spaces, e->nspaces, v[i].family);
        kevo_config cfg;
        kevo_err e2;
        if (!sp || kevo_config_parse_stored(sp, v[i].params, "warm seed", &cfg, &e2))
            continue; /* stored warm seeds are DB text: within the family's domains, or not used */
        int f = 0;
        while (s->spaces[f] != sp)
            f++;
        kevo_search_add_warm(s, f, &cfg);
    }
}

kevo_status tn_warm_collect_new(tn_env *e, const kevo_tune_opts *o, kevo_warm_seed **v, int *n,
                                kevo_err *err)
{
    *v = NULL;
    *n = 0;
    if (o->def.warm_start && strcmp(o->def.warm_start, "none") == 0)
        return KEVO_OK;
    kevo_db *src = e->db;
    kevo_status st;
    if (o->def.warm_start && (st = kevo_db_open_ro(o->def.warm_start, &src, err))) { /* read, never written */
        kevo_err_prefix(err, "--warm-start");
        return st;
    }
    st = tn_warm_collect(e, src, 0, v, n, err);
    if (src != e->db)
        kevo_db_close(src);
    return st;
}
