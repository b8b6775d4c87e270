/* The per-device buffer pool (gs_bufpool.h): a small array per device,
 * under the device's lock, hung on the device with a release hook so that
 * gs_dev_close frees it (the device layer knows nothing of pools). */
#include "config.h"
#include "gs_bufpool.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gs_time.h"

typedef struct pooled {
    cl_mem m;
    size_t size;
    double since;           /* put back at (gs_now_ms) */
} pooled;

typedef struct gs_bufpool {
    pooled b[GS_BUFPOOL_MAX];
    size_t n;
    uint64_t bytes;
    unsigned long hits, misses;
} gs_bufpool;

static _Atomic unsigned g_share = 25;

void gs_bufpool_set_share(unsigned percent)
{
    atomic_store(&g_share, percent > 90 ? 90 : percent);
}

static void pool_release(gs_dev *d)
{
    gs_bufpool *p = d->bufpool;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        clReleaseMemObject(p->b[i].m);
    free(p);
    d->bufpool = NULL;
}

cl_mem gs_bufpool_take(gs_dev *dev, size_t bytes, size_t *size)
{
    cl_mem m = NULL;
    pthread_mutex_lock(&dev->lock);
    gs_bufpool *p = dev->bufpool;
    if (p) {
        size_t best = p->n;
        for (size_t i = 0; i < p->n; i++)
            if (p->b[i].size >= bytes && p->b[i].size - bytes <= bytes / 8 &&
                (best == p->n || p->b[i].size < p->b[best].size))
                best = i;
        if (best < p->n) {
            m = p->b[best].m;
            *size = p->b[best].size;
            p->bytes -= p->b[best].size;
            p->b[best] = p->b[--p->n];
            p->hits++;
        } else {
            p->misses++;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return m;
}

void gs_bufpool_put(gs_dev *dev, cl_mem m, size_t size)
{
    if (!m)
        return;
    uint64_t cap = dev->info.global_mem / 100 * atomic_load(&g_share);
    pthread_mutex_lock(&dev->lock);
    gs_bufpool *p = dev->bufpool;
    if (!p && cap && (p = calloc(1, sizeof *p))) {
        dev->bufpool = p;
        dev->bufpool_release = pool_release;
    }
    /* Full: make room by releasing the oldest (a buffer larger than the
     * whole share is not kept, and empties nothing). */
    while (p && size <= cap && p->n && (p->n == GS_BUFPOOL_MAX || p->bytes + size > cap)) {
        size_t old = 0;
        for (size_t i = 1; i < p->n; i++)
            if (p->b[i].since < p->b[old].since)
                old = i;
        clReleaseMemObject(p->b[old].m);
        p->bytes -= p->b[old].size;
        p->b[old] = p->b[--p->n];
    }
    if (p && p->n < GS_BUFPOOL_MAX && p->bytes + size <= cap) {
        p->b[p->n++] = (pooled){ m, size, gs_now_ms() };
        p->bytes += size;
        m = NULL;
    }
    pthread_mutex_unlock(&dev->lock);
    if (m)
        clReleaseMemObject(m);
}

void gs_bufpool_trim(gs_dev *dev, double idle_ms)
{
    double now = gs_now_ms();
    pthread_mutex_lock(&dev->lock);
    gs_bufpool *p = dev->bufpool;
    for (size_t i = 0; p && i < p->n;) {
        if (now - p->b[i].since >= idle_ms) {
            clReleaseMemObject(p->b[i].m);
            p->bytes -= p->b[i].size;
            p->b[i] = p->b[--p->n];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&dev->lock);
}

void gs_bufpool_stats_get(gs_dev *dev, gs_bufpool_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&dev->lock);
    gs_bufpool *p = dev->bufpool;
    if (p) {
        out->buffers = p->n;
        out->bytes = p->bytes;
        out->hits = p->hits;
        out->misses = p->misses;
    }
    pthread_mutex_unlock(&dev->lock);
}
