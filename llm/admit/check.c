/* check.c — the static check of LLM-written device source (see check.h).
 *
 * Passes, each returning at the first rejection:
 *   1. the tokenizer's own findings (stray bytes, unterminated literals);
 *   2. preprocessor directives and macros;
 *   3. forbidden names and constructs, token by token;
 *   4. inline PTX: every string literal, and each asm statement's template
 *      with its operands (which are store and load addresses);
 *   5. data flow: input-derived pointers, output-derived pointers and values
 *      read from the output, to a fixpoint over assignments, calls, returns
 *      and asm operands; then casts, stores and conditions are judged;
 *   6. addresses from integers: a pointer cast from an integer, an inline
 *      PTX memory operand that is one (constant addresses in the PTX text
 *      itself are pass 4's).
 *
 * This file holds the entry points, the driver and the shared utilities;
 * passes 2-3 are in check_rules.c, 4 in check_ptx.c, 5 in check_taint.c and
 * check_sinks.c, 6 (and the cast ranges) in check_casts.c.  check_int.h
 * declares what they share. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/admit/lex.h"
#include "llm/admit/check_int.h"
#include "util/util.h"

/* ---------------------------------------------------------------- utilities */

bool ck_reject(ck *c, int line, const char *fmt, ...)
{
    if (c->failed)
        return false;
    c->failed = true;
    if (!c->why || !c->wn)
        return false;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(c->why, c->wn, "line %d: %s", line, msg);
    else
        snprintf(c->why, c->wn, "%s", msg);
    kv_term_clean(c->why);
    return false;
}

kevo_tok_kind ck_kind(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok ? c->lx.tok[i].kind : KEVO_TK_PUNCT;
}

bool ck_ident(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok && c->lx.tok[i].kind == KEVO_TK_IDENT;
}

bool ck_code(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok && c->lx.tok[i].dir < 0;
}

int ck_line(const ck *c, int i)
{
    if (c->lx.ntok == 0)
        return 0;
    if (i < 0)
        i = 0;
    if (i >= c->lx.ntok)
        i = c->lx.ntok - 1;
    return c->lx.tok[i].line;
}

void ck_text(const ck *c, int i, char *out, size_t n)
{
    kevo_lex_text(&c->lx, i, out, n);
    kv_term_clean(out);
}

/* Whether identifier token i is one of the NULL-terminated list. */
bool ck_among(const ck *c, int i, const char *const *list)
{
    if (!ck_ident(c, i))
        return false;
    for (int k = 0; list[k]; k++)
        if (ck_is(c, i, list[k]))
            return true;
    return false;
}

static const char *const ck_keywords[] = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype", "alignas",
    "__launch_bounds__", "__cluster_dims__", "__maxnreg__", "defined", "static_assert", "__attribute__", "asm",
    "__asm__", "__asm", "volatile", "noexcept", "else", "case", "do", "goto", "throw", "new", "delete", "typeid",
    "__declspec", "operator", "template", "typename", "using", "namespace", "__device__", "__host__", "__global__",
    "__forceinline__", "__noinline__", "mutable", NULL};

/* An identifier that is a keyword, not a name. */
bool ck_keyword(const ck *c, int i)
{
    return ck_among(c, i, ck_keywords);
}

/* ------------------------------------------------------------ interning */

static uint64_t ck_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool ck_intern(ck *c)
{
    int nt = c->lx.ntok;
    c->id = malloc((size_t)(nt ? nt : 1) * sizeof *c->id);
    size_t cap = 64;
    while (cap < (size_t)nt * 2 + 64)
        cap *= 2;
    int *slot = malloc(cap * sizeof *slot); /* token index of the first occurrence, -1 */
    int *slot_id = malloc(cap * sizeof *slot_id);
    if (!c->id || !slot || !slot_id) {
        free(slot);
        free(slot_id);
        return false;
    }
    for (size_t i = 0; i < cap; i++)
        slot[i] = -1;
    for (int i = 0; i < nt; i++) {
        c->id[i] = -1;
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind != KEVO_TK_IDENT)
            continue;
        const char *p = c->lx.text + t->off;
        size_t h = (size_t)(ck_hash(p, t->len) & (cap - 1));
        while (slot[h] >= 0) {
            const kevo_tok *o = &c->lx.tok[slot[h]];
            if (o->len == t->len && memcmp(c->lx.text + o->off, p, t->len) == 0)
                break;
            h = (h + 1) & (cap - 1);
        }
        if (slot[h] < 0) {
            slot[h] = i;
            slot_id[h] = c->nids++;
        }
        c->id[i] = slot_id[h];
    }
    free(slot);
    free(slot_id);
    return true;
}

/* Interned id of a name, -1 when the source never spells it. */
static int ck_id_of(const ck *c, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind == KEVO_TK_IDENT && t->len == n && memcmp(c->lx.text + t->off, name, n) == 0)
            return c->id[i];
    }
    return -1;
}

/* --------------------------------------------------------------- taint set */

uint64_t ck_key(int fn, int id)
{
    return ((uint64_t)(uint32_t)(fn + 2) << 32) | (uint64_t)(uint32_t)(id + 1);
}

/* The key of member `id` of the variables of function fn (one namespace per function). */
static uint64_t ck_mkey(int fn, int id)
{
    return ck_key(fn, id) | (1ull << 62);
}

ck_hent *ck_tfind(const ck_taint *t, uint64_t key)
{
    if (!t->cap)
        return NULL;
    size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull) & (t->cap - 1);
    while (t->e[h].key) {
        if (t->e[h].key == key)
            return &t->e[h];
        h = (h + 1) & (t->cap - 1);
    }
    return NULL;
}

/* The entry of key, created empty when missing; NULL when memory runs out. */
static ck_hent *ck_tentry(ck_taint *t, uint64_t key, bool *oom)
{
    ck_hent *e = ck_tfind(t, key);
    if (e)
        return e;
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        ck_hent *ne = calloc(ncap, sizeof *ne);
        if (!ne) {
            *oom = true;
            return NULL;
        }
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->e[i].key)
                continue;
            size_t h = (size_t)(t->e[i].key * 0x9E3779B97F4A7C15ull) & (ncap - 1);
            while (ne[h].key)
                h = (h + 1) & (ncap - 1);
            ne[h] = t->e[i];
        }
        free(t->e);
        t->e = ne;
        t->cap = ncap;
    }
    size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull) & (t->cap - 1);
    while (t->e[h].key)
        h = (h + 1) & (t->cap - 1);
    t->e[h].key = key;
    t->e[h].kinds = t->e[h].part = 0;
    t->e[h].origin = -1;
    t->n++;
    return &t->e[h];
}

/* Add kinds to an entry's whole (or part); true when something new was added. */
static bool ck_tmerge(ck_hent *e, bool part, uint8_t kinds, int origin)
{
    uint8_t *k = part ? &e->part : &e->kinds;
    if (!e || (*k | kinds) == *k)
        return false;
    if (!((e->kinds | e->part) & (CK_IN | CK_INC)) && (kinds & (CK_IN | CK_INC)))
        e->origin = (int16_t)origin;
    *k |= kinds;
    return true;
}

/* Add kinds to variable id of function fn; true when something new was added. */
bool ck_tadd(ck_taint *t, int fn, int id, uint8_t kinds, int origin, bool *oom)
{
    if (id < 0 || !kinds)
        return false;
    ck_hent *e = ck_tentry(t, ck_key(fn, id), oom);
    return e && ck_tmerge(e, false, kinds, origin);
}

/* Add kinds to member mid of variable id (x.m = ...). */
bool ck_tadd_member(ck_taint *t, int fn, int id, int mid, uint8_t kinds, int origin, bool *oom)
{
    if (id < 0 || mid < 0 || !kinds)
        return false;
    ck_hent *m = ck_tentry(t, ck_mkey(fn, mid), oom);
    bool changed = m && ck_tmerge(m, false, kinds, origin);
    ck_hent *e = m ? ck_tentry(t, ck_key(fn, id), oom) : NULL;
    return (e && ck_tmerge(e, true, kinds, origin)) || changed;
}

/* Kinds of a variable named by token i in function fn (its own or a global's). */
uint8_t ck_tget(const ck *c, const ck_taint *t, int fn, int i, int *origin)
{
    int id = c->id[i];
    if (id < 0)
        return 0;
    const ck_hent *own = ck_tfind(t, ck_key(fn, id));
    const ck_hent *glob = fn >= 0 ? ck_tfind(t, ck_key(-1, id)) : NULL;
    uint8_t k = (uint8_t)((own ? own->kinds : 0) | (glob ? glob->kinds : 0));
    uint8_t part = (uint8_t)((own ? own->part : 0) | (glob ? glob->part : 0));
    if (!k && part) {
        /* only members carry taint: x.m counts when m does; x alone counts as all of them */
        if ((ck_is(c, i + 1, ".") || ck_is(c, i + 1, "->")) && ck_ident(c, i + 2)) {
            own = ck_tfind(t, ck_mkey(fn, c->id[i + 2]));
            glob = fn >= 0 ? ck_tfind(t, ck_mkey(-1, c->id[i + 2])) : NULL;
            k = (uint8_t)((own ? own->kinds : 0) | (glob ? glob->kinds : 0));
        } else {
            k = part;
        }
    }
    if (origin && (k & (CK_IN | CK_INC)))
        *origin = own && ((own->kinds | own->part) & (CK_IN | CK_INC)) ? own->origin : glob ? glob->origin : -1;
    return k;
}

/* ------------------------------------------------------------- structure */

static bool ck_match_brackets(ck *c)
{
    int nt = c->lx.ntok;
    c->match = malloc((size_t)(nt ? nt : 1) * sizeof *c->match);
    int *stack = malloc((size_t)(nt ? nt : 1) * sizeof *stack);
    if (!c->match || !stack) {
        free(stack);
        return false;
    }
    int sp = 0;
    for (int i = 0; i < nt; i++) {
        c->match[i] = -1;
        if (!ck_code(c, i) || c->lx.tok[i].kind != KEVO_TK_PUNCT)
            continue;
        const char *p = c->lx.tok[i].punct;
        if (!strcmp(p, "(") || !strcmp(p, "[") || !strcmp(p, "{")) {
            if (sp >= CK_MAX_DEPTH) {
                free(stack);
                return ck_reject(c, c->lx.tok[i].line, "brackets nested deeper than %d", CK_MAX_DEPTH), true;
            }
            stack[sp++] = i;
        } else if (!strcmp(p, ")") || !strcmp(p, "]") || !strcmp(p, "}")) {
            char open = p[0] == ')' ? '(' : p[0] == ']' ? '[' : '{';
            if (sp == 0 || c->lx.tok[stack[sp - 1]].punct[0] != open) {
                free(stack);
                return ck_reject(c, c->lx.tok[i].line, "unbalanced '%s'", p), true;
            }
            int o = stack[--sp];
            c->match[o] = i;
            c->match[i] = o;
        }
    }
    if (sp > 0)
        ck_reject(c, c->lx.tok[stack[sp - 1]].line, "unclosed '%s'", c->lx.tok[stack[sp - 1]].punct);
    free(stack);
    return true;
}

/* Matching '>' of the '<' at i (template arguments), or -1. */
int ck_angle(const ck *c, int i)
{
    int depth = 0;
    for (int j = i; j < c->lx.ntok && j < i + CK_DECL_CAP && ck_code(c, j); j++) {
        if (ck_is(c, j, "<"))
            depth++;
        else if (ck_is(c, j, ">"))
            depth--;
        else if (ck_is(c, j, ">>"))
            depth -= 2;
        else if (ck_is(c, j, "(") || ck_is(c, j, "[")) {
            if (c->match[j] < 0)
                return -1;
            j = c->match[j];
            continue;
        } else if (ck_is(c, j, ";") || ck_is(c, j, "{") || ck_is(c, j, "}") || ck_is(c, j, ")") ||
                   ck_is(c, j, "]"))
            return -1;
        if (depth <= 0)
            return j;
    }
    return -1;
}

/* The '(' of a call whose callee is token i (f(...), or f<...>(...) for a
 * function the source defines), or -1. */
int ck_call_lp(const ck *c, int i)
{
    if (!ck_ident(c, i) || ck_keyword(c, i) || !ck_code(c, i))
        return -1;
    if (ck_is(c, i + 1, "(") && c->match[i + 1] > i + 1)
        return i + 1;
    if (ck_is(c, i + 1, "<") && c->fn_by_id && c->fn_by_id[c->id[i]] >= 0) {
        int g = ck_angle(c, i + 1);
        if (g > 0 && ck_is(c, g + 1, "(") && c->match[g + 1] > g + 1)
            return g + 1;
    }
    return -1;
}

/* Split the arguments between parens lp and rp into ranges; returns how many. */
int ck_args(const ck *c, int lp, int rp, int *start, int *end, int max)
{
    int n = 0, s = lp + 1;
    if (rp <= lp + 1)
        return 0;
    for (int j = lp + 1; j <= rp; j++) {
        if (j < rp && (ck_is(c, j, "(") || ck_is(c, j, "[") || ck_is(c, j, "{")) && c->match[j] > j) {
            j = c->match[j];
            continue;
        }
        if (j == rp || ck_is(c, j, ",")) {
            if (n < max) {
                start[n] = s;
                end[n] = j;
            }
            n++;
            s = j + 1;
        }
    }
    return n < max ? n : max;
}

/* The first of `extern "C"` at token i. */
static bool ck_extern_c(const ck *c, int i)
{
    if (!ck_is(c, i, "extern") || ck_kind(c, i + 1) != KEVO_TK_STRING)
        return false;
    kv_buf b;
    kv_buf_init(&b);
    kevo_lex_string(&c->lx, i + 1, &b);
    bool yes = b.data && strcmp(b.data, "C") == 0;
    kv_buf_release(&b);
    return yes;
}

/* Macros: string macros, entry macros.  Directive checks are separate. */
static void ck_macros(ck *c)
{
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind != KEVO_TK_PUNCT || t->dir != i || !ck_is(c, i + 1, "define") || !ck_ident(c, i + 2) ||
            c->lx.tok[i + 2].dir != i)
            continue;
        int name = i + 2, body = name + 1, end = name + 1;
        while (end < c->lx.ntok && c->lx.tok[end].dir == i)
            end++;
        bool fnlike = ck_is(c, body, "(") && c->lx.tok[body].dir == i &&
                      c->lx.tok[name].off + c->lx.tok[name].len == c->lx.tok[body].off;
        int id = c->id[name];
        c->macro_dir[id] = i;
        if (!fnlike) {
            bool strings = body < end;
            for (int j = body; j < end; j++)
                strings &= c->lx.tok[j].kind == KEVO_TK_STRING;
            if (strings)
                c->str_macro[id] = true;
            continue;
        }
        int rp = body;
        while (rp < end && !ck_is(c, rp, ")"))
            rp++;
        bool global = false, ec = false;
        for (int j = rp + 1; j < end; j++) {
            global |= ck_is(c, j, "__global__");
            ec |= ck_extern_c(c, j);
        }
        if (!global || rp + 1 >= end || !ck_ident(c, end - 1))
            continue;
        int k = 0, arg = -1;
        for (int j = body + 1; j < rp; j++) {
            if (ck_is(c, j, ","))
                k++;
            else if (ck_ident(c, j) && c->id[j] == c->id[end - 1])
                arg = k;
        }
        if (arg >= 0) {
            c->entry_macro[id] = true;
            c->entry_macro_arg[id] = arg;
            c->entry_macro_ec[id] = ec;
        }
    }
}

/* extern "C" { ... } blocks. */
static void ck_externc_blocks(ck *c)
{
    for (int i = 0; i + 2 < c->lx.ntok; i++) {
        if (!ck_code(c, i) || !ck_extern_c(c, i) || !ck_is(c, i + 2, "{") || c->match[i + 2] < 0)
            continue;
        for (int j = i + 2; j <= c->match[i + 2]; j++)
            c->externc_blk[j] = true;
    }
}

/* Start of the declaration that ends before token i. */
int ck_decl_start(const ck *c, int i)
{
    int j = i;
    while (j > 0 && j > i - CK_DECL_CAP) {
        int p = j - 1;
        if (!ck_code(c, p) || ck_is(c, p, ";") || ck_is(c, p, "}") || ck_is(c, p, "{"))
            break;
        j = p;
    }
    return j;
}

static bool ck_find_functions(ck *c)
{
    int cap = 0;
    for (int i = 0; i < c->lx.ntok; i++) {
        if (!ck_code(c, i) || !ck_is(c, i, "{") || c->match[i] < 0)
            continue;
        int p = i - 1;
        while (ck_among(c, p, (const char *const[]){"const", "noexcept", "override", "final", "mutable", "volatile",
                                                    "__restrict__", NULL}))
            p--;
        if (!ck_is(c, p, ")") || c->match[p] < 0)
            continue;
        int rp = p, lp = c->match[p], before = lp - 1;
        int name = -1;
        bool macro_global = false, macro_ec = false;
        if (ck_ident(c, before) && !ck_keyword(c, before)) {
            name = before;
        } else if (ck_is(c, before, ")") && c->match[before] > 0 && ck_ident(c, c->match[before] - 1) &&
                   c->entry_macro[c->id[c->match[before] - 1]]) {
            int m = c->match[before] - 1, starts[CK_MAX_PARAMS], ends[CK_MAX_PARAMS];
            int na = ck_args(c, m + 1, before, starts, ends, CK_MAX_PARAMS);
            int k = c->entry_macro_arg[c->id[m]];
            if (k < na && ends[k] == starts[k] + 1 && ck_ident(c, starts[k]))
                name = starts[k];
            macro_global = true;
            macro_ec = c->entry_macro_ec[c->id[m]];
            before = m;
        } else if (!ck_is(c, before, ">")) {
            continue; /* a lambda, a control statement, an initializer */
        }
        if (c->nfn == cap) {
            int ncap = cap ? cap * 2 : 64;
            ck_fn *f = realloc(c->fn, (size_t)ncap * sizeof *f);
            if (!f)
                return false;
            c->fn = f;
            cap = ncap;
        }
        ck_fn *f = &c->fn[c->nfn];
        memset(f, 0, sizeof *f);
        f->name = name;
        f->id = name >= 0 ? c->id[name] : -1;
        if (name >= 0)
            ck_text(c, name, f->text, sizeof f->text);
        else
            snprintf(f->text, sizeof f->text, "?");
        f->lp = lp;
        f->rp = rp;
        f->lb = i;
        f->rb = c->match[i];
        f->next_same = -1;
        int starts[CK_MAX_PARAMS], ends[CK_MAX_PARAMS];
        f->nparams = ck_args(c, lp, rp, starts, ends, CK_MAX_PARAMS);
        for (int k = 0; k < f->nparams; k++) {
            f->param[k] = -1;
            int stop = ends[k];
            for (int j = starts[k]; j < ends[k]; j++)
                if (ck_is(c, j, "=")) {
                    stop = j;
                    break;
                }
            for (int j = stop - 1; j >= starts[k]; j--) {
                if (ck_is(c, j, "]") && c->match[j] >= starts[k]) {
                    j = c->match[j];
                    continue;
                }
                if (ck_ident(c, j) && !ck_keyword(c, j)) {
                    f->param[k] = j;
                    break;
                }
            }
        }
        int ds = ck_decl_start(c, before);
        f->global = macro_global;
        f->externc = macro_ec || c->externc_blk[i];
        for (int j = ds; j < before; j++) {
            f->global |= ck_is(c, j, "__global__");
            f->externc |= ck_extern_c(c, j);
        }
        c->nfn++;
    }
    for (int k = 0; k < c->nfn; k++) {
        const ck_fn *f = &c->fn[k];
        for (int j = f->lp; j <= f->rb; j++)
            c->fn_of[j] = k; /* later (inner) functions overwrite */
        if (f->id >= 0) {
            c->fn[k].next_same = c->fn_by_id[f->id];
            c->fn_by_id[f->id] = k;
        }
    }
    /* the struct parameter's name in every function: names an entry's parameter has */
    for (int k = 0; k < c->nfn; k++)
        for (int j = 0; c->fn[k].global && j < c->fn[k].nparams; j++)
            if (c->fn[k].param[j] >= 0)
                c->struct_id[c->id[c->fn[k].param[j]]] = true;
    for (int i = 0; i < c->lx.ntok; i++)
        c->is_struct_param[i] = c->id[i] >= 0 && c->struct_id[c->id[i]];
    return true;
}

/* ------------------------------------------------------------------ flow */

static bool ck_flow(ck *c)
{
    ck_aliases(c);
    ck_mark_loads(c);
    if (!ck_ranges(c))
        return ck_reject(c, 0, "out of memory");
    if (!ck_summaries(c))
        return false;
    bool oom = false;
    while (!oom && !c->failed && ck_propagate(c, &c->taint, CK_GLOBAL_MODE, -1, 0, c->lx.ntok, &oom)) {
    }
    if (oom)
        return ck_reject(c, 0, "out of memory");
    if (c->failed)
        return false;
    ck_hits h = {-1, -1, -1, -1, -1, -1, -1};
    ck_sinks(c, &c->taint, CK_GLOBAL_MODE, -1, 0, c->lx.ntok, &h);
    char f[80] = "the argument struct (by its address)";
    if (h.origin >= 0 && h.origin < c->ninputs)
        snprintf(f, sizeof f, "input '%.60s'", c->inputs[h.origin]);
    kv_term_clean(f);
    if (h.store >= 0)
        return ck_reject(c, ck_line(c, h.store), "a pointer from %s reaches a store to global memory (inputs must "
                                                 "never be written)", f);
    if (h.cast >= 0)
        return ck_reject(c, ck_line(c, h.cast), "a pointer from %s is cast to a non-const pointer (inputs must "
                                                "never be written)", f);
    if (h.escape >= 0)
        return ck_reject(c, ck_line(c, h.escape), "a pointer from %s is stored to memory the check cannot follow "
                                                  "(keep input pointers in variables and local arrays)", f);
    if (h.cond_val >= 0)
        return ck_reject(c, ck_line(c, h.cond_val), "what the output held before decides control flow (the output "
                                                    "must be written before it is read, and never tested)");
    return true;
}

/* ------------------------------------------------------------------ API */

static void ck_free(ck *c)
{
    kevo_lex_free(&c->lx);
    free(c->match);
    free(c->id);
    free(c->fn_of);
    free(c->in_load);
    free(c->deref_ctx);
    free(c->externc_blk);
    free(c->fn);
    free(c->fn_by_id);
    free(c->as);
    free(c->is_struct_param);
    free(c->alias_ptr);
    free(c->str_macro);
    free(c->macro_dir);
    free(c->struct_id);
    free(c->union_id);
    free(c->entry_macro);
    free(c->entry_macro_arg);
    free(c->entry_macro_ec);
    free(c->taint.e);
    free(c->casts);
    free(c->conds);
    free(c->arrays.e);
}

/* Tokenize and find the structure; false with a rejection. */
static bool ck_init(ck *c, const char *src)
{
    if (!src)
        return ck_reject(c, 0, "no source");
    size_t n = strnlen(src, KEVO_LLM_SOURCE_MAX + 1);
    if (n > KEVO_LLM_SOURCE_MAX)
        return ck_reject(c, 0, "source over %d KiB", KEVO_LLM_SOURCE_MAX / 1024);
    if (!kevo_lex_run(src, n, &c->lx))
        return ck_reject(c, 0, "source too large to tokenize");
    if (!ck_intern(c))
        return ck_reject(c, 0, "out of memory");
    size_t nt = (size_t)(c->lx.ntok ? c->lx.ntok : 1), ni = (size_t)(c->nids ? c->nids : 1);
    c->fn_of = malloc(nt * sizeof *c->fn_of);
    c->in_load = calloc(nt, 1);
    c->deref_ctx = calloc(nt, 1);
    c->externc_blk = calloc(nt, 1);
    c->is_struct_param = calloc(nt, 1);
    c->fn_by_id = malloc(ni * sizeof *c->fn_by_id);
    c->alias_ptr = calloc(ni, 1);
    c->str_macro = calloc(ni, 1);
    c->macro_dir = malloc(ni * sizeof *c->macro_dir);
    c->struct_id = calloc(ni, 1);
    c->union_id = calloc(ni, 1);
    c->entry_macro = calloc(ni, 1);
    c->entry_macro_arg = calloc(ni, sizeof *c->entry_macro_arg);
    c->entry_macro_ec = calloc(ni, 1);
    if (!c->fn_of || !c->in_load || !c->deref_ctx || !c->externc_blk || !c->is_struct_param || !c->fn_by_id || !c->alias_ptr ||
        !c->str_macro || !c->entry_macro || !c->entry_macro_arg || !c->entry_macro_ec || !c->macro_dir ||
        !c->struct_id || !c->union_id)
        return ck_reject(c, 0, "out of memory");
    for (size_t i = 0; i < nt; i++)
        c->fn_of[i] = -1;
    for (size_t i = 0; i < ni; i++)
        c->fn_by_id[i] = c->macro_dir[i] = -1;
    if (!ck_match_brackets(c))
        return ck_reject(c, 0, "out of memory");
    if (c->failed)
        return false;
    ck_macros(c);
    ck_externc_blocks(c);
    if (!ck_find_functions(c))
        return ck_reject(c, 0, "out of memory");
    return true;
}

bool kevo_llm_check_source(const char *src, const char *const *inputs, int ninputs, const char *const *outputs,
                           int noutputs, char *why, size_t n)
{
    ck c;
    memset(&c, 0, sizeof c);
    unsigned long long work = 0;
    c.work = &work;
    c.why = why;
    c.wn = n;
    if (why && n)
        why[0] = '\0';
    c.inputs = inputs;
    c.ninputs = inputs && ninputs > 0 ? (ninputs < CK_MAX_FIELDS ? ninputs : CK_MAX_FIELDS) : 0;
    c.outputs = outputs;
    c.noutputs = outputs && noutputs > 0 ? (noutputs < CK_MAX_FIELDS ? noutputs : CK_MAX_FIELDS) : 0;
    bool ok = ck_init(&c, src);
    if (ok) {
        for (int k = 0; k < c.ninputs; k++)
            c.in_id[k] = inputs[k] ? ck_id_of(&c, inputs[k]) : -1;
        for (int k = 0; k < c.noutputs; k++)
            c.out_id[k] = outputs[k] ? ck_id_of(&c, outputs[k]) : -1;
        if (c.lx.issue.line)
            ok = ck_reject(&c, c.lx.issue.line, "%s", c.lx.issue.what);
    }
    ok = ok && ck_directives(&c) && ck_tokens(&c) && ck_strings(&c) && ck_asms(&c) && ck_flow(&c) &&
         ck_addresses(&c);
    ck_free(&c);
    return ok && !c.failed;
}

int kevo_llm_find_entries(const char *src, kevo_llm_entry *out, int max)
{
    ck c;
    memset(&c, 0, sizeof c);
    unsigned long long work = 0;
    c.work = &work;
    if (!src || strnlen(src, KEVO_LLM_SOURCE_MAX + 1) > KEVO_LLM_SOURCE_MAX)
        return -1;
    if (!ck_init(&c, src) && !c.lx.ntok) {
        ck_free(&c);
        return -1;
    }
    int count = 0;
    for (int k = 0; k < c.nfn; k++) {
        if (!c.fn[k].global || c.fn[k].name < 0)
            continue;
        if (out && count < max) {
            snprintf(out[count].name, sizeof out[count].name, "%s", c.fn[k].text);
            out[count].extern_c = c.fn[k].externc;
            out[count].line = ck_line(&c, c.fn[k].name);
        }
        count++;
    }
    ck_free(&c);
    return count;
}

int kevo_llm_give_c_linkage(const char *src, const char *name, char **out)
{
    *out = NULL;
    ck c;
    memset(&c, 0, sizeof c);
    unsigned long long work = 0;
    c.work = &work;
    if (!src || !name || !name[0])
        return 0;
    size_t n = strnlen(src, KEVO_LLM_SOURCE_MAX + 1);
    if (n > KEVO_LLM_SOURCE_MAX)
        return 0;
    if (!ck_init(&c, src)) {
        ck_free(&c);
        return 0;
    }
    /* token offsets are into the spliced text: only a source without
     * backslash-newlines maps them back to its own bytes */
    int at[16], nat = 0;
    bool refuse = c.lx.n != n;
    for (int i = 0; i < c.lx.ntok && !refuse; i++) {
        if (!ck_code(&c, i) || !ck_ident(&c, i) || c.fn_of[i] >= 0 || !ck_is(&c, i + 1, "("))
            continue;
        char t[64];
        ck_text(&c, i, t, sizeof t);
        if (strcmp(t, name) != 0 || c.externc_blk[i])
            continue;
        int ds = ck_decl_start(&c, i);
        bool global = false, ec = false;
        for (int j = ds; j < i; j++) {
            global |= ck_is(&c, j, "__global__");
            ec |= ck_extern_c(&c, j);
            refuse |= ck_is(&c, j, "template") || ck_is(&c, j, "static");
        }
        if (!global || ec)
            continue;
        if (nat == (int)(sizeof at / sizeof at[0]))
            refuse = true;
        else
            at[nat++] = (int)c.lx.tok[ds].off;
    }
    int done = 0;
    static const char ext[] = "extern \"C\" ";
    char *s = !refuse && nat > 0 ? malloc(n + (size_t)nat * (sizeof ext - 1) + 1) : NULL;
    if (!refuse && nat > 0 && !s) {
        done = -1;
    } else if (s) {
        size_t w = 0, r = 0;
        for (int k = 0; k < nat; k++) {
            memcpy(s + w, src + r, (size_t)at[k] - r);
            w += (size_t)at[k] - r;
            r = (size_t)at[k];
            memcpy(s + w, ext, sizeof ext - 1);
            w += sizeof ext - 1;
        }
        memcpy(s + w, src + r, n - r);
        s[w + n - r] = '\0';
        *out = s;
        done = nat;
    }
    ck_free(&c);
    return done;
}
