/* arch.c — the table of GPU architectures (see arch.h). */
#include "core/arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

enum {
    AR_SM80 = KEVO_FEAT_MMA_SYNC | KEVO_FEAT_CP_ASYNC,
    AR_SM90 = AR_SM80 | KEVO_FEAT_TMA,
    AR_SM90A = AR_SM90 | KEVO_FEAT_WGMMA | KEVO_FEAT_SETMAXNREG,
    AR_SM100A = AR_SM90 | KEVO_FEAT_SETMAXNREG | KEVO_FEAT_TCGEN05,
};

/* Limits are the data-center parts' (A100, H100 SXM, B200; sm_86 and
 * sm_89: the largest consumer parts' SM counts), for runs that have no
 * device to ask (compile-only).  Datasheet rates: A100 312 TFLOP/s at
 * 1.55-2.0 TB/s, H100 SXM and H200 989 TFLOP/s at 3.35-4.8 TB/s, B200
 * ~2250 TFLOP/s at 8 TB/s; sm_86 and sm_89 have none here (the prompt
 * names no ridge for them).  The model's rates are an A100, an H100 SXM and
 * a B200 measured with cuBLAS and a large copy, the L2 rate at least 2.5
 * times the copy rate; sm_86 and sm_89 take the A100's, as the model always
 * has for every arch below sm_90. */
static const kevo_arch ar_table[] = {
    {"sm_80", {80, 108, 166912, 255}, AR_SM80, {312, 312}, 1.55, 2.0, 280e12, 1.7e12, 5.0e12},
    {"sm_86", {86, 84, 101376, 255}, AR_SM80, {0, 0}, 0, 0, 280e12, 1.7e12, 5.0e12},
    {"sm_89", {89, 128, 101376, 255}, AR_SM80, {0, 0}, 0, 0, 280e12, 1.7e12, 5.0e12},
    {"sm_90", {90, 132, 232448, 255}, AR_SM90, {989, 989}, 3.35, 4.8, 760e12, 3.0e12, 10e12},
    {"sm_90a", {90, 132, 232448, 255}, AR_SM90A, {989, 989}, 3.35, 4.8, 760e12, 3.0e12, 10e12},
    {"sm_100a", {100, 148, 232448, 255}, AR_SM100A, {2250, 2250}, 8.0, 8.0, 1800e12, 6.5e12, 20e12},
};

static const char *const ar_feature_names[KEVO_ARCH_FEATURES] = {"mma.sync", "cp.async", "tma",
                                                                  "wgmma",    "setmaxnreg", "tcgen05"};

const kevo_arch *kevo_arch_find(const char *name)
{
    for (size_t i = 0; name && i < KV_ARRAY_LEN(ar_table); i++)
        if (strcmp(ar_table[i].name, name) == 0)
            return &ar_table[i];
    return NULL;
}

const kevo_arch *kevo_arch_for_sm(int sm)
{
    const kevo_arch *below = NULL;
    for (size_t i = 0; i < KV_ARRAY_LEN(ar_table); i++) {
        if (ar_table[i].lim.sm == sm)
            return &ar_table[i];
        if (ar_table[i].lim.sm < sm && (!below || ar_table[i].lim.sm > below->lim.sm))
            below = &ar_table[i];
    }
    return below ? below : &ar_table[0];
}

const kevo_arch *kevo_arch_at(int i)
{
    return i >= 0 && (size_t)i < KV_ARRAY_LEN(ar_table) ? &ar_table[i] : NULL;
}

int kevo_arch_count(void)
{
    return (int)KV_ARRAY_LEN(ar_table);
}

unsigned kevo_arch_feature_parse(const char *name)
{
    for (int i = 0; name && i < KEVO_ARCH_FEATURES; i++)
        if (strcmp(ar_feature_names[i], name) == 0)
            return 1u << i;
    return 0;
}

bool kevo_arch_ridge(const kevo_arch *a, double *lo, double *hi)
{
    if (!a || !(a->peak_tflops[KEVO_DTYPE_F16] > 0) || !(a->dram_tbps_lo > 0) || !(a->dram_tbps_hi > 0))
        return false;
    *lo = round(a->peak_tflops[KEVO_DTYPE_F16] / a->dram_tbps_hi);
    *hi = round(a->peak_tflops[KEVO_DTYPE_F16] / a->dram_tbps_lo);
    return true;
}

/* Every arch name of the table, ", " between them, into names. */
static void ar_known(kv_buf *names)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(ar_table); i++)
        kv_buf_printf(names, "%s%s", i ? ", " : "", ar_table[i].name);
}

kevo_status kevo_limits_for_arch(const char *arch, kevo_limits *out, kevo_err *err)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(ar_table); i++) {
        if (strcmp(ar_table[i].name, arch) == 0) {
            *out = ar_table[i].lim;
            return KEVO_OK;
        }
    }
    kv_buf names;
    kv_buf_init(&names);
    ar_known(&names);
    kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown arch '%s' (known: %s)", arch, names.data ? names.data : "");
    kv_buf_release(&names);
    return KEVO_ERR_NOT_FOUND;
}

kevo_status kevo_arch_list_parse(const char *list, char (*names)[16], int max, int *n, kevo_err *err)
{
    *n = 0;
    if (max > KEVO_ARCH_LIST_MAX)
        max = KEVO_ARCH_LIST_MAX;
    if (!list || !*list)
        return kevo_err_set(err, KEVO_ERR_ARG, "--arch: no architecture named");
    size_t len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        if (len == 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--arch '%.100s': an empty item (one name between commas)", list);
        char name[16] = "";
        if (len < sizeof name)
            memcpy(name, item, len);
        kevo_limits lim;
        if (!name[0] || kevo_limits_for_arch(name, &lim, NULL)) {
            kv_buf known;
            kv_buf_init(&known);
            ar_known(&known);
            kevo_err_set(err, KEVO_ERR_ARG, "--arch: unknown arch '%.*s' (known: %s)", (int)(len < 40 ? len : 40), item,
                         known.data ? known.data : "");
            kv_buf_release(&known);
            return KEVO_ERR_ARG;
        }
        for (int i = 0; i < *n; i++)
            if (strcmp(names[i], name) == 0)
                return kevo_err_set(err, KEVO_ERR_ARG, "--arch '%.100s': %s is named twice", list, name);
        if (*n >= max)
            return kevo_err_set(err, KEVO_ERR_ARG, "--arch '%.100s': more than %d architectures", list, max);
        snprintf(names[(*n)++], 16, "%s", name);
    }
    return KEVO_OK;
}

bool kevo_arch_runs_on(const kevo_limits *lim, int cc_major, int cc_minor)
{
    return cc_major > 0 && cc_minor >= 0 && cc_minor <= 9 && cc_major * 10 + cc_minor == lim->sm;
}

void kevo_arch_names_for(int cc_major, int cc_minor, char *out, size_t n)
{
    size_t used = 0;
    if (n)
        out[0] = '\0';
    for (size_t i = 0; i < KV_ARRAY_LEN(ar_table); i++)
        if (kevo_arch_runs_on(&ar_table[i].lim, cc_major, cc_minor) && used < n) {
            int w = snprintf(out + used, n - used, "%s%s", used ? ", " : "", ar_table[i].name);
            used = w < 0 ? n : used + (size_t)w;
        }
}

