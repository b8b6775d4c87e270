/* A histogram of times in power-of-two buckets of microseconds, so that a
 * running daemon can give percentiles of millions of waits (the stats op's
 * queue percentiles per route, issue 37) in a few hundred bytes, merged by
 * adding counts: bucket 0 holds times below 1 µs, bucket b >= 1 those in
 * [2^(b-1), 2^b) µs. A percentile is interpolated within its bucket, so it
 * is off by at most the bucket's width (a factor of two, within it far
 * less when times spread). Header-only. */
#ifndef GS_HIST_H
#define GS_HIST_H

#include <math.h>

#define GS_HIST_BUCKETS 40      /* the last holds everything from 2^38 µs (3 days) */

typedef struct gs_hist {
    unsigned long n[GS_HIST_BUCKETS];
} gs_hist;

static inline void gs_hist_add(gs_hist *h, double ms)
{
    double us = ms * 1000.0;
    int b = 0;
    if (us >= 1.0) {                 /* NaN and negatives land in bucket 0 */
        (void)frexp(us, &b);         /* us in [2^(b-1), 2^b) */
        if (b >= GS_HIST_BUCKETS)
            b = GS_HIST_BUCKETS - 1;
    }
    h->n[b]++;
}

static inline void gs_hist_merge(gs_hist *into, const gs_hist *h)
{
    for (int b = 0; b < GS_HIST_BUCKETS; b++)
        into->n[b] += h->n[b];
}

/* The q-quantile (0 < q <= 1) in ms; 0 for an empty histogram. */
static inline double gs_hist_quantile(const gs_hist *h, double q)
{
    unsigned long total = 0;
    for (int b = 0; b < GS_HIST_BUCKETS; b++)
        total += h->n[b];
    if (!total)
        return 0.0;
    double want = q * (double)total, below = 0;
    for (int b = 0; b < GS_HIST_BUCKETS; b++) {
        if (!h->n[b] || below + (double)h->n[b] < want) {
            below += (double)h->n[b];
            continue;
        }
        double lo = b ? ldexp(1.0, b - 1) : 0.0, hi = ldexp(1.0, b);
        double f = ((want - below) / (double)h->n[b]);
        return (lo + (f < 0 ? 0 : f) * (hi - lo)) / 1000.0;
    }
    return ldexp(1.0, GS_HIST_BUCKETS - 1) / 1000.0;
}

#endif
