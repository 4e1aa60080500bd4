/* verdict.h — the verdict on a run's best kernel against the peers timed
 * in the same run: which peer is the fastest checked one, whether the
 * kernel beats it (vs_best_peer), and the clause export acts on (a result
 * that beats no in-run peer is never exported as a kernel; the fastest OK
 * VENDOR peer runs instead).  report, tune and export all ask here. */
#ifndef KEVO_VERDICT_H
#define KEVO_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/op.h"

/* Whether a kernel with this vs_best_peer (the fastest OK peer's time over
 * its own) loses to that peer: below 1.0.  NaN (nothing compared) is not a
 * loss. */
bool kevo_peer_lost(double vs_peer);

/* Peer i's median when it is OK and positive, else NaN. */
double kevo_peer_ok_ms(const kevo_peer_set *s, int i);
/* The fastest OK peer of op in s (AFTER peers included once measured), or
 * -1 when none is OK; *ms (may be NULL) its median, NaN when none. */
int kevo_peer_best(const kevo_op *op, const kevo_peer_set *s, double *ms);
/* The fastest OK peer of op in s that the GPU worker runs beside the
 * candidates (KEVO_PEER_AFTER peers left out: they run after the search),
 * or -1 when none is OK; *ms (may be NULL) its median, NaN when none.  The
 * peer tune's settle step times in the same rounds as the run's best. */
int kevo_peer_best_same_run(const kevo_op *op, const kevo_peer_set *s, double *ms);

/* The one-line verdict on a run's best against its peers ps, given its
 * vs_best_peer (the fastest OK peer's time over its own), into out[n]:
 * "beats the best in-run peer, cuBLAS (beta=1) (0.6180 ms), 1.57x", or
 * "no kernel beats cuBLAS (beta=1) at this shape: best 0.80x (0.6180 ms);
 * export will dispatch to cuBLAS (beta=1)" (export's fallback: the fastest
 * OK VENDOR peer, where it is faster than the kernel; where it is not, the
 * clause says export keeps the kernel), or "no in-run peer was checked". */
void kevo_peer_verdict(const kevo_op *op, double vs_peer, const kevo_peer_set *ps, char *out, size_t n);
/* The fastest OK VENDOR peer of op in ps (export's fallback), or -1. */
int kevo_peer_vendor(const kevo_op *op, const kevo_peer_set *ps);

#endif /* KEVO_VERDICT_H */
