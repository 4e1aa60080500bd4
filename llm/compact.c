/* compact.c — a parent's source as a prompt shows it, compacted for the
 * parent's own params:
 *   - comments and blank lines go (kevo_prompt_source_view);
 *   - `#if`/`#ifdef`/`#ifndef` groups whose conditions the params decide
 *     keep only the branch taken, without the directive lines;
 *   - `if constexpr (cond)` statements whose condition the params decide
 *     keep only the branch taken;
 *   - each shared header (a unit after a `#line 1 "x.cuh"` marker, the way
 *     a template's space file includes it) is shown as its API: one line per
 *     declaration with its one-line doc, a run of declarations that differ
 *     only in digits folded into one.  The family's own headers (named
 *     "<family>/x.cuh" beside "<family>.cu": its producer, consumer and
 *     epilogue steps) are its code, and are shown as the source is;
 *   - include guards, and the guarded #includes of headers already in the
 *     text, go (no-ops in one text), as do the static_asserts the params
 *     decide true.
 * Edits made against what is shown apply to the "base": the same compacted
 * code with the shared headers in full.  A whole source a reply gives gets the
 * headers it uses put back in front (kevo_prompt_headers_for). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/prompt.h"
#include "llm/prompt_int.h"
#include "core/expr.h"

#define CP_MAX_UNITS 48   /* header units of one source */
#define CP_SIG_MAX 220    /* bytes of one declaration line in a summary */
#define CP_DOC_MAX 110    /* bytes of its doc */
#define CP_MAX_DEPTH 64   /* nested #if groups decided */

/* One unit of a source: the text before the first `#line 1 "..."` marker,
 * then one per marker (name: the marker's file, "" for the first). */
typedef struct cp_unit {
    char name[64];
    const char *text; /* into the source, from the marker line */
    size_t len;
} cp_unit;

static bool cp_is_header(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && strcmp(name + n - 4, ".cuh") == 0) || (n > 2 && strcmp(name + n - 2, ".h") == 0);
}

/* The family's own folder, "<family>/", from the last unit that is not a
 * header ("lce_ws.cu": "lce_ws/"); "" when there is none. */
static void cp_own_prefix(const cp_unit *u, int n, char *prefix, size_t cap)
{
    prefix[0] = '\0';
    for (int i = n - 1; i >= 0; i--) {
        if (!u[i].name[0] || cp_is_header(u[i].name))
            continue;
        const char *dot = strrchr(u[i].name, '.');
        size_t k = dot ? (size_t)(dot - u[i].name) : strlen(u[i].name);
        if (k > 0 && k + 2 <= cap)
            snprintf(prefix, cap, "%.*s/", (int)k, u[i].name);
        return;
    }
}

/* A header shown as its API: a shared one, not one of the family's own. */
static bool cp_is_api(const char *name, const char *own)
{
    return cp_is_header(name) && !(own[0] && strncmp(name, own, strlen(own)) == 0);
}

/* Split src at its `#line 1 "name"` lines (at most CP_MAX_UNITS units;
 * later markers stay inside the last unit). */
static int cp_units(const char *src, cp_unit *u)
{
    int n = 0;
    u[0] = (cp_unit){.text = src};
    for (const char *p = src; *p;) {
        if (strncmp(p, "#line 1 \"", 9) == 0 && n + 1 < CP_MAX_UNITS) {
            const char *q = strchr(p + 9, '"');
            const char *nl = strchr(p, '\n');
            if (q && (!nl || q < nl) && (size_t)(q - p - 9) < sizeof u[0].name) {
                if (p > u[n].text || n > 0)
                    n++;
                u[n] = (cp_unit){.text = p};
                snprintf(u[n].name, sizeof u[n].name, "%.*s", (int)(q - p - 9), p + 9);
            }
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    for (int i = 0; i <= n; i++)
        u[i].len = (i < n ? (size_t)(u[i + 1].text - u[i].text) : strlen(u[i].text));
    return n + 1;
}

/* The params "A=1 B=2" as symbols (words that are not NAME=integer are skipped). */
static void cp_syms(const char *params, kevo_syms *syms)
{
    kevo_syms_init(syms);
    for (const char *p = params ? params : ""; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        char name[KEVO_SYM_NAME_MAX];
        size_t k = 0;
        while ((isalnum((unsigned char)*p) || *p == '_') && k + 1 < sizeof name)
            name[k++] = *p++;
        name[k] = '\0';
        if (*p == '=' && k > 0) {
            char *end = NULL;
            long long v = strtoll(p + 1, &end, 10);
            if (end != p + 1)
                kevo_syms_set(syms, name, v);
            p = end != p + 1 ? end : p + 1;
        }
        while (*p && *p != ' ' && *p != ',')
            p++;
    }
}

/* The value of a condition over the params: 1 or 0, or -1 when they do not
 * decide it (another name, or a form the expression grammar lacks). */
static int cp_decide(const char *cond, size_t n, const kevo_syms *syms)
{
    char text[512];
    if (n == 0 || n >= sizeof text || memchr(cond, '#', n))
        return -1;
    memcpy(text, cond, n);
    text[n] = '\0';
    kevo_expr *e = NULL;
    kevo_err err;
    int64_t v = 0;
    int r = -1;
    if (kevo_expr_parse(text, &e, &err) == KEVO_OK && kevo_expr_eval(e, syms, &v, &err) == KEVO_OK)
        r = v != 0;
    kevo_expr_free(e);
    return r;
}

/* ---- #if groups ---- */

/* A directive line: its keyword ("if", "ifdef", "elif", ...) and the rest. */
static bool cp_directive(const char *line, size_t n, char *kw, size_t kn, const char **rest, size_t *rn)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == n || line[i] != '#')
        return false;
    i++;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t k = 0;
    while (i < n && isalpha((unsigned char)line[i]) && k + 1 < kn)
        kw[k++] = line[i++];
    kw[k] = '\0';
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    *rest = line + i;
    *rn = n - i;
    while (*rn > 0 && ((*rest)[*rn - 1] == ' ' || (*rest)[*rn - 1] == '\r'))
        (*rn)--;
    return true;
}

/* One open #if group: decided (its directive lines dropped, one branch
 * kept) or not (kept as it is). */
typedef struct cp_group {
    bool decided, taken, live; /* live: the current branch is kept */
    bool outer_live;
} cp_group;

/* The condition of #if/#elif/#ifdef/#ifndef line: 1, 0 or -1. */
static int cp_cond(const char *kw, const char *rest, size_t rn, const kevo_syms *syms)
{
    if (!strcmp(kw, "ifdef") || !strcmp(kw, "ifndef")) {
        char name[KEVO_SYM_NAME_MAX];
        int64_t v;
        if (rn == 0 || rn >= sizeof name)
            return -1;
        memcpy(name, rest, rn);
        name[rn] = '\0';
        if (!kevo_syms_get(syms, name, &v))
            return -1; /* a name the params do not define may be defined elsewhere */
        return !strcmp(kw, "ifdef");
    }
    return cp_decide(rest, rn, syms);
}

/* text without the #if branches the params rule out. */
static void cp_pp(const char *text, size_t len, const kevo_syms *syms, kv_buf *out)
{
    cp_group g[CP_MAX_DEPTH];
    int depth = 0, undecided_below = 0; /* groups past CP_MAX_DEPTH are kept as they are */
    for (size_t at = 0; at < len;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + (nl != NULL);
        bool live = depth == 0 || g[depth - 1].live;
        char kw[16];
        const char *rest;
        size_t rn;
        bool dir = cp_directive(line, n, kw, sizeof kw, &rest, &rn);
        if (dir && (!strcmp(kw, "if") || !strcmp(kw, "ifdef") || !strcmp(kw, "ifndef"))) {
            if (depth == CP_MAX_DEPTH) {
                undecided_below++;
            } else {
                int c = live ? cp_cond(kw, rest, rn, syms) : -1;
                g[depth] = (cp_group){.decided = c >= 0, .taken = c == 1, .live = live && c != 0, .outer_live = live};
                depth++;
                if (c >= 0)
                    continue;
            }
        } else if (dir && (!strcmp(kw, "elif") || !strcmp(kw, "else")) && depth > 0 && !undecided_below) {
            cp_group *t = &g[depth - 1];
            if (t->decided) {
                int c = !strcmp(kw, "else") ? 1 : t->taken ? 0 : cp_cond("if", rest, rn, syms);
                if (c < 0) { /* undecidable #elif after branches ruled out: keep it as an #if of its own */
                    t->decided = false;
                    t->live = t->outer_live;
                    if (t->live)
                        kv_buf_printf(out, "#if %.*s\n", (int)rn, rest);
                    continue;
                }
                t->live = t->outer_live && !t->taken && c == 1;
                t->taken |= c == 1;
                continue;
            }
            t->live = t->outer_live;
        } else if (dir && !strcmp(kw, "endif") && (depth > 0 || undecided_below)) {
            if (undecided_below) {
                undecided_below--;
            } else {
                depth--;
                if (g[depth].decided)
                    continue;
                live = g[depth].outer_live;
            }
        }
        if (live)
            kv_buf_printf(out, "%.*s\n", (int)n, line);
    }
}

/* ---- if constexpr ---- */

/* The end of a balanced (...) or {...} starting at s[i] (the opener), or 0. */
static size_t cp_match(const char *s, size_t len, size_t i)
{
    char open = s[i], close = open == '(' ? ')' : '}';
    int d = 0;
    for (size_t k = i; k < len; k++) {
        if (s[k] == '"' || s[k] == '\'') { /* skip a literal */
            char q = s[k];
            for (k++; k < len && s[k] != q; k++)
                if (s[k] == '\\')
                    k++;
            continue;
        }
        if (s[k] == open)
            d++;
        else if (s[k] == close && --d == 0)
            return k + 1;
    }
    return 0;
}

static size_t cp_skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && isspace((unsigned char)s[i]))
        i++;
    return i;
}

/* The end of the statement at s[i]: a {...} block, or up to its ';'. */
static size_t cp_stmt_end(const char *s, size_t len, size_t i)
{
    if (i < len && s[i] == '{')
        return cp_match(s, len, i);
    for (size_t k = i; k < len; k++) {
        if (s[k] == '(' || s[k] == '{') {
            size_t e = cp_match(s, len, k);
            if (!e)
                return 0;
            k = e - 1;
        } else if (s[k] == ';') {
            return k + 1;
        }
    }
    return 0;
}

static bool cp_word_at(const char *s, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    return i + n <= len && !memcmp(s + i, w, n) && (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) &&
           (i + n == len || !(isalnum((unsigned char)s[i + n]) || s[i + n] == '_'));
}

/* text with each decided `if constexpr` replaced by the branch taken (a
 * block, as a block; nothing when none is). */
static void cp_constexpr(const char *s, size_t len, const kevo_syms *syms, kv_buf *out)
{
    size_t done = 0;
    for (size_t i = 0; i < len; i++) {
        if (!cp_word_at(s, len, i, "if"))
            continue;
        size_t c = cp_skip_ws(s, len, i + 2);
        if (!cp_word_at(s, len, c, "constexpr"))
            continue;
        size_t po = cp_skip_ws(s, len, c + 9);
        size_t pe = po < len && s[po] == '(' ? cp_match(s, len, po) : 0;
        int v = pe ? cp_decide(s + po + 1, pe - po - 2, syms) : -1;
        size_t b1 = pe ? cp_skip_ws(s, len, pe) : 0;
        size_t e1 = v >= 0 ? cp_stmt_end(s, len, b1) : 0;
        if (!e1)
            continue;
        size_t el = cp_skip_ws(s, len, e1), b2 = 0, e2 = 0;
        if (cp_word_at(s, len, el, "else")) {
            b2 = cp_skip_ws(s, len, el + 4);
            e2 = cp_stmt_end(s, len, b2);
            if (!e2)
                continue;
        }
        kv_buf_append(out, s + done, i - done);
        kv_buf kept;
        kv_buf_init(&kept);
        if (v == 1)
            cp_constexpr(s + b1, e1 - b1, syms, &kept);
        else if (e2)
            cp_constexpr(s + b2, e2 - b2, syms, &kept);
        if (kept.len)
            kv_buf_append(out, kept.data, kept.len);
        else
            kv_buf_puts(out, ";");
        kv_buf_release(&kept);
        done = e2 ? e2 : e1;
        i = done - 1;
    }
    kv_buf_append(out, s + done, len - done);
}

/* ---- a header's API ---- */

/* One declaration of a header. */
typedef struct cp_decl {
    char sig[CP_SIG_MAX];
    char doc[CP_DOC_MAX];
    char name[64];
    char skel[CP_SIG_MAX]; /* sig with digits dropped: a run of these folds */
} cp_decl;

/* The declared name of a signature: the word before its first '(' (a
 * function), or after struct/class/union, or before '=' (a constant). */
static void cp_decl_name(const char *sig, char *out, size_t n)
{
    const char *p = strchr(sig, '(');
    const char *st = strstr(sig, "struct ");
    const char *eq = strchr(sig, '=');
    const char *end = NULL, *beg = NULL;
    if (st && (!p || st < p)) {
        beg = st + 7;
        end = beg;
        while (isalnum((unsigned char)*end) || *end == '_')
            end++;
    } else {
        end = p ? p : eq ? eq : sig + strlen(sig);
        while (end > sig && (end[-1] == ' ' || end[-1] == ';')) /* `typedef __half elem_t;` names elem_t */
            end--;
        beg = end;
        while (beg > sig && (isalnum((unsigned char)beg[-1]) || beg[-1] == '_'))
            beg--;
    }
    snprintf(out, n, "%.*s", (int)(end - beg), beg);
}

/* Text collapsed to one line of single spaces into out[n]. */
static void cp_collapse(const char *s, size_t len, char *out, size_t n)
{
    size_t k = 0;
    bool sp = true;
    for (size_t i = 0; i < len && k + 4 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c)) {
            if (!sp)
                out[k++] = ' ';
            sp = true;
        } else if (c >= 0x20 && c < 0x7f) {
            out[k++] = (char)c;
            sp = false;
        }
    }
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
}

/* The doc of a declaration: the first sentence of the comment lines right
 * above it (s[0..at)), or "". */
static void cp_doc(const char *s, size_t at, char *out, size_t n)
{
    out[0] = '\0';
    size_t e = at;
    while (e > 0 && s[e - 1] != '\n')
        e--;
    /* walk up over comment lines (line comments, block comment lines) */
    size_t first = e;
    for (size_t ls = e; ls > 0;) {
        size_t pe = ls - 1, ps = pe;
        while (ps > 0 && s[ps - 1] != '\n')
            ps--;
        size_t q = ps;
        while (q < pe && (s[q] == ' ' || s[q] == '\t'))
            q++;
        if (q + 1 < pe && ((s[q] == '/' && (s[q + 1] == '/' || s[q + 1] == '*')) || (s[q] == '*' && s[q + 1] != '/'))) {
            first = ps;
            ls = ps;
        } else {
            break;
        }
    }
    if (first == e)
        return;
    char buf[1024];
    size_t k = 0;
    for (size_t i = first; i < e && k + 1 < sizeof buf; i++) {
        if ((s[i] == '/' && i + 1 < e && (s[i + 1] == '/' || s[i + 1] == '*')) || (s[i] == '*' && (i + 1 >= e || s[i + 1] != ')'))) {
            if (s[i] == '/')
                i++;
            buf[k++] = ' ';
            continue;
        }
        buf[k++] = s[i];
    }
    cp_collapse(buf, k, out, n);
    char *dot = strstr(out, ". ");
    if (dot)
        dot[1] = '\0';
}

/* The declarations at depth 0 of a header unit (comments skipped, bodies
 * skipped, include guards and #line left out) into d[max]; returns how many. */
static int cp_decls(const char *s, size_t len, cp_decl *d, int max)
{
    int n = 0, depth = 0;
    size_t start = (size_t)-1;
    for (size_t i = 0; i < len && n < max; i++) {
        char c = s[i];
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n')
                i++;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            const char *e = strstr(s + i + 2, "*/");
            i = e && (size_t)(e - s) < len ? (size_t)(e - s) + 1 : len;
            continue;
        }
        if (c == '#' && depth == 0 && start == (size_t)-1) { /* a directive: a #define is API */
            size_t e = i;
            while (e < len && s[e] != '\n')
                e++;
            if (cp_word_at(s, len, cp_skip_ws(s, len, i + 1), "define")) {
                char line[CP_SIG_MAX];
                cp_collapse(s + i, e - i, line, sizeof line);
                char nm[64];
                sscanf(line, "#define %63[A-Za-z0-9_]", nm);
                size_t nl = strlen(nm);
                if (!(nl > 4 && (!strcmp(nm + nl - 4, "_CUH") || !strcmp(nm + nl - 2, "_H")))) {
                    snprintf(d[n].sig, sizeof d[n].sig, "%s", line);
                    snprintf(d[n].name, sizeof d[n].name, "%s", nm);
                    cp_doc(s, i, d[n].doc, sizeof d[n].doc);
                    n++;
                }
            }
            i = e;
            continue;
        }
        if (c == '"' || c == '\'') {
            for (i++; i < len && s[i] != c; i++)
                if (s[i] == '\\')
                    i++;
            continue;
        }
        if (depth == 0 && start == (size_t)-1 && !isspace((unsigned char)c))
            start = i;
        if (c == '{' && depth++ == 0 && start != (size_t)-1) {
            cp_collapse(s + start, i - start, d[n].sig, sizeof d[n].sig);
            cp_decl_name(d[n].sig, d[n].name, sizeof d[n].name);
            cp_doc(s, start, d[n].doc, sizeof d[n].doc);
            n += d[n].sig[0] != '\0' && strncmp(d[n].sig, "namespace", 9) != 0;
        } else if (c == '}' && depth > 0 && --depth == 0) {
            start = (size_t)-1;
            size_t k = cp_skip_ws(s, len, i + 1);
            if (k < len && s[k] == ';')
                i = k;
        } else if (c == ';' && depth == 0 && start != (size_t)-1) {
            cp_collapse(s + start, i + 1 - start, d[n].sig, sizeof d[n].sig);
            cp_decl_name(d[n].sig, d[n].name, sizeof d[n].name);
            cp_doc(s, start, d[n].doc, sizeof d[n].doc);
            n += d[n].sig[0] != '\0';
            start = (size_t)-1;
        }
    }
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        for (const char *p = d[i].sig; *p && k + 1 < sizeof d[i].skel; p++)
            if (!isdigit((unsigned char)*p))
                d[i].skel[k++] = *p;
        d[i].skel[k] = '\0';
    }
    return n;
}

#define CP_MAX_DECLS 512

/* A header unit as its API. */
static void cp_summary(const cp_unit *u, kv_buf *out)
{
    cp_decl *d = calloc(CP_MAX_DECLS, sizeof *d);
    if (!d)
        return;
    int n = cp_decls(u->text, u->len, d, CP_MAX_DECLS);
    kv_buf_printf(out, "// ---- %s: its API only; kevo puts the whole header in front of your source ----\n",
                  u->name);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && !strcmp(d[j].skel, d[i].skel))
            j++;
        if (d[i].doc[0])
            kv_buf_printf(out, "// %s\n", d[i].doc);
        kv_buf_printf(out, "%s%s\n", d[i].sig, d[i].sig[strlen(d[i].sig) - 1] == ';' ? "" : ";");
        if (j > i + 1) {
            kv_buf_puts(out, "//   and the same for:");
            for (int k = i + 1; k < j; k++)
                kv_buf_printf(out, " %s", d[k].name);
            kv_buf_puts(out, "\n");
        }
        i = j;
    }
    free(d);
}

/* ---- the whole ---- */

/* Each line's leading spaces halved (4-space indentation shown as 2): a third
 * of the code's bytes in a deeply nested kernel is indentation, and C++ reads
 * the same either way.  Tabs and the rest of each line are kept. */
static void cp_reindent(kv_buf *b)
{
    size_t w = 0;
    for (size_t r = 0; r < b->len;) {
        size_t n = 0;
        while (r + n < b->len && b->data[r + n] == ' ')
            n++;
        memset(b->data + w, ' ', (n + 1) / 2);
        w += (n + 1) / 2;
        r += n;
        while (r < b->len && b->data[r] != '\n')
            b->data[w++] = b->data[r++];
        if (r < b->len)
            b->data[w++] = b->data[r++];
    }
    b->len = w;
    if (b->data)
        b->data[w] = '\0';
}

/* ---- include guards and static_asserts ---- */

/* The line at *at in s (advanced past it), without its newline: n bytes. */
static const char *cp_line(const char *s, size_t len, size_t *at, size_t *n)
{
    const char *line = s + *at;
    const char *nl = memchr(line, '\n', len - *at);
    *n = nl ? (size_t)(nl - line) : len - *at;
    *at += *n + (nl != NULL);
    return line;
}

/* A header's own include guard in its comment-free view (after its #line
 * marker: `#ifndef G`, `#define G`, ..., a last `#endif` that closes that
 * group): the three lines cut out in place and G copied to name (true).
 * One text holds each header once, so the guard is a no-op there. */
static bool cp_strip_guard(char *v, char *name, size_t cap)
{
    size_t len = strlen(v), at = 0, n, n1, n2;
    const char *l = cp_line(v, len, &at, &n);
    if (n >= 9 && !strncmp(l, "#line 1 \"", 9))
        l = cp_line(v, len, &at, &n1);
    else
        n1 = n;
    const char *l2 = cp_line(v, len, &at, &n2);
    if (n1 <= 8 || strncmp(l, "#ifndef ", 8) || n2 != n1 || strncmp(l2, "#define ", 8) ||
        memcmp(l + 8, l2 + 8, n1 - 8) || n1 - 8 >= cap || memchr(l + 8, ' ', n1 - 8))
        return false;
    char *endif = NULL;
    for (int depth = 1; at < len && depth > 0;) { /* the group's #endif */
        char *line = v + at, kw[16];
        const char *rest;
        size_t rn;
        cp_line(v, len, &at, &n);
        if (!cp_directive(line, n, kw, sizeof kw, &rest, &rn))
            continue;
        depth += !strcmp(kw, "if") || !strcmp(kw, "ifdef") || !strcmp(kw, "ifndef");
        if (!strcmp(kw, "endif") && --depth == 0)
            endif = line;
    }
    for (size_t k = at; k < len; k++) /* nothing after it */
        if (!isspace((unsigned char)v[k]))
            return false;
    if (!endif)
        return false;
    memcpy(name, l + 8, n1 - 8);
    name[n1 - 8] = '\0';
    *endif = '\0'; /* the #endif and what follows (blanks) */
    char *head = v + (l - v), *body = v + (l2 - v) + n2 + (l2[n2] == '\n');
    memmove(head, body, strlen(body) + 1);
    return true;
}

/* A unit's text without comments and blank lines (kevo_prompt_source_view);
 * NULL when memory runs out.  Caller frees. */
static char *cp_unit_view(const cp_unit *u)
{
    char *raw = malloc(u->len + 1);
    if (!raw)
        return NULL;
    memcpy(raw, u->text, u->len);
    raw[u->len] = '\0';
    char *view = kevo_prompt_source_view(raw);
    free(raw);
    return view;
}

/* A header unit's include guard, if it has one, blanked in its view and
 * set in syms: `#ifndef G` is false in the units after it. */
static void cp_note_guard(const cp_unit *u, char *view, kevo_syms *syms)
{
    char guard[KEVO_SYM_NAME_MAX];
    if (view && cp_is_header(u->name) && cp_strip_guard(view, guard, sizeof guard))
        kevo_syms_set(syms, guard, 1);
}

/* text without the `static_assert(cond, "...");` statements whose cond
 * the params decide true: they say nothing about this parent. */
static void cp_asserts(const char *s, size_t len, const kevo_syms *syms, kv_buf *out)
{
    size_t done = 0;
    for (size_t i = 0; i < len; i++) {
        if (!cp_word_at(s, len, i, "static_assert"))
            continue;
        size_t po = cp_skip_ws(s, len, i + 13), pe = po < len && s[po] == '(' ? cp_match(s, len, po) : 0;
        size_t comma = 0;
        for (size_t k = po + 1, d = 0; pe && k < pe - 1 && !comma; k++) {
            if (s[k] == '"' || s[k] == '\'') /* a literal: skipped whole */
                for (char q = s[k++]; k < pe - 1 && s[k] != q; k++)
                    k += s[k] == '\\';
            else if (s[k] == '(' || s[k] == '[' || s[k] == '{')
                d++;
            else if (s[k] == ')' || s[k] == ']' || s[k] == '}')
                d--;
            else if (s[k] == ',' && d == 0)
                comma = k;
        }
        size_t semi = pe ? cp_skip_ws(s, len, pe) : len;
        if (!comma || semi >= len || s[semi] != ';' || cp_decide(s + po + 1, comma - po - 1, syms) != 1)
            continue;
        size_t from = i, to = semi + 1;
        while (from > done && (s[from - 1] == ' ' || s[from - 1] == '\t'))
            from--;
        if ((from == 0 || s[from - 1] == '\n') && to < len && s[to] == '\n')
            to++; /* a line of its own: the whole line */
        else
            from = i;
        kv_buf_append(out, s + done, from - done);
        done = to;
        i = to - 1;
    }
    kv_buf_append(out, s + done, len - done);
}

/* A unit's code compacted: comments, its include guard and the guarded
 * #includes of headers already in the text, dead branches, the
 * static_asserts decided true, indentation.  syms: the params and the
 * guards of the units before (this one's is added). */
static char *cp_code(const cp_unit *u, kevo_syms *syms)
{
    char *view = cp_unit_view(u);
    if (!view)
        return NULL;
    cp_note_guard(u, view, syms);
    kv_buf pp, cx, sa;
    kv_buf_init(&pp);
    kv_buf_init(&cx);
    kv_buf_init(&sa);
    cp_pp(view, strlen(view), syms, &pp);
    free(view);
    cp_constexpr(pp.data ? pp.data : "", pp.len, syms, &cx);
    kv_buf_release(&pp);
    cp_asserts(cx.data ? cx.data : "", cx.len, syms, &sa);
    kv_buf_release(&cx);
    cp_reindent(&sa);
    if (!sa.data)
        kv_buf_puts(&sa, "");
    return kv_buf_take(&sa);
}

kevo_status kevo_prompt_compact(const char *src, const char *params, char **shown, char **base, kevo_err *err)
{
    *shown = *base = NULL;
    cp_unit u[CP_MAX_UNITS];
    int n = cp_units(src ? src : "", u);
    char own[sizeof u[0].name + 1];
    cp_own_prefix(u, n, own, sizeof own);
    kevo_syms syms; /* the params, then the guards of the units seen */
    cp_syms(params, &syms);
    kv_buf sh, ba;
    kv_buf_init(&sh);
    kv_buf_init(&ba);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        if (cp_is_api(u[i].name, own)) {
            cp_summary(&u[i], &sh);
            char *view = cp_unit_view(&u[i]);
            cp_note_guard(&u[i], view, &syms);
            free(view);
            ok = !kv_buf_append(&ba, u[i].text, u[i].len);
            continue;
        }
        char *code = cp_code(&u[i], &syms);
        ok = code && !kv_buf_puts(&sh, code) && !kv_buf_puts(&ba, code);
        free(code);
    }
    if (ok && (!sh.data || !ba.data))
        ok = !kv_buf_puts(&sh, "") && !kv_buf_puts(&ba, "");
    if (!ok) {
        kv_buf_release(&sh);
        kv_buf_release(&ba);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory compacting a source");
    }
    *shown = kv_buf_take(&sh);
    *base = kv_buf_take(&ba);
    return KEVO_OK;
}

/* Whether text names word as an identifier. */
static bool cp_mentions(const char *text, const char *word)
{
    size_t n = strlen(word), len = strlen(text);
    for (const char *p = text; n && (p = strstr(p, word)) != NULL; p++)
        if (cp_word_at(text, len, (size_t)(p - text), word))
            return true;
    return false;
}

char *kevo_prompt_headers_for(const char *parent_src, const char *reply_src)
{
    cp_unit u[CP_MAX_UNITS];
    int n = cp_units(parent_src ? parent_src : "", u), last = -1;
    char own[sizeof u[0].name + 1];
    cp_own_prefix(u, n, own, sizeof own);
    cp_decl *d = calloc(CP_MAX_DECLS, sizeof *d);
    if (!d || !reply_src)
        return free(d), NULL;
    for (int i = 0; i < n; i++) {
        if (!cp_is_api(u[i].name, own)) /* the family's own headers were shown as code: the reply holds them */
            continue;
        char marker[96];
        snprintf(marker, sizeof marker, "#line 1 \"%.*s\"", (int)sizeof u[i].name - 1, u[i].name);
        if (strstr(reply_src, marker)) /* the reply kept its headers */
            return free(d), NULL;
        int nd = cp_decls(u[i].text, u[i].len, d, CP_MAX_DECLS);
        for (int k = 0; k < nd && last < i; k++) /* functions and types: a macro may be the reply's own too */
            if (d[k].name[0] && strncmp(d[k].sig, "#define", 7) != 0 && cp_mentions(reply_src, d[k].name))
                last = i;
    }
    free(d);
    if (last < 0)
        return NULL;
    kv_buf b;
    kv_buf_init(&b);
    for (int i = 0; i <= last; i++)
        if (cp_is_api(u[i].name, own))
            kv_buf_append(&b, u[i].text, u[i].len);
    kv_buf_puts(&b, "#line 1 \"llm\"\n");
    return kv_buf_take(&b);
}
