/* prompt_parts.c — the prompt's parts about the rest of the run: the in-run
 * peers' times, the run's best candidates of other lineages with their diff
 * to the parent, and the plan's `let` lines the launches need (the cost
 * model's are left out). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "llm/prompt.h"
#include "llm/prompt_int.h"

size_t kevo_prompt_tokens(size_t bytes)
{
    return (bytes + KEVO_PROMPT_BYTES_PER_TOKEN - 1) / KEVO_PROMPT_BYTES_PER_TOKEN;
}

/* ---- peers ---- */

void pr_peers(const kevo_prompt_in *in, kv_buf *b)
{
    if (!in->peers || in->npeers <= 0)
        return;
    int fastest = -1;
    for (int i = 0; i < in->npeers; i++)
        if (isfinite(in->peers[i].median_ms) &&
            (fastest < 0 || in->peers[i].median_ms < in->peers[fastest].median_ms))
            fastest = i;
    kv_buf_puts(b, "\n# Peers: the op's other implementations, timed in this run\n\n");
    for (int i = 0; i < in->npeers && i < 16; i++) {
        kv_buf_puts(b, "- ");
        pr_line(b, in->peers[i].name, 40);
        if (isfinite(in->peers[i].median_ms))
            kv_buf_printf(b, ": %.4g ms%s\n", in->peers[i].median_ms, i == fastest ? " (the fastest: the kernel "
                          "to beat)" : "");
        else
            kv_buf_puts(b, ": failed or not timed\n");
    }
}

/* ---- the run's best ---- */

/* The parent's params and a top candidate's, as "NAME: a -> b" for each
 * that differs, into b (nothing when none does). */
static void pr_params_diff(const char *from, const char *to, kv_buf *b)
{
    char pa[KEVO_PROMPT_LINE_MAX * 2], pb[KEVO_PROMPT_LINE_MAX * 2];
    snprintf(pa, sizeof pa, "%s", from ? from : "");
    snprintf(pb, sizeof pb, "%s", to ? to : "");
    bool any = false;
    char *save = NULL;
    for (char *w = strtok_r(pb, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - w) + 1;
        const char *old = NULL;
        for (const char *p = pa; *p && !old; p++)
            if ((p == pa || p[-1] == ' ') && !strncmp(p, w, n))
                old = p + n;
        size_t ol = old ? strcspn(old, " ") : 0;
        if (old && ol == strlen(eq + 1) && !strncmp(old, eq + 1, ol))
            continue;
        kv_buf_printf(b, "%s%.*s %.*s -> %s", any ? ", " : "params changed: ", (int)(n - 1), w, (int)ol,
                      old ? old : "(none)", eq + 1);
        any = true;
    }
    if (any)
        kv_buf_puts(b, "\n");
}

/* The lines of text[0..len) as offsets: *starts malloc'd (n + 1 entries). */
static int pr_lines(const char *text, size_t **starts)
{
    size_t len = strlen(text);
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    n += len > 0 && text[len - 1] != '\n';
    *starts = malloc(((size_t)n + 1) * sizeof **starts);
    if (!*starts)
        return -1;
    int k = 0;
    (*starts)[k++] = 0;
    for (size_t i = 0; i < len && k <= n; i++)
        if (text[i] == '\n' && i + 1 <= len)
            (*starts)[k++] = i + 1;
    (*starts)[n] = len;
    return n;
}

static bool pr_line_eq(const char *a, const size_t *as, int i, const char *b, const size_t *bs, int j)
{
    size_t la = as[i + 1] - as[i], lb = bs[j + 1] - bs[j];
    return la == lb && !memcmp(a + as[i], b + bs[j], la);
}

/* A diff of child against parent: the lines they share at the head and the
 * tail trimmed, what lies between as "-" and "+" lines (at most max_lines
 * of them; past that, counted). */
void pr_diff(const char *parent, const char *child, int max_lines, kv_buf *b)
{
    size_t *ps = NULL, *cs = NULL;
    int np = pr_lines(parent, &ps), nc = pr_lines(child, &cs);
    if (np < 0 || nc < 0) {
        free(ps);
        free(cs);
        return;
    }
    int head = 0, tail = 0;
    while (head < np && head < nc && pr_line_eq(parent, ps, head, child, cs, head))
        head++;
    while (tail < np - head && tail < nc - head && pr_line_eq(parent, ps, np - 1 - tail, child, cs, nc - 1 - tail))
        tail++;
    int del = np - head - tail, add = nc - head - tail;
    if (del + add == 0) {
        kv_buf_puts(b, "(the same source as the parent)\n");
    } else if (del + add > max_lines * 4 && del > np / 2) {
        kv_buf_printf(b, "(a different kernel: %d of the parent's %d lines replaced by %d)\n", del, np, add);
    } else {
        kv_buf diff;
        kv_buf_init(&diff);
        kv_buf_printf(&diff, "@@ line %d: -%d +%d @@\n", head + 1, del, add);
        int shown = 0;
        for (int i = head; i < np - tail && shown < max_lines; i++, shown++) {
            kv_buf_puts(&diff, "-");
            kv_buf_append(&diff, parent + ps[i], ps[i + 1] - ps[i]);
        }
        for (int j = head; j < nc - tail && shown < max_lines; j++, shown++) {
            kv_buf_puts(&diff, "+");
            kv_buf_append(&diff, child + cs[j], cs[j + 1] - cs[j]);
        }
        if (diff.len && diff.data[diff.len - 1] != '\n')
            kv_buf_puts(&diff, "\n");
        if (del + add > shown)
            kv_buf_printf(&diff, "[%d more changed lines left out]\n", del + add - shown);
        pr_block(b, "diff", diff.data ? diff.data : "", pr_cut(diff.data ? diff.data : "", diff.len, 8192));
        kv_buf_release(&diff);
    }
    free(ps);
    free(cs);
}

void pr_tops(const kevo_prompt_in *in, int show, kv_buf *b)
{
    int n = in->tops && in->ntops > 0 ? in->ntops : 0;
    if (n > KEVO_PROMPT_TOPS_MAX)
        n = KEVO_PROMPT_TOPS_MAX;
    if (n == 0)
        return;
    kv_buf_puts(b, "\n# The run's best kernels of other lineages\n\n");
    if (show < n)
        kv_buf_printf(b, "[%d of them left out to fit the prompt]\n", n - show);
    const kevo_llm_node *p = in->parent;
    for (int i = 0; i < n && i < show; i++) {
        const kevo_llm_node *t = &in->tops[i];
        kv_buf_printf(b, "%s%d. ", i ? "\n" : "", i + 1);
        pr_line(b, t->generator, 40);
        kv_buf_puts(b, " ");
        pr_line(b, t->family, 64);
        if (t->params && *t->params) {
            kv_buf_puts(b, " (");
            pr_line(b, t->params, KEVO_PROMPT_LINE_MAX * 2);
            kv_buf_puts(b, ")");
        }
        if (isfinite(t->median_ms))
            kv_buf_printf(b, ": %.4g ms", t->median_ms);
        if (isfinite(t->speedup))
            kv_buf_printf(b, ", %.3fx the baseline", t->speedup);
        if (isfinite(t->tflops))
            kv_buf_printf(b, ", %.4g TFLOP/s", t->tflops);
        if (isfinite(t->roofline))
            kv_buf_printf(b, ", %.2f of the roofline", t->roofline);
        if (t->regs >= 0)
            kv_buf_printf(b, ", %d registers", t->regs);
        kv_buf_puts(b, "\n");
        if (t->summary && *t->summary) {
            kv_buf_puts(b, "It changed: ");
            pr_line(b, t->summary, KEVO_PROMPT_LINE_MAX);
            kv_buf_puts(b, "\n");
        }
        /* its diff to the parent: the source's when both are known, else the params' */
        if (t->source && p->source)
            pr_diff(p->source, t->source, KEVO_PROMPT_DIFF_LINES, b);
        else if (t->family && p->family && !strcmp(t->family, p->family))
            pr_params_diff(p->params, t->params, b);
        else
            kv_buf_puts(b, "(another template family: its source is not shown)\n");
    }
}

/* ---- the plan's lets ---- */

/* Add the identifiers of text to set (a " name " list). */
static void pr_idents(const char *text, kv_buf *set)
{
    for (const char *p = text; p && *p;) {
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *e = p;
            while (isalnum((unsigned char)*e) || *e == '_')
                e++;
            kv_buf_printf(set, " %.*s ", (int)(e - p), p);
            p = e;
        } else {
            p++;
        }
    }
}

static bool pr_in_set(const kv_buf *set, const char *name)
{
    char key[80];
    snprintf(key, sizeof key, " %s ", name);
    return set->data && strstr(set->data, key);
}

cJSON *pr_needed_lets(const cJSON *space, const cJSON *shown)
{
    const cJSON *lets = cJSON_GetObjectItemCaseSensitive(space, "let");
    if (!cJSON_IsArray(lets))
        return NULL;
    kv_buf set;
    kv_buf_init(&set);
    static const char *const users[] = {"launches", "workspace", "pad_k", "tmaps", "tensor_maps"};
    for (size_t k = 0; k < sizeof users / sizeof users[0]; k++) {
        char *t = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(space, users[k]));
        pr_idents(t, &set);
        free(t);
    }
    int n = cJSON_GetArraySize(lets);
    bool *keep = n > 0 ? calloc((size_t)n, sizeof *keep) : NULL;
    for (int i = n - 1; keep && i >= 0; i--) {
        const cJSON *l = cJSON_GetArrayItem(lets, i);
        const char *name = cJSON_GetStringValue(cJSON_GetArrayItem(l, 0));
        const char *expr = cJSON_GetStringValue(cJSON_GetArrayItem(l, 1));
        if (name && pr_in_set(&set, name)) {
            keep[i] = true;
            pr_idents(expr, &set);
        }
    }
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(shown, "let");
    if (cJSON_GetArraySize(from) != n)
        from = lets;
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; out && keep && i < n; i++)
        if (keep[i])
            cJSON_AddItemToArray(out, cJSON_Duplicate(cJSON_GetArrayItem(from, i), true));
    free(keep);
    kv_buf_release(&set);
    return out;
}
