/* The histogram of times behind the stats op's queue percentiles
 * (lib/base/gs_hist.h): buckets by power of two of microseconds, merging
 * by adding, and quantiles within a bucket's width of the true ones. */
#include "config.h"
#include "gs_hist.h"
#include "tap.h"

#include <math.h>
#include <string.h>

int main(void)
{
    gs_hist h;
    memset(&h, 0, sizeof h);
    tap_ok(gs_hist_quantile(&h, 0.5) == 0.0, "an empty histogram's median is 0");

    /* 0.5 us, 1 us, 1.5 us, 3 us, 1 ms, a day: buckets 0, 1, 1, 2, 10, 37 */
    const double ms[] = { 0.0005, 0.001, 0.0015, 0.003, 1.0, 86400e3 };
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        gs_hist_add(&h, ms[i]);
    gs_hist_add(&h, -1.0);
    gs_hist_add(&h, NAN);
    tap_ok(h.n[0] == 3 && h.n[1] == 2 && h.n[2] == 1 && h.n[10] == 1 && h.n[37] == 1,
           "times land in their power-of-two bucket of microseconds (negatives and NaN in "
           "the first): %lu %lu %lu %lu %lu", h.n[0], h.n[1], h.n[2], h.n[10], h.n[37]);

    /* 1000 waits of 1..1000 us: every quantile within a factor 2 of the truth */
    gs_hist u;
    memset(&u, 0, sizeof u);
    for (int i = 1; i <= 1000; i++)
        gs_hist_add(&u, i / 1000.0);
    int ok = 1;
    for (double q = 0.1; q <= 1.0001; q += 0.1) {
        double got = gs_hist_quantile(&u, q), want = q;   /* ms */
        if (!(got >= want / 2 && got <= want * 2)) {
            ok = 0;
            tap_diag("q=%.1f: %.4f ms, true %.4f", q, got, want);
        }
    }
    double p50 = gs_hist_quantile(&u, 0.5), p90 = gs_hist_quantile(&u, 0.9),
           p99 = gs_hist_quantile(&u, 0.99);
    tap_ok(ok && p50 <= p90 && p90 <= p99,
           "uniform 1..1000 us: quantiles within a factor 2, ordered (p50 %.3f, p90 %.3f, p99 "
           "%.3f ms)", p50, p90, p99);

    /* merging two halves gives the whole */
    gs_hist a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    for (int i = 1; i <= 1000; i++)
        gs_hist_add(i % 2 ? &a : &b, i / 1000.0);
    gs_hist_merge(&a, &b);
    tap_ok(!memcmp(&a, &u, sizeof a) && gs_hist_quantile(&a, 0.99) == p99,
           "two halves merged are the whole");

    /* one slow request in a hundred fast ones: p50 fast, p99 slow */
    gs_hist s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 98; i++)
        gs_hist_add(&s, 0.01);
    gs_hist_add(&s, 50.0);
    gs_hist_add(&s, 50.0);
    tap_ok(gs_hist_quantile(&s, 0.5) < 0.02 && gs_hist_quantile(&s, 0.99) > 25,
           "98 waits of 10 us and 2 of 50 ms: p50 %.4f, p99 %.1f ms",
           gs_hist_quantile(&s, 0.5), gs_hist_quantile(&s, 0.99));
    return tap_done();
}
