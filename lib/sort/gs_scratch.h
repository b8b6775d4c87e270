/* Scratch memory for host sorts and merges, kept for the next request:
 * first touching fresh pages costs more than a radix pass over them (20 ms
 * of a 2^24-key sort with 4 KiB pages; a 2^27-key sort's 512 MiB faulted
 * in on every call), so a buffer given back is cached and handed out again
 * to a request that fits in it. At most GS_SCRATCH_KEEP buffers and an
 * eighth of the RAM are cached; gs_scratch_trim frees those idle too long
 * (the daemon's tick). Thread-safe. */
#ifndef GS_SCRATCH_H
#define GS_SCRATCH_H

#include <stddef.h>

#define GS_SCRATCH_KEEP 8

/* `bytes` of cache-line aligned memory (from 4 MiB up in huge pages where
 * the kernel has them), a cached buffer when one fits (from 1 MiB up);
 * NULL when out of memory. Give it back with gs_scratch_put(p, bytes), not
 * free(). */
void *gs_scratch_get(size_t bytes);
/* Give back what gs_scratch_get(bytes) returned (NULL: nothing): cached
 * when large, freed otherwise. */
void gs_scratch_put(void *p, size_t bytes);
/* Free the cached buffers nobody took for idle_ms (0: all); returns the
 * bytes freed. */
size_t gs_scratch_trim(double idle_ms);
/* Bytes cached now (tests, stats). */
size_t gs_scratch_cached(void);

#endif
