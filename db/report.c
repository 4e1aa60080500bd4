/* report.c — a run as JSON (cJSON) or as an aligned text table, read from
 * the store alone.  Output is built whole and appended to the caller's
 * buffer only on success. */
#define _POSIX_C_SOURCE 200809L
#include "db/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

static kevo_status rp_nomem(kevo_err *err)
{
    return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory building the report");
}

/* The runs to report: every run for run_id 0, else the one (which must
 * exist).  *ids is malloc'd. */
static kevo_status rp_run_ids(kevo_db *db, int64_t run_id, int64_t **ids, int *n, kevo_err *err)
{
    if (run_id == 0)
        return kevo_db_run_ids(db, ids, n, err);
    kevo_run_row r;
    kevo_status s = kevo_db_run_get(db, run_id, &r, err);
    if (s)
        return s;
    *ids = malloc(sizeof **ids);
    if (!*ids)
        return rp_nomem(err);
    (*ids)[0] = run_id;
    *n = 1;
    return KEVO_OK;
}

/* ---- by architecture ---- */

#define RP_ARCH_FIRST 5 /* a compile-only run's first compiled candidates an arch section shows */

/* The runs of one architecture and their candidates' counts. */
typedef struct rp_arch {
    char arch[16];
    int64_t *runs; /* malloc'd, in id order */
    int nruns;
    int evaluated, compiled, failed, verified;
} rp_arch;

static void rp_archs_free(rp_arch *a, int n)
{
    for (int i = 0; a && i < n; i++)
        free(a[i].runs);
    free(a);
}

/* The runs ids[0..n) grouped by arch, the archs in the order of their first
 * run; *out malloc'd (rp_archs_free). */
static kevo_status rp_archs(kevo_db *db, const int64_t *ids, int n, rp_arch **out, int *nout, kevo_err *err)
{
    *out = NULL;
    *nout = 0;
    rp_arch *a = calloc((size_t)n + 1, sizeof *a);
    int na = 0;
    if (!a)
        return rp_nomem(err);
    kevo_status s = KEVO_OK;
    for (int i = 0; i < n && !s; i++) {
        kevo_run_row r;
        int ev = 0, co = 0, fa = 0, ve = 0;
        if ((s = kevo_db_run_get(db, ids[i], &r, err)) || (s = kevo_db_run_counts(db, ids[i], &ev, &co, &fa, &ve, err)))
            break;
        int k = 0;
        while (k < na && strcmp(a[k].arch, r.arch) != 0)
            k++;
        if (k == na)
            snprintf(a[na++].arch, sizeof a[0].arch, "%s", r.arch);
        int64_t *runs = realloc(a[k].runs, ((size_t)a[k].nruns + 1) * sizeof *runs);
        if (!runs) {
            s = rp_nomem(err);
            break;
        }
        a[k].runs = runs;
        a[k].runs[a[k].nruns++] = ids[i];
        a[k].evaluated += ev;
        a[k].compiled += co;
        a[k].failed += fa;
        a[k].verified += ve;
    }
    if (s) {
        rp_archs_free(a, na);
        return s;
    }
    *out = a;
    *nout = na;
    return KEVO_OK;
}

/* Run run_id (into *r) and the candidates of it whose ptxas figures an arch
 * section shows, as indexes into its candidate list (*rows, seq order,
 * kevo_cand_rows_free):
 * a compile-only run's first RP_ARCH_FIRST compiled ones, another run's
 * best (kevo_db_cand_best), if any.  pick[] holds RP_ARCH_FIRST. */
static kevo_status rp_arch_pick(kevo_db *db, int64_t run_id, kevo_run_row *r, kevo_cand_row **rows, int *n,
                                int *pick, int *npick, kevo_err *err)
{
    *npick = 0;
    *rows = NULL;
    *n = 0;
    kevo_status s = kevo_db_run_get(db, run_id, r, err);
    if (!s)
        s = kevo_db_cand_list(db, r->id, rows, n, err);
    if (s)
        return s;
    int64_t best = 0;
    if (!r->compile_only) {
        kevo_cand_row b;
        s = kevo_db_cand_best(db, r->id, &b, err);
        if (s == KEVO_ERR_NOT_FOUND) {
            kevo_err_clear(err);
            s = KEVO_OK;
        } else if (!s) {
            best = b.id;
            kevo_cand_row_release(&b);
        }
    }
    for (int i = 0; i < *n && !s && *npick < RP_ARCH_FIRST; i++)
        if (r->compile_only ? strcmp((*rows)[i].status, "compiled") == 0 : (*rows)[i].id == best)
            pick[(*npick)++] = i;
    if (s) {
        kevo_cand_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
    }
    return s;
}

/* ---- JSON ---- */

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

const char *kevo_report_generator(const char *family, const kevo_run_gen_row *gens, int n)
{
    for (int i = 0; family && i < n; i++) {
        size_t len = strlen(gens[i].name);
        if (len == 0 || strncmp(family, gens[i].name, len) != 0 || family[len] != '_')
            continue;
        const char *t = family + len + 1;
        size_t hex = strspn(t, "0123456789abcdef");
        if ((hex == 12 && t[12] == '\0') ||
            (strncmp(t, "call", 4) == 0 && t[4] && strspn(t + 4, "0123456789") == strlen(t + 4)))
            return gens[i].name;
    }
    return "template";
}

kevo_status kevo_report_gens(kevo_db *db, int64_t run_id, kevo_run_gen_row **gens, int *n, kevo_err *err)
{
    kevo_status s = kevo_db_run_generators_get(db, run_id, gens, n, err);
    if (s == KEVO_ERR_NOT_FOUND) {
        kevo_err_clear(err);
        return KEVO_OK;
    }
    return s;
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

/* How report names a peer row: its op's label, or a note for a name the op
 * does not declare (a DB of an older kevo: "decomposed_unaligned"). */
static const char *rp_peer_label(const kevo_op *op, const char *name)
{
    int i = kevo_op_peer_index(op, name);
    return i >= 0 ? op->peers[i].label : "not a peer of this kevo's op (an older kevo measured it)";
}

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

/* The JSON object of one run in *out. */
static kevo_status rp_run_json(kevo_db *db, int64_t run_id, cJSON **out, kevo_err *err)
{
    *out = NULL;
    kevo_run_row r;
    int evaluated = 0, compiled = 0, failed = 0, verified = 0;
    kevo_status s = kevo_db_run_get(db, run_id, &r, err);
    if (!s)
        s = kevo_db_run_counts(db, run_id, &evaluated, &compiled, &failed, &verified, err);
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

/* ---- table ---- */

enum { RP_RANK, RP_ID, RP_FAMILY, RP_PARAMS, RP_STATUS, RP_MS, RP_CI, RP_SPEEDUP, RP_PEER, RP_TFLOPS, RP_ROOF,
       RP_RELERR, RP_REGS, RP_SPILL, RP_SMEM, RP_TIE, RP_FAIL, RP_NCOLS };

static const char *const rp_heads[RP_NCOLS] = {
    "rank",    "id",   "family",  "params", "status", "ms",    "95% CI", "speedup", "vs_peer",
    "TFLOP/s", "roof", "rel_err", "regs",   "spill",  "smem(KB)", "winner", "fail"};
/* numbers are right-aligned, text left-aligned */
static const bool rp_right[RP_NCOLS] = {true, true, false, false, false, true, true,  true, true,
                                        true, true, true,  true,  true,  true, false, false};

/* malloc'd printf; NULL when out of memory. */
static char *rp_strf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *rp_strf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : malloc((size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

/* A number with a printf format, or "-" when not measured. */
static char *rp_num(const char *fmt, double v)
{
    if (!isfinite(v))
        return kv_strdup("-");
    return rp_strf(fmt, v);
}

/* An int where -1 is unknown. */
static char *rp_int(int v)
{
    return v < 0 ? kv_strdup("-") : rp_strf("%d", v);
}

/* Params JSON as "BM=128 BN=256 ..." in stored key order; the raw text
 * when it is not a JSON object.  malloc'd, NULL when out of memory. */
static char *rp_params_compact(const char *json)
{
    if (!json || !*json)
        return kv_strdup("-");
    cJSON *o = cJSON_Parse(json);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kv_strdup(json);
    }
    kv_buf b;
    kv_buf_init(&b);
    kevo_status s = kv_buf_puts(&b, "");
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        if (s)
            break;
        if (b.len)
            s = kv_buf_puts(&b, " ");
        if (!s)
            s = kv_buf_printf(&b, "%s=", it->string ? it->string : "");
        if (s)
            break;
        if (cJSON_IsNumber(it)) {
            double v = it->valuedouble;
            if (!isfinite(v)) /* 1e999 parses as inf: print what JSON would */
                s = kv_buf_puts(&b, "null");
            else if (v == floor(v) && fabs(v) < 1e15)
                s = kv_buf_printf(&b, "%.0f", v);
            else
                s = kv_buf_printf(&b, "%.6g", v);
        } else if (cJSON_IsString(it)) {
            s = kv_buf_puts(&b, it->valuestring);
        } else if (cJSON_IsBool(it)) {
            s = kv_buf_puts(&b, cJSON_IsTrue(it) ? "true" : "false");
        } else if (cJSON_IsNull(it)) {
            s = kv_buf_puts(&b, "null");
        } else {
            char *t = cJSON_PrintUnformatted(it);
            s = t ? kv_buf_puts(&b, t) : KEVO_ERR_NOMEM;
            free(t);
        }
    }
    cJSON_Delete(o);
    if (s) {
        kv_buf_release(&b);
        return NULL;
    }
    if (b.len == 0) {
        kv_buf_release(&b);
        return kv_strdup("-");
    }
    return kv_buf_take(&b);
}

/* The fail cell: kind and the first 40 bytes of the message (cut on a
 * UTF-8 character boundary). */
static char *rp_fail_cell(const kevo_cand_row *c)
{
    const char *kind = c->fail[0] ? c->fail : (strcmp(c->status, "failed") == 0 ? "failed" : NULL);
    if (!kind)
        return kv_strdup("-");
    if (!c->fail_msg || !*c->fail_msg)
        return kv_strdup(kind);
    size_t n = strlen(c->fail_msg);
    if (n > 40) {
        n = 40;
        while (n > 0 && ((unsigned char)c->fail_msg[n] & 0xC0) == 0x80)
            n--;
    }
    return rp_strf("%s: %.*s", kind, (int)n, c->fail_msg);
}

/* 0: verified with a speedup (ranked), 1: neither ranked nor failed,
 * 2: failed. */
static int rp_class(const kevo_cand_row *c)
{
    if (c->fail[0] || strcmp(c->status, "failed") == 0)
        return 2;
    if (strcmp(c->status, "ok") == 0 && !isnan(c->speedup))
        return 0;
    return 1;
}

static int64_t rp_best_id; /* the run being sorted's winner (qsort has no context) */

/* Best first: the run's winner, then ranked rows by fitness (the speedup
 * when none; ties to lower median_ms, then id), then the rest, then failed
 * rows, each of those in seq order. */
static int rp_cmp_best(const void *pa, const void *pb)
{
    const kevo_cand_row *a = pa, *b = pb;
    int ca = rp_class(a), cb = rp_class(b);
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if (ca == 0 && (a->id == rp_best_id) != (b->id == rp_best_id))
        return a->id == rp_best_id ? -1 : 1;
    if (ca == 0 && !isnan(a->fitness) && !isnan(b->fitness) && a->fitness != b->fitness)
        return a->fitness > b->fitness ? -1 : 1;
    if (ca == 0) {
        if (a->speedup != b->speedup)
            return a->speedup > b->speedup ? -1 : 1;
        bool na = isnan(a->median_ms), nb = isnan(b->median_ms);
        if (na != nb)
            return na ? 1 : -1;
        if (!na && a->median_ms != b->median_ms)
            return a->median_ms < b->median_ms ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
    }
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Fill the RP_NCOLS cells of one candidate; false when out of memory. */
static bool rp_row_cells(const kevo_cand_row *c, int pos, bool compile_only, int64_t best_id, char **cell)
{
    bool ranked = rp_class(c) == 0;
    cell[RP_RANK] = (compile_only || ranked) ? rp_strf("%d", pos) : kv_strdup("-");
    cell[RP_ID] = rp_strf("%lld", (long long)c->id);
    cell[RP_FAMILY] = kv_strdup(c->family[0] ? c->family : "-");
    cell[RP_PARAMS] = rp_params_compact(c->params);
    cell[RP_STATUS] = kv_strdup(c->status[0] ? c->status : "-");
    cell[RP_MS] = compile_only ? kv_strdup("-") : rp_num("%.4f", c->median_ms);
    cell[RP_CI] = compile_only || !isfinite(c->ci_lo_ms) || !isfinite(c->ci_hi_ms)
                      ? kv_strdup("-")
                      : rp_strf("%.4f-%.4f", c->ci_lo_ms, c->ci_hi_ms);
    cell[RP_SPEEDUP] = compile_only ? kv_strdup("-") : rp_num("%.2fx", c->speedup);
    cell[RP_PEER] = compile_only ? kv_strdup("-") : rp_num("%.2fx", c->vs_peer);
    cell[RP_ROOF] = isfinite(c->roofline) ? rp_strf("%.0f%%", 100 * c->roofline) : kv_strdup("-");
    /* the winner of the paired re-timing; "tied" where it could not be told apart */
    cell[RP_TIE] = c->id == best_id ? kv_strdup(c->tied == 1 ? "best, tied" : "best")
                                    : kv_strdup(c->tied == 1 ? "tied" : "");
    cell[RP_TFLOPS] = rp_num("%.1f", c->tflops);
    cell[RP_RELERR] = rp_num("%.1e", c->rel_err);
    cell[RP_REGS] = rp_int(c->regs);
    cell[RP_SPILL] = rp_int(c->spill_bytes);
    if (c->smem_static < 0 && c->smem_dynamic < 0)
        cell[RP_SMEM] = kv_strdup("-");
    else
        cell[RP_SMEM] = rp_strf("%.1f", ((c->smem_static > 0 ? c->smem_static : 0) +
                                         (c->smem_dynamic > 0 ? c->smem_dynamic : 0)) / 1024.0);
    cell[RP_FAIL] = rp_fail_cell(c);
    bool ok = true;
    for (int j = 0; j < RP_NCOLS; j++) { /* DB text: one line, no escape sequences */
        ok = ok && cell[j];
        kv_term_clean(cell[j]);
    }
    return ok;
}

/* Append cells (ncols <= RP_NCOLS a row) as aligned lines (row 0 is the
 * heading), each column right-aligned where right[j]; two spaces between
 * columns, no trailing blanks. */
static kevo_status rp_emit_table(kv_buf *b, char **cells, int nrows, int ncols, const bool *right)
{
    size_t w[RP_NCOLS] = {0};
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < ncols; j++) {
            size_t n = strlen(cells[i * ncols + j]);
            if (n > w[j])
                w[j] = n;
        }
    kevo_status s = KEVO_OK;
    for (int i = 0; s == KEVO_OK && i < nrows; i++) {
        size_t start = b->len;
        for (int j = 0; s == KEVO_OK && j < ncols; j++) {
            const char *t = cells[i * ncols + j];
            int pad = (int)(w[j] - strlen(t));
            if (j)
                s = kv_buf_puts(b, "  ");
            if (!s)
                s = right[j] ? kv_buf_printf(b, "%*s%s", pad, "", t) : kv_buf_printf(b, "%s%*s", t, pad, "");
        }
        if (s)
            break;
        while (b->len > start && b->data[b->len - 1] == ' ')
            b->len--;
        s = kv_buf_puts(b, "\n");
    }
    return s;
}

/* The run's text fields made safe for a terminal (kv_term_clean), in place. */
static void rp_clean_run(kevo_run_row *r)
{
    char *text[] = {r->op,     r->shape,       r->dtype,  r->arch,   r->policy,    r->families,
                    r->status, r->stop_reason, r->device, r->filter, r->warm_start};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        kv_term_clean(text[i]);
}

/* The three header lines of a run (its text fields cleaned already). */
static kevo_status rp_run_header(kv_buf *b, const kevo_run_row *r, int evaluated, int compiled, int failed,
                                 int verified)
{
    kevo_status s = kv_buf_printf(b, "run %lld  %s  %s  %s  %s  policy %s  seed %lld  status %s", (long long)r->id,
                                  r->op, r->shape, r->dtype, r->arch, r->policy, (long long)r->seed, r->status);
    if (!s && r->stop_reason[0])
        s = kv_buf_printf(b, " (%s)", r->stop_reason);
    if (!s && r->compile_only)
        s = kv_buf_puts(b, "  compile-only");
    if (!s)
        s = kv_buf_puts(b, "\ndevice ");
    if (!s && r->device[0]) {
        s = kv_buf_puts(b, r->device);
        if (!s && (r->driver_version > 0 || r->sm_count > 0)) {
            s = kv_buf_puts(b, " (");
            if (!s && r->driver_version > 0)
                s = kv_buf_printf(b, "driver %d%s", r->driver_version, r->sm_count > 0 ? ", " : "");
            if (!s && r->sm_count > 0)
                s = kv_buf_printf(b, "%d SMs", r->sm_count);
            if (!s)
                s = kv_buf_puts(b, ")");
        }
    } else if (!s) {
        s = kv_buf_puts(b, "-");
    }
    if (!s && r->compile_only) /* it timed nothing: no baseline, no peak */
        return kv_buf_printf(b, "\ncandidates %d  compiled %d  verified %d  failed %d\n", evaluated, compiled,
                             verified, failed);
    if (!s)
        s = isfinite(r->peak_tflops) ? kv_buf_printf(b, "   peak %.0f TFLOP/s", r->peak_tflops)
                                     : kv_buf_puts(b, "   peak -");
    if (!s)
        s = kv_buf_printf(b, "\ncandidates %d  compiled %d  verified %d  failed %d\n", evaluated, compiled,
                          verified, failed);
    return s;
}

/* The peer lines of one shape on one GPU: each row's name, status,
 * median and interval, label and detail (DB text cleaned for the
 * terminal), the fastest OK peer of the op marked "best". */
static kevo_status rp_peer_lines(kv_buf *b, const kevo_op *op, const kevo_peer_row *v, int n, int shape_idx,
                                 int device, const char *indent)
{
    kevo_peer_set ps;
    kevo_peer_rows_set(op, v, n, shape_idx, device, &ps);
    int best = kevo_peer_best(op, &ps, NULL);
    for (int i = 0; i < n; i++) {
        if (v[i].shape_idx != shape_idx || v[i].device != device)
            continue;
        const kevo_peer_fig *f = &v[i].fig;
        char name[KEVO_PEER_NAME_MAX], detail[KEVO_PEER_DETAIL_MAX], fig[96];
        snprintf(name, sizeof name, "%s", v[i].peer);
        snprintf(detail, sizeof detail, "%s", f->detail);
        kv_term_clean(name);
        kv_term_clean(detail);
        if (f->state == KEVO_PEER_OK && isfinite(f->median_ms) && isfinite(f->ci_lo_ms) && isfinite(f->ci_hi_ms))
            snprintf(fig, sizeof fig, "%.4f ms [%.4f, %.4f]", f->median_ms, f->ci_lo_ms, f->ci_hi_ms);
        else if (f->state == KEVO_PEER_OK && isfinite(f->median_ms))
            snprintf(fig, sizeof fig, "%.4f ms", f->median_ms);
        else if (f->state == KEVO_PEER_OK) /* a DB's: kevo writes no such time */
            snprintf(fig, sizeof fig, "-");
        else
            snprintf(fig, sizeof fig, "%s", f->state == KEVO_PEER_FAILED ? "FAILED its check" : "did not run");
        int k = kevo_op_peer_index(op, v[i].peer);
        if (kv_buf_printf(b, "%s%-14s %-30s %s%s%s%s\n", indent, name, fig, rp_peer_label(op, v[i].peer),
                          detail[0] ? " | " : "", detail, k >= 0 && k == best ? "  <- best" : ""))
            return KEVO_ERR_NOMEM;
    }
    return KEVO_OK;
}

/* A figure in ms, or "-" when it was not measured. */
static void rp_ms(char *out, size_t len, double ms)
{
    if (isfinite(ms))
        snprintf(out, len, "%.4f ms", ms);
    else
        snprintf(out, len, "-");
}

/* A distribution run's shapes: each with its weight, its baseline, the
 * candidate fastest there and the verdict against its best peer, then its
 * peers (shape 0's are in the run's header).  Reads every verified
 * candidate's shape results once. */
static kevo_status rp_dist_section(kevo_db *db, const kevo_run_row *r, const kevo_cand_row *rows, int n, kv_buf *b,
                                   kevo_err *err)
{
    kevo_run_shape *shapes = NULL;
    kevo_peer_row *pv = NULL;
    int ns = 0, npv = 0;
    const kevo_op *op = kevo_op_find(r->op);
    kevo_status s = kevo_db_run_shapes_get(db, r->id, &shapes, &ns, err);
    if (!s && (s = kevo_db_peers_list(db, r->id, &pv, &npv, err)))
        free(shapes);
    if (s)
        return s;
    int64_t *best = calloc((size_t)ns + 1, sizeof *best);
    kevo_shape_result *br = calloc((size_t)ns + 1, sizeof *br);
    if (!best || !br) {
        s = rp_nomem(err);
        goto out;
    }
    for (int i = 0; i < n && !s; i++) {
        kevo_shape_result *v = NULL;
        int m = 0;
        if (strcmp(rows[i].status, "ok") != 0)
            continue;
        if ((s = kevo_db_shape_results_get(db, rows[i].id, &v, &m, err)))
            break;
        for (int k = 0; k < m; k++) {
            int j = v[k].shape_idx;
            if (j < 0 || j >= ns || shapes[j].idx != j || !(v[k].median_ms > 0) || !isfinite(v[k].median_ms))
                continue;
            if (!best[j] || v[k].median_ms < br[j].median_ms) {
                best[j] = rows[i].id;
                br[j] = v[k];
            }
        }
        free(v);
    }
    if (!s && kv_buf_printf(b, "distribution of %d shapes (fitness: the weighted geometric mean of vs_peer)\n", ns))
        s = rp_nomem(err);
    for (int j = 0; j < ns && !s; j++) {
        char shape[sizeof shapes[j].shape], base[32], line[160] = "", weight[32] = "-";
        char verdict[256] = "no kernel verified there";
        snprintf(shape, sizeof shape, "%s", shapes[j].shape);
        kv_term_clean(shape);
        kevo_peer_set ps;
        kevo_peer_rows_set(op, pv, npv, j, 0, &ps);
        rp_ms(base, sizeof base, kevo_peer_ok_ms(&ps, kevo_op_peer_baseline(op)));
        if (isfinite(shapes[j].weight))
            snprintf(weight, sizeof weight, "%g", shapes[j].weight);
        if (best[j]) {
            kevo_peer_verdict(op, br[j].vs_peer, &ps, verdict, sizeof verdict);
            snprintf(line, sizeof line, "fastest #%lld %.4f ms; ", (long long)best[j], br[j].median_ms);
        }
        if (kv_buf_printf(b, "  %s weight %s: baseline %s; %s%s\n", shape, weight, base, line, verdict) ||
            (j > 0 && rp_peer_lines(b, op, pv, npv, j, 0, "    ")))
            s = rp_nomem(err);
    }
out:
    free(best);
    free(br);
    free(shapes);
    free(pv);
    return s;
}

/* One line per GPU of a run that several evaluated: where it is, its
 * fastest checked peer (a distribution's are per shape), what it evaluated
 * (dist: evaluations of a candidate at a shape) and its throughput over
 * the search loop (device text from the DB cleaned for the terminal). */
static kevo_status rp_devices_lines(kevo_db *db, int64_t run_id, const kevo_op *op, bool dist, kv_buf *b,
                                    kevo_err *err)
{
    kevo_run_device *v = NULL;
    kevo_peer_row *pv = NULL;
    int n = 0, npv = 0;
    kevo_status s = kevo_db_run_devices_get(db, run_id, &v, &n, err);
    if (!s && n >= 2)
        s = kevo_db_peers_list(db, run_id, &pv, &npv, err);
    if (s || n < 2) {
        free(v);
        return s;
    }
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        kv_term_clean(v[i].host);
        kv_term_clean(v[i].name);
        kv_term_clean(v[i].pci_bus);
        char base[96] = "", rate[96] = "";
        double per_min, busy, ms = NAN;
        kevo_run_device_rate(&v[i], &per_min, &busy);
        kevo_peer_set ps;
        kevo_peer_rows_set(op, pv, npv, 0, v[i].idx, &ps);
        int bp = dist ? -1 : kevo_peer_best(op, &ps, &ms);
        if (bp >= 0)
            snprintf(base, sizeof base, "best peer %s %.3f ms; ", op->peers[bp].name, ms);
        if (isfinite(per_min))
            snprintf(rate, sizeof rate, ", %.1f per minute, busy %.0f%%", per_min, 100.0 * busy);
        ok = kv_buf_printf(b, "GPU %d (%s, %s, %s): %s%d %s%s\n", v[i].ordinal, v[i].name, v[i].host, v[i].pci_bus,
                           base, v[i].evaluated,
                           dist ? (v[i].evaluated == 1 ? "shape evaluation" : "shape evaluations")
                                : (v[i].evaluated == 1 ? "candidate" : "candidates"),
                           rate) == KEVO_OK;
    }
    free(v);
    free(pv);
    return ok ? KEVO_OK : rp_nomem(err);
}

/* One run's header and candidate table appended to b. */
static kevo_status rp_run_table(kevo_db *db, int64_t run_id, int top, kv_buf *b, kevo_err *err)
{
    kevo_run_row r;
    int evaluated = 0, compiled = 0, failed = 0, verified = 0;
    kevo_status s = kevo_db_run_get(db, run_id, &r, err);
    if (!s)
        s = kevo_db_run_counts(db, run_id, &evaluated, &compiled, &failed, &verified, err);
    if (s)
        return s;
    const kevo_op *op = kevo_op_find(r.op);
    rp_clean_run(&r);
    if (rp_run_header(b, &r, evaluated, compiled, failed, verified))
        return rp_nomem(err);
    kevo_peer_row *pv = NULL;
    int npv = 0;
    if (!r.compile_only && (s = kevo_db_peers_list(db, run_id, &pv, &npv, err)))
        return s;
    kevo_peer_set ps;
    kevo_peer_rows_set(op, pv, npv, 0, 0, &ps);
    bool peers_ok = npv == 0 || (kv_buf_printf(b, "peers%s (checked against the reference, timed beside the candidates):\n",
                                                r.nshapes > 0 ? " at the first shape" : "") == KEVO_OK &&
                                  rp_peer_lines(b, op, pv, npv, 0, 0, "  ") == KEVO_OK);
    free(pv);
    if (!peers_ok)
        return rp_nomem(err);
    if ((s = rp_devices_lines(db, run_id, op, r.nshapes > 0, b, err)))
        return s;

    kevo_cand_row *rows = NULL;
    int n = 0;
    s = kevo_db_cand_list(db, run_id, &rows, &n, err);
    if (s)
        return s;
    if (n == 0) {
        kevo_cand_rows_free(rows, n);
        return kv_buf_puts(b, "\nno candidates\n") ? rp_nomem(err) : KEVO_OK;
    }
    if (!r.compile_only) {
        rp_best_id = r.best_id;
        qsort(rows, (size_t)n, sizeof *rows, rp_cmp_best);
    }
    /* the verdict against the in-run peers, from the winner */
    if (!r.compile_only && kevo_peer_best(op, &ps, NULL) >= 0) {
        int k = 0;
        while (k < n && rp_class(&rows[k]) != 0)
            k++;
        char verdict[320];
        if (k < n)
            kevo_peer_verdict(op, rows[k].vs_peer, &ps, verdict, sizeof verdict);
        else
            snprintf(verdict, sizeof verdict, "no kernel verified at this shape: nothing beats the peers");
        if (kv_buf_printf(b, "%s\n", verdict)) {
            kevo_cand_rows_free(rows, n);
            return rp_nomem(err);
        }
    }
    if (!r.compile_only && r.nshapes > 0) {
        kevo_status s2 = rp_dist_section(db, &r, rows, n, b, err);
        if (s2) {
            kevo_cand_rows_free(rows, n);
            return s2;
        }
    }
    int shown = (top > 0 && top < n) ? top : n;
    char **cells = calloc((size_t)(shown + 1) * RP_NCOLS, sizeof *cells);
    bool ok = cells != NULL;
    for (int j = 0; ok && j < RP_NCOLS; j++)
        ok = (cells[j] = kv_strdup(rp_heads[j])) != NULL;
    for (int i = 0; ok && i < shown; i++)
        ok = rp_row_cells(&rows[i], i + 1, r.compile_only, r.best_id, cells + (size_t)(i + 1) * RP_NCOLS);
    if (ok)
        ok = kv_buf_puts(b, "\n") == KEVO_OK && rp_emit_table(b, cells, shown + 1, RP_NCOLS, rp_right) == KEVO_OK;
    if (cells)
        for (int i = 0; i < (shown + 1) * RP_NCOLS; i++)
            free(cells[i]);
    free(cells);
    kevo_cand_rows_free(rows, n);
    return ok ? KEVO_OK : rp_nomem(err);
}

enum { RPA_RUN, RPA_ID, RPA_FAMILY, RPA_PARAMS, RPA_STATUS, RPA_REGS, RPA_SPILL, RPA_SMEM_S, RPA_SMEM_D, RPA_NCOLS };

static const char *const rpa_heads[RPA_NCOLS] = {"run",  "id",        "family",      "params",     "status",
                                                 "regs", "spill(B)",  "smem static(B)", "smem dynamic(B)"};
static const bool rpa_right[RPA_NCOLS] = {true, true, false, false, false, true, true, true, true};

/* The section "by architecture" of the runs ids[0..n) appended to b: per
 * arch a line with its runs and their candidates' counts, then the ptxas
 * figures of the candidates rp_arch_pick picks (each run's best; a
 * compile-only run's first compiled ones). */
static kevo_status rp_archs_table(kevo_db *db, const int64_t *ids, int n, kv_buf *b, kevo_err *err)
{
    rp_arch *a = NULL;
    int na = 0;
    kevo_status s = rp_archs(db, ids, n, &a, &na, err);
    if (s)
        return s;
    bool ok = kv_buf_puts(b, "\nby architecture (each run's best; a compile-only run's first compiled candidates)\n") ==
              KEVO_OK;
    for (int i = 0; ok && !s && i < na; i++) {
        kv_term_clean(a[i].arch);
        ok = kv_buf_printf(b, "\n%s: run%s", a[i].arch, a[i].nruns > 1 ? "s" : "") == KEVO_OK;
        for (int k = 0; ok && k < a[i].nruns; k++)
            ok = kv_buf_printf(b, "%s %lld", k ? "," : "", (long long)a[i].runs[k]) == KEVO_OK;
        ok = ok && kv_buf_printf(b, "  candidates %d  compiled %d  verified %d  failed %d\n", a[i].evaluated,
                                 a[i].compiled, a[i].verified, a[i].failed) == KEVO_OK;
        /* the picked candidates of every run of the arch, as one table */
        char **cells = NULL;
        int nrows = 1;
        ok = ok && (cells = calloc(RPA_NCOLS, sizeof *cells)) != NULL;
        for (int j = 0; ok && j < RPA_NCOLS; j++)
            ok = (cells[j] = kv_strdup(rpa_heads[j])) != NULL;
        for (int k = 0; ok && !s && k < a[i].nruns; k++) {
            kevo_run_row r;
            kevo_cand_row *rows = NULL;
            int nr = 0, pick[RP_ARCH_FIRST], np = 0;
            if ((s = rp_arch_pick(db, a[i].runs[k], &r, &rows, &nr, pick, &np, err)))
                break;
            char **more = np ? realloc(cells, (size_t)(nrows + np) * RPA_NCOLS * sizeof *cells) : cells;
            ok = more != NULL;
            if (ok)
                cells = more;
            for (int j = 0; ok && j < np; j++, nrows++) {
                const kevo_cand_row *c = &rows[pick[j]];
                char **row = cells + (size_t)nrows * RPA_NCOLS;
                row[RPA_RUN] = rp_strf("%lld", (long long)r.id);
                row[RPA_ID] = rp_strf("%lld", (long long)c->id);
                row[RPA_FAMILY] = kv_strdup(c->family[0] ? c->family : "-");
                row[RPA_PARAMS] = rp_params_compact(c->params);
                row[RPA_STATUS] = kv_strdup(c->status[0] ? c->status : "-");
                row[RPA_REGS] = rp_int(c->regs);
                row[RPA_SPILL] = rp_int(c->spill_bytes);
                row[RPA_SMEM_S] = rp_int(c->smem_static);
                row[RPA_SMEM_D] = rp_int(c->smem_dynamic);
                for (int q = 0; q < RPA_NCOLS; q++) { /* DB text: one line, no escape sequences */
                    ok = ok && row[q];
                    kv_term_clean(row[q]);
                }
            }
            kevo_cand_rows_free(rows, nr);
        }
        if (ok && !s)
            ok = nrows > 1 ? rp_emit_table(b, cells, nrows, RPA_NCOLS, rpa_right) == KEVO_OK
                           : kv_buf_puts(b, "no compiled candidate\n") == KEVO_OK;
        for (int j = 0; cells && j < nrows * RPA_NCOLS; j++)
            free(cells[j]);
        free(cells);
    }
    rp_archs_free(a, na);
    return s ? s : ok ? KEVO_OK : rp_nomem(err);
}

kevo_status kevo_report_table(kevo_db *db, int64_t run_id, int top, kv_buf *out, kevo_err *err)
{
    int64_t *ids = NULL;
    int n = 0;
    kevo_status s = rp_run_ids(db, run_id, &ids, &n, err);
    if (s)
        return s;
    kv_buf b;
    kv_buf_init(&b);
    if (n == 0 && kv_buf_puts(&b, "no runs\n"))
        s = rp_nomem(err);
    for (int i = 0; s == KEVO_OK && i < n; i++) {
        if (i && kv_buf_puts(&b, "\n")) {
            s = rp_nomem(err);
            break;
        }
        s = rp_run_table(db, ids[i], top, &b, err);
    }
    /* runs of more than one architecture: grouped by it, with their ptxas figures */
    bool archs = false;
    for (int i = 1; s == KEVO_OK && i < n && !archs; i++) {
        kevo_run_row r0, ri;
        if (!(s = kevo_db_run_get(db, ids[0], &r0, err)) && !(s = kevo_db_run_get(db, ids[i], &ri, err)))
            archs = strcmp(r0.arch, ri.arch) != 0;
    }
    if (s == KEVO_OK && archs)
        s = rp_archs_table(db, ids, n, &b, err);
    free(ids);
    if (s == KEVO_OK && b.len && kv_buf_append(out, b.data, b.len))
        s = rp_nomem(err);
    kv_buf_release(&b);
    return s;
}
