/* settle.c — the run's winner, decided beyond the noise: the leaders
 * re-timed interleaved in one process and compared round by round, with
 * the run's fastest same-run peer timed in the same rounds, so that the
 * winner's figure against it is a paired one too. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"
#include "util/stats.h"

#define TN_CROSS_DEVICE 0.05 /* with several GPUs, candidates within this of the fastest are re-timed on one */
/* Re-timed candidates within this of the leader are one kernel for the run's
 * answer: one H100 times a kernel 0.1-0.5% apart from run to run (two EPI
 * variants of lce_ws 0.1-0.4% apart were named best in turn by five runs of
 * one seed), so the best among them is the first in configuration order,
 * the same in every run that measures them, not the one the noise favoured
 * (greedy's GR_TIE is the same 1%). */
#define TN_EQUIV 0.01

typedef struct tn_lead {
    kevo_cand_row row;
    tn_work w;
    bool prepared;
    kevo_config cfg;   /* its configuration (configuration order) */
    double median;     /* of its interleaved times */
    double ratio, lo, hi; /* its time over the leader's, paired by round, and the 95% interval */
} tn_lead;

/* The re-timing of m leaders: their requests, results and rounds, and the
 * peer timed beside them (-1: none) with its times. */
typedef struct tn_leads {
    tn_lead *lead;
    int m;
    kevo_gpu_request reqs[KEVO_GPU_RETIME_MAX];
    kevo_gpu_retime_result *out;
    int rounds;
    int peer;
    kevo_gpu_retime_result *pout;
    bool retimed; /* the re-timing ran (its results are in out and pout) */
    char why[200]; /* when it did not, for a group of one: why (no paired figure) */
} tn_leads;

static int tn_cmp_median(const void *a, const void *b)
{
    const kevo_cand_row *x = a, *y = b;
    if (x->median_ms != y->median_ms)
        return x->median_ms < y->median_ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Whether a comes before b in configuration order: family name, then each
 * parameter's value in the family's order. */
static bool tn_config_before(const tn_lead *a, const tn_lead *b)
{
    int c = strcmp(a->row.family, b->row.family);
    return c != 0 ? c < 0 : kevo_config_cmp(&a->cfg, &b->cfg) < 0;
}

/* The leaders among rows[0..n): the verified and timed ones, fastest
 * first, into rows[0..*ok); of those, the ones whose interval is not clear
 * of the fastest's and, when several GPUs measured, every one within
 * TN_CROSS_DEVICE of it (two GPUs of one model can time one kernel a few
 * percent apart: 2.5% seen on two H200s of one host) into rows[0..m). */
static int tn_leaders(const tn_env *e, kevo_cand_row *rows, int n, int *ok)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].status, "ok") == 0 && rows[i].median_ms > 0) {
            kevo_cand_row t = rows[k];
            rows[k++] = rows[i];
            rows[i] = t;
        }
    qsort(rows, (size_t)k, sizeof *rows, tn_cmp_median);
    *ok = k;
    bool several = e->ndev + e->nrem > 1;
    int m = k > 0 ? 1 : 0;
    for (int i = 1; i < k && m < KEVO_GPU_RETIME_MAX; i++)
        if (!(rows[i].ci_lo_ms > rows[0].ci_hi_ms) || isnan(rows[i].ci_lo_ms) ||
            rows[i].median_ms <= (1 + TN_EQUIV) * rows[0].median_ms ||
            (several && rows[i].median_ms <= (1 + TN_CROSS_DEVICE) * rows[0].median_ms)) {
            kevo_cand_row t = rows[m]; /* into the group, in order */
            rows[m++] = rows[i];
            rows[i] = t;
        }
    return m;
}

/* Leader i's cubin and plan through the compile cache, and its request. */
static kevo_status tn_lead_prepare(tn_env *e, tn_leads *T, int i, const kevo_cand_row *row, kevo_err *err)
{
    tn_lead *l = &T->lead[i];
    l->row = *row;
    const kevo_space *sp = NULL;
    kevo_config cfg;
    kevo_status st = tn_space_of(e, row, &sp, err);
    if (!st && !sp)
        st = kevo_err_set(err, KEVO_ERR_DB, "candidate %lld is verified but has no source", (long long)row->id);
    if (!st)
        st = kevo_config_parse_stored(sp, row->params, "a leader", &cfg, err);
    if (!st) {
        l->cfg = cfg;
        st = tn_prepare(e, sp, -1, &cfg, &l->w, err);
    }
    l->prepared = !st;
    if (!st)
        st = tn_compile(e, &l->w, 1, err);
    if (!st && l->w.job.fail != KEVO_FAIL_NONE)
        st = kevo_err_set(err, KEVO_ERR_NVRTC, "candidate %lld no longer compiles for the re-timing",
                          (long long)row->id);
    if (!st) {
        memset(&T->reqs[i], 0, sizeof T->reqs[i]);
        T->reqs[i].candidate_id = row->id;
        T->reqs[i].cubin = l->w.job.cubin;
        T->reqs[i].cubin_size = l->w.job.cubin_size;
        T->reqs[i].plan = l->w.plan;
        T->reqs[i].time = true;
    }
    return st;
}

/* Each leader against the one leading by the paired comparisons: tied
 * when its ratio's interval holds 1 (as is then the leader), the times and
 * the marks stored.  Returns the leader's index. */
static int tn_compare(tn_env *e, tn_leads *T, kevo_status *st, kevo_err *err)
{
    tn_lead *lead = T->lead;
    const int m = T->m;
    const double *series[KEVO_GPU_RETIME_MAX];
    double med[KEVO_GPU_RETIME_MAX];
    uint64_t seeds[KEVO_GPU_RETIME_MAX];
    for (int i = 0; i < m; i++) {
        series[i] = T->out[i].ms;
        med[i] = lead[i].median;
        seeds[i] = (uint64_t)lead[i].row.id;
    }
    int leader = kv_paired_leader(series, med, m, T->rounds, seeds, KV_BOOTSTRAP);
    for (int i = 0; i < m; i++) /* each one against the leader */
        if (!isnan(lead[i].median) && i != leader)
            kv_paired_ratio(T->out[leader].ms, T->out[i].ms, T->rounds, (uint64_t)lead[i].row.id, KV_BOOTSTRAP,
                            &lead[i].ratio, &lead[i].lo, &lead[i].hi);
    bool any_tie = false;
    for (int i = 0; i < m && !*st; i++) {
        if (isnan(lead[i].median))
            continue;
        if (i != leader) {
            lead[i].row.tied = !(lead[i].lo > 1.0);
            any_tie |= lead[i].row.tied == 1;
        }
        *st = kevo_db_timings_put(e->db, lead[i].row.id, 0, "retime", T->out[i].ms, T->rounds, err);
    }
    lead[leader].row.tied = any_tie;
    for (int i = 0; i < m && !*st; i++)
        if (!isnan(lead[i].median))
            *st = kevo_db_cand_update(e->db, &lead[i].row, err);
    return leader;
}

/* What the re-timing found, said: the leader, each other one's ratio, and
 * the best when it is not the leader. */
static void tn_say_settled(const tn_leads *T, int leader, int best, tn_progress *prog)
{
    const tn_lead *lead = T->lead;
    tn_line(prog, "re-timed the %d leaders interleaved, %d rounds: #%lld leads at %.4f ms", T->m, T->rounds,
            (long long)lead[leader].row.id, lead[leader].median);
    for (int i = 0; i < T->m; i++) {
        if (i == leader)
            continue;
        if (isnan(lead[i].median))
            tn_line(prog, "  #%lld not re-timed: %s", (long long)lead[i].row.id, T->out[i].msg);
        else
            tn_line(prog, "  #%lld %+.1f%% [%+.1f%%, %+.1f%%]%s", (long long)lead[i].row.id,
                    100 * (lead[i].ratio - 1), 100 * (lead[i].lo - 1), 100 * (lead[i].hi - 1),
                    lead[i].row.tied ? ": tied (cannot be told apart)" : ": slower");
    }
    if (best != leader)
        tn_line(prog, "best: #%lld (%+.1f%% against #%lld): within %.0f%%, the noise between runs, the first "
                "in configuration order", (long long)lead[best].row.id,
                100 * (lead[best].ratio - 1), (long long)lead[leader].row.id, 100 * TN_EQUIV);
}

/* Re-time the T->m prepared leaders interleaved and decide: run->best_id
 * the first in configuration order of those within TN_EQUIV of the one
 * leading.  A group where fewer than two were timed decides nothing. */
static kevo_status tn_retime(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, tn_leads *T, bool *decided,
                             tn_progress *prog, kevo_err *err)
{
    tn_lead *lead = T->lead;
    const int m = T->m;
    *decided = false;
    const int kernels = m + (T->peer >= 0);
    T->rounds = 2 * o->def.reps;
    if (T->rounds * kernels > KEVO_GPU_MAX_REPS)
        T->rounds = KEVO_GPU_MAX_REPS / kernels;
    kevo_status st = T->peer >= 0 ? kevo_gpu_retime_peer(e->gpu, T->reqs, m, T->peer, o->def.warmup, T->rounds,
                                                         T->out, T->pout, err)
                                  : kevo_gpu_retime(e->gpu, T->reqs, m, o->def.warmup, T->rounds, T->out, err);
    if (st && m == 1 && st != KEVO_ERR_INTERRUPTED && st != KEVO_ERR_NOMEM) {
        /* a group of one is re-timed for the paired figure alone: without it the run goes on */
        snprintf(T->why, sizeof T->why, "%.190s", err->msg);
        return KEVO_OK;
    }
    T->retimed = !st;
    int leader = 0, timed = 0;
    for (int i = 0; i < m && !st; i++) {
        lead[i].median = T->out[i].fail == KEVO_FAIL_NONE ? kv_median(T->out[i].ms, T->out[i].rounds) : NAN;
        if (isnan(lead[i].median))
            continue;
        timed++;
        if (isnan(lead[leader].median) || lead[i].median < lead[leader].median)
            leader = i;
    }
    if (st || timed < 2)
        return st;
    /* the leader by the paired comparisons, not only the medians */
    leader = tn_compare(e, T, &st, err);
    int best = leader;
    for (int i = 0; i < m; i++)
        if (i != leader && !isnan(lead[i].median) && lead[i].ratio <= 1 + TN_EQUIV &&
            tn_config_before(&lead[i], &lead[best]))
            best = i;
    run->best_id = lead[best].row.id;
    *decided = true;
    tn_say_settled(T, leader, best, prog);
    return st;
}

/* The run's best (run->best_id) against the peer timed in the same rounds
 * (T->peer): kv_paired_ratio of its times and the peer's, round by round
 * (the median of peer / best: above 1 the best is faster), with its 95%
 * interval, said and stored (kevo_db_paired_put; a group of one also
 * stores the best's times, as tn_compare does a group's).  Where there is
 * no such figure (no peer passed its check, the peer failed here, the best
 * was not re-timed), the line says why and the run keeps none.  Errors:
 * the DB's. */
static kevo_status tn_pair(tn_env *e, const kevo_run_row *run, const tn_leads *T, tn_progress *prog,
                           kevo_err *err)
{
    if (run->best_id <= 0)
        return KEVO_OK;
    if (T->peer < 0) {
        tn_line(prog, "#%lld against a peer in the same rounds: not measured: no same-run peer passed its check",
                (long long)run->best_id);
        return kevo_db_paired_clear(e->db, run->id, err);
    }
    const char *name = e->op->peers[T->peer].name;
    int b = -1;
    for (int i = 0; i < T->m && T->retimed; i++)
        if (T->lead[i].row.id == run->best_id && T->out[i].fail == KEVO_FAIL_NONE && T->out[i].rounds == T->rounds)
            b = i;
    const char *why = !T->retimed ? (T->why[0] ? T->why : "the re-timing did not run")
                      : T->pout->fail != KEVO_FAIL_NONE ? T->pout->msg
                      : b < 0 ? "the best was not re-timed" : NULL;
    if (why) {
        tn_line(prog, "#%lld against %s in the same rounds: not measured: %s", (long long)run->best_id, name, why);
        return kevo_db_paired_clear(e->db, run->id, err);
    }
    kevo_paired_row p;
    memset(&p, 0, sizeof p);
    p.cand_id = run->best_id;
    snprintf(p.peer, sizeof p.peer, "%s", name);
    p.rounds = T->rounds;
    kv_paired_ratio(T->out[b].ms, T->pout->ms, T->rounds, (uint64_t)run->best_id ^ 0x70616972ull, KV_BOOTSTRAP,
                    &p.ratio, &p.ci_lo, &p.ci_hi);
    kevo_status st = KEVO_OK;
    if (T->m == 1)
        st = kevo_db_timings_put(e->db, run->best_id, 0, "retime", T->out[b].ms, T->rounds, err);
    if (!st)
        st = kevo_db_paired_put(e->db, run->id, &p, T->pout->ms, err);
    if (!st)
        tn_line(prog, "#%lld against %s in the same rounds: %.2fx [%.2fx, %.2fx] (%d rounds)",
                (long long)run->best_id, name, p.ratio, p.ci_lo, p.ci_hi, p.rounds);
    return st;
}

/* The run's winner, decided beyond the noise: the verified candidates whose
 * median's 95% interval overlaps the fastest one's or that are within
 * TN_EQUIV of it (at most KEVO_GPU_RETIME_MAX, fastest first) are timed
 * again interleaved in one process (A B C A B C ...), the fastest by that
 * median leads, and each other is compared with it round by round
 * (kv_paired_ratio): one whose ratio's interval holds 1 cannot be told
 * apart and is marked tied, as is then the leader.  The run's best_id is
 * the first in configuration order of those within TN_EQUIV of the leader
 * (the leader itself when it is alone there).  The run's fastest OK
 * same-run peer (kevo_peer_best_same_run) runs in the same rounds, after
 * the leaders, and the best's paired ratio against it is stored
 * (tn_pair); a lone leader is re-timed with it for that figure alone.
 * Idempotent: a resumed run does it again. */
kevo_status tn_settle(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, tn_progress *prog, kevo_err *err)
{
    kevo_cand_row *rows = NULL;
    int n = 0, ok = 0;
    kevo_status st = kevo_db_cand_list(e->db, run->id, &rows, &n, err);
    if (st)
        return st;
    tn_leads T;
    memset(&T, 0, sizeof T);
    T.m = tn_leaders(e, rows, n, &ok);
    T.peer = kevo_peer_best_same_run(e->op, &e->run_peers, NULL);
    /* a group to re-time: several leaders, or one beside the peer */
    const bool group = e->gpu && (T.m > 1 || (T.m == 1 && T.peer >= 0));
    T.lead = calloc((size_t)(T.m ? T.m : 1), sizeof *T.lead);
    if (!T.lead)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    T.out = group ? calloc((size_t)T.m, sizeof *T.out) : NULL;
    T.pout = group && T.peer >= 0 ? calloc(1, sizeof *T.pout) : NULL;
    if (!st && group && (!T.out || (T.peer >= 0 && !T.pout)))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < T.m && !st && group; i++) /* the group's cubins and plans, through the compile cache */
        st = tn_lead_prepare(e, &T, i, &rows[i], err);
    bool decided = false;
    if (st && T.m == 1 && st != KEVO_ERR_INTERRUPTED && st != KEVO_ERR_NOMEM) {
        /* a lone leader that cannot be prepared again has no paired figure; the run goes on */
        snprintf(T.why, sizeof T.why, "%.190s", err->msg);
        st = KEVO_OK;
    } else if (!st && group)
        st = tn_retime(e, run, o, &T, &decided, prog, err);
    if (!st && !decided && ok > 0) {
        /* one leader, its interval clear of every other's */
        run->best_id = rows[0].id;
        if (T.m <= 1 && ok > 1)
            tn_line(prog, "#%lld leads beyond the noise (its 95%% interval clear of the next one's)",
                    (long long)rows[0].id);
    }
    if (!st && ok > 0)
        st = tn_pair(e, run, &T, prog, err);
    for (int i = 0; i < T.m && T.lead; i++)
        if (T.lead[i].prepared)
            tn_work_release(&T.lead[i].w);
    free(T.lead);
    free(T.out);
    free(T.pout);
    kevo_cand_rows_free(rows, n);
    return st;
}
