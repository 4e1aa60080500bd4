/* test_arch.c — the arch table (core/arch.c): the limits space files see,
 * the cost model's rates and the prompt's ridge points as they were before
 * the table was one, features, and a space file's "needs". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/arch.h"
#include "search/model.h"
#include "templates/space.h"

/* A known arch's limits; an unknown one (any other spelling too) is
 * NOT_FOUND naming the known ones, with *lim untouched. */
static void test_limits(void **state)
{
    (void)state;
    kevo_limits lim;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    assert_int_equal(lim.sm, 90);
    assert_int_equal(lim.num_sms, 132);
    assert_int_equal(lim.max_smem, 232448);
    assert_int_equal(lim.max_regs, 255);
    assert_int_equal(kevo_limits_for_arch("sm_80", &lim, &err), KEVO_OK);
    assert_int_equal(lim.sm, 80);
    assert_int_equal(lim.num_sms, 108);
    assert_int_equal(lim.max_smem, 166912);
    assert_int_equal(kevo_limits_for_arch("sm_75", &lim, &err), KEVO_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "sm_100a"));
    assert_int_equal(kevo_arch_count(), 6);

    memset(&lim, 0x77, sizeof lim);
    kevo_limits before = lim;
    assert_int_equal(kevo_limits_for_arch("sm_99", &lim, &err), KEVO_ERR_NOT_FOUND);
    assert_memory_equal(&lim, &before, sizeof lim); /* untouched */
    assert_int_equal(err.status, KEVO_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "'sm_99'"));
    assert_non_null(strstr(err.msg, "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a"));
    assert_int_equal(kevo_limits_for_arch("", &lim, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_limits_for_arch("SM_90A", &lim, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_limits_for_arch("sm_90ab", &lim, NULL), KEVO_ERR_NOT_FOUND);
}

/* The model's rates: A100 below sm_90, H100 SXM at sm_90, B200 from sm_100. */
static void test_model_rates(void **state)
{
    (void)state;
    static const struct {
        int sm;
        double peak, bw, l2;
    } want[] = {{75, 280e12, 1.7e12, 5.0e12},  {80, 280e12, 1.7e12, 5.0e12},  {86, 280e12, 1.7e12, 5.0e12},
                {89, 280e12, 1.7e12, 5.0e12},  {90, 760e12, 3.0e12, 10e12},   {95, 760e12, 3.0e12, 10e12},
                {100, 1800e12, 6.5e12, 20e12}, {120, 1800e12, 6.5e12, 20e12}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        kevo_limits lim = {want[i].sm, 100, 100000, 255};
        kevo_model_device d;
        kevo_model_device_init(&d, &lim, 0, 0);
        assert_true(d.peak_flops == want[i].peak);
        assert_true(d.dram_bw == want[i].bw);
        assert_true(d.l2_bw == want[i].l2);
    }
}

static void test_ridge(void **state)
{
    (void)state;
    double lo, hi;
    assert_true(kevo_arch_ridge(kevo_arch_find("sm_90a"), &lo, &hi));
    assert_true(lo == 206 && hi == 295);
    assert_true(kevo_arch_ridge(kevo_arch_find("sm_90"), &lo, &hi));
    assert_true(lo == 206 && hi == 295);
    assert_true(kevo_arch_ridge(kevo_arch_find("sm_80"), &lo, &hi));
    assert_true(lo == 156 && hi == 201);
    assert_true(kevo_arch_ridge(kevo_arch_find("sm_100a"), &lo, &hi));
    assert_true(lo == 281 && hi == 281);
    assert_false(kevo_arch_ridge(kevo_arch_find("sm_86"), &lo, &hi));
    assert_false(kevo_arch_ridge(kevo_arch_find("sm_75"), &lo, &hi));
}

static void test_features(void **state)
{
    (void)state;
    assert_int_equal(kevo_arch_feature_parse("wgmma"), KEVO_FEAT_WGMMA);
    assert_int_equal(kevo_arch_feature_parse("cp.async"), KEVO_FEAT_CP_ASYNC);
    assert_int_equal(kevo_arch_feature_parse("WGMMA"), 0);
    assert_int_equal(kevo_arch_feature_parse(NULL), 0);
    assert_true(kevo_arch_find("sm_90a")->features & KEVO_FEAT_WGMMA);
    assert_false(kevo_arch_find("sm_90")->features & KEVO_FEAT_WGMMA);
    assert_false(kevo_arch_find("sm_100a")->features & KEVO_FEAT_WGMMA);
    assert_true(kevo_arch_find("sm_100a")->features & KEVO_FEAT_TCGEN05);
    assert_true(kevo_arch_find("sm_80")->features & KEVO_FEAT_MMA_SYNC);
    assert_false(kevo_arch_find("sm_80")->features & KEVO_FEAT_TMA);
    assert_string_equal(kevo_arch_for_sm(90)->name, "sm_90");
    assert_string_equal(kevo_arch_for_sm(70)->name, "sm_80");
}

#define NS_PARAMS "\"params\": [{\"name\": \"A\", \"values\": [1], \"default\": 1}],\n"
#define NS_LAUNCH "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]}"

static kevo_status load_with(const char *archs_needs, kevo_space **s, kevo_err *err)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"family\": \"fam\", \"op\": \"ikbo_lce\", %s,\n" NS_PARAMS NS_LAUNCH, archs_needs);
    *s = NULL;
    kevo_err_clear(err);
    kevo_status st = kevo_space_load_inline(text, "extern \"C\" __global__ void k() {}\n", "fam", s, err);
    if (st)
        print_message("load: %s\n", err->msg);
    return st;
}

/* "needs" instead of "archs": every arch of the table with all of them. */
static void test_space_needs(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_with("\"needs\": [\"wgmma\", \"tma\"]", &s, &err), KEVO_OK);
    assert_int_equal(s->narchs, 1);
    assert_string_equal(s->archs[0], "sm_90a");
    kevo_space_free(s);
    assert_int_equal(load_with("\"needs\": [\"tma\"]", &s, &err), KEVO_OK);
    assert_int_equal(s->narchs, 3);
    assert_string_equal(s->archs[0], "sm_90");
    assert_string_equal(s->archs[1], "sm_90a");
    assert_string_equal(s->archs[2], "sm_100a");
    kevo_space_free(s);
    assert_int_equal(load_with("\"needs\": [\"mma.sync\"]", &s, &err), KEVO_OK);
    assert_int_equal(s->narchs, 6);
    kevo_space_free(s);
    /* both: the archs listed, each of which must have the features */
    assert_int_equal(load_with("\"archs\": [\"sm_90a\"], \"needs\": [\"wgmma\"]", &s, &err), KEVO_OK);
    assert_int_equal(s->narchs, 1);
    kevo_space_free(s);
    assert_int_equal(load_with("\"archs\": [\"sm_80\"], \"needs\": [\"wgmma\"]", &s, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "sm_80"));
    assert_int_equal(load_with("\"needs\": [\"warp-magic\"]", &s, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "unknown feature"));
    assert_int_equal(load_with("\"needs\": [\"wgmma\", \"tcgen05\"]", &s, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "no arch"));
    assert_int_equal(load_with("\"needs\": []", &s, &err), KEVO_ERR_PARSE);
    /* "archs" alone keeps working */
    assert_int_equal(load_with("\"archs\": [\"sm_80\", \"sm_90a\"]", &s, &err), KEVO_OK);
    assert_int_equal(s->narchs, 2);
    kevo_space_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits),   cmocka_unit_test(test_model_rates), cmocka_unit_test(test_ridge),
        cmocka_unit_test(test_features), cmocka_unit_test(test_space_needs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
