/* fake_cublaslt.c — a stand-in for libcublasLt.so, for testing an exported
 * library's vendor path without a GPU (tests/export/fake_driver_lce.c).
 * Built as a shared library (libkevo_fake_cublaslt.so) exporting the
 * cuBLASLt entry points the library loads, with cuBLASLt's own prototypes
 * (cublasLt.h).  It computes nothing: it keeps what descriptors and layouts
 * say and appends one line per call that matters to the file named by
 * KEVO_FAKE_LT_LOG (none: no log):
 *   create                      cublasLtCreate
 *   check algo=HEX              cublasLtMatmulAlgoCheck (accepted unless
 *                               KEVO_FAKE_LT_REFUSE is set)
 *   heuristic ws=BYTES align=A,B,C,D
 *                               cublasLtMatmulAlgoGetHeuristic, which offers
 *                               one algorithm of 64 bytes 0xee
 *   matmul m= n= k= batch= lda= ldb= ldd= sa= sb= sd= rows=...
 *          beta= type= a= b= c= d= ws= wsb= algo=HEX
 *                               cublasLtMatmul: the problem as cuBLAS sees
 *                               it (m, n from D; k from A), every layout's
 *                               batch and stride, beta, the pointers, the
 *                               algorithm's 64 bytes in hex
 * cublasLtGetVersion returns KEVO_FAKE_LT_VERSION (default 130100). */
#define _POSIX_C_SOURCE 200809L
#include <cublasLt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a layout, an operation and a preference hold. */
typedef struct fk_layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld, stride;
    int32_t batch;
} fk_layout;

typedef struct fk_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t ta, tb;
} fk_desc;

typedef struct fk_pref {
    uint64_t ws;
    uint32_t align[4];
} fk_pref;

/* One line appended to $KEVO_FAKE_LT_LOG. */
static void fk_log(const char *fmt, ...)
{
    const char *path = getenv("KEVO_FAKE_LT_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* An algorithm's 64 bytes as hex into out[129]. */
static const char *fk_hex(const cublasLtMatmulAlgo_t *a, char out[129])
{
    const unsigned char *p = (const unsigned char *)a;
    for (int i = 0; i < 64; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
    return out;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    static int handles;
    *h = (cublasLtHandle_t)(uintptr_t)(0x1000 + ++handles);
    fk_log("create");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    (void)h;
    fk_log("destroy");
    return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void)
{
    const char *v = getenv("KEVO_FAKE_LT_VERSION");
    return v ? (size_t)strtoull(v, NULL, 10) : 130100;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld)
{
    fk_layout *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->type = type;
    x->rows = rows;
    x->cols = cols;
    x->ld = ld;
    x->batch = 1;
    *l = (cublasLtMatrixLayout_t)(void *)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    free((void *)l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size)
{
    fk_layout *x = (fk_layout *)(void *)l;
    if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && size == sizeof(int32_t))
        memcpy(&x->batch, buf, size);
    else if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && size == sizeof(int64_t))
        memcpy(&x->stride, buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    fk_desc *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->compute = compute;
    x->scale = scale;
    x->ta = x->tb = -1;
    *d = (cublasLtMatmulDesc_t)(void *)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    free((void *)d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
    fk_desc *x = (fk_desc *)(void *)d;
    if (size != sizeof(int32_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (attr == CUBLASLT_MATMUL_DESC_TRANSA)
        memcpy(&x->ta, buf, size);
    else if (attr == CUBLASLT_MATMUL_DESC_TRANSB)
        memcpy(&x->tb, buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    fk_pref *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    for (int i = 0; i < 4; i++)
        x->align[i] = 256;
    *p = (cublasLtMatmulPreference_t)(void *)x;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    free((void *)p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size)
{
    fk_pref *x = (fk_pref *)(void *)p;
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t))
        memcpy(&x->ws, buf, size);
    else if (attr >= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES &&
             size == sizeof(uint32_t))
        memcpy(&x->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, size);
    else
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int want,
                                              cublasLtMatmulHeuristicResult_t *res, int *got)
{
    (void)h, (void)op, (void)a, (void)b, (void)c, (void)d;
    const fk_pref *p = (const fk_pref *)(void *)pref;
    fk_log("heuristic ws=%llu align=%u,%u,%u,%u", (unsigned long long)p->ws, p->align[0], p->align[1], p->align[2],
           p->align[3]);
    if (want < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(res, 0, sizeof *res);
    memset(&res->algo, 0xee, sizeof res->algo);
    res->workspaceSize = 4096;
    res->state = CUBLAS_STATUS_SUCCESS;
    *got = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t *algo, cublasLtMatmulHeuristicResult_t *res)
{
    (void)h, (void)op, (void)a, (void)b, (void)c, (void)d;
    char hex[129];
    fk_log("check algo=%s", fk_hex(algo, hex));
    memset(res, 0, sizeof *res);
    res->workspaceSize = 1 << 20;
    res->state = CUBLAS_STATUS_SUCCESS;
    return getenv("KEVO_FAKE_LT_REFUSE") ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Ad, const void *B, cublasLtMatrixLayout_t Bd, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsb, cudaStream_t stream)
{
    (void)h, (void)stream;
    const fk_layout *a = (const fk_layout *)(void *)Ad, *b = (const fk_layout *)(void *)Bd;
    const fk_layout *c = (const fk_layout *)(void *)Cd, *d = (const fk_layout *)(void *)Dd;
    const fk_desc *o = (const fk_desc *)(void *)op;
    char hex[129];
    fk_log("matmul m=%llu n=%llu k=%llu batch=%d,%d,%d lda=%lld ldb=%lld ldd=%lld sa=%lld sb=%lld sd=%lld "
           "rows=%llu,%llu,%llu cols=%llu,%llu,%llu alpha=%g beta=%g type=%d,%d,%d compute=%d scale=%d trans=%d,%d "
           "a=%p b=%p c=%p d=%p c_is_d=%d ws=%p wsb=%zu algo=%s",
           (unsigned long long)d->rows, (unsigned long long)d->cols, (unsigned long long)a->cols, a->batch, b->batch,
           d->batch, (long long)a->ld, (long long)b->ld, (long long)d->ld, (long long)a->stride, (long long)b->stride,
           (long long)d->stride, (unsigned long long)a->rows, (unsigned long long)b->rows,
           (unsigned long long)d->rows, (unsigned long long)a->cols, (unsigned long long)b->cols,
           (unsigned long long)d->cols, (double)*(const float *)alpha, (double)*(const float *)beta, (int)a->type,
           (int)b->type, (int)d->type, (int)o->compute, (int)o->scale, o->ta, o->tb, A, B, C, (void *)D,
           C == D && Cd == Dd && c == d, ws, wsb, fk_hex(algo, hex));
    return CUBLAS_STATUS_SUCCESS;
}
