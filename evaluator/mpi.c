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
 * (the search can keep the main thread for minutes: a GPU evaluation, a
 * generator's reply), so that the other ranks can tell a busy rank 0 from a dead
 * one.  Every MPI call of either thread holds m->lock (MPI_THREAD_SERIALIZED).
 *
 * Files: mpi.c the build without MPI, the message helpers both sides use
 * (mpi_int.h), start and end; mpi_root.c rank 0's side; mpi_serve.c the
 * other ranks' (kevo_mpi_serve).
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

kevo_status kevo_mpi_start(int slots, int device, kevo_ctx *ctx, kevo_mpi **out, kevo_err *err)
{
    (void)slots;
    (void)device;
    (void)ctx;
    *out = NULL;
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED,
                        "built without MPI (install libopenmpi-dev and configure kevo again for --mpi)");
}

void kevo_mpi_set_ctx(kevo_mpi *m, kevo_ctx *ctx)
{
    (void)m;
    (void)ctx;
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

#include "evaluator/mpi_int.h"

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

/* This process's host name, as ranks tell each other: gethostname, or
 * $KEVO_MPI_HOST where set (for tests: ranks of one machine that stand for
 * several hosts). */
void mr_host(char host[256])
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
void mr_lock(kevo_mpi *m)
{
    pthread_mutex_lock(&m->lock);
    MR_LSAN_OFF();
}

void mr_unlock(kevo_mpi *m)
{
    MR_LSAN_ON();
    pthread_mutex_unlock(&m->lock);
}

void mr_note(kevo_mpi *m, const char *fmt, ...)
{
    if (!kv_ctx_fn(m->ctx))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    kv_ctx_emit(m->ctx, KEVO_EVENT_WARNING, 0, "%s", kv_term_clean(line)); /* host names come from other ranks */
}

void mr_sleep_us(long us)
{
    struct timespec ts = {us / 1000000L, (us % 1000000L) * 1000L};
    nanosleep(&ts, NULL);
}

void mr_sleep_ms(int ms)
{
    mr_sleep_us(ms * 1000L);
}

static const char *mr_errstr(int rc, char *buf, int n)
{
    return kv_try_mpi_text(rc, MPI_Error_string, buf, n);
}

/* MPI_Test under the lock; true when the request is complete (or null).
 * An error counts as complete: the request is over either way. */
bool mr_test(kevo_mpi *m, MPI_Request *r)
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
kevo_status mr_isend(kevo_mpi *m, mr_send *s, int dest, int tag, kevo_err *err)
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
kevo_status mr_send_wait(kevo_mpi *m, mr_send *s, int dest, int tag, double limit_s, kevo_err *err)
{
    kevo_status st = mr_isend(m, s, dest, tag, err);
    for (double t0 = kv_now(); !st && !mr_test(m, &s->req); mr_sleep_ms(1))
        if (kv_now() - t0 > limit_s)
            st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d did not take a message within %.0f s", dest, limit_s);
    return st;
}

/* Keep a send that may never complete (its peer is lost) until the end. */
void mr_orphan(kevo_mpi *m, mr_send *s)
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
bool mr_receiving(const kevo_mpi *m)
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
kevo_status mr_recv(kevo_mpi *m, int src, bool *got, int *from, int *tag, unsigned char **data, size_t *len,
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

void kevo_mpi_set_ctx(kevo_mpi *m, kevo_ctx *ctx)
{
    if (!m)
        return;
    m->ctx = ctx;
    m->cancel = kv_ctx_flag(ctx);
}

int kevo_mpi_rank(const kevo_mpi *m)
{
    return m ? m->rank : 0;
}

int kevo_mpi_size(const kevo_mpi *m)
{
    return m ? m->size : 1;
}


/* ---- start and end ---- */

kevo_status kevo_mpi_start(int slots, int device, kevo_ctx *ctx, kevo_mpi **out, kevo_err *err)
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
    kevo_mpi_set_ctx(m, ctx);
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
