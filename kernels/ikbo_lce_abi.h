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

#define KEVO_LCE_ABI_VERSION 1

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
    int reserved;
} kevo_lce_args;

#endif /* KEVO_IKBO_LCE_ABI_H */
