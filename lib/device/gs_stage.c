/* Pinned staging for device copies (gs_stage.h): two pinned buffers per
 * device, made on first use and hung on the device with a release hook
 * (the device layer knows nothing of staging), used by one transfer at a
 * time under their own lock. */
#include "config.h"
#include "gs_stage.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gs_pcopy.h"

typedef struct gs_stagebuf {
    pthread_mutex_t mu;         /* one transfer at a time */
    size_t chunk;
    cl_mem m[2];
    void *p[2];                 /* mapped, pinned */
} gs_stagebuf;

static _Atomic size_t g_force_min, g_force_chunk;
static _Atomic unsigned long g_transfers;

unsigned long gs_stage_transfers(void)
{
    return atomic_load(&g_transfers);
}

void gs_stage_force(size_t min, size_t chunk)
{
    atomic_store(&g_force_min, min);
    atomic_store(&g_force_chunk, chunk);
}

int gs_stage_wanted(const gs_dev *dev, size_t bytes)
{
    size_t fmin = atomic_load(&g_force_min);
    if (fmin)
        return bytes >= fmin;
    return (dev->info.type & CL_DEVICE_TYPE_GPU) && bytes >= GS_STAGE_MIN;
}

static void stage_release(gs_dev *d)
{
    gs_stagebuf *s = d->stage;
    if (!s)
        return;
    for (int i = 0; i < 2; i++) {
        if (s->p[i])
            clEnqueueUnmapMemObject(d->queue, s->m[i], s->p[i], 0, NULL, NULL);
    }
    if (d->queue)
        clFinish(d->queue);
    for (int i = 0; i < 2; i++)
        if (s->m[i])
            clReleaseMemObject(s->m[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
    d->stage = NULL;
}

/* The device's staging buffers, made on first use; NULL with err set. */
static gs_stagebuf *stage_get(gs_dev *dev, gs_err *err)
{
    pthread_mutex_lock(&dev->lock);
    gs_stagebuf *s = dev->stage;
    if (!s && (s = calloc(1, sizeof *s))) {
        size_t fc = atomic_load(&g_force_chunk);
        s->chunk = fc ? fc : GS_STAGE_CHUNK;
        pthread_mutex_init(&s->mu, NULL);
        int ok = 1;
        for (int i = 0; ok && i < 2; i++) {
            cl_int rc;
            s->m[i] = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                     s->chunk, NULL, &rc);
            ok = rc == CL_SUCCESS;
            if (ok) {
                s->p[i] = clEnqueueMapBuffer(dev->queue, s->m[i], CL_TRUE,
                                             CL_MAP_READ | CL_MAP_WRITE, 0, s->chunk, 0, NULL,
                                             NULL, &rc);
                ok = rc == CL_SUCCESS && s->p[i];
            }
            if (!ok)
                gs_cl_fail(err, "pinned staging", rc, "device %s: %zu bytes", dev->info.name,
                           s->chunk);
        }
        dev->stage = s;
        dev->stage_release = stage_release;
        if (!ok) {
            pthread_mutex_unlock(&dev->lock);
            stage_release(dev);
            return NULL;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    if (!s)
        gs_err_set(err, GS_ENOMEM, "pinned staging: out of memory");
    return s;
}

static int wait_ev(cl_event *ev, gs_err *err)
{
    if (!*ev)
        return 0;
    cl_int rc = clWaitForEvents(1, ev);
    clReleaseEvent(*ev);
    *ev = NULL;
    return rc == CL_SUCCESS ? 0 : gs_cl_fail(err, "clWaitForEvents", rc, "staged copy");
}

/* The device's staging, for this transfer alone (NULL: none to be had). */
static gs_stagebuf *stage_begin(gs_dev *dev, gs_err *err)
{
    gs_stagebuf *s = stage_get(dev, err);
    if (s) {
        pthread_mutex_lock(&s->mu);
        atomic_fetch_add(&g_transfers, 1);
    }
    return s;
}

/* Wait for the transfers still in flight, let the staging go: rc, or the
 * first error of the waits. */
static int stage_end(gs_stagebuf *s, cl_event ev[2], int rc, gs_err *err)
{
    for (int i = 0; i < 2; i++) {
        int w = wait_ev(&ev[i], err);
        rc = rc ? rc : w;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int gs_stage_upload(gs_dev *dev, cl_mem dst, const void *src, size_t bytes, gs_err *err)
{
    gs_stagebuf *s = stage_begin(dev, err);
    if (!s)
        return GS_ENOMEM;
    cl_event ev[2] = { NULL, NULL };
    int rc = 0;
    for (size_t off = 0, i = 0; off < bytes && !rc; off += s->chunk, i ^= 1) {
        size_t len = bytes - off < s->chunk ? bytes - off : s->chunk;
        /* this half's previous DMA must be done before it is refilled */
        if ((rc = wait_ev(&ev[i], err)))
            break;
        gs_pcopy(s->p[i], (const char *)src + off, len);
        cl_int crc = clEnqueueWriteBuffer(dev->queue, dst, CL_FALSE, off, len, s->p[i], 0,
                                          NULL, &ev[i]);
        if (crc != CL_SUCCESS) {
            ev[i] = NULL;
            rc = gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "staged upload, %zu bytes at %zu",
                            len, off);
        }
    }
    return stage_end(s, ev, rc, err);
}

int gs_stage_download(gs_dev *dev, void *dst, cl_mem src, size_t bytes, gs_err *err)
{
    gs_stagebuf *s = stage_begin(dev, err);
    if (!s)
        return GS_ENOMEM;
    cl_event ev[2] = { NULL, NULL };
    int rc = 0;
    size_t nch = (bytes + s->chunk - 1) / s->chunk;
    /* Chunk k+1's DMA is queued before chunk k is copied out, so the copy
     * overlaps the transfer. */
    for (size_t k = 0; k <= nch && !rc; k++) {
        if (k < nch) {
            size_t off = k * s->chunk, len = bytes - off < s->chunk ? bytes - off : s->chunk;
            cl_int crc = clEnqueueReadBuffer(dev->queue, src, CL_FALSE, off, len, s->p[k & 1],
                                             0, NULL, &ev[k & 1]);
            if (crc != CL_SUCCESS) {
                ev[k & 1] = NULL;
                rc = gs_cl_fail(err, "clEnqueueReadBuffer", crc, "staged download, %zu bytes "
                                "at %zu", len, off);
                break;
            }
        }
        if (k > 0) {
            size_t j = k - 1, off = j * s->chunk;
            size_t len = bytes - off < s->chunk ? bytes - off : s->chunk;
            if ((rc = wait_ev(&ev[j & 1], err)))
                break;
            gs_pcopy((char *)dst + off, s->p[j & 1], len);
        }
    }
    return stage_end(s, ev, rc, err);
}
