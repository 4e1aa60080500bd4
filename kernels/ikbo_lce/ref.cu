// ikbo_lce_ref.cu — the GPU side of the ikbo_lce spec: input generation, the
// fp32 reference, the comparison, and the gather that builds the stage-0
// baseline's pre-broadcast tensors.  Compiled by kevo like a candidate, with
// DTYPE_BF16 set for the run's dtype; the ABI header is inlined in front.
//
// kv_ref is written to be obviously right rather than fast: each thread
// owns a 4x4 block of outputs, the operands go through shared memory as
// fp32, and both K sums run in fp32 (products of fp16/bf16 values are exact
// in fp32).  It takes ~26 ms at the default shape on an H100, so the worker
// computes each check's reference with cuBLAS (kernels/ikbo_lce/gpu.c) and
// holds that to kv_ref once per worker start (kv_ref_diff).

#ifndef DTYPE_BF16
#define DTYPE_BF16 0
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if DTYPE_BF16
typedef __nv_bfloat16 elem_t;
#define GEN_Q 128
__device__ __forceinline__ float to_f(elem_t v) { return __bfloat162float(v); }
__device__ __forceinline__ elem_t from_f(float v) { return __float2bfloat16_rn(v); }
#else
typedef __half elem_t;
#define GEN_Q 1024
__device__ __forceinline__ float to_f(elem_t v) { return __half2float(v); }
__device__ __forceinline__ elem_t from_f(float v) { return __float2half_rn(v); }
#endif

// Same arithmetic as kevo_lce_gen_value() in kernels/ikbo_lce.c.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}
__device__ __forceinline__ elem_t gen_value(unsigned long long stream, unsigned long long idx)
{
    unsigned long long h = mix64(stream ^ idx);
    int k = (int)(h % (unsigned long long)(2 * GEN_Q)) - GEN_Q;
    return from_f((float)k / (float)GEN_Q);
}
__device__ __forceinline__ unsigned long long gen_stream(unsigned long long seed, unsigned tensor)
{
    return mix64(seed + 0x9e3779b97f4a7c15ull * ((unsigned long long)tensor + 1));
}

// dst[i] = value(seed, tensor, i) for i < count.
extern "C" __global__ void kv_gen(elem_t *dst, unsigned long long count, unsigned long long seed, unsigned tensor)
{
    const unsigned long long s = gen_stream(seed, tensor);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x)
        dst[i] = gen_value(s, i);
}

// The same matrix [rows, cols] with rows padded to ld elements: dst[r*ld+c]
// holds value(seed, tensor, r*cols+c) for c < cols, zero for cols <= c < ld.
extern "C" __global__ void kv_gen_padded(elem_t *dst, int rows, int cols, int ld, unsigned long long seed,
                                         unsigned tensor)
{
    const unsigned long long s = gen_stream(seed, tensor);
    const unsigned long long count = (unsigned long long)rows * ld;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        int r = (int)(i / ld), c = (int)(i % ld);
        dst[i] = c < cols ? gen_value(s, (unsigned long long)r * cols + c) : from_f(0.0f);
    }
}

// ref[b][m][n] = sum_k Wc[m][k] Ec[b][k][n] + sum_k Wu[m][k] Eu[c2u[b]][k][n]
// for b = b0 + blockIdx.z, stored at ref[blockIdx.z] (a run of batches from
// b0; natural layouts: ldw_* are read, so padded weights work too).
// Block: 16x16 threads, 64x64 outputs; grid (cdiv(N,64), cdiv(M,64), batches).
#define RT 64
#define RK 16
__device__ void ref_accumulate(float (&acc)[4][4], const elem_t *w, int ldw, const elem_t *e, int K, int M, int N,
                               int m0, int n0, float (&ws)[RT][RK + 1], float (&es)[RK][RT + 1])
{
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    for (int k0 = 0; k0 < K; k0 += RK) {
        for (int i = tid; i < RT * RK; i += 256) {
            int r = i / RK, c = i % RK;
            int gm = m0 + r, gk = k0 + c;
            ws[r][c] = (gm < M && gk < K) ? to_f(w[(size_t)gm * ldw + gk]) : 0.0f;
        }
        for (int i = tid; i < RK * RT; i += 256) {
            int r = i / RT, c = i % RT;
            int gk = k0 + r, gn = n0 + c;
            es[r][c] = (gk < K && gn < N) ? to_f(e[(size_t)gk * N + gn]) : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < RK; ++kk)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j)
                    acc[i][j] = fmaf(ws[ty * 4 + i][kk], es[kk][tx * 4 + j], acc[i][j]);
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(256) kv_ref(const kevo_lce_args a, float *ref, int b0)
{
    __shared__ float ws[RT][RK + 1];
    __shared__ float es[RK][RT + 1];
    const int b = b0 + blockIdx.z, m0 = blockIdx.y * RT, n0 = blockIdx.x * RT;
    const int M = a.M, N = a.N;
    const int u = a.cand_to_user[b];
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            acc[i][j] = 0.0f;
    ref_accumulate(acc, static_cast<const elem_t *>(a.w_cand), a.ldw_cand,
                   static_cast<const elem_t *>(a.e_cand) + (size_t)b * a.Kc * N, a.Kc, M, N, m0, n0, ws, es);
    ref_accumulate(acc, static_cast<const elem_t *>(a.w_user), a.ldw_user,
                   static_cast<const elem_t *>(a.e_user) + (size_t)u * a.Ku * N, a.Ku, M, N, m0, n0, ws, es);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            int gm = m0 + threadIdx.y * 4 + i, gn = n0 + threadIdx.x * 4 + j;
            if (gm < M && gn < N)
                ref[((size_t)blockIdx.z * M + gm) * N + gn] = acc[i][j];
        }
}

// One warp's partial sums a, b, c and maximum m (non-negative) added to
// *sa, *sb, *sc and folded into *sm (as the bits of a double) by lane 0.
__device__ __forceinline__ void warp_flush(double a, double m, double b, double c, double *sa, double *sm, double *sb,
                                           double *sc)
{
    for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, o);
        m = fmax(m, __shfl_down_sync(0xffffffffu, m, o));
        b += __shfl_down_sync(0xffffffffu, b, o);
        c += __shfl_down_sync(0xffffffffu, c, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sa, a);
        atomicMax(reinterpret_cast<unsigned long long *>(sm), (unsigned long long)__double_as_longlong(m));
        atomicAdd(sb, b);
        atomicAdd(sc, c);
    }
}

// The user half of the cuBLAS reference: ref[b] += user[c2u[b]], both fp32,
// ref [B, M*N] and user [U, M*N].
extern "C" __global__ void kv_ref_add_user(float *ref, const float *user, const int *c2u, int B,
                                           unsigned long long mn)
{
    const unsigned long long total = (unsigned long long)B * mn;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long b = i / mn;
        ref[i] += user[(unsigned long long)c2u[b] * mn + (i - b * mn)];
    }
}

// Two fp32 references, x against y (kv_ref's):
//   stats[0] += sum (x-y)^2 over pairs both finite
//   stats[1]  = max |x-y| (as the bits of a non-negative double)
//   stats[2] += sum y^2
//   stats[3] += count of pairs with a non-finite value
extern "C" __global__ void kv_ref_diff(const float *x, const float *y, unsigned long long n, double *stats)
{
    double d2 = 0.0, dmax = 0.0, y2 = 0.0, nonfinite = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float a = x[i], b = y[i];
        if (!isfinite(a) || !isfinite(b)) {
            nonfinite += 1.0;
            continue;
        }
        const double d = fabs((double)a - (double)b);
        d2 += d * d;
        dmax = fmax(dmax, d);
        y2 += (double)b * b;
    }
    warp_flush(d2, dmax, y2, nonfinite, &stats[0], &stats[1], &stats[2], &stats[3]);
}

// *sum += a position-weighted checksum of n 32-bit words (each word times an
// odd multiplier of its index, wrapping mod 2^64, salted per tensor), so a
// changed, moved or swapped word changes it: after a candidate's checked run
// the inputs must sum as before (a kernel that writes its inputs fails).
extern "C" __global__ void kv_checksum(const unsigned *p, unsigned long long n, unsigned long long salt,
                                       unsigned long long *sum)
{
    unsigned long long s = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        s += ((unsigned long long)p[i] + 1ull) * (((i + salt) * 0x9e3779b97f4a7c15ull) | 1ull);
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, s);
}

// stats[0] += sum ref^2 (first pass, before the tolerance is known).
extern "C" __global__ void kv_sumsq(const float *ref, unsigned long long n, double *stats)
{
    double s = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        s += (double)ref[i] * ref[i];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(&stats[0], s);
}

// Compare out (storage dtype) with ref (fp32):
//   stats[1] += sum (out-ref)^2 over finite outputs
//   stats[2]  = max |out-ref| (as the bits of a non-negative double)
//   stats[3] += count of |out-ref| > rtol*|ref| + atol
//   stats[4] += count of NaN/Inf outputs (poisoned elements never written land here)
extern "C" __global__ void kv_compare(const elem_t *out, const float *ref, unsigned long long n, float rtol,
                                      float atol, double *stats)
{
    double d2 = 0.0, dmax = 0.0, bad = 0.0, nonfinite = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float o = to_f(out[i]), r = ref[i];
        if (!isfinite(o)) {
            nonfinite += 1.0;
            continue;
        }
        double d = fabs((double)o - (double)r);
        d2 += d * d;
        dmax = fmax(dmax, d);
        if (d > (double)rtol * fabs((double)r) + (double)atol)
            bad += 1.0;
    }
    warp_flush(d2, dmax, bad, nonfinite, &stats[1], &stats[2], &stats[3], &stats[4]);
}

// Stage-0 baseline inputs, what a PyTorch user builds before one bmm:
//   e_full[b] = cat(E_user[c2u[b]], E_cand[b]) along K   [B, Ku+Kc, N]
// 8 elements (16 bytes) per thread; N % 8 == 0.
extern "C" __global__ void kv_cat_e(const kevo_lce_args a, elem_t *e_full)
{
    const int K = a.Ku + a.Kc, N = a.N;
    const unsigned long long per_b = (unsigned long long)K * N / 8;
    const unsigned long long total = per_b * a.B;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long b = i / per_b, off = (i % per_b) * 8;
        int k = (int)(off / N), n = (int)(off % N);
        const elem_t *src = k < a.Ku
            ? static_cast<const elem_t *>(a.e_user) + ((size_t)a.cand_to_user[b] * a.Ku + k) * N + n
            : static_cast<const elem_t *>(a.e_cand) + ((size_t)b * a.Kc + (k - a.Ku)) * N + n;
        *reinterpret_cast<uint4 *>(e_full + b * K * N + off) = *reinterpret_cast<const uint4 *>(src);
    }
}

//   w_full = cat(W_user, W_cand) along K   [M, Ku+Kc]   (natural layouts)
extern "C" __global__ void kv_cat_w(const kevo_lce_args a, elem_t *w_full)
{
    const int K = a.Ku + a.Kc;
    const unsigned long long total = (unsigned long long)a.M * K;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        int m = (int)(i / K), k = (int)(i % K);
        w_full[i] = k < a.Ku ? static_cast<const elem_t *>(a.w_user)[(size_t)m * a.ldw_user + k]
                             : static_cast<const elem_t *>(a.w_cand)[(size_t)m * a.ldw_cand + (k - a.Ku)];
    }
}

// The decomposed peer's third step, what a PyTorch user writes after two
// bmm calls: out[b] += user_res[c2u[b]], both [.., M, N] in the storage
// dtype, the sum in fp32 rounded once.  8 elements (16 bytes) per thread;
// N % 8 == 0.
extern "C" __global__ void kv_bcast_add(elem_t *out, const elem_t *user_res, const int *c2u, int B, int M, int N)
{
    const unsigned long long per_b = (unsigned long long)M * N / 8;
    const unsigned long long total = per_b * B;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long b = i / per_b, off = (i % per_b) * 8;
        uint4 o = *reinterpret_cast<const uint4 *>(out + b * per_b * 8 + off);
        const uint4 u = __ldg(reinterpret_cast<const uint4 *>(user_res + (size_t)c2u[b] * per_b * 8 + off));
        elem_t *ov = reinterpret_cast<elem_t *>(&o);
        const elem_t *uv = reinterpret_cast<const elem_t *>(&u);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            ov[j] = from_f(to_f(ov[j]) + to_f(uv[j]));
        *reinterpret_cast<uint4 *>(out + b * per_b * 8 + off) = o;
    }
}
