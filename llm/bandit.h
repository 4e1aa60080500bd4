/* bandit.h — choosing among several models for each LLM call
 * (--llm-model a,b,...): UCB1 over the improvement each model's candidates
 * brought, as ShinkaEvolve picks its models.  Pure arithmetic: the caller
 * feeds it every earlier call's model and reward (from the DB, so a resumed
 * run picks as the first process would have). */
#ifndef KEVO_LLM_BANDIT_H
#define KEVO_LLM_BANDIT_H

#include <stdbool.h>

#define KEVO_BANDIT_MAX 8          /* models of one run */
#define KEVO_BANDIT_NAME_MAX 128   /* bytes of a model's name, NUL included */

/* The arms and what each has earned. */
typedef struct kevo_bandit {
    int n;                                       /* models; 0: none given */
    char name[KEVO_BANDIT_MAX][KEVO_BANDIT_NAME_MAX];
    int pulls[KEVO_BANDIT_MAX];                  /* calls made with it */
    double reward[KEVO_BANDIT_MAX];              /* the sum of their rewards, each in [0, 1] */
} kevo_bandit;

/* The models of a comma list ("a,b"; "" or NULL: none) into b, stats zeroed.
 * false (b->n 0) for an empty name, a repeated one, one too long or with
 * bytes outside printable ASCII, or more than KEVO_BANDIT_MAX of them. */
bool kevo_bandit_parse(const char *list, kevo_bandit *b);

/* One earlier call of model (a name not among the arms is ignored): its
 * reward, clamped to [0, 1]. */
void kevo_bandit_add(kevo_bandit *b, const char *model, double reward);

/* The arm of the next call: the first never pulled, else the highest
 * mean + sqrt(2 ln(total pulls) / pulls) (ties: the first); -1 when b has
 * no arm. */
int kevo_bandit_pick(const kevo_bandit *b);

/* The reward of one call from its candidate: 0 for a failed one; for a
 * timed one the improvement over its parent, fitness / parent_fitness - 1,
 * clamped to [0, 1] (a parent without fitness counts as 1); for one that
 * compiled but was not timed (a compile-only run) 0.5. */
double kevo_bandit_reward(bool failed, double fitness, double parent_fitness);

#endif /* KEVO_LLM_BANDIT_H */
