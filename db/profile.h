/* profile.h — the few profiler figures a kernel engineer reads first, for a
 * candidate's kernels: tensor-pipe utilization, achieved DRAM and L2
 * bandwidth, occupancy, and the top warp-stall reasons.  They come from
 * Nsight Compute's CSV (`ncu --csv --metrics ...`, parsed here), are stored
 * as the candidate's measurements ("ncu.*", no schema change) and shown in
 * a generator's prompt.  Without counters the prompt keeps the derived figures
 * (TFLOP/s against the roofline, registers, spills). */
#ifndef KEVO_PROFILE_H
#define KEVO_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "db/store.h"
#include "kevo.h"
#include "util/util.h"

#define KEVO_PROFILE_STALLS 3       /* stall reasons kept, the largest first */
#define KEVO_PROFILE_CSV_MAX (16 << 20)

/* The metrics kevo asks ncu for (a comma list for --metrics). */
#define KEVO_PROFILE_NCU_METRICS                                                                                  \
    "gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"              \
    "dram__bytes.sum.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,"  \
    "sm__warps_active.avg.pct_of_peak_sustained_active,"                                                          \
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,"                                   \
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,"                                           \
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,"                                              \
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,"                                \
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,"                                      \
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,"                                  \
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,"                                       \
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,"                                      \
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio"

/* One kernel's figures; NaN for what was not measured. */
typedef struct kevo_profile {
    char kernel[96];        /* the kernel the figures are of (the longest of the launches profiled) */
    double time_us;         /* its duration, microseconds */
    double tensor_pct;      /* tensor pipe active, % of peak */
    double dram_gbs;        /* achieved DRAM bandwidth, GB/s */
    double dram_pct;        /* DRAM throughput, % of peak */
    double l2_gbs;          /* achieved L2 bandwidth, GB/s */
    double occupancy_pct;   /* achieved occupancy: active warps, % of the SM's maximum */
    int nstalls;
    char stall[KEVO_PROFILE_STALLS][48];  /* reason ("long_scoreboard", ...) */
    double stall_pct[KEVO_PROFILE_STALLS]; /* its share of all stalls measured, % */
} kevo_profile;

/* Empty: every figure NaN, no stalls. */
void kevo_profile_init(kevo_profile *p);

/* Parse ncu's CSV (`--csv`, one row per metric: "ID", ..., "Kernel Name",
 * ..., "Metric Name", "Metric Unit", "Metric Value"; values may hold
 * thousands separators) into *out: the figures of the launch that ran
 * longest (gpu__time_duration.sum; the first launch without it).
 * Bandwidths in any of byte, Kbyte, Mbyte, Gbyte or Tbyte per second.
 * Errors: KEVO_ERR_PARSE (no header with those columns, no metric row, a
 * text over KEVO_PROFILE_CSV_MAX), naming what is missing. */
kevo_status kevo_profile_parse_ncu_csv(const char *csv, kevo_profile *out, kevo_err *err);

/* One line of the figures measured ("tensor pipe 61% of peak, DRAM 1850
 * GB/s (55% of peak), ..."); nothing for an empty profile. */
void kevo_profile_line(const kevo_profile *p, kv_buf *b);

/* Store p as candidate cand_id's measurements ("ncu.tensor_pct", ...,
 * "ncu.stall.<reason>"), replacing earlier ones.  Errors: the DB's. */
kevo_status kevo_profile_store(kevo_db *db, int64_t cand_id, const kevo_profile *p, kevo_err *err);

/* A candidate's stored profile (*have false when none).  Errors: the DB's. */
kevo_status kevo_profile_load(kevo_db *db, int64_t cand_id, kevo_profile *p, bool *have, kevo_err *err);

#endif /* KEVO_PROFILE_H */
