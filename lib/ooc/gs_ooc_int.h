/* What the out-of-core files share: the device route (two passes through
 * the device, gs_ooc_dev.c) and the host's rescue of a failed device's
 * pieces (gs_ooc.c), both called from gs_ooc_sort.c. */
#ifndef GS_OOC_INT_H
#define GS_OOC_INT_H

#include "gs_sort.h"

/* The device route: req cut into pieces sorted on the device, `lanes` at
 * a time (each then at most chunk_n / lanes keys), then cut by a co-rank
 * search into segments sorted on the device again. Fills st as
 * gs_ooc_sort does, merge_ms timing the second pass. */
int gs_ooc_twopass(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                   const gs_params *p, size_t chunk_n, unsigned lanes, gs_sort_stats *st,
                   gs_err *err);

/* After a device failed on some pieces, none of whose arrays it wrote
 * (sorted[i] says which pieces it finished): sort the others with the
 * host sort, then merge all of them on the host, so the answer is still
 * right (argsort indices too, which sorting the permuted request again
 * would lose). Logs a warning naming `why`. Fills st->merge_ms. */
int gs_ooc_rescue(const gs_sort_req *req, size_t *bounds, size_t npieces,
                  const unsigned char *sorted, const char *why, gs_sort_stats *st,
                  gs_err *err);

#endif
