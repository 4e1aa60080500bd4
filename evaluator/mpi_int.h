/* mpi_int.h — private to evaluator/: the MPI ranks' state and the helpers
 * their files share.  mpi.c (the message helpers, start and end),
 * mpi_root.c (rank 0's side) and mpi_serve.c (the other ranks' side)
 * include it; only in a KEVO_HAVE_MPI build. */
#ifndef KEVO_MPI_INT_H
#define KEVO_MPI_INT_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/mpi.h"
#include "evaluator/wire.h"
#include "util/ctx.h"
#include "util/util.h"

enum { MR_HELLO_WAIT, MR_READY, MR_REFUSED, MR_LOST, MR_GONE };

/* Where a job of kevo_mpi_compile is: waiting, done, rank 0's pool (0) or
 * another rank (its number). */
enum { JS_WAIT = -1, JS_DONE = -2 };

/* Where a rank's GPU worker is (rank 0's view). */
enum { MG_NONE, MG_ASKED, MG_READY, MG_ABSENT };

/* Rank 0's view of another rank. */
typedef struct mr_rank {
    int state;
    int gpu_state;       /* MG_* */
    int gpu;             /* its index in m->gpus, -1 none */
    kevo_wire_gpu_hello *ghello; /* its gpu_hello, until kevo_mpi_gpus_start takes it */
    int slots, busy;     /* compile slots; compiles it has now */
    double last_heard;   /* kv_now() of its last message, or of the job that ended its idleness */
    char host[256];
    long long pid;
    char start[KEVO_PROC_ID_MAX]; /* its process's kv_proc_id, from its hello ("" unknown) */
    MPI_Request alive;   /* the heartbeat thread's last `alive` to it */
} mr_rank;

/* A send and the buffer it reads, which must outlive it. */
typedef struct mr_send {
    kv_buf buf;
    MPI_Request req;
} mr_send;

/* An evaluation sent to a remote GPU. */
typedef struct mr_eval {
    int64_t id;          /* its message id, which the result names */
    int64_t cand;        /* the request's candidate_id */
    double t0;           /* when it was sent */
    mr_send send;        /* its eval message */
} mr_eval;

/* A remote GPU, as rank 0 drives it (one per rank that has one). */
typedef struct mr_gpu {
    int rank;
    bool dead;           /* its rank is lost: no more work */
    mr_eval q[KEVO_MPI_GPU_QUEUE]; /* sent, in order: q[0] runs, the others wait on its rank */
    int nq;
    double last_end;     /* when its last evaluation ended: busy time counts from the later of this and t0 */
    kevo_gpu_result *res[KEVO_MPI_GPU_QUEUE]; /* results come, not yet taken, in order */
    int64_t res_cand[KEVO_MPI_GPU_QUEUE];
    int nres;
    int64_t lost_cand[KEVO_MPI_GPU_QUEUE]; /* evaluations lost with its rank, not yet reported */
    int nlost;
    int evaluated;
    double busy_s;
} mr_gpu;

/* A receive under way: posted when its message was seen, handed out by
 * mr_recv once complete.  A large message moves by rendezvous, which goes
 * on only inside its sender's MPI calls (shared memory without single-copy
 * CMA, TCP between hosts): a rank that looks for messages every 50 ms while
 * it compiles holds its receiver that long per fragment, so nobody waits
 * for a receive to end. */
typedef struct mr_rx {
    MPI_Request req;
    int from, tag, count;
    unsigned char *buf;
    double t0;  /* when it was posted */
    bool dead;  /* it stalled: its sender is lost, and it is dropped once complete */
} mr_rx;

#define MR_RX_MAX 64 /* receives under way at once; more messages wait in MPI */

struct kevo_mpi {
    int rank, size, slots;
    kevo_ctx *ctx;        /* the caller's handle (kevo_mpi_start, kevo_mpi_set_ctx): mr_note's events; NULL: none */
    kv_cancel *cancel;    /* ctx's flag; NULL: never */
    char nvrtc[16];
    pthread_mutex_t lock; /* held around every MPI call */
    bool failed;          /* this rank stopped on an error: it leaves without MPI_Finalize */
    /* rank 0 */
    mr_rank *ranks;       /* [size]; [0] unused */
    int64_t next_id;
    bool any_lost;
    kv_buf alive;         /* the `alive` frame every heartbeat sends */
    pthread_t hb;
    bool hb_running, hb_stop;
    pthread_cond_t hb_cond;
    mr_send *orphans;     /* sends to lost ranks, which may never complete; freed at the end */
    int norphans, orphans_cap;
    mr_rx rx[MR_RX_MAX];  /* receives under way (mr_recv), oldest first */
    int nrx;
    mr_gpu *gpus;         /* the other ranks' GPUs (kevo_mpi_gpus_start) */
    int ngpus;
    const kevo_op *gpu_op; /* the op their gpu_hello's peers belong to */
    struct mr_batch *cur; /* the compiles under way (kevo_mpi_compile_start), or NULL */
    int device;           /* this rank's GPU ordinal for evaluations */
    /* other ranks */
    double last0;         /* kv_now() of rank 0's last message */
    bool finalize;        /* what rank 0's fin said */
};

/* ---- the message helpers (mpi.c) ---- */

/* This process's host name, as ranks tell each other: gethostname, or
 * $KEVO_MPI_HOST where set (for tests: ranks of one machine that stand for
 * several hosts). */
void mr_host(char host[256]);

/* Every MPI call holds m->lock.  Open MPI's allocations inside them are its
 * own business (see MR_LSAN_OFF), so the lock also turns leak tracking off
 * for this thread. */
void mr_lock(kevo_mpi *m);
void mr_unlock(kevo_mpi *m);

void mr_note(kevo_mpi *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void mr_sleep_us(long us);
void mr_sleep_ms(int ms);

/* MPI_Test under the lock; true when the request is complete (or null).
 * An error counts as complete: the request is over either way. */
bool mr_test(kevo_mpi *m, MPI_Request *r);

/* Start sending s->buf to dest under tag. */
kevo_status mr_isend(kevo_mpi *m, mr_send *s, int dest, int tag, kevo_err *err);

/* Send a buffer and wait (up to limit_s) until the send is complete.  For
 * small control frames; a send that does not complete in time is left to
 * the end (orphaned) and is an error. */
kevo_status mr_send_wait(kevo_mpi *m, mr_send *s, int dest, int tag, double limit_s, kevo_err *err);

/* Keep a send that may never complete (its peer is lost) until the end. */
void mr_orphan(kevo_mpi *m, mr_send *s);

/* Whether a message is part way in (its receive posted, not complete, its
 * sender not lost): a rendezvous transfer, which moves only inside this
 * rank's MPI calls. */
bool mr_receiving(const kevo_mpi *m);

/* The next whole message from src (or any rank), without waiting for one:
 * *got, its sender and tag, and its bytes in *data (caller frees).  One
 * sender's messages come in the order sent; one whose transfer stalls
 * does not hold another's.  A message that stalls for KEVO_MPI_LOST_AFTER
 * seconds (its sender died or stopped in the middle): KEVO_ERR_WORKER with
 * *from set, once (what else that sender has under way is dropped). */
kevo_status mr_recv(kevo_mpi *m, int src, bool *got, int *from, int *tag, unsigned char **data, size_t *len,
                    kevo_err *err);

/* ---- rank 0's start and end (mpi_root.c) ---- */

/* Rank 0's start: the heartbeat, then every rank's hello. */
kevo_status mr_start_root(kevo_mpi *m, kevo_err *err);

/* Rank 0's end: stop, wait for every bye (unless interrupted), then fin.
 * Whether to finalize. */
bool mr_end_root(kevo_mpi *m, bool interrupted);

/* A rank's part of a fin's reap list: end the processes of its host. */
void mr_reap_here(const kevo_wire_proc *reap, int n);

#endif
