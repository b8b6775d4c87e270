/* The contract every algorithm of the registry (gs_registry.c) keeps, walked
 * over the registry rather than written again per algorithm: each is found
 * by its name and describes itself fully (parameters with legal values,
 * defaults naming each parameter once); and each device algorithm refuses in
 * check(), before anything is launched, whatever the device it is given
 * cannot run: a work-group above the device's maximum (naming
 * CL_DEVICE_MAX_WORK_GROUP_SIZE where the algorithm itself would allow it)
 * or below the smallest legal one, a missing, unknown or absent parameter
 * set, no device, buffers above the maximum allocation or the global
 * memory, n beyond its index width (the one per-algorithm datum here, in
 * index_limits[]); while its untuned defaults pass check() for every dtype
 * and payload on this device and on made-up ones (GPU-like, little local
 * memory, small work-groups). A refused run leaves the keys alone, and an
 * unstable algorithm refuses a request that needs stability. What is
 * particular to one algorithm (its own parameter ranges, local-memory
 * arithmetic, legal-value ladders) stays in its test_<name>.c. Runs on the
 * first OpenCL device (GSORT_TEST_DEVICE=N or =gpu picks another); a
 * missing device is a failure, never a skip. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

/* The largest n each device algorithm's kernels can index, and the words
 * its refusal uses. A device algorithm missing here fails the test: add
 * it (one that sorts rows whole, bitonic, has no limit but memory). */
static const struct index_limit {
    const char *algo;
    uint64_t max_n;
    const char *why;
} index_limits[] = {
    { "radix", UINT64_C(0xFFFF0000), "32-bit offsets" },
    { "mergepath", UINT64_C(0xFFFF0000), "32-bit positions" },
    { "shellsort", UINT64_C(0x7FFF0000), "32-bit indexing" },
    { "select", UINT64_C(0xFFFF0000), "32-bit positions" },
};

/* A top-k-only algorithm (select) takes its requests as top-1 requests:
 * the checks below are about the device, not the shape. */
static void topk_of(const gs_algo *a, gs_sort_req *r)
{
    if (a->topk) {
        r->shape.topk = 1;
        r->shape.k = 1;
    }
}

static const struct index_limit *index_limit(const gs_algo *a)
{
    for (size_t i = 0; i < sizeof index_limits / sizeof index_limits[0]; i++)
        if (!strcmp(index_limits[i].algo, a->name))
            return &index_limits[i];
    return NULL;
}

/* ---- made-up devices ---- */

/* The same device without limits worth the name: what the algorithm's own
 * ranges allow shows on it. */
static gs_dev roomy(const gs_dev *dev)
{
    gs_dev r = *dev;
    r.info.max_wg_size = (size_t)1 << 20;
    r.info.local_mem = UINT64_C(1) << 30;
    r.info.max_alloc = r.info.global_mem = UINT64_C(1) << 44;
    return r;
}

/* ---- helpers ---- */

/* p without parameter `drop` (NULL: all of them). */
static void copy_without(const gs_params *p, const char *drop, gs_params *out)
{
    gs_params_clear(out);
    for (int i = 0; i < p->count; i++)
        if (!drop || strcmp(p->p[i].name, drop))
            gs_params_set(out, p->p[i].name, p->p[i].value);
}

static int has_param(const gs_algo *a, const char *name)
{
    for (size_t i = 0; i < a->nparams; i++)
        if (!strcmp(a->params[i].name, name))
            return 1;
    return 0;
}

/* A request of n keys as a (check-only) request to a: flat, or for an
 * algorithm that sorts rows whole and bounds a row's length (bitonic: a
 * row in one group's local memory) as rows of 8 keys (of 1 where 8 do not
 * divide n), so the checks below see what the defaults do with n keys and
 * not the row bound, which that algorithm's own test checks. */
static gs_sort_req req_of(const gs_algo *a, gs_dtype t, gs_payload pl, size_t n)
{
    gs_sort_req r = { .shape = { .dtype = t, .payload = pl }, .n = n };
    if (a->rows)
        r.shape.rows = n % 8 ? n : n / 8;
    topk_of(a, &r);
    return r;
}

/* Does check() accept p for every dtype and payload at n on dev? */
/* Every dtype, keys alone and with every payload; an algorithm that sorts
 * keys alone (vqsort) may refuse a payload, but only as unsupported, with
 * its reason, never keys alone. */
static int accepts_all(const gs_algo *a, const gs_dev *dev, const gs_params *p, size_t n,
                       gs_err *err)
{
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int pl = 0; pl < GS_PL_COUNT; pl++) {
            gs_sort_req r = req_of(a, (gs_dtype)t, (gs_payload)pl, n);
            int rc = a->check(dev, &r, p, err);
            if (rc != 0 && (pl == GS_PL_NONE || rc != GS_EUNSUPPORTED || !err->msg[0]))
                return 0;
            gs_err_clear(err);
        }
    return 1;
}

/* ---- every algorithm ---- */

static void test_descriptor(const gs_algo *a, const gs_dev *dev)
{
    int ok = a->name && a->summary && a->check && a->run && a->defaults &&
             gs_algo_find(a->name) == a && (a->nparams == 0 || a->params);
    tap_ok(ok, "%s: named, described, found by its name, with check, run and defaults",
           a->name ? a->name : "(unnamed)");
    if (!ok)
        return;
    const gs_dev_info *in = a->uses_device ? &dev->info : NULL;
    for (size_t i = 0; i < a->nparams; i++) {
        long vals[64];
        size_t nv = a->params[i].values ? a->params[i].values(in, vals, 64) : 0;
        int asc = nv > 0;
        for (size_t j = 1; j < nv; j++)
            asc &= vals[j - 1] < vals[j];
        tap_ok(a->params[i].name && a->params[i].doc && asc,
               "%s: parameter %s documented, %zu legal values ascending here", a->name,
               a->params[i].name ? a->params[i].name : "?", nv);
    }
    gs_params d;
    a->defaults(in, &d);
    int once = d.count == (int)a->nparams;
    for (int i = 0; once && i < d.count; i++) {
        once = has_param(a, d.p[i].name);
        for (int j = 0; once && j < i; j++)
            once = strcmp(d.p[i].name, d.p[j].name) != 0;
    }
    tap_ok(once, "%s: the defaults name each of its %zu parameters once", a->name, a->nparams);
    if (!a->uses_device) {
        gs_err err;
        gs_err_clear(&err);
        tap_ok(accepts_all(a, NULL, &d, 1000003, &err),
               "%s: defaults pass check without a device for every dtype and payload it "
               "sorts (%s)",
               a->name, err.msg);
    }
}

/* An unstable algorithm refuses, through gs_sort_run, a request that needs
 * stability, and leaves the keys alone. */
static void test_stability(const gs_algo *a, gs_dev *dev)
{
    if (a->stable)
        return;
    gs_sort_ctx ctx = { .dev = a->uses_device ? dev : NULL };
    gs_params d;
    a->defaults(a->uses_device ? &dev->info : NULL, &d);
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .stable = 1 },
                        .n = 4, .keys = k };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(a, &ctx, &req, &d, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "stable") && k[0] == 3 && k[1] == 1 &&
               k[2] == 2 && k[3] == 0,
           "%s: gs_sort_run refuses a request that needs stability (%s)", a->name, err.msg);
}

/* A made-up parameter name, and every other algorithm's parameter this one
 * lacks, are refused by name (the host sort's too: it has none). */
static void test_unknown(const gs_algo *a, const gs_dev *dev)
{
    if (!a->uses_device)
        dev = NULL;
    gs_params d, p;
    a->defaults(dev ? &dev->info : NULL, &d);
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 4, .keys = k };
    topk_of(a, &req);
    char needle[128], what[160];
    const char *unknown[GS_MAX_PARAMS * 8];
    size_t nu = 0;
    unknown[nu++] = "unroll";
    for (size_t j = 0; j < gs_algo_count(); j++) {
        const gs_algo *o = gs_algo_at(j);
        for (size_t i = 0; o != a && i < o->nparams; i++) {
            int seen = has_param(a, o->params[i].name);
            for (size_t u = 0; !seen && u < nu; u++)
                seen = !strcmp(unknown[u], o->params[i].name);
            if (!seen && nu < sizeof unknown / sizeof unknown[0])
                unknown[nu++] = o->params[i].name;
        }
    }
    for (size_t u = 0; u < nu; u++) {
        copy_without(&d, NULL, &p);
        gs_params_set(&p, unknown[u], 4);
        snprintf(needle, sizeof needle, "unknown parameter '%s'", unknown[u]);
        snprintf(what, sizeof what, "%s: an unknown parameter %s", a->name, unknown[u]);
        sc_expect_reject(a, dev, &req, &p, GS_EUNSUPPORTED, needle, what);
    }
}

/* ---- device algorithms ---- */

/* Defaults made for a device pass check() there for every dtype and
 * payload, within its work-group limit. */
static void test_defaults(const gs_algo *a, const gs_dev *dev)
{
    gs_dev v[7];
    const char *vname[7];
    size_t nv = 0;
    int big[7];   /* 80 GiB of global memory: n = 2^28 too */
    v[nv] = *dev, vname[nv] = "this device", big[nv++] = 0;
    v[nv] = *dev, v[nv].info.local_mem = 48 * 1024, v[nv].info.max_wg_size = 1024;
    vname[nv] = "this device with 48 KiB of local memory and groups of 1024", big[nv++] = 0;
    v[nv] = v[nv - 1], v[nv].info.local_mem = 4096;
    vname[nv] = "this device with 4 KiB of local memory and groups of 1024", big[nv++] = 0;
    v[nv] = sc_gpu_like(dev), vname[nv] = "a GPU-like device (1024 wg, 48 KiB, 132 CUs)";
    big[nv++] = 1;
    v[nv] = sc_gpu_like(dev), v[nv].info.local_mem = 4096;
    vname[nv] = "a GPU-like device with 4 KiB of local memory", big[nv++] = 1;
    v[nv] = v[nv - 1], v[nv].info.max_wg_size = 64;
    vname[nv] = "a GPU-like device with 4 KiB of local memory and groups of 64", big[nv++] = 1;
    v[nv] = sc_gpu_like(dev), v[nv].info.max_wg_size = 128;
    vname[nv] = "a GPU-like device with groups of 128", big[nv++] = 1;
    for (size_t i = 0; i < nv; i++) {
        gs_params d;
        a->defaults(&v[i].info, &d);
        char ds[128];
        gs_params_format(&d, ds, sizeof ds);
        gs_err err;
        gs_err_clear(&err);
        long wg = gs_params_get(&d, "wg_size", 0);
        int ok = wg >= 1 && (size_t)wg <= v[i].info.max_wg_size &&
                 accepts_all(a, &v[i], &d, 1000, &err) &&
                 accepts_all(a, &v[i], &d, 1000003, &err) &&
                 (!big[i] || accepts_all(a, &v[i], &d, (size_t)1 << 28, &err));
        tap_ok(ok, "%s: defaults %s for %s fit its groups and pass check for every dtype and "
               "payload, n = 1000, 1000003%s (%s)", a->name, ds, vname[i],
               big[i] ? " and 2^28" : "", err.msg);
    }
}

/* wg_size = wg, the rest the defaults for dev, is refused on dev: naming
 * the device's limit when the algorithm itself allows that wg_size. */
static void expect_wg_refused(const gs_algo *a, const gs_dev *dev, long wg, const char *where)
{
    gs_params p;
    a->defaults(&dev->info, &p);
    gs_params_set(&p, "wg_size", wg);
    gs_dev r = roomy(dev);
    gs_err err;
    gs_err_clear(&err);
    int own = a->check(&r, NULL, &p, &err) == 0;
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 4, .keys = k };
    topk_of(a, &req);
    char what[256];
    snprintf(what, sizeof what, "%s: wg_size=%ld above the maximum %zu of %s%s", a->name, wg,
             dev->info.max_wg_size, where, own ? " (a size it allows elsewhere)" : "");
    sc_expect_reject(a, dev, &req, &p, GS_EUNSUPPORTED,
                     own ? "CL_DEVICE_MAX_WORK_GROUP_SIZE" : "wg_size", what);
}

static void test_workgroups(const gs_algo *a, gs_dev *dev)
{
    tap_ok(has_param(a, "wg_size"), "%s: its work-group size is the parameter wg_size",
           a->name);
    const gs_dev_info *in = &dev->info;
    long top = (long)(in->max_wg_size > 1024 ? in->max_wg_size : 1024) * 2;
    expect_wg_refused(a, dev, top, "this device");
    if (top != (long)in->max_wg_size * 2)
        expect_wg_refused(a, dev, (long)in->max_wg_size * 2, "this device");
    gs_dev gpu = sc_gpu_like(dev);
    expect_wg_refused(a, &gpu, 2048, "a GPU-like device");
    gpu.info.max_wg_size = 64;
    expect_wg_refused(a, &gpu, 128, "a GPU-like device with groups of 64");

    /* below the smallest legal size; refused by gs_sort_run too, before
     * the keys are touched */
    long vals[64];
    size_t wi = 0;
    while (wi < a->nparams && strcmp(a->params[wi].name, "wg_size"))
        wi++;
    if (wi == a->nparams)
        return;
    size_t nv = a->params[wi].values(in, vals, 64);
    long small = nv ? vals[0] / 2 : 0;
    gs_params p;
    a->defaults(in, &p);
    gs_params_set(&p, "wg_size", small);
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 4, .keys = k };
    topk_of(a, &req);
    char needle[64], what[128];
    snprintf(needle, sizeof needle, "wg_size=%ld", small);
    snprintf(what, sizeof what, "%s: wg_size=%ld (below %ld)", a->name, small,
             nv ? vals[0] : 0L);
    sc_expect_reject(a, dev, &req, &p, GS_EUNSUPPORTED, needle, what);
    gs_sort_ctx ctx = { .dev = dev };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(a, &ctx, &req, &p, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && k[0] == 3 && k[1] == 1 && k[2] == 2 && k[3] == 0,
           "%s: gs_sort_run with a rejected set fails before touching the keys (%s)", a->name,
           err.msg);
}

static void test_param_sets(const gs_algo *a, const gs_dev *dev)
{
    gs_params d, p;
    a->defaults(&dev->info, &d);
    uint32_t k[4] = { 3, 1, 2, 0 };
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 4, .keys = k };
    topk_of(a, &req);
    char what[160];
    gs_err err;
    /* One rule everywhere (issue 34): a name left out takes its default on
     * the device, so a set without any one of them checks and sorts. */
    for (size_t i = 0; i < a->nparams; i++) {
        copy_without(&d, a->params[i].name, &p);
        snprintf(what, sizeof what, "%s: a set without %s", a->name, a->params[i].name);
        uint32_t s[4] = { 3, 1, 2, 0 };
        gs_sort_req sr = req;
        sr.keys = s;
        gs_err_clear(&err);
        int crc = a->check(dev, &req, &p, &err);
        gs_sort_ctx ctx = { .dev = (gs_dev *)dev };
        int rrc = crc ? crc : gs_sort_run(a, &ctx, &sr, &p, NULL, &err);
        /* a top-1: the smallest in the first place, the rest as it was */
        int done = a->topk ? s[0] == 0 && s[1] == 1 && s[2] == 2 && s[3] == 0
                           : s[0] == 0 && s[1] == 1 && s[2] == 2 && s[3] == 3;
        tap_ok(crc == 0 && rrc == 0 && done, "%s checks and sorts, taking the default (%s)",
               what, err.msg);
    }
    gs_params_clear(&p);
    gs_params_set(&p, "no_such_param", 1);
    snprintf(what, sizeof what, "%s: a set naming no parameter of it", a->name);
    sc_expect_reject(a, dev, &req, &p, GS_EUNSUPPORTED, "unknown parameter 'no_such_param'", what);
    gs_err_clear(&err);
    tap_ok(a->check(dev, &req, NULL, &err) == GS_EUNSUPPORTED && err.msg[0],
           "%s: check rejects a NULL parameter set (%s)", a->name, err.msg);
    snprintf(what, sizeof what, "%s: no device", a->name);
    sc_expect_reject(a, NULL, &req, &d, GS_EUNSUPPORTED, "device", what);
}

static void test_memory(const gs_algo *a, const gs_dev *dev)
{
    gs_params p;
    a->defaults(&dev->info, &p);
    char what[160];

    gs_dev fake = *dev;
    fake.info.max_alloc = 1 << 20;
    gs_sort_req rbig = req_of(a, GS_DT_U32, GS_PL_NONE, 300000);
    snprintf(what, sizeof what, "%s: n x 4 bytes above a 1 MiB max allocation", a->name);
    sc_expect_reject(a, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE", what);
    rbig = req_of(a, GS_DT_U32, GS_PL_IDX64, 200000);
    if (a->topk) {
        /* a select sends the keys alone: indices and values stay on the host */
        gs_err err;
        gs_err_clear(&err);
        tap_ok(a->check(&fake, &rbig, &p, &err) == 0, "%s: 800 kB of keys with 8-byte "
               "indices pass a 1 MiB max allocation: only keys go to the device (%s)", a->name,
               err.msg);
        fake = *dev;
        fake.info.global_mem = 1 << 20;
        rbig = req_of(a, GS_DT_U32, GS_PL_NONE, 300000);
        snprintf(what, sizeof what, "%s: keys above 1 MiB of global memory", a->name);
        sc_expect_reject(a, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_GLOBAL_MEM_SIZE", what);
    } else {
        snprintf(what, sizeof what, "%s: n x 8-byte indices above a 1 MiB max allocation",
                 a->name);
        sc_expect_reject(a, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_MAX_MEM_ALLOC_SIZE", what);

        fake = *dev;
        fake.info.global_mem = 4 << 20;
        rbig = req_of(a, GS_DT_U32, GS_PL_U32, 300000);
        snprintf(what, sizeof what, "%s: keys and values with their scratch above 4 MiB of "
                 "global memory", a->name);
        sc_expect_reject(a, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_GLOBAL_MEM_SIZE", what);
        fake.info.global_mem = 3 << 20;
        rbig.shape.payload = GS_PL_IDX64;   /* 2.4 MB of keys and indices, doubled */
        snprintf(what, sizeof what, "%s: keys and indices with their scratch above 3 MiB of "
                 "global memory", a->name);
        sc_expect_reject(a, &fake, &rbig, &p, GS_ETOOBIG, "CL_DEVICE_GLOBAL_MEM_SIZE", what);
    }

    const struct index_limit *lim = index_limit(a);
    if (!lim && a->rows) {
        /* rows addressed with 64 bits, a row within a group: no limit but
         * memory (2^36 keys as rows of 8 on a device with 1 TiB) */
        fake = *dev;
        fake.info.max_alloc = fake.info.global_mem = UINT64_C(1) << 40;
        gs_sort_req huge = req_of(a, GS_DT_U32, GS_PL_NONE, (size_t)1 << 36);
        gs_err err;
        gs_err_clear(&err);
        tap_ok(a->check(&fake, &huge, &p, &err) == 0,
               "%s: 2^36 keys in rows accepted on a device with 1 TiB (%s)", a->name, err.msg);
        return;
    }
    tap_ok(lim != NULL, "%s: its index width is listed in this test", a->name);
    if (!lim)
        return;
    gs_sort_req rreal = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_NONE },
                          .n = (size_t)(dev->info.max_alloc / 8 + 1) };
    topk_of(a, &rreal);
    snprintf(what, sizeof what, "%s: n beyond this device's max_alloc", a->name);
    sc_expect_reject(a, dev, &rreal, &p, GS_ETOOBIG,
                     rreal.n > lim->max_n ? lim->why : "max allocation", what);
    fake = *dev;
    fake.info.max_alloc = fake.info.global_mem = UINT64_C(1) << 40;
    rreal.shape.dtype = GS_DT_U32;
    uint64_t pow2 = 1;
    while (pow2 <= lim->max_n)
        pow2 *= 2;
    const uint64_t over[] = { lim->max_n + 1, pow2 };
    for (size_t i = 0; i < 2; i++) {
        rreal.n = (size_t)over[i];
        snprintf(what, sizeof what, "%s: n = %#" PRIx64 " (%s)", a->name, over[i], lim->why);
        sc_expect_reject(a, &fake, &rreal, &p, GS_ETOOBIG, lim->why, what);
    }
    rreal.n = (size_t)lim->max_n;
    gs_err err;
    gs_err_clear(&err);
    tap_ok(a->check(&fake, &rreal, &p, &err) == 0,
           "%s: n = %#" PRIx64 " accepted on a device with 1 TiB (%s)", a->name, lim->max_n,
           err.msg);
}

/* The default a left-out name takes is the device's: on a GPU radix's
 * lookback defaults to 2 (onesweep for small arrays), on a CPU to 0, and a
 * radix set saved without it (migration 005 gave those lookback=0) must
 * not be confused with either. */
static void test_radix_left_out(const gs_dev *dev)
{
    gs_dev_info gpu = dev->info;
    gpu.type = CL_DEVICE_TYPE_GPU;
    gpu.local_mem = 48 * 1024;
    gs_params p, p0;
    gs_params_clear(&p);
    gs_params_set(&p, "radix_bits", 8);
    gs_params_set(&p, "wg_size", 256);
    p0 = p;
    gs_params_set(&p0, "lookback", 0);
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = 1u << 16 };
    gs_err err;
    gs_err_clear(&err);
    int g = gs_radix_takes_lookback(&gpu, &req, &p, &err);
    int g0 = gs_radix_takes_lookback(&gpu, &req, &p0, &err);
    gs_dev_info cpu = gpu;
    cpu.type = CL_DEVICE_TYPE_CPU;
    int c = gs_radix_takes_lookback(&cpu, &req, &p, &err);
    tap_ok(g == 1 && g0 == 0 && c == 0,
           "radix without lookback: a GPU takes its default 2 (onesweep at 2^16: %d; with "
           "lookback=0: %d), a CPU its default 0 (%d) %s", g, g0, c, err.msg);
}

int main(void)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "registry");
    size_t ndevalgo = 0;
    for (size_t i = 0; i < gs_algo_count(); i++) {
        const gs_algo *a = gs_algo_at(i);
        test_descriptor(a, dev);
        if (a->uses_device) {
            ndevalgo++;
            test_defaults(a, dev);
            test_workgroups(a, dev);
            test_param_sets(a, dev);
            test_memory(a, dev);
        }
        test_unknown(a, dev);
        test_stability(a, dev);
    }
    if (gs_algo_find("radix"))
        test_radix_left_out(dev);
    tap_ok(gs_algo_at(gs_algo_count()) == NULL && gs_algo_find("no-such-algorithm") == NULL &&
               ndevalgo > 0,
           "the registry lists %zu algorithms (%zu on a device) and nothing past them",
           gs_algo_count(), ndevalgo);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
