/* Tests that a client rewriting its shared memory while a host algorithm
 * sorts it cannot move a read or a write out of bounds (issue 32): the
 * daemon sorts a client's MAP_SHARED memfd in place, and the client may
 * write it at any moment. First one deterministic regression per defect,
 * the rewrite injected at the exact point through the algorithms' test
 * hooks (gs_host_force_race, gs_vqsort_force_race, gs_keys_nan_force_race)
 * into buffers that end at an inaccessible page: keys changed between a
 * count and its scatter (every LSD pass, straight and through the line
 * buffers, one and several chunks, msd's top pass) give the raced error;
 * keys changed in the caller's arrays between an msd bucket's passes, or
 * between vqsort's chunk sorts and its merge, change nothing (those passes
 * read private copies); NaNs appearing or vanishing between the NaN save's
 * count and copy give the raced error; the k-way merge of unsorted runs
 * stays in its runs and outputs only their keys. Then every host algorithm
 * of the registry (host with msd 0, 1, 2, straight and line-buffered,
 * one and several chunks, the insertion sort; vqsort on one and several
 * chunks), every key width, payload and order, floats with NaNs, 2^5 to
 * 2^20 keys, sorted while tests/support/racer.h rewrites the keys or the values:
 * each call returns 0 or the raced error, never crashes (ASan and UBSan
 * catch the rest in CI), and a second buffer sorted by another thread at
 * the same time, without a racer, comes out exact every time. */
#include "config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_merge.h"
#include "gs_sort.h"
#include "racer.h"
#include "sortcheck.h"
#include "tap.h"

#define RACED_MSG "changed while they were being sorted"

/* ---- buffers between inaccessible pages: a stray access faults ---- */

typedef struct gbuf {
    void *map;
    size_t maplen;
    void *p;        /* `bytes` ending where the trailing guard page starts */
} gbuf;

static void *gbuf_alloc(gbuf *g, size_t bytes)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (bytes + pg - 1) / pg * pg;
    g->maplen = body + 2 * pg;
    g->map = mmap(NULL, g->maplen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED ||
        (body && mprotect((char *)g->map + pg, body, PROT_READ | PROT_WRITE) < 0))
        tap_bail("guarded buffer of %zu bytes: out of memory", bytes);
    g->p = (char *)g->map + pg + body - bytes;
    return g->p;
}

static void gbuf_free(gbuf *g)
{
    if (g->map && g->map != MAP_FAILED)
        munmap(g->map, g->maplen);
    memset(g, 0, sizeof *g);
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* A request over guarded buffers: keys of dtype t with distribution dist,
 * values filled. */
typedef struct gcase {
    gs_sort_req req;
    gbuf kb, vb;
} gcase;

static void gcase_init(gcase *c, gs_dtype t, gs_payload pl, int desc, size_t n, int dist,
                       uint64_t seed)
{
    memset(c, 0, sizeof *c);
    size_t kw = gs_dtype_size(t), vw = gs_payload_size(pl);
    c->req.shape.dtype = t;
    c->req.shape.payload = pl;
    c->req.shape.descending = desc;
    c->req.n = n;
    c->req.keys = gbuf_alloc(&c->kb, n * kw);
    c->req.values = vw ? gbuf_alloc(&c->vb, n * vw) : NULL;
    sc_fill(t, dist, c->req.keys, n, seed);
    if (pl == GS_PL_U32 || pl == GS_PL_U64)
        sc_fill_values(pl, c->req.values, n, seed + 1);
}

static void gcase_free(gcase *c)
{
    gbuf_free(&c->kb);
    gbuf_free(&c->vb);
}

static int is_raced(int rc, const gs_err *err)
{
    return rc == GS_EINVAL && strstr(err->msg, RACED_MSG) != NULL;
}

/* ---- the host sort: a rewrite between a count and its scatter ---- */

enum { INJ_ONES, INJ_ZEROS, INJ_HIGH };

typedef struct inject {
    int at;             /* GS_RACE_* */
    size_t pass;        /* GS_RACE_SCATTER: which pass (SIZE_MAX: msd's top pass) */
    int mode;           /* INJ_*: every bit set, cleared, or set above the low `keep` bits */
    unsigned keep;
    gs_sort_req *req;
    _Atomic unsigned hits;
} inject;

static void rewrite(const gs_sort_req *req, size_t lo, size_t hi, int mode, unsigned keep)
{
    size_t kw = gs_dtype_size(req->shape.dtype);
    if (mode != INJ_HIGH) {
        memset((char *)req->keys + lo * kw, mode == INJ_ONES ? 0xff : 0, (hi - lo) * kw);
        return;
    }
    for (size_t i = lo; i < hi; i++)
        if (kw == 4)
            ((uint32_t *)req->keys)[i] |= ~(uint32_t)0 << keep;
        else
            ((uint64_t *)req->keys)[i] |= ~(uint64_t)0 << keep;
}

static void inject_fn(void *arg, int at, size_t lo, size_t hi)
{
    inject *in = arg;
    if (at != in->at)
        return;
    if (at == GS_RACE_SCATTER) {
        if (lo != in->pass)
            return;
        lo = 0;
    }
    rewrite(in->req, lo, hi, in->mode, in->keep);
    if (at == GS_RACE_BUCKET && in->req->values)    /* the values there too */
        memset((char *)in->req->values + lo * gs_payload_size(in->req->shape.payload), 0xff,
               (hi - lo) * gs_payload_size(in->req->shape.payload));
    atomic_fetch_add(&in->hits, 1);
}

/* The private copy's size limit for the next expect_raced/expect_ignored
 * (gs_host_force_copy_max; 0: the default). */
static size_t copy_max;

/* A host sort of req with `params` (and the forced path sizes) whose keys
 * the hook rewrites before the scatter of `pass`; the rewrites into *hits. */
static int sort_injected(gs_sort_req *req, const char *params, size_t past_cache,
                         size_t min_chunk, size_t pass, int mode, unsigned keep,
                         unsigned *hits, gs_err *err)
{
    gs_params ps;
    gs_err_clear(err);
    if (gs_params_parse(params, &ps, err))
        tap_bail("params '%s': %s", params, err->msg);
    inject in = { .at = GS_RACE_SCATTER, .pass = pass, .mode = mode, .keep = keep,
                  .req = req };
    size_t old_pc = gs_host_force_past_cache(past_cache);
    size_t old_mc = gs_host_force_min_chunk(min_chunk);
    size_t old_cm = gs_host_force_copy_max(copy_max);
    gs_host_force_race(inject_fn, &in);
    int rc = gs_sort_run(&gs_algo_host, NULL, req, &ps, NULL, err);
    gs_host_force_race(NULL, NULL);
    gs_host_force_past_cache(old_pc);
    gs_host_force_min_chunk(old_mc);
    gs_host_force_copy_max(old_cm);
    *hits = atomic_load(&in.hits);
    return rc;
}

/* That sort, of n random keys: the raced error, and nothing out of bounds
 * (the buffers end at a guard page; the scratch is malloc'ed below 4 MiB,
 * for ASan). */
static void expect_raced(const char *what, gs_dtype t, gs_payload pl, size_t n,
                         const char *params, size_t past_cache, size_t min_chunk, size_t pass,
                         int mode, unsigned keep)
{
    gcase c;
    gcase_init(&c, t, pl, pass % 2 == 1, n, SC_RANDOM, n + pass);
    gs_err err;
    unsigned hits;
    int rc = sort_injected(&c.req, params, past_cache, min_chunk, pass, mode, keep, &hits,
                           &err);
    tap_ok(hits == 1 && is_raced(rc, &err),
           "host %s (%s/%s n=%zu %s%s): keys rewritten before the scatter give the raced "
           "error (%u rewrites; %s)", what, gs_dtype_name(t), gs_payload_name(pl), n, params,
           copy_max == 1 ? ", no private copy" : "", hits, rc ? err.msg : "returned 0");
    gcase_free(&c);
}

/* The same rewrite where the sort reads a private copy of the keys (no
 * line buffers: every pass but the last reads private memory): it does
 * not reach the result, which is exact. */
static void expect_ignored(const char *what, gs_dtype t, gs_payload pl, size_t n,
                           const char *params, size_t past_cache, size_t min_chunk, size_t pass,
                           int mode, unsigned keep)
{
    sc_case c;
    if (sc_case_init(&c, t, pl, pass % 2 == 1, n, SC_RANDOM, n + pass) < 0)
        tap_bail("sc_case_init failed");
    gs_err err;
    unsigned hits;
    int rc = sort_injected(&c.req, params, past_cache, min_chunk, pass, mode, keep, &hits,
                           &err);
    char why[512] = "";
    tap_ok(hits == 1 && rc == 0 && sc_case_verify(&c, 1, why, sizeof why),
           "host %s (%s/%s n=%zu %s): the caller's keys rewritten before the scatter leave "
           "the result exact (the passes read a private copy) (%u rewrites; %s)", what,
           gs_dtype_name(t), gs_payload_name(pl), n, params, hits, rc ? err.msg : why);
    sc_case_free(&c);
}

/* One pass to run (the keys' high digit the same): the values go from the
 * caller's array to the caller's array through a private copy, however
 * the caller's keys and values change meanwhile. */
static void test_one_pass(gs_payload pl)
{
    const size_t n = 5000;
    gcase c;
    gcase_init(&c, GS_DT_U32, pl, 0, n, SC_RANDOM, 3);
    uint32_t *k = c.req.keys;
    for (size_t i = 0; i < n; i++)
        k[i] = (uint32_t)(i * 2654435761u) >> 20;     /* 12 bits, some repeated */
    for (size_t i = 0; pl == GS_PL_U32 && i < n; i++)
        ((uint32_t *)c.req.values)[i] = (uint32_t)i;
    gs_params ps;
    gs_params_clear(&ps);
    gs_params_set(&ps, "radix_bits", 16);
    gs_params_set(&ps, "msd", 0);
    inject in = { .at = GS_RACE_SCATTER, .pass = 0, .mode = INJ_ONES, .req = &c.req };
    gs_err err;
    gs_err_clear(&err);
    gs_host_force_race(inject_fn, &in);
    int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, &ps, NULL, &err);
    gs_host_force_race(NULL, NULL);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++) {
        /* stable: by key, then by index, and the index's own key beside it */
        uint32_t ix = ((uint32_t *)c.req.values)[i];
        uint32_t want = (uint32_t)(ix * 2654435761u) >> 20;
        if (ix >= n || k[i] != want ||
            (i && (k[i] < k[i - 1] ||
                   (k[i] == k[i - 1] && ix <= ((uint32_t *)c.req.values)[i - 1]))))
            bad = i;
    }
    tap_ok(atomic_load(&in.hits) == 1 && rc == 0 && bad == n,
           "host, one pass to run (u32/%s, radix_bits=16): the caller's keys rewritten "
           "before it leave the result exact (first wrong: %zd; %s)", gs_payload_name(pl),
           bad == n ? (ssize_t)-1 : (ssize_t)bad, rc ? err.msg : "0");
    gcase_free(&c);
}

static void test_host_scatter(void)
{
    /* through the line buffers (past_cache forced down), an LSD pass
     * reading the caller's keys: every key to the last bucket (past the
     * destination's end), to the first (no overflow, wrong counts) */
    expect_raced("LSD pass 0, line buffers", GS_DT_U32, GS_PL_U32, 1 << 15, "msd=0", 1, 0, 0,
                 INJ_ONES, 0);
    expect_raced("LSD pass 0, line buffers", GS_DT_I32, GS_PL_NONE, 1 << 15, "msd=0", 1, 0, 0,
                 INJ_ZEROS, 0);
    expect_raced("LSD pass 0, line buffers", GS_DT_F64, GS_PL_IDX64, 1 << 15, "msd=0", 1, 0,
                 0, INJ_ONES, 0);
    expect_raced("LSD pass 0, line buffers, 4 chunks", GS_DT_U32, GS_PL_IDX32, 1 << 15,
                 "msd=0", 1, 1 << 13, 0, INJ_ONES, 0);
    /* the first pass's digits kept, the others changed: pass 1 reads the
     * scratch, and one chunk has no recount, so its counts are stale */
    expect_raced("LSD pass 1 from the scratch, stale counts, line buffers", GS_DT_U32,
                 GS_PL_U64, 1 << 15, "msd=0,radix_bits=8", 1, 0, 0, INJ_HIGH, 8);
    expect_raced("LSD pass 1 from the scratch, stale counts, line buffers", GS_DT_U64,
                 GS_PL_NONE, 1 << 15, "msd=0,radix_bits=8", 1, 0, 0, INJ_HIGH, 8);
    /* pass 2 reads the caller's arrays again (after pass 1 wrote them):
     * one chunk (first counts) and three (recounted before the rewrite) */
    expect_raced("LSD pass 2 from the caller's arrays, line buffers", GS_DT_U32, GS_PL_IDX32,
                 1 << 15, "msd=0,radix_bits=8", 1, 0, 2, INJ_ONES, 0);
    expect_raced("LSD pass 2 from the caller's arrays, 3 chunks, line buffers", GS_DT_U64,
                 GS_PL_U32, 3 * 4096, "msd=0,radix_bits=8", 1, 4096, 2, INJ_ONES, 0);
    /* msd's top pass through the line buffers, on one and two chunks */
    expect_raced("msd top pass, line buffers", GS_DT_U32, GS_PL_NONE, 1 << 15, "msd=1", 1, 0,
                 SIZE_MAX, INJ_ONES, 0);
    expect_raced("msd top pass, line buffers", GS_DT_U64, GS_PL_IDX64, 1 << 15, "msd=2", 1, 0,
                 SIZE_MAX, INJ_ONES, 0);
    expect_raced("msd top pass, line buffers, 2 chunks", GS_DT_I64, GS_PL_U32, 1 << 15,
                 "msd=1", 1, 1 << 14, SIZE_MAX, INJ_ZEROS, 0);
    /* straight scatters without the private copy (as for keys not aligned
     * to their size): cursors clamped */
    copy_max = 1;
    expect_raced("LSD pass 0, straight scatter", GS_DT_U32, GS_PL_NONE, 4096, "msd=0", 0, 0,
                 0, INJ_ONES, 0);
    expect_raced("LSD pass 0, straight scatter", GS_DT_I32, GS_PL_U32, 4096, "msd=0", 0, 0,
                 0, INJ_ZEROS, 0);
    expect_raced("LSD pass 0, straight scatter, 3 chunks", GS_DT_U64, GS_PL_U64, 3 * 4096,
                 "msd=0", 0, 4096, 0, INJ_ONES, 0);
    expect_raced("LSD pass 1 from the scratch, stale counts, straight", GS_DT_U64,
                 GS_PL_NONE, 4096, "msd=0,radix_bits=8", 0, 0, 0, INJ_HIGH, 8);
    expect_raced("LSD pass 2 from the caller's arrays, straight", GS_DT_U32, GS_PL_IDX32, 4096,
                 "msd=0,radix_bits=8", 0, 0, 2, INJ_ONES, 0);
    expect_raced("LSD pass 2 from the caller's arrays, straight, 3 chunks", GS_DT_F32,
                 GS_PL_NONE, 3 * 4096, "msd=0,radix_bits=8", 0, 4096, 2, INJ_ONES, 0);
    expect_raced("msd top pass, straight scatter", GS_DT_U32, GS_PL_U64, 1 << 15, "msd=1",
                 (size_t)1 << 18, 0, SIZE_MAX, INJ_ONES, 0);
    copy_max = 0;
    /* straight scatters (below past_cache) read a private copy */
    expect_ignored("LSD pass 0, straight scatter", GS_DT_U32, GS_PL_NONE, 4096, "msd=0", 0, 0,
                   0, INJ_ONES, 0);
    expect_ignored("LSD pass 0, straight scatter", GS_DT_U64, GS_PL_IDX64, 4096, "msd=0", 0,
                   0, 0, INJ_ZEROS, 0);
    expect_ignored("LSD pass 0, straight, 3 chunks", GS_DT_F32, GS_PL_U64, 3 * 4096, "msd=0",
                   0, 4096, 0, INJ_ONES, 0);
    expect_ignored("LSD pass 1, straight scatter", GS_DT_U64, GS_PL_U32, 4096,
                   "msd=0,radix_bits=8", 0, 0, 1, INJ_HIGH, 8);
    expect_ignored("LSD pass 2, straight, 3 chunks", GS_DT_I32, GS_PL_IDX32, 3 * 4096,
                   "msd=0,radix_bits=8", 0, 4096, 2, INJ_ONES, 0);
    /* msd's top pass, straight (keys alone under past_cache, keys and
     * values over it) */
    expect_ignored("msd top pass, straight scatter", GS_DT_U32, GS_PL_U64, 1 << 15, "msd=1",
                   (size_t)1 << 18, 0, SIZE_MAX, INJ_ONES, 0);
    /* the small sort (97 to 1024 32-bit keys, 2048 64-bit, host_small)
     * counts and scatters its own copy */
    expect_ignored("small sort, pass 0", GS_DT_U32, GS_PL_NONE, 1024, "threads=1", 0, 0, 0,
                   INJ_ONES, 0);
    expect_ignored("small sort, pass 3", GS_DT_F64, GS_PL_IDX64, 2048, "threads=4", 0, 0, 3,
                   INJ_ZEROS, 0);
    expect_ignored("small sort, pass 1", GS_DT_I32, GS_PL_U32, 97, "radix_bits=8", 0, 0, 1,
                   INJ_HIGH, 8);
}

/* msd buckets sort in private memory: the caller's arrays rewritten
 * between a bucket's passes (keys and values) do not reach the result. */
static void test_host_bucket(int msd, gs_dtype t, gs_payload pl)
{
    sc_case c;
    if (sc_case_init(&c, t, pl, 0, 1 << 16, SC_RANDOM, 77) < 0)
        tap_bail("sc_case_init failed");
    gs_params ps;
    gs_params_clear(&ps);
    gs_params_set(&ps, "msd", msd);
    /* 16 buckets of about 4096 keys, sorted by passes: by size the top
     * digit would leave buckets under HOST_SMALL_N keys here, which the
     * insertion sort takes in one go, with no passes to race between */
    gs_params_set(&ps, "top_bits", 4);
    inject in = { .at = GS_RACE_BUCKET, .mode = INJ_ONES, .req = &c.req };
    gs_err err;
    gs_err_clear(&err);
    size_t old_pc = gs_host_force_past_cache(1);
    gs_host_force_race(inject_fn, &in);
    int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, &ps, NULL, &err);
    gs_host_force_race(NULL, NULL);
    gs_host_force_past_cache(old_pc);
    char why[512] = "";
    tap_ok(atomic_load(&in.hits) > 0 && rc == 0 && sc_case_verify(&c, 1, why, sizeof why),
           "host msd=%d %s/%s: the caller's arrays rewritten between a bucket's passes "
           "(%u times) leave the result exact (%s)", msd, gs_dtype_name(t),
           gs_payload_name(pl), atomic_load(&in.hits), rc ? err.msg : why);
    sc_case_free(&c);
}

/* ---- the NaN save: NaNs appear or vanish between its count and copy ---- */

typedef struct nan_inject {
    int mode;
    unsigned hits;
} nan_inject;

static void nan_fn(void *arg, const gs_sort_req *req)
{
    nan_inject *in = arg;
    rewrite(req, 0, req->n, in->mode, 0);   /* all ones: a NaN; zeros: +0.0 */
    in->hits++;
}

static void test_nan(gs_dtype t, gs_payload pl, int mode)
{
    gcase c;
    gcase_init(&c, t, pl, 0, 5000, SC_FSPECIAL, 5);
    nan_inject in = { .mode = mode };
    gs_err err;
    gs_err_clear(&err);
    gs_keys_nan_force_race(nan_fn, &in);
    int rc = gs_sort_run(&gs_algo_host, NULL, &c.req, NULL, NULL, &err);
    gs_keys_nan_force_race(NULL, NULL);
    tap_ok(in.hits == 1 && is_raced(rc, &err),
           "NaN save %s/%s: every key made %s between the count and the copy gives the "
           "raced error (%s)", gs_dtype_name(t), gs_payload_name(pl),
           mode == INJ_ONES ? "a NaN" : "+0.0", rc ? err.msg : "returned 0");
    gcase_free(&c);
}

/* ---- the k-way merge over unsorted runs ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Runs of random keys, not sorted (as a client's rewrite leaves them),
 * merged with the output cut into many ranges: the merge reads and writes
 * only inside its arrays (guarded), every output key is one of the
 * input's (never the loser tree's sentinel: the input has no all-ones
 * key), every value one of the input's, and it says the runs were not
 * sorted. Sorted runs: it says nothing. */
static void test_merge_unsorted(size_t ks, size_t vs, size_t nruns, int sorted)
{
    const size_t n = 20000;
    gbuf kb, vb, kd, vd;
    unsigned char *k = gbuf_alloc(&kb, n * ks), *kout = gbuf_alloc(&kd, n * ks);
    unsigned char *v = vs ? gbuf_alloc(&vb, n * vs) : NULL;
    unsigned char *vout = vs ? gbuf_alloc(&vd, n * vs) : NULL;
    uint64_t s = ks * 131 + vs * 7 + nruns, *in = malloc(n * sizeof *in);
    size_t bounds[GS_MERGE_FANIN + 1];
    if (!in)
        tap_bail("out of memory");
    for (size_t r = 0; r <= nruns; r++)
        bounds[r] = r == nruns ? n : n * r / nruns + (r && r % 3 == 0 ? 17 : 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = rnd(&s) % (ks == 4 ? UINT32_MAX : UINT64_MAX);
        in[i] = x;
    }
    if (sorted)
        for (size_t r = 0; r < nruns; r++)
            qsort(in + bounds[r], bounds[r + 1] - bounds[r], sizeof *in, cmp_u64);
    for (size_t i = 0; i < n; i++) {
        if (ks == 4)
            ((uint32_t *)(void *)k)[i] = (uint32_t)in[i];
        else
            ((uint64_t *)(void *)k)[i] = in[i];
        if (vs == 4)
            ((uint32_t *)(void *)v)[i] = (uint32_t)i;
        else if (vs == 8)
            ((uint64_t *)(void *)v)[i] = i;
    }
    qsort(in, n, sizeof *in, cmp_u64);
    unsigned old = gs_hostpool_force_cpus(4);
    gs_hostpool_team team;
    gs_hostpool_join(&team, 3);
    gs_merge m = { .ks = ks, .vs = vs, .keys = k, .vals = v, .kscr = kout, .vscr = vout,
                   .bounds = bounds, .nruns = nruns };
    int where = gs_merge_runs(&team, 8, &m, NULL);
    gs_hostpool_leave(&team);
    gs_hostpool_force_cpus(old);
    const unsigned char *ko = where ? kout : k, *vo = where ? vout : v;
    size_t bad_key = n, bad_val = n, unordered = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = ks == 4 ? ((const uint32_t *)(const void *)ko)[i]
                             : ((const uint64_t *)(const void *)ko)[i];
        if (bad_key == n && !bsearch(&x, in, n, sizeof *in, cmp_u64))
            bad_key = i;
        uint64_t y = vs == 4 ? ((const uint32_t *)(const void *)vo)[i]
                   : vs == 8 ? ((const uint64_t *)(const void *)vo)[i] : 0;
        if (bad_val == n && y >= n)
            bad_val = i;
        if (i && x < (ks == 4 ? ((const uint32_t *)(const void *)ko)[i - 1]
                              : ((const uint64_t *)(const void *)ko)[i - 1]))
            unordered++;
    }
    if (sorted)
        tap_ok(bad_key == n && bad_val == n && unordered == 0 && !atomic_load(&m.unsorted),
               "merge of %zu sorted runs, keys %zu B, values %zu B: sorted, not flagged "
               "(%zu out of order)", nruns, ks, vs, unordered);
    else
        tap_ok(bad_key == n && bad_val == n && atomic_load(&m.unsorted),
               "merge of %zu unsorted runs, keys %zu B, values %zu B: in bounds, only input "
               "keys and values out (first stranger: key %zd, value %zd), flagged unsorted",
               nruns, ks, vs, bad_key == n ? (ssize_t)-1 : (ssize_t)bad_key,
               bad_val == n ? (ssize_t)-1 : (ssize_t)bad_val);
    free(in);
    gbuf_free(&kb);
    gbuf_free(&kd);
    if (vs) {
        gbuf_free(&vb);
        gbuf_free(&vd);
    }
}

/* Runs rewritten by a racer while they are merged: no crash, in bounds. */
static void test_merge_racing(size_t ks, size_t vs)
{
    const size_t n = 1 << 16, nruns = 7;
    gbuf kb, vb, kd, vd;
    unsigned char *k = gbuf_alloc(&kb, n * ks), *kout = gbuf_alloc(&kd, n * ks);
    unsigned char *v = vs ? gbuf_alloc(&vb, n * vs) : NULL;
    unsigned char *vout = vs ? gbuf_alloc(&vd, n * vs) : NULL;
    unsigned long rounds = 0;
    unsigned old = gs_hostpool_force_cpus(4);
    for (int it = 0; it < 20; it++) {
        size_t bounds[GS_MERGE_FANIN + 1];
        for (size_t r = 0; r <= nruns; r++)
            bounds[r] = n * r / nruns;
        for (size_t i = 0; i < n; i++)      /* sorted runs to start with */
            if (ks == 4)
                ((uint32_t *)(void *)k)[i] = (uint32_t)(i % (n / nruns)) * 977u;
            else
                ((uint64_t *)(void *)k)[i] = (uint64_t)(i % (n / nruns)) * 977u;
        racer rc;
        if (racer_start(&rc, k, n * ks, 1000 + (uint64_t)it) < 0)
            tap_bail("no racer thread");
        gs_hostpool_team team;
        gs_hostpool_join(&team, 3);
        gs_merge m = { .ks = ks, .vs = vs, .keys = k, .vals = v, .kscr = kout, .vscr = vout,
                       .bounds = bounds, .nruns = nruns };
        gs_merge_runs(&team, 8, &m, NULL);
        gs_hostpool_leave(&team);
        rounds += racer_stop(&rc);
    }
    gs_hostpool_force_cpus(old);
    tap_ok(rounds > 0, "merge of 7 runs (keys %zu B, values %zu B) rewritten while merged, "
           "20 times: no access out of bounds (%lu rewrites)", ks, vs, rounds);
    gbuf_free(&kb);
    gbuf_free(&kd);
    if (vs) {
        gbuf_free(&vb);
        gbuf_free(&vd);
    }
}

/* ---- vqsort: the client's keys rewritten after the chunks were sorted ---- */

#ifdef HAVE_VQSORT
static void vq_inject_fn(void *arg, int at, size_t lo, size_t hi)
{
    inject *in = arg;
    if (at != GS_RACE_MERGE)
        return;
    /* a descending ramp: every run unsorted */
    size_t kw = gs_dtype_size(in->req->shape.dtype);
    for (size_t i = lo; i < hi; i++)
        if (kw == 4)
            ((uint32_t *)in->req->keys)[i] = (uint32_t)(hi - i);
        else
            ((uint64_t *)in->req->keys)[i] = hi - i;
    atomic_fetch_add(&in->hits, 1);
}

static void test_vqsort_merge(gs_dtype t, size_t n, long threads)
{
    sc_case c;
    if (sc_case_init(&c, t, GS_PL_NONE, 0, n, SC_RANDOM, 11) < 0)
        tap_bail("sc_case_init failed");
    gs_params ps;
    gs_params_clear(&ps);
    gs_params_set(&ps, "threads", threads);
    inject in = { .req = &c.req };
    gs_err err;
    gs_err_clear(&err);
    gs_vqsort_force_race(vq_inject_fn, &in);
    int rc = gs_sort_run(&gs_algo_vqsort, NULL, &c.req, &ps, NULL, &err);
    gs_vqsort_force_race(NULL, NULL);
    char why[512] = "";
    tap_ok(atomic_load(&in.hits) == 1 && rc == 0 && sc_case_verify(&c, 0, why, sizeof why),
           "vqsort %s n=%zu threads=%ld: the caller's keys rewritten after the chunks were "
           "sorted leave the result exact (chunks sorted in private memory) (%s)",
           gs_dtype_name(t), n, threads, rc ? err.msg : why);
    sc_case_free(&c);
}
#endif

/* ---- racing matrix ---- */

/* Another client: sorts its own buffer over and over while the racing
 * sorts run, each result checked exactly. */
typedef struct bystander {
    pthread_t th;
    sc_case c;
    _Atomic int stop;
    unsigned long sorts, wrong;
    char first[512];
} bystander;

static void *bystander_main(void *arg)
{
    bystander *b = arg;
    int alt = 0;
    while (!atomic_load(&b->stop)) {
        sc_case_reset(&b->c);
        gs_err err;
        gs_err_clear(&err);
        const gs_algo *a = &gs_algo_host;
#ifdef HAVE_VQSORT
        if (b->c.req.shape.payload == GS_PL_NONE && (alt++ & 1))
            a = &gs_algo_vqsort;
#endif
        (void)alt;
        int rc = gs_sort_run(a, NULL, &b->c.req, NULL, NULL, &err);
        char why[400] = "";
        int ok = rc == 0 && sc_case_verify(&b->c, a->stable, why, sizeof why);
        b->sorts++;
        if (!ok && !b->wrong++)
            snprintf(b->first, sizeof b->first, "%s: %.400s", a->name, rc ? err.msg : why);
    }
    return NULL;
}

typedef struct tally {
    unsigned long sorts, raced, bad, rewrites;
    char first[512], first_raced[512];
} tally;

/* One sort of n keys by a with parameters `params` while a racer rewrites
 * the keys (or the values): 0 or the raced error, nothing else. */
static void race_one(const gs_algo *a, const char *params, gs_dtype t, gs_payload pl,
                     int desc, size_t n, int values, uint64_t seed, tally *ty)
{
    gcase c;
    int fl = t == GS_DT_F32 || t == GS_DT_F64;
    gcase_init(&c, t, pl, desc, n, fl ? SC_FSPECIAL : SC_RANDOM, seed);
    gs_params ps;
    gs_err err;
    gs_err_clear(&err);
    if (gs_params_parse(params, &ps, &err))
        tap_bail("params '%s': %s", params, err.msg);
    racer r;
    int on_vals = values && c.req.values;
    if (racer_start(&r, on_vals ? c.req.values : c.req.keys,
                    n * (on_vals ? gs_payload_size(pl) : gs_dtype_size(t)), seed) < 0)
        tap_bail("no racer thread");
    int rc = gs_sort_run(a, NULL, &c.req, &ps, NULL, &err);
    ty->rewrites += racer_stop(&r);
    ty->sorts++;
    if (is_raced(rc, &err)) {
        if (!ty->raced++)
            snprintf(ty->first_raced, sizeof ty->first_raced, "%s %s %s/%s n=%zu: %.300s",
                     a->name, params, gs_dtype_name(t), gs_payload_name(pl), n, err.msg);
    }
    else if (rc != 0 && !ty->bad++)
        snprintf(ty->first, sizeof ty->first, "%s %s %s/%s %s n=%zu: %.300s", a->name, params,
                 gs_dtype_name(t), gs_payload_name(pl), desc ? "desc" : "asc", n, err.msg);
    gcase_free(&c);
}

typedef struct rconf {
    const char *label;
    int vq;                 /* vqsort, else host */
    const char *params;
    size_t past_cache, min_chunk;
    size_t n;
    size_t copy_max;        /* gs_host_force_copy_max */
} rconf;

static void test_racing(void)
{
    static const rconf confs[] = {
        { "insertion sort", 0, "", 0, 0, 40, 0 },
        { "LSD 8-bit straight", 0, "msd=0", 0, 0, 1000, 0 },
        { "LSD 8-bit straight", 0, "msd=0", 0, 0, 1 << 14, 0 },
        { "LSD 11-bit straight", 0, "msd=0", 0, 0, 1 << 17, 0 },
        { "LSD 16-bit straight", 0, "msd=0,radix_bits=16", 0, 0, 1 << 17, 0 },
        { "LSD line buffers", 0, "msd=0", 1, 0, 1 << 16, 0 },
        { "LSD 4 chunks", 0, "msd=0", 0, 1 << 14, 1 << 16, 0 },
        { "LSD line buffers 4 chunks", 0, "msd=0", 1, 1 << 14, 1 << 16, 0 },
        { "msd=1", 0, "msd=1", 1, 0, 1 << 16, 0 },
        { "msd=1 top_lines=1", 0, "msd=1,top_lines=1,top_bits=8", 1, 0, 1 << 16, 0 },
        { "msd=2", 0, "msd=2", 1, 0, 1 << 16, 0 },
        { "msd=1 2 chunks", 0, "msd=1", 1, 1 << 15, 1 << 16, 0 },
        { "msd=1 straight top pass", 0, "msd=1", (size_t)5 << 16, 0, 1 << 16, 0 },
        { "LSD straight, no private copy", 0, "msd=0", 0, 0, 1 << 15, 1 },
        { "LSD straight, no private copy, 4 chunks", 0, "msd=0", 0, 1 << 13, 1 << 15, 1 },
        { "msd=1 straight top pass, no private copy", 0, "msd=1", (size_t)5 << 16, 0, 1 << 16,
          1 },
        { "default", 0, "", 0, 0, 1 << 18, 0 },
        { "default", 0, "", 0, 0, 1 << 20, 0 },
#ifdef HAVE_VQSORT
        { "vqsort", 1, "threads=1", 0, 0, 1 << 14, 0 },
        { "vqsort", 1, "threads=4", 0, 0, 1 << 19, 0 },
#endif
    };
    static const gs_dtype dts[] = { GS_DT_U32, GS_DT_U64, GS_DT_F32, GS_DT_F64, GS_DT_I32 };
    static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    bystander b = { .sorts = 0 };
    if (sc_case_init(&b.c, GS_DT_U32, GS_PL_IDX32, 0, 1 << 15, SC_RANDOM, 99) < 0)
        tap_bail("sc_case_init failed");
    if (pthread_create(&b.th, NULL, bystander_main, &b) != 0)
        tap_bail("no bystander thread");
    tally host = { 0 }, vq = { 0 };
    uint64_t seed = 1;
    for (size_t ci = 0; ci < sizeof confs / sizeof *confs; ci++) {
        const rconf *cf = &confs[ci];
        size_t old_pc = gs_host_force_past_cache(cf->past_cache);
        size_t old_mc = gs_host_force_min_chunk(cf->min_chunk);
        size_t old_cm = gs_host_force_copy_max(cf->copy_max);
        tally *ty = cf->vq ? &vq : &host;
        const gs_algo *a = &gs_algo_host;
#ifdef HAVE_VQSORT
        if (cf->vq)
            a = &gs_algo_vqsort;
#endif
        /* the largest host sorts: a third of the combinations each */
        size_t step = !cf->vq && cf->n >= (1 << 19) ? 3 : 1;
        size_t combo = 0;
        for (size_t ti = 0; ti < sizeof dts / sizeof *dts; ti++)
            for (size_t pi = 0; pi < sizeof pls / sizeof *pls; pi++, combo++) {
                if (cf->vq && pls[pi] != GS_PL_NONE)
                    continue;
                if (combo % step != ci % step)
                    continue;
                int desc = (int)((ci + ti + pi) & 1);
                for (int vals = 0; vals <= (pls[pi] != GS_PL_NONE); vals++)
                    race_one(a, cf->params, dts[ti], pls[pi], desc, cf->n, vals, seed++, ty);
                if (cf->vq)     /* keys alone: the other order too */
                    race_one(a, cf->params, dts[ti], pls[pi], !desc, cf->n, 0, seed++, ty);
            }
        gs_host_force_past_cache(old_pc);
        gs_host_force_min_chunk(old_mc);
        gs_host_force_copy_max(old_cm);
    }
    atomic_store(&b.stop, 1);
    pthread_join(b.th, NULL);
    tap_diag("first raced error: %s", host.first_raced);
    tap_diag("first raced error: %s", vq.first_raced);
    tap_ok(host.bad == 0 && host.raced > 0,
           "host, every path x 5 dtypes x 5 payloads x both orders, 40 to 2^20 keys, keys "
           "or values rewritten during the sort: %lu sorts, %lu answered the raced error, %lu "
           "other errors%s%s (%lu rewrites)", host.sorts, host.raced, host.bad,
           host.bad ? "; first: " : "", host.first, host.rewrites);
#ifdef HAVE_VQSORT
    tap_ok(vq.bad == 0 && vq.sorts > 0,
           "vqsort, one and 4 chunks x 5 dtypes x both orders, keys rewritten during the "
           "sort: %lu sorts, %lu raced errors, %lu other errors%s%s (%lu rewrites)", vq.sorts,
           vq.raced, vq.bad, vq.bad ? "; first: " : "", vq.first, vq.rewrites);
#endif
    tap_ok(b.wrong == 0 && b.sorts > 0,
           "another client sorting at the same time without a racer: %lu sorts, %lu wrong%s%s",
           b.sorts, b.wrong, b.wrong ? "; first: " : "", b.first);
    sc_case_free(&b.c);
}

/* With an argument, only that section: scatter, bucket, nan, merge, vqsort
 * or racing (to look at one defect alone). */
static int want(int argc, char **argv, const char *section)
{
    return argc < 2 || strcmp(argv[1], section) == 0;
}

int main(int argc, char **argv)
{
    if (want(argc, argv, "scatter")) {
        test_host_scatter();
        test_one_pass(GS_PL_U32);
        test_one_pass(GS_PL_IDX32);
    }
    if (want(argc, argv, "bucket")) {
        test_host_bucket(1, GS_DT_U64, GS_PL_IDX64);
        test_host_bucket(1, GS_DT_F64, GS_PL_U32);
        test_host_bucket(1, GS_DT_U32, GS_PL_U64);
        test_host_bucket(2, GS_DT_U64, GS_PL_NONE);
    }
    if (want(argc, argv, "nan")) {
        test_nan(GS_DT_F32, GS_PL_U32, INJ_ONES);
        test_nan(GS_DT_F64, GS_PL_IDX64, INJ_ONES);
        test_nan(GS_DT_F32, GS_PL_NONE, INJ_ZEROS);
        test_nan(GS_DT_F64, GS_PL_U64, INJ_ZEROS);
    }
    if (want(argc, argv, "merge")) {
        static const size_t kv[][2] = { { 4, 0 }, { 4, 4 }, { 4, 8 },
                                        { 8, 0 }, { 8, 4 }, { 8, 8 } };
        for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) {
            test_merge_unsorted(kv[i][0], kv[i][1], i % 2 ? 5 : 64, 0);
            test_merge_unsorted(kv[i][0], kv[i][1], 2 + i, 0);
        }
        test_merge_unsorted(4, 4, 5, 1);
        test_merge_unsorted(8, 8, 64, 1);
        test_merge_racing(4, 0);
        test_merge_racing(8, 8);
    }
#ifdef HAVE_VQSORT
    if (want(argc, argv, "vqsort")) {
        test_vqsort_merge(GS_DT_U32, 1 << 12, 1);
        test_vqsort_merge(GS_DT_F32, (1 << 19) + 5, 4);
        test_vqsort_merge(GS_DT_I64, (1 << 18) + 1, 2);
    }
#endif
    if (want(argc, argv, "racing"))
        test_racing();
    return tap_done();
}
