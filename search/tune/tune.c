/* tune.c — `kevo tune`: a run opened (run.c), its search loop, the run
 * closed.  The loop, round after round:
 *
 *   propose  the generators' calls and the policy's round (propose.c)
 *   prepare  each proposal rendered, planned and registered (cand.c)
 *   evaluate the oldest round compiled, verified and timed (pipe.c)
 *   record   each result stored in proposal order, the search told (cand.c)
 *   stop?    every stop rule (stop.c)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

/* Where the run stands, for the stop rules. */
static kevo_stop_facts tn_facts(const tn_run *R, int64_t inflight)
{
    return (kevo_stop_facts){.done = R->done, .last_gain = R->last_gain, .inflight = inflight, .best = R->best};
}

/* Generators that rewrite nodes beside the round, running here (at least
 * one slot each round is kept for a candidate of theirs). */
static int tn_side_slots(const tn_run *R)
{
    int n = 0;
    for (int i = 0; i < R->G.list.n; i++)
        n += R->G.g[i] && i != R->G.round;
    return n > 0 ? n : 1;
}

/* What a killed process registered but never finished: its rounds in
 * flight, in order, finished first (a run of schema 7 or older, and a
 * compile-only run's candidates now continued on a GPU: one lot). */
static kevo_status tn_pending(tn_run *R, int slots, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0, from = 0; !st && i < R->nleft; i++) {
        const kevo_node *nd = &R->s.nodes[R->left[i]];
        tn_work *w = &R->works[i - from];
        st = tn_prepare(&R->e, kevo_search_space(&R->s, nd->family), nd->family, &nd->cfg, w, err);
        if (st)
            break;
        w->node = R->left[i];
        w->cand_id = nd->cand_id;
        if (i + 1 == R->nleft || R->left_round[i + 1] != R->left_round[i] || i + 1 - from == R->ro.def.batch + slots) {
            st = tn_pipe_round_add(&R->e, &R->pipe, R->works, i + 1 - from, err);
            from = i + 1;
        }
    }
    return st;
}

/* The loop's state: the stop rules, room for --ahead rounds of --batch
 * candidates and the generators' (and what was left pending), the pipe
 * (a one-shape GPU run streams its compiles to the GPUs), the pending
 * rounds in it. */
static kevo_status tn_search_open(tn_run *R, kevo_err *err)
{
    const kevo_run_def *d = &R->ro.def;
    kevo_stop_init(&R->stop, d, R->rs.elapsed_s, R->prog.t0);
    R->stop.cancel = R->e.cancel;
    R->stop.budget = tn_gens_budget(R); /* budgeted generators' calls counted apart */
    R->prog.budget = R->stop.budget;
    R->e.loop_t0 = kv_now();
    const int slots = tn_side_slots(R);
    const bool stream = !d->compile_only && !R->e.dist;
    const int pcap = d->batch * d->ahead + d->ahead * slots + R->nleft + 1;
    R->works = calloc((size_t)d->batch + (size_t)slots, sizeof *R->works);
    if (!R->works)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st = tn_pipe_open(&R->e, &R->pipe, pcap, stream, err);
    return st ? st : tn_pending(R, slots, err);
}

static void tn_search_close(tn_run *R)
{
    tn_pipe_close(&R->e, &R->pipe);
    free(R->works);
    R->works = NULL;
}

/* The search: round after round, propose -> prepare -> evaluate -> record
 * -> stop?.  Rounds are proposed only where the state is one an
 * uninterrupted run proposes in: after a round is applied (up to --ahead in
 * flight, while the generators have one), so that a resumed run proposes as
 * the first process would have; a resume whose oldest round is half
 * applied waits for the rest of it.  Errors: the DB's, the workers',
 * KEVO_ERR_INTERRUPTED (what is pending stays so, for --resume). */
static kevo_status tn_search(tn_run *R, kevo_err *err)
{
    kevo_status st = tn_search_open(R, err);
    bool may_propose = !R->head_started;
    while (!st) {
        const int64_t inflight = R->pipe.tail - R->pipe.head;
        kevo_stop_facts f = tn_facts(R, inflight);
        kevo_stop_act act = kevo_stop_check(&R->stop, KEVO_STOP_AT_TURN, &f);
        if (act == KEVO_STOP_END) {
            st = KEVO_ERR_INTERRUPTED;
            break;
        }
        /* propose, and prepare what is proposed: rendered, planned, registered */
        int ready = 0;
        bool end = false;
        bool propose = may_propose && act == KEVO_STOP_GO && R->pipe.nround < R->ro.def.ahead;
        st = tn_propose(R, propose, act, inflight, &ready, &end, err);
        if (st || end)
            break;
        if (ready > 0) { /* another round, while --ahead allows and the generators have one */
            st = tn_pipe_round_add(&R->e, &R->pipe, R->works, ready, err);
            R->next_round++;
            continue;
        }
        may_propose = false;
        if (R->pipe.nround == 0) { /* nothing in flight to wait for: the end, or a call stored as failed */
            f = tn_facts(R, 0);
            if (kevo_stop_check(&R->stop, KEVO_STOP_AT_IDLE, &f) == KEVO_STOP_END)
                break;
            may_propose = true;
            continue;
        }
        /* evaluate the oldest round (compile, verify, time) and record each result in proposal order */
        st = tn_pipe_finish_round(R, err);
        may_propose = true;
        /* the time the run has spent, for --time-limit across processes */
        R->rs.elapsed_s = R->stop.elapsed0 + kv_now() - R->prog.t0;
        if (!st)
            st = kevo_db_run_settings_put(R->e.db, R->run.id, &R->rs, err);
    }
    tn_search_close(R);
    return st;
}

/* in_list: one run of an --arch list (kevo_tune_archs), whose families that
 * do not target this arch are left out with a line. */
static kevo_status tn_tune(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_id, bool in_list, kevo_err *err)
{
    tn_run R;
    kevo_status st = tn_run_open(&R, ctx, o, in_list, run_id, err);
    if (!st && R.written)
        st = tn_search(&R, err);
    return tn_run_close(&R, st, err);
}

/* kevo_tune with the error in err. */
static kevo_status tn_tune_one(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_id, kevo_err *err)
{
    kevo_mpi_set_ctx(o->proc.mpi, ctx);
    kevo_status st = tn_tune(ctx, o, run_id, false, err);
    if (st == KEVO_ERR_INTERRUPTED && !strstr(err->msg, "continue it with") && !strstr(err->msg, "nothing was"))
        tn_interrupted(err, kv_ctx_why(ctx), 0, o->proc.db_path, false);
    return st;
}

kevo_status kevo_tune(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_id)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    return tn_tune_one(ctx, o, run_id, err);
}

/* Before the first run of an --arch list: some requested family
 * (o->def.families, else all of the op's) declares arch (else
 * KEVO_ERR_ARG naming the families that do), and those support the run's
 * shape(s) there (tn_select_families, quiet).  Reads the space files and
 * the --shapes file; writes nothing. */
static kevo_status tn_arch_check(const kevo_tune_opts *o, const char *arch, kevo_err *err)
{
    const kevo_run_def *d = &o->def;
    tn_env e;
    kevo_status st = tn_env_open(&e, d->op ? d->op : "", d->shape, d->dtype, arch, o->proc.data_dir,
                                 d->extra_templates, err);
    if (!st && d->shapes_file && !d->shape) {
        if (!(e.dist = calloc(1, sizeof *e.dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        else
            st = kevo_dist_read(d->shapes_file, e.op, e.dist, err);
    }
    /* the families asked for that declare arch, and the op's that do */
    kv_buf asked, targets;
    kv_buf_init(&asked);
    kv_buf_init(&targets);
    int declared = 0;
    for (int i = 0; !st && i < e.nspaces; i++) {
        const kevo_space *sp = e.spaces[i];
        bool has = kevo_space_has_arch(sp, arch);
        if (has)
            kv_buf_printf(&targets, "%s%s", targets.len ? ", " : "", sp->family);
        if (tn_family_listed(d->families, sp->family)) {
            kv_buf_printf(&asked, "%s%s", asked.len ? ", " : "", sp->family);
            declared += has;
        }
    }
    if (!st && e.nspaces > 0 && declared == 0 && asked.len > 0)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--arch %s: no family searched (%s) targets it; %s%s", arch,
                          asked.data, targets.len ? "families of the op that do: " : "no family of the op does",
                          targets.len ? targets.data : "");
    kv_buf_release(&asked);
    kv_buf_release(&targets);
    if (!st)
        st = tn_select_families(&e, d->families, true, false, err);
    tn_env_release(&e);
    return st;
}

/* The architectures after run i of an --arch list were not started: said
 * after the error that ended it. */
static void tn_archs_rest(kevo_err *err, kevo_status st, char (*archs)[16], int i, int n)
{
    kv_buf rest;
    kv_buf_init(&rest);
    for (int k = i + 1; k < n; k++)
        kv_buf_printf(&rest, "%s%s", k > i + 1 ? ", " : "", archs[k]);
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    kevo_err_set(err, st, "%s; the runs for %s were not started", msg, rest.data ? rest.data : "");
    kv_buf_release(&rest);
}

kevo_status kevo_tune_archs(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_ids, int *nruns)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    *nruns = 0;
    if (!o->def.arch || !strchr(o->def.arch, ',')) { /* one arch: kevo_tune itself */
        run_ids[0] = 0;
        kevo_status st = tn_tune_one(ctx, o, &run_ids[0], err);
        *nruns = run_ids[0] > 0;
        return st;
    }
    char archs[KEVO_TUNE_ARCHS_MAX][16];
    int n = 0;
    kevo_status st = kevo_arch_list_parse(o->def.arch, archs, KEVO_TUNE_ARCHS_MAX, &n, err);
    if (st)
        return st;
    if (o->resume_run > 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "--arch takes one architecture with --resume (a run has one)");
    if (!o->def.compile_only)
        return kevo_err_set(err, KEVO_ERR_ARG, "--arch takes a list of architectures only with --compile-only "
                            "(a GPU run loads its code on devices of one architecture)");
    for (int i = 0; i < n && !st; i++)
        st = tn_arch_check(o, archs[i], err);
    if (st)
        return st;
    kevo_mpi_set_ctx(o->proc.mpi, ctx);
    for (int i = 0; i < n && !st; i++) {
        kevo_tune_opts one = *o;
        one.def.arch = archs[i];
        int64_t id = 0;
        st = tn_tune(ctx, &one, &id, true, err);
        if (id > 0)
            run_ids[(*nruns)++] = id;
        if (st == KEVO_ERR_INTERRUPTED && !strstr(err->msg, "continue it with") && !strstr(err->msg, "nothing was"))
            tn_interrupted(err, kv_ctx_why(ctx), 0, o->proc.db_path, false);
        if (st && i + 1 < n) /* the architectures after it are not started */
            tn_archs_rest(err, st, archs, i, n);
    }
    return st;
}
