/* gpu.c — ikbo_lce inside the GPU worker: inputs, the fp32 reference,
 * verification of a candidate's plan, its timing, and the stage-0 baseline
 * (materialized broadcast + one cuBLAS strided-batched GEMM, what a PyTorch
 * user runs today). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"
#include "kernels/ikbo_lce/abi.h"
#include "util/util.h"

/* Device buffers and functions of one worker. */
typedef struct lce_state {
    int64_t B, M, N, Ku, Kc, U, ratio, Kup, Kcp;
    int elem; /* bytes per element */
    CUdeviceptr w_user, w_cand, w_user_pad, w_cand_pad, e_user, e_cand, map, out, ref, stats;
    CUdeviceptr user_res; /* [U, M, N], the decomposed peer's user GEMM output (peers only) */
    CUdeviceptr ws;
    size_t ws_cap;
    int launch_seq; /* last tag handed to a plan run: one counter for every candidate on this workspace */
    int32_t *host_map;
    CUfunction f_gen, f_gen_padded, f_ref, f_sumsq, f_compare, f_cat_e, f_cat_w, f_bcast_add, f_checksum;
} lce_state;

#define LCE_TRY(call)                                                                                                  \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS)                                                                                        \
            return r_;                                                                                                 \
    } while (0)

static CUresult lce_gen(wk_ctx *w, CUdeviceptr dst, unsigned long long count, uint64_t seed, unsigned tensor)
{
    lce_state *s = w->op_state;
    unsigned long long sd = seed;
    void *p[] = {&dst, &count, &sd, &tensor};
    return wk_launch(w, s->f_gen, wk_blocks(count), 1, 1, 256, 1, 1, 0, p);
}

static CUresult lce_gen_padded(wk_ctx *w, CUdeviceptr dst, int rows, int cols, int ld, uint64_t seed,
                               unsigned tensor)
{
    lce_state *s = w->op_state;
    unsigned long long sd = seed;
    void *p[] = {&dst, &rows, &cols, &ld, &sd, &tensor};
    return wk_launch(w, s->f_gen_padded, wk_blocks((unsigned long long)rows * ld), 1, 1, 256, 1, 1, 0, p);
}

/* A fresh input set: every tensor from `seed` (tensor numbers as in
 * kevo_lce_host_init), the padded weight copies holding the same values, and
 * the cand_to_user map of `kind`. */
static CUresult lce_fill(wk_ctx *w, uint64_t seed, kevo_map_kind kind)
{
    lce_state *s = w->op_state;
    LCE_TRY(lce_gen(w, s->w_user, (unsigned long long)(s->M * s->Ku), seed, 0));
    LCE_TRY(lce_gen(w, s->w_cand, (unsigned long long)(s->M * s->Kc), seed, 1));
    LCE_TRY(lce_gen(w, s->e_user, (unsigned long long)(s->U * s->Ku * s->N), seed, 2));
    LCE_TRY(lce_gen(w, s->e_cand, (unsigned long long)(s->B * s->Kc * s->N), seed, 3));
    LCE_TRY(lce_gen_padded(w, s->w_user_pad, (int)s->M, (int)s->Ku, (int)s->Kup, seed, 0));
    LCE_TRY(lce_gen_padded(w, s->w_cand_pad, (int)s->M, (int)s->Kc, (int)s->Kcp, seed, 1));
    kevo_lce_make_map(kind, s->B, s->U, s->ratio, seed ^ 0x5eedull, s->host_map);
    /* the host map is rewritten by the next fill: finish the copy first */
    LCE_TRY(w->cu.cuMemcpyHtoDAsync(s->map, s->host_map, (size_t)s->B * sizeof(int32_t), w->stream));
    return w->cu.cuStreamSynchronize(w->stream);
}

/* The kernel argument struct over the current buffers. */
static kevo_lce_args lce_args(const lce_state *s, bool padded)
{
    kevo_lce_args a;
    memset(&a, 0, sizeof a);
    a.w_user = (const void *)(uintptr_t)(padded ? s->w_user_pad : s->w_user);
    a.w_cand = (const void *)(uintptr_t)(padded ? s->w_cand_pad : s->w_cand);
    a.e_user = (const void *)(uintptr_t)s->e_user;
    a.e_cand = (const void *)(uintptr_t)s->e_cand;
    a.cand_to_user = (const int *)(uintptr_t)s->map;
    a.out = (void *)(uintptr_t)s->out;
    a.workspace = (void *)(uintptr_t)s->ws;
    a.B = (int)s->B;
    a.M = (int)s->M;
    a.N = (int)s->N;
    a.Ku = (int)s->Ku;
    a.Kc = (int)s->Kc;
    a.U = (int)s->U;
    a.ldw_user = (int)(padded ? s->Kup : s->Ku);
    a.ldw_cand = (int)(padded ? s->Kcp : s->Kc);
    return a;
}

/* Encode the plan's TMA descriptors into a (see ikbo_lce/abi.h for the
 * tensor shapes).  Returns false with why[] set when one cannot be made. */
static bool lce_encode_tmaps(wk_ctx *w, const kevo_plan *pl, kevo_lce_args *a, char *why, size_t n)
{
    lce_state *s = w->op_state;
    for (int i = 0; i < pl->ntmaps; i++) {
        const kevo_tmap_spec *t = &pl->tmaps[i];
        cuuint64_t dims[3], strides[2];
        cuuint32_t box[3], estr[3] = {1, 1, 1};
        const void *base;
        kevo_tmap *dst;
        cuuint32_t rank;
        bool is_w = strncmp(t->tensor, "w_", 2) == 0, user = strcmp(t->tensor + 2, "user") == 0;
        if (strcmp(t->tensor, "w_user") && strcmp(t->tensor, "w_cand") && strcmp(t->tensor, "e_user") &&
            strcmp(t->tensor, "e_cand") && strcmp(t->tensor, "out")) {
            snprintf(why, n, "plan asks for a tensor map of unknown tensor '%s'", t->tensor);
            return false;
        }
        if (strcmp(t->tensor, "out") == 0) {
            rank = 3;
            base = a->out;
            dims[0] = (cuuint64_t)s->N;
            dims[1] = (cuuint64_t)s->M;
            dims[2] = (cuuint64_t)s->B;
            strides[0] = (cuuint64_t)s->N * 2;
            strides[1] = (cuuint64_t)(s->M * s->N) * 2;
            dst = &a->tm_out;
        } else if (is_w) {
            int ld = user ? a->ldw_user : a->ldw_cand;
            rank = 2;
            base = user ? a->w_user : a->w_cand;
            dims[0] = (cuuint64_t)ld;
            dims[1] = (cuuint64_t)s->M;
            strides[0] = (cuuint64_t)ld * 2;
            dst = user ? &a->tm_w_user : &a->tm_w_cand;
        } else {
            int64_t K = user ? s->Ku : s->Kc, batch = user ? s->U : s->B;
            rank = 3;
            base = user ? a->e_user : a->e_cand;
            dims[0] = (cuuint64_t)s->N;
            dims[1] = (cuuint64_t)K;
            dims[2] = (cuuint64_t)batch;
            strides[0] = (cuuint64_t)s->N * 2;
            strides[1] = (cuuint64_t)(K * s->N) * 2;
            dst = user ? &a->tm_e_user : &a->tm_e_cand;
        }
        for (cuuint32_t d = 0; d < rank; d++)
            box[d] = t->box[d];
        CUtensorMapSwizzle swz = t->swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                 : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                    : CU_TENSOR_MAP_SWIZZLE_NONE;
        CUtensorMapDataType dt =
            w->cfg.dtype == KEVO_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        CUresult r = w->cu.cuTensorMapEncodeTiled((CUtensorMap *)dst, dt, rank, (void *)base, dims, strides, box,
                                                  estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            char buf[200];
            snprintf(why, n, "tensor map for '%s' (box %u,%u,%u, swizzle %d%s): %s", t->tensor, t->box[0], t->box[1],
                     t->box[2], t->swizzle, is_w && !pl->pad_k ? ", rows not 16-byte aligned: needs pad_k" : "",
                     kv_cu_errstr(&w->cu, r, buf, sizeof buf));
            return false;
        }
    }
    return true;
}

/* ref = the fp32 reference of the current inputs; *ref_sumsq = sum ref^2. */
static CUresult lce_reference(wk_ctx *w, double *ref_sumsq)
{
    lce_state *s = w->op_state;
    kevo_lce_args a = lce_args(s, false);
    void *p[] = {&a, &s->ref};
    LCE_TRY(wk_launch(w, s->f_ref, (unsigned)((s->N + 63) / 64), (unsigned)((s->M + 63) / 64), (unsigned)s->B, 16, 16,
                      1, 0, p));
    LCE_TRY(w->cu.cuMemsetD8Async(s->stats, 0, 8 * sizeof(double), w->stream));
    unsigned long long n = (unsigned long long)(s->B * s->M * s->N);
    void *q[] = {&s->ref, &n, &s->stats};
    LCE_TRY(wk_launch(w, s->f_sumsq, wk_blocks(n), 1, 1, 256, 1, 1, 0, q));
    LCE_TRY(w->cu.cuMemcpyDtoHAsync(ref_sumsq, s->stats, sizeof(double), w->stream));
    return w->cu.cuStreamSynchronize(w->stream);
}

/* Compare `out` with ref.  stats: d2, max|d|, elements over the bound, non-finite. */
static CUresult lce_compare(wk_ctx *w, CUdeviceptr out, double ref_sumsq, double st[4])
{
    lce_state *s = w->op_state;
    double rel_bound, rtol;
    kevo_tolerance(w->cfg.dtype, &rel_bound, &rtol);
    unsigned long long n = (unsigned long long)(s->B * s->M * s->N);
    float frtol = (float)rtol, fatol = (float)(rtol * sqrt(ref_sumsq / (double)n));
    LCE_TRY(w->cu.cuMemsetD8Async(s->stats, 0, 8 * sizeof(double), w->stream));
    void *p[] = {&out, &s->ref, &n, &frtol, &fatol, &s->stats};
    LCE_TRY(wk_launch(w, s->f_compare, wk_blocks(n), 1, 1, 256, 1, 1, 0, p));
    double h[5];
    LCE_TRY(w->cu.cuMemcpyDtoHAsync(h, s->stats, sizeof h, w->stream));
    LCE_TRY(w->cu.cuStreamSynchronize(w->stream));
    st[0] = h[1];
    st[1] = h[2];
    st[2] = h[3];
    st[3] = h[4];
    return CUDA_SUCCESS;
}

/* *sum = the checksum of every input tensor (the weights, their padded
 * copies, E_user, E_cand, cand_to_user) and of the reference the output is
 * compared with (a kernel reaching past its tensors must not rewrite the
 * answer it is judged by), computed on the device into the
 * last slot of the stats buffer (the comparison uses the first five). */
static CUresult lce_inputs_sum(wk_ctx *w, unsigned long long *sum)
{
    lce_state *s = w->op_state;
    const struct {
        CUdeviceptr p;
        size_t bytes;
    } in[] = {
        {s->w_user, (size_t)(s->M * s->Ku) * 2},         {s->w_cand, (size_t)(s->M * s->Kc) * 2},
        {s->w_user_pad, (size_t)(s->M * s->Kup) * 2},    {s->w_cand_pad, (size_t)(s->M * s->Kcp) * 2},
        {s->e_user, (size_t)(s->U * s->Ku * s->N) * 2}, {s->e_cand, (size_t)(s->B * s->Kc * s->N) * 2},
        {s->map, (size_t)s->B * 4},                      {s->ref, (size_t)(s->B * s->M * s->N) * 4},
    };
    CUdeviceptr slot = s->stats + 7 * sizeof(double);
    LCE_TRY(w->cu.cuMemsetD8Async(slot, 0, sizeof(unsigned long long), w->stream));
    for (size_t i = 0; i < KV_ARRAY_LEN(in); i++) {
        CUdeviceptr p = in[i].p;
        unsigned long long n = in[i].bytes / 4, salt = (unsigned long long)i << 56;
        void *a[] = {&p, &n, &salt, &slot};
        if (n > 0)
            LCE_TRY(wk_launch(w, s->f_checksum, wk_blocks(n), 1, 1, 256, 1, 1, 0, a));
    }
    LCE_TRY(w->cu.cuMemcpyDtoHAsync(sum, slot, sizeof *sum, w->stream));
    return w->cu.cuStreamSynchronize(w->stream);
}

/* Run a candidate's plan once on the current buffers. */
typedef struct lce_run_arg {
    const wk_cand *c;
    kevo_lce_args a;
} lce_run_arg;

static CUresult lce_run_plan(wk_ctx *w, void *arg)
{
    lce_run_arg *ra = arg;
    lce_state *s = w->op_state;
    const kevo_plan *pl = ra->c->plan;
    /* a new tag for flags the kernels keep in the workspace, never reused
     * by a later candidate on the same workspace; never -1 (the poison) */
    if (++s->launch_seq <= 0)
        s->launch_seq = 1;
    ra->a.launch_seq = s->launch_seq;
    void *p[] = {&ra->a};
    for (int i = 0; i < pl->nlaunches; i++) {
        const kevo_launch *l = &pl->launches[i];
        LCE_TRY(wk_launch(w, ra->c->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                          l->smem, p));
    }
    return CUDA_SUCCESS;
}

static CUresult lce_ensure_ws(wk_ctx *w, size_t bytes)
{
    lce_state *s = w->op_state;
    if (bytes <= s->ws_cap)
        return CUDA_SUCCESS;
    if (s->ws)
        w->cu.cuMemFree(s->ws);
    s->ws = 0;
    s->ws_cap = 0;
    size_t cap = (bytes + 255) & ~(size_t)255;
    LCE_TRY(w->cu.cuMemAlloc(&s->ws, cap));
    s->ws_cap = cap;
    return CUDA_SUCCESS;
}

/* Seed for one check: distinct per request and per map kind. */
static uint64_t lce_check_seed(uint64_t seed, int kind)
{
    uint64_t st = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(kind + 7));
    return kv_rand_next(&st);
}

static void lce_eval(wk_ctx *w, const kevo_gpu_request *req, const wk_cand *c, kevo_gpu_result *res, bool *sticky)
{
    lce_state *s = w->op_state;
    double rel_bound, rtol;
    kevo_tolerance(w->cfg.dtype, &rel_bound, &rtol);
    CUresult r = lce_ensure_ws(w, req->plan.workspace_bytes ? req->plan.workspace_bytes : 256);
    if (r != CUDA_SUCCESS) {
        wk_result_cuda(w, res, r, "allocating the workspace", sticky);
        res->fail = KEVO_FAIL_RESOURCE_EXCEEDED;
        return;
    }
    lce_run_arg ra = {.c = c};
    ra.a = lce_args(s, req->plan.pad_k != 0);
    ra.a.num_sms = w->info.sm_count;
    if (!lce_encode_tmaps(w, &req->plan, &ra.a, res->msg, sizeof res->msg)) {
        res->fail = KEVO_FAIL_LOAD_ERROR;
        return;
    }
    size_t out_elems = (size_t)(s->B * s->M * s->N);
    res->rel_err = 0.0;
    res->max_abs_err = 0.0;
    bool first = true;
    for (int kind = 0; kind < 3; kind++) {
        if (!(req->maps & (1u << kind)))
            continue;
        double ref2 = 0, st[4];
        unsigned long long sum_before = 0, sum_after = 0;
        r = lce_fill(w, lce_check_seed(req->seed, kind), (kevo_map_kind)kind);
        if (r == CUDA_SUCCESS)
            r = lce_reference(w, &ref2);
        if (r == CUDA_SUCCESS)
            r = lce_inputs_sum(w, &sum_before);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "preparing a check (reference side)", sticky);
            return;
        }
        /* poison: NaN in every output element; NaN in every workspace byte
         * before the first check only.  The later checks (new inputs) find
         * the workspace as the previous run left it, as a library caller's
         * reused workspace is: a kernel that trusts stale flags or partial
         * results there reads the previous inputs' values and fails. */
        r = w->cu.cuMemsetD16Async(s->out, 0xFFFF, out_elems, w->stream);
        if (r == CUDA_SUCCESS && first)
            r = w->cu.cuMemsetD8Async(s->ws, 0xFF, s->ws_cap, w->stream);
        first = false;
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "poisoning the output", sticky);
            return;
        }
        r = lce_run_plan(w, &ra);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "launch", sticky);
            return;
        }
        r = w->cu.cuStreamSynchronize(w->stream);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "kernel", sticky);
            return;
        }
        r = lce_compare(w, s->out, ref2, st);
        if (r == CUDA_SUCCESS)
            r = lce_inputs_sum(w, &sum_after);
        if (r != CUDA_SUCCESS) {
            wk_result_cuda(w, res, r, "comparing", sticky);
            return;
        }
        res->checks++;
        if (sum_after != sum_before) { /* before the output is judged: a kernel may hide its writes in a right answer */
            res->fail = KEVO_FAIL_INPUT_MODIFIED;
            snprintf(res->msg, sizeof res->msg, "the kernel wrote an input tensor or the reference (checksum changed, %s map)",
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
    if (!req->time)
        return;
    /* timing inputs: the run's fixed seed, sorted map, for every candidate alike */
    r = lce_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_run_plan, &ra, w->cfg.warmup, w->cfg.reps, &res->median_ms, &res->min_ms, &res->max_ms,
                    res->rep_ms);
    if (r != CUDA_SUCCESS) {
        wk_result_cuda(w, res, r, "timing", sticky);
        return;
    }
    res->reps = w->cfg.reps;
}

/* Time n loaded candidates interleaved on the timing inputs (the run's
 * seed, sorted map), each with its own arguments (tensor maps) and one
 * workspace large enough for all. */
static void lce_retime(wk_ctx *w, const kevo_gpu_request *reqs, const wk_cand *c, int n, int warmup, int rounds,
                       kevo_gpu_retime_result *out, bool *sticky)
{
    lce_state *s = w->op_state;
    lce_run_arg ra[KEVO_GPU_RETIME_MAX];
    void *args[KEVO_GPU_RETIME_MAX];
    uint64_t ws = 256;
    for (int i = 0; i < n; i++)
        if (reqs[i].plan.workspace_bytes > ws)
            ws = reqs[i].plan.workspace_bytes;
    CUresult r = lce_ensure_ws(w, ws);
    bool ok = r == CUDA_SUCCESS;
    for (int i = 0; i < n && ok; i++) {
        ra[i].c = &c[i];
        ra[i].a = lce_args(s, reqs[i].plan.pad_k != 0);
        ra[i].a.num_sms = w->info.sm_count;
        args[i] = &ra[i];
        if (!lce_encode_tmaps(w, &reqs[i].plan, &ra[i].a, out[i].msg, sizeof out[i].msg)) {
            out[i].fail = KEVO_FAIL_LOAD_ERROR;
            ok = false;
        }
    }
    if (!ok && r == CUDA_SUCCESS)
        return;
    double *ms = ok ? malloc((size_t)n * (size_t)rounds * sizeof *ms) : NULL;
    if (ok && !ms)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = lce_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    if (r == CUDA_SUCCESS)
        r = wk_time_interleaved(w, lce_run_plan, args, n, warmup, rounds, ms);
    for (int i = 0; i < n; i++) {
        if (r != CUDA_SUCCESS) {
            kevo_gpu_result res;
            memset(&res, 0, sizeof res);
            wk_result_cuda(w, &res, r, "re-timing", sticky);
            out[i].fail = res.fail;
            snprintf(out[i].msg, sizeof out[i].msg, "%.255s", res.msg);
            continue;
        }
        out[i].rounds = rounds;
        memcpy(out[i].ms, ms + (size_t)i * rounds, (size_t)rounds * sizeof *ms);
    }
    free(ms);
}

/* ---- the peers: stage-0 baseline and the decomposed form ---- */

/* out[b] (M x N) = W (M x K, row stride ldw, shared by the batch) @ E[b]
 * (K x N), b < batch, in the storage dtype, fp32 accumulation: row-major
 * as column-major out^T (N x M) = E^T (N x K, ld N) @ W^T (K x M, ld ldw),
 * W stride 0 (cuBLAS strided-batched GEMM). */
static CUresult lce_gemm(wk_ctx *w, CUdeviceptr e, int64_t K, CUdeviceptr wt, int64_t ldw, CUdeviceptr out,
                         int64_t batch)
{
    lce_state *s = w->op_state;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType dt = w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasStatus_t cs = w->cb.cublasGemmStridedBatchedEx(
        w->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)s->N, (int)s->M, (int)K, &alpha, (const void *)(uintptr_t)e, dt,
        (int)s->N, (long long)K * s->N, (const void *)(uintptr_t)wt, dt, (int)ldw, 0, &beta, (void *)(uintptr_t)out,
        dt, (int)s->N, (long long)s->M * s->N, (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* Stage 0: one GEMM over the pre-broadcast E = cat(E_user[c2u], E_cand)
 * with W = cat(W_user, W_cand). */
typedef struct lce_base_arg {
    CUdeviceptr e_full, w_full, out;
    kevo_lce_args a;
    bool with_broadcast; /* rebuild e_full (and w_full) inside each timed call */
} lce_base_arg;

static CUresult lce_base_run(wk_ctx *w, void *arg)
{
    lce_state *s = w->op_state;
    lce_base_arg *b = arg;
    int64_t K = s->Ku + s->Kc;
    if (b->with_broadcast) {
        void *pe[] = {&b->a, &b->e_full};
        LCE_TRY(wk_launch(w, s->f_cat_e, wk_blocks((unsigned long long)(s->B * K * s->N / 8)), 1, 1, 256, 1, 1, 0,
                          pe));
        void *pw[] = {&b->a, &b->w_full};
        LCE_TRY(wk_launch(w, s->f_cat_w, wk_blocks((unsigned long long)(s->M * K)), 1, 1, 256, 1, 1, 0, pw));
    }
    return lce_gemm(w, b->e_full, K, b->w_full, K, b->out, s->B);
}

/* The decomposed form with K padded to 8 (16-byte W rows), the strongest a
 * PyTorch user writes without a custom kernel: user_res = bmm(W_user,
 * E_user) at batch U, out = bmm(W_cand, E_cand) at batch B, then
 * out += user_res[c2u] in one broadcast-add pass. */
static CUresult lce_decomposed_run(wk_ctx *w, void *arg)
{
    (void)arg;
    lce_state *s = w->op_state;
    LCE_TRY(lce_gemm(w, s->e_user, s->Ku, s->w_user_pad, s->Kup, s->user_res, s->U));
    LCE_TRY(lce_gemm(w, s->e_cand, s->Kc, s->w_cand_pad, s->Kcp, s->out, s->B));
    int B = (int)s->B, M = (int)s->M, N = (int)s->N;
    void *p[] = {&s->out, &s->user_res, &s->map, &B, &M, &N};
    return wk_launch(w, s->f_bcast_add, wk_blocks((unsigned long long)(s->B * s->M * s->N / 8)), 1, 1, 256, 1, 1, 0,
                     p);
}

/* Run fn once on the timing inputs with the output poisoned and compare it
 * with the reference (ref2: sum ref^2); *rel gets its relative error. */
static CUresult lce_check_peer(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, double ref2, double *rel,
                               double *nonfinite)
{
    lce_state *s = w->op_state;
    double st[4] = {0};
    LCE_TRY(w->cu.cuMemsetD16Async(s->out, 0xFFFF, (size_t)(s->B * s->M * s->N), w->stream));
    LCE_TRY(fn(w, arg));
    LCE_TRY(w->cu.cuStreamSynchronize(w->stream));
    LCE_TRY(lce_compare(w, s->out, ref2, st));
    *rel = ref2 > 0 ? sqrt(st[0] / ref2) : NAN;
    *nonfinite = st[3];
    return CUDA_SUCCESS;
}

/* Check and time both peers on the timing inputs (the run's seed, sorted
 * map): the baseline without and with its broadcast, the decomposed form. */
static kevo_status lce_peers(wk_ctx *w, kevo_err *err)
{
    lce_state *s = w->op_state;
    char buf[256];
    int64_t K = s->Ku + s->Kc;
    lce_base_arg b = {0};
    CUresult r = w->cu.cuMemAlloc(&b.e_full, (size_t)(s->B * K * s->N) * (size_t)s->elem);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemAlloc(&b.w_full, (size_t)(s->M * K) * (size_t)s->elem);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemAlloc(&s->user_res, (size_t)(s->U * s->M * s->N) * (size_t)s->elem);
    b.out = s->out;
    double ref2 = 0, base_nf = 0, dec_nf = 0;
    if (r == CUDA_SUCCESS)
        r = lce_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    if (r == CUDA_SUCCESS)
        r = lce_reference(w, &ref2);
    b.a = lce_args(s, false);
    b.with_broadcast = true;
    if (r == CUDA_SUCCESS)
        r = lce_check_peer(w, lce_base_run, &b, ref2, &w->info.baseline_rel_err, &base_nf);
    if (r == CUDA_SUCCESS)
        r = lce_check_peer(w, lce_decomposed_run, NULL, ref2, &w->info.decomposed_rel_err, &dec_nf);
    double lo, hi;
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_base_run, &b, w->cfg.warmup, w->cfg.reps, &w->info.baseline_bcast_ms, &lo, &hi, NULL);
    b.with_broadcast = false;
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_base_run, &b, w->cfg.warmup, w->cfg.reps, &w->info.baseline_ms, &lo, &hi, NULL);
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_decomposed_run, NULL, w->cfg.warmup, w->cfg.reps, &w->info.decomposed_ms, &lo, &hi,
                    NULL);
    if (b.e_full)
        w->cu.cuMemFree(b.e_full);
    if (b.w_full)
        w->cu.cuMemFree(b.w_full);
    if (r != CUDA_SUCCESS)
        return kevo_err_set(err, KEVO_ERR_CUDA, "in-run peers (cuBLAS): %s", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
    double rel_bound, rtol;
    kevo_tolerance(w->cfg.dtype, &rel_bound, &rtol);
    if (base_nf > 0 || !(w->info.baseline_rel_err <= rel_bound))
        return kevo_err_set(err, KEVO_ERR_INTERNAL,
                            "the cuBLAS baseline disagrees with the reference (rel_err %.3e, %.0f non-finite): "
                            "the reference or the inputs are wrong",
                            w->info.baseline_rel_err, base_nf);
    if (dec_nf > 0 || !(w->info.decomposed_rel_err <= rel_bound))
        return kevo_err_set(err, KEVO_ERR_INTERNAL,
                            "the decomposed cuBLAS peer disagrees with the reference (rel_err %.3e, %.0f "
                            "non-finite): the reference or the broadcast-add is wrong",
                            w->info.decomposed_rel_err, dec_nf);
    return KEVO_OK;
}

/* ---- measured ceilings ---- */

typedef struct lce_peak_arg {
    CUdeviceptr a, b, c, src, dst;
    size_t copy_bytes;
    int n;
} lce_peak_arg;

static CUresult lce_peak_gemm(wk_ctx *w, void *arg)
{
    lce_peak_arg *p = arg;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType dt = w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasStatus_t cs = w->cb.cublasGemmEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, p->n, p->n, p->n, &alpha,
                                           (const void *)(uintptr_t)p->a, dt, p->n, (const void *)(uintptr_t)p->b,
                                           dt, p->n, &beta, (void *)(uintptr_t)p->c, dt, p->n, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

static CUresult lce_peak_copy(wk_ctx *w, void *arg)
{
    lce_peak_arg *p = arg;
    return w->cu.cuMemcpyDtoDAsync(p->dst, p->src, p->copy_bytes, w->stream);
}

/* cuBLAS GEMM 8192^3 on random data, and a 1 GiB device-to-device copy. */
static void lce_ceilings(wk_ctx *w)
{
    lce_peak_arg p = {.n = 8192, .copy_bytes = (size_t)1 << 30};
    size_t mat = (size_t)p.n * p.n * 2;
    CUresult r = w->cu.cuMemAlloc(&p.a, mat);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemAlloc(&p.b, mat);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemAlloc(&p.c, mat);
    if (r == CUDA_SUCCESS)
        r = lce_gen(w, p.a, (unsigned long long)p.n * p.n, 11, 0);
    if (r == CUDA_SUCCESS)
        r = lce_gen(w, p.b, (unsigned long long)p.n * p.n, 12, 0);
    double med = NAN, lo, hi;
    if (r == CUDA_SUCCESS && wk_time(w, lce_peak_gemm, &p, 3, 10, &med, &lo, &hi, NULL) == CUDA_SUCCESS)
        w->info.peak_tflops = 2.0 * p.n * (double)p.n * p.n / (med * 1e-3) / 1e12;
    if (p.a)
        w->cu.cuMemFree(p.a);
    if (p.b)
        w->cu.cuMemFree(p.b);
    if (p.c)
        w->cu.cuMemFree(p.c);
    r = w->cu.cuMemAlloc(&p.src, p.copy_bytes);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemAlloc(&p.dst, p.copy_bytes);
    if (r == CUDA_SUCCESS && wk_time(w, lce_peak_copy, &p, 3, 10, &med, &lo, &hi, NULL) == CUDA_SUCCESS)
        w->info.copy_tbps = 2.0 * (double)p.copy_bytes / (med * 1e-3) / 1e12;
    if (p.src)
        w->cu.cuMemFree(p.src);
    if (p.dst)
        w->cu.cuMemFree(p.dst);
}

static kevo_status lce_init(wk_ctx *w, bool first, kevo_err *err)
{
    lce_state *s = calloc(1, sizeof *s);
    if (!s)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    w->op_state = s;
    const kevo_syms *sh = &w->cfg.shape;
    kevo_syms_get(sh, "B", &s->B);
    kevo_syms_get(sh, "M", &s->M);
    kevo_syms_get(sh, "N", &s->N);
    kevo_syms_get(sh, "Ku", &s->Ku);
    kevo_syms_get(sh, "Kc", &s->Kc);
    kevo_syms_get(sh, "U", &s->U);
    kevo_syms_get(sh, "ratio", &s->ratio);
    kevo_syms_get(sh, "Kup", &s->Kup);
    kevo_syms_get(sh, "Kcp", &s->Kcp);
    s->elem = 2;
    s->host_map = malloc((size_t)s->B * sizeof *s->host_map);
    if (!s->host_map)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st;
    if ((st = wk_ref_fn(w, "kv_gen", &s->f_gen, err)) || (st = wk_ref_fn(w, "kv_gen_padded", &s->f_gen_padded, err)) ||
        (st = wk_ref_fn(w, "kv_ref", &s->f_ref, err)) || (st = wk_ref_fn(w, "kv_sumsq", &s->f_sumsq, err)) ||
        (st = wk_ref_fn(w, "kv_compare", &s->f_compare, err)) || (st = wk_ref_fn(w, "kv_cat_e", &s->f_cat_e, err)) ||
        (st = wk_ref_fn(w, "kv_cat_w", &s->f_cat_w, err)) ||
        (st = wk_ref_fn(w, "kv_bcast_add", &s->f_bcast_add, err)) ||
        (st = wk_ref_fn(w, "kv_checksum", &s->f_checksum, err)))
        return st;
    struct {
        CUdeviceptr *p;
        size_t bytes;
    } bufs[] = {
        {&s->w_user, (size_t)(s->M * s->Ku) * 2},      {&s->w_cand, (size_t)(s->M * s->Kc) * 2},
        {&s->w_user_pad, (size_t)(s->M * s->Kup) * 2}, {&s->w_cand_pad, (size_t)(s->M * s->Kcp) * 2},
        {&s->e_user, (size_t)(s->U * s->Ku * s->N) * 2}, {&s->e_cand, (size_t)(s->B * s->Kc * s->N) * 2},
        {&s->map, (size_t)s->B * 4},                     {&s->out, (size_t)(s->B * s->M * s->N) * 2},
        {&s->ref, (size_t)(s->B * s->M * s->N) * 4},     {&s->stats, 8 * sizeof(double)},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++) {
        CUresult r = w->cu.cuMemAlloc(bufs[i].p, bufs[i].bytes);
        if (r != CUDA_SUCCESS) {
            char buf[256];
            return kevo_err_set(err, KEVO_ERR_CUDA, "allocating %zu bytes of inputs: %s", bufs[i].bytes,
                                kv_cu_errstr(&w->cu, r, buf, sizeof buf));
        }
    }
    if (first && w->cfg.baseline && (st = lce_peers(w, err)))
        return st;
    if (first && w->cfg.ceilings)
        lce_ceilings(w);
    return KEVO_OK;
}

static void lce_fini(wk_ctx *w)
{
    lce_state *s = w->op_state;
    if (!s)
        return;
    CUdeviceptr bufs[] = {s->w_user, s->w_cand, s->w_user_pad, s->w_cand_pad, s->e_user, s->e_cand,
                          s->map,    s->out,    s->ref,        s->stats,      s->ws,     s->user_res};
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++)
        if (bufs[i])
            w->cu.cuMemFree(bufs[i]);
    free(s->host_map);
    free(s);
    w->op_state = NULL;
}

const wk_backend kv_lce_backend = {
    .op = "ikbo_lce",
    .init = lce_init,
    .eval = lce_eval,
    .retime = lce_retime,
    .fini = lce_fini,
};
