// sm90/ring.cuh — the stage ring of a warp-specialized Hopper kernel: Depth
// slots of shared memory, each with a "full" mbarrier (the producer's TMA
// bytes have landed) and an "empty" one (every consumer warp, in every CTA of
// the cluster, is done reading).  Positions count k-tiles over the whole run:
// position p is slot p % Depth in phase (p / Depth) & 1, so the producer and
// the consumers track phases by position alone.
//   producer: ring_acquire (wait until the slot is free), ring_commit (the
//             slot's bytes to expect), then the TMA loads (sm90/tma.cuh);
//   consumer: ring_wait (the slot is full), read it, ring_release.
// kevo inlines it after hopper.cuh (mbar_wait, the cluster arrivals), as the
// family's space file lists them; a standalone compile includes hopper.cuh
// first.  (Template parameters are CamelCase: the tunables are macros.)
#ifndef KEVO_SM90_RING_CUH
#define KEVO_SM90_RING_CUH

// The ring's barriers (the stages' bytes live elsewhere in shared memory).
template <int Depth>
struct ring_bars {
    unsigned long long full[Depth], empty[Depth];
};

// One thread: each full barrier waits for the producer's one arrival (and its
// bytes), each empty one for `readers` arrivals (consumer warps times CTAs).
template <int Depth>
__device__ __forceinline__ void ring_init(ring_bars<Depth> &r, unsigned readers)
{
    for (int s = 0; s < Depth; ++s) {
        cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&r.full[s]), 1);
        cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&r.empty[s]), readers);
    }
}

// Producer: wait until position p's slot is free (its previous phase
// released); returns the slot.
template <int Depth>
__device__ __forceinline__ int ring_acquire(ring_bars<Depth> &r, int p)
{
    const int s = (unsigned)p % Depth; // positions are never negative: unsigned arithmetic is cheaper
    mbar_wait(&r.empty[s], (((unsigned)p / Depth) & 1) ^ 1);
    return s;
}

// Producer: arrive on slot s's full barrier, expecting `bytes` from the TMA
// loads that follow (the phase completes when they land); returns the barrier
// the loads signal.
template <int Depth>
__device__ __forceinline__ uint64_t *ring_commit(ring_bars<Depth> &r, int s, unsigned bytes)
{
    uint64_t *bar = reinterpret_cast<uint64_t *>(&r.full[s]);
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                         bytes);
    return bar;
}

// Consumer: wait until position p's slot is full; returns the slot.
template <int Depth>
__device__ __forceinline__ int ring_wait(ring_bars<Depth> &r, int p)
{
    const int s = (unsigned)p % Depth;
    mbar_wait(&r.full[s], ((unsigned)p / Depth) & 1);
    return s;
}

// Arrive on barrier `bar` of every CTA in the cluster (with Ctas > 1 a
// slot may be written by a multicast only once both CTAs have released it).
template <int Ctas>
__device__ __forceinline__ void arrive_all_ranks(unsigned long long *bar)
{
    if constexpr (Ctas == 1) {
        cuda::ptx::mbarrier_arrive(reinterpret_cast<uint64_t *>(bar));
    } else {
#pragma unroll
        for (unsigned r = 0; r < Ctas; ++r)
            mbar_arrive_remote(cluster_smem_addr(bar, r));
    }
}

// Consumer (one lane per warp): position p's slot is read, in this CTA and
// every other CTA of the cluster.
template <int Ctas, int Depth>
__device__ __forceinline__ void ring_release(ring_bars<Depth> &r, int p)
{
    arrive_all_ranks<Ctas>(&r.empty[(unsigned)p % Depth]);
}

#endif // KEVO_SM90_RING_CUH
