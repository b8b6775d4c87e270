/* The radix sort's OpenCL program (kernels/keys.cl and radix.cl) for a
 * parameter set: its build options, the scatter's local ranking chosen per
 * device (and the fallback when NVIDIA's inline PTX does not build), and
 * the counting sort's slice of codes for 16-bit keys. Shared by the sort
 * passes (algo_radix.c) and the counting path (radix_count.c). */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "gs_algos.h"
#include "gs_clrun.h"
#include "gs_log.h"
#include "gs_prog.h"
#include "radix_int.h"

/* ---- which local ranking the scatter uses (RANK_WARP in kernels/radix.cl) ---- */

enum { RANK_LOCAL = 0, RANK_WARP_EMUL = 1, RANK_WARP_PTX = 2 };

/* Set by the test hook; -1: pick per device. */
static _Atomic int rank_forced = -1;
/* Set when a PTX build failed once: NVIDIA devices then use RANK_LOCAL. */
static _Atomic int ptx_failed;

int gs_radix_force_rank(int mode)
{
    return atomic_exchange(&rank_forced, mode);
}

/* A group of radix_count16 counts a slice of 2^CNT_SB codes in local
 * memory, 2^13 (32 KiB) where the device has room for it beside what the
 * compiler keeps there (LOCAL_SPARE): on an H200, 16 slices of 2^12 took
 * 1.68 ms to count 2^27 keys, 8 of 2^13 0.89 ms. At least 2^8. */
#define SB_MOST 13
#define SB_LEAST 8
#define LOCAL_SPARE 1024

int gs_radix_count_sb(const gs_dev_info *info)
{
    int sb = SB_MOST;
    while (sb >= SB_LEAST && ((size_t)4 << sb) + LOCAL_SPARE > info->local_mem)
        sb--;
    return sb >= SB_LEAST ? sb : 0;
}

/* The warp ranking needs whole 32-lane warps; in PTX it needs an NVIDIA
 * device of compute capability 7.0 or later (match.any.sync), read when the
 * device was probed. */
static int rank_mode(const gs_dev *dev, size_t wg)
{
    if (wg % 32)
        return RANK_LOCAL;
    int forced = atomic_load(&rank_forced);
    if (forced >= 0)
        return forced;
    return dev->info.nv_cc_major >= 7 && !atomic_load(&ptx_failed) ? RANK_WARP_PTX : RANK_LOCAL;
}

/* Build (or fetch) the program for one parameter set, for client pages
 * (GS_HOSTILE_OPT) where the device adopts them (gs_clrun_hostile); a PTX
 * build that fails falls back to the portable ranking, says so once, and
 * is not tried again in this process. */
int gs_radix_program(gs_sort_ctx *ctx, int bits, size_t wg, size_t ept, int hostile, size_t ks,
                     char *opts, size_t optsz, cl_program *prog, gs_err *err)
{
    gs_dev *dev = ctx->dev;
    int mode = rank_mode(dev, wg);
    for (;;) {
        int w = snprintf(opts, optsz, "-DRADIX_BITS=%d -DWG=%zu -DEPT=%zu%s", bits, wg, ept,
                         hostile ? GS_HOSTILE_OPT : "");
        /* 16-bit keys: a build of their own (GS_K16 in kernels/radix.cl),
         * with the counting sort's slice of codes, fixed per device */
        if (ks == 2)
            w += snprintf(opts + w, optsz - (size_t)w, " -DGS_K16=1 -DCNT_SB=%d",
                          gs_radix_count_sb(&dev->info));
        /* with PTX, the look-back loads are volatile too (ld.volatile) */
        if (mode != RANK_LOCAL)
            snprintf(opts + w, optsz - (size_t)w, " -DRANK_WARP=%d%s", mode,
                     mode == RANK_WARP_PTX ? " -DLB_PTX=1" : "");
        int rc = gs_prog_get(dev, ctx->pc, (const char *[]){ "keys", "radix", NULL }, opts, prog,
                             NULL, err);
        if (rc == 0 || mode != RANK_WARP_PTX || atomic_load(&rank_forced) >= 0)
            return rc;
        if (!atomic_exchange(&ptx_failed, 1))
            GS_WARN("radix: the warp ranking (inline PTX) did not build on %s, using the "
                    "portable ranking: %s", dev->info.name, err->msg);
        gs_err_clear(err);
        mode = RANK_LOCAL;
    }
}

