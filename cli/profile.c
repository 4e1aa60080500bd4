/* profile.c — `kevo profile` (profile.h). */
#define _GNU_SOURCE
#include "cli/profile.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_int.h"
#include "cli/opts.h"
#include "db/profile.h"
#include "db/store.h"
#include "search/profile_run.h"
#include "util/util.h"

typedef struct {
    const char *db_path, *ncu;
    int64_t cand;
    double timeout;
    int device;
} cli_profile_args;

#define FA(f) .off = offsetof(cli_profile_args, f)
/* Every option of `kevo profile` (its help text is CLI_PROFILE_USAGE). */
static const cli_opt cli_profile_opts[] = {
    {"db", CLI_OPT_STR, FA(db_path)},
    {"candidate", CLI_OPT_I64, FA(cand), .lo = 1, .hi = INT64_MAX, .bad = "--candidate takes a candidate id, not '%s'"},
    {"ncu", CLI_OPT_STR, FA(ncu)},
    {"timeout", CLI_OPT_DBL, FA(timeout), .dlo = 1, .dhi = 86400,
     .bad = "--timeout takes seconds from 1 to 86400, not '%s'"},
    {"device", CLI_OPT_INT, FA(device), .lo = 0, .hi = 1024, .bad = "--device takes a device ordinal, not '%s'"},
};
#undef FA

static void cli_profile_say(kevo_status st, const kevo_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : kevo_status_str(st));
    fprintf(stderr, "kevo profile: %s\n", kv_term_clean(msg));
}

/* Without ncu's figures: what the DB has of the candidate (derived). */
static void cli_profile_derived(const kevo_cand_row *c)
{
    char line[512];
    size_t n = (size_t)snprintf(line, sizeof line, "candidate %lld (derived, no counters):", (long long)c->id);
    const char *sep = " ";
#define CLI_PUT(...)                                                                                   \
    do {                                                                                               \
        n += (size_t)snprintf(line + n, sizeof line - n, "%s", sep);                                   \
        n += (size_t)snprintf(line + n, sizeof line - n, __VA_ARGS__);                                 \
        sep = ", ";                                                                                    \
    } while (0)
    if (isfinite(c->median_ms))
        CLI_PUT("%.4f ms", c->median_ms);
    if (isfinite(c->tflops))
        CLI_PUT("%.1f TFLOP/s", c->tflops);
    if (isfinite(c->roofline))
        CLI_PUT("%.0f%% of the roofline", 100 * c->roofline);
    if (c->regs >= 0)
        CLI_PUT("%d registers", c->regs);
    if (c->spill_bytes >= 0)
        CLI_PUT("%d bytes spilled", c->spill_bytes);
#undef CLI_PUT
    if (sep[0] == ' ')
        snprintf(line + n, sizeof line - n, " none stored");
    printf("%s\n", kv_term_clean(line));
}

/* The kevo executable ncu starts: this one. */
static bool cli_profile_self(char *out, size_t outsz)
{
    ssize_t n = readlink("/proc/self/exe", out, outsz - 1);
    if (n <= 0 || (size_t)n >= outsz - 1)
        return false;
    out[n] = '\0';
    return true;
}

/* Profile candidate `cand` of db_path and print its figures on one line:
 * the candidate read first (read-only), ncu found (ncu_opt, $KEVO_NCU,
 * $PATH), kevo_profile_run.  Returns 0, else the status with err filled
 * and, where ncu is absent or cannot read counters, the derived figures
 * printed. */
static kevo_status cli_profile_one(const char *db_path, int64_t cand, const char *ncu_opt, int device,
                                   double timeout, kevo_err *err)
{
    kevo_db *db = NULL;
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    kevo_status st = kevo_db_open_ro(db_path, &db, err);
    if (!st) {
        st = kevo_db_cand_get(db, cand, &c, err);
        kevo_db_close(db);
    }
    if (st) {
        kevo_cand_row_release(&c);
        return st;
    }
    char ncu[PATH_MAX], self[PATH_MAX];
    kevo_profile p;
    st = kevo_profile_find_ncu(ncu_opt, ncu, sizeof ncu, err);
    if (!st && !cli_profile_self(self, sizeof self))
        st = kevo_err_set(err, KEVO_ERR_IO, "%s", "cannot find the kevo executable (/proc/self/exe)");
    if (!st) {
        kevo_profile_run_opts o = {.ncu = ncu, .kevo = self, .db_path = db_path, .cand_id = cand, .plan = c.plan,
                                   .device = device, .timeout_s = timeout};
        kevo_ctx *ctx = cli_ctx_new(); /* its events: a lock on the DB waited for */
        if (!ctx)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "%s", "out of memory");
        else if ((st = kevo_profile_run(ctx, &o, &p)))
            *err = *kevo_ctx_error(ctx);
        kevo_ctx_free(ctx);
    }
    if (st) {
        if (st == KEVO_ERR_NOT_FOUND || st == KEVO_ERR_UNSUPPORTED)
            cli_profile_derived(&c);
        kevo_cand_row_release(&c);
        return st;
    }
    kv_buf line;
    kv_buf_init(&line);
    kevo_profile_line(&p, &line);
    char head[160];
    snprintf(head, sizeof head, "candidate %lld, kernel %s: ", (long long)c.id, p.kernel);
    fputs(kv_term_clean(head), stdout);
    fputs(line.data ? kv_term_clean(line.data) : "", stdout);
    fputc('\n', stdout);
    fflush(stdout);
    kv_buf_release(&line);
    kevo_cand_row_release(&c);
    return KEVO_OK;
}

int cli_profile(int argc, char **argv)
{
    cli_profile_args a = {.timeout = 600};
    int rc = cli_opts_parse("profile", cli_profile_opts, (int)KV_ARRAY_LEN(cli_profile_opts), &a, argc, argv);
    if (rc)
        return rc;
    if (!a.db_path)
        return cli_bad_usage("profile", "%s", "--db is required");
    if (!a.cand)
        return cli_bad_usage("profile", "%s", "--candidate is required");
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = cli_profile_one(a.db_path, a.cand, a.ncu, a.device, a.timeout, &err);
    if (st)
        cli_profile_say(st, &err);
    return st ? 1 : 0;
}

int cli_profile_ncu_check(char *out, size_t outsz)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_profile_find_ncu(NULL, out, outsz, &err);
    if (st)
        return cli_bad_usage("tune", "--profile: %s", err.msg);
    return 0;
}

void cli_profile_best(const char *db_path, const int64_t *runs, int n, int device)
{
    for (int i = 0; i < n; i++) {
        kevo_err err;
        kevo_err_clear(&err);
        kevo_db *db = NULL;
        kevo_run_row r;
        kevo_run_row_init(&r);
        kevo_status st = kevo_db_open_ro(db_path, &db, &err);
        if (!st) {
            st = kevo_db_run_get(db, runs[i], &r, &err);
            kevo_db_close(db);
        }
        if (!st && !r.best_id) {
            printf("run %lld: --profile: no best candidate to profile\n", (long long)runs[i]);
            continue;
        }
        if (!st) {
            printf("run %lld: profiling its best, candidate %lld, with Nsight Compute\n", (long long)runs[i],
                   (long long)r.best_id);
            fflush(stdout);
            st = cli_profile_one(db_path, r.best_id, NULL, device, 600, &err);
        }
        if (st) {
            char msg[sizeof err.msg];
            snprintf(msg, sizeof msg, "%s", err.msg[0] ? err.msg : kevo_status_str(st));
            fprintf(stderr, "kevo: warning: --profile of run %lld: %s\n", (long long)runs[i], kv_term_clean(msg));
        }
    }
}
