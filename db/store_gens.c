/* store_gens.c — the generators a run used (table run_generators): one row
 * per generator, its options as a JSON object and the calls it made.  The
 * rows are the generator table's (search/gen.h); this file knows none of
 * them by name. */
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

void kevo_run_gen_rows_free(kevo_run_gen_row *v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i].options);
    free(v);
}

/* Whether text is a JSON object. */
static bool sg_is_object(const char *text)
{
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    bool ok = cJSON_IsObject(o);
    cJSON_Delete(o);
    return ok;
}

static void sg_bind_row(st_binder *b, const void *row, int i)
{
    const kevo_run_gen_row *g = row;
    (void)i;
    st_b_text(b, g->name);
    st_b_text(b, g->options);
    st_b_i64(b, g->calls);
}

kevo_status kevo_db_run_generators_put(kevo_db *db, int64_t run_id, const kevo_run_gen_row *v, int n,
                                       kevo_err *err)
{
    for (int i = 0; i < n; i++) {
        if (!v[i].name[0])
            return kevo_err_set(err, KEVO_ERR_ARG, "a generator of run %lld has no name", (long long)run_id);
        if (!sg_is_object(v[i].options))
            return kevo_err_set(err, KEVO_ERR_ARG, "the options of generator '%s' of run %lld are not a JSON object",
                                v[i].name, (long long)run_id);
        if (v[i].calls < 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "generator '%s' of run %lld: calls %lld below 0", v[i].name,
                                (long long)run_id, (long long)v[i].calls);
    }
    /* the old rows and the new go together, in a caller's transaction or not */
    KV_SQL_TRY_AS(db->h, err, sqlite3_exec(db->h, "SAVEPOINT run_generators", NULL, NULL, NULL),
                  "store the generators of run %lld in '%s'", (long long)run_id, db->path);
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "DELETE FROM run_generators WHERE run_id=?", run_id, &st, err,
                                  "run generators delete");
    if (!s)
        s = st_exec_stmt(db, st, err, "delete run generators");
    if (!s)
        s = st_insert_rows(db, "INSERT INTO run_generators(run_id, name, options, calls) VALUES(?,?,?,?)", run_id,
                           v, sizeof *v, n, sg_bind_row, "run generator", err);
    if (s)
        sqlite3_exec(db->h, "ROLLBACK TO run_generators", NULL, NULL, NULL);
    int rc = sqlite3_exec(db->h, "RELEASE run_generators", NULL, NULL, NULL);
    if (!s && rc != SQLITE_OK)
        s = st_fail(db, err, rc, "store the generators of run %lld", (long long)run_id);
    return s;
}

/* Row i of a run's generators as read: refused (KEVO_ERR_PARSE) when it is
 * not one kevo writes. */
static kevo_status sg_read_row(kevo_db *db, sqlite3_stmt *st, int64_t run_id, int i, kevo_run_gen_row *g,
                               kevo_err *err)
{
    const unsigned char *name = sqlite3_column_type(st, 0) == SQLITE_TEXT ? sqlite3_column_text(st, 0) : NULL;
    int len = name ? sqlite3_column_bytes(st, 0) : 0;
    if (len <= 0 || len >= (int)sizeof g->name || strlen((const char *)name) != (size_t)len)
        return kevo_err_set(err, KEVO_ERR_PARSE, "generator %d of run %lld in '%s' has no name or one longer than "
                            "%d bytes", i + 1, (long long)run_id, db->path, (int)sizeof g->name - 1);
    memcpy(g->name, name, (size_t)len + 1);
    bool text = sqlite3_column_type(st, 1) == SQLITE_TEXT; /* asked before column_text converts the value */
    const char *opts = text ? (const char *)sqlite3_column_text(st, 1) : NULL;
    if (!opts || !sg_is_object(opts))
        return kevo_err_set(err, KEVO_ERR_PARSE, "the options of generator '%s' of run %lld in '%s' are not a JSON "
                            "object", g->name, (long long)run_id, db->path);
    if (sqlite3_column_type(st, 2) != SQLITE_INTEGER || sqlite3_column_int64(st, 2) < 0)
        return kevo_err_set(err, KEVO_ERR_PARSE, "generator '%s' of run %lld in '%s' has calls that are not a whole "
                            "number >= 0", g->name, (long long)run_id, db->path);
    g->calls = sqlite3_column_int64(st, 2);
    if (!(g->options = kv_strdup(opts)))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading the generators of run %lld",
                            (long long)run_id);
    return KEVO_OK;
}

kevo_status kevo_db_run_generators_get(kevo_db *db, int64_t run_id, kevo_run_gen_row **out, int *nout,
                                       kevo_err *err)
{
    *out = NULL;
    *nout = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "SELECT name, options, calls FROM run_generators WHERE run_id=? ORDER BY rowid",
                                  run_id, &st, err, "run generators read");
    if (s)
        return s;
    kevo_run_gen_row *v = NULL;
    int n = 0, cap = 0, rc = SQLITE_DONE;
    while (!s && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            int nc = cap ? 2 * cap : 4;
            kevo_run_gen_row *p = realloc(v, (size_t)nc * sizeof *v);
            if (!p) {
                s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading the generators of run %lld",
                                 (long long)run_id);
                break;
            }
            v = p;
            cap = nc;
        }
        memset(&v[n], 0, sizeof v[n]);
        s = sg_read_row(db, st, run_id, n, &v[n], err);
        n++;
    }
    if (!s && rc != SQLITE_DONE)
        s = st_fail(db, err, rc, "read the generators of run %lld", (long long)run_id);
    sqlite3_finalize(st);
    if (!s && n == 0)
        s = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no generators in '%s'", (long long)run_id,
                         db->path);
    if (s) {
        kevo_run_gen_rows_free(v, n);
        return s;
    }
    *out = v;
    *nout = n;
    return KEVO_OK;
}
