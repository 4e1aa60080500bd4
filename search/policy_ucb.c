/* policy_ucb.c — UCB1 (Auer, Cesa-Bianchi, Fischer 2002) with the nodes of
 * the search tree as arms: each proposal expands the evaluated node that
 * maximizes
 *     fitness / best  +  C * sqrt(ln(evaluated) / (1 + times expanded))
 * (exploit fit nodes, explore rarely expanded ones) by one operator
 * (kevo_search_mutate: the least applied operator at that node first, its
 * move drawn with the cost model as the prior).  While a family is below
 * its quota of the budget, only its nodes are arms; restarts are drawn with
 * the model as the prior.
 * Expansion counts come from the graph at each call, plus this batch's, so
 * a resumed run proposes what the uninterrupted one did. */
#include <math.h>
#include <stdlib.h>

#include "search/search.h"
#include "util/util.h"

#define UCB_C 0.2

/* The arm (node) with the highest UCB1 score among the evaluated nodes not
 * spent (of `family`, or of any when -1); -1 when none. */
static int ucb_arm(const kevo_search *s, int n, const bool *spent, const int *expanded, double best, double evaluated,
                   int family)
{
    int pick = -1;
    double pick_score = -1;
    for (int i = 0; i < n; i++) {
        if (!s->nodes[i].done || spent[i] || (family >= 0 && s->nodes[i].family != family))
            continue;
        double fit = best > 0 ? kevo_search_rank(&s->nodes[i]) / best : 0;
        double score = fit + UCB_C * sqrt(log(evaluated + 1.0) / (1.0 + expanded[i]));
        if (score > pick_score) {
            pick_score = score;
            pick = i;
        }
    }
    return pick;
}

static int ucb_propose(kevo_search *s, kevo_proposal *out, int max)
{
    int seeds = kevo_search_seeds(s, out, max);
    if (seeds > 0)
        return seeds;
    int n = s->nnodes, count = 0;
    int *expanded = calloc((size_t)n, sizeof *expanded);
    bool *spent = calloc((size_t)n, sizeof *spent);
    if (!expanded || !spent)
        goto done;
    double best = 0, evaluated = 0;
    for (int i = 0; i < n; i++) {
        const kevo_node *nd = &s->nodes[i];
        if (nd->parent >= 0)
            expanded[nd->parent]++;
        if (nd->parent2 >= 0)
            expanded[nd->parent2]++;
        if (nd->done) {
            evaluated += 1;
            if (kevo_search_rank(nd) > best)
                best = kevo_search_rank(nd);
        }
    }
    while (count < max) {
        int starved = kevo_search_starved(s, out, count);
        int pick = starved >= 0 ? ucb_arm(s, n, spent, expanded, best, evaluated, starved) : -1;
        if (pick < 0)
            pick = ucb_arm(s, n, spent, expanded, best, evaluated, -1);
        if (pick < 0) {
            /* every node is spent: a new root at random */
            if (kevo_search_prior_pick(s, out, count, &out[count], 1, "restart") == 0)
                break;
            count++;
            continue;
        }
        if (!kevo_search_mutate(s, pick, out, count, &out[count])) {
            spent[pick] = true;
            continue;
        }
        expanded[pick]++; /* counts this batch too, spreading it */
        count++;
    }
done:
    free(expanded);
    free(spent);
    return count;
}

const kevo_policy kevo_policy_ucb = {
    .name = "ucb",
    .summary = "UCB1 over the tree's nodes: exploit fit nodes, explore rarely expanded ones",
    .propose = ucb_propose,
};
