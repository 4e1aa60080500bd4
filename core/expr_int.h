/* expr_int.h — the parsed tree of a kevo_expr, private to core/expr.c (the
 * parser and evaluator) and core/expr_print.c (the C emitter and the fold).
 * Not part of the API: nothing outside core/ includes it. */
#ifndef KEVO_EXPR_INT_H
#define KEVO_EXPR_INT_H

#include "core/expr.h"

#include <stdint.h>

/* Node kinds. */
enum { EXN_NUM, EXN_SYM, EXN_UNARY, EXN_CHAIN, EXN_COND, EXN_CALL };

/* Operators. */
enum {
    EX_NONE,
    EX_OR, EX_AND,
    EX_EQ, EX_NE, EX_LT, EX_LE, EX_GT, EX_GE,
    EX_ADD, EX_SUB,
    EX_MUL, EX_DIV, EX_MOD,
    EX_NEG, EX_NOT,
};

/* Each operator's text, by EX_*. */
extern const char *const ex_op_text[];

/* Built-in functions. */
enum { EXF_CDIV, EXF_MIN, EXF_MAX, EXF_ROUND_UP, EXF_LOG2, EXF_IS_POW2 };

/* Each function's name and arity, by EXF_*. */
typedef struct ex_func {
    const char *name;
    int min_args, max_args;
} ex_func;
extern const ex_func ex_funcs[];

typedef struct ex_node {
    uint8_t kind;
    uint8_t op;  /* EXN_UNARY: EX_NEG/EX_NOT; EXN_CHAIN: EX_OR/EX_AND or EX_NONE
                    (mixed arithmetic or comparison); EXN_CALL: EXF_* */
    int col;     /* 1-based column of the token the node stands for */
    int64_t num; /* EXN_NUM: the value */
    int first;   /* EXN_SYM: offset of the name in text; else first kid slot */
    int n;       /* EXN_SYM: name length; else number of kids */
    uint32_t hash; /* EXN_SYM: kevo_syms_hash of the name, computed once */
} ex_node;

/* One child of a node.  In a chain, op and col are those of the operator
 * that joins this child to the value on its left (unused for the first). */
typedef struct ex_kid {
    int node;
    int col;
    uint8_t op;
} ex_kid;

struct kevo_expr {
    char *text;
    ex_node *nodes;
    int nnodes, ncap;
    ex_kid *kids;
    int nkids, kcap;
    int root;
};

/* Evaluate node idx of e against syms (kevo_expr_eval's errors). */
kevo_status ex_eval(const kevo_expr *e, int idx, const kevo_syms *syms, int64_t *out, kevo_err *err);

/* a op b for a binary arithmetic or comparison operator, checked for
 * overflow and division by zero (KEVO_ERR_ARG, at column col). */
kevo_status ex_binary(const kevo_expr *e, int op, int col, int64_t a, int64_t b, int64_t *r, kevo_err *err);

/* Record an evaluation error at a node's column; KEVO_ERR_ARG (err may be NULL). */
kevo_status ex_eval_fail(const kevo_expr *e, int col, kevo_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif /* KEVO_EXPR_INT_H */
