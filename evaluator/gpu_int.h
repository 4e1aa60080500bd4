/* gpu_int.h — private to evaluator/: inside the GPU worker process, the
 * generic evaluation (gpu_eval.c) the worker's loop calls, a loaded
 * candidate, and helpers only the evaluator uses.  An op's GPU side sees
 * op_gpu.h alone.  Nothing here is used by the parent process. */
#ifndef KEVO_GPU_INT_H
#define KEVO_GPU_INT_H

#include <stdbool.h>

#include "evaluator/op_gpu.h"

/* A candidate ready to run: its module's functions, one per plan launch. */
typedef struct wk_cand {
    const kevo_plan *plan;
    CUfunction fn[KEVO_MAX_LAUNCHES];
} wk_cand;

/* ---- the generic evaluation (gpu_eval.c), called by the worker's loop ---- */

/* Allocate the op's tensors, run the op's init; when `first`, check and
 * time its peers (cfg.baseline) and measure the ceilings (cfg.ceilings).
 * Errors: KEVO_ERR_UNSUPPORTED (an op without a GPU side), KEVO_ERR_NOMEM,
 * KEVO_ERR_CUDA, KEVO_ERR_INTERNAL. */
kevo_status wk_op_init(wk_ctx *w, bool first, kevo_err *err);

/* Verify (and time) a loaded candidate into res: per map kind asked for,
 * fresh inputs, the reference, output (and the first time the workspace)
 * poisoned, the plan run, inputs and reference checksummed around it, the
 * output compared.  *sticky when the context is no longer usable.  Where
 * the time went is added to res->phase_ms (each phase ends in a stream
 * synchronize, so it is GPU time plus launch overhead): inputs filled, the
 * reference, input checksums, poison and the candidate's run, the
 * comparison, the timing passes. */
void wk_op_eval(wk_ctx *w, const kevo_gpu_request *req, const wk_cand *c, kevo_gpu_result *res, bool *sticky);

/* Time n loaded candidates interleaved (kevo_gpu_retime) on the timing
 * inputs: out[i] for each; *sticky when the context is no longer usable.
 * peer >= 0 (checked by the caller, gp_retime_check): that same-run peer
 * too, after the candidates in every round (kevo_op_gpu.peer_open, its
 * output checked against the reference once first), into *peer_out; a
 * peer that cannot run or fails its check is peer_out's failure, and the
 * candidates are timed without it.  peer < 0: peer_out is not touched. */
void wk_op_retime(wk_ctx *w, const kevo_gpu_request *reqs, const wk_cand *c, int n, int peer, int warmup,
                  int rounds, kevo_gpu_retime_result *out, kevo_gpu_retime_result *peer_out, bool *sticky);

/* Free the tensors and the op's state. */
void wk_op_fini(wk_ctx *w);

/* Record a driver error into res (kind from wk_fail_of, message with what). */
void wk_result_cuda(wk_ctx *w, kevo_gpu_result *res, CUresult r, const char *what, bool *sticky);

/* Time n candidates interleaved: `warmup` untimed runs of each, then
 * `rounds` rounds of fn(args[0]), ..., fn(args[n-1]), each run after an L2
 * flush and between events.  ms[i * rounds + r] gets candidate i's time in
 * round r.  n * rounds <= WK_MAX_REPS.  Returns the first error. */
CUresult wk_time_interleaved(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *const *args, int n, int warmup,
                             int rounds, double *ms);

#endif /* KEVO_GPU_INT_H */
