/* policy.c — the table of selection policies, found by name.  Adding a
 * policy: one file with its kevo_policy, one line here. */
#include <string.h>

#include "search/search.h"

extern const kevo_policy kevo_policy_exhaustive;
extern const kevo_policy kevo_policy_greedy;
extern const kevo_policy kevo_policy_random;
extern const kevo_policy kevo_policy_ucb;
extern const kevo_policy kevo_policy_evolve;

static const kevo_policy *const sp_policies[] = {
    &kevo_policy_greedy,
    &kevo_policy_exhaustive,
    &kevo_policy_random,
    &kevo_policy_ucb,
    &kevo_policy_evolve,
};

const kevo_policy *kevo_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof sp_policies / sizeof sp_policies[0]; i++)
        if (strcmp(sp_policies[i]->name, name) == 0)
            return sp_policies[i];
    return NULL;
}

const kevo_policy *const *kevo_policy_list(int *n)
{
    *n = (int)(sizeof sp_policies / sizeof sp_policies[0]);
    return sp_policies;
}
