/* op_gpu.h — what an op's GPU side (kernels/<op>/gpu.c, behind
 * kevo_op.gpu) is written against, inside the GPU worker process: the
 * worker's context (driver, cuBLAS, stream, the op's tensors on the device,
 * the config and what the parent is told), the kevo_op_gpu interface an op
 * implements, and the helpers it may call (fill, reference, launch, check
 * and time a peer).  The evaluator's own internals are in gpu_int.h, which
 * nothing outside evaluator/ includes. */
#ifndef KEVO_OP_GPU_H
#define KEVO_OP_GPU_H

#include <stdbool.h>

#include "evaluator/cudrv.h"
#include "evaluator/gemm_lt.h"
#include "evaluator/gpu_types.h"

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
    /* Run one same-run peer again, inside a re-timing (kevo_gpu_retime_peer):
     * NULL when the op cannot (the re-timing then says so).  peer_open
     * prepares peer `peer` (an index into kevo_op.peers, never a
     * KEVO_PEER_AFTER one: the worker checks) on the current inputs, which
     * the worker has filled (its buffers: a padded or pre-broadcast copy
     * made from them, cuBLASLt's handles and workspace; its algorithms as
     * the peer timing at start chose them, chosen again only where that
     * choice is not kept, e.g. in a worker started again since) into *run.
     * Returns CUDA_SUCCESS; otherwise why[n] says what could not be done
     * (*run NULL, nothing left allocated) and the error is the driver's:
     * one that leaves the context usable (out of memory, cuBLASLt missing
     * or refusing: CUDA_ERROR_NOT_SUPPORTED) fails the peer alone.
     * peer_run launches the peer once on w->stream, asynchronously, writing
     * the output tensor (a run between two events of the interleaved
     * timing; it neither synchronizes nor allocates).  peer_close frees
     * what peer_open made (run may be NULL). */
    CUresult (*peer_open)(wk_ctx *w, int peer, void **run, char *why, size_t n);
    CUresult (*peer_run)(wk_ctx *w, void *run);
    void (*peer_close)(wk_ctx *w, void *run);
    /* NULL, or the device buffers of the op's own that hold state between
     * a check's reference and its comparison (a reference's scratch):
     * their addresses and bytes into p[max], bytes[max]; returns how many.
     * They are checksummed around every candidate run with the inputs. */
    int (*owned)(wk_ctx *w, CUdeviceptr *p, size_t *bytes, int max);
    /* Free what init allocated (w->op_state may be NULL: init failed early). */
    void (*fini)(wk_ctx *w);
} kevo_op_gpu;

/* ---- helpers for the op's GPU side ---- */

/* Return from the calling function with the driver result of call unless it
 * is CUDA_SUCCESS (util/try.h). */
#define WK_TRY(call) KV_CU_TRY_RET(call)


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

/* Launch helper: grid/block as 3 values, params as the kernel's argument list. */
CUresult wk_launch(wk_ctx *w, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void **params);

/* Get a function from the reference module; KEVO_ERR_CUDA when missing. */
kevo_status wk_ref_fn(wk_ctx *w, const char *name, CUfunction *f, kevo_err *err);

/* Enough blocks of 256 threads for a grid-stride loop over n items. */
unsigned wk_blocks(unsigned long long n);

/* Time `reps` runs of fn(arg) with events, each after an L2 flush, after
 * `warmup` untimed runs.  median/min/max in ms; all[reps] (NULL: not
 * wanted) gets every repetition in run order.  Returns the first error. */
CUresult wk_time(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, int warmup, int reps, double *median,
                 double *min, double *max, double *all);

#endif /* KEVO_OP_GPU_H */
