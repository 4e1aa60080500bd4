/* report.c — what both forms of a report read from the store: the runs asked
 * for, the runs grouped by architecture, a peer's label and each family's
 * generator.  The forms: report_json.c (cJSON) and report_table.c (an aligned
 * text table); each builds its output whole and appends it to the caller's
 * buffer only on success. */
#define _POSIX_C_SOURCE 200809L
#include "db/report.h"
#include "db/report_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

kevo_status rp_nomem(kevo_err *err)
{
    return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building the report");
}

/* The runs to report: every run for run_id 0, else the one (which must
 * exist).  *ids is malloc'd. */
kevo_status rp_run_ids(kevo_db *db, int64_t run_id, int64_t **ids, int *n, kevo_err *err)
{
    if (run_id == 0)
        return kevo_db_run_ids(db, ids, n, err);
    kevo_run_row r;
    kevo_status s = kevo_db_run_get(db, run_id, &r, err);
    if (s)
        return s;
    *ids = malloc(sizeof **ids);
    if (!*ids)
        return rp_nomem(err);
    (*ids)[0] = run_id;
    *n = 1;
    return KEVO_OK;
}

kevo_status rp_run_load(kevo_db *db, int64_t run_id, kevo_run_row *r, int *evaluated, int *compiled, int *failed,
                        int *verified, kevo_err *err)
{
    kevo_status s = kevo_db_run_get(db, run_id, r, err);
    return s ? s : kevo_db_run_counts(db, run_id, evaluated, compiled, failed, verified, err);
}

/* ---- by architecture ---- */



void rp_archs_free(rp_arch *a, int n)
{
    for (int i = 0; a && i < n; i++)
        free(a[i].runs);
    free(a);
}

/* The runs ids[0..n) grouped by arch, the archs in the order of their first
 * run; *out malloc'd (rp_archs_free). */
kevo_status rp_archs(kevo_db *db, const int64_t *ids, int n, rp_arch **out, int *nout, kevo_err *err)
{
    *out = NULL;
    *nout = 0;
    rp_arch *a = calloc((size_t)n + 1, sizeof *a);
    int na = 0;
    if (!a)
        return rp_nomem(err);
    kevo_status s = KEVO_OK;
    for (int i = 0; i < n && !s; i++) {
        kevo_run_row r;
        int ev = 0, co = 0, fa = 0, ve = 0;
        if ((s = kevo_db_run_get(db, ids[i], &r, err)) || (s = kevo_db_run_counts(db, ids[i], &ev, &co, &fa, &ve, err)))
            break;
        int k = 0;
        while (k < na && strcmp(a[k].arch, r.arch) != 0)
            k++;
        if (k == na)
            snprintf(a[na++].arch, sizeof a[0].arch, "%s", r.arch);
        int64_t *runs = realloc(a[k].runs, ((size_t)a[k].nruns + 1) * sizeof *runs);
        if (!runs) {
            s = rp_nomem(err);
            break;
        }
        a[k].runs = runs;
        a[k].runs[a[k].nruns++] = ids[i];
        a[k].evaluated += ev;
        a[k].compiled += co;
        a[k].failed += fa;
        a[k].verified += ve;
    }
    if (s) {
        rp_archs_free(a, na);
        return s;
    }
    *out = a;
    *nout = na;
    return KEVO_OK;
}

/* Run run_id (into *r) and the candidates of it whose ptxas figures an arch
 * section shows, as indexes into its candidate list (*rows, seq order,
 * kevo_cand_rows_free):
 * a compile-only run's first RP_ARCH_FIRST compiled ones, another run's
 * best (kevo_db_cand_best), if any.  pick[] holds RP_ARCH_FIRST. */
kevo_status rp_arch_pick(kevo_db *db, int64_t run_id, kevo_run_row *r, kevo_cand_row **rows, int *n,
                         int *pick, int *npick, kevo_err *err)
{
    *npick = 0;
    *rows = NULL;
    *n = 0;
    kevo_status s = kevo_db_run_get(db, run_id, r, err);
    if (!s)
        s = kevo_db_cand_list(db, r->id, rows, n, err);
    if (s)
        return s;
    int64_t best = 0;
    if (!r->compile_only) {
        kevo_cand_row b;
        s = kevo_db_cand_best(db, r->id, &b, err);
        if (s == KEVO_ERR_NOT_FOUND) {
            kevo_err_clear(err);
            s = KEVO_OK;
        } else if (!s) {
            best = b.id;
            kevo_cand_row_release(&b);
        }
    }
    for (int i = 0; i < *n && !s && *npick < RP_ARCH_FIRST; i++)
        if (r->compile_only ? strcmp((*rows)[i].status, "compiled") == 0 : (*rows)[i].id == best)
            pick[(*npick)++] = i;
    if (s) {
        kevo_cand_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
    }
    return s;
}

/* ---- peers ---- */

/* How report names a peer row: its op's label, or a note for a name the op
 * does not declare (a DB of an older kevo: "decomposed_unaligned"). */
kevo_status rp_paired(kevo_db *db, int64_t run_id, kevo_paired_row *p, bool *have, char *why, size_t n,
                      kevo_err *err)
{
    kevo_err e2;
    *have = false;
    why[0] = '\0';
    kevo_status s = kevo_db_paired_get(db, run_id, p, &e2);
    if (s == KEVO_OK)
        *have = true;
    else if (s == KEVO_ERR_DB)
        snprintf(why, n, "%s", e2.msg);
    else if (s != KEVO_ERR_NOT_FOUND) {
        *err = e2;
        return s;
    }
    return KEVO_OK;
}

const char *rp_peer_label(const kevo_op *op, const char *name)
{
    int i = kevo_op_peer_index(op, name);
    return i >= 0 ? op->peers[i].label : "not a peer of this kevo's op (an older kevo measured it)";
}

const char *kevo_report_generator(const char *family, const kevo_run_gen_row *gens, int n)
{
    for (int i = 0; family && i < n; i++) {
        size_t len = strlen(gens[i].name);
        if (len == 0 || strncmp(family, gens[i].name, len) != 0 || family[len] != '_')
            continue;
        const char *t = family + len + 1;
        size_t hex = strspn(t, "0123456789abcdef");
        if ((hex == 12 && t[12] == '\0') ||
            (strncmp(t, "call", 4) == 0 && t[4] && strspn(t + 4, "0123456789") == strlen(t + 4)))
            return gens[i].name;
    }
    return "template";
}

kevo_status kevo_report_gens(kevo_db *db, int64_t run_id, kevo_run_gen_row **gens, int *n, kevo_err *err)
{
    kevo_status s = kevo_db_run_generators_get(db, run_id, gens, n, err);
    if (s == KEVO_ERR_NOT_FOUND) {
        kevo_err_clear(err);
        return KEVO_OK;
    }
    return s;
}
