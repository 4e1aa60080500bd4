/* check_casts.c — casts for pass 5 (type aliases, type classes, the ranges of
 * casts and conditions) and pass 6 of the static check (see check.c):
 * addresses from integers. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- casts */

/* Type aliases for non-const pointers and template type parameters; unions. */
void ck_aliases(ck *c)
{
    for (int i = 0; i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        /* a local array: "T name[" (its contents are followed, one level) */
        if (ck_is(c, i, "[") && ck_ident(c, i - 1) && !ck_keyword(c, i - 1) &&
            ((ck_ident(c, i - 2) && !ck_keyword(c, i - 2)) || ck_is(c, i - 2, "*") || ck_is(c, i - 2, ">") ||
             ck_is(c, i - 2, ",")) &&
            c->fn_of[i] >= 0) {
            bool oom = false;
            ck_tadd(&c->arrays, c->fn_of[i], c->id[i - 1], 1, -1, &oom);
        }
        /* union [Name] { ... } [var, ...];  and  Name var; */
        if (ck_is(c, i, "union")) {
            int j = i + 1;
            if (ck_ident(c, j))
                c->union_id[c->id[j++]] = true;
            if (ck_is(c, j, "{") && c->match[j] > j)
                for (int k = c->match[j] + 1; k < c->lx.ntok && k < c->match[j] + CK_DECL_CAP && !ck_is(c, k, ";");
                     k++)
                    if (ck_ident(c, k))
                        c->union_id[c->id[k]] = true;
            continue;
        }
        if (ck_ident(c, i) && c->union_id[c->id[i]] && ck_ident(c, i + 1) && !ck_is(c, i - 1, "union"))
            c->union_id[c->id[i + 1]] = true;
        int name = -1, ts = -1, te = -1;
        if (ck_is(c, i, "typedef")) {
            int e = i + 1;
            while (e < c->lx.ntok && e < i + CK_DECL_CAP && ck_code(c, e) && !ck_is(c, e, ";") && !ck_is(c, e, "{"))
                e++;
            if (!ck_is(c, e, ";") || !ck_ident(c, e - 1))
                continue;
            name = e - 1;
            ts = i + 1;
            te = e - 1;
        } else if (ck_is(c, i, "using") && ck_ident(c, i + 1) && ck_is(c, i + 2, "=")) {
            int e = i + 3;
            while (e < c->lx.ntok && e < i + CK_DECL_CAP && ck_code(c, e) && !ck_is(c, e, ";"))
                e++;
            name = i + 1;
            ts = i + 3;
            te = e;
        } else if (ck_among(c, i, (const char *const[]){"typename", "class", NULL}) && ck_ident(c, i + 1) &&
                   (ck_is(c, i + 2, ",") || ck_is(c, i + 2, ">") || ck_is(c, i + 2, "=")) && i > 0 &&
                   (ck_is(c, i - 1, "<") || ck_is(c, i - 1, ","))) {
            c->alias_ptr[c->id[i + 1]] = true; /* a template type parameter: any type */
            continue;
        } else {
            continue;
        }
        int last_star = -1;
        bool cnst = false, unknown = false;
        for (int j = ts; j < te; j++) {
            if (ck_is(c, j, "*"))
                last_star = j;
            unknown |= ck_among(c, j, (const char *const[]){"decltype", "auto", NULL});
            if (ck_ident(c, j) && c->alias_ptr[c->id[j]])
                unknown = true;
        }
        for (int j = ts; j < last_star; j++)
            cnst |= ck_is(c, j, "const");
        if ((last_star >= 0 && !cnst) || unknown)
            c->alias_ptr[c->id[name]] = true;
    }
}

/* Classify the type tokens [a, b): 1 a non-const pointer (or a type the
 * check cannot see: an alias, a template parameter, decltype), 0 a type that
 * is neither, -1 not a type. */
int ck_type_class(const ck *c, int a, int b)
{
    if (b <= a)
        return -1;
    int last_star = -1;
    bool unknown = false;
    for (int j = a; j < b; j++) {
        if (ck_is(c, j, "*")) {
            last_star = j;
        } else if (ck_is(c, j, "<") && ck_angle(c, j) > j && ck_angle(c, j) < b) {
            j = ck_angle(c, j);
        } else if (ck_is(c, j, "decltype") && ck_is(c, j + 1, "(") && c->match[j + 1] > j + 1 &&
                   c->match[j + 1] < b) {
            unknown = true;
            j = c->match[j + 1];
        } else if (ck_ident(c, j)) {
            if (last_star >= 0 && !ck_among(c, j, (const char *const[]){"const", "volatile", "__restrict__", NULL}))
                return -1; /* a name after the '*': an expression (x * y) */
            if (c->alias_ptr[c->id[j]])
                unknown = true;
        } else if (!ck_is(c, j, "::") && !ck_is(c, j, "&") && !ck_is(c, j, "&&")) {
            return -1;
        }
    }
    bool cnst = false;
    for (int j = a; j < last_star; j++)
        cnst |= ck_is(c, j, "const");
    return ((last_star >= 0 && !cnst) || unknown) ? 1 : 0;
}

static bool ck_prefix_op(const ck *c, int j)
{
    return ck_kind(c, j) == KEVO_TK_PUNCT && j < c->lx.ntok &&
           (ck_is(c, j, "*") || ck_is(c, j, "&") || ck_is(c, j, "-") || ck_is(c, j, "+") || ck_is(c, j, "!") ||
            ck_is(c, j, "~") || ck_is(c, j, "++") || ck_is(c, j, "--"));
}

/* End of the unary expression starting at i (a C cast's operand). */
int ck_unary_end(const ck *c, int i, int depth)
{
    int j = i;
    while (j < c->lx.ntok && (ck_prefix_op(c, j) || ck_is(c, j, "sizeof")))
        j++;
    if (j >= c->lx.ntok)
        return j;
    if (ck_is(c, j, "(") && c->match[j] > j) {
        int m = c->match[j];
        if (depth < 16 && ck_type_class(c, j + 1, m) >= 0 && m + 1 < c->lx.ntok &&
            (ck_ident(c, m + 1) || ck_is(c, m + 1, "(") || ck_is(c, m + 1, "&") || ck_is(c, m + 1, "*")))
            return ck_unary_end(c, m + 1, depth + 1); /* a nested cast */
        j = m + 1;
    } else if (ck_ident(c, j)) {
        j++;
        while (ck_is(c, j, "::") && ck_ident(c, j + 1))
            j += 2;
        if (ck_is(c, j, "<") && ck_angle(c, j) > j && ck_is(c, ck_angle(c, j) + 1, "("))
            j = ck_angle(c, j) + 1;
    } else {
        return j + 1;
    }
    for (int guard = 0; guard < CK_SCAN_CAP; guard++) {
        if ((ck_is(c, j, ".") || ck_is(c, j, "->")) && ck_ident(c, j + 1))
            j += 2;
        else if ((ck_is(c, j, "[") || ck_is(c, j, "(")) && c->match[j] > j)
            j = c->match[j] + 1;
        else if (ck_is(c, j, "++") || ck_is(c, j, "--"))
            j++;
        else
            break;
    }
    return j;
}

static bool ck_push_range(ck_range **arr, int *n, int *cap, int at, int a, int b)
{
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 64;
        ck_range *g = realloc(*arr, (size_t)ncap * sizeof *g);
        if (!g)
            return false;
        *arr = g;
        *cap = ncap;
    }
    (*arr)[(*n)++] = (ck_range){at, a, b};
    return true;
}

/* Every cast to a non-const pointer type (its operand), and every condition. */
bool ck_ranges(ck *c)
{
    int ccap = 0, dcap = 0;
    for (int i = 0; i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        int ts = -1, te = -1, os = -1, oe = -1;
        if (ck_named_cast_at(c, i,
                             (const char *const[]){"static_cast", "reinterpret_cast", "dynamic_cast", "bit_cast",
                                                   "__builtin_bit_cast", NULL},
                             &ts, &te, &os, &oe)) {
            /* its type and operand are set */
        } else if (ck_is(c, i, "(") && c->match[i] > i + 1 && !(ck_ident(c, i - 1) && !ck_keyword(c, i - 1)) &&
                   !ck_among(c, i - 1, (const char *const[]){"sizeof", "alignof", "__alignof__", "decltype", "typeid",
                                                             "alignas", "__launch_bounds__", "__cluster_dims__",
                                                             NULL})) {
            int m = c->match[i];
            int cls = ck_type_class(c, i + 1, m);
            if (cls < 0 || m + 1 >= c->lx.ntok)
                continue;
            bool single = m == i + 2 && ck_ident(c, i + 1);
            bool starts = ck_ident(c, m + 1) || ck_is(c, m + 1, "(") || ck_is(c, m + 1, "&") ||
                          (!single && (ck_is(c, m + 1, "*") || c->lx.tok[m + 1].kind == KEVO_TK_NUMBER));
            if (!starts || (single && !c->alias_ptr[c->id[i + 1]] && cls == 0))
                continue;
            ts = i + 1;
            te = m;
            os = m + 1;
            oe = ck_unary_end(c, m + 1, 0);
        } else if (ck_ident(c, i) && c->alias_ptr[c->id[i]] && (ck_is(c, i + 1, "(") || ck_is(c, i + 1, "{")) &&
                   c->match[i + 1] > i + 1 && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
            ts = i;
            te = i + 1;
            os = i + 2;
            oe = c->match[i + 1];
        }
        if (ts >= 0 && ck_type_class(c, ts, te) == 1 && !ck_push_range(&c->casts, &c->ncasts, &ccap, i, os, oe))
            return false;
        /* conditions: if/while/switch/for headers, a ?: condition, && and || operands */
        int a = -1, b = -1;
        if (ck_among(c, i, (const char *const[]){"if", "while", "switch", "for", NULL})) {
            int lp = i + 1;
            if (ck_is(c, lp, "constexpr"))
                lp++;
            if (ck_is(c, lp, "(") && c->match[lp] > lp) {
                a = lp + 1;
                b = c->match[lp];
            }
        } else if (ck_is(c, i, "?")) {
            a = ck_expr_start(c, i);
            b = i;
        } else if (ck_is(c, i, "&&") || ck_is(c, i, "||")) {
            a = ck_expr_start(c, i);
            b = ck_expr_end(c, i + 1);
        }
        if (a >= 0 && !ck_push_range(&c->conds, &c->nconds, &dcap, i, a, b))
            return false;
    }
    return true;
}

/* ------------------------------------------------- addresses from integers
 *
 * Memory is reached through the pointers kevo passes and what is derived
 * from them.  A pointer made from an integer is refused, whatever it is
 * then used for (a load or a store): a cast to a pointer type of an integer
 * literal (but a lone 0), of an expression holding a cast to an integer type
 * ((uintptr_t)p + k rebuilds an address), or of variables and functions
 * the source declares with an integer type and numbers alone; and so is an
 * inline PTX memory operand given such an expression.  Name-based, like the
 * rest: a name declared with an integer type anywhere is one everywhere. */

static const char *const ck_int_words[] = {"int", "unsigned", "signed", "long", "short", "char", "size_t",
                                           "ssize_t", "uintptr_t", "intptr_t", "ptrdiff_t", "uint64_t", "int64_t",
                                           "uint32_t", "int32_t", "uint16_t", "int16_t", "uint8_t", "int8_t",
                                           "__int64", "uint", "ulong", "ushort", "u64", "u32", NULL};

/* Whether [a, b) names an integer type (words of ck_int_words, const,
 * volatile, and std / cuda qualifiers). */
static bool ck_int_type(const ck *c, int a, int b)
{
    bool word = false;
    for (int j = a; j < b; j++) {
        if (ck_among(c, j, ck_int_words))
            word = true;
        else if (!ck_among(c, j, (const char *const[]){"const", "volatile", "std", "cuda", "::", NULL}))
            return false;
    }
    return word;
}

/* Names declared with an integer type: "T name" followed by = ; , ) { (a
 * variable or parameter: in int_var by its function, -1 at file scope; a
 * parameter counts for its function), int_fn: "T name(" (a function). */
static bool ck_int_names(ck *c, ck_taint *int_var, bool *int_fn)
{
    bool oom = false;
    for (int i = 1; i < c->lx.ntok && !oom; i++) {
        if (!ck_ident(c, i) || ck_keyword(c, i) || ck_among(c, i, ck_int_words) || !ck_among(c, i - 1, ck_int_words))
            continue;
        if (ck_is(c, i + 1, "(") && !ck_is(c, i - 2, "(")) { /* "(long)(x)" is a cast, not a function */
            int_fn[c->id[i]] = true;
        } else if (ck_is(c, i + 1, "=") || ck_is(c, i + 1, ";") || ck_is(c, i + 1, ",") || ck_is(c, i + 1, ")") ||
                   ck_is(c, i + 1, "{")) {
            int fn = c->fn_of[i];
            for (int k = 0; fn < 0 && k < c->nfn; k++) /* a parameter: its function's */
                if (i > c->fn[k].lp && i < c->fn[k].rp)
                    fn = k;
            ck_tadd(int_var, fn, c->id[i], 1, -1, &oom);
        }
    }
    return !oom;
}

/* Whether token j names a variable declared with an integer type in its
 * function or at file scope. */
static bool ck_int_var(const ck *c, const ck_taint *int_var, int j)
{
    return ck_tfind(int_var, ck_key(c->fn_of[j], c->id[j])) || ck_tfind(int_var, ck_key(-1, c->id[j]));
}

/* Whether the expression [a, b) is an integer, not a pointer: see above. */
static bool ck_int_expr(const ck *c, const ck_taint *int_var, const bool *int_fn, int a, int b)
{
    if (b <= a)
        return false;
    if (b == a + 1 && c->lx.tok[a].kind == KEVO_TK_NUMBER && ck_is(c, a, "0"))
        return false; /* the null pointer */
    bool some = false;
    for (int j = a; j < b; j++) {
        /* a cast to an integer type inside: (T)x, T(x), xxx_cast<T>(x) */
        if (ck_is(c, j, "(") && c->match[j] > j && c->match[j] < b && ck_int_type(c, j + 1, c->match[j]) &&
            !(ck_ident(c, j - 1) && !ck_keyword(c, j - 1)))
            return true;
        if (ck_among(c, j, ck_named_casts) && ck_is(c, j + 1, "<") && ck_angle(c, j + 1) > j + 1 &&
            ck_int_type(c, j + 2, ck_angle(c, j + 1)))
            return true;
        kevo_tok_kind k = c->lx.tok[j].kind;
        if (k == KEVO_TK_NUMBER || k == KEVO_TK_CHAR) {
            some = true;
        } else if (k == KEVO_TK_IDENT) {
            if (ck_among(c, j, ck_int_words) || ck_is(c, j, "sizeof") || ck_is(c, j, "alignof"))
                continue;
            if (ck_int_var(c, int_var, j) || (int_fn[c->id[j]] && ck_is(c, j + 1, "(")))
                some = true;
            else
                return false; /* a name that may be a pointer */
            if (ck_is(c, j + 1, "(") && c->match[j + 1] > j) /* its arguments are not the value */
                j = c->match[j + 1];
        } else if (k == KEVO_TK_STRING) {
            return false;
        } else if (ck_is(c, j, ".") || ck_is(c, j, "->") || ck_is(c, j, "[")) {
            return false; /* a member or an element: its type is not known here */
        } else if ((ck_is(c, j, "&") || ck_is(c, j, "*")) && (j == a || ck_unary(c, j))) {
            return false; /* &x is an address, *p a value read through one */
        }
    }
    return some;
}

/* Whether the type [a, b) is a pointer type (a '*' after the last name). */
static bool ck_ptr_type(const ck *c, int a, int b)
{
    if (ck_type_class(c, a, b) < 0)
        return false;
    for (int j = a; j < b; j++)
        if (ck_is(c, j, "*"))
            return true;
    return false;
}

bool ck_addresses(ck *c)
{
    size_t ni = (size_t)(c->nids ? c->nids : 1);
    bool *int_fn = calloc(ni, 1);
    ck_taint iv = {0}, *int_var = &iv;
    if (!int_fn || !ck_int_names(c, int_var, int_fn)) {
        free(int_fn);
        free(iv.e);
        return ck_reject(c, 0, "out of memory");
    }
    bool ok = true;
    for (int i = 0; ok && i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        int ts = -1, te = -1, os = -1, oe = -1;
        if (ck_named_cast_at(c, i, ck_named_casts, &ts, &te, &os, &oe)) {
            /* its type and operand are set */
        } else if (ck_is(c, i, "(") && c->match[i] > i + 1 && !(ck_ident(c, i - 1) && !ck_keyword(c, i - 1)) &&
                   !ck_among(c, i - 1, (const char *const[]){"sizeof", "alignof", "__alignof__", "decltype",
                                                             "typeid", "alignas", NULL})) {
            int m = c->match[i];
            if (m + 1 < c->lx.ntok && ck_ptr_type(c, i + 1, m) &&
                (ck_ident(c, m + 1) || ck_is(c, m + 1, "(") || c->lx.tok[m + 1].kind == KEVO_TK_NUMBER ||
                 ck_is(c, m + 1, "-") || ck_is(c, m + 1, "~"))) {
                ts = i + 1;
                te = m;
                os = m + 1;
                oe = ck_unary_end(c, m + 1, 0);
            }
        }
        if (ts < 0 || !ck_ptr_type(c, ts, te))
            continue;
        int a = os, b = oe;
        while (b > a + 1 && ck_is(c, a, "(") && c->match[a] == b - 1) { /* (x) is x */
            a++;
            b--;
        }
        if (ck_int_expr(c, int_var, int_fn, a, b)) {
            char t[96];
            size_t len = 0;
            for (int j = ts; j < te && len + 16 < sizeof t; j++) {
                char w[32];
                ck_text(c, j, w, sizeof w);
                len += (size_t)snprintf(t + len, sizeof t - len, "%s%s", j > ts ? " " : "", w);
            }
            ok = ck_reject(c, ck_line(c, i), "a pointer (%s) made from an integer: memory is reached only through "
                                             "the pointers kevo passes", t);
        }
    }
    /* inline PTX memory operands: a register holding a pointer, never an integer kevo did not pass */
    for (int k = 0; ok && k < c->nas; k++) {
        const ck_asm *as = &c->as[k];
        uint64_t ops = (as->store_ops | as->load_ops) & ~(1ull << 63);
        for (int j = 0; ok && j < as->nops && j < 63; j++) {
            if (!(ops & (1ull << j)))
                continue;
            int lp = as->op_lp[j];
            if (ck_int_expr(c, int_var, int_fn, lp + 1, c->match[lp]))
                ok = ck_reject(c, ck_line(c, lp), "inline PTX addresses memory at an integer (operand %%%d): memory "
                                                  "is reached only through the pointers kevo passes", j);
        }
    }
    free(iv.e);
    free(int_fn);
    return ok;
}
