/* gpu_types.h — what the parent (gpu.c) and a GPU worker backend (the
 * local worker, gpu_worker.c; the simulated one, gpu_sim.c) both speak: the
 * worker's config, a request, its result and the device's figures.  The
 * parent's API is gpu.h; the pipe messages are gpu_proto.h. */
#ifndef KEVO_GPU_TYPES_H
#define KEVO_GPU_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/eval.h"
#include "core/op.h"
#include "templates/space.h"
#include "util/ctx.h"

/* What the worker needs to start. */
typedef struct kevo_gpu_config {
    const kevo_op *op;
    kevo_syms shape;
    kevo_dtype dtype;
    int device;          /* CUDA device ordinal */
    int warmup;          /* untimed repetitions before timing */
    int reps;            /* timed repetitions */
    double timeout_s;    /* per request */
    uint64_t seed;       /* base seed for inputs */
    bool baseline;       /* check and time the op's same-run peers at start */
    bool ceilings;       /* measure cuBLAS GEMM peak and copy bandwidth at start */
    int peer_algos;      /* cuBLASLt algorithms of the heuristic's top a peer's GEMM times (0: 8) */
    const void *ref_cubin; /* the op's reference/utility module, compiled by the parent */
    size_t ref_cubin_size;
    /* the caller's kevo_ctx flag (kv_ctx_flag): the waits for this worker stop (KEVO_ERR_INTERRUPTED) once it
       is raised; NULL: never */
    kv_cancel *cancel;
} kevo_gpu_config;

/* What the worker reports at start. */
typedef struct kevo_gpu_info {
    char name[128];
    char pci_bus[32];
    int driver_version; /* e.g. 13000 */
    int cc_major, cc_minor;
    int sm_count;
    int sm_clock_mhz;   /* max clock from the device attributes; 0 unknown */
    int mem_clock_mhz;
    int64_t l2_bytes;
    int64_t mem_bytes;
    int max_smem_optin;
    /* The op's same-run peers (kevo_op_gpu.peers, in the op's folder), by
     * index into kevo_op.peers; all unmeasured when the config asked for
     * none.  AFTER peers stay unmeasured here. */
    kevo_peer_set peers;
    double peak_tflops;       /* cuBLAS fp16/bf16 GEMM 8192^3 */
    double copy_tbps;         /* device-to-device copy, bytes read + written per second / 1e12 */
    /* the worker's check of its cuBLAS reference against the plain SIMT one ("" and NaN: none ran;
       a worker on another MPI rank does not send it) */
    char ref_check_against[32]; /* the SIMT reference's name */
    double ref_check_rel_err;
    double ref_check_nonfinite; /* non-finite elements in the cuBLAS reference */
} kevo_gpu_info;

/* The phases of one evaluation in the worker, wall milliseconds each: the
 * module loaded, inputs filled (three checks and the timing inputs), the
 * reference, input checksums, poison and the candidate's runs, the
 * comparisons, the timing passes, and the whole evaluation. */
typedef enum kevo_gpu_phase {
    KEVO_PHASE_LOAD, KEVO_PHASE_FILL, KEVO_PHASE_REF, KEVO_PHASE_SUM, KEVO_PHASE_RUN, KEVO_PHASE_CMP,
    KEVO_PHASE_TIME, KEVO_PHASE_ALL, KEVO_GPU_PHASES
} kevo_gpu_phase;

/* The phases' names as bench/trace_idle.py reads them ("load", "fill", ...). */
const char *kevo_gpu_phase_name(kevo_gpu_phase p);

/* One evaluation. */
typedef struct kevo_gpu_request {
    int64_t candidate_id;
    const void *cubin;
    size_t cubin_size;
    kevo_plan plan;
    unsigned maps;      /* bitmask of (1u << kevo_map_kind) to verify on */
    bool time;          /* time after verification passes */
    uint64_t seed;      /* verification seed; each map kind draws from it */
} kevo_gpu_request;

#define KEVO_GPU_MAX_REPS 1000

typedef struct kevo_gpu_result {
    kevo_fail fail;
    char msg[512];
    int checks;         /* verifications that ran */
    double rel_err;     /* largest ||out-ref||/||ref|| over the checks */
    double max_abs_err;
    int64_t bad_elems;  /* elements beyond the elementwise bound, in the failing check */
    double median_ms, min_ms, max_ms;
    int reps;
    double rep_ms[KEVO_GPU_MAX_REPS]; /* every timed repetition, in run order (reps of them) */
    int passes;         /* timing passes run (1 unless a pass was not steady; see kevo_gpu_timing_steady) */
    double phase_ms[KEVO_GPU_PHASES]; /* where the evaluation's time went (kevo_gpu_phase); all 0: not known */
} kevo_gpu_result;

/* Timing passes at most per candidate, and how far a steady pass's median may
 * lie above its minimum.  A kernel timed 30 times back to back on a quiet
 * H100 has its median within 3% of its minimum (every candidate of three
 * 120-candidate runs, 2026-11-23); a pass in which the GPU slowed part-way
 * (one lce_ws candidate: 10 repetitions at 0.39 ms, then 20 at 0.63) is
 * timed again and the pass with the lowest median kept. */
#define KEVO_GPU_TIMING_PASSES 3
#define KEVO_GPU_STEADY 1.05

/* Whether a timing pass is steady: median_ms <= KEVO_GPU_STEADY * min_ms,
 * both finite and positive. */
bool kevo_gpu_timing_steady(double median_ms, double min_ms);

/* One candidate's times from an interleaved re-timing. */
typedef struct kevo_gpu_retime_result {
    kevo_fail fail;          /* KEVO_FAIL_NONE when timed */
    char msg[256];
    int rounds;
    double ms[KEVO_GPU_MAX_REPS]; /* its time in each round, in order */
} kevo_gpu_retime_result;

#define KEVO_GPU_RETIME_MAX 8 /* candidates one re-timing takes */

#define KEVO_GPU_MAX_DEVICES 16 /* GPUs one process drives (--devices) */

/* One GPU of this machine, as the driver names it. */
typedef struct kevo_gpu_device {
    int ordinal;
    char name[128];
    char pci_bus[32];
    int cc_major, cc_minor;
    int sm_count;
} kevo_gpu_device;

#endif /* KEVO_GPU_TYPES_H */
