/* check_taint.c — pass 5 of the static check (see check.c), its first half:
 * named casts, loads and dereferences, the expression scanner and the
 * propagation step of the fixpoints. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- data flow
 *
 * Two analyses share the scanner below.  The global one follows the argument
 * fields inside each function (intraprocedural): CK_IN, a pointer from an
 * input field; CK_OUT, a pointer from an output field; CK_OVAL, a value read
 * from the output.  Calls are handled through per-parameter summaries that a
 * probe analysis computes for every function (CK_PROBE, a pointer derived
 * from the parameter; CK_PVAL, a value read through it): whether the
 * parameter reaches a global store, a load, a non-const pointer cast, a
 * condition, or the return value.  Summaries of callees are used by callers,
 * to a fixpoint, so helpers of helpers count. */

const char *const ck_load_intrinsics[] = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", NULL};
const char *const ck_store_intrinsics[] = {"__stcg", "__stcs", "__stwb", "__stwt", "memcpy", "memset",
                                                  "memmove", "__builtin_memcpy", "__builtin_memset", NULL};
static const char *const ck_copy_calls[] = {"memcpy", "memmove", "__builtin_memcpy", "__builtin_memmove",
                                            "__pipeline_memcpy_async", "memcpy_async", NULL};


static const char *const ck_builtin_types[] = {"int", "unsigned", "signed", "char", "short", "long", "float",
                                               "double", "bool", "void", "size_t", "uintptr_t", "intptr_t",
                                               "uint64_t", "int64_t", "uint32_t", "int32_t", NULL};

const char *const ck_named_casts[] = {"static_cast", "reinterpret_cast", "dynamic_cast", "bit_cast",
                                             "__builtin_bit_cast", "const_cast", NULL};

/* A named cast of names[] at token i (static_cast<T>(x), ...): its type's
 * tokens [*ts, *te) and its operand's [*os, *oe); false when none. */
bool ck_named_cast_at(ck *c, int i, const char *const *names, int *ts, int *te, int *os, int *oe)
{
    if (!ck_among(c, i, names) || !ck_is(c, i + 1, "<") || ck_angle(c, i + 1) <= i + 1 ||
        !ck_is(c, ck_angle(c, i + 1) + 1, "(") || c->match[ck_angle(c, i + 1) + 1] <= 0)
        return false;
    int gt = ck_angle(c, i + 1);
    *ts = i + 2;
    *te = gt;
    *os = gt + 2;
    *oe = c->match[gt + 1];
    return true;
}

/* Whether the '(' at lp opens the operand of a named cast (xxx_cast<T>(...)). */
static bool ck_named_cast_lp(const ck *c, int lp)
{
    if (!ck_is(c, lp - 1, ">"))
        return false;
    for (int k = lp - 2; k >= 0 && k > lp - CK_DECL_CAP; k--)
        if (ck_among(c, k, ck_named_casts) && ck_is(c, k + 1, "<") && ck_angle(c, k + 1) == lp - 1)
            return true;
    return false;
}


/* The arguments of load intrinsics, and the expressions that are dereferenced. */
void ck_mark_loads(ck *c)
{
    for (int i = 0; i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        if (ck_among(c, i, ck_load_intrinsics) && ck_is(c, i + 1, "(") && c->match[i + 1] > i + 1) {
            for (int j = i + 2; j < c->match[i + 1]; j++)
                c->in_load[j] = true;
        }
        /* *(...), *f(...), *p.q and *xxx_cast<T>(...): what is inside is read
         * through, unless a cast gives a pointer to pointer (then a pointer is
         * what is read) */
        if (ck_is(c, i, "*") && ck_unary(c, i) &&
            (ck_is(c, i + 1, "(") || (ck_ident(c, i + 1) && !ck_keyword(c, i + 1)))) {
            int e = ck_unary_end(c, i + 1, 0);
            int stars = 0, run = 0;
            for (int j = i + 1; j < e && j < i + CK_DECL_CAP; j++) {
                if (ck_is(c, j, "*")) {
                    run++;
                    stars = run > stars ? run : stars;
                } else if (!ck_among(c, j, (const char *const[]){"const", "volatile", "__restrict__", NULL})) {
                    run = 0;
                }
                if (ck_is(c, j, ")") || ck_is(c, j, ">"))
                    break;
            }
            if (stars < 2)
                for (int j = i + 1; j < e && j < c->lx.ntok; j++)
                    c->deref_ctx[j] = true;
        }
        /* (...)[i] and (...)->f, the parens a cast's or an expression's (not a call's) */
        if ((ck_is(c, i, "[") || ck_is(c, i, "->")) && ck_is(c, i - 1, ")") && c->match[i - 1] >= 0) {
            int lp = c->match[i - 1];
            bool call = (ck_ident(c, lp - 1) && !ck_keyword(c, lp - 1)) ||
                        (ck_is(c, lp - 1, ">") && !ck_named_cast_lp(c, lp));
            if (!call)
                for (int j = lp + 1; j < i - 1; j++)
                    c->deref_ctx[j] = true;
        }
    }
}

/* Whether the '*' or '&' at i is unary (after a cast "(T *)" too). */
bool ck_unary(const ck *c, int i)
{
    int p = i - 1;
    if (p < 0 || !ck_code(c, p))
        return true;
    kevo_tok_kind k = c->lx.tok[p].kind;
    if (k == KEVO_TK_IDENT)
        return ck_keyword(c, p);
    if (k == KEVO_TK_NUMBER || k == KEVO_TK_STRING || k == KEVO_TK_CHAR)
        return false;
    if (ck_is(c, p, ")") && c->match[p] >= 0 && c->match[p] < p) {
        int lp = c->match[p];
        bool call = ck_ident(c, lp - 1) && !ck_keyword(c, lp - 1);
        int cls = call ? -1 : ck_type_class(c, lp + 1, p);
        /* "(x) * y" is a product; "(T *) * y", "(unsigned) & y" and "(hp) * y" are casts */
        return cls == 1 || (cls == 0 && (p > lp + 2 || ck_among(c, lp + 1, ck_builtin_types)));
    }
    return !ck_is(c, p, "]");
}

/* For an occurrence whose chain starts at root r and whose tainted element is
 * token t: is it dereferenced (a value), rather than a pointer? */
bool ck_deref(const ck *c, int r, int t)
{
    if (ck_is(c, r - 1, "&") && ck_unary(c, r - 1))
        return false;
    if (c->in_load[t] || c->deref_ctx[t])
        return true;
    int j = t + 1;
    while (ck_is(c, j, ".") && ck_ident(c, j + 1))
        j += 2;
    if (ck_is(c, j, "[") || ck_is(c, j, "->"))
        return true;
    return ck_is(c, r - 1, "*") && ck_unary(c, r - 1);
}

/* How many times an occurrence (root r, tainted element t) is dereferenced:
 * subscripts and '->' after it, a unary '*' before it, a dereferenced context. */
int ck_deref_count(const ck *c, int r, int t)
{
    if (ck_is(c, r - 1, "&") && ck_unary(c, r - 1))
        return 0;
    int n = (c->in_load[t] || c->deref_ctx[t]) ? 1 : 0;
    if (ck_is(c, r - 1, "*") && ck_unary(c, r - 1))
        n++;
    int j = t + 1;
    for (int g = 0; g < 16; g++) {
        if (ck_is(c, j, ".") && ck_ident(c, j + 1)) {
            j += 2;
        } else if (ck_is(c, j, "->") && ck_ident(c, j + 1)) {
            n++;
            j += 2;
        } else if (ck_is(c, j, "[") && c->match[j] > j) {
            n++;
            j = c->match[j] + 1;
        } else {
            break;
        }
    }
    return n;
}

/* Root of the member chain ending at token t (t-1 is '.' or '->'). */
int ck_chain_root(const ck *c, int t)
{
    int r = t;
    for (int guard = 0; guard < CK_SCAN_CAP && (ck_is(c, r - 1, ".") || ck_is(c, r - 1, "->")) && r - 2 >= 0;
         guard++) {
        int p = r - 2;
        if (ck_is(c, p, "]") || ck_is(c, p, ")")) {
            if (c->match[p] < 0)
                break;
            p = c->match[p] - 1;
        }
        if (!ck_ident(c, p))
            break;
        r = p;
    }
    return r;
}


static void ck_note_in(ck_occ *o, int origin, int at)
{
    if (!o->in_ptr) {
        o->origin = origin;
        o->at = at;
    }
    o->in_ptr = o->in_any = true;
}

/* What a call of a defined function (callee token i, arguments in parens lp)
 * carries, through the callees' summaries. */
static void ck_scan_call(const ck *c, const ck_taint *tt, int mode, int fn, int i, int lp, ck_occ *o)
{
    int rp = c->match[lp];
    int st[CK_MAX_PARAMS], en[CK_MAX_PARAMS];
    int na = ck_args(c, lp, rp, st, en, CK_MAX_PARAMS);
    ck_occ arg[CK_MAX_PARAMS];
    for (int j = 0; j < na; j++) {
        memset(&arg[j], 0, sizeof arg[j]);
        arg[j].origin = -1;
        ck_scan(c, tt, mode, fn, st[j], en[j], &arg[j]);
    }
    for (int k = c->fn_by_id[c->id[i]]; k >= 0; k = c->fn[k].next_same) {
        const ck_fn *f = &c->fn[k];
        if (f->name == i)
            continue; /* its own definition */
        if (mode == CK_GLOBAL_MODE) {
            if (f->ret & CK_IN)
                ck_note_in(o, f->ret_origin, i);
            o->out_ptr |= (f->ret & CK_OUT) != 0;
            o->oval |= (f->ret & CK_OVAL) != 0;
            o->inc |= (f->ret & CK_INC) != 0;
        }
        for (int j = 0; j < na; j++) {
            uint32_t bit = 1u << j;
            if (f->s_ret_ptr & bit) {
                if (arg[j].in_ptr)
                    ck_note_in(o, arg[j].origin, arg[j].at);
                o->out_ptr |= arg[j].out_ptr;
                o->oval |= arg[j].oval;
                o->inc |= arg[j].inc;
                o->p_ptr |= arg[j].p_ptr;
                o->p_val |= arg[j].p_val;
            }
            if (f->s_ret_val & bit) {
                o->oval |= arg[j].out_ptr || arg[j].oval;
                o->p_val |= arg[j].p_ptr || arg[j].p_val;
            }
        }
    }
}

void ck_scan(const ck *c, const ck_taint *tt, int mode, int fn, int a, int b, ck_occ *o)
{
    if (b > a)
        *c->work += (unsigned long long)(b - a);
    for (int i = a; i < b && i < c->lx.ntok; i++) {
        if (!ck_ident(c, i))
            continue;
        bool member = ck_is(c, i - 1, ".") || ck_is(c, i - 1, "->");
        if (mode == CK_GLOBAL_MODE) {
            bool input;
            int idx;
            if (member && ck_field(c, i, &input, &idx)) {
                bool deref = ck_deref(c, ck_chain_root(c, i), i);
                if (input) {
                    if (!o->in_any)
                        o->any_origin = idx;
                    o->in_any = true;
                    if (!deref)
                        ck_note_in(o, idx, i);
                } else if (deref) {
                    o->oval = true;
                } else {
                    o->out_ptr = true;
                }
                continue;
            }
            if (!member && c->is_struct_param[i] && ck_is(c, i - 1, "&") && ck_unary(c, i - 1) &&
                !ck_is(c, i + 1, ".") && !ck_is(c, i + 1, "->")) {
                ck_note_in(o, -1, i);
                o->out_ptr = true;
                continue;
            }
        }
        int lp = member ? -1 : ck_call_lp(c, i);
        if (lp > 0 && c->fn_by_id[c->id[i]] >= 0) {
            ck_scan_call(c, tt, mode, fn, i, lp, o);
            i = c->match[lp];
            continue;
        }
        if (lp > 0 && !member) {
            /* atomics return the old value: read from what they point to */
            const char *p = c->lx.text + c->lx.tok[i].off;
            if (c->lx.tok[i].len > 6 && !memcmp(p, "atomic", 6) && p[6] >= 'A' && p[6] <= 'Z') {
                ck_occ sub = {.origin = -1};
                ck_scan(c, tt, mode, fn, lp + 1, c->match[lp], &sub);
                o->oval |= sub.out_ptr || sub.oval;
                o->p_val |= sub.p_ptr || sub.p_val;
            }
        }
        if (member || lp > 0)
            continue; /* a member name, or a function the source does not define (its arguments are scanned) */
        int origin = -1;
        uint8_t k = ck_tget(c, tt, fn, i, &origin);
        if (!k)
            continue;
        bool deref = ck_deref(c, i, i);
        if (k & CK_PROBE) {
            if (deref)
                o->p_val = true;
            else
                o->p_ptr = true;
        }
        if (k & CK_PVAL)
            o->p_val = true;
        if (k & CK_IN) {
            if (!o->in_any)
                o->any_origin = origin;
            o->in_any = true;
            if (!deref)
                ck_note_in(o, origin, i);
        }
        if (k & CK_INC) {
            /* what it holds is an input pointer; the holder itself passes on as a holder */
            int nd = deref ? ck_deref_count(c, i, i) : 0;
            if (nd == 1) {
                ck_note_in(o, origin, i);
            } else if (nd > 1) {
                if (!o->in_any)
                    o->any_origin = origin;
                o->in_any = true; /* a value read through the input pointer it holds */
            } else {
                if (!o->in_ptr && !o->inc)
                    o->origin = origin;
                o->inc = true;
            }
        }
        if (k & CK_OUT) {
            if (deref)
                o->oval = true;
            else
                o->out_ptr = true;
        }
        if (k & CK_OVAL)
            o->oval = true;
    }
}

/* End of the expression starting at i: the first ; or , at depth 0, or an
 * unmatched closer. */
int ck_expr_end(const ck *c, int i)
{
    int j = i;
    for (; j < c->lx.ntok && j < i + CK_SCAN_CAP && ck_code(c, j); j++) {
        if ((ck_is(c, j, "(") || ck_is(c, j, "[") || ck_is(c, j, "{")) && c->match[j] > j) {
            j = c->match[j];
            continue;
        }
        if (ck_is(c, j, ";") || ck_is(c, j, ",") || ck_is(c, j, ")") || ck_is(c, j, "]") || ck_is(c, j, "}"))
            break;
    }
    return j;
}

/* Start of the expression ending before i: after the last ; , { } ( [ ? : or
 * assignment at depth 0. */
int ck_expr_start(const ck *c, int i)
{
    int j = i - 1;
    for (; j >= 0 && j > i - CK_SCAN_CAP && ck_code(c, j); j--) {
        if ((ck_is(c, j, ")") || ck_is(c, j, "]")) && c->match[j] >= 0 && c->match[j] < j) {
            j = c->match[j];
            continue;
        }
        if (ck_is(c, j, ";") || ck_is(c, j, ",") || ck_is(c, j, "{") || ck_is(c, j, "}") || ck_is(c, j, "(") ||
            ck_is(c, j, "[") || ck_is(c, j, "?") || ck_is(c, j, ":") || ck_is(c, j, "=") || ck_is(c, j, "return"))
            break;
    }
    return j + 1;
}

static const char *const ck_assign_ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", NULL};

bool ck_assign_op(const ck *c, int i)
{
    if (!ck_code(c, i) || c->lx.tok[i].kind != KEVO_TK_PUNCT)
        return false;
    const char *p = c->lx.tok[i].punct;
    size_t n = strlen(p);
    if (n == 0 || p[n - 1] != '=')
        return false;
    for (int k = 0; ck_assign_ops[k]; k++)
        if (strcmp(p, ck_assign_ops[k]) == 0)
            return true;
    return false;
}

/* Whether the name at r is being declared ("T *r", "T **r", "T *const r",
 * or "..., *r" in a declaration statement), so that a '*' before it is a
 * declarator, not a dereference. */
bool ck_declarator(const ck *c, int r)
{
    int q = r - 1;
    while (q >= 0 && (ck_is(c, q, "*") || ck_is(c, q, "&") || ck_is(c, q, "&&") ||
                      ck_among(c, q, (const char *const[]){"const", "volatile", "__restrict__", NULL})))
        q--;
    if (q == r - 1)
        return false; /* no '*': the caller's business */
    if ((ck_ident(c, q) && !ck_keyword(c, q)) || ck_is(c, q, ">"))
        return true;
    if (!ck_is(c, q, ","))
        return false;
    /* a declaration statement starts with two or more names before its first '=' or ',' */
    int st = q;
    for (int g = 0; st > 0 && g < CK_SCAN_CAP; g++) {
        int p = st - 1;
        if ((ck_is(c, p, ")") || ck_is(c, p, "]") || ck_is(c, p, "}")) && c->match[p] >= 0 && c->match[p] < p &&
            !ck_is(c, p, "}")) {
            st = c->match[p];
            continue;
        }
        if (!ck_code(c, p) || ck_is(c, p, ";") || ck_is(c, p, "{") || ck_is(c, p, "}") || ck_is(c, p, "("))
            break;
        st = p;
    }
    int names = 0;
    for (int j = st; j < q; j++) {
        if (ck_is(c, j, "=") || ck_is(c, j, ",") || ck_is(c, j, "(") || ck_is(c, j, "["))
            break;
        if (ck_is(c, j, "<") && ck_angle(c, j) > j) {
            j = ck_angle(c, j);
            continue;
        }
        if (ck_ident(c, j))
            names++;
        else if (!ck_is(c, j, "*") && !ck_is(c, j, "&") && !ck_is(c, j, "::"))
            return false;
    }
    return names >= 2 && ck_ident(c, st);
}

/* The variable an assignment at op assigns to (its root name token), -1 when
 * none; *through is set when the store goes through a dereference
 * (x[i] = , *x = , x->f = ), which changes what x points to, not x. */
int ck_lhs_root(const ck *c, int op, bool *through, int *member)
{
    *through = false;
    *member = -1;
    int j = op - 1;
    while (j >= 0 && ck_is(c, j, "]") && c->match[j] >= 0) {
        *through = true;
        j = c->match[j] - 1;
    }
    if (!ck_ident(c, j) || ck_keyword(c, j))
        return -1;
    int r = j;
    if (ck_is(c, j - 1, ".") || ck_is(c, j - 1, "->")) {
        r = ck_chain_root(c, j);
        for (int k = r; k < j; k++)
            *through |= ck_is(c, k, "->") || ck_is(c, k, "[");
        if (ck_is(c, r + 1, ".") && ck_ident(c, r + 2))
            *member = r + 2;
    }
    if (ck_is(c, r - 1, "*") && ck_unary(c, r - 1) && !ck_declarator(c, r))
        *through = true;
    return ck_ident(c, r) ? r : -1;
}

/* Kinds an occurrence set gives a variable it flows into. */
static uint8_t ck_kinds_of(const ck_occ *o)
{
    uint8_t k = 0;
    if (o->in_ptr)
        k |= CK_IN;
    if (o->out_ptr)
        k |= CK_OUT;
    if (o->oval)
        k |= CK_OVAL;
    if (o->p_ptr)
        k |= CK_PROBE;
    if (o->p_val)
        k |= CK_PVAL;
    if (o->inc)
        k |= CK_INC;
    return k;
}

/* The first argument of the call whose '(' is lp names `space` (cuda::ptx::space_global). */
bool ck_first_arg_is(const ck *c, int lp, const char *space)
{
    int st[CK_MAX_PARAMS], en[CK_MAX_PARAMS];
    int na = ck_args(c, lp, c->match[lp], st, en, CK_MAX_PARAMS);
    for (int j = na > 0 ? st[0] : 0; na > 0 && j < en[0]; j++)
        if (ck_is(c, j, space))
            return true;
    return false;
}

bool ck_bulk_call(const ck *c, int i)
{
    return ck_is(c, i, "cp_async_bulk_tensor") || ck_is(c, i, "cp_async_bulk");
}

/* The first asm statement whose keyword is at or after token a (they are in token order). */
int ck_first_asm(const ck *c, int a)
{
    int lo = 0, hi = c->nas;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (c->as[mid].kw < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first range whose construct is at or after token a (ranges are in token order). */
int ck_first_range(const ck_range *r, int n, int a)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (r[mid].at < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One propagation step over the tokens [a, b) (only those of function
 * fn_only when >= 0) into tt; returns whether anything changed. */
bool ck_propagate(ck *c, ck_taint *tt, int mode, int fn_only, int a, int b, bool *oom)
{
    bool changed = false;
    if (b > a)
        *c->work += (unsigned long long)(b - a);
    if (*c->work > CK_WORK_MAX) {
        ck_reject(c, 0, "source too intricate for the check (refused rather than passed unchecked)");
        return false;
    }
    for (int i = a; i < b && i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        int fn = c->fn_of[i];
        if (fn_only >= 0 && fn != fn_only)
            continue;
        if (ck_assign_op(c, i)) {
            bool through;
            int member;
            int r = ck_lhs_root(c, i, &through, &member);
            if (r < 0 || c->is_struct_param[r])
                continue;
            ck_occ o = {.origin = -1};
            ck_scan(c, tt, mode, fn, i + 1, ck_expr_end(c, i + 1), &o);
            uint8_t k = ck_kinds_of(&o);
            if (through) /* stored into what r points to: r's contents, not r */
                k = (uint8_t)((k & (CK_OVAL | CK_PVAL)) | ((k & CK_IN) ? CK_INC : 0));
            if (member >= 0 && !through && !c->union_id[c->id[r]])
                changed |= ck_tadd_member(tt, fn, c->id[r], c->id[member], k, o.origin, oom);
            else
                changed |= ck_tadd(tt, fn, c->id[r], k, o.origin, oom);
            continue;
        }
        /* direct initialization: T x(expr) / T x{expr} */
        if ((ck_is(c, i, "(") || ck_is(c, i, "{")) && c->match[i] > i && ck_ident(c, i - 1) &&
            !ck_keyword(c, i - 1) && c->fn_by_id[c->id[i - 1]] < 0 && !c->is_struct_param[i - 1] &&
            ((ck_ident(c, i - 2) && !ck_keyword(c, i - 2)) || ck_is(c, i - 2, ">") || ck_is(c, i - 2, "*") ||
             ck_is(c, i - 2, "&"))) {
            ck_occ o = {.origin = -1};
            ck_scan(c, tt, mode, fn, i + 1, c->match[i], &o);
            changed |= ck_tadd(tt, fn, c->id[i - 1], ck_kinds_of(&o), o.origin, oom);
            continue;
        }
        /* copies into a destination: memcpy(dst, src, n), a TMA load into dst */
        int lp = ck_call_lp(c, i);
        if (lp > 0 && c->fn_by_id[c->id[i]] < 0 && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
            bool bulk_load = ck_bulk_call(c, i) && (ck_first_arg_is(c, lp, "space_shared") ||
                                                    ck_first_arg_is(c, lp, "space_cluster"));
            int dst = ck_among(c, i, ck_copy_calls) ? 0 : bulk_load ? 2 : -1;
            int st[CK_MAX_PARAMS], en[CK_MAX_PARAMS];
            int na = ck_args(c, lp, c->match[lp], st, en, CK_MAX_PARAMS);
            if (dst < 0 || dst >= na)
                continue;
            uint8_t k = 0;
            int origin = -1;
            for (int j = 0; j < na; j++) {
                if (j == dst)
                    continue;
                if (ck_is(c, st[j], "&") && ck_ident(c, st[j] + 1) && en[j] == st[j] + 2) {
                    k |= ck_tget(c, tt, fn, st[j] + 1, &origin); /* the variable's own value */
                } else {
                    ck_occ o = {.origin = -1};
                    ck_scan(c, tt, mode, fn, st[j], en[j], &o);
                    if (o.out_ptr || o.oval)
                        k |= CK_OVAL;
                    if (o.p_ptr || o.p_val)
                        k |= CK_PVAL;
                }
            }
            int r = ck_is(c, st[dst], "&") ? st[dst] + 1 : st[dst];
            if (ck_ident(c, r) && !c->is_struct_param[r])
                changed |= ck_tadd(tt, fn, c->id[r], k, origin, oom);
            continue;
        }
        /* the intrinsic return taint of a function (global analysis only) */
        if (ck_is(c, i, "return") && fn >= 0 && mode == CK_GLOBAL_MODE) {
            ck_occ o = {.origin = -1};
            ck_scan(c, tt, mode, fn, i + 1, ck_expr_end(c, i + 1), &o);
            uint8_t k = ck_kinds_of(&o) & (CK_IN | CK_OUT | CK_OVAL | CK_INC);
            if ((c->fn[fn].ret | k) != c->fn[fn].ret) {
                if ((k & CK_IN) && !(c->fn[fn].ret & CK_IN))
                    c->fn[fn].ret_origin = o.origin;
                c->fn[fn].ret |= k;
                changed = true;
            }
        }
    }
    /* asm operands: outputs take what the inputs carry, and loaded values */
    for (int s = ck_first_asm(c, a); s < c->nas && c->as[s].kw < b; s++) {
        const ck_asm *as = &c->as[s];
        int fn = c->fn_of[as->kw];
        if (fn_only >= 0 && fn != fn_only)
            continue;
        ck_occ in = {.origin = -1};
        for (int k = as->nout; k < as->nops; k++)
            ck_scan(c, tt, mode, fn, as->op_lp[k] + 1, c->match[as->op_lp[k]], &in);
        uint8_t kinds = ck_kinds_of(&in);
        if (as->loads && in.out_ptr)
            kinds |= CK_OVAL;
        if (as->loads && in.p_ptr)
            kinds |= CK_PVAL;
        for (int k = 0; k < as->nout; k++) {
            int j = as->op_lp[k] + 1;
            while (ck_is(c, j, "*") || ck_is(c, j, "("))
                j++;
            if (ck_ident(c, j) && !c->is_struct_param[j])
                changed |= ck_tadd(tt, fn, c->id[j], kinds, in.origin, oom);
        }
    }
    return changed;
}
