/* export.c — write a DB's winners as a C library (see export.h).
 *
 * For each run of the op and archs: its fastest `top` distinct verified
 * configurations of the families `--family` matches (all without it; the
 * winner of its paired re-timing first), and its fastest one that reads the
 * natural layout (no padded copy: pad_k off),
 * become kernels of the library: the cubin from the DB, the launch plan and constraints of the
 * family's space file translated to C (so the library plans any shape
 * without kevo), and the run's shape as a tuned entry.  A run whose best
 * does not beat its best in-run peer gives no kernel and a tuned entry that
 * runs that peer's cuBLAS form, or returns UNSUPPORTED where the library
 * cannot run it (vendor.c); a distribution run gives, per shape, the candidate
 * fastest there; several runs at one shape give the fastest measured.
 * Output is a pure function of the DB and the options.  What is the op's
 * (its API, argument checks, dispatch keys, tensor maps, README wording)
 * comes from its export description (kevo_op_export, kernels/<op>/export/);
 * export/template/ holds the library's op-independent runtime and package.
 *
 * The DB is untrusted: stored params are checked against the family's
 * domains (kevo_config_parse_stored) and only their canonical text, names
 * the space files define and escaped text reach the output (emit.c).  The
 * folder is the user's: export writes into a new or empty one, an earlier
 * export of the same library (kevo-export.json, written last, lists its
 * files and their SHA-256), or with --force beside other files, and never
 * replaces a file it did not write (out.c). */
#define _POSIX_C_SOURCE 200809L
#include "export/export.h"

#include <ctype.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/store.h"
#include "export/emit.h"
#include "export/export_int.h"
#include "export/out.h"
#include "search/gen.h"
#include "core/op.h"
#include "templates/space.h"
#include "util/util.h"

#define XP_FAMILY_PATTERN_MAX 64 /* one --family pattern, in characters */
#define XP_NFILES 14 /* the files export may write, the manifest included */

void kevo_export_opts_init(kevo_export_opts *o)
{
    memset(o, 0, sizeof *o);
    o->op = kevo_op_list(NULL)[0]->name;
    o->name = "kevo_tuned";
    o->top = 3;
}

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
    size_t n = strlen(arch), len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);)
        if (len == n && strncmp(item, arch, n) == 0)
            return true;
    return false;
}

/* Whether a family's name matches a pattern of `list` (comma-separated
 * fnmatch(3) patterns; NULL: every family). */
static bool xp_family_wanted(const char *list, const char *family)
{
    if (!list)
        return true;
    char pat[XP_FAMILY_PATTERN_MAX + 1];
    size_t len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        if (len > XP_FAMILY_PATTERN_MAX) /* refused before (xp_check_families) */
            continue;
        memcpy(pat, item, len);
        pat[len] = '\0';
        if (fnmatch(pat, family, 0) == 0)
            return true;
    }
    return false;
}

/* --family: each comma-separated pattern 1..XP_FAMILY_PATTERN_MAX characters
 * of letters, digits, '_', '*' and '?'.  Errors: KEVO_ERR_ARG naming the
 * bad pattern. */
static kevo_status xp_check_families(const char *list, kevo_err *err)
{
    size_t len;
    for (const char *p = list, *item; kv_list_next(&p, &item, &len);) {
        bool ok = len >= 1 && len <= XP_FAMILY_PATTERN_MAX;
        for (size_t i = 0; ok && i < len; i++)
            ok = isalnum((unsigned char)item[i]) || item[i] == '_' || item[i] == '*' || item[i] == '?';
        if (!ok)
            return kevo_err_set(err, KEVO_ERR_ARG,
                                "--family takes comma-separated family names or patterns (letters, digits, '_', "
                                "'*', '?'; 1 to %d characters each), not '%.*s'",
                                XP_FAMILY_PATTERN_MAX, (int)(len > 80 ? 80 : len), item);
    }
    return KEVO_OK;
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
    if (!sp) {
        /* a generated candidate: its one-point space and source as the DB keeps them, admitted again by the
           generator that made it as a fresh one is (the DB is untrusted: hash, static check, plan for the run's
           arch); a family no generator claims is not loaded (said below) */
        kevo_space *ls = NULL;
        kevo_space **a = realloc(x->spaces, (size_t)(x->nspaces + 1) * sizeof *a);
        kevo_err e2;
        kevo_status st = a ? kevo_gen_restore(x->db, c, x->op, run->arch, &ls, &e2)
                           : kevo_err_set(&e2, KEVO_ERR_NOMEM, "out of memory");
        if (a)
            x->spaces = a;
        if (st && st != KEVO_ERR_NOT_FOUND) {
            if (err)
                *err = e2;
            return st;
        }
        if (ls) {
            x->spaces[x->nspaces++] = ls;
            sp = ls;
        }
    }
    if (!sp)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld is of family '%s', which is not loaded",
                            (long long)c->id, kv_is_ident(c->family, 63) ? c->family : "(not a name)");
    /* the stored params are untrusted: only a configuration of the family's domains goes on */
    char who[64];
    snprintf(who, sizeof who, "candidate %lld (run %lld)", (long long)c->id, (long long)run->id);
    kevo_config cfg;
    kevo_status st = kevo_config_parse_stored(sp, c->params, who, &cfg, err);
    if (st)
        return st;
    for (int i = 0; i < x->nk; i++) {
        xp_kernel *k = &x->k[i];
        if (k->sp == sp && memcmp(&k->cfg, &cfg, sizeof cfg) == 0 && k->dtype == dtype &&
            strcmp(k->arch, run->arch) == 0) {
            if (c->median_ms < k->ms) { /* measured again, faster: the comment tells the fastest */
                k->ms = c->median_ms;
                k->speedup = c->speedup;
                k->cand_id = c->id;
                k->run_id = run->id;
            }
            *idx = i;
            return KEVO_OK;
        }
    }
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    st = c->binary_key[0] ? kevo_db_binary_get(x->db, c->binary_key, &b, err) : KEVO_ERR_NOT_FOUND;
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
    k->cfg = cfg;
    kv_buf canon; /* the canonical text, never the DB's */
    kv_buf_init(&canon);
    kevo_config_json(sp, &cfg, &canon);
    k->params = kv_buf_take(&canon);
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

/* Append a tuned entry (kernel -1: vendor form `vendor` there, or
 * UNSUPPORTED when that is -1 too). */
static kevo_status xp_add_tuned(xp_state *x, const kevo_run_row *run, const char *shape_txt, int dtype, int kernel,
                                int vendor, double ms, double speedup, double vs_peer, kevo_err *err)
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
    t->vendor = vendor;
    t->ms = ms;
    t->lib_ms = vendor >= 0 ? x->v[vendor].ms : ms;
    t->speedup = speedup;
    t->vs_peer = vs_peer;
    kevo_status st = x->op->parse_shape(shape_txt, &t->shape, err);
    if (!st)
        x->nt++;
    return st;
}

/* A distribution run: for each of its shapes, the verified candidate
 * fastest there becomes that shape's kernel (or, when it does not beat that
 * shape's best peer, its vendor form or UNSUPPORTED entry: xp_vendor_for).
 * ok[0..nok) are the run's verified candidates. */
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
        int idx = -1, vendor = -1;
        bool lost = kevo_peer_lost(bres.vs_peer), kernel_best = false;
        if (lost && (st = xp_vendor_for(x, run, shapes[j].idx, shapes[j].shape, dtype, bres.median_ms, &vendor,
                                        &kernel_best, err)))
            break;
        if ((!lost || kernel_best) && (st = xp_add_kernel(x, run, best, dtype, &idx, err)))
            break;
        st = xp_add_tuned(x, run, shapes[j].shape, dtype, idx, vendor, bres.median_ms, bres.speedup, bres.vs_peer,
                          err);
    }
    free(shapes);
    return st;
}

/* Whether two tuned entries are at one shape (what the library's dispatch
 * compares: the op's tuned keys). */
static bool xp_same_shape(const kevo_op_export *xd, const xp_tuned *a, const xp_tuned *b)
{
    for (int i = 0; i < xd->ntuned_keys; i++) {
        int64_t u = -1, v = -2;
        kevo_syms_get(&a->shape, xd->tuned_keys[i], &u);
        kevo_syms_get(&b->shape, xd->tuned_keys[i], &v);
        if (u != v)
            return false;
    }
    return true;
}

/* Several runs at one shape, dtype and arch (a re-tune, another device of
 * the arch): keep one tuned entry, the fastest of what the library would
 * run there (its own verdict against its run's peers with it), where the
 * first of them stood; the other runs' kernels stay in the library for
 * shapes nobody tuned, their vendor forms go (xp_vendor_compact). */
static void xp_fastest_per_shape(xp_state *x)
{
    int n = 0;
    for (int i = 0; i < x->nt; i++) {
        const xp_tuned *t = &x->t[i];
        int j = 0;
        while (j < n &&
               !(x->t[j].dtype == t->dtype && x->t[j].sm == t->sm && xp_same_shape(x->op->export_desc, &x->t[j], t)))
            j++;
        if (j == n)
            x->t[n++] = *t;
        else if (t->lib_ms < x->t[j].lib_ms || (isnan(x->t[j].lib_ms) && !isnan(t->lib_ms)))
            x->t[j] = *t;
    }
    x->nt = n;
    xp_vendor_compact(x);
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
        kevo_limits lim; /* the arch names the kernels' target in the library: a known one only */
        if (kevo_limits_for_arch(run.arch, &lim, NULL) != KEVO_OK) {
            st = kevo_err_set(err, KEVO_ERR_PARSE, "run %lld in '%s' names arch '%s', which kevo does not know",
                              (long long)run.id, x->o->db_path,
                              kv_is_ident(run.arch, 15) ? run.arch : "(not a name)");
            break;
        }
        kevo_cand_row *rows = NULL;
        int n = 0;
        if ((st = kevo_db_cand_list(x->db, run.id, &rows, &n, err)))
            break;
        const kevo_cand_row **best = malloc((size_t)(n ? n : 1) * sizeof *best);
        int ok = 0;
        if (!best)
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; best && i < n; i++)
            if (strcmp(rows[i].status, "ok") == 0 && !isnan(rows[i].speedup) &&
                xp_family_wanted(x->o->families, rows[i].family))
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
        /* a shape where the best does not beat the best in-run peer: that peer's cuBLAS form, or UNSUPPORTED,
           unless the library can run nothing faster than the kernel (xp_vendor_for) */
        bool lost = ok > 0 && kevo_peer_lost(best[0]->vs_peer), kernel_best = false;
        int vendor = -1;
        if (!st && lost)
            st = xp_vendor_for(x, &run, 0, run.shape, (int)dt, best[0]->median_ms, &vendor, &kernel_best, err);
        if (kernel_best)
            lost = false;
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
        if (!st && (best_kernel >= 0 || lost)) /* this run's own measurement (the kernel may be another run's too) */
            st = xp_add_tuned(x, &run, run.shape, (int)dt, best_kernel, vendor, best[0]->median_ms,
                              best[0]->speedup, best[0]->vs_peer, err);
        free(best);
        kevo_cand_rows_free(rows, n);
    }
    free(ids);
    if (!st)
        xp_fastest_per_shape(x);
    if (!st && x->nk == 0 && x->nt > 0)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND,
                          "no kernel in '%s' beats its in-run peers at any tuned shape: nothing to export",
                          x->o->db_path);
    else if (!st && x->nk == 0)
        st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "'%s' has no verified %s candidate%s%s%s%s", x->o->db_path,
                          x->o->op, x->o->archs ? " for " : "", x->o->archs ? x->o->archs : "",
                          x->o->families ? " of family " : "", x->o->families ? x->o->families : "");
    return st;
}

/* ---- C emission (the text itself: emit.c) ---- */

static kevo_status xp_emit_kernels(kv_buf *b, const xp_state *x, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0; i < x->nk && !st; i++) {
        const xp_kernel *k = &x->k[i];
        kv_buf what;
        kv_buf_init(&what);
        kv_buf_printf(&what, "%s %s, %s %s", k->sp->family, k->params, k->arch, k->dtype ? "bf16" : "fp16");
        kv_buf_printf(b, "/* kernel %d: ", i);
        kevo_emit_c_comment(b, what.data ? what.data : "");
        kv_buf_release(&what);
        kv_buf_printf(b, "; measured %.4f ms (%.2fx) in run %lld, candidate %lld */\n", k->ms, k->speedup,
                      (long long)k->run_id, (long long)k->cand_id);
        kv_buf_printf(b, "static const unsigned char x_k%d_cubin[%zu] = {", i, k->cubin_size);
        const unsigned char *c = k->cubin;
        for (size_t j = 0; j < k->cubin_size; j++)
            kv_buf_printf(b, "%s0x%02x,", j % 16 ? "" : "\n    ", c[j]);
        kv_buf_puts(b, "\n};\n\n");
        st = kevo_emit_plan(b, k->sp, x->op, &k->cfg, i, err);
    }
    kv_buf_printf(b, "#define X_NKERNELS %d\nstatic x_kernel x_kernels[X_NKERNELS] = {\n", x->nk);
    for (int i = 0; i < x->nk && !st; i++)
        st = kevo_emit_kernel_entry(b, x->k[i].sp, x->op, &x->k[i].cfg, x->k[i].dtype, x->k[i].sm, i, err);
    kv_buf_puts(b, "};\n\n");
    const kevo_op_export *xd = x->op->export_desc;
    if (!st && xd->vendor_source)
        st = xp_emit_vendors(b, x, err);
    kv_buf_printf(b, "#define X_NTUNED %d\nstatic const x_tuned x_tuned_shapes[X_NTUNED > 0 ? X_NTUNED : 1] = {\n",
                  x->nt);
    for (int i = 0; i < x->nt; i++) {
        const xp_tuned *t = &x->t[i];
        kv_buf_puts(b, "    {");
        for (int j = 0; j < xd->ntuned_keys; j++) {
            int64_t v = 0;
            kevo_syms_get(&t->shape, xd->tuned_keys[j], &v);
            kv_buf_printf(b, "%lld, ", (long long)v);
        }
        kv_buf_printf(b, "%d, %d, %d, %d}, /* run %lld: %.4f ms%s */\n", t->dtype, t->sm, t->kernel, t->vendor,
                      (long long)t->run.id, t->ms,
                      t->vendor >= 0  ? ", beats no in-run peer: its vendor form runs"
                      : t->kernel < 0 ? ", beats no in-run peer: UNSUPPORTED"
                                      : "");
    }
    kv_buf_puts(b, "};\n");
    return st;
}

/* A template file with @NAME@, @NAME_UPPER@ and the given extra keys replaced. */
static kevo_status xp_fill(const char *path, const char *name, const char *const *keys, const char *const *vals,
                           int nkeys, kv_buf *out, kevo_err *err)
{
    char *text = NULL;
    kevo_status st = kv_read_file(path, &text, NULL, err);
    if (!st)
        st = kevo_emit_fill(text, name, keys, vals, nkeys, out, err);
    free(text);
    return st;
}

static kevo_status xp_readme(const xp_state *x, kv_buf *b)
{
    const char *n = x->o->name;
    const kevo_op_export *xd = x->op->export_desc;
    kv_buf_printf(b,
                  "# %s\n\n%s (`%s`) tuned by kevo. Generated by `kevo export`; do "
                  "not edit.\nThe library links only the CUDA driver API.\n\n"
                  "```\ncmake -S . -B build && cmake --build build && cmake --install build --prefix PREFIX\n```\n\n"
                  "Then `find_package(%s)` and link `%s::%s` (or `%s::%s_static`), or use pkg-config `%s`.\n"
                  "API: `include/%s.h`.\n\n## Tuned shapes\n\n"
                  "| shape | dtype | arch | device | kernel | median ms | speedup over the stage-0 baseline | "
                  "vs the best in-run peer |\n|---|---|---|---|---|---|---|---|\n",
                  n, xd->what, x->op->name, n, n, n, n, n, n, n);
    for (int i = 0; i < x->nt; i++) {
        const xp_tuned *t = &x->t[i];
        char vs[32] = "-";
        if (!isnan(t->vs_peer))
            snprintf(vs, sizeof vs, "%.2fx", t->vs_peer);
        /* shape and device are the DB's text: table cells, escaped */
        const char *cells[4] = {t->shape_txt, t->run.dtype, t->run.arch, t->run.device[0] ? t->run.device : "-"};
        for (int c = 0; c < 4; c++) {
            kv_buf_puts(b, "| ");
            kevo_emit_md_cell(b, cells[c]);
            kv_buf_puts(b, " ");
        }
        if (t->vendor >= 0) {
            kv_buf_puts(b, "| ");
            xp_vendor_readme_cell(b, x, t);
            kv_buf_printf(b, " | %.4f | %.2fx | %s |\n", t->ms, t->speedup, vs);
            continue;
        }
        if (t->kernel < 0) {
            kv_buf_printf(b, "| none: UNSUPPORTED (no kernel beat the in-run peers) | %.4f | %.2fx | %s |\n", t->ms,
                          t->speedup, vs);
            continue;
        }
        const xp_kernel *k = &x->k[t->kernel];
        kv_buf_printf(b, "| %s `%s` | %.4f | %.2fx | %s |\n", k->sp->family, k->params, t->ms, t->speedup, vs);
    }
    kv_buf_printf(b,
                  "\nA shape marked cuBLAS dispatches to cuBLAS: no kernel beat that in-run peer there, so the library "
                  "runs its form (the GEMMs through cuBLASLt, loaded at run time, with the algorithms kevo timed when "
                  "cuBLASLt is the version that chose them; the median ms and speedup columns are kevo's best "
                  "kernel's). It needs libcublasLt.so.13 at run time (else `VENDOR_UNAVAILABLE`); the header says "
                  "which layout runs it at the timed speed. "
                  "A shape marked UNSUPPORTED returns `UNSUPPORTED`: there kevo's best kernel was slower than %s, so "
                  "use that. Shapes not in this table run the fastest kernel whose constraints accept them (or return "
                  "UNSUPPORTED). Where several runs tuned one shape, dtype and arch, the table and the library take "
                  "the fastest measured one.\n\n"
                  "## Kernels\n\n| # | family | params | arch | dtype | %s |\n"
                  "|---|---|---|---|---|---|\n",
                  xd->readme_fallback, xd->pad_column);
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
                      k->dtype ? "bf16" : "fp16", pads ? xd->pad_yes : "no");
    }
    kv_buf_puts(b, "\n`" XP_MANIFEST "` lists the files `kevo export` wrote here: exporting this library again "
                   "replaces those (while unchanged) and nothing else.\n");
    return KEVO_OK;
}

/* The Python package of --torch into py[5] (pyproject.toml, setup.py,
 * README.md, __init__.py, the bindings' C++): export/template/torch/
 * filled with the op's pieces (kevo_op_export.torch, .torch_usage).
 * Errors: KEVO_ERR_ARG (a library name Python cannot import), KEVO_ERR_IO. */
static kevo_status xp_torch(const xp_state *x, const char *tdir, kv_buf py[5], kevo_err *err)
{
    const kevo_export_opts *o = x->o;
    const kevo_op_export *xd = x->op->export_desc;
    kevo_status nst = kevo_export_check_torch_name(o->name, err);
    if (nst)
        return nst;
    char path[PATH_MAX];
    kv_buf op_torch, usage;
    kv_buf_init(&op_torch);
    kv_buf_init(&usage);
    snprintf(path, sizeof path, "%s/kernels/%s", o->data_dir, xd->torch);
    kevo_status st = xp_fill(path, o->name, NULL, NULL, 0, &op_torch, err);
    if (!st) {
        snprintf(path, sizeof path, "%s/kernels/%s", o->data_dir, xd->torch_usage);
        st = xp_fill(path, o->name, NULL, NULL, 0, &usage, err);
    }
    const char *keys[] = {"@OP@", "@OP_WHAT@", "@OP_TORCH@", "@OP_USAGE@"};
    const char *vals[] = {x->op->name, xd->what, op_torch.data ? op_torch.data : "", usage.data ? usage.data : ""};
    static const char *const tpl[5] = {"pyproject.toml.in", "setup.py.in", "README.md.in", "__init__.py.in",
                                       "torch.cpp.in"};
    for (int i = 0; i < 5 && !st; i++) {
        snprintf(path, sizeof path, "%s/torch/%s", tdir, tpl[i]);
        st = xp_fill(path, o->name, keys, vals, 4, &py[i], err);
    }
    kv_buf_release(&op_torch);
    kv_buf_release(&usage);
    return st;
}

/* The texts of the library, each rendered into its own buffer before any is written. */
typedef struct {
    kv_buf abi, kernels, hdr, src, cm, cfg, pc, readme, syms, tmaps, tkeys, vendor_rt;
    kv_buf piece[4]; /* the op's head, api, dispatch, call */
    kv_buf py[5];    /* --torch: pyproject.toml, setup.py, README.md, __init__.py, the bindings */
} xp_texts;

static void xp_texts_init(xp_texts *t)
{
    kv_buf *bufs[] = {&t->abi, &t->kernels, &t->hdr, &t->src, &t->cm, &t->cfg, &t->pc, &t->readme, &t->syms,
                      &t->tmaps, &t->tkeys, &t->vendor_rt, &t->piece[0], &t->piece[1], &t->piece[2], &t->piece[3]};
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++)
        kv_buf_init(bufs[i]);
    for (int i = 0; i < 5; i++)
        kv_buf_init(&t->py[i]);
}

static void xp_texts_release(xp_texts *t)
{
    kv_buf *bufs[] = {&t->abi, &t->kernels, &t->hdr, &t->src, &t->cm, &t->cfg, &t->pc, &t->readme, &t->syms,
                      &t->tmaps, &t->tkeys, &t->vendor_rt, &t->piece[0], &t->piece[1], &t->piece[2], &t->piece[3]};
    for (int i = 0; i < 5; i++)
        kv_buf_release(&t->py[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(bufs); i++)
        kv_buf_release(bufs[i]);
}

/* Read what export starts from: the op's spaces, the DB, the tuned kernels of
 * each shape and, where the op has one, the vendor forms' kernels. */
static kevo_status xp_load(xp_state *x, kevo_err *err)
{
    const kevo_export_opts *o = x->o;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/templates", o->data_dir);
    kevo_status st = kevo_spaces_load_dirs(path, o->extra_templates, o->op, &x->spaces, &x->nspaces, err);
    if (!st)
        st = kevo_db_open_ro(o->db_path, &x->db, err);
    if (!st)
        st = xp_collect(x, err);
    if (!st && x->op->export_desc->vendor_source) /* the vendor forms' kernels, for the archs and dtypes that run one */
        st = xp_vendor_compile(x, err);
    return st;
}

/* The pieces the runtime is made of: the op's ABI header, the kernels, the
 * op's own pieces (each filled with the name), its symbols, tuned keys and
 * tensor maps, and the vendor fallback's runtime. */
static kevo_status xp_render_pieces(const xp_state *x, const char *tdir, xp_texts *t, kevo_err *err)
{
    const kevo_export_opts *o = x->o;
    const kevo_op_export *xd = x->op->export_desc;
    char path[PATH_MAX];
    kevo_status st = KEVO_OK;
    char *a = NULL;
    snprintf(path, sizeof path, "%s/kernels/%s", o->data_dir, x->op->abi_header);
    st = kv_read_file(path, &a, NULL, err);
    if (!st)
        kv_buf_puts(&t->abi, a);
    free(a);
    if (!st)
        st = xp_emit_kernels(&t->kernels, x, err);
    /* the op's pieces, each filled with the name before it goes into the runtime */
    const char *const pieces[4] = {xd ? xd->head : NULL, xd ? xd->api : NULL, xd ? xd->dispatch : NULL,
                                   xd ? xd->call : NULL};
    for (int i = 0; i < 4 && !st; i++) {
        snprintf(path, sizeof path, "%s/kernels/%s", o->data_dir, pieces[i]);
        st = xp_fill(path, o->name, NULL, NULL, 0, &t->piece[i], err);
    }
    for (int i = 0; i < x->op->nsymbols && !st; i++)
        st = kv_buf_printf(&t->syms, "%s%s", i ? ", " : "", x->op->symbols[i]);
    for (int i = 0; xd && i < xd->ntuned_keys && !st; i++)
        st = kv_buf_printf(&t->tkeys, "%s%s", i ? ", " : "", xd->tuned_keys[i]);
    if (!st)
        st = kevo_emit_tmap_tensors(&t->tmaps, x->op);
    if (!st && xd->vendor_source) { /* the vendor fallback's runtime (cuBLASLt) */
        snprintf(path, sizeof path, "%s/cublaslt.c.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &t->vendor_rt, err);
    }
    return st;
}

/* The library's files from the templates in tdir and the pieces: header,
 * source, CMake files, pkg-config, README and, with --torch, the Python package. */
static kevo_status xp_render_files(const xp_state *x, const char *tdir, xp_texts *t, kevo_err *err)
{
    const kevo_export_opts *o = x->o;
    const kevo_op_export *xd = x->op->export_desc;
    char path[PATH_MAX];
    kevo_status st = KEVO_OK;
    const char *hkeys[] = {"@OP_HEAD@", "@OP_API@"};
    const char *hvals[] = {t->piece[0].data ? t->piece[0].data : "", t->piece[1].data ? t->piece[1].data : ""};
    const char *keys[] = {"@ABI@",         "@KERNELS@",      "@SYMBOLS@", "@TMAP_TENSORS@",  "@TUNED_KEYS@",
                          "@OP_DISPATCH@", "@VENDOR_RUNTIME@", "@OP_CALL@", "@VENDOR_SHUTDOWN@"};
    const char *vals[] = {t->abi.data ? t->abi.data : "",
                          t->kernels.data ? t->kernels.data : "",
                          t->syms.data ? t->syms.data : "",
                          t->tmaps.data ? t->tmaps.data : "",
                          t->tkeys.data ? t->tkeys.data : "",
                          t->piece[2].data ? t->piece[2].data : "",
                          t->vendor_rt.data ? t->vendor_rt.data : "",
                          t->piece[3].data ? t->piece[3].data : "",
                          xd->vendor_source ? "    x_vendor_shutdown();\n" : ""};
    const char *pkeys[] = {"@OP_WHAT@"};
    const char *pvals[] = {xd ? xd->what : ""};
    if (!st) {
        snprintf(path, sizeof path, "%s/lib.h.in", tdir);
        st = xp_fill(path, o->name, hkeys, hvals, 2, &t->hdr, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/lib.c.in", tdir);
        st = xp_fill(path, o->name, keys, vals, (int)KV_ARRAY_LEN(keys), &t->src, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/CMakeLists.txt.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &t->cm, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/Config.cmake.in", tdir);
        st = xp_fill(path, o->name, NULL, NULL, 0, &t->cfg, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/pc.in", tdir);
        st = xp_fill(path, o->name, pkeys, pvals, 1, &t->pc, err);
    }
    if (!st)
        st = xp_readme(x, &t->readme);
    /* --torch: the Python package (its C sources are copies of the library's) */
    if (!st && o->torch)
        st = xp_torch(x, tdir, t->py, err);
    return st;
}

/* The files export writes, in order, into files (room for 14: the last slot
 * is the manifest's, filled by the caller).  Returns how many, without it. */
static int xp_list_files(const kevo_export_opts *o, xp_texts *t, xp_file *files)
{
    const struct {
        const char *dir;
        bool named; /* the library's name between dir and tail */
        const char *tail;
        kv_buf *b;
        bool torch;
    } parts[] = {
        {"include/", true, ".h", &t->hdr, false},
        {"src/", true, ".c", &t->src, false},
        {"", false, "CMakeLists.txt", &t->cm, false},
        {"cmake/", true, "Config.cmake.in", &t->cfg, false},
        {"", true, ".pc.in", &t->pc, false},
        {"", false, "README.md", &t->readme, false},
        {"python/", false, "pyproject.toml", &t->py[0], true},
        {"python/", false, "setup.py", &t->py[1], true},
        {"python/", false, "README.md", &t->py[2], true},
        {"python/", true, "/__init__.py", &t->py[3], true},
        {"python/csrc/", true, ".h", &t->hdr, true},
        {"python/csrc/", true, ".c", &t->src, true},
        {"python/csrc/", true, "_torch.cpp", &t->py[4], true},
    };
    _Static_assert(KV_ARRAY_LEN(parts) + 1 == XP_NFILES, "xp_list_files: one slot per part and the manifest");
    int nf = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(parts); i++) {
        if (parts[i].torch && !o->torch)
            continue;
        snprintf(files[nf].rel, sizeof files[nf].rel, "%s%s%s", parts[i].dir, parts[i].named ? o->name : "",
                 parts[i].tail);
        files[nf].b = parts[i].b;
        nf++;
    }
    return nf;
}

static void xp_state_free(xp_state *x)
{
    for (int i = 0; i < x->nk; i++) {
        free(x->k[i].params);
        free(x->k[i].cubin);
    }
    free(x->k);
    free(x->t);
    xp_vendor_free(x);
    kevo_spaces_free(x->spaces, x->nspaces);
    kevo_db_close(x->db);
}

kevo_status kevo_export(kevo_ctx *ctx, const kevo_export_opts *o, int *nkernels, int *ntuned)
{
    kevo_err local, *err = ctx ? kv_ctx_err(ctx) : &local;
    kevo_err_clear(err);
    kevo_status st = kevo_export_check_name(o->name, err);
    if (st)
        return st;
    if (o->top < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "--top must be at least 1");
    if ((st = xp_check_families(o->families, err)))
        return st;
    if (!o->out_dir || !*o->out_dir || strlen(o->out_dir) > PATH_MAX - 256)
        return kevo_err_set(err, KEVO_ERR_ARG, "--out needs a folder path of at most %d bytes", PATH_MAX - 256);
    xp_state x;
    memset(&x, 0, sizeof x);
    x.ctx = ctx;
    x.o = o;
    x.op = kevo_op_find(o->op);
    if (!x.op)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%s'", o->op);
    if (!x.op->export_desc) /* before anything reads it */
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "export of %s is not supported yet", x.op->name);
    char tdir[PATH_MAX - 64];
    st = xp_load(&x, err);
    snprintf(tdir, sizeof tdir, "%s/export/template", o->data_dir);
    xp_texts t;
    xp_texts_init(&t);
    if (!st)
        st = xp_render_pieces(&x, tdir, &t, err);
    if (!st)
        st = xp_render_files(&x, tdir, &t, err);
    /* the files, the manifest last: it is written only once all the others are */
    xp_file files[XP_NFILES];
    int nf = xp_list_files(o, &t, files);
    kv_buf manifest;
    kv_buf_init(&manifest);
    if (!st)
        st = xp_manifest(o->name, files, nf, NULL, &manifest, err);
    snprintf(files[nf].rel, sizeof files[nf].rel, "%s", XP_MANIFEST);
    files[nf].b = &manifest;
    if (!st)
        st = xp_write_out(o, files, nf, err);
    kv_buf_release(&manifest);
    if (!st) {
        *nkernels = x.nk;
        *ntuned = x.nt;
    }
    xp_texts_release(&t);
    xp_state_free(&x);
    return st;
}
