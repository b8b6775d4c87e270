/* Many clients over two devices (issue 37), through real daemons on two
 * PoCL devices (POCL_DEVICES="pthread pthread") given a GPU's built-in
 * defaults (the device radix sort from 2^10 keys). Concurrent clients each
 * on a connection of their own ask for radix (so the host sort, faster
 * than a PoCL device, does not take the requests), and every answer is
 * checked exactly:
 * - with the two devices alike, both serve a fair share;
 * - with device 0 slowed by a test hook (GSORTD_TEST_SLOW_DEV=0:MS: each
 *   of its runs takes MS ms more, and says so), the router learns it from
 *   its runs, whatever route sent them, and a client that sorts in turn
 *   (both devices idle at each request) is sent to device 1; concurrent
 *   clients send device 0 proportionally fewer: the expected completion
 *   (backlog plus the request's own predicted time) of the slow device
 *   stays behind the fast one's queue. Before, a run taught its device only
 *   when that device had been the plan's first choice, and never when the
 *   client named the algorithm, so a device kept its first guess. */
#include "config.h"

#include <pthread.h>
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

#define CLIENTS 4
#define N 16384
#define SLOW_MS 40

typedef struct client {
    const dmn *d;
    int id, reqs;
    int per_dev[3];          /* [0], [1]: the devices; [2]: anywhere else */
    int wrong;               /* answers not exact, or errors where none may be */
    int errors;              /* error replies (counted apart with `errors_ok`) */
    int errors_ok;           /* a device failing mid-sort may answer "send again" */
    char why[600];
} client;

static void *client_main(void *arg)
{
    client *cl = arg;
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, cl->d->sock, &err)) {
        snprintf(cl->why, sizeof cl->why, "connect: %.500s", err.msg);
        cl->wrong++;
        return NULL;
    }
    gs_client_set_timeout(c, 120 * dmn_slowdown());
    for (int r = 0; r < cl->reqs; r++) {
        sc_case k;
        if (sc_case_init(&k, GS_DT_U32, GS_PL_NONE, r & 1, N + (size_t)r, SC_RANDOM,
                         (uint64_t)(cl->id * 1000 + r))) {
            snprintf(cl->why, sizeof cl->why, "cannot build a case");
            cl->wrong++;
            break;
        }
        gs_client_sort s = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE,
                                        .descending = r & 1 },
                             .n = k.req.n,
                             .algorithm = "radix",
                             .device = -1 };
        gs_client_result res;
        char why[600] = "";
        s.keys = k.req.keys;
        gs_err_clear(&err);
        int rc = gs_client_sort_run(c, &s, &res, &err);
        if (rc == GS_EIO && cl->errors_ok && strstr(err.msg, "send again")) {
            cl->errors++;
        } else if (rc != 0 || !sc_case_verify(&k, 0, why, sizeof why)) {
            if (!cl->wrong)
                snprintf(cl->why, sizeof cl->why, "client %d request %d: %.500s", cl->id, r,
                         rc ? err.msg : why);
            cl->wrong++;
        } else {
            cl->per_dev[res.device == 0 || res.device == 1 ? res.device : 2]++;
        }
        sc_case_free(&k);
    }
    gs_client_close(c);
    return NULL;
}

/* CLIENTS clients of `reqs` requests each at once; the sorts per device.
 * errors: NULL, or the "send again" replies counted (then not wrong). */
static int load(const dmn *d, int reqs, int per_dev[3], int *errors, char *why, size_t len)
{
    client cl[CLIENTS];
    pthread_t th[CLIENTS];
    memset(cl, 0, sizeof cl);
    for (int i = 0; i < CLIENTS; i++) {
        cl[i] = (client){ .d = d, .id = i, .reqs = reqs, .errors_ok = errors != NULL };
        if (pthread_create(&th[i], NULL, client_main, &cl[i]))
            tap_bail("cannot start a client thread");
    }
    int wrong = 0;
    per_dev[0] = per_dev[1] = per_dev[2] = 0;
    if (errors)
        *errors = 0;
    why[0] = '\0';
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(th[i], NULL);
        for (int k = 0; k < 3; k++)
            per_dev[k] += cl[i].per_dev[k];
        if (errors)
            *errors += cl[i].errors;
        if (cl[i].wrong && !wrong)
            snprintf(why, len, "%s", cl[i].why);
        wrong += cl[i].wrong;
    }
    return wrong;
}

static void start(dmn *d, const char *name)
{
    if (dmn_start(d, name, NULL, NULL))
        tap_bail("gsortd %s does not start", name);
}

static void alike(void)
{
    static dmn d;
    unsetenv("GSORTD_TEST_SLOW_DEV");
    start(&d, "balance");
    int per[3];
    char why[600];
    int wrong = load(&d, 12, per, NULL, why, sizeof why);
    tap_ok(wrong == 0, "%d concurrent clients, %d sorts each: every answer exact%s%s", CLIENTS,
           12, wrong ? ": " : "", why);
    int total = per[0] + per[1];
    tap_ok(per[2] == 0 && per[0] >= total / 10 && per[1] >= total / 10,
           "two devices alike share the load (device 0: %d, device 1: %d, elsewhere: %d)",
           per[0], per[1], per[2]);
    tap_ok(dmn_stop(&d, SIGTERM, 60) == 0, "exits 0 on SIGTERM");
}

static void slowed(void)
{
    static dmn d;
    char v[32];
    /* device 0: the one a tie between idle devices goes to */
    snprintf(v, sizeof v, "0:%d", SLOW_MS);
    setenv("GSORTD_TEST_SLOW_DEV", v, 1);
    start(&d, "balance-slow");
    unsetenv("GSORTD_TEST_SLOW_DEV");
    int per[3], one[3];
    char why[600];
    /* One client in turn: both devices idle at every request, so the
     * choice is the predicted run alone. Device 0 runs at most three
     * (while it learns its rate, ties go to it), device 1 the rest. */
    client solo = { .d = &d, .id = 99, .reqs = 12 };
    client_main(&solo);
    memcpy(one, solo.per_dev, sizeof one);
    tap_ok(solo.wrong == 0 && one[2] == 0 && one[1] >= 9,
           "one client in turn: after its first runs, device 0 slowed by %d ms is left idle "
           "(device 0: %d, device 1: %d, elsewhere: %d)%s%s", SLOW_MS, one[0], one[1], one[2],
           solo.wrong ? ": " : "", solo.why);
    int wrong = load(&d, 16, per, NULL, why, sizeof why);
    tap_ok(wrong == 0, "with device 0 slowed: every answer of %d concurrent clients exact%s%s",
           CLIENTS, wrong ? ": " : "", why);
    /* A run there takes ten times one on device 1 or more: with four
     * clients, device 1's queue never holds that much. Alike, it took
     * half. */
    tap_ok(per[2] == 0 && 4 * per[0] <= per[1],
           "the slowed device gets proportionally fewer (device 0: %d, device 1: %d, "
           "elsewhere: %d)", per[0], per[1], per[2]);
    if (one[1] < 9 || 4 * per[0] > per[1])
        dmn_dump_log(&d, 20);
    tap_ok(dmn_stop(&d, SIGTERM, 60) == 0, "exits 0 on SIGTERM");
}

/* Device 0's lanes as the info op tells them (gs_client_info); -1: not
 * read. */
static double info_lanes(const dmn *d)
{
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    double v = -1;
    if (gs_client_connect(&c, d->sock, &err) == 0) {
        gs_reply_info in;
        cJSON *h = NULL;
        if (gs_client_info(c, &in, &h, &err) == 0) {
            if (in.ndevices > 0)
                v = in.devices[0].lanes;
            gs_reply_info_free(&in);
            cJSON_Delete(h);
        }
    }
    if (v < 0)
        tap_diag("info: %s", err.msg);
    gs_client_close(c);
    return v;
}

/* One device with three lanes (device_lanes=3; auto gives a CPU device
 * one): concurrent clients' requests run three at once, every lane takes
 * some, every answer exact; then, with two lanes and every kernel launch
 * from the 150th on failing, the requests in
 * flight when it starts, and all after, fall back to the host sort and are
 * exact, the other lane's included, or (a kernel that failed after writing
 * the client's pages, as a CPU device's do) answer "send again". */
static void lanes(void)
{
    static dmn d, f;
    unsetenv("GSORTD_TEST_SLOW_DEV");
    const char *const three[] = { "-o", "devices=0", "-o", "device_lanes=3", NULL };
    if (dmn_start(&d, "lanes", NULL, three))
        tap_bail("gsortd lanes does not start");
    int per[3];
    char why[600];
    int wrong = load(&d, 10, per, NULL, why, sizeof why);
    tap_ok(wrong == 0 && per[0] == CLIENTS * 10,
           "device_lanes=3: %d concurrent clients' sorts on device 0 (%d), every answer exact%s%s",
           CLIENTS, per[0], wrong ? ": " : "", why);
    tap_ok(dmn_log_contains(&d, "serving, 3 requests at a time") &&
           dmn_log_contains(&d, "its lane 2 took a request") &&
           dmn_log_contains(&d, "its lane 3 took a request"),
           "the log says the device serves three at a time, and lanes 2 and 3 took requests");
    double lanes = info_lanes(&d);
    tap_ok(lanes == 3, "info: device 0 has 3 lanes (%g)", lanes);
    tap_ok(dmn_stop(&d, SIGTERM, 60) == 0, "exits 0 on SIGTERM");

    const char *const fault[] = { "-o", "devices=0", "-o", "device_lanes=2", "--inject-fault",
                                  "launch:150", NULL };
    if (dmn_start(&f, "lanes-fault", NULL, fault))
        tap_bail("gsortd lanes-fault does not start");
    int errs = 0;
    wrong = load(&f, 10, per, &errs, why, sizeof why);
    /* On a CPU device a kernel sorts in the client's own pages: one that
     * fails mid-sort has written them, and is answered "send again" (as
     * with one lane); every other answer is exact. */
    tap_ok(wrong == 0 && per[0] + per[2] + errs == CLIENTS * 10 && per[0] + per[2] > errs,
           "two lanes, launches failing from the 150th: every answer of %d concurrent clients "
           "exact (device 0: %d, host: %d) or a clean \"send again\" (%d)%s%s", CLIENTS, per[0],
           per[2], errs, wrong ? ": " : "", why);
    tap_ok(per[2] > 0 && dmn_log_contains(&f, "serving it with the host sort"),
           "those whose input was intact were served by the host sort, and the log says so");
    tap_ok(dmn_stop(&f, SIGTERM, 60) == 0, "exits 0 on SIGTERM");
}

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    setenv("GSORTD_TEST_DEFAULTS", "gpu:10", 1);
    dmn_init();
    alike();
    slowed();
    lanes();
    return tap_done();
}
