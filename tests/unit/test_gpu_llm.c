/* test_gpu_llm.c — LLM candidates on a GPU (skips without one), from a
 * loopback server (kevo_fake_llm) with fixed replies: a correct kernel is
 * verified and timed; a wrong one and a constant answer fail as
 * wrong_result; one that reads the output first never yields a pass
 * (rejected by the static check, or NaN from the poisoned output); one that
 * writes an input through the argument struct's address is rejected; one
 * that rebuilds the address bit by bit (which the static check does not
 * follow) fails on the GPU as input_modified.  The correct
 * one is then re-verified at another shape and dtype from the DB alone
 * (`kevo verify`); export refuses a run where nothing beats cuBLAS. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "util/util.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-gpullm-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

static int run_kevo(char **out, char *const args[])
{
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/kevo.log", tmpdir);
    int rc = tu_run(log, out, args);
    printf("%s", *out);
    return rc;
}

/* status/fail of the candidate LLM call i (0-based) made */
static void expect_call(const char *db, int i, const char *const *allowed)
{
    sqlite3 *h = NULL;
    char got[128] = "(none)";
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT c.status || '/' || coalesce(c.fail, '') FROM generations g JOIN candidates c ON c.id = "
             "g.candidate_id ORDER BY g.candidate_id LIMIT 1 OFFSET %d",
             i);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        snprintf(got, sizeof got, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    bool ok = false;
    for (int k = 0; allowed[k]; k++)
        ok |= strcmp(got, allowed[k]) == 0;
    if (!ok)
        print_error("call %d ended %s, want %s%s\n", i + 1, got, allowed[0], allowed[1] ? " (or another)" : "");
    assert_true(ok);
}

static void test_llm_on_gpu(void **state)
{
    (void)state;
    char script[PATH_MAX + 32], db[PATH_MAX + 32], fx[PATH_MAX], url[64];
    snprintf(fx, sizeof fx, "%s/tests/fixtures/llm", KEVO_SOURCE_DIR);
    snprintf(script, sizeof script, "%s/script.txt", tmpdir);
    snprintf(db, sizeof db, "%s/gpu.db", tmpdir);
    kv_buf sc;
    kv_buf_init(&sc);
    static const char *const replies[] = {"good.txt", "wrong.txt", "hack_const.txt", "hack_read_out.txt",
                                          "hack_sneaky.txt", "hack_implicit.txt"};
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++)
        kv_buf_printf(&sc, "content=@%s/%s\n", fx, replies[i]);
    kevo_err err;
    assert_int_equal(kv_write_file(script, sc.data, sc.len, &err), KEVO_OK);
    kv_buf_release(&sc);
    int srv = tu_fake_llm_start(KEVO_FAKE_LLM, script, NULL, tmpdir, url, sizeof url);
    char *out = NULL;
    char *tune[] = {"kevo", "tune", "--op", "ikbo_lce", "--family", "lce_mma", "--shape",
                    "B=96,M=72,N=64,Ku=136,Kc=40,ratio=8", "--generators", "llm", "--llm-url", url,
                    "--llm-budget", "6", "--budget", "2", "--batch", "2", "--reps", "5", "--db", db, "--no-bar",
                    NULL};
    int rc = run_kevo(&out, tune);
    tu_fake_llm_stop(srv);
    free(out);
    assert_int_equal(rc, 0);
    static const char *const ok[] = {"ok/", NULL};
    static const char *const wrong[] = {"failed/wrong_result", NULL};
    static const char *const read_out[] = {"failed/rejected", "failed/nan_output", "failed/wrong_result", NULL};
    /* E_cand's address read from the argument struct by offset: the static check sees it */
    static const char *const sneaky[] = {"failed/rejected", NULL};
    /* the address rebuilt bit by bit (an implicit flow the check does not follow): the checksums catch it */
    static const char *const implicit[] = {"failed/input_modified", NULL};
    expect_call(db, 0, ok);
    expect_call(db, 1, wrong);
    expect_call(db, 2, wrong);
    expect_call(db, 3, read_out);
    expect_call(db, 4, sneaky);
    expect_call(db, 5, implicit);

    /* the correct one, from the DB alone, at another shape and in bf16 */
    long long id = tu_query_int(db, "SELECT min(candidate_id) FROM generations");
    char ids[32];
    snprintf(ids, sizeof ids, "%lld", id);
    char *verify[] = {"kevo", "verify", "--db", db, "--candidate", ids, "--shape", "B=50,M=33,N=40,Ku=20,Kc=70,ratio=5",
                      "--dtype", "bf16", NULL};
    rc = run_kevo(&out, verify);
    free(out);
    assert_int_equal(rc, 0);

    /* export never ships a slower kernel (the export of an LLM candidate is tested on the CPU,
     * test_llm_tune): the verified candidates against the run's peers decide what it does, each way
     * said.  kernel: the best candidate's time; peer: the fastest checked peer's; vendor: the fastest
     * checked form the library can dispatch to (decomposed, beta1). */
    double kernel = tu_query_double(db, "SELECT min(median_ms) FROM candidates WHERE status = 'ok'");
    double peer = tu_query_double(db, "SELECT min(median_ms) FROM run_peers WHERE status = 'ok'");
    double vendor = tu_query_double(db, "SELECT min(median_ms) FROM run_peers WHERE status = 'ok' AND "
                                        "peer IN ('decomposed', 'beta1')");
    printf("  kernel %.4f ms, best peer %.4f ms, best vendor form %.4f ms\n", kernel, peer, vendor);
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/lib", tmpdir);
    char *exp[] = {"kevo", "export", "--db", db, "--out", dir, NULL};
    rc = run_kevo(&out, exp);
    if (kernel <= peer) { /* the kernel wins */
        assert_int_equal(rc, 0);
    } else if (vendor < kernel) { /* the only tuned shape goes to cuBLAS: no kernel left to ship */
        assert_int_equal(rc, 1);
        assert_non_null(strstr(out, "nothing to export"));
    } else { /* a peer the library cannot run wins; the kernel is the fastest it can run */
        assert_int_equal(rc, 0);
        assert_non_null(strstr(out, "the library keeps the kernel there"));
    }
    free(out);
}

int main(void)
{
    if (!tu_have_gpu()) {
        printf("skipped: no CUDA driver or device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_llm_on_gpu)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
