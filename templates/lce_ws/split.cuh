// lce_ws/split.cuh — the split tiles' fix-up (SPLITK > 1: the remainder's
// candidate tiles split along Kc; USPLIT > 1: user tiles split along Ku):
// each part stores its fp32 sum to its own slot and counts itself in on
// its tile's counter, and the last to arrive adds the others' sums in part
// order (consumer_split, part_into; tile_any: the CTA tile's vote).  Empty
// without a split.  Inlined ahead of lce_ws.cu after lce_ws/user_res.cuh
// (space "include").
#ifndef KEVO_LCE_WS_SPLIT_CUH
#define KEVO_LCE_WS_SPLIT_CUH
#ifndef KEVO_LCE_WS_USER_RES_CUH
#include "lce_ws/user_res.cuh"
#endif

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

#endif // KEVO_LCE_WS_SPLIT_CUH
