/* check_ptx.c — pass 4 of the static check (see check.c): inline PTX, in every
 * string literal and in each asm statement's template and operands. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Time and counter special registers, anywhere in text.  false after a rejection. */
static bool ck_ptx_timers(ck *c, const char *text, int line)
{
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
    return true;
}

/* One statement (from strtok_r) past its leading braces, its label and its guard. */
static char *ck_ptx_skip_prefix(char *st)
{
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
    return st;
}

/* The dot-separated parts of the opcode op into parts; returns how many. */
static int ck_ptx_parts(char *op, char parts[12][32])
{
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
    return np;
}

/* A memory instruction's address from a number.  false after a rejection. */
static bool ck_ptx_constant_address(ck *c, int line, const char *op, char parts[12][32], const char *rest)
{
    bool ok = true;
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
    return ok;
}

/* The rules of one instruction by its opcode (parts[np], operands rest); fills info
 * (may be NULL).  false after a rejection. */
static bool ck_ptx_opcode(ck *c, int line, const char *op, char parts[12][32], int np, const char *rest,
                          ck_ptx *info)
{
    bool ok = true;
    bool shared = false, global = false, other_space = false;
    for (int j = 1; j < np; j++) {
        shared |= ck_space_is(parts[j], "shared");
        global |= ck_space_is(parts[j], "global");
        other_space |= ck_space_is(parts[j], "local") || ck_space_is(parts[j], "param") ||
                       ck_space_is(parts[j], "const");
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
    return ok;
}

/* Judge one PTX statement (from strtok_r); fills info (may be NULL).  false after a rejection. */
static bool ck_ptx_statement(ck *c, char *st, int line, ck_ptx *info)
{
    st = ck_ptx_skip_prefix(st);
    char op[96];
    size_t k = 0;
    while (st[k] && st[k] != ' ' && st[k] != '\t' && st[k] != '\r' && k < sizeof op - 1) {
        op[k] = st[k];
        k++;
    }
    op[k] = '\0';
    if (!op[0])
        return true;
    const char *rest = st + k;
    char parts[12][32];
    int np = ck_ptx_parts(op, parts);
    if (!ck_ptx_constant_address(c, line, op, parts, rest))
        return false;
    if (op[0] == '.') {
        if (!strcmp(parts[1], "global") || !strcmp(parts[1], "extern") || !strcmp(parts[1], "func") ||
            !strcmp(parts[1], "entry") || !strcmp(parts[1], "visible") || !strcmp(parts[1], "weak"))
            return ck_reject(c, line, "inline PTX declares '%s' (global state or functions)", op);
        return true;
    }
    return ck_ptx_opcode(c, line, op, parts, np, rest, info);
}

/* Judge PTX text; fills info (may be NULL).  false after a rejection. */
static bool ck_ptx_text(ck *c, const char *text, int line, ck_ptx *info)
{
    if (!ck_ptx_timers(c, text, line))
        return false;
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    if (!buf)
        return ck_reject(c, line, "out of memory checking inline PTX");
    memcpy(buf, text, n + 1);
    bool ok = true;
    char *save = NULL;
    for (char *st = strtok_r(buf, ";\n", &save); st && ok; st = strtok_r(NULL, ";\n", &save))
        ok = ck_ptx_statement(c, st, line, info);
    free(buf);
    return ok;
}

/* Every string literal (runs of adjacent ones joined), in code and in macro bodies. */
bool ck_strings(ck *c)
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

bool ck_asms(ck *c)
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
