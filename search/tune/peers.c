/* peers.c — the same-run peers: what a worker measured kept as the run's
 * figures (a resumed run keeps its first), a distribution's per shape, and
 * the op's peer that needs the search's winner, measured after it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"
#include "util/stats.h"

kevo_status tn_store_peers(tn_env *e, const kevo_run_row *run, kevo_err *err)
{
    kevo_status st = tn_alloc_shapes(e, err);
    for (int i = 0; !st && i < e->dist->n; i++) {
        kevo_run_shape *p = &e->peers[i];
        p->idx = i;
        snprintf(p->shape, sizeof p->shape, "%s", e->dist->text[i]);
        p->weight = e->dist->weight[i];
        p->flops = e->op->flops(&e->dist->shape[i]);
        p->bytes = e->op->bytes(&e->dist->shape[i], e->dt);
        if (i == 0)
            e->speers[0] = e->run_peers;
    }
    if (!st)
        st = kevo_db_run_shapes_put(e->db, run->id, e->peers, e->dist->n, err);
    for (int i = 1; !st && i < e->dist->n; i++)
        st = kevo_db_peers_put(e->db, run->id, i, 0, e->op, &e->speers[i], err);
    return st;
}

/* The peer after the search, measured: the winner c's time at the shape
 * without the co-design (res, at shape) plus the broadcast's, as peer pi
 * of the run's peers, stored with every verified candidate's vs_peer
 * (kevo_db_peers_after), and said.  Errors: the DB's. */
static kevo_status tn_peer_record(tn_env *e, const kevo_run_row *run, int pi, const kevo_cand_row *c,
                                  const char *shape, const kevo_gpu_result *res, double gather_ms, tn_progress *prog,
                                  kevo_err *err)
{
    kevo_peer_fig *f = &e->run_peers.p[pi];
    f->state = KEVO_PEER_OK;
    f->cand_id = c->id;
    f->median_ms = res->median_ms + gather_ms;
    kv_median_ci(res->rep_ms, res->reps, (uint64_t)c->id, KV_BOOTSTRAP, &f->ci_lo_ms, &f->ci_hi_ms);
    f->ci_lo_ms += gather_ms;
    f->ci_hi_ms += gather_ms;
    f->rel_err = res->rel_err;
    snprintf(f->detail, sizeof f->detail, "#%lld at %.160s: kernel %.4f ms + gather %.4f ms", (long long)c->id, shape,
             res->median_ms, gather_ms);
    kevo_status st = kevo_db_peers_after(e->db, run->id, e->op, &e->run_peers, err);
    if (!st)
        tn_line(prog, "peer %s: #%lld %s %s at %s (K/V gathered) %.4f ms + gather %.4f ms = %.4f ms",
                e->op->peers[pi].name, (long long)c->id, c->family, c->params, shape, res->median_ms, gather_ms,
                f->median_ms);
    return st;
}

/* Measure the op peer that needs the search's winner (KEVO_PEER_AFTER,
 * ikbo_fa's baseline (b)): the configuration of the run's best
 * (run->best_id) planned at the op's shape without the co-design
 * (kevo_op.nocodesign_shape), compiled through the cache, verified on the
 * run's maps and timed on a worker of that shape that measures no peers
 * and no ceilings (the run's worker is stopped first: at Skv=16384 the
 * gathered K/V alone take 2 x 17 GB).  The timing inputs are the worker's
 * (the sorted map: identity at ratio 1).  The peer is that kernel's time
 * plus the broadcast's (the peer's bcast_with minus bcast_without, as the
 * run stored them); it joins the run's peers (its candidate and both times
 * in its detail) and every verified candidate's vs_peer is recomputed, in
 * one transaction.  What keeps it from being measured (no broadcast time,
 * a shape past the op's limits, a configuration not valid or failing
 * there, a worker that cannot start) is said in one line and leaves the
 * peer unmeasured, not the run failed.  Errors: the DB's, KEVO_ERR_NOMEM,
 * KEVO_ERR_INTERRUPTED. */
kevo_status tn_peer_nocodesign(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, const tn_work *ref,
                               tn_progress *prog, kevo_err *err)
{
    int pi = -1;
    for (int i = 0; i < e->op->npeers && pi < 0; i++)
        if (e->op->peers[i].flags & KEVO_PEER_AFTER)
            pi = i;
    if (pi < 0 || !e->op->nocodesign_shape)
        return KEVO_OK;
    const kevo_peer_desc *pd = &e->op->peers[pi];
    const char *name = pd->name;
    if (e->dist)
        tn_line(prog, "peer %s is not measured for a distribution of shapes", name);
    if (e->dist || run->best_id <= 0)
        return KEVO_OK;
    double with_ms = kevo_peer_ok_ms(&e->run_peers, kevo_op_peer_index(e->op, pd->bcast_with));
    double without_ms = kevo_peer_ok_ms(&e->run_peers, kevo_op_peer_index(e->op, pd->bcast_without));
    double gather_ms = with_ms - without_ms;
    if (!(isfinite(gather_ms) && gather_ms > 0)) {
        tn_line(prog, "peer %s not measured: no time for the broadcast (%s %.3f ms, %s %.3f ms)", name,
                pd->bcast_without, without_ms, pd->bcast_with, with_ms);
        return KEVO_OK;
    }
    kevo_err why;
    kevo_err_clear(&why);
    tn_env v = *e; /* a view of e at the other shape: borrows e's spaces, DB and ABI, owns only v.gpu */
    v.gpu = NULL;
    v.dist = NULL;
    v.peers = NULL;
    v.speers = NULL;
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    tn_work w;
    memset(&w, 0, sizeof w);
    kevo_gpu_result *res = calloc(1, sizeof *res);
    if (!res)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    const kevo_space *sp = NULL;
    kevo_config cfg;
    kevo_status st = kevo_db_cand_get(e->db, run->best_id, &c, err);
    kevo_status soft = KEVO_OK; /* what leaves the peer unmeasured, in why */
    if (!st)
        soft = e->op->nocodesign_shape(&e->shape, &v.shape, &why);
    if (!st && !soft) {
        e->op->shape_str(&v.shape, v.shape_txt, sizeof v.shape_txt);
        soft = tn_space_of(e, &c, &sp, &why);
        if (!soft && !sp)
            soft = kevo_err_set(&why, KEVO_ERR_DB, "candidate %lld has no source", (long long)c.id);
        if (!soft)
            soft = kevo_config_parse_stored(sp, c.params, "the winner", &cfg, &why);
    }
    if (!st && !soft) {
        tn_line(prog, "peer %s: #%lld %s %s at %s (K/V gathered), on a worker of its own", name, (long long)c.id,
                c.family, c.params, v.shape_txt);
        kevo_gpu_stop(e->gpu); /* its memory is the new worker's */
        e->gpu = NULL;
        kevo_gpu_config gc = tn_gpu_config(e, ref, &v.shape, e->ord[0], o->def.warmup, o->def.reps,
                                           o->proc.eval_timeout, o->def.seed, false, false);
        kevo_gpu_info info;
        soft = kevo_gpu_start(&gc, &v.gpu, &info, &why);
        if (!soft)
            tn_say_ref_check(e, &info);
    }
    if (!st && !soft)
        soft = tn_check_config(&v, sp, &cfg, &c, o->def.maps, true, o->def.seed ^ 0x6a09e667f3bcc909ull, &w, res,
                               &why);
    if (!st && !soft && res->fail != KEVO_FAIL_NONE)
        soft = kevo_err_set(&why, KEVO_ERR_INTERNAL, "#%lld failed at %s: %s: %s", (long long)c.id, v.shape_txt,
                            kevo_fail_name(res->fail), res->msg);
    if (!st && !soft && !(res->median_ms > 0))
        soft = kevo_err_set(&why, KEVO_ERR_INTERNAL, "#%lld was not timed at %s", (long long)c.id, v.shape_txt);
    if (!st && (soft == KEVO_ERR_INTERRUPTED || soft == KEVO_ERR_NOMEM || kv_cancelled(e->cancel))) {
        st = kv_cancelled(e->cancel) ? KEVO_ERR_INTERRUPTED : soft;
        *err = why;
    } else if (!st && soft) {
        tn_line(prog, "peer %s not measured: %s", name, why.msg);
    } else if (!st) {
        st = tn_peer_record(e, run, pi, &c, v.shape_txt, res, gather_ms, prog, err);
    }
    kevo_gpu_stop(v.gpu);
    tn_work_release(&w);
    kevo_cand_row_release(&c);
    free(res);
    return st;
}
