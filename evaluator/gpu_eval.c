/* gpu_eval.c — inside the GPU worker: the evaluation every op shares.  The
 * op's tensors are allocated, filled and checked from their descriptions
 * (kevo_op.tensors); a candidate's plan runs on them with the op's ABI
 * struct (kevo_op_gpu.args), its tensor maps encoded here; verification is
 * fresh inputs -> reference -> poison -> run -> checksums -> compare on
 * every map kind; then timing, the interleaved re-timing and the measured
 * ceilings.  What only the op knows (its arguments, its reference launch,
 * its same-run peers) is behind kevo_op.gpu (kernels/<op>/gpu.c). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"
#include "util/stats.h"
#include "util/util.h"

/* An ABI struct, aligned for its tensor maps. */
typedef struct wk_args {
    _Alignas(64) unsigned char b[WK_ARGS_MAX];
} wk_args;

CUresult wk_gen(wk_ctx *w, CUdeviceptr dst, unsigned long long count, uint64_t seed, unsigned stream)
{
    unsigned long long sd = seed;
    void *p[] = {&dst, &count, &sd, &stream};
    return wk_launch(w, w->io.f_gen, wk_blocks(count), 1, 1, 256, 1, 1, 0, p);
}

/* dst = a [rows, cols] tensor's values with rows padded to ld (zeros). */
static CUresult wk_gen_padded(wk_ctx *w, CUdeviceptr dst, int rows, int cols, int ld, uint64_t seed, unsigned stream)
{
    unsigned long long sd = seed;
    void *p[] = {&dst, &rows, &cols, &ld, &sd, &stream};
    return wk_launch(w, w->io.f_gen_padded, wk_blocks((unsigned long long)rows * ld), 1, 1, 256, 1, 1, 0, p);
}

CUresult wk_fill(wk_ctx *w, uint64_t seed, kevo_map_kind kind)
{
    const kevo_op *op = w->cfg.op;
    wk_io *io = &w->io;
    for (int i = 0; i < op->ntensors; i++)
        if (op->tensors[i].role == KEVO_TENSOR_INPUT)
            WK_TRY(wk_gen(w, io->t[i].p, io->t[i].count, seed, (unsigned)op->tensors[i].stream));
    for (int i = 0; i < op->ntensors; i++) {
        const wk_tensor *t = &io->t[i];
        if (op->tensors[i].role == KEVO_TENSOR_INPUT && t->pad) {
            int64_t cols = t->dims[op->tensors[i].rank - 1];
            WK_TRY(wk_gen_padded(w, t->pad, (int)(t->count / (uint64_t)cols), (int)cols, (int)t->ld, seed,
                                 (unsigned)op->tensors[i].stream));
        }
    }
    io->cur_map = kind;
    if (io->map >= 0) {
        const wk_tensor *m = &io->t[io->map];
        kevo_make_map(kind, (int64_t)m->count, io->map_users, io->map_ratio, seed ^ 0x5eedull, io->host_map);
        /* the host map is rewritten by the next fill: finish the copy first */
        WK_TRY(w->cu.cuMemcpyHtoDAsync(m->p, io->host_map, (size_t)m->count * sizeof(int32_t), w->stream));
    }
    return w->cu.cuStreamSynchronize(w->stream);
}

/* The op's ABI struct for a plan: its arguments and the plan's tensor maps
 * (see wk_encode_tmaps). */
static void wk_op_args(wk_ctx *w, bool padded, int num_sms, wk_args *a)
{
    memset(a, 0, sizeof *a);
    w->cfg.op->gpu->args(w, padded, num_sms, a->b);
}

/* Encode the plan's TMA descriptors into the ABI struct: the tensor's
 * dimensions innermost first (the padded row stride for a padded copy),
 * its storage dtype, the plan's box and swizzle.  Returns false with why[]
 * set when one cannot be made. */
static bool wk_encode_tmaps(wk_ctx *w, const kevo_plan *pl, wk_args *a, char *why, size_t n)
{
    const kevo_op *op = w->cfg.op;
    for (int i = 0; i < pl->ntmaps; i++) {
        const kevo_tmap_spec *t = &pl->tmaps[i];
        int ti = kevo_op_tensor_index(op, t->tensor);
        const kevo_tensor_desc *d = ti >= 0 ? &op->tensors[ti] : NULL;
        if (!d || !d->tmap) {
            snprintf(why, n, "plan asks for a tensor map of unknown tensor '%s'", t->tensor);
            return false;
        }
        if (d->rank > 3) { /* a plan's box has three dimensions */
            snprintf(why, n, "tensor map for '%s': rank %d, plans give boxes of at most 3", t->tensor, d->rank);
            return false;
        }
        const wk_tensor *x = &w->io.t[ti];
        bool pad = pl->pad_k && x->pad;
        cuuint32_t rank = (cuuint32_t)d->rank;
        cuuint64_t dims[3], strides[2];
        cuuint32_t box[3], estr[3] = {1, 1, 1};
        for (cuuint32_t k = 0; k < rank; k++)
            dims[k] = (cuuint64_t)x->dims[rank - 1 - k];
        if (pad)
            dims[0] = (cuuint64_t)x->ld;
        for (cuuint32_t k = 0; k + 1 < rank; k++)
            strides[k] = (k ? strides[k - 1] : (cuuint64_t)x->elem) * dims[k];
        for (cuuint32_t k = 0; k < rank; k++)
            box[k] = t->box[k];
        CUtensorMapSwizzle swz = t->swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                 : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                    : CU_TENSOR_MAP_SWIZZLE_NONE;
        CUtensorMapDataType dt =
            w->cfg.dtype == KEVO_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        CUresult r = w->cu.cuTensorMapEncodeTiled((CUtensorMap *)(void *)(a->b + d->tmap_offset), dt, rank,
                                                  (void *)(uintptr_t)(pad ? x->pad : x->p), dims, strides, box, estr,
                                                  CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            char buf[200];
            snprintf(why, n, "tensor map for '%s' (box %u,%u,%u, swizzle %d%s): %s", t->tensor, t->box[0], t->box[1],
                     t->box[2], t->swizzle, d->padded && !pl->pad_k ? ", rows not 16-byte aligned: needs pad_k" : "",
                     kv_cu_errstr(&w->cu, r, buf, sizeof buf));
            return false;
        }
    }
    return true;
}

/* The op's ABI struct for a plan over the current input set, its tensor
 * maps encoded; false with why[] set when a map cannot be made.  Built
 * after every fill: an op's arguments may depend on the input set
 * (w->io.cur_map). */
static bool wk_plan_args(wk_ctx *w, const kevo_plan *pl, wk_args *a, char *why, size_t n)
{
    wk_op_args(w, pl->pad_k != 0, w->info.sm_count, a);
    return wk_encode_tmaps(w, pl, a, why, n);
}

CUresult wk_reference(wk_ctx *w, double *ref_sumsq)
{
    wk_io *io = &w->io;
    WK_TRY(w->cfg.op->gpu->reference(w));
    WK_TRY(w->cu.cuMemsetD8Async(io->stats, 0, 8 * sizeof(double), w->stream));
    unsigned long long n = io->t[io->out].count;
    void *q[] = {&io->ref, &n, &io->stats};
    WK_TRY(wk_launch(w, io->f_sumsq, wk_blocks(n), 1, 1, 256, 1, 1, 0, q));
    WK_TRY(w->cu.cuMemcpyDtoHAsync(ref_sumsq, io->stats, sizeof(double), w->stream));
    return w->cu.cuStreamSynchronize(w->stream);
}

CUresult wk_ref_check_fill(wk_ctx *w)
{
    return wk_fill(w, w->cfg.seed ^ 0x7265665f636865ull, KEVO_MAP_SHUFFLED);
}

bool wk_ref_check_inject(const char *what)
{
    const char *inject = getenv("KEVO_FAULT_INJECT");
    return inject && strcmp(inject, what) == 0;
}

kevo_status wk_ref_check_verdict(wk_ctx *w, CUresult r, CUdeviceptr scratch, double bound, const char *plain,
                                 kevo_err *err)
{
    double st[4] = {0};
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemcpyDtoHAsync(st, w->io.stats, sizeof st, w->stream);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuStreamSynchronize(w->stream);
    if (scratch)
        w->cu.cuMemFree(scratch);
    KV_CU_TRY_AS(&w->cu, err, r, "checking the cuBLAS reference");
    double rel = st[2] > 0 ? sqrt(st[0] / st[2]) : (st[0] > 0 ? INFINITY : 0);
    snprintf(w->info.ref_check_against, sizeof w->info.ref_check_against, "%s", plain);
    w->info.ref_check_rel_err = rel;
    w->info.ref_check_nonfinite = st[3];
    if (st[3] > 0 || !(rel <= bound))
        return kevo_err_set(err, KEVO_ERR_INTERNAL,
                            "the cuBLAS reference disagrees with %s (rel_err %.3e, bound %.0e; %.0f non-finite): "
                            "a kevo bug, please report it with the shape",
                            plain, rel, bound, st[3]);
    return KEVO_OK;
}

/* Compare the output with ref.  st: d2, max|d|, elements over the bound, non-finite. */
static CUresult wk_compare(wk_ctx *w, double ref_sumsq, double st[4])
{
    wk_io *io = &w->io;
    double rel_bound, rtol;
    w->cfg.op->tolerance(w->cfg.dtype, &rel_bound, &rtol);
    CUdeviceptr out = io->t[io->out].p;
    unsigned long long n = io->t[io->out].count;
    float frtol = (float)rtol, fatol = (float)(rtol * sqrt(ref_sumsq / (double)n));
    WK_TRY(w->cu.cuMemsetD8Async(io->stats, 0, 8 * sizeof(double), w->stream));
    void *p[] = {&out, &io->ref, &n, &frtol, &fatol, &io->stats};
    WK_TRY(wk_launch(w, io->f_compare, wk_blocks(n), 1, 1, 256, 1, 1, 0, p));
    double h[5];
    WK_TRY(w->cu.cuMemcpyDtoHAsync(h, io->stats, sizeof h, w->stream));
    WK_TRY(w->cu.cuStreamSynchronize(w->stream));
    st[0] = h[1];
    st[1] = h[2];
    st[2] = h[3];
    st[3] = h[4];
    return CUDA_SUCCESS;
}

/* Poison the output with NaN. */
static CUresult wk_poison_out(wk_ctx *w)
{
    const wk_tensor *o = &w->io.t[w->io.out];
    return w->cu.cuMemsetD16Async(o->p, 0xFFFF, (size_t)o->count * o->elem / 2, w->stream);
}

CUresult wk_check_peer(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, double ref2, double *rel,
                       double *nonfinite)
{
    double st[4] = {0};
    WK_TRY(wk_poison_out(w));
    WK_TRY(fn(w, arg));
    WK_TRY(w->cu.cuStreamSynchronize(w->stream));
    WK_TRY(wk_compare(w, ref2, st));
    *rel = ref2 > 0 ? sqrt(st[0] / ref2) : NAN;
    *nonfinite = st[3];
    return CUDA_SUCCESS;
}

void wk_peer_error(kevo_peer_fig *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
    f->state = KEVO_PEER_ERROR;
    f->median_ms = f->ci_lo_ms = f->ci_hi_ms = NAN;
}

/* A run function and its argument, as one argument: a peer to spoil, or
 * one kernel of a re-timing (wk_time_interleaved takes one function). */
typedef struct wk_call {
    CUresult (*fn)(wk_ctx *, void *);
    void *arg;
} wk_call;

static CUresult wk_call_run(wk_ctx *w, void *arg)
{
    const wk_call *c = arg;
    return c->fn(w, c->arg);
}

/* A peer run whose output is then zeroed: KEVO_FAULT_INJECT=peer:NAME's
 * spoiled peer, for the tests. */
static CUresult wk_spoiled_run(wk_ctx *w, void *arg)
{
    const wk_call *sp = arg;
    WK_TRY(sp->fn(w, sp->arg));
    const wk_tensor *o = &w->io.t[w->io.out];
    return w->cu.cuMemsetD8Async(o->p, 0, (size_t)o->count * o->elem, w->stream);
}

CUresult wk_peer_run(wk_ctx *w, int peer, CUresult (*fn)(wk_ctx *, void *), void *arg, double ref2)
{
    kevo_peer_fig *f = &w->info.peers.p[peer];
    double nonfinite = 0, rel = NAN;
    bool sticky = false;
    char buf[160], inject[8 + KEVO_PEER_NAME_MAX];
    f->median_ms = f->ci_lo_ms = f->ci_hi_ms = NAN;
    snprintf(inject, sizeof inject, "peer:%s", w->cfg.op->peers[peer].name);
    wk_call sp = {fn, arg};
    CUresult r = wk_ref_check_inject(inject) ? wk_check_peer(w, wk_spoiled_run, &sp, ref2, &rel, &nonfinite)
                                             : wk_check_peer(w, fn, arg, ref2, &rel, &nonfinite);
    f->rel_err = rel;
    if (r != CUDA_SUCCESS) {
        wk_fail_of(r, &sticky);
        if (sticky)
            return r;
        char was[KEVO_PEER_DETAIL_MAX];
        snprintf(was, sizeof was, "%s", f->detail);
        wk_peer_error(f, "%s%s%s", was, was[0] ? "; " : "", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
        return w->cu.cuStreamSynchronize(w->stream) == CUDA_SUCCESS ? CUDA_SUCCESS : r;
    }
    double bound, rtol;
    w->cfg.op->tolerance(w->cfg.dtype, &bound, &rtol);
    if (nonfinite > 0 || !(rel <= bound)) {
        size_t used = strlen(f->detail);
        snprintf(f->detail + used, sizeof f->detail - used,
                 "%sdisagrees with the reference: rel_err %.3e (bound %.1e), %.0f non-finite", used ? "; " : "", rel,
                 bound, nonfinite);
        f->state = KEVO_PEER_FAILED;
        return CUDA_SUCCESS;
    }
    double *all = malloc((size_t)w->cfg.reps * sizeof *all), lo, hi;
    if (!all) {
        wk_peer_error(f, "out of memory");
        return CUDA_SUCCESS;
    }
    r = wk_time(w, fn, arg, w->cfg.warmup, w->cfg.reps, &f->median_ms, &lo, &hi, all);
    if (r == CUDA_SUCCESS) {
        kv_median_ci(all, w->cfg.reps, 0x7065657273ull, KV_BOOTSTRAP, &f->ci_lo_ms, &f->ci_hi_ms);
        f->state = KEVO_PEER_OK;
    }
    free(all);
    if (r != CUDA_SUCCESS) {
        wk_fail_of(r, &sticky);
        if (sticky)
            return r;
        wk_peer_error(f, "timing: %s", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
        return w->cu.cuStreamSynchronize(w->stream) == CUDA_SUCCESS ? CUDA_SUCCESS : r;
    }
    return CUDA_SUCCESS;
}

/* *slot += the checksum of `bytes` bytes at p, salted with k. */
static CUresult wk_checksum(wk_ctx *w, CUdeviceptr p, size_t bytes, unsigned long long k, CUdeviceptr slot)
{
    unsigned long long n = bytes / 4, salt = k << 56;
    void *a[] = {&p, &n, &salt, &slot};
    return n > 0 ? wk_launch(w, w->io.f_checksum, wk_blocks(n), 1, 1, 256, 1, 1, 0, a) : CUDA_SUCCESS;
}

/* What a candidate's run must leave as it found it, as two checksums
 * computed on the device into slots 6 and 7 of the stats buffer (the
 * comparison uses the first five): sum[0] of every buffer a kernel must not
 * write (the inputs, their padded copies, the map, the op's own buffers
 * that carry a check's state, and the reference the output is compared
 * with: a kernel reaching past its tensors must not rewrite the answer it
 * is judged by), sum[1] of the guard bytes around the output and the
 * workspace (wk_guard_fill). */
static CUresult wk_inputs_sum(wk_ctx *w, unsigned long long sum[2])
{
    const kevo_op *op = w->cfg.op;
    wk_io *io = &w->io;
    CUdeviceptr slot = io->stats + 7 * sizeof(double), gslot = io->stats + 6 * sizeof(double);
    unsigned long long k = 0;
    WK_TRY(w->cu.cuMemsetD8Async(gslot, 0, 2 * sizeof(unsigned long long), w->stream));
    for (int i = 0; i < op->ntensors; i++) {
        const wk_tensor *t = &io->t[i];
        if (op->tensors[i].role == KEVO_TENSOR_OUTPUT)
            continue;
        WK_TRY(wk_checksum(w, t->p, (size_t)t->count * t->elem, k++, slot));
        if (t->pad)
            WK_TRY(wk_checksum(w, t->pad, (size_t)t->pad_count * t->elem, k++, slot));
    }
    WK_TRY(wk_checksum(w, io->ref, (size_t)io->t[io->out].count * sizeof(float), k++, slot));
    CUdeviceptr own[8];
    size_t own_bytes[8];
    int nown = op->gpu->owned ? op->gpu->owned(w, own, own_bytes, 8) : 0;
    for (int i = 0; i < nown; i++)
        WK_TRY(wk_checksum(w, own[i], own_bytes[i], k++, slot));
    const wk_tensor *o = &io->t[io->out];
    size_t out_bytes = (size_t)o->count * o->elem;
    CUdeviceptr guards[4] = {io->out_alloc, o->p + out_bytes, io->ws_alloc, io->ws + io->ws_cap};
    for (int i = 0; i < 4; i++)
        if (guards[i])
            WK_TRY(wk_checksum(w, guards[i], WK_GUARD, (unsigned long long)i, gslot));
    WK_TRY(w->cu.cuMemcpyDtoHAsync(sum, gslot, 2 * sizeof *sum, w->stream));
    WK_TRY(w->cu.cuStreamSynchronize(w->stream));
    unsigned long long g = sum[0];
    sum[0] = sum[1];
    sum[1] = g;
    return CUDA_SUCCESS;
}

/* Refill the guard bytes around the output and the workspace with their
 * pattern (a candidate that wrote them failed; the next one finds them
 * clean). */
static CUresult wk_guard_fill(wk_ctx *w)
{
    wk_io *io = &w->io;
    const wk_tensor *o = &io->t[io->out];
    size_t out_bytes = (size_t)o->count * o->elem;
    CUdeviceptr guards[4] = {io->out_alloc, o->p + out_bytes, io->ws_alloc, io->ws + io->ws_cap};
    for (int i = 0; i < 4; i++)
        if (guards[i])
            WK_TRY(w->cu.cuMemsetD8Async(guards[i], 0xA5, WK_GUARD, w->stream));
    return CUDA_SUCCESS;
}

/* Run a candidate's plan once on the current buffers. */
typedef struct wk_run_arg {
    const wk_cand *c;
    wk_args a;
} wk_run_arg;

static CUresult wk_run_plan(wk_ctx *w, void *arg)
{
    wk_run_arg *ra = arg;
    const kevo_plan *pl = ra->c->plan;
    /* a new tag for flags the kernels keep in the workspace, never reused
     * by a later candidate on the same workspace; never -1 (the poison) */
    if (++w->io.launch_seq <= 0)
        w->io.launch_seq = 1;
    memcpy(ra->a.b + w->cfg.op->gpu->seq_offset, &w->io.launch_seq, sizeof(int));
    void *p[] = {ra->a.b};
    for (int i = 0; i < pl->nlaunches; i++) {
        const kevo_launch *l = &pl->launches[i];
        WK_TRY(wk_launch(w, ra->c->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                         l->smem, p));
    }
    return CUDA_SUCCESS;
}

/* A workspace of at least `bytes` (rounded up to 256), between guards of
 * WK_GUARD bytes (wk_guard_fill). */
static CUresult wk_ensure_ws(wk_ctx *w, size_t bytes)
{
    wk_io *io = &w->io;
    if (bytes <= io->ws_cap)
        return CUDA_SUCCESS;
    if (io->ws_alloc)
        w->cu.cuMemFree(io->ws_alloc);
    io->ws = io->ws_alloc = 0;
    io->ws_cap = 0;
    size_t cap = (bytes + 255) & ~(size_t)255;
    WK_TRY(w->cu.cuMemAlloc(&io->ws_alloc, cap + 2 * WK_GUARD));
    io->ws = io->ws_alloc + WK_GUARD;
    io->ws_cap = cap;
    return wk_guard_fill(w);
}

/* Seed for one check: distinct per request and per map kind. */
static uint64_t wk_check_seed(uint64_t seed, int kind)
{
    uint64_t st = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(kind + 7));
    return kv_rand_next(&st);
}

/* Add the wall time since *t to res's phase k (ms); *t = now. */
static void wk_phase(double *t, kevo_gpu_result *res, kevo_gpu_phase k)
{
    double now = kv_now();
    res->phase_ms[k] += 1e3 * (now - *t);
    *t = now;
}

/* KEVO_WS_DUMP=DIR, a profiling aid: the workspace as the candidate's last
 * run left it (the last timed repetition, or the last check when untimed),
 * to DIR/ws_<candidate id>.bin, never over an existing file.  A template
 * tree built to trace (bench/ws_trace.py tree: lce_ws/trace.cuh,
 * docs/lce_ws.md v30) leaves its timestamps there; bench/ws_trace.py reads
 * them. */
static void wk_ws_dump(wk_ctx *w, const kevo_gpu_request *req)
{
    const char *dir = getenv("KEVO_WS_DUMP");
    size_t n = (size_t)req->plan.workspace_bytes;
    if (!dir || !*dir || n == 0 || n > w->io.ws_cap)
        return;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/ws_%lld.bin", dir, (long long)req->candidate_id) >= (int)sizeof path)
        return;
    void *h = malloc(n);
    if (!h)
        return;
    if (w->cu.cuMemcpyDtoHAsync(h, w->io.ws, n, w->stream) == CUDA_SUCCESS &&
        w->cu.cuStreamSynchronize(w->stream) == CUDA_SUCCESS) {
        FILE *f = fopen(path, "wbx");
        if (!f || fwrite(h, 1, n, f) != n)
            fprintf(stderr, "kevo: KEVO_WS_DUMP: cannot write %s\n", path);
        if (f)
            fclose(f);
    }
    free(h);
}

void wk_op_eval(wk_ctx *w, const kevo_gpu_request *req, const wk_cand *c, kevo_gpu_result *res, bool *sticky)
{
    double t = kv_now();
    wk_io *io = &w->io;
    double rel_bound, rtol;
    w->cfg.op->tolerance(w->cfg.dtype, &rel_bound, &rtol);
    CUresult r = wk_ensure_ws(w, req->plan.workspace_bytes ? req->plan.workspace_bytes : 256);
    if (r != CUDA_SUCCESS) {
        wk_result_cuda(w, res, r, "allocating the workspace", sticky);
        res->fail = KEVO_FAIL_RESOURCE_EXCEEDED;
        return;
    }
    wk_run_arg ra = {.c = c};
    if (!wk_plan_args(w, &req->plan, &ra.a, res->msg, sizeof res->msg)) { /* rebuilt after every fill */
        res->fail = KEVO_FAIL_LOAD_ERROR;
        return;
    }
    size_t out_elems = (size_t)io->t[io->out].count;
    res->rel_err = 0.0;
    res->max_abs_err = 0.0;
    bool first = true;
    for (int kind = 0; kind < 3; kind++) {
        if (!(req->maps & (1u << kind)))
            continue;
        double ref2 = 0, st[4];
        unsigned long long sum_before[2] = {0, 0}, sum_after[2] = {0, 0};
        r = wk_fill(w, wk_check_seed(req->seed, kind), (kevo_map_kind)kind);
        wk_phase(&t, res, KEVO_PHASE_FILL);
        if (r == CUDA_SUCCESS)
            r = wk_reference(w, &ref2);
        wk_phase(&t, res, KEVO_PHASE_REF);
        if (r == CUDA_SUCCESS && !wk_plan_args(w, &req->plan, &ra.a, res->msg, sizeof res->msg)) {
            res->fail = KEVO_FAIL_LOAD_ERROR;
            return;
        }
        if (r == CUDA_SUCCESS)
            r = wk_guard_fill(w);
        if (r == CUDA_SUCCESS)
            r = wk_inputs_sum(w, sum_before);
        wk_phase(&t, res, KEVO_PHASE_SUM);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "preparing a check (reference side)", sticky);
            return;
        }
        /* poison: NaN in every output element; NaN in every workspace byte
         * before the first check only.  The later checks (new inputs) find
         * the workspace as the previous run left it, as a library caller's
         * reused workspace is: a kernel that trusts stale flags or partial
         * results there reads the previous inputs' values and fails. */
        r = wk_poison_out(w);
        if (r == CUDA_SUCCESS && first)
            r = w->cu.cuMemsetD8Async(io->ws, 0xFF, io->ws_cap, w->stream);
        first = false;
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "poisoning the output", sticky);
            return;
        }
        r = wk_run_plan(w, &ra);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "launch", sticky);
            return;
        }
        r = w->cu.cuStreamSynchronize(w->stream);
        wk_phase(&t, res, KEVO_PHASE_RUN);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "kernel", sticky);
            return;
        }
        r = wk_compare(w, ref2, st);
        wk_phase(&t, res, KEVO_PHASE_CMP);
        if (r == CUDA_SUCCESS)
            r = wk_inputs_sum(w, sum_after);
        wk_phase(&t, res, KEVO_PHASE_SUM);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "comparing", sticky);
            return;
        }
        res->checks++;
        /* before the output is judged: a kernel may hide its writes in a right answer */
        if (sum_after[0] != sum_before[0]) {
            res->fail = KEVO_FAIL_INPUT_MODIFIED;
            snprintf(res->msg, sizeof res->msg,
                     "the kernel wrote an input tensor, the reference or the evaluator's state (checksum changed, "
                     "%s map)",
                     kevo_map_name((kevo_map_kind)kind));
            return;
        }
        if (sum_after[1] != sum_before[1]) {
            res->fail = KEVO_FAIL_OUT_OF_BOUNDS;
            snprintf(res->msg, sizeof res->msg,
                     "the kernel wrote past its output or workspace (the guard bytes around them changed, %s map)",
                     kevo_map_name((kevo_map_kind)kind));
            return;
        }
        double rel = ref2 > 0 ? sqrt(st[0] / ref2) : sqrt(st[0]);
        if (rel > res->rel_err)
            res->rel_err = rel;
        if (st[1] > res->max_abs_err)
            res->max_abs_err = st[1];
        if (st[3] > 0) {
            res->fail = KEVO_FAIL_NAN_OUTPUT;
            res->bad_elems = (int64_t)st[3];
            snprintf(res->msg, sizeof res->msg, "%.0f of %zu outputs NaN/Inf or never written (%s map)", st[3],
                     out_elems, kevo_map_name((kevo_map_kind)kind));
            return;
        }
        if (rel > rel_bound || st[2] > 0) {
            res->fail = KEVO_FAIL_WRONG_RESULT;
            res->bad_elems = (int64_t)st[2];
            snprintf(res->msg, sizeof res->msg,
                     "rel_err %.3e (bound %.1e), %.0f elements beyond %.1e*|ref|+atol, max |d| %.3e (%s map)", rel,
                     rel_bound, st[2], rtol, st[1], kevo_map_name((kevo_map_kind)kind));
            return;
        }
    }
    if (!req->time) {
        wk_ws_dump(w, req);
        return;
    }
    /* timing inputs: the run's fixed seed, sorted map, for every candidate alike */
    r = wk_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    wk_phase(&t, res, KEVO_PHASE_FILL);
    if (r == CUDA_SUCCESS && !wk_plan_args(w, &req->plan, &ra.a, res->msg, sizeof res->msg)) {
        res->fail = KEVO_FAIL_LOAD_ERROR;
        return;
    }
    /* passes until one is steady, keeping the one with the lowest median */
    static double rep_ms[KEVO_GPU_MAX_REPS]; /* one evaluation at a time per process */
    res->passes = 0;
    while (r == CUDA_SUCCESS && res->passes < KEVO_GPU_TIMING_PASSES) {
        double med, lo, hi;
        r = wk_time(w, wk_run_plan, &ra, w->cfg.warmup, w->cfg.reps, &med, &lo, &hi, rep_ms);
        if (r != CUDA_SUCCESS)
            break;
        if (res->passes++ == 0 || med < res->median_ms) {
            res->median_ms = med;
            res->min_ms = lo;
            res->max_ms = hi;
            memcpy(res->rep_ms, rep_ms, sizeof rep_ms);
        }
        if (kevo_gpu_timing_steady(med, lo))
            break;
    }
    wk_phase(&t, res, KEVO_PHASE_TIME);
    if (r != CUDA_SUCCESS) {
        wk_result_cuda(w, res, r, "timing", sticky);
        return;
    }
    res->reps = w->cfg.reps;
    wk_ws_dump(w, req);
}

/* The re-timing's peer `peer` made ready on the current inputs
 * (kevo_op_gpu.peer_open) and checked once: a run with the output poisoned
 * compared with the reference of these inputs (KEVO_FAULT_INJECT=
 * retime_peer spoils that run: the tests' peer that fails here).  *run is
 * NULL, with res->fail and res->msg saying why, when it is not to be timed.
 * Returns a driver error that leaves the context unusable, else
 * CUDA_SUCCESS. */
static CUresult wk_retime_peer_open(wk_ctx *w, int peer, void **run, kevo_gpu_retime_result *res)
{
    const kevo_op *op = w->cfg.op;
    const kevo_op_gpu *g = op->gpu;
    const char *name = op->peers[peer].name;
    char why[200] = "", buf[160];
    bool sticky = false;
    *run = NULL;
    if (!g->peer_open || !g->peer_run || !g->peer_close) {
        res->fail = KEVO_FAIL_LOAD_ERROR;
        snprintf(res->msg, sizeof res->msg, "peer '%s': %s cannot run a peer again beside candidates", name,
                 op->name);
        return CUDA_SUCCESS;
    }
    CUresult r = g->peer_open(w, peer, run, why, sizeof why);
    const char *stage = "could not be prepared";
    double ref2 = 0, rel = NAN, nonfinite = 0;
    if (r == CUDA_SUCCESS) {
        stage = "its check";
        wk_call sp = {g->peer_run, *run};
        r = wk_reference(w, &ref2);
        if (r == CUDA_SUCCESS)
            r = wk_ref_check_inject("retime_peer") ? wk_check_peer(w, wk_spoiled_run, &sp, ref2, &rel, &nonfinite)
                                                   : wk_check_peer(w, g->peer_run, *run, ref2, &rel, &nonfinite);
        if (r != CUDA_SUCCESS)
            snprintf(why, sizeof why, "%s", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
    }
    if (r != CUDA_SUCCESS) {
        res->fail = wk_fail_of(r, &sticky);
        snprintf(res->msg, sizeof res->msg, "peer '%s' %s: %.180s", name, stage, why);
    } else {
        double bound, rtol;
        op->tolerance(w->cfg.dtype, &bound, &rtol);
        if (nonfinite > 0 || !(rel <= bound)) {
            res->fail = nonfinite > 0 ? KEVO_FAIL_NAN_OUTPUT : KEVO_FAIL_WRONG_RESULT;
            snprintf(res->msg, sizeof res->msg,
                     "peer '%s' disagrees with the reference: rel_err %.3e (bound %.1e), %.0f non-finite", name, rel,
                     bound, nonfinite);
        }
    }
    if (res->fail != KEVO_FAIL_NONE) {
        if (!sticky && *run)
            g->peer_close(w, *run);
        *run = NULL;
        if (sticky)
            return r;
        return w->cu.cuStreamSynchronize(w->stream);
    }
    return CUDA_SUCCESS;
}

/* Time n loaded candidates interleaved on the timing inputs (the run's
 * seed, sorted map), each with its own arguments (tensor maps) and one
 * workspace large enough for all; with a peer, it runs last in each
 * round. */
void wk_op_retime(wk_ctx *w, const kevo_gpu_request *reqs, const wk_cand *c, int n, int peer, int warmup,
                  int rounds, kevo_gpu_retime_result *out, kevo_gpu_retime_result *peer_out, bool *sticky)
{
    static wk_run_arg ra[KEVO_GPU_RETIME_MAX]; /* large; one re-timing at a time per process */
    wk_call items[KEVO_GPU_RETIME_MAX + 1];
    void *args[KEVO_GPU_RETIME_MAX + 1];
    void *prun = NULL;
    uint64_t ws = 256;
    for (int i = 0; i < n; i++)
        if (reqs[i].plan.workspace_bytes > ws)
            ws = reqs[i].plan.workspace_bytes;
    CUresult r = wk_ensure_ws(w, ws);
    if (r == CUDA_SUCCESS) /* the inputs first: the arguments and the peer's copies depend on them */
        r = wk_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    bool ok = r == CUDA_SUCCESS;
    for (int i = 0; i < n && ok; i++) {
        ra[i].c = &c[i];
        items[i] = (wk_call){wk_run_plan, &ra[i]};
        args[i] = &items[i];
        if (!wk_plan_args(w, &reqs[i].plan, &ra[i].a, out[i].msg, sizeof out[i].msg)) {
            out[i].fail = KEVO_FAIL_LOAD_ERROR;
            ok = false;
        }
    }
    if (ok && peer >= 0)
        r = wk_retime_peer_open(w, peer, &prun, peer_out);
    if (!ok && r == CUDA_SUCCESS) {
        for (int i = 0; i < n; i++)
            if (out[i].fail == KEVO_FAIL_NONE) {
                out[i].fail = KEVO_FAIL_LOAD_ERROR;
                snprintf(out[i].msg, sizeof out[i].msg, "not timed: another candidate's arguments could not be made");
            }
        if (peer >= 0) {
            peer_out->fail = KEVO_FAIL_LOAD_ERROR;
            snprintf(peer_out->msg, sizeof peer_out->msg, "not timed: a candidate of the re-timing did not load");
        }
        return;
    }
    const int total = n + (prun != NULL);
    if (prun) {
        items[n] = (wk_call){w->cfg.op->gpu->peer_run, prun};
        args[n] = &items[n];
    }
    double *ms = ok && r == CUDA_SUCCESS ? malloc((size_t)total * (size_t)rounds * sizeof *ms) : NULL;
    if (ok && r == CUDA_SUCCESS && !ms)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = wk_time_interleaved(w, wk_call_run, args, total, warmup, rounds, ms);
    for (int i = 0; i < n + (peer >= 0); i++) {
        kevo_gpu_retime_result *o = i < n ? &out[i] : peer_out;
        if (i == n && !prun && r == CUDA_SUCCESS)
            break; /* the peer's failure is said already */
        if (r != CUDA_SUCCESS) {
            kevo_gpu_result res;
            memset(&res, 0, sizeof res);
            wk_result_cuda(w, &res, r, "re-timing", sticky);
            o->fail = res.fail;
            snprintf(o->msg, sizeof o->msg, "%.255s", res.msg);
            continue;
        }
        o->rounds = rounds;
        memcpy(o->ms, ms + (size_t)i * rounds, (size_t)rounds * sizeof *ms);
    }
    if (prun && !*sticky)
        w->cfg.op->gpu->peer_close(w, prun);
    free(ms);
}

/* ---- measured ceilings ---- */

typedef struct wk_peak_arg {
    CUdeviceptr a, b, c, src, dst;
    size_t copy_bytes;
    int n;
} wk_peak_arg;

static CUresult wk_peak_gemm(wk_ctx *w, void *arg)
{
    wk_peak_arg *p = arg;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType dt = w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasStatus_t cs = w->cb.cublasGemmEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->n, p->n, &alpha,
                                           (const void *)(uintptr_t)p->a, dt, p->n, (const void *)(uintptr_t)p->b,
                                           dt, p->n, &beta, (void *)(uintptr_t)p->c, dt, p->n, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

static CUresult wk_peak_copy(wk_ctx *w, void *arg)
{
    wk_peak_arg *p = arg;
    return w->cu.cuMemcpyDtoDAsync(p->dst, p->src, p->copy_bytes, w->stream);
}

/* The GEMM's median over p->n^3 on random data into *med; p->a, p->b and
 * p->c keep what was allocated (the caller frees them). */
static CUresult wk_ceiling_gemm(wk_ctx *w, wk_peak_arg *p, double *med)
{
    size_t mat = (size_t)p->n * p->n * 2;
    double lo, hi;
    WK_TRY(w->cu.cuMemAlloc(&p->a, mat));
    WK_TRY(w->cu.cuMemAlloc(&p->b, mat));
    WK_TRY(w->cu.cuMemAlloc(&p->c, mat));
    WK_TRY(wk_gen(w, p->a, (unsigned long long)p->n * p->n, 11, 0));
    WK_TRY(wk_gen(w, p->b, (unsigned long long)p->n * p->n, 12, 0));
    return wk_time(w, wk_peak_gemm, p, 3, 10, med, &lo, &hi, NULL);
}

/* The copy's median over p->copy_bytes into *med; p->src and p->dst keep
 * what was allocated (the caller frees them). */
static CUresult wk_ceiling_copy(wk_ctx *w, wk_peak_arg *p, double *med)
{
    double lo, hi;
    WK_TRY(w->cu.cuMemAlloc(&p->src, p->copy_bytes));
    WK_TRY(w->cu.cuMemAlloc(&p->dst, p->copy_bytes));
    return wk_time(w, wk_peak_copy, p, 3, 10, med, &lo, &hi, NULL);
}

/* cuBLAS GEMM 8192^3 on random data, and a 1 GiB device-to-device copy. */
static void wk_ceilings(wk_ctx *w)
{
    wk_peak_arg p = {.n = 8192, .copy_bytes = (size_t)1 << 30};
    double med = NAN;
    if (wk_ceiling_gemm(w, &p, &med) == CUDA_SUCCESS)
        w->info.peak_tflops = 2.0 * p.n * (double)p.n * p.n / (med * 1e-3) / 1e12;
    if (p.a)
        w->cu.cuMemFree(p.a);
    if (p.b)
        w->cu.cuMemFree(p.b);
    if (p.c)
        w->cu.cuMemFree(p.c);
    if (wk_ceiling_copy(w, &p, &med) == CUDA_SUCCESS)
        w->info.copy_tbps = 2.0 * (double)p.copy_bytes / (med * 1e-3) / 1e12;
    if (p.src)
        w->cu.cuMemFree(p.src);
    if (p.dst)
        w->cu.cuMemFree(p.dst);
}

/* ---- set-up ---- */

/* Size the op's tensors at the run's shape into w->io (nothing allocated). */
static kevo_status wk_size_tensors(wk_ctx *w, kevo_err *err)
{
    const kevo_op *op = w->cfg.op;
    wk_io *io = &w->io;
    io->out = io->map = -1;
    if (op->ntensors < 1 || op->ntensors > KEVO_OP_MAX_TENSORS)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "op '%s' has %d tensors", op->name, op->ntensors);
    for (int i = 0; i < op->ntensors; i++) {
        const kevo_tensor_desc *d = &op->tensors[i];
        wk_tensor *t = &io->t[i];
        kevo_status st = kevo_tensor_shape(d, &w->cfg.shape, t->dims, &t->ld, &t->count, err);
        if (st)
            return st;
        t->elem = d->role == KEVO_TENSOR_MAP ? sizeof(int32_t) : 2;
        if (d->padded)
            t->pad_count = t->count / (uint64_t)t->dims[d->rank - 1] * (uint64_t)t->ld;
        if (d->role == KEVO_TENSOR_OUTPUT && io->out < 0)
            io->out = i;
        if (d->role == KEVO_TENSOR_MAP && io->map < 0) {
            io->map = i;
            if ((st = kevo_expr_eval_text(d->users, &w->cfg.shape, &io->map_users, err)) ||
                (st = kevo_expr_eval_text(d->per_user, &w->cfg.shape, &io->map_ratio, err))) {
                kevo_err_prefix(err, "tensor '%s'", d->name);
                return st;
            }
        }
    }
    if (io->out < 0)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "op '%s' has no output tensor", op->name);
    return KEVO_OK;
}

kevo_status wk_op_init(wk_ctx *w, bool first, kevo_err *err)
{
    const kevo_op *op = w->cfg.op;
    const kevo_op_gpu *g = op->gpu;
    wk_io *io = &w->io;
    if (!g)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "no GPU backend for op '%s'", op->name);
    if (g->args_size > WK_ARGS_MAX || g->seq_offset + sizeof(int) > g->args_size)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "op '%s': an ABI struct of %zu bytes", op->name, g->args_size);
    kevo_status st = wk_size_tensors(w, err);
    if (st)
        return st;
    bool padded = false;
    for (int i = 0; i < op->ntensors; i++)
        padded |= io->t[i].pad_count > 0;
    if ((st = wk_ref_fn(w, "kv_gen", &io->f_gen, err)) ||
        (padded && (st = wk_ref_fn(w, "kv_gen_padded", &io->f_gen_padded, err))) ||
        (st = wk_ref_fn(w, "kv_sumsq", &io->f_sumsq, err)) || (st = wk_ref_fn(w, "kv_compare", &io->f_compare, err)) ||
        (st = wk_ref_fn(w, "kv_checksum", &io->f_checksum, err)))
        return st;
    if (io->map >= 0 && !(io->host_map = malloc((size_t)io->t[io->map].count * sizeof *io->host_map)))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    struct {
        CUdeviceptr *p;
        size_t bytes;
    } bufs[2 * KEVO_OP_MAX_TENSORS + 2];
    size_t nb = 0;
    for (int i = 0; i < op->ntensors; i++) {
        wk_tensor *t = &io->t[i];
        if (i == io->out) /* between guards: below */
            continue;
        bufs[nb].p = &t->p;
        bufs[nb++].bytes = (size_t)t->count * t->elem;
        if (t->pad_count) {
            bufs[nb].p = &t->pad;
            bufs[nb++].bytes = (size_t)t->pad_count * t->elem;
        }
    }
    bufs[nb].p = &io->out_alloc;
    bufs[nb++].bytes = (size_t)io->t[io->out].count * io->t[io->out].elem + 2 * WK_GUARD;
    bufs[nb].p = &io->ref;
    bufs[nb++].bytes = (size_t)io->t[io->out].count * sizeof(float);
    bufs[nb].p = &io->stats;
    bufs[nb++].bytes = 8 * sizeof(double);
    for (size_t i = 0; i < nb; i++)
        KV_CU_TRY_AS(&w->cu, err, w->cu.cuMemAlloc(bufs[i].p, bufs[i].bytes), "allocating %zu bytes of inputs",
                     bufs[i].bytes);
    io->t[io->out].p = io->out_alloc + WK_GUARD;
    KV_CU_TRY_AS(&w->cu, err, wk_guard_fill(w), "filling the output's guards");
    if ((st = g->init(w, err)))
        return st;
    if (first && w->cfg.baseline && (st = g->peers(w, err)))
        return st;
    if (first && w->cfg.ceilings)
        wk_ceilings(w);
    return KEVO_OK;
}

void wk_op_fini(wk_ctx *w)
{
    const kevo_op *op = w->cfg.op;
    wk_io *io = &w->io;
    if (op->gpu)
        op->gpu->fini(w);
    for (int i = 0; i < op->ntensors && i < KEVO_OP_MAX_TENSORS; i++) {
        if (io->t[i].p && i != io->out) /* the output lies inside out_alloc */
            w->cu.cuMemFree(io->t[i].p);
        if (io->t[i].pad)
            w->cu.cuMemFree(io->t[i].pad);
    }
    CUdeviceptr bufs[] = {io->out_alloc, io->ref, io->stats, io->ws_alloc};
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++)
        if (bufs[i])
            w->cu.cuMemFree(bufs[i]);
    free(io->host_map);
    memset(io, 0, sizeof *io);
}
