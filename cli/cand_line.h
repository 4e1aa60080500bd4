/* cand_line.h — the CLI's line for a finished candidate (a
 * KEVO_EVENT_CANDIDATE's data), as `kevo tune` prints it on stdout. */
#ifndef KEVO_CLI_CAND_LINE_H
#define KEVO_CLI_CAND_LINE_H

#include "kevo.h"
#include "util/util.h"

/* Append c's line to b, without a newline:
 *   [ done/budget] #id family config <-move #parent [#parent2] | what became of it
 * where "what" is "FAILED kind: why", the compile's figures (compile-only),
 * the first shape's time and the weighted geomean vs_peer (a distribution),
 * or the time, speedup, vs_peer, TFLOP/s, roofline and rel_err; then the
 * run's best, a compiler note and the GPU when several evaluate.  The text
 * is not cleaned for a terminal: the caller does that.  Errors: those of
 * kv_buf_printf (KEVO_ERR_NOMEM). */
kevo_status cli_cand_line(const kevo_cand_event *c, kv_buf *b);

#endif /* KEVO_CLI_CAND_LINE_H */
