/* ikbo_lce.h — the ikbo_lce op (linear compression embedding, decomposed):
 *     out[b] = W_cand @ E_cand[b] + W_user @ E_user[cand_to_user[b]]
 * Its kevo_op and GPU side for the table (kernels/ops.c), and host input
 * sets with a CPU reference for the tests.  Files of the op: spec.c (spec,
 * tensors, tolerances, peers' names, export description, host inputs, CPU
 * reference), abi.h (the kernels' argument struct), ref.cu (the GPU
 * reference module; vendor.cu, the vendor forms' gather and broadcast-add,
 * is appended to it), vendor.c (the vendor configs export reads), gpu.c (the worker's op-specific side: arguments,
 * reference launch, the same-run peers), export/ (the library's op pieces),
 * README.md. */
#ifndef KEVO_IKBO_LCE_H
#define KEVO_IKBO_LCE_H

#include <stdint.h>

#include "core/op.h"

extern const kevo_op kevo_op_ikbo_lce;
extern const struct kevo_op_gpu kevo_ikbo_lce_gpu; /* kernels/ikbo_lce/gpu.c */

/* Host copies of one ikbo_lce input set; owns every array. */
typedef struct kevo_lce_host {
    kevo_syms shape;
    kevo_dtype dtype;
    int64_t B, M, N, Ku, Kc, U;
    uint16_t *w_user, *w_cand; /* [M, Ku], [M, Kc] storage bits */
    uint16_t *e_user, *e_cand; /* [U, Ku, N], [B, Kc, N] */
    int32_t *map;              /* [B] */
} kevo_lce_host;

/* Generate an input set on the host (tensor numbers: 0 w_user, 1 w_cand,
 * 2 e_user, 3 e_cand; the map from seed itself).  Errors: KEVO_ERR_NOMEM,
 * KEVO_ERR_ARG. */
kevo_status kevo_lce_host_init(kevo_lce_host *h, const kevo_syms *shape, kevo_dtype dt, kevo_map_kind map,
                               uint64_t seed, kevo_err *err);
void kevo_lce_host_release(kevo_lce_host *h);

/* The vendor fallback (vendor.c): the forms a VENDOR peer's config names
 * (the exported library's x_vendor.form), the entries of vendor.cu the
 * library launches (gather, broadcast-add), and the configs' strict parser
 * and canonical text (kevo_op_export.vendor_parse, .vendor_text). */
#define KEVO_LCE_VENDOR_FORMS 2
#define KEVO_LCE_VENDOR_ENTRIES 2
extern const char *const kevo_lce_vendor_forms[KEVO_LCE_VENDOR_FORMS];     /* "decomposed", "beta1" */
extern const char *const kevo_lce_vendor_entries[KEVO_LCE_VENDOR_ENTRIES]; /* "kv_gather_user", "kv_bcast_add" */
kevo_status kevo_lce_vendor_parse(const char *config, const kevo_syms *shape, kevo_vendor_cfg *out, kevo_err *err);
size_t kevo_lce_vendor_text(const kevo_vendor_cfg *v, char *out, size_t n);

/* CPU reference in double precision: out[B*M*N].  O(B*M*N*(Ku+Kc)): small shapes only. */
void kevo_lce_reference_cpu(const kevo_lce_host *h, double *out);

#endif /* KEVO_IKBO_LCE_H */
