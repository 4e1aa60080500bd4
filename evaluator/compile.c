/* compile.c — NVRTC compiles in child processes, a pool of them at a time.
 *
 * Each job forks a child that runs NVRTC and writes one message back over a
 * pipe: a fixed header, the log, the cubin.  The parent polls every child's
 * pipe, so large outputs never block, kills a child past its time limit, and
 * turns a child that dies (NVRTC 13.0's ptxas segfaults on some valid PTX)
 * into a COMPILE_CRASH result for that job alone.
 *
 * Precompiled headers (NVRTC 12.8+, the NVRTC guide's "Precompiled
 * Headers").  A source's prelude is its leading run of `#include <...>`
 * lines (a family's "prelude" in its space file).  <cuda/ptx> and
 * <cuda/atomic> alone take ~0.8 s of a 1.2 s lce_ws compile, all of it in
 * the front end.  The first job of each (prelude, options) pair starts one
 * extra child that compiles the prelude alone with --create-pch (or
 * kevo_compile_pch_prepare does, before any job: tune starts one per family
 * while its GPU workers start, so that its first round finds them ready);
 * writers of different preludes run at once.  A job started while its
 * prelude's writer runs waits for it (up to KEVO_COMPILE_PCH_WAIT_S: the
 * writer has less left than the front end a job without it would repeat),
 * then compiles with --use-pch, as every later job does; their children
 * strip NVRTC's "using precompiled header" line from the log.  A PCH file is
 * usable only by a process whose PCH heap sits where the writer's did (NVRTC
 * warning 20282), and NVRTC maps that heap at the first compile that names a
 * PCH: the pool has it mapped in the parent, by a compile of an empty
 * program naming a PCH that cannot exist (it fails at once, before any code
 * generation), so every child forked after inherits the one heap.  The
 * parent opens the new file and unlinks it: children reach it as
 * /proc/self/fd/N, and nothing is left in the temporary directory when kevo
 * is killed.  A child whose compile did not use its PCH (any PCH warning)
 * says so; the pool stops handing out that PCH, and a compile that failed
 * without it is redone without the option.
 * KEVO_PCH=0 turns all of it off.
 */
#define _GNU_SOURCE
#include "evaluator/compile.h"
#include "evaluator/compile_int.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

/* What a child sends back before the log and cubin bytes. */
typedef struct cp_header {
    int fail;
    int nvrtc_status;
    int pch; /* 1: the PCH was used (or written); -1: one was named and was not; 0: none named */
    uint64_t log_len;
    uint64_t cubin_len;
    double seconds;
} cp_header;

/* In a compile child: all of p to fd, or the child ends (exit 3). */
static void cp_write_all(int fd, const void *p, size_t n)
{
    if (!kv_write_all(fd, p, n))
        _exit(3);
}

/* Remove NVRTC's `"name": <verb> precompiled header file "..."` line from
 * log (*len bytes, the NUL included).  1 when the line was there and nothing
 * else in the log mentions a precompiled header (a warning that it could not
 * be used), else -1. */
static int cp_strip_pch_line(char *log, size_t *len, const char *verb)
{
    if (!log || !*len)
        return -1;
    char pat[64];
    snprintf(pat, sizeof pat, ": %s precompiled header file \"", verb);
    char *hit = strstr(log, pat);
    if (!hit)
        return -1;
    char *start = hit;
    while (start > log && start[-1] != '\n')
        start--;
    char *end = strchr(hit, '\n');
    end = end ? end + 1 : hit + strlen(hit);
    memmove(start, end, strlen(end) + 1);
    *len = strlen(log) + 1;
    return strstr(log, "precompiled header") ? -1 : 1;
}

/* One NVRTC compile of job->source with opts; the log and cubin are malloc'd
 * (lengths 0 when absent).  *pch_created: nvrtcGetPCHCreateStatus. */
static nvrtcResult cp_nvrtc(const kevo_compile_job *job, const char *const *opts, int nopts, char **log,
                            size_t *log_len, char **cubin, size_t *cubin_len, nvrtcResult *pch_created)
{
    *log = *cubin = NULL;
    *log_len = *cubin_len = 0;
    *pch_created = NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED;
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, job->source, job->name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return r;
    r = nvrtcCompileProgram(prog, nopts, opts);
    *pch_created = nvrtcGetPCHCreateStatus(prog);
    if (nvrtcGetProgramLogSize(prog, log_len) == NVRTC_SUCCESS && *log_len > 0) {
        *log = malloc(*log_len);
        if (!*log || nvrtcGetProgramLog(prog, *log) != NVRTC_SUCCESS)
            *log_len = 0;
    }
    /* fault injection for the tests: a source that says, through the
     * preprocessor (#pragma message), that its compiler should die */
    const char *inject = getenv("KEVO_FAULT_INJECT");
    if (inject && strcmp(inject, "1") == 0 && *log_len && strstr(*log, "kevo-fault-inject: compile-crash"))
        raise(SIGSEGV);
    if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, cubin_len) == NVRTC_SUCCESS && *cubin_len > 0) {
        *cubin = malloc(*cubin_len);
        if (!*cubin || nvrtcGetCUBIN(prog, *cubin) != NVRTC_SUCCESS)
            *cubin_len = 0;
    }
    nvrtcDestroyProgram(&prog);
    return r;
}

/* KEVO_SIM_COMPILE_MS=N (1..60000), only beside KEVO_SIM_GPUS: the length
 * of a simulated compile, 0 when compiles are real. */
static int64_t cp_sim_ms(void)
{
    int64_t ms = 0;
    const char *v = getenv("KEVO_SIM_COMPILE_MS");
    if (!v || !getenv("KEVO_SIM_GPUS") || !kv_parse_i64(v, &ms) || ms < 1 || ms > 60000)
        return 0;
    return ms;
}

/* A simulated compile, for the scheduler's studies on a machine with few
 * cores (bench/sim_scaling.sh): sleep ms times 0.75..1.25, a factor fixed by
 * the source, and return the source's SHA-256 (hex) as the "cubin", which
 * only a simulated GPU takes (it times a candidate by its machine code). */
static void cp_sim_child(const kevo_compile_job *job, int fd, int64_t ms)
{
    double t0 = kv_now();
    const void *bufs[1] = {job->source};
    size_t lens[1] = {strlen(job->source)};
    char hex[65];
    kv_sha256_hex(bufs, lens, 1, hex);
    int byte = 0;
    for (int i = 0; i < 2; i++)
        byte = byte * 16 + (hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
    ms = ms * (75 + byte % 51) / 100;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    cp_header h = {0};
    h.nvrtc_status = NVRTC_SUCCESS;
    h.fail = KEVO_FAIL_NONE;
    h.cubin_len = 64;
    h.seconds = kv_now() - t0;
    cp_write_all(fd, &h, sizeof h);
    cp_write_all(fd, hex, 64);
    close(fd);
    _exit(0);
}

/* The child: compile, send, exit.  Never returns.  pch_opt: NULL, or
 * --use-pch=... / --create-pch=... (create); empty_dir: where an untrusted
 * job works (cp_empty_dir). */
static void cp_child(const kevo_compile_job *job, int fd, const char *pch_opt, bool create, const char *empty_dir)
{
    int64_t sim_ms = cp_sim_ms();
    if (sim_ms)
        cp_sim_child(job, fd, sim_ms);
    double t0 = kv_now();
    cp_header h = {0};
    const bool untrusted = kevo_compile_job_untrusted(job);
    if (untrusted && !kevo_compile_confine(job, empty_dir)) {
        static const char msg[] = "kevo could not confine this compile of untrusted source (no empty folder under "
                                  "$TMPDIR and no Landlock): refused";
        h.fail = KEVO_FAIL_COMPILE_ERROR;
        h.nvrtc_status = -1;
        h.log_len = sizeof msg;
        h.seconds = kv_now() - t0;
        cp_write_all(fd, &h, sizeof h);
        cp_write_all(fd, msg, sizeof msg);
        close(fd);
        _exit(0);
    }
    char *log, *cubin;
    size_t log_len, cubin_len;
    const char *opts[KEVO_COMPILE_MAX_OPTS + 3];
    int nopts = 0;
    for (int i = 0; i < job->nopts; i++)
        opts[nopts++] = job->opts[i];
    /* NVRTC 13 looks each compile up in the driver's compute cache when a
     * driver is installed: that costs each child a CUDA initialization
     * (~0.45 s of system time on the H200 host), and lets one run's compiles
     * speed up another's; kevo keeps its own cache (binaries in the DB) */
    opts[nopts++] = "--no-cache";
    int plain = nopts;
    if (pch_opt) {
        opts[nopts++] = pch_opt;
        opts[nopts++] = "--pch-messages=true";
    }
    nvrtcResult created;
    nvrtcResult r = cp_nvrtc(job, opts, nopts, &log, &log_len, &cubin, &cubin_len, &created);
    if (pch_opt) {
        h.pch = cp_strip_pch_line(log, &log_len, create ? "creating" : "using");
        if (create && (r != NVRTC_SUCCESS || created != NVRTC_SUCCESS))
            h.pch = -1;
        if (!create && h.pch != 1 && r != NVRTC_SUCCESS) { /* not for want of the PCH: again without it */
            free(log);
            free(cubin);
            r = cp_nvrtc(job, opts, plain, &log, &log_len, &cubin, &cubin_len, &created);
        }
    }
    h.nvrtc_status = (int)r;
    h.fail = (r == NVRTC_SUCCESS && cubin_len > 0) ? KEVO_FAIL_NONE : KEVO_FAIL_COMPILE_ERROR;
    if (r != NVRTC_SUCCESS && log_len == 0) {
        const char *msg = nvrtcGetErrorString(r);
        log = kv_strdup(msg);
        log_len = log ? strlen(msg) + 1 : 0;
    }
    if (untrusted && log && log_len) { /* what may reach a prompt: no host path, no other file's text */
        log[log_len - 1] = '\0';
        kevo_compile_log_scrub(job, log, true);
        log_len = strlen(log) + 1;
    }
    h.log_len = log_len;
    h.cubin_len = cubin_len;
    h.seconds = kv_now() - t0;
    cp_write_all(fd, &h, sizeof h);
    if (log_len)
        cp_write_all(fd, log, log_len);
    if (cubin_len)
        cp_write_all(fd, cubin, cubin_len);
    close(fd);
    _exit(0);
}

/* Parent-side state of one child: running (pid set), or not yet started
 * because its job waits for its prelude's PCH (pid -1, job set). */
typedef struct cp_slot {
    kevo_compile_job *job; /* NULL: the slot is free */
    pid_t pid;
    int fd;
    double deadline; /* running: when it is killed; waiting: when it starts without the PCH */
    double timeout_s; /* waiting: the job's time limit, counted from its start */
    kv_buf in;
    bool timed_out;
    int pch; /* the PCH (index into the pool's) the child uses, writes or waits for; -1: none */
} cp_slot;

/* One PCH: a prelude compiled with one set of options. */
typedef struct cp_pch {
    char key[65]; /* sha256 of the prelude and every option */
    enum { CP_PCH_CREATING, CP_PCH_READY, CP_PCH_FAILED } state;
    int fd;         /* READY: the unlinked file */
    char dir[256];  /* CREATING: the temporary directory it is written in */
    char path[280]; /* CREATING: the file */
    cp_slot writer; /* CREATING: the child writing it (pid -1 once it ended) */
} cp_pch;

#define CP_MAX_PCH 8

/* The process's PCHs and their writers (one per PCH, several at once),
 * kept across pools (tune makes a pool per batch in some modes): any pool's
 * wait reads the writers, and freeing a pool leaves them running.  What is
 * given up is said to the kevo_ctx of the pool (or kevo_compile_pch_poll)
 * that reads it, not to a process-wide sink. */
static struct {
    pid_t owner; /* the process whose PCH heap is mapped and that owns these (0: none; children inherit this) */
    int n;
    cp_pch set[CP_MAX_PCH];
} cp_g;

struct kevo_compile_pool {
    int parallel;
    int active;            /* children running */
    cp_slot *slots;        /* [parallel] */
    struct pollfd *pfd;    /* [parallel + CP_MAX_PCH]: the jobs', then the PCH writers' */
    kevo_compile_job **done; /* finished, not yet handed back, in finishing order ([parallel]) */
    int ndone, done_head;
    bool pch_on;
    double pch_wait_s; /* how long a job waits for its prelude's PCH while it is written */
    kv_cancel *cancel; /* the caller's kevo_ctx flag: the waits stop once it is raised; NULL: never */
    kevo_ctx *ctx;     /* the caller's handle (kevo_compile_pool_set_ctx): where a PCH given up is said */
};

static void cp_finish(kevo_compile_job *job, cp_slot *s, int wstatus)
{
    cp_header h;
    bool whole = false;
    if (s->in.len >= sizeof h) {
        memcpy(&h, s->in.data, sizeof h);
        whole = s->in.len == sizeof h + h.log_len + h.cubin_len;
    }
    if (s->timed_out) {
        job->fail = KEVO_FAIL_COMPILE_TIMEOUT;
        job->log = kv_strdup("compile killed after the time limit");
    } else if (!whole || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        char msg[160];
        if (WIFSIGNALED(wstatus))
            snprintf(msg, sizeof msg, "compiler process died with signal %d (%s)", WTERMSIG(wstatus),
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(msg, sizeof msg, "compiler process exited with status %d before sending its result",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
        job->fail = KEVO_FAIL_COMPILE_CRASH;
        job->log = kv_strdup(msg);
    } else {
        job->fail = (kevo_fail)h.fail;
        job->pch = h.pch == 1;
        const char *p = s->in.data + sizeof h;
        if (h.log_len) {
            job->log = malloc(h.log_len + 1);
            if (job->log) {
                memcpy(job->log, p, h.log_len);
                job->log[h.log_len] = '\0';
            }
        }
        if (h.cubin_len) {
            job->cubin = malloc(h.cubin_len);
            if (job->cubin) {
                memcpy(job->cubin, p + h.log_len, h.cubin_len);
                job->cubin_size = h.cubin_len;
            } else {
                job->fail = KEVO_FAIL_COMPILE_ERROR;
            }
        }
        job->seconds = h.seconds;
        kevo_compile_parse_ptxas(job, job->log);
    }
    kv_buf_release(&s->in);
}

static void cp_pch_drop_files(cp_pch *c)
{
    if (c->path[0])
        unlink(c->path);
    if (c->dir[0])
        rmdir(c->dir);
    c->path[0] = c->dir[0] = '\0';
}

/* Say why a PCH is not used (rare: compiles just get slower) in a WARNING
 * event to ctx (NULL: nowhere), with the first line of the log that names a
 * precompiled header, as a terminal-safe excerpt. */
static void cp_pch_say(kevo_ctx *ctx, const char *what, const char *log)
{
    const char *line = log ? strstr(log, "precompiled header") : NULL;
    while (line && line > log && line[-1] != '\n')
        line--;
    char ex[161] = "";
    for (int i = 0; line && line[i] && line[i] != '\n' && i < 160; i++)
        ex[i] = line[i] >= 32 && line[i] < 127 ? line[i] : '?';
    kv_ctx_emit(ctx, KEVO_EVENT_WARNING, 0, "%s%s%s", what, ex[0] ? ": " : "", ex);
}

/* The writer ended (or is given up): keep its file open and unlinked, or
 * give the PCH up (said to ctx). */
static void cp_pch_written(kevo_compile_job *w, int pch, kevo_ctx *ctx)
{
    cp_pch *c = &cp_g.set[pch];
    c->state = CP_PCH_FAILED;
    if (w->fail == KEVO_FAIL_NONE && w->pch) {
        c->fd = open(c->path, O_RDONLY);
        if (c->fd >= 0)
            c->state = CP_PCH_READY;
    }
    if (c->state != CP_PCH_READY && w->fail != KEVO_FAIL_COMPILE_CRASH) /* a crash: the pool was freed */
        cp_pch_say(ctx, "no precompiled header for a prelude; its compiles go without", w->log);
    cp_pch_drop_files(c);
    kevo_compile_job_release(w);
    free((char *)w->source);
    free(w);
}

/* Kill a running child, reap it and drop what it sent (its job stays unfinished). */
static void cp_kill(cp_slot *s)
{
    kill(s->pid, SIGKILL);
    close(s->fd);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    kv_buf_release(&s->in);
}

/* At exit: end the writers still running and remove their files. */
static void cp_pch_atexit(void)
{
    if (getpid() != cp_g.owner)
        return;
    for (int i = 0; i < cp_g.n; i++) {
        cp_slot *s = &cp_g.set[i].writer;
        if (s->pid == -1)
            continue;
        cp_kill(s);
        s->job->fail = KEVO_FAIL_COMPILE_CRASH;
        cp_pch_written(s->job, s->pch, NULL);
        s->pid = -1;
    }
}

static bool cp_service(cp_slot *s, short revents, double now);

/* How many writers of this process run. */
static int cp_pch_writing(void)
{
    int n = 0;
    for (int i = 0; cp_g.owner == getpid() && i < cp_g.n; i++)
        n += cp_g.set[i].writer.pid != -1;
    return n;
}

/* Read what PCH i's writer sent (poll's revents); once it ended, its PCH is
 * ready or given up (said to ctx). */
static void cp_pch_service(int i, short revents, double now, kevo_ctx *ctx)
{
    cp_slot *w = &cp_g.set[i].writer;
    if (w->pid != -1 && cp_service(w, revents, now)) {
        cp_pch_written(w->job, w->pch, ctx);
        w->job = NULL;
    }
}

/* Read what the writers sent, for up to wait_ms (0: only what is there);
 * what is given up is said to ctx. */
static void cp_pch_poll(int wait_ms, kevo_ctx *ctx)
{
    struct pollfd pfd[CP_MAX_PCH];
    while (cp_pch_writing() > 0) {
        double now = kv_now();
        for (int i = 0; i < cp_g.n; i++) {
            cp_slot *w = &cp_g.set[i].writer;
            pfd[i] = (struct pollfd){.fd = w->pid != -1 ? w->fd : -1, .events = POLLIN};
        }
        int pr = poll(pfd, (nfds_t)cp_g.n, wait_ms);
        if (pr <= 0)
            return;
        for (int i = 0; i < cp_g.n; i++)
            if (pfd[i].revents)
                cp_pch_service(i, pfd[i].revents, now, ctx);
        wait_ms = 0;
    }
}

/* Whether precompiled headers are used (KEVO_PCH=0: not). */
static bool cp_pch_enabled(void)
{
    const char *env = getenv("KEVO_PCH");
    return !(env && strcmp(env, "0") == 0) && cp_sim_ms() == 0;
}

/* Remove what killed kevo processes left: kevo-pch-* directories of PCH
 * writers and kevo-untrusted-* ones of untrusted compiles (cp_empty_dir),
 * of this user in tmp, untouched for an hour (a writer takes seconds, a
 * process touches its kevo-untrusted- folder at each compile). */
static void cp_pch_sweep(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (!d)
        return;
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, "kevo-pch-", 9) != 0 && strncmp(de->d_name, "kevo-untrusted-", 15) != 0)
            continue;
        char dir[512], file[560];
        snprintf(dir, sizeof dir, "%s/%s", tmp, de->d_name);
        struct stat st;
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || now - st.st_mtime < 3600)
            continue;
        snprintf(file, sizeof file, "%s/prelude.pch", dir);
        unlink(file);
        rmdir(dir);
    }
    closedir(d);
}

/* The empty folder this process's untrusted compiles work in (their
 * relative #include and __has_include find nothing there): made at the
 * first one, touched at each, removed at exit.  "" when it could not be
 * made (then only Landlock confines them, or they are refused). */
static struct {
    pid_t owner;
    bool registered;
    char dir[256];
} cp_empty;

static void cp_empty_atexit(void)
{
    if (cp_empty.owner == getpid() && cp_empty.dir[0])
        rmdir(cp_empty.dir);
}

static const char *cp_empty_dir(void)
{
    if (cp_empty.owner != getpid()) {
        cp_empty.owner = getpid();
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp || strlen(tmp) > 200)
            tmp = "/tmp";
        cp_pch_sweep(tmp);
        snprintf(cp_empty.dir, sizeof cp_empty.dir, "%s/kevo-untrusted-XXXXXX", tmp);
        if (!mkdtemp(cp_empty.dir))
            cp_empty.dir[0] = '\0';
        if (cp_empty.dir[0] && !cp_empty.registered)
            cp_empty.registered = atexit(cp_empty_atexit) == 0;
    } else if (cp_empty.dir[0]) {
        utimes(cp_empty.dir, NULL); /* in use: no other kevo's sweep takes it */
    }
    return cp_empty.dir;
}

/* Map NVRTC's PCH heap in this process, once, so that every child forked
 * after inherits it at one address (see the top of this file). */
static void cp_pch_heap(void)
{
    if (cp_g.owner == getpid())
        return;
    cp_g.owner = getpid();
    cp_g.n = 0; /* a child's copy of its parent's PCHs is not its own to manage */
    atexit(cp_pch_atexit);
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, "", "kevo-pch-heap.cu", 0, NULL, NULL) != NVRTC_SUCCESS)
        return;
    const char *opts[] = {"--use-pch=/proc/self/kevo-none.pch"}; /* procfs: no such file can exist */
    (void)nvrtcCompileProgram(prog, 1, opts);
    nvrtcDestroyProgram(&prog);
}

kevo_status kevo_compile_pool_new(int parallel, kevo_compile_pool **out, kevo_err *err)
{
    *out = NULL;
    if (parallel < 1)
        parallel = 1;
    if (parallel > 256)
        parallel = 256;
    kevo_compile_pool *p = calloc(1, sizeof *p);
    if (p) {
        p->parallel = parallel;
        p->slots = calloc((size_t)parallel, sizeof *p->slots);
        p->pfd = calloc((size_t)parallel + CP_MAX_PCH, sizeof *p->pfd);
        p->done = calloc((size_t)parallel, sizeof *p->done);
    }
    if (!p || !p->slots || !p->pfd || !p->done) {
        kevo_compile_pool_free(p);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < parallel; i++)
        p->slots[i].pid = -1;
    p->pch_wait_s = KEVO_COMPILE_PCH_WAIT_S;
    p->pch_on = cp_pch_enabled();
    if (p->pch_on)
        cp_pch_heap();
    *out = p;
    return KEVO_OK;
}

int kevo_compile_pool_idle(const kevo_compile_pool *p)
{
    return p->parallel - p->active - p->ndone;
}

int kevo_compile_pool_busy(const kevo_compile_pool *p)
{
    return p->active + p->ndone;
}

int kevo_compile_pch_ready(int *writing)
{
    int ready = 0;
    bool mine = cp_g.owner == getpid();
    for (int i = 0; mine && i < cp_g.n; i++)
        ready += cp_g.set[i].state == CP_PCH_READY;
    if (writing)
        *writing = cp_pch_writing();
    return ready;
}

/* Fork a child for job into slot s. */
static kevo_status cp_fork(cp_slot *s, kevo_compile_job *job, double timeout_s, const char *pch_opt, bool create,
                           int pch, kevo_err *err)
{
    const char *empty = kevo_compile_job_untrusted(job) ? cp_empty_dir() : NULL;
    int fds[2];
    if (pipe(fds) != 0)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to start a compile process: %s", strerror(errno));
    }
    if (pid == 0) {
        kv_child_init(parent);
        close(fds[0]);
        cp_child(job, fds[1], pch_opt, create, empty);
    }
    close(fds[1]);
    *s = (cp_slot){.job = job, .pid = pid, .fd = fds[0], .deadline = kv_now() + timeout_s, .pch = pch};
    kv_buf_init(&s->in);
    return KEVO_OK;
}

/* Start the writer of a PCH for job's prelude (plen bytes) and options. */
static void cp_pch_write(const kevo_compile_job *job, size_t plen, const char *key)
{
    cp_pch *c = &cp_g.set[cp_g.n++];
    memset(c, 0, sizeof *c);
    c->writer.pid = -1;
    snprintf(c->key, sizeof c->key, "%s", key);
    c->state = CP_PCH_FAILED;
    c->fd = -1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 200)
        tmp = "/tmp";
    cp_pch_sweep(tmp);
    snprintf(c->dir, sizeof c->dir, "%s/kevo-pch-XXXXXX", tmp);
    kevo_compile_job *w = calloc(1, sizeof *w);
    char *src = w ? malloc(plen + 1) : NULL;
    if (!src || !mkdtemp(c->dir)) {
        c->dir[0] = '\0';
        free(w);
        free(src);
        return;
    }
    memcpy(src, job->source, plen);
    src[plen] = '\0';
    *w = *job; /* the options and arch */
    w->name = "kevo-prelude.cu";
    w->source = src;
    w->log = NULL;
    w->cubin = NULL;
    char path[sizeof c->path];
    snprintf(path, sizeof path, "%s/prelude.pch", c->dir);
    memcpy(c->path, path, sizeof path);
    char opt[300];
    snprintf(opt, sizeof opt, "--create-pch=%s", c->path);
    kevo_err e;
    /* a generous limit: it runs once, beside the jobs */
    if (cp_fork(&c->writer, w, 600, opt, true, cp_g.n - 1, &e)) {
        c->writer.pid = -1;
        cp_pch_drop_files(c);
        free(src);
        free(w);
        return;
    }
    c->state = CP_PCH_CREATING;
}

/* The index of the PCH for job's prelude and options, -1 when the job has
 * no prelude or the process holds no such PCH; with start, one is begun
 * (CREATING) when there is none and room for another. */
static int cp_pch_find(const kevo_compile_job *job, bool start)
{
    size_t plen = kevo_compile_prelude_len(job->source);
    if (plen == 0)
        return -1;
    const void *bufs[KEVO_COMPILE_MAX_OPTS + 1];
    size_t lens[KEVO_COMPILE_MAX_OPTS + 1];
    bufs[0] = job->source;
    lens[0] = plen;
    for (int i = 0; i < job->nopts; i++) {
        bufs[i + 1] = job->opts[i];
        lens[i + 1] = strlen(job->opts[i]) + 1;
    }
    char key[65];
    kv_sha256_hex(bufs, lens, job->nopts + 1, key);
    for (int i = 0; i < cp_g.n; i++)
        if (strcmp(cp_g.set[i].key, key) == 0)
            return i;
    if (!start || cp_g.n >= CP_MAX_PCH)
        return -1;
    cp_pch_write(job, plen, key);
    return cp_g.n - 1;
}

/* The index of job's PCH (its writer started when the process has none for
 * it), -1 when there is none to use or wait for. */
static int cp_pch_for(const kevo_compile_pool *p, const kevo_compile_job *job)
{
    if (!p->pch_on || kevo_compile_job_untrusted(job)) /* an untrusted compile reads only the toolkit */
        return -1;
    cp_pch_poll(0, p->ctx);
    int i = cp_pch_find(job, true);
    return i >= 0 && cp_g.set[i].state != CP_PCH_FAILED ? i : -1;
}

/* Fork job into slot s with PCH pch when that is ready, else without. */
static kevo_status cp_fork_job(cp_slot *s, kevo_compile_job *job, double timeout_s, int pch, kevo_err *err)
{
    char opt[64];
    if (pch >= 0 && cp_g.set[pch].state == CP_PCH_READY)
        snprintf(opt, sizeof opt, "--use-pch=/proc/self/fd/%d", cp_g.set[pch].fd);
    else
        pch = -1;
    return cp_fork(s, job, timeout_s, pch >= 0 ? opt : NULL, false, pch, err);
}

/* Start the waiting jobs whose PCH's writer has ended or whose wait is
 * over.  Errors: cp_fork's (that job's slot is freed, the job unfinished). */
static kevo_status cp_start_waiting(kevo_compile_pool *p, double now, kevo_err *err)
{
    for (int i = 0; i < p->parallel; i++) {
        cp_slot *s = &p->slots[i];
        if (!s->job || s->pid != -1 || (cp_g.set[s->pch].state == CP_PCH_CREATING && now < s->deadline))
            continue;
        kevo_compile_job *job = s->job;
        kevo_status st = cp_fork_job(s, job, s->timeout_s, s->pch, err);
        if (st) {
            s->job = NULL;
            p->active--;
            return st;
        }
    }
    return KEVO_OK;
}

void kevo_compile_pool_set_pch_wait(kevo_compile_pool *p, double seconds)
{
    p->pch_wait_s = seconds > 0 ? seconds : 0;
}

void kevo_compile_pch_poll(kevo_ctx *ctx)
{
    cp_pch_poll(0, ctx); /* nothing in a process that holds no writers of its own */
}

void kevo_compile_pch_prepare(const kevo_compile_job *job)
{
    if (!cp_pch_enabled() || kevo_compile_job_untrusted(job))
        return;
    cp_pch_heap();
    (void)cp_pch_find(job, true);
}

kevo_status kevo_compile_pool_start(kevo_compile_pool *p, kevo_compile_job *job, double timeout_s, kevo_err *err)
{
    if (job->cached)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a cached compile job was started");
    if (kevo_compile_pool_idle(p) < 1)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a compile job was started in a full pool");
    cp_slot *s = NULL;
    for (int i = 0; i < p->parallel && !s; i++)
        if (!p->slots[i].job)
            s = &p->slots[i];
    if (!s)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a compile job was started in a full pool");
    int pch = cp_pch_for(p, job);
    if (pch >= 0 && cp_g.set[pch].state == CP_PCH_CREATING && p->pch_wait_s > 0) {
        /* compiling the prelude again costs more than the writer has left */
        *s = (cp_slot){.job = job, .pid = -1, .fd = -1, .deadline = kv_now() + p->pch_wait_s,
                       .timeout_s = timeout_s, .pch = pch};
        p->active++;
        return KEVO_OK;
    }
    kevo_status st = cp_fork_job(s, job, timeout_s, pch, err);
    p->active += !st;
    return st;
}

/* Read what a child sent, or kill it past its deadline; true when it is
 * over (reaped, its job finished). */
static bool cp_service(cp_slot *s, short revents, double now)
{
    bool over = false;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[65536];
        ssize_t r = read(s->fd, chunk, sizeof chunk);
        if (r > 0) {
            if (kv_buf_append(&s->in, chunk, (size_t)r))
                over = true; /* out of memory: the short message reads as a crash */
        } else if (r == 0 || errno != EINTR) {
            over = true;
        }
    }
    if (!over && now >= s->deadline) {
        kill(s->pid, SIGKILL);
        s->timed_out = true;
        over = true;
    }
    if (!over)
        return false;
    int ws = 0;
    close(s->fd);
    while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR)
        ;
    cp_finish(s->job, s, ws);
    s->pid = -1;
    return true;
}

kevo_status kevo_compile_pool_wait(kevo_compile_pool *p, double wait_s, kevo_compile_job **done, kevo_err *err)
{
    *done = NULL;
    const bool mine = cp_g.owner == getpid();
    const int nw = mine ? cp_g.n : 0; /* the writers' slots follow the jobs' */
    kevo_status st = cp_start_waiting(p, kv_now(), err); /* a writer read elsewhere may have ended */
    if (st)
        return st;
    if (p->ndone == 0 && (p->active > 0 || cp_pch_writing() > 0)) {
        double now = kv_now();
        int wait_ms = wait_s <= 0 ? 0 : (int)(wait_s * 1000);
        for (int i = 0; i < p->parallel + nw; i++) {
            cp_slot *s = i < p->parallel ? &p->slots[i] : &cp_g.set[i - p->parallel].writer;
            bool on = s->pid != -1;
            p->pfd[i].fd = on ? s->fd : -1;
            p->pfd[i].events = POLLIN;
            p->pfd[i].revents = 0;
            if (on || (i < p->parallel && s->job)) { /* a waiting job's deadline ends its wait */
                double left = s->deadline - now;
                int ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
                if (ms < wait_ms)
                    wait_ms = ms;
            }
        }
        int pr = poll(p->pfd, (nfds_t)(p->parallel + nw), wait_ms);
        if (pr < 0 && errno != EINTR)
            return kevo_err_set(err, KEVO_ERR_IO, "poll failed: %s", strerror(errno));
        if (kv_cancelled(p->cancel)) /* SIGINT/SIGTERM: the caller frees the pool, which kills the children */
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while compiling",
                                kv_cancelled(p->cancel));
        now = kv_now();
        for (int i = 0; i < p->parallel; i++) {
            cp_slot *s = &p->slots[i];
            if (s->pid == -1 || !cp_service(s, pr > 0 ? p->pfd[i].revents : 0, now))
                continue;
            kevo_compile_job *job = s->job;
            if (s->pch >= 0 && !job->pch && job->fail != KEVO_FAIL_COMPILE_TIMEOUT &&
                job->fail != KEVO_FAIL_COMPILE_CRASH && cp_g.set[s->pch].state == CP_PCH_READY) {
                cp_g.set[s->pch].state = CP_PCH_FAILED; /* named and not used: no more of it */
                cp_pch_say(p->ctx, "a compile did not use its precompiled header; the next ones go without",
                           job->log);
            }
            p->done[(p->done_head + p->ndone) % p->parallel] = job;
            p->ndone++;
            s->job = NULL;
            p->active--;
        }
        for (int i = 0; i < nw; i++) /* a writer past its deadline is killed here too */
            cp_pch_service(i, pr > 0 ? p->pfd[p->parallel + i].revents : 0, now, p->ctx);
        if ((st = cp_start_waiting(p, kv_now(), err)) != KEVO_OK)
            return st;
    }
    if (p->ndone > 0) {
        *done = p->done[p->done_head];
        p->done_head = (p->done_head + 1) % p->parallel;
        p->ndone--;
    }
    return KEVO_OK;
}

void kevo_compile_pool_free(kevo_compile_pool *p)
{
    if (!p)
        return;
    for (int i = 0; p->slots && i < p->parallel; i++)
        if (p->slots[i].pid != -1)
            cp_kill(&p->slots[i]);
    free(p->slots);
    free(p->pfd);
    free(p->done);
    free(p);
}

void kevo_compile_pool_set_ctx(kevo_compile_pool *p, kevo_ctx *ctx)
{
    if (!p)
        return;
    p->ctx = ctx;
    p->cancel = kv_ctx_flag(ctx);
}

/* Compile jobs[0..n) in a pool of `parallel` whose waits stop for cancel
 * and whose PCHs given up are said to ctx (either NULL). */
static kevo_status cp_run(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_ctx *ctx,
                          kv_cancel *cancel, kevo_err *err)
{
    kevo_compile_pool *p;
    kevo_status st = kevo_compile_pool_new(parallel, &p, err);
    if (!st) {
        p->ctx = ctx;
        p->cancel = cancel;
    }
    int next = 0;
    while (!st) {
        for (; next < n && !st && kevo_compile_pool_idle(p) > 0; next++)
            if (!jobs[next].cached)
                st = kevo_compile_pool_start(p, &jobs[next], timeout_s, err);
        if (st || kevo_compile_pool_busy(p) == 0)
            break; /* an error, or every job is done */
        kevo_compile_job *done;
        st = kevo_compile_pool_wait(p, 1.0, &done, err);
    }
    kevo_compile_pool_free(p); /* on an error, kills whatever still runs */
    return st;
}

kevo_status kevo_compile_run(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_err *err)
{
    return cp_run(jobs, n, parallel, timeout_s, NULL, NULL, err);
}

kevo_status kevo_compile_run_ctx(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_ctx *ctx,
                                 kevo_err *err)
{
    return cp_run(jobs, n, parallel, timeout_s, ctx, kv_ctx_flag(ctx), err);
}
