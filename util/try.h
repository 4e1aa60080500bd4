/* try.h — the one family of error checks: a generator, KV_TRY_GEN, and the
 * checks it builds for each library kevo calls.  Each check evaluates a call
 * once and, when it failed, returns from the calling function with a
 * kevo_status, having filled the caller's kevo_err with the call's name and
 * the library's own text for the failure:
 *
 *   KV_CU_TRY(cu, err, call)        CUDA driver (evaluator/cudrv.h: kv_cu_errstr,
 *                                   cuGetErrorName + cuGetErrorString)   KEVO_ERR_CUDA
 *   KV_CUBLAS_TRY(cb, err, call)    cuBLAS (cudrv.h: kv_cublas_errstr,
 *                                   cublasGetStatusString)               KEVO_ERR_CUDA
 *   KV_NVRTC_TRY(err, call)         NVRTC (nvrtcGetErrorString)          KEVO_ERR_NVRTC
 *   KV_SQL_TRY(db, err, call)       SQLite (sqlite3_errmsg(db))          KEVO_ERR_BUSY on
 *                                   SQLITE_BUSY/LOCKED, KEVO_ERR_NOMEM on NOMEM, else KEVO_ERR_DB
 *   KV_MPI_TRY(err, call)           MPI (MPI_Error_string)               KEVO_ERR_WORKER
 *   KV_CURL_TRY(err, call)          libcurl (curl_easy_strerror)         KEVO_ERR_IO
 *
 * The message is "NAME: TEXT", NAME the called function ("cuDeviceGet" for
 * `cu->cuDeviceGet(&d, 0)`).  Each check has an _AS form whose printf-style
 * tail replaces NAME: KV_MPI_TRY_AS(err, rc, "sending to rank %d failed",
 * dest).  The _RET form (KV_CU_TRY_RET) returns the library's own result
 * instead, for helpers that pass a CUresult up.
 *
 * This header includes no library: a file that uses a check includes the
 * library's header (and evaluator/cudrv.h for the CUDA ones) itself; the
 * macros name its functions only where they expand.  In the manner of
 * ggml's CUDA_CHECK_GEN. */
#ifndef KEVO_TRY_H
#define KEVO_TRY_H

#include "kevo.h"

/* Bytes of the scratch a library's text may need (MPI_MAX_ERROR_STRING is
 * 256 in Open MPI and MPICH). */
#define KV_TRY_TEXT_MAX 1024

/* The generator.  T: the call's result type; ok: whether kv_r_ (the result)
 * is success; on_fail: the statement run otherwise, which sees kv_r_ and a
 * scratch buffer kv_tb_[KV_TRY_TEXT_MAX] for the library's text. */
#define KV_TRY_GEN(T, call, ok, on_fail)                                                                               \
    do {                                                                                                               \
        T kv_r_ = (call);                                                                                              \
        if (!(ok)) {                                                                                                   \
            char kv_tb_[KV_TRY_TEXT_MAX];                                                                              \
            (void)kv_tb_;                                                                                              \
            on_fail;                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Fill err with "NAME: text", NAME the function called in call_text (the
 * last identifier before its first '('); returns status. */
kevo_status kv_try_fail(kevo_err *err, kevo_status status, const char *call_text, const char *text);

/* Fill err with "<fmt, ...>: text"; returns status. */
kevo_status kv_try_failf(kevo_err *err, kevo_status status, const char *text, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* MPI_Error_string's text for code into buf[n] ("MPI error N" when it has
 * none); error_string is MPI_Error_string, passed so that this header needs
 * no mpi.h. */
const char *kv_try_mpi_text(int code, int (*error_string)(int, char *, int *), char *buf, int n);

/* ---- the checks ---- */

#define KV_CU_OK_(r) ((r) == CUDA_SUCCESS)
#define KV_CU_TEXT_(cu) kv_cu_errstr((cu), kv_r_, kv_tb_, sizeof kv_tb_)
#define KV_CU_TRY(cu, err, call)                                                                                       \
    KV_TRY_GEN(CUresult, call, KV_CU_OK_(kv_r_), return kv_try_fail((err), KEVO_ERR_CUDA, #call, KV_CU_TEXT_(cu)))
#define KV_CU_TRY_AS(cu, err, call, ...)                                                                               \
    KV_TRY_GEN(CUresult, call, KV_CU_OK_(kv_r_), return kv_try_failf((err), KEVO_ERR_CUDA, KV_CU_TEXT_(cu), __VA_ARGS__))
#define KV_CU_TRY_RET(call) KV_TRY_GEN(CUresult, call, KV_CU_OK_(kv_r_), return kv_r_)

#define KV_CUBLAS_OK_(r) ((r) == CUBLAS_STATUS_SUCCESS)
#define KV_CUBLAS_TEXT_(cb) kv_cublas_errstr((cb), kv_r_, kv_tb_, sizeof kv_tb_)
#define KV_CUBLAS_TRY(cb, err, call)                                                                                   \
    KV_TRY_GEN(cublasStatus_t, call, KV_CUBLAS_OK_(kv_r_),                                                            \
               return kv_try_fail((err), KEVO_ERR_CUDA, #call, KV_CUBLAS_TEXT_(cb)))
#define KV_CUBLAS_TRY_AS(cb, err, call, ...)                                                                           \
    KV_TRY_GEN(cublasStatus_t, call, KV_CUBLAS_OK_(kv_r_),                                                            \
               return kv_try_failf((err), KEVO_ERR_CUDA, KV_CUBLAS_TEXT_(cb), __VA_ARGS__))

#define KV_NVRTC_TRY(err, call)                                                                                        \
    KV_TRY_GEN(nvrtcResult, call, kv_r_ == NVRTC_SUCCESS,                                                             \
               return kv_try_fail((err), KEVO_ERR_NVRTC, #call, nvrtcGetErrorString(kv_r_)))
#define KV_NVRTC_TRY_AS(err, call, ...)                                                                                \
    KV_TRY_GEN(nvrtcResult, call, kv_r_ == NVRTC_SUCCESS,                                                             \
               return kv_try_failf((err), KEVO_ERR_NVRTC, nvrtcGetErrorString(kv_r_), __VA_ARGS__))

#define KV_SQL_STATUS_(r)                                                                                              \
    (((r) & 0xff) == SQLITE_BUSY || ((r) & 0xff) == SQLITE_LOCKED ? KEVO_ERR_BUSY                                      \
     : ((r) & 0xff) == SQLITE_NOMEM                             ? KEVO_ERR_NOMEM                                     \
                                                                : KEVO_ERR_DB)
#define KV_SQL_TRY(db, err, call)                                                                                      \
    KV_TRY_GEN(int, call, kv_r_ == SQLITE_OK, return kv_try_fail((err), KV_SQL_STATUS_(kv_r_), #call, sqlite3_errmsg(db)))
#define KV_SQL_TRY_AS(db, err, call, ...)                                                                              \
    KV_TRY_GEN(int, call, kv_r_ == SQLITE_OK,                                                                         \
               return kv_try_failf((err), KV_SQL_STATUS_(kv_r_), sqlite3_errmsg(db), __VA_ARGS__))

#define KV_MPI_TEXT_() kv_try_mpi_text(kv_r_, MPI_Error_string, kv_tb_, (int)sizeof kv_tb_)
#define KV_MPI_TRY(err, call)                                                                                          \
    KV_TRY_GEN(int, call, kv_r_ == MPI_SUCCESS, return kv_try_fail((err), KEVO_ERR_WORKER, #call, KV_MPI_TEXT_()))
#define KV_MPI_TRY_AS(err, call, ...)                                                                                  \
    KV_TRY_GEN(int, call, kv_r_ == MPI_SUCCESS, return kv_try_failf((err), KEVO_ERR_WORKER, KV_MPI_TEXT_(), __VA_ARGS__))

#define KV_CURL_TRY(err, call)                                                                                         \
    KV_TRY_GEN(CURLcode, call, kv_r_ == CURLE_OK, return kv_try_fail((err), KEVO_ERR_IO, #call, curl_easy_strerror(kv_r_)))
#define KV_CURL_TRY_AS(err, call, ...)                                                                                 \
    KV_TRY_GEN(CURLcode, call, kv_r_ == CURLE_OK,                                                                     \
               return kv_try_failf((err), KEVO_ERR_IO, curl_easy_strerror(kv_r_), __VA_ARGS__))

#endif /* KEVO_TRY_H */
