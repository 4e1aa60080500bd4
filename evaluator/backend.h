/* backend.h — the GPU worker backends behind one table.  The parent (gpu.c)
 * forks a child and runs a backend's body there; the child answers the
 * parent over the pipes of gpu_proto.h whatever it is:
 *   local  the CUDA driver on this machine (gpu_worker.c)
 *   sim    simulated GPUs, KEVO_SIM_GPUS=N (gpu_sim.c), for tests of what
 *          drives the GPUs on machines without one
 * MPI ranks (mpi.c) still reach GPUs through their own protocol. */
#ifndef KEVO_BACKEND_H
#define KEVO_BACKEND_H

#include <stdbool.h>

#include "evaluator/gpu_types.h"

/* One backend. */
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

/* KEVO_SIM_GPUS=N in the environment, 1..16 (more: 16), else 0. */
int kv_gpu_sim_count(void);

/* The backend this process's workers run: sim when kv_gpu_sim_count() > 0,
 * else local. */
const kv_gpu_backend *kv_gpu_backend_pick(void);

#endif /* KEVO_BACKEND_H */
