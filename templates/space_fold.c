/* space_fold.c — a one-point space's plan folded at its params, for a
 * reader (the LLM prompt's view of a parent's plan; see space.h). */
#include "templates/space.h"

#include "core/expr.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Whether a JSON number is an integer of int64's range, into *v (a cast
 * past that range is undefined). */
static bool sf_int(const cJSON *j, int64_t *v)
{
    if (!cJSON_IsNumber(j) || !(j->valuedouble > -9.2e18 && j->valuedouble < 9.2e18))
        return false;
    *v = (int64_t)j->valuedouble;
    return (double)*v == j->valuedouble;
}

/* Fold one expression item in place (a string; a number stays): a number
 * when it folds to one.  *is_const and *value as kevo_expr_fold's (a
 * number item: itself).  Errors: the expression's parse error, KEVO_ERR_NOMEM. */
static kevo_status sf_fold_item(cJSON *item, const kevo_syms *syms, bool *is_const, int64_t *value, kevo_err *err)
{
    *is_const = false;
    if (cJSON_IsNumber(item)) {
        *is_const = sf_int(item, value);
        return KEVO_OK;
    }
    if (!cJSON_IsString(item))
        return KEVO_OK; /* the loader names what is wrong with it */
    kevo_expr *e = NULL;
    kevo_status st = kevo_expr_parse(item->valuestring, &e, err);
    if (st)
        return st;
    kv_buf b;
    kv_buf_init(&b);
    st = kevo_expr_fold(e, syms, &b, is_const, value, err);
    kevo_expr_free(e);
    /* a number past 2^53 stays text: a JSON number is read back as a double */
    if (!st && *is_const && *value > -(INT64_C(1) << 53) && *value < (INT64_C(1) << 53)) {
        free(item->valuestring); /* the item becomes a number in place (a parsed item owns its string) */
        item->valuestring = NULL;
        item->type = cJSON_Number | (item->type & cJSON_StringIsConst);
        cJSON_SetNumberValue(item, (double)*value);
    } else if (!st && !cJSON_SetValuestring(item, b.data)) {
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    kv_buf_release(&b);
    return st;
}

/* Fold each item of array arr (absent: nothing). */
static kevo_status sf_fold_items(cJSON *arr, const kevo_syms *syms, kevo_err *err)
{
    bool c;
    int64_t v;
    kevo_status st = KEVO_OK;
    cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if ((st = sf_fold_item(it, syms, &c, &v, err)))
            break;
    }
    return st;
}

/* The params' values into syms: each param's one value. */
static kevo_status sf_params(const cJSON *root, kevo_syms *syms, kevo_err *err)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "params"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        const cJSON *vals = cJSON_GetObjectItemCaseSensitive(p, "values");
        const cJSON *v = cJSON_IsArray(vals) && cJSON_GetArraySize(vals) == 1 ? cJSON_GetArrayItem(vals, 0) : NULL;
        int64_t x;
        if (!cJSON_IsString(name) || !sf_int(v, &x))
            return kevo_err_set(err, KEVO_ERR_ARG, "not a one-point space: a param without one integer");
        kevo_status st = kevo_syms_set(syms, name->valuestring, x);
        if (st)
            return kevo_err_set(err, st, "param '%s' cannot be bound", name->valuestring);
    }
    return KEVO_OK;
}

/* The lets in order, each folded at the params and the lets before it that
 * folded to numbers (which are bound in turn). */
static kevo_status sf_lets(cJSON *root, kevo_syms *syms, kevo_err *err)
{
    cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(root, "let"))
    {
        const cJSON *name = cJSON_GetArrayItem(l, 0);
        bool c;
        int64_t v;
        kevo_status st = sf_fold_item(cJSON_GetArrayItem(l, 1), syms, &c, &v, err);
        if (!st && c && cJSON_IsString(name))
            st = kevo_syms_set(syms, name->valuestring, v);
        if (st)
            return st;
    }
    return KEVO_OK;
}

/* Each launch's when, grid, block and smem; a launch that never runs at
 * these params is left out, and a when that always holds. */
static kevo_status sf_launches(cJSON *root, const kevo_syms *syms, kevo_err *err)
{
    cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "launches");
    kevo_status st = KEVO_OK;
    for (cJSON *l = ls ? ls->child : NULL, *next; l && !st; l = next) {
        next = l->next;
        bool c;
        int64_t v;
        cJSON *when = cJSON_GetObjectItemCaseSensitive(l, "when");
        if (when && (st = sf_fold_item(when, syms, &c, &v, err)))
            break;
        if (when && c && v == 0 && cJSON_GetArraySize(ls) > 1) {
            cJSON_Delete(cJSON_DetachItemViaPointer(ls, l));
            continue;
        }
        if (when && c && v != 0)
            cJSON_DeleteItemFromObjectCaseSensitive(l, "when");
        if (!(st = sf_fold_items(cJSON_GetObjectItemCaseSensitive(l, "grid"), syms, err)) &&
            !(st = sf_fold_items(cJSON_GetObjectItemCaseSensitive(l, "block"), syms, err))) {
            cJSON *smem = cJSON_GetObjectItemCaseSensitive(l, "smem");
            st = smem ? sf_fold_item(smem, syms, &c, &v, err) : KEVO_OK;
        }
    }
    return st;
}

kevo_status kevo_space_point_fold(const char *json, kv_buf *out, kevo_err *err)
{
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return kevo_err_set(err, KEVO_ERR_PARSE, "a one-point space must be a JSON object");
    }
    kevo_syms syms;
    kevo_syms_init(&syms);
    bool c;
    int64_t v;
    kevo_status st = sf_params(root, &syms, err);
    if (!st)
        st = sf_lets(root, &syms, err);
    static const char *const one[] = {"workspace", "pad_k"};
    for (size_t i = 0; !st && i < KV_ARRAY_LEN(one); i++) {
        cJSON *it = cJSON_GetObjectItemCaseSensitive(root, one[i]);
        st = it ? sf_fold_item(it, &syms, &c, &v, err) : KEVO_OK;
    }
    cJSON *t, *tmaps = st ? NULL : cJSON_GetObjectItemCaseSensitive(root, "tmaps");
    cJSON_ArrayForEach(t, tmaps)
    {
        cJSON *sw = cJSON_GetObjectItemCaseSensitive(t, "swizzle");
        if ((st = sf_fold_items(cJSON_GetObjectItemCaseSensitive(t, "box"), &syms, err)) ||
            (sw && (st = sf_fold_item(sw, &syms, &c, &v, err))))
            break;
    }
    if (!st)
        st = sf_launches(root, &syms, err);
    char *text = st ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!st && !text)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st && (st = kv_buf_puts(out, text)))
        kevo_err_set(err, st, "out of memory");
    free(text);
    return st;
}
