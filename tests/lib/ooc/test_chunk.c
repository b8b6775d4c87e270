/* Tests of the out-of-core device route (lib/ooc/gs_ooc_dev.c: pieces sorted
 * on the device, cut by a co-rank search into segments sorted there
 * again), called through gs_ooc_sort on a PoCL device with the route
 * forced as on a GPU and copies made as a GPU makes them (no zero-copy).
 * Every dtype and payload kind with both orders, ties across the pieces
 * (equal keys, few distinct ones: the co-rank must hand them out in piece
 * order for the result to stay stable), float specials and distinct NaN
 * patterns, one and two pieces on the device at once (two halve the
 * pieces), each checked exactly against the stable reference. Then a fault
 * injected at launches across a whole argsort, through both routes: every
 * failure, in either pass, must be rescued on the host with the exact
 * answer. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "gs_ooc.h"
#include "gs_clrun.h"
#include "gs_dev.h"
#include "gs_log.h"
#include "gs_pcopy.h"
#include "gs_algos.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

#define N 20011
#define CHUNK 3000

/* gs_copy_stream, the route's host copies: every length up to 300 bytes
 * from and to every alignment mod 16, and 1 MiB + 5, against memcmp; the
 * bytes around the destination stay as they were. */
static void test_copy_stream(void)
{
    enum { BIG = (1 << 20) + 5 };
    static unsigned char src[BIG + 64], dst[BIG + 64], want[BIG + 64];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    int bad = 0, cases = 0;
    for (size_t so = 0; so < 16 && !bad; so++)
        for (size_t dof = 0; dof < 16 && !bad; dof++)
            for (size_t n = 0; n <= 300 && !bad; n++) {
                memset(dst, 0xa5, 400);
                memcpy(want, dst, 400);
                memcpy(want + dof, src + so, n);
                gs_copy_stream(dst + dof, src + so, n);
                bad = memcmp(dst, want, 400) != 0;
                cases++;
            }
    memset(dst, 0, sizeof dst);
    gs_copy_stream(dst + 3, src + 9, BIG);
    bad = bad || memcmp(dst + 3, src + 9, BIG) != 0 || dst[2] || dst[BIG + 3];
    tap_ok(!bad, "gs_copy_stream: %d small copies and one of %d bytes", cases, BIG);
}

int main(void)
{
    test_copy_stream();
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *dev = sc_test_device(&devs, &ndev, "chunk");
    gs_log_set_level(GS_LOG_ERROR);   /* the rescue's warning is expected */
    gs_clrun_no_adopt(1);
    gs_sort_ctx ctx = { .dev = dev };
    gs_params p;
    gs_algo_radix.defaults(&dev->info, &p);

    static const int idist[] = { SC_RANDOM, SC_EQUAL, SC_FEW16, SC_REVERSED };
    static const int fdist[] = { SC_FSPECIAL, SC_NANMIX, SC_EQUAL, SC_SORTED };
    for (unsigned lanes = 1; lanes <= 2; lanes++) {
        gs_ooc_force(GS_OOC_DEVICE, lanes);
        size_t chunk = (CHUNK + lanes - 1) / lanes, want = (N + chunk - 1) / chunk;
        for (int t = 0; t < GS_DT_COUNT; t++)
            for (int pl = 0; pl < GS_PL_COUNT; pl++) {
                int fl = t == GS_DT_F32 || t == GS_DT_F64, ok = 1, cases = 0;
                char why[600] = "";
                for (int desc = 0; desc < 2 && ok; desc++)
                    for (int d = 0; d < 4 && ok; d++) {
                        sc_case c;
                        int dist = fl ? fdist[d] : idist[d];
                        if (sc_case_init(&c, (gs_dtype)t, (gs_payload)pl, desc, N, dist,
                                         (uint64_t)(t * 97 + pl * 13 + desc * 5 + d)))
                            tap_bail("out of memory");
                        gs_sort_stats st;
                        gs_err e;
                        gs_err_clear(&e);
                        int rc = gs_ooc_sort(&gs_algo_radix, &ctx, &c.req, &p, CHUNK, &st, &e);
                        if (rc)
                            snprintf(why, sizeof why, "%s: %.500s", sc_dist_name(dist), e.msg);
                        else if (st.chunks != want)
                            snprintf(why, sizeof why, "%s: %u pieces, want %zu",
                                     sc_dist_name(dist), st.chunks, want);
                        else if (!sc_case_verify(&c, 1, why, sizeof why))
                            rc = -1;
                        ok = rc == 0 && st.chunks == want;
                        cases++;
                        sc_case_free(&c);
                    }
                tap_ok(ok, "%u lane(s): %s/%s, %d cases of %d keys in %zu pieces%s%s", lanes,
                       gs_dtype_name((gs_dtype)t), gs_payload_name((gs_payload)pl), cases, N,
                       want, ok ? "" : ": ", why);
            }
    }

    /* The fault sweep: count the launches of a whole argsort, then fail
     * every launch from the at-th on, for at across that count. A failure
     * in the first pass (at 1 certainly) leaves pieces unsorted, which the
     * host sorts before merging them; one in the second pass puts the
     * sorted pieces back and merges them: either way the exact stable
     * answer, indices included. Both routes, the device's and the host
     * merge's. */
    sc_case c;
    if (sc_case_init(&c, GS_DT_U32, GS_PL_IDX32, 0, N, SC_FEW16, 7))
        tap_bail("out of memory");
    for (int route = GS_OOC_HOST; route <= GS_OOC_DEVICE; route++) {
        const char *rn = route == GS_OOC_HOST ? "host merge" : "device";
        gs_ooc_force(route, 2);
        gs_sort_stats st;
        gs_err e;
        gs_err_clear(&e);
        sc_case_reset(&c);
        gs_clrun_inject_fault(LONG_MAX, CL_OUT_OF_RESOURCES);
        int rc = gs_ooc_sort(&gs_algo_radix, &ctx, &c.req, &p, CHUNK, &st, &e);
        long total = gs_clrun_launch_count();
        tap_ok(rc == 0 && total > 8, "%s route: a whole sort launches %ld kernels", rn, total);
        int fired = 0, bad = 0, runs = 0;
        char why[600] = "";
        for (long at = 1; at <= total && !bad; at += total / 12 > 0 ? total / 12 : 1) {
            sc_case_reset(&c);
            gs_err_clear(&e);
            gs_clrun_inject_fault(at, CL_OUT_OF_RESOURCES);
            rc = gs_ooc_sort(&gs_algo_radix, &ctx, &c.req, &p, CHUNK, &st, &e);
            fired += gs_clrun_launch_count() >= at;
            gs_clrun_inject_fault(0, 0);
            runs++;
            if (rc) {
                snprintf(why, sizeof why, "at %ld: touched %d: %.500s", at, st.output_touched,
                         e.msg);
                bad = 1;
            } else if (!sc_case_verify(&c, 1, why, sizeof why)) {
                bad = 1;
            }
        }
        tap_ok(!bad && fired == runs, "%s route: a fault at %d points across the sort, each "
               "rescued on the host with the exact answer%s%s", rn, runs, bad ? ": " : "", why);
    }
    sc_case_free(&c);
    gs_ooc_force(GS_OOC_AUTO, 0);
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
