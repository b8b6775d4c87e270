/* Building OpenCL programs for a device, with two caches in front:
 * an in-memory one per gs_dev (a built cl_program is reused for the same
 * sources and options) and the on-disk program-binary cache of gs_pcache.h,
 * keyed by platform, device name, driver version, source hash and build
 * options. */
#ifndef GS_PROG_H
#define GS_PROG_H

#include "gs_dev.h"
#include "gs_pcache.h"

enum gs_prog_origin {
    GS_PROG_MEMORY = 0,  /* reused from the gs_dev in-memory list */
    GS_PROG_DISK_HIT,    /* loaded from a valid cache entry */
    GS_PROG_BUILT,       /* compiled from source (no entry, or no cache) */
    GS_PROG_REBUILT,     /* an entry existed but was corrupt; rebuilt and replaced */
};

typedef struct gs_prog_stats {
    int origin;          /* enum gs_prog_origin */
    double ms;           /* wall time of the build or load */
    int stored;          /* 1 if a cache entry was written */
} gs_prog_stats;

/* Build (or fetch) a program for `dev` from the concatenation of the named
 * kernel sources (NULL-terminated list, e.g. {"keys","radix",NULL}) with
 * `options` (the -D parameter string). `pc` may be NULL: no disk cache.
 * The returned program belongs to the device (released by gs_dev_close);
 * do not release it. A build failure returns GS_EBUILD with the compiler log
 * in err->msg. `st` may be NULL. Thread-safe per device. */
int gs_prog_get(gs_dev *dev, gs_pcache *pc, const char *const *sources,
                const char *options, cl_program *out, gs_prog_stats *st, gs_err *err);

/* Build from explicit source text, bypassing the kernel table (tests, tools).
 * Same caching behaviour; `label` names the source in messages. */
int gs_prog_get_text(gs_dev *dev, gs_pcache *pc, const char *label, const char *text,
                     const char *options, cl_program *out, gs_prog_stats *st, gs_err *err);

/* Kernel objects kept with their program between sorts: making one
 * (clCreateKernel) costs tens of microseconds on some drivers, on every
 * small request. take gives one named `name` of `prog` (a program
 * gs_prog_get returned) that an earlier sort put back, or NULL (make one);
 * put keeps k for the next taker, or releases it (a program no longer
 * held, or enough kept). One user at a time: a kernel put back may still
 * be enqueued (a launch keeps its arguments), but the putter must not
 * touch it again. Its arguments are stale: set them all before a launch. */
cl_kernel gs_prog_kernel_take(gs_dev *dev, cl_program prog, const char *name);
void gs_prog_kernel_put(gs_dev *dev, cl_program prog, const char *name, cl_kernel k);

/* Drop the device's in-memory programs and their kept kernels (so the next
 * get goes to disk). */
void gs_prog_forget(gs_dev *dev);

#endif
