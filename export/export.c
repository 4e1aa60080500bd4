/* export.c — write a DB's winners as a C library (see export.h).
 *
 * For each run of the op and archs: its fastest `top` distinct verified
 * configurations (the winner of its paired re-timing first), and its
 * fastest one that reads the natural (unpadded) W layout, become kernels of
 * the library: the cubin from the DB, the launch plan and constraints of the
 * family's space file translated to C (so the library plans any shape
 * without kevo), and the run's shape as a tuned entry.  A run whose best
 * does not beat its best in-run peer gives no kernel and a tuned entry that
 * returns UNSUPPORTED; a distribution run gives, per shape, the candidate
 * fastest there.  Output is a pure function of the DB and the options. */
#define _POSIX_C_SOURCE 200809L
#include "export/export.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/store.h"
#include "kernels/op.h"
#include "templates/space.h"
#include "util/util.h"

void kevo_export_opts_init(kevo_export_opts *o)
{
    memset(o, 0, sizeof *o);
    o->op = "ikbo_lce";
    o->name = "kevo_tuned";
    o->top = 3;
}

/* One kernel of the library. */
typedef struct xp_kernel {
    const kevo_space *sp;
    kevo_config cfg;
    char *params;
    int dtype;
    char arch[16];
    int sm;
    void *cubin;
    size_t cubin_size;
    double ms, speedup;
    int64_t cand_id, run_id;
} xp_kernel;

/* One tuned shape: a run (and for a distribution run one of its shapes)
 * and the kernel of its best candidate there; kernel -1 when no candidate
 * beat the best in-run peer there, so the library returns UNSUPPORTED. */
typedef struct xp_tuned {
    kevo_run_row run;
    char shape_txt[256];
    kevo_syms shape;
    int dtype, sm, kernel;
    double ms, speedup, vs_peer;
} xp_tuned;

typedef struct xp_state {
    const kevo_export_opts *o;
    const kevo_op *op;
    kevo_db *db;
    kevo_space **spaces;
    int nspaces;
    xp_kernel *k;
    int nk, kcap;
    xp_tuned *t;
    int nt, tcap;
} xp_state;

/* "sm_90a" -> 90 */
static int xp_sm_of(const char *arch)
{
    return (int)strtol(arch + 3, NULL, 10);
}

/* Whether arch is one of the comma-separated list (NULL: all), however long. */
static bool xp_arch_wanted(const char *list, const char *arch)
{
    if (!list)
        return true;
    size_t n = strlen(arch);
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, arch, n) == 0)
            return true;
        p += len;
        if (!*p)
            return false;
    }
}

/* Candidates of a run best first: speedup, then time, then id (qsort over
 * pointers into the run's rows). */
static int xp_cmp_cand(const void *a, const void *b)
{
    const kevo_cand_row *x = *(const kevo_cand_row *const *)a, *y = *(const kevo_cand_row *const *)b;
    if (x->speedup != y->speedup)
        return x->speedup > y->speedup ? -1 : 1;
    if (x->median_ms != y->median_ms)
        return x->median_ms < y->median_ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Add (or find) the kernel for a candidate; its index in *idx. */
static kevo_status xp_add_kernel(xp_state *x, const kevo_run_row *run, const kevo_cand_row *c, int dtype, int *idx,
                                 kevo_err *err)
{
    const kevo_space *sp = kevo_spaces_find(x->spaces, x->nspaces, c->family);
    if (!sp)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld is of family '%s', which is not loaded",
                            (long long)c->id, c->family);
    for (int i = 0; i < x->nk; i++) {
        if (x->k[i].sp == sp && strcmp(x->k[i].params, c->params) == 0 && x->k[i].dtype == dtype &&
            strcmp(x->k[i].arch, run->arch) == 0) {
            *idx = i;
            return KEVO_OK;
        }
    }
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    kevo_status st = c->binary_key[0] ? kevo_db_binary_get(x->db, c->binary_key, &b, err) : KEVO_ERR_NOT_FOUND;
    if (st || !b.cubin || b.cubin_size == 0) {
        kevo_binary_row_release(&b);
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld has no cubin in '%s'", (long long)c->id,
                            x->o->db_path);
    }
    if (x->nk == x->kcap) {
        int cap = x->kcap ? 2 * x->kcap : 16;
        xp_kernel *k = realloc(x->k, (size_t)cap * sizeof *k);
        if (!k) {
            kevo_binary_row_release(&b);
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        }
        x->k = k;
        x->kcap = cap;
    }
    xp_kernel *k = &x->k[x->nk];
    memset(k, 0, sizeof *k);
    k->sp = sp;
    if ((st = kevo_config_parse_json(sp, c->params, &k->cfg, err))) {
        kevo_binary_row_release(&b);
        return st;
    }
    k->params = kv_strdup(c->params);
    k->dtype = dtype;
    snprintf(k->arch, sizeof k->arch, "%s", run->arch);
    k->sm = xp_sm_of(run->arch);
    k->cubin = b.cubin;
    k->cubin_size = b.cubin_size;
    b.cubin = NULL;
    kevo_binary_row_release(&b);
    k->ms = c->median_ms;
    k->speedup = c->speedup;
    k->cand_id = c->id;
    k->run_id = run->id;
    *idx = x->nk++;
    return KEVO_OK;
}

/* Whether a candidate's plan reads W padded (from the stored plan). */
static bool xp_pads(const kevo_cand_row *c)
{
    kevo_plan p;
    return c->plan && kevo_plan_parse_json(c->plan, &p, NULL) == KEVO_OK && p.pad_k;
}

/* Append a tuned entry (kernel -1: UNSUPPORTED there). */
static kevo_status xp_add_tuned(xp_state *x, const kevo_run_row *run, const char *shape_txt, int dtype, int kernel,
                                double ms, double speedup, double vs_peer, kevo_err *err)
{
    if (x->nt == x->tcap) {
        int cap = x->tcap ? 2 * x->tcap : 8;
        xp_tuned *t = realloc(x->t, (size_t)cap * sizeof *t);
        if (!t)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        x->t = t;
        x->tcap = cap;
    }
    xp_tuned *t = &x->t[x->nt];
    t->run = *run;
    snprintf(t->shape_txt, sizeof t->shape_txt, "%s", shape_txt);
    t->dtype = dtype;
    t->sm = xp_sm_of(run->arch);
    t->kernel = kernel;
    t->ms = ms;
    t->speedup = speedup;
    t->vs_peer = vs_peer;
    kevo_status st = x->op->parse_shape(shape_txt, &t->shape, err);
    if (!st)
        x->nt++;
    return st;
}

/* A distribution run: for each of its shapes, the verified candidate
 * fastest there becomes that shape's kernel (or its UNSUPPORTED entry when
 * it does not beat that shape's best peer).  ok[0..nok) are the run's
 * verified candidates. */
static kevo_status xp_collect_dist(xp_state *x, const kevo_run_row *run, int dtype, const kevo_cand_row **ok,
                                   int nok, kevo_err *err)
{
    kevo_run_shape *shapes = NULL;
    int ns = 0;
    kevo_status st = kevo_db_run_shapes_get(x->db, run->id, &shapes, &ns, err);
    for (int j = 0; j < ns && !st; j++) {
        const kevo_cand_row *best = NULL;
        kevo_shape_result bres = {0};
        for (int i = 0; i < nok && !st; i++) {
            kevo_shape_result *v = NULL;
            int m = 0;
            if ((st = kevo_db_shape_results_get(x->db, ok[i]->id, &v, &m, err)))
                break;
            for (int k = 0; k < m; k++)
                if (v[k].shape_idx == shapes[j].idx && v[k].median_ms > 0 &&
                    (!best || v[k].median_ms < bres.median_ms)) {
                    best = ok[i];
                    bres = v[k];
                }
            free(v);
        }
        if (st || !best)
            continue;
        int idx = -1;
        if (!(bres.vs_peer < 1.0) && (st = xp_add_kernel(x, run, best, dtype, &idx, err)))
            break;
        st = xp_add_tuned(x, run, shapes[j].shape, dtype, idx, bres.median_ms, bres.speedup, bres.vs_peer, err);
    }
    free(shapes);
    return st;
}

static kevo_status xp_collect(xp_state *x, kevo_err *err)
{
    int64_t *ids = NULL;
    int nids = 0;
    kevo_status st = kevo_db_run_ids(x->db, &ids, &nids, err);
    for (int r = 0; r < nids && !st; r++) {
        kevo_run_row run;
        if ((st = kevo_db_run_get(x->db, ids[r], &run, err)))
            break;
        kevo_dtype dt;
        if (strcmp(run.op, x->o->op) != 0 || run.compile_only || !xp_arch_wanted(x->o->archs, run.arch) ||
            !kevo_dtype_parse(run.dtype, &dt))
            continue;
        kevo_cand_row *rows = NULL;
        int n = 0;
        if ((st = kevo_db_cand_list(x->db, run.id, &rows, &n, err)))
            break;
        const kevo_cand_row **best = malloc((size_t)(n ? n : 1) * sizeof *best);
        int ok = 0;
        if (!best)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; best && i < n; i++)
            if (strcmp(rows[i].status, "ok") == 0 && !isnan(rows[i].speedup))
                best[ok++] = &rows[i];
        if (best)
            qsort(best, (size_t)ok, sizeof *best, xp_cmp_cand);
        /* the winner the run's paired re-timing named leads */
        for (int i = 1; best && i < ok; i++)
            if (best[i]->id == run.best_id) {
                const kevo_cand_row *w = best[i];
                memmove(best + 1, best, (size_t)i * sizeof *best);
                best[0] = w;
            }
        int taken = 0, best_kernel = -1;
        bool natural = false;
        /* a distribution run: a kernel per shape, the fastest there */
        if (!st && run.nshapes > 0) {
            st = xp_collect_dist(x, &run, (int)dt, best, ok, err);
            free(best);
            kevo_cand_rows_free(rows, n);
            continue;
        }
        /* a shape where the best does not beat the best in-run peer: no kernel, an UNSUPPORTED entry */
        bool lost = ok > 0 && best[0]->vs_peer < 1.0;
        for (int i = 0; i < ok && !st && !lost; i++) {
            bool pads = xp_pads(best[i]);
            if (taken >= x->o->top && (natural || pads))
                continue;
            int idx = -1;
            if ((st = xp_add_kernel(x, &run, best[i], (int)dt, &idx, err)))
                break;
            if (best_kernel < 0)
                best_kernel = idx;
            natural |= !pads;
            if (taken < x->o->top)
                taken++;
            if (taken >= x->o->top && natural)
                break;
        }
        if (!st && best_kernel >= 0)
            st = xp_add_tuned(x, &run, run.shape, (int)dt, best_kernel, x->k[best_kernel].ms,
                              x->k[best_kernel].speedup, best[0]->vs_peer, err);
        else if (!st && lost)
            st = xp_add_tuned(x, &run, run.shape, (int)dt, -1, best[0]->median_ms, best[0]->speedup,
                              best[0]->vs_peer, err);
        free(best);
        kevo_cand_rows_free(rows, n);
    }
    free(ids);
    if (!st && x->nk == 0 && x->nt > 0)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND,
                          "no kernel in '%s' beats its in-run peers at any tuned shape: nothing to export",
                          x->o->db_path);
    else if (!st && x->nk == 0)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "'%s' has no verified %s candidate%s%s", x->o->db_path,
                          x->o->op, x->o->archs ? " for " : "", x->o->archs ? x->o->archs : "");
    return st;
}

/* ---- C emission ---- */

typedef struct xp_syms_ctx {
    const kevo_space *sp;
    const kevo_op *op;
} xp_syms_ctx;

static const char *const xp_limits[] = {"sm", "num_sms", "max_smem", "max_regs_per_thread", "dtype_bytes",
                                        "dtype_bf16"};

static kevo_status xp_sym(void *ctx, const char *name, kv_buf *out, kevo_err *err)
{
    const xp_syms_ctx *c = ctx;
    bool known = kevo_space_param_index(c->sp, name) >= 0;
    for (int i = 0; !known && i < c->sp->nlets; i++)
        known = strcmp(c->sp->lets[i].name, name) == 0;
    for (int i = 0; !known && i < c->op->nsymbols; i++)
        known = strcmp(c->op->symbols[i], name) == 0;
    for (size_t i = 0; !known && i < KV_ARRAY_LEN(xp_limits); i++)
        known = strcmp(xp_limits[i], name) == 0;
    if (!known)
        return kevo_err_set(err, KEVO_ERR_ARG, "family '%s' uses unknown symbol '%s'", c->sp->family, name);
    return kv_buf_printf(out, "v_%s", name);
}

static kevo_status xp_emit_expr(kv_buf *b, const kevo_expr *e, xp_syms_ctx *ctx, kevo_err *err)
{
    return kevo_expr_to_c(e, b, xp_sym, ctx, err);
}

/* static int x_kN_plan(const x_syms *s, x_plan *p) { ... } */
static kevo_status xp_emit_plan(kv_buf *b, const xp_state *x, int ki, kevo_err *err)
{
    const xp_kernel *k = &x->k[ki];
    const kevo_space *sp = k->sp;
    xp_syms_ctx ctx = {sp, x->op};
    kevo_status st = KEVO_OK;
    kv_buf_printf(b, "static int x_k%d_plan(const x_syms *s, x_plan *p)\n{\n", ki);
    static const char *const shape_f[] = {"B", "M", "N", "Ku", "Kc", "U", "ratio", "Kup", "Kcp"};
    for (size_t i = 0; i < KV_ARRAY_LEN(shape_f); i++)
        kv_buf_printf(b, "    const int64_t v_%s = s->%s;\n", shape_f[i], shape_f[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(xp_limits); i++)
        kv_buf_printf(b, "    const int64_t v_%s = s->%s;\n", xp_limits[i], xp_limits[i]);
    for (int i = 0; i < sp->nparams; i++)
        kv_buf_printf(b, "    const int64_t v_%s = INT64_C(%lld);\n", sp->params[i].name, (long long)k->cfg.v[i]);
    for (int i = 0; i < sp->nlets && !st; i++) {
        kv_buf_printf(b, "    const int64_t v_%s = ", sp->lets[i].name);
        st = xp_emit_expr(b, sp->lets[i].expr, &ctx, err);
        kv_buf_puts(b, ";\n");
    }
    for (size_t i = 0; i < KV_ARRAY_LEN(shape_f); i++)
        kv_buf_printf(b, "    (void)v_%s;\n", shape_f[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(xp_limits); i++)
        kv_buf_printf(b, "    (void)v_%s;\n", xp_limits[i]);
    for (int i = 0; i < sp->nparams; i++)
        kv_buf_printf(b, "    (void)v_%s;\n", sp->params[i].name);
    for (int i = 0; i < sp->nlets; i++)
        kv_buf_printf(b, "    (void)v_%s;\n", sp->lets[i].name);
    for (int i = 0; i < sp->nrequires && !st; i++) {
        kv_buf_puts(b, "    if (!(");
        st = xp_emit_expr(b, sp->requires[i].expr, &ctx, err);
        kv_buf_puts(b, "))\n        return 0; /* ");
        kv_buf_puts(b, sp->requires[i].why);
        kv_buf_puts(b, " */\n");
    }
    for (int i = 0; i < sp->nconstraints && !st; i++) {
        kv_buf_puts(b, "    if (!(");
        st = xp_emit_expr(b, sp->constraints[i].expr, &ctx, err);
        kv_buf_puts(b, "))\n        return 0; /* ");
        kv_buf_puts(b, sp->constraints[i].why);
        kv_buf_puts(b, " */\n");
    }
    kv_buf_puts(b, "    memset(p, 0, sizeof *p);\n    int64_t g;\n");
    int entry = 0;
    for (int i = 0; i < sp->nlaunches && !st; i++) {
        const kevo_launch_tpl *l = &sp->launches[i];
        int e = 0;
        while (e < i && strcmp(sp->launches[e].entry, l->entry) != 0)
            e++;
        e = e < i ? e : entry++;
        kv_buf_puts(b, "    if (");
        if (l->when)
            st = xp_emit_expr(b, l->when, &ctx, err);
        else
            kv_buf_puts(b, "1");
        kv_buf_printf(b, ") {\n        x_launch *l = &p->l[p->nlaunches++];\n        l->entry = %d;\n", e);
        static const char *const what[3] = {"grid", "block", "smem"};
        for (int w = 0; w < 3 && !st; w++) {
            for (int d = 0; d < (w == 2 ? 1 : 3) && !st; d++) {
                const kevo_expr *ex = w == 0 ? l->grid[d] : w == 1 ? l->block[d] : l->smem;
                long long lo = w == 2 ? 0 : 1;
                long long hi = w == 0 ? (d == 0 ? 2147483647LL : 65535) : w == 1 ? (d == 2 ? 64 : 1024) : 1 << 30;
                kv_buf_puts(b, "        g = ");
                st = xp_emit_expr(b, ex, &ctx, err);
                kv_buf_printf(b, ";\n        if (g < %lld || g > %lld)\n            return 0;\n", lo, hi);
                if (w == 2)
                    kv_buf_puts(b, "        l->smem = (unsigned)g;\n");
                else
                    kv_buf_printf(b, "        l->%s[%d] = (unsigned)g;\n", what[w], d);
            }
        }
        kv_buf_puts(b, "    }\n");
    }
    kv_buf_puts(b, "    g = ");
    if (sp->workspace)
        st = st ? st : xp_emit_expr(b, sp->workspace, &ctx, err);
    else
        kv_buf_puts(b, "0");
    kv_buf_puts(b, ";\n    if (g < 0)\n        return 0;\n    p->workspace = (uint64_t)g;\n    p->pad_k = (");
    if (sp->pad_k)
        st = st ? st : xp_emit_expr(b, sp->pad_k, &ctx, err);
    else
        kv_buf_puts(b, "0");
    kv_buf_puts(b, ") != 0;\n");
    for (int i = 0; i < sp->ntmaps && !st; i++) {
        for (int d = 0; d < 3 && !st; d++) {
            kv_buf_puts(b, "    g = ");
            st = xp_emit_expr(b, sp->tmaps[i].box[d], &ctx, err);
            kv_buf_printf(b, ";\n    if (g < 1 || g > 256)\n        return 0;\n    p->tbox[%d][%d] = (unsigned)g;\n", i,
                          d);
        }
        kv_buf_puts(b, "    g = ");
        if (sp->tmaps[i].swizzle)
            st = st ? st : xp_emit_expr(b, sp->tmaps[i].swizzle, &ctx, err);
        else
            kv_buf_puts(b, "0");
        kv_buf_printf(b, ";\n    if (g != 0 && g != 32 && g != 64 && g != 128)\n        return 0;\n"
                         "    p->tswizzle[%d] = (int)g;\n",
                      i);
    }
    kv_buf_puts(b, "    return 1;\n}\n\n");
    return st;
}

static int xp_tensor_index(const char *t)
{
    static const char *const names[] = {"w_user", "w_cand", "e_user", "e_cand", "out"};
    for (int i = 0; i < 5; i++)
        if (strcmp(names[i], t) == 0)
            return i;
    return -1;
}

static kevo_status xp_emit_kernels(kv_buf *b, const xp_state *x, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0; i < x->nk && !st; i++) {
        const xp_kernel *k = &x->k[i];
        kv_buf_printf(b, "/* kernel %d: %s %s, %s %s; measured %.4f ms (%.2fx) in run %lld, candidate %lld */\n", i,
                      k->sp->family, k->params, k->arch, k->dtype ? "bf16" : "fp16", k->ms, k->speedup,
                      (long long)k->run_id, (long long)k->cand_id);
        kv_buf_printf(b, "static const unsigned char x_k%d_cubin[%zu] = {", i, k->cubin_size);
        const unsigned char *c = k->cubin;
        for (size_t j = 0; j < k->cubin_size; j++)
            kv_buf_printf(b, "%s0x%02x,", j % 16 ? "" : "\n    ", c[j]);
        kv_buf_puts(b, "\n};\n\n");
        st = xp_emit_plan(b, x, i, err);
    }
    kv_buf_printf(b, "#define X_NKERNELS %d\nstatic x_kernel x_kernels[X_NKERNELS] = {\n", x->nk);
    for (int i = 0; i < x->nk && !st; i++) {
        const xp_kernel *k = &x->k[i];
        const kevo_space *sp = k->sp;
        kv_buf_printf(b, "    {\"%s\", \"", sp->family);
        for (const char *p = k->params; *p; p++)
            kv_buf_printf(b, *p == '"' ? "\\\"" : "%c", *p);
        kv_buf_printf(b, "\", %d, %d, x_k%d_cubin, ", k->dtype, k->sm, i);
        int ne = 0;
        const char *entries[KEVO_MAX_LAUNCHES];
        for (int l = 0; l < sp->nlaunches; l++) {
            bool seen = false;
            for (int e = 0; e < ne; e++)
                seen |= strcmp(entries[e], sp->launches[l].entry) == 0;
            if (!seen)
                entries[ne++] = sp->launches[l].entry;
        }
        kv_buf_printf(b, "%d, {", ne);
        for (int e = 0; e < ne; e++)
            kv_buf_printf(b, "%s\"%s\"", e ? ", " : "", entries[e]);
        kv_buf_printf(b, "}, x_k%d_plan, %d, {", i, sp->ntmaps);
        for (int t = 0; t < sp->ntmaps; t++) {
            int ti = xp_tensor_index(sp->tmaps[t].tensor);
            if (ti < 0)
                st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "family '%s' maps unknown tensor '%s'", sp->family,
                                  sp->tmaps[t].tensor);
            kv_buf_printf(b, "%s{%d}", t ? ", " : "", ti);
        }
        kv_buf_puts(b, "}, 0, NULL, {0}, {0}},\n");
    }
    kv_buf_puts(b, "};\n\n");
    kv_buf_printf(b, "#define X_NTUNED %d\nstatic const x_tuned x_tuned_shapes[X_NTUNED > 0 ? X_NTUNED : 1] = {\n",
                  x->nt);
    for (int i = 0; i < x->nt; i++) {
        const xp_tuned *t = &x->t[i];
        int64_t v[6];
        const char *f[6] = {"B", "M", "N", "Ku", "Kc", "U"};
        for (int j = 0; j < 6; j++)
            kevo_syms_get(&t->shape, f[j], &v[j]);
        kv_buf_printf(b, "    {%lld, %lld, %lld, %lld, %lld, %lld, %d, %d, %d}, /* run %lld: %.4f ms%s */\n",
                      (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
                      (long long)v[5], t->dtype, t->sm, t->kernel, (long long)t->run.id, t->ms,
                      t->kernel < 0 ? ", beats no in-run peer: UNSUPPORTED" : "");
    }
    kv_buf_puts(b, "};\n");
    return st;
}

/* Template text with @NAME@, @NAME_UPPER@ and the given extra keys replaced. */
static kevo_status xp_fill(const char *path, const char *name, const char *const *keys, const char *const *vals,
                           int nkeys, kv_buf *out, kevo_err *err)
{
    char *text = NULL;
    kevo_status st = kv_read_file(path, &text, NULL, err);
    if (st)
        return st;
    char *upper = kv_strdup(name);
    if (!upper) {
        free(text);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    for (char *p = upper; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    for (const char *p = text; *p;) {
        const char *at = strchr(p, '@');
        if (!at) {
            kv_buf_puts(out, p);
            break;
        }
        kv_buf_append(out, p, (size_t)(at - p));
        const char *rep = NULL;
        size_t klen = 0;
        if (strncmp(at, "@NAME_UPPER@", 12) == 0) {
            rep = upper;
            klen = 12;
        } else if (strncmp(at, "@NAME@", 6) == 0) {
            rep = name;
            klen = 6;
        }
        for (int i = 0; !rep && i < nkeys; i++) {
            size_t l = strlen(keys[i]);
            if (strncmp(at, keys[i], l) == 0) {
                rep = vals[i];
                klen = l;
            }
        }
        if (rep) {
            kv_buf_puts(out, rep);
            p = at + klen;
        } else {
            kv_buf_append(out, at, 1); /* another tool's @VAR@ (CMake) */
            p = at + 1;
        }
    }
    free(text);
    free(upper);
    return out->data ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
}

static kevo_status xp_mkdir(const char *path, kevo_err *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to create '%s': %s", path, strerror(errno));
    return KEVO_OK;
}

static kevo_status xp_readme(const xp_state *x, kv_buf *b)
{
    const char *n = x->o->name;
    kv_buf_printf(b,
                  "# %s\n\nIKBO linear-compression kernels (`ikbo_lce`) tuned by kevo. Generated by `kevo export`; do "
                  "not edit.\nThe library links only the CUDA driver API.\n\n"
                  "```\ncmake -S . -B build && cmake --build build && cmake --install build --prefix PREFIX\n```\n\n"
                  "Then `find_package(%s)` and link `%s::%s` (or `%s::%s_static`), or use pkg-config `%s`.\n"
                  "API: `include/%s.h`.\n\n## Tuned shapes\n\n"
                  "| shape | dtype | arch | device | kernel | median ms | speedup over the stage-0 baseline | "
                  "vs the best in-run peer |\n|---|---|---|---|---|---|---|---|\n",
                  n, n, n, n, n, n, n, n);
    for (int i = 0; i < x->nt; i++) {
        const xp_tuned *t = &x->t[i];
        char vs[32] = "-";
        if (!isnan(t->vs_peer))
            snprintf(vs, sizeof vs, "%.2fx", t->vs_peer);
        if (t->kernel < 0) {
            kv_buf_printf(b, "| %s | %s | %s | %s | none: UNSUPPORTED (no kernel beat the in-run peers) | %.4f | "
                             "%.2fx | %s |\n",
                          t->shape_txt, t->run.dtype, t->run.arch, t->run.device[0] ? t->run.device : "-", t->ms,
                          t->speedup, vs);
            continue;
        }
        const xp_kernel *k = &x->k[t->kernel];
        kv_buf_printf(b, "| %s | %s | %s | %s | %s `%s` | %.4f | %.2fx | %s |\n", t->shape_txt, t->run.dtype,
                      t->run.arch, t->run.device[0] ? t->run.device : "-", k->sp->family, k->params, t->ms,
                      t->speedup, vs);
    }
    kv_buf_puts(b, "\nA shape marked UNSUPPORTED returns `UNSUPPORTED`: there kevo's best kernel was slower than what "
                   "cuBLAS gives (the stage-0 batched GEMM or the decomposed form), so use that. Shapes not in this "
                   "table run the fastest kernel whose constraints accept them (or return UNSUPPORTED).\n\n"
                   "## Kernels\n\n| # | family | params | arch | dtype | pads W |\n"
                   "|---|---|---|---|---|---|\n");
    for (int i = 0; i < x->nk; i++) {
        const xp_kernel *k = &x->k[i];
        kevo_plan p;
        kevo_syms sh;
        kevo_limits lim;
        bool pads = false;
        if (x->op->parse_shape(NULL, &sh, NULL) == KEVO_OK && kevo_limits_for_arch(k->arch, &lim, NULL) == KEVO_OK &&
            kevo_space_plan(k->sp, &sh, &lim, (kevo_dtype)k->dtype, &k->cfg, &p, NULL) == KEVO_OK)
            pads = p.pad_k != 0;
        kv_buf_printf(b, "| %d | %s | `%s` | %s | %s | %s |\n", i, k->sp->family, k->params, k->arch,
                      k->dtype ? "bf16" : "fp16", pads ? "yes (rows of 8)" : "no");
    }
    return KEVO_OK;
}

static bool xp_is_ident(const char *s)
{
    if (!s || !*s || strlen(s) > 64 || !(islower((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

kevo_status kevo_export(const kevo_export_opts *o, int *nkernels, int *ntuned, kevo_err *err)
{
    if (!xp_is_ident(o->name))
        return kevo_err_set(err, KEVO_ERR_ARG, "--name '%s' must be a lower-case C identifier of at most 64 characters",
                            o->name ? o->name : "");
    if (o->top < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "--top must be at least 1");
    xp_state x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.op = kevo_op_find(o->op);
    if (!x.op)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%s'", o->op);
    char path[PATH_MAX], tdir[PATH_MAX - 64];
    snprintf(path, sizeof path, "%s/templates", o->data_dir);
    kevo_status st = kevo_spaces_load_dirs(path, o->extra_templates, o->op, &x.spaces, &x.nspaces, err);
    if (!st)
        st = kevo_db_open(o->db_path, false, &x.db, err);
    if (!st)
        st = xp_collect(&x, err);
    snprintf(tdir, sizeof tdir, "%s/export/template", o->data_dir);
    kv_buf abi, kernels, hdr, src, cm, cfg, pc, readme;
    kv_buf_init(&abi);
    kv_buf_init(&kernels);
    kv_buf_init(&hdr);
    kv_buf_init(&src);
    kv_buf_init(&cm);
    kv_buf_init(&cfg);
    kv_buf_init(&pc);
    kv_buf_init(&readme);
    if (!st) {
        char *a = NULL;
        snprintf(path, sizeof path, "%s/kernels/%s", o->data_dir, x.op->abi_header);
        st = kv_read_file(path, &a, NULL, err);
        if (!st)
            kv_buf_puts(&abi, a);
        free(a);
    }
    if (!st)
        st = xp_emit_kernels(&kernels, &x, err);
    const char *keys[] = {"@ABI@", "@KERNELS@"};
    const char *vals[] = {abi.data ? abi.data : "", kernels.data ? kernels.data : ""};
    if (!st) {
        snprintf(path, sizeof path, "%s/lib.h.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &hdr, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/lib.c.in", tdir);
        st = xp_fill(path, o->name, keys, vals, 2, &src, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/CMakeLists.txt.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &cm, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/Config.cmake.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &cfg, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/pc.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &pc, err);
    }
    if (!st)
        st = xp_readme(&x, &readme);
    struct {
        const char *dir, *file;
        kv_buf *b;
    } files[] = {
        {"include", ".h", &hdr}, {"src", ".c", &src}, {"", "CMakeLists.txt", &cm},
        {"cmake", "Config.cmake.in", &cfg}, {"", ".pc.in", &pc}, {"", "README.md", &readme},
    };
    if (!st)
        st = xp_mkdir(o->out_dir, err);
    for (size_t i = 0; i < KV_ARRAY_LEN(files) && !st; i++) {
        char d[PATH_MAX - 256];
        int w = snprintf(d, sizeof d, "%s%s%s", o->out_dir, files[i].dir[0] ? "/" : "", files[i].dir);
        /* .h, .c, .pc.in, Config.cmake.in take the library's name */
        bool named = files[i].file[0] == '.' || strcmp(files[i].file, "Config.cmake.in") == 0;
        int w2 = w < 0 || (size_t)w >= sizeof d ? -1
                                                 : snprintf(path, sizeof path, "%s/%s%s", d, named ? o->name : "",
                                                            files[i].file);
        if (w2 < 0 || (size_t)w2 >= sizeof path) { /* never write to a cut path */
            st = kevo_err_set(err, KEVO_ERR_ARG, "--out: the path of '%.100s...' is too long", o->out_dir);
            break;
        }
        if (files[i].dir[0] && (st = xp_mkdir(d, err)))
            break;
        st = kv_write_file(path, files[i].b->data ? files[i].b->data : "", files[i].b->len, err);
    }
    if (!st) {
        *nkernels = x.nk;
        *ntuned = x.nt;
    }
    kv_buf *all[] = {&abi, &kernels, &hdr, &src, &cm, &cfg, &pc, &readme};
    for (size_t i = 0; i < KV_ARRAY_LEN(all); i++)
        kv_buf_release(all[i]);
    for (int i = 0; i < x.nk; i++) {
        free(x.k[i].params);
        free(x.k[i].cubin);
    }
    free(x.k);
    free(x.t);
    kevo_spaces_free(x.spaces, x.nspaces);
    kevo_db_close(x.db);
    return st;
}
