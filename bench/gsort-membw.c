/* gsort-membw: the machine's memory bandwidth, the physical limit of a
 * host radix sort (issue 19 asks its Mkeys/s per core beside it). For each
 * thread count, the median over --reps of kernels over one buffer per
 * thread, past the caches: read (a sum), write (plain stores, which read
 * each line before writing it), copy (memcpy into a second buffer),
 * ntwrite (streaming stores, in order) and scatter (streaming stores of
 * --burst bytes to --streams places in turn, as a radix sort's top pass
 * writes its buckets). It prints the bytes the program asked to move per
 * second (a copy counts its reads and its writes), as a sort's traffic is
 * counted.
 *
 *     bench/gsort-membw [--mib 1024] [--threads 1,2,4,...] [--reps 5]
 *                       [--streams 1024] [--burst 64]
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "benchutil.h"

enum { K_READ, K_WRITE, K_COPY, K_NT, K_SCATTER, K_COUNT };
static const char *const kname[K_COUNT] = { "read", "write", "copy", "ntwrite", "scatter" };
static size_t streams = 1024, burst = 64;

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
static inline void nt_line(uint64_t *d, uint64_t v, size_t bytes)
{
    __m128i x = _mm_set1_epi64x((long long)v);
    for (size_t i = 0; i < bytes / 8; i += 2)
        _mm_stream_si128((__m128i *)(d + i), x);
}
static inline void nt_done(void) { _mm_sfence(); }
#else
static inline void nt_line(uint64_t *d, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes / 8; i++)
        d[i] = v;
}
static inline void nt_done(void) { }
#endif

typedef struct worker {
    pthread_t th;
    pthread_barrier_t *bar;
    int kernel;
    uint64_t *src, *dst;
    size_t words;
    uint64_t sum;               /* keeps the read from being optimized away */
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->bar);
    switch (w->kernel) {
    case K_READ: {
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i + 4 <= w->words; i += 4) {
            s0 += w->src[i];
            s1 += w->src[i + 1];
            s2 += w->src[i + 2];
            s3 += w->src[i + 3];
        }
        w->sum = s0 + s1 + s2 + s3;
        break;
    }
    case K_WRITE:
        for (size_t i = 0; i < w->words; i++)
            w->dst[i] = i;
        break;
    case K_COPY:
        memcpy(w->dst, w->src, w->words * sizeof *w->dst);
        break;
    case K_NT:
        for (size_t i = 0; i + burst / 8 <= w->words; i += burst / 8)
            nt_line(w->dst + i, i, burst);
        nt_done();
        break;
    default: {
        /* the buffer cut in `streams` ranges, each written in order, one
         * burst of each range in turn */
        const size_t per = w->words / streams / (burst / 8) * (burst / 8);
        for (size_t i = 0; i + burst / 8 <= per; i += burst / 8)
            for (size_t r = 0; r < streams; r++)
                nt_line(w->dst + r * per + i, i, burst);
        nt_done();
        break;
    }
    }
    pthread_barrier_wait(w->bar);
    return NULL;
}

/* One timed run of `kernel` on t threads: GB/s moved. */
static double once(worker *ws, unsigned t, int kernel)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, t + 1);
    for (unsigned i = 0; i < t; i++) {
        ws[i].bar = &bar;
        ws[i].kernel = kernel;
        if (pthread_create(&ws[i].th, NULL, run, &ws[i]) != 0) {
            fprintf(stderr, "gsort-membw: cannot start thread %u\n", i);
            return -1;
        }
    }
    pthread_barrier_wait(&bar);
    double t0 = gs_now_ms();
    pthread_barrier_wait(&bar);
    double ms = gs_now_ms() - t0;
    for (unsigned i = 0; i < t; i++)
        pthread_join(ws[i].th, NULL);
    pthread_barrier_destroy(&bar);
    double bytes = 0;
    for (unsigned i = 0; i < t; i++)
        bytes += kernel == K_SCATTER
                     ? (double)(ws[i].words / streams / (burst / 8) * (burst / 8) * streams * 8)
                     : (double)ws[i].words * 8 * (kernel == K_COPY ? 2 : 1);
    return bytes / ms / 1e6;
}

int main(int argc, char **argv)
{
    size_t mib = 1024;
    int reps = 5;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned list[64], nl = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc)
            streams = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--burst") && i + 1 < argc)
            burst = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            for (char *s = argv[++i]; *s && nl < 64;) {
                list[nl++] = (unsigned)strtoul(s, &s, 10);
                if (*s == ',')
                    s++;
            }
        } else {
            fprintf(stderr, "usage: gsort-membw [--mib N] [--threads 1,2,...] [--reps R] "
                    "[--streams K] [--burst BYTES]\n");
            return 2;
        }
    }
    if (nl == 0)
        for (unsigned t = 1;; t *= 2) {
            list[nl++] = t < (unsigned)cpus ? t : (unsigned)cpus;
            if (t >= (unsigned)cpus)
                break;
        }
    if (streams < 1 || burst < 16 || burst % 16 || burst > 4096) {
        fprintf(stderr, "gsort-membw: --streams must be positive, --burst 16..4096 in steps "
                "of 16\n");
        return 2;
    }
    if (mib < 1 || reps < 1 || reps > 99) {
        fprintf(stderr, "gsort-membw: --mib and --reps (1..99) must be positive\n");
        return 2;
    }
    unsigned tmax = 0;
    for (unsigned i = 0; i < nl; i++) {
        if (list[i] < 1 || list[i] > 1024) {
            fprintf(stderr, "gsort-membw: thread counts must be 1..1024\n");
            return 2;
        }
        if (list[i] > tmax)
            tmax = list[i];
    }
    /* two buffers of `mib` MiB in all, cut into one piece per thread */
    const size_t bytes = mib << 20;
    uint64_t *a = aligned_alloc(2 << 20, bytes), *b = aligned_alloc(2 << 20, bytes);
    worker *ws = calloc(tmax, sizeof *ws);
    if (!a || !b || !ws) {
        fprintf(stderr, "gsort-membw: out of memory for 2 x %zu MiB\n", mib);
        return 1;
    }
    madvise(a, bytes, MADV_HUGEPAGE);   /* as the sort's scratch asks */
    madvise(b, bytes, MADV_HUGEPAGE);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    printf("# %zu MiB per buffer, %ld CPUs online, median of %d; GB/s of bytes read + "
           "written; scatter: %zu streams per thread, %zu-byte bursts\n", mib, cpus, reps,
           streams, burst);
    printf("%7s", "threads");
    for (int k = 0; k < K_COUNT; k++)
        printf(" %10s", kname[k]);
    printf("\n");
    for (unsigned l = 0; l < nl; l++) {
        unsigned t = list[l];
        size_t words = bytes / 8 / t;
        for (unsigned i = 0; i < t; i++) {
            ws[i].src = a + i * words;
            ws[i].dst = b + i * words;
            ws[i].words = words;
        }
        printf("%7u", t);
        for (int k = 0; k < K_COUNT; k++) {
            double g[99];
            for (int r = 0; r < reps; r++)
                if ((g[r] = once(ws, t, k)) < 0)
                    return 1;
            printf(" %10.1f", bu_median(g, (size_t)reps));
        }
        printf("\n");
    }
    free(ws);
    free(a);
    free(b);
    return 0;
}
