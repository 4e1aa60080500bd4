/* export_overhead.c — host cost of a call into an exported library against
 * launching the same cubin directly with the driver API, and the GPU time of
 * both (device machine).  Built against the generated source itself, to reach
 * the kernel it dispatches to:
 *   gcc -O2 -DKEVO_EXPORT_SRC='"DIR/src/kevo_tuned.c"' -IDIR/include \
 *       -I/usr/local/cuda/include bench/export_overhead.c -lcuda -lpthread
 *   ./a.out B M N Ku Kc U
 * Per-call host time: 100 calls enqueued back to back (no synchronization
 * inside), 30 batches, median batch / 100.  GPU time: events around each
 * call, L2 flushed before each, median of 50. */
#include KEVO_EXPORT_SRC

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define OK(call)                                                                                                       \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            fprintf(stderr, "%s failed (%d)\n", #call, (int)r_);                                                       \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static CUdeviceptr random_buffer(size_t elems)
{
    uint16_t *h = malloc(elems * 2);
    uint64_t s = 0x9e3779b97f4a7c15ull ^ elems;
    for (size_t i = 0; i < elems; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        h[i] = (uint16_t)(0x3800 | (s & 0x3ff) | ((s >> 10) & 1) << 15); /* fp16 in [-1, -0.5] U [0.5, 1] */
    }
    CUdeviceptr d;
    OK(cuMemAlloc(&d, elems * 2));
    OK(cuMemcpyHtoD(d, h, elems * 2));
    free(h);
    return d;
}

typedef void (*call_fn)(void *);

/* median host microseconds per call over batches of 100 */
static double host_us(call_fn f, void *ctx)
{
    double t[30];
    for (int b = 0; b < 30; b++) {
        double t0 = now_us();
        for (int i = 0; i < 100; i++)
            f(ctx);
        t[b] = (now_us() - t0) / 100;
        OK(cuCtxSynchronize());
    }
    qsort(t, 30, sizeof t[0], cmp_d);
    return 0.5 * (t[14] + t[15]);
}

static double gpu_ms(call_fn f, void *ctx, CUdeviceptr flush, size_t fl)
{
    CUevent e0[50], e1[50];
    double t[50];
    for (int i = 0; i < 50; i++) {
        OK(cuEventCreate(&e0[i], 0));
        OK(cuEventCreate(&e1[i], 0));
    }
    for (int i = 0; i < 50; i++) {
        OK(cuMemsetD32Async(flush, (unsigned)i, fl / 4, NULL));
        OK(cuEventRecord(e0[i], NULL));
        f(ctx);
        OK(cuEventRecord(e1[i], NULL));
    }
    OK(cuCtxSynchronize());
    for (int i = 0; i < 50; i++) {
        float ms;
        OK(cuEventElapsedTime(&ms, e0[i], e1[i]));
        t[i] = ms;
    }
    qsort(t, 50, sizeof t[0], cmp_d);
    return 0.5 * (t[24] + t[25]);
}

typedef struct lib_call {
    kevo_tuned_ikbo_lce_args a;
    void *ws;
} lib_call;

static void call_lib(void *p)
{
    lib_call *c = p;
    if (kevo_tuned_ikbo_lce(&c->a, c->ws, NULL) != KEVO_TUNED_STATUS_SUCCESS)
        exit(3);
}

typedef struct direct_call {
    CUfunction fn[8];
    x_plan plan;
    kevo_lce_args ka;
} direct_call;

static void call_direct(void *p)
{
    direct_call *c = p;
    void *params[] = {&c->ka};
    for (int i = 0; i < c->plan.nlaunches; i++) {
        const x_launch *l = &c->plan.l[i];
        OK(cuLaunchKernel(c->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                          l->smem, NULL, params, NULL));
    }
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s B M N Ku Kc U\n", argv[0]);
        return 2;
    }
    int B = atoi(argv[1]), M = atoi(argv[2]), N = atoi(argv[3]), Ku = atoi(argv[4]), Kc = atoi(argv[5]),
        U = atoi(argv[6]);
    int ldu = (Ku + 7) / 8 * 8, ldc = (Kc + 7) / 8 * 8;
    OK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    OK(cuDeviceGet(&dev, 0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    CUdeviceptr wu = random_buffer((size_t)M * ldu), wc = random_buffer((size_t)M * ldc);
    CUdeviceptr eu = random_buffer((size_t)U * Ku * N), ec = random_buffer((size_t)B * Kc * N), map, out, ws = 0;
    int *h = malloc((size_t)B * sizeof *h);
    for (int b = 0; b < B; b++)
        h[b] = (int)((int64_t)b * U / B);
    OK(cuMemAlloc(&map, (size_t)B * 4));
    OK(cuMemcpyHtoD(map, h, (size_t)B * 4));
    OK(cuMemAlloc(&out, (size_t)B * M * N * 2));
    lib_call lc = {{KEVO_TUNED_DTYPE_F16, B, M, N, Ku, Kc, U, (const void *)(uintptr_t)wu, ldu,
                    (const void *)(uintptr_t)wc, ldc, (const void *)(uintptr_t)eu, (const void *)(uintptr_t)ec,
                    (const int *)(uintptr_t)map, (void *)(uintptr_t)out},
                   NULL};
    size_t wsb = kevo_tuned_ikbo_lce_workspace_size(&lc.a);
    if (wsb)
        OK(cuMemAlloc(&ws, wsb));
    lc.ws = (void *)(uintptr_t)ws;
    call_lib(&lc);
    OK(cuCtxSynchronize());

    /* the same kernel, loaded and launched without the library */
    const x_device *d;
    OK(x_current_device(&dev, &d) == KEVO_TUNED_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    direct_call dc;
    memset(&dc, 0, sizeof dc);
    int ki = x_choose(&lc.a, d, &dc.plan);
    const x_kernel *k = &x_kernels[ki];
    CUmodule mod;
    OK(cuModuleLoadData(&mod, k->cubin));
    for (int i = 0; i < dc.plan.nlaunches; i++) {
        OK(cuModuleGetFunction(&dc.fn[i], mod, k->entries[dc.plan.l[i].entry]));
        if (dc.plan.l[i].smem > 48 * 1024)
            OK(cuFuncSetAttribute(dc.fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dc.plan.l[i].smem));
    }
    dc.ka = x_cache.kargs; /* the arguments and tensor maps the library built */
    dc.ka.workspace = lc.ws;

    int l2 = 0;
    OK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    CUdeviceptr flush;
    size_t fl = (size_t)l2 * 2;
    OK(cuMemAlloc(&flush, fl));
    double lib_host = host_us(call_lib, &lc), direct_host = host_us(call_direct, &dc);
    double lib_gpu = gpu_ms(call_lib, &lc, flush, fl), direct_gpu = gpu_ms(call_direct, &dc, flush, fl);
    printf("kernel %d (%s %s): host per call: library %.3f us, direct %.3f us, overhead %.3f us; GPU median: "
           "library %.4f ms, direct %.4f ms\n",
           ki, k->family, k->params, lib_host, direct_host, lib_host - direct_host, lib_gpu, direct_gpu);
    return 0;
}
