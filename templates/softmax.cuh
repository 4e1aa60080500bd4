// softmax.cuh — what the ikbo_fa families' online softmax shares: -inf
// without math.h, 2^x on the special-function unit, and a pair of floats
// rounded to the storage dtype as the 32-bit register an mma's A operand
// takes.  kevo inlines it after dtype.cuh ahead of a family's source (the
// space file lists it under "include"); a standalone compile finds it beside
// the source.
#ifndef KEVO_SOFTMAX_CUH
#define KEVO_SOFTMAX_CUH

#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh"
#endif

// -inf (NVRTC has no math.h and so no INFINITY).
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }

// 2^x, the SFU's approximation (ex2.approx.ftz: about 2 ulp; 2^-inf = 0).
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// (x, y) rounded to the storage dtype, packed as one b32 register (x low).
__device__ __forceinline__ unsigned pack2_bits(float x, float y)
{
    elem2_t v = pack2(x, y);
    return *reinterpret_cast<unsigned *>(&v);
}

#endif // KEVO_SOFTMAX_CUH
