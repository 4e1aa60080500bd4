/* prompt.c — the one prompt builder: every parent's prompt, its parts in
 * order and fitted to a budget. */
#define _POSIX_C_SOURCE 200809L
#include "llm/prompt.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/arch.h"
#include "core/op.h"
#include "llm/admit/lex.h"
#include "llm/prompt_int.h"
#include "templates/space.h"

#define PR_PROMPT_FILE_MAX (256 * 1024)

/* ---------------------------------------------------------------- prompt */

/* Read <dir>/<rel> into *out (caller frees); KEVO_ERR_NOT_FOUND when absent. */
static kevo_status pr_read(const char *dir, const char *rel, char **out, kevo_err *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path)
        return kevo_err_set(err, KEVO_ERR_ARG, "prompts path too long");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "no prompt file '%s'", path);
    /* a regular file, read without blocking on a FIFO and within its cap */
    size_t len;
    kevo_status st = kv_read_regular_file(path, PR_PROMPT_FILE_MAX, out, &len, err);
    if (st)
        kevo_err_prefix(err, "prompt file");
    return st;
}

kevo_status kevo_prompt_check_dir(const char *prompts_dir, const char *op, kevo_err *err)
{
    if (!prompts_dir || !op || strlen(op) > 64)
        return kevo_err_set(err, KEVO_ERR_ARG, "no prompts folder or op");
    char rel[128], *text = NULL;
    snprintf(rel, sizeof rel, "ops/%s.md", op);
    kevo_status st = pr_read(prompts_dir, "system.md", &text, err);
    free(text);
    text = NULL;
    if (!st)
        st = pr_read(prompts_dir, rel, &text, err);
    free(text);
    if (st)
        return st;
    kevo_knowledge *kb = NULL; /* the knowledge folder: every file read and indexed once, as the run will */
    st = kevo_knowledge_open(prompts_dir, &kb, err);
    kevo_knowledge_close(kb);
    return st;
}

static bool pr_ident(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) && (unsigned char)*p < 0x80) && *p != '_')
            return false;
    return true;
}

static bool pr_has(const char *s, const char *sub)
{
    return s && strstr(s, sub) != NULL;
}

/* The dense fp16 ridge point (FLOP per byte of DRAM) of the arch's
 * data-center parts, as a range; false when unknown (core/arch.h). */
static bool pr_ridge(const char *arch, double *lo, double *hi)
{
    return kevo_arch_ridge(kevo_arch_find(arch), lo, hi);
}

/* Whether the op at the run's shape is memory-bound (1), compute-bound (2),
 * near the ridge (3), or unknown (0); the figures go into line. */
static int pr_bound(const kevo_prompt_in *in, kv_buf *line)
{
    const kevo_op *op = in->op ? kevo_op_find(in->op) : NULL;
    kevo_dtype dt;
    if (!op || !in->shape || !in->dtype || !kevo_dtype_parse(in->dtype, &dt))
        return 0;
    kevo_syms shape;
    kevo_err err;
    if (op->parse_shape(in->shape, &shape, &err) != KEVO_OK)
        return 0;
    double flops = op->flops(&shape), bytes = op->bytes(&shape, dt);
    if (!(flops > 0) || !(bytes > 0))
        return 0;
    double ai = flops / bytes, lo, hi;
    kv_buf_printf(line, "At this shape the op does %.3g GFLOP and must move at least %.3g MB: %.0f FLOP per byte",
                  flops / 1e9, bytes / 1e6, ai);
    if (!pr_ridge(in->arch, &lo, &hi)) {
        kv_buf_puts(line, ".\n");
        return 0;
    }
    int kind = ai < lo * 0.8 ? 1 : ai > hi * 1.25 ? 2 : 3;
    kv_buf_printf(line, "; the fp16 ridge point of %s parts is about %.0f%s%.0f FLOP per byte, so the op is %s.\n",
                  in->arch, lo, lo == hi ? "" : "-", hi,
                  kind == 1 ? "memory-bound (bytes decide)"
                  : kind == 2 ? "compute-bound (tensor-core throughput decides)"
                              : "near the ridge (bytes and FLOPs both matter)");
    return kind;
}

/* Query words from a failure message: identifiers of 4+ letters, the first 10. */
static void pr_msg_words(const char *msg, kv_buf *q)
{
    if (!msg)
        return;
    static const char *const skip[] = {"line", "error", "warning", "note", "from", "with", "this", "that", "have",
                                       "kevo", "file", "function", NULL};
    int n = 0;
    const char *p = msg;
    for (size_t walked = 0; *p && n < 10 && walked < 4000;) {
        while (*p && !isalpha((unsigned char)*p) && walked < 4000)
            p++, walked++;
        const char *s = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_') && (unsigned char)*p < 0x80)
            p++, walked++;
        size_t len = (size_t)(p - s);
        if (len < 4 || len > 40) {
            if (*p && p == s)
                p++, walked++;
            continue;
        }
        char w[41];
        memcpy(w, s, len);
        w[len] = '\0';
        bool skipped = false;
        for (int k = 0; skip[k] && !skipped; k++)
            skipped = strcasecmp(w, skip[k]) == 0;
        if (skipped)
            continue;
        kv_buf_printf(q, " %s", w);
        n++;
    }
}

/* The query for the parent's bottleneck and failure. */
static void pr_query(const kevo_prompt_in *in, int bound, kv_buf *q)
{
    const kevo_llm_node *p = in->parent;
    const char *fail = p->fail && *p->fail ? p->fail : NULL;
    kv_buf_puts(q, "ikbo");
    if (fail) {
        if (pr_has(fail, "compile"))
            kv_buf_puts(q, " compile error nvrtc ptxas");
        if (pr_has(fail, "crash"))
            kv_buf_puts(q, " ptxas wgmma");
        if (pr_has(fail, "load"))
            kv_buf_puts(q, " load entry extern");
        if (pr_has(fail, "launch") || pr_has(fail, "resource"))
            kv_buf_puts(q, " resources registers shared memory launch");
        if (pr_has(fail, "illegal"))
            kv_buf_puts(q, " illegal address tail mask bounds");
        if (pr_has(fail, "timeout") || pr_has(fail, "hang") || pr_has(fail, "deadlock"))
            kv_buf_puts(q, " timeout deadlock mbarrier parity expect_tx");
        if (pr_has(fail, "wrong") || pr_has(fail, "nan") || pr_has(fail, "verify"))
            kv_buf_puts(q, " verify tolerance nan unwritten tail race");
        if (pr_has(fail, "input_modified") || pr_has(fail, "rejected"))
            kv_buf_puts(q, " rules inputs const");
        if (pr_has(fail, "plan"))
            kv_buf_puts(q, " plan launches grid smem");
        pr_msg_words(p->fail_msg, q);
        return;
    }
    if (bound == 1)
        kv_buf_puts(q, " memory bandwidth vector loads bytes flight");
    else if (bound == 2)
        kv_buf_puts(q, " wgmma tensor core warp specialization pipeline");
    else if (bound == 3)
        kv_buf_puts(q, " roofline wgmma bandwidth");
    if (isfinite(p->roofline) && p->roofline < 0.5)
        kv_buf_puts(q, " occupancy latency stages");
    if (p->spill_bytes > 0)
        kv_buf_puts(q, " spill registers");
    /* the bottleneck the profiler saw (retrieval keyed on it) */
    if (pr_has(p->stall, "scoreboard") || pr_has(p->stall, "lg_throttle"))
        kv_buf_puts(q, " latency loads stages flight");
    else if (pr_has(p->stall, "barrier") || pr_has(p->stall, "membar"))
        kv_buf_puts(q, " barrier mbarrier warp specialization");
    else if (pr_has(p->stall, "math") || pr_has(p->stall, "mio"))
        kv_buf_puts(q, " tensor core shared memory bank");
    if (p->regs >= 200)
        kv_buf_puts(q, " registers setmaxnreg");
    if (p->smem_bytes > 160 * 1024)
        kv_buf_puts(q, " shared memory occupancy");
    const char *fam = p->family;
    if (pr_has(fam, "ws"))
        kv_buf_puts(q, " warp specialization tma mbarrier");
    else if (pr_has(fam, "wgmma"))
        kv_buf_puts(q, " wgmma tma persistent");
    else if (pr_has(fam, "mem"))
        kv_buf_puts(q, " memory candidates");
    else if (pr_has(fam, "mma"))
        kv_buf_puts(q, " fusion epilogue alignment");
}

static void pr_num(kv_buf *b, const char *label, double v, const char *fmt, const char *unit)
{
    kv_buf_printf(b, "- %s: ", label);
    if (isfinite(v)) {
        kv_buf_printf(b, fmt, v);
        kv_buf_puts(b, unit);
    } else {
        kv_buf_puts(b, "unmeasured");
    }
    kv_buf_puts(b, "\n");
}

static void pr_int(kv_buf *b, const char *label, int v, const char *unit)
{
    if (v >= 0)
        kv_buf_printf(b, "- %s: %d%s\n", label, v, unit);
    else
        kv_buf_printf(b, "- %s: unknown\n", label);
}

static bool pr_failed(const kevo_llm_node *n)
{
    return n->fail && *n->fail && strcmp(n->fail, "none") != 0;
}

/* The plan keys a reply may give (prompts/system.md), in the order shown. */
static const char *const pr_plan_keys[] = {"params", "let", "workspace", "pad_k", "tmaps", "launches"};

/* A one-point space as a reply's plan block: only the keys a reply may set,
 * one per line, "params" as {"NAME": value} (the space's one value of each);
 * the family's description, constraints and cost model are left out (a
 * one-point space meets its constraints; the rest is the search's).  Each
 * key as folded has it (the space folded at its params: what is a number
 * there is shown as one, a launch that does not run is left out), the lets
 * those that space's own launches, workspace, pad_k and tmaps need, so that
 * a reply that gives only some keys still defines what the others name.
 * NULL when space is not an object or memory runs out; caller frees. */
static char *pr_plan_view(const cJSON *space, const cJSON *folded)
{
    if (!cJSON_IsObject(space))
        return NULL;
    if (!cJSON_IsObject(folded))
        folded = space;
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_puts(&b, "{");
    bool first = true;
    for (size_t k = 0; k < KV_ARRAY_LEN(pr_plan_keys); k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(folded, pr_plan_keys[k]);
        if (!v)
            continue;
        cJSON *shown = NULL;
        if (k == 1 && !(shown = pr_needed_lets(space, folded))) /* the lets the launches need: not the cost model's */
            continue;
        if (k == 1 && cJSON_GetArraySize(shown) == 0) {
            cJSON_Delete(shown);
            continue;
        }
        if (k == 0 && cJSON_IsArray(v)) { /* [{"name", "values": [x]}, ...] -> {"name": x} */
            shown = cJSON_CreateObject();
            const cJSON *e;
            cJSON_ArrayForEach(e, v)
            {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
                const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
                const cJSON *x = cJSON_IsArray(vals) ? cJSON_GetArrayItem(vals, 0) : NULL;
                if (shown && cJSON_IsString(n) && x)
                    cJSON_AddItemToObject(shown, n->valuestring, cJSON_Duplicate(x, true));
            }
        }
        char *txt = cJSON_PrintUnformatted(shown ? shown : v);
        cJSON_Delete(shown);
        if (!txt) {
            kv_buf_release(&b);
            return NULL;
        }
        kv_buf_printf(&b, "%s\n \"%s\": %s", first ? "" : ",", pr_plan_keys[k], txt);
        first = false;
        free(txt);
    }
    kv_buf_puts(&b, "\n}");
    return kv_buf_take(&b);
}

/* The parent: identity, measurements, failure, plan.  (The source is a part of its own.) */
static void pr_parent(const kevo_prompt_in *in, kv_buf *b)
{
    const kevo_llm_node *p = in->parent;
    kv_buf_puts(b, "# Parent\n\n- generator: ");
    pr_line(b, p->generator, 40);
    kv_buf_puts(b, "\n- family: ");
    pr_line(b, p->family, 64);
    kv_buf_puts(b, "\n- params: ");
    pr_line(b, p->params, KEVO_PROMPT_LINE_MAX * 2);
    kv_buf_puts(b, "\n- status: ");
    pr_line(b, p->status, 40);
    kv_buf_puts(b, "\n");
    pr_num(b, "median time", p->median_ms, "%.4g", " ms");
    pr_num(b, "throughput", p->tflops, "%.4g", " TFLOP/s");
    pr_num(b, "fraction of the roofline", p->roofline, "%.3f", "");
    pr_num(b, "speedup over the baseline", p->speedup, "%.3f", "x");
    pr_int(b, "registers per thread", p->regs, "");
    pr_int(b, "spilled bytes", p->spill_bytes, "");
    pr_int(b, "static shared memory", p->smem_bytes, " bytes");
    if (p->profile && *p->profile) {
        kv_buf_puts(b, "- profile (Nsight Compute): ");
        pr_line(b, p->profile, KEVO_PROMPT_LINE_MAX * 2);
        kv_buf_puts(b, "\n");
    } else if (!pr_failed(p)) {
        kv_buf_puts(b, "- profile: none measured (the figures above are derived: time, TFLOP/s against the roofline, "
                       "registers, spills)\n");
    }
    if (pr_failed(p)) {
        kv_buf_puts(b, "- failure: ");
        pr_line(b, p->fail, 40);
        kv_buf_puts(b, "\n");
        if (p->fail_msg && *p->fail_msg) {
            kv_buf msg;
            kv_buf_init(&msg);
            pr_message(&msg, p->fail_msg, KEVO_PROMPT_MSG_MAX);
            kv_buf_puts(b, "\nThe failure message:\n\n");
            pr_block(b, "text", msg.data ? msg.data : "", msg.len);
            kv_buf_release(&msg);
        }
    }
}

char *kevo_prompt_source_view(const char *src)
{
    if (!src)
        return NULL;
    kevo_lex lx;
    if (!kevo_lex_run(src, strlen(src), &lx))
        return NULL;
    kv_buf raw, out;
    kv_buf_init(&raw);
    kv_buf_init(&out);
    size_t at = 0; /* in lx.text: the first byte not yet copied */
    for (int i = 0; i <= lx.ntok; i++) {
        size_t end = i < lx.ntok ? lx.tok[i].off : lx.n;
        /* the gap before token i: whitespace and comments; comments go */
        for (size_t k = at; k < end;) {
            if (k + 1 < end && lx.text[k] == '/' && lx.text[k + 1] == '*') {
                const char *close = NULL;
                for (size_t q = k + 2; q + 1 < end; q++)
                    if (lx.text[q] == '*' && lx.text[q + 1] == '/') {
                        close = lx.text + q;
                        break;
                    }
                k = close ? (size_t)(close - lx.text) + 2 : end;
                kv_buf_puts(&raw, " ");
            } else if (k + 1 < end && lx.text[k] == '/' && lx.text[k + 1] == '/') {
                while (k < end && lx.text[k] != '\n')
                    k++;
            } else {
                kv_buf_append(&raw, lx.text + k, 1);
                k++;
            }
        }
        if (i < lx.ntok) {
            kv_buf_append(&raw, lx.text + lx.tok[i].off, lx.tok[i].len);
            at = lx.tok[i].off + lx.tok[i].len;
        }
    }
    kevo_lex_free(&lx);
    /* lines without trailing blanks; blank lines dropped */
    const char *t = raw.data ? raw.data : "";
    for (const char *line = t; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        size_t m = n;
        while (m > 0 && (line[m - 1] == ' ' || line[m - 1] == '\t' || line[m - 1] == '\r'))
            m--;
        size_t lead = 0;
        while (lead < m && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        if (lead < m) {
            kv_buf_append(&out, line, m);
            kv_buf_puts(&out, "\n");
        }
        line += n + (nl ? 1 : 0);
    }
    kv_buf_release(&raw);
    if (!out.data) /* all comments, or empty */
        kv_buf_puts(&out, "");
    return kv_buf_take(&out);
}

/* The parent's launch plan as a reply's plan block (left out with the
 * source: a kernel written from scratch names entries of its own). */
static void pr_plan(const kevo_prompt_in *in, kv_buf *b, bool omitted)
{
    const kevo_llm_node *p = in->parent;
    if (omitted) {
        kv_buf_puts(b, "\n## The parent's launch plan\n\n(left out with its source: a new kernel needs a plan of its "
                       "own, whose launches name the entries of the new source, as in the system prompt's "
                       "example)\n");
        return;
    }
    kv_buf_puts(b, "\n## The parent's launch plan (one-point space)\n\n");
    const char *sp = p->space ? p->space : "";
    size_t sl = strnlen(sp, KEVO_PROMPT_SPACE_MAX + 1);
    cJSON *j = sl <= KEVO_PROMPT_SPACE_MAX ? cJSON_Parse(sp) : NULL;
    kv_buf fb;
    kv_buf_init(&fb);
    kevo_err ferr;
    cJSON *folded = j && kevo_space_point_fold(sp, &fb, &ferr) == KEVO_OK ? cJSON_Parse(fb.data) : NULL;
    kv_buf_release(&fb);
    char *pretty = j ? pr_plan_view(j, folded) : NULL;
    cJSON_Delete(folded);
    if (pretty && strlen(pretty) <= KEVO_PROMPT_SPACE_MAX * 2) {
        pr_block(b, "json", pretty, strlen(pretty));
    } else if (sl > 0) {
        size_t n = pr_cut(sp, sl, KEVO_PROMPT_SPACE_MAX);
        pr_block(b, "json", sp, n);
        if (n < sl)
            kv_buf_puts(b, "[the plan was cut here to fit the prompt]\n");
    } else {
        kv_buf_puts(b, "(none given)\n");
    }
    free(pretty);
    cJSON_Delete(j);
}

/* How the parent's source is shown. */
typedef enum {
    PR_SRC_COMPACT = 0, /* compacted for its params (kevo_prompt_compact) */
    PR_SRC_CUT = 1,     /* compacted, with keep bytes around a cut middle */
    PR_SRC_OMITTED = 2, /* left out: the task asks for a new kernel */
} pr_src_mode;

/* The source text a mode shows: the compacted view whole, or its head and
 * tail on line boundaries around a marker, keep bytes of it in all; NULL
 * when left out (or out of memory). */
static char *pr_source_text(const char *src, pr_src_mode mode, size_t keep)
{
    size_t len = strlen(src);
    if (mode == PR_SRC_OMITTED)
        return NULL;
    if (mode != PR_SRC_CUT || keep >= len)
        return kv_strdup(src);
    size_t head = pr_cut(src, len, keep * 2 / 3);
    while (head > 0 && src[head - 1] != '\n')
        head--;
    size_t tail = len - (keep - keep * 2 / 3);
    while (tail < len && src[tail - 1] != '\n')
        tail++;
    if (tail < head)
        tail = head;
    kv_buf tmp;
    kv_buf_init(&tmp);
    kv_buf_append(&tmp, src, head);
    kv_buf_printf(&tmp, "// [... %zu bytes of the parent's source cut here to fit the prompt ...]\n", tail - head);
    kv_buf_append(&tmp, src + tail, len - tail);
    if (!tmp.data)
        kv_buf_puts(&tmp, "");
    return kv_buf_take(&tmp);
}

/* The parent's compacted source as pr_source_text shows it. */
static void pr_source(kv_buf *b, const char *src, pr_src_mode mode, size_t keep)
{
    kv_buf_puts(b, "\n## The parent's source\n\n");
    if (mode == PR_SRC_OMITTED) {
        kv_buf_printf(b, "(left out: its %zu bytes, even compacted, do not fit this prompt's budget, "
                      "--llm-prompt-tokens)\n", strlen(src));
        return;
    }
    kv_buf_puts(b, "(compacted for the parent's params: comments, blank lines and the #if and if constexpr "
                   "branches its params rule out are left out; each shared header is shown as its API, and kevo "
                   "puts the whole header in front of your source. SEARCH text must come from the code shown.)\n\n");
    char *text = pr_source_text(src, mode, keep);
    pr_block(b, "cuda", text ? text : "", text ? strlen(text) : 0);
    free(text);
}

/* Siblings: the latest `show` of them (0: all that fit the fixed maximum). */
static void pr_siblings(const kevo_prompt_in *in, kv_buf *b, int show)
{
    int n = in->nsiblings > 0 && in->siblings ? in->nsiblings : 0;
    kv_buf_puts(b, "\n# Siblings: earlier rewrites of this parent\n\n");
    if (n == 0) {
        kv_buf_puts(b, "None yet.\n");
        return;
    }
    int first = n > show ? n - show : 0;
    if (first > 0)
        kv_buf_printf(b, "[%d older sibling%s left out to fit the prompt]\n", first, first == 1 ? "" : "s");
    for (int i = first; i < n; i++) {
        const kevo_llm_node *s = &in->siblings[i];
        kv_buf_printf(b, "%d. ", i + 1);
        pr_line(b, s->generator, 40);
        kv_buf_puts(b, " (");
        pr_line(b, s->family, 64);
        if (s->params && *s->params) {
            kv_buf_puts(b, ", ");
            pr_line(b, s->params, KEVO_PROMPT_LINE_MAX);
        }
        kv_buf_puts(b, "): ");
        if (pr_failed(s)) {
            kv_buf_puts(b, "failed, ");
            pr_line(b, s->fail, 40);
            if (s->fail_msg && *s->fail_msg) {
                kv_buf_puts(b, ": ");
                pr_line(b, s->fail_msg, 160);
            }
        } else {
            pr_line(b, s->status, 40);
            if (isfinite(s->median_ms))
                kv_buf_printf(b, ", %.4g ms", s->median_ms);
            if (isfinite(s->speedup))
                kv_buf_printf(b, ", speedup %.3fx", s->speedup);
            if (isfinite(s->roofline))
                kv_buf_printf(b, ", %.2f of the roofline", s->roofline);
            if (s->spill_bytes > 0)
                kv_buf_printf(b, ", %d bytes spilled", s->spill_bytes);
        }
        if (s->summary && *s->summary) {
            kv_buf_puts(b, "; it changed: ");
            pr_line(b, s->summary, KEVO_PROMPT_LINE_MAX);
        }
        kv_buf_puts(b, "\n");
    }
}

static void pr_knowledge(const kevo_knowledge_hit *h, int nh, int show, const char *query, kv_buf *b)
{
    kv_buf_puts(b, "\n# Knowledge\n\n");
    if (nh == 0) {
        kv_buf_puts(b, "No notes matched this parent.\n");
        return;
    }
    if (show == 0) {
        kv_buf_printf(b, "[%d retrieved note%s left out to fit the prompt]\n", nh, nh == 1 ? "" : "s");
        return;
    }
    kv_buf_puts(b, "Notes retrieved for this parent (query: ");
    pr_line(b, query, 300);
    kv_buf_puts(b, "):\n");
    for (int i = 0; i < nh && i < show; i++) {
        kv_buf_puts(b, "\n## ");
        pr_line(b, h[i].title, 200);
        kv_buf_puts(b, " (");
        pr_line(b, h[i].file, 80);
        kv_buf_puts(b, ")\n\n");
        pr_put_clean(b, h[i].body, strlen(h[i].body), true);
        kv_buf_puts(b, "\n");
    }
    if (show < nh)
        kv_buf_printf(b, "\n[%d lower-ranked note%s left out to fit the prompt]\n", nh - show,
                      nh - show == 1 ? "" : "s");
}

static void pr_task(const kevo_prompt_in *in, int bound, pr_src_mode mode, kv_buf *b)
{
    const kevo_llm_node *p = in->parent;
    kv_buf_puts(b, "\n# Task\n\n");
    if (pr_failed(p)) {
        kv_buf_puts(b, "The parent fails (");
        pr_line(b, p->fail, 40);
        kv_buf_puts(b, "). Find the cause from the message above and fix it; keep what the parent does well. ");
        if (pr_has(p->fail, "timeout"))
            kv_buf_puts(b, "A timeout is almost always a deadlock: check barrier counts, expect_tx bytes and phases. ");
        if (pr_has(p->fail, "rejected") || pr_has(p->fail, "input_modified"))
            kv_buf_puts(b, "The static check or the input checksums refused it: follow the rules of the system "
                           "prompt. ");
        if (pr_has(p->fail, "parse"))
            kv_buf_puts(b, "The reply could not be read: follow the reply format exactly. ");
    } else if (isfinite(p->median_ms)) {
        kv_buf_printf(b, "Make the kernel faster while keeping it correct. The parent takes %.4g ms", p->median_ms);
        if (isfinite(p->speedup))
            kv_buf_printf(b, " (%.3fx the baseline)", p->speedup);
        if (isfinite(in->best_speedup))
            kv_buf_printf(b, "; the best kernel of this run so far reaches %.3fx", in->best_speedup);
        kv_buf_puts(b, ". ");
        if (bound == 1)
            kv_buf_puts(b, "The op is memory-bound here: cut bytes and passes, widen accesses, keep more in flight. ");
        else if (bound == 2)
            kv_buf_puts(b, "The op is compute-bound here: keep the tensor cores busy. ");
        if (isfinite(p->roofline))
            kv_buf_printf(b, "The parent reaches %.0f%% of the roofline. ", p->roofline * 100);
        if (p->spill_bytes > 0)
            kv_buf_puts(b, "It spills registers: remove the spills first. ");
    } else {
        kv_buf_puts(b, "The parent has not been measured yet. Improve it from its source and the notes. ");
    }
    kv_buf_puts(b, "Do not repeat what the siblings tried and failed at.\n\n");
    if (mode == PR_SRC_OMITTED)
        kv_buf_puts(b, "The parent's source is not shown: write a new kernel for this op from scratch, correct for "
                       "every shape, with the parent's plan and numbers as a guide. Reply in this order: one "
                       "```cuda block with the whole device source (start your reply with it), then one ```json "
                       "block with its launch plan, then one sentence saying what the kernel does.\n");
    else if (in->edit_lines)
        kv_buf_puts(b, "Reply with SEARCH/REPLACE edits only (your reply is held to this form): one or two "
                       "blocks, each with exactly one line copied from the parent's source shown above as its "
                       "SEARCH text and the lines that take its place as its REPLACE text, closing every block "
                       "they open; then one sentence saying what you changed.\n");
    else if (mode == PR_SRC_CUT)
        kv_buf_puts(b, "The parent's source is shown with its middle cut. Reply with either SEARCH/REPLACE edits "
                       "against the parts shown (and optionally a ```json plan), or one ```cuda block with a whole "
                       "new kernel written from scratch and one ```json plan block with its launches (a new source "
                       "cannot keep the cut part); then one sentence saying what you changed.\n");
    else
        kv_buf_puts(b, "Reply with either one ```cuda block with the whole new source (start your reply with it; "
                       "optionally one ```json plan block after it), or SEARCH/REPLACE edits against the parent's "
                       "source; then one sentence saying what you changed.\n");
}

/* "# Operator": the op's description and the run; returns pr_bound's verdict. */
static int pr_head(const kevo_prompt_in *in, const char *opdesc, kv_buf *head)
{
    kv_buf_puts(head, "# Operator\n\n");
    pr_put_clean(head, opdesc, strlen(opdesc), true);
    kv_buf_puts(head, "\n## This run\n\n- shape: ");
    pr_line(head, in->shape, 300);
    kv_buf_puts(head, "\n- dtype: ");
    pr_line(head, in->dtype, 20);
    kv_buf_puts(head, "\n- arch: ");
    pr_line(head, in->arch, 20);
    kv_buf_puts(head, "\n\n");
    return pr_bound(in, head);
}

kevo_status kevo_prompt_build(const char *prompts_dir, kevo_knowledge *kb, const kevo_prompt_in *in, kv_buf *system,
                              kv_buf *user, char *query_used, size_t qn, kevo_err *err)
{
    if (query_used && qn)
        query_used[0] = '\0';
    if (in && in->source_shown)
        *in->source_shown = NULL;
    if (in && in->source_base)
        *in->source_base = NULL;
    if (!prompts_dir || !in || !in->parent || !system || !user)
        return kevo_err_set(err, KEVO_ERR_ARG, "prompt without a prompts folder, a parent or output buffers");
    if (!pr_ident(in->op))
        return kevo_err_set(err, KEVO_ERR_ARG, "bad op name for a prompt");
    char *sys = NULL, *opdesc = NULL;
    char rel[128];
    snprintf(rel, sizeof rel, "ops/%s.md", in->op);
    kevo_status st = pr_read(prompts_dir, "system.md", &sys, err);
    if (!st)
        st = pr_read(prompts_dir, rel, &opdesc, err);
    if (st) {
        free(sys);
        return st;
    }

    /* the fixed parts */
    kv_buf head, abi, parent, plan, plan_out, query;
    kv_buf_init(&head);
    kv_buf_init(&abi);
    kv_buf_init(&parent);
    kv_buf_init(&plan);
    kv_buf_init(&plan_out);
    kv_buf_init(&query);
    int bound = pr_head(in, opdesc, &head);
    kv_buf_puts(&abi, "\n# ABI header (kevo puts it in front of your source)\n\n");
    const char *ah = in->abi_header ? in->abi_header : "";
    pr_block(&abi, "c", ah, pr_cut(ah, strlen(ah), 64 * 1024));
    pr_parent(in, &parent);
    pr_plan(in, &plan, false);    /* shown with the source */
    pr_plan(in, &plan_out, true); /* left out with it */

    /* knowledge */
    pr_query(in, bound, &query);
    char fts[PR_MAX_TERMS * (PR_MAX_TERM + 8) + 8];
    kevo_knowledge_fts_query(query.data ? query.data : "", fts, sizeof fts);
    if (query_used && qn)
        snprintf(query_used, qn, "%s", fts);
    kevo_knowledge_hit *hits = NULL;
    int nhits = 0;
    if (kb)
        st = kevo_knowledge_query(kb, query.data ? query.data : "", KEVO_PROMPT_KNOWLEDGE_K, &hits, &nhits, err);

    /* the cap on the user message: the token budget less the system message, and --llm-prompt-chars */
    size_t budget = in->max_tokens ? in->max_tokens : KEVO_PROMPT_TOKENS_DEFAULT;
    size_t sys_tokens = kevo_prompt_tokens(strlen(sys));
    size_t cap = budget > sys_tokens ? (budget - sys_tokens) * KEVO_PROMPT_BYTES_PER_TOKEN : 0;
    if (in->max_chars > 0 && in->max_chars < cap)
        cap = in->max_chars;
    /* the source, compacted for the parent's params */
    char *view = NULL, *base = NULL;
    if (!st)
        st = kevo_prompt_compact(in->parent->source ? in->parent->source : "", in->parent->params, &view, &base,
                                 err);
    /* fit, by priority: never the operator, ABI, parent, knowledge or task; cut the run's best kernels, then
     * the siblings (oldest first), then the source's middle, then the source */
    int nsib = in->siblings && in->nsiblings > 0 ? in->nsiblings : 0;
    int show_sib = nsib < KEVO_PROMPT_SIBLINGS_MAX ? nsib : KEVO_PROMPT_SIBLINGS_MAX;
    int show_top = in->ntops < KEVO_PROMPT_TOPS_MAX ? (in->ntops > 0 ? in->ntops : 0) : KEVO_PROMPT_TOPS_MAX;
    pr_src_mode mode = PR_SRC_COMPACT;
    size_t keep = 0;
    kv_buf out, know, peers;
    kv_buf_init(&out);
    kv_buf_init(&know);
    kv_buf_init(&peers);
    if (kb)
        pr_knowledge(hits, nhits, nhits, fts, &know);
    pr_peers(in, &peers);
    bool fits = false;
    for (int attempt = 0; !st && attempt < 200 && !fits; attempt++) {
        kv_buf src, sib, tops, task;
        kv_buf_init(&src);
        kv_buf_init(&sib);
        kv_buf_init(&tops);
        kv_buf_init(&task);
        const kv_buf *pl = mode == PR_SRC_OMITTED ? &plan_out : &plan;
        kv_buf_append(&src, pl->data ? pl->data : "", pl->len);
        pr_source(&src, view, mode, keep);
        pr_tops(in, show_top, &tops);
        pr_siblings(in, &sib, show_sib);
        pr_task(in, bound, mode, &task);
        size_t fixed = head.len + abi.len + parent.len + peers.len + know.len + task.len;
        size_t total = fixed + src.len + sib.len + tops.len;
        if (total <= cap) {
            fits = true;
            if (in->source_shown)
                *in->source_shown = pr_source_text(view, mode, keep);
            if (in->source_base && mode != PR_SRC_OMITTED) {
                *in->source_base = base;
                base = NULL;
            }
            kv_buf *parts[] = {&head, &abi, &parent, &src, &peers, &tops, &sib, &know, &task};
            for (size_t i = 0; i < KV_ARRAY_LEN(parts) && !st; i++)
                if (parts[i]->len)
                    st = kv_buf_append(&out, parts[i]->data, parts[i]->len);
            if (st)
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building a prompt");
        } else if (show_top > 0) {
            show_top--;
        } else if (show_sib > 0) {
            show_sib = show_sib > 4 ? show_sib / 2 : show_sib - 1;
        } else if (mode != PR_SRC_OMITTED) {
            /* cut the compacted source's middle; below 40% of it, leave it out */
            size_t over = total - cap, len = strlen(view);
            size_t cur = mode == PR_SRC_CUT ? keep : len;
            size_t marker = 256;
            if (cur <= over + marker + 512 || cur - over - marker < len * 2 / 5) {
                mode = PR_SRC_OMITTED;
            } else {
                keep = cur - over - marker;
                mode = PR_SRC_CUT;
            }
        } else {
            st = kevo_err_set(err, KEVO_ERR_ARG,
                              "a prompt budget of %zu tokens (%zu bytes for the user message) is too small: the "
                              "parts never cut (operator, ABI header, parent, knowledge, task) take %zu bytes",
                              budget, cap, fixed + src.len);
        }
        kv_buf_release(&src);
        kv_buf_release(&sib);
        kv_buf_release(&tops);
        kv_buf_release(&task);
    }
    kv_buf_release(&know);
    kv_buf_release(&peers);
    if (!st && !fits)
        st = kevo_err_set(err, KEVO_ERR_ARG, "unable to fit the prompt into %zu bytes", cap);
    if (!st) {
        size_t sys_len = strlen(sys);
        st = pr_put_clean(system, sys, sys_len, true);
        if (!st)
            st = kv_buf_append(user, out.data ? out.data : "", out.len);
        if (st)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building a prompt");
    }
    kv_buf_release(&out);
    free(view);
    free(base);
    kevo_knowledge_hits_free(hits, nhits);
    kv_buf_release(&head);
    kv_buf_release(&abi);
    kv_buf_release(&parent);
    kv_buf_release(&plan);
    kv_buf_release(&plan_out);
    kv_buf_release(&query);
    free(sys);
    free(opdesc);
    return st;
}
