/* gen.h — candidate generators behind one table: start a proposal, let it
 * run while compiles and GPU evaluations go on, finish it into candidates.
 *
 * A generator is a row of the table in search/gen.c (struct
 * kevo_generator): "template" (gen_template.c: the selection policy's
 * rounds, a batch of configurations of the template families at once),
 * "llm" (gen_llm.c: KernelEvolve's universal operator, one rewrite of a
 * parent's source and launch plan in a worker process) and "mutate"
 * (gen_mutate.c: a neighbour of one of the run's leaders).  The tuning loop
 * (search/tune/) drives each one the same way, names none of them, and
 * stores what each proposes through the same pipeline (render, plan,
 * compile, verify, time, store, export).  Adding a generator is one file
 * with its kevo_generator and one row of the table.
 *
 * A candidate's identity is its generator plus a hash of its source and
 * plan: a template candidate's family and params, an LLM candidate's family
 * "llm_" + 12 hex digits of the SHA-256 of its one-point space and source.
 * A generator's failed call is a candidate too (family "<move>_call<k>",
 * status failed), with its edge from the parent. */
#ifndef KEVO_GEN_H
#define KEVO_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "db/store.h"
#include "llm/admit/admit.h"
#include "evaluator/eval.h"
#include "search/search.h"
#include "templates/space.h"
#include "util/ctx.h"
#include "util/util.h"

/* One generator of a run, as the run stores it (table run_generators,
 * db/store.h's kevo_run_gen_row, through kevo_gen_store_put/get). */
typedef struct kevo_run_generator {
    char name[64];      /* a row of the generator table: "template", "llm", "mutate" */
    bool listed;        /* the run has it (--generators); an unlisted one keeps its options' defaults */
    char *options;      /* what it stores of its options: a JSON object (text), owned */
    int64_t calls;      /* calls it has started in the run (LLM calls made) */
} kevo_run_generator;

/* ---- each generator's options, as this command line gives them ---- */

/* Options of the LLM generator a caller named (bits of kevo_llm_opts.given):
 * a resume compares or applies each; named without the llm generator, each
 * is a usage error. */
enum {
    KEVO_LLM_GIVEN_URL = 1u << 0,
    KEVO_LLM_GIVEN_MODEL = 1u << 1,
    KEVO_LLM_GIVEN_TEMPERATURE = 1u << 2,
    KEVO_LLM_GIVEN_SEED = 1u << 3,
    KEVO_LLM_GIVEN_BUDGET = 1u << 4,
    KEVO_LLM_GIVEN_MAX_TOKENS = 1u << 5,
    /* --llm-timeout, --llm-retries, --llm-prompt-tokens, --llm-prompt-chars, --llm-edit-grammar or --prompts (this
     * process's settings: never stored, but given for an LLM only) */
    KEVO_LLM_GIVEN_OTHER = 1u << 6,
};

/* The LLM generator's options.  url, model, temperature, seed, budget and
 * max_tokens are the run's (stored with it; the URL a DB stores is never
 * called); the others are this process's. */
typedef struct kevo_llm_opts {
    const char *url;         /* API base of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 */
    const char *model;       /* NULL: not sent */
    double temperature;      /* NaN: not sent */
    int64_t seed;            /* -1: not sent; call k sends seed + k */
    int64_t budget;          /* LLM calls the run makes, counted apart from --budget */
    int max_tokens;          /* 0: not sent */
    double timeout;          /* seconds per HTTP attempt */
    int retries;             /* retries after a 429, a 5xx or a failed connection */
    int prompt_tokens;       /* budget of a prompt, system message included (llm/prompt.h's token count) */
    int prompt_chars;        /* also a cap on a prompt's user message, bytes; 0: none */
    bool edit_grammar;       /* hold replies to one-line edits by a grammar (llama.cpp's "grammar", llm/grammar.h) */
    const char *prompts_dir; /* NULL: data_dir/prompts */
    uint32_t given;          /* KEVO_LLM_GIVEN_* of the options the user named */
} kevo_llm_opts;

/* One options blob per generator that has options (template and mutate
 * have none). */
typedef struct kevo_gen_opts {
    kevo_llm_opts llm;
} kevo_gen_opts;

/* Defaults for every generator's options. */
void kevo_gen_opts_init(kevo_gen_opts *o);

/* ---- what a generator hands back ---- */

/* What a generator finished: proposals in families the search has (the
 * policy's round; a mutation), or a new one-point space with its
 * configuration (an LLM reply), or a failure (fail != KEVO_FAIL_NONE:
 * gen_error, parse_error, rejected) with why, or nothing at all (none of
 * these: the call found nothing to propose). */
typedef struct kevo_gen_source {
    const kevo_proposal *props; /* borrowed from the generator until its next start; nprops of them */
    int nprops;
    kevo_space *space;         /* a new family of one point; NULL on failure */
    bool owns_space;           /* the caller takes space (kevo_space_free) */
    kevo_config cfg;
    kevo_fail fail;
    bool gone;                 /* the generator cannot go on in this process (no server answered): why says so */
    char why[512];
    char family[64];           /* "llm_<hex>" for an LLM candidate */
    kevo_generation_row gen;   /* the call as it went (an LLM's prompts, reply, usage, space, source), owned;
                                  gen.generator "" when the generator keeps none */
} kevo_gen_source;

/* An empty source: nothing proposed, no failure. */
void kevo_gen_source_init(kevo_gen_source *g);
/* Frees what g owns (the space when owns_space, the generation's texts). */
void kevo_gen_source_release(kevo_gen_source *g);

/* ---- the contract ---- */

typedef struct kevo_generator kevo_generator;

/* An open generator.  Each generator's own state begins with this header
 * (its first member), as Redis's connection types do. */
typedef struct kevo_gen {
    const kevo_generator *type;
    int64_t calls_max; /* calls it may make over the run; -1: no limit (its candidates share --budget) */
    bool full;         /* a round generator: the policy's rounds; false: the seeds alone, for the others to
                          rewrite (its name was not listed, or another generator is off) */
} kevo_gen;

/* What a generator works in, at check and open (borrowed: it outlives the
 * generator). */
typedef struct kevo_gen_ctx {
    kevo_search *s;             /* the run's graph (NULL at check) */
    const kevo_op *op;
    const char *shape, *dtype, *arch; /* the run's, as text */
    const char *abi_header;     /* the op's ABI header text */
    const char *const *inputs;  /* the op's tensors kernels read and write (the ABI struct's fields) */
    int ninputs;
    const char *const *outputs;
    int noutputs;
    const char *data_dir;       /* holds prompts/ */
    const char *names;          /* the run's generators ("template,llm") */
    const char *options;        /* this generator's stored options (JSON object text, from its options hook) */
    const kevo_gen_opts *cmd;   /* this command line's options (this process's settings) */
    uint64_t seed;              /* the run's */
    int64_t calls;              /* calls it made in the run so far (a resumed run's) */
    bool full;                  /* for the round generator: kevo_gen.full */
    kv_cancel *cancel;          /* the run's cancel flag (its kevo_ctx): calls stop once it is raised */
} kevo_gen_ctx;

/* One start: the parent and what the generator may read of the run. */
typedef struct kevo_gen_call {
    kevo_db *db;               /* the run's DB (the parent's row, its earlier children) */
    int64_t run_id;
    int parent;                /* the node the generator's parent hook picked; -1 for a round */
    int max;                   /* a round: at most this many proposals */
    double best;               /* the best fitness so far */
    int64_t k;                 /* the call's number among this generator's calls in the run, from 0 */
} kevo_gen_call;

/* What the options hook is asked (see kevo_generator.options). */
typedef struct kevo_gen_optreq {
    const kevo_gen_opts *cmd;  /* the command line's */
    const char *names;         /* the run's generators ("template,llm") */
    bool listed;               /* this generator is one of them */
    bool resume;               /* a resumed run */
    const char *stored;        /* what the run stored (JSON object text); NULL: nothing (a run of an older kevo) */
    const kevo_run_row *run;   /* a resumed run's row, for messages; NULL for a new run */
} kevo_gen_optreq;

/* A generator: one row of the table.  Hooks a generator does not need are
 * NULL.  The seven of the contract (open, start, ready, finish, cancel,
 * close, and parent for a generator that rewrites a node) are what the
 * loop calls while the run goes; options, check, describe and restore are
 * the run definition's and the resume's. */
struct kevo_generator {
    const char *name;    /* what --generators names */
    const char *summary;
    const char *move;    /* the move of its candidates' edges ("llm"); NULL: the policy's own moves */
    const char *label;   /* progress: "asking <label>", "waiting for <label>" */
    bool round;          /* it makes the rounds: a batch of the policy's proposals, at once (one such row) */
    bool budgeted;       /* its calls have a budget of their own (kevo_gen.calls_max), counted apart from
                            --budget: a run makes them whatever --budget and --batch are */

    /* The options the run stores for it (*out: a JSON object, malloc'd),
     * from the command line's (a new run) or from what the run stored with
     * the command line's changes (a resume; *extends when they give the run
     * more to do).  Options given for a generator the run does not list are
     * a usage error.  Errors: KEVO_ERR_ARG (naming the option),
     * KEVO_ERR_NOMEM.  NULL: no options ("{}"). */
    kevo_status (*options)(const kevo_gen_optreq *rq, char **out, bool *extends, kevo_err *err);
    /* Checked before anything is written or started: whether it runs in
     * this process (*off: it does not, and describe says why), and what it
     * will need (an LLM's prompts folder).  NULL: it always runs. */
    kevo_status (*check)(const kevo_gen_ctx *ctx, bool *off, kevo_err *err);
    /* Open it for the run (the graph ready, nothing written yet).  *out is
     * the header of its own state.  Errors: its setup's (KEVO_ERR_IO,
     * KEVO_ERR_PARSE for a prompts folder, KEVO_ERR_ARG, KEVO_ERR_NOMEM). */
    kevo_status (*open)(const kevo_gen_ctx *ctx, kevo_gen **out, kevo_err *err);
    /* What it calls path when path is a file it reads with these options
     * (an LLM's prompt file): a run's DB must be none of them.  NULL: not
     * one (or a generator that reads no files). */
    const char *(*reads)(const kevo_gen_opts *cmd, const char *op, const char *path);
    /* One line that says how it runs (on) or why not (off; run_id the
     * run's) into line; nothing when it has nothing to say. */
    void (*describe)(const kevo_gen_ctx *ctx, bool on, int64_t run_id, kv_buf *line);
    /* The parent of its next start: a node of the graph, or -1 when it has
     * none (yet).  NULL for the round generator. */
    int (*parent)(kevo_gen *g);
    /* Start a proposal from call->parent (a round: up to call->max of the
     * policy's).  One call is in flight per generator.  Errors: its own
     * (the DB's, KEVO_ERR_NOMEM, the LLM client's). */
    kevo_status (*start)(kevo_gen *g, const kevo_gen_call *call, kevo_err *err);
    /* Non-blocking: whether the call in flight has finished. */
    bool (*ready)(kevo_gen *g);
    /* Wait for the call in flight and finish it into out (initialised
     * here): a candidate, a failure or nothing are results, not errors;
     * errors only for out of memory or a DB error. */
    kevo_status (*finish)(kevo_gen *g, kevo_gen_source *out, kevo_err *err);
    /* Abandon the call in flight (a worker is killed). */
    void (*cancel)(kevo_gen *g);
    void (*close)(kevo_gen *g);
    /* The one-point space of a stored candidate this generator made (row
     * of a family no template has), admitted again as a fresh one is before
     * anything of it compiles (its plan checked for arch too, unless NULL):
     * *mine when the row is its own (then *out, or NULL when it made no
     * source).  Errors: KEVO_ERR_PARSE for a stored candidate refused,
     * KEVO_ERR_NOMEM.  NULL: it adds no families. */
    kevo_status (*restore)(kevo_db *db, const kevo_cand_row *row, const kevo_op *op, const char *arch,
                           kevo_space **out, bool *mine, kevo_err *err);
};

#define KEVO_GEN_MAX 8 /* rows of the table */

/* The table (search/gen.c), in the order a run lists and drives them. */
const kevo_generator *const *kevo_generator_list(int *n);
/* A generator by name; NULL when unknown. */
const kevo_generator *kevo_generator_find(const char *name);
/* The generator whose candidates hang on edges of move; NULL when the
 * move is a policy's. */
const kevo_generator *kevo_generator_of_move(const char *move);

/* ---- the run's generators ---- */

/* The generators a run lists (--generators) and what it stores of each:
 * one entry per row of the table, in the table's order. */
typedef struct kevo_gen_list {
    int n;
    const kevo_generator *type[KEVO_GEN_MAX];
    bool listed[KEVO_GEN_MAX];
    char *options[KEVO_GEN_MAX]; /* JSON object text, owned */
    int64_t calls[KEVO_GEN_MAX]; /* calls each made so far (a resumed run's) */
    char names[64];              /* the listed names in table order, comma-separated: what the run stores */
} kevo_gen_list;

/* An empty list: every row of the table, none listed. */
void kevo_gen_list_init(kevo_gen_list *L);
/* Frees the options L owns; L is empty again. */
void kevo_gen_list_release(kevo_gen_list *L);

/* A new run's generators from --generators (a comma list of the table's
 * names, each once) and the command line's options of each.  Errors: KEVO_ERR_ARG (the list, an option, an option of a
 * generator not listed), KEVO_ERR_NOMEM. */
kevo_status kevo_gen_list_new(kevo_gen_list *L, const char *generators, const kevo_gen_opts *cmd, kevo_err *err);

/* A resumed run's generators: what it stored (rows[0..n), n 0: nothing,
 * a run of an older kevo that searched templates only) with the command
 * line's changes.  given: --generators when named (it may repeat the
 * run's, not change it).  *extends when an option gives the run more to
 * do.  Errors: as kevo_gen_list_new, naming the run. */
kevo_status kevo_gen_list_resume(kevo_gen_list *L, const kevo_run_generator *rows, int n, const char *given,
                                 const kevo_gen_opts *cmd, const kevo_run_row *run, bool *extends, kevo_err *err);

/* The rows kevo_gen_store_put stores for L (v[0..L->n), options borrowed). */
void kevo_gen_list_rows(const kevo_gen_list *L, kevo_run_generator *v);

/* What some generator calls path when it reads that file with these
 * options ("a prompt file"), or NULL. */
const char *kevo_gen_reads(const kevo_gen_opts *cmd, const char *op, const char *path);

/* The space of a stored candidate of a family no template has: the
 * generator that made it restores it (kevo_generator.restore).  *out NULL
 * with KEVO_OK for a failed call ("<move>_call<k>": no source).  arch: the
 * run's, which the plan must fit (NULL: not checked).  Errors:
 * KEVO_ERR_NOT_FOUND for a family no generator claims (naming it),
 * KEVO_ERR_PARSE for a stored candidate refused, KEVO_ERR_NOMEM. */
kevo_status kevo_gen_restore(kevo_db *db, const kevo_cand_row *row, const kevo_op *op, const char *arch,
                             kevo_space **out, kevo_err *err);

/* The refusal of an option that differs from the resumed run's
 * (KEVO_ERR_ARG): "OPT GIVEN differs from run N's STORED: ...". */
kevo_status kevo_gen_conflict(kevo_err *err, const kevo_run_row *run, const char *opt, const char *given,
                              const char *stored);

/* ---- the run's generators in the DB (gen_store.c) ---- */

/* Store the generators of a run, v[0..n) (one per row of the table, in its
 * order; the listed ones are stored, each with the calls its rows show),
 * replacing what it had.  Errors: KEVO_ERR_DB, KEVO_ERR_PARSE (a name no
 * generator has), KEVO_ERR_ARG (options that are not a JSON object). */
kevo_status kevo_gen_store_put(kevo_db *db, int64_t run_id, const kevo_run_generator *v, int n, kevo_err *err);
/* A run's generators (*v malloc'd, kevo_run_generators_free): the ones it
 * lists, in the order stored, each with the calls its rows show (a name no
 * generator has is kept, for kevo_gen_list_resume to refuse).
 * KEVO_ERR_NOT_FOUND for a run that stored none (a run of an older kevo:
 * templates only); KEVO_ERR_PARSE for a stored row that is not one kevo
 * writes (options that are not a JSON object, ...); KEVO_ERR_DB. */
kevo_status kevo_gen_store_get(kevo_db *db, int64_t run_id, kevo_run_generator **v, int *n, kevo_err *err);
/* Frees rows v[0..n) and their options (v may be NULL). */
void kevo_run_generators_free(kevo_run_generator *v, int n);

/* The admission of LLM text is llm/admit/admit.h's (kevo_llm_admit). */

#endif /* KEVO_GEN_H */
