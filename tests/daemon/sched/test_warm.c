/* A device's planned programs built before they serve (issue 37,
 * daemon/sched/gs_warm.c), through a real daemon on a PoCL device whose
 * plan sends u32 sorts to radix with parameters no earlier test built, and
 * an empty program cache, so the build takes seconds:
 * - a sort asked for at once is served by the host sort (route "busy"),
 *   exactly, while info says the device is not ready;
 * - the log then says the device is ready, info agrees, and the same sort
 *   runs radix from the plan (route "tuned");
 * - a reload with the same plan builds nothing again, and the plan still
 *   serves;
 * - a daemon stopped while it builds exits 0 and says how far it got.
 * Both daemons give the device two lanes (device_lanes=2): the second
 * lane waits while the first builds, and ends with it. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_narrow.h"
#include "gs_sort.h"
#include "gs_time.h"
#include "sortcheck.h"
#include "tap.h"

/* Radix parameters that no other test's daemon builds (the program cache
 * is this test's own anyway). */
#define PARAMS "{\"radix_bits\":5,\"wg_size\":32,\"elems_per_thread\":3,\"lookback\":0}"

/* The plan: u32 keys alone, unstable, 2^10..2^16 keys to radix on device 0;
 * 16-bit keys alone (the class of 8- and 16-bit keys) to the host's count
 * up to 2^16, to radix (its 16-bit program) at 2^17. */
static void make_db(const char *path)
{
    gs_db *db = NULL;
    long long id;
    gs_err e;
    gs_err_clear(&e);
    dmn_db_first_device(path, &db, &id);
    for (int b = 10; b <= 16; b++)
        if (gs_db_plan_set(db, id, 32, "none", 0, b, "radix", PARAMS, 0.001, &e) < 0 ||
            gs_db_plan_set(db, id, 16, "none", 0, b, "host", "{}", 0.0001, &e) < 0)
            tap_bail("plan row: %s", e.msg);
    /* and radix, with the same parameters, for 2^17 16-bit keys: a
     * program of its own (the 16-bit keys'), so a second route to build */
    if (gs_db_plan_set(db, id, 16, "none", 0, 17, "radix", PARAMS, 0.001, &e) < 0)
        tap_bail("plan row: %s", e.msg);
    gs_db_close(db);
}

/* Device 0's "ready" in an info reply: 1, 0, or -1 when there is none. */
static int ready(gs_client *c)
{
    cJSON *r = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_client_call(c, "info", &r, &e) < 0)
        return -1;
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "devices"), 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "ready");
    int out = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
    cJSON_Delete(r);
    return out;
}

/* One u32 sort of n keys, checked; res gets the daemon's account. */
static int sort_one(gs_client *c, size_t n, uint64_t seed, gs_client_result *res, char *why,
                    size_t len)
{
    sc_case k;
    if (sc_case_init(&k, GS_DT_U32, GS_PL_NONE, 0, n, 0, seed))
        tap_bail("out of memory");
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = n, .device = -1 };
    int ok = dmn_sort_check(c, &s, &k, res, why, len);
    sc_case_free(&k);
    return ok;
}

int main(void)
{
    dmn_init();
    static dmn d;
    char db[600], cache[600], cache_opt[700];
    snprintf(db, sizeof db, "%s/warm.db", dmn_tmpdir());
    snprintf(cache, sizeof cache, "%s/warm-cache", dmn_tmpdir());
    snprintf(cache_opt, sizeof cache_opt, "cache_dir=%s", cache);
    mkdir(cache, 0700);
    make_db(db);
    /* two lanes: the second waits while the first builds (gs_queue.c) */
    const char *const extra[] = { "--log-level", "info", "-o", cache_opt, "-o", "tune_missing=no",
                                  "-o", "device_lanes=2", NULL };
    if (dmn_start(&d, "warm", NULL, extra))
        tap_bail("gsortd does not start");
    gs_client *c = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_client_connect(&c, d.sock, &e))
        tap_bail("connect: %s", e.msg);

    gs_client_result res;
    char why[600] = "";
    int r0 = ready(c);
    int ok = sort_one(c, 4096, 1, &res, why, sizeof why);
    tap_ok(ok && r0 == 0 && !strcmp(res.plan, "busy") && !strcmp(res.algorithm, "host"),
           "while the planned radix program builds: info ready=%d, the sort is exact and the "
           "host serves it (plan '%s', algorithm '%s'): %s", r0, res.plan, res.algorithm, why);
    tap_ok(dmn_log_contains(&d, "building the programs of 2 planned route(s)"),
           "the log says what is being built: radix for u32 keys and, with the same "
           "parameters, for 16-bit keys");

    int built = dmn_wait_log(&d, "ready: 2 planned route(s) built", 1, 300 * dmn_slowdown());
    int r1 = ready(c);
    tap_ok(built == 1 && r1 == 1, "the log says device 0 is ready (%d line), and so does info "
           "(ready=%d)", built, r1);
    ok = sort_one(c, 4096, 2, &res, why, sizeof why);
    tap_ok(ok && !strcmp(res.plan, "tuned") && !strcmp(res.algorithm, "radix"),
           "then the plan's radix serves it (plan '%s', algorithm '%s'): %s", res.plan,
           res.algorithm, why);

    /* 8- and 16-bit keys follow their own class's rows, not u32's */
    {
        enum { NN = 4096 };
        static uint16_t h[NN];
        static uint8_t b8[NN];
        for (size_t i = 0; i < NN; i++) {
            h[i] = (uint16_t)((i * 2654435761u) >> 7);
            b8[i] = (uint8_t)((i * 2654435761u) >> 9);
        }
        gs_client_sort s16 = { .n = NN, .keys = h, .device = -1, .narrow = GS_NW_U16 };
        gs_client_sort s8 = { .n = NN, .keys = b8, .device = -1, .narrow = GS_NW_U8 };
        gs_client_result r16, r8;
        gs_err_clear(&e);
        int rc16 = gs_client_sort_run(c, &s16, &r16, &e);
        int rc8 = rc16 ? rc16 : gs_client_sort_run(c, &s8, &r8, &e);
        int in_order = rc16 == 0 && rc8 == 0;
        for (size_t i = 1; in_order && i < NN; i++)
            in_order = h[i - 1] <= h[i] && b8[i - 1] <= b8[i];
        tap_ok(in_order && !strcmp(r16.plan, "tuned") && !strcmp(r16.algorithm, "host") &&
               r16.device == -1 && !strcmp(r8.plan, "tuned") && !strcmp(r8.algorithm, "host"),
               "4096 u16 and u8 keys alone: the 16-bit class's row, the host's count, where "
               "u32 keys take radix (u16: plan '%s', %s; u8: '%s', %s)%s%s",
               rc16 ? "?" : r16.plan, rc16 ? "?" : r16.algorithm, rc8 ? "?" : r8.plan,
               rc8 ? "?" : r8.algorithm, rc16 || rc8 ? ": " : "", rc16 || rc8 ? e.msg : "");
    }

    kill(d.pid, SIGHUP);
    int reloads = dmn_wait_log(&d, "reload: allow_uids", 1, 60 * dmn_slowdown());
    ok = sort_one(c, 8192, 3, &res, why, sizeof why);
    tap_ok(reloads == 1 && ok && !strcmp(res.plan, "tuned") &&
           dmn_log_count(&d, "building the programs of") == 1 && ready(c) == 1,
           "a reload with the same plan builds nothing again (%d build lines) and the plan "
           "serves on (plan '%s'): %s", dmn_log_count(&d, "building the programs of"),
           res.plan, why);

    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 60) == 0, "the daemon exits 0 on SIGTERM");

    /* stopped while it builds (another empty program cache): it stops
     * after the build in progress, exits 0, and says how far it got */
    static dmn d2;
    char cache2[600], cache2_opt[700], db2[600];
    snprintf(cache2, sizeof cache2, "%s/warm-cache2", dmn_tmpdir());
    snprintf(cache2_opt, sizeof cache2_opt, "cache_dir=%s", cache2);
    snprintf(db2, sizeof db2, "%s/warm2.db", dmn_tmpdir());
    mkdir(cache2, 0700);
    make_db(db2);
    const char *const extra2[] = { "--log-level", "info", "-o", cache2_opt, "-o",
                                   "tune_missing=no", "-o", "device_lanes=2", NULL };
    if (dmn_start(&d2, "warm2", NULL, extra2))
        tap_bail("second gsortd does not start");
    /* an answer first: the socket accepts before the signal handlers are
     * in place, and a SIGTERM then would end it by default */
    gs_client *c2 = NULL;
    gs_err_clear(&e);
    if (gs_client_connect(&c2, d2.sock, &e))
        tap_bail("connect: %s", e.msg);
    int r2 = ready(c2);
    gs_client_close(c2);
    double t0 = gs_now_s();
    int rc = dmn_stop(&d2, SIGTERM, 120 * dmn_slowdown());
    double took = gs_now_s() - t0;
    int said = dmn_log_contains(&d2, "stopping after") || dmn_log_contains(&d2, "ready: ");
    tap_ok(r2 >= 0 && rc == 0 && said, "SIGTERM while it builds (ready=%d): exit %d after %.1f s, "
           "the log says how far the builds got", r2, rc, took);
    return tap_done();
}
