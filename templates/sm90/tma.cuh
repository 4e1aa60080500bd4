// sm90/tma.cuh — the Tensor Memory Accelerator's bulk copies as a
// warp-specialized Hopper kernel uses them (CCCL's cuda::ptx wrappers): load
// one box of a tensor map into a ring stage (its bytes counted on the stage's
// full barrier, sm90/ring.cuh), optionally multicast to the CTAs of a
// cluster, and store a staged box back.  Coordinates are the tensor map's
// dimensions, innermost first.  Each is issued by one thread.
// kevo inlines it after hopper.cuh (which brings <cuda/ptx>).
#ifndef KEVO_SM90_TMA_CUH
#define KEVO_SM90_TMA_CUH

// Load the box at {x, y} of `map` into dst; its bytes complete on bar.
__device__ __forceinline__ void tma_load_2d(void *dst, const void *map, int x, int y, uint64_t *bar)
{
    const int32_t xy[2] = {x, y};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, xy, bar);
}

// The same box written at dst of every CTA in `ctas` (a bit per cluster
// rank), each CTA's bar counting its bytes: one load, several copies.
__device__ __forceinline__ void tma_load_2d_multicast(void *dst, const void *map, int x, int y, uint64_t *bar,
                                                      uint16_t ctas)
{
    const int32_t xy[2] = {x, y};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, xy, bar, ctas);
}

// Load the box at {x, y, z} of `map` into dst; its bytes complete on bar.
__device__ __forceinline__ void tma_load_3d(void *dst, const void *map, int x, int y, int z, uint64_t *bar)
{
    const int32_t xyz[3] = {x, y, z};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, xyz, bar);
}

// The same box written at dst of every CTA in `ctas` (multicast).
__device__ __forceinline__ void tma_load_3d_multicast(void *dst, const void *map, int x, int y, int z,
                                                      uint64_t *bar, uint16_t ctas)
{
    const int32_t xyz[3] = {x, y, z};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, xyz, bar, ctas);
}

// Make this warp group's generic-proxy writes to shared memory (a staged
// box) visible to the TMA engine: before the barrier ahead of a store.
__device__ __forceinline__ void tma_store_fence()
{
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
}

// Store the staged box src to {x, y, z} of `map` (clipped at the tensor's
// edges) as one bulk group of its own.
__device__ __forceinline__ void tma_store_3d(const void *map, int x, int y, int z, const void *src)
{
    const int32_t xyz[3] = {x, y, z};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, xyz, src);
    cuda::ptx::cp_async_bulk_commit_group();
}

// Wait until at most Pending of this thread's stores still read their
// shared-memory source (the older ones' buffers may be written again).
template <int Pending>
__device__ __forceinline__ void tma_store_wait_read()
{
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<Pending>());
}

// Wait until every store of this thread is complete (written to global memory).
__device__ __forceinline__ void tma_store_wait_all()
{
    cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>());
}

#endif // KEVO_SM90_TMA_CUH
