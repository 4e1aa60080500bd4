/* test_space_walk.c — kevo_space_walk, the search's walk over a family's
 * configurations: its answers are kevo_space_check's, over every real
 * family and over a family whose lets and constraints fail. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"
#include "space_fixture.h"

/* ---- kevo_space_walk: kevo_space_check's answers, re-evaluating only what changed ---- */

/* How walk_matches steps through a family's configurations. */
enum walk_mode {
    WALK_ALL,  /* every configuration, in odometer order (last param fastest) */
    WALK_JUMP, /* every one, and a pseudo-random one between any two, so that many params change at once */
    WALK_SKIP, /* as the search does: past a failed constraint, on to the next value of the last param it
                  names; one configuration of each skipped run is checked to fail too */
};

/* Walk configurations of s in the given mode and require the walk's answer
 * and message to equal kevo_space_check's at every stride-th configuration
 * visited (the walk still sees all of them).  The number of valid
 * configurations. */
static int walk_matches(const kevo_space *s, const kevo_syms *shape, int stride, enum walk_mode mode)
{
    kevo_limits lim = h100();
    kevo_space_walk w;
    kevo_space_walk_init(&w, s, shape, &lim, KEVO_DTYPE_F16);
    int idx[KEVO_MAX_PARAMS] = {0};
    int valid = 0;
    uint64_t rng = 12345;
    for (long k = 0;; k++) {
        kevo_config cfg;
        memset(&cfg, 0, sizeof cfg);
        for (int i = 0; i < s->nparams; i++)
            cfg.v[i] = s->params[i].values[idx[i]];
        int d = s->nparams - 1; /* the odometer digit to step next */
        for (int pass = 0; pass < (mode == WALK_JUMP ? 2 : 1); pass++) {
            kevo_config c = cfg;
            if (pass == 1) /* elsewhere in the space, then back to the odometer next time round */
                for (int i = 0; i < s->nparams; i++)
                    c.v[i] = s->params[i].values[kv_rand_below(&rng, (uint64_t)s->params[i].nvalues)];
            char why[512] = "", why2[512] = "";
            int ok = kevo_space_walk_check(&w, &c, why, sizeof why);
            valid += pass == 0 && ok == 1;
            if (k % stride == 0 || pass == 1) {
                int ok2 = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &c, why2, sizeof why2);
                if (ok != ok2 || strcmp(why, why2) != 0)
                    print_error("%s, configuration %ld (pass %d): walk %d '%s', check %d '%s'\n", s->family, k, pass,
                                ok, why, ok2, why2);
                assert_int_equal(ok, ok2);
                assert_string_equal(why, why2);
            }
            if (mode == WALK_SKIP && ok == 0 && w.fail_level < d) {
                d = w.fail_level;
                for (int i = d + 1; i < s->nparams; i++) /* a skipped one: the same params up to d */
                    c.v[i] = s->params[i].values[kv_rand_below(&rng, (uint64_t)s->params[i].nvalues)];
                int ok2 = kevo_space_check(s, shape, &lim, KEVO_DTYPE_F16, &c, why2, sizeof why2);
                if (ok2 == 1)
                    print_error("%s, configuration %ld: the walk skips past param %d ('%s'), but one it skips is "
                                "valid\n",
                                s->family, k, d, why);
                assert_int_not_equal(ok2, 1);
            }
        }
        if (!kevo_space_step(s, idx, d))
            break;
    }
    return valid;
}

/* Every family of both ops, at their default shapes and others: the walk
 * answers as kevo_space_check does, both when it visits every configuration
 * and when it skips as the search does, and the two count the same valid
 * ones.  lce_ws (149M configurations) is walked only as the search walks it,
 * and compared with kevo_space_check at every 7th configuration visited:
 * its full walk took CI's sanitizer build past its time limit. */
static void test_walk_families(void **state)
{
    (void)state;
    static const struct {
        const char *op, *shape;
    } shapes[] = {
        {"ikbo_lce", NULL},
        {"ikbo_lce", "B=512,ratio=10"},
        {"ikbo_lce", "B=2048,M=96,N=512,Ku=200,Kc=1000,ratio=1000"},
        {"ikbo_lce", "B=4096,M=96,N=64,Ku=128,Kc=48,ratio=4096"},
        {"ikbo_lce", "B=1000,M=345,N=32,Ku=800,Kc=1100,ratio=25"},
        {"ikbo_fa", NULL},
        {"ikbo_fa", "Bc=512,H=4,Sq=32,D=64,Skv=8192,ratio=16"},
    };
    static const char *const families[] = {"lce_mem", "lce_mma", "lce_wgmma", "lce_ws", "fa_mma", "fa_ws"};
    for (size_t f = 0; f < KV_ARRAY_LEN(families); f++) {
        kevo_space *s = load_family(families[f]);
        long size = 1;
        for (int i = 0; i < s->nparams; i++)
            size *= s->params[i].nvalues;
        bool full = size <= 2000000;
        int stride = !full ? 7 : size > 100000 ? 31 : 1;
        for (size_t k = 0; k < KV_ARRAY_LEN(shapes); k++) {
            if (strcmp(shapes[k].op, s->op) != 0)
                continue;
            const kevo_op *op = kevo_op_find(s->op);
            kevo_syms shape;
            kevo_err err;
            kevo_err_clear(&err);
            assert_int_equal(op->parse_shape(shapes[k].shape, &shape, &err), KEVO_OK);
            int valid = walk_matches(s, &shape, stride, WALK_SKIP);
            if (full)
                assert_int_equal(walk_matches(s, &shape, stride, WALK_ALL), valid);
            printf("%s at %s: %d of %ld valid\n", s->family, shapes[k].shape ? shapes[k].shape : "the default shape",
                   valid, size);
        }
        kevo_space_free(s);
    }
}

/* A family whose lets and constraints fail to evaluate at some
 * configurations, in odometer order and with jumps: the walk gives
 * kevo_space_check's -1 and message there, and the right answers after. */
static void test_walk_faults(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("walk.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3, 4]},\n"
                                       "  {\"name\": \"Q\", \"values\": [0, 1, 2]},\n"
                                       "  {\"name\": \"R\", \"values\": [1, 2, 5]}],\n"
                                       "\"let\": [[\"X\", \"A / Q\"], [\"Y\", \"X + R\"], [\"Z\", \"A * 2\"]],\n"
                                       "\"constraints\": [{\"expr\": \"R != 2 || Z != 6\", \"why\": \"c\"},\n"
                                       "  {\"expr\": \"100 / (A - 2) > 0\", \"why\": \"a\"},\n"
                                       "  {\"expr\": \"Y % 2 == 0\", \"why\": \"y\"}],\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    kevo_syms shape;
    shape_of(NULL, &shape);
    int valid = walk_matches(s, &shape, 1, WALK_ALL);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_JUMP), valid);
    assert_true(valid > 0);
    kevo_space_free(s);
    /* a let that names a later let is unbound when kevo_space_bind evaluates it (an error where the
       branch is taken), but bound from the configuration before in a walk: the walk must not shortcut */
    assert_int_equal(load_text("walk2.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3]},\n"
                                       "  {\"name\": \"Q\", \"values\": [1, 2]}],\n"
                                       "\"let\": [[\"X\", \"A == 1 ? 0 : Y\"], [\"Y\", \"Q\"]],\n"
                                       "\"constraints\": [{\"expr\": \"X >= 0\", \"why\": \"x\"}],\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_ALL), 2);
    assert_int_equal(walk_matches(s, &shape, 1, WALK_JUMP), 2);
    kevo_space_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_families),
        cmocka_unit_test(test_walk_faults),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
