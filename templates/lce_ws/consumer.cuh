// lce_ws/consumer.cuh — a consumer warp group as its steps see it: who it
// is (ws_cons: warp group, thread, the stages' address and its rows in
// them), its registers for one tile (ws_frag: the accumulators, URES=1's
// user_res), an item's tile (ws_tile_of), and the main loop
// (consumer_compute: the wgmmas over an item's k-tiles from the ring, each
// slot released once its group is done).  Inlined ahead of lce_ws.cu after
// lce_ws/producer.cuh (space "include").
#ifndef KEVO_LCE_WS_CONSUMER_CUH
#define KEVO_LCE_WS_CONSUMER_CUH
#ifndef KEVO_LCE_WS_QUEUE_CUH
#include "lce_ws/queue.cuh"
#endif

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

#endif // KEVO_LCE_WS_CONSUMER_CUH
