/* mpi.c — compiles over MPI ranks (see mpi.h).
 *
 * Rank 0 keeps, per other rank, its state (waiting for hello, ready,
 * refused, lost, gone after bye), its slots and compiles in flight, and when
 * it last heard from it.  kevo_mpi_compile hands each waiting job to the
 * place with the most free slots (rank 0's own pool first on a tie), then
 * waits on its pool and the network in turns of 20 ms until every job has
 * its outcome.  A rank lost meanwhile gives its jobs back to the queue.
 *
 * Threads: rank 0 runs one more thread, which sends `alive` every second
 * (the search can keep the main thread for minutes: a GPU evaluation, an
 * LLM reply), so that the other ranks can tell a busy rank 0 from a dead
 * one.  Every MPI call of either thread holds m->lock (MPI_THREAD_SERIALIZED).
 */
#define _GNU_SOURCE /* dl_iterate_phdr, in sanitized builds */
#include "evaluator/mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/wire.h"
#include "core/op.h"
#include "util/try.h"
#include "util/util.h"

#ifndef KEVO_HAVE_MPI

bool kevo_mpi_built(void)
{
    return false;
}

kevo_status kevo_mpi_start(int slots, int device, kevo_event_fn note, void *ctx, kevo_mpi **out,
                           kevo_err *err)
{
    (void)slots;
    (void)device;
    (void)note;
    (void)ctx;
    *out = NULL;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED,
                        "built without MPI (install libopenmpi-dev and configure kevo again for --mpi)");
}

int kevo_mpi_rank(const kevo_mpi *m)
{
    (void)m;
    return 0;
}

int kevo_mpi_size(const kevo_mpi *m)
{
    (void)m;
    return 1;
}

kevo_status kevo_mpi_compile(kevo_mpi *m, kevo_compile_job *jobs, int n, int parallel, double timeout_s,
                             kevo_err *err)
{
    (void)m;
    return kevo_compile_run(jobs, n, parallel, timeout_s, err);
}

kevo_status kevo_mpi_compile_start(kevo_mpi *m, int parallel, double timeout_s, kevo_err *err)
{
    (void)m;
    (void)parallel;
    (void)timeout_s;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "built without MPI");
}

kevo_status kevo_mpi_compile_add(kevo_mpi *m, kevo_compile_job *job, kevo_err *err)
{
    (void)m;
    (void)job;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "built without MPI");
}

kevo_status kevo_mpi_compile_next(kevo_mpi *m, double wait_s, kevo_compile_job **done, int *left, kevo_err *err)
{
    (void)m;
    (void)wait_s;
    *done = NULL;
    *left = 0;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "built without MPI");
}

void kevo_mpi_compile_stop(kevo_mpi *m)
{
    (void)m;
}

kevo_status kevo_mpi_compile_prepare(kevo_mpi *m, const kevo_compile_job *prelude, kevo_err *err)
{
    (void)m;
    (void)prelude;
    (void)err;
    return KEVO_OK;
}

kevo_status kevo_mpi_serve(kevo_mpi *m, kevo_err *err)
{
    (void)m;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "built without MPI");
}

int kevo_mpi_device(const kevo_mpi *m)
{
    (void)m;
    return 0;
}

int kevo_mpi_slots(const kevo_mpi *m)
{
    (void)m;
    return 1;
}

kevo_status kevo_mpi_gpus_start(kevo_mpi *m, const kevo_wire_gpu_setup *setup, kevo_mpi_gpu **gpus, int *n,
                                kevo_err *err)
{
    (void)m;
    (void)setup;
    (void)err;
    *gpus = NULL;
    *n = 0;
    return KEVO_OK;
}

kevo_status kevo_mpi_eval_submit(kevo_mpi *m, int g, const kevo_gpu_request *req, bool *sent, kevo_err *err)
{
    (void)m;
    (void)req;
    *sent = false;
    return kevo_err_set(err, KEVO_ERR_ARG, "no remote GPU %d (built without MPI)", g);
}

kevo_status kevo_mpi_eval_wait(kevo_mpi *m, double wait_s, int *which, int64_t *cand, bool *lost,
                               kevo_gpu_result *res, kevo_err *err)
{
    (void)m;
    (void)wait_s;
    (void)res;
    (void)err;
    *which = -1;
    *cand = 0;
    *lost = false;
    return KEVO_OK;
}

bool kevo_mpi_gpu_alive(const kevo_mpi *m, int g)
{
    (void)m;
    (void)g;
    return false;
}

int kevo_mpi_gpu_queued(const kevo_mpi *m, int g)
{
    (void)m;
    (void)g;
    return 0;
}

void kevo_mpi_gpu_stats(const kevo_mpi *m, int g, int *evaluated, double *busy_s)
{
    (void)m;
    (void)g;
    *evaluated = 0;
    *busy_s = 0;
}

bool kevo_mpi_end(kevo_mpi *m, bool interrupted)
{
    (void)m;
    (void)interrupted;
    return false;
}

#else /* KEVO_HAVE_MPI */

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

/* In a KEVO_SANITIZE build: what Open MPI allocates inside its calls (and
 * partly never frees, some of it in components it unloads, whose frames
 * LeakSanitizer can then not name) is not reported as kevo's leak; kevo's own
 * allocations stay outside these regions and are tracked as everywhere. */
#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>
#include <sanitizer/lsan_interface.h>
#define MR_LSAN_OFF() __lsan_disable()
#define MR_LSAN_ON() __lsan_enable()

static int mr_pin_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (info->dlpi_name && info->dlpi_name[0])
        dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD); /* one more reference, never dropped */
    return 0;
}

/* Keep every library loaded now (Open MPI's components, libpmix) loaded
 * until exit: MPI_Finalize unloads them, and then LeakSanitizer cannot name
 * their frames for tests/lsan_openmpi.supp (leaks in PMIx's own threads are
 * beyond MR_LSAN_OFF). */
static void mr_pin_libraries(void)
{
    dl_iterate_phdr(mr_pin_one, NULL);
}
#else
#define MR_LSAN_OFF() ((void)0)
#define MR_LSAN_ON() ((void)0)
static void mr_pin_libraries(void)
{
}
#endif

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
    kevo_event_fn note; /* WARNING events (mr_note) */
    void *ctx;
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

/* This process's host name, as ranks tell each other: gethostname, or
 * $KEVO_MPI_HOST where set (for tests: ranks of one machine that stand for
 * several hosts). */
static void mr_host(char host[256])
{
    const char *h = getenv("KEVO_MPI_HOST");
    host[0] = '\0';
    if (h && h[0])
        snprintf(host, 256, "%s", h);
    else
        gethostname(host, 255);
    host[255] = '\0';
}

/* Every MPI call holds m->lock.  Open MPI's allocations inside them are its
 * own business (see MR_LSAN_OFF), so the lock also turns leak tracking off
 * for this thread. */
static void mr_lock(kevo_mpi *m)
{
    pthread_mutex_lock(&m->lock);
    MR_LSAN_OFF();
}

static void mr_unlock(kevo_mpi *m)
{
    MR_LSAN_ON();
    pthread_mutex_unlock(&m->lock);
}

static void mr_note(kevo_mpi *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mr_note(kevo_mpi *m, const char *fmt, ...)
{
    if (!m->note)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    kv_emit(m->note, m->ctx, KEVO_EVENT_WARNING, 0, "%s", kv_term_clean(line)); /* host names come from other ranks */
}

static void mr_sleep_us(long us)
{
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
}

static void mr_sleep_ms(int ms)
{
    mr_sleep_us(ms * 1000L);
}

static const char *mr_errstr(int rc, char *buf, int n)
{
    return kv_try_mpi_text(rc, MPI_Error_string, buf, n);
}

/* MPI_Test under the lock; true when the request is complete (or null).
 * An error counts as complete: the request is over either way. */
static bool mr_test(kevo_mpi *m, MPI_Request *r)
{
    if (*r == MPI_REQUEST_NULL)
        return true;
    int flag = 0;
    mr_lock(m);
    int rc = MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    mr_unlock(m);
    return rc != MPI_SUCCESS || flag;
}

/* Start sending s->buf to dest under tag. */
static kevo_status mr_isend(kevo_mpi *m, mr_send *s, int dest, int tag, kevo_err *err)
{
    if (s->buf.len > (size_t)INT32_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "a message of %zu bytes is too large for MPI", s->buf.len);
    mr_lock(m);
    int rc = MPI_Isend(s->buf.data, (int)s->buf.len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &s->req);
    mr_unlock(m);
    if (rc != MPI_SUCCESS) {
        char e[MPI_MAX_ERROR_STRING];
        s->req = MPI_REQUEST_NULL;
        return kevo_err_set(err, KEVO_ERR_WORKER, "sending to rank %d failed: %s", dest,
                            mr_errstr(rc, e, sizeof e));
    }
    return KEVO_OK;
}

/* Send a buffer and wait (up to limit_s) until the send is complete.  For
 * small control frames; a send that does not complete in time is left to
 * the end (orphaned) and is an error. */
static kevo_status mr_send_wait(kevo_mpi *m, mr_send *s, int dest, int tag, double limit_s, kevo_err *err)
{
    kevo_status st = mr_isend(m, s, dest, tag, err);
    for (double t0 = kv_now(); !st && !mr_test(m, &s->req); mr_sleep_ms(1))
        if (kv_now() - t0 > limit_s)
            st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d did not take a message within %.0f s", dest, limit_s);
    return st;
}

/* Keep a send that may never complete (its peer is lost) until the end. */
static void mr_orphan(kevo_mpi *m, mr_send *s)
{
    if (s->req == MPI_REQUEST_NULL || mr_test(m, &s->req)) {
        kv_buf_release(&s->buf);
        return;
    }
    if (m->norphans == m->orphans_cap) {
        int cap = m->orphans_cap ? 2 * m->orphans_cap : 8;
        mr_send *a = realloc(m->orphans, (size_t)cap * sizeof *a);
        if (!a) { /* out of memory: the buffer is let go unfreed, as MPI may still read it */
            kv_buf_init(&s->buf);
            s->req = MPI_REQUEST_NULL;
            return;
        }
        m->orphans = a;
        m->orphans_cap = cap;
    }
    m->orphans[m->norphans++] = *s;
    kv_buf_init(&s->buf);
    s->req = MPI_REQUEST_NULL;
}

/* Post a receive for each message from src (or any rank) that has come,
 * up to MR_RX_MAX under way.  Errors: KEVO_ERR_NOMEM; KEVO_ERR_WORKER
 * (with *from set where one sender's message could not be received). */
static kevo_status mr_rx_post(kevo_mpi *m, int src, int *from, kevo_err *err)
{
    char e[MPI_MAX_ERROR_STRING];
    while (m->nrx < MR_RX_MAX) {
        int flag = 0, count = 0;
        MPI_Status s;
        mr_lock(m);
        int rc = MPI_Iprobe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s);
        if (rc == MPI_SUCCESS && flag)
            rc = MPI_Get_count(&s, MPI_BYTE, &count);
        mr_unlock(m);
        KV_MPI_TRY_AS(err, rc, "MPI_Iprobe failed");
        if (!flag)
            return KEVO_OK;
        mr_rx *x = &m->rx[m->nrx];
        memset(x, 0, sizeof *x);
        x->from = s.MPI_SOURCE;
        x->tag = s.MPI_TAG;
        x->count = count;
        x->t0 = kv_now();
        x->buf = malloc(count > 0 ? (size_t)count : 1);
        if (!x->buf)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for a message of %d bytes", count);
        /* matches the message just seen: the earliest from its sender (MPI keeps one sender's order) */
        mr_lock(m);
        rc = MPI_Irecv(x->buf, count, MPI_BYTE, x->from, x->tag, MPI_COMM_WORLD, &x->req);
        mr_unlock(m);
        if (rc != MPI_SUCCESS) {
            free(x->buf);
            *from = x->from;
            return kevo_err_set(err, KEVO_ERR_WORKER, "receiving from rank %d failed: %s", x->from,
                                mr_errstr(rc, e, sizeof e));
        }
        m->nrx++;
    }
    return KEVO_OK;
}

/* Whether a message is part way in (its receive posted, not complete, its
 * sender not lost): a rendezvous transfer, which moves only inside this
 * rank's MPI calls. */
static bool mr_receiving(const kevo_mpi *m)
{
    for (int i = 0; i < m->nrx; i++)
        if (!m->rx[i].dead)
            return true;
    return false;
}

static void mr_rx_remove(kevo_mpi *m, int i)
{
    memmove(&m->rx[i], &m->rx[i + 1], (size_t)(m->nrx - i - 1) * sizeof *m->rx);
    m->nrx--;
}

/* The next whole message from src (or any rank), without waiting for one:
 * *got, its sender and tag, and its bytes in *data (caller frees).  One
 * sender's messages come in the order sent; one whose transfer stalls
 * does not hold another's.  A message that stalls for KEVO_MPI_LOST_AFTER
 * seconds (its sender died or stopped in the middle): KEVO_ERR_WORKER with
 * *from set, once (what else that sender has under way is dropped). */
static kevo_status mr_recv(kevo_mpi *m, int src, bool *got, int *from, int *tag, unsigned char **data, size_t *len,
                           kevo_err *err)
{
    *got = false;
    *data = NULL;
    *len = 0;
    kevo_status st = mr_rx_post(m, src, from, err);
    if (st)
        return st;
    double now = kv_now();
    for (int i = 0; i < m->nrx; i++) {
        mr_rx *x = &m->rx[i];
        if (src != MPI_ANY_SOURCE && x->from != src)
            continue;
        if (x->dead) {
            if (mr_test(m, &x->req)) {
                free(x->buf);
                mr_rx_remove(m, i--);
            }
            continue;
        }
        bool older = false; /* an earlier message of its sender is still on its way */
        for (int j = 0; j < i && !older; j++)
            older = !m->rx[j].dead && m->rx[j].from == x->from;
        if (older)
            continue;
        if (mr_test(m, &x->req)) {
            *got = true;
            *from = x->from;
            *tag = x->tag;
            *data = x->buf;
            *len = (size_t)x->count;
            mr_rx_remove(m, i);
            return KEVO_OK;
        }
        if (now - x->t0 > KEVO_MPI_LOST_AFTER) {
            /* the buffers stay until the end: the receives may still write into them */
            *from = x->from;
            for (int j = i; j < m->nrx; j++)
                m->rx[j].dead = m->rx[j].dead || m->rx[j].from == *from;
            return kevo_err_set(err, KEVO_ERR_WORKER, "a message from rank %d stalled for %.0f s", *from,
                                KEVO_MPI_LOST_AFTER);
        }
    }
    return KEVO_OK;
}

bool kevo_mpi_built(void)
{
    return true;
}

int kevo_mpi_rank(const kevo_mpi *m)
{
    return m ? m->rank : 0;
}

int kevo_mpi_size(const kevo_mpi *m)
{
    return m ? m->size : 1;
}

/* ---- rank 0 ---- */

/* The heartbeat: `alive` to every rank not lost, every second, one send in
 * flight per rank at most. */
static void *mr_heartbeat(void *arg)
{
    kevo_mpi *m = arg;
    mr_lock(m);
    while (!m->hb_stop) {
        for (int r = 1; r < m->size; r++) {
            mr_rank *R = &m->ranks[r];
            if (R->state == MR_LOST || R->state == MR_GONE)
                continue;
            if (R->alive != MPI_REQUEST_NULL) {
                int flag = 0;
                if (MPI_Test(&R->alive, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag)
                    continue;
                R->alive = MPI_REQUEST_NULL;
            }
            if (MPI_Isend(m->alive.data, (int)m->alive.len, MPI_BYTE, r, KEVO_WIRE_ALIVE, MPI_COMM_WORLD,
                          &R->alive) != MPI_SUCCESS)
                R->alive = MPI_REQUEST_NULL;
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&m->hb_cond, &m->lock, &until);
    }
    mr_unlock(m);
    return NULL;
}

static void mr_set_state(kevo_mpi *m, int r, int state)
{
    mr_lock(m); /* the heartbeat thread reads it */
    m->ranks[r].state = state;
    mr_unlock(m);
}

/* The compiles rank 0 hands out (kevo_mpi_compile_start .. _stop; NULL
 * between): every job added, in order, done ones too (n grows to the
 * jobs of one search loop). */
typedef struct mr_batch {
    kevo_compile_job **jobs; /* the caller's, borrowed */
    int n, cap;
    int *owner;      /* JS_WAIT, JS_DONE, 0 or a rank */
    int64_t *id;     /* the id a remote job was sent under */
    mr_send *send;   /* its job message */
    bool *told;      /* done and reported by kevo_mpi_compile_next */
    kevo_compile_pool *pool; /* rank 0's own slots */
    double timeout_s;
} mr_batch;

/* Rank r is lost: its jobs go back to the queue, the user is told why. */
static void mr_lose(kevo_mpi *m, mr_batch *b, int r, const char *why)
{
    mr_rank *R = &m->ranks[r];
    if (R->state == MR_LOST)
        return;
    mr_set_state(m, r, MR_LOST);
    m->any_lost = true;
    int back = 0;
    for (int i = 0; b && i < b->n; i++) {
        if (b->owner[i] == r) {
            b->owner[i] = JS_WAIT;
            mr_orphan(m, &b->send[i]);
            back++;
        }
    }
    R->busy = 0;
    int eval_back = 0;
    if (R->gpu >= 0 && R->gpu < m->ngpus) {
        mr_gpu *G = &m->gpus[R->gpu];
        G->dead = true;
        double now = kv_now();
        for (int j = 0; j < G->nq; j++) {
            if (j == 0)
                G->busy_s += now - (G->q[0].t0 > G->last_end ? G->q[0].t0 : G->last_end);
            G->lost_cand[G->nlost++] = G->q[j].cand;
            mr_orphan(m, &G->q[j].send);
        }
        eval_back = G->nq;
        G->nq = 0;
    }
    if (R->gpu_state == MG_ASKED)
        R->gpu_state = MG_ABSENT;
    char where[300] = "";
    if (R->host[0])
        snprintf(where, sizeof where, " (%s, pid %lld)", R->host, R->pid);
    if (b && eval_back)
        mr_note(m, "MPI rank %d%s lost: %s; its %d compile%s and %d evaluation%s in flight go back to the queue", r,
                where, why, back, back == 1 ? "" : "s", eval_back, eval_back == 1 ? "" : "s");
    else if (b)
        mr_note(m, "MPI rank %d%s lost: %s; its %d compile%s in flight go%s back to the queue", r, where, why, back,
                back == 1 ? "" : "s", back == 1 ? "es" : "");
    else if (eval_back)
        mr_note(m, "MPI rank %d%s lost: %s; its %d evaluation%s in flight go%s back to the queue", r, where, why,
                eval_back, eval_back == 1 ? "" : "s", eval_back == 1 ? "es" : "");
    else
        mr_note(m, "MPI rank %d%s lost: %s", r, where, why);
}

static void mr_hello(kevo_mpi *m, int r, const unsigned char *data, size_t len)
{
    mr_rank *R = &m->ranks[r];
    if (R->state != MR_HELLO_WAIT)
        return;
    kevo_wire_hello h;
    kevo_err e;
    kevo_err_clear(&e);
    if (kevo_wire_hello_unpack(data, len, &h, &e) != KEVO_OK) {
        mr_set_state(m, r, MR_REFUSED);
        mr_note(m, "MPI rank %d takes no work: its hello could not be read (%s)", r, e.msg);
        return;
    }
    snprintf(R->host, sizeof R->host, "%s", h.host);
    R->pid = h.pid;
    snprintf(R->start, sizeof R->start, "%s", h.start);
    R->slots = h.slots;
    if (h.rank != r) {
        mr_set_state(m, r, MR_REFUSED);
        mr_note(m, "MPI rank %d takes no work: it calls itself rank %d", r, h.rank);
    } else if (strcmp(h.nvrtc, m->nvrtc) != 0) {
        mr_set_state(m, r, MR_REFUSED);
        mr_note(m, "MPI rank %d (%s) takes no work: its NVRTC is %s, rank 0's %s (cubins and cache keys would not "
                "match)", r, h.host, h.nvrtc, m->nvrtc);
    } else {
        mr_set_state(m, r, MR_READY);
    }
}

/* A result for batch b from rank r. */
static void mr_result(kevo_mpi *m, mr_batch *b, int r, const unsigned char *data, size_t len)
{
    mr_rank *R = &m->ranks[r];
    if (R->state != MR_READY)
        return; /* late: a rank already lost or refused */
    kevo_compile_job tmp;
    memset(&tmp, 0, sizeof tmp);
    int64_t id = 0;
    kevo_err e;
    kevo_err_clear(&e);
    if (kevo_wire_result_unpack(data, len, &id, &tmp, &e) != KEVO_OK) {
        char why[sizeof e.msg + 40];
        snprintf(why, sizeof why, "its result could not be read (%s)", e.msg);
        mr_lose(m, b, r, why);
        return;
    }
    for (int i = 0; b && i < b->n; i++) {
        if (b->owner[i] == r && b->id[i] == id) {
            kevo_compile_job *j = b->jobs[i];
            kevo_compile_job_release(j);
            j->fail = tmp.fail;
            j->log = tmp.log;
            j->cubin = tmp.cubin;
            j->cubin_size = tmp.cubin_size;
            j->seconds = tmp.seconds;
            j->regs = tmp.regs;
            j->spill_bytes = tmp.spill_bytes;
            j->smem_static = tmp.smem_static;
            j->stack_bytes = tmp.stack_bytes;
            j->pch = tmp.pch;
            b->owner[i] = JS_DONE;
            R->busy--;
            return;
        }
    }
    kevo_compile_job_release(&tmp); /* the result of a job no longer waited for */
}

/* A rank's GPU worker answered (kevo_mpi_gpus_start reads it). */
static void mr_gpu_hello(kevo_mpi *m, int r, const unsigned char *data, size_t len)
{
    mr_rank *R = &m->ranks[r];
    if (R->gpu_state != MG_ASKED || R->ghello)
        return;
    kevo_wire_gpu_hello *h = calloc(1, sizeof *h);
    kevo_err e;
    kevo_err_clear(&e);
    if (!h || kevo_wire_gpu_hello_unpack(data, len, m->gpu_op, h, &e) != KEVO_OK) {
        R->gpu_state = MG_ABSENT;
        mr_note(m, "MPI rank %d evaluates nothing: its GPU's answer could not be read (%s)", r,
                h ? e.msg : "out of memory");
        free(h);
        return;
    }
    R->ghello = h;
}

/* An evaluation's result from rank r. */
static void mr_eval_result(kevo_mpi *m, mr_batch *b, int r, const unsigned char *data, size_t len)
{
    mr_rank *R = &m->ranks[r];
    if (R->state != MR_READY || R->gpu < 0 || R->gpu >= m->ngpus)
        return;
    mr_gpu *G = &m->gpus[R->gpu];
    int64_t id = 0;
    kevo_err e;
    kevo_err_clear(&e);
    kevo_gpu_result *res = malloc(sizeof *res);
    if (!res) {
        mr_lose(m, b, r, "out of memory for its result");
        return;
    }
    if (kevo_wire_eval_result_unpack(data, len, &id, res, &e) != KEVO_OK) {
        free(res);
        char why[sizeof e.msg + 64];
        snprintf(why, sizeof why, "its evaluation's result could not be read (%s)", e.msg);
        mr_lose(m, b, r, why);
        return;
    }
    int j = 0;
    while (j < G->nq && G->q[j].id != id)
        j++;
    if (j == G->nq) { /* the result of an evaluation no longer waited for */
        free(res);
        return;
    }
    /* its rank runs them in order: the earlier ones (none but by a fault there) ended unanswered */
    double now = kv_now(), from = G->q[j].t0 > G->last_end ? G->q[j].t0 : G->last_end;
    G->res[G->nres] = res;
    G->res_cand[G->nres++] = G->q[j].cand;
    G->evaluated++;
    G->busy_s += now - from;
    G->last_end = now;
    mr_orphan(m, &G->q[j].send);
    memmove(&G->q[j], &G->q[j + 1], (size_t)(G->nq - j - 1) * sizeof *G->q);
    G->nq--;
}

/* Take every waiting message: results into b (NULL between batches),
 * hellos, alive, bye. */
static kevo_status mr_drain(kevo_mpi *m, mr_batch *b, kevo_err *err)
{
    for (;;) {
        bool got = false;
        int from = -1, tag = 0;
        unsigned char *data = NULL;
        size_t len = 0;
        kevo_err e;
        kevo_err_clear(&e);
        kevo_status st = mr_recv(m, MPI_ANY_SOURCE, &got, &from, &tag, &data, &len, &e);
        if (st == KEVO_ERR_WORKER && from > 0 && from < m->size) {
            mr_lose(m, b, from, e.msg);
            continue;
        }
        if (st)
            return kevo_err_set(err, st, "%s", e.msg);
        if (!got)
            return KEVO_OK;
        if (from > 0 && from < m->size) {
            m->ranks[from].last_heard = kv_now();
            switch (tag) {
            case KEVO_WIRE_HELLO: mr_hello(m, from, data, len); break;
            case KEVO_WIRE_RESULT: mr_result(m, b, from, data, len); break;
            case KEVO_WIRE_GPU_HELLO: mr_gpu_hello(m, from, data, len); break;
            case KEVO_WIRE_EVAL_RESULT: mr_eval_result(m, b, from, data, len); break;
            case KEVO_WIRE_BYE:
                if (m->ranks[from].state != MR_LOST)
                    mr_set_state(m, from, MR_GONE);
                break;
            default: break; /* alive: the time above is all it says */
            }
        }
        free(data);
    }
}

/* Ranks with work that have been silent too long are lost. */
static void mr_check_silence(kevo_mpi *m, mr_batch *b, bool busy_only)
{
    double now = kv_now();
    for (int r = 1; r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        bool evaluating = R->gpu >= 0 && R->gpu < m->ngpus && m->gpus[R->gpu].nq > 0;
        if ((R->state == MR_READY || R->state == MR_REFUSED) && (R->busy > 0 || evaluating || !busy_only) &&
            now - R->last_heard > KEVO_MPI_LOST_AFTER) {
            char why[96];
            snprintf(why, sizeof why, "no word from it for %.0f s", now - R->last_heard);
            mr_lose(m, b, r, why);
        }
    }
}

/* Send job i of b to rank r. */
static kevo_status mr_send_job(kevo_mpi *m, mr_batch *b, int i, int r, double timeout_s, kevo_err *err)
{
    mr_send *s = &b->send[i];
    kv_buf_release(&s->buf);
    kv_buf_init(&s->buf);
    b->id[i] = ++m->next_id;
    kevo_status st = kevo_wire_job_pack(&s->buf, b->id[i], b->jobs[i], timeout_s, err);
    if (st)
        return st;
    kevo_err e;
    kevo_err_clear(&e);
    if (mr_isend(m, s, r, KEVO_WIRE_JOB, &e)) {
        mr_lose(m, b, r, e.msg); /* the job stays waiting */
        return KEVO_OK;
    }
    mr_rank *R = &m->ranks[r];
    if (R->busy++ == 0) /* its silence counts from now */
        R->last_heard = kv_now();
    b->owner[i] = r;
    return KEVO_OK;
}

static void mr_batch_free(kevo_mpi *m, mr_batch *b)
{
    if (!b)
        return;
    /* jobs still out there are abandoned: their results will be ignored */
    for (int i = 0; i < b->n; i++) {
        if (b->owner && b->owner[i] > 0)
            m->ranks[b->owner[i]].busy--;
        if (b->send)
            mr_orphan(m, &b->send[i]);
    }
    kevo_compile_pool_free(b->pool);
    free(b->jobs);
    free(b->owner);
    free(b->id);
    free(b->send);
    free(b->told);
    free(b);
}

kevo_status kevo_mpi_compile_start(kevo_mpi *m, int parallel, double timeout_s, kevo_err *err)
{
    if (!m || m->rank != 0 || m->size == 1 || m->cur)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "kevo_mpi_compile_start off rank 0, alone or twice");
    mr_batch *b = calloc(1, sizeof *b);
    if (!b)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    b->timeout_s = timeout_s;
    kevo_status st = kevo_compile_pool_new(parallel, &b->pool, err);
    if (st) {
        mr_batch_free(m, b);
        return st;
    }
    m->cur = b;
    return KEVO_OK;
}

/* Grows the array at *pp to n elements of size bytes; on failure *pp is untouched. */
static bool mr_resize(void *pp, size_t n, size_t size)
{
    void *p = realloc(*(void **)pp, n * size);
    if (p)
        *(void **)pp = p;
    return p != NULL;
}

/* Grow b's arrays to hold cap jobs; false when out of memory (b unchanged
 * but for the arrays already grown). */
static bool mr_batch_grow(mr_batch *b, int cap)
{
    size_t n = (size_t)cap;
    if (!mr_resize(&b->jobs, n, sizeof *b->jobs) || !mr_resize(&b->owner, n, sizeof *b->owner) ||
        !mr_resize(&b->id, n, sizeof *b->id) || !mr_resize(&b->send, n, sizeof *b->send) ||
        !mr_resize(&b->told, n, sizeof *b->told))
        return false;
    b->cap = cap;
    return true;
}

kevo_status kevo_mpi_compile_add(kevo_mpi *m, kevo_compile_job *job, kevo_err *err)
{
    mr_batch *b = m ? m->cur : NULL;
    if (!b)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "kevo_mpi_compile_add without a start");
    if (b->n == b->cap && !mr_batch_grow(b, b->cap ? 2 * b->cap : 16))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int i = b->n++;
    b->jobs[i] = job;
    b->owner[i] = job->cached ? JS_DONE : JS_WAIT;
    b->id[i] = 0;
    b->told[i] = false;
    kv_buf_init(&b->send[i].buf);
    b->send[i].req = MPI_REQUEST_NULL;
    return KEVO_OK;
}

kevo_status kevo_mpi_compile_next(kevo_mpi *m, double wait_s, kevo_compile_job **done, int *left, kevo_err *err)
{
    *done = NULL;
    *left = 0;
    mr_batch *b = m ? m->cur : NULL;
    if (!b)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "kevo_mpi_compile_next without a start");
    kevo_status st = KEVO_OK;
    /* hand out waiting jobs in order, each to the place with the most free slots */
    for (int i = 0; i < b->n && !st; i++) {
        if (b->owner[i] != JS_WAIT)
            continue;
        int best = -1, most = kevo_compile_pool_idle(b->pool);
        if (most > 0)
            best = 0;
        for (int r = 1; r < m->size; r++) {
            mr_rank *R = &m->ranks[r];
            if (R->state == MR_READY && R->slots - R->busy > most) {
                best = r;
                most = R->slots - R->busy;
            }
        }
        if (best < 0)
            break;
        if (best == 0) {
            st = kevo_compile_pool_start(b->pool, b->jobs[i], b->timeout_s, err);
            b->owner[i] = 0;
        } else {
            st = mr_send_job(m, b, i, best, b->timeout_s, err);
            if (!st && b->owner[i] == JS_WAIT)
                i--; /* that rank was lost on the way: place the job again */
        }
    }
    int remote = 0;
    for (int i = 0; i < b->n; i++)
        remote += b->owner[i] > 0;
    if (!st && kevo_compile_pool_busy(b->pool) > 0) {
        kevo_compile_job *fin = NULL;
        st = kevo_compile_pool_wait(b->pool, remote ? (wait_s < 0.02 ? wait_s : 0.02) : wait_s, &fin, err);
        for (int i = 0; fin && i < b->n; i++)
            if (b->jobs[i] == fin && b->owner[i] == 0)
                b->owner[i] = JS_DONE;
    } else if (!st && wait_s > 0) {
        mr_sleep_ms(wait_s < 0.02 ? (int)(wait_s * 1000) + 1 : 20);
        if (kv_interrupted())
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while compiling",
                              kv_signal_caught());
    }
    if (!st)
        st = mr_drain(m, b, err);
    mr_check_silence(m, b, true);
    for (int i = 0; i < b->n; i++) {
        if (b->owner[i] != JS_DONE)
            (*left)++;
        else if (!b->told[i] && !*done) {
            b->told[i] = true;
            *done = b->jobs[i];
        }
    }
    return st;
}

void kevo_mpi_compile_stop(kevo_mpi *m)
{
    if (!m)
        return;
    mr_batch_free(m, m->cur);
    m->cur = NULL;
}

kevo_status kevo_mpi_compile_prepare(kevo_mpi *m, const kevo_compile_job *prelude, kevo_err *err)
{
    if (!m || m->size == 1)
        return KEVO_OK;
    if (m->rank != 0)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "rank %d asked to prepare other ranks' compiles", m->rank);
    kevo_status st = mr_drain(m, m->cur, err); /* the hellos that have come */
    for (int r = 1; !st && r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        if (R->state != MR_READY && R->state != MR_HELLO_WAIT)
            continue;
        mr_send s = {.req = MPI_REQUEST_NULL};
        kv_buf_init(&s.buf);
        st = kevo_wire_prepare_pack(&s.buf, prelude, err);
        kevo_err e;
        kevo_err_clear(&e);
        if (!st && mr_isend(m, &s, r, KEVO_WIRE_PREPARE, &e))
            mr_lose(m, m->cur, r, e.msg);
        mr_orphan(m, &s); /* freed here once sent, else at the end */
    }
    return st;
}

kevo_status kevo_mpi_compile(kevo_mpi *m, kevo_compile_job *jobs, int n, int parallel, double timeout_s,
                             kevo_err *err)
{
    if (!m || m->size == 1)
        return kevo_compile_run(jobs, n, parallel, timeout_s, err);
    if (m->rank != 0)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "rank %d asked to hand out compiles", m->rank);
    kevo_status st = kevo_mpi_compile_start(m, parallel, timeout_s, err);
    for (int i = 0; i < n && !st; i++)
        st = kevo_mpi_compile_add(m, &jobs[i], err);
    kevo_compile_job *done = NULL;
    for (int left = n; !st && left > 0;)
        st = kevo_mpi_compile_next(m, 1.0, &done, &left, err);
    kevo_mpi_compile_stop(m);
    return st;
}

/* ---- rank 0: GPU evaluation on the other ranks ---- */

kevo_status kevo_mpi_gpus_start(kevo_mpi *m, const kevo_wire_gpu_setup *setup, kevo_mpi_gpu **gpus, int *n,
                                kevo_err *err)
{
    *gpus = NULL;
    *n = 0;
    if (!m || m->size == 1)
        return KEVO_OK;
    if (m->rank != 0 || m->gpus)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "kevo_mpi_gpus_start on rank %d, or twice", m->rank);
    if (!(m->gpu_op = kevo_op_find(setup->op)))
        return kevo_err_set(err, KEVO_ERR_ARG, "kevo_mpi_gpus_start: no op '%s'", setup->op);
    kv_buf frame;
    kv_buf_init(&frame);
    kevo_status st = kevo_wire_gpu_setup_pack(&frame, setup, err);
    mr_send *sends = st ? NULL : calloc((size_t)m->size, sizeof *sends);
    if (!st && !sends)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int r = 1; !st && r < m->size; r++) {
        sends[r].req = MPI_REQUEST_NULL;
        kv_buf_init(&sends[r].buf);
        mr_rank *R = &m->ranks[r];
        if (R->state != MR_READY)
            continue;
        kevo_err e;
        if (kv_buf_append(&sends[r].buf, frame.data, frame.len)) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        if (mr_isend(m, &sends[r], r, KEVO_WIRE_GPU_SETUP, &e)) {
            mr_lose(m, m->cur, r, e.msg);
            continue;
        }
        R->gpu_state = MG_ASKED;
    }
    kv_buf_release(&frame);
    /* each rank's worker times its peers and ceilings: its answer may take minutes, in which it sends
       nothing else (its silence is not held against it until then) */
    for (double t0 = kv_now(); !st;) {
        if (kv_interrupted()) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while the ranks' GPU workers "
                              "started", kv_signal_caught());
            break;
        }
        if ((st = mr_drain(m, m->cur, err)))
            break;
        int waiting = 0;
        for (int r = 1; r < m->size; r++)
            waiting += m->ranks[r].gpu_state == MG_ASKED && !m->ranks[r].ghello && m->ranks[r].state == MR_READY;
        if (waiting == 0)
            break;
        if (kv_now() - t0 > KEVO_MPI_GPU_START_WAIT) {
            for (int r = 1; r < m->size; r++)
                if (m->ranks[r].gpu_state == MG_ASKED && !m->ranks[r].ghello && m->ranks[r].state == MR_READY)
                    mr_lose(m, m->cur, r, "its GPU worker did not answer in time");
            break;
        }
        mr_sleep_ms(10);
    }
    for (int r = 1; sends && r < m->size; r++)
        mr_orphan(m, &sends[r]);
    free(sends);
    int count = 0;
    for (int r = 1; r < m->size; r++)
        count += m->ranks[r].ghello && m->ranks[r].ghello->ok && m->ranks[r].state == MR_READY;
    kevo_mpi_gpu *out = NULL;
    if (!st && count > 0) {
        out = calloc((size_t)count, sizeof *out);
        m->gpus = calloc((size_t)count, sizeof *m->gpus);
        if (!out || !m->gpus) {
            free(out);
            out = NULL;
            free(m->gpus);
            m->gpus = NULL;
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        }
    }
    for (int r = 1; r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        kevo_wire_gpu_hello *h = R->ghello;
        R->ghello = NULL;
        if (!st && h && h->ok && R->state == MR_READY && out) {
            int g = m->ngpus++;
            R->gpu = g;
            R->gpu_state = MG_READY;
            mr_gpu *G = &m->gpus[g];
            G->rank = r;
            out[g].rank = r;
            snprintf(out[g].host, sizeof out[g].host, "%s", R->host);
            out[g].device = h->device;
            out[g].info = h->info;
        } else if (h && !h->ok) {
            R->gpu_state = MG_ABSENT;
            mr_note(m, "MPI rank %d (%s) compiles only: %s", r, R->host, h->msg);
        }
        free(h);
    }
    if (st) {
        free(out);
        return st;
    }
    *gpus = out;
    *n = m->ngpus;
    return KEVO_OK;
}

kevo_status kevo_mpi_eval_submit(kevo_mpi *m, int g, const kevo_gpu_request *req, bool *sent, kevo_err *err)
{
    *sent = false;
    if (!m || g < 0 || g >= m->ngpus)
        return kevo_err_set(err, KEVO_ERR_ARG, "no remote GPU %d", g);
    mr_gpu *G = &m->gpus[g];
    if (G->nq + G->nres >= KEVO_MPI_GPU_QUEUE) /* a result not yet taken still holds its place */
        return kevo_err_set(err, KEVO_ERR_BUSY, "remote GPU %d (rank %d) has %d evaluations in flight", g, G->rank,
                            G->nq + G->nres);
    if (G->dead || m->ranks[G->rank].state != MR_READY)
        return KEVO_OK;
    mr_eval *q = &G->q[G->nq];
    memset(q, 0, sizeof *q);
    q->send.req = MPI_REQUEST_NULL;
    kv_buf_init(&q->send.buf);
    q->id = ++m->next_id;
    q->cand = req->candidate_id;
    kevo_status st = kevo_wire_eval_pack(&q->send.buf, q->id, req, err);
    if (st) {
        kv_buf_release(&q->send.buf);
        return st;
    }
    kevo_err e;
    if (mr_isend(m, &q->send, G->rank, KEVO_WIRE_EVAL, &e)) {
        kv_buf_release(&q->send.buf);
        mr_lose(m, m->cur, G->rank, e.msg);
        return KEVO_OK;
    }
    /* A cubin goes by rendezvous, which moves only inside this rank's MPI
     * calls.  To an idle GPU: drive it to the end now (the rank looks for
     * messages every millisecond), not in whatever MPI call follows the
     * caller's next DB write; a rank slower than KEVO_MPI_SEND_SPIN is left
     * to the drains.  Behind an evaluation in flight, the drains have that
     * evaluation's time to move it. */
    for (double t0 = kv_now(); G->nq == 0 && !mr_test(m, &q->send.req) && kv_now() - t0 < KEVO_MPI_SEND_SPIN;)
        ;
    q->t0 = kv_now();
    G->nq++;
    mr_rank *R = &m->ranks[G->rank];
    if (R->busy == 0 && G->nq == 1) /* its silence counts from now */
        R->last_heard = q->t0;
    *sent = true;
    return KEVO_OK;
}

kevo_status kevo_mpi_eval_wait(kevo_mpi *m, double wait_s, int *which, int64_t *cand, bool *lost,
                               kevo_gpu_result *res, kevo_err *err)
{
    *which = -1;
    *cand = 0;
    *lost = false;
    if (!m || m->ngpus == 0)
        return KEVO_OK;
    double until = kv_now() + (wait_s > 0 ? wait_s : 0);
    for (;;) {
        if (kv_interrupted())
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while evaluating",
                                kv_signal_caught());
        kevo_status st = mr_drain(m, m->cur, err);
        if (st)
            return st;
        mr_check_silence(m, m->cur, true);
        for (int g = 0; g < m->ngpus; g++) {
            mr_gpu *G = &m->gpus[g];
            if (G->nres > 0) {
                *res = *G->res[0];
                *cand = G->res_cand[0];
                free(G->res[0]);
                G->nres--;
                memmove(&G->res[0], &G->res[1], (size_t)G->nres * sizeof *G->res);
                memmove(&G->res_cand[0], &G->res_cand[1], (size_t)G->nres * sizeof *G->res_cand);
                *which = g;
                return KEVO_OK;
            }
            if (G->nlost > 0) {
                *cand = G->lost_cand[0];
                G->nlost--;
                memmove(&G->lost_cand[0], &G->lost_cand[1], (size_t)G->nlost * sizeof *G->lost_cand);
                *which = g;
                *lost = true;
                return KEVO_OK;
            }
        }
        if (kv_now() >= until)
            return KEVO_OK;
        mr_sleep_ms(1);
    }
}

bool kevo_mpi_gpu_alive(const kevo_mpi *m, int g)
{
    return m && g >= 0 && g < m->ngpus && !m->gpus[g].dead && m->ranks[m->gpus[g].rank].state == MR_READY;
}

int kevo_mpi_gpu_queued(const kevo_mpi *m, int g)
{
    return m && g >= 0 && g < m->ngpus ? m->gpus[g].nq + m->gpus[g].nres : 0;
}

void kevo_mpi_gpu_stats(const kevo_mpi *m, int g, int *evaluated, double *busy_s)
{
    *evaluated = 0;
    *busy_s = 0;
    if (!m || g < 0 || g >= m->ngpus)
        return;
    const mr_gpu *G = &m->gpus[g];
    *evaluated = G->evaluated;
    double from = G->nq > 0 ? (G->q[0].t0 > G->last_end ? G->q[0].t0 : G->last_end) : 0;
    *busy_s = G->busy_s + (G->nq > 0 ? kv_now() - from : 0);
}

int kevo_mpi_device(const kevo_mpi *m)
{
    return m ? m->device : 0;
}

int kevo_mpi_slots(const kevo_mpi *m)
{
    return m ? m->slots : 1;
}

/* Rank 0's start: the heartbeat, then every rank's hello. */
static kevo_status mr_start_root(kevo_mpi *m, kevo_err *err)
{
    m->ranks = calloc((size_t)m->size, sizeof *m->ranks);
    if (!m->ranks)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    double now = kv_now();
    for (int r = 0; r < m->size; r++) {
        m->ranks[r].alive = MPI_REQUEST_NULL;
        m->ranks[r].last_heard = now;
        m->ranks[r].gpu = -1;
    }
    kevo_status st = kevo_wire_control_pack(&m->alive, KEVO_WIRE_ALIVE, false, err);
    if (st)
        return st;
    if (pthread_cond_init(&m->hb_cond, NULL) != 0)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "no condition variable for the heartbeat");
    /* SIGINT and SIGTERM stay with the main thread, whose waits they interrupt */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&m->hb, NULL, mr_heartbeat, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&m->hb_cond);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to start the MPI heartbeat thread");
    }
    m->hb_running = true;
    for (double t0 = kv_now(); kv_now() - t0 < KEVO_MPI_HELLO_WAIT && !kv_interrupted(); mr_sleep_ms(10)) {
        if ((st = mr_drain(m, m->cur, err)))
            return st;
        int waiting = 0;
        for (int r = 1; r < m->size; r++)
            waiting += m->ranks[r].state == MR_HELLO_WAIT;
        if (waiting == 0)
            break;
    }
    kv_buf line;
    kv_buf_init(&line);
    int total = m->slots;
    kv_buf_printf(&line, "rank 0: %d on ", m->slots);
    char host[256];
    mr_host(host);
    kv_buf_puts(&line, host);
    for (int r = 1; r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        if (R->state == MR_HELLO_WAIT) {
            char why[96];
            snprintf(why, sizeof why, "no hello from it within %.0f s", KEVO_MPI_HELLO_WAIT);
            mr_lose(m, m->cur, r, why);
        }
        if (R->state == MR_READY) {
            kv_buf_printf(&line, "; rank %d: %d on %s", r, R->slots, R->host);
            total += R->slots;
        }
    }
    mr_note(m, "MPI: %d ranks, %d compile slots (%s)", m->size, total, line.data ? line.data : "");
    kv_buf_release(&line);
    return KEVO_OK;
}

/* The end of lost ranks, which may still run (stopped, or hung where no
 * signal of ours reaches): mpirun waits for every process it started, so a
 * lost rank left running would hold the job after the run is over.  Rank 0
 * ends those of its own host (kv_proc_end: only the process its hello
 * named) and returns the others, for the fin that every rank which said bye
 * gets: each ends those of its host as it leaves.  A note says which were
 * ended and which no rank can reach.  NULL (*n 0) when none. */
static kevo_wire_proc *mr_reap_list(kevo_mpi *m, int *n)
{
    *n = 0;
    char host[256];
    mr_host(host);
    kevo_wire_proc *list = calloc((size_t)m->size, sizeof *list);
    for (int r = 1; r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        if (R->state != MR_LOST)
            continue;
        if (!R->start[0]) { /* no hello, or one without an identity: nothing to end it by */
            if (R->host[0])
                mr_note(m, "MPI rank %d (%s, pid %lld), lost, may still run: its process cannot be told from "
                        "another (no /proc), and mpirun waits for it; end it there (kill -9 %lld)", r, R->host, R->pid,
                        R->pid);
            else
                mr_note(m, "MPI rank %d, lost before its hello, may still run: mpirun waits for it", r);
            continue;
        }
        if (strcmp(R->host, host) == 0) {
            if (kv_proc_end(R->pid, R->start))
                mr_note(m, "MPI rank %d (%s, pid %lld), lost, still ran: ended (SIGKILL) so that mpirun can end", r,
                        R->host, R->pid);
            continue;
        }
        int peer = 0;
        for (int q = 1; q < m->size && !peer; q++)
            if (m->ranks[q].state == MR_GONE && strcmp(m->ranks[q].host, R->host) == 0)
                peer = q;
        if (peer)
            mr_note(m, "MPI rank %d (%s, pid %lld), lost: rank %d of its host ends it as it leaves, if it still runs",
                    r, R->host, R->pid, peer);
        else
            mr_note(m, "MPI rank %d (%s, pid %lld), lost, may still run: no rank of its host is left to end it, and "
                    "mpirun waits for it; end it there (kill -9 %lld)", r, R->host, R->pid, R->pid);
        if (list && *n < KEVO_WIRE_REAP_MAX) {
            kevo_wire_proc *p = &list[(*n)++];
            p->rank = r;
            snprintf(p->host, sizeof p->host, "%s", R->host);
            p->pid = R->pid;
            snprintf(p->start, sizeof p->start, "%s", R->start);
        }
    }
    if (*n == 0) {
        free(list);
        return NULL;
    }
    return list;
}

/* A rank's part of a fin's reap list: end the processes of its host. */
static void mr_reap_here(const kevo_wire_proc *reap, int n)
{
    char host[256];
    mr_host(host);
    for (int i = 0; i < n; i++)
        if (strcmp(reap[i].host, host) == 0)
            kv_proc_end(reap[i].pid, reap[i].start);
}

/* Rank 0's end: stop, wait for every bye (unless interrupted), then fin.
 * Whether to finalize. */
static bool mr_end_root(kevo_mpi *m, bool interrupted)
{
    kevo_err e;
    mr_send *stops = calloc((size_t)m->size, sizeof *stops);
    kv_buf stop;
    kv_buf_init(&stop);
    bool ok = stops && kevo_wire_control_pack(&stop, KEVO_WIRE_STOP, false, &e) == KEVO_OK;
    for (int r = 1; stops && r < m->size; r++) {
        stops[r].req = MPI_REQUEST_NULL;
        kv_buf_init(&stops[r].buf);
    }
    for (int r = 1; ok && r < m->size; r++) {
        mr_rank *R = &m->ranks[r];
        if (R->state != MR_READY && R->state != MR_REFUSED)
            continue;
        kv_buf_append(&stops[r].buf, stop.data, stop.len);
        R->last_heard = kv_now();
        if (mr_isend(m, &stops[r], r, KEVO_WIRE_STOP, &e))
            mr_lose(m, m->cur, r, e.msg);
    }
    kv_buf_release(&stop);
    /* every live rank answers bye once its sends are through (results are drained and dropped) */
    for (bool waiting = ok && !interrupted; waiting;) {
        if (mr_drain(m, m->cur, &e))
            break;
        mr_check_silence(m, m->cur, false);
        waiting = false;
        for (int r = 1; r < m->size; r++)
            waiting |= m->ranks[r].state == MR_READY || m->ranks[r].state == MR_REFUSED;
        if (waiting)
            mr_sleep_ms(5);
    }
    bool finalize = ok && !interrupted && !m->any_lost && !m->failed;
    int nreap = 0;
    kevo_wire_proc *reap = mr_reap_list(m, &nreap);
    kv_buf fin;
    kv_buf_init(&fin);
    if (kevo_wire_fin_pack(&fin, finalize, reap, nreap, &e))
        finalize = false;
    for (int r = 1; r < m->size; r++) {
        if (m->ranks[r].state != MR_GONE)
            continue;
        mr_send s = {.req = MPI_REQUEST_NULL};
        kv_buf_init(&s.buf);
        kv_buf_append(&s.buf, fin.data, fin.len);
        if (mr_send_wait(m, &s, r, KEVO_WIRE_FIN, KEVO_MPI_LOST_AFTER, &e)) {
            finalize = false; /* it may still wait; it leaves after its own time limit */
            mr_orphan(m, &s);
        } else {
            kv_buf_release(&s.buf);
        }
    }
    kv_buf_release(&fin);
    for (int r = 1; stops && r < m->size; r++)
        mr_orphan(m, &stops[r]);
    free(stops);
    free(reap);
    return finalize;
}

/* ---- the other ranks ---- */

/* The received job whose compile job is j (the pool hands back the latter). */
static kevo_wire_job *mr_wire_of(kevo_compile_job *j)
{
    return (kevo_wire_job *)(void *)((char *)j - offsetof(kevo_wire_job, job));
}

static void mr_work_free(kevo_wire_job *w)
{
    if (w) {
        kevo_wire_job_release(w);
        free(w);
    }
}

/* Rank 0's fin: m->finalize, and the end of the lost ranks of this host
 * that it names.  Errors (err may be NULL): KEVO_ERR_WORKER, an unreadable
 * fin (m->finalize stays false). */
static kevo_status mr_serve_fin(kevo_mpi *m, const unsigned char *data, size_t len, kevo_err *err)
{
    kevo_wire_proc *reap = NULL;
    int nreap = 0;
    kevo_err e;
    kevo_err_clear(&e);
    if (kevo_wire_fin_unpack(data, len, &m->finalize, &reap, &nreap, &e)) {
        m->finalize = false;
        return err ? kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: rank 0's fin could not be read: %s", m->rank, e.msg)
                   : KEVO_ERR_WORKER;
    }
    mr_reap_here(reap, nreap);
    free(reap);
    return KEVO_OK;
}

/* Pack a message to rank 0 (a compile result of id and job, an
 * eval_result of id and res, or a gpu_hello) and start sending it, kept in
 * out[] until it is through. */
static kevo_status mr_serve_send(kevo_mpi *m, mr_send **out, int *nout, int *cap, int tag, int64_t id,
                                 const kevo_compile_job *job, const kevo_gpu_result *res,
                                 const kevo_wire_gpu_hello *hello, kevo_err *err)
{
    if (*nout == *cap) {
        int c = *cap ? 2 * *cap : 8;
        mr_send *a = realloc(*out, (size_t)c * sizeof *a);
        if (!a)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        *out = a;
        *cap = c;
    }
    mr_send *s = &(*out)[*nout];
    kv_buf_init(&s->buf);
    s->req = MPI_REQUEST_NULL;
    kevo_status st = tag == KEVO_WIRE_RESULT        ? kevo_wire_result_pack(&s->buf, id, job, err)
                     : tag == KEVO_WIRE_EVAL_RESULT ? kevo_wire_eval_result_pack(&s->buf, id, res, err)
                                                    : kevo_wire_gpu_hello_pack(&s->buf, hello, err);
    if (!st)
        st = mr_isend(m, s, 0, tag, err);
    if (!st)
        (*nout)++;
    else
        kv_buf_release(&s->buf);
    return st;
}

/* Rank 0's gpu_setup: start this rank's GPU worker on its device (its own
 * peers and ceilings) and answer with its figures, or with why there is
 * none (this rank then compiles only).  Only a message that cannot be sent
 * is an error. */
static kevo_status mr_serve_gpu_setup(kevo_mpi *m, const unsigned char *data, size_t len, kevo_wire_gpu_setup *setup,
                                      kevo_gpu **gpu, mr_send **out, int *nout, int *cap, kevo_err *err)
{
    kevo_wire_gpu_hello *h = calloc(1, sizeof *h);
    if (!h)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    h->device = m->device;
    kevo_err e;
    kevo_err_clear(&e);
    kevo_status st = kevo_wire_gpu_setup_unpack(data, len, setup, &e);
    const kevo_op *op = st ? NULL : kevo_op_find(setup->op);
    kevo_gpu_config gc;
    memset(&gc, 0, sizeof gc);
    if (!st && !op)
        st = kevo_err_set(&e, KEVO_ERR_NOT_FOUND, "this kevo has no op '%s'", setup->op);
    if (!st)
        st = op->parse_shape(setup->shape, &gc.shape, &e);
    if (!st && !kevo_dtype_parse(setup->dtype, &gc.dtype))
        st = kevo_err_set(&e, KEVO_ERR_ARG, "unknown dtype '%s'", setup->dtype);
    if (!st) {
        gc.op = op;
        gc.device = m->device;
        gc.warmup = setup->warmup;
        gc.reps = setup->reps;
        gc.timeout_s = setup->timeout_s;
        gc.seed = setup->seed;
        gc.baseline = gc.ceilings = true;
        gc.ref_cubin = setup->ref_cubin;
        gc.ref_cubin_size = setup->ref_cubin_size;
        st = kevo_gpu_start(&gc, gpu, &h->info, &e);
    }
    h->op = op;
    h->ok = st == KEVO_OK;
    if (!h->ok)
        snprintf(h->msg, sizeof h->msg, "%.500s", e.msg);
    st = mr_serve_send(m, out, nout, cap, KEVO_WIRE_GPU_HELLO, 0, NULL, NULL, h, err);
    free(h);
    return st;
}

/* Rank 0's evaluations on this rank: the one the GPU worker runs (id, 0
 * none) and those sent meanwhile, which wait their turn in order. */
typedef struct mr_serving {
    int64_t id;
    kevo_gpu_request waiting[KEVO_MPI_GPU_QUEUE - 1]; /* each owns its cubin */
    int64_t waiting_id[KEVO_MPI_GPU_QUEUE - 1];
    int nwaiting;
    kevo_gpu_result *fail; /* an answer that no GPU gave (below) */
} mr_serving;

/* Answer rank 0's evaluation id at once as failed (why), so that rank 0
 * never waits on it. */
static kevo_status mr_serve_refuse(kevo_mpi *m, mr_serving *sv, int64_t id, const char *why, mr_send **out,
                                   int *nout, int *cap, kevo_err *err)
{
    kevo_gpu_result *res = sv->fail;
    memset(res, 0, sizeof *res);
    res->median_ms = res->min_ms = res->max_ms = res->rel_err = res->max_abs_err = NAN;
    res->fail = KEVO_FAIL_WORKER_CRASH;
    snprintf(res->msg, sizeof res->msg, "rank %d: %.480s", m->rank, why);
    return mr_serve_send(m, out, nout, cap, KEVO_WIRE_EVAL_RESULT, id, NULL, res, NULL, err);
}

/* Hand rank 0's evaluation id to this rank's GPU worker (the cubin stays
 * the caller's).  What cannot run (no GPU here, a worker that cannot
 * start) is answered at once as failed. */
static kevo_status mr_serve_start(kevo_mpi *m, kevo_gpu *gpu, mr_serving *sv, const kevo_gpu_request *rq, int64_t id,
                                  mr_send **out, int *nout, int *cap, kevo_err *err)
{
    kevo_err e;
    kevo_err_clear(&e);
    kevo_status st = gpu ? kevo_gpu_submit(gpu, rq, &e)
                         : kevo_err_set(&e, KEVO_ERR_NO_GPU, "rank %d has no GPU worker", m->rank);
    if (!st) {
        sv->id = id;
        return KEVO_OK;
    }
    return mr_serve_refuse(m, sv, id, e.msg, out, nout, cap, err);
}

/* Rank 0's eval: start it, or keep it until the one in flight ends.
 * Errors: KEVO_ERR_WORKER (a message that cannot be read: no id to answer
 * under), mr_serve_send's. */
static kevo_status mr_serve_eval(kevo_mpi *m, const unsigned char *data, size_t len, kevo_gpu *gpu, mr_serving *sv,
                                 mr_send **out, int *nout, int *cap, kevo_err *err)
{
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    int64_t id = 0;
    kevo_err e;
    kevo_err_clear(&e);
    kevo_status st = kevo_wire_eval_unpack(data, len, &id, &rq, &e);
    if (st) /* rank 0 finds this rank silent about it and moves the candidate */
        return kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: an evaluation from rank 0 could not be read: %s",
                            m->rank, e.msg);
    if (sv->id == 0) {
        st = mr_serve_start(m, gpu, sv, &rq, id, out, nout, cap, err);
    } else if (sv->nwaiting < KEVO_MPI_GPU_QUEUE - 1) {
        sv->waiting[sv->nwaiting] = rq;
        sv->waiting_id[sv->nwaiting++] = id;
        return KEVO_OK; /* its cubin goes with it */
    } else {
        char why[96];
        snprintf(why, sizeof why, "more than %d evaluations sent to it at once", KEVO_MPI_GPU_QUEUE);
        st = mr_serve_refuse(m, sv, id, why, out, nout, cap, err);
    }
    free((void *)rq.cubin);
    return st;
}

/* The evaluation in flight ended: start the next one waiting (those that
 * cannot start are answered as failed). */
static kevo_status mr_serve_next(kevo_mpi *m, kevo_gpu *gpu, mr_serving *sv, mr_send **out, int *nout, int *cap,
                                 kevo_err *err)
{
    kevo_status st = KEVO_OK;
    sv->id = 0;
    while (!st && sv->id == 0 && sv->nwaiting > 0) {
        kevo_gpu_request rq = sv->waiting[0];
        int64_t id = sv->waiting_id[0];
        sv->nwaiting--;
        memmove(&sv->waiting[0], &sv->waiting[1], (size_t)sv->nwaiting * sizeof *sv->waiting);
        memmove(&sv->waiting_id[0], &sv->waiting_id[1], (size_t)sv->nwaiting * sizeof *sv->waiting_id);
        st = mr_serve_start(m, gpu, sv, &rq, id, out, nout, cap, err);
        free((void *)rq.cubin);
    }
    return st;
}

kevo_status kevo_mpi_serve(kevo_mpi *m, kevo_err *err)
{
    if (!m || m->rank == 0)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "rank 0 asked to serve compiles");
    kv_signals_catch();
    kevo_compile_pool *pool = NULL;
    kevo_status st = kevo_compile_pool_new(m->slots, &pool, err);
    kevo_wire_job **pending = NULL; /* received, waiting for a slot, in order */
    int npending = 0, pending_cap = 0;
    kevo_wire_job **running = calloc((size_t)m->slots, sizeof *running); /* in the pool */
    if (!st && !running)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    mr_send *out = NULL;      /* results on their way */
    int nout = 0, out_cap = 0;
    mr_send alive = {.req = MPI_REQUEST_NULL};
    kv_buf_init(&alive.buf);
    if (!st)
        st = kevo_wire_control_pack(&alive.buf, KEVO_WIRE_ALIVE, false, err);
    double last_alive = 0;
    bool stopping = false, fin_seen = false;
    /* this rank's GPU worker, once rank 0 sets it up; setup owns the reference cubin it uses */
    kevo_gpu *gpu = NULL;
    kevo_wire_gpu_setup setup;
    memset(&setup, 0, sizeof setup);
    bool gpu_asked = false;
    mr_serving sv;
    memset(&sv, 0, sizeof sv);
    kevo_gpu_result *eval_res = malloc(sizeof *eval_res);
    sv.fail = malloc(sizeof *sv.fail);
    if (!st && (!eval_res || !sv.fail))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    m->last0 = kv_now();
    while (!st && !stopping) {
        if (kv_interrupted()) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "rank %d interrupted by signal %d", m->rank,
                              kv_signal_caught());
            break;
        }
        /* what rank 0 says */
        for (bool got = true; got && !st && !stopping;) {
            int from = 0, tag = 0;
            unsigned char *data = NULL;
            size_t len = 0;
            st = mr_recv(m, 0, &got, &from, &tag, &data, &len, err);
            if (st || !got)
                break;
            m->last0 = kv_now();
            if (tag == KEVO_WIRE_JOB) {
                kevo_wire_job *w = calloc(1, sizeof *w);
                kevo_err e;
                kevo_err_clear(&e);
                if (!w)
                    st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
                else if (kevo_wire_job_unpack(data, len, w, &e))
                    st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: a job from rank 0 could not be read: %s",
                                      m->rank, e.msg);
                if (!st && npending == pending_cap) {
                    int cap = pending_cap ? 2 * pending_cap : 16;
                    kevo_wire_job **a = realloc(pending, (size_t)cap * sizeof *a);
                    if (!a)
                        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
                    else {
                        pending = a;
                        pending_cap = cap;
                    }
                }
                if (!st)
                    pending[npending++] = w;
                else
                    mr_work_free(w);
            } else if (tag == KEVO_WIRE_PREPARE) {
                kevo_wire_job w;
                kevo_err e;
                kevo_err_clear(&e);
                if (kevo_wire_prepare_unpack(data, len, &w, &e))
                    st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: a prepare from rank 0 could not be read: %s",
                                      m->rank, e.msg);
                else {
                    kevo_compile_pch_prepare(&w.job);
                    kevo_wire_job_release(&w);
                }
            } else if (tag == KEVO_WIRE_GPU_SETUP && !gpu_asked) {
                gpu_asked = true;
                st = mr_serve_gpu_setup(m, data, len, &setup, &gpu, &out, &nout, &out_cap, err);
                m->last0 = kv_now(); /* the start took a while; rank 0 waited for it */
            } else if (tag == KEVO_WIRE_EVAL) {
                st = mr_serve_eval(m, data, len, gpu, &sv, &out, &nout, &out_cap, err);
            } else if (tag == KEVO_WIRE_STOP) {
                stopping = true;
            } else if (tag == KEVO_WIRE_FIN) { /* a fin before any stop: leave as told */
                mr_serve_fin(m, data, len, NULL);
                stopping = fin_seen = true;
            }
            free(data);
        }
        if (st || stopping)
            break;
        while (npending > 0 && kevo_compile_pool_idle(pool) > 0 && !st) {
            kevo_wire_job *w = pending[0];
            memmove(pending, pending + 1, (size_t)(npending - 1) * sizeof *pending);
            npending--;
            /* a rank that cannot fork compiles no more: rank 0 finds it silent and takes its jobs */
            st = kevo_compile_pool_start(pool, &w->job, w->timeout_s, err);
            for (int i = 0; !st && i < m->slots; i++)
                if (!running[i]) {
                    running[i] = w;
                    w = NULL;
                    break;
                }
            mr_work_free(w);
        }
        if (st)
            break;
        bool evaluating = kevo_gpu_busy(gpu);
        /* a message part way in (a cubin, a job's source) needs this rank's MPI calls to go on: no waits */
        bool receiving = mr_receiving(m);
        if (evaluating) { /* the evaluation in flight: its result goes to rank 0 as soon as it is in */
            int which = -1;
            double look = receiving ? 0 : kevo_compile_pool_busy(pool) > 0 || nout > 0 ? 0.002 : 0.02;
            st = kevo_gpu_wait(&gpu, 1, look, &which, eval_res, err);
            if (!st && which == 0) {
                int64_t id = sv.id;
                st = mr_serve_next(m, gpu, &sv, &out, &nout, &out_cap, err); /* the GPU first, then the answer */
                if (!st)
                    st = mr_serve_send(m, &out, &nout, &out_cap, KEVO_WIRE_EVAL_RESULT, id, NULL, eval_res, NULL,
                                       err);
            }
        }
        if (st)
            break;
        if (kevo_compile_pool_busy(pool) > 0) {
            kevo_compile_job *done = NULL;
            /* a result on its way, and rank 0's next evaluation (its cubin comes by rendezvous), move
             * only inside this rank's MPI calls: with a GPU worker or a result out, look often */
            st = kevo_compile_pool_wait(pool, receiving ? 0 : gpu || nout > 0 ? 0.002 : 0.05, &done, err);
            if (done) {
                kevo_wire_job *w = mr_wire_of(done);
                for (int i = 0; i < m->slots; i++)
                    if (running[i] == w)
                        running[i] = NULL;
                st = mr_serve_send(m, &out, &nout, &out_cap, KEVO_WIRE_RESULT, w->id, &w->job, NULL, NULL, err);
                mr_work_free(w);
            }
        } else if (!evaluating) {
            kevo_compile_pch_poll(); /* a prepared header's writer that ended, reaped while no job runs */
            /* with a GPU worker, rank 0's next evaluation follows a result within milliseconds: look often */
            if (!receiving)
                mr_sleep_ms(gpu || nout > 0 ? 1 : 20);
        }
        if (receiving) /* not a spin: a sender lost mid-message takes KEVO_MPI_LOST_AFTER to find */
            mr_sleep_us(50);
        /* results rank 0 has taken */
        for (int i = 0; i < nout;) {
            if (mr_test(m, &out[i].req)) {
                kv_buf_release(&out[i].buf);
                out[i] = out[--nout];
            } else {
                i++;
            }
        }
        double now = kv_now();
        bool busy = kevo_compile_pool_busy(pool) > 0 || npending > 0 || nout > 0 || kevo_gpu_busy(gpu);
        if (!st && busy && now - last_alive >= 1.0 && mr_test(m, &alive.req)) {
            st = mr_isend(m, &alive, 0, KEVO_WIRE_ALIVE, err);
            last_alive = now;
        }
        if (!st && now - m->last0 > KEVO_MPI_ORPHANED_AFTER)
            st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: nothing from rank 0 for %.0f s: it is gone, this rank "
                              "stops", m->rank, now - m->last0);
    }
    /* stop: drop the compiles and the evaluation, let the results out, say bye, wait for fin */
    kevo_compile_pool_free(pool);
    kevo_gpu_stop(gpu);
    kevo_wire_gpu_setup_release(&setup);
    free(eval_res);
    free(sv.fail);
    for (int i = 0; i < sv.nwaiting; i++)
        free((void *)sv.waiting[i].cubin);
    for (int i = 0; running && i < m->slots; i++)
        mr_work_free(running[i]);
    free(running);
    for (int i = 0; i < npending; i++)
        mr_work_free(pending[i]);
    free(pending);
    for (int i = 0; !st && i < nout; i++)
        while (!st && !mr_test(m, &out[i].req)) {
            mr_sleep_ms(1);
            if (kv_now() - m->last0 > KEVO_MPI_ORPHANED_AFTER)
                st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: rank 0 takes no more results", m->rank);
        }
    if (!st && !fin_seen) {
        mr_send bye = {.req = MPI_REQUEST_NULL};
        kv_buf_init(&bye.buf);
        st = kevo_wire_control_pack(&bye.buf, KEVO_WIRE_BYE, false, err);
        if (!st)
            st = mr_send_wait(m, &bye, 0, KEVO_WIRE_BYE, KEVO_MPI_ORPHANED_AFTER, err);
        if (!st)
            kv_buf_release(&bye.buf);
        m->last0 = kv_now();
        while (!st && !fin_seen) {
            bool got = false;
            int from = 0, tag = 0;
            unsigned char *data = NULL;
            size_t len = 0;
            st = mr_recv(m, 0, &got, &from, &tag, &data, &len, err);
            if (!st && got) {
                m->last0 = kv_now();
                if (tag == KEVO_WIRE_FIN) {
                    st = mr_serve_fin(m, data, len, err);
                    fin_seen = true;
                }
            } else if (!st) {
                mr_sleep_ms(5);
                if (kv_now() - m->last0 > KEVO_MPI_ORPHANED_AFTER)
                    st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: no word from rank 0 after bye", m->rank);
            }
            free(data);
        }
    }
    if (!mr_test(m, &alive.req))
        mr_orphan(m, &alive);
    else
        kv_buf_release(&alive.buf);
    for (int i = 0; i < nout; i++)
        mr_orphan(m, &out[i]);
    free(out);
    kv_signals_restore();
    if (st)
        m->failed = true;
    return st;
}

/* ---- start and end ---- */

kevo_status kevo_mpi_start(int slots, int device, kevo_event_fn note, void *ctx, kevo_mpi **out,
                           kevo_err *err)
{
    *out = NULL;
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "MPI was started twice");
    int provided = 0, rank = 0, size = 1;
    MR_LSAN_OFF();
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc == MPI_SUCCESS) {
        /* errors come back as codes: a failed send to one rank must not end the job */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        /* this rank's place among the job's ranks on its host: its GPU by default, and
         * (no --jobs) its share of the host's CPUs: two ranks on one host compiling with
         * every CPU each ran twice the compiles the CPUs hold */
        MPI_Comm local; /* a collective call: every rank makes it */
        int lr = 0, ln = 1;
        if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
            MPI_Comm_rank(local, &lr);
            MPI_Comm_size(local, &ln);
            MPI_Comm_free(&local);
        }
        if (device < 0)
            device = lr;
        if (slots <= 0) { /* without the host's ranks (no split): all its CPUs */
            long cpus = sysconf(_SC_NPROCESSORS_ONLN);
            slots = cpus > 0 && ln > 0 ? (int)(cpus / ln) : 1;
        }
        mr_pin_libraries();
    }
    MR_LSAN_ON();
    if (rc != MPI_SUCCESS)
        return kevo_err_set(err, KEVO_ERR_WORKER, "MPI did not start (MPI_Init_thread: %d)", rc);
    kevo_mpi *m = calloc(1, sizeof *m);
    if (!m) {
        MR_LSAN_OFF();
        MPI_Finalize();
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    m->rank = rank;
    m->size = size;
    m->slots = slots < 1 ? 1 : slots > 256 ? 256 : slots;
    m->device = device < 0 ? 0 : device;
    m->note = note;
    m->ctx = ctx;
    pthread_mutex_init(&m->lock, NULL);
    kv_buf_init(&m->alive);
    kevo_nvrtc_version(m->nvrtc, sizeof m->nvrtc);
    kevo_status st = KEVO_OK;
    if (m->size > 1 && provided < MPI_THREAD_SERIALIZED)
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "this MPI library gives thread level %d, kevo needs "
                          "MPI_THREAD_SERIALIZED", provided);
    else if (m->rank == 0 && m->size > 1)
        st = mr_start_root(m, err);
    else if (m->rank > 0) {
        kevo_wire_hello h;
        memset(&h, 0, sizeof h);
        h.rank = m->rank;
        mr_host(h.host);
        h.pid = (int64_t)getpid();
        kv_proc_id((long long)getpid(), h.start);
        h.slots = m->slots;
        snprintf(h.nvrtc, sizeof h.nvrtc, "%s", m->nvrtc);
        mr_send s = {.req = MPI_REQUEST_NULL};
        kv_buf_init(&s.buf);
        st = kevo_wire_hello_pack(&s.buf, &h, err);
        if (!st)
            st = mr_send_wait(m, &s, 0, KEVO_WIRE_HELLO, KEVO_MPI_HELLO_WAIT, err);
        if (st)
            mr_orphan(m, &s);
        else
            kv_buf_release(&s.buf);
    }
    if (st) {
        m->failed = true;
        kevo_mpi_end(m, false);
        return st;
    }
    *out = m;
    return KEVO_OK;
}

bool kevo_mpi_end(kevo_mpi *m, bool interrupted)
{
    if (!m)
        return false;
    if (interrupted)
        m->failed = true;
    bool finalize;
    if (m->rank == 0 && m->size > 1 && m->ranks) {
        finalize = mr_end_root(m, interrupted);
        if (m->hb_running) {
            mr_lock(m);
            m->hb_stop = true;
            pthread_cond_signal(&m->hb_cond);
            mr_unlock(m);
            pthread_join(m->hb, NULL);
            pthread_cond_destroy(&m->hb_cond);
        }
        for (int r = 1; r < m->size; r++)
            if (m->ranks[r].alive != MPI_REQUEST_NULL && !mr_test(m, &m->ranks[r].alive)) {
                mr_lock(m);
                MPI_Request_free(&m->ranks[r].alive);
                mr_unlock(m);
            }
    } else {
        finalize = m->size == 1 || m->finalize;
    }
    finalize = finalize && !m->failed;
    /* requests still open belong to lost ranks: without MPI_Finalize (after
     * a loss) nothing reads these buffers once this returns */
    for (int i = 0; i < m->norphans; i++)
        if (!finalize || mr_test(m, &m->orphans[i].req))
            kv_buf_release(&m->orphans[i].buf);
    for (int i = 0; i < m->nrx; i++) /* the same for receives under way */
        if (!finalize || mr_test(m, &m->rx[i].req))
            free(m->rx[i].buf);
    if (finalize) {
        MR_LSAN_OFF();
        MPI_Finalize();
        MR_LSAN_ON();
    }
    free(m->orphans);
    kv_buf_release(&m->alive);
    for (int g = 0; g < m->ngpus; g++) {
        mr_gpu *G = &m->gpus[g];
        for (int j = 0; j < G->nres; j++)
            free(G->res[j]);
        for (int j = 0; j < G->nq; j++)
            if (finalize || mr_test(m, &G->q[j].send.req))
                kv_buf_release(&G->q[j].send.buf);
    }
    free(m->gpus);
    for (int r = 0; m->ranks && r < m->size; r++)
        free(m->ranks[r].ghello);
    free(m->ranks);
    pthread_mutex_destroy(&m->lock);
    free(m);
    return finalize;
}

#endif /* KEVO_HAVE_MPI */
