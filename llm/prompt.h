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

#include <stdbool.h>
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
    const char *source;            /* device source (the parent; a top candidate of the LLM, for its diff; else NULL) */
    const char *space;             /* one-point space JSON (parent only) */
    const char *status;            /* "ok", "failed", "pending", ... */
    const char *fail, *fail_msg;   /* failure kind ("compile_error", "eval_timeout", "rejected", ...) and message */
    double median_ms, tflops, roofline, speedup; /* NaN when unmeasured */
    int regs, spill_bytes, smem_bytes;           /* -1 when unknown */
    const char *summary;           /* siblings: one line of what they changed (may be NULL) */
    const char *profile;           /* the parent's profiler figures, one line (kevo_profile_line), or NULL */
    const char *stall;             /* the parent's top warp-stall reason ("long_scoreboard"), or NULL */
} kevo_llm_node;

/* An in-run peer (a vendor library's or a naive form of the op) as timed
 * at the run's shape. */
typedef struct kevo_llm_peer {
    const char *name;  /* "stage0", "decomposed", ... (untrusted: bounded, cleaned) */
    double median_ms;  /* NaN when it failed or was not timed */
} kevo_llm_peer;

/* What one prompt is built from. */
typedef struct kevo_prompt_in {
    const char *op;                  /* "ikbo_lce": names prompts/ops/<op>.md */
    const char *shape, *dtype, *arch; /* the run's: "B=1024,M=433,...", "fp16", "sm_90a" */
    const char *abi_header;          /* text of the op's ABI header */
    const kevo_llm_node *parent;
    const kevo_llm_node *siblings;   /* earlier children of the same parent, oldest first */
    int nsiblings;
    double best_speedup;             /* the run's best so far, NaN if none */
    const kevo_llm_node *tops;       /* the run's best candidates of other lineages, best first (may be NULL) */
    int ntops;
    const kevo_llm_peer *peers;      /* the in-run peers' times (may be NULL) */
    int npeers;
    size_t max_tokens;               /* budget of the whole prompt, system message included, in tokens
                                        (kevo_prompt_tokens); 0: KEVO_PROMPT_TOKENS_DEFAULT */
    size_t max_chars;                /* also a cap on the user message in bytes (0: none); see kevo_prompt_build */
    bool edit_lines;                 /* where the source is shown, ask for one-line SEARCH/REPLACE edits only
                                        (a grammar holds the reply to them: llm/grammar.h) */
    char **source_shown;             /* output, when not NULL: the parent's source text the prompt shows
                                        (malloc'd), NULL when it left the source out */
    char **source_base;              /* output, when not NULL and the source is shown: the base of the
                                        compacted view (kevo_prompt_compact's `base`, malloc'd), what
                                        edits of the shown text apply to; NULL when it left the source out */
} kevo_prompt_in;

#define KEVO_PROMPT_TOKENS_DEFAULT 16384
#define KEVO_PROMPT_TOPS_MAX 4       /* top candidates shown at most */
#define KEVO_PROMPT_DIFF_LINES 40    /* lines of one top candidate's diff to the parent */

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

/* The parent's source compacted for its own params (llm/compact.c):
 * comments and blank lines removed, indentation halved, the #if groups
 * and `if constexpr` statements the params ("BM=128 BN=64 ...") decide cut
 * to the branch taken, and each shared header (a unit after `#line 1 "x.cuh"`) given as
 * its API (one line per declaration with its one-line doc); the family's
 * own headers ("lce_ws/x.cuh" beside "lce_ws.cu") are code, shown whole.  *shown is
 * what a prompt shows; *base is the same code with the headers in full:
 * SEARCH/REPLACE edits made against *shown apply to *base.  Both malloc'd
 * (caller frees).  Errors: KEVO_ERR_NOMEM. */
kevo_status kevo_prompt_compact(const char *src, const char *params, char **shown, char **base, kevo_err *err);

/* The shared headers of parent_src (not the family's own, which the prompt
 * showed as code) that a whole-source reply uses but does not hold (it
 * names one of their functions or types, not a macro, and has no `#line 1
 * "x.cuh"` marker of theirs): their full text, in the parent's order, to be
 * put in front of the reply's source (ends with `#line 1 "llm"`).  NULL
 * when none is needed or memory runs out; caller frees. */
char *kevo_prompt_headers_for(const char *parent_src, const char *reply_src);

/* Tokens a prompt of n bytes is counted as: ceil(n / 3).  Deliberately
 * conservative (code runs 3-4 bytes a token in common tokenizers, prose
 * about 4), so a prompt within its budget fits the server's context. */
#define KEVO_PROMPT_BYTES_PER_TOKEN 3
size_t kevo_prompt_tokens(size_t bytes);

/* Build one prompt.  system <- <prompts_dir>/system.md.  user <- in order:
 *   1. "# Operator": prompts/ops/<op>.md, then the run (shape, dtype, arch)
 *      and, when the op and shape are known, its FLOPs, least bytes,
 *      arithmetic intensity and whether that is memory- or compute-bound on
 *      the arch;
 *   2. "# ABI header": the header in a ```c block;
 *   3. "# Parent": generator, family, params, status, measurements, the
 *      failure kind and message, the launch plan (```json: the keys a reply
 *      may set, the lets the launches need) and the source compacted for
 *      its params (kevo_prompt_compact, ```cuda);
 *   4. "# Peers": in->peers' times;
 *   5. "# The run's best kernels of other lineages": in->tops with their
 *      figures and diff to the parent;
 *   6. "# Siblings": what earlier children of this parent changed and got;
 *   7. "# Knowledge": the sections retrieved for the parent's bottleneck and
 *      failure (query: see query_used);
 *   8. "# Task": fix the failure, or the bottleneck to go after, the run's
 *      best, and the reply format.
 * Code blocks use a fence longer than any backtick run inside them.
 * The whole prompt, system message included, is kept within in->max_tokens
 * (kevo_prompt_tokens; 0: KEVO_PROMPT_TOKENS_DEFAULT) and the user message
 * within in->max_chars bytes when that is set.  The operator, ABI header,
 * parent, knowledge and task are never cut; the others go in this order,
 * each leaving a marker line: the tops (the last first), the siblings (the
 * oldest first), the middle of the compacted source (head and tail kept;
 * the task then asks for edits against the parts shown or a new kernel),
 * and, when less than 40% of it would be left, the whole source and its
 * plan (the task then asks for a new kernel).  When even that does not fit:
 * KEVO_ERR_ARG naming the budget, nothing appended.
 * query_used[qn] (may be NULL) receives the FTS5 query.  kb may be NULL (no
 * knowledge part).  system and user are appended to.
 * Errors: KEVO_ERR_ARG (no parent, a bad op name, a budget too small),
 * KEVO_ERR_NOT_FOUND (system.md or the op's description missing),
 * KEVO_ERR_IO, KEVO_ERR_DB, KEVO_ERR_NOMEM. */
kevo_status kevo_prompt_build(const char *prompts_dir, kevo_knowledge *kb, const kevo_prompt_in *in, kv_buf *system,
                              kv_buf *user, char *query_used, size_t qn, kevo_err *err);

#endif /* KEVO_LLM_PROMPT_H */
