/* test_space.c — template families: loading the real space files, limits,
 * shape support, constraints, launch plans, plan and config JSON, rendering,
 * malformed space files and directory loading. */
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

static const char *home(void)
{
    const char *h = getenv("KEVO_HOME");
    return h && *h ? h : KEVO_SOURCE_DIR;
}

static kevo_space *load_family(const char *family)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/templates/%s.json", home(), family);
    kevo_space *s = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_space_load(path, &s, &err);
    if (st != KEVO_OK)
        print_error("load '%s': %s\n", path, err.msg);
    assert_int_equal(st, KEVO_OK);
    assert_non_null(s);
    return s;
}

static void shape_of(const char *text, kevo_syms *out)
{
    kevo_err err;
    kevo_err_clear(&err);
    const kevo_op *op = kevo_op_find("ikbo_lce");
    assert_non_null(op);
    kevo_status st = op->parse_shape(text, out, &err);
    if (st)
        print_error("shape '%s': %s\n", text ? text : "(default)", err.msg);
    assert_int_equal(st, KEVO_OK);
}

static kevo_limits h100(void)
{
    kevo_limits lim;
    kevo_err err;
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    return lim;
}

/* cfg = default with "K=V,K=V" applied. */
static void config_of(const kevo_space *s, const char *params, kevo_config *cfg)
{
    assert_true(tu_config_of(s, params, cfg));
}

static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* ---- the real families ---- */

static void test_load_lce_mma(void **state)
{
    (void)state;
    kevo_space *s = load_family("lce_mma");
    assert_string_equal(s->family, "lce_mma");
    assert_string_equal(s->op, "ikbo_lce");
    assert_string_equal(s->source_name, "lce_mma.cu");
    assert_non_null(s->source);
    assert_non_null(strstr(s->source, "lce_user_gemm"));
    assert_true(strlen(s->description) > 0);

    static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a"};
    assert_int_equal(s->narchs, 6);
    for (int i = 0; i < 6; i++)
        assert_string_equal(s->archs[i], archs[i]);
    assert_true(kevo_space_has_arch(s, "sm_90a"));
    assert_true(kevo_space_has_arch(s, "sm_80"));
    assert_true(kevo_space_has_arch(s, "sm_100a")); /* mma.sync and cp.async build there too */
    assert_false(kevo_space_has_arch(s, "sm_100"));
    assert_false(kevo_space_has_arch(s, "sm_9"));

    static const char *const names[] = {"BM", "BN", "BK", "WARPS_M", "WARPS_N",
                                        "STAGES", "ALIGN", "FUSE", "EPI", "RASTER"};
    static const int nvalues[] = {7, 3, 2, 3, 4, 5, 2, 2, 2, 2};
    assert_int_equal(s->nparams, 10);
    for (int i = 0; i < 10; i++) {
        assert_string_equal(s->params[i].name, names[i]);
        assert_int_equal(s->params[i].nvalues, nvalues[i]);
        assert_int_equal(kevo_space_param_index(s, names[i]), i);
    }
    assert_int_equal(kevo_space_param_index(s, "NOPE"), -1);
    assert_int_equal(kevo_space_param_index(s, "bm"), -1);
    static const int64_t bm[] = {64, 96, 112, 128, 192, 224, 256};
    for (int i = 0; i < 7; i++)
        assert_int_equal(s->params[0].values[i], bm[i]);

    static const char *const axes[] = {"align", "fuse", "epilogue", "stages", "retile", "bk", "swizzle"};
    static const int axis_n[] = {1, 1, 1, 1, 4, 1, 1};
    assert_int_equal(s->naxes, 7);
    for (int i = 0; i < 7; i++) {
        assert_string_equal(s->axes[i].op, axes[i]);
        assert_int_equal(s->axes[i].nparams, axis_n[i]);
    }
    /* retile = BM, BN, WARPS_M, WARPS_N */
    assert_int_equal(s->axes[4].params[0], 0);
    assert_int_equal(s->axes[4].params[1], 1);
    assert_int_equal(s->axes[4].params[2], 3);
    assert_int_equal(s->axes[4].params[3], 4);
    assert_int_equal(s->axes[3].params[0], 5); /* stages -> STAGES */
    assert_int_equal(s->axes[6].params[0], 9); /* swizzle -> RASTER */

    assert_int_equal(s->nlets, 5);
    assert_string_equal(s->lets[0].name, "threads");
    assert_string_equal(s->lets[4].name, "smem");
    assert_int_equal(s->nrequires, 2);
    assert_int_equal(s->nconstraints, 9);
    assert_string_equal(s->constraints[0].why, "warp tile rows must be a multiple of 16");
    assert_int_equal(s->nlaunches, 3);
    assert_string_equal(s->launches[0].entry, "lce_user_gemm");
    assert_string_equal(s->launches[1].entry, "lce_cand_gemm");
    assert_string_equal(s->launches[2].entry, "lce_bcast_add");
    assert_null(s->launches[0].when);
    assert_non_null(s->launches[2].when);
    assert_int_equal(s->ntmaps, 0);
    assert_non_null(s->pad_k);
    assert_non_null(s->workspace);

    kevo_config cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    kevo_space_default(s, &cfg);
    static const int64_t def[] = {128, 128, 32, 2, 2, 2, 0, 0, 0, 0};
    for (int i = 0; i < 10; i++)
        assert_int_equal(cfg.v[i], def[i]);
    for (int i = 10; i < KEVO_MAX_PARAMS; i++)
        assert_int_equal(cfg.v[i], 0); /* unused slots zeroed */
    char str[256];
    kevo_config_str(s, &cfg, str, sizeof str);
    assert_string_equal(str, "BM=128 BN=128 BK=32 WARPS_M=2 WARPS_N=2 STAGES=2 ALIGN=0 FUSE=0 EPI=0 RASTER=0");
    kevo_space_free(s);
}

static void test_load_lce_wgmma(void **state)
{
    (void)state;
    kevo_space *s = load_family("lce_wgmma");
    assert_string_equal(s->family, "lce_wgmma");
    assert_string_equal(s->op, "ikbo_lce");
    assert_string_equal(s->source_name, "lce_wgmma.cu");
    assert_int_equal(s->narchs, 1);
    assert_string_equal(s->archs[0], "sm_90a");
    assert_false(kevo_space_has_arch(s, "sm_90"));

    static const char *const names[] = {"BN", "CONSUMERS", "STAGES", "EPI", "RASTER"};
    static const int nvalues[] = {4, 2, 7, 2, 2};
    assert_int_equal(s->nparams, 5);
    for (int i = 0; i < 5; i++) {
        assert_string_equal(s->params[i].name, names[i]);
        assert_int_equal(s->params[i].nvalues, nvalues[i]);
    }
    static const char *const axes[] = {"stages", "retile", "epilogue", "swizzle"};
    static const int axis_n[] = {1, 2, 1, 1};
    assert_int_equal(s->naxes, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(s->axes[i].op, axes[i]);
        assert_int_equal(s->axes[i].nparams, axis_n[i]);
    }
    assert_int_equal(s->nlets, 6);
    assert_string_equal(s->lets[0].name, "BM");
    assert_int_equal(s->nrequires, 3);
    assert_int_equal(s->nconstraints, 5);
    assert_int_equal(s->nlaunches, 2);
    assert_int_equal(s->ntmaps, 4);
    assert_string_equal(s->tmaps[0].tensor, "w_user");
    assert_string_equal(s->tmaps[1].tensor, "w_cand");
    assert_string_equal(s->tmaps[2].tensor, "e_user");
    assert_string_equal(s->tmaps[3].tensor, "e_cand");
    for (int i = 0; i < 4; i++)
        assert_string_equal(kevo_expr_text(s->tmaps[i].swizzle), "128");

    kevo_config cfg;
    kevo_space_default(s, &cfg);
    static const int64_t def[] = {256, 2, 3, 1, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(cfg.v[i], def[i]);
    kevo_space_free(s);
}

/* ---- arch lists (the limits themselves: test_arch) ---- */

/* An --arch list: names known, none empty or twice, in the order given. */
/* kv_list_next, the comma-list walker --arch, --family, --generators and
 * --llm-model share: every item, empty ones included, and nothing after. */
static void test_list_next(void **state)
{
    (void)state;
    static const struct {
        const char *list, *items;
    } cases[] = {{"a,,bc,", "a||bc|"}, {"", ""}, {"one", "one"}, {",", "|"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[32] = "";
        size_t len, n = 0;
        int k = 0;
        for (const char *p = cases[i].list, *item; kv_list_next(&p, &item, &len); k++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%.*s", k ? "|" : "", (int)len, item);
        assert_string_equal(got, cases[i].items);
    }
    const char *end = NULL, *item;
    size_t len;
    assert_false(kv_list_next(&end, &item, &len));
}

static void test_arch_list(void **state)
{
    (void)state;
    char names[KEVO_ARCH_LIST_MAX][16];
    int n = -1;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_arch_list_parse("sm_100a,sm_80,sm_90a", names, KEVO_ARCH_LIST_MAX, &n, &err), KEVO_OK);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "sm_100a");
    assert_string_equal(names[1], "sm_80");
    assert_string_equal(names[2], "sm_90a");
    assert_int_equal(kevo_arch_list_parse("sm_86", names, KEVO_ARCH_LIST_MAX, &n, &err), KEVO_OK);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "sm_86");
    static const struct {
        const char *list, *why;
    } bad[] = {
        {"sm_80,sm_99", "unknown arch 'sm_99' (known: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a)"},
        {"sm_80,sm_90a,sm_80", "sm_80 is named twice"},
        {"sm_80,,sm_90a", "an empty item"},
        {"sm_80,", "an empty item"},
        {",sm_80", "an empty item"},
        {"", "no architecture named"},
        {"sm_80,sm_90a_and_a_very_long_name", "unknown arch 'sm_90a_and_a_very_long_name'"},
        {"SM_80", "unknown arch 'SM_80'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kevo_err_clear(&err);
        assert_int_equal(kevo_arch_list_parse(bad[i].list, names, KEVO_ARCH_LIST_MAX, &n, &err), KEVO_ERR_ARG);
        if (!strstr(err.msg, bad[i].why))
            print_error("'%s': %s\n", bad[i].list, err.msg);
        assert_non_null(strstr(err.msg, bad[i].why));
    }
    assert_int_equal(kevo_arch_list_parse("sm_80,sm_86,sm_89", names, 2, &n, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "more than 2"));
}

/* A cubin is loaded only on a device of exactly its architecture. */
static void test_arch_runs_on(void **state)
{
    (void)state;
    static const struct {
        const char *arch;
        int major, minor;
        bool runs;
    } cases[] = {
        {"sm_90a", 9, 0, true},   {"sm_90", 9, 0, true},     {"sm_80", 8, 0, true},    {"sm_86", 8, 6, true},
        {"sm_89", 8, 9, true},    {"sm_100a", 10, 0, true},  {"sm_80", 8, 6, false},   {"sm_80", 9, 0, false},
        {"sm_90a", 10, 0, false}, {"sm_90a", 8, 9, false},   {"sm_86", 8, 9, false},   {"sm_89", 9, 0, false},
        {"sm_100a", 9, 0, false}, {"sm_100a", 10, 3, false}, {"sm_100a", 12, 0, false}, {"sm_90a", 0, 90, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kevo_limits lim;
        assert_int_equal(kevo_limits_for_arch(cases[i].arch, &lim, NULL), KEVO_OK);
        if (kevo_arch_runs_on(&lim, cases[i].major, cases[i].minor) != cases[i].runs)
            print_error("%s on %d.%d\n", cases[i].arch, cases[i].major, cases[i].minor);
        assert_int_equal(kevo_arch_runs_on(&lim, cases[i].major, cases[i].minor), cases[i].runs);
    }
    char names[64];
    kevo_arch_names_for(9, 0, names, sizeof names);
    assert_string_equal(names, "sm_90, sm_90a");
    kevo_arch_names_for(10, 0, names, sizeof names);
    assert_string_equal(names, "sm_100a");
    kevo_arch_names_for(7, 5, names, sizeof names);
    assert_string_equal(names, "");
    kevo_arch_names_for(9, 0, names, 8); /* cut, still a string */
    assert_true(strlen(names) < 8);
}

/* ---- shape support ---- */

static void test_supports(void **state)
{
    (void)state;
    kevo_space *mma = load_family("lce_mma");
    kevo_space *wg = load_family("lce_wgmma");
    kevo_limits lim = h100();
    kevo_syms shape;
    kevo_err err;
    kevo_err_clear(&err);

    shape_of(NULL, &shape);
    assert_int_equal(kevo_space_supports(mma, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_OK);
    assert_int_equal(kevo_space_supports(wg, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_OK);
    assert_int_equal(kevo_space_supports(mma, &shape, &lim, KEVO_DTYPE_BF16, &err), KEVO_OK);

    shape_of("N=100", &shape);
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_supports(mma, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_ERR_UNSUPPORTED);
    assert_int_equal(err.status, KEVO_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "'lce_mma'"));
    assert_non_null(strstr(err.msg, "N must be a multiple of 8"));
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_supports(wg, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "N must be a multiple of 8"));

    /* lce_wgmma needs sm >= 90: the sm_80 limits reject it, lce_mma is fine */
    shape_of(NULL, &shape);
    kevo_limits a100;
    assert_int_equal(kevo_limits_for_arch("sm_80", &a100, &err), KEVO_OK);
    assert_int_equal(kevo_space_supports(mma, &shape, &a100, KEVO_DTYPE_F16, &err), KEVO_OK);
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_supports(wg, &shape, &a100, KEVO_DTYPE_F16, &err), KEVO_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "WGMMA and TMA need sm_90a"));

    kevo_space_free(mma);
    kevo_space_free(wg);
}

/* ---- constraints ---- */

static void expect_rejected(const kevo_space *s, const kevo_syms *shape, const char *params, const char *why_part)
{
    kevo_limits lim = h100();
    kevo_config cfg;
    config_of(s, params, &cfg);
    char why[256] = "";
    int r = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &cfg, why, sizeof why);
    if (r != 0 || !strstr(why, why_part))
        print_error("%s {%s}: check %d '%s', want 0 '%s'\n", s->family, params, r, why, why_part);
    assert_int_equal(r, 0);
    assert_non_null(strstr(why, why_part));
}

static void expect_valid(const kevo_space *s, const kevo_syms *shape, const char *params)
{
    kevo_limits lim = h100();
    kevo_config cfg;
    config_of(s, params, &cfg);
    char why[256] = "";
    int r = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &cfg, why, sizeof why);
    if (r != 1)
        print_error("%s {%s}: check %d '%s', want valid\n", s->family, params ? params : "default", r, why);
    assert_int_equal(r, 1);
}

static void test_check(void **state)
{
    (void)state;
    kevo_space *s = load_family("lce_mma");
    kevo_syms shape;
    shape_of(NULL, &shape);

    expect_valid(s, &shape, NULL);
    /* bf16 too */
    {
        kevo_limits lim = h100();
        kevo_config cfg;
        kevo_space_default(s, &cfg);
        char why[256];
        assert_int_equal(kevo_space_check(s, &shape, &lim, KEVO_DTYPE_BF16, &cfg, why, sizeof why), 1);
    }
    /* BM=64 with 4 warps down M gives 16-row warp tiles: allowed (the brief's
     * example of a rule-1 violation is in fact valid) */
    expect_valid(s, &shape, "BM=64,WARPS_M=4");
    /* BM=96 with 4 warps: 24-row warp tiles */
    expect_rejected(s, &shape, "BM=96,WARPS_M=4", "warp tile rows must be a multiple of 16");
    expect_rejected(s, &shape, "BM=112,WARPS_M=2", "warp tile rows must be a multiple of 16");
    /* BN=64 with 8 warps across N: 8-column warp tiles */
    expect_rejected(s, &shape, "BN=64,WARPS_N=8", "warp tile columns must be a multiple of 16");
    /* 64x64 tile over 8 warps: 16 accumulators per thread */
    expect_rejected(s, &shape, "BM=64,BN=64,WARPS_N=4", "accumulators per thread outside 32..128");
    /* 256x256 over 4 warps: 512 accumulators */
    expect_rejected(s, &shape, "BM=256,BN=256", "accumulators per thread outside 32..128");
    /* 256x256 over 16 warps: 128 accumulators but 512 x (128 + 96) registers > 64K */
    expect_rejected(s, &shape, "BM=256,BN=256,WARPS_M=4,WARPS_N=4", "register file");
    /* BM=256,BN=256,BK=64,STAGES=6 never reaches the shared-memory rule (the
     * register-file rule fails first for any warp layout: BM*BN alone is 64K);
     * 128x256 tiles over 8 warps do: 6 * (128*64 + 64*256) * 2 = 294912 > 232448 */
    expect_rejected(s, &shape, "BM=256,BN=256,BK=64,STAGES=6,WARPS_M=4,WARPS_N=8", "register file");
    expect_rejected(s, &shape, "BM=128,BN=256,BK=64,STAGES=6,WARPS_M=2,WARPS_N=4",
                    "shared memory over the device's per-block limit");
    /* one stage fewer: 5 * 49152 = 245760 still over; 4 stages 196608 fits */
    expect_rejected(s, &shape, "BM=128,BN=256,BK=64,STAGES=5,WARPS_M=2,WARPS_N=4", "shared memory over");
    expect_valid(s, &shape, "BM=128,BN=256,BK=64,STAGES=4,WARPS_M=2,WARPS_N=4");
    /* values outside the domain */
    expect_rejected(s, &shape, "BM=100", "BM=100 is not in its domain");
    expect_rejected(s, &shape, "STAGES=7", "STAGES=7 is not in its domain");
    expect_rejected(s, &shape, "FUSE=2", "FUSE=2 is not in its domain");

    /* shape-dependent rules */
    kevo_syms small;
    shape_of("M=16", &small);
    expect_rejected(s, &small, NULL, "BM far larger than M wastes the tile");
    expect_valid(s, &small, "BM=64,WARPS_M=1,BN=128,WARPS_N=2"); /* 64 <= 16 + 48 */
    shape_of("N=64", &small);
    expect_rejected(s, &small, NULL, "BN larger than N wastes the tile");

    /* a tiny why buffer truncates, never overflows */
    {
        kevo_limits lim = h100();
        kevo_config cfg;
        config_of(s, "BM=96,WARPS_M=4", &cfg);
        char why[8];
        memset(why, 'x', sizeof why);
        assert_int_equal(kevo_space_check(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, why, 6), 0);
        assert_string_equal(why, "warp ");
        assert_int_equal(why[6], 'x');
    }
    kevo_space_free(s);

    kevo_space *w = load_family("lce_wgmma");
    expect_valid(w, &shape, NULL);
    expect_valid(w, &shape, "BN=128,CONSUMERS=1,EPI=0");
    /* BN=256, 8 stages: 8 * 384 * 64 * 2 = 393216 */
    expect_rejected(w, &shape, "STAGES=8", "shared memory over the device's per-block limit");
    expect_rejected(w, &shape, "BN=96", "BN=96 is not in its domain");
    shape_of("N=64", &small);
    expect_rejected(w, &small, "BN=128", "BN larger than N wastes the tile");
    kevo_space_free(w);
}

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
    /* and where it does not apply: N a multiple of the tile's rows (the
     * plain tiling), N not a multiple of 32, ping-pong, the TMA-less
     * epilogue, a cluster of one candidate's tiles; one launch, a cluster
     * of two candidates' (CLB=1) and three warp groups of two whole
     * candidates do */
    static const struct {
        const char *shape, *params;
        int valid;
    } stacks[] = {
        {"B=1000,M=345,N=256,Ku=800,Kc=1100,ratio=25", "", 0},
        {"B=1000,M=345,N=72,Ku=800,Kc=1100,ratio=25", "", 0},
        {NULL, "PINGPONG=1", 0},
        {NULL, "EPI=0", 0},
        {NULL, "FUSE=1", 1},
        {NULL, "CLUSTER=2,CLB=0", 0},
        {NULL, "CLUSTER=2,CLB=1", 1},
        {NULL, "CONSUMERS=3,BN=128,TRIM=0", 1},
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

static void test_config_json(void **state)
{
    (void)state;
    kevo_space *s = load_family("lce_mma");
    kevo_config cfg, back;
    config_of(s, "BM=192,BN=64,WARPS_M=4,STAGES=5,ALIGN=1,RASTER=1", &cfg);
    kv_buf j;
    kv_buf_init(&j);
    assert_int_equal(kevo_config_json(s, &cfg, &j), KEVO_OK);
    assert_string_equal(j.data, "{\"BM\":192,\"BN\":64,\"BK\":32,\"WARPS_M\":4,\"WARPS_N\":2,\"STAGES\":5,"
                                "\"ALIGN\":1,\"FUSE\":0,\"EPI\":0,\"RASTER\":1}");
    kevo_err err;
    kevo_err_clear(&err);
    memset(&back, 0x44, sizeof back);
    assert_int_equal(kevo_config_parse_json(s, j.data, &back, &err), KEVO_OK);
    assert_memory_equal(back.v, cfg.v, sizeof cfg.v);

    /* key order does not matter; extra keys are ignored */
    assert_int_equal(kevo_config_parse_json(s,
                                            "{\"RASTER\":1,\"EPI\":0,\"FUSE\":0,\"ALIGN\":1,\"STAGES\":5,"
                                            "\"WARPS_N\":2,\"WARPS_M\":4,\"BK\":32,\"BN\":64,\"BM\":192,\"X\":3}",
                                            &back, &err),
                     KEVO_OK);
    assert_memory_equal(back.v, cfg.v, sizeof cfg.v);

    /* lacking a param */
    kevo_err_clear(&err);
    assert_int_equal(kevo_config_parse_json(s,
                                            "{\"BM\":192,\"BN\":64,\"BK\":32,\"WARPS_M\":4,\"WARPS_N\":2,"
                                            "\"STAGES\":5,\"ALIGN\":1,\"FUSE\":0,\"EPI\":0}",
                                            &back, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'RASTER'"));
    /* a param that is not a number */
    assert_int_equal(kevo_config_parse_json(s,
                                            "{\"BM\":\"192\",\"BN\":64,\"BK\":32,\"WARPS_M\":4,\"WARPS_N\":2,"
                                            "\"STAGES\":5,\"ALIGN\":1,\"FUSE\":0,\"EPI\":0,\"RASTER\":0}",
                                            &back, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'BM'"));
    assert_int_equal(kevo_config_parse_json(s, "[1,2]", &back, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_config_parse_json(s, "{", &back, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_config_parse_json(s, "", &back, &err), KEVO_ERR_PARSE);
    kv_buf_release(&j);

    /* a param the family gained later: configurations stored without it load with its "absent" value */
    kevo_space *ws = load_family("lce_ws");
    int bk = kevo_space_param_index(ws, "BK");
    assert_true(bk >= 0 && ws->params[bk].has_absent && ws->params[bk].absent == 64);
    assert_int_equal(kevo_config_parse_json(ws,
                                            "{\"BN\":256,\"CONSUMERS\":2,\"PINGPONG\":0,\"STAGES\":4,"
                                            "\"CLUSTER\":2,\"FUSE\":1,\"EPI\":1,\"RASTER\":0,\"URES\":1}",
                                            &back, &err),
                     KEVO_OK);
    assert_int_equal(back.v[bk], 64);
    /* but not one without an "absent" value */
    assert_int_equal(kevo_config_parse_json(ws,
                                            "{\"BN\":256,\"CONSUMERS\":2,\"PINGPONG\":0,\"STAGES\":4,"
                                            "\"CLUSTER\":2,\"FUSE\":1,\"EPI\":1,\"URES\":1}",
                                            &back, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'RASTER'"));
    kevo_space_free(ws);

    /* the wgmma family too */
    kevo_space *w = load_family("lce_wgmma");
    config_of(w, "BN=192,CONSUMERS=1,STAGES=7", &cfg);
    kv_buf_init(&j);
    assert_int_equal(kevo_config_json(w, &cfg, &j), KEVO_OK);
    assert_string_equal(j.data, "{\"BN\":192,\"CONSUMERS\":1,\"STAGES\":7,\"EPI\":1,\"RASTER\":0}");
    memset(&back, 0, sizeof back);
    assert_int_equal(kevo_config_parse_json(w, j.data, &back, &err), KEVO_OK);
    assert_memory_equal(back.v, cfg.v, 5 * sizeof cfg.v[0]);
    kv_buf_release(&j);
    kevo_space_free(w);
    kevo_space_free(s);
}

/* ---- render ---- */

static void test_render(void **state)
{
    (void)state;
    static const char *const fams[] = {"lce_mma", "lce_wgmma"};
    const char *abi = "/* ABI TEXT 12345 */\nstruct abi_marker { int x; };";
    for (int f = 0; f < 2; f++) {
        kevo_space *s = load_family(fams[f]);
        for (int dt = 0; dt < 2; dt++) {
            kevo_config cfg;
            kevo_space_default(s, &cfg);
            if (f == 0)
                config_of(s, "BM=192,STAGES=4", &cfg);
            kv_buf src;
            kv_buf_init(&src);
            kevo_err err;
            assert_int_equal(kevo_space_render(s, &cfg, (kevo_dtype)dt, abi, &src, &err), KEVO_OK);
            /* the prelude's system headers first (lce_wgmma's: <cuda/ptx>), then the family line */
            char first[512];
            int w = 0;
            for (int i = 0; i < s->nprelude; i++)
                w += snprintf(first + w, sizeof first - (size_t)w, "#include <%s>\n", s->prelude[i]);
            snprintf(first + w, sizeof first - (size_t)w, "// kevo: family %s, generated from %s.cu; do not edit\n",
                     fams[f], fams[f]);
            assert_int_equal(s->nprelude > 0, f == 1);
            assert_int_equal(strncmp(src.data, first, strlen(first)), 0);
            for (int i = 0; i < s->nparams; i++) {
                char line[96];
                snprintf(line, sizeof line, "\n#define %s %lld\n", s->params[i].name, (long long)cfg.v[i]);
                if (!strstr(src.data, line))
                    print_error("missing '%s'\n", line + 1);
                assert_non_null(strstr(src.data, line));
            }
            if (f == 0) {
                assert_non_null(strstr(src.data, "\n#define BM 192\n"));
                assert_non_null(strstr(src.data, "\n#define STAGES 4\n"));
                assert_non_null(strstr(src.data, "\n#define BN 128\n"));
            } else {
                assert_non_null(strstr(src.data, "\n#define BN 256\n"));
                assert_non_null(strstr(src.data, "\n#define CONSUMERS 2\n"));
            }
            assert_non_null(strstr(src.data, dt ? "\n#define DTYPE_BF16 1\n" : "\n#define DTYPE_BF16 0\n"));
            const char *a = strstr(src.data, abi);
            assert_non_null(a);
            char line[64];
            snprintf(line, sizeof line, "\n#line 1 \"%s.cu\"\n", fams[f]);
            const char *l = strstr(src.data, line);
            assert_non_null(l);
            assert_true(a < l); /* ABI before the template */
            /* the template text follows the #line directive unchanged (after
             * the headers the family includes, each behind its own) */
            assert_true(l + 1 >= src.data + src.len - strlen(s->source));
            assert_string_equal(src.data + src.len - strlen(s->source), s->source);
            char *body = NULL;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/templates/%s.cu", home(), fams[f]);
            assert_int_equal(kv_read_file(path, &body, NULL, &err), KEVO_OK);
            assert_non_null(strstr(l + strlen(line), body));
            free(body);
            if (f == 1) { /* lce_wgmma includes hopper.cuh, ahead of its source */
                const char *h = strstr(src.data, "\n#line 1 \"hopper.cuh\"\n");
                assert_non_null(h);
                assert_true(a < h && h < l);
            }
            kv_buf_release(&src);
        }
        kevo_space_free(s);
    }
}

/* ---- malformed space files ---- */

static char tmpdir[64];

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo_test_space_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    write_text(tmpdir, "dummy.cu", "extern \"C\" __global__ void k() {}\n");
    return 0;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    tu_rm_tree(tmpdir);
    return 0;
}

/* A minimal valid space file with one piece replaced. */
#define SP_HEAD "{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n"
#define SP_PARAMS "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 2}],\n"
#define SP_LAUNCH "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]"

static kevo_status load_text(const char *name, const char *text, kevo_space **out, kevo_err *err)
{
    write_text(tmpdir, name, text);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    kevo_err_clear(err);
    *out = (kevo_space *)(uintptr_t)1; /* must be reset */
    kevo_status st = kevo_space_load(path, out, err);
    unlink(path);
    return st;
}

static void expect_load_error(const char *text, kevo_status want, const char *msg_part)
{
    kevo_space *s;
    kevo_err err;
    kevo_status st = load_text("bad.json", text, &s, &err);
    if (st != want || !strstr(err.msg, msg_part))
        print_error("load -> %d '%s', want %d '%s'\n--- %s\n", (int)st, err.msg, (int)want, msg_part, text);
    assert_int_equal(st, want);
    assert_null(s);
    assert_int_equal(err.status, want);
    assert_non_null(strstr(err.msg, msg_part));
    /* a parse error names the space file; an I/O error names the file it could not read */
    if (want == KEVO_ERR_PARSE)
        assert_non_null(strstr(err.msg, "bad.json"));
}

/* "prelude": system header names reach generated source between angle
 * brackets, so only plain names pass; the rendered source begins with them,
 * ahead of the params' #defines. */
static void test_prelude(void **state)
{
    (void)state;
    static const char *const bad[] = {"[\"cuda/../x.h\"]", "[\"/etc/passwd\"]", "[\"a>b\"]",  "[\"x\\ny\"]",
                                      "[\".hidden\"]",    "[\"\"]",            "[1]",        "\"cuda/ptx\"",
                                      "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]"};
    char text[1024];
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        snprintf(text, sizeof text, SP_HEAD "\"prelude\": %s,\n" SP_PARAMS SP_LAUNCH "}", bad[i]);
        kevo_space *p = (kevo_space *)1;
        kevo_err err;
        if (kevo_space_load_inline(text, "__global__ void k() {}", "x", &p, &err) != KEVO_ERR_PARSE)
            print_error("prelude %s was taken\n", bad[i]);
        assert_null(p);
        assert_non_null(strstr(err.msg, "prelude"));
    }
    snprintf(text, sizeof text,
             SP_HEAD "\"prelude\": [\"cuda_fp16.h\", \"cuda/ptx\"],\n"
                     "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n" SP_LAUNCH "}");
    kevo_space *p = NULL;
    kevo_err err;
    assert_int_equal(kevo_space_load_inline(text, "extern \"C\" __global__ void k() {}", "x", &p, &err), KEVO_OK);
    kevo_config cfg;
    kevo_space_default(p, &cfg);
    kv_buf src;
    kv_buf_init(&src);
    assert_int_equal(kevo_space_render(p, &cfg, KEVO_DTYPE_F16, NULL, &src, &err), KEVO_OK);
    const char *want = "#include <cuda_fp16.h>\n#include <cuda/ptx>\n// kevo: family ";
    assert_int_equal(strncmp(src.data, want, strlen(want)), 0);
    assert_true(strstr(src.data, "#define A 2\n") > strstr(src.data, "// kevo: family"));
    kv_buf_release(&src);
    kevo_space_free(p);
}

/* A template configuration as a one-point space (what an LLM candidate
 * starts from): it loads inline, renders the same device code and plans the
 * same launches as the family at that configuration, at two shapes; a
 * space with two values or an axis is no one-point space. */
static void test_point_space(void **state)
{
    (void)state;
    static const char *const fams[] = {"lce_mma", "lce_ws"};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        kevo_space *s = load_family(fams[f]);
        kevo_config cfg;
        kevo_space_default(s, &cfg);
        kv_buf j;
        kv_buf_init(&j);
        kevo_err err;
        assert_int_equal(kevo_space_point_json(s, &cfg, "llm_0000000000ab", &j, &err), KEVO_OK);
        kevo_space *p = NULL;
        assert_int_equal(kevo_space_load_inline(j.data, s->source, "llm_0000000000ab", &p, &err), KEVO_OK);
        assert_string_equal(p->family, "llm_0000000000ab");
        assert_int_equal(p->nparams, s->nparams);
        assert_int_equal(p->naxes, 0);
        kevo_config pc;
        kevo_space_default(p, &pc);
        assert_memory_equal(pc.v, cfg.v, (size_t)s->nparams * sizeof cfg.v[0]);
        kv_buf a, b;
        kv_buf_init(&a);
        kv_buf_init(&b);
        assert_int_equal(kevo_space_render(s, &cfg, KEVO_DTYPE_F16, "//abi", &a, &err), KEVO_OK);
        assert_int_equal(kevo_space_render(p, &pc, KEVO_DTYPE_F16, "//abi", &b, &err), KEVO_OK);
        /* the same prelude, and the same after the line that names the family */
        const char *fa = strstr(a.data, "// kevo: family "), *fb = strstr(b.data, "// kevo: family ");
        assert_true(fa && fb && fa - a.data == fb - b.data);
        assert_memory_equal(a.data, b.data, (size_t)(fa - a.data));
        assert_string_equal(strchr(fa, '\n'), strchr(fb, '\n'));
        static const char *const shapes[] = {NULL, "B=300,M=200,N=136,Ku=96,Kc=72,ratio=10"};
        for (int k = 0; k < 2; k++) {
            kevo_syms shape;
            shape_of(shapes[k], &shape);
            kevo_limits lim = h100();
            kevo_plan x, y;
            kevo_status sx = kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &x, &err);
            kevo_status sy = kevo_space_plan(p, &shape, &lim, KEVO_DTYPE_F16, &pc, &y, &err);
            assert_int_equal(sx, sy);
            if (!sx)
                assert_memory_equal(&x, &y, sizeof x);
        }
        kv_buf_release(&a);
        kv_buf_release(&b);
        kv_buf_release(&j);
        kevo_space_free(p);
        kevo_space_free(s);
    }
    kevo_space *p = (kevo_space *)1;
    kevo_err err;
    assert_int_equal(kevo_space_load_inline(SP_HEAD SP_PARAMS SP_LAUNCH "}", "__global__ void k() {}", "x", &p, &err),
                     KEVO_ERR_PARSE);
    assert_null(p);
    assert_non_null(strstr(err.msg, "one value"));
    assert_int_equal(kevo_space_load_inline(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n"
                                            "\"axes\": {\"t\": [\"A\"]},\n" SP_LAUNCH "}",
                                            "__global__ void k() {}", "x", &p, &err),
                     KEVO_ERR_PARSE);
    assert_int_equal(kevo_space_load_inline(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n" SP_LAUNCH "}",
                                            "extern \"C\" __global__ void k() {}", "x", &p, &err),
                     KEVO_OK);
    assert_string_equal(p->source, "extern \"C\" __global__ void k() {}");
    kevo_space_free(p);
}

/* Text of a space file reaches the terminal (a refused shape prints its
 * why): escape sequences and line breaks are gone once it is loaded. */
static void test_space_text_clean(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    const char *text = "{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", "
                       "\"archs\": [\"sm_90a\"], \"description\": \"d\\u001b[2Jx\",\n" SP_PARAMS
                       "\"requires\": [{\"expr\": \"N % 100000 == 0\", \"why\": \"w\\u001b]0;t\\u0007\\nnext\"}],\n"
                       "\"constraints\": [{\"expr\": \"A > 5\", \"why\": \"c\\u009b31m\"}],\n" SP_LAUNCH "}";
    assert_int_equal(load_text("esc.json", text, &s, &err), KEVO_OK);
    assert_string_equal(s->description, "d [2Jx");
    assert_string_equal(s->requires[0].why, "w ]0;t  next");
    assert_null(strchr(s->constraints[0].why, 0x1b));
    assert_null(strstr(s->constraints[0].why, "\xc2\x9b"));
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    assert_int_equal(kevo_space_supports(s, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_ERR_UNSUPPORTED);
    assert_null(strchr(err.msg, 0x1b));
    assert_null(strchr(err.msg, '\n'));
    kevo_space_free(s);
}

static void test_minimal_space(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json", SP_HEAD SP_PARAMS SP_LAUNCH "}", &s, &err), KEVO_OK);
    assert_non_null(s);
    assert_string_equal(s->family, "fam");
    assert_int_equal(s->nparams, 1);
    assert_int_equal(s->params[0].def, 2);
    assert_int_equal(s->naxes, 0);
    assert_null(s->pad_k);
    assert_null(s->workspace);
    assert_string_equal(s->source, "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    /* plan without pad_k and workspace: zeros */
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    kevo_plan plan;
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 1);
    assert_int_equal(plan.launches[0].grid[0], 2);
    assert_int_equal(plan.workspace_bytes, 0);
    assert_int_equal(plan.pad_k, 0);
    kevo_space_free(s);
    /* no default: the first value */
    assert_int_equal(load_text("ok.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [7, 2, 3]}],\n" SP_LAUNCH "}", &s,
                               &err),
                     KEVO_OK);
    assert_int_equal(s->params[0].def, 7);
    kevo_space_free(s);
}

/* Includes are inlined ahead of the source; enter_from maps a source
 * configuration param by param (0 when a value falls outside the list). */
static void test_include_and_entry(void **state)
{
    (void)state;
    write_text(tmpdir, "common.cuh", "#define COMMON 1\n");
    kevo_space *s, *src;
    kevo_err err;
    assert_int_equal(load_text("src.json",
                               "{\"family\": \"src\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", "
                               "\"archs\": [\"sm_90a\"],\n"
                               "\"params\": [{\"name\": \"S\", \"values\": [1, 2, 3]}],\n"
                               "\"let\": [[\"twice\", \"2 * S\"]],\n" SP_LAUNCH "}",
                               &src, &err),
                     KEVO_OK);
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"common.cuh\"],\n"
                                                           "\"enter_from\": [{\"family\": \"src\", \"op\": "
                                                           "\"go\", \"why\": \"w\", \"set\": {\"A\": \"twice - 1\"}}]}",
                               &s, &err),
                     KEVO_OK);
    assert_string_equal(s->source, "#line 1 \"common.cuh\"\n#define COMMON 1\n\n"
                                   "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    assert_int_equal(s->nentries, 1);
    assert_string_equal(s->entries[0].from, "src");
    assert_string_equal(s->entries[0].op, "go");
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config in, out;
    char why[256];
    kevo_space_default(src, &in);
    in.v[0] = 2; /* twice - 1 = 3 */
    assert_int_equal(kevo_space_enter(s, 0, src, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), 1);
    assert_int_equal(out.v[0], 3);
    in.v[0] = 3; /* 5: not a value of A */
    assert_int_equal(kevo_space_enter(s, 0, src, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), 0);
    assert_non_null(strstr(why, "A=5"));
    /* the mapping reads the source's names: through the target it fails */
    assert_int_equal(kevo_space_enter(s, 0, s, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), -1);
    assert_non_null(strstr(err.msg, "twice"));
    kv_buf src_text;
    kv_buf_init(&src_text);
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    assert_int_equal(kevo_space_render(s, &cfg, KEVO_DTYPE_F16, NULL, &src_text, &err), KEVO_OK);
    assert_non_null(strstr(src_text.data, "#define A 2\n"));
    assert_true(strstr(src_text.data, "#define COMMON 1") < strstr(src_text.data, "__global__"));
    kv_buf_release(&src_text);
    kevo_space_free(s);
    kevo_space_free(src);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/common.cuh", tmpdir);
    unlink(path);
}

/* An include may name a file one folder down ("sm90/ring.cuh"); its #line
 * marker keeps the name.  Deeper paths, "..", hidden or empty parts and odd
 * characters are refused as a name outside the folder is. */
static void test_include_subfolder(void **state)
{
    (void)state;
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm90", tmpdir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_text(sub, "ring.cuh", "#define RING 1\n");
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("sub.json", SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"sm90/ring.cuh\"]}", &s, &err),
                     KEVO_OK);
    assert_string_equal(s->source, "#line 1 \"sm90/ring.cuh\"\n#define RING 1\n\n"
                                   "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    kevo_space_free(s);
    char long_name[260];
    memset(long_name, 'a', 201);
    memcpy(long_name + 201, ".cuh", 5);
    const char *bad[] = {"../x.cuh",       "/etc/passwd",    "sm90/../x.cuh", "sm90/x/y.cuh", ".hidden",
                         "sm90/.ring.cuh", "sm90//ring.cuh", "sm90/",         "/ring.cuh",    "sm90:ring.cuh",
                         "sm90/ring..cuh", "-x.cuh",         "sm90/-x.cuh",   "a b.cuh",      long_name};
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        char text[1024];
        snprintf(text, sizeof text, SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"%s\"]}", bad[i]);
        expect_load_error(text, KEVO_ERR_PARSE, "include 0 must name a file beside the space file or one folder down");
    }
    /* a FIFO one folder down is not read (it would block) */
    char fifo[PATH_MAX + 32];
    snprintf(fifo, sizeof fifo, "%s/fifo.cuh", sub);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"sm90/fifo.cuh\"]}", KEVO_ERR_IO, "fifo.cuh");
    unlink(fifo);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ring.cuh", sub);
    unlink(path);
    rmdir(sub);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_load_error("this is not json", KEVO_ERR_PARSE, "malformed JSON");
    expect_load_error("[1, 2]", KEVO_ERR_PARSE, "not a JSON object");
    expect_load_error("{\"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "missing \"family\"");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 1]}],\n" SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "param 'A' repeats value 1");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 4}],\n" SP_LAUNCH
                      "}",
                      KEVO_ERR_PARSE, "param 'A' default is not one of its values");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2.5]}],\n" SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "values must be integers");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1]}, {\"name\": \"A\", \"values\": [2]}],\n"
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "param 'A' given twice");
    expect_load_error(SP_HEAD "\"params\": [],\n" SP_LAUNCH "}", KEVO_ERR_PARSE, "\"params\" must be a non-empty");
    expect_load_error(SP_HEAD SP_PARAMS "\"axes\": {\"grow\": [\"A\", \"Z\"]},\n" SP_LAUNCH "}", KEVO_ERR_PARSE,
                      "axis 'grow' names an unknown param");
    expect_load_error(SP_HEAD SP_PARAMS "\"constraints\": [{\"expr\": \"A + * 2\", \"why\": \"w\"}],\n" SP_LAUNCH
                      "}",
                      KEVO_ERR_PARSE, "constraints");
    expect_load_error(SP_HEAD SP_PARAMS "\"let\": [[\"x\", \"A +\"]],\n" SP_LAUNCH "}", KEVO_ERR_PARSE, "x");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": 100}]}",
                      KEVO_ERR_PARSE, "swizzle must be 0, 32, 64 or 128");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64]}]}",
                      KEVO_ERR_PARSE, "\"box\" must be an array of 3");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"sub/dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "must be a file beside the space file");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"../dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "must be a file beside the space file");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"absent.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_IO, "absent.cu");
    expect_load_error("{\"family\": \"not-ident\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "is not an identifier");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [],\n" SP_PARAMS
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "\"archs\"");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": []}", KEVO_ERR_PARSE, "\"launches\"");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": "
                                        "[32, 1, \"1 +\"], \"smem\": 0}]}",
                      KEVO_ERR_PARSE, "block");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": "
                                        "[32, 1, 1]}]}",
                      KEVO_ERR_PARSE, "smem");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"pad_k\": \"((\"}", KEVO_ERR_PARSE, "pad_k");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": \"hopper.cuh\"}", KEVO_ERR_PARSE,
                      "\"include\" must be an array");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"../x.cuh\"]}", KEVO_ERR_PARSE,
                      "include 0 must name a file beside");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"absent.cuh\"]}", KEVO_ERR_IO, "absent.cuh");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\"}]}",
                      KEVO_ERR_PARSE, "must \"set\" each of the 1 params");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"B\": 1}}]}",
                      KEVO_ERR_PARSE, "sets 'B', not a param");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"fam\", \"op\": \"go\", \"set\": {\"A\": 1}}]}",
                      KEVO_ERR_PARSE, "another family's name");
    expect_load_error(SP_HEAD SP_PARAMS "\"axes\": {\"go\": [\"A\"]},\n" SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"A\": 1}}]}",
                      KEVO_ERR_PARSE, "op 'go' is also an axis");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"A\": \"X +\"}}]}",
                      KEVO_ERR_PARSE, "enter_from");

    /* a missing space file */
    kevo_space *s = (kevo_space *)(uintptr_t)1;
    kevo_err err;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/absent.json", tmpdir);
    assert_int_equal(kevo_space_load(path, &s, &err), KEVO_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(err.msg, "absent.json"));
}

/* ---- loader gaps: inputs the loader should refuse but accepts ---- */

/* Load text that must be refused with KEVO_ERR_PARSE; frees what loaded. */
static void expect_refused(const char *text, const char *what)
{
    kevo_space *s = NULL;
    kevo_err err;
    kevo_status st = load_text("gap.json", text, &s, &err);
    if (st != KEVO_ERR_PARSE)
        print_error("%s: loaded (status %d), want KEVO_ERR_PARSE\n", what, (int)st);
    kevo_space_free(s);
    assert_int_equal(st, KEVO_ERR_PARSE);
}

static void test_default_not_integer(void **state)
{
    (void)state;
    /* regression: a fractional default (2.5 over [1, 2, 3]) was once taken as 2 */
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 2.5}],\n" SP_LAUNCH
                   "}",
                   "default 2.5");
}

static void test_swizzle_not_number(void **state)
{
    (void)state;
    /* regression: a swizzle given as a string once read as 0 (no swizzle) and
     * 128.5 as 128; a string is now an expression, so "128" must plan as 128 */
    expect_refused(SP_HEAD SP_PARAMS SP_LAUNCH
                   ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": 128.5}]}",
                   "swizzle 128.5");
    expect_refused(SP_HEAD SP_PARAMS SP_LAUNCH
                   ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": true}]}",
                   "swizzle true");
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"128\"}]}",
                               &s, &err),
                     KEVO_OK);
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    kevo_plan plan;
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
    assert_int_equal(plan.tmaps[0].swizzle, 128);
    kevo_space_free(s);
}

/* A swizzle may be an expression over params and lets (lce_ws: 64-byte
 * swizzle for E boxes of 32 columns); its value is checked when a plan is
 * made, a missing swizzle is none. */
static void test_swizzle_expression(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS "\"let\": [[\"cols\", \"A == 1 ? 32 : 64\"]],\n" SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"e_user\", \"box\": [\"cols\", 64, 1], "
                               "\"swizzle\": \"A == 3 ? 100 : 2 * cols\"},\n"
                               "{\"tensor\": \"out\", \"box\": [64, 64, 1]}]}",
                               &s, &err),
                     KEVO_OK);
    assert_non_null(s->tmaps[0].swizzle);
    assert_null(s->tmaps[1].swizzle);
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_plan plan;
    static const int64_t a[] = {1, 2};
    static const int want[] = {64, 128};
    for (int i = 0; i < 2; i++) {
        kevo_space_default(s, &cfg);
        cfg.v[0] = a[i];
        assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
        assert_int_equal(plan.ntmaps, 2);
        assert_int_equal(plan.tmaps[0].swizzle, want[i]);
        assert_int_equal(plan.tmaps[0].box[0], want[i] / 2);
        assert_int_equal(plan.tmaps[1].swizzle, 0);
        /* the plan's JSON keeps the evaluated value */
        kv_buf j;
        kv_buf_init(&j);
        assert_int_equal(kevo_plan_json(&plan, &j), KEVO_OK);
        kevo_plan back;
        assert_int_equal(kevo_plan_parse_json(j.data, &back, &err), KEVO_OK);
        assert_int_equal(back.tmaps[0].swizzle, want[i]);
        kv_buf_release(&j);
    }
    /* a value TMA has no mode for: refused when the plan is made, saying which */
    kevo_space_default(s, &cfg);
    cfg.v[0] = 3;
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "tmap 'e_user' swizzle = 100"));
    assert_non_null(strstr(err.msg, "not 0, 32, 64 or 128"));
    kevo_space_free(s);

    /* a name the expression does not know: at plan time, naming the map */
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"NOPE\"}]}",
                               &s, &err),
                     KEVO_OK);
    kevo_space_default(s, &cfg);
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "tmap 'w_user' swizzle"));
    kevo_space_free(s);

    /* bad syntax: at load */
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"A ?\"}]}",
                      KEVO_ERR_PARSE, "tmap 'w_user' swizzle");
}

static void test_axis_repeats_param(void **state)
{
    (void)state;
    /* regression: an axis naming a param twice was once accepted, and the
     * neighbourhood then moved that param two steps in one operator */
    expect_refused(SP_HEAD SP_PARAMS "\"axes\": {\"grow\": [\"A\", \"A\"]},\n" SP_LAUNCH "}", "axis [A, A]");
}

/* An axis may be an object: its params and an expression its kept moves hold. */
static void test_axis_keep(void **state)
{
    (void)state;
#define SP_TWO "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 4]}, {\"name\": \"S\", \"values\": [2, 3, 4, 6]}],\n"
    kevo_space *s = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(load_text("keep.json",
                               SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\", \"S\"], \"keep\": \"A * S\"}, "
                                              "\"s\": [\"S\"]},\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_int_equal(s->naxes, 2);
    assert_int_equal(s->axes[0].nparams, 2);
    assert_non_null(s->axes[0].keep);
    assert_null(s->axes[1].keep);
    assert_false(s->axes[0].seed);
    kevo_space_free(s);
    /* a seed axis (search/moves.c seeds the model's best of each of its combinations) */
    assert_int_equal(load_text("seed.json",
                               SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"seed\": true}},\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_true(s->axes[0].seed);
    assert_null(s->axes[0].keep);
    kevo_space_free(s);
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"seed\": 1}},\n" SP_LAUNCH "}",
                   "seed not a boolean");
    /* the model's lets may not shadow a param, a let or a device rate, nor be given twice */
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"A\", \"1\"]], \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let shadowing a param");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"dram_gbs\", \"1\"]], \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let shadowing a rate");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"x\", \"1\"], [\"x\", \"2\"]], \"flops\": \"0\", "
                                  "\"dram_bytes\": \"0\", \"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let given twice");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": {\"x\": \"1\"}, \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "model.let not an array");
    /* refused: keep over one param, a keep that does not parse, an object without params, params not an array */
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"keep\": \"A\"}},\n" SP_LAUNCH "}",
                   "keep with one param");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\", \"S\"], \"keep\": \"A *\"}},\n" SP_LAUNCH "}",
                   "keep that does not parse");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"keep\": \"A * S\"}},\n" SP_LAUNCH "}", "no params");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": \"A\"}},\n" SP_LAUNCH "}", "params a string");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": 3},\n" SP_LAUNCH "}", "an axis that is a number");
#undef SP_TWO
}

static void test_names_shadow_symbols(void **state)
{
    (void)state;
    /* regression: params and lets were once allowed to shadow shape symbols,
     * device limits and params (a param "N" replaced the shape's N in every
     * expression; a let "A" changed what constraints saw, not the source) */
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"N\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the shape symbol N");
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"num_sms\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the limit num_sms");
    expect_refused(SP_HEAD SP_PARAMS "\"let\": [[\"A\", \"5\"]],\n" SP_LAUNCH "}", "let named like param A");
    /* the model's terms see the device's rates under these names */
    expect_refused(SP_HEAD SP_PARAMS "\"let\": [[\"dram_gbs\", \"3000\"]],\n" SP_LAUNCH "}",
                   "let named like the model's rate dram_gbs");
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"peak_gflops\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the model's rate peak_gflops");
}

/* ---- directories ---- */

/* ---- kevo_space_walk: kevo_space_check's answers, re-evaluating only what changed ---- */

/* How walk_matches steps through a family's configurations. */
enum walk_mode {
    WALK_ALL,  /* every configuration, in odometer order (last param fastest) */
    WALK_JUMP, /* every one, and a pseudo-random one between any two, so that many params change at once */
    WALK_SKIP, /* as the search does: past a failed constraint, on to the next value of the last param it
                  names; one configuration of each skipped run is checked to fail too */
};

/* Walk configurations of s in the given mode and require the walk's answer
 * and message to equal kevo_space_check's at every stride-th configuration
 * visited (the walk still sees all of them).  The number of valid
 * configurations. */
static int walk_matches(const kevo_space *s, const kevo_syms *shape, int stride, enum walk_mode mode)
{
    kevo_limits lim = h100();
    kevo_space_walk w;
    kevo_space_walk_init(&w, s, shape, &lim, KEVO_DTYPE_F16);
    int idx[KEVO_MAX_PARAMS] = {0};
    int valid = 0;
    uint64_t rng = 12345;
    for (long k = 0;; k++) {
        kevo_config cfg;
        memset(&cfg, 0, sizeof cfg);
        for (int i = 0; i < s->nparams; i++)
            cfg.v[i] = s->params[i].values[idx[i]];
        int d = s->nparams - 1; /* the odometer digit to step next */
        for (int pass = 0; pass < (mode == WALK_JUMP ? 2 : 1); pass++) {
            kevo_config c = cfg;
            if (pass == 1) /* elsewhere in the space, then back to the odometer next time round */
                for (int i = 0; i < s->nparams; i++)
                    c.v[i] = s->params[i].values[kv_rand_below(&rng, (uint64_t)s->params[i].nvalues)];
            char why[512] = "", why2[512] = "";
            int ok = kevo_space_walk_check(&w, &c, why, sizeof why);
            valid += pass == 0 && ok == 1;
            if (k % stride == 0 || pass == 1) {
                int ok2 = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &c, why2, sizeof why2);
                if (ok != ok2 || strcmp(why, why2) != 0)
                    print_error("%s, configuration %ld (pass %d): walk %d '%s', check %d '%s'\n", s->family, k, pass,
                                ok, why, ok2, why2);
                assert_int_equal(ok, ok2);
                assert_string_equal(why, why2);
            }
            if (mode == WALK_SKIP && ok == 0 && w.fail_level < d) {
                d = w.fail_level;
                for (int i = d + 1; i < s->nparams; i++) /* a skipped one: the same params up to d */
                    c.v[i] = s->params[i].values[kv_rand_below(&rng, (uint64_t)s->params[i].nvalues)];
                int ok2 = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &c, why2, sizeof why2);
                if (ok2 == 1)
                    print_error("%s, configuration %ld: the walk skips past param %d ('%s'), but one it skips is "
                                "valid\n",
                                s->family, k, d, why);
                assert_int_not_equal(ok2, 1);
            }
        }
        if (!kevo_space_step(s, idx, d))
            break;
    }
    return valid;
}

/* Every family of both ops, at their default shapes and others: the walk
 * answers as kevo_space_check does, both when it visits every configuration
 * and when it skips as the search does, and the two count the same valid
 * ones.  lce_ws (149M configurations) is walked only as the search walks it,
 * and compared with kevo_space_check at every 7th configuration visited:
 * its full walk took CI's sanitizer build past its time limit. */
static void test_walk_families(void **state)
{
    (void)state;
    static const struct {
        const char *op, *shape;
    } shapes[] = {
        {"ikbo_lce", NULL},
        {"ikbo_lce", "B=512,ratio=10"},
        {"ikbo_lce", "B=2048,M=96,N=512,Ku=200,Kc=1000,ratio=1000"},
        {"ikbo_lce", "B=4096,M=96,N=64,Ku=128,Kc=48,ratio=4096"},
        {"ikbo_lce", "B=1000,M=345,N=32,Ku=800,Kc=1100,ratio=25"},
        {"ikbo_fa", NULL},
        {"ikbo_fa", "Bc=512,H=4,Sq=32,D=64,Skv=8192,ratio=16"},
    };
    static const char *const families[] = {"lce_mem", "lce_mma", "lce_wgmma", "lce_ws", "fa_mma", "fa_ws"};
    for (size_t f = 0; f < KV_ARRAY_LEN(families); f++) {
        kevo_space *s = load_family(families[f]);
        long size = 1;
        for (int i = 0; i < s->nparams; i++)
            size *= s->params[i].nvalues;
        bool full = size <= 2000000;
        int stride = !full ? 7 : size > 100000 ? 31 : 1;
        for (size_t k = 0; k < KV_ARRAY_LEN(shapes); k++) {
            if (strcmp(shapes[k].op, s->op) != 0)
                continue;
            const kevo_op *op = kevo_op_find(s->op);
            kevo_syms shape;
            kevo_err err;
            kevo_err_clear(&err);
            assert_int_equal(op->parse_shape(shapes[k].shape, &shape, &err), KEVO_OK);
            int valid = walk_matches(s, &shape, stride, WALK_SKIP);
            if (full)
                assert_int_equal(walk_matches(s, &shape, stride, WALK_ALL), valid);
            printf("%s at %s: %d of %ld valid\n", s->family, shapes[k].shape ? shapes[k].shape : "the default shape",
                   valid, size);
        }
        kevo_space_free(s);
    }
}

/* A family whose lets and constraints fail to evaluate at some
 * configurations, in odometer order and with jumps: the walk gives
 * kevo_space_check's -1 and message there, and the right answers after. */
static void test_walk_faults(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("walk.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3, 4]},\n"
                                       "  {\"name\": \"Q\", \"values\": [0, 1, 2]},\n"
                                       "  {\"name\": \"R\", \"values\": [1, 2, 5]}],\n"
                                       "\"let\": [[\"X\", \"A / Q\"], [\"Y\", \"X + R\"], [\"Z\", \"A * 2\"]],\n"
                                       "\"constraints\": [{\"expr\": \"R != 2 || Z != 6\", \"why\": \"c\"},\n"
                                       "  {\"expr\": \"100 / (A - 2) > 0\", \"why\": \"a\"},\n"
                                       "  {\"expr\": \"Y % 2 == 0\", \"why\": \"y\"}],\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    kevo_syms shape;
    shape_of(NULL, &shape);
    int valid = walk_matches(s, &shape, 1, WALK_ALL);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_JUMP), valid);
    assert_true(valid > 0);
    kevo_space_free(s);
    /* a let that names a later let is unbound when kevo_space_bind evaluates it (an error where the
       branch is taken), but bound from the configuration before in a walk: the walk must not shortcut */
    assert_int_equal(load_text("walk2.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3]},\n"
                                       "  {\"name\": \"Q\", \"values\": [1, 2]}],\n"
                                       "\"let\": [[\"X\", \"A == 1 ? 0 : Y\"], [\"Y\", \"Q\"]],\n"
                                       "\"constraints\": [{\"expr\": \"X >= 0\", \"why\": \"x\"}],\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_ALL), 2);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_JUMP), 2);
    kevo_space_free(s);
}

static void test_load_dir(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/templates", home());
    kevo_space **sp = NULL;
    int n = -1;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_spaces_load_dir(dir, "ikbo_lce", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 4);
    assert_string_equal(sp[0]->family, "lce_mem");
    assert_string_equal(sp[1]->family, "lce_mma");
    assert_string_equal(sp[2]->family, "lce_wgmma");
    assert_string_equal(sp[3]->family, "lce_ws");
    assert_ptr_equal(kevo_spaces_find(sp, n, "lce_wgmma"), sp[2]);
    assert_ptr_equal(kevo_spaces_find(sp, n, "lce_mma"), sp[1]);
    assert_null(kevo_spaces_find(sp, n, "nope"));
    kevo_spaces_free(sp, n);

    /* every op's families: ikbo_lce's four and ikbo_fa's */
    int nfa = -1;
    assert_int_equal(kevo_spaces_load_dir(dir, "ikbo_fa", &sp, &nfa, &err), KEVO_OK);
    assert_true(nfa >= 1);
    for (int i = 0; i < nfa; i++)
        assert_string_equal(sp[i]->op, "ikbo_fa");
    kevo_spaces_free(sp, nfa);
    assert_int_equal(kevo_spaces_load_dir(dir, NULL, &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 4 + nfa);
    kevo_spaces_free(sp, n);

    assert_int_equal(kevo_spaces_load_dir(dir, "other_op", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    kevo_spaces_free(sp, n);

    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/nope", tmpdir);
    assert_int_equal(kevo_spaces_load_dir(missing, NULL, &sp, &n, &err), KEVO_ERR_IO);
    assert_null(sp);
    assert_int_equal(n, 0);

    /* our own directory: sorted by family name, not by file name */
    char d2[PATH_MAX];
    snprintf(d2, sizeof d2, "%s/dir", tmpdir);
    assert_int_equal(mkdir(d2, 0700), 0);
    write_text(d2, "dummy.cu", "// k\n");
    write_text(d2, "a.json",
               "{\"family\": \"zeta\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "b.json",
               "{\"family\": \"alpha\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "c.json",
               "{\"family\": \"mid\", \"op\": \"other\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "notes.txt", "not a space file");
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(sp[0]->family, "alpha");
    assert_string_equal(sp[1]->family, "zeta");
    kevo_spaces_free(sp, n);
    assert_int_equal(kevo_spaces_load_dir(d2, NULL, &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 3);
    assert_string_equal(sp[0]->family, "alpha");
    assert_string_equal(sp[1]->family, "mid");
    assert_string_equal(sp[2]->family, "zeta");
    kevo_spaces_free(sp, n);

    /* a duplicate family name */
    write_text(d2, "d.json",
               "{\"family\": \"zeta\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    kevo_err_clear(&err);
    sp = (kevo_space **)(uintptr_t)1;
    n = 99;
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "family 'zeta' defined twice"));
    assert_null(sp);
    assert_int_equal(n, 0);

    /* a malformed file in the directory fails the load */
    char d2d[PATH_MAX + 16];
    snprintf(d2d, sizeof d2d, "%s/d.json", d2);
    unlink(d2d);
    write_text(d2, "e.json", "{ nope");
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "e.json"));
    assert_null(sp);
    tu_rm_tree(d2);

    /* an extra folder whose families clash with the first's: refused, naming
     * the family, whether the clash is its first family or a later one (the
     * families before it were moved, the rest freed: ASan checks) */
    static const char *const extra[][2] = {{"aaa_extra", "lce_ws"}, {"lce_mma", NULL}};
    for (int t = 0; t < 2; t++) {
        char d3[PATH_MAX];
        snprintf(d3, sizeof d3, "%s/extra%d", tmpdir, t);
        assert_int_equal(mkdir(d3, 0700), 0);
        write_text(d3, "dummy.cu", "// k\n");
        for (int f = 0; f < 2 && extra[t][f]; f++) {
            char name[32], text[1024];
            snprintf(name, sizeof name, "f%d.json", f);
            snprintf(text, sizeof text,
                     "{\"family\": \"%s\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": "
                     "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                     extra[t][f]);
            write_text(d3, name, text);
        }
        kevo_err_clear(&err);
        assert_int_equal(kevo_spaces_load_dirs(dir, d3, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
        assert_non_null(strstr(err.msg, t == 0 ? "family 'lce_ws' in '" : "family 'lce_mma' in '"));
        assert_non_null(strstr(err.msg, "is already defined"));
        assert_null(sp);
        assert_int_equal(n, 0);
        tu_rm_tree(d3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_lce_mma),
        cmocka_unit_test(test_load_lce_wgmma),
        cmocka_unit_test(test_arch_list),
        cmocka_unit_test(test_arch_runs_on),
        cmocka_unit_test(test_supports),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_walk_families),
        cmocka_unit_test(test_walk_faults),
        cmocka_unit_test(test_plan_mma),
        cmocka_unit_test(test_plan_wgmma),
        cmocka_unit_test(test_plan_ws),
        cmocka_unit_test(test_plan_json),
        cmocka_unit_test(test_config_json),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_minimal_space),
        cmocka_unit_test(test_space_text_clean),
        cmocka_unit_test(test_point_space),
        cmocka_unit_test(test_include_and_entry),
        cmocka_unit_test(test_include_subfolder),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_load_dir),
        cmocka_unit_test(test_default_not_integer),
        cmocka_unit_test(test_swizzle_not_number),
        cmocka_unit_test(test_swizzle_expression),
        cmocka_unit_test(test_axis_repeats_param),
        cmocka_unit_test(test_axis_keep),
        cmocka_unit_test(test_names_shadow_symbols),
        cmocka_unit_test(test_prelude),
        cmocka_unit_test(test_list_next),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
