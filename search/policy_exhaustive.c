/* policy_exhaustive.c — every valid configuration of every family, in the
 * spaces' mixed-radix order. */
#include <stdio.h>

#include "search/search.h"

static int ex_propose(kevo_search *s, kevo_proposal *out, int max)
{
    int count = 0;
    for (int f = 0; f < s->nspaces && count < max; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (!vs)
            return count;
        for (int i = 0; i < vs->n && count < max; i++) {
            if (kevo_search_find(s, f, &vs->cfgs[i]) >= 0)
                continue;
            out[count] = (kevo_proposal){.family = f, .cfg = vs->cfgs[i], .parent = -1, .parent2 = -1};
            snprintf(out[count].op, sizeof out[count].op, "enumerate");
            count++;
        }
    }
    return count;
}

const kevo_policy kevo_policy_exhaustive = {
    .name = "exhaustive",
    .summary = "every valid configuration, in order",
    .propose = ex_propose,
};
