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
 *      itself are pass 4's). */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- utilities */

static bool ck_reject(ck *c, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static bool ck_reject(ck *c, int line, const char *fmt, ...)
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

static kevo_tok_kind ck_kind(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok ? c->lx.tok[i].kind : KEVO_TK_PUNCT;
}

static bool ck_ident(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok && c->lx.tok[i].kind == KEVO_TK_IDENT;
}

static bool ck_code(const ck *c, int i)
{
    return i >= 0 && i < c->lx.ntok && c->lx.tok[i].dir < 0;
}

static int ck_line(const ck *c, int i)
{
    if (c->lx.ntok == 0)
        return 0;
    if (i < 0)
        i = 0;
    if (i >= c->lx.ntok)
        i = c->lx.ntok - 1;
    return c->lx.tok[i].line;
}

static void ck_text(const ck *c, int i, char *out, size_t n)
{
    kevo_lex_text(&c->lx, i, out, n);
    kv_term_clean(out);
}

/* Whether identifier token i is one of the NULL-terminated list. */
static bool ck_among(const ck *c, int i, const char *const *list)
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
static bool ck_keyword(const ck *c, int i)
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

static uint64_t ck_key(int fn, int id)
{
    return ((uint64_t)(uint32_t)(fn + 2) << 32) | (uint64_t)(uint32_t)(id + 1);
}

/* The key of member `id` of the variables of function fn (one namespace per function). */
static uint64_t ck_mkey(int fn, int id)
{
    return ck_key(fn, id) | (1ull << 62);
}

static ck_hent *ck_tfind(const ck_taint *t, uint64_t key)
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
static bool ck_tadd(ck_taint *t, int fn, int id, uint8_t kinds, int origin, bool *oom)
{
    if (id < 0 || !kinds)
        return false;
    ck_hent *e = ck_tentry(t, ck_key(fn, id), oom);
    return e && ck_tmerge(e, false, kinds, origin);
}

/* Add kinds to member mid of variable id (x.m = ...). */
static bool ck_tadd_member(ck_taint *t, int fn, int id, int mid, uint8_t kinds, int origin, bool *oom)
{
    if (id < 0 || mid < 0 || !kinds)
        return false;
    ck_hent *m = ck_tentry(t, ck_mkey(fn, mid), oom);
    bool changed = m && ck_tmerge(m, false, kinds, origin);
    ck_hent *e = m ? ck_tentry(t, ck_key(fn, id), oom) : NULL;
    return (e && ck_tmerge(e, true, kinds, origin)) || changed;
}

/* Kinds of a variable named by token i in function fn (its own or a global's). */
static uint8_t ck_tget(const ck *c, const ck_taint *t, int fn, int i, int *origin)
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
static int ck_angle(const ck *c, int i)
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
static int ck_call_lp(const ck *c, int i)
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
static int ck_args(const ck *c, int lp, int rp, int *start, int *end, int max)
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
static int ck_decl_start(const ck *c, int i)
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

/* ------------------------------------------------------------ directives */

static const char *const ck_allowed_headers[] = {
    "dtype.cuh", "mma.cuh", "wgmma.cuh", "hopper.cuh", "wgmma_attn.cuh", "softmax.cuh", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h",
    "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h", "cuda_awbarrier_primitives.h", "mma.h",
    "cooperative_groups.h", "cooperative_groups/memcpy_async.h", "cooperative_groups/reduce.h",
    "cooperative_groups/scan.h", "cuda/ptx", "cuda/barrier", "cuda/atomic", "cuda/pipeline", "cuda/annotated_ptr",
    "cuda/std/cstdint", "cuda/std/cstddef", "cuda/std/climits", "cuda/std/cfloat", "cuda/std/type_traits",
    "cuda/std/utility", "cuda/std/limits", "cuda/std/array", "cuda/std/bit", "cuda/std/tuple",
    "cuda/std/functional", "cuda/std/cmath", "cuda/std/atomic", "cuda/std/barrier", NULL};

static bool ck_header_ok(const char *h)
{
    for (int k = 0; ck_allowed_headers[k]; k++)
        if (strcmp(h, ck_allowed_headers[k]) == 0)
            return true;
    /* an op's ABI header, by name or from the templates' folder ("../kernels/x_abi.h") */
    const char *base = h;
    if (strncmp(base, "../kernels/", 11) == 0)
        base += 11;
    else if (strncmp(base, "kernels/", 8) == 0)
        base += 8;
    size_t n = strlen(base);
    if (n < 7 || strcmp(base + n - 6, "_abi.h") != 0)
        return false;
    for (size_t i = 0; i + 6 < n; i++)
        if (!((base[i] >= 'a' && base[i] <= 'z') || (base[i] >= '0' && base[i] <= '9') || base[i] == '_'))
            return false;
    return true;
}

/* Names a #define or #undef may not take. */
static const char *const ck_reserved_macro_names[] = {
    "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__", "__grid_constant__",
    "__launch_bounds__", "__cluster_dims__", "__forceinline__", "__noinline__", "__restrict__", "asm", "__asm__",
    "__asm", "volatile", "__volatile__", "const", "constexpr", "extern", "static", "inline", "struct", "class",
    "union", "typedef", "using", "template", "typename", "namespace", "operator", "sizeof", "void", "if", "else",
    "for", "while", "do", "switch", "case", "return", "goto", "const_cast", "static_cast", "reinterpret_cast",
    "dynamic_cast", "main", "__CUDA_ARCH__", "__CUDACC__", "__CUDACC_RTC__", "__cplusplus", NULL};

static bool ck_forbidden_name(const ck *c, int i, const char **why);

static bool ck_field(const ck *c, int i, bool *input, int *idx)
{
    if (!ck_ident(c, i))
        return false;
    for (int k = 0; k < c->ninputs && k < CK_MAX_FIELDS; k++)
        if (c->id[i] == c->in_id[k] && c->in_id[k] >= 0) {
            *input = true;
            *idx = k;
            return true;
        }
    for (int k = 0; k < c->noutputs && k < CK_MAX_FIELDS; k++)
        if (c->id[i] == c->out_id[k] && c->out_id[k] >= 0) {
            *input = false;
            *idx = k;
            return true;
        }
    return false;
}

static bool ck_directives(ck *c)
{
    char name[64], hdr[256];
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind == KEVO_TK_PUNCT && (!strcmp(t->punct, "#") || !strcmp(t->punct, "##")) && t->dir != i) {
            if (t->dir >= 0 && ck_is(c, t->dir + 1, "define"))
                return ck_reject(c, t->line, "'%s' in a macro (token pasting or stringizing can build names the "
                                             "check cannot see)", t->punct);
            return ck_reject(c, t->line, "stray '%s' outside a directive", t->punct);
        }
        if (t->dir != i)
            continue;
        int d = i + 1, end = i + 1;
        while (end < c->lx.ntok && c->lx.tok[end].dir == i)
            end++;
        if (d >= end)
            continue; /* the null directive */
        ck_text(c, d, name, sizeof name);
        if (!strcmp(name, "include")) {
            /* the header name as written: "x" or <x> */
            const char *s = c->lx.text + c->lx.tok[d].off + c->lx.tok[d].len;
            const char *e = c->lx.text + (end < c->lx.ntok ? c->lx.tok[end].off : c->lx.n);
            while (s < e && (*s == ' ' || *s == '\t'))
                s++;
            char close = *s == '"' ? '"' : *s == '<' ? '>' : 0;
            const char *q = close ? memchr(s + 1, close, (size_t)(e - s - 1)) : NULL;
            if (!q || (size_t)(q - s - 1) >= sizeof hdr)
                return ck_reject(c, t->line, "#include without a plain header name");
            memcpy(hdr, s + 1, (size_t)(q - s - 1));
            hdr[q - s - 1] = '\0';
            if (!ck_header_ok(hdr)) {
                kv_term_clean(hdr);
                return ck_reject(c, t->line,
                                 "#include of '%s' (allowed: the op's ABI header, the templates' .cuh files, "
                                 "cuda_fp16.h, cuda_bf16.h, cuda_pipeline.h, cuda/ptx, cuda/barrier, cuda/atomic, "
                                 "cuda/pipeline, cooperative_groups, mma.h, cuda/std type headers)",
                                 hdr);
            }
        } else if (!strcmp(name, "pragma")) {
            if (!(ck_among(c, d + 1, (const char *const[]){"unroll", "nounroll", "once", NULL}) &&
                  c->lx.tok[d + 1].dir == i))
                return ck_reject(c, t->line, "#pragma other than unroll, nounroll or once");
        } else if (!strcmp(name, "define") || !strcmp(name, "undef")) {
            int m = d + 1;
            if (m >= end || !ck_ident(c, m))
                return ck_reject(c, t->line, "#%s without a name", name);
            char mname[64];
            ck_text(c, m, mname, sizeof mname);
            const char *why = NULL;
            bool inp;
            int idx;
            if (ck_among(c, m, ck_reserved_macro_names) || ck_forbidden_name(c, m, &why) || ck_field(c, m, &inp, &idx))
                return ck_reject(c, t->line, "#%s of '%s' (a keyword, a forbidden name or an argument field)", name,
                                 mname);
            if (!strcmp(name, "undef"))
                continue;
            bool fnlike = ck_is(c, m + 1, "(") && c->lx.tok[m + 1].dir == i &&
                          c->lx.tok[m].off + c->lx.tok[m].len == c->lx.tok[m + 1].off;
            int body = m + 1, prp = -1;
            if (fnlike) {
                prp = m + 1;
                while (prp < end && !ck_is(c, prp, ")"))
                    prp++;
                body = prp + 1;
            }
            for (int j = body; j < end; j++) {
                if (ck_field(c, j, &inp, &idx)) {
                    char f[64];
                    ck_text(c, j, f, sizeof f);
                    return ck_reject(c, t->line, "macro '%s' names the argument field '%s' (write the access out "
                                                 "so that it can be checked)", mname, f);
                }
                if (ck_among(c, j, (const char *const[]){"asm", "__asm__", "__asm", NULL}))
                    return ck_reject(c, t->line, "macro '%s' holds inline PTX (the check cannot follow its operands)",
                                     mname);
                /* a parameter used as a cast type: (T)x, xxx_cast<T> */
                if (fnlike && ck_ident(c, j)) {
                    bool param = false;
                    for (int k = m + 2; k < prp; k++)
                        param |= ck_ident(c, k) && c->id[k] == c->id[j];
                    bool c_cast = param && ck_is(c, j - 1, "(") && ck_is(c, j + 1, ")") && j + 2 < end &&
                                  (ck_ident(c, j + 2) || ck_is(c, j + 2, "(") || ck_is(c, j + 2, "&") ||
                                   ck_is(c, j + 2, "*"));
                    bool named = param && ck_is(c, j - 1, "<") && j >= 2 && ck_ident(c, j - 2) &&
                                 ck_among(c, j - 2, (const char *const[]){"static_cast", "reinterpret_cast",
                                                                          "const_cast", "bit_cast", NULL});
                    if (c_cast || named)
                        return ck_reject(c, t->line, "macro '%s' casts to a macro parameter (casts must be written "
                                                     "out so that they can be checked)", mname);
                }
            }
        } else if (!ck_among(c, d, (const char *const[]){"if", "ifdef", "ifndef", "elif", "else", "endif", "line",
                                                         "error", "warning", "elifdef", "elifndef", NULL})) {
            return ck_reject(c, t->line, "preprocessor directive '#%s'", name);
        }
    }
    return true;
}

/* ------------------------------------------------------- forbidden names */

typedef struct ck_ban {
    const char *name;
    const char *why;
    bool call_only; /* only when called: name( */
} ck_ban;

static const ck_ban ck_bans[] = {
    {"printf", "device code may not print", false},
    {"vprintf", "device code may not print", false},
    {"fprintf", "device code may not print", false},
    {"sprintf", "device code may not print", false},
    {"snprintf", "device code may not print", false},
    {"puts", "device code may not print", false},
    {"putchar", "device code may not print", false},
    {"assert", "assert prints from the device (use __trap())", true},
    {"__assert_fail", "assert prints from the device (use __trap())", false},
    {"__assertfail", "assert prints from the device (use __trap())", false},
    {"clock", "clock reads are not allowed", false},
    {"clock64", "clock reads are not allowed", false},
    {"__clock64", "clock reads are not allowed", false},
    {"globaltimer", "timer reads are not allowed", false},
    {"__globaltimer", "timer reads are not allowed", false},
    {"get_sreg_clock", "clock reads are not allowed", false},
    {"get_sreg_clock64", "clock reads are not allowed", false},
    {"get_sreg_clock_hi", "clock reads are not allowed", false},
    {"get_sreg_globaltimer", "timer reads are not allowed", false},
    {"get_sreg_globaltimer_lo", "timer reads are not allowed", false},
    {"get_sreg_globaltimer_hi", "timer reads are not allowed", false},
    {"chrono", "timer reads are not allowed", false},
    {"time", "timer reads are not allowed", true},
    {"gettimeofday", "timer reads are not allowed", false},
    {"clock_gettime", "timer reads are not allowed", false},
    {"malloc", "no dynamic allocation in device code", false},
    {"calloc", "no dynamic allocation in device code", false},
    {"realloc", "no dynamic allocation in device code", false},
    {"free", "no dynamic allocation in device code", true},
    {"aligned_alloc", "no dynamic allocation in device code", false},
    {"new", "no dynamic allocation in device code", false},
    {"delete", "no dynamic allocation in device code", false},
    {"__managed__", "no managed memory", false},
    {"fopen", "no file access", false},
    {"fclose", "no file access", false},
    {"fread", "no file access", false},
    {"fwrite", "no file access", false},
    {"fputs", "no file access", false},
    {"fgets", "no file access", false},
    {"fflush", "no file access", false},
    {"system", "no process control", true},
    {"popen", "no process control", false},
    {"fork", "no process control", true},
    {"execl", "no process control", false},
    {"execlp", "no process control", false},
    {"execv", "no process control", false},
    {"execvp", "no process control", false},
    {"execve", "no process control", false},
    {"getenv", "no environment access", false},
    {"setenv", "no environment access", false},
    {"putenv", "no environment access", false},
    {"remove", "no file access", true},
    {"unlink", "no file access", false},
    {"rename", "no file access", true},
    {"syscall", "no system calls", false},
    {"exit", "no process control", true},
    {"_exit", "no process control", true},
    {"abort", "no process control", true},
    {"atexit", "no process control", false},
    {"dlopen", "no dynamic loading", false},
    {"dlsym", "no dynamic loading", false},
    {"mmap", "no system calls", false},
    {"_Pragma", "no pragmas", false},
    {"__pragma", "no pragmas", false},
    {"const_cast", "const_cast removes const (inputs are const)", false},
    {"remove_const", "removing const is not allowed (inputs are const)", false},
    {"remove_const_t", "removing const is not allowed (inputs are const)", false},
    {"remove_cv", "removing const is not allowed (inputs are const)", false},
    {"remove_cv_t", "removing const is not allowed (inputs are const)", false},
    {"remove_cvref", "removing const is not allowed (inputs are const)", false},
    {"remove_cvref_t", "removing const is not allowed (inputs are const)", false},
    {"offsetof", "reaching argument fields by offset is not allowed", false},
    {"__builtin_offsetof", "reaching argument fields by offset is not allowed", false},
    {"__has_include", "no probing of files (an LLM candidate sees only the headers kevo hands it)", false},
    {"__has_include_next", "no probing of files (an LLM candidate sees only the headers kevo hands it)", false},
    {"__cvta_global_to_generic", "no pointer made from an integer address", false},
    {"__cvta_constant_to_generic", "no pointer made from an integer address", false},
    {"__cvta_local_to_generic", "no pointer made from an integer address", false},
    {"__cvta_grid_constant_to_generic", "no pointer made from an integer address", false},
    {"__nv_cvta_global_to_generic_impl", "no pointer made from an integer address", false},
};

static bool ck_forbidden_name(const ck *c, int i, const char **why)
{
    if (!ck_ident(c, i))
        return false;
    for (size_t k = 0; k < KV_ARRAY_LEN(ck_bans); k++) {
        if (!ck_is(c, i, ck_bans[k].name))
            continue;
        if (ck_bans[k].call_only && !ck_is(c, i + 1, "("))
            continue;
        *why = ck_bans[k].why;
        return true;
    }
    return false;
}

/* The tokens of a declaration from i to its first ; = { ( [ : is it a variable
 * (not a function), and is it constant? */
static void ck_decl_kind(const ck *c, int from, int i, bool *variable, bool *constant, bool *shared)
{
    *variable = false;
    *constant = *shared = false;
    for (int j = from; j < c->lx.ntok && j < from + CK_DECL_CAP && ck_code(c, j); j++) {
        if (ck_is(c, j, "("))
            return; /* a function */
        if (ck_is(c, j, "<") && ck_angle(c, j) > j) {
            j = ck_angle(c, j);
            continue;
        }
        if (ck_is(c, j, ";") || ck_is(c, j, "=") || ck_is(c, j, "{") || ck_is(c, j, "[")) {
            *variable = j > i;
            return;
        }
        *constant |= ck_among(c, j, (const char *const[]){"const", "constexpr", "__constant__", NULL});
        *shared |= ck_is(c, j, "__shared__");
    }
}

static bool ck_tokens(ck *c)
{
    const char *why;
    char name[64];
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind == KEVO_TK_IDENT && ck_forbidden_name(c, i, &why)) {
            ck_text(c, i, name, sizeof name);
            return ck_reject(c, t->line, "'%s' is not allowed (%s)", name, why);
        }
        if (t->kind == KEVO_TK_IDENT && t->len > 4 && ck_is(c, i + 1, "(")) {
            const char *p = c->lx.text + t->off;
            bool rt = t->len > 4 && !memcmp(p, "cuda", 4) && p[4] >= 'A' && p[4] <= 'Z';
            bool drv = t->len > 2 && !memcmp(p, "cu", 2) && p[2] >= 'A' && p[2] <= 'Z';
            bool device_api = ck_among(c, i, (const char *const[]){"cudaGridDependencySynchronize",
                                                                   "cudaTriggerProgrammaticLaunchCompletion", NULL});
            if ((rt || drv) && !device_api && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
                ck_text(c, i, name, sizeof name);
                return ck_reject(c, t->line, "'%s' is a CUDA %s API call (device code only)", name,
                                 rt ? "runtime" : "driver");
            }
        }
        if (ck_is(c, i, "__host__")) {
            bool device = false;
            for (int j = i - 4; j <= i + 4; j++) {
                if (j == i || j < 0 || j >= c->lx.ntok || c->lx.tok[j].dir != t->dir)
                    continue;
                if (ck_is(c, j, ";") || ck_is(c, j, "{") || ck_is(c, j, "}") || ck_is(c, j, "(")) {
                    if (j > i)
                        break;
                    continue;
                }
                device |= ck_is(c, j, "__device__");
            }
            if (!device)
                return ck_reject(c, t->line, "'__host__' function (device code only; __host__ __device__ helpers "
                                             "are fine)");
        }
        if (t->dir >= 0)
            continue;
        if (ck_is(c, i, "main") && ck_is(c, i + 1, "(") && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->"))
            return ck_reject(c, t->line, "'main' (host code is not allowed)");
        if (ck_is(c, i, "<<") && ck_is(c, i + 1, "<") && c->lx.tok[i + 1].off == t->off + 2)
            return ck_reject(c, t->line, "'<<<' kernel launch from device code");
        if (ck_is(c, i, "__device__") && c->fn_of[i] < 0) {
            bool variable, constant, shared;
            ck_decl_kind(c, ck_decl_start(c, i), i, &variable, &constant, &shared);
            if (variable && !constant && !shared)
                return ck_reject(c, t->line, "mutable __device__ variable (state kept between launches; use the "
                                             "workspace)");
        }
        if (ck_is(c, i, "static") && c->fn_of[i] >= 0 && i > c->fn[c->fn_of[i]].lb) {
            bool variable, constant, shared;
            ck_decl_kind(c, i, i, &variable, &constant, &shared);
            if (variable && !constant && !shared)
                return ck_reject(c, t->line, "function-local 'static' variable (state kept between launches)");
        }
    }
    return true;
}

/* ------------------------------------------------------------ inline PTX */

typedef struct ck_ptx {
    bool stores, loads;
    uint64_t store_ops, load_ops; /* bit k: %k inside the address brackets; bit 63: unknown, all */
} ck_ptx;

/* %k numbers inside the n-th [...] of s (from the opcode on) into *ops. */
static void ck_ptx_brackets(const char *s, int nth, uint64_t *ops)
{
    int seen = 0;
    for (const char *p = s; *p; p++) {
        if (*p != '[')
            continue;
        const char *e = strchr(p, ']');
        if (!e)
            break;
        if (seen++ == nth) {
            bool any = false;
            for (const char *q = p; q < e; q++) {
                if (*q != '%')
                    continue;
                while (q < e && *q == '%')
                    q++;
                if (q < e && *q >= '0' && *q <= '9') {
                    int k = 0;
                    while (q < e && *q >= '0' && *q <= '9' && k < 1000)
                        k = k * 10 + (*q++ - '0');
                    *ops |= k < 63 ? (1ull << k) : (1ull << 63);
                    any = true;
                } else if (q < e && *q == '[') {
                    *ops |= 1ull << 63; /* a named operand */
                    any = true;
                }
            }
            (void)any;
            return;
        }
        p = e;
    }
}

static bool ck_space_is(const char *part, const char *space)
{
    return strcmp(part, space) == 0 || (strncmp(part, space, strlen(space)) == 0 && part[strlen(space)] == ':');
}

/* Judge PTX text; fills info (may be NULL).  false after a rejection. */
static bool ck_ptx_text(ck *c, const char *text, int line, ck_ptx *info)
{
    /* time and counter special registers, anywhere */
    for (const char *p = text; *p; p++) {
        if (*p != '%')
            continue;
        const char *q = p;
        while (*q == '%')
            q++;
        if (!strncmp(q, "clock", 5) || !strncmp(q, "globaltimer", 11) ||
            (q[0] == 'p' && q[1] == 'm' && q[2] >= '0' && q[2] <= '9'))
            return ck_reject(c, line, "inline PTX reads the time or a performance counter ('%%%.16s')", q);
    }
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    if (!buf)
        return ck_reject(c, line, "out of memory checking inline PTX");
    memcpy(buf, text, n + 1);
    bool ok = true;
    char *save = NULL;
    for (char *st = strtok_r(buf, ";\n", &save); st && ok; st = strtok_r(NULL, ";\n", &save)) {
        while (*st == ' ' || *st == '\t' || *st == '\r' || *st == '{' || *st == '}')
            st++;
        /* labels and guards: "L1:", "@p", "@!p" */
        char *colon = strchr(st, ':');
        if (colon && colon[1] != ':') {
            bool label = colon > st;
            for (char *q = st; q < colon; q++)
                label &= (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
                         *q == '_' || *q == '$';
            if (label) {
                st = colon + 1;
                while (*st == ' ' || *st == '\t')
                    st++;
            }
        }
        if (*st == '@') {
            while (*st && *st != ' ' && *st != '\t')
                st++;
            while (*st == ' ' || *st == '\t')
                st++;
        }
        char op[96];
        size_t k = 0;
        while (st[k] && st[k] != ' ' && st[k] != '\t' && st[k] != '\r' && k < sizeof op - 1) {
            op[k] = st[k];
            k++;
        }
        op[k] = '\0';
        if (!op[0])
            continue;
        const char *rest = st + k;
        char parts[12][32];
        int np = 0;
        for (char *q = op; *q && np < 12;) {
            size_t m = 0;
            while (q[m] && q[m] != '.')
                m++;
            snprintf(parts[np++], sizeof parts[0], "%.*s", (int)(m < 31 ? m : 31), q);
            q += m;
            if (*q == '.')
                q++;
        }
        bool shared = false, global = false, other_space = false;
        for (int j = 1; j < np; j++) {
            shared |= ck_space_is(parts[j], "shared");
            global |= ck_space_is(parts[j], "global");
            other_space |= ck_space_is(parts[j], "local") || ck_space_is(parts[j], "param") ||
                           ck_space_is(parts[j], "const");
        }
        /* a memory instruction's address is a register or a symbol, never a number: [0x7f0000000000] reaches
         * whatever lies there (another buffer, the reference), whatever the pointers kevo passes */
        static const char *const mem_ops[] = {"ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu",
                                              "mbarrier", "cvta", "applypriority", "createpolicy", "isspacep",
                                              "ldmatrix", "stmatrix", "suld", "sust", "sured", "tex", "tld4",
                                              "discard", "multimem", "tensormap", "cp.async", NULL};
        bool mem = false;
        for (int j = 0; mem_ops[j] && !mem; j++)
            mem = !strcmp(parts[0], mem_ops[j]);
        for (const char *q = rest; mem && ok && *q; q++) {
            if (*q != '[')
                continue;
            const char *d = q + 1;
            while (*d == ' ' || *d == '\t')
                d++;
            if (*d == '-' || *d == '+')
                d++;
            if (*d >= '0' && *d <= '9')
                ok = ck_reject(c, line, "inline PTX '%s' addresses a constant address ('[%.20s'): memory is "
                                        "reached only through the pointers kevo passes", op, q + 1);
        }
        if (ok && mem && !strcmp(parts[0], "cvta")) { /* cvta.to.global %0, 4096: an address from a number */
            const char *comma = strrchr(rest, ',');
            const char *d = comma ? comma + 1 : "";
            while (*d == ' ' || *d == '\t')
                d++;
            if (*d >= '0' && *d <= '9')
                ok = ck_reject(c, line, "inline PTX '%s' makes an address from a number", op);
        }
        if (!ok)
            continue;
        if (op[0] == '.') {
            if (!strcmp(parts[1], "global") || !strcmp(parts[1], "extern") || !strcmp(parts[1], "func") ||
                !strcmp(parts[1], "entry") || !strcmp(parts[1], "visible") || !strcmp(parts[1], "weak"))
                ok = ck_reject(c, line, "inline PTX declares '%s' (global state or functions)", op);
            continue;
        }
        if (!strcmp(parts[0], "st")) {
            if (global) {
                if (info) {
                    info->stores = true;
                    ck_ptx_brackets(rest, 0, &info->store_ops);
                }
            } else if (!shared && !other_space) {
                ok = ck_reject(c, line, "inline PTX '%s' stores through a generic address (give a state space: "
                                        "st.global for results, st.shared)", op);
            }
        } else if (!strcmp(parts[0], "red") || !strcmp(parts[0], "atom")) {
            if (!shared)
                ok = ck_reject(c, line, "inline PTX '%s': global or generic atomics in PTX are not allowed (use "
                                        "atomicAdd or cuda::atomic_ref on the workspace)", op);
        } else if (!strcmp(parts[0], "cp") && np > 1 && !strcmp(parts[1], "reduce")) {
            int j = 2;
            while (j < np && (!strcmp(parts[j], "async") || !strcmp(parts[j], "bulk") || !strcmp(parts[j], "tensor") ||
                              (parts[j][0] >= '1' && parts[j][0] <= '5' && parts[j][1] == 'd')))
                j++;
            if (j < np && ck_space_is(parts[j], "global"))
                ok = ck_reject(c, line, "inline PTX '%s' reduces into global memory (reads what is there)", op);
        } else if (!strcmp(parts[0], "cp") && np > 2 && !strcmp(parts[1], "async") && !strcmp(parts[2], "bulk")) {
            int j = 3;
            bool tensor = false, prefetch = false;
            while (j < np && (!strcmp(parts[j], "tensor") || !strcmp(parts[j], "prefetch") ||
                              (parts[j][0] >= '1' && parts[j][0] <= '5' && parts[j][1] == 'd'))) {
                tensor |= !strcmp(parts[j], "tensor");
                prefetch |= !strcmp(parts[j], "prefetch");
                j++;
            }
            if (!prefetch && j < np && ck_space_is(parts[j], "global")) {
                if (info) {
                    info->stores = true;
                    ck_ptx_brackets(rest, 0, &info->store_ops);
                }
            } else if (!prefetch && j < np && ck_space_is(parts[j], "shared")) {
                if (info) {
                    info->loads = true;
                    ck_ptx_brackets(rest, 1, &info->load_ops);
                }
            } else if (!prefetch && strcmp(parts[np - 1], "commit_group") && strcmp(parts[3], "wait_group") &&
                       strcmp(parts[3], "commit_group")) {
                ok = ck_reject(c, line, "inline PTX '%s': a bulk copy without a known destination space", op);
            }
            (void)tensor;
        } else if (!strcmp(parts[0], "cp") && np > 1 && !strcmp(parts[1], "async")) {
            if (info && shared) {
                info->loads = true;
                ck_ptx_brackets(rest, 1, &info->load_ops);
            }
        } else if (!strcmp(parts[0], "ld") || !strcmp(parts[0], "ldu")) {
            if (!shared && !other_space && info) {
                info->loads = true;
                ck_ptx_brackets(rest, 0, &info->load_ops);
            }
        } else if (!strcmp(parts[0], "multimem") || !strcmp(parts[0], "discard") || !strcmp(parts[0], "call")) {
            ok = ck_reject(c, line, "inline PTX '%s' is not allowed", op);
        } else if (!strcmp(parts[0], "tensormap") && !shared) {
            ok = ck_reject(c, line, "inline PTX '%s' rewrites a tensor map outside shared memory", op);
        }
    }
    free(buf);
    return ok;
}

/* Every string literal (runs of adjacent ones joined), in code and in macro bodies. */
static bool ck_strings(ck *c)
{
    kv_buf b;
    kv_buf_init(&b);
    for (int i = 0; i < c->lx.ntok; i++) {
        if (c->lx.tok[i].kind != KEVO_TK_STRING)
            continue;
        int dir = c->lx.tok[i].dir;
        if (dir >= 0 && ck_among(c, dir + 1, (const char *const[]){"include", "line", "error", "warning", NULL}))
            continue;
        b.len = 0;
        if (b.data)
            b.data[0] = '\0';
        int j = i;
        while (j < c->lx.ntok && c->lx.tok[j].kind == KEVO_TK_STRING && c->lx.tok[j].dir == dir)
            kevo_lex_string(&c->lx, j++, &b);
        if (b.data && !ck_ptx_text(c, b.data, c->lx.tok[i].line, NULL)) {
            kv_buf_release(&b);
            return false;
        }
        i = j - 1;
    }
    kv_buf_release(&b);
    return true;
}

/* The text of an object-like string macro named by token i, appended. */
static void ck_macro_text(ck *c, int i, kv_buf *out)
{
    int d = c->macro_dir[c->id[i]];
    if (d < 0)
        return;
    for (int j = d + 3; j < c->lx.ntok && c->lx.tok[j].dir == d; j++)
        kevo_lex_string(&c->lx, j, out);
}

static bool ck_asms(ck *c)
{
    int cap = 0;
    kv_buf b;
    kv_buf_init(&b);
    for (int i = 0; i < c->lx.ntok; i++) {
        if (!ck_code(c, i) || !ck_among(c, i, (const char *const[]){"asm", "__asm__", "__asm", NULL}))
            continue;
        int lp = i + 1;
        while (ck_among(c, lp, (const char *const[]){"volatile", "__volatile__", "inline", "goto", NULL}))
            lp++;
        if (!ck_is(c, lp, "(") || c->match[lp] < 0)
            return ck_reject(c, ck_line(c, i), "asm without a parenthesized template");
        int rp = c->match[lp];
        if (c->nas == cap) {
            int ncap = cap ? cap * 2 : 32;
            ck_asm *a = realloc(c->as, (size_t)ncap * sizeof *a);
            if (!a) {
                kv_buf_release(&b);
                return ck_reject(c, 0, "out of memory");
            }
            c->as = a;
            cap = ncap;
        }
        ck_asm *a = &c->as[c->nas];
        memset(a, 0, sizeof *a);
        a->kw = i;
        a->lp = lp;
        a->rp = rp;
        b.len = 0;
        if (b.data)
            b.data[0] = '\0';
        int j = lp + 1;
        for (; j < rp && !ck_is(c, j, ":") && !ck_is(c, j, "::"); j++) {
            if (c->lx.tok[j].kind == KEVO_TK_STRING) {
                kevo_lex_string(&c->lx, j, &b);
            } else if (ck_ident(c, j) && c->str_macro[c->id[j]]) {
                ck_macro_text(c, j, &b);
            } else {
                char w[64];
                ck_text(c, j, w, sizeof w);
                kv_buf_release(&b);
                return ck_reject(c, ck_line(c, j), "asm template built from '%s' (only string literals and string "
                                                   "macros can be checked)", w);
            }
        }
        ck_ptx info = {0};
        if (!ck_ptx_text(c, b.data ? b.data : "", ck_line(c, i), &info)) {
            kv_buf_release(&b);
            return false;
        }
        a->stores = info.stores;
        a->loads = info.loads;
        a->store_ops = info.store_ops;
        a->load_ops = info.load_ops;
        if (a->stores && !a->store_ops)
            a->store_ops = 1ull << 63;
        if (a->loads && !a->load_ops)
            a->load_ops = 1ull << 63;
        /* operands: "c"(expr) or [name] "c"(expr); after the first colon the
         * outputs, after the second the inputs, then clobbers ("::" is two) */
        int section = 0;
        for (; j < rp && section < 3; j++) {
            if (ck_is(c, j, ":") || ck_is(c, j, "::")) {
                section += ck_is(c, j, "::") ? 2 : 1;
                continue;
            }
            if (ck_is(c, j, "(") && c->match[j] > j) {
                if (a->nops < 32 && section >= 1) {
                    a->op_lp[a->nops++] = j;
                    if (section == 1)
                        a->nout++;
                }
                j = c->match[j];
            } else if (ck_is(c, j, "[") && c->match[j] > j) {
                j = c->match[j];
            }
        }
        c->nas++;
    }
    kv_buf_release(&b);
    return true;
}

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

static const char *const ck_load_intrinsics[] = {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv", NULL};
static const char *const ck_store_intrinsics[] = {"__stcg", "__stcs", "__stwb", "__stwt", "memcpy", "memset",
                                                  "memmove", "__builtin_memcpy", "__builtin_memset", NULL};
static const char *const ck_copy_calls[] = {"memcpy", "memmove", "__builtin_memcpy", "__builtin_memmove",
                                            "__pipeline_memcpy_async", "memcpy_async", NULL};

static int ck_type_class(const ck *c, int a, int b);

static const char *const ck_builtin_types[] = {"int", "unsigned", "signed", "char", "short", "long", "float",
                                               "double", "bool", "void", "size_t", "uintptr_t", "intptr_t",
                                               "uint64_t", "int64_t", "uint32_t", "int32_t", NULL};

static const char *const ck_named_casts[] = {"static_cast", "reinterpret_cast", "dynamic_cast", "bit_cast",
                                             "__builtin_bit_cast", "const_cast", NULL};

/* A named cast of names[] at token i (static_cast<T>(x), ...): its type's
 * tokens [*ts, *te) and its operand's [*os, *oe); false when none. */
static bool ck_named_cast_at(ck *c, int i, const char *const *names, int *ts, int *te, int *os, int *oe)
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

static int ck_unary_end(const ck *c, int i, int depth);
static bool ck_unary(const ck *c, int i);

/* The arguments of load intrinsics, and the expressions that are dereferenced. */
static void ck_mark_loads(ck *c)
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
static bool ck_unary(const ck *c, int i)
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
static bool ck_deref(const ck *c, int r, int t)
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
static int ck_deref_count(const ck *c, int r, int t)
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
static int ck_chain_root(const ck *c, int t)
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

typedef struct ck_occ {
    bool in_ptr, in_any, out_ptr, oval; /* global analysis */
    bool inc;                           /* a holder of input pointers (an array or pointer to them) */
    bool p_ptr, p_val;                  /* probe analysis */
    int origin;                         /* of in_ptr: input index, -1: the argument struct or unknown */
    int any_origin;                     /* of in_any */
    int at;                             /* token of the first in_ptr occurrence */
} ck_occ;

enum { CK_GLOBAL_MODE = 0, CK_PROBE_MODE = 1 };

static void ck_scan(const ck *c, const ck_taint *tt, int mode, int fn, int a, int b, ck_occ *o);

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

static void ck_scan(const ck *c, const ck_taint *tt, int mode, int fn, int a, int b, ck_occ *o)
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
static int ck_expr_end(const ck *c, int i)
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
static int ck_expr_start(const ck *c, int i)
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

static bool ck_assign_op(const ck *c, int i)
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
static bool ck_declarator(const ck *c, int r)
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
static int ck_lhs_root(const ck *c, int op, bool *through, int *member)
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
static bool ck_first_arg_is(const ck *c, int lp, const char *space)
{
    int st[CK_MAX_PARAMS], en[CK_MAX_PARAMS];
    int na = ck_args(c, lp, c->match[lp], st, en, CK_MAX_PARAMS);
    for (int j = na > 0 ? st[0] : 0; na > 0 && j < en[0]; j++)
        if (ck_is(c, j, space))
            return true;
    return false;
}

static bool ck_bulk_call(const ck *c, int i)
{
    return ck_is(c, i, "cp_async_bulk_tensor") || ck_is(c, i, "cp_async_bulk");
}

/* The first asm statement whose keyword is at or after token a (they are in token order). */
static int ck_first_asm(const ck *c, int a)
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
static int ck_first_range(const ck_range *r, int n, int a)
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
static bool ck_propagate(ck *c, ck_taint *tt, int mode, int fn_only, int a, int b, bool *oom)
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

/* What reaches the sinks of [a, b) (function fn_only when >= 0). */
typedef struct ck_hits {
    int store, load, cast, cond_any, cond_val; /* token of the first hit, -1 */
    int origin;                                 /* input of the store, cast or escape hit (global analysis) */
    int escape; /* an input pointer's value stored to memory the check does not follow */
} ck_hits;

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

static void ck_sinks(ck *c, const ck_taint *tt, int mode, int fn_only, int a, int b, ck_hits *h)
{
    for (int i = a; i < b && i < c->lx.ntok; i++) {
        if (!ck_code(c, i))
            continue;
        int fn = c->fn_of[i];
        if (fn_only >= 0 && fn != fn_only)
            continue;
        int lp = ck_call_lp(c, i);
        if (lp > 0 && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
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
            continue;
        }
        /* cuda::atomic_ref<T> x(*p): a reference that can store */
        if (ck_is(c, i, "atomic_ref")) {
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
            continue;
        }
        /* an input pointer stored through a dereference, but into a local array
         * (whose contents the analysis follows): it escapes to memory another
         * alias can read back */
        if (mode == CK_GLOBAL_MODE && ck_is(c, i, "=") && h->escape < 0) {
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
        /* a C++ store through a dereference of a tainted pointer */
        if (ck_assign_op(c, i) || ck_is(c, i, "++") || ck_is(c, i, "--")) {
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
        /* a probe: any read through the parameter is a load */
        if (mode == CK_PROBE_MODE && ck_ident(c, i) && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->") &&
            (ck_tget(c, tt, fn, i, NULL) & CK_PROBE) && ck_deref(c, i, i))
            ck_hit(&h->load, i);
    }
    /* inline PTX address operands */
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
    /* non-const pointer casts and conditions */
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
static bool ck_summaries(ck *c)
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

/* --------------------------------------------------------------- casts */

/* Type aliases for non-const pointers and template type parameters; unions. */
static void ck_aliases(ck *c)
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
static int ck_type_class(const ck *c, int a, int b)
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
static int ck_unary_end(const ck *c, int i, int depth)
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
static bool ck_ranges(ck *c)
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

static bool ck_addresses(ck *c)
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
