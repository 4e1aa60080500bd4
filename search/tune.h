/* tune.h — `kevo tune` and `kevo verify`: the search loop and the
 * per-candidate pipeline (render -> plan -> compile through the cache ->
 * verify and time on the GPU -> store). */
#ifndef KEVO_TUNE_H
#define KEVO_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "kevo.h"

typedef struct kevo_tune_opts {
    const char *op;         /* "ikbo_lce" */
    const char *shape;      /* shape text; NULL: the op's default */
    const char *dtype;      /* "fp16" (default) or "bf16" */
    const char *arch;       /* "sm_90a" (default) */
    const char *policy;     /* "greedy" (default) */
    const char *families;   /* comma list of template families; NULL: all of the op's */
    const char *db_path;    /* "kevo.db" */
    const char *data_dir;   /* folder holding templates/ and kernels/ */
    int64_t budget;         /* candidates to evaluate */
    uint64_t seed;
    bool compile_only;
    int jobs;               /* parallel compiles */
    double compile_timeout; /* seconds per compile */
    double eval_timeout;    /* seconds per GPU evaluation */
    int warmup, reps;
    int device;
    unsigned maps;          /* cand_to_user kinds every candidate is verified on */
    int progress;           /* 1 lines, 2 lines and a live bar, 0 quiet */
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
} kevo_tune_opts;

/* Defaults for every field. */
void kevo_tune_opts_init(kevo_tune_opts *o);

/* Run a search, or with resume_run continue a stored one (a killed run:
 * candidates it left pending are evaluated first, nothing finished is redone,
 * and the proposals are those an uninterrupted run with the same seed would
 * have made).  *run_id receives the run.  Candidate failures are rows, not
 * errors.  KEVO_ERR_BUSY when the run is held by a live process.  Errors: bad options (KEVO_ERR_ARG, KEVO_ERR_NOT_FOUND,
 * KEVO_ERR_UNSUPPORTED), no GPU (KEVO_ERR_NO_GPU), DB and I/O errors. */
kevo_status kevo_tune(const kevo_tune_opts *o, int64_t *run_id, kevo_err *err);

/* `kevo verify`: re-check a stored candidate (its family and params) at
 * another shape, dtype or cand_to_user map, and time it against the baseline
 * at that shape when `time`.  Prints one line per check to stdout.  Returns
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

kevo_status kevo_verify(const kevo_verify_opts *o, bool *passed, kevo_err *err);

#endif /* KEVO_TUNE_H */
