/* STUB: on-disk program cache (to be written): always misses. */
#include "config.h"
#include "gs_pcache_int.h"
#include <stdlib.h>
struct gs_pcache { int dummy; };
int gs_pcache_open(gs_pcache **pc, const char *dir, gs_err *err) { (void)dir; (void)err; *pc = calloc(1, sizeof **pc); return *pc ? 0 : GS_ENOMEM; }
void gs_pcache_close(gs_pcache *pc) { free(pc); }
const char *gs_pcache_dir(const gs_pcache *pc) { (void)pc; return ""; }
int gs_pcache_enabled(const gs_pcache *pc) { (void)pc; return 0; }
int gs_pcache_load(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen, const char *options, cl_program *out, gs_err *err)
{ (void)pc; (void)dev; (void)src; (void)srclen; (void)options; (void)out; (void)err; return GS_ENOTFOUND; }
int gs_pcache_store(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen, const char *options, cl_program prog, gs_err *err)
{ (void)pc; (void)dev; (void)src; (void)srclen; (void)options; (void)prog; (void)err; return GS_ENOTFOUND; }
