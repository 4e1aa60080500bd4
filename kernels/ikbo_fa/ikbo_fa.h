/* ikbo_fa.h — the ikbo_fa op (IKBO flash attention), per head h, non-causal:
 *     out[c] = softmax(Q[c] K[u]^T * scale) V[u],   u = cand_to_user[c]
 * Its kevo_op and GPU side for the table (kernels/ops.c), the softmax scale
 * of a check, and host input sets with a CPU reference for the tests.  Files
 * of the op: spec.c (spec, tensors, tolerances, peers' names, host inputs,
 * CPU reference), abi.h (the kernels' argument struct), ref.cu (the GPU
 * reference module), gpu.c (the worker's op-specific side: arguments,
 * reference launch, the same-run peers), README.md. */
#ifndef KEVO_IKBO_FA_H
#define KEVO_IKBO_FA_H

#include <stdint.h>

#include "core/op.h"

extern const kevo_op kevo_op_ikbo_fa;
extern const struct kevo_op_gpu kevo_ikbo_fa_gpu; /* kernels/ikbo_fa/gpu.c */

/* The softmax scale of the uneven map's check: a power of two (scores
 * Q.K * scale stay exact in fp32, as they are for 1/sqrt(D)'s products)
 * large enough that exp of unshifted scores overflows fp32 in nearly every
 * row, so a kernel that skips the running-max subtraction writes Inf/NaN
 * there (derivation: README.md, "Verification"). */
#define KEVO_FA_CHECK_SCALE 32.0

/* The softmax scale kernels get for an input set of map kind `map` at head
 * dimension D: KEVO_FA_CHECK_SCALE for KEVO_MAP_UNEVEN, 1/sqrt(D) (the op's
 * default) for the others (the timing inputs use the sorted map). */
double kevo_fa_scale(int64_t D, kevo_map_kind map);

/* Host copies of one ikbo_fa input set; owns every array. */
typedef struct kevo_fa_host {
    kevo_syms shape;
    kevo_dtype dtype;
    int64_t Bc, H, Sq, D, Skv, U;
    uint16_t *q;    /* [Bc*Sq, H, D] storage bits */
    uint16_t *k, *v; /* [U*Skv, H, D] */
    int32_t *map;   /* [Bc], values in [0, U) */
} kevo_fa_host;

/* Generate an input set on the host: tensor numbers (kevo_gen_value's
 * streams) 0 q, 1 k, 2 v; the map of kind `map` from seed itself
 * (kevo_make_map(map, Bc, U, ratio, seed)).  Errors: KEVO_ERR_NOMEM,
 * KEVO_ERR_ARG (a shape without the op's symbols, a bad dtype or map). */
kevo_status kevo_fa_host_init(kevo_fa_host *h, const kevo_syms *shape, kevo_dtype dt, kevo_map_kind map,
                              uint64_t seed, kevo_err *err);
void kevo_fa_host_release(kevo_fa_host *h);

/* CPU reference in double precision with softmax scale `scale`:
 * out[Bc*Sq*H*D] in out's layout.  Exact softmax (max subtracted, nothing
 * rounded).  O(Bc*H*Sq*Skv*D): small shapes only. */
void kevo_fa_reference_cpu(const kevo_fa_host *h, double scale, double *out);

#endif /* KEVO_IKBO_FA_H */
