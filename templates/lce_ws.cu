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
// candidate tile); ws_teardown.  The mechanism lives in shared headers:
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

// ---- the kernel's steps ----

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

// The leader's scheduler state: the claim counter, the claimed item not yet
// published, the ring position the next item starts at, entries pushed, and
// whether the next claim is due.
struct ws_sched {
    unsigned long long *ctr;
    int next, pos, pushed;
    bool due;
};

// Producer, leader CTA: claim the following item once this one's loads are
// issued.  The atomic's result is used at once (the compiler aggregates
// atomicAdd over the warp, a shuffle of its result): claimed before the
// loads it delayed them whenever the ring had room; here its round trip
// overlaps the wait for a free stage (1.7% at a shape of 4-k-tile items,
// H200; docs/lce_ws.md v18).
__device__ __forceinline__ void producer_claim(ws_sched &q)
{
    if (q.due) {
        q.next = sched_claim(q.ctr);
        q.due = false;
    }
}

// Producer, leader CTA: publish the claimed item; the next claim falls due.
// Ping-pong claims it at once: the other consumer's next item is published
// at the top of the next round, and a claim after this item's loads would
// delay it (1-2% slower, H200).  Otherwise producer_claim makes it after the
// loads.  After the last item, the end (-1) for each consumer that reads its
// own entries.
__device__ __forceinline__ void producer_schedule(const kevo_lce_args &a, const ws_geom &g, ws_ctl *ctl,
                                                  ws_sched &q)
{
    const int item = q.next < g.count ? g.lo + q.next : -1;
    queue_push(ctl, q.pushed++, item, q.pos);
    if (item >= 0) {
        q.pos += ws_decode(a, g, item, 0).kt;
        q.due = true;
        if (PINGPONG) // the other consumer starts on the next item now
            producer_claim(q);
    } else if (PINGPONG) {
        queue_push(ctl, q.pushed++, -1, q.pos); // the other consumer's end
    }
}

// Producer: W's boxes of one k-tile (K from kx) into stage w, W_BOXES
// boxes of W_ROW / 2 K-columns.  TRANS=1 or CLB=1 in a cluster: both CTAs multiply the
// same rows of W (TRANS=1: for other columns of N; CLB=1: for another
// candidate), so each loads its share of W's rows for both (whole 8-row
// swizzle atoms).
__device__ __forceinline__ void producer_load_w(unsigned char *w, const void *map, const ws_item &it, int kx,
                                                uint64_t *bar, unsigned rank)
{
#pragma unroll
    for (int h = 0; h < W_BOXES; ++h) {
        if constexpr (W_MCAST) {
            const int r0 = (int)rank * W_LOAD_ROWS;
            tma_load_2d_multicast(w + h * W_BOX_BYTES + r0 * W_ROW, map, kx + W_ROW / 2 * h, it.m0 + r0, bar,
                                  (uint16_t)((1u << CLUSTER) - 1));
        } else {
            tma_load_2d(w + h * W_BOX_BYTES, map, kx + W_ROW / 2 * h, it.m0, bar);
        }
    }
}

// Producer: E's boxes of one k-tile (BK rows from kx) into stage e, one
// swizzle atom wide each.  TRANS=0, CLB=0 in a cluster: both CTAs compute
// rows of the same (b, columns), so each loads every other box for both.
__device__ __forceinline__ void producer_load_e(unsigned char *e, const void *map, const ws_item &it, int b,
                                                int kx, uint64_t *bar, unsigned rank)
{
#pragma unroll
    for (int j = 0; j < E_BOXES; ++j) {
        if constexpr (!E_MCAST)
            tma_load_3d(e + j * (BK * E_ROW), map, it.n0 + E_COLS * j, kx, b, bar);
        else if (j % CLUSTER == (int)rank)
            tma_load_3d_multicast(e + j * (BK * E_ROW), map, it.n0 + E_COLS * j, kx, b, bar,
                                  (uint16_t)((1u << CLUSTER) - 1));
    }
}

#if STACK
static_assert(TRANS && URES && EPI && !PINGPONG && SPLITK == 1 && !UFOLD && (CLUSTER == 1 || CLB),
              "STACK=1 takes TRANS=1, URES=1, EPI=1, cooperative consumers, CLB=1 in a cluster, no candidate split");
// Producer, STACK=1: E's 32-column boxes of one k-tile for the tile's rows of
// the stack, the first column c of candidate (user) b: box j holds the next
// 32, on into candidate b + 1 at the pitch NP.  (No box straddles two: the
// columns N..NP-1 of a box, and one past B or U, read as zeros.)
__device__ __forceinline__ void producer_load_e_stacked(unsigned char *e, const void *map, int b, int c, int NP,
                                                        int kx, uint64_t *bar)
{
#pragma unroll
    for (int j = 0; j < E_BOXES; ++j) {
        tma_load_3d(e + j * (BK * E_ROW), map, c, kx, b, bar);
        c += E_COLS;
        if (c == NP) {
            c = 0;
            ++b;
        }
    }
}
#endif

#if UFOLD
// Producer: one k-tile (K-columns from kx) of W and of E[b] into the ring
// at position p.
__device__ __forceinline__ void producer_load_kt(const ws_smem &sm, int p, const void *tm_w, const void *tm_e,
                                                 const ws_item &it, int b, int kx, unsigned rank)
{
    const int s = ring_acquire(sm.ctl->ring, p);
    uint64_t *bar = ring_commit(sm.ctl->ring, s, STAGE_BYTES);
    unsigned char *stage = sm.stages + s * STAGE_BYTES;
    producer_load_w(stage, tm_w, it, kx, bar, rank);
    producer_load_e(stage + W_BYTES, tm_e, it, b, kx, bar, rank);
}

// Producer, UFOLD=1: a candidate tile's k-tiles, its user's first (W_user,
// E_user[cand_to_user[b]], Ku columns), then its own (Kc).
__device__ __forceinline__ void producer_load_folded(const kevo_lce_args &a, const ws_smem &sm, const ws_item &it,
                                                     int p0, unsigned rank)
{
    const int b = ws_loaded(a, it), ku = (a.Ku + BK - 1) / BK;
    const int u = __ldg(a.cand_to_user + b);
    for (int k = 0; k < ku; ++k)
        producer_load_kt(sm, p0 + k, &a.tm_w_user, &a.tm_e_user, it, u, k * BK, rank);
    for (int k = ku; k < it.kt; ++k)
        producer_load_kt(sm, p0 + k, &a.tm_w_cand, &a.tm_e_cand, it, b, (k - ku) * BK, rank);
}
#endif

// Producer: an item's k-tiles into the ring from position p0 (a user tile
// reads the user tensors, a candidate tile the candidate ones).
__device__ __forceinline__ void producer_load(const kevo_lce_args &a, const ws_smem &sm, const ws_item &it, int p0,
                                              unsigned rank)
{
#if UFOLD
    if (!it.user)
        return producer_load_folded(a, sm, it, p0, rank);
#endif
    const void *tm_w = it.user ? (const void *)&a.tm_w_user : (const void *)&a.tm_w_cand;
    const void *tm_e = it.user ? (const void *)&a.tm_e_user : (const void *)&a.tm_e_cand;
#if STACK
    const int NP = stack_pitch(a), r0 = it.bb * TILE_R, b0 = r0 / NP, c0 = r0 - b0 * NP; // the tile's first row of the stack
#endif
    for (int k = 0; k < it.kt; ++k) {
        const int s = ring_acquire(sm.ctl->ring, p0 + k);
        uint64_t *bar = ring_commit(sm.ctl->ring, s, STAGE_BYTES);
        unsigned char *stage = sm.stages + s * STAGE_BYTES;
        producer_load_w(stage, tm_w, it, (it.k0 + k) * BK, bar, rank);
#if STACK
        producer_load_e_stacked(stage + W_BYTES, tm_e, b0, c0, NP, (it.k0 + k) * BK, bar);
#else
        producer_load_e(stage + W_BYTES, tm_e, it, ws_loaded(a, it), (it.k0 + k) * BK, bar, rank);
#endif
    }
}

// Producer warp group (one thread works): the leader claims and publishes
// items; every CTA's producer loads the items its queue hands it.
template <int PHASE>
__device__ __forceinline__ void producer(const kevo_lce_args &a, const ws_geom &g, const ws_smem &sm, unsigned rank)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x % 128 != 0)
        return;
    ws_sched q{reinterpret_cast<unsigned long long *>(static_cast<char *>(a.workspace) + ws_sched_offset(a, g) +
                                                      8 * PHASE),
               0, 0, 0, false};
    if (rank == 0) {
        sched_start(q.ctr, (unsigned)a.launch_seq);
        q.next = sched_claim(q.ctr);
    }
    for (int i = 0;; ++i) {
        if (rank == 0 && i == q.pushed)
            producer_schedule(a, g, sm.ctl, q);
        const ws_entry e = queue_pop(sm.ctl, i);
        queue_done(sm.ctl, i);
        if (e.item < 0)
            break;
        producer_load(a, sm, ws_decode(a, g, e.item, rank), e.p0, rank);
        if (rank == 0)
            producer_claim(q);
    }
}

// A consumer warp group (c: 0..CONSUMERS-1) as one of its threads sees it.
struct ws_cons {
    int c, tid, warp, lane;
    int seq;               // the run's launch_seq (flags, split counters)
    unsigned base;         // the stages' shared-memory address
    unsigned a_off, e_off; // this warp group's 64 accumulator rows in a stage: 64 rows of
                           // each W box, or (TRANS=1) the E boxes of its 64 columns of N
};

// A consumer thread's registers for one tile: the accumulators and (URES=1)
// its user_res in the storage dtype, fragment order, added in the epilogue.
struct ws_frag {
    float acc[NACC];
#if URES
    uint4 pre[UVECS];
#endif
};

// An item's tile as this warp group sees it: M and N (STACK=1: the stack's
// rows from the tile's), read at the item's start (reread by the
// epilogue they cost a spill at URES=1, SPLITK=2, TRANS=1, BN=224, TRIM=24),
// and its first accumulator row, a row of M or (TRANS=1) a column of N.
struct ws_tile {
    int M, N, row0;
};
// CLB=1, a pair's second CTA past B: M = 0, so its epilogue's 16-byte
// stores are all predicated off (its TMA stores, at b = B, write nothing).
__device__ __forceinline__ ws_tile ws_tile_of(const kevo_lce_args &a, const ws_item &it, const ws_cons &w)
{
#if STACK
    return ws_tile{ws_live(a, it) ? a.M : 0, (it.user ? a.U : a.B) * stack_pitch(a) - it.bb * TILE_R,
                   it.n0 + w.c * 64};
#else
    if constexpr (CLB)
        return ws_tile{ws_live(a, it) ? a.M : 0, a.N, (TRANS ? it.n0 : it.m0) + (PINGPONG ? 0 : w.c * 64)};
    else
        return ws_tile{a.M, a.N, (TRANS ? it.n0 : it.m0) + (PINGPONG ? 0 : w.c * 64)};
#endif
}

// Consumer: start the accumulators.  0 for a user tile; for a candidate tile
// user_res[cand_to_user[b]] (once its flag is set), so the broadcast-add
// costs no epilogue loads: all the loads are in flight at once, under the
// other warp group's MMAs (ping-pong) or the producer's first loads.  One
// predicated path defines them (no branch): ptxas serializes the wgmmas when
// accumulators merge from two paths (C7515).  A split tile's later parts
// start from zero: part 0 adds user_res.  URES=1 loads user_res into
// registers of its own, added in the epilogue, so the loads fly under the
// whole main loop; and when its user tile is not ready yet (the first wave,
// while the user GEMM runs), the tile does not wait for it: held becomes
// HELD_LATE and consumer_late_user loads it after the main loop.
#if URES
constexpr int HELD_LATE = -2;
// Whether f.pre may be kept for the next tile of the same user block (not at
// BW=256: held through the epilogue it spills there; nor with STACK=1,
// whose warps hold different users).
constexpr bool URES_KEEP = SPLITK == 1 && BW < 256 && !STACK;
// Whether a workspace flag carries this run's launch_seq yet (one acquire
// load: wait_flag without the wait).
__device__ __forceinline__ bool flag_set(int *flag, int seq)
{
    cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);
    return f.load(cuda::memory_order_acquire) == seq;
}
// URES=1: the user block an item's f.pre holds: user u's tile at the item's
// tile position (held).
__device__ __forceinline__ int ures_key(const ws_geom &g, const ws_item &it, int u)
{
    return (u * g.tiles_m + it.tm) * g.tiles_n + it.tn;
}
// URES=1: whether this warp's 16 accumulator rows (rows of M, or TRANS=1
// columns of N) start inside the problem.  A warp wholly past it loads no
// user_res (zeros; its results are never stored): at N=96 under TRANS=1,
// warps 2 and 3 of the second warp group, a quarter of the bytes.
__device__ __forceinline__ bool ws_rows_in(const ws_tile &tile, const ws_cons &w)
{
    return tile.row0 + 16 * w.warp < (TRANS ? tile.N : tile.M);
}
#if STACK
// STACK=1: this warp's 16 rows are columns c.. of candidate b's N; its user
// u's same columns are rows u * NP + c.. of the users' stack (user tile
// row / TILE_R).  -1 when its rows are past B, or past N (the pitch's
// padding: zeros, never stored).
__device__ __forceinline__ int stack_user_row(const kevo_lce_args &a, const ws_item &it, const ws_tile &tile,
                                              const ws_cons &w)
{
    const int NP = stack_pitch(a), r = it.bb * TILE_R + tile.row0 + 16 * w.warp, b = r / NP, c = r - b * NP;
    return b < a.B && c < a.N ? __ldg(a.cand_to_user + b) * NP + c : -1;
}
#endif
// URES=1: this thread's user_res vectors into f.pre (add: user u's tile is
// ready, this is the tile's first part and the warp group's rows exist;
// zeros otherwise, and in a warp whose own rows are all past the problem).
// held names the block f.pre then holds (uniform across the warp group, as
// add is: a warp's rows are past the problem alike at each item of a block).
__device__ __forceinline__ void ures_fetch(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                           const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f,
                                           int &held, int u, bool add)
{
#if STACK
    // (a row's place mod 32 is c's in both stacks: the same fragment lanes)
    const int ur = stack_user_row(a, it, tile, w), ut = max(ur, 0) / TILE_R, ui = max(ur, 0) - ut * TILE_R;
    const uint4 *res = ws_ures(a, g, ut, it.tm, it.tn, rank, ui / 64, ui % 64 / 16 * 32 + w.lane);
    const bool load = add && ur >= 0;
#else
    const uint4 *res = ws_ures(a, g, u, it.tm, it.tn, rank, PINGPONG ? 0 : w.c, w.tid);
    const bool load = add && ws_rows_in(tile, w);
#endif
#pragma unroll
    for (int v = 0; v < UVECS; ++v)
        f.pre[v] = load ? __ldcg(res + v * 128) : make_uint4(0, 0, 0, 0);
    if constexpr (URES_KEEP)
        held = add ? ures_key(g, it, u) : -1;
    else
        held = -1;
}
#endif
template <int PHASE>
__device__ __forceinline__ void consumer_start(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                               const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f,
                                               int &held)
{
    const bool first = !it.user && it.part <= 0;
    const int u = it.user || STACK ? 0 : __ldg(a.cand_to_user + (CLB ? ws_loaded(a, it) : it.bb));
#if URES
    const bool add = first && tile.row0 < (TRANS ? tile.N : tile.M);
    // URES=1 keeps this thread's user_res in f.pre until the epilogue: when
    // the previous item was a candidate tile of the same user and tile
    // position (with few users, most of a persistent CTA's items: its claims
    // are about a grid apart), it is still there, ready (its flag was seen).
    // Uniform across the warp group: its threads had the same items.
    if (URES_KEEP && first && ures_key(g, it, u) == held)
        return;
    // one look at the flag: not set, f.pre starts as zeros and the main loop
    // runs without user_res (one predicated path, as with add)
    bool ready = true;
    if constexpr (PHASE == PHASE_BOTH) {
        if (first) {
#if STACK // each warp's own user tile: ready when every warp's is
            const int ur = stack_user_row(a, it, tile, w);
            ready = !wg_any(1 + w.c, w.lane == 0 && ur >= 0 &&
                                         !flag_set(ws_flag(a, g, ur / TILE_R, it.tm, it.tn, rank), w.seq));
#else
            ready = wg_any(1 + w.c, w.tid == 0 && flag_set(ws_flag(a, g, u, it.tm, it.tn, rank), w.seq));
#endif
        }
    }
    ures_fetch(a, g, it, w, tile, rank, f, held, u, add && ready);
    if (!ready)
        held = HELD_LATE;
#else
    if constexpr (PHASE == PHASE_BOTH) {
        if (first) {
            if (w.tid == 0) {
                wait_flag(ws_flag(a, g, u, it.tm, it.tn, rank), w.seq);
            }
            wg_sync(1 + w.c);
        }
    }
    const uint4 *res = ws_ures(a, g, u, it.tm, it.tn, rank, PINGPONG ? 0 : w.c, w.tid);
    const bool add = first && tile.row0 < (TRANS ? tile.N : tile.M);
#pragma unroll
    for (int v = 0; v < UVECS; ++v)
        uvec_unpack(res + v * 128, add, f.acc, v);
#endif
}

#if URES
// Consumer, URES=1: a candidate tile that started before its user tile was
// ready (held == HELD_LATE, f.pre zeros) waits for it now, after its main
// loop, and loads user_res into f.pre for the epilogue; a split tile's part 0
// does so before it counts itself in, so the later parts read user_res on
// the strength of its wait.  (Adding user_res into the accumulators here
// instead, four vectors at a time, spilled 16 bytes at BW=256 USPLIT=2 and
// SPLITK=2; loading f.pre here but not at the start when the flag was
// unset, 8 bytes at BW=256 BK=128.)
template <int PHASE>
__device__ __forceinline__ void consumer_late_user(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                                   const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f,
                                                   int &held)
{
    if (PHASE != PHASE_BOTH || held != HELD_LATE)
        return;
#if STACK // each warp waits for its own user tile
    const int ur = stack_user_row(a, it, tile, w), u = 0;
    if (w.lane == 0 && ur >= 0)
        wait_flag(ws_flag(a, g, ur / TILE_R, it.tm, it.tn, rank), w.seq);
    __syncwarp();
#else
    const int u = __ldg(a.cand_to_user + (CLB ? ws_loaded(a, it) : it.bb));
    if (w.tid == 0)
        wait_flag(ws_flag(a, g, u, it.tm, it.tn, rank), w.seq);
    wg_sync(1 + w.c);
#endif
    ures_fetch(a, g, it, w, tile, rank, f, held, u, tile.row0 < (TRANS ? tile.N : tile.M));
}
#endif

// Consumer: one k-step of 16 into the tile's accumulators: one wgmma over
// BW columns, or (BW > 256) two, the second's B operand BW1 columns on
// (B1_OFF bytes); its fragment continues the first's 8-column groups.  (A
// template, so that the second branch exists only where BW2 > 0.)
template <int W1 = BW1, int W2 = BW2>
__device__ __forceinline__ void consumer_mma(float (&acc)[NACC], unsigned long long a, unsigned long long b, int sd)
{
    if constexpr (W2 == 0) {
        wgmma_ss<BW, TRANS>(acc, a, b, sd);
    } else {
        wgmma_ss<W1, TRANS>(*reinterpret_cast<float(*)[W1 / 2]>(acc), a, b, sd);
        wgmma_ss<W2, TRANS>(*reinterpret_cast<float(*)[W2 / 2]>(acc + W1 / 2), a, desc_advance(b, B1_OFF >> 4), sd);
    }
}

// Consumer: the main loop over an item's k-tiles from ring position p0
// (its i-th queue entry): BK / 16 wgmmas per k-tile, MMA_LAG groups in
// flight, the slot of the oldest released once its group is done.  BK=32
// keeps two, the MMA work in flight that BK=64 keeps with one (one group of
// two k-steps drains before the consumer has waited, released and issued the
// next); a consumer then holds up to MMA_LAG + 1 slots.  Ping-pong: this item's ring positions follow
// the other warp group's item, and a full barrier's wait names the phase by
// its parity alone, so it may only run once the slot's previous phase has
// completed: were the other item's k-tile in this slot still loading, the
// parity would read the phase before it as this one (the wait passes on
// stale data, the early release lets the producer arrive twice on one phase
// of the full barrier).  So the first wait comes after the other warp group
// has seen all of its item loaded.
__device__ __forceinline__ void consumer_compute(const ws_smem &sm, const ws_item &it, int p0, int i,
                                                 const ws_cons &w, float (&acc)[NACC])
{
    if constexpr (PINGPONG) {
        if (i > 0)
            named_bar_sync(BAR_LOADED + (1 - w.c), 256);
    }
    // Slot 0's descriptors, made once; a slot or a k-step advances them
    // (desc_advance) instead of re-encoding every descriptor.
    // (W K-major, LBO unused; E N-major, its E_COLS-column atoms a box, BK * E_ROW bytes, apart)
    const unsigned long long da0 = swz_desc<W_ROW>(w.base + w.a_off, 16);
    const unsigned long long db0 = swz_desc<E_ROW>(w.base + W_BYTES + w.e_off, BK * E_ROW);
    for (int k = 0; k < it.kt; ++k) {
        const int p = p0 + k, s = ring_wait(sm.ctl->ring, p);
        const unsigned so = (unsigned)s * (STAGE_BYTES >> 4);
        fence_acc(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // k-step kk: 16 K-columns, 32 bytes along W's W_ROW-byte rows; the
            // fifth starts the second box (BK=128)
            const unsigned long long da =
                desc_advance(da0, so + ((kk * 32 % W_ROW + kk * 32 / W_ROW * W_BOX_BYTES) >> 4));
            const unsigned long long db = desc_advance(db0, so + ((kk * 16 * E_ROW) >> 4));
            // TRANS=1: A is E read M-major, B is W K-major; URES, UFOLD: the first overwrites
            consumer_mma(acc, TRANS ? db : da, TRANS ? da : db, URES || UFOLD ? (k | kk) != 0 : 1);
        }
        wgmma_commit();
        wgmma_wait<MMA_LAG>();
        fence_acc(acc);
        if (k >= MMA_LAG && w.lane == 0)
            ring_release<CLUSTER>(sm.ctl->ring, p - MMA_LAG);
    }
    if constexpr (PINGPONG)
        named_bar_arrive(BAR_LOADED + w.c, 256); // every k-tile of this item is loaded: the other's may wait
    wgmma_wait<0>();
    fence_acc(acc);
    if (w.lane == 0)
#pragma unroll
        for (int j = MMA_LAG; j >= 1; --j)
            if (j == 1 || it.kt >= j) // an item has a k-tile at least
                ring_release<CLUSTER>(sm.ctl->ring, p0 + it.kt - j);
}

// A CTA tile's results are in the workspace: once every thread that wrote
// part of it is past its stores, its flag carries this run's seq.
__device__ __forceinline__ void publish_flag(int *flag, const ws_cons &w)
{
    if constexpr (PINGPONG)
        wg_sync(1 + w.c);
    else
        asm volatile("barrier.sync %0, %1;\n" ::"n"(BAR_TILE), "n"(CONSUMERS * 128) : "memory");
    if (w.tid == 0 && (PINGPONG || w.c == 0)) {
        __threadfence();
        cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);
        f.store(w.seq, cuda::memory_order_release);
    }
}

// Consumer: a user tile's result, user_res (fragment order), to the
// workspace, then (one launch for both) its readiness flag.
template <int PHASE>
__device__ __forceinline__ void consumer_stash_user(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                                    const ws_cons &w, unsigned rank, const ws_frag &f)
{
    uint4 *res = ws_ures(a, g, it.bb, it.tm, it.tn, rank, PINGPONG ? 0 : w.c, w.tid);
#pragma unroll
    for (int v = 0; v < UVECS; ++v)
        __stcg(res + v * 128, uvec_pack(f.acc, v));
    if constexpr (PHASE == PHASE_BOTH)
        publish_flag(ws_flag(a, g, it.bb, it.tm, it.tn, rank), w);
}

#if SPLITK > 1 || USPLIT > 1
// The CTA tile's barrier (every consumer warp group), and whether any of its
// threads passed p true (wg_any's barrier.red.or over all of them).
__device__ __forceinline__ bool tile_any(bool p)
{
    unsigned r;
    asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbarrier.red.or.pred q, %2, %3, p;\n\t"
                 "selp.u32 %0, 1, 0, q;\n}\n"
                 : "=r"(r)
                 : "r"((unsigned)p), "n"(BAR_TILE), "n"(CONSUMERS * 128)
                 : "memory");
    return r != 0;
}

// Consumer, a split tile's fix-up: one part's sums (fragment order, a
// thread's 16-byte vectors 128 apart) into the accumulators, added (ADD) or
// in place of them, NB loads in flight at a time.
template <int NB, bool ADD>
__device__ __forceinline__ void part_into(float (&acc)[NACC], const float4 *pq)
{
    constexpr int NV = NACC / 4;
#pragma unroll
    for (int v0 = 0; v0 < NV; v0 += NB) {
        float4 x[NB];
#pragma unroll
        for (int j = 0; j < NB; ++j)
            x[j] = v0 + j < NV ? __ldcg(pq + (v0 + j) * 128) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int j = 0; j < NB && v0 + j < NV; ++j) {
            float *d = acc + 4 * (v0 + j);
            if constexpr (ADD) {
                d[0] += x[j].x;
                d[1] += x[j].y;
                d[2] += x[j].z;
                d[3] += x[j].w;
            } else {
                d[0] = x[j].x;
                d[1] = x[j].y;
                d[2] = x[j].z;
                d[3] = x[j].w;
            }
        }
        asm volatile("" ::: "memory"); // one batch of loads at a time
    }
}

// Consumer, a split tile's part (a candidate tile of the tail, or a user
// tile with USPLIT > 1): its sum to its own slot (a candidate's part 0 with
// fp32 user_res, URES=0), then counted in; true for the last to arrive,
// which adds the others' sums (the tile is then whole), false for the rest.
// This warp group's 64-row slice has a counter of its own, so no other warp
// group is met.  A user tile (USER) of a cooperative CTA is the exception:
// its flag says the whole CTA tile is stored (publish_flag meets every
// consumer), so its warp groups must be last together: they meet, and one
// counter (slice 0's) decides for the CTA tile.  NB: the fix-up's 16-byte
// loads in flight (SB for a candidate tile; one for a user tile, whose
// fix-up comes once a user tile: four consumers' 104 registers spilled 24
// bytes at 4, 8 at 1).
template <int NB, bool USER>
__device__ __forceinline__ bool consumer_split(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                               const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f)
{
    const int slice = PINGPONG ? 0 : w.c;
    float4 *pp = ws_part(a, g, it.sidx, 0, rank, slice, w.tid);
#pragma unroll
    for (int v = 0; v < NACC / 4; ++v)
        __stcg(pp + it.part * PSTRIDE + v * 128,
               make_float4(f.acc[4 * v], f.acc[4 * v + 1], f.acc[4 * v + 2], f.acc[4 * v + 3]));
    constexpr bool WHOLE = USER && !PINGPONG; // the CTA tile's warp groups decide together
    if constexpr (WHOLE)
        asm volatile("barrier.sync %0, %1;\n" ::"n"(BAR_TILE), "n"(CONSUMERS * 128) : "memory");
    else
        wg_sync(1 + w.c); // every thread's sums stored before thread 0 counts the part in
    bool last = false;
    if (w.tid == 0 && (!WHOLE || w.c == 0)) {
        __threadfence();
        last = split_arrive(ws_split_ctr(a, g, it.sidx, rank, WHOLE ? 0 : slice), (unsigned)w.seq);
    }
    if (!(WHOLE ? tile_any(last) : wg_any(1 + w.c, last)))
        return false;
    // The last part: the sum in part order, ((p0 + p1) + p2) + ..., the same
    // bits whichever part came last.  Part 0 or 1 starts from its own share
    // (p0 + p1 == p1 + p0); a later part reloads p0 over its accumulators
    // (its own share is read back in turn).  Then one part at a time added in
    // place, NB 16-byte loads in flight (SB: the registers ptxas leaves beside
    // BW=256's accumulators and URES=1's prefetch).
    const int self = it.part;
#if URES
    // storage-dtype user_res, added by the epilogue: part 0 prefetched it;
    // another part loads it now (its flag was set: part 0 waited for it
    // before counting itself in, and this part acquired that), in flight
    // under the sums' loads.  (Folding it into part 0's sum made ptxas spill
    // at BW=256.)  A user tile's parts add no user_res.
    if (SPLITK > 1 && self != 0) {
        // (its address recomputed: held across the main loop it cost a spill)
        const uint4 *ur = ws_ures(a, g, __ldg(a.cand_to_user + it.bb), it.tm, it.tn, rank, slice, w.tid);
        const bool rows = ws_rows_in(tile, w);
#pragma unroll
        for (int v = 0; v < UVECS; ++v)
            f.pre[v] = rows ? __ldcg(ur + v * 128) : make_uint4(0, 0, 0, 0);
    }
#endif
    if (self >= 2)
        part_into<NB, false>(f.acc, pp);
#pragma unroll 1
    for (int q = 1; q < NPARTS; ++q) // part 1 adds p0 where part 0 or a later one adds p1
        part_into<NB, true>(f.acc, pp + (q == 1 && self == 1 ? 0 : q) * PSTRIDE);
    return true;
}
#endif

// Consumer: a candidate tile's epilogue: rounded, staged in 64x64 swizzled
// boxes, stored (the tile's own columns only) by TMA (EPI=1, up to SBUF - 1
// stores in flight) or 16-byte stores (EPI=0, and TRANS=1's last box when
// BW % 64: its 64 rows would write the next tile's).  boxes counts the
// boxes staged so far (it cycles through the warp group's SBUF buffers).
__device__ __forceinline__ void consumer_finish(const kevo_lce_args &a, const ws_smem &sm, const ws_item &it,
                                                const ws_cons &w, const ws_tile &tile, const ws_frag &f, int &boxes)
{
    const int M = tile.M, N = tile.N, row0 = tile.row0;
    const int fr = w.warp * 16 + (w.lane >> 2), fc = 2 * (w.lane & 3); // fragment row / column
    // accumulators e and e + 1 of a tile (+ user_res with URES=1)
    auto result = [&](int e) -> float2 {
        float2 r = make_float2(f.acc[e], f.acc[e + 1]);
#if URES
        const float2 ur = unpack2(reinterpret_cast<const elem2_t *>(&f.pre[e / UVEC])[(e % UVEC) / 2]);
        r.x += ur.x;
        r.y += ur.y;
#endif
        return r;
    };
    constexpr bool PART_BOX = EPI == 1 && BW % 64 != 0;
#if STACK
    // the warp group's first row of the stack: column sc of candidate sb
    const int NP = stack_pitch(a), sr = it.bb * TILE_R + row0, sb = sr / NP, sc = sr - sb * NP;
#endif
#pragma unroll
    for (int box = 0; box < OUT_BOXES; ++box) {
        unsigned char *buf = sm.staging + (w.c * SBUF + (boxes & (SBUF - 1))) * BOX_BYTES;
#if STACK
        // nor where the warp group's 64 columns of N cross from one candidate
        // to the next (a box stores to one candidate; storing it twice, once
        // at a negative column, raised an illegal instruction on the H200).
        // Inside one candidate's pitch, TMA drops the columns past N.
        const bool by_tma = EPI == 1 && !(PART_BOX && box == OUT_BOXES - 1) && sc + 64 <= NP;
#else
        const bool by_tma = EPI == 1 && !(PART_BOX && box == OUT_BOXES - 1);
#endif
        if constexpr (EPI == 1) {
            // the TMA store that last read this buffer (SBUF boxes ago) is
            // done reading it; the SBUF - 1 after it may still be.  A box
            // stored without TMA commits no group, so before one every
            // store is waited for: the count holds again after it
            if (w.tid == 0 && by_tma)
                tma_store_wait_read<SBUF - 1>();
            else if (w.tid == 0)
                tma_store_wait_read<0>();
            wg_sync(1 + w.c);
        }
        if constexpr (TRANS) {
            // The box holds rows 64 * box.. of M by this warp group's 64
            // columns of N.  stmatrix .trans writes each 8x8 block of the
            // fragment (rows: 8 columns of N, 16 * warp + 8h..; columns:
            // 8 rows of M, 8j..) as 8 rows of M of 8 consecutive columns
            // of N: 16-byte unit 2 * warp + h of rows 8 * (j % 8) + q.
            // Lane 8t + q gives row q of block t (j = 8 * box + jj + t / 2,
            // h = t % 2); register t holds accumulators 4j + 2h and + 1.
            const unsigned sbuf = static_cast<unsigned>(__cvta_generic_to_shared(buf));
            const int t = w.lane >> 3, q = w.lane & 7;
            auto pair = [&](int e) -> unsigned { // accumulators e, e + 1, rounded (+ user_res)
                union { elem2_t h; unsigned u; } x;
                const float2 r = result(e);
                x.h = pack2(r.x, r.y);
                return x.u;
            };
#pragma unroll
            for (int jj = 0; jj < 8; jj += 2) {
                const int j = 8 * box + jj;
                if (j >= BW / 8)
                    continue; // past the tile: the last box of BW % 64
                const int r = 8 * (jj + (t >> 1)) + q, unit = 2 * w.warp + (t & 1);
                const unsigned addr = sbuf + r * 128 + ((unit ^ q) << 4);
                if (j + 1 < BW / 8)
                    stmatrix_x4_trans(addr, pair(4 * j), pair(4 * j + 2), pair(4 * j + 4), pair(4 * j + 6));
                else
                    stmatrix_x2_trans(addr, pair(4 * j), pair(4 * j + 2));
            }
        } else {
#pragma unroll
            for (int q = 0; q < 16; ++q) {
                const int r = fr + 8 * (q & 1), unit = q >> 1; // 16-byte unit within the 128-byte row
                const int j = 8 * box + unit;
                if (j >= BW / 8)
                    continue; // past the tile: the last box of BW % 64
                const int e = 4 * j + 2 * (q & 1); // first of the two accumulators
                const float2 y = result(e);
                const elem2_t v = pack2(y.x, y.y);
                *reinterpret_cast<elem2_t *>(buf + r * 128 + ((unit ^ (r & 7)) << 4) + 2 * fc) = v;
            }
        }
        if (by_tma) {
            tma_store_fence();
            wg_sync(1 + w.c);
#if STACK
            if (w.tid == 0) // the box of candidate sb (one past B: nothing stored)
                tma_store_3d(&a.tm_out, sc, it.m0 + 64 * box, sb, buf);
#else
            if (w.tid == 0) // {column of N, row of M, b} of the box
                tma_store_3d(&a.tm_out, TRANS ? row0 : it.n0 + 64 * box, TRANS ? it.m0 + 64 * box : row0, it.bb, buf);
#endif
        } else {
            wg_sync(1 + w.c);
            elem_t *out = static_cast<elem_t *>(a.out) + (STACK ? 0 : (size_t)it.bb * M * N);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                // row r of M, 16-byte unit of 8 columns of N
                const int idx = w.tid + 128 * q, r = idx / 8, unit = idx % 8;
                const int gm = TRANS ? it.m0 + 64 * box + r : row0 + r;
                int gn = TRANS ? row0 + 8 * unit : it.n0 + 64 * box + 8 * unit;
                const bool in_tile = 64 * box + (TRANS ? r : 8 * unit) < BW;
#if STACK
                // row gn of the tile: a column of candidate k's N in the stack
                const int k = (it.bb * TILE_R + gn) / NP;
                gn += it.bb * TILE_R - k * NP;
                if (gm < M && k < a.B && gn < a.N && in_tile)
                    *reinterpret_cast<uint4 *>(out + ((size_t)k * M + gm) * a.N + gn) =
                        *reinterpret_cast<const uint4 *>(buf + r * 128 + ((unit ^ (r & 7)) << 4));
#else
                if (gm < M && gn < N && in_tile)
                    *reinterpret_cast<uint4 *>(out + (size_t)gm * N + gn) =
                        *reinterpret_cast<const uint4 *>(buf + r * 128 + ((unit ^ (r & 7)) << 4));
#endif
            }
        }
        ++boxes;
    }
}

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
