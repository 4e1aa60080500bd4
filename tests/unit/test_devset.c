/* test_devset.c — a process's GPUs under one index (evaluator/devset.h),
 * over a fake kv_dev_ops row, no GPU or MPI needed: device k reaches its
 * group's GPU k - first; a turn's wait asks each busy group in order, for
 * 0 s when only looking, its poll_s when anything else is busy, its idle_s
 * when only it is; what ends reaches the caller by the set's index; an
 * error stops the turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "evaluator/devset.h"
#include "testutil.h"

/* A fake group: what it was asked, and what its next wait gives. */
typedef struct fake {
    int submitted[8];   /* per GPU: submits taken */
    int nsubmit;
    double waited[4];   /* the wait_s of each wait, in order */
    int nwait;
    int end_which;      /* the next wait's *which (-1 none) */
    bool end_lost;
    kevo_status end_st;
    bool dead[8];
} fake;

static kevo_status f_submit(kv_dev_group *grp, int g, const kevo_gpu_request *req, bool *taken, kevo_err *err)
{
    (void)err;
    fake *f = grp->impl;
    *taken = !f->dead[g];
    if (*taken) {
        f->submitted[g]++;
        f->nsubmit++;
    }
    (void)req;
    return KEVO_OK;
}

static kevo_status f_wait(kv_dev_group *grp, double wait_s, int *which, int64_t *cand, bool *lost,
                          kevo_gpu_result *res, kevo_err *err)
{
    fake *f = grp->impl;
    f->waited[f->nwait++] = wait_s;
    *which = f->end_which;
    *cand = 100 + f->end_which;
    *lost = f->end_lost;
    res->median_ms = 1.5;
    return f->end_st ? kevo_err_set(err, f->end_st, "fake error") : KEVO_OK;
}

static bool f_alive(const kv_dev_group *grp, int g)
{
    return !((const fake *)grp->impl)->dead[g];
}

static int f_queued(const kv_dev_group *grp, int g)
{
    return ((const fake *)grp->impl)->submitted[g];
}

static void f_stats(const kv_dev_group *grp, int g, int *evaluated, double *busy_s)
{
    *evaluated = ((const fake *)grp->impl)->submitted[g] * 10;
    *busy_s = g;
}

static const kv_dev_ops fake_a = {"a", 1, 0.002, 1.0, f_submit, f_wait, f_alive, f_queued, f_stats};
static const kv_dev_ops fake_b = {"b", 2, 0.0, 0.05, f_submit, f_wait, f_alive, f_queued, f_stats};

/* A set of 2 GPUs of row a, then 3 of row b. */
static void make_set(kevo_devset *s, fake *a, fake *b)
{
    memset(a, 0, sizeof *a);
    memset(b, 0, sizeof *b);
    a->end_which = b->end_which = -1;
    kevo_devset_init(s);
    s->group[0] = (kv_dev_group){&fake_a, a, 0, 2};
    s->group[1] = (kv_dev_group){&fake_b, b, 2, 3};
    s->ngroups = 2;
    s->n = 5;
    for (int k = 0; k < 5; k++)
        s->group_of[k] = k < 2 ? 0 : 1;
}

typedef struct ends {
    int k[4];
    int64_t cand[4];
    bool lost[4];
    bool res[4];
    int n;
} ends;

static void on_end(void *ctx, int k, int64_t cand, bool lost, const kevo_gpu_result *res)
{
    ends *e = ctx;
    e->k[e->n] = k;
    e->cand[e->n] = cand;
    e->lost[e->n] = lost;
    e->res[e->n] = res != NULL;
    e->n++;
}

static void test_index(void **state)
{
    (void)state;
    kevo_devset s;
    fake a, b;
    make_set(&s, &a, &b);
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    bool taken = false;
    kevo_err err;
    assert_int_equal(kevo_devset_submit(&s, 1, &rq, &taken, &err), KEVO_OK);
    assert_true(taken);
    assert_int_equal(a.submitted[1], 1);
    assert_int_equal(kevo_devset_submit(&s, 4, &rq, &taken, &err), KEVO_OK);
    assert_int_equal(b.submitted[2], 1); /* the set's GPU 4 is b's GPU 2 */
    b.dead[0] = true;
    assert_int_equal(kevo_devset_submit(&s, 2, &rq, &taken, &err), KEVO_OK);
    assert_false(taken);
    assert_false(kevo_devset_alive(&s, 2));
    assert_true(kevo_devset_alive(&s, 3));
    assert_false(kevo_devset_alive(&s, 5));
    assert_int_equal(kevo_devset_submit(&s, 5, &rq, &taken, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_devset_depth(&s, 0), 1);
    assert_int_equal(kevo_devset_depth(&s, 3), 2);
    assert_int_equal(kevo_devset_queued(&s, 4), 1);
    int ev = 0;
    double busy = 0;
    kevo_devset_stats(&s, 4, &ev, &busy);
    assert_int_equal(ev, 10);
    assert_true(busy == 2.0);
}

static void test_wait(void **state)
{
    (void)state;
    kevo_devset s;
    fake a, b;
    kevo_gpu_result res;
    kevo_err err;
    ends e;
    /* both groups busy: each waits its poll_s; one end each, by the set's index */
    make_set(&s, &a, &b);
    bool busy[5] = {true, false, false, true, false};
    a.end_which = 0;
    b.end_which = 1;
    b.end_lost = true;
    memset(&e, 0, sizeof e);
    assert_int_equal(kevo_devset_wait(&s, busy, false, false, &res, on_end, &e, &err), KEVO_OK);
    assert_int_equal(a.nwait, 1);
    assert_int_equal(b.nwait, 1);
    assert_true(a.waited[0] == 0.002 && b.waited[0] == 0.0);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.k[0], 0);
    assert_int_equal(e.cand[0], 100);
    assert_true(e.res[0] && !e.lost[0]);
    assert_int_equal(e.k[1], 3);
    assert_true(e.lost[1] && !e.res[1]);
    /* only b busy: its idle_s; a not asked */
    make_set(&s, &a, &b);
    bool only_b[5] = {false, false, false, false, true};
    memset(&e, 0, sizeof e);
    assert_int_equal(kevo_devset_wait(&s, only_b, false, false, &res, on_end, &e, &err), KEVO_OK);
    assert_int_equal(a.nwait, 0);
    assert_true(b.nwait == 1 && b.waited[0] == 0.05);
    assert_int_equal(e.n, 0);
    /* only a busy, compiles too: its poll_s; only looking: 0 */
    make_set(&s, &a, &b);
    bool only_a[5] = {false, true, false, false, false};
    assert_int_equal(kevo_devset_wait(&s, only_a, false, true, &res, on_end, &e, &err), KEVO_OK);
    assert_int_equal(kevo_devset_wait(&s, only_a, false, false, &res, on_end, &e, &err), KEVO_OK);
    assert_int_equal(kevo_devset_wait(&s, only_a, true, false, &res, on_end, &e, &err), KEVO_OK);
    assert_true(a.nwait == 3 && a.waited[0] == 0.002 && a.waited[1] == 1.0 && a.waited[2] == 0.0);
    /* an error stops the turn: b is not asked */
    make_set(&s, &a, &b);
    a.end_st = KEVO_ERR_INTERRUPTED;
    assert_int_equal(kevo_devset_wait(&s, busy, false, false, &res, on_end, &e, &err), KEVO_ERR_INTERRUPTED);
    assert_int_equal(b.nwait, 0);
}

/* The real rows: the set built by its _add calls, a worker slot without a
 * worker not alive, no remote GPU without MPI state. */
static void test_add(void **state)
{
    (void)state;
    kevo_devset s;
    kevo_err err;
    kevo_devset_init(&s);
    kevo_gpu *g[2] = {NULL, NULL};
    assert_int_equal(kevo_devset_add_workers(&s, g, 2, &err), KEVO_OK);
    assert_int_equal(kevo_devset_add_mpi(&s, NULL, 3, &err), KEVO_OK);
    assert_int_equal(s.n, 5);
    assert_int_equal(s.ngroups, 2);
    assert_int_equal(kevo_devset_depth(&s, 1), 1);
    assert_int_equal(kevo_devset_depth(&s, 2), KEVO_MPI_GPU_QUEUE);
    assert_false(kevo_devset_alive(&s, 0));
    assert_false(kevo_devset_alive(&s, 4));
    assert_int_equal(kevo_devset_queued(&s, 0), 0);
    assert_int_equal(kevo_devset_queued(&s, 3), 0);
    kevo_gpu *many[KEVO_DEVSET_MAX] = {0};
    assert_int_equal(kevo_devset_add_workers(&s, many, KEVO_DEVSET_MAX, &err), KEVO_ERR_ARG);
    assert_int_equal(s.n, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
