/* gpu_sim.c — simulated GPUs, for tests of what drives the GPUs (several
 * GPUs, MPI ranks, resume) on machines without one.  KEVO_SIM_GPUS=N in
 * the environment makes the probe list N simulated devices and every GPU
 * worker answer without the driver: a candidate "takes" a time that is a
 * function of its machine code (the cubin's .text sections) and its launch
 * grids alone (so any GPU measures it alike, it differs from shape to
 * shape, and the line tables and symbol order that NVRTC writes
 * differently with and without a precompiled header, or from another
 * working folder, change nothing), and
 * the answer comes after a random delay (so GPUs finish in a different
 * order on each run).  KEVO_SIM_HANG=K makes simulated GPU K never answer
 * an evaluation (re-timings are answered): a kernel that never ends, or a
 * wedged GPU, for tests that a hang on one GPU does not hold the others
 * (the worker is killed at --eval-timeout and restarts, to hang again).
 * Nothing is verified: a simulated result says
 * nothing about a kernel, and the device's name, printed on start and
 * stored with the run, says so. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evaluator/backend.h"
#include "evaluator/gpu_proto.h"
#include "util/util.h"

#define SIM_NAME "kevo simulated GPU (KEVO_SIM_GPUS: nothing runs)"

int kv_gpu_sim_count(void)
{
    const char *v = getenv("KEVO_SIM_GPUS");
    int64_t n = 0;
    if (!v || !kv_parse_i64(v, &n) || n < 1)
        return 0;
    return n > KEVO_GPU_MAX_DEVICES ? KEVO_GPU_MAX_DEVICES : (int)n;
}

/* What every simulated device reports: an H100-like sm_90 part. */
static void sim_device(int ordinal, kevo_gpu_device *d)
{
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    snprintf(d->name, sizeof d->name, "%s", SIM_NAME);
    snprintf(d->pci_bus, sizeof d->pci_bus, "sim:%02d", ordinal);
    d->cc_major = 9;
    d->cc_minor = 0;
    d->sm_count = 132;
}

static void sim_probe_main(int wfd)
{
    int n = kv_gpu_sim_count();
    gp_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.status = KEVO_OK;
    pr.count = n;
    for (int i = 0; i < n; i++)
        sim_device(i, &pr.dev[i]);
    _exit(gp_write(wfd, &pr, sizeof pr) ? 3 : 0);
}

#define SIM_FNV_OFFSET 1469598103934665603ull
#define SIM_FNV_PRIME 1099511628211ull

static uint64_t sim_fnv(uint64_t h, const unsigned char *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * SIM_FNV_PRIME;
    return h;
}

static uint64_t sim_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* FNV-1a over the name and bytes of each ".text*" section of an ELF64
 * little-endian image c[0..n), in section-header order (the System V ABI's
 * section header table: e_shoff at 0x28, e_shentsize/e_shnum/e_shstrndx at
 * 0x3a; sh_name at +0, sh_type at +4, sh_offset at +0x18, sh_size at
 * +0x20).  false when c is not such an image or a header points outside it. */
static bool sim_text_hash(const unsigned char *c, uint64_t n, uint64_t *h)
{
    if (n < 0x40 || memcmp(c, "\x7f" "ELF", 4) != 0 || c[4] != 2 || c[5] != 1)
        return false;
    uint64_t shoff = sim_le(c + 0x28, 8), entsize = sim_le(c + 0x3a, 2), shnum = sim_le(c + 0x3c, 2),
             strndx = sim_le(c + 0x3e, 2);
    if (entsize < 0x28 || strndx >= shnum || shoff > n || shnum > (n - shoff) / entsize)
        return false;
    const unsigned char *strsh = c + shoff + strndx * entsize;
    uint64_t stroff = sim_le(strsh + 0x18, 8), strsize = sim_le(strsh + 0x20, 8);
    if (stroff > n || strsize > n - stroff)
        return false;
    bool any = false;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = c + shoff + i * entsize;
        uint64_t name = sim_le(sh, 4), type = sim_le(sh + 4, 4), off = sim_le(sh + 0x18, 8),
                 size = sim_le(sh + 0x20, 8);
        if (name >= strsize || !memchr(c + stroff + name, '\0', strsize - name))
            return false;
        const char *nm = (const char *)c + stroff + name;
        if (strncmp(nm, ".text", 5) != 0 || type == 8 /* SHT_NOBITS */)
            continue;
        if (off > n || size > n - off)
            return false;
        *h = sim_fnv(*h, (const unsigned char *)nm, strlen(nm) + 1);
        *h = sim_fnv(*h, c + off, size);
        any = true;
    }
    return any;
}

/* A candidate's simulated time: FNV-1a of its machine code (the whole
 * cubin when that is no ELF image with code) and its launches' grids (one
 * kernel times differently at another shape), onto 0.2..2.0 ms. */
static double sim_ms(const void *cubin, uint64_t n, const kevo_plan *plan)
{
    uint64_t h = SIM_FNV_OFFSET;
    if (!sim_text_hash(cubin, n, &h))
        h = sim_fnv(SIM_FNV_OFFSET, cubin, n);
    for (int l = 0; l < plan->nlaunches && l < KEVO_MAX_LAUNCHES; l++)
        for (int d = 0; d < 3; d++)
            h = (h ^ plan->launches[l].grid[d]) * SIM_FNV_PRIME;
    return 0.2 + 1.8 * (double)(h % 1000003) / 1000003.0;
}

/* Read a request's cubin; NULL at the end of the pipe. */
static void *sim_read_cubin(int rfd, uint64_t n)
{
    void *c = malloc(n ? n : 1);
    if (!c || gp_read(rfd, c, n)) {
        free(c);
        return NULL;
    }
    return c;
}

/* 1..40 ms, different in each worker process; KEVO_SIM_EVAL_MS=N (1..60000)
 * makes it N ms plus 0..N/10, an evaluation's length, to study how the
 * loop keeps GPUs busy (bench/sim_scaling.sh). */
static void sim_delay(uint64_t *rng)
{
    int64_t fixed = 0;
    const char *v = getenv("KEVO_SIM_EVAL_MS");
    if (v && (!kv_parse_i64(v, &fixed) || fixed < 1 || fixed > 60000))
        fixed = 0;
    long ms = fixed ? (long)fixed + (long)kv_rand_below(rng, (uint64_t)fixed / 10 + 1)
                    : 1 + (long)kv_rand_below(rng, 40);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The op's peers the worker runs (none when the config asks for none):
 * the baseline 2.0 ms, every other 1.5 ms, all checked; the one
 * KEVO_FAULT_INJECT=peer:NAME names disagrees with the reference (FAILED,
 * as a real worker stores it). */
static void sim_peers(const kevo_gpu_config *cfg, kevo_peer_set *ps)
{
    kevo_peer_set_init(ps);
    const char *inject = getenv("KEVO_FAULT_INJECT");
    for (int i = 0; cfg->baseline && i < cfg->op->npeers && i < KEVO_MAX_PEERS; i++) {
        const kevo_peer_desc *d = &cfg->op->peers[i];
        kevo_peer_fig *f = &ps->p[i];
        if (d->flags & KEVO_PEER_AFTER)
            continue;
        if (inject && strncmp(inject, "peer:", 5) == 0 && strcmp(inject + 5, d->name) == 0) {
            f->state = KEVO_PEER_FAILED;
            f->rel_err = 1.0;
            snprintf(f->detail, sizeof f->detail, "simulated: disagrees with the reference: rel_err 1.000e+00");
            continue;
        }
        f->state = KEVO_PEER_OK;
        f->median_ms = d->flags & KEVO_PEER_BASELINE ? 2.0 : 1.5;
        f->ci_lo_ms = f->median_ms * 0.99;
        f->ci_hi_ms = f->median_ms * 1.01;
        f->rel_err = 0.0;
        snprintf(f->detail, sizeof f->detail, "simulated");
    }
}

/* Whether this worker's GPU (ordinal) is the one KEVO_SIM_HANG names. */
static bool sim_hangs(int ordinal)
{
    const char *v = getenv("KEVO_SIM_HANG");
    int64_t k = -1;
    return v && kv_parse_i64(v, &k) && k == ordinal;
}

/* The re-timing's peer in each round (a GP_RETIME with has_peer; head
 * checked already): its start-up time (sim_peers: 2.0 ms the baseline,
 * 1.5 ms every other) times 1 + 0.002 * ((r % 5) - 2) in round r, so that
 * its paired interval has a width, the same in every run.  Under
 * KEVO_FAULT_INJECT=retime_peer (or peer:NAME, the peer's own spoiled
 * check) it fails its check, as a real worker's spoiled peer does. */
static void sim_retime_peer(const kevo_gpu_config *cfg, int peer, int rounds, kevo_gpu_retime_result *res)
{
    const kevo_peer_desc *d = &cfg->op->peers[peer];
    const char *inject = getenv("KEVO_FAULT_INJECT");
    if (inject && (strcmp(inject, "retime_peer") == 0 ||
                   (strncmp(inject, "peer:", 5) == 0 && strcmp(inject + 5, d->name) == 0))) {
        res->fail = KEVO_FAIL_WRONG_RESULT;
        snprintf(res->msg, sizeof res->msg,
                 "peer '%s' disagrees with the reference: rel_err 1.000e+00 (simulated)", d->name);
        return;
    }
    double base = d->flags & KEVO_PEER_BASELINE ? 2.0 : 1.5;
    res->rounds = rounds;
    for (int r = 0; r < rounds; r++)
        res->ms[r] = base * (1 + 0.002 * ((r % 5) - 2));
}

/* A GP_RETIME request: its candidates read, each timed as sim_ms in every
 * round, the peer asked for beside them (sim_retime_peer); a request that
 * gp_retime_check refuses is answered with each one's failure saying why,
 * as the real worker does (a count it cannot read past ends the worker). */
static void sim_retime(const kevo_gpu_config *cfg, const gp_request *rq, int rfd, int wfd, uint64_t *rng)
{
    if (rq->count < 1 || rq->count > KEVO_GPU_RETIME_MAX)
        _exit(6);
    char why[200];
    bool valid = gp_retime_check(rq, cfg->op, why, sizeof why);
    const int rounds = rq->rounds;
    const int total = rq->count + (rq->has_peer != 0);
    static gp_retime_response out[KEVO_GPU_RETIME_MAX + 1];
    memset(out, 0, sizeof out);
    for (int i = 0; i < rq->count; i++) {
        gp_request c;
        void *cubin = gp_read(rfd, &c, sizeof c) ? NULL : sim_read_cubin(rfd, c.cubin_size);
        if (!cubin)
            _exit(4);
        double ms = sim_ms(cubin, c.cubin_size, &c.req.plan);
        free(cubin);
        if (!valid)
            continue;
        out[i].res.rounds = rounds;
        for (int r = 0; r < rounds; r++)
            out[i].res.ms[r] = ms;
    }
    if (valid && rq->has_peer)
        sim_retime_peer(cfg, rq->peer, rounds, &out[rq->count].res);
    for (int i = 0; !valid && i < total; i++) {
        out[i].res.fail = KEVO_FAIL_LOAD_ERROR;
        snprintf(out[i].res.msg, sizeof out[i].res.msg, "re-timing refused: %.200s", why);
    }
    sim_delay(rng);
    for (int i = 0; i < total; i++)
        if (gp_write(wfd, &out[i], sizeof out[i]))
            _exit(5);
}

static void sim_worker_main(const kevo_gpu_config *cfg, int rfd, int wfd, bool first)
{
    (void)first; /* a simulated GPU times no peers */
    const bool hang = sim_hangs(cfg->device);
    uint64_t rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    gp_hello hello;
    memset(&hello, 0, sizeof hello);
    kevo_gpu_device d;
    sim_device(cfg->device, &d);
    kevo_gpu_info *in = &hello.info;
    snprintf(in->name, sizeof in->name, "%s", d.name);
    snprintf(in->pci_bus, sizeof in->pci_bus, "%s", d.pci_bus);
    in->cc_major = d.cc_major;
    in->cc_minor = d.cc_minor;
    in->sm_count = d.sm_count;
    in->max_smem_optin = 227 * 1024;
    in->l2_bytes = 50 << 20;
    in->mem_bytes = (int64_t)80 << 30;
    sim_peers(cfg, &in->peers);
    in->ref_check_rel_err = in->ref_check_nonfinite = NAN;
    in->peak_tflops = cfg->ceilings ? 800.0 : NAN;
    in->copy_tbps = cfg->ceilings ? 3.0 : NAN;
    hello.status = KEVO_OK;
    if (cfg->device < 0 || cfg->device >= kv_gpu_sim_count()) { /* as the driver answers */
        hello.status = KEVO_ERR_NO_GPU;
        snprintf(hello.msg, sizeof hello.msg, "no CUDA device %d (this machine has %d)", cfg->device,
                 kv_gpu_sim_count());
    }
    if (gp_write(wfd, &hello, sizeof hello) || hello.status != KEVO_OK)
        _exit(3);
    int reps = cfg->reps < 1 ? 1 : cfg->reps > KEVO_GPU_MAX_REPS ? KEVO_GPU_MAX_REPS : cfg->reps;
    for (;;) {
        gp_request rq;
        if (gp_read(rfd, &rq, sizeof rq))
            break;
        if (rq.kind == GP_RETIME) {
            sim_retime(cfg, &rq, rfd, wfd, &rng);
            continue;
        }
        void *cubin = sim_read_cubin(rfd, rq.cubin_size);
        if (!cubin)
            _exit(4);
        gp_response rs;
        memset(&rs, 0, sizeof rs);
        rs.res.median_ms = rs.res.min_ms = rs.res.max_ms = NAN;
        for (unsigned m = rq.req.maps; m; m &= m - 1)
            rs.res.checks++;
        rs.res.rel_err = rs.res.max_abs_err = 0.0;
        if (rq.req.time) {
            double ms = sim_ms(cubin, rq.cubin_size, &rq.req.plan);
            rs.res.median_ms = rs.res.min_ms = rs.res.max_ms = ms;
            rs.res.reps = reps;
            rs.res.passes = 1;
            for (int r = 0; r < reps; r++)
                rs.res.rep_ms[r] = ms;
        }
        free(cubin);
        while (hang) /* until the orchestrator's --eval-timeout kills this worker */
            pause();
        sim_delay(&rng);
        if (gp_write(wfd, &rs, sizeof rs))
            _exit(5);
    }
    _exit(0);
}

const kv_gpu_backend kv_backend_sim = {"sim", sim_probe_main, sim_worker_main};
