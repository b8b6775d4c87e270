/* The scaffolding every device algorithm needs for one sort: buffers,
 * kernels checked against the device's per-kernel limits, launches whose
 * profiling events are kept so kernel time can be summed, and timed
 * transfers. One gs_clrun per sort; gs_clrun_release waits for the queue and
 * frees every event, so error paths need no bookkeeping of their own. */
#ifndef GS_CLRUN_H
#define GS_CLRUN_H

#include <stddef.h>

#include "gs_dev.h"

#define GS_CLRUN_BUFS 16

typedef struct gs_clrun {
    gs_dev *dev;
    const char *algo;     /* prefix for messages: "mergepath" */
    cl_event *kev;        /* kernel events, summed by gs_clrun_kernel_ms */
    size_t nkev, kevcap;
    double upload_ms, download_ms;
    int host_pinned;      /* from gs_sort_ctx: no staging for the host side */
    cl_mem buf[GS_CLRUN_BUFS];     /* from gs_clrun_buffer, back to the pool at release */
    size_t bufsz[GS_CLRUN_BUFS];
    unsigned nbuf;
} gs_clrun;

void gs_clrun_init(gs_clrun *r, gs_dev *dev, const char *algo);
/* clFinish the queue, release the events, and give the buffers made by
 * gs_clrun_buffer back to the device's pool (gs_bufpool.h). Kernels are the
 * caller's (release them after this). */
void gs_clrun_release(gs_clrun *r);

/* END-START of a finished event in ms (0 when profiling is unavailable). */
double gs_clrun_event_ms(cl_event e);
/* Sum of the kernel times launched so far (waits for them). */
double gs_clrun_kernel_ms(gs_clrun *r);

/* A kernel from a built program; refuses (GS_EUNSUPPORTED) if this kernel
 * cannot run `wg` work-items per group or needs more local memory than the
 * device has (registers and local use can cap it below the device max). */
int gs_clrun_kernel(gs_clrun *r, cl_program prog, const char *name, size_t wg,
                    cl_kernel *out, gs_err *err);

typedef struct gs_karg { size_t size; const void *ptr; } gs_karg;
#define GS_KARG(v) { sizeof(v), &(v) }
#define GS_KLOCAL(bytes) { (bytes), NULL }
int gs_clrun_args(cl_kernel k, const char *name, const gs_karg *a, unsigned n, gs_err *err);

/* Enqueue groups*wg work-items in groups of wg; the event is kept. */
int gs_clrun_launch(gs_clrun *r, cl_kernel k, const char *name, size_t groups, size_t wg,
                    gs_err *err);

/* Test hook: every kernel launch from the `at`-th (counted from this call,
 * process-wide) fails with `code`; at <= 0 turns it off. */
void gs_clrun_inject_fault(long at, cl_int code);

/* Device buffer (at least 4 bytes, so n = 0 paths need no special case),
 * from the device's pool when one fits; gs_clrun_release puts it back, the
 * caller never releases it. Its contents are undefined. */
int gs_clrun_buffer(gs_clrun *r, size_t bytes, const char *what, cl_mem *out, gs_err *err);
/* Blocking transfers, timed into upload_ms / download_ms. */
int gs_clrun_upload(gs_clrun *r, cl_mem dst, const void *src, size_t bytes, gs_err *err);
int gs_clrun_download(gs_clrun *r, void *dst, cl_mem src, size_t bytes, gs_err *err);

#endif
