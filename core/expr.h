/* expr.h — integer expressions over named symbols, used by template space
 * files for constraints, derived values and launch plans.
 *
 * Grammar (C precedence and semantics on int64):
 *   expr    := cond
 *   cond    := or ( '?' expr ':' cond )?
 *   or      := and ( '||' and )*          and := cmp ( '&&' cmp )*
 *   cmp     := add ( ('=='|'!='|'<'|'<='|'>'|'>=') add )*
 *   add     := mul ( ('+'|'-') mul )*      mul := unary ( ('*'|'/'|'%') unary )*
 *   unary   := ('-'|'!'|'+') unary | primary
 *   primary := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 * Functions: cdiv(a,b) (ceil division), min, max (2 or more args),
 * round_up(a,b), log2(a) (floor; a > 0), is_pow2(a).
 * Errors (division by zero, overflow, unknown symbol or function, bad syntax,
 * nesting deeper than 64, text longer than 4096) are reported, never crash.
 */
#ifndef KEVO_EXPR_H
#define KEVO_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "kevo.h"

struct kv_buf; /* util/util.h */

#define KEVO_SYM_NAME_MAX 32
#define KEVO_SYMS_MAX 96

#define KEVO_SYMS_SLOTS 256 /* hash slots: a power of two over twice KEVO_SYMS_MAX */

/* A set of named int64 values: shape symbols, template parameters, derived
 * values, device limits.  Plain value type; copy freely.  Names keep their
 * insertion order (name[0..n)); slot[] is an open-addressing hash of them
 * (0: empty, else index + 1), so a lookup costs about one string compare:
 * ranking a space binds and evaluates every configuration's lets,
 * constraints and model terms, millions of lookups at start-up. */
typedef struct kevo_syms {
    int n;
    char name[KEVO_SYMS_MAX][KEVO_SYM_NAME_MAX];
    int64_t value[KEVO_SYMS_MAX];
    unsigned char slot[KEVO_SYMS_SLOTS];
} kevo_syms;

void kevo_syms_init(kevo_syms *s);
/* Add or replace.  Errors: KEVO_ERR_ARG (name empty or too long), KEVO_ERR_NOMEM (full). */
kevo_status kevo_syms_set(kevo_syms *s, const char *name, int64_t value);
/* True and *value set when name is bound. */
bool kevo_syms_get(const kevo_syms *s, const char *name, int64_t *value);
/* The hash kevo_syms files a name under: FNV-1a over its len bytes. */
uint32_t kevo_syms_hash(const char *name, size_t len);
/* kevo_syms_get for the len bytes at name (no terminator needed) whose
 * kevo_syms_hash is hash: what an expression, which hashes each name once
 * when parsed, reads at every evaluation. */
bool kevo_syms_find(const kevo_syms *s, const char *name, size_t len, uint32_t hash, int64_t *value);
/* Where name sits in name[]/value[] (stable until the set is copied over), or -1. */
int kevo_syms_index(const kevo_syms *s, const char *name);

/* A parsed expression; opaque. */
typedef struct kevo_expr kevo_expr;

/* Parse text.  On success *out owns a tree the caller frees with
 * kevo_expr_free().  Errors: KEVO_ERR_PARSE with the position in err. */
kevo_status kevo_expr_parse(const char *text, kevo_expr **out, kevo_err *err);

/* Evaluate against syms.  Errors: KEVO_ERR_ARG (unknown symbol, division by
 * zero, overflow, bad function arity or domain), message names the cause. */
kevo_status kevo_expr_eval(const kevo_expr *e, const kevo_syms *syms, int64_t *out, kevo_err *err);

/* Whether e names a symbol syms does not bind; the first such (in the
 * order of the text) is copied into name[n]. */
bool kevo_expr_unbound(const kevo_expr *e, const kevo_syms *syms, char *name, size_t n);

/* Whether e names the symbol name anywhere (a branch never taken included). */
bool kevo_expr_names(const kevo_expr *e, const char *name);

/* The text the expression was parsed from (owned by e). */
const char *kevo_expr_text(const kevo_expr *e);

void kevo_expr_free(kevo_expr *e);

/* Writes the C text of a symbol into out; KEVO_ERR_ARG when unknown. */
typedef kevo_status (*kevo_expr_sym_fn)(void *ctx, const char *name, struct kv_buf *out, kevo_err *err);

/* Append the expression as C over int64_t: every operator parenthesized,
 * symbols through sym(), functions and / % as calls of x_cdiv, x_round_up,
 * x_min, x_max (2 arguments), x_log2, x_is_pow2, x_div, x_mod, which the
 * generated code defines (kevo export).  Errors: those of sym(). */
kevo_status kevo_expr_to_c(const kevo_expr *e, struct kv_buf *out, kevo_expr_sym_fn sym, void *ctx, kevo_err *err);

/* Append e folded at a partial binding, for a reader: each subexpression
 * whose evaluation at syms succeeds (it reads only bound names; a branch not
 * taken is never read) becomes its value, a ?: whose condition is decided
 * becomes the branch taken, an operand that decides a '||' or '&&' decides
 * it, and x * 1, x / 1, x + 0, x - 0, 1 * x, 0 + x, cdiv(x, 1) and
 * round_up(x, 1) become x.
 * Wherever e evaluates at a binding that extends syms, the text evaluates to
 * the same value.  *is_const (when not NULL) says whether the text is one
 * number, *value (when not NULL) that number.  Errors: KEVO_ERR_ARG,
 * KEVO_ERR_NOMEM. */
kevo_status kevo_expr_fold(const kevo_expr *e, const kevo_syms *syms, struct kv_buf *out, bool *is_const,
                           int64_t *value, kevo_err *err);

/* Parse and evaluate in one call. */
kevo_status kevo_expr_eval_text(const char *text, const kevo_syms *syms, int64_t *out, kevo_err *err);

#endif /* KEVO_EXPR_H */
