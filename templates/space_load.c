/* space_load.c — read a template family: its space file (params, axes, lets,
 * rules, launches, TMA maps, model terms) checked and parsed into a kevo_space,
 * with its CUDA source and the headers it includes. */
#define _POSIX_C_SOURCE 200809L
#include "templates/space.h"
#include "templates/space_check.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most a space file, a template source or a file it includes may hold. */
#define SP_FILE_MAX ((size_t)16 << 20)

/* Expression from a JSON number or string; field names the place for errors. */
static kevo_status sp_expr(const cJSON *j, const char *path, const char *field, kevo_expr **out, kevo_err *err)
{
    char num[64];
    const char *text = NULL;
    if (cJSON_IsNumber(j)) {
        if (!sp_is_int(j))
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s must be a whole number", path, field);
        snprintf(num, sizeof num, "%lld", (long long)j->valuedouble);
        text = num;
    } else if (cJSON_IsString(j)) {
        text = j->valuestring;
    } else {
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s must be a number or an expression string", path, field);
    }
    kevo_status s = kevo_expr_parse(text, out, err);
    if (s)
        kevo_err_prefix(err, "'%s': %s", path, field);
    return s;
}

static kevo_status sp_copy_str(const cJSON *obj, const char *key, char *dst, size_t n, bool required,
                               const char *path, kevo_err *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!j) {
        if (required)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': missing \"%s\"", path, key);
        dst[0] = '\0';
        return KEVO_OK;
    }
    if (!cJSON_IsString(j) || strlen(j->valuestring) >= n)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"%s\" must be a string shorter than %zu", path, key, n);
    memcpy(dst, j->valuestring, strlen(j->valuestring) + 1);
    kv_term_clean(dst); /* names, descriptions and why texts reach the terminal */
    return KEVO_OK;
}

/* The params of a space file (a non-empty array), or of a one-point space
 * (one_point: an LLM candidate's; none, or an empty array, is a kernel
 * without tunables). */
static kevo_status sp_parse_params(kevo_space *s, const cJSON *root, const char *path, bool one_point,
                                   kevo_err *err)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (one_point && (!params || (cJSON_IsArray(params) && cJSON_GetArraySize(params) == 0)))
        return KEVO_OK;
    if (!cJSON_IsArray(params) || (cJSON_GetArraySize(params) == 0 && !one_point))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"params\" must be a non-empty array", path);
    if (cJSON_GetArraySize(params) > KEVO_MAX_PARAMS)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': more than %d params", path, KEVO_MAX_PARAMS);
    const cJSON *p;
    cJSON_ArrayForEach(p, params)
    {
        kevo_param *kp = &s->params[s->nparams];
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(p, "values");
        const cJSON *def = cJSON_GetObjectItemCaseSensitive(p, "default");
        if (!cJSON_IsString(name) || !sp_is_ident(name->valuestring))
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param %d needs an identifier \"name\"", path,
                                s->nparams + 1);
        snprintf(kp->name, sizeof kp->name, "%s", name->valuestring);
        if (kevo_space_param_index(s, kp->name) >= 0)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' given twice", path, kp->name);
        if (!cJSON_IsArray(values) || cJSON_GetArraySize(values) == 0 ||
            cJSON_GetArraySize(values) > KEVO_MAX_VALUES)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' needs 1..%d \"values\"", path, kp->name,
                                KEVO_MAX_VALUES);
        const cJSON *v;
        cJSON_ArrayForEach(v, values)
        {
            if (!sp_is_int(v))
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' values must be integers", path,
                                    kp->name);
            int64_t iv = (int64_t)v->valuedouble;
            for (int i = 0; i < kp->nvalues; i++)
                if (kp->values[i] == iv)
                    return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' repeats value %lld", path, kp->name,
                                        (long long)iv);
            kp->values[kp->nvalues++] = iv;
        }
        kp->def = kp->values[0];
        if (def) {
            bool found = false;
            if (sp_is_int(def))
                for (int i = 0; i < kp->nvalues; i++)
                    found |= kp->values[i] == (int64_t)def->valuedouble;
            if (!found)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' default is not one of its values", path,
                                    kp->name);
            kp->def = (int64_t)def->valuedouble;
        }
        /* "absent": the value configurations stored before the param existed had */
        const cJSON *absent = cJSON_GetObjectItemCaseSensitive(p, "absent");
        if (absent) {
            bool found = false;
            if (sp_is_int(absent))
                for (int i = 0; i < kp->nvalues; i++)
                    found |= kp->values[i] == (int64_t)absent->valuedouble;
            if (!found)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' absent value is not one of its values",
                                    path, kp->name);
            kp->has_absent = true;
            kp->absent = (int64_t)absent->valuedouble;
        }
        s->nparams++;
    }
    return KEVO_OK;
}

/* An axis's params (a JSON array of param names) into ax. */
static kevo_status sp_axis_params(kevo_space *s, kevo_axis *ax, const cJSON *names, const char *path, kevo_err *err)
{
    if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) == 0)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s' must name an array of params", path, ax->op);
    const cJSON *pn;
    cJSON_ArrayForEach(pn, names)
    {
        int idx = cJSON_IsString(pn) ? kevo_space_param_index(s, pn->valuestring) : -1;
        if (idx < 0 || ax->nparams >= KEVO_MAX_PARAMS)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s' names an unknown param", path, ax->op);
        for (int i = 0; i < ax->nparams; i++)
            if (ax->params[i] == idx)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s' names param '%s' twice", path, ax->op,
                                    s->params[idx].name);
        ax->params[ax->nparams++] = idx;
    }
    return KEVO_OK;
}

/* "axes": {"name": [params], or "name": {"params": [params], "keep": EXPR, "seed": BOOL}}. */
static kevo_status sp_parse_axes(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(root, "axes");
    if (!axes)
        return KEVO_OK;
    if (!cJSON_IsObject(axes))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"axes\" must be an object", path);
    const cJSON *a;
    cJSON_ArrayForEach(a, axes)
    {
        if (s->naxes >= KEVO_MAX_AXES)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': more than %d axes", path, KEVO_MAX_AXES);
        kevo_axis *ax = &s->axes[s->naxes];
        if (!sp_is_ident(a->string) || !(cJSON_IsArray(a) || cJSON_IsObject(a)))
            return kevo_err_set(err, KEVO_ERR_PARSE,
                                "'%s': axis '%s' must map a name to an array of params or to {\"params\", \"keep\", \"seed\"}",
                                path, a->string ? a->string : "");
        snprintf(ax->op, sizeof ax->op, "%s", a->string);
        for (int i = 0; i < s->naxes; i++)
            if (strcmp(s->axes[i].op, ax->op) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s' given twice", path, ax->op);
        s->naxes++; /* counted now: kevo_space_free frees its keep on an error below */
        const cJSON *names = cJSON_IsArray(a) ? a : cJSON_GetObjectItemCaseSensitive(a, "params");
        kevo_status st = sp_axis_params(s, ax, names, path, err);
        if (st)
            return st;
        if (cJSON_IsObject(a)) {
            const cJSON *keep = cJSON_GetObjectItemCaseSensitive(a, "keep");
            if (keep && (st = sp_expr(keep, path, "axis keep", &ax->keep, err)))
                return st;
            if (keep && ax->nparams < 2)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s' keeps an expression with one param",
                                    path, ax->op);
            const cJSON *seed = cJSON_GetObjectItemCaseSensitive(a, "seed");
            if (seed && !cJSON_IsBool(seed))
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': axis '%s': \"seed\" must be true or false", path,
                                    ax->op);
            ax->seed = cJSON_IsTrue(seed);
        }
    }
    return KEVO_OK;
}

static kevo_status sp_parse_rules(const cJSON *root, const char *key, kevo_rule *rules, int *n, const char *path,
                                  kevo_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!arr)
        return KEVO_OK;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KEVO_MAX_RULES)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"%s\" must be an array of at most %d rules", path, key,
                            KEVO_MAX_RULES);
    const cJSON *r;
    cJSON_ArrayForEach(r, arr)
    {
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(r, "why");
        kevo_status st = sp_expr(cJSON_GetObjectItemCaseSensitive(r, "expr"), path, key, &rules[*n].expr, err);
        if (st)
            return st;
        snprintf(rules[*n].why, sizeof rules[*n].why, "%s",
                 cJSON_IsString(why) ? why->valuestring : kevo_expr_text(rules[*n].expr));
        kv_term_clean(rules[*n].why); /* printed when a shape or configuration is refused */
        (*n)++;
    }
    return KEVO_OK;
}

/* An array of [name, expr] pairs (key names it in errors) into lets[*n..]. */
static kevo_status sp_parse_let_array(const cJSON *arr, const char *key, kevo_let *lets, int *n, const char *path,
                                      kevo_err *err)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KEVO_MAX_RULES)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"%s\" must be an array of at most %d [name, expr] pairs",
                            path, key, KEVO_MAX_RULES);
    const cJSON *l;
    cJSON_ArrayForEach(l, arr)
    {
        const cJSON *name = cJSON_GetArrayItem(l, 0);
        if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) != 2 || !cJSON_IsString(name) ||
            !sp_is_ident(name->valuestring))
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"%s\" entries must be [name, expr]", path, key);
        kevo_let *kl = &lets[*n];
        snprintf(kl->name, sizeof kl->name, "%s", name->valuestring);
        kevo_status st = sp_expr(cJSON_GetArrayItem(l, 1), path, kl->name, &kl->expr, err);
        if (st)
            return st;
        (*n)++;
    }
    return KEVO_OK;
}

static kevo_status sp_parse_lets(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *lets = cJSON_GetObjectItemCaseSensitive(root, "let");
    return lets ? sp_parse_let_array(lets, "let", s->lets, &s->nlets, path, err) : KEVO_OK;
}

static kevo_status sp_parse_dim3(const cJSON *l, const char *key, kevo_expr *out[3], const char *path,
                                 kevo_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(l, key);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 3)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': launch \"%s\" must be an array of 3", path, key);
    for (int i = 0; i < 3; i++) {
        kevo_status st = sp_expr(cJSON_GetArrayItem(arr, i), path, key, &out[i], err);
        if (st)
            return st;
    }
    return KEVO_OK;
}

static kevo_status sp_parse_launches(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "launches");
    if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) == 0 || cJSON_GetArraySize(ls) > KEVO_MAX_LAUNCHES)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"launches\" must be an array of 1..%d launches", path,
                            KEVO_MAX_LAUNCHES);
    const cJSON *l;
    cJSON_ArrayForEach(l, ls)
    {
        kevo_launch_tpl *lt = &s->launches[s->nlaunches];
        kevo_status st = sp_copy_str(l, "entry", lt->entry, sizeof lt->entry, true, path, err);
        if (!st && !sp_is_ident(lt->entry))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "'%s': launch entry '%s' is not an identifier", path, lt->entry);
        if (!st && cJSON_GetObjectItemCaseSensitive(l, "when"))
            st = sp_expr(cJSON_GetObjectItemCaseSensitive(l, "when"), path, "when", &lt->when, err);
        if (!st)
            st = sp_parse_dim3(l, "grid", lt->grid, path, err);
        if (!st)
            st = sp_parse_dim3(l, "block", lt->block, path, err);
        if (!st)
            st = sp_expr(cJSON_GetObjectItemCaseSensitive(l, "smem"), path, "smem", &lt->smem, err);
        s->nlaunches++; /* count it even when partial, so free releases what was parsed */
        if (st)
            return st;
    }
    return KEVO_OK;
}

static kevo_status sp_parse_tmaps(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(root, "tmaps");
    if (!ts)
        return KEVO_OK;
    if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) > KEVO_MAX_TMAPS)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"tmaps\" must be an array of at most %d maps", path,
                            KEVO_MAX_TMAPS);
    const cJSON *t;
    cJSON_ArrayForEach(t, ts)
    {
        kevo_tmap_tpl *tt = &s->tmaps[s->ntmaps];
        kevo_status st = sp_copy_str(t, "tensor", tt->tensor, sizeof tt->tensor, true, path, err);
        s->ntmaps++; /* counted even when partial, so free releases what was parsed */
        if (!st && !sp_is_ident_n(tt->tensor, sizeof tt->tensor))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "'%s': tmap %d: \"tensor\" must be an identifier", path, s->ntmaps);
        if (!st)
            st = sp_parse_dim3(t, "box", tt->box, path, err);
        if (st)
            return st;
        /* an integer is checked now; an expression when a plan evaluates it */
        const cJSON *sw = cJSON_GetObjectItemCaseSensitive(t, "swizzle");
        if (!sw)
            continue;
        if (cJSON_IsNumber(sw) && !sp_swizzle_ok(sp_is_int(sw) ? (int64_t)sw->valuedouble : -1))
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': tmap '%s' swizzle must be 0, 32, 64 or 128", path,
                                tt->tensor);
        if (!cJSON_IsNumber(sw) && !cJSON_IsString(sw))
            return kevo_err_set(err, KEVO_ERR_PARSE,
                                "'%s': tmap '%s' swizzle must be 0, 32, 64, 128 or an expression string", path,
                                tt->tensor);
        char field[48];
        snprintf(field, sizeof field, "tmap '%s' swizzle", tt->tensor);
        if ((st = sp_expr(sw, path, field, &tt->swizzle, err)))
            return st;
    }
    return KEVO_OK;
}

/* "needs": feature names (core/arch.h) into *mask; absent: 0. */
static kevo_status sp_parse_needs(const cJSON *root, const char *path, unsigned *mask, kevo_err *err)
{
    *mask = 0;
    const cJSON *needs = cJSON_GetObjectItemCaseSensitive(root, "needs");
    if (!needs)
        return KEVO_OK;
    if (!cJSON_IsArray(needs) || cJSON_GetArraySize(needs) == 0 || cJSON_GetArraySize(needs) > KEVO_ARCH_FEATURES)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"needs\" must be an array of 1..%d feature names", path,
                            KEVO_ARCH_FEATURES);
    const cJSON *f;
    cJSON_ArrayForEach(f, needs)
    {
        unsigned bit = cJSON_IsString(f) ? kevo_arch_feature_parse(f->valuestring) : 0;
        if (!bit)
            return kevo_err_set(err, KEVO_ERR_PARSE,
                                "'%s': \"needs\": unknown feature (known: mma.sync, cp.async, tma, wgmma, "
                                "setmaxnreg, tcgen05)", path);
        *mask |= bit;
    }
    return KEVO_OK;
}

/* "archs" (names) and/or "needs" (features): a family with only "needs"
 * runs on every arch of the table that has them all, in table order; one
 * with both lists its archs, each of which must have them. */
static kevo_status sp_parse_archs(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    unsigned needs;
    kevo_status st = sp_parse_needs(root, path, &needs, err);
    if (st)
        return st;
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "archs");
    if (!archs && needs) {
        for (int i = 0; i < kevo_arch_count() && s->narchs < KEVO_MAX_ARCHS; i++) {
            const kevo_arch *a = kevo_arch_at(i);
            if ((a->features & needs) == needs)
                snprintf(s->archs[s->narchs++], sizeof s->archs[0], "%s", a->name);
        }
        if (s->narchs == 0)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': no arch kevo knows has every feature \"needs\" names",
                                path);
        return KEVO_OK;
    }
    if (!cJSON_IsArray(archs) || cJSON_GetArraySize(archs) == 0 || cJSON_GetArraySize(archs) > KEVO_MAX_ARCHS)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"archs\" must be an array of 1..%d names", path,
                            KEVO_MAX_ARCHS);
    const cJSON *a;
    cJSON_ArrayForEach(a, archs)
    {
        if (!cJSON_IsString(a) || strlen(a->valuestring) >= sizeof s->archs[0])
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': bad arch name", path);
        const kevo_arch *row = needs ? kevo_arch_find(a->valuestring) : NULL;
        if (needs && (!row || (row->features & needs) != needs))
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': arch '%s' lacks a feature \"needs\" names", path,
                                a->valuestring);
        snprintf(s->archs[s->narchs++], sizeof s->archs[0], "%s", a->valuestring);
    }
    return KEVO_OK;
}

/* "prelude": system header names that go into generated source between
 * angle brackets, so only kv_header_name_len's characters (no "..", no
 * leading '/' or '.'), what evaluator/compile.c takes for a prelude too. */
static kevo_status sp_parse_prelude(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "prelude");
    if (!pre)
        return KEVO_OK;
    if (!cJSON_IsArray(pre) || cJSON_GetArraySize(pre) > KEVO_MAX_PRELUDE)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"prelude\" must be an array of at most %d header names",
                            path, KEVO_MAX_PRELUDE);
    const cJSON *h;
    cJSON_ArrayForEach(h, pre)
    {
        const char *n = cJSON_IsString(h) ? h->valuestring : NULL;
        bool ok = n && *n && *n != '/' && *n != '.' && strlen(n) < sizeof s->prelude[0] && !strstr(n, "..") &&
                  n[kv_header_name_len(n)] == '\0';
        if (!ok)
            return kevo_err_set(err, KEVO_ERR_PARSE,
                                "'%s': prelude entry %d is not a system header name (letters, digits, _ . / -)",
                                path, s->nprelude);
        snprintf(s->prelude[s->nprelude++], sizeof s->prelude[0], "%s", n);
    }
    return KEVO_OK;
}

/* Names every expression sees besides the params and lets. */
static const char *const sp_reserved[] = {"sm", "num_sms", "max_smem", "max_regs_per_thread", "dtype_bytes",
                                          "dtype_bf16", "DTYPE_BF16"};

/* Names the model's terms see besides those: the device's rates (search/model.h). */
static const char *const sp_model_reserved[] = {"peak_gflops", "dram_gbs", "l2_gbs"};

/* The i-th name a space defines, params, then lets, then the model's lets,
 * and what it is. */
static const char *sp_name(const kevo_space *s, int i, const char **what)
{
    if (i < s->nparams) {
        *what = "param";
        return s->params[i].name;
    }
    i -= s->nparams;
    if (i < s->nlets) {
        *what = "let";
        return s->lets[i].name;
    }
    *what = "model let";
    return s->model_lets[i - s->nlets].name;
}

/* A param or let (or model let) may not shadow the op's shape symbols, the
 * device limits or rates, a param, or an earlier let: expressions would see
 * another value than the one the source is rendered with (the model another
 * rate than the device's). */
static kevo_status sp_check_names(const kevo_space *s, const char *path, kevo_err *err)
{
    const kevo_op *op = kevo_op_find(s->op); /* NULL: an op this build lacks, never searched */
    int n = s->nparams + s->nlets + s->nmodel_lets;
    for (int i = 0; i < n; i++) {
        const char *what, *name = sp_name(s, i, &what);
        for (int k = 0; op && k < op->nsymbols; k++)
            if (strcmp(name, op->symbols[k]) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s '%s' shadows a shape symbol of %s", path, what,
                                    name, op->name);
        for (size_t k = 0; k < KV_ARRAY_LEN(sp_reserved); k++)
            if (strcmp(name, sp_reserved[k]) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s '%s' shadows a device limit", path, what, name);
        for (size_t k = 0; k < KV_ARRAY_LEN(sp_model_reserved); k++)
            if (strcmp(name, sp_model_reserved[k]) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s '%s' shadows a device rate of the model", path,
                                    what, name);
        for (int j = 0; j < i; j++) {
            const char *other_what, *other = sp_name(s, j, &other_what);
            if (strcmp(name, other) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': %s '%s' is defined twice", path, what, name);
        }
    }
    return KEVO_OK;
}

/* Whether name is an include a space file may give: a file beside it or one
 * subfolder down ("sm90/ring.cuh"), each part [A-Za-z0-9_][A-Za-z0-9_.-]*,
 * no "..", at most 200 bytes.  A template folder is untrusted input: nothing
 * may reach above it. */
static bool sp_include_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200)
        return false;
    int slashes = 0;
    bool part_start = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
        if (ch == '/') {
            if (part_start || ++slashes > 1)
                return false; /* an empty part, or a second folder */
            part_start = true;
            continue;
        }
        if (!word && !(!part_start && (ch == '.' || ch == '-')))
            return false; /* each part starts with a letter, digit or '_' */
        if (ch == '.' && name[i + 1] == '.')
            return false;
        part_start = false;
    }
    return !part_start; /* no trailing '/' */
}

/* The template text: each "include" (headers beside the space file, or one
 * subfolder down, that families share), then the source, each behind a #line marker so compiler
 * messages name the right file.  The rendered text stays self-contained: the
 * compile cache key covers everything NVRTC sees. */
static kevo_status sp_read_sources(kevo_space *s, const cJSON *root, const char *dir, const char *source,
                                   kevo_err *err)
{
    const cJSON *inc = cJSON_GetObjectItemCaseSensitive(root, "include");
    if (inc && !cJSON_IsArray(inc))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"include\" must be an array of file names", s->path);
    int ninc = inc ? cJSON_GetArraySize(inc) : 0;
    kv_buf text;
    kv_buf_init(&text);
    kevo_status st = KEVO_OK;
    for (int i = 0; i <= ninc && !st; i++) {
        const char *name = source;
        if (i < ninc) {
            const cJSON *it = cJSON_GetArrayItem(inc, i);
            name = cJSON_IsString(it) ? it->valuestring : NULL;
            if (!name || !sp_include_name_ok(name)) {
                st = kevo_err_set(err, KEVO_ERR_PARSE,
                                  "'%s': include %d must name a file beside the space file or one folder down",
                                  s->path, i);
                break;
            }
        }
        char full[PATH_MAX + 300], *body = NULL;
        snprintf(full, sizeof full, "%s/%s", dir, name);
        st = kv_read_regular_file(full, SP_FILE_MAX, &body, NULL, err); /* never a FIFO or device */
        if (!st && kv_buf_printf(&text, "#line 1 \"%s\"\n%s\n", name, body))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        free(body);
    }
    if (st) {
        kv_buf_release(&text);
        return st;
    }
    s->source = kv_buf_take(&text);
    return KEVO_OK;
}

static kevo_status sp_parse_entries(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "enter_from");
    if (!arr)
        return KEVO_OK;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KEVO_MAX_ENTRIES)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': \"enter_from\" must be an array of at most %d moves", path,
                            KEVO_MAX_ENTRIES);
    const cJSON *m;
    cJSON_ArrayForEach(m, arr)
    {
        kevo_entry *e = &s->entries[s->nentries++]; /* counted first, so free releases a partial one */
        kevo_status st;
        if ((st = sp_copy_str(m, "family", e->from, sizeof e->from, true, path, err)) ||
            (st = sp_copy_str(m, "op", e->op, sizeof e->op, true, path, err)) ||
            (st = sp_copy_str(m, "why", e->why, sizeof e->why, false, path, err)))
            return st;
        if (!sp_is_ident(e->from) || !sp_is_ident(e->op) || strcmp(e->from, s->family) == 0)
            return kevo_err_set(err, KEVO_ERR_PARSE,
                                "'%s': enter_from needs another family's name and an operator name", path);
        for (int i = 0; i < s->naxes; i++)
            if (strcmp(s->axes[i].op, e->op) == 0)
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': enter_from op '%s' is also an axis", path, e->op);
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(m, "set");
        if (!cJSON_IsObject(set) || cJSON_GetArraySize(set) != s->nparams)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': enter_from '%s' must \"set\" each of the %d params once",
                                path, e->op, s->nparams);
        const cJSON *v;
        cJSON_ArrayForEach(v, set)
        {
            int idx = kevo_space_param_index(s, v->string);
            if (idx < 0 || e->set[idx])
                return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': enter_from '%s' sets '%s', not a param (or twice)",
                                    path, e->op, v->string ? v->string : "");
            if ((st = sp_expr(v, path, "enter_from", &e->set[idx], err)))
                return st;
        }
    }
    return KEVO_OK;
}

const char *const kevo_model_term_names[KEVO_MODEL__COUNT] = {
    "flops", "mma_eff", "dram_bytes", "l2_bytes", "load_eff", "items", "slots", "inflight", "item_ns", "launches",
    "lat_norm", "item_mem_ns",
};

/* The optional "model" object: known terms only, and "let" ([name, expr]
 * pairs the terms share, bound with the device's rates); flops, dram_bytes,
 * items and slots are required once the object exists. */
static kevo_status sp_parse_model(kevo_space *s, const cJSON *root, const char *path, kevo_err *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!m)
        return KEVO_OK;
    if (!cJSON_IsObject(m))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': model must be an object", path);
    for (const cJSON *t = m->child; t; t = t->next) {
        if (strcmp(t->string, "let") == 0) {
            kevo_status st = s->nmodel_lets ? kevo_err_set(err, KEVO_ERR_PARSE, "'%s': model.let given twice", path)
                                            : sp_parse_let_array(t, "model.let", s->model_lets, &s->nmodel_lets,
                                                                 path, err);
            if (st)
                return st;
            continue;
        }
        int k = 0;
        while (k < KEVO_MODEL__COUNT && strcmp(kevo_model_term_names[k], t->string) != 0)
            k++;
        if (k == KEVO_MODEL__COUNT)
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': unknown model term '%.64s'", path, t->string);
        if (s->model[k])
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': model term '%s' given twice", path, t->string);
        char field[48];
        snprintf(field, sizeof field, "model.%s", kevo_model_term_names[k]);
        kevo_status st = sp_expr(t, path, field, &s->model[k], err);
        if (st)
            return st;
    }
    static const kevo_model_term required[] = {KEVO_MODEL_FLOPS, KEVO_MODEL_DRAM_BYTES, KEVO_MODEL_ITEMS,
                                               KEVO_MODEL_SLOTS};
    for (size_t i = 0; i < KV_ARRAY_LEN(required); i++)
        if (!s->model[required[i]])
            return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': model lacks the term '%s'", path,
                                kevo_model_term_names[required[i]]);
    return KEVO_OK;
}

/* Parse a loaded JSON document into s (already zeroed, path set).  With
 * inline_source (an LLM candidate) the device source is that text, and the
 * document's "source" and "include" are not read. */
static kevo_status sp_parse(kevo_space *s, const cJSON *root, const char *inline_source, kevo_err *err)
{
    const char *path = s->path;
    if (!cJSON_IsObject(root))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': not a JSON object", path);
    kevo_status st;
    char source[256] = KEVO_SPACE_INLINE_SOURCE_NAME;
    if ((st = sp_copy_str(root, "family", s->family, sizeof s->family, true, path, err)) ||
        (st = sp_copy_str(root, "op", s->op, sizeof s->op, true, path, err)) ||
        (st = sp_copy_str(root, "description", s->description, sizeof s->description, false, path, err)) ||
        (!inline_source && (st = sp_copy_str(root, "source", source, sizeof source, true, path, err))))
        return st;
    if (!sp_is_ident(s->family))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': family '%s' is not an identifier", path, s->family);
    if (strchr(source, '/') || source[0] == '.')
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': source '%s' must be a file beside the space file", path,
                            source);
    if ((st = sp_parse_archs(s, root, path, err)) || (st = sp_parse_prelude(s, root, path, err)) ||
        (st = sp_parse_params(s, root, path, inline_source != NULL, err)) ||
        (st = sp_parse_axes(s, root, path, err)) || (st = sp_parse_lets(s, root, path, err)) ||
        (st = sp_parse_rules(root, "requires", s->requires, &s->nrequires, path, err)) ||
        (st = sp_parse_rules(root, "constraints", s->constraints, &s->nconstraints, path, err)) ||
        (st = sp_parse_launches(s, root, path, err)) || (st = sp_parse_tmaps(s, root, path, err)) ||
        (st = sp_parse_entries(s, root, path, err)) || (st = sp_parse_model(s, root, path, err)))
        return st;
    if ((st = sp_check_names(s, path, err)))
        return st;
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_k");
    if (pad && (st = sp_expr(pad, path, "pad_k", &s->pad_k, err)))
        return st;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(root, "workspace");
    if (ws && (st = sp_expr(ws, path, "workspace", &s->workspace, err)))
        return st;

    s->source_name = kv_strdup(source);
    if (!s->source_name)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (inline_source)
        return (s->source = kv_strdup(inline_source)) ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    char dir[PATH_MAX];
    kv_dirname(path, dir, sizeof dir);
    return sp_read_sources(s, root, dir, source, err);
}

static kevo_status sp_load(const char *text, const char *json_path, const char *inline_source, kevo_space **out,
                           kevo_err *err)
{
    *out = NULL;
    kevo_space *s = calloc(1, sizeof *s);
    if (!s)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    s->path = kv_strdup(json_path);
    s->json = kv_strdup(text);
    kevo_status st;
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        st = kevo_err_set(err, KEVO_ERR_PARSE, "'%s': malformed JSON near offset %ld", json_path,
                          at ? (long)(at - text) : -1L);
    } else {
        st = s->path && s->json ? sp_parse(s, root, inline_source, err)
                                : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    cJSON_Delete(root);
    if (st) {
        kevo_space_free(s);
        return st;
    }
    *out = s;
    return KEVO_OK;
}

kevo_status kevo_space_load_text(const char *text, const char *json_path, kevo_space **out, kevo_err *err)
{
    return sp_load(text, json_path, NULL, out, err);
}

kevo_status kevo_space_load_inline(const char *text, const char *source, const char *name, kevo_space **out,
                                   kevo_err *err)
{
    if (!source) {
        *out = NULL;
        return kevo_err_set(err, KEVO_ERR_ARG, "'%s': no source", name);
    }
    kevo_status st = sp_load(text, name, source, out, err);
    if (st)
        return st;
    kevo_space *s = *out;
    for (int i = 0; i < s->nparams; i++)
        if (s->params[i].nvalues != 1) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "'%s': param '%s' must have one value (a one-point space)", name,
                              s->params[i].name);
            kevo_space_free(s);
            *out = NULL;
            return st;
        }
    if (s->naxes || s->nentries) {
        kevo_space_free(s);
        *out = NULL;
        return kevo_err_set(err, KEVO_ERR_PARSE, "'%s': a one-point space has no axes and no enter_from", name);
    }
    return KEVO_OK;
}

kevo_status kevo_space_point_json(const kevo_space *s, const kevo_config *cfg, const char *family, kv_buf *out,
                                  kevo_err *err)
{
    cJSON *root = s->json ? cJSON_Parse(s->json) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kevo_err_set(err, KEVO_ERR_PARSE, "family '%s' has no space text", s->family);
    }
    static const char *const drop[] = {"axes", "enter_from", "source", "include", "family", "archs", "needs"};
    for (size_t i = 0; i < KV_ARRAY_LEN(drop); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(root, drop[i]);
    bool ok = cJSON_AddStringToObject(root, "family", family) != NULL;
    cJSON *archs = cJSON_AddArrayToObject(root, "archs");
    for (int i = 0; ok && archs && i < s->narchs; i++)
        ok = cJSON_AddItemToArray(archs, cJSON_CreateString(s->archs[i]));
    cJSON *params = cJSON_CreateArray();
    for (int i = 0; ok && params && i < s->nparams; i++) {
        cJSON *p = cJSON_CreateObject(), *vals = cJSON_CreateArray();
        ok = p && vals && cJSON_AddStringToObject(p, "name", s->params[i].name) &&
             cJSON_AddItemToArray(vals, cJSON_CreateNumber((double)cfg->v[i])) && cJSON_AddItemToObject(p, "values", vals) &&
             cJSON_AddNumberToObject(p, "default", (double)cfg->v[i]) && cJSON_AddItemToArray(params, p);
        if (!ok) {
            cJSON_Delete(p);
            cJSON_Delete(vals);
        }
    }
    ok = ok && archs && params && cJSON_ReplaceItemInObjectCaseSensitive(root, "params", params);
    if (!ok && params && !cJSON_GetObjectItemCaseSensitive(root, "params"))
        cJSON_Delete(params);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st = kv_buf_puts(out, text);
    free(text);
    return st ? kevo_err_set(err, st, "out of memory") : KEVO_OK;
}

kevo_status kevo_space_load(const char *json_path, kevo_space **out, kevo_err *err)
{
    *out = NULL;
    char *text = NULL;
    /* a regular file only: a FIFO in a templates folder would block the run forever, a device never ends */
    kevo_status st = kv_read_regular_file(json_path, SP_FILE_MAX, &text, NULL, err);
    if (st)
        return st;
    st = kevo_space_load_text(text, json_path, out, err);
    free(text);
    return st;
}

void kevo_space_free(kevo_space *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->naxes; i++)
        kevo_expr_free(s->axes[i].keep);
    for (int i = 0; i < s->nlets; i++)
        kevo_expr_free(s->lets[i].expr);
    for (int i = 0; i < s->nmodel_lets; i++)
        kevo_expr_free(s->model_lets[i].expr);
    for (int i = 0; i < s->nrequires; i++)
        kevo_expr_free(s->requires[i].expr);
    for (int i = 0; i < s->nconstraints; i++)
        kevo_expr_free(s->constraints[i].expr);
    for (int i = 0; i < s->nlaunches; i++) {
        kevo_launch_tpl *l = &s->launches[i];
        kevo_expr_free(l->when);
        kevo_expr_free(l->smem);
        for (int d = 0; d < 3; d++) {
            kevo_expr_free(l->grid[d]);
            kevo_expr_free(l->block[d]);
        }
    }
    for (int i = 0; i < s->ntmaps; i++) {
        for (int d = 0; d < 3; d++)
            kevo_expr_free(s->tmaps[i].box[d]);
        kevo_expr_free(s->tmaps[i].swizzle);
    }
    for (int i = 0; i < s->nentries; i++)
        for (int p = 0; p < KEVO_MAX_PARAMS; p++)
            kevo_expr_free(s->entries[i].set[p]);
    kevo_expr_free(s->pad_k);
    kevo_expr_free(s->workspace);
    for (int i = 0; i < KEVO_MODEL__COUNT; i++)
        kevo_expr_free(s->model[i]);
    free(s->path);
    free(s->json);
    free(s->source_name);
    free(s->source);
    free(s);
}
