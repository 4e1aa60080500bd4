// ikbo_fa_ref.cu — the GPU side of the ikbo_fa spec: input generation, the
// fp32 reference, the comparison, and the stage-0 baseline's gather and row
// softmax.  Compiled by kevo like a candidate, with DTYPE_BF16 set for the
// run's dtype; the ABI header (kernels/ikbo_fa/abi.h) is inlined in front.
//
// The storage dtype, the input generator (kv_gen) and the evaluator's checks
// (kv_checksum, kv_sumsq, kv_compare) are kernels/ref.cuh's, inlined ahead of
// this file with the ABI header.
//
// The reference, two ways, both exact fp32 softmax with the row max
// subtracted, P never rounded to the storage dtype, both products
// accumulated in fp32:
// - kv_fa_ref_d*: online (one pass over K/V: O and l rescaled by
//   exp(m_old - m_new) when the max grows), tiled through shared memory as
//   fp32, 64 query rows by 64 keys per step, each thread 4x4 scores and
//   4 x D/16 outputs (27 ms at the default shape on an H100);
// - the cuBLAS reference (kernels/ikbo_fa/gpu.c), which every check uses
//   where it fits: S = Q K^T in fp32 (batched over candidates through
//   pointer arrays, kv_fa_ptrs), then either P as FA_TERMS storage-dtype
//   terms (kv_fa_softmax_terms) and O = sum over terms and over chunks of
//   FA_PV_KEYS keys of term V, each a tensor-core GEMM accumulating in fp32
//   into O through its epilogue (kv_fa_ptrs_pv), or, where that one
//   disagrees with kv_fa_ref_d*, P = softmax in place (kv_fa_softmax32) and
//   O = P V in fp32 with V widened to fp32 (kv_to_f32).  Each worker holds
//   it to kv_fa_ref_d* once, when it starts.

#define FA_NEG_INF __int_as_float(0xff800000) // -inf (NVRTC has no <math.h> INFINITY)

// ---- the fp32 reference ----

#define FA_BM 64             // query rows per tile
#define FA_BN 64             // keys per step
#define FA_LD (FA_BM + 4)    // row stride of the transposed tiles (floats; float4-aligned)

// Shared memory of kv_fa_ref_d<D>, bytes (the host asks for the same:
// kernels/ikbo_fa/gpu.c): Q^T [D][FA_LD], K^T [D][FA_LD] (V [FA_BN][D] in
// the same place later), P^T [FA_BN][FA_LD], all fp32.
#define FA_REF_SMEM(D) ((2 * (D) + FA_BN) * FA_LD * 4)

// f[0..8) = the 8 storage elements at p (16 bytes), or zeros when !ok.
__device__ __forceinline__ void fa_load8(const elem_t *p, bool ok, float (&f)[8])
{
    if (!ok) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
            f[e] = 0.0f;
        return;
    }
    const uint4 raw = *reinterpret_cast<const uint4 *>(p);
    const elem_t *x = reinterpret_cast<const elem_t *>(&raw);
#pragma unroll
    for (int e = 0; e < 8; ++e)
        f[e] = to_f(x[e]);
}

// rows [row0, row0 + 64) (zeros past nrows) of a [rows, H, D] tensor at
// head offset src (the head's first row), transposed into t[D][FA_LD].
template <int D>
__device__ __forceinline__ void fa_load_t(float *t, const elem_t *src, size_t row, int row0, int nrows)
{
    for (int i = threadIdx.x; i < FA_BM * (D / 8); i += 256) {
        const int r = i % FA_BM, d0 = (i / FA_BM) * 8; // consecutive threads: consecutive rows, no bank conflicts
        float f[8];
        fa_load8(src + (size_t)(row0 + r) * row + d0, row0 + r < nrows, f);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            t[(d0 + e) * FA_LD + r] = f[e];
    }
}

// One tile: candidate c, head h, query rows [m0, m0 + 64) into ref.
template <int D>
__device__ void fa_ref_tile(const kevo_fa_args &a, float *ref, long long c, int h, int m0, float *sm)
{
    constexpr int DC = D / 16; // output columns per thread: jj*64 + tx*4 + e
    float *qt = sm;            // [D][FA_LD]
    float *kv = qt + D * FA_LD; // K^T [D][FA_LD], then V [FA_BN][D]
    float *pt = kv + D * FA_LD; // P^T [FA_BN][FA_LD]
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int Sq = a.Sq, Skv = a.Skv;
    const size_t row = (size_t)a.H * D;
    const int u = a.cand_to_user[c];
    const elem_t *q = static_cast<const elem_t *>(a.q) + (size_t)c * Sq * row + (size_t)h * D;
    const elem_t *k = static_cast<const elem_t *>(a.k) + (size_t)u * Skv * row + (size_t)h * D;
    const elem_t *v = static_cast<const elem_t *>(a.v) + (size_t)u * Skv * row + (size_t)h * D;

    float o[4][DC], m[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        m[i] = FA_NEG_INF;
        l[i] = 0.0f;
#pragma unroll
        for (int j = 0; j < DC; ++j)
            o[i][j] = 0.0f;
    }
    fa_load_t<D>(qt, q, row, m0, Sq);

    for (int n0 = 0; n0 < Skv; n0 += FA_BN) {
        __syncthreads(); // the previous step's reads of kv and pt are done
        fa_load_t<D>(kv, k, row, n0, Skv);
        __syncthreads();

        // s = Q K^T for rows ty*4+i, keys tx*4+j
        float s[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
                s[i][j] = 0.0f;
#pragma unroll 4
        for (int d = 0; d < D; ++d) {
            const float4 qa = *reinterpret_cast<const float4 *>(&qt[d * FA_LD + ty * 4]);
            const float4 kb = *reinterpret_cast<const float4 *>(&kv[d * FA_LD + tx * 4]);
            const float qv[4] = {qa.x, qa.y, qa.z, qa.w}, kw[4] = {kb.x, kb.y, kb.z, kb.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    s[i][j] = fmaf(qv[i], kw[j], s[i][j]);
        }

        // online softmax: the 16 threads of a row (one half-warp) agree on
        // its max and sum through xor shuffles (every lane gets the same bits)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            float mx = FA_NEG_INF;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                s[i][j] = n0 + tx * 4 + j < Skv ? s[i][j] * a.scale : FA_NEG_INF;
                mx = fmaxf(mx, s[i][j]);
            }
#pragma unroll
            for (int off = 8; off > 0; off >>= 1)
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float mn = fmaxf(m[i], mx); // finite: key n0 is in every step
            const float alpha = expf(m[i] - mn); // 0 on the first step (m = -inf)
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                s[i][j] = expf(s[i][j] - mn); // masked keys: exp(-inf) = 0
                sum += s[i][j];
            }
#pragma unroll
            for (int off = 8; off > 0; off >>= 1)
                sum += __shfl_xor_sync(0xffffffffu, sum, off);
            l[i] = l[i] * alpha + sum;
            m[i] = mn;
#pragma unroll
            for (int j = 0; j < DC; ++j)
                o[i][j] *= alpha;
        }
        __syncthreads(); // every read of K^T is done: V may take its place

        // P^T (one float4 of rows per key), V [FA_BN][D]
#pragma unroll
        for (int j = 0; j < 4; ++j)
            *reinterpret_cast<float4 *>(&pt[(tx * 4 + j) * FA_LD + ty * 4]) =
                make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
        for (int i = tid; i < FA_BN * (D / 8); i += 256) {
            const int n = i / (D / 8), d0 = (i % (D / 8)) * 8;
            float f[8];
            fa_load8(v + (size_t)(n0 + n) * row + d0, n0 + n < Skv, f);
            *reinterpret_cast<float4 *>(&kv[n * D + d0]) = make_float4(f[0], f[1], f[2], f[3]);
            *reinterpret_cast<float4 *>(&kv[n * D + d0 + 4]) = make_float4(f[4], f[5], f[6], f[7]);
        }
        __syncthreads();

        // O += P V
#pragma unroll 4
        for (int n = 0; n < FA_BN; ++n) {
            const float4 pa = *reinterpret_cast<const float4 *>(&pt[n * FA_LD + ty * 4]);
            const float pv[4] = {pa.x, pa.y, pa.z, pa.w};
#pragma unroll
            for (int jj = 0; jj < DC / 4; ++jj) {
                const float4 vb = *reinterpret_cast<const float4 *>(&kv[n * D + jj * 64 + tx * 4]);
                const float vw[4] = {vb.x, vb.y, vb.z, vb.w};
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        o[i][jj * 4 + e] = fmaf(pv[i], vw[e], o[i][jj * 4 + e]);
            }
        }
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = m0 + ty * 4 + i;
        if (r >= Sq)
            continue;
        float *dst = ref + ((size_t)c * Sq + r) * row + (size_t)h * D;
        const float inv = 1.0f / l[i];
#pragma unroll
        for (int jj = 0; jj < DC / 4; ++jj)
            *reinterpret_cast<float4 *>(&dst[jj * 64 + tx * 4]) =
                make_float4(o[i][jj * 4] * inv, o[i][jj * 4 + 1] * inv, o[i][jj * 4 + 2] * inv, o[i][jj * 4 + 3] * inv);
    }
}

// ref = the op on the current inputs in fp32 (out's layout).  Block: 256
// threads; any grid (a grid-stride loop over the Bc * H * cdiv(Sq, 64)
// tiles, rows fastest, then heads, then candidates); dynamic shared memory
// FA_REF_SMEM(D).
template <int D>
__device__ void fa_ref(const kevo_fa_args &a, float *ref)
{
    extern __shared__ float4 fa_smem4[];
    float *sm = reinterpret_cast<float *>(fa_smem4);
    const int mt = (a.Sq + FA_BM - 1) / FA_BM;
    const long long ntiles = (long long)a.Bc * a.H * mt;
    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int m0 = (int)(t % mt) * FA_BM;
        const int h = (int)((t / mt) % a.H);
        const long long c = t / ((long long)mt * a.H);
        fa_ref_tile<D>(a, ref, c, h, m0, sm);
        __syncthreads(); // the next tile's Q^T load waits for this one's reads
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) kv_fa_ref_d64(const kevo_fa_args a, float *ref)
{
    fa_ref<64>(a, ref);
}

extern "C" __global__ void __launch_bounds__(256, 2) kv_fa_ref_d128(const kevo_fa_args a, float *ref)
{
    fa_ref<128>(a, ref);
}

// ---- the stage-0 baseline (kernels/ikbo_fa/gpu.c) ----

// What a framework builds before attention: dst[c*Skv + j] = src[c2u[c]*Skv
// + j] for c < Bc, j < Skv, rows of row_elems elements (H * D, a multiple of
// 8), 16 bytes per thread.  src [U*Skv, H, D], dst [Bc*Skv, H, D].
extern "C" __global__ void kv_fa_gather(const elem_t *src, const int *c2u, int Bc, int Skv,
                                        unsigned long long row_elems, elem_t *dst)
{
    const unsigned long long per_c = (unsigned long long)Skv * row_elems / 8; // 16-byte pieces per candidate
    const unsigned long long total = per_c * Bc;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long c = i / per_c, off = (i % per_c) * 8;
        *reinterpret_cast<uint4 *>(dst + c * per_c * 8 + off) =
            *reinterpret_cast<const uint4 *>(src + (unsigned long long)c2u[c] * per_c * 8 + off);
    }
}

// x reduced over the block (max or sum); every thread gets the result.
// red: blockDim.x / 32 floats of shared memory.
__device__ float fa_block_reduce(float x, bool is_max, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float y = __shfl_xor_sync(0xffffffffu, x, o);
        x = is_max ? fmaxf(x, y) : x + y;
    }
    __syncthreads(); // red's previous readers are done
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = x;
    __syncthreads();
    x = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
        x = is_max ? fmaxf(x, red[w]) : x + red[w];
    return x;
}

// P's terms (kv_fa_softmax_terms): FA_TERMS numbers of the storage dtype
// whose sum is P * FA_TERM_SCALE to 24 bits (bf16: three of 8) or 22 (fp16:
// two of 11, P scaled by 2^15 so that the second stays normal down to P =
// 2^-29).  kernels/ikbo_fa/gpu.c mirrors both.
#if DTYPE_BF16
#define FA_TERMS 3
#define FA_TERM_SCALE 1.0f
#else
#define FA_TERMS 2
#define FA_TERM_SCALE 32768.0f
#endif

// Where fa_softmax_rows puts P[r][j]: rounded to the storage dtype once (the
// baseline's), in fp32, or as FA_TERMS terms `stride` elements apart.
struct fa_out_elem {
    elem_t *p;
    __device__ void operator()(unsigned long long at, float v) const { p[at] = from_f(v); }
};
struct fa_out_f32 {
    float *p;
    __device__ void operator()(unsigned long long at, float v) const { p[at] = v; }
};
struct fa_out_terms {
    elem_t *p;
    unsigned long long stride;
    __device__ void operator()(unsigned long long at, float v) const
    {
        float x = v * FA_TERM_SCALE;
#pragma unroll
        for (int t = 0; t < FA_TERMS; ++t) {
            const elem_t e = from_f(x);
            p[t * stride + at] = e;
            x -= to_f(e); // exact: e is x rounded to fewer bits
        }
    }
};

// For each of `rows` rows of Skv fp32 scores s, p = exp(scale*s -
// max(scale*s)) / sum in fp32, given to out at r*Skv + j (which may write
// over s: each element is read by the thread that writes it, after the
// row's max and sum).  Block: a multiple of 32 threads, at most 1024; one
// row per block at a time (grid-stride).
template <typename Out>
__device__ void fa_softmax_rows(const float *s, Out out, unsigned long long rows, int Skv, float scale)
{
    __shared__ float red[32];
    for (unsigned long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *sr = s + r * Skv;
        float m = FA_NEG_INF;
        for (int j = threadIdx.x; j < Skv; j += blockDim.x)
            m = fmaxf(m, sr[j] * scale);
        m = fa_block_reduce(m, true, red);
        float l = 0.0f;
        for (int j = threadIdx.x; j < Skv; j += blockDim.x)
            l += expf(sr[j] * scale - m);
        l = fa_block_reduce(l, false, red);
        const float inv = 1.0f / l;
        for (int j = threadIdx.x; j < Skv; j += blockDim.x)
            out(r * Skv + j, expf(sr[j] * scale - m) * inv);
    }
}

// The baseline's softmax, what a framework runs between its two GEMMs: P
// rounded once to the storage dtype.
extern "C" __global__ void kv_fa_softmax(const float *s, elem_t *p, unsigned long long rows, int Skv, float scale)
{
    fa_softmax_rows(s, fa_out_elem{p}, rows, Skv, scale);
}

// ---- the cuBLAS reference (kernels/ikbo_fa/gpu.c) ----

// The reference's softmax: P in fp32, in place of S.
extern "C" __global__ void kv_fa_softmax32(float *s, unsigned long long rows, int Skv, float scale)
{
    fa_softmax_rows(s, fa_out_f32{s}, rows, Skv, scale);
}

// The reference's softmax for P V on tensor cores: P's FA_TERMS terms, term
// t at terms + t * stride (stride >= rows * Skv).
extern "C" __global__ void kv_fa_softmax_terms(const float *s, elem_t *terms, unsigned long long rows, int Skv,
                                               float scale, unsigned long long stride)
{
    fa_softmax_rows(s, fa_out_terms{terms, stride}, rows, Skv, scale);
}

// dst[i] = src[i] widened to fp32, i < n.
extern "C" __global__ void kv_to_f32(const elem_t *src, float *dst, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        dst[i] = to_f(src[i]);
}

// The pointer arrays of head h's batched GEMMs for candidates c0 .. c0+nc-1
// (candidate c0+i, user u = c2u[c0+i]; row = H*D elements):
//   out[0*nc + i] = k + (u*Skv*row + h*D)*2     out[3*nc + i] = v32 + (u*Skv*row + h*D)*4
//   out[1*nc + i] = q + ((c0+i)*Sq*row + h*D)*2 out[4*nc + i] = s + i*Sq*Skv*4
//   out[2*nc + i] = s + i*Sq*Skv*4              out[5*nc + i] = ref + ((c0+i)*Sq*row + h*D)*4
// (the first three for S = Q K^T, the last three for O = P V).
extern "C" __global__ void kv_fa_ptrs(const int *c2u, long long c0, int nc, int h, int Sq, int Skv, int H, int D,
                                      unsigned long long k, unsigned long long q, unsigned long long s,
                                      unsigned long long v32, unsigned long long ref, unsigned long long *out)
{
    const unsigned long long row = (unsigned long long)H * D, sq = (unsigned long long)Sq * Skv;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nc; i += gridDim.x * blockDim.x) {
        const unsigned long long c = (unsigned long long)(c0 + i), u = (unsigned long long)c2u[c0 + i];
        const unsigned long long kv_off = u * Skv * row + (unsigned long long)h * D;
        const unsigned long long q_off = c * Sq * row + (unsigned long long)h * D;
        out[i] = k + kv_off * 2;
        out[nc + i] = q + q_off * 2;
        out[2 * nc + i] = s + i * sq * 4;
        out[3 * nc + i] = v32 + kv_off * 4;
        out[4 * nc + i] = s + i * sq * 4;
        out[5 * nc + i] = ref + q_off * 4;
    }
}

// The pointer arrays of one GEMM of P V on tensor cores: head h, candidates
// c0 .. c0+nc-1 (user u = c2u[c0+i]), keys j0 .. of one term of P (terms:
// that term's [nc, Sq, Skv]):
//   out[0*nc + i] = v + ((u*Skv + j0)*row + h*D)*2   (V_u^T's columns j0 ..)
//   out[1*nc + i] = terms + (i*Sq*Skv + j0)*2        (P_c^T's rows j0 ..)
//   out[2*nc + i] = ref + ((c0+i)*Sq*row + h*D)*4    (O_c^T)
extern "C" __global__ void kv_fa_ptrs_pv(const int *c2u, long long c0, int nc, int h, int Sq, int Skv, int H, int D,
                                         int j0, unsigned long long v, unsigned long long terms,
                                         unsigned long long ref, unsigned long long *out)
{
    const unsigned long long row = (unsigned long long)H * D, sq = (unsigned long long)Sq * Skv;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nc; i += gridDim.x * blockDim.x) {
        const unsigned long long c = (unsigned long long)(c0 + i), u = (unsigned long long)c2u[c0 + i];
        out[i] = v + ((u * Skv + j0) * row + (unsigned long long)h * D) * 2;
        out[nc + i] = terms + (i * sq + j0) * 2;
        out[2 * nc + i] = ref + (c * Sq * row + (unsigned long long)h * D) * 4;
    }
}
