/* moves.c — the moves from a node of the search graph: neighbours along a
 * family's axes and into other families, mutations and crossovers, the
 * seeds, and the draws the policies make with the cost model as the prior. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

/* Index of the searched family named name, or -1. */
static int sg_family_index(const kevo_search *s, const char *name)
{
    for (int f = 0; f < s->nspaces; f++)
        if (strcmp(s->spaces[f]->family, name) == 0)
            return f;
    return -1;
}

static int sg_value_index(const kevo_param *p, int64_t v)
{
    for (int i = 0; i < p->nvalues; i++)
        if (p->values[i] == v)
            return i;
    return -1;
}

/* Append cfg, a move `op` of node's family, to out[*count] unless it is
 * already in the graph or in out, or invalid. */
static void sg_emit(kevo_search *s, int node, const kevo_config *cfg, const char *op, kevo_proposal *out, int *count)
{
    const int f = s->nodes[node].family;
    char why[256];
    if (kevo_search_find(s, f, cfg) >= 0 || kevo_search_valid(s, f, cfg, why, sizeof why) != 1)
        return;
    for (int j = 0; j < *count; j++)
        if (out[j].family == f && memcmp(out[j].cfg.v, cfg->v, sizeof cfg->v) == 0)
            return;
    out[*count] = (kevo_proposal){.family = f, .cfg = *cfg, .parent = node, .parent2 = -1};
    snprintf(out[*count].move, sizeof out[*count].move, "%s", op);
    (*count)++;
}

/* The value of an axis's keep expression at cfg; false where it cannot be
 * evaluated (a let that fails at that configuration). */
static bool sg_keep_value(const kevo_search *s, const kevo_space *sp, const kevo_expr *keep, const kevo_config *cfg,
                          int64_t *v)
{
    kevo_syms b;
    kevo_err err;
    kevo_err_clear(&err);
    return kevo_space_bind(sp, &s->shape, &s->limits, s->dtype, cfg, &b, &err) == KEVO_OK &&
           kevo_expr_eval(keep, &b, v, &err) == KEVO_OK;
}

/* Axis ax's kept moves from node: one param stepped one value either way, the
 * axis's other params set to the values (all combinations, up to 4096) whose
 * keep value is nearest node's; of those, the one that changes the fewest of
 * them (then the first in the params' orders). */
static void sg_kept_moves(kevo_search *s, int node, const kevo_space *sp, const kevo_axis *ax, kevo_proposal *out,
                          int *count, int max)
{
    const kevo_config *c0 = &s->nodes[node].cfg;
    int64_t want;
    if (!sg_keep_value(s, sp, ax->keep, c0, &want))
        return;
    for (int i = 0; i < ax->nparams && *count < max; i++)
        for (int delta = -1; delta <= 1 && *count < max; delta += 2) {
            const kevo_param *p = &sp->params[ax->params[i]];
            int vi = sg_value_index(p, c0->v[ax->params[i]]) + delta;
            if (vi < 0 || vi >= p->nvalues)
                continue;
            int combos = 1;
            for (int j = 0; j < ax->nparams && combos <= 4096; j++)
                if (j != i)
                    combos *= sp->params[ax->params[j]].nvalues;
            if (combos > 4096)
                continue;
            kevo_config best = *c0;
            uint64_t best_d = UINT64_MAX;
            int best_changed = 0;
            for (int c = 0; c < combos; c++) {
                kevo_config cfg = *c0;
                cfg.v[ax->params[i]] = p->values[vi];
                for (int j = 0, code = c; j < ax->nparams; j++) {
                    if (j == i)
                        continue;
                    const kevo_param *q = &sp->params[ax->params[j]];
                    cfg.v[ax->params[j]] = q->values[code % q->nvalues];
                    code /= q->nvalues;
                }
                char why[256];
                int64_t v;
                if (kevo_search_valid(s, s->nodes[node].family, &cfg, why, sizeof why) != 1 ||
                    !sg_keep_value(s, sp, ax->keep, &cfg, &v))
                    continue;
                uint64_t d = v >= want ? (uint64_t)v - (uint64_t)want : (uint64_t)want - (uint64_t)v;
                int changed = 0;
                for (int j = 0; j < ax->nparams; j++)
                    changed += j != i && cfg.v[ax->params[j]] != c0->v[ax->params[j]];
                if (d < best_d || (d == best_d && changed < best_changed)) {
                    best_d = d;
                    best_changed = changed;
                    best = cfg;
                }
            }
            if (best_d != UINT64_MAX)
                sg_emit(s, node, &best, ax->op, out, count);
        }
}

/* The order in which a node's axes emit their moves: fewest params first,
 * else as the space lists them.  A neighbour two axes reach is emitted once,
 * by the first (sg_emit), so the narrower axis owns it: a `TRIM`-only step
 * is the trim move's, and the cluster move [CLUSTER, CLB, TRIM] proposes a
 * change of the cluster.  Greedy takes one child per move and round, and
 * listing the broader axis first made its best child the narrower axis's
 * (at #19 the cluster move from a `CLUSTER=1 TRIM=24` tile proposed
 * `TRIM=16`, the trim move nothing, and the cluster of two, 1.45x faster,
 * was never tried; docs/model.md v14). */
static void sg_axis_order(const kevo_space *sp, int *order)
{
    for (int a = 0; a < sp->naxes; a++) {
        int j = a;
        while (j > 0 && sp->axes[order[j - 1]].nparams > sp->axes[a].nparams) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = a;
    }
}

int kevo_search_neighbours(kevo_search *s, int node, kevo_proposal *out, int max)
{
    const kevo_node *n = &s->nodes[node];
    const kevo_space *sp = kevo_search_space(s, n->family);
    int count = 0, axes[KEVO_MAX_AXES];
    sg_axis_order(sp, axes);
    for (int o = 0; o < sp->naxes && count < max; o++) {
        const kevo_axis *ax = &sp->axes[axes[o]];
        int k = ax->nparams;
        int combos = 1;
        for (int i = 0; i < k; i++)
            combos *= 3;
        for (int c = 0; c < combos && count < max; c++) {
            kevo_config cfg = n->cfg;
            int code = c, moved = 0;
            bool in_range = true;
            for (int i = 0; i < k; i++) {
                int delta = code % 3 - 1;
                code /= 3;
                if (!delta)
                    continue;
                const kevo_param *p = &sp->params[ax->params[i]];
                int vi = sg_value_index(p, cfg.v[ax->params[i]]) + delta;
                if (vi < 0 || vi >= p->nvalues) {
                    in_range = false;
                    break;
                }
                cfg.v[ax->params[i]] = p->values[vi];
                moved++;
            }
            if (in_range && moved)
                sg_emit(s, node, &cfg, ax->op, out, &count);
        }
        if (ax->keep)
            sg_kept_moves(s, node, sp, ax, out, &count, max);
    }
    /* moves into other families that enter from this one */
    for (int t = 0; t < s->nspaces && count < max; t++) {
        const kevo_space *to = s->spaces[t];
        for (int e = 0; e < to->nentries && count < max; e++) {
            if (t == n->family || strcmp(to->entries[e].from, sp->family) != 0)
                continue;
            kevo_config cfg;
            char why[256];
            kevo_err err;
            if (kevo_space_enter(to, e, sp, &s->shape, &s->limits, s->dtype, &n->cfg, &cfg, why, sizeof why, &err) !=
                    1 ||
                kevo_search_find(s, t, &cfg) >= 0 || kevo_search_valid(s, t, &cfg, why, sizeof why) != 1 ||
                kevo_search_in_batch(out, count, t, &cfg))
                continue;
            out[count] = (kevo_proposal){.family = t, .cfg = cfg, .parent = node, .parent2 = -1};
            snprintf(out[count].move, sizeof out[count].move, "%s", to->entries[e].op);
            count++;
        }
    }
    return count;
}

/* Whether family f is entered by a move from another searched family that
 * has a valid configuration (then it is reached through that move, not seeded). */
static bool sg_entered(kevo_search *s, int f)
{
    const kevo_space *to = s->spaces[f];
    for (int e = 0; e < to->nentries; e++) {
        int from = sg_family_index(s, to->entries[e].from);
        if (from < 0)
            continue;
        const kevo_valid_set *vs = kevo_search_valid_set(s, from);
        if (vs && vs->n > 0)
            return true;
    }
    return false;
}

/* Family f's seeds by role: for each of its axes marked "seed", the model's
 * best configuration of each combination of the axis's values, where the
 * model predicts it within SG_ROLE_SLACK of the family's best.  The model's
 * fitted constants differ by role (lce_ws's `eff` per consumer count and
 * ping-pong), and it ranks within a role better than across roles: at
 * B=372,M=532,N=192 (docs/lce_ws.md v25) its 76th configuration, the
 * 1.16x-the-best-peer 3-consumer tile, was the first of its role.  Their
 * move is "role": greedy still expands the model's own first pick once when
 * a role seed outruns it (policy_greedy.c, gr_hidden_seed). */
#define SG_ROLE_SLACK 1.3
#define SG_ROLE_MAX 64
static void sg_role_seeds(kevo_search *s, int f, const kevo_valid_set *vs, kevo_proposal *out, int *count, int max)
{
    const kevo_space *sp = s->spaces[f];
    const double best = vs->pred[vs->order[0]];
    for (int a = 0; a < sp->naxes; a++) {
        const kevo_axis *ax = &sp->axes[a];
        if (!ax->seed)
            continue;
        int seen[SG_ROLE_MAX], nseen = 0; /* the roles met so far, as indices into vs->cfgs */
        for (int i = 0; i < vs->n && nseen < SG_ROLE_MAX && *count < max; i++) {
            const kevo_config *cfg = &vs->cfgs[vs->order[i]];
            if (!(vs->pred[vs->order[i]] <= best * SG_ROLE_SLACK))
                break; /* fastest first: the rest are slower still */
            bool met = false;
            for (int j = 0; j < nseen && !met; j++) {
                met = true;
                for (int k = 0; k < ax->nparams; k++)
                    met = met && vs->cfgs[seen[j]].v[ax->params[k]] == cfg->v[ax->params[k]];
            }
            if (met)
                continue;
            seen[nseen++] = vs->order[i];
            if (kevo_search_in_batch(out, *count, f, cfg))
                continue;
            out[*count] = (kevo_proposal){.family = f, .cfg = *cfg, .parent = -1, .parent2 = -1};
            snprintf(out[*count].move, sizeof out[*count].move, "role");
            (*count)++;
        }
    }
}

/* The whole seed set, whatever the graph holds: the warm starts valid here,
 * then each family's KEVO_SEEDS_PER_FAMILY best under the model (distinct
 * predictions) and its best of each role (sg_role_seeds), all of those
 * ordered fastest first; a family without a model adds its default (or
 * first valid) configuration unless it is entered by a move.  Returns how
 * many went into out[0..max). */
static int sg_seed_set(kevo_search *s, kevo_proposal *out, int max)
{
    int count = 0;
    char why[256];
    for (int i = 0; i < s->nwarm && count < max; i++) {
        const kevo_proposal *w = &s->warm[i];
        if (!kevo_search_in_batch(out, count, w->family, &w->cfg) &&
            kevo_search_valid(s, w->family, &w->cfg, why, sizeof why) == 1)
            out[count++] = *w;
    }
    int first_model = count;
    for (int f = 0; f < s->nspaces && count < max; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (!vs || vs->n == 0 || !kevo_model_has(s->spaces[f]))
            continue;
        double last = NAN;
        int taken = 0;
        for (int i = 0; i < vs->n && taken < KEVO_SEEDS_PER_FAMILY && count < max; i++) {
            const kevo_config *cfg = &vs->cfgs[vs->order[i]];
            double t = vs->pred[vs->order[i]];
            if (!isnan(last) && !(t > last * 1.005))
                continue; /* the same prediction: a variant the model cannot tell apart */
            last = t;
            if (kevo_search_in_batch(out, count, f, cfg))
                continue;
            out[count] = (kevo_proposal){.family = f, .cfg = *cfg, .parent = -1, .parent2 = -1};
            snprintf(out[count].move, sizeof out[count].move, "seed");
            count++;
            taken++;
        }
        sg_role_seeds(s, f, vs, out, &count, max);
    }
    /* fastest predicted first (insertion sort: a handful) */
    for (int i = first_model + 1; i < count; i++) {
        kevo_proposal p = out[i];
        double t = kevo_search_predict(s, p.family, &p.cfg);
        int j = i;
        while (j > first_model && kevo_search_predict(s, out[j - 1].family, &out[j - 1].cfg) > t) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = p;
    }
    for (int f = 0; f < s->nspaces && count < max; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (!vs || vs->n == 0 || kevo_model_has(s->spaces[f]) || sg_entered(s, f))
            continue;
        kevo_config cfg;
        kevo_space_default(s->spaces[f], &cfg);
        if (kevo_search_valid(s, f, &cfg, why, sizeof why) != 1)
            cfg = vs->cfgs[0];
        if (kevo_search_in_batch(out, count, f, &cfg))
            continue;
        out[count] = (kevo_proposal){.family = f, .cfg = cfg, .parent = -1, .parent2 = -1};
        snprintf(out[count].move, sizeof out[count].move, "seed");
        count++;
    }
    return count;
}

int kevo_search_seeds(kevo_search *s, kevo_proposal *out, int max)
{
    enum { SG_MAX_SEEDS = 256 };
    kevo_proposal *all = malloc(SG_MAX_SEEDS * sizeof *all);
    if (!all)
        return 0;
    int n = sg_seed_set(s, all, SG_MAX_SEEDS), count = 0;
    for (int i = 0; i < n && count < max; i++)
        if (kevo_search_find(s, all[i].family, &all[i].cfg) < 0)
            out[count++] = all[i];
    free(all);
    return count;
}

/* The best prediction of any family (NaN when none has a model). */
static double sg_best_prediction(kevo_search *s)
{
    double best = NAN;
    for (int f = 0; f < s->nspaces; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (vs && vs->n > 0 && !isnan(vs->pred[vs->order[0]]) && !(vs->pred[vs->order[0]] >= best))
            best = vs->pred[vs->order[0]];
    }
    return best;
}

/* Prior weight of a prediction t against the best one: (best / t)^4; 1
 * when either is unknown. */
static double sg_prior_weight(double best, double t)
{
    if (isnan(best) || isnan(t) || !(t > 0))
        return 1.0;
    double r = best / t;
    return r * r * r * r;
}

int kevo_search_prior_pick(kevo_search *s, const kevo_proposal *batch, int nbatch, kevo_proposal *out, int max,
                           const char *move)
{
    enum { SG_PRIOR_PER_FAMILY = 64 };
    double best = sg_best_prediction(s);
    int cap = s->nspaces * SG_PRIOR_PER_FAMILY, n = 0, count = 0;
    kevo_proposal *pool = malloc((size_t)cap * sizeof *pool);
    double *w = malloc((size_t)cap * sizeof *w);
    if (!pool || !w)
        goto done;
    /* each family's best unevaluated configurations, by the model */
    for (int f = 0; f < s->nspaces; f++) {
        const kevo_valid_set *vs = &s->valid[f];
        int taken = 0;
        for (int i = 0; vs->ready && i < vs->n && taken < SG_PRIOR_PER_FAMILY; i++) {
            const kevo_config *cfg = &vs->cfgs[vs->order[i]];
            if (kevo_search_find(s, f, cfg) >= 0 || kevo_search_in_batch(batch, nbatch, f, cfg))
                continue;
            pool[n] = (kevo_proposal){.family = f, .cfg = *cfg, .parent = -1, .parent2 = -1};
            snprintf(pool[n].move, sizeof pool[n].move, "%s", move);
            w[n++] = sg_prior_weight(best, vs->pred[vs->order[i]]);
            taken++;
        }
    }
    while (count < max && n > 0) {
        double total = 0;
        for (int i = 0; i < n; i++)
            total += w[i];
        double r = (double)kv_rand_below(&s->rng, 1u << 30) / (double)(1u << 30) * total;
        int k = 0;
        while (k < n - 1 && r >= w[k])
            r -= w[k++];
        out[count++] = pool[k];
        pool[k] = pool[n - 1];
        w[k] = w[n - 1];
        n--;
    }
done:
    free(pool);
    free(w);
    return count;
}

/* A family's quota (see kevo_search_starved). */
static int sg_quota(kevo_search *s, int f, double best)
{
    const kevo_valid_set *vs = kevo_search_valid_set(s, f);
    if (!vs || vs->n == 0 || s->budget <= 0)
        return 0;
    double share = 1.0, t = vs->pred[vs->order[0]];
    if (!isnan(best) && !isnan(t) && t > 0)
        share = (best / t) * (best / t);
    int q = (int)ceil((double)s->budget / (2.0 * s->nspaces) * share);
    int seeds = KEVO_SEEDS_PER_FAMILY < vs->n ? KEVO_SEEDS_PER_FAMILY : vs->n;
    return q > seeds ? q : seeds;
}

int kevo_search_starved(kevo_search *s, const kevo_proposal *batch, int nbatch)
{
    double best = sg_best_prediction(s);
    int pick = -1, pick_deficit = 0;
    for (int f = 0; f < s->nspaces; f++) {
        int have = 0;
        for (int i = 0; i < s->nnodes; i++)
            have += s->nodes[i].family == f;
        for (int i = 0; i < nbatch; i++)
            have += batch[i].family == f;
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        int deficit = sg_quota(s, f, best) - have;
        if (vs && have < vs->n && deficit > pick_deficit) {
            pick = f;
            pick_deficit = deficit;
        }
    }
    return pick;
}

int kevo_search_random(kevo_search *s, kevo_proposal *out, int max, const char *move)
{
    /* the union of valid sets, minus the graph */
    int total = 0;
    for (int f = 0; f < s->nspaces; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (!vs)
            return 0;
        total += vs->n;
    }
    int count = 0;
    int left = total - s->nnodes; /* nodes are all valid configurations */
    while (count < max && left > 0) {
        /* draw among the configurations not yet taken: walk to the r-th free one */
        uint64_t r = kv_rand_below(&s->rng, (uint64_t)left);
        bool placed = false;
        for (int f = 0; f < s->nspaces && !placed; f++) {
            const kevo_valid_set *vs = &s->valid[f];
            for (int i = 0; i < vs->n && !placed; i++) {
                bool taken = kevo_search_find(s, f, &vs->cfgs[i]) >= 0;
                for (int j = 0; j < count && !taken; j++)
                    taken = out[j].family == f && memcmp(out[j].cfg.v, vs->cfgs[i].v, sizeof vs->cfgs[i].v) == 0;
                if (taken)
                    continue;
                if (r-- == 0) {
                    out[count] = (kevo_proposal){.family = f, .cfg = vs->cfgs[i], .parent = -1, .parent2 = -1};
                    snprintf(out[count].move, sizeof out[count].move, "%s", move);
                    count++;
                    placed = true;
                }
            }
        }
        left--;
    }
    return count;
}

int kevo_search_batch_index(const kevo_proposal *out, int n, int family, const kevo_config *cfg)
{
    for (int j = 0; j < n; j++)
        if (out[j].family == family && memcmp(out[j].cfg.v, cfg->v, sizeof cfg->v) == 0)
            return j;
    return -1;
}

bool kevo_search_in_batch(const kevo_proposal *out, int n, int family, const kevo_config *cfg)
{
    return kevo_search_batch_index(out, n, family, cfg) >= 0;
}

int kevo_search_children_by(const kevo_search *s, int node, const char *move)
{
    int n = 0;
    for (int i = node + 1; i < s->nnodes; i++)
        if ((s->nodes[i].parent == node || s->nodes[i].parent2 == node) &&
            (!move || strcmp(s->nodes[i].move, move) == 0))
            n++;
    return n;
}

/* One of props[0..m) drawn with the model as the prior (uniform when no
 * prediction exists). */
static int sg_prior_choice(kevo_search *s, const kevo_proposal *props, int m)
{
    double best = NAN, *t = malloc((size_t)m * sizeof *t);
    if (!t)
        return (int)kv_rand_below(&s->rng, (uint64_t)m);
    for (int i = 0; i < m; i++) {
        t[i] = kevo_search_predict(s, props[i].family, &props[i].cfg);
        if (!isnan(t[i]) && !(t[i] >= best))
            best = t[i];
    }
    double total = 0;
    for (int i = 0; i < m; i++)
        total += (t[i] = sg_prior_weight(best, t[i]));
    double r = (double)kv_rand_below(&s->rng, 1u << 30) / (double)(1u << 30) * total;
    int k = 0;
    while (k < m - 1 && r >= t[k])
        r -= t[k++];
    free(t);
    return k;
}

bool kevo_search_mutate(kevo_search *s, int node, const kevo_proposal *out, int n, kevo_proposal *p)
{
    /* pick an operator first (an axis, the least applied at this node), then
     * one of its moves: a wide axis (retile) must not crowd out the
     * single-step ones (align, fuse, ...) */
    /* neighbours considered; operators: the axes plus distinct moves into other families */
    enum { SG_MAX_NB = 1024, SG_MAX_MOVE_OPS = 32, SG_MAX_OPS = KEVO_MAX_AXES + SG_MAX_MOVE_OPS };
    kevo_proposal *nb = malloc(SG_MAX_NB * sizeof *nb);
    if (!nb)
        return false;
    int found = kevo_search_neighbours(s, node, nb, SG_MAX_NB), avail = 0;
    for (int i = 0; i < found; i++)
        if (!kevo_search_in_batch(out, n, nb[i].family, &nb[i].cfg))
            nb[avail++] = nb[i];
    /* the operators: moves into other families first (a new family is the
     * largest step), then this family's axes in the space's order */
    const char *ops[SG_MAX_OPS];
    int nops = 0;
    for (int i = 0; i < avail && nops < SG_MAX_MOVE_OPS; i++)
        if (nb[i].family != s->nodes[node].family) {
            bool seen = false;
            for (int k = 0; k < nops && !seen; k++)
                seen = strcmp(ops[k], nb[i].move) == 0;
            if (!seen)
                ops[nops++] = nb[i].move;
        }
    const kevo_space *sp = kevo_search_space(s, s->nodes[node].family);
    for (int x = 0; x < sp->naxes; x++)
        ops[nops++] = sp->axes[x].op;
    int least = INT32_MAX, nleast = 0, pick[SG_MAX_OPS];
    for (int x = 0; x < nops; x++) {
        bool has = false;
        for (int i = 0; i < avail && !has; i++)
            has = strcmp(nb[i].move, ops[x]) == 0;
        if (!has)
            continue;
        /* applications so far: children in the graph and in this batch */
        int used = kevo_search_children_by(s, node, ops[x]);
        for (int j = 0; j < n; j++)
            used += out[j].parent == node && strcmp(out[j].move, ops[x]) == 0;
        if (used < least) {
            least = used;
            nleast = 0;
        }
        if (used == least)
            pick[nleast++] = x;
    }
    bool ok = nleast > 0;
    if (ok) {
        /* operators most promising first, weight 1/(1+position), times the
         * model's prior for the best move each one offers */
        double total = 0, w[SG_MAX_OPS], tbest[SG_MAX_OPS], tall = NAN;
        for (int i = 0; i < nleast; i++) {
            tbest[i] = NAN;
            for (int j = 0; j < avail; j++) {
                if (strcmp(nb[j].move, ops[pick[i]]) != 0)
                    continue;
                double t = kevo_search_predict(s, nb[j].family, &nb[j].cfg);
                if (!isnan(t) && !(t >= tbest[i]))
                    tbest[i] = t;
            }
            if (!isnan(tbest[i]) && !(tbest[i] >= tall))
                tall = tbest[i];
        }
        for (int i = 0; i < nleast; i++)
            total += (w[i] = sg_prior_weight(tall, tbest[i]) / (1.0 + pick[i]));
        double r = (double)kv_rand_below(&s->rng, 1u << 30) / (double)(1u << 30) * total;
        int k = 0;
        while (k < nleast - 1 && r >= w[k])
            r -= w[k++];
        char move[32]; /* ops[] may point into nb, which the loop below rewrites */
        snprintf(move, sizeof move, "%s", ops[pick[k]]);
        int m = 0;
        for (int i = 0; i < avail; i++)
            if (strcmp(nb[i].move, move) == 0)
                nb[m++] = nb[i];
        *p = nb[sg_prior_choice(s, nb, m)];
    }
    free(nb);
    return ok;
}

bool kevo_search_crossover(kevo_search *s, int a, int b, const kevo_proposal *out, int n, kevo_proposal *p)
{
    const kevo_node *na = &s->nodes[a], *nbn = &s->nodes[b];
    if (na->family != nbn->family || a == b)
        return false;
    const kevo_space *sp = kevo_search_space(s, na->family);
    for (int attempt = 0; attempt < 8; attempt++) {
        kevo_config cfg = na->cfg;
        /* each axis (a group of params that belong together) from either parent */
        for (int x = 0; x < sp->naxes; x++) {
            if (kv_rand_below(&s->rng, 2) == 0)
                continue;
            for (int i = 0; i < sp->axes[x].nparams; i++)
                cfg.v[sp->axes[x].params[i]] = nbn->cfg.v[sp->axes[x].params[i]];
        }
        char why[256];
        if (kevo_search_find(s, na->family, &cfg) >= 0 || kevo_search_in_batch(out, n, na->family, &cfg) ||
            kevo_search_valid(s, na->family, &cfg, why, sizeof why) != 1)
            continue;
        *p = (kevo_proposal){.family = na->family, .cfg = cfg, .parent = a, .parent2 = b};
        snprintf(p->move, sizeof p->move, "crossover");
        return true;
    }
    return false;
}

static const kevo_move sg_crossover = {"crossover", "a child with each axis from one of two parents"};
static const kevo_move *const sg_moves[] = {&sg_crossover};

const kevo_move *const *kevo_move_list(int *n)
{
    *n = (int)KV_ARRAY_LEN(sg_moves);
    return sg_moves;
}
