/* test_stats.c — medians, bootstrap intervals, paired ratios and rank
 * correlation (util/stats.c) on inputs whose answers are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "util/stats.h"
#include "util/util.h"

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5, 1, 4, 2, 3}, even[] = {4, 1, 3, 2};
    assert_true(kv_median(odd, 5) == 3);
    assert_true(kv_median(even, 4) == 2.5);
    assert_true(odd[0] == 5 && even[0] == 4); /* inputs untouched */
    assert_true(isnan(kv_median(odd, 0)));
}

/* The interval holds the median, narrows with more repetitions, is the
 * same for the same seed, and collapses for constant data. */
static void test_median_ci(void **state)
{
    (void)state;
    double v[200];
    uint64_t rng = 3;
    for (int i = 0; i < 200; i++)
        v[i] = 1.0 + (double)kv_rand_below(&rng, 1000) / 10000.0; /* 1.0 .. 1.1 */
    double lo30, hi30, lo200, hi200, lo2, hi2;
    kv_median_ci(v, 30, 7, 2000, &lo30, &hi30);
    kv_median_ci(v, 200, 7, 2000, &lo200, &hi200);
    double m30 = kv_median(v, 30), m200 = kv_median(v, 200);
    assert_true(lo30 <= m30 && m30 <= hi30);
    assert_true(lo200 <= m200 && m200 <= hi200);
    assert_true(hi200 - lo200 < hi30 - lo30);
    assert_true(lo30 >= 1.0 && hi30 <= 1.1);
    kv_median_ci(v, 30, 7, 2000, &lo2, &hi2);
    assert_true(lo2 == lo30 && hi2 == hi30);
    double c[10] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
    kv_median_ci(c, 10, 1, 500, &lo2, &hi2);
    assert_true(lo2 == 2 && hi2 == 2);
    kv_median_ci(c, 1, 1, 500, &lo2, &hi2);
    assert_true(isnan(lo2) && isnan(hi2));
}

/* A kernel 10% slower in every round is told apart; equal kernels with
 * round-to-round noise shared by both are not. */
static void test_paired_ratio(void **state)
{
    (void)state;
    double a[40], b[40], c[40];
    uint64_t rng = 11;
    for (int i = 0; i < 40; i++) {
        double round = 1.0 + (double)kv_rand_below(&rng, 300) / 1000.0; /* a drift both share */
        a[i] = round * (1.0 + (double)kv_rand_below(&rng, 10) / 1000.0);
        b[i] = 1.1 * round * (1.0 + (double)kv_rand_below(&rng, 10) / 1000.0);
        c[i] = round * (1.0 + (double)kv_rand_below(&rng, 10) / 1000.0);
    }
    double r, lo, hi;
    kv_paired_ratio(a, b, 40, 5, 2000, &r, &lo, &hi);
    assert_true(r > 1.08 && r < 1.12);
    assert_true(lo > 1.0);
    kv_paired_ratio(a, c, 40, 5, 2000, &r, &lo, &hi);
    assert_true(lo <= 1.0 && hi >= 1.0);
    kv_paired_ratio(a, c, 1, 5, 2000, &r, &lo, &hi);
    assert_true(isnan(lo));
}

/* The leader of kernels timed in alternation: the lowest median unless a
 * paired comparison puts another clearly ahead.  B beats A in 28 of 40
 * rounds (16 at a ratio of 0.98, 12 at 0.967) yet has the higher median (A
 * runs fast in the 12 rounds where B is slow): B leads.  Without such a disagreement the
 * lowest median leads; an untimed one (NaN) never does. */
static void test_paired_leader(void **state)
{
    (void)state;
    double a[40], b[40], c[40], d[40];
    for (int i = 0; i < 40; i++) {
        int g = i % 10 < 7 ? (i % 2) : 2; /* 16 rounds in group 0, 12 in each of groups 1 and 2 */
        a[i] = g == 0 ? 1.0 : g == 1 ? 3.0 : 0.5;
        b[i] = g == 0 ? 0.98 : g == 1 ? 2.9 : 5.0;
        c[i] = 10.0 * a[i];
        d[i] = 0.0;
    }
    assert_true(kv_median(a, 40) < kv_median(b, 40));
    const double *ms[4] = {a, b, c, d};
    double med[4] = {kv_median(a, 40), kv_median(b, 40), kv_median(c, 40), NAN};
    uint64_t seeds[4] = {1, 2, 3, 4};
    assert_int_equal(kv_paired_leader(ms, med, 4, 40, seeds, 2000), 1);
    /* A against C alone: no disagreement, the lower median */
    const double *ac[2] = {c, a};
    double mac[2] = {kv_median(c, 40), kv_median(a, 40)};
    assert_int_equal(kv_paired_leader(ac, mac, 2, 40, seeds, 2000), 1);
    double none[2] = {NAN, NAN};
    assert_int_equal(kv_paired_leader(ac, none, 2, 40, seeds, 2000), -1);
}

static void test_spearman(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5}, up[] = {10, 20, 30, 40, 50}, down[] = {5, 4, 3, 2, 1}, bent[] = {1, 4, 9, 16, 25};
    assert_true(fabs(kv_spearman(x, up, 5) - 1.0) < 1e-12);
    assert_true(fabs(kv_spearman(x, down, 5) + 1.0) < 1e-12);
    assert_true(fabs(kv_spearman(x, bent, 5) - 1.0) < 1e-12); /* monotone is enough */
    /* ties take their average rank: x ranks 1.5 1.5 3 4, y ranks 1 2 3 4 */
    double tx[] = {1, 1, 2, 3}, ty[] = {1, 2, 3, 4};
    double r = kv_spearman(tx, ty, 4);
    assert_true(fabs(r - 0.9486832980505138) < 1e-9);
    double flat[] = {1, 1, 1, 1};
    assert_true(isnan(kv_spearman(flat, ty, 4)));
    assert_true(isnan(kv_spearman(x, up, 2)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_median_ci),
        cmocka_unit_test(test_paired_ratio),
        cmocka_unit_test(test_paired_leader),
        cmocka_unit_test(test_spearman),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
