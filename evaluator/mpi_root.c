/* mpi_root.c — rank 0's side of the MPI ranks (see mpi.c): the compiles it hands
 * out and their results, the heartbeat, the other ranks' GPUs, and its start
 * and end. */
#define _GNU_SOURCE
#include "evaluator/mpi.h"

#ifdef KEVO_HAVE_MPI

#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/op.h"
#include "evaluator/mpi_int.h"
#include "evaluator/wire.h"
#include "util/try.h"
#include "util/util.h"

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
    kevo_compile_pool_set_ctx(b->pool, m->ctx);
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
        if (kv_cancelled(m->cancel))
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while compiling",
                              kv_cancelled(m->cancel));
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
        return kevo_compile_run_ctx(jobs, n, parallel, timeout_s, m ? m->ctx : NULL, err);
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
        if (kv_cancelled(m->cancel)) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while the ranks' GPU workers "
                              "started", kv_cancelled(m->cancel));
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
        if (kv_cancelled(m->cancel))
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while evaluating",
                                kv_cancelled(m->cancel));
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
kevo_status mr_start_root(kevo_mpi *m, kevo_err *err)
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
    for (double t0 = kv_now(); kv_now() - t0 < KEVO_MPI_HELLO_WAIT && !kv_cancelled(m->cancel); mr_sleep_ms(10)) {
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
void mr_reap_here(const kevo_wire_proc *reap, int n)
{
    char host[256];
    mr_host(host);
    for (int i = 0; i < n; i++)
        if (strcmp(reap[i].host, host) == 0)
            kv_proc_end(reap[i].pid, reap[i].start);
}

/* Rank 0's end: stop, wait for every bye (unless interrupted), then fin.
 * Whether to finalize. */
bool mr_end_root(kevo_mpi *m, bool interrupted)
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

#endif /* KEVO_HAVE_MPI */
