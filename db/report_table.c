/* report_table.c — a run as an aligned text table, read from the store alone:
 * the header, the peers, the ranked candidates, the distribution and device
 * sections, and the best by architecture. */
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

/* The run's best against its fastest peer in the same rounds (the settle
 * step's paired figure), one line, when it is stored: "#5 against beta1
 * in the same rounds: 1.14x [1.12x, 1.16x] (60 rounds, paired)"; a stored
 * figure that is not valid is said as not shown, with why. */
static kevo_status rp_paired_line(kevo_db *db, int64_t run_id, kv_buf *b, kevo_err *err)
{
    kevo_paired_row p;
    bool have = false;
    char why[512];
    kevo_status s = rp_paired(db, run_id, &p, &have, why, sizeof why, err);
    if (s)
        return s;
    if (have)
        s = kv_buf_printf(b, "#%lld against %s in the same rounds: %.2fx [%.2fx, %.2fx] (%d rounds, paired)\n",
                          (long long)p.cand_id, p.peer, p.ratio, p.ci_lo, p.ci_hi, p.rounds);
    else if (why[0])
        s = kv_buf_printf(b, "the paired figure against a peer is not shown: %s\n", why);
    return s ? rp_nomem(err) : KEVO_OK;
}

/* One run's header and candidate table appended to b. */
static kevo_status rp_run_table(kevo_db *db, int64_t run_id, int top, kv_buf *b, kevo_err *err)
{
    kevo_run_row r;
    int evaluated = 0, compiled = 0, failed = 0, verified = 0;
    kevo_status s = rp_run_load(db, run_id, &r, &evaluated, &compiled, &failed, &verified, err);
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
    if (!r.compile_only && r.nshapes == 0 && (s = rp_paired_line(db, run_id, b, err))) {
        kevo_cand_rows_free(rows, n);
        return s;
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
