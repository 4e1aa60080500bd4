/* store_cands.c — the store's candidates, edges, sources, measurements, binaries and
 * generations (a generator's calls). */
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
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, cand_id);
    st_b_text(&b, prefix ? prefix : "");
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "measurements read");
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


/* ---- generations ---- */

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
