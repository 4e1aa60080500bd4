/* test_ctx.c — kevo_ctx, the handle a caller gives each library call:
 * 1. a signal handler cancels it (kevo_ctx_cancel is async-signal-safe),
 *    the first why is kept, and the loops' flag reads it;
 * 2. two handles are independent: cancelling one leaves the other;
 * 3. once the call stops listening (kv_ctx_ending) the loops read 0 and a
 *    further cancel says so (returns 1);
 * 4. the error buffer holds a call's failure and reset clears it;
 * 5. the events reach the callback set on the handle, with its pointer.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu.h"
#include "export/export.h"
#include "search/replay.h"
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
    kevo_ctx_set_events(a, NULL, NULL);
    kv_emit(kv_ctx_fn(a), kv_ctx_user(a), KEVO_EVENT_LINE, 0, "line %d", 3);
    assert_int_equal(g.n, 1);
    kevo_ctx_free(a);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
