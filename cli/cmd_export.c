/* cmd_export.c — `kevo export`: a DB's winners as a C library. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "core/arch.h"
#include "export/export.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

#define XA(f) .off = offsetof(kevo_export_opts, f)
/* Every option of `kevo export` (its help text is cli_cmds' "export" usage). */
static const cli_opt cli_export_opts[] = {
    {"db", CLI_OPT_STR, XA(db_path)},
    {"out", CLI_OPT_STR, XA(out_dir)},
    {"op", CLI_OPT_STR, XA(op)},
    {"arch", CLI_OPT_STR, XA(archs)},
    {"family", CLI_OPT_STR, XA(families)},
    {"name", CLI_OPT_STR, XA(name)},
    {"top", CLI_OPT_INT, XA(top), .lo = 1, .hi = 100, .bad = "--top takes a whole number from 1 to 100, not '%s'"},
    {"templates", CLI_OPT_STR, XA(extra_templates)},
    {"force", CLI_OPT_FLAG, XA(force)},
    {"torch", CLI_OPT_FLAG, XA(torch)},
};
#undef XA

int cmd_export(int argc, char **argv)
{
    if (cli_help_asked(argc, argv))
        return cli_print_help("export");
    kevo_export_opts o;
    kevo_export_opts_init(&o);
    o.data_dir = cli_data_dir();
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
    kevo_ctx *ctx = cli_ctx_new(); /* its events: which shapes run cuBLAS, and why others stay UNSUPPORTED */
    if (!ctx)
        return 1;
    kevo_status st = kevo_export(ctx, &o, &nk, &nt);
    if (st) {
        int code = cli_fail(st, kevo_ctx_error(ctx));
        kevo_ctx_free(ctx);
        return code;
    }
    kevo_ctx_free(ctx);
    printf("wrote %s: library %s, %d kernels, %d tuned shapes\n", o.out_dir, o.name, nk, nt);
    return 0;
}
