/* The host merge of sorted pieces on its own (issue 20's out-of-core and
 * split merges, gs_ooc_merge): random u32 or u64 keys, optionally with
 * u32 values, cut into k even pieces, each sorted beforehand; prints the
 * median merge time of --reps runs per k and the merge rate, and checks
 * every result (keys in order, values of equal keys in piece order: the
 * merge is stable). Built against an older libgscore.a it measures that
 * merge in the same run (the API is unchanged since issue 20).
 * On a shared machine --threads 1 (the pool told the machine has one CPU)
 * with the caller's CPU time (cpu_ms) measures the work undisturbed.
 *   gsort-mergebench [--log2 N] [--pieces 2,3,5,9] [--dtype u32|u64]
 *                    [--values none|u32] [--reps R] [--threads T] */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "gs_ooc.h"
#include "gs_err.h"
#include "gs_hostpool.h"

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Keys in order and, with values (each its element's position in the
 * pieces before the merge), ties in piece order. */
static int check(const void *keys, const uint32_t *vals, size_t n, size_t ks)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t a = ks == 4 ? ((const uint32_t *)keys)[i - 1] : ((const uint64_t *)keys)[i - 1];
        uint64_t b = ks == 4 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
        if (a > b || (vals && a == b && vals[i - 1] > vals[i]))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    unsigned lg = 24, reps = 3;
    const char *pieces = "2,3,5,9", *dt = "u32", *vn = "none";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--log2"))
            lg = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pieces"))
            pieces = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype"))
            dt = argv[i + 1];
        else if (!strcmp(argv[i], "--values"))
            vn = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            gs_hostpool_force_cpus((unsigned)atoi(argv[i + 1]));
        else if (!strcmp(argv[i], "--reps"))
            reps = (unsigned)atoi(argv[i + 1]);
        else {
            fprintf(stderr, "gsort-mergebench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int k64 = !strcmp(dt, "u64"), withv = !strcmp(vn, "u32");
    size_t n = (size_t)1 << lg, ks = k64 ? 8 : 4;
    char *in = malloc(n * ks), *keys = malloc(n * ks);
    uint32_t *vals = withv ? malloc(n * 4) : NULL;
    if (!in || !keys || (withv && !vals) || reps == 0 || reps > 99) {
        fprintf(stderr, "gsort-mergebench: out of memory or bad --reps\n");
        return 1;
    }
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = bu_splitmix(&seed);
        if (k64)
            ((uint64_t *)in)[i] = x;
        else
            ((uint32_t *)in)[i] = (uint32_t)x;
    }
    printf("# %s keys%s, n = 2^%u, %u threads, median of %u: merge ms, Mkeys/s, the "
           "calling thread's CPU ms\n", dt, withv ? " + u32 values" : "", lg,
           gs_hostpool_cpus(), reps);
    printf("%-7s %10s %10s %10s\n", "pieces", "merge_ms", "Mkeys/s", "cpu_ms");
    for (const char *p = pieces; *p;) {
        size_t k = strtoul(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        if (k < 2 || k > 1024)
            continue;
        size_t *b = malloc((k + 1) * sizeof *b), *bounds = malloc((k + 1) * sizeof *b);
        if (!b || !bounds)
            return 1;
        for (size_t c = 0; c <= k; c++)
            b[c] = gs_ooc_piece_size(n, k) * c < n ? gs_ooc_piece_size(n, k) * c : n;
        for (size_t c = 0; c < k; c++)    /* sorted pieces, kept in `in` */
            qsort(in + b[c] * ks, b[c + 1] - b[c], ks, k64 ? cmp64 : cmp32);
        double ms[99], cpu[99];
        int ok = 1;
        for (unsigned r = 0; r < reps; r++) {
            memcpy(keys, in, n * ks);
            for (size_t i = 0; withv && i < n; i++)
                vals[i] = (uint32_t)i;
            memcpy(bounds, b, (k + 1) * sizeof *b);
            gs_sort_req req = { .shape = { .dtype = k64 ? GS_DT_U64 : GS_DT_U32,
                                           .payload = withv ? GS_PL_U32 : GS_PL_NONE },
                                .n = n,
                                .keys = keys,
                                .values = vals };
            gs_sort_stats st;
            memset(&st, 0, sizeof st);
            gs_err err;
            gs_err_clear(&err);
            double c0 = thread_cpu_ms();
            if (gs_ooc_merge(&req, bounds, k, &st, &err)) {
                fprintf(stderr, "gsort-mergebench: %s\n", err.msg);
                return 1;
            }
            cpu[r] = thread_cpu_ms() - c0;
            ms[r] = st.merge_ms;
            ok &= check(keys, vals, n, ks);
        }
        double med = bu_median(ms, reps);
        printf("%-7zu %10.1f %10.1f %10.1f%s\n", k, med, (double)n / med / 1e3,
               bu_median(cpu, reps), ok ? "" : "  WRONG RESULT");
        free(b);
        free(bounds);
        if (!ok)
            return 1;
    }
    free(in);
    free(keys);
    free(vals);
    return 0;
}
