/* model.h — the cost model: a prediction of a configuration's time at a
 * shape, before anything compiles.  It ranks each family's valid set (the
 * seeds, the exhaustive order, the other policies' prior) and is checked
 * against measured landscapes (`kevo replay --model`: Spearman's rank
 * correlation).
 *
 * Each family's space file gives the inputs as integer expressions over the
 * shape, params, lets and device limits (its "model" object, terms in
 * templates/space.h); this module turns them into a time with the device's
 * rates.  A roofline with the effects a tile size has on it (after the
 * usual analytical GPU models: Williams et al. 2009 for the roofline, Volkov
 * 2016 for latency hiding by bytes in flight):
 *
 *   util     = items / (slots * ceil(items / slots))      wave quantization
 *   t_mma    = flops / (peak * mma_eff/1000) / util       tensor cores busy
 *   t_dram   = dram_bytes / dram_bw                       device memory
 *   t_l2     = l2_bytes / (l2_bw * load_eff/1000)         L2 to SMs
 *   t_lat    = l2_bytes * latency / (min(items, slots) * inflight)
 *                                                         too few bytes in flight
 *   t_core   = max(t_mma, t_lat), or with lat_norm = p > 0
 *              (t_mma^p + t_lat^p)^(1/p): a ring that hides the loads'
 *              latency only in part (lce_ws, p = 2: its measured 2, 3 and 4
 *              stages, where a max credited a fourth stage nothing;
 *              docs/model.md v9)
 *   t        = max(t_core + waves * item_ns, max(t_dram, t_l2) + waves * item_mem_ns)
 *              + launches * launch                waves = ceil(items / slots)
 *              + KEVO_MODEL_L2_TIE * t_l2         ties: fewer L2 bytes first
 *              (item_mem_ns absent: item_ns, i.e. max(t_core, t_dram, t_l2) plus
 *              the waves' item_ns; lce_ws sets it, docs/model.md v13)
 *
 * The terms see the device's rates besides the shape, params, lets and
 * limits (lets do not: they are bound without a device): peak_gflops (the
 * dense tensor peak, GFLOP/s), dram_gbs and l2_gbs (GB/s), so that a term
 * can compare times of its own (a phase's MMA time with its DRAM time).
 */
#ifndef KEVO_MODEL_H
#define KEVO_MODEL_H

#include "kevo.h"
#include "templates/space.h"

/* The weight of the L2 time added to every prediction, so that two
 * configurations the terms above tie (the L2 term binding for neither)
 * rank by the bytes they load into the SMs; small enough to reorder only
 * predictions within 0.01% of each other. */
#define KEVO_MODEL_L2_TIE 1e-4

/* The device's rates the model uses. */
typedef struct kevo_model_device {
    double peak_flops; /* dense fp16/bf16 tensor-core FLOP/s (a large cuBLAS GEMM's rate) */
    double dram_bw;    /* device-memory bytes/s, read + written */
    double l2_bw;      /* L2 -> SM bytes/s */
    double latency_s;  /* a load's round trip, s */
    double launch_s;   /* one kernel launch, s */
} kevo_model_device;

/* Rates for an arch (limits from kevo_limits_for_arch or the device): the
 * arch's table values, each moved to the run's measured GEMM peak (TFLOP/s)
 * or copy bandwidth (TB/s) by whole half-octaves (x1.41) where that is
 * finite and positive and 19% or more away from the table.  Measurements of
 * one device part by a few percent from run to run (an H100's peak by 15%);
 * rounding them to two significant digits still parted rankings (791 and
 * 799 TFLOP/s: 790 and 800, another lce_mma seed), the coarse grid keeps
 * every run on one device, and every GPU of one model, on one set of rates. */
void kevo_model_device_init(kevo_model_device *d, const kevo_limits *lim, double peak_tflops, double copy_tbps);

/* Whether the family has a model. */
bool kevo_model_has(const kevo_space *s);

/* Predicted seconds of cfg at shape into *seconds (NaN when the family has
 * no model).  Errors: KEVO_ERR_ARG when a term cannot be evaluated (the
 * message names it). */
kevo_status kevo_model_predict(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim, kevo_dtype dt,
                               const kevo_config *cfg, const kevo_model_device *d, double *seconds, kevo_err *err);

#endif /* KEVO_MODEL_H */
