/* kevo.h — public API of kevo, a search for fast GPU kernels (IKBO first).
 *
 * The library parts (op specs, template spaces, the search, the store) are
 * reached through the module headers; this header holds what every module and
 * every caller shares: the status codes and the error buffer.  It names no
 * CUDA, curl or SQLite type.
 */
#ifndef KEVO_H
#define KEVO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEVO_VERSION "0.1.0"

/* Status of a library call.  Append-only: values never change meaning.
 * A candidate kernel that fails is not an error of the call that evaluated
 * it; it is a result row with a failure kind (see evaluator/eval.h). */
typedef enum kevo_status {
    KEVO_OK = 0,
    KEVO_ERR_ARG = 1,         /* bad argument or malformed input */
    KEVO_ERR_NOMEM = 2,       /* allocation failed */
    KEVO_ERR_IO = 3,          /* file or pipe error */
    KEVO_ERR_DB = 4,          /* SQLite error, or not a kevo database */
    KEVO_ERR_PARSE = 5,       /* malformed JSON, expression or space file */
    KEVO_ERR_NOT_FOUND = 6,   /* unknown op, template, policy, run, ... */
    KEVO_ERR_UNSUPPORTED = 7, /* valid input this build cannot handle */
    KEVO_ERR_NO_GPU = 8,      /* no CUDA driver or no device */
    KEVO_ERR_CUDA = 9,        /* CUDA driver or cuBLAS error */
    KEVO_ERR_NVRTC = 10,      /* NVRTC error outside a candidate */
    KEVO_ERR_WORKER = 11,     /* a worker process died or broke protocol */
    KEVO_ERR_BUSY = 12,       /* the run or database is held by another process */
    KEVO_ERR_INTERNAL = 13,   /* a bug in kevo */
    KEVO_ERR_INTERRUPTED = 14, /* a signal (SIGINT, SIGTERM) stopped the call; what it finished is kept */
} kevo_status;

/* Fixed text for a status; never NULL. */
const char *kevo_status_str(kevo_status s);

/* Error buffer: a call that fails returns a status and writes the details of
 * that one failure here (lower-case, no full stop, subject quoted). */
typedef struct kevo_err {
    kevo_status status;
    char msg[1024];
} kevo_err;

/* Clear an error buffer. */
void kevo_err_clear(kevo_err *err);

/* Record a failure in err (which may be NULL) and return s, so that callers
 * write `return kevo_err_set(err, KEVO_ERR_ARG, "bad shape '%s'", s);`. */
kevo_status kevo_err_set(kevo_err *err, kevo_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefix the message already in err with more context ("open 'x.db': ..."). */
void kevo_err_prefix(kevo_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* KEVO_H */
