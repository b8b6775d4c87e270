/* Top-k on the host (issue 38): the first k keys of each row in the
 * request's order (shape.topk, shape.k), exactly as a stable full sort
 * would leave them, with their values or indices, written to the row's
 * first k places; what the rest of the row holds is unspecified (a row
 * sorted whole: the rest in order). gs_sort_run calls it for a top-k
 * request given to a host algorithm. */
#ifndef GS_SELECT_H
#define GS_SELECT_H

#include "gs_sort.h"

/* From this k on (k * GS_SELECT_FULL_DIV above the row's length) a row is
 * sorted whole by `a` instead: a select's private copies of that many keys
 * cost more than the sort. */
#define GS_SELECT_FULL_DIV 8

/* Select the top k of req, one row (checked, topk set), on the host pool;
 * gs_sort_run runs a request of rows through it row by row. `a` (a host
 * algorithm) sorts the row whole where k is a large part of it; p's
 * "threads" bounds the threads. A client's rewriting its keys during the
 * select is caught where it would change a count (gs_err_raced, nothing
 * written). */
int gs_select_run(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                  const gs_params *p, gs_sort_stats *st, gs_err *err);

/* After a top-k of req: each row's k answers moved together to the front
 * of keys and of values (rows * k of each, row after row), as an inline
 * reply carries them. */
void gs_select_pack(const gs_sort_req *req);

/* Test hook: fn(arg) runs between the select's counting pass and its
 * collecting pass over a row, where a client could rewrite its keys; NULL
 * turns it off. Not for concurrent selects. */
void gs_select_force_race(void (*fn)(void *arg), void *arg);

#endif
