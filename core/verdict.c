/* verdict.c — a run's best against its in-run peers (see verdict.h). */
#include "core/verdict.h"

#include <math.h>
#include <stdio.h>

bool kevo_peer_lost(double vs_peer)
{
    return vs_peer < 1.0;
}

double kevo_peer_ok_ms(const kevo_peer_set *s, int i)
{
    if (!s || i < 0 || i >= KEVO_MAX_PEERS)
        return NAN;
    const kevo_peer_fig *f = &s->p[i];
    return f->state == KEVO_PEER_OK && f->median_ms > 0 && isfinite(f->median_ms) ? f->median_ms : NAN;
}

int kevo_peer_best(const kevo_op *op, const kevo_peer_set *s, double *ms)
{
    int best = -1;
    double best_ms = NAN;
    for (int i = 0; op && s && i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        double t = kevo_peer_ok_ms(s, i);
        if (t > 0 && !(best_ms <= t)) {
            best = i;
            best_ms = t;
        }
    }
    if (ms)
        *ms = best_ms;
    return best;
}

int kevo_peer_best_same_run(const kevo_op *op, const kevo_peer_set *s, double *ms)
{
    int best = -1;
    double best_ms = NAN;
    for (int i = 0; op && s && i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        double t = kevo_peer_ok_ms(s, i);
        if (!(op->peers[i].flags & KEVO_PEER_AFTER) && t > 0 && !(best_ms <= t)) {
            best = i;
            best_ms = t;
        }
    }
    if (ms)
        *ms = best_ms;
    return best;
}

int kevo_peer_vendor(const kevo_op *op, const kevo_peer_set *ps)
{
    int best = -1;
    for (int i = 0; op && ps && i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        double t = kevo_peer_ok_ms(ps, i);
        if ((op->peers[i].flags & KEVO_PEER_VENDOR) && t > 0 && !(best >= 0 && kevo_peer_ok_ms(ps, best) <= t))
            best = i;
    }
    return best;
}

void kevo_peer_verdict(const kevo_op *op, double vs_peer, const kevo_peer_set *ps, char *out, size_t n)
{
    double best_ms = NAN;
    int b = kevo_peer_best(op, ps, &best_ms);
    if (b < 0 || !isfinite(vs_peer)) { /* NaN or inf: nothing to compare */
        snprintf(out, n, "no in-run peer was checked");
        return;
    }
    const char *peer = op->peers[b].verdict;
    if (!kevo_peer_lost(vs_peer)) {
        snprintf(out, n, "beats the best in-run peer, %s (%.4f ms), %.2fx", peer, best_ms, vs_peer);
        return;
    }
    /* export's fallback: the fastest vendor form, where it is faster than the kernel (a peer it cannot run,
       stage 0 on a pre-broadcast E, may be the one that wins) */
    int v = kevo_peer_vendor(op, ps);
    double kernel_ms = best_ms / vs_peer, v_ms = kevo_peer_ok_ms(ps, v);
    char tail[200] = "";
    if (v >= 0 && v_ms < kernel_ms)
        snprintf(tail, sizeof tail, "; export will dispatch to %s", op->peers[v].verdict);
    else if (v >= 0)
        snprintf(tail, sizeof tail, "; export keeps the kernel, faster than %s (%.4f ms), the fastest form it can "
                 "dispatch to", op->peers[v].verdict, v_ms);
    snprintf(out, n, "no kernel beats %s at this shape: best %.2fx (%.4f ms)%s", peer, vs_peer, best_ms, tail);
}
