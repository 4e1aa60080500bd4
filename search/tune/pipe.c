/* pipe.c — the rounds in flight.  With --ahead D the loop proposes round
 * j + D once round j is applied, so a one-shape GPU run (stream) compiles
 * the later rounds while the GPUs evaluate the earlier ones: each compile
 * starts as a slot frees (--jobs; under --mpi the ranks' slots too),
 * compiled candidates go in proposal order each to the idle GPU that has
 * waited longest (so every GPU takes work even when compiles, not
 * evaluations, hold the run back), and results are applied in proposal
 * order, so the search sees what one GPU would give it.  A compile-only or
 * distribution run (sync) compiles every round in flight, then applies the
 * oldest one's candidates in order.
 *
 * The GPUs are one set (evaluator/devset.h): this process's workers and,
 * under --mpi, the other ranks' GPUs, each driven through its backend's
 * row; the pipe asks the set, never which kind a GPU is.  A GPU that may
 * hold more than one evaluation (depth > 1: a remote GPU,
 * KEVO_MPI_GPU_QUEUE) takes a second, queued behind the one it runs, when
 * no GPU is idle; a GPU that loses what it held (its rank lost) gives it
 * back to be placed again. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

static tn_work *tn_slot(const tn_pipe *P, int64_t pos)
{
    return &P->w[pos % P->cap];
}

kevo_status tn_pipe_open(tn_env *e, tn_pipe *P, int cap, bool stream, kevo_err *err)
{
    memset(P, 0, sizeof *P);
    P->cap = cap;
    P->stream = stream;
    for (int k = 0; k < TN_MAX_DEV; k++)
        P->on_gpu[k] = P->queued[k] = -1;
    size_t c = (size_t)cap;
    P->w = calloc(c, sizeof *P->w);
    P->state = calloc(c, sizeof *P->state);
    P->dev = calloc(c, sizeof *P->dev);
    P->t0 = calloc(c, sizeof *P->t0);
    P->eval_s = calloc(c, sizeof *P->eval_s);
    P->res = calloc(c, sizeof *P->res);
    P->r = malloc(sizeof *P->r);
    P->rend = calloc(c, sizeof *P->rend);
    if (!P->w || !P->state || !P->dev || !P->t0 || !P->eval_s || !P->res || !P->r || !P->rend)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!stream)
        return KEVO_OK;
    kevo_status dst = tn_devset(e, &P->devs, err);
    if (dst)
        return dst;
    if (kevo_mpi_size(e->mpi) > 1) {
        kevo_status st = kevo_mpi_compile_start(e->mpi, e->jobs, e->compile_timeout, err);
        P->mpi = !st;
        return st;
    }
    kevo_status st = kevo_compile_pool_new(e->jobs, &P->pool, err);
    kevo_compile_pool_set_ctx(st ? NULL : P->pool, e->ctx);
    return st;
}

void tn_pipe_close(tn_env *e, tn_pipe *P)
{
    kevo_compile_pool_free(P->pool);
    if (P->mpi)
        kevo_mpi_compile_stop(e->mpi);
    for (int64_t p = P->head; P->w && p < P->tail; p++)
        tn_work_release(tn_slot(P, p));
    free(P->w);
    free(P->state);
    free(P->dev);
    free(P->t0);
    free(P->eval_s);
    free(P->res);
    free(P->r);
    free(P->rend);
    memset(P, 0, sizeof *P);
}

kevo_status tn_pipe_round_add(tn_env *e, tn_pipe *P, tn_work *w, int n, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n; i++) {
        int64_t p = P->tail++;
        *tn_slot(P, p) = w[i];
        memset(&w[i], 0, sizeof w[i]);
        tn_work *x = tn_slot(P, p);
        int k = (int)(p % P->cap);
        P->dev[k] = -1;
        P->eval_s[k] = 0;
        if (!P->stream)
            continue;
        tn_cache_get(e, x);
        P->state[k] = x->job.cached ? TN_READY : TN_COMPILE;
        if (P->mpi && !st && P->state[k] == TN_COMPILE) {
            st = kevo_mpi_compile_add(e->mpi, &x->job, err);
            P->compiling++;
        }
    }
    if (n > 0)
        P->rend[P->nround++] = P->tail;
    return st;
}

/* The oldest round is applied: forget it. */
static void tn_pipe_round_pop(tn_pipe *P)
{
    memmove(P->rend, P->rend + 1, (size_t)(P->nround - 1) * sizeof *P->rend);
    P->nround--;
}

/* The idle device that has waited longest (the lowest index of those never
 * used), one that takes no more work (another rank's, once lost) excepted;
 * when none is idle, the one that has waited longest of those that may
 * hold another behind the one they run; -1 when none. */
static int tn_pipe_idle(const tn_pipe *P)
{
    const kevo_devset *D = &P->devs;
    int best = -1;
    for (int k = 0; k < D->n; k++) {
        if (P->on_gpu[k] >= 0 || !kevo_devset_alive(D, k))
            continue;
        if (best < 0 || P->last_use[k] < P->last_use[best])
            best = k;
    }
    if (best >= 0)
        return best;
    /* none idle: a GPU of depth > 1 (a remote one) takes a second one to wait there */
    for (int k = 0; k < D->n; k++) {
        if (P->queued[k] >= 0 || !kevo_devset_alive(D, k) || kevo_devset_queued(D, k) >= kevo_devset_depth(D, k))
            continue;
        if (best < 0 || P->last_use[k] < P->last_use[best])
            best = k;
    }
    return best;
}

/* The progress bar while a batch is evaluated on several GPUs: what each
 * GPU does. */
static void tn_bar_devices(tn_run *R, const int *on_gpu, int compiling)
{
    const tn_env *e = &R->e;
    if (!R->prog.fn)
        return;
    char what[160];
    int len = snprintf(what, sizeof what, "compiling %d |", compiling);
    int busy = 0;
    for (int k = 0; k < e->ndev + e->nrem; k++)
        busy += on_gpu[k] >= 0;
    if (e->ndev + e->nrem > 4) /* many: a count */
        snprintf(what + len, sizeof what - (size_t)len, " %d of %d GPUs busy", busy, e->ndev + e->nrem);
    for (int k = 0; k < e->ndev + e->nrem && e->ndev + e->nrem <= 4 && len < (int)sizeof what - 40; k++)
        len += snprintf(what + len, sizeof what - (size_t)len, " %s %s", e->dlabel[k],
                        on_gpu[k] >= 0 ? "busy" : "idle");
    tn_bar(&R->prog, R->done, R->best, what);
}

/* Put compiled candidates on idle GPUs in proposal order, each on the GPU
 * idle longest (a failed compile needs none: done at once).  Errors: the
 * GPUs', MPI's. */
static kevo_status tn_pipe_place(tn_run *R, kevo_err *err)
{
    tn_env *e = &R->e;
    tn_pipe *P = &R->pipe;
    kevo_status st = KEVO_OK;
    for (int64_t p = P->head; p < P->tail && !st; p++) {
        int i = (int)(p % P->cap);
        tn_work *w = &P->w[i];
        if (P->state[i] != TN_READY)
            continue;
        if (w->job.fail != KEVO_FAIL_NONE) {
            P->state[i] = TN_DONE;
            continue;
        }
        kevo_gpu_request rq = tn_request(w, w->cand_id, R->ro.def.maps, true,
                                         R->ro.def.seed ^ (uint64_t)w->cand_id * 0x9e3779b97f4a7c15ull);
        bool placed = false;
        while (!placed && !st) {
            int k = tn_pipe_idle(P);
            if (k < 0)
                return KEVO_OK;
            /* not taken: the GPU takes no more work now (a lost rank's), and tn_pipe_idle skips it */
            bool taken = false;
            st = kevo_devset_submit(&P->devs, k, &rq, &taken, err);
            placed = !st && taken;
            if (placed) {
                bool behind = P->on_gpu[k] >= 0;
                tn_trace(e, behind ? "queued" : "submit", w->cand_id, k);
                P->state[i] = TN_ON_GPU;
                P->dev[i] = k;
                P->t0[i] = kv_now();
                if (behind)
                    P->queued[k] = p;
                else
                    P->on_gpu[k] = p;
                P->last_use[k] = ++P->placements;
            }
        }
    }
    return st;
}

/* Device k ended candidate cand (its result in *res), or lost it with its
 * rank (res NULL: another device takes it).  The one waiting behind it
 * there starts now. */
static void tn_pipe_end(void *ctx, int k, int64_t cand, bool lost, const kevo_gpu_result *res)
{
    const tn_env *e = &((tn_run *)ctx)->e;
    tn_pipe *P = &((tn_run *)ctx)->pipe;
    bool head = P->on_gpu[k] >= 0 && tn_slot(P, P->on_gpu[k])->cand_id == cand;
    int64_t p = head ? P->on_gpu[k] : P->queued[k];
    if (p < 0 || tn_slot(P, p)->cand_id != cand)
        return; /* not one this loop waits for */
    int i = (int)(p % P->cap);
    double now = kv_now();
    tn_trace(e, lost ? "lost" : "done", cand, k);
    if (lost) {
        P->state[i] = TN_READY;
    } else {
        P->res[i] = *res;
        P->eval_s[i] = now - P->t0[i];
        P->state[i] = TN_DONE;
    }
    if (head) {
        P->on_gpu[k] = P->queued[k];
        P->queued[k] = -1;
        if (P->on_gpu[k] >= 0 && !lost) { /* its turn there: its time counts from now */
            int j = (int)(P->on_gpu[k] % P->cap);
            P->t0[j] = now;
            tn_trace(e, "submit", P->w[j].cand_id, k);
        }
    } else {
        P->queued[k] = -1;
    }
}

/* A compile finished: its binary into the cache, the candidate ready. */
static kevo_status tn_pipe_compiled(tn_env *e, tn_pipe *P, const kevo_compile_job *job, kevo_err *err)
{
    for (int64_t p = P->head; p < P->tail; p++)
        if (&tn_slot(P, p)->job == job) {
            tn_trace(e, "compiled", tn_slot(P, p)->cand_id, -1);
            P->state[p % P->cap] = TN_READY;
            P->compiling--;
            return tn_cache_store(e, tn_slot(P, p), err);
        }
    return KEVO_OK;
}

/* Start the compiles whose slot is free (the local pool), in proposal order. */
static kevo_status tn_stream_compiles(tn_env *e, tn_pipe *P, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (; P->pool && P->next_compile < P->tail && !st && kevo_compile_pool_idle(P->pool) > 0; P->next_compile++)
        if (P->state[P->next_compile % P->cap] == TN_COMPILE) {
            st = kevo_compile_pool_start(P->pool, &tn_slot(P, P->next_compile)->job, e->compile_timeout, err);
            tn_trace(e, "compile", tn_slot(P, P->next_compile)->cand_id, -1);
            P->compiling++;
        }
    return st;
}

/* Wait (up to what the state allows: more, a result ready to apply, only
 * looks) for the GPUs and a compile, taking what came.  Errors: the GPUs',
 * MPI's, the pool's, the DB's. */
static kevo_status tn_stream_wait(tn_run *R, bool more, kevo_err *err)
{
    tn_env *e = &R->e;
    tn_pipe *P = &R->pipe;
    const int total = P->devs.n;
    bool gpus_busy = false;
    bool busy[TN_MAX_DEV];
    int busy_on[TN_MAX_DEV];
    for (int k = 0; k < total; k++) {
        busy[k] = P->on_gpu[k] >= 0;
        busy_on[k] = busy[k] ? 0 : -1;
        gpus_busy = gpus_busy || busy[k];
    }
    tn_bar_devices(R, busy_on, P->compiling);
    bool compiles_busy = P->pool ? kevo_compile_pool_busy(P->pool) > 0 : P->compiling > 0;
    kevo_status st = kevo_devset_wait(&P->devs, busy, more, compiles_busy, P->r, tn_pipe_end, R, err);
    if (!st && compiles_busy && P->pool) {
        kevo_compile_job *done = NULL;
        st = kevo_compile_pool_wait(P->pool, more ? 0 : gpus_busy ? 0.002 : 1.0, &done, err);
        if (!st && done)
            st = tn_pipe_compiled(e, P, done, err);
    } else if (!st && compiles_busy) {
        kevo_compile_job *done = NULL;
        int left = 0;
        st = kevo_mpi_compile_next(e->mpi, more ? 0 : gpus_busy ? 0.002 : 1.0, &done, &left, err);
        if (!st && done)
            st = tn_pipe_compiled(e, P, done, err);
    }
    return st;
}

/* Finish the oldest round of a one-shape GPU run (stream): compile and
 * evaluate until every candidate of it is applied, the later rounds
 * compiling and evaluating meanwhile.  Errors: the DB's,
 * KEVO_ERR_INTERRUPTED (the rest stays pending, for --resume),
 * KEVO_ERR_WORKER. */
static kevo_status tn_pipe_stream(tn_run *R, kevo_err *err)
{
    tn_env *e = &R->e;
    tn_pipe *P = &R->pipe;
    const int64_t end = P->rend[0];
    kevo_status st = KEVO_OK;
    tn_trace(e, "round", end - P->head, -1);
    while (!st && P->head < end) {
        if (kevo_stop_check(&R->stop, KEVO_STOP_AT_STEP, NULL) == KEVO_STOP_END) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d", kv_cancelled(R->stop.cancel));
            break;
        }
        st = tn_stream_compiles(e, P, err);
        if (!st)
            st = tn_pipe_place(R, err);
        /* one result applied per turn: a GPU that finishes meanwhile gets its next candidate first */
        int h = (int)(P->head % P->cap);
        if (!st && P->state[h] == TN_DONE) {
            tn_work *w = &P->w[h];
            bool evaluated = w->job.fail == KEVO_FAIL_NONE;
            tn_trace(e, "apply", w->cand_id, P->dev[h]);
            st = tn_apply_one(R, w, evaluated ? &P->res[h] : NULL, P->dev[h], P->eval_s[h], err);
            tn_trace(e, "applied", w->cand_id, P->dev[h]);
            tn_work_release(w);
            P->head++;
        }
        if (st || P->head == end)
            break;
        bool more = P->state[P->head % P->cap] == TN_DONE; /* then the waits below only look */
        st = tn_stream_wait(R, more, err);
    }
    if (!st)
        tn_pipe_round_pop(P);
    return st;
}

/* Finish the oldest round of a compile-only or distribution run: compile
 * every round in flight (the cache first), then store and, with GPUs,
 * verify and time the oldest one's candidates in order.  Errors: as
 * tn_pipe_stream. */
static kevo_status tn_pipe_sync(tn_run *R, kevo_err *err)
{
    tn_env *e = &R->e;
    tn_pipe *P = &R->pipe;
    kevo_status st = KEVO_OK;
    if (P->next_compile < P->tail) {
        char what[64];
        snprintf(what, sizeof what, "compiling %lld", (long long)(P->tail - P->next_compile));
        tn_bar(&R->prog, R->done, R->best, what);
    }
    while (!st && P->next_compile < P->tail) { /* in at most two runs of slots, where the ring wraps */
        int64_t from = P->next_compile, to = P->tail;
        if (to / P->cap != from / P->cap)
            to = (from / P->cap + 1) * P->cap;
        st = tn_compile(e, tn_slot(P, from), (int)(to - from), err);
        if (!st)
            P->next_compile = to;
    }
    const int64_t end = P->rend[0];
    while (!st && P->head < end) {
        if (kevo_stop_check(&R->stop, KEVO_STOP_AT_STEP, NULL) == KEVO_STOP_END) /* the rest stays pending */
            return KEVO_ERR_INTERRUPTED;
        tn_bar(&R->prog, R->done, R->best, R->ro.def.compile_only ? "storing" : "verifying and timing");
        st = tn_apply_one(R, tn_slot(P, P->head), NULL, 0, 0, err);
        if (!st)
            tn_work_release(tn_slot(P, P->head++));
    }
    if (!st)
        tn_pipe_round_pop(P);
    return st;
}

kevo_status tn_pipe_finish_round(tn_run *R, kevo_err *err)
{
    return R->pipe.stream ? tn_pipe_stream(R, err) : tn_pipe_sync(R, err);
}
