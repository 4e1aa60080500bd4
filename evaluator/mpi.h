/* mpi.h — compiles and GPU evaluations spread over the ranks of an MPI job
 * (`mpirun -np N kevo tune --mpi`).
 *
 * Rank 0 runs the search, owns the DB and any generator's call; it hands each batch's
 * compiles to its own pool of compile children and to the other ranks, which
 * run compile children (kevo_mpi_serve).  In a GPU run every other rank also
 * starts a GPU worker on its GPU (kevo_mpi_gpus_start: each measures its own
 * peers and ceilings) and verifies and times the candidates rank 0 sends it
 * (kevo_mpi_eval_submit / _wait), one at a time, in the order sent; rank 0
 * may send the next before the one in flight ends (KEVO_MPI_GPU_QUEUE), so
 * that its transfer and the result's way back do not leave the GPU idle.  The tuning loop
 * reaches those GPUs as it reaches its own, through devset.h: backend_mpi.c's
 * row (backend.h) adapts kevo_mpi_eval_submit / _wait / kevo_mpi_gpu_alive /
 * _queued / _stats.  The batch is complete
 * before the search goes on and results are applied in proposal order, so
 * the proposals (a function of the seed and of the results in proposal
 * order) are those of a single process.  Messages are evaluator/wire.h
 * frames; no struct crosses a process.
 *
 * A rank that dies or hangs: every rank sends `alive` every second while it
 * has work; a rank with compiles in flight that is silent for
 * KEVO_MPI_LOST_AFTER seconds is lost, its compiles go back to the queue
 * (rank 0's pool or another rank takes them) and a note names it.  At the
 * end a lost rank that still runs (stopped, hung) is ended with SIGKILL, so
 * that mpirun, which waits for every process, can end: by rank 0 on its own
 * host, else by the ranks of its host, told in the fin (kv_proc_end: only
 * the process its hello named by host, pid and start time).  This
 * needs `mpirun --enable-recovery` with Open MPI 4.1: without it, mpirun
 * ends the whole job when any process dies (the run is then stored as
 * interrupted and `--resume` continues it).  After a loss no rank calls
 * MPI_Finalize (its fence waits on the dead process and can hang); they
 * exit instead, which mpirun accepts under --enable-recovery (which also
 * makes mpirun exit 0 whatever the ranks return).  A rank 0 that
 * dies: the others notice its silence after KEVO_MPI_ORPHANED_AFTER seconds
 * and exit.  A rank lost with an evaluation in flight gives it back too
 * (kevo_mpi_eval_wait says so): the candidate is evaluated elsewhere.
 *
 * Built without MPI (no MPI found by CMake), kevo_mpi_start fails with
 * KEVO_ERR_UNSUPPORTED "built without MPI" and nothing else is reachable. */
#ifndef KEVO_MPI_H
#define KEVO_MPI_H

#include <stdbool.h>

#include "evaluator/compile.h"
#include "evaluator/gpu.h"
#include "evaluator/wire.h"
#include "kevo.h"

#define KEVO_MPI_LOST_AFTER 10.0     /* seconds of silence after which a rank with work is lost */
#define KEVO_MPI_ORPHANED_AFTER 60.0 /* seconds of silence from rank 0 after which a worker leaves */
#define KEVO_MPI_HELLO_WAIT 60.0     /* seconds rank 0 waits at start for every rank's hello */
#define KEVO_MPI_GPU_START_WAIT 900.0 /* seconds rank 0 waits for a rank's GPU worker (peers, ceilings) */
#define KEVO_MPI_SEND_SPIN 0.005      /* seconds rank 0 drives an eval message's transfer before going on */
/* Evaluations rank 0 may have sent to one remote GPU: one runs, the rest
 * wait on its rank.  Device call 4 (2x H200, 64226ee) showed what one costs:
 * a remote GPU's evaluation took 44.0 ms from submit to result (median)
 * against 38.6 ms on rank 0's own GPU, after ~2.7 ms to send the cubin. */
#define KEVO_MPI_GPU_QUEUE 2

typedef struct kevo_mpi kevo_mpi;

/* Whether this build has MPI. */
bool kevo_mpi_built(void);

/* Start MPI and meet the other ranks.  slots: compiles this rank runs at
 * once (its --jobs, 1..256; 0: its share of its host's CPUs, divided among
 * the job's ranks on that host, at least 1); device: the GPU ordinal this rank evaluates on
 * when rank 0 asks (-1: its rank among the job's ranks on its host, so that
 * `mpirun -np G` on a host of G GPUs gives each rank its own).  Rank 0 waits up to KEVO_MPI_HELLO_WAIT seconds
 * for every other rank's hello (one that does not come is lost; one with
 * another NVRTC version or protocol takes no work) and starts a thread that
 * sends `alive` to the others every second.  ctx (may be NULL; it must
 * outlive the job, or be replaced by kevo_mpi_set_ctx) is the job's handle
 * from the start on, as kevo_mpi_set_ctx says: its event callback gets a
 * WARNING event for each line for the user (a rank lost or refused, the
 * ranks at start), its text from other ranks cleaned of control characters
 * here already, and its cancel flag stops the wait for the hellos.
 * Errors: KEVO_ERR_UNSUPPORTED
 * (built without MPI; an MPI library without MPI_THREAD_SERIALIZED),
 * KEVO_ERR_WORKER (MPI does not start), KEVO_ERR_NOMEM. */
kevo_status kevo_mpi_start(int slots, int device, kevo_ctx *ctx, kevo_mpi **out, kevo_err *err);

/* Make ctx m's handle from now on, in place of kevo_mpi_start's: its event
 * callback gets m's WARNING events (and its compile pools' precompiled
 * headers given up: kevo_compile_pool_set_ctx), and its cancel flag
 * (kevo_ctx_cancel) stops m's waits with KEVO_ERR_INTERRUPTED: rank 0's
 * compiles and evaluations, another rank's kevo_mpi_serve.  Without one
 * (ctx NULL) m says nothing and its waits never stop for a signal.  m may
 * be NULL. */
void kevo_mpi_set_ctx(kevo_mpi *m, kevo_ctx *ctx);

/* This process's rank and the job's size (1.. ranks). */
int kevo_mpi_rank(const kevo_mpi *m);
int kevo_mpi_size(const kevo_mpi *m);

/* Rank 0: kevo_compile_run over the job: n jobs (cached ones skipped), at
 * most `parallel` at once here and each other rank's slots there, each
 * killed after timeout_s where it runs.  Returns once every job has its
 * outcome, whichever rank produced it; the jobs' fields are exactly what a
 * compile here would give (the other ranks' NVRTC is checked to be this
 * one's).  Errors: as kevo_compile_run (KEVO_ERR_INTERRUPTED after a
 * signal); a lost rank is a note, not an error. */
kevo_status kevo_mpi_compile(kevo_mpi *m, kevo_compile_job *jobs, int n, int parallel, double timeout_s,
                             kevo_err *err);

/* kevo_mpi_compile in steps, for a caller that evaluates meanwhile and
 * adds jobs as it goes (rank 0; tune keeps --ahead rounds compiling):
 * _start opens an empty queue (`parallel` slots here, each job killed after
 * timeout_s); _add appends a job (which must stay put until it is reported
 * done or _stop; one cached already is reported done); each _next hands
 * out waiting jobs in the order added, waits up to wait_s seconds and sets
 * *done to a job that finished since the last call (NULL none) and *left to
 * those not done; a lost rank's jobs go back to the queue as in
 * kevo_mpi_compile.  _stop abandons what is still out.  Errors:
 * KEVO_ERR_INTERNAL (not rank 0, alone, a queue already open, or none),
 * KEVO_ERR_NOMEM, the pool's, KEVO_ERR_INTERRUPTED; KEVO_ERR_UNSUPPORTED
 * built without MPI. */
kevo_status kevo_mpi_compile_start(kevo_mpi *m, int parallel, double timeout_s, kevo_err *err);
kevo_status kevo_mpi_compile_add(kevo_mpi *m, kevo_compile_job *job, kevo_err *err);
kevo_status kevo_mpi_compile_next(kevo_mpi *m, double wait_s, kevo_compile_job **done, int *left, kevo_err *err);
void kevo_mpi_compile_stop(kevo_mpi *m);

/* Rank 0: have every other rank that takes (or may yet take) compiles
 * start writing the precompiled header of prelude (a job whose source is a
 * family's prelude, as for kevo_compile_pch_prepare), so that its first
 * jobs of that family find it ready.  Best effort: a rank that misses it
 * writes the header at its first such job.  Errors: KEVO_ERR_INTERNAL (not
 * rank 0), KEVO_ERR_NOMEM; nothing to do (KEVO_OK) alone or built without
 * MPI. */
kevo_status kevo_mpi_compile_prepare(kevo_mpi *m, const kevo_compile_job *prelude, kevo_err *err);

/* This rank's GPU ordinal for evaluations (kevo_mpi_start's device, or
 * its rank on its host); 0 without MPI. */
int kevo_mpi_device(const kevo_mpi *m);

/* The compiles this rank runs at once (kevo_mpi_start's slots, resolved);
 * 1 without MPI. */
int kevo_mpi_slots(const kevo_mpi *m);

/* One GPU of another rank, evaluating for rank 0. */
typedef struct kevo_mpi_gpu {
    int rank;
    char host[256];
    int device;          /* its ordinal on its host */
    kevo_gpu_info info;  /* its device, and the peers and ceilings it measured */
} kevo_mpi_gpu;

/* Rank 0: have every other live rank start a GPU worker for the run (setup:
 * op, shape, dtype, settings and the reference cubin) and wait up to
 * KEVO_MPI_GPU_START_WAIT seconds for each to answer.  A rank without a GPU,
 * or whose worker does not start, goes on compiling only; a note says why.
 * *gpus malloc'd (NULL when *n is 0), in rank order; GPU g of the calls below
 * is gpus[g].  Errors: KEVO_ERR_INTERRUPTED, KEVO_ERR_NOMEM, KEVO_ERR_ARG (a
 * setup that cannot be sent). */
kevo_status kevo_mpi_gpus_start(kevo_mpi *m, const kevo_wire_gpu_setup *setup, kevo_mpi_gpu **gpus, int *n,
                                kevo_err *err);

/* Rank 0: send one evaluation to remote GPU g, which runs them in the order
 * sent; up to KEVO_MPI_GPU_QUEUE in flight per GPU (the first runs, the
 * others wait there).  To an idle GPU the cubin's transfer is driven for up
 * to KEVO_MPI_SEND_SPIN seconds before this returns.  *sent false: g's rank
 * is lost (now or before): nothing more is in flight and g takes no more
 * work.  Errors: KEVO_ERR_BUSY (g has KEVO_MPI_GPU_QUEUE in flight,
 * counting results not yet taken),
 * KEVO_ERR_ARG (no GPU g), KEVO_ERR_NOMEM. */
kevo_status kevo_mpi_eval_submit(kevo_mpi *m, int g, const kevo_gpu_request *req, bool *sent, kevo_err *err);

/* Rank 0: take the messages that have come, and wait up to wait_s seconds
 * for an evaluation to end: *which is its GPU, *cand its request's
 * candidate_id and res its result (a crash or hang there is a result, as
 * with a local worker); *lost is true when instead g's rank was lost with
 * that evaluation in flight (res untouched: evaluate it elsewhere; each one
 * in flight is reported so, one per call); *which is -1 when neither
 * happened.  Errors: KEVO_ERR_INTERRUPTED, KEVO_ERR_NOMEM, KEVO_ERR_WORKER
 * (MPI failed). */
kevo_status kevo_mpi_eval_wait(kevo_mpi *m, double wait_s, int *which, int64_t *cand, bool *lost,
                               kevo_gpu_result *res, kevo_err *err);

/* Whether remote GPU g still takes work. */
bool kevo_mpi_gpu_alive(const kevo_mpi *m, int g);
/* Evaluations in flight on remote GPU g, or ended with the result not yet
 * taken (kevo_mpi_eval_wait): 0..KEVO_MPI_GPU_QUEUE. */
int kevo_mpi_gpu_queued(const kevo_mpi *m, int g);
/* Remote GPU g's evaluations ended and seconds it had one running (from
 * the later of its send and the previous one's end, to its result). */
void kevo_mpi_gpu_stats(const kevo_mpi *m, int g, int *evaluated, double *busy_s);

/* Any other rank: compile (and, once rank 0 sets it up, evaluate on this
 * rank's GPU) what rank 0 sends until it says stop (KEVO_OK).
 * Errors: KEVO_ERR_WORKER (rank 0 silent for KEVO_MPI_ORPHANED_AFTER
 * seconds, or a message this rank cannot read), KEVO_ERR_INTERRUPTED
 * (SIGINT/SIGTERM). */
kevo_status kevo_mpi_serve(kevo_mpi *m, kevo_err *err);

/* Leave MPI and free m (NULL: nothing).  Rank 0 first tells every live rank
 * to stop and waits for each to answer (or to be lost).  Every rank then
 * calls MPI_Finalize unless a rank was lost, or this rank stopped on an
 * error, in which case it leaves without (see above).  interrupted: this
 * rank stopped on SIGINT/SIGTERM, which mpirun sends every rank: rank 0
 * tells the others to stop but does not wait for them, and no MPI_Finalize.
 * Returns whether MPI_Finalize was called. */
bool kevo_mpi_end(kevo_mpi *m, bool interrupted);

#endif /* KEVO_MPI_H */
