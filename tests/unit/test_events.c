/* test_events.c — the library never prints: a run reports through its event
 * callback (include/kevo.h), and without one it is silent (CPU: compile-only
 * runs of real families, NVRTC for sm_90a and sm_80).
 *
 * 1. A compile-only run hands its caller one LINE per candidate (naming it),
 *    its round's propose and registered TRACEs in loop time, PROGRESS
 *    against the budget, and writes nothing to stdout or stderr.
 * 2. Without a callback the same run stores the same candidates and writes
 *    nothing.
 * 3. A family left out for the arch is a WARNING event, text without the
 *    CLI's "kevo: " prefix.
 * 4. kv_emit hands over long lines whole and does nothing without a
 *    handler.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/tune.h"
#include "testutil.h"
#include "util/util.h"

#define EV_MAX 4096

/* What a handler saw: each event's kind, candidate, device, time and text. */
typedef struct seen {
    int n;
    kevo_event ev[EV_MAX];
    char *text[EV_MAX];
    kevo_cand_event cand[EV_MAX]; /* a CANDIDATE's data, its family and config copied, other strings "" */
    char *family[EV_MAX], *config[EV_MAX];
} seen;

static void record(void *ctx, const kevo_event *ev)
{
    seen *s = ctx;
    assert_non_null(ev->text);
    assert_true((ev->kind == KEVO_EVENT_CANDIDATE) == (ev->cand != NULL));
    if (s->n < EV_MAX) {
        int i = s->n++;
        s->ev[i] = *ev;
        s->text[i] = strdup(ev->text);
        s->ev[i].text = s->text[i];
        s->family[i] = s->config[i] = NULL;
        if (ev->cand) { /* the event lives for the call only: keep a copy */
            const kevo_cand_event *c = ev->cand;
            assert_true(c->family && c->config && c->move && c->fail && c->why && c->gpu && c->note);
            s->cand[i] = *c;
            s->family[i] = strdup(c->family);
            s->config[i] = strdup(c->config);
            s->cand[i].family = s->family[i];
            s->cand[i].config = s->config[i];
            s->cand[i].move = s->cand[i].fail = s->cand[i].why = s->cand[i].gpu = s->cand[i].note = "";
            s->ev[i].cand = &s->cand[i];
        }
    }
}

static void seen_free(seen *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->text[i]);
        free(s->family[i]);
        free(s->config[i]);
    }
    s->n = 0;
}

/* stdout and stderr into one file while a call runs. */
typedef struct capture {
    int saved[2];
    char path[64];
} capture;

static void capture_start(capture *c)
{
    snprintf(c->path, sizeof c->path, "/tmp/kevo-events-XXXXXX");
    int fd = mkstemp(c->path);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    c->saved[0] = dup(1);
    c->saved[1] = dup(2);
    assert_true(c->saved[0] >= 0 && c->saved[1] >= 0);
    assert_true(dup2(fd, 1) == 1 && dup2(fd, 2) == 2);
    close(fd);
}

/* Restore both; what the call wrote (caller frees). */
static char *capture_end(capture *c)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved[0], 1);
    dup2(c->saved[1], 2);
    close(c->saved[0]);
    close(c->saved[1]);
    char *text = tu_read_text(c->path);
    unlink(c->path);
    return text;
}

/* A compile-only run of budget candidates, all in one batch (its events:
 * tune_silently's handle). */
static void run_opts(kevo_tune_opts *o, const char *db, const char *arch, const char *families, int budget)
{
    kevo_tune_opts_init(o);
    o->def.op = "ikbo_lce";
    o->proc.data_dir = KEVO_SOURCE_DIR;
    o->proc.db_path = db;
    o->def.arch = arch;
    o->def.families = families;
    o->def.budget = budget;
    o->def.batch = budget;
    o->proc.jobs = 2;
    o->def.compile_only = true;
    o->def.warm_start = "none";
}

/* kevo_tune(o) must succeed and write nothing to stdout or stderr (its
 * compile children included): every line goes to the handle's callback
 * (recording into *s; NULL: none), if anywhere. */
static void tune_silently(const kevo_tune_opts *o, seen *s)
{
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);
    if (s)
        kevo_ctx_set_events(ctx, record, s);
    capture c;
    capture_start(&c);
    int64_t run = 0;
    kevo_status st = kevo_tune(ctx, o, &run);
    char *out = capture_end(&c);
    if (st)
        print_error("kevo_tune: %s\n", kevo_ctx_error(ctx)->msg);
    kevo_ctx_free(ctx);
    assert_int_equal(st, KEVO_OK);
    assert_string_equal(out, "");
    free(out);
}

static void tmp_db(char *out, size_t n, const char *name)
{
    snprintf(out, n, "/tmp/kevo-events-%d-%s.db", (int)getpid(), name);
    unlink(out);
}

/* A DB's candidates, "family params;" in id order (caller frees). */
static char *cands(const char *db)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT family || ' ' || params FROM candidates ORDER BY id", -1, &q, NULL),
                     SQLITE_OK);
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        len += (size_t)snprintf(out + len, cap - len, "%s;", t ? t : "");
        assert_true(len < cap);
    }
    sqlite3_finalize(q);
    sqlite3_close(h);
    return out;
}

static void test_run_reports_through_events(void **state)
{
    (void)state;
    char db[128];
    tmp_db(db, sizeof db, "a");
    static seen s;
    kevo_tune_opts o;
    run_opts(&o, db, "sm_90a", "lce_wgmma", 3);
    tune_silently(&o, &s);

    int cand_lines = 0, progress = 0, proposed = 0, rounds = 0, registered = 0;
    double last_t = -1;
    for (int i = 0; i < s.n; i++) {
        const kevo_event *e = &s.ev[i];
        assert_null(strchr(e->text, '\n'));
        switch (e->kind) {
        case KEVO_EVENT_LINE:
            break;
        case KEVO_EVENT_CANDIDATE: /* data, not prose: the caller formats it */
            assert_non_null(e->cand);
            assert_true(e->cand_id > 0);
            assert_int_equal(e->cand->id, e->cand_id);
            assert_int_equal(e->cand->outcome, KEVO_CAND_COMPILED);
            assert_string_equal(e->cand->family, "lce_wgmma");
            assert_non_null(strstr(e->cand->config, "STAGES="));
            assert_int_equal(e->cand->budget, 3);
            assert_true(e->cand->done >= 1 && e->cand->done <= 3);
            assert_true(e->cand->regs > 0 && e->cand->compile_s >= 0);
            assert_string_equal(e->text, "");
            cand_lines++;
            break;
        case KEVO_EVENT_PROGRESS:
            assert_int_equal(e->budget, 3);
            assert_true(e->done >= 0 && e->done <= 3);
            assert_true(e->elapsed_s >= 0);
            progress++;
            break;
        case KEVO_EVENT_TRACE:
            assert_true(e->t >= last_t); /* loop time never runs back */
            last_t = e->t;
            /* a compile-only round: proposed, then registered (a GPU run adds compile, submit, done, ...) */
            if (strcmp(e->text, "propose") == 0)
                proposed++;
            if (strcmp(e->text, "registered") == 0) {
                assert_true(proposed > rounds);
                rounds++;
                registered += (int)e->cand_id; /* the round's count */
            }
            break;
        case KEVO_EVENT_WARNING:
            fail_msg("unexpected warning: %s", e->text);
            break;
        case KEVO_EVENT_DEBUG:
            break;
        }
    }
    assert_int_equal(cand_lines, 3);
    assert_true(progress >= 1);
    assert_int_equal(registered, 3); /* every candidate in some round */
    /* the first line says what the run is, the last how it ended */
    assert_int_equal(s.ev[0].kind == KEVO_EVENT_LINE || s.ev[0].kind == KEVO_EVENT_TRACE, 1);
    bool head = false, tail = false;
    for (int i = 0; i < s.n; i++)
        if (s.ev[i].kind == KEVO_EVENT_LINE) {
            head = head || strncmp(s.ev[i].text, "run 1: ikbo_lce ", 16) == 0;
            tail = strncmp(s.ev[i].text, "run 1 done", 10) == 0;
        }
    assert_true(head);
    assert_true(tail);
    seen_free(&s);

    /* 2. the same run without a handler: silent, the same candidates stored */
    char db2[128];
    tmp_db(db2, sizeof db2, "b");
    run_opts(&o, db2, "sm_90a", "lce_wgmma", 3);
    tune_silently(&o, NULL);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE status = 'compiled'"), 3);
    assert_int_equal(tu_query_int(db2, "SELECT count(*) FROM candidates WHERE status = 'compiled'"), 3);
    char *a = cands(db), *b = cands(db2);
    assert_string_equal(a, b);
    free(a);
    free(b);
    unlink(db);
    unlink(db2);
}

static void test_left_out_family_is_a_warning(void **state)
{
    (void)state;
    char db[128];
    tmp_db(db, sizeof db, "c");
    static seen s;
    kevo_tune_opts o;
    run_opts(&o, db, "sm_80", NULL, 1);
    tune_silently(&o, &s);
    int warned = 0;
    for (int i = 0; i < s.n; i++)
        if (s.ev[i].kind == KEVO_EVENT_WARNING) {
            assert_true(strncmp(s.ev[i].text, "kevo: ", 6) != 0); /* the prefix is the CLI's */
            warned += strcmp(s.ev[i].text, "family 'lce_ws' does not target sm_80; left out") == 0;
        }
    assert_int_equal(warned, 1);
    seen_free(&s);
    unlink(db);
}

static void test_emit(void **state)
{
    (void)state;
    static seen s;
    char *big = malloc(3001);
    assert_non_null(big);
    memset(big, 'x', 3000);
    big[3000] = '\0';
    kv_emit(record, &s, KEVO_EVENT_LINE, 7, "<%s>", big);
    kv_emit(NULL, &s, KEVO_EVENT_LINE, 8, "nobody hears this"); /* no handler: nothing, no crash */
    kv_emit(record, &s, KEVO_EVENT_WARNING, 0, "short %d", 42);
    assert_int_equal(s.n, 2);
    assert_int_equal(strlen(s.ev[0].text), 3002);
    assert_int_equal(s.ev[0].text[0], '<');
    assert_int_equal(s.ev[0].text[3001], '>');
    assert_int_equal(s.ev[0].cand_id, 7);
    assert_int_equal(s.ev[0].device, -1);
    assert_int_equal(s.ev[1].kind, KEVO_EVENT_WARNING);
    assert_string_equal(s.ev[1].text, "short 42");
    free(big);
    seen_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_reports_through_events),
        cmocka_unit_test(test_left_out_family_is_a_warning),
        cmocka_unit_test(test_emit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
