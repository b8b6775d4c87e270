/* Private to the host sort (algo_host.c, host_rows.c, host_rows_vq.cc):
 * how algo_host.c hands a request of equal rows to host_rows.c, and the C
 * face of the per-worker vqsort host_rows.c sorts short rows with. */
#ifndef GS_HOST_ROWS_H
#define GS_HOST_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "gs_algos.h"
#include "gs_sort.h"

/* A row too long for the rows' own sort, sorted as a flat request on one
 * thread (NaN bit patterns saved and restored around it) by algo_host.c. */
typedef int (*gs_host_flat_fn)(void *arg, const gs_sort_req *row, gs_err *err);

/* Sort every row of req (shape.rows > 1), or every segment (shape.segments
 * with req->offsets checked; no top-k: gs_sort_run sends those row by row)
 * on up to `threads` workers of the host pool, each row stable and with
 * the flat host sort's NaN rules, argsort indices counted from 0 within
 * it. `flat` sorts the rows or segments longer than the rows' own sort
 * takes. `race` (may be NULL) is the test hook, called with
 * GS_RACE_BUCKET and a row's range of the caller's arrays between the
 * row's private copy and its write-back. */
int gs_host_rows(const gs_sort_req *req, unsigned threads, gs_host_flat_fn flat,
                 void *flat_arg, gs_race_hook race, void *race_arg, gs_sort_stats *st,
                 gs_err *err);

/* host_rows_vq.cc (HAVE_VQSORT): a Highway sorter (NULL when out of
 * memory), kept for many sorts by one thread at a time; ascending sorts of
 * 32- and 64-bit words and of 128-bit words given as (low, high) pairs. */
void *gs_rows_vq_new(void);
void gs_rows_vq_free(void *s);
void gs_rows_vq_u32(void *s, uint32_t *keys, size_t n);
void gs_rows_vq_u64(void *s, uint64_t *keys, size_t n);
void gs_rows_vq_u128(void *s, uint64_t *pairs, size_t n);

#endif
