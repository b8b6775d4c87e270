/* One request split over several devices (issue 20), through real daemons
 * on two PoCL devices (POCL_DEVICES="pthread pthread"), both given a GPU's
 * built-in defaults (GSORTD_TEST_DEFAULTS=gpu:10: the device radix sort
 * from 2^10 keys) so that each would sort on the device:
 * - with GSORTD_TEST_SPLIT=1 (split whenever two devices can) the whole
 *   tests/support/sortcheck matrix (every dtype x payload x order, ties and float
 *   specials with distinct NaN patterns, stable) is split in two parts,
 *   one per device, merged on the host, and checked exactly against the
 *   reference; the reply says "split" and lists both parts;
 * - with device 1's kernel launches failing (--inject-fault
 *   launch:1,device:1) its part is sorted by the host sort instead: the
 *   answer is still exact, the reply's fallback and part say so, and so
 *   does the log;
 * - with the device memory capped, a part is itself sorted out of core;
 * - equal rows are split on row borders and not merged;
 * - segments whose plan row sends them to bitonic on the device are split
 *   on segment borders, each part with its own offsets, not merged; with
 *   no row for their shape they stay on the host, and the reply says why;
 * - without the hook the router declines: the two CPU devices share the
 *   host's cores, so it predicts no gain; a client that asks ("split":
 *   true) is told why, and the log says so at debug level. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_db.h"
#include "gs_err.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"

#define N 70000

/* One stable sort through the daemon; 1 when correct, res filled. */
static int one(gs_client *c, gs_dtype t, gs_payload p, int desc, size_t n, int dist, int split,
               gs_client_result *res, char *why, size_t len)
{
    sc_case k;
    if (sc_case_init(&k, t, p, desc, n, dist, (uint64_t)(t * 50 + p * 5 + desc + dist))) {
        snprintf(why, len, "cannot build the case");
        return 0;
    }
    gs_client_sort s = { .shape = { .dtype = t, .payload = p, .descending = desc, .stable = 1 },
                         .n = n,
                         .device = -1,
                         .split = split };
    int ok = dmn_sort_check(c, &s, &k, res, why, len);
    if (ok)
        snprintf(why, len, "ok: plan %s, %u parts (%d: %llu keys, %d: %llu keys), merge "
                 "%.2f ms of %.2f", res->plan, res->nparts, res->parts[0].device,
                 (unsigned long long)res->parts[0].n, res->parts[1].device,
                 (unsigned long long)res->parts[1].n, res->merge_ms, res->total_ms);
    sc_case_free(&k);
    return ok;
}

/* Split in two, one part per device, sizes adding up. */
static int split_two(const gs_client_result *r, size_t n)
{
    return !strcmp(r->plan, "split") && r->nparts == 2 && r->parts[0].n + r->parts[1].n == n &&
           r->parts[0].n > 0 && r->parts[1].n > 0 && r->merge_ms > 0;
}

/* Start daemon `name` with `extra` options and connect to it. */
static gs_client *up(dmn *d, const char *name, const char *const *extra)
{
    if (dmn_start(d, name, NULL, extra))
        tap_bail("gsortd %s does not start", name);
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, d->sock, &err))
        tap_bail("connect to %s: %s", name, err.msg);
    return c;
}

static void down(dmn *d, gs_client *c)
{
    gs_client_close(c);
    tap_ok(dmn_stop(d, SIGTERM, 60) == 0, "%s exits 0 on SIGTERM", d->name);
}

static void matrix(void)
{
    static dmn d;
    setenv("GSORTD_TEST_SPLIT", "1", 1);
    gs_client *c = up(&d, "split", NULL);
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int p = 0; p < GS_PL_COUNT; p++) {
            int fl = t == GS_DT_F32 || t == GS_DT_F64, ok = 1;
            char why[600] = "";
            for (int desc = 0; desc < 2 && ok; desc++) {
                int dist = fl ? (desc ? SC_NANMIX : SC_FSPECIAL) : (desc ? SC_FEW16 : SC_RANDOM);
                size_t n = N + (size_t)(t * 7 + p);
                gs_client_result res;
                ok = one(c, (gs_dtype)t, (gs_payload)p, desc, n, dist, 0, &res, why, sizeof why);
                if (ok && (!split_two(&res, n) || res.parts[0].device == res.parts[1].device ||
                           res.parts[0].device < 0 || res.parts[1].device < 0)) {
                    snprintf(why, sizeof why, "not split over both devices: plan %s, %u parts, "
                             "devices %d and %d", res.plan, res.nparts, res.parts[0].device,
                             res.parts[1].device);
                    ok = 0;
                }
            }
            tap_ok(ok, "%s/%s asc and desc, split over two devices: %s",
                   gs_dtype_name((gs_dtype)t), gs_payload_name((gs_payload)p), why);
        }
    char why[600];
    gs_client_result res;
    int ok = one(c, GS_DT_U32, GS_PL_NONE, 0, 1, SC_RANDOM, 0, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "split") && res.nparts == 0,
           "one key is not split (plan %s): %s", res.plan, why);
    ok = one(c, GS_DT_I64, GS_PL_IDX32, 1, 5000, SC_EQUAL, -1, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "split") && res.nparts == 0,
           "\"split\": false is not split (plan %s): %s", res.plan, why);
    down(&d, c);
}

/* Rows split on row borders (issue 38): an argsort of `rows` rows of
 * `len` f32 keys (NaNs and ties), descending, stable, each row checked
 * against its own reference; res filled. */
static int rows_split(gs_client *c, size_t rows, size_t len, gs_client_result *res, char *why,
                      size_t wl)
{
    gs_client_sort s = { .shape = { .dtype = GS_DT_F32, .payload = GS_PL_IDX32,
                                    .descending = 1, .stable = 1, .rows = rows },
                         .n = rows * len, .device = -1 };
    int ok = dmn_rows_check(c, &s, SC_NANMIX, rows * len, res, why, wl);
    if (ok)
        snprintf(why, wl, "plan %s, %u parts (%d: %llu keys, %d: %llu keys)", res->plan,
                 res->nparts, res->parts[0].device, (unsigned long long)res->parts[0].n,
                 res->parts[1].device, (unsigned long long)res->parts[1].n);
    return ok;
}

static void rows(void)
{
    static dmn d;
    setenv("GSORTD_TEST_SPLIT", "1", 1);
    gs_client *c = up(&d, "split-rows", NULL);
    char why[600];
    gs_client_result res;
    int ok = rows_split(c, 301, 1000, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "split") && res.nparts == 2 &&
           res.parts[0].n % 1000 == 0 && res.parts[1].n % 1000 == 0 &&
           res.parts[0].n + res.parts[1].n == 301000 && res.parts[0].device >= 0 &&
           res.parts[1].device >= 0 && res.parts[0].device != res.parts[1].device &&
           !(res.merge_ms > 0), "301 rows of 1000 f32 keys (NaNs and ties), stable argsort descending: "
           "split over both devices on row borders, nothing merged, every row exact: %s", why);
    ok = rows_split(c, 2, 4000, &res, why, sizeof why);
    tap_ok(ok && res.nparts == 2 && res.parts[0].n == 4000 && res.parts[1].n == 4000,
           "two rows: one a device: %s", why);
    down(&d, c);
}

/* Segments (issue 38): nkeys keys of dtype t in segments of 0 to 127
 * keys, an unstable argsort descending, asked to split; 1 when every
 * segment came back as its sorted input. *border: whether the first
 * part ended on a segment border. */
static int segs_split(gs_client *c, gs_dtype t, size_t nkeys, gs_client_result *res,
                      int *border, char *why, size_t wl)
{
    uint64_t *off = sc_random_offsets(nkeys, 127, 0x5917);
    if (!off)
        tap_bail("out of memory");
    size_t S = 0;
    while (S < nkeys && off[S + 1] < nkeys)
        S++;
    off[++S] = nkeys;           /* the last takes the rest */
    gs_client_sort q = { .shape = { .dtype = t, .payload = GS_PL_IDX32, .descending = 1,
                                    .segments = S },
                         .n = nkeys, .offsets = off, .device = -1, .split = 1 };
    int ok = dmn_rows_check(c, &q, SC_NANMIX, 91, res, why, wl);
    *border = 0;
    for (size_t g = 1; g < S && res->nparts >= 1; g++)
        *border |= off[g] == res->parts[0].n;
    if (ok)
        snprintf(why, wl, "plan %s %s, %u parts (%d: %llu keys, %d: %llu keys), %zu segments; "
                 "'%s'", res->plan, res->algorithm, res->nparts, res->parts[0].device,
                 (unsigned long long)res->parts[0].n, res->parts[1].device,
                 (unsigned long long)res->parts[1].n, S, res->split_declined);
    free(off);
    return ok;
}

/* A database whose plan, for both devices (one name), sends 32-bit
 * segments to bitonic; its path in db (600 bytes). */
static void segs_db(char *db, const char *name)
{
    snprintf(db, 600, "%s/%s.db", dmn_tmpdir(), name);
    gs_db *h = NULL;
    long long id;
    dmn_db_first_device(db, &h, &id);
    dmn_db_shape_row(h, id, "segs", "idx32", 16, 6, "bitonic");
    gs_db_close(h);
}

static void segs(void)
{
    static dmn d;
    char db[600], cache[700];
    segs_db(db, "split-segs");
    snprintf(cache, sizeof cache, "cache_dir=%s", dmn_cachedir());
    setenv("GSORTD_TEST_SPLIT", "1", 1);
    const char *const extra[] = { "--db", db, "-o", cache, "-o", "tune_missing=no", NULL };
    gs_client *c = up(&d, "split-segs", extra);
    char why[800];
    gs_client_result res;
    int border;
    const size_t n = 50000;
    int ok = segs_split(c, GS_DT_F32, n, &res, &border, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "split") && res.nparts == 2 && border &&
           res.parts[0].n + res.parts[1].n == n && res.parts[0].device >= 0 &&
           res.parts[1].device >= 0 && res.parts[0].device != res.parts[1].device &&
           !(res.merge_ms > 0), "f32 segments of 0-127 keys (NaNs and ties), argsort descending, "
           "planned to bitonic: split over both devices on a segment border, nothing merged, "
           "every segment exact: %s", why);
    ok = segs_split(c, GS_DT_U64, n, &res, &border, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "split") && res.nparts == 0 &&
           strstr(res.split_declined, "no device's plan sends segments"),
           "u64 segments, no row of their key class: the host sort, not split, and the reply "
           "says why: %s", why);
    down(&d, c);
}

static void device_fault(void)
{
    static dmn d;
    char db[600], cache[700];
    segs_db(db, "split-fault");
    snprintf(cache, sizeof cache, "cache_dir=%s", dmn_cachedir());
    const char *const extra[] = { "--inject-fault", "launch:1,device:1", "--db", db, "-o", cache,
                                  "-o", "tune_missing=no", NULL };
    gs_client *c = up(&d, "split-fault", extra);
    static const struct { gs_dtype t; gs_payload p; int desc, dist; } cs[] = {
        { GS_DT_F32, GS_PL_IDX64, 1, SC_NANMIX }, { GS_DT_U64, GS_PL_U32, 0, SC_FEW16 },
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char why[600];
        gs_client_result res;
        int ok = one(c, cs[i].t, cs[i].p, cs[i].desc, N, cs[i].dist, 0, &res, why, sizeof why);
        tap_ok(ok && split_two(&res, N) && res.parts[0].device == 0 && res.parts[1].device == -1 &&
               strstr(res.fallback, "part 2 of 2") && strstr(res.fallback, "injected fault"),
               "%s/%s with device 1 failing: exact, its part on the host (part devices %d, %d; "
               "fallback '%.200s'): %s", gs_dtype_name(cs[i].t), gs_payload_name(cs[i].p),
               res.parts[0].device, res.parts[1].device, res.fallback, why);
    }
    tap_ok(dmn_log_contains(&d, "part 2 of 2") &&
           dmn_log_contains(&d, "failed on device 1 and was sorted by the host sort"),
           "the log says which part fell back from which device");
    /* segments: the failed part's segments, with their own offsets, on the host */
    char why[800];
    gs_client_result res;
    int border;
    int ok = segs_split(c, GS_DT_F32, 30000, &res, &border, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "split") && res.nparts == 2 && border &&
           res.parts[0].device == 0 && res.parts[1].device == -1 &&
           strstr(res.fallback, "part 2 of 2"), "f32 segments split, device 1 failing: its "
           "part's segments on the host, every segment exact (fallback '%.200s'): %s",
           res.fallback, why);
    down(&d, c);
}

static void part_out_of_core(void)
{
    static dmn d;
    /* as tests/daemon/sched/test_ooc.c: a radix sort of 60000 u32 keys needs two pieces */
    const char *const extra[] = { "-o", "device_mem_cap=1280K", NULL };
    gs_client *c = up(&d, "split-ooc", extra);
    char why[600];
    gs_client_result res;
    size_t n = 2 * 60000;
    int ok = one(c, GS_DT_U32, GS_PL_IDX32, 0, n, SC_FEW16, 0, &res, why, sizeof why);
    tap_ok(ok && split_two(&res, n) && res.parts[0].chunks >= 2 && res.parts[1].chunks >= 2,
           "u32/idx32 split in two parts, each out of core (%u and %u pieces): %s",
           res.parts[0].chunks, res.parts[1].chunks, why);
    down(&d, c);
}

static void declines(void)
{
    static dmn d;
    unsetenv("GSORTD_TEST_SPLIT");
    const char *const extra[] = { "--log-level", "debug", NULL };
    gs_client *c = up(&d, "split-no", extra);
    char why[600];
    gs_client_result res;
    int ok = one(c, GS_DT_F64, GS_PL_U64, 1, N, SC_FSPECIAL, 1, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "split") && res.nparts == 0 &&
           strstr(res.split_declined, "share the host's cores"),
           "asked to split, the router declines on two CPU devices and says why (plan %s: "
           "'%s'): %s", res.plan, res.split_declined, why);
    size_t big = (size_t)1 << 20;
    ok = one(c, GS_DT_U32, GS_PL_NONE, 0, big, SC_RANDOM, 0, &res, why, sizeof why);
    tap_ok(ok && strcmp(res.plan, "split") && !res.split_declined[0],
           "2^20 keys, not asked: not split, nothing in the reply (plan %s): %s", res.plan, why);
    tap_ok(dmn_log_contains(&d, "split of 1048576 u32 keys declined: ") &&
           dmn_log_contains(&d, "share the host's cores"),
           "the log says at debug level why 2^20 keys were not split");
    /* below both devices' crossover, their built-in defaults leave it to
     * the host, and the reply says that is what decided */
    ok = one(c, GS_DT_U32, GS_PL_NONE, 0, 500, SC_RANDOM, 1, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "default") &&
           strstr(res.split_declined, "2 leave it to the host sort (built-in defaults: a CPU "
                  "device, or below the device's crossover)"),
           "500 keys, asked: declined, the devices' built-in defaults named (plan %s: '%s'): %s",
           res.plan, res.split_declined, why);
    down(&d, c);

    /* a tuned plan that chose the host sort is named as such (issue 34:
     * it used to be worded as built-in defaults) */
    static dmn tune, t;
    char db[600];
    snprintf(db, sizeof db, "%s/split-host.db", dmn_tmpdir());
    const char *const targs[] = { "--tune-all", "--quick", "--algorithms", "host", "--max-log2",
                                  "12", "--no-audit", "--db", db, "--cache-dir", dmn_cachedir(),
                                  NULL };
    int trc = dmn_run(&tune, "split-tune", targs, 120);
    if (!tap_ok(trc == 0, "a host-only tune for both devices: exit %d", trc))
        dmn_dump_log(&tune, 20);
    const char *const textra[] = { "--db", db, NULL };
    c = up(&t, "split-tuned", textra);
    ok = one(c, GS_DT_U32, GS_PL_NONE, 0, 3000, SC_RANDOM, 1, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "tuned") &&
           strstr(res.split_declined, "2 leave it to the host sort (the tuned plan chose it)"),
           "tuned to the host sort, asked to split: declined, the plan named (plan %s: '%s'): %s",
           res.plan, res.split_declined, why);
    down(&t, c);
}

int main(void)
{
    /* two PoCL devices, both sorting on the device from 2^10 keys */
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("GSORTD_TEST_DEFAULTS", "gpu:10", 1);
    dmn_init();
    matrix();
    rows();
    segs();
    device_fault();
    part_out_of_core();
    declines();
    return tap_done();
}
