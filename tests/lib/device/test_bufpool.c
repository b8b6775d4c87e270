/* The per-device buffer pool (lib/device/gs_bufpool.c) on the first OpenCL device
 * (PoCL in CI): a released buffer is taken again for the same size or one
 * it exceeds by at most an eighth, never for a larger or much smaller one, and by
 * one taker only; the share caps what the pool holds (the oldest go
 * first) and 0 keeps nothing; trimming releases what waited too long; a
 * device algorithm's buffers come back to the pool after each sort and a
 * second sort of the same size reuses them, with the right result although
 * they hold the first sort's data; closing the device frees the pool. And
 * the pinned staging of copies to and from unpinned memory (lib/device/gs_stage.c),
 * forced on this device with small chunks: radix, mergepath and shellsort
 * give the right result through it at sizes that are and are not a whole
 * number of chunks, and straight (host_pinned) as before. */
#include "config.h"
#include "gs_algos.h"
#include "gs_bufpool.h"
#include "gs_clrun.h"
#include "gs_stage.h"
#include "sortcheck.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cl_mem make(gs_dev *dev, size_t bytes)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (rc != CL_SUCCESS)
        tap_bail("clCreateBuffer(%zu): %s", bytes, gs_cl_errname(rc));
    return m;
}

int main(void)
{
    gs_dev *devs;
    size_t ndev;
    gs_dev *dev = sc_test_device(&devs, &ndev, "bufpool");
    gs_err err;
    if (gs_dev_open(dev, &err))
        tap_bail("open: %s", err.msg);
    gs_bufpool_set_share(25);
    gs_bufpool_stats st;

    size_t sz = 0;
    tap_ok(gs_bufpool_take(dev, 4096, &sz) == NULL, "an empty pool gives nothing");
    cl_mem a = make(dev, 1 << 20);
    gs_bufpool_put(dev, a, 1 << 20);
    gs_bufpool_stats_get(dev, &st);
    tap_ok(st.buffers == 1 && st.bytes == (1u << 20), "a released buffer is kept (%zu, %llu)",
           st.buffers, (unsigned long long)st.bytes);
    tap_ok(gs_bufpool_take(dev, (1 << 20) + 1, &sz) == NULL, "not for a larger size");
    tap_ok(gs_bufpool_take(dev, (1 << 19), &sz) == NULL, "not for half its size");
    cl_mem b = gs_bufpool_take(dev, (1 << 20) - (1 << 16), &sz);
    tap_ok(b == a && sz == (1u << 20), "taken for a size it exceeds by at most an eighth, its real "
           "size reported");
    tap_ok(gs_bufpool_take(dev, (1 << 20) - (1 << 16), &sz) == NULL, "and only once");
    gs_bufpool_put(dev, b, sz);

    /* The share caps the pool: with 1 % of a device of G bytes, buffers of
     * G/150 fit once, not twice. */
    gs_bufpool_set_share(1);
    size_t big = (size_t)(dev->info.global_mem / 150);
    if (big > dev->info.max_alloc)
        big = (size_t)dev->info.max_alloc;
    gs_bufpool_trim(dev, 0);
    gs_bufpool_put(dev, make(dev, big), big);
    gs_bufpool_put(dev, make(dev, big), big);
    gs_bufpool_stats_get(dev, &st);
    tap_ok(st.buffers == 1 && st.bytes == big, "a 1 %% share holds one buffer of 1/150 of the "
           "device, not two (%zu)", st.buffers);
    gs_bufpool_set_share(0);
    gs_bufpool_trim(dev, 0);
    gs_bufpool_put(dev, make(dev, 4096), 4096);
    gs_bufpool_stats_get(dev, &st);
    tap_ok(st.buffers == 0, "share 0 keeps nothing");

    /* Trimming by age. */
    gs_bufpool_set_share(25);
    gs_bufpool_put(dev, make(dev, 8192), 8192);
    usleep(50000);
    gs_bufpool_put(dev, make(dev, 16384), 16384);
    gs_bufpool_trim(dev, 30);
    gs_bufpool_stats_get(dev, &st);
    tap_ok(st.buffers == 1 && st.bytes == 16384, "trim(30 ms) releases the buffer that waited "
           "50 ms and keeps the fresh one");
    gs_bufpool_trim(dev, 0);

    /* A device algorithm twice at one size: the second sort's buffers come
     * from the pool (and hold the first sort's data), the result is right. */
    const gs_algo *radix = gs_algo_find("radix");
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    radix->defaults(&dev->info, &p);
    sc_fit_set(radix, &ctx, &p);
    int ok = 1;
    unsigned long hits0 = 0;
    for (int round = 0; round < 2; round++) {
        sc_case c;
        if (sc_case_init(&c, GS_DT_U64, GS_PL_U32, round, 100003, 0, 7 + (uint64_t)round))
            tap_bail("out of memory");
        gs_sort_stats ss;
        memset(&ss, 0, sizeof ss);
        char why[256] = "";
        int rc = gs_sort_run(radix, &ctx, &c.req, &p, &ss, &err);
        ok &= rc == 0 && sc_case_verify(&c, 1, why, sizeof why);
        if (rc)
            tap_diag("radix: %s", err.msg);
        else if (why[0])
            tap_diag("%s", why);
        sc_case_free(&c);
        gs_bufpool_stats_get(dev, &st);
        if (round == 0)
            hits0 = st.hits;
    }
    tap_ok(ok && st.buffers > 0 && st.hits > hits0, "two radix sorts of one size: both right, "
           "the second took %lu pooled buffers", st.hits - hits0);
    /* Zero copy on a CPU device: the caller's arrays are the buffers. */
    if (dev->info.type & CL_DEVICE_TYPE_CPU) {
        sc_case c;
        if (sc_case_init(&c, GS_DT_U32, GS_PL_IDX32, 0, 200003, 0, 77))
            tap_bail("out of memory");
        gs_sort_stats ss;
        memset(&ss, 0, sizeof ss);
        char why[256] = "";
        int rc = gs_sort_run(radix, &ctx, &c.req, &p, &ss, &err);
        tap_ok(rc == 0 && sc_case_verify(&c, 1, why, sizeof why) && ss.upload_ms == 0 &&
               ss.download_ms == 0 && ss.passes % 2 == 0,
               "a CPU device sorts the caller's u32 keys and writes its argsort indices where "
               "they lie: upload %.3f ms, download %.3f ms (%u passes) %s", ss.upload_ms,
               ss.download_ms, ss.passes, rc ? err.msg : why);
        /* A failure before any kernel ran leaves the input intact (the
         * daemon then falls back to the host sort); a later one says the
         * arrays were touched. */
        sc_case_reset(&c);
        gs_clrun_inject_fault(1, CL_OUT_OF_RESOURCES);
        memset(&ss, 0, sizeof ss);
        rc = gs_sort_run(radix, &ctx, &c.req, &p, &ss, &err);
        int intact = !memcmp(c.req.keys, c.in_keys, c.req.n * 4);
        gs_clrun_inject_fault(3, CL_OUT_OF_RESOURCES);
        gs_sort_stats s3;
        memset(&s3, 0, sizeof s3);
        int rc3 = gs_sort_run(radix, &ctx, &c.req, &p, &s3, &err);
        gs_clrun_inject_fault(0, 0);
        tap_ok(rc < 0 && !ss.output_touched && intact && rc3 < 0 && s3.output_touched,
               "zero copy: a launch failing first leaves the keys intact and untouched; one "
               "failing third reports them touched");
        sc_case_free(&c);
    } else {
        tap_ok(1, "not a CPU device: no zero-copy input to check here");
        tap_ok(1, "not a CPU device: no zero-copy input to check here");
    }

    /* Staged copies, many chunks, odd sizes (as on a GPU: no zero copy). */
    gs_clrun_no_adopt(1);
    gs_stage_force(1, 12288);
    static const char *const algos[] = { "radix", "mergepath", "shellsort" };
    static const size_t sizes[] = { 3000, 6144, 100003 };
    for (size_t ai = 0; ai < 3; ai++) {
        const gs_algo *alg = gs_algo_find(algos[ai]);
        gs_params ap;
        alg->defaults(&dev->info, &ap);
        if (gs_params_has(&ap, "elems_per_thread"))    /* shellsort's fit the device */
            sc_fit_set(alg, &ctx, &ap);
        ok = 1;
        double up = 0, down = 0;
        unsigned long staged = 0;
        for (size_t si = 0; si < 3; si++)
            for (int pinned = 0; pinned < 2; pinned++) {
                unsigned long t0 = gs_stage_transfers();
                sc_case c;
                if (sc_case_init(&c, si ? GS_DT_F64 : GS_DT_U32, si == 1 ? GS_PL_U32 : GS_PL_NONE,
                                 (int)(si & 1), sizes[si], 0, 50 + si))
                    tap_bail("out of memory");
                gs_sort_ctx sctx = { .dev = dev, .host_pinned = pinned };
                gs_sort_stats ss;
                memset(&ss, 0, sizeof ss);
                char why[256] = "";
                int rc = gs_sort_run(alg, &sctx, &c.req, &ap, &ss, &err);
                int good = rc == 0 && sc_case_verify(&c, alg->stable, why, sizeof why);
                if (!good)
                    tap_diag("%s n=%zu %s: %s", algos[ai], sizes[si], pinned ? "straight" :
                             "staged", rc ? err.msg : why);
                ok &= good;
                if (!pinned) {
                    up += ss.upload_ms;
                    down += ss.download_ms;
                    staged += gs_stage_transfers() - t0 >= 2;
                } else if (gs_stage_transfers() != t0) {
                    ok = 0;
                    tap_diag("%s n=%zu: a pinned request was staged", algos[ai], sizes[si]);
                }
                sc_case_free(&c);
            }
        tap_ok(ok && up > 0 && down > 0 && staged == 3, "%s through 12 KiB pinned staging "
               "chunks (3000 u32, 6144 f64+u32, 100003 f64; %lu of 3 staged both ways) and "
               "straight when pinned: all right", algos[ai], staged);
    }
    gs_stage_force(0, 0);

    /* The one wait's deferred download (gs_clrun_defer): enqueued, it writes
     * the host array only when the queue has finished, and says so after */
    {
        gs_clrun r;
        gs_clrun_init(&r, dev, "test");
        cl_mem m = NULL;
        uint32_t src[64], dst[64];
        for (int i = 0; i < 64; i++) {
            src[i] = (uint32_t)i * 2654435761u;
            dst[i] = 0;
        }
        int rc = gs_clrun_buffer(&r, sizeof src, "test", &m, &err);
        rc = rc ? rc : gs_clrun_upload(&r, m, src, sizeof src, &err);
        int deferred = !rc && gs_clrun_defer(&r);
        int before = gs_clrun_host_written(&r);
        rc = rc ? rc : gs_clrun_output(&r, dst, m, sizeof dst, &err);
        int queued = r.ndnev;
        cl_int crc = clFinish(r.q);
        int after = gs_clrun_host_written(&r);
        gs_clrun_settle(&r);
        tap_ok(rc == 0 && crc == CL_SUCCESS && deferred == (int)dev->info.profiling &&
               before == 0 && after == 1 && (!deferred || queued == 1) &&
               !memcmp(src, dst, sizeof src) && (!deferred || r.download_ms > 0),
               "a deferred download: nothing written before it is enqueued (%d), written "
               "once the queue has finished (%d), timed from its event (%.4f ms), exact",
               before, after, r.download_ms);
        gs_clrun_release(&r);
    }
    gs_clrun_no_adopt(0);

    gs_dev_close(dev);
    tap_ok(dev->bufpool == NULL && dev->stage == NULL, "closing the device frees its pool "
           "and its staging buffers");
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
