/* mpi_slow_sender.c — a test program for test_mpi's `slow` case, run under
 * `mpirun -np 2` with shared memory's single-copy transfers off: once rank
 * 0's loop has begun (it hands rank 1 a job, which rank 1 leaves alone),
 * rank 1 starts a large message to rank 0 (a cubin's size and more) and then makes
 * no MPI call for HOLD seconds, as a rank busy compiling does between its
 * looks, so that the message's rendezvous cannot go on meanwhile.  Rank 0
 * keeps calling kevo_mpi_compile_next without waiting, as the tuning loop
 * does between its GPUs' results, and prints the longest call: a receive
 * that waited for its sender would make it HOLD seconds.  Rank 1 then
 * serves as usual (stop, bye, fin). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evaluator/compile.h"
#include "evaluator/mpi.h"
#include "evaluator/wire.h"
#include "util/util.h"

#define HOLD_S 3.0
#define BIG (8u << 20) /* bytes */

static void note(void *ctx, const kevo_event *ev)
{
    (void)ctx;
    printf("note: %s\n", ev->text);
    fflush(stdout);
}

/* The job's handle: its notes reach note(); kept to the end (static: still reachable at exit). */
static kevo_ctx *note_ctx;

static int rank1(kevo_mpi *m)
{
    /* rank 0's loop has begun once it hands out its second job (its own slot takes the first);
       this rank never compiles it: rank 0 drops it at the end */
    for (int tag = -1; tag != KEVO_WIRE_JOB;) {
        MPI_Status s;
        int n = 0;
        if (MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &s) != MPI_SUCCESS || MPI_Get_count(&s, MPI_BYTE, &n))
            return 1;
        unsigned char *msg = malloc(n > 0 ? (size_t)n : 1);
        if (!msg || MPI_Recv(msg, n, MPI_BYTE, 0, s.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 1;
        free(msg);
        tag = s.MPI_TAG;
    }
    unsigned char *big = calloc(BIG, 1);
    if (!big)
        return 1;
    /* an `alive` frame as large as many cubins: rank 0 only notes when it came */
    MPI_Request rq;
    if (MPI_Isend(big, (int)BIG, MPI_BYTE, 0, KEVO_WIRE_ALIVE, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
        return 1;
    struct timespec hold = {(time_t)HOLD_S, 0};
    nanosleep(&hold, NULL);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    free(big);
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_mpi_serve(m, &err);
    if (st)
        fprintf(stderr, "rank 1 serve: %s\n", err.msg);
    kevo_mpi_end(m, false);
    return st ? 1 : 0;
}

int main(void)
{
    kevo_mpi *m = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    note_ctx = kevo_ctx_new();
    if (!note_ctx) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    kevo_ctx_set_events(note_ctx, note, NULL);
    if (kevo_mpi_start(1, -1, note_ctx, &m, &err)) {
        fprintf(stderr, "kevo_mpi_start: %s\n", err.msg);
        return 1;
    }
    if (kevo_mpi_rank(m) != 0)
        return rank1(m);
    int rc = 0;
    double longest = 0;
    kevo_compile_job jobs[2];
    int njobs = 0;
    if (kevo_mpi_compile_start(m, 1, 60, &err)) {
        fprintf(stderr, "kevo_mpi_compile_start: %s\n", err.msg);
        rc = 1;
    }
    while (!rc && njobs < 2) {
        kevo_compile_job *j = &jobs[njobs];
        if (kevo_compile_job_init(j, "k.cu", "extern \"C\" __global__ void k(float *o) { o[0] = 1.0f; }\n",
                                  "sm_90a", &err)) {
            fprintf(stderr, "a job: %s\n", err.msg);
            rc = 1;
            break;
        }
        njobs++;
        kevo_compile_key(j);
        if (kevo_mpi_compile_add(m, j, &err)) {
            fprintf(stderr, "kevo_mpi_compile_add: %s\n", err.msg);
            rc = 1;
        }
    }
    for (double t0 = kv_now(); !rc && kv_now() - t0 < HOLD_S + 2;) {
        kevo_compile_job *done = NULL;
        int left = 0;
        double t = kv_now();
        if (kevo_mpi_compile_next(m, 0.0, &done, &left, &err)) {
            fprintf(stderr, "kevo_mpi_compile_next: %s\n", err.msg);
            rc = 1;
        }
        double dt = kv_now() - t;
        longest = dt > longest ? dt : longest;
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    kevo_mpi_compile_stop(m);
    for (int i = 0; i < njobs; i++)
        kevo_compile_job_release(&jobs[i]);
    printf("longest call %.3f s (rank 1 held its message %.0f s)\n", longest, HOLD_S);
    fflush(stdout);
    kevo_mpi_end(m, false);
    return rc;
}
