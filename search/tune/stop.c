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
 * The run's stop_reason is the rule that held ("budget" when none other did). */
#define _POSIX_C_SOURCE 200809L
#include "search/tune/tune_int.h"

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
        if (!kv_interrupted())
            return KEVO_STOP_GO;
        if (st)
            st->interrupted = true;
        return KEVO_STOP_END;
    case KEVO_STOP_AT_TURN:
        if (kv_interrupted()) {
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
