/* Tests of the vqsort host candidate (lib/algos/algo_vqsort.c): every dtype, both
 * orders and every key distribution of sortcheck (NaN payloads and -0.0
 * included) against the independent reference, with one thread and with
 * 2, 3 and 4 chunks merged (an odd count leaves a run over for a round),
 * at sizes around the chunk minimum; payloads and stable requests refused
 * with a reason; its parameter check; and the registry listing it. Built
 * when configure found Highway (HAVE_VQSORT), which tools/install-deps
 * installs. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

static void test_matrix(void)
{
    static const size_t sizes[] = { 1, 2, 3, 33, 1000, 131071, (1 << 18) + 3, 600001 };
    static const long threads[] = { 1, 2, 3, 4 };
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        gs_params ps;
        gs_params_clear(&ps);
        gs_params_set(&ps, "threads", threads[ti]);
        unsigned cases = 0, failed = 0;
        char first[900] = "";
        for (int t = 0; t < GS_DT_COUNT; t++)
            for (int desc = 0; desc <= 1; desc++)
                for (int d = 0; d < SC_DIST_COUNT; d++) {
                    int fl = t == GS_DT_F32 || t == GS_DT_F64;
                    if ((d == SC_FSPECIAL || d == SC_NANMIX) && !fl)
                        continue;
                    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                        /* the large sizes for random keys and float specials */
                        if (sizes[si] > 1000 && d != SC_RANDOM && d != SC_FSPECIAL &&
                            d != SC_FEW16)
                            continue;
                        sc_case c;
                        char why[512] = "";
                        gs_err err;
                        gs_err_clear(&err);
                        if (sc_case_init(&c, t, GS_PL_NONE, desc, sizes[si], d,
                                         7 + si + 31 * (unsigned)d) < 0)
                            tap_bail("sc_case_init failed");
                        int rc = gs_sort_run(&gs_algo_vqsort, NULL, &c.req, &ps, NULL, &err);
                        int ok = rc == 0 && sc_case_verify(&c, 0, why, sizeof why);
                        cases++;
                        if (!ok && !failed++)
                            snprintf(first, sizeof first, "%s %s %s n=%zu: %s",
                                     gs_dtype_name(t), desc ? "desc" : "asc", sc_dist_name(d),
                                     sizes[si], rc ? gs_strerror(err.code) : why);
                        sc_case_free(&c);
                    }
                }
        tap_ok(failed == 0, "vqsort threads=%ld: %u cases (6 dtypes x 2 orders x every "
               "distribution, n up to 600001), %u wrong%s%s", threads[ti], cases, failed,
               failed ? "; first: " : "", first);
    }
}

static void expect_refused(gs_payload pl, int stable, const char *params, const char *want)
{
    sc_case c;
    gs_err err;
    gs_params ps;
    gs_err_clear(&err);
    if (sc_case_init(&c, GS_DT_U32, pl, 0, 1000, SC_RANDOM, 3) < 0)
        tap_bail("sc_case_init failed");
    if (gs_params_parse(params, &ps, &err))
        tap_bail("params: %s", err.msg);
    c.req.shape.stable = stable;
    uint32_t before = ((uint32_t *)c.req.keys)[0];
    int rc = gs_sort_run(&gs_algo_vqsort, NULL, &c.req, &ps, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, want) &&
           ((uint32_t *)c.req.keys)[0] == before,
           "refused, input untouched: payload %s, stable %d, '%s' (%s)", gs_payload_name(pl),
           stable, params, err.msg);
    sc_case_free(&c);
}

int main(void)
{
    const gs_algo *a = gs_algo_find("vqsort");
    tap_ok(a == &gs_algo_vqsort && !a->stable && !a->uses_device && a->nparams == 1,
           "the registry lists vqsort: unstable, on the host, one parameter (threads)");
    expect_refused(GS_PL_U32, 0, "threads=2", "keys alone");
    expect_refused(GS_PL_IDX64, 0, "", "keys alone");
    expect_refused(GS_PL_NONE, 1, "", "stab");
    expect_refused(GS_PL_NONE, 0, "threads=0", "threads=0 out of range");
    expect_refused(GS_PL_NONE, 0, "threads=2,radix_bits=8", "unknown parameter 'radix_bits'");
    gs_params d;
    gs_err err;
    gs_err_clear(&err);
    a->defaults(NULL, &d);
    tap_ok(d.count == 1 && gs_params_get(&d, "threads", 0) >= 1 &&
           a->check(NULL, NULL, &d, &err) == 0,
           "defaults: threads=%ld, accepted by check", gs_params_get(&d, "threads", 0));
    /* a key width without a Highway entry point here (a dtype value
     * outside the table stands for one) is declined by check, not sorted
     * as 32 or 64 bits */
    gs_sort_req odd = { .shape = { .dtype = GS_DT_COUNT, .payload = GS_PL_NONE }, .n = 1 };
    gs_err_clear(&err);
    tap_ok(a->check(NULL, &odd, &d, &err) == GS_EUNSUPPORTED && strstr(err.msg, "32- and 64-bit"),
           "a key of another width is declined: %s", err.msg);
    test_matrix();
    return tap_done();
}
