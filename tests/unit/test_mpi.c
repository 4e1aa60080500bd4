/* test_mpi.c — `mpirun -np 3 kevo tune --mpi` (ctest labels mpi and
 * faults; no GPU: every run is --compile-only over a small template family
 * this test writes, whose kernels compile in a tenth of a second, or in
 * about a second with SLOW=1).
 *
 *   same: a 3-rank run of budget 40 stores exactly the candidates of a
 *         single-process run of the same seed: configurations, order, graph,
 *         statuses, ptxas figures, cubins and compile logs (their "Compile
 *         time" lines aside), and the run ends "done".
 *   kill: kill -9 of rank 1 while it compiles; the run (mpirun
 *         --enable-recovery) still ends done, a line names the lost rank
 *         and its compiles in flight, and the DB holds what a single
 *         process stores (the run's status included).
 *   stop: rank 1 stopped (SIGSTOP) while it compiles, as a rank that hangs:
 *         it is lost, the run stores what a single process stores, and
 *         mpirun returns, because the stopped process is ended (by rank 0
 *         on one host; with KEVO_MPI_HOST standing for two hosts, by the
 *         other rank of its host).
 *   nompi: a kevo built without MPI refuses --mpi (exit 2, "built without
 *         MPI"); skipped in a build with MPI.
 *   slow: a rank that holds a large message's transfer does not hold rank
 *         0's loop (see test_slow).
 *
 * `test_mpi CASE` runs one (ctest registers each); without mpirun
 * on the PATH (or the one CMake found) they skip with a line saying so. */
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

#include "evaluator/mpi.h"
#include "testutil.h"
#include "util/util.h"

#ifndef KEVO_MPIEXEC
#define KEVO_MPIEXEC ""
#endif
#ifndef KEVO_MPI_SLOW_SENDER /* built with MPI only; the case skips without */
#define KEVO_MPI_SLOW_SENDER ""
#endif

static char tmpdir[64];
static char tpl[128];
static char mpirun[1024]; /* empty: none found */
static bool gpu_runs;      /* runs evaluate (on simulated GPUs), else compile only */

/* A kernel whose ptxas time grows with SLOW (straight-line code). */
static const char mpi_cu[] =
    "#define R4(x) x x x x\n"
    "extern \"C\" __global__ void lce_mpi(const __grid_constant__ kevo_lce_args a)\n"
    "{\n"
    "    float acc = P * 100 + Q * 10 + R + S * 0.5f;\n"
    "    const float *w = (const float *)a.out;\n"
    "    size_t j = threadIdx.x;\n"
    "#if SLOW == 1\n"
    "    R4(R4(R4(R4({ acc = fmaf(acc, w[j & 1023], __sinf(acc)); j += 7; }))))\n"
    "#endif\n"
    "    if (threadIdx.x == 0)\n"
    "        ((float *)a.out)[blockIdx.x] = acc + w[0];\n"
    "}\n";

/* Two configurations of one kernel: PAD is in no line of the source, so both
 * compile to the same cubin, which simulated GPUs time alike (test equiv). */
static const char twin_cu[] =
    "extern \"C\" __global__ void lce_twin(const __grid_constant__ kevo_lce_args a)\n"
    "{\n"
    "    if (threadIdx.x == 0)\n"
    "        ((float *)a.out)[blockIdx.x] = 1.0f;\n"
    "}\n";
static const char twin_json[] =
    "{\"family\": \"lce_twin\", \"op\": \"ikbo_lce\", \"source\": \"lce_twin.cu\",\n"
    " \"description\": \"two configurations, one kernel\",\n"
    " \"archs\": [\"sm_80\", \"sm_90\", \"sm_90a\"],\n"
    " \"params\": [{\"name\": \"PAD\", \"values\": [1, 0], \"default\": 1}],\n"
    " \"axes\": {\"pad\": [\"PAD\"]},\n"
    " \"constraints\": [], \"pad_k\": \"0\", \"workspace\": \"0\",\n"
    " \"launches\": [{\"entry\": \"lce_twin\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]}\n";

/* 48 configurations at each SLOW, on four axes */
static const char mpi_json[] =
    "{\"family\": \"lce_mpi\", \"op\": \"ikbo_lce\", \"source\": \"lce_mpi.cu\",\n"
    " \"description\": \"a small kernel for the MPI tests\",\n"
    " \"archs\": [\"sm_80\", \"sm_90\", \"sm_90a\"],\n"
    " \"params\": [{\"name\": \"P\", \"values\": [1, 2, 3, 4], \"default\": 1},\n"
    "            {\"name\": \"Q\", \"values\": [1, 2, 3], \"default\": 1},\n"
    "            {\"name\": \"R\", \"values\": [0, 1], \"default\": 0},\n"
    "            {\"name\": \"S\", \"values\": [0, 1], \"default\": 0},\n"
    "            {\"name\": \"SLOW\", \"values\": [0, 1], \"default\": 0}],\n"
    " \"axes\": {\"p\": [\"P\"], \"q\": [\"Q\"], \"r\": [\"R\"], \"s\": [\"S\"]},\n"
    " \"constraints\": [], \"pad_k\": \"0\", \"workspace\": \"0\",\n"
    " \"launches\": [{\"entry\": \"lce_mpi\", \"grid\": [\"cdiv(B, 128)\", 1, 1], \"block\": [128, 1, 1], "
    "\"smem\": 0}]}\n";

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* mpirun: the one CMake found, else the first on the PATH. */
static bool find_mpirun(void)
{
    if (KEVO_MPIEXEC[0] && access(KEVO_MPIEXEC, X_OK) == 0) {
        snprintf(mpirun, sizeof mpirun, "%s", KEVO_MPIEXEC);
        return true;
    }
    const char *path = getenv("PATH");
    char *copy = kv_strdup(path ? path : "");
    bool found = false;
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        snprintf(mpirun, sizeof mpirun, "%s/mpirun", dir);
        found = access(mpirun, X_OK) == 0;
    }
    free(copy);
    if (!found)
        mpirun[0] = '\0';
    return found;
}

/* The kevo tune arguments every run of these tests shares (--compile-only
 * unless gpu_runs), then extra and more (NULL-ended; more may be NULL), into
 * argv from index at; the new count. */
static int tune_args(char **argv, int at, int max, const char *db, char *const *extra, char *const *more)
{
    static char *const common[] = {"tune", "--op", "ikbo_lce", "--family", "lce_mpi", "--no-bar", NULL};
    argv[at++] = KEVO_BINARY;
    for (int i = 0; common[i]; i++)
        argv[at++] = common[i];
    if (!gpu_runs)
        argv[at++] = "--compile-only";
    argv[at++] = "--templates";
    argv[at++] = tpl;
    argv[at++] = "--db";
    argv[at++] = (char *)db;
    for (int i = 0; extra[i] && at < max - 1; i++)
        argv[at++] = extra[i];
    for (int i = 0; more && more[i] && at < max - 1; i++)
        argv[at++] = more[i];
    argv[at] = NULL;
    return at;
}

/* mpirun -np ranks [--enable-recovery] kevo tune --mpi ... in the background. */
static int mpi_start(const char *log, const char *db, int ranks, bool recovery, char *const *extra,
                     char *const *more)
{
    char *argv[64], np[16];
    int n = 0;
    snprintf(np, sizeof np, "%d", ranks);
    argv[n++] = mpirun;
    argv[n++] = "--oversubscribe";
    if (geteuid() == 0) /* Open MPI refuses root without it (CI runs as root) */
        argv[n++] = "--allow-run-as-root";
    if (recovery)
        argv[n++] = "--enable-recovery";
    argv[n++] = "-np";
    argv[n++] = np;
    n = tune_args(argv, n, 62, db, extra, more);
    argv[n++] = "--mpi";
    argv[n] = NULL;
    return tu_spawn_path(argv[0], log, argv);
}

/* mpirun -np ranks kevo tune --mpi ... to its end, which must be exit 0
 * (else the log is printed); the log's text (caller frees). */
static char *mpi_run_ok(const char *log, const char *db, int ranks, char *const *extra)
{
    int rc = tu_wait(mpi_start(log, db, ranks, false, extra, NULL));
    char *out = tu_read_text(log);
    if (rc != 0)
        fprintf(stderr, "mpirun exited %d:\n%s", rc, out);
    assert_int_equal(rc, 0);
    return out;
}

/* One process: kevo tune ...; its exit status. */
static int single_run(const char *log, const char *db, char *const *extra, char *const *more)
{
    char *argv[64];
    tune_args(argv, 0, 64, db, extra, more);
    return tu_wait(tu_spawn_path(argv[0], log, argv));
}

/* Everything a compile-only run stores that must not depend on where it
 * compiled, as text: the run's status, every candidate in order (config,
 * plan, source, binary key, status, failure, ptxas figures, the model's
 * time), every edge, every binary (cubin by hash, log without the timing
 * lines). */
static char *dump_queries(const char *db, const char *const *q, size_t nq, int64_t run)
{
    sqlite3 *h = NULL;
    kv_buf b;
    kv_buf_init(&b);
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (size_t i = 0; i < nq; i++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(h, q[i], -1, &st, NULL), SQLITE_OK);
        if (sqlite3_bind_parameter_count(st) > 0)
            sqlite3_bind_int64(st, 1, run);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *name = sqlite3_column_name(st, c);
                if (strcmp(name, "cubin") == 0) {
                    const void *blob = sqlite3_column_blob(st, c);
                    size_t len = (size_t)sqlite3_column_bytes(st, c);
                    char hex[65];
                    const void *bufs[] = {blob ? blob : ""};
                    kv_sha256_hex(bufs, &len, 1, hex);
                    kv_buf_printf(&b, "cubin %zu %s|", len, hex);
                } else if (strcmp(name, "log") == 0) {
                    const char *t = (const char *)sqlite3_column_text(st, c);
                    for (const char *l = t; l && *l;) { /* ptxas prints its own time per entry */
                        const char *e = strchr(l, '\n');
                        size_t n = e ? (size_t)(e - l) + 1 : strlen(l);
                        if (!memmem(l, n, "Compile time =", 14))
                            kv_buf_append(&b, l, n);
                        l += n;
                    }
                    kv_buf_puts(&b, "|");
                } else {
                    const unsigned char *t = sqlite3_column_text(st, c);
                    kv_buf_printf(&b, "%s|", t ? (const char *)t : "NULL");
                }
            }
            kv_buf_puts(&b, "\n");
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return kv_buf_take(&b);
}

static char *dump_run(const char *db)
{
    static const char *const q[] = {
        "SELECT status, stop_reason FROM runs ORDER BY id",
        "SELECT seq, family, params, plan, source_hash, binary_key, status, fail, fail_msg, regs, spill_bytes, "
        "smem_static, smem_dynamic, model_ms FROM candidates ORDER BY seq",
        "SELECT p.seq, c.seq, e.operator FROM edges e JOIN candidates p ON p.id = e.parent_id "
        "JOIN candidates c ON c.id = e.child_id ORDER BY c.seq, p.seq",
        "SELECT key, arch, nvrtc_version, options, source_hash, fail, regs, spill_bytes, smem_static, stack_bytes, "
        "cubin, log FROM binaries ORDER BY key",
    };
    return dump_queries(db, q, KV_ARRAY_LEN(q), 0);
}

/* A run's status, stop reason and best; its edges in order (the graph dumps' first and last queries). */
#define Q_RUN "SELECT status, stop_reason, (SELECT seq FROM candidates WHERE id = best_id) FROM runs WHERE id = ?1"
#define Q_EDGES                                                                                                 \
    "SELECT p.seq, c.seq, e.operator FROM edges e JOIN candidates p ON p.id = e.parent_id "                    \
    "JOIN candidates c ON c.id = e.child_id WHERE c.run_id = ?1 ORDER BY c.seq, p.seq"

/* A GPU run's graph: every candidate in order with what was measured, every
 * edge, the best (not which GPU measured what, nor how long it took). */
static char *dump_graph(const char *db, int64_t run)
{
    static const char *const q[] = {
        Q_RUN,
        "SELECT seq, family, params, binary_key, status, fail, printf('%.6f', median_ms), printf('%.4f', speedup) "
        "FROM candidates WHERE run_id = ?1 ORDER BY seq",
        Q_EDGES,
    };
    return dump_queries(db, q, KV_ARRAY_LEN(q), run);
}

static void expect_same_text(const char *what, char *want, char *got)
{
    if (strcmp(want, got) != 0)
        fprintf(stderr, "%s differs from the first:\n--- first\n%s--- %s\n%s", what, want, what, got);
    assert_string_equal(want, got);
    free(want);
    free(got);
}

static void expect_same(const char *what, const char *want_db, const char *got_db)
{
    expect_same_text(what, dump_run(want_db), dump_run(got_db));
}

/* ---- same ---- */

static void test_same(void **state)
{
    (void)state;
    char *const extra[] = {"--budget", "40", "--seed", "11", "--where", "SLOW == 0", NULL};
    char one[128], three[128], log1[128], log3[128];
    path_in(one, sizeof one, "same1.db");
    path_in(three, sizeof three, "same3.db");
    path_in(log1, sizeof log1, "same1.log");
    path_in(log3, sizeof log3, "same3.log");
    assert_int_equal(single_run(log1, one, extra, NULL), 0);
    char *out = mpi_run_ok(log3, three, 3, extra);
    /* every rank took part, each compiling with its share of this host's CPUs (no --jobs) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int share = cpus / 3 > 1 ? (int)(cpus / 3) : 1;
    char want[64];
    snprintf(want, sizeof want, "MPI: 3 ranks, %d compile slots (rank 0: %d on ", 3 * share, share);
    if (!strstr(out, want))
        fprintf(stderr, "want '%s' in:\n%s", want, out);
    assert_non_null(strstr(out, want));
    assert_null(strstr(out, "lost"));
    free(out);
    assert_int_equal(tu_query_int(three, "SELECT count(*) FROM candidates WHERE status = 'compiled'"), 40);
    expect_same("3 ranks", one, three);
}

/* ---- kill ---- */

/* The pid of the rank-th process mpirun (pid) started: its child whose
 * environment says OMPI_COMM_WORLD_RANK=rank; -1 when there is none (yet). */
static int rank_pid(int mpirun_pid, int rank)
{
    char want[48];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    DIR *d = opendir("/proc");
    int found = -1;
    for (struct dirent *e; d && found < 0 && (e = readdir(d)) != NULL;) {
        int k = atoi(e->d_name);
        if (k <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", k);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *paren = strrchr(buf, ')');
        int ppid = 0;
        if (!paren || sscanf(paren + 2, "%*c %d", &ppid) != 1 || ppid != mpirun_pid)
            continue;
        snprintf(path, sizeof path, "/proc/%d/environ", k);
        char *env = NULL;
        size_t n = 0;
        kevo_err err;
        if (kv_read_file(path, &env, &n, &err) != KEVO_OK)
            continue;
        for (size_t i = 0; i < n; i += strlen(env + i) + 1)
            if (strcmp(env + i, want) == 0)
                found = k;
        free(env);
    }
    if (d)
        closedir(d);
    return found;
}

/* Whether pid has a child process (a compile in flight). */
static bool has_child(int pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
    char *t = NULL;
    kevo_err err;
    bool yes = kv_read_file(path, &t, NULL, &err) == KEVO_OK && t[0] != '\0';
    free(t);
    return yes;
}

/* Rank 1 of the job mpirun (pid) started, once it has a compile in flight
 * (waited for up to a minute); the test fails, the job killed, when it
 * never has. */
static int rank1_compiling(int pid)
{
    for (int t = 0; t < 6000; t++) {
        int r1 = rank_pid(pid, 1);
        if (r1 > 0 && has_child(r1))
            return r1;
        tu_sleep_ms(10);
    }
    kill(-pid, SIGKILL);
    tu_wait(pid);
    fail_msg("rank 1 never had a compile in flight");
    return -1;
}

static void test_kill(void **state)
{
    (void)state;
    /* compiles of about a second (more under load), so that rank 1 is caught with one in flight; one
     * slot a rank, so that it has one (--jobs never changes the candidates) */
    char *const extra[] = {"--budget", "16", "--seed", "5", "--where", "SLOW == 1", NULL};
    char *const jobs1[] = {"--jobs", "1", NULL}, *const jobs2[] = {"--jobs", "2", NULL};
    char one[128], three[128], log1[128], log3[128];
    path_in(one, sizeof one, "kill1.db");
    path_in(three, sizeof three, "kill3.db");
    path_in(log1, sizeof log1, "kill1.log");
    path_in(log3, sizeof log3, "kill3.log");
    assert_int_equal(single_run(log1, one, extra, jobs2), 0);
    int pid = mpi_start(log3, three, 3, true, extra, jobs1);
    int victim = rank1_compiling(pid);
    assert_int_equal(kill(victim, SIGKILL), 0);
    int rc = tu_wait(pid); /* 0 whatever the ranks return, under --enable-recovery: the DB tells */
    char *out = tu_read_text(log3);
    if (rc != 0)
        fprintf(stderr, "mpirun exited %d:\n%s", rc, out);
    assert_int_equal(rc, 0);
    const char *lost = strstr(out, "MPI rank 1 (");
    if (!lost)
        fprintf(stderr, "no line names the lost rank:\n%s", out);
    assert_non_null(lost);
    char tail[96];
    snprintf(tail, sizeof tail, "pid %d) lost: ", victim);
    assert_non_null(strstr(lost, tail));
    int back = 0;
    const char *its = strstr(lost, "; its ");
    assert_non_null(its);
    assert_int_equal(sscanf(its, "; its %d compile", &back), 1);
    assert_true(back >= 1); /* it had one in flight when it died, or got one since */
    free(out);
    assert_int_equal(tu_query_int(three, "SELECT count(*) FROM candidates WHERE status = 'compiled'"), 16);
    expect_same("3 ranks, rank 1 killed", one, three);
}

/* ---- a rank that hangs ---- */

/* mpirun --enable-recovery -np 3 kevo tune --mpi ... in the background,
 * where hosts: rank 0 says it runs on host "h0", ranks 1 and 2 on "h1"
 * (KEVO_MPI_HOST, one machine standing for two hosts). */
static int mpi_start_hosts(const char *log, const char *db, char *const *extra, char *const *more)
{
    char *argv[128];
    int n = 0;
    argv[n++] = mpirun;
    argv[n++] = "--oversubscribe";
    if (geteuid() == 0)
        argv[n++] = "--allow-run-as-root";
    argv[n++] = "--enable-recovery";
    static char *const hosts[][4] = {{"-np", "1", "-x", "KEVO_MPI_HOST=h0"}, {"-np", "2", "-x", "KEVO_MPI_HOST=h1"}};
    for (int h = 0; h < 2; h++) {
        if (h)
            argv[n++] = ":";
        for (int i = 0; i < 4; i++)
            argv[n++] = hosts[h][i];
        n = tune_args(argv, n, 62 * (h + 1), db, extra, more);
        argv[n++] = "--mpi";
    }
    argv[n] = NULL;
    return tu_spawn_path(argv[0], log, argv);
}

/* Wait up to limit_s for pid; its status, or -1 (then it and its group are
 * killed, after a SIGCONT to stopped, so that nothing is left behind). */
static int wait_within(int pid, double limit_s, int stopped)
{
    for (double t0 = kv_now(); kv_now() - t0 < limit_s;) {
        int status = 0;
        int w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        tu_sleep_ms(50);
    }
    kill(stopped, SIGCONT);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    tu_wait(pid);
    return -1;
}

/* Rank 1 stopped (SIGSTOP) with a compile in flight, as a rank that hangs:
 * rank 0 loses it after KEVO_MPI_LOST_AFTER s and its compile goes back to
 * the queue, the run stores what a single process stores, and the stopped
 * process is ended, so that mpirun itself returns (it waits for every
 * process it started).  On one host rank 0 ends it; on two (hosts) rank
 * 2, the other rank of its host, does as it leaves. */
static void stop_case(bool hosts)
{
    char *const extra[] = {"--budget", "16", "--seed", "5", "--where", "SLOW == 1", NULL};
    char *const jobs1[] = {"--jobs", "1", NULL}, *const jobs2[] = {"--jobs", "2", NULL};
    char one[128], three[128], log1[128], log3[128];
    path_in(one, sizeof one, hosts ? "stoph1.db" : "stop1.db");
    path_in(three, sizeof three, hosts ? "stoph3.db" : "stop3.db");
    path_in(log1, sizeof log1, hosts ? "stoph1.log" : "stop1.log");
    path_in(log3, sizeof log3, hosts ? "stoph3.log" : "stop3.log");
    assert_int_equal(single_run(log1, one, extra, jobs2), 0);
    int pid = hosts ? mpi_start_hosts(log3, three, extra, jobs1) : mpi_start(log3, three, 3, true, extra, jobs1);
    int victim = rank1_compiling(pid);
    assert_int_equal(kill(victim, SIGSTOP), 0);
    /* the run's compiles, the loss (10 s of silence) and the end take well under this */
    int rc = wait_within(pid, 240, victim);
    char *out = tu_read_text(log3);
    if (rc != 0)
        fprintf(stderr, "mpirun %s:\n%s", rc < 0 ? "did not end within 240 s (the stopped rank held it)" : "failed",
                out);
    assert_int_equal(rc, 0);
    char want[160];
    snprintf(want, sizeof want, "pid %d) lost: no word from it for ", victim);
    if (!strstr(out, want))
        fprintf(stderr, "no line says rank 1 was lost for its silence:\n%s", out);
    assert_non_null(strstr(out, want));
    if (hosts)
        snprintf(want, sizeof want, "MPI rank 1 (h1, pid %d), lost: rank 2 of its host ends it as it leaves", victim);
    else
        snprintf(want, sizeof want, "pid %d), lost, still ran: ended (SIGKILL) so that mpirun can end", victim);
    if (!strstr(out, want))
        fprintf(stderr, "no line says how the stopped rank was ended (%s):\n%s", want, out);
    assert_non_null(strstr(out, want));
    free(out);
    /* gone: mpirun has reaped it (a stopped process would still be there) */
    errno = 0;
    assert_int_equal(kill(victim, 0), -1);
    assert_int_equal(errno, ESRCH);
    assert_int_equal(tu_query_int(three, "SELECT count(*) FROM candidates WHERE status = 'compiled'"), 16);
    expect_same(hosts ? "3 ranks on 2 hosts, rank 1 stopped" : "3 ranks, rank 1 stopped", one, three);
}

static void test_stop(void **state)
{
    (void)state;
    stop_case(false);
    stop_case(true);
}

/* ---- equivalent winners ---- */

/* Two configurations timed alike (one cubin, simulated GPUs): the run's best
 * is the first in configuration order (PAD=0), not the one measured first
 * (PAD=1, the default): kevo names one winner among kernels within the
 * noise between runs, the same in every run. */
static void test_equiv(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "1", 1), 0);
    char db[128], log[128];
    path_in(db, sizeof db, "equiv.db");
    path_in(log, sizeof log, "equiv.log");
    char *argv[] = {KEVO_BINARY, "tune", "--op", "ikbo_lce", "--family", "lce_twin", "--templates", tpl,
                    "--policy", "exhaustive", "--budget", "2", "--warm-start", "none", "--db", db, "--no-bar", NULL};
    int rc = tu_wait(tu_spawn_path(argv[0], log, argv));
    unsetenv("KEVO_SIM_GPUS");
    char *out = tu_read_text(log);
    if (rc != 0)
        fprintf(stderr, "kevo tune exited %d:\n%s", rc, out);
    assert_int_equal(rc, 0);
    assert_int_equal(tu_query_int(db, "SELECT count(DISTINCT median_ms) FROM candidates WHERE status = 'ok'"), 1);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE status = 'ok'"), 2);
    long long first = tu_query_int(db, "SELECT seq FROM candidates WHERE json_extract(params, '$.PAD') = 1");
    assert_int_equal(first, 1); /* the default, measured first */
    long long best = tu_query_int(db, "SELECT json_extract(c.params, '$.PAD') FROM runs r JOIN candidates c "
                                      "ON c.id = r.best_id");
    if (best != 0 || !strstr(out, "the first in configuration order"))
        fprintf(stderr, "best PAD=%lld; the log:\n%s", best, out);
    assert_int_equal(best, 0);
    assert_non_null(strstr(out, "the first in configuration order"));
    free(out);
}

/* ---- built without MPI ---- */

static void test_nompi(void **state)
{
    (void)state;
    if (kevo_mpi_built())
        skip();
    char log[128], db[128];
    path_in(log, sizeof log, "nompi.log");
    path_in(db, sizeof db, "nompi.db");
    char *const extra[] = {"--budget", "1", "--mpi", NULL};
    assert_int_equal(single_run(log, db, extra, NULL), 2);
    char *out = tu_read_text(log);
    assert_non_null(strstr(out, "built without MPI"));
    free(out);
    struct stat st;
    assert_int_not_equal(stat(db, &st), 0); /* nothing was written */
}

/* mpirun -np 2 of tests/mpi/mpi_gpu_driver.c: rank 0 asks rank 1 for its
 * GPU; without a GPU driver (or with one: the driver's reference module is
 * not a cubin) rank 1 answers that it has none, a note says so, rank 0 gets
 * no remote GPU (submitting to one is refused), and rank 1 still compiles
 * the job rank 0 hands out.  Before that job, rank 0 asks rank 1 to write
 * the job's prelude's precompiled header (a prepare): a writer comes and
 * goes in the ranks' TMPDIR, and the job compiles with the header (rank 1
 * would otherwise start the writer at the job and compile it without). */
static void test_gpus(void **state)
{
    (void)state;
    char log[128], pchdir[128];
    path_in(log, sizeof log, "gpus.log");
    path_in(pchdir, sizeof pchdir, "pch");
    assert_int_equal(mkdir(pchdir, 0700), 0);
    char *argv[] = {mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", KEVO_MPI_GPU_DRIVER, pchdir,
                    NULL,   NULL};
    if (geteuid() == 0) {
        memmove(argv + 2, argv + 1, 7 * sizeof *argv);
        argv[1] = "--allow-run-as-root";
    }
    int rc = tu_wait(tu_spawn_path(argv[0], log, argv));
    char *out = tu_read_text(log);
    if (rc != 0 || !strstr(out, "compiles only: "))
        fprintf(stderr, "mpirun exited %d:\n%s", rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "note: MPI: 2 ranks"));
    assert_non_null(strstr(out, "note: MPI rank 1 ("));
    assert_non_null(strstr(out, ") compiles only: "));
    assert_non_null(strstr(out, "gpus 0\n"));
    assert_non_null(strstr(out, "submit to remote GPU 0: status 1 sent 0 (no remote GPU 0)"));
    assert_non_null(strstr(out, "prepare: status 0; a header written in "));
    assert_non_null(strstr(out, "compile: status 0 fail none cubin "));
    assert_non_null(strstr(out, " bytes, precompiled header 1\n"));
    assert_null(strstr(out, "lost"));
    free(out);
}

/* slow: rank 1 starts an 8 MiB message to rank 0 and makes no MPI call for
 * 3 s (tests/mpi/mpi_slow_sender.c), with shared memory's single-copy
 * transfers off, so that the message moves only when its sender calls MPI
 * (as between hosts over TCP).  Rank 0's kevo_mpi_compile_next, called
 * without a wait meanwhile, never takes as long as 0.5 s: the loop that
 * drives the GPUs is not held by another rank's receive.  The job still
 * ends cleanly, nothing lost. */
static void test_slow(void **state)
{
    (void)state;
    char log[128];
    path_in(log, sizeof log, "slow.log");
    /* Open MPI 4 calls its shared-memory transport vader, 5 calls it sm: an unknown name is ignored */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_btl_sm_single_copy_mechanism", "none", 1);
    char *argv[] = {mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", KEVO_MPI_SLOW_SENDER, NULL, NULL};
    if (geteuid() == 0) {
        memmove(argv + 2, argv + 1, 6 * sizeof *argv);
        argv[1] = "--allow-run-as-root";
    }
    int rc = tu_wait(tu_spawn_path(argv[0], log, argv));
    unsetenv("OMPI_MCA_btl_vader_single_copy_mechanism");
    unsetenv("OMPI_MCA_btl_sm_single_copy_mechanism");
    char *out = tu_read_text(log);
    const char *line = strstr(out, "longest call ");
    double longest = line ? strtod(line + strlen("longest call "), NULL) : -1;
    if (rc != 0 || !line || longest >= 0.5)
        fprintf(stderr, "mpirun exited %d:\n%s", rc, out);
    assert_int_equal(rc, 0);
    assert_non_null(line);
    assert_true(longest >= 0 && longest < 0.5);
    assert_null(strstr(out, "lost"));
    free(out);
}

/* ---- simulated GPUs: one graph on any number of GPUs ---- */

/* A copy of a DB (SQLite's backup: the source may have a WAL). */
static void copy_db(const char *from, const char *to)
{
    sqlite3 *src = NULL, *dst = NULL;
    assert_int_equal(sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_open(to, &dst), SQLITE_OK);
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    assert_non_null(b);
    assert_int_equal(sqlite3_backup_step(b, -1), SQLITE_DONE);
    sqlite3_backup_finish(b);
    sqlite3_close(dst);
    sqlite3_close(src);
}

/* Run 2 of a test: a copy of the first run's DB (TAG_vV.db into db, 128
 * bytes) takes kevo tune with extra and more (log TAG_vV.log into log, 128
 * bytes), which must exit 0. */
static void rerun_copy(const char *first, const char *tag, int v, char *const *extra, char *const *more, char *db,
                       char *log)
{
    char name[32];
    snprintf(name, sizeof name, "%s_v%d.db", tag, v);
    path_in(db, 128, name);
    copy_db(first, db);
    snprintf(name, sizeof name, "%s_v%d.log", tag, v);
    path_in(log, 128, name);
    assert_int_equal(single_run(log, db, extra, more), 0);
}

/* mpirun -np 3 from first's cache (run 2 of extra's seed), evaluations of
 * 150 ms: rank 1 killed (-9) once its GPU has measured 3, when it has
 * evaluations in flight (one running, one sent to wait there behind it:
 * KEVO_MPI_GPU_QUEUE).  They go back to the queue, a line says so, and the
 * run ends with run 1's graph. */
static void sim_mpi_kill(const char *first, char *const *extra)
{
    assert_int_equal(setenv("KEVO_SIM_EVAL_MS", "150", 1), 0);
    assert_int_equal(setenv("KEVO_TRACE_EVAL", "1", 1), 0);
    char db[128], log[128];
    path_in(db, sizeof db, "sim_mpi_kill.db");
    path_in(log, sizeof log, "sim_mpi_kill.log");
    copy_db(first, db);
    int pid = mpi_start(log, db, 3, true, extra, NULL);
    long long on1 = tu_wait_query(
        db, "SELECT count(*) FROM candidates WHERE run_id = 2 AND device = 1 AND status = 'ok'", 3, 60000);
    int victim = rank_pid(pid, 1);
    if (on1 < 3 || victim <= 0) {
        kill(-pid, SIGKILL);
        tu_wait(pid);
        fail_msg("rank 1's GPU measured %lld candidates in a minute (rank 1: pid %d)", on1, victim);
    }
    assert_int_equal(kill(victim, SIGKILL), 0);
    int rc = tu_wait(pid);
    char *out = tu_read_text(log);
    const char *lost = strstr(out, "MPI rank 1 (");
    const char *its = lost ? strstr(lost, "; its ") : NULL; /* "; its C compile(s) and E evaluation(s) in flight" */
    const char *and = its ? strstr(its, " and ") : NULL;
    int evals = -1;
    if (and)
        sscanf(and, " and %d evaluation", &evals);
    if (rc != 0 || evals < 1 || !strstr(out, " queued #"))
        fprintf(stderr, "mpirun exited %d; rank 1 lost with %d evaluations in flight:\n%s", rc, evals, out);
    assert_int_equal(rc, 0);
    assert_true(evals >= 1);
    assert_non_null(strstr(out, " queued #")); /* a second evaluation waited on a remote GPU */
    printf("sim mpirun, rank 1 killed: %.*s\n", (int)strcspn(lost, "\n"), lost);
    free(out);
    expect_same_text("mpirun -np 3, rank 1 killed while evaluating", dump_graph(first, 1), dump_graph(db, 2));
    unsetenv("KEVO_TRACE_EVAL");
    unsetenv("KEVO_SIM_EVAL_MS");
}

/* KEVO_SIM_GPUS=3: GPUs whose measurements depend on the candidate alone and
 * whose answers come in a random order.  A first run on one GPU (run 1)
 * stores every binary; copies of its DB then hold run 2 of the same seed on
 * one GPU, on all three, on two named out of order, through a kill -9 and a
 * resume, and under mpirun with a GPU per rank (from the cache, and into a
 * fresh DB where the ranks compile as they evaluate).  Each must be run 1's graph:
 * the same proposals, parents, measurements and best, whichever GPU
 * measured what and in whatever order the answers came. */
static void test_sim(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "3", 1), 0);
    gpu_runs = true;
    char *const extra[] = {"--budget", "36", "--batch", "6", "--seed", "7", "--where", "SLOW == 0",
                           "--warm-start", "none", NULL};
    char *const dev0[] = {"--devices", "0", NULL}, *const all[] = {"--devices", "all", NULL},
                *const two[] = {"--devices", "2,0", NULL};
    char first[128], log[128];
    path_in(first, sizeof first, "sim1.db");
    path_in(log, sizeof log, "sim1.log");
    assert_int_equal(single_run(log, first, extra, dev0), 0);
    char *const *variants[] = {dev0, all, two};
    const char *names[] = {"one GPU", "three GPUs", "GPUs 2,0"};
    for (int v = 0; v < 3; v++) {
        char db[128];
        rerun_copy(first, "sim", v, extra, variants[v], db, log);
        expect_same_text(names[v], dump_graph(first, 1), dump_graph(db, 2));
        long long gpus = tu_query_int(db, "SELECT count(DISTINCT device) FROM candidates WHERE run_id = 2");
        assert_int_equal(gpus, v == 0 ? 1 : v == 1 ? 3 : 2);
    }
    /* kill -9 once a third is measured, then --resume on all three */
    char killed[128];
    path_in(killed, sizeof killed, "sim_kill.db");
    path_in(log, sizeof log, "sim_kill.log");
    copy_db(first, killed);
    char *argv[64];
    tune_args(argv, 0, 64, killed, extra, all);
    int pid = tu_spawn_path(argv[0], log, argv);
    long long measured =
        tu_wait_query(killed, "SELECT count(*) FROM candidates WHERE run_id = 2 AND status = 'ok'", 12, 60000);
    assert_int_equal(kill(pid, SIGKILL), 0);
    tu_wait(pid);
    assert_true(measured >= 12);
    assert_true(tu_query_int(killed, "SELECT count(*) FROM candidates WHERE run_id = 2 AND status = 'ok'") < 36);
    path_in(log, sizeof log, "sim_resume.log");
    char *resume[] = {KEVO_BINARY, "tune", "--resume", "2", "--db", killed, "--devices", "all", "--no-bar", NULL};
    assert_int_equal(tu_wait(tu_spawn_path(resume[0], log, resume)), 0);
    expect_same_text("killed and resumed", dump_graph(first, 1), dump_graph(killed, 2));
    /* mpirun -np 2: rank 0 on simulated GPU 0, rank 1 on its local rank's, 1 */
    if (!kevo_mpi_built() || !find_mpirun()) {
        printf("test_mpi sim: no MPI here: the mpirun part is skipped\n");
    } else {
        char mdb[128];
        path_in(mdb, sizeof mdb, "sim_mpi.db");
        path_in(log, sizeof log, "sim_mpi.log");
        copy_db(first, mdb);
        char *out = mpi_run_ok(log, mdb, 2, extra);
        assert_non_null(strstr(out, "rank 1 GPU 1: kevo simulated GPU"));
        free(out);
        expect_same_text("mpirun -np 2", dump_graph(first, 1), dump_graph(mdb, 2));
        assert_int_equal(tu_query_int(mdb, "SELECT count(DISTINCT device) FROM candidates WHERE run_id = 2"), 2);
        /* a fresh DB: every rank compiles, and each compile goes to a GPU as it finishes */
        path_in(mdb, sizeof mdb, "sim_mpi_fresh.db");
        path_in(log, sizeof log, "sim_mpi_fresh.log");
        out = mpi_run_ok(log, mdb, 3, extra);
        free(out);
        expect_same_text("mpirun -np 3, fresh DB", dump_graph(first, 1), dump_graph(mdb, 1));
        assert_int_equal(tu_query_int(mdb, "SELECT count(DISTINCT device) FROM candidates WHERE run_id = 1"), 3);
        sim_mpi_kill(first, extra);
    }
    gpu_runs = false;
    unsetenv("KEVO_SIM_GPUS");
}

/* ---- simulated GPUs: a hang on one does not hold the others ---- */

/* From a log's KEVO_TRACE_EVAL lines ("trace T submit|done #C dev D"): how
 * many evaluations device `hung` finished (*hangs), and how many the other
 * devices finished while one of those was in flight (*during). */
static void hang_overlap(const char *text, int hung, int *hangs, int *during)
{
    enum { CAP = 256 };
    long long cand[CAP];
    double from[CAP], to[CAP];
    int n = 0;
    *hangs = *during = 0;
    for (int pass = 0; pass < 2; pass++)
        for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            double t = 0;
            char what[16];
            long long c = 0;
            int dev = -1;
            if (sscanf(l, "trace %lf %15s #%lld dev %d", &t, what, &c, &dev) != 4)
                continue;
            bool submit = strcmp(what, "submit") == 0, done = strcmp(what, "done") == 0;
            if (pass == 0 && dev == hung && submit && n < CAP) {
                cand[n] = c;
                from[n] = t;
                to[n++] = -1;
            } else if (pass == 0 && dev == hung && done) {
                for (int i = 0; i < n; i++)
                    if (cand[i] == c && to[i] < 0) {
                        to[i] = t;
                        (*hangs)++;
                    }
            } else if (pass == 1 && dev != hung && done) {
                for (int i = 0; i < n; i++)
                    if (to[i] >= 0 && t > from[i] && t < to[i]) {
                        (*during)++;
                        break;
                    }
            }
        }
}

/* Run 1 of db, whose log is log: it finished with all 18 candidates; GPU 1
 * (which never answers) took some, each ended as eval_timeout; the others
 * measured theirs, and finished some while GPU 1 hung. */
static void expect_hang_survived(const char *what, const char *db, const char *log)
{
    char *text = tu_read_text(log);
    int hangs = 0, during = 0;
    hang_overlap(text, 1, &hangs, &during);
    long long total = tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id = 1");
    long long on1 = tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id = 1 AND device = 1");
    long long timeouts = tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id = 1 AND device = 1 "
                                          "AND status = 'failed' AND fail = 'eval_timeout'");
    long long ok = tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id = 1 AND device != 1 "
                                    "AND status = 'ok'");
    long long finished = tu_query_int(db, "SELECT count(*) FROM runs WHERE id = 1 AND status = 'done'");
    if (total != 18 || on1 < 1 || timeouts != on1 || ok < 1 || finished != 1 || hangs < 1 || during < 1)
        fprintf(stderr, "%s: %lld candidates, GPU 1 took %lld (%lld eval_timeout), the others measured %lld; run done: "
                        "%lld; the trace: %d hangs, %d results elsewhere meanwhile; the log:\n%s",
                what, total, on1, timeouts, ok, finished, hangs, during, text);
    else
        printf("%s: GPU 1 took %lld candidates (each eval_timeout), the others measured %lld and finished %d "
               "evaluations while it hung\n",
               what, on1, ok, during);
    free(text);
    assert_int_equal(total, 18);
    assert_int_equal(finished, 1);
    assert_true(on1 >= 1);
    assert_int_equal(timeouts, on1);
    assert_true(ok >= 1);
    assert_true(hangs >= 1);
    assert_true(during >= 1);
}

/* KEVO_SIM_HANG=1: simulated GPU 1 never answers an evaluation (a kernel
 * that never ends, or a wedged GPU).  With --eval-timeout 3, on three GPUs
 * (--devices all) and under mpirun -np 2 (rank 1 on GPU 1), the run must
 * end, every candidate GPU 1 took failing as eval_timeout (its worker
 * restarted each time), the other GPUs measuring theirs and finishing
 * evaluations while GPU 1 hung (KEVO_TRACE_EVAL's times). */
static void test_simhang(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "3", 1), 0);
    assert_int_equal(setenv("KEVO_SIM_HANG", "1", 1), 0);
    assert_int_equal(setenv("KEVO_TRACE_EVAL", "1", 1), 0);
    gpu_runs = true;
    char *const extra[] = {"--budget", "18", "--batch", "6", "--seed", "3", "--where", "SLOW == 0", "--warm-start",
                           "none", "--eval-timeout", "3", NULL};
    char *const all[] = {"--devices", "all", NULL};
    char db[128], log[128];
    path_in(db, sizeof db, "hang.db");
    path_in(log, sizeof log, "hang.log");
    int rc = single_run(log, db, extra, all);
    if (rc != 0) {
        char *text = tu_read_text(log);
        fprintf(stderr, "--devices all with GPU 1 hanging exited %d:\n%s", rc, text);
        free(text);
    }
    assert_int_equal(rc, 0);
    expect_hang_survived("--devices all", db, log);
    if (!kevo_mpi_built() || !find_mpirun()) {
        printf("test_mpi simhang: no MPI here: the mpirun part is skipped\n");
    } else {
        path_in(db, sizeof db, "hang_mpi.db");
        path_in(log, sizeof log, "hang_mpi.log");
        free(mpi_run_ok(log, db, 2, extra));
        expect_hang_survived("mpirun -np 2", db, log);
    }
    gpu_runs = false;
    unsetenv("KEVO_TRACE_EVAL");
    unsetenv("KEVO_SIM_HANG");
    unsetenv("KEVO_SIM_GPUS");
}

/* A distribution run's graph as text: dump_graph's, each candidate's
 * fitness, and its result at every shape. */
static char *dump_dist(const char *db, int64_t run)
{
    static const char *const q[] = {
        Q_RUN,
        "SELECT seq, family, params, binary_key, status, fail, printf('%.6f', fitness) "
        "FROM candidates WHERE run_id = ?1 ORDER BY seq",
        "SELECT c.seq, r.shape_idx, printf('%.6f', r.median_ms), printf('%.4f', r.vs_peer) FROM shape_results r "
        "JOIN candidates c ON c.id = r.candidate_id WHERE c.run_id = ?1 ORDER BY c.seq, r.shape_idx",
        Q_EDGES,
    };
    return dump_queries(db, q, KV_ARRAY_LEN(q), run);
}

/* A distribution of shapes (--shapes) on KEVO_SIM_GPUS=3: shape i is
 * evaluated on the i-th GPU listed modulo their number, a candidate's
 * shapes on the GPUs at once.  Run 2 of the same seed on all three GPUs,
 * and on two named out of order, must be run 1's (one GPU): the same
 * graph, fitness and result at every shape (a simulated time depends on
 * the shape's grid, so a result stored at the wrong shape shows); each
 * GPU's evaluations are its shapes'. */
static void test_simdist(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "3", 1), 0);
    gpu_runs = true;
    char shapes[128];
    path_in(shapes, sizeof shapes, "dist.txt");
    tu_write_text(shapes, "B=512,ratio=10 1\nB=1024,ratio=70 2\nB=300,M=96,ratio=3 1\nB=2048,ratio=100 0.5\n");
    char *const extra[] = {"--budget", "24", "--batch", "6", "--seed", "5", "--where", "SLOW == 0",
                           "--warm-start", "none", "--shapes", shapes, NULL};
    char *const dev0[] = {"--devices", "0", NULL}, *const all[] = {"--devices", "all", NULL},
                *const two[] = {"--devices", "2,0", NULL};
    char first[128], log[128];
    path_in(first, sizeof first, "dist1.db");
    path_in(log, sizeof log, "dist1.log");
    assert_int_equal(single_run(log, first, extra, dev0), 0);
    long long ok = tu_query_int(first, "SELECT count(*) FROM candidates WHERE run_id = 1 AND status = 'ok'");
    assert_true(ok >= 12);
    char *const *variants[] = {all, two};
    const char *names[] = {"three GPUs", "GPUs 2,0"};
    for (int v = 0; v < 2; v++) {
        char db[128];
        rerun_copy(first, "dist", v, extra, variants[v], db, log);
        expect_same_text(names[v], dump_dist(first, 1), dump_dist(db, 2));
        /* 4 shapes: on three GPUs the first takes shapes 0 and 3; on two, GPU 2 takes 0 and 2 */
        char q[160];
        for (int k = 0; k < 3 - v; k++) {
            snprintf(q, sizeof q, "SELECT evaluated FROM run_devices WHERE run_id = 2 AND idx = %d", k);
            assert_int_equal(tu_query_int(db, q), (k == 0 ? 2 : v == 0 ? 1 : 2) * ok);
        }
        snprintf(q, sizeof q, "SELECT ordinal FROM run_devices WHERE run_id = 2 AND idx = 0");
        assert_int_equal(tu_query_int(db, q), v == 0 ? 0 : 2);
        char *out = tu_read_text(log);
        if (!strstr(out, "kevo: starting the GPU worker of shape 2 of 4 (B=1024,"))
            fprintf(stderr, "%s:\n%s", names[v], out);
        assert_non_null(strstr(out, "kevo: starting the GPU worker of shape 2 of 4 (B=1024,"));
        assert_non_null(strstr(out, v == 0 ? ") on GPU 1\n" : ") on GPU 0\n"));
        assert_non_null(strstr(out, "shape evaluations in"));
        free(out);
    }
    gpu_runs = false;
    unsetenv("KEVO_SIM_GPUS");
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-mpi-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(tpl, sizeof tpl, "%s/tpl", tmpdir);
    if (mkdir(tpl, 0700) != 0)
        return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/lce_mpi.cu", tpl);
    tu_write_text(path, mpi_cu);
    snprintf(path, sizeof path, "%s/lce_mpi.json", tpl);
    tu_write_text(path, mpi_json);
    snprintf(path, sizeof path, "%s/lce_twin.cu", tpl);
    tu_write_text(path, twin_cu);
    snprintf(path, sizeof path, "%s/lce_twin.json", tpl);
    tu_write_text(path, twin_json);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "";
    const struct CMUnitTest same[] = {cmocka_unit_test(test_same)};
    const struct CMUnitTest killed[] = {cmocka_unit_test(test_kill)};
    const struct CMUnitTest stopped[] = {cmocka_unit_test(test_stop)};
    const struct CMUnitTest nompi[] = {cmocka_unit_test(test_nompi)};
    const struct CMUnitTest gpus[] = {cmocka_unit_test(test_gpus)};
    const struct CMUnitTest sim[] = {cmocka_unit_test(test_sim)};
    const struct CMUnitTest simdist[] = {cmocka_unit_test(test_simdist)};
    const struct CMUnitTest simhang[] = {cmocka_unit_test(test_simhang)};
    const struct CMUnitTest equiv[] = {cmocka_unit_test(test_equiv)};
    const struct CMUnitTest slow[] = {cmocka_unit_test(test_slow)};
    if (strcmp(which, "nompi") == 0)
        return cmocka_run_group_tests(nompi, setup, teardown);
    if (strcmp(which, "sim") == 0) /* its mpirun part only where there is MPI */
        return cmocka_run_group_tests(sim, setup, teardown);
    if (strcmp(which, "simdist") == 0)
        return cmocka_run_group_tests(simdist, setup, teardown);
    if (strcmp(which, "equiv") == 0) /* no MPI: simulated GPUs */
        return cmocka_run_group_tests(equiv, setup, teardown);
    if (strcmp(which, "simhang") == 0) /* its mpirun part only where there is MPI */
        return cmocka_run_group_tests(simhang, setup, teardown);
    if (strcmp(which, "same") != 0 && strcmp(which, "kill") != 0 && strcmp(which, "stop") != 0 &&
        strcmp(which, "gpus") != 0 && strcmp(which, "slow") != 0) {
        fprintf(stderr, "usage: test_mpi same|kill|stop|nompi|gpus|sim|simdist|simhang|equiv|slow\n");
        return 2;
    }
    if (!kevo_mpi_built()) {
        printf("test_mpi %s: kevo was built without MPI: skipped (test_mpi nompi checks --mpi there)\n", which);
        return 77;
    }
    if (!find_mpirun()) {
        printf("test_mpi %s: no mpirun (install openmpi-bin): skipped\n", which);
        return 77;
    }
    if (strcmp(which, "gpus") == 0)
        return cmocka_run_group_tests(gpus, setup, teardown);
    if (strcmp(which, "slow") == 0)
        return cmocka_run_group_tests(slow, setup, teardown);
    if (strcmp(which, "stop") == 0)
        return cmocka_run_group_tests(stopped, setup, teardown);
    return strcmp(which, "same") == 0 ? cmocka_run_group_tests(same, setup, teardown)
                                      : cmocka_run_group_tests(killed, setup, teardown);
}
