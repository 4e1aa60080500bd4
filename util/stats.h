/* stats.h — the statistics kevo's measurements need: medians with bootstrap
 * confidence intervals, paired comparisons of two kernels timed
 * interleaved, and rank correlation (a cost model against measured times).
 * Every resampling draws from a seeded generator, so a figure is the same
 * each time it is computed from the same repetitions. */
#ifndef KEVO_STATS_H
#define KEVO_STATS_H

#include <stdint.h>

/* Resamples kevo draws for a median's bootstrap interval. */
#define KV_BOOTSTRAP 2000

/* Median of v[0..n) (n >= 1; v is not changed).  NaN when n < 1 or out of
 * memory. */
double kv_median(const double *v, int n);

/* 95% percentile-bootstrap confidence interval of the median of v[0..n)
 * (Efron and Tibshirani 1993, ch. 13): `resamples` resamples with
 * replacement drawn from `seed`, *lo and *hi the 2.5th and 97.5th
 * percentiles of their medians.  NaN bounds when n < 2 or out of memory. */
void kv_median_ci(const double *v, int n, uint64_t seed, int resamples, double *lo, double *hi);

/* Paired comparison of two kernels timed in alternation (a[i] and b[i] from
 * the same round): *ratio is the median of b[i] / a[i], *lo and *hi its 95%
 * bootstrap interval over rounds.  A ratio interval above 1 says a is
 * faster, below 1 that b is; one holding 1 cannot tell them apart.  NaN
 * figures when n < 2. */
void kv_paired_ratio(const double *a, const double *b, int n, uint64_t seed, int resamples, double *ratio,
                     double *lo, double *hi);

/* The leader of m kernels timed in alternation (ms[k][0..rounds), rounds
 * >= 2): the lowest median (median[k]; NaN: not timed, never chosen),
 * unless a paired comparison (kv_paired_ratio with seeds[k]) puts another
 * clearly ahead of it (its interval of ratios below 1: the median of
 * per-round ratios and the ratio of medians can disagree); then that one,
 * at most m times (paired comparisons need not be transitive).  -1 when
 * none was timed. */
int kv_paired_leader(const double *const *ms, const double *median, int m, int rounds, const uint64_t *seeds,
                     int resamples);

/* Spearman's rank correlation of x and y over n pairs (ties get their
 * average rank; Pearson's r of the ranks).  NaN when n < 3, when either
 * side is constant, or out of memory. */
double kv_spearman(const double *x, const double *y, int n);

#endif /* KEVO_STATS_H */
