/* dist.c — shape distributions (see dist.h). */
#include "search/dist.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define DS_LINE_MAX 1000

static bool ds_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* One line (comment cut, trimmed) into d; empty lines add nothing. */
static kevo_status ds_line(char *line, int lineno, const char *path, const kevo_op *op, kevo_dist *d, kevo_err *err)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *p = line;
    while (*p && ds_blank(*p))
        p++;
    char *end = p + strlen(p);
    while (end > p && ds_blank(end[-1]))
        *--end = '\0';
    if (!*p)
        return KEVO_OK;
    /* shape text, then an optional weight after white space */
    char *sep = p;
    while (*sep && !ds_blank(*sep))
        sep++;
    double w = 1.0;
    if (*sep) {
        *sep++ = '\0';
        while (*sep && ds_blank(*sep))
            sep++;
        char *stop = NULL;
        errno = 0;
        w = strtod(sep, &stop);
        if (stop == sep || *stop || errno || !isfinite(w) || !(w > 0) || w > 1e6)
            return kevo_err_set(err, KEVO_ERR_ARG, "'%s' line %d: weight '%.40s' is not a number in (0, 1e6]", path,
                                lineno, sep);
    }
    if (d->n == KEVO_DIST_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "'%s' line %d: more than %d shapes", path, lineno, KEVO_DIST_MAX);
    kevo_status st = op->parse_shape(p, &d->shape[d->n], err);
    if (st) {
        kevo_err_prefix(err, "'%s' line %d", path, lineno);
        return st;
    }
    op->shape_str(&d->shape[d->n], d->text[d->n], sizeof d->text[d->n]);
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->text[i], d->text[d->n]) == 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "'%s' line %d: shape %s is given twice", path, lineno,
                                d->text[i]);
    d->weight[d->n++] = w;
    return KEVO_OK;
}

kevo_status kevo_dist_read(const char *path, const kevo_op *op, kevo_dist *d, kevo_err *err)
{
    d->n = 0;
    char *text = NULL;
    size_t len = 0;
    kevo_status st = kv_read_file(path, &text, &len, err);
    if (st)
        return st;
    if (strlen(text) != len) {
        free(text);
        return kevo_err_set(err, KEVO_ERR_ARG, "'%s' is not a text file (it holds a NUL byte)", path);
    }
    char *line = text;
    for (int lineno = 1; line && !st; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strlen(line) > DS_LINE_MAX)
            st = kevo_err_set(err, KEVO_ERR_ARG, "'%s' line %d: longer than %d bytes", path, lineno, DS_LINE_MAX);
        else
            st = ds_line(line, lineno, path, op, d, err);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!st && d->n == 0)
        st = kevo_err_set(err, KEVO_ERR_ARG, "'%s' holds no shape", path);
    return st;
}

double kevo_dist_geomean(const kevo_dist *d, const double *v)
{
    double lsum = 0, wsum = 0;
    for (int i = 0; i < d->n; i++) {
        if (isnan(v[i]) || v[i] < 0)
            return NAN;
        if (v[i] == 0)
            return 0;
        lsum += d->weight[i] * log(v[i]);
        wsum += d->weight[i];
    }
    return wsum > 0 ? exp(lsum / wsum) : NAN;
}
