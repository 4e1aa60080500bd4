/* policy_greedy.c — greedy best-first with the cost model as the prior:
 * start from the seeds (each family's best under the model, warm starts),
 * then repeatedly expand the fittest evaluated node that still has
 * unevaluated neighbours (one operator step away; of nodes within 1% of each
 * other, the earliest) — the fittest of a family below its quota of the
 * budget first, so none is starved — proposing its
 * neighbours the model predicts within GR_SLACK of the best of them, best
 * first and one per operator per round; while the batch has room, the next
 * fittest node's too.  A family's best seed that a warm start (another
 * shape's winner) or a role seed outruns is expanded once all the same,
 * first: else the walk stays around that node and never looks one move
 * from the model's pick for this shape.  The batch goes out in the model's order
 * (gr_order), not in the order of its nodes.  When every evaluated node is
 * fully expanded, restart from a configuration drawn with the model as the
 * prior. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

#define GR_SCRATCH 2048
#define GR_SLACK 1.3 /* neighbours predicted slower than this times the best of them wait */
#define GR_MIN_TAKE 4
/* A node must be this much fitter than an earlier one to be expanded first:
 * fitnesses within 1% are measurement noise (one kernel re-timed on one H100
 * parts by 0.1-0.5%, two GPUs of one model by more), and a pick that follows
 * the noise made two runs of one seed, or a run on one GPU and on two, grow
 * different graphs (two lce_ws nodes at 0.4273 and 0.4276 ms in one run,
 * 0.4288 and 0.4275 in the next); the earlier node takes such a tie. */
#define GR_TIE 1.01

/* Whether node i may be expanded now: evaluated, not fully expanded, of
 * `family` (any when -1), not among picked[0..npicked). */
static bool gr_eligible(const kevo_search *s, int i, int family, const int *picked, int npicked)
{
    const kevo_node *n = &s->nodes[i];
    if (!n->done || n->expansions < 0 || (family >= 0 && n->family != family))
        return false;
    for (int j = 0; j < npicked; j++)
        if (picked[j] == i)
            return false;
    return true;
}

/* The best node (of `family`, or of any when -1) that is evaluated, has
 * unexplored neighbours and is not among picked[0..npicked), or -1. */
static int gr_pick(kevo_search *s, int family, const int *picked, int npicked, kevo_proposal *scratch, int cap,
                   int *found)
{
    *found = 0;
    for (;;) {
        int best = -1;
        double best_rank = -1;
        for (int i = 0; i < s->nnodes; i++)
            if (gr_eligible(s, i, family, picked, npicked) && kevo_search_rank(&s->nodes[i]) > best_rank * GR_TIE) {
                best_rank = kevo_search_rank(&s->nodes[i]);
                best = i;
            }
        if (best < 0)
            return -1;
        *found = kevo_search_neighbours(s, best, scratch, cap);
        if (*found > 0)
            return best;
        s->nodes[best].expansions = -1; /* fully expanded: never pick again */
    }
}

/* A seed that a warm start or a role seed hides: of a family whose fittest
 * evaluated warm start or role seed (search/moves.c) outruns (beyond GR_TIE)
 * every evaluated seed of it, its fittest seed (of seeds within GR_TIE of
 * each other, the earliest), when never expanded and not in
 * picked[0..npicked); the first such family's, or -1.  (In docs/model.md
 * v13's run of the 22 shapes, #12 warm-started from #9's winner at 0.4022
 * ms, the model's seeds measured 0.48 and were never expanded: the search
 * ended at 0.3997, where one move from a seed leads to 0.3358.  A role seed
 * did the same at five of twelve shapes: docs/how-it-works.md.) */
static int gr_hidden_seed(const kevo_search *s, const int *picked, int npicked)
{
    for (int f = 0; f < s->nspaces; f++) {
        int seed = -1;
        double warm = -1;
        for (int i = 0; i < s->nnodes; i++) {
            const kevo_node *n = &s->nodes[i];
            if (n->family != f || !n->done || !(n->fitness > 0))
                continue;
            if ((!strcmp(n->move, "warm") || !strcmp(n->move, "role")) && kevo_search_rank(n) > warm)
                warm = kevo_search_rank(n);
            /* of seeds within the noise (GR_TIE), the earlier: which of two tied
             * seeds the walk starts from must not follow the noise */
            if (!strcmp(n->move, "seed") &&
                (seed < 0 || kevo_search_rank(n) > kevo_search_rank(&s->nodes[seed]) * GR_TIE))
                seed = i;
        }
        if (seed >= 0 && s->nodes[seed].expansions == 0 && warm > kevo_search_rank(&s->nodes[seed]) * GR_TIE &&
            gr_eligible(s, seed, f, picked, npicked))
            return seed;
    }
    return -1;
}

/* Append to out[n..max) the usable ones of a node's `found` neighbours
 * all[]: those the model predicts within GR_SLACK of the best of them (at
 * least GR_MIN_TAKE), best first and one per operator per round, leaving
 * out any already in the batch.  Returns the new count. */
static int gr_take(kevo_search *s, kevo_proposal *all, int found, double *t, int *order, unsigned char *taken,
                   kevo_proposal *out, int n, int max)
{
    if (found <= 0)
        return n;
    for (int i = 0; i < found; i++)
        t[i] = kevo_search_predict(s, all[i].family, &all[i].cfg);
    if (!kevo_search_order(t, found, order))
        return n;
    int usable = found;
    if (!isnan(t[order[0]])) {
        usable = 0;
        while (usable < found &&
               (usable < GR_MIN_TAKE || (!isnan(t[order[usable]]) && t[order[usable]] <= GR_SLACK * t[order[0]])))
            usable++;
    }
    memset(taken, 0, (size_t)found);
    for (int k = 0; k < usable; k++) { /* another node of this batch proposed it: the earlier node is its parent */
        const kevo_proposal *a = &all[order[k]];
        int j = kevo_search_batch_index(out, n, a->family, &a->cfg);
        if (j < 0)
            continue;
        taken[order[k]] = 1;
        if (a->parent >= 0 && a->parent < out[j].parent) {
            out[j].parent = a->parent;
            snprintf(out[j].move, sizeof out[j].move, "%s", a->move);
        }
    }
    for (bool more = true; n < max && more;) {
        more = false;
        for (int k = 0; k < usable && n < max; k++) {
            int i = order[k];
            if (taken[i])
                continue;
            bool move_in_round = false;
            for (int j = 0; j < found && !move_in_round; j++)
                move_in_round = taken[j] == 2 && strcmp(all[j].move, all[i].move) == 0;
            if (move_in_round) {
                more = true;
                continue;
            }
            taken[i] = 2;
            out[n++] = all[i];
        }
        for (int i = 0; i < found; i++)
            if (taken[i] == 2)
                taken[i] = 1;
    }
    return n;
}

/* The batch's order: the model's likeliest first (its predicted time, a
 * function of the configuration alone), then family and configuration.
 * Which picked node came first follows the measurements, and two nodes
 * within the noise swap places between two runs; when both are expanded in
 * the batch, the batch is the same set either way, and this order (with
 * the earlier node as the parent of a neighbour both propose) makes it the
 * same sequence, so that the graphs do not part there. */
typedef struct gr_item {
    kevo_proposal p;
    double t; /* the model's time; NaN (none) sorts last */
} gr_item;

static int gr_cmp(const void *pa, const void *pb)
{
    const gr_item *a = pa, *b = pb;
    bool na = isnan(a->t), nb = isnan(b->t);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->p.family != b->p.family)
        return a->p.family < b->p.family ? -1 : 1;
    return kevo_config_cmp(&a->p.cfg, &b->p.cfg);
}

/* Put out[0..n) in the batch's order (unchanged when out of memory). */
static void gr_order(const kevo_search *s, kevo_proposal *out, int n)
{
    gr_item *items = n > 1 ? malloc((size_t)n * sizeof *items) : NULL;
    if (!items)
        return;
    for (int i = 0; i < n; i++) {
        items[i].p = out[i];
        items[i].t = kevo_search_predict(s, out[i].family, &out[i].cfg);
    }
    qsort(items, (size_t)n, sizeof *items, gr_cmp); /* no two are equal: a configuration is in a batch once */
    for (int i = 0; i < n; i++)
        out[i] = items[i].p;
    free(items);
}

static int gr_propose(kevo_search *s, kevo_proposal *out, int max)
{
    int seeds = kevo_search_seeds(s, out, max);
    if (seeds > 0)
        return seeds;
    kevo_proposal *all = malloc(GR_SCRATCH * sizeof *all);
    double *t = malloc(GR_SCRATCH * sizeof *t);
    int *order = malloc(GR_SCRATCH * sizeof *order);
    unsigned char *taken = malloc(GR_SCRATCH);
    int *picked = malloc((size_t)(s->nnodes + 1) * sizeof *picked); /* each node once at most */
    int n = 0, npicked = 0;
    if (!all || !t || !order || !taken || !picked)
        goto done;
    /* the fittest node's neighbours; while the batch has room, the next
     * fittest's: a batch as full as the graph allows keeps several GPUs busy,
     * and what fills it depends on the graph alone, never on the GPUs */
    while (n < max) {
        int found = 0;
        int node = gr_hidden_seed(s, picked, npicked);
        if (node >= 0 && (found = kevo_search_neighbours(s, node, all, GR_SCRATCH)) <= 0) {
            s->nodes[node].expansions = -1; /* no neighbour left: never pick again */
            continue;
        }
        int starved = node < 0 ? kevo_search_starved(s, out, n) : -1;
        if (starved >= 0)
            node = gr_pick(s, starved, picked, npicked, all, GR_SCRATCH, &found);
        if (node < 0)
            node = gr_pick(s, -1, picked, npicked, all, GR_SCRATCH, &found);
        if (node < 0)
            break;
        picked[npicked++] = node;
        s->nodes[node].expansions++;
        n = gr_take(s, all, found, t, order, taken, out, n, max);
    }
    gr_order(s, out, n);
    /* nothing to expand: a restart, unless results still to come (tune --ahead) may give something */
    bool pending = false;
    for (int i = 0; i < s->nnodes && n == 0 && !pending; i++)
        pending = !s->nodes[i].done;
    if (n == 0 && !pending)
        n = kevo_search_prior_pick(s, NULL, 0, out, max, "restart");
done:
    free(picked);
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
