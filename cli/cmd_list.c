/* cmd_list.c — `kevo list`: ops, template families and search policies. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "search/search.h"
#include "templates/space.h"
#include "util/util.h"
#include "cli/cli_int.h"
#include "cli/opts.h"

int cmd_list(int argc, char **argv)
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
