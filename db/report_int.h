/* report_int.h — what report.c gives report_json.c and report_table.c (internal
 * to db/). */
#ifndef KEVO_DB_REPORT_INT_H
#define KEVO_DB_REPORT_INT_H

#include "db/report.h"

#define RP_ARCH_FIRST 5 /* a compile-only run's first compiled candidates an arch section shows */

/* The runs of one architecture and their candidates' counts. */
typedef struct rp_arch {
    char arch[16];
    int64_t *runs; /* malloc'd, in id order */
    int nruns;
    int evaluated, compiled, failed, verified;
} rp_arch;

/* KEVO_ERR_NOMEM with the report's message. */
kevo_status rp_nomem(kevo_err *err);
/* The runs to report: every run for run_id 0, else the one (which must
 * exist).  *ids is malloc'd. */
kevo_status rp_run_ids(kevo_db *db, int64_t run_id, int64_t **ids, int *n, kevo_err *err);
/* Run run_id into *r and its candidates' counts (kevo_db_run_counts). */
kevo_status rp_run_load(kevo_db *db, int64_t run_id, kevo_run_row *r, int *evaluated, int *compiled, int *failed,
                        int *verified, kevo_err *err);
void rp_archs_free(rp_arch *a, int n);
/* The runs ids[0..n) grouped by arch, the archs in the order of their first
 * run; *out malloc'd (rp_archs_free). */
kevo_status rp_archs(kevo_db *db, const int64_t *ids, int n, rp_arch **out, int *nout, kevo_err *err);
/* Run run_id (into *r) and the candidates of it whose ptxas figures an arch
 * section shows, as indexes into its candidate list (*rows, seq order,
 * kevo_cand_rows_free):
 * a compile-only run's first RP_ARCH_FIRST compiled ones, another run's
 * best (kevo_db_cand_best), if any.  pick[] holds RP_ARCH_FIRST. */
kevo_status rp_arch_pick(kevo_db *db, int64_t run_id, kevo_run_row *r, kevo_cand_row **rows, int *n,
                         int *pick, int *npick, kevo_err *err);
/* How report names a peer row: its op's label, or a note for a name the op
 * does not declare (a DB of an older kevo: "decomposed_unaligned"). */
const char *rp_peer_label(const kevo_op *op, const char *name);

/* Run run_id's paired figure (kevo_db_paired_get): *have false when none
 * is stored; a row kevo_db_paired_get refuses is not shown and why[n] says
 * why (*have false, KEVO_OK: the report goes on).  Errors: KEVO_ERR_NOMEM
 * and other errors but KEVO_ERR_NOT_FOUND and KEVO_ERR_DB. */
kevo_status rp_paired(kevo_db *db, int64_t run_id, kevo_paired_row *p, bool *have, char *why, size_t n,
                      kevo_err *err);

#endif
