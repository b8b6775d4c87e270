/* memcpy over several threads, for the large copies on the data path (a
 * client's staging copies; one thread moves 5-10 GB/s, far below the
 * memory's bandwidth and a GPU link's 55 GB/s). Below GS_PCOPY_MIN bytes, or
 * when a thread cannot be started, it is a plain memcpy on this thread. */
#ifndef GS_PCOPY_H
#define GS_PCOPY_H

#include <stddef.h>

#define GS_PCOPY_MIN ((size_t)32 << 20)
#define GS_PCOPY_THREADS 8

void gs_pcopy(void *dst, const void *src, size_t n);

/* memcpy on this thread with streaming (non-temporal) stores where the
 * CPU has them: a copy far larger than the caches then writes dst without
 * first reading it in, a third less memory traffic. Plain memcpy
 * elsewhere. */
void gs_copy_stream(void *dst, const void *src, size_t n);

#endif
