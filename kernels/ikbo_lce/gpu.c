/* gpu.c — ikbo_lce inside the GPU worker: what the generic evaluation
 * (evaluator/gpu_eval.c) cannot know.  The kernels' argument struct over
 * the worker's tensors, the fp32 reference, and the same-run peers: the
 * stage-0 baseline (materialized broadcast + one cuBLAS strided-batched
 * GEMM, what a PyTorch user runs today) and the decomposed form (two cuBLAS
 * GEMMs + one broadcast-add).
 *
 * The reference of every check is computed with cuBLAS on tensor cores,
 * fp32 accumulation and fp32 output (two GEMMs and a gather-add, 5-7 ms a
 * check at the default shape on an H100), where the SIMT kernel kv_ref (ref.cu,
 * written to be obviously right) takes ~26 ms and was two thirds of an
 * evaluation.  Each worker start holds the cuBLAS reference to kv_ref on
 * inputs of its own (shuffled map; kv_ref reads the weights' natural rows,
 * cuBLAS their padded copies) and refuses to start when they differ by
 * more than fp32 summation order can; where cuBLAS cannot run a GEMM (or
 * its scratch cannot be allocated) every check uses kv_ref. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"
#include "kernels/ikbo_lce/abi.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "util/util.h"

/* Indices into kevo_op_ikbo_lce.tensors (spec.c). */
enum { LCE_W_USER, LCE_W_CAND, LCE_E_USER, LCE_E_CAND, LCE_MAP, LCE_OUT };

/* The op's own state in one worker. */
typedef struct lce_state {
    int64_t B, M, N, Ku, Kc, U, Kup, Kcp;
    int elem; /* bytes per element */
    CUdeviceptr user_res; /* [U, M, N], the decomposed peer's user GEMM output (peers only) */
    CUdeviceptr user32;   /* [U, M, N] fp32, the cuBLAS reference's user GEMM output; 0: kv_ref only */
    CUfunction f_ref, f_cat_e, f_cat_w, f_bcast_add, f_ref_add_user, f_ref_diff;
} lce_state;

/* How far the cuBLAS reference may lie from kv_ref, ||x - y|| / ||y||: both
 * sum exact products in fp32 in different orders (~1e-7); an fp16-rounded
 * output would be ~3e-4, a wrong index O(1). */
#define LCE_REF_AGREE 1e-5

/* Device address of tensor i (its padded copy when padded and it has one). */
static CUdeviceptr lce_ptr(const wk_ctx *w, int i, bool padded)
{
    const wk_tensor *t = &w->io.t[i];
    return padded && t->pad ? t->pad : t->p;
}

/* The kernel argument struct over the current buffers. */
static kevo_lce_args lce_args(wk_ctx *w, bool padded)
{
    const lce_state *s = w->op_state;
    kevo_lce_args a;
    memset(&a, 0, sizeof a);
    a.w_user = (const void *)(uintptr_t)lce_ptr(w, LCE_W_USER, padded);
    a.w_cand = (const void *)(uintptr_t)lce_ptr(w, LCE_W_CAND, padded);
    a.e_user = (const void *)(uintptr_t)lce_ptr(w, LCE_E_USER, false);
    a.e_cand = (const void *)(uintptr_t)lce_ptr(w, LCE_E_CAND, false);
    a.cand_to_user = (const int *)(uintptr_t)lce_ptr(w, LCE_MAP, false);
    a.out = (void *)(uintptr_t)lce_ptr(w, LCE_OUT, false);
    a.workspace = (void *)(uintptr_t)w->io.ws;
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

static void lce_gpu_args(wk_ctx *w, bool padded, int num_sms, void *out)
{
    kevo_lce_args a = lce_args(w, padded);
    a.num_sms = num_sms;
    memcpy(out, &a, sizeof a);
}

/* out (nb x M x N floats) = kv_ref of batches [b0, b0 + nb), nb <= 65535. */
static CUresult lce_reference_simt(wk_ctx *w, CUdeviceptr out, int64_t b0, int64_t nb)
{
    lce_state *s = w->op_state;
    kevo_lce_args a = lce_args(w, false);
    int ib0 = (int)b0;
    void *p[] = {&a, &out, &ib0};
    return wk_launch(w, s->f_ref, (unsigned)((s->N + 63) / 64), (unsigned)((s->M + 63) / 64), (unsigned)nb, 16, 16, 1,
                     0, p);
}

static CUresult lce_gemm_to(wk_ctx *w, CUdeviceptr e, int64_t K, CUdeviceptr wt, int64_t ldw, CUdeviceptr out,
                            int64_t batch, cudaDataType out_dt);

/* ref = the fp32 reference of the current inputs: ref[b] = W_cand @
 * E_cand[b], user32[u] = W_user @ E_user[u] (cuBLAS, fp32 accumulation and
 * output; the weights' copies with rows padded to 8 elements, whose 16-byte
 * rows cuBLAS's fast kernels need: 6.5 ms with the natural rows at the
 * default shape on an H100), ref[b] += user32[c2u[b]]; kv_ref on the natural
 * layouts where there is no user32 (in slices of at most 65535 batches, the
 * grid's z limit). */
static CUresult lce_reference(wk_ctx *w)
{
    lce_state *s = w->op_state;
    CUdeviceptr ref = w->io.ref;
    if (!s->user32) {
        for (int64_t b0 = 0; b0 < s->B; b0 += 65535) {
            int64_t nb = s->B - b0 < 65535 ? s->B - b0 : 65535;
            WK_TRY(lce_reference_simt(w, ref + (CUdeviceptr)(b0 * s->M * s->N) * sizeof(float), b0, nb));
        }
        return CUDA_SUCCESS;
    }
    WK_TRY(lce_gemm_to(w, lce_ptr(w, LCE_E_CAND, false), s->Kc, lce_ptr(w, LCE_W_CAND, true), s->Kcp, ref, s->B,
                       CUDA_R_32F));
    WK_TRY(lce_gemm_to(w, lce_ptr(w, LCE_E_USER, false), s->Ku, lce_ptr(w, LCE_W_USER, true), s->Kup, s->user32,
                       s->U, CUDA_R_32F));
    CUdeviceptr map = lce_ptr(w, LCE_MAP, false);
    int B = (int)s->B;
    unsigned long long mn = (unsigned long long)(s->M * s->N);
    void *p[] = {&ref, &s->user32, &map, &B, &mn};
    return wk_launch(w, s->f_ref_add_user, wk_blocks((unsigned long long)B * mn), 1, 1, 256, 1, 1, 0, p);
}

/* Hold the cuBLAS reference to kv_ref on inputs of the worker's own (the
 * run's seed mixed, shuffled map), kv_ref in slices of at most 64 MiB into
 * scratch.  Where cuBLAS fails to run or the scratch does not fit, user32
 * is dropped and kv_ref serves.
 * Errors: wk_ref_check_verdict's, with bound LCE_REF_AGREE. */
static kevo_status lce_reference_check(wk_ctx *w, kevo_err *err)
{
    lce_state *s = w->op_state;
    const int64_t mn = s->M * s->N;
    int64_t slice = (64ll << 20) / (mn * (int64_t)sizeof(float));
    slice = slice < 1 ? 1 : slice > s->B ? s->B : slice > 65535 ? 65535 : slice;
    CUdeviceptr simt = 0;
    CUresult r = wk_ref_check_fill(w);
    /* no room for the slices, or cuBLAS cannot: kv_ref it is */
    if (r == CUDA_SUCCESS && (w->cu.cuMemAlloc(&simt, (size_t)(slice * mn) * sizeof(float)) != CUDA_SUCCESS ||
                              lce_reference(w) != CUDA_SUCCESS)) {
        w->cu.cuMemFree(s->user32);
        s->user32 = 0;
        if (simt)
            w->cu.cuMemFree(simt);
        return KEVO_OK;
    }
    /* fault injection for the tests: the last batch of the cuBLAS reference zeroed */
    if (r == CUDA_SUCCESS && wk_ref_check_inject("ref"))
        r = w->cu.cuMemsetD32Async(w->io.ref + (CUdeviceptr)((s->B - 1) * mn) * sizeof(float), 0, (size_t)mn,
                                   w->stream);
    if (r == CUDA_SUCCESS)
        r = w->cu.cuMemsetD8Async(w->io.stats, 0, 8 * sizeof(double), w->stream);
    for (int64_t b0 = 0; r == CUDA_SUCCESS && b0 < s->B; b0 += slice) {
        int64_t nb = s->B - b0 < slice ? s->B - b0 : slice;
        r = lce_reference_simt(w, simt, b0, nb);
        CUdeviceptr x = w->io.ref + (CUdeviceptr)(b0 * mn) * sizeof(float);
        unsigned long long n = (unsigned long long)(nb * mn);
        void *p[] = {&x, &simt, &n, &w->io.stats};
        if (r == CUDA_SUCCESS)
            r = wk_launch(w, s->f_ref_diff, wk_blocks(n), 1, 1, 256, 1, 1, 0, p);
    }
    return wk_ref_check_verdict(w, r, simt, LCE_REF_AGREE, "kv_ref", err);
}

/* ---- the peers: stage-0 baseline and the decomposed form ---- */

/* out[b] (M x N) = W (M x K, row stride ldw, shared by the batch) @ E[b]
 * (K x N), b < batch, in the storage dtype, fp32 accumulation: row-major
 * as column-major out^T (N x M) = E^T (N x K, ld N) @ W^T (K x M, ld ldw),
 * W stride 0 (cuBLAS strided-batched GEMM). */
static CUresult lce_gemm_to(wk_ctx *w, CUdeviceptr e, int64_t K, CUdeviceptr wt, int64_t ldw, CUdeviceptr out,
                            int64_t batch, cudaDataType out_dt)
{
    lce_state *s = w->op_state;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType dt = w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasStatus_t cs = w->cb.cublasGemmStridedBatchedEx(
        w->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)s->N, (int)s->M, (int)K, &alpha, (const void *)(uintptr_t)e, dt,
        (int)s->N, (long long)K * s->N, (const void *)(uintptr_t)wt, dt, (int)ldw, 0, &beta, (void *)(uintptr_t)out,
        out_dt, (int)s->N, (long long)s->M * s->N, (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* The same with out in the storage dtype (the peers). */
static CUresult lce_gemm(wk_ctx *w, CUdeviceptr e, int64_t K, CUdeviceptr wt, int64_t ldw, CUdeviceptr out,
                         int64_t batch)
{
    return lce_gemm_to(w, e, K, wt, ldw, out, batch,
                       w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F);
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
        WK_TRY(wk_launch(w, s->f_cat_e, wk_blocks((unsigned long long)(s->B * K * s->N / 8)), 1, 1, 256, 1, 1, 0,
                          pe));
        void *pw[] = {&b->a, &b->w_full};
        WK_TRY(wk_launch(w, s->f_cat_w, wk_blocks((unsigned long long)(s->M * K)), 1, 1, 256, 1, 1, 0, pw));
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
    CUdeviceptr out = lce_ptr(w, LCE_OUT, false), map = lce_ptr(w, LCE_MAP, false);
    WK_TRY(lce_gemm(w, lce_ptr(w, LCE_E_USER, false), s->Ku, lce_ptr(w, LCE_W_USER, true), s->Kup, s->user_res,
                     s->U));
    WK_TRY(lce_gemm(w, lce_ptr(w, LCE_E_CAND, false), s->Kc, lce_ptr(w, LCE_W_CAND, true), s->Kcp, out, s->B));
    int B = (int)s->B, M = (int)s->M, N = (int)s->N;
    void *p[] = {&out, &s->user_res, &map, &B, &M, &N};
    return wk_launch(w, s->f_bcast_add, wk_blocks((unsigned long long)(s->B * s->M * s->N / 8)), 1, 1, 256, 1, 1, 0,
                     p);
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
    b.out = lce_ptr(w, LCE_OUT, false);
    double ref2 = 0, base_nf = 0, dec_nf = 0;
    if (r == CUDA_SUCCESS)
        r = wk_fill(w, w->cfg.seed, KEVO_MAP_SORTED);
    if (r == CUDA_SUCCESS)
        r = wk_reference(w, &ref2);
    b.a = lce_args(w, false);
    b.with_broadcast = true;
    if (r == CUDA_SUCCESS)
        r = wk_check_peer(w, lce_base_run, &b, ref2, &w->info.baseline_rel_err, &base_nf);
    if (r == CUDA_SUCCESS)
        r = wk_check_peer(w, lce_decomposed_run, NULL, ref2, &w->info.peer_rel_err, &dec_nf);
    double lo, hi;
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_base_run, &b, w->cfg.warmup, w->cfg.reps, &w->info.baseline_bcast_ms, &lo, &hi, NULL);
    b.with_broadcast = false;
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_base_run, &b, w->cfg.warmup, w->cfg.reps, &w->info.baseline_ms, &lo, &hi, NULL);
    if (r == CUDA_SUCCESS)
        r = wk_time(w, lce_decomposed_run, NULL, w->cfg.warmup, w->cfg.reps, &w->info.peer_ms, &lo, &hi, NULL);
    if (b.e_full)
        w->cu.cuMemFree(b.e_full);
    if (b.w_full)
        w->cu.cuMemFree(b.w_full);
    if (r != CUDA_SUCCESS)
        return kevo_err_set(err, KEVO_ERR_CUDA, "in-run peers (cuBLAS): %s", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
    double rel_bound, rtol;
    w->cfg.op->tolerance(w->cfg.dtype, &rel_bound, &rtol);
    if (base_nf > 0 || !(w->info.baseline_rel_err <= rel_bound))
        return kevo_err_set(err, KEVO_ERR_INTERNAL,
                            "the cuBLAS baseline disagrees with the reference (rel_err %.3e, %.0f non-finite): "
                            "the reference or the inputs are wrong",
                            w->info.baseline_rel_err, base_nf);
    if (dec_nf > 0 || !(w->info.peer_rel_err <= rel_bound))
        return kevo_err_set(err, KEVO_ERR_INTERNAL,
                            "the decomposed cuBLAS peer disagrees with the reference (rel_err %.3e, %.0f "
                            "non-finite): the reference or the broadcast-add is wrong",
                            w->info.peer_rel_err, dec_nf);
    return KEVO_OK;
}

static kevo_status lce_init(wk_ctx *w, kevo_err *err)
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
    kevo_syms_get(sh, "Kup", &s->Kup);
    kevo_syms_get(sh, "Kcp", &s->Kcp);
    s->elem = 2;
    kevo_status st;
    if ((st = wk_ref_fn(w, "kv_ref", &s->f_ref, err)) || (st = wk_ref_fn(w, "kv_cat_e", &s->f_cat_e, err)) ||
        (st = wk_ref_fn(w, "kv_cat_w", &s->f_cat_w, err)) ||
        (st = wk_ref_fn(w, "kv_bcast_add", &s->f_bcast_add, err)) ||
        (st = wk_ref_fn(w, "kv_ref_add_user", &s->f_ref_add_user, err)) ||
        (st = wk_ref_fn(w, "kv_ref_diff", &s->f_ref_diff, err)))
        return st;
    /* the cuBLAS reference's scratch; without it every check uses kv_ref */
    if (w->cu.cuMemAlloc(&s->user32, (size_t)(s->U * s->M * s->N) * sizeof(float)) != CUDA_SUCCESS)
        s->user32 = 0;
    return s->user32 ? lce_reference_check(w, err) : KEVO_OK;
}

static void lce_fini(wk_ctx *w)
{
    lce_state *s = w->op_state;
    if (!s)
        return;
    if (s->user_res)
        w->cu.cuMemFree(s->user_res);
    if (s->user32)
        w->cu.cuMemFree(s->user32);
    free(s);
    w->op_state = NULL;
}

const kevo_op_gpu kevo_ikbo_lce_gpu = {
    .args_size = sizeof(kevo_lce_args),
    .seq_offset = offsetof(kevo_lce_args, launch_seq),
    .init = lce_init,
    .args = lce_gpu_args,
    .reference = lce_reference,
    .peers = lce_peers,
    .fini = lce_fini,
};
