/* test_model.c — the cost model (search/model.c): the device's rates its
 * terms see. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/op.h"
#include "search/model.h"
#include "templates/space.h"
#include "testutil.h"

static kevo_limits h100(void)
{
    kevo_limits lim;
    kevo_err err;
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    return lim;
}

/* ---- the rates ---- */

/* A term sees peak_gflops, dram_gbs and l2_gbs: the rates the prediction
 * itself uses (the table's, or the run's measured ones rounded to two
 * digits); a let does not (it is bound without a device). */
static void test_rates_seen(void **state)
{
    (void)state;
    static const char one_point[] =
        "{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"archs\": [\"sm_90a\"],\n"
        "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n"
        "\"launches\": [{\"entry\": \"k\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"smem\": 0}],\n"
        "\"model\": {\"flops\": \"0\", \"dram_bytes\": \"0\", \"items\": \"1\", \"slots\": \"1\", \"launches\": \"0\",\n"
        "          \"item_ns\": \"peak_gflops * 100 + dram_gbs * 10 + l2_gbs / 1000\"}}";
    kevo_space *sp = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_load_inline(one_point, "extern \"C\" __global__ void k() {}", "rates", &sp, &err),
                     KEVO_OK);
    kevo_limits lim = h100();
    kevo_syms shape;
    tu_parse_ok(tu_op("ikbo_lce"), NULL, &shape);
    kevo_config cfg;
    kevo_space_default(sp, &cfg);
    kevo_model_device dev;
    double t;
    /* the sm_90 table: 760 TFLOP/s, 3.0 TB/s, L2 10 TB/s */
    kevo_model_device_init(&dev, &lim, NAN, NAN);
    assert_int_equal(kevo_model_predict(sp, &shape, &lim, KEVO_DTYPE_F16, &cfg, &dev, &t, &err), KEVO_OK);
    assert_true(fabs(t - (760000.0 * 100 + 3000 * 10 + 10) * 1e-9) < 1e-12);
    /* measured: 787.7 TFLOP/s and 4.23 TB/s round to 790 and 4.2 (L2: 2.5 x 4.2) */
    kevo_model_device_init(&dev, &lim, 787.7, 4.23);
    assert_int_equal(kevo_model_predict(sp, &shape, &lim, KEVO_DTYPE_F16, &cfg, &dev, &t, &err), KEVO_OK);
    assert_true(fabs(t - (790000.0 * 100 + 4200 * 10 + 10) * 1e-9) < 1e-12);
    kevo_space_free(sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates_seen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
