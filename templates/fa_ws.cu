// fa_ws.cu — ikbo_fa on Hopper (sm_90a): warp-specialized, persistent, in the
// manner of FlashAttention-3 (Shah et al., 2024), with the IKBO reuse: the Q
// blocks of several candidates of one user share every K/V tile loaded.
//
//   fa_ws_sched (one block): groups the candidates by user (a counting sort
//     of cand_to_user into the workspace) and counts the work items.  The
//     query rows of one user's candidates attend to the same keys, so they
//     are packed: candidate k of a user with n owns rows [k * SQ8, k * SQ8 +
//     Sq) of the user's n * SQ8 (SQ8 = Sq rounded up to 8, the TMA box), cut
//     into cdiv(n * SQ8, 64) Q blocks of 64 rows (the WGMMA's M), taken
//     CONSUMERS at a time per item.  At Sq=48 a user's 30 candidates fill 23
//     blocks where one block per candidate would take 30.
//   fa_ws_main (persistent, one CTA per SM): item t is (head t % H, item
//     t / H); CTA b takes t = b, b + grid, ...
//   producer (warp group 0, one thread, 24 registers; 40 with one
//     consumer): for each item, the Q block of each consumer warp group
//     (TMA, 128-byte swizzle, boxes of 8 rows by 64 columns, each from its
//     candidate's rows; after that warp group has read its last one), then
//     the user's K and V tiles of BN rows into a STAGES-deep ring.
//   consumers (warp groups 1..CONSUMERS, setmaxnreg 240 or 160): each owns
//     one Q block of the item (64 rows, the WGMMA's M).  Per K/V tile:
//     S = Q K^T (wgmma, both K-major), the online softmax in registers
//     (running max and sum in fp32, exp2 of scores scaled by scale*log2(e)),
//     P rounded to the storage dtype in the accumulator layout, which is the
//     A operand layout of O += P V (wgmma with A from registers, V N-major).
//     The P V of one tile runs while the next tile's S = Q K^T is issued, and
//     the consumers' softmaxes run under each other's MMAs.
//   epilogue: O / l, rounded, stored with 4-byte stores to each row's own
//     candidate; padding rows (past a candidate's Sq, or past the user's
//     last candidate) are computed on whatever the box held and not written:
//     rows of S = Q K^T and of the softmax never mix.
//
// Key columns past Skv (a K/V tile running into the next user's rows, or
// past the tensor, which TMA fills with zeros) are masked to -inf before the
// softmax.  A consumer warp group without a Q block in an item (the item
// holds fewer than CONSUMERS) still releases each K/V tile.
//
// Workspace (int32): cnt[U] | off[U + 1] (first index of user u's
// candidates in order) | ioff[U + 1] (first item of user u) | order[Bc] |
// (16-byte aligned) itab[items of one head]: each item's {u, first Q block
// << 2 | Q blocks, the user's candidates, the first of them in order}, so a
// warp group reads its item with one load.

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef HD
#define HD 128 // head dimension D (the space pins it to the shape's D)
#endif
#ifndef BN
#define BN 128 // K/V rows per tile
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef QBUF
#define QBUF 2 // Q buffers per consumer: 2 loads the next item's Q block under this item's tiles
#endif
#ifndef PP
#define PP 1 // consumers take turns issuing their MMAs (ping-pong): one's softmax runs under the other's MMAs
#endif
#ifndef OVL
#define OVL 0 // 1: a consumer's softmax of tile j runs under its own P V of tile j - 1 (FA3's intra-warp-group overlap)
#endif

#ifndef KEVO_WGMMA_ATTN_CUH
#include "wgmma_attn.cuh" // kevo inlines it ahead of this file (space "include")
#endif
#ifndef KEVO_HOPPER_CUH
#include "hopper.cuh"
#endif
#ifndef KEVO_SOFTMAX_CUH
#include "softmax.cuh"
#endif

constexpr int NT = 128 * (CONSUMERS + 1);
constexpr int DCH = HD / 64;              // 64-column chunks of a row: one 128-byte swizzle atom wide
constexpr int Q_BYTES = 64 * HD * 2;      // one consumer's Q block
constexpr int Q_BOX = 8;                  // rows per Q box: a candidate's rows start on a box
constexpr int KV_BYTES = BN * HD * 2;     // a K or a V tile
constexpr int STAGE_BYTES = 2 * KV_BYTES; // K then V
constexpr int NS = BN / 2;                // S accumulators per consumer thread
constexpr int NO = HD / 2;                // O accumulators per consumer thread
constexpr int Q_ALL = CONSUMERS * QBUF * Q_BYTES;   // the Q buffers, before the ring
constexpr int SMEM_CTL = Q_ALL + STAGES * STAGE_BYTES;
constexpr int BAR_TURN = 1; // named barriers 1..CONSUMERS: consumer c's turn to issue (PP=1)
constexpr int LAUNCH_REGS = (65536 / NT < 255 ? 65536 / NT : 255) / 8 * 8;
// the producer thread's warp group; with one consumer there are registers to
// spare, and 24 spilled the producer's item state there (ptxas)
constexpr int PRODUCER_REGS = CONSUMERS == 1 ? 40 : 24;
constexpr int SHARE_REGS = (LAUNCH_REGS * (CONSUMERS + 1) - PRODUCER_REGS) / CONSUMERS / 8 * 8;
constexpr int CONSUMER_REGS = SHARE_REGS < 240 ? SHARE_REGS : 240;

static_assert(HD == 64 || HD == 128, "HD (the head dimension) must be 64 or 128");
static_assert(BN % 16 == 0 && BN >= 32 && BN <= 256, "BN must be 32..256 in steps of 16");
static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "one to three consumer warp groups");
static_assert(STAGES >= 2 && STAGES <= 6, "STAGES must be 2..6");
static_assert(KV_BYTES % 1024 == 0, "K/V tiles must keep the 1024-byte swizzle atoms aligned");
static_assert(QBUF == 1 || QBUF == 2, "QBUF is 1 or 2");
static_assert(PP == 0 || PP == 1, "PP is 0 or 1");
static_assert(OVL == 0 || OVL == 1, "OVL is 0 or 1");

// Barriers in shared memory after the Q blocks and the ring.
struct fa_ctl {
    unsigned long long full[STAGES];  // a K/V tile landed (TMA transaction count)
    unsigned long long empty[STAGES]; // every consumer warp released it
    unsigned long long qfull[CONSUMERS][QBUF];
    unsigned long long qempty[CONSUMERS][QBUF];
};

// The workspace's arrays.
struct fa_ws {
    int *cnt, *off, *ioff, *order;
    int4 *itab;
};
__device__ __forceinline__ fa_ws fa_workspace(const kevo_fa_args &a)
{
    int *w = static_cast<int *>(a.workspace);
    fa_ws s;
    s.cnt = w;
    s.off = w + a.U;
    s.ioff = s.off + a.U + 1;
    s.order = s.ioff + a.U + 1;
    s.itab = reinterpret_cast<int4 *>(w + (3 * a.U + 2 + a.Bc + 3) / 4 * 4);
    return s;
}

// Exclusive scan over the users of one block of 1024 threads: every thread
// sums a contiguous run of users, the runs' sums are scanned in shared memory.
// Sq rounded up to Q_BOX: the rows each candidate owns in its user's packed rows.
__device__ __forceinline__ int packed_sq(int Sq)
{
    return (Sq + Q_BOX - 1) / Q_BOX * Q_BOX;
}
// The Q blocks of a user with n candidates, and the items they make.
__device__ __forceinline__ int user_blocks(int n, int sq8)
{
    return (n * sq8 + 63) / 64;
}
__device__ __forceinline__ int user_items(int n, int sq8)
{
    return (user_blocks(n, sq8) + CONSUMERS - 1) / CONSUMERS;
}
__device__ void block_scan_users(const int *cnt, int *off, int *ioff, int U, int sq8)
{
    __shared__ int part[2][1024];
    const int per = (U + 1023) / 1024, lo = min(U, threadIdx.x * per), hi = min(U, lo + per);
    int sc = 0, si = 0;
    for (int u = lo; u < hi; ++u) {
        sc += cnt[u];
        si += user_items(cnt[u], sq8);
    }
    part[0][threadIdx.x] = sc;
    part[1][threadIdx.x] = si;
    __syncthreads();
    for (int d = 1; d < 1024; d *= 2) {
        const int c0 = threadIdx.x >= d ? part[0][threadIdx.x - d] : 0;
        const int c1 = threadIdx.x >= d ? part[1][threadIdx.x - d] : 0;
        __syncthreads();
        part[0][threadIdx.x] += c0;
        part[1][threadIdx.x] += c1;
        __syncthreads();
    }
    int rc = part[0][threadIdx.x] - sc, ri = part[1][threadIdx.x] - si; // exclusive
    for (int u = lo; u < hi; ++u) {
        off[u] = rc;
        ioff[u] = ri;
        rc += cnt[u];
        ri += user_items(cnt[u], sq8);
    }
    if (threadIdx.x == 1023) {
        off[U] = part[0][1023];
        ioff[U] = part[1][1023];
    }
}

// Users whose counts and offsets the scheduling launch keeps in shared
// memory (3 * (SCHED_SMEM_U + 1) ints, with block_scan_users' 8 KB under the
// 48 KB of static shared memory): its atomics and the items' binary searches
// then wait on shared memory, not on L2 (8 us at U=40 when they all went
// through global memory, H200).  More users take the workspace's arrays.
constexpr int SCHED_SMEM_U = 2048;

extern "C" __global__ void __launch_bounds__(1024, 1) fa_ws_sched(const __grid_constant__ kevo_fa_args a)
{
    __shared__ int s_user[3][SCHED_SMEM_U + 1];
    const fa_ws w = fa_workspace(a);
    const int U = a.U, Bc = a.Bc, sq8 = packed_sq(a.Sq);
    const bool local = U <= SCHED_SMEM_U;
    int *cnt = local ? s_user[0] : w.cnt, *off = local ? s_user[1] : w.off, *ioff = local ? s_user[2] : w.ioff;
    for (int u = threadIdx.x; u < U; u += 1024)
        cnt[u] = 0;
    __syncthreads();
    for (int c = threadIdx.x; c < Bc; c += 1024) {
        const int u = a.cand_to_user[c];
        if (u >= 0 && u < U) // a map outside [0, U) leaves its candidate unwritten
            atomicAdd(&cnt[u], 1);
    }
    __syncthreads();
    block_scan_users(cnt, off, ioff, U, sq8);
    __syncthreads();
    for (int u = threadIdx.x; u < U; u += 1024)
        cnt[u] = 0; // cursors for the scatter
    __syncthreads();
    for (int c = threadIdx.x; c < Bc; c += 1024) {
        const int u = a.cand_to_user[c];
        if (u >= 0 && u < U)
            w.order[off[u] + atomicAdd(&cnt[u], 1)] = c;
    }
    // the item table: item i belongs to the last user u with ioff[u] <= i
    // (users without items share their ioff with the next)
    const int items = ioff[U];
    for (int i = threadIdx.x; i < items; i += 1024) {
        int lo = 0, hi = U;
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            if (ioff[mid] <= i)
                lo = mid;
            else
                hi = mid;
        }
        const int n = off[lo + 1] - off[lo], qb0 = (i - ioff[lo]) * CONSUMERS;
        const int nq = min(CONSUMERS, user_blocks(n, sq8) - qb0); // 1..3: two bits
        w.itab[i] = make_int4(lo, qb0 << 2 | nq, n, off[lo]);
    }
    if (local) // the main launch reads off and ioff from the workspace
        for (int u = threadIdx.x; u <= U; u += 1024) {
            w.off[u] = off[u];
            w.ioff[u] = ioff[u];
        }
}

// An item of the main launch: head h of user u (n candidates, the first at
// order[first]), Q blocks [qb0, qb0 + nq) of the user's packed rows (row v
// of block v / 64: candidate order[first + v / SQ8], its row v % SQ8).
struct fa_item {
    int h, u, qb0, nq, n, first;
};
__device__ __forceinline__ fa_item fa_decode(const kevo_fa_args &a, const fa_ws &w, int t)
{
    const int4 e = __ldg(w.itab + t / a.H);
    fa_item it;
    it.h = t % a.H;
    it.u = e.x;
    it.qb0 = e.y >> 2;
    it.nq = e.y & 3;
    it.n = e.z;
    it.first = e.w;
    return it;
}

// Packed row v of a user's Q rows: its candidate (the last one for rows past
// the user's n candidates), its row in that candidate's Sq, and whether it is
// a row of the output (not padding).
struct fa_row {
    int cand, r;
    bool live;
};
__device__ __forceinline__ fa_row packed_row(const fa_ws &w, int first, int n, int sq8, int Sq, int v)
{
    const int k = v / sq8;
    fa_row x;
    x.r = v - k * sq8;
    x.live = k < n && x.r < Sq;
    x.cand = __ldg(w.order + first + min(k, n - 1));
    return x;
}
// The row of q (rows Bc * Sq) a packed row is read from.
__device__ __forceinline__ int q_row(const fa_row &x, int Sq)
{
    return x.cand * Sq + x.r;
}
// The row of out a packed row is written to, or -1 for padding: one register
// each through the mainloop.
__device__ __forceinline__ int out_row(const fa_row &x, int Sq)
{
    return x.live ? q_row(x, Sq) : -1;
}

// WGMMA shared-memory descriptors by addition (hopper.cuh's desc_advance):
// every operand here has SBO 1024 and the 128-byte swizzle, the descriptor's
// high word, so a descriptor is that constant and a low word (the start
// address / 16 with the LBO field above it) that moves by b / 16 for an
// operand b bytes further on.  Kept as warp-uniform low words, ptxas holds
// the descriptors in uniform registers, ready before the turn: a descriptor
// costs one uniform add instead of a mask, a shift, an or and two moves to
// uniform registers (sw128_desc at every wgmma).  desc_lo is sw128_desc's low
// word without its address mask (addresses here are under 256 KB): through
// sw128_desc, ptxas moves uniform registers between the S wgmmas of a turn
// (bench/same_sass.py: up to 30 more instructions).
constexpr unsigned DESC_HI = (1024u >> 4) | (1u << 30);
__device__ __forceinline__ unsigned desc_lo(unsigned addr, unsigned lbo)
{
    return (addr >> 4) | ((lbo >> 4) << 16);
}
__device__ __forceinline__ unsigned long long desc_at(unsigned lo, unsigned bytes)
{
    return desc_advance((unsigned long long)DESC_HI << 32 | lo, bytes >> 4);
}

// S = Q K^T for one tile: HD/16 k-steps of 16 columns (32 bytes of a
// 128-byte swizzled row; a 64-column chunk further on every fourth step).
// qd, kd: the low descriptor words of the Q block and the K tile (LBO 16).
__device__ __forceinline__ void issue_s(float (&sacc)[NS], unsigned qd, unsigned kd)
{
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
        const unsigned off = (kk % 4) * 32;
        wgmma_ss_t<BN, 0, 0>(sacc, desc_at(qd, (kk / 4) * 64 * 128 + off), desc_at(kd, (kk / 4) * BN * 128 + off),
                             kk > 0);
    }
}

// O += P V for one tile: BN/16 k-steps of 16 rows of V (16 * 128 bytes
// each), P from registers; V N-major, its 64-column chunks BN * 128 apart
// (vd: the low descriptor word of the V tile, LBO BN * 128).
__device__ __forceinline__ void issue_pv(float (&o)[NO], const unsigned (&pa)[BN / 4], unsigned vd)
{
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        const unsigned pk[4] = {pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3]};
        wgmma_rs<HD, 1>(o, pk, desc_at(vd, kk * 16 * 128), 1);
    }
}

// Keys at or past lim (columns of this tile past Skv): -inf.
__device__ __forceinline__ void mask_tail(float (&sacc)[NS], int lim, int fc)
{
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
        const int col = 8 * n + fc;
        if (col >= lim) {
            sacc[4 * n] = neg_inf();
            sacc[4 * n + 2] = neg_inf();
        }
        if (col + 1 >= lim) {
            sacc[4 * n + 1] = neg_inf();
            sacc[4 * n + 3] = neg_inf();
        }
    }
}

// The online softmax of one tile for the thread's two rows (fr, fr + 8), in
// units of scale * log2(e): P = 2^(S * sl2 - m) is packed into pa in the
// storage dtype and the running sums l (this thread's columns; the row's four
// threads add theirs in the epilogue) move on.  The running maxima m move
// only when a row of the warp's sixteen rises past m + RESCALE_LOG2
// (FlashAttention-4's conditional rescaling): otherwise P is up to
// 2^RESCALE_LOG2, exact in fp32 and in the storage dtype's range, and O and l
// keep their scale.  Returns whether m moved; then al0, al1 are the factors
// O must be rescaled by (rescale_o) once every P V before this tile is in it.
// Maxima and sums run as four and two independent chains per row (a chain of
// BN / 8 dependent FMNMX would wait on each one's latency).  scale > 0, so
// max(S) * sl2 is the maximum of the scaled scores.  The first tile always
// moves m (from -inf; its first column is a key, so its maxima are finite).
constexpr float RESCALE_LOG2 = 8.0f;
__device__ __forceinline__ bool softmax_tile(const float (&sacc)[NS], unsigned (&pa)[BN / 4], float &m0, float &m1,
                                             float &l0, float &l1, float &al0, float &al1, float sl2)
{
    float y0[4], y1[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        y0[i] = y1[i] = neg_inf();
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
        y0[n % 4] = fmaxf(y0[n % 4], fmaxf(sacc[4 * n], sacc[4 * n + 1]));
        y1[n % 4] = fmaxf(y1[n % 4], fmaxf(sacc[4 * n + 2], sacc[4 * n + 3]));
    }
    float x0 = fmaxf(fmaxf(y0[0], y0[1]), fmaxf(y0[2], y0[3])) * sl2;
    float x1 = fmaxf(fmaxf(y1[0], y1[1]), fmaxf(y1[2], y1[3])) * sl2;
    x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, 1));
    x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, 2));
    x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, 1));
    x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, 2));
    const bool move = __any_sync(0xffffffffu, x0 > m0 + RESCALE_LOG2 || x1 > m1 + RESCALE_LOG2);
    if (move) {
        x0 = fmaxf(m0, x0);
        x1 = fmaxf(m1, x1);
        al0 = fast_exp2(m0 - x0);
        al1 = fast_exp2(m1 - x1);
        m0 = x0;
        m1 = x1;
        l0 *= al0;
        l1 *= al1;
    }
    float r0[2] = {0.0f, 0.0f}, r1[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
        const float p00 = fast_exp2(fmaf(sacc[4 * n], sl2, -m0));
        const float p01 = fast_exp2(fmaf(sacc[4 * n + 1], sl2, -m0));
        const float p10 = fast_exp2(fmaf(sacc[4 * n + 2], sl2, -m1));
        const float p11 = fast_exp2(fmaf(sacc[4 * n + 3], sl2, -m1));
        r0[n % 2] += p00 + p01;
        r1[n % 2] += p10 + p11;
        pa[2 * n] = pack2_bits(p00, p01);
        pa[2 * n + 1] = pack2_bits(p10, p11);
    }
    l0 += r0[0] + r0[1];
    l1 += r1[0] + r1[1];
    return move;
}
__device__ __forceinline__ void rescale_o(float (&o)[NO], float al0, float al1)
{
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) {
        o[4 * n] *= al0;
        o[4 * n + 1] *= al0;
        o[4 * n + 2] *= al1;
        o[4 * n + 3] *= al1;
    }
}

// Ping-pong (PP=1): consumer c waits for its turn before issuing its MMAs
// and hands the turn to the next one after, so each one's softmax runs under
// the others' MMAs (the turn order of FlashAttention-3's warp-group barriers).
__device__ __forceinline__ void turn_begin(int c)
{
    if constexpr (PP && CONSUMERS > 1)
        named_bar_sync(BAR_TURN + c, 128 * 2);
}
__device__ __forceinline__ void turn_end(int c)
{
    if constexpr (PP && CONSUMERS > 1)
        named_bar_arrive(BAR_TURN + (c + 1) % CONSUMERS, 128 * 2);
}

// One consumer warp arrives on an mbarrier (its lane 0, after the warp converged).
__device__ __forceinline__ void warp_arrive(unsigned long long *bar, int lane)
{
    __syncwarp();
    if (lane == 0)
        cuda::ptx::mbarrier_arrive(reinterpret_cast<uint64_t *>(bar));
}

extern "C" __global__ void __launch_bounds__(NT, 1) fa_ws_main(const __grid_constant__ kevo_fa_args a)
{
    extern __shared__ unsigned char smem_raw[];
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    fa_ctl *ctl = reinterpret_cast<fa_ctl *>(smem + SMEM_CTL);
    const fa_ws w = fa_workspace(a);
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int items = __ldg(w.ioff + a.U) * a.H;
    const int nt = (a.Skv + BN - 1) / BN, sq8 = packed_sq(a.Sq);

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->full[s]), 1);
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->empty[s]), 4 * CONSUMERS);
        }
        for (int c = 0; c < CONSUMERS; ++c)
            for (int b = 0; b < QBUF; ++b) {
                cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->qfull[c][b]), 1);
                cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&ctl->qempty[c][b]), 4);
            }
        cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
        if (tid == 0) {
            int p = 0;                   // ring position of the next K/V tile
            int qn[CONSUMERS] = {};      // Q blocks loaded so far per consumer
            for (int t = blockIdx.x; t < items; t += gridDim.x) {
                const fa_item it = fa_decode(a, w, t);
                for (int c = 0; c < it.nq; ++c) {
                    // 64 / Q_BOX boxes, each Q_BOX rows of one candidate: their first rows
                    // in q, loaded together before the wait (under it, not after it)
                    int row[64 / Q_BOX];
#pragma unroll
                    for (int k = 0; k < 64 / Q_BOX; ++k) {
                        row[k] = q_row(packed_row(w, it.first, it.n, sq8, a.Sq, 64 * (it.qb0 + c) + Q_BOX * k), a.Sq);
                    }
                    const int b = qn[c] % QBUF;
                    mbar_wait(&ctl->qempty[c][b], ((qn[c] / QBUF) & 1) ^ 1);
                    ++qn[c];
                    uint64_t *bar = reinterpret_cast<uint64_t *>(&ctl->qfull[c][b]);
                    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                         cuda::ptx::space_shared, bar, Q_BYTES);
                    unsigned char *qs = smem + (c * QBUF + b) * Q_BYTES;
                    // a box is 1024 bytes per 64-column chunk, the swizzle atom: the block
                    // reads as one 64-row box would
#pragma unroll
                    for (int k = 0; k < 64 / Q_BOX; ++k)
#pragma unroll
                        for (int ch = 0; ch < DCH; ++ch) {
                            const int32_t cq[3] = {64 * ch, it.h, row[k]};
                            cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                                            qs + ch * 64 * 128 + k * Q_BOX * 128, &a.tm_q, cq, bar);
                        }
                }
                const int kv0 = it.u * a.Skv;
                for (int j = 0; j < nt; ++j, ++p) {
                    const int s = p % STAGES;
                    mbar_wait(&ctl->empty[s], ((p / STAGES) & 1) ^ 1);
                    uint64_t *bar = reinterpret_cast<uint64_t *>(&ctl->full[s]);
                    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                         cuda::ptx::space_shared, bar, STAGE_BYTES);
                    unsigned char *ks = smem + Q_ALL + s * STAGE_BYTES;
#pragma unroll
                    for (int ch = 0; ch < DCH; ++ch) {
                        const int32_t ck[3] = {64 * ch, it.h, kv0 + j * BN};
                        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                                        ks + ch * BN * 128, &a.tm_k, ck, bar);
                        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                                        ks + KV_BYTES + ch * BN * 128, &a.tm_v, ck, bar);
                    }
                }
            }
        }
    } else {
        // ---- consumers ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        // the warp group's index through a shuffle: ptxas then knows it is warp-uniform
        // and keeps what is derived from it (the descriptors) in uniform registers
        const int c = __shfl_sync(0xffffffffu, wg, 0) - 1, warp = tid / 32, lane = tid % 32;
        const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
        // low descriptor words of the first Q buffer and of stage 0's K and V tiles
        const unsigned qd0 = desc_lo(base, 16), kd0 = desc_lo(base + Q_ALL, 16);
        const unsigned vd0 = desc_lo(base + Q_ALL + KV_BYTES, BN * 128);
        const float sl2 = a.scale_log2;
        const int fr = warp * 16 + (lane >> 2), fc = 2 * (lane & 3); // fragment row / column
        elem_t *out = static_cast<elem_t *>(a.out);
        int p = 0, qn = 0; // ring position of the item's first tile; Q blocks read so far
        float sacc[NS], o[NO];
        unsigned pa[BN / 4]; // P in the storage dtype, pairs packed: the A operand of P V
        unsigned pb[BN / 4]; // OVL=1: the other P buffer
        if constexpr (PP && CONSUMERS > 1) {
            if (c == CONSUMERS - 1)
                named_bar_arrive(BAR_TURN, 128 * 2); // consumer 0 takes the first turn
        }
        // the output rows of the thread's two rows (fr, fr + 8) in item it, -1 for padding
        auto rows_of = [&](const fa_item &it, int &g0, int &g1) {
            const int v0 = 64 * (it.qb0 + c) + fr;
            g0 = out_row(packed_row(w, it.first, it.n, sq8, a.Sq, v0), a.Sq);
            g1 = out_row(packed_row(w, it.first, it.n, sq8, a.Sq, v0 + 8), a.Sq);
        };
        // each item's entry is read one item ahead, under the previous item's work,
        // and its rows' candidates once that entry is in (they are used at its end)
        fa_item nxt = blockIdx.x < items ? fa_decode(a, w, blockIdx.x) : fa_item{};
        int ng0 = -1, ng1 = -1;
        if (blockIdx.x < items && c < nxt.nq)
            rows_of(nxt, ng0, ng1);
        for (int t = blockIdx.x; t < items; t += gridDim.x) {
            const fa_item it = nxt;
            const int g0 = ng0, g1 = ng1;
            const bool more = t + (int)gridDim.x < items;
            if (more)
                nxt = fa_decode(a, w, t + gridDim.x);
            if (c >= it.nq) {
                // no Q block for this warp group: it takes its turns and releases the tiles
                for (int j = 0; j <= nt; ++j) {
                    if (j < nt)
                        mbar_wait(&ctl->full[(p + j) % STAGES], ((p + j) / STAGES) & 1);
                    turn_begin(c);
                    turn_end(c);
                    if (j > 0)
                        warp_arrive(&ctl->empty[(p + j - 1) % STAGES], lane);
                }
                p += nt;
                if (more && c < nxt.nq)
                    rows_of(nxt, ng0, ng1);
                continue;
            }
            const int qbuf = qn % QBUF;
            const unsigned qd = qd0 + (c * QBUF + qbuf) * (Q_BYTES >> 4);
            mbar_wait(&ctl->qfull[c][qbuf], (qn / QBUF) & 1);
#pragma unroll
            for (int i = 0; i < NO; ++i)
                o[i] = 0.0f;
            float m0 = neg_inf(), m1 = neg_inf(), l0 = 0.0f, l1 = 0.0f; // rows fr and fr + 8
            // turn j: O += P V of tile j - 1 (j > 0), then S = Q K^T of tile j (j < nt);
            // the first and last turns are peeled so no wgmma sits on a conditional path
            // (ptxas serializes them there: C7520)
            {
                const int s = p % STAGES;
                mbar_wait(&ctl->full[s], (p / STAGES) & 1);
                turn_begin(c);
                wgmma_fence();
                issue_s(sacc, qd, kd0 + s * (STAGE_BYTES >> 4));
                wgmma_commit();
                turn_end(c);
                wgmma_wait<0>();
                fence_acc(sacc);
                if (nt == 1) {
                    warp_arrive(&ctl->qempty[c][qbuf], lane); // Q read for the last time
                    mask_tail(sacc, a.Skv, fc);
                }
                float al0, al1; // O is zero: nothing to rescale
                softmax_tile(sacc, pa, m0, m1, l0, l1, al0, al1, sl2);
            }
            // tile j >= 1, one group: O += P V of tile j - 1, S = Q K^T of tile j; then
            // the softmax of tile j into pa, which the P V has finished reading
            auto tile_fused = [&](int j) {
                const int s = (p + j) % STAGES, sp = (p + j - 1) % STAGES;
                mbar_wait(&ctl->full[s], ((p + j) / STAGES) & 1);
                turn_begin(c);
                wgmma_fence();
                issue_pv(o, pa, vd0 + sp * (STAGE_BYTES >> 4));
                issue_s(sacc, qd, kd0 + s * (STAGE_BYTES >> 4));
                wgmma_commit();
                turn_end(c);
                wgmma_wait<0>();
                fence_acc(o);
                fence_acc(sacc);
                warp_arrive(&ctl->empty[sp], lane);
                if (j == nt - 1) {
                    warp_arrive(&ctl->qempty[c][qbuf], lane); // Q read for the last time
                    mask_tail(sacc, a.Skv - j * BN, fc);
                }
                float al0, al1;
                if (softmax_tile(sacc, pa, m0, m1, l0, l1, al0, al1, sl2))
                    rescale_o(o, al0, al1);
            };
            // tile j >= 1 overlapped (OVL=1): S of tile j, then P V of tile j - 1 (P in
            // pin), in two groups; the softmax of tile j (into pout) runs under the P V
            auto tile_overlap = [&](int j, unsigned(&pin)[BN / 4], unsigned(&pout)[BN / 4]) {
                const int s = (p + j) % STAGES, sp = (p + j - 1) % STAGES;
                mbar_wait(&ctl->full[s], ((p + j) / STAGES) & 1);
                turn_begin(c);
                wgmma_fence();
                issue_s(sacc, qd, kd0 + s * (STAGE_BYTES >> 4));
                wgmma_commit();
                issue_pv(o, pin, vd0 + sp * (STAGE_BYTES >> 4));
                wgmma_commit();
                turn_end(c);
                wgmma_wait<1>();
                fence_acc(sacc);
                if (j == nt - 1) {
                    warp_arrive(&ctl->qempty[c][qbuf], lane); // Q read for the last time
                    mask_tail(sacc, a.Skv - j * BN, fc);
                }
                float al0, al1;
                const bool move = softmax_tile(sacc, pout, m0, m1, l0, l1, al0, al1, sl2);
                wgmma_wait<0>();
                fence_acc(o);
                warp_arrive(&ctl->empty[sp], lane);
                if (move)
                    rescale_o(o, al0, al1);
            };
            if constexpr (OVL) {
                // P alternates between pa and pb (a copy between them would sit among
                // the next turn's wgmmas and serialize them, C7513); an odd tile count
                // takes one fused tile first, so the last P is in pa
                int j = 1;
                for (; j < 1 + (nt - 1) % 2; ++j)
                    tile_fused(j);
                for (; j < nt; j += 2) {
                    tile_overlap(j, pa, pb);
                    tile_overlap(j + 1, pb, pa);
                }
            } else {
                for (int j = 1; j < nt; ++j)
                    tile_fused(j);
            }
            {
                const int sp = (p + nt - 1) % STAGES;
                turn_begin(c);
                wgmma_fence();
                issue_pv(o, pa, vd0 + sp * (STAGE_BYTES >> 4));
                wgmma_commit();
                turn_end(c);
                wgmma_wait<0>();
                fence_acc(o);
                warp_arrive(&ctl->empty[sp], lane);
            }
            p += nt;
            ++qn;
            if (more && c < nxt.nq)
                rows_of(nxt, ng0, ng1);

            // ---- epilogue: O / l, each row to its candidate, padding rows left out ----
            l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
            l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
            l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
            l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
            const float i0 = 1.0f / l0, i1 = 1.0f / l1;
            const size_t ld = (size_t)a.H * HD, col = (size_t)it.h * HD + fc;
            elem_t *o0 = out + (size_t)g0 * ld + col, *o1 = out + (size_t)g1 * ld + col;
#pragma unroll
            for (int n = 0; n < HD / 8; ++n) {
                if (g0 >= 0)
                    *reinterpret_cast<elem2_t *>(o0 + 8 * n) = pack2(o[4 * n] * i0, o[4 * n + 1] * i0);
                if (g1 >= 0)
                    *reinterpret_cast<elem2_t *>(o1 + 8 * n) = pack2(o[4 * n + 2] * i1, o[4 * n + 3] * i1);
            }
        }
    }
}
