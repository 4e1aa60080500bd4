/* test_ctx.c — kevo_ctx, the handle a caller gives each library call:
 * 1. a signal handler cancels it (kevo_ctx_cancel is async-signal-safe),
 *    the first why is kept, and the loops' flag reads it;
 * 2. two handles are independent: cancelling one leaves the other;
 * 3. once the call stops listening (kv_ctx_ending) the loops read 0 and a
 *    further cancel says so (returns 1);
 * 4. the error buffer holds a call's failure and reset clears it;
 * 5. the events reach the callback set on the handle, with its pointer;
 * 6. what the handles a call passes its ctx to say reaches that ctx alone:
 *    a DB's lock wait (kevo_db_open_ctx), a compile pool's precompiled
 *    header given up (kevo_compile_pool_set_ctx, kevo_compile_pch_poll);
 *    another ctx of the process hears none of it, and a ctx without a
 *    callback (or none) makes them silent.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/store.h"
#include "evaluator/compile.h"
#include "evaluator/gpu.h"
#include "export/export.h"
#include "search/replay.h"
#include "testutil.h"
#include "util/ctx.h"
#include "util/util.h"

static kevo_ctx *handler_ctx;

static void on_signal(int sig)
{
    kevo_ctx_cancel(handler_ctx, sig);
}

static void test_cancel_from_handler(void **state)
{
    (void)state;
    kevo_ctx *a = kevo_ctx_new();
    assert_non_null(a);
    assert_int_equal(kevo_ctx_cancelled(a), 0);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), 0);
    struct sigaction sa, old1, old2;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    handler_ctx = a;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old1), 0);
    assert_int_equal(sigaction(SIGUSR2, &sa, &old2), 0);
    raise(SIGUSR1);
    raise(SIGUSR2); /* the first why is the one kept */
    sigaction(SIGUSR1, &old1, NULL);
    sigaction(SIGUSR2, &old2, NULL);
    handler_ctx = NULL;
    assert_int_equal(kevo_ctx_cancelled(a), SIGUSR1);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), SIGUSR1);
    assert_string_equal(kv_signal_name(kevo_ctx_cancelled(a)), "SIGUSR1");
    kevo_ctx_reset(a);
    assert_int_equal(kevo_ctx_cancelled(a), 0);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), 0);
    /* a why of 0 still cancels */
    assert_int_equal(kevo_ctx_cancel(a, 0), 0);
    assert_true(kevo_ctx_cancelled(a) != 0);
    kevo_ctx_free(a);
}

static void test_independent(void **state)
{
    (void)state;
    kevo_ctx *a = kevo_ctx_new(), *b = kevo_ctx_new();
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(kevo_ctx_cancel(a, SIGTERM), 0);
    assert_int_equal(kevo_ctx_cancelled(a), SIGTERM);
    assert_int_equal(kevo_ctx_cancelled(b), 0);
    assert_int_equal(kv_cancelled(kv_ctx_flag(b)), 0);
    assert_int_equal(kevo_ctx_cancel(b, SIGINT), 0);
    assert_int_equal(kevo_ctx_cancelled(a), SIGTERM);
    assert_int_equal(kevo_ctx_cancelled(b), SIGINT);
    /* NULL: never cancelled, and harmless */
    assert_int_equal(kv_cancelled(NULL), 0);
    assert_int_equal(kv_cancelled(kv_ctx_flag(NULL)), 0);
    assert_int_equal(kevo_ctx_cancel(NULL, SIGINT), 0);
    assert_int_equal(kevo_ctx_cancelled(NULL), 0);
    assert_null(kevo_ctx_error(NULL));
    kevo_ctx_free(a);
    kevo_ctx_free(b);
    kevo_ctx_free(NULL);
}

static void test_ending(void **state)
{
    (void)state;
    kevo_ctx *a = kevo_ctx_new();
    assert_non_null(a);
    assert_int_equal(kevo_ctx_cancel(a, SIGINT), 0);
    kv_ctx_ending(a);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), 0); /* what it still writes is not cut short */
    assert_int_equal(kevo_ctx_cancelled(a), SIGINT);    /* the message still names it */
    assert_int_equal(kevo_ctx_cancel(a, SIGTERM), 1);   /* a second signal may end the process */
    assert_int_equal(kevo_ctx_cancelled(a), SIGINT);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), 0);
    kevo_ctx_reset(a);
    assert_int_equal(kevo_ctx_cancel(a, SIGTERM), 0);
    assert_int_equal(kv_cancelled(kv_ctx_flag(a)), SIGTERM);
    kevo_ctx_free(a);
}

static void test_error_buffer(void **state)
{
    (void)state;
    kevo_ctx *a = kevo_ctx_new(), *b = kevo_ctx_new();
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(kevo_ctx_error(a)->status, KEVO_OK);
    assert_string_equal(kevo_ctx_error(a)->msg, "");
    /* a call that fails leaves its failure in its handle only */
    kevo_replay_opts o;
    kevo_replay_opts_init(&o);
    o.db_path = "/nonexistent/kevo-test-ctx.db";
    o.policy = "greedy";
    o.seeds = 0;
    kevo_replay_result r;
    assert_int_equal(kevo_replay(a, &o, &r), KEVO_ERR_ARG);
    assert_int_equal(kevo_ctx_error(a)->status, KEVO_ERR_ARG);
    assert_non_null(strstr(kevo_ctx_error(a)->msg, "seeds"));
    assert_int_equal(kevo_ctx_error(b)->status, KEVO_OK);
    /* the next call on the handle starts with a clear buffer */
    kevo_export_opts x;
    kevo_export_opts_init(&x);
    x.name = "Not A Name";
    int nk, nt;
    assert_int_equal(kevo_export(a, &x, &nk, &nt), KEVO_ERR_ARG);
    assert_int_equal(kevo_ctx_error(a)->status, KEVO_ERR_ARG);
    assert_null(strstr(kevo_ctx_error(a)->msg, "seeds"));
    kevo_ctx_reset(a);
    assert_int_equal(kevo_ctx_error(a)->status, KEVO_OK);
    assert_string_equal(kevo_ctx_error(a)->msg, "");
    kevo_ctx_free(a);
    kevo_ctx_free(b);
}

typedef struct {
    int n;
    char last[64];
} got;

static void on_event(void *user, const kevo_event *ev)
{
    got *g = user;
    g->n++;
    snprintf(g->last, sizeof g->last, "%s", ev->text);
}

static void test_events(void **state)
{
    (void)state;
    kevo_ctx *a = kevo_ctx_new();
    assert_non_null(a);
    got g = {0};
    assert_null(kv_ctx_fn(a));
    kv_emit(kv_ctx_fn(a), kv_ctx_user(a), KEVO_EVENT_LINE, 0, "nobody hears %d", 1); /* silent */
    kevo_ctx_set_events(a, on_event, &g);
    kv_emit(kv_ctx_fn(a), kv_ctx_user(a), KEVO_EVENT_LINE, 0, "line %d", 2);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.last, "line 2");
    kv_ctx_emit(a, KEVO_EVENT_WARNING, 0, "said %s", "through the ctx");
    assert_int_equal(g.n, 2);
    assert_string_equal(g.last, "said through the ctx");
    kevo_ctx_set_events(a, NULL, NULL);
    kv_emit(kv_ctx_fn(a), kv_ctx_user(a), KEVO_EVENT_LINE, 0, "line %d", 3);
    kv_ctx_emit(a, KEVO_EVENT_WARNING, 0, "line %d", 4);
    kv_ctx_emit(NULL, KEVO_EVENT_WARNING, 0, "line %d", 5); /* no ctx: silent */
    assert_int_equal(g.n, 2);
    kevo_ctx_free(a);
}

/* ---- 6. the sinks of a ctx's handles ---- */

/* What one ctx heard, from any thread: the count and the first WARNING. */
typedef struct {
    atomic_int n;
    char first[512];
} heard;

static void on_heard(void *user, const kevo_event *ev)
{
    heard *h = user;
    if (ev->kind != KEVO_EVENT_WARNING)
        return;
    if (atomic_load(&h->n) == 0)
        snprintf(h->first, sizeof h->first, "%s", ev->text);
    atomic_fetch_add(&h->n, 1);
}

static kevo_ctx *heard_ctx(heard *h)
{
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);
    if (h)
        kevo_ctx_set_events(ctx, on_heard, h);
    return ctx;
}

/* A fresh kevo DB at a unique path under /tmp. */
static void lock_db(char path[64])
{
    tu_tmp_path("kevo_ctx", path);
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    kevo_db_close(db);
}

static void lock_db_remove(const char *path)
{
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    char side[96];
    for (size_t i = 0; i < KV_ARRAY_LEN(sfx); i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        unlink(side);
    }
}

/* Another connection that holds path's write lock until it commits. */
static sqlite3 *lock_hold(const char *path)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "BEGIN IMMEDIATE; UPDATE runs SET stop_reason = stop_reason", NULL, NULL, NULL),
                     SQLITE_OK);
    return h;
}

static void lock_release(sqlite3 *h)
{
    assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

/* A write through db on a thread of its own, which waits for the lock. */
typedef struct {
    kevo_db *db;
    pthread_t t;
    kevo_status st;
    kevo_err err;
} lock_writer;

static void *lock_write(void *arg)
{
    lock_writer *w = arg;
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "lce");
    snprintf(r.status, sizeof r.status, "running");
    w->st = kevo_db_run_insert(w->db, &r, &w->err);
    return NULL;
}

static void lock_write_start(lock_writer *w, kevo_db *db)
{
    memset(w, 0, sizeof *w);
    w->db = db;
    w->st = KEVO_ERR_INTERNAL;
    assert_int_equal(pthread_create(&w->t, NULL, lock_write, w), 0);
}

/* Two DBs, each locked by another connection: the writer through A's
 * handle (ctx a) and the one through B's (ctx b) wait past the busy
 * timeout; each ctx hears one WARNING naming its own DB, and ctx e, whose
 * handle on A's DB is open but idle, hears nothing.  A third writer on A's
 * DB, its ctx without a callback, waits silently, and gives up once its
 * ctx is cancelled; the other two finish once the locks are gone. */
static void test_db_lock_sinks(void **state)
{
    (void)state;
    char pa[64], pb[64];
    lock_db(pa);
    lock_db(pb);
    heard ha = {0}, hb = {0}, he = {0};
    kevo_ctx *a = heard_ctx(&ha), *b = heard_ctx(&hb), *c = heard_ctx(NULL), *e = heard_ctx(&he);
    kevo_db *da = NULL, *db = NULL, *dc = NULL, *de = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open_ctx(pa, false, a, &da, &err), KEVO_OK);
    assert_int_equal(kevo_db_open_ctx(pb, false, b, &db, &err), KEVO_OK);
    assert_int_equal(kevo_db_open_ctx(pa, false, c, &dc, &err), KEVO_OK);
    assert_int_equal(kevo_db_open_ctx(pa, false, e, &de, &err), KEVO_OK);
    sqlite3 *la = lock_hold(pa), *lb = lock_hold(pb);
    lock_writer wa, wb, wc;
    lock_write_start(&wa, da);
    lock_write_start(&wb, db);
    lock_write_start(&wc, dc);
    double t0 = kv_now();
    while ((atomic_load(&ha.n) == 0 || atomic_load(&hb.n) == 0) && kv_now() - t0 < 30) /* the busy timeout is 5 s */
        usleep(10000);
    assert_int_equal(atomic_load(&ha.n), 1);
    assert_int_equal(atomic_load(&hb.n), 1);
    char want[128];
    snprintf(want, sizeof want, "'%s' is locked by another process; waiting", pa);
    assert_string_equal(ha.first, want);
    snprintf(want, sizeof want, "'%s' is locked by another process; waiting", pb);
    assert_string_equal(hb.first, want);
    usleep(500000); /* c's writer is past its own announcement, said nowhere */
    kevo_ctx_cancel(c, SIGTERM);
    assert_int_equal(pthread_join(wc.t, NULL), 0);
    assert_int_not_equal(wc.st, KEVO_OK);
    lock_release(la);
    lock_release(lb);
    assert_int_equal(pthread_join(wa.t, NULL), 0);
    assert_int_equal(pthread_join(wb.t, NULL), 0);
    if (wa.st || wb.st)
        print_error("a: %s\nb: %s\n", wa.err.msg, wb.err.msg);
    assert_int_equal(wa.st, KEVO_OK);
    assert_int_equal(wb.st, KEVO_OK);
    assert_int_equal(atomic_load(&ha.n), 1); /* once per wait */
    assert_int_equal(atomic_load(&hb.n), 1);
    assert_int_equal(atomic_load(&he.n), 0);
    kevo_db_close(da);
    kevo_db_close(db);
    kevo_db_close(dc);
    kevo_db_close(de);
    kevo_ctx_free(a);
    kevo_ctx_free(b);
    kevo_ctx_free(c);
    kevo_ctx_free(e);
    lock_db_remove(pa);
    lock_db_remove(pb);
}


#define PCH_GIVEN_UP "no precompiled header for a prelude; its compiles go without"

/* A prelude that does not compile: its PCH writer fails, and the pool (or
 * kevo_compile_pch_poll) that reads its end says so to its own ctx alone;
 * a pool without a callback in its ctx stays silent. */
static void test_pch_sinks(void **state)
{
    (void)state;
    heard ha = {0}, hb = {0};
    kevo_ctx *a = heard_ctx(&ha), *b = heard_ctx(&hb), *c = heard_ctx(NULL);
    kevo_err err;
    kevo_compile_pool *pa, *pb, *pc;
    assert_int_equal(kevo_compile_pool_new(1, &pa, &err), KEVO_OK);
    assert_int_equal(kevo_compile_pool_new(1, &pb, &err), KEVO_OK);
    assert_int_equal(kevo_compile_pool_new(1, &pc, &err), KEVO_OK);
    kevo_compile_pool_set_ctx(pa, a);
    kevo_compile_pool_set_ctx(pb, b);
    kevo_compile_pool_set_ctx(pc, c);
    const char *kernel = "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n";
    const char *bad[] = {"#include <kevo_no_such_header_1.h>\n", "#include <kevo_no_such_header_2.h>\n",
                         "#include <kevo_no_such_header_3.h>\n"};
    kevo_compile_job j[3];
    char src[3][256]; /* a job borrows its source */
    for (int i = 0; i < 3; i++) {
        snprintf(src[i], sizeof src[i], "%s%s", bad[i], kernel);
        assert_int_equal(kevo_compile_job_init(&j[i], "bad.cu", src[i], "sm_90a", &err), KEVO_OK);
    }
    /* read in a's pool: a hears it, b (whose pool is idle) does not */
    kevo_compile_pch_prepare(&j[0]);
    int writing = 0;
    kevo_compile_pch_ready(&writing);
    if (writing == 0) { /* KEVO_PCH=0 or a simulated compiler: no writer to hear of */
        for (int i = 0; i < 3; i++)
            kevo_compile_job_release(&j[i]);
        kevo_compile_pool_free(pa);
        kevo_compile_pool_free(pb);
        kevo_compile_pool_free(pc);
        kevo_ctx_free(a);
        kevo_ctx_free(b);
        kevo_ctx_free(c);
        skip();
    }
    tu_pch_settle(pa);
    assert_int_equal(atomic_load(&ha.n), 1);
    assert_non_null(strstr(ha.first, PCH_GIVEN_UP));
    assert_int_equal(atomic_load(&hb.n), 0);
    /* read by kevo_compile_pch_poll for b */
    kevo_compile_pch_prepare(&j[1]);
    double t0 = kv_now();
    while ((kevo_compile_pch_poll(b), kevo_compile_pch_ready(&writing), writing > 0) && kv_now() - t0 < 120)
        usleep(20000);
    assert_int_equal(writing, 0);
    assert_int_equal(atomic_load(&hb.n), 1);
    assert_non_null(strstr(hb.first, PCH_GIVEN_UP));
    assert_int_equal(atomic_load(&ha.n), 1);
    /* read in c's pool, which has no callback: nobody hears */
    kevo_compile_pch_prepare(&j[2]);
    tu_pch_settle(pc);
    assert_int_equal(atomic_load(&ha.n), 1);
    assert_int_equal(atomic_load(&hb.n), 1);
    for (int i = 0; i < 3; i++)
        kevo_compile_job_release(&j[i]);
    kevo_compile_pool_free(pa);
    kevo_compile_pool_free(pb);
    kevo_compile_pool_free(pc);
    kevo_ctx_free(a);
    kevo_ctx_free(b);
    kevo_ctx_free(c);
}

/* The GPU probe (a child that answers through a pipe) listens to its
 * caller's flag: raised, the probe is killed and the call says why; a
 * simulated machine's probe answers otherwise. */
static void test_probe_cancel(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "2", 1), 0);
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);
    kevo_gpu_device dev[KEVO_GPU_MAX_DEVICES];
    int n = -1;
    kevo_err err;
    assert_int_equal(kevo_gpu_list(dev, KEVO_GPU_MAX_DEVICES, &n, kv_ctx_flag(ctx), &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_int_equal(kevo_gpu_probe(1, kv_ctx_flag(ctx), &err), KEVO_OK);
    kevo_ctx_cancel(ctx, SIGTERM);
    assert_int_equal(kevo_gpu_list(dev, KEVO_GPU_MAX_DEVICES, &n, kv_ctx_flag(ctx), &err), KEVO_ERR_INTERRUPTED);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err.msg, "signal 15"));
    assert_int_equal(kevo_gpu_probe(0, kv_ctx_flag(ctx), &err), KEVO_ERR_INTERRUPTED);
    assert_int_equal(kevo_gpu_probe(0, NULL, &err), KEVO_OK); /* no flag: never cancelled */
    kevo_ctx_free(ctx);
    unsetenv("KEVO_SIM_GPUS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_from_handler), cmocka_unit_test(test_independent),
        cmocka_unit_test(test_ending),              cmocka_unit_test(test_error_buffer),
        cmocka_unit_test(test_events),              cmocka_unit_test(test_probe_cancel),
        cmocka_unit_test(test_db_lock_sinks),       cmocka_unit_test(test_pch_sinks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
