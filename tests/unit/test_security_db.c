/* test_security_db.c — a DB is read by report, replay, export and verify
 * without being written, and what it holds is untrusted (ctest label
 * security):
 * 1. kevo_db_open_ro: every write fails; the file's bytes and mtime stay;
 *    no -wal, -shm or -journal appears; a live writer's WAL is seen.
 * 2. `kevo report` on a DB whose file and folder may not be written (as the
 *    user nobody when the tests run as root).
 * 3. An empty file, a foreign SQLite file and an empty SQLite database are
 *    refused by report, replay, export, verify and tune --warm-start and
 *    stay as they were.
 * 4. A page overwritten with garbage is reported on open (quick_check), by
 *    the read-only and the read-write open, and nothing is written.
 * 5. Older schemas (1 and 2) are read through an upgraded copy in memory;
 *    the file keeps its schema and bytes.
 * 6. verify without a GPU fails before it opens the DB.
 * 7. Numbers: JSON never holds nan or inf, the SVG never draws them, a
 *    compile-only run shows no baseline (table, JSON, SVG).
 * 8. Text: kv_term_clean, and DB strings with escape sequences, CR and LF
 *    reach the terminal (report table and JSON, error messages) cleaned.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db/store.h"
#include "testutil.h"
#include "util/util.h"

static char tmpdir[64];

/* ---- helpers ---- */

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

static char *slurp(const char *path, size_t *len)
{
    char *t = NULL;
    kevo_err err;
    if (kv_read_file(path, &t, len, &err) != KEVO_OK) {
        if (len)
            *len = 0;
        return kv_strdup("");
    }
    return t;
}

/* Run kevo with args (NULL-terminated, without argv[0]) in tmpdir; as_nobody:
 * as the user and group 65534 when this process is root (who ignores
 * permissions). */
static tu_result run_kevo(bool as_nobody, const char *const *args)
{
    tu_run_how how = {.as_nobody = as_nobody};
    return tu_run_in(tmpdir, &how, args);
}

#define RUN(...) run_kevo(false, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_AS_NOBODY(...) run_kevo(true, (const char *const[]){__VA_ARGS__, NULL})

/* A command that failed: exit 1 and one "kevo: " line on stderr holding want. */
static void expect_fail(const tu_result *r, const char *want)
{
    if (r->status != 1 || strncmp(r->err, "kevo: ", 6) != 0 || (want && !strstr(r->err, want)))
        fail_msg("expected exit 1 with \"%s\", got %d\nstdout: %s\nstderr: %s", want ? want : "", r->status, r->out,
                 r->err);
}

static void expect_ok(const tu_result *r)
{
    if (r->status != 0)
        fail_msg("expected exit 0, got %d\nstdout: %s\nstderr: %s", r->status, r->out, r->err);
}

/* What a read must leave as it was: the file's bytes, size and mtime. */
typedef struct snap {
    char sha[65];
    off_t size;
    struct timespec mtime;
} snap;

static snap snap_of(const char *path)
{
    snap s;
    memset(&s, 0, sizeof s);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    s.size = sb.st_size;
    s.mtime = sb.st_mtim;
    size_t len = 0;
    char *data = slurp(path, &len);
    const void *bufs[1] = {data};
    kv_sha256_hex(bufs, &len, 1, s.sha);
    free(data);
    return s;
}

static bool side_file(const char *path, const char *suffix)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

/* The file is as snapped and has no -wal, -shm or -journal beside it. */
static void assert_untouched(const char *path, const snap *before)
{
    snap now = snap_of(path);
    assert_string_equal(now.sha, before->sha);
    assert_int_equal(now.size, before->size);
    assert_int_equal(now.mtime.tv_sec, before->mtime.tv_sec);
    assert_int_equal(now.mtime.tv_nsec, before->mtime.tv_nsec);
    assert_false(side_file(path, "-wal"));
    assert_false(side_file(path, "-shm"));
    assert_false(side_file(path, "-journal"));
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("raw exec: %s", msg ? msg : "?");
    sqlite3_free(msg);
    sqlite3_close(h);
}

/* One integer from sql on a read-write connection (which, unlike a read-only
 * one, removes the -wal and -shm it made when it closes); -1 when none. */
static long long raw_int(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static int64_t add_run(kevo_db *db, const char *shape, bool compile_only, double baseline_ms)
{
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.arch, sizeof r.arch, "sm_90a");
    snprintf(r.policy, sizeof r.policy, "greedy");
    snprintf(r.families, sizeof r.families, "lce_mma");
    snprintf(r.status, sizeof r.status, "done");
    snprintf(r.stop_reason, sizeof r.stop_reason, "budget");
    r.compile_only = compile_only;
    if (!compile_only)
        snprintf(r.device, sizeof r.device, "H100");
    kevo_err err;
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_OK);
    if (!isnan(baseline_ms)) { /* the stage-0 peer, as a run stores it (a crafted one may be infinite) */
        const kevo_op *op = kevo_op_find("ikbo_lce");
        kevo_peer_set ps;
        kevo_peer_set_init(&ps);
        ps.p[kevo_op_peer_baseline(op)].state = KEVO_PEER_OK;
        ps.p[kevo_op_peer_baseline(op)].median_ms = baseline_ms;
        assert_int_equal(kevo_db_peers_put(db, r.id, 0, 0, op, &ps, &err), KEVO_OK);
    }
    return r.id;
}

static int64_t add_cand(kevo_db *db, int64_t run, int seq, const char *family, const char *params, const char *status,
                        double speedup, double median_ms)
{
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = seq;
    snprintf(c.family, sizeof c.family, "%s", family);
    c.params = kv_strdup(params);
    snprintf(c.status, sizeof c.status, "%s", status);
    c.speedup = speedup;
    c.median_ms = median_ms;
    kevo_err err;
    if (kevo_db_cand_insert(db, &c, &err) != KEVO_OK)
        fail_msg("insert: %s", err.msg);
    int64_t id = c.id;
    kevo_cand_row_release(&c);
    return id;
}

#define SHAPE "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15" /* the default */

/* A closed kevo DB at path: one timed run at SHAPE with `ncand` verified
 * candidates. */
static void make_db(const char *path, int ncand)
{
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    int64_t run = add_run(db, SHAPE, false, 1.5);
    for (int i = 1; i <= ncand; i++) {
        char params[256];
        snprintf(params, sizeof params, "{\"BM\":%d,\"BN\":64,\"STAGES\":3,\"pad\":\"%0180d\"}", 16 * i, i);
        add_cand(db, run, i, "lce_mma", params, "ok", 1.0 + i / 100.0, 1.5 / (1.0 + i / 100.0));
    }
    kevo_db_close(db);
    assert_false(side_file(path, "-wal")); /* the last connection checkpointed and removed it */
}

/* ---- 1. the read-only open ---- */

static void test_open_ro(void **state)
{
    (void)state;
    char path[PATH_MAX];
    path_in(path, sizeof path, "ro.db");
    make_db(path, 3);
    snap before = snap_of(path);

    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open_ro(path, &db, &err), KEVO_OK);
    assert_true(kevo_db_readonly(db));
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(db, 1, &r, &err), KEVO_OK);
    assert_string_equal(r.shape, SHAPE);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_best(db, 1, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    /* every write fails */
    kevo_run_row_init(&r);
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_ERR_DB);
    assert_int_equal(kevo_db_measure_put(db, 1, "x", 1.0, &err), KEVO_ERR_DB);
    assert_false(side_file(path, "-wal"));
    assert_false(side_file(path, "-shm"));
    kevo_db_close(db);
    assert_untouched(path, &before);

    /* a writer that has the file open: its committed rows (in its WAL) are seen */
    kevo_db *w = NULL;
    assert_int_equal(kevo_db_open(path, false, &w, &err), KEVO_OK);
    assert_false(kevo_db_readonly(w));
    add_run(w, "B=4,M=4", true, NAN);
    assert_true(side_file(path, "-wal"));
    assert_int_equal(kevo_db_open_ro(path, &db, &err), KEVO_OK);
    int64_t *ids = NULL;
    int n = 0;
    assert_int_equal(kevo_db_run_ids(db, &ids, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    free(ids);
    kevo_db_close(db);
    kevo_db_close(w);

    /* a name that means something in a URI */
    char odd[PATH_MAX];
    path_in(odd, sizeof odd, "odd name?mode=rw#%41&x.db");
    assert_int_equal(rename(path, odd), 0);
    before = snap_of(odd);
    assert_int_equal(kevo_db_open_ro(odd, &db, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_get(db, 1, &r, &err), KEVO_OK);
    kevo_db_close(db);
    assert_untouched(odd, &before);

    /* missing file and folder: refused, nothing created */
    char missing[PATH_MAX];
    path_in(missing, sizeof missing, "missing.db");
    assert_int_equal(kevo_db_open_ro(missing, &db, &err), KEVO_ERR_IO);
    assert_null(db);
    assert_non_null(strstr(err.msg, "no such database"));
    assert_false(access(missing, F_OK) == 0);
    assert_int_equal(kevo_db_open_ro(tmpdir, &db, &err), KEVO_ERR_IO);
}

/* ---- 2. a DB the user may not write ---- */

static void test_report_unwritable(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    path_in(dir, sizeof dir, "locked");
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/k.db", dir);
    make_db(path, 3);
    assert_int_equal(chmod(path, 0444), 0);
    assert_int_equal(chmod(dir, 0555), 0);
    assert_int_equal(chmod(tmpdir, 0755), 0); /* nobody may pass through */
    snap before = snap_of(path);
    if (geteuid() == 0)
        printf("running as root: report runs as the user nobody\n");

    tu_result r = RUN_AS_NOBODY("report", "--db", path);
    expect_ok(&r);
    assert_non_null(strstr(r.out, "run 1  ikbo_lce  " SHAPE));
    tu_result_release(&r);
    r = RUN_AS_NOBODY("report", "--db", path, "--format", "json");
    expect_ok(&r);
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 1);
    cJSON_Delete(j);
    tu_result_release(&r);
    /* as this user too (root: the file is still only read) */
    r = RUN("report", "--db", path);
    expect_ok(&r);
    tu_result_release(&r);
    assert_untouched(path, &before);

    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(tmpdir, 0700), 0);
}

/* ---- 3. files that are not kevo DBs ---- */

/* Every read command refuses path with a message holding want and leaves it as it was. */
static void refused_by_readers(const char *path, const char *want)
{
    snap before = snap_of(path);
    char out[PATH_MAX];
    path_in(out, sizeof out, "export-out");
    tu_result r = RUN("report", "--db", path);
    expect_fail(&r, want);
    tu_result_release(&r);
    r = RUN("report", "--db", path, "--format", "json");
    expect_fail(&r, want);
    tu_result_release(&r);
    r = RUN("replay", "--db", path, "--model");
    expect_fail(&r, want);
    tu_result_release(&r);
    r = RUN("export", "--db", path, "--out", out);
    expect_fail(&r, want);
    tu_result_release(&r);
    r = RUN("verify", "--db", path); /* no GPU here: that message; with one: the file's */
    expect_fail(&r, NULL);
    tu_result_release(&r);
    /* tune reads another DB for its warm start: read-only as well */
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--db", "warm.db", "--warm-start", path,
            "--quiet");
    expect_fail(&r, want);
    tu_result_release(&r);
    assert_untouched(path, &before);
    tu_rm_tree(out);
}

static void test_not_kevo_files(void **state)
{
    (void)state;
    char path[PATH_MAX], want[PATH_MAX + 64];
    kevo_err err;

    path_in(path, sizeof path, "empty.db");
    assert_int_equal(kv_write_file(path, "", 0, &err), KEVO_OK);
    snprintf(want, sizeof want, "'%s' is empty, not a kevo database", path);
    refused_by_readers(path, want);
    assert_int_equal(snap_of(path).size, 0);

    path_in(path, sizeof path, "foreign.db");
    raw_exec(path, "CREATE TABLE t(x); INSERT INTO t VALUES(42);");
    snprintf(want, sizeof want, "'%s' is not a kevo database", path);
    refused_by_readers(path, want);
    assert_int_equal(raw_int(path, "SELECT x FROM t"), 42);

    path_in(path, sizeof path, "blank.db");
    raw_exec(path, "CREATE TABLE t(x); DROP TABLE t;");
    snprintf(want, sizeof want, "'%s' is an empty SQLite database, not a kevo database", path);
    refused_by_readers(path, want);

    path_in(path, sizeof path, "text.db");
    assert_int_equal(kv_write_file(path, "hello world", 11, &err), KEVO_OK);
    refused_by_readers(path, "is not a kevo database or is corrupt");
}

/* ---- 4. a corrupt page ---- */

static void test_corrupt_page(void **state)
{
    (void)state;
    char path[PATH_MAX];
    path_in(path, sizeof path, "corrupt.db");
    make_db(path, 300); /* candidates span many pages */
    long long page = raw_int(path, "SELECT rootpage FROM sqlite_master WHERE name = 'candidates'");
    long long psize = raw_int(path, "PRAGMA page_size");
    assert_true(page > 1 && psize >= 512);
    /* overwrite the candidates table's root page with garbage */
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    char *junk = malloc((size_t)psize);
    assert_non_null(junk);
    memset(junk, 0x5A, (size_t)psize);
    assert_int_equal(pwrite(fd, junk, (size_t)psize, (off_t)((page - 1) * psize)), psize);
    close(fd);
    free(junk);
    snap before = snap_of(path);

    kevo_db *db = (kevo_db *)1;
    kevo_err err;
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "'%s' is corrupt (", path);
    assert_int_equal(kevo_db_open_ro(path, &db, &err), KEVO_ERR_DB);
    assert_null(db);
    printf("read-only open: %s\n", err.msg);
    assert_non_null(strstr(err.msg, want));
    /* the read-write open (tune) refuses it too, instead of writing into it */
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_ERR_DB);
    assert_null(db);
    assert_non_null(strstr(err.msg, want));
    tu_result r = RUN("report", "--db", path);
    expect_fail(&r, "is corrupt (quick_check");
    tu_result_release(&r);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--db", path, "--quiet");
    expect_fail(&r, "is corrupt");
    tu_result_release(&r);
    assert_untouched(path, &before);
}

/* ---- 5. older schemas ---- */

static void check_old_schema(int ver)
{
    char path[PATH_MAX], name[32];
    snprintf(name, sizeof name, "schema%d.db", ver);
    path_in(path, sizeof path, name);
    make_db(path, 3);
    raw_exec(path, TU_SCHEMA2_SQL);
    if (ver == 1)
        raw_exec(path, "ALTER TABLE runs DROP COLUMN filter; PRAGMA user_version=1;");
    assert_int_equal(raw_int(path, "PRAGMA user_version"), ver);
    snap before = snap_of(path);

    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open_ro(path, &db, &err), KEVO_OK);
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(db, 1, &r, &err), KEVO_OK);
    assert_string_equal(r.filter, "");
    assert_true(r.nshapes == 0);
    /* the old baseline column became the stage-0 peer row */
    kevo_peer_set ps;
    assert_int_equal(kevo_db_peers_get(db, 1, 0, 0, kevo_op_find("ikbo_lce"), &ps, &err), KEVO_OK);
    assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_baseline(kevo_op_find("ikbo_lce"))) == 1.5);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_best(db, 1, &c, &err), KEVO_OK);
    assert_true(fabs(c.speedup - 1.03) < 1e-9 && isnan(c.vs_peer) && c.tied == -1);
    kevo_cand_row_release(&c);
    kevo_run_row_init(&r);
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_ERR_DB); /* the copy is read-only too */
    kevo_db_close(db);

    tu_result res = RUN("report", "--db", path, "--format", "json");
    expect_ok(&res);
    cJSON *j = cJSON_Parse(res.out);
    assert_non_null(j);
    const cJSON *best = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "best");
    assert_true(fabs(cJSON_GetObjectItem(best, "speedup")->valuedouble - 1.03) < 1e-9);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(best, "vs_best_peer")));
    cJSON_Delete(j);
    tu_result_release(&res);
    assert_untouched(path, &before);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), ver);
}

static void test_old_schema_v1(void **state)
{
    (void)state;
    check_old_schema(1);
}

static void test_old_schema_v2(void **state)
{
    (void)state;
    check_old_schema(2);
}

/* ---- 6. verify without a GPU ---- */

static void test_verify_no_gpu(void **state)
{
    (void)state;
    if (tu_have_gpu()) {
        printf("a GPU is present: the no-GPU behaviour is not checked here\n");
        skip();
    }
    /* a real landscape: the old verify compiled the reference module into its cache */
    char path[PATH_MAX], missing[PATH_MAX];
    path_in(path, sizeof path, "verify.db");
    size_t len = 0;
    const char *home = getenv("KEVO_HOME");
    char fixture[PATH_MAX];
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/landscape/lce_mma_h200.db",
             home && *home ? home : KEVO_SOURCE_DIR);
    char *data = slurp(fixture, &len);
    assert_true(len > 0);
    kevo_err err;
    assert_int_equal(kv_write_file(path, data, len, &err), KEVO_OK);
    free(data);
    snap before = snap_of(path);
    tu_result r = RUN("verify", "--db", path);
    expect_fail(&r, "needs a GPU");
    tu_result_release(&r);
    assert_untouched(path, &before);
    /* the GPU is asked for first: a missing DB is not even looked at */
    path_in(missing, sizeof missing, "nothing.db");
    r = RUN("verify", "--db", missing);
    expect_fail(&r, "needs a GPU");
    tu_result_release(&r);
    assert_false(access(missing, F_OK) == 0);
}

/* ---- 7. numbers ---- */

/* No "nan" or "inf" in any letter case. */
static void assert_no_nonfinite(const char *what, const char *text)
{
    if (strcasestr(text, "nan") || strcasestr(text, "inf"))
        fail_msg("%s holds nan or inf:\n%s", what, text);
}

static void test_numbers(void **state)
{
    (void)state;
    char path[PATH_MAX], svg[PATH_MAX];
    path_in(path, sizeof path, "numbers.db");
    path_in(svg, sizeof svg, "numbers.svg");
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    /* a timed run whose figures are infinite (SQLite keeps inf; NaN reads back as NULL) */
    kevo_run_row r;
    kevo_run_row_init(&r);
    int64_t timed = add_run(db, "B=8,M=16", false, INFINITY);
    assert_int_equal(kevo_db_run_get(db, timed, &r, &err), KEVO_OK);
    r.peak_tflops = INFINITY;
    r.copy_tbps = -INFINITY;
    assert_int_equal(kevo_db_run_update(db, &r, &err), KEVO_OK);
    kevo_db_close(db);
    raw_exec(path, "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, ci_lo_ms, ci_hi_ms, "
                   "rel_err) VALUES(1, 0, 0, 'decomposed', 'ok', 1e999, -1e999, 1e999, 1e999)");
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    int64_t a = add_cand(db, timed, 1, "lce_mma", "{\"BM\":1e999,\"BN\":64}", "ok", INFINITY, 0.0);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_get(db, a, &c, &err), KEVO_OK);
    c.vs_peer = INFINITY;
    c.tflops = -INFINITY;
    c.roofline = INFINITY;
    c.ci_lo_ms = -INFINITY;
    c.ci_hi_ms = INFINITY;
    c.rel_err = INFINITY;
    assert_int_equal(kevo_db_cand_update(db, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    add_cand(db, timed, 2, "lce_mma", "{\"BM\":64,\"BN\":64}", "ok", 2.0, INFINITY);
    add_cand(db, timed, 3, "lce_mma", "{\"BM\":32,\"BN\":64}", "ok", NAN, NAN);
    /* a compile-only run with a (crafted) baseline and peak: neither is shown */
    int64_t co = add_run(db, "B=4,M=4", true, 1.25);
    assert_int_equal(kevo_db_run_get(db, co, &r, &err), KEVO_OK);
    r.peak_tflops = 700;
    assert_int_equal(kevo_db_run_update(db, &r, &err), KEVO_OK);
    add_cand(db, co, 1, "lce_mma", "{\"BM\":64,\"BN\":32}", "compiled", NAN, NAN);
    kevo_db_close(db);
    assert_int_equal(raw_int(path, "SELECT speedup > 1e308 FROM candidates WHERE id = 1"), 1);

    /* JSON: valid, null for every non-finite figure and for the compile-only run's */
    tu_result res = RUN("report", "--db", path, "--format", "json");
    expect_ok(&res);
    assert_no_nonfinite("JSON", res.out);
    cJSON *j = cJSON_Parse(res.out);
    assert_non_null(j);
    const cJSON *runs = cJSON_GetObjectItem(j, "runs");
    const cJSON *r1 = cJSON_GetArrayItem(runs, 0), *r2 = cJSON_GetArrayItem(runs, 1);
    const char *nulls1[] = {"best_peer", "peak_tflops", "copy_tbps"};
    for (size_t i = 0; i < KV_ARRAY_LEN(nulls1); i++)
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(r1, nulls1[i])));
    const cJSON *pj;
    cJSON_ArrayForEach(pj, cJSON_GetObjectItem(r1, "peers"))
    {
        const char *pnulls[] = {"median_ms", "ci_lo_ms", "ci_hi_ms", "rel_err"};
        for (size_t i = 0; i < KV_ARRAY_LEN(pnulls); i++)
            assert_true(cJSON_IsNull(cJSON_GetObjectItem(pj, pnulls[i])));
    }
    const cJSON *best = cJSON_GetObjectItem(r1, "best");
    const char *nullsb[] = {"speedup", "vs_best_peer", "tflops", "roofline", "ci_lo_ms", "ci_hi_ms", "rel_err"};
    for (size_t i = 0; i < KV_ARRAY_LEN(nullsb); i++)
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(best, nullsb[i])));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(best, "params"), "BM")));
    const char *nulls2[] = {"best_peer", "peak_tflops", "copy_tbps"};
    for (size_t i = 0; i < KV_ARRAY_LEN(nulls2); i++)
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(r2, nulls2[i])));
    cJSON_Delete(j);
    tu_result_release(&res);

    /* table: "-" for what is not finite; the compile-only run names no baseline */
    res = RUN("report", "--db", path);
    expect_ok(&res);
    assert_no_nonfinite("table", res.out);
    const char *run2 = strstr(res.out, "\nrun 2 ");
    assert_non_null(run2);
    assert_null(strstr(run2, "baseline"));
    assert_null(strstr(run2, "peak"));
    tu_result_release(&res);

    /* SVG of each run: no nan or inf drawn; the compile-only one names no baseline */
    const char *which[] = {"1", "2"};
    for (size_t i = 0; i < KV_ARRAY_LEN(which); i++) {
        res = RUN("report", "--db", path, "--run", which[i], "--svg", svg);
        expect_ok(&res);
        tu_result_release(&res);
        char *text = slurp(svg, NULL);
        assert_no_nonfinite("SVG", text);
        if (i == 1) { /* the header line names no baseline */
            const char *head = strstr(text, ">kevo: ");
            assert_non_null(head);
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)strcspn(head, "\n"), head);
            assert_non_null(strstr(line, "compile-only"));
            assert_null(strstr(line, "baseline"));
        }
        free(text);
    }
}

/* ---- 8. text from a DB on the terminal ---- */

static void check_clean(const char *in, const char *want)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", in);
    assert_ptr_equal(kv_term_clean(buf), buf);
    assert_string_equal(buf, want);
}

static void test_term_clean(void **state)
{
    (void)state;
    check_clean("\x1b[2J", " [2J");
    check_clean("a\r\nb\tc", "a  b c");
    check_clean("x\x07y\x7fz", "x y z");
    check_clean("csi\xc2\x9b" "2J", "csi 2J");          /* C1 CSI, UTF-8 encoded */
    check_clean("nbsp\xc2\xa0ok", "nbsp\xc2\xa0ok");     /* U+00A0 is text */
    check_clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    check_clean("raw\x9b" "2J", "raw?2J");              /* an 8-bit CSI byte */
    check_clean("cut\xe2\x82", "cut??");
    check_clean("bad\xff\xc0\x80", "bad???");
    check_clean("", "");
    assert_null(kv_term_clean(NULL));
}

/* Text that may reach a terminal: no control character but line ends, no C1. */
static void assert_terminal_safe(const char *what, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (*p == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0))
            fail_msg("%s holds byte 0x%02x at %ld:\n%s", what, *p, (long)(p - (const unsigned char *)text), text);
}

static void test_terminal_text(void **state)
{
    (void)state;
    char path[PATH_MAX];
    path_in(path, sizeof path, "escapes.db");
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo\x1b[2J");
    snprintf(r.shape, sizeof r.shape, "B=8\r\nM=16\x1b[31m");
    snprintf(r.dtype, sizeof r.dtype, "fp\x1b" "16");
    snprintf(r.arch, sizeof r.arch, "sm\n90");
    snprintf(r.policy, sizeof r.policy, "greedy\x1b]0;owned\x07");
    snprintf(r.status, sizeof r.status, "done\x1b[2J");
    snprintf(r.stop_reason, sizeof r.stop_reason, "budget\r\x1b[K");
    snprintf(r.device, sizeof r.device, "GPU\xc2\x9b" "2J\n");
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_OK);
    kevo_db_close(db);
    /* peer rows whose name and detail carry escapes */
    raw_exec(path, "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, detail) VALUES"
                   "(1, 0, 0, 'stage0', 'ok', 1.5, 'ok' || char(27) || '[2J'),"
                   "(1, 0, 0, 'zz' || char(27) || ']0;t' || char(7), 'ok', 0.5, 'x' || char(13) || char(10) || 'y')");
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    add_cand(db, r.id, 1, "lce\x1b[1mmma", "{\"BM\\u001b[2J\":1,\"BN\":\"x\\ny\\r\"}", "ok", 2.0, 0.75);
    add_cand(db, r.id, 2, "lce_mma", "not json \x1b]0;title\x07\n", "ok", 1.5, 1.0);
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = r.id;
    c.seq = 3;
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.params = kv_strdup("{\"BM\":8}");
    snprintf(c.status, sizeof c.status, "failed");
    snprintf(c.fail, sizeof c.fail, "compile\x1b[2J");
    c.fail_msg = kv_strdup("boom\r\n\x1b[2Jnext \xc2\x9b line");
    assert_int_equal(kevo_db_cand_insert(db, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    kevo_db_close(db);

    tu_result res = RUN("report", "--db", path);
    expect_ok(&res);
    printf("%s", res.out);
    assert_terminal_safe("report table", res.out);
    /* the header's three lines stay three: run, device, counts */
    assert_true(strncmp(res.out, "run 1  ikbo [2J  B=8  M=16 [31m  fp 16  sm 90  policy greedy ]0;owned ", 70) == 0);
    const char *l2 = strchr(res.out, '\n') + 1;
    assert_true(strncmp(l2, "device GPU 2J ", 14) == 0);
    const char *l3 = strchr(l2, '\n') + 1;
    assert_true(strncmp(l3, "candidates 3 ", 13) == 0);
    assert_non_null(strstr(res.out, "BM [2J=1 BN=x y "));
    assert_non_null(strstr(res.out, "compile [2J: boom   [2Jnext   line"));
    tu_result_release(&res);

    /* JSON: control characters escaped by cJSON */
    res = RUN("report", "--db", path, "--format", "json");
    expect_ok(&res);
    for (const char *p = res.out; *p; p++)
        assert_true(*p != '\x1b' && *p != '\r' && *p != '\x07');
    cJSON *j = cJSON_Parse(res.out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "op")->valuestring,
                        "ikbo\x1b[2J"); /* the data itself is kept */
    cJSON_Delete(j);
    tu_result_release(&res);

    /* an error message that quotes the DB (replay: the run's op is unknown) */
    res = RUN("replay", "--db", path, "--model");
    expect_fail(&res, "unknown op 'ikbo [2J'");
    assert_terminal_safe("replay error", res.err);
    tu_result_release(&res);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-secdb-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    path_in(dir, sizeof dir, "locked");
    chmod(dir, 0755);
    return tu_rm_tree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_ro),         cmocka_unit_test(test_report_unwritable),
        cmocka_unit_test(test_not_kevo_files),  cmocka_unit_test(test_corrupt_page),
        cmocka_unit_test(test_old_schema_v1),   cmocka_unit_test(test_old_schema_v2),
        cmocka_unit_test(test_verify_no_gpu),   cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_term_clean),      cmocka_unit_test(test_terminal_text),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
