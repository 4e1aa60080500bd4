/* report.h — a run as a table or as JSON, read from the store alone. */
#ifndef KEVO_REPORT_H
#define KEVO_REPORT_H

#include <stdint.h>

#include "db/store.h"
#include "core/op.h"
#include "util/util.h"

/* JSON report appended to out:
 *   {"runs": [{"id", "op", "shape", "dtype", "arch", "device", "policy",
 *              "status", "stop_reason", "compile_only",
 *              "evaluated", "failed", "compiled", "verified",
 *              "baseline_ms", "baseline_bcast_ms", "peak_tflops", "copy_tbps",
 *              "best": {"candidate_id", "template", "params": {...},
 *                       "median_ms", "speedup", "tflops", "rel_err"} | null,
 *              "paired_peer": {"candidate_id", "peer", "rounds", "ratio",
 *                              "ci_lo", "ci_hi"} | {"error"} (only where the
 *                              settle step stored one: kevo_paired_row)}],
 *    "archs": [{"arch", "runs": [id, ...], "evaluated", "compiled", "failed",
 *               "verified", "kernels": [{"run", "candidate_id", "family",
 *               "params": {...}, "status", "best", "regs", "spill_bytes",
 *               "smem_static", "smem_dynamic", "median_ms"}]}]}
 * "archs" groups the runs by architecture (in the order of each one's first
 * run) with the ptxas figures (bytes; null where unknown) of each run's best
 * ("best": true) or, for a compile-only run, of its first 5 compiled
 * candidates in proposal order.
 * Numbers that were not measured, NaN or infinite are null (never "nan" or
 * "inf"); a compile-only run's peers and ceilings are null.  Strings are
 * JSON-escaped (control characters as \uXXXX).  run_id 0: every run.
 * Errors: KEVO_ERR_NOT_FOUND for an unknown run id, KEVO_ERR_DB. */
kevo_status kevo_report_json(kevo_db *db, int64_t run_id, kv_buf *out, kevo_err *err);

/* Plain-text report appended to out: per run a header (op, shape, dtype,
 * device, baseline, counts, the best's paired figure against its fastest
 * peer where one is stored) and a table of the `top` best candidates (all
 * when top <= 0), best first; compile-only runs list candidates in order,
 * with no baseline.  When the runs are of more than one architecture, a
 * section "by architecture" follows: per arch its runs, their candidates'
 * counts and the ptxas figures (registers, spill, static and dynamic shared
 * memory) of the candidates "archs" lists in the JSON report.  Text from the
 * DB passes through kv_term_clean: no
 * control character or escape sequence reaches the terminal. */
kevo_status kevo_report_table(kevo_db *db, int64_t run_id, int top, kv_buf *out, kevo_err *err);

/* SVG picture appended to out: best speedup against evaluations (one line
 * per run with timed candidates; only run_id when > 0) and the search tree of
 * run_id (0: the last run), nodes coloured by speedup, failures marked.
 * Errors: KEVO_ERR_NOT_FOUND (no run), KEVO_ERR_DB. */
kevo_status kevo_report_svg(kevo_db *db, int64_t run_id, kv_buf *out, kevo_err *err);

/* The generator a candidate of this family came from, among a run's
 * generators gens[0..n) (kevo_report_gens; n 0: none stored): the one whose
 * name begins the family as "<name>_" followed by 12 lowercase hex digits
 * (the hash of the source it generated) or by "call" and digits (a call
 * that gave no source), else "template" (the round generator's families;
 * templates/space.c keeps a template family from a generator's prefix).
 * The result is a name of gens or a literal. */
const char *kevo_report_generator(const char *family, const kevo_run_gen_row *gens, int n);

/* A run's generators for kevo_report_generator (*gens malloc'd,
 * kevo_run_gen_rows_free): none (*n 0) for a run that stored none.
 * Errors: kevo_db_run_generators_get's but KEVO_ERR_NOT_FOUND. */
kevo_status kevo_report_gens(kevo_db *db, int64_t run_id, kevo_run_gen_row **gens, int *n, kevo_err *err);

#endif /* KEVO_REPORT_H */
