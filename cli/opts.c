/* opts.c — the option tables of the kevo commands: the generic loop that
 * parses argv against one (see opts.h) and the helpers every command's
 * options share (usage errors, numbers in a range, an option given twice). */
#define _GNU_SOURCE
#include "cli/opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* A usage error: "kevo CMD: " fmt (with arg), the --help hint; exit code 2. */
int cli_bad_usage(const char *cmd, const char *fmt, const char *arg)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, arg);
    fprintf(stderr, "kevo %s: %s\n(try 'kevo %s --help')\n", cmd, kv_term_clean(msg), cmd);
    return 2;
}

/* Start a command's getopt_long loop from its first argument, quietly. */
void cli_getopt_reset(void)
{
    opterr = 0;
    optopt = 0;
    optind = 1;
}

/* The usage error for the option getopt_long just refused (a short option is
 * named by optopt: for "-xy" argv[optind - 1] is still the previous argument). */
int cli_bad_option(const char *cmd, char **argv)
{
    char buf[8];
    const char *opt = argv[optind - 1];
    if (optopt > 0 && optopt < 128) {
        snprintf(buf, sizeof buf, "-%c", optopt);
        opt = buf;
    }
    return cli_bad_usage(cmd, "unknown or incomplete option '%s'", opt);
}

/* A whole number in [lo, hi], decimal, nothing before or after it (no
 * blanks, no '+'); the range is checked before anything narrows it. */
bool cli_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v;
    if (!s || !(*s == '-' || (*s >= '0' && *s <= '9')) || !kv_parse_i64(s, &v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* A finite decimal number in [lo, hi] (no inf, nan, hex or blanks). */
bool cli_double(const char *s, double lo, double hi, double *out)
{
    if (!s || !(*s == '-' || *s == '.' || (*s >= '0' && *s <= '9')) || strpbrk(s, "xXpP"))
        return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || *end || end == s || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* A repeated option is a usage error: which of two values was meant is not
 * for kevo to guess.  seen: the options met so far (codes from 256: a table's
 * row i is 256 + i). */
bool cli_repeated(uint64_t *seen, int c)
{
    if (c < 256 || c >= 256 + 64)
        return false;
    uint64_t bit = 1ull << (c - 256);
    bool again = (*seen & bit) != 0;
    *seen |= bit;
    return again;
}

/* The usage error for an option given twice (argv[optind - 1] is it, or its value). */
int cli_twice(const char *cmd, const struct option *opts, int c)
{
    for (const struct option *o = opts; o->name; o++)
        if (o->val == c)
            return cli_bad_usage(cmd, "--%s is given more than once", o->name);
    return cli_bad_usage(cmd, "%s", "an option is given more than once");
}

/* Take one option of the table: its value (when it takes one) into its
 * field, then its "given" bit.  0, or a usage error's exit code. */
static int cli_opt_take(const char *cmd, const cli_opt *r, void *args, const char *val)
{
    char *base = args;
    int64_t v;
    double d;
    switch (r->kind) {
    case CLI_OPT_STR:
        *(const char **)(base + r->off) = val;
        break;
    case CLI_OPT_FLAG:
        *(bool *)(base + r->off) = true;
        break;
    case CLI_OPT_INT:
    case CLI_OPT_I64:
        if (!cli_int(val, r->lo, r->hi, &v))
            return cli_bad_usage(cmd, r->bad, val);
        if (r->kind == CLI_OPT_INT)
            *(int *)(base + r->off) = (int)v;
        else
            *(int64_t *)(base + r->off) = v;
        break;
    case CLI_OPT_DBL:
        if (!cli_double(val, r->dlo, r->dhi, &d))
            return cli_bad_usage(cmd, r->bad, val);
        *(double *)(base + r->off) = d;
        break;
    case CLI_OPT_FN: {
        int rc = r->fn(cmd, args, val);
        if (rc)
            return rc;
        break;
    }
    }
    if (r->given)
        *(uint32_t *)(base + r->given_off) |= r->given;
    return 0;
}

int cli_opts_parse(const char *cmd, const cli_opt *tab, int n, void *args, int argc, char **argv)
{
    struct option lo[CLI_OPTS_MAX + 1];
    if (n < 0 || n > CLI_OPTS_MAX) {
        fprintf(stderr, "kevo %s: internal error: %d options in a table (at most %d)\n", cmd, n, CLI_OPTS_MAX);
        return 2;
    }
    for (int i = 0; i < n; i++) /* option i is returned as 256 + i: cli_repeated keeps one bit each */
        lo[i] = (struct option){tab[i].name, tab[i].kind == CLI_OPT_FLAG ? no_argument : required_argument, 0,
                                256 + i};
    lo[n] = (struct option){0, 0, 0, 0};
    uint64_t seen = 0;
    int c;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (cli_repeated(&seen, c))
            return cli_twice(cmd, lo, c);
        if (c < 256 || c >= 256 + n)
            return cli_bad_option(cmd, argv);
        int rc = cli_opt_take(cmd, &tab[c - 256], args, optarg);
        if (rc)
            return rc;
    }
    if (optind < argc)
        return cli_bad_usage(cmd, "unexpected argument '%s'", argv[optind]);
    return 0;
}
