/* progress.c — the run's account, as events to the caller
 * (kevo_tune_opts.proc.on_event): lines, the progress bar, traces of the
 * loop's steps, debug figures of the workers.  The library never prints. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/tune/tune_int.h"

void tn_bar(tn_progress *p, int64_t done, double best, const char *what)
{
    if (!p->fn)
        return;
    kevo_event ev = {.kind = KEVO_EVENT_PROGRESS, .text = what, .device = -1, .done = done, .budget = p->budget,
                     .best = best > 0 ? best : 0, .elapsed_s = kv_now() - p->t0};
    p->fn(p->ctx, &ev);
}

void tn_trace(const tn_env *e, const char *what, int64_t cand, int dev)
{
    if (!e->on_event)
        return;
    kevo_event ev = {.kind = KEVO_EVENT_TRACE, .text = what, .cand_id = cand, .device = dev,
                     .t = kv_now() - e->loop_t0};
    e->on_event(e->event_ctx, &ev);
}

void tn_say_ref_check(const tn_env *e, const kevo_gpu_info *in)
{
    if (in->ref_check_against[0])
        kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_DEBUG, 0,
                "eval-reference cuBLAS against %s: rel_err %.3e, %.0f non-finite", in->ref_check_against,
                in->ref_check_rel_err, in->ref_check_nonfinite);
}

void tn_say_phases(const tn_env *e, int64_t cand, const kevo_gpu_result *res)
{
    const double *pm = res->phase_ms;
    if (!e->on_event || !(pm[KEVO_PHASE_ALL] > 0))
        return;
    char line[256];
    int len = snprintf(line, sizeof line, "eval-phases #%lld ms", (long long)cand);
    for (int k = 0; k < KEVO_GPU_PHASES && len > 0 && len < (int)sizeof line; k++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.2f", kevo_gpu_phase_name((kevo_gpu_phase)k),
                        pm[k]);
    kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_DEBUG, cand, "%s", line);
}

void tn_say_peers(tn_progress *prog, const kevo_op *op, const kevo_peer_set *ps, const char *indent)
{
    int best = kevo_peer_best(op, ps, NULL);
    for (int i = 0; i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        const kevo_peer_fig *f = &ps->p[i];
        char fig[96];
        if (f->state == KEVO_PEER_OK)
            snprintf(fig, sizeof fig, "%.4f ms [%.4f, %.4f]", f->median_ms, f->ci_lo_ms, f->ci_hi_ms);
        else if (f->state == KEVO_PEER_UNMEASURED)
            snprintf(fig, sizeof fig, "%s",
                     op->peers[i].flags & KEVO_PEER_AFTER ? "measured after the search" : "not measured");
        else
            snprintf(fig, sizeof fig, "%s", f->state == KEVO_PEER_FAILED ? "FAILED its check" : "did not run");
        tn_line(prog, "%speer %s: %s, %s%s%s%s", indent, op->peers[i].name, fig, op->peers[i].label,
                f->detail[0] ? " | " : "", f->detail, i == best ? "  <- best" : "");
    }
}

void tn_cand_event(tn_progress *prog, const kevo_cand_event *c)
{
    if (!prog->fn)
        return;
    kevo_event ev = {.kind = KEVO_EVENT_CANDIDATE, .text = "", .cand_id = c->id, .device = -1, .cand = c};
    prog->fn(prog->ctx, &ev);
}

void tn_print_result(tn_progress *prog, const kevo_search *s, const tn_work *w, const kevo_cand_row *row,
                     int64_t done, int64_t budget, double best, bool compile_only, const char *gpu)
{
    if (!prog->fn)
        return;
    char cfgs[256];
    kevo_config_str(w->space, &w->cfg, cfgs, sizeof cfgs);
    const kevo_node *nd = &s->nodes[w->node];
    kevo_cand_event c = {.id = w->cand_id, .done = done, .budget = budget, .family = w->space->family,
                         .config = cfgs, .move = "", .fail = "", .why = "", .gpu = gpu ? gpu : "", .note = ""};
    if (nd->parent >= 0) {
        c.move = nd->move;
        c.parent = s->nodes[nd->parent].cand_id;
        c.parent2 = nd->parent2 >= 0 ? s->nodes[nd->parent2].cand_id : 0;
    }
    /* ptxas's warning that it serialized the wgmmas (C7514/C7515: a silent slowdown) */
    if (w->job.log && strstr(w->job.log, "wgmma.mma_async instructions are serialized"))
        c.note = "ptxas: wgmma serialized";
    if (strcmp(row->status, "failed") == 0) {
        c.outcome = KEVO_CAND_FAILED;
        c.fail = row->fail;
        c.why = row->fail_msg ? row->fail_msg : "";
    } else if (compile_only) {
        c.outcome = KEVO_CAND_COMPILED;
        c.cached = w->job.cached;
        c.compile_s = w->job.seconds;
        c.regs = w->job.regs;
        c.spill_bytes = w->job.spill_bytes;
        c.smem_kb = (int)(row->smem_dynamic / 1024);
    } else {
        c.outcome = s->nextra > 0 ? KEVO_CAND_TIMED_DIST : KEVO_CAND_TIMED;
        c.median_ms = row->median_ms;
        c.speedup = row->speedup;
        c.vs_peer = row->vs_peer;
        c.tflops = row->tflops;
        c.roofline = row->roofline;
        c.rel_err = row->rel_err;
        c.fitness = row->fitness;
        c.best = best;
    }
    tn_cand_event(prog, &c);
}

void tn_dist_summary(tn_env *e, const kevo_run_row *run, tn_progress *prog)
{
    kevo_cand_row *rows = NULL;
    int n = 0;
    kevo_err err;
    if (kevo_db_cand_list(e->db, run->id, &rows, &n, &err))
        return;
    int64_t best[KEVO_DIST_MAX] = {0};
    kevo_shape_result bres[KEVO_DIST_MAX];
    int bi[KEVO_DIST_MAX];
    for (int i = 0; i < n; i++) {
        kevo_shape_result *v = NULL;
        int m = 0;
        if (strcmp(rows[i].status, "ok") != 0 || kevo_db_shape_results_get(e->db, rows[i].id, &v, &m, &err))
            continue;
        for (int k = 0; k < m; k++) {
            int j = v[k].shape_idx;
            if (j < 0 || j >= e->dist->n || !(v[k].median_ms > 0))
                continue;
            if (!best[j] || v[k].median_ms < bres[j].median_ms) {
                best[j] = rows[i].id;
                bres[j] = v[k];
                bi[j] = i;
            }
        }
        free(v);
    }
    for (int j = 0; j < e->dist->n; j++) {
        if (!best[j]) {
            tn_line(prog, "  %s (weight %g): no kernel verified there", e->dist->text[j], e->dist->weight[j]);
            continue;
        }
        char verdict[320];
        kevo_peer_verdict(e->op, bres[j].vs_peer, &e->speers[j], verdict, sizeof verdict);
        tn_line(prog, "  %s (weight %g): fastest #%lld %s %s %.4f ms, %.2fx the baseline; %s", e->dist->text[j],
                e->dist->weight[j], (long long)best[j], rows[bi[j]].family, rows[bi[j]].params, bres[j].median_ms,
                bres[j].speedup, verdict);
    }
    kevo_cand_rows_free(rows, n);
}
