/* The algorithm descriptors the registry (gs_registry.c) lists. Each lives in
 * its own algo_*.c file. */
#ifndef GS_ALGOS_H
#define GS_ALGOS_H

#include "gs_sort.h"

extern const gs_algo gs_algo_host;   /* algo_host.c: host LSD radix sort */
#ifdef HAVE_VQSORT
extern const gs_algo gs_algo_vqsort; /* algo_vqsort.c: Highway's vqsort, keys alone */
#endif
extern const gs_algo gs_algo_radix;  /* algo_radix.c: OpenCL LSD radix sort */
extern const gs_algo gs_algo_mergepath; /* algo_mergepath.c: MergePath multisort */
extern const gs_algo gs_algo_shellsort; /* algo_shellsort.c: Sedgewick Shellsort */
extern const gs_algo gs_algo_bitonic; /* algo_bitonic.c: bitonic sort in local memory,
                                         rows in one launch */
extern const gs_algo gs_algo_select;  /* algo_select.c: OpenCL radix select, top-k only */

/* Test hook (algo_shellsort.c): run only the Shellsort phases with
 * last_h <= h <= first_h on an unchecked request, so a test can verify that
 * one phase really h-sorts; (SIZE_MAX, 1) is the full sort. */
int gs_shellsort_run_phases(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                            size_t first_h, size_t last_h, gs_sort_stats *st, gs_err *err);

/* Test hook (algo_radix.c): force the scatter's local ranking, 0 (per-work-
 * item counters), 1 (warp multisplit, warp operations emulated: any device)
 * or 2 (warp multisplit in NVIDIA PTX); -1 restores the per-device choice.
 * Work-groups narrower than a warp always use 0. Returns the previous value. */
int gs_radix_force_rank(int mode);

/* Test hooks (algo_radix.c) of the onesweep path (lookback=1): with `on`,
 * every look-back takes its fallback (counting a predecessor tile's keys
 * itself), as on a device where groups run one at a time; returns the
 * previous value. And the largest n sorted without reading the global
 * histogram back (every pass runs; above it, passes whose digit is
 * constant are skipped); (size_t)-1 restores the default, 2^20. Returns
 * the previous value. */
int gs_radix_force_fallback(int on);
size_t gs_radix_small_max(size_t n);

/* Whether the radix sort of req with parameters p takes the onesweep path
 * on a device like info (lookback=2 decides by n and local memory): 1 or 0,
 * or a negative error code for parameters it rejects. */
int gs_radix_takes_lookback(const gs_dev_info *info, const gs_sort_req *req, const gs_params *p,
                            gs_err *err);
/* Whether radix sorts req's equal rows whole (one sequence of launches for
 * every row: a tile divides the row, which has at most 256 of them) on a
 * device like info with parameters p, rather than row by row: 1 or 0, or
 * a negative error code for parameters it rejects. */
int gs_radix_takes_rows_whole(const gs_dev_info *info, const gs_sort_req *req,
                              const gs_params *p, gs_err *err);

/* Test hook (algo_radix.c): whether the reduce-then-scan scatter of 32-bit
 * keys with 32-bit values (or indices) ranks each pair as one 64-bit word
 * (radix_scatter_k32_p32): 1 where its local memory fits, 0 never, -1 the
 * per-device choice. Returns the previous value. And whether a request
 * takes that scatter on a device like info: 1 or 0, or a negative error
 * code for parameters radix rejects. */
int gs_radix_force_pairs(int mode);
int gs_radix_takes_pairs(const gs_dev_info *info, const gs_sort_req *req, const gs_params *p,
                         gs_err *err);

/* Test hook (radix_count.c): whether flat 16-bit keys alone are sorted by
 * counting their codes: 1 always, 0 never (radix's 8-bit passes), -1 the
 * default (radix_count.c: a GPU counts from COUNT_FROM keys). Returns the
 * previous setting. */
int gs_radix_force_count(int mode);

/* Test hook (algo_select.c): fn(arg) runs after the device select's first
 * round has finished, where a client could rewrite its keys between two
 * rounds (on a CPU device the kernels read the caller's own pages); NULL
 * turns it off. Not for concurrent selects. */
void gs_select_dev_force_race(void (*fn)(void *arg), void *arg);

/* Test hook (algo_host.c): the fewest keys per chunk of the host sort
 * (default 262144; 0 restores it), so small inputs run on several chunks.
 * Returns the previous value. */
size_t gs_host_force_min_chunk(size_t keys);
/* The fewest keys the host sort spreads over several threads (two chunks):
 * below, it runs on the calling thread alone whatever its threads. */
size_t gs_host_mt_min_keys(void);
/* Test hook (algo_host.c): the input size in bytes from which the host
 * sort takes its past-the-cache paths (line buffers with streaming stores;
 * msd: the top digit first; default 6 MiB; 0 restores it), so the test
 * matrix's sizes run them. Returns the previous value. */
size_t gs_host_force_past_cache(size_t bytes);
/* Test hook (algo_host.c): the largest input in bytes of keys and values
 * that the host sort, where it takes no line buffers, copies privately
 * before counting it (default 5 MiB; 0 restores it; 1: none, every cursor
 * clamped instead, as for larger inputs). Returns the previous value. */
size_t gs_host_force_copy_max(size_t bytes);

/* Test hooks (algo_host.c, algo_vqsort.c) for the hostile-memory tests
 * (issue 32): fn(arg, at, lo, hi) runs at fixed points of a host sort, where
 * a client that rewrites its shared keys could: GS_RACE_SCATTER before each
 * scatter pass of the host radix, after the counts it uses (lo: the pass,
 * or SIZE_MAX for msd's top pass); GS_RACE_BUCKET between two passes of an
 * msd bucket ([lo, hi): the bucket's place in the caller's arrays; run on a
 * worker thread); GS_RACE_MERGE after vqsort sorted its chunks, before they
 * are merged. NULL turns the hook off. Not for concurrent sorts. */
enum { GS_RACE_SCATTER, GS_RACE_BUCKET, GS_RACE_MERGE };
typedef void (*gs_race_hook)(void *arg, int at, size_t lo, size_t hi);
void gs_host_force_race(gs_race_hook fn, void *arg);
#ifdef HAVE_VQSORT
void gs_vqsort_force_race(gs_race_hook fn, void *arg);
#endif

/* Test hook (host_rows.c): with `on`, the host sort's rows are sorted by
 * its LSD passes where the build has vqsort too, so that both are tested;
 * returns the previous setting. */
int gs_host_rows_force_radix(int on);

#endif
