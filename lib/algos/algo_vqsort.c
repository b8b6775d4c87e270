/* gs_algo_vqsort: a host candidate built on Highway's vqsort (Debian
 * libhwy-dev; gs_vqsort.cc is its C interface), for keys without a
 * payload, every dtype and both orders. The array is cut into one chunk per
 * thread; on a team of the shared pool (gs_hostpool.h) each chunk is
 * copied into a private scratch array, encoded there to unsigned total
 * order (gs_keys.h, as the host sort does) and sorted by vqsort; then the
 * sorted runs are merged in one k-way round split among the team
 * (gs_merge.h) straight into the caller's array, decoded block by block
 * as they are written, so every thread writes its own output range. Never
 * sorted where the caller's keys lie: that memory may be a client's, which
 * it can rewrite at any moment (issue 32), and vqsort reads its keys more
 * than once and trusts what it saw (a search for the differing key it saw
 * runs unbounded, and the partitions' bounds come from earlier reads); the
 * copy costs no more than the in-place encoding and decoding it replaces.
 * Not stable (vqsort is a quicksort), which keys alone cannot show. Built
 * when configure finds libhwy-contrib (HAVE_VQSORT); the tuner weighs it
 * against the host radix per size. */
#include "config.h"
#include "gs_algos.h"

#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_scratch.h"
#include "gs_keys.h"
#include "gs_merge.h"
#include "gs_vqsort.h"

/* Below this many keys per chunk, another thread does not pay. */
#define VQ_MIN_CHUNK ((size_t)1 << 17)
#define VQ_MAX_THREADS 256
#define VQ_DEFAULT_THREADS 64
/* Keys copied and encoded at a time, while in L1. */
#define VQ_BLOCK 4096

static gs_race_hook race_hook;
static void *race_arg;

void gs_vqsort_force_race(gs_race_hook fn, void *arg)
{
    race_hook = fn;
    race_arg = arg;
}

static const gs_param_def vq_params[] = {
    { "threads", "chunks sorted in parallel and merged, at most (each of 131072 keys or "
      "more)", gs_values_threads, 0 },
};

static long default_threads(void)
{
    long c = (long)gs_hostpool_cpus();
    return c < VQ_DEFAULT_THREADS ? c : VQ_DEFAULT_THREADS;
}

static int get_threads(const gs_params *p, long *threads, gs_err *err)
{
    *threads = default_threads();
    for (int i = 0; p && i < p->count; i++) {
        if (strcmp(p->p[i].name, "threads") != 0)
            return gs_err_set(err, GS_EUNSUPPORTED, "vqsort: unknown parameter '%s' (known: "
                              "threads)", p->p[i].name);
        *threads = p->p[i].value;
    }
    if (*threads < 1 || *threads > VQ_MAX_THREADS)
        return gs_err_set(err, GS_EUNSUPPORTED, "vqsort: threads=%ld out of range 1..%d",
                          *threads, VQ_MAX_THREADS);
    return 0;
}

static int vq_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    long t;
    (void)dev;
    /* Highway's entry points here are for 32- and 64-bit words: a key of
     * another width is declined, not sorted as the wrong one */
    size_t ks = req ? gs_dtype_size(req->shape.dtype) : 4;
    if (ks != 4 && ks != 8)
        return gs_err_set(err, GS_EUNSUPPORTED, "vqsort: sorts 32- and 64-bit keys (%s: use "
                          "the host sort)", gs_dtype_name(req->shape.dtype));
    if (req && req->shape.payload != GS_PL_NONE)
        return gs_err_set(err, GS_EUNSUPPORTED, "vqsort: sorts keys alone (payload %s: use "
                          "the host sort)", gs_payload_name(req->shape.payload));
    return get_threads(p, &t, err);
}

static void vq_defaults(const gs_dev_info *info, gs_params *out)
{
    (void)info;
    gs_params_clear(out);
    gs_params_set(out, "threads", default_threads());
}

/* ---- the sort ---- */

typedef struct vjob {
    const gs_sort_req *req;
    size_t ks, nchunks;
    char *own;              /* the private copy the chunks are sorted in */
    int decode;             /* task_back decodes (no merge's post pass did) */
} vjob;

/* Chunks of one size (the last one shorter). */
static size_t chunk_lo(const vjob *j, size_t c)
{
    size_t n = j->req->n, csz = (n + j->nchunks - 1) / j->nchunks;
    return c * csz < n ? c * csz : n;
}

/* Chunk c copied into the private array, encoded there and sorted. */
static void task_sort(void *arg, size_t c, unsigned worker)
{
    vjob *j = arg;
    (void)worker;
    const size_t ks = j->ks, lo = chunk_lo(j, c), len = chunk_lo(j, c + 1) - lo;
    const char *src = (const char *)j->req->keys + lo * ks;
    char *k = j->own + lo * ks;
    for (size_t b = 0; b < len; b += VQ_BLOCK) {
        size_t m = len - b < VQ_BLOCK ? len - b : VQ_BLOCK;
        memcpy(k + b * ks, src + b * ks, m * ks);
        gs_keys_encode(j->req->shape.dtype, j->req->shape.descending, k + b * ks, m);
    }
    if (ks == 4)
        gs_vqsort_u32((uint32_t *)(void *)k, len);
    else
        gs_vqsort_u64((uint64_t *)(void *)k, len);
}

/* The merge's post pass: each block of the result decoded as written. */
static void post_decode(void *arg, void *keys, void *vals, size_t n)
{
    const gs_sort_req *req = arg;
    (void)vals;
    gs_keys_decode(req->shape.dtype, req->shape.descending, keys, n);
}

/* Chunk c of a result that ended in the private array back into the
 * caller's (decoded on the way unless the merge's post pass did). */
static void task_back(void *arg, size_t c, unsigned worker)
{
    vjob *j = arg;
    (void)worker;
    const size_t ks = j->ks, lo = chunk_lo(j, c), len = chunk_lo(j, c + 1) - lo;
    char *k = (char *)j->req->keys + lo * ks;
    const char *src = j->own + lo * ks;
    for (size_t b = 0; b < len; b += VQ_BLOCK) {
        size_t m = len - b < VQ_BLOCK ? len - b : VQ_BLOCK;
        memcpy(k + b * ks, src + b * ks, m * ks);
        if (j->decode)
            gs_keys_decode(j->req->shape.dtype, j->req->shape.descending, k + b * ks, m);
    }
}

static int vq_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                  gs_sort_stats *st, gs_err *err)
{
    (void)ctx;
    long threads;
    int rc = get_threads(p, &threads, err);
    if (rc)
        return rc;
    vjob j = { .req = req, .ks = gs_dtype_size(req->shape.dtype) };
    size_t most = req->n / VQ_MIN_CHUNK;
    j.nchunks = most < 1 ? 1 : most < (size_t)threads ? most : (size_t)threads;
    if (!(j.own = gs_scratch_get(req->n * j.ks)))
        return gs_err_set(err, GS_ENOMEM, "vqsort: out of memory for %zu bytes of scratch",
                          req->n * j.ks);
    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, (unsigned)(j.nchunks - 1));
    gs_hostpool_for(&team, j.nchunks, task_sort, &j);
    if (race_hook)
        race_hook(race_arg, GS_RACE_MERGE, 0, req->n);
    size_t bounds[VQ_MAX_THREADS + 1];
    for (size_t c = 0; c <= j.nchunks; c++)
        bounds[c] = chunk_lo(&j, c);
    /* one round (up to GS_MERGE_FANIN chunks) ends in the caller's array;
     * a second reads it back, and the merge keeps to its runs whatever it
     * finds there (gs_merge.h) */
    gs_merge m = { .ks = j.ks, .keys = j.own, .kscr = req->keys, .bounds = bounds,
                   .nruns = j.nchunks, .post = post_decode, .post_arg = (void *)req };
    if (!gs_merge_runs(&team, workers, &m, &st->passes)) {
        j.decode = j.nchunks == 1;
        gs_hostpool_for(&team, j.nchunks, task_back, &j);
    }
    gs_hostpool_leave(&team);
    gs_scratch_put(j.own, req->n * j.ks);
    return atomic_load(&m.unsorted) ? gs_err_raced("vqsort", err) : 0;
}

const gs_algo gs_algo_vqsort = {
    .name = "vqsort",
    .summary = "Highway's vqsort on the host CPU, chunks in parallel, then merged (keys alone)",
    .stable = 0,
    .uses_device = 0,
    .params = vq_params,
    .nparams = 1,
    .defaults = vq_defaults,
    .check = vq_check,
    .run = vq_run,
};
