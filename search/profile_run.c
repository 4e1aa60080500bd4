/* profile_run.c — Nsight Compute on a stored candidate (profile_run.h). */
#define _GNU_SOURCE
#include "search/profile_run.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db/store.h"
#include "util/ctx.h"
#include "util/util.h"

static bool pr_executable(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0;
}

kevo_status kevo_profile_find_ncu(const char *given, char *out, size_t outsz, kevo_err *err)
{
    const char *env = getenv("KEVO_NCU");
    const char *p = given && *given ? given : env && *env ? env : NULL;
    if (p) {
        if (!pr_executable(p))
            return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "ncu (Nsight Compute) not found: '%s' (from %s) is no executable",
                                p, p == given ? "--ncu" : "$KEVO_NCU");
        if ((size_t)snprintf(out, outsz, "%s", p) >= outsz)
            return kevo_err_set(err, KEVO_ERR_ARG, "%s", "ncu's path is too long");
        return KEVO_OK;
    }
    const char *path = getenv("PATH");
    for (const char *s = path; s && *s;) {
        const char *e = strchr(s, ':');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n > 0 && (size_t)snprintf(out, outsz, "%.*s/ncu", (int)n, s) < outsz && pr_executable(out))
            return KEVO_OK;
        s = e ? e + 1 : s + n;
    }
    return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "%s",
                        "ncu (Nsight Compute) not found: give --ncu PATH, set $KEVO_NCU or put ncu on $PATH");
}

static double pr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start argv with stdout and stderr into one pipe, in its own process
 * group; read it all (at most KEVO_PROFILE_CSV_MAX) into *b.  *status: the
 * wait status; *timed_out when the group was killed at the limit. */
static kevo_status pr_spawn_read(char *const argv[], double timeout_s, kv_buf *b, int *status, bool *timed_out,
                                 kevo_err *err)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0)
        return kevo_err_set(err, KEVO_ERR_IO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return kevo_err_set(err, KEVO_ERR_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        execv(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fd[1]);
    double end = pr_now() + timeout_s;
    bool over = false, full = false;
    for (;;) {
        double left = end - pr_now();
        if (left <= 0) {
            over = true;
            break;
        }
        struct pollfd pf = {.fd = fd[0], .events = POLLIN};
        int r = poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        char chunk[65536];
        ssize_t n = read(fd[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (!full && b->len + (size_t)n <= KEVO_PROFILE_CSV_MAX)
            kv_buf_append(b, chunk, (size_t)n);
        else
            full = true; /* drained, not kept: the parse reports what it has */
    }
    close(fd[0]);
    /* the leader is not reaped before its group is killed, so the group id is still its own */
    siginfo_t si;
    while (!over) {
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            break;
        if (pr_now() >= end)
            over = true;
        else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    kill(-pid, SIGKILL); /* past the limit: all of it; else whatever ncu left behind in its group */
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    *timed_out = over;
    return KEVO_OK;
}

/* Whether ncu's output says it cannot read the performance counters. */
static bool pr_no_counters(const char *s)
{
    return s && (strstr(s, "ERR_NVGPUCTRPERM") || strstr(s, "permission to access NVIDIA GPU Performance Counters"));
}

/* "regex:^(a|b)$" over the plan's launch entries into out; false (no
 * filter) when there is no plan or an entry is no C identifier (DB text). */
static bool pr_kernel_filter(const char *plan, char *out, size_t outsz)
{
    cJSON *j = plan ? cJSON_Parse(plan) : NULL;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "launches");
    size_t n = (size_t)snprintf(out, outsz, "regex:^(");
    int k = 0;
    bool ok = cJSON_IsArray(l);
    for (const cJSON *e = ok ? l->child : NULL; e && ok; e = e->next) {
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(e, "entry");
        const char *s = cJSON_IsString(en) ? en->valuestring : NULL;
        ok = s && *s && strlen(s) < 128 && !isdigit((unsigned char)*s);
        for (const char *c = s; ok && *c; c++)
            ok = isalnum((unsigned char)*c) || *c == '_';
        if (ok && n + strlen(s) + 4 < outsz)
            n += (size_t)snprintf(out + n, outsz - n, "%s%s", k++ ? "|" : "", s);
        else
            ok = false;
    }
    cJSON_Delete(j);
    if (!ok || !k)
        return false;
    snprintf(out + n, outsz - n, ")$");
    return true;
}

kevo_status kevo_profile_run(kevo_ctx *ctx, const kevo_profile_run_opts *o, kevo_profile *out)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    kevo_profile_init(out);
    char cand[32], dev[16];
    snprintf(cand, sizeof cand, "%lld", (long long)o->cand_id);
    snprintf(dev, sizeof dev, "%d", o->device);
    char filter[1024];
    char *argv[24];
    int a = 0;
    char *const head[] = {(char *)o->ncu, "--csv", "--metrics", KEVO_PROFILE_NCU_METRICS, "--target-processes",
                          "all", "--clock-control", "none"};
    for (size_t i = 0; i < KV_ARRAY_LEN(head); i++)
        argv[a++] = head[i];
    if (pr_kernel_filter(o->plan, filter, sizeof filter)) {
        argv[a++] = "--kernel-name";
        argv[a++] = filter;
    }
    char *const tail[] = {(char *)o->kevo, "verify", "--db", (char *)o->db_path, "--candidate", cand,
                          "--maps", "sorted", "--device", dev, NULL};
    for (size_t i = 0; i < KV_ARRAY_LEN(tail); i++)
        argv[a++] = tail[i];
    double timeout = o->timeout_s > 0 ? o->timeout_s : 600;
    kv_buf b;
    kv_buf_init(&b);
    int status = 0;
    bool timed_out = false;
    kevo_status st = pr_spawn_read(argv, timeout, &b, &status, &timed_out, err);
    const char *text = b.data ? b.data : "";
    if (st)
        goto done;
    if (timed_out) {
        st = kevo_err_set(err, KEVO_ERR_IO, "ncu did not finish in %g s: killed (raise --timeout)", timeout);
        goto done;
    }
    if (pr_no_counters(text)) {
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "%s",
                          "ncu cannot read the GPU's performance counters (ERR_NVGPUCTRPERM): run it as root or "
                          "let users profile (NVreg_RestrictProfilingToAdminUsers=0); nothing stored");
        goto done;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !strstr(text, "\"Metric Name\"")) {
        st = kevo_err_set(err, KEVO_ERR_IO, "could not start ncu '%s'", o->ncu);
        goto done;
    }
    kevo_err perr;
    if (kevo_profile_parse_ncu_csv(text, out, &perr) != KEVO_OK) {
        char why[64] = "";
        if (WIFEXITED(status) && WEXITSTATUS(status))
            snprintf(why, sizeof why, " (ncu exited %d)", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            snprintf(why, sizeof why, " (ncu killed by signal %d)", WTERMSIG(status));
        st = kevo_err_set(err, KEVO_ERR_PARSE, "no figures in ncu's output%s: %s", why, perr.msg);
        goto done;
    }
    kevo_db *db = NULL;
    if ((st = kevo_db_open_ctx(o->db_path, false, ctx, &db, err)) == KEVO_OK) {
        st = kevo_profile_store(db, o->cand_id, out, err);
        kevo_db_close(db);
    }
done:
    kv_buf_release(&b);
    return st;
}
