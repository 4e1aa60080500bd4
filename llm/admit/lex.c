/* lex.c — tokenizer for CUDA C++ device source (see lex.h). */
#include "llm/admit/lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Punctuators, longest first within each leading character's group. */
static const struct {
    const char *text;
    const char *spell;
} lx_puncts[] = {
    {"%:%:", "##"}, {">>=", ">>="}, {"<<=", "<<="}, {"...", "..."}, {"->*", "->*"}, {"<=>", "<=>"},
    {"##", "##"},   {"->", "->"},   {"++", "++"},   {"--", "--"},   {"<<", "<<"},   {">>", ">>"},
    {"<=", "<="},   {">=", ">="},   {"==", "=="},   {"!=", "!="},   {"&&", "&&"},   {"||", "||"},
    {"+=", "+="},   {"-=", "-="},   {"*=", "*="},   {"/=", "/="},   {"%=", "%="},   {"&=", "&="},
    {"|=", "|="},   {"^=", "^="},   {"::", "::"},   {".*", ".*"},   {"%:", "#"},    {"<:", "["},
    {":>", "]"},    {"<%", "{"},    {"%>", "}"},    {"#", "#"},     {"{", "{"},     {"}", "}"},
    {"[", "["},     {"]", "]"},     {"(", "("},     {")", ")"},     {";", ";"},     {":", ":"},
    {"?", "?"},     {".", "."},     {"+", "+"},     {"-", "-"},     {"*", "*"},     {"/", "/"},
    {"%", "%"},     {"^", "^"},     {"&", "&"},     {"|", "|"},     {"~", "~"},     {"!", "!"},
    {"=", "="},     {"<", "<"},     {">", ">"},     {",", ","},
};

static bool lx_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

static bool lx_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool lx_alnum(unsigned char c)
{
    return lx_alpha(c) || lx_digit(c);
}

typedef struct lx_state {
    kevo_lex *lx;
    size_t *splice; /* offsets in text where a splice removed a line break */
    size_t nsplice, next_splice;
    size_t pos;
    int line;       /* current line in the original source */
    bool bol;
    int dir;        /* open directive's '#' token, or -1 */
    int cap;
} lx_state;

static void lx_issue(kevo_lex *lx, int line, const char *what)
{
    if (lx->issue.line == 0) {
        lx->issue.line = line;
        snprintf(lx->issue.what, sizeof lx->issue.what, "%s", what);
    }
}

/* Move to text offset p, counting the lines passed (newlines and splices). */
static void lx_advance(lx_state *s, size_t p)
{
    for (size_t i = s->pos; i < p; i++) {
        while (s->next_splice < s->nsplice && s->splice[s->next_splice] <= i) {
            s->line++;
            s->next_splice++;
        }
        if (s->lx->text[i] == '\n')
            s->line++;
    }
    s->pos = p;
}

static bool lx_push(lx_state *s, kevo_tok_kind kind, size_t start, size_t end, const char *punct)
{
    kevo_lex *lx = s->lx;
    if (lx->ntok >= KEVO_LEX_MAX_TOKENS)
        return false;
    if (lx->ntok == s->cap) {
        int ncap = s->cap ? s->cap * 2 : 1024;
        kevo_tok *t = realloc(lx->tok, (size_t)ncap * sizeof *t);
        if (!t)
            return false;
        lx->tok = t;
        s->cap = ncap;
    }
    kevo_tok *t = &lx->tok[lx->ntok];
    t->kind = kind;
    t->off = (uint32_t)start;
    t->len = (uint32_t)(end - start);
    t->line = s->line;
    t->bol = s->bol;
    t->punct = punct;
    if (kind == KEVO_TK_PUNCT && s->bol && strcmp(punct, "#") == 0)
        s->dir = lx->ntok;
    t->dir = s->dir;
    lx->ntok++;
    s->bol = false;
    return true;
}

/* End of a quoted literal starting at text[p] == q; sets *closed. */
static size_t lx_quoted(const char *t, size_t n, size_t p, char q, bool *closed)
{
    size_t i = p + 1;
    while (i < n && t[i] != q && t[i] != '\n') {
        if (t[i] == '\\' && i + 1 < n && t[i + 1] != '\n')
            i++;
        i++;
    }
    *closed = i < n && t[i] == q;
    return *closed ? i + 1 : i;
}

/* A raw string R"delim(...)delim" whose 'R' quote is at text[p] == '"'. */
static size_t lx_raw(const char *t, size_t n, size_t p, bool *closed)
{
    char delim[20];
    size_t d = 0, i = p + 1;
    while (i < n && t[i] != '(' && d < 16 && t[i] != '"' && t[i] != '\\' && t[i] != ' ' && t[i] != ')' &&
           t[i] != '\n')
        delim[d++] = t[i++];
    *closed = false;
    if (i >= n || t[i] != '(')
        return i;
    for (i++; i < n; i++) {
        if (t[i] == ')' && i + 1 + d < n && memcmp(t + i + 1, delim, d) == 0 && t[i + 1 + d] == '"') {
            *closed = true;
            return i + d + 2;
        }
    }
    return n;
}

/* Copy src into text without backslash-newline pairs, recording where. */
static bool lx_splice(lx_state *s, const char *src, size_t n)
{
    kevo_lex *lx = s->lx;
    lx->text = malloc(n + 1);
    if (!lx->text)
        return false;
    size_t w = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        size_t skip = 0;
        if (src[i] == '\\' && i + 1 < n && src[i + 1] == '\n')
            skip = 2;
        else if (src[i] == '\\' && i + 2 < n && src[i + 1] == '\r' && src[i + 2] == '\n')
            skip = 3;
        if (skip) {
            if (s->nsplice == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                size_t *g = realloc(s->splice, ncap * sizeof *g);
                if (!g)
                    return false;
                s->splice = g;
                cap = ncap;
            }
            s->splice[s->nsplice++] = w;
            i += skip - 1;
            continue;
        }
        lx->text[w++] = src[i];
    }
    lx->text[w] = '\0';
    lx->n = w;
    return true;
}

bool kevo_lex_run(const char *src, size_t n, kevo_lex *lx)
{
    memset(lx, 0, sizeof *lx);
    lx_state s = {.lx = lx, .line = 1, .bol = true, .dir = -1};
    bool ok = lx_splice(&s, src ? src : "", src ? n : 0);
    const char *t = lx->text;
    size_t len = lx->n;
    while (ok) {
        size_t p = s.pos;
        while (p < len && (t[p] == ' ' || t[p] == '\t' || t[p] == '\r' || t[p] == '\f' || t[p] == '\v'))
            p++;
        if (p >= len)
            break;
        unsigned char c = (unsigned char)t[p];
        if (c == '\n') {
            lx_advance(&s, p + 1);
            s.bol = true;
            s.dir = -1;
            continue;
        }
        if (c == '/' && p + 1 < len && t[p + 1] == '/') {
            const char *e = memchr(t + p, '\n', len - p);
            lx_advance(&s, e ? (size_t)(e - t) : len);
            continue;
        }
        if (c == '/' && p + 1 < len && t[p + 1] == '*') {
            const char *e = NULL;
            for (size_t i = p + 2; i + 1 < len; i++)
                if (t[i] == '*' && t[i + 1] == '/') {
                    e = t + i;
                    break;
                }
            size_t end = e ? (size_t)(e - t) + 2 : len;
            if (!e) {
                lx_advance(&s, p);
                lx_issue(lx, s.line, "unterminated comment");
            }
            /* a comment is one space: one spanning lines starts no new line
             * (nor ends a directive) */
            if (memchr(t + p, '\n', end - p))
                s.bol = false;
            lx_advance(&s, end);
            continue;
        }
        lx_advance(&s, p);
        size_t end = p + 1;
        kevo_tok_kind kind = KEVO_TK_PUNCT;
        const char *punct = NULL;
        if (lx_alpha(c)) {
            while (end < len && lx_alnum((unsigned char)t[end]))
                end++;
            kind = KEVO_TK_IDENT;
            /* an encoding prefix glued to a literal: u8"..", L'..', R"(..)" */
            size_t idl = end - p;
            bool prefix = (idl == 1 && strchr("uULR", t[p])) || (idl == 2 && memcmp(t + p, "u8", 2) == 0) ||
                          (idl == 2 && t[p + 1] == 'R' && strchr("uUL", t[p])) ||
                          (idl == 3 && memcmp(t + p, "u8R", 3) == 0);
            if (prefix && end < len && (t[end] == '"' || t[end] == '\'')) {
                bool closed;
                bool raw = t[end - 1] == 'R' && t[end] == '"';
                kind = t[end] == '"' ? KEVO_TK_STRING : KEVO_TK_CHAR;
                end = raw ? lx_raw(t, len, end, &closed) : lx_quoted(t, len, end, t[end], &closed);
                if (!closed)
                    lx_issue(lx, s.line, "unterminated literal");
            }
        } else if (lx_digit(c) || (c == '.' && p + 1 < len && lx_digit((unsigned char)t[p + 1]))) {
            while (end < len) {
                unsigned char d = (unsigned char)t[end];
                if ((d == '+' || d == '-') && strchr("eEpP", t[end - 1]))
                    end++;
                else if (lx_alnum(d) || d == '.')
                    end++;
                else if (d == '\'' && end + 1 < len && lx_alnum((unsigned char)t[end + 1]))
                    end += 2;
                else
                    break;
            }
            kind = KEVO_TK_NUMBER;
        } else if (c == '"' || c == '\'') {
            bool closed;
            end = lx_quoted(t, len, p, (char)c, &closed);
            kind = c == '"' ? KEVO_TK_STRING : KEVO_TK_CHAR;
            if (!closed)
                lx_issue(lx, s.line, "unterminated literal");
        } else {
            for (size_t i = 0; i < KV_ARRAY_LEN(lx_puncts); i++) {
                size_t pl = strlen(lx_puncts[i].text);
                if (p + pl <= len && memcmp(t + p, lx_puncts[i].text, pl) == 0) {
                    end = p + pl;
                    punct = lx_puncts[i].spell;
                    break;
                }
            }
            if (!punct) {
                /* a byte no token starts with: keep it as a one-byte token */
                punct = "?";
                if (c == '\\')
                    lx_issue(lx, s.line, "a backslash outside a literal (universal character name or stray)");
                else if (c == 0)
                    lx_issue(lx, s.line, "a NUL byte");
                else if (c >= 0x80)
                    lx_issue(lx, s.line, "a non-ASCII byte outside comments and literals");
                else
                    lx_issue(lx, s.line, "a control character or stray byte in the code");
            }
        }
        if (!lx_push(&s, kind, p, end, punct))
            ok = false;
        lx_advance(&s, end);
    }
    free(s.splice);
    if (!ok) {
        kevo_lex_free(lx);
        return false;
    }
    return true;
}

void kevo_lex_free(kevo_lex *lx)
{
    if (!lx)
        return;
    free(lx->text);
    free(lx->tok);
    memset(lx, 0, sizeof *lx);
}

bool kevo_lex_is(const kevo_lex *lx, int i, const char *s)
{
    if (i < 0 || i >= lx->ntok)
        return false;
    const kevo_tok *t = &lx->tok[i];
    if (t->kind == KEVO_TK_PUNCT)
        return strcmp(t->punct, s) == 0;
    return strlen(s) == t->len && memcmp(lx->text + t->off, s, t->len) == 0;
}

void kevo_lex_text(const kevo_lex *lx, int i, char *out, size_t n)
{
    if (!n)
        return;
    out[0] = '\0';
    if (i < 0 || i >= lx->ntok)
        return;
    const kevo_tok *t = &lx->tok[i];
    if (t->kind == KEVO_TK_PUNCT) {
        snprintf(out, n, "%s", t->punct);
        return;
    }
    size_t k = t->len < n - 1 ? t->len : n - 1;
    memcpy(out, lx->text + t->off, k);
    out[k] = '\0';
}

static int lx_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void kevo_lex_string(const kevo_lex *lx, int i, kv_buf *out)
{
    if (i < 0 || i >= lx->ntok)
        return;
    const kevo_tok *t = &lx->tok[i];
    if (t->kind != KEVO_TK_STRING && t->kind != KEVO_TK_CHAR)
        return;
    const char *s = lx->text + t->off, *e = s + t->len;
    char q = t->kind == KEVO_TK_STRING ? '"' : '\'';
    const char *open = memchr(s, q, (size_t)(e - s));
    if (!open)
        return;
    bool raw = open > s && open[-1] == 'R';
    const char *p = open + 1;
    if (raw) {
        /* R"d( ... )d": from after '(' to the last ')' */
        const char *lp = memchr(p, '(', (size_t)(e - p));
        const char *rp = e;
        while (rp > p && rp[-1] != ')')
            rp--;
        if (!lp || rp <= lp + 1) {
            return;
        }
        for (const char *c = lp + 1; c < rp - 1; c++) {
            char ch = (*c == 0 || (unsigned char)*c >= 0x80) ? '?' : *c;
            kv_buf_append(out, &ch, 1);
        }
        return;
    }
    const char *end = e;
    if (end > p && end[-1] == q)
        end--;
    while (p < end) {
        unsigned long v = (unsigned char)*p++;
        if (v == '\\' && p < end) {
            char c = *p++;
            switch (c) {
            case 'n': v = '\n'; break;
            case 't': v = '\t'; break;
            case 'r': v = '\r'; break;
            case 'a': v = 7; break;
            case 'b': v = 8; break;
            case 'f': v = 12; break;
            case 'v': v = 11; break;
            case 'x':
                v = 0;
                while (p < end && lx_hex(*p) >= 0) {
                    v = (v << 4 | (unsigned long)lx_hex(*p++)) & 0xFFFFFFul;
                }
                break;
            case 'u':
            case 'U': {
                int digits = c == 'u' ? 4 : 8;
                v = 0;
                for (int k = 0; k < digits && p < end && lx_hex(*p) >= 0; k++)
                    v = (v << 4 | (unsigned long)lx_hex(*p++)) & 0xFFFFFFFFul;
                break;
            }
            default:
                if (c >= '0' && c <= '7') {
                    v = (unsigned long)(c - '0');
                    for (int k = 0; k < 2 && p < end && *p >= '0' && *p <= '7'; k++)
                        v = v * 8 + (unsigned long)(*p++ - '0');
                } else {
                    v = (unsigned char)c; /* \\ \" \' \? and unknown escapes */
                }
            }
        }
        char ch = (v == 0 || v > 127) ? '?' : (char)v;
        kv_buf_append(out, &ch, 1);
    }
}
