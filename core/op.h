/* op.h — the op interface.  Everything op-specific lives in kernels/<op>/
 * and reaches the rest of kevo through one kevo_op: the spec (symbols,
 * shape parsing, FLOP and byte counts), its tensors described as data (the
 * generic evaluator allocates, fills, poisons, checksums and compares them
 * and encodes their TMA descriptors from these descriptions), tolerances,
 * the names of its same-run peers, what export needs, and its GPU side
 * (struct kevo_op_gpu, evaluator/op_gpu.h).  kernels/ops.c is the table
 * of ops.  Shared by every op: dtypes, cand_to_user maps, the input
 * generator and the 16-bit storage conversions (core/op.c). */
#ifndef KEVO_OP_H
#define KEVO_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo.h"
#include "core/expr.h"

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

#define KEVO_OP_MAX_TENSORS 8
#define KEVO_OP_MAX_FIELDS (2 * KEVO_OP_MAX_TENSORS) /* tensors and their TMA descriptors */
#define KEVO_TENSOR_MAX_RANK 4

/* What a tensor of an op is to the evaluator. */
typedef enum kevo_tensor_role {
    KEVO_TENSOR_INPUT = 0,  /* storage dtype; fresh random values for every check, checksummed around each run */
    KEVO_TENSOR_OUTPUT = 1, /* storage dtype; poisoned with NaN before every check, compared with the reference */
    KEVO_TENSOR_MAP = 2,    /* int32 cand_to_user index in [0, users): a kevo_map_kind for every check */
} kevo_tensor_role;

/* One tensor of an op's ABI struct, as data: the generic evaluator sizes,
 * fills, checks and maps it (TMA) from this alone.  Row-major, the last
 * dimension contiguous. */
typedef struct kevo_tensor_desc {
    const char *name;                       /* the ABI struct's field, e.g. "w_user" */
    kevo_tensor_role role;
    int rank;                               /* 1..KEVO_TENSOR_MAX_RANK */
    const char *dims[KEVO_TENSOR_MAX_RANK]; /* outermost first; expressions over the op's symbols ("U", "Ku", "N") */
    /* NULL, or the row stride (an expression, at least the last dim) of a
     * second copy whose rows are padded with zeros: what a plan with pad_k
     * reads instead (K padded to 16-byte rows for vector and TMA loads). */
    const char *padded;
    int stream;                 /* INPUT: the generator's tensor number (kevo_gen_value) */
    const char *users;          /* MAP: the number of users, the values' bound (an expression) */
    const char *per_user;       /* MAP: candidates per user of the sorted map (an expression) */
    bool tmap;                  /* a plan may ask for a TMA descriptor of it (INPUT or OUTPUT) */
    size_t tmap_offset;         /* where that descriptor (kevo_tmap, 128 bytes) lies in the ABI struct */
    const char *tmap_field;     /* that descriptor's field in the ABI struct, e.g. "tm_out" */
} kevo_tensor_desc;

/* ---- same-run peers: what a user runs today, checked and timed beside
 * the candidates ----
 * An op declares its peers as a table (kevo_op.peers); the GPU worker
 * checks each against the reference and times it like a candidate
 * (kevo_op_gpu.peers), and the DB keeps one row per peer, shape and device
 * (run_peers).  A candidate's speedup is over the BASELINE peer; its
 * vs_best_peer is over the fastest peer whose check passed. */

#define KEVO_MAX_PEERS 6
#define KEVO_PEER_NAME_MAX 32

/* What a peer is to a run (kevo_peer_desc.flags). */
enum {
    KEVO_PEER_BASELINE = 1u << 0, /* stage 0: the speedup's denominator (exactly one per op) */
    KEVO_PEER_AFTER = 1u << 1,    /* runs the run's winner without the co-design: `kevo tune` measures it after
                                     the search (kevo_op.nocodesign_shape), not the worker at start */
    KEVO_PEER_VENDOR = 1u << 2,   /* a vendor-library form that `kevo export` can dispatch to where no kernel
                                     beats the strongest peer (its kevo_peer_fig.config says how) */
};

/* One peer of an op. */
typedef struct kevo_peer_desc {
    const char *name;    /* as stored (run_peers.peer): [a-z0-9_], e.g. "beta1" */
    const char *label;   /* in tune's and report's lines: "beta=1 (cuBLASLt: user GEMM, gather, candidate GEMM
                            accumulating; K padded to 8)" */
    const char *verdict; /* in a verdict: "no kernel beats <verdict> at this shape": "cuBLAS (beta=1)" */
    unsigned flags;
    /* An AFTER peer: the run's winner without the co-design plus the time
     * of the broadcast it needs, taken as the time of the peer named
     * bcast_with minus that of bcast_without (stage 0 with and without its
     * gather); NULL for other peers. */
    const char *bcast_with, *bcast_without;
} kevo_peer_desc;

/* Where a peer stands in a run. */
typedef enum kevo_peer_state {
    KEVO_PEER_UNMEASURED = 0, /* not run (yet) */
    KEVO_PEER_OK = 1,         /* agreed with the reference, and timed */
    KEVO_PEER_FAILED = 2,     /* ran and disagreed with the reference (detail says by how much) */
    KEVO_PEER_ERROR = 3,      /* could not run (memory, the library refused): detail says why */
} kevo_peer_state;

/* "unmeasured", "ok", "failed", "error" (run_peers.status); parse: false on anything else. */
const char *kevo_peer_state_name(kevo_peer_state s);
bool kevo_peer_state_parse(const char *s, kevo_peer_state *out);

#define KEVO_PEER_DETAIL_MAX 256
#define KEVO_PEER_CONFIG_MAX 1024

/* One peer's figures at one shape on one GPU.  Only an OK peer counts as
 * a best. */
typedef struct kevo_peer_fig {
    kevo_peer_state state;
    double median_ms;          /* median of its timed repetitions; NaN unless OK */
    double ci_lo_ms, ci_hi_ms; /* 95% bootstrap interval of that median; NaN unknown */
    double rel_err;            /* its check: ||out - ref|| / ||ref||; NaN when it did not run */
    int64_t cand_id;           /* an AFTER peer: the candidate whose configuration ran; 0 none */
    char detail[KEVO_PEER_DETAIL_MAX]; /* what ran ("cuBLASLt algo 66 ..."), or why it failed */
    char config[KEVO_PEER_CONFIG_MAX]; /* a VENDOR peer: what export needs to run it again (JSON); "" none */
} kevo_peer_fig;

/* An op's peers at one shape on one GPU, by index into kevo_op.peers. */
typedef struct kevo_peer_set {
    kevo_peer_fig p[KEVO_MAX_PEERS];
} kevo_peer_set;

/* Every peer unmeasured, figures NaN, texts empty. */
void kevo_peer_set_init(kevo_peer_set *s);

/* ---- the vendor fallback: a VENDOR peer's form, run again by an exported
 * library where no kernel beats it (kevo_op_export.vendor_*) ---- */

#define KEVO_VENDOR_MAX_GEMMS 2
#define KEVO_VENDOR_ALGO_BYTES 64                        /* sizeof(cublasLtMatmulAlgo_t) */
#define KEVO_VENDOR_WORKSPACE_MAX (UINT64_C(256) << 20) /* most cuBLASLt workspace a config may ask for */

/* A VENDOR peer's stored config (kevo_peer_fig.config), parsed and checked
 * by its op (kevo_op_export.vendor_parse) against the tuned shape. */
typedef struct kevo_vendor_cfg {
    int form;              /* index into kevo_op_export.vendor_forms */
    int ngemms;            /* GEMMs of the form, each with its algorithm, in the op's order (1..MAX_GEMMS) */
    int64_t gemm_k[KEVO_VENDOR_MAX_GEMMS]; /* the K each GEMM's algorithm was chosen at (K padded) */
    uint64_t lib_version;  /* cublasLtGetVersion() the algorithms were chosen with; > 0 */
    uint64_t workspace;    /* bytes of cuBLASLt workspace they were offered; <= KEVO_VENDOR_WORKSPACE_MAX */
    unsigned char algo[KEVO_VENDOR_MAX_GEMMS][KEVO_VENDOR_ALGO_BYTES]; /* each cublasLtMatmulAlgo_t's raw bytes */
} kevo_vendor_cfg;

/* What `kevo export` needs of an op beyond its spec: export/template/lib.h.in
 * and lib.c.in hold the library's op-independent runtime, these pieces the
 * rest.  Each piece is a file under kernels/, filled like the library's own
 * templates (@NAME@, @NAME_UPPER@). */
typedef struct kevo_op_export {
    const char *head;     /* the header's opening comment: what the library computes */
    const char *api;      /* the header's argument struct and calls */
    const char *dispatch; /* the source's argument checks, a call's symbols, the choice of a kernel, workspace size */
    const char *call;     /* the source's tensor maps and the call itself */
    /* Symbols a tuned entry is matched on (a call at exactly these values
     * takes the kernel tuned there), in the dispatch's order. */
    const char *const *tuned_keys;
    int ntuned_keys;
    const char *what;            /* README and pkg-config: "IKBO linear-compression kernels" */
    const char *readme_fallback; /* README: what a caller uses where no kernel won ("what cuBLAS gives (...)") */
    const char *pad_column;      /* README kernels table: the column for plans with pad_k ("pads W") */
    const char *pad_yes;         /* ... and its value for them ("yes (rows of 8)") */
    /* `kevo export --torch`: the op's PyTorch binding (the schema, the CUDA
     * kernel calling the library with the decomposed PyTorch form where it
     * returns UNSUPPORTED, the meta kernel) and the README's usage lines */
    const char *torch;
    const char *torch_usage;
    /* The vendor fallback (all NULL: the op has none; its tuned shapes that
     * no kernel wins return UNSUPPORTED).  The library's call runs a form
     * by its index into vendor_forms (the names its VENDOR peers' configs
     * give), launching the entries of vendor_source (a file under kernels/,
     * compiled by export with NVRTC for each arch and dtype that needs it,
     * after kernels/ref.cuh: the same code the GPU worker timed, which
     * kevo_op_ref_render appends to the reference module) by their index
     * into vendor_entries. */
    const char *const *vendor_forms;
    int nvendor_forms;
    const char *vendor_source;
    const char *const *vendor_entries;
    int nvendor_entries;
    /* Parse and check a VENDOR peer's config (untrusted DB text) for the
     * tuned shape it was measured at, strictly: the canonical text the GPU
     * worker writes and nothing else.  Errors: KEVO_ERR_PARSE saying what is
     * wrong (naming fields, never quoting the text). */
    kevo_status (*vendor_parse)(const char *config, const kevo_syms *shape, kevo_vendor_cfg *out, kevo_err *err);
    /* The canonical text of a parsed config into out[n] (what vendor_parse
     * accepts it as); returns its length (>= n: cut). */
    size_t (*vendor_text)(const kevo_vendor_cfg *v, char *out, size_t n);
} kevo_op_export;

struct kevo_op_gpu; /* evaluator/op_gpu.h */

/* An operator. */
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
    /* Verification bounds for a dtype: ||out-ref||/||ref|| <= *rel_bound, and
     * elementwise |out-ref| <= *rtol * |ref| + *rtol * rms(ref). */
    void (*tolerance)(kevo_dtype dtype, double *rel_bound, double *rtol);
    /* Files under kernels/: the ABI header inlined in front of every
     * candidate, and the GPU reference/utility module the evaluator compiles
     * (kernels/ref.cuh, inlined ahead of it, defines kv_gen, kv_sumsq,
     * kv_compare and kv_checksum; the op's file adds kv_gen_padded when a
     * tensor has a padded copy, its reference and its peers' kernels). */
    const char *abi_header;
    const char *ref_source;
    /* The reference module's program name (its #line and compile job): part
     * of the source whose hash keys the DB's binary cache, so it keeps the
     * name it had when runs were stored. */
    const char *ref_name;
    /* The ABI struct's tensors, in its order: the inputs (the LLM source
     * check refuses writes to them), the cand_to_user map and one output. */
    const kevo_tensor_desc *tensors;
    int ntensors;
    /* Its same-run peers (at most KEVO_MAX_PEERS; exactly one BASELINE). */
    const kevo_peer_desc *peers;
    int npeers;
    /* NULL, or the same problem without the op's co-design, for a peer that
     * runs the run's best kernel there (`kevo tune` measures it after the
     * search): shape is a parsed shape of this op; *out receives the shape
     * with every candidate given its own copy of what the co-design shares
     * (ikbo_fa: U = Bc, ratio = 1, K/V [Bc*Skv, H, D]), checked by the op's
     * own parse_shape.  Errors: KEVO_ERR_ARG naming the limit that shape
     * passes there (a tensor's rows past an int, its elements past 2^48). */
    kevo_status (*nocodesign_shape)(const kevo_syms *shape, kevo_syms *out, kevo_err *err);
    const kevo_op_export *export_desc;
    const struct kevo_op_gpu *gpu; /* NULL: no GPU side (compile-only) */
} kevo_op;

/* The table of ops, one row per op: the only list of them, in
 * kernels/ops.c (the contract is here, the ops above it). */
extern const kevo_op *const kevo_op_table[];
extern const int kevo_op_table_len;

/* Look up an op by name; NULL when unknown. */
const kevo_op *kevo_op_find(const char *name);
/* The table of ops, for listings; *n receives its length. */
const kevo_op *const *kevo_op_list(int *n);
/* The known ops' names, ", "-separated, into out (truncated to n). */
void kevo_op_names(char *out, size_t n);

/* The source of op's reference module for dtype dt, appended to out:
 * DTYPE_BF16, the ABI header text abi, then kernels_dir/ref.cuh,
 * kernels_dir/<op->ref_source> and, when the op has one, its vendor
 * kernels kernels_dir/<export_desc->vendor_source>, each after a #line
 * naming it (the second by op->ref_name), so that NVRTC's messages point
 * into the files.  What is appended is the whole module: its hash keys the
 * binary cache.  Errors:
 * KEVO_ERR_IO (a file unreadable, named), KEVO_ERR_NOMEM. */
struct kv_buf;
kevo_status kevo_op_ref_render(const kevo_op *op, const char *kernels_dir, kevo_dtype dt, const char *abi,
                               struct kv_buf *out, kevo_err *err);

/* Index of the peer named name in op->peers, or -1. */
int kevo_op_peer_index(const kevo_op *op, const char *name);
/* Index of op's BASELINE peer (kevo_op.peers), or -1 when it has none. */
int kevo_op_peer_baseline(const kevo_op *op);
/* Index of the tensor named name in op->tensors, or -1. */
int kevo_op_tensor_index(const kevo_op *op, const char *name);

/* The ABI fields through which kernels read (inputs and the map; outputs
 * false) or write (outputs true) op's tensors, in order, into names[max]:
 * each tensor's name, then its TMA descriptor's field when it has one (a
 * TMA store through "tm_e_cand" writes an input as surely as a store
 * through "e_cand").  Returns how many. */
int kevo_op_tensor_names(const kevo_op *op, bool outputs, const char **names, int max);

/* A tensor's dimensions at a shape: dims[t->rank] (outermost first), *ld
 * the row stride of its padded copy (the last dim when it has none), *count
 * its elements.  Errors: KEVO_ERR_ARG (an expression that does not evaluate,
 * a dimension below 1, more than 2^62 elements), naming the tensor. */
kevo_status kevo_tensor_shape(const kevo_tensor_desc *t, const kevo_syms *shape, int64_t dims[KEVO_TENSOR_MAX_RANK],
                              int64_t *ld, uint64_t *count, kevo_err *err);

/* ---- shape text (each op's parse_shape) ---- */

#define KEVO_SHAPE_VALUE_MAX INT64_C(2147483647)   /* 2^31-1: sizes are int in the device ABIs */
#define KEVO_SHAPE_ELEMS_MAX (UINT64_C(1) << 48)    /* most elements of any one tensor */

/* Parse "KEY=VALUE,..." over the nkeys keys of keys[] into val[nkeys] and
 * given[nkeys] (given[k]: keys[k] appeared; val[k] then holds its value).
 * Keys are case-sensitive, values whole numbers in [1, 2^31-1] (decimal
 * digits, an optional '+'); white space around items, keys and values is
 * ignored; blank text (NULL, or white space only) gives nothing.  Errors:
 * KEVO_ERR_ARG quoting the offending piece (at most 200 characters): an
 * empty item, a missing '=' or key, an unknown key (the message lists
 * keys[]), a duplicate key, an empty, malformed, non-positive or too large
 * value. */
kevo_status kevo_shape_parse_items(const char *text, const char *const *keys, int nkeys, int64_t *val, bool *given,
                                   kevo_err *err);

/* Users and candidates per user of a batch of B candidates (the key
 * batch_key, e.g. "B"): from U alone ratio = cdiv(B, U); from ratio alone
 * U = cdiv(B, ratio) (a ratio above B is one user); both given must agree
 * (either derived from the other); neither: default_ratio, refused when
 * above B (give ratio or U).  Errors: KEVO_ERR_ARG quoting the values
 * (U above B, U and ratio that disagree, the default ratio above B). */
kevo_status kevo_shape_users(const char *batch_key, int64_t B, bool ratio_given, int64_t ratio_value, bool u_given,
                             int64_t u_value, int64_t default_ratio, int64_t *ratio, int64_t *U, kevo_err *err);

/* The product of nf >= 0 positive factors f[], saturated at limit + 1 (so
 * nothing overflows). */
uint64_t kevo_shape_count(const int64_t *f, int nf, uint64_t limit);

/* Refuse a tensor of more than 2^48 elements, the product of f[nf]:
 * KEVO_ERR_ARG "tensor 'NAME' [DIMS] has more than 2^48 elements", dims the
 * dimensions' text ("B, M, N"). */
kevo_status kevo_shape_check_elems(const char *tensor, const char *dims, const int64_t *f, int nf, kevo_err *err);

/* ---- inputs every op draws (the device side: each op's ref.cu) ---- */

/* Counter-based generator shared by host and device (kernels/ref.cuh
 * implements the same function): the value of element idx of the tensor
 * numbered `tensor` under `seed`, an exactly representable value in [-1, 1):
 * k/1024 for fp16 and k/128 for bf16.  Returns the float value; *bits gets
 * the 16-bit storage pattern. */
float kevo_gen_value(uint64_t seed, uint32_t tensor, uint64_t idx, kevo_dtype dt, uint16_t *bits);

/* cand_to_user map for B candidates over U users (B >= 1, U >= 1).
 * `ratio` is candidates per user for the sorted map; seed picks the random
 * ones.  Fills map[B]; every value in [0, U). */
void kevo_make_map(kevo_map_kind kind, int64_t B, int64_t U, int64_t ratio, uint64_t seed, int32_t *map);

/* Storage bits <-> float for the dtype (round to nearest even). */
float kevo_bits_to_float(uint16_t bits, kevo_dtype dt);
uint16_t kevo_float_to_bits(float f, kevo_dtype dt);

#endif /* KEVO_OP_H */
