/* Segments (lib/sort/gs_sort.c, sort_rows; issue 38): a request of S
 * segments of any lengths, given by S + 1 offsets, sorts each segment on its
 * own, for the host sort (segments side by side on the host pool:
 * host_rows.c), vqsort, a device algorithm (radix on the test device,
 * segments one after another) and bitonic (every segment in one launch; a
 * segment longer than a work-group holds refused; by size class, a launch
 * each, where a class saves enough work): every dtype, payload and order,
 * each segment against its own reference (sortcheck's: stable, NaN patterns kept), argsort indices
 * counted from 0 within the segment; empty and one-key segments, a single
 * segment, many tiny ones, a large one beside tiny ones; offsets that do
 * not start at 0, decrease or do not end at n refused before anything is
 * touched, as are segments with rows or top-k. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

/* S segments of random lengths in [0, maxlen] (xorshift from seed). */
static uint64_t *random_offsets(size_t S, unsigned maxlen, uint64_t seed)
{
    uint64_t *o = sc_random_offsets(S, maxlen, seed);
    if (!o)
        tap_bail("out of memory");
    return o;
}

/* A request over k[12] that must be refused with `code` and a message
 * containing `msg`, the keys untouched. */
static void refused(const gs_sort_req *r, int code, const char *msg, const char *what)
{
    uint32_t *k = r->keys;
    uint32_t before[12];
    memcpy(before, k, sizeof before);
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_host, NULL, r, NULL, NULL, &err);
    tap_ok(rc == code && strstr(err.msg, msg) && !memcmp(before, k, sizeof before),
           "%s: refused, keys untouched (%d: %s)", what, rc, err.msg);
}

int main(void)
{
    gs_sort_ctx host = { 0 };
    char why[512] = "";
    /* unequal lengths: empty ones first, between and last, one-key ones, long ones */
    static const uint64_t mixed[] = { 0, 0, 1, 1, 18, 18, 19, 300, 300, 1000, 1001, 1001 };
    const size_t nmixed = sizeof mixed / sizeof mixed[0] - 1;
    sc_segs_matrix(&gs_algo_host, &host, NULL, mixed, nmixed, 0, "host");
    sc_segs_matrix(&gs_algo_vqsort, &host, NULL, mixed, nmixed, 1, "vqsort");

    static const uint64_t one[] = { 0, 5000 };
    tap_ok(sc_segs_check(&gs_algo_host, &host, NULL, GS_DT_U32, GS_PL_U32, 0, one, 1, 0, why,
                         sizeof why), "host: a single segment of 5000 keys (%s)", why);
    uint64_t *tiny = random_offsets(3000, 3, 0x9e3779b97f4a7c15ull);
    tap_ok(sc_segs_check(&gs_algo_host, &host, NULL, GS_DT_F64, GS_PL_IDX32, 1, tiny, 3000, 1,
                         why, sizeof why), "host: 3000 segments of 0-3 keys, %llu in all (%s)",
           (unsigned long long)tiny[3000], why);
    tap_ok(sc_segs_check(&gs_algo_host, &host, NULL, GS_DT_I32, GS_PL_IDX64, 0, tiny, 3000, 2,
                         why, sizeof why), "host: the same offsets, i32 argsort (%s)", why);
    free(tiny);
    static const uint64_t lopsided[] = { 0, 3, 3, 70003, 70004, 70040 };
    tap_ok(sc_segs_check(&gs_algo_host, &host, NULL, GS_DT_I64, GS_PL_U64, 1, lopsided, 5, 1,
                         why, sizeof why), "host: 70000 keys beside segments of 0-36 (%s)", why);

    /* segments with no keys at all: nothing to do, and fine */
    uint32_t k[12] = { 5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6 };
    static const uint64_t none[] = { 0, 0, 0, 0 };
    gs_err err;
    gs_err_clear(&err);
    gs_sort_req e = { .shape = { .dtype = GS_DT_U32, .segments = 3 }, .n = 0, .keys = k,
                      .offsets = none };
    tap_ok(gs_sort_run(&gs_algo_host, &host, &e, NULL, NULL, &err) == 0 && k[0] == 5,
           "3 segments of no keys: sorted, nothing touched (%s)", err.msg);

    /* bad offsets: refused before anything is written */
    static const uint64_t from1[] = { 1, 5, 12 }, down[] = { 0, 7, 6, 12 },
                          short_[] = { 0, 5, 11 }, past[] = { 0, 5, 13 };
    gs_sort_req b = { .shape = { .dtype = GS_DT_U32, .segments = 2 }, .n = 12, .keys = k,
                      .offsets = from1 };
    refused(&b, GS_EINVAL, "must start at 0, not 1", "offsets from 1");
    b.offsets = down;
    b.shape.segments = 3;
    refused(&b, GS_EINVAL, "offsets[2] = 6 after offsets[1] = 7", "decreasing offsets");
    b.offsets = short_;
    b.shape.segments = 2;
    refused(&b, GS_EINVAL, "offsets[2] = 11) must be n = 12", "offsets ending before n");
    b.offsets = past;
    refused(&b, GS_EINVAL, "offsets[2] = 13) must be n = 12", "offsets ending past n");
    b.offsets = NULL;
    refused(&b, GS_EINVAL, "2 segments without offsets", "no offsets");
    static const uint64_t good[] = { 0, 5, 12 };
    b.offsets = good;
    b.shape.rows = 2;
    refused(&b, GS_EINVAL, "segments and rows together", "segments with rows");
    b.shape.rows = 0;
    b.shape.topk = 1;
    b.shape.k = 1;
    refused(&b, GS_EUNSUPPORTED, "top-k of segments", "segments with top-k");

    /* two segments of 5 and 7: each sorted, none mixed with the other; an
     * argsort's indices count from 0 in each */
    static const uint32_t want[12] = { 1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 10, 11 };
    uint32_t idx[12];
    gs_sort_req two = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .stable = 1,
                                   .segments = 2 },
                        .n = 12, .keys = k, .values = idx, .offsets = good };
    gs_err_clear(&err);
    int rc = gs_sort_run(&gs_algo_host, &host, &two, NULL, NULL, &err);
    static const uint32_t want_idx[12] = { 4, 3, 2, 1, 0, 0, 6, 5, 4, 3, 2, 1 };
    tap_ok(rc == 0 && !memcmp(k, want, sizeof want) && !memcmp(idx, want_idx, sizeof idx),
           "segments of 5 and 7: each sorted within itself, indices from 0 in each (%s)",
           err.msg);

    /* a device algorithm: segments one after another on the test device */
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_dev *d = sc_test_device(&devs, &ndev, "test_segments");
    gs_sort_ctx dctx = { .dev = d };
    static const uint64_t dev_off[] = { 0, 0, 1, 200, 200, 900 };
    sc_segs_matrix(&gs_algo_radix, &dctx, NULL, dev_off, 5, 0, "radix");
    /* bitonic: every segment in one launch, padded to the longest's power
     * of two: several to a group (tile 1024, segments of up to 100 keys),
     * and one a group */
    sc_segs_matrix(&gs_algo_bitonic, &dctx, NULL, dev_off, 5, 0, "bitonic");
    uint64_t *many = random_offsets(300, 100, 0x5bd1e995ull);
    sc_segs_matrix(&gs_algo_bitonic, &dctx, NULL, many, 300, 0, "bitonic, 300 segments");
    free(many);
    /* bitonic by size class: 400 segments, 0-3 keys and 40-60, beside one
     * of 700; with class_work 4096 three launches (up to 1024, 64 and 4
     * keys: the 1- and 2-key ones save too little apart from the 3-key
     * ones), with a CPU device's default one */
    {
        enum { S = 400 };
        uint64_t *o = malloc((S + 1) * sizeof *o);
        uint32_t *ck = malloc(20000 * sizeof *ck);
        if (!o || !ck)
            tap_bail("out of memory");
        o[0] = 0;
        for (size_t g = 0; g < S; g++)
            o[g + 1] = o[g] + (g == 7 ? 700 : g % 3 == 0 ? 40 + g % 21 : g % 4);
        gs_params cp;
        gs_params_clear(&cp);
        gs_params_set(&cp, "class_work", 4096);
        sc_segs_matrix(&gs_algo_bitonic, &dctx, &cp, o, S, 0, "bitonic by size class");
        for (int dflt = 0; dflt < 2; dflt++) {
            for (size_t i = 0; i < o[S]; i++)
                ck[i] = (uint32_t)((i * 2654435761u) >> 7);
            gs_sort_req q = { .shape = { .dtype = GS_DT_U32, .segments = S }, .n = o[S],
                              .keys = ck, .offsets = o };
            gs_sort_stats st;
            gs_err_clear(&err);
            rc = gs_sort_run(&gs_algo_bitonic, &dctx, &q, dflt ? NULL : &cp, &st, &err);
            int sorted = rc == 0;
            for (size_t g = 0; g < S && sorted; g++)
                for (uint64_t i = o[g] + 1; i < o[g + 1]; i++)
                    sorted &= ck[i - 1] <= ck[i];
            tap_ok(sorted && st.passes == (dflt ? 1u : 3u), "bitonic, %s: %u launch(es), "
                   "every segment sorted (%d: %s)", dflt ? "the defaults" : "class_work=4096",
                   st.passes, rc, err.msg);
        }
        free(o);
        free(ck);
    }
    /* a segment longer than a group holds: refused, saying so, keys untouched */
    {
        enum { LONG = 40000 };
        uint32_t *lk = malloc(LONG * sizeof *lk), *copy = malloc(LONG * sizeof *copy);
        if (!lk || !copy)
            tap_bail("out of memory");
        for (size_t i = 0; i < LONG; i++)
            lk[i] = copy[i] = (uint32_t)(LONG - i);
        const uint64_t lo[] = { 0, 5, LONG };
        gs_sort_req lr = { .shape = { .dtype = GS_DT_U32, .segments = 2 }, .n = LONG,
                           .keys = lk, .offsets = lo };
        gs_err_clear(&err);
        rc = gs_sort_run(&gs_algo_bitonic, &dctx, &lr, NULL, NULL, &err);
        tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "a segment of 39995 keys") &&
               !memcmp(lk, copy, LONG * sizeof *lk),
               "bitonic: a segment of 39995 keys refused, keys untouched (%d: %s)", rc, err.msg);
        free(lk);
        free(copy);
    }
    gs_dev_free_list(devs, ndev);
    return tap_done();
}
