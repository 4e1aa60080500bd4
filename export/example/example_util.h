/* example_util.h — what the applications of exported libraries
 * (kernels/<op>/export/example/) share: driver-call checks, a seeded
 * generator, fp16/bf16 conversion, a context on device 0 and the median of
 * timed calls with L2 flushed before each (the method kevo's evaluator
 * times with).  Header-only: each example is one C file. */
#ifndef KEVO_EXAMPLE_UTIL_H
#define KEVO_EXAMPLE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define EX_CHECK(call)                                                                                                 \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            const char *s_ = "?";                                                                                      \
            cuGetErrorString(r_, &s_);                                                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, s_);                                                             \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

static uint64_t ex_rng = 0x243f6a8885a308d3ull;

/* Uniform in [-1, 1) (xorshift64). */
static inline double ex_uniform(void)
{
    ex_rng ^= ex_rng << 13;
    ex_rng ^= ex_rng >> 7;
    ex_rng ^= ex_rng << 17;
    return (double)(ex_rng >> 11) / 4503599627370496.0 - 1.0;
}

/* Uniform integer in [0, n). */
static inline int ex_below(int n)
{
    return (int)((ex_uniform() + 1) / 2 * n) % n;
}

/* float -> fp16 / bf16 bits, round to nearest even (inputs are kept away
 * from the subnormal range: those flush to zero). */
static inline uint16_t ex_to_bits(float f, int bf16)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if (bf16)
        return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0)
        return (uint16_t)sign;
    uint32_t h = sign | (uint32_t)exp << 10 | mant >> 13;
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)h;
}

static inline double ex_from_bits(uint16_t b, int bf16)
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

/* n random elements in [-1, 1) as storage bits (host memory). */
static inline uint16_t *ex_random(size_t n, int bf16)
{
    uint16_t *h = malloc(n * 2);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = ex_to_bits((float)ex_uniform(), bf16);
    return h;
}

/* A device copy of n bytes of host memory. */
static inline CUdeviceptr ex_upload(const void *h, size_t n)
{
    CUdeviceptr d;
    EX_CHECK(cuMemAlloc(&d, n));
    EX_CHECK(cuMemcpyHtoD(d, h, n));
    return d;
}

/* Initialize the driver and make device 0's primary context current. */
static inline CUdevice ex_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    EX_CHECK(cuInit(0));
    EX_CHECK(cuDeviceGet(&dev, 0));
    EX_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    EX_CHECK(cuCtxSetCurrent(ctx));
    return dev;
}

/* Median milliseconds of 50 calls of call(arg) on the default stream, each
 * after a write of twice the L2 size (CUDA events around the call alone),
 * after 5 untimed calls.  A call that fails ends the program. */
static inline double ex_median_ms(CUdevice dev, int (*call)(void *arg), void *arg)
{
    int l2 = 0;
    EX_CHECK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    CUdeviceptr flush;
    size_t fl = (size_t)l2 * 2;
    EX_CHECK(cuMemAlloc(&flush, fl));
    enum { REPS = 50 };
    CUevent e0[REPS], e1[REPS];
    for (int i = 0; i < REPS; i++) {
        EX_CHECK(cuEventCreate(&e0[i], 0));
        EX_CHECK(cuEventCreate(&e1[i], 0));
    }
    for (int i = 0; i < 5; i++)
        if (call(arg) != 0)
            exit(1);
    for (int i = 0; i < REPS; i++) {
        EX_CHECK(cuMemsetD32Async(flush, (unsigned)i, fl / 4, NULL));
        EX_CHECK(cuEventRecord(e0[i], NULL));
        if (call(arg) != 0)
            exit(1);
        EX_CHECK(cuEventRecord(e1[i], NULL));
    }
    EX_CHECK(cuCtxSynchronize());
    float t[REPS];
    for (int i = 0; i < REPS; i++)
        EX_CHECK(cuEventElapsedTime(&t[i], e0[i], e1[i]));
    for (int i = 1; i < REPS; i++)
        for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
            float x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    for (int i = 0; i < REPS; i++) {
        cuEventDestroy(e0[i]);
        cuEventDestroy(e1[i]);
    }
    cuMemFree(flush);
    return 0.5 * (t[REPS / 2 - 1] + t[REPS / 2]);
}

#endif /* KEVO_EXAMPLE_UTIL_H */
