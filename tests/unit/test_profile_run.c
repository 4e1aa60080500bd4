/* test_profile_run.c — `kevo profile` against a fake ncu (a shell script
 * this test writes): the argv ncu gets (--csv, --metrics, --clock-control
 * none, the kevo verify command), the figures stored from its CSV and the
 * line printed; ncu absent, ncu without counter permission and ncu hanging
 * each fail plainly with nothing stored; `kevo tune --profile` on a
 * simulated GPU.  CPU only: the DB is a compile-only run's. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

static char dir[] = "/tmp/kevo_profile_run_XXXXXX";
static char db[PATH_MAX], out[PATH_MAX], errp[PATH_MAX];
static long long cand;

static char *slurp(const char *p)
{
    char *s = tu_read_text(p);
    return s ? s : strdup("");
}

/* A fake ncu at dir/NAME running the shell text body. */
static void fake_ncu(const char *name, const char *body, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", dir, name);
    char text[4096];
    snprintf(text, sizeof text, "#!/bin/sh\n%s\n", body);
    tu_write_text(path, text);
    assert_int_equal(chmod(path, 0700), 0);
}

static long long stored(void)
{
    return tu_query_int(db, "SELECT COUNT(*) FROM measurements WHERE name LIKE 'ncu.%'");
}

static int profile(const char *ncu, const char *timeout)
{
    const char *args[] = {"profile", "--db", db, "--cand", NULL, "--ncu", ncu, "--timeout", timeout, NULL};
    char id[32];
    snprintf(id, sizeof id, "%lld", cand);
    args[4] = id;
    if (!ncu)
        args[5] = NULL;
    return tu_run_files(dir, out, errp, false, args);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/p.db", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    const char *args[] = {"tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--jobs", "2",
                          "--db", db, "--quiet", NULL};
    assert_int_equal(tu_run_files(dir, out, errp, false, args), 0);
    cand = tu_query_int(db, "SELECT MIN(id) FROM candidates");
    assert_true(cand > 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rm_tree(dir);
    return 0;
}

static void test_profile_stores(void **state)
{
    (void)state;
    char ncu[PATH_MAX], body[2048];
    snprintf(body, sizeof body, "printf '%%s\\n' \"$@\" > '%s/argv'\ncat '%s/tests/fixtures/profile/ncu_lce_ws.csv'",
             dir, KEVO_SOURCE_DIR);
    fake_ncu("ncu", body, ncu, sizeof ncu);
    int rc = profile(ncu, "60");
    char argvp[PATH_MAX];
    snprintf(argvp, sizeof argvp, "%s/argv", dir);
    char *o = slurp(out), *e = slurp(errp), *argv = slurp(argvp);
    if (rc)
        print_error("exit %d\nstdout:\n%s\nstderr:\n%s\n", rc, o, e);
    assert_int_equal(rc, 0);
    /* the argv: one argument a line */
    char self[PATH_MAX], want[PATH_MAX * 3];
    assert_non_null(realpath(KEVO_BINARY, self));
    assert_non_null(strstr(argv, "--csv\n--metrics\ngpu__time_duration.sum,"));
    assert_non_null(strstr(argv, "\n--clock-control\nnone\n"));
    assert_non_null(strstr(argv, "\n--target-processes\nall\n"));
    /* only the candidate's kernels (its plan's entries), not the reference's */
    assert_non_null(strstr(argv, "\n--kernel-name\nregex:^("));
    snprintf(want, sizeof want, ")$\n%s\nverify\n--db\n%s\n--candidate\n%lld\n", self, db, cand);
    assert_non_null(strstr(argv, want));
    assert_non_null(strstr(o, "kernel lce_ws_fused: tensor pipe 61% of peak, DRAM 1850 GB/s (55% of peak)"));
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM measurements WHERE candidate_id=%lld AND name='ncu.tensor_pct'", cand);
    assert_true(fabs(tu_query_double(db, sql) - 61.37) < 1e-9);
    snprintf(sql, sizeof sql, "SELECT value FROM measurements WHERE candidate_id=%lld AND name='ncu.l2_gbs'", cand);
    assert_true(fabs(tu_query_double(db, sql) - 3412.6) < 1e-6);
    assert_true(stored() > 0);
    free(o);
    free(e);
    free(argv);
}

static void test_profile_no_ncu(void **state)
{
    (void)state;
    long long before = stored();
    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/no/ncu", dir);
    int rc = profile(missing, "60");
    char *o = slurp(out), *e = slurp(errp);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(e, "ncu (Nsight Compute) not found"));
    assert_non_null(strstr(o, "(derived, no counters)"));
    assert_non_null(strstr(o, "registers"));
    assert_int_equal(stored(), before);
    free(o);
    free(e);
    /* nothing on PATH either, no $KEVO_NCU */
    setenv("PATH", dir, 1);
    unsetenv("KEVO_NCU");
    rc = profile(NULL, "60");
    setenv("PATH", "/usr/bin:/bin", 1);
    e = slurp(errp);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(e, "give --ncu PATH"));
    free(e);
}

static void test_profile_no_counters(void **state)
{
    (void)state;
    long long before = stored();
    char ncu[PATH_MAX];
    fake_ncu("ncu_perm",
             "echo '==PROF== Connected to process 1'\n"
             "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
             "Counters on the target device 0.'\nexit 1",
             ncu, sizeof ncu);
    int rc = profile(ncu, "60");
    char *o = slurp(out), *e = slurp(errp);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(e, "cannot read the GPU's performance counters (ERR_NVGPUCTRPERM)"));
    assert_non_null(strstr(o, "(derived, no counters)"));
    assert_int_equal(stored(), before);
    free(o);
    free(e);
}

static void test_profile_hang(void **state)
{
    (void)state;
    long long before = stored();
    char ncu[PATH_MAX];
    fake_ncu("ncu_hang", "echo '==PROF== Connected'\nsleep 300\necho never", ncu, sizeof ncu);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = profile(ncu, "1");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char *e = slurp(errp);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(e, "ncu did not finish in 1 s: killed"));
    assert_true((double)(t1.tv_sec - t0.tv_sec) < 30);
    assert_int_equal(stored(), before);
    free(e);
}

/* kevo tune --profile: checked before the run (a compile-only run, no
 * ncu: usage errors, nothing written), then, on one simulated GPU, the
 * run's best candidate profiled once the run is over and its figures
 * stored. */
static void test_tune_profile(void **state)
{
    (void)state;
    char db2[PATH_MAX];
    snprintf(db2, sizeof db2, "%s/tune.db", dir);
    const char *co[] = {"tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--db", db2, "--profile", NULL};
    assert_int_equal(tu_run_files(dir, out, errp, false, co), 2);
    char *e = slurp(errp);
    assert_non_null(strstr(e, "--profile needs a GPU run"));
    free(e);
    /* no ncu anywhere: refused before the run, no DB made */
    char empty[PATH_MAX];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    assert_int_equal(mkdir(empty, 0700), 0);
    setenv("PATH", empty, 1);
    unsetenv("KEVO_NCU");
    const char *run[] = {"tune", "--op", "ikbo_lce", "--budget", "2", "--jobs", "2", "--db", db2, "--profile", NULL};
    assert_int_equal(tu_run_files(dir, out, errp, false, run), 2);
    setenv("PATH", "/usr/bin:/bin", 1);
    e = slurp(errp);
    assert_non_null(strstr(e, "--profile:"));
    assert_non_null(strstr(e, "give --ncu PATH"));
    free(e);
    assert_int_not_equal(access(db2, F_OK), 0);
    /* a fake ncu; the run on a simulated GPU */
    char ncu[PATH_MAX], body[2048];
    snprintf(body, sizeof body,
             "printf '%%s\\n' \"$@\" > '%s/tune_argv'\ncat '%s/tests/fixtures/profile/ncu_lce_ws.csv'", dir,
             KEVO_SOURCE_DIR);
    fake_ncu("ncu_tune", body, ncu, sizeof ncu);
    setenv("KEVO_NCU", ncu, 1);
    setenv("KEVO_SIM_GPUS", "1", 1);
    int rc = tu_run_files(dir, out, errp, false, run);
    unsetenv("KEVO_SIM_GPUS");
    unsetenv("KEVO_NCU");
    char *o = slurp(out);
    e = slurp(errp);
    if (rc)
        print_error("exit %d\nstdout:\n%s\nstderr:\n%s\n", rc, o, e);
    assert_int_equal(rc, 0);
    long long best = tu_query_int(db2, "SELECT best_id FROM runs WHERE id = 1");
    assert_true(best > 0);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "run 1: profiling its best, candidate %lld, with Nsight Compute", best);
    assert_non_null(strstr(o, want));
    assert_non_null(strstr(o, "tensor pipe 61% of peak"));
    char argvp[sizeof dir + 16];
    snprintf(argvp, sizeof argvp, "%s/tune_argv", dir);
    char *argv = slurp(argvp);
    snprintf(want, sizeof want, "\nverify\n--db\n%s\n--candidate\n%lld\n", db2, best);
    assert_non_null(strstr(argv, want));
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM measurements WHERE candidate_id=%lld AND name LIKE 'ncu.%%'", best);
    assert_true(tu_query_int(db2, sql) > 0);
    assert_int_equal(tu_query_int(db2, "SELECT COUNT(DISTINCT candidate_id) FROM measurements WHERE name LIKE 'ncu.%'"),
                     1);
    free(argv);
    free(o);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_no_ncu),
        cmocka_unit_test(test_profile_no_counters),
        cmocka_unit_test(test_profile_hang),
        cmocka_unit_test(test_profile_stores),
        cmocka_unit_test(test_tune_profile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
