/* Top-k on the host (issue 38): the first k keys of each row in the
 * request's order (shape.topk, shape.k), exactly as a stable full sort
 * would leave them, with their values or indices, written to the row's
 * first k places; what the rest of the row holds is unspecified (a row
 * sorted whole: the rest in order). gs_sort_run calls it for a top-k
 * request given to a host algorithm. Nothing here sorts through an
 * algorithm: the k are ordered by a radix sort of their own. */
#ifndef GS_SELECT_H
#define GS_SELECT_H

#include "gs_types.h"

/* From this k on (k * GS_SELECT_FULL_DIV above the row's length)
 * gs_sort_run sorts a row whole instead, with the request's host algorithm
 * where it can: a select's private copies of that many keys cost more than
 * the sort. */
#define GS_SELECT_FULL_DIV 8

/* Select the top k of req, one row (checked; topk set), with up to
 * `threads` threads of the host pool (0: every CPU); gs_sort_run runs a
 * request of rows through it row by row, and sorts a row whole instead
 * where k is a large part of it. A client's rewriting its keys during the
 * select is caught where it would change a count (gs_err_raced, nothing
 * written). */
int gs_select_run(const gs_sort_req *req, unsigned threads, gs_err *err);

/* After a top-k of req: each row's k answers moved together to the front
 * of keys and of values (rows * k of each, row after row), as an inline
 * reply carries them. */
void gs_select_pack(const gs_sort_req *req);
/* The same for keys of ks bytes at keys (8- and 16-bit keys, whose
 * request sorted their words) with req's values. */
void gs_select_pack_keys(const gs_sort_req *req, void *keys, size_t ks);

/* Test hook: fn(arg) runs between the select's counting pass and its
 * collecting pass over a row, where a client could rewrite its keys; NULL
 * turns it off. Not for concurrent selects. */
void gs_select_force_race(void (*fn)(void *arg), void *arg);

#endif
