/* test_try.c — the one error-check family (util/try.h): the call's name and
 * the library's own text in kevo_err, the status, the _AS and _RET forms,
 * with the real SQLite, NVRTC and libcurl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <nvrtc.h>
#include <sqlite3.h>
#include <string.h>

#include "util/try.h"

static kevo_status sql_bad(sqlite3 *db, kevo_err *err)
{
    KV_SQL_TRY(db, err, sqlite3_exec(db, "SELEKT 1", NULL, NULL, NULL));
    return KEVO_OK;
}

static kevo_status sql_bad_as(sqlite3 *db, kevo_err *err)
{
    KV_SQL_TRY_AS(db, err, sqlite3_exec(db, "SELECT * FROM nowhere", NULL, NULL, NULL), "read %s", "nowhere");
    return KEVO_OK;
}

static kevo_status sql_good(sqlite3 *db, kevo_err *err)
{
    KV_SQL_TRY(db, err, sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL));
    return KEVO_OK;
}

static void test_sql(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(sql_good(db, &err), KEVO_OK);
    assert_int_equal(sql_bad(db, &err), KEVO_ERR_DB);
    assert_int_equal(err.status, KEVO_ERR_DB);
    assert_true(strncmp(err.msg, "sqlite3_exec: ", 14) == 0);
    assert_non_null(strstr(err.msg, "syntax error"));
    assert_int_equal(sql_bad_as(db, &err), KEVO_ERR_DB);
    assert_true(strncmp(err.msg, "read nowhere: ", 14) == 0);
    assert_non_null(strstr(err.msg, "no such table"));
    sqlite3_close(db);
}

static kevo_status nvrtc_bad(kevo_err *err)
{
    KV_NVRTC_TRY(err, nvrtcCreateProgram(NULL, "", "x.cu", 0, NULL, NULL));
    return KEVO_OK;
}

static void test_nvrtc(void **state)
{
    (void)state;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(nvrtc_bad(&err), KEVO_ERR_NVRTC);
    assert_true(strncmp(err.msg, "nvrtcCreateProgram: NVRTC_ERROR", 31) == 0);
}

static kevo_status curl_bad(CURL *h, kevo_err *err)
{
    KV_CURL_TRY(err, curl_easy_setopt(h, (CURLoption)99999, 1L));
    return KEVO_OK;
}

static void test_curl(void **state)
{
    (void)state;
    CURL *h = curl_easy_init();
    assert_non_null(h);
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(curl_bad(h, &err), KEVO_ERR_IO);
    assert_true(strncmp(err.msg, "curl_easy_setopt: ", 18) == 0);
    assert_non_null(strstr(err.msg, curl_easy_strerror(CURLE_UNKNOWN_OPTION)));
    curl_easy_cleanup(h);
}

/* The generator with a result of one's own: the _RET shape passes it up. */
static int ret_first_bad(int a, int b, int *calls)
{
    KV_TRY_GEN(int, (++*calls, a), kv_r_ == 0, return kv_r_);
    KV_TRY_GEN(int, (++*calls, b), kv_r_ == 0, return kv_r_);
    return 0;
}

static void test_generator(void **state)
{
    (void)state;
    int calls = 0;
    assert_int_equal(ret_first_bad(0, 0, &calls), 0);
    assert_int_equal(calls, 2);
    calls = 0;
    assert_int_equal(ret_first_bad(3, 4, &calls), 3);
    assert_int_equal(calls, 1); /* evaluated once, and the second never */
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kv_try_fail(&err, KEVO_ERR_CUDA, "cu->cuDeviceGet(&w->dev, 0)", "CUDA_ERROR_X: bad"),
                     KEVO_ERR_CUDA);
    assert_string_equal(err.msg, "cuDeviceGet: CUDA_ERROR_X: bad");
    kv_try_fail(&err, KEVO_ERR_WORKER, "rc", "gone");
    assert_string_equal(err.msg, "rc: gone");
    kv_try_fail(&err, KEVO_ERR_WORKER, "(f)(x)", NULL);
    assert_string_equal(err.msg, "(f)(x): (no text)");
    char buf[64];
    assert_string_equal(kv_try_mpi_text(7, NULL, buf, (int)sizeof buf), "MPI error 7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generator),
        cmocka_unit_test(test_sql),
        cmocka_unit_test(test_nvrtc),
        cmocka_unit_test(test_curl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
