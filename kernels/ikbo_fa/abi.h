/* ikbo_fa abi.h — the parameter struct every ikbo_fa kernel entry takes.
 *
 * Shared by host C (kevo's evaluator, the exported library) and device code
 * (handed to NVRTC in front of every ikbo_fa template), so it uses only
 * built-in types.  Every entry is
 *     extern "C" __global__ void name(const __grid_constant__ kevo_fa_args a)
 *
 * The op (shared/DESIGN.md, IKBO flash attention), per head h, non-causal:
 *     out[c] = softmax(Q[c] K[u]^T * scale) V[u],   u = cand_to_user[c]
 * All tensors row-major with the last dimension contiguous:
 *     q   [Bc * Sq, H, D]   rows c*Sq .. c*Sq+Sq-1 are candidate c's queries
 *     k, v [U * Skv, H, D]  rows u*Skv .. u*Skv+Skv-1 are user u's keys/values
 *     cand_to_user [Bc] int32 in [0, U)
 *     out [Bc * Sq, H, D]
 * Storage dtype fp16 or bf16 (the template's DTYPE_BF16 macro); the softmax
 * and both products accumulate in fp32.
 */
#ifndef KEVO_IKBO_FA_ABI_H
#define KEVO_IKBO_FA_ABI_H

#define KEVO_FA_ABI_VERSION 1

#if defined(__cplusplus)
#define KEVO_FA_ALIGN64 alignas(64)
#else
#define KEVO_FA_ALIGN64 _Alignas(64)
#endif

/* A TMA descriptor (the driver's CUtensorMap: 128 bytes, 64-byte aligned),
 * encoded by the evaluator from the plan's tensor-map specs.  The same
 * layout as ikbo_lce's kevo_tmap; never include both ABI headers in one
 * translation unit. */
#ifndef KEVO_TMAP_DEFINED
#define KEVO_TMAP_DEFINED
typedef struct kevo_tmap {
    KEVO_FA_ALIGN64 unsigned long long opaque[16];
} kevo_tmap;
#endif

typedef struct kevo_fa_args {
    const void *q;
    const void *k;
    const void *v;
    const int *cand_to_user;
    void *out;
    void *workspace; /* the plan's workspace_bytes, 256-byte aligned */
    int Bc, H, Sq, D, Skv, U;
    float scale;      /* softmax scale: 1/sqrt(D) unless the caller gives another */
    float scale_log2; /* scale * log2(e): kernels take exp2 of scaled scores */
    int num_sms;      /* multiprocessors of the device, for persistent grids */
    int launch_seq;   /* differs between consecutive runs of a plan on one workspace
                         (the runner counts from 1): tags flags kept in the workspace */
    /* Filled only for plans that ask for them (TMA families): 3-D
     * {D, H, rows} for each tensor (rows Bc*Sq for tm_q and tm_out, U*Skv
     * for tm_k and tm_v); box and swizzle from the plan; out-of-bounds boxes
     * read zeros and are not written. */
    kevo_tmap tm_q, tm_k, tm_v, tm_out;
} kevo_fa_args;

#endif /* KEVO_IKBO_FA_ABI_H */
