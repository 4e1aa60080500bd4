/* test_space_fold.c — kevo_space_point_fold: a one-point space folded at its
 * params plans as the unfolded one does, at every family's configurations
 * and shapes, and keeps every let's name. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"
#include "space_fixture.h"


static kevo_space *load_inline(const char *json)
{
    kevo_space *s = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_space_load_inline(json, "", "fold", &s, &err);
    if (st)
        print_error("load: %s\n%s\n", err.msg, json);
    assert_int_equal(st, KEVO_OK);
    return s;
}

/* The plan of one-point space s at shape as JSON text, or "error" when it
 * does not plan there (its constraints, or an expression that fails). */
static char *plan_text(const kevo_space *s, const kevo_syms *shape, const kevo_limits *lim)
{
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    kevo_plan p;
    kevo_err err;
    kevo_err_clear(&err);
    if (kevo_space_plan(s, shape, lim, KEVO_DTYPE_F16, &cfg, &p, &err) != KEVO_OK)
        return kv_strdup("error");
    kv_buf b;
    kv_buf_init(&b);
    assert_int_equal(kevo_plan_json(&p, &b), KEVO_OK);
    return kv_buf_take(&b);
}

/* Each let name of a space's JSON, in order, into one text. */
static char *let_names(const char *json)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    kv_buf b;
    kv_buf_init(&b);
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(root, "let"))
    {
        const cJSON *name = cJSON_GetArrayItem(l, 0);
        assert_true(cJSON_IsString(name));
        kv_buf_printf(&b, "%s ", name->valuestring);
    }
    cJSON_Delete(root);
    return b.data ? kv_buf_take(&b) : kv_strdup("");
}

/* Every family at shapes of its op: random valid configurations' one-point
 * spaces, folded, plan alike at that shape and at the op's other shapes
 * (both fail where one does), keep their lets' names and are no longer. */
static void test_fold_plans_alike(void **state)
{
    (void)state;
    tu_rng_seed();
    static const struct {
        const char *op, *shape;
    } shapes[] = {
        {"ikbo_lce", NULL},
        {"ikbo_lce", "B=1000,M=345,N=96,Ku=800,Kc=1100,ratio=25"},
        {"ikbo_lce", "B=1024,M=433,N=200,Ku=512,Kc=3500,U=1"},
        {"ikbo_lce", "B=4096,M=96,N=64,Ku=128,Kc=48,ratio=4096"},
        {"ikbo_lce", "B=37,M=83,N=32,Ku=57,Kc=212,U=1"},
        {"ikbo_fa", NULL},
        {"ikbo_fa", "Bc=512,H=4,Sq=32,D=64,Skv=8192,ratio=16"},
        {"ikbo_fa", "Bc=1200,H=4,Sq=48,D=64,Skv=2500,ratio=30"},
    };
    static const char *const families[] = {"lce_mem", "lce_mma", "lce_wgmma", "lce_ws", "fa_mma", "fa_ws"};
    kevo_limits lim = h100();
    kevo_err err;
    kevo_err_clear(&err);
    for (size_t f = 0; f < KV_ARRAY_LEN(families); f++) {
        kevo_space *s = load_family(families[f]);
        const kevo_op *op = kevo_op_find(s->op);
        int checked = 0;
        size_t saved = 0, before = 0;
        for (size_t k = 0; k < KV_ARRAY_LEN(shapes); k++) {
            if (strcmp(shapes[k].op, s->op) != 0)
                continue;
            kevo_syms shape;
            assert_int_equal(op->parse_shape(shapes[k].shape, &shape, &err), KEVO_OK);
            for (int tries = 0, found = 0; tries < 40000 && found < 12; tries++) {
                kevo_config cfg;
                kevo_space_default(s, &cfg);
                for (int i = 0; i < s->nparams; i++)
                    cfg.v[i] = s->params[i].values[tu_rng() % (uint64_t)s->params[i].nvalues];
                char why[256];
                if (kevo_space_check(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, why, sizeof why) != 1)
                    continue;
                found++;
                kv_buf pj, fj;
                kv_buf_init(&pj);
                kv_buf_init(&fj);
                assert_int_equal(kevo_space_point_json(s, &cfg, s->family, &pj, &err), KEVO_OK);
                kevo_status st = kevo_space_point_fold(pj.data, &fj, &err);
                if (st)
                    print_error("fold %s: %s\n", s->family, err.msg);
                assert_int_equal(st, KEVO_OK);
                assert_true(fj.len <= pj.len);
                before += pj.len;
                saved += pj.len - fj.len;
                char *n0 = let_names(pj.data), *n1 = let_names(fj.data);
                assert_string_equal(n0, n1);
                free(n0);
                free(n1);
                kevo_space *a = load_inline(pj.data), *b = load_inline(fj.data);
                for (size_t o = 0; o < KV_ARRAY_LEN(shapes); o++) {
                    if (strcmp(shapes[o].op, s->op) != 0)
                        continue;
                    kevo_syms at;
                    assert_int_equal(op->parse_shape(shapes[o].shape, &at, &err), KEVO_OK);
                    char *pa = plan_text(a, &at, &lim), *pb = plan_text(b, &at, &lim);
                    if (strcmp(pa, pb) != 0)
                        print_error("%s at %s:\n%s\nplans %s\nfolded:\n%s\nplans %s\n", s->family,
                                    shapes[o].shape ? shapes[o].shape : "the default shape", pj.data, pa, fj.data,
                                    pb);
                    assert_string_equal(pa, pb);
                    free(pa);
                    free(pb);
                }
                kevo_space_free(a);
                kevo_space_free(b);
                kv_buf_release(&pj);
                kv_buf_release(&fj);
                checked++;
            }
        }
        printf("%s: %d configurations, folded %zu of %zu bytes away\n", s->family, checked, saved, before);
        assert_true(checked > 0);
        kevo_space_free(s);
    }
}

/* Bad input: not an object, a param with two values, an expression that
 * does not parse: an error, never a crash. */
static void test_fold_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[1, 2]",
        "not json",
        "{\"params\": [{\"name\": \"A\", \"values\": [1, 2]}]}",
        "{\"params\": [{\"name\": \"A\", \"values\": [1e300]}]}",
        "{\"params\": [{\"name\": \"A\", \"values\": [1.5]}]}",
        "{\"params\": [{\"name\": \"A\", \"values\": [1]}], \"let\": [[\"X\", \"A +\"]]}",
        "{\"params\": [{\"name\": \"A\", \"values\": [1]}], \"workspace\": \"cdiv(A\"}",
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        kv_buf b;
        kv_buf_init(&b);
        kevo_err err;
        kevo_err_clear(&err);
        assert_int_not_equal(kevo_space_point_fold(bad[i], &b, &err), KEVO_OK);
        assert_true(err.msg[0] != '\0');
        kv_buf_release(&b);
    }
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    assert_int_not_equal(kevo_space_point_fold(NULL, &b, &err), KEVO_OK);
    kv_buf_release(&b);
}

/* A launch that never runs at the params is left out, unless it is the
 * only one; one whose when always holds loses it; lets keep their names. */
static void test_fold_launches(void **state)
{
    (void)state;
    const char *in = "{\"params\": [{\"name\": \"F\", \"values\": [1]}, {\"name\": \"C\", \"values\": [2]}],"
                     " \"let\": [[\"BM\", \"F ? 64 : 64 * C\"], [\"T\", \"cdiv(B, BM) * C\"]],"
                     " \"launches\": [{\"entry\": \"a\", \"when\": \"F\", \"grid\": [\"T\", 1, 1],"
                     " \"block\": [\"128 * (C + 1)\", 1, 1], \"smem\": \"BM * 1024\"},"
                     " {\"entry\": \"b\", \"when\": \"!F\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]}";
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_point_fold(in, &b, &err), KEVO_OK);
    assert_string_equal(b.data, "{\"params\":[{\"name\":\"F\",\"values\":[1]},{\"name\":\"C\",\"values\":[2]}],"
                                "\"let\":[[\"BM\",64],[\"T\",\"cdiv(B, 64) * 2\"]],"
                                "\"launches\":[{\"entry\":\"a\",\"grid\":[\"T\",1,1],\"block\":[384,1,1],"
                                "\"smem\":65536}]}");
    kv_buf_release(&b);
    const char *only = "{\"params\": [{\"name\": \"F\", \"values\": [0]}], \"launches\": [{\"entry\": \"a\","
                       " \"when\": \"F\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]}";
    kv_buf_init(&b);
    assert_int_equal(kevo_space_point_fold(only, &b, &err), KEVO_OK);
    assert_non_null(strstr(b.data, "\"when\":0"));
    kv_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_plans_alike),
        cmocka_unit_test(test_fold_rejects),
        cmocka_unit_test(test_fold_launches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
