/* gen_mutate.c — "mutate the best": beside each round, one neighbour of one
 * of the run's leaders.  The leaders are the GM_LEADERS best evaluated
 * nodes of the template families (failed ones never); the one mutated is
 * the leader with the fewest rewrites so far (ties: the better), and its
 * neighbour is kevo_search_mutate's (a move along one of its axes or into
 * another family, drawn with the cost model as the prior) new to the
 * graph.  Its edge's move is "mutate".  The draw comes from the run's seed,
 * the call's number and the graph's size, so a resumed run draws what the
 * first process drew.  It has no options and no budget of calls: each
 * mutation is one candidate of --budget.
 *
 * This file and one row of the table (search/gen.c) are the whole of it. */
#include "search/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GM_LEADERS 3

typedef struct gm_gen {
    kevo_gen base;
    kevo_search *s;
    uint64_t seed;
    int64_t k;       /* the number of the next call */
    int parent;      /* of the proposal below, -1 none */
    kevo_proposal p; /* the mutation parent() drew, finished by finish() */
} gm_gen;

static kevo_status gm_open(const kevo_gen_ctx *ctx, kevo_gen **out, kevo_err *err)
{
    gm_gen *g = calloc(1, sizeof *g);
    if (!g)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    g->base.calls_max = -1;
    g->s = ctx->s;
    g->seed = ctx->seed;
    g->k = ctx->calls;
    g->parent = -1;
    *out = &g->base;
    return KEVO_OK;
}

/* Draw a mutation of node into g->p with the generator's own stream (the
 * policy's is left as it was).  false when the node has no new neighbour. */
static bool gm_draw(gm_gen *g, int node)
{
    kevo_search *s = g->s;
    uint64_t keep = s->rng;
    s->rng = g->seed ^ 0x6d75746174650000ull ^ (0x9e3779b97f4a7c15ull * (uint64_t)(g->k + 1)) ^
             (0xbf58476d1ce4e5b9ull * (uint64_t)(s->nnodes + 1));
    kv_rand_next(&s->rng);
    bool ok = kevo_search_mutate(s, node, NULL, 0, &g->p);
    s->rng = keep;
    if (ok)
        snprintf(g->p.move, sizeof g->p.move, "%s", g->base.type->move);
    return ok;
}

/* Whether node a leads node b: better fitness (unknown and failed as 0),
 * then earlier. */
static bool gm_before(const kevo_search *s, int a, int b)
{
    double x = kevo_search_rank(&s->nodes[a]), y = kevo_search_rank(&s->nodes[b]);
    return x != y ? x > y : a < b;
}

/* The leader to mutate next (one with a new neighbour), its mutation drawn
 * into g->p; -1 when none has one. */
static int gm_parent(kevo_gen *base)
{
    gm_gen *g = (gm_gen *)base;
    const kevo_search *s = g->s;
    int lead[GM_LEADERS], n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const kevo_node *nd = &s->nodes[i];
        if (!nd->done || nd->family >= s->nspaces || nd->fitness == 0)
            continue;
        int at = n < GM_LEADERS ? n++ : GM_LEADERS;
        while (at > 0 && gm_before(s, i, lead[at - 1])) {
            if (at < GM_LEADERS)
                lead[at] = lead[at - 1];
            at--;
        }
        if (at < GM_LEADERS)
            lead[at] = i;
    }
    bool tried[GM_LEADERS] = {false};
    for (;;) { /* the fewest rewrites first, then the better */
        int pick = -1;
        for (int j = 0; j < n; j++)
            if (!tried[j] && (pick < 0 || s->nodes[lead[j]].rewrites < s->nodes[lead[pick]].rewrites))
                pick = j;
        if (pick < 0)
            return g->parent = -1;
        tried[pick] = true;
        if (gm_draw(g, lead[pick]))
            return g->parent = lead[pick];
    }
}

static kevo_status gm_start(kevo_gen *base, const kevo_gen_call *call, kevo_err *err)
{
    (void)err;
    gm_gen *g = (gm_gen *)base;
    g->parent = call->parent;
    return KEVO_OK;
}

static bool gm_ready(kevo_gen *base)
{
    (void)base;
    return true;
}

/* The mutation, drawn again when the round took it meanwhile; nothing when
 * the leader has no other. */
static kevo_status gm_finish(kevo_gen *base, kevo_gen_source *out, kevo_err *err)
{
    (void)err;
    gm_gen *g = (gm_gen *)base;
    kevo_gen_source_init(out);
    bool ok = g->parent >= 0;
    if (ok && kevo_search_find(g->s, g->p.family, &g->p.cfg) >= 0)
        ok = gm_draw(g, g->parent);
    g->k++;
    if (ok) {
        out->props = &g->p;
        out->nprops = 1;
    }
    g->parent = -1;
    return KEVO_OK;
}

static void gm_cancel(kevo_gen *base)
{
    ((gm_gen *)base)->parent = -1;
}

static void gm_close(kevo_gen *base)
{
    free(base);
}

const kevo_generator kevo_gen_mutate = {
    .name = "mutate",
    .summary = "a neighbour of one of the run's leaders, beside each round",
    .move = "mutate",
    .label = "the mutation",
    .open = gm_open,
    .parent = gm_parent,
    .start = gm_start,
    .ready = gm_ready,
    .finish = gm_finish,
    .cancel = gm_cancel,
    .close = gm_close,
};
