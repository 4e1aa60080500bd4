// dtype.cuh — the storage dtype every ikbo_lce family is rendered for
// (DTYPE_BF16): element types, the mma operand name, rounding two floats to
// a pair and back.  kevo inlines it ahead of a family's source (the space
// file lists it under "include"); a standalone compile finds it beside the
// source.
#ifndef KEVO_DTYPE_CUH
#define KEVO_DTYPE_CUH

#ifndef DTYPE_BF16
#define DTYPE_BF16 0
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if DTYPE_BF16
typedef __nv_bfloat16 elem_t;
typedef __nv_bfloat162 elem2_t;
#define MMA_AB "bf16"
__device__ __forceinline__ elem2_t pack2(float x, float y) { return __floats2bfloat162_rn(x, y); }
__device__ __forceinline__ float2 unpack2(elem2_t v) { return __bfloat1622float2(v); }
#else
typedef __half elem_t;
typedef __half2 elem2_t;
#define MMA_AB "f16"
__device__ __forceinline__ elem2_t pack2(float x, float y) { return __floats2half2_rn(x, y); }
__device__ __forceinline__ float2 unpack2(elem2_t v) { return __half22float2(v); }
#endif

#endif // KEVO_DTYPE_CUH
