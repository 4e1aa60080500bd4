/* fake_driver_fa.c — an exported ikbo_fa library's call path on the CPU:
 * the generated source (KEVO_LIB_SRC, the path of src/kevo_tuned.c) built
 * with a fake driver that records what the library asks of it.  Checked at
 * the fixture's tuned fp16 shape (Bc=2048,H=2,Sq=64,D=128,Skv=2048,U=32):
 *   - two launches, the scheduler then the main kernel, with the plan's grid,
 *     block and shared memory; the kernels' argument struct carries the
 *     sizes, the scale and its log2(e) multiple, the SM count, the caller's
 *     workspace and a launch tag that changes between calls;
 *   - the larger-than-48 KB shared memory is allowed for the main kernel
 *     only (the driver refuses it for a scheduler with static shared memory
 *     of its own, as the H100 did);
 *   - tensor maps {D, H, rows} over q, k, v with 16-bit elements, encoded
 *     once for repeated arguments;
 *   - invalid arguments and a missing workspace launch nothing.
 * Prints "ok" and exits 0, or names the first failed check and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include KEVO_LIB_SRC

#define SCHED ((CUkernel)(uintptr_t)0x51)
#define MAIN ((CUkernel)(uintptr_t)0x52)

static struct {
    CUkernel fn;
    unsigned grid[3], block[3], smem;
    kevo_fa_args args;
} f_launch[16];
static int f_nlaunch, f_nencode, f_set_sched, f_set_main;
static cuuint64_t f_dims[16][3], f_strides[16][2];
static CUtensorMapDataType f_dtype;

CUresult CUDAAPI cuCtxGetDevice(CUdevice *d)
{
    *d = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *p, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    *p = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
         : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
         : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
                                                             : 232448;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *l, const void *c, CUjit_option *o, void **ov, unsigned no,
                                   CUlibraryOption *lo, void **lov, unsigned nlo)
{
    (void)c, (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    *l = (CUlibrary)(uintptr_t)0x10;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *n)
{
    (void)l;
    size_t len = strlen(n);
    int sched = (len > 5 && strcmp(n + len - 5, "sched") == 0) || (len > 4 && strcmp(n + len - 4, "plan") == 0);
    *k = sched ? SCHED : MAIN;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary l)
{
    (void)l;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d)
{
    (void)d;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
        return CUDA_ERROR_INVALID_VALUE;
    if (k == SCHED) {
        f_set_sched++;
        return v > 200 * 1024 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    f_set_main++;
    return v > 232448 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *t, CUtensorMapDataType d, cuuint32_t r, void *g,
                                        const cuuint64_t *gd, const cuuint64_t *gs, const cuuint32_t *b,
                                        const cuuint32_t *e, CUtensorMapInterleave i, CUtensorMapSwizzle s,
                                        CUtensorMapL2promotion l, CUtensorMapFloatOOBfill f)
{
    (void)g, (void)b, (void)e, (void)i, (void)s, (void)l, (void)f;
    if (r != 3 || f_nencode >= 16)
        return CUDA_ERROR_INVALID_VALUE;
    memset(t, 0x5a, sizeof *t);
    f_dtype = d;
    memcpy(f_dims[f_nencode], gd, sizeof f_dims[0]);
    memcpy(f_strides[f_nencode], gs, sizeof f_strides[0]);
    f_nencode++;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned smem, CUstream st, void **p, void **e)
{
    (void)st, (void)e;
    if (f_nlaunch >= 16)
        return CUDA_ERROR_INVALID_VALUE;
    f_launch[f_nlaunch].fn = (CUkernel)fn;
    unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    memcpy(f_launch[f_nlaunch].grid, g, sizeof g);
    memcpy(f_launch[f_nlaunch].block, b, sizeof b);
    f_launch[f_nlaunch].smem = smem;
    memcpy(&f_launch[f_nlaunch].args, p[0], sizeof(kevo_fa_args));
    f_nlaunch++;
    return CUDA_SUCCESS;
}

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("failed: %s (line %d)\n", #cond, __LINE__);                                                         \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(void)
{
    static char q[16], k[16], v[16], out[16], ws[1 << 16];
    static int map[1];
    kevo_tuned_ikbo_fa_args a = {KEVO_TUNED_DTYPE_F16, 2048, 2, 64, 128, 2048, 32, 0.125f, q, k, v, map, out};
    size_t need = kevo_tuned_ikbo_fa_workspace_size(&a);
    EXPECT(need > 0 && need <= sizeof ws);

    /* the plan the dispatch chose, to compare the launches with */
    const x_device *d = NULL;
    CUdevice dev;
    EXPECT(x_current_device(&dev, &d) == KEVO_TUNED_STATUS_SUCCESS);
    x_plan plan;
    int ki = x_choose(&a, d, &plan);
    EXPECT(ki >= 0 && plan.nlaunches == 2 && plan.l[1].smem > 48 * 1024);
    EXPECT(plan.workspace == need);

    EXPECT(kevo_tuned_ikbo_fa(&a, NULL, NULL) == KEVO_TUNED_STATUS_NO_WORKSPACE);
    EXPECT(f_nlaunch == 0);
    EXPECT(kevo_tuned_ikbo_fa(&a, ws, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    EXPECT(f_nlaunch == 2 && f_launch[0].fn == SCHED && f_launch[1].fn == MAIN);
    for (int i = 0; i < 2; i++) {
        EXPECT(memcmp(f_launch[i].grid, plan.l[i].grid, sizeof plan.l[i].grid) == 0);
        EXPECT(memcmp(f_launch[i].block, plan.l[i].block, sizeof plan.l[i].block) == 0);
        EXPECT(f_launch[i].smem == plan.l[i].smem);
    }
    EXPECT(f_set_sched == 0 && f_set_main == 1);

    const kevo_fa_args *ka = &f_launch[1].args;
    EXPECT(ka->q == q && ka->k == k && ka->v == v && ka->cand_to_user == map && ka->out == out);
    EXPECT(ka->workspace == ws);
    EXPECT(ka->Bc == 2048 && ka->H == 2 && ka->Sq == 64 && ka->D == 128 && ka->Skv == 2048 && ka->U == 32);
    EXPECT(ka->scale == 0.125f && fabsf(ka->scale_log2 - 0.125f * 1.44269504f) < 1e-6f);
    EXPECT(ka->num_sms == 132 && ka->launch_seq != 0 && ka->launch_seq != -1);
    EXPECT(memcmp(&f_launch[0].args, ka, sizeof *ka) == 0); /* one struct for both launches */

    /* q, k, v mapped as {D, H, rows}, rows Bc*Sq and U*Skv, 16-bit elements */
    EXPECT(f_nencode == x_kernels[ki].ntmaps && f_nencode >= 3 && f_dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    for (int i = 0; i < f_nencode; i++) {
        int t = x_kernels[ki].tmaps[i].tensor;
        cuuint64_t rows = t == 1 || t == 2 ? 32u * 2048u : 2048u * 64u;
        EXPECT(f_dims[i][0] == 128 && f_dims[i][1] == 2 && f_dims[i][2] == rows);
        EXPECT(f_strides[i][0] == 256 && f_strides[i][1] == 512);
    }
    unsigned char zero[128] = {0};
    EXPECT(memcmp(&ka->tm_k, zero, sizeof zero) != 0);

    /* the same arguments again: no new encoding, a new launch tag */
    int seq = ka->launch_seq;
    EXPECT(kevo_tuned_ikbo_fa(&a, ws, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    EXPECT(f_nlaunch == 4 && f_nencode == x_kernels[ki].ntmaps && f_launch[3].args.launch_seq != seq);
    EXPECT(f_set_sched == 0 && f_set_main == 1); /* allowed once per size */

    /* invalid arguments: nothing launched */
    kevo_tuned_ikbo_fa_args bad[7];
    for (int i = 0; i < 7; i++)
        bad[i] = a;
    bad[0].scale = 0.0f;
    bad[1].scale = NAN;
    bad[2].scale = INFINITY;
    bad[3].U = 2049;
    bad[4].D = 96;
    bad[5].q = NULL;
    bad[6].Skv = 0;
    for (int i = 0; i < 7; i++) {
        EXPECT(kevo_tuned_ikbo_fa(&bad[i], ws, NULL) == KEVO_TUNED_STATUS_INVALID_VALUE);
        EXPECT(kevo_tuned_ikbo_fa_workspace_size(&bad[i]) == 0);
    }
    EXPECT(f_nlaunch == 4);
    /* bf16 goes to the bf16 kernels' plans and maps */
    a.dtype = KEVO_TUNED_DTYPE_BF16;
    a.D = 64;
    a.Bc = 1024;
    a.Skv = 1024;
    EXPECT(kevo_tuned_ikbo_fa(&a, ws, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    EXPECT(f_dtype == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && f_launch[f_nlaunch - 1].args.D == 64);
    kevo_tuned_shutdown();
    printf("ok\n");
    return 0;
}
