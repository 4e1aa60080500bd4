/* backend.h — the GPU backends behind one table, at two levels.
 *
 * What evaluates (kv_gpu_backend): the parent (gpu.c) forks a child and runs
 * a backend's body there; the child answers the parent over the pipes of
 * gpu_proto.h whatever it is:
 *   local  the CUDA driver on this machine (gpu_worker.c)
 *   sim    simulated GPUs, KEVO_SIM_GPUS=N (gpu_sim.c), for tests of what
 *          drives the GPUs on machines without one
 * (another MPI rank's GPU worker is one of these too, started there).
 *
 * How the evaluating process drives a group of GPUs (kv_dev_ops), one row
 * per way a candidate reaches a GPU:
 *   workers  this process's worker children, local or sim (gpu.c)
 *   mpi      the other ranks' GPUs, through rank 0's side of the MPI
 *            protocol (backend_mpi.c over mpi_root.c)
 * devset.h puts a run's groups under one device index, so that the tuning
 * loop drives every GPU alike. */
#ifndef KEVO_BACKEND_H
#define KEVO_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "evaluator/gpu_types.h"

/* One backend of worker processes. */
typedef struct kv_gpu_backend {
    const char *name; /* "local", "sim" */
    /* The probe's body (kevo_gpu_list, kevo_gpu_probe): one gp_probe to
     * wfd; never returns. */
    void (*probe_main)(int wfd);
    /* The worker's body: one gp_hello to wfd, then an answer for each
     * request read from rfd (first: the run's first worker, which times the
     * peers); never returns. */
    void (*worker_main)(const kevo_gpu_config *cfg, int rfd, int wfd, bool first);
} kv_gpu_backend;

extern const kv_gpu_backend kv_backend_local; /* gpu_worker.c */
extern const kv_gpu_backend kv_backend_sim;   /* gpu_sim.c */

/* A group of GPUs as devset.c holds it: a row, what the row drives, and
 * where its GPUs sit in the set. */
typedef struct kv_dev_group {
    const struct kv_dev_ops *ops;
    void *impl;     /* workers: kevo_gpu *[n]; mpi: the kevo_mpi */
    int first, n;   /* its GPUs are the set's first .. first + n - 1; g below is 0 .. n - 1 */
} kv_dev_group;

/* One way of driving GPUs; g is a GPU of the group.  Every result names
 * the candidate_id of its request.  Starting and stopping the GPUs stays
 * with each backend's own calls (kevo_gpu_start / _stop; kevo_mpi_gpus_start
 * / kevo_mpi_end): a row drives GPUs that run. */
typedef struct kv_dev_ops {
    const char *name; /* "workers", "mpi" */
    /* Evaluations one GPU may hold: the one it runs and those that wait
     * there behind it (1: workers; KEVO_MPI_GPU_QUEUE: mpi). */
    int depth;
    /* How long one turn of waiting lasts while something else (another
     * group, compiles) is busy, and while only this group is. */
    double poll_s, idle_s;
    /* Send one evaluation to g.  *taken false (KEVO_OK): g no longer takes
     * work (alive() is now false); errors: the row's. */
    kevo_status (*submit)(kv_dev_group *grp, int g, const kevo_gpu_request *req, bool *taken, kevo_err *err);
    /* Wait up to wait_s seconds (0: look) for an evaluation to end: *which
     * its GPU (-1 none), *cand its candidate, res its result; *lost: instead
     * g lost it (res untouched: evaluate it elsewhere). */
    kevo_status (*wait)(kv_dev_group *grp, double wait_s, int *which, int64_t *cand, bool *lost,
                        kevo_gpu_result *res, kevo_err *err);
    /* Whether g takes work. */
    bool (*alive)(const kv_dev_group *grp, int g);
    /* Evaluations g holds, results not yet taken counted: 0 .. depth. */
    int (*queued)(const kv_dev_group *grp, int g);
    /* Evaluations g ended and the seconds it had one running. */
    void (*stats)(const kv_dev_group *grp, int g, int *evaluated, double *busy_s);
} kv_dev_ops;

extern const kv_dev_ops kv_dev_workers; /* gpu.c */
extern const kv_dev_ops kv_dev_mpi;     /* backend_mpi.c */

/* KEVO_SIM_GPUS=N in the environment, 1..16 (more: 16), else 0. */
int kv_gpu_sim_count(void);

/* The backend this process's workers run: sim when kv_gpu_sim_count() > 0,
 * else local. */
const kv_gpu_backend *kv_gpu_backend_pick(void);

#endif /* KEVO_BACKEND_H */
