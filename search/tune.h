/* tune.h — `kevo tune` and `kevo verify`: the search loop and the
 * per-candidate pipeline (render -> plan -> compile through the cache ->
 * verify and time on the GPU -> store). */
#ifndef KEVO_TUNE_H
#define KEVO_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "kevo.h"

/* Options a caller named (bits of kevo_tune_opts.given): a resumed run
 * compares each with what it stored (see kevo_tune). */
enum {
    KEVO_TUNE_GIVEN_OP = 1u << 0,
    KEVO_TUNE_GIVEN_SHAPE = 1u << 1,
    KEVO_TUNE_GIVEN_DTYPE = 1u << 2,
    KEVO_TUNE_GIVEN_ARCH = 1u << 3,
    KEVO_TUNE_GIVEN_POLICY = 1u << 4,
    KEVO_TUNE_GIVEN_FAMILIES = 1u << 5,
    KEVO_TUNE_GIVEN_BUDGET = 1u << 6,
    KEVO_TUNE_GIVEN_SEED = 1u << 7,
    KEVO_TUNE_GIVEN_COMPILE_ONLY = 1u << 8,
    KEVO_TUNE_GIVEN_CTIMEOUT = 1u << 9,
    KEVO_TUNE_GIVEN_ETIMEOUT = 1u << 10,
    KEVO_TUNE_GIVEN_REPS = 1u << 11,
    KEVO_TUNE_GIVEN_WARMUP = 1u << 12,
    KEVO_TUNE_GIVEN_MAPS = 1u << 13,
    KEVO_TUNE_GIVEN_TEMPLATES = 1u << 14,
    KEVO_TUNE_GIVEN_WHERE = 1u << 15,
    KEVO_TUNE_GIVEN_TIME_LIMIT = 1u << 16,
    KEVO_TUNE_GIVEN_PLATEAU = 1u << 17,
    KEVO_TUNE_GIVEN_TARGET = 1u << 18,
    KEVO_TUNE_GIVEN_WARM = 1u << 19,
    KEVO_TUNE_GIVEN_SHAPES = 1u << 20,
    KEVO_TUNE_GIVEN_BATCH = 1u << 21,
    KEVO_TUNE_GIVEN_GENERATORS = 1u << 22,
    KEVO_TUNE_GIVEN_LLM_URL = 1u << 23,
    KEVO_TUNE_GIVEN_LLM_MODEL = 1u << 24,
    KEVO_TUNE_GIVEN_LLM_TEMPERATURE = 1u << 25,
    KEVO_TUNE_GIVEN_LLM_SEED = 1u << 26,
    KEVO_TUNE_GIVEN_LLM_BUDGET = 1u << 27,
    KEVO_TUNE_GIVEN_LLM_MAX_TOKENS = 1u << 28,
    KEVO_TUNE_GIVEN_AHEAD = 1u << 29,
    /* --llm-timeout, --llm-retries, --llm-prompt-chars or --prompts (this
     * process's LLM settings: never stored, but given for an LLM only) */
    KEVO_TUNE_GIVEN_LLM_OTHER = 1u << 30,
};

#define KEVO_TUNE_BATCH 8      /* proposals per round by default */
#define KEVO_TUNE_BATCH_MAX 256
#define KEVO_TUNE_AHEAD 3      /* rounds in flight by default (README, "Many GPUs and many hosts") */
#define KEVO_TUNE_AHEAD_MAX 16
#define KEVO_TUNE_TIMEOUT_MAX 86400 /* seconds: the most a compile or an evaluation may be given */

typedef struct kevo_tune_opts {
    const char *op;         /* an op's name (kevo_op_find); default: the table's first */
    const char *shape;      /* shape text; NULL: the op's default */
    const char *dtype;      /* "fp16" (default) or "bf16" */
    const char *arch;       /* "sm_90a" (default); kevo_tune_archs: a comma list for compile-only runs */
    const char *policy;     /* "greedy" (default) */
    const char *families;   /* comma list of template families; NULL: all of the op's */
    const char *db_path;    /* "kevo.db" */
    const char *data_dir;   /* folder holding templates/ and kernels/ */
    int64_t budget;         /* candidates to evaluate */
    uint64_t seed;
    bool compile_only;
    int batch;              /* proposals per round (the policy sees results between rounds); part of the run */
    int ahead;              /* rounds in flight: round j + ahead is proposed once round j's results are all
                               in, so compiles run ahead of the GPUs; part of the run (1: a round at a time) */
    int jobs;               /* parallel compiles (at most batch at once); not part of the run: the proposals
                               never depend on it */
    double compile_timeout; /* seconds per compile */
    double eval_timeout;    /* seconds per GPU evaluation */
    int warmup, reps;
    int device;             /* the GPU when devices is NULL */
    /* GPUs evaluating at once, one worker each: "all" or a comma list of ordinals ("0,2");
       NULL: device.  Like jobs, not part of the run: results are applied in proposal order */
    const char *devices;
    bool mixed_devices;     /* accept GPUs of different models in devices (each its own peers) */
    unsigned maps;          /* cand_to_user kinds every candidate is verified on */
    /* where the run's lines, warnings, progress and (each candidate's steps) traces go: every event
       (include/kevo.h); NULL: the run is silent.  Not part of the run */
    kevo_event_fn on_event;
    void *event_ctx;
    const char *extra_templates; /* another folder of template families, or NULL */
    int64_t resume_run;     /* > 0: continue this run of db_path with its stored settings */
    const char *where;      /* expression over params the configurations must satisfy, or NULL */
    /* termination besides the budget and an exhausted space (0: off) */
    double time_limit;      /* seconds of wall time */
    int64_t plateau;        /* stop after this many candidates without a better one */
    double target;          /* stop once a candidate reaches this speedup */
    const char *warm_start; /* DB whose earlier winners at the nearest shapes seed the run; NULL: db_path
                               itself; "none": no warm start */
    const char *shapes_file; /* a distribution (search/dist.h): one search whose fitness is the weighted
                                geometric mean of vs_best_peer over its shapes; NULL: one shape */
    uint32_t given;          /* KEVO_TUNE_GIVEN_* of the options the user named (a resume checks them) */
    /* generators (search/gen.h): "template" (default), "template,llm" or "llm" (templates seed it) */
    const char *generators;
    const char *llm_url;     /* API base of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 */
    const char *llm_model;   /* NULL: not sent */
    double llm_temperature;  /* NaN: not sent */
    int64_t llm_seed;        /* -1: not sent; call k sends llm_seed + k */
    int64_t llm_budget;      /* LLM calls the run may make (each is one candidate of --budget) */
    int llm_max_tokens;      /* 0: not sent */
    double llm_timeout;      /* seconds per HTTP attempt */
    int llm_retries;         /* retries after a 429, a 5xx or a failed connection (this process's) */
    int llm_prompt_chars;    /* cap on a prompt's user message, bytes (the server's context; this process's) */
    const char *prompts_dir; /* NULL: data_dir/prompts */
    /* rank 0 of an MPI job (evaluator/mpi.h, kevo_mpi_start): each batch's compiles are spread over the
       ranks; NULL: all here.  Like jobs, not part of the run: the proposals never depend on it */
    struct kevo_mpi *mpi;
} kevo_tune_opts;

/* Defaults for every field. */
void kevo_tune_opts_init(kevo_tune_opts *o);

/* Run a search, or with resume_run continue a stored one (a killed or
 * interrupted run: candidates it left pending are evaluated first, nothing
 * finished is redone, and the proposals are those an uninterrupted run with
 * the same seed would have made).  The proposals are a function of the seed,
 * policy, budget, batch, shape(s), families, --where and the results in
 * proposal order; never of jobs or of timing.  *run_id receives the run.
 *
 * Resume: every option the run stored is taken from the DB.  An option in
 * o->given that defines the run (op, shape(s), dtype, arch, policy, families,
 * seed, compile-only, where, warm start, templates, maps, reps, warmup,
 * batch) and differs from the stored one is refused (KEVO_ERR_ARG naming
 * it); a larger budget and another time limit, plateau or target extend the
 * run and are stored; timeouts, jobs and device apply to this process.  A
 * finished run that nothing extends is left as it is.  A space file changed
 * since the run started is refused (KEVO_ERR_UNSUPPORTED naming the family)
 * before anything is written.
 *
 * SIGINT, SIGTERM and the other signals kv_signals_catch records (SIGHUP,
 * SIGXFSZ, ...) stop the run between two steps: the run is stored as
 * `interrupted`, its children are killed, and KEVO_ERR_INTERRUPTED comes
 * back with the --resume command in err (kv_signal_caught() names the
 * signal).  Candidate failures (compile, plan, verification) are rows, not
 * errors.  KEVO_ERR_BUSY when the run is held by a live process.  Errors: bad
 * options (KEVO_ERR_ARG: a usage error; KEVO_ERR_NOT_FOUND,
 * KEVO_ERR_UNSUPPORTED), a space file whose constraints fail to evaluate
 * (KEVO_ERR_PARSE), no GPU (KEVO_ERR_NO_GPU), DB and I/O errors.  Nothing is
 * written to the DB for a new run whose options are refused.
 *
 * Generators: with "llm", every round that has no LLM call in flight starts
 * one (the llm operator, on the parent kevo_search_llm_parent picks) while
 * calls remain (llm_budget); the call runs in a worker process while the
 * round's template candidates compile and run, and its reply becomes a
 * candidate (or an llm_error, parse_error or rejected one) with an `llm`
 * edge and a generations row.  The LLM is called only at o->llm_url: a
 * resume without one makes no LLM call (one line says so; the URL a DB
 * stores is never called, since the DB may come from anywhere and the API
 * key goes with every call); LLM options without the llm generator are
 * KEVO_ERR_ARG, as is a URL holding credentials.  When the LLM does not
 * answer, the run goes on with templates (one line says so).  A stored LLM
 * candidate is admitted again (kevo_gen_llm_admit) before anything of it
 * is compiled: one refused fails the resume (KEVO_ERR_PARSE).
 *
 * A resume claims the run in the transaction that marks it running: one
 * held by another live process, or changed since this one read it (two
 * resumes started together), is KEVO_ERR_BUSY naming the holder's pid,
 * before anything is written.  A GPU run resumed where there is no GPU
 * fails (KEVO_ERR_NO_GPU) before anything is written.  A compile-only run
 * resumed without --compile-only on a machine with a GPU is continued
 * there: its compiled candidates are verified and timed first, then the
 * search goes on. */
kevo_status kevo_tune(const kevo_tune_opts *o, int64_t *run_id, kevo_err *err);

#define KEVO_TUNE_ARCHS_MAX 8 /* architectures in one --arch list */

/* kevo_tune over o->arch as a comma list ("sm_80,sm_90a,sm_100a"): one
 * compile-only run per arch, in the order given, into the same DB with the
 * same seed and options, each over the requested families (o->families, or
 * all of the op's) that declare that arch (each other one is left out with
 * a line on stderr, as kevo_tune does).  run_ids[0..*nruns) receive the
 * runs made, in order (at most KEVO_TUNE_ARCHS_MAX; on an error, those
 * made before it).  One arch (no comma) is exactly kevo_tune.
 *
 * Checked before anything is written (KEVO_ERR_ARG): the list (every name
 * known, none empty, none twice), that it is a new compile-only run (a GPU
 * run and a resume take one arch), and that every arch has a requested
 * family declaring it; then each arch's families must support the shape(s)
 * there (KEVO_ERR_UNSUPPORTED, as kevo_tune).  A run that fails or is
 * interrupted ends the list: its error comes back, naming the
 * architectures not started. */
kevo_status kevo_tune_archs(const kevo_tune_opts *o, int64_t *run_ids, int *nruns, kevo_err *err);

/* `kevo verify`: re-check a stored candidate (its family and params) at
 * another shape, dtype or cand_to_user map, and time it against the baseline
 * at that shape when `time`.  Reports one LINE event per check (and the
 * timing's lines) to o->on_event.  Returns
 * KEVO_OK only when every check passed.  Reads the DB only (kevo_db_open_ro):
 * it writes nothing there, not even the compile cache, and without a GPU it
 * fails (KEVO_ERR_NO_GPU) before opening the DB. */
typedef struct kevo_verify_opts {
    const char *db_path;
    const char *data_dir;
    int64_t candidate_id;  /* 0: the best of run_id (or of the last run) */
    int64_t run_id;
    const char *shape;     /* NULL: the run's */
    const char *dtype;     /* NULL: the run's */
    const char *arch;      /* NULL: the run's */
    unsigned maps;
    bool time;
    int warmup, reps;
    int device;
    double eval_timeout;
    double compile_timeout;
    uint64_t seed;
    const char *extra_templates;
    kevo_event_fn on_event; /* one LINE per check and one for the timing; NULL: silent */
    void *event_ctx;
} kevo_verify_opts;

void kevo_verify_opts_init(kevo_verify_opts *o);

kevo_status kevo_verify(const kevo_verify_opts *o, bool *passed, kevo_err *err);

#endif /* KEVO_TUNE_H */
