/* gpu.c — ikbo_lce inside the GPU worker: what the generic evaluation
 * (evaluator/gpu_eval.c) cannot know.  The kernels' argument struct over
 * the worker's tensors, the fp32 reference, and the same-run peers: the
 * stage-0 baseline (materialized broadcast + one cuBLAS strided-batched
 * GEMM, what a PyTorch user runs today), and the two vendor forms at their
 * strongest, on copies of W and E with K padded to 8 and through cuBLASLt
 * with the fastest of its heuristic's top algorithms (evaluator/gemm_lt.c):
 * the decomposed form (user GEMM, candidate GEMM, one broadcast-add) and the
 * beta = 1 form (user GEMM, gather into out, candidate GEMM accumulating,
 * as torch.baddbmm).
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

#include "evaluator/op_gpu.h"
#include "kernels/ikbo_lce/abi.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "util/util.h"

/* Indices into kevo_op_ikbo_lce.tensors (spec.c). */
enum { LCE_W_USER, LCE_W_CAND, LCE_E_USER, LCE_E_CAND, LCE_MAP, LCE_OUT };

/* The op's own state in one worker. */
typedef struct lce_state {
    int64_t B, M, N, Ku, Kc, U, Kup, Kcp;
    int elem; /* bytes per element */
    CUdeviceptr user32;   /* [U, M, N] fp32, the cuBLAS reference's user GEMM output; 0: kv_ref only */
    CUfunction f_ref, f_cat_e, f_cat_w, f_bcast_add, f_ref_add_user, f_ref_diff, f_gather_user, f_pad_k;
    /* the vendor peers' cuBLASLt algorithms as lce_peers chose them, kept
       for a peer run again beside candidates (lce_peer_open); has_* false:
       not chosen in this worker (one started again: peers not timed) */
    cublasLtMatmulAlgo_t algo_user, algo_cand, algo_acc;
    bool has_user, has_cand, has_acc;
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

/* The kv_ref side of lce_reference_check: the stats zeroed, then in slices
 * of `slice` batches kv_ref into simt and its difference with the cuBLAS
 * reference in w->io.ref added into the stats. */
static CUresult lce_reference_diff(wk_ctx *w, CUdeviceptr simt, int64_t slice)
{
    lce_state *s = w->op_state;
    const int64_t mn = s->M * s->N;
    /* fault injection for the tests: the last batch of the cuBLAS reference zeroed */
    if (wk_ref_check_inject("ref"))
        WK_TRY(w->cu.cuMemsetD32Async(w->io.ref + (CUdeviceptr)((s->B - 1) * mn) * sizeof(float), 0, (size_t)mn,
                                      w->stream));
    WK_TRY(w->cu.cuMemsetD8Async(w->io.stats, 0, 8 * sizeof(double), w->stream));
    for (int64_t b0 = 0; b0 < s->B; b0 += slice) {
        int64_t nb = s->B - b0 < slice ? s->B - b0 : slice;
        WK_TRY(lce_reference_simt(w, simt, b0, nb));
        CUdeviceptr x = w->io.ref + (CUdeviceptr)(b0 * mn) * sizeof(float);
        unsigned long long n = (unsigned long long)(nb * mn);
        void *p[] = {&x, &simt, &n, &w->io.stats};
        WK_TRY(wk_launch(w, s->f_ref_diff, wk_blocks(n), 1, 1, 256, 1, 1, 0, p));
    }
    return CUDA_SUCCESS;
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
    if (r == CUDA_SUCCESS)
        r = lce_reference_diff(w, simt, slice);
    return wk_ref_check_verdict(w, r, simt, LCE_REF_AGREE, "kv_ref", err);
}

/* ---- the peers: the stage-0 baseline ---- */

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

/* The same with out in the storage dtype (stage 0). */
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

/* Indices into lce_peers (spec.c). */
enum { LCE_PEER_STAGE0, LCE_PEER_STAGE0_BCAST, LCE_PEER_DECOMPOSED, LCE_PEER_BETA1 };

/* ---- the vendor peers: decomposed and beta = 1, through cuBLASLt ---- */

/* What both vendor peers run on, made once per lce_peers outside their
 * timing, and their GEMMs with the algorithms chosen. */
typedef struct lce_vendor {
    CUdeviceptr e_user_p; /* [U, Kup, N], rows Ku.. zero; 0 when Ku % 8 == 0 (E_user serves) */
    CUdeviceptr e_cand_p; /* [B, Kcp, N], rows Kc.. zero; 0 when Kc % 8 == 0 (E_cand serves) */
    CUdeviceptr user_res; /* [U, M, N] in the storage dtype: the user GEMM's output */
    CUdeviceptr ws;       /* cuBLASLt's workspace, ws_bytes (0: none could be allocated) */
    size_t ws_bytes;
    wk_lt_gemm user;      /* user_res = W_user @ E_user, batch U */
    wk_lt_gemm cand;      /* out = W_cand @ E_cand, batch B (decomposed) */
    wk_lt_gemm cand_acc;  /* out += W_cand @ E_cand, batch B (beta = 1) */
} lce_vendor;

/* *dst = a copy of src [batches, K, N] with rows padded to Kp (zero rows
 * K..Kp-1), or 0 when K == Kp (src serves as it is).  Errors:
 * CUDA_ERROR_OUT_OF_MEMORY (nothing allocated), the launch's. */
static CUresult lce_pad_e(wk_ctx *w, CUdeviceptr *dst, CUdeviceptr src, int64_t batches, int64_t K, int64_t Kp)
{
    lce_state *s = w->op_state;
    *dst = 0;
    if (K == Kp)
        return CUDA_SUCCESS;
    CUresult r = w->cu.cuMemAlloc(dst, (size_t)(batches * Kp * s->N) * (size_t)s->elem);
    if (r != CUDA_SUCCESS) {
        *dst = 0;
        return r;
    }
    unsigned long long nb = (unsigned long long)batches;
    int k = (int)K, kp = (int)Kp, n = (int)s->N;
    unsigned long long units = nb * (unsigned long long)kp * (unsigned long long)(n % 8 == 0 ? n / 8 : n);
    void *p[] = {dst, &src, &nb, &k, &kp, &n};
    return wk_launch(w, s->f_pad_k, wk_blocks(units), 1, 1, 256, 1, 1, 0, p);
}

/* The vendor peers' buffers: E with K padded (lce_pad_e), user_res and
 * cuBLASLt's workspace (WK_LT_WORKSPACE bytes; without it the algorithms
 * that need none).  Synchronizes.  Errors: a driver error (out of memory:
 * not sticky) with why[n] saying which buffer; v keeps what was allocated
 * (lce_vendor_free). */
static CUresult lce_vendor_alloc(wk_ctx *w, lce_vendor *v, char *why, size_t n)
{
    lce_state *s = w->op_state;
    char buf[160], what[96];
    snprintf(what, sizeof what, "E_user with K padded (%lld x %lld x %lld)", (long long)s->U, (long long)s->Kup,
             (long long)s->N);
    CUresult r = lce_pad_e(w, &v->e_user_p, lce_ptr(w, LCE_E_USER, false), s->U, s->Ku, s->Kup);
    if (r == CUDA_SUCCESS) {
        snprintf(what, sizeof what, "E_cand with K padded (%lld x %lld x %lld)", (long long)s->B,
                 (long long)s->Kcp, (long long)s->N);
        r = lce_pad_e(w, &v->e_cand_p, lce_ptr(w, LCE_E_CAND, false), s->B, s->Kc, s->Kcp);
    }
    if (r == CUDA_SUCCESS) {
        snprintf(what, sizeof what, "the user GEMM's output (%lld x %lld x %lld)", (long long)s->U,
                 (long long)s->M, (long long)s->N);
        r = w->cu.cuMemAlloc(&v->user_res, (size_t)(s->U * s->M * s->N) * (size_t)s->elem);
        if (r != CUDA_SUCCESS)
            v->user_res = 0;
    }
    if (r == CUDA_SUCCESS) {
        snprintf(what, sizeof what, "padding E");
        r = w->cu.cuStreamSynchronize(w->stream);
    }
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "%s: %s", what, kv_cu_errstr(&w->cu, r, buf, sizeof buf));
        return r;
    }
    if (w->cu.cuMemAlloc(&v->ws, WK_LT_WORKSPACE) == CUDA_SUCCESS)
        v->ws_bytes = WK_LT_WORKSPACE;
    else
        v->ws = 0;
    return CUDA_SUCCESS;
}

static void lce_vendor_free(wk_ctx *w, lce_vendor *v)
{
    wk_lt_release(w, &v->user);
    wk_lt_release(w, &v->cand);
    wk_lt_release(w, &v->cand_acc);
    CUdeviceptr bufs[] = {v->e_user_p, v->e_cand_p, v->user_res, v->ws};
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++)
        if (bufs[i])
            w->cu.cuMemFree(bufs[i]);
    memset(v, 0, sizeof *v);
}

/* out[b] (M x N) = W (M x Kp, row stride Kp, shared) @ E[b] (Kp x N) +
 * beta out[b], b < batch, as cuBLASLt's column-major out^T = E^T @ W^T
 * (gemm_lt.h): the GEMM of one side with K padded. */
static wk_lt_desc lce_lt_desc(const wk_ctx *w, const lce_vendor *v, CUdeviceptr e, CUdeviceptr wt, int64_t Kp,
                              CUdeviceptr out, int64_t batch, float beta)
{
    const lce_state *s = w->op_state;
    wk_lt_desc d;
    memset(&d, 0, sizeof d);
    d.m = s->N;
    d.n = s->M;
    d.k = Kp;
    d.batch = batch;
    d.a = e;
    d.lda = s->N;
    d.stride_a = Kp * s->N;
    d.b = wt;
    d.ldb = Kp;
    d.stride_b = 0;
    d.d = out;
    d.ldd = s->N;
    d.stride_d = s->M * s->N;
    d.beta = beta;
    d.dtype = w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    d.ws = v->ws;
    d.ws_bytes = v->ws_bytes;
    return d;
}

/* The user GEMM: user_res = W_user @ E_user, batch U, K padded. */
static wk_lt_desc lce_user_desc(const wk_ctx *w, const lce_vendor *v)
{
    const lce_state *s = w->op_state;
    CUdeviceptr e = v->e_user_p ? v->e_user_p : lce_ptr(w, LCE_E_USER, false);
    return lce_lt_desc(w, v, e, lce_ptr(w, LCE_W_USER, true), s->Kup, v->user_res, s->U, 0.0f);
}

/* The candidate GEMM: out (+)= W_cand @ E_cand, batch B, K padded. */
static wk_lt_desc lce_cand_desc(const wk_ctx *w, const lce_vendor *v, float beta)
{
    const lce_state *s = w->op_state;
    CUdeviceptr e = v->e_cand_p ? v->e_cand_p : lce_ptr(w, LCE_E_CAND, false);
    return lce_lt_desc(w, v, e, lce_ptr(w, LCE_W_CAND, true), s->Kcp, lce_ptr(w, LCE_OUT, false), s->B, beta);
}

/* The decomposed form, the strongest a PyTorch user writes without a
 * custom kernel (the IKBO blog's stages 1-2): user_res = bmm(W_user,
 * E_user) at batch U, out = bmm(W_cand, E_cand) at batch B, then out +=
 * user_res[c2u] in one broadcast-add pass.  arg: the lce_vendor. */
static CUresult lce_decomposed_run(wk_ctx *w, void *arg)
{
    lce_state *s = w->op_state;
    lce_vendor *v = arg;
    CUdeviceptr out = lce_ptr(w, LCE_OUT, false), map = lce_ptr(w, LCE_MAP, false);
    WK_TRY(wk_lt_run(w, &v->user));
    WK_TRY(wk_lt_run(w, &v->cand));
    int B = (int)s->B, M = (int)s->M, N = (int)s->N;
    unsigned long long n = (unsigned long long)(s->B * s->M * s->N);
    void *p[] = {&out, &v->user_res, &map, &B, &M, &N};
    return wk_launch(w, s->f_bcast_add, wk_blocks((s->M * s->N) % 8 ? n : n / 8), 1, 1, 256, 1, 1, 0, p);
}

/* The beta = 1 form, torch.baddbmm(index_select(bmm(W_user, E_user), 0,
 * c2u), W_cand.expand(B, -1, -1), E_cand): user_res at batch U, out[b] =
 * user_res[c2u[b]], then out += W_cand @ E_cand[b] (cuBLASLt's beta = 1,
 * C = D = out).  arg: the lce_vendor. */
static CUresult lce_beta1_run(wk_ctx *w, void *arg)
{
    lce_state *s = w->op_state;
    lce_vendor *v = arg;
    CUdeviceptr out = lce_ptr(w, LCE_OUT, false), map = lce_ptr(w, LCE_MAP, false);
    WK_TRY(wk_lt_run(w, &v->user));
    int B = (int)s->B;
    unsigned long long mn = (unsigned long long)(s->M * s->N), n = (unsigned long long)B * mn;
    void *p[] = {&out, &v->user_res, &map, &B, &mn};
    WK_TRY(wk_launch(w, s->f_gather_user, wk_blocks(mn % 8 ? n : n / 8), 1, 1, 256, 1, 1, 0, p));
    return wk_lt_run(w, &v->cand_acc);
}

/* "K padded 866->872, 1178->1184" (Kc, then Ku; a K already a multiple of
 * 8 as it is) into out[n]. */
static void lce_k_text(const lce_state *s, char *out, size_t n)
{
    char kc[48], ku[48];
    if (s->Kc == s->Kcp)
        snprintf(kc, sizeof kc, "%lld", (long long)s->Kc);
    else
        snprintf(kc, sizeof kc, "%lld->%lld", (long long)s->Kc, (long long)s->Kcp);
    if (s->Ku == s->Kup)
        snprintf(ku, sizeof ku, "%lld", (long long)s->Ku);
    else
        snprintf(ku, sizeof ku, "%lld->%lld", (long long)s->Ku, (long long)s->Kup);
    snprintf(out, n, "%s %s, %s", s->Kc == s->Kcp && s->Ku == s->Kup ? "K (multiples of 8)" : "K padded", kc, ku);
}

/* A vendor peer's fig: detail, in one line, what runs ("K padded ...;
 * cuBLASLt user GEMM algo ... (fastest of 8, 0.071 ms); candidate GEMM
 * algo ..."), and config, the JSON export needs to run the same form again:
 * {"form":F,"kup":Kup,"kcp":Kcp,"cublaslt":cublasLtGetVersion(),
 * "workspace":bytes,"gemms":[{"role":"user","algo":HEX},{"role":"cand",
 * "algo":HEX}]}, HEX the 64 raw bytes of cublasLtMatmulAlgo_t in lowercase
 * hex (cand: the beta = 1 GEMM for form "beta1"). */
static void lce_vendor_note(wk_ctx *w, const lce_vendor *v, const char *form, const wk_lt_gemm *cand,
                            kevo_peer_fig *f)
{
    const lce_state *s = w->op_state;
    char k[128], user[128], cd[128], user_hex[WK_LT_ALGO_HEX], cand_hex[WK_LT_ALGO_HEX];
    lce_k_text(s, k, sizeof k);
    wk_lt_describe(w, &v->user, user, sizeof user);
    wk_lt_describe(w, cand, cd, sizeof cd);
    /* each part bounded so the line fits detail (255 characters; ~220 in practice) */
    snprintf(f->detail, sizeof f->detail, "%.37s; cuBLASLt user GEMM %.90s; candidate GEMM %.90s", k, user, cd);
    wk_lt_algo_hex(&v->user, user_hex);
    wk_lt_algo_hex(cand, cand_hex);
    snprintf(f->config, sizeof f->config,
             "{\"form\":\"%s\",\"kup\":%lld,\"kcp\":%lld,\"cublaslt\":%zu,\"workspace\":%zu,\"gemms\":["
             "{\"role\":\"user\",\"algo\":\"%s\"},{\"role\":\"cand\",\"algo\":\"%s\"}]}",
             form, (long long)s->Kup, (long long)s->Kcp, wk_lt_version(w), v->ws_bytes, user_hex, cand_hex);
}

/* One vendor peer: its candidate GEMM g (beta 0 or 1) selected, its fig
 * noted (lce_vendor_note), then checked and timed (wk_peer_run) running
 * fn(w, v).  Where no algorithm runs, the peer is ERROR.  When the check
 * fails or the run errs, detail says why first and what ran after it (the
 * note alone nearly fills detail).  Errors: a driver error that leaves the
 * context unusable. */
static CUresult lce_vendor_peer(wk_ctx *w, lce_vendor *v, int peer, const char *form, wk_lt_gemm *g, float beta,
                                CUresult (*fn)(wk_ctx *, void *), double ref2)
{
    kevo_peer_fig *f = &w->info.peers.p[peer];
    char why[256];
    bool sticky = false;
    wk_lt_desc d = lce_cand_desc(w, v, beta);
    CUresult r = wk_lt_select(w, &d, w->cfg.peer_algos, g, why, sizeof why);
    if (r != CUDA_SUCCESS) {
        wk_fail_of(r, &sticky);
        if (sticky)
            return r;
        wk_peer_error(f, "candidate GEMM: %s", why);
        return CUDA_SUCCESS;
    }
    char note[KEVO_PEER_DETAIL_MAX], verdict[KEVO_PEER_DETAIL_MAX];
    lce_vendor_note(w, v, form, g, f);
    memcpy(note, f->detail, sizeof note);
    f->detail[0] = '\0';
    r = wk_peer_run(w, peer, fn, v, ref2);
    memcpy(verdict, f->detail, sizeof verdict);
    if (verdict[0])
        snprintf(f->detail, sizeof f->detail, "%.120s; %s", verdict, note);
    else
        memcpy(f->detail, note, sizeof note);
    return r;
}

/* The algorithms v chose, kept in s for lce_peer_open. */
static void lce_vendor_keep(lce_state *s, const lce_vendor *v)
{
    if ((s->has_user = v->user.chosen))
        s->algo_user = v->user.algo;
    if ((s->has_cand = v->cand.chosen))
        s->algo_cand = v->cand.algo;
    if ((s->has_acc = v->cand_acc.chosen))
        s->algo_acc = v->cand_acc.algo;
}

/* The vendor peers (decomposed, beta1) on the current inputs (ref2: sum
 * ref^2): their buffers made, the user GEMM's algorithm selected once for
 * both, each peer's candidate GEMM selected and the peer checked and timed;
 * everything freed.  Where cuBLASLt is missing, a buffer does not fit or no
 * algorithm of the user GEMM runs, both are ERROR with the reason.  Errors:
 * a driver error that leaves the context unusable. */
static CUresult lce_vendor_peers(wk_ctx *w, double ref2)
{
    kevo_peer_set *ps = &w->info.peers;
    lce_vendor v;
    memset(&v, 0, sizeof v);
    char why[256];
    bool sticky = false;
    if (!w->lt.h) {
        wk_peer_error(&ps->p[LCE_PEER_DECOMPOSED], "cuBLASLt not available: %s", w->lt.why);
        wk_peer_error(&ps->p[LCE_PEER_BETA1], "cuBLASLt not available: %s", w->lt.why);
        return CUDA_SUCCESS;
    }
    const char *what = "";
    CUresult r = lce_vendor_alloc(w, &v, why, sizeof why);
    if (r == CUDA_SUCCESS) {
        what = "user GEMM: ";
        wk_lt_desc d = lce_user_desc(w, &v);
        r = wk_lt_select(w, &d, w->cfg.peer_algos, &v.user, why, sizeof why);
    }
    if (r != CUDA_SUCCESS) {
        wk_fail_of(r, &sticky);
        if (!sticky) { /* both forms need the buffers and the user GEMM */
            wk_peer_error(&ps->p[LCE_PEER_DECOMPOSED], "%s%s", what, why);
            wk_peer_error(&ps->p[LCE_PEER_BETA1], "%s%s", what, why);
            r = CUDA_SUCCESS;
        }
    } else {
        r = lce_vendor_peer(w, &v, LCE_PEER_DECOMPOSED, "decomposed", &v.cand, 0.0f, lce_decomposed_run, ref2);
        if (r == CUDA_SUCCESS)
            r = lce_vendor_peer(w, &v, LCE_PEER_BETA1, "beta1", &v.cand_acc, 1.0f, lce_beta1_run, ref2);
    }
    lce_vendor_keep(w->op_state, &v);
    lce_vendor_free(w, &v);
    return r;
}

/* ---- the peers, in the op's order ---- */

/* Stage 0 with and without its broadcast, checked and timed (wk_peer_run)
 * on the current inputs (ref2: sum ref^2), the pre-broadcast E and W made
 * and freed here; where they do not fit, both are ERROR.  Errors: a driver
 * error that leaves the context unusable. */
static CUresult lce_stage0_peers(wk_ctx *w, double ref2)
{
    lce_state *s = w->op_state;
    kevo_peer_set *ps = &w->info.peers;
    int64_t K = s->Ku + s->Kc;
    lce_base_arg b = {0};
    CUresult r = CUDA_SUCCESS;
    b.out = lce_ptr(w, LCE_OUT, false);
    b.a = lce_args(w, false);
    if (w->cu.cuMemAlloc(&b.e_full, (size_t)(s->B * K * s->N) * (size_t)s->elem) != CUDA_SUCCESS ||
        w->cu.cuMemAlloc(&b.w_full, (size_t)(s->M * K) * (size_t)s->elem) != CUDA_SUCCESS) {
        wk_peer_error(&ps->p[LCE_PEER_STAGE0_BCAST], "allocating the pre-broadcast E (%lld x %lld x %lld)",
                      (long long)s->B, (long long)K, (long long)s->N);
        ps->p[LCE_PEER_STAGE0] = ps->p[LCE_PEER_STAGE0_BCAST];
    } else {
        b.with_broadcast = true;
        r = wk_peer_run(w, LCE_PEER_STAGE0_BCAST, lce_base_run, &b, ref2);
        b.with_broadcast = false;
        /* e_full and w_full hold the broadcast now: stage 0 proper times the GEMM alone */
        if (r == CUDA_SUCCESS)
            r = wk_peer_run(w, LCE_PEER_STAGE0, lce_base_run, &b, ref2);
    }
    if (b.e_full)
        w->cu.cuMemFree(b.e_full);
    if (b.w_full)
        w->cu.cuMemFree(b.w_full);
    return r;
}

/* Check and time the peers on the timing inputs (the run's seed, sorted
 * map) into w->info.peers: stage 0 with and without its broadcast
 * (lce_stage0_peers), then the vendor forms (lce_vendor_peers). */
static kevo_status lce_peers(wk_ctx *w, kevo_err *err)
{
    double ref2 = 0;
    KV_CU_TRY_AS(&w->cu, err, wk_fill(w, w->cfg.seed, KEVO_MAP_SORTED), "in-run peers: the reference");
    KV_CU_TRY_AS(&w->cu, err, wk_reference(w, &ref2), "in-run peers: the reference");
    KV_CU_TRY_AS(&w->cu, err, lce_stage0_peers(w, ref2), "in-run peers");
    KV_CU_TRY_AS(&w->cu, err, lce_vendor_peers(w, ref2), "in-run peers");
    return KEVO_OK;
}

/* ---- a peer run again beside candidates (kevo_op_gpu.peer_open) ---- */

/* What one peer needs to run again: stage 0's pre-broadcast copies, or a
 * vendor form's buffers and GEMMs. */
typedef struct lce_peer_again {
    int peer;
    lce_base_arg base;
    lce_vendor v;
} lce_peer_again;

/* Stage 0 on the current inputs: E and W pre-broadcast into buffers of its
 * own (made here once when the peer times the GEMM alone, in each run when
 * it times the broadcast too).  Synchronizes.  Errors: the allocation's
 * (why[n] names the buffer), the broadcast's. */
static CUresult lce_stage0_open(wk_ctx *w, lce_base_arg *b, bool with_broadcast, char *why, size_t n)
{
    lce_state *s = w->op_state;
    int64_t K = s->Ku + s->Kc;
    b->out = lce_ptr(w, LCE_OUT, false);
    b->a = lce_args(w, false);
    CUresult r = w->cu.cuMemAlloc(&b->e_full, (size_t)(s->B * K * s->N) * (size_t)s->elem);
    if (r != CUDA_SUCCESS)
        b->e_full = 0;
    else if ((r = w->cu.cuMemAlloc(&b->w_full, (size_t)(s->M * K) * (size_t)s->elem)) != CUDA_SUCCESS)
        b->w_full = 0;
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "allocating the pre-broadcast E (%lld x %lld x %lld) and W", (long long)s->B, (long long)K,
                 (long long)s->N);
        return r;
    }
    b->with_broadcast = true;
    if (!with_broadcast) /* the broadcast once, outside the timing */
        WK_TRY(lce_base_run(w, b));
    b->with_broadcast = with_broadcast;
    return w->cu.cuStreamSynchronize(w->stream);
}

/* A vendor form (beta1, else decomposed) on the current inputs: its
 * buffers (lce_vendor_alloc), the user GEMM and its candidate GEMM with the
 * algorithms lce_peers chose, or chosen now where none is kept.  Errors:
 * CUDA_ERROR_NOT_SUPPORTED (no cuBLASLt, no algorithm), the allocations';
 * why[n] says which. */
static CUresult lce_vendor_open(wk_ctx *w, lce_vendor *v, bool beta1, char *why, size_t n)
{
    const lce_state *s = w->op_state;
    if (!w->lt.h) {
        snprintf(why, n, "cuBLASLt not available: %s", w->lt.why);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    WK_TRY(lce_vendor_alloc(w, v, why, n));
    wk_lt_desc du = lce_user_desc(w, v);
    CUresult r = s->has_user ? wk_lt_adopt(w, &du, &s->algo_user, &v->user, why, n)
                             : wk_lt_select(w, &du, w->cfg.peer_algos, &v->user, why, n);
    if (r != CUDA_SUCCESS)
        return r;
    wk_lt_gemm *g = beta1 ? &v->cand_acc : &v->cand;
    wk_lt_desc dc = lce_cand_desc(w, v, beta1 ? 1.0f : 0.0f);
    const cublasLtMatmulAlgo_t *kept = beta1 ? (s->has_acc ? &s->algo_acc : NULL)
                                             : (s->has_cand ? &s->algo_cand : NULL);
    return kept ? wk_lt_adopt(w, &dc, kept, g, why, n) : wk_lt_select(w, &dc, w->cfg.peer_algos, g, why, n);
}

static void lce_peer_close(wk_ctx *w, void *run)
{
    lce_peer_again *p = run;
    if (!p)
        return;
    if (p->base.e_full)
        w->cu.cuMemFree(p->base.e_full);
    if (p->base.w_full)
        w->cu.cuMemFree(p->base.w_full);
    lce_vendor_free(w, &p->v);
    free(p);
}

/* kevo_op_gpu.peer_open: stage 0 (with or without its broadcast) or a
 * vendor form, on the current inputs. */
static CUresult lce_peer_open(wk_ctx *w, int peer, void **run, char *why, size_t n)
{
    *run = NULL;
    lce_peer_again *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, n, "out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->peer = peer;
    CUresult r;
    if (peer == LCE_PEER_STAGE0 || peer == LCE_PEER_STAGE0_BCAST) {
        r = lce_stage0_open(w, &p->base, peer == LCE_PEER_STAGE0_BCAST, why, n);
    } else if (peer == LCE_PEER_DECOMPOSED || peer == LCE_PEER_BETA1) {
        r = lce_vendor_open(w, &p->v, peer == LCE_PEER_BETA1, why, n);
    } else {
        snprintf(why, n, "ikbo_lce has no peer %d to run", peer);
        r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r != CUDA_SUCCESS) {
        bool sticky = false;
        wk_fail_of(r, &sticky);
        if (!sticky)
            lce_peer_close(w, p);
        return r;
    }
    *run = p;
    return CUDA_SUCCESS;
}

/* kevo_op_gpu.peer_run: the peer once, as lce_peers timed it. */
static CUresult lce_peer_run(wk_ctx *w, void *run)
{
    lce_peer_again *p = run;
    switch (p->peer) {
    case LCE_PEER_STAGE0:
    case LCE_PEER_STAGE0_BCAST:
        return lce_base_run(w, &p->base);
    case LCE_PEER_DECOMPOSED:
        return lce_decomposed_run(w, &p->v);
    case LCE_PEER_BETA1:
        return lce_beta1_run(w, &p->v);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
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
        (st = wk_ref_fn(w, "kv_ref_diff", &s->f_ref_diff, err)) ||
        (st = wk_ref_fn(w, "kv_gather_user", &s->f_gather_user, err)) ||
        (st = wk_ref_fn(w, "kv_pad_k", &s->f_pad_k, err)))
        return st;
    /* the cuBLAS reference's scratch; without it every check uses kv_ref */
    if (w->cu.cuMemAlloc(&s->user32, (size_t)(s->U * s->M * s->N) * sizeof(float)) != CUDA_SUCCESS)
        s->user32 = 0;
    return s->user32 ? lce_reference_check(w, err) : KEVO_OK;
}

/* The cuBLAS reference's user GEMM output, checksummed around every
 * candidate run (kevo_op_gpu.owned). */
static int lce_owned(wk_ctx *w, CUdeviceptr *p, size_t *bytes, int max)
{
    const lce_state *s = w->op_state;
    if (!s || !s->user32 || max < 1)
        return 0;
    p[0] = s->user32;
    bytes[0] = (size_t)(s->U * s->M * s->N) * sizeof(float);
    return 1;
}

static void lce_fini(wk_ctx *w)
{
    lce_state *s = w->op_state;
    if (!s)
        return;
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
    .peer_open = lce_peer_open,
    .peer_run = lce_peer_run,
    .peer_close = lce_peer_close,
    .owned = lce_owned,
    .fini = lce_fini,
};
