/* store_peers.c — the store's peer results (run_peers): a run's peer timings per shape
 * and device; and the run's best paired with its fastest peer in the same
 * rounds (run_paired). */
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

/* ---- the paired figure ---- */

/* Why p breaks kevo_paired_row's ranges ("" when it does not) into why[n]. */
static bool st_paired_valid(const kevo_paired_row *p, char *why, size_t n)
{
    size_t len = strnlen(p->peer, sizeof p->peer);
    bool name_ok = len > 0 && len < sizeof p->peer;
    for (size_t i = 0; name_ok && i < len; i++)
        name_ok = (p->peer[i] >= 'a' && p->peer[i] <= 'z') || (p->peer[i] >= '0' && p->peer[i] <= '9') ||
                  p->peer[i] == '_';
    const double v[3] = {p->ratio, p->ci_lo, p->ci_hi};
    bool figs_ok = p->ci_lo <= p->ratio && p->ratio <= p->ci_hi;
    for (int i = 0; i < 3; i++)
        figs_ok = figs_ok && isfinite(v[i]) && v[i] > 0;
    if (!name_ok)
        snprintf(why, n, "the peer's name is not an op's peer name ([a-z0-9_], 1..%d characters)",
                 KEVO_PEER_NAME_MAX - 1);
    else if (p->rounds < 2 || p->rounds > KEVO_PAIRED_ROUNDS_MAX)
        snprintf(why, n, "%d rounds (2..%d)", p->rounds, KEVO_PAIRED_ROUNDS_MAX);
    else if (!figs_ok)
        snprintf(why, n, "a ratio or interval that is not finite and positive with lo <= ratio <= hi");
    else if (p->cand_id <= 0)
        snprintf(why, n, "candidate %lld", (long long)p->cand_id);
    else
        why[0] = '\0';
    return why[0] == '\0';
}

kevo_status kevo_db_paired_put(kevo_db *db, int64_t run_id, const kevo_paired_row *p, const double *peer_ms,
                               kevo_err *err)
{
    char why[160];
    if (!st_paired_valid(p, why, sizeof why))
        return kevo_err_set(err, KEVO_ERR_ARG, "run %lld's paired figure: %s", (long long)run_id, why);
    sqlite3_stmt *st;
    kevo_status s = st_prepare(db,
                               "INSERT OR REPLACE INTO run_paired(run_id, candidate_id, peer, rounds, ratio, ci_lo, "
                               "ci_hi, peer_ms) VALUES(?,?,?,?,?,?,?,?)",
                               &st, err, "paired figure insert");
    if (s)
        return s;
    st_binder b;
    st_bind_init(&b, st);
    st_b_i64(&b, run_id);
    st_b_i64(&b, p->cand_id);
    st_b_text(&b, p->peer);
    st_b_i64(&b, p->rounds);
    st_b_double(&b, p->ratio);
    st_b_double(&b, p->ci_lo);
    st_b_double(&b, p->ci_hi);
    if (peer_ms)
        st_b_blob(&b, peer_ms, (size_t)p->rounds * sizeof *peer_ms);
    else
        st_b_blob(&b, NULL, 0);
    if (b.rc != SQLITE_OK)
        return st_bind_fail(db, st, b.rc, err, "paired figure");
    char what[96];
    snprintf(what, sizeof what, "put the paired figure of run %lld", (long long)run_id);
    return st_exec_stmt(db, st, err, what);
}

kevo_status kevo_db_paired_clear(kevo_db *db, int64_t run_id, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db, "DELETE FROM run_paired WHERE run_id=?", run_id, &st, err,
                                  "paired figure delete");
    return s ? s : st_exec_stmt(db, st, err, "remove a run's paired figure");
}

kevo_status kevo_db_paired_get(kevo_db *db, int64_t run_id, kevo_paired_row *out, kevo_err *err)
{
    sqlite3_stmt *st;
    kevo_status s = st_prepare_id(db,
                                  "SELECT candidate_id, peer, length(CAST(peer AS BLOB)), rounds, ratio, ci_lo, ci_hi "
                                  "FROM run_paired WHERE run_id=?",
                                  run_id, &st, err, "paired figure");
    if (s)
        return s;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        s = rc == SQLITE_DONE ? kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no paired figure",
                                             (long long)run_id)
                              : st_fail(db, err, rc, "read the paired figure of run %lld", (long long)run_id);
        sqlite3_finalize(st);
        return s;
    }
    kevo_paired_row p;
    memset(&p, 0, sizeof p);
    p.cand_id = sqlite3_column_int64(st, 0);
    st_col_text(st, 1, p.peer, sizeof p.peer);
    int64_t len = sqlite3_column_int64(st, 2), rounds = sqlite3_column_int64(st, 3);
    p.rounds = rounds < 0 || rounds > INT_MAX ? -1 : (int)rounds;
    p.ratio = st_col_double(st, 4);
    p.ci_lo = st_col_double(st, 5);
    p.ci_hi = st_col_double(st, 6);
    sqlite3_finalize(st);
    char why[160];
    if (len <= 0 || len >= (int64_t)sizeof p.peer || strlen(p.peer) != (size_t)len) /* cut, or a NUL inside */
        snprintf(why, sizeof why, "the peer's name is not an op's peer name ([a-z0-9_], 1..%d characters)",
                 KEVO_PEER_NAME_MAX - 1);
    else
        st_paired_valid(&p, why, sizeof why);
    if (why[0])
        return kevo_err_set(err, KEVO_ERR_DB, "run %lld's paired figure in '%s' is not valid: %s", (long long)run_id,
                            db->path, why);
    *out = p;
    return KEVO_OK;
}
