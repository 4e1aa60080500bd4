// lce_mem.cu — ikbo_lce where bytes, not FLOPs, bound the time (short K).
//
//     out[b] = W_cand @ E_cand[b] + W_user @ E_user[u],  u = cand_to_user[b]
//
// With K short the least the op can move is E_cand read once and out written
// once, 2*B*N*(Kc + M) bytes; W, E_user and the user results are small and
// can come from L2 or shared memory.  At B=4096, M=96, N=64, Kc=48 that is
// 76 MB, 25 us at 3 TB/s, and the candidate GEMM needs a fifth of that on
// the tensor cores.  This family is built to stream at that floor:
//
//   schedule: a persistent grid of tiles * per CTAs, per = min(B, SMs * OCC
//     / tiles).  CTA c owns output tile c % tiles (BM x BN, m-tiles fastest)
//     and candidates b = c / tiles + j * per, j = 0, 1, ...  The CTAs of one
//     candidate are adjacent and move through their candidates in step, so
//     the m-tiles of E_cand[b]'s column slice run together: one reads it
//     from DRAM, the others from L2.
//   W: the CTA's BM rows of [W_user | W_cand] (USER=0) or of W_cand
//     (USER=1) go to shared memory once, with 16-byte cp.async.
//   load ring: STAGES slots, each a whole candidate's E slice over the whole
//     K and BN columns: [E_user[u] ; E_cand[b]] (USER=0) or E_cand[b]
//     (USER=1).  The copies of candidates j+1 .. j+STAGES-1 are in flight
//     while candidate j is multiplied: with OCC CTAs an SM keeps
//     OCC*(STAGES-1) candidates' bytes on the way, which is what keeps DRAM
//     busy.  cp.async group g is item g (the W rows join item 0's group).
//   mma: ldmatrix (W) and ldmatrix.trans (E) fragments, mma.sync m16n8k16
//     with fp32 accumulators over the whole K; WARPS_M x WARPS_N warps.
//   epilogue: round to the storage dtype, stage the tile in shared memory,
//     then 16-byte rows: + user_res[u] (USER=1), streaming stores
//     (st.global.cs: out is never read back), clipped to M and N.
//   USER=0: the broadcast by concatenated K inside the candidate loop:
//     E_user[u]'s slice is re-read per candidate from L2 (candidates of a
//     user are adjacent in a sorted map); no workspace, one launch.
//   USER=1: a first launch (lce_mem_user, one CTA per user tile, k-steps of
//     32 through a two-slot ring, so any Ku) writes user_res[u] = W_user @
//     E_user[u] to the workspace in the storage dtype, rounded as PyTorch's
//     decomposed form is; the candidate epilogue adds it.  For long Ku with
//     short Kc.
//
// Shared memory rows are padded by 16 bytes to an odd number of 16-byte
// chunks, so the 8 rows one ldmatrix phase reads fall in 8 distinct bank
// groups.  The K padding rows of every ring slot are zeroed once and no copy
// writes them; E columns past N are never copied (they feed only output
// columns past N, which are not stored).  Needs the padded-K layout (W rows
// padded to 8 elements with zeros: pad_k) and N % 8 == 0.

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef BM
#define BM 64 // output tile rows
#endif
#ifndef BN
#define BN 64 // output tile columns
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef STAGES
#define STAGES 3 // ring slots: candidates in flight per CTA + 1
#endif
#ifndef OCC
#define OCC 2 // CTAs per SM the grid and the register budget are sized for
#endif
#ifndef USER
#define USER 1 // 0: user GEMM per candidate over the concatenated K; 1: user_res from a first launch
#endif

#ifndef KEVO_IKBO_LCE_ABI_H
#include "../kernels/ikbo_lce_abi.h" // kevo prepends it
#endif
#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh" // kevo inlines it ahead of this file (space "include")
#endif
#ifndef KEVO_MMA_CUH
#include "mma.cuh" // ldmatrix, mma.sync (space "include")
#endif

constexpr int NT = 32 * WARPS_M * WARPS_N; // threads per CTA
constexpr int WTM = BM / WARPS_M;          // warp tile rows
constexpr int WTN = BN / WARPS_N;          // warp tile columns
constexpr int MI = WTM / 16;               // m16 fragments per warp
constexpr int NI = WTN / 8;                // n8 fragments per warp
constexpr int CPR = BN / 8;                // 16-byte chunks in a tile row
constexpr int E_LD = BN + 8;               // ring and staging row stride: CPR + 1 chunks (odd)

static_assert(BM % (16 * WARPS_M) == 0, "warp tile rows must be a multiple of 16");
static_assert(BN % (16 * WARPS_N) == 0, "warp tile columns must be a multiple of 16");
static_assert(BN % 64 == 0, "BN must be a multiple of 64 (odd chunk strides, conflict-free staging)");
static_assert(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
static_assert(OCC >= 1 && NT * OCC <= 2048, "threads x OCC over the SM's 2048");
static_assert(MI * NI * 4 >= 8 && MI * NI * 4 <= 64, "accumulators per thread outside 8..64");
static_assert(USER == 0 || USER == 1, "USER is 0 or 1");
static_assert((BM * CPR) % NT == 0, "the staged tile splits evenly over the threads");

// ---- PTX without a CUDA wrapper: cp.async, streaming store (ldmatrix and mma.sync: mma.cuh) ----
// 16 bytes global -> shared, bypassing L1; ok = false writes 16 zeros (src is not read).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Wait until at most N of this thread's groups are pending.
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void st_stream16(void *p, uint4 v)
{
    asm volatile("st.global.cs.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
// A plan whose smem expression disagrees with the layout below faults
// (a failed candidate) instead of writing past its shared memory.
__device__ __forceinline__ void require_smem(unsigned bytes)
{
    unsigned have;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(have));
    if (bytes > have)
        __trap();
}

__host__ __device__ constexpr int round8(int x)
{
    return (x + 7) & ~7;
}
__host__ __device__ constexpr int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

// Eight storage-dtype values plus eight more, in fp32, rounded once.
__device__ __forceinline__ uint4 add8(uint4 x, uint4 y)
{
    union { uint4 u; elem2_t h[4]; } p, q;
    p.u = x;
    q.u = y;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 s = unpack2(p.h[i]), t = unpack2(q.h[i]);
        p.h[i] = pack2(s.x + t.x, s.y + t.y);
    }
    return p.u;
}

// ---- the candidate launch's shared memory ----
// [BM][w_ld] W rows | STAGES x [kt][E_LD] ring | [BM][E_LD] staged tile.
// K is concatenated: rows [0, ku) of a slot hold E_user[u] (Ku rows, then
// zeros), rows [ku, kt) E_cand[b] (Kc rows, then zeros); W's columns match.
struct mem_layout {
    int ku;        // user rows: Ku rounded up to 8 (USER=0), 0 (USER=1)
    int kt;        // rows of a slot, columns of W: ku + Kc rounded up to 8, then to 16 (the mma's k)
    int w_ld;      // W row stride: kt + 8, an odd number of chunks
    elem_t *w;     // [BM][w_ld]
    elem_t *ring;  // [STAGES][kt][E_LD]
    elem_t *stage; // [BM][E_LD]
    unsigned bytes;
};

__device__ __forceinline__ mem_layout layout_of(const kevo_lce_args &a, unsigned char *smem)
{
    mem_layout L;
    L.ku = USER ? 0 : round8(a.Ku);
    L.kt = (L.ku + round8(a.Kc) + 15) & ~15;
    L.w_ld = L.kt + 8;
    L.w = reinterpret_cast<elem_t *>(smem);
    L.ring = L.w + BM * L.w_ld;
    L.stage = L.ring + STAGES * L.kt * E_LD;
    L.bytes = (unsigned)(BM * L.w_ld + STAGES * L.kt * E_LD + BM * E_LD) * 2;
    return L;
}

// ---- the schedule: this CTA's tile and candidates ----
struct mem_sched {
    int m0, n0;  // the output tile
    int b0, per; // candidates b0, b0 + per, ...
    int count;   // how many of them are below B
};

__device__ __forceinline__ mem_sched sched_of(const kevo_lce_args &a)
{
    const int tiles_m = cdiv(a.M, BM), tiles = tiles_m * cdiv(a.N, BN);
    const int tile = blockIdx.x % tiles;
    mem_sched S;
    S.m0 = (tile % tiles_m) * BM;
    S.n0 = (tile / tiles_m) * BN;
    S.b0 = blockIdx.x / tiles;
    S.per = max(1, (int)gridDim.x / tiles);
    S.count = S.b0 < a.B ? (a.B - 1 - S.b0) / S.per + 1 : 0;
    return S;
}

// ---- load ring ----

// Zero the rows of every slot that no copy writes: [Ku, ku) and [ku + Kc, kt).
__device__ __forceinline__ void zero_pad_rows(const mem_layout &L, const kevo_lce_args &a, int tid)
{
    const int ku_rows = USER ? 0 : a.Ku;
    const int pu = L.ku - ku_rows, pc = L.kt - L.ku - a.Kc; // pad rows of each segment
    constexpr int CH = E_LD / 8;                             // chunks in a padded row
    const int per_slot = (pu + pc) * CH;
    for (int i = tid; i < STAGES * per_slot; i += NT) {
        const int s = i / per_slot, p = (i % per_slot) / CH, c = (i % CH) * 8;
        const int row = p < pu ? ku_rows + p : L.ku + a.Kc + (p - pu);
        *reinterpret_cast<uint4 *>(L.ring + (s * L.kt + row) * E_LD + c) = make_uint4(0, 0, 0, 0);
    }
}

// The CTA's W rows m0.. of [W_user | W_cand] (W_cand alone when USER=1);
// rows past M and columns past the segments are zero-filled.
__device__ __forceinline__ void load_w(const mem_layout &L, const kevo_lce_args &a, int m0, int tid)
{
    const elem_t *wu = static_cast<const elem_t *>(a.w_user);
    const elem_t *wc = static_cast<const elem_t *>(a.w_cand);
    const int cu = L.ku / 8, cc = round8(a.Kc) / 8, cpr = L.kt / 8;
    for (int i = tid; i < BM * cpr; i += NT) {
        const int r = i / cpr, c = i % cpr, gm = m0 + r;
        const elem_t *src = wc;
        bool ok = false;
        if (gm < a.M && c < cu) {
            src = wu + (size_t)gm * a.ldw_user + c * 8;
            ok = true;
        } else if (gm < a.M && c < cu + cc) {
            src = wc + (size_t)gm * a.ldw_cand + (c - cu) * 8;
            ok = true;
        }
        cp_async16(L.w + r * L.w_ld + c * 8, src, ok);
    }
}

// `rows` rows of a tile's BN columns (src: the tile's first column, row
// stride N) into a slot; chunks at or past column N (n_left) are not copied.
__device__ __forceinline__ void copy_rows(elem_t *dst, const elem_t *src, int rows, int N, int n_left, int tid)
{
#pragma unroll 2
    for (int i = tid; i < rows * CPR; i += NT) {
        const int r = i / CPR, c = (i % CPR) * 8;
        if (c < n_left)
            cp_async16(dst + r * E_LD + c, src + (size_t)r * N + c, true);
    }
}

// Candidate b's E slice (and E_user[u]'s when USER=0) into a slot.
__device__ __forceinline__ void load_item(const mem_layout &L, elem_t *slot, const kevo_lce_args &a, int b, int u,
                                          int n0, int tid)
{
    const int n_left = a.N - n0;
#if !USER
    const elem_t *eu = static_cast<const elem_t *>(a.e_user) + (size_t)u * a.Ku * a.N + n0;
    copy_rows(slot, eu, a.Ku, a.N, n_left, tid);
#endif
    const elem_t *ec = static_cast<const elem_t *>(a.e_cand) + (size_t)b * a.Kc * a.N + n0;
    copy_rows(slot + L.ku * E_LD, ec, a.Kc, a.N, n_left, tid);
}

// ---- mma ----

// acc += W[wm0.., k..k+16) . E[k..k+16, wn0..): one k-step of the warp tile.
// w: row stride w_ld; e: row stride E_LD.  ldmatrix x4 over W gives the A
// fragment (rows 0-7 / 8-15 at k 0-7, then at k 8-15); x4.trans over E gives
// the B fragments of two n8 tiles (k 0-7 / 8-15 of columns 0-7, then 8-15).
__device__ __forceinline__ void mma_k16(float (&acc)[MI][NI][4], const elem_t *w, int w_ld, const elem_t *e, int k,
                                        int wm0, int wn0, int lane)
{
    unsigned af[MI][4], bf[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
        ldsm_x4(w + (wm0 + mi * 16 + (lane & 15)) * w_ld + k + (lane >> 4) * 8, af[mi]);
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
        unsigned r[4];
        ldsm_x4_t(e + (k + (lane & 15)) * E_LD + wn0 + nj * 16 + (lane >> 4) * 8, r);
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
            mma16816(acc[mi][ni], af[mi], bf[ni]);
}

__device__ __forceinline__ void zero_acc(float (&acc)[MI][NI][4])
{
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                acc[mi][ni][r] = 0.0f;
}

// ---- epilogue ----

// Accumulators, rounded, into the staged tile [BM][E_LD] (c0,c1: row g,
// columns 2t, 2t+1; c2,c3: row g+8).  Rows of BN/2 words + 4: the 32 lanes
// of one store hit 32 distinct banks.
__device__ __forceinline__ void stage_acc(const float (&acc)[MI][NI][4], elem_t *stage, int wm0, int wn0, int lane)
{
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = wm0 + mi * 16 + (lane >> 2) + h * 8;
                const int c = wn0 + ni * 8 + (lane & 3) * 2;
                *reinterpret_cast<elem2_t *>(stage + r * E_LD + c) = pack2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
            }
}

// The staged tile into dst (an [M][N] matrix) at rows m0.., columns n0..,
// 16 bytes per thread and step, consecutive threads along a row; clipped to
// M and N (N % 8 == 0: a chunk is all in or all out).  ADD: + add[same
// place] (user_res).  STREAM: st.global.cs.
template <bool ADD, bool STREAM>
__device__ __forceinline__ void store_tile(const elem_t *stage, elem_t *dst, const elem_t *add, int M, int N, int m0,
                                           int n0, int tid)
{
#pragma unroll
    for (int j = 0; j < BM * CPR / NT; ++j) {
        const int i = tid + j * NT, r = i / CPR, c = (i % CPR) * 8;
        if (m0 + r >= M || n0 + c >= N)
            continue;
        uint4 v = *reinterpret_cast<const uint4 *>(stage + r * E_LD + c);
        const size_t off = (size_t)(m0 + r) * N + n0 + c;
        if (ADD)
            v = add8(v, __ldg(reinterpret_cast<const uint4 *>(add + off)));
        if (STREAM)
            st_stream16(dst + off, v);
        else
            *reinterpret_cast<uint4 *>(dst + off) = v;
    }
}

// ---- entries ----

// out[b] = [W_user | W_cand] @ [E_user[u] ; E_cand[b]]   (USER=0)
//        = W_cand @ E_cand[b] + user_res[u]             (USER=1)
// for this CTA's tile and candidates.
extern "C" __global__ void __launch_bounds__(NT, OCC) lce_mem_cand(const __grid_constant__ kevo_lce_args a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const mem_layout L = layout_of(a, smem_raw);
    require_smem(L.bytes);
    const mem_sched S = sched_of(a);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
    const int *map = a.cand_to_user;
    elem_t *out = static_cast<elem_t *>(a.out);
    const elem_t *user_res = static_cast<const elem_t *>(a.workspace);
    const int slot_elems = L.kt * E_LD;

    // load ring, prologue: W and items 0 .. STAGES-2, one group each (W joins item 0's)
    zero_pad_rows(L, a, tid);
    load_w(L, a, S.m0, tid);
    int u_load = (!USER && S.count > 0) ? __ldg(map + S.b0) : 0; // user of the next item to load
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < S.count) {
            load_item(L, L.ring + s * slot_elems, a, S.b0 + s * S.per, u_load, S.n0, tid);
            if (!USER && s + 1 < S.count)
                u_load = __ldg(map + S.b0 + (s + 1) * S.per);
        }
        cp_async_commit();
    }

    int slot = 0, load_slot = STAGES - 1; // ring slots of item j and of item j + STAGES - 1
    for (int j = 0; j < S.count; ++j) {
        const int b = S.b0 + j * S.per;
        const int u = USER ? __ldg(map + b) : 0; // for the epilogue; its latency hides under the MMAs

        // item j has landed (groups 0..j are complete) for every thread; every
        // thread is done with item j-1's slot and with the staged tile
        cp_async_wait<STAGES - 2>();
        __syncthreads();

        // load ring: item j + STAGES - 1 into the slot item j - 1 left
        const int jn = j + STAGES - 1;
        if (jn < S.count) {
            load_item(L, L.ring + load_slot * slot_elems, a, S.b0 + jn * S.per, u_load, S.n0, tid);
            if (!USER && jn + 1 < S.count)
                u_load = __ldg(map + S.b0 + (jn + 1) * S.per);
        }
        cp_async_commit(); // always: group g stays item g
        load_slot = load_slot + 1 == STAGES ? 0 : load_slot + 1;

        // mma over the whole (concatenated) K
        float acc[MI][NI][4];
        zero_acc(acc);
        const elem_t *e = L.ring + slot * slot_elems;
#pragma unroll 2
        for (int k = 0; k < L.kt; k += 16)
            mma_k16(acc, L.w, L.w_ld, e, k, wm0, wn0, lane);
        slot = slot + 1 == STAGES ? 0 : slot + 1;

        // epilogue: staged, then 16-byte streaming stores (+ user_res[u])
        stage_acc(acc, L.stage, wm0, wn0, lane);
        __syncthreads();
        store_tile<USER, true>(L.stage, out + (size_t)b * a.M * a.N, user_res + (size_t)u * a.M * a.N, a.M, a.N,
                               S.m0, S.n0, tid);
    }
    cp_async_wait<0>(); // only empty groups are left
}

#if USER
constexpr int UK = 32;                         // k rows per step of the user launch
constexpr int UW_LD = UK + 8;                  // its W row stride: 5 chunks (odd)
constexpr int U_SLOT = BM * UW_LD + UK * E_LD; // one slot of its ring (elements)

// One k-step of the user launch: W_user[m0.., k0..k0+32) and
// E_user[u][k0..k0+32, n0..n0+BN) into a slot; everything past M, Ku
// (padded W columns are zeros already) or N is zero-filled.
__device__ __forceinline__ void load_user_step(elem_t *slot, const kevo_lce_args &a, const elem_t *eu, int m0,
                                               int n0, int k0, int tid)
{
    const elem_t *wu = static_cast<const elem_t *>(a.w_user);
    const int kw = round8(a.Ku);
#pragma unroll
    for (int j = 0; j < cdiv(BM * UK / 8, NT); ++j) {
        const int i = tid + j * NT;
        if ((BM * UK / 8) % NT != 0 && i >= BM * UK / 8)
            break;
        const int r = i / (UK / 8), c = (i % (UK / 8)) * 8, gm = m0 + r, gk = k0 + c;
        const bool ok = gm < a.M && gk < kw;
        cp_async16(slot + r * UW_LD + c, ok ? wu + (size_t)gm * a.ldw_user + gk : wu, ok);
    }
    elem_t *es = slot + BM * UW_LD;
#pragma unroll
    for (int j = 0; j < cdiv(UK * CPR, NT); ++j) {
        const int i = tid + j * NT;
        if ((UK * CPR) % NT != 0 && i >= UK * CPR)
            break;
        const int r = i / CPR, c = (i % CPR) * 8, gk = k0 + r;
        const bool ok = gk < a.Ku && n0 + c < a.N;
        cp_async16(es + r * E_LD + c, ok ? eu + (size_t)gk * a.N + n0 + c : eu, ok);
    }
}

// user_res[u] = W_user @ E_user[u], rounded to the storage dtype, into the
// workspace [U][M][N]: one CTA per (user, tile), K in steps of 32 through a
// two-slot cp.async ring; the staged tile reuses the ring afterwards.
extern "C" __global__ void __launch_bounds__(NT) lce_mem_user(const __grid_constant__ kevo_lce_args a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    elem_t *smem = reinterpret_cast<elem_t *>(smem_raw);
    require_smem((unsigned)max(2 * U_SLOT, BM * E_LD) * 2);
    const int tiles_m = cdiv(a.M, BM), tiles = tiles_m * cdiv(a.N, BN);
    const int tile = blockIdx.x % tiles, u = blockIdx.x / tiles;
    const int m0 = (tile % tiles_m) * BM, n0 = (tile / tiles_m) * BN;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
    const elem_t *eu = static_cast<const elem_t *>(a.e_user) + (size_t)u * a.Ku * a.N;

    float acc[MI][NI][4];
    zero_acc(acc);
    const int steps = cdiv(a.Ku, UK);
    load_user_step(smem, a, eu, m0, n0, 0, tid);
    cp_async_commit();
    for (int s = 0; s < steps; ++s) {
        if (s + 1 < steps)
            load_user_step(smem + ((s + 1) & 1) * U_SLOT, a, eu, m0, n0, (s + 1) * UK, tid);
        cp_async_commit();
        cp_async_wait<1>(); // step s has landed
        __syncthreads();
        const elem_t *w = smem + (s & 1) * U_SLOT, *e = w + BM * UW_LD;
        mma_k16(acc, w, UW_LD, e, 0, wm0, wn0, lane);
        mma_k16(acc, w, UW_LD, e, 16, wm0, wn0, lane);
        __syncthreads(); // step s + 2 overwrites this slot; the staged tile overwrites both
    }
    cp_async_wait<0>();

    stage_acc(acc, smem, wm0, wn0, lane);
    __syncthreads();
    store_tile<false, false>(smem, static_cast<elem_t *>(a.workspace) + (size_t)u * a.M * a.N, nullptr, a.M, a.N,
                             m0, n0, tid);
}
#endif
