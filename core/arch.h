/* arch.h — the one table of GPU architectures kevo knows: for each, the
 * device limits that space files see (SMs, shared memory, registers), the
 * data-center part's rates (datasheet peak TFLOP/s per storage dtype, DRAM
 * bandwidth; the cost model's measured GEMM, copy and L2 rates) and the
 * features a kernel may need (mma.sync, cp.async, TMA, WGMMA, setmaxnreg,
 * tcgen05).  templates/ (limits, a space file's "needs"), search/model.c
 * (rates) and llm/prompt.c (the ridge point) read it; nothing else keeps
 * arch facts. */
#ifndef KEVO_ARCH_H
#define KEVO_ARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "kevo.h"
#include "core/op.h"

/* Device limits that expressions see (a compile-only run takes the arch's
 * table values; a GPU run reads the device). */
typedef struct kevo_limits {
    int sm;            /* 90 for sm_90a */
    int num_sms;       /* 132 on H100 SXM / H200 */
    int max_smem;      /* opt-in dynamic shared memory per block, bytes */
    int max_regs;      /* per thread */
} kevo_limits;

/* What an arch's instructions offer a kernel (bits of kevo_arch.features). */
typedef enum kevo_arch_feature {
    KEVO_FEAT_MMA_SYNC = 1u << 0,   /* warp-level mma.sync (sm_80+) */
    KEVO_FEAT_CP_ASYNC = 1u << 1,   /* cp.async global -> shared copies (sm_80+) */
    KEVO_FEAT_TMA = 1u << 2,        /* cp.async.bulk.tensor, the tensor memory accelerator (sm_90+) */
    KEVO_FEAT_WGMMA = 1u << 3,      /* warpgroup wgmma.mma_async (sm_90a only) */
    KEVO_FEAT_SETMAXNREG = 1u << 4, /* setmaxnreg register reallocation (sm_90a, sm_100a) */
    KEVO_FEAT_TCGEN05 = 1u << 5,    /* 5th-generation tensor core, tcgen05.mma (sm_100a) */
} kevo_arch_feature;

#define KEVO_ARCH_FEATURES 6 /* bits above */

/* One row of the table.  Rates are 0 where kevo has no figure. */
typedef struct kevo_arch {
    const char *name;      /* "sm_90a": the NVRTC -arch name */
    kevo_limits lim;       /* limits of the data-center part (A100, H100 SXM, B200) */
    unsigned features;     /* kevo_arch_feature bits */
    /* datasheet, dense tensor-core peak per storage dtype (kevo_dtype index) */
    double peak_tflops[2];
    double dram_tbps_lo, dram_tbps_hi; /* datasheet DRAM bandwidth of the arch's data-center parts */
    /* the cost model's rates (search/model.h), as measured: a large cuBLAS
     * GEMM (FLOP/s), a large copy and L2 -> SM (bytes/s) */
    double gemm_flops, copy_bw, l2_bw;
} kevo_arch;

/* The row named name ("sm_90a"), or NULL. */
const kevo_arch *kevo_arch_find(const char *name);

/* The row for a device (or arch) of compute capability sm (x10): the row of
 * that sm, else the nearest one below it, else the lowest; never NULL. */
const kevo_arch *kevo_arch_for_sm(int sm);

/* Row i of the table (i < kevo_arch_count()), in table order. */
const kevo_arch *kevo_arch_at(int i);
int kevo_arch_count(void);

/* The feature named name ("mma.sync", "cp.async", "tma", "wgmma",
 * "setmaxnreg", "tcgen05", lower case), or 0 when unknown. */
unsigned kevo_arch_feature_parse(const char *name);

/* The dense fp16 ridge point (FLOP per byte of DRAM) of the arch's
 * data-center parts, rounded, as a range [*lo, *hi]: datasheet peak over
 * the fastest and the slowest DRAM.  False when the table has no figures. */
bool kevo_arch_ridge(const kevo_arch *a, double *lo, double *hi);

/* Limits from the arch name ("sm_90a"); Errors: KEVO_ERR_NOT_FOUND. */
kevo_status kevo_limits_for_arch(const char *arch, kevo_limits *out, kevo_err *err);

#define KEVO_ARCH_LIST_MAX 8 /* names in an arch list (the table has 6, none may repeat) */

/* A comma list of architectures ("sm_80,sm_90a,sm_100a") into
 * names[0..*n), in the order given: each a name kevo_limits_for_arch knows,
 * none empty, none twice; at most max (<= KEVO_ARCH_LIST_MAX).  Errors:
 * KEVO_ERR_ARG naming the item (an unknown one with the known names). */
kevo_status kevo_arch_list_parse(const char *list, char (*names)[16], int max, int *n, kevo_err *err);

/* Whether code built for an arch of these limits (lim->sm: the compute
 * capability times ten) may be loaded on a device of compute capability
 * major.minor: only on exactly its architecture (sm_90 and sm_90a need
 * 9.0, sm_80 8.0, sm_86 8.6, sm_89 8.9, sm_100a 10.0), never on a newer
 * one of the same family. */
bool kevo_arch_runs_on(const kevo_limits *lim, int cc_major, int cc_minor);

/* The arch names for a device of compute capability major.minor, ", "
 * between them ("sm_90, sm_90a"), into out[n]; "" when kevo knows none. */
void kevo_arch_names_for(int cc_major, int cc_minor, char *out, size_t n);

#endif /* KEVO_ARCH_H */
