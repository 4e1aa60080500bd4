/* verify.c — `kevo verify`: a stored candidate checked (and timed) at
 * another shape, dtype or cand_to_user map; the same check serves the
 * tuning loop's peer measured after the search. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

void kevo_verify_opts_init(kevo_verify_opts *o)
{
    memset(o, 0, sizeof *o);
    o->db_path = "kevo.db";
    o->maps = TN_ALL_MAPS;
    o->warmup = 5;
    o->reps = 30;
    o->eval_timeout = 120;
    o->compile_timeout = 300;
    o->seed = 7;
}

/* Verify (and time when `time`) configuration cfg of space sp, a stored
 * candidate c's, at e's shape on e's worker: checked against the family's
 * constraints there, planned, compiled through e's compile cache (added to
 * unless e->db is read-only), then kevo_gpu_eval on the maps with seed.
 * w receives the prepared work (the caller releases it), res the result: a
 * failed check is res->fail, not an error.  What `kevo verify` does, and
 * `kevo tune` for a peer at the shape without the co-design.  Errors:
 * KEVO_ERR_UNSUPPORTED (not valid or no launch plan at the shape, naming
 * why), KEVO_ERR_NVRTC (does not compile), the worker's errors. */
kevo_status tn_check_config(tn_env *e, const kevo_space *sp, const kevo_config *cfg, const kevo_cand_row *c,
                            unsigned maps, bool time, uint64_t seed, tn_work *w, kevo_gpu_result *res,
                            kevo_err *err)
{
    memset(w, 0, sizeof *w);
    kv_buf_init(&w->source);
    char why[256];
    if (kevo_space_check(sp, &e->shape, &e->lim, e->dt, cfg, why, sizeof why) != 1)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s %s) is not valid at %s: %s",
                            (long long)c->id, c->family, c->params, e->shape_txt, why);
    kevo_status st = tn_prepare(e, sp, 0, cfg, w, err);
    if (!st && w->job.fail == KEVO_FAIL_PLAN_ERROR)
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld has no launch plan at %s: %s", (long long)c->id,
                          e->shape_txt, w->job.log ? w->job.log : "");
    if (!st)
        st = tn_compile(e, w, 1, err);
    if (!st && w->job.fail != KEVO_FAIL_NONE) {
        char line[300];
        tn_first_line(w->job.log, line, sizeof line);
        st = kevo_err_set(err, KEVO_ERR_NVRTC, "candidate %lld does not compile for %s %s: %s", (long long)c->id,
                          e->arch, kevo_dtype_name(e->dt), line);
    }
    if (st)
        return st;
    kevo_gpu_request rq = tn_request(w, c->id, maps, time, seed);
    return kevo_gpu_eval(e->gpu, &rq, res, err);
}

/* The candidate to verify: explicit id, else the best of run_id, else of the last run. */
static kevo_status tn_pick_candidate(kevo_db *db, const kevo_verify_opts *o, kevo_cand_row *c, kevo_err *err)
{
    if (o->candidate_id > 0)
        return kevo_db_cand_get(db, o->candidate_id, c, err);
    int64_t run = o->run_id;
    if (run <= 0) {
        int64_t *ids = NULL;
        int n = 0;
        kevo_status st = kevo_db_run_ids(db, &ids, &n, err);
        if (st)
            return st;
        run = n > 0 ? ids[n - 1] : 0;
        free(ids);
        if (run <= 0)
            return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "'%s' holds no run", o->db_path);
    }
    kevo_status st = kevo_db_cand_best(db, run, c, err);
    if (st == KEVO_ERR_NOT_FOUND)
        kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no verified candidate", (long long)run);
    return st;
}

/* The space and configuration of the candidate to verify in an env at the
 * asked shape, dtype and arch (its DB opened read-only: the compile cache
 * is read, never added to).  Errors: the env's, KEVO_ERR_UNSUPPORTED (no
 * source, another arch), the stored params'. */
static kevo_status tn_verify_space(const kevo_verify_opts *o, const kevo_run_row *run, const kevo_cand_row *c,
                                   tn_env *e, const kevo_space **sp, kevo_config *cfg, kevo_err *err)
{
    kevo_status st = tn_env_open(e, run->op, o->shape ? o->shape : run->shape, o->dtype ? o->dtype : run->dtype,
                                 o->arch ? o->arch : run->arch, o->data_dir, o->extra_templates, err);
    /* a template family, or a generator's stored one-point space */
    bool added = !st && !kevo_spaces_find(e->spaces, e->nspaces, c->family);
    if (!st && !added)
        st = tn_select_families(e, c->family, true, false, err);
    if (!st) /* read-only: the compile cache is read, never added to */
        st = kevo_db_open_ro(o->db_path, &e->db, err);
    *sp = NULL;
    if (!st)
        st = added ? tn_space_of(e, c, sp, err) : KEVO_OK;
    if (!st && !added)
        *sp = e->spaces[0];
    if (!st && !*sp)
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s) has no source: %s", (long long)c->id,
                          c->fail[0] ? c->fail : "never made", c->fail_msg ? c->fail_msg : "");
    if (!st && added && !kevo_space_has_arch(*sp, e->arch))
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s) does not target %s", (long long)c->id,
                          c->family, e->arch);
    char who[48]; /* the stored params are untrusted: checked against the family's domains */
    snprintf(who, sizeof who, "candidate %lld", (long long)c->id);
    if (!st)
        st = kevo_config_parse_stored(*sp, c->params, who, cfg, err);
    return st;
}

/* One LINE per check and, timed, the timing's lines (DB text: a terminal
 * gets these lines through the caller's cleaner, kevo_event.text). */
static void tn_verify_say(kevo_ctx *vctx, const kevo_verify_opts *o, tn_env *e, const kevo_cand_row *c,
                          const kevo_gpu_result *res, bool passed)
{
    kv_buf maps;
    kv_buf_init(&maps);
    for (int k = 0; k < 3; k++)
        if (o->maps & (1u << k))
            kv_buf_printf(&maps, "%s%s", maps.len ? "," : "", kevo_map_name((kevo_map_kind)k));
    double rel_bound, rtol;
    e->op->tolerance(e->dt, &rel_bound, &rtol);
    kevo_event_fn fn = kv_ctx_fn(vctx);
    void *ctx = kv_ctx_user(vctx);
    kv_emit(fn, ctx, KEVO_EVENT_LINE, c->id, "verify #%lld %s %s", (long long)c->id, c->family, c->params);
    char how[768];
    if (passed)
        snprintf(how, sizeof how, "ok, %d checks, rel_err %.2e (bound %.1e), max |d| %.3e", res->checks,
                 res->rel_err, rel_bound, res->max_abs_err);
    else
        snprintf(how, sizeof how, "FAILED %s: %s", kevo_fail_name(res->fail), res->msg);
    kv_emit(fn, ctx, KEVO_EVENT_LINE, c->id, "  at %s %s %s, maps %s: %s", e->shape_txt, kevo_dtype_name(e->dt),
            e->arch, maps.data ? maps.data : "", how);
    kv_buf_release(&maps);
    if (!passed || !o->time)
        return;
    tn_figs f = tn_figures(res, (uint64_t)c->id, e->op, &e->info.peers, e->op->flops(&e->shape),
                           e->op->bytes(&e->shape, e->dt), e->info.peak_tflops, e->info.copy_tbps);
    kv_emit(fn, ctx, KEVO_EVENT_LINE, c->id,
            "  device %s: %.4f ms [%.4f, %.4f], %.1f TFLOP/s (%.0f%% of the cuBLAS peak, %.0f TFLOP/s), "
            "%.0f%% of the roofline",
            e->info.name, f.median_ms, f.ci_lo_ms, f.ci_hi_ms, f.tflops,
            e->info.peak_tflops > 0 ? 100.0 * f.tflops / e->info.peak_tflops : 0.0, e->info.peak_tflops,
            100 * f.roofline);
    tn_progress vp = {.fn = fn, .ctx = ctx, .t0 = kv_now()};
    tn_say_peers(&vp, e->op, &e->info.peers, "  ");
    kv_emit(fn, ctx, KEVO_EVENT_LINE, c->id, "  speedup %.2fx over stage 0; vs_best_peer %.2fx", f.speedup,
            f.vs_peer);
    char verdict[320];
    kevo_peer_verdict(e->op, f.vs_peer, &e->info.peers, verdict, sizeof verdict);
    kv_emit(fn, ctx, KEVO_EVENT_LINE, c->id, "  %s", verdict);
}

kevo_status kevo_verify(kevo_ctx *ctx, const kevo_verify_opts *o, bool *passed)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    *passed = false;
    /* no GPU: fail before the DB is even opened */
    kevo_status st = kevo_gpu_probe(o->device, ctx ? kv_ctx_flag(ctx) : NULL, err);
    if (st)
        return st;
    kevo_db *db = NULL;
    if ((st = kevo_db_open_ro(o->db_path, &db, err)))
        return st;
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    kevo_run_row run;
    st = tn_pick_candidate(db, o, &c, err);
    if (!st)
        st = kevo_db_run_get(db, c.run_id, &run, err);
    kevo_db_close(db);
    if (st) {
        kevo_cand_row_release(&c);
        return st;
    }
    tn_env e;
    const kevo_space *sp = NULL;
    kevo_config cfg;
    st = tn_verify_space(o, &run, &c, &e, &sp, &cfg, err);
    tn_work ref, w;
    memset(&ref, 0, sizeof ref);
    memset(&w, 0, sizeof w);
    e.jobs = 2;
    e.compile_timeout = o->compile_timeout;
    e.cancel = kv_ctx_flag(ctx);
    e.ctx = ctx;
    if (!st)
        st = tn_ref_module(&e, &ref, err);
    e.ndev = 1;
    e.ord[0] = o->device;
    if (!st)
        st = tn_start_gpu(&e, &ref, o->warmup, o->reps, o->eval_timeout, o->seed, o->time, o->time, err);
    kevo_gpu_result res;
    if (!st)
        st = tn_check_config(&e, sp, &cfg, &c, o->maps, o->time, o->seed, &w, &res, err);
    if (!st) {
        *passed = res.fail == KEVO_FAIL_NONE;
        tn_verify_say(ctx, o, &e, &c, &res, *passed);
    }
    tn_work_release(&w);
    tn_work_release(&ref);
    tn_env_release(&e);
    kevo_cand_row_release(&c);
    return st;
}
