/* stop.c — when a run stops.  Every rule goes through kevo_stop_check, each
 * asked where the loop can act on it:
 *   a signal        (a turn, a step of a round)  the loop ends at once; the run
 *                   is stored as interrupted, its pending rows resume
 *   the time limit, the target, the plateau     (a turn)  nothing more is
 *                   proposed; the rounds in flight finish
 *   the budget      (a turn)  nothing more is proposed once what is applied and
 *                   in flight fills it; (idle) the end once it is spent
 *   exhausted       (the round generator proposed nothing) the end when nothing
 *                   is in flight and no generator's call is coming
 * The run's stop_reason is the rule that held ("budget" when none other did).
 * tn_interrupted words the error of a run a signal stopped. */
#define _POSIX_C_SOURCE 200809L
#include "search/tune/tune_int.h"

#include <string.h>

void kevo_stop_init(kevo_stop *st, const kevo_run_def *def, double elapsed0, double t0)
{
    st->budget = def->budget;
    st->time_limit = def->time_limit;
    st->plateau = def->plateau;
    st->target = def->target;
    st->elapsed0 = elapsed0;
    st->t0 = t0;
    st->reason = "budget";
    st->draining = false;
    st->interrupted = false;
}

/* The rules that stop proposing, once: the time limit over the run's
 * processes, the target speedup, the plateau of candidates without a better
 * one. */
static void st_rules(kevo_stop *st, const kevo_stop_facts *f)
{
    if (st->draining)
        return;
    if (st->time_limit > 0 && st->elapsed0 + kv_now() - st->t0 >= st->time_limit)
        st->reason = "time_limit";
    else if (st->target > 0 && f->best >= st->target)
        st->reason = "target";
    else if (st->plateau > 0 && f->done - f->last_gain >= st->plateau)
        st->reason = "plateau";
    else
        return;
    st->draining = true;
}

kevo_stop_act kevo_stop_check(kevo_stop *st, kevo_stop_at at, const kevo_stop_facts *f)
{
    switch (at) {
    case KEVO_STOP_AT_STEP:
        if (!kv_cancelled(st ? st->cancel : NULL))
            return KEVO_STOP_GO;
        if (st)
            st->interrupted = true;
        return KEVO_STOP_END;
    case KEVO_STOP_AT_TURN:
        if (kv_cancelled(st->cancel)) {
            st->interrupted = true;
            return KEVO_STOP_END;
        }
        st_rules(st, f);
        if (st->draining)
            return KEVO_STOP_DRAIN;
        return f->done + f->inflight < st->budget ? KEVO_STOP_GO : KEVO_STOP_FULL;
    case KEVO_STOP_AT_EMPTY:
        /* nothing to propose with nothing in flight is the end; with rounds in flight, or a call coming,
         * their results may give the policy something */
        if (f->busy || f->inflight > 0)
            return KEVO_STOP_GO;
        st->reason = "exhausted";
        return KEVO_STOP_END;
    case KEVO_STOP_AT_IDLE:
        return st->draining || f->done >= st->budget ? KEVO_STOP_END : KEVO_STOP_GO;
    }
    return KEVO_STOP_GO;
}

/* ---- the interrupted run's message ---- */

/* A path as one shell word (single-quoted when it needs quoting). */
static void tn_shell_word(kv_buf *b, const char *s)
{
    bool plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("_./-+=:,@%", *p) != NULL;
    if (plain) {
        kv_buf_puts(b, s);
        return;
    }
    kv_buf_puts(b, "'");
    for (const char *p = s; *p; p++)
        if (*p == '\'')
            kv_buf_puts(b, "'\\''");
        else
            kv_buf_append(b, p, 1);
    kv_buf_puts(b, "'");
}

kevo_status tn_interrupted(kevo_err *err, int why, int64_t run_id, const char *db_path, int written)
{
    const char *name = kv_signal_name(why);
    if (run_id <= 0)
        return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by %s before the run started; nothing was stored",
                            name);
    kv_buf cmd;
    kv_buf_init(&cmd);
    kv_buf_printf(&cmd, "kevo tune --resume %lld --db ", (long long)run_id);
    tn_shell_word(&cmd, db_path);
    kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by %s: run %lld is %s; continue it with: %s", name,
                 (long long)run_id,
                 written == 1 ? "stored as interrupted"
                 : written    ? "still marked running by this ended process (the DB could not be written)"
                              : "unchanged",
                 cmd.data ? cmd.data : "");
    kv_buf_release(&cmd);
    return KEVO_ERR_INTERRUPTED;
}
