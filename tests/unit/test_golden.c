/* test_golden.c — kevo's behaviour pinned: seeded runs, each reduced to
 * a canonical text and compared with the text the code made when the data
 * under tests/fixtures/golden/ was written.
 *
 *   compile  kevo tune --op ikbo_lce --compile-only --budget 24 --batch 4
 *            --seed 7 --jobs 2 into a fresh DB
 *   sim      the same on one simulated GPU (KEVO_SIM_GPUS=1: a candidate's
 *            time is a function of its machine code and launch grids alone,
 *            not of the line tables, which name the working folder and
 *            differ with and without a precompiled header; one GPU applies
 *            its results in proposal order, so the run is deterministic)
 *   replay   kevo replay --db tests/fixtures/landscape/lce_mma_h200.db
 *            --policy greedy --seeds 3 --format json, every evaluation traced
 *            (KEVO_REPLAY_TRACE), and each other policy at --target 1
 *            --batch 4 --ahead 2 for one seed
 *   sim_nopch  the sim case with KEVO_PCH=0, to the same text
 *   mutate   the compile-only run with --generators template,mutate (the
 *            third generator, added with issue 39: pinned from then on)
 *
 * The canonical text of a tune run: the run's row, settings, generators,
 * peers, devices and warm seeds; every candidate (seq, round, family,
 * params, status, failure, source hash, binary key, the cost model's
 * prediction, and for the GPU run its figures rounded, and the paired
 * figure against the fastest peer); every edge; what
 * the run printed (compile times left out).  Wall times, pids, hosts and
 * dates are left out.
 *
 * A golden file opens with the fingerprint of what its runs depend on
 * beside kevo's code: the template data (the .cu, .cuh and .json files
 * under templates/), the ops' ABI headers and the NVRTC version (a
 * simulated time is a function of the cubin).  When those differ from the
 * file's, the data is of another input and the case is skipped with a line
 * saying so.  KEVO_GOLDEN_WRITE=1 writes the files from the code as it is
 * (do it on the commit before a change, then compare after it). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evaluator/compile.h"
#include "testutil.h"
#include "util/util.h"

#define GOLDEN_BUDGET "24"

static char workdir[256];
static bool skipped; /* a case was skipped: its golden data is of other inputs */

/* ---- the fingerprint of the inputs ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Every file below dir (a path relative to tu_home()) whose name ends with
 * one of tails[0..ntails), appended to names[*n] (relative paths). */
static void list_files(const char *rel, const char *const *tails, int ntails, char ***names, int *n, int *cap)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_home(), rel);
    DIR *d = opendir(path);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        char sub[1024], full[2048];
        snprintf(sub, sizeof sub, "%s/%s", rel, de->d_name);
        snprintf(full, sizeof full, "%s/%s", tu_home(), sub);
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            list_files(sub, tails, ntails, names, n, cap);
            continue;
        }
        bool want = false;
        for (int i = 0; i < ntails && !want; i++)
            want = ends_with(de->d_name, tails[i]);
        if (!want)
            continue;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *names = realloc(*names, (size_t)*cap * sizeof **names);
            assert_non_null(*names);
        }
        (*names)[(*n)++] = kv_strdup(sub);
    }
    closedir(d);
}

/* "templates=<16 hex> nvrtc=<version>" (with_nvrtc) or "templates=<16 hex>"
 * over the files of templates/ (and kernels/ headers) named by tails. */
static void fingerprint(const char *const *tails, int ntails, bool with_nvrtc, char *out, size_t n)
{
    char **names = NULL;
    int count = 0, cap = 0;
    list_files("templates", tails, ntails, &names, &count, &cap);
    if (with_nvrtc) {
        const char *abi[] = {"abi.h"};
        list_files("kernels", abi, 1, &names, &count, &cap);
    }
    qsort(names, (size_t)count, sizeof *names, cmp_str);
    kv_buf all;
    kv_buf_init(&all);
    for (int i = 0; i < count; i++) {
        char *text = tu_read_src(names[i]);
        const void *bufs[] = {text};
        size_t lens[] = {strlen(text)};
        char hex[65];
        kv_sha256_hex(bufs, lens, 1, hex);
        kv_buf_printf(&all, "%s %s\n", names[i], hex);
        free(text);
        free(names[i]);
    }
    free(names);
    const void *bufs[] = {all.data ? all.data : ""};
    size_t lens[] = {all.len};
    char hex[65];
    kv_sha256_hex(bufs, lens, 1, hex);
    kv_buf_release(&all);
    char ver[32] = "";
    if (with_nvrtc)
        kevo_nvrtc_version(ver, sizeof ver);
    snprintf(out, n, "templates=%.16s%s%s", hex, with_nvrtc ? " nvrtc=" : "", ver);
}

/* ---- canonical text ---- */

/* Each row of a query on db, its columns joined by " | " (NULL: "null"),
 * under a "## title" line. */
static void dump_query(sqlite3 *h, kv_buf *b, const char *title, const char *sql)
{
    kv_buf_printf(b, "## %s\n", title);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            kv_buf_printf(b, "%s%s", c ? " | " : "", v ? v : "null");
        }
        kv_buf_puts(b, "\n");
    }
    sqlite3_finalize(st);
}

/* A real column rounded, in SQL (NULL: "null"): six significant digits, or four decimals. */
#define G(col) "CASE WHEN " col " IS NULL THEN 'null' ELSE printf('%.6g', " col ") END"
#define F4(col) "CASE WHEN " col " IS NULL THEN 'null' ELSE printf('%.4f', " col ") END"

/* The canonical text of a tune run's DB (gpu: its figures too). */
static void dump_db(const char *db, bool gpu, kv_buf *b)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    dump_query(h, b, "run",
               "SELECT id, op, shape, dtype, arch, policy, families, seed, budget, compile_only, status, stop_reason, "
               "device, driver_version, sm_count, " G("peak_tflops") ", " G("copy_tbps") ", " G("flops") ", "
               G("bytes") ", filter, nshapes, warm_start, (SELECT seq FROM candidates c WHERE c.id = runs.best_id) "
               "FROM runs ORDER BY id");
    dump_query(h, b, "settings",
               "SELECT run_id, family_arg, batch, ahead, maps, reps, warmup, " G("time_limit") ", plateau, "
               G("target") ", " G("compile_timeout") ", " G("eval_timeout") ", templates, space_hash "
               "FROM run_settings ORDER BY run_id");
    dump_query(h, b, "generators",
               "SELECT run_id, name, options, calls FROM run_generators ORDER BY run_id, rowid");
    dump_query(h, b, "generations", "SELECT count(*) FROM generations");
    dump_query(h, b, "warm seeds",
               "SELECT run_id, idx, family, params, from_run, from_shape, " G("distance") " FROM warm_seeds "
               "ORDER BY run_id, idx");
    dump_query(h, b, "peers",
               "SELECT run_id, shape_idx, device, peer, status, " G("median_ms") ", " G("ci_lo_ms") ", "
               G("ci_hi_ms") ", " G("rel_err") ", candidate_id, detail, config FROM run_peers "
               "ORDER BY run_id, shape_idx, device, peer");
    dump_query(h, b, "devices",
               "SELECT run_id, idx, ordinal, name, pci_bus, sm_count, " G("peak_tflops") ", " G("copy_tbps") ", "
               "evaluated FROM run_devices ORDER BY run_id, idx");
    dump_query(h, b, "candidates",
               "SELECT run_id, seq, round, family, params, status, coalesce(fail, '-'), source_hash, binary_key, "
               "regs, spill_bytes, smem_static, smem_dynamic, " G("model_ms") ", plan FROM candidates "
               "ORDER BY run_id, seq");
    if (gpu) {
        dump_query(h, b, "figures",
                   "SELECT seq, " F4("median_ms") ", " F4("min_ms") ", " F4("ci_lo_ms") ", " F4("ci_hi_ms") ", "
                   F4("speedup") ", " F4("vs_peer") ", " F4("fitness") ", " F4("roofline") ", " F4("tflops") ", "
                   G("rel_err") ", " G("max_abs_err") ", checks, tied, device FROM candidates ORDER BY run_id, seq");
        dump_query(h, b, "measurements",
                   "SELECT c.seq, m.name, " G("m.value") " FROM measurements m JOIN candidates c "
                   "ON c.id = m.candidate_id ORDER BY c.seq, m.name");
        dump_query(h, b, "paired",
                   "SELECT run_id, (SELECT seq FROM candidates c WHERE c.id = p.candidate_id), peer, rounds, "
                   F4("ratio") ", " F4("ci_lo") ", " F4("ci_hi") ", length(peer_ms) FROM run_paired p "
                   "ORDER BY run_id");
        dump_query(h, b, "timings",
                   "SELECT c.seq, t.shape_idx, t.label, length(t.ms), hex(t.ms) FROM timings t JOIN candidates c "
                   "ON c.id = t.candidate_id ORDER BY c.seq, t.shape_idx, t.label");
    }
    dump_query(h, b, "edges",
               "SELECT p.seq || ' -> ' || c.seq || ' ' || e.operator FROM edges e JOIN candidates p ON "
               "p.id = e.parent_id JOIN candidates c ON c.id = e.child_id ORDER BY e.run_id, c.seq, p.seq");
    sqlite3_close(h);
}

/* A printed line with its compile time left out ("compiled 1.2 s" and
 * "compiled (cached) 0.0 s" become "compiled T s"). */
static void dump_line(kv_buf *b, const char *line, size_t len)
{
    char *l = malloc(len + 1);
    assert_non_null(l);
    memcpy(l, line, len);
    l[len] = '\0';
    char *c = strstr(l, " | compiled");
    if (c) {
        char *num = c + strlen(" | compiled");
        if (strncmp(num, " (cached)", 9) == 0)
            num += 9;
        if (*num == ' ') {
            num++;
            char *end = num;
            while ((*end >= '0' && *end <= '9') || *end == '.')
                end++;
            if (end > num && strncmp(end, " s", 2) == 0) {
                kv_buf_append(b, l, (size_t)(num - l));
                kv_buf_printf(b, "T%s\n", end);
                free(l);
                return;
            }
        }
    }
    kv_buf_printf(b, "%s\n", l);
    free(l);
}

static void dump_output(kv_buf *b, const char *title, const char *path)
{
    char *text = tu_read_text(path);
    kv_buf_printf(b, "## %s\n", title);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        dump_line(b, p, n);
        p += n + (p[n] == '\n');
    }
    free(text);
}

/* ---- comparing with the golden file ---- */

/* The first line where a and b differ, on stderr, with its neighbours. */
static void say_difference(const char *want, const char *got)
{
    int line = 1;
    const char *a = want, *b = got;
    while (*a && *a == *b) {
        line += *a == '\n';
        a++;
        b++;
    }
    while (a > want && a[-1] != '\n')
        a--, b--;
    fprintf(stderr, "first difference at line %d:\n  golden: %.*s\n  now:    %.*s\n", line, (int)strcspn(a, "\n"), a,
            (int)strcspn(b, "\n"), b);
}

/* Compare text (whose first line is the fingerprint) with golden file name:
 * written instead under KEVO_GOLDEN_WRITE=1; skipped when the golden file's
 * fingerprint is not text's. */
static void expect_golden(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/golden/%s", tu_home(), name);
    const char *w = getenv("KEVO_GOLDEN_WRITE");
    if (w && strcmp(w, "1") == 0) {
        tu_write_text(path, text);
        fprintf(stderr, "wrote %s\n", path);
        return;
    }
    char *want = tu_read_text(path);
    if (!*want)
        fail_msg("no golden data at %s (KEVO_GOLDEN_WRITE=1 writes it)", path);
    size_t fl = strcspn(text, "\n");
    if (strncmp(want, text, fl) != 0 || want[fl] != '\n') {
        fprintf(stderr, "golden data %s is of other inputs:\n  golden: %.*s\n  now:    %.*s\n"
                "(the templates, ABI headers or NVRTC changed since it was written: regenerate it with "
                "KEVO_GOLDEN_WRITE=1 on the code it should pin)\n",
                path, (int)strcspn(want, "\n"), want, (int)fl, text);
        free(want);
        skipped = true;
        skip();
    }
    if (strcmp(want, text) != 0) {
        char now[1100];
        snprintf(now, sizeof now, "%s/%s.now", workdir, name);
        tu_write_text(now, text);
        fprintf(stderr, "%s differs from the golden data (the whole text: %s)\n", name, now);
        say_difference(want, text);
    }
    assert_string_equal(want, text);
    free(want);
}

/* ---- the cases ---- */

static const char *const data_tails[] = {".cu", ".cuh", ".json"};

/* kevo tune with the golden run's options (extra: more), into db; its
 * canonical text with the fingerprint line first. */
static char *golden_tune(const char *tag, const char *const *more, bool gpu)
{
    char db[512], outp[512], errp[512];
    snprintf(db, sizeof db, "%s/%s.db", workdir, tag);
    snprintf(outp, sizeof outp, "%s/%s.out", workdir, tag);
    snprintf(errp, sizeof errp, "%s/%s.err", workdir, tag);
    const char *args[32] = {"tune", "--op", "ikbo_lce", "--budget", GOLDEN_BUDGET, "--batch", "4", "--seed", "7",
                            "--jobs", "2", "--db", db, "--no-bar"};
    int n = 14;
    for (int i = 0; more[i]; i++)
        args[n++] = more[i];
    args[n] = NULL;
    int rc = tu_run_files(workdir, outp, errp, false, args);
    if (rc != 0) {
        char *e = tu_read_text(errp);
        fprintf(stderr, "kevo tune exited %d:\n%s", rc, e);
        free(e);
    }
    assert_int_equal(rc, 0);
    kv_buf b;
    kv_buf_init(&b);
    char fp[128];
    fingerprint(data_tails, 3, true, fp, sizeof fp);
    kv_buf_printf(&b, "# fingerprint %s\n# kevo tune --op ikbo_lce --budget %s --batch 4 --seed 7 --jobs 2", fp,
                  GOLDEN_BUDGET);
    for (int i = 0; more[i]; i++)
        kv_buf_printf(&b, " %s", more[i]);
    kv_buf_printf(&b, "%s\n", gpu ? " (KEVO_SIM_GPUS=1)" : "");
    dump_db(db, gpu, &b);
    dump_output(&b, "stdout", outp);
    dump_output(&b, "stderr", errp);
    return kv_buf_take(&b);
}

static void test_compile(void **state)
{
    (void)state;
    unsetenv("KEVO_SIM_GPUS");
    const char *more[] = {"--compile-only", NULL};
    char *text = golden_tune("compile", more, false);
    expect_golden("tune_compile_only.txt", text);
    free(text);
}

/* The third generator (search/gen_mutate.c) beside the policy's rounds:
 * not a behaviour of the code before issue 39, pinned from it on. */
static void test_mutate(void **state)
{
    (void)state;
    unsetenv("KEVO_SIM_GPUS");
    const char *more[] = {"--compile-only", "--generators", "template,mutate", NULL};
    char *text = golden_tune("mutate", more, false);
    expect_golden("tune_compile_mutate.txt", text);
    free(text);
}

static void golden_sim(const char *pch)
{
    assert_int_equal(setenv("KEVO_SIM_GPUS", "1", 1), 0);
    if (pch)
        assert_int_equal(setenv("KEVO_PCH", pch, 1), 0);
    const char *more[] = {NULL};
    char *text = golden_tune(pch ? "sim_pch" : "sim", more, true);
    unsetenv("KEVO_SIM_GPUS");
    unsetenv("KEVO_PCH");
    expect_golden("tune_sim_gpu.txt", text);
    free(text);
}

static void test_sim(void **state)
{
    (void)state;
    golden_sim(NULL);
}

/* The same run with no precompiled header, as when the PCH writer is slow
 * on a loaded machine: NVRTC then writes other line tables, which must not
 * change a simulated time (CI once failed on just that). */
static void test_sim_nopch(void **state)
{
    (void)state;
    golden_sim("0");
}

/* kevo replay with args on the landscape, its JSON and trace into b. */
static void golden_replay(kv_buf *b, const char *const *args, const char *tag)
{
    char land[1024], outp[512], errp[512];
    snprintf(land, sizeof land, "%s/tests/fixtures/landscape/lce_mma_h200.db", tu_home());
    snprintf(outp, sizeof outp, "%s/replay_%s.out", workdir, tag);
    snprintf(errp, sizeof errp, "%s/replay_%s.err", workdir, tag);
    const char *argv[32] = {"replay", "--db", land};
    int n = 3;
    kv_buf_printf(b, "# kevo replay --db tests/fixtures/landscape/lce_mma_h200.db");
    for (int i = 0; args[i]; i++) {
        argv[n++] = args[i];
        kv_buf_printf(b, " %s", args[i]);
    }
    argv[n] = NULL;
    kv_buf_puts(b, " (KEVO_REPLAY_TRACE=1)\n");
    int rc = tu_run_files(workdir, outp, errp, false, argv);
    assert_int_equal(rc, 0);
    dump_output(b, "json", outp);
    dump_output(b, "trace", errp);
}

static void test_replay(void **state)
{
    (void)state;
    assert_int_equal(setenv("KEVO_REPLAY_TRACE", "1", 1), 0);
    kv_buf b;
    kv_buf_init(&b);
    const char *json_tail[] = {".json"};
    char fp[128];
    fingerprint(json_tail, 1, false, fp, sizeof fp);
    kv_buf_printf(&b, "# fingerprint %s\n", fp);
    const char *first[] = {"--policy", "greedy", "--seeds", "3", "--format", "json", NULL};
    golden_replay(&b, first, "greedy");
    const char *policies[] = {"greedy", "exhaustive", "random", "ucb", "evolve"};
    for (size_t i = 0; i < KV_ARRAY_LEN(policies); i++) {
        const char *args[] = {"--policy", policies[i], "--seeds", "1", "--target", "1", "--batch", "4", "--ahead",
                              "2", "--format", "json", NULL};
        golden_replay(&b, args, policies[i]);
    }
    unsetenv("KEVO_REPLAY_TRACE");
    expect_golden("replay_lce_mma_h200.txt", b.data);
    kv_buf_release(&b);
}

int main(int argc, char **argv)
{
    snprintf(workdir, sizeof workdir, "/tmp/kevo_golden_XXXXXX");
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("KEVO_TRACE_EVAL");
    unsetenv("KEVO_SIM_EVAL_MS");
    unsetenv("KEVO_SIM_HANG");
    unsetenv("KEVO_FAULT_INJECT");
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_compile),
        cmocka_unit_test(test_sim),
        cmocka_unit_test(test_sim_nopch),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_mutate),
    };
    int rc = -1;
    if (argc < 2)
        rc = cmocka_run_group_tests(all, NULL, NULL);
    for (size_t i = 0; i < KV_ARRAY_LEN(all) && argc >= 2; i++) {
        if (strcmp(all[i].name + 5, argv[1]) != 0) /* "test_" + the case */
            continue;
        const struct CMUnitTest one[] = {all[i]};
        rc = cmocka_run_group_tests(one, NULL, NULL);
    }
    if (rc < 0) {
        fprintf(stderr, "usage: test_golden [compile|sim|sim_nopch|replay|mutate]\n");
        return 2;
    }
    if (rc == 0)
        tu_rm_tree(workdir);
    return rc == 0 && skipped && argc >= 2 ? 77 : rc; /* ctest: SKIP_RETURN_CODE */
}
