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
#ifndef DTYPE_BF16
#define DTYPE_BF16 0
#endif

#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

#if DTYPE_BF16
typedef __nv_bfloat16 elem_t;
typedef __nv_bfloat162 elem2_t;
#define MMA_AB "bf16"
__device__ __forceinline__ elem2_t pack2(float x, float y) { return __floats2bfloat162_rn(x, y); }
#else
typedef __half elem_t;
typedef __half2 elem2_t;
#define MMA_AB "f16"
__device__ __forceinline__ elem2_t pack2(float x, float y) { return __floats2half2_rn(x, y); }
#endif

// ---- WGMMA: no CUDA wrapper exists, so inline PTX (sm_90a) ----
// Shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix
// Descriptor Format"): start address, leading and stride byte offsets, >> 4.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
           ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." MMA_AB "." MMA_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." MMA_AB "." MMA_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_n192(float (&d)[96], unsigned long long da, unsigned long long db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32." MMA_AB "." MMA_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." MMA_AB "." MMA_AB " "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(scale_d));
}

// D += A[64 x 16] B[16 x BN], A K-major, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_tile(float (&d)[NACC], unsigned long long da, unsigned long long db)
{
#if BN == 64
    wgmma_n64(d, da, db, 1);
#elif BN == 128
    wgmma_n128(d, da, db, 1);
#elif BN == 192
    wgmma_n192(d, da, db, 1);
#else
    wgmma_n256(d, da, db, 1);
#endif
}

__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity)
{
    while (!cuda::ptx::mbarrier_try_wait_parity(reinterpret_cast<uint64_t *>(bar), parity)) {
    }
}

// Named barrier for the 128 threads of one consumer warp group (ids 1..).
__device__ __forceinline__ void wg_sync(int id)
{
    asm volatile("barrier.sync %0, 128;\n" ::"r"(id) : "memory");
}

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
                wgmma_tile(acc, da, db);
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
