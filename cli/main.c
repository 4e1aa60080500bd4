/* main.c — the kevo command line: one table of commands, one of options each.
 *
 * Exit status: 0 success, 1 the command failed (message on stderr), 2 usage
 * error.  Nothing here needs a GPU until a command asks for one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/profile.h"

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
     "          [--llm-retries N] [--llm-prompt-tokens N] [--llm-prompt-chars N] [--llm-edit-grammar]\n"
     "          [--prompts DIR] [--mpi]\n"
     "          [--profile]\n"
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
     "             to the model's context); --llm-prompt-chars also caps it in bytes;\n"
     "             --llm-edit-grammar holds each reply to one-line edits of the parent by a GBNF\n"
     "             grammar (llama.cpp's \"grammar\" field; for small local models); --prompts DIR\n"
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
     "  --profile  once the run is over, Nsight Compute on its best candidate, as `kevo profile`\n"
     "             does: the figures stored (a resumed run's LLM prompts show them) and printed.\n"
     "             ncu ($KEVO_NCU, else on $PATH) is looked for first (none: exit 2); where it\n"
     "             cannot read counters, a warning and the derived figures\n"
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
     "            [--top N] [--family LIST] [--force] [--torch]\n"
     "  the op's (default ikbo_lce) fastest N (default 3) distinct verified kernels of each\n"
     "  run, plus its fastest one for unpadded weights, with their cubins and launch plans;\n"
     "  --family  only kernels of these families: names or patterns, 'lce_ws,llm_*' (a run\n"
     "           where they lose to an in-run peer runs that peer's cuBLAS form, as always)\n"
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
int cli_print_help(const char *cmd)
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
static int cmd_profile(int argc, char **argv)
{
    return cli_help_asked(argc, argv) ? cli_print_help("profile") : cli_profile(argc, argv);
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
    /* every command's events (a PCH given up, a lock waited for among them) reach cli_event through its
     * kevo_ctx (cli_ctx_new): cli_ev is the one sink */
    const char *trace = getenv("KEVO_TRACE_EVAL"); /* bench/trace_idle.py reads these lines */
    cli_ev.trace = trace && strcmp(trace, "1") == 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(cli_cmds); i++)
        if (!strcmp(argv[1], cli_cmds[i].name))
            return cli_cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "kevo: unknown command '%s' (try 'kevo --help')\n", argv[1]);
    return 2;
}
