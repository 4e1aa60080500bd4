// ikbo_lce_ref.cu — the GPU side of the ikbo_lce spec: input generation, the
// fp32 reference, the comparison, the gather that builds the stage-0
// baseline's pre-broadcast tensors, and the vendor peers' E with K padded.
// Compiled by kevo like a candidate, with DTYPE_BF16 set for the run's
// dtype; the ABI header and kernels/ref.cuh (the storage dtype, kv_gen, the
// evaluator's checks) are inlined in front, and vendor.cu (the vendor
// peers' broadcast-add and gather, which exported libraries launch too)
// after it (kevo_op_ref_render).
//
// kv_ref is written to be obviously right rather than fast: each thread
// owns a 4x4 block of outputs, the operands go through shared memory as
// fp32, and both K sums run in fp32 (products of fp16/bf16 values are exact
// in fp32).  It takes ~26 ms at the default shape on an H100, so the worker
// computes each check's reference with cuBLAS (kernels/ikbo_lce/gpu.c) and
// holds that to kv_ref once per worker start (kv_ref_diff).

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

// Stage-0 baseline inputs, what a PyTorch user builds before one bmm:
//   e_full[b] = cat(E_user[c2u[b]], E_cand[b]) along K   [B, Ku+Kc, N]
// 8 elements (16 bytes) per thread when N % 8 == 0 (every row starts
// 16-byte aligned), one otherwise.
extern "C" __global__ void kv_cat_e(const kevo_lce_args a, elem_t *e_full)
{
    const int K = a.Ku + a.Kc, N = a.N;
    if (N % 8 != 0) {
        const unsigned long long kn = (unsigned long long)K * N;
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < kn * a.B;
             i += (unsigned long long)gridDim.x * blockDim.x) {
            unsigned long long b = i / kn, off = i - b * kn;
            int k = (int)(off / N), n = (int)(off % N);
            e_full[i] = k < a.Ku
                ? static_cast<const elem_t *>(a.e_user)[((size_t)a.cand_to_user[b] * a.Ku + k) * N + n]
                : static_cast<const elem_t *>(a.e_cand)[((size_t)b * a.Kc + (k - a.Ku)) * N + n];
        }
        return;
    }
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

// The vendor peers' E with K padded, made once before they are timed:
// dst [batches, Kp, N] holds src [batches, K, N] with rows K..Kp-1 zero
// (K <= Kp), so that every batch and row of dst starts 16-byte aligned when
// N % 8 == 0 and cuBLASLt's TMA kernels can read it.  16 bytes per thread
// when N % 8 == 0, one element otherwise.
extern "C" __global__ void kv_pad_k(elem_t *dst, const elem_t *src, unsigned long long batches, int K, int Kp, int N)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const int per_row = N % 8 == 0 ? N / 8 : N; // units of a row: 16-byte vectors or elements
    const unsigned long long total = batches * (unsigned long long)Kp * per_row;
    for (unsigned long long i = first; i < total; i += stride) {
        const unsigned long long row = i / per_row, b = row / Kp;
        const int k = (int)(row - b * Kp), c = (int)(i - row * per_row);
        if (N % 8 == 0) {
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (k < K)
                v = __ldg(reinterpret_cast<const uint4 *>(src + ((size_t)b * K + k) * N + (size_t)c * 8));
            *reinterpret_cast<uint4 *>(dst + i * 8) = v;
        } else {
            dst[i] = k < K ? src[((size_t)b * K + k) * N + c] : from_f(0.0f);
        }
    }
}
