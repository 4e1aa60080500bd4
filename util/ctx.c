/* ctx.c — kevo_ctx: a call's events, cancel flag and error buffer. */
#include "util/ctx.h"

#include <stdarg.h>
#include <stdlib.h>

#include "util/util.h"

kevo_ctx *kevo_ctx_new(void)
{
    kevo_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx)
        kevo_ctx_reset(ctx);
    return ctx;
}

void kevo_ctx_free(kevo_ctx *ctx)
{
    free(ctx);
}

void kevo_ctx_set_events(kevo_ctx *ctx, kevo_event_fn fn, void *user)
{
    if (!ctx)
        return;
    ctx->fn = fn;
    ctx->user = user;
}

int kevo_ctx_cancel(kevo_ctx *ctx, int why)
{
    if (!ctx)
        return 0;
    if (ctx->ending)
        return 1;
    if (!ctx->why)
        ctx->why = why ? why : -1;
    ctx->flag = ctx->why;
    return 0;
}

int kevo_ctx_cancelled(const kevo_ctx *ctx)
{
    return ctx ? (int)ctx->why : 0;
}

void kevo_ctx_reset(kevo_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->ending = 0;
    ctx->flag = 0;
    ctx->why = 0;
    kevo_err_clear(&ctx->err);
}

const kevo_err *kevo_ctx_error(const kevo_ctx *ctx)
{
    return ctx ? &ctx->err : NULL;
}

kv_cancel *kv_ctx_flag(kevo_ctx *ctx)
{
    return ctx ? &ctx->flag : NULL;
}

int kv_ctx_why(const kevo_ctx *ctx)
{
    return ctx ? (int)ctx->why : 0;
}

kevo_event_fn kv_ctx_fn(const kevo_ctx *ctx)
{
    return ctx ? ctx->fn : NULL;
}

void *kv_ctx_user(const kevo_ctx *ctx)
{
    return ctx ? ctx->user : NULL;
}

void kv_ctx_emit(const kevo_ctx *ctx, kevo_event_kind kind, int64_t cand_id, const char *fmt, ...)
{
    if (!ctx || !ctx->fn)
        return;
    va_list ap;
    va_start(ap, fmt);
    kv_vemit(ctx->fn, ctx->user, kind, cand_id, fmt, ap);
    va_end(ap);
}

kevo_err *kv_ctx_err(kevo_ctx *ctx)
{
    return ctx ? &ctx->err : NULL;
}

void kv_ctx_ending(kevo_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->ending = 1;
    ctx->flag = 0;
}
