/* cudrv.h — the CUDA driver, cuBLAS and cuBLASLt, loaded at run time with
 * dlopen so that kevo starts, tests and compiles on a machine with no GPU
 * driver.  Only GPU worker processes load them. */
#ifndef KEVO_CUDRV_H
#define KEVO_CUDRV_H

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include "kevo.h"
#include "util/try.h"

/* Driver entry points kevo uses, by their cuda.h names (which expand to the
 * versioned symbols, e.g. cuMemAlloc -> cuMemAlloc_v2). */
#define KV_CU_FUNCS(X)                                                                                                 \
    X(cuInit)                                                                                                          \
    X(cuDriverGetVersion)                                                                                              \
    X(cuGetErrorString)                                                                                                \
    X(cuGetErrorName)                                                                                                  \
    X(cuDeviceGetCount)                                                                                                \
    X(cuDeviceGet)                                                                                                     \
    X(cuDeviceGetName)                                                                                                 \
    X(cuDeviceGetAttribute)                                                                                            \
    X(cuDeviceTotalMem)                                                                                                \
    X(cuDeviceGetPCIBusId)                                                                                             \
    X(cuDevicePrimaryCtxRetain)                                                                                        \
    X(cuDevicePrimaryCtxRelease)                                                                                       \
    X(cuCtxSetCurrent)                                                                                                 \
    X(cuCtxSynchronize)                                                                                                \
    X(cuMemAlloc)                                                                                                      \
    X(cuMemFree)                                                                                                       \
    X(cuMemcpyHtoD)                                                                                                    \
    X(cuMemcpyDtoH)                                                                                                    \
    X(cuMemcpyHtoDAsync)                                                                                               \
    X(cuMemcpyDtoHAsync)                                                                                               \
    X(cuMemcpyDtoDAsync)                                                                                               \
    X(cuMemsetD8Async)                                                                                                 \
    X(cuMemsetD16Async)                                                                                                \
    X(cuMemsetD32Async)                                                                                                \
    X(cuModuleLoadData)                                                                                                \
    X(cuModuleUnload)                                                                                                  \
    X(cuModuleGetFunction)                                                                                             \
    X(cuFuncSetAttribute)                                                                                              \
    X(cuFuncGetAttribute)                                                                                              \
    X(cuLaunchKernel)                                                                                                  \
    X(cuStreamCreate)                                                                                                  \
    X(cuStreamDestroy)                                                                                                 \
    X(cuStreamSynchronize)                                                                                             \
    X(cuEventCreate)                                                                                                   \
    X(cuEventDestroy)                                                                                                  \
    X(cuEventRecord)                                                                                                   \
    X(cuEventSynchronize)                                                                                              \
    X(cuEventElapsedTime)                                                                                              \
    X(cuTensorMapEncodeTiled)

#define KV_CUBLAS_FUNCS(X)                                                                                             \
    X(cublasCreate_v2)                                                                                                 \
    X(cublasDestroy_v2)                                                                                                \
    X(cublasSetStream_v2)                                                                                              \
    X(cublasGemmEx)                                                                                                    \
    X(cublasGemmStridedBatchedEx)                                                                                      \
    X(cublasGemmBatchedEx)                                                                                             \
    X(cublasSaxpy_v2)

/* cuBLASLt entry points (the peers' GEMMs: evaluator/gemm_lt.c). */
#define KV_CUBLASLT_FUNCS(X)                                                                                           \
    X(cublasLtCreate)                                                                                                  \
    X(cublasLtDestroy)                                                                                                 \
    X(cublasLtGetVersion)                                                                                              \
    X(cublasLtGetStatusName)                                                                                           \
    X(cublasLtMatmul)                                                                                                  \
    X(cublasLtMatmulDescCreate)                                                                                        \
    X(cublasLtMatmulDescDestroy)                                                                                       \
    X(cublasLtMatmulDescSetAttribute)                                                                                  \
    X(cublasLtMatrixLayoutCreate)                                                                                      \
    X(cublasLtMatrixLayoutDestroy)                                                                                     \
    X(cublasLtMatrixLayoutSetAttribute)                                                                                \
    X(cublasLtMatmulPreferenceCreate)                                                                                  \
    X(cublasLtMatmulPreferenceDestroy)                                                                                 \
    X(cublasLtMatmulPreferenceSetAttribute)                                                                            \
    X(cublasLtMatmulAlgoGetHeuristic)                                                                                  \
    X(cublasLtMatmulAlgoConfigGetAttribute)

/* The loaded driver: one function pointer per entry point. */
typedef struct kv_cu {
    void *lib;
#define KV_CU_MEMBER(f) __typeof__(f) *f;
    KV_CU_FUNCS(KV_CU_MEMBER)
#undef KV_CU_MEMBER
} kv_cu;

/* The loaded cuBLAS. */
typedef struct kv_cublas {
    void *lib;
#define KV_CU_MEMBER(f) __typeof__(f) *f;
    KV_CUBLAS_FUNCS(KV_CU_MEMBER)
#undef KV_CU_MEMBER
} kv_cublas;

/* The loaded cuBLASLt. */
typedef struct kv_cublaslt {
    void *lib;
#define KV_CU_MEMBER(f) __typeof__(f) *f;
    KV_CUBLASLT_FUNCS(KV_CU_MEMBER)
#undef KV_CU_MEMBER
} kv_cublaslt;

/* Load libcuda.so.1 (KEVO_LIBCUDA overrides the name).  Errors:
 * KEVO_ERR_NO_GPU "no CUDA driver found (libcuda.so.1): ..." */
kevo_status kv_cu_load(kv_cu *cu, kevo_err *err);
void kv_cu_unload(kv_cu *cu);

/* Load cuBLAS (libcublas.so.13, then libcublas.so).  Errors: KEVO_ERR_CUDA. */
kevo_status kv_cublas_load(kv_cublas *cb, kevo_err *err);
void kv_cublas_unload(kv_cublas *cb);

/* Load cuBLASLt (libcublasLt.so.13, then libcublasLt.so).  Errors:
 * KEVO_ERR_CUDA "cuBLASLt not found (libcublasLt.so.13): ..." or "cuBLASLt
 * lacks 'f'". */
kevo_status kv_cublaslt_load(kv_cublaslt *lt, kevo_err *err);
void kv_cublaslt_unload(kv_cublaslt *lt);

/* "CUDA_ERROR_X: text" for a driver result. */
const char *kv_cu_errstr(const kv_cu *cu, CUresult r, char *buf, size_t n);

/* cublasGetStatusString's text for a cuBLAS status into buf[n] ("cuBLAS
 * status N" when this cuBLAS has none). */
const char *kv_cublas_errstr(const kv_cublas *cb, cublasStatus_t s, char *buf, size_t n);

#endif /* KEVO_CUDRV_H */
