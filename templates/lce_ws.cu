// lce_ws.cu — ikbo_lce on Hopper (sm_90a): warp-specialized, persistent.
//
// One launch computes the user tiles (user_res[u] = W_user @ E_user[u], fp32,
// into the workspace) and the candidate tiles (out[b] = W_cand @ E_cand[b] +
// user_res[cand_to_user[b]]); FUSE=0 splits them into two launches.
//
//   scheduler: the grid is persistent (at most one CTA, or cluster, per SM).
//     The leader producer of each cluster claims work items from a counter
//     in the workspace — user tiles first, then candidate tiles — and hands
//     them to its roles through a small mbarrier-gated queue in shared memory
//     (copied to the peer CTA when CLUSTER=2).  A candidate tile's epilogue
//     waits on the readiness flag of the user tile it adds; that tile was
//     claimed earlier by a running CTA whose own waits are on tiles claimed
//     earlier still, so no wait depends on a CTA that is not resident.
//   producer (warp group 0, one thread, 40 registers): for each item, its
//     BK-deep k-tiles (32, 64 or 128) into a STAGES-deep ring: TMA loads of W
//     (K-major, 128-byte swizzle: BK/64 boxes of 64 K-columns; BK=32 one box
//     of 32 with 64-byte swizzle, so a ring of twice the stages) and E
//     (N-major, BK rows, boxes one swizzle atom wide: 64 columns with 128-byte
//     swizzle, or 32 columns with 64-byte swizzle when BN is an odd multiple
//     of 32; a TRIM-narrowed tile (BW = BN - TRIM columns of N) loads
//     whole 64-column atoms and its wgmmas read BW of them; with CLUSTER=2
//     each CTA loads half of the boxes and multicasts them to both; TRANS=1 shares W's rows instead, see below; CLB=1 pairs
//     two candidates at one tile position, which share W's rows).  A pair
//     whose second candidate is past B (or U) loads the last one's data
//     again and stores nothing.
//   consumers (warp groups 1..CONSUMERS, 1 to 4; setmaxnreg to their share
//     of the registers: 240, 232, 152, 104): BK/16 wgmma.m64nBNk16 per
//     k-tile from shared memory; PINGPONG=1 (two consumers): each warp group
//     owns alternate items (64-row tiles), so one's epilogue runs under the
//     other's MMAs, and waits for an item's k-tiles only once the other has
//     seen its item's loaded (a named barrier: a parity wait must not run a
//     phase ahead of its slot); PINGPONG=0: the warp groups split one
//     64*CONSUMERS-row tile (up to 256 rows).
//   broadcast-add: a candidate tile's accumulators start as its block of
//     user_res[cand_to_user[b]] (read from L2 once the flag is set) and the
//     MMAs add onto it; the epilogue rounds, stages 64x64 swizzled boxes and
//     writes them with TMA stores (EPI=1; SBUF buffers per warp group, so up
//     to SBUF - 1 stores stay in flight while the next box is staged) or
//     16-byte stores (EPI=0; under EPI=1 too for a last box of BW % 64
//     columns, or TRANS=1 rows: a 64-wide store box would write the next
//     tile's).  URES=1 holds user_res in registers of its own, added in the
//     epilogue, so a tile whose user tile is not ready yet (the first wave,
//     while the user GEMM runs) starts its main loop anyway and waits for
//     the flag only after it.
//   TRANS=1: the tile is transposed, out[b]^T = E[b]^T @ W^T: the WGMMA's M
//     side (64 rows per consumer warp group) runs along N and its N side
//     along M, so M is covered in steps of 8 (BW = BN - TRIM columns) where
//     TRANS=0 pads it to 64 rows per warp group.  The shared-memory layouts
//     are the same: E's boxes are the A operand read M-major (imm-trans-a),
//     W's box of BW rows the K-major B operand; the epilogue writes each
//     8x8 block of the fragment transposed (stmatrix .trans) into the same
//     64x64 boxes of out (64 rows of M by 64 columns of N).  Its cluster
//     pairs two N tiles, which share W (the larger operand: BW rows against
//     64 columns of E per consumer): each CTA loads half of W's rows and
//     multicasts them; E is each CTA's own.
//
//   SPLITK > 1: a persistent grid idles in its last wave when its items are
//     not a multiple of its clusters.  The whole waves stay whole; the
//     candidate tiles of the remainder (n mod clusters of the launch's n
//     items, all of them when fewer) are split along Kc into SPLITK parts of
//     balanced k-tile ranges, claimed last, when that shortens the last wave
//     (ws_geometry: fewer than SPLITK rounds of parts of 1/SPLITK tile).  Each
//     part writes its fp32 partial sum (fragment order) to its own slot and
//     counts itself in on its tile's counter (tagged with launch_seq); the
//     part that arrives last adds the others' sums to its own, in part
//     order (the same bits whichever part is last), and runs the epilogue.
//     No part waits for another (stream-K's fix-up by the last arrival, not
//     by a designated owner).
//   UFOLD=1: no user tiles.  Each candidate tile runs its user's Ku
//     k-tiles (W_user, E_user[cand_to_user[b]]) into its accumulators before
//     its own Kc ones: B / U times the user GEMM's MMAs, against no user_res
//     written, read back per candidate (as many bytes as out) or waited for
//     (where Ku is small beside Kc, or out's bytes bound the op).
//   USPLIT > 1: a user tile is a chain of ceil(Ku / BK) k-tiles on one CTA
//     (or cluster); with few users (one, at 83x72 outputs: 2 of 132 SMs for
//     19.5 us) every candidate tile waits for it.  Split along Ku into USPLIT
//     parts claimed one after the other, the chain runs on USPLIT CTAs at
//     once; the parts' sums meet as the candidate split's do, and the last
//     part stores user_res and sets the flag.
//   STACK=1 (TRANS=1): B * NP rows, the candidates' N end to end at the
//     pitch NP = N rounded up to 32 (users' alike), in tiles of TILE_R: N
//     is padded to 32, not to whole tiles.  E comes in 32-column boxes (the
//     columns past N read as zeros); a warp's 16 rows are one candidate's
//     and add its user's (in one launch, each warp waits for its own user
//     tile); a warp group's 64 rows that cross candidates store by 16-byte
//     stores.
//
// The kernel (ws_kernel, at the end) reads as its steps: ws_setup; the
// producer's producer_schedule and producer_load; the consumers'
// consumer_start, consumer_compute (URES=1: consumer_late_user), then
// consumer_stash_user (a user tile) or consumer_split and consumer_finish (a
// candidate tile); ws_teardown.  This file holds the consumers' loop and the
// kernel; the steps live in the family's headers, by role:
// lce_ws/queue.cuh (shared memory, the work queue, setup and teardown),
// lce_ws/producer.cuh (the scheduler and the loads), lce_ws/consumer.cuh (a
// consumer warp group's view and its main loop), lce_ws/user_res.cuh (a
// tile's start from user_res, the late wait, a user tile's stash),
// lce_ws/split.cuh (the split tiles' fix-up) and lce_ws/epilogue.cuh (a
// candidate tile's stores).  The mechanism lives in shared headers:
// sm90/ring.cuh (the stage ring: acquire/commit, wait/release) and
// sm90/tma.cuh (box loads, multicast, stores).  lce_ws/config.cuh holds the
// tunables and the tile they make, lce_ws/work.cuh the work items and the
// workspace below.
//
// Workspace: user_res by CTA tile in fragment order (fp32, or the storage
// dtype with URES=1) | 128 bytes: claim counters | flags
// [U][tiles_n][tiles_m][CLUSTER] int | SPLITK > 1 or USPLIT > 1: the split
// tiles' arrival counters and partial sums (ws_split_ctr, ws_part).  Counters and flags
// carry the run's launch_seq, so stale values from earlier runs (or poison)
// never count.
// Needs the padded-K layout (TMA rows of 16-byte multiples); K, M and N
// tails come from TMA's zero fill (a box wholly past the tensor, such as
// BK=128's second W box when K % 128 <= 64, reads as zeros and still counts
// its bytes), its clipped stores and the predicated 16-byte stores.

#ifndef KEVO_HOPPER_CUH
#include "hopper.cuh" // kevo inlines it ahead of this file (space "include")
#endif
#ifndef KEVO_SM90_RING_CUH
#include "sm90/ring.cuh" // the stage ring: acquire/commit, wait/release
#endif
#ifndef KEVO_SM90_TMA_CUH
#include "sm90/tma.cuh" // TMA loads (multicast) and stores
#endif
#include <cuda/atomic>
#ifndef KEVO_LCE_WS_WORK_CUH
#include "lce_ws/work.cuh" // the tunables, the tile, the work items and the workspace
#endif
#ifndef KEVO_LCE_WS_QUEUE_CUH
#include "lce_ws/queue.cuh" // shared memory, the work queue, setup and teardown
#endif
#ifndef KEVO_LCE_WS_PRODUCER_CUH
#include "lce_ws/producer.cuh" // the scheduler and the producer's loads
#endif
#ifndef KEVO_LCE_WS_CONSUMER_CUH
#include "lce_ws/consumer.cuh" // the consumer's view of a tile and its main loop
#endif
#ifndef KEVO_LCE_WS_USER_RES_CUH
#include "lce_ws/user_res.cuh" // user_res: a tile's start, the late wait, the stash
#endif
#ifndef KEVO_LCE_WS_SPLIT_CUH
#include "lce_ws/split.cuh" // the split tiles' fix-up
#endif
#ifndef KEVO_LCE_WS_EPILOGUE_CUH
#include "lce_ws/epilogue.cuh" // a candidate tile's epilogue
#endif

// ---- the kernel ----

// Consumer warp groups: for each item of their queue entries (ping-pong:
// alternate entries), start the accumulators, run the main loop, then
// stash a user tile's result, or (a split part that arrived last, or a
// whole candidate tile) store the tile.
template <int PHASE>
__device__ __forceinline__ void consumer(const kevo_lce_args &a, const ws_geom &g, const ws_smem &sm, unsigned rank)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
    const int c = threadIdx.x / 128 - 1, tid = threadIdx.x % 128;
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(sm.stages));
    const ws_cons w{c, tid, tid / 32, tid % 32, a.launch_seq, base, PINGPONG || TRANS ? 0u : (unsigned)c * 64 * W_ROW,
                    PINGPONG || !TRANS ? 0u : (unsigned)c * BK * 128};
    ws_frag f;
#if URES || UFOLD
#pragma unroll
    for (int i = 0; i < NACC; ++i)
        f.acc[i] = 0.0f; // defined once; each tile's first wgmma overwrites them
#endif
    int boxes = 0;              // staged boxes so far
    int held = -1;               // URES=1: whose user_res f.pre holds (consumer_start)
    for (int i = PINGPONG ? w.c : 0;; i += PINGPONG ? 2 : 1) {
        const ws_entry e = queue_pop(sm.ctl, i);
        __syncwarp();
        if (w.lane == 0)
            queue_done(sm.ctl, i);
        if (e.item < 0)
            break;
        const ws_item it = ws_decode(a, g, e.item, rank);
        const ws_tile tile = ws_tile_of(a, it, w);
        if constexpr (!UFOLD) // UFOLD=1: each tile's first wgmma overwrites the accumulators
            consumer_start<PHASE>(a, g, it, w, tile, rank, f, held);
        consumer_compute(sm, it, e.p0, i, w, f.acc);
#if URES
        consumer_late_user<PHASE>(a, g, it, w, tile, rank, f, held);
#endif
        if (it.user) {
#if USPLIT > 1
            if (!consumer_split<UNB, true>(a, g, it, w, tile, rank, f))
                continue; // not the last part: the last one stores the tile
#endif
            if (!CLB || ws_live(a, it))
                consumer_stash_user<PHASE>(a, g, it, w, rank, f);
            continue;
        }

#if SPLITK > 1
        if (it.part >= 0 && !consumer_split<SB, false>(a, g, it, w, tile, rank, f))
            continue;
#endif
        consumer_finish(a, sm, it, w, tile, f, boxes);
    }
    if constexpr (EPI == 1) {
        if (w.tid == 0)
            tma_store_wait_all();
    }
}

// The kernel: warp group 0 produces (claims items, loads their k-tiles),
// warp groups 1..CONSUMERS compute and store them.
template <int PHASE>
__device__ __forceinline__ void ws_kernel(const kevo_lce_args &a)
{
    const ws_smem sm = ws_carve();
    const unsigned rank = CLUSTER > 1 ? cuda::ptx::get_sreg_cluster_ctarank() : 0u;
    const ws_geom g = ws_geometry<PHASE>(a);
    ws_setup(sm);
    if (threadIdx.x / 128 == 0)
        producer<PHASE>(a, g, sm, rank);
    else
        consumer<PHASE>(a, g, sm, rank);
    ws_teardown();
}

#if CLUSTER > 1
#define WS_KERNEL(name) extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(NT, 1) name
#else
#define WS_KERNEL(name) extern "C" __global__ void __launch_bounds__(NT, 1) name
#endif

#if FUSE
// User and candidate tiles in one launch.
WS_KERNEL(lce_ws_fused)(const __grid_constant__ kevo_lce_args a)
{
    ws_kernel<PHASE_BOTH>(a);
}
#else
// user_res[u] = W_user @ E_user[u] (first launch).
WS_KERNEL(lce_ws_user)(const __grid_constant__ kevo_lce_args a)
{
    ws_kernel<PHASE_USER>(a);
}
// out[b] = W_cand @ E_cand[b] + user_res[cand_to_user[b]] (second launch).
WS_KERNEL(lce_ws_cand)(const __grid_constant__ kevo_lce_args a)
{
    ws_kernel<PHASE_CAND>(a);
}
#endif
