// lce_ws/producer.cuh — lce_ws's producer warp group (one thread works):
// the leader CTA's scheduler (ws_sched: claim the next item from the
// workspace's counter, publish it on the queue), the TMA loads of an
// item's k-tiles into the stage ring (W's and E's boxes, multicast where a
// cluster's CTAs share them; STACK=1's stacked E boxes; UFOLD=1's user
// k-tiles ahead of the candidate's own), and the warp group's loop
// (producer).  Inlined ahead of lce_ws.cu after lce_ws/queue.cuh (space
// "include").
#ifndef KEVO_LCE_WS_PRODUCER_CUH
#define KEVO_LCE_WS_PRODUCER_CUH
#ifndef KEVO_LCE_WS_QUEUE_CUH
#include "lce_ws/queue.cuh"
#endif

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

#endif // KEVO_LCE_WS_PRODUCER_CUH
