/* test_paired.c — the run's best against its fastest same-run peer timed in
 * the same rounds, on a simulated GPU (KEVO_SIM_GPUS=1, evaluator/gpu_sim.c:
 * a candidate's time is a function of its machine code; a peer's, its
 * start-up time with a small fixed wobble from round to round):
 *
 *   retime   kevo_gpu_retime_peer answers the peer's time in every round
 *            beside the candidates, refuses a peer index out of range with
 *            a message before anything is sent, and says why a peer that
 *            fails its check was not timed
 *   settle   `kevo tune` re-times its lone leader with the peer, prints the
 *            paired ratio with its interval, stores it (run_paired) and
 *            `kevo report` shows it, as a line and in the JSON
 *   failed   a peer that fails its check in the re-timing
 *            (KEVO_FAULT_INJECT=retime_peer) leaves no figure, and the run
 *            says why */
#define _POSIX_C_SOURCE 200809L
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

#include "evaluator/gpu.h"
#include "testutil.h"
#include "util/util.h"

/* A worker on simulated GPU 0 for ikbo_lce at its default shape. */
static kevo_gpu *sim_worker(void)
{
    const kevo_op *op = tu_op("ikbo_lce");
    kevo_gpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.op = op;
    tu_parse_ok(op, op->default_shape, &cfg.shape);
    cfg.dtype = KEVO_DTYPE_F16;
    cfg.warmup = 2;
    cfg.reps = 30;
    cfg.timeout_s = 60;
    cfg.seed = 7;
    cfg.baseline = true;
    static const char ref[] = "not a cubin: the simulated GPU loads nothing";
    cfg.ref_cubin = ref;
    cfg.ref_cubin_size = sizeof ref;
    kevo_gpu *g = NULL;
    kevo_gpu_info info;
    kevo_err err;
    assert_int_equal(setenv("KEVO_SIM_GPUS", "1", 1), 0);
    kevo_status st = kevo_gpu_start(&cfg, &g, &info, &err);
    if (st)
        fail_msg("simulated worker: %s", err.msg);
    assert_int_equal(info.peers.p[kevo_op_peer_index(op, "beta1")].state, KEVO_PEER_OK);
    return g;
}

static void test_retime(void **state)
{
    (void)state;
    const kevo_op *op = tu_op("ikbo_lce");
    const int beta1 = kevo_op_peer_index(op, "beta1"), rounds = 40;
    kevo_gpu *g = sim_worker();
    static const char cubin_a[] = "candidate a", cubin_b[] = "candidate b";
    kevo_gpu_request reqs[2];
    memset(reqs, 0, sizeof reqs);
    reqs[0].candidate_id = 1;
    reqs[0].cubin = cubin_a;
    reqs[0].cubin_size = sizeof cubin_a;
    reqs[1] = reqs[0];
    reqs[1].candidate_id = 2;
    reqs[1].cubin = cubin_b;
    reqs[1].cubin_size = sizeof cubin_b;
    static kevo_gpu_retime_result out[2], peer;
    kevo_err err;
    /* one candidate beside the peer */
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 1, beta1, 2, rounds, out, &peer, &err), KEVO_OK);
    assert_int_equal(out[0].fail, KEVO_FAIL_NONE);
    assert_int_equal(peer.fail, KEVO_FAIL_NONE);
    assert_int_equal(out[0].rounds, rounds);
    assert_int_equal(peer.rounds, rounds);
    for (int r = 0; r < rounds; r++) /* beta1's simulated 1.5 ms, within its +-0.4% wobble */
        assert_true(fabs(peer.ms[r] / 1.5 - 1) <= 0.0041 && out[0].ms[r] > 0);
    assert_true(peer.ms[0] != peer.ms[1]);
    /* two beside it, the same times for the same code */
    double a = out[0].ms[0];
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 2, beta1, 2, rounds, out, &peer, &err), KEVO_OK);
    assert_true(out[0].ms[5] == a && out[1].ms[5] > 0 && peer.rounds == rounds);

    /* refused before anything is sent, each named */
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 1, op->npeers, 2, rounds, out, &peer, &err), KEVO_ERR_ARG);
    assert_string_equal(err.msg, "peer index 4 is out of range: ikbo_lce has 4 peers");
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 1, beta1, 2, rounds, out, NULL, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 2, beta1, 2, 400, out, &peer, &err), KEVO_ERR_ARG);
    assert_string_equal(err.msg, "a re-timing of 3 kernels over 400 rounds is more than 1000 runs");
    assert_int_equal(kevo_gpu_retime(g, reqs, 1, 2, rounds, out, &err), KEVO_ERR_ARG);

    /* a peer that fails its check is not timed; the candidates are */
    assert_int_equal(setenv("KEVO_FAULT_INJECT", "retime_peer", 1), 0);
    kevo_gpu_stop(g);
    g = sim_worker();
    assert_int_equal(kevo_gpu_retime_peer(g, reqs, 2, beta1, 2, rounds, out, &peer, &err), KEVO_OK);
    unsetenv("KEVO_FAULT_INJECT");
    assert_int_equal(peer.fail, KEVO_FAIL_WRONG_RESULT);
    assert_non_null(strstr(peer.msg, "peer 'beta1' disagrees with the reference"));
    assert_int_equal(out[1].fail, KEVO_FAIL_NONE);
    assert_int_equal(out[1].rounds, rounds);
    kevo_gpu_stop(g);
    unsetenv("KEVO_SIM_GPUS");
}

/* `kevo tune` on one simulated GPU in a fresh folder; its result. */
static tu_result sim_tune(char *dir, char *db, size_t n)
{
    char tmpl[] = "/tmp/kevo_paired_XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    snprintf(dir, 64, "%s", tmpl);
    snprintf(db, n, "%s/t.db", tmpl);
    assert_int_equal(setenv("KEVO_SIM_GPUS", "1", 1), 0);
    const char *args[] = {"tune", "--op", "ikbo_lce", "--budget", "4", "--batch", "4", "--seed", "7", "--jobs", "2",
                          "--db", db, "--no-bar", NULL};
    tu_result r = tu_run_in(dir, NULL, args);
    unsetenv("KEVO_SIM_GPUS");
    if (r.status != 0)
        fail_msg("kevo tune: exit %d\n%s\n%s", r.status, r.out, r.err);
    return r;
}

static tu_result report(const char *dir, const char *db, const char *format)
{
    const char *args[] = {"report", "--db", db, "--format", format, NULL};
    tu_result r = tu_run_in(dir, NULL, args);
    if (r.status != 0)
        fail_msg("kevo report: exit %d\n%s", r.status, r.err);
    return r;
}

static void test_settle(void **state)
{
    (void)state;
    char dir[64], db[128];
    tu_result r = sim_tune(dir, db, sizeof db);
    long long best = tu_query_int(db, "SELECT best_id FROM runs WHERE id = 1");
    assert_true(best > 0);
    /* the fastest OK same-run peer: the simulated 1.5 ms of stage 0 with its broadcast (first of the 1.5 ms ones) */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM run_paired WHERE run_id = 1 AND peer = 'stage0_bcast' "
                                      "AND rounds = 60 AND length(peer_ms) = 480"),
                     1);
    assert_int_equal(tu_query_int(db, "SELECT candidate_id FROM run_paired WHERE run_id = 1"), best);
    double ratio = tu_query_double(db, "SELECT ratio FROM run_paired"), lo = tu_query_double(db, "SELECT ci_lo FROM run_paired"),
           hi = tu_query_double(db, "SELECT ci_hi FROM run_paired");
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT median_ms FROM candidates WHERE id = %lld", best);
    double best_ms = tu_query_double(db, sql);
    /* the peer's wobble is symmetric about 1.5 ms: the median per-round ratio is 1.5 over the best's time */
    assert_true(fabs(ratio - 1.5 / best_ms) < 1e-9);
    assert_true(lo < ratio && ratio < hi && hi / lo < 1.01);
    /* the lone leader's own rounds are kept beside the peer's */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM timings WHERE candidate_id = %lld AND label = 'retime'", best);
    assert_int_equal(tu_query_int(db, sql), 1);
    char want[160];
    snprintf(want, sizeof want, "#%lld against stage0_bcast in the same rounds: %.2fx [%.2fx, %.2fx] (60 rounds)", best,
             ratio, lo, hi);
    assert_non_null(strstr(r.out, want));
    tu_result_release(&r);

    r = report(dir, db, "table");
    snprintf(want, sizeof want, "#%lld against stage0_bcast in the same rounds: %.2fx [%.2fx, %.2fx] (60 rounds, paired)\n",
             best, ratio, lo, hi);
    assert_non_null(strstr(r.out, want));
    tu_result_release(&r);
    r = report(dir, db, "json");
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    const cJSON *p = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "paired_peer");
    assert_non_null(p);
    assert_string_equal(cJSON_GetObjectItem(p, "peer")->valuestring, "stage0_bcast");
    assert_true(cJSON_GetObjectItem(p, "candidate_id")->valuedouble == (double)best);
    assert_true(fabs(cJSON_GetObjectItem(p, "ratio")->valuedouble - ratio) < 1e-12);
    assert_int_equal(cJSON_GetObjectItem(p, "rounds")->valueint, 60);
    cJSON_Delete(j);
    tu_result_release(&r);

    /* a hand-edited figure is not shown (nor its text), and the report goes on */
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE run_paired SET peer = 'x' || char(27) || '[2J'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    r = report(dir, db, "table");
    assert_non_null(strstr(r.out, "the paired figure against a peer is not shown: run 1's paired figure in"));
    assert_null(strstr(r.out, "\x1b[2J"));
    assert_non_null(strstr(r.out, "beats the best in-run peer"));
    tu_result_release(&r);
    r = report(dir, db, "json");
    j = cJSON_Parse(r.out);
    assert_non_null(j);
    p = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "paired_peer");
    assert_non_null(strstr(cJSON_GetObjectItem(p, "error")->valuestring, "the peer's name is not"));
    cJSON_Delete(j);
    tu_result_release(&r);
    tu_rm_tree(dir);
}

static void test_failed(void **state)
{
    (void)state;
    char dir[64], db[128];
    assert_int_equal(setenv("KEVO_FAULT_INJECT", "retime_peer", 1), 0);
    tu_result r = sim_tune(dir, db, sizeof db);
    unsetenv("KEVO_FAULT_INJECT");
    long long best = tu_query_int(db, "SELECT best_id FROM runs WHERE id = 1");
    assert_true(best > 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM run_paired"), 0);
    char want[200];
    snprintf(want, sizeof want, "#%lld against stage0_bcast in the same rounds: not measured: peer 'stage0_bcast' "
             "disagrees with the reference", best);
    assert_non_null(strstr(r.out, want));
    tu_result_release(&r);
    r = report(dir, db, "table");
    assert_null(strstr(r.out, "in the same rounds"));
    assert_non_null(strstr(r.out, "beats the best in-run peer")); /* the rest as it was */
    tu_result_release(&r);
    r = report(dir, db, "json");
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "paired_peer"));
    cJSON_Delete(j);
    tu_result_release(&r);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retime),
        cmocka_unit_test(test_settle),
        cmocka_unit_test(test_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
