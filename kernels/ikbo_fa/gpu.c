/* gpu.c — ikbo_fa inside the GPU worker: what the generic evaluation
 * (evaluator/gpu_eval.c) cannot know.  The kernels' argument struct over the
 * worker's tensors (with the softmax scale of the current input set), the
 * fp32 reference's launch, and the same-run peers: the stage-0 baseline (K
 * and V gathered per candidate, then per head cuBLAS strided-batched QK^T,
 * a row softmax kernel and cuBLAS strided-batched PV: the unfused form a
 * framework falls back to), without and with its gather.  The op's other
 * peer, baseline (b), is measured by `kevo tune` (search/tune.c). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/op_gpu.h"
#include "kernels/ikbo_fa/abi.h"
#include "kernels/ikbo_fa/ikbo_fa.h"
#include "util/util.h"

/* Indices into kevo_op_ikbo_fa.tensors (spec.c). */
enum { FA_Q, FA_K, FA_V, FA_MAP, FA_OUT };

#define FA_LOG2E 1.4426950408889634
#define FA_REF_BM 64                            /* query rows per tile of kv_fa_ref_d* (ref.cu FA_BM) */
#define FA_REF_SMEM(D) ((2 * (D) + 64) * 68 * 4) /* its dynamic shared memory (ref.cu FA_REF_SMEM) */
#define FA_SCRATCH_MAX ((size_t)2 << 30)        /* bytes of the baseline's S and P per chunk of candidates */
#define FA_REF_SCRATCH ((size_t)256 << 20)      /* bytes of the cuBLAS reference's S per chunk of candidates */
#define FA_REF_AGREE 1e-5                       /* rel_err the cuBLAS reference may differ from kv_fa_ref_d* by */
/* Keys per GEMM of the reference's P V on tensor cores: its fp32
 * accumulation loses more over a longer sum (with all of Skv in one GEMM,
 * rel_err against kv_fa_ref_d* grew from 2.5e-6 at Skv 2048 to 1.9e-5 at
 * 16384 on an H100); the chunks' sums are added by the GEMMs' epilogues. */
#define FA_PV_KEYS 512

/* The op's own state in one worker. */
typedef struct fa_state {
    int64_t Bc, H, Sq, D, Skv, U;
    unsigned ref_smem; /* dynamic shared memory of f_ref, bytes */
    CUfunction f_ref, f_gather, f_softmax;
    /* the cuBLAS reference (s32 0: kv_fa_ref_d* serves every check); P V
       on tensor cores where terms is held, else in fp32 from v32 */
    CUfunction f_softmax32, f_to_f32, f_ptrs, f_softmax_terms, f_ptrs_pv;
    CUdeviceptr v32;    /* [U*Skv, H, D] V widened to fp32 */
    CUdeviceptr s32;    /* [ref_chunk, Sq, Skv] fp32 scores, then probabilities */
    CUdeviceptr terms;  /* [fa_terms, ref_chunk, Sq, Skv] P's terms in the storage dtype (kv_fa_softmax_terms) */
    CUdeviceptr ptrs;   /* [6 * ref_chunk] the batched GEMMs' pointer arrays (kv_fa_ptrs, kv_fa_ptrs_pv) */
    int64_t ref_chunk;  /* candidates per batched GEMM */
    /* the baseline's buffers, while its peers() runs (fini frees leftovers) */
    CUdeviceptr kg, vg; /* [Bc*Skv, H, D] K and V gathered per candidate */
    CUdeviceptr s, p;   /* scores [chunk, Sq, Skv] fp32, probabilities in the storage dtype */
    int64_t chunk;      /* candidates per batched GEMM */
} fa_state;

/* The softmax scale of the current input set (kevo_fa_scale). */
static float fa_scale(const wk_ctx *w)
{
    const fa_state *s = w->op_state;
    return (float)kevo_fa_scale(s->D, w->io.cur_map);
}

static CUdeviceptr fa_ptr(const wk_ctx *w, int i)
{
    return w->io.t[i].p;
}

/* The kernel argument struct over the current buffers (tensor maps and
 * launch_seq are the worker's). */
static kevo_fa_args fa_args(wk_ctx *w)
{
    const fa_state *s = w->op_state;
    kevo_fa_args a;
    memset(&a, 0, sizeof a);
    a.q = (const void *)(uintptr_t)fa_ptr(w, FA_Q);
    a.k = (const void *)(uintptr_t)fa_ptr(w, FA_K);
    a.v = (const void *)(uintptr_t)fa_ptr(w, FA_V);
    a.cand_to_user = (const int *)(uintptr_t)fa_ptr(w, FA_MAP);
    a.out = (void *)(uintptr_t)fa_ptr(w, FA_OUT);
    a.workspace = (void *)(uintptr_t)w->io.ws;
    a.Bc = (int)s->Bc;
    a.H = (int)s->H;
    a.Sq = (int)s->Sq;
    a.D = (int)s->D;
    a.Skv = (int)s->Skv;
    a.U = (int)s->U;
    a.scale = fa_scale(w);
    a.scale_log2 = (float)((double)a.scale * FA_LOG2E);
    return a;
}

static void fa_gpu_args(wk_ctx *w, bool padded, int num_sms, void *out)
{
    (void)padded; /* no tensor of ikbo_fa has a padded copy */
    kevo_fa_args a = fa_args(w);
    a.num_sms = num_sms;
    memcpy(out, &a, sizeof a);
}

/* ref = the fp32 reference of the current inputs, at the current scale,
 * by kv_fa_ref_d* (SIMT). */
static CUresult fa_reference_simt(wk_ctx *w, CUdeviceptr ref)
{
    fa_state *s = w->op_state;
    kevo_fa_args a = fa_args(w);
    unsigned long long tiles = (unsigned long long)s->Bc * (unsigned long long)s->H *
                               (unsigned long long)((s->Sq + FA_REF_BM - 1) / FA_REF_BM);
    unsigned grid = (unsigned)(tiles < (1ull << 20) ? tiles : (1ull << 20)); /* a grid-stride loop does the rest */
    void *p[] = {&a, &ref};
    return wk_launch(w, s->f_ref, grid, 1, 1, 256, 1, 1, s->ref_smem, p);
}

static cudaDataType fa_cuda_dtype(const wk_ctx *w);

/* ref.cu's FA_TERMS and FA_TERM_SCALE for the run's dtype. */
static int fa_terms(const wk_ctx *w)
{
    return w->cfg.dtype == KEVO_DTYPE_BF16 ? 3 : 2;
}

static float fa_term_scale(const wk_ctx *w)
{
    return w->cfg.dtype == KEVO_DTYPE_BF16 ? 1.0f : 32768.0f;
}

/* Elements from one of P's terms to the next in s->terms: a chunk's scores. */
static unsigned long long fa_term_stride(const fa_state *s)
{
    return (unsigned long long)s->ref_chunk * (unsigned long long)(s->Sq * s->Skv);
}

/* ref = P V on tensor cores for candidates c0 .. c0+nc-1, head h, from P's
 * terms (kv_fa_softmax_terms): per term and per FA_PV_KEYS keys, one GEMM
 * batched over the candidates (kv_fa_ptrs_pv), O_c^T [D x Sq] += V_u^T [D
 * x L] term_c^T [L x Sq] / FA_TERM_SCALE, fp32 accumulation, added in the
 * epilogue (the first one sets O). */
static CUresult fa_pv_terms(wk_ctx *w, CUdeviceptr ref, long long c0, int nc, int h)
{
    fa_state *s = w->op_state;
    CUdeviceptr map = fa_ptr(w, FA_MAP), v = fa_ptr(w, FA_V);
    int Sq = (int)s->Sq, Skv = (int)s->Skv, H = (int)s->H, D = (int)s->D, row = (int)(s->H * s->D);
    const float alpha = 1.0f / fa_term_scale(w), zero = 0.0f, one = 1.0f;
    const unsigned long long stride = fa_term_stride(s);
    cudaDataType dt = fa_cuda_dtype(w);
    const void *const *arr = (const void *const *)(uintptr_t)s->ptrs;
    for (int t = 0; t < fa_terms(w); t++)
        for (int j0 = 0; j0 < Skv; j0 += FA_PV_KEYS) {
            int L = Skv - j0 < FA_PV_KEYS ? Skv - j0 : FA_PV_KEYS;
            CUdeviceptr term = s->terms + (CUdeviceptr)((unsigned long long)t * stride * 2);
            void *pp[] = {&map, &c0, &nc, &h, &Sq, &Skv, &H, &D, &j0, &v, &term, &ref, &s->ptrs};
            WK_TRY(wk_launch(w, s->f_ptrs_pv, (unsigned)((nc + 255) / 256), 1, 1, 256, 1, 1, 0, pp));
            const float *beta = t == 0 && j0 == 0 ? &zero : &one;
            if (w->cb.cublasGemmBatchedEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, Sq, L, &alpha, arr, dt, row, arr + nc,
                                          dt, Skv, beta, (void *const *)(arr + 2 * nc), CUDA_R_32F, row, nc,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
                return CUDA_ERROR_UNKNOWN;
        }
    return CUDA_SUCCESS;
}

/* The same by cuBLAS: per head and chunk of ref_chunk candidates, S = Q
 * K^T in fp32 (bf16/fp16 products, fp32 accumulation and output), batched
 * over the chunk's candidates through pointer arrays (kv_fa_ptrs), as the
 * column-major S_c^T [Skv x Sq] = K_u [D x Skv]^T Q_c^T [D x Sq] (leading
 * dimensions H*D, Skv); then ref = P V[c2u], as O_c^T [D x Sq] = V_u^T [D
 * x Skv] P_c^T [Skv x Sq]: on tensor cores from P's terms (fa_pv_terms)
 * where terms is held, else from P = softmax(S * scale) in fp32 in place
 * (kv_fa_softmax32) and V widened to fp32 (v32), fp32 operands,
 * CUBLAS_COMPUTE_32F. */
static CUresult fa_reference_blas(wk_ctx *w, CUdeviceptr ref)
{
    fa_state *s = w->op_state;
    unsigned long long nv = (unsigned long long)(s->U * s->Skv * s->H * s->D);
    CUdeviceptr v = fa_ptr(w, FA_V);
    void *pv[] = {&v, &s->v32, &nv};
    if (!s->terms)
        WK_TRY(wk_launch(w, s->f_to_f32, wk_blocks(nv), 1, 1, 256, 1, 1, 0, pv));
    CUdeviceptr map = fa_ptr(w, FA_MAP), k = fa_ptr(w, FA_K), q = fa_ptr(w, FA_Q);
    int Sq = (int)s->Sq, Skv = (int)s->Skv, H = (int)s->H, D = (int)s->D, row = (int)(s->H * s->D);
    float scale = fa_scale(w);
    const float one = 1.0f, zero = 0.0f;
    cudaDataType dt = fa_cuda_dtype(w);
    for (int h = 0; h < H; h++)
        for (long long c0 = 0; c0 < s->Bc; c0 += s->ref_chunk) {
            int nc = (int)(s->Bc - c0 < s->ref_chunk ? s->Bc - c0 : s->ref_chunk);
            void *pp[] = {&map, &c0, &nc, &h, &Sq, &Skv, &H, &D, &k, &q, &s->s32, &s->v32, &ref, &s->ptrs};
            WK_TRY(wk_launch(w, s->f_ptrs, (unsigned)((nc + 255) / 256), 1, 1, 256, 1, 1, 0, pp));
            const void *const *arr = (const void *const *)(uintptr_t)s->ptrs;
            if (w->cb.cublasGemmBatchedEx(w->blas, CUBLAS_OP_T, CUBLAS_OP_N, Skv, Sq, D, &one, arr, dt, row, arr + nc,
                                          dt, row, &zero, (void *const *)(arr + 2 * nc), CUDA_R_32F, Skv, nc,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
                return CUDA_ERROR_UNKNOWN;
            unsigned long long rows = (unsigned long long)nc * (unsigned long long)Sq;
            unsigned grid = (unsigned)(rows < (1ull << 20) ? rows : (1ull << 20));
            if (s->terms) {
                unsigned long long stride = fa_term_stride(s);
                void *pt[] = {&s->s32, &s->terms, &rows, &Skv, &scale, &stride};
                WK_TRY(wk_launch(w, s->f_softmax_terms, grid, 1, 1, 256, 1, 1, 0, pt));
                WK_TRY(fa_pv_terms(w, ref, c0, nc, h));
                continue;
            }
            void *ps[] = {&s->s32, &rows, &Skv, &scale};
            WK_TRY(wk_launch(w, s->f_softmax32, grid, 1, 1, 256, 1, 1, 0, ps));
            if (w->cb.cublasGemmBatchedEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, Sq, Skv, &one, arr + 3 * nc,
                                          CUDA_R_32F, row, arr + 4 * nc, CUDA_R_32F, Skv, &zero,
                                          (void *const *)(arr + 5 * nc), CUDA_R_32F, row, nc, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
                return CUDA_ERROR_UNKNOWN;
        }
    return CUDA_SUCCESS;
}

/* ref = the fp32 reference of the current inputs, at the current scale:
 * cuBLAS where its scratch is held, else kv_fa_ref_d*. */
static CUresult fa_reference(wk_ctx *w)
{
    fa_state *s = w->op_state;
    return s->s32 ? fa_reference_blas(w, w->io.ref) : fa_reference_simt(w, w->io.ref);
}

/* Free the device buffers *bufs[0..n) that are held, and zero them. */
static void fa_free_bufs(wk_ctx *w, CUdeviceptr *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (*bufs[i]) {
            w->cu.cuMemFree(*bufs[i]);
            *bufs[i] = 0;
        }
}

static void fa_free_ref(fa_state *s, wk_ctx *w)
{
    CUdeviceptr *const bufs[] = {&s->v32, &s->s32, &s->terms, &s->ptrs};
    fa_free_bufs(w, bufs, KV_ARRAY_LEN(bufs));
}

/* P V in fp32 from now on: P's terms dropped, V widened to fp32 held (v32);
 * without room for it the cuBLAS reference is dropped and kv_fa_ref_d*
 * serves.  Returns whether the cuBLAS reference stays. */
static bool fa_hold_v32(fa_state *s, wk_ctx *w)
{
    CUdeviceptr *const terms[] = {&s->terms};
    fa_free_bufs(w, terms, 1);
    if (w->cu.cuMemAlloc(&s->v32, (size_t)(s->U * s->Skv * s->H * s->D) * sizeof(float)) == CUDA_SUCCESS)
        return true;
    s->v32 = 0;
    fa_free_ref(s, w);
    return false;
}

/* The kv_fa_ref_d* side of fa_reference_check_once: its output into simt
 * (n elements), stats[2] = ||simt||^2, then simt -= the cuBLAS reference
 * in w->io.ref and stats[0] = ||simt||^2.  Errors: the driver's;
 * CUDA_ERROR_UNKNOWN when cuBLAS's saxpy refuses. */
static CUresult fa_reference_diff(wk_ctx *w, CUdeviceptr simt)
{
    fa_state *s = w->op_state;
    const unsigned long long n = (unsigned long long)(s->Bc * s->Sq * s->H * s->D);
    /* fault injection for the tests: the last candidate's rows of the cuBLAS reference zeroed (ref_tc: only
     * where P V runs on tensor cores, so that the fp32 one serves) */
    unsigned long long per_c = (unsigned long long)(s->Sq * s->H * s->D);
    if (wk_ref_check_inject("ref") || (s->terms && wk_ref_check_inject("ref_tc")))
        WK_TRY(w->cu.cuMemsetD32Async(w->io.ref + (CUdeviceptr)((n - per_c) * sizeof(float)), 0, (size_t)per_c,
                                      w->stream));
    CUdeviceptr st2 = w->io.stats + 2 * sizeof(double);
    void *pd[] = {&simt, (void *)&n, &w->io.stats};
    void *pr[] = {&simt, (void *)&n, &st2};
    WK_TRY(fa_reference_simt(w, simt));
    WK_TRY(w->cu.cuMemsetD8Async(w->io.stats, 0, 8 * sizeof(double), w->stream));
    WK_TRY(wk_launch(w, w->io.f_sumsq, wk_blocks(n), 1, 1, 256, 1, 1, 0, pr)); /* stats[2] = ||simt||^2 */
    /* simt -= blas, in pieces cuBLAS's int count takes; stats[0] = its ||.||^2 */
    const float minus_one = -1.0f;
    for (unsigned long long i = 0; i < n; i += 1ull << 30) {
        int m = (int)(n - i < (1ull << 30) ? n - i : (1ull << 30));
        if (w->cb.cublasSaxpy_v2(w->blas, m, &minus_one, (const float *)(uintptr_t)(w->io.ref + i * sizeof(float)),
                                 1, (float *)(uintptr_t)(simt + i * sizeof(float)), 1) != CUBLAS_STATUS_SUCCESS)
            return CUDA_ERROR_UNKNOWN;
    }
    return wk_launch(w, w->io.f_sumsq, wk_blocks(n), 1, 1, 256, 1, 1, 0, pd);
}

/* Hold the cuBLAS reference, as it stands (P V on tensor cores or in
 * fp32), to kv_fa_ref_d* on inputs of the worker's own (the run's seed
 * mixed, shuffled map): rel_err = ||simt - blas|| / ||simt|| (cuBLAS's
 * saxpy, kv_sumsq; a NaN anywhere makes it NaN, which fails).  Where cuBLAS
 * fails to run or kv_fa_ref_d*'s copy does not fit, the cuBLAS scratch is
 * dropped and kv_fa_ref_d* serves.  Errors: wk_ref_check_verdict's, with
 * bound FA_REF_AGREE. */
static kevo_status fa_reference_check_once(wk_ctx *w, kevo_err *err)
{
    fa_state *s = w->op_state;
    const unsigned long long n = (unsigned long long)(s->Bc * s->Sq * s->H * s->D);
    CUdeviceptr simt = 0;
    CUresult r = wk_ref_check_fill(w);
    if (r == CUDA_SUCCESS && (w->cu.cuMemAlloc(&simt, (size_t)n * sizeof(float)) != CUDA_SUCCESS ||
                              fa_reference_blas(w, w->io.ref) != CUDA_SUCCESS)) {
        fa_free_ref(s, w);
        if (simt)
            w->cu.cuMemFree(simt);
        return KEVO_OK;
    }
    if (r == CUDA_SUCCESS)
        r = fa_reference_diff(w, simt);
    return wk_ref_check_verdict(w, r, simt, FA_REF_AGREE,
                                s->terms ? "kv_fa_ref (P V, tensor cores)" : "kv_fa_ref (P V in fp32)", err);
}

/* The cuBLAS reference, checked: with P V on tensor cores where terms is
 * held and it agrees with kv_fa_ref_d*, else (it disagrees: the tensor
 * cores' fp32 accumulation over long rows) with P V in fp32 from V widened
 * (v32), which must agree.  Without room for v32, kv_fa_ref_d* serves.
 * Errors: fa_reference_check_once's. */
static kevo_status fa_reference_check(wk_ctx *w, kevo_err *err)
{
    fa_state *s = w->op_state;
    kevo_status st = fa_reference_check_once(w, err);
    if (st != KEVO_ERR_INTERNAL || !s->terms)
        return st;
    if (!fa_hold_v32(s, w))
        return KEVO_OK;
    kevo_err_clear(err);
    return fa_reference_check_once(w, err);
}

/* ---- the peers: the stage-0 baseline ---- */

static cudaDataType fa_cuda_dtype(const wk_ctx *w)
{
    return w->cfg.dtype == KEVO_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* S[c] = Q[c] Kg[c]^T (fp32, [Sq, Skv]) for nc candidates from c0, head h:
 * row-major S is column-major S^T [Skv x Sq] = Kg_c^T Q_c^T, both operands
 * column-major [D x rows] with leading dimension H*D. */
static CUresult fa_gemm_qk(wk_ctx *w, int64_t c0, int64_t nc, int64_t h)
{
    fa_state *s = w->op_state;
    const int64_t row = s->H * s->D;
    const float alpha = 1.0f, beta = 0.0f;
    CUdeviceptr kg = s->kg + (CUdeviceptr)((c0 * s->Skv * row + h * s->D) * 2);
    CUdeviceptr q = fa_ptr(w, FA_Q) + (CUdeviceptr)((c0 * s->Sq * row + h * s->D) * 2);
    cudaDataType dt = fa_cuda_dtype(w);
    cublasStatus_t cs = w->cb.cublasGemmStridedBatchedEx(
        w->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)s->Skv, (int)s->Sq, (int)s->D, &alpha, (const void *)(uintptr_t)kg, dt,
        (int)row, (long long)(s->Skv * row), (const void *)(uintptr_t)q, dt, (int)row, (long long)(s->Sq * row), &beta,
        (void *)(uintptr_t)s->s, CUDA_R_32F, (int)s->Skv, (long long)(s->Sq * s->Skv), (int)nc, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* out[c] (rows of head h) = P[c] Vg[c] for nc candidates from c0: column-major
 * out_c^T [D x Sq] (ld H*D) = Vg_c^T [D x Skv] (ld H*D) P_c^T [Skv x Sq] (ld Skv). */
static CUresult fa_gemm_pv(wk_ctx *w, int64_t c0, int64_t nc, int64_t h)
{
    fa_state *s = w->op_state;
    const int64_t row = s->H * s->D;
    const float alpha = 1.0f, beta = 0.0f;
    CUdeviceptr vg = s->vg + (CUdeviceptr)((c0 * s->Skv * row + h * s->D) * 2);
    CUdeviceptr out = fa_ptr(w, FA_OUT) + (CUdeviceptr)((c0 * s->Sq * row + h * s->D) * 2);
    cudaDataType dt = fa_cuda_dtype(w);
    cublasStatus_t cs = w->cb.cublasGemmStridedBatchedEx(
        w->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)s->D, (int)s->Sq, (int)s->Skv, &alpha, (const void *)(uintptr_t)vg, dt,
        (int)row, (long long)(s->Skv * row), (const void *)(uintptr_t)s->p, dt, (int)s->Skv,
        (long long)(s->Sq * s->Skv), &beta, (void *)(uintptr_t)out, dt, (int)row, (long long)(s->Sq * row), (int)nc,
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* P = softmax(S * scale) row by row, nc * Sq rows. */
static CUresult fa_softmax(wk_ctx *w, int64_t nc)
{
    fa_state *s = w->op_state;
    unsigned long long rows = (unsigned long long)(nc * s->Sq);
    int skv = (int)s->Skv;
    float scale = fa_scale(w);
    unsigned grid = (unsigned)(rows < (1ull << 20) ? rows : (1ull << 20));
    void *p[] = {&s->s, &s->p, &rows, &skv, &scale};
    return wk_launch(w, s->f_softmax, grid, 1, 1, 256, 1, 1, 0, p);
}

/* Kg = K[cand_to_user], Vg = V[cand_to_user]: [Bc*Skv, H, D] each. */
static CUresult fa_gather(wk_ctx *w)
{
    fa_state *s = w->op_state;
    CUdeviceptr map = fa_ptr(w, FA_MAP);
    int bc = (int)s->Bc, skv = (int)s->Skv;
    unsigned long long row = (unsigned long long)(s->H * s->D);
    unsigned long long pieces = (unsigned long long)s->Bc * (unsigned long long)s->Skv * row / 8;
    CUdeviceptr src[2] = {fa_ptr(w, FA_K), fa_ptr(w, FA_V)}, dst[2] = {s->kg, s->vg};
    for (int i = 0; i < 2; i++) {
        void *p[] = {&src[i], &map, &bc, &skv, &row, &dst[i]};
        WK_TRY(wk_launch(w, s->f_gather, wk_blocks(pieces), 1, 1, 256, 1, 1, 0, p));
    }
    return CUDA_SUCCESS;
}

/* Stage 0: per head, per chunk of candidates, QK^T, softmax, PV; with the
 * gather first when arg points to true (what a framework runs each call). */
static CUresult fa_base_run(wk_ctx *w, void *arg)
{
    fa_state *s = w->op_state;
    if (*(const bool *)arg)
        WK_TRY(fa_gather(w));
    for (int64_t h = 0; h < s->H; h++)
        for (int64_t c0 = 0; c0 < s->Bc; c0 += s->chunk) {
            int64_t nc = s->Bc - c0 < s->chunk ? s->Bc - c0 : s->chunk;
            WK_TRY(fa_gemm_qk(w, c0, nc, h));
            WK_TRY(fa_softmax(w, nc));
            WK_TRY(fa_gemm_pv(w, c0, nc, h));
        }
    return CUDA_SUCCESS;
}

static void fa_free_peers(wk_ctx *w)
{
    fa_state *s = w->op_state;
    CUdeviceptr *const bufs[] = {&s->kg, &s->vg, &s->s, &s->p};
    fa_free_bufs(w, bufs, KV_ARRAY_LEN(bufs));
}

/* Allocate the baseline's buffers: the gathered K and V whole, S and P for
 * one chunk of candidates (at most FA_SCRATCH_MAX bytes unless one
 * candidate needs more). */
static CUresult fa_alloc_peers(wk_ctx *w, size_t *failed_bytes)
{
    fa_state *s = w->op_state;
    size_t kv = (size_t)s->Bc * (size_t)s->Skv * (size_t)(s->H * s->D) * 2;
    size_t per_cand = (size_t)s->Sq * (size_t)s->Skv * (4 + 2);
    s->chunk = (int64_t)(FA_SCRATCH_MAX / per_cand);
    if (s->chunk < 1)
        s->chunk = 1;
    if (s->chunk > s->Bc)
        s->chunk = s->Bc;
    size_t sp = (size_t)s->chunk * (size_t)s->Sq * (size_t)s->Skv;
    struct {
        CUdeviceptr *p;
        size_t bytes;
    } b[] = {{&s->kg, kv}, {&s->vg, kv}, {&s->s, sp * 4}, {&s->p, sp * 2}};
    for (size_t i = 0; i < KV_ARRAY_LEN(b); i++) {
        CUresult r = w->cu.cuMemAlloc(b[i].p, b[i].bytes);
        if (r != CUDA_SUCCESS) {
            *failed_bytes = b[i].bytes;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

/* Indices into fa_peers (spec.c). */
enum { FA_PEER_STAGE0, FA_PEER_STAGE0_GATHER };

/* Check and time the peers on the timing inputs (the run's seed, sorted
 * map, so the default scale) into w->info.peers: stage 0 with its gather,
 * then without it.  Baseline (b), the run's best kevo FA kernel on
 * gathered K/V plus the gather, needs the search's winner and is measured
 * by `kevo tune` after the search, on a worker of its own
 * (kevo_op.nocodesign_shape), with the gather's time taken from these
 * two. */
static kevo_status fa_peers(wk_ctx *w, kevo_err *err)
{
    fa_state *s = w->op_state;
    kevo_peer_set *ps = &w->info.peers;
    if (s->H * s->D > INT_MAX) {
        wk_peer_error(&ps->p[FA_PEER_STAGE0], "a row of H * D = %lld elements is past cuBLAS's int leading dimension",
                      (long long)(s->H * s->D));
        ps->p[FA_PEER_STAGE0_GATHER] = ps->p[FA_PEER_STAGE0];
        return KEVO_OK;
    }
    double ref2 = 0;
    bool gather = true, no_gather = false;
    KV_CU_TRY_AS(&w->cu, err, wk_fill(w, w->cfg.seed, KEVO_MAP_SORTED), "in-run peers: the reference");
    KV_CU_TRY_AS(&w->cu, err, wk_reference(w, &ref2), "in-run peers: the reference");
    size_t failed = 0;
    if (fa_alloc_peers(w, &failed) != CUDA_SUCCESS) {
        fa_free_peers(w);
        wk_peer_error(&ps->p[FA_PEER_STAGE0_GATHER], "allocating %zu bytes for the gathered K/V or S and P", failed);
        ps->p[FA_PEER_STAGE0] = ps->p[FA_PEER_STAGE0_GATHER];
        return KEVO_OK;
    }
    CUresult r = wk_peer_run(w, FA_PEER_STAGE0_GATHER, fa_base_run, &gather, ref2);
    /* the gathered K/V of the timing inputs are in place from the runs above */
    if (r == CUDA_SUCCESS)
        r = wk_peer_run(w, FA_PEER_STAGE0, fa_base_run, &no_gather, ref2);
    fa_free_peers(w);
    KV_CU_TRY_AS(&w->cu, err, r, "in-run peers (cuBLAS)");
    return KEVO_OK;
}

/* ---- a peer run again beside candidates (kevo_op_gpu.peer_open) ---- */

/* kevo_op_gpu.peer_open: stage 0 with or without its gather on the
 * current inputs, in the baseline's buffers (fa_alloc_peers; the gather
 * run here once when the peer times the attention alone).  *run points to
 * whether each run gathers.  Synchronizes.  Errors: CUDA_ERROR_NOT_SUPPORTED
 * (nocodesign runs after the search; a row past cuBLAS's ints), the
 * allocations' and the gather's, why[n] saying which. */
static CUresult fa_peer_open(wk_ctx *w, int peer, void **run, char *why, size_t n)
{
    static const bool gather = true, no_gather = false;
    fa_state *s = w->op_state;
    *run = NULL;
    if (peer != FA_PEER_STAGE0 && peer != FA_PEER_STAGE0_GATHER) {
        snprintf(why, n, "ikbo_fa runs only stage 0 (with or without its gather) beside candidates, not peer %d",
                 peer);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (s->H * s->D > INT_MAX) {
        snprintf(why, n, "a row of H * D = %lld elements is past cuBLAS's int leading dimension",
                 (long long)(s->H * s->D));
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t failed = 0;
    CUresult r = fa_alloc_peers(w, &failed);
    if (r != CUDA_SUCCESS)
        snprintf(why, n, "allocating %zu bytes for the gathered K/V or S and P", failed);
    else if (peer == FA_PEER_STAGE0 && (r = fa_gather(w)) != CUDA_SUCCESS)
        snprintf(why, n, "the gather of K/V");
    if (r == CUDA_SUCCESS)
        r = w->cu.cuStreamSynchronize(w->stream);
    if (r != CUDA_SUCCESS) {
        bool sticky = false;
        wk_fail_of(r, &sticky);
        if (!sticky)
            fa_free_peers(w);
        return r;
    }
    *run = (void *)(uintptr_t)(peer == FA_PEER_STAGE0_GATHER ? &gather : &no_gather);
    return CUDA_SUCCESS;
}

/* kevo_op_gpu.peer_run: stage 0 once, as fa_peers timed it. */
static CUresult fa_peer_run(wk_ctx *w, void *run)
{
    return fa_base_run(w, run);
}

static void fa_peer_close(wk_ctx *w, void *run)
{
    (void)run;
    fa_free_peers(w);
}

static kevo_status fa_init(wk_ctx *w, kevo_err *err)
{
    fa_state *s = calloc(1, sizeof *s);
    if (!s)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    w->op_state = s;
    const kevo_syms *sh = &w->cfg.shape;
    kevo_syms_get(sh, "Bc", &s->Bc);
    kevo_syms_get(sh, "H", &s->H);
    kevo_syms_get(sh, "Sq", &s->Sq);
    kevo_syms_get(sh, "D", &s->D);
    kevo_syms_get(sh, "Skv", &s->Skv);
    kevo_syms_get(sh, "U", &s->U);
    if (s->D != 64 && s->D != 128)
        return kevo_err_set(err, KEVO_ERR_ARG, "ikbo_fa: head dimension D=%lld, not 64 or 128", (long long)s->D);
    kevo_status st;
    if ((st = wk_ref_fn(w, s->D == 64 ? "kv_fa_ref_d64" : "kv_fa_ref_d128", &s->f_ref, err)) ||
        (st = wk_ref_fn(w, "kv_fa_gather", &s->f_gather, err)) ||
        (st = wk_ref_fn(w, "kv_fa_softmax", &s->f_softmax, err)) ||
        (st = wk_ref_fn(w, "kv_fa_softmax32", &s->f_softmax32, err)) ||
        (st = wk_ref_fn(w, "kv_to_f32", &s->f_to_f32, err)) || (st = wk_ref_fn(w, "kv_fa_ptrs", &s->f_ptrs, err)) ||
        (st = wk_ref_fn(w, "kv_fa_softmax_terms", &s->f_softmax_terms, err)) ||
        (st = wk_ref_fn(w, "kv_fa_ptrs_pv", &s->f_ptrs_pv, err)))
        return st;
    s->ref_smem = (unsigned)FA_REF_SMEM(s->D);
    KV_CU_TRY_AS(&w->cu, err,
                 w->cu.cuFuncSetAttribute(s->f_ref, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)s->ref_smem),
                 "the reference's %u bytes of shared memory", s->ref_smem);
    /* the cuBLAS reference's scratch; without it (or past cuBLAS's int
       dimensions) every check uses kv_fa_ref_d* */
    size_t per_c = (size_t)(s->Sq * s->Skv) * sizeof(float);
    s->ref_chunk = (int64_t)(FA_REF_SCRATCH / per_c);
    s->ref_chunk = s->ref_chunk < 1 ? 1 : s->ref_chunk > s->Bc ? s->Bc : s->ref_chunk;
    if (s->H * s->D > INT_MAX || s->Sq * s->Skv > INT_MAX || s->ref_chunk > INT_MAX)
        return KEVO_OK;
    if (w->cu.cuMemAlloc(&s->s32, (size_t)s->ref_chunk * per_c) != CUDA_SUCCESS ||
        w->cu.cuMemAlloc(&s->ptrs, (size_t)(6 * s->ref_chunk) * sizeof(unsigned long long)) != CUDA_SUCCESS) {
        fa_free_ref(s, w);
        return KEVO_OK;
    }
    /* P's terms, in the storage dtype (2 bytes), for P V on tensor cores; else V in fp32 */
    if (w->cu.cuMemAlloc(&s->terms, (size_t)fa_terms(w) * (size_t)fa_term_stride(s) * 2) != CUDA_SUCCESS) {
        s->terms = 0;
        if (!fa_hold_v32(s, w))
            return KEVO_OK;
    }
    return fa_reference_check(w, err);
}

/* The cuBLAS reference's scratch, checksummed around every candidate run
 * (kevo_op_gpu.owned): V in fp32, S, P's terms, the pointer arrays. */
static int fa_owned(wk_ctx *w, CUdeviceptr *p, size_t *bytes, int max)
{
    const fa_state *s = w->op_state;
    if (!s)
        return 0;
    const CUdeviceptr b[] = {s->v32, s->s32, s->terms, s->ptrs};
    const size_t n[] = {(size_t)(s->U * s->Skv * s->H * s->D) * sizeof(float),
                        (size_t)s->ref_chunk * (size_t)(s->Sq * s->Skv) * sizeof(float),
                        (size_t)fa_terms(w) * (size_t)fa_term_stride(s) * 2,
                        (size_t)(6 * s->ref_chunk) * sizeof(unsigned long long)};
    int k = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(b) && k < max; i++)
        if (b[i]) {
            p[k] = b[i];
            bytes[k++] = n[i];
        }
    return k;
}

static void fa_fini(wk_ctx *w)
{
    if (!w->op_state)
        return;
    fa_free_peers(w);
    fa_free_ref(w->op_state, w);
    free(w->op_state);
    w->op_state = NULL;
}

const kevo_op_gpu kevo_ikbo_fa_gpu = {
    .args_size = sizeof(kevo_fa_args),
    .seq_offset = offsetof(kevo_fa_args, launch_seq),
    .init = fa_init,
    .args = fa_gpu_args,
    .reference = fa_reference,
    .peers = fa_peers,
    .peer_open = fa_peer_open,
    .peer_run = fa_peer_run,
    .peer_close = fa_peer_close,
    .owned = fa_owned,
    .fini = fa_fini,
};
