// ref.cuh — what every op's reference module shares: the storage dtype
// (DTYPE_BF16), the input generator and the evaluator's checks.  kevo inlines
// it ahead of kernels/<op>/ref.cu when it builds a reference module
// (kevo_op_ref_render), so its bytes are part of the module's cache key.
//
// kv_gen, kv_checksum, kv_sumsq and kv_compare are the evaluator's contract
// with every op's module (evaluator/gpu_eval.c calls them by name).

#ifndef KEVO_REF_CUH
#define KEVO_REF_CUH

#ifndef DTYPE_BF16
#define DTYPE_BF16 0
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if DTYPE_BF16
typedef __nv_bfloat16 elem_t;
#define GEN_Q 128
__device__ __forceinline__ float to_f(elem_t v) { return __bfloat162float(v); }
__device__ __forceinline__ elem_t from_f(float v) { return __float2bfloat16_rn(v); }
#else
typedef __half elem_t;
#define GEN_Q 1024
__device__ __forceinline__ float to_f(elem_t v) { return __half2float(v); }
__device__ __forceinline__ elem_t from_f(float v) { return __float2half_rn(v); }
#endif

// Same arithmetic as kevo_gen_value() in core/op.c.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}
__device__ __forceinline__ elem_t gen_value(unsigned long long stream, unsigned long long idx)
{
    unsigned long long h = mix64(stream ^ idx);
    int k = (int)(h % (unsigned long long)(2 * GEN_Q)) - GEN_Q;
    return from_f((float)k / (float)GEN_Q);
}
__device__ __forceinline__ unsigned long long gen_stream(unsigned long long seed, unsigned tensor)
{
    return mix64(seed + 0x9e3779b97f4a7c15ull * ((unsigned long long)tensor + 1));
}

// dst[i] = value(seed, tensor, i) for i < count.
extern "C" __global__ void kv_gen(elem_t *dst, unsigned long long count, unsigned long long seed, unsigned tensor)
{
    const unsigned long long s = gen_stream(seed, tensor);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x)
        dst[i] = gen_value(s, i);
}

// One warp's partial sums a, b, c and maximum m (non-negative) added to
// *sa, *sb, *sc and folded into *sm (as the bits of a double) by lane 0.
__device__ __forceinline__ void warp_flush(double a, double m, double b, double c, double *sa, double *sm, double *sb,
                                           double *sc)
{
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        m = fmax(m, __shfl_down_sync(0xffffffffu, m, o));
        b += __shfl_down_sync(0xffffffffu, b, o);
        c += __shfl_down_sync(0xffffffffu, c, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sa, a);
        atomicMax(reinterpret_cast<unsigned long long *>(sm), (unsigned long long)__double_as_longlong(m));
        atomicAdd(sb, b);
        atomicAdd(sc, c);
    }
}

// *sum += a position-weighted checksum of n 32-bit words (each word times an
// odd multiplier of its index, wrapping mod 2^64, salted per tensor), so a
// changed, moved or swapped word changes it: after a candidate's checked run
// the inputs must sum as before (a kernel that writes its inputs fails).
extern "C" __global__ void kv_checksum(const unsigned *p, unsigned long long n, unsigned long long salt,
                                       unsigned long long *sum)
{
    unsigned long long s = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        s += ((unsigned long long)p[i] + 1ull) * (((i + salt) * 0x9e3779b97f4a7c15ull) | 1ull);
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, s);
}

// stats[0] += sum ref^2 (first pass, before the tolerance is known).
extern "C" __global__ void kv_sumsq(const float *ref, unsigned long long n, double *stats)
{
    double s = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        s += (double)ref[i] * ref[i];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(&stats[0], s);
}

// Compare out (storage dtype) with ref (fp32):
//   stats[1] += sum (out-ref)^2 over finite outputs
//   stats[2]  = max |out-ref| (as the bits of a non-negative double)
//   stats[3] += count of |out-ref| > rtol*|ref| + atol
//   stats[4] += count of NaN/Inf outputs (poisoned elements never written land here)
extern "C" __global__ void kv_compare(const elem_t *out, const float *ref, unsigned long long n, float rtol,
                                      float atol, double *stats)
{
    double d2 = 0.0, dmax = 0.0, bad = 0.0, nonfinite = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float o = to_f(out[i]), r = ref[i];
        if (!isfinite(o)) {
            nonfinite += 1.0;
            continue;
        }
        double d = fabs((double)o - (double)r);
        d2 += d * d;
        dmax = fmax(dmax, d);
        if (d > (double)rtol * fabs((double)r) + (double)atol)
            bad += 1.0;
    }
    warp_flush(d2, dmax, bad, nonfinite, &stats[1], &stats[2], &stats[3], &stats[4]);
}

#endif // KEVO_REF_CUH
