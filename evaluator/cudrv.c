/* cudrv.c — dlopen the CUDA driver, cuBLAS and cuBLASLt. */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/cudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* expand a macro name (cuMemAlloc -> cuMemAlloc_v2) before turning it into a string */
#define KV_STR2(x) #x
#define KV_STR(x) KV_STR2(x)

/* Open the first of names[0..nnames) that loads (RTLD_NOW | RTLD_LOCAL)
 * into *lib, then each of syms[0..nsyms) into *slots[i].  Errors: st, with
 * missing (printf: the first name, dlerror) or lacks (printf: the symbol);
 * *lib is left open for the caller's unload. */
static kevo_status kv_dl_open(const char *const *names, int nnames, const char *const *syms, void **const *slots,
                              int nsyms, kevo_status st, const char *missing, const char *lacks, void **lib,
                              kevo_err *err)
{
    for (int i = 0; i < nnames && !*lib; i++)
        *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!*lib)
        return kevo_err_set(err, st, missing, names[0], dlerror());
    for (int i = 0; i < nsyms; i++)
        if (!(*slots[i] = dlsym(*lib, syms[i])))
            return kevo_err_set(err, st, lacks, syms[i]);
    return KEVO_OK;
}

/* The name of an entry point and the slot of its pointer in a loaded library's struct. */
#define KV_SYM_NAME(f) KV_STR(f),
#define KV_SYM_SLOT(f) (void **)&KV_LIB->f,

kevo_status kv_cu_load(kv_cu *cu, kevo_err *err)
{
    memset(cu, 0, sizeof *cu);
    const char *name = getenv("KEVO_LIBCUDA");
    const char *names[] = {name && *name ? name : "libcuda.so.1"};
    static const char *const syms[] = {KV_CU_FUNCS(KV_SYM_NAME)};
#define KV_LIB cu
    void **const slots[] = {KV_CU_FUNCS(KV_SYM_SLOT)};
#undef KV_LIB
    kevo_status st = kv_dl_open(names, 1, syms, slots, (int)KV_ARRAY_LEN(syms), KEVO_ERR_NO_GPU,
                                "no CUDA driver found (%s): %s; this command needs a GPU",
                                "the CUDA driver lacks '%s' (driver too old?)", &cu->lib, err);
    if (st)
        kv_cu_unload(cu);
    return st;
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
    static const char *const names[] = {"libcublas.so.13", "libcublas.so"};
    static const char *const syms[] = {KV_CUBLAS_FUNCS(KV_SYM_NAME)};
#define KV_LIB cb
    void **const slots[] = {KV_CUBLAS_FUNCS(KV_SYM_SLOT)};
#undef KV_LIB
    kevo_status st = kv_dl_open(names, 2, syms, slots, (int)KV_ARRAY_LEN(syms), KEVO_ERR_CUDA,
                                "cuBLAS not found (%s): %s", "cuBLAS lacks '%s'", &cb->lib, err);
    if (st)
        kv_cublas_unload(cb);
    return st;
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
    static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so"};
    static const char *const syms[] = {KV_CUBLASLT_FUNCS(KV_SYM_NAME)};
#define KV_LIB lt
    void **const slots[] = {KV_CUBLASLT_FUNCS(KV_SYM_SLOT)};
#undef KV_LIB
    kevo_status st = kv_dl_open(names, 2, syms, slots, (int)KV_ARRAY_LEN(syms), KEVO_ERR_CUDA,
                                "cuBLASLt not found (%s): %s", "cuBLASLt lacks '%s'", &lt->lib, err);
    if (st)
        kv_cublaslt_unload(lt);
    return st;
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

const char *kv_cublas_errstr(const kv_cublas *cb, cublasStatus_t s, char *buf, size_t n)
{
    /* looked up here, not at load: a cuBLAS without it still loads */
    const char *(*status_string)(cublasStatus_t) = NULL;
    if (cb && cb->lib)
        *(void **)&status_string = dlsym(cb->lib, "cublasGetStatusString");
    const char *text = status_string ? status_string(s) : NULL;
    if (text && *text)
        snprintf(buf, n, "%s", text);
    else
        snprintf(buf, n, "cuBLAS status %d", (int)s);
    return buf;
}
