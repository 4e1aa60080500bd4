/* policy_greedy.c — greedy best-first with the cost model as the prior:
 * start from the seeds (each family's best under the model, warm starts),
 * then repeatedly expand the fittest evaluated node that still has
 * unevaluated neighbours (one operator step away) — the fittest of a family
 * below its quota of the budget first, so none is starved — proposing its
 * neighbours the model predicts within GR_SLACK of the best of them, best
 * first and one per operator per round.  When every evaluated node is fully
 * expanded, restart from a configuration drawn with the model as the
 * prior. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

#define GR_SCRATCH 2048
#define GR_SLACK 1.3 /* neighbours predicted slower than this times the best of them wait */
#define GR_MIN_TAKE 4

/* The best node (of `family`, or of any when -1) that is evaluated and has
 * unexplored neighbours, or -1. */
static int gr_pick(kevo_search *s, int family, kevo_proposal *scratch, int cap, int *found)
{
    *found = 0;
    for (;;) {
        int best = -1;
        double best_rank = -1;
        for (int i = 0; i < s->nnodes; i++) {
            const kevo_node *n = &s->nodes[i];
            if (!n->done || n->expansions < 0 || (family >= 0 && n->family != family))
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
    int seeds = kevo_search_seeds(s, out, max);
    if (seeds > 0)
        return seeds;
    kevo_proposal *all = malloc(GR_SCRATCH * sizeof *all);
    double *t = malloc(GR_SCRATCH * sizeof *t);
    int *order = malloc(GR_SCRATCH * sizeof *order);
    unsigned char *taken = calloc(GR_SCRATCH, 1); /* 2: taken this round */
    int n = 0, found = 0;
    if (!all || !t || !order || !taken)
        goto done;
    int starved = kevo_search_starved(s, NULL, 0);
    int node = starved >= 0 ? gr_pick(s, starved, all, GR_SCRATCH, &found) : -1;
    if (node < 0)
        node = gr_pick(s, -1, all, GR_SCRATCH, &found);
    if (node < 0) {
        n = kevo_search_prior_pick(s, NULL, 0, out, max, "restart");
        goto done;
    }
    s->nodes[node].expansions++;
    /* the neighbours by predicted time (unknown last, in their order) */
    for (int i = 0; i < found; i++)
        t[i] = kevo_search_predict(s, all[i].family, &all[i].cfg);
    if (!kevo_search_order(t, found, order))
        goto done;
    int usable = found;
    if (!isnan(t[order[0]])) {
        usable = 0;
        while (usable < found &&
               (usable < GR_MIN_TAKE || (!isnan(t[order[usable]]) && t[order[usable]] <= GR_SLACK * t[order[0]])))
            usable++;
    }
    /* one per operator per round, each round best first */
    while (n < max && n < usable) {
        for (int k = 0; k < usable && n < max; k++) {
            int i = order[k];
            if (taken[i])
                continue;
            bool op_in_round = false;
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
done:
    free(taken);
    free(order);
    free(t);
    free(all);
    return n;
}

const kevo_policy kevo_policy_greedy = {
    .name = "greedy",
    .summary = "best-first: expand the fittest node's untried neighbours, the model's likeliest first",
    .propose = gr_propose,
};
