/* report_json.c — a run as JSON (cJSON), read from the store alone: the
 * run, its peers, candidates, generators and devices, the best by
 * architecture. */
#define _POSIX_C_SOURCE 200809L
#include "db/report.h"
#include "db/report_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

/* Add a number, or null when it was not measured (NaN or infinite);
 * false when out of memory. */
static bool rp_add_num(cJSON *o, const char *key, double v)
{
    return isfinite(v) ? cJSON_AddNumberToObject(o, key, v) != NULL : cJSON_AddNullToObject(o, key) != NULL;
}

/* Add a string, or null for "". */
static bool rp_add_str_opt(cJSON *o, const char *key, const char *s)
{
    return (s && *s) ? cJSON_AddStringToObject(o, key, s) != NULL : cJSON_AddNullToObject(o, key) != NULL;
}

/* The "best" object of a run in *out, or JSON null when it has no verified
 * candidate. */
static kevo_status rp_best_json(kevo_db *db, int64_t run_id, const kevo_run_gen_row *gens, int ngens, cJSON **out,
                                kevo_err *err)
{
    *out = NULL;
    kevo_cand_row c;
    kevo_status s = kevo_db_cand_best(db, run_id, &c, err);
    if (s == KEVO_ERR_NOT_FOUND) {
        kevo_err_clear(err);
        *out = cJSON_CreateNull();
        return *out ? KEVO_OK : rp_nomem(err);
    }
    if (s)
        return s;
    cJSON *o = cJSON_CreateObject();
    cJSON *params = c.params ? cJSON_Parse(c.params) : NULL;
    if (!params)
        params = cJSON_CreateString(c.params ? c.params : "");
    bool ok = o && params;
    ok = ok && cJSON_AddNumberToObject(o, "candidate_id", (double)c.id);
    ok = ok && cJSON_AddStringToObject(o, "template", c.family);
    ok = ok && cJSON_AddStringToObject(o, "generator", kevo_report_generator(c.family, gens, ngens));
    if (ok) {
        ok = cJSON_AddItemToObject(o, "params", params);
        if (ok)
            params = NULL; /* owned by o now */
    }
    ok = ok && rp_add_num(o, "median_ms", c.median_ms);
    ok = ok && rp_add_num(o, "ci_lo_ms", c.ci_lo_ms);
    ok = ok && rp_add_num(o, "ci_hi_ms", c.ci_hi_ms);
    ok = ok && rp_add_num(o, "speedup", c.speedup);
    ok = ok && rp_add_num(o, "vs_best_peer", c.vs_peer);
    ok = ok && rp_add_num(o, "roofline", c.roofline);
    ok = ok && rp_add_num(o, "tflops", c.tflops);
    ok = ok && rp_add_num(o, "rel_err", c.rel_err);
    ok = ok && (c.tied < 0 ? cJSON_AddNullToObject(o, "tied") != NULL
                           : cJSON_AddBoolToObject(o, "tied", c.tied) != NULL);
    cJSON_Delete(params);
    kevo_cand_row_release(&c);
    if (!ok) {
        cJSON_Delete(o);
        return rp_nomem(err);
    }
    *out = o;
    return KEVO_OK;
}

/* The run's candidates in *out: id, family, generator, the edge that made
 * it (parent and operator), status, failure and figures. */
static kevo_status rp_cands_json(kevo_db *db, int64_t run_id, const kevo_run_gen_row *gens, int ngens, cJSON **out,
                                 kevo_err *err)
{
    *out = NULL;
    kevo_cand_row *rows = NULL;
    kevo_edge_row *edges = NULL;
    int n = 0, ne = 0;
    kevo_status s = kevo_db_cand_list(db, run_id, &rows, &n, err);
    if (!s)
        s = kevo_db_edge_list(db, run_id, &edges, &ne, err);
    cJSON *a = s ? NULL : cJSON_CreateArray();
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++) {
        const kevo_cand_row *c = &rows[i];
        const kevo_edge_row *by = NULL;
        for (int k = 0; k < ne && !by; k++)
            if (edges[k].child_id == c->id)
                by = &edges[k];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(a, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddNumberToObject(o, "id", (double)c->id) && cJSON_AddStringToObject(o, "family", c->family) &&
             cJSON_AddStringToObject(o, "generator", kevo_report_generator(c->family, gens, ngens)) &&
             (by ? cJSON_AddNumberToObject(o, "parent_id", (double)by->parent_id) != NULL
                 : cJSON_AddNullToObject(o, "parent_id") != NULL) &&
             rp_add_str_opt(o, "operator", by ? by->op : NULL) && cJSON_AddStringToObject(o, "status", c->status) &&
             rp_add_str_opt(o, "fail", c->fail) && rp_add_num(o, "median_ms", c->median_ms) &&
             rp_add_num(o, "speedup", c->speedup) &&
             (c->device >= 0 ? cJSON_AddNumberToObject(o, "device", c->device) != NULL
                             : cJSON_AddNullToObject(o, "device") != NULL) &&
             rp_add_num(o, "eval_s", c->eval_s);
    }
    kevo_cand_rows_free(rows, n);
    free(edges);
    if (s)
        return s;
    if (!ok) {
        cJSON_Delete(a);
        return rp_nomem(err);
    }
    *out = a;
    return KEVO_OK;
}

/* The "generators" array of a run: each generator it used (run_generators,
 * gens[0..n)) with its options, the calls it made, and over the calls it
 * kept as generations (null for one that keeps none): failed calls, tokens
 * in and out, total latency. */
static kevo_status rp_gens_json(kevo_db *db, int64_t run_id, const kevo_run_gen_row *gens, int n, cJSON **out,
                                kevo_err *err)
{
    *out = NULL;
    kevo_generation_row *g = NULL;
    int ng = 0;
    kevo_status s = kevo_db_generation_list(db, run_id, &g, &ng, err);
    if (s)
        return s;
    cJSON *a = cJSON_CreateArray();
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++) {
        double tin = 0, tout = 0, lat = 0;
        int kept = 0, failed = 0;
        for (int k = 0; k < ng; k++) {
            if (strcmp(g[k].generator, gens[i].name) != 0)
                continue;
            kept++;
            tin += g[k].tokens_in > 0 ? (double)g[k].tokens_in : 0;
            tout += g[k].tokens_out > 0 ? (double)g[k].tokens_out : 0;
            lat += isfinite(g[k].latency_s) ? g[k].latency_s : 0;
            failed += g[k].error != NULL;
        }
        double none = NAN;
        cJSON *o = cJSON_CreateObject();
        cJSON *opts = cJSON_Parse(gens[i].options); /* a JSON object: kevo_db_run_generators_get checked it */
        ok = o && opts && cJSON_AddItemToArray(a, o);
        if (!ok) {
            cJSON_Delete(o);
            cJSON_Delete(opts);
            break;
        }
        ok = cJSON_AddStringToObject(o, "name", gens[i].name) && cJSON_AddItemToObject(o, "options", opts);
        if (!ok) {
            cJSON_Delete(opts);
            break;
        }
        ok = cJSON_AddNumberToObject(o, "calls", (double)gens[i].calls) &&
             rp_add_num(o, "failed", kept ? failed : none) && rp_add_num(o, "tokens_in", kept ? tin : none) &&
             rp_add_num(o, "tokens_out", kept ? tout : none) && rp_add_num(o, "latency_s", kept ? lat : none);
    }
    kevo_generation_rows_free(g, ng);
    if (!ok) {
        cJSON_Delete(a);
        return rp_nomem(err);
    }
    *out = a;
    return KEVO_OK;
}

/* The "devices" array of a run: each GPU that evaluated it (run_devices),
 * its ceilings and its throughput over the search loop (null until the
 * loop ended); its peers are in the run's "peers" by device. */
static kevo_status rp_devices_json(kevo_db *db, int64_t run_id, cJSON **out, kevo_err *err)
{
    *out = NULL;
    kevo_run_device *v = NULL;
    int n = 0;
    kevo_status s = kevo_db_run_devices_get(db, run_id, &v, &n, err);
    if (s)
        return s;
    cJSON *a = cJSON_CreateArray();
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(a, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        double per_min, busy;
        kevo_run_device_rate(&v[i], &per_min, &busy);
        ok = cJSON_AddNumberToObject(o, "idx", v[i].idx) && cJSON_AddNumberToObject(o, "ordinal", v[i].ordinal) &&
             rp_add_str_opt(o, "host", v[i].host) && rp_add_str_opt(o, "name", v[i].name) &&
             rp_add_str_opt(o, "pci_bus", v[i].pci_bus) && cJSON_AddNumberToObject(o, "sm_count", v[i].sm_count) &&
             rp_add_num(o, "peak_tflops", v[i].peak_tflops) && rp_add_num(o, "copy_tbps", v[i].copy_tbps) &&
             cJSON_AddNumberToObject(o, "evaluated", v[i].evaluated) && rp_add_num(o, "busy_s", v[i].busy_s) &&
             rp_add_num(o, "loop_s", v[i].loop_s) && rp_add_num(o, "per_minute", per_min) &&
             rp_add_num(o, "busy_fraction", busy);
    }
    free(v);
    if (!ok) {
        cJSON_Delete(a);
        return rp_nomem(err);
    }
    *out = a;
    return KEVO_OK;
}

/* ---- peers ---- */

/* The "peers" array of a run: every run_peers row (shape, device, name,
 * label, status, figures, the candidate an AFTER peer ran, detail, and a
 * VENDOR peer's config as its JSON text), and *best the fastest OK peer
 * of the op at shape 0 on device 0 ({"peer", "median_ms"} or null). */
static kevo_status rp_peers_json(kevo_db *db, int64_t run_id, const kevo_op *op, cJSON **out, cJSON **best,
                                 kevo_err *err)
{
    *out = *best = NULL;
    kevo_peer_row *v = NULL;
    int n = 0;
    kevo_status s = kevo_db_peers_list(db, run_id, &v, &n, err);
    if (s)
        return s;
    cJSON *a = cJSON_CreateArray();
    bool ok = a != NULL;
    for (int i = 0; ok && i < n; i++) {
        const kevo_peer_fig *f = &v[i].fig;
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(a, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddNumberToObject(o, "shape_idx", v[i].shape_idx) &&
             cJSON_AddNumberToObject(o, "device", v[i].device) && cJSON_AddStringToObject(o, "peer", v[i].peer) &&
             cJSON_AddStringToObject(o, "label", rp_peer_label(op, v[i].peer)) &&
             cJSON_AddStringToObject(o, "status", kevo_peer_state_name(f->state)) &&
             rp_add_num(o, "median_ms", f->median_ms) && rp_add_num(o, "ci_lo_ms", f->ci_lo_ms) &&
             rp_add_num(o, "ci_hi_ms", f->ci_hi_ms) && rp_add_num(o, "rel_err", f->rel_err) &&
             rp_add_num(o, "candidate", f->cand_id > 0 ? (double)f->cand_id : NAN) &&
             rp_add_str_opt(o, "detail", f->detail) && rp_add_str_opt(o, "config", f->config);
    }
    kevo_peer_set ps;
    kevo_peer_rows_set(op, v, n, 0, 0, &ps);
    free(v);
    double ms = NAN;
    int b = ok ? kevo_peer_best(op, &ps, &ms) : -1;
    if (ok && b >= 0) {
        ok = (*best = cJSON_CreateObject()) && cJSON_AddStringToObject(*best, "peer", op->peers[b].name) &&
             cJSON_AddNumberToObject(*best, "median_ms", ms);
    } else if (ok) {
        ok = (*best = cJSON_CreateNull()) != NULL;
    }
    if (!ok) {
        cJSON_Delete(a);
        cJSON_Delete(*best);
        *best = NULL;
        return rp_nomem(err);
    }
    *out = a;
    return KEVO_OK;
}

/* The run's paired figure (rp_paired) into o as "paired_peer":
 * {"candidate_id", "peer", "rounds", "ratio", "ci_lo", "ci_hi"}, or
 * {"error": why} for a stored row that is not valid; nothing when none is
 * stored (the report of a run without one is as it was). */
static kevo_status rp_paired_json(kevo_db *db, int64_t run_id, cJSON *o, kevo_err *err)
{
    kevo_paired_row p;
    bool have = false;
    char why[512];
    kevo_status s = rp_paired(db, run_id, &p, &have, why, sizeof why, err);
    if (s || (!have && !why[0]))
        return s;
    cJSON *j = cJSON_CreateObject();
    bool ok = j && cJSON_AddItemToObject(o, "paired_peer", j);
    if (!ok)
        cJSON_Delete(j);
    if (ok && !have)
        ok = cJSON_AddStringToObject(j, "error", why) != NULL;
    else if (ok)
        ok = cJSON_AddNumberToObject(j, "candidate_id", (double)p.cand_id) &&
             cJSON_AddStringToObject(j, "peer", p.peer) && cJSON_AddNumberToObject(j, "rounds", p.rounds) &&
             rp_add_num(j, "ratio", p.ratio) && rp_add_num(j, "ci_lo", p.ci_lo) && rp_add_num(j, "ci_hi", p.ci_hi);
    return ok ? KEVO_OK : rp_nomem(err);
}

/* The JSON object of one run in *out. */
static kevo_status rp_run_json(kevo_db *db, int64_t run_id, cJSON **out, kevo_err *err)
{
    *out = NULL;
    kevo_run_row r;
    int evaluated = 0, compiled = 0, failed = 0, verified = 0;
    kevo_status s = rp_run_load(db, run_id, &r, &evaluated, &compiled, &failed, &verified, err);
    if (s)
        return s;
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    ok = ok && cJSON_AddNumberToObject(o, "id", (double)r.id);
    ok = ok && cJSON_AddStringToObject(o, "op", r.op);
    ok = ok && cJSON_AddStringToObject(o, "shape", r.shape);
    ok = ok && cJSON_AddStringToObject(o, "dtype", r.dtype);
    ok = ok && cJSON_AddStringToObject(o, "arch", r.arch);
    ok = ok && rp_add_str_opt(o, "device", r.device);
    ok = ok && cJSON_AddStringToObject(o, "policy", r.policy);
    ok = ok && cJSON_AddStringToObject(o, "status", r.status);
    ok = ok && rp_add_str_opt(o, "stop_reason", r.stop_reason);
    ok = ok && cJSON_AddBoolToObject(o, "compile_only", r.compile_only);
    ok = ok && cJSON_AddNumberToObject(o, "evaluated", evaluated);
    ok = ok && cJSON_AddNumberToObject(o, "failed", failed);
    ok = ok && cJSON_AddNumberToObject(o, "compiled", compiled);
    ok = ok && cJSON_AddNumberToObject(o, "verified", verified);
    /* a compile-only run timed nothing: no peers, no ceilings */
    double none = NAN;
    ok = ok && rp_add_num(o, "peak_tflops", r.compile_only ? none : r.peak_tflops);
    ok = ok && rp_add_num(o, "copy_tbps", r.compile_only ? none : r.copy_tbps);
    if (!ok) {
        cJSON_Delete(o);
        return rp_nomem(err);
    }
    cJSON *best = NULL, *cands = NULL, *gj = NULL, *devs = NULL, *peers = NULL, *best_peer = NULL;
    kevo_run_gen_row *gens = NULL;
    int ngens = 0;
    if ((s = kevo_report_gens(db, run_id, &gens, &ngens, err))) {
        cJSON_Delete(o);
        return s;
    }
    /* a compile-only run timed nothing: whatever peer rows it has (a crafted DB) are not its */
    if (!(s = rp_peers_json(db, r.compile_only ? 0 : run_id, kevo_op_find(r.op), &peers, &best_peer, err)) &&
        !cJSON_AddItemToObject(o, "peers", peers)) {
        cJSON_Delete(peers);
        cJSON_Delete(best_peer);
        best_peer = NULL;
        s = rp_nomem(err);
    }
    if (!s && !cJSON_AddItemToObject(o, "best_peer", best_peer)) {
        cJSON_Delete(best_peer);
        s = rp_nomem(err);
    }
    if (!s && !r.compile_only)
        s = rp_paired_json(db, run_id, o, err);
    if (!s && !(s = rp_devices_json(db, run_id, &devs, err)) && !cJSON_AddItemToObject(o, "devices", devs)) {
        cJSON_Delete(devs);
        s = rp_nomem(err);
    }
    if (!s)
        s = rp_best_json(db, run_id, gens, ngens, &best, err);
    if (!s && !cJSON_AddItemToObject(o, "best", best)) {
        cJSON_Delete(best);
        s = rp_nomem(err);
    }
    if (!s && !(s = rp_gens_json(db, run_id, gens, ngens, &gj, err)) &&
        !cJSON_AddItemToObject(o, "generators", gj)) {
        cJSON_Delete(gj);
        s = rp_nomem(err);
    }
    if (!s && !(s = rp_cands_json(db, run_id, gens, ngens, &cands, err)) &&
        !cJSON_AddItemToObject(o, "candidates", cands)) {
        cJSON_Delete(cands);
        s = rp_nomem(err);
    }
    kevo_run_gen_rows_free(gens, ngens);
    if (s) {
        cJSON_Delete(o);
        return s;
    }
    *out = o;
    return KEVO_OK;
}

/* Add an int, or null where it is unknown (-1). */
static bool rp_add_int_opt(cJSON *o, const char *key, int v)
{
    return v < 0 ? cJSON_AddNullToObject(o, key) != NULL : cJSON_AddNumberToObject(o, key, v) != NULL;
}

/* One candidate of an arch section: its run, family, params and ptxas
 * figures, and, the best of a measured run, its time; false when out of
 * memory. */
static bool rp_arch_kernel_json(cJSON *a, const kevo_cand_row *c, int64_t run_id, bool best)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(a, o)) {
        cJSON_Delete(o);
        return false;
    }
    cJSON *params = c->params ? cJSON_Parse(c->params) : NULL;
    if (!params)
        params = cJSON_CreateString(c->params ? c->params : "");
    if (!params || !cJSON_AddItemToObject(o, "params", params)) {
        cJSON_Delete(params);
        return false;
    }
    return cJSON_AddNumberToObject(o, "run", (double)run_id) &&
           cJSON_AddNumberToObject(o, "candidate_id", (double)c->id) &&
           cJSON_AddStringToObject(o, "family", c->family) && cJSON_AddStringToObject(o, "status", c->status) &&
           cJSON_AddBoolToObject(o, "best", best) && rp_add_int_opt(o, "regs", c->regs) &&
           rp_add_int_opt(o, "spill_bytes", c->spill_bytes) && rp_add_int_opt(o, "smem_static", c->smem_static) &&
           rp_add_int_opt(o, "smem_dynamic", c->smem_dynamic) && rp_add_num(o, "median_ms", best ? c->median_ms : NAN);
}

/* The "archs" array of the runs ids[0..n) in *out: per arch its runs, their
 * candidates' counts and the ptxas figures of the candidates rp_arch_pick
 * picks ("kernels"). */
static kevo_status rp_archs_json(kevo_db *db, const int64_t *ids, int n, cJSON **out, kevo_err *err)
{
    *out = NULL;
    rp_arch *a = NULL;
    int na = 0;
    kevo_status s = rp_archs(db, ids, n, &a, &na, err);
    if (s)
        return s;
    cJSON *arr = cJSON_CreateArray();
    bool ok = arr != NULL;
    for (int i = 0; ok && !s && i < na; i++) {
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        cJSON *runs = cJSON_AddArrayToObject(o, "runs"), *kernels = NULL;
        ok = cJSON_AddStringToObject(o, "arch", a[i].arch) && runs;
        for (int k = 0; ok && k < a[i].nruns; k++)
            ok = cJSON_AddItemToArray(runs, cJSON_CreateNumber((double)a[i].runs[k]));
        ok = ok && cJSON_AddNumberToObject(o, "evaluated", a[i].evaluated) &&
             cJSON_AddNumberToObject(o, "compiled", a[i].compiled) &&
             cJSON_AddNumberToObject(o, "failed", a[i].failed) &&
             cJSON_AddNumberToObject(o, "verified", a[i].verified) &&
             (kernels = cJSON_AddArrayToObject(o, "kernels")) != NULL;
        for (int k = 0; ok && !s && k < a[i].nruns; k++) {
            kevo_run_row r;
            kevo_cand_row *rows = NULL;
            int nr = 0, pick[RP_ARCH_FIRST], np = 0;
            if ((s = rp_arch_pick(db, a[i].runs[k], &r, &rows, &nr, pick, &np, err)))
                break;
            for (int j = 0; ok && j < np; j++)
                ok = rp_arch_kernel_json(kernels, &rows[pick[j]], r.id, !r.compile_only);
            kevo_cand_rows_free(rows, nr);
        }
    }
    rp_archs_free(a, na);
    if (!s && !ok)
        s = rp_nomem(err);
    if (s) {
        cJSON_Delete(arr);
        return s;
    }
    *out = arr;
    return KEVO_OK;
}

kevo_status kevo_report_json(kevo_db *db, int64_t run_id, kv_buf *out, kevo_err *err)
{
    int64_t *ids = NULL;
    int n = 0;
    kevo_status s = rp_run_ids(db, run_id, &ids, &n, err);
    if (s)
        return s;
    cJSON *root = cJSON_CreateObject();
    cJSON *runs = root ? cJSON_AddArrayToObject(root, "runs") : NULL;
    if (!runs)
        s = rp_nomem(err);
    for (int i = 0; s == KEVO_OK && i < n; i++) {
        cJSON *run = NULL;
        s = rp_run_json(db, ids[i], &run, err);
        if (!s && !cJSON_AddItemToArray(runs, run)) {
            cJSON_Delete(run);
            s = rp_nomem(err);
        }
    }
    cJSON *archs = NULL;
    if (s == KEVO_OK && !(s = rp_archs_json(db, ids, n, &archs, err)) && !cJSON_AddItemToObject(root, "archs", archs)) {
        cJSON_Delete(archs);
        s = rp_nomem(err);
    }
    free(ids);
    char *text = NULL;
    if (s == KEVO_OK && !(text = cJSON_Print(root)))
        s = rp_nomem(err);
    cJSON_Delete(root);
    if (s == KEVO_OK && kv_buf_printf(out, "%s\n", text))
        s = rp_nomem(err);
    free(text);
    return s;
}
