/* cmd_verify.c — `kevo verify`: a stored candidate checked again at another
 * shape, dtype or map. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "search/tune.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

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

int cmd_verify(int argc, char **argv)
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
    kevo_ctx *ctx = cli_ctx_new();
    if (!ctx)
        return 1;
    bool passed = false;
    kevo_status st = kevo_verify(ctx, &o, &passed);
    int code = st ? cli_fail(st, kevo_ctx_error(ctx)) : passed ? 0 : 1;
    kevo_ctx_free(ctx);
    return code;
}
