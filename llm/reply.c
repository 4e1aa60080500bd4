/* reply.c — read an LLM reply into device source and a one-point space (see reply.h). */
#define _POSIX_C_SOURCE 200809L
#include "llm/reply.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "llm/admit/check.h"
#include "llm/json_loose.h"
#include "llm/prompt.h"
#include "util/util.h"

#define RP_MAX_BLOCKS 256
#define RP_MAX_EDITS 64
#define RP_MAX_ENTRIES 32

/* A fenced block: [start, end) of its contents in the reply text. */
typedef struct rp_block {
    char info[16]; /* first word of the info string, lower case */
    size_t start, end;
    bool closed;
    int depth; /* 0: in the reply; 1: inside a markdown block */
} rp_block;

typedef struct rp_state {
    char *text; /* the reply, CR LF and CR turned into LF */
    size_t len;
    rp_block blk[RP_MAX_BLOCKS];
    int nblk;
    bool *prose; /* by byte: outside every fence and every SEARCH/REPLACE block */
} rp_state;

/* ---------------------------------------------------------------- fences */

/* Whether the line [p, e) opens or closes a fence: *ch the character, *n the
 * run, *info the rest; false otherwise. */
static bool rp_fence_line(const char *p, const char *e, char *ch, size_t *n, const char **info, size_t *indent)
{
    const char *q = p;
    while (q < e && (*q == ' ' || *q == '\t'))
        q++;
    *indent = (size_t)(q - p);
    if (q >= e || (*q != '`' && *q != '~'))
        return false;
    char c = *q;
    const char *r = q;
    while (r < e && *r == c)
        r++;
    if (r - q < 3)
        return false;
    if (c == '`' && memchr(r, '`', (size_t)(e - r)))
        return false; /* inline code, not a fence */
    *ch = c;
    *n = (size_t)(r - q);
    *info = r;
    return true;
}

/* Find the fenced blocks of text[from, to), at nesting depth. */
static void rp_find_blocks(rp_state *s, size_t from, size_t to, int depth, bool mark_prose)
{
    const char *t = s->text;
    size_t i = from;
    while (i < to) {
        const char *nl = memchr(t + i, '\n', to - i);
        size_t le = nl ? (size_t)(nl - t) : to;
        char ch;
        size_t n, indent;
        const char *info;
        if (!rp_fence_line(t + i, t + le, &ch, &n, &info, &indent)) {
            i = le + 1;
            continue;
        }
        /* an opening fence: its info word */
        rp_block b = {.depth = depth};
        const char *w = info;
        while (w < t + le && (*w == ' ' || *w == '\t'))
            w++;
        size_t k = 0;
        while (w < t + le && !isspace((unsigned char)*w) && *w != '{' && k < sizeof b.info - 1)
            b.info[k++] = (char)tolower((unsigned char)*w++);
        b.info[k] = '\0';
        size_t open_line = i;
        b.start = le + 1 < to ? le + 1 : to;
        size_t j = b.start;
        b.end = to;
        while (j < to) {
            const char *nl2 = memchr(t + j, '\n', to - j);
            size_t le2 = nl2 ? (size_t)(nl2 - t) : to;
            char ch2;
            size_t n2, ind2;
            const char *info2;
            if (rp_fence_line(t + j, t + le2, &ch2, &n2, &info2, &ind2) && ch2 == ch && n2 >= n) {
                const char *r = info2;
                while (r < t + le2 && (*r == ' ' || *r == '\t'))
                    r++;
                if (r == t + le2) {
                    b.end = j;
                    b.closed = true;
                    j = le2 + 1;
                    break;
                }
            }
            j = le2 + 1;
        }
        if (mark_prose)
            for (size_t m = open_line; m < (j < to ? j : to); m++)
                s->prose[m] = false;
        if (s->nblk < RP_MAX_BLOCKS)
            s->blk[s->nblk++] = b;
        /* a markdown block may hold the code in fences of its own */
        if (depth == 0 && (!strcmp(b.info, "markdown") || !strcmp(b.info, "md")))
            rp_find_blocks(s, b.start, b.end, 1, false);
        i = j;
    }
}

static bool rp_code_info(const char *info)
{
    static const char *const langs[] = {"cuda", "cu", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "cuh", "", NULL};
    for (int k = 0; langs[k]; k++)
        if (!strcmp(info, langs[k]))
            return true;
    return false;
}

/* The contents of block b, the fence's indentation not removed (code does not care). */
static char *rp_block_text(const rp_state *s, const rp_block *b)
{
    size_t n = b->end > b->start ? b->end - b->start : 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, s->text + b->start, n);
    out[n] = '\0';
    return out;
}

static bool rp_is_json_object(const char *text)
{
    const char *p = text;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p != '{')
        return false;
    cJSON *j = cJSON_Parse(text);
    bool yes = cJSON_IsObject(j);
    cJSON_Delete(j);
    return yes;
}

/* Why text is no JSON object, for the reply's failure: where cJSON stopped
 * (line, column and up to 40 bytes of the text there, made safe for a
 * terminal), or the kind of value it is. */
static void rp_json_why(const char *text, char *out, size_t n)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(text, &end, false);
    if (j) {
        snprintf(out, n, "is %s, not an object",
                 cJSON_IsArray(j) ? "a JSON array" : cJSON_IsString(j) ? "a JSON string" : "a JSON scalar");
        cJSON_Delete(j);
        return;
    }
    if (!end || end < text)
        end = text;
    int line = 1, col = 1;
    for (const char *p = text; p < end && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char near[41];
    size_t k = 0;
    while (k < sizeof near - 1 && end[k] && end[k] != '\n')
        k++;
    memcpy(near, end, k);
    near[k] = '\0';
    kv_term_clean(near);
    snprintf(out, n, "is not valid JSON: line %d, column %d, at '%s' (JSON has no expressions, comments or trailing "
             "commas)", line, col, near);
}

/* ------------------------------------------------------ SEARCH / REPLACE */

typedef enum { RP_LINE_OTHER, RP_LINE_SEARCH, RP_LINE_SEP, RP_LINE_REPLACE } rp_line_kind;

static rp_line_kind rp_marker(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    size_t n = (size_t)(e - p);
    size_t run = 0;
    while (run < n && p[run] == p[0])
        run++;
    if (n == 0 || run < 5 || run > 9)
        return RP_LINE_OTHER;
    const char *rest = p + run;
    while (rest < e && *rest == ' ')
        rest++;
    size_t rl = (size_t)(e - rest);
    if (p[0] == '<' && rl == 6 && !memcmp(rest, "SEARCH", 6))
        return RP_LINE_SEARCH;
    if (p[0] == '=' && rl == 0)
        return RP_LINE_SEP;
    if (p[0] == '>' && rl == 7 && !memcmp(rest, "REPLACE", 7))
        return RP_LINE_REPLACE;
    return RP_LINE_OTHER;
}

typedef struct rp_edit {
    size_t s_start, s_end, r_start, r_end; /* [start, end) in the text, without the last newline */
} rp_edit;

/* Find the edit blocks; returns how many (-1 with err set on a malformed one). */
static int rp_find_edits(rp_state *s, rp_edit *ed, int max, kevo_err *err)
{
    const char *t = s->text;
    int n = 0, state = 0; /* 0 outside, 1 in SEARCH, 2 in REPLACE */
    size_t block_start = 0;
    rp_edit cur = {0};
    for (size_t i = 0; i <= s->len;) {
        const char *nl = i < s->len ? memchr(t + i, '\n', s->len - i) : NULL;
        size_t le = nl ? (size_t)(nl - t) : s->len;
        rp_line_kind k = i < s->len ? rp_marker(t + i, t + le) : RP_LINE_OTHER;
        if (state == 0 && k == RP_LINE_SEARCH) {
            if (n >= max)
                return kevo_err_set(err, KEVO_ERR_PARSE, "more than %d SEARCH/REPLACE blocks", max), -1;
            state = 1;
            block_start = i;
            cur.s_start = le + 1 <= s->len ? le + 1 : s->len;
        } else if (state == 1 && k == RP_LINE_SEP) {
            cur.s_end = i > cur.s_start ? i - 1 : cur.s_start;
            cur.r_start = le + 1 <= s->len ? le + 1 : s->len;
            state = 2;
        } else if (state == 1 && (k == RP_LINE_SEARCH || k == RP_LINE_REPLACE)) {
            return kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH block %d has no '=======' line", n + 1), -1;
        } else if (state == 2 && k == RP_LINE_REPLACE) {
            cur.r_end = i > cur.r_start ? i - 1 : cur.r_start;
            ed[n++] = cur;
            for (size_t m = block_start; m < le && m < s->len; m++)
                s->prose[m] = false;
            state = 0;
        } else if (state == 2 && (k == RP_LINE_SEARCH || k == RP_LINE_SEP)) {
            return kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH block %d has no '>>>>>>> REPLACE' line", n + 1), -1;
        } else if (state == 0 && k == RP_LINE_REPLACE) {
            return kevo_err_set(err, KEVO_ERR_PARSE, "'>>>>>>> REPLACE' without a SEARCH block"), -1;
        }
        if (!nl)
            break;
        i = le + 1;
    }
    if (state == 1)
        return kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH block %d has no '=======' line", n + 1), -1;
    if (state == 2)
        return kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH block %d has no '>>>>>>> REPLACE' line (the reply was cut?)",
                            n + 1),
               -1;
    return n;
}

/* Occurrences of needle in hay (overlapping), at most 3; *at the first.  With
 * lines set, only those that begin and end on line boundaries. */
static int rp_count(const char *hay, size_t hn, const char *needle, size_t nn, bool lines, size_t *at)
{
    int c = 0;
    if (nn == 0 || nn > hn)
        return 0;
    for (size_t i = 0; i + nn <= hn && c < 3;) {
        const char *f = memchr(hay + i, needle[0], hn - nn + 1 - i);
        if (!f)
            break;
        size_t p = (size_t)(f - hay);
        if (memcmp(hay + p, needle, nn) == 0 &&
            (!lines || ((p == 0 || hay[p - 1] == '\n') && (p + nn == hn || hay[p + nn] == '\n')))) {
            if (c == 0)
                *at = p;
            c++;
        }
        i = p + 1;
    }
    return c;
}

/* How a block is named in a message: its number and its SEARCH text's
 * first non-blank line, shown (at most 60 bytes, control bytes as '?'). */
static void rp_block_name(const char *sr, size_t sn, int i, char *out, size_t n)
{
    size_t a = 0;
    while (a < sn && (sr[a] == ' ' || sr[a] == '\t' || sr[a] == '\n' || sr[a] == '\r'))
        a++;
    size_t len = 0;
    char line[64];
    for (; a + len < sn && sr[a + len] != '\n' && len < 60; len++) {
        unsigned char c = (unsigned char)sr[a + len];
        line[len] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    line[len] = '\0';
    snprintf(out, n, "SEARCH block %d (\"%s%s\")", i + 1, line, a + len < sn && sr[a + len] != '\n' ? "..." : "");
}

/* Where earlier blocks' replacements lie in the text being edited: each
 * block must find its SEARCH text in what the parent's source still has, not
 * in another block's replacement (blocks must not overlap). */
typedef struct rp_span {
    size_t at, len;
    int block;
} rp_span;

/* The block whose replacement [at, at + n) touches, or -1. */
static int rp_overlap(const rp_span *sp, int ns, size_t at, size_t n)
{
    for (int k = 0; k < ns; k++)
        if (at < sp[k].at + sp[k].len && sp[k].at < at + n && sp[k].len + n > 0)
            return sp[k].block;
    return -1;
}

/* Replace [at, at + sn) of cur with rr[0..rn). */
static kevo_status rp_splice(kv_buf *cur, size_t at, size_t sn, const char *rr, size_t rn)
{
    kv_buf next;
    kv_buf_init(&next);
    kevo_status st = kv_buf_append(&next, cur->data, at);
    if (!st && rn)
        st = kv_buf_append(&next, rr, rn);
    if (!st)
        st = kv_buf_append(&next, cur->data + at + sn, cur->len - at - sn);
    if (!st)
        st = kv_buf_puts(&next, "");
    kv_buf_release(cur);
    *cur = next;
    return st;
}

/* Apply the edit blocks in order to the parent's source.  Each block's
 * SEARCH text must occur exactly once (whole lines first, then anywhere)
 * and not within an earlier block's replacement.  Errors (KEVO_ERR_PARSE)
 * name the block by number and first line: empty, not found, ambiguous,
 * overlapping, or the source grown too long. */
static kevo_status rp_apply_edits(const rp_state *s, const rp_edit *ed, int n, const char *parent, char **out,
                                  kevo_err *err)
{
    kv_buf cur;
    kv_buf_init(&cur);
    rp_span *spans = n > 0 ? calloc((size_t)n, sizeof *spans) : NULL;
    if ((n > 0 && !spans) || kv_buf_puts(&cur, parent) || kv_buf_puts(&cur, "")) {
        free(spans);
        kv_buf_release(&cur);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n && !st; i++) {
        const char *sr = s->text + ed[i].s_start, *rr = s->text + ed[i].r_start;
        size_t sn = ed[i].s_end - ed[i].s_start, rn = ed[i].r_end - ed[i].r_start;
        char name[96];
        rp_block_name(sr, sn, i, name, sizeof name);
        if (sn == 0) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH block %d is empty", i + 1);
            break;
        }
        size_t at = 0;
        int c = rp_count(cur.data, cur.len, sr, sn, true, &at);
        if (c == 0)
            c = rp_count(cur.data, cur.len, sr, sn, false, &at);
        int other = c == 1 ? rp_overlap(spans, i, at, sn) : -1;
        if (c == 0)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s matches 0 times: its text is not in the parent's source "
                              "(copy the lines exactly, whitespace included)", name);
        else if (c > 1)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s matches %s times: it is ambiguous (add lines around it "
                              "to make it unique)", name, c == 2 ? "2" : "3 or more");
        else if (other >= 0)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s overlaps SEARCH block %d: it finds its text in that "
                              "block's replacement (blocks must edit separate parts of the parent's source)",
                              name, other + 1);
        else if (cur.len - sn + rn > KEVO_LLM_SOURCE_MAX)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "source over %d KiB after %s", KEVO_LLM_SOURCE_MAX / 1024, name);
        if (st)
            break;
        if (rp_splice(&cur, at, sn, rr, rn)) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        for (int k = 0; k < i; k++) /* the earlier replacements after this one move */
            if (spans[k].at >= at + sn)
                spans[k].at = spans[k].at - sn + rn;
        spans[i] = (rp_span){.at = at, .len = rn, .block = i};
    }
    free(spans);
    if (st) {
        kv_buf_release(&cur);
        return st;
    }
    *out = kv_buf_take(&cur);
    return KEVO_OK;
}

/* ---------------------------------------------------------------- summary */

static char *rp_summary(const rp_state *s)
{
    kv_buf b;
    kv_buf_init(&b);
    size_t i = 0;
    bool started = false, space = false;
    while (i < s->len && b.len < KEVO_LLM_SUMMARY_MAX + 8) {
        if (!s->prose[i]) {
            if (started)
                break;
            i++;
            continue;
        }
        unsigned char c = (unsigned char)s->text[i];
        if (!started) {
            /* skip blank lines and markdown marks at a line's start ("1." too) */
            if (isspace(c) || c == '#' || c == '>' || c == '*' || c == '-' || c == '`' || c == '_') {
                i++;
                continue;
            }
            size_t d = i;
            while (d < s->len && d < i + 4 && isdigit((unsigned char)s->text[d]))
                d++;
            if (d > i && d + 1 < s->len && (s->text[d] == '.' || s->text[d] == ')') && s->text[d + 1] == ' ') {
                i = d + 1;
                continue;
            }
            started = true;
        }
        if (c == '\n' && i + 1 < s->len && s->text[i + 1] == '\n')
            break; /* the paragraph ends */
        if (c == '`' || c == '*') {
            i++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            space = true;
            i++;
            continue;
        }
        if (space && b.len > 0)
            kv_buf_puts(&b, " ");
        space = false;
        if (c == ' ') {
            space = true;
            i++;
            continue;
        }
        kv_buf_append(&b, &s->text[i], 1);
        if ((c == '.' || c == '!' || c == '?') &&
            (i + 1 >= s->len || isspace((unsigned char)s->text[i + 1]) || !s->prose[i + 1]))
            break;
        i++;
    }
    char *out = b.data ? kv_buf_take(&b) : kv_strdup("");
    if (!out)
        return NULL;
    size_t n = strlen(out);
    if (n > KEVO_LLM_SUMMARY_MAX) {
        n = KEVO_LLM_SUMMARY_MAX;
        while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
            n--;
        out[n] = '\0';
    }
    kv_term_clean(out);
    /* trailing ':' of "Here is the code:" reads badly */
    n = strlen(out);
    while (n > 0 && (out[n - 1] == ':' || out[n - 1] == ' '))
        out[--n] = '\0';
    return out;
}

/* ---------------------------------------------------------------- plans */

static const char *const rp_plan_keys[] = {"launches", "let", "params", "workspace", "pad_k", "tmaps",
                                           "constraints", NULL};
static const char *const rp_family_keys[] = {"family", "op", "source", "include", "archs", "description",
                                             "axes", "model", "enter_from", "requires", NULL};

static bool rp_in(const char *k, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(k, list[i]))
            return true;
    return false;
}

/* A key of untrusted JSON, for a message: itself when a short identifier. */
static const char *rp_key_name(const char *k)
{
    if (!k || !*k || strlen(k) > 40)
        return "(a key that is not a name)";
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return "(a key that is not a name)";
    return k;
}

/* An untrusted name shown in a message: at most 40 bytes, each byte that is
 * not printable ASCII (or is a quote or backslash) as '?'. */
static void rp_show_name(const char *k, char out[48])
{
    size_t n = 0;
    for (; k && k[n] && n < 40; n++)
        out[n] = k[n] > 0x20 && k[n] < 0x7f && k[n] != '\'' && k[n] != '\\' ? k[n] : '?';
    snprintf(out + n, 48 - n, "%s", k && k[n] ? "..." : "");
}

/* The plan's params, normalized to [{"name", "values": [v], "default": v}];
 * {} or [] is a kernel without tunables.  A name that is not an identifier
 * (it becomes a #define) is refused, named. */
static kevo_status rp_params(const cJSON *p, cJSON **out, kevo_err *err)
{
    *out = cJSON_CreateArray();
    if (!*out)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    const cJSON *it;
    int idx = 0;
    cJSON_ArrayForEach(it, p)
    {
        const char *name = NULL;
        const cJSON *v = NULL;
        if (cJSON_IsObject(p)) {
            name = it->string;
            v = it;
        } else if (cJSON_IsObject(it)) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
            name = cJSON_IsString(nm) ? nm->valuestring : NULL;
            const cJSON *vals = cJSON_GetObjectItemCaseSensitive(it, "values");
            const cJSON *one = cJSON_GetObjectItemCaseSensitive(it, "value");
            if (cJSON_IsArray(vals)) {
                int nv = cJSON_GetArraySize(vals);
                if (nv != 1) {
                    cJSON_Delete(*out);
                    *out = NULL;
                    return kevo_err_set(err, KEVO_ERR_PARSE,
                                        "plan: param '%s' has %d values (each param of a one-point space has exactly "
                                        "one)",
                                        rp_key_name(name), nv);
                }
                v = cJSON_GetArrayItem(vals, 0);
            } else {
                v = one;
            }
        }
        if (name && !kv_is_ident(name, KEVO_SYM_NAME_MAX - 1)) {
            char shown[48];
            rp_show_name(name, shown);
            cJSON_Delete(*out);
            *out = NULL;
            return kevo_err_set(err, KEVO_ERR_PARSE, "plan: param %d's name '%s' is not an identifier (letters, "
                                "digits and '_', not starting with a digit, at most %d bytes)", idx + 1, shown,
                                KEVO_SYM_NAME_MAX - 1);
        }
        if (!name || !cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble ||
            v->valuedouble > 1e15 || v->valuedouble < -1e15) {
            cJSON_Delete(*out);
            *out = NULL;
            return kevo_err_set(err, KEVO_ERR_PARSE, "plan: param %d ('%s') needs a name and one whole-number value",
                                idx + 1, rp_key_name(name));
        }
        cJSON *o = cJSON_CreateObject();
        cJSON *vals = cJSON_AddArrayToObject(o, "values");
        cJSON *num = cJSON_CreateNumber(v->valuedouble);
        if (!o || !vals || !num || !cJSON_AddStringToObject(o, "name", name) ||
            !cJSON_AddNumberToObject(o, "default", v->valuedouble)) {
            cJSON_Delete(num);
            cJSON_Delete(o);
            cJSON_Delete(*out);
            *out = NULL;
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        }
        cJSON_AddItemToArray(vals, num);
        cJSON_AddItemToArray(*out, o);
        idx++;
    }
    if (!cJSON_IsObject(p) && !cJSON_IsArray(p)) {
        cJSON_Delete(*out);
        *out = NULL;
        return kevo_err_set(err, KEVO_ERR_PARSE, "plan: \"params\" must be an object or an array");
    }
    return KEVO_OK;
}

/* {"NAME": value, ...} changes the parent's params it names (and adds the
 * others): *val (normalized, replaced) becomes the parent's array with
 * those values. */
static kevo_status rp_params_merge(const cJSON *parent_params, cJSON **val, kevo_err *err)
{
    cJSON *all = cJSON_IsArray(parent_params) ? cJSON_Duplicate(parent_params, true) : cJSON_CreateArray();
    if (!all)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    cJSON *it;
    while ((it = (*val)->child) != NULL) {
        cJSON_DetachItemViaPointer(*val, it);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
        int at = -1, i = 0;
        const cJSON *q;
        cJSON_ArrayForEach(q, all)
        {
            const char *qn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "name"));
            if (at < 0 && qn && name && strcmp(qn, name) == 0)
                at = i;
            i++;
        }
        if (at >= 0)
            cJSON_ReplaceItemInArray(all, at, it);
        else
            cJSON_AddItemToArray(all, it);
    }
    cJSON_Delete(*val);
    *val = all;
    return KEVO_OK;
}

kevo_status kevo_llm_merge_plan(const char *parent_space, const char *plan_json, char **merged, kevo_err *err)
{
    *merged = NULL;
    cJSON *parent = parent_space ? cJSON_Parse(parent_space) : NULL;
    if (!cJSON_IsObject(parent)) {
        cJSON_Delete(parent);
        return kevo_err_set(err, KEVO_ERR_ARG, "the parent's space is not a JSON object");
    }
    cJSON *plan = plan_json ? cJSON_Parse(plan_json) : NULL;
    if (!cJSON_IsObject(plan)) {
        cJSON_Delete(plan);
        cJSON_Delete(parent);
        return kevo_err_set(err, KEVO_ERR_PARSE, "plan: not a JSON object");
    }
    kevo_status st = KEVO_OK;
    bool new_params = false, new_lets = false, new_constraints = false, no_params = false;
    for (cJSON *k = plan->child; k && !st; k = k->next) {
        const char *key = k->string ? k->string : "";
        if (!strcmp(key, "tensor_maps"))
            key = "tmaps";
        if (rp_in(key, rp_family_keys)) {
            if (!cJSON_Compare(k, cJSON_GetObjectItemCaseSensitive(parent, key), true))
                st = kevo_err_set(err, KEVO_ERR_PARSE, "plan: \"%s\" may not change (it names the family)", key);
            continue;
        }
        if (!rp_in(key, rp_plan_keys)) {
            st = kevo_err_set(err, KEVO_ERR_PARSE,
                              "plan: '%s' is not a plan key (launches, let, params, workspace, pad_k, tmaps, "
                              "constraints)",
                              rp_key_name(k->string));
            continue;
        }
        if (cJSON_GetObjectItemCaseSensitive(plan, key) && strcmp(key, k->string) && !strcmp(key, "tmaps")) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "plan: both \"tmaps\" and \"tensor_maps\"");
            continue;
        }
        cJSON *val = NULL;
        if (!strcmp(key, "params")) {
            st = rp_params(k, &val, err);
            new_params = true;
            no_params = !st && cJSON_GetArraySize(val) == 0;
            if (!st && !no_params && cJSON_IsObject(k))
                st = rp_params_merge(cJSON_GetObjectItemCaseSensitive(parent, "params"), &val, err);
        } else {
            val = cJSON_Duplicate(k, true);
            if (!val)
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            new_lets |= !strcmp(key, "let");
            new_constraints |= !strcmp(key, "constraints");
        }
        if (st)
            break;
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        cJSON_AddItemToObject(parent, key, val);
    }
    /* a one-point space has no axes and no moves into it */
    cJSON_DeleteItemFromObjectCaseSensitive(parent, "axes");
    cJSON_DeleteItemFromObjectCaseSensitive(parent, "enter_from");
    /* a kernel without tunables ("params": {}): nothing of the parent's plan names its params any more, so
     * the plan keys it does not give are the parent's no longer (its launches must be its own) */
    static const char *const derived[] = {"let", "launches", "workspace", "pad_k", "tmaps"};
    for (size_t i = 0; !st && no_params && i < sizeof derived / sizeof derived[0]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(plan, derived[i]) &&
            !(i == 4 && cJSON_GetObjectItemCaseSensitive(plan, "tensor_maps")))
            cJSON_DeleteItemFromObjectCaseSensitive(parent, derived[i]);
    if (!st && (new_params || new_lets)) {
        cJSON_DeleteItemFromObjectCaseSensitive(parent, "model");
        if (!new_constraints)
            cJSON_DeleteItemFromObjectCaseSensitive(parent, "constraints");
    }
    if (!st) {
        *merged = cJSON_PrintUnformatted(parent);
        if (!*merged)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    cJSON_Delete(plan);
    cJSON_Delete(parent);
    return st;
}

kevo_status kevo_llm_space_load(const char *space_json, kevo_space **out, kevo_err *err)
{
    *out = NULL;
    if (!space_json)
        return kevo_err_set(err, KEVO_ERR_PARSE, "plan: no space");
    kevo_err e2;
    kevo_err_clear(&e2);
    kevo_status st = kevo_space_load_inline(space_json, "", "plan", out, &e2);
    if (st) {
        const char *m = e2.msg;
        if (!strncmp(m, "'plan': ", 8))
            m += 8;
        return kevo_err_set(err, st == KEVO_ERR_NOMEM ? KEVO_ERR_NOMEM : KEVO_ERR_PARSE, "plan: %s", m);
    }
    return KEVO_OK;
}

/* The index in ent[0, ne) of the entry called name; ne when none. */
static int rp_entry(const kevo_llm_entry *ent, int ne, const char *name)
{
    int k = 0;
    while (k < ne && strcmp(ent[k].name, name) != 0)
        k++;
    return k;
}

/* Whether launch i of a one-point space can run: its `when` is not false
 * over the point's params (point: their values; a `when` that names the
 * shape or a let may be true, so it counts as running). */
static bool rp_launch_runs(const kevo_space *sp, int i, const kevo_syms *point)
{
    int64_t w = 1;
    kevo_err e;
    return !sp->launches[i].when || kevo_expr_eval(sp->launches[i].when, point, &w, &e) != KEVO_OK || w != 0;
}

/* Every entry the space launches is an extern "C" __global__ of the source
 * (a launch whose `when` the point's params make false never runs: its
 * entry may be absent, as in a source compacted for those params).  An
 * entry the model left with C++ linkage is given C linkage in *source
 * (kevo_llm_give_c_linkage), counted in *nlinked. */
static kevo_status rp_check_entries(const char *space_json, char **source, int *nlinked, kevo_err *err)
{
    kevo_space *sp = NULL;
    kevo_status st = kevo_llm_space_load(space_json, &sp, err);
    if (st)
        return st;
    kevo_llm_entry ent[RP_MAX_ENTRIES];
    int ne = kevo_llm_find_entries(*source, ent, RP_MAX_ENTRIES);
    ne = ne > RP_MAX_ENTRIES ? RP_MAX_ENTRIES : ne;
    kevo_syms point;
    kevo_syms_init(&point);
    for (int k = 0; k < sp->nparams; k++)
        kevo_syms_set(&point, sp->params[k].name, sp->params[k].def);
    for (int i = 0; i < sp->nlaunches && !st; i++) {
        if (!rp_launch_runs(sp, i, &point))
            continue;
        const char *name = sp->launches[i].entry;
        int k = rp_entry(ent, ne, name);
        char *linked = NULL;
        int nl = k < ne && !ent[k].extern_c ? kevo_llm_give_c_linkage(*source, name, &linked) : 0;
        if (nl > 0) {
            free(*source);
            *source = linked;
            (*nlinked)++;
            ne = kevo_llm_find_entries(*source, ent, RP_MAX_ENTRIES);
            ne = ne > RP_MAX_ENTRIES ? RP_MAX_ENTRIES : ne;
            k = rp_entry(ent, ne, name);
        }
        if (nl < 0)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        else if (k == ne)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "plan: launches[%d].entry '%s' is not a __global__ of the source",
                              i, name);
        else if (!ent[k].extern_c)
            st = kevo_err_set(err, KEVO_ERR_PARSE,
                              "plan: entry '%s' is not declared extern \"C\" (its symbol would be mangled) and kevo "
                              "cannot add it (a template, static or macro-made entry)", name);
    }
    kevo_space_free(sp);
    return st;
}

/* ------------------------------------------------------------------ parse */

void kevo_llm_parsed_free(kevo_llm_parsed *p)
{
    if (!p)
        return;
    free(p->source);
    free(p->space);
    free(p->summary);
    memset(p, 0, sizeof *p);
}

/* The source's own checks: size, bytes, a __global__. */
static kevo_status rp_check_source(const char *src, kevo_err *err)
{
    size_t n = strlen(src);
    if (n > KEVO_LLM_SOURCE_MAX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "source over %d KiB", KEVO_LLM_SOURCE_MAX / 1024);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if ((c < 0x20 && c != '\n' && c != '\t' && c != '\f' && c != '\v') || c == 0x7f)
            return kevo_err_set(err, KEVO_ERR_PARSE, "source holds a control character (byte %zu)", i);
    }
    if (kevo_llm_find_entries(src, NULL, 0) <= 0) {
        long open = 0, close = 0;
        char *code = kevo_prompt_source_view(src); /* no comments: their braces do not count */
        for (const char *c = code ? code : ""; *c; c++) {
            open += *c == '{';
            close += *c == '}';
        }
        free(code);
        if (open != close)
            return kevo_err_set(err, KEVO_ERR_PARSE, "the source's braces do not balance (%ld '{' against %ld '}'), "
                                "so no __global__ function can be read", open, close);
        return kevo_err_set(err, KEVO_ERR_PARSE, "the source defines no __global__ function");
    }
    return KEVO_OK;
}

kevo_status kevo_llm_parse_reply(const char *reply, const char *parent_source, const char *parent_space,
                                 kevo_llm_parsed *out, kevo_err *err)
{
    memset(out, 0, sizeof *out);
    if (!reply || strnlen(reply, (size_t)KEVO_LLM_REPLY_MAX + 1) > KEVO_LLM_REPLY_MAX)
        return reply ? kevo_err_set(err, KEVO_ERR_PARSE, "reply over %d KiB", KEVO_LLM_REPLY_MAX / 1024)
                     : kevo_err_set(err, KEVO_ERR_PARSE, "no reply");
    size_t rlen = strlen(reply);
    rp_state *s = calloc(1, sizeof *s);
    if (!s)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    s->text = malloc(rlen + 1);
    s->prose = malloc(rlen + 1);
    if (!s->text || !s->prose) {
        free(s->text);
        free(s->prose);
        free(s);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < rlen; i++) {
        if (reply[i] == '\r' && i + 1 < rlen && reply[i + 1] == '\n')
            continue;
        s->text[s->len++] = reply[i] == '\r' ? '\n' : reply[i];
    }
    s->text[s->len] = '\0';
    memset(s->prose, 1, s->len + 1);

    kevo_status st = KEVO_OK;
    char *source = NULL, *plan = NULL;
    rp_edit *ed = malloc(RP_MAX_EDITS * sizeof *ed);
    if (!ed)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int nedits = st ? 0 : rp_find_edits(s, ed, RP_MAX_EDITS, err);
    if (nedits < 0)
        st = KEVO_ERR_PARSE;
    rp_find_blocks(s, 0, s->len, 0, true);
    out->summary = rp_summary(s);
    if (!out->summary && !st)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");

    /* the plan: the last ```json block, or a plain block holding a JSON object */
    for (int i = s->nblk - 1; i >= 0 && !st && !plan; i--) {
        const rp_block *b = &s->blk[i];
        bool json = !strcmp(b->info, "json") || !strcmp(b->info, "jsonc") || !strcmp(b->info, "json5");
        if (!json && b->info[0])
            continue;
        if (b->end - b->start > KEVO_LLM_PLAN_MAX) {
            if (json)
                st = kevo_err_set(err, KEVO_ERR_PARSE, "plan block over %d KiB", KEVO_LLM_PLAN_MAX / 1024);
            continue;
        }
        char *t = rp_block_text(s, b);
        if (!t) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        char *loose = NULL;
        if (rp_is_json_object(t)) {
            plan = t;
        } else if (json && b->closed && (loose = kevo_json_loosen(t)) && rp_is_json_object(loose)) {
            plan = loose; /* comments, trailing commas, bare expressions: what the model meant */
            loose = NULL;
            out->plan_mended = true;
        } else if (json && b->closed) {
            char why[192];
            rp_json_why(t, why, sizeof why);
            st = kevo_err_set(err, KEVO_ERR_PARSE, "plan: the ```json block %s", why);
        } else if (json) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "plan: the ```json block is not closed (the reply was cut?)");
        }
        free(loose);
        if (t != plan)
            free(t);
    }

    /* the source */
    if (!st && nedits > 0) {
        if (!parent_source)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "SEARCH/REPLACE edits without a parent source");
        else
            st = rp_apply_edits(s, ed, nedits, parent_source, &source, err);
    } else if (!st) {
        int last_global = -1, ncode = 0;
        bool unclosed = false;
        for (int i = 0; i < s->nblk; i++) {
            const rp_block *b = &s->blk[i];
            if (!rp_code_info(b->info))
                continue;
            char *t = rp_block_text(s, b);
            if (!t) {
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
                break;
            }
            if (b->info[0] || !rp_is_json_object(t)) {
                ncode++;
                if (!b->closed)
                    unclosed = true;
                else if (strstr(t, "__global__") && b->end - b->start <= KEVO_LLM_SOURCE_MAX + 4096 &&
                         kevo_llm_find_entries(t, NULL, 0) > 0)
                    last_global = i;
                else if (strstr(t, "__global__") && b->end - b->start > KEVO_LLM_SOURCE_MAX)
                    last_global = i; /* refused below as too long */
            }
            free(t);
        }
        if (!st && last_global >= 0) {
            source = rp_block_text(s, &s->blk[last_global]);
            if (!source)
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        } else if (!st && unclosed) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "code block not closed (the reply was cut?)");
        } else if (!st && ncode > 0) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "no code block defines a __global__ function");
        } else if (!st) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "no code block");
        }
    }
    if (!st)
        st = rp_check_source(source, err);

    /* the space: merged with the plan, or the parent's; its entries in the source */
    char *space = NULL;
    if (!st && plan) {
        st = kevo_llm_merge_plan(parent_space, plan, &space, err);
        out->has_plan = true;
    } else if (!st) {
        cJSON *pj = parent_space ? cJSON_Parse(parent_space) : NULL;
        if (!cJSON_IsObject(pj))
            st = kevo_err_set(err, KEVO_ERR_ARG, "the parent's space is not a JSON object");
        cJSON_Delete(pj);
        if (!st && !(space = kv_strdup(parent_space)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    if (!st)
        st = rp_check_entries(space, &source, &out->nlinked, err);
    if (!st) {
        out->source = source;
        out->space = space;
        out->nedits = nedits;
        source = space = NULL;
    } else {
        /* after a failure the caller owns nothing */
        free(out->summary);
        memset(out, 0, sizeof *out);
    }
    free(source);
    free(space);
    free(plan);
    free(ed);
    free(s->text);
    free(s->prose);
    free(s);
    return st;
}
