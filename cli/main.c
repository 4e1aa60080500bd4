/* main.c — the kevo command line: one table of commands, one of options each.
 *
 * Exit status: 0 success, 1 the command failed (message on stderr), 2 usage
 * error.  Nothing here needs a GPU until a command asks for one. */
#define _GNU_SOURCE
#include <stddef.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/report.h"
#include "db/store.h"
#include "evaluator/compile.h"
#include "evaluator/mpi.h"
#include "core/op.h"
#include "export/export.h"
#include "search/replay.h"
#include "search/search.h"
#include "search/tune.h"
#include "templates/space.h"
#include "util/util.h"
#include "cli/opts.h"
#include "cli/profile.h"

#ifndef KEVO_SOURCE_DIR
#define KEVO_SOURCE_DIR "."
#endif

static int cmd_tune(int argc, char **argv);
static int cmd_report(int argc, char **argv);
static int cmd_verify(int argc, char **argv);
static int cmd_list(int argc, char **argv);
static int cmd_replay(int argc, char **argv);
static int cmd_export(int argc, char **argv);
static int cmd_profile(int argc, char **argv);

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
    const char *usage;
} cli_cmds[] = {
    {"tune", cmd_tune, "search kernel variants for an op and shape; store everything in a DB",
     "kevo tune --op OP [--shape K=V,...] [--dtype fp16|bf16] [--arch A] [--policy P]\n"
     "          [--budget N] [--seed S] [--db FILE] [--family F,...] [--compile-only]\n"
     "          [--jobs N] [--batch N] [--ahead D] [--compile-timeout S] [--eval-timeout S] [--reps N] [--warmup N]\n"
     "          [--device N | --devices all|N,N,... [--mixed-devices]]\n"
     "          [--maps sorted,uneven,shuffled] [--templates DIR] [--quiet] [--no-bar]\n"
     "          [--where EXPR] [--time-limit S] [--plateau N] [--target SPEEDUP]\n"
     "          [--warm-start OTHER.db|none] [--shapes FILE]\n"
     "          [--generators template,llm] [--llm-url URL] [--llm-model M] [--llm-budget N]\n"
     "          [--llm-max-tokens N] [--llm-temperature T] [--llm-seed S] [--llm-timeout S]\n"
     "          [--llm-retries N] [--llm-prompt-tokens N] [--llm-prompt-chars N] [--prompts DIR] [--mpi]\n"
     "kevo tune --resume RUN_ID --db FILE [--jobs N] [--budget N] [...]\n"
     "mpirun [--enable-recovery] -np N kevo tune --mpi ...\n"
     "  --shape    e.g. B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70 (or U= instead of ratio=);\n"
     "             missing keys take the op's default shape\n"
     "  --policy   greedy (default), exhaustive, random, ucb, evolve\n"
     "  --where    keep configurations where EXPR (over params, lets, shape) is true,\n"
     "             e.g. 'STAGES <= 4 && ALIGN == 1'\n"
     "  --time-limit, --plateau, --target  stop after S seconds, after N candidates\n"
     "             without a better one, or once a candidate reaches SPEEDUP\n"
     "  --budget   candidates to evaluate (default 60)\n"
     "  --batch    candidates proposed per round (default 8); --jobs (default: the CPUs) compiles\n"
     "             up to that many at once and never changes what is proposed\n"
     "  --ahead    rounds in flight (default 3): round j + D is proposed once round j's results\n"
     "             are all in, so later rounds compile while the GPUs evaluate earlier ones;\n"
     "             1: each round sees every earlier result.  Several GPUs want batch x ahead\n"
     "             well above their count (compiles take ~10x an evaluation)\n"
     "  --arch     the architecture to build for (default sm_90a; sm_80, sm_86, sm_89, sm_90,\n"
     "             sm_100a); a GPU run needs a device of exactly it (compute capability 9.0 for\n"
     "             sm_90a, 10.0 for sm_100a).  With --compile-only a comma list\n"
     "             (sm_80,sm_90a,sm_100a): one run per arch, in that order, into the same DB\n"
     "             with the same seed and options, each over the families that declare the arch\n"
     "             (a line names each one left out); one line per arch at the end\n"
     "  --compile-only  compile and record every candidate (ptxas report) without a GPU\n"
     "  --devices  evaluate on several GPUs at once, one worker each (all: every GPU here);\n"
     "             each GPU times its own peers and each candidate's speedup is over its own\n"
     "             GPU's baseline; results are applied in proposal order, so the proposals do\n"
     "             not depend on the number of GPUs.  GPUs of different models are refused\n"
     "             unless --mixed-devices.  With --shapes, shape i is evaluated on the\n"
     "             list's GPU i mod its length, a candidate's shapes on the GPUs at once\n"
     "  --mpi      under mpirun: rank 0 runs the search (DB, proposals, generators); every rank\n"
     "             compiles (--jobs each; default: its host's CPUs divided among the ranks\n"
     "             there) and, in a GPU run, verifies and times on\n"
     "             its GPU (--device, else its rank among the job's ranks on its host), each\n"
     "             with its own peers; the candidates are those of one process.  A rank that\n"
     "             dies or hangs is named and its work goes back to the queue (mpirun\n"
     "             --enable-recovery; without it mpirun ends the job)\n"
     "  --templates     also search the template families in DIR\n"
     "  --shapes   FILE holds a distribution: one shape per line, optionally followed by\n"
     "             a weight (default 1; '#' comments); one search whose fitness is the\n"
     "             weighted geometric mean of vs_best_peer over them (not with --shape)\n"
     "  --warm-start    seed the run with the winners of the earlier runs nearest to\n"
     "             its shape in OTHER.db (default: in --db; none: no warm start)\n"
     "  --generators  template (default), llm, or both: llm adds the universal operator, an\n"
     "             LLM rewrite of a node's source and launch plan (templates still seed it)\n"
     "  --llm-url  API base of an OpenAI-compatible server (vLLM, llama.cpp, Ollama, hosted),\n"
     "             e.g. http://127.0.0.1:8080/v1 (no user:password@); the key only from\n"
     "             $KEVO_LLM_API_KEY.  Every --llm-* option and --prompts need --generators llm\n"
     "  --llm-budget  LLM calls (default 10), made whatever --budget is (counted apart);\n"
     "             --llm-max-tokens (default 8192), --llm-temperature, --llm-seed are sent as given;\n"
     "             --llm-timeout seconds per attempt (default 600), --llm-retries after a 429, 5xx\n"
     "             or failed connection (default 4, backoff 1, 2, 4, .. s); --llm-prompt-tokens\n"
     "             budgets a prompt, system message included (default 16384, at bytes / 3: fit it\n"
     "             to the model's context); --llm-prompt-chars also caps it in bytes; --prompts DIR\n"
     "  --resume   continue a run (after Ctrl-C, a crash or kill -9) with its stored settings:\n"
     "             nothing finished is redone, the proposals are the uninterrupted run's.\n"
     "             An option that defines the run (--op, --shape(s), --dtype, --arch, --policy,\n"
     "             --family, --seed, --where, --compile-only, --warm-start, --templates, --maps,\n"
     "             --reps, --warmup, --batch, --ahead) may be repeated but not changed (exit 2); a larger\n"
     "             --budget and another --time-limit, --plateau or --target extend the run (the\n"
     "             time limit counts every process of the run); --jobs and --device apply to\n"
     "             this process, the timeouts from now on.  A finished run that nothing extends is\n"
     "             left as it is; a run whose space file changed since it started is refused.\n"
     "             --generators is the run's; --llm-model, ... apply from now on, and the LLM is\n"
     "             called only at the --llm-url given now (never at one a DB holds: without it\n"
     "             this process makes no LLM call); a compile-only run resumed on a machine with\n"
     "             a GPU (no --compile-only) has its compiled candidates verified and timed there,\n"
     "             then goes on.  Of two resumes of one run, one goes on, the other is refused\n"
     "             naming the process that holds it\n"
     "  Ctrl-C (SIGINT), SIGTERM, SIGHUP, SIGXFSZ and the other signals that would end kevo\n"
     "  store the run as interrupted, end its compile and GPU processes and print the\n"
     "  --resume command (exit 128 + the signal: 130 for Ctrl-C).  A DB locked by another\n"
     "  process is waited for.  Exit 1 when every candidate failed; 2 for a usage error.\n"},
    {"report", cmd_report, "print the runs of a DB as a table or as JSON, or draw them",
     "kevo report --db FILE [--run ID] [--format table|json | --svg OUT.svg] [--top N]\n"
     "  --svg  write best speedup against evaluations (a line per run) and the search tree\n"
     "         of the run (default: the last), coloured by speedup and failure; never over\n"
     "         the DB or its journal (exit 2)\n"},
    {"verify", cmd_verify, "re-check a stored candidate at another shape, dtype or map (GPU)",
     "kevo verify --db FILE [--candidate ID | --run ID] [--shape K=V,...] [--dtype fp16|bf16]\n"
     "            [--arch A] [--maps sorted,uneven,shuffled] [--time] [--reps N] [--device N]\n"
     "  without --candidate: the best candidate of --run (default: the last run)\n"},
    {"profile", cmd_profile, "profile a stored candidate's kernels with Nsight Compute (GPU)", CLI_PROFILE_USAGE},
    {"replay", cmd_replay, "run a policy against fitness already measured in a DB (no GPU)",
     "kevo replay --db LANDSCAPE.db --policy P [--run ID] [--seeds K] [--target 0.95] [--batch N]\n"
     "            [--ahead D] [--noise SIGMA [--budget N]] [--format table|json]\n"
     "kevo replay --db LANDSCAPE.db --model [--run ID] [--format table|json]\n"
     "  prints the policy's median evaluations to a candidate within (1 - target) of the\n"
     "  landscape's best, over K seeds, beside the exhaustive order's and random's;\n"
     "  --ahead D: up to D rounds of --batch proposed before the oldest one's results,\n"
     "  as tune --ahead does (default 1);\n"
     "  --model: how well each family's cost model ranks the measured candidates\n"
     "  (Spearman's rank correlation of predicted and measured times);\n"
     "  --noise 0.005: per seed, two replays of --budget evaluations (default 120) whose\n"
     "  measurements differ by relative noise SIGMA, as two GPUs' would: where their graphs part\n"},
    {"export", cmd_export, "write a DB's winners as a C library (CMake package, pkg-config)",
     "kevo export --db FILE --out DIR [--op ikbo_lce|ikbo_fa] [--arch sm_90a,...] [--name NAME]\n"
     "            [--top N] [--force] [--torch]\n"
     "  the op's (default ikbo_lce) fastest N (default 3) distinct verified kernels of each\n"
     "  run, plus its fastest one for unpadded weights, with their cubins and launch plans;\n"
     "  NAME (default kevo_tuned) prefixes every symbol; the library links only the CUDA\n"
     "  driver; one library per op (export each op under its own NAME)\n"
     "  DIR: new, empty, or an earlier export of NAME (DIR/kevo-export.json lists the files\n"
     "  export wrote; exporting again replaces only those, and only while unchanged)\n"
     "  --force  also write into a non-empty DIR that is no export of NAME, beside what is\n"
     "           there; even then no existing file that export did not write is replaced\n"
     "  --torch  also DIR/python: a Python package registering the op as torch.ops.kevo.OP\n"
     "           (pip install --no-build-isolation DIR/python; see DIR/python/README.md)\n"},
    {"list", cmd_list, "list ops, template families and search policies", "kevo list [ops|families|policies]\n"},
};

static void cli_usage(FILE *f)
{
    fprintf(f, "kevo %s: search for fast CUDA kernels (IKBO first)\n\nusage: kevo COMMAND [options]\n\n",
            KEVO_VERSION);
    for (size_t i = 0; i < KV_ARRAY_LEN(cli_cmds); i++)
        fprintf(f, "  %-8s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
    fprintf(f, "\n'kevo COMMAND --help' shows a command's options.  Only tune (without --compile-only),\n"
               "verify and profile need a GPU.\n");
}

/* "PREFIX: MESSAGE" on stderr; messages quote DB and file text, so no
 * escape sequence or line break of theirs reaches the terminal. */
static void cli_say(const char *prefix, kevo_status st, const kevo_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : kevo_status_str(st));
    fprintf(stderr, "%s: %s\n", prefix, kv_term_clean(msg));
}

/* ---- the library's events (include/kevo.h) on the terminal ---- */

typedef struct cli_events {
    int mode;       /* 0 quiet (warnings only), 1 lines, 2 lines and a live bar */
    bool bar_drawn; /* the bar is stdout's last, unfinished line */
    bool trace;     /* TRACE and DEBUG events on stderr (KEVO_TRACE_EVAL=1, kevo replay's KEVO_REPLAY_TRACE) */
    bool numbered;  /* DEBUG lines begin with their number (cand_id), right-aligned (kevo replay) */
} cli_events;

/* One per process: compiles and DB handles report process-wide. */
static cli_events cli_ev = {.mode = 1};

static void cli_bar_clear(cli_events *c)
{
    if (c->bar_drawn) {
        fputs("\r\033[K", stdout);
        fflush(stdout);
        c->bar_drawn = false;
    }
}

static void cli_bar(cli_events *c, const kevo_event *ev, const char *what)
{
    cli_bar_clear(c);
    int width = 30, fill = ev->budget > 0 ? (int)(width * ev->done / ev->budget) : 0;
    char bar[40];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    int secs = (int)ev->elapsed_s;
    printf("[%s] %lld/%lld", bar, (long long)ev->done, (long long)ev->budget);
    if (ev->best > 0)
        printf("  best %.2fx", ev->best);
    printf("  %d:%02d  %s", secs / 60, secs % 60, what);
    fflush(stdout);
    c->bar_drawn = true;
}

/* The handler every library call gets: lines to stdout, warnings ("kevo: ...")
 * to stderr, the bar on stdout when it is a terminal, traces to stderr when
 * asked for.  Event text may quote a DB, a space file or a generator's reply: it
 * reaches the terminal through kv_term_clean. */
static void cli_event(void *ctx, const kevo_event *ev)
{
    cli_events *c = ctx;
    /* what is not shown is not copied: TRACE events come several per candidate */
    bool show = ev->kind == KEVO_EVENT_WARNING || (ev->kind == KEVO_EVENT_LINE && c->mode >= 1) ||
                (ev->kind == KEVO_EVENT_PROGRESS && c->mode >= 2) ||
                ((ev->kind == KEVO_EVENT_TRACE || ev->kind == KEVO_EVENT_DEBUG) && c->trace);
    if (!show)
        return;
    char small[1024], *text = small;
    size_t n = strlen(ev->text);
    if (n >= sizeof small && !(text = malloc(n + 1)))
        return;
    memcpy(text, ev->text, n + 1);
    kv_term_clean(text);
    switch (ev->kind) {
    case KEVO_EVENT_LINE:
        cli_bar_clear(c);
        printf("%s\n", text);
        fflush(stdout);
        break;
    case KEVO_EVENT_WARNING:
        cli_bar_clear(c);
        fprintf(stderr, "kevo: %s\n", text);
        fflush(stderr);
        break;
    case KEVO_EVENT_PROGRESS:
        cli_bar(c, ev, text);
        break;
    case KEVO_EVENT_TRACE:
        fprintf(stderr, "trace %.4f %s #%lld dev %d\n", ev->t, text, (long long)ev->cand_id, ev->device);
        break;
    case KEVO_EVENT_DEBUG:
        if (c->numbered)
            fprintf(stderr, "%3lld %s\n", (long long)ev->cand_id, text);
        else
            fprintf(stderr, "%s\n", text);
        break;
    }
    if (text != small)
        free(text);
}

static int cli_fail(kevo_status st, const kevo_err *err)
{
    cli_bar_clear(&cli_ev);
    cli_say("kevo", st, err);
    return 1;
}

static bool cli_has_data(const char *dir)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/templates", dir);
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return false;
    snprintf(p, sizeof p, "%s/kernels", dir);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Folder holding templates/ and kernels/: $KEVO_HOME, else beside the
 * executable (build/kevo -> ..), else the source tree it was built from. */
static const char *cli_data_dir(void)
{
    static char dir[PATH_MAX];
    const char *env = getenv("KEVO_HOME");
    if (env && *env)
        return env; /* as it is: a path too long fails where it is used, never cut */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char d[PATH_MAX - 8];
        kv_dirname(exe, d, sizeof d);
        snprintf(dir, sizeof dir, "%s/..", d);
        if (cli_has_data(dir))
            return dir;
        snprintf(dir, sizeof dir, "%s", d);
        if (cli_has_data(dir))
            return dir;
    }
    snprintf(dir, sizeof dir, "%s", KEVO_SOURCE_DIR);
    return dir;
}

/* "sorted,uneven,shuffled" -> bitmask; 0 on a bad name or no name. */
static unsigned cli_maps(const char *s)
{
    unsigned m = 0;
    char *buf = kv_strdup(s);
    if (!buf)
        return 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        kevo_map_kind k;
        if (!kevo_map_parse(t, &k)) {
            m = 0;
            break;
        }
        m |= 1u << k;
    }
    free(buf);
    return m;
}

/* A comma list as an option gives it (--family, --maps, --arch,
 * --generators, --devices): at least one item, no empty item, no item
 * twice; else a usage error (exit 2) naming the option, the same words for
 * every list.  0 when the list is good. */
static int cli_list_check(const char *cmd, const char *opt, const char *list)
{
    char msg[512];
    if (!list || !*list) {
        snprintf(msg, sizeof msg, "--%s: the list is empty (name at least one)", opt);
        return cli_bad_usage(cmd, "%s", msg);
    }
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            snprintf(msg, sizeof msg, "--%s '%.200s': an empty item (one name between commas)", opt, list);
            return cli_bad_usage(cmd, "%s", msg);
        }
        for (const char *q = list; q < p;) { /* the items before this one */
            size_t ql = strcspn(q, ",");
            if (ql == len && strncmp(q, p, len) == 0) {
                snprintf(msg, sizeof msg, "--%s: '%.*s' is listed twice", opt, (int)(len < 100 ? len : 100), p);
                return cli_bad_usage(cmd, "%s", msg);
            }
            q += ql + 1;
        }
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* A number for JSON in fmt when finite, else null (JSON has no inf or nan). */
static void cli_json_num(const char *fmt, double v)
{
    if (isfinite(v))
        printf(fmt, v);
    else
        printf("null");
}

/* Text built from a DB onto stdout, each line through the terminal cleaner
 * (what a report.c table holds is cleaned there too; this is the last
 * guard).  text is changed in place. */
static void cli_put_clean(char *text)
{
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        fputs(kv_term_clean(line), stdout);
        if (!nl)
            break;
        fputc('\n', stdout);
        line = nl + 1;
    }
}

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

static bool cli_help_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

static int cli_print_help(const char *cmd)
{
    for (size_t i = 0; i < KV_ARRAY_LEN(cli_cmds); i++) {
        if (strcmp(cli_cmds[i].name, cmd) == 0) {
            printf("%s: %s\n\nusage: %s", cli_cmds[i].name, cli_cmds[i].summary, cli_cmds[i].usage);
            return 0;
        }
    }
    fprintf(stderr, "kevo: unknown command '%s' (try 'kevo --help')\n", cmd);
    return 2;
}

/* The usage error for an unknown policy, naming the known ones. */
static int cli_bad_policy(const char *cmd, const char *policy)
{
    int n;
    const kevo_policy *const *p = kevo_policy_list(&n);
    kv_buf k;
    kv_buf_init(&k);
    for (int i = 0; i < n; i++)
        kv_buf_printf(&k, "%s%s", i ? ", " : "", p[i]->name);
    char msg[512];
    snprintf(msg, sizeof msg, "unknown policy '%.100s' (known: %s)", policy, k.data ? k.data : "");
    kv_buf_release(&k);
    return cli_bad_usage(cmd, "%s", msg);
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
 * --arch list), first one line per run unless quiet: its arch and counts. */
static int cli_all_failed(const char *db_path, const int64_t *runs, int n, bool quiet)
{
    kevo_db *db = NULL;
    kevo_err err;
    if (n <= 0 || runs[0] <= 0 || kevo_db_open(db_path, false, &db, &err))
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

/* An MPI rank other than 0: compile what rank 0 sends, then leave. */
static int cli_mpi_serve(kevo_mpi *m)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_mpi_serve(m, &err);
    kevo_mpi_end(m, st == KEVO_ERR_INTERRUPTED);
    if (st == KEVO_ERR_INTERRUPTED) {
        int sig = kv_signal_caught();
        return sig > 0 ? 128 + sig : 130;
    }
    return st ? cli_fail(st, &err) : 0;
}

/* What `kevo tune` takes from its command line: the run's options and this
 * process's own switches. */
typedef struct {
    kevo_tune_opts o;
    bool quiet, nobar, mpi;
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
    {"prompts", CLI_OPT_STR, TA(o.gen.llm.prompts_dir), LG(KEVO_LLM_GIVEN_OTHER)},
    {"mpi", CLI_OPT_FLAG, TA(mpi)},
    {"devices", CLI_OPT_STR, TA(o.proc.devices)},
    {"mixed-devices", CLI_OPT_FLAG, TA(o.proc.mixed_devices)},
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
    o->proc.on_event = cli_event;
    o->proc.event_ctx = &cli_ev;
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
    if (a->mpi) {
        /* every rank evaluates on --device when given, else on its own GPU: its rank on its host */
        /* without --jobs each rank compiles with its share of its host's CPUs */
        kevo_status st = kevo_mpi_start(jobs_given ? o->proc.jobs : 0, device_given ? o->proc.device : -1, cli_event,
                                        &cli_ev, &o->proc.mpi, &err);
        if (st)
            return cli_fail(st, &err);
        if (kevo_mpi_rank(o->proc.mpi) != 0) /* every other rank compiles and evaluates what rank 0 sends */
            return cli_mpi_serve(o->proc.mpi);
        if (!device_given)
            o->proc.device = kevo_mpi_device(o->proc.mpi);
        o->proc.jobs = kevo_mpi_slots(o->proc.mpi);
    }
    kevo_status st = kevo_tune_archs(o, runs, &nruns, &err);
    cli_bar_clear(&cli_ev);
    int code;
    if (st == KEVO_ERR_INTERRUPTED) {
        cli_say("kevo", st, &err);
        int sig = kv_signal_caught();
        code = sig > 0 ? 128 + sig : 130;
    } else if (st == KEVO_ERR_ARG) { /* the options are wrong: a usage error */
        cli_say("kevo tune", st, &err);
        fprintf(stderr, "(try 'kevo tune --help')\n");
        code = 2;
    } else {
        code = st ? cli_fail(st, &err) : cli_all_failed(o->proc.db_path, runs, nruns, a->quiet);
    }
    /* after a signal (mpirun passes one to every rank) the other ranks are not waited for */
    kevo_mpi_end(o->proc.mpi, st == KEVO_ERR_INTERRUPTED);
    return code;
}

/* kevo tune: parse the table, check the options together, run. */
static int cmd_tune(int argc, char **argv)
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

/* What `kevo report` takes from its command line. */
typedef struct {
    const char *db_path, *format, *svg;
    int64_t run, top;
    uint32_t given; /* CLI_REPORT_GIVEN_FORMAT */
} cli_report_args;

enum { CLI_REPORT_GIVEN_FORMAT = 1u << 0 };

#define RA(f) .off = offsetof(cli_report_args, f)
/* Every option of `kevo report` (its help text is cli_cmds' "report" usage). */
static const cli_opt cli_report_opts[] = {
    {"db", CLI_OPT_STR, RA(db_path)},
    {"format", CLI_OPT_STR, RA(format), .given_off = offsetof(cli_report_args, given),
     .given = CLI_REPORT_GIVEN_FORMAT},
    {"run", CLI_OPT_I64, RA(run), .lo = 1, .hi = INT64_MAX, .bad = "--run takes a run id, not '%s'"},
    {"top", CLI_OPT_I64, RA(top), .lo = 0, .hi = 1000000, .bad = "--top takes a whole number (0: all), not '%s'"},
    {"svg", CLI_OPT_STR, RA(svg)},
};
#undef RA

static int cmd_report(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("report");
    cli_report_args a = {.format = "table", .top = 20};
    int prc = cli_opts_parse("report", cli_report_opts, (int)KV_ARRAY_LEN(cli_report_opts), &a, argc, argv);
    if (prc)
        return prc;
    const char *db_path = a.db_path, *format = a.format, *svg = a.svg;
    bool format_given = a.given & CLI_REPORT_GIVEN_FORMAT;
    int64_t run = a.run, top = a.top;
    if (!db_path)
        return cli_bad_usage("report", "%s", "--db is required");
    bool json = strcmp(format, "json") == 0;
    if (!json && strcmp(format, "table") != 0)
        return cli_bad_usage("report", "--format takes table or json, not '%s'", format);
    if (svg && format_given)
        return cli_bad_usage("report", "%s", "--svg and --format exclude each other (--svg writes a picture to its "
                             "file; --format prints a table or JSON)");
    if (svg) { /* an output never replaces an input: not the DB, nor its journal files (same device and inode) */
        char wal[PATH_MAX + 8], shm[PATH_MAX + 8], jrn[PATH_MAX + 16], msg[900];
        snprintf(wal, sizeof wal, "%s-wal", db_path);
        snprintf(shm, sizeof shm, "%s-shm", db_path);
        snprintf(jrn, sizeof jrn, "%s-journal", db_path);
        const char *inputs[] = {db_path, wal, shm, jrn};
        int k = kv_file_among(svg, inputs, (int)KV_ARRAY_LEN(inputs));
        if (k >= 0) {
            snprintf(msg, sizeof msg, "--svg '%.300s' is %s'%.300s' that this command reads: kevo never writes "
                     "over its input (name another file)", svg, k == 0 ? "the database " : "", inputs[k]);
            return cli_bad_usage("report", "%s", msg);
        }
    }
    kevo_err err;
    kevo_err_clear(&err);
    kevo_db *db = NULL;
    kevo_status st = kevo_db_open_ro(db_path, &db, &err);
    if (st)
        return cli_fail(st, &err);
    kv_buf out;
    kv_buf_init(&out);
    if (svg) {
        st = kevo_report_svg(db, run, &out, &err);
        if (!st)
            st = kv_write_file(svg, out.data, out.len, &err);
        kevo_db_close(db);
        kv_buf_release(&out);
        if (st)
            return cli_fail(st, &err);
        struct stat sb; /* no note after an SVG written to /dev/stdout, a pipe or a device */
        if (lstat(svg, &sb) == 0 && S_ISREG(sb.st_mode))
            printf("wrote %s\n", svg);
        return 0;
    }
    st = json ? kevo_report_json(db, run, &out, &err) : kevo_report_table(db, run, (int)top, &out, &err);
    kevo_db_close(db);
    if (st) {
        kv_buf_release(&out);
        return cli_fail(st, &err);
    }
    if (json)
        fputs(out.data ? out.data : "", stdout); /* cJSON escapes every control character */
    else
        cli_put_clean(out.data);
    kv_buf_release(&out);
    return 0;
}

/* verify --maps: a comma list of map kinds. */
static int cli_verify_maps(const char *cmd, void *args, const char *val)
{
    kevo_verify_opts *o = args;
    int rc;
    if ((rc = cli_list_check(cmd, "maps", val)))
        return rc;
    if (!(o->maps = cli_maps(val)))
        return cli_bad_usage(cmd, "--maps takes sorted, uneven and/or shuffled, not '%s'", val);
    return 0;
}

#define VA(f) .off = offsetof(kevo_verify_opts, f)
/* Every option of `kevo verify` (its help text is cli_cmds' "verify" usage). */
static const cli_opt cli_verify_opts[] = {
    {"db", CLI_OPT_STR, VA(db_path)},
    {"candidate", CLI_OPT_I64, VA(candidate_id), .lo = 1, .hi = INT64_MAX,
     .bad = "--candidate takes a candidate id, not '%s'"},
    {"run", CLI_OPT_I64, VA(run_id), .lo = 1, .hi = INT64_MAX, .bad = "--run takes a run id, not '%s'"},
    {"shape", CLI_OPT_STR, VA(shape)},
    {"dtype", CLI_OPT_STR, VA(dtype)},
    {"arch", CLI_OPT_STR, VA(arch)},
    {"maps", CLI_OPT_FN, .fn = cli_verify_maps},
    {"time", CLI_OPT_FLAG, VA(time)},
    {"reps", CLI_OPT_INT, VA(reps), .lo = 1, .hi = 1000, .bad = "--reps takes a whole number from 1 to 1000, not '%s'"},
    {"device", CLI_OPT_INT, VA(device), .lo = 0, .hi = 1024, .bad = "--device takes a device ordinal, not '%s'"},
    {"seed", CLI_OPT_I64, VA(seed), .lo = 0, .hi = INT64_MAX,
     .bad = "--seed takes a non-negative whole number, not '%s'"},
    {"templates", CLI_OPT_STR, VA(extra_templates)},
};
#undef VA

static int cmd_verify(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("verify");
    kevo_verify_opts o;
    kevo_verify_opts_init(&o);
    o.db_path = NULL;
    o.data_dir = cli_data_dir();
    int rc = cli_opts_parse("verify", cli_verify_opts, (int)KV_ARRAY_LEN(cli_verify_opts), &o, argc, argv);
    if (rc)
        return rc;
    if (!o.db_path)
        return cli_bad_usage("verify", "%s", "--db is required");
    /* names from a table: usage errors, before the GPU or the DB is looked at */
    kevo_dtype dt;
    if (o.dtype && !kevo_dtype_parse(o.dtype, &dt))
        return cli_bad_usage("verify", "unknown dtype '%.100s' (fp16 or bf16)", o.dtype);
    if (o.shape) { /* the run's op comes from the DB: a shape no op takes is a usage error already */
        int nops;
        const kevo_op *const *ops = kevo_op_list(&nops);
        kevo_err serr, first;
        bool any = false;
        for (int i = 0; i < nops && !any; i++) {
            kevo_syms sy;
            any = ops[i]->parse_shape(o.shape, &sy, i ? &serr : &first) == KEVO_OK;
        }
        if (!any)
            return cli_bad_usage("verify", "%s", first.msg);
    }
    kevo_limits lim;
    kevo_err aerr;
    if (o.arch && kevo_limits_for_arch(o.arch, &lim, &aerr)) {
        cli_say("kevo verify", KEVO_ERR_ARG, &aerr);
        fprintf(stderr, "(try 'kevo verify --help')\n");
        return 2;
    }
    kevo_err err;
    kevo_err_clear(&err);
    bool passed = false;
    o.on_event = cli_event;
    o.event_ctx = &cli_ev;
    kevo_status st = kevo_verify(&o, &passed, &err);
    if (st)
        return cli_fail(st, &err);
    return passed ? 0 : 1;
}

static int cmd_profile(int argc, char **argv)
{
    return cli_help_asked(argc, argv) ? cli_print_help("profile") : cli_profile(argc, argv);
}

/* `kevo replay --model`: one line (or JSON object) per family. */
static int cli_replay_model(const kevo_replay_opts *o, bool json)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_model_fit *f = NULL;
    int n = 0;
    kevo_status st = kevo_replay_model(o, &f, &n, &err);
    if (st)
        return cli_fail(st, &err);
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

static int cmd_replay(int argc, char **argv)
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
    kevo_err err;
    kevo_err_clear(&err);
    if (model)
        return cli_replay_model(&o, json);
    kevo_replay_result r;
    if (getenv("KEVO_REPLAY_TRACE")) { /* every evaluation of every replay, on stderr */
        cli_ev.trace = cli_ev.numbered = true;
        o.on_event = cli_event;
        o.event_ctx = &cli_ev;
    }
    kevo_status st = kevo_replay(&o, &r, &err);
    if (st)
        return cli_fail(st, &err);
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

#define XA(f) .off = offsetof(kevo_export_opts, f)
/* Every option of `kevo export` (its help text is cli_cmds' "export" usage). */
static const cli_opt cli_export_opts[] = {
    {"db", CLI_OPT_STR, XA(db_path)},
    {"out", CLI_OPT_STR, XA(out_dir)},
    {"op", CLI_OPT_STR, XA(op)},
    {"arch", CLI_OPT_STR, XA(archs)},
    {"name", CLI_OPT_STR, XA(name)},
    {"top", CLI_OPT_INT, XA(top), .lo = 1, .hi = 100, .bad = "--top takes a whole number from 1 to 100, not '%s'"},
    {"templates", CLI_OPT_STR, XA(extra_templates)},
    {"force", CLI_OPT_FLAG, XA(force)},
    {"torch", CLI_OPT_FLAG, XA(torch)},
};
#undef XA

static int cmd_export(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("export");
    kevo_export_opts o;
    kevo_export_opts_init(&o);
    o.data_dir = cli_data_dir();
    o.on_event = cli_event; /* which shapes run cuBLAS, and why others stay UNSUPPORTED */
    o.event_ctx = &cli_ev;
    int prc = cli_opts_parse("export", cli_export_opts, (int)KV_ARRAY_LEN(cli_export_opts), &o, argc, argv);
    if (prc)
        return prc;
    if (!o.db_path || !o.out_dir)
        return cli_bad_usage("export", "%s", "--db and --out are required");
    /* names from a table: usage errors, before the DB is opened */
    if (o.op && !kevo_op_find(o.op)) {
        char known[256], msg[512];
        kevo_op_names(known, sizeof known);
        snprintf(msg, sizeof msg, "unknown op '%.100s' (known: %s)", o.op, known);
        return cli_bad_usage("export", "%s", msg);
    }
    if (o.archs) {
        char archs[KEVO_ARCH_LIST_MAX][16];
        int narchs = 0;
        int rc = cli_list_check("export", "arch", o.archs);
        if (rc)
            return rc;
        kevo_err aerr;
        if (kevo_arch_list_parse(o.archs, archs, KEVO_ARCH_LIST_MAX, &narchs, &aerr))
            return cli_bad_usage("export", "%s", aerr.msg);
    }
    kevo_err err;
    kevo_err_clear(&err);
    if (kevo_export_check_name(o.name, &err) != KEVO_OK ||
        (o.torch && kevo_export_check_torch_name(o.name, &err) != KEVO_OK))
        return cli_bad_usage("export", "%s", err.msg);
    const char *inputs[] = {o.db_path};
    if (o.out_dir && kv_file_among(o.out_dir, inputs, 1) >= 0) /* an output never replaces an input */
        return cli_bad_usage("export", "--out '%s' is the DB it reads: give a new folder", o.out_dir);
    int nk = 0, nt = 0;
    kevo_status st = kevo_export(&o, &nk, &nt, &err);
    if (st)
        return cli_fail(st, &err);
    printf("wrote %s: library %s, %d kernels, %d tuned shapes\n", o.out_dir, o.name, nk, nt);
    return 0;
}

static int cmd_list(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("list");
    if (argc > 2)
        return cli_bad_usage("list", "unexpected argument '%s'", argv[2]);
    const char *what = argc == 2 ? argv[1] : NULL;
    if (what && strcmp(what, "ops") && strcmp(what, "families") && strcmp(what, "policies"))
        return cli_bad_usage("list", "list ops, families or policies, not '%s'", what);
    if (!what || !strcmp(what, "ops")) {
        int n;
        const kevo_op *const *ops = kevo_op_list(&n);
        printf("ops:\n");
        for (int i = 0; i < n; i++)
            printf("  %-10s %s\n             default shape %s\n", ops[i]->name, ops[i]->summary,
                   ops[i]->default_shape);
    }
    if (!what || !strcmp(what, "families")) {
        char dir[PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/templates", cli_data_dir());
        kevo_space **sp = NULL;
        int n = 0;
        kevo_err err;
        kevo_status st = kevo_spaces_load_dir(dir, NULL, &sp, &n, &err);
        if (st)
            return cli_fail(st, &err);
        /* space files are text kevo does not control: each line through the terminal cleaner */
        kv_buf t;
        kv_buf_init(&t);
        kv_buf_printf(&t, "template families (%s):\n", dir);
        for (int i = 0; i < n; i++) {
            kv_buf_printf(&t, "  %-12s op %s, archs", sp[i]->family, sp[i]->op);
            for (int a = 0; a < sp[i]->narchs; a++)
                kv_buf_printf(&t, " %s", sp[i]->archs[a]);
            kv_buf_printf(&t, "\n               %s\n               axes:", kv_term_clean(sp[i]->description));
            for (int a = 0; a < sp[i]->naxes; a++)
                kv_buf_printf(&t, " %s", sp[i]->axes[a].op);
            kv_buf_puts(&t, "\n");
            for (int e = 0; e < sp[i]->nentries; e++)
                kv_buf_printf(&t, "               entered from %s by '%s': %s\n", sp[i]->entries[e].from,
                              sp[i]->entries[e].op, kv_term_clean(sp[i]->entries[e].why));
        }
        cli_put_clean(t.data);
        kv_buf_release(&t);
        kevo_spaces_free(sp, n);
    }
    if (!what || !strcmp(what, "policies")) {
        int n;
        const kevo_policy *const *p = kevo_policy_list(&n);
        printf("policies:\n");
        for (int i = 0; i < n; i++)
            printf("  %-10s %s\n", p[i]->name, p[i]->summary);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc >= 3 && !strcmp(argv[1], "help"))
            return cli_print_help(argv[2]);
        cli_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("kevo %s\n", KEVO_VERSION);
        return 0;
    }
    /* what compiles and DB handles say (a PCH given up, a lock waited for), in every command */
    const char *trace = getenv("KEVO_TRACE_EVAL"); /* bench/trace_idle.py reads these lines */
    cli_ev.trace = trace && strcmp(trace, "1") == 0;
    kevo_compile_set_events(cli_event, &cli_ev);
    kevo_db_set_events(cli_event, &cli_ev);
    for (size_t i = 0; i < KV_ARRAY_LEN(cli_cmds); i++)
        if (!strcmp(argv[1], cli_cmds[i].name))
            return cli_cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "kevo: unknown command '%s' (try 'kevo --help')\n", argv[1]);
    return 2;
}
