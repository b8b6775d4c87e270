/* Client memory is hostile (issue 32), for the device algorithms: every
 * device algorithm of the registry, on every device, sorts arrays in
 * page-aligned memory sorted where it lies (zero copy on CPU devices, as
 * the daemon sorts a client's memfd) while a racing writer (tests/support/racer.h)
 * keeps rewriting them: keys u32, u64 (and f32/f64 with the NaN patterns
 * kept on the device; radix: 16-bit f16, bf16, i16 keys, alone also
 * counted), every payload kind, at sizes and parameters that
 * take each kernel path (radix: reduce-then-scan with and without the
 * histogram read-back, onesweep; mergepath: the tile sort alone and the
 * global merge levels; bitonic: segments by size class, a launch each over
 * a list of segments made from the private offsets); then out of core (the device route, one and two
 * pieces on the device at once, and the host merge) and a split's merge
 * (gs_ooc_merge of parts sorted on the devices). Each must return 0 or
 * GS_EINVAL (gs_err_raced) and never access out of bounds: every device
 * buffer carries a guard (gs_clrun_guard) and every raced array one of
 * the test's own, all checked after each sort (a CPU device's kernels are
 * not seen by the sanitizers). Meanwhile another thread sorts private
 * arrays on the same device, through another queue: each must come out
 * exactly right. Last, a raced sort on pooled buffers that held another
 * sort's data must hand none of it to the client. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_ooc.h"
#include "gs_clrun.h"
#include "gs_dev.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_narrow.h"
#include "gs_sort.h"
#include "racer.h"
#include "sortcheck.h"
#include "tap.h"

#define N ((size_t)1 << 16)   /* 64 radix tiles of the defaults, 32 mergepath tiles */
#define ROUNDS 3              /* raced sorts per (dtype, payload) on the first device */
/* On the devices after the first (the same kernels; CI has two PoCL
 * devices and runs this under the sanitizers too): one */
static int g_rounds = ROUNDS;
#define CHUNK (N / 4)         /* out of core: four pieces */
/* Past every device buffer and raced array: more than any position a
 * kernel could derive from rewritten keys (radix: below 2n + a tile) */
#define GUARD ((size_t)3 << 20)
#define GUARD_BYTE 0x5a

static const gs_dtype ints[] = { GS_DT_U32, GS_DT_U64 };
static const gs_dtype floats[] = { GS_DT_F32, GS_DT_F64 };
static const gs_payload payloads[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                       GS_PL_IDX64 };
#define NPL (sizeof payloads / sizeof payloads[0])

/* ---- raced arrays: keys then values in one page-aligned block ---- */

typedef struct arena {
    unsigned char *base;
    size_t bytes;          /* keys and values, before the guard */
} arena;

static void arena_init(arena *a, size_t bytes)
{
    a->bytes = bytes;
    a->base = aligned_alloc(4096, (bytes + GUARD + 4095) / 4096 * 4096);
    if (!a->base)
        tap_bail("out of memory");
}

static int arena_guard_ok(const arena *a)
{
    for (size_t i = 0; i < GUARD; i++)
        if (a->base[a->bytes + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* A request over the arena: n keys of t, payload p, random contents. */
static gs_sort_req arena_req(arena *a, gs_dtype t, gs_payload p, size_t n, uint64_t seed)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p);
    gs_sort_req r;
    memset(&r, 0, sizeof r);
    r.shape.dtype = t;
    r.shape.payload = p;
    r.n = n;
    r.shape.stable = 0;
    r.keys = a->base;
    r.values = vs ? a->base + n * ks : NULL;
    a->bytes = n * (ks + vs);
    memset(a->base + a->bytes, GUARD_BYTE, GUARD);
    sc_fill(t, t == GS_DT_F32 || t == GS_DT_F64 ? SC_NANMIX : SC_RANDOM, r.keys, n, seed);
    if (vs)
        sc_fill_values(p, r.values, n, seed + 1);
    return r;
}

/* ---- the private sorts beside them ---- */

typedef struct priv {
    gs_dev *dev;
    cl_command_queue q;
    const gs_algo *algo;   /* what the raced sorts run now (set by the main thread) */
    _Atomic int stop;
    unsigned long sorts, wrong;
    char why[400];
    pthread_t th;
} priv;

static _Atomic(const gs_algo *) g_algo;

static void *priv_main(void *arg)
{
    priv *pv = arg;
    uint64_t seed = 1;
    while (!atomic_load(&pv->stop)) {
        const gs_algo *a = atomic_load(&g_algo);
        gs_dtype t = seed % 2 ? GS_DT_U64 : GS_DT_F32;
        gs_payload p = payloads[seed % NPL];
        sc_case c;
        /* an algorithm that holds a row in local memory (bitonic): one it holds.
         * (Not a->rows: radix sorts rows whole too, over any length.) */
        size_t n = (a == &gs_algo_bitonic ? 2000 : N / 2) + seed % 7;
        if (a->topk) {          /* a select (top-k only): the first 50, checked */
            gs_params prm;
            a->defaults(&pv->dev->info, &prm);
            gs_sort_ctx ctx = { .dev = pv->dev, .queue = pv->q };
            char why[300] = "";
            if (!sc_topk_check(a, &ctx, &prm, t, p, (int)(seed / 2 % 2), 1, n, 50, 1, SC_FEW16,
                               why, sizeof why) && !pv->wrong++)
                snprintf(pv->why, sizeof pv->why, "%s %s/%s: %.300s", a->name,
                         gs_dtype_name(t), gs_payload_name(p), why);
            pv->sorts++;
            seed++;
            continue;
        }
        if (sc_case_init(&c, t, p, (int)(seed / 2 % 2), n, SC_FEW16, seed))
            tap_bail("out of memory");
        gs_params prm;
        a->defaults(&pv->dev->info, &prm);
        gs_sort_ctx ctx = { .dev = pv->dev, .queue = pv->q };
        gs_sort_stats st;
        gs_err e;
        gs_err_clear(&e);
        char why[300] = "";
        int rc = gs_sort_run(a, &ctx, &c.req, &prm, &st, &e);
        if (rc || !sc_case_verify(&c, a->stable, why, sizeof why)) {
            if (!pv->wrong++)
                snprintf(pv->why, sizeof pv->why, "%s %s/%s: %.300s", a->name, gs_dtype_name(t),
                         gs_payload_name(p), rc ? e.msg : why);
        }
        pv->sorts++;
        sc_case_free(&c);
        seed++;
    }
    return NULL;
}

/* ---- one raced sort ---- */

typedef struct tally {
    unsigned sorts, raced, bad;
    unsigned long rounds;
    char why[400];
} tally;

/* run: the call under test on req (it returns 0 or a GS_E* code). */
typedef int (*race_fn)(void *arg, gs_sort_req *req, gs_err *err);

static void raced(tally *ty, arena *ar, gs_sort_req *req, uint64_t seed, race_fn fn, void *arg,
                  const char *what)
{
    unsigned long before = gs_clrun_guard_breaches();
    racer rc_;
    if (racer_start(&rc_, ar->base, ar->bytes, seed))
        tap_bail("cannot start the racing writer");
    gs_err e;
    gs_err_clear(&e);
    int rc = fn(arg, req, &e);
    ty->rounds += racer_stop(&rc_);
    ty->sorts++;
    const char *bad = NULL;
    if (rc == GS_EINVAL && strstr(e.msg, "changed while"))
        ty->raced++;
    else if (rc)
        bad = e.msg;
    else if (gs_clrun_guard_breaches() != before)
        bad = "a kernel wrote past a device buffer (its guard changed)";
    if (!bad && !arena_guard_ok(ar))
        bad = "something wrote past the raced arrays";
    if (bad && !ty->bad++)
        snprintf(ty->why, sizeof ty->why, "%.100s %s/%s n=%zu: %.200s (%s)", what,
                 gs_dtype_name(req->shape.dtype), gs_payload_name(req->shape.payload), req->n, bad,
                 gs_strerror(rc));
}

static void report(const tally *ty, const char *dev, const char *what)
{
    tap_ok(ty->bad == 0 && ty->sorts > 0 && ty->rounds > 0,
           "%s: %s: %u sorts raced by a writer (%lu rewrites): each 0 or GS_EINVAL, nothing "
           "out of bounds (%u said the keys changed)%s%s", dev, what, ty->sorts, ty->rounds,
           ty->raced, ty->bad ? ": " : "", ty->why);
}

typedef struct sortarg {
    const gs_algo *a;
    gs_sort_ctx *ctx;
    const gs_params *p;
    size_t chunk;          /* out of core: the piece size; 0 whole */
    uint64_t rows;         /* > 1: the request is that many equal rows */
    const uint64_t *offs;  /* segs > 0: the request is that many segments (offsets
                              private, as the daemon's checked copy) */
    uint64_t segs;
} sortarg;

/* The variant's parameters, or where the device's local memory is too
 * small for them at this shape (onesweep's tiles of u64 keys with values
 * need 49,636 bytes at elems_per_thread=14, an H200 has 49,152), the same
 * path with fewer elements per thread, as a tuned plan would pick. */
static const gs_params *fit(const sortarg *s, const gs_sort_req *req, gs_params *q)
{
    gs_err e;
    *q = *s->p;
    long ept = gs_params_get(q, "elems_per_thread", 0);
    while (s->ctx->dev && s->a->check(s->ctx->dev, req, q, &e) == GS_EUNSUPPORTED && ept > 2)
        gs_params_set(q, "elems_per_thread", --ept);
    return q;
}

static int do_sort(void *arg, gs_sort_req *req, gs_err *err)
{
    const sortarg *s = arg;
    gs_sort_stats st;
    gs_params q;
    const gs_params *p = fit(s, req, &q);
    if (s->a->topk) {       /* a select: the first 100 */
        req->shape.topk = 1;
        req->shape.k = req->n < 100 ? req->n : 100;
    }
    req->shape.rows = s->rows;
    if (s->segs) {
        req->shape.segments = s->segs;
        req->offsets = s->offs;
    }
    if (s->chunk)
        return gs_ooc_sort(s->a, s->ctx, req, p, s->chunk, &st, err);
    return gs_sort_run(s->a, s->ctx, req, p, &st, err);
}

/* A split's merge (daemon/sched/gs_split.c): two parts, each sorted on a device
 * (the first and the last one), then gs_ooc_merge over the request,
 * which must withstand whatever the parts hold: it runs even after a part
 * noticed the race (where the daemon would answer with that error). */
typedef struct splitarg {
    gs_dev *d0, *d1;
    const gs_algo *a;
} splitarg;

static int do_split(void *arg, gs_sort_req *req, gs_err *err)
{
    const splitarg *s = arg;
    size_t bounds[3] = { 0, req->n / 3, req->n };
    int raced = 0;
    for (int i = 0; i < 2; i++) {
        gs_sort_req part = gs_ooc_piece(req, bounds[i], bounds[i + 1] - bounds[i]);
        gs_sort_ctx ctx = { .dev = i ? s->d1 : s->d0 };
        gs_params p;
        s->a->defaults(&ctx.dev->info, &p);
        gs_sort_stats st;
        int rc = gs_sort_run(s->a, &ctx, &part, &p, &st, err);
        if (rc && rc != GS_EINVAL)
            return rc;
        raced |= rc == GS_EINVAL;
    }
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    gs_err me;
    gs_err_clear(&me);
    int rc = gs_ooc_merge(req, bounds, 2, &st, &me);
    if (rc || !raced)
        *err = me;
    return rc ? rc : raced ? GS_EINVAL : 0;
}

/* A raced sort must not hand the client what the device's pooled buffers
 * held from another request: a radix pass that drops keys leaves slots of
 * its output unwritten, which later passes move into the client's arrays
 * (mergepath writes every slot of every level). Each round first sorts a
 * private array of nothing but MARK (u32 keys and values, every pass run:
 * the pool's second buffers then hold MARKs, as another client's data
 * would), then an array of u32 keys below 256 with their indices as
 * values (radix: with the histogram read back, so one pass, on the lowest
 * digit, whose output is the result). A writer flips the keys between 0
 * and 255 meanwhile (their upper bytes stay zero), so a pass counts one
 * set of keys and scatters another. No result may hold a key with an
 * upper byte set or a value past n. The pool is on (no guards). */
#define MARK 0x5eed5eedu

typedef struct flipper {
    uint32_t *k;
    size_t n;
    _Atomic int stop;
    unsigned long rounds;
    pthread_t th;
} flipper;

static void *flip_main(void *arg)
{
    flipper *f = arg;
    for (uint32_t v = 0; !atomic_load_explicit(&f->stop, memory_order_relaxed); v ^= 0xff) {
        for (size_t i = 0; i < f->n; i++)
            f->k[i] = v;
        f->rounds++;
    }
    return NULL;
}

static void pool_leak(const gs_algo *a, gs_dev *dev, arena *ar, const char *dn)
{
    gs_clrun_guard(0);
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    a->defaults(&dev->info, &p);
    uint32_t *mk = aligned_alloc(4096, N * 8);
    if (!mk)
        tap_bail("out of memory");
    unsigned leaked = 0, marked = 0, bad = 0, one = 0, rounds = 4 * (unsigned)g_rounds;
    unsigned long flips = 0;
    char why[300] = "";
    for (unsigned r = 0; r < rounds; r++) {
        for (size_t i = 0; i < 2 * N; i++)
            mk[i] = MARK;
        gs_sort_req m = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = N, .keys = mk,
                          .values = mk + N };
        gs_sort_stats st;
        gs_err e;
        gs_err_clear(&e);
        gs_radix_small_max((size_t)-1);   /* every pass runs, through both buffers */
        marked += gs_sort_run(a, &ctx, &m, &p, &st, &e) == 0 && st.passes >= 2;
        gs_radix_small_max(0);
        uint32_t *k = (uint32_t *)ar->base, *v = k + N;
        for (size_t i = 0; i < N; i++) {
            k[i] = (uint32_t)(i * 2654435761u) & 0xff;
            v[i] = (uint32_t)i;
        }
        gs_sort_req req = {
            .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = N, .keys = k, .values = v
        };
        flipper f = { .k = k, .n = N };
        if (pthread_create(&f.th, NULL, flip_main, &f))
            tap_bail("cannot start the writer");
        gs_err_clear(&e);
        int rc = gs_sort_run(a, &ctx, &req, &p, &st, &e);
        atomic_store(&f.stop, 1);
        pthread_join(f.th, NULL);
        flips += f.rounds;
        one += rc == 0 || rc == GS_EINVAL ? st.passes == 1 : 0;
        if (rc && rc != GS_EINVAL && !bad++)
            snprintf(why, sizeof why, ": %.250s", e.msg);
        for (size_t i = 0; i < N; i++)
            leaked += (k[i] >> 8) != 0 || v[i] >= N;
    }
    free(mk);
    gs_radix_small_max((size_t)-1);
    gs_clrun_guard(GUARD);
    char passes[48] = "";
    if (a == &gs_algo_radix)
        snprintf(passes, sizeof passes, ", %u of %u in one pass", one, rounds);
    tap_ok(leaked == 0 && bad == 0 && marked == rounds, "%s: %u raced %s sorts (%lu flips of the "
           "keys%s) on pooled buffers that held another sort's keys and values: none of those "
           "in the results (%u found; %u of %u sorts of MARKs)%s", dn, rounds, a->name, flips,
           passes, leaked, marked, rounds, why);
}

/* Every (dtype, payload) g_rounds times under the racer. */
static void matrix(tally *ty, arena *ar, const gs_dtype *dts, size_t ndt, size_t npl, size_t n,
                   race_fn fn, void *arg, const char *what)
{
    uint64_t seed = 77;
    for (size_t t = 0; t < ndt; t++)
        for (size_t p = 0; p < npl; p++)
            for (int r = 0; r < g_rounds; r++, seed++) {
                gs_sort_req req = arena_req(ar, dts[t], payloads[p], n, seed);
                req.shape.descending = r & 1;
                raced(ty, ar, &req, seed, fn, arg, what);
            }
}

/* One device: each device algorithm's paths, out of core, a split's merge,
 * pooled buffers. */
static void one_device(gs_dev *devs, size_t ndev, size_t di, arena *ar)
{
    gs_dev *dev = &devs[di];
    gs_err e;
    gs_err_clear(&e);
    if (gs_dev_open(dev, &e) < 0)
        tap_bail("opening device %zu: %s", di, e.msg);
    char dn[64];
    snprintf(dn, sizeof dn, "device %zu", di);
    priv pv = { .dev = dev };
    if (gs_dev_lane(dev, 1, &pv.q, &e) < 0)
        tap_bail("%s: a second queue: %s", dn, e.msg);
    atomic_store(&g_algo, &gs_algo_radix);
    if (pthread_create(&pv.th, NULL, priv_main, &pv))
        tap_bail("cannot start the private sorts");
    gs_sort_ctx ctx = { .dev = dev };

    for (size_t i = 0; i < gs_algo_count(); i++) {
        const gs_algo *a = gs_algo_at(i);
        if (!a->uses_device)
            continue;
        atomic_store(&g_algo, a);
        gs_params p;
        a->defaults(&dev->info, &p);
        sortarg sa = { .a = a, .ctx = &ctx, .p = &p };
        char what[160];
        int is_radix = a == &gs_algo_radix, is_mp = a == &gs_algo_mergepath;
        int is_bi = a == &gs_algo_bitonic;
        /* radix: reduce-then-scan, with the read-back (the first pass's
         * upsweep gives the OR and AND), onesweep, 8 equal rows sorted
         * whole (radix_scan_rows, each row's NaN patterns); mergepath:
         * global merge levels, then the tile sort alone; bitonic: a row,
         * then segments of 0-3, 40-60 and 700 keys in three launches */
        for (int v = 0; v < (is_radix ? 4 : is_mp || is_bi ? 2 : 1); v++) {
            gs_params q = p;
            size_t n = a == &gs_algo_bitonic ? 4096 : N;   /* a row in local memory */
            const char *vn = "";
            if (is_radix && v == 1) {
                gs_radix_small_max(0);
                vn = ", reduce-then-scan with the read-back";
            } else if (is_radix && v == 2) {
                gs_params_set(&q, "lookback", 1);
                vn = ", onesweep";
            } else if (is_radix && v == 3) {
                sa.rows = 8;
                vn = ", 8 rows sorted whole";
            } else if (is_radix) {
                vn = ", reduce-then-scan";
            } else if (is_mp && v == 1) {
                n = 1000;
                vn = ", the tile sort alone";
            } else if (is_mp) {
                vn = ", tile sort and merge levels";
            } else if (is_bi && v == 1) {
                static uint64_t offs[4097];
                uint64_t g = 0;
                for (offs[0] = 0; offs[g] < n; g++) {
                    uint64_t len = g == 7 ? 700 : g % 3 == 0 ? 40 + g % 21 : g % 4;
                    offs[g + 1] = offs[g] + len < n ? offs[g] + len : n;
                }
                sa.offs = offs;
                sa.segs = g;
                gs_params_set(&q, "class_work", 4096);
                vn = ", segments by size class";
            }
            sa.p = &q;
            tally ty = { 0 };
            snprintf(what, sizeof what, "%s%s", a->name, vn);
            matrix(&ty, ar, ints, 2, NPL, n, do_sort, &sa, what);
            if (is_radix && v != 3) {
                /* 16-bit keys where they lie (the daemon's 8- and 16-bit
                 * keys, shape.narrow): half, bfloat16, i16, every payload;
                 * in the first set keys alone counted (radix_count.c) */
                static const int nts[] = { GS_NW_F16, GS_NW_BF16, GS_NW_I16 };
                uint64_t seed = 500;
                gs_radix_force_count(v == 0 ? 1 : -1);
                for (size_t t = 0; t < 3; t++)
                    for (size_t pl = 0; pl < NPL; pl++)
                        for (int r = 0; r < g_rounds; r++, seed++) {
                            gs_sort_req req = arena_req(ar, GS_DT_U32, payloads[pl], n, seed);
                            req.shape.narrow = nts[t];
                            req.shape.descending = r & 1;
                            raced(&ty, ar, &req, seed, do_sort, &sa, what);
                        }
                gs_radix_force_count(-1);
            }
            if (a->keeps_nan) {   /* NaN patterns saved and restored on the device */
                gs_keys_nan_device_min(1);
                matrix(&ty, ar, floats, 2, 2, n, do_sort, &sa, what);
                gs_keys_nan_device_min(0);
            }
            gs_radix_small_max((size_t)-1);
            sa.rows = 0;
            sa.segs = 0;
            report(&ty, dn, what);
        }
        sa.p = &p;
        if (!is_radix && !is_mp)
            continue;
        /* out of core through the device (as on a GPU), one and two
         * pieces there at once; radix also through the host merge */
        for (int route = 0; route < (is_radix ? 3 : 2); route++) {
            if (route < 2)
                gs_ooc_force(GS_OOC_DEVICE, route + 1u);
            else
                gs_ooc_force(GS_OOC_HOST, 0);
            sa.chunk = CHUNK;
            tally ty = { 0 };
            snprintf(what, sizeof what, "%s out of core (%zu pieces), %s", a->name, N / CHUNK,
                     route == 0 ? "device route, one lane" : route == 1 ?
                     "device route, two lanes" : "host merge");
            matrix(&ty, ar, ints, 2, 3, N, do_sort, &sa, what);
            report(&ty, dn, what);
            sa.chunk = 0;
        }
        gs_ooc_force(GS_OOC_AUTO, 0);
    }
    {
        splitarg sp = { .d0 = &devs[0], .d1 = &devs[ndev - 1], .a = &gs_algo_radix };
        tally ty = { 0 };
        char what[96];
        snprintf(what, sizeof what, "a split's merge (radix parts on devices 0 and %zu)",
                 ndev - 1);
        matrix(&ty, ar, ints, 2, NPL, N, do_split, &sp, what);
        report(&ty, dn, what);
    }
    pool_leak(&gs_algo_radix, dev, ar, dn);
    pool_leak(&gs_algo_mergepath, dev, ar, dn);

    atomic_store(&pv.stop, 1);
    pthread_join(pv.th, NULL);
    tap_ok(pv.wrong == 0 && pv.sorts > 0, "%s: %lu private sorts on another queue of the same "
           "device meanwhile, every one exact%s%s", dn, pv.sorts, pv.wrong ? ": " : "", pv.why);
}

int main(void)
{
    gs_log_set_level(GS_LOG_ERROR);   /* fallbacks and races are expected */
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_err e;
    gs_err_clear(&e);
    if (gs_dev_probe(&devs, &ndev, &e) < 0)
        tap_bail("probing devices: %s", e.msg);
    if (ndev == 0)
        tap_bail("no OpenCL device: these tests need one (PoCL in CI)");
    gs_clrun_guard(GUARD);
    arena ar;
    arena_init(&ar, N * 16);
    /* The premise: on a CPU device the raced arrays are the kernels' own
     * buffers (zero copy), so the writer races the kernels themselves. */
    for (size_t di = 0; di < ndev; di++) {
        if (!(devs[di].info.type & CL_DEVICE_TYPE_CPU))
            continue;
        gs_sort_req req = arena_req(&ar, GS_DT_U32, GS_PL_NONE, N, 5);
        gs_sort_ctx ctx = { .dev = &devs[di] };
        gs_params p;
        gs_algo_mergepath.defaults(&devs[di].info, &p);
        gs_sort_stats st;
        int rc = gs_sort_run(&gs_algo_mergepath, &ctx, &req, &p, &st, &e);
        tap_ok(rc == 0 && gs_clrun_hostile(&devs[di]) && st.upload_ms == 0 &&
               st.download_ms == 0, "device %zu (CPU): sorts where the arrays lie, kernels "
               "built for client pages (rc %d, upload %.3f ms, download %.3f ms)", di, rc,
               st.upload_ms, st.download_ms);
    }
    for (size_t di = 0; di < ndev; di++) {
        g_rounds = di ? 1 : ROUNDS;
        one_device(devs, ndev, di, &ar);
    }
    gs_clrun_guard(0);
    free(ar.base);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
