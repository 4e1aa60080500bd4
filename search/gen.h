/* gen.h — candidate generators behind one contract: start a proposal, let
 * it run while compiles and GPU evaluations go on, finish it into a
 * candidate source.  A candidate source is a family's space (a template
 * family, or the one-point space an LLM reply gave), a configuration in it
 * and so the device source (kevo_space_render): the rest of the pipeline
 * (launch plan, compile, verify, time, store, export) is the same for both.
 *
 * Generators: "template" (a policy's proposal, a family and a configuration,
 * is the source at once: the tuning loop renders it) and "llm" (the
 * universal operator: a parent node, its measurements, its
 * siblings and retrieved knowledge become one prompt; the reply's source and
 * plan become a one-point space).  A candidate's identity is its generator
 * plus a hash of its source and plan: a template candidate's family and
 * params, an LLM candidate's family "llm_" + 12 hex digits of the SHA-256 of
 * its one-point space and source. */
#ifndef KEVO_GEN_H
#define KEVO_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "db/store.h"
#include "evaluator/eval.h"
#include "templates/space.h"

/* What a generator finished: either a source (space + cfg) or a failure
 * (fail != KEVO_FAIL_NONE: llm_error, parse_error, rejected) with why. */
typedef struct kevo_gen_source {
    kevo_space *space;         /* the candidate's family; NULL on failure */
    bool owns_space;           /* an LLM candidate's space: the caller takes it (kevo_space_free) */
    kevo_config cfg;
    kevo_fail fail;
    bool unreachable;          /* an llm_error where no server answered at the URL (kevo_llm_reply.unreachable) */
    char why[512];
    char family[64];           /* "llm_<hex>" for an LLM candidate (also on failure: "llm_call<N>") */
    kevo_generation_row gen;   /* "llm": the call as it went (prompts, reply, usage, space, source); owned */
} kevo_gen_source;

void kevo_gen_source_init(kevo_gen_source *g);
/* Frees what g owns (the space when owns_space, the generation's texts). */
void kevo_gen_source_release(kevo_gen_source *g);

/* ---- the LLM generator ---- */

/* A parent node as the LLM generator reads it: its row (measurements,
 * failure), its family's space and configuration. */
typedef struct kevo_gen_parent {
    const kevo_cand_row *row;
    const kevo_space *space;
    kevo_config cfg;
    const char *generator;     /* "template" or "llm" */
} kevo_gen_parent;

typedef struct kevo_llm_gen kevo_llm_gen;

/* Settings of the LLM generator (what a run stores in run_llm, plus this
 * process's paths).  The strings must outlive the generator, but for
 * prompts_dir, which it copies. */
typedef struct kevo_llm_gen_opts {
    const char *url, *model;
    double temperature;        /* NaN: not sent */
    int64_t seed;              /* -1: not sent; call k of a run sends seed + k */
    int max_tokens;            /* 0: not sent */
    double timeout_s;          /* per attempt */
    int retries;               /* after a 429, a 5xx or a failed connection */
    int prompt_chars;          /* cap on the user message, bytes (<= 0: 96 KiB) */
    const char *prompts_dir;   /* prompts/ (system.md, ops/, knowledge/) */
    const char *op;            /* the op's name (kevo_op.name) */
    const char *shape, *dtype, *arch;
    const char *abi_header;    /* the op's ABI header text */
    const char *const *inputs; /* the ABI struct's input fields (the static check) */
    int ninputs;
    const char *const *outputs;
    int noutputs;
} kevo_llm_gen_opts;

/* Open the generator: the knowledge index, the client settings (checked:
 * KEVO_ERR_ARG for a bad URL).  Errors: KEVO_ERR_IO / KEVO_ERR_PARSE for a
 * missing or bad prompts folder. */
kevo_status kevo_llm_gen_open(const kevo_llm_gen_opts *o, kevo_llm_gen **out, kevo_err *err);

/* What kevo_llm_gen_open will check, for a caller that checks everything
 * before it starts: the server's URL (kevo_llm_url_check: no credentials in
 * it; KEVO_ERR_ARG), and the prompts folder for op (kevo_prompt_check_dir:
 * system.md, ops/<op>.md, knowledge/; KEVO_ERR_NOT_FOUND, KEVO_ERR_IO,
 * KEVO_ERR_PARSE). */
kevo_status kevo_llm_gen_check_url(const char *url, kevo_err *err);
kevo_status kevo_llm_gen_check_prompts(const char *prompts_dir, const char *op, kevo_err *err);
void kevo_llm_gen_close(kevo_llm_gen *g);

/* Start a rewrite of parent (with up to nsib earlier LLM children of it as
 * siblings; call number k of the run) in a worker process.  Only one call
 * is in flight per generator.  Errors: KEVO_ERR_BUSY when one is. */
kevo_status kevo_llm_gen_start(kevo_llm_gen *g, const kevo_gen_parent *parent, const kevo_cand_row *siblings,
                               int nsib, double best_speedup, int64_t k, kevo_err *err);
/* Whether a call is in flight. */
bool kevo_llm_gen_busy(const kevo_llm_gen *g);
/* Non-blocking: whether the call in flight has finished. */
bool kevo_llm_gen_ready(kevo_llm_gen *g);
/* Wait for the call and finish it into out: parse (code block + plan block,
 * or SEARCH/REPLACE against the parent's source), the static check, and the
 * one-point space.  A failed call, an unusable reply or a refused source is
 * out->fail with why; errors only for out of memory. */
kevo_status kevo_llm_gen_finish(kevo_llm_gen *g, kevo_gen_source *out, kevo_err *err);
/* Abandon the call in flight (its worker is killed). */
void kevo_llm_gen_cancel(kevo_llm_gen *g);

/* An LLM candidate's family name: "llm_" + the first 12 hex digits of the
 * SHA-256 of its one-point space text (whose "family" is "llm") and source. */
void kevo_gen_llm_family(const char *space_json, const char *source, char out[17]);

/* The admission of LLM text, the same for a fresh reply and for one a DB
 * holds: the static check of the source (llm/check.h, against the op's
 * input and output fields, inputs[ninputs] and outputs[noutputs]), then its
 * family computed (kevo_gen_llm_family) into family[17], the one-point
 * space loaded and checked (kevo_space_load_inline: params of one value,
 * launches, lets, tensor maps; the space's op must be op), and its "archs"
 * must list arch (NULL: not checked).  Returns KEVO_FAIL_NONE with *out
 * (named family; caller frees with kevo_space_free), or KEVO_FAIL_REJECTED
 * (the static check) or KEVO_FAIL_PARSE_ERROR (no source, the plan, the
 * arch) with the reason in why[n] and *out NULL. */
kevo_fail kevo_gen_llm_admit_text(const char *space_json, const char *source, const char *const *inputs,
                                  int ninputs, const char *const *outputs, int noutputs, const char *op,
                                  const char *arch, char family[17], kevo_space **out, char *why, size_t n);

/* Admit again an LLM candidate a DB holds, before anything of it is
 * compiled, loaded or exported (tune --resume, verify, export, warm start):
 * its generation row's space and source must hash to the candidate's
 * family (the DB is untrusted: the name must be the content's), then pass
 * kevo_gen_llm_admit_text for the op (its ABI fields) and arch (NULL: any).
 * *out: the candidate's one-point space, named family (caller frees).
 * Errors: KEVO_ERR_PARSE naming the candidate and why it is refused (the
 * static check's rule and line, the plan, the hash), KEVO_ERR_NOMEM. */
kevo_status kevo_gen_llm_admit(const kevo_generation_row *g, const char *family, const kevo_op *op,
                               const char *arch, kevo_space **out, kevo_err *err);

#endif /* KEVO_GEN_H */
