/* model.c — the cost model's formula (see model.h). */
#include "search/model.h"

#include <math.h>
#include <stdio.h>

/* A measured rate v on the half-octave grid through the table's rate t:
 * t * 2^(round(2 log2(v / t)) / 2).  A device within 19% of its arch's table
 * (an H100 or H200 whose cuBLAS peak measures 720 to 830 TFLOP/s from run to
 * run, a copy rate of 2.6 to 3.0 TB/s) gets the table's rate, so that runs on
 * one device, or on one GPU and on two, rank configurations alike; one far
 * from it (an H200's 4.2 TB/s: 3.0 * 1.41) gets its own rate within 19%.
 * A rate that is not finite and positive gives t. */
static double md_snap(double v, double t)
{
    if (!isfinite(v) || !(v > 0))
        return t;
    return t * exp2(round(2.0 * log2(v / t)) / 2.0);
}

void kevo_model_device_init(kevo_model_device *d, const kevo_limits *lim, double peak_tflops, double copy_tbps)
{
    /* the arch's table values (core/arch.c) */
    const kevo_arch *a = kevo_arch_for_sm(lim->sm);
    double peak = a->gemm_flops, bw = a->copy_bw, l2 = a->l2_bw;
    peak = md_snap(peak_tflops * 1e12, peak);
    bw = md_snap(copy_tbps * 1e12, bw);
    if (l2 < 2.5 * bw)
        l2 = 2.5 * bw;
    d->peak_flops = peak;
    d->dram_bw = bw;
    d->l2_bw = l2;
    d->latency_s = 1.0e-6;
    d->launch_s = 3.0e-6;
}

bool kevo_model_has(const kevo_space *s)
{
    return s->model[KEVO_MODEL_FLOPS] != NULL;
}

kevo_status kevo_model_predict(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                               const kevo_config *cfg, const kevo_model_device *d, double *seconds, kevo_err *err)
{
    *seconds = NAN;
    if (!kevo_model_has(s))
        return KEVO_OK;
    kevo_syms b;
    kevo_status st = kevo_space_bind(s, shape, lim, dt, cfg, &b, err);
    if (st)
        return st;
    /* the rates, for terms that compare times of their own (GFLOP/s, GB/s) */
    if (kevo_syms_set(&b, "peak_gflops", llround(d->peak_flops / 1e9)) ||
        kevo_syms_set(&b, "dram_gbs", llround(d->dram_bw / 1e9)) ||
        kevo_syms_set(&b, "l2_gbs", llround(d->l2_bw / 1e9)))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols binding '%s'", s->family);
    /* the model's own lets, which may read the rates */
    for (int i = 0; i < s->nmodel_lets; i++) {
        int64_t x;
        if ((st = kevo_expr_eval(s->model_lets[i].expr, &b, &x, err))) {
            kevo_err_prefix(err, "%s: model.let %s", s->family, s->model_lets[i].name);
            return KEVO_ERR_ARG;
        }
        if (kevo_syms_set(&b, s->model_lets[i].name, x))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "too many symbols binding '%s'", s->family);
    }
    /* defaults of the optional terms */
    double v[KEVO_MODEL__COUNT] = {[KEVO_MODEL_MMA_EFF] = 700, [KEVO_MODEL_LOAD_EFF] = 1000, [KEVO_MODEL_LAUNCHES] = 1};
    v[KEVO_MODEL_L2_BYTES] = NAN;
    for (int k = 0; k < KEVO_MODEL__COUNT; k++) {
        if (!s->model[k])
            continue;
        int64_t x;
        if ((st = kevo_expr_eval(s->model[k], &b, &x, err))) {
            kevo_err_prefix(err, "%s: model.%s", s->family, kevo_model_term_names[k]);
            return KEVO_ERR_ARG;
        }
        v[k] = (double)x;
    }
    if (isnan(v[KEVO_MODEL_L2_BYTES]))
        v[KEVO_MODEL_L2_BYTES] = v[KEVO_MODEL_DRAM_BYTES];
    double items = v[KEVO_MODEL_ITEMS], slots = v[KEVO_MODEL_SLOTS];
    if (!(items >= 1) || !(slots >= 1) || !(v[KEVO_MODEL_MMA_EFF] > 0) || !(v[KEVO_MODEL_LOAD_EFF] > 0))
        return kevo_err_set(err, KEVO_ERR_ARG, "%s: model items, slots, mma_eff and load_eff must be positive",
                            s->family);
    if (!(v[KEVO_MODEL_LAT_NORM] >= 0 && v[KEVO_MODEL_LAT_NORM] <= 8))
        return kevo_err_set(err, KEVO_ERR_ARG, "%s: model lat_norm must be 0 (the max) to 8", s->family);
    double waves = ceil(items / slots);
    double util = items / (slots * waves);
    double t_mma = v[KEVO_MODEL_FLOPS] / (d->peak_flops * v[KEVO_MODEL_MMA_EFF] / 1000.0) / util;
    double t_dram = v[KEVO_MODEL_DRAM_BYTES] / d->dram_bw;
    double t_l2 = v[KEVO_MODEL_L2_BYTES] / (d->l2_bw * v[KEVO_MODEL_LOAD_EFF] / 1000.0);
    double running = items < slots ? items : slots;
    double t_lat = v[KEVO_MODEL_INFLIGHT] > 0
                       ? v[KEVO_MODEL_L2_BYTES] * d->latency_s / (running * v[KEVO_MODEL_INFLIGHT])
                       : 0.0;
    /* the MMAs and the wait for loads in flight: the larger of the two (the ring
     * hides all latency once t_lat < t_mma), or where the family's ring hides
     * it only in part, their lat_norm-norm (lce_ws: 2, docs/model.md v9) */
    const double p = v[KEVO_MODEL_LAT_NORM];
    double t = p > 0 ? pow(pow(t_mma, p) + pow(t_lat, p), 1.0 / p) : fmax(t_mma, t_lat);
    /* each wave's items add what they do not overlap: with the core's time
     * item_ns, with the memory traffic's item_mem_ns (absent: the same) */
    const double mem_ns = s->model[KEVO_MODEL_ITEM_MEM_NS] ? v[KEVO_MODEL_ITEM_MEM_NS] : v[KEVO_MODEL_ITEM_NS];
    t += waves * v[KEVO_MODEL_ITEM_NS] * 1e-9;
    const double t_mem = fmax(t_dram, t_l2) + waves * mem_ns * 1e-9;
    if (t_mem > t)
        t = t_mem;
    t += v[KEVO_MODEL_LAUNCHES] * d->launch_s;
    /* a tie (the L2 term not binding for either) goes to the configuration that loads
     * fewer bytes into the SMs: lce_ws's clusters tie with their cluster-less twins at
     * the default shape and measure up to 25% faster */
    t += KEVO_MODEL_L2_TIE * t_l2;
    *seconds = t;
    return KEVO_OK;
}
