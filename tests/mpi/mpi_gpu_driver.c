/* mpi_gpu_driver.c — a test program for test_mpi's `gpus` case, run under
 * mpirun: rank 0 asks every other rank to start a GPU worker for a run
 * (kevo_mpi_gpus_start), prints how many GPUs answered and each note, then
 * hands one compile to the job (kevo_mpi_compile) to show that a rank
 * without a GPU goes on compiling; the other ranks serve.  On a machine
 * without a GPU driver (CI) no GPU answers and each rank says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/compile.h"
#include "evaluator/mpi.h"

static void note(void *ctx, const char *line)
{
    (void)ctx;
    printf("note: %s\n", line);
    fflush(stdout);
}

int main(void)
{
    kevo_mpi *m = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    if (kevo_mpi_start(2, -1, note, NULL, &m, &err)) {
        fprintf(stderr, "kevo_mpi_start: %s\n", err.msg);
        return 1;
    }
    if (kevo_mpi_rank(m) != 0) {
        kevo_status st = kevo_mpi_serve(m, &err);
        kevo_mpi_end(m, false);
        if (st)
            fprintf(stderr, "rank serve: %s\n", err.msg);
        return st ? 1 : 0;
    }
    /* a setup as rank 0 of `kevo tune` sends it; the reference module is not
       a cubin, which a rank with a GPU would refuse to load: no GPU answers
       either way */
    static const char not_a_cubin[] = "not a cubin";
    kevo_wire_gpu_setup su;
    memset(&su, 0, sizeof su);
    snprintf(su.op, sizeof su.op, "ikbo_lce");
    snprintf(su.shape, sizeof su.shape, "B=64,M=16,N=16,Ku=16,Kc=16,ratio=4");
    snprintf(su.dtype, sizeof su.dtype, "fp16");
    su.warmup = 1;
    su.reps = 3;
    su.timeout_s = 30;
    su.seed = 1;
    su.ref_cubin = (void *)not_a_cubin;
    su.ref_cubin_size = sizeof not_a_cubin;
    kevo_mpi_gpu *gpus = NULL;
    int n = -1, rc = 0;
    if (kevo_mpi_gpus_start(m, &su, &gpus, &n, &err)) {
        fprintf(stderr, "kevo_mpi_gpus_start: %s\n", err.msg);
        rc = 1;
    }
    printf("gpus %d\n", n);
    free(gpus);
    bool sent = true;
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    kevo_status st = kevo_mpi_eval_submit(m, 0, &rq, &sent, &err);
    printf("submit to remote GPU 0: status %d sent %d (%s)\n", st, sent, err.msg);
    /* the ranks still compile: one job, placed where the most slots are free (another rank: 2 against 1) */
    kevo_compile_job job;
    if (!rc && kevo_compile_job_init(&job, "k.cu", "extern \"C\" __global__ void k(float *o) { o[0] = 1.0f; }\n",
                                     "sm_90a", &err) == KEVO_OK) {
        kevo_compile_key(&job);
        st = kevo_mpi_compile(m, &job, 1, 1, 60, &err);
        printf("compile: status %d fail %s cubin %zu bytes\n", st, kevo_fail_name(job.fail), job.cubin_size);
        kevo_compile_job_release(&job);
    }
    kevo_mpi_end(m, false);
    return rc;
}
