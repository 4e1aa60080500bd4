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
//     BK-deep k-tiles (64 or 128) into a STAGES-deep ring: TMA loads of W
//     (K-major, 128-byte swizzle: BK/64 boxes of 64 K-columns) and E
//     (N-major, BK rows, boxes one swizzle atom wide: 64 columns with 128-byte
//     swizzle, or 32 columns with 64-byte swizzle when BN is an odd multiple
//     of 32; with CLUSTER=2 each CTA loads half of the boxes and multicasts
//     them to both; TRANS=1 shares W's rows instead, see below; CLB=1 pairs
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
//     16-byte stores (EPI=0, the only choice when BN % 64 == 32: a 64-column
//     store box would write the next tile's columns; TRANS=1's last box of
//     BW % 64 rows goes by 16-byte stores under EPI=1 too).
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
//
// The kernel (ws_kernel, at the end) reads as its steps: ws_setup; the
// producer's producer_schedule and producer_load; the consumers'
// consumer_start, consumer_compute, then consumer_stash_user (a user tile) or
// consumer_split and consumer_finish (a candidate tile); ws_teardown.  The
// mechanism lives in shared headers: sm90/ring.cuh (the stage ring:
// acquire/commit, wait/release) and sm90/tma.cuh (box loads, multicast,
// stores).
//
// Workspace: user_res by CTA tile in fragment order (fp32, or the storage
// dtype with URES=1) | 128 bytes: claim counters | flags
// [U][tiles_n][tiles_m][CLUSTER] int | SPLITK > 1: the split tiles' arrival
// counters and partial sums (ws_split_ctr, ws_part).  Counters and flags
// carry the run's launch_seq, so stale values from earlier runs (or poison)
// never count.
// Needs the padded-K layout (TMA rows of 16-byte multiples); K, M and N
// tails come from TMA's zero fill (a box wholly past the tensor, such as
// BK=128's second W box when K % 128 <= 64, reads as zeros and still counts
// its bytes), its clipped stores and the predicated 16-byte stores.

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef BN
#define BN 256
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef BK
#define BK 64 // K per stage: one or two W boxes of 64 (a 128-byte swizzle row each)
#endif
#ifndef EPI
#define EPI 1
#endif
#ifndef RASTER
#define RASTER 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef FUSE
#define FUSE 1
#endif
#ifndef URES
#define URES 0 // user_res kept as fp32 (0) or rounded to the storage dtype (1), as the decomposed form does
#endif
#ifndef TRANS
#define TRANS 0 // the tile computes out (0) or out's transpose (1: N along the WGMMA's M side)
#endif
#ifndef TRIM
#define TRIM 0 // TRANS=1: the tile spans BN - TRIM rows of M (any multiple of 8)
#endif
#ifndef SBUF
#define SBUF 2 // staged output boxes per consumer warp group (EPI=1: SBUF - 1 TMA stores in flight)
#endif
#ifndef SPLITK
#define SPLITK 1 // the last partial wave's candidate tiles split along Kc into SPLITK parts (1: none)
#endif
#ifndef CLB
#define CLB 0 // CLUSTER=2 pairs two tiles of one candidate (0) or two candidates at one tile position (1)
#endif

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

// The accumulator tile of a CTA: TILE_R rows (64 per consumer warp group, the
// WGMMA's M side) by BW columns (its N).  Rows are M and columns N, or with
// TRANS=1 rows are N and columns M.
constexpr int TILE_R = PINGPONG ? 64 : 64 * CONSUMERS;   // accumulator rows of a CTA's tile
constexpr int BW = BN - TRIM;                            // accumulator columns: the wgmma's N
constexpr int TILE_M = TRANS ? BW : TILE_R;              // rows of M in a CTA's tile
constexpr int TILE_N = TRANS ? TILE_R : BN;              // columns of N in it
// A cluster pairs tiles that share an operand, which its CTAs load in halves
// and multicast.  CLB=0: two tiles of one candidate that share the larger
// operand: TRANS=0 two M tiles (E's BN columns), TRANS=1 two N tiles (W's BW
// rows).  CLB=1: the same tile of two candidates (or users), which share W:
// every candidate multiplies the same W, so this halves W's reads whatever
// M and N are (with N small, W is most of a tile's bytes).
constexpr bool W_MCAST = CLUSTER > 1 && (TRANS || CLB);   // the cluster shares W's rows
constexpr bool E_MCAST = CLUSTER > 1 && !W_MCAST;         // the cluster shares E's boxes
constexpr int CL_B = CLB ? CLUSTER : 1;                   // candidates (users) of a cluster's item
constexpr int CL_T = CLUSTER / CL_B;                      // CTA tiles of one candidate in it
constexpr int CL_M = TRANS || CLB ? TILE_M : TILE_M * CLUSTER; // rows of M in a cluster's tile
constexpr int CL_N = TRANS && !CLB ? TILE_N * CLUSTER : TILE_N; // columns of N in it
constexpr int NT = 128 * (CONSUMERS + 1);
// E boxes are one swizzle atom wide: the canonical N-major WGMMA layouts need
// whole atoms along N, so BN % 64 == 32 takes 32-column atoms (64-byte rows).
constexpr int E_COLS = TILE_N % 64 ? 32 : 64;            // columns of an E box
constexpr int E_ROW = 2 * E_COLS;                        // its row in bytes = its swizzle (64 or 128)
constexpr int E_BOXES = TILE_N / E_COLS;                 // E boxes per stage
// W is K-major with 128-byte swizzle: a box holds 64 K-columns, so BK=128
// takes two boxes per stage (K at k * BK and k * BK + 64).
constexpr int W_BOXES = BK / 64;                         // W boxes per stage
constexpr int W_BOX_BYTES = TILE_M * 128;                // one of them: TILE_M rows of 64 K-columns
constexpr int W_LOAD_ROWS = W_MCAST ? TILE_M / CLUSTER : TILE_M; // rows of it a CTA loads (multicast)
constexpr int W_BYTES = TILE_M * BK * 2;                 // W per stage
constexpr int E_BYTES = TILE_N * BK * 2;                 // E per stage: E_BOXES boxes of [BK][E_COLS]
constexpr int STAGE_BYTES = W_BYTES + E_BYTES;
constexpr int NACC = BW / 2;                             // fp32 accumulators per consumer thread
constexpr int BOX_BYTES = 64 * 128;                      // one staged 64x64 output box
// output boxes per warp group: its 64 rows by BW columns in boxes of 64
// columns of N, or (TRANS=1) its 64 columns of N by BW rows in boxes of 64
// rows of M; the last one partly used when BW % 64
constexpr int OUT_BOXES = (BW + 63) / 64;
constexpr int STAGING_BYTES = CONSUMERS * SBUF * BOX_BYTES; // SBUF boxes per consumer warp group
constexpr int QN = 4;                                    // work queue depth
constexpr int ITEM_WARPS = 4 * (PINGPONG ? 1 : CONSUMERS); // consumer warps reading one item
// Registers: the CTA starts with NT threads of the most __launch_bounds__(NT, 1)
// allows (a multiple of 8); setmaxnreg.inc takes from what the producer's
// setmaxnreg.dec 40 released, so the consumers share the rest: 240, 232, 152, 104.
constexpr int LAUNCH_REGS = (65536 / NT < 255 ? 65536 / NT : 255) / 8 * 8;
constexpr int SHARE_REGS = (LAUNCH_REGS * (CONSUMERS + 1) - 40) / CONSUMERS / 8 * 8;
constexpr int CONSUMER_REGS = SHARE_REGS < 240 ? SHARE_REGS : 240;
// Named barriers (0 is __syncthreads): 1 + c is consumer warp group c's own,
// BAR_TILE joins them all (a user tile's flag).  BAR_TILE was 3 before there
// could be a third consumer; it stays there while 3 is free.  Ping-pong:
// BAR_LOADED + c, "warp group c has seen all of its item's k-tiles loaded"
// (its 128 threads arrive, the other warp group's 128 wait).
constexpr int BAR_TILE = CONSUMERS <= 2 ? 3 : CONSUMERS + 1;
constexpr int BAR_LOADED = BAR_TILE + 1;

static_assert(BN % 32 == 0 && BN >= 64 && BN <= 256, "BN must be 64..256 in steps of 32");
static_assert(TRANS == 0 || TRANS == 1, "TRANS is 0 or 1");
static_assert(TRIM % 8 == 0 && TRIM >= 0 && TRIM < 32 && (TRANS || TRIM == 0),
              "TRIM (0..24 in steps of 8) narrows TRANS=1's M side; TRANS=0's columns are E's, in whole atoms");
static_assert(CONSUMERS >= 1 && CONSUMERS <= 4, "one to four consumer warp groups");
static_assert(TILE_M <= 256, "the W box's rows (TILE_M) are at most 256");
static_assert(!PINGPONG || CONSUMERS == 2, "ping-pong needs two consumer warp groups");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES must be 2..8");
static_assert(BK == 64 || BK == 128, "BK must be 64 or 128");
static_assert(SBUF == 2 || (SBUF == 4 && EPI == 1),
              "SBUF is 2, or 4 with EPI=1 (16-byte stores are done before the next box is staged)");
static_assert(CLUSTER == 1 || (CLUSTER == 2 && (W_MCAST ? TILE_M % 16 == 0 : E_BOXES % 2 == 0)),
              "CLUSTER=2 splits the E boxes in halves (TRANS=1 or CLB=1: W's box by rows, whole 8-row swizzle atoms)");
static_assert(CLB == 0 || (CLB == 1 && CLUSTER == 2 && SPLITK == 1),
              "CLB=1 pairs two candidates in a cluster of two (and splits no tile)");
// (TRANS=1 with EPI=1 and BW % 64 != 0 writes its last box by 16-byte stores:
// a 64-row TMA box would write the next tile's rows)
static_assert(EPI == 0 || TRANS || BN % 64 == 0, "EPI=1 stores 64-column boxes: BN must be a multiple of 64");
static_assert(STAGE_BYTES % 1024 == 0 && W_BYTES % 1024 == 0 && (BK * E_ROW) % 512 == 0,
              "stages must keep the swizzle atoms aligned (1024 bytes for W, 512 or 1024 for E)");
static_assert(NACC % 4 == 0, "user_res moves 16-byte vectors of 4 fp32 (of 8 values with URES=1, the last one half "
                             "used when BW % 16 == 8)");
static_assert(NACC + (URES ? (NACC + 7) / 8 * 4 : 0) + 40 <= CONSUMER_REGS,
              "accumulators, the URES=1 prefetch and ~40 for addresses must fit a consumer's registers");
static_assert(NACC + 32 <= LAUNCH_REGS,
              "ptxas compiles a wgmma (its NACC accumulators and ~30 more) within the launch bound, not the "
              "setmaxnreg budget (C7602)");
static_assert(SPLITK >= 1 && SPLITK <= 4, "SPLITK must be 1..4");
static_assert(BAR_TILE <= 15 && (!PINGPONG || BAR_LOADED + 1 <= 15), "16 named barriers");

enum { PHASE_USER = 0, PHASE_CAND = 1, PHASE_BOTH = 2 };

// WGMMA descriptor of 16 k-rows of a stage's E from `addr` (N-major): atoms
// of 8 rows x E_ROW bytes, the E_COLS-column atoms a TMA box (BK * E_ROW
// bytes) apart, groups of 8 rows 8 * E_ROW bytes apart.
__device__ __forceinline__ unsigned long long e_desc(unsigned addr)
{
    if constexpr (E_ROW == 128)
        return sw128_desc(addr, BK * 128, 1024);
    else
        return sw64_desc(addr, BK * 64, 512);
}

// user_res is stored in the accumulator fragment order of the tile that
// wrote it (a user tile has the candidate tiles' geometry): each consumer
// thread's NACC values are 16-byte vectors, vector v of thread t at
// v * 128 + t in its warp group's block, so reading it back is a few fully
// coalesced 16-byte loads per thread: into the accumulators (fp32,
// uvec_unpack) or into registers of their own (URES=1, added in the epilogue).
#if URES
constexpr int UVEC = 8; // values per 16-byte vector: the storage dtype
__device__ __forceinline__ uint4 uvec_pack(const float (&acc)[NACC], int v)
{
    union { uint4 v; elem2_t h[4]; } u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int e = UVEC * v + 2 * i; // past NACC in the last vector when BW % 16 == 8: zeros
        u.h[i] = e < NACC ? pack2(acc[e < NACC ? e : 0], acc[e < NACC ? e + 1 : 1]) : pack2(0.0f, 0.0f);
    }
    return u.v;
}
#else
constexpr int UVEC = 4; // fp32 (through float4: a uint4 round trip makes ptxas serialize the wgmmas, C7514)
__device__ __forceinline__ uint4 uvec_pack(const float (&acc)[NACC], int v)
{
    union { uint4 u; float4 f; } x;
    x.f = make_float4(acc[4 * v], acc[4 * v + 1], acc[4 * v + 2], acc[4 * v + 3]);
    return x.u;
}
__device__ __forceinline__ void uvec_unpack(const uint4 *p, bool load, float (&acc)[NACC], int v)
{
    const float4 x = load ? __ldcg(reinterpret_cast<const float4 *>(p)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    acc[4 * v] = x.x;
    acc[4 * v + 1] = x.y;
    acc[4 * v + 2] = x.z;
    acc[4 * v + 3] = x.w;
}
#endif
constexpr int UVECS = (NACC + UVEC - 1) / UVEC; // vectors per consumer thread
constexpr int UBLOCK = 128 * UVECS;    // vectors per warp group's 64 x BN block

// Shared memory, from a 1024-byte aligned base (the plan asks 1 KiB extra).
struct alignas(8) ws_ctl {
    ring_bars<STAGES> ring;                         // the stages' full and empty barriers
    unsigned long long qfull[QN], qempty[QN];       // work queue
    int q_item[QN], q_pos[QN];                      // item id (-1: no more), its first ring position
};
constexpr int SMEM_CTL = STAGES * STAGE_BYTES + STAGING_BYTES;

// One work item decoded for this CTA.
struct ws_item {
    bool user;
    int bb;     // user index (user tiles) or candidate index
    int tm, tn; // cluster tile coordinates
    int m0, n0; // this CTA's first row and column
    int k0, kt; // first k-tile and k-tiles
    int part;   // -1: a whole tile; a split tile's part 0..SPLITK-1 (k-tiles in that order; part 0
                // starts from user_res; whichever part arrives last stores the tile)
    int sidx;   // split tiles: index in [0, tail)
};

// Work items: U * per user tiles (FUSE=1 or the first launch), then the
// candidate tiles: the first `whole` of them one item each, the last `tail`
// (SPLITK > 1: the remainder of the whole waves, see ws_geometry) as SPLITK
// items each, parts 0..SPLITK-1 of a tile one after the other.  A part waits
// for nothing but its user tile's flag (part 0, as a whole tile does), so
// the argument above (no wait on a CTA that is not resident) still holds.
struct ws_geom {
    int tiles_m, tiles_n, per, user_items, lo, count;
    int whole, tail; // candidate tiles computed whole, and split
};

template <int PHASE>
__device__ __forceinline__ ws_geom ws_geometry(const kevo_lce_args &a)
{
    ws_geom g;
    g.tiles_m = (a.M + CL_M - 1) / CL_M;
    g.tiles_n = (a.N + CL_N - 1) / CL_N;
    g.per = g.tiles_m * g.tiles_n;
    g.user_items = (a.U + CL_B - 1) / CL_B * g.per;
    const int cand = (a.B + CL_B - 1) / CL_B * g.per, clusters = (int)(gridDim.x / CLUSTER);
    // Split the candidate tiles past the last whole wave of this launch's
    // items: n = (user tiles, FUSE=1) + candidate tiles, r = n mod clusters
    // (n itself when fewer), the last t = min(r, cand) candidate tiles.  The
    // user tiles count as items, short as they are: a producer claims its
    // next item as soon as it starts the current one, so the first two
    // items of every cluster are dealt at the start, in claim order, and a
    // short user tile ahead pushes a whole tile into the second round.  The
    // last round then holds r - t user tiles and t * SPLITK parts of 1/SPLITK
    // tile each: split when that is at most clusters * (SPLITK - 1) items,
    // fewer than SPLITK rounds of parts (a shorter last wave).  The space
    // file's let `tail` is the same expression with the device's clusters;
    // the two agree: the plan's grid is min(device clusters, items)
    // clusters, and where the items are fewer, both see r = n and the same
    // verdict (with a split the grid is n + t * (SPLITK - 1) <= the
    // condition's bound; without, r = n mod n = 0 here).
    const int n = (PHASE == PHASE_BOTH ? g.user_items : 0) + cand;
    const int rem = n % clusters, t = rem < cand ? rem : cand;
    g.tail = PHASE != PHASE_USER && SPLITK > 1 && (a.Kc + BK - 1) / BK >= SPLITK && t > 0 &&
                     rem - t + t * SPLITK <= clusters * (SPLITK - 1)
                 ? t
                 : 0;
    g.whole = cand - g.tail;
    const int cand_items = cand + g.tail * (SPLITK - 1);
    g.lo = PHASE == PHASE_CAND ? g.user_items : 0;
    g.count = PHASE == PHASE_USER ? g.user_items : PHASE == PHASE_CAND ? cand_items : g.user_items + cand_items;
    return g;
}

__device__ __forceinline__ ws_item ws_decode(const kevo_lce_args &a, const ws_geom &g, int item, unsigned rank)
{
    ws_item it;
    it.user = item < g.user_items;
    int rest = it.user ? item : item - g.user_items;
    it.part = -1;
    it.sidx = 0;
    if (SPLITK > 1 && !it.user && rest >= g.whole) {
        const int j = rest - g.whole;
        it.sidx = j / SPLITK;
        it.part = j % SPLITK;
        rest = g.whole + it.sidx;
    }
    it.bb = rest / g.per * CL_B + (CLB ? (int)rank : 0); // CLB=1: may be past U or B (ws_live)
    const int t = rest % g.per;
#if RASTER == 0
    it.tm = t % g.tiles_m;
    it.tn = t / g.tiles_m;
#else
    it.tn = t % g.tiles_n;
    it.tm = t / g.tiles_n;
#endif
    it.m0 = TRANS || CLB ? it.tm * TILE_M : (it.tm * CLUSTER + (int)rank) * TILE_M;
    it.n0 = TRANS && !CLB ? (it.tn * CLUSTER + (int)rank) * TILE_N : it.tn * TILE_N;
    const int kt = ((it.user ? a.Ku : a.Kc) + BK - 1) / BK;
    // a split tile's parts: balanced ranges of its k-tiles, none empty (the
    // tail is 0 unless kt >= SPLITK)
    it.k0 = it.part < 0 ? 0 : it.part * kt / SPLITK;
    it.kt = it.part < 0 ? kt : (it.part + 1) * kt / SPLITK - it.k0;
    return it;
}

// CLB=1: the last pair's second CTA has no user (candidate) when U (B) is
// odd.  It computes the last one's tile again (ws_loaded: its E, its user's
// user_res) and stores nothing.  (Not kept in ws_item: held across the main
// loop it cost a spill.)
__device__ __forceinline__ bool ws_live(const kevo_lce_args &a, const ws_item &it)
{
    return !CLB || it.bb < (it.user ? a.U : a.B);
}
__device__ __forceinline__ int ws_loaded(const kevo_lce_args &a, const ws_item &it)
{
    return ws_live(a, it) ? it.bb : (it.user ? a.U : a.B) - 1;
}

// Workspace regions (see the header comment).
// A CTA tile of user u: its flag, and its blocks of user_res (CLB=1: the
// rank names the user, not a tile).
__device__ __forceinline__ size_t ws_cta_tile(const ws_geom &g, int u, int tm, int tn, unsigned rank)
{
    return (((size_t)u * g.tiles_n + tn) * g.tiles_m + tm) * CL_T + (CLB ? 0u : rank);
}
__device__ __forceinline__ size_t ws_sched_offset(const kevo_lce_args &a, const ws_geom &g)
{
    const size_t res = ws_cta_tile(g, a.U, 0, 0, 0) * (TILE_R / 64) * UBLOCK * 16;
    return (res + 255) & ~(size_t)255;
}
__device__ __forceinline__ int *ws_flag(const kevo_lce_args &a, const ws_geom &g, int u, int tm, int tn,
                                        unsigned rank)
{
    int *flags = reinterpret_cast<int *>(static_cast<char *>(a.workspace) + ws_sched_offset(a, g) + 128);
    return flags + ws_cta_tile(g, u, tm, tn, rank);
}
// Split tiles: after the user tiles' flags (256-byte aligned) one arrival
// counter per CTA tile's 64-row slice, [tail][CLUSTER][TILE_R / 64]
// unsigned long long; then (256-byte aligned) the partial sums, fp32 in
// fragment order as user_res is, [tail][SPLITK][CLUSTER][TILE_R / 64]
// blocks of PBLOCK.  (The space file's lets ctr_off and part_off.)
constexpr int PBLOCK = 128 * (NACC / 4); // float4 vectors per warp group's 64 x BW block
constexpr int PSTRIDE = CLUSTER * (TILE_R / 64) * PBLOCK; // from one part's block to the next part's
// The last part's fix-up: SB 16-byte loads in flight (32 registers beside the
// accumulators and URES=1's prefetch, as many as ptxas leaves at BW=256)
constexpr int SB = 8;
__device__ __forceinline__ size_t ws_split_offset(const kevo_lce_args &a, const ws_geom &g)
{
    const size_t flags_end = ws_sched_offset(a, g) + 128 + 4 * ws_cta_tile(g, a.U, 0, 0, 0);
    return (flags_end + 255) & ~(size_t)255;
}
__device__ __forceinline__ unsigned long long *ws_split_ctr(const kevo_lce_args &a, const ws_geom &g, int sidx,
                                                            unsigned rank, int slice)
{
    unsigned long long *ctr =
        reinterpret_cast<unsigned long long *>(static_cast<char *>(a.workspace) + ws_split_offset(a, g));
    return ctr + ((size_t)sidx * CLUSTER + rank) * (TILE_R / 64) + slice;
}
__device__ __forceinline__ float4 *ws_part(const kevo_lce_args &a, const ws_geom &g, int sidx, int part,
                                           unsigned rank, int slice, int tid)
{
    const size_t ctr_end = ws_split_offset(a, g) + 8 * (size_t)g.tail * CLUSTER * (TILE_R / 64);
    float4 *base = reinterpret_cast<float4 *>(static_cast<char *>(a.workspace) + ((ctr_end + 255) & ~(size_t)255));
    return base + ((((size_t)sidx * SPLITK + part) * CLUSTER + rank) * (TILE_R / 64) + slice) * PBLOCK + tid;
}

// This thread's vectors of the user_res block of the 64-row slice `slice`.
__device__ __forceinline__ uint4 *ws_ures(const kevo_lce_args &a, const ws_geom &g, int u, int tm, int tn,
                                          unsigned rank, int slice, int tid)
{
    return static_cast<uint4 *>(a.workspace) + (ws_cta_tile(g, u, tm, tn, rank) * (TILE_R / 64) + slice) * UBLOCK + tid;
}

// Wait until a workspace flag carries this run's launch_seq (acquire: what
// its writer stored before setting it is visible after).
__device__ __forceinline__ void wait_flag(int *flag, int seq)
{
    cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);
    while (f.load(cuda::memory_order_acquire) != seq)
        __nanosleep(64);
}

// Count a split tile's part in: the counter holds (launch_seq << 32) |
// parts arrived, a stale tag (earlier run, poison) counting as none.  Called
// after the part's sums are stored and fenced (release); true for the last
// of the SPLITK parts, whose acquire makes the others' sums visible.
__device__ __forceinline__ bool split_arrive(unsigned long long *ctr, unsigned seq)
{
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> c(*ctr);
    unsigned long long cur = c.load(cuda::memory_order_relaxed), next;
    do {
        const unsigned n = (unsigned)(cur >> 32) == seq ? (unsigned)cur + 1u : 1u;
        next = ((unsigned long long)seq << 32) | n;
    } while (!c.compare_exchange_weak(cur, next, cuda::memory_order_acq_rel, cuda::memory_order_relaxed));
    return (unsigned)next == (unsigned)SPLITK;
}

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

// Claim counter: (launch_seq << 32) | next ticket.  The first claimant of a
// run replaces a stale value (earlier run, poison) by (seq << 32).
__device__ __forceinline__ void sched_start(unsigned long long *ctr, unsigned seq)
{
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> c(*ctr);
    unsigned long long cur = c.load(cuda::memory_order_relaxed);
    while ((unsigned)(cur >> 32) != seq) {
        if (c.compare_exchange_strong(cur, (unsigned long long)seq << 32, cuda::memory_order_relaxed))
            break;
    }
}
__device__ __forceinline__ int sched_claim(unsigned long long *ctr)
{
    return (int)(unsigned)atomicAdd(ctr, 1ull);
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
// published, the ring position the next item starts at, entries pushed.
struct ws_sched {
    unsigned long long *ctr;
    int next, pos, pushed;
};

// Producer, leader CTA: publish the claimed item; claim the following one
// now so the atomic's latency hides behind this item's loads.  After the
// last item, the end (-1) for each consumer that reads its own entries.
__device__ __forceinline__ void producer_schedule(const kevo_lce_args &a, const ws_geom &g, ws_ctl *ctl,
                                                  ws_sched &q)
{
    const int item = q.next < g.count ? g.lo + q.next : -1;
    queue_push(ctl, q.pushed++, item, q.pos);
    if (item >= 0) {
        q.pos += ws_decode(a, g, item, 0).kt;
        q.next = sched_claim(q.ctr);
    } else if (PINGPONG) {
        queue_push(ctl, q.pushed++, -1, q.pos); // the other consumer's end
    }
}

// Producer: W's boxes of one k-tile (K from kx) into stage w, BK / 64 boxes
// of 64 K-columns.  TRANS=1 or CLB=1 in a cluster: both CTAs multiply the
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
            tma_load_2d_multicast(w + h * W_BOX_BYTES + r0 * 128, map, kx + 64 * h, it.m0 + r0, bar,
                                  (uint16_t)((1u << CLUSTER) - 1));
        } else {
            tma_load_2d(w + h * W_BOX_BYTES, map, kx + 64 * h, it.m0, bar);
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

// Producer: an item's k-tiles into the ring from position p0 (a user tile
// reads the user tensors, a candidate tile the candidate ones).
__device__ __forceinline__ void producer_load(const kevo_lce_args &a, const ws_smem &sm, const ws_item &it, int p0,
                                              unsigned rank)
{
    const void *tm_w = it.user ? (const void *)&a.tm_w_user : (const void *)&a.tm_w_cand;
    const void *tm_e = it.user ? (const void *)&a.tm_e_user : (const void *)&a.tm_e_cand;
    for (int k = 0; k < it.kt; ++k) {
        const int s = ring_acquire(sm.ctl->ring, p0 + k);
        uint64_t *bar = ring_commit(sm.ctl->ring, s, STAGE_BYTES);
        unsigned char *stage = sm.stages + s * STAGE_BYTES;
        producer_load_w(stage, tm_w, it, (it.k0 + k) * BK, bar, rank);
        producer_load_e(stage + W_BYTES, tm_e, it, ws_loaded(a, it), (it.k0 + k) * BK, bar, rank);
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
               0, 0, 0};
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
    }
}

// A consumer warp group (c: 0..CONSUMERS-1) as one of its threads sees it.
struct ws_cons {
    int c, tid, warp, lane;
    int seq;               // the run's launch_seq (flags, split counters)
    unsigned base;         // the stages' shared-memory address
    unsigned a_off, e_off; // this warp group's 64 accumulator rows in a stage: 64 rows of
                           // each W box, or (TRANS=1) the E box of its 64 columns of N
};

// A consumer thread's registers for one tile: the accumulators and (URES=1)
// its user_res in the storage dtype, fragment order, added in the epilogue.
struct ws_frag {
    float acc[NACC];
#if URES
    uint4 pre[UVECS];
#endif
};

// An item's tile as this warp group sees it: the problem's M and N (read at
// the item's start, as the one-function kernel did: reread by the epilogue
// they cost a spill at URES=1, SPLITK=2, TRANS=1, BN=224, TRIM=24) and its
// first accumulator row, a row of M or (TRANS=1) a column of N.
struct ws_tile {
    int M, N, row0;
};
// CLB=1, a pair's second CTA past B: M = 0, so its epilogue's 16-byte
// stores are all predicated off (its TMA stores, at b = B, write nothing).
__device__ __forceinline__ ws_tile ws_tile_of(const kevo_lce_args &a, const ws_item &it, const ws_cons &w)
{
    if constexpr (CLB)
        return ws_tile{ws_live(a, it) ? a.M : 0, a.N, (TRANS ? it.n0 : it.m0) + (PINGPONG ? 0 : w.c * 64)};
    else
        return ws_tile{a.M, a.N, (TRANS ? it.n0 : it.m0) + (PINGPONG ? 0 : w.c * 64)};
}

// Consumer: start the accumulators.  0 for a user tile; for a candidate tile
// user_res[cand_to_user[b]] (once its flag is set), so the broadcast-add
// costs no epilogue loads: all the loads are in flight at once, under the
// other warp group's MMAs (ping-pong) or the producer's first loads.  One
// predicated path defines them (no branch): ptxas serializes the wgmmas when
// accumulators merge from two paths (C7515).  A split tile's later parts
// start from zero: part 0 adds user_res.  URES=1 loads user_res into
// registers of its own, added in the epilogue, so the loads fly under the
// whole main loop.
template <int PHASE>
__device__ __forceinline__ void consumer_start(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                               const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f,
                                               int &held)
{
    const bool first = !it.user && it.part <= 0;
    const int u = it.user ? 0 : __ldg(a.cand_to_user + (CLB ? ws_loaded(a, it) : it.bb));
#if URES
    // URES=1 keeps this thread's user_res in f.pre until the epilogue: when
    // the previous item was a candidate tile of the same user and tile
    // position (with few users, most of a persistent CTA's items: its claims
    // are about a grid apart), it is still there, ready (its flag was seen).
    // Uniform across the warp group: its threads had the same items.  (Not
    // at BW=256: f.pre held through the epilogue spills there.)
    constexpr bool KEEP = SPLITK == 1 && BW < 256;
    const int key = (u * g.tiles_m + it.tm) * g.tiles_n + it.tn;
    if constexpr (KEEP) {
        if (first && key == held)
            return;
    }
#endif
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
#if URES
#pragma unroll
    for (int v = 0; v < UVECS; ++v)
        f.pre[v] = add ? __ldcg(res + v * 128) : make_uint4(0, 0, 0, 0);
    if constexpr (KEEP)
        held = add ? key : -1;
#else
#pragma unroll
    for (int v = 0; v < UVECS; ++v)
        uvec_unpack(res + v * 128, add, f.acc, v);
#endif
}

// Consumer: the main loop over an item's k-tiles from ring position p0
// (its i-th queue entry): BK / 16 wgmmas per k-tile, one group in flight,
// the previous slot released.  Ping-pong: this item's ring positions follow
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
    const unsigned long long da0 = sw128_desc(w.base + w.a_off, 16, 1024);
    const unsigned long long db0 = e_desc(w.base + W_BYTES + w.e_off);
    for (int k = 0; k < it.kt; ++k) {
        const int p = p0 + k, s = ring_wait(sm.ctl->ring, p);
        const unsigned so = (unsigned)s * (STAGE_BYTES >> 4);
        fence_acc(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // k-step kk: 16 K-columns, 32 bytes along W's 128-byte rows; the
            // fifth starts the second box (BK=128)
            const unsigned long long da = desc_advance(da0, so + ((kk * 32 + (kk / 4) * (W_BOX_BYTES - 128)) >> 4));
            const unsigned long long db = desc_advance(db0, so + ((kk * 16 * E_ROW) >> 4));
            // TRANS=1: A is E read M-major, B is W K-major; URES: the first overwrites
            wgmma_ss<BW, TRANS>(acc, TRANS ? db : da, TRANS ? da : db, URES ? (k | kk) != 0 : 1);
        }
        wgmma_commit();
        wgmma_wait<1>();
        fence_acc(acc);
        if (k > 0 && w.lane == 0)
            ring_release<CLUSTER>(sm.ctl->ring, p - 1);
    }
    if constexpr (PINGPONG)
        named_bar_arrive(BAR_LOADED + w.c, 256); // every k-tile of this item is loaded: the other's may wait
    wgmma_wait<0>();
    fence_acc(acc);
    if (w.lane == 0)
        ring_release<CLUSTER>(sm.ctl->ring, p0 + it.kt - 1);
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

#if SPLITK > 1
// Consumer, a split tile's part: its sum to its own slot (part 0's with fp32
// user_res, URES=0), then counted in; true for the last to arrive, which
// adds the others' sums (the tile is then whole), false for the rest.  This
// warp group's 64-row slice has a counter of its own, so no other warp group
// is met.
__device__ __forceinline__ bool consumer_split(const kevo_lce_args &a, const ws_geom &g, const ws_item &it,
                                               const ws_cons &w, const ws_tile &tile, unsigned rank, ws_frag &f)
{
    const int slice = PINGPONG ? 0 : w.c;
    float4 *pp = ws_part(a, g, it.sidx, 0, rank, slice, w.tid);
#pragma unroll
    for (int v = 0; v < NACC / 4; ++v)
        __stcg(pp + it.part * PSTRIDE + v * 128,
               make_float4(f.acc[4 * v], f.acc[4 * v + 1], f.acc[4 * v + 2], f.acc[4 * v + 3]));
    wg_sync(1 + w.c); // every thread's sums stored before thread 0 counts the part in
    bool last = false;
    if (w.tid == 0) {
        __threadfence();
        last = split_arrive(ws_split_ctr(a, g, it.sidx, rank, slice), (unsigned)w.seq);
    }
    if (!wg_any(1 + w.c, last))
        return false;
    // The last part: the sum in part order, ((p0 + p1) + p2) + ..., the same
    // bits whichever part came last.  Part 0 or 1 starts from its own share
    // (p0 + p1 == p1 + p0); a later part reloads p0 over its accumulators
    // (its own share is read back in turn).  Then one part at a time added in
    // place, SB 16-byte loads in flight (the registers ptxas leaves beside
    // BW=256's accumulators and URES=1's prefetch).
    const int self = it.part;
#if URES
    // storage-dtype user_res, added by the epilogue: part 0 prefetched it;
    // another part loads it now (its flag was set: part 0 waited for it
    // before counting itself in, and this part acquired that), in flight
    // under the sums' loads.  (Folding it into part 0's sum made ptxas spill
    // at BW=256.)
    if (self != 0) {
        // (its address recomputed: held across the main loop it cost a spill)
        const uint4 *ur = ws_ures(a, g, __ldg(a.cand_to_user + it.bb), it.tm, it.tn, rank, slice, w.tid);
        const bool rows = tile.row0 < (TRANS ? tile.N : tile.M);
#pragma unroll
        for (int v = 0; v < UVECS; ++v)
            f.pre[v] = rows ? __ldcg(ur + v * 128) : make_uint4(0, 0, 0, 0);
    }
#endif
    constexpr int NV = NACC / 4;
    if (self >= 2) {
#pragma unroll
        for (int v0 = 0; v0 < NV; v0 += SB) {
            float4 x[SB];
#pragma unroll
            for (int j = 0; j < SB; ++j)
                x[j] = v0 + j < NV ? __ldcg(pp + (v0 + j) * 128) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int j = 0; j < SB && v0 + j < NV; ++j) {
                f.acc[4 * (v0 + j)] = x[j].x;
                f.acc[4 * (v0 + j) + 1] = x[j].y;
                f.acc[4 * (v0 + j) + 2] = x[j].z;
                f.acc[4 * (v0 + j) + 3] = x[j].w;
            }
            asm volatile("" ::: "memory"); // one batch of loads at a time
        }
    }
#pragma unroll 1
    for (int q = 1; q < SPLITK; ++q) {
        // part 1 adds p0 where part 0 or a later one adds p1
        const float4 *pq = pp + (q == 1 && self == 1 ? 0 : q) * PSTRIDE;
#pragma unroll
        for (int v0 = 0; v0 < NV; v0 += SB) {
            float4 x[SB];
#pragma unroll
            for (int j = 0; j < SB; ++j)
                x[j] = v0 + j < NV ? __ldcg(pq + (v0 + j) * 128) : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int j = 0; j < SB && v0 + j < NV; ++j) {
                f.acc[4 * (v0 + j)] += x[j].x;
                f.acc[4 * (v0 + j) + 1] += x[j].y;
                f.acc[4 * (v0 + j) + 2] += x[j].z;
                f.acc[4 * (v0 + j) + 3] += x[j].w;
            }
            asm volatile("" ::: "memory");
        }
    }
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
    constexpr bool PART_BOX = EPI == 1 && TRANS && BW % 64 != 0;
#pragma unroll
    for (int box = 0; box < OUT_BOXES; ++box) {
        unsigned char *buf = sm.staging + (w.c * SBUF + (boxes & (SBUF - 1))) * BOX_BYTES;
        const bool by_tma = EPI == 1 && !(PART_BOX && box == OUT_BOXES - 1);
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
                if (BN % 64 != 0 && j >= BN / 8)
                    continue; // past the tile: the last box of BN % 64 == 32
                const int e = 4 * j + 2 * (q & 1); // first of the two accumulators
                const float2 y = result(e);
                const elem2_t v = pack2(y.x, y.y);
                *reinterpret_cast<elem2_t *>(buf + r * 128 + ((unit ^ (r & 7)) << 4) + 2 * fc) = v;
            }
        }
        if (by_tma) {
            tma_store_fence();
            wg_sync(1 + w.c);
            if (w.tid == 0) // {column of N, row of M, b} of the box
                tma_store_3d(&a.tm_out, TRANS ? row0 : it.n0 + 64 * box, TRANS ? it.m0 + 64 * box : row0, it.bb, buf);
        } else {
            wg_sync(1 + w.c);
            elem_t *out = static_cast<elem_t *>(a.out) + (size_t)it.bb * M * N;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                // row r of M, 16-byte unit of 8 columns of N
                const int idx = w.tid + 128 * q, r = idx / 8, unit = idx % 8;
                const int gm = TRANS ? it.m0 + 64 * box + r : row0 + r;
                const int gn = TRANS ? row0 + 8 * unit : it.n0 + 64 * box + 8 * unit;
                const bool in_tile = TRANS ? BW % 64 == 0 || 64 * box + r < BW
                                           : BN % 64 == 0 || 64 * box + 8 * unit < BN;
                if (gm < M && gn < N && in_tile)
                    *reinterpret_cast<uint4 *>(out + (size_t)gm * N + gn) =
                        *reinterpret_cast<const uint4 *>(buf + r * 128 + ((unit ^ (r & 7)) << 4));
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
    const ws_cons w{c, tid, tid / 32, tid % 32, a.launch_seq, base, PINGPONG || TRANS ? 0u : (unsigned)c * 64 * 128,
                    PINGPONG || !TRANS ? 0u : (unsigned)c * BK * E_ROW};
    ws_frag f;
#if URES
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
        consumer_start<PHASE>(a, g, it, w, tile, rank, f, held);
        consumer_compute(sm, it, e.p0, i, w, f.acc);
        if (it.user) {
            if (!CLB || ws_live(a, it))
                consumer_stash_user<PHASE>(a, g, it, w, rank, f);
            continue;
        }

#if SPLITK > 1
        if (it.part >= 0 && !consumer_split(a, g, it, w, tile, rank, f))
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
