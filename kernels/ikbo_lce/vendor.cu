// vendor.cu — the small kernels of ikbo_lce's vendor forms (the peers
// `decomposed` and `beta1`: cuBLASLt GEMMs around them): the broadcast-add
// and the gather of the user GEMM's result.  One file for the two places
// that run them: the GPU worker times them (kevo_op_ref_render appends this
// file to the reference module) and `kevo export` compiles it with NVRTC
// after kernels/ref.cuh (the storage dtype, DTYPE_BF16) for each arch and
// dtype whose tuned shapes dispatch to a vendor form, and embeds the cubin,
// so an exported library launches the very code that was timed.  Needs only
// elem_t, to_f and from_f (kernels/ref.cuh).

// The decomposed peer's third step, what a PyTorch user writes after two
// bmm calls: out[b] += user_res[c2u[b]], both [.., M, N] in the storage
// dtype, the sum in fp32 rounded once.  8 elements (16 bytes) per thread
// when M*N % 8 == 0 (every batch's rows start 16-byte aligned), one
// otherwise.
extern "C" __global__ void kv_bcast_add(elem_t *out, const elem_t *user_res, const int *c2u, int B, int M, int N)
{
    const unsigned long long mn = (unsigned long long)M * N;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (mn % 8 != 0) {
        for (unsigned long long i = first; i < mn * B; i += stride) {
            const unsigned long long b = i / mn;
            out[i] = from_f(to_f(out[i]) + to_f(user_res[(size_t)c2u[b] * mn + (i - b * mn)]));
        }
        return;
    }
    const unsigned long long per_b = mn / 8;
    const unsigned long long total = per_b * B;
    for (unsigned long long i = first; i < total; i += stride) {
        const unsigned long long b = i / per_b, off = (i % per_b) * 8;
        uint4 o = *reinterpret_cast<const uint4 *>(out + b * mn + off);
        const uint4 u = __ldg(reinterpret_cast<const uint4 *>(user_res + (size_t)c2u[b] * mn + off));
        elem_t *ov = reinterpret_cast<elem_t *>(&o);
        const elem_t *uv = reinterpret_cast<const elem_t *>(&u);
#pragma unroll
        for (int j = 0; j < 8; ++j)
            ov[j] = from_f(to_f(ov[j]) + to_f(uv[j]));
        *reinterpret_cast<uint4 *>(out + b * mn + off) = o;
    }
}

// The beta = 1 peer's second step, what torch.index_select does before
// torch.baddbmm accumulates the candidate GEMM onto it: out[b] =
// user_res[c2u[b]], both [.., M*N] in the storage dtype (mn elements a
// batch, B batches).  16 bytes per thread when mn % 8 == 0 (every batch
// starts 16-byte aligned in both), one element otherwise.
extern "C" __global__ void kv_gather_user(elem_t *out, const elem_t *user_res, const int *c2u, int B,
                                          unsigned long long mn)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (mn % 8 != 0) {
        for (unsigned long long i = first; i < mn * B; i += stride) {
            const unsigned long long b = i / mn;
            out[i] = user_res[(size_t)c2u[b] * mn + (i - b * mn)];
        }
        return;
    }
    const unsigned long long per_b = mn / 8, total = per_b * B;
    for (unsigned long long i = first; i < total; i += stride) {
        const unsigned long long b = i / per_b, off = (i - b * per_b) * 8;
        *reinterpret_cast<uint4 *>(out + b * mn + off) =
            __ldg(reinterpret_cast<const uint4 *>(user_res + (size_t)c2u[b] * mn + off));
    }
}
