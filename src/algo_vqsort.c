/* gs_algo_vqsort: a host candidate built on Highway's vqsort (Debian
 * libhwy-dev; gs_vqsort.cc is its C interface), for keys without a
 * payload, every dtype and both orders. Keys are encoded in place to
 * unsigned total order (gs_keys.h, as the host sort does), the array is cut
 * into one chunk per thread, each chunk encoded and sorted by vqsort on a
 * team of the shared pool (gs_hostpool.h), then the sorted runs are merged
 * pairwise, each merge split among the team by merge path (co-ranks), so
 * every thread writes its own output range. Not stable (vqsort is a
 * quicksort), which keys alone cannot show. Built when configure finds
 * libhwy-contrib (HAVE_VQSORT); the tuner weighs it against the host
 * radix per size. */
#include "config.h"
#include "gs_algos.h"

#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
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
    char *src, *dst;        /* this merge round's runs, and where they go */
    size_t run;             /* keys per sorted run in src */
    size_t parts;           /* output ranges per round */
} vjob;

/* Chunks of one size (the last one shorter), so that the sorted runs of
 * every merge round start at multiples of it. */
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

/* Merge path: the number of keys taken from a (the rest from b) among the
 * first `diag` outputs of merging a[0..na) and b[0..nb), ties to a. */
#define DEFINE_MERGE(SUF, K)                                                       \
    static size_t corank_##SUF(const K *a, size_t na, const K *b, size_t nb,      \
                               size_t diag)                                      \
    {                                                                            \
        size_t lo = diag > nb ? diag - nb : 0, hi = diag < na ? diag : na;       \
        while (lo < hi) {                                                        \
            size_t i = lo + (hi - lo) / 2;   /* take i from a, diag - i from b */ \
            if (a[i] <= b[diag - i - 1])                                         \
                lo = i + 1;                                                      \
            else                                                                 \
                hi = i;                                                          \
        }                                                                        \
        return lo;                                                               \
    }                                                                            \
    static void merge_##SUF(const K *a, size_t na, const K *b, size_t nb,        \
                            size_t from, size_t to, K *out)                      \
    {                                                                            \
        size_t i = corank_##SUF(a, na, b, nb, from), k = from - i;               \
        size_t ie = corank_##SUF(a, na, b, nb, to), ke = to - ie;                \
        K *o = out + from;                                                       \
        while (i < ie && k < ke) {   /* branch-free: random keys defeat   \
                                        the predictor */                 \
            K x = a[i], y = b[k];                                                \
            int tb = y < x;                                                      \
            *o++ = tb ? y : x;                                                   \
            k += (size_t)tb;                                                     \
            i += (size_t)!tb;                                                    \
        }                                                                        \
        while (i < ie)                                                           \
            *o++ = a[i++];                                                       \
        while (k < ke)                                                           \
            *o++ = b[k++];                                                       \
    }

DEFINE_MERGE(u32, uint32_t)
DEFINE_MERGE(u64, uint64_t)

/* One output range of one pair's merge in this round. */
static void task_merge(void *arg, size_t t, unsigned worker)
{
    vjob *j = arg;
    (void)worker;
    const size_t n = j->req->n, pair = t / j->parts, part = t % j->parts;
    size_t alo = pair * 2 * j->run;
    if (alo >= n)
        return;
    size_t na = n - alo < j->run ? n - alo : j->run;
    size_t blo = alo + na, nb = n - blo < j->run ? n - blo : j->run;
    size_t len = na + nb, from = len / j->parts * part, to = len / j->parts * (part + 1);
    if (part == j->parts - 1)
        to = len;
    if (j->ks == 4)
        merge_u32((uint32_t *)j->src + alo, na, (uint32_t *)j->src + blo, nb, from, to,
                  (uint32_t *)j->dst + alo);
    else
        merge_u64((uint64_t *)j->src + alo, na, (uint64_t *)j->src + blo, nb, from, to,
                  (uint64_t *)j->dst + alo);
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
    if (j.nchunks > 1 && !(scratch = gs_hostpool_scratch(req->n * j.ks)))
        return gs_err_set(err, GS_ENOMEM, "vqsort: out of memory for %zu bytes of scratch",
                          req->n * j.ks);
    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, (unsigned)(j.nchunks - 1));
    gs_hostpool_for(&team, j.nchunks, task_sort, &j);
    j.src = req->keys;
    j.dst = scratch;
    j.parts = workers;
    for (j.run = chunk_lo(&j, 1); j.nchunks > 1 && j.run < req->n; j.run *= 2) {
        /* runs of j.run keys, the last one shorter or absent */
        size_t pairs = (req->n + 2 * j.run - 1) / (2 * j.run);
        gs_hostpool_for(&team, pairs * j.parts, task_merge, &j);
        char *t = j.src;
        j.src = j.dst;
        j.dst = t;
        st->passes++;
    }
    gs_hostpool_for(&team, j.nchunks, task_decode, &j);
    gs_hostpool_leave(&team);
    free(scratch);
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
