/* gpu.h — GPU evaluation of candidates in a worker process.
 *
 * The parent never touches the CUDA driver.  kevo_gpu_start() forks a worker
 * that loads libcuda at run time, makes a context, allocates the op's inputs,
 * times the op's same-run peers (its stage-0 baseline first; cuBLAS is
 * loaded at run time too) and answers evaluation requests over a pipe.  When the worker crashes, hangs past the
 * time limit or reports a sticky CUDA error, the parent records the
 * candidate's failure, kills the worker and starts a fresh one for the next
 * request.
 *
 * Verification (per request, per cand_to_user map kind asked for): fresh
 * random inputs from a new seed, output and workspace poisoned with NaN, the
 * fp32-accumulating GPU reference, then ||out-ref||/||ref|| against the
 * op's bound for the dtype and an elementwise bound |out-ref| <= rtol*|ref| +
 * atol (kevo_op.tolerance).
 * Timing: CUDA events around each repetition, warm-up first, L2 flushed (a
 * write over twice the L2 size) before every repetition, median reported.
 */
#ifndef KEVO_GPU_H
#define KEVO_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/gpu_types.h"

typedef struct kevo_gpu kevo_gpu;

/* The GPUs of this machine (at most max, in ordinal order), found out in a
 * short-lived child process like kevo_gpu_probe (cancel: the caller's
 * kevo_ctx flag, NULL never; raised, the probe is killed).  Errors:
 * KEVO_ERR_NO_GPU (no driver, cuInit fails, no device), KEVO_ERR_WORKER,
 * KEVO_ERR_INTERRUPTED. */
kevo_status kevo_gpu_list(kevo_gpu_device *out, int max, int *n, kv_cancel *cancel, kevo_err *err);

/* Whether a CUDA driver and device ordinal `device` answer, found out in a
 * short-lived child process (the parent never touches the driver), so that a
 * command that needs a GPU can fail before it reads or writes anything.
 * Errors: KEVO_ERR_NO_GPU (no driver, no such device) with the message
 * kevo_gpu_start would give, KEVO_ERR_WORKER (the probe could not run),
 * KEVO_ERR_INTERRUPTED (cancel raised, as kevo_gpu_list). */
kevo_status kevo_gpu_probe(int device, kv_cancel *cancel, kevo_err *err);

/* Start a worker.  Errors: KEVO_ERR_NO_GPU (no driver, no device) with a
 * message saying so, KEVO_ERR_CUDA, KEVO_ERR_WORKER. */
kevo_status kevo_gpu_start(const kevo_gpu_config *cfg, kevo_gpu **out, kevo_gpu_info *info, kevo_err *err);

/* Start n workers at once (each times its own baseline and ceilings: their
 * start-ups overlap) and wait for all.  out[i] and info[i] for cfg[i].  On
 * an error every worker started is stopped and the error names the device.
 * Errors: as kevo_gpu_start. */
kevo_status kevo_gpu_start_many(const kevo_gpu_config *cfg, int n, kevo_gpu **out, kevo_gpu_info *info,
                                kevo_err *err);

/* Evaluate one candidate.  A candidate's failure is a result (res->fail),
 * not an error; the worker is restarted behind the scenes when needed.
 * Errors: KEVO_ERR_WORKER when a fresh worker cannot be started. */
kevo_status kevo_gpu_eval(kevo_gpu *g, const kevo_gpu_request *req, kevo_gpu_result *res, kevo_err *err);

/* The same in two steps, so that one process keeps several workers busy
 * (one per GPU: --devices).  kevo_gpu_submit sends one evaluation and
 * returns once the worker has it (req's cubin may then be freed); a worker
 * takes one at a time.  A dead worker is restarted first, as in
 * kevo_gpu_eval.  Errors: KEVO_ERR_BUSY (an evaluation is in flight),
 * KEVO_ERR_WORKER (no worker can be started). */
kevo_status kevo_gpu_submit(kevo_gpu *g, const kevo_gpu_request *req, kevo_err *err);

/* Whether g has an evaluation in flight. */
bool kevo_gpu_busy(const kevo_gpu *g);

/* Wait up to wait_s seconds (0: just look) for the first of the n workers'
 * evaluations in flight to end: *which is its index in g[] and res its
 * result (a crash or a hang past the worker's time limit is a result, as in
 * kevo_gpu_eval), or -1 when none ended in time or none is in flight.  NULL
 * entries are skipped.  Errors: KEVO_ERR_INTERRUPTED after SIGINT/SIGTERM
 * (every worker in flight is killed), KEVO_ERR_ARG. */
kevo_status kevo_gpu_wait(kevo_gpu *const *g, int n, double wait_s, int *which, kevo_gpu_result *res,
                          kevo_err *err);

/* Seconds g spent with an evaluation in flight, and evaluations it ended. */
double kevo_gpu_busy_s(const kevo_gpu *g);
int kevo_gpu_evaluated(const kevo_gpu *g);

/* Time n verified candidates (2..KEVO_GPU_RETIME_MAX) interleaved, to
 * compare them in pairs: after `warmup` runs of each, `rounds` rounds, each
 * running every candidate once in order (L2 flushed before each run) on the
 * run's timing inputs, so that a drift of the clocks or the machine affects
 * a round's candidates alike.  out[i] gets candidate i's times (or its
 * failure).  Errors: KEVO_ERR_ARG (n or n * rounds out of range),
 * KEVO_ERR_WORKER. */
kevo_status kevo_gpu_retime(kevo_gpu *g, const kevo_gpu_request *reqs, int n, int warmup, int rounds,
                            kevo_gpu_retime_result *out, kevo_err *err);

/* The same with one of the op's same-run peers timed in every round
 * beside them, so that a candidate is compared with the peer round by
 * round (tn_settle's paired figure): peer is an index into kevo_op.peers
 * (not a KEVO_PEER_AFTER one), run after the n candidates in each round
 * with the same warm-up, L2 flush and timing inputs.  The worker checks
 * the peer's output against the reference once before timing it and runs
 * it as the start-of-run timing chose (cuBLASLt algorithms kept; chosen
 * again only by a worker that restarted since).  n is 1..KEVO_GPU_RETIME_MAX
 * here, and (n + 1) * rounds at most KEVO_GPU_MAX_REPS.  *peer_out gets
 * the peer's time in each round (ms), or its failure (fail, msg: a check
 * that failed, a peer the op cannot run again); the candidates are timed
 * either way.  Errors: KEVO_ERR_ARG (n, rounds or peer out of range,
 * named), KEVO_ERR_BUSY, KEVO_ERR_WORKER, KEVO_ERR_INTERRUPTED. */
kevo_status kevo_gpu_retime_peer(kevo_gpu *g, const kevo_gpu_request *reqs, int n, int peer, int warmup,
                                 int rounds, kevo_gpu_retime_result *out, kevo_gpu_retime_result *peer_out,
                                 kevo_err *err);

/* How many times the worker was restarted. */
int kevo_gpu_restarts(const kevo_gpu *g);

void kevo_gpu_stop(kevo_gpu *g);

#endif /* KEVO_GPU_H */
