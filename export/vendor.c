/* vendor.c — the vendor fallback of an exported library (export_int.h):
 * at a tuned shape no kernel won, the fastest OK VENDOR peer's form (its
 * config parsed and checked by the op: DB text is untrusted), its small
 * kernels compiled with NVRTC, and the generated tables the op's call
 * reads (export/template/cublaslt.c.in is the runtime around them). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/compile.h"
#include "export/emit.h"
#include "export/export_int.h"

_Static_assert(KEVO_VENDOR_MAX_GEMMS == 2, "the library's x_vendor holds two GEMMs (X_VENDOR_GEMMS)");

/* An event of the export (its options' callback; none: silent). */
#define XV_EVENT(x, kind, ...) kv_emit(kv_ctx_fn((x)->ctx), kv_ctx_user((x)->ctx), (kind), 0, __VA_ARGS__)

/* Where a lost shape stands, for events: "run 2 at B=...,U=15 (bf16, sm_90a)". */
static void xv_where(const xp_state *x, const kevo_run_row *run, const kevo_syms *shape, int dtype, char *out,
                     size_t n)
{
    char sh[256];
    x->op->shape_str(shape, sh, sizeof sh);
    snprintf(out, n, "run %lld at %s (%s, %s)", (long long)run->id, sh, kevo_dtype_name((kevo_dtype)dtype),
             kv_is_ident(run->arch, 15) ? run->arch : "?");
}

/* Append a vendor form to x; its index in *idx.  Errors: KEVO_ERR_NOMEM. */
static kevo_status xv_add(xp_state *x, const xp_vendor *v, int *idx, kevo_err *err)
{
    if (x->nv == x->vcap) {
        int cap = x->vcap ? 2 * x->vcap : 4;
        xp_vendor *a = realloc(x->v, (size_t)cap * sizeof *a);
        if (!a)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        x->v = a;
        x->vcap = cap;
    }
    x->v[x->nv] = *v;
    *idx = x->nv++;
    return KEVO_OK;
}

kevo_status xp_vendor_for(xp_state *x, const kevo_run_row *run, int shape_idx, const char *shape_txt, int dtype,
                          double kevo_ms, int *vendor, bool *kernel_best, kevo_err *err)
{
    const kevo_op *op = x->op;
    const kevo_op_export *xd = op->export_desc;
    *vendor = -1;
    *kernel_best = false;
    kevo_syms shape;
    kevo_status st = op->parse_shape(shape_txt, &shape, err);
    if (st)
        return st;
    char where[384];
    xv_where(x, run, &shape, dtype, where, sizeof where);
    if (!xd->vendor_parse || !xd->vendor_forms) {
        XV_EVENT(x, KEVO_EVENT_LINE, "%s: no kernel beats the best in-run peer; %s has no vendor fallback: UNSUPPORTED "
                                     "there",
                 where, op->name);
        return KEVO_OK;
    }
    kevo_peer_set ps;
    if ((st = kevo_db_peers_get(x->db, run->id, shape_idx, 0, op, &ps, err)))
        return st;
    int p = kevo_peer_vendor(op, &ps);
    if (p < 0) {
        XV_EVENT(x, KEVO_EVENT_WARNING,
                 "%s: no kernel beats the best in-run peer and no vendor peer passed its check there: UNSUPPORTED "
                 "there (the caller's cuBLAS)",
                 where);
        return KEVO_OK;
    }
    double ms = kevo_peer_ok_ms(&ps, p);
    if (!(ms < kevo_ms)) {
        double best_ms = NAN;
        int b = kevo_peer_best(op, &ps, &best_ms);
        XV_EVENT(x, KEVO_EVENT_WARNING,
                 "%s: %s (%.4f ms) beats kevo's best (%.4f ms), but the library cannot run it; the fastest form it "
                 "can dispatch to, '%s', takes %.4f ms: the library keeps the kernel there",
                 where, b >= 0 ? op->peers[b].verdict : "a peer", best_ms, kevo_ms, op->peers[p].name, ms);
        *kernel_best = true;
        return KEVO_OK;
    }
    xp_vendor v;
    memset(&v, 0, sizeof v);
    kevo_err perr;
    kevo_err_clear(&perr);
    if (xd->vendor_parse(ps.p[p].config, &shape, &v.cfg, &perr) != KEVO_OK) {
        XV_EVENT(x, KEVO_EVENT_WARNING, "%s: vendor peer '%s' has a config export refuses (%s): UNSUPPORTED there",
                 where, op->peers[p].name, perr.msg);
        return KEVO_OK;
    }
    if (v.cfg.form < 0 || v.cfg.form >= xd->nvendor_forms || strcmp(xd->vendor_forms[v.cfg.form], op->peers[p].name)) {
        XV_EVENT(x, KEVO_EVENT_WARNING,
                 "%s: vendor peer '%s' has a config of another form: UNSUPPORTED there", where, op->peers[p].name);
        return KEVO_OK;
    }
    v.peer = p;
    v.dtype = dtype;
    snprintf(v.arch, sizeof v.arch, "%s", run->arch);
    v.sm = (int)strtol(run->arch + 3, NULL, 10);
    v.ms = ms;
    v.kevo_ms = kevo_ms;
    v.run_id = run->id;
    op->shape_str(&shape, v.shape_txt, sizeof v.shape_txt);
    if ((st = xv_add(x, &v, vendor, err)))
        return st;
    XV_EVENT(x, KEVO_EVENT_LINE,
             "%s: no kernel beats %s (%.4f ms; kevo's best %.4f ms): the library runs it there (cuBLASLt %" PRIu64
             ", its algorithms as timed)",
             where, op->peers[p].verdict, ms, kevo_ms, v.cfg.lib_version);
    return KEVO_OK;
}

void xp_vendor_compact(xp_state *x)
{
    int n = 0;
    xp_vendor *keep = x->nv ? malloc((size_t)x->nv * sizeof *keep) : NULL;
    for (int i = 0; i < x->nt; i++) {
        xp_tuned *t = &x->t[i];
        if (t->vendor < 0)
            continue;
        if (keep) /* each form belongs to one tuned entry: at most nv are kept */
            keep[n] = x->v[t->vendor];
        t->vendor = keep ? n++ : -1;
    }
    if (keep)
        memcpy(x->v, keep, (size_t)n * sizeof *keep);
    free(keep);
    x->nv = n;
}

/* The vendor module's source for a dtype: DTYPE_BF16, kernels/ref.cuh (the
 * storage dtype) and the op's vendor source, each after a #line naming it,
 * as kevo_op_ref_render puts them into the worker's module.  Errors:
 * KEVO_ERR_IO, KEVO_ERR_NOMEM. */
static kevo_status xv_source(const xp_state *x, int dtype, kv_buf *out, kevo_err *err)
{
    const char *rel[2] = {"ref.cuh", x->op->export_desc->vendor_source};
    char *text[2] = {NULL, NULL};
    kevo_status st = KEVO_OK;
    for (int i = 0; i < 2 && !st; i++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/kernels/%s", x->o->data_dir, rel[i]) >= sizeof path)
            st = kevo_err_set(err, KEVO_ERR_IO, "the data folder's path is too long");
        else
            st = kv_read_file(path, &text[i], NULL, err);
    }
    if (!st && kv_buf_printf(out, "#define DTYPE_BF16 %d\n#line 1 \"kernels/ref.cuh\"\n%s\n#line 1 \"kernels/%s\"\n%s",
                             dtype == KEVO_DTYPE_BF16, text[0], rel[1], text[1]))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    free(text[0]);
    free(text[1]);
    return st;
}

kevo_status xp_vendor_compile(xp_state *x, kevo_err *err)
{
    if (x->nv == 0)
        return KEVO_OK;
    x->vm = calloc((size_t)x->nv, sizeof *x->vm);
    if (!x->vm)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < x->nv; i++) {
        const xp_vendor *v = &x->v[i];
        int j = 0;
        while (j < x->nvm && !(x->vm[j].dtype == v->dtype && strcmp(x->vm[j].arch, v->arch) == 0))
            j++;
        if (j == x->nvm) {
            snprintf(x->vm[j].arch, sizeof x->vm[j].arch, "%s", v->arch);
            x->vm[j].sm = v->sm;
            x->vm[j].dtype = v->dtype;
            x->nvm++;
        }
    }
    kevo_compile_job *jobs = calloc((size_t)x->nvm, sizeof *jobs);
    kv_buf *src = calloc((size_t)x->nvm, sizeof *src);
    kevo_status st = jobs && src ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    const char *name = x->op->export_desc->vendor_source;
    for (int j = 0; j < x->nvm && !st; j++) {
        kv_buf_init(&src[j]);
        st = xv_source(x, x->vm[j].dtype, &src[j], err);
        if (!st)
            st = kevo_compile_job_init(&jobs[j], name, src[j].data, x->vm[j].arch, err);
    }
    if (!st)
        st = kevo_compile_run_ctx(jobs, x->nvm, 2, 300, x->ctx, err);
    for (int j = 0; j < x->nvm && !st; j++) {
        kevo_compile_job *jb = &jobs[j];
        if (jb->fail != KEVO_FAIL_NONE || !jb->cubin || jb->cubin_size == 0) {
            st = kevo_err_set(err, KEVO_ERR_NVRTC,
                              "the vendor kernels kernels/%s did not compile for %s (%s), which a tuned shape's "
                              "cuBLAS form needs: %.600s",
                              name, x->vm[j].arch, kevo_dtype_name((kevo_dtype)x->vm[j].dtype),
                              jb->log ? jb->log : "no log");
            break;
        }
        x->vm[j].cubin = jb->cubin;
        x->vm[j].cubin_size = jb->cubin_size;
        jb->cubin = NULL;
    }
    for (int j = 0; jobs && src && j < x->nvm; j++) {
        kevo_compile_job_release(&jobs[j]);
        kv_buf_release(&src[j]);
    }
    free(jobs);
    free(src);
    return st;
}

/* "#define PREFIX<name> i" for each name, which must be an identifier. */
static kevo_status xv_emit_names(kv_buf *b, const char *prefix, const char *const *names, int n, const char *table,
                                 kevo_err *err)
{
    for (int i = 0; i < n; i++) {
        if (!kv_is_ident(names[i], 63))
            return kevo_err_set(err, KEVO_ERR_ARG, "a vendor %s of the op is not an identifier", table);
        kv_buf_printf(b, "#define %s%s %d\n", prefix, names[i], i);
    }
    kv_buf_printf(b, "static const char *const x_vendor_%s[%d] = {", table, n);
    for (int i = 0; i < n; i++) {
        kv_buf_puts(b, i ? ", " : "");
        kevo_emit_c_string(b, names[i]);
    }
    kv_buf_puts(b, "};\n");
    return KEVO_OK;
}

/* "{0x.., ...}" of n bytes. */
static void xv_emit_bytes(kv_buf *b, const unsigned char *p, size_t n)
{
    kv_buf_puts(b, "{");
    for (size_t i = 0; i < n; i++)
        kv_buf_printf(b, "%s0x%02x", i ? "," : "", p[i]);
    kv_buf_puts(b, "}");
}

kevo_status xp_emit_vendors(kv_buf *b, const xp_state *x, kevo_err *err)
{
    const kevo_op_export *xd = x->op->export_desc;
    kv_buf_puts(b, "/* ---- the vendor fallback: the forms' GEMMs run through cuBLASLt, their small kernels are "
                   "these modules ---- */\n");
    kevo_status st = xv_emit_names(b, "X_VFORM_", xd->vendor_forms, xd->nvendor_forms, "forms", err);
    if (!st)
        st = xv_emit_names(b, "X_VENTRY_", xd->vendor_entries, xd->nvendor_entries, "entries", err);
    if (st)
        return st;
    kv_buf_printf(b, "#define X_VENDOR_ENTRIES %d\n\n", xd->nvendor_entries);
    for (int j = 0; j < x->nvm; j++) {
        const xp_vmod *m = &x->vm[j];
        kv_buf_printf(b, "/* vendor module %d: kernels/", j);
        kevo_emit_c_comment(b, xd->vendor_source);
        kv_buf_printf(b, " for %s, %s */\nstatic const unsigned char x_vm%d_cubin[%zu] = {", m->arch,
                      kevo_dtype_name((kevo_dtype)m->dtype), j, m->cubin_size);
        const unsigned char *c = m->cubin;
        for (size_t i = 0; i < m->cubin_size; i++)
            kv_buf_printf(b, "%s0x%02x,", i % 16 ? "" : "\n    ", c[i]);
        kv_buf_puts(b, "\n};\n\n");
    }
    kv_buf_printf(b, "#define X_NVMODS %d\nstatic x_vmod x_vmods[X_NVMODS > 0 ? X_NVMODS : 1] = {\n", x->nvm);
    for (int j = 0; j < x->nvm; j++)
        kv_buf_printf(b, "    {%d, %d, x_vm%d_cubin, 0, NULL, {NULL}},\n", x->vm[j].sm, x->vm[j].dtype, j);
    if (x->nvm == 0)
        kv_buf_puts(b, "    {0, 0, NULL, 0, NULL, {NULL}},\n");
    kv_buf_puts(b, "};\n\n");
    kv_buf_printf(b, "#define X_NVENDORS %d\nstatic const x_vendor x_vendors[X_NVENDORS > 0 ? X_NVENDORS : 1] = {\n",
                  x->nv);
    for (int i = 0; i < x->nv; i++) {
        const xp_vendor *v = &x->v[i];
        kv_buf_printf(b, "    /* vendor form %d: peer %s of run %lld at ", i, x->op->peers[v->peer].name,
                      (long long)v->run_id);
        kevo_emit_c_comment(b, v->shape_txt);
        kv_buf_printf(b, ": %.4f ms (kevo's best %.4f ms) */\n    {%d, %d, %d, %" PRIu64 "ULL, %" PRIu64 "ULL, {", v->ms,
                      v->kevo_ms, v->cfg.form, v->sm, v->dtype, v->cfg.lib_version, v->cfg.workspace);
        for (int g = 0; g < KEVO_VENDOR_MAX_GEMMS; g++)
            kv_buf_printf(b, "%s%lld", g ? ", " : "", (long long)v->cfg.gemm_k[g]);
        kv_buf_puts(b, "},\n     {");
        for (int g = 0; g < KEVO_VENDOR_MAX_GEMMS; g++) {
            kv_buf_puts(b, g ? ",\n      " : "");
            xv_emit_bytes(b, v->cfg.algo[g], KEVO_VENDOR_ALGO_BYTES);
        }
        kv_buf_puts(b, "}},\n");
    }
    if (x->nv == 0)
        kv_buf_puts(b, "    {0, 0, 0, 0, 0, {0, 0}, {{0}, {0}}},\n");
    kv_buf_puts(b, "};\n\n");
    return KEVO_OK;
}

void xp_vendor_readme_cell(kv_buf *b, const xp_state *x, const xp_tuned *t)
{
    const xp_vendor *v = &x->v[t->vendor];
    kv_buf_printf(b, "cuBLAS: %s (peer `%s`, %.4f ms; cuBLASLt %" PRIu64 ", algorithms as timed)",
                  x->op->peers[v->peer].verdict, x->op->peers[v->peer].name, v->ms, v->cfg.lib_version);
}

void xp_vendor_free(xp_state *x)
{
    for (int j = 0; j < x->nvm; j++)
        free(x->vm[j].cubin);
    free(x->vm);
    free(x->v);
    x->vm = NULL;
    x->v = NULL;
    x->nvm = x->nv = 0;
}
