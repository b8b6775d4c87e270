/* Internal interface between the program builder (gs_prog.c) and the
 * on-disk binary cache (gs_pcache.c). Not used elsewhere. */
#ifndef GS_PCACHE_INT_H
#define GS_PCACHE_INT_H

#include "gs_prog.h"

/* Look up the binary for (dev identity, source text, options). Returns 0 and
 * a built program on a hit; GS_ENOTFOUND on a miss or when the cache is
 * disabled; GS_ECORRUPT when an entry existed but failed its checks (it is
 * removed; the caller rebuilds and stores). */
int gs_pcache_load(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen,
                   const char *options, cl_program *out, gs_err *err);
/* Store a built program's binary atomically (write temp, fsync, rename).
 * Returns 0, or a negative code after logging (callers ignore failures: a
 * cache that cannot be written degrades to building every time). */
int gs_pcache_store(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen,
                    const char *options, cl_program prog, gs_err *err);

#endif
