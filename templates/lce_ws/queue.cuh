// lce_ws/queue.cuh — lce_ws's shared memory and the cluster's work queue:
// the control block (the ring's barriers, the queue's barriers and
// entries); the queue between the leader CTA's producer and every role in
// the cluster (queue_push publishes an item in each CTA, queue_pop waits
// for an entry, queue_done hands its slot back to the leader); and the
// CTA's shared memory carved into stages, staging and control block
// (ws_carve), set up and torn down (ws_setup, ws_teardown).  Inlined ahead
// of lce_ws.cu after lce_ws/work.cuh (space "include").
#ifndef KEVO_LCE_WS_QUEUE_CUH
#define KEVO_LCE_WS_QUEUE_CUH
#ifndef KEVO_LCE_WS_WORK_CUH
#include "lce_ws/work.cuh"
#endif

// Shared memory, from a 1024-byte aligned base (the plan asks 1 KiB extra).
struct alignas(8) ws_ctl {
    ring_bars<STAGES> ring;                         // the stages' full and empty barriers
    unsigned long long qfull[QN], qempty[QN];       // work queue
    int q_item[QN], q_pos[QN];                      // item id (-1: no more), its first ring position
};
constexpr int SMEM_CTL = STAGES * STAGE_BYTES + STAGING_BYTES;

// Arrive on the leader CTA's copy of a queue barrier (the entry is read).
__device__ __forceinline__ void arrive_leader(unsigned long long *bar)
{
    if constexpr (CLUSTER == 1)
        cuda::ptx::mbarrier_arrive(reinterpret_cast<uint64_t *>(bar));
    else
        mbar_arrive_remote(cluster_smem_addr(bar, 0));
}
__device__ __forceinline__ void queue_wait(unsigned long long *bar, unsigned parity)
{
    if constexpr (CLUSTER == 1)
        mbar_wait(bar, parity);
    else
        mbar_wait_cluster(bar, parity);
}

// The leader's producer: publish item (with its first ring position) as
// queue entry i in every CTA of the cluster.
__device__ __forceinline__ void queue_push(ws_ctl *ctl, int i, int item, int pos)
{
    const int slot = i % QN;
    mbar_wait(&ctl->qempty[slot], ((i / QN) & 1) ^ 1);
    if constexpr (CLUSTER == 1) {
        ctl->q_item[slot] = item;
        ctl->q_pos[slot] = pos;
        cuda::ptx::mbarrier_arrive(reinterpret_cast<uint64_t *>(&ctl->qfull[slot]));
    } else {
#pragma unroll
        for (unsigned r = 0; r < CLUSTER; ++r) {
            st_cluster_u32(cluster_smem_addr(&ctl->q_item[slot], r), (unsigned)item);
            st_cluster_u32(cluster_smem_addr(&ctl->q_pos[slot], r), (unsigned)pos);
            mbar_arrive_cluster(cluster_smem_addr(&ctl->qfull[slot], r));
        }
    }
}

// Queue entry i as its readers see it: the item (-1: no more) and its first
// ring position.  queue_pop waits for it; queue_done hands the slot back.
struct ws_entry {
    int item, p0;
};
__device__ __forceinline__ ws_entry queue_pop(ws_ctl *ctl, int i)
{
    const int slot = i % QN;
    queue_wait(&ctl->qfull[slot], (i / QN) & 1);
    return ws_entry{ctl->q_item[slot], ctl->q_pos[slot]};
}
__device__ __forceinline__ void queue_done(ws_ctl *ctl, int i)
{
    arrive_leader(&ctl->qempty[i % QN]);
}
// This CTA's shared memory: the ring's stages, the consumers' staging
// buffers and the control block (ring and queue barriers, queue entries).
struct ws_smem {
    unsigned char *stages;  // STAGES * STAGE_BYTES, 1024-byte aligned (the swizzle atoms)
    unsigned char *staging; // SBUF output boxes per consumer warp group
    ws_ctl *ctl;
};

// Setup: carve the dynamic shared memory from a 1024-byte aligned base.
__device__ __forceinline__ ws_smem ws_carve()
{
    extern __shared__ unsigned char smem_raw[];
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    return ws_smem{smem, smem + STAGES * STAGE_BYTES, reinterpret_cast<ws_ctl *>(smem + SMEM_CTL)};
}

// Setup: one thread initializes the ring and the work queue; the whole
// cluster waits until every CTA's barriers exist.
__device__ __forceinline__ void ws_setup(const ws_smem &sm)
{
    ws_ctl *ctl = sm.ctl;
    if (threadIdx.x == 0) {
        ring_init(ctl->ring, ITEM_WARPS * CLUSTER); // a slot is read by an item's consumer warps, in every CTA
        for (int i = 0; i < QN; ++i) {
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->qfull[i]), 1);
            // readers of an entry: its consumer warps and the producer, in every CTA
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->qempty[i]), (ITEM_WARPS + 1) * CLUSTER);
        }
        cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    }
    if constexpr (CLUSTER > 1) {
        cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
        cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
    } else {
        __syncthreads();
    }
}

// Teardown: with a cluster, no CTA leaves while the peer may still arrive
// on its barriers or multicast into it.
__device__ __forceinline__ void ws_teardown()
{
    if constexpr (CLUSTER > 1) {
        cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
        cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
    }
}

#endif // KEVO_LCE_WS_QUEUE_CUH
