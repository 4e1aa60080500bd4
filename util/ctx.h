/* ctx.h — inside the library: what a kevo_ctx (include/kevo.h) holds, and
 * the cancel flag deep loops read.
 *
 * A loop that may wait (a compile pool, a GPU worker's reply, MPI, the LLM
 * client, a DB lock) takes a kv_cancel pointer from its caller's handle
 * (kv_ctx_flag) and stops with KEVO_ERR_INTERRUPTED once kv_cancelled() is
 * nonzero; a NULL pointer is never cancelled. */
#ifndef KEVO_UTIL_CTX_H
#define KEVO_UTIL_CTX_H

#include <signal.h>
#include <stdint.h>

#include "kevo.h"

/* A cancel flag as loops read it: 0, or the why of kevo_ctx_cancel. */
typedef const volatile sig_atomic_t kv_cancel;

struct kevo_ctx {
    kevo_event_fn fn;
    void *user;
    volatile sig_atomic_t why;    /* the first kevo_ctx_cancel's why, kept for the messages */
    volatile sig_atomic_t flag;   /* what loops read: why until the call ends (kv_ctx_ending), then 0 */
    volatile sig_atomic_t ending; /* the call stopped listening: it writes down how it ended */
    kevo_err err;
};

/* The why a loop stops for (nonzero), 0 to go on; c may be NULL. */
static inline int kv_cancelled(kv_cancel *c)
{
    return c ? (int)*c : 0;
}

/* ctx's cancel flag for the loops of its call; NULL for a NULL ctx. */
kv_cancel *kv_ctx_flag(kevo_ctx *ctx);
/* ctx's why (kevo_ctx_cancelled), 0 for a NULL ctx. */
int kv_ctx_why(const kevo_ctx *ctx);
/* The event callback and its pointer; NULL for a NULL ctx. */
kevo_event_fn kv_ctx_fn(const kevo_ctx *ctx);
void *kv_ctx_user(const kevo_ctx *ctx);
/* Format a line and hand it to ctx's event callback (kevo_ctx_set_events,
 * as it is at the time of the call) as an event of kind about cand_id (0:
 * none), as kv_emit (util/util.h) does; nothing for a NULL ctx or one
 * without a callback.  What a handle made with a ctx (a DB, a compile pool,
 * an MPI job) says goes through here, to that ctx alone. */
void kv_ctx_emit(const kevo_ctx *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The error buffer a call writes; NULL for a NULL ctx. */
kevo_err *kv_ctx_err(kevo_ctx *ctx);
/* A cancelled call stops listening: from now on its loops read 0 (what it
 * still writes is not cut short) and a further kevo_ctx_cancel returns 1,
 * so that a second signal may end the process. */
void kv_ctx_ending(kevo_ctx *ctx);

#endif
