/* gs_pcopy (gs_pcopy.h): the range split into equal parts, one per thread
 * (at most one per online CPU), the first on the calling thread. Threads
 * are started per call: at 32 MiB and more a copy takes milliseconds, and
 * starting a thread tens of microseconds. */
#include "config.h"
#include "gs_pcopy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

void gs_copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__) && defined(__SSE2__)
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < head + 64) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence();   /* the streamed lines are visible before anyone reads them */
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

typedef struct part {
    char *dst;
    const char *src;
    size_t n;
} part;

static void *copy_main(void *a)
{
    part *p = a;
    memcpy(p->dst, p->src, p->n);
    return NULL;
}

void gs_pcopy(void *dst, const void *src, size_t n)
{
    /* counted once: sysconf reads /sys, and this runs per request */
    static _Atomic long cpus;
    long c = atomic_load_explicit(&cpus, memory_order_relaxed);
    if (!c) {
        c = sysconf(_SC_NPROCESSORS_ONLN);
        atomic_store_explicit(&cpus, c > 0 ? c : 1, memory_order_relaxed);
    }
    size_t k = c > 0 ? (size_t)c : 1;
    if (k > GS_PCOPY_THREADS)
        k = GS_PCOPY_THREADS;
    if (n < GS_PCOPY_MIN || k < 2) {
        memcpy(dst, src, n);
        return;
    }
    part p[GS_PCOPY_THREADS];
    pthread_t th[GS_PCOPY_THREADS];
    int started[GS_PCOPY_THREADS] = { 0 };
    for (size_t i = 0; i < k; i++) {
        /* 4 KiB-aligned cuts, so two threads never write one page */
        size_t a = n * i / k & ~(size_t)4095, b = i + 1 == k ? n : n * (i + 1) / k & ~(size_t)4095;
        p[i] = (part){ (char *)dst + a, (const char *)src + a, b - a };
    }
    for (size_t i = 1; i < k; i++)
        started[i] = pthread_create(&th[i], NULL, copy_main, &p[i]) == 0;
    copy_main(&p[0]);
    for (size_t i = 1; i < k; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            copy_main(&p[i]);
    }
}
