/* Implementation of gs_clrun: event bookkeeping and the checked wrappers
 * around kernel creation, launches, buffers and transfers. */
#include "config.h"
#include "gs_clrun.h"
#include "gs_bufpool.h"
#include "gs_stage.h"
#include "gs_grow.h"
#include "gs_log.h"
#include "gs_prog.h"
#include "gs_sort.h"
#include "gs_time.h"

#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

void gs_clrun_init(gs_clrun *r, gs_dev *dev, const char *algo)
{
    memset(r, 0, sizeof *r);
    r->dev = dev;
    r->q = dev ? dev->queue : NULL;
    r->algo = algo;
}

void gs_clrun_use(gs_clrun *r, cl_command_queue q, int host_pinned)
{
    if (q)
        r->q = q;
    r->host_pinned = host_pinned;
}

static int event_time(cl_event e, cl_profiling_info what, cl_ulong *t)
{
    return e && clGetEventProfilingInfo(e, what, sizeof *t, t, NULL) == CL_SUCCESS;
}

/* A lean run's kernel span, from the events its transfers (or its first
 * kernel) kept; -1 when they do not frame it. */
static double lean_span(const gs_clrun *r)
{
    cl_ulong a = 0, b = 0;
    int from = r->nupev ? event_time(r->upev[r->nupev - 1], CL_PROFILING_COMMAND_END, &a)
                        : r->nkev && event_time(r->kev[0], CL_PROFILING_COMMAND_START, &a);
    if (!from || !r->ndnev || !event_time(r->dnev[0], CL_PROFILING_COMMAND_START, &b) || b < a)
        return -1.0;
    return (double)(b - a) / 1e6;
}

/* The transfers ev[0..*n) enqueued without a wait: their times into *ms,
 * the events released. */
static void settle_events(cl_event *ev, unsigned *n, double *ms)
{
    for (unsigned i = 0; i < *n; i++) {
        *ms += gs_clrun_event_ms(ev[i]);
        clReleaseEvent(ev[i]);
    }
    *n = 0;
}

void gs_clrun_settle(gs_clrun *r)
{
    if (r->lean && (r->nupev || r->ndnev))
        r->span_ms = lean_span(r);
    settle_events(r->upev, &r->nupev, &r->upload_ms);
    settle_events(r->dnev, &r->ndnev, &r->download_ms);
}

/* The run can wait once: no race flag to read before the write-back, no
 * adopted pages to write through, and events to time the transfers by. */
static int one_wait(const gs_clrun *r)
{
    return !r->raced && !r->nadopt && r->dev->info.profiling;
}

int gs_clrun_defer(gs_clrun *r)
{
    r->defer_down = one_wait(r);
    return r->defer_down;
}

int gs_clrun_host_written(gs_clrun *r)
{
    if (r->host_written)
        return 1;
    for (unsigned i = 0; i < r->ndnev; i++) {
        cl_int st = CL_QUEUED;
        /* a command ended by an earlier one's failure never ran (< 0);
         * one that completed, or whose state is unknown, may have written */
        if (clGetEventInfo(r->dnev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) !=
                CL_SUCCESS || st >= 0)
            return 1;
    }
    return 0;
}

int gs_clrun_lean(gs_clrun *r, int want, size_t out_bytes)
{
    const int staged = !r->host_pinned && r->q == r->dev->queue &&
                       gs_stage_wanted(r->dev, out_bytes);
    r->lean = want && one_wait(r) && !staged && gs_log_get_level() < GS_LOG_DEBUG;
    r->span_ms = -1.0;
    return r->lean;
}

/* ---- guarded buffers (test hook) ---- */

#define GUARD_BYTE 0xa5
static _Atomic size_t g_guard;
static atomic_ulong g_breaches;

void gs_clrun_guard(size_t bytes)
{
    atomic_store(&g_guard, (bytes + 3) / 4 * 4);
}

unsigned long gs_clrun_guard_breaches(void)
{
    return atomic_load(&g_breaches);
}

static void guard_check(gs_clrun *r, cl_mem m, size_t at, size_t len)
{
    unsigned char *h = malloc(len);
    int bad = !h || clEnqueueReadBuffer(r->q, m, CL_TRUE, at, len, h, 0, NULL, NULL) !=
                    CL_SUCCESS;
    for (size_t i = 0; !bad && i < len; i++)
        bad = h[i] != GUARD_BYTE;
    free(h);
    if (bad)
        atomic_fetch_add(&g_breaches, 1);
}

void gs_clrun_release(gs_clrun *r)
{
    if (r->q)
        clFinish(r->q);   /* nothing of ours may still be in flight */
    gs_clrun_settle(r);
    for (size_t i = 0; i < r->nkev; i++)
        clReleaseEvent(r->kev[i]);
    free(r->kev);
    r->kev = NULL;
    r->nkev = r->kevcap = 0;
    for (unsigned i = 0; i < r->nbuf; i++) {
        if (r->bufuse[i] < r->bufsz[i]) {
            guard_check(r, r->buf[i], r->bufuse[i], r->bufsz[i] - r->bufuse[i]);
            clReleaseMemObject(r->buf[i]);
        } else {
            gs_bufpool_put(r->dev, r->buf[i], r->bufsz[i]);
        }
    }
    r->nbuf = 0;
    for (unsigned i = 0; i < r->nadopt; i++)
        clReleaseMemObject(r->adopt[i]);
    r->nadopt = 0;
    r->raced = NULL;    /* one of the buffers above */
    r->raced_fetched = 0;
}

double gs_clrun_event_ms(cl_event e)
{
    cl_ulong a = 0, b = 0;
    if (!e || clWaitForEvents(1, &e) != CL_SUCCESS ||
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof a, &a, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof b, &b, NULL) != CL_SUCCESS ||
        b < a)
        return 0.0;
    return (double)(b - a) / 1e6;
}

double gs_clrun_kernel_ms(gs_clrun *r)
{
    double ms = 0.0;
    for (size_t i = 0; i < r->nkev; i++)
        ms += gs_clrun_event_ms(r->kev[i]);
    return ms;
}

int gs_clrun_kernel(gs_clrun *r, cl_program prog, const char *name, size_t wg,
                    cl_kernel *out, gs_err *err)
{
    cl_int rc;
    *out = gs_prog_kernel_take(r->dev, prog, name);
    if (!*out) {
        *out = clCreateKernel(prog, name, &rc);
        if (rc != CL_SUCCESS) {
            *out = NULL;
            return gs_cl_fail(err, "clCreateKernel", rc, "%s", name);
        }
    }
    size_t kwg = 0;
    cl_ulong lmem = 0;
    rc = clGetKernelWorkGroupInfo(*out, r->dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL);
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, "clGetKernelWorkGroupInfo", rc, "%s CL_KERNEL_WORK_GROUP_SIZE", name);
    if (kwg < wg)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "%s: kernel %s runs at most %zu work-items per group on %s, wg_size=%zu asked",
                          r->algo, name, kwg, r->dev->info.name, wg);
    rc = clGetKernelWorkGroupInfo(*out, r->dev->id, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
    if (rc == CL_SUCCESS && lmem > r->dev->info.local_mem)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "%s: kernel %s needs %llu bytes of local memory, device has %llu",
                          r->algo, name, (unsigned long long)lmem,
                          (unsigned long long)r->dev->info.local_mem);
    return 0;
}

void gs_clrun_kernel_done(gs_clrun *r, cl_program prog, const char *name, cl_kernel k)
{
    gs_prog_kernel_put(r->dev, prog, name, k);
}

int gs_clrun_args(cl_kernel k, const char *name, const gs_karg *a, unsigned n, gs_err *err)
{
    for (unsigned i = 0; i < n; i++) {
        cl_int rc = clSetKernelArg(k, i, a[i].size, a[i].ptr);
        if (rc != CL_SUCCESS)
            return gs_cl_fail(err, "clSetKernelArg", rc, "%s argument %u", name, i);
    }
    return 0;
}

/* Fault injection (tests of the daemon's fallback): launches from the
 * fault_at-th on, counted process-wide, fail with fault_code; with
 * fault_dev (device index + 1) only that device's launches count and fail. */
static atomic_long fault_at, launches;
static atomic_int fault_code, fault_dev;

void gs_clrun_inject_fault_device(int index)
{
    atomic_store(&fault_dev, index >= 0 ? index + 1 : 0);
}

void gs_clrun_inject_fault(long at, cl_int code)
{
    atomic_store(&fault_code, code);
    atomic_store(&launches, 0);
    atomic_store(&fault_at, at);
}

long gs_clrun_launch_count(void)
{
    return atomic_load(&launches);
}

int gs_clrun_launch(gs_clrun *r, cl_kernel k, const char *name, size_t groups, size_t wg,
                    gs_err *err)
{
    long at = atomic_load(&fault_at);
    int fd = atomic_load(&fault_dev);
    if (at > 0 && (!fd || fd == r->dev->index + 1) && atomic_fetch_add(&launches, 1) + 1 >= at)
        return gs_cl_fail(err, "clEnqueueNDRangeKernel", atomic_load(&fault_code),
                          "%s (injected fault)", name);
    if (gs_grow(&r->kev, &r->kevcap, r->nkev, sizeof *r->kev, 32))
        return gs_err_set(err, GS_ENOMEM, "%s: out of memory", r->algo);
    size_t gsz = groups * wg;
    /* lean: the first kernel's start is the span's when no upload has one */
    const int keep = !r->lean || (r->nkev == 0 && r->nupev == 0);
    cl_int rc = clEnqueueNDRangeKernel(r->q, k, 1, NULL, &gsz, &wg, 0, NULL,
                                       keep ? &r->kev[r->nkev] : NULL);
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueNDRangeKernel", rc, "%s (%zu x %zu)", name, groups, wg);
    r->nkev += keep;
    if (r->nadopt && r->touched)
        *r->touched = 1;    /* a kernel may write the caller's arrays from now on */
    return 0;
}

int gs_clrun_buffer(gs_clrun *r, size_t bytes, const char *what, cl_mem *out, gs_err *err)
{
    *out = NULL;
    if (r->nbuf == GS_CLRUN_BUFS)
        return gs_err_set(err, GS_EINVAL, "%s: more than %d buffers in one sort", r->algo,
                          GS_CLRUN_BUFS);
    size_t size = bytes ? bytes : 4, use, guard = atomic_load(&g_guard);
    cl_mem m = guard ? NULL : gs_bufpool_take(r->dev, size, &size);
    if (!m) {
        use = guard ? (size + 3) / 4 * 4 : size;
        cl_int rc;
        m = clCreateBuffer(r->dev->ctx, CL_MEM_READ_WRITE, use + guard, NULL, &rc);
        if (rc != CL_SUCCESS)
            return gs_cl_fail(err, "clCreateBuffer", rc, "%s: %s, %zu bytes", r->algo, what,
                              bytes);
        static const cl_uint pat = GUARD_BYTE * 0x01010101u;
        if (guard && (rc = clEnqueueFillBuffer(r->q, m, &pat, sizeof pat, use, guard, 0, NULL,
                                               NULL)) != CL_SUCCESS) {
            clReleaseMemObject(m);
            return gs_cl_fail(err, "clEnqueueFillBuffer", rc, "%s: %s's guard", r->algo, what);
        }
        size = use + guard;
    } else {
        use = size;
    }
    r->buf[r->nbuf] = m;
    r->bufuse[r->nbuf] = use;
    r->bufsz[r->nbuf++] = size;
    *out = m;
    return 0;
}

/* Host waits for transfers (gs_clrun_waits) */
static atomic_ulong g_waits;

unsigned long gs_clrun_waits(void)
{
    return atomic_load(&g_waits);
}

/* One timed transfer; profiling time when available, else wall. An
 * upload is only enqueued (the kernels after it wait in the in-order
 * queue, and the host array outlives the sort): a wait of its own costs a
 * round trip to the driver on every small request. So is a download once
 * deferred (gs_clrun_defer): the sort's one wait covers it. Their times
 * are read at gs_clrun_settle. */
static int xfer(gs_clrun *r, int up, cl_mem m, void *host, size_t bytes, gs_err *err)
{
    if (bytes == 0)
        return 0;
    cl_event ev = NULL;
    double t0 = gs_now_ms();
    const int later = r->dev->info.profiling &&
                      (up ? r->nupev < GS_CLRUN_UPLOADS
                          : r->defer_down && r->ndnev < GS_CLRUN_UPLOADS);
    cl_int rc = up ? clEnqueueWriteBuffer(r->q, m, later ? CL_FALSE : CL_TRUE, 0, bytes, host, 0,
                                          NULL, &ev)
                   : clEnqueueReadBuffer(r->q, m, later ? CL_FALSE : CL_TRUE, 0, bytes, host, 0,
                                         NULL, &ev);
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, up ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", rc,
                          "%s: %zu bytes", r->algo, bytes);
    if (later) {
        if (up)
            r->upev[r->nupev++] = ev;
        else
            r->dnev[r->ndnev++] = ev;
        return 0;
    }
    if (!up)
        r->host_written = 1;
    atomic_fetch_add(&g_waits, 1);
    double ms = gs_clrun_event_ms(ev);
    if (ms == 0.0)
        ms = gs_now_ms() - t0;
    clReleaseEvent(ev);
    *(up ? &r->upload_ms : &r->download_ms) += ms;
    return 0;
}

/* Through pinned staging (gs_stage.h), timed by the wall clock since the
 * host copies are part of it: 0, 1 when staging cannot be had (the caller
 * copies the plain way), or an error. */
static int staged(gs_clrun *r, int up, cl_mem m, void *host, size_t bytes, gs_err *err)
{
    if (r->host_pinned || r->q != r->dev->queue || !gs_stage_wanted(r->dev, bytes))
        return 1;
    clFinish(r->q);        /* what came before is not ours to time */
    atomic_fetch_add(&g_waits, 1);
    double t0 = gs_now_ms();
    gs_err e;
    gs_err_clear(&e);
    if (!up)
        r->host_written = 1;   /* chunk by chunk: even a failure may have written some */
    int rc = up ? gs_stage_upload(r->dev, m, host, bytes, &e)
                : gs_stage_download(r->dev, host, m, bytes, &e);
    if (rc == GS_ENOMEM)
        return 1;
    if (rc)
        return gs_err_set(err, rc, "%s: %s", r->algo, e.msg);
    *(up ? &r->upload_ms : &r->download_ms) += gs_now_ms() - t0;
    return 0;
}

int gs_clrun_upload(gs_clrun *r, cl_mem dst, const void *src, size_t bytes, gs_err *err)
{
    int rc = staged(r, 1, dst, (void *)src, bytes, err);
    return rc == 1 ? xfer(r, 1, dst, (void *)src, bytes, err) : rc;
}

int gs_clrun_download(gs_clrun *r, void *dst, cl_mem src, size_t bytes, gs_err *err)
{
    int rc = staged(r, 0, src, dst, bytes, err);
    return rc == 1 ? xfer(r, 0, src, dst, bytes, err) : rc;
}

/* ---- zero copy on CPU devices ---- */

static _Atomic int g_no_adopt;

void gs_clrun_no_adopt(int off)
{
    atomic_store(&g_no_adopt, off);
}

int gs_clrun_input(gs_clrun *r, void *host, size_t bytes, int upload, const char *what,
                   cl_mem *out, gs_err *err)
{
    if (bytes && host && r->hostile && (r->dev->info.type & CL_DEVICE_TYPE_CPU) &&
        r->nadopt < 2 && !atomic_load(&g_no_adopt)) {
        cl_int rc;
        cl_mem m = clCreateBuffer(r->dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes,
                                  host, &rc);
        if (rc == CL_SUCCESS) {
            r->adopt[r->nadopt] = m;
            r->adopt_host[r->nadopt] = host;
            r->adopt_bytes[r->nadopt++] = bytes;
            *out = m;
            return 0;
        }
        /* refused (alignment, limits): copy as elsewhere */
    }
    int rc = gs_clrun_buffer(r, bytes, what, out, err);
    if (!rc && upload)
        rc = gs_clrun_upload(r, *out, host, bytes, err);
    return rc;
}

int gs_clrun_output(gs_clrun *r, void *host, cl_mem src, size_t bytes, gs_err *err)
{
    for (unsigned i = 0; i < r->nadopt; i++) {
        if (r->adopt_host[i] != host)
            continue;
        cl_mem a = r->adopt[i];
        cl_command_queue q = r->q;
        cl_int rc = CL_SUCCESS;
        double t0 = gs_now_ms();
        if (src != a && bytes)
            rc = clEnqueueCopyBuffer(q, src, a, 0, 0, bytes, 0, NULL, NULL);
        /* A map makes the caller's array current (it is the buffer's own
         * memory; on PoCL the map is free). */
        void *p = rc == CL_SUCCESS && bytes
                  ? clEnqueueMapBuffer(q, a, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &rc)
                  : NULL;
        if (p)
            rc = clEnqueueUnmapMemObject(q, a, p, 0, NULL, NULL);
        if (rc == CL_SUCCESS) {
            atomic_fetch_add(&g_waits, 1);
            rc = clFinish(q);
        }
        if (rc != CL_SUCCESS)
            return gs_cl_fail(err, "writing the result back", rc, "%s: %zu bytes", r->algo,
                              bytes);
        if (src != a)
            r->download_ms += gs_now_ms() - t0;
        return 0;
    }
    return gs_clrun_download(r, host, src, bytes, err);
}

/* ---- hostile client pages ---- */

static _Atomic int g_hostile = -1;

void gs_clrun_force_hostile(int mode)
{
    atomic_store(&g_hostile, mode < 0 ? -1 : mode != 0);
}

int gs_clrun_hostile(const gs_dev *dev)
{
    int forced = atomic_load(&g_hostile);
    if (forced >= 0)
        return forced;
    return (dev->info.type & CL_DEVICE_TYPE_CPU) && !atomic_load(&g_no_adopt);
}

int gs_clrun_raced(gs_clrun *r, cl_mem *out, gs_err *err)
{
    static const cl_uint zero = 0;   /* static: the write below does not block */
    if (!r->raced) {
        cl_mem m;
        int rc = gs_clrun_buffer(r, sizeof zero, "race flag", &m, err);
        if (rc)
            return rc;
        cl_int crc = clEnqueueWriteBuffer(r->q, m, CL_FALSE, 0, sizeof zero, &zero, 0, NULL,
                                          NULL);
        if (crc != CL_SUCCESS)
            return gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "%s: race flag", r->algo);
        r->raced = m;
    }
    *out = r->raced;
    return 0;
}

int gs_clrun_raced_check(gs_clrun *r, gs_err *err)
{
    if (!r->raced)
        return 0;
    if (r->raced_fetched)   /* read with the run's other fetches, the queue since finished */
        return r->raced_word ? gs_err_raced(r->algo, err) : 0;
    atomic_fetch_add(&g_waits, 1);
    cl_uint v = 0;
    cl_int crc = clEnqueueReadBuffer(r->q, r->raced, CL_TRUE, 0, sizeof v, &v, 0, NULL, NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueReadBuffer", crc, "%s: race flag", r->algo);
    return v ? gs_err_raced(r->algo, err) : 0;
}

int gs_clrun_clear(gs_clrun *r, cl_mem m, size_t bytes, gs_err *err)
{
    /* the bulk with a wide pattern (fewer, larger stores where the runtime
     * fills by pattern), the tail with a word, or a half word where it is
     * one (16-bit keys: an odd count of them) */
    static const cl_uint zero[32];
    const size_t bulk = bytes / sizeof zero * sizeof zero, tail = bytes - bulk;
    const size_t unit = tail % sizeof zero[0] ? 2 : sizeof zero[0];
    cl_int crc = CL_SUCCESS;
    if (bulk)
        crc = clEnqueueFillBuffer(r->q, m, zero, sizeof zero, 0, bulk, 0, NULL, NULL);
    if (crc == CL_SUCCESS && tail)
        crc = clEnqueueFillBuffer(r->q, m, zero, unit, bulk, tail, 0, NULL, NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueFillBuffer", crc, "%s: clearing %zu bytes", r->algo,
                          bytes);
    return 0;
}

int gs_clrun_fetch(gs_clrun *r, void *dst, cl_mem src, size_t bytes, gs_err *err)
{
    if (bytes == 0)
        return 0;
    int rc = staged(r, 0, src, dst, bytes, err);
    if (rc != 1)
        return rc;
    const int timed = r->dev->info.profiling && r->ndnev < GS_CLRUN_UPLOADS;
    cl_event ev = NULL;
    cl_int crc = clEnqueueReadBuffer(r->q, src, CL_FALSE, 0, bytes, dst, 0, NULL,
                                     timed ? &ev : NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueReadBuffer", crc, "%s: %zu bytes", r->algo, bytes);
    if (timed)
        r->dnev[r->ndnev++] = ev;
    return 0;
}

int gs_clrun_raced_fetch(gs_clrun *r, gs_err *err)
{
    if (!r->raced)
        return 0;
    r->raced_word = 0;
    cl_int crc = clEnqueueReadBuffer(r->q, r->raced, CL_FALSE, 0, sizeof r->raced_word,
                                     &r->raced_word, 0, NULL, NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueReadBuffer", crc, "%s: race flag", r->algo);
    r->raced_fetched = 1;
    return 0;
}
