/* The client blocks a daemon keeps across requests (daemon/serve/gs_blocks.c)
 * and their pinning for device copies (core/gs_pin.c), against real
 * daemons on the first OpenCL device (PoCL in CI, where the test hook
 * GSORTD_TEST_PIN_ANY=1 makes the daemon register blocks with a CPU device
 * too, so the pinned path runs here): a block sent once is mapped for its
 * request only and not pinned; sent again, it is kept and pinned once, and
 * not mapped again; the bytes are the current ones every time even
 * after the client rewrote them (the runtime's device mirror of a
 * USE_HOST_PTR buffer goes stale, so the daemon must never copy from it);
 * other dtypes and payloads on the same block; the pinned bytes go back
 * when a connection closes and stay bounded when a connection sends more
 * blocks than it may keep; max_pinned_bytes = 0 and a cap smaller than
 * two blocks refuse pinning and still sort correctly; a memfd that grew is
 * mapped again; the host sort on a kept block; no pinning on a CPU device
 * without the hook. */
#include "config.h"
#include "dmn.h"
#include "gs_client.h"
#include "sortcheck.h"
#include "tap.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define N 50000

/* The device every daemon here serves and sorts on: GSORT_TEST_DEVICE (the
 * suite's convention, e.g. 1 for the GPU beside PoCL), else 0. */
static int g_dev;
static char g_devices[32];

/* Pin on PoCL too; and stage every copy to or from unpinned memory (a
 * block sent once) through pinned buffers of 12 KiB, so the chunked
 * staging runs here with many chunks (gs_stage.h; the hook also turns off
 * the CPU device's zero-copy input, to copy as a GPU does). */
static const char *const g_pin_env[] = { "GSORTD_TEST_PIN_ANY=1", "GSORTD_TEST_STAGE=1,12288",
                                         NULL };

static int child_env(void *arg)
{
    for (const char *const *e = arg; *e; e++)
        if (putenv((char *)*e) != 0)
            return 1;
    return 0;
}

/* One "blocks" field of the daemon's stats; -1 when it cannot be read. */
static double stat_of(gs_client *c, const char *field)
{
    cJSON *r = NULL;
    gs_err err;
    if (gs_client_call(c, "stats", &r, &err) != 0) {
        tap_diag("stats: %s", err.msg);
        cJSON_Delete(r);
        return -1;
    }
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "blocks");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, field);
    double x = cJSON_IsNumber(v) ? v->valuedouble : -1;
    cJSON_Delete(r);
    return x;
}

/* Sort case `sc` (input copied into shm at offset 0, values after the
 * keys) through the daemon with `algo` on device 0, copy the result back
 * and verify it: 1 when correct. */
static int sort_in_block(gs_client *c, const gs_client_shm *shm, sc_case *sc,
                         const char *algo, gs_client_result *res)
{
    size_t n = sc->req.n, kb = n * gs_dtype_size(sc->req.shape.dtype);
    size_t vb = sc->req.values ? n * gs_payload_size(sc->req.shape.payload) : 0;
    size_t voff = (kb + 7) & ~(size_t)7;
    if (voff + vb > shm->size) {
        tap_diag("block of %zu bytes too small for %zu", shm->size, voff + vb);
        return 0;
    }
    sc_case_reset(sc);
    memcpy(shm->ptr, sc->req.keys, kb);
    if (vb)
        memcpy((char *)shm->ptr + voff, sc->req.values, vb);
    gs_client_sort s = { .shape = sc->req.shape, .n = n,
                         .keys = shm->ptr, .values = vb ? (char *)shm->ptr + voff : NULL,
                         .algorithm = algo, .device = strcmp(algo, "host") ? g_dev : -1,
                         .shm = shm };
    gs_err err;
    if (gs_client_sort_run(c, &s, res, &err) != 0) {
        tap_diag("sort: %s", err.msg);
        return 0;
    }
    memcpy(sc->req.keys, shm->ptr, kb);
    if (vb)
        memcpy(sc->req.values, (char *)shm->ptr + voff, vb);
    char why[256];
    if (!sc_case_verify(sc, 1, why, sizeof why)) {
        tap_diag("%s", why);
        return 0;
    }
    return 1;
}

static gs_client *connect_to(const dmn *d)
{
    gs_client *c = NULL;
    gs_err err;
    if (gs_client_connect(&c, d->sock, &err) != 0)
        tap_bail("connect to %s: %s", d->sock, err.msg);
    return c;
}

static int log_has(const dmn *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void test_pinned(void)
{
    static dmn d;
    const char *extra[] = { "-o", g_devices, "-o", "host_threads=1", NULL };
    if (dmn_spawn(&d, "pin", NULL, extra, child_env, (void *)g_pin_env) || dmn_wait_ready(&d))
        tap_bail("daemon with GSORTD_TEST_PIN_ANY did not start");
    gs_client *c = connect_to(&d);
    gs_err err;
    gs_client_shm shm;
    if (gs_client_shm_alloc(&shm, (size_t)N * 16, &err) != 0)
        tap_bail("memfd: %s", err.msg);

    /* The same block five times, new keys each time (rewritten by the
     * client between sorts). */
    int all_ok = 1;
    gs_client_result res;
    for (int round = 0; round < 5; round++) {
        sc_case sc;
        if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N, 0, 1000 + (uint64_t)round))
            tap_bail("out of memory");
        all_ok &= sort_in_block(c, &shm, &sc, "radix", &res);
        sc_case_free(&sc);
    }
    tap_ok(all_ok, "five sorts of one block, rewritten between them, are all correct "
           "(radix on device %d)", res.device);
    tap_ok(stat_of(c, "mapped") == 2 && stat_of(c, "reused") == 3,
           "the block was mapped for the first sort only, then kept from the second on "
           "(mapped %.0f, reused %.0f)", stat_of(c, "mapped"), stat_of(c, "reused"));
    tap_ok(stat_of(c, "pinned") == 1 && stat_of(c, "pinned_bytes") == (double)shm.size,
           "it was pinned once, its %zu bytes counted (pinned %.0f, pinned_bytes %.0f)",
           shm.size, stat_of(c, "pinned"), stat_of(c, "pinned_bytes"));

    /* Other dtypes and payloads on the same block. */
    static const struct { gs_dtype t; gs_payload p; } kinds[] = {
        { GS_DT_U64, GS_PL_U32 }, { GS_DT_F32, GS_PL_IDX32 }, { GS_DT_I64, GS_PL_U64 },
        { GS_DT_F64, GS_PL_NONE },
    };
    all_ok = 1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        sc_case sc;
        if (sc_case_init(&sc, kinds[i].t, kinds[i].p, (int)(i & 1), N / 2, 0, 77 + i))
            tap_bail("out of memory");
        int ok = sort_in_block(c, &shm, &sc, "radix", &res);
        if (!ok)
            tap_diag("%s keys, %s values", gs_dtype_name(kinds[i].t),
                     gs_payload_name(kinds[i].p));
        all_ok &= ok;
        sc_case_free(&sc);
    }
    tap_ok(all_ok && stat_of(c, "mapped") == 2 && stat_of(c, "pinned") == 1,
           "u64+u32, f32 argsort, i64+u64 and f64 on the same kept block are correct, with no "
           "new mapping or pinning");

    /* The host sort on the kept block. */
    sc_case sc;
    if (sc_case_init(&sc, GS_DT_I32, GS_PL_U32, 1, N, 0, 5))
        tap_bail("out of memory");
    tap_ok(sort_in_block(c, &shm, &sc, "host", &res) && res.device == -1 &&
           stat_of(c, "mapped") == 2, "the host sort on the kept block is correct");
    sc_case_free(&sc);

    /* A second connection with its own block; closing the first gives its
     * pinned bytes back. */
    gs_client *c2 = connect_to(&d);
    gs_client_shm shm2;
    if (gs_client_shm_alloc(&shm2, (size_t)N * 8, &err) != 0)
        tap_bail("memfd: %s", err.msg);
    all_ok = 1;
    for (int i = 0; i < 2; i++) {
        if (sc_case_init(&sc, GS_DT_U32, GS_PL_U32, 0, N, 0, 9 + (uint64_t)i))
            tap_bail("out of memory");
        all_ok &= sort_in_block(c2, &shm2, &sc, "radix", &res);
        sc_case_free(&sc);
        if (i == 0)
            tap_ok(all_ok && stat_of(c2, "pinned_bytes") == (double)shm.size,
                   "a block sent once is not pinned (%.0f bytes pinned)",
                   stat_of(c2, "pinned_bytes"));
    }
    tap_ok(all_ok && stat_of(c2, "pinned_bytes") == (double)(shm.size + shm2.size),
           "sent again, a second connection's block is pinned beside the first (%.0f bytes)",
           stat_of(c2, "pinned_bytes"));

    /* Memory sent once (one-shot memfds) is neither kept nor pinned. */
    double m0 = stat_of(c2, "mapped"), r0 = stat_of(c2, "reused");
    all_ok = 1;
    for (int i = 0; i < 3; i++) {
        gs_client_shm one;
        if (gs_client_shm_alloc(&one, (size_t)N * 4, &err) != 0)
            tap_bail("memfd: %s", err.msg);
        if (sc_case_init(&sc, GS_DT_F32, GS_PL_NONE, 1, N, 0, 200 + (uint64_t)i))
            tap_bail("out of memory");
        all_ok &= sort_in_block(c2, &one, &sc, "radix", &res);
        sc_case_free(&sc);
        gs_client_shm_free(&one);
    }
    tap_ok(all_ok && stat_of(c2, "mapped") == m0 + 3 && stat_of(c2, "reused") == r0 &&
           stat_of(c2, "pinned_bytes") == (double)(shm.size + shm2.size),
           "three one-shot blocks: each mapped for its sort, none kept or pinned, all correct");
    gs_client_close(c);
    double left = dmn_wait_stat(&d, "blocks", "pinned_bytes", (double)shm2.size, 0, 10);
    tap_ok(left == (double)shm2.size, "closing the first connection gives its pinned bytes "
           "back (%.0f left)", left);

    /* More blocks than a connection keeps: the oldest go, pinned bytes
     * stay bounded. */
    gs_client_shm many[6];
    all_ok = 1;
    double mapped0 = stat_of(c2, "mapped");
    for (int i = 0; i < 6; i++) {
        if (gs_client_shm_alloc(&many[i], (size_t)N * 8, &err) != 0)
            tap_bail("memfd: %s", err.msg);
        for (int k = 0; k < 2; k++) {
            if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N, 0, 300 + (uint64_t)(2 * i + k)))
                tap_bail("out of memory");
            all_ok &= sort_in_block(c2, &many[i], &sc, "radix", &res);
            sc_case_free(&sc);
        }
    }
    double pb = stat_of(c2, "pinned_bytes");
    tap_ok(all_ok && stat_of(c2, "mapped") == mapped0 + 12 && pb == 4.0 * (double)many[0].size,
           "six new blocks sent twice each on one connection: all correct, the connection "
           "keeps four (pinned_bytes %.0f = 4 x %zu)", pb, many[0].size);
    /* The first of them was dropped: sending it again maps it anew. */
    if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N, 0, 400))
        tap_bail("out of memory");
    tap_ok(sort_in_block(c2, &many[0], &sc, "radix", &res) &&
           stat_of(c2, "mapped") == mapped0 + 13, "a dropped block sent again is mapped again "
           "and sorted correctly");
    sc_case_free(&sc);
    for (int i = 0; i < 6; i++)
        gs_client_shm_free(&many[i]);

    /* A memfd that grew past the daemon's mapping is mapped again. */
    int fd = memfd_create("grow", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t small = (size_t)N * 4 / 2, big = (size_t)N * 4;
    void *m1 = fd >= 0 && ftruncate(fd, (off_t)small) == 0 &&
               fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0
               ? mmap(NULL, small, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m1 == MAP_FAILED)
        tap_bail("memfd for the growing block");
    gs_client_shm g = { .fd = fd, .ptr = m1, .size = small };
    int ok1 = 1;
    for (int k = 0; k < 2; k++) {       /* the second one keeps it */
        if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N / 2, 0, 11 + (uint64_t)k))
            tap_bail("out of memory");
        ok1 &= sort_in_block(c2, &g, &sc, "radix", &res);
        sc_case_free(&sc);
    }
    double mapped1 = stat_of(c2, "mapped"), reused1 = stat_of(c2, "reused");
    munmap(m1, small);
    void *m2 = ftruncate(fd, (off_t)big) == 0
               ? mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m2 == MAP_FAILED)
        tap_bail("growing the memfd");
    g.ptr = m2;
    g.size = big;
    if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N, 0, 12))
        tap_bail("out of memory");
    int ok2 = sort_in_block(c2, &g, &sc, "radix", &res);
    sc_case_free(&sc);
    tap_ok(ok1 && ok2 && stat_of(c2, "mapped") == mapped1 + 1 &&
           stat_of(c2, "reused") == reused1,
           "a memfd grown past the kept mapping is mapped again, and the sorts are correct");
    munmap(m2, big);
    close(fd);

    tap_ok(stat_of(c2, "max_pinned_bytes") > 0, "max_pinned_bytes has a non-zero default "
           "(%.0f)", stat_of(c2, "max_pinned_bytes"));
    gs_client_close(c2);
    gs_client_shm_free(&shm);
    gs_client_shm_free(&shm2);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "the daemon stops cleanly");
}

static void test_refused(void)
{
    static dmn d0, dcap;
    const char *extra0[] = { "-o", g_devices, "-o", "max_pinned_bytes=0", NULL };
    if (dmn_spawn(&d0, "nopin", NULL, extra0, child_env, (void *)g_pin_env) ||
        dmn_wait_ready(&d0))
        tap_bail("daemon with max_pinned_bytes=0 did not start");
    gs_client *c = connect_to(&d0);
    gs_err err;
    gs_client_shm shm;
    if (gs_client_shm_alloc(&shm, (size_t)N * 8, &err) != 0)
        tap_bail("memfd: %s", err.msg);
    int all_ok = 1;
    gs_client_result res;
    for (int round = 0; round < 3; round++) {
        sc_case sc;
        if (sc_case_init(&sc, GS_DT_F32, GS_PL_U32, 0, N, 0, 50 + (uint64_t)round))
            tap_bail("out of memory");
        all_ok &= sort_in_block(c, &shm, &sc, "radix", &res);
        sc_case_free(&sc);
    }
    tap_ok(all_ok && stat_of(c, "pinned") == 0 && stat_of(c, "pinned_bytes") == 0 &&
           stat_of(c, "reused") == 1, "max_pinned_bytes=0: nothing is pinned, the block is "
           "still kept and every sort is correct");
    gs_client_close(c);
    dmn_stop(&d0, SIGTERM, 30);

    /* A cap that holds one block but not two. */
    char cap[64];
    snprintf(cap, sizeof cap, "max_pinned_bytes=%zu", shm.size + shm.size / 2);
    const char *extracap[] = { "-o", g_devices, "-o", cap, NULL };
    if (dmn_spawn(&dcap, "cap", NULL, extracap, child_env, (void *)g_pin_env) ||
        dmn_wait_ready(&dcap))
        tap_bail("daemon with a small max_pinned_bytes did not start");
    c = connect_to(&dcap);
    gs_client_shm shm2;
    if (gs_client_shm_alloc(&shm2, (size_t)N * 8, &err) != 0)
        tap_bail("memfd: %s", err.msg);
    sc_case sc;
    all_ok = 1;
    for (int i = 0; i < 4; i++) {       /* each block twice: kept, then pinned */
        if (sc_case_init(&sc, GS_DT_U32, GS_PL_NONE, 0, N, 0, 60 + (uint64_t)i))
            tap_bail("out of memory");
        all_ok &= sort_in_block(c, i < 2 ? &shm : &shm2, &sc, "radix", &res);
        sc_case_free(&sc);
    }
    tap_ok(all_ok && stat_of(c, "pinned") == 1 && stat_of(c, "refused") == 1 &&
           stat_of(c, "pinned_bytes") == (double)shm.size,
           "a cap of 1.5 blocks: the first is pinned, the second refused, both sorted "
           "correctly");
    tap_ok(log_has(&dcap, "would exceed max_pinned_bytes"), "the log says the cap was reached");
    gs_client_close(c);
    dmn_stop(&dcap, SIGTERM, 30);
    gs_client_shm_free(&shm);
    gs_client_shm_free(&shm2);
}

static void test_cpu_untouched(void)
{
    static dmn d;
    const char *extra[] = { "-o", g_devices, NULL };
    if (dmn_start(&d, "cpu", NULL, extra))
        tap_bail("daemon without the pin hook did not start");
    gs_client *c = connect_to(&d);
    gs_err err;
    gs_client_shm shm;
    if (gs_client_shm_alloc(&shm, (size_t)N * 8, &err) != 0)
        tap_bail("memfd: %s", err.msg);
    sc_case sc;
    gs_client_result res;
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        if (sc_case_init(&sc, GS_DT_U64, GS_PL_NONE, 0, N, 0, 70 + (uint64_t)k))
            tap_bail("out of memory");
        ok &= sort_in_block(c, &shm, &sc, "radix", &res);
        sc_case_free(&sc);
    }
    cJSON *info = NULL;
    int cpu = 0;
    if (gs_client_call(c, "info", &info, &err) == 0) {
        const cJSON *devs = cJSON_GetObjectItemCaseSensitive(info, "devices");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(devs, g_dev),
                                                          "type");
        cpu = cJSON_IsString(t) && strstr(t->valuestring, "CPU") != NULL;
    }
    cJSON_Delete(info);
    if (cpu)
        tap_ok(ok && stat_of(c, "pinned") == 0 && stat_of(c, "refused") == 0,
               "a CPU device is never pinned for (its memory is the host's)");
    else
        tap_ok(ok && stat_of(c, "pinned") == 1, "the device is not a CPU: its block is pinned");
    gs_client_close(c);
    gs_client_shm_free(&shm);
    dmn_stop(&d, SIGTERM, 30);
}

/* A block sent once is pinned when, and only when, its sort goes out of
 * core (every byte then crosses the bus four times on a GPU), and given
 * back with the block. */
static void test_pinned_ooc(void)
{
    static dmn d;
    const char *extra[] = { "-o", g_devices, "-o", "device_mem_cap=1280K", NULL };
    if (dmn_spawn(&d, "pinooc", NULL, extra, child_env, (void *)g_pin_env) ||
        dmn_wait_ready(&d))
        tap_bail("daemon with device_mem_cap and GSORTD_TEST_PIN_ANY did not start");
    gs_client *c = connect_to(&d);
    gs_err err;
    gs_client_shm one, small;
    sc_case big, sm;
    if (gs_client_shm_alloc(&one, (size_t)60000 * 4, &err) != 0 ||
        gs_client_shm_alloc(&small, (size_t)5000 * 4, &err) != 0)
        tap_bail("memfd: %s", err.msg);
    if (sc_case_init(&big, GS_DT_U32, GS_PL_NONE, 0, 60000, 0, 31) ||
        sc_case_init(&sm, GS_DT_U32, GS_PL_NONE, 0, 5000, 0, 32))
        tap_bail("out of memory");
    gs_client_result r1, r2;
    int ok1 = sort_in_block(c, &small, &sm, "radix", &r2);
    double p1 = stat_of(c, "pinned");
    int ok2 = sort_in_block(c, &one, &big, "radix", &r1);
    double p2 = stat_of(c, "pinned"), left = dmn_wait_stat(&d, "blocks", "pinned_bytes", 0, 0, 10);
    tap_ok(ok1 && ok2 && r2.chunks == 0 && p1 == 0 && r1.chunks >= 2 && p2 == 1 && left == 0,
           "one-shot blocks: in core not pinned (%.0f), out of core (%u pieces) pinned once "
           "(%.0f) and given back with the block (%.0f bytes left)", p1, r1.chunks, p2, left);
    sc_case_free(&big);
    sc_case_free(&sm);
    gs_client_shm_free(&one);
    gs_client_shm_free(&small);
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "that daemon exits 0 on SIGTERM");
}

int main(void)
{
    const char *e = getenv("GSORT_TEST_DEVICE");
    g_dev = e ? atoi(e) : 0;
    snprintf(g_devices, sizeof g_devices, "devices=%d", g_dev);
    dmn_init();
    test_pinned();
    test_pinned_ooc();
    test_refused();
    test_cpu_untouched();
    return tap_done();
}
