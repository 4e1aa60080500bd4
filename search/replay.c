/* replay.c — policies against a measured landscape, without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include "search/replay.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/store.h"
#include "core/op.h"
#include "search/model.h"
#include "search/search.h"
#include "util/ctx.h"
#include "templates/space.h"
#include "util/stats.h"
#include "util/util.h"

void kevo_replay_opts_init(kevo_replay_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = "ucb";
    o->seeds = 20;
    o->target = 0.95;
    o->batch = 1;
    o->ahead = 1;
    o->budget = 120;
}

/* The landscape: fitness by (family, configuration), open addressing. */
typedef struct rp_entry {
    const kevo_space *family;
    kevo_config cfg;
    double fitness;
    bool used;
} rp_entry;

typedef struct rp_land {
    rp_entry *slots;
    size_t cap;
    int n;
    double best;
} rp_land;

static uint64_t rp_hash(const kevo_space *f, const kevo_config *c)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)f;
    for (int i = 0; i < f->nparams; i++) {
        h ^= (uint64_t)c->v[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 31);
}

static rp_entry *rp_find(const rp_land *l, const kevo_space *f, const kevo_config *c, bool *found)
{
    size_t i = (size_t)(rp_hash(f, c) % l->cap);
    for (;; i = (i + 1) % l->cap) {
        rp_entry *e = &l->slots[i];
        if (!e->used) {
            *found = false;
            return e;
        }
        if (e->family == f && memcmp(e->cfg.v, c->v, (size_t)f->nparams * sizeof c->v[0]) == 0) {
            *found = true;
            return e;
        }
    }
}

static bool rp_member(void *ctx, const kevo_space *f, const kevo_config *c)
{
    bool found;
    rp_find(ctx, f, c, &found);
    return found;
}

/* A standard normal draw (Box-Muller over splitmix64). */
static double rp_gauss(uint64_t *rng)
{
    double u1 = ((double)(kv_rand_next(rng) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(kv_rand_next(rng) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* One replay of up to cap evaluations: the evaluations until a fitness
 * reaches goal (cap + 1: never).  Batches of up to `batch` proposals; up to
 * `ahead` of them are proposed before the oldest one's results are observed
 * (tune's --ahead: batch j + ahead is proposed once batch j is observed),
 * each added to the graph when proposed, as tune registers them.  Without
 * hash it stops at the goal; with one it goes on to cap and hash[i]
 * identifies the i-th proposal (family, configuration, parent, operator),
 * *made the evaluations made.  noise > 0 multiplies each measured fitness by
 * exp(noise * z), z drawn from *rng.  Each evaluation is a DEBUG event to
 * ctx's callback. */
static int rp_run(kevo_search *s, const kevo_policy *pol, const rp_land *l, int batch, int ahead, double goal,
                  int cap, double noise, uint64_t *rng, uint64_t *hash, int *made, kevo_ctx *ctx)
{
    int evals = 0, result = cap + 1, proposed = 0, head = 0, inflight = 0;
    kevo_proposal *props = calloc((size_t)batch * (size_t)ahead, sizeof *props);
    int *node = calloc((size_t)batch * (size_t)ahead, sizeof *node), *nb = calloc((size_t)ahead, sizeof *nb);
    s->policy = pol;
    bool exhausted = false;
    while (props && node && nb && evals < cap && (hash || result > cap)) {
        /* a policy with nothing to propose while batches are out may have after their results */
        while (!exhausted && inflight < ahead && proposed < cap) {
            int slot = (head + inflight) % ahead;
            kevo_proposal *p = &props[(size_t)slot * (size_t)batch];
            kevo_search_reseed(s);
            int n = pol->propose(s, p, cap - proposed < batch ? cap - proposed : batch);
            for (int i = 0; i < n; i++)
                if ((node[slot * batch + i] = kevo_search_add(s, &p[i])) < 0)
                    n = i;
            if (n == 0) {
                exhausted = inflight == 0;
                break;
            }
            nb[slot] = n;
            inflight++;
            proposed += n;
        }
        if (inflight == 0)
            break;
        for (int i = 0; i < nb[head] && evals < cap; i++) {
            const kevo_proposal *p = &props[(size_t)head * (size_t)batch + (size_t)i];
            bool found;
            const rp_entry *e = rp_find(l, s->spaces[p->family], &p->cfg, &found);
            double fit = found ? e->fitness * (noise > 0 ? exp(noise * rp_gauss(rng)) : 1.0) : 0.0;
            kevo_search_observe(s, node[head * batch + i], fit);
            if (hash) {
                uint64_t h = rp_hash(s->spaces[p->family], &p->cfg) ^
                             ((uint64_t)(p->parent + 2) * 0x9e3779b97f4a7c15ull);
                for (const char *c = p->move; *c; c++)
                    h = (h ^ (unsigned char)*c) * 1099511628211ull;
                hash[evals] = h;
            }
            evals++;
            if (kv_ctx_fn(ctx)) {
                char c[200];
                kevo_config_str(s->spaces[p->family], &p->cfg, c, sizeof c);
                kv_emit(kv_ctx_fn(ctx), kv_ctx_user(ctx), KEVO_EVENT_DEBUG, evals, "%-10s p=%-3d %.3f  %s", p->move,
                        p->parent, fit, c);
            }
            if (fit >= goal && result > cap)
                result = evals;
        }
        head = (head + 1) % ahead;
        inflight--;
    }
    free(props);
    free(node);
    free(nb);
    if (made)
        *made = evals;
    return result;
}

static int rp_cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static double rp_median(int *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, rp_cmp_int);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A landscape's run, loaded: its row, candidates, shape, and the template
 * families it searched (in the run's order of names). */
typedef struct rp_source {
    kevo_run_row run;
    kevo_cand_row *rows;
    int nrows;
    kevo_syms shape;
    kevo_dtype dt;
    kevo_limits lim;
    kevo_space **spaces; /* every family of the op; owns them */
    int nspaces;
    kevo_space **fam;    /* the run's, borrowed from spaces */
    int nfam;
} rp_source;

static void rp_source_close(rp_source *src)
{
    kevo_cand_rows_free(src->rows, src->nrows);
    free(src->fam);
    kevo_spaces_free(src->spaces, src->nspaces);
    memset(src, 0, sizeof *src);
}

/* Load the run o->run_id (0: the last) of o->db_path. */
static kevo_status rp_source_open(const kevo_replay_opts *o, rp_source *src, kevo_err *err)
{
    memset(src, 0, sizeof *src);
    kevo_db *db = NULL;
    kevo_status st = kevo_db_open_ro(o->db_path, &db, err);
    if (st)
        return st;
    int64_t run_id = o->run_id;
    if (run_id <= 0) {
        int64_t *ids = NULL;
        int n = 0;
        st = kevo_db_run_ids(db, &ids, &n, err);
        run_id = n > 0 ? ids[n - 1] : 0;
        free(ids);
        if (!st && run_id <= 0)
            st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "'%s' holds no run", o->db_path);
    }
    if (!st)
        st = kevo_db_run_get(db, run_id, &src->run, err);
    if (!st)
        st = kevo_db_cand_list(db, run_id, &src->rows, &src->nrows, err);
    kevo_db_close(db);
    if (st)
        return st;
    const kevo_op *op = kevo_op_find(src->run.op);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/templates", o->data_dir);
    if (!op)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld is of unknown op '%s'", (long long)run_id,
                          src->run.op);
    if (!st)
        st = op->parse_shape(src->run.shape, &src->shape, err);
    if (!st && !kevo_dtype_parse(src->run.dtype, &src->dt))
        st = kevo_err_set(err, KEVO_ERR_ARG, "run %lld has unknown dtype '%s'", (long long)run_id, src->run.dtype);
    if (!st)
        st = kevo_limits_for_arch(src->run.arch, &src->lim, err);
    if (!st && src->run.sm_count > 0)
        src->lim.num_sms = src->run.sm_count; /* the device the landscape was measured on */
    if (!st)
        st = kevo_spaces_load_dirs(dir, o->extra_templates, src->run.op, &src->spaces, &src->nspaces, err);
    if (!st && !(src->fam = calloc((size_t)(src->nspaces + 1), sizeof *src->fam)))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kv_buf list;
    kv_buf_init(&list);
    if (!st && kv_buf_printf(&list, ",%s,", src->run.families))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < src->nspaces && !st; i++) {
        char pat[80];
        snprintf(pat, sizeof pat, ",%s,", src->spaces[i]->family);
        if (strstr(list.data, pat))
            src->fam[src->nfam++] = src->spaces[i];
    }
    kv_buf_release(&list);
    if (st)
        rp_source_close(src);
    return st;
}

kevo_status kevo_replay_model(kevo_ctx *ctx, const kevo_replay_opts *o, kevo_model_fit **fits, int *nfits)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    *fits = NULL;
    *nfits = 0;
    rp_source src;
    kevo_status st = rp_source_open(o, &src, err);
    if (st)
        return st;
    kevo_model_device dev;
    kevo_model_device_init(&dev, &src.lim, src.run.peak_tflops, src.run.copy_tbps);
    double *pred = calloc((size_t)src.nrows + 1, sizeof *pred), *meas = calloc((size_t)src.nrows + 1, sizeof *meas);
    const kevo_space **of = calloc((size_t)src.nrows + 1, sizeof *of);
    kevo_model_fit *v = calloc((size_t)src.nfam + 1, sizeof *v);
    if (!pred || !meas || !of || !v)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < src.nrows && !st; i++) {
        const kevo_cand_row *c = &src.rows[i];
        kevo_space *sp = kevo_spaces_find(src.fam, src.nfam, c->family);
        kevo_config cfg;
        if (!sp || strcmp(c->status, "ok") != 0 || !(c->median_ms > 0) ||
            kevo_config_parse_json(sp, c->params, &cfg, NULL))
            continue;
        double t;
        if ((st = kevo_model_predict(sp, &src.shape, &src.lim, src.dt, &cfg, &dev, &t, err)))
            break;
        if (isnan(t))
            continue;
        pred[n] = t;
        meas[n] = c->median_ms;
        of[n++] = sp;
    }
    /* one fit per family with a model, then all of them together (when several) */
    int nf = 0;
    for (int f = 0; f <= src.nfam && !st; f++) {
        const kevo_space *sp = f < src.nfam ? src.fam[f] : NULL;
        if (!sp && nf < 2)
            break;
        double *x = malloc((size_t)n * sizeof *x + 1), *y = malloc((size_t)n * sizeof *y + 1);
        if (!x || !y) {
            free(x);
            free(y);
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        int m = 0, best = -1, first = -1;
        for (int i = 0; i < n; i++) {
            if (sp && of[i] != sp)
                continue;
            x[m] = pred[i];
            y[m] = meas[i];
            if (best < 0 || y[m] < y[best])
                best = m;
            if (first < 0 || x[m] < x[first])
                first = m;
            m++;
        }
        if (m > 0) {
            kevo_model_fit *fit = &v[nf++];
            snprintf(fit->family, sizeof fit->family, "%s", sp ? sp->family : "all");
            fit->n = m;
            fit->spearman = kv_spearman(x, y, m);
            fit->top1_ratio = y[best] / y[first];
            fit->rank_of_best = 1;
            for (int i = 0; i < m; i++)
                fit->rank_of_best += x[i] < x[best];
        }
        free(x);
        free(y);
    }
    free(pred);
    free(meas);
    free(of);
    rp_source_close(&src);
    if (!st && nf == 0)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no verified candidate of '%s' has a family with a model",
                          o->db_path);
    if (st) {
        free(v);
        return st;
    }
    *fits = v;
    *nfits = nf;
    return KEVO_OK;
}

/* A replay's search: an empty graph of the landscape's families with the
 * policy and seed, restricted to the landscape, its valid sets copied from
 * proto (enumerated once). */
static kevo_status rp_search_start(kevo_search *s, const rp_source *src, rp_land *land, const kevo_search *proto,
                                   const kevo_policy *p, uint64_t seed, kevo_err *err)
{
    kevo_status st = kevo_search_init(s, src->fam, src->nfam, &src->shape, &src->lim, src->dt, p, seed, err);
    if (!st)
        st = kevo_search_set_filter(s, src->run.filter[0] ? src->run.filter : NULL, err);
    if (st)
        return st;
    kevo_search_set_member(s, rp_member, land);
    kevo_search_copy_valid(s, proto);
    return KEVO_OK;
}

kevo_status kevo_replay(kevo_ctx *ctx, const kevo_replay_opts *o, kevo_replay_result *r)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    memset(r, 0, sizeof *r);
    if (o->seeds < 1 || o->batch < 1 || o->ahead < 1 || !(o->target > 0 && o->target <= 1) ||
        !(o->noise >= 0 && o->noise <= 1) || o->budget < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "replay needs seeds >= 1, batch >= 1, ahead >= 1, a target in (0, 1], "
                                               "noise in [0, 1], budget >= 1");
    const kevo_policy *pol = kevo_policy_find(o->policy);
    if (!pol)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown policy '%s'", o->policy);
    rp_source src;
    kevo_status st = rp_source_open(o, &src, err);
    if (st)
        return st;
    kevo_run_row run = src.run;
    kevo_cand_row *rows = src.rows;
    int nrows = src.nrows;
    kevo_syms shape = src.shape;
    kevo_dtype dt = src.dt;
    kevo_limits lim = src.lim;
    kevo_space **fam = src.fam;
    int nfam = src.nfam;
    int64_t run_id = run.id;
    rp_land land = {.cap = (size_t)(2 * nrows + 16)};
    land.slots = calloc(land.cap, sizeof *land.slots);
    if (!land.slots)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nrows && !st; i++) {
        kevo_space *sp = kevo_spaces_find(fam, nfam, rows[i].family);
        bool measured = strcmp(rows[i].status, "ok") == 0 || strcmp(rows[i].status, "failed") == 0;
        kevo_config cfg;
        if (!sp || !measured || kevo_config_parse_json(sp, rows[i].params, &cfg, NULL))
            continue;
        bool found;
        rp_entry *e = rp_find(&land, sp, &cfg, &found);
        if (found)
            continue;
        *e = (rp_entry){.family = sp, .cfg = cfg, .used = true};
        e->fitness = strcmp(rows[i].status, "ok") == 0 && !isnan(rows[i].speedup) ? rows[i].speedup : 0.0;
        if (e->fitness > land.best)
            land.best = e->fitness;
        land.n++;
    }
    if (!st && (land.n == 0 || land.best <= 0))
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld of '%s' has no measured landscape", (long long)run_id,
                          o->db_path);

    double goal = o->target * land.best;
    int *rnd = calloc((size_t)o->seeds, sizeof *rnd);
    r->evals = calloc((size_t)o->seeds, sizeof *r->evals);
    if (!st && (!rnd || !r->evals))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    /* the valid sets, enumerated once for every replay */
    kevo_search proto;
    memset(&proto, 0, sizeof proto);
    if (!st)
        st = kevo_search_init(&proto, fam, nfam, &shape, &lim, dt, pol, 1, err);
    if (!st)
        st = kevo_search_set_filter(&proto, run.filter[0] ? run.filter : NULL, err);
    if (!st) {
        kevo_search_set_member(&proto, rp_member, &land);
        for (int f = 0; f < nfam; f++)
            kevo_search_valid_set(&proto, f);
    }
    /* each replay starts from an empty graph with its own seed */
    for (int k = 0; k < o->seeds + 1 && !st; k++) {
        for (int which = 0; which < 2 && !st; which++) {
            const kevo_policy *p = which == 0 ? pol : kevo_policy_find(k == o->seeds ? "exhaustive" : "random");
            if (k == o->seeds && which == 0)
                continue; /* the extra round is the exhaustive order alone */
            kevo_search s;
            if ((st = rp_search_start(&s, &src, &land, &proto, p, (uint64_t)k + 1, err)))
                break;
            int evals = rp_run(&s, p, &land, o->batch, o->ahead, goal, land.n, 0, NULL, NULL, NULL, ctx);
            kevo_search_release(&s);
            if (k == o->seeds)
                r->exhaustive_evals = evals;
            else if (which == 0)
                r->evals[k] = evals;
            else
                rnd[k] = evals;
        }
    }
    /* the noise replays: two per seed, the same graph until a measurement's noise changes a decision */
    uint64_t *ha = NULL, *hb = NULL;
    if (!st && o->noise > 0) {
        int cap = o->budget;
        ha = calloc((size_t)cap, sizeof *ha);
        hb = calloc((size_t)cap, sizeof *hb);
        r->parted = calloc((size_t)o->seeds, sizeof *r->parted);
        if (!ha || !hb || !r->parted)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int k = 0; k < o->seeds && !st; k++) {
            int got[2] = {0, 0};
            for (int which = 0; which < 2 && !st; which++) {
                kevo_search s;
                if ((st = rp_search_start(&s, &src, &land, &proto, pol, (uint64_t)k + 1, err)))
                    break;
                uint64_t rng = 0x6b65766f00000000ull ^ ((uint64_t)k << 1 | (uint64_t)which);
                rp_run(&s, pol, &land, o->batch, o->ahead, INFINITY, cap, o->noise, &rng, which ? hb : ha,
                       &got[which], ctx);
                kevo_search_release(&s);
            }
            int i = 0;
            while (i < got[0] && i < got[1] && ha[i] == hb[i])
                i++;
            r->parted[k] = i == got[0] && i == got[1] ? cap + 1 : i + 1;
            r->parted_runs += r->parted[k] <= cap;
        }
    }
    free(ha);
    free(hb);
    if (!st) {
        if (r->parted) {
            int *copy = malloc((size_t)o->seeds * sizeof *copy);
            if (copy) {
                memcpy(copy, r->parted, (size_t)o->seeds * sizeof *copy);
                r->parted_median = rp_median(copy, o->seeds);
                free(copy);
            }
        }
        r->landscape = land.n;
        r->best = land.best;
        for (int k = 0; k < o->seeds; k++)
            r->reached += r->evals[k] <= land.n;
        int *copy = malloc((size_t)o->seeds * sizeof *copy);
        if (copy) {
            memcpy(copy, r->evals, (size_t)o->seeds * sizeof *copy);
            r->median_evals = rp_median(copy, o->seeds);
            free(copy);
        }
        r->random_median_evals = rp_median(rnd, o->seeds);
    } else {
        free(r->evals);
        r->evals = NULL;
        free(r->parted);
        r->parted = NULL;
    }
    kevo_search_release(&proto);
    free(rnd);
    free(land.slots);
    rp_source_close(&src);
    return st;
}
