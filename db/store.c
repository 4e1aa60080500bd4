/* store.c — kevo's SQLite store: open and identify the file, create its
 * schema, transactions and the helpers every row kind uses (store_int.h);
 * the schema's text and its migrations are in schema.c, the row kinds in
 * store_runs.c, store_cands.c, store_peers.c and store_gens.c.  Every statement is prepared with bound parameters and
 * finalized before the function returns. */
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

/* ---- errors ---- */

/* Status for an SQLite result code met outside of open (util/try.h). */
static kevo_status st_status(int rc)
{
    return KV_SQL_STATUS_(rc);
}

/* Record "WHAT in 'PATH': sqlite message" for a failed call with result rc.
 * Must run before any other call on the connection replaces the message. */
kevo_status st_fail(kevo_db *db, kevo_err *err, int rc, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kv_try_failf(err, st_status(rc), sqlite3_errmsg(db->h), "%s in '%s'", what, db->path);
}

kevo_status st_prepare(kevo_db *db, const char *sql, sqlite3_stmt **st, kevo_err *err, const char *what)
{
    *st = NULL; /* sqlite3_prepare_v2 leaves it NULL on error too */
    KV_SQL_TRY_AS(db->h, err, sqlite3_prepare_v2(db->h, sql, -1, st, NULL), "prepare %s in '%s'", what, db->path);
    return KEVO_OK;
}

/* ---- binding: a cursor over a statement's parameters that keeps the first
 * failure, so a row's fields bind in a flat list and are checked once ---- */

void st_bind_init(st_binder *b, sqlite3_stmt *st)
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
void st_b_text(st_binder *b, const char *s)
{
    b->i++;
    st_keep(b, s ? sqlite3_bind_text(b->st, b->i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(b->st, b->i));
}

/* Text where "" means none: stored as NULL. */
void st_b_text_opt(st_binder *b, const char *s)
{
    st_b_text(b, (s && *s) ? s : NULL);
}

void st_b_i64(st_binder *b, int64_t v)
{
    b->i++;
    st_keep(b, sqlite3_bind_int64(b->st, b->i, v));
}

/* An int whose value `none` means unknown: stored as NULL. */
void st_b_int_opt(st_binder *b, int v, int none)
{
    b->i++;
    st_keep(b, v == none ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_int64(b->st, b->i, v));
}

/* A double; NaN (not measured) is stored as NULL. */
/* An int64 whose value `none` means none: stored as NULL. */
void st_b_i64_opt(st_binder *b, int64_t v, int64_t none)
{
    b->i++;
    st_keep(b, v == none ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_int64(b->st, b->i, v));
}

void st_b_double(st_binder *b, double v)
{
    b->i++;
    st_keep(b, isnan(v) ? sqlite3_bind_null(b->st, b->i) : sqlite3_bind_double(b->st, b->i, v));
}

void st_b_blob(st_binder *b, const void *p, size_t n)
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
void st_col_text(sqlite3_stmt *st, int i, char *dst, size_t n)
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
bool st_col_strdup(sqlite3_stmt *st, int i, char **dst)
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

double st_col_double(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* An int column where NULL reads back as `none`. */
int st_col_int_opt(sqlite3_stmt *st, int i, int none)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? none : sqlite3_column_int(st, i);
}

/* ---- open ---- */

kevo_status st_open_status(int rc)
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
        rc = sqlite3_exec(db->h, "PRAGMA user_version=11", NULL, NULL, NULL);
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
_Static_assert(ST_SCHEMA_VERSION == 11, "user_version literal in st_create_schema");

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

/* The busy handler: SQLite's busy timeout, then a wait for as long as the
 * other process holds the lock, announced through the handle's kevo_ctx
 * (none without one); 0 (give up: SQLITE_BUSY) only when that ctx is
 * cancelled (a signal interrupted kevo). */
#define ST_BUSY_TIMEOUT_S 5.0
static int st_busy(void *ctx, int count)
{
    kevo_db *db = ctx;
    if (kv_cancelled(db->cancel))
        return 0;
    if (count == 0) {
        db->busy_t0 = kv_now();
        db->busy_said = false;
    }
    if (!db->busy_said && kv_now() - db->busy_t0 >= ST_BUSY_TIMEOUT_S) {
        kv_ctx_emit(db->ctx, KEVO_EVENT_WARNING, 0, "'%s' is locked by another process; waiting", db->path);
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
    return kevo_db_open_ctx(path, create, NULL, out, err);
}

kevo_status kevo_db_open_ctx(const char *path, bool create, kevo_ctx *ctx, kevo_db **out, kevo_err *err)
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
    db->ctx = ctx;
    db->cancel = kv_ctx_flag(ctx);
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
kevo_status st_exec_stmt(kevo_db *db, sqlite3_stmt *st, kevo_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    kevo_status s = KEVO_OK;
    if (rc != SQLITE_DONE)
        s = st_fail(db, err, rc, "%s", what);
    sqlite3_finalize(st);
    return s;
}

/* Report a binding failure for a statement and finalize it. */
kevo_status st_bind_fail(kevo_db *db, sqlite3_stmt *st, int rc, kevo_err *err, const char *what)
{
    kevo_status s = st_fail(db, err, rc, "bind %s", what);
    sqlite3_finalize(st);
    return s;
}

/* Prepare sql and bind its one integer parameter (a run's or a candidate's
 * id); *st NULL on error. */
kevo_status st_prepare_id(kevo_db *db, const char *sql, int64_t id, sqlite3_stmt **st, kevo_err *err,
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
kevo_status st_collect(kevo_db *db, sqlite3_stmt *st, size_t size, void (*read)(sqlite3_stmt *, void *),
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
kevo_status st_insert_rows(kevo_db *db, const char *sql, int64_t run_id, const void *rows, size_t size, int n,
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
kevo_status st_collect_run(kevo_db *db, const char *sql, int64_t run_id, size_t size,
                           void (*read)(sqlite3_stmt *, void *), void **v, int *n, kevo_err *err,
                           const char *what)
{
    *v = NULL;
    *n = 0;
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db, sql, &st, err, what);
    if (s)
        return s;
    int rc = sqlite3_bind_int64(st, 1, run_id);
    if (rc != SQLITE_OK)
        return st_bind_fail(db, st, rc, err, what);
    return st_collect(db, st, size, read, v, n, err, what);
}
