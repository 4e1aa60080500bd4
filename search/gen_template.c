/* gen_template.c — the template generator: the selection policy's rounds
 * (search/policy.c).  A start asks the policy for up to a round's
 * proposals, configurations of the template families made from the graph's
 * nodes by the policy's moves; it is ready at once, and the proposal is the
 * source (the loop renders it).  Without "template" in --generators it
 * proposes only the seeds (kevo_search_seeds), the first parents of the
 * other generators. */
#include "search/gen.h"

#include <stdlib.h>

typedef struct gt_gen {
    kevo_gen base;
    kevo_search *s;
    kevo_proposal *props; /* the round's proposals */
    int cap, n;
} gt_gen;

static kevo_status gt_open(const kevo_gen_ctx *ctx, kevo_gen **out, kevo_err *err)
{
    gt_gen *g = calloc(1, sizeof *g);
    if (!g)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    g->base.calls_max = -1;
    g->base.full = ctx->full;
    g->s = ctx->s;
    *out = &g->base;
    return KEVO_OK;
}

/* The round: the policy's proposals (its generator reseeded from the run's
 * seed and the graph's size, so that a resumed run proposes what the first
 * process would have), or the seeds alone. */
static kevo_status gt_start(kevo_gen *base, const kevo_gen_call *call, kevo_err *err)
{
    gt_gen *g = (gt_gen *)base;
    g->n = 0;
    if (call->max > g->cap) {
        kevo_proposal *p = realloc(g->props, (size_t)call->max * sizeof *p);
        if (!p)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        g->props = p;
        g->cap = call->max;
    }
    kevo_search_reseed(g->s);
    g->n = base->full ? g->s->policy->propose(g->s, g->props, call->max) : kevo_search_seeds(g->s, g->props, call->max);
    return KEVO_OK;
}

static bool gt_ready(kevo_gen *base)
{
    (void)base;
    return true;
}

static kevo_status gt_finish(kevo_gen *base, kevo_gen_source *out, kevo_err *err)
{
    (void)err;
    gt_gen *g = (gt_gen *)base;
    kevo_gen_source_init(out);
    out->props = g->props;
    out->nprops = g->n;
    return KEVO_OK;
}

static void gt_cancel(kevo_gen *base)
{
    ((gt_gen *)base)->n = 0;
}

static void gt_close(kevo_gen *base)
{
    gt_gen *g = (gt_gen *)base;
    if (g)
        free(g->props);
    free(g);
}

const kevo_generator kevo_gen_template = {
    .name = "template",
    .summary = "the selection policy's rounds over the template families (the default)",
    .label = "the policy",
    .round = true,
    .open = gt_open,
    .start = gt_start,
    .ready = gt_ready,
    .finish = gt_finish,
    .cancel = gt_cancel,
    .close = gt_close,
};
