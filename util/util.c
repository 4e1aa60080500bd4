/* util.c — status text, error buffers, buffers, files, hashing, clocks. */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

const char *kevo_status_str(kevo_status s)
{
    switch (s) {
    case KEVO_OK: return "ok";
    case KEVO_ERR_ARG: return "bad argument";
    case KEVO_ERR_NOMEM: return "out of memory";
    case KEVO_ERR_IO: return "i/o error";
    case KEVO_ERR_DB: return "database error";
    case KEVO_ERR_PARSE: return "parse error";
    case KEVO_ERR_NOT_FOUND: return "not found";
    case KEVO_ERR_UNSUPPORTED: return "unsupported";
    case KEVO_ERR_NO_GPU: return "no gpu";
    case KEVO_ERR_CUDA: return "cuda error";
    case KEVO_ERR_NVRTC: return "nvrtc error";
    case KEVO_ERR_WORKER: return "worker failure";
    case KEVO_ERR_BUSY: return "busy";
    case KEVO_ERR_INTERNAL: return "internal error";
    case KEVO_ERR_INTERRUPTED: return "interrupted";
    }
    return "unknown status";
}

void kevo_err_clear(kevo_err *err)
{
    if (err) {
        err->status = KEVO_OK;
        err->msg[0] = '\0';
    }
}

kevo_status kevo_err_set(kevo_err *err, kevo_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = s;
    }
    return s;
}

void kevo_err_prefix(kevo_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* head, ": ", old, truncated to the buffer */
    size_t cap = sizeof err->msg - 1, n = 0;
    const char *parts[3] = {head, ": ", old};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(parts[i]);
        if (len > cap - n)
            len = cap - n;
        memcpy(err->msg + n, parts[i], len);
        n += len;
    }
    err->msg[n] = '\0';
}

void kv_buf_init(kv_buf *b)
{
    memset(b, 0, sizeof *b);
}

void kv_buf_release(kv_buf *b)
{
    free(b->data);
    kv_buf_init(b);
}

static kevo_status buf_reserve(kv_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return KEVO_ERR_NOMEM;
    size_t need = b->len + extra + 1;
    if (b->limit && need > b->limit)
        return KEVO_ERR_NOMEM;
    if (need <= b->cap)
        return KEVO_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return KEVO_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return KEVO_OK;
}

kevo_status kv_buf_append(kv_buf *b, const void *p, size_t n)
{
    kevo_status s = buf_reserve(b, n);
    if (s)
        return s;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return KEVO_OK;
}

kevo_status kv_buf_puts(kv_buf *b, const char *s)
{
    return kv_buf_append(b, s, strlen(s));
}

kevo_status kv_buf_printf(kv_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return KEVO_ERR_INTERNAL;
    }
    kevo_status s = buf_reserve(b, (size_t)n);
    if (s) {
        va_end(ap2);
        return s;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
    return KEVO_OK;
}

char *kv_buf_take(kv_buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    kv_buf_init(b);
    return p;
}

kevo_status kv_read_file(const char *path, char **out, size_t *len, kevo_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to open '%s': %s", path, strerror(errno));
    kv_buf b;
    kv_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (kv_buf_append(&b, chunk, n)) {
            fclose(f);
            kv_buf_release(&b);
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading '%s'", path);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        kv_buf_release(&b);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to read '%s'", path);
    }
    if (len)
        *len = b.len;
    *out = kv_buf_take(&b);
    return KEVO_OK;
}

kevo_status kv_read_regular_file(const char *path, size_t max, char **out, size_t *len, kevo_err *err)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to read '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        const char *what = S_ISDIR(st.st_mode)                         ? "a folder"
                           : S_ISFIFO(st.st_mode)                      ? "a FIFO"
                           : S_ISSOCK(st.st_mode)                      ? "a socket"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                        : "a special file";
        return kevo_err_set(err, KEVO_ERR_IO, "'%s' is not a regular file (%s); kevo reads only regular files there",
                            path, what);
    }
    if (max && (uint64_t)st.st_size > max) {
        close(fd);
        return kevo_err_set(err, KEVO_ERR_IO, "'%s' is over %zu bytes", path, max);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    kv_buf b;
    kv_buf_init(&b);
    char chunk[65536];
    kevo_status s = KEVO_OK;
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            s = kevo_err_set(err, KEVO_ERR_IO, "unable to read '%s': %s", path, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        if (max && b.len + (size_t)r > max) { /* it grew while read */
            s = kevo_err_set(err, KEVO_ERR_IO, "'%s' is over %zu bytes", path, max);
            break;
        }
        if (kv_buf_append(&b, chunk, (size_t)r)) {
            s = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading '%s'", path);
            break;
        }
    }
    close(fd);
    if (s) {
        kv_buf_release(&b);
        return s;
    }
    if (len)
        *len = b.len;
    *out = kv_buf_take(&b);
    return KEVO_OK;
}

bool kv_same_file(const char *a, const char *b)
{
    struct stat x, y;
    if (!a || !b || stat(a, &x) != 0 || stat(b, &y) != 0)
        return false;
    return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int kv_file_among(const char *path, const char *const *inputs, int n)
{
    struct stat x, y;
    if (!path || stat(path, &x) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (inputs[i] && stat(inputs[i], &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino)
            return i;
    return -1;
}

bool kv_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

bool kv_read_all(int fd, void *data, size_t len)
{
    char *p = data;
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        len -= (size_t)r;
    }
    return true;
}

/* Write through a special file (device, FIFO, terminal) in place. */
static kevo_status kv_write_through(const char *path, const void *data, size_t len, kevo_err *err)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) /* O_TRUNC refused by this kind of file */
        fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to open '%s' for writing: %s", path, strerror(errno));
    bool ok = kv_write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    return ok ? KEVO_OK : kevo_err_set(err, KEVO_ERR_IO, "unable to write '%s': %s", path, strerror(e));
}

/* Whether st is the file open as this process's stdout or stderr; *fd gets it. */
static bool kv_is_std_stream(const struct stat *st, int *fd)
{
    for (int i = 1; i <= 2; i++) {
        struct stat s;
        if (fstat(i, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino) {
            *fd = i;
            return true;
        }
    }
    return false;
}

kevo_status kv_write_file(const char *path, const void *data, size_t len, kevo_err *err)
{
    struct stat ls, ts;
    bool exists = lstat(path, &ls) == 0;
    if (!exists && errno != ENOENT)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to write '%s': %s", path, strerror(errno));
    if (exists && S_ISLNK(ls.st_mode)) {
        int fd;
        if (stat(path, &ts) == 0 && !S_ISREG(ts.st_mode) && !S_ISDIR(ts.st_mode))
            return kv_write_through(path, data, len, err); /* /dev/stdout on a pipe or terminal */
        if (stat(path, &ts) == 0 && S_ISREG(ts.st_mode) && kv_is_std_stream(&ts, &fd)) {
            /* /dev/stdout redirected to a file: our own stream, in order with what we print */
            fflush(fd == 1 ? stdout : stderr);
            if (!kv_write_all(fd, data, len))
                return kevo_err_set(err, KEVO_ERR_IO, "unable to write '%s': %s", path, strerror(errno));
            return KEVO_OK;
        }
        return kevo_err_set(err, KEVO_ERR_IO,
                            "'%s' is a symbolic link: kevo neither replaces links nor writes through them; "
                            "give the path of the file it points to",
                            path);
    }
    if (exists && S_ISDIR(ls.st_mode))
        return kevo_err_set(err, KEVO_ERR_IO, "unable to write '%s': it is a folder", path);
    if (exists && !S_ISREG(ls.st_mode))
        return kv_write_through(path, data, len, err); /* a device, FIFO or socket stays what it is */
    /* a new temporary file beside the target (O_EXCL: never one that someone put there), renamed over it */
    char tmp[PATH_MAX];
    int fd = -1;
    for (int i = 0; i < 100 && fd < 0; i++) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp%ld.%d", path, (long)getpid(), i) >= (int)sizeof tmp)
            return kevo_err_set(err, KEVO_ERR_ARG, "path too long '%s'", path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno != EEXIST)
            return kevo_err_set(err, KEVO_ERR_IO, "unable to create '%s': %s", tmp, strerror(errno));
    }
    if (fd < 0)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to create a temporary file beside '%s'", path);
    bool ok = (!exists || fchmod(fd, ls.st_mode & 07777) == 0) && kv_write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            e = errno;
        remove(tmp);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to write '%s': %s", path, strerror(e));
    }
    return KEVO_OK;
}

void kv_sha256_hex(const void *const *bufs, const size_t *lens, int n, char hex[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (int i = 0; i < n; i++)
        EVP_DigestUpdate(ctx, bufs[i], lens[i]);
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    hex[64] = '\0';
}

double kv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kv_vemit(kevo_event_fn fn, void *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, va_list ap)
{
    if (!fn)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char small[512], *line = n < 0 ? NULL : (size_t)n < sizeof small ? small : malloc((size_t)n + 1);
    if (line) {
        vsnprintf(line, (size_t)n + 1, fmt, ap2);
        kevo_event ev = {.kind = kind, .text = line, .cand_id = cand_id, .device = -1};
        fn(ctx, &ev);
        if (line != small)
            free(line);
    }
    va_end(ap2);
}

void kv_emit(kevo_event_fn fn, void *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kv_vemit(fn, ctx, kind, cand_id, fmt, ap);
    va_end(ap);
}

void kv_utc_iso(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *kv_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *kv_term_clean(char *s)
{
    if (!s)
        return s;
    unsigned char *r = (unsigned char *)s, *w = r;
    while (*r) {
        unsigned char c = *r;
        /* the length a lead byte announces (0: it cannot start a character) */
        size_t n = c < 0x80                   ? 1
                   : (c >= 0xC2 && c <= 0xDF) ? 2
                   : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4
                                              : 0;
        size_t k = 1;
        while (k < n && (r[k] & 0xC0) == 0x80)
            k++;
        /* overlong forms and UTF-16 surrogates are no characters either */
        bool bad = n == 0 || k < n || (c == 0xE0 && r[1] < 0xA0) || (c == 0xED && r[1] >= 0xA0) ||
                   (c == 0xF0 && r[1] < 0x90) || (c == 0xF4 && r[1] >= 0x90);
        if (bad) { /* a stray, cut-off or ill-formed byte */
            *w++ = '?';
            r++;
        } else if ((n == 1 && (c < 0x20 || c == 0x7f)) || (n == 2 && c == 0xC2 && r[1] < 0xA0)) {
            *w++ = ' '; /* C0, DEL, C1 (U+0080..U+009F) */
            r += n;
        } else {
            memmove(w, r, n);
            w += n;
            r += n;
        }
    }
    *w = '\0';
    return s;
}

void kv_dirname(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, n, ".");
        return;
    }
    size_t len = (size_t)(slash - path);
    if (len == 0)
        len = 1;
    snprintf(out, n, "%.*s", (int)len, path);
}

bool kv_is_ident(const char *s, size_t max_len)
{
    if (!s || !*s || strlen(s) > max_len)
        return false;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

size_t kv_header_name_len(const char *s)
{
    size_t n = 0;
    for (char c = s[0]; (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '.' || c == '/' || c == '-';
         c = s[++n])
        ;
    return n;
}

bool kv_list_next(const char **p, const char **item, size_t *len)
{
    if (!*p)
        return false;
    *item = *p;
    *len = strcspn(*p, ",");
    *p = (*p)[*len] ? *p + *len + 1 : NULL;
    return true;
}

bool kv_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

uint64_t kv_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t kv_rand_below(uint64_t *state, uint64_t n)
{
    if (n == 0)
        return 0;
    /* rejection sampling keeps the draw uniform */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do
        r = kv_rand_next(state);
    while (r >= limit);
    return r % n;
}

/* ---- signals ---- */

/* The signals a command records: SIGINT and SIGTERM always, the others
 * (each ends a process by default and can be caught without harm) only
 * while their disposition is the default. */
static const int kv_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1,
                              SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF};
#define KV_NSIGS ((int)(sizeof kv_sigs / sizeof kv_sigs[0]))

const int *kv_signals_ending(int *n)
{
    *n = KV_NSIGS;
    return kv_sigs;
}

const char *kv_signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    default: return "a signal";
    }
}

void kv_child_init(pid_t parent)
{
    signal(SIGINT, SIG_IGN);
    for (int i = 1; i < KV_NSIGS; i++) { /* SIGTERM and the others: as by default, not the parent's recorder */
        struct sigaction now;
        if (i == 1 || (sigaction(kv_sigs[i], NULL, &now) == 0 &&
                       ((now.sa_flags & SA_SIGINFO) || (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN))))
            signal(kv_sigs[i], SIG_DFL);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the parent died before the line above */
        _exit(1);
}

bool kv_proc_id(long long pid, char out[KEVO_PROC_ID_MAX])
{
    out[0] = '\0';
    if (pid <= 0)
        return false;
    char path[64], line[1024], boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return false;
    bool ok = fgets(boot, sizeof boot, f) != NULL;
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    f = ok && boot[0] ? fopen(path, "r") : NULL;
    if (!f)
        return false;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* pid (comm) state ppid ...: starttime is field 22, the 20th after the comm's ')' */
    const char *p = strrchr(line, ')');
    if (p && (p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')) /* a zombie has ended */
        return false;
    for (int field = 3; p && field <= 22; field++) {
        p += strspn(p + 1, " ") + 1; /* the field's first byte */
        if (field < 22)
            p = *p ? strchr(p, ' ') : NULL;
    }
    char *end = NULL;
    unsigned long long start = p && *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
    if (!end || (*end != ' ' && *end != '\n' && *end != '\0'))
        return false;
    int w = snprintf(out, KEVO_PROC_ID_MAX, "%s/%llu", boot, start);
    if (w < 0 || w >= KEVO_PROC_ID_MAX) {
        out[0] = '\0';
        return false;
    }
    return true;
}

bool kv_proc_end(long long pid, const char *id)
{
    char now[KEVO_PROC_ID_MAX];
    if (!id || !id[0] || pid <= 0 || pid == (long long)getpid() || !kv_proc_id(pid, now) || strcmp(now, id) != 0)
        return false;
    return kill((pid_t)pid, SIGKILL) == 0;
}
