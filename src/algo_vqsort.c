/* gs_algo_vqsort: a host candidate built on Highway's vqsort (Debian
 * libhwy-dev; gs_vqsort.cc is its C interface), for keys without a
 * payload, every dtype and both orders. Keys are encoded in place to
 * unsigned total order (gs_keys.h, as the host sort does), the array is cut
 * into one chunk per thread, each chunk encoded and sorted by vqsort on a
 * team of the shared pool (gs_hostpool.h), then the sorted runs are merged
 * in one k-way round split among the team (gs_merge.h), so every thread
 * writes its own output range. Not stable (vqsort is a
 * quicksort), which keys alone cannot show. Built when configure finds
 * libhwy-contrib (HAVE_VQSORT); the tuner weighs it against the host
 * radix per size. */
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


static const gs_param_def vq_params[] = {
    { "threads", "chunks sorted in parallel and merged, at most (each of 131072 keys or "
      "more)", gs_values_threads },
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
    if (req && req->payload != GS_PL_NONE)
        return gs_err_set(err, GS_EUNSUPPORTED, "vqsort: sorts keys alone (payload %s: use "
                          "the host sort)", gs_payload_name(req->payload));
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
    char *src;              /* where the merged keys ended */
} vjob;

/* Chunks of one size (the last one shorter). */
static size_t chunk_lo(const vjob *j, size_t c)
{
    size_t n = j->req->n, csz = (n + j->nchunks - 1) / j->nchunks;
    return c * csz < n ? c * csz : n;
}

static void task_sort(void *arg, size_t c, unsigned worker)
{
    vjob *j = arg;
    (void)worker;
    size_t lo = chunk_lo(j, c), len = chunk_lo(j, c + 1) - lo;
    char *k = (char *)j->req->keys + lo * j->ks;
    gs_keys_encode(j->req->dtype, j->req->descending, k, len);
    if (j->ks == 4)
        gs_vqsort_u32((uint32_t *)k, len);
    else
        gs_vqsort_u64((uint64_t *)k, len);
}

static void task_decode(void *arg, size_t c, unsigned worker)
{
    vjob *j = arg;
    (void)worker;
    size_t lo = chunk_lo(j, c), len = chunk_lo(j, c + 1) - lo;
    char *k = (char *)j->req->keys + lo * j->ks;
    if (j->src != (char *)j->req->keys)    /* the last round ended in the scratch */
        memcpy(k, j->src + lo * j->ks, len * j->ks);
    gs_keys_decode(j->req->dtype, j->req->descending, k, len);
}

static int vq_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                  gs_sort_stats *st, gs_err *err)
{
    (void)ctx;
    long threads;
    int rc = get_threads(p, &threads, err);
    if (rc)
        return rc;
    vjob j = { .req = req, .ks = gs_dtype_size(req->dtype) };
    size_t most = req->n / VQ_MIN_CHUNK;
    j.nchunks = most < 1 ? 1 : most < (size_t)threads ? most : (size_t)threads;
    char *scratch = NULL;
    if (j.nchunks > 1 && !(scratch = gs_scratch_get(req->n * j.ks)))
        return gs_err_set(err, GS_ENOMEM, "vqsort: out of memory for %zu bytes of scratch",
                          req->n * j.ks);
    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, (unsigned)(j.nchunks - 1));
    gs_hostpool_for(&team, j.nchunks, task_sort, &j);
    size_t bounds[VQ_MAX_THREADS + 1];
    for (size_t c = 0; c <= j.nchunks; c++)
        bounds[c] = chunk_lo(&j, c);
    gs_merge m = { .ks = j.ks, .keys = req->keys, .kscr = scratch, .bounds = bounds,
                   .nruns = j.nchunks };
    j.src = gs_merge_runs(&team, workers, &m, &st->passes) ? scratch : req->keys;
    gs_hostpool_for(&team, j.nchunks, task_decode, &j);
    gs_hostpool_leave(&team);
    gs_scratch_put(scratch, req->n * j.ks);
    return 0;
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
