/* check_int.h — private to llm/admit/: what the files of the static check
 * share (see check.c for the passes and which file holds each).
 *
 *   check.c        the entry points, the driver (init, flow, free) and the
 *                  shared utilities: tokens, interning, taint tables,
 *                  brackets, functions and macros
 *   check_rules.c  passes 2 and 3: directives and macros, forbidden names
 *                  and constructs
 *   check_ptx.c    pass 4: inline PTX, string literals and asm statements
 *   check_taint.c  pass 5's scanner and propagation (casts, loads, the
 *                  expression scan, the fixpoint step)
 *   check_sinks.c  pass 5's sinks (stores, casts, conditions) and helper
 *                  summaries
 *   check_casts.c  type aliases, cast and condition ranges, and pass 6:
 *                  addresses from integers
 *
 * Include it only from llm/admit/ (.ci/layers.py enforces that). */
#ifndef KEVO_LLM_CHECK_INT_H
#define KEVO_LLM_CHECK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llm/admit/check.h"
#include "llm/admit/lex.h"
#include "util/util.h"

#define CK_MAX_PARAMS 16
#define CK_MAX_FIELDS 64
#define CK_MAX_DEPTH 256 /* bracket nesting */
#define CK_SCAN_CAP 4096 /* tokens one expression scan walks */
#define CK_DECL_CAP 256  /* tokens one declaration scan walks */
/* Token visits of the whole check.  The fixpoints run until nothing changes;
 * a source that keeps them going past this is refused, never passed unchecked. */
#define CK_WORK_MAX 400000000ull

/* taint kinds */
enum { CK_IN = 1, CK_OUT = 2, CK_OVAL = 4, CK_PROBE = 8, CK_PVAL = 16, CK_INC = 32 /* holds input pointers */ };

/* A range of tokens [a, b) belonging to the construct at token at. */
typedef struct ck_range {
    int at, a, b;
} ck_range;

typedef struct ck_fn {
    int name;            /* token of the name; -1 unknown */
    int id;              /* interned name; -1 unknown */
    char text[64];
    int lp, rp, lb, rb;  /* parameter parens, body braces */
    int nparams;
    int param[CK_MAX_PARAMS]; /* token of each parameter's name, -1 unnamed */
    bool global, externc;
    /* parameter summaries, bit j for parameter j: it reaches a global store,
     * a load, a non-const pointer cast, a condition (in any form / as a value
     * read through it), the return value (as a pointer / as a value) */
    uint32_t s_store, s_load, s_cast, s_cond_any, s_cond_val, s_ret_ptr, s_ret_val;
    uint8_t ret;    /* taint kinds its return value has of itself (fields it reads) */
    int ret_origin; /* input of CK_IN in ret */
    int next_same;                    /* next function of the same name, -1 */
} ck_fn;

typedef struct ck_hent {
    uint64_t key; /* 0: empty */
    uint8_t kinds; /* of the variable as a whole */
    uint8_t part;  /* of some member of it (x.m = ...), when the variable as a whole has none */
    int16_t origin; /* input index of the CK_IN taint, -1: the argument struct */
} ck_hent;

typedef struct ck_taint {
    ck_hent *e;
    size_t cap, n;
} ck_taint;

/* An asm statement. */
typedef struct ck_asm {
    int kw, lp, rp;   /* the asm keyword, its parens */
    int nops;
    int op_lp[32];    /* paren of each operand's expression (outputs first) */
    int nout;         /* outputs */
    uint64_t store_ops, load_ops; /* bit k: operand k is a global store / load address; bit 63: all */
    bool stores, loads;
} ck_asm;

typedef struct ck {
    kevo_lex lx;
    int *match;   /* matching bracket of each ( [ { ) ] } in code, -1 otherwise */
    int *id;      /* interned identifier of each token, -1 otherwise */
    int nids;
    int *fn_of;   /* innermost function whose body holds the token, -1 */
    bool *in_load; /* inside the arguments of a load intrinsic */
    bool *deref_ctx; /* inside an expression that is dereferenced: *(...), *cast<>(...), (...)[i], (...)->f */
    bool *externc_blk;
    ck_fn *fn;
    int nfn;
    int *fn_by_id; /* first function of each interned name, -1 */
    ck_asm *as;
    int nas;
    const char *const *inputs;
    int ninputs;
    const char *const *outputs;
    int noutputs;
    int in_id[CK_MAX_FIELDS], out_id[CK_MAX_FIELDS];
    bool *is_struct_param; /* by token: a parameter name of a __global__ function */
    bool *alias_ptr;       /* by interned id: a typedef/using name for a non-const pointer type, or a template type */
    bool *str_macro;       /* by interned id: an object-like macro whose body is string literals */
    int *macro_dir;        /* by interned id: the '#' of its (last) #define, -1 */
    bool *struct_id;       /* by interned id: names a parameter of a __global__ function */
    bool *union_id;        /* by interned id: a union type, or a variable of one (its members alias) */
    bool *entry_macro;     /* by interned id: a function-like macro whose body has __global__ */
    int *entry_macro_arg;  /* by interned id: which parameter names the function */
    bool *entry_macro_ec;  /* by interned id: the macro's body has extern "C" */
    ck_range *casts; /* operands of casts to non-const pointers */
    int ncasts;
    ck_range *conds; /* conditions */
    int nconds;
    ck_taint taint;
    ck_taint arrays; /* (function, name) of the arrays declared in a function: "T name[...]" */
    unsigned long long *work; /* token visits so far (through a pointer: the scanners take a const ck) */
    char *why;
    size_t wn;
    bool failed;
} ck;

typedef struct ck_occ {
    bool in_ptr, in_any, out_ptr, oval; /* global analysis */
    bool inc;                           /* a holder of input pointers (an array or pointer to them) */
    bool p_ptr, p_val;                  /* probe analysis */
    int origin;                         /* of in_ptr: input index, -1: the argument struct or unknown */
    int any_origin;                     /* of in_any */
    int at;                             /* token of the first in_ptr occurrence */
} ck_occ;

enum { CK_GLOBAL_MODE = 0, CK_PROBE_MODE = 1 };

/* What reaches the sinks of [a, b) (function fn_only when >= 0). */
typedef struct ck_hits {
    int store, load, cast, cond_any, cond_val; /* token of the first hit, -1 */
    int origin;                                 /* input of the store, cast or escape hit (global analysis) */
    int escape; /* an input pointer's value stored to memory the check does not follow */
} ck_hits;

/* Whether token i spells s (the hot path of the whole check: first bytes first). */
static inline bool ck_is(const ck *c, int i, const char *s)
{
    if (i < 0 || i >= c->lx.ntok)
        return false;
    const kevo_tok *t = &c->lx.tok[i];
    if (t->kind == KEVO_TK_PUNCT)
        return t->punct[0] == s[0] && (s[0] == '\0' || strcmp(t->punct + 1, s + 1) == 0);
    const char *p = c->lx.text + t->off;
    return p[0] == s[0] && strncmp(p, s, t->len) == 0 && s[t->len] == '\0';
}

/* check.c */
bool ck_reject(ck *c, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
kevo_tok_kind ck_kind(const ck *c, int i);
bool ck_ident(const ck *c, int i);
bool ck_code(const ck *c, int i);
int ck_line(const ck *c, int i);
void ck_text(const ck *c, int i, char *out, size_t n);
bool ck_among(const ck *c, int i, const char *const *list);
bool ck_keyword(const ck *c, int i);
uint64_t ck_key(int fn, int id);
ck_hent *ck_tfind(const ck_taint *t, uint64_t key);
bool ck_tadd(ck_taint *t, int fn, int id, uint8_t kinds, int origin, bool *oom);
bool ck_tadd_member(ck_taint *t, int fn, int id, int mid, uint8_t kinds, int origin, bool *oom);
uint8_t ck_tget(const ck *c, const ck_taint *t, int fn, int i, int *origin);
int ck_angle(const ck *c, int i);
int ck_call_lp(const ck *c, int i);
int ck_args(const ck *c, int lp, int rp, int *start, int *end, int max);
int ck_decl_start(const ck *c, int i);

/* check_rules.c */
bool ck_field(const ck *c, int i, bool *input, int *idx);
bool ck_directives(ck *c);
bool ck_tokens(ck *c);

/* check_ptx.c */
bool ck_strings(ck *c);
bool ck_asms(ck *c);

/* check_taint.c */
extern const char *const ck_load_intrinsics[];
extern const char *const ck_store_intrinsics[];
extern const char *const ck_named_casts[];
bool ck_named_cast_at(ck *c, int i, const char *const *names, int *ts, int *te, int *os, int *oe);
void ck_mark_loads(ck *c);
bool ck_unary(const ck *c, int i);
bool ck_deref(const ck *c, int r, int t);
int ck_deref_count(const ck *c, int r, int t);
int ck_chain_root(const ck *c, int t);
void ck_scan(const ck *c, const ck_taint *tt, int mode, int fn, int a, int b, ck_occ *o);
int ck_expr_end(const ck *c, int i);
int ck_expr_start(const ck *c, int i);
bool ck_assign_op(const ck *c, int i);
bool ck_declarator(const ck *c, int r);
int ck_lhs_root(const ck *c, int op, bool *through, int *member);
bool ck_first_arg_is(const ck *c, int lp, const char *space);
bool ck_bulk_call(const ck *c, int i);
int ck_first_asm(const ck *c, int a);
int ck_first_range(const ck_range *r, int n, int a);
bool ck_propagate(ck *c, ck_taint *tt, int mode, int fn_only, int a, int b, bool *oom);

/* check_sinks.c */
void ck_sinks(ck *c, const ck_taint *tt, int mode, int fn_only, int a, int b, ck_hits *h);
bool ck_summaries(ck *c);

/* check_casts.c */
void ck_aliases(ck *c);
int ck_type_class(const ck *c, int a, int b);
int ck_unary_end(const ck *c, int i, int depth);
bool ck_ranges(ck *c);
bool ck_addresses(ck *c);

#endif /* KEVO_LLM_CHECK_INT_H */
