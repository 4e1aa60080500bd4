/* graph.c — the search graph: nodes, lookup, valid sets (the moves from a
 * node, seeds and draws are in moves.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/search.h"
#include "util/util.h"

static uint64_t sg_key(int family, const kevo_config *cfg, int nparams)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)family;
    for (int i = 0; i < nparams; i++) {
        h ^= (uint64_t)cfg->v[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

/* The space of a family index: a searched template family (< nspaces) or
 * a generator's one-point space (kevo_search_add_space). */
static const kevo_space *sg_space(const kevo_search *s, int family)
{
    return family < s->nspaces ? s->spaces[family] : s->added[family - s->nspaces];
}

static bool sg_same(const kevo_search *s, const kevo_node *n, int family, const kevo_config *cfg)
{
    if (n->family != family)
        return false;
    return memcmp(n->cfg.v, cfg->v, (size_t)sg_space(s, family)->nparams * sizeof cfg->v[0]) == 0;
}

int kevo_search_find(const kevo_search *s, int family, const kevo_config *cfg)
{
    if (!s->hash_cap)
        return -1;
    uint64_t h = sg_key(family, cfg, sg_space(s, family)->nparams);
    for (int i = 0; i < s->hash_cap; i++) {
        int slot = (int)((h + (uint64_t)i) % (uint64_t)s->hash_cap);
        if (s->hash_vals[slot] == 0)
            return -1;
        int idx = s->hash_vals[slot] - 1;
        if ((uint64_t)s->hash_keys[slot] == h && sg_same(s, &s->nodes[idx], family, cfg))
            return idx;
    }
    return -1;
}

static void sg_hash_insert(kevo_search *s, int idx)
{
    const kevo_node *n = &s->nodes[idx];
    uint64_t h = sg_key(n->family, &n->cfg, sg_space(s, n->family)->nparams);
    for (int i = 0;; i++) {
        int slot = (int)((h + (uint64_t)i) % (uint64_t)s->hash_cap);
        if (s->hash_vals[slot] == 0) {
            s->hash_keys[slot] = (int64_t)h;
            s->hash_vals[slot] = idx + 1;
            return;
        }
    }
}

static bool sg_hash_grow(kevo_search *s)
{
    int cap = s->hash_cap ? s->hash_cap * 2 : 1024;
    int64_t *keys = calloc((size_t)cap, sizeof *keys);
    int *vals = calloc((size_t)cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    free(s->hash_keys);
    free(s->hash_vals);
    s->hash_keys = keys;
    s->hash_vals = vals;
    s->hash_cap = cap;
    for (int i = 0; i < s->nnodes; i++)
        sg_hash_insert(s, i);
    return true;
}

/* Index of the searched family named name, or -1. */
static int sg_family_index(const kevo_search *s, const char *name)
{
    for (int f = 0; f < s->nspaces; f++)
        if (strcmp(s->spaces[f]->family, name) == 0)
            return f;
    return -1;
}

kevo_status kevo_search_init(kevo_search *s, kevo_space **spaces, int nspaces, const kevo_syms *shape,
                             const kevo_limits *lim, kevo_dtype dt, const kevo_policy *policy, uint64_t seed,
                             kevo_err *err)
{
    memset(s, 0, sizeof *s);
    if (nspaces < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "no template family to search");
    s->spaces = spaces;
    s->nspaces = nspaces;
    s->shape = *shape;
    s->limits = *lim;
    s->dtype = dt;
    s->policy = policy;
    s->seed = seed;
    s->rng = seed;
    kevo_model_device_init(&s->model, lim, NAN, NAN);
    s->valid = calloc((size_t)nspaces, sizeof *s->valid);
    s->where_seen = calloc((size_t)nspaces, sizeof *s->where_seen);
    s->where_unbound = calloc((size_t)nspaces, sizeof *s->where_unbound);
    if (!s->valid || !s->where_seen || !s->where_unbound || !sg_hash_grow(s)) {
        kevo_search_release(s);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    /* a move between two searched families must evaluate: try it on the
     * source's default configuration, so a typo fails the run up front */
    for (int t = 0; t < nspaces; t++)
        for (int e = 0; e < spaces[t]->nentries; e++) {
            int f = sg_family_index(s, spaces[t]->entries[e].from);
            if (f < 0)
                continue;
            kevo_config src, dst;
            char why[256];
            kevo_err e2;
            kevo_space_default(spaces[f], &src);
            if (kevo_space_enter(spaces[t], e, spaces[f], shape, lim, dt, &src, &dst, why, sizeof why, &e2) < 0) {
                kevo_search_release(s);
                return kevo_err_set(err, e2.status, "%s", e2.msg);
            }
        }
    return KEVO_OK;
}

kevo_status kevo_search_set_filter(kevo_search *s, const char *where, kevo_err *err)
{
    kevo_expr_free(s->filter);
    s->filter = NULL;
    if (!where || !*where)
        return KEVO_OK;
    kevo_status st = kevo_expr_parse(where, &s->filter, err);
    if (st)
        kevo_err_prefix(err, "--where");
    return st;
}

void kevo_search_set_model(kevo_search *s, const kevo_model_device *d)
{
    s->model = *d;
}

void kevo_search_set_budget(kevo_search *s, int64_t budget)
{
    s->budget = budget;
}

bool kevo_search_add_warm(kevo_search *s, int family, const kevo_config *cfg)
{
    kevo_proposal *w = realloc(s->warm, (size_t)(s->nwarm + 1) * sizeof *w);
    if (!w)
        return false;
    s->warm = w;
    w[s->nwarm] = (kevo_proposal){.family = family, .cfg = *cfg, .parent = -1, .parent2 = -1};
    snprintf(w[s->nwarm].move, sizeof w[s->nwarm].move, "warm");
    s->nwarm++;
    return true;
}

kevo_status kevo_search_set_shapes(kevo_search *s, const kevo_syms *shapes, const double *weights, int n,
                                   kevo_err *err)
{
    if (n < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "a shape distribution needs a shape");
    for (int i = 0; i < n; i++)
        if (!(weights[i] > 0) || !isfinite(weights[i]))
            return kevo_err_set(err, KEVO_ERR_ARG, "shape %d's weight must be positive", i + 1);
    free(s->extra);
    free(s->weights);
    s->nextra = 0;
    s->extra = n > 1 ? malloc((size_t)(n - 1) * sizeof *s->extra) : NULL;
    s->weights = malloc((size_t)n * sizeof *s->weights);
    if ((n > 1 && !s->extra) || !s->weights)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    memcpy(s->weights, weights, (size_t)n * sizeof *weights);
    if (n > 1)
        memcpy(s->extra, shapes + 1, (size_t)(n - 1) * sizeof *shapes);
    s->nextra = n - 1;
    return KEVO_OK;
}

double kevo_search_predict(const kevo_search *s, int family, const kevo_config *cfg)
{
    double t = NAN;
    kevo_err err;
    if (kevo_model_predict(sg_space(s, family), &s->shape, &s->limits, s->dtype, cfg, &s->model, &t, &err))
        return NAN;
    if (s->nextra == 0 || isnan(t))
        return t;
    /* weighted geometric mean over the distribution */
    double lsum = s->weights[0] * log(t), wsum = s->weights[0];
    for (int i = 0; i < s->nextra; i++) {
        if (kevo_model_predict(sg_space(s, family), &s->extra[i], &s->limits, s->dtype, cfg, &s->model, &t, &err) ||
            isnan(t))
            return NAN;
        lsum += s->weights[i + 1] * log(t);
        wsum += s->weights[i + 1];
    }
    return exp(lsum / wsum);
}

void kevo_search_set_member(kevo_search *s, kevo_member_fn member, void *ctx)
{
    s->member = member;
    s->member_ctx = ctx;
}

bool kevo_search_copy_valid(kevo_search *dst, const kevo_search *src)
{
    for (int f = 0; f < dst->nspaces && f < src->nspaces; f++) {
        const kevo_valid_set *from = &src->valid[f];
        kevo_valid_set *to = &dst->valid[f];
        if (!from->ready || to->ready)
            continue;
        size_t n1 = (size_t)(from->n ? from->n : 1);
        to->cfgs = malloc(n1 * sizeof *to->cfgs);
        to->pred = malloc(n1 * sizeof *to->pred);
        to->order = malloc(n1 * sizeof *to->order);
        if (!to->cfgs || !to->pred || !to->order)
            return false;
        memcpy(to->cfgs, from->cfgs, (size_t)from->n * sizeof *to->cfgs);
        memcpy(to->pred, from->pred, (size_t)from->n * sizeof *to->pred);
        memcpy(to->order, from->order, (size_t)from->n * sizeof *to->order);
        to->n = from->n;
        to->ready = true;
    }
    return true;
}

void kevo_search_release(kevo_search *s)
{
    kevo_expr_free(s->filter);
    if (s->valid)
        for (int i = 0; i < s->nspaces; i++) {
            free(s->valid[i].cfgs);
            free(s->valid[i].pred);
            free(s->valid[i].order);
        }
    free(s->valid);
    free(s->where_seen);
    free(s->where_unbound);
    free(s->warm);
    free(s->extra);
    free(s->weights);
    free(s->nodes);
    free(s->hash_keys);
    free(s->hash_vals);
    free(s->added);
    memset(s, 0, sizeof *s);
}

int kevo_search_add_space(kevo_search *s, const kevo_space *sp)
{
    if (s->nadded == s->added_cap) {
        int cap = s->added_cap ? 2 * s->added_cap : 16;
        const kevo_space **a = realloc(s->added, (size_t)cap * sizeof *a);
        if (!a)
            return -1;
        s->added = a;
        s->added_cap = cap;
    }
    s->added[s->nadded] = sp;
    return s->nspaces + s->nadded++;
}

const kevo_space *kevo_search_space(const kevo_search *s, int family)
{
    return family >= 0 && family < s->nspaces + s->nadded ? sg_space(s, family) : NULL;
}

int kevo_search_add(kevo_search *s, const kevo_proposal *p)
{
    if (s->nnodes == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        kevo_node *nodes = realloc(s->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes)
            return -1;
        s->nodes = nodes;
        s->cap = cap;
    }
    if ((s->nnodes + 1) * 2 > s->hash_cap && !sg_hash_grow(s))
        return -1;
    kevo_node *n = &s->nodes[s->nnodes];
    memset(n, 0, sizeof *n);
    n->family = p->family;
    n->cfg = p->cfg;
    n->parent = p->parent;
    n->parent2 = p->parent2;
    snprintf(n->move, sizeof n->move, "%s", p->move);
    n->fitness = NAN;
    sg_hash_insert(s, s->nnodes);
    return s->nnodes++;
}

void kevo_search_reseed(kevo_search *s)
{
    s->rng = s->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(s->nnodes + 1));
    kv_rand_next(&s->rng);
}

void kevo_search_observe(kevo_search *s, int node, double fitness)
{
    s->nodes[node].done = true;
    s->nodes[node].fitness = fitness;
}

double kevo_search_rank(const kevo_node *n)
{
    return isnan(n->fitness) ? 0.0 : n->fitness;
}

/* What kevo_search_valid asks of a configuration valid at every shape:
 * the landscape's membership and --where. */
static int sg_valid_rest(const kevo_search *s, const kevo_space *sp, const kevo_config *cfg, char *why, size_t n)
{
    if (s->member && !s->member(s->member_ctx, sp, cfg)) {
        snprintf(why, n, "not in the landscape");
        return 0;
    }
    if (s->filter) {
        kevo_syms b;
        kevo_err err;
        int64_t v = 0;
        char name[KEVO_SYM_NAME_MAX];
        if (kevo_space_bind(sp, &s->shape, &s->limits, s->dtype, cfg, &b, &err)) {
            snprintf(why, n, "%s", err.msg);
            return -1;
        }
        /* a name the family lacks counts as excluded */
        if (kevo_expr_unbound(s->filter, &b, name, sizeof name)) {
            snprintf(why, n, "excluded by --where '%s': family %s has no '%s'", kevo_expr_text(s->filter),
                     sp->family, name);
            return 0;
        }
        if (kevo_expr_eval(s->filter, &b, &v, &err)) {
            snprintf(why, n, "--where: %s", err.msg);
            return -2;
        }
        if (!v) {
            snprintf(why, n, "excluded by --where '%s'", kevo_expr_text(s->filter));
            return 0;
        }
    }
    return 1;
}

int kevo_search_valid(const kevo_search *s, int family, const kevo_config *cfg, char *why, size_t n)
{
    const kevo_space *sp = sg_space(s, family);
    int ok = kevo_space_check(sp, &s->shape, &s->limits, s->dtype, cfg, why, n);
    for (int i = 0; i < s->nextra && ok == 1; i++)
        ok = kevo_space_check(sp, &s->extra[i], &s->limits, s->dtype, cfg, why, n);
    return ok == 1 ? sg_valid_rest(s, sp, cfg, why, n) : ok;
}

/* Record, during the enumeration of a valid set, what --where met at cfg:
 * whether the family binds every name it uses. */
static void sg_note_where(kevo_search *s, int family, const kevo_config *cfg)
{
    if (!s->filter || !s->where_seen || s->where_seen[family])
        return;
    kevo_syms b;
    kevo_err err;
    if (kevo_space_bind(s->spaces[family], &s->shape, &s->limits, s->dtype, cfg, &b, &err))
        return;
    s->where_seen[family] = true;
    s->where_unbound[family] = kevo_expr_unbound(s->filter, &b, s->where_name, sizeof s->where_name);
}

/* Keep the first evaluation failure met while enumerating (rc -1: the
 * space's constraints or lets, -2: --where). */
static void sg_note_fault(kevo_search *s, int family, const kevo_config *cfg, int rc, const char *why)
{
    if (s->faulted)
        return;
    char c[256];
    kevo_config_str(s->spaces[family], cfg, c, sizeof c);
    s->faulted = true;
    s->fault_where = rc == -2;
    if (rc == -2)
        kevo_err_set(&s->fault, KEVO_ERR_ARG, "%s (family %s at %s)", why, s->spaces[family]->family, c);
    else
        kevo_err_set(&s->fault, KEVO_ERR_PARSE, "template family %s ('%s') at %s: %s", s->spaces[family]->family,
                     s->spaces[family]->path ? s->spaces[family]->path : "", c, why);
}

kevo_status kevo_search_check(kevo_search *s, kevo_err *err)
{
    int total = 0;
    for (int f = 0; f < s->nspaces; f++) {
        const kevo_valid_set *vs = kevo_search_valid_set(s, f);
        if (!vs)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory enumerating family '%s'", s->spaces[f]->family);
        total += vs->n;
    }
    if (s->faulted) {
        kevo_err_set(err, s->fault.status, "%s", s->fault.msg);
        return s->fault.status;
    }
    if (s->filter) {
        bool seen = false, bound = false;
        for (int f = 0; f < s->nspaces; f++) {
            seen |= s->where_seen[f];
            bound |= s->where_seen[f] && !s->where_unbound[f];
        }
        if (seen && !bound)
            return kevo_err_set(err, KEVO_ERR_ARG,
                                "--where '%s' names '%s', which no searched family, shape symbol or device limit "
                                "has ('kevo list families' names each family's params)",
                                kevo_expr_text(s->filter), s->where_name);
    }
    if (total == 0) {
        kv_buf fams;
        kv_buf_init(&fams);
        for (int f = 0; f < s->nspaces; f++)
            kv_buf_printf(&fams, "%s%s", f ? ", " : "", s->spaces[f]->family);
        if (s->filter)
            kevo_err_set(err, KEVO_ERR_ARG, "--where '%s' excludes every valid configuration of %s",
                         kevo_expr_text(s->filter), fams.data ? fams.data : "");
        else
            kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "no configuration of %s is valid here", fams.data ? fams.data : "");
        kv_buf_release(&fams);
        return err ? err->status : KEVO_ERR_ARG;
    }
    return KEVO_OK;
}

typedef struct sg_keyed {
    double key;
    int idx;
} sg_keyed;

/* Ascending key, then index: a total order, so every sort agrees. */
static int sg_cmp_keyed(const void *a, const void *b)
{
    const sg_keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

bool kevo_search_order(const double *key, int n, int *order)
{
    sg_keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return false;
    for (int i = 0; i < n; i++)
        k[i] = (sg_keyed){.key = isnan(key[i]) ? INFINITY : key[i], .idx = i};
    qsort(k, (size_t)n, sizeof *k, sg_cmp_keyed);
    for (int i = 0; i < n; i++)
        order[i] = k[i].idx;
    free(k);
    return true;
}

/* The model's predictions of a valid set and the order by them (unknown
 * predictions last, in enumeration order). */
static bool sg_order_valid(kevo_search *s, int family, kevo_valid_set *vs)
{
    size_t n1 = (size_t)(vs->n ? vs->n : 1);
    vs->pred = malloc(n1 * sizeof *vs->pred);
    vs->order = malloc(n1 * sizeof *vs->order);
    if (!vs->pred || !vs->order)
        return false;
    for (int i = 0; i < vs->n; i++)
        vs->pred[i] = kevo_search_predict(s, family, &vs->cfgs[i]);
    return kevo_search_order(vs->pred, vs->n, vs->order);
}

const kevo_valid_set *kevo_search_valid_set(kevo_search *s, int family)
{
    kevo_valid_set *vs = &s->valid[family];
    if (vs->ready)
        return vs;
    const kevo_space *sp = s->spaces[family];
    int idx[KEVO_MAX_PARAMS] = {0};
    int cap = 0;
    /* kevo_search_valid at every configuration, each shape's walk re-evaluating only what changed */
    kevo_space_walk *walk = malloc((size_t)(s->nextra + 1) * sizeof *walk);
    if (!walk)
        return NULL;
    for (int i = 0; i <= s->nextra; i++)
        kevo_space_walk_init(&walk[i], sp, i == 0 ? &s->shape : &s->extra[i - 1], &s->limits, s->dtype);
    for (;;) {
        kevo_config cfg;
        memset(&cfg, 0, sizeof cfg);
        for (int i = 0; i < sp->nparams; i++)
            cfg.v[i] = sp->params[i].values[idx[i]];
        char why[512];
        int ok = 1, skip = sp->nparams - 1; /* the odometer digit to step next */
        for (int i = 0; i <= s->nextra && ok == 1; i++) {
            ok = kevo_space_walk_check(&walk[i], &cfg, why, sizeof why);
            if (ok == 0) /* a constraint of the params up to fail_level: all that share them fail it */
                skip = walk[i].fail_level;
        }
        if (ok == 1)
            ok = sg_valid_rest(s, sp, &cfg, why, sizeof why);
        if (ok < 0)
            sg_note_fault(s, family, &cfg, ok, why);
        else if (ok == 1 || (s->filter && !s->where_seen[family] && !strncmp(why, "excluded by --where", 19)))
            sg_note_where(s, family, &cfg);
        if (ok == 1) {
            if (vs->n == cap) {
                cap = cap ? cap * 2 : 256;
                kevo_config *g = realloc(vs->cfgs, (size_t)cap * sizeof *g);
                if (!g) {
                    free(walk);
                    return NULL;
                }
                vs->cfgs = g;
            }
            vs->cfgs[vs->n++] = cfg;
        }
        /* past a failed constraint's params, the next value of the last of them (the rest fail it too) */
        if (!kevo_space_step(sp, idx, skip))
            break;
    }
    free(walk);
    if (!sg_order_valid(s, family, vs))
        return NULL;
    vs->ready = true;
    return vs;
}
