/* test_replay.c — policies replayed on landscapes measured on an H200
 * (the DBs in tests/fixtures/landscape/, slimmed runs of bench/device_search.sh).
 *
 * With the cost model as their prior, every policy lands at once: over 20
 * seeds on both landscapes, greedy, ucb and evolve reach a candidate within
 * 5% of the best in a median of at most 8 evaluations (a quarter of
 * random's median or less) and the best itself in under a quarter of
 * random's median.  The model ranks each
 * landscape with Spearman >= 0.7, and the exhaustive order (the model's) is
 * checked against the DB independently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/op.h"
#include "search/model.h"
#include "search/replay.h"
#include "search/search.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static void land_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/tests/fixtures/landscape/%s", tu_home(), name);
}

/* kevo_replay and kevo_replay_model on a handle of their own, the error
 * copied into *err. */
static kevo_status replay_with(const kevo_replay_opts *o, kevo_replay_result *r, kevo_err *err)
{
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);
    kevo_status st = kevo_replay(ctx, o, r);
    *err = *kevo_ctx_error(ctx);
    kevo_ctx_free(ctx);
    return st;
}

static kevo_status replay_model_with(const kevo_replay_opts *o, kevo_model_fit **f, int *n, kevo_err *err)
{
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);
    kevo_status st = kevo_replay_model(ctx, o, f, n);
    *err = *kevo_ctx_error(ctx);
    kevo_ctx_free(ctx);
    return st;
}

static kevo_replay_result replay_to(const char *land, const char *policy, double target)
{
    char path[1024];
    land_path(path, sizeof path, land);
    kevo_replay_opts o;
    kevo_replay_opts_init(&o);
    o.db_path = path;
    o.data_dir = tu_home();
    o.policy = policy;
    o.seeds = 20;
    o.target = target;
    kevo_replay_result r;
    kevo_err err;
    kevo_status st = replay_with(&o, &r, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    printf("  %-22s %-10s target %.2f  median %5.1f  exhaustive %5.1f  random %5.1f  reached %d/20  "
           "(landscape %d, best %.3fx)\n",
           land, policy, target, r.median_evals, r.exhaustive_evals, r.random_median_evals, r.reached, r.landscape,
           r.best);
    return r;
}

static kevo_replay_result replay(const char *land, const char *policy)
{
    return replay_to(land, policy, 0.95);
}

/* The model-guided policies land within 5% of the best at once, and on the
 * best itself in a quarter of random's evaluations, on both landscapes. */
static void test_guided_policies_land(void **state)
{
    (void)state;
    static const char *const pols[] = {"greedy", "ucb", "evolve"};
    static const char *const lands[] = {"lce_mma_h200.db", "lce_wgmma_h200.db"};
    for (size_t l = 0; l < KV_ARRAY_LEN(lands); l++)
        for (size_t i = 0; i < KV_ARRAY_LEN(pols); i++) {
            kevo_replay_result r = replay(lands[l], pols[i]);
            assert_int_equal(r.reached, 20);
            assert_true(r.median_evals <= 8);
            assert_true(r.median_evals < r.random_median_evals / 4);
            free(r.evals);
            r = replay_to(lands[l], pols[i], 1.0);
            assert_int_equal(r.reached, 20);
            assert_true(r.median_evals < r.random_median_evals / 4);
            free(r.evals);
        }
}

/* The cost model ranks each committed landscape: Spearman >= 0.7, and the
 * measured best among the model's first ten.  lce_mma_h200 and
 * lce_wgmma_h200 are whole (filtered) spaces at the IKBO shape; the others
 * random samples (bench/landscape.sh): lce_mem's two (H100) calibrated its
 * per-candidate cost, lce_ws's two H100 ones were measured after its model
 * was written, and its three H200 ones are of the v13 kernels, every
 * parameter free (SPLITK included at b136_split; docs/model.md v5); fa_ws's
 * two (H200) are of its v7 kernels, every parameter free (docs/model.md v6);
 * lce_ws_h200_u1_n120_clb of its v16 kernels, CLB included (docs/model.md
 * v7); lce_ws_h200_u1_kc212 and _kc476 of its v17 kernels, USPLIT included,
 * at two one-user shapes with short candidate GEMMs (#14 and #18 of
 * bench/shapes.py's seed 1; docs/model.md v8); lce_ws_h200_v23_* of its v23
 * kernels, UFOLD included, at five shapes from a 64-deep K (#11) and one
 * 48 deep (#3) to the default shape (docs/model.md v13). */
static void test_model_ranks_landscapes(void **state)
{
    (void)state;
    static const char *const lands[] = {"lce_mma_h200.db",          "lce_wgmma_h200.db",
                                        "lce_mem_h100_b4096_m96.db", "lce_mem_h100_b2048_m1024.db",
                                        "lce_ws_h100_m200_n512.db",  "lce_ws_h100_m512_n200.db",
                                        "lce_ws_h200_u1_kc3500.db",  "lce_ws_h200_default.db",
                                        "lce_ws_h200_b136_split.db", "fa_ws_h200_d64.db",
                                        "fa_ws_h200_d128.db",        "lce_ws_h200_u1_n120_clb.db",
                                        "lce_ws_h200_u1_kc212.db",   "lce_ws_h200_u1_kc476.db",
                                        "lce_ws_h200_v23_b2048_kc64.db", "lce_ws_h200_v23_b4096_kc48.db",
                                        "lce_ws_h200_v23_b272_n512.db", "lce_ws_h200_v23_u1_kc1284.db",
                                        "lce_ws_h200_v23_default.db"};
    for (size_t l = 0; l < KV_ARRAY_LEN(lands); l++) {
        char path[1024];
        land_path(path, sizeof path, lands[l]);
        kevo_replay_opts o;
        kevo_replay_opts_init(&o);
        o.db_path = path;
        o.data_dir = tu_home();
        kevo_model_fit *f = NULL;
        int n = 0;
        kevo_err err;
        assert_int_equal(replay_model_with(&o, &f, &n, &err), KEVO_OK);
        assert_int_equal(n, 1);
        printf("  %-28s model: n %d, spearman %.3f, best at rank %d, model's first %.1f%% of the best\n", lands[l],
               f[0].n, f[0].spearman, f[0].rank_of_best, 100 * f[0].top1_ratio);
        assert_true(f[0].n >= 30);
        assert_true(f[0].spearman >= 0.7);
        assert_true(f[0].rank_of_best >= 1 && f[0].rank_of_best <= 10);
        assert_true(f[0].top1_ratio > 0.5 && f[0].top1_ratio <= 1.0);
        free(f);
    }
}

/* Every policy replays and reaches the target on both landscapes; the
 * exhaustive policy's own median is its deterministic figure. */
static void test_every_policy(void **state)
{
    (void)state;
    static const char *const pols[] = {"greedy", "exhaustive", "random", "ucb", "evolve"};
    static const char *const lands[] = {"lce_mma_h200.db", "lce_wgmma_h200.db"};
    for (size_t l = 0; l < KV_ARRAY_LEN(lands); l++) {
        for (size_t i = 0; i < KV_ARRAY_LEN(pols); i++) {
            kevo_replay_result r = replay(lands[l], pols[i]);
            assert_int_equal(r.reached, 20);
            for (int k = 0; k < 20; k++)
                assert_true(r.evals[k] >= 1 && r.evals[k] <= r.landscape);
            if (strcmp(pols[i], "exhaustive") == 0)
                assert_true(r.median_evals == r.exhaustive_evals);
            if (strcmp(pols[i], "random") == 0)
                assert_true(r.median_evals == r.random_median_evals);
            free(r.evals);
        }
    }
}

/* The exhaustive order's figure, computed here from the DB and the space:
 * position (in the cost model's order of the valid set, --where applied)
 * of the first configuration within 5% of the best measured one. */
static void test_exhaustive_figure(void **state)
{
    (void)state;
    char path[1024], tpl[1024];
    land_path(path, sizeof path, "lce_mma_h200.db");
    snprintf(tpl, sizeof tpl, "%s/templates/lce_mma.json", tu_home());
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT filter, shape, peak_tflops, copy_tbps FROM runs", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char where[512], shape_txt[256];
    snprintf(where, sizeof where, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(shape_txt, sizeof shape_txt, "%s", (const char *)sqlite3_column_text(st, 1));
    double peak = sqlite3_column_double(st, 2), copy = sqlite3_column_double(st, 3);
    sqlite3_finalize(st);
    double best;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT max(speedup) FROM candidates WHERE status = 'ok'", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    best = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);

    kevo_space *sp;
    kevo_err err;
    assert_int_equal(kevo_space_load(tpl, &sp, &err), KEVO_OK);
    kevo_syms shape;
    kevo_limits lim;
    assert_int_equal(kevo_op_find("ikbo_lce")->parse_shape(shape_txt, &shape, &err), KEVO_OK);
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    kevo_search s;
    assert_int_equal(kevo_search_init(&s, &sp, 1, &shape, &lim, KEVO_DTYPE_F16, kevo_policy_find("exhaustive"), 1,
                                      &err),
                     KEVO_OK);
    assert_int_equal(kevo_search_set_filter(&s, where, &err), KEVO_OK);
    kevo_model_device dev;
    kevo_model_device_init(&dev, &lim, peak, copy);
    kevo_search_set_model(&s, &dev);
    const kevo_valid_set *vs = kevo_search_valid_set(&s, 0);
    assert_non_null(vs);
    assert_int_equal(vs->n, 672); /* the landscape is the whole filtered space */
    /* the model's order, computed here: by prediction, then enumeration */
    int order[672];
    double pred[672];
    for (int i = 0; i < vs->n; i++) {
        order[i] = i;
        assert_int_equal(kevo_model_predict(sp, &shape, &lim, KEVO_DTYPE_F16, &vs->cfgs[i], &dev, &pred[i], &err),
                         KEVO_OK);
    }
    for (int i = 1; i < vs->n; i++)
        for (int j = i; j > 0 && pred[order[j - 1]] > pred[order[j]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT speedup FROM candidates WHERE params = ?", -1, &st, NULL),
                     SQLITE_OK);
    int pos = 0;
    for (int i = 0; i < vs->n && !pos; i++) {
        kv_buf j;
        kv_buf_init(&j);
        kevo_config_json(sp, &vs->cfgs[order[i]], &j);
        sqlite3_bind_text(st, 1, j.data, -1, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        if (sqlite3_column_double(st, 0) >= 0.95 * best)
            pos = i + 1;
        sqlite3_reset(st);
        kv_buf_release(&j);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    kevo_replay_result r = replay("lce_mma_h200.db", "exhaustive");
    assert_true(pos > 0);
    assert_true(r.exhaustive_evals == pos);
    free(r.evals);
    kevo_search_release(&s);
    kevo_space_free(sp);
}

/* --noise: two replays per seed whose measurements differ only by noise.
 * Without noise worth the name their graphs never part; with 0.5% (two
 * GPUs' difference) they part on the 672-configuration landscape, where
 * greedy soon chooses between nodes closer than that.  Fixed draws: the
 * figures repeat. */
static void test_noise_parts_graphs(void **state)
{
    (void)state;
    static const struct {
        const char *land;
        double noise;
        bool parts;
    } cases[] = {{"lce_mma_h200.db", 1e-9, false},
                 {"lce_mma_h200.db", 0.005, true},
                 {"lce_ws_h100_m200_n512.db", 0.002, false}};
    for (size_t c = 0; c < KV_ARRAY_LEN(cases); c++) {
        char path[1024];
        land_path(path, sizeof path, cases[c].land);
        kevo_replay_opts o;
        kevo_replay_opts_init(&o);
        o.db_path = path;
        o.data_dir = tu_home();
        o.policy = "greedy";
        o.seeds = 8;
        o.batch = 8;
        o.noise = cases[c].noise;
        kevo_replay_result r;
        kevo_err err;
        assert_int_equal(replay_with(&o, &r, &err), KEVO_OK);
        assert_non_null(r.parted);
        printf("  %-26s noise %.3g: parted in %d of 8 seeds, median first difference %g\n", cases[c].land,
               o.noise, r.parted_runs, r.parted_median);
        if (cases[c].parts) {
            assert_int_equal(r.parted_runs, 8);
            assert_true(r.parted_median <= o.budget);
        } else {
            assert_int_equal(r.parted_runs, 0);
            assert_true(r.parted_median == o.budget + 1);
        }
        free(r.evals);
        free(r.parted);
    }
    /* out of range */
    kevo_replay_opts o;
    kevo_replay_opts_init(&o);
    o.db_path = "unused.db";
    o.noise = 2;
    kevo_replay_result r;
    kevo_err err;
    assert_int_equal(replay_with(&o, &r, &err), KEVO_ERR_ARG);
}

/* --ahead: greedy with up to D rounds of 8 proposed before the oldest
 * one's results (tune --ahead) still reaches every landscape's best in
 * every seed (test_search's test_greedy_waits: it waits for results rather
 * than restarting).  Out of range is refused. */
static void test_ahead(void **state)
{
    (void)state;
    static const char *const lands[] = {"lce_mma_h200.db", "lce_wgmma_h200.db", "lce_ws_h100_m512_n200.db",
                                        "lce_mem_h100_b4096_m96.db"};
    for (size_t l = 0; l < KV_ARRAY_LEN(lands); l++) {
        char path[1024];
        land_path(path, sizeof path, lands[l]);
        double median[4] = {0};
        for (int d = 1; d <= 3; d++) {
            kevo_replay_opts o;
            kevo_replay_opts_init(&o);
            o.db_path = path;
            o.data_dir = tu_home();
            o.policy = "greedy";
            o.seeds = 8;
            o.batch = 8;
            o.ahead = d;
            o.target = 1.0;
            kevo_replay_result r;
            kevo_err err;
            assert_int_equal(replay_with(&o, &r, &err), KEVO_OK);
            assert_int_equal(r.reached, 8);
            median[d] = r.median_evals;
            free(r.evals);
        }
        printf("  %-26s evaluations to the best, batch 8: ahead 1 %g, 2 %g, 3 %g\n", lands[l], median[1],
               median[2], median[3]);
    }
    kevo_replay_opts o;
    kevo_replay_opts_init(&o);
    o.db_path = "unused.db";
    o.ahead = 0;
    kevo_replay_result r;
    kevo_err err;
    assert_int_equal(replay_with(&o, &r, &err), KEVO_ERR_ARG);
}

/* kevo replay --format json prints the five documented keys. */
static void test_cli_json(void **state)
{
    (void)state;
    char path[1024], log[64];
    land_path(path, sizeof path, "lce_mma_h200.db");
    snprintf(log, sizeof log, "/tmp/kevo-replay-%d.json", (int)getpid());
    char *args[] = {"kevo", "replay", "--db", path, "--policy", "evolve", "--seeds", "5", "--target", "0.95",
                    "--format", "json", NULL};
    assert_int_equal(tu_wait(tu_spawn(log, args)), 0);
    char *text = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(log, &text, NULL, &err), KEVO_OK);
    remove(log);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "policy")->valuestring, "evolve");
    assert_int_equal(cJSON_GetObjectItem(j, "seeds")->valueint, 5);
    const char *nums[] = {"median_evals_to_target", "exhaustive_evals", "random_median_evals"};
    for (size_t i = 0; i < KV_ARRAY_LEN(nums); i++) {
        cJSON *v = cJSON_GetObjectItem(j, nums[i]);
        assert_true(cJSON_IsNumber(v));
        assert_true(v->valuedouble >= 1);
    }
    cJSON_Delete(j);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guided_policies_land),
        cmocka_unit_test(test_model_ranks_landscapes),
        cmocka_unit_test(test_every_policy),
        cmocka_unit_test(test_exhaustive_figure),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_noise_parts_graphs),
        cmocka_unit_test(test_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
