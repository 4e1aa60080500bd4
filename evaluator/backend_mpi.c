/* backend_mpi.c — the mpi row of backend.h's kv_dev_ops: the other ranks'
 * GPUs, driven through rank 0's side of the MPI protocol (mpi_root.c; its
 * stubs in a build without MPI).  impl is the kevo_mpi; GPU g of the group
 * is remote GPU g of kevo_mpi_gpus_start. */
#include "evaluator/backend.h"
#include "evaluator/mpi.h"

static kevo_status bm_submit(kv_dev_group *grp, int g, const kevo_gpu_request *req, bool *taken, kevo_err *err)
{
    return kevo_mpi_eval_submit(grp->impl, g, req, taken, err);
}

static kevo_status bm_wait(kv_dev_group *grp, double wait_s, int *which, int64_t *cand, bool *lost,
                           kevo_gpu_result *res, kevo_err *err)
{
    return kevo_mpi_eval_wait(grp->impl, wait_s, which, cand, lost, res, err);
}

static bool bm_alive(const kv_dev_group *grp, int g)
{
    return kevo_mpi_gpu_alive(grp->impl, g);
}

static int bm_queued(const kv_dev_group *grp, int g)
{
    return kevo_mpi_gpu_queued(grp->impl, g);
}

static void bm_stats(const kv_dev_group *grp, int g, int *evaluated, double *busy_s)
{
    kevo_mpi_gpu_stats(grp->impl, g, evaluated, busy_s);
}

/* A turn's wait: none while the caller has other work under way (it comes
 * back within the turn), 50 ms when only the remote GPUs are busy. */
const kv_dev_ops kv_dev_mpi = {"mpi", KEVO_MPI_GPU_QUEUE, 0.0, 0.05, bm_submit, bm_wait, bm_alive, bm_queued,
                               bm_stats};
