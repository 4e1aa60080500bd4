/* test_gpu_faults.c — GPU faults (ctest labels gpu and faults; exits 77
 * without a GPU): a real tuning run over the planted-fault family records
 * each defect with the right kind while the worker dies, hangs and is
 * restarted under it, and the run finishes; a worker whose cuBLAS reference
 * is planted wrong (one batch zeroed, KEVO_FAULT_INJECT=ref) does not start,
 * and says why; an ikbo_fa worker whose tensor-core P V is planted wrong
 * (KEVO_FAULT_INJECT=ref_tc) starts on the fp32 P V and says so. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util/util.h"

static char tmpdir[64];

static void test_planted_gpu_faults(void **state)
{
    (void)state;
    char db[128], log[128], templates[512];
    snprintf(db, sizeof db, "%s/gpu_faults.db", tmpdir);
    snprintf(log, sizeof log, "%s/gpu_faults.log", tmpdir);
    snprintf(templates, sizeof templates, "%s/tests/fixtures/faults", tu_home());
    setenv("KEVO_FAULT_INJECT", "1", 1);
    char *args[] = {"kevo", "tune", "--op", "ikbo_lce", "--shape", "B=64,M=100,N=128,Ku=96,Kc=72,ratio=8",
                    "--templates", templates, "--family", "lce_faults", "--policy", "exhaustive", "--budget", "14",
                    "--compile-timeout", "3", "--eval-timeout", "15", "--reps", "3", "--db", db, "--no-bar", NULL};
    int rc = tu_wait(tu_spawn(log, args));
    unsetenv("KEVO_FAULT_INJECT");
    char *text = NULL;
    kevo_err err;
    if (kv_read_file(log, &text, NULL, &err) == KEVO_OK) {
        printf("%s", text);
        free(text);
    }
    assert_int_equal(rc, 0);
    struct {
        int fault;
        const char *status, *fail;
    } want[] = {
        {0, "ok", ""},
        {1, "failed", "compile_error"},
        {2, "failed", "compile_crash"},
        {3, "failed", "eval_timeout"},
        {4, "failed", "illegal_address"},
        {5, "failed", "wrong_result"},
        {6, "failed", "nan_output"},
        {7, "failed", "resource_exceeded"},
        {8, "failed", "compile_timeout"},
        {9, "failed", "load_error"},
        {10, "failed", "launch_error"},
        {11, "failed", "input_modified"},
        {12, "failed", "out_of_bounds"},
        {13, "failed", "out_of_bounds"},
    };
    int wrong = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(want); i++) {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM candidates WHERE json_extract(params, '$.FAULT') = %d AND status = '%s' AND "
                 "coalesce(fail, '') = '%s'",
                 want[i].fault, want[i].status, want[i].fail);
        if (tu_query_int(db, sql) != 1) {
            fprintf(stderr, "FAULT=%d: expected %s %s\n", want[i].fault, want[i].status, want[i].fail);
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
}

/* KEVO_FAULT_INJECT=ref spoils each op's cuBLAS reference at worker start:
 * its check against the SIMT reference refuses the worker, and the same run
 * without it passes. */
static void test_planted_wrong_reference(void **state);

/* ikbo_fa's cuBLAS reference with its tensor-core P V spoiled
 * (KEVO_FAULT_INJECT=ref_tc): the worker falls back to the fp32 P V, which
 * agrees, and the run completes; KEVO_TRACE_EVAL's reference line names
 * the fp32 one, and without the fault the tensor-core one. */
static void test_fa_reference_fallback(void **state)
{
    (void)state;
    for (int planted = 0; planted < 2; planted++) {
        char db[128], log[128];
        snprintf(db, sizeof db, "%s/fa_fallback_%d.db", tmpdir, planted);
        snprintf(log, sizeof log, "%s/fa_fallback_%d.log", tmpdir, planted);
        char *args[] = {"kevo", "tune", "--op", "ikbo_fa", "--shape", "Bc=24,H=2,Sq=16,D=64,Skv=600,ratio=4",
                        "--budget", "2", "--reps", "3", "--db", db, "--no-bar", NULL};
        setenv("KEVO_TRACE_EVAL", "1", 1);
        if (planted)
            setenv("KEVO_FAULT_INJECT", "ref_tc", 1);
        int rc = tu_wait(tu_spawn(log, args));
        unsetenv("KEVO_FAULT_INJECT");
        unsetenv("KEVO_TRACE_EVAL");
        char *text = NULL;
        kevo_err err;
        assert_int_equal(kv_read_file(log, &text, NULL, &err), KEVO_OK);
        const char *want = planted ? "eval-reference cuBLAS against kv_fa_ref (P V in fp32): rel_err "
                                   : "eval-reference cuBLAS against kv_fa_ref (P V, tensor cores): rel_err ";
        bool said = strstr(text, want) != NULL;
        if (rc != 0 || !said)
            printf("ref_tc planted %d: rc %d, no \"%s\":\n%s", planted, rc, want, text);
        free(text);
        assert_int_equal(rc, 0);
        assert_true(said);
        assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    }
}

static void test_planted_wrong_reference(void **state)
{
    (void)state;
    static const struct {
        const char *op, *shape, *said;
    } ops[] = {
        {"ikbo_lce", "B=40,M=70,N=64,Ku=50,Kc=30,ratio=4", "the cuBLAS reference disagrees with kv_ref "},
        {"ikbo_fa", "Bc=24,H=2,Sq=16,D=64,Skv=80,ratio=4", "the cuBLAS reference disagrees with kv_fa_ref "},
    };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        char db[128], log[128];
        snprintf(db, sizeof db, "%s/wrong_ref_%zu.db", tmpdir, o);
        snprintf(log, sizeof log, "%s/wrong_ref_%zu.log", tmpdir, o);
        char *args[] = {"kevo", "tune", "--op", (char *)ops[o].op, "--shape", (char *)ops[o].shape, "--budget", "2",
                        "--reps", "3", "--db", db, "--no-bar", NULL};
        for (int planted = 0; planted < 2; planted++) {
            if (planted)
                setenv("KEVO_FAULT_INJECT", "ref", 1);
            int rc = tu_wait(tu_spawn(log, args));
            unsetenv("KEVO_FAULT_INJECT");
            char *text = NULL;
            kevo_err err;
            assert_int_equal(kv_read_file(log, &text, NULL, &err), KEVO_OK);
            bool said = strstr(text, ops[o].said) != NULL;
            if (rc != (planted ? 1 : 0) || said != (planted == 1))
                printf("%s planted %d: rc %d\n%s", ops[o].op, planted, rc, text);
            free(text);
            assert_int_equal(rc != 0, planted);
            assert_int_equal(said, planted);
        }
    }
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-gpufaults-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

int main(void)
{
    if (!tu_have_gpu()) {
        printf("skipped: no CUDA driver or device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_planted_gpu_faults),
                                       cmocka_unit_test(test_planted_wrong_reference),
                                       cmocka_unit_test(test_fa_reference_fallback)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
