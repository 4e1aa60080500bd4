/* store.c — kevo's SQLite store: open and identify the file, the schema, and
 * one function per row kind.  Every statement is prepared with bound
 * parameters and finalized before the function returns. */
#define _POSIX_C_SOURCE 200809L
#include "db/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "util/try.h"
#include "util/util.h"

#define ST_APP_ID 0x4B45564F /* 'KEVO' */
#define ST_SCHEMA_VERSION 9

struct kevo_db {
    sqlite3 *h;
    char *path;
    bool readonly; /* opened by kevo_db_open_ro: h never writes the file */
    double busy_t0; /* when the current wait for a lock began */
    bool busy_said; /* the wait was announced (kevo_db_set_events) */
};

/* Tables schema 3 added (the v2 -> v3 migration creates them; a new file
 * gets run_shapes in its schema-9 form, ST_SCHEMA_V9_TABLES). */
#define ST_SCHEMA_V3_RUN_SHAPES                                                                              \
    "CREATE TABLE run_shapes("                                                                               \
    " run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, shape TEXT NOT NULL, weight REAL,"   \
    " baseline_ms REAL, baseline_bcast_ms REAL, decomposed_ms REAL, flops REAL, bytes REAL,"                 \
    " PRIMARY KEY(run_id, idx));"
#define ST_SCHEMA_V3_TABLES ST_SCHEMA_V3_RUN_SHAPES ST_SCHEMA_V3_OTHERS
#define ST_SCHEMA_V3_OTHERS                                                                                  \
    "CREATE TABLE shape_results("                                                                            \
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id), shape_idx INTEGER NOT NULL, median_ms REAL,"  \
    " ci_lo_ms REAL, ci_hi_ms REAL, speedup REAL, vs_peer REAL, roofline REAL, rel_err REAL,"                \
    " PRIMARY KEY(candidate_id, shape_idx));"                                                               \
    "CREATE TABLE timings("                                                                                  \
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id), shape_idx INTEGER NOT NULL, label TEXT NOT NULL," \
    " ms BLOB NOT NULL, PRIMARY KEY(candidate_id, shape_idx, label));"                                       \
    "CREATE TABLE warm_seeds("                                                                               \
    " run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, family TEXT NOT NULL,"              \
    " params TEXT NOT NULL, from_run INTEGER, from_shape TEXT, distance REAL, PRIMARY KEY(run_id, idx));"

/* Tables schema 4 added: what defines a run beside its row (--resume). */
#define ST_SCHEMA_V4_TABLES                                                                                  \
    "CREATE TABLE run_settings("                                                                             \
    " run_id INTEGER PRIMARY KEY REFERENCES runs(id), family_arg TEXT, batch INTEGER, maps INTEGER,"         \
    " reps INTEGER, warmup INTEGER, time_limit REAL, plateau INTEGER, target REAL, compile_timeout REAL,"    \
    " eval_timeout REAL, templates TEXT, space_hash TEXT, elapsed_s REAL);"

/* Tables schema 5 added: LLM generations (one per LLM call, the candidate
 * it became) and a run's LLM settings (never the API key). */
#define ST_SCHEMA_V5_TABLES                                                                                  \
    "CREATE TABLE generations("                                                                              \
    " candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id), run_id INTEGER NOT NULL REFERENCES runs(id)," \
    " parent_id INTEGER REFERENCES candidates(id), generator TEXT NOT NULL, model TEXT, system_prompt TEXT,"  \
    " prompt TEXT, reply TEXT, tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, seed INTEGER,"         \
    " temperature REAL, finish_reason TEXT, http_status INTEGER, attempts INTEGER, error TEXT, query TEXT,"   \
    " space TEXT, source TEXT, created_at TEXT);"                                                           \
    "CREATE INDEX generations_run ON generations(run_id);"                                                   \
    "CREATE TABLE run_llm("                                                                                  \
    " run_id INTEGER PRIMARY KEY REFERENCES runs(id), generators TEXT, llm_budget INTEGER, url TEXT,"        \
    " model TEXT, temperature REAL, seed INTEGER, max_tokens INTEGER);"

/* Tables schema 7 added: the GPUs a run evaluated on (--devices), each with
 * its own peers, ceilings and throughput (a new file gets it in its
 * schema-9 form, ST_SCHEMA_V9_TABLES). */
#define ST_SCHEMA_V7_TABLES                                                                                  \
    "CREATE TABLE run_devices("                                                                              \
    " run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, ordinal INTEGER, host TEXT,"       \
    " name TEXT, pci_bus TEXT, sm_count INTEGER, baseline_ms REAL, baseline_bcast_ms REAL, decomposed_ms REAL," \
    " peak_tflops REAL, copy_tbps REAL, evaluated INTEGER, busy_s REAL, loop_s REAL,"                        \
    " PRIMARY KEY(run_id, idx));"

/* Schema 9: peers are rows, one per peer of a run at one of its shapes
 * (run_shapes.idx; 0 for a one-shape run) on one of its GPUs
 * (run_devices.idx; 0 the run's first), by the op's peer names
 * (kevo_op.peers); runs, run_shapes and run_devices lose their peer
 * columns. */
#define ST_SCHEMA_V9_PEERS                                                                                   \
    "CREATE TABLE run_peers("                                                                                \
    " run_id INTEGER NOT NULL REFERENCES runs(id), shape_idx INTEGER NOT NULL, device INTEGER NOT NULL,"    \
    " peer TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL, ci_lo_ms REAL, ci_hi_ms REAL, rel_err REAL,"  \
    " candidate_id INTEGER, detail TEXT, config TEXT, PRIMARY KEY(run_id, shape_idx, device, peer));"
#define ST_SCHEMA_V9_TABLES                                                                                  \
    "CREATE TABLE run_shapes("                                                                               \
    " run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, shape TEXT NOT NULL, weight REAL,"   \
    " flops REAL, bytes REAL, PRIMARY KEY(run_id, idx));"                                                    \
    "CREATE TABLE run_devices("                                                                              \
    " run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, ordinal INTEGER, host TEXT,"       \
    " name TEXT, pci_bus TEXT, sm_count INTEGER, peak_tflops REAL, copy_tbps REAL, evaluated INTEGER,"       \
    " busy_s REAL, loop_s REAL, PRIMARY KEY(run_id, idx));" ST_SCHEMA_V9_PEERS

/* The 8 -> 9 upgrade: every peer figure of the old columns becomes a row
 * (the run's at shape 0 on device 0, a distribution's other shapes, a
 * run's other GPUs), then the columns go.  Old figures keep what they
 * were: ikbo_lce's decomposed_ms was the decomposed form with only W's
 * rows padded (K unaligned, 2-4x slower than with K padded), so it becomes
 * the peer "decomposed_unaligned", which no op declares today: report
 * shows it, no verdict counts it. */
#define ST_PEER_NAMES_V8(col)                                                                                \
    "CASE WHEN " col " = 'baseline_ms' THEN 'stage0' WHEN " col " = 'baseline_bcast_ms' THEN "               \
    "(CASE WHEN v.op = 'ikbo_fa' THEN 'stage0_gather' ELSE 'stage0_bcast' END) ELSE "                       \
    "(CASE WHEN v.op = 'ikbo_fa' THEN 'nocodesign' ELSE 'decomposed_unaligned' END) END"
#define ST_MIGRATE_V9                                                                                        \
    ST_SCHEMA_V9_PEERS                                                                                       \
    "CREATE TEMP TABLE v8_peers(run_id, shape_idx, device, col, ms, op);"                                   \
    "INSERT INTO v8_peers SELECT id, 0, 0, 'baseline_ms', baseline_ms, op FROM runs;"                       \
    "INSERT INTO v8_peers SELECT id, 0, 0, 'baseline_bcast_ms', baseline_bcast_ms, op FROM runs;"           \
    "INSERT INTO v8_peers SELECT id, 0, 0, 'decomposed_ms', decomposed_ms, op FROM runs;"                   \
    "INSERT INTO v8_peers SELECT s.run_id, s.idx, 0, c.col, CASE c.col WHEN 'baseline_ms' THEN s.baseline_ms " \
    " WHEN 'baseline_bcast_ms' THEN s.baseline_bcast_ms ELSE s.decomposed_ms END, r.op"                    \
    " FROM run_shapes s JOIN runs r ON r.id = s.run_id, (SELECT 'baseline_ms' AS col UNION ALL"             \
    " SELECT 'baseline_bcast_ms' UNION ALL SELECT 'decomposed_ms') c WHERE s.idx > 0;"                      \
    "INSERT INTO v8_peers SELECT d.run_id, 0, d.idx, c.col, CASE c.col WHEN 'baseline_ms' THEN d.baseline_ms " \
    " WHEN 'baseline_bcast_ms' THEN d.baseline_bcast_ms ELSE d.decomposed_ms END, r.op"                    \
    " FROM run_devices d JOIN runs r ON r.id = d.run_id, (SELECT 'baseline_ms' AS col UNION ALL"           \
    " SELECT 'baseline_bcast_ms' UNION ALL SELECT 'decomposed_ms') c WHERE d.idx > 0;"                      \
    "INSERT OR IGNORE INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, candidate_id, detail," \
    " config) SELECT v.run_id, v.shape_idx, v.device, " ST_PEER_NAMES_V8("v.col") ", 'ok', v.ms,"          \
    " CASE WHEN v.col = 'decomposed_ms' AND v.shape_idx = 0 AND v.device = 0 THEN r.peer_id END,"           \
    " CASE WHEN v.col <> 'decomposed_ms' THEN 'measured by kevo before schema 9'"                           \
    " WHEN v.op = 'ikbo_fa' AND v.shape_idx = 0 AND v.device = 0 AND r.peer_kernel_ms IS NOT NULL"          \
    " THEN printf('measured by kevo before schema 9: kernel %.4f ms + gather %.4f ms', r.peer_kernel_ms,"  \
    " r.peer_gather_ms) WHEN v.op = 'ikbo_fa' THEN 'measured by kevo before schema 9'"                      \
    " ELSE 'measured by kevo before schema 9: decomposed cuBLAS with only W''s rows padded (K unaligned)' END," \
    " '' FROM v8_peers v JOIN runs r ON r.id = v.run_id WHERE v.ms > 0;"                                     \
    "DROP TABLE v8_peers;"                                                                                   \
    "ALTER TABLE runs DROP COLUMN baseline_ms;"                                                              \
    "ALTER TABLE runs DROP COLUMN baseline_bcast_ms;"                                                        \
    "ALTER TABLE runs DROP COLUMN decomposed_ms;"                                                            \
    "ALTER TABLE runs DROP COLUMN peer_id;"                                                                  \
    "ALTER TABLE runs DROP COLUMN peer_kernel_ms;"                                                           \
    "ALTER TABLE runs DROP COLUMN peer_gather_ms;"                                                           \
    "ALTER TABLE run_shapes DROP COLUMN baseline_ms;"                                                        \
    "ALTER TABLE run_shapes DROP COLUMN baseline_bcast_ms;"                                                  \
    "ALTER TABLE run_shapes DROP COLUMN decomposed_ms;"                                                      \
    "ALTER TABLE run_devices DROP COLUMN baseline_ms;"                                                       \
    "ALTER TABLE run_devices DROP COLUMN baseline_bcast_ms;"                                                 \
    "ALTER TABLE run_devices DROP COLUMN decomposed_ms;"

/* Columns schema 8 added to older tables (a new file gets them the same way). */
#define ST_SCHEMA_V8_COLUMNS                                                                                 \
    "ALTER TABLE candidates ADD COLUMN round INTEGER;"                                                       \
    "ALTER TABLE run_settings ADD COLUMN ahead INTEGER;"

static const char st_schema_sql[] =
    "CREATE TABLE runs("
    " id INTEGER PRIMARY KEY, op TEXT, shape TEXT, dtype TEXT, arch TEXT, policy TEXT, families TEXT,"
    " seed INTEGER, budget INTEGER, compile_only INTEGER, status TEXT, stop_reason TEXT, device TEXT,"
    " driver_version INTEGER, sm_count INTEGER, sm_clock_mhz INTEGER, mem_clock_mhz INTEGER,"
    " peak_tflops REAL, copy_tbps REAL, flops REAL, bytes REAL,"
    " pid INTEGER, created_at TEXT, finished_at TEXT, filter TEXT, nshapes INTEGER,"
    " warm_start TEXT, best_id INTEGER);"
    "CREATE TABLE sources(hash TEXT PRIMARY KEY, text TEXT NOT NULL);"
    "CREATE TABLE binaries("
    " key TEXT PRIMARY KEY, arch TEXT, nvrtc_version TEXT, options TEXT, source_hash TEXT, cubin BLOB,"
    " log TEXT, fail TEXT, regs INTEGER, spill_bytes INTEGER, smem_static INTEGER, stack_bytes INTEGER,"
    " compile_s REAL, created_at TEXT);"
    "CREATE TABLE candidates("
    " id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL,"
    " family TEXT NOT NULL, params TEXT NOT NULL, plan TEXT, source_hash TEXT, binary_key TEXT,"
    " status TEXT NOT NULL, fail TEXT, fail_msg TEXT, regs INTEGER, spill_bytes INTEGER,"
    " smem_static INTEGER, smem_dynamic INTEGER, compile_s REAL, median_ms REAL, min_ms REAL,"
    " rel_err REAL, max_abs_err REAL, tflops REAL, speedup REAL, checks INTEGER, created_at TEXT,"
    " vs_peer REAL, roofline REAL, ci_lo_ms REAL, ci_hi_ms REAL, model_ms REAL, fitness REAL, tied INTEGER,"
    " device INTEGER, eval_s REAL, UNIQUE(run_id, family, params));"
    "CREATE INDEX candidates_run_seq ON candidates(run_id, seq);"
    "CREATE TABLE edges("
    " run_id INTEGER NOT NULL, parent_id INTEGER NOT NULL REFERENCES candidates(id),"
    " child_id INTEGER NOT NULL REFERENCES candidates(id), operator TEXT NOT NULL,"
    " PRIMARY KEY(run_id, parent_id, child_id));"
    "CREATE INDEX edges_child ON edges(child_id);"
    "CREATE TABLE measurements("
    " candidate_id INTEGER NOT NULL REFERENCES candidates(id), name TEXT NOT NULL, value REAL,"
    " PRIMARY KEY(candidate_id, name));" ST_SCHEMA_V3_OTHERS ST_SCHEMA_V4_TABLES ST_SCHEMA_V5_TABLES \
        ST_SCHEMA_V8_COLUMNS ST_SCHEMA_V9_TABLES;

/* ---- errors ---- */

/* Status for an SQLite result code met outside of open (util/try.h). */
static kevo_status st_status(int rc)
{
    return KV_SQL_STATUS_(rc);
}

/* Record "WHAT in 'PATH': sqlite message" for a failed call with result rc.
 * Must run before any other call on the connection replaces the message. */
static kevo_status st_fail(kevo_db *db, kevo_err *err, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static kevo_status st_fail(kevo_db *db, kevo_err *err, int rc, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kv_try_failf(err, st_status(rc), sqlite3_errmsg(db->h), "%s in '%s'", what, db->path);
}

static kevo_status st_prepare(kevo_db *db, const char *sql, sqlite3_stmt **st, kevo_err *err, const char *what)
{
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return st_fail(db, err, rc, "prepare %s", what);
    }
    return KEVO_OK;
}

/* ---- binding: a cursor over a statement's parameters that keeps the first
 * failure, so a row's fields bind in a flat list and are checked once ---- */

typedef struct st_binder {
    sqlite3_stmt *st;
    int i;
    int rc;
} st_binder;

static void st_bind_init(st_binder *b, sqlite3_stmt *st)
{
    b->st = st;
    b->i = 0;
    b->rc = SQLITE_OK;
}

static void st_keep(st_binder *b, int rc)
{
    if (b->rc == SQLITE_OK)
        b->rc = rc;
}

/* Text as given ("" stays ""; NULL binds NULL). */
static void st_b_text(st_binder *b, const char *s)
{
    b->i++;
    st_keep(b, s ? sqlite3_bind_text(b->st, b->i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(b->st, b->i));
}

/* Text where "" means none: stored as NULL. */
static void st_b_text_opt(st_binder *b, const char *s)
{
    st_b_text(b, (s && *s) ? s : NULL);
}

static void st_b_i64(st_binder *b, int64_t v)
{
    b->i++;
    st_keep(b, sqlite3_bind_int64(b->st, b->i, v));
}

/* An int whose value `none` means unknown: stored as NULL. */
static void st_b_int_opt(st_binder *b, int v, int none)
{
    b->i++;
    st_keep(b, v == none ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_int64(b->st, b->i, v));
}

/* A double; NaN (not measured) is stored as NULL. */
/* An int64 whose value `none` means none: stored as NULL. */
static void st_b_i64_opt(st_binder *b, int64_t v, int64_t none)
{
    b->i++;
    st_keep(b, v == none ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_int64(b->st, b->i, v));
}

static void st_b_double(st_binder *b, double v)
{
    b->i++;
    st_keep(b, isnan(v) ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_double(b->st, b->i, v));
}

static void st_b_blob(st_binder *b, const void *p, size_t n)
{
    b->i++;
    if (!p)
        st_keep(b, sqlite3_bind_null(b->st, b->i));
    else if (n == 0)
        st_keep(b, sqlite3_bind_zeroblob(b->st, b->i, 0));
    else
        st_keep(b, sqlite3_bind_blob64(b->st, b->i, p, (sqlite3_uint64)n, SQLITE_STATIC));
}

/* ---- reading columns ---- */

/* Copy a text column into a fixed array, truncated and always terminated;
 * NULL reads as "". */
static void st_col_text(sqlite3_stmt *st, int i, char *dst, size_t n)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    size_t len = s ? (size_t)sqlite3_column_bytes(st, i) : 0;
    if (len > n - 1)
        len = n - 1;
    if (len)
        memcpy(dst, s, len);
    dst[len] = '\0';
}

/* Duplicate a text column into *dst (NULL stays NULL); false when out of
 * memory. */
static bool st_col_strdup(sqlite3_stmt *st, int i, char **dst)
{
    *dst = NULL;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return true;
    const unsigned char *s = sqlite3_column_text(st, i);
    if (!s)
        return false; /* non-NULL value but no text: out of memory */
    size_t len = (size_t)sqlite3_column_bytes(st, i);
    char *p = malloc(len + 1);
    if (!p)
        return false;
    memcpy(p, s, len);
    p[len] = '\0';
    *dst = p;
    return true;
}

static double st_col_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* An int column where NULL reads back as `none`. */
static int st_col_int_opt(sqlite3_stmt *st, int i, int none)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? none : sqlite3_column_int(st, i);
}

/* ---- open ---- */

/* Status for a result code met while opening or identifying the file. */
static kevo_status st_open_status(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_AUTH: return KEVO_ERR_IO;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return KEVO_ERR_DB;
    default: return st_status(rc);
    }
}

/* Run a one-value integer query (a pragma read or a count) into *v. */
static int st_query_int(sqlite3 *h, const char *sql, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        *v = 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Read the file's identity: application_id, user_version, number of schema
 * objects.  Reads only. */
static int st_identity(sqlite3 *h, int64_t *app, int64_t *ver, int64_t *nobj)
{
    int rc = st_query_int(h, "PRAGMA application_id", app);
    if (rc == SQLITE_OK)
        rc = st_query_int(h, "PRAGMA user_version", ver);
    if (rc == SQLITE_OK)
        rc = st_query_int(h, "SELECT count(*) FROM sqlite_master", nobj);
    return rc;
}

/* Error for a failed identity read: a file SQLite cannot read as a database
 * is refused as corrupt, anything else names the sqlite message. */
static kevo_status st_identity_fail(kevo_db *db, int rc, kevo_err *err)
{
    int prim = rc & 0xff;
    if (prim == SQLITE_NOTADB || prim == SQLITE_CORRUPT)
        return kevo_err_set(err, KEVO_ERR_DB, "'%s' is not a kevo database or is corrupt", db->path);
    return kevo_err_set(err, st_open_status(rc), "cannot read '%s': %s", db->path, sqlite3_errmsg(db->h));
}

/* Check an identity against kevo's; KEVO_OK for a kevo file of a known
 * schema version. */
static kevo_status st_check_identity(kevo_db *db, int64_t app, int64_t ver, kevo_err *err)
{
    if (app != ST_APP_ID || ver < 1)
        return kevo_err_set(err, KEVO_ERR_DB, "'%s' is not a kevo database", db->path);
    if (ver > ST_SCHEMA_VERSION)
        return kevo_err_set(err, KEVO_ERR_DB, "'%s' was written by a newer kevo (schema %lld)", db->path,
                            (long long)ver);
    return KEVO_OK;
}

/* Create the schema in a new (empty) file.  The identity is read again
 * inside the write transaction, so that of two processes creating the same
 * file one creates and the other finds kevo's schema. */
static kevo_status st_create_schema(kevo_db *db, kevo_err *err)
{
    int rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return kevo_err_set(err, st_open_status(rc), "cannot create schema in '%s': %s", db->path,
                            sqlite3_errmsg(db->h));
    int64_t app = 0, ver = 0, nobj = 0;
    rc = st_identity(db->h, &app, &ver, &nobj);
    if (rc != SQLITE_OK) {
        kevo_status s = st_identity_fail(db, rc, err);
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return s;
    }
    if (app != 0 || nobj != 0) { /* someone else got there first */
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return st_check_identity(db, app, ver, err);
    }
    /* the pragma values are constants (ST_APP_ID and ST_SCHEMA_VERSION) */
    rc = sqlite3_exec(db->h, st_schema_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db->h, "PRAGMA application_id=1262835279", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db->h, "PRAGMA user_version=9", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        kevo_status s = kevo_err_set(err, st_open_status(rc), "cannot create schema in '%s': %s", db->path,
                                     sqlite3_errmsg(db->h));
        if (!sqlite3_get_autocommit(db->h))
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        return s;
    }
    return KEVO_OK;
}

_Static_assert(ST_APP_ID == 1262835279, "application_id literal in st_create_schema");
_Static_assert(ST_SCHEMA_VERSION == 9, "user_version literal in st_create_schema");

/* Upgrades, one per schema version, each in one transaction:
 *   1 -> 2: runs gained the configuration filter (--where);
 *   2 -> 3: the in-run peers (decomposed form), vs_best_peer, roofline
 *           fraction, confidence intervals, model predictions, ties, every
 *           repetition's time, shape distributions and warm starts;
 *   3 -> 4: run settings (batch, maps, reps, termination, timeouts, the
 *           space files' hashes), so that --resume applies or refuses
 *           every option;
 *   4 -> 5: LLM generations and a run's LLM settings;
 *   5 -> 6: how a run's op peer measured after the search was made (the
 *           candidate whose configuration ran without the co-design, its
 *           kernel's time and the broadcast's);
 *   6 -> 7: the GPUs of a run (--devices: each one's peers, ceilings and
 *           throughput) and each candidate's device and evaluation time;
 *   7 -> 8: each candidate's round (the batch it was proposed in) and a
 *           run's --ahead, so that --resume finishes the rounds a killed
 *           process left in flight one by one, as it would have;
 *   8 -> 9: peers as rows by name (run_peers) instead of columns
 *           (ST_MIGRATE_V9). */
static const char *const st_migrations[] = {
    "ALTER TABLE runs ADD COLUMN filter TEXT;"
    "PRAGMA user_version=2;",
    "ALTER TABLE runs ADD COLUMN decomposed_ms REAL;"
    "ALTER TABLE runs ADD COLUMN nshapes INTEGER;"
    "ALTER TABLE runs ADD COLUMN warm_start TEXT;"
    "ALTER TABLE runs ADD COLUMN best_id INTEGER;"
    "ALTER TABLE candidates ADD COLUMN vs_peer REAL;"
    "ALTER TABLE candidates ADD COLUMN roofline REAL;"
    "ALTER TABLE candidates ADD COLUMN ci_lo_ms REAL;"
    "ALTER TABLE candidates ADD COLUMN ci_hi_ms REAL;"
    "ALTER TABLE candidates ADD COLUMN model_ms REAL;"
    "ALTER TABLE candidates ADD COLUMN fitness REAL;"
    "ALTER TABLE candidates ADD COLUMN tied INTEGER;" ST_SCHEMA_V3_TABLES "PRAGMA user_version=3;",
    ST_SCHEMA_V4_TABLES "PRAGMA user_version=4;",
    ST_SCHEMA_V5_TABLES "PRAGMA user_version=5;",
    "ALTER TABLE runs ADD COLUMN peer_id INTEGER;"
    "ALTER TABLE runs ADD COLUMN peer_kernel_ms REAL;"
    "ALTER TABLE runs ADD COLUMN peer_gather_ms REAL;"
    "PRAGMA user_version=6;",
    "ALTER TABLE candidates ADD COLUMN device INTEGER;"
    "ALTER TABLE candidates ADD COLUMN eval_s REAL;" ST_SCHEMA_V7_TABLES "PRAGMA user_version=7;",
    ST_SCHEMA_V8_COLUMNS "PRAGMA user_version=8;",
    ST_MIGRATE_V9 "PRAGMA user_version=9;",
};
_Static_assert(sizeof st_migrations / sizeof st_migrations[0] == ST_SCHEMA_VERSION - 1, "one migration a version");

/* Bring a file of schema `ver` up to ST_SCHEMA_VERSION. */
static kevo_status st_migrate(kevo_db *db, int64_t ver, kevo_err *err)
{
    for (int64_t v = ver; v < ST_SCHEMA_VERSION; v++) {
        int rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db->h, st_migrations[v - 1], NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            kevo_status s = kevo_err_set(err, st_open_status(rc), "cannot upgrade '%s' to schema %lld: %s",
                                         db->path, (long long)v + 1, sqlite3_errmsg(db->h));
            if (!sqlite3_get_autocommit(db->h))
                sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
            return s;
        }
    }
    return KEVO_OK;
}

/* PRAGMA quick_check over the whole file (every page's structure, not the
 * index contents; reads only).  Errors: KEVO_ERR_DB naming the first problem
 * for a corrupt file, what SQLite said otherwise. */
static kevo_status st_quick_check(kevo_db *db, kevo_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    kevo_status s = KEVO_OK;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (!t || strcmp(t, "ok") != 0)
            s = kevo_err_set(err, KEVO_ERR_DB,
                             "'%s' is corrupt (quick_check: %.200s); restore a copy or salvage it with "
                             "'sqlite3 FILE .recover'",
                             db->path, t ? t : "no answer");
    } else {
        int prim = rc & 0xff;
        if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB)
            s = kevo_err_set(err, KEVO_ERR_DB,
                             "'%s' is corrupt (%s); restore a copy or salvage it with 'sqlite3 FILE .recover'",
                             db->path, sqlite3_errmsg(db->h));
        else
            s = kevo_err_set(err, st_open_status(rc), "cannot check '%s': %s", db->path, sqlite3_errmsg(db->h));
    }
    sqlite3_finalize(st);
    return s;
}

/* The busy handler: SQLite's busy timeout, then an announced wait for as
 * long as the other process holds the lock; 0 (give up: SQLITE_BUSY) only
 * when a signal interrupted kevo. */
#define ST_BUSY_TIMEOUT_S 5.0
static struct {
    kevo_event_fn fn;
    void *ctx;
} st_events;

void kevo_db_set_events(kevo_event_fn fn, void *ctx)
{
    st_events.fn = fn;
    st_events.ctx = ctx;
}

static int st_busy(void *ctx, int count)
{
    kevo_db *db = ctx;
    if (kv_interrupted())
        return 0;
    if (count == 0) {
        db->busy_t0 = kv_now();
        db->busy_said = false;
    }
    if (!db->busy_said && kv_now() - db->busy_t0 >= ST_BUSY_TIMEOUT_S) {
        kv_emit(st_events.fn, st_events.ctx, KEVO_EVENT_WARNING, 0, "'%s' is locked by another process; waiting",
                db->path);
        db->busy_said = true;
    }
    /* 1, 2, 4, ... ms, then every 100 ms */
    long ms = count < 7 ? 1L << count : 100;
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
    return 1;
}

/* Open the SQLite handle and set connection options; nothing is read or
 * written to the file here. */
static kevo_status st_open_handle(kevo_db *db, bool create, kevo_err *err)
{
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(db->path, &db->h, flags, NULL);
    if (rc != SQLITE_OK) {
        const char *m = db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc);
        return kevo_err_set(err, st_open_status(rc), "cannot open '%s': %s", db->path, m);
    }
    sqlite3_extended_result_codes(db->h, 1);
    if (sqlite3_db_readonly(db->h, "main") == 1)
        return kevo_err_set(err, KEVO_ERR_IO, "cannot open '%s' for writing: %s", db->path,
                            sqlite3_errstr(SQLITE_READONLY));
    sqlite3_busy_handler(db->h, st_busy, db);
    rc = sqlite3_exec(db->h, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return kevo_err_set(err, st_open_status(rc), "cannot configure '%s': %s", db->path,
                            sqlite3_errmsg(db->h));
    return KEVO_OK;
}

kevo_status kevo_db_open(const char *path, bool create, kevo_db **out, kevo_err *err)
{
    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no result pointer for opening '%s'", path ? path : "");
    *out = NULL;
    if (!path || !*path)
        return kevo_err_set(err, KEVO_ERR_ARG, "empty database path");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            return kevo_err_set(err, KEVO_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        if (!create)
            return kevo_err_set(err, KEVO_ERR_IO, "no such database '%s'", path);
    } else if (S_ISDIR(sb.st_mode)) {
        return kevo_err_set(err, KEVO_ERR_IO, "cannot open '%s': is a directory", path);
    }

    kevo_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = kv_strdup(path))) {
        free(db);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory opening '%s'", path);
    }
    kevo_status s = st_open_handle(db, create, err);
    if (s == KEVO_OK) {
        /* identify before anything can write to the file */
        int64_t app = 0, ver = 0, nobj = 0;
        int rc = st_identity(db->h, &app, &ver, &nobj);
        if (rc != SQLITE_OK)
            s = st_identity_fail(db, rc, err);
        else if (app == 0 && nobj == 0)
            s = st_create_schema(db, err);
        else if ((s = st_check_identity(db, app, ver, err)) == KEVO_OK)
            s = st_quick_check(db, err); /* a corrupt page is refused, not written into */
        if (s == KEVO_OK && ver >= 1 && ver < ST_SCHEMA_VERSION)
            s = st_migrate(db, ver, err);
    }
    if (s == KEVO_OK) {
        /* journal_mode answers with the mode it got; a file system without
         * shared memory keeps the old one, which is not an error */
        int rc = sqlite3_exec(db->h, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db->h, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            s = kevo_err_set(err, st_open_status(rc), "cannot set journal mode of '%s': %s", path,
                             sqlite3_errmsg(db->h));
    }
    if (s != KEVO_OK) {
        kevo_db_close(db);
        return s;
    }
    *out = db;
    return KEVO_OK;
}

/* Whether the file is a WAL-mode SQLite database (header bytes 18 and 19,
 * the write and read format versions, are 2); reads 2 bytes. */
static bool st_header_wal(const char *path)
{
    unsigned char v[2] = {0, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = pread(fd, v, sizeof v, 18);
    close(fd);
    return n == 2 && v[0] == 2 && v[1] == 2;
}

static bool st_exists(const char *path, const char *suffix)
{
    char side[PATH_MAX + 16];
    struct stat sb;
    snprintf(side, sizeof side, "%s%s", path, suffix);
    return stat(side, &sb) == 0;
}

/* The URI that opens path read-only ("file:" + the path with every byte
 * outside [A-Za-z0-9/._~-] percent-encoded, "?mode=ro", and "&immutable=1"
 * when asked); false when out of memory. */
static bool st_ro_uri(const char *path, bool immutable, kv_buf *uri)
{
    static const char hex[] = "0123456789ABCDEF";
    /* "file://" + "/abs" keeps an absolute path's "//" from reading as a host */
    kevo_status s = kv_buf_puts(uri, path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *p = (const unsigned char *)path; !s && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/._~-", *p)) {
            s = kv_buf_append(uri, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            s = kv_buf_append(uri, e, 3);
        }
    }
    if (!s)
        s = kv_buf_puts(uri, immutable ? "?mode=ro&immutable=1" : "?mode=ro");
    return s == KEVO_OK;
}

/* Replace db->h by an in-memory copy of its main database (SQLite's backup
 * API): memory the size of the file. */
static kevo_status st_copy_to_memory(kevo_db *db, kevo_err *err)
{
    sqlite3 *mem = NULL;
    int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    sqlite3_backup *bk = rc == SQLITE_OK ? sqlite3_backup_init(mem, "main", db->h, "main") : NULL;
    if (bk) {
        rc = sqlite3_backup_step(bk, -1);
        int rc2 = sqlite3_backup_finish(bk);
        rc = rc == SQLITE_DONE ? rc2 : rc;
    } else if (rc == SQLITE_OK) {
        rc = sqlite3_errcode(mem);
    }
    if (rc != SQLITE_OK) {
        kevo_status s = kevo_err_set(err, rc == SQLITE_NOMEM ? KEVO_ERR_NOMEM : st_open_status(rc),
                                     "cannot copy '%s' into memory: %s", db->path,
                                     mem ? sqlite3_errmsg(mem) : sqlite3_errstr(rc));
        sqlite3_close(mem);
        return s;
    }
    sqlite3_close(db->h);
    db->h = mem;
    sqlite3_extended_result_codes(db->h, 1);
    return KEVO_OK;
}

kevo_status kevo_db_open_ro(const char *path, kevo_db **out, kevo_err *err)
{
    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no result pointer for opening '%s'", path ? path : "");
    *out = NULL;
    if (!path || !*path)
        return kevo_err_set(err, KEVO_ERR_ARG, "empty database path");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT)
            return kevo_err_set(err, KEVO_ERR_IO, "no such database '%s'", path);
        return kevo_err_set(err, KEVO_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    if (S_ISDIR(sb.st_mode))
        return kevo_err_set(err, KEVO_ERR_IO, "cannot open '%s': is a directory", path);

    kevo_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = kv_strdup(path))) {
        free(db);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory opening '%s'", path);
    }
    db->readonly = true;
    /* A WAL-mode file whose -wal is gone holds every committed row in the
     * main file, and no connection has it open: read it as immutable, which
     * creates no -wal and -shm (a plain read-only open would, and leave them).
     * Otherwise (a live writer's WAL, or a rollback-journal file) read it with
     * SQLite's usual locking, which creates nothing new. */
    bool immutable = st_header_wal(path) && !st_exists(path, "-wal");
    kv_buf uri;
    kv_buf_init(&uri);
    kevo_status s = KEVO_OK;
    if (!st_ro_uri(path, immutable, &uri)) {
        s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory opening '%s'", path);
    } else {
        int rc = sqlite3_open_v2(uri.data, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        if (rc != SQLITE_OK)
            s = kevo_err_set(err, st_open_status(rc), "cannot open '%s': %s", path,
                             db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
    }
    kv_buf_release(&uri);
    int64_t app = 0, ver = 0, nobj = 0;
    if (s == KEVO_OK) {
        sqlite3_extended_result_codes(db->h, 1);
        sqlite3_busy_timeout(db->h, 5000);
        int rc = st_identity(db->h, &app, &ver, &nobj);
        if (rc != SQLITE_OK)
            s = st_identity_fail(db, rc, err);
        else if (app == 0 && nobj == 0)
            s = kevo_err_set(err, KEVO_ERR_DB, "'%s' is %s, not a kevo database", path,
                             sb.st_size == 0 ? "empty" : "an empty SQLite database");
        else if ((s = st_check_identity(db, app, ver, err)) == KEVO_OK)
            s = st_quick_check(db, err);
    }
    /* an older schema is upgraded in a copy in memory, never in the file */
    if (s == KEVO_OK && ver < ST_SCHEMA_VERSION && (s = st_copy_to_memory(db, err)) == KEVO_OK)
        s = st_migrate(db, ver, err);
    /* belt and braces: a write through this handle fails */
    if (s == KEVO_OK && sqlite3_exec(db->h, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK)
        s = kevo_err_set(err, KEVO_ERR_DB, "cannot configure '%s': %s", path, sqlite3_errmsg(db->h));
    if (s != KEVO_OK) {
        kevo_db_close(db);
        return s;
    }
    *out = db;
    return KEVO_OK;
}

bool kevo_db_readonly(const kevo_db *db)
{
    return db && db->readonly;
}

void kevo_db_close(kevo_db *db)
{
    if (!db)
        return;
    if (db->h)
        sqlite3_close(db->h);
    free(db->path);
    free(db);
}

/* ---- transactions ---- */

kevo_status kevo_db_begin(kevo_db *db, kevo_err *err)
{
    KV_SQL_TRY_AS(db->h, err, sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL), "begin transaction in '%s'",
                  db->path);
    return KEVO_OK;
}

kevo_status kevo_db_commit(kevo_db *db, kevo_err *err)
{
    KV_SQL_TRY_AS(db->h, err, sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL), "commit transaction in '%s'", db->path);
    return KEVO_OK;
}

void kevo_db_rollback(kevo_db *db)
{
    if (db && db->h && !sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

/* Step a write statement once, expecting no rows; on failure records the
 * error (before finalizing); finalizes in every case. */
static kevo_status st_exec_stmt(kevo_db *db, sqlite3_stmt *st, kevo_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    kevo_status s = KEVO_OK;
    if (rc != SQLITE_DONE)
        s = st_fail(db, err, rc, "%s", what);
    sqlite3_finalize(st);
    return s;
}

/* Report a binding failure for a statement and finalize it. */
static kevo_status st_bind_fail(kevo_db *db, sqlite3_stmt *st, int rc, kevo_err *err, const char *what)
{
    kevo_status s = st_fail(db, err, rc, "bind %s", what);
    sqlite3_finalize(st);
    return s;
}

/* Prepare sql and bind its one integer parameter (a run's or a candidate's
 * id); *st NULL on error. */
static kevo_status st_prepare_id(kevo_db *db, const char *sql, int64_t id, sqlite3_stmt **st, kevo_err *err,
                                 const char *what)
{
    kevo_status s = st_prepare(db, sql, st, err, what);
    if (s)
        return s;
    int rc = sqlite3_bind_int64(*st, 1, id);
    if (rc != SQLITE_OK) {
        s = st_bind_fail(db, *st, rc, err, what);
        *st = NULL;
    }
    return s;
}

/* Step a prepared and bound SELECT to its end, appending one element of
 * `size` bytes per row, which read() fills from the row; finalizes st.
 * *v is malloc'd (the caller frees it), NULL with *n 0 on error.  `what`
 * names the rows in messages. */
static kevo_status st_collect(kevo_db *db, sqlite3_stmt *st, size_t size, void (*read)(sqlite3_stmt *, void *),
                              void **v, int *n, kevo_err *err, const char *what)
{
    *v = NULL;
    *n = 0;
    char *a = NULL;
    int cap = 0, rc;
    kevo_status s = KEVO_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            int nc = cap ? 2 * cap : 8;
            char *p = realloc(a, (size_t)nc * size);
            if (!p) {
                s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading %s in '%s'", what, db->path);
                break;
            }
            a = p;
            cap = nc;
        }
        memset(a + (size_t)*n * size, 0, size);
        read(st, a + (size_t)*n * size);
        (*n)++;
    }
    if (!s && rc != SQLITE_DONE)
        s = st_fail(db, err, rc, "read %s", what);
    sqlite3_finalize(st);
    if (s) {
        free(a);
        *n = 0;
        return s;
    }
    *v = a;
    return KEVO_OK;
}

/* Insert n rows of one run, each by sql: run_id first, then what
 * bind(b, row, i) binds of row i (rows of `size` bytes).  `what` names a row
 * in messages.  Errors: the DB's. */
static kevo_status st_insert_rows(kevo_db *db, const char *sql, int64_t run_id, const void *rows, size_t size, int n,
                                  void (*bind)(st_binder *, const void *, int), const char *what, kevo_err *err)
{
    kevo_status s = KEVO_OK;
    for (int i = 0; i < n && !s; i++) {
        sqlite3_stmt *st;
        if ((s = st_prepare(db, sql, &st, err, what)))
            break;
        st_binder b;
        st_bind_init(&b, st);
        st_b_i64(&b, run_id);
        bind(&b, (const char *)rows + (size_t)i * size, i);
        if (b.rc != SQLITE_OK)
            return st_bind_fail(db, st, b.rc, err, what);
        char act[96];
        snprintf(act, sizeof act, "insert %s", what);
        s = st_exec_stmt(db, st, err, act);
    }
    return s;
}

/* The rows of one run: prepare sql (one parameter, the run id), bind
 * run_id and st_collect.  Errors: as st_prepare and st_collect. */
static kevo_status st_collect_run(kevo_db *db, const char *sql, int64_t run_id, size_t size,
                                  void (*read)(sqlite3_stmt *, void *), void **v, int *n, kevo_err *err,
                                  const char *what)
{
    *v = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, sql, &st, err, what);
    if (s)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    return st_collect(db, st, size, read, v, n, err, what);
}

/* ---- runs ---- */

void kevo_run_row_init(kevo_run_row *r)
{
    memset(r, 0, sizeof *r);
    r->peak_tflops = NAN;
    r->copy_tbps = NAN;
    r->flops = NAN;
    r->bytes = NAN;
}

#define ST_RUN_COLS                                                                                          \
    "op, shape, dtype, arch, policy, families, seed, budget, compile_only, status, stop_reason, device, "   \
    "driver_version, sm_count, sm_clock_mhz, mem_clock_mhz, peak_tflops, copy_tbps, flops, bytes, pid, "     \
    "created_at, finished_at, filter, nshapes, warm_start, best_id"

/* Bind the 27 columns of ST_RUN_COLS in order.  Device figures of 0 and
 * empty stop_reason/device/finished_at are stored as NULL. */
static void st_bind_run(st_binder *b, const kevo_run_row *r)
{
    st_b_text(b, r->op);
    st_b_text(b, r->shape);
    st_b_text(b, r->dtype);
    st_b_text(b, r->arch);
    st_b_text(b, r->policy);
    st_b_text(b, r->families);
    st_b_i64(b, r->seed);
    st_b_i64(b, r->budget);
    st_b_i64(b, r->compile_only ? 1 : 0);
    st_b_text(b, r->status);
    st_b_text_opt(b, r->stop_reason);
    st_b_text_opt(b, r->device);
    st_b_int_opt(b, r->driver_version, 0);
    st_b_int_opt(b, r->sm_count, 0);
    st_b_int_opt(b, r->sm_clock_mhz, 0);
    st_b_int_opt(b, r->mem_clock_mhz, 0);
    st_b_double(b, r->peak_tflops);
    st_b_double(b, r->copy_tbps);
    st_b_double(b, r->flops);
    st_b_double(b, r->bytes);
    st_b_i64(b, r->pid);
    st_b_text(b, r->created_at);
    st_b_text_opt(b, r->finished_at);
    st_b_text_opt(b, r->filter);
    st_b_int_opt(b, r->nshapes, 0);
    st_b_text_opt(b, r->warm_start);
    st_b_i64_opt(b, r->best_id, 0);
}

kevo_status kevo_db_run_insert(kevo_db *db, kevo_run_row *r, kevo_err *err)
{
    if (!r->created_at[0])
        kv_utc_iso(r->created_at);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(
        db,
        "INSERT INTO runs(" ST_RUN_COLS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        &st, err, "run insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_bind_run(&b, r);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "run");
    s = st_exec_stmt(db, st, err, "insert run");
    if (s == KEVO_OK)
        r->id = sqlite3_last_insert_rowid(db->h);
    return s;
}

kevo_status kevo_db_run_update(kevo_db *db, const kevo_run_row *r, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "UPDATE runs SET op=?, shape=?, dtype=?, arch=?, policy=?, families=?, seed=?, "
                               "budget=?, compile_only=?, status=?, stop_reason=?, device=?, driver_version=?, "
                               "sm_count=?, sm_clock_mhz=?, mem_clock_mhz=?, peak_tflops=?, copy_tbps=?, flops=?, "
                               "bytes=?, pid=?, created_at=?, finished_at=?, filter=?, nshapes=?, warm_start=?, "
                               "best_id=? WHERE id=?",
                               &st, err, "run update");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_bind_run(&b, r);
    st_b_i64(&b, r->id);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "run");
    char what[64];
    snprintf(what, sizeof what, "update run %lld", (long long)r->id);
    s = st_exec_stmt(db, st, err, what);
    if (s == KEVO_OK && sqlite3_changes(db->h) == 0)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no run %lld in '%s'", (long long)r->id, db->path);
    return s;
}

/* ---- peers ---- */

static void st_bind_peer(st_binder *b, const kevo_peer_row *v)
{
    st_b_i64(b, v->shape_idx);
    st_b_i64(b, v->device);
    st_b_text(b, v->peer);
    st_b_text(b, kevo_peer_state_name(v->fig.state));
    st_b_double(b, v->fig.median_ms);
    st_b_double(b, v->fig.ci_lo_ms);
    st_b_double(b, v->fig.ci_hi_ms);
    st_b_double(b, v->fig.rel_err);
    st_b_i64_opt(b, v->fig.cand_id, 0);
    st_b_text(b, v->fig.detail);
    st_b_text(b, v->fig.config);
}

kevo_status kevo_db_peers_put(kevo_db *db, int64_t run_id, int shape_idx, int device, const kevo_op *op,
                              const kevo_peer_set *ps, kevo_err *err)
{
    for (int i = 0; i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        if (ps->p[i].state == KEVO_PEER_UNMEASURED)
            continue;
        kevo_peer_row v = {.shape_idx = shape_idx, .device = device, .fig = ps->p[i]};
        snprintf(v.peer, sizeof v.peer, "%s", op->peers[i].name);
        sqlite3_stmt *st;
        kevo_status s = st_prepare(db,
                                   "INSERT OR REPLACE INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, "
                                   "ci_lo_ms, ci_hi_ms, rel_err, candidate_id, detail, config) "
                                   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                                   &st, err, "peer insert");
        if (s)
            return s;
        st_binder b;
        st_bind_init(&b, st);
        st_b_i64(&b, run_id);
        st_bind_peer(&b, &v);
        if (b.rc != SQLITE_OK)
            return st_bind_fail(db, st, b.rc, err, "peer");
        char what[96];
        snprintf(what, sizeof what, "put peer '%s' of run %lld", v.peer, (long long)run_id);
        if ((s = st_exec_stmt(db, st, err, what)))
            return s;
    }
    return KEVO_OK;
}

static void st_read_peer(sqlite3_stmt *st, void *p)
{
    kevo_peer_row *r = p;
    char status[16];
    r->shape_idx = sqlite3_column_int(st, 0);
    r->device = sqlite3_column_int(st, 1);
    st_col_text(st, 2, r->peer, sizeof r->peer);
    st_col_text(st, 3, status, sizeof status);
    /* a status kevo does not write (a hand-edited DB) is no check: never a best */
    if (!kevo_peer_state_parse(status, &r->fig.state))
        r->fig.state = KEVO_PEER_ERROR;
    r->fig.median_ms = st_col_double(st, 4);
    r->fig.ci_lo_ms = st_col_double(st, 5);
    r->fig.ci_hi_ms = st_col_double(st, 6);
    r->fig.rel_err = st_col_double(st, 7);
    r->fig.cand_id = sqlite3_column_int64(st, 8);
    st_col_text(st, 9, r->fig.detail, sizeof r->fig.detail);
    st_col_text(st, 10, r->fig.config, sizeof r->fig.config);
}

kevo_status kevo_db_peers_list(kevo_db *db, int64_t run_id, kevo_peer_row **v, int *n, kevo_err *err)
{
    return st_collect_run(db,
                          "SELECT shape_idx, device, peer, status, median_ms, ci_lo_ms, ci_hi_ms, rel_err, "
                          "candidate_id, detail, config FROM run_peers WHERE run_id=? "
                          "ORDER BY shape_idx, device, peer",
                          run_id, sizeof **v, st_read_peer, (void **)v, n, err, "the peers of a run");
}

void kevo_peer_rows_set(const kevo_op *op, const kevo_peer_row *rows, int n, int shape_idx, int device,
                        kevo_peer_set *out)
{
    kevo_peer_set_init(out);
    for (int k = 0; k < n; k++) {
        if (rows[k].shape_idx != shape_idx || rows[k].device != device)
            continue;
        int i = kevo_op_peer_index(op, rows[k].peer);
        if (i >= 0 && i < KEVO_MAX_PEERS)
            out->p[i] = rows[k].fig;
    }
}

kevo_status kevo_db_peers_get(kevo_db *db, int64_t run_id, int shape_idx, int device, const kevo_op *op,
                              kevo_peer_set *out, kevo_err *err)
{
    kevo_peer_row *rows = NULL;
    int n = 0;
    kevo_status s = kevo_db_peers_list(db, run_id, &rows, &n, err);
    kevo_peer_rows_set(op, rows, s ? 0 : n, shape_idx, device, out);
    free(rows);
    return s;
}

kevo_status kevo_db_peers_after(kevo_db *db, int64_t run_id, const kevo_op *op, const kevo_peer_set *ps,
                                kevo_err *err)
{
    double best = NAN;
    kevo_peer_best(op, ps, &best);
    kevo_status s = kevo_db_begin(db, err);
    if (s)
        return s;
    kevo_run_row r;
    s = kevo_db_run_get(db, run_id, &r, err);
    if (!s)
        s = kevo_db_peers_put(db, run_id, 0, 0, op, ps, err);
    sqlite3_stmt *st = NULL;
    if (!s)
        s = st_prepare(db,
                       "UPDATE candidates SET vs_peer = ? / median_ms WHERE run_id = ? AND status = 'ok' "
                       "AND median_ms > 0",
                       &st, err, "vs_peer update");
    if (!s) {
        st_binder b;
        st_bind_init(&b, st);
        st_b_double(&b, best); /* NULL when no peer was checked: vs_peer unknown */
        st_b_i64(&b, run_id);
        if (b.rc != SQLITE_OK)
            s = st_bind_fail(db, st, b.rc, err, "vs_peer");
        else
            s = st_exec_stmt(db, st, err, "update the candidates' vs_peer");
    }
    if (!s)
        s = kevo_db_commit(db, err);
    if (s)
        kevo_db_rollback(db);
    return s;
}

kevo_status kevo_db_run_get(kevo_db *db, int64_t id, kevo_run_row *r, kevo_err *err)
{
    kevo_run_row_init(r);
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "SELECT id, " ST_RUN_COLS " FROM runs WHERE id=?", id, &st, err, "run read");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int i = 0;
        r->id = sqlite3_column_int64(st, i++);
        st_col_text(st, i++, r->op, sizeof r->op);
        st_col_text(st, i++, r->shape, sizeof r->shape);
        st_col_text(st, i++, r->dtype, sizeof r->dtype);
        st_col_text(st, i++, r->arch, sizeof r->arch);
        st_col_text(st, i++, r->policy, sizeof r->policy);
        st_col_text(st, i++, r->families, sizeof r->families);
        r->seed = sqlite3_column_int64(st, i++);
        r->budget = sqlite3_column_int64(st, i++);
        r->compile_only = sqlite3_column_int64(st, i++) != 0;
        st_col_text(st, i++, r->status, sizeof r->status);
        st_col_text(st, i++, r->stop_reason, sizeof r->stop_reason);
        st_col_text(st, i++, r->device, sizeof r->device);
        r->driver_version = st_col_int_opt(st, i++, 0);
        r->sm_count = st_col_int_opt(st, i++, 0);
        r->sm_clock_mhz = st_col_int_opt(st, i++, 0);
        r->mem_clock_mhz = st_col_int_opt(st, i++, 0);
        r->peak_tflops = st_col_double(st, i++);
        r->copy_tbps = st_col_double(st, i++);
        r->flops = st_col_double(st, i++);
        r->bytes = st_col_double(st, i++);
        r->pid = sqlite3_column_int64(st, i++);
        st_col_text(st, i++, r->created_at, sizeof r->created_at);
        st_col_text(st, i++, r->finished_at, sizeof r->finished_at);
        st_col_text(st, i++, r->filter, sizeof r->filter);
        r->nshapes = st_col_int_opt(st, i++, 0);
        st_col_text(st, i++, r->warm_start, sizeof r->warm_start);
        r->best_id = sqlite3_column_int64(st, i++);
        s = KEVO_OK;
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no run %lld in '%s'", (long long)id, db->path);
    } else {
        s = st_fail(db, err, rc, "read run %lld", (long long)id);
    }
    sqlite3_finalize(st);
    return s;
}

static void st_read_edge(sqlite3_stmt *st, void *p)
{
    kevo_edge_row *e = p;
    e->parent_id = sqlite3_column_int64(st, 0);
    e->child_id = sqlite3_column_int64(st, 1);
    st_col_text(st, 2, e->op, sizeof e->op);
}

kevo_status kevo_db_edge_list(kevo_db *db, int64_t run_id, kevo_edge_row **rows, int *n, kevo_err *err)
{
    return st_collect_run(db,
                          "SELECT parent_id, child_id, operator FROM edges WHERE run_id = ? "
                          "ORDER BY child_id, parent_id",
                          run_id, sizeof **rows, st_read_edge, (void **)rows, n, err, "the edges of a run");
}

static void st_read_id(sqlite3_stmt *st, void *p)
{
    *(int64_t *)p = sqlite3_column_int64(st, 0);
}

kevo_status kevo_db_run_ids(kevo_db *db, int64_t **ids, int *n, kevo_err *err)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "SELECT id FROM runs ORDER BY id", &st, err, "run list");
    if (s)
        return s;
    return st_collect(db, st, sizeof **ids, st_read_id, (void **)ids, n, err, "run ids");
}

/* ---- candidates ---- */

void kevo_cand_row_init(kevo_cand_row *c)
{
    memset(c, 0, sizeof *c);
    memcpy(c->status, "pending", sizeof "pending");
    c->regs = c->spill_bytes = c->smem_static = c->smem_dynamic = -1;
    c->compile_s = NAN;
    c->median_ms = c->min_ms = c->rel_err = c->max_abs_err = c->tflops = c->speedup = NAN;
    c->vs_peer = c->roofline = c->ci_lo_ms = c->ci_hi_ms = c->model_ms = c->fitness = NAN;
    c->tied = -1;
    c->device = -1;
    c->eval_s = NAN;
    c->round = -1;
}

void kevo_cand_row_release(kevo_cand_row *c)
{
    if (!c)
        return;
    free(c->params);
    free(c->plan);
    free(c->fail_msg);
    c->params = c->plan = c->fail_msg = NULL;
}

void kevo_cand_rows_free(kevo_cand_row *rows, int n)
{
    if (!rows)
        return;
    for (int i = 0; i < n; i++)
        kevo_cand_row_release(&rows[i]);
    free(rows);
}

#define ST_CAND_COLS                                                                                        \
    "run_id, seq, family, params, plan, source_hash, binary_key, status, fail, fail_msg, regs, "          \
    "spill_bytes, smem_static, smem_dynamic, compile_s, median_ms, min_ms, rel_err, max_abs_err, tflops, " \
    "speedup, checks, vs_peer, roofline, ci_lo_ms, ci_hi_ms, model_ms, fitness, tied, device, eval_s, round"

/* Bind the 32 columns of ST_CAND_COLS in order. */
static void st_bind_cand(st_binder *b, const kevo_cand_row *c)
{
    st_b_i64(b, c->run_id);
    st_b_i64(b, c->seq);
    st_b_text(b, c->family);
    st_b_text(b, c->params);
    st_b_text(b, c->plan);
    st_b_text_opt(b, c->source_hash);
    st_b_text_opt(b, c->binary_key);
    st_b_text(b, c->status);
    st_b_text_opt(b, c->fail);
    st_b_text(b, c->fail_msg);
    st_b_int_opt(b, c->regs, -1);
    st_b_int_opt(b, c->spill_bytes, -1);
    st_b_int_opt(b, c->smem_static, -1);
    st_b_int_opt(b, c->smem_dynamic, -1);
    st_b_double(b, c->compile_s);
    st_b_double(b, c->median_ms);
    st_b_double(b, c->min_ms);
    st_b_double(b, c->rel_err);
    st_b_double(b, c->max_abs_err);
    st_b_double(b, c->tflops);
    st_b_double(b, c->speedup);
    st_b_i64(b, c->checks);
    st_b_double(b, c->vs_peer);
    st_b_double(b, c->roofline);
    st_b_double(b, c->ci_lo_ms);
    st_b_double(b, c->ci_hi_ms);
    st_b_double(b, c->model_ms);
    st_b_double(b, c->fitness);
    st_b_int_opt(b, c->tied, -1);
    st_b_int_opt(b, c->device, -1);
    st_b_double(b, c->eval_s);
    st_b_int_opt(b, c->round, -1);
}

/* Read a row selected as "id, " ST_CAND_COLS into c (initialized here);
 * false when out of memory, with c left released. */
static bool st_read_cand(sqlite3_stmt *st, kevo_cand_row *c)
{
    kevo_cand_row_init(c);
    int i = 0;
    c->id = sqlite3_column_int64(st, i++);
    c->run_id = sqlite3_column_int64(st, i++);
    c->seq = sqlite3_column_int64(st, i++);
    st_col_text(st, i++, c->family, sizeof c->family);
    bool ok = st_col_strdup(st, i++, &c->params);
    ok = st_col_strdup(st, i++, &c->plan) && ok;
    st_col_text(st, i++, c->source_hash, sizeof c->source_hash);
    st_col_text(st, i++, c->binary_key, sizeof c->binary_key);
    st_col_text(st, i++, c->status, sizeof c->status);
    st_col_text(st, i++, c->fail, sizeof c->fail);
    ok = st_col_strdup(st, i++, &c->fail_msg) && ok;
    c->regs = st_col_int_opt(st, i++, -1);
    c->spill_bytes = st_col_int_opt(st, i++, -1);
    c->smem_static = st_col_int_opt(st, i++, -1);
    c->smem_dynamic = st_col_int_opt(st, i++, -1);
    c->compile_s = st_col_double(st, i++);
    c->median_ms = st_col_double(st, i++);
    c->min_ms = st_col_double(st, i++);
    c->rel_err = st_col_double(st, i++);
    c->max_abs_err = st_col_double(st, i++);
    c->tflops = st_col_double(st, i++);
    c->speedup = st_col_double(st, i++);
    c->checks = st_col_int_opt(st, i++, 0);
    c->vs_peer = st_col_double(st, i++);
    c->roofline = st_col_double(st, i++);
    c->ci_lo_ms = st_col_double(st, i++);
    c->ci_hi_ms = st_col_double(st, i++);
    c->model_ms = st_col_double(st, i++);
    c->fitness = st_col_double(st, i++);
    c->tied = st_col_int_opt(st, i++, -1);
    c->device = st_col_int_opt(st, i++, -1);
    c->eval_s = st_col_double(st, i++);
    c->round = st_col_int_opt(st, i++, -1);
    if (!ok)
        kevo_cand_row_release(c);
    return ok;
}

/* Error for a failed candidate write: the run's (family, params) key taken
 * is the caller's mistake, anything else a database error. */
static kevo_status st_cand_write_fail(kevo_db *db, int rc, const kevo_cand_row *c, kevo_err *err,
                                      const char *what)
{
    if (rc == SQLITE_CONSTRAINT_UNIQUE)
        return kevo_err_set(err, KEVO_ERR_ARG, "candidate already in run %lld: %s %s", (long long)c->run_id,
                            c->family, c->params);
    return st_fail(db, err, rc, "%s", what);
}

kevo_status kevo_db_cand_insert(kevo_db *db, kevo_cand_row *c, kevo_err *err)
{
    if (!c->params)
        return kevo_err_set(err, KEVO_ERR_ARG, "candidate of run %lld has no params", (long long)c->run_id);
    char now[32];
    kv_utc_iso(now);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT INTO candidates(" ST_CAND_COLS ", created_at) "
                               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               &st, err, "candidate insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_bind_cand(&b, c);
    st_b_text(&b, now);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "candidate");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        c->id = sqlite3_last_insert_rowid(db->h);
        s = KEVO_OK;
    } else {
        char what[64];
        snprintf(what, sizeof what, "insert candidate into run %lld", (long long)c->run_id);
        s = st_cand_write_fail(db, rc, c, err, what);
    }
    sqlite3_finalize(st);
    return s;
}

kevo_status kevo_db_cand_update(kevo_db *db, const kevo_cand_row *c, kevo_err *err)
{
    if (!c->params)
        return kevo_err_set(err, KEVO_ERR_ARG, "candidate %lld has no params", (long long)c->id);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "UPDATE candidates SET run_id=?, seq=?, family=?, params=?, plan=?, source_hash=?, "
                               "binary_key=?, status=?, fail=?, fail_msg=?, regs=?, spill_bytes=?, smem_static=?, "
                               "smem_dynamic=?, compile_s=?, median_ms=?, min_ms=?, rel_err=?, max_abs_err=?, "
                               "tflops=?, speedup=?, checks=?, vs_peer=?, roofline=?, ci_lo_ms=?, ci_hi_ms=?, "
                               "model_ms=?, fitness=?, tied=?, device=?, eval_s=?, round=? WHERE id=?",
                               &st, err, "candidate update");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_bind_cand(&b, c);
    st_b_i64(&b, c->id);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "candidate");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        s = sqlite3_changes(db->h) ? KEVO_OK
                                   : kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no candidate %lld in '%s'",
                                                  (long long)c->id, db->path);
    } else {
        char what[64];
        snprintf(what, sizeof what, "update candidate %lld", (long long)c->id);
        s = st_cand_write_fail(db, rc, c, err, what);
    }
    sqlite3_finalize(st);
    return s;
}

/* Run a candidate query with one int64 parameter that yields at most one
 * row; KEVO_ERR_NOT_FOUND (message `nf`) when it yields none. */
static kevo_status st_cand_one(kevo_db *db, const char *sql, int64_t key, kevo_cand_row *c, kevo_err *err,
                               const char *nf)
{
    kevo_cand_row_init(c);
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, sql, key, &st, err, "candidate read");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        s = st_read_cand(st, c) ? KEVO_OK
                                : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading %s", nf);
    else if (rc == SQLITE_DONE)
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no %s in '%s'", nf, db->path);
    else
        s = st_fail(db, err, rc, "read %s", nf);
    sqlite3_finalize(st);
    return s;
}

kevo_status kevo_db_cand_get(kevo_db *db, int64_t id, kevo_cand_row *c, kevo_err *err)
{
    char nf[64];
    snprintf(nf, sizeof nf, "candidate %lld", (long long)id);
    return st_cand_one(db, "SELECT id, " ST_CAND_COLS " FROM candidates WHERE id=?", id, c, err, nf);
}

kevo_status kevo_db_cand_best(kevo_db *db, int64_t run_id, kevo_cand_row *c, kevo_err *err)
{
    char nf[64];
    snprintf(nf, sizeof nf, "verified candidate in run %lld", (long long)run_id);
    /* the winner the run's paired re-timing named, else the fittest */
    return st_cand_one(db,
                       "SELECT id, " ST_CAND_COLS " FROM candidates c WHERE run_id=?1 AND status='ok' "
                       "AND COALESCE(fitness, speedup) IS NOT NULL ORDER BY "
                       "id = (SELECT best_id FROM runs WHERE id=?1) DESC, COALESCE(fitness, speedup) DESC, "
                       "median_ms ASC, id ASC LIMIT 1",
                       run_id, c, err, nf);
}

kevo_status kevo_db_cand_list(kevo_db *db, int64_t run_id, kevo_cand_row **rows, int *n, kevo_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "SELECT id, " ST_CAND_COLS " FROM candidates WHERE run_id=? ORDER BY seq, id",
                                  run_id, &st, err, "candidate list");
    if (s)
        return s;
    int rc;
    kevo_cand_row *v = NULL;
    int len = 0, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (len == cap) {
            int nc = cap ? cap * 2 : 16;
            kevo_cand_row *p = realloc(v, (size_t)nc * sizeof *v);
            if (!p)
                goto nomem;
            v = p;
            cap = nc;
        }
        if (!st_read_cand(st, &v[len]))
            goto nomem;
        len++;
    }
    if (rc != SQLITE_DONE) {
        s = st_fail(db, err, rc, "list candidates of run %lld", (long long)run_id);
        kevo_cand_rows_free(v, len);
        sqlite3_finalize(st);
        return s;
    }
    sqlite3_finalize(st);
    *rows = v;
    *n = len;
    return KEVO_OK;
nomem:
    kevo_cand_rows_free(v, len);
    sqlite3_finalize(st);
    return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory listing candidates of run %lld in '%s'",
                        (long long)run_id, db->path);
}

/* ---- edges, sources, measurements ---- */

kevo_status kevo_db_edge_insert(kevo_db *db, int64_t run_id, int64_t parent_id, int64_t child_id, const char *op,
                                kevo_err *err)
{
    if (!op || !*op)
        return kevo_err_set(err, KEVO_ERR_ARG, "edge %lld -> %lld of run %lld has no operator",
                            (long long)parent_id, (long long)child_id, (long long)run_id);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "INSERT INTO edges(run_id, parent_id, child_id, operator) VALUES(?,?,?,?)", &st,
                               err, "edge insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, run_id);
    st_b_i64(&b, parent_id);
    st_b_i64(&b, child_id);
    st_b_text(&b, op);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "edge");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        s = KEVO_OK;
    else if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
        s = kevo_err_set(err, KEVO_ERR_ARG, "edge %lld -> %lld already in run %lld", (long long)parent_id,
                         (long long)child_id, (long long)run_id);
    else
        s = st_fail(db, err, rc, "insert edge %lld -> %lld of run %lld", (long long)parent_id,
                    (long long)child_id, (long long)run_id);
    sqlite3_finalize(st);
    return s;
}

kevo_status kevo_db_source_put(kevo_db *db, const char *hash, const char *text, kevo_err *err)
{
    if (!hash || !*hash || !text)
        return kevo_err_set(err, KEVO_ERR_ARG, "source without hash or text");
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "INSERT OR IGNORE INTO sources(hash, text) VALUES(?,?)", &st, err,
                               "source insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_text(&b, hash);
    st_b_text(&b, text);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "source");
    char what[96];
    snprintf(what, sizeof what, "insert source %.64s", hash);
    return st_exec_stmt(db, st, err, what);
}

kevo_status kevo_db_source_get(kevo_db *db, const char *hash, char **text, kevo_err *err)
{
    *text = NULL;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "SELECT text FROM sources WHERE hash=?", &st, err, "source read");
    if (s)
        return s;
    int rc = sqlite3_bind_text(st, 1, hash ? hash : "", -1, SQLITE_STATIC);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, "source hash");
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (!st_col_strdup(st, 0, text) || !*text) {
            free(*text);
            *text = NULL;
            s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading source %.64s", hash);
        }
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no source %.64s in '%s'", hash ? hash : "", db->path);
    } else {
        s = st_fail(db, err, rc, "read source %.64s", hash);
    }
    sqlite3_finalize(st);
    return s;
}

kevo_status kevo_db_measure_put(kevo_db *db, int64_t cand_id, const char *name, double value, kevo_err *err)
{
    if (!name || !*name)
        return kevo_err_set(err, KEVO_ERR_ARG, "measurement of candidate %lld has no name", (long long)cand_id);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "INSERT OR REPLACE INTO measurements(candidate_id, name, value) VALUES(?,?,?)",
                               &st, err, "measurement insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, cand_id);
    st_b_text(&b, name);
    st_b_double(&b, value);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "measurement");
    char what[160];
    snprintf(what, sizeof what, "put measurement '%.100s' of candidate %lld", name, (long long)cand_id);
    return st_exec_stmt(db, st, err, what);
}

kevo_status kevo_db_measures_get(kevo_db *db, int64_t cand_id, const char *prefix, kevo_measure **v, int *n,
                                 kevo_err *err)
{
    *v = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "SELECT name, value FROM measurements WHERE candidate_id=? AND "
                               "substr(name, 1, length(?2)) = ?2 ORDER BY name", &st, err, "measurements read");
    if (s)
        return s;
    sqlite3_bind_int64(st, 1, cand_id);
    sqlite3_bind_text(st, 2, prefix ? prefix : "", -1, SQLITE_STATIC);
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && !s) {
        if (*n == cap) {
            kevo_measure *nv = realloc(*v, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *nv);
            if (!nv) {
                s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading measurements");
                break;
            }
            *v = nv;
        }
        const unsigned char *name = sqlite3_column_text(st, 0);
        snprintf((*v)[*n].name, sizeof (*v)[*n].name, "%s", name ? (const char *)name : "");
        (*v)[*n].value = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 1);
        (*n)++;
    }
    if (!s && rc != SQLITE_DONE && rc != SQLITE_ROW)
        s = st_fail(db, err, rc, "read measurements of candidate %lld", (long long)cand_id);
    sqlite3_finalize(st);
    if (s) {
        free(*v);
        *v = NULL;
        *n = 0;
    }
    return s;
}

/* ---- distributions: shapes of a run, results per shape, repetitions ---- */

static void st_bind_run_shape(st_binder *b, const void *row, int i)
{
    const kevo_run_shape *v = row;
    (void)i;
    st_b_i64(b, v->idx);
    st_b_text(b, v->shape);
    st_b_double(b, v->weight);
    st_b_double(b, v->flops);
    st_b_double(b, v->bytes);
}

kevo_status kevo_db_run_shapes_put(kevo_db *db, int64_t run_id, const kevo_run_shape *v, int n, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "DELETE FROM run_shapes WHERE run_id=?", &st, err, "run shapes delete");
    if (s)
        return s;
    sqlite3_bind_int64(st, 1, run_id);
    if ((s = st_exec_stmt(db, st, err, "delete run shapes")))
        return s;
    return st_insert_rows(db,
                          "INSERT INTO run_shapes(run_id, idx, shape, weight, flops, bytes) VALUES(?,?,?,?,?,?)",
                          run_id, v, sizeof *v, n, st_bind_run_shape, "run shape", err);
}

static void st_read_run_shape(sqlite3_stmt *st, void *p)
{
    kevo_run_shape *r = p;
    r->idx = sqlite3_column_int(st, 0);
    st_col_text(st, 1, r->shape, sizeof r->shape);
    r->weight = st_col_double(st, 2);
    r->flops = st_col_double(st, 3);
    r->bytes = st_col_double(st, 4);
}

kevo_status kevo_db_run_shapes_get(kevo_db *db, int64_t run_id, kevo_run_shape **v, int *n, kevo_err *err)
{
    return st_collect_run(db,
                          "SELECT idx, shape, weight, flops, bytes FROM run_shapes WHERE run_id=? ORDER BY idx",
                          run_id, sizeof **v, st_read_run_shape, (void **)v, n, err, "the shapes of a run");
}

static void st_bind_run_device(st_binder *b, const void *row, int i)
{
    const kevo_run_device *v = row;
    (void)i;
    st_b_i64(b, v->idx);
    st_b_i64(b, v->ordinal);
    st_b_text(b, v->host);
    st_b_text(b, v->name);
    st_b_text(b, v->pci_bus);
    st_b_i64(b, v->sm_count);
    st_b_double(b, v->peak_tflops);
    st_b_double(b, v->copy_tbps);
    st_b_i64(b, v->evaluated);
    st_b_double(b, v->busy_s);
    st_b_double(b, v->loop_s);
}

kevo_status kevo_db_run_devices_put(kevo_db *db, int64_t run_id, const kevo_run_device *v, int n, kevo_err *err)
{
    return st_insert_rows(db,
                          "INSERT OR REPLACE INTO run_devices(run_id, idx, ordinal, host, name, pci_bus, sm_count, "
                          "peak_tflops, copy_tbps, evaluated, busy_s, loop_s) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                          run_id, v, sizeof *v, n, st_bind_run_device, "run device", err);
}

static void st_read_run_device(sqlite3_stmt *st, void *p)
{
    kevo_run_device *r = p;
    r->idx = sqlite3_column_int(st, 0);
    r->ordinal = sqlite3_column_int(st, 1);
    st_col_text(st, 2, r->host, sizeof r->host);
    st_col_text(st, 3, r->name, sizeof r->name);
    st_col_text(st, 4, r->pci_bus, sizeof r->pci_bus);
    r->sm_count = sqlite3_column_int(st, 5);
    r->peak_tflops = st_col_double(st, 6);
    r->copy_tbps = st_col_double(st, 7);
    r->evaluated = sqlite3_column_int(st, 8);
    r->busy_s = st_col_double(st, 9);
    r->loop_s = st_col_double(st, 10);
}

void kevo_run_device_rate(const kevo_run_device *v, double *per_minute, double *busy_fraction)
{
    bool ended = v->loop_s > 0;
    *per_minute = ended ? 60.0 * v->evaluated / v->loop_s : NAN;
    *busy_fraction = ended ? v->busy_s / v->loop_s : NAN;
}

kevo_status kevo_db_run_devices_get(kevo_db *db, int64_t run_id, kevo_run_device **v, int *n, kevo_err *err)
{
    return st_collect_run(db,
                          "SELECT idx, ordinal, host, name, pci_bus, sm_count, peak_tflops, copy_tbps, evaluated, "
                          "busy_s, loop_s FROM run_devices "
                          "WHERE run_id=? ORDER BY idx",
                          run_id, sizeof **v, st_read_run_device, (void **)v, n, err, "the devices of a run");
}

kevo_status kevo_db_shape_result_put(kevo_db *db, int64_t cand_id, const kevo_shape_result *r, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR REPLACE INTO shape_results(candidate_id, shape_idx, median_ms, ci_lo_ms, "
                               "ci_hi_ms, speedup, vs_peer, roofline, rel_err) VALUES(?,?,?,?,?,?,?,?,?)",
                               &st, err, "shape result insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, cand_id);
    st_b_i64(&b, r->shape_idx);
    st_b_double(&b, r->median_ms);
    st_b_double(&b, r->ci_lo_ms);
    st_b_double(&b, r->ci_hi_ms);
    st_b_double(&b, r->speedup);
    st_b_double(&b, r->vs_peer);
    st_b_double(&b, r->roofline);
    st_b_double(&b, r->rel_err);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "shape result");
    return st_exec_stmt(db, st, err, "insert shape result");
}

static void st_read_shape_result(sqlite3_stmt *st, void *p)
{
    kevo_shape_result *r = p;
    r->shape_idx = sqlite3_column_int(st, 0);
    r->median_ms = st_col_double(st, 1);
    r->ci_lo_ms = st_col_double(st, 2);
    r->ci_hi_ms = st_col_double(st, 3);
    r->speedup = st_col_double(st, 4);
    r->vs_peer = st_col_double(st, 5);
    r->roofline = st_col_double(st, 6);
    r->rel_err = st_col_double(st, 7);
}

kevo_status kevo_db_shape_results_get(kevo_db *db, int64_t cand_id, kevo_shape_result **v, int *n, kevo_err *err)
{
    *v = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "SELECT shape_idx, median_ms, ci_lo_ms, ci_hi_ms, speedup, vs_peer, roofline, rel_err "
                               "FROM shape_results WHERE candidate_id=? ORDER BY shape_idx",
                               &st, err, "shape results read");
    if (s)
        return s;
    sqlite3_bind_int64(st, 1, cand_id);
    return st_collect(db, st, sizeof **v, st_read_shape_result, (void **)v, n, err, "shape results");
}

kevo_status kevo_db_timings_put(kevo_db *db, int64_t cand_id, int shape_idx, const char *label, const double *ms,
                                int n, kevo_err *err)
{
    if (!label || !*label || n < 1 || !ms)
        return kevo_err_set(err, KEVO_ERR_ARG, "timings of candidate %lld without label or values", (long long)cand_id);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR REPLACE INTO timings(candidate_id, shape_idx, label, ms) VALUES(?,?,?,?)",
                               &st, err, "timings insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, cand_id);
    st_b_i64(&b, shape_idx);
    st_b_text(&b, label);
    st_b_blob(&b, ms, (size_t)n * sizeof *ms); /* native doubles: the DB moves with its machine kind */
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "timings");
    return st_exec_stmt(db, st, err, "insert timings");
}

kevo_status kevo_db_timings_get(kevo_db *db, int64_t cand_id, int shape_idx, const char *label, double **ms, int *n,
                                kevo_err *err)
{
    *ms = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "SELECT ms FROM timings WHERE candidate_id=? AND shape_idx=? AND label=?", &st,
                               err, "timings read");
    if (s)
        return s;
    sqlite3_bind_int64(st, 1, cand_id);
    sqlite3_bind_int64(st, 2, shape_idx);
    sqlite3_bind_text(st, 3, label ? label : "", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int bytes = sqlite3_column_bytes(st, 0);
        const void *p = sqlite3_column_blob(st, 0);
        if (bytes <= 0 || bytes % (int)sizeof(double) != 0 || !p) {
            s = kevo_err_set(err, KEVO_ERR_DB, "timings of candidate %lld in '%s' are malformed", (long long)cand_id,
                             db->path);
        } else if (!(*ms = malloc((size_t)bytes))) {
            s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading timings");
        } else {
            memcpy(*ms, p, (size_t)bytes);
            *n = bytes / (int)sizeof(double);
        }
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no '%s' timings of candidate %lld", label ? label : "",
                         (long long)cand_id);
    } else {
        s = st_fail(db, err, rc, "read timings of candidate %lld", (long long)cand_id);
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- warm-start seeds ---- */

static void st_bind_warm(st_binder *b, const void *row, int i)
{
    const kevo_warm_seed *v = row;
    st_b_i64(b, i);
    st_b_text(b, v->family);
    st_b_text(b, v->params);
    st_b_i64(b, v->from_run);
    st_b_text(b, v->from_shape);
    st_b_double(b, v->distance);
}

kevo_status kevo_db_warm_put(kevo_db *db, int64_t run_id, const kevo_warm_seed *v, int n, kevo_err *err)
{
    return st_insert_rows(db,
                          "INSERT OR REPLACE INTO warm_seeds(run_id, idx, family, params, from_run, from_shape, "
                          "distance) VALUES(?,?,?,?,?,?,?)",
                          run_id, v, sizeof *v, n, st_bind_warm, "warm seed", err);
}

static void st_read_warm(sqlite3_stmt *st, void *p)
{
    kevo_warm_seed *w = p;
    st_col_text(st, 0, w->family, sizeof w->family);
    st_col_text(st, 1, w->params, sizeof w->params);
    w->from_run = sqlite3_column_int64(st, 2);
    st_col_text(st, 3, w->from_shape, sizeof w->from_shape);
    w->distance = st_col_double(st, 4);
}

kevo_status kevo_db_warm_get(kevo_db *db, int64_t run_id, kevo_warm_seed **v, int *n, kevo_err *err)
{
    return st_collect_run(db,
                          "SELECT family, params, from_run, from_shape, distance FROM warm_seeds "
                          "WHERE run_id=? ORDER BY idx",
                          run_id, sizeof **v, st_read_warm, (void **)v, n, err, "warm seeds");
}

/* ---- binaries ---- */

void kevo_binary_row_init(kevo_binary_row *b)
{
    memset(b, 0, sizeof *b);
    b->regs = b->spill_bytes = b->smem_static = b->stack_bytes = -1;
    b->compile_s = NAN;
}

void kevo_binary_row_release(kevo_binary_row *b)
{
    if (!b)
        return;
    free(b->options);
    free(b->cubin);
    free(b->log);
    b->options = NULL;
    b->cubin = NULL;
    b->log = NULL;
    b->cubin_size = 0;
}

kevo_status kevo_db_binary_put(kevo_db *db, const kevo_binary_row *r, kevo_err *err)
{
    if (!r->key[0])
        return kevo_err_set(err, KEVO_ERR_ARG, "binary without a key");
    char now[32];
    kv_utc_iso(now);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR IGNORE INTO binaries(key, arch, nvrtc_version, options, source_hash, "
                               "cubin, log, fail, regs, spill_bytes, smem_static, stack_bytes, compile_s, "
                               "created_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               &st, err, "binary insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_text(&b, r->key);
    st_b_text(&b, r->arch);
    st_b_text(&b, r->nvrtc_version);
    st_b_text(&b, r->options);
    st_b_text_opt(&b, r->source_hash);
    st_b_blob(&b, r->cubin, r->cubin_size);
    st_b_text(&b, r->log);
    st_b_text_opt(&b, r->fail);
    st_b_int_opt(&b, r->regs, -1);
    st_b_int_opt(&b, r->spill_bytes, -1);
    st_b_int_opt(&b, r->smem_static, -1);
    st_b_int_opt(&b, r->stack_bytes, -1);
    st_b_double(&b, r->compile_s);
    st_b_text(&b, now);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "binary");
    char what[96];
    snprintf(what, sizeof what, "insert binary %.64s", r->key);
    return st_exec_stmt(db, st, err, what);
}

kevo_status kevo_db_binary_get(kevo_db *db, const char *key, kevo_binary_row *r, kevo_err *err)
{
    kevo_binary_row_init(r);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "SELECT key, arch, nvrtc_version, options, source_hash, cubin, log, fail, regs, "
                               "spill_bytes, smem_static, stack_bytes, compile_s FROM binaries WHERE key=?",
                               &st, err, "binary read");
    if (s)
        return s;
    int rc = sqlite3_bind_text(st, 1, key ? key : "", -1, SQLITE_STATIC);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, "binary key");
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no binary %.64s in '%s'", key ? key : "", db->path);
    } else if (rc != SQLITE_ROW) {
        s = st_fail(db, err, rc, "read binary %.64s", key);
    } else {
        st_col_text(st, 0, r->key, sizeof r->key);
        st_col_text(st, 1, r->arch, sizeof r->arch);
        st_col_text(st, 2, r->nvrtc_version, sizeof r->nvrtc_version);
        bool ok = st_col_strdup(st, 3, &r->options);
        st_col_text(st, 4, r->source_hash, sizeof r->source_hash);
        if (sqlite3_column_type(st, 5) != SQLITE_NULL) {
            const void *p = sqlite3_column_blob(st, 5);
            size_t n = (size_t)sqlite3_column_bytes(st, 5);
            r->cubin = malloc(n ? n : 1);
            if (r->cubin) {
                if (n)
                    memcpy(r->cubin, p, n);
                r->cubin_size = n;
            } else {
                ok = false;
            }
        }
        ok = st_col_strdup(st, 6, &r->log) && ok;
        st_col_text(st, 7, r->fail, sizeof r->fail);
        r->regs = st_col_int_opt(st, 8, -1);
        r->spill_bytes = st_col_int_opt(st, 9, -1);
        r->smem_static = st_col_int_opt(st, 10, -1);
        r->stack_bytes = st_col_int_opt(st, 11, -1);
        r->compile_s = st_col_double(st, 12);
        if (!ok) {
            kevo_binary_row_release(r);
            s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading binary %.64s", key);
        }
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- counts ---- */

kevo_status kevo_db_run_counts(kevo_db *db, int64_t run_id, int *evaluated, int *compiled, int *failed, int *ok,
                               kevo_err *err)
{
    int e = 0, c = 0, f = 0, k = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db,
                                  "SELECT COALESCE(SUM(c.status <> 'pending'), 0),"
                                  " COALESCE(SUM(b.cubin IS NOT NULL), 0),"
                                  " COALESCE(SUM(c.fail IS NOT NULL), 0),"
                                  " COALESCE(SUM(c.status = 'ok'), 0)"
                                  " FROM candidates c LEFT JOIN binaries b ON b.key = c.binary_key"
                                  " WHERE c.run_id = ?",
                                  run_id, &st, err, "run counts");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        e = sqlite3_column_int(st, 0);
        c = sqlite3_column_int(st, 1);
        f = sqlite3_column_int(st, 2);
        k = sqlite3_column_int(st, 3);
    } else {
        s = st_fail(db, err, rc, "count candidates of run %lld", (long long)run_id);
    }
    sqlite3_finalize(st);
    if (evaluated)
        *evaluated = e;
    if (compiled)
        *compiled = c;
    if (failed)
        *failed = f;
    if (ok)
        *ok = k;
    return s;
}

/* ---- run settings ---- */

kevo_status kevo_db_run_settings_put(kevo_db *db, int64_t run_id, const kevo_run_settings *r, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR REPLACE INTO run_settings(run_id, family_arg, batch, maps, reps, warmup, "
                               "time_limit, plateau, target, compile_timeout, eval_timeout, templates, space_hash, "
                               "elapsed_s, ahead) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               &st, err, "run settings insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, run_id);
    st_b_text(&b, r->family_arg);
    st_b_i64(&b, r->batch);
    st_b_i64(&b, (int64_t)r->maps);
    st_b_i64(&b, r->reps);
    st_b_i64(&b, r->warmup);
    st_b_double(&b, r->time_limit);
    st_b_i64(&b, r->plateau);
    st_b_double(&b, r->target);
    st_b_double(&b, r->compile_timeout);
    st_b_double(&b, r->eval_timeout);
    st_b_text(&b, r->templates);
    st_b_text(&b, r->space_hash);
    st_b_double(&b, r->elapsed_s);
    st_b_i64(&b, r->ahead);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "run settings");
    return st_exec_stmt(db, st, err, "store run settings");
}

kevo_status kevo_db_run_settings_get(kevo_db *db, int64_t run_id, kevo_run_settings *r, kevo_err *err)
{
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db,
                                  "SELECT family_arg, batch, maps, reps, warmup, time_limit, plateau, target, "
                                  "compile_timeout, eval_timeout, templates, space_hash, elapsed_s, ahead "
                                  "FROM run_settings WHERE run_id=?",
                                  run_id, &st, err, "run settings read");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int i = 0;
        st_col_text(st, i++, r->family_arg, sizeof r->family_arg);
        r->batch = sqlite3_column_int(st, i++);
        r->maps = (unsigned)sqlite3_column_int64(st, i++);
        r->reps = sqlite3_column_int(st, i++);
        r->warmup = sqlite3_column_int(st, i++);
        r->time_limit = sqlite3_column_double(st, i++);
        r->plateau = sqlite3_column_int64(st, i++);
        r->target = sqlite3_column_double(st, i++);
        r->compile_timeout = sqlite3_column_double(st, i++);
        r->eval_timeout = sqlite3_column_double(st, i++);
        st_col_text(st, i++, r->templates, sizeof r->templates);
        st_col_text(st, i++, r->space_hash, sizeof r->space_hash);
        r->elapsed_s = sqlite3_column_double(st, i++);
        r->ahead = st_col_int_opt(st, i++, 1); /* a run of schema 7 or older proposed a round at a time */
        s = KEVO_OK;
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no stored settings in '%s' (an older kevo made it)",
                         (long long)run_id, db->path);
    } else {
        s = st_fail(db, err, rc, "read run settings %lld", (long long)run_id);
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- LLM generations ---- */

void kevo_generation_row_init(kevo_generation_row *g)
{
    memset(g, 0, sizeof *g);
    g->tokens_in = g->tokens_out = -1;
    g->latency_s = NAN;
    g->seed = -1;
    g->temperature = NAN;
}

void kevo_generation_row_release(kevo_generation_row *g)
{
    char **p[] = {&g->system_prompt, &g->prompt, &g->reply, &g->error, &g->space, &g->source};
    for (size_t i = 0; i < KV_ARRAY_LEN(p); i++) {
        free(*p[i]);
        *p[i] = NULL;
    }
}

void kevo_generation_rows_free(kevo_generation_row *v, int n)
{
    for (int i = 0; i < n; i++)
        kevo_generation_row_release(&v[i]);
    free(v);
}

kevo_status kevo_db_generation_put(kevo_db *db, const kevo_generation_row *g, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT INTO generations(candidate_id, run_id, parent_id, generator, model, "
                               "system_prompt, prompt, reply, tokens_in, tokens_out, latency_s, seed, temperature, "
                               "finish_reason, http_status, attempts, error, query, space, source, created_at) "
                               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               &st, err, "generation insert");
    if (s)
        return s;
    char now[32];
    kv_utc_iso(now);
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, g->candidate_id);
    st_b_i64(&b, g->run_id);
    st_b_i64_opt(&b, g->parent_id, 0);
    st_b_text(&b, g->generator);
    st_b_text_opt(&b, g->model);
    st_b_text(&b, g->system_prompt);
    st_b_text(&b, g->prompt);
    st_b_text(&b, g->reply);
    st_b_i64_opt(&b, g->tokens_in, -1);
    st_b_i64_opt(&b, g->tokens_out, -1);
    st_b_double(&b, g->latency_s);
    st_b_i64_opt(&b, g->seed, -1);
    st_b_double(&b, g->temperature);
    st_b_text_opt(&b, g->finish_reason);
    st_b_int_opt(&b, g->http_status, 0);
    st_b_i64(&b, g->attempts);
    st_b_text(&b, g->error);
    st_b_text_opt(&b, g->query);
    st_b_text(&b, g->space);
    st_b_text(&b, g->source);
    st_b_text(&b, now);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "generation");
    return st_exec_stmt(db, st, err, "store a generation");
}

static void st_read_generation(sqlite3_stmt *st, void *out)
{
    kevo_generation_row *g = out;
    kevo_generation_row_init(g);
    int i = 0;
    g->candidate_id = sqlite3_column_int64(st, i++);
    g->run_id = sqlite3_column_int64(st, i++);
    g->parent_id = sqlite3_column_int64(st, i++);
    st_col_text(st, i++, g->generator, sizeof g->generator);
    st_col_text(st, i++, g->model, sizeof g->model);
    st_col_strdup(st, i++, &g->system_prompt);
    st_col_strdup(st, i++, &g->prompt);
    st_col_strdup(st, i++, &g->reply);
    g->tokens_in = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
    i++;
    g->tokens_out = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
    i++;
    g->latency_s = st_col_double(st, i++);
    g->seed = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
    i++;
    g->temperature = st_col_double(st, i++);
    st_col_text(st, i++, g->finish_reason, sizeof g->finish_reason);
    g->http_status = st_col_int_opt(st, i++, 0);
    g->attempts = sqlite3_column_int(st, i++);
    st_col_strdup(st, i++, &g->error);
    st_col_text(st, i++, g->query, sizeof g->query);
    st_col_strdup(st, i++, &g->space);
    st_col_strdup(st, i++, &g->source);
    st_col_text(st, i++, g->created_at, sizeof g->created_at);
}

#define ST_GEN_COLS                                                                                          \
    "candidate_id, run_id, parent_id, generator, model, system_prompt, prompt, reply, tokens_in, tokens_out," \
    " latency_s, seed, temperature, finish_reason, http_status, attempts, error, query, space, source, created_at"

kevo_status kevo_db_generation_list(kevo_db *db, int64_t run_id, kevo_generation_row **out, int *n, kevo_err *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "SELECT " ST_GEN_COLS " FROM generations WHERE run_id=? ORDER BY candidate_id",
                                  run_id, &st, err, "generations read");
    if (s)
        return s;
    return st_collect(db, st, sizeof **out, st_read_generation, (void **)out, n, err, "generations");
}

kevo_status kevo_db_generation_get(kevo_db *db, int64_t candidate_id, kevo_generation_row *g, kevo_err *err)
{
    kevo_generation_row_init(g);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, "SELECT " ST_GEN_COLS " FROM generations WHERE candidate_id=?", &st, err,
                               "generation read");
    if (s)
        return s;
    int rc = sqlite3_bind_int64(st, 1, candidate_id);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, "candidate id");
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        st_read_generation(st, g);
        s = KEVO_OK;
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld has no generation in '%s'", (long long)candidate_id,
                         db->path);
    } else {
        s = st_fail(db, err, rc, "read the generation of candidate %lld", (long long)candidate_id);
    }
    sqlite3_finalize(st);
    return s;
}

kevo_status kevo_db_run_llm_put(kevo_db *db, int64_t run_id, const kevo_run_llm *r, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR REPLACE INTO run_llm(run_id, generators, llm_budget, url, model, "
                               "temperature, seed, max_tokens) VALUES(?,?,?,?,?,?,?,?)",
                               &st, err, "run LLM settings insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, run_id);
    st_b_text(&b, r->generators);
    st_b_i64(&b, r->llm_budget);
    st_b_text_opt(&b, r->url);
    st_b_text_opt(&b, r->model);
    st_b_double(&b, r->temperature);
    st_b_i64_opt(&b, r->seed, -1);
    st_b_i64(&b, r->max_tokens);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "run LLM settings");
    return st_exec_stmt(db, st, err, "store run LLM settings");
}

kevo_status kevo_db_run_llm_get(kevo_db *db, int64_t run_id, kevo_run_llm *r, kevo_err *err)
{
    memset(r, 0, sizeof *r);
    r->seed = -1;
    r->temperature = NAN;
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db,
                                  "SELECT generators, llm_budget, url, model, temperature, seed, max_tokens "
                                  "FROM run_llm WHERE run_id=?",
                                  run_id, &st, err, "run LLM settings read");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        st_col_text(st, 0, r->generators, sizeof r->generators);
        r->llm_budget = sqlite3_column_int64(st, 1);
        st_col_text(st, 2, r->url, sizeof r->url);
        st_col_text(st, 3, r->model, sizeof r->model);
        r->temperature = st_col_double(st, 4);
        r->seed = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
        r->max_tokens = sqlite3_column_int(st, 6);
        s = KEVO_OK;
    } else if (rc == SQLITE_DONE) {
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no LLM settings in '%s'", (long long)run_id,
                         db->path);
    } else {
        s = st_fail(db, err, rc, "read the LLM settings of run %lld", (long long)run_id);
    }
    sqlite3_finalize(st);
    return s;
}
