/* store_int.h — private to db/: the store's handle and the helpers its
 * files share (store.c defines them; store_runs.c, store_cands.c and
 * store_peers.c use them).  Nothing outside db/ includes this. */
#ifndef KEVO_STORE_INT_H
#define KEVO_STORE_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db/store.h"
#include "util/ctx.h"

struct kevo_db {
    sqlite3 *h;
    char *path;
    bool readonly; /* opened by kevo_db_open_ro: h never writes the file */
    double busy_t0; /* when the current wait for a lock began */
    bool busy_said; /* the wait was announced (through ctx) */
    kevo_ctx *ctx;     /* the caller's handle (kevo_db_open_ctx): where a lock wait is said; NULL: nowhere */
    kv_cancel *cancel; /* ctx's flag: a lock wait stops once it is raised; NULL: never */
};

/* ---- the file's identity and schema (schema.c) ---- */

#define ST_APP_ID 0x4B45564F /* 'KEVO': PRAGMA application_id */
#define ST_SCHEMA_VERSION 11 /* PRAGMA user_version of the schema this kevo writes */

/* The whole schema of a new file, ST_SCHEMA_VERSION's tables and indexes
 * (SQL statements run in one transaction by store.c's st_create_schema). */
extern const char st_schema_sql[];

/* Bring a file of schema `ver` (1 <= ver <= ST_SCHEMA_VERSION) up to
 * ST_SCHEMA_VERSION, one transaction per version.  Errors: what SQLite
 * said (st_open_status), a failed step's own status; the file keeps the
 * last version reached. */
kevo_status st_migrate(kevo_db *db, int64_t ver, kevo_err *err);

/* ---- errors ---- */

/* Status for a SQLite result code met while opening, identifying or
 * upgrading the file: KEVO_ERR_IO, KEVO_ERR_DB (not a database, corrupt),
 * else as any other call's. */
kevo_status st_open_status(int rc);

/* Record "WHAT in 'PATH': sqlite message" for a failed call with result rc.
 * Must run before any other call on the connection replaces the message. */
kevo_status st_fail(kevo_db *db, kevo_err *err, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

kevo_status st_prepare(kevo_db *db, const char *sql, sqlite3_stmt **st, kevo_err *err, const char *what);

/* ---- binding: a cursor over a statement's parameters that keeps the first
 * failure, so a row's fields bind in a flat list and are checked once ---- */

typedef struct st_binder {
    sqlite3_stmt *st;
    int i;
    int rc;
} st_binder;

void st_bind_init(st_binder *b, sqlite3_stmt *st);
/* Text as given ("" stays ""; NULL binds NULL). */
void st_b_text(st_binder *b, const char *s);
/* Text where "" means none: stored as NULL. */
void st_b_text_opt(st_binder *b, const char *s);
void st_b_i64(st_binder *b, int64_t v);
/* An int whose value `none` means unknown: stored as NULL. */
void st_b_int_opt(st_binder *b, int v, int none);
/* An int64 whose value `none` means none: stored as NULL. */
void st_b_i64_opt(st_binder *b, int64_t v, int64_t none);
/* A double; NaN (not measured) is stored as NULL. */
void st_b_double(st_binder *b, double v);
void st_b_blob(st_binder *b, const void *p, size_t n);

/* ---- reading columns ---- */

/* Copy a text column into a fixed array, truncated and always terminated;
 * NULL reads as "". */
void st_col_text(sqlite3_stmt *st, int i, char *dst, size_t n);
/* Duplicate a text column into *dst (NULL stays NULL); false when out of
 * memory. */
bool st_col_strdup(sqlite3_stmt *st, int i, char **dst);
double st_col_double(sqlite3_stmt *st, int i);
/* An int column where NULL reads back as `none`. */
int st_col_int_opt(sqlite3_stmt *st, int i, int none);

/* ---- statements ---- */

/* Step a write statement once, expecting no rows; on failure records the
 * error (before finalizing); finalizes in every case. */
kevo_status st_exec_stmt(kevo_db *db, sqlite3_stmt *st, kevo_err *err, const char *what);

/* Report a binding failure for a statement and finalize it. */
kevo_status st_bind_fail(kevo_db *db, sqlite3_stmt *st, int rc, kevo_err *err, const char *what);

/* Prepare sql and bind its one integer parameter (a run's or a candidate's
 * id); *st NULL on error. */
kevo_status st_prepare_id(kevo_db *db, const char *sql, int64_t id, sqlite3_stmt **st, kevo_err *err,
                          const char *what);

/* Step a prepared and bound SELECT to its end, appending one element of
 * `size` bytes per row, which read() fills from the row; finalizes st.
 * *v is malloc'd (the caller frees it), NULL with *n 0 on error.  `what`
 * names the rows in messages. */
kevo_status st_collect(kevo_db *db, sqlite3_stmt *st, size_t size, void (*read)(sqlite3_stmt *, void *), void **v,
                       int *n, kevo_err *err, const char *what);

/* Insert n rows of one run, each by sql: run_id first, then what
 * bind(b, row, i) binds of row i (rows of `size` bytes).  `what` names a row
 * in messages.  Errors: the DB's. */
kevo_status st_insert_rows(kevo_db *db, const char *sql, int64_t run_id, const void *rows, size_t size, int n,
                           void (*bind)(st_binder *, const void *, int), const char *what, kevo_err *err);

/* The rows of one run: prepare sql (one parameter, the run id), bind
 * run_id and st_collect.  Errors: as st_prepare and st_collect. */
kevo_status st_collect_run(kevo_db *db, const char *sql, int64_t run_id, size_t size,
                           void (*read)(sqlite3_stmt *, void *), void **v, int *n, kevo_err *err, const char *what);

#endif
