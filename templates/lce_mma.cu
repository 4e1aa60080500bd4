// lce_mma.cu — ikbo_lce on tensor cores with mma.sync (sm_80 and later).
//
// Stages of the IKBO search, as parameters of one family:
//   FUSE=0  decomposed: user GEMM at batch U -> fp32 workspace, candidate GEMM
//           at batch B -> out, then a broadcast-add kernel out += user[c2u[b]].
//   FUSE=1  the broadcast-add folded into the candidate GEMM's epilogue through
//           cand_to_user: two launches, one pass over out.
//   ALIGN=1 W read from rows padded to 8 elements with 16-byte cp.async;
//   ALIGN=0 W read from its natural rows (K elements) with 4-byte cp.async
//           (or element loads when K is odd).
// Main loop: a STAGES-deep cp.async ring in shared memory (swizzled so that
// ldmatrix reads are free of bank conflicts), ldmatrix fragments and
// mma.m16n8k16 with fp32 accumulators; WARPS_M x WARPS_N warps, each owning a
// (BM/WARPS_M) x (BN/WARPS_N) tile.  EPI=1 stages the tile through shared
// memory for 16-byte stores; EPI=0 stores fragments directly.  RASTER picks
// which tile index of a batch runs fastest (0: M tiles, 1: N tiles).

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef ALIGN
#define ALIGN 1
#endif
#ifndef FUSE
#define FUSE 1
#endif
#ifndef EPI
#define EPI 1
#endif
#ifndef RASTER
#define RASTER 0
#endif

#ifndef KEVO_DTYPE_CUH
#include "dtype.cuh" // kevo inlines it ahead of this file (space "include")
#endif
#ifndef KEVO_MMA_CUH
#include "mma.cuh" // ldmatrix, mma.sync (space "include")
#endif
#include <cuda_pipeline.h>

constexpr int NT = WARPS_M * WARPS_N * 32;   // threads per block
constexpr int WTM = BM / WARPS_M;            // warp tile rows
constexpr int WTN = BN / WARPS_N;            // warp tile cols
constexpr int MI = WTM / 16;                 // m16 fragments per warp
constexpr int NI = WTN / 8;                  // n8 fragments per warp
constexpr int CS_LD = BN + 8;                // fp32 staging row stride (floats)

static_assert(BM % (16 * WARPS_M) == 0, "warp tile rows must be a multiple of 16");
static_assert(BN % (16 * WARPS_N) == 0, "warp tile cols must be a multiple of 16");
static_assert(BK == 32 || BK == 64, "BK must be 32 or 64");
static_assert(BN >= 64 && BN % 64 == 0, "BN must be a multiple of 64");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES must be 2..8");
static_assert(MI * NI * 4 <= 128, "accumulators exceed the register budget");


// ---- shared-memory layout: element offset of the 16-byte chunk (row, chunk) ----
// A tile [BM][BK]: rows of 64 or 128 bytes; XOR the chunk with the 128-byte
// line index so that the 8 row addresses of one ldmatrix hit distinct banks.
__device__ __forceinline__ int a_off(int row, int chunk)
{
#if BK == 64
    return row * 64 + ((chunk ^ (row & 7)) << 3);
#else
    int line = row >> 1;
    int c = chunk + ((row & 1) << 2);
    return line * 64 + ((c ^ (line & 7)) << 3);
#endif
}
// B tile [BK][BN]: rows of BN*2 >= 128 bytes; XOR the low 3 chunk bits with the row.
__device__ __forceinline__ int b_off(int row, int chunk)
{
    return row * BN + (((chunk & ~7) | ((chunk ^ row) & 7)) << 3);
}

// One GEMM problem of the batch: C[bb] = W[M, K] @ E[bb][K, N].
struct gemm_operands {
    const elem_t *w;  // [M, ldw]
    const elem_t *e;  // [batch, K, N]
    int K, ldw, batch;
};

// Issue the copies of k-tile `k0` into ring slot `slot`.
__device__ __forceinline__ void load_tile(elem_t *As, elem_t *Bs, const gemm_operands &g, const elem_t *eb,
                                          int M, int N, int m0, int n0, int k0, int tid)
{
    elem_t *as = As;
    // A: BM x BK from W rows m0.., columns k0..
#if ALIGN
    constexpr int A_CHUNKS = BM * BK / 8;
#pragma unroll
    for (int j = 0; j < (A_CHUNKS + NT - 1) / NT; ++j) {
        const int i = tid + j * NT;
        if (A_CHUNKS % NT != 0 && i >= A_CHUNKS)
            break;
        int row = i / (BK / 8), c = i % (BK / 8);
        int gm = m0 + row, gk = k0 + c * 8;
        bool ok = gm < M && gk < g.K;  // columns in [K, ldw) hold zeros
        const elem_t *src = ok ? g.w + (size_t)gm * g.ldw + gk : g.w;
        __pipeline_memcpy_async(as + a_off(row, c), src, 16, ok ? 0 : 16);
    }
#else
    if ((g.ldw & 1) == 0) {
        constexpr int A_PAIRS = BM * BK / 2;
#pragma unroll 4
        for (int j = 0; j < (A_PAIRS + NT - 1) / NT; ++j) {
            const int i = tid + j * NT;
            if (A_PAIRS % NT != 0 && i >= A_PAIRS)
                break;
            int row = i / (BK / 2), k = (i % (BK / 2)) * 2;
            int gm = m0 + row, gk = k0 + k;
            bool ok = gm < M && gk < g.K;  // K even: the pair is whole
            const elem_t *src = ok ? g.w + (size_t)gm * g.ldw + gk : g.w;
            __pipeline_memcpy_async(as + a_off(row, k >> 3) + (k & 7), src, 4, ok ? 0 : 4);
        }
    } else {
        constexpr int A_ELEMS = BM * BK;
        for (int j = 0; j < (A_ELEMS + NT - 1) / NT; ++j) {
            const int i = tid + j * NT;
            if (A_ELEMS % NT != 0 && i >= A_ELEMS)
                break;
            int row = i / BK, k = i % BK;
            int gm = m0 + row, gk = k0 + k;
            elem_t v = (gm < M && gk < g.K) ? g.w[(size_t)gm * g.ldw + gk] : elem_t(0.0f);
            as[a_off(row, k >> 3) + (k & 7)] = v;
        }
    }
#endif
    // B: BK x BN from E[bb] rows k0.., columns n0..
    constexpr int B_CHUNKS = BK * BN / 8;
#pragma unroll
    for (int j = 0; j < (B_CHUNKS + NT - 1) / NT; ++j) {
        const int i = tid + j * NT;
        if (B_CHUNKS % NT != 0 && i >= B_CHUNKS)
            break;
        int row = i / (BN / 8), c = i % (BN / 8);
        int gk = k0 + row, gn = n0 + c * 8;
        bool ok = gk < g.K && gn < N;
        const elem_t *src = ok ? eb + (size_t)gk * N + gn : eb;
        __pipeline_memcpy_async(Bs + b_off(row, c), src, 16, ok ? 0 : 16);
    }
}

// Multiply the k-tile in ring slot (As, Bs) into acc.
__device__ __forceinline__ void mma_tile(const elem_t *As, const elem_t *Bs, float (&acc)[MI][NI][4], int wm0,
                                         int wn0, int lane)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
        unsigned a[MI][4], b[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
            int row = wm0 + mi * 16 + (lane & 15);
            ldsm_x4(As + a_off(row, kk * 2 + (lane >> 4)), a[mi]);
        }
#pragma unroll
        for (int nj = 0; nj < NI / 2; ++nj) {
            int row = kk * 16 + (lane & 15);
            int chunk = (wn0 + nj * 16) / 8 + (lane >> 4);
            unsigned r[4];
            ldsm_x4_t(Bs + b_off(row, chunk), r);
            b[2 * nj][0] = r[0];
            b[2 * nj][1] = r[1];
            b[2 * nj + 1][0] = r[2];
            b[2 * nj + 1][1] = r[3];
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
                mma16816(acc[mi][ni], a[mi], b[ni]);
    }
}

// Output modes of the epilogue.
enum { OUT_USER_F32 = 0, OUT_CAND = 1 };

// The whole tile: mainloop, then the epilogue.
//   OUT_USER_F32: C -> workspace user_res[bb] in fp32.
//   OUT_CAND:     C (+ user_res[c2u[bb]] when FUSE) -> out[bb] in the storage dtype.
template <int MODE>
__device__ __forceinline__ void gemm_block(const kevo_lce_args &a)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    elem_t *smem = reinterpret_cast<elem_t *>(smem_raw);

    gemm_operands g;
    if (MODE == OUT_USER_F32) {
        g.w = static_cast<const elem_t *>(a.w_user);
        g.e = static_cast<const elem_t *>(a.e_user);
        g.K = a.Ku;
        g.ldw = a.ldw_user;
        g.batch = a.U;
    } else {
        g.w = static_cast<const elem_t *>(a.w_cand);
        g.e = static_cast<const elem_t *>(a.e_cand);
        g.K = a.Kc;
        g.ldw = a.ldw_cand;
        g.batch = a.B;
    }
    const int M = a.M, N = a.N;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_batch = tiles_m * tiles_n;
    const int bb = blockIdx.x / per_batch;
    const int t = blockIdx.x % per_batch;
    if (bb >= g.batch)
        return;
#if RASTER == 0
    const int tm = t % tiles_m, tn = t / tiles_m;
#else
    const int tn = t % tiles_n, tm = t / tiles_n;
#endif
    const int m0 = tm * BM, n0 = tn * BN;
    const elem_t *eb = g.e + (size_t)bb * g.K * N;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WTM, wn0 = (warp % WARPS_N) * WTN;
    elem_t *As = smem;
    elem_t *Bs = smem + STAGES * BM * BK;

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                acc[mi][ni][r] = 0.0f;

    // producer-ahead ring: tile kt+STAGES-1 is in flight while tile kt is multiplied
    const int KT = (g.K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT)
            load_tile(As + s * BM * BK, Bs + s * BK * BN, g, eb, M, N, m0, n0, s * BK, tid);
        __pipeline_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
        __pipeline_wait_prior(STAGES - 2);
        __syncthreads();
        const int nk = kt + STAGES - 1;
        if (nk < KT) {
            const int slot = nk % STAGES;
            load_tile(As + slot * BM * BK, Bs + slot * BK * BN, g, eb, M, N, m0, n0, nk * BK, tid);
        }
        __pipeline_commit();
        const int slot = kt % STAGES;
        mma_tile(As + slot * BM * BK, Bs + slot * BK * BN, acc, wm0, wn0, lane);
    }
    __pipeline_wait_prior(0);

    const float *user = static_cast<const float *>(a.workspace);
    size_t user_base = 0;
    if (MODE == OUT_CAND && FUSE)
        user_base = (size_t)a.cand_to_user[bb] * M * N;

#if EPI == 0
    // direct: each thread stores its fragment pairs
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int gm = m0 + wm0 + mi * 16 + (lane >> 2) + h * 8;
                int gn = n0 + wn0 + ni * 8 + (lane & 3) * 2;
                if (gm >= M || gn >= N)
                    continue;
                float x = acc[mi][ni][2 * h], y = acc[mi][ni][2 * h + 1];
                size_t off = (size_t)gm * N + gn;
                if (MODE == OUT_USER_F32) {
                    float *ws = static_cast<float *>(a.workspace) + (size_t)bb * M * N;
                    *reinterpret_cast<float2 *>(ws + off) = make_float2(x, y);
                } else {
                    if (FUSE) {
                        float2 u = *reinterpret_cast<const float2 *>(user + user_base + off);
                        x += u.x;
                        y += u.y;
                    }
                    elem_t *out = static_cast<elem_t *>(a.out) + (size_t)bb * M * N;
                    *reinterpret_cast<elem2_t *>(out + off) = pack2(x, y);
                }
            }
#else
    // staged: fp32 tile in shared memory, then 8 consecutive columns per thread
    __syncthreads();
    float *cs = reinterpret_cast<float *>(smem_raw);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = wm0 + mi * 16 + (lane >> 2) + h * 8;
                int c = wn0 + ni * 8 + (lane & 3) * 2;
                *reinterpret_cast<float2 *>(cs + r * CS_LD + c) = make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
            }
    __syncthreads();
    constexpr int CHUNKS = BM * BN / 8;
    for (int i = tid; i < CHUNKS; i += NT) {
        int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
        int gm = m0 + r, gn = n0 + c;
        if (gm >= M || gn >= N)
            continue;
        float4 v0 = *reinterpret_cast<const float4 *>(cs + r * CS_LD + c);
        float4 v1 = *reinterpret_cast<const float4 *>(cs + r * CS_LD + c + 4);
        size_t off = (size_t)gm * N + gn;
        if (MODE == OUT_USER_F32) {
            float4 *ws = reinterpret_cast<float4 *>(static_cast<float *>(a.workspace) + (size_t)bb * M * N + off);
            ws[0] = v0;
            ws[1] = v1;
        } else {
            if (FUSE) {
                const float4 *u = reinterpret_cast<const float4 *>(user + user_base + off);
                float4 u0 = u[0], u1 = u[1];
                v0.x += u0.x; v0.y += u0.y; v0.z += u0.z; v0.w += u0.w;
                v1.x += u1.x; v1.y += u1.y; v1.z += u1.z; v1.w += u1.w;
            }
            union { uint4 u; elem2_t h[4]; } pk;
            pk.h[0] = pack2(v0.x, v0.y);
            pk.h[1] = pack2(v0.z, v0.w);
            pk.h[2] = pack2(v1.x, v1.y);
            pk.h[3] = pack2(v1.z, v1.w);
            elem_t *out = static_cast<elem_t *>(a.out) + (size_t)bb * M * N;
            *reinterpret_cast<uint4 *>(out + off) = pk.u;
        }
    }
#endif
}

// user_res[u] = W_user @ E_user[u], fp32, into the workspace.
extern "C" __global__ void __launch_bounds__(NT) lce_user_gemm(const __grid_constant__ kevo_lce_args a)
{
    gemm_block<OUT_USER_F32>(a);
}

// out[b] = W_cand @ E_cand[b] (+ user_res[cand_to_user[b]] when FUSE).
extern "C" __global__ void __launch_bounds__(NT) lce_cand_gemm(const __grid_constant__ kevo_lce_args a)
{
    gemm_block<OUT_CAND>(a);
}

// Decomposed stage only: out[b] += user_res[cand_to_user[b]], 8 elements per thread.
extern "C" __global__ void __launch_bounds__(256) lce_bcast_add(const __grid_constant__ kevo_lce_args a)
{
    const size_t per_b = (size_t)a.M * a.N / 8;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_b * a.B)
        return;
    const size_t b = i / per_b, off = (i % per_b) * 8;
    const float4 *u = reinterpret_cast<const float4 *>(static_cast<const float *>(a.workspace) +
                                                       (size_t)a.cand_to_user[b] * a.M * a.N + off);
    uint4 *o = reinterpret_cast<uint4 *>(static_cast<elem_t *>(a.out) + b * a.M * a.N + off);
    union { uint4 u; elem2_t h[4]; } pk;
    pk.u = *o;
    float4 u0 = u[0], u1 = u[1];
    float2 x0 = unpack2(pk.h[0]), x1 = unpack2(pk.h[1]), x2 = unpack2(pk.h[2]), x3 = unpack2(pk.h[3]);
    pk.h[0] = pack2(x0.x + u0.x, x0.y + u0.y);
    pk.h[1] = pack2(x1.x + u0.z, x1.y + u0.w);
    pk.h[2] = pack2(x2.x + u1.x, x2.y + u1.y);
    pk.h[3] = pack2(x3.x + u1.z, x3.y + u1.w);
    *o = pk.u;
}
