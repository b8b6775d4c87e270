/* What gs_chunk.c and gs_chunk_dev.c share: the device route itself (two
 * passes through the device, gs_chunk_dev.c). */
#ifndef GS_CHUNK_INT_H
#define GS_CHUNK_INT_H

#include "gs_sort.h"

/* The device route: req cut into pieces sorted on the device, `lanes` at
 * a time (each then at most chunk_n / lanes keys), then cut by a co-rank
 * search into segments sorted on the device again. Fills st as
 * gs_chunk_sort does, merge_ms timing the second pass. */
int gs_chunk_twopass(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                     const gs_params *p, size_t chunk_n, unsigned lanes, gs_sort_stats *st,
                     gs_err *err);

#endif
