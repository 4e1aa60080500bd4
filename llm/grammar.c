/* grammar.c — the GBNF grammar of a line-edit reply (grammar.h). */
#include "llm/grammar.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* One line: [p, p + n), without its newline, and its brace signature. */
typedef struct gr_line {
    const char *p;
    size_t n;
    int sig; /* closes * 2 + opens: 0 none, 1 opens a block, 2 closes one, 3 closes and opens ("} else {") */
} gr_line;

/* A line's brace signature (gr_line.sig), braces in string and character
 * literals and after "//" left out; -1 when it closes or opens more than one
 * block. */
static int gr_brace_sig(const char *p, size_t n)
{
    int d = 0, lo = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '/' && i + 1 < n && p[i + 1] == '/')
            break;
        if (c == '"' || c == '\'') {
            for (i++; i < n && p[i] != c; i++)
                i += p[i] == '\\';
            continue;
        }
        d += (c == '{') - (c == '}');
        lo = d < lo ? d : lo;
    }
    int closes = -lo, opens = d - lo;
    return closes > 1 || opens > 1 ? -1 : closes * 2 + opens;
}

/* Times [p, p + n) occurs as a whole line of text, counting up to 2. */
static int gr_whole_line_count(const char *text, const char *p, size_t n)
{
    int c = 0;
    for (const char *s = text; *s && c < 2;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        c += len == n && !memcmp(s, p, n);
        s += len + (nl ? 1 : 0);
    }
    return c;
}

/* Whether a line may be offered as a SEARCH line: printable ASCII, short,
 * with at least 4 non-blank characters. */
static bool gr_line_ok(const char *p, size_t n)
{
    if (n == 0 || n > KEVO_GRAMMAR_LINE_MAX)
        return false;
    int solid = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\t')
            continue;
        if (c < 0x20 || c > 0x7e)
            return false;
        solid += c != ' ';
    }
    return solid >= 4;
}

/* The line as a GBNF string literal with its newline: "...\n". */
static kevo_status gr_literal(kv_buf *b, const char *p, size_t n)
{
    kevo_status st = kv_buf_puts(b, "\"");
    for (size_t i = 0; i < n && !st; i++) {
        char c = p[i];
        if (c == '"' || c == '\\')
            st = kv_buf_printf(b, "\\%c", c);
        else if (c == '\t')
            st = kv_buf_puts(b, "\\t");
        else
            st = kv_buf_append(b, &c, 1);
    }
    return st ? st : kv_buf_puts(b, "\\n\"");
}

/* The rules besides the SEARCH lines s<sig>: an edit pairs a SEARCH line
 * with a REPLACE r<sig> of the same brace signature, so every block the
 * replacement opens it closes.  A REPLACE line is one of
 *   ln  no brace        inl "{ .. }" on one line
 *   opn one '{'         cls one '}'        mid "} .. {"
 * and b is a balanced run of them; a line never starts with '<', '=' or '>'
 * (it would read as a marker). */
static kevo_status gr_rules(kv_buf *b, int max_blocks, const gr_line *keep, int nk)
{
    bool has[4] = {false, false, false, false};
    for (int i = 0; i < nk; i++)
        has[keep[i].sig] = true;
    kevo_status st = kv_buf_printf(b, "root ::= edit{1,%d} note\n"
                                      "edit ::= \"<<<<<<< SEARCH\\n\" pair \">>>>>>> REPLACE\\n\"\n"
                                      "pair ::= ", max_blocks);
    bool first = true;
    for (int sig = 0; sig < 4 && !st; sig++) {
        if (!has[sig])
            continue;
        st = kv_buf_printf(b, "%ss%d \"=======\\n\" r%d", first ? "" : " | ", sig, sig);
        first = false;
    }
    static const char *const rep[4] = {"bl*", "bl* opn d1", "d1 cls bl*", "d1 (mid | cls bl* opn) d1"};
    if (!st)
        st = kv_buf_puts(b, "\n");
    for (int sig = 0; sig < 4 && !st; sig++)
        if (has[sig])
            st = kv_buf_printf(b, "r%d ::= %s\n", sig, rep[sig]);
    if (!st)
        st = kv_buf_printf(b, "d1 ::= (bl | mid)*\n"
                              "bl ::= ln | inl | opn d1 cls\n"
                              "hd ::= [^<=>{}\\n] [^{}\\n]{0,%d}\n"
                              "tl ::= [^{}\\n]{0,%d}\n"
                              "ln ::= hd \"\\n\" | \"\\n\"\n"
                              "inl ::= hd? \"{\" tl \"}\" tl \"\\n\"\n"
                              "opn ::= hd? \"{\" tl \"\\n\"\n"
                              "cls ::= hd? \"}\" tl \"\\n\"\n"
                              "mid ::= hd? \"}\" tl \"{\" tl \"\\n\"\n"
                              "note ::= [^<=>`\\n] [^\\n]{0,299}\n",
                           KEVO_GRAMMAR_LINE_MAX - 1, KEVO_GRAMMAR_LINE_MAX - 1);
    return st;
}

kevo_status kevo_llm_edit_grammar(const char *shown, const char *base, int max_blocks, char **out, int *nlines,
                                  kevo_err *err)
{
    *out = NULL;
    *nlines = 0;
    if (!shown || !base || max_blocks < 1 || max_blocks > 8)
        return kevo_err_set(err, KEVO_ERR_ARG, "edit grammar: no text, or max_blocks not in 1..8");
    gr_line *keep = calloc(KEVO_GRAMMAR_MAX_LINES, sizeof *keep);
    if (!keep)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int nk = 0;
    for (const char *p = shown; *p && nk < KEVO_GRAMMAR_MAX_LINES;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        bool seen = false;
        for (int i = 0; i < nk && !seen; i++)
            seen = keep[i].n == n && !memcmp(keep[i].p, p, n);
        int sig = seen ? -1 : gr_brace_sig(p, n);
        if (sig >= 0 && gr_line_ok(p, n) && gr_whole_line_count(base, p, n) == 1)
            keep[nk++] = (gr_line){p, n, sig};
        p += n + (nl ? 1 : 0);
    }
    if (nk == 0) {
        free(keep);
        return KEVO_OK;
    }
    kv_buf b;
    kv_buf_init(&b);
    kevo_status st = gr_rules(&b, max_blocks, keep, nk);
    for (int sig = 0; sig < 4 && !st; sig++) {
        bool first = true;
        for (int i = 0; i < nk && !st; i++) {
            if (keep[i].sig != sig)
                continue;
            st = kv_buf_printf(&b, first ? "s%d ::= " : " |\n  ", sig); /* a rule goes on after a '|' */
            if (!st)
                st = gr_literal(&b, keep[i].p, keep[i].n);
            first = false;
        }
        if (!st && !first)
            st = kv_buf_puts(&b, "\n");
    }
    free(keep);
    if (st) {
        kv_buf_release(&b);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    *out = kv_buf_take(&b);
    *nlines = nk;
    return KEVO_OK;
}
