/* kevo.h — public API of kevo, a search for fast GPU kernels (IKBO first).
 *
 * The library parts (op specs, template spaces, the search, the store) are
 * reached through the module headers; this header holds what every module and
 * every caller shares: the status codes and the error buffer.  It names no
 * CUDA, curl or SQLite type.
 */
#ifndef KEVO_H
#define KEVO_H

#include <stdbool.h>
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

/* Events: what a call reports while it runs.  The library never prints;
 * progress lines, warnings, a live bar's state and traces reach the caller
 * through one callback (libcurl's CURLOPT_DEBUGFUNCTION is the model), set in
 * a call's options or on a handle.  No callback: the call is silent.  An
 * event and its text live only for the callback's duration. */
typedef enum kevo_event_kind {
    KEVO_EVENT_LINE = 0,     /* a line of the call's account (stdout in the CLI): a setting, a
                                summary, a note about a candidate (cand_id set) */
    KEVO_EVENT_WARNING = 1,  /* a note (stderr in the CLI): something left out, waited for or given
                                up, an MPI rank lost or the ranks at start; the call goes on */
    KEVO_EVENT_PROGRESS = 2, /* where a run stands, for a live bar: done of budget, best, elapsed_s,
                                text what it does now ("compiling 3") */
    KEVO_EVENT_TRACE = 3,    /* one step of a tuning loop: text the step ("propose", "compile",
                                "submit", "done", "apply", ...), cand_id the candidate (a count for
                                "propose", "register" and "round"), device the GPU slot (-1: none),
                                t seconds since the loop began; several per candidate */
    KEVO_EVENT_DEBUG = 4,    /* a diagnostic line for benchmarks and bug reports: a GPU worker's
                                evaluation phases, its reference check, a replay's evaluation
                                (cand_id: its number) */
    KEVO_EVENT_CANDIDATE = 5, /* a candidate finished and was stored: cand its figures as data (text
                                 ""), for the caller to show as it likes (the CLI: one stdout line) */
} kevo_event_kind;

/* What became of a finished candidate. */
typedef enum kevo_cand_outcome {
    KEVO_CAND_FAILED = 0,   /* rejected, failed to compile, crashed or failed its check: fail, why */
    KEVO_CAND_COMPILED = 1, /* compiled, not timed (a compile-only run): the compile's figures */
    KEVO_CAND_TIMED = 2,    /* verified and timed at one shape: median_ms and the ratios */
    KEVO_CAND_TIMED_DIST = 3, /* verified and timed over a distribution of shapes: the first shape's
                                 median_ms and vs_peer, and fitness (the weighted geomean of vs_peer) */
} kevo_cand_outcome;

/* A finished candidate, as a KEVO_EVENT_CANDIDATE carries it.  Strings are
 * never NULL ("": none) and may quote a DB, a space file or a generator's
 * reply: a terminal gets them through a cleaner.  Times in ms; speedup is
 * over the op's stage-0 baseline, vs_peer over the fastest checked peer. */
typedef struct kevo_cand_event {
    kevo_cand_outcome outcome;
    int64_t id;              /* the candidate's row id */
    int64_t done, budget;    /* candidates finished (this one included) of the run's budget */
    const char *family;      /* its kernel family (a generator's own source: "<move>_call<N>") */
    const char *config;      /* its parameters, "BN=224 STAGES=3 ..."; "" when it has none to show */
    const char *move;        /* the move that made it from parent (and parent2); "": a seed */
    int64_t parent, parent2; /* the candidates it came from, when move is set; parent2 0: one */
    const char *fail, *why;  /* FAILED: the failure kind's name and its message */
    bool cached;             /* COMPILED: the binary came from the DB's cache */
    double compile_s;        /* COMPILED: the compile's seconds */
    int regs, spill_bytes;   /* COMPILED: registers per thread, bytes spilled */
    int smem_kb;             /* COMPILED: dynamic shared memory, KiB (rounded down) */
    double median_ms, speedup, vs_peer, tflops, roofline, rel_err; /* TIMED (DIST: median_ms, vs_peer) */
    double fitness;          /* TIMED_DIST: the weighted geomean of vs_peer over the shapes */
    double best;             /* TIMED: the run's best speedup so far; TIMED_DIST: its best fitness */
    const char *gpu;         /* FAILED, TIMED: the GPU that ran it when several evaluate; "" otherwise */
    const char *note;        /* a compiler warning worth a look ("ptxas: wgmma serialized"); "" none */
} kevo_cand_event;

typedef struct kevo_event {
    kevo_event_kind kind;
    const char *text;  /* never NULL; no newline.  It may quote a DB, a space file or an LLM reply:
                          a terminal gets it through a cleaner (the CLI's kv_term_clean) */
    int64_t cand_id;   /* the candidate a LINE, TRACE or DEBUG is about; 0 none */
    int device;        /* TRACE: the GPU slot (-1: none) */
    double t;          /* TRACE: seconds since the loop began */
    int64_t done, budget; /* PROGRESS: candidates finished, of budget */
    double best;       /* PROGRESS: best speedup so far (0: none yet) */
    double elapsed_s;  /* PROGRESS: seconds since the run began */
    const kevo_cand_event *cand; /* CANDIDATE: the candidate (cand_id is its id); NULL otherwise */
} kevo_event;

/* A caller's event handler; ctx is the pointer given with it. */
typedef void (*kevo_event_fn)(void *ctx, const kevo_event *ev);

/* A call's handle, in the manner of libcurl's easy handle: what a caller
 * gives every long library call (kevo_tune, kevo_verify, kevo_replay,
 * kevo_export, kevo_profile_run): where its events go, a cancel flag the
 * caller may raise from anywhere (a signal handler included), and the error
 * buffer of the call's failure.  The library keeps no process-wide cancel
 * state and installs no signal handler: a caller that wants Ctrl-C to stop
 * a call installs its own and calls kevo_ctx_cancel there.  A handle serves
 * one call at a time; handles are independent of each other. */
typedef struct kevo_ctx kevo_ctx;

/* A new handle (no callback, not cancelled, no error); NULL when out of memory. */
kevo_ctx *kevo_ctx_new(void);

/* Free a handle; ctx may be NULL. */
void kevo_ctx_free(kevo_ctx *ctx);

/* Where the calls made with ctx report their events (NULL: silent); user
 * is handed back to fn with each. */
void kevo_ctx_set_events(kevo_ctx *ctx, kevo_event_fn fn, void *user);

/* Ask the call running with ctx to stop (it returns KEVO_ERR_INTERRUPTED,
 * keeping what it finished).  why (nonzero; a signal number where a signal
 * asked) is what the call's message names; the first why is kept.
 * Async-signal-safe: it only stores to volatile sig_atomic_t fields.
 * Returns 1 when the call had already been cancelled and has passed the
 * point where it stops listening (it is writing down how it ended): a
 * signal handler may then take the signal's default action; else 0. */
int kevo_ctx_cancel(kevo_ctx *ctx, int why);

/* The why of the first kevo_ctx_cancel since the handle was made or
 * reset, 0 for none.  Async-signal-safe. */
int kevo_ctx_cancelled(const kevo_ctx *ctx);

/* Clear the cancel flag and the error buffer, for the handle's next call. */
void kevo_ctx_reset(kevo_ctx *ctx);

/* The error buffer: the failure of the last call made with ctx (status
 * KEVO_OK and "" when it succeeded).  Never NULL for a non-NULL ctx. */
const kevo_err *kevo_ctx_error(const kevo_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* KEVO_H */
