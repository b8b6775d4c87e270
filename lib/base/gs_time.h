/* The one monotonic clock: what every part of gsortd times with (request
 * stages, timeouts, tuning budgets, benchmarks). CLOCK_MONOTONIC, so a
 * wall-clock step never makes a duration negative. Header-only, so that
 * libgsort and the benchmarks use it without linking the core library. */
#ifndef GS_TIME_H
#define GS_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline double gs_now_ms(void)
{
    return (double)gs_now_ns() * 1e-6;
}

static inline double gs_now_s(void)
{
    return (double)gs_now_ns() * 1e-9;
}

#endif
