// lce_wgmma.cu — ikbo_lce on Hopper (sm_90a): TMA loads into a shared-memory
// ring gated by mbarriers, one producer warp group and CONSUMERS WGMMA
// consumer warp groups, the broadcast-add of user_res[cand_to_user[b]] in the
// candidate GEMM's epilogue.
//
//   producer (warp group 0, one thread): for each k-tile, wait until the slot
//     is empty, expect its bytes on the slot's full barrier, issue the TMA
//     copies of W (K-major, 128-byte swizzle) and E (N-major, 64-column boxes).
//   consumers (warp groups 1..CONSUMERS, 64 rows of the tile each): wait until
//     the slot is full, issue BK/16 wgmma.m64nBNk16 from shared memory (B
//     transposed: E is N-contiguous), keep one wgmma group in flight and
//     release the slot the previous group read.
//   epilogue: EPI=0 stores fragments directly; EPI=1 stages the fp32 tile in
//     shared memory and writes 16-byte rows.  The user GEMM (batch U) writes
//     fp32 user_res to the workspace; the candidate GEMM adds
//     user_res[cand_to_user[b]] before rounding to the storage dtype.
// Needs the padded-K layout: TMA reads W rows of 16-byte multiples, and the
// K tail (and the M tail) come from TMA's zero fill.

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef BN
#define BN 256
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef EPI
#define EPI 1
#endif
#ifndef RASTER
#define RASTER 0
#endif

#ifndef KEVO_HOPPER_CUH
#include "hopper.cuh" // kevo inlines it ahead of this file (space "include")
#endif

constexpr int BK = 64;                      // one 128-byte swizzle row of W
constexpr int BM = 64 * CONSUMERS;          // each consumer owns 64 rows
constexpr int NT = 128 * (CONSUMERS + 1);   // threads per block
constexpr int A_BYTES = BM * BK * 2;        // W tile per stage
constexpr int B_BYTES = BN * BK * 2;        // E tile per stage: BN/64 boxes of [BK][64]
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int NACC = BN / 2;                // fp32 accumulators per consumer thread
constexpr int CS_LD = BN + 8;               // staging row stride, floats
constexpr int PIPE_BYTES = STAGES * STAGE_BYTES;
constexpr int STAGING_BYTES = EPI ? CONSUMERS * 64 * CS_LD * 4 : 0;
constexpr int DATA_BYTES = PIPE_BYTES > STAGING_BYTES ? PIPE_BYTES : STAGING_BYTES;
constexpr int CONSUMER_REGS = CONSUMERS == 2 ? 232 : 240;

static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "BN must be 64, 128, 192 or 256");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warp groups");
static_assert(STAGES >= 2 && STAGES <= 8, "STAGES must be 2..8");
static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "stages must keep 1024-byte swizzle atoms aligned");

enum { OUT_USER_F32 = 0, OUT_CAND = 1 };

template <int MODE>
__device__ __forceinline__ void gemm_block(const kevo_lce_args &a)
{
    extern __shared__ unsigned char smem_raw[];
    // 1024-byte alignment for the swizzle atoms (the plan asks 1 KiB extra)
    const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    unsigned long long *full = reinterpret_cast<unsigned long long *>(smem + DATA_BYTES);
    unsigned long long *empty = full + STAGES;

    const void *tm_w;
    const void *tm_e;
    int K, batch;
    if (MODE == OUT_USER_F32) {
        tm_w = reinterpret_cast<const void *>(&a.tm_w_user);
        tm_e = reinterpret_cast<const void *>(&a.tm_e_user);
        K = a.Ku;
        batch = a.U;
    } else {
        tm_w = reinterpret_cast<const void *>(&a.tm_w_cand);
        tm_e = reinterpret_cast<const void *>(&a.tm_e_cand);
        K = a.Kc;
        batch = a.B;
    }
    const int M = a.M, N = a.N;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_batch = tiles_m * tiles_n;
    const int bb = blockIdx.x / per_batch, t = blockIdx.x % per_batch;
    if (bb >= batch)
        return;
#if RASTER == 0
    const int tm = t % tiles_m, tn = t / tiles_m;
#else
    const int tn = t % tiles_n, tm = t / tiles_n;
#endif
    const int m0 = tm * BM, n0 = tn * BN;
    const int KT = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&full[s]), 1);
            cuda::ptx::mbarrier_init(reinterpret_cast<uint64_t *>(&empty[s]), 4 * CONSUMERS);
        }
        cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                mbar_wait(&empty[s], ((kt / STAGES) & 1) ^ 1);
                uint64_t *bar = reinterpret_cast<uint64_t *>(&full[s]);
                cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                     cuda::ptx::space_shared, bar, STAGE_BYTES);
                unsigned char *as = smem + s * STAGE_BYTES;
                unsigned char *bs = as + A_BYTES;
                const int32_t ca[2] = {kt * BK, m0};
                cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, as, tm_w, ca, bar);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j) {
                    const int32_t cb[3] = {n0 + 64 * j, kt * BK, bb};
                    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                                    bs + j * (BK * 128), tm_e, cb, bar);
                }
            }
        }
    } else {
        // ---- consumers ----
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
        const int c = wg - 1, warp = tid / 32, lane = tid % 32;
        float acc[NACC];
#pragma unroll
        for (int i = 0; i < NACC; ++i)
            acc[i] = 0.0f;
        const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
        for (int kt = 0; kt < KT; ++kt) {
            const int s = kt % STAGES;
            mbar_wait(&full[s], (kt / STAGES) & 1);
            const unsigned as = base + s * STAGE_BYTES + c * 64 * 128; // this consumer's 64 rows
            const unsigned bs = base + s * STAGE_BYTES + A_BYTES;
            fence_acc(acc);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                // A: 16 columns = 32 bytes along the swizzled row; B: 16 rows of 128 bytes
                const unsigned long long da = sw128_desc(as + kk * 32, 16, 1024);
                const unsigned long long db = sw128_desc(bs + kk * 16 * 128, BK * 128, 1024);
                wgmma_ss<BN>(acc, da, db, 1);
            }
            wgmma_commit();
            wgmma_wait<1>();
            fence_acc(acc);
            // the group before this one is done: its slot may be refilled
            if (kt > 0 && lane == 0)
                cuda::ptx::mbarrier_arrive(reinterpret_cast<uint64_t *>(&empty[(kt - 1) % STAGES]));
        }
        wgmma_wait<0>();
        fence_acc(acc);

        const float *user = static_cast<const float *>(a.workspace);
        size_t user_base = 0;
        if (MODE == OUT_CAND)
            user_base = (size_t)a.cand_to_user[bb] * M * N;
        const int row0 = m0 + c * 64;
#if EPI == 0
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int gm = row0 + warp * 16 + (lane >> 2) + 8 * h;
                const int gn = n0 + 8 * j + 2 * (lane & 3);
                if (gm >= M || gn >= N)
                    continue;
                float x = acc[4 * j + 2 * h], y = acc[4 * j + 2 * h + 1];
                const size_t off = (size_t)gm * N + gn;
                if (MODE == OUT_USER_F32) {
                    float *ws = static_cast<float *>(a.workspace) + (size_t)bb * M * N;
                    *reinterpret_cast<float2 *>(ws + off) = make_float2(x, y);
                } else {
                    const float2 u = *reinterpret_cast<const float2 *>(user + user_base + off);
                    elem_t *out = static_cast<elem_t *>(a.out) + (size_t)bb * M * N;
                    *reinterpret_cast<elem2_t *>(out + off) = pack2(x + u.x, y + u.y);
                }
            }
#else
        // every consumer is past its last wgmma before the ring becomes staging space
        asm volatile("barrier.sync 1, %0;\n" ::"n"(CONSUMERS * 128) : "memory");
        float *cs = reinterpret_cast<float *>(smem) + c * 64 * CS_LD;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = warp * 16 + (lane >> 2) + 8 * h;
                const int col = 8 * j + 2 * (lane & 3);
                *reinterpret_cast<float2 *>(cs + r * CS_LD + col) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            }
        wg_sync(2 + c);
        constexpr int CHUNKS = 64 * BN / 8;
        for (int i = tid; i < CHUNKS; i += 128) {
            const int r = i / (BN / 8), col = (i % (BN / 8)) * 8;
            const int gm = row0 + r, gn = n0 + col;
            if (gm >= M || gn >= N)
                continue;
            float4 v0 = *reinterpret_cast<const float4 *>(cs + r * CS_LD + col);
            float4 v1 = *reinterpret_cast<const float4 *>(cs + r * CS_LD + col + 4);
            const size_t off = (size_t)gm * N + gn;
            if (MODE == OUT_USER_F32) {
                float4 *ws = reinterpret_cast<float4 *>(static_cast<float *>(a.workspace) + (size_t)bb * M * N + off);
                ws[0] = v0;
                ws[1] = v1;
            } else {
                const float4 *u = reinterpret_cast<const float4 *>(user + user_base + off);
                const float4 u0 = u[0], u1 = u[1];
                union { uint4 v; elem2_t h[4]; } pk;
                pk.h[0] = pack2(v0.x + u0.x, v0.y + u0.y);
                pk.h[1] = pack2(v0.z + u0.z, v0.w + u0.w);
                pk.h[2] = pack2(v1.x + u1.x, v1.y + u1.y);
                pk.h[3] = pack2(v1.z + u1.z, v1.w + u1.w);
                elem_t *out = static_cast<elem_t *>(a.out) + (size_t)bb * M * N;
                *reinterpret_cast<uint4 *>(out + off) = pk.v;
            }
        }
#endif
    }
}

// user_res[u] = W_user @ E_user[u], fp32, into the workspace.
extern "C" __global__ void __launch_bounds__(NT, 1) lce_user_gemm(const __grid_constant__ kevo_lce_args a)
{
    gemm_block<OUT_USER_F32>(a);
}

// out[b] = W_cand @ E_cand[b] + user_res[cand_to_user[b]].
extern "C" __global__ void __launch_bounds__(NT, 1) lce_cand_gemm(const __grid_constant__ kevo_lce_args a)
{
    gemm_block<OUT_CAND>(a);
}
