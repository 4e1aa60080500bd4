/* mpi_gpu_driver.c — a test program for test_mpi's `gpus` case, run under
 * mpirun with a directory of its own as its argument (every rank's TMPDIR):
 * rank 0 asks every other rank to start a GPU worker for a run
 * (kevo_mpi_gpus_start), prints how many GPUs answered and each note, then
 * asks the ranks to write a prelude's precompiled header
 * (kevo_mpi_compile_prepare), waits until a writer has come and gone in
 * that directory (rank 0 writes none itself), and hands one compile that
 * begins with the prelude to the job (kevo_mpi_compile), to show that a
 * rank without a GPU goes on compiling, with the header it was asked for;
 * the other ranks serve.  On a machine without a GPU driver (CI) no GPU
 * answers and each rank says why. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "evaluator/compile.h"
#include "evaluator/mpi.h"
#include "util/util.h"

#define PRELUDE "#include <cuda_fp16.h>\n"

/* Whether dir holds a header writer's directory (kevo-pch-*). */
static bool writing(const char *dir)
{
    DIR *d = opendir(dir);
    bool any = false;
    for (struct dirent *e; d && !any && (e = readdir(d));)
        any = strncmp(e->d_name, "kevo-pch-", 9) == 0;
    if (d)
        closedir(d);
    return any;
}

/* Wait up to limit_s for a writer to start in dir and end (its directory
 * removed once its rank has read its end); the seconds, or -1. */
static double writer_came_and_went(const char *dir, double limit_s)
{
    bool seen = false;
    double t0 = kv_now();
    for (struct timespec ms = {0, 5000000L}; kv_now() - t0 < limit_s; nanosleep(&ms, NULL)) {
        bool now = writing(dir);
        if (seen && !now)
            return kv_now() - t0;
        seen = seen || now;
    }
    return -1;
}

static void note(void *ctx, const kevo_event *ev)
{
    (void)ctx;
    printf("note: %s\n", ev->text);
    fflush(stdout);
}

/* The job's handle: its notes reach note(); kept to the end (static: still reachable at exit). */
static kevo_ctx *note_ctx;

int main(int argc, char **argv)
{
    if (argc != 2 || setenv("TMPDIR", argv[1], 1) != 0) {
        fprintf(stderr, "usage: mpi_gpu_driver DIR (every rank's TMPDIR)\n");
        return 2;
    }
    kevo_mpi *m = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    note_ctx = kevo_ctx_new();
    if (!note_ctx) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    kevo_ctx_set_events(note_ctx, note, NULL);
    if (kevo_mpi_start(2, -1, note_ctx, &m, &err)) {
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
    /* the ranks write the prelude's header before any job reaches them */
    kevo_compile_job job;
    if (!rc && kevo_compile_job_init(&job, "k.cu", PRELUDE, "sm_90a", &err) == KEVO_OK) {
        st = kevo_mpi_compile_prepare(m, &job, &err);
        double s = writer_came_and_went(argv[1], 120);
        if (s < 0)
            printf("prepare: status %d; no header written in %s within 120 s\n", st, argv[1]);
        else
            printf("prepare: status %d; a header written in %s within %.1f s\n", st, argv[1], s);
        kevo_compile_job_release(&job);
    }
    /* the ranks still compile: one job, placed where the most slots are free (another rank: 2 against 1) */
    static const char kernel[] = PRELUDE "extern \"C\" __global__ void k(__half *o) { o[0] = __float2half(1.0f); }\n";
    if (!rc && kevo_compile_job_init(&job, "k.cu", kernel, "sm_90a", &err) == KEVO_OK) {
        kevo_compile_key(&job);
        st = kevo_mpi_compile(m, &job, 1, 1, 60, &err);
        printf("compile: status %d fail %s cubin %zu bytes, precompiled header %d\n", st, kevo_fail_name(job.fail),
               job.cubin_size, job.pch);
        kevo_compile_job_release(&job);
    }
    kevo_mpi_end(m, false);
    return rc;
}
