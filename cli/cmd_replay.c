/* cmd_replay.c — `kevo replay`: a policy against fitness already measured,
 * or (--model) how well each family's cost model ranks it. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/replay.h"
#include "search/search.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

/* `kevo replay --model`: one line (or JSON object) per family. */
static int cli_replay_model(const kevo_replay_opts *o, bool json)
{
    kevo_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return 1;
    kevo_model_fit *f = NULL;
    int n = 0;
    kevo_status st = kevo_replay_model(ctx, o, &f, &n);
    int code = st ? cli_fail(st, kevo_ctx_error(ctx)) : 0;
    kevo_ctx_free(ctx);
    if (st)
        return code;
    if (json)
        printf("{\"model\": [");
    else
        printf("%-12s %6s %9s %12s %14s\n", "family", "n", "spearman", "model's 1st", "best's rank");
    for (int i = 0; i < n; i++) {
        if (json) {
            printf("%s{\"family\": \"%s\", \"n\": %d, \"spearman\": ", i ? ", " : "", f[i].family, f[i].n);
            cli_json_num("%.4f", f[i].spearman);
            printf(", \"top1_ratio\": ");
            cli_json_num("%.4f", f[i].top1_ratio);
            printf(", \"rank_of_best\": %d}", f[i].rank_of_best);
        } else
            printf("%-12s %6d %9.3f %11.1f%% %14d\n", f[i].family, f[i].n, f[i].spearman, 100 * f[i].top1_ratio,
                   f[i].rank_of_best);
    }
    if (json)
        printf("]}\n");
    free(f);
    return 0;
}

/* What `kevo replay` takes from its command line. */
typedef struct {
    kevo_replay_opts o;
    const char *format;
    bool model;
} cli_replay_args;

#define PA(f) .off = offsetof(cli_replay_args, f)
/* Every option of `kevo replay` (its help text is cli_cmds' "replay" usage). */
static const cli_opt cli_replay_opts[] = {
    {"db", CLI_OPT_STR, PA(o.db_path)},
    {"run", CLI_OPT_I64, PA(o.run_id), .lo = 1, .hi = INT64_MAX, .bad = "--run takes a run id, not '%s'"},
    {"policy", CLI_OPT_STR, PA(o.policy)},
    {"seeds", CLI_OPT_INT, PA(o.seeds), .lo = 1, .hi = 10000,
     .bad = "--seeds takes a whole number from 1 to 10000, not '%s'"},
    {"target", CLI_OPT_DBL, PA(o.target), .dlo = 0.000001, .dhi = 1,
     .bad = "--target takes a fraction of the best in (0, 1], not '%s'"},
    {"batch", CLI_OPT_INT, PA(o.batch), .lo = 1, .hi = 256,
     .bad = "--batch takes a whole number from 1 to 256, not '%s'"},
    {"ahead", CLI_OPT_INT, PA(o.ahead), .lo = 1, .hi = 16, .bad = "--ahead takes a whole number from 1 to 16, not '%s'"},
    {"format", CLI_OPT_STR, PA(format)},
    {"templates", CLI_OPT_STR, PA(o.extra_templates)},
    {"model", CLI_OPT_FLAG, PA(model)},
    {"noise", CLI_OPT_DBL, PA(o.noise), .dlo = 0.000001, .dhi = 1,
     .bad = "--noise takes a relative sigma in (0, 1], not '%s'"},
    {"budget", CLI_OPT_INT, PA(o.budget), .lo = 1, .hi = 100000,
     .bad = "--budget takes a whole number from 1 to 100000, not '%s'"},
};
#undef PA

int cmd_replay(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("replay");
    cli_replay_args a = {.format = "table"};
    kevo_replay_opts_init(&a.o);
    a.o.data_dir = cli_data_dir();
    int prc = cli_opts_parse("replay", cli_replay_opts, (int)KV_ARRAY_LEN(cli_replay_opts), &a, argc, argv);
    if (prc)
        return prc;
    kevo_replay_opts o = a.o;
    const char *format = a.format;
    bool model = a.model;
    if (!o.db_path)
        return cli_bad_usage("replay", "%s", "--db is required");
    bool json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "table") != 0)
        return cli_bad_usage("replay", "--format takes table or json, not '%s'", format);
    if (!model && o.policy && !kevo_policy_find(o.policy))
        return cli_bad_policy("replay", o.policy);
    if (model)
        return cli_replay_model(&o, json);
    kevo_replay_result r;
    kevo_ctx *ctx = kevo_ctx_new(); /* silent but for KEVO_REPLAY_TRACE: no event is even made */
    if (!ctx)
        return cli_fail(KEVO_ERR_NOMEM, &(kevo_err){KEVO_ERR_NOMEM, "out of memory"});
    if (getenv("KEVO_REPLAY_TRACE")) { /* every evaluation of every replay, on stderr */
        cli_ev.trace = cli_ev.numbered = true;
        kevo_ctx_set_events(ctx, cli_event, &cli_ev);
    }
    kevo_status st = kevo_replay(ctx, &o, &r);
    int code = st ? cli_fail(st, kevo_ctx_error(ctx)) : 0;
    kevo_ctx_free(ctx);
    if (st)
        return code;
    if (json) {
        /* every figure finite or null: a policy that never reaches the target has no median */
        printf("{\"policy\": \"%s\", \"seeds\": %d, \"median_evals_to_target\": ", o.policy, o.seeds);
        cli_json_num("%g", r.median_evals);
        printf(", \"exhaustive_evals\": ");
        cli_json_num("%g", r.exhaustive_evals);
        printf(", \"random_median_evals\": ");
        cli_json_num("%g", r.random_median_evals);
        printf(", \"landscape\": %d, \"target\": ", r.landscape);
        cli_json_num("%g", o.target);
        printf(", \"best_speedup\": ");
        cli_json_num("%.4f", r.best);
        printf(", \"reached\": %d", r.reached);
        if (r.parted) {
            printf(", \"noise\": ");
            cli_json_num("%g", o.noise);
            printf(", \"budget\": %d, \"parted_runs\": %d, \"parted_median\": ", o.budget, r.parted_runs);
            cli_json_num("%g", r.parted_median);
        }
        printf("}\n");
    } else {
        printf("landscape: %d measured candidates, best %.3fx; target: within %.0f%% of it\n", r.landscape, r.best,
               (1 - o.target) * 100);
        printf("%-12s %s\n", "policy", "median evaluations to target");
        printf("%-12s %g (reached in %d of %d seeds)\n", o.policy, r.median_evals, r.reached, o.seeds);
        printf("%-12s %g\n", "random", r.random_median_evals);
        printf("%-12s %g\n", "exhaustive", r.exhaustive_evals);
        if (r.parted)
            printf("noise %.2f%%: the two replays' graphs parted in %d of %d seeds within %d evaluations "
                   "(median first difference %g; %d: never)\n",
                   100 * o.noise, r.parted_runs, o.seeds, o.budget, r.parted_median, o.budget + 1);
    }
    free(r.evals);
    free(r.parted);
    return 0;
}
