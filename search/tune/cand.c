/* cand.c — one candidate through the pipeline: prepared (rendered,
 * planned, keyed), compiled through the DB's cache, registered with its
 * edges, verified and timed (its figures against the run's peers), and
 * applied (its row stored, the search told, a line printed). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"
#include "util/stats.h"

/* Fill a compile job from a cache row. */
static void tn_job_from_row(kevo_compile_job *j, kevo_binary_row *b)
{
    j->cached = true;
    j->cubin = b->cubin;
    j->cubin_size = b->cubin_size;
    j->log = b->log;
    b->cubin = NULL;
    b->log = NULL;
    kevo_fail f = KEVO_FAIL_NONE;
    if (b->fail[0])
        kevo_fail_parse(b->fail, &f);
    j->fail = f;
    j->regs = b->regs;
    j->spill_bytes = b->spill_bytes;
    j->smem_static = b->smem_static;
    j->stack_bytes = b->stack_bytes;
    j->seconds = b->compile_s;
}

/* Store a fresh compile result (and its source) in the cache.  Timeouts are
 * not cached: they depend on the machine's load. */
static kevo_status tn_cache_put(tn_env *e, const kevo_compile_job *j, const char *source_hash, kevo_err *err)
{
    if (j->cached || j->fail == KEVO_FAIL_COMPILE_TIMEOUT)
        return KEVO_OK;
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    snprintf(b.key, sizeof b.key, "%s", j->key);
    snprintf(b.arch, sizeof b.arch, "%s", j->arch);
    kevo_nvrtc_version(b.nvrtc_version, sizeof b.nvrtc_version);
    snprintf(b.source_hash, sizeof b.source_hash, "%s", source_hash);
    kv_buf opts;
    kv_buf_init(&opts);
    for (int i = 0; i < j->nopts; i++)
        kv_buf_printf(&opts, "%s%s", i ? "\n" : "", j->opts[i]);
    b.options = opts.data;
    b.cubin = j->cubin;
    b.cubin_size = j->cubin_size;
    b.log = j->log;
    snprintf(b.fail, sizeof b.fail, "%s", j->fail == KEVO_FAIL_NONE ? "" : kevo_fail_name(j->fail));
    b.regs = j->regs;
    b.spill_bytes = j->spill_bytes;
    b.smem_static = j->smem_static;
    b.stack_bytes = j->stack_bytes;
    b.compile_s = j->seconds;
    kevo_status st = kevo_db_binary_put(e->db, &b, err);
    kv_buf_release(&opts);
    return st;
}

void tn_cache_get(tn_env *e, tn_work *w)
{
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    if (e->db && !w->job.cached && kevo_db_binary_get(e->db, w->job.key, &b, NULL) == KEVO_OK)
        tn_job_from_row(&w->job, &b);
    kevo_binary_row_release(&b);
}

kevo_status tn_cache_store(tn_env *e, const tn_work *w, kevo_err *err)
{
    if (!e->db || kevo_db_readonly(e->db))
        return KEVO_OK;
    kevo_status st = kevo_db_source_put(e->db, w->source_hash, w->source.data, err);
    return st ? st : tn_cache_put(e, &w->job, w->source_hash, err);
}

kevo_status tn_compile(tn_env *e, tn_work *w, int n, kevo_err *err)
{
    kevo_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        tn_cache_get(e, &w[i]);
        jobs[i] = w[i].job;
    }
    kevo_status st = e->mpi ? kevo_mpi_compile(e->mpi, jobs, n, e->jobs, e->compile_timeout, err)
                            : kevo_compile_run_ctx(jobs, n, e->jobs, e->compile_timeout, e->ctx, err);
    for (int i = 0; i < n; i++)
        w[i].job = jobs[i];
    free(jobs);
    for (int i = 0; i < n && !st; i++)
        st = tn_cache_store(e, &w[i], err);
    return st;
}

kevo_status tn_prepare(tn_env *e, const kevo_space *sp, int family, const kevo_config *cfg, tn_work *w,
                       kevo_err *err)
{
    memset(w, 0, sizeof *w);
    w->family = family;
    w->space = sp;
    w->cfg = *cfg;
    kv_buf_init(&w->source);
    kevo_status st = kevo_space_render(w->space, cfg, e->dt, e->abi, &w->source, err);
    if (st)
        return st;
    const void *bufs[] = {w->source.data};
    size_t lens[] = {w->source.len};
    kv_sha256_hex(bufs, lens, 1, w->source_hash);
    kevo_err perr;
    kevo_err_clear(&perr);
    st = kevo_space_plan(w->space, &e->shape, &e->lim, e->dt, cfg, &w->plan, &perr);
    if (st == KEVO_ERR_NOMEM)
        return kevo_err_set(err, st, "%s", perr.msg);
    if (st) {
        memset(&w->plan, 0, sizeof w->plan);
        w->job.cached = true;
        w->job.fail = KEVO_FAIL_PLAN_ERROR;
        w->job.regs = w->job.spill_bytes = w->job.smem_static = w->job.stack_bytes = -1;
        w->job.seconds = NAN;
        kv_buf m;
        kv_buf_init(&m);
        kv_buf_printf(&m, "launch plan: %s", perr.msg);
        w->job.log = kv_buf_take(&m);
        return KEVO_OK;
    }
    if ((st = kevo_compile_job_init(&w->job, w->space->source_name, w->source.data, e->arch, err)))
        return st;
    kevo_compile_key(&w->job);
    return KEVO_OK;
}

void tn_work_release(tn_work *w)
{
    kv_buf_release(&w->source);
    kevo_compile_job_release(&w->job);
}

void tn_first_line(const char *s, char *out, size_t n)
{
    if (!s) {
        snprintf(out, n, "(no message)");
        return;
    }
    /* skip ptxas info lines; NVRTC errors carry "error" */
    const char *e = strstr(s, "error");
    const char *start = s;
    if (e) {
        while (e > s && e[-1] != '\n')
            e--;
        start = e;
    }
    size_t len = strcspn(start, "\n");
    if (len >= n)
        len = n - 1;
    memcpy(out, start, len);
    out[len] = '\0';
}

double tn_floor_ms(double flops, double bytes, double peak_tflops, double copy_tbps)
{
    double a = peak_tflops > 0 ? flops / (peak_tflops * 1e12) * 1e3 : NAN;
    double b = copy_tbps > 0 ? bytes / (copy_tbps * 1e12) * 1e3 : NAN;
    if (isnan(a))
        return b;
    return isnan(b) || a > b ? a : b;
}

tn_figs tn_figures(const kevo_gpu_result *res, uint64_t seed, const kevo_op *op, const kevo_peer_set *ps,
                   double flops, double bytes, double peak_tflops, double copy_tbps)
{
    tn_figs f;
    double best_ms = NAN;
    kevo_peer_best(op, ps, &best_ms);
    f.median_ms = res->median_ms;
    kv_median_ci(res->rep_ms, res->reps, seed, KV_BOOTSTRAP, &f.ci_lo_ms, &f.ci_hi_ms);
    f.speedup = kevo_peer_ok_ms(ps, kevo_op_peer_baseline(op)) / res->median_ms;
    f.vs_peer = best_ms / res->median_ms;
    f.roofline = tn_floor_ms(flops, bytes, peak_tflops, copy_tbps) / res->median_ms;
    f.tflops = flops / (res->median_ms * 1e-3) / 1e12;
    return f;
}

kevo_gpu_request tn_request(const tn_work *w, int64_t id, unsigned maps, bool time, uint64_t seed)
{
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    rq.candidate_id = id;
    rq.cubin = w->job.cubin;
    rq.cubin_size = w->job.cubin_size;
    rq.plan = w->plan;
    rq.maps = maps;
    rq.time = time;
    rq.seed = seed;
    return rq;
}

/* The request that verifies and times a compiled candidate at shape i of
 * the run (0: its shape; a distribution's others need their own plan).
 * Errors: kevo_space_plan's. */
static kevo_status tn_shape_request(const tn_env *e, const tn_work *w, int i, uint64_t seed, unsigned maps,
                                    kevo_gpu_request *rq, kevo_err *err)
{
    *rq = tn_request(w, w->cand_id, maps, true,
                     seed ^ (uint64_t)w->cand_id * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull);
    return i > 0 ? kevo_space_plan(w->space, &e->dist->shape[i], &e->lim, e->dt, &w->cfg, &rq->plan, err)
                 : KEVO_OK;
}

/* Verify and time a compiled candidate at the run's shapes (one, or a
 * distribution's) in order, up to and including the first that fails:
 * res[i] for i < *upto.  A distribution's shape i runs on GPU i mod ndev
 * (tn_start_shape_gpus): a GPU's shapes go in turn, the GPUs at once, and
 * once a shape fails no later one is started, so any number of GPUs gives
 * the results one GPU gives.  Errors: tn_shape_request's, kevo_gpu_submit's
 * and kevo_gpu_wait's. */
static kevo_status tn_eval_shapes(tn_env *e, const tn_work *w, uint64_t seed, unsigned maps, kevo_gpu_result *res,
                                  int *upto, kevo_err *err)
{
    const int n = e->dist ? e->dist->n : 1, nd = e->dist ? e->ndev : 1;
    int stop = n; /* shapes from here on are not evaluated: one before failed */
    kevo_status st = KEVO_OK;
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES]; /* the worker GPU k evaluates on, NULL when idle */
    int next[KEVO_GPU_MAX_DEVICES], on[KEVO_GPU_MAX_DEVICES], inflight = 0;
    for (int k = 0; k < nd; k++) {
        g[k] = NULL;
        next[k] = k;
        on[k] = -1;
    }
    kevo_gpu_result *r = malloc(sizeof *r);
    if (!r)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (;;) {
        for (int k = 0; k < nd && !st; k++) {
            if (on[k] >= 0 || next[k] >= stop)
                continue;
            int i = next[k];
            kevo_gpu_request rq;
            if (!(st = tn_shape_request(e, w, i, seed, maps, &rq, err)) &&
                !(st = kevo_gpu_submit(tn_shape_gpu(e, i), &rq, err))) {
                g[k] = tn_shape_gpu(e, i);
                on[k] = i;
                next[k] += nd;
                inflight++;
            }
        }
        if (st || inflight == 0)
            break;
        int which = -1;
        st = kevo_gpu_wait(g, nd, 1.0, &which, r, err);
        if (!st && which >= 0) {
            int i = on[which];
            res[i] = *r;
            g[which] = NULL;
            on[which] = -1;
            inflight--;
            if (res[i].fail != KEVO_FAIL_NONE && i + 1 < stop)
                stop = i + 1;
        }
    }
    free(r);
    *upto = stop;
    return st;
}

/* A candidate's compile figures into its row, and its failure when the
 * compile (or the plan) failed. */
static void tn_row_compiled(const tn_work *w, kevo_cand_row *row)
{
    row->regs = w->job.regs;
    row->spill_bytes = w->job.spill_bytes;
    row->smem_static = w->job.smem_static;
    int smem_dyn = 0;
    for (int i = 0; i < w->plan.nlaunches; i++)
        if ((int)w->plan.launches[i].smem > smem_dyn)
            smem_dyn = (int)w->plan.launches[i].smem;
    row->smem_dynamic = smem_dyn;
    row->compile_s = w->job.seconds;
    snprintf(row->binary_key, sizeof row->binary_key, "%s", w->job.key);
}

/* A failed check of a timed candidate at shape i into its row. */
static void tn_row_failed(const tn_env *e, const kevo_gpu_result *res, int i, kevo_cand_row *row)
{
    snprintf(row->status, sizeof row->status, "failed");
    snprintf(row->fail, sizeof row->fail, "%s", kevo_fail_name(res->fail));
    if (e->dist) {
        kv_buf m;
        kv_buf_init(&m);
        kv_buf_printf(&m, "at %s: %s", e->dist->text[i], res->msg);
        row->fail_msg = kv_buf_take(&m);
    } else {
        row->fail_msg = kv_strdup(res->msg);
    }
    row->speedup = 0.0;
    row->fitness = 0.0;
}

/* A timed result at shape i: its figures into the row (shape 0's) and vs[i],
 * and what the DB keeps of it (a distribution's shape result, the times,
 * the passes of an unsteady one).  Errors: the DB's. */
static kevo_status tn_row_timed(tn_env *e, const kevo_run_row *run, const tn_work *w, const kevo_gpu_result *res,
                                int i, int dev, double *vs, kevo_cand_row *row, kevo_err *err)
{
    const kevo_run_shape *pr = e->dist ? &e->peers[i] : NULL;
    double peak, copy;
    const kevo_peer_set *ps = tn_dev_peers(e, run, dev, &peak, &copy);
    tn_figs f = tn_figures(res, (uint64_t)w->cand_id, e->op, pr ? &e->speers[i] : ps, pr ? pr->flops : run->flops,
                           pr ? pr->bytes : run->bytes, peak, copy);
    vs[i] = f.vs_peer;
    if (i == 0) {
        snprintf(row->status, sizeof row->status, "ok");
        row->median_ms = f.median_ms;
        row->min_ms = res->min_ms;
        row->ci_lo_ms = f.ci_lo_ms;
        row->ci_hi_ms = f.ci_hi_ms;
        row->speedup = f.speedup;
        row->vs_peer = f.vs_peer;
        row->roofline = f.roofline;
        row->tflops = f.tflops;
    }
    kevo_status st = KEVO_OK;
    if (e->dist) {
        kevo_shape_result sr = {.shape_idx = i, .median_ms = f.median_ms, .ci_lo_ms = f.ci_lo_ms,
                                .ci_hi_ms = f.ci_hi_ms, .speedup = f.speedup, .vs_peer = f.vs_peer,
                                .roofline = f.roofline, .rel_err = res->rel_err};
        st = kevo_db_shape_result_put(e->db, w->cand_id, &sr, err);
    }
    if (!st)
        st = kevo_db_timings_put(e->db, w->cand_id, i, "tune", res->rep_ms, res->reps, err);
    if (!st && res->passes > 1) { /* a pass was not steady: timed again, the lowest median kept */
        char name[32];
        snprintf(name, sizeof name, i ? "timing_passes_%d" : "timing_passes", i);
        st = kevo_db_measure_put(e->db, w->cand_id, name, res->passes, err);
    }
    return st;
}

/* Verify and time a compiled candidate at the run's shapes (pre: its
 * result at the run's shape, evaluated already on GPU dev in eval_s
 * seconds; NULL: evaluated here, on the first GPU), its figures into row.
 * Errors: tn_eval_shapes's, the DB's, KEVO_ERR_NOMEM. */
static kevo_status tn_finish_timed(tn_env *e, const kevo_run_row *run, const tn_work *w, uint64_t seed,
                                   unsigned maps, const kevo_gpu_result *pre, int dev, double eval_s,
                                   kevo_cand_row *row, kevo_err *err)
{
    int nsh = e->dist ? e->dist->n : 1, upto = 1;
    double vs[KEVO_DIST_MAX];
    row->fitness = 0.0;
    row->device = e->dev_base + (pre ? dev : 0);
    kevo_gpu_result *all = pre ? NULL : calloc((size_t)nsh, sizeof *all);
    if (!pre && !all)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    double t0 = kv_now();
    kevo_status st = pre ? KEVO_OK : tn_eval_shapes(e, w, seed, maps, all, &upto, err);
    row->eval_s = pre ? eval_s : kv_now() - t0;
    for (int i = 0; i < upto && !st; i++) {
        const kevo_gpu_result *res = pre ? pre : &all[i];
        tn_say_phases(e, w->cand_id, res);
        row->checks += res->checks;
        if (res->checks && !(row->rel_err >= res->rel_err))
            row->rel_err = res->rel_err;
        if (res->checks && !(row->max_abs_err >= res->max_abs_err))
            row->max_abs_err = res->max_abs_err;
        if (res->fail != KEVO_FAIL_NONE) {
            tn_row_failed(e, res, i, row);
            break;
        }
        st = tn_row_timed(e, run, w, res, i, pre ? dev : 0, vs, row, err);
        /* one shape: the speedup (what --target and the landscapes read); a
         * distribution: the weighted geometric mean of vs_best_peer */
        if (i == nsh - 1)
            row->fitness = e->dist ? kevo_dist_geomean(e->dist, vs) : row->speedup;
    }
    free(all);
    return st;
}

/* Evaluate one prepared candidate and store its row (inside the caller's
 * transaction).  pre, dev, eval_s: as tn_finish_timed.  *fitness: what the
 * search sees (0 failed, NaN compile-only). */
static kevo_status tn_finish_one(tn_env *e, const kevo_run_row *run, tn_work *w, bool compile_only, uint64_t seed,
                                 unsigned maps, const kevo_gpu_result *pre, int dev, double eval_s,
                                 double *fitness, kevo_cand_row *row, kevo_err *err)
{
    tn_row_compiled(w, row);
    *fitness = 0.0;
    if (w->job.fail != KEVO_FAIL_NONE) {
        char line[300];
        tn_first_line(w->job.log, line, sizeof line);
        kevo_compile_log_scrub(&w->job, line, false); /* no toolkit path in what a prompt may quote */
        snprintf(row->status, sizeof row->status, "failed");
        snprintf(row->fail, sizeof row->fail, "%s", kevo_fail_name(w->job.fail));
        row->fail_msg = kv_strdup(line);
    } else if (compile_only) {
        snprintf(row->status, sizeof row->status, "compiled");
        *fitness = NAN;
    } else {
        kevo_status st = tn_finish_timed(e, run, w, seed, maps, pre, dev, eval_s, row, err);
        if (st)
            return st;
        *fitness = row->fitness;
    }
    if (w->job.fail != KEVO_FAIL_NONE)
        row->fitness = 0.0;
    return kevo_db_cand_update(e->db, row, err);
}

kevo_status tn_apply_one(tn_run *R, tn_work *w, const kevo_gpu_result *pre, int dev, double eval_s, kevo_err *err)
{
    tn_env *e = &R->e;
    const kevo_run_def *d = &R->ro.def;
    kevo_cand_row row;
    kevo_status st = kevo_db_cand_get(e->db, w->cand_id, &row, err);
    double fit = 0;
    if (!st) {
        st = kevo_db_begin(e->db, err);
        if (!st)
            st = tn_finish_one(e, &R->run, w, d->compile_only, d->seed, d->maps, pre, dev, eval_s, &fit, &row, err);
        if (!st)
            st = kevo_db_commit(e->db, err);
        else
            kevo_db_rollback(e->db);
    }
    if (st) {
        kevo_cand_row_release(&row);
        return st;
    }
    kevo_search_observe(&R->s, w->node, fit);
    R->done++;
    if (!isnan(fit) && fit > R->best) {
        R->best = fit;
        R->last_gain = R->done;
    }
    tn_print_result(&R->prog, &R->s, w, &row, R->done, R->stop.budget, R->best, d->compile_only,
                    e->ndev + e->nrem > 1 && pre ? e->dlabel[dev] : NULL);
    kevo_cand_row_release(&row);
    return KEVO_OK;
}

kevo_status tn_register(tn_env *e, kevo_search *s, int64_t run_id, int64_t seq0, int64_t round,
                        const kevo_proposal *props, int n, kevo_generation_row *gen, tn_work *works,
                        int *ready, kevo_err *err)
{
    *ready = 0;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n && !st; i++) {
        st = tn_prepare(e, kevo_search_space(s, props[i].family), props[i].family, &props[i].cfg, &works[i], err);
        if (!st)
            (*ready)++;
    }
    if (!st)
        st = kevo_db_begin(e->db, err);
    if (st)
        return st;
    for (int i = 0; i < n && !st; i++) {
        tn_work *w = &works[i];
        kevo_cand_row row;
        kevo_cand_row_init(&row);
        row.run_id = run_id;
        row.seq = seq0 + i + 1;
        row.round = (int)round;
        snprintf(row.family, sizeof row.family, "%s", w->space->family);
        kv_buf pj, plj;
        kv_buf_init(&pj);
        kv_buf_init(&plj);
        kevo_config_json(w->space, &w->cfg, &pj);
        kevo_plan_json(&w->plan, &plj);
        row.params = kv_buf_take(&pj);
        row.plan = kv_buf_take(&plj);
        snprintf(row.source_hash, sizeof row.source_hash, "%s", w->source_hash);
        snprintf(row.status, sizeof row.status, "pending");
        row.model_ms = kevo_search_predict(s, props[i].family, &props[i].cfg) * 1e3;
        st = kevo_db_cand_insert(e->db, &row, err);
        w->cand_id = row.id;
        kevo_cand_row_release(&row);
        if (!st && props[i].parent >= 0)
            st = kevo_db_edge_insert(e->db, run_id, s->nodes[props[i].parent].cand_id, w->cand_id, props[i].move, err);
        if (!st && props[i].parent2 >= 0)
            st = kevo_db_edge_insert(e->db, run_id, s->nodes[props[i].parent2].cand_id, w->cand_id, props[i].move,
                                     err);
        if (!st && gen) { /* a generator's candidate (n is 1): its call, in the same transaction */
            gen->candidate_id = w->cand_id;
            st = kevo_db_generation_put(e->db, gen, err);
        }
    }
    if (st) {
        kevo_db_rollback(e->db);
        return st;
    }
    if ((st = kevo_db_commit(e->db, err)))
        return st;
    for (int i = 0; i < n; i++) {
        works[i].node = kevo_search_add(s, &props[i]);
        if (works[i].node < 0)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        s->nodes[works[i].node].cand_id = works[i].cand_id;
    }
    return KEVO_OK;
}
