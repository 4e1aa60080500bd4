/* test_report.c — the JSON and table reports of a measured run and of a
 * compile-only run, built with the store API in a temporary database. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/report.h"
#include "db/store.h"
#include "util/util.h"

#define LONG_MSG "error: identifier \"cp_async_wait\" is undefined in lce_mma.cu line 212"

typedef struct fixture {
    char path[64];
    kevo_db *db;
    int64_t measured, compile_only;
    int64_t best_id, mid_id, low_id, failed_id;
    int64_t co_first, co_second;
} fixture;

static void tmp_cleanup(const char *path)
{
    char side[96];
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < KV_ARRAY_LEN(sfx); i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        unlink(side);
    }
}

static void put_binary(kevo_db *db, const char *key, bool with_cubin)
{
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    snprintf(b.key, sizeof b.key, "%s", key);
    static const char bytes[] = "\x7f" "ELF";
    if (with_cubin) {
        b.cubin = (void *)bytes;
        b.cubin_size = 4;
    } else {
        snprintf(b.fail, sizeof b.fail, "compile_error");
    }
    kevo_err err;
    assert_int_equal(kevo_db_binary_put(db, &b, &err), KEVO_OK);
}

typedef struct cand_spec {
    int64_t seq;
    const char *params;
    const char *status;
    const char *fail;
    const char *fail_msg;
    const char *bin;
    double median, speedup, tflops, rel_err;
    int regs, spill, smem_static, smem_dynamic;
} cand_spec;

static int64_t put_cand(kevo_db *db, int64_t run, const cand_spec *s)
{
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = s->seq;
    snprintf(c.family, sizeof c.family, "lce_mma");
    c.params = (char *)s->params;
    snprintf(c.status, sizeof c.status, "%s", s->status);
    snprintf(c.fail, sizeof c.fail, "%s", s->fail ? s->fail : "");
    c.fail_msg = (char *)s->fail_msg;
    snprintf(c.binary_key, sizeof c.binary_key, "%s", s->bin ? s->bin : "");
    c.median_ms = s->median;
    c.speedup = s->speedup;
    c.tflops = s->tflops;
    c.rel_err = s->rel_err;
    c.regs = s->regs;
    c.spill_bytes = s->spill;
    c.smem_static = s->smem_static;
    c.smem_dynamic = s->smem_dynamic;
    kevo_err err;
    kevo_status st = kevo_db_cand_insert(db, &c, &err);
    if (st)
        fail_msg("insert: %s", err.msg);
    return c.id;
}

/* ikbo_lce's peers of a run at (shape, device): stage 0 with and without
 * its broadcast and the decomposed form OK at the given times (NaN: not
 * measured), their intervals 1% either side, and beta1 FAILED (its check
 * off by 0.5, a fast time it never gets). */
static void put_peers(kevo_db *db, int64_t run, int shape_idx, int device, double stage0, double bcast, double dec)
{
    const kevo_op *op = kevo_op_find("ikbo_lce");
    const char *names[] = {"stage0", "stage0_bcast", "decomposed"};
    const double ms[] = {stage0, bcast, dec};
    kevo_peer_set ps;
    kevo_peer_set_init(&ps);
    for (int i = 0; i < 3; i++) {
        if (isnan(ms[i]))
            continue;
        kevo_peer_fig *p = &ps.p[kevo_op_peer_index(op, names[i])];
        p->state = KEVO_PEER_OK;
        p->median_ms = ms[i];
        p->ci_lo_ms = ms[i] * 0.99;
        p->ci_hi_ms = ms[i] * 1.01;
        p->rel_err = 1e-4;
    }
    kevo_peer_fig *b = &ps.p[kevo_op_peer_index(op, "beta1")];
    b->state = KEVO_PEER_FAILED;
    b->rel_err = 0.5;
    snprintf(b->detail, sizeof b->detail, "disagrees with the reference: rel_err 5.000e-01");
    kevo_err err;
    assert_int_equal(kevo_db_peers_put(db, run, shape_idx, device, op, &ps, &err), KEVO_OK);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->path, sizeof f->path, "/tmp/kevo_report_XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    close(fd);
    unlink(f->path);
    kevo_err err;
    assert_int_equal(kevo_db_open(f->path, true, &f->db, &err), KEVO_OK);

    /* run 1: measured on a device */
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "B=1024,M=433,N=128");
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.arch, sizeof r.arch, "sm_90a");
    snprintf(r.policy, sizeof r.policy, "greedy");
    r.seed = 1;
    r.budget = 60;
    snprintf(r.status, sizeof r.status, "done");
    snprintf(r.stop_reason, sizeof r.stop_reason, "budget");
    snprintf(r.device, sizeof r.device, "NVIDIA H200");
    r.driver_version = 13000;
    r.sm_count = 132;
    r.peak_tflops = 761.0;
    r.copy_tbps = 4.25;
    assert_int_equal(kevo_db_run_insert(f->db, &r, &err), KEVO_OK);
    f->measured = r.id;
    /* its peers on each of its GPUs; beta1 failed its check on GPU 0 */
    put_peers(f->db, f->measured, 0, 0, 1.985, 2.679, 0.9);
    put_peers(f->db, f->measured, 0, 1, 1.99, 2.68, 0.91);

    put_binary(f->db, "kA", true);
    put_binary(f->db, "kB", true);
    put_binary(f->db, "kD", true);
    put_binary(f->db, "kC", false);
    cand_spec a = {1, "{\"BM\":128,\"BN\":256,\"STAGES\":3}", "ok", NULL, NULL, "kA",
                   0.582, 3.41, 500.3, 1.2e-3, 168, 0, 98304, 0};
    cand_spec b = {2, "{\"BM\":64,\"BN\":128,\"STAGES\":2}", "ok", NULL, NULL, "kB",
                   1.323, 1.5, 220.0, 2.5e-3, 96, -1, -1, -1};
    cand_spec c = {3, "{\"BM\":256,\"BN\":256,\"STAGES\":4}", "failed", "compile_error", LONG_MSG, "kC",
                   NAN, NAN, NAN, NAN, -1, -1, -1, -1};
    cand_spec d = {4, "{\"BM\":64,\"BN\":64,\"STAGES\":2}", "ok", NULL, NULL, "kD",
                   0.902, 2.2, 330.0, 9.5e-4, 80, 8, 4096, 45056};
    f->best_id = put_cand(f->db, f->measured, &a);
    f->low_id = put_cand(f->db, f->measured, &b);
    f->failed_id = put_cand(f->db, f->measured, &c);
    f->mid_id = put_cand(f->db, f->measured, &d);
    /* the best's interval and peers; the paired re-timing could not tell it from the mid one */
    kevo_cand_row cr;
    assert_int_equal(kevo_db_cand_get(f->db, f->best_id, &cr, &err), KEVO_OK);
    cr.ci_lo_ms = 0.5811;
    cr.ci_hi_ms = 0.5833;
    cr.vs_peer = 0.9 / 0.582;
    cr.roofline = 0.63;
    cr.tied = 1;
    assert_int_equal(kevo_db_cand_update(f->db, &cr, &err), KEVO_OK);
    kevo_cand_row_release(&cr);
    assert_int_equal(kevo_db_cand_get(f->db, f->mid_id, &cr, &err), KEVO_OK);
    cr.tied = 1;
    cr.device = 1; /* the second of the run's two GPUs timed it */
    cr.eval_s = 0.25;
    assert_int_equal(kevo_db_cand_update(f->db, &cr, &err), KEVO_OK);
    kevo_cand_row_release(&cr);
    kevo_run_device dv[2] = {
        {.idx = 0, .ordinal = 0, .host = "n1", .name = "NVIDIA H200", .pci_bus = "0000:06:00.0", .sm_count = 132,
         .peak_tflops = 761, .copy_tbps = 4.25, .evaluated = 2, .busy_s = 0.5, .loop_s = 2.0},
        {.idx = 1, .ordinal = 1, .host = "n1", .name = "NVIDIA H200", .pci_bus = "0000:07:00.0", .sm_count = 132,
         .peak_tflops = 760, .copy_tbps = 4.2, .evaluated = 1, .busy_s = 0.25, .loop_s = NAN},
    };
    assert_int_equal(kevo_db_run_devices_put(f->db, f->measured, dv, 2, &err), KEVO_OK);
    assert_int_equal(kevo_db_run_get(f->db, f->measured, &r, &err), KEVO_OK);
    r.best_id = f->best_id;
    assert_int_equal(kevo_db_run_update(f->db, &r, &err), KEVO_OK);

    /* run 2: compile only, no device */
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "B=8,M=16,N=32");
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.arch, sizeof r.arch, "sm_90a");
    snprintf(r.policy, sizeof r.policy, "exhaustive");
    r.seed = 2;
    r.compile_only = true;
    snprintf(r.status, sizeof r.status, "done");
    snprintf(r.stop_reason, sizeof r.stop_reason, "exhausted");
    assert_int_equal(kevo_db_run_insert(f->db, &r, &err), KEVO_OK);
    f->compile_only = r.id;
    /* inserted out of seq order; the table lists them by seq (the failed
     * one first); a stray timing still shows as "-" in a compile-only run */
    cand_spec p = {3, "{\"BM\":32,\"BN\":32}", "compiled", NULL, NULL, "kB", 0.5, 1.1, NAN, NAN, 40, 0, 1024, -1};
    cand_spec q = {2, "{\"BM\":16,\"BN\":16}", "compiled", NULL, NULL, "kA", NAN, NAN, NAN, NAN, 32, 0, -1, -1};
    cand_spec x = {1, "{\"BM\":8,\"BN\":8}", "failed", "compile_error", "bad", "kC", NAN, NAN, NAN, NAN,
                   -1, -1, -1, -1};
    f->co_second = put_cand(f->db, f->compile_only, &p);
    f->co_first = put_cand(f->db, f->compile_only, &q);
    put_cand(f->db, f->compile_only, &x);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kevo_db_close(f->db);
    tmp_cleanup(f->path);
    free(f);
    return 0;
}

/* The run object with the given id in a parsed report. */
static const cJSON *find_run(const cJSON *root, int64_t id)
{
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    assert_true(cJSON_IsArray(runs));
    const cJSON *r;
    cJSON_ArrayForEach(r, runs)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "id");
        if (cJSON_IsNumber(v) && (int64_t)v->valuedouble == id)
            return r;
    }
    fail_msg("run %lld not in report", (long long)id);
    return NULL;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("no key '%s'", key);
    return v;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static void test_json_all_runs(void **state)
{
    fixture *f = *state;
    kv_buf out;
    kv_buf_init(&out);
    kevo_err err;
    assert_int_equal(kevo_report_json(f->db, 0, &out, &err), KEVO_OK);
    cJSON *root = cJSON_Parse(out.data);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(get(root, "runs")), 2);

    /* the measured run */
    const cJSON *m = find_run(root, f->measured);
    static const char *keys[] = {"id",         "op",          "shape",       "dtype",      "arch",
                                 "device",     "policy",      "status",      "stop_reason", "compile_only",
                                 "evaluated",  "failed",      "compiled",    "verified",   "peers",
                                 "best_peer",  "peak_tflops", "copy_tbps",   "devices",    "best",
                                 "generators", "candidates"};
    for (size_t i = 0; i < KV_ARRAY_LEN(keys); i++)
        get(m, keys[i]);
    assert_int_equal(cJSON_GetArraySize(m), KV_ARRAY_LEN(keys));
    /* the peers as rows by name, on both GPUs; the failed one is listed, never the best */
    const cJSON *peers = get(m, "peers");
    assert_int_equal(cJSON_GetArraySize(peers), 8);
    const cJSON *pj;
    int seen = 0;
    cJSON_ArrayForEach(pj, peers)
    {
        if (num(pj, "device") != 0)
            continue;
        const char *name = str(pj, "peer");
        get(pj, "label");
        if (strcmp(name, "stage0") == 0)
            seen += num(pj, "median_ms") == 1.985 && strcmp(str(pj, "status"), "ok") == 0;
        if (strcmp(name, "decomposed") == 0)
            seen += num(pj, "median_ms") == 0.9 && num(pj, "ci_lo_ms") == 0.9 * 0.99;
        if (strcmp(name, "beta1") == 0)
            seen += strcmp(str(pj, "status"), "failed") == 0 && cJSON_IsNull(get(pj, "median_ms")) &&
                    num(pj, "rel_err") == 0.5;
    }
    assert_int_equal(seen, 3);
    const cJSON *bp = get(m, "best_peer");
    assert_string_equal(str(bp, "peer"), "decomposed");
    assert_true(num(bp, "median_ms") == 0.9);
    assert_string_equal(str(m, "op"), "ikbo_lce");
    assert_string_equal(str(m, "shape"), "B=1024,M=433,N=128");
    assert_string_equal(str(m, "dtype"), "fp16");
    assert_string_equal(str(m, "arch"), "sm_90a");
    assert_string_equal(str(m, "device"), "NVIDIA H200");
    assert_string_equal(str(m, "policy"), "greedy");
    assert_string_equal(str(m, "status"), "done");
    assert_string_equal(str(m, "stop_reason"), "budget");
    assert_true(cJSON_IsFalse(get(m, "compile_only")));
    assert_true(num(m, "evaluated") == 4);
    assert_true(num(m, "failed") == 1);
    assert_true(num(m, "compiled") == 3);
    assert_true(num(m, "verified") == 3);
    assert_true(num(m, "peak_tflops") == 761.0);
    assert_true(num(m, "copy_tbps") == 4.25);
    const cJSON *best = get(m, "best");
    assert_true(cJSON_IsObject(best));
    assert_true(num(best, "candidate_id") == (double)f->best_id);
    assert_string_equal(str(best, "template"), "lce_mma");
    assert_string_equal(str(best, "generator"), "template");
    assert_true(cJSON_IsArray(get(m, "generators")));
    assert_int_equal(cJSON_GetArraySize(get(m, "generators")), 0); /* none stored */
    /* the run's GPUs, each with its peers and throughput (null while a loop never ended) */
    const cJSON *devs = get(m, "devices");
    assert_int_equal(cJSON_GetArraySize(devs), 2);
    const cJSON *d0 = cJSON_GetArrayItem(devs, 0), *d1 = cJSON_GetArrayItem(devs, 1);
    assert_string_equal(str(d0, "pci_bus"), "0000:06:00.0");
    assert_true(num(d0, "evaluated") == 2 && num(d0, "per_minute") == 60.0 && num(d0, "busy_fraction") == 0.25);
    assert_true(num(d1, "ordinal") == 1 && num(d1, "peak_tflops") == 760);
    assert_true(cJSON_IsNull(get(d1, "per_minute")) && cJSON_IsNull(get(d1, "loop_s")));
    assert_true(cJSON_IsArray(get(find_run(root, f->compile_only), "devices")));
    /* every candidate, each with its generator and the edge that made it */
    const cJSON *cands = get(m, "candidates");
    assert_int_equal(cJSON_GetArraySize(cands), 4);
    const cJSON *cj;
    cJSON_ArrayForEach(cj, cands)
    {
        assert_string_equal(str(cj, "generator"), "template");
        get(cj, "parent_id");
        get(cj, "operator");
        get(cj, "status");
        /* which GPU timed it: the mid one the second GPU, the others unknown (null) */
        if (num(cj, "id") == (double)f->mid_id)
            assert_true(num(cj, "device") == 1 && num(cj, "eval_s") == 0.25);
        else
            assert_true(cJSON_IsNull(get(cj, "device")) && cJSON_IsNull(get(cj, "eval_s")));
    }
    const cJSON *params = get(best, "params");
    assert_true(cJSON_IsObject(params));
    assert_true(num(params, "BM") == 128);
    assert_true(num(params, "BN") == 256);
    assert_true(num(params, "STAGES") == 3);
    assert_true(num(best, "median_ms") == 0.582);
    assert_true(num(best, "speedup") == 3.41);
    assert_true(num(best, "tflops") == 500.3);
    assert_true(num(best, "rel_err") == 1.2e-3);
    assert_true(num(best, "ci_lo_ms") == 0.5811 && num(best, "ci_hi_ms") == 0.5833);
    assert_true(num(best, "vs_best_peer") == 0.9 / 0.582);
    assert_true(num(best, "roofline") == 0.63);
    assert_true(cJSON_IsTrue(get(best, "tied")));

    /* the compile-only run: nothing measured */
    const cJSON *c = find_run(root, f->compile_only);
    assert_true(cJSON_IsTrue(get(c, "compile_only")));
    assert_true(cJSON_IsNull(get(c, "device")));
    assert_int_equal(cJSON_GetArraySize(get(c, "peers")), 0);
    assert_true(cJSON_IsNull(get(c, "best_peer")));
    assert_true(cJSON_IsNull(get(c, "peak_tflops")));
    assert_true(cJSON_IsNull(get(c, "copy_tbps")));
    assert_true(cJSON_IsNull(get(c, "best")));
    assert_string_equal(str(c, "stop_reason"), "exhausted");
    assert_true(num(c, "evaluated") == 3);
    assert_true(num(c, "compiled") == 2);
    assert_true(num(c, "failed") == 1);
    assert_true(num(c, "verified") == 0);
    cJSON_Delete(root);

    /* formatted (cJSON_Print) output ends in a newline */
    assert_non_null(strstr(out.data, "{\n\t\"runs\":"));
    assert_int_equal(out.data[out.len - 1], '\n');
    kv_buf_release(&out);
}

static void test_json_one_run_and_unknown(void **state)
{
    fixture *f = *state;
    kv_buf out;
    kv_buf_init(&out);
    kevo_err err;
    assert_int_equal(kevo_report_json(f->db, f->compile_only, &out, &err), KEVO_OK);
    cJSON *root = cJSON_Parse(out.data);
    assert_non_null(root);
    const cJSON *runs = get(root, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 1);
    assert_true(num(cJSON_GetArrayItem(runs, 0), "id") == (double)f->compile_only);
    cJSON_Delete(root);
    kv_buf_release(&out);

    assert_int_equal(kevo_report_json(f->db, 999, &out, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(err.status, KEVO_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "999"));
    assert_int_equal(out.len, 0);
    assert_int_equal(kevo_report_table(f->db, 999, 0, &out, &err), KEVO_ERR_NOT_FOUND);
    assert_int_equal(out.len, 0);
    kv_buf_release(&out);
}

static void test_json_params_not_json(void **state)
{
    fixture *f = *state;
    kevo_err err;
    kevo_cand_row c;
    assert_int_equal(kevo_db_cand_get(f->db, f->best_id, &c, &err), KEVO_OK);
    free(c.params);
    c.params = kv_strdup("BM=128 (not json");
    assert_int_equal(kevo_db_cand_update(f->db, &c, &err), KEVO_OK);
    kevo_cand_row_release(&c);
    kv_buf out;
    kv_buf_init(&out);
    assert_int_equal(kevo_report_json(f->db, f->measured, &out, &err), KEVO_OK);
    cJSON *root = cJSON_Parse(out.data);
    assert_non_null(root);
    const cJSON *best = get(find_run(root, f->measured), "best");
    assert_string_equal(str(best, "params"), "BM=128 (not json");
    cJSON_Delete(root);
    kv_buf_release(&out);
}

/* The line of text containing needle (copied to line[n]); its offset in
 * text, or -1. */
static long line_with(const char *text, const char *needle, char *line, size_t n)
{
    const char *p = strstr(text, needle);
    if (!p)
        return -1;
    const char *s = p;
    while (s > text && s[-1] != '\n')
        s--;
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len >= n)
        len = n - 1;
    memcpy(line, s, len);
    line[len] = '\0';
    return (long)(s - text);
}

/* Column of a whole heading word in the table heading line. */
static long col_of(const char *heading, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(heading, word); p; p = strstr(p + 1, word))
        if ((p == heading || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return (long)(p - heading);
    fail_msg("no column '%s'", word);
    return -1;
}

/* Whether the right-aligned cell under heading word of row ends with v. */
static bool cell_is(const char *heading, const char *row, const char *word, const char *v)
{
    long end = col_of(heading, word) + (long)strlen(word);
    long len = (long)strlen(v);
    return end >= len && (long)strlen(row) >= end && strncmp(row + end - len, v, (size_t)len) == 0 &&
           (end - len == 0 || row[end - len - 1] == ' ');
}

static void test_table_measured(void **state)
{
    fixture *f = *state;
    kv_buf out;
    kv_buf_init(&out);
    kevo_err err;
    assert_int_equal(kevo_report_table(f->db, f->measured, 0, &out, &err), KEVO_OK);
    const char *t = out.data;
    char l1[512], l2[512], l3[512];
    assert_int_equal(sscanf(t, "%511[^\n]\n%511[^\n]\n%511[^\n]\n", l1, l2, l3), 3);
    assert_string_equal(l1, "run 1  ikbo_lce  B=1024,M=433,N=128  fp16  sm_90a  policy greedy  seed 1  "
                            "status done (budget)");
    assert_string_equal(l2, "device NVIDIA H200 (driver 13000, 132 SMs)   peak 761 TFLOP/s");
    assert_string_equal(l3, "candidates 4  compiled 3  verified 3  failed 1");
    /* the run's peers, one line each, the fastest checked one marked, a failed one said so */
    char line[512];
    assert_true(line_with(t, "  stage0 ", line, sizeof line) > 0);
    assert_non_null(strstr(line, "1.9850 ms [1.9652, 2.0049]"));
    assert_true(line_with(t, "  decomposed ", line, sizeof line) > 0);
    assert_non_null(strstr(line, "0.9000 ms"));
    assert_non_null(strstr(line, "<- best"));
    assert_true(line_with(t, "  beta1 ", line, sizeof line) > 0);
    assert_non_null(strstr(line, "FAILED its check"));
    assert_null(strstr(line, "<- best"));
    /* one line per GPU: its best peer and throughput (none while its loop never ended) */
    assert_non_null(strstr(t, "\nGPU 0 (NVIDIA H200, n1, 0000:06:00.0): best peer decomposed 0.900 ms; 2 candidates, "
                              "60.0 per minute, busy 25%\n"));
    assert_non_null(strstr(t, "\nGPU 1 (NVIDIA H200, n1, 0000:07:00.0): best peer decomposed 0.910 ms; 1 candidate\n"));
    /* the verdict against the in-run peers */
    assert_non_null(strstr(t, "\nbeats the best in-run peer, decomposed cuBLAS (K padded) (0.9000 ms), 1.55x\n"));

    /* rows best first, failed last */
    long pa = line_with(t, "BM=128 BN=256 STAGES=3", l1, sizeof l1);
    long pd = line_with(t, "BM=64 BN=64 STAGES=2", l1, sizeof l1);
    long pb = line_with(t, "BM=64 BN=128 STAGES=2", l1, sizeof l1);
    long pc = line_with(t, "BM=256 BN=256 STAGES=4", l1, sizeof l1);
    assert_true(pa > 0 && pd > pa && pb > pd && pc > pb);

    char head[512], row[512];
    assert_true(line_with(t, "rank", head, sizeof head) > 0);
    assert_true(strncmp(head, "rank  id  family", 16) == 0);
    long c_status = col_of(head, "status"), c_fail = col_of(head, "fail"), c_params = col_of(head, "params");
    long c_speed_end = col_of(head, "speedup") + 7, c_smem_end = col_of(head, "smem(KB)") + 8;

    /* the best row: every column */
    line_with(t, "BM=128 BN=256 STAGES=3", row, sizeof row);
    assert_true(strlen(row) > (size_t)c_fail);
    assert_true(strncmp(row + c_params, "BM=128 BN=256 STAGES=3", 22) == 0);
    assert_true(strncmp(row + c_status, "ok ", 3) == 0);
    assert_true(strncmp(row + c_speed_end - 5, "3.41x", 5) == 0);
    assert_true(strncmp(row + c_smem_end - 4, "96.0", 4) == 0);
    assert_string_equal(row + c_fail, "-");
    assert_int_equal(row[col_of(head, "rank") + 3], '1'); /* rank right-aligned */
    assert_true(cell_is(head, row, "ms", "0.5820"));
    assert_true(cell_is(head, row, "CI", "0.5811-0.5833"));
    assert_true(cell_is(head, row, "vs_peer", "1.55x"));
    assert_true(cell_is(head, row, "TFLOP/s", "500.3"));
    assert_true(cell_is(head, row, "roof", "63%"));
    assert_true(cell_is(head, row, "rel_err", "1.2e-03"));
    assert_true(cell_is(head, row, "regs", "168"));
    assert_true(strncmp(row + col_of(head, "winner"), "best, tied", 10) == 0);
    char idtxt[32];
    snprintf(idtxt, sizeof idtxt, "  %lld  lce_mma", (long long)f->best_id);
    assert_non_null(strstr(row, idtxt));

    /* the failed row: no rank, kind and the first 40 bytes of the message */
    line_with(t, "BM=256 BN=256 STAGES=4", row, sizeof row);
    assert_true(strncmp(row + c_status, "failed", 6) == 0);
    char want[128];
    snprintf(want, sizeof want, "compile_error: %.40s", LONG_MSG);
    assert_string_equal(row + c_fail, want);
    assert_int_equal(row[col_of(head, "rank") + 3], '-');
    assert_true(strncmp(row + c_speed_end - 1, "-", 1) == 0);

    /* the mid row: 4096 + 45056 bytes of shared memory, 8 bytes spilled */
    line_with(t, "BM=64 BN=64 STAGES=2", row, sizeof row);
    assert_true(strncmp(row + c_smem_end - 4, "48.0", 4) == 0);
    assert_true(strncmp(row + col_of(head, "winner"), "tied ", 5) == 0);
    assert_true(cell_is(head, row, "CI", "-"));
    assert_true(strncmp(row + c_speed_end - 5, "2.20x", 5) == 0);
    assert_int_equal(row[col_of(head, "rank") + 3], '2');
    /* the low row: smem and spill unknown */
    line_with(t, "BM=64 BN=128 STAGES=2", row, sizeof row);
    assert_int_equal(row[c_smem_end - 1], '-');
    assert_int_equal(row[col_of(head, "spill") + 4], '-');
    kv_buf_release(&out);

    /* top limits the rows */
    kv_buf_init(&out);
    assert_int_equal(kevo_report_table(f->db, f->measured, 2, &out, &err), KEVO_OK);
    assert_non_null(strstr(out.data, "BM=128 BN=256 STAGES=3"));
    assert_non_null(strstr(out.data, "BM=64 BN=64 STAGES=2"));
    assert_null(strstr(out.data, "BM=64 BN=128 STAGES=2"));
    assert_null(strstr(out.data, "BM=256 BN=256 STAGES=4"));
    kv_buf_release(&out);
}

static void test_table_compile_only(void **state)
{
    fixture *f = *state;
    kv_buf out;
    kv_buf_init(&out);
    kevo_err err;
    assert_int_equal(kevo_report_table(f->db, f->compile_only, 0, &out, &err), KEVO_OK);
    const char *t = out.data;
    char l1[512], l2[512], l3[512];
    assert_int_equal(sscanf(t, "%511[^\n]\n%511[^\n]\n%511[^\n]\n", l1, l2, l3), 3);
    assert_string_equal(l1, "run 2  ikbo_lce  B=8,M=16,N=32  fp16  sm_90a  policy exhaustive  seed 2  "
                            "status done (exhausted)  compile-only");
    assert_string_equal(l2, "device -"); /* a compile-only run timed nothing: no baseline, no peak */
    assert_string_equal(l3, "candidates 3  compiled 2  verified 0  failed 1");
    /* seq order, not insertion order; ms and speedup are "-" */
    long p0 = strstr(t, "BM=8 BN=8") ? (long)(strstr(t, "BM=8 BN=8") - t) : -1;
    long p1 = strstr(t, "BM=16 BN=16") ? (long)(strstr(t, "BM=16 BN=16") - t) : -1;
    long p2 = strstr(t, "BM=32 BN=32") ? (long)(strstr(t, "BM=32 BN=32") - t) : -1;
    assert_true(p0 > 0 && p1 > p0 && p2 > p1);
    char head[512], row[512];
    line_with(t, "rank", head, sizeof head);
    line_with(t, "BM=32 BN=32", row, sizeof row);
    assert_int_equal(row[col_of(head, "ms") + 1], '-');
    assert_int_equal(row[col_of(head, "speedup") + 6], '-');
    assert_true(strncmp(row + col_of(head, "status"), "compiled", 8) == 0);
    assert_int_equal(row[col_of(head, "regs") + 2], '4');
    assert_int_equal(row[col_of(head, "regs") + 3], '0');
    assert_true(strncmp(row + col_of(head, "smem(KB)") + 5, "1.0", 3) == 0);
    kv_buf_release(&out);

    /* every run: both, separated by a blank line, measured first */
    kv_buf_init(&out);
    assert_int_equal(kevo_report_table(f->db, 0, 0, &out, &err), KEVO_OK);
    const char *r1 = strstr(out.data, "run 1  ");
    const char *r2 = strstr(out.data, "\n\nrun 2  ");
    assert_true(r1 == out.data && r2 && r2 > r1);
    kv_buf_release(&out);
}

/* A distribution run: one line per shape with its weight, its peers, the
 * candidate fastest there and the verdict; a shape where nothing verified
 * says so; a shape text with a newline stays on one line. */
static void test_table_distribution(void **state)
{
    fixture *f = *state;
    kevo_err err;
    kevo_run_row r;
    assert_int_equal(kevo_db_run_get(f->db, f->measured, &r, &err), KEVO_OK);
    r.nshapes = 3;
    assert_int_equal(kevo_db_run_update(f->db, &r, &err), KEVO_OK);
    kevo_run_shape sh[3] = {
        {0, "B=1024,M=433,N=128", 1.0, 0, 0},
        {1, "B=64,M=32,N=128", 3.0, 0, 0},
        {2, "B=9,M=9,\nN=9", 0.5, 0, 0},
    };
    assert_int_equal(kevo_db_run_shapes_put(f->db, f->measured, sh, 3, &err), KEVO_OK);
    put_peers(f->db, f->measured, 1, 0, 0.05, NAN, 0.04);
    /* shape 0: best 0.582 vs mid 0.902; shape 1: mid is faster and loses to the peer */
    kevo_shape_result a0 = {0, 0.582, NAN, NAN, 3.41, 0.9 / 0.582, NAN, 1e-3};
    kevo_shape_result a1 = {1, 0.061, NAN, NAN, NAN, 0.04 / 0.061, NAN, 1e-3};
    kevo_shape_result d0 = {0, 0.902, NAN, NAN, 2.2, 0.9 / 0.902, NAN, 1e-3};
    kevo_shape_result d1 = {1, 0.050, NAN, NAN, NAN, 0.04 / 0.050, NAN, 1e-3};
    assert_int_equal(kevo_db_shape_result_put(f->db, f->best_id, &a0, &err), KEVO_OK);
    assert_int_equal(kevo_db_shape_result_put(f->db, f->best_id, &a1, &err), KEVO_OK);
    assert_int_equal(kevo_db_shape_result_put(f->db, f->mid_id, &d0, &err), KEVO_OK);
    assert_int_equal(kevo_db_shape_result_put(f->db, f->mid_id, &d1, &err), KEVO_OK);

    kv_buf out;
    kv_buf_init(&out);
    assert_int_equal(kevo_report_table(f->db, f->measured, 0, &out, &err), KEVO_OK);
    const char *t = out.data;
    assert_non_null(strstr(t, "\ndistribution of 3 shapes "));
    char line[512], want[512];
    assert_true(line_with(t, "  B=1024,M=433,N=128 weight 1:", line, sizeof line) > 0);
    snprintf(want, sizeof want,
             "  B=1024,M=433,N=128 weight 1: baseline 1.9850 ms; fastest #%lld 0.5820 ms; "
             "beats the best in-run peer, decomposed cuBLAS (K padded) (0.9000 ms), 1.55x",
             (long long)f->best_id);
    assert_string_equal(line, want);
    assert_true(line_with(t, "  B=64,M=32,N=128 weight 3:", line, sizeof line) > 0);
    snprintf(want, sizeof want, "fastest #%lld 0.0500 ms; ", (long long)f->mid_id);
    assert_non_null(strstr(line, want));
    assert_non_null(strstr(line, "0.80x"));
    assert_true(line_with(t, "  B=9,M=9, N=9 weight 0.5:", line, sizeof line) > 0);
    assert_string_equal(line, "  B=9,M=9, N=9 weight 0.5: baseline -; no kernel verified there");
    kv_buf_release(&out);
}

/* A compile-only run of another architecture: the reports group the runs
 * by arch, each with its counts and the ptxas figures of each run's best
 * or, compile-only, its first five compiled candidates in seq order. */
static void test_by_arch(void **state)
{
    fixture *f = *state;
    kevo_err err;
    kv_buf out;
    /* one architecture: no section in the table, one entry in the JSON */
    kv_buf_init(&out);
    assert_int_equal(kevo_report_table(f->db, 0, 0, &out, &err), KEVO_OK);
    assert_null(strstr(out.data, "by architecture"));
    kv_buf_release(&out);

    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "B=8,M=16,N=32");
    snprintf(r.dtype, sizeof r.dtype, "fp16");
    snprintf(r.arch, sizeof r.arch, "sm_80");
    snprintf(r.policy, sizeof r.policy, "exhaustive");
    r.seed = 2;
    r.compile_only = true;
    snprintf(r.status, sizeof r.status, "done");
    assert_int_equal(kevo_db_run_insert(f->db, &r, &err), KEVO_OK);
    int64_t sm80 = r.id;
    int64_t ids[7];
    for (int i = 0; i < 7; i++) { /* seq 8 - i: the first five in seq order are the last five inserted */
        char params[64];
        snprintf(params, sizeof params, "{\"BM\":%d}", 100 + i);
        cand_spec c = {8 - i, params, "compiled", NULL, NULL, "kA", NAN, NAN, NAN, NAN, 60 + i, i == 3 ? 16 : 0,
                       2048, 40960 + i};
        ids[i] = put_cand(f->db, sm80, &c);
    }
    cand_spec x = {1, "{\"BM\":7}", "failed", "compile_error", "bad", "kC", NAN, NAN, NAN, NAN, -1, -1, -1, -1};
    put_cand(f->db, sm80, &x);

    kv_buf_init(&out);
    assert_int_equal(kevo_report_json(f->db, 0, &out, &err), KEVO_OK);
    cJSON *root = cJSON_Parse(out.data);
    assert_non_null(root);
    kv_buf_release(&out);
    const cJSON *archs = get(root, "archs");
    assert_int_equal(cJSON_GetArraySize(archs), 2);
    const cJSON *a = cJSON_GetArrayItem(archs, 0), *b = cJSON_GetArrayItem(archs, 1);
    assert_string_equal(str(a, "arch"), "sm_90a");
    assert_int_equal(cJSON_GetArraySize(get(a, "runs")), 2);
    assert_true(cJSON_GetArrayItem(get(a, "runs"), 0)->valuedouble == (double)f->measured);
    assert_true(cJSON_GetArrayItem(get(a, "runs"), 1)->valuedouble == (double)f->compile_only);
    assert_true(num(a, "evaluated") == 7 && num(a, "compiled") == 5 && num(a, "failed") == 2 &&
                num(a, "verified") == 3);
    /* the measured run's best, then the compile-only run's compiled ones in seq order */
    const cJSON *k = get(a, "kernels");
    assert_int_equal(cJSON_GetArraySize(k), 3);
    const cJSON *k0 = cJSON_GetArrayItem(k, 0), *k1 = cJSON_GetArrayItem(k, 1), *k2 = cJSON_GetArrayItem(k, 2);
    assert_true(num(k0, "candidate_id") == (double)f->best_id && num(k0, "run") == (double)f->measured);
    assert_true(cJSON_IsTrue(get(k0, "best")));
    assert_true(num(k0, "regs") == 168 && num(k0, "spill_bytes") == 0 && num(k0, "smem_static") == 98304 &&
                num(k0, "smem_dynamic") == 0 && num(k0, "median_ms") == 0.582);
    assert_true(num(get(k0, "params"), "BM") == 128);
    assert_string_equal(str(k0, "family"), "lce_mma");
    assert_true(num(k1, "candidate_id") == (double)f->co_first && num(k2, "candidate_id") == (double)f->co_second);
    assert_true(cJSON_IsFalse(get(k1, "best")));
    assert_true(num(k2, "regs") == 40 && num(k2, "smem_static") == 1024);
    assert_true(cJSON_IsNull(get(k2, "smem_dynamic")) && cJSON_IsNull(get(k2, "median_ms")));
    assert_string_equal(str(k2, "status"), "compiled");
    assert_string_equal(str(b, "arch"), "sm_80");
    assert_int_equal(cJSON_GetArraySize(get(b, "runs")), 1);
    assert_true(num(b, "evaluated") == 8 && num(b, "compiled") == 7 && num(b, "failed") == 1);
    k = get(b, "kernels");
    assert_int_equal(cJSON_GetArraySize(k), 5);
    for (int i = 0; i < 5; i++) {
        const cJSON *ki = cJSON_GetArrayItem(k, i);
        assert_true(num(ki, "candidate_id") == (double)ids[6 - i]);
        assert_true(num(ki, "run") == (double)sm80);
        assert_true(num(ki, "regs") == 66 - i);
        assert_true(num(ki, "smem_dynamic") == 40966 - i);
    }
    assert_true(num(cJSON_GetArrayItem(k, 3), "spill_bytes") == 16);
    cJSON_Delete(root);

    /* one run: archs holds its arch alone */
    kv_buf_init(&out);
    assert_int_equal(kevo_report_json(f->db, sm80, &out, &err), KEVO_OK);
    root = cJSON_Parse(out.data);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(get(root, "archs")), 1);
    assert_int_equal(cJSON_GetArraySize(get(cJSON_GetArrayItem(get(root, "archs"), 0), "kernels")), 5);
    cJSON_Delete(root);
    kv_buf_release(&out);

    /* the table: the runs as before, then the section */
    kv_buf_init(&out);
    assert_int_equal(kevo_report_table(f->db, 0, 0, &out, &err), KEVO_OK);
    const char *t = out.data;
    const char *sec = strstr(t, "\nby architecture");
    assert_non_null(sec);
    assert_non_null(strstr(t, "\n\nrun 3  "));
    assert_true(strstr(t, "\n\nrun 3  ") < sec);
    char line[512], want[128];
    snprintf(want, sizeof want, "sm_90a: runs %lld, %lld  candidates 7  compiled 5  verified 3  failed 2",
             (long long)f->measured, (long long)f->compile_only);
    assert_non_null(strstr(sec, want));
    snprintf(want, sizeof want, "sm_80: run %lld  candidates 8  compiled 7  verified 0  failed 1", (long long)sm80);
    assert_non_null(strstr(sec, want));
    assert_true(strstr(sec, "sm_90a: ") < strstr(sec, "sm_80: "));
    char head[512];
    assert_true(line_with(sec, "smem static(B)", head, sizeof head) > 0);
    assert_non_null(strstr(head, "regs"));
    assert_non_null(strstr(head, "spill(B)"));
    assert_non_null(strstr(head, "smem dynamic(B)"));
    assert_true(line_with(sec, "BM=128 BN=256 STAGES=3", line, sizeof line) > 0); /* run 1's best */
    assert_non_null(strstr(line, "168"));
    assert_non_null(strstr(line, "98304"));
    assert_true(line_with(sec, "BM=103", line, sizeof line) > 0); /* the spill */
    assert_non_null(strstr(line, "compiled"));
    assert_non_null(strstr(line, " 16 "));
    assert_non_null(strstr(line, "40963"));
    assert_null(strstr(sec, "BM=101")); /* the sixth and seventh compiled in seq order */
    assert_null(strstr(sec, "BM=100"));
    assert_null(strstr(sec, "BM=7")); /* failed */
    assert_null(strstr(sec, "BM=64 BN=128")); /* the measured run's others */
    kv_buf_release(&out);
}

static void test_empty_db(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/kevo_report_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK); /* an empty file is new */
    kv_buf out;
    kv_buf_init(&out);
    assert_int_equal(kevo_report_json(db, 0, &out, &err), KEVO_OK);
    cJSON *root = cJSON_Parse(out.data);
    assert_non_null(root);
    assert_true(cJSON_IsArray(get(root, "runs")));
    assert_int_equal(cJSON_GetArraySize(get(root, "runs")), 0);
    assert_true(cJSON_IsArray(get(root, "archs")));
    assert_int_equal(cJSON_GetArraySize(get(root, "archs")), 0);
    cJSON_Delete(root);
    kv_buf_release(&out);
    assert_int_equal(kevo_report_table(db, 0, 0, &out, &err), KEVO_OK);
    assert_string_equal(out.data, "no runs\n");
    kv_buf_release(&out);
    kevo_db_close(db);
    tmp_cleanup(path);
}

/* A candidate's generator by its family's form among the run's generators:
 * "<name>_" and 12 hex digits, or "<name>_call<k>"; anything else is a
 * template family, and without stored generators every family is. */
static void test_generator_of_family(void **state)
{
    (void)state;
    kevo_run_gen_row g[2] = {{.name = "template", .options = "{}"}, {.name = "llm", .options = "{}"}};
    assert_string_equal(kevo_report_generator("llm_0123456789ab", g, 2), "llm");
    assert_string_equal(kevo_report_generator("llm_call3", g, 2), "llm");
    assert_string_equal(kevo_report_generator("llm_call", g, 2), "template");
    assert_string_equal(kevo_report_generator("llm_call3x", g, 2), "template");
    assert_string_equal(kevo_report_generator("llm_0123456789abc", g, 2), "template");
    assert_string_equal(kevo_report_generator("llm_0123456789AB", g, 2), "template");
    assert_string_equal(kevo_report_generator("llmx_0123456789ab", g, 2), "template");
    assert_string_equal(kevo_report_generator("lce_mma", g, 2), "template");
    assert_string_equal(kevo_report_generator("llm_0123456789ab", g, 0), "template");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generator_of_family),
        cmocka_unit_test_setup_teardown(test_json_all_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_one_run_and_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_params_not_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_compile_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_distribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_arch, setup, teardown),
        cmocka_unit_test(test_empty_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
