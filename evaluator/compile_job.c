/* compile_job.c — one NVRTC compile job before and after its child runs it:
 * the options and the cache key, the folders an untrusted source may read and
 * the child's confinement (an empty working folder, Landlock), the log scrubbed
 * of paths before anyone sees it, and ptxas's figures read from it.  The
 * children and the pool that runs them: compile.c. */
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

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#if defined(SYS_landlock_create_ruleset) && defined(LANDLOCK_CREATE_RULESET_VERSION)
#define CP_LANDLOCK 1
#endif
#endif
#endif

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

size_t kevo_compile_prelude_len(const char *source)
{
    const char *p = source;
    while (strncmp(p, "#include <", 10) == 0) {
        const char *q = p + 10 + kv_header_name_len(p + 10);
        if (q == p + 10 || q[0] != '>' || q[1] != '\n')
            break;
        p = q + 2;
    }
    return (size_t)(p - source);
}

bool kevo_compile_job_untrusted(const kevo_compile_job *job)
{
    return job && job->name && strcmp(job->name, KEVO_COMPILE_UNTRUSTED_NAME) == 0;
}

/* ---- untrusted source: what NVRTC may read, what its log may say ---- */

#define CP_MAX_DIRS 8

/* The -I folders of job (without a trailing '/'), longest first. */
static int cp_inc_dirs(const kevo_compile_job *job, const char **dirs, size_t *lens)
{
    int n = 0;
    for (int i = 0; i < job->nopts && n < CP_MAX_DIRS; i++) {
        if (strncmp(job->opts[i], "-I", 2) != 0 || !job->opts[i][2])
            continue;
        dirs[n] = job->opts[i] + 2;
        lens[n] = strlen(dirs[n]);
        while (lens[n] > 1 && dirs[n][lens[n] - 1] == '/')
            lens[n]--;
        n++;
    }
    for (int i = 1; i < n; i++) /* longest first: ".../include/cccl" before ".../include" */
        for (int j = i; j > 0 && lens[j] > lens[j - 1]; j--) {
            const char *d = dirs[j];
            size_t l = lens[j];
            dirs[j] = dirs[j - 1];
            lens[j] = lens[j - 1];
            dirs[j - 1] = d;
            lens[j - 1] = l;
        }
    return n;
}

/* Append line[0..n) to b with every "DIR/" of dirs cut (a toolkit path
 * made relative to its include folder). */
static void cp_put_cut(kv_buf *b, const char *line, size_t n, const char **dirs, const size_t *lens, int nd)
{
    size_t i = 0;
    while (i < n) {
        int hit = -1;
        for (int k = 0; k < nd && hit < 0; k++)
            if (i + lens[k] < n && strncmp(line + i, dirs[k], lens[k]) == 0 && line[i + lens[k]] == '/')
                hit = k;
        if (hit >= 0) {
            i += lens[hit] + 1;
            continue;
        }
        kv_buf_append(b, line + i, 1);
        i++;
    }
}

/* Whether a log line begins with a diagnostic's location "FILE(LINE): ";
 * *flen the length of FILE, *rest where the text after ": " begins. */
static bool cp_location(const char *line, size_t n, size_t *flen, size_t *rest)
{
    if (n == 0 || line[0] == ' ' || line[0] == '\t')
        return false;
    for (size_t i = 1; i + 3 < n; i++) {
        if (line[i] != '(' || line[i + 1] < '0' || line[i + 1] > '9')
            continue;
        size_t j = i + 1;
        while (j < n && line[j] >= '0' && line[j] <= '9')
            j++;
        if (j + 2 < n && line[j] == ')' && line[j + 1] == ':' && line[j + 2] == ' ') {
            *flen = i;
            *rest = j + 3;
            return true;
        }
    }
    return false;
}

/* Whether file[0..n) is a plain name (no '/') that a #line directive of
 * source gives its own lines ("#line 1 \"dtype.cuh\"": a template's
 * inlined header, kept in a generated source): diagnostics there are about the
 * candidate's own text.  A plain name can reach no file but the toolkit's
 * (the working folder is empty). */
static bool cp_line_named(const char *source, const char *file, size_t n)
{
    if (!source || n == 0 || memchr(file, '/', n))
        return false;
    for (const char *p = source; (p = strstr(p, "#line")) != NULL; p += 5) {
        const char *q = p + 5, *eol = strchr(q, '\n');
        const char *quote = strchr(q, '"');
        if (!quote || (eol && quote > eol))
            continue;
        if (strncmp(quote + 1, file, n) == 0 && quote[1 + n] == '"')
            return true;
    }
    return false;
}

void kevo_compile_log_scrub(const kevo_compile_job *job, char *log, bool untrusted)
{
    if (!log)
        return;
    const char *dirs[CP_MAX_DIRS];
    size_t lens[CP_MAX_DIRS];
    int nd = cp_inc_dirs(job, dirs, lens);
    size_t nlen = job->name ? strlen(job->name) : 0;
    kv_buf out;
    kv_buf_init(&out);
    bool drop = false; /* inside a withheld diagnostic: its quoted lines go too */
    for (const char *line = log; *line;) {
        size_t n = strcspn(line, "\n");
        bool nl = line[n] == '\n';
        size_t flen, rest;
        if (n == 0) {
            drop = false;
        } else if (cp_location(line, n, &flen, &rest)) {
            bool own = (flen == nlen && strncmp(line, job->name, nlen) == 0) ||
                       cp_line_named(job->source, line, flen);
            bool toolkit = false;
            for (int k = 0; k < nd && !toolkit; k++)
                toolkit = flen > lens[k] + 1 && strncmp(line, dirs[k], lens[k]) == 0 && line[lens[k]] == '/';
            drop = untrusted && !own && !toolkit;
            if (drop) {
                /* the kind ("error", "warning #177-D", ...), never the message: it may quote the file */
                size_t kind = rest;
                while (kind < n && kind - rest < 40 && line[kind] != ':')
                    kind++;
                bool plain = kind < n && line[kind] == ':';
                for (size_t k = rest; plain && k < kind; k++)
                    plain = (line[k] >= 'a' && line[k] <= 'z') || line[k] == ' ' || line[k] == '#' ||
                            line[k] == '-' || (line[k] >= '0' && line[k] <= '9') || line[k] == 'D';
                kv_buf_printf(&out, "(a file kevo did not hand the compiler)%.*s %.*s: withheld (not the "
                              "candidate's source)",
                              (int)(rest - flen - 1), line + flen, plain ? (int)(kind - rest) : 10,
                              plain ? line + rest : "diagnostic");
            }
        }
        if (!drop)
            cp_put_cut(&out, line, n, dirs, lens, nd);
        if (nl && (!drop || (n > 0 && cp_location(line, n, &flen, &rest))))
            kv_buf_puts(&out, "\n");
        line += n + nl;
    }
    /* never longer than the log it replaces: cut (on a character boundary) if a withheld line was longer */
    size_t len = strlen(log), m = out.len < len ? out.len : len;
    while (m > 0 && m < out.len && ((unsigned char)out.data[m] & 0xC0) == 0x80)
        m--;
    if (out.data)
        memcpy(log, out.data, m);
    log[out.data ? m : len] = '\0';
    kv_buf_release(&out);
}

/* Confine an untrusted job's child before NVRTC reads anything (see
 * compile.h): the empty working folder `dir` (cp_empty_dir; NULL or "":
 * none), and where the kernel has Landlock, reads beneath the job's -I
 * folders only and no writes.  False (the job fails) when neither could be
 * had.  (A working folder that was removed would do as well, but NVRTC 13
 * then reads past a buffer of its own: getcwd fails.) */
bool kevo_compile_confine(const kevo_compile_job *job, const char *dir)
{
    bool empty = dir && dir[0] && chdir(dir) == 0;
    bool locked = false;
#ifdef CP_LANDLOCK
    /* NVRTC loads its builtins library at its first compile: now, while it may still be read */
    int major = 0, minor = 0;
    char lib[64];
    if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
        snprintf(lib, sizeof lib, "libnvrtc-builtins.so.%d.%d", major, minor);
        (void)dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    }
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi >= 1) {
        struct landlock_ruleset_attr ra;
        memset(&ra, 0, sizeof ra);
        ra.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                               LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
                               LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                               LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                               LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
                               LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                               LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
        if (abi >= 2)
            ra.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
        if (abi >= 3)
            ra.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
        int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
        const char *dirs[CP_MAX_DIRS];
        size_t lens[CP_MAX_DIRS];
        int nd = rs >= 0 ? cp_inc_dirs(job, dirs, lens) : 0;
        for (int i = 0; i < nd; i++) {
            char d[PATH_MAX];
            snprintf(d, sizeof d, "%.*s", (int)lens[i], dirs[i]);
            int fd = open(d, O_PATH | O_CLOEXEC | O_DIRECTORY);
            if (fd < 0)
                continue;
            struct landlock_path_beneath_attr pb;
            memset(&pb, 0, sizeof pb);
            pb.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
            pb.parent_fd = fd;
            (void)syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
            close(fd);
        }
        if (rs >= 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
            syscall(SYS_landlock_restrict_self, rs, 0) == 0)
            locked = true;
        if (rs >= 0)
            close(rs);
    }
#endif
    if (!empty && locked && chdir("/") != 0) /* any folder: reads outside the toolkit's fail anyway */
        return false;
    return empty || locked;
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

/* The "N <suffix>" fields of a ptxas log (one per kernel entry), summed
 * over the entries when `sum`, else their largest; -1 when there is none. */
static int cp_log_field(const char *log, const char *suffix, bool sum)
{
    int out = -1;
    size_t sl = strlen(suffix);
    for (const char *p = log; (p = strstr(p, suffix)) != NULL; p += sl) {
        const char *q = p;
        while (q > log && q[-1] == ' ')
            q--;
        while (q > log && q[-1] >= '0' && q[-1] <= '9')
            q--;
        int v = atoi(q);
        out = out < 0 ? v : sum ? out + v : v > out ? v : out;
    }
    return out;
}

void kevo_compile_parse_ptxas(kevo_compile_job *job, const char *log)
{
    if (!log)
        return;
    job->regs = cp_log_field(log, " registers", false);
    int stores = cp_log_field(log, " bytes spill stores", true);
    int loads = cp_log_field(log, " bytes spill loads", true);
    job->spill_bytes = stores < 0 && loads < 0 ? -1 : (stores < 0 ? 0 : stores) + (loads < 0 ? 0 : loads);
    job->stack_bytes = cp_log_field(log, " bytes stack frame", false);
    int smem = cp_log_field(log, " bytes smem", false);
    /* entries without static shared memory print no smem field */
    job->smem_static = smem < 0 && job->regs >= 0 ? 0 : smem;
}
