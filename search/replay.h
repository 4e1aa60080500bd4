/* replay.h — run a policy against fitness values already measured on a GPU
 * (a landscape: one run of a DB that evaluated the whole space, or a large
 * sample of it), with no GPU.  The space is restricted to the landscape's
 * configurations and its --where filter; each "evaluation" looks the fitness
 * up.  A replay reaches the target once it has evaluated a candidate within
 * (1 - target) of the landscape's best.  KEVO_REPLAY_TRACE=1 in the
 * environment prints every evaluation to stderr. */
#ifndef KEVO_REPLAY_H
#define KEVO_REPLAY_H

#include <stdint.h>

#include "kevo.h"

typedef struct kevo_replay_opts {
    const char *db_path;
    const char *data_dir;        /* templates/ and kernels/ */
    const char *extra_templates; /* or NULL */
    int64_t run_id;              /* 0: the DB's last run */
    const char *policy;
    int seeds;                   /* replays of the policy (and of random), seeds 1..seeds */
    double target;               /* fraction of the best fitness, e.g. 0.95 */
    int batch;                   /* proposals per policy call (default 1: each sees every earlier result) */
    int ahead;                   /* batches proposed before the oldest one's results (default 1) */
    double noise;                /* > 0: also the noise replays (kevo_replay_result.parted), relative sigma */
    int budget;                  /* evaluations of each noise replay (default 120) */
} kevo_replay_opts;

typedef struct kevo_replay_result {
    int landscape;             /* configurations with a measured fitness */
    double best;               /* the landscape's best fitness */
    double median_evals;       /* the policy's median evaluations to the target */
    double exhaustive_evals;   /* evaluations the exhaustive order needs */
    double random_median_evals;
    int reached;               /* replays of the policy that reached the target */
    int *evals;                /* per seed (landscape + 1: not reached); malloc'd, caller frees */
    /* With noise > 0, per seed two replays of budget evaluations, each fitness
     * multiplied by exp(noise * z), z standard normal, drawn anew for each
     * replay (two GPUs measuring one graph): the evaluation at which their
     * graphs (configuration, parent and operator of each proposal) first
     * differ, budget + 1 when they never do.  Malloc'd, caller frees. */
    int *parted;
    int parted_runs;           /* seeds whose two replays parted */
    double parted_median;      /* median of parted[] (budget + 1 counts as never) */
} kevo_replay_result;

void kevo_replay_opts_init(kevo_replay_opts *o);

/* ctx's callback gets a DEBUG event per evaluation of every replay (cand_id:
 * its number in the replay; text "operator p=parent fitness
 * configuration"); a failure goes to ctx's error buffer.  Errors: the DB's
 * and the policy's; KEVO_ERR_NOT_FOUND when the run has no verified
 * candidate. */
kevo_status kevo_replay(kevo_ctx *ctx, const kevo_replay_opts *o, kevo_replay_result *r);

/* How well a family's cost model ranks a landscape's verified candidates. */
typedef struct kevo_model_fit {
    char family[64];     /* "all": every family of the run together */
    int n;               /* verified candidates with a prediction */
    double spearman;     /* rank correlation of predicted and measured times */
    double top1_ratio;   /* best measured time over that of the model's first choice (1: it chose the best) */
    int rank_of_best;    /* where the measured best stands in the model's order, from 1 */
} kevo_model_fit;

/* `kevo replay --model`: the model's predictions for the run's verified
 * candidates (with the run's device: SM count and measured ceilings)
 * against their measured median times.  *fits malloc'd (caller frees): one
 * per family with a model, then "all" when there are several.  Errors: the
 * DB's; KEVO_ERR_NOT_FOUND when no candidate has a prediction. */
kevo_status kevo_replay_model(kevo_ctx *ctx, const kevo_replay_opts *o, kevo_model_fit **fits, int *nfits);

#endif /* KEVO_REPLAY_H */
