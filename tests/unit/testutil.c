/* testutil.c — helpers shared by kevo's tests. */
#define _DEFAULT_SOURCE /* setgroups */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evaluator/cudrv.h"
#include "testutil.h"
#include "util/util.h"

const char *tu_home(void)
{
    const char *h = getenv("KEVO_HOME");
    return h && *h ? h : KEVO_SOURCE_DIR;
}

char *tu_read_src(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_home(), rel);
    char *t = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(path, &t, NULL, &err), KEVO_OK);
    return t;
}

/* op's reference module as kevo renders it, from tu_home()'s kernels folder. */
static char *tu_render_ref(const kevo_op *op, kevo_dtype dt, const char *abi)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/kernels", tu_home());
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    kevo_status st = kevo_op_ref_render(op, dir, dt, abi, &b, &err);
    if (st)
        print_error("%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    return kv_buf_take(&b);
}

bool tu_have_gpu(void)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        kv_cu cu;
        kevo_err err;
        int count = 0;
        if (kv_cu_load(&cu, &err) != KEVO_OK || cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGetCount(&count) ||
            count == 0)
            _exit(1);
        _exit(0);
    }
    int ws = 0;
    if (p < 0 || waitpid(p, &ws, 0) != p)
        return false;
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

void tu_compile(kevo_compile_job *job, const char *name, const char *src)
{
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(job, name, src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(job, 1, 1, 300, &err), KEVO_OK);
    if (job->fail != KEVO_FAIL_NONE)
        fprintf(stderr, "%s\n", job->log ? job->log : "");
    assert_int_equal(job->fail, KEVO_FAIL_NONE);
}

char *tu_ref_source(kevo_dtype dt, const char *abi)
{
    return tu_render_ref(kevo_op_find("ikbo_lce"), dt, abi);
}

char *tu_op_ref_source(const kevo_op *op, kevo_dtype dt)
{
    char rel[256];
    snprintf(rel, sizeof rel, "kernels/%s", op->abi_header);
    char *abi = tu_read_src(rel);
    char *src = tu_render_ref(op, dt, abi);
    free(abi);
    return src;
}

int tu_spawn_path(const char *path, const char *log, char *const args[])
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        setpgid(0, 0);
        if (!freopen(log, "w", stdout))
            _exit(126);
        dup2(fileno(stdout), 2);
        execv(path, args);
        _exit(127);
    }
    setpgid(p, p);
    return (int)p;
}

int tu_spawn(const char *log, char *const args[])
{
    return tu_spawn_path(KEVO_BINARY, log, args);
}

void tu_write_text(const char *path, const char *text)
{
    kevo_err err;
    assert_int_equal(kv_write_file(path, text, strlen(text), &err), KEVO_OK);
}

char *tu_read_text(const char *path)
{
    char *t = NULL;
    kevo_err err;
    if (kv_read_file(path, &t, NULL, &err) != KEVO_OK)
        return kv_strdup("");
    return t;
}

int tu_wait(int pid)
{
    int ws = 0;
    while (waitpid((pid_t)pid, &ws, 0) < 0)
        ;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The first column of sql's first row on a read-only connection into *i
 * and *d (a NULL reads as 0 and NaN); false when there is no row. */
static bool tu_query(const char *db, const char *sql, long long *i, double *d)
{
    sqlite3 *h = NULL;
    bool got = false;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, 2000);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            bool null = sqlite3_column_type(st, 0) == SQLITE_NULL;
            *i = sqlite3_column_int64(st, 0);
            *d = null ? NAN : sqlite3_column_double(st, 0);
            got = true;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return got;
}

long long tu_query_int(const char *db, const char *sql)
{
    long long i = -1;
    double d = 0;
    return tu_query(db, sql, &i, &d) ? i : -1;
}

double tu_query_double(const char *db, const char *sql)
{
    long long i = 0;
    double d = NAN;
    return tu_query(db, sql, &i, &d) ? d : NAN;
}

long long tu_wait_query(const char *db, const char *sql, long long want, int ms)
{
    long long v = tu_query_int(db, sql);
    for (int t = 0; t < ms && v < want; t += 10) {
        tu_sleep_ms(10);
        v = tu_query_int(db, sql);
    }
    return v;
}

void tu_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool tu_config_of(const kevo_space *sp, const char *params, kevo_config *cfg)
{
    kevo_space_default(sp, cfg);
    if (!params)
        return true;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", params);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int i = eq ? (*eq = '\0', kevo_space_param_index(sp, tok)) : -1;
        if (i < 0) {
            fprintf(stderr, "'%s' in '%s' is no K=V of a param of %s\n", tok, params, sp->family);
            return false;
        }
        cfg->v[i] = atoll(eq + 1);
    }
    return true;
}

int tu_rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0)
                tu_rm_tree(p); /* a folder */
        }
        closedir(d);
    }
    return rmdir(dir) == 0 || access(dir, F_OK) != 0 ? 0 : -1;
}

static int tu_fake_llm_run(const char *binary, const char *script, const char *logdir, const char *workdir,
                           bool match, char *url, size_t n)
{
    char pfile[PATH_MAX], log[PATH_MAX];
    static int seq;
    seq++;
    snprintf(pfile, sizeof pfile, "%s/fake-llm-port-%d", workdir, seq);
    snprintf(log, sizeof log, "%s/fake-llm-%d.log", workdir, seq);
    unlink(pfile);
    fflush(NULL);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        if (!freopen(log, "w", stdout))
            _exit(126);
        dup2(fileno(stdout), 2);
        char *args[] = {"kevo_fake_llm", "--script", (char *)script, "--port-file", pfile, NULL, NULL, NULL, NULL};
        int k = 5;
        if (logdir) {
            args[k++] = "--log";
            args[k++] = (char *)logdir;
        }
        if (match)
            args[k++] = "--match";
        execv(binary, args);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 1000 && port == 0; i++) { /* up to 10 s */
        FILE *f = fopen(pfile, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1)
                port = 0;
            fclose(f);
        }
        if (!port) {
            int ws;
            assert_int_equal(waitpid(p, &ws, WNOHANG), 0); /* the server must not have died */
            tu_sleep_ms(10);
        }
    }
    assert_true(port > 0);
    snprintf(url, n, "http://127.0.0.1:%d/v1", port);
    return (int)p;
}

int tu_fake_llm_start(const char *binary, const char *script, const char *logdir, const char *workdir, char *url,
                      size_t n)
{
    return tu_fake_llm_run(binary, script, logdir, workdir, false, url, n);
}

int tu_fake_llm_start_match(const char *binary, const char *script, const char *logdir, const char *workdir,
                            char *url, size_t n)
{
    return tu_fake_llm_run(binary, script, logdir, workdir, true, url, n);
}

void tu_fake_llm_stop(int pid)
{
    kill((pid_t)pid, SIGTERM);
    assert_int_equal(tu_wait(pid), 0);
}

int tu_run(const char *log, char **out, char *const args[])
{
    int rc = tu_wait(tu_spawn(log, args));
    kevo_err err;
    *out = NULL;
    assert_int_equal(kv_read_file(log, out, NULL, &err), KEVO_OK);
    return rc;
}

/* tu_run_files with how's additions. */
static int tu_exec(const char *dir, const char *outp, const char *errp, const tu_run_how *how,
                   const char *const *args)
{
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)KEVO_BINARY;
    for (; args[n - 1] && n < 39; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fi = open("/dev/null", O_RDONLY);
        if (fo < 0 || fe < 0 || fi < 0 || chdir(dir) != 0)
            _exit(127);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        if (how->default_signals)
            for (int s = 1; s < 32; s++)
                if (s != SIGKILL && s != SIGSTOP)
                    signal(s, SIG_DFL);
        if (how->env)
            putenv((char *)how->env);
        if (how->fsize) {
            struct rlimit rl = {how->fsize, how->fsize};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        if (how->as_nobody && geteuid() == 0 &&
            (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(126);
        execv(KEVO_BINARY, argv);
        _exit(127);
    }
    return tu_wait(pid);
}

int tu_run_files(const char *dir, const char *outp, const char *errp, bool as_nobody, const char *const *args)
{
    tu_run_how how = {.as_nobody = as_nobody};
    return tu_exec(dir, outp, errp, &how, args);
}

tu_result tu_run_in(const char *dir, const tu_run_how *how, const char *const *args)
{
    static const tu_run_how none;
    char outp[PATH_MAX], errp[PATH_MAX];
    snprintf(outp, sizeof outp, "%s/.stdout", dir);
    snprintf(errp, sizeof errp, "%s/.stderr", dir);
    tu_result r = {tu_exec(dir, outp, errp, how ? how : &none, args), NULL, NULL};
    r.out = tu_read_text(outp);
    r.err = tu_read_text(errp);
    return r;
}

void tu_result_release(tu_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

char *tu_graph_dump(const char *db)
{
    sqlite3 *h = NULL;
    kv_buf b;
    kv_buf_init(&b);
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    const char *q[] = {
        "SELECT seq || ' ' || family || ' ' || params || ' ' || status || ' ' || coalesce(fail, '-') "
        "FROM candidates ORDER BY seq",
        "SELECT p.seq || ' -> ' || c.seq || ' ' || e.operator FROM edges e "
        "JOIN candidates p ON p.id = e.parent_id JOIN candidates c ON c.id = e.child_id ORDER BY c.seq, p.seq",
    };
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(h, q[i], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW)
            kv_buf_printf(&b, "%s\n", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return kv_buf_take(&b);
}

const kevo_op *tu_op(const char *name)
{
    const kevo_op *op = kevo_op_find(name);
    assert_non_null(op);
    return op;
}

int64_t tu_sym(const kevo_syms *s, const char *name)
{
    int64_t v = -1;
    assert_true(kevo_syms_get(s, name, &v));
    return v;
}

void tu_parse_ok(const kevo_op *op, const char *text, kevo_syms *s)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = op->parse_shape(text, s, &err);
    if (st != KEVO_OK)
        print_error("parse_shape('%s'): %s\n", text ? text : "(null)", err.msg);
    assert_int_equal(st, KEVO_OK);
}

void tu_parse_error(const kevo_op *op, const char *text, const char *quoted)
{
    kevo_syms s;
    kevo_syms_init(&s);
    s.n = 77; /* sentinel: a failed parse leaves out alone */
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = op->parse_shape(text, &s, &err);
    if (st != KEVO_ERR_ARG || !strstr(err.msg, quoted))
        print_error("parse_shape('%s') -> %d '%s', want '%s' quoted\n", text, (int)st, err.msg, quoted);
    assert_int_equal(st, KEVO_ERR_ARG);
    assert_int_equal(err.status, KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, quoted));
    size_t len = strlen(err.msg);
    assert_true(len > 0);
    assert_false(isupper((unsigned char)err.msg[0]));
    assert_true(err.msg[len - 1] != '.');
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(s.n, 77);
}

void tu_tmp_path(const char *prefix, char out[64])
{
    int n = snprintf(out, 64, "/tmp/%s_XXXXXX", prefix);
    assert_true(n > 0 && n < 64);
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    unlink(out);
}

void tu_pch_settle(kevo_compile_pool *p)
{
    kevo_err err;
    kevo_compile_job *none;
    int writing = 0;
    double t0 = kv_now();
    while ((kevo_compile_pch_ready(&writing), writing > 0) && kv_now() - t0 < 120)
        assert_int_equal(kevo_compile_pool_wait(p, 0.5, &none, &err), KEVO_OK);
    assert_int_equal(writing, 0);
}

static uint64_t tu_rng_state;

void tu_rng_seed(void)
{
    const char *env = getenv("KEVO_TEST_SEED");
    tu_rng_state = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("seed %llu (KEVO_TEST_SEED)\n", (unsigned long long)tu_rng_state);
}

uint64_t tu_rng(void)
{
    uint64_t z = (tu_rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
