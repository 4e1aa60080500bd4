/* prompt_int.h — what the prompt's files share (llm/prompt.c builds the
 * prompt, llm/prompt_text.c bounds and fences untrusted text, llm/knowledge.c
 * indexes the notes, llm/compact.c compacts a parent's source): the
 * hygiene of untrusted text that enters a prompt. */
#ifndef KEVO_LLM_PROMPT_INT_H
#define KEVO_LLM_PROMPT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "kevo.h"
#include "util/util.h"

#define PR_MAX_TERMS 24 /* words of a knowledge query */
#define PR_MAX_TERM 40  /* bytes of one word */

/* Append n bytes of untrusted text, control characters removed (newlines
 * and tabs kept when multiline).  KEVO_ERR_NOMEM. */
kevo_status pr_put_clean(kv_buf *b, const char *s, size_t n, bool multiline);
/* The length of the longest prefix of s (len bytes), at most max, that ends
 * on a whole UTF-8 character. */
size_t pr_cut(const char *s, size_t len, size_t max);
/* One line of untrusted text, at most max bytes ("..." when cut); "(none)"
 * for NULL or empty. */
kevo_status pr_line(kv_buf *b, const char *s, size_t max);
/* A multi-line untrusted message: head and tail kept within max bytes. */
kevo_status pr_message(kv_buf *b, const char *s, size_t max);
/* A fence of backticks longer than any run of backticks in text (at least 3) into fence[n]. */
void pr_fence(const char *text, char *fence, size_t n);
/* A fenced block of untrusted text (already bounded by the caller). */
kevo_status pr_block(kv_buf *b, const char *lang, const char *text, size_t len);

/* ---- parts about the rest of the run (prompt_parts.c) ---- */

struct kevo_prompt_in;
struct cJSON;

/* "# Peers": each in-run peer's time, the fastest marked (nothing without peers). */
void pr_peers(const struct kevo_prompt_in *in, kv_buf *b);
/* "# The run's best kernels of other lineages": the first `show` tops with
 * their figures and their diff to the parent (nothing without tops). */
void pr_tops(const struct kevo_prompt_in *in, int show, kv_buf *b);
/* A diff of child against parent (shared head and tail trimmed, at most
 * max_lines changed lines shown) as a ```diff block. */
void pr_diff(const char *parent, const char *child, int max_lines, kv_buf *b);
/* The plan's "let" entries that space's launches, workspace, pad_k or
 * tensor maps need (directly or through other lets), in order, each as
 * shown has it (the same lets, folded: kevo_space_point_fold; shown NULL or
 * with other lets: space's own): a new cJSON array (caller deletes), or NULL
 * when space has no lets. */
struct cJSON *pr_needed_lets(const struct cJSON *space, const struct cJSON *shown);

#endif /* KEVO_LLM_PROMPT_INT_H */
