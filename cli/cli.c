/* cli.c — what the commands share: the error line, the library's events on
 * the terminal (lines, warnings, the live bar, traces), the data folder and
 * the checks of comma lists and names. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "search/search.h"
#include "util/util.h"
#include "cli/cand_line.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

#ifndef KEVO_SOURCE_DIR
#define KEVO_SOURCE_DIR "."
#endif

/* "PREFIX: MESSAGE" on stderr; messages quote DB and file text, so no
 * escape sequence or line break of theirs reaches the terminal. */
void cli_say(const char *prefix, kevo_status st, const kevo_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : kevo_status_str(st));
    fprintf(stderr, "%s: %s\n", prefix, kv_term_clean(msg));
}

/* One per process: what every command's kevo_ctx (cli_ctx_new) says goes here. */
cli_events cli_ev = {.mode = 1};

kevo_ctx *cli_ctx_new(void)
{
    kevo_ctx *ctx = kevo_ctx_new();
    if (!ctx) {
        fprintf(stderr, "kevo: out of memory\n");
        return NULL;
    }
    kevo_ctx_set_events(ctx, cli_event, &cli_ev);
    return ctx;
}

void cli_bar_clear(cli_events *c)
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
void cli_event(void *ctx, const kevo_event *ev)
{
    cli_events *c = ctx;
    /* what is not shown is not copied: TRACE events come several per candidate */
    bool show = ev->kind == KEVO_EVENT_WARNING ||
                ((ev->kind == KEVO_EVENT_LINE || ev->kind == KEVO_EVENT_CANDIDATE) && c->mode >= 1) ||
                (ev->kind == KEVO_EVENT_PROGRESS && c->mode >= 2) ||
                ((ev->kind == KEVO_EVENT_TRACE || ev->kind == KEVO_EVENT_DEBUG) && c->trace);
    if (!show)
        return;
    kv_buf line; /* a candidate's line, formatted here from its data */
    kv_buf_init(&line);
    const char *from = ev->text;
    if (ev->kind == KEVO_EVENT_CANDIDATE) {
        if (!ev->cand || cli_cand_line(ev->cand, &line) || !line.data) {
            kv_buf_release(&line);
            return;
        }
        from = line.data;
    }
    char small[1024], *text = small;
    size_t n = strlen(from);
    if (n >= sizeof small && !(text = malloc(n + 1))) {
        kv_buf_release(&line);
        return;
    }
    memcpy(text, from, n + 1);
    kv_buf_release(&line);
    kv_term_clean(text);
    switch (ev->kind) {
    case KEVO_EVENT_LINE:
    case KEVO_EVENT_CANDIDATE:
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

int cli_fail(kevo_status st, const kevo_err *err)
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
const char *cli_data_dir(void)
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
unsigned cli_maps(const char *s)
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
int cli_list_check(const char *cmd, const char *opt, const char *list)
{
    char msg[512];
    if (!list || !*list) {
        snprintf(msg, sizeof msg, "--%s: the list is empty (name at least one)", opt);
        return cli_bad_usage(cmd, "%s", msg);
    }
    size_t len, ql;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        if (len == 0) {
            snprintf(msg, sizeof msg, "--%s '%.200s': an empty item (one name between commas)", opt, list);
            return cli_bad_usage(cmd, "%s", msg);
        }
        for (const char *q = list, *prev; q < item && kv_list_next(&q, &prev, &ql);) /* the items before */
            if (ql == len && strncmp(prev, item, len) == 0) {
                snprintf(msg, sizeof msg, "--%s: '%.*s' is listed twice", opt, (int)(len < 100 ? len : 100), item);
                return cli_bad_usage(cmd, "%s", msg);
            }
    }
    return 0;
}

/* A number for JSON in fmt when finite, else null (JSON has no inf or nan). */
void cli_json_num(const char *fmt, double v)
{
    if (isfinite(v))
        printf(fmt, v);
    else
        printf("null");
}

/* Text built from a DB onto stdout, each line through the terminal cleaner
 * (what a report.c table holds is cleaned there too; this is the last
 * guard).  text is changed in place. */
void cli_put_clean(char *text)
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

bool cli_help_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}
/* The usage error for an unknown policy, naming the known ones. */
int cli_bad_policy(const char *cmd, const char *policy)
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
