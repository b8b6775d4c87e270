/* What the benchmark programs in bench/ share: the median and percentiles
 * of a sample and a seeded PRNG for reproducible inputs (the clock is
 * gs_time.h). Header-only (static inline): no program needs to link it. */
#ifndef GS_BENCHUTIL_H
#define GS_BENCHUTIL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "gs_time.h"

static inline int bu_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); NAN for an empty sample. */
static inline double bu_median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, bu_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest-rank percentile p (0..1] of an ascending v[0..n); NAN for an
 * empty sample. */
static inline double bu_pctl(const double *v, size_t n, double p)
{
    if (!n)
        return NAN;
    size_t r = (size_t)ceil(p * (double)n);
    return v[r ? r - 1 : 0];
}

/* SplitMix64: the next value of the stream seeded by *s. */
static inline uint64_t bu_splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#endif
