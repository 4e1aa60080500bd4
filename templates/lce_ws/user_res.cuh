// lce_ws/user_res.cuh — the broadcast-add's user_res, consumer side: a
// tile's start (consumer_start: a candidate tile's accumulators, or
// URES=1's registers of their own, from its user tile once that tile's
// readiness flag is set), URES=1's late wait for a user tile not ready at
// the start (consumer_late_user), and a user tile's result stored to the
// workspace and flagged (consumer_stash_user, publish_flag).  Inlined ahead
// of lce_ws.cu after lce_ws/consumer.cuh (space "include").
#ifndef KEVO_LCE_WS_USER_RES_CUH
#define KEVO_LCE_WS_USER_RES_CUH
#ifndef KEVO_LCE_WS_CONSUMER_CUH
#include "lce_ws/consumer.cuh"
#endif

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

#endif // KEVO_LCE_WS_USER_RES_CUH
