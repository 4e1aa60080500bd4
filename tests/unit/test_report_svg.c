/* test_report_svg.c — kevo report --svg: the picture of a DB with a timed
 * run (failures, a crossover, text that needs escaping) and a compile-only
 * run is well-formed XML (parsed by Python's parser) with one curve for the
 * timed run and one node per candidate of the drawn tree. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/report.h"
#include "db/store.h"
#include "util/util.h"

static char dbpath[64], svgpath[64];

static int64_t add_cand(kevo_db *db, int64_t run, int seq, const char *status, double speedup, const char *fail,
                        const char *msg)
{
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run;
    c.seq = seq;
    snprintf(c.family, sizeof c.family, "lce_mma");
    char params[64];
    snprintf(params, sizeof params, "{\"BM\":%d,\"ALIGN\":%d}", 64 * seq, seq % 2);
    c.params = kv_strdup(params);
    snprintf(c.status, sizeof c.status, "%s", status);
    if (fail)
        snprintf(c.fail, sizeof c.fail, "%s", fail);
    c.fail_msg = msg ? kv_strdup(msg) : NULL;
    c.speedup = speedup;
    c.median_ms = isnan(speedup) ? NAN : 2.0 / speedup;
    kevo_err err;
    assert_int_equal(kevo_db_cand_insert(db, &c, &err), KEVO_OK);
    int64_t id = c.id;
    kevo_cand_row_release(&c);
    return id;
}

static void test_svg(void **state)
{
    (void)state;
    kevo_db *db;
    kevo_err err;
    assert_int_equal(kevo_db_open(dbpath, true, &db, &err), KEVO_OK);
    kevo_run_row r;
    kevo_run_row_init(&r);
    snprintf(r.op, sizeof r.op, "ikbo_lce");
    snprintf(r.shape, sizeof r.shape, "B=8,M=64");
    snprintf(r.policy, sizeof r.policy, "evolve");
    snprintf(r.status, sizeof r.status, "done");
    snprintf(r.device, sizeof r.device, "GPU <&> \"test\"");
    assert_int_equal(kevo_db_run_insert(db, &r, &err), KEVO_OK);
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_peer_set ps;
    kevo_peer_set_init(&ps);
    ps.p[kevo_op_peer_baseline(op)].state = KEVO_PEER_OK;
    ps.p[kevo_op_peer_baseline(op)].median_ms = 2.0;
    assert_int_equal(kevo_db_peers_put(db, r.id, 0, 0, op, &ps, &err), KEVO_OK);
    int64_t a = add_cand(db, r.id, 1, "ok", 1.2, NULL, NULL);
    int64_t b = add_cand(db, r.id, 2, "ok", 2.5, NULL, NULL);
    int64_t c = add_cand(db, r.id, 3, "failed", 0.0, "wrong_result", "rel_err 1e-2 > bound & <x>");
    int64_t d = add_cand(db, r.id, 4, "ok", 3.1, NULL, NULL);
    assert_int_equal(kevo_db_edge_insert(db, r.id, a, b, "align", &err), KEVO_OK);
    assert_int_equal(kevo_db_edge_insert(db, r.id, b, c, "fuse", &err), KEVO_OK);
    assert_int_equal(kevo_db_edge_insert(db, r.id, a, d, "crossover", &err), KEVO_OK);
    assert_int_equal(kevo_db_edge_insert(db, r.id, b, d, "crossover", &err), KEVO_OK);
    kevo_run_row r2;
    kevo_run_row_init(&r2);
    snprintf(r2.op, sizeof r2.op, "ikbo_lce");
    snprintf(r2.status, sizeof r2.status, "done");
    r2.compile_only = true;
    assert_int_equal(kevo_db_run_insert(db, &r2, &err), KEVO_OK);
    add_cand(db, r2.id, 1, "compiled", NAN, NULL, NULL);

    kv_buf out;
    kv_buf_init(&out);
    assert_int_equal(kevo_report_svg(db, r.id, &out, &err), KEVO_OK);
    assert_int_equal(kv_write_file(svgpath, out.data, out.len, &err), KEVO_OK);
    kv_buf_release(&out);
    kv_buf_init(&out);
    assert_int_equal(kevo_report_svg(db, 99, &out, &err), KEVO_ERR_NOT_FOUND);
    kv_buf_release(&out);
    kevo_db_close(db);

    /* well-formed XML; counts: 1 curve, 4 tree nodes (+2 legend marks), 4 edges */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); ns = "
             "'{http://www.w3.org/2000/svg}'; r = t.getroot(); "
             "c = len(r.findall(ns + 'polyline')); n = len(r.findall(ns + 'circle')); "
             "g = [x for x in r.iter(ns + 'g')]; e = sum(len(x.findall(ns + 'line')) for x in g); "
             "s = E.tostring(r, encoding='unicode'); "
             "sys.exit(0 if (c, n, e) == (1, 6, 4) and 'rel_err 1e-2 &gt; bound &amp; &lt;x&gt;' in s else 1)\" %s",
             svgpath);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dbpath, sizeof dbpath, "/tmp/kevo-svg-%d.db", (int)getpid());
    snprintf(svgpath, sizeof svgpath, "/tmp/kevo-svg-%d.svg", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[80];
    remove(dbpath);
    remove(svgpath);
    snprintf(p, sizeof p, "%s-wal", dbpath);
    remove(p);
    snprintf(p, sizeof p, "%s-shm", dbpath);
    remove(p);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_svg)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
