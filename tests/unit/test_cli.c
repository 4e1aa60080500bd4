/* test_cli.c — the kevo command line, run as a separate process (the binary
 * named by KEVO_BINARY) in a temporary folder: usage errors (exit 2), failed
 * commands (exit 1, one "kevo: " line), the no-GPU behaviour of tune and
 * verify, and a compile-only tune read back through report. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static char tmpdir[64];
static bool have_gpu;

typedef struct result {
    int status; /* exit status; -1 when killed by a signal */
    char *out, *err;
} result;

static void result_release(result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

static char *slurp(const char *path)
{
    char *t = NULL;
    kevo_err err;
    if (kv_read_file(path, &t, NULL, &err) != KEVO_OK)
        return kv_strdup("");
    return t;
}

/* Run kevo with args (NULL-terminated) in tmpdir. */
static result run_argv(const char *const *args)
{
    char outp[PATH_MAX], errp[PATH_MAX];
    snprintf(outp, sizeof outp, "%s/.stdout", tmpdir);
    snprintf(errp, sizeof errp, "%s/.stderr", tmpdir);
    int status = tu_run_files(tmpdir, outp, errp, false, args);
    result r;
    r.status = status >= 128 ? -1 : status;
    r.out = slurp(outp);
    r.err = slurp(errp);
    unlink(outp);
    unlink(errp);
    return r;
}

#define RUN(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

static void expect(result *r, int status, const char *err_part)
{
    if (r->status != status || (err_part && !strstr(r->err, err_part)))
        print_error("exit %d (want %d)\n--- stdout\n%s--- stderr\n%s--- want in stderr: %s\n", r->status, status,
                    r->out, r->err, err_part ? err_part : "(anything)");
    assert_int_equal(r->status, status);
    if (err_part)
        assert_non_null(strstr(r->err, err_part));
}

/* A failed command: exit 1, stderr is one line starting "kevo: ". */
static void expect_fail_line(result *r, const char *err_part)
{
    expect(r, 1, err_part);
    assert_int_equal(strncmp(r->err, "kevo: ", 6), 0);
    char *nl = strchr(r->err, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0');
}

static bool exists(const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    struct stat st;
    return stat(p, &st) == 0;
}

/* No kevo.db (the default --db) nor its side files in tmpdir. */
static void assert_no_default_db(void)
{
    assert_false(exists("kevo.db"));
    assert_false(exists("kevo.db-wal"));
    assert_false(exists("kevo.db-shm"));
    assert_false(exists("kevo.db-journal"));
}

/* ---- usage ---- */

static void test_help(void **state)
{
    (void)state;
    result r = RUN("--help");
    expect(&r, 0, NULL);
    static const char *const cmds[] = {"tune", "report", "verify", "list"};
    for (int i = 0; i < 4; i++) {
        char line[32];
        snprintf(line, sizeof line, "\n  %s ", cmds[i]);
        assert_non_null(strstr(r.out, line));
    }
    assert_string_equal(r.err, "");
    result_release(&r);

    r = run_argv((const char *const[]){NULL});
    expect(&r, 2, "usage: kevo COMMAND");
    assert_string_equal(r.out, "");
    result_release(&r);

    r = RUN("x");
    expect(&r, 2, "unknown command 'x'");
    result_release(&r);

    r = RUN("tune", "--help");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "--compile-only"));
    result_release(&r);

    r = RUN("--version");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "kevo "));
    result_release(&r);

    r = RUN("list");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "ikbo_lce"));
    assert_non_null(strstr(r.out, "lce_mma"));
    assert_non_null(strstr(r.out, "lce_wgmma"));
    assert_non_null(strstr(r.out, "greedy"));
    result_release(&r);
}

static void test_tune_usage(void **state)
{
    (void)state;
    result r = RUN("tune");
    expect(&r, 2, "--op is required");
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--budget", "0");
    expect(&r, 2, "--budget");
    assert_non_null(strstr(r.err, "'0'"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--budget", "abc");
    expect(&r, 2, "--budget");
    assert_non_null(strstr(r.err, "'abc'"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--jobs", "0");
    expect(&r, 2, "--jobs");
    assert_non_null(strstr(r.err, "'0'"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--maps", "nope");
    expect(&r, 2, "--maps");
    assert_non_null(strstr(r.err, "'nope'"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--frobnicate");
    expect(&r, 2, "'--frobnicate'");
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "stray");
    expect(&r, 2, "'stray'");
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-timeout", "0");
    expect(&r, 2, "--compile-timeout");
    result_release(&r);
    assert_no_default_db();
}

/* An unknown short option grouped with another ("-xy"): getopt has not moved
 * optind past it when it reports it. */
static void test_unknown_short_option(void **state)
{
    (void)state;
    result r = RUN("tune", "--op", "ikbo_lce", "-x");
    expect(&r, 2, "'-x'");
    result_release(&r);
    r = RUN("tune", "--op", "ikbo_lce", "-xy");
    /* regression: a grouped short option once was reported by argv[optind - 1],
     * which still named the previous argument ("option 'ikbo_lce'") */
    expect(&r, 2, "-x");
    assert_null(strstr(r.err, "'ikbo_lce'"));
    result_release(&r);
}

/* `kevo help COMMAND` for a command that does not exist. */
static void test_help_unknown_command(void **state)
{
    (void)state;
    result r = RUN("help", "tune");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "usage: kevo tune"));
    result_release(&r);
    r = RUN("help", "nope");
    /* regression: `kevo help nope` once exited 0 with no output */
    expect(&r, 2, "'nope'");
    result_release(&r);
}

/* Bad names and values in options are usage errors (exit 2, as the
 * README says), nothing written. */
static void test_tune_bad_values(void **state)
{
    (void)state;
    result r = RUN("tune", "--op", "nope", "--compile-only");
    expect(&r, 2, "unknown op 'nope'");
    assert_non_null(strstr(r.err, "ikbo_lce"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--shape", "B=0");
    expect(&r, 2, "'B'");
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--shape", "B=x");
    expect(&r, 2, "'B'");
    assert_non_null(strstr(r.err, "'x'"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--policy", "nope");
    expect(&r, 2, "unknown policy 'nope'");
    assert_non_null(strstr(r.err, "greedy"));
    assert_non_null(strstr(r.err, "exhaustive"));
    assert_non_null(strstr(r.err, "random"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--arch", "sm_99");
    expect(&r, 2, "'sm_99'");
    assert_non_null(strstr(r.err, "sm_90a"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--family", "nope");
    expect(&r, 2, "'nope'");
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--dtype", "fp64");
    expect(&r, 2, "'fp64'");
    result_release(&r);
    assert_no_default_db();
}

/* Every numeric option: out-of-range, NaN, inf, negative, empty, blank or
 * trailing garbage is a usage error naming the option, before anything
 * converts it (--compile-timeout 3e6 once overflowed an int of ms); a
 * repeated option is one too.  --db points into a missing folder, so that a
 * value wrongly taken fails with exit 1, not 2. */
static void test_option_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *opt;
        const char *bad[8];
    } t[] = {
        {"--budget", {"0", "1000001", "-5", "", " 5", "5x", "1e3", "+5"}},
        {"--seed", {"-1", "9223372036854775808", "abc", "", "1.5", "0x10", NULL}},
        {"--jobs", {"0", "257", "99999999999", "", "2 ", NULL}},
        {"--batch", {"0", "257", "-1", "", "x", NULL}},
        {"--ahead", {"0", "17", "-1", "", "2x", NULL}},
        {"--reps", {"0", "1001", "nan", "", NULL}},
        {"--warmup", {"-1", "1001", "inf", "", NULL}},
        {"--device", {"-1", "1025", "4294967296", "", NULL}},
        {"--plateau", {"0", "1000001", "-1", "", NULL}},
        {"--compile-timeout", {"3e6", "86401", "0.01", "nan", "inf", "-1", "", "1s"}},
        {"--eval-timeout", {"1e300", "NaN", "-inf", "0", "0x10", " 5", NULL}},
        {"--time-limit", {"0", "1e10", "nan", "infinity", "-3", "", "5,0", NULL}},
        {"--target", {"0", "1e7", "nan", "inf", "-1", "", NULL}},
        {"--resume", {"0", "-1", "x", "", NULL}},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        for (int k = 0; k < 8 && t[i].bad[k]; k++) {
            result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--db", "missing/x.db", t[i].opt,
                           t[i].bad[k]);
            if (r.status != 2 || !strstr(r.err, t[i].opt))
                print_error("%s '%s': exit %d\n%s", t[i].opt, t[i].bad[k], r.status, r.err);
            expect(&r, 2, t[i].opt);
            result_release(&r);
        }
    /* in range: taken (and the run then fails on the missing folder) */
    result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--db", "missing/x.db", "--compile-timeout", "86400",
                   "--time-limit", "0.5", "--target", "1e6", "--seed", "9223372036854775807", "--budget", "1000000");
    expect(&r, 1, "missing/x.db");
    result_release(&r);

    /* a repeated option: which value was meant is not kevo's to guess */
    r = RUN("tune", "--op", "ikbo_lce", "--budget", "5", "--budget", "9", "--db", "missing/x.db");
    expect(&r, 2, "--budget is given more than once");
    result_release(&r);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--compile-only", "--db", "missing/x.db");
    expect(&r, 2, "--compile-only is given more than once");
    result_release(&r);
    r = RUN("tune", "--op", "ikbo_lce", "--op", "ikbo_lce", "--db", "missing/x.db");
    expect(&r, 2, "--op is given more than once");
    result_release(&r);
    r = RUN("report", "--db", "missing/x.db", "--top", "1", "--top", "2");
    expect(&r, 2, "--top is given more than once");
    result_release(&r);
    r = RUN("replay", "--db", "missing/x.db", "--seeds", "2", "--seeds", "3");
    expect(&r, 2, "--seeds is given more than once");
    result_release(&r);
    r = RUN("verify", "--db", "missing/x.db", "--db", "missing/y.db");
    expect(&r, 2, "--db is given more than once");
    result_release(&r);
    r = RUN("export", "--db", "missing/x.db", "--out", "o", "--name", "a", "--name", "b");
    expect(&r, 2, "--name is given more than once");
    result_release(&r);
    r = RUN("replay", "--db", "missing/x.db", "--target", "nan");
    expect(&r, 2, "--target");
    result_release(&r);
    assert_no_default_db();
}

/* Lists in options are taken whole: export's --arch once was cut at 519
 * characters (and an arch at its end silently dropped). */
static void test_long_lists(void **state)
{
    (void)state;
    kv_buf arch;
    kv_buf_init(&arch);
    for (int i = 0; i < 110; i++)
        kv_buf_puts(&arch, "sm_80,");
    kv_buf_puts(&arch, "sm_90a");
    char fixture[PATH_MAX];
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/export/kevo_h200.db", KEVO_SOURCE_DIR);
    /* read whole, and a list names each item once (every list option alike): refused, nothing written */
    result r = RUN("export", "--db", fixture, "--out", "exp_long", "--arch", arch.data);
    kv_buf_release(&arch);
    expect(&r, 2, "--arch: 'sm_80' is listed twice");
    result_release(&r);
    assert_false(exists("exp_long"));
    r = RUN("export", "--db", fixture, "--out", "exp_long", "--arch", "sm_80,sm_86,sm_89,sm_90,sm_100a,sm_90a");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "8 kernels"));
    result_release(&r);
}

static void test_report_usage(void **state)
{
    (void)state;
    result r = RUN("report");
    expect(&r, 2, "--db is required");
    result_release(&r);

    r = RUN("report", "--db", "x.db", "--format", "xml");
    expect(&r, 2, "'xml'");
    result_release(&r);
    assert_false(exists("x.db"));

    r = RUN("report", "--db", "missing.db");
    expect_fail_line(&r, "missing.db");
    result_release(&r);
    assert_false(exists("missing.db"));
    assert_false(exists("missing.db-wal"));
    assert_false(exists("missing.db-shm"));
    assert_false(exists("missing.db-journal"));

    /* a file that is not a database is refused and left as it was */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/notes.txt", tmpdir);
    const char *text = "these are my notes, not a database\n";
    kevo_err err;
    assert_int_equal(kv_write_file(p, text, strlen(text), &err), KEVO_OK);
    r = RUN("report", "--db", "notes.txt");
    expect_fail_line(&r, "not a kevo database");
    result_release(&r);
    char *after = slurp(p);
    assert_string_equal(after, text);
    free(after);
    assert_false(exists("notes.txt-wal"));
    assert_false(exists("notes.txt-shm"));
    assert_false(exists("notes.txt-journal"));
    unlink(p);

    /* tune refuses it as well, before writing anything */
    assert_int_equal(kv_write_file(p, text, strlen(text), &err), KEVO_OK);
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "1", "--db", "notes.txt");
    expect_fail_line(&r, "not a kevo database");
    result_release(&r);
    after = slurp(p);
    assert_string_equal(after, text);
    free(after);
    assert_false(exists("notes.txt-wal"));
    unlink(p);

    r = RUN("verify");
    expect(&r, 2, "--db is required");
    result_release(&r);
}

/* ---- no GPU ---- */

static void test_tune_without_gpu(void **state)
{
    (void)state;
    if (have_gpu) {
        printf("a GPU is present: the no-GPU behaviour is not checked here\n");
        skip();
    }
    result r = RUN("tune", "--op", "ikbo_lce", "--budget", "2", "--db", "nogpu.db");
    expect_fail_line(&r, "no CUDA driver");
    assert_non_null(strstr(r.err, "needs a GPU"));
    result_release(&r);
    /* a run that could not start leaves no database behind */
    char path[4200];
    snprintf(path, sizeof path, "%s/nogpu.db", tmpdir);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0);
}

/* --devices: its form is checked before any GPU is looked for, and without
 * a GPU it fails as a one-GPU run does, leaving no DB behind. */
static void test_tune_devices_args(void **state)
{
    (void)state;
    static const struct {
        const char *list, *why;
    } bad[] = {
        {"x", "--devices takes all or a comma list of device ordinals"},
        {"0,", "--devices '0,': an empty item"},
        {"0,-1", "--devices takes all or a comma list of device ordinals"},
        {"1,1", "--devices: '1' is listed twice"},
        {"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "--devices names more than 16 GPUs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        result r = RUN("tune", "--op", "ikbo_lce", "--budget", "2", "--devices", bad[i].list, "--db", "dev.db");
        expect(&r, 2, bad[i].why);
        result_release(&r);
    }
    result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--devices", "all", "--db", "dev.db");
    expect(&r, 2, "--devices: a compile-only run uses no GPU");
    result_release(&r);
    char dist[4200];
    snprintf(dist, sizeof dist, "%s/devdist.txt", tmpdir);
    FILE *f = fopen(dist, "w");
    assert_non_null(f);
    fputs("B=512,ratio=10 1\nB=1024,ratio=70 2\n", f);
    fclose(f);
    /* a distribution takes --devices too (its shapes spread over the GPUs): the list is checked alike */
    r = RUN("tune", "--op", "ikbo_lce", "--shapes", "devdist.txt", "--devices", "1,1", "--db", "dev.db");
    expect(&r, 2, "--devices: '1' is listed twice");
    result_release(&r);
    if (!have_gpu) {
        r = RUN("tune", "--op", "ikbo_lce", "--budget", "2", "--devices", "all", "--db", "dev.db");
        expect_fail_line(&r, "no CUDA driver");
        result_release(&r);
        r = RUN("tune", "--op", "ikbo_lce", "--shapes", "devdist.txt", "--devices", "0,1", "--db", "dev.db");
        expect_fail_line(&r, "no CUDA driver");
        result_release(&r);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/dev.db", tmpdir);
    struct stat sb;
    assert_int_not_equal(stat(path, &sb), 0);
}

/* ---- a compile-only run ---- */

static cJSON *report_json(const char *db)
{
    result r = RUN("report", "--db", db, "--format", "json");
    expect(&r, 0, NULL);
    assert_string_equal(r.err, "");
    cJSON *j = cJSON_Parse(r.out);
    if (!j)
        print_error("not JSON:\n%s\n", r.out);
    assert_non_null(j);
    result_release(&r);
    return j;
}

static const cJSON *field(const cJSON *o, const char *k)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!f)
        print_error("no field '%s'\n", k);
    assert_non_null(f);
    return f;
}

static void check_run_json(const cJSON *run, int id)
{
    assert_int_equal((int)field(run, "id")->valuedouble, id);
    assert_string_equal(field(run, "op")->valuestring, "ikbo_lce");
    assert_string_equal(field(run, "shape")->valuestring, "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15");
    assert_string_equal(field(run, "dtype")->valuestring, "fp16");
    assert_string_equal(field(run, "arch")->valuestring, "sm_90a");
    assert_string_equal(field(run, "policy")->valuestring, "greedy");
    assert_string_equal(field(run, "status")->valuestring, "done");
    assert_string_equal(field(run, "stop_reason")->valuestring, "budget");
    assert_true(cJSON_IsTrue(field(run, "compile_only")));
    assert_true(field(run, "compiled")->valuedouble >= 4);
    assert_int_equal((int)field(run, "evaluated")->valuedouble, 4);
    assert_int_equal((int)field(run, "failed")->valuedouble, 0);
    assert_int_equal((int)field(run, "verified")->valuedouble, 0);
    assert_true(cJSON_IsNull(field(run, "device")));
    assert_true(cJSON_IsNull(field(run, "best_peer")));
    assert_int_equal(cJSON_GetArraySize(field(run, "peers")), 0);
    assert_true(cJSON_IsNull(field(run, "best")));
}

/* Candidate lines of a tune's progress output ("[  1/4] #..."). */
static int candidate_lines(const char *out, int *cached)
{
    int n = 0;
    *cached = 0;
    for (const char *p = out; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0 && p[0] == '[') {
            n++;
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), p);
            if (strstr(line, "| compiled (cached)"))
                (*cached)++;
            else
                assert_non_null(strstr(line, "| compiled "));
        }
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

/* ikbo_fa from the command line: listed; a bad head dimension is a usage
 * error; a compile-only tune runs once a template family exists (and does
 * not try baseline (b), which needs a GPU) and says plainly that none does
 * until then (nothing written); export refuses the op for now. */
static void test_fa_cli(void **state)
{
    (void)state;
    result r = RUN("list", "ops");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "ikbo_fa"));
    assert_non_null(strstr(r.out, "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64"));
    result_release(&r);

    r = RUN("tune", "--op", "ikbo_fa", "--compile-only", "--shape", "D=96", "--db", "FA.db");
    expect(&r, 2, "'D'");
    assert_non_null(strstr(r.err, "64 or 128"));
    result_release(&r);
    assert_false(exists("FA.db"));

    kevo_space **sp = NULL;
    int n = 0;
    kevo_err err;
    assert_int_equal(kevo_spaces_load_dir(KEVO_SOURCE_DIR "/templates", "ikbo_fa", &sp, &n, &err), KEVO_OK);
    for (int i = 0; i < n; i++)
        kevo_space_free(sp[i]);
    free(sp);
    r = RUN("tune", "--op", "ikbo_fa", "--compile-only", "--budget", "2", "--jobs", "2", "--db", "FA.db");
    if (n == 0) {
        expect_fail_line(&r, "op 'ikbo_fa' has no template family yet");
        assert_false(exists("FA.db"));
    } else {
        expect(&r, 0, NULL);
        assert_non_null(strstr(r.out, "compile-only"));
        assert_true(exists("FA.db"));
        /* compile-only: baseline (b) is not tried, nothing of it stored */
        assert_null(strstr(r.out, "peer (b)"));
        assert_null(strstr(r.err, "peer (b)"));
    }
    result_release(&r);
    if (n > 0) {
        r = RUN("report", "--db", "FA.db", "--format", "json");
        expect(&r, 0, NULL);
        cJSON *j = cJSON_Parse(r.out);
        assert_non_null(j);
        const cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0);
        assert_non_null(run);
        /* no peer at all: neither the worker's nor (b) */
        assert_true(cJSON_IsArray(cJSON_GetObjectItem(run, "peers")));
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(run, "peers")), 0);
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(run, "best_peer")));
        cJSON_Delete(j);
        result_release(&r);
    }
    assert_no_default_db();

    r = RUN("export", "--op", "ikbo_fa", "--db", "FA.db", "--out", "fa_lib");
    expect_fail_line(&r, "'FA.db' has no verified ikbo_fa candidate");
    result_release(&r);
    assert_false(exists("fa_lib"));
}

static void test_compile_only(void **state)
{
    (void)state;
    result r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "4", "--jobs", "2", "--db", "T.db");
    expect(&r, 0, NULL);
    printf("%s", r.out);
    assert_non_null(strstr(r.out, "compile-only"));
    int cached = 0;
    assert_int_equal(candidate_lines(r.out, &cached), 4);
    assert_int_equal(cached, 0); /* a fresh DB has nothing cached */
    result_release(&r);
    assert_true(exists("T.db"));
    assert_no_default_db();

    cJSON *j = report_json("T.db");
    const cJSON *runs = field(j, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 1);
    check_run_json(cJSON_GetArrayItem(runs, 0), 1);
    cJSON_Delete(j);

    r = RUN("report", "--db", "T.db");
    expect(&r, 0, NULL);
    assert_non_null(strstr(r.out, "compile-only"));
    /* the four seeds the cost model ranks first at the default shape: the Hopper families' */
    assert_non_null(strstr(r.out, "lce_ws"));
    assert_non_null(strstr(r.out, "lce_wgmma"));
    result_release(&r);

    /* verify needs a verified candidate (and a GPU): neither here */
    r = RUN("verify", "--db", "T.db");
    expect_fail_line(&r, NULL);
    result_release(&r);

    /* the same search again: the same candidates, from the compile cache */
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--budget", "4", "--jobs", "2", "--db", "T.db");
    expect(&r, 0, NULL);
    printf("%s", r.out);
    assert_int_equal(candidate_lines(r.out, &cached), 4);
    assert_int_equal(cached, 4);
    assert_non_null(strstr(r.out, "run 2 done (budget): 4 candidates, 4 compiled, 0 verified, 0 failed"));
    result_release(&r);

    j = report_json("T.db");
    runs = field(j, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 2);
    check_run_json(cJSON_GetArrayItem(runs, 0), 1);
    check_run_json(cJSON_GetArrayItem(runs, 1), 2);
    cJSON_Delete(j);

    /* --run picks one */
    r = RUN("report", "--db", "T.db", "--format", "json", "--run", "2");
    expect(&r, 0, NULL);
    j = cJSON_Parse(r.out);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(field(j, "runs")), 1);
    check_run_json(cJSON_GetArrayItem(field(j, "runs"), 0), 2);
    cJSON_Delete(j);
    result_release(&r);
    r = RUN("report", "--db", "T.db", "--run", "9");
    expect_fail_line(&r, "9");
    result_release(&r);
}

/* --arch as a list: checked first (exit 2, nothing written); with
 * --compile-only one run per arch into one DB, each over the families that
 * declare the arch (a line for each one left out), a line per arch at the
 * end; report groups the runs by arch. */
static void test_arch_list(void **state)
{
    (void)state;
    static const struct {
        const char *archs, *why;
        bool compile_only;
    } bad[] = {
        {"sm_80,sm_99", "unknown arch 'sm_99' (known: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a)", true},
        {"sm_80,sm_90a,sm_80", "--arch: 'sm_80' is listed twice", true},
        {"sm_80,,sm_90a", "an empty item", true},
        {"sm_80,sm_90a,", "an empty item", true},
        {"sm_80,sm_90a", "--arch takes a list of architectures only with --compile-only", false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        result r = bad[i].compile_only ? RUN("tune", "--op", "ikbo_lce", "--compile-only", "--arch", bad[i].archs,
                                             "--budget", "2", "--db", "A.db")
                                       : RUN("tune", "--op", "ikbo_lce", "--arch", bad[i].archs, "--budget", "2",
                                             "--db", "A.db");
        expect(&r, 2, bad[i].why);
        result_release(&r);
    }
    result r = RUN("tune", "--resume", "1", "--arch", "sm_80,sm_90a", "--db", "A.db");
    expect(&r, 2, "--arch takes one architecture with --resume");
    result_release(&r);
    /* an arch no family asked for declares: named with the families that do */
    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--arch", "sm_90a,sm_80", "--family", "lce_wgmma,lce_ws",
            "--budget", "2", "--db", "A.db");
    expect(&r, 2, "--arch sm_80: no family searched (lce_wgmma, lce_ws) targets it; families of the op that do: ");
    assert_non_null(strstr(r.err, "lce_mma"));
    result_release(&r);
    assert_false(exists("A.db"));
    assert_no_default_db();

    r = RUN("tune", "--op", "ikbo_lce", "--compile-only", "--arch", "sm_80,sm_90a", "--family", "lce_mma,lce_wgmma",
            "--budget", "2", "--jobs", "2", "--db", "A.db");
    expect(&r, 0, NULL);
    printf("%s%s", r.out, r.err);
    assert_non_null(strstr(r.err, "family 'lce_wgmma' does not target sm_80; left out"));
    assert_null(strstr(r.err, "does not target sm_90a"));
    int cached = 0;
    assert_int_equal(candidate_lines(r.out, &cached), 4);
    const char *r1 = strstr(r.out, "run 1: ikbo_lce "), *r2 = strstr(r.out, "run 2: ikbo_lce ");
    assert_true(r1 && r2 && r1 < r2);
    assert_non_null(strstr(r1, " sm_80, policy greedy, budget 2"));
    assert_non_null(strstr(r1, "families lce_mma, compile-only"));
    assert_non_null(strstr(r2, " sm_90a, policy greedy, budget 2"));
    assert_non_null(strstr(r2, "families lce_mma,lce_wgmma, compile-only"));
    const char *sum = strstr(r.out, "architectures:\n");
    assert_true(sum && sum > r2);
    assert_non_null(strstr(sum, "sm_80    run 1: 2 candidates, 2 compiled, 0 failed\n"));
    assert_non_null(strstr(sum, "sm_90a   run 2: 2 candidates, 2 compiled, 0 failed\n"));
    result_release(&r);

    /* the runs, their arch and seed; no sm_80 candidate of a family that does not declare it */
    char dbp[PATH_MAX];
    snprintf(dbp, sizeof dbp, "%s/A.db", tmpdir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, arch, seed, compile_only, families FROM runs ORDER BY id", -1,
                                        &st, NULL),
                     SQLITE_OK);
    static const char *const want[][2] = {{"sm_80", "lce_mma"}, {"sm_90a", "lce_mma,lce_wgmma"}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(st, 0), i + 1);
        assert_string_equal((const char *)sqlite3_column_text(st, 1), want[i][0]);
        assert_int_equal(sqlite3_column_int(st, 3), 1);
        assert_string_equal((const char *)sqlite3_column_text(st, 4), want[i][1]);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM candidates WHERE run_id=1 AND family<>'lce_mma'", -1,
                                        &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* report: grouped by arch, in the table and in the JSON */
    r = RUN("report", "--db", "A.db");
    expect(&r, 0, NULL);
    const char *sec = strstr(r.out, "\nby architecture");
    assert_non_null(sec);
    assert_non_null(strstr(sec, "\nsm_80: run 1  candidates 2  compiled 2  verified 0  failed 0\n"));
    assert_non_null(strstr(sec, "\nsm_90a: run 2  candidates 2  compiled 2  verified 0  failed 0\n"));
    assert_non_null(strstr(sec, "smem static(B)"));
    result_release(&r);
    cJSON *j = report_json("A.db");
    const cJSON *archs = field(j, "archs");
    assert_int_equal(cJSON_GetArraySize(archs), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *a = cJSON_GetArrayItem(archs, i);
        assert_string_equal(field(a, "arch")->valuestring, want[i][0]);
        assert_int_equal(cJSON_GetArraySize(field(a, "runs")), 1);
        assert_int_equal((int)cJSON_GetArrayItem(field(a, "runs"), 0)->valuedouble, i + 1);
        assert_int_equal((int)field(a, "compiled")->valuedouble, 2);
        const cJSON *k = field(a, "kernels"), *kj;
        assert_int_equal(cJSON_GetArraySize(k), 2);
        cJSON_ArrayForEach(kj, k)
        {
            assert_true(field(kj, "regs")->valuedouble > 0);
            assert_true(cJSON_IsNumber(field(kj, "spill_bytes")));
            assert_true(cJSON_IsNumber(field(kj, "smem_static")));
            if (i == 0)
                assert_string_equal(field(kj, "family")->valuestring, "lce_mma");
        }
        assert_string_equal(field(cJSON_GetArrayItem(field(j, "runs"), i), "arch")->valuestring, want[i][0]);
    }
    cJSON_Delete(j);
}

/* ---- setup ---- */

/* --shapes: a distribution run records its shapes and weights, and every
 * candidate is valid at each (here M=64 leaves out the tiles taller than
 * 64 rows); --shape with it, or a bad file, fails with one line and no DB. */
static void test_shapes(void **state)
{
    (void)state;
    char dist[PATH_MAX], dbp[PATH_MAX];
    snprintf(dist, sizeof dist, "%s/dist.txt", tmpdir);
    snprintf(dbp, sizeof dbp, "%s/D.db", tmpdir);
    FILE *f = fopen(dist, "w");
    assert_non_null(f);
    fputs("# two shapes\nB=512,ratio=10 3\nB=1024,M=64,N=128,Ku=64,Kc=48,ratio=70\n", f);
    fclose(f);
    result r = RUN("tune", "--op", "ikbo_lce", "--shapes", "dist.txt", "--compile-only", "--budget", "4", "--jobs",
                   "2", "--db", "D.db");
    expect(&r, 0, NULL);
    printf("%s", r.out);
    int cached = 0;
    assert_int_equal(candidate_lines(r.out, &cached), 4);
    result_release(&r);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT nshapes, shape FROM runs", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "B=512,M=433,N=256,Ku=1178,Kc=866,ratio=10,U=52");
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT idx, shape, weight FROM run_shapes ORDER BY idx", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_true(sqlite3_column_double(st, 2) == 3.0);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "B=1024,M=64,N=128,Ku=64,Kc=48,ratio=70,U=15");
    assert_true(sqlite3_column_double(st, 2) == 1.0);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    /* valid at both shapes: no tile taller than M=64 (lce_mma's BM; cooperative Hopper tiles, or clusters of
     * two tiles; a cluster of two candidates, CLB=1, keeps its 64 rows; an out^T tile, TRANS=1, spans M with
     * its BN columns, and its cooperative rows run over N) */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM candidates WHERE json_extract(params, '$.BM') > 64 "
                                        "OR (coalesce(json_extract(params, '$.TRANS'), 0) = 1 "
                                        "AND json_extract(params, '$.BN') > 64) "
                                        "OR (coalesce(json_extract(params, '$.TRANS'), 0) = 0 "
                                        "AND ((json_extract(params, '$.CONSUMERS') > 1 "
                                        "AND json_extract(params, '$.PINGPONG') = 0) "
                                        "OR (json_extract(params, '$.CLUSTER') > 1 "
                                        "AND coalesce(json_extract(params, '$.CLB'), 0) = 0)))",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);

    r = RUN("tune", "--op", "ikbo_lce", "--shapes", "dist.txt", "--shape", "B=512", "--compile-only", "--db", "E.db");
    expect(&r, 2, "--shape and --shapes exclude each other");
    result_release(&r);
    f = fopen(dist, "w");
    assert_non_null(f);
    fputs("B=512 1\nB=1024 -2\n", f);
    fclose(f);
    r = RUN("tune", "--op", "ikbo_lce", "--shapes", "dist.txt", "--compile-only", "--db", "E.db");
    expect(&r, 2, "'dist.txt' line 2: weight '-2'");
    result_release(&r);
    assert_false(exists("E.db"));
}

static int group_setup(void **state)
{
    (void)state;
    /* the binary finds templates/ and kernels/ through KEVO_HOME (ctest sets it) */
    setenv("KEVO_HOME", KEVO_SOURCE_DIR, 0);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo_test_cli_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    have_gpu = tu_have_gpu();
    return access(KEVO_BINARY, X_OK) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_rm_tree(tmpdir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_tune_usage),
        cmocka_unit_test(test_unknown_short_option),
        cmocka_unit_test(test_help_unknown_command),
        cmocka_unit_test(test_tune_bad_values),
        cmocka_unit_test(test_option_numbers),
        cmocka_unit_test(test_long_lists),
        cmocka_unit_test(test_report_usage),
        cmocka_unit_test(test_tune_without_gpu),
        cmocka_unit_test(test_tune_devices_args),
        cmocka_unit_test(test_compile_only),
        cmocka_unit_test(test_fa_cli),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_arch_list),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
