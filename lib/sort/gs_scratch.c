/* The scratch cache (gs_scratch.h): a handful of large buffers under one
 * mutex. A request takes the smallest cached buffer that fits (the pages
 * stay faulted in, and in huge pages), or allocates; a buffer given back
 * replaces the least recently used one when the cache is full. Small
 * buffers (under SCRATCH_CACHE_BYTES) are not cached: malloc keeps those
 * warm by itself. From 1 MiB it does not in the daemon, whose malloc maps
 * every block of 1 MiB and more on its own and unmaps it when freed
 * (M_MMAP_THRESHOLD, gs_daemon.c): such a scratch buffer was faulted in
 * again on every request (issue 32: a 2^18-key u32 sort's 2 MiB block, the
 * private copy beside the scratch, cost 1.65 ms against 1.21 through the
 * daemon, 0.81 in a benchmark whose malloc kept it), so those are cached
 * too, in ordinary pages below SCRATCH_HUGE_BYTES. */
#include "config.h"
#include "gs_scratch.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_time.h"

#define SCRATCH_CACHE_BYTES ((size_t)1 << 20)
#define SCRATCH_HUGE_BYTES ((size_t)4 << 20)
#define SCRATCH_HUGE_PAGE ((size_t)2 << 20)
#define SCRATCH_LINE 64

/* Cached buffers handed out to a request smaller than them are remembered
 * here with their true size, which gs_scratch_put is not told. */
#define SCRATCH_OUT 16

static struct {
    pthread_mutex_t mu;
    struct { void *p; size_t size; double last; } e[GS_SCRATCH_KEEP];
    struct { void *p; size_t size; } out[SCRATCH_OUT];
    size_t bytes;
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static size_t rounded(size_t bytes)
{
    return bytes < SCRATCH_HUGE_BYTES
               ? (bytes + SCRATCH_LINE - 1) / SCRATCH_LINE * SCRATCH_LINE
               : (bytes + SCRATCH_HUGE_PAGE - 1) / SCRATCH_HUGE_PAGE * SCRATCH_HUGE_PAGE;
}

/* An eighth of the RAM, the most the cache holds. */
static size_t cache_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 8 : (size_t)1 << 30;
}

void *gs_scratch_get(size_t bytes)
{
    size_t sz = rounded(bytes ? bytes : 1);
    if (sz < SCRATCH_CACHE_BYTES)
        return aligned_alloc(SCRATCH_LINE, sz);
    pthread_mutex_lock(&cache.mu);
    int best = -1, slot = -1;
    for (int i = 0; i < SCRATCH_OUT && slot < 0; i++)
        if (!cache.out[i].p)
            slot = i;
    for (int i = 0; i < GS_SCRATCH_KEEP; i++)
        if (cache.e[i].p && (cache.e[i].size == sz || (cache.e[i].size > sz && slot >= 0)) &&
            (best < 0 || cache.e[i].size < cache.e[best].size))
            best = i;
    void *p = NULL;
    if (best >= 0) {
        p = cache.e[best].p;
        cache.bytes -= cache.e[best].size;
        if (cache.e[best].size != sz) {
            cache.out[slot].p = p;
            cache.out[slot].size = cache.e[best].size;
        }
        cache.e[best].p = NULL;
    }
    pthread_mutex_unlock(&cache.mu);
    if (p || sz < SCRATCH_HUGE_BYTES)
        return p ? p : aligned_alloc(SCRATCH_LINE, sz);
    p = aligned_alloc(SCRATCH_HUGE_PAGE, sz);
#ifdef MADV_HUGEPAGE
    if (p)
        madvise(p, sz, MADV_HUGEPAGE);
#endif
    return p;
}

void gs_scratch_put(void *p, size_t bytes)
{
    if (!p)
        return;
    size_t sz = rounded(bytes ? bytes : 1);
    if (sz < SCRATCH_CACHE_BYTES) {
        free(p);
        return;
    }
    void *drop[GS_SCRATCH_KEEP + 1];
    int ndrop = 0;
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < SCRATCH_OUT; i++)
        if (cache.out[i].p == p) {
            sz = cache.out[i].size;     /* a larger buffer than asked for */
            cache.out[i].p = NULL;
            break;
        }
    if (sz > cache_cap()) {
        pthread_mutex_unlock(&cache.mu);
        free(p);
        return;
    }
    /* room: the least recently used go first, until it fits in the cap */
    for (;;) {
        int lru = -1, empty = -1;
        for (int i = 0; i < GS_SCRATCH_KEEP; i++) {
            if (!cache.e[i].p)
                empty = i;
            else if (lru < 0 || cache.e[i].last < cache.e[lru].last)
                lru = i;
        }
        if (empty >= 0 && cache.bytes + sz <= cache_cap()) {
            cache.e[empty].p = p;
            cache.e[empty].size = sz;
            cache.e[empty].last = gs_now_ms();
            cache.bytes += sz;
            p = NULL;
            break;
        }
        if (lru < 0)
            break;
        drop[ndrop++] = cache.e[lru].p;
        cache.bytes -= cache.e[lru].size;
        cache.e[lru].p = NULL;
    }
    pthread_mutex_unlock(&cache.mu);
    for (int i = 0; i < ndrop; i++)
        free(drop[i]);
    free(p);
}

size_t gs_scratch_trim(double idle_ms)
{
    void *drop[GS_SCRATCH_KEEP];
    int ndrop = 0;
    size_t freed = 0;
    double now = gs_now_ms();
    pthread_mutex_lock(&cache.mu);
    for (int i = 0; i < GS_SCRATCH_KEEP; i++)
        if (cache.e[i].p && now - cache.e[i].last >= idle_ms) {
            drop[ndrop++] = cache.e[i].p;
            freed += cache.e[i].size;
            cache.bytes -= cache.e[i].size;
            cache.e[i].p = NULL;
        }
    pthread_mutex_unlock(&cache.mu);
    for (int i = 0; i < ndrop; i++)
        free(drop[i]);
    return freed;
}

size_t gs_scratch_cached(void)
{
    pthread_mutex_lock(&cache.mu);
    size_t b = cache.bytes;
    pthread_mutex_unlock(&cache.mu);
    return b;
}
