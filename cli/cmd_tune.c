/* cmd_tune.c — `kevo tune`: its option table, the checks of the options
 * together, the run (under --mpi, this rank's part of it) and its exit code. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/op.h"
#include "db/store.h"
#include "evaluator/mpi.h"
#include "search/search.h"
#include "search/tune.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"
#include "cli/profile.h"

/* The MPI launcher's count of processes when kevo runs under one (Open MPI,
 * MPICH and Intel MPI's Hydra, MVAPICH), 0 when it does not; *var names the
 * variable. */
static long cli_mpi_launched(const char **var)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < KV_ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        int64_t n;
        if (v && kv_parse_i64(v, &n) && n > 0) {
            *var = vars[i];
            return (long)n;
        }
    }
    return 0;
}
/* The names tune takes from a table (op, policy, dtype, arch): an unknown
 * one is a usage error, named with what is known. */
static int cli_tune_names(const kevo_tune_opts *o)
{
    if (o->def.op && !kevo_op_find(o->def.op)) {
        int n;
        const kevo_op *const *ops = kevo_op_list(&n);
        kv_buf k;
        kv_buf_init(&k);
        for (int i = 0; i < n; i++)
            kv_buf_printf(&k, "%s%s", i ? ", " : "", ops[i]->name);
        fprintf(stderr, "kevo tune: unknown op '%.100s' (known: %s)\n", o->def.op, k.data ? k.data : "");
        kv_buf_release(&k);
        return 2;
    }
    if ((o->given & KEVO_TUNE_GIVEN_POLICY) && !kevo_policy_find(o->def.policy))
        return cli_bad_policy("tune", o->def.policy);
    kevo_dtype dt;
    if ((o->given & KEVO_TUNE_GIVEN_DTYPE) && !kevo_dtype_parse(o->def.dtype, &dt))
        return cli_bad_usage("tune", "unknown dtype '%.100s' (fp16 or bf16)", o->def.dtype);
    kevo_limits lim;
    kevo_err err;
    if ((o->given & KEVO_TUNE_GIVEN_ARCH) && !strchr(o->def.arch, ',') &&
        kevo_limits_for_arch(o->def.arch, &lim, &err)) {
        cli_say("kevo tune", KEVO_ERR_NOT_FOUND, &err);
        return 2;
    }
    /* a list: every name known, none empty or twice; only for a new compile-only run */
    char archs[KEVO_TUNE_ARCHS_MAX][16];
    int narchs = 0;
    if ((o->given & KEVO_TUNE_GIVEN_ARCH) && strchr(o->def.arch, ',')) {
        if (kevo_arch_list_parse(o->def.arch, archs, KEVO_TUNE_ARCHS_MAX, &narchs, &err))
            return cli_bad_usage("tune", "%s", err.msg);
        if (o->resume_run > 0)
            return cli_bad_usage("tune", "%s", "--arch takes one architecture with --resume (a run has one)");
        if (!o->def.compile_only)
            return cli_bad_usage("tune", "%s", "--arch takes a list of architectures only with --compile-only (a GPU "
                                 "run loads its code on devices of one architecture)");
    }
    return 0;
}

/* After a finished tune of runs[0..n): 1 (with a line) when every
 * candidate of every run failed, else 0.  With more than one run (an
 * --arch list), first one line per run unless quiet: its arch and counts.
 * A lock on the DB is waited for and said through ctx. */
static int cli_all_failed(kevo_ctx *ctx, const char *db_path, const int64_t *runs, int n, bool quiet)
{
    kevo_db *db = NULL;
    kevo_err err;
    if (n <= 0 || runs[0] <= 0 || kevo_db_open_ctx(db_path, false, ctx, &db, &err))
        return 0;
    int all_failed = 0, evaluated = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        int ev = 0, compiled = 0, fa = 0, ok = 0;
        kevo_run_row r;
        if (kevo_db_run_counts(db, runs[i], &ev, &compiled, &fa, &ok, &err) ||
            kevo_db_run_get(db, runs[i], &r, &err))
            break;
        all_failed += ev > 0 && fa == ev;
        evaluated += ev;
        failed += fa;
        if (n > 1 && !quiet) {
            kv_term_clean(r.arch);
            printf("%s%-8s run %lld: %d candidates, %d compiled, %d failed\n", i ? "" : "architectures:\n", r.arch,
                   (long long)runs[i], ev, compiled, fa);
        }
    }
    kevo_db_close(db);
    if (all_failed < n)
        return 0;
    if (n == 1)
        fprintf(stderr, "kevo: every candidate of run %lld failed (%d of %d); 'kevo report --db %s --run %lld' "
                        "shows why\n",
                (long long)runs[0], failed, evaluated, db_path, (long long)runs[0]);
    else
        fprintf(stderr, "kevo: every candidate of the %d runs failed (%d of %d); 'kevo report --db %s' shows why\n",
                n, failed, evaluated, db_path);
    return 1;
}

/* An MPI rank other than 0: compile what rank 0 sends, then leave; a
 * signal cancels ctx. */
static int cli_mpi_serve(kevo_mpi *m, kevo_ctx *ctx)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_mpi_set_ctx(m, ctx);
    cli_signals_catch(ctx);
    kevo_status st = kevo_mpi_serve(m, &err);
    cli_signals_restore();
    kevo_mpi_set_ctx(m, NULL);
    kevo_mpi_end(m, st == KEVO_ERR_INTERRUPTED);
    return st == KEVO_ERR_INTERRUPTED ? cli_signal_exit(ctx) : st ? cli_fail(st, &err) : 0;
}

/* What `kevo tune` takes from its command line: the run's options and this
 * process's own switches. */
typedef struct {
    kevo_tune_opts o;
    bool quiet, nobar, mpi;
    bool profile;  /* --profile: ncu on each run's best once the run is over */
    uint32_t here; /* CLI_TUNE_GIVEN_*: options of this process the user named */
} cli_tune_args;

enum { CLI_TUNE_GIVEN_JOBS = 1u << 0, CLI_TUNE_GIVEN_DEVICE = 1u << 1 };

/* --maps: a comma list of map kinds. */
static int cli_tune_maps(const char *cmd, void *args, const char *val)
{
    cli_tune_args *a = args;
    int rc;
    if ((rc = cli_list_check(cmd, "maps", val)))
        return rc;
    if (!(a->o.def.maps = cli_maps(val)))
        return cli_bad_usage(cmd, "--maps takes sorted, uneven and/or shuffled, not '%s'", val);
    return 0;
}

/* Row pieces of the tune table: the field an option sets and the bit it sets
 * in the run's given (TG), the LLM's given (LG) or this process's (HG). */
#define TA(f) .off = offsetof(cli_tune_args, f)
#define TG(b) .given_off = offsetof(cli_tune_args, o.given), .given = (b)
#define LG(b) .given_off = offsetof(cli_tune_args, o.gen.llm.given), .given = (b)
#define HG(b) .given_off = offsetof(cli_tune_args, here), .given = (b)
#define RANGE(l, h) .lo = (l), .hi = (h)
#define DRANGE(l, h) .dlo = (l), .dhi = (h)

/* Every option of `kevo tune` (its help text is cli_cmds' "tune" usage). */
static const cli_opt cli_tune_opts[] = {
    {"op", CLI_OPT_STR, TA(o.def.op), TG(KEVO_TUNE_GIVEN_OP)},
    {"shape", CLI_OPT_STR, TA(o.def.shape), TG(KEVO_TUNE_GIVEN_SHAPE)},
    {"dtype", CLI_OPT_STR, TA(o.def.dtype), TG(KEVO_TUNE_GIVEN_DTYPE)},
    {"arch", CLI_OPT_STR, TA(o.def.arch), TG(KEVO_TUNE_GIVEN_ARCH)},
    {"policy", CLI_OPT_STR, TA(o.def.policy), TG(KEVO_TUNE_GIVEN_POLICY)},
    {"budget", CLI_OPT_I64, TA(o.def.budget), RANGE(1, 1000000), TG(KEVO_TUNE_GIVEN_BUDGET),
     .bad = "--budget takes a whole number from 1 to 1000000, not '%s'"},
    {"seed", CLI_OPT_I64, TA(o.def.seed), RANGE(0, INT64_MAX), TG(KEVO_TUNE_GIVEN_SEED),
     .bad = "--seed takes a whole number from 0 to 9223372036854775807, not '%s'"},
    {"db", CLI_OPT_STR, TA(o.proc.db_path)},
    {"family", CLI_OPT_STR, TA(o.def.families), TG(KEVO_TUNE_GIVEN_FAMILIES)},
    {"compile-only", CLI_OPT_FLAG, TA(o.def.compile_only), TG(KEVO_TUNE_GIVEN_COMPILE_ONLY)},
    {"jobs", CLI_OPT_INT, TA(o.proc.jobs), RANGE(1, 256), HG(CLI_TUNE_GIVEN_JOBS),
     .bad = "--jobs takes a whole number from 1 to 256, not '%s'"},
    {"batch", CLI_OPT_INT, TA(o.def.batch), RANGE(1, KEVO_TUNE_BATCH_MAX), TG(KEVO_TUNE_GIVEN_BATCH),
     .bad = "--batch takes a whole number from 1 to 256, not '%s'"},
    {"ahead", CLI_OPT_INT, TA(o.def.ahead), RANGE(1, KEVO_TUNE_AHEAD_MAX), TG(KEVO_TUNE_GIVEN_AHEAD),
     .bad = "--ahead takes a whole number from 1 to 16, not '%s'"},
    {"compile-timeout", CLI_OPT_DBL, TA(o.proc.compile_timeout), DRANGE(0.1, KEVO_TUNE_TIMEOUT_MAX),
     TG(KEVO_TUNE_GIVEN_CTIMEOUT), .bad = "--compile-timeout takes seconds from 0.1 to 86400, not '%s'"},
    {"eval-timeout", CLI_OPT_DBL, TA(o.proc.eval_timeout), DRANGE(0.1, KEVO_TUNE_TIMEOUT_MAX),
     TG(KEVO_TUNE_GIVEN_ETIMEOUT), .bad = "--eval-timeout takes seconds from 0.1 to 86400, not '%s'"},
    {"reps", CLI_OPT_INT, TA(o.def.reps), RANGE(1, 1000), TG(KEVO_TUNE_GIVEN_REPS),
     .bad = "--reps takes a whole number from 1 to 1000, not '%s'"},
    {"warmup", CLI_OPT_INT, TA(o.def.warmup), RANGE(0, 1000), TG(KEVO_TUNE_GIVEN_WARMUP),
     .bad = "--warmup takes a whole number from 0 to 1000, not '%s'"},
    {"device", CLI_OPT_INT, TA(o.proc.device), RANGE(0, 1024), HG(CLI_TUNE_GIVEN_DEVICE),
     .bad = "--device takes a device ordinal from 0 to 1024, not '%s'"},
    {"maps", CLI_OPT_FN, .fn = cli_tune_maps, TG(KEVO_TUNE_GIVEN_MAPS)},
    {"quiet", CLI_OPT_FLAG, TA(quiet)},
    {"no-bar", CLI_OPT_FLAG, TA(nobar)},
    {"resume", CLI_OPT_I64, TA(o.resume_run), RANGE(1, INT64_MAX),
     .bad = "--resume takes a run id (a whole number from 1), not '%s'"},
    {"templates", CLI_OPT_STR, TA(o.def.extra_templates), TG(KEVO_TUNE_GIVEN_TEMPLATES)},
    {"where", CLI_OPT_STR, TA(o.def.where), TG(KEVO_TUNE_GIVEN_WHERE)},
    {"time-limit", CLI_OPT_DBL, TA(o.def.time_limit), DRANGE(0.001, 31536000), TG(KEVO_TUNE_GIVEN_TIME_LIMIT),
     .bad = "--time-limit takes seconds from 0.001 to 31536000 (a year), not '%s'"},
    {"plateau", CLI_OPT_I64, TA(o.def.plateau), RANGE(1, 1000000), TG(KEVO_TUNE_GIVEN_PLATEAU),
     .bad = "--plateau takes a whole number from 1 to 1000000, not '%s'"},
    {"target", CLI_OPT_DBL, TA(o.def.target), DRANGE(0.000001, 1000000), TG(KEVO_TUNE_GIVEN_TARGET),
     .bad = "--target takes a speedup from 0.000001 to 1000000, not '%s'"},
    {"warm-start", CLI_OPT_STR, TA(o.def.warm_start), TG(KEVO_TUNE_GIVEN_WARM)},
    {"shapes", CLI_OPT_STR, TA(o.def.shapes_file), TG(KEVO_TUNE_GIVEN_SHAPES)},
    {"generators", CLI_OPT_STR, TA(o.def.generators), TG(KEVO_TUNE_GIVEN_GENERATORS)},
    {"llm-url", CLI_OPT_STR, TA(o.gen.llm.url), LG(KEVO_LLM_GIVEN_URL)},
    {"llm-model", CLI_OPT_STR, TA(o.gen.llm.model), LG(KEVO_LLM_GIVEN_MODEL)},
    {"llm-temperature", CLI_OPT_DBL, TA(o.gen.llm.temperature), DRANGE(0, 2), LG(KEVO_LLM_GIVEN_TEMPERATURE),
     .bad = "--llm-temperature takes a number from 0 to 2, not '%s'"},
    {"llm-seed", CLI_OPT_I64, TA(o.gen.llm.seed), RANGE(0, INT32_MAX), LG(KEVO_LLM_GIVEN_SEED),
     .bad = "--llm-seed takes a whole number from 0 to 2147483647, not '%s'"},
    {"llm-budget", CLI_OPT_I64, TA(o.gen.llm.budget), RANGE(0, 1000000), LG(KEVO_LLM_GIVEN_BUDGET),
     .bad = "--llm-budget takes a whole number of calls from 0 to 1000000, not '%s'"},
    {"llm-max-tokens", CLI_OPT_INT, TA(o.gen.llm.max_tokens), RANGE(1, 1000000), LG(KEVO_LLM_GIVEN_MAX_TOKENS),
     .bad = "--llm-max-tokens takes a whole number from 1 to 1000000, not '%s'"},
    {"llm-timeout", CLI_OPT_DBL, TA(o.gen.llm.timeout), DRANGE(1, 86400), LG(KEVO_LLM_GIVEN_OTHER),
     .bad = "--llm-timeout takes seconds from 1 to 86400, not '%s'"},
    {"llm-retries", CLI_OPT_INT, TA(o.gen.llm.retries), RANGE(0, 100), LG(KEVO_LLM_GIVEN_OTHER),
     .bad = "--llm-retries takes a whole number from 0 to 100, not '%s'"},
    {"llm-prompt-chars", CLI_OPT_INT, TA(o.gen.llm.prompt_chars), RANGE(4096, 16 << 20), LG(KEVO_LLM_GIVEN_OTHER),
     .bad = "--llm-prompt-chars takes bytes from 4096 to 16777216, not '%s'"},
    {"llm-prompt-tokens", CLI_OPT_INT, TA(o.gen.llm.prompt_tokens), RANGE(2048, 4 << 20), LG(KEVO_LLM_GIVEN_OTHER),
     .bad = "--llm-prompt-tokens takes tokens from 2048 to 4194304, not '%s'"},
    {"llm-edit-grammar", CLI_OPT_FLAG, TA(o.gen.llm.edit_grammar), LG(KEVO_LLM_GIVEN_OTHER)},
    {"prompts", CLI_OPT_STR, TA(o.gen.llm.prompts_dir), LG(KEVO_LLM_GIVEN_OTHER)},
    {"mpi", CLI_OPT_FLAG, TA(mpi)},
    {"devices", CLI_OPT_STR, TA(o.proc.devices)},
    {"mixed-devices", CLI_OPT_FLAG, TA(o.proc.mixed_devices)},
    {"profile", CLI_OPT_FLAG, TA(profile)},
};
_Static_assert(KV_ARRAY_LEN(cli_tune_opts) <= CLI_OPTS_MAX, "cli_opts_parse takes at most CLI_OPTS_MAX options");

#undef TA
#undef TG
#undef LG
#undef HG
#undef RANGE
#undef DRANGE

/* The checks of tune's options together, after each was taken alone: 0, or a usage error's exit code. */
static int cli_tune_check(const cli_tune_args *a)
{
    const kevo_tune_opts *o = &a->o;
    int rc;
    if (!o->def.op && !o->resume_run)
        return cli_bad_usage("tune", "%s", "--op is required (e.g. --op ikbo_lce)");
    /* the lists: each names something at least once and nothing twice */
    if ((o->given & KEVO_TUNE_GIVEN_FAMILIES) && (rc = cli_list_check("tune", "family", o->def.families)))
        return rc;
    if ((o->given & KEVO_TUNE_GIVEN_ARCH) && (rc = cli_list_check("tune", "arch", o->def.arch)))
        return rc;
    if ((o->given & KEVO_TUNE_GIVEN_GENERATORS) && (rc = cli_list_check("tune", "generators", o->def.generators)))
        return rc;
    if (o->proc.devices && (rc = cli_list_check("tune", "devices", o->proc.devices)))
        return rc;
    if ((rc = cli_tune_names(o)))
        return rc;
    if (a->profile && o->def.compile_only)
        return cli_bad_usage("tune", "%s", "--profile needs a GPU run: a compile-only run times nothing to profile");
    char ncu[PATH_MAX];
    if (a->profile && (rc = cli_profile_ncu_check(ncu, sizeof ncu)))
        return rc;
    if (a->mpi && !kevo_mpi_built())
        return cli_bad_usage("tune", "%s", "--mpi: this kevo was built without MPI (install libopenmpi-dev, then "
                             "configure and build again)");
    return 0;
}

/* Run the tune the options describe (under --mpi, this rank's part of it); the exit code. */
static int cli_tune_run(cli_tune_args *a)
{
    kevo_tune_opts *o = &a->o;
    bool jobs_given = a->here & CLI_TUNE_GIVEN_JOBS, device_given = a->here & CLI_TUNE_GIVEN_DEVICE;
    cli_ev.mode = a->quiet ? 0 : (!a->nobar && isatty(STDOUT_FILENO) ? 2 : 1);
    const char *mpi_var = NULL;
    long nprocs = a->mpi ? 0 : cli_mpi_launched(&mpi_var);
    if (nprocs > 1) /* mpirun -np N kevo tune: N processes that know nothing of each other */
        fprintf(stderr, "kevo: warning: started by an MPI launcher as one of %ld processes (%s=%ld) without --mpi: "
                        "this makes %ld independent runs, each its own search and its own run in --db; add --mpi "
                        "for one run spread over the ranks\n",
                nprocs, mpi_var, nprocs, nprocs);
    int64_t runs[KEVO_TUNE_ARCHS_MAX] = {0};
    int nruns = 0;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_ctx *ctx = cli_ctx_new(); /* the run's events, the MPI job's notes, the signals' cancel */
    if (!ctx)
        return 1;
    if (a->mpi) {
        /* every rank evaluates on --device when given, else on its own GPU: its rank on its host */
        /* without --jobs each rank compiles with its share of its host's CPUs */
        kevo_status st = kevo_mpi_start(jobs_given ? o->proc.jobs : 0, device_given ? o->proc.device : -1, ctx,
                                        &o->proc.mpi, &err);
        if (st) {
            kevo_ctx_free(ctx);
            return cli_fail(st, &err);
        }
        if (kevo_mpi_rank(o->proc.mpi) != 0) { /* every other rank compiles and evaluates what rank 0 sends */
            int code = cli_mpi_serve(o->proc.mpi, ctx);
            kevo_ctx_free(ctx);
            return code;
        }
        if (!device_given)
            o->proc.device = kevo_mpi_device(o->proc.mpi);
        o->proc.jobs = kevo_mpi_slots(o->proc.mpi);
    }
    cli_signals_catch(ctx); /* a signal stops the run the way that lets it resume */
    kevo_status st = kevo_tune_archs(ctx, o, runs, &nruns);
    cli_signals_restore();
    err = *kevo_ctx_error(ctx);
    cli_bar_clear(&cli_ev);
    int code;
    if (st == KEVO_ERR_INTERRUPTED) {
        cli_say("kevo", st, &err);
        code = cli_signal_exit(ctx);
    } else if (st == KEVO_ERR_ARG) { /* the options are wrong: a usage error */
        cli_say("kevo tune", st, &err);
        fprintf(stderr, "(try 'kevo tune --help')\n");
        code = 2;
    } else {
        code = st ? cli_fail(st, &err) : cli_all_failed(ctx, o->proc.db_path, runs, nruns, a->quiet);
    }
    /* after a signal (mpirun passes one to every rank) the other ranks are not waited for */
    kevo_mpi_end(o->proc.mpi, st == KEVO_ERR_INTERRUPTED);
    kevo_ctx_free(ctx);
    /* the workers are gone: ncu has the GPU to itself, and the figures reach a resumed run's prompts */
    if (a->profile && st == KEVO_OK)
        cli_profile_best(o->proc.db_path, runs, nruns, o->proc.device);
    return code;
}

/* kevo tune: parse the table, check the options together, run. */
int cmd_tune(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("tune");
    cli_tune_args a;
    memset(&a, 0, sizeof a);
    kevo_tune_opts_init(&a.o);
    a.o.def.op = NULL;
    a.o.proc.data_dir = cli_data_dir();
    int rc = cli_opts_parse("tune", cli_tune_opts, (int)KV_ARRAY_LEN(cli_tune_opts), &a, argc, argv);
    if (!rc)
        rc = cli_tune_check(&a);
    return rc ? rc : cli_tune_run(&a);
}
