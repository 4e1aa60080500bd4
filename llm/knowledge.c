/* knowledge.c — the knowledge index: prompts/knowledge/ *.md split into
 * "## " sections, indexed in an in-memory SQLite FTS5 table and ranked by
 * bm25 (llm/prompt.h says how). */
#define _POSIX_C_SOURCE 200809L
#include "llm/prompt.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "llm/prompt_int.h"

struct kevo_knowledge {
    sqlite3 *db;
    int nsections;
};


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
                int rc = sqlite3_bind_text(ins, 1, title.data ? title.data : "", -1, SQLITE_TRANSIENT);
                rc = rc ? rc : sqlite3_bind_text(ins, 2, tags.data ? tags.data : "", -1, SQLITE_TRANSIENT);
                rc = rc ? rc : sqlite3_bind_text(ins, 3, cut.data, -1, SQLITE_TRANSIENT);
                rc = rc ? rc : sqlite3_bind_text(ins, 4, name, -1, SQLITE_TRANSIENT);
                if (rc != SQLITE_OK || sqlite3_step(ins) != SQLITE_DONE)
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
    int rc = sqlite3_bind_text(s, 1, q, -1, SQLITE_TRANSIENT);
    rc = rc ? rc : sqlite3_bind_int(s, 2, k);
    if (rc != SQLITE_OK) {
        kevo_status bst = kevo_err_set(err, KEVO_ERR_DB, "knowledge query: %s", sqlite3_errmsg(kb->db));
        sqlite3_finalize(s);
        return bst;
    }
    kevo_knowledge_hit *h = calloc((size_t)k, sizeof *h);
    kevo_status st = h ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int n = 0;
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
