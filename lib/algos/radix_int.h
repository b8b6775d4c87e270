/* Private to the radix sort (algo_radix.c, radix_count.c, radix_prog.c):
 * the program both paths share (radix_prog.c), and the counting path of
 * 16-bit keys alone (radix_count.c). */
#ifndef GS_RADIX_INT_H
#define GS_RADIX_INT_H

#include <stddef.h>

#include "gs_cl.h"
#include "gs_keys.h"
#include "gs_narrow.h"
#include "gs_sort.h"

/* The kernels' encoding kind of a request's keys (kernels/keys.cl: its
 * GS_KIND_* values; gs_dtype_kind's, and 3 for bfloat16, GS_KIND_BF16) */
static inline cl_uint gs_radix_kind(const gs_shape *s)
{
    if (!s->narrow)
        return (cl_uint)gs_keys_kind(s->dtype);
    return s->narrow == GS_NW_BF16 ? 3u : (cl_uint)gs_narrow_row(s->narrow)->kind;
}

/* The radix program for (bits, wg, ept) and keys of ks bytes (2: the
 * GS_K16 build), for client pages with `hostile`; opts receives the build
 * options. 0 or a negative error code. */
int gs_radix_program(gs_sort_ctx *ctx, int bits, size_t wg, size_t ept, int hostile, size_t ks,
                     char *opts, size_t optsz, cl_program *prog, gs_err *err);

/* Whether radix sorts req by counting (radix_count.c) on a device like
 * info: flat 16-bit keys alone over all their bits, where a slice of the
 * codes' counts fits the device's local memory, when gs_radix_force_count
 * (or, left at -1, its default: a GPU from COUNT_FROM keys) says so. */
int gs_radix_counts(const gs_dev_info *info, const gs_sort_req *req);

/* The slice of the codes (2^sb of them) a group of the counting sort
 * counts in local memory on a device like info (kernels/radix.cl CNT_SB,
 * a -D option of the 16-bit program): 8..13, or 0 where 2^8 do not fit. */
int gs_radix_count_sb(const gs_dev_info *info);

/* The counting sort of req (gs_radix_counts) on ctx->dev, with the
 * program of the radix parameters (bits, wg, ept) the route gave, so no
 * other build: the frame's steps (gs_devrun.h), then st as gs_algo.run. */
int gs_radix_count_sort(gs_sort_ctx *ctx, const gs_sort_req *req, int bits, size_t wg,
                        size_t ept, gs_sort_stats *st, gs_err *err);

#endif
