/* space.h — template families: a parameterized CUDA source plus the space
 * file beside it (templates/<family>.json) that gives parameter domains,
 * search axes, constraints and the launch plan.
 *
 * Space file (JSON):
 *   family, op, source (path relative to the space file), description,
 *   archs: ["sm_80", "sm_90a", ...]
 *   needs: ["wgmma", "tma"]   instead of (or besides) archs: the features
 *          (core/arch.h) the source uses; the family runs on every arch of
 *          the table that has them all
 *   params: [{"name": "BM", "values": [64, 128], "default": 64}, ...]
 *          a param a family gained later says "absent": V, the value stored
 *          configurations without it had (they still load); any other
 *          missing param is an error
 *   axes: {"align": ["ALIGN"], "retile": ["BM", "BN"], ...}  operator name -> params,
 *         most promising first (mutation draws the k-th with weight 1/(1+k))
 *   let: [["threads", "32*WARPS_M*WARPS_N"], ...]   derived values, in order
 *   requires: [{"expr": "N % 8 == 0", "why": "..."}]   on the shape alone
 *   constraints: [{"expr": "smem <= max_smem", "why": "..."}]   on shape + params
 *   pad_k: expr (nonzero: the kernels read W with rows padded to 8 elements)
 *   workspace: expr (bytes)
 *   launches: [{"entry": "name", "when": expr?, "grid": [e, e, e],
 *               "block": [e, e, e], "smem": e}, ...]
 *   tmaps: [{"tensor": "w_cand", "box": [e, e, e], "swizzle": 128}, ...]
 *          TMA descriptors the evaluator encodes into the op's arguments;
 *          swizzle (bytes) is 0, 32, 64 or 128, given as an integer or an
 *          expression ("BN % 64 ? 64 : 128") checked when the plan is made
 *   include: ["hopper.cuh", "sm90/ring.cuh", ...]   headers beside the
 *          space file or one folder down (each part [A-Za-z0-9_][A-Za-z0-9_.-]*,
 *          no ".."), inlined ahead of the source in order
 *   prelude: ["cuda/ptx", ...]   system headers the rendered source begins
 *          with ("#include <name>" lines, before the params' #defines, so
 *          they may not depend on them); a compile pool parses them once
 *          per run into an NVRTC precompiled header (evaluator/compile.h):
 *          list the heavy ones (<cuda/ptx>, <cuda/atomic>); optional
 *   model: {"flops": e, "dram_bytes": e, "items": e, "slots": e, ...}
 *          the cost model's inputs at a configuration (search/model.h
 *          names each term and its unit); optional
 *   enter_from: [{"family": "lce_wgmma", "op": "persistent", "why": "...",
 *                 "set": {"BN": "BN", "FUSE": "0", ...}}, ...]
 *          moves into this family from another: one expression per param
 *          of this family over the source configuration's params, lets and
 *          shape; a search holding the source family reaches this one
 *          through them instead of seeding it
 * Expressions (core/expr.h) see the op's shape symbols, the params, the
 * lets, and the device limits num_sms, max_smem (bytes a block may opt into),
 * max_regs_per_thread, sm (e.g. 90), and dtype_bytes.
 *
 * Rendering writes the prelude, then "#define NAME VALUE" for each param and the dtype, the
 * op's ABI header, then the includes and the source, each behind
 * "#line 1 \"<file>\"", so compiler errors point at the template's own lines
 * (as Kernel Tuner does).
 */
#ifndef KEVO_SPACE_H
#define KEVO_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"
#include "core/arch.h"
#include "core/expr.h"
#include "util/util.h"

#define KEVO_MAX_PARAMS 20
#define KEVO_MAX_VALUES 32
#define KEVO_MAX_AXES 12
#define KEVO_MAX_LAUNCHES 8
#define KEVO_MAX_RULES 48
#define KEVO_MAX_ARCHS 12
#define KEVO_MAX_PRELUDE 8
#define KEVO_MAX_TMAPS 8
#define KEVO_MAX_ENTRIES 4

typedef struct kevo_param {
    char name[KEVO_SYM_NAME_MAX];
    int nvalues;
    int64_t values[KEVO_MAX_VALUES]; /* in search order (neighbours are adjacent) */
    int64_t def;
    bool has_absent; /* the family gained this param: configurations stored without it had `absent` */
    int64_t absent;
} kevo_param;

/* An axis: params a neighbour move steps one value at a time (each, or
 * several at once).  With `keep`, a move may also step one of them and set the
 * others to the values that hold the expression nearest its value before the
 * move (BK halved with the stages doubled keeps a ring's bytes).  With
 * `"seed": true`, the search seeds the model's best of each combination of
 * the axis's values (search/moves.c): for axes whose values change what the
 * model knows least, such as the warp groups' roles, each with its own
 * fitted efficiency. */
typedef struct kevo_axis {
    char op[KEVO_SYM_NAME_MAX]; /* operator name: retile, stages, align, fuse, ... */
    int nparams;
    int params[KEVO_MAX_PARAMS]; /* indices into kevo_space.params */
    kevo_expr *keep;             /* NULL, or what a kept move holds (over params, lets, shape) */
    bool seed;                   /* seed the model's best of each combination of the params' values */
} kevo_axis;

typedef struct kevo_rule {
    kevo_expr *expr;
    char why[160];
} kevo_rule;

typedef struct kevo_let {
    char name[KEVO_SYM_NAME_MAX];
    kevo_expr *expr;
} kevo_let;

typedef struct kevo_tmap_tpl {
    char tensor[24];
    kevo_expr *box[3];
    kevo_expr *swizzle; /* bytes; NULL: 0 (none) */
} kevo_tmap_tpl;

/* A move into this family from another ("enter_from"). */
typedef struct kevo_entry {
    char from[64];                   /* source family */
    char op[KEVO_SYM_NAME_MAX];      /* operator name on the edge */
    char why[160];
    kevo_expr *set[KEVO_MAX_PARAMS]; /* in params order, over the source's bindings */
} kevo_entry;

typedef struct kevo_launch_tpl {
    char entry[64];
    kevo_expr *when; /* NULL: always */
    kevo_expr *grid[3], *block[3], *smem;
} kevo_launch_tpl;

/* The cost model's inputs (search/model.h says what each means). */
typedef enum kevo_model_term {
    KEVO_MODEL_FLOPS,      /* tensor-core FLOPs executed, tile padding included */
    KEVO_MODEL_MMA_EFF,    /* per-mille of the device's tensor peak the main loop sustains */
    KEVO_MODEL_DRAM_BYTES, /* bytes through device memory */
    KEVO_MODEL_L2_BYTES,   /* bytes the work units load from L2 (re-reads included) */
    KEVO_MODEL_LOAD_EFF,   /* per-mille of the L2 bandwidth the load path sustains */
    KEVO_MODEL_ITEMS,      /* work units (CTA tiles) */
    KEVO_MODEL_SLOTS,      /* work units running at once */
    KEVO_MODEL_INFLIGHT,   /* bytes one running work unit keeps in flight */
    KEVO_MODEL_ITEM_NS,    /* time per work unit that the MMAs and loads do not overlap, ns */
    KEVO_MODEL_LAUNCHES,   /* kernel launches */
    KEVO_MODEL_LAT_NORM,   /* p of the p-norm of t_mma and t_lat (absent or 0: their max) */
    KEVO_MODEL_ITEM_MEM_NS, /* time per work unit that device-memory/L2 traffic does not overlap, ns
                             * (absent: item_ns) */
    KEVO_MODEL__COUNT
} kevo_model_term;

/* Names of the terms in a space file's "model" object, by kevo_model_term. */
extern const char *const kevo_model_term_names[KEVO_MODEL__COUNT];

/* A loaded family; owns everything it points to. */
typedef struct kevo_space {
    char family[64];
    char op[32];
    char description[256];
    char *path;        /* the space file (an LLM candidate's: its name) */
    char *json;        /* the space file's text as loaded */
    char *source_name; /* e.g. "lce_mma.cu" */
    char *source;      /* template text */
    int narchs;
    char archs[KEVO_MAX_ARCHS][16];
    int nprelude;
    char prelude[KEVO_MAX_PRELUDE][64]; /* system header names, e.g. "cuda/ptx" */
    int nparams;
    kevo_param params[KEVO_MAX_PARAMS];
    int naxes;
    kevo_axis axes[KEVO_MAX_AXES];
    int nlets;
    kevo_let lets[KEVO_MAX_RULES];
    int nrequires;
    kevo_rule requires[KEVO_MAX_RULES];
    int nconstraints;
    kevo_rule constraints[KEVO_MAX_RULES];
    kevo_expr *pad_k;
    kevo_expr *workspace;
    int nlaunches;
    kevo_launch_tpl launches[KEVO_MAX_LAUNCHES];
    int ntmaps;
    kevo_tmap_tpl tmaps[KEVO_MAX_TMAPS];
    int nentries;
    kevo_entry entries[KEVO_MAX_ENTRIES];
    kevo_expr *model[KEVO_MODEL__COUNT]; /* NULL: term absent (the family has no model when flops is) */
    int nmodel_lets;
    kevo_let model_lets[KEVO_MAX_RULES]; /* "model": {"let": ...}: bound after the device's rates, before the
                                          * terms, in order (a condition several terms share) */
} kevo_space;

/* A configuration: one value per param, in kevo_space.params order. */
typedef struct kevo_config {
    int64_t v[KEVO_MAX_PARAMS];
} kevo_config;

/* One concrete launch. */
typedef struct kevo_launch {
    char entry[64];
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t smem; /* dynamic shared memory, bytes */
} kevo_launch;

/* A TMA descriptor the kernels need: which op tensor, the box (innermost
 * first; as many entries as the tensor's rank are used) and the swizzle in
 * bytes (0, 32, 64, 128). */
typedef struct kevo_tmap_spec {
    char tensor[24];
    uint32_t box[3];
    int swizzle;
} kevo_tmap_spec;

/* A launch plan: launches run in order on one stream. */
typedef struct kevo_plan {
    int nlaunches;
    kevo_launch launches[KEVO_MAX_LAUNCHES];
    uint64_t workspace_bytes;
    int pad_k;
    int ntmaps;
    kevo_tmap_spec tmaps[KEVO_MAX_TMAPS];
} kevo_plan;

/* Load one space file and its source.  Errors: KEVO_ERR_IO, KEVO_ERR_PARSE
 * naming the file and field.  *out is freed with kevo_space_free(). */
kevo_status kevo_space_load(const char *json_path, kevo_space **out, kevo_err *err);
void kevo_space_free(kevo_space *s);
/* The same from JSON text; json_path names it in messages and locates the source. */
kevo_status kevo_space_load_text(const char *text, const char *json_path, kevo_space **out, kevo_err *err);

/* An LLM candidate's family: a one-point space (every param has one value;
 * no axes, no enter_from) from JSON text in the space-file grammar, whose
 * device source is `source` itself ("source" and "include" are not read);
 * name labels it in messages.  Errors: KEVO_ERR_PARSE naming what is wrong,
 * KEVO_ERR_NOMEM. */
kevo_status kevo_space_load_inline(const char *text, const char *source, const char *name, kevo_space **out,
                                   kevo_err *err);
/* The source_name (the NVRTC program name) of an inline space's source:
 * a generated, untrusted source (evaluator/compile.h compiles a program of
 * this name confined).  Part of every such candidate's rendered text, so of
 * its stored source hash: it keeps the name kevo has always given it. */
#define KEVO_SPACE_INLINE_SOURCE_NAME "llm"

/* The one-point space of cfg in s as JSON text (appended to out): s's space
 * file with every param fixed to cfg's value, "family" set to family, and
 * without axes, enter_from, source and include; it loads with
 * kevo_space_load_inline.  Errors: KEVO_ERR_PARSE (s has no text),
 * KEVO_ERR_NOMEM. */
kevo_status kevo_space_point_json(const kevo_space *s, const kevo_config *cfg, const char *family, kv_buf *out,
                                  kevo_err *err);

/* A one-point space's plan folded at its params, for a reader (the LLM
 * prompt's view of a parent): json is a one-point space's text (as
 * kevo_space_point_json writes it, or any part of it with "params"); each
 * let, in order, is folded (kevo_expr_fold) at the params and the lets
 * before it that folded to numbers, and so are workspace, pad_k, the tmaps'
 * boxes and swizzles and the launches' grid, block and smem; a launch whose
 * "when" folds to 0 is left out (unless it is the only one), a "when" that
 * folds to a non-zero number is dropped.  Every let keeps its name (a number
 * when it folds to one), so a plan that replaces only some keys of the
 * unfolded space still finds the names it uses.  The folded text is
 * appended to out; loaded with kevo_space_load_inline it plans as json does
 * at every shape.  Other keys are kept as they are.  Errors: KEVO_ERR_PARSE
 * (not a JSON object, or an expression that does not parse), KEVO_ERR_ARG
 * (a param without one number), KEVO_ERR_NOMEM. */
kevo_status kevo_space_point_fold(const char *json, kv_buf *out, kevo_err *err);

/* Load every *.json family under dir whose op matches (op NULL: all), sorted
 * by family name.  *out is an array of n spaces; free with kevo_spaces_free(). */
kevo_status kevo_spaces_load_dir(const char *dir, const char *op, kevo_space ***out, int *n, kevo_err *err);
void kevo_spaces_free(kevo_space **s, int n);
/* The same over dir and then extra_dir (NULL: none); a family defined in both
 * is an error (KEVO_ERR_PARSE). */
kevo_status kevo_spaces_load_dirs(const char *dir, const char *extra_dir, const char *op, kevo_space ***out, int *n,
                                  kevo_err *err);

/* Find a family by name in an array; NULL when absent. */
kevo_space *kevo_spaces_find(kevo_space **s, int n, const char *family);

/* Index of a param by name, or -1. */
int kevo_space_param_index(const kevo_space *s, const char *name);

/* Whether the family lists this arch. */
bool kevo_space_has_arch(const kevo_space *s, const char *arch);

/* The default configuration (each param's default). */
void kevo_space_default(const kevo_space *s, kevo_config *cfg);

/* Bind shape + limits + dtype + params + lets into out.
 * Errors: KEVO_ERR_ARG when a let cannot be evaluated. */
kevo_status kevo_space_bind(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                            const kevo_config *cfg, kevo_syms *out, kevo_err *err);

/* Map a configuration of `from` through entry e of `to` (to->entries[e],
 * whose source must be from's family) into *out.  Returns 1 mapped, 0 when a
 * mapped value is not among the param's values (why says which), -1 when an
 * expression fails (err says why: a name the source lacks, ...). */
int kevo_space_enter(const kevo_space *to, int e, const kevo_space *from, const kevo_syms *shape,
                     const kevo_limits *lim, kevo_dtype dt, const kevo_config *src, kevo_config *out, char *why,
                     size_t n, kevo_err *err);

/* Check the family's `requires` against a shape.  KEVO_OK, or
 * KEVO_ERR_UNSUPPORTED with the rule's why in err. */
kevo_status kevo_space_supports(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                                kevo_err *err);

/* Check a configuration's constraints.  Returns 1 when valid, 0 when
 * rejected (why[] names the first failing rule), -1 on an evaluation error
 * (why[] holds the message). */
int kevo_space_check(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                     const kevo_config *cfg, char *why, size_t whylen);

/* kevo_space_check over many configurations of one family at one shape,
 * faster: it re-evaluates only the lets and constraints whose inputs
 * changed since the configuration before (in mixed-radix order the last
 * params change most often; ranking lce_ws's 1.1M configurations is then
 * several times quicker), with the same answers and messages as
 * kevo_space_check.  A configuration whose lets or constraints cannot be
 * evaluated is handed to kevo_space_check whole, and so is every one of a
 * family the shortcut cannot follow exactly (a let that names itself or a
 * later let).  Plain value type; shape must outlive it. */
typedef struct kevo_space_walk {
    const kevo_space *s;
    const kevo_syms *shape;
    const kevo_limits *lim;
    kevo_dtype dt;
    bool exact;                      /* the shortcut serves this family */
    bool primed;                     /* b holds the bindings of last, every let evaluated */
    kevo_config last;
    kevo_syms b;
    int param_at[KEVO_MAX_PARAMS];   /* where each param's value sits in b */
    int let_at[KEVO_MAX_RULES];
    int let_level[KEVO_MAX_RULES];   /* the last param its value depends on; -1 none */
    int con_level[KEVO_MAX_RULES];
    bool con_stale[KEVO_MAX_RULES];  /* its value below is not that of last */
    int64_t con_val[KEVO_MAX_RULES];
    int fail_level; /* after a 0 from the check: the last param the failed constraint depends on
                       (every configuration that agrees up to it fails too); nparams - 1 when
                       unknown (a domain error, or not exact) */
} kevo_space_walk;

void kevo_space_walk_init(kevo_space_walk *w, const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim,
                          kevo_dtype dt);
/* The next configuration in mixed-radix order (idx[i]: an index into param
 * i's values, the last param fastest), stepping param `digit`: the params
 * after it go back to their first values, so with digit < nparams - 1 every
 * configuration that agrees with idx up to digit is skipped (after a failed
 * check: digit = the walk's fail_level).  false past the last one. */
bool kevo_space_step(const kevo_space *s, int idx[KEVO_MAX_PARAMS], int digit);
/* kevo_space_check(w's family and shape, cfg, why, whylen). */
int kevo_space_walk_check(kevo_space_walk *w, const kevo_config *cfg, char *why, size_t whylen);

/* Evaluate the launch plan for a valid configuration. */
kevo_status kevo_space_plan(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                            const kevo_config *cfg, kevo_plan *plan, kevo_err *err);

/* Append the family's prelude to src: its "#include <name>\n" lines, the
 * bytes every source kevo_space_render gives begins with (nothing for a
 * family without one).  Errors: KEVO_ERR_NOMEM. */
kevo_status kevo_space_render_prelude(const kevo_space *s, kv_buf *src, kevo_err *err);

/* Render the CUDA source for a configuration into src (appended), the
 * prelude first.  abi_header is the op's ABI header text, inlined. */
kevo_status kevo_space_render(const kevo_space *s, const kevo_config *cfg, kevo_dtype dt, const char *abi_header,
                              kv_buf *src, kevo_err *err);

/* Params as a JSON object text {"BM":128,...} into out (appended). */
kevo_status kevo_config_json(const kevo_space *s, const kevo_config *cfg, kv_buf *out);
/* Parse params JSON back; every param must be present as a whole number
 * (unknown keys and out-of-domain values pass: kevo_config_parse_stored
 * refuses them).  Errors: KEVO_ERR_PARSE. */
kevo_status kevo_config_parse_json(const kevo_space *s, const char *json, kevo_config *cfg, kevo_err *err);
/* Parse params stored in a DB (untrusted text) strictly against the family:
 * a JSON object whose every key is a param of s (given once), each value a
 * whole number among that param's values in the space file; a param the
 * family gained later may be missing (its "absent" value).  This is the
 * check for every use of a stored configuration (export, verify, resume):
 * unknown keys, 1e300, strings and out-of-domain values are refused.  who
 * names the row in messages ("candidate 12"; NULL: "stored params"); a key
 * that is not an identifier is described, never printed.
 * Errors: KEVO_ERR_PARSE naming who and the key. */
kevo_status kevo_config_parse_stored(const kevo_space *s, const char *json, const char *who, kevo_config *cfg,
                                     kevo_err *err);
/* Configuration order: -1, 0 or 1 as a's parameter values, in the family's
 * parameter order, come before, equal or after b's (a qsort comparison;
 * unset trailing values are 0 in both). */
int kevo_config_cmp(const kevo_config *a, const kevo_config *b);

/* Short text "BM=128 BN=64 ..." into out (truncated to n). */
void kevo_config_str(const kevo_space *s, const kevo_config *cfg, char *out, size_t n);

/* Plan <-> JSON text (stored in the DB with each candidate).  Parsing
 * takes untrusted text: entry and tensor names must be identifiers, sizes
 * numbers in range (u32; workspace up to 2^53), else KEVO_ERR_PARSE;
 * what parses prints back (kevo_plan_json) to text that parses to the same
 * plan. */
kevo_status kevo_plan_json(const kevo_plan *p, kv_buf *out);
kevo_status kevo_plan_parse_json(const char *json, kevo_plan *p, kevo_err *err);

#endif /* KEVO_SPACE_H */
