/* profile.c — Nsight Compute's CSV read into the figures a kernel engineer
 * reads first, stored as a candidate's measurements (db/profile.h). */
#define _POSIX_C_SOURCE 200809L
#include "db/profile.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_FIELDS 64
#define PF_MAX_LAUNCHES 256

void kevo_profile_init(kevo_profile *p)
{
    memset(p, 0, sizeof *p);
    p->time_us = p->tensor_pct = p->dram_gbs = p->dram_pct = p->l2_gbs = p->occupancy_pct = NAN;
}

/* Split one CSV line (quoted fields, "" an escaped quote) in place into
 * f[max]; returns how many, and *next the line after it. */
static int pf_fields(char *line, char **f, int max, char **next)
{
    char *eol = strchr(line, '\n');
    *next = eol ? eol + 1 : line + strlen(line);
    if (eol)
        *eol = '\0';
    int n = 0;
    char *p = line, *w = line;
    while (n < max) {
        f[n++] = w;
        bool q = *p == '"';
        p += q;
        while (*p && (q || *p != ',')) {
            if (q && *p == '"') {
                if (p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                    continue;
                }
                q = false;
                p++;
                continue;
            }
            *w++ = *p++;
        }
        bool more = *p == ',';
        p += more;
        *w = '\0'; /* w <= the byte just passed: the field ends here */
        w = p;
        if (!more)
            break;
    }
    if (n > 0 && f[n - 1][0] == '\r') /* CR LF line ends */
        f[n - 1][0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(f[i]);
        if (l && f[i][l - 1] == '\r')
            f[i][l - 1] = '\0';
    }
    return n;
}

/* A number as ncu prints it ("1,234.5", "n/a"): NaN when none. */
static double pf_num(const char *s)
{
    char buf[64];
    size_t k = 0;
    for (; *s && k + 1 < sizeof buf; s++)
        if (*s != ',' && *s != ' ')
            buf[k++] = *s;
    buf[k] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    return k && end && *end == '\0' && isfinite(v) ? v : NAN;
}

/* A bandwidth in GB/s from its unit. */
static double pf_gbs(double v, const char *unit)
{
    double scale = !strncmp(unit, "Tbyte", 5) ? 1e3 : !strncmp(unit, "Gbyte", 5) ? 1
                 : !strncmp(unit, "Mbyte", 5) ? 1e-3 : !strncmp(unit, "Kbyte", 5) ? 1e-6
                 : !strncmp(unit, "byte", 4)  ? 1e-9 : NAN;
    return v * scale;
}

/* What one launch (one "ID") measured. */
typedef struct pf_launch {
    char id[16];
    kevo_profile p;
    char reason[16][48];
    double stall[16];
    int nreasons;
} pf_launch;

/* A stall metric's reason ("..._issue_stalled_<reason>_per_issue_active.ratio"), or false. */
static bool pf_stall_reason(const char *metric, char *out, size_t n)
{
    const char *s = strstr(metric, "issue_stalled_");
    if (!s)
        return false;
    s += 14;
    const char *e = strstr(s, "_per_");
    if (!e)
        e = strchr(s, '.');
    if (!e || e == s || (size_t)(e - s) >= n)
        return false;
    snprintf(out, n, "%.*s", (int)(e - s), s);
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            return false;
    return true;
}

static void pf_metric(pf_launch *l, const char *name, const char *unit, double v)
{
    kevo_profile *p = &l->p;
    char reason[48];
    if (!strcmp(name, "gpu__time_duration.sum"))
        p->time_us = !strcmp(unit, "nsecond") ? v / 1e3 : !strcmp(unit, "msecond") ? v * 1e3 : v;
    else if (!strncmp(name, "sm__pipe_tensor_op_hmma_cycles_active", 37) ||
             !strncmp(name, "sm__pipe_tensor_cycles_active", 29))
        p->tensor_pct = v;
    else if (!strcmp(name, "dram__bytes.sum.per_second"))
        p->dram_gbs = pf_gbs(v, unit);
    else if (!strncmp(name, "dram__throughput", 16))
        p->dram_pct = v;
    else if (!strcmp(name, "lts__t_bytes.sum.per_second"))
        p->l2_gbs = pf_gbs(v, unit);
    else if (!strncmp(name, "sm__warps_active.avg.pct_of_peak", 32))
        p->occupancy_pct = v;
    else if (pf_stall_reason(name, reason, sizeof reason) && l->nreasons < 16 && isfinite(v)) {
        snprintf(l->reason[l->nreasons], sizeof l->reason[0], "%s", reason);
        l->stall[l->nreasons++] = v;
    }
}

/* The launch's top stalls as shares of all its stalls. */
static void pf_top_stalls(pf_launch *l)
{
    double total = 0;
    for (int i = 0; i < l->nreasons; i++)
        total += l->stall[i] > 0 ? l->stall[i] : 0;
    bool used[16] = {false};
    for (int k = 0; k < KEVO_PROFILE_STALLS && total > 0; k++) {
        int best = -1;
        for (int i = 0; i < l->nreasons; i++)
            if (!used[i] && l->stall[i] > 0 && (best < 0 || l->stall[i] > l->stall[best]))
                best = i;
        if (best < 0)
            break;
        used[best] = true;
        snprintf(l->p.stall[k], sizeof l->p.stall[k], "%s", l->reason[best]);
        l->p.stall_pct[k] = 100 * l->stall[best] / total;
        l->p.nstalls = k + 1;
    }
}

kevo_status kevo_profile_parse_ncu_csv(const char *csv, kevo_profile *out, kevo_err *err)
{
    kevo_profile_init(out);
    size_t len = csv ? strnlen(csv, KEVO_PROFILE_CSV_MAX + 1) : 0;
    if (len > KEVO_PROFILE_CSV_MAX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "ncu CSV over %d MiB", KEVO_PROFILE_CSV_MAX >> 20);
    char *text = malloc(len + 1);
    pf_launch *ls = calloc(PF_MAX_LAUNCHES, sizeof *ls);
    if (!text || !ls) {
        free(text);
        free(ls);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory reading ncu CSV");
    }
    memcpy(text, csv ? csv : "", len);
    text[len] = '\0';
    int c_id = -1, c_kernel = -1, c_name = -1, c_unit = -1, c_value = -1, nl = 0, rows = 0;
    char *f[PF_MAX_FIELDS];
    for (char *p = text, *next; *p; p = next) {
        int n = pf_fields(p, f, PF_MAX_FIELDS, &next);
        if (c_value < 0) { /* ncu's own lines ("==PROF== ...") come before the header */
            for (int i = 0; i < n; i++) {
                c_id = !strcmp(f[i], "ID") ? i : c_id;
                c_kernel = !strcmp(f[i], "Kernel Name") ? i : c_kernel;
                c_name = !strcmp(f[i], "Metric Name") ? i : c_name;
                c_unit = !strcmp(f[i], "Metric Unit") ? i : c_unit;
                c_value = !strcmp(f[i], "Metric Value") ? i : c_value;
            }
            if (c_id < 0 || c_name < 0 || c_value < 0 || c_unit < 0)
                c_value = -1;
            continue;
        }
        if (n <= c_value || n <= c_name || n <= c_id || n <= c_unit)
            continue;
        int k = 0;
        while (k < nl && strcmp(ls[k].id, f[c_id]) != 0)
            k++;
        if (k == nl) {
            if (nl == PF_MAX_LAUNCHES)
                continue;
            nl++;
            snprintf(ls[k].id, sizeof ls[k].id, "%s", f[c_id]);
            kevo_profile_init(&ls[k].p);
            if (c_kernel >= 0 && c_kernel < n)
                snprintf(ls[k].p.kernel, sizeof ls[k].p.kernel, "%s", f[c_kernel]);
        }
        pf_metric(&ls[k], f[c_name], f[c_unit], pf_num(f[c_value]));
        rows++;
    }
    kevo_status st = KEVO_OK;
    if (c_value < 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "ncu CSV: no header with \"ID\", \"Metric Name\", \"Metric Unit\" and "
                          "\"Metric Value\"");
    else if (rows == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "ncu CSV: no metric row (did the kernel run under ncu?)");
    if (!st) {
        int best = 0;
        for (int k = 1; k < nl; k++)
            if (isfinite(ls[k].p.time_us) && (!isfinite(ls[best].p.time_us) || ls[k].p.time_us > ls[best].p.time_us))
                best = k;
        pf_top_stalls(&ls[best]);
        *out = ls[best].p;
        kv_term_clean(out->kernel);
    }
    free(text);
    free(ls);
    return st;
}

void kevo_profile_line(const kevo_profile *p, kv_buf *b)
{
    size_t start = b->len;
    if (isfinite(p->tensor_pct))
        kv_buf_printf(b, "tensor pipe %.0f%% of peak", p->tensor_pct);
    if (isfinite(p->dram_gbs) || isfinite(p->dram_pct)) {
        kv_buf_printf(b, "%sDRAM", b->len > start ? ", " : "");
        if (isfinite(p->dram_gbs))
            kv_buf_printf(b, " %.0f GB/s", p->dram_gbs);
        if (isfinite(p->dram_pct))
            kv_buf_printf(b, " (%.0f%% of peak)", p->dram_pct);
    }
    if (isfinite(p->l2_gbs))
        kv_buf_printf(b, "%sL2 %.0f GB/s", b->len > start ? ", " : "", p->l2_gbs);
    if (isfinite(p->occupancy_pct))
        kv_buf_printf(b, "%sachieved occupancy %.0f%%", b->len > start ? ", " : "", p->occupancy_pct);
    for (int i = 0; i < p->nstalls; i++)
        kv_buf_printf(b, "%s%s %.0f%%", i == 0 ? (b->len > start ? "; top warp stalls: " : "top warp stalls: ") : ", ",
                      p->stall[i], p->stall_pct[i]);
}

/* The measurement names and fields of a profile. */
static const struct {
    const char *name;
    size_t off;
} pf_fields_stored[] = {
    {"ncu.time_us", offsetof(kevo_profile, time_us)},
    {"ncu.tensor_pct", offsetof(kevo_profile, tensor_pct)},
    {"ncu.dram_gbs", offsetof(kevo_profile, dram_gbs)},
    {"ncu.dram_pct", offsetof(kevo_profile, dram_pct)},
    {"ncu.l2_gbs", offsetof(kevo_profile, l2_gbs)},
    {"ncu.occupancy_pct", offsetof(kevo_profile, occupancy_pct)},
};

kevo_status kevo_profile_store(kevo_db *db, int64_t cand_id, const kevo_profile *p, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (size_t i = 0; i < sizeof pf_fields_stored / sizeof pf_fields_stored[0] && !st; i++) {
        double v = *(const double *)((const char *)p + pf_fields_stored[i].off);
        if (isfinite(v))
            st = kevo_db_measure_put(db, cand_id, pf_fields_stored[i].name, v, err);
    }
    for (int i = 0; i < p->nstalls && !st; i++) {
        char name[80];
        snprintf(name, sizeof name, "ncu.stall.%s", p->stall[i]);
        st = kevo_db_measure_put(db, cand_id, name, p->stall_pct[i], err);
    }
    return st;
}

kevo_status kevo_profile_load(kevo_db *db, int64_t cand_id, kevo_profile *p, bool *have, kevo_err *err)
{
    kevo_profile_init(p);
    *have = false;
    kevo_measure *v = NULL;
    int n = 0;
    kevo_status st = kevo_db_measures_get(db, cand_id, "ncu.", &v, &n, err);
    for (int i = 0; !st && i < n; i++) {
        for (size_t k = 0; k < sizeof pf_fields_stored / sizeof pf_fields_stored[0]; k++)
            if (!strcmp(v[i].name, pf_fields_stored[k].name)) {
                *(double *)((char *)p + pf_fields_stored[k].off) = v[i].value;
                *have = true;
            }
        const char *r = !strncmp(v[i].name, "ncu.stall.", 10) ? v[i].name + 10 : NULL;
        if (r && p->nstalls < KEVO_PROFILE_STALLS && kv_is_ident(r, sizeof p->stall[0] - 1) && isfinite(v[i].value)) {
            snprintf(p->stall[p->nstalls], sizeof p->stall[0], "%s", r);
            p->stall_pct[p->nstalls++] = v[i].value;
            *have = true;
        }
    }
    /* the largest stall first (stored by name) */
    for (int i = 0; i < p->nstalls; i++)
        for (int j = i + 1; j < p->nstalls; j++)
            if (p->stall_pct[j] > p->stall_pct[i]) {
                char t[48];
                double d = p->stall_pct[i];
                memcpy(t, p->stall[i], sizeof t);
                memcpy(p->stall[i], p->stall[j], sizeof t);
                memcpy(p->stall[j], t, sizeof t);
                p->stall_pct[i] = p->stall_pct[j];
                p->stall_pct[j] = d;
            }
    free(v);
    return st;
}
