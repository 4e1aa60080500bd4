/* util.h — small helpers every kevo module uses: growable buffers, files,
 * hashing, clocks. */
#ifndef KEVO_UTIL_H
#define KEVO_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kevo.h"

/* Growable byte buffer; always NUL-terminated when len > 0 or after any
 * append, so text can be read through .data.  Owns .data. */
typedef struct kv_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit; /* 0: no limit; else appends past it fail with KEVO_ERR_NOMEM */
} kv_buf;

void kv_buf_init(kv_buf *b);
void kv_buf_release(kv_buf *b);
kevo_status kv_buf_append(kv_buf *b, const void *p, size_t n);
kevo_status kv_buf_puts(kv_buf *b, const char *s);
kevo_status kv_buf_printf(kv_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Give up ownership of the data (caller frees); b is left empty. */
char *kv_buf_take(kv_buf *b);

/* Read a whole file into *out (NUL-terminated, caller frees).
 * Errors: KEVO_ERR_IO with the path quoted in err. */
kevo_status kv_read_file(const char *path, char **out, size_t *len, kevo_err *err);

/* Write a whole file, never destroying what the path is.  By the kind of
 * file at path:
 *   - none, or a regular file: written to a new temporary file beside it
 *     (O_EXCL; an existing file's permissions kept) and renamed over it, so
 *     a reader sees the old or the new content whole, never a mix;
 *   - a character or block device, FIFO or socket (/dev/null, a named pipe,
 *     a terminal): written through in place (O_WRONLY|O_TRUNC, no rename),
 *     so it stays a device (a FIFO waits for its reader, as a shell's > does);
 *   - a symbolic link: refused, because replacing it destroys the link and
 *     writing through it changes a file the path does not name; except a
 *     link to a special file as above (/dev/stdout on a pipe or terminal,
 *     /dev/fd/N), written through, and a link to the file this process's
 *     stdout or stderr is (/dev/stdout redirected to a file), written to
 *     that stream after flushing it;
 *   - a folder: refused.
 * Errors: KEVO_ERR_IO naming the path and why, KEVO_ERR_ARG for a path too
 * long. */
kevo_status kv_write_file(const char *path, const void *data, size_t len, kevo_err *err);

/* Read a whole file that must be a regular file (a space file, a template
 * source, a prompt): a FIFO, device, socket or folder is refused without
 * blocking (opened O_NONBLOCK, checked with fstat on what was opened), and
 * so is a file over max bytes (0: no cap).  *out NUL-terminated, caller
 * frees; *len may be NULL.  Errors: KEVO_ERR_IO naming the path and why. */
kevo_status kv_read_regular_file(const char *path, size_t max, char **out, size_t *len, kevo_err *err);

/* Whether paths a and b name one file: the same device and inode, symbolic
 * links followed (a hard link, a symlink or another spelling of a path is
 * the same file; names are never compared).  False when either does not
 * exist or cannot be looked at. */
bool kv_same_file(const char *a, const char *b);

/* The index in inputs[0..n) of the file that path names (kv_same_file), or
 * -1 for none; NULL entries are skipped.  What an output is checked against
 * before anything is written to it: the files the command reads. */
int kv_file_among(const char *path, const char *const *inputs, int n);

/* Write all len bytes of data to fd, retrying short writes and EINTR.
 * false on an error or a write of 0 (errno says which). */
bool kv_write_all(int fd, const void *data, size_t len);

/* Read exactly len bytes from fd into data, retrying short reads and EINTR.
 * false on an error or at the end of the file before len bytes. */
bool kv_read_all(int fd, void *data, size_t len);

/* SHA-256 of the concatenation of n buffers, as 64 lower-case hex digits
 * plus NUL in hex[65].  Uses OpenSSL's EVP interface. */
void kv_sha256_hex(const void *const *bufs, const size_t *lens, int n, char hex[65]);

/* Monotonic clock in seconds. */
double kv_now(void);

/* Format a line and hand it to fn as an event of kind about cand_id (0:
 * none); the other fields are zero (device -1).  Nothing when fn is NULL;
 * a line that cannot be allocated is dropped. */
void kv_emit(kevo_event_fn fn, void *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* kv_emit with the arguments in ap. */
void kv_vemit(kevo_event_fn fn, void *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

/* Wall-clock time as "YYYY-MM-DDTHH:MM:SSZ" in out[32]. */
void kv_utc_iso(char out[32]);

/* strdup that reports failure through NULL only. */
char *kv_strdup(const char *s);

/* Make text from an untrusted source (a DB row, a space file, a message that
 * quotes one) safe to print on a terminal, in place: every control character
 * (C0 such as ESC, CR, LF and TAB; DEL; C1 such as U+009B, the one-character
 * CSI) becomes one space, and a byte that is not part of a UTF-8 sequence
 * becomes '?', so no escape sequence or line break survives.  The text never
 * grows.  s may be NULL; returns s. */
char *kv_term_clean(char *s);

/* Directory part of a path ("a/b/c.json" -> "a/b", "c" -> ".") in out. */
void kv_dirname(const char *path, char *out, size_t n);

/* Parse a decimal int64 with no trailing junk; false on junk or overflow. */
bool kv_parse_i64(const char *s, int64_t *out);

/* One item of a comma-separated list: *item and *len get the text up to the
 * next ',' or the end, and *p moves past it (NULL after the last item, so
 * "a," has a last, empty item and "" one empty item).  False once *p is
 * NULL.  Usage: for (const char *p = list, *it; kv_list_next(&p, &it, &n);) */
bool kv_list_next(const char **p, const char **item, size_t *len);

/* Whether s is a C identifier ([A-Za-z_][A-Za-z0-9_]*) of 1..max_len bytes. */
bool kv_is_ident(const char *s, size_t max_len);

/* Length of s's leading run of the characters kevo takes in a system header
 * name written between angle brackets: letters, digits and _ . / - (a space
 * file's "prelude" names, a source's prelude lines). */
size_t kv_header_name_len(const char *s);

/* splitmix64: a small seeded generator for reproducible host-side choices
 * (Steele, Lea, Flood 2014). */
uint64_t kv_rand_next(uint64_t *state);
/* Uniform integer in [0, n). */
uint64_t kv_rand_below(uint64_t *state, uint64_t n);

/* Interruption of a long command is the caller's (kevo_ctx_cancel, from its
 * own signal handlers; cli/signals.c).  kv_signals_ending() lists the
 * signals a command records: SIGINT and SIGTERM, and every other signal
 * whose default is to end the process and that can be caught without
 * losing the program's state (SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2,
 * SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF; not SIGPIPE, which the GPU side
 * ignores); SIGINT and SIGTERM come first.  *n receives the count. */
const int *kv_signals_ending(int *n);
/* A signal's name ("SIGXFSZ"), "a signal" when it has none kevo knows. */
const char *kv_signal_name(int sig);

/* Call first thing in a child forked by kevo (compile children, GPU
 * workers): it dies with SIGKILL when the process that forked it dies
 * (kill -9 included; PR_SET_PDEATHSIG, then a getppid() check closes the
 * race of a parent that died before), and it ignores SIGINT (a Ctrl-C
 * reaches the whole process group; the parent decides and kills its
 * children) while SIGTERM, and the others of kv_signals_ending() that the
 * parent handles (a caller's recorder), act as by default. */
void kv_child_init(pid_t parent);

/* A process's identity on this host, "<boot id>/<start time in clock
 * ticks since boot>" (Linux /proc), into out (KEVO_PROC_ID_MAX bytes): a pid
 * is reused once its process is gone, the pair is not.  False (out "")
 * where /proc does not say (no such process, a zombie, another OS). */
#define KEVO_PROC_ID_MAX 64
bool kv_proc_id(long long pid, char out[KEVO_PROC_ID_MAX]);

/* SIGKILL pid when it is still the process whose kv_proc_id was id (and
 * not this process).  True when the signal went out; false when id is
 * empty, the process is gone or another one has its pid, or kill fails. */
bool kv_proc_end(long long pid, const char *id);

#define KV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif /* KEVO_UTIL_H */
