/* gpu_int.h — inside the GPU worker process: the context every op backend
 * shares (driver, stream, reference module, timing helpers) and the backend
 * interface.  Nothing here is used by the parent process. */
#ifndef KEVO_GPU_INT_H
#define KEVO_GPU_INT_H

#include <stdbool.h>

#include "evaluator/cudrv.h"
#include "evaluator/gpu.h"

#define WK_MAX_REPS KEVO_GPU_MAX_REPS

/* Worker-wide state. */
typedef struct wk_ctx {
    kv_cu cu;
    kv_cublas cb;
    cublasHandle_t blas;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUmodule ref_mod;           /* the op's reference/utility module */
    CUdeviceptr flush;          /* written before each timed repetition to evict L2 */
    size_t flush_bytes;
    CUevent ev[2 * WK_MAX_REPS];
    kevo_gpu_config cfg;
    kevo_gpu_info info;
    void *op_state;             /* the backend's */
} wk_ctx;

/* A candidate ready to run: its module's functions, one per plan launch. */
typedef struct wk_cand {
    const kevo_plan *plan;
    CUfunction fn[KEVO_MAX_LAUNCHES];
} wk_cand;

/* An op's GPU side. */
typedef struct wk_backend {
    const char *op;
    /* Allocate inputs; when `first`, time the baseline and fill info. */
    kevo_status (*init)(wk_ctx *w, bool first, kevo_err *err);
    /* Verify (and time) a loaded candidate into res; set *sticky when the
     * context is no longer usable. */
    void (*eval)(wk_ctx *w, const kevo_gpu_request *req, const wk_cand *c, kevo_gpu_result *res, bool *sticky);
    /* Time n loaded candidates interleaved (kevo_gpu_retime): fill out[i]
     * for each; set *sticky when the context is no longer usable. */
    void (*retime)(wk_ctx *w, const kevo_gpu_request *reqs, const wk_cand *c, int n, int warmup, int rounds,
                   kevo_gpu_retime_result *out, bool *sticky);
    void (*fini)(wk_ctx *w);
} wk_backend;

extern const wk_backend kv_lce_backend;

/* Failure kind for a driver error, and whether it leaves the context broken. */
kevo_fail wk_fail_of(CUresult r, bool *sticky);

/* Record a driver error into res (kind from wk_fail_of, message with what). */
void wk_result_cuda(wk_ctx *w, kevo_gpu_result *res, CUresult r, const char *what, bool *sticky);

/* Launch helper: grid/block as 3 values, params as the kernel's argument list. */
CUresult wk_launch(wk_ctx *w, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void **params);

/* Get a function from the reference module; KEVO_ERR_CUDA when missing. */
kevo_status wk_ref_fn(wk_ctx *w, const char *name, CUfunction *f, kevo_err *err);

/* Enough blocks of 256 threads for a grid-stride loop over n items. */
unsigned wk_blocks(unsigned long long n);

/* Time n candidates interleaved: `warmup` untimed runs of each, then
 * `rounds` rounds of fn(args[0]), ..., fn(args[n-1]), each run after an L2
 * flush and between events.  ms[i * rounds + r] gets candidate i's time in
 * round r.  n * rounds <= WK_MAX_REPS.  Returns the first error. */
CUresult wk_time_interleaved(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *const *args, int n, int warmup,
                             int rounds, double *ms);

/* Time `reps` runs of fn(arg) with events, each after an L2 flush, after
 * `warmup` untimed runs.  median/min/max in ms; all[reps] (NULL: not
 * wanted) gets every repetition in run order.  Returns the first error. */
CUresult wk_time(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, int warmup, int reps, double *median,
                 double *min, double *max, double *all);

#endif /* KEVO_GPU_INT_H */
