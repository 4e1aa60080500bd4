/* cudrv.c — dlopen the CUDA driver, cuBLAS and cuBLASLt. */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/cudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* expand a macro name (cuMemAlloc -> cuMemAlloc_v2) before turning it into a string */
#define KV_STR2(x) #x
#define KV_STR(x) KV_STR2(x)

kevo_status kv_cu_load(kv_cu *cu, kevo_err *err)
{
    memset(cu, 0, sizeof *cu);
    const char *name = getenv("KEVO_LIBCUDA");
    if (!name || !*name)
        name = "libcuda.so.1";
    cu->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib)
        return kevo_err_set(err, KEVO_ERR_NO_GPU, "no CUDA driver found (%s): %s; this command needs a GPU", name,
                            dlerror());
#define KV_CU_LOAD(f)                                                                                                  \
    *(void **)(&cu->f) = dlsym(cu->lib, KV_STR(f));                                                                    \
    if (!cu->f) {                                                                                                      \
        kevo_err_set(err, KEVO_ERR_NO_GPU, "the CUDA driver lacks '%s' (driver too old?)", KV_STR(f));                 \
        kv_cu_unload(cu);                                                                                              \
        return KEVO_ERR_NO_GPU;                                                                                        \
    }
    KV_CU_FUNCS(KV_CU_LOAD)
#undef KV_CU_LOAD
    return KEVO_OK;
}

void kv_cu_unload(kv_cu *cu)
{
    if (cu->lib)
        dlclose(cu->lib);
    memset(cu, 0, sizeof *cu);
}

kevo_status kv_cublas_load(kv_cublas *cb, kevo_err *err)
{
    memset(cb, 0, sizeof *cb);
    const char *names[] = {"libcublas.so.13", "libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !cb->lib; i++)
        cb->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!cb->lib)
        return kevo_err_set(err, KEVO_ERR_CUDA, "cuBLAS not found (libcublas.so.13): %s", dlerror());
#define KV_CU_LOAD(f)                                                                                                  \
    *(void **)(&cb->f) = dlsym(cb->lib, KV_STR(f));                                                                    \
    if (!cb->f) {                                                                                                      \
        kevo_err_set(err, KEVO_ERR_CUDA, "cuBLAS lacks '%s'", KV_STR(f));                                              \
        kv_cublas_unload(cb);                                                                                          \
        return KEVO_ERR_CUDA;                                                                                          \
    }
    KV_CUBLAS_FUNCS(KV_CU_LOAD)
#undef KV_CU_LOAD
    return KEVO_OK;
}

void kv_cublas_unload(kv_cublas *cb)
{
    if (cb->lib)
        dlclose(cb->lib);
    memset(cb, 0, sizeof *cb);
}

kevo_status kv_cublaslt_load(kv_cublaslt *lt, kevo_err *err)
{
    memset(lt, 0, sizeof *lt);
    const char *names[] = {"libcublasLt.so.13", "libcublasLt.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lt->lib; i++)
        lt->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lt->lib)
        return kevo_err_set(err, KEVO_ERR_CUDA, "cuBLASLt not found (libcublasLt.so.13): %s", dlerror());
#define KV_CU_LOAD(f)                                                                                                  \
    *(void **)(&lt->f) = dlsym(lt->lib, KV_STR(f));                                                                    \
    if (!lt->f) {                                                                                                      \
        kevo_err_set(err, KEVO_ERR_CUDA, "cuBLASLt lacks '%s'", KV_STR(f));                                            \
        kv_cublaslt_unload(lt);                                                                                        \
        return KEVO_ERR_CUDA;                                                                                          \
    }
    KV_CUBLASLT_FUNCS(KV_CU_LOAD)
#undef KV_CU_LOAD
    return KEVO_OK;
}

void kv_cublaslt_unload(kv_cublaslt *lt)
{
    if (lt->lib)
        dlclose(lt->lib);
    memset(lt, 0, sizeof *lt);
}

const char *kv_cu_errstr(const kv_cu *cu, CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *text = NULL;
    if (cu->cuGetErrorName)
        cu->cuGetErrorName(r, &name);
    if (cu->cuGetErrorString)
        cu->cuGetErrorString(r, &text);
    snprintf(buf, n, "%s: %s", name ? name : "CUDA_ERROR", text ? text : "unknown error");
    return buf;
}
