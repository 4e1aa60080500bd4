/* op.h — operator specs: symbols, shapes, dtypes, FLOP and byte counts, input
 * generation and a CPU reference.  One kevo_op per operator, found by name. */
#ifndef KEVO_OP_H
#define KEVO_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo.h"
#include "templates/expr.h"

/* Storage dtype of a run; accumulation is always fp32. */
typedef enum kevo_dtype {
    KEVO_DTYPE_F16 = 0,
    KEVO_DTYPE_BF16 = 1,
} kevo_dtype;

const char *kevo_dtype_name(kevo_dtype d); /* "fp16", "bf16" */
/* Accepts fp16/f16/half and bf16/bfloat16.  False on anything else. */
bool kevo_dtype_parse(const char *s, kevo_dtype *out);

/* How candidates are mapped to users (cand_to_user) in an input set. */
typedef enum kevo_map_kind {
    KEVO_MAP_SORTED = 0,   /* b / ratio: each user's candidates contiguous, equal groups */
    KEVO_MAP_UNEVEN = 1,   /* contiguous groups of random sizes, some users empty */
    KEVO_MAP_SHUFFLED = 2, /* the sorted map under a random permutation of b */
} kevo_map_kind;

const char *kevo_map_name(kevo_map_kind k); /* "sorted", "uneven", "shuffled" */
bool kevo_map_parse(const char *s, kevo_map_kind *out);

/* An operator spec. */
typedef struct kevo_op {
    const char *name;          /* "ikbo_lce" */
    const char *summary;       /* one line */
    const char *default_shape; /* text parse_shape accepts */
    /* Symbols a template may read, in print order (derived ones included). */
    const char *const *symbols;
    int nsymbols;
    /* Parse "B=1024,M=433,..." (missing keys take the default shape's values)
     * into syms, all symbols bound.  Errors: KEVO_ERR_ARG naming the key. */
    kevo_status (*parse_shape)(const char *text, kevo_syms *out, kevo_err *err);
    /* Canonical text of a parsed shape, e.g. "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15". */
    void (*shape_str)(const kevo_syms *shape, char *out, size_t n);
    /* Useful floating-point operations of the decomposed op. */
    double (*flops)(const kevo_syms *shape);
    /* Fewest bytes an implementation must move through device memory. */
    double (*bytes)(const kevo_syms *shape, kevo_dtype dtype);
    /* Files under kernels/: the ABI header inlined in front of every
     * candidate, and the GPU reference/utility module the evaluator compiles. */
    const char *abi_header;
    const char *ref_source;
    /* The reference module's program name (its #line and compile job): part
     * of the source whose hash keys the DB's binary cache, so it keeps the
     * name it had when runs were stored. */
    const char *ref_name;
    /* The ABI struct's tensor fields a kernel reads and the ones it writes
     * (the LLM source check refuses writes to inputs and reads of outputs). */
    const char *const *inputs;
    int ninputs;
    const char *const *outputs;
    int noutputs;
} kevo_op;

/* Look up an op by name; NULL when unknown. */
const kevo_op *kevo_op_find(const char *name);
/* The table of ops, for listings; *n receives its length. */
const kevo_op *const *kevo_op_list(int *n);

/* ---- ikbo_lce host data (tests and the exported-library checks) ---- */

/* Counter-based generator shared by host and device (kernels/ikbo_lce/ref.cu
 * implements the same function): the value of element idx of the tensor
 * numbered `tensor` under `seed`, an exactly representable value in [-1, 1):
 * k/1024 for fp16 and k/128 for bf16.  Returns the float value; *bits gets
 * the 16-bit storage pattern. */
float kevo_lce_gen_value(uint64_t seed, uint32_t tensor, uint64_t idx, kevo_dtype dt, uint16_t *bits);

/* cand_to_user map for B candidates over U users (B >= 1, U >= 1).
 * `ratio` is candidates per user for the sorted map; seed picks the random
 * ones.  Fills map[B]; every value in [0, U). */
void kevo_lce_make_map(kevo_map_kind kind, int64_t B, int64_t U, int64_t ratio, uint64_t seed, int32_t *map);

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
 * 2 e_user, 3 e_cand).  Errors: KEVO_ERR_NOMEM, KEVO_ERR_ARG. */
kevo_status kevo_lce_host_init(kevo_lce_host *h, const kevo_syms *shape, kevo_dtype dt, kevo_map_kind map,
                               uint64_t seed, kevo_err *err);
void kevo_lce_host_release(kevo_lce_host *h);

/* CPU reference in double precision: out[B*M*N].  O(B*M*N*(Ku+Kc)): small shapes only. */
void kevo_lce_reference_cpu(const kevo_lce_host *h, double *out);

/* Storage bits <-> float for the dtype (round to nearest even). */
float kevo_bits_to_float(uint16_t bits, kevo_dtype dt);
uint16_t kevo_float_to_bits(float f, kevo_dtype dt);

#endif /* KEVO_OP_H */
