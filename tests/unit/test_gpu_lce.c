/* test_gpu_lce.c — GPU check (ctest label gpu; exits 77 without a GPU):
 * every stage of the lce_mma family (decomposed / K-aligned / fused, both
 * epilogues, both BK, fp16 and bf16) and the lce_wgmma family (TMA + WGMMA,
 * one or two consumers, every BN) and the lce_ws family (persistent, fused
 * or two launches, ping-pong or cooperative, clusters, both epilogues,
 * user_res in fp32 or the storage dtype, every BN from 64 to 256 in steps
 * of 32, one to four consumer warp groups, BK 64 and 128, tiles of out's
 * transpose with M in steps of 8, two or four staging buffers, the last
 * wave's tiles split along K)
 * passes the worker's verification on shapes that are not multiples of any
 * tile, and a planted defect (a
 * decomposed plan missing its broadcast-add launch) is caught as a wrong
 * result.  The same-run peers: stage 0 and the two cuBLASLt forms
 * (decomposed, beta = 1; K padded) agree with the reference at the default
 * shape and at one with K % 8 != 0, say what ran and how to run it again,
 * and a spoiled beta = 1 peer (KEVO_FAULT_INJECT=peer:beta1) is FAILED and
 * never the best. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/compile.h"
#include "evaluator/cudrv.h"
#include "evaluator/gpu.h"
#include "kernels/ikbo_lce/abi.h"
#include "core/op.h"
#include "core/verdict.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/stats.h"
#include "util/util.h"

static char *abi_text;
static kevo_space *mma, *wgmma, *ws;
static kevo_space *mem; /* templates/lce_mem.json */

/* ---- 2 and 3. the template family through the worker ---- */

/* Render, plan and compile one configuration at shape (asserting it is valid). */
static void prep_config(const kevo_space *sp, kevo_dtype dt, const kevo_syms *shape, const char *params,
                        kevo_compile_job *job, kevo_plan *plan)
{
    kevo_err err;
    kevo_limits lim;
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    kevo_config cfg;
    assert_true(tu_config_of(sp, params, &cfg)); /* "BM=64,BN=64,..." */
    char why[256];
    int ok = kevo_space_check(sp, shape, &lim, dt, &cfg, why, sizeof why);
    if (ok != 1)
        fprintf(stderr, "config %s rejected: %s\n", params, why);
    assert_int_equal(ok, 1);
    kv_buf src;
    kv_buf_init(&src);
    assert_int_equal(kevo_space_render(sp, &cfg, dt, abi_text, &src, &err), KEVO_OK);
    assert_int_equal(kevo_space_plan(sp, shape, &lim, dt, &cfg, plan, &err), KEVO_OK);
    tu_compile(job, sp->source_name, src.data);
    kv_buf_release(&src);
}

/* The re-timing tests' lce_mma configurations at B=256: a fast one, and
 * one several times slower (natural K read with 4-byte copies, decomposed). */
#define RT_FAST "BM=128,BN=128,BK=32,WARPS_M=2,WARPS_N=2,STAGES=4,ALIGN=1,FUSE=1,EPI=1,RASTER=0"
#define RT_SLOW "BM=64,BN=64,BK=32,WARPS_M=2,WARPS_N=2,STAGES=2,ALIGN=0,FUSE=0,EPI=0,RASTER=0"

/* n lce_mma configurations at shape (fp16) compiled into jobs, and each one's
 * timed request into reqs (for the re-timing tests). */
static void prep_timed(const kevo_syms *shape, const char *const *cfgs, int n, kevo_compile_job *jobs,
                       kevo_gpu_request *reqs)
{
    for (int i = 0; i < n; i++) {
        memset(&reqs[i], 0, sizeof reqs[i]);
        prep_config(mma, KEVO_DTYPE_F16, shape, cfgs[i], &jobs[i], &reqs[i].plan);
        reqs[i].cubin = jobs[i].cubin;
        reqs[i].cubin_size = jobs[i].cubin_size;
        reqs[i].time = true;
    }
}

/* A worker for shape and dtype with the reference module ref (no peers). */
static kevo_gpu *start_worker(const kevo_syms *shape, kevo_dtype dt, const kevo_compile_job *ref, int warmup,
                              int reps, double timeout, uint64_t seed)
{
    kevo_gpu_config gc;
    memset(&gc, 0, sizeof gc);
    gc.op = kevo_op_find("ikbo_lce");
    gc.shape = *shape;
    gc.dtype = dt;
    gc.warmup = warmup;
    gc.reps = reps;
    gc.timeout_s = timeout;
    gc.seed = seed;
    gc.ref_cubin = ref->cubin;
    gc.ref_cubin_size = ref->cubin_size;
    kevo_gpu *g = NULL;
    kevo_err err;
    kevo_status st = kevo_gpu_start(&gc, &g, NULL, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    return g;
}

/* Evaluate one configuration at shape; flip_pad plants the layout defect. */
static kevo_gpu_result run_config(const kevo_space *sp, kevo_dtype dt, const char *shape_txt, const char *params,
                                   bool drop_last_launch)
{
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_syms shape;
    assert_int_equal(op->parse_shape(shape_txt, &shape, &err), KEVO_OK);
    kevo_plan plan;
    kevo_compile_job job;
    prep_config(sp, dt, &shape, params, &job, &plan);
    if (drop_last_launch)
        plan.nlaunches--; /* the planted defect */

    char *rs = tu_ref_source(dt, abi_text);
    kevo_compile_job rj;
    tu_compile(&rj, "ikbo_lce_ref.cu", rs);
    kevo_gpu *g = start_worker(&shape, dt, &rj, 1, 3, 30 /* a hung persistent kernel fails in 30 s */, 99);
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    rq.cubin = job.cubin;
    rq.cubin_size = job.cubin_size;
    rq.plan = plan;
    rq.maps = 7;
    rq.time = true;
    rq.seed = 1234;
    kevo_gpu_result res;
    assert_int_equal(kevo_gpu_eval(g, &rq, &res, &err), KEVO_OK);
    printf("  %-9s %-5s %-34s %-64s %s rel %.2e %s\n", sp->family, kevo_dtype_name(dt), shape_txt, params,
           res.fail ? kevo_fail_name(res.fail) : "ok", res.rel_err, res.fail ? res.msg : "");
    kevo_gpu_stop(g);
    kevo_compile_job_release(&rj);
    kevo_compile_job_release(&job);
    free(rs);
    return res;
}

static const char *const odd_shapes[] = {
    "B=5,M=85,N=264,Ku=45,Kc=29,U=2",    /* odd K: element loads for ALIGN=0; M and N tails */
    "B=9,M=133,N=200,Ku=130,Kc=66,U=4",  /* even K: 4-byte loads for ALIGN=0; M and N tails */
};

static const char *const stages[] = {
    /* stage 1: decomposed, natural K */
    "BM=64,BN=64,BK=32,WARPS_M=2,WARPS_N=2,STAGES=2,ALIGN=0,FUSE=0,EPI=0,RASTER=0",
    /* stage 2: K aligned */
    "BM=64,BN=128,BK=32,WARPS_M=2,WARPS_N=2,STAGES=3,ALIGN=1,FUSE=0,EPI=0,RASTER=1",
    /* stage 3: fused epilogue, staged stores, deep ring */
    "BM=128,BN=128,BK=64,WARPS_M=2,WARPS_N=2,STAGES=4,ALIGN=1,FUSE=1,EPI=1,RASTER=0",
    /* fused, direct stores, 112-row tiles, 8 warps */
    "BM=112,BN=256,BK=32,WARPS_M=1,WARPS_N=8,STAGES=4,ALIGN=1,FUSE=1,EPI=0,RASTER=0",
    /* fused on the natural layout */
    "BM=64,BN=128,BK=64,WARPS_M=1,WARPS_N=4,STAGES=3,ALIGN=0,FUSE=1,EPI=1,RASTER=1",
};

static void test_family_fp16(void **state)
{
    (void)state;
    for (size_t s = 0; s < KV_ARRAY_LEN(odd_shapes); s++)
        for (size_t i = 0; i < KV_ARRAY_LEN(stages); i++) {
            kevo_gpu_result r = run_config(mma, KEVO_DTYPE_F16, odd_shapes[s], stages[i], false);
            assert_int_equal(r.fail, KEVO_FAIL_NONE);
            assert_int_equal(r.checks, 3);
            assert_true(r.median_ms > 0);
        }
}

static void test_family_bf16(void **state)
{
    (void)state;
    for (size_t i = 0; i < KV_ARRAY_LEN(stages); i++) {
        kevo_gpu_result r = run_config(mma, KEVO_DTYPE_BF16, odd_shapes[1], stages[i], false);
        assert_int_equal(r.fail, KEVO_FAIL_NONE);
        assert_int_equal(r.checks, 3);
    }
}

/* A configuration at a shape. */
typedef struct gpu_case {
    const char *shape;
    const char *params;
} gpu_case;

/* Every case in fp16 and bf16: verified on all three maps. */
/* Every case, in fp16 and bf16 (KEVO_GPU_CASES=TEXT: only those whose params
 * contain TEXT, to re-run a few on the device; KEVO_GPU_TESTS=PATTERN picks
 * the test functions, as cmocka's filter does). */
static void run_cases(const kevo_space *sp, const gpu_case *cases, size_t n)
{
    const char *only = getenv("KEVO_GPU_CASES");
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && *only && !strstr(cases[i].params, only))
            continue;
        ran++;
        for (int d = 0; d < 2; d++) {
            kevo_gpu_result r =
                run_config(sp, d ? KEVO_DTYPE_BF16 : KEVO_DTYPE_F16, cases[i].shape, cases[i].params, false);
            assert_int_equal(r.fail, KEVO_FAIL_NONE);
            assert_int_equal(r.checks, 3);
        }
    }
    if (ran == 0)
        printf("  %s: no case matches KEVO_GPU_CASES=%s\n", sp->family, only);
}

/* Hopper family: every tail comes from TMA's zero fill. */
static const gpu_case hopper[] = {
    {"B=5,M=37,N=72,Ku=45,Kc=29,U=2", "BN=64,CONSUMERS=1,STAGES=2,EPI=0,RASTER=0"},
    {"B=5,M=37,N=72,Ku=45,Kc=29,U=2", "BN=128,CONSUMERS=1,STAGES=4,EPI=1,RASTER=0"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=256,CONSUMERS=2,STAGES=3,EPI=1,RASTER=0"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=192,CONSUMERS=2,STAGES=2,EPI=0,RASTER=0"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=64,CONSUMERS=2,STAGES=8,EPI=1,RASTER=1"},
    {"B=9,M=133,N=200,Ku=330,Kc=266,U=4", "BN=128,CONSUMERS=2,STAGES=3,EPI=1,RASTER=0"},
};

static void test_hopper_family(void **state)
{
    (void)state;
    run_cases(wgmma, hopper, KV_ARRAY_LEN(hopper));
}

/* Persistent family: M, N and K tails, fewer items than SMs and many per
 * SM, several users per cluster of work, one k-tile, the default shape's
 * M=433 and Kc=866 unpadded. */
static const gpu_case persistent[] = {
    {"B=40,M=433,N=256,Ku=1178,Kc=866,U=3", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=4,CLUSTER=1,FUSE=1,EPI=1,RASTER=0"},
    {"B=64,M=433,N=256,Ku=1178,Kc=866,U=5", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=4,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=128,CONSUMERS=2,PINGPONG=1,STAGES=3,CLUSTER=2,FUSE=1,EPI=0,RASTER=1,URES=1"},
    {"B=5,M=37,N=72,Ku=45,Kc=29,U=2", "BN=64,CONSUMERS=1,PINGPONG=0,STAGES=2,CLUSTER=1,FUSE=0,EPI=1,RASTER=0"},
    {"B=300,M=97,N=136,Ku=330,Kc=266,ratio=7", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=4,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1"},
    {"B=33,M=200,N=512,Ku=64,Kc=8,U=33", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=3,CLUSTER=2,FUSE=0,EPI=0,RASTER=1"},
    /* cooperative: the last tile's second warp group has no row below M */
    {"B=40,M=433,N=256,Ku=1178,Kc=866,U=3", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=1,RASTER=0"},
    /* BN % 64 == 32: E in 32-column boxes with 64-byte swizzle, stores
     * predicated on the tile's own columns (the next tile writes the rest of
     * the last 64-column box) and on N */
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=4,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=1"},
    {"B=40,M=433,N=200,Ku=331,Kc=267,U=5", "BN=160,CONSUMERS=2,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=0,RASTER=1"},
    {"B=300,M=37,N=136,Ku=45,Kc=29,ratio=7", "BN=160,CONSUMERS=1,PINGPONG=0,STAGES=5,CLUSTER=1,FUSE=1,EPI=0,RASTER=0"},
    {"B=33,M=200,N=456,Ku=64,Kc=8,U=33", "BN=224,CONSUMERS=1,PINGPONG=0,STAGES=2,CLUSTER=1,FUSE=0,EPI=0,RASTER=0,URES=1"},
    {"B=64,M=433,N=224,Ku=1178,Kc=866,U=5", "BN=224,CONSUMERS=2,PINGPONG=1,STAGES=4,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=1"},
    /* three and four consumer warp groups (BM 192, 256; setmaxnreg 152, 104;
     * the user tile's barrier past the warp groups' own ids), warp groups
     * below no row of M, a cluster whose second CTA has no row at all */
    {"B=40,M=433,N=200,Ku=1178,Kc=866,U=3", "BN=192,CONSUMERS=3,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=1,RASTER=0"},
    {"B=9,M=433,N=136,Ku=130,Kc=66,U=4", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=3,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=1"},
    {"B=33,M=200,N=72,Ku=45,Kc=29,U=33", "BN=64,CONSUMERS=4,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1"},
    {"B=300,M=433,N=200,Ku=331,Kc=267,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=0,RASTER=1"},
    {"B=20,M=600,N=128,Ku=200,Kc=130,U=3", "BN=128,CONSUMERS=4,PINGPONG=0,STAGES=2,CLUSTER=2,FUSE=1,EPI=1,RASTER=0"},
    /* BK=128: two W boxes per stage, the second one wholly past K (K % 128
     * <= 64: Kc=29, Ku=45, 130) or partly (Ku=200, Kc=331); E boxes of 128
     * rows in both swizzles */
    {"B=9,M=133,N=200,Ku=130,Kc=29,U=4", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=2,BK=128,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1"},
    {"B=40,M=433,N=200,Ku=200,Kc=331,U=5", "BN=160,CONSUMERS=3,PINGPONG=0,STAGES=2,BK=128,CLUSTER=1,FUSE=1,EPI=0,RASTER=0"},
    {"B=33,M=200,N=72,Ku=45,Kc=130,U=33", "BN=64,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=128,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1"},
    {"B=300,M=97,N=136,Ku=1178,Kc=866,ratio=7", "BN=128,CONSUMERS=1,PINGPONG=0,STAGES=4,BK=128,CLUSTER=2,FUSE=1,EPI=1,RASTER=0"},
    /* ping-pong whose items have STAGES to 2 STAGES - 1 k-tiles (here 3 with
     * STAGES=3): a warp group's next item reuses a slot whose previous phase
     * is the other warp group's k-tile, and before v7 its full-barrier wait
     * could pass on that phase's parity while it was still loading (the H100
     * failed the case above with CUDA_ERROR_LAUNCH_FAILED).  The same
     * cooperative (never affected), with BK=64 (6 and 5 k-tiles), RASTER=0,
     * STAGES=4 (6 and 5 k-tiles again), two k-tiles in two stages, TRANS=1 */
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=128,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=1"},
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=1"},
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=128,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=1"},
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=0"},
    {"B=64,M=433,N=456,Ku=100,Kc=120,U=5", "BN=64,CONSUMERS=2,PINGPONG=1,STAGES=2,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1"},
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=128,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=1,TRANS=1,TRIM=0"},
    /* BK=32: W in 64-byte swizzle rows, two k-tiles of wgmmas in flight
     * (MMA_LAG): one k-tile (Kc=29) and ping-pong items of STAGES to
     * 2 STAGES - 1 k-tiles (9 and 11 with STAGES=5), E multicast, 32-column
     * E atoms, W's rows multicast (TRANS=1, CLB=1) in an eight-stage ring */
    {"B=9,M=133,N=200,Ku=130,Kc=29,U=4", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=32,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1"},
    {"B=64,M=433,N=456,Ku=331,Kc=266,U=5", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=5,BK=32,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=1"},
    {"B=33,M=200,N=512,Ku=301,Kc=263,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=8,BK=32,CLUSTER=2,CLB=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0"},
    {"B=300,M=97,N=136,Ku=1178,Kc=866,ratio=7", "BN=128,CONSUMERS=1,PINGPONG=0,STAGES=6,BK=32,CLUSTER=2,FUSE=0,EPI=1,RASTER=0"},
    /* TRANS=1: out^T = E^T W^T, E the M-major A operand, W's BN - TRIM rows
     * the K-major B operand, stmatrix .trans into out's 64x64 boxes.  M=200
     * in one 200-wide tile (25 8-column groups: the last box one x2
     * stmatrix; URES=1's last vector half used) with TMA stores whose last
     * box reaches past M; M=37 and 66 below one box; M=433 in two, three
     * and four tiles (16-byte stores, or TMA stores of whole boxes); N tails
     * in a warp group's 64 columns and a warp group past N */
    {"B=33,M=200,N=512,Ku=301,Kc=263,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=24"},
    {"B=33,M=200,N=512,Ku=301,Kc=263,U=5", "BN=224,CONSUMERS=2,PINGPONG=1,STAGES=2,BK=128,CLUSTER=1,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=24"},
    {"B=33,M=200,N=512,Ku=301,Kc=263,U=5", "BN=224,CONSUMERS=1,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=24"},
    {"B=40,M=37,N=72,Ku=45,Kc=29,U=3", "BN=64,CONSUMERS=1,PINGPONG=0,STAGES=2,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=24"},
    {"B=40,M=37,N=72,Ku=45,Kc=29,U=3", "BN=64,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=16"},
    {"B=64,M=433,N=136,Ku=331,Kc=267,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=2,BK=128,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,URES=1,TRANS=1,TRIM=0"},
    {"B=64,M=433,N=136,Ku=331,Kc=267,U=5", "BN=160,CONSUMERS=3,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=8"},
    {"B=30,M=433,N=200,Ku=331,Kc=267,U=5", "BN=128,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=0"},
    {"B=33,M=66,N=512,Ku=129,Kc=67,U=4", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=24"},
    {"B=33,M=66,N=512,Ku=129,Kc=67,U=4", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=24"},
    {"B=300,M=97,N=136,Ku=45,Kc=29,ratio=7", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=24"},
    /* SBUF=4: four staging buffers per warp group, up to three TMA stores in
     * flight; one, two and four boxes per tile (the buffers cycle across
     * tiles), ping-pong with a cluster, four consumers, TRANS=1 */
    {"B=64,M=433,N=136,Ku=64,Kc=40,U=4", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,SBUF=4"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=4", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=0,SBUF=4"},
    {"B=300,M=97,N=72,Ku=45,Kc=29,ratio=7", "BN=64,CONSUMERS=1,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=0,SBUF=4"},
    {"B=20,M=600,N=128,Ku=200,Kc=130,U=3", "BN=128,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,SBUF=4"},
    {"B=64,M=1024,N=128,Ku=63,Kc=57,U=8", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=2,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,SBUF=4"},
    /* TRANS=1 with a cluster: two N tiles share W (the B operand, BW rows:
     * each CTA loads half of them and multicasts), and EPI=1 stores a last
     * box of BW % 64 rows by 16-byte stores (a 64-row TMA box would write
     * the next M tile's rows): M=433 in 2 x 224, N=256 in one cluster tile
     * (the default shape's K), then FUSE=0, SBUF=4 and an N tail; M=200 in 2
     * x 112 (TRIM=16), EPI=0, BK=128; four consumers (256 columns of N per
     * CTA), N=520 in two cluster tiles, RASTER=1; split-K parts of cluster
     * tiles */
    {"B=40,M=433,N=256,Ku=1178,Kc=866,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0"},
    {"B=33,M=433,N=200,Ku=331,Kc=266,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=0,SBUF=4"},
    {"B=33,M=200,N=512,Ku=301,Kc=263,U=5", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=128,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=1,TRANS=1,TRIM=16"},
    {"B=20,M=600,N=520,Ku=200,Kc=130,U=3", "BN=128,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=1,URES=0,TRANS=1,TRIM=0"},
    {"B=40,M=433,N=256,Ku=1178,Kc=866,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,SPLITK=3"},
    /* SPLITK: the candidate tiles past the last whole wave of the launch's
     * items (r = n mod clusters, n = user and candidate tiles, all of them
     * when fewer) split along Kc, every part's partial sum to its own slot,
     * the last part to count itself in adding the others' and storing the
     * tile.  On 132 SMs: 42 user and 140 candidate tiles, 50 of them split
     * in two (ping-pong, URES=0: part 0 starts from fp32 user_res); a
     * cluster, 10 + 80 cluster tiles, 24 in 3 uneven parts (4, 5, 5
     * k-tiles), URES=1 (a last part other than 0 loads user_res itself);
     * every tile split, FUSE=0 (a grid of 126 for 63 tiles in 2), BK=128,
     * EPI=0; every tile in 4 (2, 2, 2, 3) behind 16 user tiles,
     * cooperative; TRANS=1 with TRIM, 24 of 136 tiles; four consumers, 2
     * waves and 48 tiles in 3; ping-pong with a cluster in 4; TRANS=1
     * BW=256, 24 tiles of 64 k-tiles in 4 (a grid of 100 clusters) */
    {"B=10,M=433,N=256,Ku=1178,Kc=866,U=3", "BN=192,CONSUMERS=2,PINGPONG=1,STAGES=4,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,SPLITK=2"},
    {"B=40,M=433,N=256,Ku=1178,Kc=866,U=5", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=4,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,SPLITK=3"},
    {"B=7,M=133,N=200,Ku=130,Kc=530,U=4", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=128,CLUSTER=1,FUSE=0,EPI=0,RASTER=1,URES=1,SPLITK=2"},
    {"B=9,M=133,N=200,Ku=130,Kc=530,U=4", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,SPLITK=4"},
    {"B=34,M=200,N=512,Ku=301,Kc=700,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=24,SPLITK=2"},
    {"B=64,M=433,N=200,Ku=331,Kc=1100,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,CLUSTER=1,FUSE=1,EPI=0,RASTER=1,SPLITK=3"},
    {"B=20,M=133,N=200,Ku=130,Kc=530,U=4", "BN=128,CONSUMERS=2,PINGPONG=1,STAGES=3,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,SPLITK=4"},
    {"B=12,M=256,N=256,Ku=512,Kc=4096,U=2", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,SPLITK=4"},
    /* CLB=1: a cluster pairs candidates 2j and 2j + 1 (users, in the user
     * tiles) at one tile position, each CTA loading half of W's rows and
     * multicasting them.  Odd B and U: the last pair's second CTA computes
     * the last candidate's (user's) tile again and stores nothing, by TMA
     * (EPI=1, its box at b = B) or 16-byte stores (EPI=0, TRANS=1's last
     * partial box); TRANS=1 with W's 240 rows in halves of 120 (M=433 in two
     * tiles, N=120 in one with a tail); TRANS=0 with ping-pong (W's 64 rows in
     * halves of 32), four consumers with BK=128, two launches (FUSE=0: the
     * user launch pairs users); B=1 and U=1 (the only pair's second CTA has
     * nothing); URES=1 keeping user_res across a CTA's items */
    {"B=41,M=433,N=120,Ku=301,Kc=266,U=5", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1"},
    {"B=41,M=433,N=120,Ku=301,Kc=266,U=5", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=16,CLB=1"},
    {"B=9,M=133,N=200,Ku=130,Kc=66,U=3", "BN=128,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=1,URES=1,TRANS=0,CLB=1"},
    {"B=33,M=200,N=72,Ku=45,Kc=130,U=33", "BN=64,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=128,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=0,CLB=1"},
    {"B=1,M=97,N=136,Ku=45,Kc=29,U=1", "BN=128,CONSUMERS=1,PINGPONG=0,STAGES=2,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=0,CLB=1"},
    {"B=300,M=66,N=72,Ku=130,Kc=67,ratio=7", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1"},
    /* USPLIT: each user tile split along Ku into parts claimed one after the
     * other, the last to arrive summing them in part order and setting the
     * flag: one user with a long Ku (8 parts of a 39-k-tile chain, Ku and Kc
     * odd), three users in a launch of their own (FUSE=0) with ping-pong, E
     * multicast and BK=128, two users with four consumers and fp32 user_res,
     * one user with TRANS=1's W multicast over a cluster and fp32 user_res;
     * CLB=1 pairs of users, one user (the pair's second CTA past U computes
     * user 0's parts again and stores nothing) and three in a launch of their
     * own */
    {"B=301,M=83,N=72,Ku=2441,Kc=213,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=1,TRANS=1,TRIM=0,USPLIT=8"},
    {"B=37,M=133,N=200,Ku=1030,Kc=130,U=3", "BN=128,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=128,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=0,TRANS=0,USPLIT=4"},
    {"B=20,M=200,N=256,Ku=777,Kc=300,U=2", "BN=128,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,USPLIT=2"},
    {"B=50,M=433,N=200,Ku=1500,Kc=266,U=1", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=0,USPLIT=4"},
    {"B=301,M=83,N=72,Ku=2441,Kc=213,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,USPLIT=8"},
    {"B=33,M=200,N=72,Ku=1045,Kc=130,U=3", "BN=64,CONSUMERS=4,PINGPONG=0,STAGES=2,BK=128,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=0,CLB=1,USPLIT=4"},
    /* URES=1 tiles that start before their user tile is ready (a 94- or
     * 125-k-tile chain on one CTA, candidates of 2 to 9 k-tiles): every
     * first-wave tile finds the flag unset, runs its main loop, then waits
     * and loads user_res for the epilogue; its later tiles keep that block
     * (ping-pong, E multicast), or (SPLITK=2) part 0 loads it late before
     * counting itself in and the last part reads it after */
    {"B=40,M=128,N=128,Ku=8000,Kc=70,U=1", "BN=128,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=0"},
    {"B=70,M=133,N=200,Ku=6000,Kc=530,U=1", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=0,RASTER=0,URES=1,TRANS=0,SPLITK=2"},
    /* Tiles wider than one wgmma (BW > 256: two per k-step, the second's B
     * operand BW1 columns on): TRANS=1's 304 rows of M, W halved by CLB=1's
     * multicast, with the TMA store's partial last box (M=591: a last tile of
     * 287 rows); TRANS=1 with two N tiles sharing W and SPLITK=2's fix-up
     * (NACC=144); TRANS=0's 288 columns (32-column E atoms) over N=272 with
     * CLB=1; ping-pong's 64 x 320 tiles with the TMA store over N=328; a
     * user tile split along Ku under CLB=1 */
    {"B=41,M=591,N=200,Ku=301,Kc=266,U=5", "BN=320,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=16,CLB=1"},
    {"B=13,M=300,N=400,Ku=140,Kc=900,U=2", "BN=288,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=0,SPLITK=2"},
    {"B=33,M=200,N=272,Ku=45,Kc=476,U=3", "BN=288,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=0,CLB=1"},
    {"B=20,M=133,N=328,Ku=64,Kc=130,U=2", "BN=320,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0"},
    {"B=31,M=500,N=136,Ku=700,Kc=100,U=3", "BN=320,CONSUMERS=2,PINGPONG=0,STAGES=2,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=16,CLB=1,USPLIT=2"},
    /* TRANS=0 tiles trimmed to BW = BN - TRIM columns of N: E loaded in whole
     * 64-column atoms past BW (the next tile's columns, or zeros past N), the
     * wgmma reading BW of them (a partial atom), the last store box of BW % 64
     * columns by 16-byte stores under EPI=1: 200 columns with E multicast,
     * 248 with ping-pong at BK=128, 304 in two wgmmas (192 + 112) with CLB=1,
     * 208 in BK=32 stages, 88 with ping-pong and multicast, 168 with the
     * SPLITK=2 fix-up */
    {"B=33,M=433,N=392,Ku=331,Kc=266,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=0,TRIM=24"},
    {"B=20,M=133,N=488,Ku=200,Kc=331,U=3", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=2,BK=128,CLUSTER=1,FUSE=0,EPI=0,RASTER=0,URES=0,TRANS=0,TRIM=8"},
    {"B=13,M=133,N=600,Ku=140,Kc=300,U=2", "BN=320,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,TRIM=16,CLB=1"},
    {"B=17,M=200,N=416,Ku=129,Kc=515,U=3", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=6,BK=32,CLUSTER=1,FUSE=0,EPI=1,RASTER=1,URES=0,TRANS=0,TRIM=16"},
    {"B=40,M=97,N=176,Ku=45,Kc=130,U=3", "BN=96,CONSUMERS=2,PINGPONG=1,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=0,TRIM=8"},
    {"B=34,M=200,N=336,Ku=301,Kc=700,U=5", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=0,TRIM=24,SPLITK=2"},
    /* UFOLD=1: each candidate tile runs its user's Ku k-tiles (W_user,
     * E_user[cand_to_user[b]]) before its own, no user tiles: ping-pong
     * TRANS=1 with raster order, E multicast over a cluster, CLB=1 with a
     * last pair past B, BK=32 stages, BK=128 with Ku < 64 (a zero box), a
     * ratio map over 300 candidates, one user with W multicast, and two
     * wgmmas (BN=320) */
    {"B=33,M=433,N=136,Ku=45,Kc=130,U=5", "BN=256,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=1,URES=0,TRANS=1,TRIM=0,SBUF=4,UFOLD=1"},
    {"B=40,M=200,N=256,Ku=129,Kc=67,U=3", "BN=256,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,UFOLD=1"},
    {"B=41,M=200,N=200,Ku=66,Kc=300,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=16,CLB=1,UFOLD=1"},
    {"B=17,M=133,N=192,Ku=100,Kc=515,U=3", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=6,BK=32,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,UFOLD=1"},
    {"B=20,M=133,N=128,Ku=45,Kc=331,U=2", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=2,BK=128,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,UFOLD=1"},
    {"B=300,M=97,N=136,Ku=45,Kc=29,ratio=7", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=1,TRIM=24,UFOLD=1"},
    {"B=50,M=83,N=72,Ku=57,Kc=212,U=1", "BN=96,CONSUMERS=1,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=0,RASTER=0,URES=0,TRANS=1,TRIM=0,UFOLD=1"},
    {"B=20,M=133,N=328,Ku=64,Kc=130,U=2", "BN=320,CONSUMERS=2,PINGPONG=1,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=0,TRANS=0,UFOLD=1"},
    /* STACK=1: the candidates' N columns stacked end to end (the users' in
     * the user launch), B * N rows that TRANS=1 tiles take in turn, E in
     * 32-column boxes, each of one candidate's.  Whole candidates to a tile:
     * N=96 in three warp groups with CLB=1 (B and U odd: the last cluster's
     * candidates partly past B), N=64 two to a tile, four of N=64 in four
     * warp groups under a ratio map, four of N=32, and BK=32 stages.
     * Candidates across tiles: N=96 in 128-row tiles (3/4 of a candidate's
     * rows in one tile, the rest in the next) with CLB=1, N=320 in 2.5
     * tiles, N=160 in 256-row tiles under a ratio map, N=224 in three warp
     * groups with BK=32 and CLB=1, and one user of N=32 in a quarter of a
     * 128-row tile.  A warp group's 64 rows that cross from one candidate to
     * the next, and a partial last box (BW % 64), go by 16-byte stores.
     * FUSE=1: user and candidate tiles in one launch, each warp waiting for
     * its own user tile's flag: across tiles with CLB=1 (B and U odd), four
     * warp groups under a ratio map, and a long Ku beside a short Kc, where
     * candidate tiles finish their main loop before their user tiles.
     * N not a multiple of 32: the stack's pitch is N rounded up to 32, the
     * columns past N zeros never stored (a 64-row box inside one pitch goes
     * by TMA, clipped at N): N=80 with CLB=1 (B and U odd), N=272 across
     * tiles in one launch, one user of N=16, N=48 under a ratio map in four
     * warp groups, N=112 in three warp groups with BK=32, and N=72 */
    {"B=41,M=345,N=80,Ku=301,Kc=266,U=5", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,STACK=1"},
    {"B=23,M=300,N=272,Ku=130,Kc=300,U=3", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1"},
    {"B=37,M=83,N=16,Ku=57,Kc=212,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=300,M=97,N=48,Ku=45,Kc=130,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1"},
    {"B=21,M=345,N=112,Ku=200,Kc=515,U=4", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=6,BK=32,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=50,M=83,N=72,Ku=57,Kc=212,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=41,M=345,N=96,Ku=301,Kc=266,U=5", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,STACK=1"},
    {"B=37,M=200,N=64,Ku=130,Kc=331,U=3", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=300,M=97,N=64,Ku=45,Kc=130,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1"},
    {"B=33,M=433,N=32,Ku=301,Kc=266,U=5", "BN=224,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=8,STACK=1"},
    {"B=21,M=345,N=96,Ku=200,Kc=515,U=4", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=6,BK=32,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,STACK=1"},
    {"B=41,M=345,N=96,Ku=301,Kc=266,U=5", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1"},
    {"B=19,M=200,N=320,Ku=130,Kc=200,U=3", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=150,M=97,N=160,Ku=45,Kc=130,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,STACK=1"},
    {"B=23,M=133,N=224,Ku=200,Kc=515,U=4", "BN=128,CONSUMERS=3,PINGPONG=0,STAGES=6,BK=32,CLUSTER=2,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,STACK=1"},
    {"B=37,M=83,N=32,Ku=57,Kc=212,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1"},
    {"B=41,M=345,N=96,Ku=301,Kc=266,U=5", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1"},
    {"B=300,M=97,N=64,Ku=45,Kc=130,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,STACK=1"},
    {"B=300,M=97,N=96,Ku=900,Kc=64,ratio=7", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,CLB=1,STACK=1"},
    /* STACK=1 with USPLIT: the stack's user tiles split along Ku, the last
     * part storing the tile and (one launch) raising its flag: one user of
     * N=72 in four parts of a 39-k-tile chain beside short candidates, in
     * one launch; N=96 with CLB=1 (U odd) in two parts, in one launch; N=80
     * (pitch 96) across tiles in eight parts, two launches; N=48 under a
     * ratio map in four warp groups, in one launch */
    {"B=300,M=83,N=72,Ku=2441,Kc=212,U=1", "BN=96,CONSUMERS=2,PINGPONG=0,STAGES=5,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=8,SBUF=4,STACK=1,USPLIT=4"},
    {"B=41,M=345,N=96,Ku=801,Kc=266,U=5", "BN=192,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=2,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,CLB=1,STACK=1,USPLIT=2"},
    {"B=37,M=200,N=80,Ku=1100,Kc=331,U=3", "BN=128,CONSUMERS=2,PINGPONG=0,STAGES=4,BK=64,CLUSTER=1,FUSE=0,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=0,STACK=1,USPLIT=8"},
    {"B=300,M=97,N=48,Ku=700,Kc=130,ratio=7", "BN=96,CONSUMERS=4,PINGPONG=0,STAGES=3,BK=64,CLUSTER=1,FUSE=1,EPI=1,RASTER=0,URES=1,TRANS=1,TRIM=16,STACK=1,USPLIT=2"},
};

static void test_persistent_family(void **state)
{
    (void)state;
    run_cases(ws, persistent, KV_ARRAY_LEN(persistent));
}

/* Memory-bound family (lce_mem: persistent candidate loop, the user GEMM per
 * candidate or from a first launch): M, N and K tails (pad rows of both K segments, the
 * last n-tile one chunk wide, a tile taller than M), one user and one user
 * per candidate, B below what the grid would like (every CTA one candidate),
 * more tiles than CTAs the SMs hold (every CTA loops over all of B), rings
 * that wrap, every OCC and STAGES, and BN=256. */
static const gpu_case memory[] = {
    {"B=300,M=97,N=72,Ku=45,Kc=29,ratio=7", "BM=32,BN=64,WARPS_M=2,WARPS_N=1,STAGES=2,OCC=4,USER=0"},
    {"B=300,M=97,N=72,Ku=45,Kc=29,ratio=7", "BM=128,BN=128,WARPS_M=4,WARPS_N=2,STAGES=4,OCC=1,USER=1"},
    {"B=64,M=37,N=136,Ku=130,Kc=66,U=5", "BM=64,BN=64,WARPS_M=2,WARPS_N=2,STAGES=2,OCC=2,USER=0"},
    {"B=64,M=37,N=136,Ku=130,Kc=66,U=5", "BM=32,BN=128,WARPS_M=1,WARPS_N=4,STAGES=2,OCC=2,USER=1"},
    {"B=500,M=96,N=64,Ku=128,Kc=48,U=1", "BM=96,BN=64,WARPS_M=2,WARPS_N=2,STAGES=4,OCC=3,USER=1"},
    {"B=500,M=96,N=64,Ku=128,Kc=48,U=1", "BM=64,BN=64,WARPS_M=1,WARPS_N=2,STAGES=3,OCC=2,USER=0"},
    {"B=33,M=200,N=264,Ku=8,Kc=200,U=33", "BM=128,BN=128,WARPS_M=4,WARPS_N=2,STAGES=2,OCC=1,USER=0"},
    {"B=33,M=200,N=264,Ku=8,Kc=200,U=33", "BM=64,BN=64,WARPS_M=2,WARPS_N=1,STAGES=2,OCC=2,USER=1"},
    {"B=40,M=50,N=328,Ku=24,Kc=40,U=3", "BM=32,BN=256,WARPS_M=1,WARPS_N=4,STAGES=3,OCC=1,USER=0"},
    {"B=7,M=600,N=512,Ku=16,Kc=24,U=2", "BM=32,BN=64,WARPS_M=2,WARPS_N=2,STAGES=2,OCC=1,USER=1"},
};

static void test_memory_family(void **state)
{
    (void)state;
    run_cases(mem, memory, KV_ARRAY_LEN(memory));
}

/* The decomposed plan without its broadcast-add launch computes only the
 * candidate half: the checks must call it a wrong result. */
static void test_planted_defect_caught(void **state)
{
    (void)state;
    kevo_gpu_result r = run_config(mma, KEVO_DTYPE_F16, odd_shapes[1], stages[1], true);
    assert_int_equal(r.fail, KEVO_FAIL_WRONG_RESULT);
    assert_true(r.rel_err > 0.1);
    assert_true(r.median_ms != r.median_ms); /* not timed after a failed check */
}

/* ---- the same-run peers ---- */

/* A worker with its peers on (cfg.baseline) at shape_txt in dt; its start
 * figures into *info.  The caller stops it. */
static kevo_gpu *start_peers(const char *shape_txt, kevo_dtype dt, kevo_gpu_info *info, kevo_compile_job *rj)
{
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_syms shape;
    assert_int_equal(op->parse_shape(shape_txt, &shape, &err), KEVO_OK);
    char *rs = tu_ref_source(dt, abi_text);
    tu_compile(rj, "ikbo_lce_ref.cu", rs);
    free(rs);
    kevo_gpu_config gc;
    memset(&gc, 0, sizeof gc);
    gc.op = op;
    gc.shape = shape;
    gc.dtype = dt;
    gc.warmup = 2;
    gc.reps = 10;
    gc.timeout_s = 120;
    gc.seed = 7;
    gc.baseline = true;
    gc.peer_algos = 0; /* the default: the heuristic's top 8 */
    gc.ref_cubin = rj->cubin;
    gc.ref_cubin_size = rj->cubin_size;
    memset(info, 0, sizeof *info);
    kevo_gpu *g = NULL;
    kevo_status st = kevo_gpu_start(&gc, &g, info, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    return g;
}

/* Whether s is a string of 128 lowercase hex digits. */
static bool is_algo_hex(const char *s)
{
    if (!s || strlen(s) != 128)
        return false;
    for (const char *c = s; *c; c++)
        if (!isxdigit((unsigned char)*c) || isupper((unsigned char)*c))
            return false;
    return true;
}

/* A vendor peer's config: {"form":form,"kup":kup,"kcp":kcp,"cublaslt":V,
 * "workspace":W,"gemms":[{"role":"user","algo":HEX},{"role":"cand",
 * "algo":HEX}]} with V > 0 and HEX 128 lowercase hex digits. */
static void check_config(const char *config, const char *form, int64_t kup, int64_t kcp)
{
    assert_true(strncmp(config, "{\"form\":", 8) == 0);
    assert_true(strlen(config) < KEVO_PEER_CONFIG_MAX - 1);
    cJSON *j = cJSON_Parse(config);
    assert_non_null(j);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "form")), form);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "kup")) == (double)kup);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "kcp")) == (double)kcp);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "cublaslt")) > 0);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "workspace")) >= 0);
    const cJSON *gemms = cJSON_GetObjectItemCaseSensitive(j, "gemms");
    assert_true(cJSON_IsArray(gemms));
    assert_int_equal(cJSON_GetArraySize(gemms), 2);
    static const char *const roles[] = {"user", "cand"};
    for (int i = 0; i < 2; i++) {
        const cJSON *g = cJSON_GetArrayItem(gemms, i);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "role")), roles[i]);
        assert_true(is_algo_hex(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "algo"))));
    }
    cJSON_Delete(j);
}

/* "K padded 866->872, 1178->1184" for the shape (Kc, then Ku; a K that is
 * a multiple of 8 as it is) into out[n]. */
static void k_text(int64_t Kc, int64_t Ku, char *out, size_t n)
{
    char kc[48], ku[48];
    int64_t Kcp = (Kc + 7) / 8 * 8, Kup = (Ku + 7) / 8 * 8;
    if (Kc == Kcp)
        snprintf(kc, sizeof kc, "%lld", (long long)Kc);
    else
        snprintf(kc, sizeof kc, "%lld->%lld", (long long)Kc, (long long)Kcp);
    if (Ku == Kup)
        snprintf(ku, sizeof ku, "%lld", (long long)Ku);
    else
        snprintf(ku, sizeof ku, "%lld->%lld", (long long)Ku, (long long)Kup);
    snprintf(out, n, "%s %s, %s", Kc == Kcp && Ku == Kup ? "K (multiples of 8)" : "K padded", kc, ku);
}

/* Peers at shape_txt in dt: stage 0, decomposed and beta1 OK within the
 * op's bound, timed, the vendor ones saying what ran (detail) and how to
 * run it again (config); the best peer is one of them. */
static void check_peers(const char *shape_txt, kevo_dtype dt)
{
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_gpu_info info;
    kevo_compile_job rj;
    kevo_gpu *g = start_peers(shape_txt, dt, &info, &rj);
    double bound, rtol;
    op->tolerance(dt, &bound, &rtol);
    kevo_syms shape;
    kevo_err err;
    assert_int_equal(op->parse_shape(shape_txt, &shape, &err), KEVO_OK);
    int64_t Ku = tu_sym(&shape, "Ku"), Kc = tu_sym(&shape, "Kc");
    char ktext[128];
    k_text(Kc, Ku, ktext, sizeof ktext);
    static const char *const names[] = {"stage0", "stage0_bcast", "decomposed", "beta1"};
    for (size_t i = 0; i < KV_ARRAY_LEN(names); i++) {
        int p = kevo_op_peer_index(op, names[i]);
        assert_true(p >= 0);
        const kevo_peer_fig *f = &info.peers.p[p];
        printf("  peer %-12s %s %-40s %-5s %.4f ms [%.4f, %.4f] rel %.2e (bound %.1e)\n    detail: %s\n    config: %s\n",
               names[i], kevo_dtype_name(dt), shape_txt, kevo_peer_state_name(f->state), f->median_ms, f->ci_lo_ms,
               f->ci_hi_ms, f->rel_err, bound, f->detail, f->config);
        assert_int_equal(f->state, KEVO_PEER_OK);
        assert_true(f->rel_err < bound);
        assert_true(f->median_ms > 0 && isfinite(f->median_ms));
        assert_true(f->ci_lo_ms <= f->median_ms && f->median_ms <= f->ci_hi_ms);
        if (!(op->peers[p].flags & KEVO_PEER_VENDOR)) {
            assert_string_equal(f->config, "");
            continue;
        }
        assert_non_null(strstr(f->detail, ktext));
        assert_non_null(strstr(f->detail, "cuBLASLt user GEMM algo "));
        assert_non_null(strstr(f->detail, "candidate GEMM algo "));
        check_config(f->config, names[i], (Ku + 7) / 8 * 8, (Kc + 7) / 8 * 8);
    }
    int best = kevo_peer_best(op, &info.peers, NULL);
    assert_true(best >= 0);
    printf("  best peer %s\n", op->peers[best].name);
    kevo_gpu_stop(g);
    kevo_compile_job_release(&rj);
}

static void test_peers(void **state)
{
    (void)state;
    check_peers("B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70", KEVO_DTYPE_F16); /* the default shape */
    check_peers("B=300,M=200,N=136,Ku=333,Kc=517,ratio=7", KEVO_DTYPE_F16);    /* K % 8 != 0, M*N odd tiles */
    check_peers("B=300,M=200,N=136,Ku=333,Kc=517,ratio=7", KEVO_DTYPE_BF16);
    check_peers("B=64,M=97,N=136,Ku=64,Kc=40,U=4", KEVO_DTYPE_F16);            /* K % 8 == 0: no copy of E */
}

/* KEVO_FAULT_INJECT=peer:beta1: the beta = 1 peer's output zeroed after its
 * run: FAILED with its rel_err, untimed, and never the best; the others
 * are OK as before. */
static void test_peer_fault(void **state)
{
    (void)state;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_gpu_info info;
    kevo_compile_job rj;
    setenv("KEVO_FAULT_INJECT", "peer:beta1", 1);
    kevo_gpu *g = start_peers("B=300,M=200,N=136,Ku=333,Kc=517,ratio=7", KEVO_DTYPE_F16, &info, &rj);
    unsetenv("KEVO_FAULT_INJECT");
    int b1 = kevo_op_peer_index(op, "beta1"), dec = kevo_op_peer_index(op, "decomposed");
    const kevo_peer_fig *f = &info.peers.p[b1];
    printf("  spoiled beta1: %s rel %.2e: %s\n", kevo_peer_state_name(f->state), f->rel_err, f->detail);
    assert_int_equal(f->state, KEVO_PEER_FAILED);
    assert_true(f->rel_err > 0.5); /* zeroed: rel_err 1 */
    assert_true(isnan(f->median_ms));
    assert_non_null(strstr(f->detail, "disagrees with the reference"));
    assert_int_equal(info.peers.p[dec].state, KEVO_PEER_OK);
    int best = kevo_peer_best(op, &info.peers, NULL);
    assert_true(best >= 0);
    assert_int_not_equal(best, b1);
    assert_int_not_equal(kevo_peer_vendor(op, &info.peers), b1);
    kevo_gpu_stop(g);
    kevo_compile_job_release(&rj);
}

static int setup(void **state)
{
    (void)state;
    abi_text = tu_read_src("kernels/ikbo_lce/abi.h");
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/lce_mma.json", tu_home());
    kevo_err err;
    if (kevo_space_load(path, &mma, &err) != KEVO_OK)
        return -1;
    snprintf(path, sizeof path, "%s/templates/lce_wgmma.json", tu_home());
    if (kevo_space_load(path, &wgmma, &err) != KEVO_OK)
        return -1;
    snprintf(path, sizeof path, "%s/templates/lce_mem.json", tu_home());
    if (kevo_space_load(path, &mem, &err) != KEVO_OK)
        return -1;
    snprintf(path, sizeof path, "%s/templates/lce_ws.json", tu_home());
    return kevo_space_load(path, &ws, &err) == KEVO_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(abi_text);
    kevo_space_free(mma);
    kevo_space_free(wgmma);
    kevo_space_free(ws);
    kevo_space_free(mem);
    return 0;
}

/* Every configuration above is valid at its shape: checked without a GPU
 * too, so a constraint change cannot quietly retire a GPU case. */
static int check_one(const kevo_space *sp, const char *shape_txt, const char *params)
{
    kevo_err err;
    kevo_syms shape;
    kevo_limits lim;
    kevo_config cfg;
    char why[256] = "";
    if (kevo_op_find("ikbo_lce")->parse_shape(shape_txt, &shape, &err) ||
        kevo_limits_for_arch("sm_90a", &lim, &err) || !tu_config_of(sp, params, &cfg))
        return 1;
    if (kevo_space_check(sp, &shape, &lim, KEVO_DTYPE_F16, &cfg, why, sizeof why) != 1) {
        fprintf(stderr, "%s at %s: %s is not valid: %s\n", sp->family, shape_txt, params, why);
        return 1;
    }
    return 0;
}

static int check_configs(void)
{
    int bad = 0;
    for (size_t s = 0; s < KV_ARRAY_LEN(odd_shapes); s++)
        for (size_t i = 0; i < KV_ARRAY_LEN(stages); i++)
            bad += check_one(mma, odd_shapes[s], stages[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(hopper); i++)
        bad += check_one(wgmma, hopper[i].shape, hopper[i].params);
    for (size_t i = 0; i < KV_ARRAY_LEN(persistent); i++)
        bad += check_one(ws, persistent[i].shape, persistent[i].params);
    for (size_t i = 0; i < KV_ARRAY_LEN(memory); i++)
        bad += check_one(mem, memory[i].shape, memory[i].params);
    return bad;
}

/* Re-timing (kevo_gpu_retime): the same kernel twice stays within a few
 * percent of itself round by round, and a kernel several times slower
 * (natural K read with 4-byte copies, decomposed) is told apart with its
 * ratio's interval above 1. */
static void test_retime(void **state)
{
    (void)state;
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_syms shape;
    assert_int_equal(op->parse_shape("B=256", &shape, &err), KEVO_OK);
    static const char *const cfgs[] = {RT_FAST, RT_SLOW, RT_FAST};
    enum { N = 3, ROUNDS = 20 };
    kevo_compile_job jobs[N];
    kevo_gpu_request reqs[N];
    prep_timed(&shape, cfgs, N, jobs, reqs);
    char *rs = tu_ref_source(KEVO_DTYPE_F16, abi_text);
    kevo_compile_job rj;
    tu_compile(&rj, "ikbo_lce_ref.cu", rs);
    kevo_gpu *g = start_worker(&shape, KEVO_DTYPE_F16, &rj, 2, 5, 60, 5);
    static kevo_gpu_retime_result out[N];
    assert_int_equal(kevo_gpu_retime(g, reqs, N, 2, ROUNDS, out, &err), KEVO_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(out[i].fail, KEVO_FAIL_NONE);
        assert_int_equal(out[i].rounds, ROUNDS);
        for (int r = 0; r < ROUNDS; r++)
            assert_true(out[i].ms[r] > 0 && isfinite(out[i].ms[r]));
    }
    double same, slo, shi, slow, lo, hi;
    kv_paired_ratio(out[0].ms, out[2].ms, ROUNDS, 1, 2000, &same, &slo, &shi);
    kv_paired_ratio(out[0].ms, out[1].ms, ROUNDS, 1, 2000, &slow, &lo, &hi);
    printf("  re-timing: same kernel %.3f [%.3f, %.3f], natural-K decomposed %.2f [%.2f, %.2f]\n", same, slo, shi,
           slow, lo, hi);
    assert_true(same > 0.9 && same < 1.1);
    assert_true(lo > 1.3);
    /* bad arguments are refused before the worker sees them */
    assert_int_equal(kevo_gpu_retime(g, reqs, 1, 2, ROUNDS, out, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_gpu_retime(g, reqs, 3, 2, KEVO_GPU_MAX_REPS, out, &err), KEVO_ERR_ARG);
    kevo_gpu_stop(g);
    for (int i = 0; i < N; i++)
        kevo_compile_job_release(&jobs[i]);
    kevo_compile_job_release(&rj);
    free(rs);
}

/* Re-timing with a peer (kevo_gpu_retime_peer): beta1, run after the
 * candidate in every round with the algorithms the worker chose at start,
 * fills its series (positive, finite, near its start-up median), and the
 * paired ratio's interval holds the ratio of the medians; stage 0 beside
 * two candidates fills its series too, and an index past the op's peers is
 * refused before the worker sees it. */
static void test_retime_peer(void **state)
{
    (void)state;
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    const int beta1 = kevo_op_peer_index(op, "beta1"), stage0 = kevo_op_peer_index(op, "stage0");
    kevo_gpu_info info;
    kevo_compile_job rj;
    kevo_gpu *g = start_peers("B=256", KEVO_DTYPE_F16, &info, &rj);
    assert_int_equal(info.peers.p[beta1].state, KEVO_PEER_OK);
    kevo_syms shape;
    assert_int_equal(op->parse_shape("B=256", &shape, &err), KEVO_OK);
    static const char *const cfgs[] = {RT_FAST, RT_SLOW};
    enum { N = 2, ROUNDS = 30 };
    kevo_compile_job jobs[N];
    kevo_gpu_request reqs[N];
    prep_timed(&shape, cfgs, N, jobs, reqs);
    static kevo_gpu_retime_result out[N], peer;
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 1, beta1, 2, ROUNDS, out, &peer, &err), KEVO_OK);
    if (peer.fail != KEVO_FAIL_NONE)
        fprintf(stderr, "beta1: %s\n", peer.msg);
    assert_int_equal(out[0].fail, KEVO_FAIL_NONE);
    assert_int_equal(peer.fail, KEVO_FAIL_NONE);
    assert_int_equal(peer.rounds, ROUNDS);
    for (int r = 0; r < ROUNDS; r++)
        assert_true(peer.ms[r] > 0 && isfinite(peer.ms[r]) && out[0].ms[r] > 0 && isfinite(out[0].ms[r]));
    double pm = kv_median(peer.ms, ROUNDS), cm = kv_median(out[0].ms, ROUNDS), ratio, lo, hi;
    kv_paired_ratio(out[0].ms, peer.ms, ROUNDS, 1, 2000, &ratio, &lo, &hi);
    printf("  beta1 beside a candidate: %.4f ms (%.4f ms at start), candidate %.4f ms, paired %.3f [%.3f, %.3f]\n",
           pm, info.peers.p[beta1].median_ms, cm, ratio, lo, hi);
    assert_true(pm > 0.5 * info.peers.p[beta1].median_ms && pm < 2.0 * info.peers.p[beta1].median_ms);
    assert_true(lo <= pm / cm && pm / cm <= hi);
    assert_true(lo <= ratio && ratio <= hi);
    /* stage 0 beside two candidates */
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, N, stage0, 2, ROUNDS, out, &peer, &err), KEVO_OK);
    assert_int_equal(peer.fail, KEVO_FAIL_NONE);
    assert_int_equal(out[1].fail, KEVO_FAIL_NONE);
    assert_true(kv_median(peer.ms, ROUNDS) > 0);
    /* refused before the worker sees it */
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 1, op->npeers, 2, ROUNDS, out, &peer, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "out of range"));
    kevo_gpu_stop(g);
    for (int i = 0; i < N; i++)
        kevo_compile_job_release(&jobs[i]);
    kevo_compile_job_release(&rj);
}

int main(void)
{
    if (setup(NULL) || check_configs()) {
        fprintf(stderr, "test configurations do not load or are not valid\n");
        return 1;
    }
    teardown(NULL);
    if (!tu_have_gpu()) {
        printf("skipped: no CUDA driver or device (the %zu configurations are valid)\n",
               KV_ARRAY_LEN(odd_shapes) * KV_ARRAY_LEN(stages) + KV_ARRAY_LEN(hopper) + KV_ARRAY_LEN(persistent) +
                   KV_ARRAY_LEN(memory));
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_fp16),
        cmocka_unit_test(test_family_bf16),
        cmocka_unit_test(test_hopper_family),
        cmocka_unit_test(test_persistent_family),
        cmocka_unit_test(test_memory_family),
        cmocka_unit_test(test_planted_defect_caught),
        cmocka_unit_test(test_retime),
        cmocka_unit_test(test_retime_peer),
        cmocka_unit_test(test_peers),
        cmocka_unit_test(test_peer_fault),
    };
    const char *only = getenv("KEVO_GPU_TESTS");
    if (only && *only)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, setup, teardown);
}
