/* opts.h — a command's options as one table, git-style: each row is a long
 * option, whether and what value it takes, the field it sets and the "given"
 * bit it sets once taken; one generic loop (getopt_long underneath, so
 * abbreviations and --opt=value work as before) parses argv against it.
 *
 * Usage errors (exit 2) keep the words every command uses: an option given
 * twice, an unknown or incomplete option, a value out of range (the row's
 * own text), an unexpected argument. */
#ifndef KEVO_CLI_OPTS_H
#define KEVO_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct option;

typedef enum {
    CLI_OPT_STR,  /* const char *: the value as given */
    CLI_OPT_FLAG, /* bool: true; takes no value */
    CLI_OPT_INT,  /* int: a whole number in [lo, hi] */
    CLI_OPT_I64,  /* int64_t (or uint64_t): a whole number in [lo, hi] */
    CLI_OPT_DBL,  /* double: a number in [dlo, dhi] */
    CLI_OPT_FN,   /* fn takes the value */
} cli_opt_kind;

typedef struct cli_opt {
    const char *name;  /* the long name, without "--" */
    cli_opt_kind kind; /* also whether it takes a value (all but FLAG) */
    size_t off;        /* the field it sets: its offset in the command's argument struct */
    int64_t lo, hi;    /* INT, I64 */
    double dlo, dhi;   /* DBL */
    const char *bad;   /* INT, I64, DBL: the usage error for a bad value ("%s": the value) */
    /* FN: take val into args; 0, or the exit code of a usage error it printed */
    int (*fn)(const char *cmd, void *args, const char *val);
    size_t given_off;  /* where the uint32_t of "given" bits lies in the argument struct */
    uint32_t given;    /* the bit set there once the option is taken (KEVO_TUNE_GIVEN_*, ...); 0: none */
} cli_opt;

#define CLI_OPTS_MAX 64 /* rows of one table (one bit each for an option given twice) */

/* Parse argv[1..argc) against tab[0..n), setting fields of args.  0 when
 * every argument was an option of the table; else the usage error's exit
 * code (2), its message printed, in the order the arguments come. */
int cli_opts_parse(const char *cmd, const cli_opt *tab, int n, void *args, int argc, char **argv);

/* The helpers the commands share (and the table loop uses). */
int cli_bad_usage(const char *cmd, const char *fmt, const char *arg);
void cli_getopt_reset(void);
int cli_bad_option(const char *cmd, char **argv);
bool cli_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
bool cli_double(const char *s, double lo, double hi, double *out);
bool cli_repeated(uint64_t *seen, int c);
int cli_twice(const char *cmd, const struct option *opts, int c);

#endif
