/* Sorting an array larger than a device can hold (out of core), and
 * merging arrays sorted in pieces elsewhere (the daemon's split over
 * several devices): the pieces are contiguous ranges of the request, each
 * sorted on its own by an ordinary run (gs_sort_run), then merged: on a
 * GPU by a second pass through the device (gs_ooc_dev.c: segments cut
 * by a co-rank search, each sorted there), else on the host by
 * gs_merge.h's k-way round on every free core. The merge is
 * stable (ties to the earlier piece), keeps float total order and every
 * NaN's bits with its value, and turns each piece's argsort indices into
 * the request's. Host memory beyond the caller's arrays: one scratch copy
 * of the keys and values (n * (key + value) bytes), plus the NaNs' bits
 * and values when some NaN is not the canonical one. */
#ifndef GS_OOC_H
#define GS_OOC_H

#include <stddef.h>

#include "gs_sort.h"

/* Sort req in pieces of at most chunk_n elements, each with
 * gs_sort_run(a, ctx, piece, p), then merge them (on a GPU: two at a time
 * where the request's memory is pinned, each then of chunk_n / 2). st gets
 * the pieces' upload, kernel and download times added up, chunks and
 * merge_ms. A piece the device fails on without writing its arrays is
 * sorted by the host sort instead, as are those not reached, and all are
 * merged on the host (logged): the answer is right. Otherwise the error is
 * returned with st->output_touched set (the request's data is lost). */
int gs_ooc_sort(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                const gs_params *p, size_t chunk_n, gs_sort_stats *st, gs_err *err);

/* req's elements [lo, lo + n) as a request of their own (argsort indices
 * then count from lo). For equal rows, lo and n must be whole rows, and
 * the piece has its own count of them. */
gs_sort_req gs_ooc_piece(const gs_sort_req *req, size_t lo, size_t n);
/* Segments [first, first + count) of a request of segments (its offsets
 * checked: the daemon's private copy) as a request of their own: their
 * keys, and their offsets rebased to the piece, written to offs (count + 1
 * of them, which the piece then points at). */
gs_sort_req gs_ooc_seg_piece(const gs_sort_req *req, size_t first, size_t count,
                             uint64_t *offs);

/* Merge req's sorted pieces [bounds[i], bounds[i+1]) (i < npieces,
 * bounds[npieces] = n; argsort indices relative to their piece) into one
 * sorted request. bounds is overwritten. st->merge_ms gets the time. */
int gs_ooc_merge(const gs_sort_req *req, size_t *bounds, size_t npieces, gs_sort_stats *st,
                 gs_err *err);

/* 1 when an out-of-core sort with algorithm a on ctx's device takes the
 * device route, 0 for pieces merged on the host; *lanes gets how many
 * items the device route keeps on the device at once. */
int gs_ooc_device_route(const gs_algo *a, const gs_sort_ctx *ctx, unsigned *lanes);

/* Test hook: where out-of-core pieces are merged (GS_OOC_AUTO: on the
 * device when it is not a CPU) and how many the device route keeps on the
 * device at once (0: two when the request's memory is pinned, else one;
 * at most 2). */
enum { GS_OOC_AUTO = 0, GS_OOC_HOST, GS_OOC_DEVICE };
void gs_ooc_force(int route, unsigned lanes);
/* Test hook: the device route's host copies as plain memcpy (1), or with
 * streaming stores (0, the default). */
void gs_ooc_copy_plain(int on);

/* The piece size for a sort of n keys cut into `pieces` even pieces. */
size_t gs_ooc_piece_size(size_t n, size_t pieces);

#endif
