/* gpu_int.h — inside the GPU worker process: the context every op shares
 * (driver, stream, reference module, the op's tensors, timing helpers), the
 * generic evaluation (gpu_eval.c) and the interface of an op's GPU side
 * (kevo_op_gpu, implemented in kernels/<op>/gpu.c).  Nothing here is used
 * by the parent process. */
#ifndef KEVO_GPU_INT_H
#define KEVO_GPU_INT_H

#include <stdbool.h>

#include "evaluator/cudrv.h"
#include "evaluator/gemm_lt.h"
#include "evaluator/gpu.h"

#define WK_MAX_REPS KEVO_GPU_MAX_REPS
#define WK_GUARD ((size_t)64 << 10) /* guard bytes on each side of the output and the workspace */
#define WK_ARGS_MAX 2048 /* bytes of the largest ABI struct an op may have */

/* One of the op's tensors on the device (kevo_op.tensors, same index). */
typedef struct wk_tensor {
    CUdeviceptr p;                       /* natural layout */
    CUdeviceptr pad;                     /* the copy with padded rows (kevo_tensor_desc.padded); 0: none */
    int64_t dims[KEVO_TENSOR_MAX_RANK];  /* outermost first */
    int64_t ld;                          /* the padded copy's row stride, elements (the last dim when none) */
    uint64_t count, pad_count;           /* elements of each copy */
    size_t elem;                         /* bytes per element: 2 (storage dtype) or 4 (the int32 map) */
} wk_tensor;

/* What the generic evaluation owns: the op's tensors, the reference, the
 * comparison's statistics, the workspace and the launch tags. */
typedef struct wk_io {
    wk_tensor t[KEVO_OP_MAX_TENSORS];
    int out;                      /* index of the output tensor */
    int map;                      /* index of the cand_to_user tensor, -1: none */
    int64_t map_users, map_ratio; /* its users and the sorted map's candidates per user */
    int32_t *host_map;
    /* The map kind of the current input set (wk_fill's): an op may make
     * its arguments and reference depend on it (ikbo_fa's check scale on
     * the uneven map), so the ABI struct is rebuilt after every fill. */
    kevo_map_kind cur_map;
    CUdeviceptr ref;              /* fp32 reference, the output's element count */
    CUdeviceptr stats;            /* 8 doubles: the comparison's sums, the checksums' slots */
    CUdeviceptr ws;
    size_t ws_cap;
    /* The output's and the workspace's allocations: WK_GUARD bytes of a
     * known pattern before and after each (a candidate's write past its
     * buffers lands there, is checksummed, and fails it) */
    CUdeviceptr out_alloc, ws_alloc;
    int launch_seq; /* last tag handed to a plan run: one counter for every candidate on this workspace */
    CUfunction f_gen, f_gen_padded, f_sumsq, f_compare, f_checksum;
} wk_io;

/* Worker-wide state. */
typedef struct wk_ctx {
    kv_cu cu;
    kv_cublas cb;
    cublasHandle_t blas;
    wk_lt lt;                   /* cuBLASLt: library and handle, or why not (gemm_lt.h) */
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUmodule ref_mod;           /* the op's reference/utility module */
    CUdeviceptr flush;          /* written before each timed repetition to evict L2 */
    size_t flush_bytes;
    CUevent ev[2 * WK_MAX_REPS];
    kevo_gpu_config cfg;
    kevo_gpu_info info;
    wk_io io;
    void *op_state;             /* the op's GPU side's own */
} wk_ctx;

/* A candidate ready to run: its module's functions, one per plan launch. */
typedef struct wk_cand {
    const kevo_plan *plan;
    CUfunction fn[KEVO_MAX_LAUNCHES];
} wk_cand;

/* An op's GPU side (kernels/<op>/gpu.c, behind kevo_op.gpu): what the
 * generic evaluation cannot know.  The worker allocates the tensors of
 * kevo_op.tensors (w->io), fills, poisons, checksums and compares them,
 * encodes the plan's tensor maps, owns the workspace and the launch tags,
 * and times. */
typedef struct kevo_op_gpu {
    size_t args_size;  /* bytes of the op's ABI struct, at most WK_ARGS_MAX */
    size_t seq_offset; /* offset of its int launch_seq in that struct */
    /* After the tensors are allocated: the op's own buffers and reference
     * module functions, into w->op_state.  Errors: KEVO_ERR_NOMEM,
     * KEVO_ERR_CUDA. */
    kevo_status (*init)(wk_ctx *w, kevo_err *err);
    /* The ABI struct over the current tensors (the padded copies where
     * padded and the tensor has one), w->io.ws and num_sms, into out
     * (args_size bytes, zeroed).  Tensor maps and launch_seq are the
     * worker's to fill. */
    void (*args)(wk_ctx *w, bool padded, int num_sms, void *out);
    /* Launch the fp32 reference of the current inputs into w->io.ref. */
    CUresult (*reference)(wk_ctx *w);
    /* Check and time the same-run peers the worker runs (kevo_op.peers
     * without KEVO_PEER_AFTER) on the timing inputs (the run's seed, sorted
     * map) into w->info.peers (wk_peer_run).  A peer that disagrees with the
     * reference is FAILED and one that cannot run (memory, the library
     * refuses) ERROR, each with its reason: the worker goes on.  Errors:
     * KEVO_ERR_CUDA only when the context is no longer usable. */
    kevo_status (*peers)(wk_ctx *w, kevo_err *err);
    /* NULL, or the device buffers of the op's own that hold state between
     * a check's reference and its comparison (a reference's scratch):
     * their addresses and bytes into p[max], bytes[max]; returns how many.
     * They are checksummed around every candidate run with the inputs. */
    int (*owned)(wk_ctx *w, CUdeviceptr *p, size_t *bytes, int max);
    /* Free what init allocated (w->op_state may be NULL: init failed early). */
    void (*fini)(wk_ctx *w);
} kevo_op_gpu;

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
 * inputs: out[i] for each; *sticky when the context is no longer usable. */
void wk_op_retime(wk_ctx *w, const kevo_gpu_request *reqs, const wk_cand *c, int n, int warmup, int rounds,
                  kevo_gpu_retime_result *out, bool *sticky);

/* Free the tensors and the op's state. */
void wk_op_fini(wk_ctx *w);

/* ---- helpers for the op's GPU side ---- */

/* Return from the calling function with the driver result of call unless it
 * is CUDA_SUCCESS. */
#define WK_TRY(call)                                                                                                   \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS)                                                                                        \
            return r_;                                                                                                 \
    } while (0)


/* dst[i] = kevo_gen_value(seed, stream, i) for i < count (the module's kv_gen). */
CUresult wk_gen(wk_ctx *w, CUdeviceptr dst, unsigned long long count, uint64_t seed, unsigned stream);

/* A fresh input set: every input from `seed` (their padded copies holding
 * the same values) and the cand_to_user map of `kind` (w->io.cur_map =
 * kind); synchronizes. */
CUresult wk_fill(wk_ctx *w, uint64_t seed, kevo_map_kind kind);

/* The op's reference of the current inputs into w->io.ref; *ref_sumsq =
 * sum ref^2.  Synchronizes. */
CUresult wk_reference(wk_ctx *w, double *ref_sumsq);

/* Holding an op's cuBLAS reference to its plain (SIMT) one when a worker
 * starts, the parts both ops share.  wk_ref_check_fill: the inputs, the
 * run's seed mixed, shuffled map (wk_fill).  wk_ref_check_inject: whether
 * the tests ask for a spoiled cuBLAS reference (KEVO_FAULT_INJECT=what:
 * "ref" every op's, "ref_tc" ikbo_fa's with P V on tensor cores only).
 * wk_ref_check_verdict: after r (the check's work so far, queued on the
 * stream), read io.stats = {sum d^2, -, sum plain^2, non-finite count},
 * free scratch (0: none), and require rel_err = sqrt(sum d^2 / sum
 * plain^2) <= bound with nothing non-finite (both kept in w->info, which
 * the parent reports; plain names the SIMT kernel there and in messages).  Errors: KEVO_ERR_CUDA
 * (r or the read failed); KEVO_ERR_INTERNAL (the two disagree). */
CUresult wk_ref_check_fill(wk_ctx *w);
bool wk_ref_check_inject(const char *what);
kevo_status wk_ref_check_verdict(wk_ctx *w, CUresult r, CUdeviceptr scratch, double bound, const char *plain,
                                 kevo_err *err);

/* Run fn(w, arg) once with the output poisoned and compare the output with
 * the reference (ref2: sum ref^2): *rel its relative error (NaN when ref2
 * is 0), *nonfinite its NaN/Inf elements. */
CUresult wk_check_peer(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, double ref2, double *rel,
                       double *nonfinite);

/* Peer `peer` (an index into kevo_op.peers), checked and timed into
 * f = w->info.peers.p[peer]: fn(w, arg) runs once with the
 * output poisoned and is compared with the reference (ref2: sum ref^2, the
 * current inputs'); when it agrees within the op's bound for the run's
 * dtype and writes nothing non-finite, it is timed (wk_time, the config's
 * warmup and reps; median and its 95% bootstrap interval) and f is OK;
 * otherwise FAILED with rel_err and the count of non-finite elements in
 * f->detail (appended to what detail already says).  A driver error
 * from fn that leaves the context usable (fn's own failure, e.g. cuBLAS
 * refusing) makes f ERROR with the error appended to its detail, and
 * CUDA_SUCCESS is returned; one that breaks the context is returned.
 * KEVO_FAULT_INJECT=peer:NAME zeroes that peer's output after its run
 * (the tests' peer that fails its check). */
CUresult wk_peer_run(wk_ctx *w, int peer, CUresult (*fn)(wk_ctx *, void *), void *arg, double ref2);

/* f = ERROR with detail "<what>: <reason>" (printf-style). */
void wk_peer_error(kevo_peer_fig *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

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
