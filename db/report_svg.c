/* report_svg.c — the runs of a DB as a picture (SVG 1.1, no script):
 *   top: best speedup against evaluations, one line per run;
 *   bottom: one run's search tree, x = evaluation order, y = depth, nodes
 *   coloured by speedup (failures red, compile-only grey), edges by operator.
 * Every node carries a <title> with its params and result.  A figure that is
 * NaN or infinite is never drawn: such a node counts as not timed. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/report.h"

#define SV_W 960.0
#define SV_LEFT 70.0
#define SV_RIGHT 180.0 /* legend */
#define SV_TOP1 75.0
#define SV_H1 250.0
#define SV_TOP2 405.0
#define SV_H2 300.0

/* DB text (untrusted: any bytes) as XML character data or an attribute
 * value: &, <, >, " and ' escaped; only characters XML 1.0 allows and a
 * reader shows as text are kept: tab, printable ASCII and well-formed UTF-8
 * of U+00A0 and up, less U+FFFE and U+FFFF (no C0 or C1 control, no DEL,
 * no overlong form, no surrogate); anything else becomes '?'.  So no text
 * of a DB can open an element, an attribute, an entity or a CDATA section,
 * and the document stays well-formed whatever the DB holds. */
static void sv_text(kv_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (p && *p) {
        unsigned char c = *p;
        if (c < 0x80) {
            switch (c) {
            case '&': kv_buf_puts(b, "&amp;"); break;
            case '<': kv_buf_puts(b, "&lt;"); break;
            case '>': kv_buf_puts(b, "&gt;"); break;
            case '"': kv_buf_puts(b, "&quot;"); break;
            case '\'': kv_buf_puts(b, "&apos;"); break;
            default:
                if ((c >= 0x20 && c < 0x7f) || c == '\t')
                    kv_buf_append(b, p, 1);
                else if (c != '\r' && c != '\n')
                    kv_buf_puts(b, "?");
                else
                    kv_buf_puts(b, " ");
            }
            p++;
            continue;
        }
        size_t n = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        size_t k = 1;
        while (n && k < n && (p[k] & 0xC0) == 0x80)
            k++;
        bool ok = n && k == n && !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0) &&
                  !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90) &&
                  !(c == 0xC2 && p[1] < 0xA0) &&                       /* C1 controls */
                  !(c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)); /* U+FFFE, U+FFFF */
        if (ok) {
            kv_buf_append(b, p, n);
            p += n;
        } else {
            kv_buf_puts(b, "?");
            p += k > 0 ? k : 1; /* a stray byte, or the bytes of one ill-formed character */
        }
    }
}

/* A colour for t in [0, 1]: dark blue -> teal -> yellow (viridis-like). */
static void sv_color(double t, char out[8])
{
    static const double stops[3][3] = {{68, 1, 84}, {33, 145, 140}, {253, 231, 37}};
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    int i = t < 0.5 ? 0 : 1;
    double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    int rgb[3];
    for (int c = 0; c < 3; c++)
        rgb[c] = (int)(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * u + 0.5);
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

static const char *const sv_line_colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                             "#9467bd", "#8c564b", "#e377c2", "#17becf"};

/* Axis frame with ticks; y from 0 to ymax, x from 0 to xmax. */
static void sv_axes(kv_buf *b, double top, double h, double xmax, double ymax, const char *xlabel, const char *ylabel,
                    bool yticks)
{
    double w = SV_W - SV_LEFT - SV_RIGHT;
    kv_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n",
                  SV_LEFT, top, w, h);
    for (int i = 0; i <= 5; i++) {
        double x = SV_LEFT + w * i / 5.0;
        kv_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.0f</text>\n",
                      x, top + h, x, top + h + 4, x, top + h + 16, xmax * i / 5.0);
        if (yticks) {
            double y = top + h - h * i / 5.0;
            kv_buf_printf(b,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.2f</text>\n",
                          SV_LEFT, y, SV_LEFT + w, y, SV_LEFT - 4, y + 4, ymax * i / 5.0);
        }
    }
    kv_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">", SV_LEFT + w / 2,
                  top + h + 32);
    sv_text(b, xlabel);
    kv_buf_printf(b, "</text>\n<text x=\"16\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 16 %.1f)\">",
                  top + h / 2, top + h / 2);
    sv_text(b, ylabel);
    kv_buf_puts(b, "</text>\n");
}

/* One candidate of the tree at (x, y): a square when a generator made it
 * (made), else a circle, coloured by its speedup over best, red when it
 * failed; its title says what it is and became (DB text, escaped). */
static void sv_tree_node(kv_buf *b, const kevo_cand_row *r, double x, double y, bool made, double best)
{
    char fill[8];
    const char *stroke = "none";
    if (strcmp(r->status, "failed") == 0) {
        snprintf(fill, sizeof fill, "#e41a1c");
        stroke = "#000";
    } else if (isfinite(r->speedup) && best > 0) {
        sv_color(r->speedup / best, fill);
    } else {
        snprintf(fill, sizeof fill, "%s", strcmp(r->status, "pending") == 0 ? "#fff" : "#aaa");
        stroke = "#666";
    }
    if (made)
        kv_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\" stroke=\"%s\"><title>#%lld ",
                      x - 4, y - 4, fill, stroke, (long long)r->id);
    else
        kv_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\"><title>#%lld ", x, y,
                      fill, stroke, (long long)r->id);
    sv_text(b, r->family);
    kv_buf_puts(b, " ");
    sv_text(b, r->params);
    if (strcmp(r->status, "failed") == 0) {
        kv_buf_puts(b, ": ");
        sv_text(b, r->fail);
        kv_buf_puts(b, " ");
        sv_text(b, r->fail_msg ? r->fail_msg : "");
    } else if (isfinite(r->speedup) && isfinite(r->median_ms)) {
        kv_buf_printf(b, ": %.4f ms, %.2fx", r->median_ms, r->speedup);
    } else if (isfinite(r->speedup)) {
        kv_buf_printf(b, ": %.2fx", r->speedup);
    } else {
        kv_buf_puts(b, ": ");
        sv_text(b, r->status); /* DB text like every other string here */
    }
    kv_buf_puts(b, made ? "</title></rect>\n" : "</title></circle>\n");
}

/* The tree's legend at the right: the colour scale up to best, the marks
 * for failed and not timed, a crossover and a rewrite by `rewriter` (the
 * first generator that made one; a DB name, escaped). */
static void sv_tree_legend(kv_buf *b, double best, const char *rewriter)
{
    double lx = SV_W - SV_RIGHT + 20;
    kv_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">speedup</text>\n", lx, SV_TOP2 + 4);
    for (int i = 0; i <= 10; i++) {
        char c[8];
        sv_color(1.0 - i / 10.0, c);
        kv_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", lx,
                      SV_TOP2 + 12 + i * 14, c);
    }
    kv_buf_printf(b,
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.2fx</text>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">0</text>\n"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#e41a1c\" stroke=\"#000\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">failed</text>\n"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#aaa\" stroke=\"#666\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">not timed</text>\n"
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"3 2\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">crossover</text>\n",
                  lx + 20, SV_TOP2 + 23, best, lx + 20, SV_TOP2 + 163, lx + 7, SV_TOP2 + 190, lx + 20,
                  SV_TOP2 + 194, lx + 7, SV_TOP2 + 208, lx + 20, SV_TOP2 + 212, lx, SV_TOP2 + 226, lx + 14,
                  SV_TOP2 + 226, lx + 20, SV_TOP2 + 230);
    kv_buf_printf(b,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#377eb8\" stroke-width=\"1.5\"/>"
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"#aaa\" stroke=\"#666\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">",
                  lx, SV_TOP2 + 244, lx + 14, SV_TOP2 + 244, lx + 3, SV_TOP2 + 240, lx + 20, SV_TOP2 + 248);
    sv_text(b, rewriter ? rewriter : "generated"); /* a name of the DB's: escaped */
    kv_buf_puts(b, " rewrite</text>\n");
}

/* The tree of one run. */
static kevo_status sv_tree(kevo_db *db, const kevo_run_row *run, kv_buf *b, kevo_err *err)
{
    kevo_cand_row *rows = NULL;
    kevo_edge_row *edges = NULL;
    int n = 0, ne = 0;
    kevo_run_gen_row *gens = NULL;
    int ngens = 0;
    kevo_status st = kevo_db_cand_list(db, run->id, &rows, &n, err);
    if (!st)
        st = kevo_db_edge_list(db, run->id, &edges, &ne, err);
    if (!st)
        st = kevo_report_gens(db, run->id, &gens, &ngens, err);
    /* a candidate of a generated family (a generator's rewrite: kevo_report_generator) is a square on a blue
       edge; the legend names the generator of the first one */
    const char *rewriter = NULL;
    bool *made = calloc((size_t)(n ? n : 1), sizeof *made);
    for (int i = 0; made && i < n; i++) {
        const char *g = kevo_report_generator(rows[i].family, gens, ngens);
        made[i] = strcmp(g, "template") != 0;
        if (made[i] && !rewriter)
            rewriter = g;
    }
    int *depth = calloc((size_t)(n ? n : 1), sizeof *depth);
    int *parent = calloc((size_t)(n ? n : 1), sizeof *parent);
    if (!st && (!depth || !parent || !made))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    double best = 0;
    int maxdepth = 0;
    for (int i = 0; i < n && !st; i++) {
        parent[i] = -1;
        for (int k = 0; k < ne && parent[i] < 0; k++) {
            if (edges[k].child_id != rows[i].id)
                continue;
            for (int j = 0; j < i; j++)
                if (rows[j].id == edges[k].parent_id)
                    parent[i] = j;
        }
        depth[i] = parent[i] >= 0 ? depth[parent[i]] + 1 : 0;
        if (depth[i] > maxdepth)
            maxdepth = depth[i];
        if (isfinite(rows[i].speedup) && rows[i].speedup > best)
            best = rows[i].speedup;
    }
    if (!st) {
        double w = SV_W - SV_LEFT - SV_RIGHT;
        char title[1400];
        snprintf(title, sizeof title, "run %lld search tree: %s, policy %s (%d candidates)", (long long)run->id,
                 run->families, run->policy, n);
        kv_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">", SV_LEFT,
                      SV_TOP2 - 12);
        sv_text(b, title);
        kv_buf_puts(b, "</text>\n");
        sv_axes(b, SV_TOP2, SV_H2, n, maxdepth, "evaluation order", "depth in the tree", false);
        double xs = n > 1 ? (w - 20) / (n - 1) : 0, ys = maxdepth > 0 ? (SV_H2 - 20) / maxdepth : 0;
#define SV_X(i) (SV_LEFT + 10 + (i) * xs)
#define SV_Y(d) (SV_TOP2 + 10 + (d) * ys)
        kv_buf_puts(b, "<g stroke=\"#999\" stroke-width=\"0.8\">\n");
        for (int k = 0; k < ne; k++) {
            int c = -1, p = -1;
            for (int i = 0; i < n; i++) {
                if (rows[i].id == edges[k].child_id)
                    c = i;
                if (rows[i].id == edges[k].parent_id)
                    p = i;
            }
            if (c < 0 || p < 0)
                continue;
            kv_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"%s><title>", SV_X(p),
                          SV_Y(depth[p]), SV_X(c), SV_Y(depth[c]),
                          strcmp(edges[k].op, "crossover") == 0 ? " stroke-dasharray=\"3 2\""
                          : made[c]                             ? " stroke=\"#377eb8\" stroke-width=\"1.5\""
                                                                : "");
            sv_text(b, edges[k].op);
            kv_buf_puts(b, "</title></line>\n");
        }
        kv_buf_puts(b, "</g>\n");
        for (int i = 0; i < n; i++)
            sv_tree_node(b, &rows[i], SV_X(i), SV_Y(depth[i]), made[i], best);
#undef SV_X
#undef SV_Y
        sv_tree_legend(b, best, rewriter);
    }
    kevo_cand_rows_free(rows, n);
    kevo_run_gen_rows_free(gens, ngens);
    free(made);
    free(edges);
    free(depth);
    free(parent);
    return st;
}

kevo_status kevo_report_svg(kevo_db *db, int64_t run_id, kv_buf *out, kevo_err *err)
{
    int64_t *ids = NULL;
    int nids = 0;
    kevo_status st = kevo_db_run_ids(db, &ids, &nids, err);
    if (st)
        return st;
    if (nids == 0) {
        free(ids);
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "the database holds no run");
    }
    /* the curves: every run, or the one asked for */
    int64_t tree_run = run_id > 0 ? run_id : ids[nids - 1];
    kevo_run_row tr;
    if ((st = kevo_db_run_get(db, tree_run, &tr, err))) {
        free(ids);
        return st;
    }
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_printf(&b,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                  SV_W, SV_TOP2 + SV_H2 + 50, SV_W, SV_TOP2 + SV_H2 + 50);
    kv_buf head;
    kv_buf_init(&head);
    kv_buf_printf(&head, "kevo: %s %s %s %s", tr.op, tr.shape, tr.dtype, tr.device[0] ? tr.device : "(no device)");
    /* a compile-only run timed nothing: no baseline */
    if (tr.compile_only)
        kv_buf_puts(&head, ", compile-only");
    else {
        const kevo_op *op = kevo_op_find(tr.op);
        kevo_peer_set ps;
        kevo_err perr;
        double base = NAN;
        if (op && kevo_db_peers_get(db, tr.id, 0, 0, op, &ps, &perr) == KEVO_OK) /* a DB may name no known op */
            base = kevo_peer_ok_ms(&ps, kevo_op_peer_baseline(op));
        if (isfinite(base))
            kv_buf_printf(&head, ", stage-0 baseline %.3f ms", base);
        else
            kv_buf_puts(&head, ", no stage-0 baseline");
    }
    kv_buf_printf(&b, "<text x=\"%.1f\" y=\"22\" font-size=\"13\">", SV_LEFT);
    sv_text(&b, head.data);
    kv_buf_puts(&b, "</text>\n");
    kv_buf_release(&head);

    /* gather curves */
    double xmax = 1, ymax = 0;
    int ncurves = 0;
    struct {
        int64_t id;
        char label[128];
        int n;
        double *best;
    } curves[8];
    for (int r = 0; r < nids && !st; r++) {
        if (run_id > 0 && ids[r] != run_id)
            continue;
        kevo_run_row run;
        kevo_cand_row *rows = NULL;
        int n = 0;
        if ((st = kevo_db_run_get(db, ids[r], &run, err)) || (st = kevo_db_cand_list(db, ids[r], &rows, &n, err)))
            break;
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v), running = 0;
        int m = 0;
        for (int i = 0; v && i < n; i++) {
            if (strcmp(rows[i].status, "pending") == 0)
                continue;
            if (isfinite(rows[i].speedup) && rows[i].speedup > running) /* NaN, inf: not plotted */
                running = rows[i].speedup;
            v[m++] = running;
        }
        kevo_cand_rows_free(rows, n);
        if (!v || running <= 0 || ncurves == 8) { /* compile-only: no curve */
            free(v);
            continue;
        }
        curves[ncurves].id = run.id;
        curves[ncurves].n = m;
        curves[ncurves].best = v;
        snprintf(curves[ncurves].label, sizeof curves[ncurves].label, "run %lld %s (%d)", (long long)run.id,
                 run.policy, m);
        ncurves++;
        if (m > xmax)
            xmax = m;
        if (running > ymax)
            ymax = running;
    }
    if (!st) {
        ymax = ymax > 0 ? ceil(ymax * 1.1 * 2) / 2 : 1;
        kv_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">best speedup over the "
                          "stage-0 baseline against evaluations</text>\n",
                      SV_LEFT, SV_TOP1 - 8);
        sv_axes(&b, SV_TOP1, SV_H1, xmax, ymax, "candidates evaluated", "best speedup so far", true);
        double w = SV_W - SV_LEFT - SV_RIGHT;
        for (int c = 0; c < ncurves; c++) {
            const char *col = sv_line_colors[c % 8];
            kv_buf_printf(&b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", col);
            for (int i = 0; i < curves[c].n; i++)
                kv_buf_printf(&b, "%.1f,%.1f ", SV_LEFT + w * (i + 1) / xmax,
                              SV_TOP1 + SV_H1 - SV_H1 * curves[c].best[i] / ymax);
            kv_buf_puts(&b, "\"/>\n");
            kv_buf_printf(&b,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">",
                          SV_W - SV_RIGHT + 20, SV_TOP1 + 10 + 16 * c, SV_W - SV_RIGHT + 40, SV_TOP1 + 10 + 16 * c,
                          col, SV_W - SV_RIGHT + 46, SV_TOP1 + 14 + 16 * c);
            sv_text(&b, curves[c].label);
            kv_buf_puts(&b, "</text>\n");
        }
        if (ncurves == 0)
            kv_buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">no timed candidates (compile-only "
                              "runs)</text>\n",
                          SV_LEFT + 20, SV_TOP1 + SV_H1 / 2);
        st = sv_tree(db, &tr, &b, err);
    }
    for (int c = 0; c < ncurves; c++)
        free(curves[c].best);
    free(ids);
    if (!st)
        st = kv_buf_puts(&b, "</svg>\n") ? kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory") : KEVO_OK;
    if (!st)
        st = kv_buf_append(out, b.data, b.len) ? kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory") : KEVO_OK;
    kv_buf_release(&b);
    return st;
}
