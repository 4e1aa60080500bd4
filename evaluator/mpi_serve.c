/* mpi_serve.c — the other ranks' side (see mpi.c): kevo_mpi_serve, which compiles
 * and evaluates what rank 0 sends until it says stop. */
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
        gc.cancel = m->cancel;
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

/* kevo_mpi_serve's state: the compiles received and running, the messages
 * on their way to rank 0, and this rank's GPU worker with its evaluations. */
typedef struct mr_server {
    kevo_compile_pool *pool;
    kevo_wire_job **pending; /* received, waiting for a slot, in order */
    int npending, pending_cap;
    kevo_wire_job **running; /* in the pool */
    mr_send *out;            /* results on their way */
    int nout, out_cap;
    mr_send alive;
    double last_alive;
    bool stopping, fin_seen;
    /* this rank's GPU worker, once rank 0 sets it up; setup owns the reference cubin it uses */
    kevo_gpu *gpu;
    kevo_wire_gpu_setup setup;
    bool gpu_asked;
    mr_serving sv;
    kevo_gpu_result *eval_res;
} mr_server;

/* What rank 0 says: every message that is in, each acted on (jobs queued,
 * a prepare, the GPU setup, evaluations, stop, fin). */
static kevo_status mr_serve_listen(kevo_mpi *m, mr_server *sr, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (bool got = true; got && !st && !sr->stopping;) {
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
            if (!st && sr->npending == sr->pending_cap) {
                int cap = sr->pending_cap ? 2 * sr->pending_cap : 16;
                kevo_wire_job **a = realloc(sr->pending, (size_t)cap * sizeof *a);
                if (!a)
                    st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
                else {
                    sr->pending = a;
                    sr->pending_cap = cap;
                }
            }
            if (!st)
                sr->pending[sr->npending++] = w;
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
        } else if (tag == KEVO_WIRE_GPU_SETUP && !sr->gpu_asked) {
            sr->gpu_asked = true;
            st = mr_serve_gpu_setup(m, data, len, &sr->setup, &sr->gpu, &sr->out, &sr->nout, &sr->out_cap, err);
            m->last0 = kv_now(); /* the start took a while; rank 0 waited for it */
        } else if (tag == KEVO_WIRE_EVAL) {
            st = mr_serve_eval(m, data, len, sr->gpu, &sr->sv, &sr->out, &sr->nout, &sr->out_cap, err);
        } else if (tag == KEVO_WIRE_STOP) {
            sr->stopping = true;
        } else if (tag == KEVO_WIRE_FIN) { /* a fin before any stop: leave as told */
            mr_serve_fin(m, data, len, NULL);
            sr->stopping = sr->fin_seen = true;
        }
        free(data);
    }
    return st;
}

/* Start the jobs waiting, as the pool has idle slots. */
static kevo_status mr_serve_dispatch(kevo_mpi *m, mr_server *sr, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    while (sr->npending > 0 && kevo_compile_pool_idle(sr->pool) > 0 && !st) {
        kevo_wire_job *w = sr->pending[0];
        memmove(sr->pending, sr->pending + 1, (size_t)(sr->npending - 1) * sizeof *sr->pending);
        sr->npending--;
        /* a rank that cannot fork compiles no more: rank 0 finds it silent and takes its jobs */
        st = kevo_compile_pool_start(sr->pool, &w->job, w->timeout_s, err);
        for (int i = 0; !st && i < m->slots; i++)
            if (!sr->running[i]) {
                sr->running[i] = w;
                w = NULL;
                break;
            }
        mr_work_free(w);
    }
    return st;
}

/* One turn of the work: the evaluation in flight and the compiles (their
 * results sent), a wait when idle, the sends rank 0 has taken, `alive`
 * while busy, and rank 0's silence. */
static kevo_status mr_serve_step(kevo_mpi *m, mr_server *sr, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    bool evaluating = kevo_gpu_busy(sr->gpu);
    /* a message part way in (a cubin, a job's source) needs this rank's MPI calls to go on: no waits */
    bool receiving = mr_receiving(m);
    if (evaluating) { /* the evaluation in flight: its result goes to rank 0 as soon as it is in */
        int which = -1;
        double look = receiving ? 0 : kevo_compile_pool_busy(sr->pool) > 0 || sr->nout > 0 ? 0.002 : 0.02;
        st = kevo_gpu_wait(&sr->gpu, 1, look, &which, sr->eval_res, err);
        if (!st && which == 0) {
            int64_t id = sr->sv.id;
            /* the GPU first, then the answer */
            st = mr_serve_next(m, sr->gpu, &sr->sv, &sr->out, &sr->nout, &sr->out_cap, err);
            if (!st)
                st = mr_serve_send(m, &sr->out, &sr->nout, &sr->out_cap, KEVO_WIRE_EVAL_RESULT, id, NULL,
                                   sr->eval_res, NULL, err);
        }
    }
    if (st)
        return st;
    if (kevo_compile_pool_busy(sr->pool) > 0) {
        kevo_compile_job *done = NULL;
        /* a result on its way, and rank 0's next evaluation (its cubin comes by rendezvous), move
         * only inside this rank's MPI calls: with a GPU worker or a result out, look often */
        st = kevo_compile_pool_wait(sr->pool, receiving ? 0 : sr->gpu || sr->nout > 0 ? 0.002 : 0.05, &done, err);
        if (done) {
            kevo_wire_job *w = mr_wire_of(done);
            for (int i = 0; i < m->slots; i++)
                if (sr->running[i] == w)
                    sr->running[i] = NULL;
            st = mr_serve_send(m, &sr->out, &sr->nout, &sr->out_cap, KEVO_WIRE_RESULT, w->id, &w->job, NULL, NULL,
                               err);
            mr_work_free(w);
        }
    } else if (!evaluating) {
        kevo_compile_pch_poll(m->ctx); /* a prepared header's writer that ended, reaped while no job runs */
        /* with a GPU worker, rank 0's next evaluation follows a result within milliseconds: look often */
        if (!receiving)
            mr_sleep_ms(sr->gpu || sr->nout > 0 ? 1 : 20);
    }
    if (receiving) /* not a spin: a sender lost mid-message takes KEVO_MPI_LOST_AFTER to find */
        mr_sleep_us(50);
    /* results rank 0 has taken */
    for (int i = 0; i < sr->nout;) {
        if (mr_test(m, &sr->out[i].req)) {
            kv_buf_release(&sr->out[i].buf);
            sr->out[i] = sr->out[--sr->nout];
        } else {
            i++;
        }
    }
    double now = kv_now();
    bool busy = kevo_compile_pool_busy(sr->pool) > 0 || sr->npending > 0 || sr->nout > 0 || kevo_gpu_busy(sr->gpu);
    if (!st && busy && now - sr->last_alive >= 1.0 && mr_test(m, &sr->alive.req)) {
        st = mr_isend(m, &sr->alive, 0, KEVO_WIRE_ALIVE, err);
        sr->last_alive = now;
    }
    if (!st && now - m->last0 > KEVO_MPI_ORPHANED_AFTER)
        st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: nothing from rank 0 for %.0f s: it is gone, this rank "
                          "stops", m->rank, now - m->last0);
    return st;
}

/* The end of serving, after st: free what runs, let the results out, say
 * bye and wait for fin.  Returns st or the first error of the end. */
static kevo_status mr_serve_end(kevo_mpi *m, mr_server *sr, kevo_status st, kevo_err *err)
{
    /* stop: drop the compiles and the evaluation, let the results out, say bye, wait for fin */
    kevo_compile_pool_free(sr->pool);
    kevo_gpu_stop(sr->gpu);
    kevo_wire_gpu_setup_release(&sr->setup);
    free(sr->eval_res);
    free(sr->sv.fail);
    for (int i = 0; i < sr->sv.nwaiting; i++)
        free((void *)sr->sv.waiting[i].cubin);
    for (int i = 0; sr->running && i < m->slots; i++)
        mr_work_free(sr->running[i]);
    free(sr->running);
    for (int i = 0; i < sr->npending; i++)
        mr_work_free(sr->pending[i]);
    free(sr->pending);
    for (int i = 0; !st && i < sr->nout; i++)
        while (!st && !mr_test(m, &sr->out[i].req)) {
            mr_sleep_ms(1);
            if (kv_now() - m->last0 > KEVO_MPI_ORPHANED_AFTER)
                st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: rank 0 takes no more results", m->rank);
        }
    if (!st && !sr->fin_seen) {
        mr_send bye = {.req = MPI_REQUEST_NULL};
        kv_buf_init(&bye.buf);
        st = kevo_wire_control_pack(&bye.buf, KEVO_WIRE_BYE, false, err);
        if (!st)
            st = mr_send_wait(m, &bye, 0, KEVO_WIRE_BYE, KEVO_MPI_ORPHANED_AFTER, err);
        if (!st)
            kv_buf_release(&bye.buf);
        m->last0 = kv_now();
        while (!st && !sr->fin_seen) {
            bool got = false;
            int from = 0, tag = 0;
            unsigned char *data = NULL;
            size_t len = 0;
            st = mr_recv(m, 0, &got, &from, &tag, &data, &len, err);
            if (!st && got) {
                m->last0 = kv_now();
                if (tag == KEVO_WIRE_FIN) {
                    st = mr_serve_fin(m, data, len, err);
                    sr->fin_seen = true;
                }
            } else if (!st) {
                mr_sleep_ms(5);
                if (kv_now() - m->last0 > KEVO_MPI_ORPHANED_AFTER)
                    st = kevo_err_set(err, KEVO_ERR_WORKER, "rank %d: no word from rank 0 after bye", m->rank);
            }
            free(data);
        }
    }
    if (!mr_test(m, &sr->alive.req))
        mr_orphan(m, &sr->alive);
    else
        kv_buf_release(&sr->alive.buf);
    for (int i = 0; i < sr->nout; i++)
        mr_orphan(m, &sr->out[i]);
    free(sr->out);
    if (st)
        m->failed = true;
    return st;
}

kevo_status kevo_mpi_serve(kevo_mpi *m, kevo_err *err)
{
    if (!m || m->rank == 0)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "rank 0 asked to serve compiles");
    mr_server sr;
    memset(&sr, 0, sizeof sr);
    kevo_status st = kevo_compile_pool_new(m->slots, &sr.pool, err);
    kevo_compile_pool_set_ctx(st ? NULL : sr.pool, m->ctx);
    sr.running = calloc((size_t)m->slots, sizeof *sr.running);
    if (!st && !sr.running)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    sr.alive.req = MPI_REQUEST_NULL;
    kv_buf_init(&sr.alive.buf);
    if (!st)
        st = kevo_wire_control_pack(&sr.alive.buf, KEVO_WIRE_ALIVE, false, err);
    sr.eval_res = malloc(sizeof *sr.eval_res);
    sr.sv.fail = malloc(sizeof *sr.sv.fail);
    if (!st && (!sr.eval_res || !sr.sv.fail))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    m->last0 = kv_now();
    while (!st && !sr.stopping) {
        if (kv_cancelled(m->cancel)) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "rank %d interrupted by signal %d", m->rank,
                              kv_cancelled(m->cancel));
            break;
        }
        st = mr_serve_listen(m, &sr, err);
        if (st || sr.stopping)
            break;
        st = mr_serve_dispatch(m, &sr, err);
        if (st)
            break;
        st = mr_serve_step(m, &sr, err);
    }
    return mr_serve_end(m, &sr, st, err);
}

#endif /* KEVO_HAVE_MPI */
