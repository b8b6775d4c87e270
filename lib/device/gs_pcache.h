/* The on-disk program-binary cache (gs_pcache.c): one file per (platform,
 * device name, driver version, source hash, build options) holding the
 * driver's binary behind checksummed headers. The program builder
 * (gs_prog.c) consults it before compiling; the daemon, the tuner and the
 * tools open and close it. A truncated or corrupt entry fails its checks and
 * is rebuilt and replaced; an unwritable cache directory degrades to
 * building every time, with one warning. It depends on the device layer
 * only, not on gs_prog. */
#ifndef GS_PCACHE_H
#define GS_PCACHE_H

#include <stddef.h>

#include "gs_dev.h"

typedef struct gs_pcache gs_pcache;

/* Open the on-disk cache in `dir` (NULL: default location: $GSORTD_CACHE_DIR,
 * else /var/cache/gsortd as root, else $XDG_CACHE_HOME/gsortd, else
 * ~/.cache/gsortd). Never fails for an unusable directory: the cache is then
 * disabled and a single warning logged at first use. Fails only for ENOMEM. */
int gs_pcache_open(gs_pcache **pc, const char *dir, gs_err *err);
void gs_pcache_close(gs_pcache *pc);
const char *gs_pcache_dir(const gs_pcache *pc);
int gs_pcache_enabled(const gs_pcache *pc);   /* 0 once degraded */

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
