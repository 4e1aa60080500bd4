/* test_security_input.c — a handed-off DB, a folder, a command line and a
 * signal are hostile input (issue 37; ctest label security).  One case per
 * class, each a ctest test of its own (argv[1]):
 *   output   an output never replaces an input: report --svg onto the DB
 *            (by its name, a hard link, a symbolic link, its -wal) and tune
 *            --db onto its --shapes file are refused (exit 2), nothing
 *            written; kv_same_file compares devices and inodes.
 *   llmurl   the API key goes only where this invocation says: a DB's URL
 *            is never called (--resume without --llm-url makes no LLM call,
 *            with one it calls that one), URLs with credentials and LLM
 *            options without --generators llm are usage errors.
 *   admit    everything compiled from a DB is admitted again: a stored LLM
 *            source that #includes a local file, probes with __has_include
 *            or makes a pointer from an integer is refused on --resume (its
 *            family hash recomputed to match), as kevo_llm_admit
 *            refuses it; warm-start params outside the family's domains
 *            seed nothing.
 *   nvrtc    NVRTC sees no file system for LLM code: an untrusted compile
 *            (program "llm") reads no file outside the toolkit's headers
 *            (relative, absolute, __has_include), its log quotes no other
 *            file (kevo_compile_log_scrub); the static check refuses
 *            pointers made from integers and PTX constant addresses.
 *   escape   DB text in the SVG and on the terminal: crafted statuses make
 *            no element, and the document stays well-formed.
 *   writer   one run, one writer: two resumes started together, exactly
 *            one goes on; mpirun without --mpi warns; SIGXFSZ and SIGHUP
 *            leave the run interrupted with the resume command.
 *   folders  a FIFO or a device in --templates is refused at once; a
 *            --prompts folder without system.md or the op's file is an
 *            error before anything compiles.
 *   usage    usage errors exit 2 before any GPU or DB check; lists refuse
 *            empty and repeated items alike; replay's JSON holds no inf; a
 *            GPU run resumed without a GPU writes nothing; a NUL in a reply
 *            is named; --templates is documented. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db/report.h"
#include "db/store.h"
#include "evaluator/compile.h"
#include "core/op.h"
#include "llm/admit/check.h"
#include "llm/client.h"
#include "llm/admit/admit.h"
#include "testutil.h"
#include "tests/fuzz/svg_check.h"
#include "util/util.h"

#define KEY "sk-test-SECRET-37c1d2"

static char tmpdir[64];

/* ---- helpers ---- */

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* Run kevo with args (NULL-terminated, without argv[0]) in tmpdir: every
 * signal at its default, env (NAME=VALUE or NULL) added to its environment
 * and the file size limit fsize (0: none). */
static tu_result run_kevo_with(const char *env, rlim_t fsize, const char *const *args)
{
    tu_run_how how = {.env = env, .fsize = (unsigned long)fsize, .default_signals = true};
    return tu_run_in(tmpdir, &how, args);
}

#define RUN(...) run_kevo_with(NULL, 0, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_ENV(env, ...) run_kevo_with(env, 0, (const char *const[]){__VA_ARGS__, NULL})

static void expect_status(const tu_result *r, int want, const char *text)
{
    if (r->status != want || (text && !strstr(r->err, text) && !strstr(r->out, text)))
        fail_msg("expected exit %d with \"%s\", got %d\nstdout: %s\nstderr: %s", want, text ? text : "", r->status,
                 r->out, r->err);
}

/* A usage error: exit 2, "kevo CMD: ..." naming text. */
static void expect_usage(const tu_result *r, const char *text)
{
    expect_status(r, 2, text);
    assert_non_null(strstr(r->err, "(try 'kevo "));
}

/* The bytes of a file, "" when it cannot be read (caller frees). */
static char *slurp(const char *path, size_t *len)
{
    char *t = NULL;
    kevo_err err;
    if (kv_read_file(path, &t, len, &err) != KEVO_OK) {
        if (len)
            *len = 0;
        return kv_strdup("");
    }
    return t;
}

/* SHA-256 of a file's bytes. */
static void file_sha(const char *path, char hex[65])
{
    size_t len = 0;
    char *data = slurp(path, &len);
    const void *bufs[1] = {data};
    kv_sha256_hex(bufs, &len, 1, hex);
    free(data);
}

static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("raw exec: %s (%s)", msg ? msg : "?", sql);
    sqlite3_free(msg);
    sqlite3_close(h);
}

/* One text column (caller frees), NULL when none. */
static char *query_text(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    char *v = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 5000);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
            sqlite3_column_text(st, 0))
            v = kv_strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

/* Copy a file (bytes only). */
static void copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *data = slurp(from, &len);
    kevo_err err;
    assert_int_equal(kv_write_file(to, data, len, &err), KEVO_OK);
    free(data);
}

/* How many files a folder holds whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* A compile-only run of lce_mma in path (a new DB): budget candidates. */
static void make_run(const char *path, int budget)
{
    char b[16];
    snprintf(b, sizeof b, "%d", budget);
    tu_result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", b, "--jobs", "2",
                   "--db", path, "--quiet");
    expect_status(&r, 0, NULL);
    tu_result_release(&r);
}

/* The fake LLM server with a script of replies (lines); its request log in
 * tmpdir/logname; *url its API base. */
static int start_llm(const char *name, const char *lines, char *url, size_t n)
{
    char script[PATH_MAX], logdir[PATH_MAX];
    snprintf(script, sizeof script, "%s/%s.script", tmpdir, name);
    snprintf(logdir, sizeof logdir, "%s/%s.log", tmpdir, name);
    mkdir(logdir, 0700);
    tu_write_text(script, lines);
    return tu_fake_llm_start(KEVO_FAKE_LLM, script, logdir, tmpdir, url, n);
}

static int llm_requests(const char *name)
{
    char logdir[PATH_MAX];
    snprintf(logdir, sizeof logdir, "%s/%s.log", tmpdir, name);
    return count_files(logdir, "req-") / 2; /* .json and .headers */
}

/* A compile-only run with one LLM candidate (the fixture good.txt) in path;
 * the server stopped again. */
static void make_llm_run(const char *path)
{
    char url[64], line[PATH_MAX + 32];
    snprintf(line, sizeof line, "content=@%s/tests/fixtures/llm/good.txt\n", KEVO_SOURCE_DIR);
    int srv = start_llm("first", line, url, sizeof url);
    setenv("KEVO_LLM_API_KEY", KEY, 1);
    tu_result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "3",
                   "--generators", "template,llm", "--llm-url", url, "--llm-budget", "1", "--batch", "2", "--db",
                   path, "--quiet");
    unsetenv("KEVO_LLM_API_KEY");
    tu_fake_llm_stop(srv);
    expect_status(&r, 0, NULL);
    tu_result_release(&r);
    assert_int_equal(tu_query_int(path, "SELECT count(*) FROM generations WHERE source IS NOT NULL"), 1);
}

static const char *const lce_inputs[] = {"w_user", "w_cand", "e_user", "e_cand", "cand_to_user",
                                         "tm_w_user", "tm_w_cand", "tm_e_user", "tm_e_cand"};
static const char *const lce_outputs[] = {"out", "tm_out"};

/* ---- 1. an output never replaces an input ---- */

static void test_output(void **state)
{
    (void)state;
    char db[PATH_MAX], sha[65], now[65];
    path_in(db, sizeof db, "out.db");
    make_run(db, 1);
    file_sha(db, sha);
    char hard[PATH_MAX], soft[PATH_MAX], wal[PATH_MAX + 8], other[PATH_MAX];
    path_in(hard, sizeof hard, "hard.svg");
    path_in(soft, sizeof soft, "soft.svg");
    path_in(other, sizeof other, "fine.svg");
    assert_int_equal(link(db, hard), 0);
    assert_int_equal(symlink(db, soft), 0);
    /* the DB by its name, by another spelling of it, by a hard link and by a symbolic link */
    char spelled[PATH_MAX + 8];
    snprintf(spelled, sizeof spelled, "%s/./out.db", tmpdir);
    const char *targets[] = {db, spelled, hard, soft};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        tu_result r = RUN("report", "--db", db, "--svg", targets[i]);
        expect_usage(&r, "that this command reads: kevo never writes over its input");
        tu_result_release(&r);
        file_sha(db, now);
        assert_string_equal(now, sha);
    }
    /* its journal, while a writer holds it open */
    kevo_db *w = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(db, false, &w, &err), KEVO_OK);
    assert_int_equal(kevo_db_measure_put(w, 1, "x", 1.0, &err), KEVO_OK);
    snprintf(wal, sizeof wal, "%s-wal", db);
    if (access(wal, F_OK) == 0) {
        char walsha[65], walnow[65];
        file_sha(wal, walsha);
        tu_result r = RUN("report", "--db", db, "--svg", wal);
        expect_usage(&r, "-wal' that this command reads");
        tu_result_release(&r);
        file_sha(wal, walnow);
        assert_string_equal(walnow, walsha);
    }
    kevo_db_close(w);
    /* another file is written, and the DB read as before */
    tu_result r = RUN("report", "--db", db, "--svg", other);
    expect_status(&r, 0, "wrote");
    tu_result_release(&r);
    /* kv_same_file: devices and inodes, never names */
    assert_true(kv_same_file(db, hard));
    assert_true(kv_same_file(db, soft));
    assert_true(kv_same_file(db, spelled));
    assert_false(kv_same_file(db, other));
    assert_false(kv_same_file(db, "/nonexistent/kevo"));
    const char *ins[] = {other, NULL, hard};
    assert_int_equal(kv_file_among(db, ins, 3), 2);
    assert_int_equal(kv_file_among(other, ins + 1, 2), -1);
    /* tune's --db onto its --shapes file */
    char shapes[PATH_MAX];
    path_in(shapes, sizeof shapes, "shapes.txt");
    tu_write_text(shapes, "B=64,M=32,N=32,Ku=32,Kc=32,ratio=4\n");
    file_sha(shapes, sha);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1", "--shapes", shapes,
            "--db", shapes);
    expect_usage(&r, "is the --shapes file");
    tu_result_release(&r);
    file_sha(shapes, now);
    assert_string_equal(now, sha);
    /* and onto a source of a template family it searches (--templates) */
    char dir[PATH_MAX], f[PATH_MAX + 32];
    path_in(dir, sizeof dir, "mytpl");
    assert_int_equal(mkdir(dir, 0700), 0);
    const char *files[] = {"lce_mma.json", "lce_mma.cu", "dtype.cuh", "mma.cuh"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "templates/%s", files[i]);
        char *text = tu_read_src(rel);
        if (i == 0) { /* a family of its own name */
            char *fam = strstr(text, "\"lce_mma\"");
            assert_non_null(fam);
            memcpy(fam + 1, "own", 3);
        }
        snprintf(f, sizeof f, "%s/%s", dir, i == 0 ? "own.json" : files[i]);
        tu_write_text(f, text);
        free(text);
    }
    snprintf(f, sizeof f, "%s/lce_mma.cu", dir);
    file_sha(f, sha);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--templates", dir, "--db", f);
    expect_usage(&r, "is a file of template family own_mma");
    tu_result_release(&r);
    file_sha(f, now);
    assert_string_equal(now, sha);
}

/* ---- 2. the API key goes only where this invocation says ---- */

static void test_llmurl(void **state)
{
    (void)state;
    char db[PATH_MAX];
    path_in(db, sizeof db, "llm.db");
    make_llm_run(db);
    char line[PATH_MAX + 32], dburl[64], cliurl[64];
    snprintf(line, sizeof line, "content=@%s/tests/fixtures/llm/good.txt\n", KEVO_SOURCE_DIR);
    /* the attacker's server, named by the DB; the user's, named on the command line */
    int evil = start_llm("evil", line, dburl, sizeof dburl);
    int mine = start_llm("mine", line, cliurl, sizeof cliurl);
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE run_generators SET options = json_set(options, '$.url', '%s') WHERE run_id = 1 AND name = 'llm'",
             dburl);
    raw_exec(db, sql);
    setenv("KEVO_LLM_API_KEY", KEY, 1);
    /* --resume without --llm-url: no LLM call at all, one line says so */
    tu_result r = RUN("tune", "--resume", "1", "--db", db, "--budget", "5", "--llm-budget", "2");
    expect_status(&r, 0, "no --llm-url was given: this process makes no LLM call");
    tu_result_release(&r);
    assert_int_equal(llm_requests("evil"), 0);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations"), 1);
    /* with --llm-url: that server, with the key; never the DB's */
    r = RUN("tune", "--resume", "1", "--db", db, "--budget", "7", "--llm-budget", "3", "--llm-url", cliurl);
    expect_status(&r, 0, NULL);
    assert_null(strstr(r.out, KEY));
    assert_null(strstr(r.err, KEY));
    tu_result_release(&r);
    assert_int_equal(llm_requests("evil"), 0);
    assert_true(llm_requests("mine") >= 1);
    char hdr[PATH_MAX];
    snprintf(hdr, sizeof hdr, "%s/mine.log/req-001.headers", tmpdir);
    char *h = tu_read_text(hdr);
    assert_non_null(strstr(h, "Bearer " KEY));
    free(h);
    unsetenv("KEVO_LLM_API_KEY");
    tu_fake_llm_stop(evil);
    tu_fake_llm_stop(mine);
    /* the DB never keeps the key */
    size_t len = 0;
    char *bytes = slurp(db, &len);
    assert_null(memmem(bytes, len, KEY, strlen(KEY)));
    free(bytes);

    /* credentials in a URL: refused, without echoing them, for a new run and a resume */
    char fresh[PATH_MAX];
    path_in(fresh, sizeof fresh, "fresh.db");
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--generators", "llm", "--llm-url",
            "http://user:hunter2@127.0.0.1:9/v1", "--budget", "1", "--db", fresh);
    expect_usage(&r, "carries a user name or password");
    assert_null(strstr(r.err, "hunter2"));
    tu_result_release(&r);
    assert_false(access(fresh, F_OK) == 0);
    r = RUN("tune", "--resume", "1", "--db", db, "--budget", "9", "--llm-url", "https://k:pw@example.com/v1");
    expect_usage(&r, "carries a user name or password");
    tu_result_release(&r);
    assert_true(kevo_llm_url_check("http://127.0.0.1:8080/v1", NULL) == KEVO_OK);
    kevo_err err;
    assert_int_equal(kevo_llm_url_check("http://a@b/v1", &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_url_check("http://h%40st/v1", &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_url_check("http://host/v1/a@b", &err), KEVO_OK); /* an '@' in the path is no user */

    /* LLM options without the llm generator: a usage error, for a new run and a resume */
    const char *opts[][2] = {{"--llm-url", "http://127.0.0.1:9/v1"}, {"--llm-model", "m"}, {"--llm-budget", "3"},
                             {"--llm-timeout", "5"}, {"--prompts", "."}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", opts[i][0], opts[i][1], "--db", fresh);
        expect_usage(&r, "without --generators llm");
        tu_result_release(&r);
        r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--generators", "template", "--budget", "1", opts[i][0],
                opts[i][1], "--db", fresh);
        expect_usage(&r, "without --generators llm");
        tu_result_release(&r);
    }
    assert_false(access(fresh, F_OK) == 0);
    char tpl[PATH_MAX];
    path_in(tpl, sizeof tpl, "tpl.db");
    make_run(tpl, 1);
    r = RUN("tune", "--resume", "1", "--db", tpl, "--budget", "2", "--llm-url", "http://127.0.0.1:9/v1");
    expect_usage(&r, "searches without the LLM");
    tu_result_release(&r);
    assert_int_equal(tu_query_int(tpl, "SELECT count(*) FROM candidates"), 1);

    /* generator options a DB holds that are not a JSON object: refused by name before anything runs */
    raw_exec(db, "UPDATE run_generators SET options = '{\"budget\":' WHERE run_id = 1 AND name = 'llm'");
    int before = tu_query_int(db, "SELECT count(*) FROM candidates");
    r = RUN("tune", "--resume", "1", "--db", db, "--budget", "11");
    expect_status(&r, 1, "the options of generator 'llm' of run 1");
    tu_result_release(&r);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates"), before);
}

/* ---- 3. everything compiled from a DB is admitted again ---- */

/* A stored LLM candidate's source replaced by src, its family renamed to
 * the hash of the new text (as an attacker would), and marked pending (a
 * resume compiles it first). */
static void tamper_source(const char *db, const char *src)
{
    char *space = query_text(db, "SELECT space FROM generations WHERE source IS NOT NULL");
    assert_non_null(space);
    char fam[17];
    kevo_llm_family(space, src, fam);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "UPDATE generations SET source = ?1 WHERE source IS NOT NULL", -1, &st,
                                        NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, src, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(h, "UPDATE candidates SET family = ?1, status = 'pending' WHERE id = "
                                           "(SELECT candidate_id FROM generations WHERE source IS NOT NULL)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, fam, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_exec(h, "UPDATE runs SET status = 'interrupted'", NULL, NULL, NULL);
    sqlite3_close(h);
    free(space);
}

/* The good fixture's source with a line put before its first line. */
static char *with_line(const char *good, const char *line)
{
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_printf(&b, "%s\n%s", line, good);
    return kv_buf_take(&b);
}

static void test_admit(void **state)
{
    (void)state;
    char base[PATH_MAX], db[PATH_MAX], secret[PATH_MAX];
    path_in(base, sizeof base, "admit-base.db");
    make_llm_run(base);
    path_in(secret, sizeof secret, "secret.h");
    tu_write_text(secret, "int SECRET_TOKEN_7f3a = 1; garbage here\n");
    char *good = query_text(base, "SELECT source FROM generations WHERE source IS NOT NULL");
    char *space = query_text(base, "SELECT space FROM generations WHERE source IS NOT NULL");
    assert_non_null(good);
    assert_non_null(space);
    char inc[PATH_MAX + 32], rel[64];
    snprintf(inc, sizeof inc, "#include \"%s\"", secret);
    snprintf(rel, sizeof rel, "#include \"secret.h\"");
    struct {
        const char *line, *why;
    } bad[] = {
        {inc, "#include of"},
        {rel, "#include of 'secret.h'"},
        {"#if __has_include(\"/etc/passwd\")\n#endif", "__has_include"},
        {"__device__ float *at_k() { return (float *)0x7f0000001000ull; }", "made from an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path_in(db, sizeof db, "admit.db");
        copy_file(base, db);
        char *src = with_line(good, bad[i].line);
        tamper_source(db, src);
        long long rows = tu_query_int(db, "SELECT count(*) FROM candidates");
        tu_result r = RUN("tune", "--resume", "1", "--db", db, "--budget", "6");
        expect_status(&r, 1, "is refused as a fresh reply would be (rejected)");
        if (!strstr(r.err, bad[i].why))
            fail_msg("case %zu: want \"%s\" in: %s", i, bad[i].why, r.err);
        assert_null(strstr(r.err, "SECRET_TOKEN_7f3a"));
        assert_null(strstr(r.out, "SECRET_TOKEN_7f3a"));
        tu_result_release(&r);
        assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates"), rows);
        assert_int_equal(tu_query_int(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
        /* the same admission as a function (what export calls) */
        kevo_generation_row g;
        kevo_generation_row_init(&g);
        g.candidate_id = 42;
        g.space = space;
        g.source = src;
        char fam[17];
        kevo_llm_family(space, src, fam);
        kevo_space *sp = (kevo_space *)1;
        kevo_err err;
        assert_int_equal(kevo_llm_admit(&g, fam, tu_op("ikbo_lce"), "sm_90a", &sp, &err), KEVO_ERR_PARSE);
        assert_null(sp);
        assert_non_null(strstr(err.msg, "candidate 42"));
        free(src);
    }
    /* the good one is admitted; a wrong family, another op or arch, or a broken plan are not */
    kevo_generation_row g;
    kevo_generation_row_init(&g);
    g.candidate_id = 7;
    g.space = space;
    g.source = good;
    char fam[17];
    kevo_llm_family(space, good, fam);
    kevo_space *sp = NULL;
    kevo_err err;
    assert_int_equal(kevo_llm_admit(&g, fam, tu_op("ikbo_lce"), "sm_90a", &sp, &err), KEVO_OK);
    assert_string_equal(sp->family, fam);
    kevo_space_free(sp);
    assert_int_equal(kevo_llm_admit(&g, "llm_000000000000", tu_op("ikbo_lce"), NULL, &sp, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "do not hash to its family"));
    assert_int_equal(kevo_llm_admit(&g, fam, tu_op("ikbo_fa"), NULL, &sp, &err), KEVO_ERR_PARSE);
    assert_int_equal(kevo_llm_admit(&g, fam, tu_op("ikbo_lce"), "sm_70x", &sp, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "\"archs\" does not list"));
    g.space = "{\"family\":\"llm\",\"op\":\"ikbo_lce\",\"launches\":[{\"entry\":\"k\",\"grid\":[\"1/0\"]}]}";
    kevo_llm_family(g.space, good, fam);
    assert_int_equal(kevo_llm_admit(&g, fam, tu_op("ikbo_lce"), NULL, &sp, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "parse_error"));
    free(good);
    free(space);

    /* warm start: another DB's winners seed a run only within their family's domains */
    char warm[PATH_MAX], fresh[PATH_MAX];
    path_in(warm, sizeof warm, "warm.db");
    path_in(fresh, sizeof fresh, "warm-fresh.db");
    copy_file(base, warm);
    char *params = query_text(warm, "SELECT params FROM candidates WHERE id = (SELECT min(id) FROM candidates WHERE "
                                    "family = 'lce_mma')");
    assert_non_null(params);
    char *badp = kv_strdup(params);
    char *bm = strstr(badp, "\"BM\":");
    assert_non_null(bm);
    bm[5] = '7'; /* BM=7: no value of its domain */
    while (bm[6] >= '0' && bm[6] <= '9')
        memmove(bm + 6, bm + 7, strlen(bm + 7) + 1);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "UPDATE runs SET compile_only = 0, status = 'done';"
             "UPDATE candidates SET status = 'ok', speedup = 3.0, median_ms = 0.5 WHERE id = (SELECT min(id) FROM "
             "candidates WHERE family = 'lce_mma');"
             "INSERT INTO runs(op, shape, dtype, arch, policy, families, compile_only, status) SELECT op, shape, "
             "dtype, arch, policy, families, 0, 'done' FROM runs WHERE id = 1;"
             "INSERT INTO candidates(run_id, seq, family, params, status, speedup, median_ms) VALUES"
             "(2, 1, 'lce_mma', '%s', 'ok', 4.0, 0.4);",
             badp);
    raw_exec(warm, sql);
    tu_result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                   "--warm-start", warm, "--db", fresh);
    expect_status(&r, 0, NULL);
    char want[600];
    snprintf(want, sizeof want, "warm start: lce_mma %s, winner of run 1", params);
    assert_non_null(strstr(r.out, want));
    assert_null(strstr(r.out, "winner of run 2")); /* BM=7 seeds nothing */
    tu_result_release(&r);
    free(params);
    free(badp);
}

/* ---- 4. NVRTC sees no file system for LLM code ---- */

static bool have_landlock(void)
{
#ifdef SYS_landlock_create_ruleset
    return syscall(SYS_landlock_create_ruleset, NULL, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */) >= 1;
#else
    return false;
#endif
}

/* Compile src as program name (the toolkit's -I folders), one job. */
static void compile_as(const char *name, const char *src, kevo_compile_job *job)
{
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(job, name, src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(job, 1, 1, 120, &err), KEVO_OK);
}

static void test_nvrtc(void **state)
{
    (void)state;
    char secret[PATH_MAX], cwd[PATH_MAX];
    path_in(secret, sizeof secret, "nv-secret.h");
    tu_write_text(secret, "int SECRET_TOKEN_b00c = 1; garbage here\n");
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tmpdir), 0); /* a relative include would find it here */
    bool ll = have_landlock();
    printf("Landlock %s\n", ll ? "available: reads outside the toolkit fail" : "not available here");
    char src[PATH_MAX + 256];
    const char *forms[] = {"#include \"%s\"\n__global__ void k() {}\n", "#include \"nv-secret.h\"\n__global__ void "
                           "k() {}\n%s"};
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, forms[i], i == 0 ? secret : "");
        kevo_compile_job job;
        compile_as(KEVO_COMPILE_UNTRUSTED_NAME, src, &job);
        printf("untrusted log %d (%s):\n%s\n", i, kevo_fail_name(job.fail), job.log ? job.log : "");
        assert_int_equal(job.fail, KEVO_FAIL_COMPILE_ERROR);
        assert_null(strstr(job.log, "SECRET_TOKEN_b00c"));
        assert_null(strstr(job.log, "garbage"));
        kevo_compile_job_release(&job);
        /* the same source as a template's (trusted: the user's own files) does read it */
        compile_as("tpl.cu", src, &job);
        if (i == 0)
            assert_non_null(strstr(job.log, "SECRET_TOKEN_b00c"));
        kevo_compile_job_release(&job);
    }
    /* __has_include of an existing file: nothing is there for an untrusted compile (with Landlock) */
    snprintf(src, sizeof src, "#if __has_include(\"%s\")\n#error kevo-found-it\n#endif\n__global__ void k() {}\n",
             secret);
    kevo_compile_job job;
    compile_as(KEVO_COMPILE_UNTRUSTED_NAME, src, &job);
    if (ll)
        assert_int_equal(job.fail, KEVO_FAIL_NONE);
    kevo_compile_job_release(&job);
    /* the toolkit's headers are there */
    compile_as(KEVO_COMPILE_UNTRUSTED_NAME,
               "#include <cuda_fp16.h>\n#include <cuda/ptx>\nextern \"C\" __global__ void k(__half *p) { p[0] = "
               "__float2half(1.0f); }\n",
               &job);
    if (job.fail != KEVO_FAIL_NONE)
        fail_msg("toolkit headers: %s", job.log ? job.log : "");
    kevo_compile_job_release(&job);
    assert_int_equal(chdir(cwd), 0);

    /* the log scrub: another file's diagnostic and its quoted lines withheld, toolkit paths cut */
    kevo_compile_job j;
    kevo_err err;
    /* a reply that kept a template's inlined header behind its #line marker: those lines are its own */
    assert_int_equal(kevo_compile_job_init(&j, KEVO_COMPILE_UNTRUSTED_NAME, "#line 1 \"dtype.cuh\"\nint x;\n",
                                           "sm_90a", &err),
                     KEVO_OK);
    const char *inc = NULL;
    for (int i = 0; i < j.nopts && !inc; i++)
        if (strncmp(j.opts[i], "-I", 2) == 0 && !strstr(j.opts[i], "cccl"))
            inc = j.opts[i] + 2;
    assert_non_null(inc);
    char log[2048];
    snprintf(log, sizeof log,
             "/home/u/.ssh/id_rsa(1): error: identifier \"SECRET\" is undefined\n  SECRET KEY TEXT\n  ^\n\n"
             "llm(5): error: expected a \";\"\n  int x = 1\n           ^\n\n"
             "%s/cuda_fp16.hpp(10): warning #177-D: variable \"v\" was declared but never referenced\n"
             "          detected during instantiation at line 3 of %s/cuda/ptx\n\n"
             "dtype.cuh(1): error: its own line\n  int x;\n  ^\n\n"
             "/etc/dtype.cuh(1): error: not its own\n  TEXT OF ANOTHER FILE\n\n"
             "3 errors detected in the compilation of \"llm\".\n",
             inc ? inc : "", inc ? inc : "");
    kevo_compile_log_scrub(&j, log, true);
    printf("scrubbed:\n%s\n", log);
    assert_null(strstr(log, "SECRET"));
    assert_null(strstr(log, "/home/u"));
    assert_null(strstr(log, inc));
    assert_non_null(strstr(log, "(a file kevo did not hand the compiler)(1): error: withheld"));
    assert_non_null(strstr(log, "llm(5): error: expected a \";\"\n  int x = 1\n"));
    assert_non_null(strstr(log, "cuda_fp16.hpp(10): warning #177-D: variable"));
    assert_non_null(strstr(log, "3 errors detected"));
    assert_non_null(strstr(log, "dtype.cuh(1): error: its own line\n  int x;\n"));
    assert_null(strstr(log, "TEXT OF ANOTHER FILE"));
    assert_null(strstr(log, "/etc/"));

    /* the static check: pointers made from integers, constant PTX addresses, file probes */
    struct {
        const char *body, *why;
    } bad[] = {
        {"*(float *)0x7f0000001000ull = 1.0f;", "made from an integer"},
        {"unsigned long long addr = 4096; float *p = reinterpret_cast<float *>(addr); p[0] = 1.0f;",
         "made from an integer"},
        {"float *p = (float *)((unsigned long long)a.out + 64); p[0] = 1.0f;", "made from an integer"},
        {"const float v = *reinterpret_cast<const float *>(1234567ull); out[i] = __float2half(v);",
         "made from an integer"},
        {"asm volatile(\"st.global.u32 [0x7f0000001000], %0;\" :: \"r\"(1));", "constant address"},
        {"unsigned v; asm volatile(\"ld.global.u32 %0, [4096];\" : \"=r\"(v)); out[i] = __float2half((float)v);",
         "constant address"},
        {"unsigned long long g; asm volatile(\"cvta.to.global.u64 %0, 4096;\" : \"=l\"(g));", "from a number"},
        {"asm volatile(\"st.global.u32 [%0], %1;\" :: \"l\"(0x7f0000001000ull), \"r\"(1));",
         "addresses memory at an integer"},
        {"float *g = (float *)__cvta_global_to_generic(4096); g[0] = 1.0f;", "__cvta_global_to_generic"},
        {"#if __has_include(\"/etc/shadow\")\n#endif", "__has_include"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kv_buf b;
        kv_buf_init(&b);
        kv_buf_printf(&b,
                      "#include <cuda_fp16.h>\nextern \"C\" __global__ void k(const __grid_constant__ kevo_lce_args "
                      "a)\n{\n    __half *out = static_cast<__half *>(a.out);\n    const int i = threadIdx.x;\n"
                      "    %s\n    out[i] = __float2half(0.0f);\n}\n",
                      bad[i].body);
        char why[512] = "";
        bool ok = kevo_llm_check_source(b.data, lce_inputs, 9, lce_outputs, 2, why, sizeof why);
        if (ok || !strstr(why, bad[i].why))
            fail_msg("case %zu: %s, '%s' (want '%s')", i, ok ? "accepted" : "rejected", why, bad[i].why);
        kv_buf_release(&b);
    }
    /* what stays allowed: pointer arithmetic, the null pointer, shared-memory addresses as integers */
    const char *fine[] = {
        "float *p = (float *)a.workspace + 16; p[0] = 1.0f;",
        "float *p = (float *)0; (void)p;",
        "__shared__ float s[32]; unsigned sa = (unsigned)__cvta_generic_to_shared(s); float v; asm volatile("
        "\"ld.shared.f32 %0, [%1];\" : \"=f\"(v) : \"r\"(sa)); out[i] = __float2half(v);",
        "char *w = static_cast<char *>(a.workspace); float *f = reinterpret_cast<float *>(w + 4 * i); f[0] = 1.0f;",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        kv_buf b;
        kv_buf_init(&b);
        kv_buf_printf(&b,
                      "#include <cuda_fp16.h>\nextern \"C\" __global__ void k(const __grid_constant__ kevo_lce_args "
                      "a)\n{\n    __half *out = static_cast<__half *>(a.out);\n    const int i = threadIdx.x;\n"
                      "    %s\n    out[i] = __float2half(0.0f);\n}\n",
                      fine[i]);
        char why[512] = "";
        if (!kevo_llm_check_source(b.data, lce_inputs, 9, lce_outputs, 2, why, sizeof why))
            fail_msg("fine case %zu rejected: %s", i, why);
        kv_buf_release(&b);
    }
}

/* ---- 5. DB text in the SVG and on the terminal ---- */

static void test_escape(void **state)
{
    (void)state;
    char db[PATH_MAX], svg[PATH_MAX];
    path_in(db, sizeof db, "escape.db");
    path_in(svg, sizeof svg, "escape.svg");
    make_run(db, 1);
    /* the four statuses that once made a well-formed SVG holding a <script>, and bytes XML forbids */
    raw_exec(db, "INSERT INTO candidates(run_id, seq, family, params, status, speedup, median_ms) VALUES"
                 "(1, 2, 'lce_mma', '{\"a\":1}', '</title></circle><script>', NULL, NULL),"
                 "(1, 3, 'lce_mma', '{\"a\":2}', 'alert(document.domain)', NULL, NULL),"
                 "(1, 4, 'lce_mma', '{\"a\":3}', '</script><circle><title>', NULL, NULL),"
                 "(1, 5, 'lce_mma', '{\"a\":4}', '<image href=\"x\" onerror=\"alert(1)\"/>', NULL, NULL),"
                 "(1, 6, 'lce_mma', '{\"a\":5}', 'x' || char(27) || '[2J' || char(1) || cast(x'ff' as text), NULL,"
                 " NULL),"
                 "(1, 7, 'lce_mma', '{\"a\":6}', ']]><!-- &bogus; ' || char(65534), NULL, NULL)");
    tu_result r = RUN("report", "--db", db, "--svg", svg);
    expect_status(&r, 0, "wrote");
    tu_result_release(&r);
    size_t len = 0;
    char *doc = slurp(svg, &len);
    kv_buf names;
    kv_buf_init(&names);
    const char *why = svgc_check(doc, len, &names);
    if (why)
        fail_msg("%s:\n%s", why, doc);
    assert_null(strstr(doc, "<script"));
    assert_null(strstr(doc, "<image"));
    assert_non_null(strstr(doc, ": &lt;/title&gt;&lt;/circl</title>")); /* escaped (a status holds 15 bytes) */
    kv_buf_release(&names);
    free(doc);
    /* the terminal: the table's lines carry no control character */
    r = RUN("report", "--db", db);
    expect_status(&r, 0, NULL);
    for (const unsigned char *p = (const unsigned char *)r.out; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            fail_msg("report holds byte 0x%02x:\n%s", *p, r.out);
    tu_result_release(&r);
}

/* ---- 6. one run, one writer ---- */

static void test_writer(void **state)
{
    (void)state;
    char db[PATH_MAX];
    path_in(db, sizeof db, "writer.db");
    make_run(db, 1);
    raw_exec(db, "UPDATE runs SET status = 'interrupted'");
    /* two resumes started together: exactly one goes on, the other names the holder */
    char outs[2][PATH_MAX];
    int pids[2];
    for (int k = 0; k < 2; k++) {
        snprintf(outs[k], sizeof outs[k], "%s/resume-%d.log", tmpdir, k);
        char *args[] = {"kevo", "tune", "--resume", "1", "--db", db, "--budget", "6", "--jobs", "1", "--quiet", NULL};
        pids[k] = tu_spawn(outs[k], args);
    }
    int rc[2] = {tu_wait(pids[0]), tu_wait(pids[1])};
    char *log[2] = {tu_read_text(outs[0]), tu_read_text(outs[1])};
    printf("resume A: %d %sresume B: %d %s", rc[0], log[0], rc[1], log[1]);
    assert_true((rc[0] == 0) != (rc[1] == 0));
    int loser = rc[0] == 0 ? 1 : 0;
    assert_int_equal(rc[loser], 1);
    char want[64];
    snprintf(want, sizeof want, "held by process %d", pids[1 - loser]);
    assert_true(strstr(log[loser], want) || strstr(log[loser], "was taken by process"));
    free(log[0]);
    free(log[1]);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates"), 6);
    assert_int_equal(tu_query_int(db, "SELECT status = 'done' FROM runs WHERE id = 1"), 1);

    /* under an MPI launcher without --mpi: a warning that the N processes make N runs */
    char db2[PATH_MAX];
    path_in(db2, sizeof db2, "mpi.db");
    tu_result r = RUN_ENV("OMPI_COMM_WORLD_SIZE=3", "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma",
                       "--budget", "1", "--db", db2, "--quiet");
    expect_status(&r, 0, "this makes 3 independent runs");
    tu_result_release(&r);

    /* past the file size limit (SIGXFSZ): the run is interrupted, the command to resume it printed */
    char db3[PATH_MAX];
    path_in(db3, sizeof db3, "xfsz.db");
    r = run_kevo_with(NULL, 400 * 1024,
                      (const char *const[]){"tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma",
                                            "--budget", "12", "--jobs", "2", "--db", db3, "--quiet", NULL});
    expect_status(&r, 128 + SIGXFSZ, "interrupted by SIGXFSZ");
    assert_non_null(strstr(r.err, "continue it with: kevo tune --resume 1 --db"));
    tu_result_release(&r);
    assert_int_equal(tu_query_int(db3, "SELECT status = 'interrupted' FROM runs WHERE id = 1"), 1);
    r = RUN("tune", "--resume", "1", "--db", db3, "--quiet");
    expect_status(&r, 0, NULL);
    tu_result_release(&r);
    assert_int_equal(tu_query_int(db3, "SELECT status = 'done' FROM runs WHERE id = 1"), 1);

    /* SIGHUP (a closed terminal): the same */
    char db4[PATH_MAX], log4[PATH_MAX];
    path_in(db4, sizeof db4, "hup.db");
    path_in(log4, sizeof log4, "hup.log");
    char *args[] = {"kevo", "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "40",
                    "--jobs", "1", "--db", db4, "--quiet", NULL};
    signal(SIGHUP, SIG_DFL); /* as a terminal's session has it (the child inherits it) */
    int pid = tu_spawn(log4, args);
    assert_true(tu_wait_query(db4, "SELECT count(*) FROM candidates WHERE status = 'compiled'", 1, 60000) >= 1);
    kill(pid, SIGHUP);
    int st = tu_wait(pid);
    char *l4 = tu_read_text(log4);
    if (st != 128 + SIGHUP || !strstr(l4, "interrupted by SIGHUP"))
        fail_msg("SIGHUP: exit %d\n%s", st, l4);
    free(l4);
    assert_int_equal(tu_query_int(db4, "SELECT status = 'interrupted' FROM runs WHERE id = 1"), 1);
}

/* ---- 7. hostile folders, checked before the run starts ---- */

static void test_folders(void **state)
{
    (void)state;
    char dir[PATH_MAX], fifo[PATH_MAX + 32], db[PATH_MAX];
    path_in(dir, sizeof dir, "tpl");
    path_in(db, sizeof db, "folders.db");
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(fifo, sizeof fifo, "%s/evil.json", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    double t0 = kv_now();
    tu_result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--templates", dir, "--db", db);
    expect_status(&r, 1, "is not a regular file (a FIFO)");
    tu_result_release(&r);
    assert_true(kv_now() - t0 < 30);
    assert_false(access(db, F_OK) == 0);
    unlink(fifo);
    /* a device behind a space file's name, and a FIFO as a family's source */
    assert_int_equal(symlink("/dev/zero", fifo), 0);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--templates", dir, "--db", db);
    expect_status(&r, 1, "is not a regular file (a device)");
    tu_result_release(&r);
    unlink(fifo);
    char json[PATH_MAX + 32], cu[PATH_MAX + 32];
    char *text = tu_read_src("templates/lce_mma.json");
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON_DeleteItemFromObject(root, "include");
    cJSON_ReplaceItemInObject(root, "family", cJSON_CreateString("evil_mma"));
    cJSON_ReplaceItemInObject(root, "source", cJSON_CreateString("evil.cu"));
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    snprintf(json, sizeof json, "%s/evil.json", dir);
    snprintf(cu, sizeof cu, "%s/evil.cu", dir);
    tu_write_text(json, out);
    free(out);
    assert_int_equal(mkfifo(cu, 0600), 0);
    t0 = kv_now();
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--templates", dir, "--db", db);
    expect_status(&r, 1, "evil.cu' is not a regular file (a FIFO)");
    tu_result_release(&r);
    assert_true(kv_now() - t0 < 30);
    assert_false(access(db, F_OK) == 0);

    /* a prompts folder without system.md, then without the op's file: refused before anything compiles */
    char pr[PATH_MAX], kn[PATH_MAX + 16], path[PATH_MAX + 64];
    path_in(pr, sizeof pr, "prompts");
    snprintf(kn, sizeof kn, "%s/knowledge", pr);
    assert_int_equal(mkdir(pr, 0700), 0);
    assert_int_equal(mkdir(kn, 0700), 0);
    snprintf(path, sizeof path, "%s/k.md", kn);
    tu_write_text(path, "## tiles\nBM and BN.\n");
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--generators", "llm", "--llm-url",
            "http://127.0.0.1:9/v1", "--prompts", pr, "--db", db);
    expect_status(&r, 1, "system.md");
    assert_null(strstr(r.out, "compiled"));
    tu_result_release(&r);
    assert_false(access(db, F_OK) == 0);
    snprintf(path, sizeof path, "%s/system.md", pr);
    tu_write_text(path, "You write CUDA.\n");
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--generators", "llm", "--llm-url",
            "http://127.0.0.1:9/v1", "--prompts", pr, "--db", db);
    expect_status(&r, 1, "ops/ikbo_lce.md");
    tu_result_release(&r);
    assert_false(access(db, F_OK) == 0);
    /* and system.md a FIFO: refused at once, not waited on */
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    t0 = kv_now();
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--generators", "llm", "--llm-url",
            "http://127.0.0.1:9/v1", "--prompts", pr, "--db", db);
    expect_status(&r, 1, "is not a regular file (a FIFO)");
    tu_result_release(&r);
    assert_true(kv_now() - t0 < 30);
}

/* ---- 8. exit codes and messages ---- */

static void test_usage(void **state)
{
    (void)state;
    char db[PATH_MAX], none[PATH_MAX], out[PATH_MAX];
    path_in(db, sizeof db, "usage.db");
    path_in(none, sizeof none, "never.db");
    path_in(out, sizeof out, "lib");
    make_run(db, 1);
    char sha[65], now[65];
    file_sha(db, sha);
    struct {
        const char *args[16];
        const char *why;
    } cases[] = {
        {{"export", "--db", db, "--out", out, "--op", "nope"}, "unknown op 'nope'"},
        {{"export", "--db", db, "--out", out, "--arch", "sm_70"}, "unknown arch 'sm_70'"},
        {{"export", "--db", db, "--out", out, "--arch", "sm_90a,sm_90a"}, "'sm_90a' is listed twice"},
        {{"export", "--db", none, "--out", out, "--op", "nope"}, "unknown op 'nope'"},
        {{"verify", "--db", none, "--dtype", "fp8"}, "unknown dtype 'fp8'"},
        {{"verify", "--db", none, "--arch", "sm_70"}, "sm_70"},
        {{"verify", "--db", none, "--maps", "sorted,sorted"}, "'sorted' is listed twice"},
        {{"tune", "--op", "ikbo_lce", "--family", "lce_ws", "--arch", "sm_80", "--compile-only", "--db", none},
         "--family lce_ws does not target sm_80"},
        {{"tune", "--op", "ikbo_lce", "--family", "", "--compile-only", "--db", none}, "--family: the list is empty"},
        {{"tune", "--op", "ikbo_lce", "--family", "lce_mma,,lce_ws", "--compile-only", "--db", none},
         "an empty item"},
        {{"tune", "--op", "ikbo_lce", "--family", "lce_mma,lce_mma", "--compile-only", "--db", none},
         "'lce_mma' is listed twice"},
        {{"tune", "--op", "ikbo_lce", "--maps", "uneven,uneven", "--compile-only", "--db", none},
         "'uneven' is listed twice"},
        {{"tune", "--op", "ikbo_lce", "--generators", "llm,llm", "--compile-only", "--db", none},
         "'llm' is listed twice"},
        {{"tune", "--op", "ikbo_lce", "--arch", "sm_80,sm_80", "--compile-only", "--db", none},
         "'sm_80' is listed twice"},
        {{"tune", "--op", "ikbo_lce", "--devices", "0,0", "--db", none}, "'0' is listed twice"},
        {{"report", "--db", db, "--svg", out, "--format", "json"}, "--svg and --format exclude each other"},
        {{"replay", "--db", none, "--policy", "nope"}, "unknown policy 'nope'"},
        {{"verify", "--db", none, "--shape", "X=1"}, "unknown shape key 'X'"},
        {{"tune", "--op", "ikbo_lce", "--policy", "nope", "--db", none}, "unknown policy 'nope'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_result r = run_kevo_with(NULL, 0, cases[i].args);
        if (r.status != 2 || !strstr(r.err, cases[i].why))
            fail_msg("case %zu: exit %d, want 2 with \"%s\"\n%s%s", i, r.status, cases[i].why, r.out, r.err);
        tu_result_release(&r);
    }
    file_sha(db, now);
    assert_string_equal(now, sha);
    assert_false(access(none, F_OK) == 0);
    assert_false(access(out, F_OK) == 0);

    /* replay's JSON: null where a figure is not finite (a crafted landscape's infinite speedup) */
    char land[PATH_MAX], fixture[PATH_MAX];
    path_in(land, sizeof land, "land.db");
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/landscape/lce_mma_h200.db", tu_home());
    copy_file(fixture, land);
    raw_exec(land, "UPDATE candidates SET speedup = 1e999 WHERE id = (SELECT min(id) FROM candidates WHERE "
                   "status = 'ok')");
    const char *modes[][2] = {{"--policy", "greedy"}, {"--model", NULL}};
    for (int m = 0; m < 2; m++) {
        tu_result r = modes[m][1] ? RUN("replay", "--db", land, modes[m][0], modes[m][1], "--seeds", "2", "--format",
                                     "json")
                               : RUN("replay", "--db", land, modes[m][0], "--format", "json");
        if (r.status == 0) {
            assert_null(strcasestr(r.out, "inf"));
            assert_null(strcasestr(r.out, "nan"));
            cJSON *j = cJSON_Parse(r.out);
            if (!j)
                fail_msg("replay JSON does not parse: %s", r.out);
            cJSON_Delete(j);
        } else {
            expect_status(&r, 1, NULL); /* refused: a failure, never a number JSON cannot hold */
        }
        tu_result_release(&r);
    }

    /* a GPU run resumed on a machine without a GPU: refused before anything is written */
    if (!tu_have_gpu()) {
        char gpu[PATH_MAX], wal[PATH_MAX + 8];
        path_in(gpu, sizeof gpu, "gpu.db");
        copy_file(db, gpu);
        raw_exec(gpu, "UPDATE runs SET compile_only = 0, status = 'interrupted'");
        file_sha(gpu, sha);
        tu_result r = RUN("tune", "--resume", "1", "--db", gpu, "--budget", "3");
        expect_status(&r, 1, "run 1 was timed on a GPU");
        tu_result_release(&r);
        file_sha(gpu, now);
        assert_string_equal(now, sha);
        snprintf(wal, sizeof wal, "%s-wal", gpu);
        assert_false(access(wal, F_OK) == 0);
    }

    /* a NUL in a reply is named as such */
    char url[64];
    int srv = start_llm("nul", "raw=\"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":\\\"a\\\\u0000b\\\"}}]}\"\n",
                        url, sizeof url);
    kevo_llm_config c;
    kevo_llm_config_init(&c);
    c.url = url;
    c.max_retries = 0;
    kevo_llm_reply rep;
    kevo_err err;
    assert_int_equal(kevo_llm_chat(&c, "s", "u", &rep, &err), KEVO_OK);
    assert_false(rep.ok);
    assert_non_null(strstr(rep.error, "NUL character"));
    kevo_llm_reply_release(&rep);
    tu_fake_llm_stop(srv);

    /* --templates is in the README's command line and in tune --help */
    char *readme = tu_read_src("README.md");
    const char *cl = strstr(readme, "## Command line");
    assert_non_null(cl);
    const char *end = strstr(cl, "\n## ");
    char *templates = strstr(cl, "[--templates DIR]");
    assert_true(templates && (!end || templates < end));
    free(readme);
    tu_result r = RUN("tune", "--help");
    expect_status(&r, 0, "--templates DIR");
    tu_result_release(&r);
}

/* ---- the cases: one per ctest test, named by argv[1] (all without one) ---- */

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-secin-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest all[] = {
        cmocka_unit_test_setup_teardown(test_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_llmurl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nvrtc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_folders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
    };
    if (argc < 2)
        return cmocka_run_group_tests(all, NULL, NULL);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(all[i].name + 5, argv[1]) != 0) /* "test_" + the case */
            continue;
        const struct CMUnitTest one[] = {all[i]};
        return cmocka_run_group_tests(one, NULL, NULL);
    }
    fprintf(stderr, "usage: test_security_input [output|llmurl|admit|nvrtc|escape|writer|folders|usage]\n");
    return 2;
}
