/* grammar.h — a GBNF grammar that holds a model's reply to line edits of
 * the parent's source (constrained decoding).
 *
 * llama.cpp's server (and servers built on it) takes a "grammar" field in a
 * chat-completion request: a grammar in GBNF, llama.cpp's BNF dialect
 * (grammars/README.md in llama.cpp), that the sampler holds every token to.
 * Small local models asked for SEARCH/REPLACE edits tend to copy the whole
 * parent source instead, which a 1,500-token cap then cuts; held to this
 * grammar they can only write edits, and each SEARCH text is a line the
 * edit will find exactly once.
 */
#ifndef KEVO_LLM_GRAMMAR_H
#define KEVO_LLM_GRAMMAR_H

#include "kevo.h"

#define KEVO_GRAMMAR_MAX_LINES 600 /* SEARCH lines offered at most (the first ones of the shown text) */
#define KEVO_GRAMMAR_LINE_MAX 200  /* longest line offered or written, bytes */

/* The grammar of a reply made of 1..max_blocks edit blocks
 *     <<<<<<< SEARCH\n <one line> =======\n <lines> >>>>>>> REPLACE\n
 * and then one sentence (no newline, no '<', '=', '>' or '`' first).
 *
 * A SEARCH line is a line of shown (the source text the prompt shows) that
 * occurs exactly once as a whole line of base (the text the edits apply to),
 * has at least 4 characters other than blanks, is printable ASCII and at most
 * KEVO_GRAMMAR_LINE_MAX bytes, and closes and opens at most one brace block
 * (braces in literals and // comments aside); the first
 * KEVO_GRAMMAR_MAX_LINES such lines in shown's order.  Its REPLACE lines
 * have the same brace signature as it (what they open they close: no edit
 * unbalances the source), hold at most one '{' and one '}' each (or "{ .. }"
 * on one line), and never start with '<', '=' or '>' (they would read as
 * block markers).  max_blocks is 1..8.
 *
 * *out (malloc'd) gets the grammar, or NULL with *nlines = 0 when no line of
 * shown qualifies (no grammar can hold the reply to an edit then).
 * Errors: KEVO_ERR_ARG (NULL text, max_blocks out of range), KEVO_ERR_NOMEM. */
kevo_status kevo_llm_edit_grammar(const char *shown, const char *base, int max_blocks, char **out, int *nlines,
                                  kevo_err *err);

#endif
