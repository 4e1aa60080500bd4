/* test_dist.c — shape distributions (search/dist.c): the shapes file is
 * untrusted input; its weights enter a weighted geometric mean. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/dist.h"
#include "util/util.h"

static char path[64];

static void write_file(const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    fclose(f);
}

/* Read text as a shapes file; the status, with err filled. */
static kevo_status read_text(const char *text, kevo_dist *d, kevo_err *err)
{
    write_file(text, strlen(text));
    return kevo_dist_read(path, kevo_op_find("ikbo_lce"), d, err);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/kevo_dist_%d.txt", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_read(void **state)
{
    (void)state;
    static kevo_dist d;
    kevo_err err;
    assert_int_equal(read_text("# production mix\n"
                               "B=512,ratio=10 2\n"
                               "\n"
                               "  B=1024,ratio=70\t# the IKBO shape\r\n"
                               "B=2048,M=200,N=64,Ku=64,Kc=32,U=1   0.25\n",
                               &d, &err),
                     KEVO_OK);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.text[0], "B=512,M=433,N=256,Ku=1178,Kc=866,ratio=10,U=52");
    assert_string_equal(d.text[1], "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15");
    assert_true(d.weight[0] == 2 && d.weight[1] == 1 && d.weight[2] == 0.25);
    int64_t u;
    assert_true(kevo_syms_get(&d.shape[2], "U", &u) && u == 1);
}

/* Each bad line is refused with its line number; nothing crashes. */
static void test_bad_files(void **state)
{
    (void)state;
    static kevo_dist d;
    kevo_err err;
    static const struct {
        const char *text;
        const char *want;
    } bad[] = {
        {"", "holds no shape"},
        {"# only a comment\n\n", "holds no shape"},
        {"B=512 0\n", "line 1: weight '0'"},
        {"B=512 -1\n", "line 1: weight '-1'"},
        {"B=512 nan\n", "line 1: weight 'nan'"},
        {"B=512 inf\n", "line 1: weight 'inf'"},
        {"B=512 1e9\n", "line 1: weight '1e9'"},
        {"B=512 2x\n", "line 1: weight '2x'"},
        {"B=512\nB=512,M=433\n", "line 2: shape B=512,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=8 is given twice"},
        {"B=512\nB=0\n", "line 2"},
        {"B=512\nQ=3\n", "line 2"},
        {"B=512 1 2\n", "line 1: weight '1 2'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kevo_err_clear(&err);
        assert_int_equal(read_text(bad[i].text, &d, &err), KEVO_ERR_ARG);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
    }
    /* too many shapes */
    kv_buf b;
    kv_buf_init(&b);
    for (int i = 0; i <= KEVO_DIST_MAX; i++)
        kv_buf_printf(&b, "B=%d\n", 256 + i);
    assert_int_equal(read_text(b.data, &d, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "more than 32 shapes"));
    kv_buf_release(&b);
    /* a line too long, a NUL byte, a missing file */
    char *longline = malloc(2100);
    memset(longline, 'B', 2099);
    longline[2099] = '\0';
    assert_int_equal(read_text(longline, &d, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "longer than 1000 bytes"));
    free(longline);
    write_file("B=512\n\0B=1024\n", 14);
    assert_int_equal(kevo_dist_read(path, kevo_op_find("ikbo_lce"), &d, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "NUL"));
    assert_int_equal(kevo_dist_read("/nonexistent/shapes.txt", kevo_op_find("ikbo_lce"), &d, &err), KEVO_ERR_IO);
}

static void test_geomean(void **state)
{
    (void)state;
    static kevo_dist d;
    d.n = 3;
    d.weight[0] = 2;
    d.weight[1] = 1;
    d.weight[2] = 1;
    double v[3] = {2.0, 1.0, 0.5};
    /* exp((2 ln 2 + ln 1 + ln 0.5) / 4) = 2^(1/4) */
    assert_true(fabs(kevo_dist_geomean(&d, v) - pow(2.0, 0.25)) < 1e-12);
    v[1] = 0;
    assert_true(kevo_dist_geomean(&d, v) == 0);
    v[1] = NAN;
    assert_true(isnan(kevo_dist_geomean(&d, v)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_geomean),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
