/* check_sinks.c — pass 5 of the static check (see check.c), its second half:
 * what reaches the sinks (stores, casts, conditions, escapes), return values
 * and the helpers' per-parameter summaries. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ck_hit(int *slot, int at)
{
    if (*slot < 0)
        *slot = at;
}

/* In the global analysis an input pointer is what a store or cast must not
 * get; in the probe analysis the parameter's pointer. */
static bool ck_ptr(const ck_occ *o, int mode)
{
    return mode == CK_GLOBAL_MODE ? o->in_ptr : o->p_ptr;
}

static void ck_hit_store(ck_hits *h, const ck_occ *o, int mode, int at)
{
    if (h->store < 0) {
        h->store = mode == CK_GLOBAL_MODE && o->in_ptr ? o->at : at;
        h->origin = o->origin;
    }
}

static void ck_hit_cast(ck_hits *h, const ck_occ *o, int mode, int at)
{
    if (h->cast < 0) {
        h->cast = at;
        if (mode == CK_GLOBAL_MODE)
            h->origin = o->origin;
    }
}

/* A condition's contents: in the global analysis a value from the output;
 * in the probe analysis the parameter in any form (cond_any) or a value read
 * through it (cond_val). */
static void ck_hit_cond(ck_hits *h, const ck_occ *o, int mode, int at)
{
    if (mode == CK_GLOBAL_MODE) {
        if (o->oval)
            ck_hit(&h->cond_val, at);
        return;
    }
    if (o->p_ptr || o->p_val)
        ck_hit(&h->cond_any, at);
    if (o->p_val)
        ck_hit(&h->cond_val, at);
}

/* A call at i (its parenthesis lp): store and atomic intrinsics, bulk copies,
 * loads, and defined helpers through their summaries. */
static void ck_sink_call(ck *c, const ck_taint *tt, int mode, int fn, int i, int lp, ck_hits *h)
{
    int st[CK_MAX_PARAMS], en[CK_MAX_PARAMS];
    int na = ck_args(c, lp, c->match[lp], st, en, CK_MAX_PARAMS);
    bool store_call = ck_among(c, i, ck_store_intrinsics);
    const char *p = c->lx.text + c->lx.tok[i].off;
    size_t pl = c->lx.tok[i].len;
    bool atomic = pl > 6 && !memcmp(p, "atomic", 6) && p[6] >= 'A' && p[6] <= 'Z';
    bool bulk = ck_bulk_call(c, i);
    bool reduce = pl >= 15 && !memcmp(p, "cp_reduce_async", 15);
    bool bulk_store = bulk && ck_first_arg_is(c, lp, "space_global");
    bool bulk_load = bulk && !bulk_store;
    bool load_call = ck_among(c, i, ck_load_intrinsics);
    bool defined = c->fn_by_id[c->id[i]] >= 0;
    for (int j = 0; j < na; j++) {
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, fn, st[j], en[j], &o);
        bool ptr = ck_ptr(&o, mode);
        if (ptr && (((store_call || atomic) && j == 0) || bulk_store || reduce))
            ck_hit_store(h, &o, mode, i);
        /* an input pointer as the value an atomic or a store intrinsic writes */
        if (mode == CK_GLOBAL_MODE && o.in_ptr && j > 0 && (atomic || (store_call && p[0] == '_' &&
                                                                     p[1] == '_' && p[2] == 's'))) {
            if (h->escape < 0) {
                h->escape = o.at;
                h->origin = o.origin;
            }
        }
        if (mode == CK_PROBE_MODE && (o.p_ptr || o.p_val) && (load_call || bulk_load))
            ck_hit(&h->load, i);
        if (!defined)
            continue;
        uint32_t bit = 1u << j;
        for (int k = c->fn_by_id[c->id[i]]; k >= 0; k = c->fn[k].next_same) {
            const ck_fn *f = &c->fn[k];
            if (f->name == i)
                continue;
            if (ptr && (f->s_store & bit))
                ck_hit_store(h, &o, mode, i);
            if (ptr && (f->s_cast & bit))
                ck_hit_cast(h, &o, mode, i);
            if (mode == CK_PROBE_MODE) {
                if (o.p_ptr && (f->s_load & bit))
                    ck_hit(&h->load, i);
                if ((o.p_ptr && (f->s_cond_val & bit)) || (o.p_val && (f->s_cond_any & bit)))
                    ck_hit(&h->cond_val, i);
                if ((o.p_ptr || o.p_val) && (f->s_cond_any & bit))
                    ck_hit(&h->cond_any, i);
            } else if ((o.out_ptr && (f->s_cond_val & bit)) || (o.oval && (f->s_cond_any & bit))) {
                ck_hit(&h->cond_val, i);
            }
        }
    }
}

/* cuda::atomic_ref<T> x(*p) at i: a reference that can store. */
static void ck_sink_atomic_ref(ck *c, const ck_taint *tt, int mode, int fn, int i, ck_hits *h)
{
    int j = i + 1;
    if (ck_is(c, j, "<") && ck_angle(c, j) > j)
        j = ck_angle(c, j) + 1;
    if (ck_ident(c, j))
        j++;
    if ((ck_is(c, j, "(") || ck_is(c, j, "{")) && c->match[j] > j) {
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, fn, j + 1, c->match[j], &o);
        if (mode == CK_PROBE_MODE ? (o.p_ptr || o.p_val) : o.in_any) {
            if (mode == CK_GLOBAL_MODE && !o.in_ptr) {
                o.at = i;
                o.origin = o.any_origin;
            }
            ck_hit_store(h, &o, mode, i);
        }
    }
}

/* At the assignment i: an input pointer stored through a dereference, but
 * into a local array (whose contents the analysis follows): it escapes to
 * memory another alias can read back. */
static void ck_sink_escape(ck *c, const ck_taint *tt, int mode, int fn, int i, ck_hits *h)
{
    bool through;
    int member;
    int r = ck_lhs_root(c, i, &through, &member);
    if (through && (r < 0 || !ck_tfind(&c->arrays, ck_key(fn, c->id[r])))) {
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, fn, i + 1, ck_expr_end(c, i + 1), &o);
        if (o.in_ptr) {
            h->escape = o.at;
            h->origin = o.origin;
        }
    } else if (r < 0 && !through) {
        /* "(expr) = x", "f(x) = y": nothing the analysis can name */
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, fn, i + 1, ck_expr_end(c, i + 1), &o);
        if (o.in_ptr && ck_is(c, i - 1, ")")) {
            h->escape = o.at;
            h->origin = o.origin;
        }
    }
}

/* A C++ store at the assignment or increment i through a dereference of a tainted pointer. */
static void ck_sink_store(ck *c, const ck_taint *tt, int mode, int fn, int i, ck_hits *h)
{
    int ls, le;
    if (ck_assign_op(c, i) || ck_ident(c, i - 1) || ck_is(c, i - 1, "]") || ck_is(c, i - 1, ")")) {
        ls = ck_expr_start(c, i);
        le = i;
        if (ck_is(c, i, "=") && le - 1 >= ls && ck_ident(c, le - 1) && ck_declarator(c, le - 1))
            le = ls; /* "T *p = ...": a declaration, no store */
    } else {
        ls = i + 1;
        le = ck_expr_end(c, i + 1);
    }
    for (int j = ls; j < le; j++) {
        if (!ck_ident(c, j) || c->in_load[j])
            continue;
        bool member = ck_is(c, j - 1, ".") || ck_is(c, j - 1, "->");
        bool input = false, hit = false;
        int idx = -1, root = j, origin = -1;
        if (member && mode == CK_GLOBAL_MODE && ck_field(c, j, &input, &idx) && input) {
            root = ck_chain_root(c, j);
            hit = true;
            origin = idx;
        } else if (!member) {
            uint8_t k = ck_tget(c, tt, fn, j, &origin);
            hit = mode == CK_PROBE_MODE ? (k & CK_PROBE) != 0 : (k & CK_IN) != 0;
            /* a holder of input pointers dereferenced twice: a store through what it holds */
            if (mode == CK_GLOBAL_MODE && (k & CK_INC) && ck_deref_count(c, j, j) >= 2) {
                ck_occ o = {.in_ptr = true, .origin = origin, .at = j};
                ck_hit_store(h, &o, mode, j);
            }
        }
        if (hit && ck_deref(c, root, j)) {
            ck_occ o = {.in_ptr = true, .origin = origin, .at = j};
            ck_hit_store(h, &o, mode, j);
        }
    }
}

/* Inline PTX address operands of the asm statements in [a, b). */
static void ck_sink_asms(ck *c, const ck_taint *tt, int mode, int fn_only, int a, int b, ck_hits *h)
{
    for (int k = ck_first_asm(c, a); k < c->nas && c->as[k].kw < b; k++) {
        const ck_asm *as = &c->as[k];
        int fn = c->fn_of[as->kw];
        if (fn_only >= 0 && fn != fn_only)
            continue;
        for (int j = 0; j < as->nops; j++) {
            ck_occ o = {.origin = -1};
            ck_scan(c, tt, mode, fn, as->op_lp[j] + 1, c->match[as->op_lp[j]], &o);
            if (!ck_ptr(&o, mode))
                continue;
            uint64_t bit = 1ull << 63 | (j < 63 ? 1ull << j : 0);
            if (as->stores && (as->store_ops & bit))
                ck_hit_store(h, &o, mode, as->kw);
            else if (as->stores && mode == CK_GLOBAL_MODE && h->escape < 0) {
                h->escape = o.at; /* the pointer's value is what the PTX stores */
                h->origin = o.origin;
            }
            if (as->loads && (as->load_ops & bit))
                ck_hit(&h->load, as->kw);
        }
    }
}

/* Non-const pointer casts and conditions in [a, b). */
static void ck_sink_ranges(ck *c, const ck_taint *tt, int mode, int fn_only, int a, int b, ck_hits *h)
{
    for (int k = ck_first_range(c->casts, c->ncasts, a); k < c->ncasts && c->casts[k].at < b; k++) {
        const ck_range *r = &c->casts[k];
        if (fn_only >= 0 && c->fn_of[r->at] != fn_only)
            continue;
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, c->fn_of[r->at], r->a, r->b, &o);
        if (ck_ptr(&o, mode))
            ck_hit_cast(h, &o, mode, r->at);
    }
    for (int k = ck_first_range(c->conds, c->nconds, a); k < c->nconds && c->conds[k].at < b; k++) {
        const ck_range *r = &c->conds[k];
        if (fn_only >= 0 && c->fn_of[r->at] != fn_only)
            continue;
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, mode, c->fn_of[r->at], r->a, r->b, &o);
        ck_hit_cond(h, &o, mode, r->at);
    }
}

/* What reaches the sinks of [a, b) (function fn_only when >= 0), into h. */
void ck_sinks(ck *c, const ck_taint *tt, int mode, int fn_only, int a, int b, ck_hits *h)
{
    for (int i = a; i < b && i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        int fn = c->fn_of[i];
        if (fn_only >= 0 && fn != fn_only)
            continue;
        int lp = ck_call_lp(c, i);
        if (lp > 0 && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
            ck_sink_call(c, tt, mode, fn, i, lp, h);
            continue;
        }
        /* cuda::atomic_ref<T> x(*p): a reference that can store */
        if (ck_is(c, i, "atomic_ref")) {
            ck_sink_atomic_ref(c, tt, mode, fn, i, h);
            continue;
        }
        /* an input pointer stored through a dereference, but into a local array
         * (whose contents the analysis follows): it escapes to memory another
         * alias can read back */
        if (mode == CK_GLOBAL_MODE && ck_is(c, i, "=") && h->escape < 0) {
            ck_sink_escape(c, tt, mode, fn, i, h);
        }
        /* a C++ store through a dereference of a tainted pointer */
        if (ck_assign_op(c, i) || ck_is(c, i, "++") || ck_is(c, i, "--")) {
            ck_sink_store(c, tt, mode, fn, i, h);
        }
        /* a probe: any read through the parameter is a load */
        if (mode == CK_PROBE_MODE && ck_ident(c, i) && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->") &&
            (ck_tget(c, tt, fn, i, NULL) & CK_PROBE) && ck_deref(c, i, i))
            ck_hit(&h->load, i);
    }
    /* inline PTX address operands */
    ck_sink_asms(c, tt, mode, fn_only, a, b, h);
    /* non-const pointer casts and conditions */
    ck_sink_ranges(c, tt, mode, fn_only, a, b, h);
}

/* The return expressions of function k against a probe: pointer, value. */
static void ck_returns(ck *c, const ck_taint *tt, int k, bool *ptr, bool *val)
{
    const ck_fn *f = &c->fn[k];
    for (int i = f->lb; i < f->rb; i++) {
        if (!ck_is(c, i, "return") || c->fn_of[i] != k)
            continue;
        ck_occ o = {.origin = -1};
        ck_scan(c, tt, CK_PROBE_MODE, k, i + 1, ck_expr_end(c, i + 1), &o);
        *ptr |= o.p_ptr;
        *val |= o.p_val;
    }
}

/* Summaries of every function's parameters, to a fixpoint over callees. */
bool ck_summaries(ck *c)
{
    for (int round = 0; !c->failed; round++) {
        bool changed = false;
        for (int kk = 0; kk < c->nfn && !c->failed; kk++) {
            /* forward and backward in turn: a chain of helpers settles in a round or two
             * whichever order they are defined in */
            int k = round % 2 ? c->nfn - 1 - kk : kk;
            ck_fn *f = &c->fn[k];
            for (int j = 0; j < f->nparams; j++) {
                if (f->param[j] < 0 || c->is_struct_param[f->param[j]])
                    continue;
                ck_taint tt = {0};
                bool oom = false;
                ck_tadd(&tt, k, c->id[f->param[j]], CK_PROBE, -1, &oom);
                while (!oom && !c->failed && ck_propagate(c, &tt, CK_PROBE_MODE, k, f->lb, f->rb + 1, &oom)) {
                }
                ck_hits h = {-1, -1, -1, -1, -1, -1, -1};
                bool rp = false, rv = false;
                if (!oom) {
                    ck_sinks(c, &tt, CK_PROBE_MODE, k, f->lb, f->rb + 1, &h);
                    ck_returns(c, &tt, k, &rp, &rv);
                }
                free(tt.e);
                if (oom)
                    return ck_reject(c, 0, "out of memory");
                if (c->failed)
                    return false;
                uint32_t bit = 1u << j;
                uint32_t *sums[] = {&f->s_store, &f->s_load, &f->s_cast, &f->s_cond_any, &f->s_cond_val,
                                    &f->s_ret_ptr, &f->s_ret_val};
                bool got[] = {h.store >= 0, h.load >= 0, h.cast >= 0, h.cond_any >= 0, h.cond_val >= 0, rp, rv};
                for (size_t s = 0; s < KV_ARRAY_LEN(sums); s++) {
                    if (got[s] && !(*sums[s] & bit)) {
                        *sums[s] |= bit;
                        changed = true;
                    }
                }
            }
        }
        if (!changed)
            break;
    }
    return true;
}
