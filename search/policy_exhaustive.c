/* policy_exhaustive.c — every valid configuration of every family, in the
 * cost model's order: the fastest predicted first across families (a
 * family without a model: its configurations in the space's order, after
 * the predicted ones). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "search/search.h"

static int ex_propose(kevo_search *s, kevo_proposal *out, int max)
{
    int *cur = calloc((size_t)s->nspaces, sizeof *cur); /* per family: position in its order */
    if (!cur)
        return 0;
    int count = 0;
    for (int f = 0; f < s->nspaces; f++)
        if (!kevo_search_valid_set(s, f)) {
            free(cur);
            return 0;
        }
    while (count < max) {
        int pick = -1;
        double pick_t = INFINITY;
        for (int f = 0; f < s->nspaces; f++) {
            const kevo_valid_set *vs = &s->valid[f];
            while (cur[f] < vs->n && kevo_search_find(s, f, &vs->cfgs[vs->order[cur[f]]]) >= 0)
                cur[f]++;
            if (cur[f] >= vs->n)
                continue;
            double t = vs->pred[vs->order[cur[f]]];
            if (isnan(t))
                t = INFINITY;
            if (pick < 0 || t < pick_t) {
                pick = f;
                pick_t = t;
            }
        }
        if (pick < 0)
            break;
        const kevo_valid_set *vs = &s->valid[pick];
        out[count] = (kevo_proposal){.family = pick, .cfg = vs->cfgs[vs->order[cur[pick]]], .parent = -1, .parent2 = -1};
        snprintf(out[count].move, sizeof out[count].move, "enumerate");
        count++;
        cur[pick]++;
    }
    free(cur);
    return count;
}

const kevo_policy kevo_policy_exhaustive = {
    .name = "exhaustive",
    .summary = "every valid configuration, the cost model's fastest first",
    .propose = ex_propose,
};
