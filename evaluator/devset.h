/* devset.h — the GPUs a process evaluates on, whatever drives them, under
 * one index.  A set is a view, in order, of groups of GPUs, each driven
 * through a row of backend.h's kv_dev_ops: this process's worker children
 * (local or simulated GPUs, gpu.c) and, under --mpi, the other ranks' GPUs
 * (backend_mpi.c).  Its caller (the tuning loop) submits to GPU k, waits
 * for what ends and asks whether k is alive, how many evaluations k holds
 * and may hold, and k's throughput, without knowing which kind k is.
 *
 * The set owns nothing: the workers stay the caller's (who must not stop
 * or replace one while the set is used) and the MPI state kevo_mpi's. */
#ifndef KEVO_DEVSET_H
#define KEVO_DEVSET_H

#include <stdbool.h>
#include <stdint.h>

#include "evaluator/backend.h"
#include "evaluator/gpu.h"
#include "evaluator/mpi.h"

#define KEVO_DEVSET_MAX 64   /* GPUs in one set */
#define KEVO_DEVSET_GROUPS 4 /* groups in one set */

/* A process's GPUs.  Fill with kevo_devset_init and the _add calls; the
 * fields are the set's own, and its groups point into it: a set is not
 * copied. */
typedef struct kevo_devset {
    int n;       /* GPUs: 0 .. n - 1 */
    int ngroups;
    kv_dev_group group[KEVO_DEVSET_GROUPS];
    kevo_gpu *gpu[KEVO_DEVSET_MAX]; /* the workers groups' GPUs, where their impl points */
    int ngpu;
    signed char group_of[KEVO_DEVSET_MAX];
} kevo_devset;

/* An empty set. */
void kevo_devset_init(kevo_devset *s);

/* Append n worker GPUs (g[0..n), each with one evaluation at a time) as
 * the set's next n devices.  Errors: KEVO_ERR_ARG (the set is full). */
kevo_status kevo_devset_add_workers(kevo_devset *s, kevo_gpu *const *g, int n, kevo_err *err);

/* Append the n remote GPUs of m (kevo_mpi_gpus_start's, in its order) as
 * the set's next n devices.  Errors: KEVO_ERR_ARG (the set is full). */
kevo_status kevo_devset_add_mpi(kevo_devset *s, kevo_mpi *m, int n, kevo_err *err);

/* Send one evaluation to GPU k (req's cubin may be freed on return).
 * *taken false with KEVO_OK: k no longer takes work (kevo_devset_alive is
 * now false).  Errors: KEVO_ERR_ARG (no GPU k), KEVO_ERR_BUSY (k holds
 * kevo_devset_depth already), the backend's (KEVO_ERR_WORKER: no worker
 * can be started; MPI's). */
kevo_status kevo_devset_submit(kevo_devset *s, int k, const kevo_gpu_request *req, bool *taken, kevo_err *err);

/* An evaluation ended on GPU k (its request's candidate_id cand, its
 * result res), or k lost it (lost; res NULL: evaluate it elsewhere). */
typedef void (*kevo_devset_end_fn)(void *ctx, int k, int64_t cand, bool lost, const kevo_gpu_result *res);

/* One turn of waiting: each group with a GPU k busy (busy[k], the caller's
 * view) is waited on in turn, up to 0 s when look, else its row's poll_s
 * when also (the caller has other work under way) or another group was
 * busy at the start, else its idle_s; what ends is handed to fn (at most
 * one per group).  res: room for a result.  Errors: the backends'
 * (KEVO_ERR_INTERRUPTED after SIGINT/SIGTERM, MPI's), and no later group
 * is waited on. */
kevo_status kevo_devset_wait(kevo_devset *s, const bool *busy, bool look, bool also, kevo_gpu_result *res,
                             kevo_devset_end_fn fn, void *ctx, kevo_err *err);

/* Whether GPU k takes work. */
bool kevo_devset_alive(const kevo_devset *s, int k);

/* Evaluations GPU k holds (results not yet taken counted), and how many it
 * may hold: the one it runs and those waiting there behind it. */
int kevo_devset_queued(const kevo_devset *s, int k);
int kevo_devset_depth(const kevo_devset *s, int k);

/* GPU k's evaluations ended and the seconds it had one running. */
void kevo_devset_stats(const kevo_devset *s, int k, int *evaluated, double *busy_s);

#endif /* KEVO_DEVSET_H */
