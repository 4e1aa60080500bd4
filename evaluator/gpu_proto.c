/* gpu_proto.c — what both ends of the GPU worker's pipes share: whole-buffer
 * I/O, the names of the evaluation phases and the steady-timing rule
 * (gpu_proto.h, gpu_types.h). */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/gpu_proto.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

int gp_write(int fd, const void *p, size_t n)
{
    return kv_write_all(fd, p, n) ? 0 : -1;
}

int gp_read(int fd, void *p, size_t n)
{
    return kv_read_all(fd, p, n) ? 0 : -1;
}

const char *kevo_gpu_phase_name(kevo_gpu_phase p)
{
    static const char *const names[KEVO_GPU_PHASES] = {"load", "fill", "ref", "sum", "run", "cmp", "time", "all"};
    return (unsigned)p < KEVO_GPU_PHASES ? names[p] : "?";
}

bool kevo_gpu_timing_steady(double median_ms, double min_ms)
{
    return isfinite(median_ms) && isfinite(min_ms) && min_ms > 0 && median_ms <= KEVO_GPU_STEADY * min_ms;
}

bool gp_retime_check(const gp_request *head, const kevo_op *op, char *why, size_t n)
{
    const int min = head->has_peer == 1 ? 1 : 2;
    if (head->has_peer != 0 && head->has_peer != 1) {
        snprintf(why, n, "a re-timing's has_peer is %d, not 0 or 1", head->has_peer);
        return false;
    }
    if (head->count < min || head->count > KEVO_GPU_RETIME_MAX) {
        snprintf(why, n, "a re-timing takes %d..%d candidates%s, not %d", min, KEVO_GPU_RETIME_MAX,
                 head->has_peer ? " beside a peer" : "", head->count);
        return false;
    }
    if (head->rounds < 2 || head->warmup < 0 || head->warmup > KEVO_GPU_MAX_REPS) {
        snprintf(why, n, "a re-timing takes at least 2 rounds and 0..%d warm-up runs, not %d and %d",
                 KEVO_GPU_MAX_REPS, head->rounds, head->warmup);
        return false;
    }
    if (head->rounds > KEVO_GPU_MAX_REPS / (head->count + head->has_peer)) {
        snprintf(why, n, "a re-timing of %d kernels over %d rounds is more than %d runs",
                 head->count + head->has_peer, head->rounds, KEVO_GPU_MAX_REPS);
        return false;
    }
    if (!head->has_peer)
        return true;
    int np = op ? (op->npeers < KEVO_MAX_PEERS ? op->npeers : KEVO_MAX_PEERS) : 0;
    if (head->peer < 0 || head->peer >= np) {
        snprintf(why, n, "peer index %d is out of range: %s has %d peers", head->peer, op ? op->name : "the op",
                 np);
        return false;
    }
    if (op->peers[head->peer].flags & KEVO_PEER_AFTER) {
        snprintf(why, n, "peer '%s' of %s runs after the search, not beside the candidates",
                 op->peers[head->peer].name, op->name);
        return false;
    }
    return true;
}

bool gp_retime_result_check(kevo_gpu_retime_result *res, int rounds)
{
    res->msg[sizeof res->msg - 1] = '\0';
    if ((unsigned)res->fail >= KEVO_FAIL__COUNT) {
        int was = (int)res->fail;
        memset(res, 0, sizeof *res);
        res->fail = KEVO_FAIL_WORKER_CRASH;
        snprintf(res->msg, sizeof res->msg, "re-timing: the worker answered failure kind %d, which kevo has not",
                 was);
        return false;
    }
    if (res->fail != KEVO_FAIL_NONE)
        return true;
    bool ok = res->rounds == rounds;
    for (int r = 0; ok && r < rounds; r++)
        ok = isfinite(res->ms[r]) && res->ms[r] > 0;
    if (!ok) {
        int got = res->rounds;
        memset(res, 0, sizeof *res);
        res->fail = KEVO_FAIL_WORKER_CRASH;
        snprintf(res->msg, sizeof res->msg,
                 "re-timing: the worker answered %d rounds (asked %d) or a time that is not finite and positive",
                 got, rounds);
    }
    return ok;
}
