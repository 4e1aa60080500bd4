/* ikbo_lce_abi.h — the parameter struct every ikbo_lce kernel entry takes.
 *
 * Shared by host C (kevo's evaluator, the exported library) and device code
 * (handed to NVRTC in front of every ikbo_lce template), so it uses only
 * built-in types.  Every entry is
 *     extern "C" __global__ void name(const __grid_constant__ kevo_lce_args a)
 *
 * The op (shared/DESIGN.md):
 *     out[b] = W_cand @ E_cand[b] + W_user @ E_user[cand_to_user[b]]
 * All tensors row-major with the last dimension contiguous:
 *     w_user [M, ldw_user]  (Ku columns used)     e_user [U, Ku, N]
 *     w_cand [M, ldw_cand]  (Kc columns used)     e_cand [B, Kc, N]
 *     cand_to_user [B] int32 in [0, U)            out    [B, M, N]
 * Storage dtype fp16 or bf16 (the template's DTYPE_BF16 macro), fp32
 * accumulation.  When a plan asks for K padding (pad_k), ldw_* are Ku, Kc
 * rounded up to a multiple of 8 and the padding columns hold zeros: the
 * weights are packed once, as an inference server does at model load.
 */
#ifndef KEVO_IKBO_LCE_ABI_H
#define KEVO_IKBO_LCE_ABI_H

#define KEVO_LCE_ABI_VERSION 3

#if defined(__cplusplus)
#define KEVO_ALIGN64 alignas(64)
#else
#define KEVO_ALIGN64 _Alignas(64)
#endif

/* A TMA descriptor (the driver's CUtensorMap: 128 bytes, 64-byte aligned),
 * encoded by the evaluator from the plan's tensor-map specs. */
typedef struct kevo_tmap {
    KEVO_ALIGN64 unsigned long long opaque[16];
} kevo_tmap;

typedef struct kevo_lce_args {
    const void *w_user;
    const void *w_cand;
    const void *e_user;
    const void *e_cand;
    const int *cand_to_user;
    void *out;
    void *workspace; /* the plan's workspace_bytes, 256-byte aligned */
    int B, M, N, Ku, Kc, U;
    int ldw_user, ldw_cand; /* row strides of the W tensors, in elements */
    int num_sms;            /* multiprocessors of the device, for persistent grids */
    int launch_seq;         /* differs between consecutive runs of a plan on one workspace
                               (the runner counts from 1): tags flags kept in the workspace */
    /* Filled only for plans that ask for them (TMA families; K padded):
     *   tm_w_*: 2-D {K padded, M}, tm_e_*: 3-D {N, K, batch}, tm_out: 3-D
     *   {N, M, B}; box and swizzle from the plan; out-of-bounds boxes read
     *   zeros and are not written. */
    kevo_tmap tm_w_user, tm_w_cand, tm_e_user, tm_e_cand, tm_out;
} kevo_lce_args;

#endif /* KEVO_IKBO_LCE_ABI_H */
