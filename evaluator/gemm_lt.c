/* gemm_lt.c — strided-batched GEMMs through cuBLASLt inside the GPU worker:
 * each described once, the heuristic's top algorithms timed on the device,
 * the fastest kept and run (gemm_lt.h). */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/gemm_lt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"

/* Warm-up and timed runs of each algorithm the heuristic proposes. */
#define LT_WARMUP 3
#define LT_REPS 10

/* "CUBLAS_STATUS_X" for a cuBLAS status (its number when the name is unknown). */
static const char *lt_status(const wk_lt *lt, cublasStatus_t cs, char *buf, size_t n)
{
    const char *name = lt->api.cublasLtGetStatusName ? lt->api.cublasLtGetStatusName(cs) : NULL;
    if (name && *name)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "cuBLAS status %d", (int)cs);
    return buf;
}

void wk_lt_open(wk_ctx *w)
{
    wk_lt *lt = &w->lt;
    kevo_err err;
    kevo_err_clear(&err);
    memset(lt, 0, sizeof *lt);
    if (kv_cublaslt_load(&lt->api, &err) != KEVO_OK) {
        snprintf(lt->why, sizeof lt->why, "%.*s", (int)sizeof lt->why - 1, err.msg);
        return;
    }
    char buf[64];
    cublasStatus_t cs = lt->api.cublasLtCreate(&lt->h);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        lt->h = NULL;
        snprintf(lt->why, sizeof lt->why, "cublasLtCreate: %s", lt_status(lt, cs, buf, sizeof buf));
    }
}

void wk_lt_close(wk_ctx *w)
{
    wk_lt *lt = &w->lt;
    if (lt->h)
        lt->api.cublasLtDestroy(lt->h);
    kv_cublaslt_unload(&lt->api);
    memset(lt, 0, sizeof *lt);
}

size_t wk_lt_version(const wk_ctx *w)
{
    return w->lt.api.cublasLtGetVersion ? w->lt.api.cublasLtGetVersion() : 0;
}

/* *l = a column-major layout of rows x cols (column stride ld) in dt,
 * `batch` matrices `stride` elements apart (0: one shared). */
static cublasStatus_t lt_layout(const wk_lt *lt, cublasLtMatrixLayout_t *l, cudaDataType dt, int64_t rows,
                                int64_t cols, int64_t ld, int64_t batch, int64_t stride)
{
    cublasStatus_t cs = lt->api.cublasLtMatrixLayoutCreate(l, dt, (uint64_t)rows, (uint64_t)cols, ld);
    int32_t count = (int32_t)batch;
    int64_t offset = stride;
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                                      sizeof offset);
    return cs;
}

/* g's operation (fp32 compute and scale, neither operand transposed) and
 * its layouts of A, B and C = D, from d.  Errors: the first failing
 * cuBLASLt status, with why[n] saying which call. */
static cublasStatus_t lt_describe_gemm(const wk_lt *lt, const wk_lt_desc *d, wk_lt_gemm *g, char *why, size_t n)
{
    char buf[64];
    g->d = *d;
    if (d->m < 1 || d->n < 1 || d->k < 1 || d->batch < 1 || d->batch > INT32_MAX) {
        snprintf(why, n, "GEMM %lld x %lld x %lld at batch %lld: out of cuBLASLt's range", (long long)d->m,
                 (long long)d->n, (long long)d->k, (long long)d->batch);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    int32_t op_n = CUBLAS_OP_N;
    cublasStatus_t cs = lt->api.cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_n, sizeof op_n);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, n, "cublasLtMatmulDesc: %s", lt_status(lt, cs, buf, sizeof buf));
        return cs;
    }
    cs = lt_layout(lt, &g->la, d->dtype, d->m, d->k, d->lda, d->batch, d->stride_a);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt_layout(lt, &g->lb, d->dtype, d->k, d->n, d->ldb, d->batch, d->stride_b);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt_layout(lt, &g->ld, d->dtype, d->m, d->n, d->ldd, d->batch, d->stride_d);
    if (cs != CUBLAS_STATUS_SUCCESS)
        snprintf(why, n, "cublasLtMatrixLayout: %s", lt_status(lt, cs, buf, sizeof buf));
    return cs;
}

/* One cublasLtMatmul of g with algo on w->stream: CUDA_ERROR_UNKNOWN (not
 * sticky) when cuBLASLt refuses. */
static CUresult lt_matmul(wk_ctx *w, const wk_lt_gemm *g, const cublasLtMatmulAlgo_t *algo)
{
    const wk_lt *lt = &w->lt;
    const wk_lt_desc *d = &g->d;
    float alpha = 1.0f, beta = d->beta;
    void *dp = (void *)(uintptr_t)d->d;
    size_t ws_bytes = d->ws ? d->ws_bytes : 0;
    void *ws = ws_bytes ? (void *)(uintptr_t)d->ws : NULL;
    cublasStatus_t cs = lt->api.cublasLtMatmul(lt->h, g->op, &alpha, (const void *)(uintptr_t)d->a, g->la,
                                               (const void *)(uintptr_t)d->b, g->lb, &beta, dp, g->ld, dp, g->ld,
                                               algo, ws, ws_bytes, (cudaStream_t)w->stream);
    return cs == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* One candidate algorithm of a selection, as wk_time's argument. */
typedef struct lt_try {
    const wk_lt_gemm *g;
    const cublasLtMatmulAlgo_t *algo;
} lt_try;

static CUresult lt_try_run(wk_ctx *w, void *arg)
{
    const lt_try *t = arg;
    return lt_matmul(w, t->g, t->algo);
}

/* The heuristic's top `want` algorithms for g within d's workspace into
 * res (want entries), their number in *got.  Errors: cuBLASLt's status,
 * why[n] says which call. */
static cublasStatus_t lt_heuristic(const wk_lt *lt, const wk_lt_gemm *g, int want,
                                   cublasLtMatmulHeuristicResult_t *res, int *got, char *why, size_t n)
{
    char buf[64];
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t ws = g->d.ws ? (uint64_t)g->d.ws_bytes : 0;
    *got = 0;
    cublasStatus_t cs = lt->api.cublasLtMatmulPreferenceCreate(&pref);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                          sizeof ws);
    if (cs == CUBLAS_STATUS_SUCCESS)
        cs = lt->api.cublasLtMatmulAlgoGetHeuristic(lt->h, g->op, g->la, g->lb, g->ld, g->ld, pref, want, res, got);
    if (pref)
        lt->api.cublasLtMatmulPreferenceDestroy(pref);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        *got = 0;
        snprintf(why, n, "the cuBLASLt heuristic: %s", lt_status(lt, cs, buf, sizeof buf));
    }
    return cs;
}

/* Time each usable result of res[got] on g, the fastest into g (g->algo,
 * g->ms, g->chosen; g->ran counts those timed).  A sticky driver error is
 * returned at once; an algorithm that fails otherwise is skipped, the last
 * such error in *last. */
static CUresult lt_time_all(wk_ctx *w, wk_lt_gemm *g, const cublasLtMatmulHeuristicResult_t *res, int got,
                            CUresult *last)
{
    size_t ws = g->d.ws ? g->d.ws_bytes : 0;
    for (int i = 0; i < got; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS || res[i].workspaceSize > ws)
            continue;
        lt_try t = {g, &res[i].algo};
        double med = NAN, lo, hi;
        CUresult r = wk_time(w, lt_try_run, &t, LT_WARMUP, LT_REPS, &med, &lo, &hi, NULL);
        if (r != CUDA_SUCCESS) {
            bool sticky = false;
            wk_fail_of(r, &sticky);
            if (sticky)
                return r;
            WK_TRY(w->cu.cuStreamSynchronize(w->stream));
            *last = r;
            continue;
        }
        g->ran++;
        if (!g->chosen || med < g->ms) {
            g->algo = res[i].algo;
            g->ms = med;
            g->chosen = true;
        }
    }
    return CUDA_SUCCESS;
}

/* g cleared and described for d (no algorithm yet).  CUDA_ERROR_NOT_SUPPORTED
 * with why when cuBLASLt is not loaded or refuses the description. */
static CUresult lt_begin(const wk_lt *lt, const wk_lt_desc *d, wk_lt_gemm *g, char *why, size_t n)
{
    memset(g, 0, sizeof *g);
    g->ms = NAN;
    if (!lt->h) {
        snprintf(why, n, "cuBLASLt not available: %s", lt->why);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (lt_describe_gemm(lt, d, g, why, n) != CUBLAS_STATUS_SUCCESS)
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

CUresult wk_lt_select(wk_ctx *w, const wk_lt_desc *d, int nalgos, wk_lt_gemm *g, char *why, size_t n)
{
    const wk_lt *lt = &w->lt;
    char buf[160];
    CUresult b = lt_begin(lt, d, g, why, n);
    if (b != CUDA_SUCCESS)
        return b;
    int want = nalgos <= 0 ? WK_LT_ALGOS_DEFAULT : nalgos > WK_LT_ALGOS_MAX ? WK_LT_ALGOS_MAX : nalgos;
    cublasLtMatmulHeuristicResult_t *res = calloc((size_t)want, sizeof *res);
    if (!res) {
        snprintf(why, n, "out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    int got = 0;
    if (lt_heuristic(lt, g, want, res, &got, why, n) != CUBLAS_STATUS_SUCCESS) {
        free(res);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    g->offered = got;
    CUresult last = CUDA_SUCCESS;
    CUresult r = lt_time_all(w, g, res, got, &last);
    free(res);
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "timing cuBLASLt's algorithms: %s", kv_cu_errstr(&w->cu, r, buf, sizeof buf));
        return r;
    }
    if (!g->chosen) {
        if (got == 0)
            snprintf(why, n, "the cuBLASLt heuristic offers no algorithm");
        else
            snprintf(why, n, "none of the cuBLASLt heuristic's %d algorithms ran%s%s", got,
                     last != CUDA_SUCCESS ? ": " : "",
                     last != CUDA_SUCCESS ? kv_cu_errstr(&w->cu, last, buf, sizeof buf) : "");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult wk_lt_adopt(wk_ctx *w, const wk_lt_desc *d, const cublasLtMatmulAlgo_t *algo, wk_lt_gemm *g, char *why,
                     size_t n)
{
    CUresult b = lt_begin(&w->lt, d, g, why, n);
    if (b != CUDA_SUCCESS)
        return b;
    g->algo = *algo;
    g->chosen = true;
    return CUDA_SUCCESS;
}

CUresult wk_lt_run(wk_ctx *w, const wk_lt_gemm *g)
{
    if (!g->chosen || !w->lt.h)
        return CUDA_ERROR_NOT_READY;
    return lt_matmul(w, g, &g->algo);
}

void wk_lt_release(wk_ctx *w, wk_lt_gemm *g)
{
    const wk_lt *lt = &w->lt;
    if (lt->h) {
        if (g->la)
            lt->api.cublasLtMatrixLayoutDestroy(g->la);
        if (g->lb)
            lt->api.cublasLtMatrixLayoutDestroy(g->lb);
        if (g->ld)
            lt->api.cublasLtMatrixLayoutDestroy(g->ld);
        if (g->op)
            lt->api.cublasLtMatmulDescDestroy(g->op);
    }
    memset(g, 0, sizeof *g);
}

/* Algorithm attribute attr of size `size` into buf; false when cuBLASLt
 * does not report it. */
static bool lt_algo_attr(const wk_lt *lt, const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t attr,
                         void *buf, size_t size)
{
    size_t written = 0;
    return lt->api.cublasLtMatmulAlgoConfigGetAttribute(a, attr, buf, size, &written) == CUBLAS_STATUS_SUCCESS &&
           written == size;
}

void wk_lt_describe(wk_ctx *w, const wk_lt_gemm *g, char *out, size_t n)
{
    const wk_lt *lt = &w->lt;
    if (!g->chosen || !lt->h) {
        snprintf(out, n, "no algorithm chosen");
        return;
    }
    int32_t id = -1, splitk = 1;
    uint32_t tile = 0, stages = 0, swizzle = 0;
    uint16_t cluster = 0;
    lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id);
    lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile);
    lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages);
    lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk);
    bool has_swizzle = lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle);
    bool has_cluster = lt_algo_attr(lt, &g->algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster);
    char sw[24] = "", cl[24] = "";
    if (has_swizzle && swizzle)
        snprintf(sw, sizeof sw, " swizzle %u", (unsigned)swizzle);
    if (has_cluster && cluster)
        snprintf(cl, sizeof cl, " cluster %u", (unsigned)cluster);
    snprintf(out, n, "algo %d tile %u stages %u splitK %d%s%s (fastest of %d, %.3f ms)", (int)id, (unsigned)tile,
             (unsigned)stages, (int)splitk, sw, cl, g->ran, g->ms);
}

void wk_lt_algo_hex(const wk_lt_gemm *g, char out[WK_LT_ALGO_HEX])
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)&g->algo;
    for (size_t i = 0; i < sizeof g->algo; i++) {
        out[2 * i] = hex[p[i] >> 4];
        out[2 * i + 1] = hex[p[i] & 15];
    }
    out[2 * sizeof g->algo] = '\0';
}
