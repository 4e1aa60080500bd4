// lce_ws/work.cuh — lce_ws's work items and workspace: user_res's vector
// format, the items of a launch (ws_geometry) and of this CTA (ws_decode),
// the workspace regions (user_res, claim counters, readiness flags, split
// parts), and the device-scope counters on them.  Inlined ahead of
// lce_ws.cu after lce_ws/config.cuh (space "include").
#ifndef KEVO_LCE_WS_WORK_CUH
#define KEVO_LCE_WS_WORK_CUH
#ifndef KEVO_LCE_WS_CONFIG_CUH
#include "lce_ws/config.cuh"
#endif
#include <cuda/atomic>

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

// One work item decoded for this CTA.
struct ws_item {
    bool user;
    int bb;     // user index (user tiles) or candidate index
    int tm, tn; // cluster tile coordinates
    int m0, n0; // this CTA's first row and column
    int k0, kt; // first k-tile and k-tiles
    int part;   // -1: a whole tile; a split tile's part 0..NPARTS-1 (k-tiles in that order; a
                // candidate's part 0 starts from user_res; whichever part arrives last stores the tile)
    int sidx;   // split tiles: index in [0, g.splits) (the tail's, or the user tile's)
};

// STACK=1: the stack's pitch, rows from one candidate's (user's) first to the
// next's: N rounded up to the 32-column E box, so that no box straddles two
// candidates; rows N..NP-1 of each read as zeros (the E box past N) and are
// never stored.
__device__ __forceinline__ int stack_pitch(const kevo_lce_args &a)
{
    return (a.N + 31) & ~31;
}

// Work items: U * per user tiles (FUSE=1 or the first launch; none with
// UFOLD=1, whose candidate tiles fold their user's GEMM in), then the
// candidate tiles: the first `whole` of them one item each, the last `tail`
// (SPLITK > 1: the remainder of the whole waves, see ws_geometry) as SPLITK
// items each, parts 0..SPLITK-1 of a tile one after the other.  A part waits
// for nothing but its user tile's flag (part 0, as a whole tile does), so
// the argument above (no wait on a CTA that is not resident) still holds.
// USPLIT > 1: each user tile is USPLIT items, its parts along Ku one after
// the other; no part waits for anything, and the last to arrive stores the
// tile and sets its flag.
struct ws_geom {
    int tiles_m, tiles_n, per, user_items, lo, count;
    int whole, tail; // candidate tiles computed whole, and split
    int splits;      // tiles whose parts use the split region: the tail's, or (USPLIT > 1) the user tiles
    // Tiles along B of n candidates (users); STACK=1: of their n * NP rows.
    static __device__ __forceinline__ int slots(const kevo_lce_args &a, int n)
    {
        return STACK ? (n * stack_pitch(a) + TILE_R - 1) / TILE_R : n;
    }
};

template <int PHASE>
__device__ __forceinline__ ws_geom ws_geometry(const kevo_lce_args &a)
{
    ws_geom g;
    g.tiles_m = (a.M + CL_M - 1) / CL_M;
    g.tiles_n = STACK ? 1 : (a.N + CL_N - 1) / CL_N;
    g.per = g.tiles_m * g.tiles_n;
    g.user_items = UFOLD ? 0 : (ws_geom::slots(a, a.U) + CL_B - 1) / CL_B * g.per * USPLIT;
    const int cand = (ws_geom::slots(a, a.B) + CL_B - 1) / CL_B * g.per, clusters = (int)(gridDim.x / CLUSTER);
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
    g.splits = SPLITK > 1 ? g.tail : USPLIT > 1 ? g.user_items / USPLIT : 0;
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
    if (USPLIT > 1 && it.user) {
        it.sidx = rest / USPLIT;
        it.part = rest % USPLIT;
        rest = it.sidx;
    }
    // (unsigned: rest >= 0, and an unsigned division is a third shorter)
    const unsigned q = (unsigned)rest / (unsigned)g.per, t = (unsigned)rest - q * (unsigned)g.per;
    const unsigned minor_n = RASTER ? g.tiles_n : g.tiles_m, major = t / minor_n;
    it.bb = (int)q * CL_B + (CLB ? (int)rank : 0); // (STACK=1: a tile) CLB=1: may be past U or B (ws_live)
    it.tm = RASTER ? (int)major : (int)(t - major * minor_n);
    it.tn = RASTER ? (int)(t - major * minor_n) : (int)major;
    it.m0 = TRANS || CLB ? it.tm * TILE_M : (it.tm * CLUSTER + (int)rank) * TILE_M;
    it.n0 = TRANS && !CLB ? (it.tn * CLUSTER + (int)rank) * TILE_N : it.tn * TILE_N;
    // (UFOLD=1: a candidate tile's k-tiles are its user's Ku ones, then its Kc ones)
    const int kt = ((it.user ? a.Ku : a.Kc) + BK - 1) / BK + (UFOLD && !it.user ? (a.Ku + BK - 1) / BK : 0);
    // a split tile's parts: balanced ranges of its k-tiles, none empty (the
    // tail is 0 unless kt >= SPLITK; USPLIT's constraint asks Ku for 2 * USPLIT)
    const int np = USPLIT > 1 && it.user ? USPLIT : SPLITK;
    it.k0 = it.part < 0 ? 0 : it.part * kt / np;
    it.kt = it.part < 0 ? kt : (it.part + 1) * kt / np - it.k0;
    return it;
}

// CLB=1: the last pair's second CTA has no user (candidate) when U (B) is
// odd.  It computes the last one's tile again (ws_loaded: its E, its user's
// user_res) and stores nothing.  (Not kept in ws_item: held across the main
// loop it cost a spill.)  The consumers call these under CLB only (`CLB ?
// ws_loaded(a, it) : it.bb`, `if constexpr`): with CLB=0, where they fold
// to it.bb and true, calling them still moved ptxas's schedule.
__device__ __forceinline__ bool ws_live(const kevo_lce_args &a, const ws_item &it)
{
    return !CLB || it.bb < ws_geom::slots(a, it.user ? a.U : a.B);
}
__device__ __forceinline__ int ws_loaded(const kevo_lce_args &a, const ws_item &it)
{
    return ws_live(a, it) ? it.bb : (it.user ? a.U : a.B) - 1;
}

// Workspace regions (see the header comment).
// A CTA tile of user u: its flag, and its blocks of user_res (CLB=1: the
// rank names the user, not a tile; STACK=1: u is a tile of the stack).
__device__ __forceinline__ size_t ws_cta_tile(const ws_geom &g, int u, int tm, int tn, unsigned rank)
{
    return (((size_t)u * g.tiles_n + tn) * g.tiles_m + tm) * CL_T + (CLB ? 0u : rank);
}
__device__ __forceinline__ size_t ws_sched_offset(const kevo_lce_args &a, const ws_geom &g)
{
    const size_t res = UFOLD ? 0 : ws_cta_tile(g, ws_geom::slots(a, a.U), 0, 0, 0) * (TILE_R / 64) * UBLOCK * 16; // user_res
    return (res + 255) & ~(size_t)255;
}
__device__ __forceinline__ int *ws_flag(const kevo_lce_args &a, const ws_geom &g, int u, int tm, int tn,
                                        unsigned rank)
{
    int *flags = reinterpret_cast<int *>(static_cast<char *>(a.workspace) + ws_sched_offset(a, g) + 128);
    return flags + ws_cta_tile(g, u, tm, tn, rank);
}
// Split tiles: after the user tiles' flags (256-byte aligned) one arrival
// counter per CTA tile's 64-row slice, [splits][CLUSTER][TILE_R / 64]
// unsigned long long; then (256-byte aligned) the partial sums, fp32 in
// fragment order as user_res is, [splits][NPARTS][CLUSTER][TILE_R / 64]
// blocks of PBLOCK.  (The space file's lets ctr_off and part_off.)
constexpr int PBLOCK = 128 * (NACC / 4); // float4 vectors per warp group's 64 x BW block
constexpr int PSTRIDE = CLUSTER * (TILE_R / 64) * PBLOCK; // from one part's block to the next part's
// The last part's fix-up: SB 16-byte loads in flight (32 registers beside the
// accumulators and URES=1's prefetch, as many as ptxas leaves at BW=256)
constexpr int SB = 8;
// A split user tile's fix-up (USPLIT > 1): 4 loads in flight up to 128
// columns, one past them (BW=224 with CLUSTER=2 spilled at one already).
constexpr int UNB = BW <= 128 ? 4 : 1;
__device__ __forceinline__ size_t ws_split_offset(const kevo_lce_args &a, const ws_geom &g)
{
    const size_t flags_end = ws_sched_offset(a, g) + 128 + 4 * ws_cta_tile(g, ws_geom::slots(a, a.U), 0, 0, 0);
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
    const size_t ctr_end = ws_split_offset(a, g) + 8 * (size_t)g.splits * CLUSTER * (TILE_R / 64);
    float4 *base = reinterpret_cast<float4 *>(static_cast<char *>(a.workspace) + ((ctr_end + 255) & ~(size_t)255));
    return base + ((((size_t)sidx * NPARTS + part) * CLUSTER + rank) * (TILE_R / 64) + slice) * PBLOCK + tid;
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
// of the NPARTS parts, whose acquire makes the others' sums visible.
__device__ __forceinline__ bool split_arrive(unsigned long long *ctr, unsigned seq)
{
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> c(*ctr);
    unsigned long long cur = c.load(cuda::memory_order_relaxed), next;
    do {
        const unsigned n = (unsigned)(cur >> 32) == seq ? (unsigned)cur + 1u : 1u;
        next = ((unsigned long long)seq << 32) | n;
    } while (!c.compare_exchange_weak(cur, next, cuda::memory_order_acq_rel, cuda::memory_order_relaxed));
    return (unsigned)next == (unsigned)NPARTS;
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

#endif // KEVO_LCE_WS_WORK_CUH
