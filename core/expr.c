/* expr.c — integer expressions over named symbols (see expr.h).
 *
 * The text is parsed once, by recursive descent, into a flat tree: every node
 * lives in one array and every child list in another, so freeing is three
 * free() calls and a failed parse leaks nothing.  Runs of one precedence level
 * ("1+2-3+...") become a single n-ary chain node, so the depth of the tree is
 * bounded by the nesting limit, not by the length of the text, and evaluation
 * recursion stays shallow on any input.
 *
 * Evaluation is on int64 with C semantics (truncating '/' and '%'); every
 * operation that could overflow is checked, and errors name the cause and the
 * 1-based column of the operator or name that raised them.
 */
#include "core/expr.h"
#include "core/expr_int.h"

#include "util/util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_TEXT_MAX 4096 /* longest text accepted, in characters */
#define EX_DEPTH_MAX 64  /* deepest nesting of (), unary ops, calls, ?: */

const char *const ex_op_text[] = {
    [EX_NONE] = "?", [EX_OR] = "||", [EX_AND] = "&&", [EX_EQ] = "==", [EX_NE] = "!=",
    [EX_LT] = "<",   [EX_LE] = "<=", [EX_GT] = ">",   [EX_GE] = ">=", [EX_ADD] = "+",
    [EX_SUB] = "-",  [EX_MUL] = "*", [EX_DIV] = "/",  [EX_MOD] = "%", [EX_NEG] = "-",
    [EX_NOT] = "!",
};

const ex_func ex_funcs[] = {
    [EXF_CDIV] = {"cdiv", 2, 2},
    [EXF_MIN] = {"min", 2, INT_MAX},
    [EXF_MAX] = {"max", 2, INT_MAX},
    [EXF_ROUND_UP] = {"round_up", 2, 2},
    [EXF_LOG2] = {"log2", 1, 1},
    [EXF_IS_POW2] = {"is_pow2", 1, 1},
};
#define EX_NFUNCS ((int)(sizeof ex_funcs / sizeof ex_funcs[0]))

/* ---------------------------------------------------------------- lexer */

enum {
    T_END, T_INT, T_NAME, T_LP, T_RP, T_COMMA, T_QUEST, T_COLON,
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PCT, T_BANG,
    T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_ANDAND, T_OROR,
    T_BAD, /* a character no token starts with */
};

typedef struct ex_tok {
    int kind;
    size_t pos, len;
    int64_t num;
} ex_tok;

typedef struct ex_parser {
    const char *s;
    size_t pos; /* where the lexer resumes */
    ex_tok tok; /* current token */
    int depth;
    kevo_expr *e;
    ex_kid *stk; /* children of chains and calls being built */
    int nstk, scap;
    kevo_err *err;
    kevo_status st;
} ex_parser;

/* Record a parse error at byte offset pos ("<what> at column N in '<text>'");
 * only the first error is kept.  Returns -1 so callers can return it. */
static int ex_fail(ex_parser *p, size_t pos, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int ex_fail(ex_parser *p, size_t pos, const char *fmt, ...)
{
    if (p->st != KEVO_OK)
        return -1;
    char what[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    p->st = kevo_err_set(p->err, KEVO_ERR_PARSE, "%s at column %zu in '%s'", what, pos + 1, p->s);
    return -1;
}

static int ex_nomem(ex_parser *p)
{
    if (p->st == KEVO_OK)
        p->st = kevo_err_set(p->err, KEVO_ERR_NOMEM, "out of memory parsing '%s'", p->s);
    return -1;
}

static int ex_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int ex_is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int ex_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Value of c as a digit in base 10 or 16, or -1. */
static int ex_digit(char c, int base)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (base == 16 && c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Lex an integer literal starting at p->s[i] into p->tok: decimal, or hex
 * after 0x.  Out of range for int64 is an error, and so is a leading zero
 * (C would read 010 as octal; kevo refuses rather than guess). */
static int ex_lex_int(ex_parser *p, size_t i)
{
    const char *s = p->s;
    size_t start = i;
    int base = 10;
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        base = 16;
        i += 2;
        if (ex_digit(s[i], 16) < 0)
            return ex_fail(p, i, "expected hex digit");
    } else if (s[i] == '0' && ex_is_digit(s[i + 1])) {
        return ex_fail(p, start, "integer literal with a leading zero (octal is not supported)");
    }
    int64_t v = 0;
    int overflow = 0;
    for (int d; (d = ex_digit(s[i], base)) >= 0; i++) {
        if (v > (INT64_MAX - d) / base)
            overflow = 1;
        else
            v = v * base + d;
    }
    if (overflow) {
        int n = (int)(i - start);
        return ex_fail(p, start, "integer literal '%.*s%s' out of range", n > 40 ? 40 : n, s + start,
                       n > 40 ? "..." : "");
    }
    p->tok.kind = T_INT;
    p->tok.num = v;
    p->tok.len = i - start;
    return 0;
}

/* Advance to the next token.  Returns -1 after a lexical error. */
static int ex_next(ex_parser *p)
{
    const char *s = p->s;
    size_t i = p->pos;
    while (ex_is_space(s[i]))
        i++;
    ex_tok *t = &p->tok;
    t->pos = i;
    t->len = 1;
    t->num = 0;
    char c = s[i], d = c ? s[i + 1] : '\0';
    if (c == '\0') {
        t->kind = T_END;
        t->len = 0;
    } else if (ex_is_digit(c)) {
        if (ex_lex_int(p, i) < 0)
            return -1;
    } else if (ex_is_alpha(c)) {
        size_t j = i;
        while (ex_is_alpha(s[j]) || ex_is_digit(s[j]))
            j++;
        if (j - i >= KEVO_SYM_NAME_MAX)
            return ex_fail(p, i, "name '%.*s...' longer than %d characters", KEVO_SYM_NAME_MAX - 1, s + i,
                           KEVO_SYM_NAME_MAX - 1);
        t->kind = T_NAME;
        t->len = j - i;
    } else {
        switch (c) {
        case '(': t->kind = T_LP; break;
        case ')': t->kind = T_RP; break;
        case ',': t->kind = T_COMMA; break;
        case '?': t->kind = T_QUEST; break;
        case ':': t->kind = T_COLON; break;
        case '+': t->kind = T_PLUS; break;
        case '-': t->kind = T_MINUS; break;
        case '*': t->kind = T_STAR; break;
        case '/': t->kind = T_SLASH; break;
        case '%': t->kind = T_PCT; break;
        case '!': t->kind = d == '=' ? T_NE : T_BANG; break;
        case '<': t->kind = d == '=' ? T_LE : T_LT; break;
        case '>': t->kind = d == '=' ? T_GE : T_GT; break;
        case '=': t->kind = d == '=' ? T_EQ : T_BAD; break;
        case '&': t->kind = d == '&' ? T_ANDAND : T_BAD; break;
        case '|': t->kind = d == '|' ? T_OROR : T_BAD; break;
        default: t->kind = T_BAD; break;
        }
        if (t->kind == T_NE || t->kind == T_LE || t->kind == T_GE || t->kind == T_EQ || t->kind == T_ANDAND ||
            t->kind == T_OROR)
            t->len = 2;
    }
    p->pos = i + t->len;
    return 0;
}

/* --------------------------------------------------------------- parser */

static int ex_new_node(ex_parser *p, int kind, int op, size_t pos)
{
    kevo_expr *e = p->e;
    if (e->nnodes == e->ncap) {
        int cap = e->ncap ? e->ncap * 2 : 16;
        ex_node *n = realloc(e->nodes, (size_t)cap * sizeof *n);
        if (!n)
            return ex_nomem(p);
        e->nodes = n;
        e->ncap = cap;
    }
    ex_node *n = &e->nodes[e->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->op = (uint8_t)op;
    n->col = (int)pos + 1;
    return e->nnodes++;
}

/* Push a child onto the parser's scratch stack. */
static int ex_push(ex_parser *p, int node, size_t pos, int op)
{
    if (p->nstk == p->scap) {
        int cap = p->scap ? p->scap * 2 : 16;
        ex_kid *k = realloc(p->stk, (size_t)cap * sizeof *k);
        if (!k)
            return ex_nomem(p);
        p->stk = k;
        p->scap = cap;
    }
    p->stk[p->nstk++] = (ex_kid){node, (int)pos + 1, (uint8_t)op};
    return 0;
}

/* Make a node whose children are the scratch stack entries from base up,
 * moving them into the expression's kid array. */
static int ex_node_from_stack(ex_parser *p, int kind, int op, size_t pos, int base)
{
    kevo_expr *e = p->e;
    int n = p->nstk - base;
    if (e->kcap - e->nkids < n) {
        int cap = e->kcap ? e->kcap : 16;
        while (cap - e->nkids < n)
            cap *= 2;
        ex_kid *k = realloc(e->kids, (size_t)cap * sizeof *k);
        if (!k)
            return ex_nomem(p);
        e->kids = k;
        e->kcap = cap;
    }
    int idx = ex_new_node(p, kind, op, pos);
    if (idx < 0)
        return -1;
    memcpy(e->kids + e->nkids, p->stk + base, (size_t)n * sizeof *e->kids);
    e->nodes[idx].first = e->nkids;
    e->nodes[idx].n = n;
    e->nkids += n;
    p->nstk = base;
    return idx;
}

/* Enter one level of nesting at byte offset pos; fails past the limit. */
static int ex_enter(ex_parser *p, size_t pos)
{
    if (++p->depth > EX_DEPTH_MAX)
        return ex_fail(p, pos, "nesting deeper than %d levels", EX_DEPTH_MAX);
    return 0;
}

static int ex_cond(ex_parser *p);

/* The binary operator token kind t stands for at precedence level
 * (0 '||', 1 '&&', 2 comparisons, 3 additive, 4 multiplicative), or EX_NONE. */
static int ex_binop(int level, int t)
{
    switch (level) {
    case 0: return t == T_OROR ? EX_OR : EX_NONE;
    case 1: return t == T_ANDAND ? EX_AND : EX_NONE;
    case 2:
        switch (t) {
        case T_EQ: return EX_EQ;
        case T_NE: return EX_NE;
        case T_LT: return EX_LT;
        case T_LE: return EX_LE;
        case T_GT: return EX_GT;
        case T_GE: return EX_GE;
        }
        return EX_NONE;
    case 3: return t == T_PLUS ? EX_ADD : t == T_MINUS ? EX_SUB : EX_NONE;
    default:
        return t == T_STAR ? EX_MUL : t == T_SLASH ? EX_DIV : t == T_PCT ? EX_MOD : EX_NONE;
    }
}

static int ex_primary(ex_parser *p);

/* unary := ('-'|'!'|'+') unary | primary.  Each prefix operator is one
 * level of nesting. */
static int ex_unary(ex_parser *p)
{
    int t = p->tok.kind;
    if (t != T_MINUS && t != T_BANG && t != T_PLUS)
        return ex_primary(p);
    size_t pos = p->tok.pos;
    if (ex_enter(p, pos) < 0 || ex_next(p) < 0)
        return -1;
    int k = ex_unary(p);
    if (k < 0)
        return -1;
    p->depth--;
    if (t == T_PLUS)
        return k;
    if (ex_push(p, k, pos, EX_NONE) < 0)
        return -1;
    return ex_node_from_stack(p, EXN_UNARY, t == T_MINUS ? EX_NEG : EX_NOT, pos, p->nstk - 1);
}

/* One left-associative precedence level (see ex_binop); a run of two or more
 * operands becomes one chain node. */
static int ex_chain(ex_parser *p, int level)
{
    int first = level == 4 ? ex_unary(p) : ex_chain(p, level + 1);
    if (first < 0)
        return -1;
    int op = ex_binop(level, p->tok.kind);
    if (op == EX_NONE)
        return first;
    int base = p->nstk;
    size_t pos0 = p->tok.pos;
    if (ex_push(p, first, 0, EX_NONE) < 0)
        return -1;
    while (op != EX_NONE) {
        size_t pos = p->tok.pos;
        if (ex_next(p) < 0)
            return -1;
        int k = level == 4 ? ex_unary(p) : ex_chain(p, level + 1);
        if (k < 0 || ex_push(p, k, pos, op) < 0)
            return -1;
        op = ex_binop(level, p->tok.kind);
    }
    int kind_op = level == 0 ? EX_OR : level == 1 ? EX_AND : EX_NONE;
    return ex_node_from_stack(p, EXN_CHAIN, kind_op, pos0, base);
}

/* Look a function name up; -1 when unknown. */
static int ex_func_lookup(const char *s, size_t len)
{
    for (int i = 0; i < EX_NFUNCS; i++)
        if (strlen(ex_funcs[i].name) == len && memcmp(ex_funcs[i].name, s, len) == 0)
            return i;
    return -1;
}

/* primary := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')' */
static int ex_primary(ex_parser *p)
{
    ex_tok t = p->tok;
    if (t.kind == T_INT) {
        int idx = ex_new_node(p, EXN_NUM, EX_NONE, t.pos);
        if (idx < 0 || ex_next(p) < 0)
            return -1;
        p->e->nodes[idx].num = t.num;
        return idx;
    }
    if (t.kind == T_LP) {
        if (ex_enter(p, t.pos) < 0 || ex_next(p) < 0)
            return -1;
        int k = ex_cond(p);
        if (k < 0)
            return -1;
        if (p->tok.kind != T_RP)
            return ex_fail(p, p->tok.pos, "expected ')'");
        if (ex_next(p) < 0)
            return -1;
        p->depth--;
        return k;
    }
    if (t.kind != T_NAME)
        return ex_fail(p, t.pos, "expected expression");
    if (ex_next(p) < 0)
        return -1;
    if (p->tok.kind != T_LP) {
        int idx = ex_new_node(p, EXN_SYM, EX_NONE, t.pos);
        if (idx < 0)
            return -1;
        p->e->nodes[idx].first = (int)t.pos;
        p->e->nodes[idx].n = (int)t.len;
        p->e->nodes[idx].hash = kevo_syms_hash(p->s + t.pos, t.len);
        return idx;
    }
    int fn = ex_func_lookup(p->s + t.pos, t.len);
    if (fn < 0)
        return ex_fail(p, t.pos, "unknown function '%.*s'", (int)t.len, p->s + t.pos);
    if (ex_enter(p, p->tok.pos) < 0 || ex_next(p) < 0)
        return -1;
    int base = p->nstk;
    for (;;) {
        size_t pos = p->tok.pos;
        int k = ex_cond(p);
        if (k < 0 || ex_push(p, k, pos, EX_NONE) < 0)
            return -1;
        if (p->tok.kind == T_COMMA) {
            if (ex_next(p) < 0)
                return -1;
            continue;
        }
        if (p->tok.kind != T_RP)
            return ex_fail(p, p->tok.pos, "expected ',' or ')'");
        break;
    }
    if (ex_next(p) < 0)
        return -1;
    p->depth--;
    return ex_node_from_stack(p, EXN_CALL, fn, t.pos, base);
}

/* cond := or ( '?' expr ':' cond )?  The branches are one level of nesting. */
static int ex_cond(ex_parser *p)
{
    int c = ex_chain(p, 0);
    if (c < 0 || p->tok.kind != T_QUEST)
        return c;
    size_t pos = p->tok.pos;
    if (ex_enter(p, pos) < 0 || ex_next(p) < 0)
        return -1;
    int a = ex_cond(p);
    if (a < 0)
        return -1;
    if (p->tok.kind != T_COLON)
        return ex_fail(p, p->tok.pos, "expected ':'");
    if (ex_next(p) < 0)
        return -1;
    int b = ex_cond(p);
    if (b < 0)
        return -1;
    p->depth--;
    int base = p->nstk;
    if (ex_push(p, c, pos, EX_NONE) < 0 || ex_push(p, a, pos, EX_NONE) < 0 || ex_push(p, b, pos, EX_NONE) < 0)
        return -1;
    return ex_node_from_stack(p, EXN_COND, EX_NONE, pos, base);
}

kevo_status kevo_expr_parse(const char *text, kevo_expr **out, kevo_err *err)
{
    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no place for the parsed expression");
    *out = NULL;
    if (!text)
        return kevo_err_set(err, KEVO_ERR_ARG, "no expression text");
    size_t len = 0;
    while (len <= EX_TEXT_MAX && text[len])
        len++;
    if (len > EX_TEXT_MAX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "expression '%.32s...' longer than %d characters", text,
                            EX_TEXT_MAX);

    kevo_expr *e = calloc(1, sizeof *e);
    if (!e)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory parsing '%s'", text);
    e->text = malloc(len + 1);
    if (!e->text) {
        free(e);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory parsing '%s'", text);
    }
    memcpy(e->text, text, len + 1);

    ex_parser p = {.s = e->text, .e = e, .err = err, .st = KEVO_OK};
    if (ex_next(&p) == 0) {
        e->root = ex_cond(&p);
        if (e->root >= 0 && p.tok.kind != T_END)
            ex_fail(&p, p.tok.pos, "expected operator or end of text");
    }
    free(p.stk);
    if (p.st != KEVO_OK) {
        kevo_expr_free(e);
        return p.st;
    }
    *out = e;
    return KEVO_OK;
}

/* ------------------------------------------------------------ evaluator */

/* Record an evaluation error at a node's column; returns KEVO_ERR_ARG. */
kevo_status ex_eval_fail(const kevo_expr *e, int col, kevo_err *err, const char *fmt, ...)
{
    if (!err)
        return KEVO_ERR_ARG;
    char what[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kevo_err_set(err, KEVO_ERR_ARG, "%s at column %d in '%s'", what, col, e->text);
}

/* a op b for a binary arithmetic or comparison operator, checked. */
kevo_status ex_binary(const kevo_expr *e, int op, int col, int64_t a, int64_t b, int64_t *r, kevo_err *err)
{
    switch (op) {
    case EX_ADD:
        if (__builtin_add_overflow(a, b, r))
            break;
        return KEVO_OK;
    case EX_SUB:
        if (__builtin_sub_overflow(a, b, r))
            break;
        return KEVO_OK;
    case EX_MUL:
        if (__builtin_mul_overflow(a, b, r))
            break;
        return KEVO_OK;
    case EX_DIV:
        if (b == 0)
            return ex_eval_fail(e, col, err, "division by zero");
        if (a == INT64_MIN && b == -1)
            break;
        *r = a / b;
        return KEVO_OK;
    case EX_MOD:
        if (b == 0)
            return ex_eval_fail(e, col, err, "modulo by zero");
        *r = b == -1 ? 0 : a % b; /* INT64_MIN % -1 is 0 but undefined in C */
        return KEVO_OK;
    case EX_EQ: *r = a == b; return KEVO_OK;
    case EX_NE: *r = a != b; return KEVO_OK;
    case EX_LT: *r = a < b; return KEVO_OK;
    case EX_LE: *r = a <= b; return KEVO_OK;
    case EX_GT: *r = a > b; return KEVO_OK;
    case EX_GE: *r = a >= b; return KEVO_OK;
    default:
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad operator %d in '%s'", op, e->text);
    }
    return ex_eval_fail(e, col, err, "overflow in '%" PRId64 " %s %" PRId64 "'", a, ex_op_text[op], b);
}


/* Ceiling of a / b for b > 0, without overflow: C division truncates toward
 * zero, which is already the ceiling when a <= 0. */
static int64_t ex_cdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a > 0 && a % b != 0) ? q + 1 : q;
}

/* Evaluate a call of a built-in function: arity first, then the arguments
 * (min and max fold as they go, so any number of arguments costs no memory). */
static kevo_status ex_call(const kevo_expr *e, const ex_node *n, const kevo_syms *syms, int64_t *out,
                           kevo_err *err)
{
    const char *name = ex_funcs[n->op].name;
    int lo = ex_funcs[n->op].min_args, hi = ex_funcs[n->op].max_args;
    if (n->n < lo || n->n > hi) {
        if (lo == hi)
            return ex_eval_fail(e, n->col, err, "function '%s' takes %d argument%s, got %d", name, lo,
                                lo == 1 ? "" : "s", n->n);
        return ex_eval_fail(e, n->col, err, "function '%s' takes at least %d arguments, got %d", name, lo, n->n);
    }
    const ex_kid *k = e->kids + n->first;
    kevo_status st;
    if (n->op == EXF_MIN || n->op == EXF_MAX) {
        int64_t acc, v;
        if ((st = ex_eval(e, k[0].node, syms, &acc, err)) != KEVO_OK)
            return st;
        for (int i = 1; i < n->n; i++) {
            if ((st = ex_eval(e, k[i].node, syms, &v, err)) != KEVO_OK)
                return st;
            if (n->op == EXF_MIN ? v < acc : v > acc)
                acc = v;
        }
        *out = acc;
        return KEVO_OK;
    }
    int64_t a[2] = {0, 0};
    for (int i = 0; i < n->n; i++)
        if ((st = ex_eval(e, k[i].node, syms, &a[i], err)) != KEVO_OK)
            return st;
    switch (n->op) {
    case EXF_CDIV:
    case EXF_ROUND_UP:
        if (a[1] <= 0)
            return ex_eval_fail(e, n->col, err, "function '%s' needs a positive divisor, got %" PRId64, name, a[1]);
        if (n->op == EXF_CDIV) {
            *out = ex_cdiv(a[0], a[1]);
            return KEVO_OK;
        }
        if (__builtin_mul_overflow(ex_cdiv(a[0], a[1]), a[1], out))
            return ex_eval_fail(e, n->col, err, "overflow in 'round_up(%" PRId64 ", %" PRId64 ")'", a[0], a[1]);
        return KEVO_OK;
    case EXF_LOG2:
        if (a[0] <= 0)
            return ex_eval_fail(e, n->col, err, "function 'log2' needs a positive argument, got %" PRId64, a[0]);
        *out = 63 - __builtin_clzll((unsigned long long)a[0]);
        return KEVO_OK;
    case EXF_IS_POW2:
        *out = a[0] > 0 && (a[0] & (a[0] - 1)) == 0;
        return KEVO_OK;
    }
    return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad function %d in '%s'", n->op, e->text);
}

/* Evaluate node idx.  Recursion depth is bounded by the parser's nesting
 * limit times the number of precedence levels. */
kevo_status ex_eval(const kevo_expr *e, int idx, const kevo_syms *syms, int64_t *out, kevo_err *err)
{
    const ex_node *n = &e->nodes[idx];
    /* no kid array at all when the whole expression is one name or number */
    const ex_kid *k = (n->kind == EXN_NUM || n->kind == EXN_SYM) ? NULL : e->kids + n->first;
    kevo_status st;
    int64_t a, b;
    switch (n->kind) {
    case EXN_NUM:
        *out = n->num;
        return KEVO_OK;
    case EXN_SYM:
        if (!syms || !kevo_syms_find(syms, e->text + n->first, (size_t)n->n, n->hash, out))
            return ex_eval_fail(e, n->col, err, "unknown symbol '%.*s'", n->n, e->text + n->first);
        return KEVO_OK;
    case EXN_UNARY:
        if ((st = ex_eval(e, k[0].node, syms, &a, err)) != KEVO_OK)
            return st;
        if (n->op == EX_NOT) {
            *out = a == 0;
            return KEVO_OK;
        }
        if (a == INT64_MIN)
            return ex_eval_fail(e, n->col, err, "overflow in '-(%" PRId64 ")'", a);
        *out = -a;
        return KEVO_OK;
    case EXN_COND:
        if ((st = ex_eval(e, k[0].node, syms, &a, err)) != KEVO_OK)
            return st;
        return ex_eval(e, k[a != 0 ? 1 : 2].node, syms, out, err);
    case EXN_CALL:
        return ex_call(e, n, syms, out, err);
    case EXN_CHAIN:
        if (n->op == EX_OR || n->op == EX_AND) {
            /* short-circuit: stop at the first operand that decides */
            int stop_on = n->op == EX_OR;
            for (int i = 0; i < n->n; i++) {
                if ((st = ex_eval(e, k[i].node, syms, &a, err)) != KEVO_OK)
                    return st;
                if ((a != 0) == stop_on) {
                    *out = stop_on;
                    return KEVO_OK;
                }
            }
            *out = !stop_on;
            return KEVO_OK;
        }
        if ((st = ex_eval(e, k[0].node, syms, &a, err)) != KEVO_OK)
            return st;
        for (int i = 1; i < n->n; i++) {
            if ((st = ex_eval(e, k[i].node, syms, &b, err)) != KEVO_OK)
                return st;
            if ((st = ex_binary(e, k[i].op, k[i].col, a, b, &a, err)) != KEVO_OK)
                return st;
        }
        *out = a;
        return KEVO_OK;
    }
    return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad node kind %d in '%s'", n->kind, e->text);
}

kevo_status kevo_expr_eval(const kevo_expr *e, const kevo_syms *syms, int64_t *out, kevo_err *err)
{
    if (!e || !out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no expression or no place for its value");
    int64_t v;
    kevo_status st = ex_eval(e, e->root, syms, &v, err);
    if (st == KEVO_OK)
        *out = v;
    return st;
}

bool kevo_expr_unbound(const kevo_expr *e, const kevo_syms *syms, char *name, size_t n)
{
    int first = -1;
    for (int i = 0; e && i < e->nnodes; i++) {
        const ex_node *nd = &e->nodes[i];
        if (nd->kind != EXN_SYM || (first >= 0 && nd->first >= e->nodes[first].first))
            continue;
        char sym[KEVO_SYM_NAME_MAX];
        int64_t v;
        memcpy(sym, e->text + nd->first, (size_t)nd->n);
        sym[nd->n] = '\0';
        if (!kevo_syms_get(syms, sym, &v))
            first = i;
    }
    if (first < 0)
        return false;
    snprintf(name, n, "%.*s", e->nodes[first].n, e->text + e->nodes[first].first);
    return true;
}

bool kevo_expr_names(const kevo_expr *e, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; e && i < e->nnodes; i++) {
        const ex_node *nd = &e->nodes[i];
        if (nd->kind == EXN_SYM && (size_t)nd->n == len && memcmp(e->text + nd->first, name, len) == 0)
            return true;
    }
    return false;
}

const char *kevo_expr_text(const kevo_expr *e)
{
    return e ? e->text : "";
}

void kevo_expr_free(kevo_expr *e)
{
    if (!e)
        return;
    free(e->text);
    free(e->nodes);
    free(e->kids);
    free(e);
}

kevo_status kevo_expr_eval_text(const char *text, const kevo_syms *syms, int64_t *out, kevo_err *err)
{
    kevo_expr *e;
    kevo_status st = kevo_expr_parse(text, &e, err);
    if (st != KEVO_OK)
        return st;
    st = kevo_expr_eval(e, syms, out, err);
    kevo_expr_free(e);
    return st;
}

