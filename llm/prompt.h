/* prompt.h — the LLM's universal operator: one prompt builder for every
 * parent (template or LLM, measured or failed), and the knowledge base it
 * draws on.
 *
 * Files (a kernel engineer reads and edits them; nothing is compiled in):
 *   <prompts>/system.md          the system prompt: role, reply format, rules
 *   <prompts>/ops/<op>.md        what the op computes and its ABI struct
 *   <prompts>/knowledge/ *.md    notes, each a set of "## Title" sections whose
 *                                first line may be "tags: a, b, c"
 *
 * The knowledge sections are indexed in an in-memory SQLite FTS5 table
 * (title, tags, body; porter stemming) and ranked by bm25 with the title
 * weighted 4, the tags 2 and the body 1.  Queries are built from words only:
 * any text (an LLM's or a compiler's message) is split into ASCII words,
 * each quoted, joined with OR, so FTS5 syntax in it never reaches the parser.
 */
#ifndef KEVO_LLM_PROMPT_H
#define KEVO_LLM_PROMPT_H

#include <stddef.h>

#include "kevo.h"
#include "util/util.h"

/* Limits on what the knowledge folder may hold. */
#define KEVO_KNOWLEDGE_MAX_FILES 256
#define KEVO_KNOWLEDGE_MAX_FILE_BYTES (256 * 1024)
#define KEVO_KNOWLEDGE_MAX_SECTION_BYTES (16 * 1024) /* a longer body is cut, with a marker */

/* An open knowledge index; opaque. */
typedef struct kevo_knowledge kevo_knowledge;

/* One section found by a query; strings owned by the hit array. */
typedef struct kevo_knowledge_hit {
    char *file;  /* file name under knowledge/, e.g. "tma.md" */
    char *title; /* the "## " line without the marks */
    char *tags;  /* the tags line's value ("" when none) */
    char *body;  /* the section's text after the title and tags lines */
    double score; /* bm25 rank: lower is better */
} kevo_knowledge_hit;

/* Load every <prompts_dir>/knowledge/ *.md (sorted by name; hidden files and
 * other extensions skipped), split each into "## " sections (a "## " inside
 * a fenced block does not split) and index them.  A file over
 * KEVO_KNOWLEDGE_MAX_FILE_BYTES, more than KEVO_KNOWLEDGE_MAX_FILES files, a
 * missing folder or a file without sections is an error naming it.
 * Errors: KEVO_ERR_IO, KEVO_ERR_PARSE, KEVO_ERR_DB (SQLite, FTS5 missing),
 * KEVO_ERR_NOMEM.  *out is freed with kevo_knowledge_close(). */
kevo_status kevo_knowledge_open(const char *prompts_dir, kevo_knowledge **out, kevo_err *err);

/* Check a prompts folder before a run starts (before anything compiles):
 * system.md and ops/<op>.md are regular files within their cap and
 * knowledge/ opens and indexes (kevo_knowledge_open).  Nothing is kept.
 * Errors: KEVO_ERR_NOT_FOUND for a missing prompt file, KEVO_ERR_IO for one
 * that is not a regular file (a FIFO, a device: refused without blocking)
 * or too large, and kevo_knowledge_open's. */
kevo_status kevo_prompt_check_dir(const char *prompts_dir, const char *op, kevo_err *err);

/* Sections indexed. */
int kevo_knowledge_count(const kevo_knowledge *kb);

/* The top k (1..64) sections for query_terms, any text (NULL or no words:
 * no hits), best first.  The text is cut into words of letters, digits and
 * '_' (lower-cased; at most 24 words of at most 40 bytes; very common
 * English words dropped); each word is matched as a quoted FTS5 string and
 * the words are OR-ed.  *hits (NULL when none) is freed with
 * kevo_knowledge_hits_free(*hits, *nhits).  Errors: KEVO_ERR_ARG (k out of
 * range), KEVO_ERR_DB, KEVO_ERR_NOMEM. */
kevo_status kevo_knowledge_query(kevo_knowledge *kb, const char *query_terms, int k, kevo_knowledge_hit **hits,
                                 int *nhits, kevo_err *err);
void kevo_knowledge_hits_free(kevo_knowledge_hit *hits, int n);

/* The FTS5 query text kevo_knowledge_query builds from query_terms, into
 * out[n] ("" when it has no words).  For logs and tests. */
void kevo_knowledge_fts_query(const char *query_terms, char *out, size_t n);

void kevo_knowledge_close(kevo_knowledge *kb);

/* A parent or sibling as a prompt shows it.  Every string may be NULL and
 * is untrusted (it comes from the DB, a compiler or an LLM): the builder
 * bounds it and removes control characters before it enters the prompt. */
typedef struct kevo_llm_node {
    const char *generator;         /* "template" or "llm" */
    const char *family;            /* template family, or the family the llm line descends from */
    const char *params;            /* "BM=128 BN=64 ..." or NULL */
    const char *source;            /* device source (parent only; siblings: NULL) */
    const char *space;             /* one-point space JSON (parent only) */
    const char *status;            /* "ok", "failed", "pending", ... */
    const char *fail, *fail_msg;   /* failure kind ("compile_error", "eval_timeout", "rejected", ...) and message */
    double median_ms, tflops, roofline, speedup; /* NaN when unmeasured */
    int regs, spill_bytes, smem_bytes;           /* -1 when unknown */
    const char *summary;           /* siblings: one line of what they changed (may be NULL) */
} kevo_llm_node;

/* What one prompt is built from. */
typedef struct kevo_prompt_in {
    const char *op;                  /* "ikbo_lce": names prompts/ops/<op>.md */
    const char *shape, *dtype, *arch; /* the run's: "B=1024,M=433,...", "fp16", "sm_90a" */
    const char *abi_header;          /* text of the op's ABI header */
    const kevo_llm_node *parent;
    const kevo_llm_node *siblings;   /* earlier children of the same parent, oldest first */
    int nsiblings;
    double best_speedup;             /* the run's best so far, NaN if none */
    size_t max_chars;                /* cap on the user message in bytes (0: none); see kevo_prompt_build */
} kevo_prompt_in;

/* Fixed limits on untrusted parts (bytes). */
#define KEVO_PROMPT_MSG_MAX 4000     /* a failure message (head and tail kept) */
#define KEVO_PROMPT_LINE_MAX 200     /* a summary, params, a family or status name */
#define KEVO_PROMPT_SPACE_MAX 16384  /* the parent's plan */
#define KEVO_PROMPT_SIBLINGS_MAX 24  /* siblings shown at most (the latest ones) */
#define KEVO_PROMPT_KNOWLEDGE_K 5    /* sections retrieved */

/* The parent's source as a prompt shows it when it is too long whole: the
 * same code without comments, blank lines and trailing blanks (line splices
 * joined, string literals untouched).  SEARCH/REPLACE edits made against it
 * apply to it, not to the stored text.  NULL when src is NULL or memory runs
 * out; caller frees. */
char *kevo_prompt_source_view(const char *src);

/* Build one prompt.  system <- <prompts_dir>/system.md.  user <- in order:
 *   1. "# Operator": prompts/ops/<op>.md, then the run (shape, dtype, arch)
 *      and, when the op and shape are known, its FLOPs, least bytes,
 *      arithmetic intensity and whether that is memory- or compute-bound on
 *      the arch;
 *   2. "# ABI header": the header in a ```c block;
 *   3. "# Parent": generator, family, params, status, measurements (time,
 *      TFLOP/s, fraction of roofline, speedup, registers, spills, shared
 *      memory), the failure kind and message, the launch plan (```json)
 *      and the source (```cuda);
 *   4. "# Siblings": what earlier children of this parent changed and got;
 *   5. "# Knowledge": the sections retrieved for the parent's bottleneck and
 *      failure (query: see query_used);
 *   6. "# Task": fix the failure, or the bottleneck to go after, the run's
 *      best, and the reply format.
 * Code blocks use a fence longer than any backtick run inside them.
 * The parent's plan is shown as a reply's plan block would give it
 * (params as {"NAME": value}; no description, constraints or cost model).
 * With max_chars > 0 and the message over it, parts are cut in this order,
 * each leaving a marker line: knowledge sections (the lowest ranked first,
 * then all), siblings (the oldest first), the source's comments and blank
 * lines (kevo_prompt_source_view), the middle of that view (head and tail
 * kept; the task then asks for SEARCH/REPLACE edits against it or a new
 * kernel), and, when less than 40% of the view would be left, the whole
 * source (the task then asks for a new kernel from scratch; small models
 * with short contexts write one, where a cut source makes them echo the
 * prompt).  The task asks for the code block first and the summary sentence
 * last.  When even that does not fit: KEVO_ERR_ARG, nothing appended.
 * query_used[qn] (may be NULL) receives the FTS5 query.  kb may be NULL (no
 * knowledge part).  system and user are appended to.
 * Errors: KEVO_ERR_ARG (no parent, a bad op name, max_chars too small),
 * KEVO_ERR_NOT_FOUND (system.md or the op's description missing),
 * KEVO_ERR_IO, KEVO_ERR_DB, KEVO_ERR_NOMEM. */
kevo_status kevo_prompt_build(const char *prompts_dir, kevo_knowledge *kb, const kevo_prompt_in *in, kv_buf *system,
                              kv_buf *user, char *query_used, size_t qn, kevo_err *err);

#endif /* KEVO_LLM_PROMPT_H */
