/* test_space_plan.c — launch plans of the real template families at
 * shapes: grids, blocks, shared memory, workspaces, tensor maps, and a
 * plan's JSON round trip. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"
#include "space_fixture.h"

/* ---- plans ---- */

static void check_launch(const kevo_launch *l, const char *entry, int64_t grid, int64_t block, int64_t smem)
{
    assert_string_equal(l->entry, entry);
    assert_int_equal(l->grid[0], grid);
    assert_int_equal(l->grid[1], 1);
    assert_int_equal(l->grid[2], 1);
    assert_int_equal(l->block[0], block);
    assert_int_equal(l->block[1], 1);
    assert_int_equal(l->block[2], 1);
    assert_int_equal(l->smem, smem);
}

/* What a plan test starts from: a family, the default shape, H100 limits. */
typedef struct plan_fx {
    kevo_space *s;
    kevo_syms shape;
    kevo_limits lim;
    kevo_err err;
} plan_fx;

static plan_fx plan_fx_of(const char *family)
{
    plan_fx f = {.s = load_family(family), .lim = h100()};
    shape_of(NULL, &f.shape);
    kevo_err_clear(&f.err);
    return f;
}

static void test_plan_mma(void **state)
{
    (void)state;
    plan_fx f = plan_fx_of("lce_mma");
    kevo_plan plan;
    kevo_config cfg;
    const int64_t B = 1024, M = 433, N = 256, U = 15;

    /* default: FUSE=0, BM=BN=128, BK=32, 2x2 warps, 2 stages */
    config_of(f.s, NULL, &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 3);
    const int64_t smem = 2 * (128 * 32 + 32 * 128) * 2; /* 32768 */
    check_launch(&plan.launches[0], "lce_user_gemm", cdiv(M, 128) * cdiv(N, 128) * U, 128, smem);
    check_launch(&plan.launches[1], "lce_cand_gemm", cdiv(M, 128) * cdiv(N, 128) * B, 128, smem);
    check_launch(&plan.launches[2], "lce_bcast_add", cdiv(B * M * N / 8, 256), 256, 0);
    assert_int_equal(plan.launches[0].grid[0], 120);
    assert_int_equal(plan.launches[1].grid[0], 8192);
    assert_int_equal(plan.launches[2].grid[0], 55424);
    assert_int_equal(plan.workspace_bytes, 15 * 433 * 256 * 4);
    assert_int_equal(plan.workspace_bytes, 6650880);
    assert_int_equal(plan.pad_k, 0);
    assert_int_equal(plan.ntmaps, 0);

    /* another tile, ALIGN=1: pad_k follows */
    config_of(f.s, "BM=192,BN=64,WARPS_M=4,WARPS_N=2,STAGES=3,BK=64,ALIGN=1", &cfg);
    char why[256];
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 3);
    const int64_t smem2 = 3 * (192 * 64 + 64 * 64) * 2; /* 98304 */
    check_launch(&plan.launches[0], "lce_user_gemm", cdiv(M, 192) * cdiv(N, 64) * U, 256, smem2);
    check_launch(&plan.launches[1], "lce_cand_gemm", cdiv(M, 192) * cdiv(N, 64) * B, 256, smem2);
    check_launch(&plan.launches[2], "lce_bcast_add", cdiv(B * M * N / 8, 256), 256, 0);
    assert_int_equal(plan.pad_k, 1);

    /* FUSE=1: no broadcast-add launch; EPI=1: epilogue smem may dominate */
    config_of(f.s, "FUSE=1,EPI=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 2);
    const int64_t epi = 128 * (128 + 8) * 4; /* 69632 > 32768 */
    check_launch(&plan.launches[0], "lce_user_gemm", 120, 128, epi);
    check_launch(&plan.launches[1], "lce_cand_gemm", 8192, 128, epi);
    assert_int_equal(plan.workspace_bytes, 6650880);
    assert_int_equal(plan.pad_k, 0);

    /* another shape */
    kevo_syms other;
    shape_of("B=8,M=40,N=24,Ku=10,Kc=20,U=3", &other);
    config_of(f.s, "BM=64,BN=64,WARPS_M=1,WARPS_N=2", &cfg);
    assert_int_equal(kevo_space_check(f.s, &other, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &other, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 3);
    check_launch(&plan.launches[0], "lce_user_gemm", 3, 64, 2 * (64 * 32 + 32 * 64) * 2);
    check_launch(&plan.launches[1], "lce_cand_gemm", 8, 64, 2 * (64 * 32 + 32 * 64) * 2);
    check_launch(&plan.launches[2], "lce_bcast_add", cdiv(8 * 40 * 24 / 8, 256), 256, 0);
    assert_int_equal(plan.workspace_bytes, 3 * 40 * 24 * 4);
    kevo_space_free(f.s);
}

static void test_plan_wgmma(void **state)
{
    (void)state;
    plan_fx f = plan_fx_of("lce_wgmma");
    kevo_plan plan;
    kevo_config cfg;

    /* default: BN=256, 2 consumers (BM=128), 3 stages, EPI=1 */
    config_of(f.s, NULL, &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 2);
    const int64_t smem = 3 * (128 + 256) * 64 * 2 + 16 * 3 + 1024; /* pipe 147456 > epi 135168 */
    check_launch(&plan.launches[0], "lce_user_gemm", cdiv(433, 128) * cdiv(256, 256) * 15, 384, smem);
    check_launch(&plan.launches[1], "lce_cand_gemm", cdiv(433, 128) * cdiv(256, 256) * 1024, 384, smem);
    assert_int_equal(plan.workspace_bytes, 15 * 433 * 256 * 4);
    assert_int_equal(plan.pad_k, 1);
    assert_int_equal(plan.ntmaps, 4);
    static const char *const tensors[] = {"w_user", "w_cand", "e_user", "e_cand"};
    for (int i = 0; i < 4; i++) {
        assert_string_equal(plan.tmaps[i].tensor, tensors[i]);
        assert_int_equal(plan.tmaps[i].swizzle, 128);
        assert_int_equal(plan.tmaps[i].box[0], 64);
        assert_int_equal(plan.tmaps[i].box[1], i < 2 ? 128 : 64); /* w_*: {64, BM, 1}, e_*: {64, 64, 1} */
        assert_int_equal(plan.tmaps[i].box[2], 1);
    }

    /* one consumer: BM = 64 */
    config_of(f.s, "BN=128,CONSUMERS=1,EPI=0,STAGES=4", &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_BF16, &cfg, &plan, &f.err), KEVO_OK);
    const int64_t smem1 = 4 * (64 + 128) * 64 * 2 + 16 * 4 + 1024;
    check_launch(&plan.launches[0], "lce_user_gemm", cdiv(433, 64) * 2 * 15, 256, smem1);
    check_launch(&plan.launches[1], "lce_cand_gemm", cdiv(433, 64) * 2 * 1024, 256, smem1);
    assert_int_equal(plan.tmaps[0].box[1], 64);
    assert_int_equal(plan.tmaps[1].box[1], 64);
    assert_int_equal(plan.tmaps[2].box[1], 64);
    kevo_space_free(f.s);
}

/* The persistent family's plan: one launch of at most num_sms CTAs (two
 * when FUSE=0), whole clusters, the out tensor map, flags after user_res. */
static void test_plan_ws(void **state)
{
    (void)state;
    plan_fx f = plan_fx_of("lce_ws");
    kevo_plan plan;
    kevo_config cfg;

    /* default: ping-pong BN=256, 4 stages, fused, TMA store */
    config_of(f.s, NULL, &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 1);
    const int64_t smem = 4 * (64 + 256) * 64 * 2 + 2 * 2 * 64 * 128 + (16 * 4 + 16 * 4 + 8 * 4) + 1024;
    check_launch(&plan.launches[0], "lce_ws_fused", f.lim.num_sms, 384, smem);
    const int64_t tiles = cdiv(433, 64) * cdiv(256, 256);
    /* user_res by CTA tile (7 tiles of 64 x 256 per user, fp32), counters, flags */
    assert_int_equal(plan.workspace_bytes, 15 * tiles * 64 * 256 * 4 + 128 + 4 * 15 * tiles);
    config_of(f.s, "URES=1", &cfg); /* user_res in the storage dtype: half the bytes */
    kevo_plan half;
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_BF16, &cfg, &half, &f.err), KEVO_OK);
    assert_int_equal(half.workspace_bytes, 15 * tiles * 64 * 256 * 2 + 128 + 4 * 15 * tiles);
    assert_int_equal(plan.ntmaps, 5);
    assert_string_equal(plan.tmaps[4].tensor, "out");
    assert_int_equal(plan.tmaps[4].box[0], 64);
    assert_int_equal(plan.tmaps[4].box[1], 64);
    assert_int_equal(plan.tmaps[1].box[1], 64); /* W box rows: one warp group's tile */

    /* cooperative, cluster of two, two launches; few items: the grid shrinks to them */
    config_of(f.s, "PINGPONG=0,CLUSTER=2,FUSE=0,STAGES=3", &cfg);
    kevo_syms small;
    shape_of("B=3,M=200,N=256,Ku=64,Kc=64,U=1", &small);
    assert_int_equal(kevo_space_plan(f.s, &small, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 2);
    const int64_t items_m = cdiv(200, 256); /* cluster tiles of 2 x 128 rows */
    check_launch(&plan.launches[0], "lce_ws_user", 1 * items_m * 2, 384,
                 3 * (128 + 256) * 64 * 2 + 2 * 2 * 64 * 128 + (16 * 3 + 16 * 4 + 8 * 4) + 1024);
    check_launch(&plan.launches[1], "lce_ws_cand", 3 * items_m * 2, 384, plan.launches[0].smem);
    assert_int_equal(plan.tmaps[1].box[1], 128);

    /* BN an odd multiple of 32: E boxes of 32 columns, 64-byte swizzle; the
     * rest as for BN % 64 == 0 */
    static const int bns[] = {96, 128, 160, 192, 224};
    for (size_t i = 0; i < KV_ARRAY_LEN(bns); i++) {
        char p[64];
        snprintf(p, sizeof p, "BN=%d,EPI=0", bns[i]);
        config_of(f.s, p, &cfg);
        assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
        const unsigned cols = bns[i] % 64 ? 32 : 64;
        for (int t = 0; t < 5; t++) {
            bool e = t == 2 || t == 3;
            assert_int_equal(plan.tmaps[t].box[0], e ? cols : 64);
            assert_int_equal(plan.tmaps[t].box[1], 64); /* BK rows of E, BM rows of W (ping-pong), out's 64 */
            assert_int_equal(plan.tmaps[t].swizzle, e ? (int)(2 * cols) : 128);
        }
        check_launch(&plan.launches[0], "lce_ws_fused", f.lim.num_sms, 384,
                     4 * (64 + bns[i]) * 64 * 2 + 2 * 2 * 64 * 128 + (16 * 4 + 16 * 4 + 8 * 4) + 1024);
    }

    /* a cluster of two needs an even number of E boxes; ping-pong two consumers */
    char why[256];
    config_of(f.s, "BN=192,CLUSTER=2", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    config_of(f.s, "BN=160,CLUSTER=2,EPI=0", &cfg); /* five boxes of 32 columns */
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    assert_non_null(strstr(why, "E boxes"));
    /* three and four consumer warp groups: 192- and 256-row cooperative
     * tiles; the consumers share what the producer's 40 registers leave of
     * the launch's (168 x 3, 128 x 4, 96 x 5 at 384, 512, 640 threads) */
    static const int64_t regs[] = {240, 232, 152, 104};
    for (int c = 1; c <= 4; c++) {
        char p[64];
        snprintf(p, sizeof p, "CONSUMERS=%d,PINGPONG=0,BN=64", c);
        config_of(f.s, p, &cfg);
        kevo_syms b;
        int64_t v;
        assert_int_equal(kevo_space_bind(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &b, &f.err), KEVO_OK);
        assert_true(kevo_syms_get(&b, "cons_regs", &v));
        assert_int_equal(v, regs[c - 1]);
    }
    config_of(f.s, "CONSUMERS=3,PINGPONG=0,BN=192,STAGES=3", &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    check_launch(&plan.launches[0], "lce_ws_fused", f.lim.num_sms, 512,
                 3 * (192 + 192) * 64 * 2 + 3 * 2 * 64 * 128 + (16 * 3 + 16 * 4 + 8 * 4) + 1024);
    assert_int_equal(plan.tmaps[0].box[1], 192);
    config_of(f.s, "CONSUMERS=4,PINGPONG=0,BN=128,STAGES=2,EPI=0", &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    check_launch(&plan.launches[0], "lce_ws_fused", f.lim.num_sms, 640,
                 2 * (256 + 128) * 64 * 2 + 4 * 2 * 64 * 128 + (16 * 2 + 16 * 4 + 8 * 4) + 1024);
    assert_int_equal(plan.tmaps[1].box[1], 256);
    static const struct {
        const char *params;
        int valid;
    } fits[] = {
        {"CONSUMERS=4,PINGPONG=0,BN=128,STAGES=2", 1},        /* 64 + 40 <= 104 */
        {"CONSUMERS=4,PINGPONG=0,BN=160,STAGES=2,EPI=0", 0},  /* 80 + 40 */
        {"CONSUMERS=4,PINGPONG=0,BN=64,STAGES=2,URES=1", 1},  /* 32 + 16 + 40 */
        {"CONSUMERS=4,PINGPONG=0,BN=96,STAGES=2,EPI=0,URES=1", 0},
        {"CONSUMERS=3,PINGPONG=0,BN=192,STAGES=2", 1},        /* 96 + 40 <= 152 */
        {"CONSUMERS=3,PINGPONG=0,BN=224,STAGES=2,EPI=0", 0},  /* fits 152, but ptxas wants 138 of the launch's 128 */
        {"CONSUMERS=3,PINGPONG=0,BN=128,STAGES=2,URES=1", 1}, /* 64 + 32 + 40 */
        {"CONSUMERS=3,PINGPONG=0,BN=160,STAGES=2,EPI=0,URES=1", 0},
        {"CONSUMERS=2,PINGPONG=0,BN=256,STAGES=3,URES=1", 1}, /* 128 + 64 + 40 = 232 */
        {"CONSUMERS=3,PINGPONG=1,BN=64,STAGES=2", 0},         /* ping-pong is for two */
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(fits); i++) {
        config_of(f.s, fits[i].params, &cfg);
        int ok = kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why);
        if (ok != fits[i].valid)
            print_error("%s: %d (%s)\n", fits[i].params, ok, why);
        assert_int_equal(ok, fits[i].valid);
    }
    /* BK=128: a stage holds two W boxes of 64 K-columns and E boxes of 128
     * rows, so half as many stages fit */
    config_of(f.s, "BK=128,PINGPONG=0,STAGES=2,URES=1", &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    check_launch(&plan.launches[0], "lce_ws_fused", f.lim.num_sms, 384,
                 2 * (128 + 256) * 128 * 2 + 2 * 2 * 64 * 128 + (16 * 2 + 16 * 4 + 8 * 4) + 1024);
    for (int t = 0; t < 4; t++) {
        assert_int_equal(plan.tmaps[t].box[0], 64);        /* W: 64 K-columns; E: 64 columns */
        assert_int_equal(plan.tmaps[t].box[1], 128);       /* W: BM rows; E: BK rows */
        assert_int_equal(plan.tmaps[t].swizzle, 128);
    }
    config_of(f.s, "BK=128,PINGPONG=0,STAGES=3,URES=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    assert_non_null(strstr(why, "shared memory"));
    config_of(f.s, "BK=128,BN=160,EPI=0,STAGES=3", &cfg);
    assert_int_equal(kevo_space_plan(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.tmaps[3].box[0], 32);
    assert_int_equal(plan.tmaps[3].box[1], 128);
    assert_int_equal(plan.tmaps[3].swizzle, 64);
    /* with both K at most 64 a 128-deep k-tile is half zeros */
    kevo_syms shallow;
    shape_of("B=64,M=433,N=256,Ku=64,Kc=40,U=4", &shallow);
    config_of(f.s, "BK=128", &cfg);
    assert_int_equal(kevo_space_check(f.s, &shallow, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    assert_non_null(strstr(why, "half zeros"));
    config_of(f.s, "BK=64", &cfg);
    assert_int_equal(kevo_space_check(f.s, &shallow, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);

    /* an untrimmed tile of 32-column E atoms stores by 16-byte stores */
    config_of(f.s, "BN=224,EPI=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    assert_non_null(strstr(why, "32-column E atoms"));
    /* a trimmed TRANS=0 tile (BW = 200 columns of N, E in 64-column atoms)
     * must pad N less than the untrimmed widths: not at N=256, yes at N=200 */
    config_of(f.s, "BN=224,TRIM=24,EPI=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    assert_non_null(strstr(why, "trimmed TRANS=0 tile"));
    kevo_syms n200;
    shape_of("B=64,M=433,N=200,Ku=512,Kc=1000,U=4", &n200);
    assert_int_equal(kevo_space_check(f.s, &n200, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &n200, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    assert_int_equal(plan.tmaps[3].box[0], 64); /* E boxes of 64 columns, 128-byte swizzle */
    assert_int_equal(plan.tmaps[3].swizzle, 128);
    config_of(f.s, "CONSUMERS=1,PINGPONG=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);
    /* UFOLD=1 (each candidate tile folds its user's GEMM in) is one launch of
     * candidate tiles alone: FUSE=1, no rounded user_res, no split; no
     * user_res in the workspace, the user's k-tiles in the model's flops */
    static const struct {
        const char *params;
        int valid;
    } folds[] = {
        {"UFOLD=1,FUSE=1,URES=0", 1},
        {"UFOLD=1,FUSE=0,URES=0", 0},
        {"UFOLD=1,FUSE=1,URES=1", 0},
        {"UFOLD=1,FUSE=1,URES=0,USPLIT=2", 0},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(folds); i++) {
        config_of(f.s, folds[i].params, &cfg);
        int ok = kevo_space_check(f.s, &n200, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why);
        if (ok != folds[i].valid)
            print_error("%s: %d (%s)\n", folds[i].params, ok, why);
        assert_int_equal(ok, folds[i].valid);
        if (!ok)
            assert_non_null(strstr(why, "UFOLD=1"));
    }
    kevo_syms bu;
    int64_t ws_fold, ws_res, fl_fold, fl_res;
    config_of(f.s, "UFOLD=1,FUSE=1,URES=0", &cfg);
    assert_int_equal(kevo_space_bind(f.s, &n200, &f.lim, KEVO_DTYPE_F16, &cfg, &bu, &f.err), KEVO_OK);
    assert_true(kevo_syms_get(&bu, "res_bytes", &ws_fold) && kevo_syms_get(&bu, "kt_c", &fl_fold));
    config_of(f.s, "UFOLD=0,FUSE=1,URES=0", &cfg);
    assert_int_equal(kevo_space_bind(f.s, &n200, &f.lim, KEVO_DTYPE_F16, &cfg, &bu, &f.err), KEVO_OK);
    assert_true(kevo_syms_get(&bu, "res_bytes", &ws_res) && kevo_syms_get(&bu, "kt_c", &fl_res));
    assert_int_equal(ws_fold, 0);
    assert_true(ws_res > 0);
    assert_int_equal(fl_res, 1000 / 64 + 1);            /* Kc's k-tiles */
    assert_int_equal(fl_fold, fl_res + 512 / 64);      /* and the user's Ku ones ahead */
    /* 5 cooperative stages of 48 KB do not fit */
    config_of(f.s, "PINGPONG=0,STAGES=5", &cfg);
    assert_int_equal(kevo_space_check(f.s, &f.shape, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 0);

    /* SPLITK: only the candidate tiles past the whole waves of the launch's
     * items are split.  B=136, M=200, 64-row ping-pong tiles: 9 users' and
     * 136 candidates' 4 tiles, 580 items, 4 waves of 132 and 52 candidate
     * tiles more, each in two parts (104 parts: the last wave takes half a
     * tile) */
    kevo_syms past;
    shape_of("B=136,M=200,N=256,Ku=512,Kc=2048,ratio=16", &past);
    config_of(f.s, "SPLITK=2,URES=1", &cfg);
    assert_int_equal(kevo_space_check(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    {
        kevo_syms b;
        int64_t v;
        assert_int_equal(kevo_space_bind(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, &b, &f.err), KEVO_OK);
        assert_true(kevo_syms_get(&b, "tail", &v));
        assert_int_equal(v, 52);
        assert_true(kevo_syms_get(&b, "items", &v));
        assert_int_equal(v, (9 + 136) * 4 + 52); /* users' tiles, candidates', second parts */
        /* user_res (storage dtype, 16 vectors a thread), claim counters,
         * flags; 52 arrival counters; 2 x 52 partial sums of 64 x 256 fp32 */
        const int64_t res = 9 * 4 * 128 * 16 * 16, ctr = res + 512 /* 128 + 4 * 36, rounded up */,
                      part = ctr + 512 /* 8 * 52 */;
        assert_int_equal(plan.workspace_bytes, part + 2 * 52 * 64 * 256 * 4);
    }
    /* B=120: 116 tiles past 3 waves of 128 items; two to four parts leave
     * the last wave a whole tile long (232 parts on 132 clusters, 348, 464);
     * B=124: no tile past whole waves.  SPLITK > 1 stays valid there (the
     * search's moves along `split` pass through it) and plans as SPLITK=1 */
    static const char *const whole[] = {"B=120,M=200,N=256,Ku=512,Kc=2048,ratio=16",
                                        "B=124,M=200,N=256,Ku=512,Kc=2048,ratio=16"};
    for (size_t w = 0; w < KV_ARRAY_LEN(whole); w++) {
        shape_of(whole[w], &past);
        kevo_plan one;
        config_of(f.s, "SPLITK=1,URES=1", &cfg);
        assert_int_equal(kevo_space_plan(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, &one, &f.err), KEVO_OK);
        for (int k = 2; k <= 4; k++) {
            char p[64];
            snprintf(p, sizeof p, "SPLITK=%d,URES=1", k);
            config_of(f.s, p, &cfg);
            assert_int_equal(kevo_space_check(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
            kevo_syms b;
            int64_t v;
            assert_int_equal(kevo_space_bind(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, &b, &f.err), KEVO_OK);
            assert_true(kevo_syms_get(&b, "tail", &v));
            assert_int_equal(v, 0);
            assert_int_equal(kevo_space_plan(f.s, &past, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
            assert_int_equal(plan.launches[0].grid[0], one.launches[0].grid[0]);
        }
    }

    /* STACK=1: the candidates' N=96 columns end to end, B * N rows in
     * 128-row TRANS=1 tiles (1000 candidates: 750 tiles, not 1000 padded
     * ones), the users' alike (40 users: 30 tiles); two launches, E in
     * 32-column boxes, user_res for the 30 user tiles at 2 tiles of M */
    kevo_syms s9;
    shape_of("B=1000,M=345,N=96,Ku=800,Kc=1100,ratio=25", &s9);
    const char *stack = "STACK=1,TRANS=1,BN=192,TRIM=16,PINGPONG=0,CONSUMERS=2,FUSE=0,EPI=1,URES=1,STAGES=4";
    config_of(f.s, stack, &cfg);
    assert_int_equal(kevo_space_check(f.s, &s9, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_plan(f.s, &s9, &f.lim, KEVO_DTYPE_F16, &cfg, &plan, &f.err), KEVO_OK);
    const int64_t st_smem = 4 * (176 + 128) * 64 * 2 + 2 * 2 * 64 * 128 + (16 * 4 + 16 * 4 + 8 * 4) + 1024;
    assert_int_equal(plan.nlaunches, 2);
    check_launch(&plan.launches[0], "lce_ws_user", 30 * 2, 384, st_smem);
    check_launch(&plan.launches[1], "lce_ws_cand", f.lim.num_sms, 384, st_smem);
    assert_string_equal(plan.tmaps[3].tensor, "e_cand");
    assert_int_equal(plan.tmaps[3].box[0], 32);
    assert_int_equal(plan.tmaps[3].swizzle, 64);
    assert_int_equal(plan.workspace_bytes, 30 * 2 * 2 * 128 * 16 * cdiv(176 / 2, 8) + 128 + 4 * 30 * 2);
    kevo_syms sb;
    int64_t items;
    assert_int_equal(kevo_space_bind(f.s, &s9, &f.lim, KEVO_DTYPE_F16, &cfg, &sb, &f.err), KEVO_OK);
    assert_true(kevo_syms_get(&sb, "items", &items));
    assert_int_equal(items, 750 * 2);
    /* N=272 stacks at the pitch 288 (N rounded up to 32): 2111 candidates
     * in cdiv(2111 * 288, 128) = 4750 tiles of rows */
    kevo_syms s18;
    shape_of("B=2111,M=345,N=272,Ku=800,Kc=1100,ratio=25", &s18);
    assert_int_equal(kevo_space_check(f.s, &s18, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why), 1);
    assert_int_equal(kevo_space_bind(f.s, &s18, &f.lim, KEVO_DTYPE_F16, &cfg, &sb, &f.err), KEVO_OK);
    assert_true(kevo_syms_get(&sb, "items", &items));
    assert_int_equal(items, 4750 * 2);
    /* and where it does not apply: N a multiple of the tile's rows (the
     * plain tiling; N=248 pads to 256, two whole tiles), ping-pong, the
     * TMA-less epilogue, a cluster of one candidate's tiles; N=72 (pitch
     * 96), one launch, a cluster of two candidates' (CLB=1), three warp
     * groups of two whole candidates and user tiles split along Ku
     * (USPLIT) do; a split candidate tile (SPLITK) does not */
    static const struct {
        const char *shape, *params;
        int valid;
    } stacks[] = {
        {"B=1000,M=345,N=256,Ku=800,Kc=1100,ratio=25", "", 0},
        {"B=1000,M=345,N=248,Ku=800,Kc=1100,ratio=25", "", 0},
        {"B=1000,M=345,N=72,Ku=800,Kc=1100,ratio=25", "", 1},
        {NULL, "PINGPONG=1", 0},
        {NULL, "EPI=0", 0},
        {NULL, "FUSE=1", 1},
        {NULL, "CLUSTER=2,CLB=0", 0},
        {NULL, "CLUSTER=2,CLB=1", 1},
        {NULL, "CONSUMERS=3,BN=128,TRIM=0", 1},
        {NULL, "USPLIT=2", 1},
        {NULL, "FUSE=1,USPLIT=2", 1},
        {NULL, "SPLITK=2", 0},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(stacks); i++) {
        char p[256];
        snprintf(p, sizeof p, "%s%s%s", stack, stacks[i].params[0] ? "," : "", stacks[i].params);
        kevo_syms sh;
        shape_of(stacks[i].shape ? stacks[i].shape : "B=1000,M=345,N=96,Ku=800,Kc=1100,ratio=25", &sh);
        config_of(f.s, p, &cfg);
        int ok = kevo_space_check(f.s, &sh, &f.lim, KEVO_DTYPE_F16, &cfg, why, sizeof why);
        if (ok != stacks[i].valid)
            print_error("%s: %d (%s)\n", p, ok, why);
        assert_int_equal(ok, stacks[i].valid);
        if (!ok)
            assert_non_null(strstr(why, "STACK"));
    }
    kevo_space_free(f.s);
}

static void plan_round_trip(const kevo_plan *p)
{
    kv_buf j;
    kv_buf_init(&j);
    assert_int_equal(kevo_plan_json(p, &j), KEVO_OK);
    kevo_plan q;
    memset(&q, 0x33, sizeof q);
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_plan_parse_json(j.data, &q, &err);
    if (st)
        print_error("parse '%s': %s\n", j.data, err.msg);
    assert_int_equal(st, KEVO_OK);
    assert_int_equal(q.nlaunches, p->nlaunches);
    for (int i = 0; i < p->nlaunches; i++) {
        assert_string_equal(q.launches[i].entry, p->launches[i].entry);
        for (int d = 0; d < 3; d++) {
            assert_int_equal(q.launches[i].grid[d], p->launches[i].grid[d]);
            assert_int_equal(q.launches[i].block[d], p->launches[i].block[d]);
        }
        assert_int_equal(q.launches[i].smem, p->launches[i].smem);
    }
    assert_int_equal(q.workspace_bytes, p->workspace_bytes);
    assert_int_equal(q.pad_k, p->pad_k);
    assert_int_equal(q.ntmaps, p->ntmaps);
    for (int i = 0; i < p->ntmaps; i++) {
        assert_string_equal(q.tmaps[i].tensor, p->tmaps[i].tensor);
        for (int d = 0; d < 3; d++)
            assert_int_equal(q.tmaps[i].box[d], p->tmaps[i].box[d]);
        assert_int_equal(q.tmaps[i].swizzle, p->tmaps[i].swizzle);
    }
    /* and the text is stable */
    kv_buf k;
    kv_buf_init(&k);
    assert_int_equal(kevo_plan_json(&q, &k), KEVO_OK);
    assert_string_equal(j.data, k.data);
    kv_buf_release(&j);
    kv_buf_release(&k);
}

static void test_plan_json(void **state)
{
    (void)state;
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_err err;
    kevo_plan plan;
    kevo_config cfg;
    static const char *const fams[] = {"lce_mma", "lce_wgmma"};
    for (int f = 0; f < 2; f++) {
        kevo_space *s = load_family(fams[f]);
        config_of(s, NULL, &cfg);
        assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
        plan_round_trip(&plan);
        if (f == 0) {
            config_of(s, "FUSE=1,ALIGN=1", &cfg);
            assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
            plan_round_trip(&plan);
        }
        kevo_space_free(s);
    }
    /* exact text of a small plan */
    kevo_plan p;
    memset(&p, 0, sizeof p);
    p.nlaunches = 1;
    snprintf(p.launches[0].entry, sizeof p.launches[0].entry, "k");
    p.launches[0].grid[0] = 4000000000u;
    p.launches[0].grid[1] = p.launches[0].grid[2] = 1;
    p.launches[0].block[0] = 32;
    p.launches[0].block[1] = p.launches[0].block[2] = 1;
    p.launches[0].smem = 7;
    p.workspace_bytes = 5000000000ull;
    p.pad_k = 1;
    kv_buf j;
    kv_buf_init(&j);
    assert_int_equal(kevo_plan_json(&p, &j), KEVO_OK);
    assert_string_equal(j.data, "{\"workspace_bytes\":5000000000,\"pad_k\":1,\"launches\":[{\"entry\":\"k\","
                                "\"grid\":[4000000000,1,1],\"block\":[32,1,1],\"smem\":7}],\"tmaps\":[]}");
    kv_buf_release(&j);
    plan_round_trip(&p);

    /* malformed plans */
    assert_int_equal(kevo_plan_parse_json("nope", &p, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_plan_parse_json(NULL, &p, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_plan_parse_json("{\"workspace_bytes\":0,\"pad_k\":0}", &p, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_plan_parse_json("{\"workspace_bytes\":0,\"pad_k\":0,\"launches\":[{\"entry\":\"k\","
                                          "\"grid\":[1,1],\"block\":[1,1,1],\"smem\":0}]}",
                                          &p, &err),
                     KEVO_ERR_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_mma),
        cmocka_unit_test(test_plan_wgmma),
        cmocka_unit_test(test_plan_ws),
        cmocka_unit_test(test_plan_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
