/* fuzz_emit.c — libFuzzer target: random DB text through the emitters that
 * put DB strings in front of a reader.
 *
 * The input's lines are the strings of one run and its candidates, as a
 * crafted DB would hold them: the run's op, shape, dtype, arch, policy,
 * families, device, status and stop reason, then per candidate its family,
 * params, status, failure kind and failure message, then the edges'
 * operators.  They are stored in a kevo DB (a real file, kevo_db_open) as
 * run A; run B gets the same rows with every string replaced by "x".
 *   - The SVG emitter (kevo_report_svg) draws each run: A's document is
 *     well-formed, holds only the elements and attributes the emitter
 *     writes (tests/fuzz/svg_check.h), and the same elements in the same
 *     order as B's: DB text opened no element, link or image.
 *   - The terminal cleaner (kv_term_clean) leaves of every string no
 *     control character (C0, DEL, C1), only well-formed UTF-8, and never
 *     more bytes than it had.
 *   - The Markdown cell emitter of the export README (kevo_emit_md_cell)
 *     leaves of every string text that opens nothing: each character
 *     Markdown or HTML gives a meaning ([ ] ( ) ! * _ ~ # | < > ` &) only
 *     escaped (a backslash before it, or an entity kevo wrote), no control
 *     character, and no line break.
 * Nothing may crash, leak or reach undefined behaviour. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/report.h"
#include "export/emit.h"
#include "db/store.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/svg_check.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CANDS 4
#define FZ_RUN_FIELDS 9
#define FZ_CAND_FIELDS 5
#define FZ_FIELDS (FZ_RUN_FIELDS + FZ_CANDS * FZ_CAND_FIELDS + FZ_CANDS)

static kevo_db *db;
static char dbpath[64];
static int uses;

/* The DB and its WAL files gone (also at exit: libFuzzer's time limit ends the
 * run with exit(), which would leave the last one in /tmp). */
static void fz_db_remove(void)
{
    if (!db)
        return;
    kevo_db_close(db);
    db = NULL;
    char side[96];
    unlink(dbpath);
    snprintf(side, sizeof side, "%s-wal", dbpath);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", dbpath);
    unlink(side);
}

/* A fresh DB every 256 inputs, so the file stays small. */
static void fz_db(void)
{
    static bool registered;
    if (db && uses++ < 256)
        return;
    fz_db_remove();
    if (!registered)
        registered = atexit(fz_db_remove) == 0;
    uses = 0;
    snprintf(dbpath, sizeof dbpath, "/tmp/kevo-fuzz-emit-%ld.db", (long)getpid());
    unlink(dbpath);
    kevo_err err;
    if (kevo_db_open(dbpath, true, &db, &err) != KEVO_OK)
        abort();
}

/* Run and candidates with the strings f[0..FZ_FIELDS) (or "x" for each when
 * plain); the run's id in *run. */
static void fz_store(char **f, bool plain, int64_t *run)
{
    const char *x = "x";
#define S(i) (plain ? x : f[i])
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "%s", S(0));
    snprintf(r.shape, sizeof r.shape, "%s", S(1));
    snprintf(r.dtype, sizeof r.dtype, "%s", S(2));
    snprintf(r.arch, sizeof r.arch, "%s", S(3));
    snprintf(r.policy, sizeof r.policy, "%s", S(4));
    snprintf(r.families, sizeof r.families, "%s", S(5));
    snprintf(r.device, sizeof r.device, "%s", S(6));
    snprintf(r.status, sizeof r.status, "%s", S(7));
    snprintf(r.stop_reason, sizeof r.stop_reason, "%s", S(8));
    kevo_err err;
    /* the run's generator: its generated families are drawn as squares, its name (the input's) in the legend;
       run B's is "llm", and its families are "llm_<hex>" exactly where A's belong to A's generator */
    kevo_run_gen_row a_gen = {.options = "{}"};
    snprintf(a_gen.name, sizeof a_gen.name, "%s", f[0][0] ? f[0] : "g");
    kevo_run_gen_row fz_gen = a_gen;
    if (plain)
        snprintf(fz_gen.name, sizeof fz_gen.name, "%s", "llm");
    if (kevo_db_run_insert(db, &r, &err) != KEVO_OK || kevo_db_run_generators_put(db, r.id, &fz_gen, 1, &err))
        abort();
    *run = r.id;
    int64_t ids[FZ_CANDS];
    for (int k = 0; k < FZ_CANDS; k++) {
        char **c = f + FZ_RUN_FIELDS + k * FZ_CAND_FIELDS;
        kevo_cand_row row;
        kevo_cand_row_init(&row);
        row.run_id = r.id;
        row.seq = k + 1;
        snprintf(row.family, sizeof row.family, "%s", c[0]);
        if (plain) /* whether A's generator made it (a square) is kept: decided on A's family and generator */
            snprintf(row.family, sizeof row.family, "%s",
                     strcmp(kevo_report_generator(row.family, &a_gen, 1), "template") != 0 ? "llm_000000000000" : x);
        kv_buf pj; /* (family, params) is unique in a run: the candidate's number after the text */
        kv_buf_init(&pj);
        kv_buf_printf(&pj, "%s%d", plain ? x : c[1], k);
        row.params = kv_buf_take(&pj);
        snprintf(row.status, sizeof row.status, "%s", plain ? x : c[2]);
        snprintf(row.fail, sizeof row.fail, "%s", plain ? x : c[3]);
        row.fail_msg = kv_strdup(plain ? x : c[4]);
        row.speedup = 1.0 + k; /* fixed figures: the drawing's structure depends on them, not on the text */
        row.median_ms = 1.0 / (1.0 + k);
        if (kevo_db_cand_insert(db, &row, &err) != KEVO_OK) {
            fprintf(stderr, "fuzz_emit: %s\n", err.msg);
            abort();
        }
        ids[k] = row.id;
        kevo_cand_row_release(&row);
    }
    for (int k = 1; k < FZ_CANDS; k++) {
        const char *op = plain ? x : f[FZ_RUN_FIELDS + FZ_CANDS * FZ_CAND_FIELDS + k];
        if (!*op) /* an edge always names its operator */
            op = x;
        if (kevo_db_edge_insert(db, r.id, ids[k - 1], ids[k], op, &err) != KEVO_OK)
            abort();
    }
#undef S
}

/* The length of the well-formed UTF-8 character at u (any code point but a
 * surrogate, no overlong form), 0 when there is none. */
static size_t fz_utf8(const unsigned char *u, const unsigned char *end)
{
    unsigned char c = u[0];
    if (c < 0x80)
        return 1;
    size_t n = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (!n || (size_t)(end - u) < n)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((u[k] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && u[1] < 0xA0) || (c == 0xED && u[1] >= 0xA0) || (c == 0xF0 && u[1] < 0x90) ||
        (c == 0xF4 && u[1] >= 0x90))
        return 0;
    return n;
}

/* The terminal cleaner on one string: no control character, well-formed
 * UTF-8, not longer. */
static void fz_term(const char *s)
{
    size_t n = strlen(s);
    char *t = kv_strdup(s);
    if (!t)
        return;
    kv_term_clean(t);
    size_t m = strlen(t);
    if (m > n)
        abort();
    const unsigned char *u = (const unsigned char *)t, *end = u + m;
    while (u < end) {
        size_t k = fz_utf8(u, end);
        if (!k || *u < 0x20 || *u == 0x7f || (u[0] == 0xC2 && u[1] < 0xA0))
            abort(); /* a control (tab and line breaks included: a terminal line stays one line) or bad UTF-8 */
        u += k;
    }
    free(t);
}

/* The Markdown cell emitter on one string: every meaningful character
 * escaped, no control character. */
static void fz_md(const char *s)
{
    kv_buf b;
    kv_buf_init(&b);
    if (kevo_emit_md_cell(&b, s) != KEVO_OK)
        abort();
    const char *t = b.data ? b.data : "";
    for (size_t i = 0; t[i]; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c < 0x20 || c == 0x7f)
            abort(); /* a control character or a line break: a table row stays one row */
        if (c == '\\') { /* an escape: the next character is literal */
            if (!t[i + 1] || !strchr("|\\[]()!*_~#+-.{}", t[i + 1]))
                abort();
            i++;
            continue;
        }
        if (c == '&') { /* only the entities the emitter writes */
            if (strncmp(t + i, "&amp;", 5) && strncmp(t + i, "&lt;", 4) && strncmp(t + i, "&gt;", 4))
                abort();
            continue;
        }
        if (strchr("[]()!*_~#|<>`", c))
            abort(); /* unescaped: it could open a link, an image, emphasis, a cell or HTML */
    }
    kv_buf_release(&b);
}

static void fz_svg(int64_t run, kv_buf *names)
{
    kv_buf out;
    kv_buf_init(&out);
    kevo_err err;
    if (kevo_report_svg(db, run, &out, &err) != KEVO_OK)
        abort();
    const char *why = svgc_check(out.data, out.len, names);
    if (why) {
        fprintf(stderr, "fuzz_emit: %s\n%s\n", why, out.data);
        abort();
    }
    kv_buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    char *f[FZ_FIELDS], *rest = text;
    for (int i = 0; i < FZ_FIELDS; i++)
        f[i] = *rest ? fz_line(rest, &rest) : rest;
    for (int i = 0; i < FZ_FIELDS; i++) {
        fz_term(f[i]);
        fz_md(f[i]);
    }
    fz_db();
    int64_t a, b;
    fz_store(f, false, &a);
    fz_store(f, true, &b);
    kv_buf na, nb;
    kv_buf_init(&na);
    kv_buf_init(&nb);
    fz_svg(a, &na);
    fz_svg(b, &nb);
    if (na.len != nb.len || (na.len && memcmp(na.data, nb.data, na.len) != 0)) {
        fprintf(stderr, "fuzz_emit: DB text changed the elements:\n%s\nvs\n%s\n", na.data ? na.data : "",
                nb.data ? nb.data : "");
        abort(); /* DB text opened or closed an element */
    }
    kv_buf_release(&na);
    kv_buf_release(&nb);
    free(text);
    return 0;
}
