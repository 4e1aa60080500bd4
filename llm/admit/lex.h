/* lex.h — a tokenizer for CUDA C++ device source, as the checks on LLM
 * replies need it (llm/admit/check.c, llm/reply.c): comments dropped, line splices
 * undone first (so "pri\<newline>ntf" is one identifier, as the compiler sees
 * it), string and character literals kept as single tokens whose contents
 * can be decoded, preprocessor directives marked.  It never fails on odd
 * input: what a compiler would refuse (a stray backslash, a byte outside
 * ASCII in code, an unterminated literal or comment) is recorded in
 * kevo_lex.issue for the caller to judge.  Internal to llm/. */
#ifndef KEVO_LLM_LEX_H
#define KEVO_LLM_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* Most tokens one source may have (more: kevo_lex_run fails). */
#define KEVO_LEX_MAX_TOKENS 400000

typedef enum kevo_tok_kind {
    KEVO_TK_IDENT = 0,
    KEVO_TK_NUMBER,
    KEVO_TK_STRING, /* "..." with any prefix (u8, u, U, L, raw R"d(...)d") */
    KEVO_TK_CHAR,   /* '...' */
    KEVO_TK_PUNCT,  /* an operator or punctuator; digraphs are given their usual spelling */
} kevo_tok_kind;

typedef struct kevo_tok {
    kevo_tok_kind kind;
    uint32_t off, len; /* the token's bytes in kevo_lex.text */
    int line;          /* 1-based line of its first byte in the original source */
    int dir;           /* index of the '#' token of the directive it belongs to; -1 in code */
    bool bol;          /* first token of its line */
    const char *punct; /* KEVO_TK_PUNCT: the spelling ("#" for "%:", "##" for "%:%:", "[" for "<:", ...) */
} kevo_tok;

/* What a compiler would not accept, or a checker must not pass over. */
typedef struct kevo_lex_issue {
    int line;          /* 0: none */
    char what[96];
} kevo_lex_issue;

typedef struct kevo_lex {
    char *text;        /* the source with backslash-newline splices removed; owned */
    size_t n;
    kevo_tok *tok;     /* owned */
    int ntok;
    kevo_lex_issue issue; /* the first one found */
} kevo_lex;

/* Tokenize n bytes of src (NUL bytes included, recorded as an issue).
 * false only when memory runs out or there are more than
 * KEVO_LEX_MAX_TOKENS tokens; *lx is then empty.  Free with kevo_lex_free. */
bool kevo_lex_run(const char *src, size_t n, kevo_lex *lx);
void kevo_lex_free(kevo_lex *lx);

/* Whether token i exists and spells s (a punctuator by its usual spelling). */
bool kevo_lex_is(const kevo_lex *lx, int i, const char *s);

/* Token i's spelling copied into out[n] (cut to fit). */
void kevo_lex_text(const kevo_lex *lx, int i, char *out, size_t n);

/* The contents of string or character literal token i, escapes resolved,
 * appended to out: a NUL or a value above 127 becomes '?', so the result is
 * ASCII text.  Out of memory: out keeps what fitted. */
void kevo_lex_string(const kevo_lex *lx, int i, kv_buf *out);

#endif /* KEVO_LLM_LEX_H */
