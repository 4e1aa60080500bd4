/* cmd_report.c — `kevo report`: a DB's runs as a table, JSON or an SVG. */
#define _GNU_SOURCE
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "db/report.h"
#include "db/store.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

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

int cmd_report(int argc, char **argv)
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
