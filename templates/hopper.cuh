// hopper.cuh — Hopper (sm_90a) building blocks the TMA/WGMMA families share:
// shared-memory matrix descriptors and the WGMMA group fences (the MMAs
// themselves are in the generated wgmma.cuh), stmatrix, mbarrier waits,
// named and cluster barriers.  kevo inlines it (after dtype.cuh and wgmma.cuh) ahead of
// a family's source (the family's space file lists all three under
// "include"); a standalone compile finds them beside the source.
#ifndef KEVO_HOPPER_CUH
#define KEVO_HOPPER_CUH

#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh"
#endif
#ifndef KEVO_WGMMA_CUH
#include "wgmma.cuh"
#endif
#include <cuda/ptx>

// ---- WGMMA operands and group fences (inline PTX: no CUDA wrapper exists) ----
// Shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix
// Descriptor Format"): start address, leading and stride byte offsets, >> 4;
// bits 62-63 the swizzle mode (1: 128 B, 2: 64 B, 3: 32 B).  The atom is 8
// rows of 128 bytes (1024 B, the start aligned to it).  For an MN-major
// operand (A or B), LBO is the stride between atoms along MN and SBO between
// groups of 8 rows along K; for a K-major one, SBO is the stride between
// groups of 8 rows along M (or N) and LBO is unused (given as 16).
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
// The same with 64-byte swizzle (mode 2): atoms of 8 rows of 64 bytes (512 B,
// the start aligned to it), as TMA's CU_TENSOR_MAP_SWIZZLE_64B writes them.
// swz_desc<RowBytes> below is either one, for rows of 128 or 64 bytes.
__device__ __forceinline__ unsigned long long sw64_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (2ull << 62);
}
template <int RowBytes>
__device__ __forceinline__ unsigned long long swz_desc(unsigned addr, unsigned lbo)
{
    static_assert(RowBytes == 128 || RowBytes == 64, "rows of 128 or 64 bytes");
    return RowBytes == 128 ? sw128_desc(addr, lbo, 1024) : sw64_desc(addr, lbo, 512);
}
// The descriptor of an operand `units` 16-byte units past d's (as CUTLASS's
// descriptor iterator moves one): only the start address, bits 0-13 of the
// low word (address >> 4), moves, and shared addresses stay under 256 KB, so
// the add never carries into the LBO field; the high word (SBO, swizzle)
// stays.  One 32-bit add where re-encoding takes a mask, a shift and an or.
__device__ __forceinline__ unsigned long long desc_advance(unsigned long long d, unsigned units)
{
    return (unsigned long long)(unsigned)(d >> 32) << 32 | ((unsigned)d + units);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity)
{
    while (!cuda::ptx::mbarrier_try_wait_parity(reinterpret_cast<uint64_t *>(bar), parity)) {
    }
}

// stmatrix (sm_90), transposed: each 8x8 matrix of b16 pairs in the mma
// fragment layout (lane l holds row l / 4, columns 2 (l % 4) and + 1 in its
// register t for matrix t) is stored transposed: the 16-byte row whose
// shared address lane 8t + q gives receives column q of matrix t.
__device__ __forceinline__ void stmatrix_x4_trans(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
// The same for two matrices (lanes 0..15 give the addresses).
__device__ __forceinline__ void stmatrix_x2_trans(unsigned addr, unsigned r0, unsigned r1)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1)
                 : "memory");
}

// Named barrier for the 128 threads of one consumer warp group (ids 1..).
__device__ __forceinline__ void wg_sync(int id)
{
    asm volatile("barrier.sync %0, 128;\n" ::"r"(id) : "memory");
}
// The same barrier, and whether any of the 128 threads passed p true
// (barrier.red.or: one thread's verdict reaches the warp group without shared memory).
__device__ __forceinline__ bool wg_any(int id, bool p)
{
    unsigned r;
    asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbarrier.red.or.pred q, %2, 128, p;\n\t"
                 "selp.u32 %0, 1, 0, q;\n}\n"
                 : "=r"(r)
                 : "r"((unsigned)p), "r"(id)
                 : "memory");
    return r != 0;
}
// A named barrier between warp groups: some arrive (and go on), the others
// wait until `threads` in all have come (arrivals and waiters).
__device__ __forceinline__ void named_bar_arrive(int id, int threads)
{
    asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_sync(int id, int threads)
{
    asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}


// ---- clusters: PTX without a CCCL wrapper taking a shared::cluster address ----
// The shared::cluster address of this CTA's p in the CTA of the cluster
// with rank `rank` (PTX ISA: mapa).
__device__ __forceinline__ unsigned cluster_smem_addr(const void *p, unsigned rank)
{
    unsigned out;
    const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(local), "r"(rank));
    return out;
}
// Arrive (release, cluster scope) on an mbarrier given by its shared::cluster
// address: what this thread wrote before is visible to the CTA that waits.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned addr)
{
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
// Arrive with the default (CTA-scope) semantics on an mbarrier given by its
// shared::cluster address: "this slot is free" signals, which order nothing
// but the reads already completed; a cluster-scope release here would wait
// for this thread's outstanding global stores on every k-tile.
__device__ __forceinline__ void mbar_arrive_remote(unsigned addr)
{
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
// 32-bit store to a shared::cluster address (another CTA's shared memory).
__device__ __forceinline__ void st_cluster_u32(unsigned addr, unsigned v)
{
    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// Wait on an mbarrier phase with acquire at cluster scope: data written by
// another CTA of the cluster before its release-arrive is visible after it.
__device__ __forceinline__ void mbar_wait_cluster(unsigned long long *bar, unsigned parity)
{
    while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster,
                                                 reinterpret_cast<uint64_t *>(bar), parity)) {
    }
}

#endif // KEVO_HOPPER_CUH
