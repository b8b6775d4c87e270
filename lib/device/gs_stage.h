/* Copies between a device and host memory that is not pinned (memory the
 * daemon sees once: a one-shot memfd, an inline request's buffer), through
 * pinned staging. A pageable copy on NVIDIA's OpenCL runs at 5-7 GB/s (the
 * driver's bounce buffers, and page faults on a fresh mapping); instead the
 * bytes go in chunks through two pinned buffers of the device's
 * (CL_MEM_ALLOC_HOST_PTR, mapped once): while the DMA of one chunk runs at
 * the PCIe rate, several threads copy the next chunk into the other buffer
 * (gs_pcopy.h), and on the way back the copy out of one overlaps the DMA
 * into the other. Used by gs_clrun's transfers on GPUs for copies of at
 * least GS_STAGE_MIN bytes; the staging buffers are kept on the device
 * (freed with it). */
#ifndef GS_STAGE_H
#define GS_STAGE_H

#include <stddef.h>

#include "gs_dev.h"
#include "gs_err.h"

#define GS_STAGE_MIN ((size_t)32 << 20)   /* below it (measured on the H200) the pageable copy is as fast */
#define GS_STAGE_CHUNK ((size_t)32 << 20)

/* Whether a copy of `bytes` to or from unpinned host memory on dev goes
 * through staging (a GPU, a large copy; the test hook below otherwise). */
int gs_stage_wanted(const gs_dev *dev, size_t bytes);
/* Host -> device: src to dst at offset 0, bytes long. Returns 0, or an
 * error (the caller may fall back to a plain copy when staging buffers
 * cannot be made: GS_ENOMEM). */
int gs_stage_upload(gs_dev *dev, cl_mem dst, const void *src, size_t bytes, gs_err *err);
/* Device -> host. */
int gs_stage_download(gs_dev *dev, void *dst, cl_mem src, size_t bytes, gs_err *err);

/* Staged transfers made so far in this process (uploads + downloads). */
unsigned long gs_stage_transfers(void);

/* Test hook: stage on every device from `min` bytes, in chunks of `chunk`
 * (0, 0: back to the defaults, GPUs only). */
void gs_stage_force(size_t min, size_t chunk);

#endif
