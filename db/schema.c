/* schema.c — kevo's SQLite schema (store_int.h): the tables a new file
 * gets, and the upgrades from every earlier version, each in one
 * transaction.  The text is constant SQL; the 9 -> 10 upgrade copies rows
 * with bound parameters. */
#define _POSIX_C_SOURCE 200809L
#include "db/store.h"
#include "db/store_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/try.h"
#include "util/util.h"

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

/* Tables schema 5 added: generations (one per generator call, the
 * candidate it became) and, until schema 10, run_llm: a run's generator
 * list and the options of its one generator with options, under the name
 * of that generator (never the API key).  A new file gets generations
 * alone; only the 4 -> 5 upgrade creates run_llm, which 9 -> 10 moves into
 * run_generators and drops. */
#define ST_SCHEMA_V5_TABLES ST_SCHEMA_V5_GENERATIONS ST_SCHEMA_V5_RUN_LLM
#define ST_SCHEMA_V5_GENERATIONS                                                                             \
    "CREATE TABLE generations("                                                                              \
    " candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id), run_id INTEGER NOT NULL REFERENCES runs(id)," \
    " parent_id INTEGER REFERENCES candidates(id), generator TEXT NOT NULL, model TEXT, system_prompt TEXT,"  \
    " prompt TEXT, reply TEXT, tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, seed INTEGER,"         \
    " temperature REAL, finish_reason TEXT, http_status INTEGER, attempts INTEGER, error TEXT, query TEXT,"   \
    " space TEXT, source TEXT, created_at TEXT);"                                                           \
    "CREATE INDEX generations_run ON generations(run_id);"
#define ST_SCHEMA_V5_RUN_LLM                                                                                 \
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

/* Schema 10: the generators a run used, one row each (search/gen.h's
 * table: template, llm, mutate, ...): options, the generator's options as a
 * JSON object ("{}" for one without options); calls, the calls it made
 * that left a candidate (LLM requests answered or failed, mutations; 0 for
 * template, the round generator, whose proposals are the rounds'
 * candidates), as of the run's last write of its generators (its start and
 * its end).  The 9 -> 10 upgrade (st_migrate_v10) fills it from run_llm and
 * renames the failure kind of a generator call that failed, llm_error, to
 * gen_error. */
#define ST_SCHEMA_V10_TABLES                                                                                 \
    "CREATE TABLE run_generators("                                                                           \
    " run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, options TEXT NOT NULL,"              \
    " calls INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(run_id, name));"

/* Schema 11: a run's best paired with its fastest same-run peer, timed in
 * the same rounds of the settle step's re-timing (kevo_paired_row), and
 * the peer's time in each round (little-endian doubles; NULL not kept). */
#define ST_SCHEMA_V11_TABLES                                                                                 \
    "CREATE TABLE run_paired("                                                                               \
    " run_id INTEGER PRIMARY KEY REFERENCES runs(id), candidate_id INTEGER NOT NULL REFERENCES candidates(id)," \
    " peer TEXT NOT NULL, rounds INTEGER NOT NULL, ratio REAL, ci_lo REAL, ci_hi REAL, peer_ms BLOB);"

/* Columns schema 8 added to older tables (a new file gets them the same way). */
#define ST_SCHEMA_V8_COLUMNS                                                                                 \
    "ALTER TABLE candidates ADD COLUMN round INTEGER;"                                                       \
    "ALTER TABLE run_settings ADD COLUMN ahead INTEGER;"

const char st_schema_sql[] =
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
    " PRIMARY KEY(candidate_id, name));" ST_SCHEMA_V3_OTHERS ST_SCHEMA_V4_TABLES ST_SCHEMA_V5_GENERATIONS \
        ST_SCHEMA_V8_COLUMNS ST_SCHEMA_V9_TABLES ST_SCHEMA_V10_TABLES ST_SCHEMA_V11_TABLES;

/* Upgrades, one per schema version, each in one transaction:
 *   1 -> 2: runs gained the configuration filter (--where);
 *   2 -> 3: the in-run peers (decomposed form), vs_best_peer, roofline
 *           fraction, confidence intervals, model predictions, ties, every
 *           repetition's time, shape distributions and warm starts;
 *   3 -> 4: run settings (batch, maps, reps, termination, timeouts, the
 *           space files' hashes), so that --resume applies or refuses
 *           every option;
 *   4 -> 5: generations and a run's generator settings (run_llm);
 *   5 -> 6: how a run's op peer measured after the search was made (the
 *           candidate whose configuration ran without the co-design, its
 *           kernel's time and the broadcast's);
 *   6 -> 7: the GPUs of a run (--devices: each one's peers, ceilings and
 *           throughput) and each candidate's device and evaluation time;
 *   7 -> 8: each candidate's round (the batch it was proposed in) and a
 *           run's --ahead, so that --resume finishes the rounds a killed
 *           process left in flight one by one, as it would have;
 *   8 -> 9: peers as rows by name (run_peers) instead of columns
 *           (ST_MIGRATE_V9);
 *   9 -> 10: a run's generators as rows (run_generators) instead of
 *           run_llm, and the failure kind gen_error (st_migrate_v10, in C:
 *           its options are JSON built with cJSON);
 *   10 -> 11: a run's best paired with its fastest same-run peer in the
 *           same rounds (run_paired; runs settled before have none). */
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
    NULL, /* st_migrate_v10 */
    ST_SCHEMA_V11_TABLES "PRAGMA user_version=11;",
};
_Static_assert(sizeof st_migrations / sizeof st_migrations[0] == ST_SCHEMA_VERSION - 1, "one migration a version");

/* The options run_llm held for its generator, as the JSON object that
 * generator stores (search/gen_llm.c's keys) into *out (malloc'd); the
 * statement's columns 2..7.  NULL when out of memory. */
static char *st_v10_options(sqlite3_stmt *st)
{
    cJSON *o = cJSON_CreateObject();
    const char *url = (const char *)sqlite3_column_text(st, 3), *model = (const char *)sqlite3_column_text(st, 4);
    double t = st_col_double(st, 5);
    bool ok = o && cJSON_AddNumberToObject(o, "budget", (double)sqlite3_column_int64(st, 2)) &&
              cJSON_AddStringToObject(o, "url", url ? url : "") &&
              cJSON_AddStringToObject(o, "model", model ? model : "") &&
              (isnan(t) ? cJSON_AddNullToObject(o, "temperature") != NULL
                        : cJSON_AddNumberToObject(o, "temperature", t) != NULL) &&
              cJSON_AddNumberToObject(o, "seed", sqlite3_column_type(st, 6) == SQLITE_NULL
                                                     ? -1.0 : (double)sqlite3_column_int64(st, 6)) &&
              cJSON_AddNumberToObject(o, "max_tokens", (double)sqlite3_column_int64(st, 7));
    char *out = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return out;
}

/* Row by row of run_llm (statement q), one run_generators row (statement
 * ins) per name of its comma list: the options run_llm held go to the
 * generator they were of (named "llm" there, the one generator with
 * options before schema 10), "{}" to the others; calls, its generations.
 * An old file is untrusted: empty names are skipped, a name given twice is
 * stored once, and a name no generator has is stored as it is (a resume
 * refuses it). */
static int st_v10_copy(sqlite3_stmt *q, sqlite3_stmt *ins, sqlite3_stmt *calls)
{
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *list = (const char *)sqlite3_column_text(q, 1);
        for (const char *p = list ? list : ""; *p && rc == SQLITE_ROW;) {
            size_t len = strcspn(p, ",");
            if (len > 0) {
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
                char *opts = strcmp(name, "llm") == 0 ? st_v10_options(q) : kv_strdup("{}");
                int64_t n = 0;
                rc = opts ? SQLITE_OK : SQLITE_NOMEM;
                if (rc == SQLITE_OK && (rc = sqlite3_bind_int64(calls, 1, sqlite3_column_int64(q, 0))) == SQLITE_OK &&
                    (rc = sqlite3_bind_text(calls, 2, name, -1, SQLITE_TRANSIENT)) == SQLITE_OK &&
                    (rc = sqlite3_step(calls)) == SQLITE_ROW) {
                    n = sqlite3_column_int64(calls, 0);
                    rc = SQLITE_OK;
                }
                sqlite3_reset(calls);
                if (rc == SQLITE_OK && (rc = sqlite3_bind_int64(ins, 1, sqlite3_column_int64(q, 0))) == SQLITE_OK &&
                    (rc = sqlite3_bind_text(ins, 2, name, -1, SQLITE_TRANSIENT)) == SQLITE_OK &&
                    (rc = sqlite3_bind_text(ins, 3, opts, -1, SQLITE_TRANSIENT)) == SQLITE_OK &&
                    (rc = sqlite3_bind_int64(ins, 4, n)) == SQLITE_OK && (rc = sqlite3_step(ins)) == SQLITE_DONE)
                    rc = SQLITE_OK;
                sqlite3_reset(ins);
                free(opts);
                if (rc != SQLITE_OK)
                    return rc;
            }
            rc = SQLITE_ROW;
            p += len;
            p += *p == ',';
        }
    }
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The 9 -> 10 upgrade, inside the caller's transaction: run_generators
 * from run_llm (st_v10_copy), which goes, and the failure kind of a
 * generator call that failed renamed from its old name.  Errors: the DB's. */
static kevo_status st_migrate_v10(kevo_db *db, kevo_err *err)
{
    KV_SQL_TRY(db->h, err, sqlite3_exec(db->h, ST_SCHEMA_V10_TABLES, NULL, NULL, NULL));
    sqlite3_stmt *q = NULL, *ins = NULL, *calls = NULL;
    int rc = sqlite3_prepare_v2(db->h,
                                "SELECT run_id, generators, llm_budget, url, model, temperature, seed, max_tokens "
                                "FROM run_llm ORDER BY run_id", -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->h, "INSERT OR IGNORE INTO run_generators(run_id, name, options, calls) "
                                "VALUES(?,?,?,?)", -1, &ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->h, "SELECT count(*) FROM generations WHERE run_id=? AND generator=?", -1, &calls,
                                NULL);
    if (rc == SQLITE_OK)
        rc = st_v10_copy(q, ins, calls);
    kevo_status s = rc == SQLITE_OK ? KEVO_OK : st_fail(db, err, rc, "copy run_llm into run_generators");
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    sqlite3_finalize(calls);
    if (s)
        return s;
    /* run_llm and 'llm_error' are the names schema 9 and older gave them */
    KV_SQL_TRY(db->h, err, sqlite3_exec(db->h,
                                        "DROP TABLE run_llm;"
                                        "UPDATE candidates SET fail = 'gen_error' WHERE fail = 'llm_error';"
                                        "PRAGMA user_version=10;",
                                        NULL, NULL, NULL));
    return KEVO_OK;
}

/* Bring a file of schema `ver` up to ST_SCHEMA_VERSION. */
kevo_status st_migrate(kevo_db *db, int64_t ver, kevo_err *err)
{
    for (int64_t v = ver; v < ST_SCHEMA_VERSION; v++) {
        kevo_err e2;
        kevo_status s = KEVO_OK;
        int rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK && v + 1 == 10) {
            s = st_migrate_v10(db, &e2);
            rc = s ? SQLITE_ERROR : SQLITE_OK;
        } else if (rc == SQLITE_OK) {
            rc = sqlite3_exec(db->h, st_migrations[v - 1], NULL, NULL, NULL);
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            s = s ? kevo_err_set(err, s, "cannot upgrade '%s' to schema %lld: %s", db->path, (long long)v + 1, e2.msg)
                  : kevo_err_set(err, st_open_status(rc), "cannot upgrade '%s' to schema %lld: %s", db->path,
                                 (long long)v + 1, sqlite3_errmsg(db->h));
            if (!sqlite3_get_autocommit(db->h))
                sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
            return s;
        }
    }
    return KEVO_OK;
}
