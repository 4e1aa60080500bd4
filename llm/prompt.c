/* prompt.c — the knowledge index (SQLite FTS5) and the one prompt builder. */
#define _POSIX_C_SOURCE 200809L
#include "llm/prompt.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/arch.h"
#include "core/op.h"
#include "llm/lex.h"

struct kevo_knowledge {
    sqlite3 *db;
    int nsections;
};

#define PR_MAX_TERMS 24
#define PR_MAX_TERM 40
#define PR_PROMPT_FILE_MAX (256 * 1024)

/* ------------------------------------------------------------ text hygiene */

/* Append n bytes of untrusted text: control characters but newline (and tab,
 * when multiline) become spaces, bytes that are no UTF-8 become '?', and a
 * line-only text loses its newlines too.  Never cuts a character. */
static kevo_status pr_put_clean(kv_buf *b, const char *s, size_t n, bool multiline)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    char tmp[256];
    size_t t = 0;
    kevo_status st = KEVO_OK;
    while (p < e && !st) {
        unsigned char c = *p;
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                 : (c >= 0xF0 && c <= 0xF4)   ? 4
                                                              : 0;
        size_t k = 1;
        while (len > 1 && k < len && p + k < e && (p[k] & 0xC0) == 0x80)
            k++;
        if (len == 0 || k < len) {
            tmp[t++] = '?';
            p++;
        } else if (len == 1) {
            bool keep = c >= 0x20 && c != 0x7f;
            if (multiline && (c == '\n' || c == '\t'))
                keep = true;
            tmp[t++] = keep ? (char)c : ' ';
            p++;
        } else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
            tmp[t++] = ' '; /* C1 controls */
            p += 2;
        } else {
            memcpy(tmp + t, p, len);
            t += len;
            p += len;
        }
        if (t > sizeof tmp - 8 || p >= e) {
            st = kv_buf_append(b, tmp, t);
            t = 0;
        }
    }
    return st;
}

/* The length of the longest prefix of s, at most max bytes, that ends on a
 * character boundary. */
static size_t pr_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* One line of untrusted text, at most max bytes ("..." when cut); "(none)" for NULL/empty. */
static kevo_status pr_line(kv_buf *b, const char *s, size_t max)
{
    if (!s || !*s)
        return kv_buf_puts(b, "(none)");
    size_t len = strnlen(s, max + 8);
    size_t n = pr_cut(s, len, max);
    kevo_status st = pr_put_clean(b, s, n, false);
    if (!st && n < len)
        st = kv_buf_puts(b, "...");
    return st;
}

/* A multi-line untrusted message: head and tail kept within max bytes. */
static kevo_status pr_message(kv_buf *b, const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len <= max)
        return pr_put_clean(b, s, len, true);
    size_t head = pr_cut(s, len, max * 3 / 4);
    size_t tail_start = len - max / 4;
    while (tail_start < len && ((unsigned char)s[tail_start] & 0xC0) == 0x80)
        tail_start++;
    kevo_status st = pr_put_clean(b, s, head, true);
    if (!st)
        st = kv_buf_printf(b, "\n[... %zu bytes of the message cut here ...]\n", tail_start - head);
    if (!st)
        st = pr_put_clean(b, s + tail_start, len - tail_start, true);
    return st;
}

/* A fence of backticks longer than any run of backticks in text (at least 3). */
static void pr_fence(const char *text, char *fence, size_t n)
{
    size_t run = 0, best = 0;
    for (const char *p = text; p && *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    size_t len = best + 1 < 3 ? 3 : best + 1;
    if (len > n - 1)
        len = n - 1;
    memset(fence, '`', len);
    fence[len] = '\0';
}

/* A fenced block of untrusted text (already bounded by the caller). */
static kevo_status pr_block(kv_buf *b, const char *lang, const char *text, size_t len)
{
    char fence[64];
    kv_buf tmp;
    kv_buf_init(&tmp);
    kevo_status st = pr_put_clean(&tmp, text, len, true);
    if (st) {
        kv_buf_release(&tmp);
        return st;
    }
    pr_fence(tmp.data, fence, sizeof fence);
    st = kv_buf_printf(b, "%s%s\n", fence, lang);
    if (!st && tmp.len)
        st = kv_buf_append(b, tmp.data, tmp.len);
    if (!st && (tmp.len == 0 || tmp.data[tmp.len - 1] != '\n'))
        st = kv_buf_puts(b, "\n");
    if (!st)
        st = kv_buf_printf(b, "%s\n", fence);
    kv_buf_release(&tmp);
    return st;
}

/* ------------------------------------------------------------ knowledge */

static const char *const pr_stopwords[] = {
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "its", "of", "on",
    "or", "that", "the", "this", "to", "was", "were", "with", "not", "no", "but", "if", "then", "than", "into",
    "near", "and", NULL};

static bool pr_stopword(const char *w)
{
    for (int k = 0; pr_stopwords[k]; k++)
        if (strcmp(w, pr_stopwords[k]) == 0)
            return true;
    return false;
}

void kevo_knowledge_fts_query(const char *query_terms, char *out, size_t n)
{
    if (!out || !n)
        return;
    out[0] = '\0';
    if (!query_terms)
        return;
    char terms[PR_MAX_TERMS][PR_MAX_TERM + 1];
    int nt = 0;
    size_t used = 0;
    const char *p = query_terms;
    /* a bounded walk: any text, any size */
    for (size_t walked = 0; *p && nt < PR_MAX_TERMS && walked < 65536;) {
        while (*p && !(isalnum((unsigned char)*p) && (unsigned char)*p < 0x80) && *p != '_' && walked < 65536) {
            p++;
            walked++;
        }
        char w[PR_MAX_TERM + 1];
        size_t k = 0;
        while (*p && ((isalnum((unsigned char)*p) && (unsigned char)*p < 0x80) || *p == '_')) {
            if (k < PR_MAX_TERM)
                w[k++] = (char)tolower((unsigned char)*p);
            p++;
            walked++;
        }
        w[k] = '\0';
        /* underscores separate words in the index (unicode61): trim them here */
        while (k > 0 && w[k - 1] == '_')
            w[--k] = '\0';
        char *ws = w;
        while (*ws == '_')
            ws++;
        if (strlen(ws) < 2 || pr_stopword(ws))
            continue;
        bool dup = false;
        for (int j = 0; j < nt && !dup; j++)
            dup = strcmp(terms[j], ws) == 0;
        if (!dup)
            snprintf(terms[nt++], sizeof terms[0], "%s", ws);
    }
    for (int j = 0; j < nt; j++) {
        int w = snprintf(out + used, n - used, "%s\"%s\"", j ? " OR " : "", terms[j]);
        if (w < 0 || (size_t)w >= n - used) {
            /* never leave half a term: cut back to the last whole one */
            out[used] = '\0';
            break;
        }
        used += (size_t)w;
    }
}

static int pr_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Index one file's sections; *count gets how many. */
static kevo_status pr_index_file(sqlite3_stmt *ins, const char *name, const char *text, int *count, kevo_err *err)
{
    *count = 0;
    kv_buf title, tags, body;
    kv_buf_init(&title);
    kv_buf_init(&tags);
    kv_buf_init(&body);
    bool in_section = false, in_fence = false, tags_seen = false;
    kevo_status st = KEVO_OK;
    const char *p = text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        bool end = !*p && !nl;
        bool heading = !end && !in_fence && len >= 3 && p[0] == '#' && p[1] == '#' && p[2] == ' ';
        if ((heading || end) && in_section) {
            /* flush the section */
            const char *bd = body.data ? body.data : "";
            size_t bl = body.len;
            while (bl > 0 && (bd[bl - 1] == '\n' || bd[bl - 1] == ' '))
                bl--;
            while (bl > 0 && (*bd == '\n'))
                bd++, bl--;
            kv_buf cut;
            kv_buf_init(&cut);
            size_t keep = pr_cut(bd, bl, KEVO_KNOWLEDGE_MAX_SECTION_BYTES);
            st = pr_put_clean(&cut, bd, keep, true);
            if (!st && keep < bl)
                st = kv_buf_puts(&cut, "\n[... section cut ...]");
            if (!st && !cut.data)
                st = kv_buf_puts(&cut, "");
            if (!st) {
                sqlite3_reset(ins);
                sqlite3_bind_text(ins, 1, title.data ? title.data : "", -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(ins, 2, tags.data ? tags.data : "", -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(ins, 3, cut.data, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(ins, 4, name, -1, SQLITE_TRANSIENT);
                if (sqlite3_step(ins) != SQLITE_DONE)
                    st = kevo_err_set(err, KEVO_ERR_DB, "indexing knowledge file '%s': %s", name,
                                      sqlite3_errmsg(sqlite3_db_handle(ins)));
                else
                    (*count)++;
            }
            kv_buf_release(&cut);
            if (st)
                break;
        }
        if (end)
            break;
        if (heading) {
            in_section = true;
            tags_seen = false;
            title.len = tags.len = body.len = 0;
            if (title.data)
                title.data[0] = '\0';
            if (tags.data)
                tags.data[0] = '\0';
            if (body.data)
                body.data[0] = '\0';
            const char *t = p + 3;
            size_t tl = len - 3;
            while (tl > 0 && (t[tl - 1] == ' ' || t[tl - 1] == '\r' || t[tl - 1] == '#'))
                tl--;
            st = pr_put_clean(&title, t, pr_cut(t, tl, 200), false);
            if (!st && !title.data)
                st = kv_buf_puts(&title, "");
        } else if (in_section) {
            const char *q = p;
            size_t ql = len;
            while (ql > 0 && (*q == ' ' || *q == '\t'))
                q++, ql--;
            if (ql >= 3 && (q[0] == '`' || q[0] == '~') && q[1] == q[0] && q[2] == q[0])
                in_fence = !in_fence;
            if (!tags_seen && body.len == 0 && ql >= 5 && strncasecmp(q, "tags:", 5) == 0) {
                tags_seen = true;
                const char *v = q + 5;
                size_t vl = ql - 5;
                while (vl > 0 && *v == ' ')
                    v++, vl--;
                while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\r'))
                    vl--;
                st = pr_put_clean(&tags, v, pr_cut(v, vl, 400), false);
            } else if (body.len > 0 || ql > 0) {
                st = kv_buf_append(&body, p, len);
                if (!st)
                    st = kv_buf_puts(&body, "\n");
            }
        }
        if (st) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory indexing '%s'", name);
            break;
        }
        if (!nl)
            p += len;
        else
            p = nl + 1;
    }
    kv_buf_release(&title);
    kv_buf_release(&tags);
    kv_buf_release(&body);
    if (!st && *count == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "knowledge file '%s' has no '## ' sections", name);
    return st;
}

kevo_status kevo_knowledge_open(const char *prompts_dir, kevo_knowledge **out, kevo_err *err)
{
    *out = NULL;
    if (!prompts_dir)
        return kevo_err_set(err, KEVO_ERR_ARG, "no prompts folder");
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/knowledge", prompts_dir) >= (int)sizeof dir)
        return kevo_err_set(err, KEVO_ERR_ARG, "prompts folder path too long");
    DIR *d = opendir(dir);
    if (!d)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to open knowledge folder '%s'", dir);
    char **names = NULL;
    int nnames = 0;
    kevo_status st = KEVO_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 3, ".md") != 0)
            continue;
        if (nnames >= KEVO_KNOWLEDGE_MAX_FILES) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "more than %d files in '%s'", KEVO_KNOWLEDGE_MAX_FILES, dir);
            break;
        }
        char **g = realloc(names, (size_t)(nnames + 1) * sizeof *g);
        char *copy = kv_strdup(e->d_name);
        if (!g || !copy) {
            free(copy);
            if (g)
                names = g;
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        names = g;
        names[nnames++] = copy;
    }
    closedir(d);
    kevo_knowledge *kb = NULL;
    sqlite3_stmt *ins = NULL;
    if (!st) {
        qsort(names, (size_t)nnames, sizeof *names, pr_cmp_names);
        kb = calloc(1, sizeof *kb);
        if (!kb)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    if (!st && sqlite3_open_v2(":memory:", &kb->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        st = kevo_err_set(err, KEVO_ERR_DB, "unable to open an in-memory database");
    if (!st && sqlite3_exec(kb->db,
                            "CREATE VIRTUAL TABLE ks USING fts5(title, tags, body, file UNINDEXED,"
                            " tokenize = 'porter unicode61')",
                            NULL, NULL, NULL) != SQLITE_OK)
        st = kevo_err_set(err, KEVO_ERR_DB, "unable to create the knowledge index (SQLite without FTS5?): %s",
                          sqlite3_errmsg(kb->db));
    if (!st && sqlite3_prepare_v2(kb->db, "INSERT INTO ks(title, tags, body, file) VALUES (?1, ?2, ?3, ?4)", -1,
                                  &ins, NULL) != SQLITE_OK)
        st = kevo_err_set(err, KEVO_ERR_DB, "unable to prepare the knowledge index: %s", sqlite3_errmsg(kb->db));
    for (int i = 0; i < nnames && !st; i++) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            st = kevo_err_set(err, KEVO_ERR_IO, "knowledge file '%s' is not a regular file", path);
            break;
        }
        if (sb.st_size > KEVO_KNOWLEDGE_MAX_FILE_BYTES) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "knowledge file '%s' is over %d KiB", path,
                              KEVO_KNOWLEDGE_MAX_FILE_BYTES / 1024);
            break;
        }
        char *text = NULL;
        size_t len = 0;
        if ((st = kv_read_regular_file(path, KEVO_KNOWLEDGE_MAX_FILE_BYTES, &text, &len, err)))
            break;
        if (len > KEVO_KNOWLEDGE_MAX_FILE_BYTES || strlen(text) != len) {
            free(text);
            st = kevo_err_set(err, KEVO_ERR_PARSE, "knowledge file '%s' is over %d KiB or holds NUL bytes", path,
                              KEVO_KNOWLEDGE_MAX_FILE_BYTES / 1024);
            break;
        }
        int count = 0;
        st = pr_index_file(ins, names[i], text, &count, err);
        free(text);
        kb->nsections += count;
    }
    sqlite3_finalize(ins);
    for (int i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    if (!st && kb->nsections == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "no knowledge sections in '%s'", dir);
    if (st) {
        kevo_knowledge_close(kb);
        return st;
    }
    *out = kb;
    return KEVO_OK;
}

int kevo_knowledge_count(const kevo_knowledge *kb)
{
    return kb ? kb->nsections : 0;
}

void kevo_knowledge_hits_free(kevo_knowledge_hit *hits, int n)
{
    if (!hits)
        return;
    for (int i = 0; i < n; i++) {
        free(hits[i].file);
        free(hits[i].title);
        free(hits[i].tags);
        free(hits[i].body);
    }
    free(hits);
}

static char *pr_col(sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    return kv_strdup(t ? (const char *)t : "");
}

kevo_status kevo_knowledge_query(kevo_knowledge *kb, const char *query_terms, int k, kevo_knowledge_hit **hits,
                                 int *nhits, kevo_err *err)
{
    *hits = NULL;
    *nhits = 0;
    if (!kb)
        return kevo_err_set(err, KEVO_ERR_ARG, "no knowledge index");
    if (k < 1 || k > 64)
        return kevo_err_set(err, KEVO_ERR_ARG, "knowledge query for %d sections (1..64)", k);
    char q[PR_MAX_TERMS * (PR_MAX_TERM + 8) + 8];
    kevo_knowledge_fts_query(query_terms, q, sizeof q);
    if (!q[0])
        return KEVO_OK;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(kb->db,
                           "SELECT file, title, tags, body, bm25(ks, 4.0, 2.0, 1.0) AS r FROM ks WHERE ks MATCH ?1"
                           " ORDER BY r LIMIT ?2",
                           -1, &s, NULL) != SQLITE_OK)
        return kevo_err_set(err, KEVO_ERR_DB, "knowledge query: %s", sqlite3_errmsg(kb->db));
    sqlite3_bind_text(s, 1, q, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, k);
    kevo_knowledge_hit *h = calloc((size_t)k, sizeof *h);
    kevo_status st = h ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int n = 0, rc;
    while (!st && n < k && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        h[n].file = pr_col(s, 0);
        h[n].title = pr_col(s, 1);
        h[n].tags = pr_col(s, 2);
        h[n].body = pr_col(s, 3);
        h[n].score = sqlite3_column_double(s, 4);
        n++;
        if (!h[n - 1].file || !h[n - 1].title || !h[n - 1].tags || !h[n - 1].body)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    if (!st && n < k && rc != SQLITE_DONE)
        st = kevo_err_set(err, KEVO_ERR_DB, "knowledge query: %s", sqlite3_errmsg(kb->db));
    sqlite3_finalize(s);
    if (st) {
        kevo_knowledge_hits_free(h, n);
        return st;
    }
    if (n == 0) {
        free(h);
        h = NULL;
    }
    *hits = h;
    *nhits = n;
    return KEVO_OK;
}

void kevo_knowledge_close(kevo_knowledge *kb)
{
    if (!kb)
        return;
    sqlite3_close(kb->db);
    free(kb);
}

/* ---------------------------------------------------------------- prompt */

/* Read <dir>/<rel> into *out (caller frees); KEVO_ERR_NOT_FOUND when absent. */
static kevo_status pr_read(const char *dir, const char *rel, char **out, kevo_err *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path)
        return kevo_err_set(err, KEVO_ERR_ARG, "prompts path too long");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no prompt file '%s'", path);
    /* a regular file, read without blocking on a FIFO and within its cap */
    size_t len;
    kevo_status st = kv_read_regular_file(path, PR_PROMPT_FILE_MAX, out, &len, err);
    if (st)
        kevo_err_prefix(err, "prompt file");
    return st;
}

kevo_status kevo_prompt_check_dir(const char *prompts_dir, const char *op, kevo_err *err)
{
    if (!prompts_dir || !op || strlen(op) > 64)
        return kevo_err_set(err, KEVO_ERR_ARG, "no prompts folder or op");
    char rel[128], *text = NULL;
    snprintf(rel, sizeof rel, "ops/%s.md", op);
    kevo_status st = pr_read(prompts_dir, "system.md", &text, err);
    free(text);
    text = NULL;
    if (!st)
        st = pr_read(prompts_dir, rel, &text, err);
    free(text);
    if (st)
        return st;
    kevo_knowledge *kb = NULL; /* the knowledge folder: every file read and indexed once, as the run will */
    st = kevo_knowledge_open(prompts_dir, &kb, err);
    kevo_knowledge_close(kb);
    return st;
}

static bool pr_ident(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) && (unsigned char)*p < 0x80) && *p != '_')
            return false;
    return true;
}

static bool pr_has(const char *s, const char *sub)
{
    return s && strstr(s, sub) != NULL;
}

/* The dense fp16 ridge point (FLOP per byte of DRAM) of the arch's
 * data-center parts, as a range; false when unknown (core/arch.h). */
static bool pr_ridge(const char *arch, double *lo, double *hi)
{
    return kevo_arch_ridge(kevo_arch_find(arch), lo, hi);
}

/* Whether the op at the run's shape is memory-bound (1), compute-bound (2),
 * near the ridge (3), or unknown (0); the figures go into line. */
static int pr_bound(const kevo_prompt_in *in, kv_buf *line)
{
    const kevo_op *op = in->op ? kevo_op_find(in->op) : NULL;
    kevo_dtype dt;
    if (!op || !in->shape || !in->dtype || !kevo_dtype_parse(in->dtype, &dt))
        return 0;
    kevo_syms shape;
    kevo_err err;
    if (op->parse_shape(in->shape, &shape, &err) != KEVO_OK)
        return 0;
    double flops = op->flops(&shape), bytes = op->bytes(&shape, dt);
    if (!(flops > 0) || !(bytes > 0))
        return 0;
    double ai = flops / bytes, lo, hi;
    kv_buf_printf(line, "At this shape the op does %.3g GFLOP and must move at least %.3g MB: %.0f FLOP per byte",
                  flops / 1e9, bytes / 1e6, ai);
    if (!pr_ridge(in->arch, &lo, &hi)) {
        kv_buf_puts(line, ".\n");
        return 0;
    }
    int kind = ai < lo * 0.8 ? 1 : ai > hi * 1.25 ? 2 : 3;
    kv_buf_printf(line, "; the fp16 ridge point of %s parts is about %.0f%s%.0f FLOP per byte, so the op is %s.\n",
                  in->arch, lo, lo == hi ? "" : "-", hi,
                  kind == 1 ? "memory-bound (bytes decide)"
                  : kind == 2 ? "compute-bound (tensor-core throughput decides)"
                              : "near the ridge (bytes and FLOPs both matter)");
    return kind;
}

/* Query words from a failure message: identifiers of 4+ letters, the first 10. */
static void pr_msg_words(const char *msg, kv_buf *q)
{
    if (!msg)
        return;
    static const char *const skip[] = {"line", "error", "warning", "note", "from", "with", "this", "that", "have",
                                       "kevo", "file", "function", NULL};
    int n = 0;
    const char *p = msg;
    for (size_t walked = 0; *p && n < 10 && walked < 4000;) {
        while (*p && !isalpha((unsigned char)*p) && walked < 4000)
            p++, walked++;
        const char *s = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_') && (unsigned char)*p < 0x80)
            p++, walked++;
        size_t len = (size_t)(p - s);
        if (len < 4 || len > 40) {
            if (*p && p == s)
                p++, walked++;
            continue;
        }
        char w[41];
        memcpy(w, s, len);
        w[len] = '\0';
        bool skipped = false;
        for (int k = 0; skip[k] && !skipped; k++)
            skipped = strcasecmp(w, skip[k]) == 0;
        if (skipped)
            continue;
        kv_buf_printf(q, " %s", w);
        n++;
    }
}

/* The query for the parent's bottleneck and failure. */
static void pr_query(const kevo_prompt_in *in, int bound, kv_buf *q)
{
    const kevo_llm_node *p = in->parent;
    const char *fail = p->fail && *p->fail ? p->fail : NULL;
    kv_buf_puts(q, "ikbo");
    if (fail) {
        if (pr_has(fail, "compile"))
            kv_buf_puts(q, " compile error nvrtc ptxas");
        if (pr_has(fail, "crash"))
            kv_buf_puts(q, " ptxas wgmma");
        if (pr_has(fail, "load"))
            kv_buf_puts(q, " load entry extern");
        if (pr_has(fail, "launch") || pr_has(fail, "resource"))
            kv_buf_puts(q, " resources registers shared memory launch");
        if (pr_has(fail, "illegal"))
            kv_buf_puts(q, " illegal address tail mask bounds");
        if (pr_has(fail, "timeout") || pr_has(fail, "hang") || pr_has(fail, "deadlock"))
            kv_buf_puts(q, " timeout deadlock mbarrier parity expect_tx");
        if (pr_has(fail, "wrong") || pr_has(fail, "nan") || pr_has(fail, "verify"))
            kv_buf_puts(q, " verify tolerance nan unwritten tail race");
        if (pr_has(fail, "input_modified") || pr_has(fail, "rejected"))
            kv_buf_puts(q, " rules inputs const");
        if (pr_has(fail, "plan"))
            kv_buf_puts(q, " plan launches grid smem");
        pr_msg_words(p->fail_msg, q);
        return;
    }
    if (bound == 1)
        kv_buf_puts(q, " memory bandwidth vector loads bytes flight");
    else if (bound == 2)
        kv_buf_puts(q, " wgmma tensor core warp specialization pipeline");
    else if (bound == 3)
        kv_buf_puts(q, " roofline wgmma bandwidth");
    if (isfinite(p->roofline) && p->roofline < 0.5)
        kv_buf_puts(q, " occupancy latency stages");
    if (p->spill_bytes > 0)
        kv_buf_puts(q, " spill registers");
    if (p->regs >= 200)
        kv_buf_puts(q, " registers setmaxnreg");
    if (p->smem_bytes > 160 * 1024)
        kv_buf_puts(q, " shared memory occupancy");
    const char *fam = p->family;
    if (pr_has(fam, "ws"))
        kv_buf_puts(q, " warp specialization tma mbarrier");
    else if (pr_has(fam, "wgmma"))
        kv_buf_puts(q, " wgmma tma persistent");
    else if (pr_has(fam, "mem"))
        kv_buf_puts(q, " memory candidates");
    else if (pr_has(fam, "mma"))
        kv_buf_puts(q, " fusion epilogue alignment");
}

static void pr_num(kv_buf *b, const char *label, double v, const char *fmt, const char *unit)
{
    kv_buf_printf(b, "- %s: ", label);
    if (isfinite(v)) {
        kv_buf_printf(b, fmt, v);
        kv_buf_puts(b, unit);
    } else {
        kv_buf_puts(b, "unmeasured");
    }
    kv_buf_puts(b, "\n");
}

static void pr_int(kv_buf *b, const char *label, int v, const char *unit)
{
    if (v >= 0)
        kv_buf_printf(b, "- %s: %d%s\n", label, v, unit);
    else
        kv_buf_printf(b, "- %s: unknown\n", label);
}

static bool pr_failed(const kevo_llm_node *n)
{
    return n->fail && *n->fail && strcmp(n->fail, "none") != 0;
}

/* The plan keys a reply may give (prompts/system.md), in the order shown. */
static const char *const pr_plan_keys[] = {"params", "let", "workspace", "pad_k", "tmaps", "launches"};

/* A one-point space as a reply's plan block: only the keys a reply may set,
 * one per line, "params" as {"NAME": value} (the space's one value of each);
 * the family's description, constraints and cost model are left out (a
 * one-point space meets its constraints; the rest is the search's).  NULL
 * when space is not an object or memory runs out; caller frees. */
static char *pr_plan_view(const cJSON *space)
{
    if (!cJSON_IsObject(space))
        return NULL;
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_puts(&b, "{");
    bool first = true;
    for (size_t k = 0; k < KV_ARRAY_LEN(pr_plan_keys); k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(space, pr_plan_keys[k]);
        if (!v)
            continue;
        cJSON *shown = NULL;
        if (k == 0 && cJSON_IsArray(v)) { /* [{"name", "values": [x]}, ...] -> {"name": x} */
            shown = cJSON_CreateObject();
            const cJSON *e;
            cJSON_ArrayForEach(e, v)
            {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
                const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
                const cJSON *x = cJSON_IsArray(vals) ? cJSON_GetArrayItem(vals, 0) : NULL;
                if (shown && cJSON_IsString(n) && x)
                    cJSON_AddItemToObject(shown, n->valuestring, cJSON_Duplicate(x, true));
            }
        }
        char *txt = cJSON_PrintUnformatted(shown ? shown : v);
        cJSON_Delete(shown);
        if (!txt) {
            kv_buf_release(&b);
            return NULL;
        }
        kv_buf_printf(&b, "%s\n \"%s\": %s", first ? "" : ",", pr_plan_keys[k], txt);
        first = false;
        free(txt);
    }
    kv_buf_puts(&b, "\n}");
    return kv_buf_take(&b);
}

/* The parent: identity, measurements, failure, plan.  (The source is a part of its own.) */
static void pr_parent(const kevo_prompt_in *in, kv_buf *b)
{
    const kevo_llm_node *p = in->parent;
    kv_buf_puts(b, "# Parent\n\n- generator: ");
    pr_line(b, p->generator, 40);
    kv_buf_puts(b, "\n- family: ");
    pr_line(b, p->family, 64);
    kv_buf_puts(b, "\n- params: ");
    pr_line(b, p->params, KEVO_PROMPT_LINE_MAX * 2);
    kv_buf_puts(b, "\n- status: ");
    pr_line(b, p->status, 40);
    kv_buf_puts(b, "\n");
    pr_num(b, "median time", p->median_ms, "%.4g", " ms");
    pr_num(b, "throughput", p->tflops, "%.4g", " TFLOP/s");
    pr_num(b, "fraction of the roofline", p->roofline, "%.3f", "");
    pr_num(b, "speedup over the baseline", p->speedup, "%.3f", "x");
    pr_int(b, "registers per thread", p->regs, "");
    pr_int(b, "spilled bytes", p->spill_bytes, "");
    pr_int(b, "static shared memory", p->smem_bytes, " bytes");
    if (pr_failed(p)) {
        kv_buf_puts(b, "- failure: ");
        pr_line(b, p->fail, 40);
        kv_buf_puts(b, "\n");
        if (p->fail_msg && *p->fail_msg) {
            kv_buf msg;
            kv_buf_init(&msg);
            pr_message(&msg, p->fail_msg, KEVO_PROMPT_MSG_MAX);
            kv_buf_puts(b, "\nThe failure message:\n\n");
            pr_block(b, "text", msg.data ? msg.data : "", msg.len);
            kv_buf_release(&msg);
        }
    }
}

char *kevo_prompt_source_view(const char *src)
{
    if (!src)
        return NULL;
    kevo_lex lx;
    if (!kevo_lex_run(src, strlen(src), &lx))
        return NULL;
    kv_buf raw, out;
    kv_buf_init(&raw);
    kv_buf_init(&out);
    size_t at = 0; /* in lx.text: the first byte not yet copied */
    for (int i = 0; i <= lx.ntok; i++) {
        size_t end = i < lx.ntok ? lx.tok[i].off : lx.n;
        /* the gap before token i: whitespace and comments; comments go */
        for (size_t k = at; k < end;) {
            if (k + 1 < end && lx.text[k] == '/' && lx.text[k + 1] == '*') {
                const char *close = NULL;
                for (size_t q = k + 2; q + 1 < end; q++)
                    if (lx.text[q] == '*' && lx.text[q + 1] == '/') {
                        close = lx.text + q;
                        break;
                    }
                k = close ? (size_t)(close - lx.text) + 2 : end;
                kv_buf_puts(&raw, " ");
            } else if (k + 1 < end && lx.text[k] == '/' && lx.text[k + 1] == '/') {
                while (k < end && lx.text[k] != '\n')
                    k++;
            } else {
                kv_buf_append(&raw, lx.text + k, 1);
                k++;
            }
        }
        if (i < lx.ntok) {
            kv_buf_append(&raw, lx.text + lx.tok[i].off, lx.tok[i].len);
            at = lx.tok[i].off + lx.tok[i].len;
        }
    }
    kevo_lex_free(&lx);
    /* lines without trailing blanks; blank lines dropped */
    const char *t = raw.data ? raw.data : "";
    for (const char *line = t; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        size_t m = n;
        while (m > 0 && (line[m - 1] == ' ' || line[m - 1] == '\t' || line[m - 1] == '\r'))
            m--;
        size_t lead = 0;
        while (lead < m && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        if (lead < m) {
            kv_buf_append(&out, line, m);
            kv_buf_puts(&out, "\n");
        }
        line += n + (nl ? 1 : 0);
    }
    kv_buf_release(&raw);
    if (!out.data) /* all comments, or empty */
        kv_buf_puts(&out, "");
    return kv_buf_take(&out);
}

/* The parent's launch plan as a reply's plan block (left out with the
 * source: a kernel written from scratch names entries of its own). */
static void pr_plan(const kevo_prompt_in *in, kv_buf *b, bool omitted)
{
    const kevo_llm_node *p = in->parent;
    if (omitted) {
        kv_buf_puts(b, "\n## The parent's launch plan\n\n(left out with its source: a new kernel needs a plan of its "
                       "own, whose launches name the entries of the new source, as in the system prompt's "
                       "example)\n");
        return;
    }
    kv_buf_puts(b, "\n## The parent's launch plan (one-point space)\n\n");
    const char *sp = p->space ? p->space : "";
    size_t sl = strnlen(sp, KEVO_PROMPT_SPACE_MAX + 1);
    cJSON *j = sl <= KEVO_PROMPT_SPACE_MAX ? cJSON_Parse(sp) : NULL;
    char *pretty = j ? pr_plan_view(j) : NULL;
    if (pretty && strlen(pretty) <= KEVO_PROMPT_SPACE_MAX * 2) {
        pr_block(b, "json", pretty, strlen(pretty));
    } else if (sl > 0) {
        size_t n = pr_cut(sp, sl, KEVO_PROMPT_SPACE_MAX);
        pr_block(b, "json", sp, n);
        if (n < sl)
            kv_buf_puts(b, "[the plan was cut here to fit the prompt]\n");
    } else {
        kv_buf_puts(b, "(none given)\n");
    }
    free(pretty);
    cJSON_Delete(j);
}

/* How the parent's source is shown. */
typedef enum {
    PR_SRC_WHOLE = 0,    /* as stored */
    PR_SRC_STRIPPED = 1, /* without comments and blank lines (kevo_prompt_source_view) */
    PR_SRC_CUT = 2,      /* stripped, with keep bytes around a cut middle */
    PR_SRC_OMITTED = 3,  /* left out: the task asks for a new kernel */
} pr_src_mode;

/* The parent's source in one of the modes above (src: the stored text or
 * its stripped view, as the mode says). */
static void pr_source(kv_buf *b, const char *src, pr_src_mode mode, size_t keep)
{
    size_t len = strlen(src);
    kv_buf_puts(b, "\n## The parent's source\n\n");
    if (mode == PR_SRC_OMITTED) {
        kv_buf_printf(b, "(left out: its %zu bytes do not fit this prompt's limit, --llm-prompt-chars)\n", len);
        return;
    }
    if (mode == PR_SRC_STRIPPED)
        kv_buf_puts(b, "(comments and blank lines left out)\n\n");
    if (mode != PR_SRC_CUT || keep >= len) {
        pr_block(b, "cuda", src, len);
        return;
    }
    /* head and tail on line boundaries */
    size_t head = pr_cut(src, len, keep * 2 / 3);
    while (head > 0 && src[head - 1] != '\n')
        head--;
    size_t tail = len - (keep - keep * 2 / 3);
    while (tail < len && src[tail - 1] != '\n')
        tail++;
    if (tail < head)
        tail = head;
    kv_buf tmp;
    kv_buf_init(&tmp);
    kv_buf_append(&tmp, src, head);
    kv_buf_printf(&tmp, "// [... %zu bytes of the parent's source (comments left out) cut here to fit the prompt ...]\n",
                  tail - head);
    kv_buf_append(&tmp, src + tail, len - tail);
    pr_block(b, "cuda", tmp.data ? tmp.data : "", tmp.len);
    kv_buf_release(&tmp);
}

/* Siblings: the latest `show` of them (0: all that fit the fixed maximum). */
static void pr_siblings(const kevo_prompt_in *in, kv_buf *b, int show)
{
    int n = in->nsiblings > 0 && in->siblings ? in->nsiblings : 0;
    kv_buf_puts(b, "\n# Siblings: earlier rewrites of this parent\n\n");
    if (n == 0) {
        kv_buf_puts(b, "None yet.\n");
        return;
    }
    int first = n > show ? n - show : 0;
    if (first > 0)
        kv_buf_printf(b, "[%d older sibling%s left out to fit the prompt]\n", first, first == 1 ? "" : "s");
    for (int i = first; i < n; i++) {
        const kevo_llm_node *s = &in->siblings[i];
        kv_buf_printf(b, "%d. ", i + 1);
        pr_line(b, s->generator, 40);
        kv_buf_puts(b, " (");
        pr_line(b, s->family, 64);
        if (s->params && *s->params) {
            kv_buf_puts(b, ", ");
            pr_line(b, s->params, KEVO_PROMPT_LINE_MAX);
        }
        kv_buf_puts(b, "): ");
        if (pr_failed(s)) {
            kv_buf_puts(b, "failed, ");
            pr_line(b, s->fail, 40);
            if (s->fail_msg && *s->fail_msg) {
                kv_buf_puts(b, ": ");
                pr_line(b, s->fail_msg, 160);
            }
        } else {
            pr_line(b, s->status, 40);
            if (isfinite(s->median_ms))
                kv_buf_printf(b, ", %.4g ms", s->median_ms);
            if (isfinite(s->speedup))
                kv_buf_printf(b, ", speedup %.3fx", s->speedup);
            if (isfinite(s->roofline))
                kv_buf_printf(b, ", %.2f of the roofline", s->roofline);
            if (s->spill_bytes > 0)
                kv_buf_printf(b, ", %d bytes spilled", s->spill_bytes);
        }
        if (s->summary && *s->summary) {
            kv_buf_puts(b, "; it changed: ");
            pr_line(b, s->summary, KEVO_PROMPT_LINE_MAX);
        }
        kv_buf_puts(b, "\n");
    }
}

static void pr_knowledge(const kevo_knowledge_hit *h, int nh, int show, const char *query, kv_buf *b)
{
    kv_buf_puts(b, "\n# Knowledge\n\n");
    if (nh == 0) {
        kv_buf_puts(b, "No notes matched this parent.\n");
        return;
    }
    if (show == 0) {
        kv_buf_printf(b, "[%d retrieved note%s left out to fit the prompt]\n", nh, nh == 1 ? "" : "s");
        return;
    }
    kv_buf_puts(b, "Notes retrieved for this parent (query: ");
    pr_line(b, query, 300);
    kv_buf_puts(b, "):\n");
    for (int i = 0; i < nh && i < show; i++) {
        kv_buf_puts(b, "\n## ");
        pr_line(b, h[i].title, 200);
        kv_buf_puts(b, " (");
        pr_line(b, h[i].file, 80);
        kv_buf_puts(b, ")\n\n");
        pr_put_clean(b, h[i].body, strlen(h[i].body), true);
        kv_buf_puts(b, "\n");
    }
    if (show < nh)
        kv_buf_printf(b, "\n[%d lower-ranked note%s left out to fit the prompt]\n", nh - show,
                      nh - show == 1 ? "" : "s");
}

static void pr_task(const kevo_prompt_in *in, int bound, pr_src_mode mode, kv_buf *b)
{
    const kevo_llm_node *p = in->parent;
    kv_buf_puts(b, "\n# Task\n\n");
    if (pr_failed(p)) {
        kv_buf_puts(b, "The parent fails (");
        pr_line(b, p->fail, 40);
        kv_buf_puts(b, "). Find the cause from the message above and fix it; keep what the parent does well. ");
        if (pr_has(p->fail, "timeout"))
            kv_buf_puts(b, "A timeout is almost always a deadlock: check barrier counts, expect_tx bytes and phases. ");
        if (pr_has(p->fail, "rejected") || pr_has(p->fail, "input_modified"))
            kv_buf_puts(b, "The static check or the input checksums refused it: follow the rules of the system "
                           "prompt. ");
        if (pr_has(p->fail, "parse"))
            kv_buf_puts(b, "The reply could not be read: follow the reply format exactly. ");
    } else if (isfinite(p->median_ms)) {
        kv_buf_printf(b, "Make the kernel faster while keeping it correct. The parent takes %.4g ms", p->median_ms);
        if (isfinite(p->speedup))
            kv_buf_printf(b, " (%.3fx the baseline)", p->speedup);
        if (isfinite(in->best_speedup))
            kv_buf_printf(b, "; the best kernel of this run so far reaches %.3fx", in->best_speedup);
        kv_buf_puts(b, ". ");
        if (bound == 1)
            kv_buf_puts(b, "The op is memory-bound here: cut bytes and passes, widen accesses, keep more in flight. ");
        else if (bound == 2)
            kv_buf_puts(b, "The op is compute-bound here: keep the tensor cores busy. ");
        if (isfinite(p->roofline))
            kv_buf_printf(b, "The parent reaches %.0f%% of the roofline. ", p->roofline * 100);
        if (p->spill_bytes > 0)
            kv_buf_puts(b, "It spills registers: remove the spills first. ");
    } else {
        kv_buf_puts(b, "The parent has not been measured yet. Improve it from its source and the notes. ");
    }
    kv_buf_puts(b, "Do not repeat what the siblings tried and failed at.\n\n");
    if (mode == PR_SRC_OMITTED)
        kv_buf_puts(b, "The parent's source is not shown: write a new kernel for this op from scratch, correct for "
                       "every shape, with the parent's plan and numbers as a guide. Reply in this order: one "
                       "```cuda block with the whole device source (start your reply with it), then one ```json "
                       "block with its launch plan, then one sentence saying what the kernel does.\n");
    else if (mode == PR_SRC_CUT)
        kv_buf_puts(b, "The parent's source is shown with its middle cut. Reply with either SEARCH/REPLACE edits "
                       "against the parts shown (and optionally a ```json plan), or one ```cuda block with a whole "
                       "new kernel written from scratch and one ```json plan block with its launches (a new source "
                       "cannot keep the cut part); then one sentence saying what you changed.\n");
    else
        kv_buf_puts(b, "Reply with either one ```cuda block with the whole new source (start your reply with it; "
                       "optionally one ```json plan block after it), or SEARCH/REPLACE edits against the parent's "
                       "source; then one sentence saying what you changed.\n");
}

kevo_status kevo_prompt_build(const char *prompts_dir, kevo_knowledge *kb, const kevo_prompt_in *in, kv_buf *system,
                              kv_buf *user, char *query_used, size_t qn, kevo_err *err)
{
    if (query_used && qn)
        query_used[0] = '\0';
    if (!prompts_dir || !in || !in->parent || !system || !user)
        return kevo_err_set(err, KEVO_ERR_ARG, "prompt without a prompts folder, a parent or output buffers");
    if (!pr_ident(in->op))
        return kevo_err_set(err, KEVO_ERR_ARG, "bad op name for a prompt");
    char *sys = NULL, *opdesc = NULL;
    char rel[128];
    snprintf(rel, sizeof rel, "ops/%s.md", in->op);
    kevo_status st = pr_read(prompts_dir, "system.md", &sys, err);
    if (!st)
        st = pr_read(prompts_dir, rel, &opdesc, err);
    if (st) {
        free(sys);
        return st;
    }

    /* the fixed parts */
    kv_buf head, abi, parent, plan, plan_out, query;
    kv_buf_init(&head);
    kv_buf_init(&abi);
    kv_buf_init(&parent);
    kv_buf_init(&plan);
    kv_buf_init(&plan_out);
    kv_buf_init(&query);
    kv_buf_puts(&head, "# Operator\n\n");
    pr_put_clean(&head, opdesc, strlen(opdesc), true);
    kv_buf_puts(&head, "\n## This run\n\n- shape: ");
    pr_line(&head, in->shape, 300);
    kv_buf_puts(&head, "\n- dtype: ");
    pr_line(&head, in->dtype, 20);
    kv_buf_puts(&head, "\n- arch: ");
    pr_line(&head, in->arch, 20);
    kv_buf_puts(&head, "\n\n");
    int bound = pr_bound(in, &head);
    kv_buf_puts(&abi, "\n# ABI header (kevo puts it in front of your source)\n\n");
    const char *ah = in->abi_header ? in->abi_header : "";
    pr_block(&abi, "c", ah, pr_cut(ah, strlen(ah), 64 * 1024));
    pr_parent(in, &parent);
    pr_plan(in, &plan, false);    /* shown with the source */
    pr_plan(in, &plan_out, true); /* left out with it */

    /* knowledge */
    pr_query(in, bound, &query);
    char fts[PR_MAX_TERMS * (PR_MAX_TERM + 8) + 8];
    kevo_knowledge_fts_query(query.data ? query.data : "", fts, sizeof fts);
    if (query_used && qn)
        snprintf(query_used, qn, "%s", fts);
    kevo_knowledge_hit *hits = NULL;
    int nhits = 0;
    if (kb)
        st = kevo_knowledge_query(kb, query.data ? query.data : "", KEVO_PROMPT_KNOWLEDGE_K, &hits, &nhits, err);

    /* fit: knowledge, then siblings, then the source's middle */
    int nsib = in->siblings && in->nsiblings > 0 ? in->nsiblings : 0;
    int show_sib = nsib < KEVO_PROMPT_SIBLINGS_MAX ? nsib : KEVO_PROMPT_SIBLINGS_MAX, show_k = nhits;
    const char *whole = in->parent->source ? in->parent->source : "";
    char *view = NULL; /* the stripped view, made when first needed */
    pr_src_mode mode = PR_SRC_WHOLE;
    size_t keep = 0;
    kv_buf out;
    kv_buf_init(&out);
    bool fits = false;
    for (int attempt = 0; !st && attempt < 200 && !fits; attempt++) {
        kv_buf src, sib, know, task;
        kv_buf_init(&src);
        kv_buf_init(&sib);
        kv_buf_init(&know);
        kv_buf_init(&task);
        const kv_buf *pl = mode == PR_SRC_OMITTED ? &plan_out : &plan;
        kv_buf_append(&src, pl->data ? pl->data : "", pl->len);
        pr_source(&src, mode == PR_SRC_WHOLE ? whole : view, mode, keep);
        pr_siblings(in, &sib, show_sib);
        if (kb)
            pr_knowledge(hits, nhits, show_k, fts, &know);
        pr_task(in, bound, mode, &task);
        size_t total = head.len + abi.len + parent.len + src.len + sib.len + know.len + task.len;
        if (in->max_chars == 0 || total <= in->max_chars) {
            fits = true;
            kv_buf *parts[] = {&head, &abi, &parent, &src, &sib, &know, &task};
            for (size_t i = 0; i < KV_ARRAY_LEN(parts) && !st; i++)
                if (parts[i]->len)
                    st = kv_buf_append(&out, parts[i]->data, parts[i]->len);
            if (st)
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building a prompt");
        } else if (show_k > 0) {
            show_k--;
        } else if (show_sib > 0) {
            show_sib = show_sib > 4 ? show_sib / 2 : show_sib - 1;
        } else if (mode == PR_SRC_WHOLE) {
            view = kevo_prompt_source_view(whole);
            if (!view)
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building a prompt");
            mode = PR_SRC_STRIPPED;
        } else if (mode != PR_SRC_OMITTED) {
            /* cut the stripped view's middle; below 40% of it, leave it out */
            size_t over = total - in->max_chars, len = strlen(view);
            size_t cur = mode == PR_SRC_CUT ? keep : len;
            size_t marker = 256;
            if (cur <= over + marker + 512 || cur - over - marker < len * 2 / 5) {
                mode = PR_SRC_OMITTED;
            } else {
                keep = cur - over - marker;
                mode = PR_SRC_CUT;
            }
        } else {
            st = kevo_err_set(err, KEVO_ERR_ARG,
                              "a prompt cap of %zu bytes is too small: the fixed parts take %zu bytes",
                              in->max_chars, total - src.len);
        }
        kv_buf_release(&src);
        kv_buf_release(&sib);
        kv_buf_release(&know);
        kv_buf_release(&task);
    }
    if (!st && !fits)
        st = kevo_err_set(err, KEVO_ERR_ARG, "unable to fit the prompt into %zu bytes", in->max_chars);
    if (!st) {
        size_t sys_len = strlen(sys);
        st = pr_put_clean(system, sys, sys_len, true);
        if (!st)
            st = kv_buf_append(user, out.data ? out.data : "", out.len);
        if (st)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building a prompt");
    }
    kv_buf_release(&out);
    free(view);
    kevo_knowledge_hits_free(hits, nhits);
    kv_buf_release(&head);
    kv_buf_release(&abi);
    kv_buf_release(&parent);
    kv_buf_release(&plan);
    kv_buf_release(&plan_out);
    kv_buf_release(&query);
    free(sys);
    free(opdesc);
    return st;
}
