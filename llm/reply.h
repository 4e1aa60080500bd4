/* reply.h — reading an LLM's reply (untrusted: any size, any bytes) into a
 * candidate: device source plus a one-point space (the launch plan in the
 * space files' grammar).
 *
 * A reply is either
 *   - prose, one fenced code block with the whole device source (```cuda,
 *     ```cu, ```cpp, ```c++, ```c, plain ```, or ~~~ fences; when several,
 *     the last one that defines a __global__ function), and optionally one
 *     ```json block with a plan; or
 *   - prose and SEARCH/REPLACE blocks
 *         <<<<<<< SEARCH
 *         lines of the parent's source
 *         =======
 *         their replacement
 *         >>>>>>> REPLACE
 *     applied in order to the parent's source (inside or outside fences),
 *     and optionally a ```json plan.  Each block's SEARCH text must occur
 *     once in the source as the earlier blocks left it, and not within an
 *     earlier block's replacement; a failure names the block by number and
 *     first line (not found, ambiguous, overlapping, empty).
 * A plan is a JSON object with any of "launches", "let", "params",
 * "workspace", "pad_k", "tmaps" (or "tensor_maps") and "constraints"; each
 * key replaces the parent's, but for "params" as {"NAME": value, ...},
 * which changes the parent's params it names (and adds others); the space
 * files' form [{"name": ..., "values": [value]}, ...] replaces them all.
 * One value each, each name an identifier; {} (or []) is a kernel without
 * tunables, whose plan then
 * drops the parent's "let", "launches", "workspace", "pad_k" and "tmaps"
 * unless it gives its own.  Keys that
 * name the family ("family", "op", "source", "include", "archs",
 * "description", "axes", "model", "enter_from", "requires") are ignored when
 * equal to the parent's and refused otherwise; other keys are refused.  The
 * merged space has no "axes" or "enter_from" (a one-point space); when the
 * plan changes "params" or "let", the parent's "model" is dropped too (it
 * names the family's params), and so are its "constraints" unless the plan
 * gives its own.  "source" and "include" stay the parent's (kevo stores the
 * candidate's source beside the space).  The merged space must load as a
 * one-point space (kevo_space_load_inline), and every entry it launches must
 * be an extern "C" __global__ function the source defines; this holds for a
 * code-only reply too (the parent's plan kept).
 *
 * What a model means but writes loosely is mended, and said so in the
 * parsed reply: a ```json plan that is not strict JSON is read through
 * kevo_json_loosen (comments, trailing commas, bare expressions as
 * expression strings); a launched __global__ without extern "C" gets it
 * (kevo_llm_give_c_linkage), so its symbol is the plain name the plan uses.
 */
#ifndef KEVO_LLM_REPLY_H
#define KEVO_LLM_REPLY_H

#include <stdbool.h>

#include "kevo.h"
#include "templates/space.h"

#define KEVO_LLM_REPLY_MAX (2 * 1024 * 1024) /* longest reply read, bytes */
#define KEVO_LLM_PLAN_MAX (64 * 1024)        /* longest plan block, bytes */
#define KEVO_LLM_SUMMARY_MAX 200             /* bytes of the summary line */

/* A parsed reply; every string is malloc'ed and owned (kevo_llm_parsed_free).
 * After a failure every field is NULL/0: nothing to free. */
typedef struct kevo_llm_parsed {
    char *source;  /* the whole device source */
    char *space;   /* the one-point space JSON (the parent's text when the reply gave no plan) */
    char *summary; /* the reply's first sentence of prose outside code, one line, at most KEVO_LLM_SUMMARY_MAX
                      bytes, control characters removed; "" when none */
    bool has_plan; /* the reply gave a plan */
    int nedits;    /* SEARCH/REPLACE blocks applied; 0 when the reply gave the whole source */
    bool plan_mended; /* the plan was loose JSON kevo mended (kevo_json_loosen) */
    int nlinked;   /* launched entries kevo gave C linkage (kevo_llm_give_c_linkage) */
} kevo_llm_parsed;

/* Parse reply (NUL-terminated; what follows a NUL byte is not seen) against
 * the parent's source and one-point space.  On KEVO_OK out->source and
 * out->space are set.  Errors: KEVO_ERR_PARSE with the reason for a
 * parse_error candidate ("no code block", "SEARCH block 2 matches 0 times",
 * "plan: launches[0].entry 'foo' is not a __global__ of the source", "source
 * over 256 KiB", "reply over 2048 KiB", ...); KEVO_ERR_ARG when parent_space
 * is not a JSON object (kevo's fault, not the reply's); KEVO_ERR_NOMEM.
 * out is always initialized; after a failure it holds nothing (calling
 * kevo_llm_parsed_free on it is harmless). */
kevo_status kevo_llm_parse_reply(const char *reply, const char *parent_source, const char *parent_space,
                                 kevo_llm_parsed *out, kevo_err *err);
void kevo_llm_parsed_free(kevo_llm_parsed *p);

/* Merge plan_json (an object of the keys above) into parent_space: the
 * merged one-point space as JSON text in *merged (caller frees).  Does not
 * load it.  Errors: KEVO_ERR_PARSE (the plan), KEVO_ERR_ARG (the parent). */
kevo_status kevo_llm_merge_plan(const char *parent_space, const char *plan_json, char **merged, kevo_err *err);

/* Check that space_json loads as a one-point space (kevo_space_load_inline
 * with an empty source: no file is read; (*out)->source is empty).  Errors:
 * KEVO_ERR_PARSE naming the field ("plan: ..."), KEVO_ERR_NOMEM. */
kevo_status kevo_llm_space_load(const char *space_json, kevo_space **out, kevo_err *err);

#endif /* KEVO_LLM_REPLY_H */
