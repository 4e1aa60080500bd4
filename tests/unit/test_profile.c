/* test_profile.c — Nsight Compute's CSV read into a candidate's profile
 * (db/profile.h): a canned ncu output of an lce_ws run (two
 * launches; the longer one's figures kept), its figures stored as the
 * candidate's measurements and read back, the line the prompt shows, and
 * CSV that is not ncu's refused. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/profile.h"
#include "testutil.h"

static void test_profile_parse(void **state)
{
    (void)state;
    char *csv = tu_read_src("tests/fixtures/profile/ncu_lce_ws.csv");
    kevo_profile p;
    kevo_err err;
    assert_int_equal(kevo_profile_parse_ncu_csv(csv, &p, &err), KEVO_OK);
    free(csv);
    assert_string_equal(p.kernel, "lce_ws_fused"); /* the longer launch (312 us against 41) */
    assert_true(fabs(p.time_us - 312.48) < 1e-9);
    assert_true(fabs(p.tensor_pct - 61.37) < 1e-9);
    assert_true(fabs(p.dram_gbs - 1850) < 1e-6);  /* Tbyte/second */
    assert_true(fabs(p.dram_pct - 55.12) < 1e-9);
    assert_true(fabs(p.l2_gbs - 3412.6) < 1e-6);  /* "3,412.60" Gbyte/second */
    assert_true(fabs(p.occupancy_pct - 18.75) < 1e-9);
    /* stalls: 2.10 + 1.05 + 0.70 + 0.35 = 4.2 (n/a left out): 50%, 25%, 16.7% */
    assert_int_equal(p.nstalls, 3);
    assert_string_equal(p.stall[0], "long_scoreboard");
    assert_string_equal(p.stall[1], "barrier");
    assert_string_equal(p.stall[2], "wait");
    assert_true(fabs(p.stall_pct[0] - 50) < 1e-9);
    assert_true(fabs(p.stall_pct[1] - 25) < 1e-9);
    kv_buf line;
    kv_buf_init(&line);
    kevo_profile_line(&p, &line);
    assert_string_equal(line.data, "tensor pipe 61% of peak, DRAM 1850 GB/s (55% of peak), L2 3413 GB/s, achieved "
                                   "occupancy 19%; top warp stalls: long_scoreboard 50%, barrier 25%, wait 17%");
    kv_buf_release(&line);

    /* stored as measurements, read back the same */
    char dir[] = "/tmp/kevo-profile-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.db", dir);
    kevo_db *db = NULL;
    assert_int_equal(kevo_db_open(path, true, &db, &err), KEVO_OK);
    kevo_run_row run;
    kevo_run_row_init(&run);
    snprintf(run.op, sizeof run.op, "ikbo_lce");
    assert_int_equal(kevo_db_run_insert(db, &run, &err), KEVO_OK);
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    c.run_id = run.id;
    c.seq = 1;
    snprintf(c.family, sizeof c.family, "lce_ws");
    c.params = strdup("{}");
    snprintf(c.status, sizeof c.status, "ok");
    assert_int_equal(kevo_db_cand_insert(db, &c, &err), KEVO_OK);
    kevo_profile q;
    bool have = true;
    assert_int_equal(kevo_profile_load(db, c.id, &q, &have, &err), KEVO_OK);
    assert_false(have);
    assert_int_equal(kevo_profile_store(db, c.id, &p, &err), KEVO_OK);
    assert_int_equal(kevo_profile_load(db, c.id, &q, &have, &err), KEVO_OK);
    assert_true(have);
    assert_true(fabs(q.tensor_pct - p.tensor_pct) < 1e-9 && fabs(q.l2_gbs - p.l2_gbs) < 1e-9);
    assert_int_equal(q.nstalls, 3);
    assert_string_equal(q.stall[0], "long_scoreboard");
    assert_string_equal(q.stall[2], "wait");
    kevo_cand_row_release(&c);
    kevo_db_close(db);
    tu_rm_tree(dir);
}

static void test_profile_refused(void **state)
{
    (void)state;
    kevo_profile p;
    kevo_err err;
    assert_int_equal(kevo_profile_parse_ncu_csv("a,b,c\n1,2,3\n", &p, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "no header"));
    assert_int_equal(kevo_profile_parse_ncu_csv("\"ID\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n", &p, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "no metric row"));
    assert_int_equal(kevo_profile_parse_ncu_csv(NULL, &p, &err), KEVO_ERR_PARSE);
    /* a hostile kernel name: control bytes cleaned; an odd stall name is not a reason */
    assert_int_equal(kevo_profile_parse_ncu_csv("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                                                "\"0\",\"k\x1b[2J\",\"smsp__x_issue_stalled_a;b_per_x\",\"ratio\",\"1\"\n",
                                                &p, &err),
                     KEVO_OK);
    assert_null(strchr(p.kernel, '\x1b'));
    assert_int_equal(p.nstalls, 0);
    kv_buf line;
    kv_buf_init(&line);
    kevo_profile_line(&p, &line);
    assert_int_equal(line.len, 0); /* nothing measured: nothing said */
    kv_buf_release(&line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_parse),
        cmocka_unit_test(test_profile_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
