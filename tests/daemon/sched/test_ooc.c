/* Out-of-core sorts through the daemon (issue 20): a gsortd whose device
 * memory is capped small (device_mem_cap) sorts a request larger than the
 * cap in pieces on the device and merges them on the host. The whole
 * tests/support/sortcheck matrix (every dtype x payload x order, ties and float
 * specials with distinct NaN patterns) goes through the device radix sort
 * cut into 2 to 9 pieces, checked exactly against the reference (radix is
 * stable, and so must the merge be); a few through mergepath; the reply
 * must say how many pieces and time the merge; a request that fits is not
 * cut; equal rows go in pieces of whole rows, and segments in pieces of
 * whole segments (bitonic and radix), none merged, and a row or segment
 * longer than the cap is refused. All of it three times: pieces merged on the host (PoCL's own
 * route), and the GPU's route (a second pass through the device) with one
 * and with two pieces on the device at once. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

/* With the cap at 1280K a radix sort of 60000 u32 keys needs two pieces
 * (its estimate counts 1 MiB of small buffers besides double-buffered
 * data), of 64-bit keys with 64-bit values eight or nine. */
#define CAP "device_mem_cap=1280K"
#define N 60000

/* One sort through the daemon; 1 when correct, res filled. */
static int one(gs_client *c, gs_dtype t, gs_payload p, int desc, size_t n, int dist,
               const char *algo, gs_client_result *res, char *why, size_t len)
{
    sc_case k;
    if (sc_case_init(&k, t, p, desc, n, dist, (uint64_t)(t * 50 + p * 5 + desc + dist))) {
        snprintf(why, len, "cannot build the case");
        return 0;
    }
    gs_client_sort s = { .shape = { .dtype = t, .payload = p, .descending = desc, .stable = 1 },
                         .n = n,
                         .algorithm = algo,
                         .device = -1 };
    int ok = dmn_sort_check(c, &s, &k, res, why, len);
    if (ok)
        snprintf(why, len, "ok: %s on device %d, plan %s, %u pieces, merge %.2f ms of %.2f",
                 res->algorithm, res->device, res->plan, res->chunks, res->merge_ms,
                 res->total_ms);
    sc_case_free(&k);
    return ok;
}

/* Rows in pieces of whole rows (issue 38): an argsort of `rows` rows of
 * `len` u32 keys through `algo`, each row checked against its own
 * reference; res filled. */
static int rows_one(gs_client *c, size_t rows, size_t len, const char *algo,
                    gs_client_result *res, char *why, size_t wl)
{
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .rows = rows,
                                    .stable = 1 },
                         .n = rows * len, .algorithm = algo, .device = -1 };
    int ok = dmn_rows_check(c, &s, SC_RANDOM, rows * len, res, why, wl);
    if (ok)
        snprintf(why, wl, "ok: %s on device %d, %u pieces", res->algorithm, res->device,
                 res->chunks);
    return ok;
}

/* Segments in pieces of whole segments: an argsort of the segments `off`
 * cuts (S of them) through `algo`, each checked against its own
 * reference; res filled. */
static int segs_one(gs_client *c, const uint64_t *off, size_t S, const char *algo,
                    gs_client_result *res, char *why, size_t wl)
{
    gs_client_sort q = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .stable = 1,
                                    .segments = S },
                         .n = (size_t)off[S], .offsets = off, .algorithm = algo, .device = -1 };
    int ok = dmn_rows_check(c, &q, SC_FEW16, 77, res, why, wl);
    if (ok)
        snprintf(why, wl, "ok: %s on device %d, %u pieces", res->algorithm, res->device,
                 res->chunks);
    return ok;
}

/* The whole matrix, and the cases around it, through a daemon whose
 * out-of-core sorts take `route` (GSORTD_TEST_OOC; NULL: its own choice,
 * on PoCL pieces merged on the host). */
static void matrix(const char *route)
{
    const char *label = route ? route : "auto";
    if (route)
        setenv("GSORTD_TEST_OOC", route, 1);
    else
        unsetenv("GSORTD_TEST_OOC");
    static dmn d;
    const char *const extra[] = { "-o", CAP, NULL };
    if (dmn_start(&d, "ooc", NULL, extra))
        tap_bail("gsortd with %s does not start", CAP);
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, d.sock, &err))
        tap_bail("connect: %s", err.msg);

    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int p = 0; p < GS_PL_COUNT; p++) {
            int fl = t == GS_DT_F32 || t == GS_DT_F64, ok = 1;
            unsigned most = 0;
            char why[600] = "";
            for (int desc = 0; desc < 2 && ok; desc++) {
                int dist = fl ? (desc ? SC_NANMIX : SC_FSPECIAL) : (desc ? SC_FEW16 : SC_RANDOM);
                gs_client_result res;
                ok = one(c, (gs_dtype)t, (gs_payload)p, desc, N + (size_t)(t * 7 + p), dist,
                         "radix", &res, why, sizeof why);
                if (ok && (res.chunks < 2 || res.device < 0 || !(res.merge_ms > 0))) {
                    snprintf(why, sizeof why, "not sorted out of core: %u pieces on device %d, "
                             "merge %g ms", res.chunks, res.device, res.merge_ms);
                    ok = 0;
                }
                if (res.chunks > most)
                    most = res.chunks;
            }
            tap_ok(ok, "%s: %s/%s asc and desc, out of core (up to %u pieces): %s", label,
                   gs_dtype_name((gs_dtype)t), gs_payload_name((gs_payload)p), most, why);
        }

    static const struct { gs_dtype t; gs_payload p; int desc; } mp[] = {
        { GS_DT_U64, GS_PL_U32, 1 }, { GS_DT_F32, GS_PL_IDX32, 0 },
    };
    for (size_t i = 0; i < sizeof mp / sizeof mp[0]; i++) {
        char why[600];
        gs_client_result res;
        int ok = one(c, mp[i].t, mp[i].p, mp[i].desc, N, SC_FSPECIAL, "mergepath", &res, why,
                     sizeof why);
        tap_ok(ok && res.chunks >= 2, "%s: mergepath %s/%s out of core: %s", label,
               gs_dtype_name(mp[i].t), gs_payload_name(mp[i].p), why);
    }

    char why[600];
    gs_client_result res;
    /* rows: pieces of whole rows, none merged; a row longer than the cap
     * is refused with the reason */
    int ok = rows_one(c, 24, 8000, "radix", &res, why, sizeof why);
    tap_ok(ok && res.chunks >= 2 && res.device >= 0 && !res.merge_ms,
           "%s: an argsort of 24 rows of 8000 u32 keys in pieces of whole rows, none merged "
           "(%u pieces): %s", label, res.chunks, why);
    ok = rows_one(c, 2, 160000, "radix", &res, why, sizeof why);
    tap_ok(!ok && strstr(why, "a row is not cut"), "%s: rows longer than the cap: refused, "
           "said: %s", label, why);
    /* segments: pieces of whole segments, none merged, by bitonic (every
     * segment of a piece in one launch) and by radix (one after another);
     * a segment longer than the cap refused with the reason */
    uint64_t *off = sc_random_offsets(100, 3000, 0x0cc);
    if (!off)
        tap_bail("out of memory");
    for (int i = 0; i < 2; i++) {
        const char *algo = i ? "radix" : "bitonic";
        ok = segs_one(c, off, 100, algo, &res, why, sizeof why);
        tap_ok(ok && res.chunks >= 2 && res.device >= 0 && !res.merge_ms,
               "%s: an argsort of 100 segments of 0-3000 u32 keys (%llu) by %s, in pieces of "
               "whole segments, none merged (%u pieces): %s", label,
               (unsigned long long)off[100], algo, res.chunks, why);
    }
    free(off);
    static const uint64_t big[] = { 0, 10, 160010, 160020 };
    ok = segs_one(c, big, 3, "radix", &res, why, sizeof why);
    tap_ok(!ok && strstr(why, "the longest is not cut"), "%s: a segment longer than the cap: "
           "refused, said: %s", label, why);
    ok = one(c, GS_DT_I32, GS_PL_U32, 0, 5000, SC_RANDOM, "radix", &res, why, sizeof why);
    tap_ok(ok && res.chunks == 0 && res.device >= 0,
           "%s: a request that fits the cap is sorted whole (%u pieces): %s", label, res.chunks,
           why);

    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "%s: the daemon exits 0 on SIGTERM", label);
}

int main(void)
{
    dmn_init();
    matrix(NULL);
    matrix("device:1");
    matrix("device:2");
    return tap_done();
}
