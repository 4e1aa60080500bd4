/* space.c — template families in use: the folders of them, a family bound to
 * a shape and checked configuration by configuration, its launch plan evaluated,
 * its source rendered, configurations and plans to and from JSON.  Reading a
 * space file is space_load.c. */
#define _POSIX_C_SOURCE 200809L
#include "templates/space.h"
#include "templates/space_check.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sp_cmp_family(const void *a, const void *b)
{
    const kevo_space *x = *(const kevo_space *const *)a, *y = *(const kevo_space *const *)b;
    return strcmp(x->family, y->family);
}

kevo_status kevo_spaces_load_dir(const char *dir, const char *op, kevo_space ***out, int *n, kevo_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to open template directory '%s'", dir);
    kevo_space **arr = NULL;
    int cnt = 0;
    kevo_status st = KEVO_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (w < 0 || (size_t)w >= sizeof path) { /* never load a cut path */
            st = kevo_err_set(err, KEVO_ERR_ARG, "template path '%.200s/%.100s' is longer than %zu characters", dir,
                              e->d_name, sizeof path - 1);
            break;
        }
        kevo_space *s = NULL;
        if ((st = kevo_space_load(path, &s, err)))
            break;
        if (op && strcmp(s->op, op) != 0) {
            kevo_space_free(s);
            continue;
        }
        if (strncmp(s->family, "llm", 3) == 0) { /* an LLM candidate's family is named by its hash */
            st = kevo_err_set(err, KEVO_ERR_PARSE, "'%s': family names that begin with 'llm' are kept for LLM "
                              "candidates", path);
            kevo_space_free(s);
            break;
        }
        if (kevo_spaces_find(arr, cnt, s->family)) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "family '%s' defined twice in '%s'", s->family, dir);
            kevo_space_free(s);
            break;
        }
        kevo_space **grown = realloc(arr, (size_t)(cnt + 1) * sizeof *arr);
        if (!grown) {
            kevo_space_free(s);
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        arr = grown;
        arr[cnt++] = s;
    }
    closedir(d);
    if (st) {
        kevo_spaces_free(arr, cnt);
        return st;
    }
    if (cnt > 1)
        qsort(arr, (size_t)cnt, sizeof *arr, sp_cmp_family);
    *out = arr;
    *n = cnt;
    return KEVO_OK;
}

kevo_status kevo_spaces_load_dirs(const char *dir, const char *extra_dir, const char *op, kevo_space ***out, int *n,
                                  kevo_err *err)
{
    kevo_status st = kevo_spaces_load_dir(dir, op, out, n, err);
    if (st || !extra_dir)
        return st;
    /* families from another folder join; names stay unique */
    kevo_space **more = NULL;
    int nmore = 0;
    if ((st = kevo_spaces_load_dir(extra_dir, op, &more, &nmore, err)))
        goto fail;
    kevo_space **all = realloc(*out, (size_t)(*n + nmore + 1) * sizeof *all);
    if (!all) {
        kevo_spaces_free(more, nmore);
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        goto fail;
    }
    *out = all;
    for (int i = 0; i < nmore; i++) {
        if (kevo_spaces_find(*out, *n, more[i]->family)) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "family '%s' in '%s' is already defined", more[i]->family,
                              extra_dir);
            for (int j = i; j < nmore; j++) /* the ones not moved into *out */
                kevo_space_free(more[j]);
            free(more);
            goto fail;
        }
        (*out)[(*n)++] = more[i];
    }
    free(more);
    return KEVO_OK;
fail:
    kevo_spaces_free(*out, *n);
    *out = NULL;
    *n = 0;
    return st;
}

void kevo_spaces_free(kevo_space **s, int n)
{
    for (int i = 0; i < n; i++)
        kevo_space_free(s[i]);
    free(s);
}

kevo_space *kevo_spaces_find(kevo_space **s, int n, const char *family)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s[i]->family, family) == 0)
            return s[i];
    return NULL;
}

int kevo_space_param_index(const kevo_space *s, const char *name)
{
    for (int i = 0; i < s->nparams; i++)
        if (strcmp(s->params[i].name, name) == 0)
            return i;
    return -1;
}

bool kevo_space_has_arch(const kevo_space *s, const char *arch)
{
    for (int i = 0; i < s->narchs; i++)
        if (strcmp(s->archs[i], arch) == 0)
            return true;
    return false;
}

void kevo_space_default(const kevo_space *s, kevo_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < s->nparams; i++)
        cfg->v[i] = s->params[i].def;
}

/* Shape, limits and dtype: what `requires` sees. */
static kevo_status sp_bind_base(const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt, kevo_syms *out)
{
    *out = *shape;
    kevo_status st = KEVO_OK;
    st = st ? st : kevo_syms_set(out, "sm", lim->sm);
    st = st ? st : kevo_syms_set(out, "num_sms", lim->num_sms);
    st = st ? st : kevo_syms_set(out, "max_smem", lim->max_smem);
    st = st ? st : kevo_syms_set(out, "max_regs_per_thread", lim->max_regs);
    st = st ? st : kevo_syms_set(out, "dtype_bytes", 2);
    st = st ? st : kevo_syms_set(out, "dtype_bf16", dt == KEVO_DTYPE_BF16);
    return st;
}

kevo_status kevo_space_bind(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                            const kevo_config *cfg, kevo_syms *out, kevo_err *err)
{
    if (sp_bind_base(shape, lim, dt, out))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols binding '%s'", s->family);
    for (int i = 0; i < s->nparams; i++)
        if (kevo_syms_set(out, s->params[i].name, cfg->v[i]))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols binding '%s'", s->family);
    for (int i = 0; i < s->nlets; i++) {
        int64_t v;
        kevo_status st = kevo_expr_eval(s->lets[i].expr, out, &v, err);
        if (st) {
            kevo_err_prefix(err, "%s: let %s", s->family, s->lets[i].name);
            return st;
        }
        if (kevo_syms_set(out, s->lets[i].name, v))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols binding '%s'", s->family);
    }
    return KEVO_OK;
}

kevo_status kevo_space_supports(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                                kevo_err *err)
{
    kevo_syms b;
    if (sp_bind_base(shape, lim, dt, &b))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols");
    for (int i = 0; i < s->nrequires; i++) {
        int64_t v;
        kevo_status st = kevo_expr_eval(s->requires[i].expr, &b, &v, err);
        if (st) {
            kevo_err_prefix(err, "%s: requires '%s'", s->family, kevo_expr_text(s->requires[i].expr));
            return KEVO_ERR_UNSUPPORTED;
        }
        if (!v)
            return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "family '%s' does not support this shape: %s", s->family,
                                s->requires[i].why);
    }
    return KEVO_OK;
}

/* Whether every value of cfg is in its param's domain (why says which is not). */
static bool sp_in_domain(const kevo_space *s, const kevo_config *cfg, char *why, size_t whylen)
{
    for (int i = 0; i < s->nparams; i++) {
        bool in_domain = false;
        for (int j = 0; j < s->params[i].nvalues; j++)
            in_domain |= s->params[i].values[j] == cfg->v[i];
        if (!in_domain) {
            snprintf(why, whylen, "%s=%lld is not in its domain", s->params[i].name, (long long)cfg->v[i]);
            return false;
        }
    }
    return true;
}

int kevo_space_check(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                     const kevo_config *cfg, char *why, size_t whylen)
{
    kevo_err err;
    kevo_syms b;
    if (!sp_in_domain(s, cfg, why, whylen))
        return 0;
    if (kevo_space_bind(s, shape, lim, dt, cfg, &b, &err)) {
        snprintf(why, whylen, "%s", err.msg);
        return -1;
    }
    for (int i = 0; i < s->nconstraints; i++) {
        int64_t v;
        if (kevo_expr_eval(s->constraints[i].expr, &b, &v, &err)) {
            snprintf(why, whylen, "%s", err.msg);
            return -1;
        }
        if (!v) {
            snprintf(why, whylen, "%s", s->constraints[i].why);
            return 0;
        }
    }
    return 1;
}

/* The last param (index) e depends on, through the lets before `upto`
 * whose levels are known; -1: none (shape, limits, constants). */
static int sp_level(const kevo_space *s, const kevo_expr *e, const int *let_level, int upto)
{
    int level = -1;
    for (int i = 0; i < s->nparams; i++)
        if (i > level && kevo_expr_names(e, s->params[i].name))
            level = i;
    for (int j = 0; j < upto; j++)
        if (let_level[j] > level && kevo_expr_names(e, s->lets[j].name))
            level = let_level[j];
    return level;
}

void kevo_space_walk_init(kevo_space_walk *w, const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim,
                          kevo_dtype dt)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->shape = shape;
    w->lim = lim;
    w->dt = dt;
    /* a let that names itself or a later let reads, in kevo_space_bind, a name not bound yet (an
       error), which this walk would find bound from the configuration before */
    w->exact = true;
    for (int j = 0; j < s->nlets && w->exact; j++)
        for (int k = j; k < s->nlets && w->exact; k++)
            w->exact = !kevo_expr_names(s->lets[j].expr, s->lets[k].name);
    for (int j = 0; j < s->nlets; j++)
        w->let_level[j] = sp_level(s, s->lets[j].expr, w->let_level, j);
    for (int c = 0; c < s->nconstraints; c++)
        w->con_level[c] = sp_level(s, s->constraints[c].expr, w->let_level, s->nlets);
}

/* Bind cfg whole, as kevo_space_bind does, and learn where each name sits;
 * every constraint is stale.  Errors: kevo_space_bind's. */
static kevo_status sp_walk_prime(kevo_space_walk *w, const kevo_config *cfg, kevo_err *err)
{
    const kevo_space *s = w->s;
    w->primed = false;
    kevo_status st = kevo_space_bind(s, w->shape, w->lim, w->dt, cfg, &w->b, err);
    if (st)
        return st;
    for (int i = 0; i < s->nparams; i++)
        w->param_at[i] = kevo_syms_index(&w->b, s->params[i].name);
    for (int j = 0; j < s->nlets; j++)
        w->let_at[j] = kevo_syms_index(&w->b, s->lets[j].name);
    for (int c = 0; c < s->nconstraints; c++)
        w->con_stale[c] = true;
    w->last = *cfg;
    w->primed = true;
    return KEVO_OK;
}

bool kevo_space_step(const kevo_space *s, int idx[KEVO_MAX_PARAMS], int digit)
{
    for (int i = digit + 1; i < s->nparams; i++)
        idx[i] = 0;
    int d = digit;
    while (d >= 0 && ++idx[d] == s->params[d].nvalues)
        idx[d--] = 0;
    return d >= 0;
}

int kevo_space_walk_check(kevo_space_walk *w, const kevo_config *cfg, char *why, size_t whylen)
{
    const kevo_space *s = w->s;
    w->fail_level = s->nparams - 1;
    if (!w->exact)
        return kevo_space_check(s, w->shape, w->lim, w->dt, cfg, why, whylen);
    if (!sp_in_domain(s, cfg, why, whylen))
        return 0;
    kevo_err err;
    if (!w->primed) {
        if (sp_walk_prime(w, cfg, &err)) {
            snprintf(why, whylen, "%s", err.msg);
            return -1;
        }
    } else {
        int d = 0; /* the first param that changed */
        while (d < s->nparams && cfg->v[d] == w->last.v[d])
            d++;
        for (int i = d; i < s->nparams; i++)
            w->b.value[w->param_at[i]] = cfg->v[i];
        w->last = *cfg;
        for (int j = 0; j < s->nlets; j++) {
            if (w->let_level[j] < d)
                continue;
            int64_t v;
            if (kevo_expr_eval(s->lets[j].expr, &w->b, &v, &err)) { /* kevo_space_check says it with its words */
                w->primed = false;
                return kevo_space_check(s, w->shape, w->lim, w->dt, cfg, why, whylen);
            }
            w->b.value[w->let_at[j]] = v;
        }
        for (int c = 0; c < s->nconstraints; c++)
            w->con_stale[c] = w->con_stale[c] || w->con_level[c] >= d;
    }
    /* in order, the first that fails; those after it stay stale, as kevo_space_check never evaluates them */
    for (int c = 0; c < s->nconstraints; c++) {
        if (w->con_stale[c]) {
            if (kevo_expr_eval(s->constraints[c].expr, &w->b, &w->con_val[c], &err)) {
                snprintf(why, whylen, "%s", err.msg);
                return -1;
            }
            w->con_stale[c] = false;
        }
        if (!w->con_val[c]) {
            snprintf(why, whylen, "%s", s->constraints[c].why);
            w->fail_level = w->con_level[c];
            return 0;
        }
    }
    return 1;
}

/* Evaluate e as a launch dimension in [lo, hi]. */
static kevo_status sp_eval_dim(const kevo_expr *e, const kevo_syms *b, int64_t lo, int64_t hi, const char *what,
                               const char *entry, uint32_t *out, kevo_err *err)
{
    int64_t v;
    kevo_status st = kevo_expr_eval(e, b, &v, err);
    if (st) {
        kevo_err_prefix(err, "launch '%s' %s", entry, what);
        return st;
    }
    if (v < lo || v > hi)
        return kevo_err_set(err, KEVO_ERR_ARG, "launch '%s' %s = %lld outside [%lld, %lld]", entry, what,
                            (long long)v, (long long)lo, (long long)hi);
    *out = (uint32_t)v;
    return KEVO_OK;
}

kevo_status kevo_space_plan(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                            const kevo_config *cfg, kevo_plan *plan, kevo_err *err)
{
    memset(plan, 0, sizeof *plan);
    kevo_syms b;
    kevo_status st = kevo_space_bind(s, shape, lim, dt, cfg, &b, err);
    if (st)
        return st;
    static const int64_t grid_max[3] = {2147483647LL, 65535, 65535};
    static const int64_t block_max[3] = {1024, 1024, 64};
    for (int i = 0; i < s->nlaunches; i++) {
        const kevo_launch_tpl *lt = &s->launches[i];
        if (lt->when) {
            int64_t w;
            if ((st = kevo_expr_eval(lt->when, &b, &w, err)))
                return st;
            if (!w)
                continue;
        }
        kevo_launch *l = &plan->launches[plan->nlaunches++];
        snprintf(l->entry, sizeof l->entry, "%s", lt->entry);
        for (int d = 0; d < 3; d++) {
            if ((st = sp_eval_dim(lt->grid[d], &b, 1, grid_max[d], "grid", lt->entry, &l->grid[d], err)) ||
                (st = sp_eval_dim(lt->block[d], &b, 1, block_max[d], "block", lt->entry, &l->block[d], err)))
                return st;
        }
        if ((uint64_t)l->block[0] * l->block[1] * l->block[2] > 1024)
            return kevo_err_set(err, KEVO_ERR_ARG, "launch '%s' block over 1024 threads", lt->entry);
        if ((st = sp_eval_dim(lt->smem, &b, 0, 1 << 30, "smem", lt->entry, &l->smem, err)))
            return st;
    }
    if (plan->nlaunches == 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "family '%s': no launch applies to this configuration", s->family);
    int64_t v = 0;
    if (s->pad_k && (st = kevo_expr_eval(s->pad_k, &b, &v, err)))
        return st;
    plan->pad_k = v != 0;
    v = 0;
    if (s->workspace && (st = kevo_expr_eval(s->workspace, &b, &v, err)))
        return st;
    if (v < 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "family '%s': negative workspace", s->family);
    plan->workspace_bytes = (uint64_t)v;
    for (int i = 0; i < s->ntmaps; i++) {
        kevo_tmap_spec *t = &plan->tmaps[plan->ntmaps++];
        snprintf(t->tensor, sizeof t->tensor, "%s", s->tmaps[i].tensor);
        for (int d = 0; d < 3; d++)
            if ((st = sp_eval_dim(s->tmaps[i].box[d], &b, 1, 256, "tmap box", s->tmaps[i].tensor, &t->box[d], err)))
                return st;
        v = 0;
        if (s->tmaps[i].swizzle && (st = kevo_expr_eval(s->tmaps[i].swizzle, &b, &v, err))) {
            kevo_err_prefix(err, "family '%s': tmap '%s' swizzle", s->family, s->tmaps[i].tensor);
            return st;
        }
        if (!sp_swizzle_ok(v))
            return kevo_err_set(err, KEVO_ERR_ARG, "family '%s': tmap '%s' swizzle = %lld (%s), not 0, 32, 64 or 128",
                                s->family, s->tmaps[i].tensor, (long long)v, kevo_expr_text(s->tmaps[i].swizzle));
        t->swizzle = (int)v;
    }
    return KEVO_OK;
}

int kevo_space_enter(const kevo_space *to, int e, const kevo_space *from, const kevo_syms *shape,
                     const kevo_limits *lim, kevo_dtype dt, const kevo_config *src, kevo_config *out, char *why,
                     size_t n, kevo_err *err)
{
    const kevo_entry *en = &to->entries[e];
    kevo_syms b;
    if (kevo_space_bind(from, shape, lim, dt, src, &b, err))
        return -1;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < to->nparams; i++) {
        int64_t v;
        if (kevo_expr_eval(en->set[i], &b, &v, err)) {
            kevo_err_prefix(err, "family '%s': enter_from '%s' param %s", to->family, en->op, to->params[i].name);
            return -1;
        }
        bool member = false;
        for (int k = 0; k < to->params[i].nvalues && !member; k++)
            member = to->params[i].values[k] == v;
        if (!member) {
            snprintf(why, n, "%s: %s=%lld is not among its values", en->op, to->params[i].name, (long long)v);
            return 0;
        }
        out->v[i] = v;
    }
    return 1;
}

kevo_status kevo_space_render_prelude(const kevo_space *s, kv_buf *src, kevo_err *err)
{
    for (int i = 0; i < s->nprelude; i++)
        if (kv_buf_printf(src, "#include <%s>\n", s->prelude[i]))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    return KEVO_OK;
}

kevo_status kevo_space_render(const kevo_space *s, const kevo_config *cfg, kevo_dtype dt, const char *abi_header,
                              kv_buf *src, kevo_err *err)
{
    kevo_status st = kevo_space_render_prelude(s, src, err);
    if (st)
        return st;
    st = kv_buf_printf(src, "// kevo: family %s, generated from %s; do not edit\n", s->family, s->source_name);
    for (int i = 0; i < s->nparams && !st; i++)
        st = kv_buf_printf(src, "#define %s %lld\n", s->params[i].name, (long long)cfg->v[i]);
    if (!st)
        st = kv_buf_printf(src, "#define DTYPE_BF16 %d\n", dt == KEVO_DTYPE_BF16);
    if (!st && abi_header)
        st = kv_buf_printf(src, "%s\n", abi_header);
    if (!st)
        st = kv_buf_printf(src, "%s", s->source);
    if (st)
        return kevo_err_set(err, st, "out of memory rendering '%s'", s->family);
    return KEVO_OK;
}

kevo_status kevo_config_json(const kevo_space *s, const kevo_config *cfg, kv_buf *out)
{
    kevo_status st = kv_buf_puts(out, "{");
    for (int i = 0; i < s->nparams && !st; i++)
        st = kv_buf_printf(out, "%s\"%s\":%lld", i ? "," : "", s->params[i].name, (long long)cfg->v[i]);
    return st ? st : kv_buf_puts(out, "}");
}

kevo_status kevo_config_parse_json(const kevo_space *s, const char *json, kevo_config *cfg, kevo_err *err)
{
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kevo_err_set(err, KEVO_ERR_PARSE, "params of family '%s' are not a JSON object", s->family);
    }
    memset(cfg, 0, sizeof *cfg);
    kevo_status st = KEVO_OK;
    for (int i = 0; i < s->nparams; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, s->params[i].name);
        if (!v && s->params[i].has_absent) {
            cfg->v[i] = s->params[i].absent; /* stored before the param existed */
            continue;
        }
        if (!cJSON_IsNumber(v)) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "params of family '%s' lack '%s'", s->family, s->params[i].name);
            break;
        }
        if (!sp_is_int(v)) { /* converting 1e300 to an integer is undefined */
            st = kevo_err_set(err, KEVO_ERR_PARSE, "params of family '%s': '%s' is %g, not a whole number", s->family,
                              s->params[i].name, v->valuedouble);
            break;
        }
        cfg->v[i] = (int64_t)v->valuedouble;
    }
    cJSON_Delete(root);
    return st;
}

kevo_status kevo_config_parse_stored(const kevo_space *s, const char *json, const char *who, kevo_config *cfg,
                                     kevo_err *err)
{
    if (!who)
        who = "stored params";
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kevo_err_set(err, KEVO_ERR_PARSE, "%s: params of family '%s' are not a JSON object", who, s->family);
    }
    memset(cfg, 0, sizeof *cfg);
    bool seen[KEVO_MAX_PARAMS] = {false};
    kevo_status st = KEVO_OK;
    const cJSON *v;
    cJSON_ArrayForEach(v, root)
    {
        /* the key is printed only when it is a plain name: it is untrusted text */
        const char *key = v->string ? v->string : "";
        int i = kevo_space_param_index(s, key);
        if (i < 0) {
            st = sp_is_ident(key) ? kevo_err_set(err, KEVO_ERR_PARSE, "%s: '%s' is not a param of family '%s'", who,
                                                 key, s->family)
                                  : kevo_err_set(err, KEVO_ERR_PARSE,
                                                 "%s: params of family '%s' hold a key that is not a param name "
                                                 "(%zu bytes, not an identifier)",
                                                 who, s->family, strlen(key));
            break;
        }
        const kevo_param *p = &s->params[i];
        if (seen[i]) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s: param '%s' is given twice", who, p->name);
            break;
        }
        seen[i] = true;
        if (!sp_is_int(v)) {
            st = cJSON_IsNumber(v) ? kevo_err_set(err, KEVO_ERR_PARSE, "%s: param '%s' is %g, not a whole number", who,
                                                  p->name, v->valuedouble)
                                   : kevo_err_set(err, KEVO_ERR_PARSE, "%s: param '%s' is not a number", who, p->name);
            break;
        }
        cfg->v[i] = (int64_t)v->valuedouble;
        bool in_domain = false;
        for (int j = 0; j < p->nvalues; j++)
            in_domain |= p->values[j] == cfg->v[i];
        if (!in_domain) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s: param '%s' = %lld is not among its values in '%s'", who,
                              p->name, (long long)cfg->v[i], s->path ? s->path : s->family);
            break;
        }
    }
    for (int i = 0; i < s->nparams && !st; i++) {
        if (seen[i])
            continue;
        if (s->params[i].has_absent)
            cfg->v[i] = s->params[i].absent; /* stored before the param existed */
        else
            st = kevo_err_set(err, KEVO_ERR_PARSE, "%s: params of family '%s' lack '%s'", who, s->family,
                              s->params[i].name);
    }
    cJSON_Delete(root);
    return st;
}

int kevo_config_cmp(const kevo_config *a, const kevo_config *b)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(a->v); i++)
        if (a->v[i] != b->v[i])
            return a->v[i] < b->v[i] ? -1 : 1;
    return 0;
}

void kevo_config_str(const kevo_space *s, const kevo_config *cfg, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < s->nparams && used < n; i++) {
        int w = snprintf(out + used, n - used, "%s%s=%lld", i ? " " : "", s->params[i].name, (long long)cfg->v[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

kevo_status kevo_plan_json(const kevo_plan *p, kv_buf *out)
{
    kevo_status st = kv_buf_printf(out, "{\"workspace_bytes\":%llu,\"pad_k\":%d,\"launches\":[",
                                   (unsigned long long)p->workspace_bytes, p->pad_k);
    for (int i = 0; i < p->nlaunches && !st; i++) {
        const kevo_launch *l = &p->launches[i];
        st = kv_buf_printf(out, "%s{\"entry\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u}",
                           i ? "," : "", l->entry, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                           l->block[2], l->smem);
    }
    if (!st)
        st = kv_buf_puts(out, "],\"tmaps\":[");
    for (int i = 0; i < p->ntmaps && !st; i++) {
        const kevo_tmap_spec *t = &p->tmaps[i];
        st = kv_buf_printf(out, "%s{\"tensor\":\"%s\",\"box\":[%u,%u,%u],\"swizzle\":%d}", i ? "," : "",
                           t->tensor, t->box[0], t->box[1], t->box[2], t->swizzle);
    }
    return st ? st : kv_buf_puts(out, "]}");
}

/* A JSON number in [lo, hi] (NaN and infinities are not). */
static bool sp_in_range(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi;
}

static bool sp_u32_array(const cJSON *arr, uint32_t out[3])
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 3)
        return false;
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetArrayItem(arr, i);
        if (!sp_in_range(v, 0, 4294967295.0))
            return false;
        out[i] = (uint32_t)v->valuedouble;
    }
    return true;
}

kevo_status kevo_plan_parse_json(const char *json, kevo_plan *p, kevo_err *err)
{
    memset(p, 0, sizeof *p);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "launches");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(root, "workspace_bytes");
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_k");
    kevo_status st = KEVO_OK;
    if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) > KEVO_MAX_LAUNCHES || !cJSON_IsNumber(ws) ||
        !cJSON_IsNumber(pad)) {
        st = kevo_err_set(err, KEVO_ERR_PARSE, "malformed launch plan");
    } else {
        p->workspace_bytes = sp_in_range(ws, 0, 9007199254740992.0) ? (uint64_t)ws->valuedouble : 0;
        p->pad_k = pad->valueint != 0;
        if (!sp_in_range(ws, 0, 9007199254740992.0))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "malformed launch plan: workspace_bytes out of range");
        const cJSON *l;
        const cJSON *todo = st ? NULL : ls;
        cJSON_ArrayForEach(l, todo)
        {
            kevo_launch *kl = &p->launches[p->nlaunches++];
            const cJSON *entry = cJSON_GetObjectItemCaseSensitive(l, "entry");
            const cJSON *smem = cJSON_GetObjectItemCaseSensitive(l, "smem");
            if (!cJSON_IsString(entry) || strlen(entry->valuestring) >= sizeof kl->entry ||
                !sp_is_ident_n(entry->valuestring, sizeof kl->entry) ||
                !sp_u32_array(cJSON_GetObjectItemCaseSensitive(l, "grid"), kl->grid) ||
                !sp_u32_array(cJSON_GetObjectItemCaseSensitive(l, "block"), kl->block) ||
                !sp_in_range(smem, 0, 4294967295.0)) {
                st = kevo_err_set(err, KEVO_ERR_PARSE, "malformed launch in plan");
                break;
            }
            snprintf(kl->entry, sizeof kl->entry, "%s", entry->valuestring);
            kl->smem = (uint32_t)smem->valuedouble;
        }
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(root, "tmaps");
    if (!st && ts) {
        const cJSON *t;
        if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) > KEVO_MAX_TMAPS)
            st = kevo_err_set(err, KEVO_ERR_PARSE, "malformed tensor maps in plan");
        else
            cJSON_ArrayForEach(t, ts)
        {
            kevo_tmap_spec *kt = &p->tmaps[p->ntmaps++];
            const cJSON *tensor = cJSON_GetObjectItemCaseSensitive(t, "tensor");
            const cJSON *sw = cJSON_GetObjectItemCaseSensitive(t, "swizzle");
            if (!cJSON_IsString(tensor) || strlen(tensor->valuestring) >= sizeof kt->tensor ||
                !sp_is_ident_n(tensor->valuestring, sizeof kt->tensor) ||
                !sp_u32_array(cJSON_GetObjectItemCaseSensitive(t, "box"), kt->box) || !cJSON_IsNumber(sw)) {
                st = kevo_err_set(err, KEVO_ERR_PARSE, "malformed tensor map in plan");
                break;
            }
            snprintf(kt->tensor, sizeof kt->tensor, "%s", tensor->valuestring);
            kt->swizzle = sw->valueint;
        }
    }
    cJSON_Delete(root);
    return st;
}
