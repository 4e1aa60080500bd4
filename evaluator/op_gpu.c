/* op_gpu.c — the helpers an op's GPU side and the generic evaluation call
 * inside the worker: failure kinds of driver errors, launches, reference
 * functions and timing (op_gpu.h). */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/op_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"
#include "util/util.h"

kevo_fail wk_fail_of(CUresult r, bool *sticky)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
        *sticky = true;
        return KEVO_FAIL_ILLEGAL_ADDRESS;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_OUT_OF_MEMORY:
        return KEVO_FAIL_RESOURCE_EXCEEDED;
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
        *sticky = true;
        return KEVO_FAIL_LAUNCH_ERROR;
    default:
        return KEVO_FAIL_LAUNCH_ERROR;
    }
}

void wk_result_cuda(wk_ctx *w, kevo_gpu_result *res, CUresult r, const char *what, bool *sticky)
{
    char buf[256];
    res->fail = wk_fail_of(r, sticky);
    snprintf(res->msg, sizeof res->msg, "%s: %s", what, kv_cu_errstr(&w->cu, r, buf, sizeof buf));
}

CUresult wk_launch(wk_ctx *w, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void **params)
{
    return w->cu.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, w->stream, params, NULL);
}

kevo_status wk_ref_fn(wk_ctx *w, const char *name, CUfunction *f, kevo_err *err)
{
    KV_CU_TRY_AS(&w->cu, err, w->cu.cuModuleGetFunction(f, w->ref_mod, name), "reference module lacks '%s'", name);
    return KEVO_OK;
}

unsigned wk_blocks(unsigned long long n)
{
    unsigned long long b = (n + 255) / 256;
    unsigned long long cap = 132ull * 32; /* a few waves; grid-stride loops do the rest */
    return (unsigned)(b < 1 ? 1 : (b > cap ? cap : b));
}

static int wk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

CUresult wk_time_interleaved(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *const *args, int n, int warmup,
                             int rounds, double *ms)
{
    if (n < 1 || rounds < 1 || n * rounds > WK_MAX_REPS)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < warmup; k++)
            WK_TRY(fn(w, args[i]));
    WK_TRY(w->cu.cuStreamSynchronize(w->stream));
    for (int k = 0; k < rounds * n; k++) {
        /* evict L2 so no run reads what the one before left there */
        WK_TRY(w->cu.cuMemsetD32Async(w->flush, (unsigned)k, w->flush_bytes / 4, w->stream));
        WK_TRY(w->cu.cuEventRecord(w->ev[2 * k], w->stream));
        WK_TRY(fn(w, args[k % n]));
        WK_TRY(w->cu.cuEventRecord(w->ev[2 * k + 1], w->stream));
    }
    WK_TRY(w->cu.cuStreamSynchronize(w->stream));
    for (int k = 0; k < rounds * n; k++) {
        float t = 0;
        WK_TRY(w->cu.cuEventElapsedTime(&t, w->ev[2 * k], w->ev[2 * k + 1]));
        ms[(k % n) * rounds + k / n] = t;
    }
    return CUDA_SUCCESS;
}

CUresult wk_time(wk_ctx *w, CUresult (*fn)(wk_ctx *, void *), void *arg, int warmup, int reps, double *median,
                 double *min, double *max, double *all)
{
    if (reps < 1)
        reps = 1;
    if (reps > WK_MAX_REPS)
        reps = WK_MAX_REPS;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *args[1] = {arg};
    CUresult r = wk_time_interleaved(w, fn, args, 1, warmup, reps, t);
    if (r == CUDA_SUCCESS) {
        if (all)
            memcpy(all, t, (size_t)reps * sizeof *t);
        qsort(t, (size_t)reps, sizeof *t, wk_cmp_double);
        *median = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        *min = t[0];
        *max = t[reps - 1];
    }
    free(t);
    return r;
}
