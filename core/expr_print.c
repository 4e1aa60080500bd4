/* expr_print.c — a parsed expression written out again: as C for kevo
 * export (kevo_expr_to_c), or folded at a partial binding for a reader
 * (kevo_expr_fold).  See expr.h. */
#include "core/expr.h"
#include "core/expr_int.h"

#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- C emitter */

/* Emit node idx as C (every operator parenthesized; functions as x_* helpers
 * the caller defines: x_cdiv, x_round_up, x_min, x_max, x_log2, x_is_pow2,
 * x_div, x_mod). */
static kevo_status ex_to_c(const kevo_expr *e, int idx, kv_buf *out, kevo_expr_sym_fn sym, void *ctx, kevo_err *err)
{
    const ex_node *n = &e->nodes[idx];
    const ex_kid *k = (n->kind == EXN_NUM || n->kind == EXN_SYM) ? NULL : e->kids + n->first;
    kevo_status st = KEVO_OK;
    switch (n->kind) {
    case EXN_NUM:
        return kv_buf_printf(out, "INT64_C(%" PRId64 ")", n->num);
    case EXN_SYM: {
        char name[KEVO_SYM_NAME_MAX];
        memcpy(name, e->text + n->first, (size_t)n->n);
        name[n->n] = '\0';
        return sym(ctx, name, out, err);
    }
    case EXN_UNARY:
        kv_buf_puts(out, n->op == EX_NOT ? "(!" : "(-");
        if ((st = ex_to_c(e, k[0].node, out, sym, ctx, err)))
            return st;
        return kv_buf_puts(out, ")");
    case EXN_COND:
        kv_buf_puts(out, "(");
        for (int i = 0; i < 3 && !st; i++) {
            if (i)
                kv_buf_puts(out, i == 1 ? " ? " : " : ");
            st = ex_to_c(e, k[i].node, out, sym, ctx, err);
        }
        return st ? st : kv_buf_puts(out, ")");
    case EXN_CALL: {
        const char *name = ex_funcs[n->op].name;
        int lo = ex_funcs[n->op].min_args, hi = ex_funcs[n->op].max_args;
        if (n->n < lo || n->n > hi)
            return ex_eval_fail(e, n->col, err, "function '%s' has the wrong number of arguments", name);
        /* min and max of more than two fold into nested pairs */
        for (int i = 0; i < (n->n > 2 ? n->n - 2 : 0); i++)
            kv_buf_printf(out, "x_%s(", name);
        kv_buf_printf(out, "x_%s(", name);
        for (int i = 0; i < n->n && !st; i++) {
            if (i)
                kv_buf_puts(out, i >= 2 ? "), " : ", ");
            st = ex_to_c(e, k[i].node, out, sym, ctx, err);
        }
        return st ? st : kv_buf_puts(out, ")");
    }
    case EXN_CHAIN: {
        /* left to right, each step parenthesized, / and % as x_div, x_mod */
        kv_buf acc, rhs, next;
        kv_buf_init(&acc);
        kv_buf_init(&rhs);
        kv_buf_init(&next);
        st = ex_to_c(e, k[0].node, &acc, sym, ctx, err);
        for (int i = 1; i < n->n && !st; i++) {
            int op = n->op == EX_OR || n->op == EX_AND ? n->op : k[i].op;
            rhs.len = 0;
            if ((st = ex_to_c(e, k[i].node, &rhs, sym, ctx, err)))
                break;
            next.len = 0;
            if (op == EX_DIV || op == EX_MOD)
                st = kv_buf_printf(&next, "x_%s(%s, %s)", op == EX_DIV ? "div" : "mod", acc.data, rhs.data);
            else
                st = kv_buf_printf(&next, "(%s %s %s)", acc.data, ex_op_text[op], rhs.data);
            kv_buf t = acc;
            acc = next;
            next = t;
        }
        if (!st)
            st = kv_buf_append(out, acc.data, acc.len);
        kv_buf_release(&acc);
        kv_buf_release(&rhs);
        kv_buf_release(&next);
        return st;
    }
    }
    return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad node kind %d in '%s'", n->kind, e->text);
}

kevo_status kevo_expr_to_c(const kevo_expr *e, kv_buf *out, kevo_expr_sym_fn sym, void *ctx, kevo_err *err)
{
    if (!e || !out || !sym)
        return kevo_err_set(err, KEVO_ERR_ARG, "no expression, output or symbol function");
    return ex_to_c(e, e->root, out, sym, ctx, err);
}
/* ---------------------------------------------------------------- fold */

/* How tightly a folded text binds, for its parent's parentheses: a ?: the
 * loosest, then a chain's precedence level (0 '||', 1 '&&', 2 comparisons,
 * 3 additive, 4 multiplicative), then a name, number, call or unary. */
enum { EXL_COND = -1, EXL_ATOM = 5 };

/* What a node folded to: its text, how it binds, and whether it is a
 * number (then value) or a truth value (0 or 1 whatever the binding). */
typedef struct ex_fold_out {
    kv_buf text;
    int level;
    bool is_const, boolean;
    int64_t value;
} ex_fold_out;

static void ex_fold_init(ex_fold_out *o)
{
    kv_buf_init(&o->text);
    o->level = EXL_ATOM;
    o->is_const = o->boolean = false;
    o->value = 0;
}

/* o becomes the number v (in parentheses when negative). */
static kevo_status ex_fold_num(ex_fold_out *o, int64_t v)
{
    o->is_const = true;
    o->value = v;
    o->boolean = v == 0 || v == 1;
    o->level = EXL_ATOM;
    return kv_buf_printf(&o->text, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
}

/* Append k's text, in parentheses when paren. */
static kevo_status ex_fold_put(kv_buf *b, const ex_fold_out *k, bool paren)
{
    return paren ? kv_buf_printf(b, "(%s)", k->text.data) : kv_buf_append(b, k->text.data, k->text.len);
}

/* o takes k's text and figures (k is left empty). */
static void ex_fold_move(ex_fold_out *o, ex_fold_out *k)
{
    kv_buf_release(&o->text);
    *o = *k;
    ex_fold_init(k);
}

/* A chain's precedence level (see EXL_*). */
static int ex_chain_level(const ex_node *n, const ex_kid *k)
{
    if (n->op == EX_OR || n->op == EX_AND)
        return n->op == EX_OR ? 0 : 1;
    int op = k[1].op;
    return op >= EX_EQ && op <= EX_GE ? 2 : op == EX_ADD || op == EX_SUB ? 3 : 4;
}

static kevo_status ex_fold(const kevo_expr *e, int idx, const kevo_syms *syms, ex_fold_out *o);

/* Whether operand k, joined by op, leaves the value on its left as it is
 * (* 1, / 1, + 0, - 0). */
static bool ex_neutral(int op, const ex_fold_out *k)
{
    return k->is_const && (((op == EX_MUL || op == EX_DIV) && k->value == 1) ||
                           ((op == EX_ADD || op == EX_SUB) && k->value == 0));
}

/* A chain of '||' or '&&' whose operands are folded in kid[0..n): an
 * operand that decides it makes it a number; one that cannot is left out. */
static kevo_status ex_fold_logic(int level, ex_fold_out *kid, int n, ex_fold_out *o)
{
    int left = 0, last = -1;
    for (int i = 0; i < n; i++) {
        if (kid[i].is_const && (kid[i].value != 0) == (level == 0))
            return ex_fold_num(o, level == 0);
        if (!kid[i].is_const) {
            left++;
            last = i;
        }
    }
    if (left == 0)
        return ex_fold_num(o, level == 1);
    if (left == 1 && kid[last].boolean) {
        ex_fold_move(o, &kid[last]);
        return KEVO_OK;
    }
    o->level = left == 1 ? 2 : level;
    o->boolean = true;
    kevo_status st = KEVO_OK;
    for (int i = 0, shown = 0; i < n && !st; i++) {
        if (kid[i].is_const)
            continue;
        if (shown++)
            st = kv_buf_puts(&o->text, level == 0 ? " || " : " && ");
        if (!st)
            st = ex_fold_put(&o->text, &kid[i], kid[i].level <= o->level);
    }
    return st ? st : left == 1 ? kv_buf_puts(&o->text, " != 0") : KEVO_OK; /* its truth, as the chain gave */
}

/* An arithmetic or comparison chain whose operands are folded in kid[0..n):
 * a run of numbers at its start becomes one (left to right, as it
 * evaluates), x * 1, x / 1, x + 0 and x - 0 lose the number, and so do
 * 1 * x and 0 + x at the start. */
static kevo_status ex_fold_arith(const kevo_expr *e, int level, const ex_kid *k, ex_fold_out *kid, int n,
                                 ex_fold_out *o)
{
    int i = 1;
    int64_t acc = kid[0].value;
    bool folded = false;
    while (kid[0].is_const && i < n && kid[i].is_const && level >= 3 &&
           ex_binary(e, k[i].op, k[i].col, acc, kid[i].value, &acc, NULL) == KEVO_OK && acc != INT64_MIN) {
        i++;
        folded = true;
    }
    ex_fold_out head;
    ex_fold_init(&head);
    kevo_status st = folded ? ex_fold_num(&head, acc) : KEVO_OK;
    if (!folded)
        ex_fold_move(&head, &kid[0]);
    /* 1 * x and 0 + x: x alone begins the chain */
    if (!st && i < n && head.is_const &&
        ((level == 4 && k[i].op == EX_MUL && head.value == 1) || (level == 3 && k[i].op == EX_ADD && head.value == 0))) {
        kv_buf_release(&head.text);
        ex_fold_move(&head, &kid[i++]);
    }
    bool alone = true;
    for (int j = i; j < n; j++)
        alone = alone && ex_neutral(k[j].op, &kid[j]);
    if (!st && alone) {
        ex_fold_move(o, &head);
        return KEVO_OK;
    }
    o->level = level;
    o->boolean = level == 2;
    if (!st)
        st = ex_fold_put(&o->text, &head, head.level < level);
    for (int j = i; j < n && !st; j++) {
        if (ex_neutral(k[j].op, &kid[j]))
            continue;
        st = kv_buf_printf(&o->text, " %s ", ex_op_text[k[j].op]);
        if (!st)
            st = ex_fold_put(&o->text, &kid[j], kid[j].level <= level);
    }
    kv_buf_release(&head.text);
    return st;
}

static kevo_status ex_fold_chain(const kevo_expr *e, const ex_node *n, const ex_kid *k, const kevo_syms *syms,
                                 ex_fold_out *o)
{
    ex_fold_out *kid = calloc((size_t)n->n, sizeof *kid);
    if (!kid)
        return KEVO_ERR_NOMEM;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n->n; i++)
        ex_fold_init(&kid[i]);
    for (int i = 0; i < n->n && !st; i++)
        st = ex_fold(e, k[i].node, syms, &kid[i]);
    int level = ex_chain_level(n, k);
    if (!st)
        st = level <= 1 ? ex_fold_logic(level, kid, n->n, o) : ex_fold_arith(e, level, k, kid, n->n, o);
    for (int i = 0; i < n->n; i++)
        kv_buf_release(&kid[i].text);
    free(kid);
    return st;
}

/* Fold node idx into o (empty on entry).  A node whose evaluation succeeds
 * at syms reads only bound names (a branch not taken is never read), so it
 * has that value at every binding that extends syms: it becomes a number. */
static kevo_status ex_fold(const kevo_expr *e, int idx, const kevo_syms *syms, ex_fold_out *o)
{
    const ex_node *n = &e->nodes[idx];
    const ex_kid *k = (n->kind == EXN_NUM || n->kind == EXN_SYM) ? NULL : e->kids + n->first;
    int64_t v;
    if (ex_eval(e, idx, syms, &v, NULL) == KEVO_OK && v != INT64_MIN)
        return ex_fold_num(o, v);
    kevo_status st = KEVO_OK;
    ex_fold_out a, b, c;
    ex_fold_init(&a);
    ex_fold_init(&b);
    ex_fold_init(&c);
    switch (n->kind) {
    case EXN_NUM: /* a number evaluates: not reached */
        st = kv_buf_printf(&o->text, "%" PRId64, n->num);
        break;
    case EXN_SYM:
        st = kv_buf_append(&o->text, e->text + n->first, (size_t)n->n);
        break;
    case EXN_UNARY:
        st = ex_fold(e, k[0].node, syms, &a);
        o->boolean = n->op == EX_NOT;
        if (!st)
            st = kv_buf_puts(&o->text, n->op == EX_NOT ? "!" : "-");
        if (!st)
            st = ex_fold_put(&o->text, &a, a.level != EXL_ATOM);
        break;
    case EXN_COND:
        st = ex_fold(e, k[0].node, syms, &a);
        if (!st && a.is_const) { /* decided: the branch taken */
            st = ex_fold(e, k[a.value != 0 ? 1 : 2].node, syms, o);
            break;
        }
        if (!st)
            st = ex_fold(e, k[1].node, syms, &b);
        if (!st)
            st = ex_fold(e, k[2].node, syms, &c);
        o->level = EXL_COND;
        o->boolean = b.boolean && c.boolean;
        if (!st)
            st = ex_fold_put(&o->text, &a, a.level == EXL_COND);
        if (!st)
            st = kv_buf_puts(&o->text, " ? ");
        if (!st)
            st = ex_fold_put(&o->text, &b, b.level == EXL_COND);
        if (!st)
            st = kv_buf_puts(&o->text, " : ");
        if (!st)
            st = ex_fold_put(&o->text, &c, false);
        break;
    case EXN_CALL:
        if ((n->op == EXF_CDIV || n->op == EXF_ROUND_UP) && n->n == 2) { /* cdiv(x, 1) and round_up(x, 1) are x */
            st = ex_fold(e, k[1].node, syms, &b);
            if (!st && b.is_const && b.value == 1) {
                st = ex_fold(e, k[0].node, syms, o);
                break;
            }
        }
        st = kv_buf_printf(&o->text, "%s(", ex_funcs[n->op].name);
        for (int i = 0; i < n->n && !st; i++) {
            kv_buf_release(&a.text);
            ex_fold_init(&a);
            st = i ? kv_buf_puts(&o->text, ", ") : KEVO_OK;
            if (!st)
                st = ex_fold(e, k[i].node, syms, &a);
            if (!st)
                st = ex_fold_put(&o->text, &a, false);
        }
        if (!st)
            st = kv_buf_puts(&o->text, ")");
        break;
    case EXN_CHAIN:
        st = ex_fold_chain(e, n, k, syms, o);
        break;
    }
    kv_buf_release(&a.text);
    kv_buf_release(&b.text);
    kv_buf_release(&c.text);
    return st;
}

kevo_status kevo_expr_fold(const kevo_expr *e, const kevo_syms *syms, kv_buf *out, bool *is_const, int64_t *value,
                           kevo_err *err)
{
    if (!e || !out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no expression or output");
    ex_fold_out o;
    ex_fold_init(&o);
    kevo_status st = ex_fold(e, e->root, syms, &o);
    if (!st)
        st = kv_buf_append(out, o.text.data, o.text.len);
    if (!st && is_const)
        *is_const = o.is_const;
    if (!st && value)
        *value = o.value;
    kv_buf_release(&o.text);
    return st ? kevo_err_set(err, st, "out of memory folding '%s'", e->text) : KEVO_OK;
}
