/* example.c — an application of an exported kevo library (kevo_tuned).
 *
 *   ikbo_example B M N Ku Kc U [bf16] [time]
 *
 * Makes random inputs (weights packed with rows padded to 8 elements, as the
 * fastest kernels read them), poisons the output with NaN, runs
 * kevo_tuned_ikbo_lce once, checks that every output was written and that
 * 4096 sampled outputs match a double-precision CPU reference, and with
 * "time" reports the median of 50 timed calls (CUDA events, L2 flushed
 * before each).  Exit status 0 only when the check passes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo_tuned.h"

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            const char *s_ = "?";                                                                                      \
            cuGetErrorString(r_, &s_);                                                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, s_);                                                             \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

static uint64_t rng = 0x243f6a8885a308d3ull;
static double uniform(void) /* in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

/* float -> fp16 / bf16 bits, round to nearest even (no subnormal outputs here) */
static uint16_t to_bits(float f, int bf16)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if (bf16)
        return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0)
        return (uint16_t)sign; /* flush: inputs are kept away from zero's neighbourhood */
    uint32_t h = sign | (uint32_t)exp << 10 | mant >> 13;
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)h;
}

static double from_bits(uint16_t b, int bf16)
{
    if (bf16) {
        uint32_t x = (uint32_t)b << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    int exp = (b >> 10) & 0x1f, mant = b & 0x3ff;
    double v = exp == 0 ? ldexp(mant, -24) : exp == 31 ? NAN : ldexp(1024 + mant, exp - 25);
    return (b & 0x8000) ? -v : v;
}

static uint16_t *make(size_t n, int bf16)
{
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = to_bits((float)uniform(), bf16);
    return h;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s B M N Ku Kc U [bf16] [time]\n", argv[0]);
        return 2;
    }
    int B = atoi(argv[1]), M = atoi(argv[2]), N = atoi(argv[3]), Ku = atoi(argv[4]), Kc = atoi(argv[5]),
        U = atoi(argv[6]);
    int bf16 = 0, timing = 0;
    for (int i = 7; i < argc; i++) {
        bf16 |= strcmp(argv[i], "bf16") == 0;
        timing |= strcmp(argv[i], "time") == 0;
    }
    int ldu = (Ku + 7) / 8 * 8, ldc = (Kc + 7) / 8 * 8;
    CHECK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));

    /* inputs: padded weights (zeros in the padding), sorted candidates per user */
    uint16_t *wu = calloc((size_t)M * ldu, 2), *wc = calloc((size_t)M * ldc, 2);
    for (int m = 0; m < M; m++) {
        for (int k = 0; k < Ku; k++)
            wu[(size_t)m * ldu + k] = to_bits((float)uniform(), bf16);
        for (int k = 0; k < Kc; k++)
            wc[(size_t)m * ldc + k] = to_bits((float)uniform(), bf16);
    }
    uint16_t *eu = make((size_t)U * Ku * N, bf16), *ec = make((size_t)B * Kc * N, bf16);
    int *map = malloc((size_t)B * sizeof *map);
    for (int b = 0; b < B; b++)
        map[b] = (int)((int64_t)b * U / B);
    size_t out_n = (size_t)B * M * N;
    CUdeviceptr d_wu, d_wc, d_eu, d_ec, d_map, d_out, d_ws = 0;
    CHECK(cuMemAlloc(&d_wu, (size_t)M * ldu * 2));
    CHECK(cuMemAlloc(&d_wc, (size_t)M * ldc * 2));
    CHECK(cuMemAlloc(&d_eu, (size_t)U * Ku * N * 2));
    CHECK(cuMemAlloc(&d_ec, (size_t)B * Kc * N * 2));
    CHECK(cuMemAlloc(&d_map, (size_t)B * 4));
    CHECK(cuMemAlloc(&d_out, out_n * 2));
    CHECK(cuMemcpyHtoD(d_wu, wu, (size_t)M * ldu * 2));
    CHECK(cuMemcpyHtoD(d_wc, wc, (size_t)M * ldc * 2));
    CHECK(cuMemcpyHtoD(d_eu, eu, (size_t)U * Ku * N * 2));
    CHECK(cuMemcpyHtoD(d_ec, ec, (size_t)B * Kc * N * 2));
    CHECK(cuMemcpyHtoD(d_map, map, (size_t)B * 4));
    CHECK(cuMemsetD16(d_out, 0xFFFF, out_n)); /* NaN: unwritten outputs show */

    kevo_tuned_ikbo_lce_args a = {bf16 ? KEVO_TUNED_DTYPE_BF16 : KEVO_TUNED_DTYPE_F16,
                                  B, M, N, Ku, Kc, U,
                                  (const void *)(uintptr_t)d_wu, ldu,
                                  (const void *)(uintptr_t)d_wc, ldc,
                                  (const void *)(uintptr_t)d_eu,
                                  (const void *)(uintptr_t)d_ec,
                                  (const int *)(uintptr_t)d_map,
                                  (void *)(uintptr_t)d_out};
    size_t ws = kevo_tuned_ikbo_lce_workspace_size(&a);
    if (ws)
        CHECK(cuMemAlloc(&d_ws, ws));
    kevo_tuned_status st = kevo_tuned_ikbo_lce(&a, (void *)(uintptr_t)d_ws, NULL);
    if (st != KEVO_TUNED_STATUS_SUCCESS) {
        printf("kevo_tuned_ikbo_lce: %s\n", kevo_tuned_status_string(st));
        return 1;
    }
    CHECK(cuCtxSynchronize());
    uint16_t *out = malloc(out_n * 2);
    CHECK(cuMemcpyDtoH(out, d_out, out_n * 2));

    size_t nonfinite = 0;
    for (size_t i = 0; i < out_n; i++)
        nonfinite += !isfinite(from_bits(out[i], bf16));
    double d2 = 0, r2 = 0, worst = 0, u = bf16 ? 1.0 / 256 : 1.0 / 2048;
    int bad = 0;
    for (int s = 0; s < 4096; s++) {
        int b = (int)((uniform() + 1) / 2 * B) % B, m = (int)((uniform() + 1) / 2 * M) % M,
            n = (int)((uniform() + 1) / 2 * N) % N;
        double ref = 0;
        for (int k = 0; k < Kc; k++)
            ref += from_bits(wc[(size_t)m * ldc + k], bf16) * from_bits(ec[((size_t)b * Kc + k) * N + n], bf16);
        for (int k = 0; k < Ku; k++)
            ref += from_bits(wu[(size_t)m * ldu + k], bf16) * from_bits(eu[((size_t)map[b] * Ku + k) * N + n], bf16);
        double got = from_bits(out[((size_t)b * M + m) * N + n], bf16), d = fabs(got - ref);
        d2 += d * d;
        r2 += ref * ref;
        if (d > worst)
            worst = d;
        bad += !(d <= 4 * u * fabs(ref) + 4 * u * sqrt((double)(Ku + Kc) / 9.0));
    }
    double rel = sqrt(d2 / r2);
    int pass = nonfinite == 0 && bad == 0 && rel <= 2 * u;
    printf("B=%d M=%d N=%d Ku=%d Kc=%d U=%d %s: workspace %zu bytes, %zu non-finite outputs, sampled rel_err %.2e "
           "(bound %.1e), %d beyond the elementwise bound: %s\n",
           B, M, N, Ku, Kc, U, bf16 ? "bf16" : "fp16", ws, nonfinite, rel, 2 * u, bad, pass ? "ok" : "FAILED");

    if (pass && timing) {
        int l2 = 0;
        CHECK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
        CUdeviceptr flush;
        size_t fl = (size_t)l2 * 2;
        CHECK(cuMemAlloc(&flush, fl));
        CUevent e0[50], e1[50];
        for (int i = 0; i < 50; i++) {
            CHECK(cuEventCreate(&e0[i], 0));
            CHECK(cuEventCreate(&e1[i], 0));
        }
        for (int i = 0; i < 5; i++)
            kevo_tuned_ikbo_lce(&a, (void *)(uintptr_t)d_ws, NULL);
        for (int i = 0; i < 50; i++) {
            CHECK(cuMemsetD32Async(flush, (unsigned)i, fl / 4, NULL));
            CHECK(cuEventRecord(e0[i], NULL));
            kevo_tuned_ikbo_lce(&a, (void *)(uintptr_t)d_ws, NULL);
            CHECK(cuEventRecord(e1[i], NULL));
        }
        CHECK(cuCtxSynchronize());
        float t[50];
        for (int i = 0; i < 50; i++)
            CHECK(cuEventElapsedTime(&t[i], e0[i], e1[i]));
        for (int i = 1; i < 50; i++)
            for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
                float x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        printf("median %.4f ms over 50 calls (L2 flushed before each)\n", 0.5 * (t[24] + t[25]));
    }
    kevo_tuned_shutdown();
    return pass ? 0 : 1;
}
