/* test_llm_tune.c — the LLM generator end to end, against a loopback
 * OpenAI-compatible server (kevo_fake_llm) serving fixed replies, through
 * the kevo binary (compile-only, no GPU):
 *   a good kernel, a compile error, a wrong result (compiles: only a GPU
 *   tells), reward hacks (writes an input, returns a constant, reads the
 *   output first), HTTP 429 then 200, HTTP 500, a timeout, finish_reason
 *   length, malformed JSON, a reply without a code block, a reply with host
 *   code.  Each call ends as a candidate with the right status or failure
 *   kind and a generations row; the run that was in the DB before is
 *   untouched; the API key reaches the server and never the DB or the log.
 * Then: the run resumed on this GPU-less machine with an unreachable LLM
 * goes on with templates, saying so in one line; export takes an LLM
 * candidate from the DB alone; report's JSON names each candidate's
 * generator. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/util.h"

#define KEY "sk-test-SECRET-5b1e0c"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-llmtune-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rm_tree(tmpdir);
    return 0;
}

/* Run kevo with args (NULL-terminated, without argv[0]); its exit status,
 * stdout and stderr together in *out (caller frees). */
static int run_kevo(char **out, ...)
{
    char *args[48] = {"kevo"};
    int n = 1;
    va_list ap;
    va_start(ap, out);
    for (char *a; n < 47 && (a = va_arg(ap, char *)) != NULL;)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/kevo.log", tmpdir);
    return tu_run(log, out, args);
}

/* The fixture replies' folder. */
static void fixtures(char *out, size_t n)
{
    snprintf(out, n, "%s/tests/fixtures/llm", KEVO_SOURCE_DIR);
}

/* One text column of the DB, or NULL (caller frees). */
static char *query_text(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    char *v = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
            sqlite3_column_text(st, 0))
            v = kv_strdup((const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return v;
}

/* Whether needle occurs in the bytes of a file. */
static bool file_has(const char *path, const char *needle)
{
    char *text = NULL;
    size_t len = 0;
    kevo_err err;
    if (kv_read_file(path, &text, &len, &err))
        return false;
    bool found = memmem(text, len, needle, strlen(needle)) != NULL;
    free(text);
    return found;
}

/* The calls in order: the script line(s) each call consumes and what the
 * candidate it makes must be (status, and failure kind when failed). */
static const struct {
    const char *lines;
    const char *status, *fail;
} calls[] = {
    {"content=@good.txt", "compiled", ""},
    {"content=@compile_error.txt", "failed", "compile_error"},
    {"content=@wrong.txt", "compiled", ""},            /* only a GPU can tell it is wrong */
    {"content=@hack_input.txt", "failed", "rejected"}, /* writes E_cand */
    {"content=@hack_const.txt", "compiled", ""},       /* a constant: wrong_result on a GPU */
    /* reads the poisoned output: templates read what an earlier launch of their plan wrote, so only the GPU's
     * poisoned output (NaN) catches it (test_gpu_llm) */
    {"content=@hack_read_out.txt", "compiled", ""},
    {"status=429 retry_after=1\ncontent=@good.txt", "failed", "rejected"}, /* retried; then a repeat of call 1 */
    {"status=500\nstatus=500", "failed", "gen_error"}, /* tried twice (--llm-retries 1) */
    {"delay_ms=6000 content=@good.txt", "failed", "gen_error"}, /* past --llm-timeout 2: not tried again */
    {"finish=length content=@half.txt", "failed", "gen_error"},
    {"raw=@malformed.json", "failed", "gen_error"},
    {"content=@nocode.txt", "failed", "parse_error"},
    {"content=@host.txt", "failed", "rejected"},
};
#define NCALLS ((int)(sizeof calls / sizeof calls[0]))

static void test_llm_calls(void **state)
{
    (void)state;
    char fx[PATH_MAX], script[PATH_MAX + 32], db[PATH_MAX + 32], logdir[PATH_MAX + 32];
    fixtures(fx, sizeof fx);
    snprintf(script, sizeof script, "%s/script.txt", tmpdir);
    snprintf(db, sizeof db, "%s/llm.db", tmpdir);
    snprintf(logdir, sizeof logdir, "%s/requests", tmpdir);
    assert_int_equal(mkdir(logdir, 0700), 0);
    /* the script: fixture paths are absolute, the server reads them as it answers */
    kv_buf sc;
    kv_buf_init(&sc);
    for (int i = 0; i < NCALLS; i++) {
        const char *l = calls[i].lines;
        while (*l) {
            size_t len = strcspn(l, "\n");
            kv_buf_append(&sc, l, len);
            kv_buf_puts(&sc, "\n");
            l += len + (l[len] == '\n');
        }
    }
    /* fixture files are named relative to the script's folder: link them there */
    static const char *const files[] = {"good.txt", "compile_error.txt", "wrong.txt", "hack_input.txt",
                                        "hack_const.txt", "hack_read_out.txt", "half.txt", "malformed.json",
                                        "nocode.txt", "host.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[PATH_MAX + 64], to[PATH_MAX + 64];
        snprintf(from, sizeof from, "%s/%s", fx, files[i]);
        snprintf(to, sizeof to, "%s/%s", tmpdir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    kevo_err err;
    assert_int_equal(kv_write_file(script, sc.data, sc.len, &err), KEVO_OK);
    kv_buf_release(&sc);

    /* a run already in the DB (templates only) must come out untouched */
    char *out = NULL;
    int rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                      "--db", db, "--quiet", NULL);
    assert_int_equal(rc, 0);
    free(out);
    long long before = tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=1");
    char *before_bin = query_text(db, "SELECT binary_key || status FROM candidates WHERE run_id=1");
    assert_int_equal(before, 1);

    char url[64];
    int srv = tu_fake_llm_start(KEVO_FAKE_LLM, script, logdir, tmpdir, url, sizeof url);
    char budget[16], llm_budget[16];
    snprintf(llm_budget, sizeof llm_budget, "%d", NCALLS);
    snprintf(budget, sizeof budget, "%d", 2); /* the two template seeds; the calls are counted apart */
    setenv("KEVO_LLM_API_KEY", KEY, 1);
    rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", budget,
                  "--generators", "llm", "--llm-url", url, "--llm-model", "fake", "--llm-budget", llm_budget,
                  "--llm-timeout", "2", "--llm-retries", "1", "--llm-seed", "11", "--batch", "2", "--db", db,
                  "--no-bar", NULL);
    unsetenv("KEVO_LLM_API_KEY");
    tu_fake_llm_stop(srv);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, KEY)); /* never in the log */
    /* the last lines: the calls made, failed by kind, compiled */
    assert_non_null(strstr(out, "llm: 13 of 13 calls made; 9 failed ("));
    assert_non_null(strstr(out, "rejected 3"));
    assert_non_null(strstr(out, "; 4 compiled, 0 verified"));
    free(out);

    /* one generation and one candidate per call, in order, with an llm edge */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE run_id=2"), NCALLS);
    for (int i = 0; i < NCALLS; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT c.status || '/' || coalesce(c.fail, '') FROM generations g JOIN candidates c ON "
                 "c.id = g.candidate_id WHERE g.run_id = 2 ORDER BY g.candidate_id LIMIT 1 OFFSET %d",
                 i);
        char *got = query_text(db, sql);
        char want[64];
        snprintf(want, sizeof want, "%s/%s", calls[i].status, calls[i].fail);
        if (!got || strcmp(got, want) != 0)
            print_error("call %d: %s, want %s\n", i + 1, got ? got : "(none)", want);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
    }
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM edges e JOIN generations g ON g.candidate_id = "
                                      "e.child_id WHERE e.operator = 'llm' AND e.parent_id = g.parent_id"),
                     NCALLS);
    /* what the calls recorded: prompt and reply, usage, the seed moved on per call, the retry */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE prompt LIKE '%kevo_lce_args%' AND "
                                      "system_prompt IS NOT NULL AND model IS NOT NULL"),
                     NCALLS);
    /* replies with the kernel's name: all but the 500, the timeout, the malformed body and the prose */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE reply LIKE '%llm_lce_naive%'"),
                     NCALLS - 4);
    assert_int_equal(tu_query_int(db, "SELECT min(seed) FROM generations"), 11);
    assert_int_equal(tu_query_int(db, "SELECT max(attempts) FROM generations"), 2);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE finish_reason = 'length'"), 1);
    /* a source for every reply that parsed (the truncated one is not parsed) */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE source IS NOT NULL"), NCALLS - 5);
    /* the LLM candidates that compiled have the reply's plan */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id = 2 AND family LIKE 'llm%' "
                                      "AND status = 'compiled' AND plan LIKE '%llm_lce_naive%'"),
                     4);
    /* the first request carried the parent's source, the key as a bearer token, the options */
    char req[PATH_MAX + 64];
    snprintf(req, sizeof req, "%s/req-001.json", logdir);
    assert_true(file_has(req, "lce_cand_gemm"));
    assert_true(file_has(req, "\"model\":\"fake\"") || file_has(req, "\"model\": \"fake\""));
    snprintf(req, sizeof req, "%s/req-001.headers", logdir);
    assert_true(file_has(req, "Bearer " KEY));
    /* the key is nowhere in the DB, the run before is as it was */
    assert_false(file_has(db, KEY));
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=1"), before);
    char *after_bin = query_text(db, "SELECT binary_key || status FROM candidates WHERE run_id=1");
    assert_string_equal(after_bin, before_bin);
    free(before_bin);
    free(after_bin);

    /* report's JSON: every candidate with its generator, the run's LLM totals */
    rc = run_kevo(&out, "report", "--db", db, "--run", "2", "--format", "json", NULL);
    assert_int_equal(rc, 0);
    cJSON *root = cJSON_Parse(out);
    free(out);
    assert_non_null(root);
    cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
    cJSON *cands = cJSON_GetObjectItem(run, "candidates");
    int nllm = 0, ntpl = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        const char *g = cJSON_GetStringValue(cJSON_GetObjectItem(c, "generator"));
        assert_non_null(g);
        nllm += strcmp(g, "llm") == 0;
        ntpl += strcmp(g, "template") == 0;
    }
    assert_int_equal(nllm, NCALLS);
    assert_int_equal(ntpl, 2);
    /* the run's generators (--generators llm: the one), each by name with its options and calls */
    cJSON *gens = cJSON_GetObjectItem(run, "generators");
    assert_int_equal(cJSON_GetArraySize(gens), 1);
    cJSON *lg = cJSON_GetArrayItem(gens, 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(lg, "name")), "llm");
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(lg, "calls")), NCALLS);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(lg, "options"), "model")),
                        "fake");
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(lg, "tokens_in")) >= 0);
    cJSON_Delete(root);

    /* export takes an LLM candidate from the DB alone (its stored plan and source, checked against its hash).
     * A compile-only run has no winner: a copy of the DB says one LLM candidate was verified and beat the
     * peers (synthetic figures, only to reach export's LLM path) */
    char copy[PATH_MAX + 32], lib[PATH_MAX + 32];
    snprintf(copy, sizeof copy, "%s/export.db", tmpdir);
    snprintf(lib, sizeof lib, "%s/lib", tmpdir);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(kv_read_file(db, &text, &len, &err), KEVO_OK);
    assert_int_equal(kv_write_file(copy, text, len, &err), KEVO_OK);
    free(text);
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(copy, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h,
                                  "UPDATE runs SET compile_only = 0 WHERE id = 2;"
                                  "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms) VALUES"
                                  "(2, 0, 0, 'stage0', 'ok', 2), (2, 0, 0, 'decomposed', 'ok', 1);"
                                  "UPDATE candidates SET status = 'ok', median_ms = 0.5, speedup = 4, vs_peer = 2, "
                                  "fitness = 4 WHERE id = (SELECT min(candidate_id) FROM generations WHERE run_id = 2);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    rc = run_kevo(&out, "export", "--db", copy, "--out", lib, NULL);
    printf("%s", out);
    assert_int_equal(rc, 0);
    free(out);
    char csrc[PATH_MAX + 64];
    snprintf(csrc, sizeof csrc, "%s/src/kevo_tuned.c", lib);
    assert_true(file_has(csrc, "llm_lce_naive"));
    /* a stored source that no longer hashes to its family is refused, not exported */
    assert_int_equal(sqlite3_open(copy, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE generations SET source = source || ' ' WHERE candidate_id = "
                                     "(SELECT min(candidate_id) FROM generations WHERE run_id = 2);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    snprintf(lib, sizeof lib, "%s/lib2", tmpdir);
    rc = run_kevo(&out, "export", "--db", copy, "--out", lib, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "do not hash to its family"));
    free(out);

    /* resumed where no LLM answers (a GPU node): one line, then templates */
    rc = run_kevo(&out, "tune", "--resume", "2", "--db", db, "--budget", "3", "--llm-budget", "20", "--llm-url",
                  "http://127.0.0.1:9/v1", "--llm-retries", "0", "--no-bar", NULL);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "does not answer"));
    /* the last lines say the calls were cut short, and why */
    assert_non_null(strstr(out, "llm: stopped after 13 of 20 calls: the LLM does not answer"));
    free(out);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE run_id=2"), NCALLS);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=2"), NCALLS + 3);
    assert_int_equal(tu_query_int(db, "SELECT status = 'done' FROM runs WHERE id=2"), 1);
}

/* --llm-budget N makes N calls whatever --budget and --batch are: the calls
 * are counted apart from --budget (here 1, smaller than a batch of 8).  One
 * of the replies is a kernel without tunables ("params": {}): it compiles. */
/* A new folder tmpdir/<name>-requests for a fake server's request log. */
static void request_log(const char *name, char logdir[PATH_MAX + 32])
{
    snprintf(logdir, PATH_MAX + 32, "%s/%s-requests", tmpdir, name);
    assert_int_equal(mkdir(logdir, 0700), 0);
}

/* The body of the first request a fake server logged into logdir
 * (req-001.json), *len its bytes; caller frees. */
static char *first_request(const char *logdir, size_t *len)
{
    char req[PATH_MAX + 64];
    snprintf(req, sizeof req, "%s/req-001.json", logdir);
    char *body = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(req, &body, len, &err), KEVO_OK);
    return body;
}

/* A script in tmpdir (<name>.txt) that answers with the fixture replies
 * named, in order (one content=@<fixture> line each), and a DB path beside
 * it (<name>.db). */
static void scripted(const char *name, const char *const *replies, int nr, char script[PATH_MAX + 32],
                     char db[PATH_MAX + 32])
{
    char fx[PATH_MAX];
    fixtures(fx, sizeof fx);
    snprintf(script, PATH_MAX + 32, "%s/%s.txt", tmpdir, name);
    snprintf(db, PATH_MAX + 32, "%s/%s.db", tmpdir, name);
    kv_buf sc;
    kv_buf_init(&sc);
    for (int i = 0; i < nr; i++)
        kv_buf_printf(&sc, "content=@%s/%s\n", fx, replies[i]);
    kevo_err err;
    assert_int_equal(kv_write_file(script, sc.data, sc.len, &err), KEVO_OK);
    kv_buf_release(&sc);
}

static void test_llm_budget_apart(void **state)
{
    (void)state;
    char script[PATH_MAX + 32], db[PATH_MAX + 32];
    static const char *const replies[] = {"good.txt", "wrong.txt", "paramfree.txt"};
    scripted("apart", replies, 3, script, db);
    char url[64];
    int srv = tu_fake_llm_start(KEVO_FAKE_LLM, script, NULL, tmpdir, url, sizeof url);
    char *out = NULL;
    int rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                      "--batch", "8", "--generators", "template,llm", "--llm-url", url, "--llm-budget", "3", "--db",
                      db, "--no-bar", NULL);
    tu_fake_llm_stop(srv);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "llm: 3 of 3 calls made; 0 failed; 3 compiled"));
    assert_null(strstr(out, "stopped after"));
    free(out);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE run_id=1"), 3);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=1"), 4);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=1 AND family NOT LIKE 'llm%'"), 1);
    /* the plan without tunables ("params": {}) compiled, as a candidate without params */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates c JOIN generations g ON g.candidate_id = c.id "
                                      "WHERE c.status = 'compiled' AND g.source LIKE '%pf_lce_rows%' AND "
                                      "c.plan LIKE '%pf_lce_rows%' AND c.params = '{}'"),
                     1);

    /* a server that never answers: the run says it made none of the calls, and why */
    snprintf(db, sizeof db, "%s/apart2.db", tmpdir);
    rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                  "--generators", "template,llm", "--llm-url", "http://127.0.0.1:9/v1", "--llm-retries", "0",
                  "--llm-budget", "3", "--db", db, "--no-bar", NULL);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "llm: stopped after 0 of 3 calls: the LLM does not answer"));
    free(out);
}

/* The loopback server playing a competent model (--match: it answers by
 * the parent its prompt shows, tests/fixtures/llm/competent): an edit of
 * the lce_ws template parent (SEARCH/REPLACE, applied to the parent's
 * source), a WMMA kernel and a SIMT kernel of its own; every one is parsed,
 * passes the check and compiles. */
static void test_llm_competent(void **state)
{
    (void)state;
    char script[PATH_MAX + 64], db[PATH_MAX + 32], logdir[PATH_MAX + 32];
    snprintf(script, sizeof script, "%s/tests/fixtures/llm/competent/script.txt", KEVO_SOURCE_DIR);
    snprintf(db, sizeof db, "%s/competent.db", tmpdir);
    request_log("competent", logdir);
    char url[64];
    int srv = tu_fake_llm_start_match(KEVO_FAKE_LLM, script, logdir, tmpdir, url, sizeof url);
    char *out = NULL;
    int rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_ws", "--budget", "1",
                      "--generators", "template,llm", "--llm-url", url, "--llm-budget", "3", "--db", db, "--no-bar",
                      NULL);
    tu_fake_llm_stop(srv);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "llm: 3 of 3 calls made; 0 failed; 3 compiled"));
    free(out);
    /* the edit of the lce_ws seed: its parent is the template, its source the parent's with the change */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations g JOIN candidates p ON p.id = g.parent_id "
                                      "JOIN candidates c ON c.id = g.candidate_id WHERE p.family = 'lce_ws' AND "
                                      "c.status = 'compiled' AND g.source LIKE '%__nanosleep(32)%' AND g.source "
                                      "LIKE '%#line 1 \"wgmma.cuh\"%' AND g.source NOT LIKE '%__nanosleep(64)%'"),
                     1);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations g JOIN candidates c ON c.id = "
                                      "g.candidate_id WHERE c.status = 'compiled' AND g.source LIKE '%tc_lce_wmma%'"),
                     1);
    /* the first prompt was the lce_ws parent's, within the default budget, its notes whole */
    size_t len = 0;
    char *body = first_request(logdir, &len);
    assert_non_null(strstr(body, "- family: lce_ws\\n"));
    assert_non_null(strstr(body, "wgmma.cuh: its API only"));
    assert_null(strstr(body, "retrieved note"));
    assert_true(len / 3 < 16384 + 2000); /* the JSON body: the messages (<= 16k tokens) with their escapes */
    free(body);
}

/* --llm-edit-grammar: each request carries a GBNF grammar (llama.cpp's
 * "grammar" field) whose SEARCH lines are the shown parent's unique lines,
 * and the task asks for one-line edits; an edit that changes only blanks and
 * comments is refused by name, a real one compiles. */
static void test_llm_edit_grammar(void **state)
{
    (void)state;
    char script[PATH_MAX + 32], db[PATH_MAX + 32], logdir[PATH_MAX + 32];
    static const char *const replies[] = {"grammar_noop.txt", "grammar_edit.txt"};
    scripted("grammar", replies, 2, script, db);
    request_log("grammar", logdir);
    char url[64];
    int srv = tu_fake_llm_start(KEVO_FAKE_LLM, script, logdir, tmpdir, url, sizeof url);
    char *out = NULL;
    int rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                      "--generators", "template,llm", "--llm-url", url, "--llm-budget", "2", "--llm-edit-grammar",
                      "--db", db, "--no-bar", NULL);
    tu_fake_llm_stop(srv);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "llm: 2 of 2 calls made; 1 failed (parse_error 1); 1 compiled"));
    free(out);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates WHERE run_id=1 AND fail='parse_error' AND "
                                      "fail_msg LIKE '%change only comments or blanks%'"),
                     1);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM candidates c JOIN generations g ON g.candidate_id = "
                                      "c.id WHERE c.status = 'compiled' AND g.source LIKE '%const int gk = k0%'"),
                     1);
    size_t len = 0;
    char *body = first_request(logdir, &len);
    cJSON *j = cJSON_Parse(body);
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(j, "grammar");
    assert_true(cJSON_IsString(gr));
    const char *g = gr->valuestring;
    assert_non_null(strstr(g, "root ::= edit{1,2} note\n"));
    assert_non_null(strstr(g, "\"    int gm = m0 + row, gk = k0 + c * 8;\\n\""));   /* unique: offered */
    assert_null(strstr(g, "\"#pragma unroll\\n\""));                               /* many times: not */
    assert_non_null(strstr(body, "Reply with SEARCH/REPLACE edits only"));
    cJSON_Delete(j);
    free(body);
}

/* Several models (--llm-model m-good-7,m-bad-7): a scripted server answers
 * the first with kernels that compile and the second with prose; UCB1 tries
 * each once, then gives the calls to the model whose candidates bring
 * something.  Each call's model is stored. */
static void test_llm_models(void **state)
{
    (void)state;
    char fx[PATH_MAX], script[PATH_MAX + 32], db[PATH_MAX + 32];
    fixtures(fx, sizeof fx);
    snprintf(script, sizeof script, "%s/models.txt", tmpdir);
    snprintf(db, sizeof db, "%s/models.db", tmpdir);
    kv_buf sc;
    kv_buf_init(&sc);
    static const char *const good[] = {"good.txt", "wrong.txt", "hack_const.txt", "paramfree.txt", "competent/wmma.txt"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        kv_buf_printf(&sc, "when=m-good-7 content=@%s/%s\n", fx, good[i]);
    kv_buf_printf(&sc, "when=m-bad-7 content=@%s/nocode.txt\n", fx);
    kevo_err err;
    assert_int_equal(kv_write_file(script, sc.data, sc.len, &err), KEVO_OK);
    kv_buf_release(&sc);
    char url[64];
    int srv = tu_fake_llm_start_match(KEVO_FAKE_LLM, script, NULL, tmpdir, url, sizeof url);
    char *out = NULL;
    int rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--family", "lce_mma", "--budget", "1",
                      "--generators", "template,llm", "--llm-url", url, "--llm-model", "m-good-7,m-bad-7", "--llm-budget", "6",
                      "--db", db, "--no-bar", NULL);
    tu_fake_llm_stop(srv);
    printf("%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "models m-good-7,m-bad-7 (UCB1"));
    free(out);
    /* every call's model stored; each model tried once, then the one that brings compiled kernels */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE model IN ('m-good-7', 'm-bad-7')"), 6);
    /* UCB1 (rewards: 0.5 a candidate that compiled, 0 a failed call): good, bad, good, good, then bad once more
     * (its bonus sqrt(2 ln 4) = 1.67 over good's 0.5 + sqrt(2 ln 4 / 3) = 1.46), then good */
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations WHERE model = 'm-bad-7'"), 2);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations g JOIN candidates c ON c.id = g.candidate_id "
                                      "WHERE g.model = 'm-bad-7' AND c.fail = 'parse_error'"),
                     2);
    assert_int_equal(tu_query_int(db, "SELECT count(*) FROM generations g JOIN candidates c ON c.id = g.candidate_id "
                                      "WHERE g.model = 'm-good-7' AND c.status = 'compiled'"),
                     4);
    char *order = query_text(db, "SELECT group_concat(substr(model, 3, 1), '') FROM (SELECT model FROM generations "
                                 "ORDER BY candidate_id)");
    assert_non_null(order);
    assert_string_equal(order, "gbggbg");
    free(order);
    /* a bad list is a usage error */
    rc = run_kevo(&out, "tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--generators", "template,llm",
                  "--llm-url", url, "--llm-model", "a,,b", "--db", db, "--no-bar", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--llm-model"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llm_calls),
        cmocka_unit_test(test_llm_budget_apart),
        cmocka_unit_test(test_llm_competent),
        cmocka_unit_test(test_llm_models),
        cmocka_unit_test(test_llm_edit_grammar),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
