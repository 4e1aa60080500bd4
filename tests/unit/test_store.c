/* test_store.c — the SQLite store: open/identify, every row kind, counts,
 * transactions, and refusal of files that are not kevo's. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/store.h"
#include "util/util.h"
#include "testutil.h"

/* ---- helpers ---- */

/* A fresh unique path under /tmp that does not exist yet. */
static void tmp_path(char out[64])
{
    tu_tmp_path("kevo_store", out);
}

/* Remove a database and its side files. */
static void tmp_cleanup(const char *path)
{
    char side[PATH_MAX];
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < KV_ARRAY_LEN(sfx); i++) {
        int n = snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        if (n > 0 && (size_t)n < sizeof side)
            unlink(side);
    }
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Whole file contents (caller frees). */
static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(path, &data, len, &err), KEVO_OK);
    return data;
}

/* First column of the first row of sql on a separate raw connection, or
 * -999 for NULL / no row. */
static int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = -999;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* The one real number sql selects on a raw connection (NaN for NULL). */
static double raw_double(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    double v = NAN;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* Run statements on a raw connection (creating the file when missing). */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("raw exec: %s", msg ? msg : "?");
    sqlite3_free(msg);
    sqlite3_close(h);
}

typedef struct fixture {
    char path[64];
    kevo_db *db;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    tmp_path(f->path);
    kevo_err err;
    assert_int_equal(kevo_db_open(f->path, true, &f->db, &err), KEVO_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kevo_db_close(f->db);
    tmp_cleanup(f->path);
    free(f);
    return 0;
}

/* A new database at a fresh temporary path (written to path). */
static kevo_db *open_fresh(char path[64], kevo_err *err)
{
    tmp_path(path);
    kevo_db *db = NULL;
    assert_int_equal(kevo_db_open(path, true, &db, err), KEVO_OK);
    return db;
}

/* Close db and remove it with its side files. */
static void close_fresh(kevo_db *db, const char *path)
{
    kevo_db_close(db);
    tmp_cleanup(path);
}

static int64_t add_run(kevo_db *db, const char *op)
{
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "%s", op);
    snprintf(r.shape, sizeof r.shape, "B=8,M=16");
    snprintf(r.status, sizeof r.status, "running");
    kevo_err err;
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_OK);
    return r.id;
}

/* Insert a candidate; params is copied. */
static int64_t add_cand(kevo_db *db, int64_t run, int64_t seq, const char *family, const char *params,
                        const char *status, const char *fail, double speedup, double median, const char *bin)
{
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = seq;
    snprintf(c.family, sizeof c.family, "%s", family);
    c.params = kv_strdup(params);
    snprintf(c.status, sizeof c.status, "%s", status);
    snprintf(c.fail, sizeof c.fail, "%s", fail);
    snprintf(c.binary_key, sizeof c.binary_key, "%s", bin);
    c.speedup = speedup;
    c.median_ms = median;
    kevo_err err;
    kevo_status s = kevo_db_cand_insert(db, &c, &err);
    if (s)
        fail_msg("cand insert: %s", err.msg);
    kevo_cand_row_release(&c);
    return c.id;
}

/* ---- open and identity ---- */

static void test_create_reopen(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t id = add_run(db, "ikbo_lce");
    assert_int_equal(id, 1);
    kevo_db_close(db);

    assert_int_equal(raw_int(path, "PRAGMA application_id"), 0x4B45564F);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
                                   "('runs','sources','binaries','candidates','edges','measurements',"
                                   "'run_shapes','shape_results','timings','warm_seeds','run_settings',"
                                   "'generations','run_generators','run_devices','run_peers','run_paired')"),
                     16);
    /* peers are rows: no peer column in runs, run_shapes or run_devices */
    assert_int_equal(raw_int(path, "SELECT (SELECT count(*) FROM pragma_table_info('runs') WHERE name LIKE '%_ms') +"
                                   " (SELECT count(*) FROM pragma_table_info('run_shapes') WHERE name LIKE '%_ms') +"
                                   " (SELECT count(*) FROM pragma_table_info('run_devices') WHERE name LIKE '%_ms')"),
                     0);

    db = NULL;
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(db, 1, &r, &err), KEVO_OK);
    assert_string_equal(r.op, "ikbo_lce");
    assert_string_equal(r.shape, "B=8,M=16");
    kevo_db_close(db);

    /* the journal mode is persistent WAL */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(h);
    tmp_cleanup(path);
}

static void test_open_missing(void **state)
{
    (void)state;
    char path[64];
    tmp_path(path);
    kevo_db *db = (kevo_db *)1;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_ERR_IO);
    assert_null(db);
    assert_int_equal(err.status, KEVO_ERR_IO);
    char want[128];
    snprintf(want, sizeof want, "no such database '%s'", path);
    assert_string_equal(err.msg, want);
    assert_false(file_exists(path));
}

static void test_open_foreign_sqlite(void **state)
{
    (void)state;
    char path[64];
    tmp_path(path);
    raw_exec(path, "CREATE TABLE t(x); INSERT INTO t VALUES(42);");
    size_t n0 = 0, n1 = 0;
    char *before = slurp(path, &n0);
    kevo_db *db = NULL;
    kevo_err err;
    char want[128];
    snprintf(want, sizeof want, "'%s' is not a kevo database", path);
    for (int create = 0; create < 2; create++) {
        assert_int_equal(kevo_db_open(path, create, &db, &err), KEVO_ERR_DB);
        assert_null(db);
        assert_string_equal(err.msg, want);
    }
    char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    char side[96];
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(file_exists(side));
    assert_int_equal(raw_int(path, "PRAGMA application_id"), 0);
    assert_int_equal(raw_int(path, "SELECT x FROM t"), 42);
    free(before);
    free(after);
    tmp_cleanup(path);
}

static void test_open_other_app_id(void **state)
{
    (void)state;
    char path[64];
    tmp_path(path);
    raw_exec(path, "PRAGMA application_id=42;");
    size_t n0 = 0, n1 = 0;
    char *before = slurp(path, &n0);
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_ERR_DB);
    assert_non_null(strstr(err.msg, "is not a kevo database"));
    char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    tmp_cleanup(path);
}

/* A file of schema `ver` (1 or 2) with one run and one candidate opens,
 * is upgraded to schema 5 and keeps its rows. */
static void check_migrate(int ver)
{
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    add_cand(db, run, 1, "lce_mma", "{\"BM\":64}", "ok", "", 2.5, 0.75, "");
    kevo_db_close(db);
    raw_exec(path, TU_SCHEMA2_SQL);
    if (ver == 1)
        raw_exec(path, "ALTER TABLE runs DROP COLUMN filter; PRAGMA user_version=1;");
    assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'filter'"),
                     ver == 1 ? 0 : 1);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('candidates') WHERE name = 'vs_peer'"), 0);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_best(db, run, &c, &err), KEVO_OK);
    assert_true(c.speedup == 2.5 && c.median_ms == 0.75 && isnan(c.vs_peer) && isnan(c.fitness) && c.tied == -1);
    kevo_cand_row_release(&c);
    kevo_db_close(db);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                                   "('filter','nshapes','warm_start','best_id')"),
                     4);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name IN "
                                   "('baseline_ms','decomposed_ms','peer_id','peer_kernel_ms','peer_gather_ms')"),
                     0);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('candidates') WHERE name IN "
                                   "('vs_peer','roofline','ci_lo_ms','ci_hi_ms','model_ms','fitness','tied','device','eval_s',"
                                   "'round')"),
                     10);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN "
                                   "('run_shapes','shape_results','timings','warm_seeds','run_settings','run_devices',"
                                   "'run_peers')"),
                     7);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM runs WHERE op = 'ikbo_lce'"), 1);
    tmp_cleanup(path);
}

static void test_migrate_v1(void **state)
{
    (void)state;
    check_migrate(1);
}

static void test_migrate_v2(void **state)
{
    (void)state;
    check_migrate(2);
}

/* A schema-3 file gains run_settings (and schema 5's tables); its runs have
 * none (NOT_FOUND). */
static void test_migrate_v3(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    kevo_db_close(db);
    raw_exec(path, TU_SCHEMA5_SQL);
    raw_exec(path, "DROP TABLE generations; DROP TABLE run_llm; DROP TABLE run_settings; PRAGMA user_version=3;");
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    kevo_run_settings rs;
    assert_int_equal(kevo_db_run_settings_get(db, run, &rs, &err), KEVO_ERR_NOT_FOUND);
    close_fresh(db, path);
}

/* A schema-7 file gains each candidate's round and a run's --ahead: its
 * runs proposed a round at a time (ahead 1), its candidates' rounds are
 * unknown (-1); a new candidate keeps its round. */
static void test_migrate_v7(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    int64_t old = add_cand(db, run, 1, "lce_mma", "{\"BM\":64}", "pending", "", NAN, NAN, "");
    kevo_run_settings rs;
    memset(&rs, 0, sizeof rs);
    rs.batch = 8;
    rs.ahead = 3;
    assert_int_equal(kevo_db_run_settings_put(db, run, &rs, &err), KEVO_OK);
    kevo_db_close(db);
    raw_exec(path, TU_SCHEMA7_SQL);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    assert_int_equal(kevo_db_run_settings_get(db, run, &rs, &err), KEVO_OK);
    assert_int_equal(rs.batch, 8);
    assert_int_equal(rs.ahead, 1);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_get(db, old, &c, &err), KEVO_OK);
    assert_int_equal(c.round, -1);
    kevo_cand_row_release(&c);
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = 2;
    c.round = 4;
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.params = kv_strdup("{\"BM\":128}");
    assert_int_equal(kevo_db_cand_insert(db, &c, &err), KEVO_OK);
    int64_t id = c.id;
    kevo_cand_row_release(&c);
    assert_int_equal(kevo_db_cand_get(db, id, &c, &err), KEVO_OK);
    assert_int_equal(c.round, 4);
    kevo_cand_row_release(&c);
    close_fresh(db, path);
}

/* Schema 8 -> 9: every peer column becomes a run_peers row by name and the
 * columns go.  A file as schema 8 wrote it (its peers in columns) and the
 * older fixture DBs of the tree (schemas 4 and 6), each opened read-write
 * on a copy: ikbo_lce's old decomposed_ms, whose K was unaligned, becomes
 * "decomposed_unaligned" (no op declares it: never a best); ikbo_fa's
 * baseline (b) keeps its candidate and times in its detail. */
static void test_migrate_v8_peers(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    kevo_db_close(db);
    raw_exec(path, TU_SCHEMA8_SQL);
    raw_exec(path, "UPDATE runs SET baseline_ms = 1.9, baseline_bcast_ms = 2.4, decomposed_ms = 1.1;"
                   "INSERT INTO run_devices(run_id, idx, ordinal, baseline_ms, decomposed_ms) VALUES(1, 1, 1, 1.95, 1.2);"
                   "INSERT INTO run_shapes(run_id, idx, shape, weight, baseline_ms) VALUES(1, 0, 'a', 1, 1.9),"
                   "(1, 1, 'b', 1, 0.3);");
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 8);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    const kevo_op *lce = kevo_op_find("ikbo_lce");
    kevo_peer_set ps;
    assert_int_equal(kevo_db_peers_get(db, run, 0, 0, lce, &ps, &err), KEVO_OK);
    assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_index(lce, "stage0")) == 1.9);
    assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_index(lce, "stage0_bcast")) == 2.4);
    assert_int_equal(ps.p[kevo_op_peer_index(lce, "decomposed")].state, KEVO_PEER_UNMEASURED);
    double best = 0;
    assert_int_equal(kevo_peer_best(lce, &ps, &best), kevo_op_peer_index(lce, "stage0"));
    assert_true(best == 1.9); /* the old, weaker decomposed form does not count */
    assert_int_equal(raw_int(path, "SELECT count(*) FROM run_peers WHERE peer = 'decomposed_unaligned' AND "
                                   "median_ms = 1.1 AND detail LIKE '%K unaligned%' AND shape_idx = 0 AND device = 0"),
                     1);
    assert_int_equal(kevo_db_peers_get(db, run, 0, 1, lce, &ps, &err), KEVO_OK);
    assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_index(lce, "stage0")) == 1.95);
    assert_int_equal(kevo_db_peers_get(db, run, 1, 0, lce, &ps, &err), KEVO_OK);
    assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_index(lce, "stage0")) == 0.3);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM run_peers"), 6);
    kevo_db_close(db);

    /* the tree's older fixtures */
    const struct {
        const char *file;
        int version, runs;
    } fx[] = {{"kevo_h200.db", 4, 2}, {"kevo_fa_h100.db", 6, 2}};
    for (size_t i = 0; i < KV_ARRAY_LEN(fx); i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s/tests/fixtures/export/%s", tu_home(), fx[i].file);
        size_t len = 0;
        char *data = slurp(src, &len);
        assert_true(len > 0);
        assert_int_equal(kv_write_file(path, data, len, &err), KEVO_OK);
        free(data);
        assert_int_equal(raw_int(path, "PRAGMA user_version"), fx[i].version);
        double base1 = raw_double(path, "SELECT baseline_ms FROM runs WHERE id = 1");
        assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
        assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
        assert_int_equal(raw_int(path, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'baseline_ms'"),
                         0);
        assert_int_equal(raw_int(path, "SELECT count(DISTINCT run_id) FROM run_peers WHERE peer = 'stage0'"),
                         fx[i].runs);
        kevo_run_row r;
        assert_int_equal(kevo_db_run_get(db, 1, &r, &err), KEVO_OK);
        const kevo_op *op = kevo_op_find(r.op);
        assert_int_equal(kevo_db_peers_get(db, 1, 0, 0, op, &ps, &err), KEVO_OK);
        assert_true(kevo_peer_ok_ms(&ps, kevo_op_peer_baseline(op)) == base1);
        if (strcmp(r.op, "ikbo_fa") == 0) { /* (b): kernel 1.514 + gather 1.926 = 3.440 ms, candidate 5 */
            const kevo_peer_fig *b = &ps.p[kevo_op_peer_index(op, "nocodesign")];
            assert_true(b->state == KEVO_PEER_OK && fabs(b->median_ms - 3.4403198) < 1e-6 && b->cand_id == 5);
            assert_non_null(strstr(b->detail, "kernel 1.5144 ms + gather 1.9259 ms"));
            assert_int_equal(kevo_peer_best(op, &ps, NULL), kevo_op_peer_index(op, "nocodesign"));
        }
        kevo_db_close(db);
    }
    tmp_cleanup(path);
}

/* An LLM call and its candidate round-trip, the API key column does not
 * exist, and a run's LLM settings come back as stored. */
static void test_generations(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    int64_t parent = add_cand(db, run, 1, "lce_mma", "{\"BM\":64}", "ok", "", 2.5, 0.75, "");
    int64_t child = add_cand(db, run, 2, "llm_0123456789ab", "{\"BM\":64}", "failed", "compile_error", NAN, NAN,
                             "error: x");
    kevo_generation_row g;
    kevo_generation_row_init(&g);
    g.candidate_id = child;
    g.run_id = run;
    g.parent_id = parent;
    snprintf(g.generator, sizeof g.generator, "llm");
    snprintf(g.model, sizeof g.model, "qwen");
    g.system_prompt = "sys";
    g.prompt = "user prompt with the parent's source";
    g.reply = "```cuda\n__global__ void k() {}\n```";
    g.tokens_in = 1200;
    g.tokens_out = 300;
    g.latency_s = 4.5;
    g.seed = 9;
    g.temperature = 0.2;
    snprintf(g.finish_reason, sizeof g.finish_reason, "stop");
    g.http_status = 200;
    g.attempts = 2;
    g.space = "{\"family\":\"llm_0123456789ab\"}";
    g.source = "__global__ void k() {}";
    assert_int_equal(kevo_db_generation_put(db, &g, &err), KEVO_OK);
    /* one generation per candidate */
    assert_int_equal(kevo_db_generation_put(db, &g, &err), KEVO_ERR_DB);
    kevo_generation_row *v = NULL;
    int n = 0;
    assert_int_equal(kevo_db_generation_list(db, run, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].parent_id, parent);
    assert_string_equal(v[0].prompt, g.prompt);
    assert_string_equal(v[0].reply, g.reply);
    assert_string_equal(v[0].source, g.source);
    assert_int_equal(v[0].tokens_in, 1200);
    assert_int_equal(v[0].attempts, 2);
    assert_true(fabs(v[0].latency_s - 4.5) < 1e-12);
    assert_string_equal(v[0].finish_reason, "stop");
    assert_null(v[0].error);
    kevo_generation_rows_free(v, n);
    kevo_generation_row r;
    assert_int_equal(kevo_db_generation_get(db, parent, &r, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_db_generation_get(db, child, &r, &err), KEVO_OK);
    assert_string_equal(r.model, "qwen");
    kevo_generation_row_release(&r);

    close_fresh(db, path);
}

/* A run's generators: one row each, options a JSON object, calls; put
 * replaces them; a row a DB holds that kevo does not write is refused by
 * name (the DB is untrusted), never read as options. */
static void test_run_generators(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    kevo_run_gen_row *v = NULL;
    int n = -1;
    assert_int_equal(kevo_db_run_generators_get(db, run, &v, &n, &err), KEVO_ERR_NOT_FOUND);
    assert_null(v);
    assert_int_equal(n, 0);
    kevo_run_gen_row put[2] = {{.name = "template", .options = "{}", .calls = 0},
                               {.name = "llm", .options = "{\"budget\":10,\"url\":\"http://127.0.0.1:8080/v1\"}",
                                .calls = 3}};
    assert_int_equal(kevo_db_run_generators_put(db, run, put, 2, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_generators_get(db, run, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "template");
    assert_string_equal(v[0].options, "{}");
    assert_int_equal(v[0].calls, 0);
    assert_string_equal(v[1].name, "llm");
    assert_string_equal(v[1].options, put[1].options);
    assert_int_equal(v[1].calls, 3);
    kevo_run_gen_rows_free(v, n);
    /* put replaces */
    put[1].calls = 4;
    assert_int_equal(kevo_db_run_generators_put(db, run, &put[1], 1, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_generators_get(db, run, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].calls, 4);
    kevo_run_gen_rows_free(v, n);
    /* what put refuses */
    kevo_run_gen_row bad = {.name = "llm", .options = "[1]", .calls = 0};
    assert_int_equal(kevo_db_run_generators_put(db, run, &bad, 1, &err), KEVO_ERR_ARG);
    bad.options = "{}";
    bad.calls = -1;
    assert_int_equal(kevo_db_run_generators_put(db, run, &bad, 1, &err), KEVO_ERR_ARG);
    kevo_db_close(db);

    /* rows of a crafted DB: each refused with a message naming it */
    const char *crafted[] = {
        "UPDATE run_generators SET options = '{\"budget\":' WHERE name = 'llm'",
        "UPDATE run_generators SET options = x'7b7d' WHERE name = 'llm'",
        "UPDATE run_generators SET options = '\"text\"' WHERE name = 'llm'",
        "UPDATE run_generators SET calls = -2 WHERE name = 'llm'",
        "UPDATE run_generators SET calls = 'many' WHERE name = 'llm'",
        "UPDATE run_generators SET name = '' WHERE name = 'llm'",
        "UPDATE run_generators SET name = printf('%070d', 1) WHERE name = 'llm'",
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(crafted); i++) {
        raw_exec(path, "DELETE FROM run_generators; INSERT INTO run_generators(run_id, name, options, calls) "
                       "VALUES(1, 'llm', '{}', 0);");
        raw_exec(path, crafted[i]);
        assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
        v = NULL;
        n = -1;
        kevo_status s = kevo_db_run_generators_get(db, run, &v, &n, &err);
        if (s != KEVO_ERR_PARSE)
            fail_msg("crafted row %zu: status %d (%s)", i, (int)s, err.msg);
        assert_null(v);
        assert_int_equal(n, 0);
        assert_non_null(strstr(err.msg, "run 1"));
        kevo_db_close(db);
    }
    tmp_cleanup(path);
}

/* The paired figure (run_paired, schema 11): written, read back, replaced
 * and cleared; a figure out of range is refused before it is written, and
 * a hand-edited row (a name that is no peer name, a NUL inside it, rounds
 * or a ratio out of range) is refused on reading with the field named.
 * A file of schema 10 opens, upgraded, with no figure for its runs. */
static void test_paired(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    int64_t c = add_cand(db, run, 1, "lce_mma", "{\"BM\":64}", "ok", "", 0.4, 1.0, "");
    kevo_paired_row p = {.cand_id = c, .peer = "beta1", .rounds = 3, .ratio = 1.14, .ci_lo = 1.12, .ci_hi = 1.16};
    const double ms[3] = {0.45, 0.46, 0.455};
    kevo_paired_row got;
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_db_paired_put(db, run, &p, ms, &err), KEVO_OK);
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_OK);
    assert_int_equal(got.cand_id, c);
    assert_string_equal(got.peer, "beta1");
    assert_int_equal(got.rounds, 3);
    assert_true(got.ratio == 1.14 && got.ci_lo == 1.12 && got.ci_hi == 1.16);
    p.ratio = 1.2; /* replaced, one row a run */
    p.ci_hi = 1.3;
    assert_int_equal(kevo_db_paired_put(db, run, &p, NULL, &err), KEVO_OK);
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_OK);
    assert_true(got.ratio == 1.2);
    kevo_paired_row bad = p;
    bad.ci_lo = 1.25; /* the interval must hold the ratio */
    assert_int_equal(kevo_db_paired_put(db, run, &bad, NULL, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "lo <= ratio <= hi"));
    bad = p;
    snprintf(bad.peer, sizeof bad.peer, "beta1;drop");
    assert_int_equal(kevo_db_paired_put(db, run, &bad, NULL, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "peer's name"));
    bad = p;
    bad.rounds = 1;
    assert_int_equal(kevo_db_paired_put(db, run, &bad, NULL, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_OK); /* the refused ones wrote nothing */
    assert_true(got.ratio == 1.2);
    kevo_db_close(db);
    assert_int_equal(raw_int(path, "SELECT peer_ms IS NULL FROM run_paired WHERE run_id = 1"), 1);

    const char *edits[] = {"UPDATE run_paired SET peer = 'be' || char(0) || 'ta1'",
                           "UPDATE run_paired SET peer = 'Beta1'",
                           "UPDATE run_paired SET peer = printf('%040d', 1)",
                           "UPDATE run_paired SET rounds = 100000",
                           "UPDATE run_paired SET ratio = NULL",
                           "UPDATE run_paired SET ci_lo = -1"};
    const char *field[] = {"peer's name", "peer's name", "peer's name", "100000 rounds", "ratio", "ratio"};
    for (size_t i = 0; i < KV_ARRAY_LEN(edits); i++) {
        raw_exec(path, "UPDATE run_paired SET peer = 'beta1', rounds = 3, ratio = 1.2, ci_lo = 1.12, ci_hi = 1.3");
        raw_exec(path, edits[i]);
        assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
        assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_ERR_DB);
        assert_non_null(strstr(err.msg, "paired figure"));
        assert_non_null(strstr(err.msg, field[i]));
        assert_null(strstr(err.msg, "Beta1"));
        kevo_db_close(db);
    }
    raw_exec(path, "UPDATE run_paired SET peer = 'beta1', rounds = 3, ratio = 1.2, ci_lo = 1.12, ci_hi = 1.3");
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(kevo_db_paired_clear(db, run, &err), KEVO_OK);
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_db_paired_clear(db, run, &err), KEVO_OK); /* none there: no error */
    kevo_db_close(db);

    /* schema 10 -> 11 */
    raw_exec(path, TU_SCHEMA10_SQL);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 10);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    assert_int_equal(kevo_db_paired_get(db, run, &got, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_db_paired_put(db, run, &p, ms, &err), KEVO_OK);
    kevo_db_close(db);
    assert_int_equal(raw_int(path, "SELECT length(peer_ms) FROM run_paired WHERE run_id = 1"), 24);
    tmp_cleanup(path);
}

/* Schema 9 -> 10: run_llm (the old DDL, TU_SCHEMA9_SQL) becomes one
 * run_generators row per name of its list, the LLM's options a JSON object
 * of them, calls its generations; run_llm goes, and the old failure kind
 * llm_error reads as gen_error. */
static void test_migrate_v9_generators(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    int64_t run = add_run(db, "ikbo_lce");
    int64_t run2 = add_run(db, "ikbo_lce");
    int64_t run3 = add_run(db, "ikbo_lce");
    int64_t parent = add_cand(db, run, 1, "lce_mma", "{\"BM\":64}", "ok", "", 1.0, 1.0, "");
    int64_t child = add_cand(db, run, 2, "llm_call0", "{}", "failed", "", NAN, NAN, "");
    kevo_generation_row g;
    kevo_generation_row_init(&g);
    g.candidate_id = child;
    g.run_id = run;
    g.parent_id = parent;
    snprintf(g.generator, sizeof g.generator, "llm");
    assert_int_equal(kevo_db_generation_put(db, &g, &err), KEVO_OK);
    kevo_db_close(db);
    raw_exec(path, TU_SCHEMA9_SQL);
    raw_exec(path, "UPDATE candidates SET fail = 'llm_error' WHERE family = 'llm_call0';"
                   "INSERT INTO run_llm VALUES(1, 'template,llm', 12, 'http://127.0.0.1:8080/v1', 'a,b', NULL, 7,"
                   " 4096);"
                   "INSERT INTO run_llm VALUES(2, 'template', 10, NULL, NULL, 0.5, NULL, 8192);"
                   "INSERT INTO run_llm VALUES(3, ',llm,,llm,nosuch', 1, NULL, NULL, NULL, NULL, NULL);");
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 9);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_OK);
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 11);
    assert_int_equal(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'run_llm'"), 0);
    kevo_run_gen_row *v = NULL;
    int n = 0;
    assert_int_equal(kevo_db_run_generators_get(db, run, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "template");
    assert_string_equal(v[0].options, "{}");
    assert_int_equal(v[0].calls, 0);
    assert_string_equal(v[1].name, "llm");
    assert_string_equal(v[1].options, "{\"budget\":12,\"url\":\"http://127.0.0.1:8080/v1\",\"model\":\"a,b\","
                                      "\"temperature\":null,\"seed\":7,\"max_tokens\":4096}");
    assert_int_equal(v[1].calls, 1);
    kevo_run_gen_rows_free(v, n);
    assert_int_equal(kevo_db_run_generators_get(db, run2, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 1); /* a run without the LLM keeps no LLM options */
    assert_string_equal(v[0].name, "template");
    kevo_run_gen_rows_free(v, n);
    /* a crafted list: empty names skipped, a repeat stored once, an unknown name kept (a resume refuses it) */
    assert_int_equal(kevo_db_run_generators_get(db, run3, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "llm");
    assert_string_equal(v[1].name, "nosuch");
    kevo_run_gen_rows_free(v, n);
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_get(db, child, &c, &err), KEVO_OK);
    assert_string_equal(c.fail, "gen_error");
    kevo_cand_row_release(&c);
    close_fresh(db, path);
}

static void test_open_newer_schema(void **state)
{
    (void)state;
    char path[64];
    kevo_err err;
    kevo_db *db = open_fresh(path, &err);
    kevo_db_close(db);
    raw_exec(path, "PRAGMA journal_mode=DELETE; PRAGMA user_version=12;");
    size_t n0 = 0, n1 = 0;
    char *before = slurp(path, &n0);
    db = NULL;
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_ERR_DB);
    assert_null(db);
    char want[128];
    snprintf(want, sizeof want, "'%s' was written by a newer kevo (schema 12)", path);
    assert_string_equal(err.msg, want);
    char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    tmp_cleanup(path);
}

static void test_open_garbage(void **state)
{
    (void)state;
    char path[64];
    tmp_path(path);
    kevo_err err;
    assert_int_equal(kv_write_file(path, "hello world", 11, &err), KEVO_OK);
    kevo_db *db = NULL;
    char want[128];
    snprintf(want, sizeof want, "'%s' is not a kevo database or is corrupt", path);
    for (int create = 0; create < 2; create++) {
        assert_int_equal(kevo_db_open(path, create, &db, &err), KEVO_ERR_DB);
        assert_null(db);
        assert_string_equal(err.msg, want);
    }
    size_t n = 0;
    char *after = slurp(path, &n);
    assert_int_equal(n, 11);
    assert_memory_equal(after, "hello world", 11);
    free(after);
    char side[96];
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(file_exists(side));
    tmp_cleanup(path);
}

static void test_open_unwritable(void **state)
{
    (void)state;
    kevo_db *db = NULL;
    kevo_err err;
    /* a directory that does not exist: nobody can create a file in it */
    char dir[64], path[128];
    tmp_path(dir);
    snprintf(path, sizeof path, "%s/sub/k.db", dir);
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_ERR_IO);
    assert_null(db);
    assert_non_null(strstr(err.msg, path));
    assert_false(file_exists(dir));

    if (geteuid() == 0)
        return; /* root ignores permissions */
    snprintf(dir, sizeof dir, "/tmp/kevo_ro_XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0555), 0);
    snprintf(path, sizeof path, "%s/k.db", dir);
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_ERR_IO);
    assert_null(db);
    assert_non_null(strstr(err.msg, path));
    assert_false(file_exists(path));
    /* an existing database that may not be written */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    kevo_db_close(db);
    raw_exec(path, "PRAGMA journal_mode=DELETE;");
    assert_int_equal(chmod(path, 0444), 0);
    assert_int_equal(kevo_db_open(path, false, &db, &err), KEVO_ERR_IO);
    assert_null(db);
    assert_non_null(strstr(err.msg, path));
    tmp_cleanup(path);
    rmdir(dir);
}

/* ---- runs ---- */

static void test_run_roundtrip(void **state)
{
    fixture *f = *state;
    kevo_err err;
    kevo_run_row r;
    kevo_run_row_init(&r);
    assert_true(isnan(r.peak_tflops) && isnan(r.copy_tbps));
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "B=1024,M=433,N=128,K=64");
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.arch, sizeof r.arch, "sm_90a");
    snprintf(r.policy, sizeof r.policy, "greedy");
    snprintf(r.families, sizeof r.families, "lce_mma,lce_simt");
    r.seed = 7;
    r.budget = 60;
    r.compile_only = false;
    snprintf(r.status, sizeof r.status, "running");
    snprintf(r.device, sizeof r.device, "NVIDIA H200");
    r.driver_version = 13000;
    r.sm_count = 132;
    r.sm_clock_mhz = 1980;
    r.mem_clock_mhz = 3201;
    r.peak_tflops = 761.5;
    r.flops = 1.5e12;
    r.bytes = 3.25e9;
    r.pid = 4242;
    assert_int_equal(kevo_db_run_insert(f->db, &r, &err), KEVO_OK);
    assert_int_equal(r.id, 1);
    assert_int_equal(strlen(r.created_at), 20); /* filled in: YYYY-MM-DDTHH:MM:SSZ */

    /* NaN and empty optional text are stored as NULL */
    assert_int_equal(raw_int(f->path, "SELECT copy_tbps IS NULL AND "
                                      "stop_reason IS NULL AND finished_at IS NULL FROM runs WHERE id=1"),
                     1);
    assert_int_equal(raw_int(f->path, "SELECT peak_tflops IS NOT NULL FROM runs WHERE id=1"), 1);

    kevo_run_row g;
    assert_int_equal(kevo_db_run_get(f->db, 1, &g, &err), KEVO_OK);
    assert_int_equal(g.id, 1);
    assert_string_equal(g.op, "ikbo_lce");
    assert_string_equal(g.shape, "B=1024,M=433,N=128,K=64");
    assert_string_equal(g.dtype, "fp16");
    assert_string_equal(g.arch, "sm_90a");
    assert_string_equal(g.policy, "greedy");
    assert_string_equal(g.families, "lce_mma,lce_simt");
    assert_int_equal(g.seed, 7);
    assert_int_equal(g.budget, 60);
    assert_false(g.compile_only);
    assert_string_equal(g.status, "running");
    assert_string_equal(g.stop_reason, "");
    assert_string_equal(g.device, "NVIDIA H200");
    assert_int_equal(g.driver_version, 13000);
    assert_int_equal(g.sm_count, 132);
    assert_int_equal(g.sm_clock_mhz, 1980);
    assert_int_equal(g.mem_clock_mhz, 3201);
    assert_true(g.peak_tflops == 761.5);
    assert_true(isnan(g.copy_tbps));
    assert_true(g.flops == 1.5e12);
    assert_true(g.bytes == 3.25e9);
    assert_int_equal(g.pid, 4242);
    assert_string_equal(g.created_at, r.created_at);
    assert_string_equal(g.finished_at, "");
    assert_int_equal(g.nshapes, 0);
    assert_string_equal(g.warm_start, "");
    assert_int_equal(g.best_id, 0);

    /* update writes every field */
    snprintf(g.status, sizeof g.status, "done");
    snprintf(g.stop_reason, sizeof g.stop_reason, "budget");
    snprintf(g.finished_at, sizeof g.finished_at, "2025-01-02T03:04:05Z");
    g.copy_tbps = 2.679;
    g.peak_tflops = NAN;
    g.compile_only = true;
    g.nshapes = 3;
    snprintf(g.warm_start, sizeof g.warm_start, "other.db");
    g.best_id = 12;
    assert_int_equal(kevo_db_run_update(f->db, &g, &err), KEVO_OK);
    kevo_run_row h;
    assert_int_equal(kevo_db_run_get(f->db, 1, &h, &err), KEVO_OK);
    assert_string_equal(h.status, "done");
    assert_string_equal(h.stop_reason, "budget");
    assert_string_equal(h.finished_at, "2025-01-02T03:04:05Z");
    assert_true(h.copy_tbps == 2.679);
    assert_true(isnan(h.peak_tflops));
    assert_true(h.compile_only);
    assert_string_equal(h.op, "ikbo_lce");
    assert_int_equal(h.nshapes, 3);
    assert_string_equal(h.warm_start, "other.db");
    assert_int_equal(h.best_id, 12);

    /* unknown ids */
    assert_int_equal(kevo_db_run_get(f->db, 99, &h, &err), KEVO_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "no run 99"));
    h.id = 99;
    assert_int_equal(kevo_db_run_update(f->db, &h, &err), KEVO_ERR_NOT_FOUND);
}

static void test_run_text_truncated(void **state)
{
    fixture *f = *state;
    kevo_err err;
    raw_exec(f->path, "INSERT INTO runs(id, op, dtype, status) VALUES(5, "
                      "'abcdefghijklmnopqrstuvwxyz0123456789', 'float16-extra', 'done')");
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(f->db, 5, &r, &err), KEVO_OK);
    assert_string_equal(r.op, "abcdefghijklmnopqrstuvwxyz01234"); /* 31 chars + NUL */
    assert_string_equal(r.dtype, "float16");
    assert_string_equal(r.status, "done");
    assert_int_equal(r.sm_count, 0);
    assert_true(isnan(r.peak_tflops));
}

static void test_run_ids(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t *ids = NULL;
    int n = -1;
    assert_int_equal(kevo_db_run_ids(f->db, &ids, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    free(ids);
    add_run(f->db, "a");
    add_run(f->db, "b");
    add_run(f->db, "c");
    assert_int_equal(kevo_db_run_ids(f->db, &ids, &n, &err), KEVO_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 3);
    free(ids);
}

/* A peer set of op with peer `name` OK at ms (others left as they are). */
static void set_peer(const kevo_op *op, kevo_peer_set *ps, const char *name, kevo_peer_state state, double ms)
{
    int i = kevo_op_peer_index(op, name);
    assert_true(i >= 0);
    ps->p[i].state = state;
    ps->p[i].median_ms = state == KEVO_PEER_OK ? ms : NAN;
    ps->p[i].ci_lo_ms = state == KEVO_PEER_OK ? ms * 0.99 : NAN;
    ps->p[i].ci_hi_ms = state == KEVO_PEER_OK ? ms * 1.01 : NAN;
    ps->p[i].rel_err = state == KEVO_PEER_FAILED ? 0.5 : 1e-4;
    snprintf(ps->p[i].detail, sizeof ps->p[i].detail, "detail of %s", name);
}

/* Peers are rows by name: put and read back at (shape, device), unmeasured
 * peers not written, one key replaced in place; a failed peer is stored as
 * failed and is never the best; a name the op does not declare is listed
 * but left out of a set; a status kevo never writes reads as an error. */
static void test_peers_roundtrip(void **state)
{
    fixture *f = *state;
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    int64_t run = add_run(f->db, "ikbo_lce");
    kevo_peer_set ps, back;
    kevo_peer_set_init(&ps);
    set_peer(op, &ps, "stage0", KEVO_PEER_OK, 2.0);
    set_peer(op, &ps, "decomposed", KEVO_PEER_OK, 0.7);
    set_peer(op, &ps, "beta1", KEVO_PEER_FAILED, 0.1); /* fastest, and wrong */
    snprintf(ps.p[kevo_op_peer_index(op, "decomposed")].config, KEVO_PEER_CONFIG_MAX, "{\"form\":\"decomposed\"}");
    assert_int_equal(kevo_db_peers_put(f->db, run, 0, 0, op, &ps, &err), KEVO_OK);
    assert_int_equal(kevo_db_peers_put(f->db, run, 2, 1, op, &ps, &err), KEVO_OK);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM run_peers"), 6); /* stage0_bcast unmeasured: no row */
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM run_peers WHERE peer='beta1' AND status='failed' AND "
                                      "median_ms IS NULL AND rel_err = 0.5"),
                     2);
    assert_int_equal(kevo_db_peers_get(f->db, run, 0, 0, op, &back, &err), KEVO_OK);
    int d = kevo_op_peer_index(op, "decomposed"), b1 = kevo_op_peer_index(op, "beta1");
    assert_int_equal(back.p[d].state, KEVO_PEER_OK);
    assert_true(back.p[d].median_ms == 0.7 && back.p[d].ci_lo_ms == 0.7 * 0.99);
    assert_string_equal(back.p[d].config, "{\"form\":\"decomposed\"}");
    assert_string_equal(back.p[d].detail, "detail of decomposed");
    assert_int_equal(back.p[b1].state, KEVO_PEER_FAILED);
    assert_true(isnan(back.p[b1].median_ms));
    assert_int_equal(back.p[kevo_op_peer_index(op, "stage0_bcast")].state, KEVO_PEER_UNMEASURED);
    double ms = 0;
    assert_int_equal(kevo_peer_best(op, &back, &ms), d); /* the failed beta1 never counts */
    assert_true(ms == 0.7);
    char verdict[320];
    kevo_peer_verdict(op, 0.5, &back, verdict, sizeof verdict);
    assert_non_null(strstr(verdict, "no kernel beats decomposed cuBLAS (K padded) at this shape: best 0.50x"));
    assert_non_null(strstr(verdict, "export will dispatch to decomposed cuBLAS (K padded)"));
    /* stage 0 (not a form export can run) beats the kernel, the vendor form does not: the kernel stays */
    set_peer(op, &back, "stage0", KEVO_PEER_OK, 0.5);
    kevo_peer_verdict(op, 0.8, &back, verdict, sizeof verdict); /* the kernel: 0.625 ms, decomposed 0.7 */
    assert_non_null(strstr(verdict, "no kernel beats the stage-0 cuBLAS baseline at this shape: best 0.80x"));
    assert_non_null(strstr(verdict, "export keeps the kernel, faster than decomposed cuBLAS (K padded) (0.7000 ms)"));
    set_peer(op, &back, "stage0", KEVO_PEER_OK, 2.0);
    kevo_peer_verdict(op, 1.5, &back, verdict, sizeof verdict);
    assert_non_null(strstr(verdict, "beats the best in-run peer, decomposed cuBLAS (K padded) (0.7000 ms), 1.50x"));

    /* another (shape, device) is its own */
    kevo_peer_set other;
    assert_int_equal(kevo_db_peers_get(f->db, run, 1, 0, op, &other, &err), KEVO_OK);
    assert_int_equal(kevo_peer_best(op, &other, NULL), -1);
    kevo_peer_verdict(op, 2.0, &other, verdict, sizeof verdict);
    assert_string_equal(verdict, "no in-run peer was checked");

    /* replaced in place */
    set_peer(op, &ps, "decomposed", KEVO_PEER_OK, 0.9);
    assert_int_equal(kevo_db_peers_put(f->db, run, 0, 0, op, &ps, &err), KEVO_OK);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM run_peers"), 6);
    assert_int_equal(kevo_db_peers_get(f->db, run, 0, 0, op, &back, &err), KEVO_OK);
    assert_true(back.p[d].median_ms == 0.9);

    /* hostile rows: a name no op declares, a status kevo never writes */
    raw_exec(f->path, "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms) "
                      "VALUES(1, 0, 0, 'zz_unknown', 'ok', 0.001)");
    raw_exec(f->path, "UPDATE run_peers SET status = 'OK!', median_ms = 0.01 WHERE peer = 'stage0'");
    kevo_peer_row *rows = NULL;
    int n = 0;
    assert_int_equal(kevo_db_peers_list(f->db, run, &rows, &n, &err), KEVO_OK);
    assert_int_equal(n, 7);
    bool seen = false;
    for (int i = 0; i < n; i++) {
        seen |= strcmp(rows[i].peer, "zz_unknown") == 0;
        if (strcmp(rows[i].peer, "stage0") == 0)
            assert_int_equal(rows[i].fig.state, KEVO_PEER_ERROR);
    }
    assert_true(seen);
    kevo_peer_rows_set(op, rows, n, 0, 0, &back);
    free(rows);
    assert_int_equal(kevo_peer_best(op, &back, &ms), d);
    assert_true(ms == 0.9);
}

/* A peer measured after the search (ikbo_fa's baseline (b)): it joins the
 * run's peers, every verified candidate's vs_peer becomes the fastest
 * checked peer over its median (the other candidates and runs untouched),
 * and fitness is left alone. */
static void test_peers_after(void **state)
{
    fixture *f = *state;
    kevo_err err;
    const kevo_op *op = kevo_op_find("ikbo_fa");
    int64_t run = add_run(f->db, "ikbo_fa");
    int64_t other = add_run(f->db, "ikbo_fa");
    int64_t a = add_cand(f->db, run, 1, "fa_ws", "{\"BM\":64}", "ok", "", 4.0, 0.5, "");
    int64_t b = add_cand(f->db, run, 2, "fa_ws", "{\"BM\":128}", "ok", "", 2.0, 1.0, "");
    int64_t c = add_cand(f->db, run, 3, "fa_ws", "{\"BM\":32}", "failed", "wrong_result", NAN, NAN, "");
    int64_t d = add_cand(f->db, other, 1, "fa_ws", "{\"BM\":64}", "ok", "", 4.0, 0.5, "");
    kevo_cand_row x;
    for (int64_t id = a; id <= d; id++) { /* vs_peer and fitness as the search stored them */
        assert_int_equal(kevo_db_cand_get(f->db, id, &x, &err), KEVO_OK);
        x.vs_peer = 7.0;
        x.fitness = 3.0;
        assert_int_equal(kevo_db_cand_update(f->db, &x, &err), KEVO_OK);
        kevo_cand_row_release(&x);
    }
    /* (b) 1.5 ms, faster than stage 0 (2 ms): it is the best peer */
    kevo_peer_set ps;
    kevo_peer_set_init(&ps);
    set_peer(op, &ps, "stage0", KEVO_PEER_OK, 2.0);
    set_peer(op, &ps, "stage0_gather", KEVO_PEER_OK, 3.0);
    set_peer(op, &ps, "nocodesign", KEVO_PEER_OK, 1.5);
    ps.p[kevo_op_peer_index(op, "nocodesign")].cand_id = a;
    assert_int_equal(kevo_db_peers_after(f->db, run, op, &ps, &err), KEVO_OK);
    kevo_peer_set back;
    assert_int_equal(kevo_db_peers_get(f->db, run, 0, 0, op, &back, &err), KEVO_OK);
    int nb = kevo_op_peer_index(op, "nocodesign");
    assert_true(back.p[nb].state == KEVO_PEER_OK && back.p[nb].median_ms == 1.5 && back.p[nb].cand_id == a);
    const struct {
        int64_t id;
        double vs_peer;
    } want[] = {{a, 3.0}, {b, 1.5}, {c, 7.0}, {d, 7.0}};
    for (size_t i = 0; i < KV_ARRAY_LEN(want); i++) {
        assert_int_equal(kevo_db_cand_get(f->db, want[i].id, &x, &err), KEVO_OK);
        assert_true(fabs(x.vs_peer - want[i].vs_peer) < 1e-12);
        assert_true(x.fitness == 3.0);
        kevo_cand_row_release(&x);
    }

    /* (b) slower than stage 0: stage 0 stays the best peer */
    set_peer(op, &ps, "nocodesign", KEVO_PEER_OK, 5.0);
    assert_int_equal(kevo_db_peers_after(f->db, run, op, &ps, &err), KEVO_OK);
    assert_int_equal(kevo_db_cand_get(f->db, b, &x, &err), KEVO_OK);
    assert_true(fabs(x.vs_peer - 2.0) < 1e-12);
    kevo_cand_row_release(&x);

    /* no such run: refused, nothing changed */
    set_peer(op, &ps, "nocodesign", KEVO_PEER_OK, 0.1);
    assert_int_equal(kevo_db_peers_after(f->db, 999, op, &ps, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(kevo_db_cand_get(f->db, b, &x, &err), KEVO_OK);
    assert_true(fabs(x.vs_peer - 2.0) < 1e-12);
    kevo_cand_row_release(&x);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM run_peers WHERE run_id = 999"), 0);
}

/* ---- candidates ---- */

static void test_cand_roundtrip(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t c3 = add_cand(f->db, run, 3, "lce_mma", "{\"BM\":64}", "pending", "", NAN, NAN, "");
    int64_t c1 = add_cand(f->db, run, 1, "lce_mma", "{\"BM\":128}", "pending", "", NAN, NAN, "");
    int64_t c2 = add_cand(f->db, run, 2, "lce_simt", "{\"BM\":128}", "pending", "", NAN, NAN, "");

    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_get(f->db, c1, &c, &err), KEVO_OK);
    assert_int_equal(c.id, c1);
    assert_int_equal(c.run_id, run);
    assert_int_equal(c.seq, 1);
    assert_string_equal(c.family, "lce_mma");
    assert_string_equal(c.params, "{\"BM\":128}");
    assert_null(c.plan);
    assert_null(c.fail_msg);
    assert_string_equal(c.source_hash, "");
    assert_string_equal(c.binary_key, "");
    assert_string_equal(c.status, "pending");
    assert_string_equal(c.fail, "");
    assert_int_equal(c.regs, -1);
    assert_int_equal(c.spill_bytes, -1);
    assert_int_equal(c.smem_static, -1);
    assert_int_equal(c.smem_dynamic, -1);
    assert_true(isnan(c.compile_s) && isnan(c.median_ms) && isnan(c.speedup) && isnan(c.rel_err));
    assert_int_equal(c.checks, 0);
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT fail IS NULL AND source_hash IS NULL AND binary_key IS NULL AND regs IS NULL "
             "AND median_ms IS NULL AND created_at IS NOT NULL FROM candidates WHERE id=%lld",
             (long long)c1);
    assert_int_equal(raw_int(f->path, sql), 1);

    /* update every field and read it back */
    c.plan = kv_strdup("{\"grid\":[4,1,1]}");
    snprintf(c.source_hash, sizeof c.source_hash, "%064d", 7);
    snprintf(c.binary_key, sizeof c.binary_key, "%064d", 9);
    snprintf(c.status, sizeof c.status, "ok");
    c.regs = 168;
    c.spill_bytes = 0;
    c.smem_static = 1024;
    c.smem_dynamic = 98304;
    c.compile_s = 1.25;
    c.median_ms = 0.5;
    c.min_ms = 0.49;
    c.rel_err = 1e-3;
    c.max_abs_err = 0.0625;
    c.tflops = 512.5;
    c.speedup = 3.97;
    c.checks = 3;
    c.vs_peer = 1.5;
    c.roofline = 0.625;
    c.ci_lo_ms = 0.495;
    c.ci_hi_ms = 0.5125;
    c.model_ms = 0.375;
    c.fitness = 3.97;
    c.tied = 1;
    assert_int_equal(kevo_db_cand_update(f->db, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    kevo_cand_row g;
    assert_int_equal(kevo_db_cand_get(f->db, c1, &g, &err), KEVO_OK);
    assert_string_equal(g.plan, "{\"grid\":[4,1,1]}");
    assert_string_equal(g.source_hash, "0000000000000000000000000000000000000000000000000000000000000007");
    assert_string_equal(g.binary_key, "0000000000000000000000000000000000000000000000000000000000000009");
    assert_string_equal(g.status, "ok");
    assert_int_equal(g.regs, 168);
    assert_int_equal(g.spill_bytes, 0);
    assert_int_equal(g.smem_static, 1024);
    assert_int_equal(g.smem_dynamic, 98304);
    assert_true(g.compile_s == 1.25 && g.median_ms == 0.5 && g.min_ms == 0.49);
    assert_true(g.rel_err == 1e-3 && g.max_abs_err == 0.0625 && g.tflops == 512.5 && g.speedup == 3.97);
    assert_int_equal(g.checks, 3);
    assert_true(g.vs_peer == 1.5 && g.roofline == 0.625 && g.ci_lo_ms == 0.495 && g.ci_hi_ms == 0.5125);
    assert_true(g.model_ms == 0.375 && g.fitness == 3.97);
    assert_int_equal(g.tied, 1);

    /* a failure with a message, then cleared again */
    snprintf(g.status, sizeof g.status, "failed");
    snprintf(g.fail, sizeof g.fail, "wrong_result");
    g.fail_msg = kv_strdup("max err 0.5 at (3, 7)");
    assert_int_equal(kevo_db_cand_update(f->db, &g, &err), KEVO_OK);
    kevo_cand_row_release(&g);
    assert_int_equal(kevo_db_cand_get(f->db, c1, &g, &err), KEVO_OK);
    assert_string_equal(g.fail, "wrong_result");
    assert_string_equal(g.fail_msg, "max err 0.5 at (3, 7)");
    kevo_cand_row_release(&g);

    /* list in seq order */
    kevo_cand_row *rows = NULL;
    int n = 0;
    assert_int_equal(kevo_db_cand_list(f->db, run, &rows, &n, &err), KEVO_OK);
    assert_int_equal(n, 3);
    assert_int_equal(rows[0].id, c1);
    assert_int_equal(rows[1].id, c2);
    assert_int_equal(rows[2].id, c3);
    assert_int_equal(rows[2].seq, 3);
    assert_string_equal(rows[1].family, "lce_simt");
    assert_string_equal(rows[2].params, "{\"BM\":64}");
    kevo_cand_rows_free(rows, n);

    /* unknown ids */
    assert_int_equal(kevo_db_cand_get(f->db, 999, &g, &err), KEVO_ERR_NOT_FOUND);
    kevo_cand_row_release(&g);
    kevo_cand_row u;
    kevo_cand_row_init(&u);
    u.id = 999;
    u.params = "{}";
    assert_int_equal(kevo_db_cand_update(f->db, &u, &err), KEVO_ERR_NOT_FOUND);
    /* a list of an empty run */
    assert_int_equal(kevo_db_cand_list(f->db, 77, &rows, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    kevo_cand_rows_free(rows, n);
}

static void test_cand_duplicate(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t run2 = add_run(f->db, "ikbo_lce");
    add_cand(f->db, run, 1, "lce_mma", "{\"BM\":128}", "pending", "", NAN, NAN, "");
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = 2;
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.params = "{\"BM\":128}";
    assert_int_equal(kevo_db_cand_insert(f->db, &c, &err), KEVO_ERR_ARG);
    assert_string_equal(err.msg, "candidate already in run 1: lce_mma {\"BM\":128}");
    /* same params in another family or another run are different nodes */
    snprintf(c.family, sizeof c.family, "lce_simt");
    assert_int_equal(kevo_db_cand_insert(f->db, &c, &err), KEVO_OK);
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.run_id = run2;
    assert_int_equal(kevo_db_cand_insert(f->db, &c, &err), KEVO_OK);
    /* a candidate of an unknown run */
    c.run_id = 55;
    assert_int_equal(kevo_db_cand_insert(f->db, &c, &err), KEVO_ERR_DB);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM candidates"), 3);
}

static void test_cand_best(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t other = add_run(f->db, "ikbo_lce");
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_best(f->db, run, &c, &err), KEVO_ERR_NOT_FOUND);
    kevo_cand_row_release(&c);
    add_cand(f->db, run, 1, "f", "{\"a\":1}", "ok", "", 2.0, 1.0, "");
    add_cand(f->db, run, 2, "f", "{\"a\":2}", "ok", "", 3.0, 0.7, "");
    int64_t want = add_cand(f->db, run, 3, "f", "{\"a\":3}", "ok", "", 3.0, 0.6, "");
    add_cand(f->db, run, 4, "f", "{\"a\":4}", "failed", "wrong_result", 9.0, 0.1, "");
    add_cand(f->db, run, 5, "f", "{\"a\":5}", "ok", "", NAN, 0.05, "");
    add_cand(f->db, run, 6, "f", "{\"a\":6}", "compiled", "", 8.0, 0.1, "");
    add_cand(f->db, other, 1, "f", "{\"a\":1}", "ok", "", 50.0, 0.01, "");
    assert_int_equal(kevo_db_cand_best(f->db, run, &c, &err), KEVO_OK);
    assert_int_equal(c.id, want);
    assert_string_equal(c.params, "{\"a\":3}");
    assert_true(c.speedup == 3.0);
    assert_true(c.median_ms == 0.6);
    kevo_cand_row_release(&c);

    /* a fitness (a distribution's) ranks before the speedup */
    assert_int_equal(kevo_db_cand_get(f->db, want - 2, &c, &err), KEVO_OK);
    c.fitness = 4.0;
    assert_int_equal(kevo_db_cand_update(f->db, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    assert_int_equal(kevo_db_cand_best(f->db, run, &c, &err), KEVO_OK);
    assert_int_equal(c.id, want - 2);
    kevo_cand_row_release(&c);
    /* the winner a paired re-timing named comes first */
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(f->db, run, &r, &err), KEVO_OK);
    r.best_id = want - 1;
    assert_int_equal(kevo_db_run_update(f->db, &r, &err), KEVO_OK);
    assert_int_equal(kevo_db_cand_best(f->db, run, &c, &err), KEVO_OK);
    assert_int_equal(c.id, want - 1);
    kevo_cand_row_release(&c);
}

/* ---- distributions and repetitions ---- */

static void test_run_shapes(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    kevo_run_shape v[2] = {
        {.idx = 0, .shape = "B=512,M=64", .weight = 3, .flops = 1e9, .bytes = 2e6},
        {.idx = 1, .shape = "B=1024,M=64", .weight = 1, .flops = 2e9, .bytes = 4e6},
    };
    assert_int_equal(kevo_db_run_shapes_put(f->db, run, v, 2, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_shapes_put(f->db, run, v, 2, &err), KEVO_OK); /* replaced, not added */
    kevo_run_shape *g = NULL;
    int n = 0;
    assert_int_equal(kevo_db_run_shapes_get(f->db, run, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].shape, "B=512,M=64");
    assert_true(g[0].weight == 3 && g[0].flops == 1e9 && g[0].bytes == 2e6);
    assert_int_equal(g[1].idx, 1);
    assert_true(g[1].weight == 1 && g[1].flops == 2e9);
    free(g);
    assert_int_equal(kevo_db_run_shapes_get(f->db, 99, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    free(g);
}

/* A run's devices round-trip and are replaced by idx; a candidate keeps
 * the device that evaluated it and its evaluation time. */
static void test_run_devices(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    kevo_run_device v[2] = {
        {.idx = 0, .ordinal = 0, .host = "n1", .name = "GPU A", .pci_bus = "0000:01:00.0", .sm_count = 132,
         .peak_tflops = 700, .copy_tbps = 3, .evaluated = 0, .busy_s = 0, .loop_s = NAN},
        {.idx = 1, .ordinal = 3, .host = "n1", .name = "GPU A", .pci_bus = "0000:41:00.0", .sm_count = 132,
         .peak_tflops = NAN, .copy_tbps = NAN, .evaluated = 0, .busy_s = 0, .loop_s = NAN},
    };
    assert_int_equal(kevo_db_run_devices_put(f->db, run, v, 2, &err), KEVO_OK);
    v[1].evaluated = 17;
    v[1].busy_s = 40.5;
    v[1].loop_s = 44;
    assert_int_equal(kevo_db_run_devices_put(f->db, run, &v[1], 1, &err), KEVO_OK); /* replaced, not added */
    kevo_run_device *g = NULL;
    int n = 0;
    assert_int_equal(kevo_db_run_devices_get(f->db, run, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].name, "GPU A");
    assert_true(g[0].peak_tflops == 700 && isnan(g[0].loop_s) && g[0].sm_count == 132);
    assert_int_equal(g[1].ordinal, 3);
    assert_string_equal(g[1].pci_bus, "0000:41:00.0");
    assert_true(g[1].evaluated == 17 && g[1].busy_s == 40.5 && g[1].loop_s == 44 && isnan(g[1].peak_tflops));
    free(g);

    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = 1;
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.params = strdup("{\"BM\":64}");
    assert_int_equal(kevo_db_cand_insert(f->db, &c, &err), KEVO_OK);
    kevo_cand_row d;
    assert_int_equal(kevo_db_cand_get(f->db, c.id, &d, &err), KEVO_OK);
    assert_true(d.device == -1 && isnan(d.eval_s)); /* not evaluated yet */
    kevo_cand_row_release(&d);
    c.device = 1;
    c.eval_s = 0.375;
    assert_int_equal(kevo_db_cand_update(f->db, &c, &err), KEVO_OK);
    assert_int_equal(kevo_db_cand_get(f->db, c.id, &d, &err), KEVO_OK);
    assert_true(d.device == 1 && d.eval_s == 0.375);
    kevo_cand_row_release(&d);
    kevo_cand_row_release(&c);
}

static void test_run_settings(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    kevo_run_settings a, b;
    memset(&a, 0, sizeof a);
    snprintf(a.family_arg, sizeof a.family_arg, "lce_mma,lce_ws");
    a.batch = 8;
    a.ahead = 3;
    a.maps = 5;
    a.reps = 30;
    a.warmup = 5;
    a.time_limit = 12.5;
    a.plateau = 7;
    a.target = 3.25;
    a.compile_timeout = 300;
    a.eval_timeout = 120;
    snprintf(a.templates, sizeof a.templates, "/some/dir");
    snprintf(a.space_hash, sizeof a.space_hash, "lce_mma=0123456789abcdef");
    a.elapsed_s = 4.5;
    assert_int_equal(kevo_db_run_settings_put(f->db, run, &a, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_settings_get(f->db, run, &b, &err), KEVO_OK);
    assert_memory_equal(&a, &b, sizeof a);
    a.elapsed_s = 9; /* put again replaces */
    assert_int_equal(kevo_db_run_settings_put(f->db, run, &a, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_settings_get(f->db, run, &b, &err), KEVO_OK);
    assert_true(b.elapsed_s == 9);
    assert_int_equal(kevo_db_run_settings_get(f->db, run + 1, &b, &err), KEVO_ERR_NOT_FOUND);
}

static void test_warm_seeds(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    kevo_warm_seed v[2] = {
        {.family = "lce_ws", .params = "{\"BN\":256}", .from_run = 4, .from_shape = "B=512", .distance = 0.5},
        {.family = "lce_mma", .params = "{\"BM\":64}", .from_run = 2, .from_shape = "B=2048", .distance = 1.25},
    };
    assert_int_equal(kevo_db_warm_put(f->db, run, v, 2, &err), KEVO_OK);
    kevo_warm_seed *g = NULL;
    int n = 0;
    assert_int_equal(kevo_db_warm_get(f->db, run, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].family, "lce_ws");
    assert_string_equal(g[1].params, "{\"BM\":64}");
    assert_int_equal(g[1].from_run, 2);
    assert_string_equal(g[0].from_shape, "B=512");
    assert_true(g[1].distance == 1.25);
    free(g);
    assert_int_equal(kevo_db_warm_get(f->db, run + 1, &g, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    free(g);
}

static void test_shape_results_and_timings(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t c = add_cand(f->db, run, 1, "f", "{\"a\":1}", "ok", "", 2.0, 1.0, "");
    kevo_shape_result r1 = {.shape_idx = 1, .median_ms = 0.5, .ci_lo_ms = 0.49, .ci_hi_ms = 0.52, .speedup = 4,
                            .vs_peer = 1.25, .roofline = 0.5, .rel_err = 2e-4};
    kevo_shape_result r0 = r1;
    r0.shape_idx = 0;
    r0.vs_peer = 0.75;
    assert_int_equal(kevo_db_shape_result_put(f->db, c, &r1, &err), KEVO_OK);
    assert_int_equal(kevo_db_shape_result_put(f->db, c, &r0, &err), KEVO_OK);
    kevo_shape_result *v = NULL;
    int n = 0;
    assert_int_equal(kevo_db_shape_results_get(f->db, c, &v, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].shape_idx, 0);
    assert_true(v[0].vs_peer == 0.75 && v[1].vs_peer == 1.25 && v[1].ci_hi_ms == 0.52 && v[1].rel_err == 2e-4);
    free(v);

    double reps[5] = {0.51, 0.5, 0.52, 0.49, 0.5};
    assert_int_equal(kevo_db_timings_put(f->db, c, 0, "tune", reps, 5, &err), KEVO_OK);
    double *got = NULL;
    assert_int_equal(kevo_db_timings_get(f->db, c, 0, "tune", &got, &n, &err), KEVO_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(got, reps, sizeof reps);
    free(got);
    assert_int_equal(kevo_db_timings_get(f->db, c, 0, "retime", &got, &n, &err), KEVO_ERR_NOT_FOUND);
    assert_null(got);
    assert_int_equal(kevo_db_timings_put(f->db, c, 0, "tune", reps, 0, &err), KEVO_ERR_ARG);
    /* a blob that is not whole doubles is refused, not read past */
    raw_exec(f->path, "UPDATE timings SET ms = x'0102030405'");
    assert_int_equal(kevo_db_timings_get(f->db, c, 0, "tune", &got, &n, &err), KEVO_ERR_DB);
    assert_null(got);
}

/* ---- edges, binaries, sources, measurements ---- */

static void test_edges(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t p = add_cand(f->db, run, 1, "f", "{\"a\":1}", "ok", "", 1.0, 1.0, "");
    int64_t c = add_cand(f->db, run, 2, "f", "{\"a\":2}", "ok", "", 1.0, 1.0, "");
    assert_int_equal(kevo_db_edge_insert(f->db, run, p, c, "retile", &err), KEVO_OK);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM edges WHERE operator='retile'"), 1);
    assert_int_equal(kevo_db_edge_insert(f->db, run, p, c, "retile", &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_db_edge_insert(f->db, run, p, 12345, "stages", &err), KEVO_ERR_DB);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    assert_non_null(strstr(err.msg, f->path));
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM edges"), 1);
}

static void test_binaries(void **state)
{
    fixture *f = *state;
    kevo_err err;
    static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 0, 1, 0, 0xff, 0};
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    snprintf(b.key, sizeof b.key, "%064d", 1);
    snprintf(b.arch, sizeof b.arch, "sm_90a");
    snprintf(b.nvrtc_version, sizeof b.nvrtc_version, "12.8");
    b.options = "-arch=sm_90a\n-std=c++17";
    snprintf(b.source_hash, sizeof b.source_hash, "%064d", 2);
    b.cubin = (void *)cubin;
    b.cubin_size = sizeof cubin;
    b.log = "";
    b.regs = 128;
    b.spill_bytes = 0;
    b.smem_static = 2048;
    b.stack_bytes = 16;
    b.compile_s = 2.5;
    assert_int_equal(kevo_db_binary_put(f->db, &b, &err), KEVO_OK);

    /* a second put of the same key keeps the first row */
    kevo_binary_row b2 = b;
    static const unsigned char other[] = {1, 2, 3};
    b2.cubin = (void *)other;
    b2.cubin_size = sizeof other;
    b2.regs = 64;
    assert_int_equal(kevo_db_binary_put(f->db, &b2, &err), KEVO_OK);

    kevo_binary_row g;
    assert_int_equal(kevo_db_binary_get(f->db, b.key, &g, &err), KEVO_OK);
    assert_string_equal(g.key, b.key);
    assert_string_equal(g.arch, "sm_90a");
    assert_string_equal(g.nvrtc_version, "12.8");
    assert_string_equal(g.options, "-arch=sm_90a\n-std=c++17");
    assert_string_equal(g.source_hash, b.source_hash);
    assert_int_equal(g.cubin_size, sizeof cubin);
    assert_memory_equal(g.cubin, cubin, sizeof cubin);
    assert_string_equal(g.log, "");
    assert_string_equal(g.fail, "");
    assert_int_equal(g.regs, 128);
    assert_int_equal(g.spill_bytes, 0);
    assert_int_equal(g.smem_static, 2048);
    assert_int_equal(g.stack_bytes, 16);
    assert_true(g.compile_s == 2.5);
    kevo_binary_row_release(&g);

    /* a failed compile: no cubin, a log and a failure kind */
    kevo_binary_row fb;
    kevo_binary_row_init(&fb);
    snprintf(fb.key, sizeof fb.key, "%064d", 3);
    fb.log = "error: expected ';'";
    snprintf(fb.fail, sizeof fb.fail, "compile_error");
    assert_int_equal(kevo_db_binary_put(f->db, &fb, &err), KEVO_OK);
    assert_int_equal(kevo_db_binary_get(f->db, fb.key, &g, &err), KEVO_OK);
    assert_null(g.cubin);
    assert_int_equal(g.cubin_size, 0);
    assert_null(g.options);
    assert_string_equal(g.log, "error: expected ';'");
    assert_string_equal(g.fail, "compile_error");
    assert_int_equal(g.regs, -1);
    assert_int_equal(g.stack_bytes, -1);
    assert_true(isnan(g.compile_s));
    kevo_binary_row_release(&g);

    assert_int_equal(kevo_db_binary_get(f->db, "nope", &g, &err), KEVO_ERR_NOT_FOUND);
    kevo_binary_row_release(&g);
}

static void test_sources(void **state)
{
    fixture *f = *state;
    kevo_err err;
    const char *h = "ab12";
    assert_int_equal(kevo_db_source_put(f->db, h, "__global__ void k() {}\n", &err), KEVO_OK);
    assert_int_equal(kevo_db_source_put(f->db, h, "other", &err), KEVO_OK); /* keeps the first */
    char *text = NULL;
    assert_int_equal(kevo_db_source_get(f->db, h, &text, &err), KEVO_OK);
    assert_string_equal(text, "__global__ void k() {}\n");
    free(text);
    assert_int_equal(kevo_db_source_get(f->db, "cd34", &text, &err), KEVO_ERR_NOT_FOUND);
    assert_null(text);
}

static void test_measurements(void **state)
{
    fixture *f = *state;
    kevo_err err;
    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t c = add_cand(f->db, run, 1, "f", "{}", "ok", "", 1.0, 1.0, "");
    assert_int_equal(kevo_db_measure_put(f->db, c, "rel_err.shuffled", 0.25, &err), KEVO_OK);
    assert_int_equal(kevo_db_measure_put(f->db, c, "rel_err.shuffled", 0.5, &err), KEVO_OK); /* replaces */
    assert_int_equal(kevo_db_measure_put(f->db, c, "ms.p90", NAN, &err), KEVO_OK);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM measurements"), 2);
    assert_int_equal(raw_int(f->path, "SELECT value*1000 FROM measurements WHERE name='rel_err.shuffled'"), 500);
    assert_int_equal(raw_int(f->path, "SELECT value IS NULL FROM measurements WHERE name='ms.p90'"), 1);
    assert_int_equal(kevo_db_measure_put(f->db, 4242, "x", 1.0, &err), KEVO_ERR_DB);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
}

static void test_run_counts(void **state)
{
    fixture *f = *state;
    kevo_err err;
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    static const char bytes[] = "cubin";
    snprintf(b.key, sizeof b.key, "k1");
    b.cubin = (void *)bytes;
    b.cubin_size = 5;
    assert_int_equal(kevo_db_binary_put(f->db, &b, &err), KEVO_OK);
    kevo_binary_row_init(&b);
    snprintf(b.key, sizeof b.key, "k2");
    snprintf(b.fail, sizeof b.fail, "compile_error");
    assert_int_equal(kevo_db_binary_put(f->db, &b, &err), KEVO_OK);

    int64_t run = add_run(f->db, "ikbo_lce");
    int64_t other = add_run(f->db, "ikbo_lce");
    int e = -1, c = -1, fl = -1, ok = -1;
    assert_int_equal(kevo_db_run_counts(f->db, run, &e, &c, &fl, &ok, &err), KEVO_OK);
    assert_int_equal(e, 0);
    assert_int_equal(c, 0);
    assert_int_equal(fl, 0);
    assert_int_equal(ok, 0);

    add_cand(f->db, run, 1, "f", "{\"a\":1}", "pending", "", NAN, NAN, "");
    add_cand(f->db, run, 2, "f", "{\"a\":2}", "compiled", "", NAN, NAN, "k1");
    add_cand(f->db, run, 3, "f", "{\"a\":3}", "ok", "", 2.0, 1.0, "k1");
    add_cand(f->db, run, 4, "f", "{\"a\":4}", "failed", "compile_error", NAN, NAN, "k2");
    add_cand(f->db, run, 5, "f", "{\"a\":5}", "failed", "wrong_result", NAN, NAN, "k1");
    add_cand(f->db, run, 6, "f", "{\"a\":6}", "compiled", "", NAN, NAN, "kmissing");
    add_cand(f->db, other, 1, "f", "{\"a\":1}", "ok", "", 2.0, 1.0, "k1");
    assert_int_equal(kevo_db_run_counts(f->db, run, &e, &c, &fl, &ok, &err), KEVO_OK);
    assert_int_equal(e, 5);
    assert_int_equal(c, 3);
    assert_int_equal(fl, 2);
    assert_int_equal(ok, 1);
    assert_int_equal(kevo_db_run_counts(f->db, other, &e, &c, &fl, &ok, &err), KEVO_OK);
    assert_int_equal(e, 1);
    assert_int_equal(c, 1);
    assert_int_equal(fl, 0);
    assert_int_equal(ok, 1);
}

static void test_transactions(void **state)
{
    fixture *f = *state;
    kevo_err err;
    assert_int_equal(kevo_db_begin(f->db, &err), KEVO_OK);
    add_run(f->db, "a");
    add_run(f->db, "b");
    kevo_db_rollback(f->db);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM runs"), 0);
    assert_int_equal(kevo_db_begin(f->db, &err), KEVO_OK);
    add_run(f->db, "c");
    assert_int_equal(kevo_db_commit(f->db, &err), KEVO_OK);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM runs"), 1);
    /* commit without a transaction is an error naming the file */
    assert_int_equal(kevo_db_commit(f->db, &err), KEVO_ERR_DB);
    assert_non_null(strstr(err.msg, f->path));
    kevo_db_rollback(f->db); /* harmless without a transaction */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_reopen),
        cmocka_unit_test(test_open_missing),
        cmocka_unit_test(test_open_foreign_sqlite),
        cmocka_unit_test(test_open_other_app_id),
        cmocka_unit_test(test_migrate_v1),
        cmocka_unit_test(test_migrate_v2),
        cmocka_unit_test(test_migrate_v3),
        cmocka_unit_test(test_migrate_v7),
        cmocka_unit_test(test_migrate_v8_peers),
        cmocka_unit_test(test_open_newer_schema),
        cmocka_unit_test(test_generations),
        cmocka_unit_test(test_run_generators),
        cmocka_unit_test(test_migrate_v9_generators),
        cmocka_unit_test(test_paired),
        cmocka_unit_test(test_open_garbage),
        cmocka_unit_test(test_open_unwritable),
        cmocka_unit_test_setup_teardown(test_run_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_text_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peers_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peers_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cand_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cand_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cand_best, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_results_and_timings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm_seeds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_measurements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
