/* cli_int.h — what the command files of cli/ share (not installed): the
 * commands themselves, the error line, the library's events on the terminal
 * and the checks every command makes of its options. */
#ifndef KEVO_CLI_INT_H
#define KEVO_CLI_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "kevo.h"

/* The commands (argv[0] is the command's name); exit status 0 success, 1 the
 * command failed (message on stderr), 2 usage error. */
int cmd_tune(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* ---- the library's events (include/kevo.h) on the terminal ---- */

typedef struct cli_events {
    int mode;       /* 0 quiet (warnings only), 1 lines, 2 lines and a live bar */
    bool bar_drawn; /* the bar is stdout's last, unfinished line */
    bool trace;     /* TRACE and DEBUG events on stderr (KEVO_TRACE_EVAL=1, kevo replay's KEVO_REPLAY_TRACE) */
    bool numbered;  /* DEBUG lines begin with their number (cand_id), right-aligned (kevo replay) */
} cli_events;

/* One per process: compiles and DB handles report process-wide. */
extern cli_events cli_ev;

/* The handler every library call gets (ctx: a cli_events): lines to stdout,
 * warnings ("kevo: ...") to stderr, the bar on stdout when it is a terminal,
 * traces to stderr when asked for, all through kv_term_clean. */
void cli_event(void *ctx, const kevo_event *ev);

/* Erase the live bar when it is drawn, so that a line can follow. */
void cli_bar_clear(cli_events *c);

/* A handle for one command's library call, its events to cli_event(&cli_ev);
 * NULL (with "kevo: out of memory" said) when out of memory. */
kevo_ctx *cli_ctx_new(void);

/* ---- signals (signals.c) ---- */

/* Install the handlers that cancel ctx (kevo_ctx_cancel, why the signal) on
 * SIGINT, SIGTERM and the other signals of kv_signals_ending() whose
 * disposition is the default; a second signal after the call stopped
 * listening takes its previous action. */
void cli_signals_catch(kevo_ctx *ctx);
/* Put the previous handlers back (SIGXFSZ or SIGXCPU, when it cancelled,
 * stays ignored). */
void cli_signals_restore(void);
/* The exit status of a command ctx's cancel stopped: 128 + the signal (130
 * when none is known). */
int cli_signal_exit(const kevo_ctx *ctx);

/* "PREFIX: MESSAGE" on stderr, through the terminal cleaner. */
void cli_say(const char *prefix, kevo_status st, const kevo_err *err);

/* The bar erased, "kevo: MESSAGE" on stderr; returns 1 (the exit status). */
int cli_fail(kevo_status st, const kevo_err *err);

/* ---- options ---- */

/* Folder holding templates/ and kernels/: $KEVO_HOME, else beside the
 * executable, else the source tree it was built from. */
const char *cli_data_dir(void);

/* "sorted,uneven,shuffled" -> bitmask; 0 on a bad name or no name. */
unsigned cli_maps(const char *s);

/* A comma list as an option gives it: 0 when good, else a usage error's
 * exit code (2), its message printed. */
int cli_list_check(const char *cmd, const char *opt, const char *list);

/* Whether --help or -h is among argv[1..argc). */
bool cli_help_asked(int argc, char **argv);

/* A command's help on stdout (0), or an unknown command's error (2). */
int cli_print_help(const char *cmd);

/* The usage error for an unknown policy, naming the known ones. */
int cli_bad_policy(const char *cmd, const char *policy);

/* ---- output ---- */

/* A number for JSON in fmt when finite, else null (JSON has no inf or nan). */
void cli_json_num(const char *fmt, double v);

/* Text built from a DB onto stdout, each line through the terminal cleaner;
 * text is changed in place. */
void cli_put_clean(char *text);

#endif
