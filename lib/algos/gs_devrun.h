/* One device sort's frame, shared by every device algorithm (radix,
 * mergepath, shellsort): it opens the device, makes the run's gs_clrun,
 * takes the request's arrays as input buffers (uploaded, or the caller's
 * own pages where the kernels are safe on them) with second key and value
 * buffers, saves float keys' NaN patterns on the device, and lets the
 * algorithm enqueue its kernels; then it restores the NaN patterns,
 * enqueues the result's download and waits once for the queue (where the
 * result needs no look first: kernels on adopted pages have their race flag
 * checked, then write back), fills the timing fields of gs_sort_stats and
 * releases everything on every path.
 * An algorithm gives only its kernel part, as the hooks of a gs_devrun_ops. */
#ifndef GS_DEVRUN_H
#define GS_DEVRUN_H

#include "gs_clnan.h"
#include "gs_clrun.h"
#include "gs_sort.h"

/* Client pages are hostile (gs_clrun.h): the client may rewrite its arrays
 * at any moment, so the frame reads no key on the host (sizes come from n
 * alone, NaNs are counted on the device) and adopts the arrays only where
 * d->cr.hostile says the kernels bound every position they derive; a raced
 * sort fails with GS_EINVAL (gs_err_raced) before its result is written
 * back (on adopted pages the kernels wrote there already, and
 * st->output_touched says so). */

/* Kernels one sort may make with gs_devrun_kernel */
#define GS_DEVRUN_KERNELS 12

typedef struct gs_devrun {
    gs_clrun cr;              /* buffers, launches, transfers; cr.hostile: kernels
                                 safe on the caller's pages, so they are adopted */
    gs_sort_ctx *ctx;
    const gs_sort_req *req;
    gs_sort_stats *st;
    size_t n, ks, vs;         /* keys; bytes a key, a value (0: no values) */
    int idx;                  /* argsort: the kernels make the values */
    /* set by ops->kernels */
    cl_program prog;          /* gs_devrun_kernel's (and the NaN save's, keys.cl); an
                                 algorithm of several programs sets it before each
                                 kernel it makes */
    size_t wg;                /* work-items per group of those kernels */
    int second;               /* 1 (the default): make keys[1] and vals[1] */
    cl_mem keys[2], vals[2];  /* [0]: the input (maybe the caller's array); [1]:
                                 the second buffers, NULL when not made */
    /* set by ops->sort */
    int cur;                  /* the result lies in keys[cur] (and vals[cur]) */
    int unmoved;              /* no kernel moved a key: the caller's arrays hold the
                                 result already, but for argsort's indices */
    gs_clnan nan;
    cl_kernel kern[GS_DEVRUN_KERNELS];
    const char *kname[GS_DEVRUN_KERNELS];   /* their names, alive until the release */
    cl_program kprog[GS_DEVRUN_KERNELS];    /* and programs */
    unsigned nkern;
} gs_devrun;

/* An algorithm's part; `self` is its own state for the run. Each hook
 * returns 0 or a negative error code with a message in err. */
typedef struct gs_devrun_ops {
    const gs_algo *algo;      /* its name prefixes messages; with keeps_nan the
                                 NaN patterns are saved and restored on the
                                 device (gs_clnan.h) */
    const char *second[2];    /* what messages call keys[1] and vals[1]
                                 (NULL: "keys (second)", "values (second)") */
    const char *finish_what;  /* what a failed wait for the kernels names */
    int safe_as_built;        /* kernels need no GS_HOSTILE_OPT to run on the
                                 caller's pages: cr.hostile is always 1 */
    /* Build d->prog (with GS_HOSTILE_OPT when d->cr.hostile), set d->wg,
     * make the kernels with gs_devrun_kernel; may clear d->second. */
    int (*kernels)(gs_devrun *d, void *self, gs_err *err);
    /* Optional: the algorithm's other buffers (gs_clrun_buffer, the race
     * flag), after the keys' and values'. */
    int (*buffers)(gs_devrun *d, void *self, gs_err *err);
    /* Enqueue the sort of keys[0] (and vals[0]) after the NaN save; set
     * d->cur, d->unmoved where so, and the pass counts of d->st. */
    int (*sort)(gs_devrun *d, void *self, gs_err *err);
    /* Optional: the kernel time in ms, for an algorithm that sums it by
     * stage, and its debug line of the run (default: every launch's
     * event summed, gs_clrun_kernel_ms). Called after the write-back. */
    double (*kernel_ms)(gs_devrun *d, void *self);
    /* Optional: free what self holds; the queue has finished. */
    void (*release)(void *self);
} gs_devrun_ops;

/* A kernel of d->prog for d->wg work-items a group (gs_clrun_kernel),
 * released by the frame. */
int gs_devrun_kernel(gs_devrun *d, const char *name, cl_kernel *out, gs_err *err);

/* Sort req on ctx->dev through ops, filling st (as gs_algo.run: the
 * request and parameters checked, n > 0, st zeroed, wall_ms the caller's). */
int gs_devrun_sort(const gs_devrun_ops *ops, void *self, gs_sort_ctx *ctx,
                   const gs_sort_req *req, gs_sort_stats *st, gs_err *err);

#endif
