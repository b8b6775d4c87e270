/* Rows and top-k requests routed by their own plan (issue 38, the
 * shape_plan table; daemon/sched/gs_route.c), through a real daemon on a
 * PoCL device, where the rules without a plan send both to the host:
 * - the plan's device routes (bitonic for rows of 64, the select for
 *   top-k) are built before they serve, and then serve (route "tuned",
 *   device 0), every answer exact;
 * - rows of 1024 follow their own row, a host algorithm (vqsort where
 *   this gsortd has it), on the host;
 * - segments of a mean 64 keys follow the segments plan's bitonic (not
 *   built at start: its program depends on each request's longest
 *   segment) on device 0;
 * - 64-bit keys, which have no rows of their class, and a request of the
 *   32-bit rows that names the device, follow the rules as before. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_db.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

#define N (1u << 14)

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t mix(uint64_t i)
{
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    return z ^ (z >> 27);
}

/* Rows of len u32 keys (N in all) through c, naming `device` (-1: none);
 * 1 when every row came back as its sorted input. */
static int rows32(gs_client *c, size_t len, int device, gs_client_result *res, char *why,
                  size_t wl)
{
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32, .rows = N / len }, .n = N,
                         .device = device };
    int ok = dmn_rows_check(c, &s, SC_RANDOM, len, res, why, wl);
    if (ok)
        why[0] = '\0';
    return ok;
}

/* N keys in segments of 0 to 2 * mean keys (dtype t: u32 or u64) through
 * c, naming no device; 1 when every segment came back as its sorted
 * input. */
static int segs_check(gs_client *c, gs_dtype t, unsigned mean, gs_client_result *res, char *why,
                      size_t wl)
{
    uint64_t *off = sc_random_offsets(N, 2 * mean, 0x5e65);
    if (!off)
        tap_bail("out of memory");
    size_t S = 0;
    while (S < N && off[S + 1] < N)
        S++;
    off[++S] = N;               /* the last takes the rest */
    gs_client_sort q = { .shape = { .dtype = t, .segments = S }, .n = N, .offsets = off,
                         .device = -1 };
    int ok = dmn_rows_check(c, &q, SC_RANDOM, 38, res, why, wl);
    if (ok)
        why[0] = '\0';
    free(off);
    return ok;
}

int main(void)
{
    dmn_init();
    static dmn d;
    char db[600], cache[600], cache_opt[700];
    snprintf(db, sizeof db, "%s/shape.db", dmn_tmpdir());
    snprintf(cache, sizeof cache, "%s/shape-cache", dmn_tmpdir());
    snprintf(cache_opt, sizeof cache_opt, "cache_dir=%s", cache);
    mkdir(cache, 0700);
    const char *host_algo = gs_algo_find("vqsort") ? "vqsort" : "host";
    {
        gs_db *h = NULL;
        long long id;
        dmn_db_first_device(db, &h, &id);
        dmn_db_shape_row(h, id, "rows", "none", 14, 6, "bitonic");
        dmn_db_shape_row(h, id, "rows", "none", 14, 10, host_algo);
        dmn_db_shape_row(h, id, "topk", "idx32", 14, 4, "select");
        dmn_db_shape_row(h, id, "segs", "none", 14, 6, "bitonic");
        gs_db_close(h);
    }
    const char *const extra[] = { "--log-level", "info", "-o", cache_opt, "-o", "tune_missing=no",
                                  NULL };
    if (dmn_start(&d, "shape", NULL, extra))
        tap_bail("gsortd does not start");
    int built = dmn_wait_log(&d, "ready: 2 planned route(s) built", 1, 300 * dmn_slowdown());
    tap_ok(built == 1 && dmn_log_contains(&d, "building the programs of 2 planned route(s)"),
           "the plan's two device routes (bitonic's rows, the select) are built before they "
           "serve");
    gs_client *c = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_client_connect(&c, d.sock, &e))
        tap_bail("connect: %s", e.msg);

    gs_client_result res;
    char why[600];
    int ok = rows32(c, 64, -1, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "tuned") && !strcmp(res.algorithm, "bitonic") &&
           res.device == 0, "2^14 keys in rows of 64: the rows plan's bitonic on device 0, "
           "exact (plan '%s', %s on %d) %s", res.plan, res.algorithm, res.device, why);
    ok = rows32(c, 1024, -1, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "tuned") && !strcmp(res.algorithm, host_algo) &&
           res.device == -1, "rows of 1024: their own row, %s on the host, exact (plan '%s', "
           "%s on %d) %s", host_algo, res.plan, res.algorithm, res.device, why);
    ok = rows32(c, 64, 0, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "tuned"), "rows that name the device follow the rules, not "
           "the plan (plan '%s', %s) %s", res.plan, res.algorithm, why);

    /* top-k: the 16 smallest of 2^14 i32 keys with their indices */
    {
        static int32_t k[N], orig[N], ref[N];
        static uint32_t idx[N];
        for (size_t i = 0; i < N; i++)
            k[i] = orig[i] = ref[i] = (int32_t)mix(i * 7);
        gs_client_sort s = { .shape = { .dtype = GS_DT_I32, .payload = GS_PL_IDX32, .topk = 1,
                                        .k = 16 },
                             .n = N, .keys = k, .values = idx, .device = -1 };
        gs_err_clear(&e);
        int rc = gs_client_sort_run(c, &s, &res, &e);
        int good = rc == 0;
        if (good) {
            /* the reference: the 16 smallest, by the keys' order */
            for (size_t i = 0; i < N; i++)
                ref[i] = (int32_t)((uint32_t)orig[i] ^ 0x80000000u);
            qsort(ref, N, 4, cmp_u32);
            for (size_t i = 0; i < 16 && good; i++)
                good = k[i] == (int32_t)((uint32_t)ref[i] ^ 0x80000000u) && idx[i] < N &&
                       orig[idx[i]] == k[i];
        }
        tap_ok(good && !strcmp(res.plan, "tuned") && !strcmp(res.algorithm, "select") &&
               res.device == 0, "top-16 of 2^14 i32 keys: the top-k plan's select on device 0, "
               "exact (plan '%s', %s on %d)%s%s", rc ? "?" : res.plan, rc ? "?" : res.algorithm,
               rc ? -2 : res.device, rc ? ": " : "", rc ? e.msg : "");
    }

    /* segments: their own plan's row, bitonic on the device */
    ok = segs_check(c, GS_DT_U32, 64, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "tuned") && !strcmp(res.algorithm, "bitonic") &&
           res.device == 0, "2^14 u32 keys in segments of 0-128: the segments plan's bitonic on "
           "device 0, exact (plan '%s', %s on %d) %s", res.plan, res.algorithm, res.device, why);
    ok = segs_check(c, GS_DT_U64, 64, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "tuned") && res.device == -1,
           "u64 segments: no rows of their key class, the host sort, exact (plan '%s', %s) %s",
           res.plan, res.algorithm, why);

    /* 64-bit keys: no rows of their class; the rules (the host, on a CPU device) */
    {
        gs_client_sort s = { .shape = { .dtype = GS_DT_U64, .rows = N / 64 }, .n = N,
                             .device = -1 };
        ok = dmn_rows_check(c, &s, SC_RANDOM, 3, &res, why, sizeof why);
        tap_ok(ok && strcmp(res.plan, "tuned") && res.device == -1,
               "u64 rows of 64: no rows of their key class, the rules' host sort, exact "
               "(plan '%s', %s) %s", res.plan, res.algorithm, ok ? "" : why);
    }
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 60) == 0, "the daemon exits 0 on SIGTERM");
    return tap_done();
}
