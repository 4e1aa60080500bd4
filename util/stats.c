/* stats.c — medians, bootstrap intervals, paired ratios, rank correlation. */
#include "util/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static int st_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of w[0..n), sorting w in place. */
static double st_median_inplace(double *w, int n)
{
    qsort(w, (size_t)n, sizeof *w, st_cmp_double);
    return n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
}

double kv_median(const double *v, int n)
{
    if (n < 1)
        return NAN;
    double *w = malloc((size_t)n * sizeof *w);
    if (!w)
        return NAN;
    memcpy(w, v, (size_t)n * sizeof *w);
    double m = st_median_inplace(w, n);
    free(w);
    return m;
}

/* The 2.5th and 97.5th percentiles of meds[0..r) (sorted here). */
static void st_percentiles(double *meds, int r, double *lo, double *hi)
{
    qsort(meds, (size_t)r, sizeof *meds, st_cmp_double);
    int a = (int)floor(0.025 * (r - 1)), b = (int)ceil(0.975 * (r - 1));
    *lo = meds[a];
    *hi = meds[b];
}

/* Bootstrap of the median of f(i) over n items: each resample draws n
 * indices with replacement. */
static void st_bootstrap(const double *vals, int n, uint64_t seed, int resamples, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n < 2 || resamples < 10)
        return;
    double *w = malloc((size_t)n * sizeof *w), *meds = malloc((size_t)resamples * sizeof *meds);
    if (w && meds) {
        uint64_t rng = seed ^ 0xb0075742ull;
        for (int r = 0; r < resamples; r++) {
            for (int i = 0; i < n; i++)
                w[i] = vals[kv_rand_below(&rng, (uint64_t)n)];
            meds[r] = st_median_inplace(w, n);
        }
        st_percentiles(meds, resamples, lo, hi);
    }
    free(w);
    free(meds);
}

void kv_median_ci(const double *v, int n, uint64_t seed, int resamples, double *lo, double *hi)
{
    st_bootstrap(v, n, seed, resamples, lo, hi);
}

void kv_paired_ratio(const double *a, const double *b, int n, uint64_t seed, int resamples, double *ratio,
                     double *lo, double *hi)
{
    *ratio = *lo = *hi = NAN;
    if (n < 2)
        return;
    double *q = malloc((size_t)n * sizeof *q);
    if (!q)
        return;
    for (int i = 0; i < n; i++)
        q[i] = b[i] / a[i];
    *ratio = kv_median(q, n);
    st_bootstrap(q, n, seed, resamples, lo, hi);
    free(q);
}

int kv_paired_leader(const double *const *ms, const double *median, int m, int rounds, const uint64_t *seeds,
                     int resamples)
{
    int leader = -1;
    for (int k = 0; k < m; k++)
        if (!isnan(median[k]) && (leader < 0 || median[k] < median[leader]))
            leader = k;
    for (int change = 0; leader >= 0 && change < m; change++) {
        int ahead = -1;
        double best = 1.0;
        for (int k = 0; k < m; k++) {
            if (isnan(median[k]) || k == leader)
                continue;
            double ratio, lo, hi;
            kv_paired_ratio(ms[leader], ms[k], rounds, seeds[k], resamples, &ratio, &lo, &hi);
            if (hi < 1.0 && ratio < best) {
                best = ratio;
                ahead = k;
            }
        }
        if (ahead < 0)
            break;
        leader = ahead;
    }
    return leader;
}

/* Average ranks (1-based) of v[0..n) into rank[]. */
static bool st_ranks(const double *v, int n, double *rank)
{
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!idx)
        return false;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    /* insertion sort by value: n is a landscape (hundreds) */
    for (int i = 1; i < n; i++) {
        int k = idx[i], j = i - 1;
        while (j >= 0 && v[idx[j]] > v[k]) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = k;
    }
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[idx[j + 1]] == v[idx[i]])
            j++;
        double avg = 0.5 * (i + j) + 1.0;
        for (int k = i; k <= j; k++)
            rank[idx[k]] = avg;
        i = j + 1;
    }
    free(idx);
    return true;
}

double kv_spearman(const double *x, const double *y, int n)
{
    if (n < 3)
        return NAN;
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    double r = NAN;
    if (rx && ry && st_ranks(x, n, rx) && st_ranks(y, n, ry)) {
        double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
        for (int i = 0; i < n; i++) {
            mx += rx[i];
            my += ry[i];
        }
        mx /= n;
        my /= n;
        for (int i = 0; i < n; i++) {
            sxy += (rx[i] - mx) * (ry[i] - my);
            sxx += (rx[i] - mx) * (rx[i] - mx);
            syy += (ry[i] - my) * (ry[i] - my);
        }
        if (sxx > 0 && syy > 0)
            r = sxy / sqrt(sxx * syy);
    }
    free(rx);
    free(ry);
    return r;
}
