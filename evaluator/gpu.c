/* gpu.c — the parent's side of GPU evaluation: start, feed, watch and restart
 * the worker process.  This file never calls the CUDA driver. */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/gpu.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evaluator/backend.h"
#include "evaluator/gpu_proto.h"
#include "util/util.h"

struct kevo_gpu {
    kevo_gpu_config cfg;
    pid_t pid; /* -1 when no worker runs */
    int to_worker, from_worker;
    int restarts;
    kevo_gpu_info info;
    /* the evaluation in flight (kevo_gpu_submit) */
    bool inflight;
    int64_t cand;     /* its request's candidate_id */
    double t_submit;  /* kv_now() when it was sent */
    double busy_s;    /* seconds with an evaluation in flight, over the evaluations ended */
    int evaluated;    /* evaluations ended */
};

/* Read n bytes before the deadline: 0 done, -1 end of file or error, 1
 * timeout, 2 interrupted (kv_cancelled(cancel): SIGINT or SIGTERM). */
static int gp_read_deadline(int fd, void *p, size_t n, double deadline, kv_cancel *cancel)
{
    char *c = p;
    while (n) {
        if (kv_cancelled(cancel))
            return 2;
        double left = deadline - kv_now();
        if (left <= 0)
            return 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        /* wake at least once a second (a signal may land between the check and the poll) */
        int pr = poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -1;
        if (pr == 0)
            continue;
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reap the worker; describe how it ended into msg. */
static void gp_reap(kevo_gpu *g, char *msg, size_t n)
{
    if (g->pid <= 0)
        return;
    close(g->to_worker);
    close(g->from_worker);
    int ws = 0;
    pid_t r;
    while ((r = waitpid(g->pid, &ws, 0)) < 0 && errno == EINTR)
        ;
    if (msg) {
        if (r == g->pid && WIFSIGNALED(ws))
            snprintf(msg, n, "GPU worker died with signal %d (%s)", WTERMSIG(ws), strsignal(WTERMSIG(ws)));
        else if (r == g->pid && WIFEXITED(ws))
            snprintf(msg, n, "GPU worker exited with status %d", WEXITSTATUS(ws));
        else
            snprintf(msg, n, "GPU worker ended");
    }
    g->pid = -1;
}

static void gp_kill(kevo_gpu *g)
{
    g->inflight = false;
    if (g->pid > 0) {
        kill(g->pid, SIGKILL);
        gp_reap(g, NULL, 0);
    }
}

/* Fork a worker; its hello is read by gp_hello_wait. */
static kevo_status gp_fork(kevo_gpu *g, bool first, kevo_err *err)
{
    int down[2], up[2];
    if (pipe(down) != 0)
        return kevo_err_set(err, KEVO_ERR_WORKER, "unable to create a pipe: %s", strerror(errno));
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return kevo_err_set(err, KEVO_ERR_WORKER, "unable to create a pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(down[0]);
        close(down[1]);
        close(up[0]);
        close(up[1]);
        return kevo_err_set(err, KEVO_ERR_WORKER, "unable to start the GPU worker: %s", strerror(errno));
    }
    if (pid == 0) {
        kv_child_init(parent);
        close(down[1]);
        close(up[0]);
        kv_gpu_backend_pick()->worker_main(&g->cfg, down[0], up[1], first);
    }
    close(down[0]);
    close(up[1]);
    g->pid = pid;
    g->to_worker = down[1];
    g->from_worker = up[0];
    g->inflight = false;
    return KEVO_OK;
}

/* Wait for a forked worker's hello. */
static kevo_status gp_hello_wait(kevo_gpu *g, bool first, kevo_err *err)
{
    gp_hello hello;
    /* start-up times the baseline and the ceilings: allow minutes */
    int r = gp_read_deadline(g->from_worker, &hello, sizeof hello, kv_now() + (first ? 900.0 : 300.0), g->cfg.cancel);
    if (r == 2) {
        gp_kill(g);
        return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while the GPU worker started",
                            kv_cancelled(g->cfg.cancel));
    }
    if (r != 0) {
        char why[160];
        if (r == 1)
            kill(g->pid, SIGKILL);
        gp_reap(g, why, sizeof why);
        return kevo_err_set(err, KEVO_ERR_WORKER, "GPU worker did not start: %s",
                            r == 1 ? "no answer within the time limit" : why);
    }
    if (hello.status != KEVO_OK) {
        gp_reap(g, NULL, 0);
        hello.msg[sizeof hello.msg - 1] = '\0';
        return kevo_err_set(err, (kevo_status)hello.status, "%s", hello.msg);
    }
    if (first)
        g->info = hello.info;
    return KEVO_OK;
}

/* Fork a worker and wait for its hello. */
static kevo_status gp_spawn(kevo_gpu *g, bool first, kevo_err *err)
{
    kevo_status st = gp_fork(g, first, err);
    return st ? st : gp_hello_wait(g, first, err);
}

kevo_status kevo_gpu_list(kevo_gpu_device *out, int max, int *n, kv_cancel *cancel, kevo_err *err)
{
    *n = 0;
    int up[2];
    if (pipe(up) != 0)
        return kevo_err_set(err, KEVO_ERR_WORKER, "unable to create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(up[0]);
        close(up[1]);
        return kevo_err_set(err, KEVO_ERR_WORKER, "unable to look for a GPU: %s", strerror(errno));
    }
    if (pid == 0) {
        close(up[0]);
        kv_gpu_backend_pick()->probe_main(up[1]);
    }
    close(up[1]);
    gp_probe *pr = malloc(sizeof *pr);
    int r = pr ? gp_read_deadline(up[0], pr, sizeof *pr, kv_now() + 120.0, cancel) : -1;
    close(up[0]);
    if (r == 1 || r == 2) /* no answer in time, or the caller gave up waiting */
        kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    if (!pr)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st = KEVO_OK;
    if (r == 2) {
        st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while looking for GPUs",
                          kv_cancelled(cancel));
    } else if (r != 0) {
        st = kevo_err_set(err, KEVO_ERR_WORKER, "the GPU probe %s",
                          r == 1 ? "gave no answer within 120 s" : "ended without an answer");
    } else if (pr->status != KEVO_OK) {
        pr->msg[sizeof pr->msg - 1] = '\0';
        st = kevo_err_set(err, (kevo_status)pr->status, "%s", pr->msg);
    } else {
        for (int i = 0; i < pr->count && i < KEVO_GPU_MAX_DEVICES && i < max; i++) {
            out[i] = pr->dev[i];
            out[i].name[sizeof out[i].name - 1] = '\0';
            out[i].pci_bus[sizeof out[i].pci_bus - 1] = '\0';
        }
        *n = pr->count < max ? pr->count : max;
        if (*n > KEVO_GPU_MAX_DEVICES)
            *n = KEVO_GPU_MAX_DEVICES;
    }
    free(pr);
    return st;
}

kevo_status kevo_gpu_probe(int device, kv_cancel *cancel, kevo_err *err)
{
    kevo_gpu_device dev[KEVO_GPU_MAX_DEVICES];
    int n = 0;
    kevo_status st = kevo_gpu_list(dev, KEVO_GPU_MAX_DEVICES, &n, cancel, err);
    if (st)
        return st;
    if (device < 0 || device >= n)
        return kevo_err_set(err, KEVO_ERR_NO_GPU, "no CUDA device %d (this machine has %d)", device, n);
    return KEVO_OK;
}

kevo_status kevo_gpu_start(const kevo_gpu_config *cfg, kevo_gpu **out, kevo_gpu_info *info, kevo_err *err)
{
    *out = NULL;
    kevo_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    g->cfg = *cfg;
    g->pid = -1;
    signal(SIGPIPE, SIG_IGN); /* a dead worker must not kill kevo through a write */
    kevo_status st = gp_spawn(g, true, err);
    if (st) {
        free(g);
        return st;
    }
    if (info)
        *info = g->info;
    *out = g;
    return KEVO_OK;
}

kevo_status kevo_gpu_start_many(const kevo_gpu_config *cfg, int n, kevo_gpu **out, kevo_gpu_info *info,
                                kevo_err *err)
{
    for (int i = 0; i < n; i++)
        out[i] = NULL;
    signal(SIGPIPE, SIG_IGN);
    kevo_status st = KEVO_OK;
    int forked = 0;
    for (; forked < n && !st; forked++) {
        if (!(out[forked] = calloc(1, sizeof *out[forked]))) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        out[forked]->cfg = cfg[forked];
        out[forked]->pid = -1;
        st = gp_fork(out[forked], true, err);
        if (st) {
            free(out[forked]);
            out[forked] = NULL;
            kevo_err_prefix(err, "device %d", cfg[forked].device);
            break;
        }
    }
    for (int i = 0; i < forked && out[i]; i++) {
        kevo_err e2;
        kevo_status s2 = st ? KEVO_OK : gp_hello_wait(out[i], true, &e2);
        if (s2) {
            st = s2;
            *err = e2;
            kevo_err_prefix(err, "device %d", cfg[i].device);
        } else if (!st && info) {
            info[i] = out[i]->info;
        }
    }
    if (st)
        for (int i = 0; i < n; i++) {
            kevo_gpu_stop(out[i]);
            out[i] = NULL;
        }
    return st;
}

/* A live worker: a fresh one (no baseline, no ceilings: the first one's
 * figures stand) when the last one died or was killed. */
static kevo_status gp_ensure(kevo_gpu *g, kevo_err *err)
{
    if (g->pid > 0)
        return KEVO_OK;
    g->cfg.baseline = g->cfg.ceilings = false;
    kevo_status st = gp_spawn(g, false, err);
    if (!st)
        g->restarts++;
    return st;
}

/* Send one candidate (a GP_EVAL request and its cubin) to the worker; 0 on
 * success, -1 when the pipe broke. */
static int gp_send(kevo_gpu *g, const kevo_gpu_request *req)
{
    gp_request rq;
    memset(&rq, 0, sizeof rq);
    rq.kind = GP_EVAL;
    rq.req = *req;
    rq.req.cubin = NULL;
    rq.cubin_size = req->cubin_size;
    return gp_write(g->to_worker, &rq, sizeof rq) || gp_write(g->to_worker, req->cubin, req->cubin_size) ? -1 : 0;
}

kevo_status kevo_gpu_submit(kevo_gpu *g, const kevo_gpu_request *req, kevo_err *err)
{
    if (g->inflight)
        return kevo_err_set(err, KEVO_ERR_BUSY, "the GPU worker of device %d has an evaluation in flight",
                            g->cfg.device);
    for (int attempt = 0; attempt < 2; attempt++) {
        kevo_status st = gp_ensure(g, err);
        if (st)
            return st;
        if (gp_send(g, req)) {
            /* the worker was gone before it saw the request: start another once */
            gp_kill(g);
            continue;
        }
        g->inflight = true;
        g->cand = req->candidate_id;
        g->t_submit = kv_now();
        return KEVO_OK;
    }
    return kevo_err_set(err, KEVO_ERR_WORKER, "GPU worker keeps dying before it reads a request");
}

bool kevo_gpu_busy(const kevo_gpu *g)
{
    return g && g->inflight;
}

/* The evaluation in flight has ended (r: gp_read_deadline's answer for its
 * response rs): its result, the worker reaped or killed as needed. */
static void gp_finish(kevo_gpu *g, int r, const gp_response *rs, kevo_gpu_result *res)
{
    memset(res, 0, sizeof *res);
    res->median_ms = res->min_ms = res->max_ms = res->rel_err = res->max_abs_err = NAN;
    g->inflight = false;
    g->busy_s += kv_now() - g->t_submit;
    g->evaluated++;
    if (r == 1) {
        kill(g->pid, SIGKILL);
        gp_reap(g, NULL, 0);
        res->fail = KEVO_FAIL_EVAL_TIMEOUT;
        snprintf(res->msg, sizeof res->msg, "no result within %.0f s (hang or deadlock); worker restarted",
                 g->cfg.timeout_s);
    } else if (r != 0) {
        char why[160];
        gp_reap(g, why, sizeof why);
        res->fail = KEVO_FAIL_WORKER_CRASH;
        snprintf(res->msg, sizeof res->msg, "%s while evaluating; worker restarted", why);
    } else {
        *res = rs->res;
        if (rs->restart)
            gp_reap(g, NULL, 0);
    }
}

kevo_status kevo_gpu_wait(kevo_gpu *const *g, int n, double wait_s, int *which, kevo_gpu_result *res,
                          kevo_err *err)
{
    *which = -1;
    if (n < 0 || n > KEVO_GPU_MAX_DEVICES * 8)
        return kevo_err_set(err, KEVO_ERR_ARG, "kevo_gpu_wait takes 0..%d workers", KEVO_GPU_MAX_DEVICES * 8);
    struct pollfd pfd[KEVO_GPU_MAX_DEVICES * 8];
    int idx[KEVO_GPU_MAX_DEVICES * 8];
    double until = kv_now() + (wait_s > 0 ? wait_s : 0);
    bool looked = false;
    kv_cancel *cancel = NULL; /* the workers' caller's flag: the first worker's */
    for (int i = 0; i < n && !cancel; i++)
        cancel = g[i] ? g[i]->cfg.cancel : NULL;
    for (;;) {
        if (kv_cancelled(cancel)) {
            for (int i = 0; i < n; i++)
                if (g[i] && g[i]->inflight) {
                    g[i]->inflight = false;
                    gp_kill(g[i]);
                }
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while evaluating",
                                kv_cancelled(cancel));
        }
        double now = kv_now(), wake = until;
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (!g[i] || !g[i]->inflight)
                continue;
            double deadline = g[i]->t_submit + g[i]->cfg.timeout_s;
            if (now >= deadline) { /* a hang: its time is up */
                gp_finish(g[i], 1, NULL, res);
                *which = i;
                return KEVO_OK;
            }
            if (deadline < wake)
                wake = deadline;
            pfd[m] = (struct pollfd){.fd = g[i]->from_worker, .events = POLLIN};
            idx[m++] = i;
        }
        if (m == 0 || (looked && now >= until))
            return KEVO_OK;
        double left = wake - now;
        /* wake at least once a second (a signal may land between the check and the poll) */
        int ms = left <= 0 ? 0 : left > 1.0 ? 1000 : (int)(left * 1000) + 1;
        int pr = poll(pfd, (nfds_t)m, ms);
        looked = true;
        if (pr < 0 && errno != EINTR)
            return kevo_err_set(err, KEVO_ERR_WORKER, "waiting for the GPU workers: %s", strerror(errno));
        for (int k = 0; pr > 0 && k < m; k++) {
            if (!pfd[k].revents)
                continue;
            kevo_gpu *w = g[idx[k]];
            /* the answer has begun: the rest follows at once, within the worker's limit */
            gp_response *rs = malloc(sizeof *rs);
            if (!rs)
                return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            int r = gp_read_deadline(w->from_worker, rs, sizeof *rs, w->t_submit + w->cfg.timeout_s, w->cfg.cancel);
            if (r == 2) {
                free(rs);
                continue; /* the interruption is handled at the top */
            }
            gp_finish(w, r, rs, res);
            free(rs);
            *which = idx[k];
            return KEVO_OK;
        }
    }
}

double kevo_gpu_busy_s(const kevo_gpu *g)
{
    return g ? g->busy_s + (g->inflight ? kv_now() - g->t_submit : 0) : 0;
}

int kevo_gpu_evaluated(const kevo_gpu *g)
{
    return g ? g->evaluated : 0;
}

/* ---- the workers row of backend.h's kv_dev_ops: impl is kevo_gpu *[n] ---- */

static kevo_status gw_submit(kv_dev_group *grp, int g, const kevo_gpu_request *req, bool *taken, kevo_err *err)
{
    kevo_status st = kevo_gpu_submit(((kevo_gpu **)grp->impl)[g], req, err);
    *taken = !st;
    return st;
}

static kevo_status gw_wait(kv_dev_group *grp, double wait_s, int *which, int64_t *cand, bool *lost,
                           kevo_gpu_result *res, kevo_err *err)
{
    kevo_gpu *const *g = grp->impl;
    *cand = 0;
    *lost = false;
    kevo_status st = kevo_gpu_wait(g, grp->n, wait_s, which, res, err);
    if (!st && *which >= 0)
        *cand = g[*which]->cand;
    return st;
}

static bool gw_alive(const kv_dev_group *grp, int g)
{
    return ((kevo_gpu *const *)grp->impl)[g] != NULL;
}

static int gw_queued(const kv_dev_group *grp, int g)
{
    return kevo_gpu_busy(((kevo_gpu *const *)grp->impl)[g]) ? 1 : 0;
}

static void gw_stats(const kv_dev_group *grp, int g, int *evaluated, double *busy_s)
{
    const kevo_gpu *w = ((kevo_gpu *const *)grp->impl)[g];
    *evaluated = kevo_gpu_evaluated(w);
    *busy_s = kevo_gpu_busy_s(w);
}

/* One evaluation at a time per worker; a turn's wait: 2 ms while the
 * caller has other work under way, up to 1 s when only the workers are
 * busy (a result wakes it at once). */
const kv_dev_ops kv_dev_workers = {"workers", 1, 0.002, 1.0, gw_submit, gw_wait, gw_alive, gw_queued, gw_stats};

kevo_status kevo_gpu_eval(kevo_gpu *g, const kevo_gpu_request *req, kevo_gpu_result *res, kevo_err *err)
{
    memset(res, 0, sizeof *res);
    res->median_ms = res->min_ms = res->max_ms = res->rel_err = res->max_abs_err = NAN;
    kevo_status st = kevo_gpu_submit(g, req, err);
    if (st)
        return st;
    int which = -1;
    while (which < 0 && !st)
        st = kevo_gpu_wait(&g, 1, 3600.0, &which, res, err);
    return st;
}

kevo_status kevo_gpu_retime(kevo_gpu *g, const kevo_gpu_request *reqs, int n, int warmup, int rounds,
                            kevo_gpu_retime_result *out, kevo_err *err)
{
    return kevo_gpu_retime_peer(g, reqs, n, -1, warmup, rounds, out, NULL, err);
}

/* Read the re-timing's answers: out[0..n) and, with a peer, *peer_out;
 * each checked (gp_retime_result_check).  A worker that dies or hangs
 * fails what it did not answer. */
static kevo_status gp_retime_read(kevo_gpu *g, bool sent, int n, int rounds, kevo_gpu_retime_result *out,
                                  kevo_gpu_retime_result *peer_out, kevo_err *err)
{
    /* every kernel runs warmup + rounds times, each within the per-evaluation limit */
    const int total = n + (peer_out != NULL);
    double deadline = kv_now() + g->cfg.timeout_s * total;
    for (int i = 0; i < total; i++) {
        kevo_gpu_retime_result *dst = i < n ? &out[i] : peer_out;
        gp_retime_response rs;
        int r = sent ? gp_read_deadline(g->from_worker, &rs, sizeof rs, deadline, g->cfg.cancel) : -1;
        if (r == 2) {
            gp_kill(g);
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while re-timing",
                                kv_cancelled(g->cfg.cancel));
        }
        if (r != 0) {
            char why[160] = "";
            if (r == 1)
                kill(g->pid, SIGKILL);
            gp_reap(g, why, sizeof why);
            for (int k = i; k < total; k++) {
                kevo_gpu_retime_result *d = k < n ? &out[k] : peer_out;
                d->fail = r == 1 ? KEVO_FAIL_EVAL_TIMEOUT : KEVO_FAIL_WORKER_CRASH;
                snprintf(d->msg, sizeof d->msg, "re-timing: %s; worker restarted",
                         r == 1 ? "no result within the time limit" : why);
            }
            return KEVO_OK;
        }
        *dst = rs.res;
        gp_retime_result_check(dst, rounds);
        if (rs.restart && i == total - 1)
            gp_reap(g, NULL, 0);
    }
    return KEVO_OK;
}

kevo_status kevo_gpu_retime_peer(kevo_gpu *g, const kevo_gpu_request *reqs, int n, int peer, int warmup,
                                 int rounds, kevo_gpu_retime_result *out, kevo_gpu_retime_result *peer_out,
                                 kevo_err *err)
{
    gp_request head;
    memset(&head, 0, sizeof head);
    head.kind = GP_RETIME;
    head.count = n;
    head.rounds = rounds;
    head.warmup = warmup;
    head.has_peer = peer >= 0 || peer_out;
    head.peer = peer;
    char why[200];
    if (head.has_peer && !peer_out)
        return kevo_err_set(err, KEVO_ERR_ARG, "a re-timing with a peer needs somewhere to put its times");
    if (!gp_retime_check(&head, g->cfg.op, why, sizeof why))
        return kevo_err_set(err, KEVO_ERR_ARG, "%s", why);
    if (g->inflight)
        return kevo_err_set(err, KEVO_ERR_BUSY, "the GPU worker of device %d has an evaluation in flight",
                            g->cfg.device);
    for (int i = 0; i < n; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (peer_out)
        memset(peer_out, 0, sizeof *peer_out);
    kevo_status st = gp_ensure(g, err);
    if (st)
        return st;
    bool sent = gp_write(g->to_worker, &head, sizeof head) == 0;
    for (int i = 0; i < n && sent; i++)
        sent = gp_send(g, &reqs[i]) == 0;
    return gp_retime_read(g, sent, n, rounds, out, head.has_peer ? peer_out : NULL, err);
}

int kevo_gpu_restarts(const kevo_gpu *g)
{
    return g->restarts;
}

void kevo_gpu_stop(kevo_gpu *g)
{
    if (!g)
        return;
    if (g->pid > 0) {
        close(g->to_worker); /* the worker sees end of file and exits */
        g->to_worker = -1;
        int ws;
        double deadline = kv_now() + 10.0;
        while (waitpid(g->pid, &ws, WNOHANG) == 0 && kv_now() < deadline)
            nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
        kill(g->pid, SIGKILL);
        waitpid(g->pid, &ws, 0);
        close(g->from_worker);
    }
    free(g);
}
