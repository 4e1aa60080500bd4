/* store_runs.c — the store's runs: a run's row, its shapes, devices and results per
 * shape, warm-start seeds, counts and settings. */
#define _POSIX_C_SOURCE 200809L
#include "db/store.h"
#include "db/store_int.h"

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
    int rc = sqlite3_bind_int64(st, 1, run_id);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, "run shapes delete");
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
    int rc = sqlite3_bind_int64(st, 1, cand_id);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, "shape results read");
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
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, cand_id);
    st_b_i64(&b, shape_idx);
    st_b_text(&b, label ? label : "");
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "timings read");
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
