/* compile.c — NVRTC compiles in child processes, a pool of them at a time.
 *
 * Each job forks a child that runs NVRTC and writes one message back over a
 * pipe: a fixed header, the log, the cubin.  The parent polls every child's
 * pipe, so large outputs never block, kills a child past its time limit, and
 * turns a child that dies (NVRTC 13.0's ptxas segfaults on some valid PTX)
 * into a COMPILE_CRASH result for that job alone.
 */
#define _POSIX_C_SOURCE 200809L
#include "evaluator/compile.h"

#include <errno.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

#ifndef KEVO_CUDA_INCLUDE_DIR
#define KEVO_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

const char *kevo_cuda_include_dir(void)
{
    const char *env = getenv("KEVO_CUDA_INCLUDE");
    if (env && *env)
        return env;
    struct stat st;
    if (stat(KEVO_CUDA_INCLUDE_DIR "/cuda_fp16.h", &st) == 0)
        return KEVO_CUDA_INCLUDE_DIR;
    return "/usr/local/cuda/include";
}

void kevo_nvrtc_version(char *out, size_t n)
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        snprintf(out, n, "unknown");
    else
        snprintf(out, n, "%d.%d", major, minor);
}

static kevo_status cp_add_opt(kevo_compile_job *job, kevo_err *err, const char *fmt, const char *arg)
{
    if (job->nopts >= KEVO_COMPILE_MAX_OPTS)
        return kevo_err_set(err, KEVO_ERR_ARG, "too many compile options");
    int w = snprintf(job->opts[job->nopts], sizeof job->opts[0], fmt, arg);
    if (w < 0 || (size_t)w >= sizeof job->opts[0])
        return kevo_err_set(err, KEVO_ERR_ARG, "compile option too long: '%s'", arg);
    job->nopts++;
    return KEVO_OK;
}

kevo_status kevo_compile_job_init(kevo_compile_job *job, const char *name, const char *source, const char *arch,
                                  kevo_err *err)
{
    memset(job, 0, sizeof *job);
    job->name = name;
    job->source = source;
    job->regs = job->spill_bytes = job->smem_static = job->stack_bytes = -1;
    if (strncmp(arch, "sm_", 3) != 0 || strlen(arch) >= sizeof job->arch)
        return kevo_err_set(err, KEVO_ERR_ARG, "bad arch '%s'", arch);
    snprintf(job->arch, sizeof job->arch, "%s", arch);
    kevo_status st = KEVO_OK;
    st = st ? st : cp_add_opt(job, err, "--gpu-architecture=%s", arch);
    st = st ? st : cp_add_opt(job, err, "%s", "-std=c++17");
    st = st ? st : cp_add_opt(job, err, "%s", "-Xptxas=-v");
    st = st ? st : cp_add_opt(job, err, "%s", "-lineinfo");
    return st ? st : kevo_compile_job_add_includes(job, err);
}

kevo_status kevo_compile_job_add_includes(kevo_compile_job *job, kevo_err *err)
{
    const char *inc = kevo_cuda_include_dir();
    kevo_status st = cp_add_opt(job, err, "-I%s/cccl", inc);
    return st ? st : cp_add_opt(job, err, "-I%s", inc);
}

void kevo_compile_key(kevo_compile_job *job)
{
    /* include paths differ between machines with the same toolkit; the
     * NVRTC version stands for the headers they hold */
    char ver[32];
    kevo_nvrtc_version(ver, sizeof ver);
    const void *bufs[KEVO_COMPILE_MAX_OPTS + 3];
    size_t lens[KEVO_COMPILE_MAX_OPTS + 3];
    int n = 0;
    bufs[n] = job->source;
    lens[n++] = strlen(job->source) + 1;
    for (int i = 0; i < job->nopts; i++) {
        if (strncmp(job->opts[i], "-I", 2) == 0)
            continue;
        bufs[n] = job->opts[i];
        lens[n++] = strlen(job->opts[i]) + 1;
    }
    bufs[n] = ver;
    lens[n++] = strlen(ver) + 1;
    bufs[n] = job->arch;
    lens[n++] = strlen(job->arch) + 1;
    kv_sha256_hex(bufs, lens, n, job->key);
}

void kevo_compile_job_release(kevo_compile_job *job)
{
    free(job->log);
    free(job->cubin);
    job->log = NULL;
    job->cubin = NULL;
    job->cubin_size = 0;
}

/* Sum a "N bytes spill stores" style field over all entries. */
static int cp_sum_field(const char *log, const char *suffix)
{
    int total = -1;
    size_t sl = strlen(suffix);
    for (const char *p = log; (p = strstr(p, suffix)) != NULL; p += sl) {
        const char *q = p;
        while (q > log && q[-1] == ' ')
            q--;
        while (q > log && q[-1] >= '0' && q[-1] <= '9')
            q--;
        int v = atoi(q);
        total = total < 0 ? v : total + v;
    }
    return total;
}

/* Largest "N <suffix>" over entries. */
static int cp_max_field(const char *log, const char *suffix)
{
    int best = -1;
    size_t sl = strlen(suffix);
    for (const char *p = log; (p = strstr(p, suffix)) != NULL; p += sl) {
        const char *q = p;
        while (q > log && q[-1] == ' ')
            q--;
        while (q > log && q[-1] >= '0' && q[-1] <= '9')
            q--;
        int v = atoi(q);
        if (v > best)
            best = v;
    }
    return best;
}

void kevo_compile_parse_ptxas(kevo_compile_job *job, const char *log)
{
    if (!log)
        return;
    job->regs = cp_max_field(log, " registers");
    int stores = cp_sum_field(log, " bytes spill stores");
    int loads = cp_sum_field(log, " bytes spill loads");
    job->spill_bytes = stores < 0 && loads < 0 ? -1 : (stores < 0 ? 0 : stores) + (loads < 0 ? 0 : loads);
    job->stack_bytes = cp_max_field(log, " bytes stack frame");
    int smem = cp_max_field(log, " bytes smem");
    /* entries without static shared memory print no smem field */
    job->smem_static = smem < 0 && job->regs >= 0 ? 0 : smem;
}

/* What a child sends back before the log and cubin bytes. */
typedef struct cp_header {
    int fail;
    int nvrtc_status;
    uint64_t log_len;
    uint64_t cubin_len;
    double seconds;
} cp_header;

static void cp_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        c += w;
        n -= (size_t)w;
    }
}

/* The child: compile, send, exit.  Never returns. */
static void cp_child(const kevo_compile_job *job, int fd)
{
    double t0 = kv_now();
    cp_header h = {0};
    char *log = NULL, *cubin = NULL;
    size_t log_len = 0, cubin_len = 0;
    const char *opts[KEVO_COMPILE_MAX_OPTS];
    for (int i = 0; i < job->nopts; i++)
        opts[i] = job->opts[i];
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, job->source, job->name, 0, NULL, NULL);
    if (r == NVRTC_SUCCESS) {
        r = nvrtcCompileProgram(prog, job->nopts, opts);
        if (nvrtcGetProgramLogSize(prog, &log_len) == NVRTC_SUCCESS && log_len > 0) {
            log = malloc(log_len);
            if (!log || nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
                log_len = 0;
        }
        /* fault injection for the tests: a source that says, through the
         * preprocessor (#pragma message), that its compiler should die */
        const char *inject = getenv("KEVO_FAULT_INJECT");
        if (inject && strcmp(inject, "1") == 0 && log_len && strstr(log, "kevo-fault-inject: compile-crash"))
            raise(SIGSEGV);
        if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &cubin_len) == NVRTC_SUCCESS && cubin_len > 0) {
            cubin = malloc(cubin_len);
            if (!cubin || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS)
                cubin_len = 0;
        }
        nvrtcDestroyProgram(&prog);
    }
    h.nvrtc_status = (int)r;
    h.fail = (r == NVRTC_SUCCESS && cubin_len > 0) ? KEVO_FAIL_NONE : KEVO_FAIL_COMPILE_ERROR;
    if (r != NVRTC_SUCCESS && log_len == 0) {
        const char *msg = nvrtcGetErrorString(r);
        log = kv_strdup(msg);
        log_len = log ? strlen(msg) + 1 : 0;
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

/* Parent-side state of one running child. */
typedef struct cp_slot {
    kevo_compile_job *job; /* NULL: the slot is free */
    pid_t pid;
    int fd;
    double deadline;
    kv_buf in;
    bool timed_out;
} cp_slot;

struct kevo_compile_pool {
    int parallel;
    int active;            /* children running */
    cp_slot *slots;        /* [parallel] */
    struct pollfd *pfd;    /* [parallel] */
    kevo_compile_job **done; /* finished, not yet handed back, in finishing order ([parallel]) */
    int ndone, done_head;
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
        p->pfd = calloc((size_t)parallel, sizeof *p->pfd);
        p->done = calloc((size_t)parallel, sizeof *p->done);
    }
    if (!p || !p->slots || !p->pfd || !p->done) {
        kevo_compile_pool_free(p);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < parallel; i++)
        p->slots[i].pid = -1;
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

kevo_status kevo_compile_pool_start(kevo_compile_pool *p, kevo_compile_job *job, double timeout_s, kevo_err *err)
{
    if (job->cached)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a cached compile job was started");
    if (kevo_compile_pool_idle(p) < 1)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a compile job was started in a full pool");
    cp_slot *s = NULL;
    for (int i = 0; i < p->parallel && !s; i++)
        if (p->slots[i].pid == -1)
            s = &p->slots[i];
    if (!s)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "a compile job was started in a full pool");
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
        cp_child(job, fds[1]);
    }
    close(fds[1]);
    *s = (cp_slot){.job = job, .pid = pid, .fd = fds[0], .deadline = kv_now() + timeout_s};
    kv_buf_init(&s->in);
    p->active++;
    return KEVO_OK;
}

/* Read what a child sent, or kill it past its deadline; when it is over,
 * reap it and queue its job as done. */
static void cp_service(kevo_compile_pool *p, cp_slot *s, short revents, double now)
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
        return;
    int ws = 0;
    close(s->fd);
    while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR)
        ;
    cp_finish(s->job, s, ws);
    p->done[(p->done_head + p->ndone) % p->parallel] = s->job;
    p->ndone++;
    s->job = NULL;
    s->pid = -1;
    p->active--;
}

kevo_status kevo_compile_pool_wait(kevo_compile_pool *p, double wait_s, kevo_compile_job **done, kevo_err *err)
{
    *done = NULL;
    if (p->ndone == 0 && p->active > 0) {
        double now = kv_now();
        int wait_ms = wait_s <= 0 ? 0 : (int)(wait_s * 1000);
        for (int i = 0; i < p->parallel; i++) {
            cp_slot *s = &p->slots[i];
            p->pfd[i].fd = s->pid != -1 ? s->fd : -1;
            p->pfd[i].events = POLLIN;
            p->pfd[i].revents = 0;
            if (s->pid != -1) {
                double left = s->deadline - now;
                int ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
                if (ms < wait_ms)
                    wait_ms = ms;
            }
        }
        int pr = poll(p->pfd, (nfds_t)p->parallel, wait_ms);
        if (pr < 0 && errno != EINTR)
            return kevo_err_set(err, KEVO_ERR_IO, "poll failed: %s", strerror(errno));
        if (kv_interrupted()) /* SIGINT/SIGTERM: the caller frees the pool, which kills the children */
            return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d while compiling",
                                kv_signal_caught());
        now = kv_now();
        for (int i = 0; i < p->parallel; i++)
            if (p->slots[i].pid != -1)
                cp_service(p, &p->slots[i], pr > 0 ? p->pfd[i].revents : 0, now);
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
    for (int i = 0; p->slots && i < p->parallel; i++) {
        cp_slot *s = &p->slots[i];
        if (s->pid != -1) {
            kill(s->pid, SIGKILL);
            close(s->fd);
            while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                ;
            kv_buf_release(&s->in);
        }
    }
    free(p->slots);
    free(p->pfd);
    free(p->done);
    free(p);
}

kevo_status kevo_compile_run(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_err *err)
{
    kevo_compile_pool *p;
    kevo_status st = kevo_compile_pool_new(parallel, &p, err);
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
