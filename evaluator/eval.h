/* eval.h — what an evaluation of a candidate can end in.  A failed candidate
 * is a result with a kind and a message, stored like any other. */
#ifndef KEVO_EVAL_H
#define KEVO_EVAL_H

#include <stdbool.h>

/* Failure kinds; append-only (their names are stored in the DB). */
typedef enum kevo_fail {
    KEVO_FAIL_NONE = 0,
    KEVO_FAIL_COMPILE_ERROR,     /* NVRTC rejected the source */
    KEVO_FAIL_COMPILE_CRASH,     /* the compile child died (NVRTC/ptxas crash) */
    KEVO_FAIL_COMPILE_TIMEOUT,   /* the compile child ran past --compile-timeout */
    KEVO_FAIL_LOAD_ERROR,        /* the cubin would not load, or an entry is missing */
    KEVO_FAIL_LAUNCH_ERROR,      /* a launch failed or a kernel faulted (not an address fault) */
    KEVO_FAIL_ILLEGAL_ADDRESS,   /* the kernel touched memory it does not own */
    KEVO_FAIL_EVAL_TIMEOUT,      /* the GPU worker ran past --eval-timeout (hang, deadlock) */
    KEVO_FAIL_WRONG_RESULT,      /* output differs from the reference beyond tolerance */
    KEVO_FAIL_NAN_OUTPUT,        /* NaN/Inf in the output, or elements left unwritten */
    KEVO_FAIL_RESOURCE_EXCEEDED, /* shared memory, registers or threads beyond the device */
    KEVO_FAIL_WORKER_CRASH,      /* the GPU worker died while evaluating */
    KEVO_FAIL_PLAN_ERROR,        /* the configuration's launch plan did not evaluate (division by zero, a
                                    dimension out of range, ...): nothing compiled or ran */
    /* append-only from here: stored names never change meaning */
    KEVO_FAIL_GEN_ERROR,         /* a generator's call failed (HTTP error, timeout, truncated or malformed reply;
                                    named otherwise in a DB before schema 10, db/store.c) */
    KEVO_FAIL_PARSE_ERROR,       /* a generator's reply held no usable source or launch plan */
    KEVO_FAIL_REJECTED,          /* the static check refused an untrusted source (host code, timers, ...) */
    KEVO_FAIL_INPUT_MODIFIED,    /* the kernel wrote one of the op's input tensors */
    KEVO_FAIL_OUT_OF_BOUNDS,     /* the kernel wrote into the guard bytes around its output or workspace */
    KEVO_FAIL__COUNT
} kevo_fail;

/* Stored name ("compile_error", ...); "none" for KEVO_FAIL_NONE. */
const char *kevo_fail_name(kevo_fail f);
/* Parse a stored name; false when unknown. */
bool kevo_fail_parse(const char *s, kevo_fail *out);

#endif /* KEVO_EVAL_H */
