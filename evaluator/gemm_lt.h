/* gemm_lt.h — strided-batched GEMMs through cuBLASLt inside the GPU worker
 * (the peers' vendor forms): describe one, let cuBLASLt's heuristic propose
 * its top algorithms, time each on the device, keep the fastest and run it;
 * say what was chosen as a line and as the algorithm's raw bytes
 * (cublasLtMatmulAlgo_t is documented as trivially serializable: restored
 * with the same cuBLASLt version it runs the same kernel).
 *
 * The worker opens cuBLASLt once (wk_lt_open, never fatal: where it cannot,
 * wk_lt.why says why and the GEMMs' users report it). */
#ifndef KEVO_GEMM_LT_H
#define KEVO_GEMM_LT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/cudrv.h"

struct wk_ctx;

#define WK_LT_ALGOS_DEFAULT 8  /* algorithms of the heuristic's top timed when the config says 0 */
#define WK_LT_ALGOS_MAX 64     /* at most this many */
#define WK_LT_WORKSPACE (32u << 20) /* the workspace a caller offers, bytes */
#define WK_LT_ALGO_HEX (2 * sizeof(cublasLtMatmulAlgo_t) + 1) /* a hex algorithm and its NUL: 129 */

/* The worker's cuBLASLt: the library and a handle, or why there is none. */
typedef struct wk_lt {
    kv_cublaslt api;
    cublasLtHandle_t h; /* NULL: not available (why) */
    char why[192];
} wk_lt;

/* One strided-batched GEMM in cuBLAS's column-major terms:
 *     D[i] (m x n) = A[i] (m x k) @ B[i] (k x n) + beta * D[i],  i < batch,
 * A, B, D of type dtype (CUDA_R_16F or CUDA_R_16BF), fp32 accumulation
 * and scale; both operands not transposed.  X[i] starts stride_x elements after
 * X[i-1] (0: one matrix shared by the batch); ld* are the column strides,
 * elements.  C is D (same pointer and layout), so beta = 1 accumulates into
 * D.  ws/ws_bytes: the workspace the algorithms may use (0 bytes: none).
 * Row-major out[b] (M x N) = W (M x K, row stride ldw) @ E[b] (K x N) is
 * m = N, n = M, k = K, A = E (lda N, stride K*N), B = W (ldb ldw, stride
 * 0), D = out (ldd N, stride M*N). */
typedef struct wk_lt_desc {
    int64_t m, n, k, batch;
    CUdeviceptr a, b, d;
    int64_t lda, ldb, ldd;
    int64_t stride_a, stride_b, stride_d;
    float beta;
    cudaDataType dtype;
    CUdeviceptr ws;
    size_t ws_bytes;
} wk_lt_desc;

/* A described GEMM, its cuBLASLt objects and the algorithm chosen. */
typedef struct wk_lt_gemm {
    wk_lt_desc d;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld; /* ld: C's and D's */
    cublasLtMatmulAlgo_t algo;         /* the fastest; valid when chosen */
    bool chosen;
    int offered; /* algorithms the heuristic returned */
    int ran;     /* of those, the ones that ran and were timed */
    double ms;   /* the chosen one's median, ms */
} wk_lt_gemm;

/* Load cuBLASLt and create w->lt's handle; on failure w->lt.h stays NULL
 * and w->lt.why says why (the worker goes on without it). */
void wk_lt_open(struct wk_ctx *w);

/* Destroy the handle and unload cuBLASLt (safe when never opened). */
void wk_lt_close(struct wk_ctx *w);

/* Describe d in g (layouts, operation), ask the heuristic for its top
 * nalgos algorithms (0: WK_LT_ALGOS_DEFAULT; at most WK_LT_ALGOS_MAX; it
 * may return fewer) within d's workspace, time each (wk_time: 3 warm-up
 * runs, 10 timed, L2 flushed before each) on the buffers d names, and keep
 * the fastest in g (g->chosen).  An algorithm that fails to run is skipped.
 * Returns CUDA_SUCCESS when one was chosen; otherwise why[n] says why
 * ("cuBLASLt not available: ...", "the heuristic: CUBLAS_STATUS_...", "no
 * algorithm ran") and the result is a driver error: CUDA_ERROR_NOT_SUPPORTED
 * for cuBLASLt's own refusals, or the timing's error (sticky or not,
 * wk_fail_of tells).  Call wk_lt_release(g) afterwards either way. */
CUresult wk_lt_select(struct wk_ctx *w, const wk_lt_desc *d, int nalgos, wk_lt_gemm *g, char *why, size_t n);

/* Describe d in g as wk_lt_select does and take algo, an algorithm chosen
 * for the same GEMM before (a peer's re-run keeps the start-of-run
 * choice), without asking the heuristic or timing anything (g->ran 0,
 * g->ms NaN).  Returns CUDA_SUCCESS with g->chosen; otherwise why[n] says
 * why and the result is CUDA_ERROR_NOT_SUPPORTED (cuBLASLt missing or
 * refusing the description).  Call wk_lt_release(g) afterwards either
 * way. */
CUresult wk_lt_adopt(struct wk_ctx *w, const wk_lt_desc *d, const cublasLtMatmulAlgo_t *algo, wk_lt_gemm *g,
                     char *why, size_t n);

/* Run g's chosen algorithm on w->stream (asynchronous).  Errors:
 * CUDA_ERROR_NOT_READY (nothing chosen), CUDA_ERROR_UNKNOWN (cuBLASLt
 * refused: not a sticky error, so a peer calling it is marked ERROR). */
CUresult wk_lt_run(struct wk_ctx *w, const wk_lt_gemm *g);

/* Free g's cuBLASLt objects (g zeroed; safe on a zeroed g). */
void wk_lt_release(struct wk_ctx *w, wk_lt_gemm *g);

/* What g chose, one line into out[n]: "algo 66 tile 24 stages 17 splitK 1
 * swizzle 1 cluster 2 (fastest of 8, 0.071 ms)" (tile, stages and cluster
 * are cuBLASLt's enum values: cublasLtMatmulTile_t, cublasLtMatmulStages_t,
 * cublasLtClusterShape_t; swizzle and cluster only when cuBLASLt reports
 * them and they are not 0). */
void wk_lt_describe(struct wk_ctx *w, const wk_lt_gemm *g, char *out, size_t n);

/* g's chosen algorithm as lowercase hex of its raw bytes (128 characters)
 * into out[WK_LT_ALGO_HEX]. */
void wk_lt_algo_hex(const wk_lt_gemm *g, char out[WK_LT_ALGO_HEX]);

/* cublasLtGetVersion() of the loaded library, 0 when not loaded. */
size_t wk_lt_version(const struct wk_ctx *w);

#endif /* KEVO_GEMM_LT_H */
