/* A per-device pool of device buffers, so that a request does not pay for
 * creating (and the driver for allocating and mapping) the buffers the
 * request before it just released: the sort buffers of a device algorithm
 * (gs_clrun_buffer) come from here and go back here (gs_clrun_release).
 * A buffer is reused for a request of the same size, or up to an eighth
 * larger (kernels take n; transfers name their sizes), never shared: one
 * taker at a time. The pool of each device holds at most a share of its
 * global memory (gs_bufpool_set_share, process-wide; 0 turns pooling off)
 * and GS_BUFPOOL_MAX buffers; what waited longer than gs_bufpool_trim's
 * idle time is released. Its contents are whatever the last sort left:
 * algorithms initialise what they read, as they must for any new OpenCL
 * buffer. */
#ifndef GS_BUFPOOL_H
#define GS_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "gs_dev.h"

#define GS_BUFPOOL_MAX 16

/* Percent of each device's global memory the pool may hold (default 25;
 * 0: every buffer is released at once). */
void gs_bufpool_set_share(unsigned percent);
/* A pooled buffer of at least `bytes` (and at most bytes + bytes / 8), or
 * NULL. *size gets its real size. */
cl_mem gs_bufpool_take(gs_dev *dev, size_t bytes, size_t *size);
/* Keep m (of `size` bytes) for the next taker, or release it when the pool
 * is full or pooling is off. */
void gs_bufpool_put(gs_dev *dev, cl_mem m, size_t size);
/* Release what has not been taken for idle_ms (0: everything). */
void gs_bufpool_trim(gs_dev *dev, double idle_ms);

typedef struct gs_bufpool_stats {
    size_t buffers;
    uint64_t bytes;
    unsigned long hits, misses;
} gs_bufpool_stats;
void gs_bufpool_stats_get(gs_dev *dev, gs_bufpool_stats *out);

#endif
