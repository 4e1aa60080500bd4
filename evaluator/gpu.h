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

#include "evaluator/eval.h"
#include "core/op.h"
#include "templates/space.h"

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

typedef struct kevo_gpu kevo_gpu;

#define KEVO_GPU_MAX_DEVICES 16 /* GPUs one process drives (--devices) */

/* One GPU of this machine, as the driver names it. */
typedef struct kevo_gpu_device {
    int ordinal;
    char name[128];
    char pci_bus[32];
    int cc_major, cc_minor;
    int sm_count;
} kevo_gpu_device;

/* The GPUs of this machine (at most max, in ordinal order), found out in a
 * short-lived child process like kevo_gpu_probe.  Errors: KEVO_ERR_NO_GPU
 * (no driver, cuInit fails, no device), KEVO_ERR_WORKER. */
kevo_status kevo_gpu_list(kevo_gpu_device *out, int max, int *n, kevo_err *err);

/* Whether a CUDA driver and device ordinal `device` answer, found out in a
 * short-lived child process (the parent never touches the driver), so that a
 * command that needs a GPU can fail before it reads or writes anything.
 * Errors: KEVO_ERR_NO_GPU (no driver, no such device) with the message
 * kevo_gpu_start would give, KEVO_ERR_WORKER (the probe could not run). */
kevo_status kevo_gpu_probe(int device, kevo_err *err);

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

/* How many times the worker was restarted. */
int kevo_gpu_restarts(const kevo_gpu *g);

void kevo_gpu_stop(kevo_gpu *g);

#endif /* KEVO_GPU_H */
