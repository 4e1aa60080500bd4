/* tune.h — `kevo tune` and `kevo verify`: the search loop
 * (propose -> prepare -> evaluate -> record -> stop?) and the per-candidate
 * pipeline (render -> plan -> compile through the cache -> verify and time
 * on the GPU -> store).  The loop's files are search/tune/ (tune_int.h
 * walks them); its options are what defines a run (kevo_run_def, stored
 * with it), what this process brings (kevo_tune_proc) and each generator's
 * own (kevo_gen_opts, search/gen.h). */
#ifndef KEVO_TUNE_H
#define KEVO_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "kevo.h"
#include "search/gen.h"

/* Options a caller named (bits of kevo_tune_opts.given): a resumed run
 * compares each with what it stored (see kevo_tune).  The LLM's are its
 * own (KEVO_LLM_GIVEN_*, search/gen.h). */
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
    KEVO_TUNE_GIVEN_AHEAD = 1u << 23,
};

#define KEVO_TUNE_BATCH 8      /* proposals per round by default */
#define KEVO_TUNE_BATCH_MAX 256
#define KEVO_TUNE_AHEAD 3      /* rounds in flight by default (README, "Many GPUs and many hosts") */
#define KEVO_TUNE_AHEAD_MAX 16
#define KEVO_TUNE_TIMEOUT_MAX 86400 /* seconds: the most a compile or an evaluation may be given */

/* What defines a run: stored with it, compared on resume (a resumed run
 * takes each from the DB; one given that differs is refused, but for the
 * budget and the termination rules, which may extend it). */
typedef struct kevo_run_def {
    const char *op;          /* an op's name (kevo_op_find); default: the table's first */
    const char *shape;       /* shape text; NULL: the op's default */
    const char *shapes_file; /* a distribution (search/dist.h): one search whose fitness is the weighted geometric
                                mean of vs_best_peer over its shapes; NULL: one shape */
    const char *dtype;       /* "fp16" (default) or "bf16" */
    const char *arch;        /* "sm_90a" (default); kevo_tune_archs: a comma list for compile-only runs */
    const char *policy;      /* "greedy" (default) */
    const char *families;    /* comma list of template families; NULL: all of the op's */
    const char *where;       /* expression over params the configurations must satisfy, or NULL */
    const char *extra_templates; /* another folder of template families, or NULL */
    const char *warm_start;  /* DB whose earlier winners at the nearest shapes seed the run; NULL: the run's DB
                                itself; "none": no warm start */
    /* generators (search/gen.h): "template" (default), "template,llm", "llm" (templates seed it),
       "template,mutate", ...; each one's options are in kevo_tune_opts.gen */
    const char *generators;
    int64_t budget;          /* candidates to evaluate */
    uint64_t seed;
    bool compile_only;
    int batch;               /* proposals per round (the policy sees results between rounds) */
    int ahead;               /* rounds in flight: round j + ahead is proposed once round j's results are all
                                in, so compiles run ahead of the GPUs (1: a round at a time) */
    unsigned maps;           /* cand_to_user kinds every candidate is verified on */
    int warmup, reps;
    /* termination besides the budget and an exhausted space (0: off) */
    double time_limit;       /* seconds of wall time */
    int64_t plateau;         /* stop after this many candidates without a better one */
    double target;           /* stop once a candidate reaches this speedup */
} kevo_run_def;

/* What this process brings to a run: never part of what defines it (the
 * proposals never depend on it).  The timeouts are stored with the run as
 * the defaults of a resume that names none, never compared. */
typedef struct kevo_tune_proc {
    const char *db_path;     /* "kevo.db" */
    const char *data_dir;    /* folder holding templates/, kernels/ and prompts/ */
    int jobs;                /* parallel compiles (at most batch at once) */
    double compile_timeout;  /* seconds per compile */
    double eval_timeout;     /* seconds per GPU evaluation */
    int device;              /* the GPU when devices is NULL */
    /* GPUs evaluating at once, one worker each: "all" or a comma list of ordinals ("0,2"); NULL: device.
       Results are applied in proposal order */
    const char *devices;
    bool mixed_devices;      /* accept GPUs of different models in devices (each its own peers) */
    /* rank 0 of an MPI job (evaluator/mpi.h, kevo_mpi_start): each batch's compiles are spread over the
       ranks; the tune makes its kevo_ctx the job's (kevo_mpi_set_ctx: its notes, its cancel), and leaves
       it so; NULL: all here */
    struct kevo_mpi *mpi;
} kevo_tune_proc;

typedef struct kevo_tune_opts {
    kevo_run_def def;        /* what defines the run */
    kevo_tune_proc proc;     /* this process's resources */
    kevo_gen_opts gen;       /* each generator's options (search/gen.h: the LLM's) */
    int64_t resume_run;      /* > 0: continue this run of proc.db_path with its stored settings */
    uint32_t given;          /* KEVO_TUNE_GIVEN_* of the options the user named (a resume checks them) */
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
 * Resume: every option the run stored (o->def, the generators' stored
 * options) is taken from the DB.  An option in o->given that defines the
 * run (op, shape(s), dtype, arch, policy, families, seed, compile-only,
 * where, warm start, templates, maps, reps, warmup, batch, ahead,
 * generators) and differs from the stored one is refused (KEVO_ERR_ARG
 * naming it); a larger budget and another time limit, plateau or target
 * extend the run and are stored; o->proc (timeouts, jobs, devices) applies
 * to this process.  A
 * finished run that nothing extends is left as it is.  A space file changed
 * since the run started is refused (KEVO_ERR_UNSUPPORTED naming the family)
 * before anything is written.
 *
 * ctx (include/kevo.h) takes the run's lines, warnings, progress and (each
 * candidate's steps) traces, and its error buffer the failure.
 * kevo_ctx_cancel(ctx, why) (the CLI's handlers for SIGINT, SIGTERM, SIGHUP,
 * SIGXFSZ, ...) stops the run between two steps: the run is stored as
 * `interrupted`, its children are killed, and KEVO_ERR_INTERRUPTED comes
 * back with the --resume command in the error (naming the signal why).
 * Candidate failures (compile, plan, verification) are rows, not errors.
 * KEVO_ERR_BUSY when the run is held by a live process.  Errors: bad
 * options (KEVO_ERR_ARG: a usage error; KEVO_ERR_NOT_FOUND,
 * KEVO_ERR_UNSUPPORTED), a space file whose constraints fail to evaluate
 * (KEVO_ERR_PARSE), no GPU (KEVO_ERR_NO_GPU), DB and I/O errors.  Nothing is
 * written to the DB for a new run whose options are refused.
 *
 * Generators (search/gen.h): every round that has no call of a generator in
 * flight starts one (on the parent the generator picks) while its calls
 * remain; the call runs beside the round's template candidates, and its
 * result becomes a candidate (or a failed one) with an edge of the
 * generator's move.  With "llm", a reply becomes a candidate (or a
 * gen_error, parse_error or rejected one) with an `llm` edge and a
 * generations row; the LLM is called only at o->gen.llm.url: a resume
 * without one makes no LLM call (one line says so; the URL a DB stores is
 * never called, since the DB may come from anywhere and the API key goes
 * with every call); LLM options without the llm generator are
 * KEVO_ERR_ARG, as is a URL holding credentials.  When the LLM does not
 * answer, the run goes on with templates (one line says so).  A stored LLM
 * candidate is admitted again (kevo_llm_admit) before anything of it
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
kevo_status kevo_tune(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_id);

#define KEVO_TUNE_ARCHS_MAX 8 /* architectures in one --arch list */

/* kevo_tune over o->def.arch as a comma list ("sm_80,sm_90a,sm_100a"): one
 * compile-only run per arch, in the order given, into the same DB with the
 * same seed and options, each over the requested families (o->def.families, or
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
kevo_status kevo_tune_archs(kevo_ctx *ctx, const kevo_tune_opts *o, int64_t *run_ids, int *nruns);

/* `kevo verify`: re-check a stored candidate (its family and params) at
 * another shape, dtype or cand_to_user map, and time it against the baseline
 * at that shape when `time`.  Reports one LINE event per check (and the
 * timing's lines) to ctx's callback, and a failure to its error buffer.  Returns
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
} kevo_verify_opts;

void kevo_verify_opts_init(kevo_verify_opts *o);

kevo_status kevo_verify(kevo_ctx *ctx, const kevo_verify_opts *o, bool *passed);

#endif /* KEVO_TUNE_H */
