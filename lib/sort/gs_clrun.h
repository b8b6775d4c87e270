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
#define GS_CLRUN_UPLOADS 4

typedef struct gs_clrun {
    gs_dev *dev;
    cl_command_queue q;   /* where everything is enqueued: the device's queue, or
                             another of its queues (gs_dev_lane) */
    const char *algo;     /* prefix for messages: "mergepath" */
    cl_event *kev;        /* kernel events, summed by gs_clrun_kernel_ms */
    size_t nkev, kevcap;
    double upload_ms, download_ms;
    cl_event upev[GS_CLRUN_UPLOADS];  /* uploads enqueued, not yet timed */
    unsigned nupev;
    int defer_down;       /* downloads are enqueued, not waited for (gs_clrun_defer) */
    int host_written;     /* a download wrote (or began writing) the host's array */
    int lean;             /* kernels without events (gs_clrun_lean) */
    double span_ms;       /* lean: the kernels' span, at gs_clrun_settle; -1 unknown */
    cl_event dnev[GS_CLRUN_UPLOADS];  /* such downloads, not yet timed */
    unsigned ndnev;
    int host_pinned;      /* from gs_sort_ctx: no staging for the host side */
    int *touched;         /* the algorithm's st->output_touched (gs_clrun_input) */
    int hostile;          /* the kernels were built to run on the caller's own pages
                             (gs_clrun_hostile): only then does gs_clrun_input adopt them */
    cl_mem raced;         /* the race flag (gs_clrun_raced), NULL until asked for */
    cl_uint raced_word;   /* the flag as gs_clrun_raced_fetch reads it */
    int raced_fetched;    /* ... enqueued: gs_clrun_raced_check looks at raced_word */
    cl_mem adopt[2];      /* the caller's arrays as buffers (CPU devices: zero copy) */
    void *adopt_host[2];
    size_t adopt_bytes[2];
    unsigned nadopt;
    cl_mem buf[GS_CLRUN_BUFS];     /* from gs_clrun_buffer, back to the pool at release */
    size_t bufsz[GS_CLRUN_BUFS];
    size_t bufuse[GS_CLRUN_BUFS];  /* guarded (gs_clrun_guard): where the guard starts */
    unsigned nbuf;
} gs_clrun;

void gs_clrun_init(gs_clrun *r, gs_dev *dev, const char *algo);
/* After gs_clrun_init on an open device: enqueue on `q` (NULL: the
 * device's own queue) and copy straight from the host when host_pinned.
 * A queue other than the device's never goes through the device's one set
 * of staging buffers (gs_stage.h), which another queue may be using. */
void gs_clrun_use(gs_clrun *r, cl_command_queue q, int host_pinned);
/* clFinish the queue, release the events, and give the buffers made by
 * gs_clrun_buffer back to the device's pool (gs_bufpool.h). Kernels are the
 * caller's (gs_clrun_kernel_done). */
void gs_clrun_release(gs_clrun *r);

/* After the queue has finished: the uploads' times into upload_ms (an
 * upload is enqueued without waiting for it), and deferred downloads'
 * into download_ms; in a lean run the kernels' span into span_ms. */
void gs_clrun_settle(gs_clrun *r);
/* One wait per sort (issue 36): 1 when the result can go back by plain
 * downloads enqueued behind the kernels, before the one wait for the
 * queue; from then on gs_clrun_output only enqueues them (the host array
 * is written when the queue has finished, so the caller waits before it
 * reads it or lets it go). 0, and nothing changes, where the result must
 * be checked first (a race flag: adopted pages) or goes back through the
 * caller's own pages (adopted arrays), or without profiling events to time
 * the downloads by. */
int gs_clrun_defer(gs_clrun *r);
/* After a failed wait: 0 when no download can have written the host's
 * arrays (none waited for ran, every deferred one was ended unrun by the
 * failure: the caller's input is intact for a fallback), else 1. */
int gs_clrun_host_written(gs_clrun *r);
/* Lean timing (issue 36: a profiling event costs ~7 us a command on
 * NVIDIA's driver, as much as the launch): when `want` and the run will
 * wait once (gs_clrun_defer's conditions, and a result of out_bytes that
 * goes back unstaged), kernels are launched without events, except the
 * first when no upload has one; gs_clrun_settle then takes the kernels'
 * time as the span from the last upload's end (or that first kernel's
 * start) to the first download's start, which the in-order queue puts
 * between them. Not with debug logging (per-kernel times are logged
 * there). 1 when lean. */
int gs_clrun_lean(gs_clrun *r, int want, size_t out_bytes);

/* END-START of a finished event in ms (0 when profiling is unavailable). */
double gs_clrun_event_ms(cl_event e);
/* Sum of the kernel times launched so far (waits for them). */
double gs_clrun_kernel_ms(gs_clrun *r);

/* A kernel from a built program (one kept from an earlier sort when there
 * is one, gs_prog.h); refuses (GS_EUNSUPPORTED) if this kernel cannot run
 * `wg` work-items per group or needs more local memory than the device has
 * (registers and local use can cap it below the device max). *out may be
 * set on a refusal too: give it back with gs_clrun_kernel_done. */
int gs_clrun_kernel(gs_clrun *r, cl_program prog, const char *name, size_t wg,
                    cl_kernel *out, gs_err *err);
/* Done with k (of prog, named name; NULL: nothing): kept for the next
 * sort. It may still be enqueued; its arguments are set again by the next
 * user. */
void gs_clrun_kernel_done(gs_clrun *r, cl_program prog, const char *name, cl_kernel k);

typedef struct gs_karg { size_t size; const void *ptr; } gs_karg;
#define GS_KARG(v) { sizeof(v), &(v) }
#define GS_KLOCAL(bytes) { (bytes), NULL }
int gs_clrun_args(cl_kernel k, const char *name, const gs_karg *a, unsigned n, gs_err *err);

/* Enqueue groups*wg work-items in groups of wg; the event is kept (but
 * in a lean run, gs_clrun_lean). */
int gs_clrun_launch(gs_clrun *r, cl_kernel k, const char *name, size_t groups, size_t wg,
                    gs_err *err);

/* Test hook: every kernel launch from the `at`-th (counted from this call,
 * process-wide) fails with `code`; at <= 0 turns it off. */
void gs_clrun_inject_fault(long at, cl_int code);
/* Test hook: the launches counted since the last gs_clrun_inject_fault. */
long gs_clrun_launch_count(void);
/* Test hook: only device `index`'s launches count and fail (-1: any). */
void gs_clrun_inject_fault_device(int index);

/* Device buffer (at least 4 bytes, so n = 0 paths need no special case),
 * from the device's pool when one fits; gs_clrun_release puts it back, the
 * caller never releases it. Its contents are undefined. */
int gs_clrun_buffer(gs_clrun *r, size_t bytes, const char *what, cl_mem *out, gs_err *err);
/* The buffer an input array (the request's keys or values, `bytes` at
 * `host`) is sorted from. On a CPU device it is the array itself (a
 * CL_MEM_USE_HOST_PTR buffer: device memory is host memory there, so
 * nothing is copied); kernels may then write the caller's array, so from
 * the first launch on *r->touched is set (the input is no longer intact for
 * a fallback). Elsewhere a device buffer (gs_clrun_buffer) that gets the
 * array's bytes when `upload` (an output-only array, argsort's indices,
 * needs none). */
int gs_clrun_input(gs_clrun *r, void *host, size_t bytes, int upload, const char *what,
                   cl_mem *out, gs_err *err);
/* Write the result in `src` back to the caller's array at `host`: nothing
 * to copy when src is that array's own buffer (gs_clrun_input), a copy on
 * the device into it when the result lies in another buffer, else a
 * download. */
int gs_clrun_output(gs_clrun *r, void *host, cl_mem src, size_t bytes, gs_err *err);
/* Test hook: no zero-copy input (every device copies, as a GPU does). */
void gs_clrun_no_adopt(int off);
/* Test hook: every gs_clrun_buffer made from now on has `bytes` of guard
 * after its end, filled with a pattern that the release checks (then frees
 * the buffer: guarded ones bypass the pool), so a kernel that writes past
 * a device buffer shows, which no sanitizer sees on a CPU device; 0 turns
 * it off. gs_clrun_guard_breaches counts the guards found changed. */
void gs_clrun_guard(size_t bytes);
unsigned long gs_clrun_guard_breaches(void);

/* ---- client pages are hostile (issue 32) ----
 * Where gs_clrun_input adopts the caller's arrays (CPU devices, PoCL), the
 * kernels run on pages the client can rewrite while they run, so a pass
 * that derives positions from keys an earlier pass read (radix's counts
 * and scatter, mergepath's partitions and merge, the NaN save's counts)
 * can meet other keys. Such kernels are built with GS_HOSTILE_OPT and then
 * bound every position they derive (a wrong order at worst, and the race
 * flag set where they notice), and only then are arrays adopted (set
 * r->hostile; shellsort's kernels are safe as they are). Everywhere else
 * the kernels run on device buffers the client cannot reach, so they are
 * built without it and run as fast as before: on a GPU gs_clrun_input
 * uploads the arrays into buffers of their own (straight, or through
 * pinned staging, gs_stage.h, whose host copies take sizes from n alone),
 * and a pinned block's registration (gs_pin.h) is never given to a kernel.
 * What a client rewrites during the upload is a wrong answer, not a
 * hazard. After the download the caller's pages are hostile again on
 * every device: the host steps that read them (out of core, a split's
 * merge: gs_ooc.c, gs_ooc_dev.c) bound what they derive from them. */
#define GS_HOSTILE_OPT " -DGS_HOSTILE=1"
/* 1 when sorts on dev adopt the caller's arrays (a CPU device, zero copy
 * not turned off), or as gs_clrun_force_hostile says. */
int gs_clrun_hostile(const gs_dev *dev);
/* Test hook: 1 every device builds the hostile kernels (Oclgrind checks
 * them on copies), 0 none does (so none adopts), -1 per device. */
void gs_clrun_force_hostile(int mode);
/* The race flag a hostile kernel sets (GS_BAD_REPORT in kernels/keys.cl) when
 * it finds a position out of its bounds: one zeroed word, made on the
 * first call and kept for the run, passed as the kernel's last argument. */
int gs_clrun_raced(gs_clrun *r, cl_mem *out, gs_err *err);
/* After the queue has finished: GS_EINVAL (gs_err_raced) when a kernel
 * set the race flag, else 0 (also when none was made). */
int gs_clrun_raced_check(gs_clrun *r, gs_err *err);
/* One wait where the result must be checked before it is placed (issue
 * 36: gs_clrun_defer declines a run with a race flag, since a download
 * straight into the caller's array would write it before the look). For
 * an algorithm that downloads into buffers of its own and places the
 * answer itself (select): gs_clrun_fetch enqueues a read of `bytes` of src
 * into `dst` without waiting (dst is the caller's private memory, never
 * the client's array, and must stay until the queue has finished:
 * gs_clrun_release waits first); gs_clrun_raced_fetch enqueues the race
 * flag's read into the run (a no-op without a flag), after which
 * gs_clrun_raced_check reads that word instead of the device. Then one
 * wait for the queue, gs_clrun_settle, the checks, the placing. A fetch
 * is timed into download_ms at gs_clrun_settle (while there are event
 * slots; beyond them, or without profiling, its time is the wait's); a
 * result big enough to go through pinned staging (gs_stage.h) is copied
 * that way as gs_clrun_download would, waiting for it. */
int gs_clrun_fetch(gs_clrun *r, void *dst, cl_mem src, size_t bytes, gs_err *err);
int gs_clrun_raced_fetch(gs_clrun *r, gs_err *err);
/* Test hook: the host waits gs_clrun has made for transfers so far,
 * process-wide (a blocking read or write, a staged transfer, the race
 * flag's blocking read, the write-back through an adopted array); a run
 * that waits once makes none of them, only its own wait for the queue. */
unsigned long gs_clrun_waits(void);
/* Zero `bytes` of a scratch buffer: a hostile pass may leave slots of its
 * output unwritten, which later passes move into the caller's arrays;
 * cleared, they hold nothing of another request's (pooled buffers do). */
int gs_clrun_clear(gs_clrun *r, cl_mem m, size_t bytes, gs_err *err);

/* Transfers, timed into upload_ms / download_ms: an upload is enqueued
 * (timed at gs_clrun_settle), a download waited for unless deferred
 * (gs_clrun_defer). */
int gs_clrun_upload(gs_clrun *r, cl_mem dst, const void *src, size_t bytes, gs_err *err);
int gs_clrun_download(gs_clrun *r, void *dst, cl_mem src, size_t bytes, gs_err *err);

#endif
