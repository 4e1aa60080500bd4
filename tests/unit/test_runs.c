/* test_runs.c — a run means what it says, and survives interruptions
 * (ctest label faults; no GPU: every run is --compile-only over a tiny
 * template family the tests write, whose kernels compile in a tenth of a
 * second, or slowly on purpose: SLOW=1 about a second, SLOW=2 ten).
 *
 * 1. The proposals of a seed do not depend on --jobs: the same candidates
 *    in the same order with --jobs 1, 2 and 3.
 * 2. SIGINT or SIGTERM: the run is stored as interrupted, the message gives
 *    the --resume command, the exit status is 128 + the signal, and no
 *    child survives; the resume (with another --jobs) ends where an
 *    uninterrupted run ends.  kill -9 of kevo takes its compile children
 *    with it.
 * 3. --resume applies or refuses every option; resuming a finished run
 *    changes nothing; a larger --budget extends it; a changed space file
 *    is named and changes nothing.
 * 4. --where and constraints that cannot be evaluated are errors naming
 *    them (and create no run); a plan that fails for one configuration is
 *    a failed candidate; a run whose every candidate failed exits 1.
 * 5. A DB locked by another process past the busy timeout: tune waits,
 *    says so, and finishes once the lock is gone.
 * 6. No silent truncation of long --family and --maps lists.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/util.h"

static char tmpdir[64];
static char tpl[128]; /* the test families' folder */

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* The kernel all the test families share: trivial unless SLOW asks for a
 * long straight-line body (ptxas time grows with it). */
static const char tiny_cu[] =
    "#define R4(x) x x x x\n"
    "extern \"C\" __global__ void lce_tiny(const __grid_constant__ kevo_lce_args a)\n"
    "{\n"
    "    float acc = P * 100 + Q * 10 + R;\n"
    "    const float *w = (const float *)a.out;\n"
    "    size_t j = threadIdx.x;\n"
    "#if SLOW == 1\n"
    "    R4(R4(R4(R4({ acc = fmaf(acc, w[j & 1023], __sinf(acc)); j += 7; }))))\n"
    "#elif SLOW == 2\n"
    "    R4(R4(R4(R4(R4({ acc = fmaf(acc, w[j & 1023], __sinf(acc)); j += 7; })))))\n"
    "#endif\n"
    "    if (threadIdx.x == 0)\n"
    "        ((float *)a.out)[blockIdx.x] = acc + w[0];\n"
    "}\n";

/* A family over P, Q, R and SLOW (24 configurations at each SLOW), with
 * extra constraints and the grid expression given. */
static void write_family(const char *family, const char *p_values, const char *constraints, const char *grid)
{
    char path[256], json[2048];
    snprintf(json, sizeof json,
             "{\"family\": \"%s\", \"op\": \"ikbo_lce\", \"source\": \"lce_tiny.cu\",\n"
             " \"description\": \"a trivial kernel for the tuning loop's tests\",\n"
             " \"archs\": [\"sm_80\", \"sm_90\", \"sm_90a\"],\n"
             " \"params\": [{\"name\": \"P\", \"values\": [%s], \"default\": 1},\n"
             "            {\"name\": \"Q\", \"values\": [1, 2, 3], \"default\": 1},\n"
             "            {\"name\": \"R\", \"values\": [0, 1], \"default\": 0},\n"
             "            {\"name\": \"SLOW\", \"values\": [0, 1, 2], \"default\": 0}],\n"
             " \"axes\": {\"p\": [\"P\"], \"q\": [\"Q\"], \"r\": [\"R\"]},\n"
             " \"constraints\": [%s],\n"
             " \"pad_k\": \"0\", \"workspace\": \"0\",\n"
             " \"launches\": [{\"entry\": \"lce_tiny\", \"grid\": [\"%s\", 1, 1], \"block\": [128, 1, 1], "
             "\"smem\": 0}]}\n",
             family, p_values, constraints, grid);
    snprintf(path, sizeof path, "%s/%s.json", tpl, family);
    tu_write_text(path, json);
}

/* kevo tune --compile-only over the test families with args (NULL-ended)
 * appended; started in its own process group, output into log. */
static int tune_start(const char *log, const char *db, ...)
{
    char *argv[48] = {"kevo", "tune", "--op", "ikbo_lce", "--compile-only", "--templates", tpl, "--db", (char *)db,
                      "--no-bar"};
    int n = 10;
    va_list ap;
    va_start(ap, db);
    for (char *a; (a = va_arg(ap, char *)) != NULL && n < 47;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return tu_spawn(log, argv);
}

/* A run's content as text: candidates in seq order, then edges by seq. */

/* Every row of every table, for "nothing changed". */
static char *dump_all(const char *db)
{
    sqlite3 *h = NULL;
    kv_buf b;
    kv_buf_init(&b);
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *tabs;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
                                        &tabs, NULL),
                     SQLITE_OK);
    while (sqlite3_step(tabs) == SQLITE_ROW) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM \"%s\" ORDER BY rowid", (const char *)sqlite3_column_text(tabs, 0));
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) /* a table without rowid */
            continue;
        kv_buf_printf(&b, "[%s]\n", (const char *)sqlite3_column_text(tabs, 0));
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *t = sqlite3_column_text(st, c);
                kv_buf_printf(&b, "%s|", t ? (const char *)t : "NULL");
            }
            kv_buf_puts(&b, "\n");
        }
        sqlite3_finalize(st);
    }
    sqlite3_finalize(tabs);
    sqlite3_close(h);
    return kv_buf_take(&b);
}

/* Whether pid runs (a zombie does not: it is dead, waiting to be reaped). */
static bool alive(int pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

/* The live children of pid (up to max) into kids, found by the parent
 * field of every /proc/N/stat; how many. */
static int children_of(int pid, int *kids, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL && n < max;) {
        int k = atoi(e->d_name);
        if (k <= 0 || !alive(k))
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", k);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *paren = strrchr(buf, ')'); /* "pid (comm) S ppid ..." */
        int ppid = 0;
        if (paren && sscanf(paren + 2, "%*c %d", &ppid) == 1 && ppid == pid)
            kids[n++] = k;
    }
    if (d)
        closedir(d);
    return n;
}

/* Wait (up to ms) until kevo pid has a child; its children into kids. */
static int wait_children(int pid, int *kids, int max, int ms)
{
    int n = 0;
    for (int t = 0; t < ms / 10 && (n = children_of(pid, kids, max)) == 0; t++)
        tu_sleep_ms(10);
    return n;
}

/* Whether every pid in kids is dead within ms. */
static bool all_dead(const int *kids, int n, int ms)
{
    for (int t = 0; t <= ms / 10; t++) {
        bool any = false;
        for (int i = 0; i < n; i++)
            any |= alive(kids[i]);
        if (!any)
            return true;
        tu_sleep_ms(10);
    }
    return false;
}

/* ---- 1. --jobs never changes the proposals ---- */

static void test_jobs_independent(void **state)
{
    (void)state;
    const char *policies[] = {"random", "greedy"};
    for (size_t p = 0; p < KV_ARRAY_LEN(policies); p++) {
        char *first = NULL;
        for (int j = 1; j <= 3; j++) {
            char db[128], log[128], name[32], jobs[8];
            snprintf(name, sizeof name, "jobs_%s_%d.db", policies[p], j);
            path_in(db, sizeof db, name);
            path_in(log, sizeof log, "jobs.log");
            snprintf(jobs, sizeof jobs, "%d", j);
            int rc = tu_wait(tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 0", "--policy",
                                        policies[p], "--budget", "12", "--seed", "5", "--jobs", jobs, NULL));
            assert_int_equal(rc, 0);
            char *got = tu_graph_dump(db);
            if (!first) {
                first = got;
                continue;
            }
            if (strcmp(first, got) != 0)
                fprintf(stderr, "%s --jobs %d differs from --jobs 1:\n--- 1\n%s--- %d\n%s", policies[p], j, first, j,
                        got);
            assert_string_equal(first, got);
            free(got);
        }
        assert_non_null(strstr(first, "12 lce_tiny"));
        free(first);
    }
}

/* ---- 2. interruptions ---- */

/* Interrupt a run with sig once `done` candidates are finished; check the
 * exit status, the message, the stored status and that no child is left. */
static void interrupt_run(const char *db, int sig, int done, char *const *extra)
{
    char log[128];
    path_in(log, sizeof log, "interrupt.log");
    char *argv[48] = {"kevo", "tune", "--op", "ikbo_lce", "--compile-only", "--templates", tpl, "--db", (char *)db,
                      "--no-bar"};
    int n = 10;
    for (int i = 0; extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    int pid = tu_spawn(log, argv);
    if (done == 0)
        tu_wait_query(db, "SELECT count(*) FROM candidates", 1, 60000);
    else
        tu_wait_query(db, "SELECT count(*) FROM candidates WHERE status != 'pending'", done, 60000);
    int kids[64];
    int nk = wait_children(pid, kids, 64, 20000);
    assert_true(nk > 0); /* a compile child is running */
    kill(pid, sig);      /* kevo only: it has to end its children itself */
    int rc = tu_wait(pid);
    char *text = tu_read_text(log);
    char want[256];
    snprintf(want, sizeof want, "continue it with: kevo tune --resume 1 --db %s", db);
    if (rc != 128 + sig || !strstr(text, want))
        fprintf(stderr, "after signal %d: exit %d, output:\n%s", sig, rc, text);
    assert_int_equal(rc, 128 + sig);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM"));
    free(text);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE id = 1 AND status = 'interrupted'"), 1);
    assert_true(all_dead(kids, nk, 3000));
    assert_int_equal(kill(-pid, 0), -1); /* nothing left in its process group */
    assert_int_equal(errno, ESRCH);
}

static void test_interrupt_resume(void **state)
{
    (void)state;
    char ref[128], log[128];
    path_in(ref, sizeof ref, "straight.db");
    path_in(log, sizeof log, "straight.log");
    assert_int_equal(tu_wait(tune_start(log, ref, "--family", "lce_tiny", "--where", "SLOW == 1", "--budget", "6",
                                        "--batch", "2", "--seed", "3", "--jobs", "2", NULL)),
                     0);
    char *want = tu_graph_dump(ref);
    const int sigs[] = {SIGINT, SIGTERM, SIGKILL};
    for (size_t k = 0; k < KV_ARRAY_LEN(sigs); k++) {
        char db[128], name[32];
        snprintf(name, sizeof name, "interrupted%zu.db", k);
        path_in(db, sizeof db, name);
        char *extra[] = {"--family", "lce_tiny", "--where", "SLOW == 1", "--budget", "6", "--batch", "2", "--seed",
                         "3", "--jobs", "1", NULL};
        if (sigs[k] != SIGKILL) {
            interrupt_run(db, sigs[k], 2, extra);
        } else { /* kill -9 of kevo and its children: the run stays "running", its process gone */
            int pid = tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 1", "--budget", "6", "--batch",
                                 "2", "--seed", "3", "--jobs", "1", NULL);
            tu_wait_query(db, "SELECT count(*) FROM candidates WHERE status != 'pending'", 2, 60000);
            kill(-pid, SIGKILL);
            tu_wait(pid);
        }
        long long done = tu_query_int(db, "SELECT count(*) FROM candidates WHERE status != 'pending'");
        assert_true(done >= 2 && done < 6);
        /* the resume, with another --jobs, ends where the uninterrupted run ends */
        char *resume[] = {"kevo", "tune", "--resume", "1", "--jobs", "2", "--db", db, "--no-bar", NULL};
        assert_int_equal(tu_wait(tu_spawn(log, resume)), 0);
        char *got = tu_graph_dump(db);
        if (strcmp(got, want) != 0)
            fprintf(stderr, "resumed run differs:\n--- uninterrupted\n%s--- resumed\n%s", want, got);
        assert_string_equal(got, want);
        free(got);
        assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
    }
    free(want);
}

/* A signal while a long compile runs, and kill -9 of kevo: no compile child
 * outlives it. */
static void test_children_die(void **state)
{
    (void)state;
    char db[128], log[128];
    path_in(db, sizeof db, "slow_term.db");
    char *extra[] = {"--family", "lce_tiny", "--where", "SLOW == 2", "--budget", "1", "--compile-timeout", "600",
                     NULL};
    interrupt_run(db, SIGTERM, 0, extra);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE status = 'pending'"), 1);

    path_in(db, sizeof db, "slow_kill.db");
    path_in(log, sizeof log, "kill.log");
    int pid = tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 2", "--budget", "1",
                         "--compile-timeout", "600", NULL);
    int kids[64];
    int nk = wait_children(pid, kids, 64, 20000);
    assert_true(nk > 0);
    kill(pid, SIGKILL);
    tu_wait(pid);
    bool dead = all_dead(kids, nk, 3000);
    kill(-pid, SIGKILL); /* whatever the check found alive */
    assert_true(dead);
}

/* ---- 3. --resume applies or refuses every option ---- */

static void test_resume_options(void **state)
{
    (void)state;
    char db[128], log[128];
    path_in(db, sizeof db, "opts.db");
    path_in(log, sizeof log, "opts.log");
    assert_int_equal(tu_wait(tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 0", "--budget", "4",
                                        "--seed", "7", "--batch", "2", NULL)),
                     0);
    char *before = dump_all(db);
    struct {
        const char *opt, *value, *named;
    } refused[] = {
        {"--seed", "9", "--seed 9 differs from run 1's 7"},
        {"--budget", "3", "--budget 3 is below run 1's budget 4"},
        {"--policy", "random", "--policy random differs from run 1's greedy"},
        {"--dtype", "bf16", "--dtype bf16 differs"},
        {"--family", "lce_tplan", "--family lce_tplan differs"},
        {"--where", "SLOW == 1", "--where SLOW == 1 differs"},
        {"--batch", "3", "--batch 3 differs from run 1's 2"},
        {"--ahead", "1", "--ahead 1 differs from run 1's 3"},
        {"--maps", "sorted", "--maps differs"},
        {"--reps", "5", "--reps 5 differs"},
        {"--shape", "B=512", "--shape B=512,"},
        {"--warm-start", "none", "--warm-start none differs"},
        {"--op", "ikbo_lce", NULL}, /* the same: accepted */
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(refused); i++) {
        char *argv[] = {"kevo", "tune", "--resume", "1", "--db", db, (char *)refused[i].opt,
                        (char *)refused[i].value, NULL};
        int rc = tu_wait(tu_spawn(log, argv));
        char *text = tu_read_text(log);
        if (rc != (refused[i].named ? 2 : 0) || (refused[i].named && !strstr(text, refused[i].named)))
            fprintf(stderr, "resume %s %s: exit %d, output:\n%s", refused[i].opt, refused[i].value, rc, text);
        assert_int_equal(rc, refused[i].named ? 2 : 0);
        if (refused[i].named)
            assert_non_null(strstr(text, refused[i].named));
        free(text);
    }
    /* the run's own options again: a finished run, nothing to do, nothing changed */
    char *same[] = {"kevo", "tune", "--resume", "1", "--db", db, "--seed", "7", "--family", "lce_tiny", "--where",
                    "SLOW == 0", "--budget", "4", "--jobs", "1", "--templates", tpl, "--compile-only", NULL};
    assert_int_equal(tu_wait(tu_spawn(log, same)), 0);
    char *text = tu_read_text(log);
    assert_non_null(strstr(text, "run 1 is finished (budget): nothing to do"));
    free(text);
    char *after = dump_all(db);
    if (strcmp(before, after) != 0)
        fprintf(stderr, "a resumed finished run changed:\n--- before\n%s--- after\n%s", before, after);
    assert_string_equal(before, after);
    free(after);

    /* a larger budget extends it: the first 4 stay, 2 more come */
    char *more[] = {"kevo", "tune", "--resume", "1", "--db", db, "--budget", "6", "--no-bar", NULL};
    assert_int_equal(tu_wait(tu_spawn(log, more)), 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates"), 6);
    assert_int_equal(tu_query_int(db, "SELECT budget FROM runs WHERE id = 1"), 6);
    assert_int_equal(tu_query_int(db, "SELECT status = 'done' FROM runs WHERE id = 1"), 1);
    assert_int_equal(tu_query_int(db, "SELECT batch FROM run_settings WHERE run_id = 1"), 2);

    /* a space file changed since: named, and nothing is written */
    free(before);
    before = dump_all(db);
    write_family("lce_tiny", "1, 2, 3, 4, 5", "", "cdiv(B, 128)");
    char *grow[] = {"kevo", "tune", "--resume", "1", "--db", db, "--budget", "8", "--no-bar", NULL};
    int rc = tu_wait(tu_spawn(log, grow));
    write_family("lce_tiny", "1, 2, 3, 4", "", "cdiv(B, 128)");
    text = tu_read_text(log);
    if (rc != 1 || !strstr(text, "template family 'lce_tiny' changed since run 1 started"))
        fprintf(stderr, "resume over a changed space: exit %d, output:\n%s", rc, text);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(text, "template family 'lce_tiny' changed since run 1 started"));
    free(text);
    after = dump_all(db);
    assert_string_equal(before, after);
    free(after);
    free(before);
}

/* ---- 4. --where, constraints, plans, all failed ---- */

static void test_where_and_plans(void **state)
{
    (void)state;
    char db[128], log[128];
    path_in(db, sizeof db, "where.db");
    path_in(log, sizeof log, "where.log");
    struct {
        const char *family, *where;
        int rc;
        const char *named;
    } bad[] = {
        {"lce_tiny", "NOPE == 1", 2, "--where 'NOPE == 1' names 'NOPE'"},
        {"lce_tiny", "P / (Q - 2) > 0", 2, "division by zero"},
        {"lce_tiny", "P > 9", 2, "excludes every valid configuration of lce_tiny"},
        {"lce_tiny", "P >", 2, "--where"},
        {"lce_tdiv", "SLOW == 0", 1, "template family lce_tdiv"},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        int rc =
            tu_wait(tune_start(log, db, "--family", bad[i].family, "--where", bad[i].where, "--budget", "4", NULL));
        char *text = tu_read_text(log);
        if (rc != bad[i].rc || !strstr(text, bad[i].named))
            fprintf(stderr, "--family %s --where '%s': exit %d, output:\n%s", bad[i].family, bad[i].where, rc, text);
        assert_int_equal(rc, bad[i].rc);
        assert_non_null(strstr(text, bad[i].named));
        free(text);
        /* no run, not even a DB */
        assert_int_equal(access(db, F_OK), -1);
    }
    char *text = NULL;
    /* the constraint's message names the expression */
    tu_wait(tune_start(log, db, "--family", "lce_tdiv", "--budget", "4", NULL));
    text = tu_read_text(log);
    assert_non_null(strstr(text, "P / (Q - 2) >= 0"));
    free(text);

    /* a plan that fails for some configurations: those fail, the run goes on */
    assert_int_equal(tu_wait(tune_start(log, db, "--family", "lce_tplan", "--where", "SLOW == 0", "--policy",
                                        "exhaustive", "--budget", "24", NULL)),
                     0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE status = 'failed' AND fail = "
                                      "'plan_error' AND json_extract(params, '$.Q') = 2"),
                     8);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE status = 'compiled' AND "
                                      "json_extract(params, '$.Q') = 3"),
                     8);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);

    /* every candidate failed: exit 1, and the run is stored */
    int rc = tu_wait(tune_start(log, db, "--family", "lce_tplan", "--where", "SLOW == 0 && Q == 2", "--budget", "3",
                                NULL));
    text = tu_read_text(log);
    if (rc != 1)
        fprintf(stderr, "all failed: exit %d, output:\n%s", rc, text);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(text, "every candidate of run 2 failed (3 of 3)"));
    free(text);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE id = 2 AND status = 'done'"), 1);
}

/* ---- 5. a locked DB is waited for ---- */

static void test_lock_wait(void **state)
{
    (void)state;
    char db[128], log[128];
    path_in(db, sizeof db, "locked.db");
    path_in(log, sizeof log, "locked.log");
    assert_int_equal(
        tu_wait(tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 0", "--budget", "1", NULL)), 0);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "BEGIN IMMEDIATE; UPDATE runs SET stop_reason = stop_reason", NULL, NULL, NULL),
                     SQLITE_OK);
    int pid = tune_start(log, db, "--family", "lce_tiny", "--where", "SLOW == 0", "--budget", "2", "--seed", "2",
                         NULL);
    bool said = false;
    for (int t = 0; t < 1500 && !said; t++) { /* the busy timeout is 5 s */
        char *text = tu_read_text(log);
        said = strstr(text, "is locked by another process; waiting") != NULL;
        free(text);
        if (!said)
            tu_sleep_ms(10);
    }
    assert_true(said);
    tu_sleep_ms(300);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still waiting, not failed */
    assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    int rc = tu_wait(pid);
    if (rc != 0) {
        char *text = tu_read_text(log);
        fprintf(stderr, "after the lock: exit %d, output:\n%s", rc, text);
        free(text);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
}

/* ---- 6. long lists are taken whole ---- */

static void test_long_lists(void **state)
{
    (void)state;
    char db[128], log[128];
    path_in(db, sizeof db, "long.db");
    path_in(log, sizeof log, "long.log");
    kv_buf fam, maps;
    kv_buf_init(&fam);
    kv_buf_init(&maps);
    for (int i = 0; i < 80; i++) /* 720 characters, lce_tiny last */
        kv_buf_printf(&fam, "%s%s", i ? "," : "", i % 2 ? "lce_tiny" : "lce_tplan");
    kv_buf_puts(&fam, ",lce_tiny");
    for (int i = 0; i < 12; i++) /* 160 characters */
        kv_buf_puts(&maps, "sorted,uneven,");
    kv_buf_puts(&maps, "shuffled");
    /* read whole, and each names its items once: a repeat is a usage error (every list alike), nothing written */
    int rc = tu_wait(tune_start(log, db, "--family", fam.data, "--where", "SLOW == 0 && Q != 2", "--budget", "2",
                                NULL));
    char *said = tu_read_text(log);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(said, "--family: 'lce_tplan' is listed twice"));
    free(said);
    rc = tu_wait(tune_start(log, db, "--family", "lce_tplan,lce_tiny", "--maps", maps.data, "--budget", "2", NULL));
    said = tu_read_text(log);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(said, "--maps: 'sorted' is listed twice"));
    free(said);
    assert_false(access(db, F_OK) == 0);
    rc = tu_wait(tune_start(log, db, "--family", "lce_tplan,lce_tiny", "--maps", "uneven,shuffled,sorted", "--where",
                            "SLOW == 0 && Q != 2", "--budget", "2", NULL));
    if (rc != 0) {
        char *text = tu_read_text(log);
        fprintf(stderr, "long lists: exit %d, output:\n%s", rc, text);
        free(text);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM run_settings WHERE family_arg = 'lce_tiny,lce_tplan' "
                                      "AND maps = 7"),
                     1);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE families = 'lce_tiny,lce_tplan'"), 1);
    kv_buf_release(&fam);
    kv_buf_release(&maps);

    /* too long to store: refused, not cut */
    kv_buf w;
    kv_buf_init(&w);
    kv_buf_puts(&w, "SLOW == 0");
    for (int i = 0; i < 60; i++)
        kv_buf_puts(&w, " && P != 99");
    path_in(db, sizeof db, "long2.db");
    rc = tu_wait(tune_start(log, db, "--family", "lce_tiny", "--where", w.data, "--budget", "1", NULL));
    kv_buf_release(&w);
    char *text = tu_read_text(log);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(text, "--where is longer than 511 characters"));
    free(text);
    assert_int_equal(access(db, F_OK), -1);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-runs-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(tpl, sizeof tpl, "%s/tpl", tmpdir);
    if (mkdir(tpl, 0700) != 0)
        return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/lce_tiny.cu", tpl);
    tu_write_text(path, tiny_cu);
    write_family("lce_tiny", "1, 2, 3, 4", "", "cdiv(B, 128)");
    /* a constraint that divides by zero at Q=2 */
    write_family("lce_tdiv", "1, 2, 3, 4", "{\"expr\": \"P / (Q - 2) >= 0\", \"why\": \"divides by zero\"}",
                 "cdiv(B, 128)");
    /* a grid that divides by zero at Q=2 (and is negative at Q=1) */
    write_family("lce_tplan", "1, 2, 3, 4", "", "cdiv(B, 128) / (Q - 2)");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_independent), cmocka_unit_test(test_interrupt_resume),
        cmocka_unit_test(test_children_die),     cmocka_unit_test(test_resume_options),
        cmocka_unit_test(test_where_and_plans),  cmocka_unit_test(test_lock_wait),
        cmocka_unit_test(test_long_lists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
