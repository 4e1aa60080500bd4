/* policy_greedy.c — greedy best-first: start from each family's default,
 * then repeatedly expand the fittest evaluated node that still has
 * unevaluated neighbours (one operator step away).  When every evaluated
 * node is fully expanded, restart from a random valid configuration. */
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

#define GR_SCRATCH 2048

/* The best node that is evaluated and has unexplored neighbours, or -1. */
static int gr_pick(kevo_search *s, kevo_proposal *scratch, int cap, int *found)
{
    int best = -1;
    double best_rank = -1;
    *found = 0;
    /* consider nodes best-first; the first with neighbours wins */
    for (;;) {
        best = -1;
        best_rank = -1;
        for (int i = 0; i < s->nnodes; i++) {
            const kevo_node *n = &s->nodes[i];
            if (!n->done || n->expansions < 0)
                continue;
            double r = kevo_search_rank(n);
            if (r > best_rank) {
                best_rank = r;
                best = i;
            }
        }
        if (best < 0)
            return -1;
        *found = kevo_search_neighbours(s, best, scratch, cap);
        if (*found > 0)
            return best;
        s->nodes[best].expansions = -1; /* fully expanded: never pick again */
    }
}

static int gr_propose(kevo_search *s, kevo_proposal *out, int max)
{
    if (s->nnodes == 0)
        return kevo_search_seeds(s, out, max);
    kevo_proposal *all = malloc(GR_SCRATCH * sizeof *all);
    if (!all)
        return 0;
    int found = 0;
    int node = gr_pick(s, all, GR_SCRATCH, &found);
    if (node < 0) {
        free(all);
        return kevo_search_random(s, out, max, "restart");
    }
    s->nodes[node].expansions++;
    /* a seeded shuffle, then axes in turn: a partial batch covers as many
     * operators as it can instead of mostly the widest axis */
    for (int i = found - 1; i > 0; i--) {
        int j = (int)kv_rand_below(&s->rng, (uint64_t)i + 1);
        kevo_proposal t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    int n = 0;
    unsigned char *taken = calloc((size_t)found, sizeof *taken); /* 2: taken this round */
    if (!taken) {
        free(all);
        return 0;
    }
    while (n < max && n < found) {
        for (int i = 0; i < found && n < max; i++) {
            if (taken[i])
                continue;
            bool op_in_round = false; /* one per operator per round */
            for (int j = 0; j < found && !op_in_round; j++)
                op_in_round = taken[j] == 2 && strcmp(all[j].op, all[i].op) == 0;
            if (op_in_round)
                continue;
            taken[i] = 2;
            out[n++] = all[i];
        }
        for (int i = 0; i < found; i++)
            if (taken[i] == 2)
                taken[i] = 1;
    }
    free(taken);
    free(all);
    return n;
}

const kevo_policy kevo_policy_greedy = {
    .name = "greedy",
    .summary = "best-first: expand the fittest node's untried neighbours",
    .propose = gr_propose,
};
