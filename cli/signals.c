/* signals.c — the CLI's signal handlers: a signal that would end kevo
 * cancels the running command's kevo_ctx instead, so that the library
 * stores what it finished and says how to resume.
 *
 * The handlers only record (no SA_RESTART, so a blocking poll, read or
 * sleep returns EINTR and the library looks at its flag); a write past the
 * file size limit then fails with EFBIG instead of killing kevo.  Once the
 * call has stopped listening (kevo_ctx_cancel returns 1: it writes down how
 * it ended), a further signal takes its previous action at once (the
 * default: kevo ends), but for SIGXFSZ or SIGXCPU when that was the signal
 * that cancelled: it stays ignored, so that the writes kevo still makes
 * (closing the DB) fail instead of killing it before it says how to resume. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "util/util.h"
#include "cli/cli_int.h"

#define CS_MAX 16

static kevo_ctx *volatile cs_ctx; /* the command's handle while the handlers are installed */
static const int *cs_sigs;
static int cs_n;
static struct sigaction cs_old[CS_MAX];
static volatile sig_atomic_t cs_installed[CS_MAX];
static bool cs_catching;

static void cs_on_signal(int sig)
{
    int saved = errno;
    kevo_ctx *ctx = cs_ctx;
    if (ctx && kevo_ctx_cancel(ctx, sig) &&
        !((sig == SIGXFSZ || sig == SIGXCPU) && kevo_ctx_cancelled(ctx) == sig)) {
        for (int i = 0; i < cs_n; i++) { /* a second signal: its previous action, now */
            if (cs_sigs[i] == sig && cs_installed[i]) {
                sigaction(sig, &cs_old[i], NULL);
                cs_installed[i] = 0;
            }
        }
        raise(sig); /* delivered once this handler returns */
    }
    errno = saved;
}

void cli_signals_catch(kevo_ctx *ctx)
{
    if (cs_catching)
        cli_signals_restore();
    cs_sigs = kv_signals_ending(&cs_n);
    if (cs_n > CS_MAX)
        cs_n = CS_MAX;
    cs_ctx = ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cs_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: blocking calls return EINTR */
    for (int i = 0; i < cs_n; i++) {
        struct sigaction now;
        cs_installed[i] = 0;
        /* SIGINT and SIGTERM always; another only while its disposition is the default (a signal someone
           ignores, as nohup does SIGHUP, stays ignored) */
        if (i >= 2 && (sigaction(cs_sigs[i], NULL, &now) != 0 || now.sa_handler != SIG_DFL ||
                       (now.sa_flags & SA_SIGINFO)))
            continue;
        cs_installed[i] = sigaction(cs_sigs[i], &sa, &cs_old[i]) == 0;
    }
    cs_catching = true;
}

void cli_signals_restore(void)
{
    if (!cs_catching)
        return;
    int caught = kevo_ctx_cancelled(cs_ctx);
    for (int i = 0; i < cs_n; i++) {
        if (!cs_installed[i])
            continue;
        /* a resource limit met once is met again by the next write: from now on such a write fails with
         * EFBIG instead of killing kevo */
        if ((cs_sigs[i] == SIGXFSZ || cs_sigs[i] == SIGXCPU) && caught == cs_sigs[i])
            signal(cs_sigs[i], SIG_IGN);
        else
            sigaction(cs_sigs[i], &cs_old[i], NULL);
        cs_installed[i] = 0;
    }
    cs_ctx = NULL;
    cs_catching = false;
}

int cli_signal_exit(const kevo_ctx *ctx)
{
    int sig = kevo_ctx_cancelled(ctx);
    return sig > 0 ? 128 + sig : 130;
}
