// fa_mma.cu — ikbo_fa, FlashAttention-2 style on tensor cores with mma.sync
// (sm_80 and later).
//
// The IKBO reuse: one CTA takes BM query rows that all belong to candidates
// of one user (and one head), so every K/V tile it brings into shared memory
// serves all of them.  Rows are packed per user: the user's candidates, in
// the order fa_plan sorted them, laid end to end (n_u * Sq rows), cut into
// blocks of BM; a block spans as many candidates as BM / Sq (and parts of
// two at its ends), and only the user's last block is partly empty, so any
// Sq and any cand_to_user map keep the tile full.
//
// Two launches:
//   fa_plan   one block: counting sort of the candidates by user and the list
//             of work items (user, first packed row) in the workspace;
//   fa_attn   one CTA per (work item, head); items past the count exit.
// fa_attn: WARPS warps, each owning WM = BM / WARPS query rows (one or two
// m16 fragments); Q in registers (QREG=1) or re-read from shared memory each
// tile (QREG=0, for WM=32 where the registers go to O and S); K and V tiles of
// BN rows in a STAGES-deep cp.async ring; S = Q K^T and O += P V with
// mma.m16n8k16, the online softmax in fp32 with exp2 of scale_log2-scaled
// scores, P rounded to the storage dtype in registers and fed back as the A
// operand of P V; O divided by the row sum and stored through shared memory
// with 16-byte stores.

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef HEAD_DIM
#define HEAD_DIM 128
#endif
#ifndef BM
#define BM 128
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef BN
#define BN 64
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef QREG
#define QREG 0
#endif

#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh" // kevo inlines it ahead of this file (space "include")
#endif
#ifndef KEVO_MMA_CUH
#include "mma.cuh" // ldmatrix, mma.sync (space "include")
#endif
#ifndef KEVO_SOFTMAX_CUH
#include "softmax.cuh" // -inf, 2^x, packed pairs (space "include")
#endif

constexpr int NT = WARPS * 32;             // threads per CTA
constexpr int WM = BM / WARPS;             // query rows per warp
constexpr int MT = WM / 16;                // m16 fragments per warp
constexpr int DC = HEAD_DIM / 8;           // 16-byte chunks per row
constexpr int SN = BN / 8;                 // n8 fragments of S per warp
constexpr int ON = HEAD_DIM / 8;           // n8 fragments of O per warp
constexpr int PLAN_NT = 1024;              // fa_plan's threads

static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM must be 64 or 128");
static_assert(BM % WARPS == 0 && (WM == 16 || WM == 32), "rows per warp must be 16 or 32");
static_assert(BN == 32 || BN == 64 || BN == 128, "BN must be 32, 64 or 128");
static_assert(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
static_assert(QREG == 0 || QREG == 1, "QREG is 0 or 1");
static_assert(MT * ON * 4 + MT * SN * 4 + (QREG ? MT * HEAD_DIM / 4 : 0) <= 224,
              "O, S and Q fragments exceed the register budget");

// Shared memory (dynamic): Q (later O) [BM][HEAD_DIM], K ring, V ring
// [STAGES][BN][HEAD_DIM], then the CTA's output row index per query row.
constexpr int Q_ELEMS = BM * HEAD_DIM;
constexpr int KV_ELEMS = BN * HEAD_DIM;
constexpr int SMEM_BYTES = (Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2 + BM * 4;
static_assert(SMEM_BYTES <= 232448, "shared memory over the largest per-block limit (sm_90)");

// ---- small PTX wrappers mma.cuh lacks ----
// 16 bytes global -> shared through L2 only; bytes < 16 zero-fills the rest.
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Element offset of the 16-byte chunk (row, chunk) of a [rows][HEAD_DIM]
// tile: the low three chunk bits XORed with the row, so the eight rows one
// ldmatrix matrix reads (plain or transposed) fall in distinct banks.
__device__ __forceinline__ int sw_off(int row, int chunk)
{
    return row * HEAD_DIM + (((chunk & ~7) | ((chunk ^ row) & 7)) << 3);
}

// ---- the workspace fa_plan writes and fa_attn reads ----
// int nitems (padded to 256 bytes), then int count[U], start[U], cursor[U],
// istart[U + 1], order[Bc] (each padded to 64 ints), then int4 items[max_items]:
// {user, first packed row, first index into order, the user's row count}.
// The space file's "workspace" expression is the same sum.
struct fa_ws {
    int *nitems, *count, *start, *cursor, *istart, *order;
    int4 *items;
};
__device__ __forceinline__ int fa_pad64(int n) { return (n + 63) & ~63; }
__device__ __forceinline__ fa_ws fa_ws_at(const kevo_fa_args &a)
{
    fa_ws w;
    int *p = static_cast<int *>(a.workspace);
    w.nitems = p;
    p += 64;
    w.count = p;
    p += fa_pad64(a.U);
    w.start = p;
    p += fa_pad64(a.U);
    w.cursor = p;
    p += fa_pad64(a.U);
    w.istart = p;
    p += fa_pad64(a.U + 1);
    w.order = p;
    p += fa_pad64(a.Bc);
    w.items = reinterpret_cast<int4 *>(p);
    return w;
}

// Exclusive block-wide prefix sum of v over PLAN_NT threads; *total gets the sum.
__device__ __forceinline__ long long plan_scan(long long v, long long *total)
{
    __shared__ long long warp_sum[PLAN_NT / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long x = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        long long y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d)
            x += y;
    }
    if (lane == 31)
        warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {
        long long s = warp_sum[lane];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            long long y = __shfl_up_sync(0xffffffffu, s, d);
            if (lane >= d)
                s += y;
        }
        warp_sum[lane] = s;
    }
    __syncthreads();
    long long before = (warp ? warp_sum[warp - 1] : 0) + x - v;
    *total = warp_sum[PLAN_NT / 32 - 1];
    __syncthreads(); // warp_sum is reused by the next call
    return before;
}

// Launch 1, one block: candidates sorted by user (counting sort) and the
// work items, BM packed rows of one user each, in user order.  The per-user
// counters live in shared memory when U <= PLAN_SU (shared-memory atomics;
// global ones on a few hot counters cost microseconds), else in the workspace.
// sm_100's ptxas gives a 1024-thread kernel 32 registers unless told that
// one block per SM will do (then 40; with 32 it spills 8 bytes); sm_80 and
// sm_90 build exactly as before.
constexpr int PLAN_SU = 2048;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define PLAN_BOUNDS __launch_bounds__(PLAN_NT, 1)
#else
#define PLAN_BOUNDS __launch_bounds__(PLAN_NT)
#endif
extern "C" __global__ void PLAN_BOUNDS fa_plan(const __grid_constant__ kevo_fa_args a)
{
    __shared__ int s_count[PLAN_SU], s_start[PLAN_SU], s_cursor[PLAN_SU], s_istart[PLAN_SU + 1];
    const fa_ws w = fa_ws_at(a);
    const int tid = threadIdx.x, U = a.U, Bc = a.Bc, Sq = a.Sq;
    const bool in_smem = U <= PLAN_SU;
    int *count = in_smem ? s_count : w.count, *start = in_smem ? s_start : w.start;
    int *cursor = in_smem ? s_cursor : w.cursor, *istart = in_smem ? s_istart : w.istart;
    for (int u = tid; u < U; u += PLAN_NT)
        count[u] = 0;
    __syncthreads();
    for (int c = tid; c < Bc; c += PLAN_NT)
        atomicAdd(&count[a.cand_to_user[c]], 1);
    __syncthreads();
    // candidates before user u (high half) and items before it (low half)
    long long carry = 0;
    for (int u0 = 0; u0 < U; u0 += PLAN_NT) {
        const int u = u0 + tid;
        long long n = u < U ? count[u] : 0;
        long long nb = (n * Sq + BM - 1) / BM;
        long long total;
        long long before = carry + plan_scan((n << 32) + nb, &total);
        if (u < U) {
            start[u] = cursor[u] = (int)(before >> 32);
            istart[u] = (int)(before & 0xffffffff);
        }
        carry += total;
    }
    const int nitems = (int)(carry & 0xffffffff);
    if (tid == 0) {
        istart[U] = nitems;
        *w.nitems = nitems;
    }
    __syncthreads();
    for (int c = tid; c < Bc; c += PLAN_NT) {
        const int u = a.cand_to_user[c];
        w.order[atomicAdd(&cursor[u], 1)] = c;
    }
    // item i belongs to the last user whose first item is <= i (users with no
    // items share their istart with the next user, so that one is never empty)
    for (int i = tid; i < nitems; i += PLAN_NT) {
        int lo = 0, hi = U - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (istart[mid] <= i)
                lo = mid;
            else
                hi = mid - 1;
        }
        w.items[i] = make_int4(lo, (i - istart[lo]) * BM, start[lo], count[lo] * Sq);
    }
}

// ---- fa_attn's steps ----

// Copy rows [kv0, kv0 + BN) of user u's K and V (head h) into ring slot
// (ks, vs); rows at or past Skv read nothing and land as zeros.
__device__ __forceinline__ void load_kv(elem_t *ks, elem_t *vs, const kevo_fa_args &a, size_t user_row0, int h,
                                        int kv0, int tid)
{
    // thread tid copies chunk tid % DC of rows tid / DC + j * ROWS_PER_PASS
    constexpr int ROWS_PER_PASS = NT / DC;
    static_assert(NT % DC == 0 && BN % ROWS_PER_PASS == 0, "K/V tile rows must split evenly over the threads");
    const int row0 = tid / DC, c = tid % DC;
    const size_t step = (size_t)ROWS_PER_PASS * a.H * HEAD_DIM;
    const size_t g0 = ((user_row0 + kv0 + row0) * a.H + h) * HEAD_DIM + c * 8;
    const elem_t *k = static_cast<const elem_t *>(a.k), *v = static_cast<const elem_t *>(a.v);
#pragma unroll
    for (int j = 0; j < BN / ROWS_PER_PASS; ++j) {
        const int row = row0 + j * ROWS_PER_PASS;
        const bool ok = kv0 + row < a.Skv;
        const size_t g = ok ? g0 + j * step : 0;
        cp_async16(ks + sw_off(row, c), k + g, ok ? 16 : 0);
        cp_async16(vs + sw_off(row, c), v + g, ok ? 16 : 0);
    }
}

// Per-lane shared-memory addresses for ldmatrix.  With sw_off's swizzle and
// 128-byte aligned rows, chunk 2*kk + b of a row r (b a lane bit) sits at
//   row address + ((b ^ r) & 7) * 16  XOR  ((2*kk) & 7) * 16,  + ((2*kk) & 8) * 16,
// so one lane address serves every k step: an XOR and an immediate offset
// (no register per k step).
__device__ __forceinline__ unsigned kx(int kk) { return ((2 * kk) & 7) << 4; }
__device__ __forceinline__ unsigned ky(int kk) { return ((2 * kk) & 8) << 4; }
__device__ __forceinline__ void ldsm_x4_at(unsigned addr, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t_at(unsigned addr, unsigned r[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// Q (A operand): rows wr0 + (lane & 15) of each m16 fragment, chunk 2*kk + lane/16.
__device__ __forceinline__ unsigned q_lane_addr(const elem_t *qs, int wr0, int lane)
{
    return smem_addr(qs + sw_off(wr0 + (lane & 15), lane >> 4));
}
// K (B operand of Q K^T): matrices (n0,k0) (n0,k1) (n1,k0) (n1,k1) of 16 key rows.
__device__ __forceinline__ unsigned k_lane_addr(const elem_t *ks, int lane)
{
    return smem_addr(ks + sw_off((lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1));
}
// V (B operand of P V, transposed): matrices (k0,n0) (k1,n0) (k0,n1) (k1,n1).
__device__ __forceinline__ unsigned v_lane_addr(const elem_t *vs, int lane)
{
    return smem_addr(vs + sw_off(lane & 15, lane >> 4));
}
constexpr unsigned ROW_BYTES = HEAD_DIM * 2;

// The A fragments of this warp's Q rows for k-step kk (from shared memory).
__device__ __forceinline__ void q_frag(unsigned qa, int kk, unsigned f[MT][4])
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
        ldsm_x4_at((qa ^ kx(kk)) + ky(kk) + mt * 16 * ROW_BYTES, f[mt]);
}

// s = Q K^T for the K tile at ka (fp32, unscaled).
__device__ __forceinline__ void qk_tile(unsigned qa, unsigned ka, const unsigned (&qr)[MT][QREG ? HEAD_DIM / 16 : 1][4],
                                        float (&s)[MT][SN][4])
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < SN; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                s[mt][n][r] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        unsigned qf[MT][4];
#if QREG
        (void)qa;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                qf[mt][r] = qr[mt][kk][r];
#else
        (void)qr;
        q_frag(qa, kk, qf);
#endif
        const unsigned kb = (ka ^ kx(kk)) + ky(kk);
#pragma unroll
        for (int np = 0; np < SN / 2; ++np) {
            unsigned b[4];
            ldsm_x4_at(kb + np * 16 * ROW_BYTES, b);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma16816(s[mt][2 * np], qf[mt], b);
                mma16816(s[mt][2 * np + 1], qf[mt], b + 2);
            }
        }
    }
}

// Online softmax over one S tile: new running max m, rescale O and the
// (per-thread partial) row sum l by exp2((m_old - m_new) * scale_log2), and
// p = exp2(s * scale_log2 - m_new * scale_log2) rounded to the storage dtype
// in the A-fragment order of P V: the C fragments of n8 blocks 2t and 2t+1
// are the A fragment of k16 step t.  Each thread holds rows lane/4 (h=0)
// and lane/4 + 8 (h=1) of each m16 fragment.
// Both m * scale_log2 are rounded products (__fmul_rn), so the rescale is
// exactly 1 while the max holds: written as m_old * scale_log2 - ms, the
// compiler fuses it into one FFMA, whose unrounded product leaves the
// rounding residual of m * scale_log2 (up to half an ulp: 3e-5 at 700, the
// check scale's peaked scores) in the exponent of every tile, and over
// Skv / BN tiles the early keys' weights drift against the late ones' by up
// to (Skv / BN) * 3e-5 * ln 2 (1% at 512 tiles; docs/fa_mma.md, v5).
__device__ __forceinline__ void softmax_tile(const float (&s)[MT][SN][4], unsigned (&p)[MT][SN / 2][4],
                                             float (&o)[MT][ON][4], float (&m)[MT][2], float (&l)[MT][2], float sl2)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[mt][h];
#pragma unroll
            for (int n = 0; n < SN; ++n)
                mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // a row with every score masked so far keeps max -inf: shift by 0
            const float ms = mx == neg_inf() ? 0.0f : __fmul_rn(mx, sl2);
            const float corr = fast_exp2(__fmul_rn(m[mt][h], sl2) - ms);
            m[mt][h] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < SN; ++n) {
                const float x = fast_exp2(fmaf(s[mt][n][2 * h], sl2, -ms));
                const float y = fast_exp2(fmaf(s[mt][n][2 * h + 1], sl2, -ms));
                sum += x + y;
                p[mt][n / 2][(n & 1) * 2 + h] = pack2_bits(x, y);
            }
            l[mt][h] = l[mt][h] * corr + sum;
#pragma unroll
            for (int n = 0; n < ON; ++n) {
                o[mt][n][2 * h] *= corr;
                o[mt][n][2 * h + 1] *= corr;
            }
        }
}

// o += P V for the V tile at va.
__device__ __forceinline__ void pv_tile(unsigned va, const unsigned (&p)[MT][SN / 2][4], float (&o)[MT][ON][4])
{
#pragma unroll
    for (int t = 0; t < BN / 16; ++t) {
#pragma unroll
        for (int dp = 0; dp < ON / 2; ++dp) {
            unsigned b[4];
            ldsm_x4_t_at((va ^ kx(dp)) + ky(dp) + t * 16 * ROW_BYTES, b);
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma16816(o[mt][2 * dp], p[mt][t], b);
                mma16816(o[mt][2 * dp + 1], p[mt][t], b + 2);
            }
        }
    }
}

// O / l in the storage dtype into this warp's rows of qs (Q is no longer
// read), then 16-byte stores of the rows that are a candidate's.
__device__ __forceinline__ void store_o(elem_t *qs, const int *rows, const kevo_fa_args &a, int h, float (&o)[MT][ON][4],
                                        float (&l)[MT][2], int wr0, int lane)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            float sum = l[mt][hh];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.0f / sum;
            const int row = wr0 + mt * 16 + (lane >> 2) + hh * 8;
#pragma unroll
            for (int n = 0; n < ON; ++n) {
                elem2_t v = pack2(o[mt][n][2 * hh] * inv, o[mt][n][2 * hh + 1] * inv);
                *reinterpret_cast<elem2_t *>(qs + sw_off(row, n) + (lane & 3) * 2) = v;
            }
        }
    __syncwarp();
    elem_t *out = static_cast<elem_t *>(a.out);
#pragma unroll
    for (int i = lane; i < WM * DC; i += 32) {
        const int row = wr0 + i / DC, c = i % DC;
        const int qrow = rows[row];
        if (qrow < 0)
            continue;
        *reinterpret_cast<uint4 *>(out + ((size_t)qrow * a.H + h) * HEAD_DIM + c * 8) =
            *reinterpret_cast<const uint4 *>(qs + sw_off(row, c));
    }
}

// Launch 2: one CTA per (work item, head): BM packed query rows of one user
// against all of that user's keys.
extern "C" __global__ void __launch_bounds__(NT) fa_attn(const __grid_constant__ kevo_fa_args a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    elem_t *qs = reinterpret_cast<elem_t *>(smem_raw);
    elem_t *ks = qs + Q_ELEMS;
    elem_t *vs = ks + STAGES * KV_ELEMS;
    int *rows = reinterpret_cast<int *>(vs + STAGES * KV_ELEMS);

    const fa_ws w = fa_ws_at(a);
    const int item = blockIdx.x / a.H, h = blockIdx.x % a.H;
    if (item >= *w.nitems)
        return;
    const int4 it = w.items[item]; // user, first packed row, first index into order, rows of the user
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wr0 = warp * WM;
    const size_t user_row0 = (size_t)it.x * a.Skv;

    // the query row (c * Sq + r) of each packed row, -1 past the user's rows
    for (int r = tid; r < BM; r += NT) {
        const int p = it.y + r;
        rows[r] = p < it.w ? w.order[it.z + p / a.Sq] * a.Sq + p % a.Sq : -1;
    }
    __syncthreads();

    // Q (zeros for rows that are no candidate's), then the first STAGES-1 K/V tiles
    const elem_t *q = static_cast<const elem_t *>(a.q);
    for (int i = tid; i < BM * DC; i += NT) {
        const int row = i / DC, c = i % DC, qrow = rows[row];
        const size_t g = qrow >= 0 ? ((size_t)qrow * a.H + h) * HEAD_DIM + c * 8 : 0;
        cp_async16(qs + sw_off(row, c), q + g, qrow >= 0 ? 16 : 0);
    }
    cp_async_commit();
    const int tiles = (a.Skv + BN - 1) / BN;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles)
            load_kv(ks + s * KV_ELEMS, vs + s * KV_ELEMS, a, user_row0, h, s * BN, tid);
        cp_async_commit();
    }

    const unsigned qa = q_lane_addr(qs, wr0, lane);
    const unsigned ka = k_lane_addr(ks, lane), va = v_lane_addr(vs, lane);
    unsigned qr[MT][QREG ? HEAD_DIM / 16 : 1][4];
#if QREG
    cp_async_wait<STAGES - 1>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk) {
        unsigned f[MT][4];
        q_frag(qa, kk, f);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                qr[mt][kk][r] = f[mt][r];
    }
#endif

    float o[MT][ON][4], m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int n = 0; n < ON; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                o[mt][n][r] = 0.0f;
        m[mt][0] = m[mt][1] = neg_inf();
        l[mt][0] = l[mt][1] = 0.0f;
    }
    const float sl2 = a.scale_log2;

    for (int t = 0; t < tiles; ++t) {
        // tile t has landed and every warp is done with tile t-1, whose slot
        // takes tile t+STAGES-1
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int nt = t + STAGES - 1;
        if (nt < tiles)
            load_kv(ks + (nt % STAGES) * KV_ELEMS, vs + (nt % STAGES) * KV_ELEMS, a, user_row0, h, nt * BN, tid);
        cp_async_commit();

        const int slot = t % STAGES;
        float s[MT][SN][4];
        qk_tile(qa, ka + slot * KV_ELEMS * 2, qr, s);
        const int kv0 = t * BN;
        if (kv0 + BN > a.Skv) { // keys at or past Skv score -inf
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int n = 0; n < SN; ++n)
#pragma unroll
                    for (int r = 0; r < 4; ++r)
                        if (kv0 + n * 8 + (lane & 3) * 2 + (r & 1) >= a.Skv)
                            s[mt][n][r] = neg_inf();
        }
        unsigned p[MT][SN / 2][4];
        softmax_tile(s, p, o, m, l, sl2);
        pv_tile(va + slot * KV_ELEMS * 2, p, o);
    }
    cp_async_wait<0>();
    __syncwarp();
    store_o(qs, rows, a, h, o, l, wr0, lane);
}
