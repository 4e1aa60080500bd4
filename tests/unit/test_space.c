/* test_space.c — the real template families: loading their space files,
 * arch lists, shape support, constraints, config JSON and rendering.  Plans:
 * test_space_plan.c; space files written from text: test_space_text.c; the
 * search's walk: test_space_walk.c. */
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
            snprintf(path, sizeof path, "%s/templates/%s.cu", tu_home(), fams[f]);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_lce_mma),
        cmocka_unit_test(test_load_lce_wgmma),
        cmocka_unit_test(test_arch_list),
        cmocka_unit_test(test_arch_runs_on),
        cmocka_unit_test(test_supports),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_config_json),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_list_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
