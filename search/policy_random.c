/* policy_random.c — uniform samples of the valid configurations, without
 * replacement: the yardstick the other policies must beat. */
#include "search/search.h"

static int rn_propose(kevo_search *s, kevo_proposal *out, int max)
{
    return kevo_search_random(s, out, max, "random");
}

const kevo_policy kevo_policy_random = {
    .name = "random",
    .summary = "uniform random valid configurations",
    .propose = rn_propose,
};
