/* dist.h — shape distributions: what production tunes for (many B and
 * candidates-per-user ratios), read from a file of weighted shapes
 * (`kevo tune --shapes FILE`). */
#ifndef KEVO_DIST_H
#define KEVO_DIST_H

#include "core/op.h"
#include "core/expr.h"

#define KEVO_DIST_MAX 32 /* shapes one distribution holds */

/* A distribution: n shapes with positive weights.  Owns nothing. */
typedef struct kevo_dist {
    int n;
    kevo_syms shape[KEVO_DIST_MAX];
    char text[KEVO_DIST_MAX][256]; /* canonical shape text */
    double weight[KEVO_DIST_MAX];
} kevo_dist;

/* Read a shapes file: one shape per line as the op's --shape text, then
 * optionally white space and a weight (default 1); '#' starts a comment,
 * blank lines are skipped.  The file is untrusted: a line over 1000 bytes,
 * a bad shape or weight (not a finite number in (0, 1e6]), a shape given
 * twice, no shape or more than KEVO_DIST_MAX are errors naming the line.
 * Errors: KEVO_ERR_IO (cannot read), KEVO_ERR_ARG. */
kevo_status kevo_dist_read(const char *path, const kevo_op *op, kevo_dist *d, kevo_err *err);

/* The weighted geometric mean of v[0..d->n) (all > 0); NaN when one is not
 * (a failed shape), 0 when one is 0. */
double kevo_dist_geomean(const kevo_dist *d, const double *v);

#endif /* KEVO_DIST_H */
