/* policy_evolve.c — a steady-state evolutionary search: the population is
 * the EVO_POP fittest evaluated candidates (elitism: the best are never
 * lost); each proposal is, with probability EVO_CROSS each, a crossover of
 * the fittest node with the next fittest one that yields a new child (two
 * improvements found apart get combined) or of two tournament winners of one
 * family, and otherwise a mutation (one operator step) of a tournament winner.
 * Until EVO_INIT candidates exist, the population is seeded with the
 * seeds (the model's best of each family, warm starts) and configurations
 * drawn with the model as the prior; while a family is below its quota of
 * the budget, mutations start from its members.  The population is
 * derived from the graph at each call, so a resumed run proposes what the
 * uninterrupted one did. */
#include <stdlib.h>

#include "search/search.h"
#include "util/util.h"

#define EVO_POP 16
#define EVO_INIT 1
#define EVO_TOURNAMENT 3
#define EVO_CROSS 0.2

/* Population: the fittest evaluated nodes, best first (ties to the older). */
static int evo_population(const kevo_search *s, int *pop)
{
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        if (!s->nodes[i].done)
            continue;
        double r = kevo_search_rank(&s->nodes[i]);
        int at = n < EVO_POP ? n : EVO_POP;
        while (at > 0 && kevo_search_rank(&s->nodes[pop[at - 1]]) < r)
            at--;
        if (at >= EVO_POP)
            continue;
        for (int j = (n < EVO_POP ? n : EVO_POP - 1); j > at; j--)
            pop[j] = pop[j - 1];
        pop[at] = i;
        if (n < EVO_POP)
            n++;
    }
    return n;
}

/* Tournament: the fittest of EVO_TOURNAMENT random members (family >= 0:
 * members of that family only; -1 when none is drawn). */
static int evo_tournament(kevo_search *s, const int *pop, int n, int family)
{
    int best = -1, drawn = 0;
    for (int tries = 0; tries < 64 && drawn < EVO_TOURNAMENT; tries++) {
        int c = pop[kv_rand_below(&s->rng, (uint64_t)n)];
        if (family >= 0 && s->nodes[c].family != family)
            continue;
        drawn++;
        if (best < 0 || kevo_search_rank(&s->nodes[c]) > kevo_search_rank(&s->nodes[best]))
            best = c;
    }
    return best;
}

/* One configuration new to the graph and the batch, drawn with the cost
 * model as the prior. */
static bool evo_newcomer(kevo_search *s, const kevo_proposal *out, int count, kevo_proposal *p)
{
    return kevo_search_prior_pick(s, out, count, p, 1, "random") == 1;
}

/* Crossover of the fittest node with the next fittest one of its family that
 * gives a new child: two improving moves found separately get combined. */
static bool evo_combine(kevo_search *s, const int *pop, int n, const kevo_proposal *out, int count, kevo_proposal *p)
{
    for (int j = 1; j < n; j++)
        if (s->nodes[pop[j]].family == s->nodes[pop[0]].family &&
            kevo_search_crossover(s, pop[0], pop[j], out, count, p))
            return true;
    return false;
}

static int evo_propose(kevo_search *s, kevo_proposal *out, int max)
{
    int count = kevo_search_seeds(s, out, max);
    while (count < max && s->nnodes + count < EVO_INIT && evo_newcomer(s, out, count, &out[count]))
        count++;
    int pop[EVO_POP];
    int n = evo_population(s, pop);
    while (count < max && n > 0) {
        bool made = false;
        uint64_t r = kv_rand_below(&s->rng, 1000);
        if (r < (uint64_t)(EVO_CROSS * 1000)) {
            made = evo_combine(s, pop, n, out, count, &out[count]);
        } else if (r < (uint64_t)(2 * EVO_CROSS * 1000)) {
            int a = evo_tournament(s, pop, n, -1);
            int b = evo_tournament(s, pop, n, s->nodes[a].family);
            if (b >= 0 && b != a)
                made = kevo_search_crossover(s, a, b, out, count, &out[count]);
        }
        if (!made) {
            int starved = kevo_search_starved(s, out, count), parent = -1;
            for (int i = 0; starved >= 0 && i < s->nnodes && parent < 0; i++)
                if (s->nodes[i].family == starved && s->nodes[i].done &&
                    kevo_search_mutate(s, i, out, count, &out[count]))
                    parent = i;
            made = parent >= 0 || kevo_search_mutate(s, evo_tournament(s, pop, n, -1), out, count, &out[count]);
        }
        /* the parent's neighbourhood is spent: a random newcomer */
        if (!made && !evo_newcomer(s, out, count, &out[count]))
            break;
        count++;
    }
    return count;
}

const kevo_policy kevo_policy_evolve = {
    .name = "evolve",
    .summary = "evolutionary: tournament selection, elitism, mutation and crossover",
    .propose = evo_propose,
};
