/* policy_ucb.c — UCB1 over the search tree (Auer, Cesa-Bianchi, Fischer
 * 2002; as in Monte-Carlo tree search).  Each proposal descends from the
 * roots, at every node taking the child that maximizes
 *     value + C * sqrt(ln(visits(node)) / visits(child))
 * where value is the best fitness in the child's subtree over the best so far
 * and visits is the subtree's size; a node expands (a new neighbour, one
 * operator step away) while it has fewer children than 1 + 2*sqrt(visits)
 * (progressive widening).  Statistics are recomputed from the graph at each
 * call, so a resumed run proposes what the uninterrupted one did. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

#define UCB_C 0.35

typedef struct ucb_stats {
    double *value;   /* best rank in the subtree, over the global best */
    double *visits;  /* subtree size, plus virtual visits of this call */
    int *children;   /* count */
    bool *dead;      /* nothing left to expand below (this call) */
} ucb_stats;

/* Whether the node may take another child now. */
static bool ucb_can_widen(const ucb_stats *st, int node)
{
    return st->children[node] < 1 + (int)(2.0 * sqrt(st->visits[node]));
}

static int ucb_propose(kevo_search *s, kevo_proposal *out, int max)
{
    if (s->nnodes == 0)
        return kevo_search_seeds(s, out, max);
    int n = s->nnodes;
    ucb_stats st;
    st.value = calloc((size_t)n, sizeof *st.value);
    st.visits = calloc((size_t)n, sizeof *st.visits);
    st.children = calloc((size_t)n, sizeof *st.children);
    st.dead = calloc((size_t)n, sizeof *st.dead);
    int count = 0;
    if (!st.value || !st.visits || !st.children || !st.dead)
        goto done;
    double best = 0;
    for (int i = 0; i < n; i++)
        if (kevo_search_rank(&s->nodes[i]) > best)
            best = kevo_search_rank(&s->nodes[i]);
    /* children come after their parents: fold the subtrees bottom-up */
    for (int i = n - 1; i >= 0; i--) {
        const kevo_node *nd = &s->nodes[i];
        st.visits[i] += 1;
        double v = best > 0 ? kevo_search_rank(nd) / best : 0;
        if (v > st.value[i])
            st.value[i] = v;
        if (nd->parent >= 0) {
            st.visits[nd->parent] += st.visits[i];
            st.children[nd->parent]++;
            if (st.value[i] > st.value[nd->parent])
                st.value[nd->parent] = st.value[i];
        }
    }
    double root_visits = 0;
    for (int i = 0; i < n; i++)
        if (s->nodes[i].parent < 0)
            root_visits += st.visits[i];

    while (count < max) {
        int cur = -1, path[256], depth = 0;
        bool proposed = false;
        for (;;) {
            if (cur >= 0 && s->nodes[cur].done && ucb_can_widen(&st, cur) &&
                kevo_search_mutate(s, cur, out, count, &out[count])) {
                proposed = true;
                break;
            }
            /* descend to the best live child */
            double parent_visits = cur >= 0 ? st.visits[cur] : root_visits;
            int pick = -1;
            double pick_score = -1;
            for (int i = 0; i < n; i++) {
                if (s->nodes[i].parent != cur || st.dead[i])
                    continue;
                double score = st.value[i] + UCB_C * sqrt(log(parent_visits + 1.0) / st.visits[i]);
                if (score > pick_score) {
                    pick_score = score;
                    pick = i;
                }
            }
            if (pick < 0) {
                if (cur < 0)
                    break; /* every root is dead */
                st.dead[cur] = true;
                cur = -1;
                depth = 0;
                continue;
            }
            cur = pick;
            if (depth < (int)KV_ARRAY_LEN(path))
                path[depth++] = cur;
        }
        if (!proposed) {
            /* the tree is spent: a new root at random */
            int r = kevo_search_random(s, out + count, 1, "restart");
            if (r == 0 || kevo_search_in_batch(out, count, out[count].family, &out[count].cfg))
                break;
            count++;
            continue;
        }
        /* virtual visits spread the batch over the tree */
        for (int i = 0; i < depth; i++)
            st.visits[path[i]] += 1;
        root_visits += 1;
        st.children[cur]++;
        count++;
    }
done:
    free(st.value);
    free(st.visits);
    free(st.children);
    free(st.dead);
    return count;
}

const kevo_policy kevo_policy_ucb = {
    .name = "ucb",
    .summary = "UCB1 over the search tree: exploit fit subtrees, explore rarely expanded nodes",
    .propose = ucb_propose,
};
