// mma.cuh — the mma.sync building blocks the sm_80+ families share
// (lce_mma, lce_mem): shared-memory addresses, ldmatrix and m16n8k16 MMA,
// the only ones here without a CUDA wrapper.  kevo inlines it (after
// dtype.cuh) ahead of a family's source (the space file lists both under
// "include"); a standalone compile finds it beside the source.
#ifndef KEVO_MMA_CUH
#define KEVO_MMA_CUH

#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh"
#endif

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Four 8x8 b16 matrices from shared memory (rows addressed by lanes 0-31).
__device__ __forceinline__ void ldsm_x4(const void *p, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
// The same, each matrix transposed (the B operand from k-major rows).
__device__ __forceinline__ void ldsm_x4_t(const void *p, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
// c (+)= a b: one m16n8k16 step, storage-dtype operands, fp32 accumulators.
__device__ __forceinline__ void mma16816(float c[4], const unsigned a[4], const unsigned b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB "." MMA_AB ".f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif // KEVO_MMA_CUH
