/* The sort request every algorithm serves, the tunable-parameter sets, and
 * the algorithm registry. The tuner and the daemon only ever go through the
 * registry: an algorithm is a name, a list of parameters with their legal
 * values on a device, a stability flag, a pre-launch check and a run
 * function. */
#ifndef GS_SORT_H
#define GS_SORT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_dev.h"
#include "gs_prog.h"
#include "gs_types.h"

/* gs_sort_req, the request, is in gs_types.h (gs_keys works on it too).
 * Validate shape: pointers present, enums in range, byte sizes not
 * overflowing size_t; segments' offsets start at 0, never decrease and
 * end at n (read once each, before anything is written). */
int gs_sort_req_check(const gs_sort_req *r, gs_err *err);

/* Row r (< shape.rows, which is > 1) of a request of equal rows as a
 * request of its own: its keys and values inside req's, no rows. */
gs_sort_req gs_sort_req_row(const gs_sort_req *req, size_t r);
/* req with its top-k cleared: the whole sort whose first k of each row
 * are the top k (a device's run, out of core, a row sorted whole). */
gs_sort_req gs_sort_req_whole(const gs_sort_req *req);
/* Segment s (< shape.segments) of a request of segments, whose offsets
 * have been checked (gs_sort_req_check), as a request of its own. */
gs_sort_req gs_sort_req_segment(const gs_sort_req *req, size_t s);
/* The longest segment of such a request, its keys, and (at non-NULL) its
 * index, the first of the longest; 0 and 0 with no segments. */
size_t gs_sort_req_longest(const gs_sort_req *req, size_t *at);

typedef struct gs_sort_stats {
    double upload_ms;    /* host -> device (profiling events) */
    double kernel_ms;    /* sum of kernel times (profiling events) */
    double download_ms;  /* device -> host */
    double wall_ms;      /* whole run, wall clock */
    unsigned passes;     /* algorithm-defined (radix: digit passes run) */
    unsigned passes_skipped;
    int output_touched;  /* the caller's arrays were (maybe partly) written:
                            after a failure they no longer hold the input */
    size_t nans_on_device; /* NaN patterns saved and restored on the device
                              (gs_clnan.h) instead of by a host pass */
    unsigned chunks;     /* out of core (gs_ooc.h): pieces sorted one after
                            another, then merged; 0: sorted whole */
    double merge_ms;     /* the host merge of those pieces, wall clock */
    /* A device run's wall clock by step (gs_devrun.c), so that a reply
     * accounts for the worker's time and not only the device's: opening
     * the device, finding the program and making kernels and buffers
     * (uploads enqueued); enqueuing the NaN save and the algorithm's
     * kernels; waiting for the queue (one wait: where the result goes back
     * by a plain download, it is enqueued before it, gs_clrun_defer); the
     * write-back (that enqueuing, or the race check and the copy after the
     * wait); releasing the run's objects. All 0 on the host. */
    double setup_ms, enqueue_ms, wait_ms, writeback_ms, release_ms;
    double pack_ms;      /* a lexsort's packing of its keys into words (gs_lexsort.h),
                            wall clock */
} gs_sort_stats;

/* Add s's transfer, kernel and pass figures into sum (pieces of one sort). */
void gs_sort_stats_add(gs_sort_stats *sum, const gs_sort_stats *s);

typedef struct gs_param_def {
    const char *name;
    const char *doc;
    /* Legal values on this device (NULL info: host), ascending, into out[]
     * (at most cap); returns how many. */
    size_t (*values)(const gs_dev_info *info, long *out, size_t cap);
    int by_n;   /* 1: its best value moves with n (work per work-item, threads): at
                   large n the tuner's climb tries it first, upward first */
} gs_param_def;

/* What an algorithm runs with: the device (NULL for host) and the program
 * cache (may be NULL). */
typedef struct gs_sort_ctx {
    gs_dev *dev;
    gs_pcache *pc;
    int host_pinned;    /* the request's arrays lie in memory pinned for dev (gs_pin.h):
                           copies go straight from them, not through staging */
    cl_command_queue queue; /* NULL: the device's own queue; else another of its
                               queues (gs_dev_lane), for sorts that overlap */
    int lean;           /* a served request: its kernels go without profiling events
                           (each costs ~7 us on NVIDIA's driver); the kernel time is
                           the span from the upload's end to the download's start
                           (gs_clrun_lean). 0 (the tuner, benchmarks): every kernel
                           timed */
} gs_sort_ctx;

typedef struct gs_algo {
    const char *name;
    const char *summary;
    int stable;                       /* equal keys keep input order */
    int uses_device;                  /* 0: host only */
    int keeps_nan;                    /* saves NaN payloads on the device itself
                                         when gs_keys_nan_on_device (gs_clnan.h) */
    int keeps_bits;                   /* writes every key's own bit pattern (NaN
                                         payloads too): nothing saved or restored */
    int not_tuned;                    /* left out of --tune-all's candidates unless
                                         its --algorithms names it: the daemon routes
                                         it by rule (bitonic: rows); the plan audit
                                         still times it */
    int rows;                         /* run sorts a request of equal rows itself
                                         (shape.rows > 1), else gs_sort_run runs
                                         each row as a request of its own */
    int segments;                     /* and a request of segments (shape.segments) */
    int topk;                         /* serves top-k requests only (shape.topk),
                                         every row itself: a select, not a sort */
    int bit_range;                    /* sorts by a request's bit range itself
                                         (shape.end_bit); else gs_sort_run sorts
                                         the range's words with an index (gs_bits.c) */
    int half_keys;                    /* sorts 16-bit keys (shape.narrow) itself */
    const gs_param_def *params;
    size_t nparams;
    /* Untuned defaults for this device (NULL: host). */
    void (*defaults)(const gs_dev_info *info, gs_params *out);
    /* Reject, before any launch, a parameter set this device cannot run for
     * this request (local memory, work-group limits, unknown/missing
     * parameter, n beyond max allocation). Returns GS_EUNSUPPORTED or
     * GS_ETOOBIG with the reason, else 0. `dev` NULL for host algorithms. */
    int (*check)(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err);
    /* Sort req in place. Must leave req untouched on failure where it can
     * (device algorithms sort a device copy and write back only on success).
     * gs_sort_run calls it after the request and check() have passed,
     * with n > 0, a device in ctx for device algorithms, and st non-NULL
     * and zeroed, and sets st->wall_ms itself; device algorithms rely on
     * that and are only run through gs_sort_run. */
    int (*run)(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
               gs_sort_stats *st, gs_err *err);
} gs_algo;

/* For algorithm implementations: copy the values of exactly the parameters
 * in `defs` (in defs order) into v[], a name p leaves out taking its value
 * in `dflt` (the algorithm's defaults for the device: one rule for the
 * daemon, the clients and the tuner). Refuses (GS_EUNSUPPORTED, message
 * prefixed "ALGO: ") a missing set, an unknown name, or a name missing from
 * both p and dflt (dflt NULL: every name is required). Range checks stay
 * with the algorithm. */
int gs_params_take(const char *algo, const gs_param_def *defs, size_t ndefs,
                   const gs_params *p, const gs_params *dflt, long *v, gs_err *err);
/* For algorithm implementations: GS_ETOOBIG naming CL_DEVICE_MAX_MEM_ALLOC_SIZE
 * when n keys of ks bytes, or n values of vs bytes, need a buffer larger
 * than the device allows. */
int gs_check_buffers(const char *algo, const gs_dev_info *in, uint64_t n, size_t ks,
                     size_t vs, gs_err *err);

/* For algorithm implementations: GS_ETOOBIG naming CL_DEVICE_GLOBAL_MEM_SIZE
 * when a sort of n keys needs about `total` bytes of device memory (`what`
 * says what they hold, e.g. "double buffered") and the device has less. */
int gs_check_global_mem(const char *algo, const gs_dev_info *in, uint64_t n, uint64_t total,
                        const char *what, gs_err *err);

/* For device algorithms' check(): GS_EUNSUPPORTED when there is no device
 * (dev NULL: the host) or wg_size exceeds CL_DEVICE_MAX_WORK_GROUP_SIZE. */
int gs_check_device_wg(const char *algo, const gs_dev *dev, long wg, gs_err *err);

/* For gs_param_def.values: the powers of two lo, 2*lo, ... up to hi; and
 * the entries of a fixed ladder. Both stop at cap and return the count. */
size_t gs_values_pow2(long lo, long hi, long *out, size_t cap);
size_t gs_values_list(const long *list, size_t nlist, long *out, size_t cap);
/* For a host algorithm's `threads` parameter: 1, 2, 4, ... below the
 * machine's CPU count (gs_hostpool_cpus), then the CPU count itself. */
size_t gs_values_threads(const gs_dev_info *info, long *out, size_t cap);
/* The largest work-group an algorithm may use: `cap`, lowered to the
 * device's limit (info NULL: cap). */
long gs_max_wg(const gs_dev_info *info, long cap);

/* Registry (gs_registry.c). */
size_t gs_algo_count(void);
const gs_algo *gs_algo_at(size_t i);
const gs_algo *gs_algo_find(const char *name);
/* The algorithm a device without a tuned plan runs (with its defaults())
 * from its crossover size up: the registry's choice for that kind of
 * device, so callers need not name one. The host sort for a CPU device. */
const gs_algo *gs_algo_default_for(const gs_dev_info *info);

/* Check the request, then the parameter set, then run, filling `st`; a
 * request of equal rows (shape.rows > 1) goes to an algorithm with `rows`
 * whole, and otherwise runs each row as a request of its own, as a request
 * of segments (shape.segments) always does with each segment.
 * Float keys whose NaNs are not all the canonical quiet NaN get their exact
 * bit patterns restored after the sort (see gs_keys.h). The entry point the
 * tuner, daemon, tools and tests use. */
int gs_sort_run(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                const gs_params *p, gs_sort_stats *st, gs_err *err);

#endif
