/* End-to-end tests of the daemon: the real daemon/gsortd is started
 * (tests/support/dmn.h) in the foreground on a socket and database in a temporary
 * directory, and exercised through the blocking client (lib/wire/gs_client.c) and
 * raw bytes: every op, every dtype x values kind inline and through a memfd
 * in both orders (checked against tests/support/sortcheck's reference), rows,
 * segments (lying offsets, and offsets a thread rewrites during the sorts,
 * answered with an error and the connection kept), top-k, the device
 * routes (radix, mergepath), 32 concurrent clients, 200 clients that close
 * in the middle of a large reply while others are served (no "bad file
 * descriptor", no leaked descriptor, no epoll_ctl on a closed one where
 * strace can attach), each kind of bad input (after which the daemon must
 * still answer a new client and an already-connected one), the limits and
 * timeouts, fallback to the host after injected launch failures and after a
 * kernel that does not build, SIGHUP reloading the config, stale and live
 * sockets, and a SIGTERM that lets the request in flight finish. The
 * client's own defenses (lying reply sizes, huge reply headers, error-name
 * mapping, timeouts, the first cause of a broken connection kept, a peer
 * that closed an idle one) are tested against a scripted fake daemon. Device
 * sorts are few and use default parameters: PoCL compiles are the slow part,
 * so the daemons share $top_builddir/tests/pcache. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_conf.h"
#include "gs_err.h"
#include "gs_proto.h"
#include "gs_sort.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

#define REPLY_TIMEOUT_S 180.0   /* a first device sort includes a PoCL compile */

/* ---- connections and replies ---- */

static gs_client *conn(const dmn *d)
{
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, d->sock, &err)) {
        tap_diag("connect to %s: %s", d->name, err.msg);
        return NULL;
    }
    gs_client_set_timeout(c, REPLY_TIMEOUT_S * dmn_slowdown());
    return c;
}

static int ping(gs_client *c, char *why, size_t len)
{
    gs_err err;
    gs_err_clear(&err);
    cJSON *r = NULL;
    int rc = c ? gs_client_call(c, "ping", &r, &err) : GS_EIO;
    if (rc && why)
        snprintf(why, len, "ping: %s %.200s", gs_strerror(rc), c ? err.msg : "no connection");
    cJSON_Delete(r);
    return rc == 0;
}

static int fresh_ping(const dmn *d, char *why, size_t len)
{
    gs_client *c = conn(d);
    int ok = ping(c, why, len);
    gs_client_close(c);
    return ok;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double jnum(const cJSON *o, const char *k, double dflt)
{
    const cJSON *j = jget(o, k);
    return cJSON_IsNumber(j) ? j->valuedouble : dflt;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *j = jget(o, k);
    return cJSON_IsString(j) ? j->valuestring : "";
}

static const char *err_code(const cJSON *h)
{
    return jstr(jget(h, "error"), "code");
}

static const char *err_msg(const cJSON *h)
{
    return jstr(jget(h, "error"), "message");
}

/* A frame around arbitrary header text. */
static int send_text(int fd, const char *text)
{
    uint8_t len[GS_PROTO_LEN_BYTES];
    gs_proto_put_len(len, (uint32_t)strlen(text));
    return dmn_send_raw(fd, len, sizeof len) || dmn_send_raw(fd, text, strlen(text)) ? -1 : 0;
}

/* Read one reply (no payload expected) and check it is an error with one
 * of the `codes` ("GS_EINVAL|GS_ETOOBIG"). Then hold the daemon to its word
 * about the connection: "close":true means it closes it; otherwise (when
 * `reuse`) the same connection must still serve a ping. */
static int expect_error(gs_client *c, const char *codes, const char *needle, int reuse,
                        const char *what)
{
    gs_err err;
    gs_err_clear(&err);
    cJSON *h = NULL;
    uint64_t got = 0;
    char why[600] = "";
    int ok = 0;
    int rc = c ? gs_client_recv(c, &h, NULL, 0, &got, &err) : GS_EIO;
    if (rc) {
        snprintf(why, sizeof why, "no reply: %s %.400s", gs_strerror(rc), c ? err.msg : "");
    } else if (cJSON_IsTrue(jget(h, "ok"))) {
        snprintf(why, sizeof why, "the daemon said ok");
    } else if (!*err_code(h) || !strstr(codes, err_code(h))) {
        snprintf(why, sizeof why, "code %s (%s), wanted %s", err_code(h), err_msg(h), codes);
    } else if (needle && !strstr(err_msg(h), needle)) {
        snprintf(why, sizeof why, "message '%s' does not mention '%s'", err_msg(h), needle);
    } else if (cJSON_IsTrue(jget(h, "close"))) {
        double t = dmn_wait_eof(gs_client_fd(c), 5);
        ok = t >= 0;
        snprintf(why, sizeof why, "%s (%s; closed %s)", err_code(h), err_msg(h),
                 ok ? "as announced" : "NOT closed within 5 s despite \"close\":true");
    } else if (reuse) {
        char pw[300] = "";
        ok = ping(c, pw, sizeof pw);
        snprintf(why, sizeof why, "%s (%s; connection kept: %s)", err_code(h), err_msg(h),
                 ok ? "still serves a ping" : pw);
    } else {
        ok = 1;
        snprintf(why, sizeof why, "%s (%s)", err_code(h), err_msg(h));
    }
    cJSON_Delete(h);
    return tap_ok(ok, "%s: %s", what, why);
}

/* ---- sorts ---- */

/* A request built on a sortcheck case. Threads only do the I/O; cases are
 * built and verified on the main thread (sortcheck's reference cache is
 * not thread-safe). */
typedef struct rt {
    sc_case c;
    gs_dtype t;
    gs_payload p;
    int desc, stable, memfd;
    size_t n;
    const char *algo;
    const char *params;
    int rc;                       /* of gs_client_sort_run */
    gs_err err;
    gs_client_result res;
    double ms;
} rt;

static int rt_init(rt *r, gs_dtype t, gs_payload p, int desc, size_t n, uint64_t seed,
                   const char *algo, int memfd, int stable)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->p = p;
    r->desc = desc;
    r->n = n;
    r->algo = algo;
    r->memfd = memfd;
    r->stable = stable;
    int dist = t == GS_DT_F32 || t == GS_DT_F64 ? (seed % 2 ? SC_FSPECIAL : SC_RANDOM)
                                                  : (seed % 3 ? SC_RANDOM : SC_FEW16);
    if (n == 0) {
        /* sc_case_init cannot build an empty case with values (it writes a
         * canary through the NULL values buffer); there is nothing to check. */
        r->c.req.shape.dtype = t;
        r->c.req.shape.payload = p;
        r->c.req.shape.descending = desc;
        return 0;
    }
    return sc_case_init(&r->c, t, p, desc, n, dist, seed);
}

/* Send the case and read the answer into the case's work buffers. */
static void rt_run(rt *r, gs_client *c)
{
    size_t ks = gs_dtype_size(r->t), vs = gs_payload_size(r->p);
    size_t kb = r->n * ks, vb = r->n * vs;
    gs_client_sort s = {
        .shape = { .dtype = r->t, .payload = r->p, .descending = r->desc, .stable = r->stable },
        .n = r->n, .algorithm = r->algo, .params = r->params, .device = -1,
    };
    gs_client_shm shm = { -1, NULL, 0 };
    gs_err_clear(&r->err);
    double t0 = gs_now_s();
    if (!c) {
        r->rc = gs_err_set(&r->err, GS_EIO, "no connection");
        return;
    }
    if (r->memfd) {
        /* Values first, then the keys (8-byte aligned), so both offsets
         * are non-trivial; a spare page after catches overruns. */
        size_t voff = 0, koff = (vb + 7) & ~(size_t)7;
        r->rc = gs_client_shm_alloc(&shm, koff + kb + 4096, &r->err);
        if (r->rc)
            return;
        unsigned char *base = shm.ptr;
        memset(base, 0xEE, shm.size);
        if (kb)   /* n = 0: no key array (NULL), and memcpy(.., NULL, 0) is undefined */
            memcpy(base + koff, r->c.req.keys, kb);
        if (vb)
            memcpy(base + voff, r->c.req.values, vb);   /* idx: garbage in, overwritten */
        s.keys = base + koff;
        s.values = vb ? base + voff : NULL;
        s.shm = &shm;
        r->rc = gs_client_sort_run(c, &s, &r->res, &r->err);
        if (!r->rc) {
            if (kb)
                memcpy(r->c.req.keys, base + koff, kb);
            if (vb)
                memcpy(r->c.req.values, base + voff, vb);
            for (size_t i = koff + kb; i < shm.size; i++)
                if (base[i] != 0xEE) {
                    r->rc = gs_err_set(&r->err, GS_EWRONG, "daemon wrote past the keys "
                                       "in the memfd (byte %zu)", i - koff - kb);
                    break;
                }
        }
        gs_client_shm_free(&shm);
    } else {
        s.keys = r->c.req.keys;
        s.values = r->c.req.values;
        r->rc = gs_client_sort_run(c, &s, &r->res, &r->err);
    }
    r->ms = (gs_now_s() - t0) * 1000;
}

static int algo_stable(const char *name)
{
    const gs_algo *a = name ? gs_algo_find(name) : NULL;
    return a && a->stable;
}

/* 1 if the answer was correct; `why` says what went wrong. */
static int rt_check(rt *r, char *why, size_t len)
{
    if (r->rc) {
        snprintf(why, len, "%s: %.400s", gs_strerror(r->rc), r->err.msg);
        return 0;
    }
    int exact = r->stable || algo_stable(r->res.algorithm[0] ? r->res.algorithm : r->algo);
    if (r->n && !sc_case_verify(&r->c, exact, why, len))
        return 0;
    snprintf(why, len, "ok (%s on %s, plan %s, %.1f ms)", r->res.algorithm,
             r->res.device < 0 ? "host" : r->res.device_name, r->res.plan, r->ms);
    return 1;
}

static void rt_free(rt *r)
{
    sc_case_free(&r->c);
}

static const char *rt_label(const rt *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s %s n=%zu %s%s%s", gs_dtype_name(r->t), gs_payload_name(r->p),
             r->desc ? "desc" : "asc", r->n, r->memfd ? "memfd" : "inline",
             r->stable ? " stable" : "", r->algo ? r->algo : "");
    return buf;
}

/* One sort, checked: returns correctness. */
static int sort_ok(gs_client *c, gs_dtype t, gs_payload p, int desc, size_t n, uint64_t seed,
                   const char *algo, int memfd, char *why, size_t len, gs_client_result *res)
{
    rt r;
    if (rt_init(&r, t, p, desc, n, seed, algo, memfd, 0)) {
        snprintf(why, len, "cannot build the case");
        return 0;
    }
    rt_run(&r, c);
    int ok = rt_check(&r, why, len);
    if (res)
        *res = r.res;
    rt_free(&r);
    return ok;
}

/* After a bad input: a new client gets a ping answered and an already
 * connected one gets a correct sort. */
static void unharmed(const dmn *d, gs_client *keep, const char *after)
{
    char w1[300] = "", w2[600] = "";
    int p = fresh_ping(d, w1, sizeof w1);
    int s = sort_ok(keep, GS_DT_U32, GS_PL_U32, 0, 777, 99, "host", 0, w2, sizeof w2, NULL);
    tap_ok(p && s, "after %s: new client's ping %s; open client's sort %s", after,
           p ? "ok" : w1, s ? "ok" : w2);
}

/* ---- the main daemon: ops ---- */

static cJSON *call(gs_client *c, const char *op, char *why, size_t len)
{
    gs_err err;
    gs_err_clear(&err);
    cJSON *r = NULL;
    int rc = gs_client_call(c, op, &r, &err);
    if (rc) {
        snprintf(why, len, "%s: %.400s", gs_strerror(rc), err.msg);
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static int has_string(const cJSON *arr, const char *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (cJSON_IsString(e) && !strcmp(e->valuestring, s))
            return 1;
        if (cJSON_IsObject(e) && !strcmp(jstr(e, "name"), s))
            return 1;
    }
    return 0;
}

static int has_number(const cJSON *obj, double v)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, obj)
        if (cJSON_IsNumber(e) && e->valuedouble == v)
            return 1;
    return 0;
}

static void test_ops(dmn *d, uint64_t max_req)
{
    char why[600] = "";
    gs_client *c = conn(d);
    cJSON *r = call(c, "ping", why, sizeof why);
    tap_ok(r && !strcmp(jstr(r, "op"), "ping") && *jstr(r, "version") &&
           jnum(r, "protocol", 0) == GS_PROTO_VERSION && jnum(r, "v", 0) == 1,
           "ping: op, version '%s', protocol %g %s", jstr(r, "version"),
           jnum(r, "protocol", -1), why);
    cJSON_Delete(r);

    r = call(c, "info", why, sizeof why);
    tap_ok(r != NULL, "info answered %s", why);
    tap_ok(r && *jstr(r, "version") && jnum(r, "protocol", 0) == GS_PROTO_VERSION &&
           jnum(r, "pid", 0) == (double)d->pid, "info: version, protocol, pid %g (daemon %d)",
           jnum(r, "pid", -1), (int)d->pid);
    tap_ok(r && !strcmp(jstr(r, "socket"), d->sock) && !strcmp(jstr(r, "db"), d->db) &&
           cJSON_IsTrue(jget(r, "db_ok")), "info: socket '%s', db '%s' (tuned), db_ok %s",
           jstr(r, "socket"), jstr(r, "db"), cJSON_IsTrue(jget(r, "db_ok")) ? "true" : "not true");
    tap_ok(cJSON_IsTrue(jget(cJSON_GetArrayItem(jget(r, "devices"), 0), "tuned")) &&
           jnum(cJSON_GetArrayItem(jget(r, "devices"), 0), "plan_entries", 0) >= 1,
           "info: device 0 is tuned, %g plan entries",
           jnum(cJSON_GetArrayItem(jget(r, "devices"), 0), "plan_entries", -1));
    const cJSON *devs = jget(r, "devices"), *dv;
    int ndev = cJSON_GetArraySize(devs), devok = cJSON_IsArray(devs) && ndev >= 1;
    cJSON_ArrayForEach(dv, devs) {
        static const char *const keys[] = { "index", "name", "platform", "driver", "type",
                                            "tuned", "plan_entries", "queued", "healthy" };
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!jget(dv, keys[i])) {
                tap_diag("device entry lacks \"%s\"", keys[i]);
                devok = 0;
            }
        tap_diag("device %g: %s (%s), healthy %d, tuned %d", jnum(dv, "index", -1),
                 jstr(dv, "name"), jstr(dv, "platform"), cJSON_IsTrue(jget(dv, "healthy")),
                 cJSON_IsTrue(jget(dv, "tuned")));
    }
    tap_ok(devok, "info: %d device(s), each with index/name/platform/driver/type/tuned/"
           "plan_entries/queued/healthy", ndev);
    const cJSON *algos = jget(r, "algorithms");
    tap_ok(has_string(algos, "host") && has_string(algos, "radix") &&
           has_string(algos, "mergepath") && has_string(algos, "shellsort"),
           "info: algorithms list host, radix, mergepath, shellsort");
    tap_ok(jnum(jget(r, "host"), "threads", 0) >= 1 && cJSON_IsObject(jget(r, "limits")) &&
           has_number(jget(r, "limits"), (double)max_req),
           "info: host.threads %g, limits include max_request_bytes %" PRIu64,
           jnum(jget(r, "host"), "threads", -1), max_req);
    cJSON_Delete(r);

    /* Stats move with requests: one good sort and one bad one in between. */
    cJSON *s1 = call(c, "stats", why, sizeof why);
    tap_ok(s1 && jnum(s1, "uptime_s", -1) >= 0 && jnum(jget(s1, "clients"), "current", 0) >= 1 &&
           jnum(jget(s1, "clients"), "total", 0) >= 1 && cJSON_IsObject(jget(s1, "requests")) &&
           cJSON_IsObject(jget(s1, "bytes")) && cJSON_IsArray(jget(s1, "routes")),
           "stats: uptime_s, clients, requests, bytes, routes %s", why);
    int sok = sort_ok(c, GS_DT_U64, GS_PL_NONE, 0, 5000, 1, "host", 0, why, sizeof why, NULL);
    tap_ok(sok, "a host sort between stats calls: %s", why);
    gs_client *c2 = conn(d);
    uint32_t k[3] = { 3, 2, 1 };
    gs_client_sort bad = {
        .shape = { .dtype = GS_DT_U32 }, .n = 3, .keys = k, .algorithm = "bogosort", .device = -1
    };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_client_sort_run(c2, &bad, NULL, &err);
    tap_ok(rc == GS_ENOTFOUND && !strncmp(err.msg, "gsortd: ", 8),
           "unknown algorithm: %s '%s'", gs_strerror(rc), err.msg);
    gs_client_close(c2);
    cJSON *s2 = call(c, "stats", why, sizeof why);
    const cJSON *q1 = jget(s1, "requests"), *q2 = jget(s2, "requests");
    double dt = jnum(q2, "total", 0) - jnum(q1, "total", 0);
    double dok = jnum(q2, "ok", 0) - jnum(q1, "ok", 0);
    double derr = jnum(q2, "errors", 0) - jnum(q1, "errors", 0);
    double dsort = jnum(jget(q2, "by_op"), "sort", 0) - jnum(jget(q1, "by_op"), "sort", 0);
    double din = jnum(jget(s2, "bytes"), "in", 0) - jnum(jget(s1, "bytes"), "in", 0);
    double dout = jnum(jget(s2, "bytes"), "out", 0) - jnum(jget(s1, "bytes"), "out", 0);
    tap_ok(s2 && dt >= 2 && dt <= 3 && dok >= 1 && derr == 1 && dsort >= 1 && din >= 40000 &&
           dout >= 40000 && jnum(jget(s2, "clients"), "total", 0) >
           jnum(jget(s1, "clients"), "total", 0),
           "stats count them: requests +%g (ok +%g, errors +%g, sort +%g), bytes in +%g "
           "out +%g, clients.total %g -> %g", dt, dok, derr, dsort, din, dout,
           jnum(jget(s1, "clients"), "total", 0), jnum(jget(s2, "clients"), "total", 0));
    const cJSON *route;
    int host_route = 0;
    cJSON_ArrayForEach(route, jget(s2, "routes")) {
        if (!strcmp(jstr(route, "algorithm"), "host") && jnum(route, "count", 0) >= 1 &&
            jget(route, "device") &&
            jget(route, "mean_ms") && jget(route, "max_ms") && jget(route, "total_ms") &&
            jget(route, "queue_ms") && jget(route, "sort_ms") && jget(route, "errors") &&
            jnum(route, "queue_p50_ms", -1) >= 0 &&
            jnum(route, "queue_p50_ms", -1) <= jnum(route, "queue_p90_ms", -1) &&
            jnum(route, "queue_p90_ms", -1) <= jnum(route, "queue_p99_ms", -1) &&
            jnum(route, "queue_p99_ms", -1) <= 2 * jnum(route, "max_ms", -1))
            host_route = 1;
    }
    tap_ok(host_route, "stats: a host route with count, errors, the timings and ordered queue "
           "percentiles");
    cJSON_Delete(s1);
    cJSON_Delete(s2);
    gs_client_close(c);
}

/* The stats' database.queries (ULONG_MAX when it cannot be read). */
static unsigned long db_queries(gs_client *c)
{
    char why[600];
    cJSON *st = call(c, "stats", why, sizeof why);
    const cJSON *q = st ? jget(jget(st, "database"), "queries") : NULL;
    unsigned long v = cJSON_IsNumber(q) ? (unsigned long)q->valuedouble : ULONG_MAX;
    cJSON_Delete(st);
    return v;
}

/* ---- every dtype x values kind, inline and memfd, both orders ---- */

static void test_matrix(dmn *d)
{
    gs_client *c = conn(d);
    int host_stable = algo_stable("host");
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int p = 0; p < GS_PL_COUNT; p++)
            for (int m = 0; m < 2; m++) {
                char why[600] = "", lab[128];
                int ok = 1;
                size_t n = 300 + (size_t)(t * 97 + p * 31 + m * 7);
                for (int desc = 0; desc < 2 && ok; desc++) {
                    rt r;
                    uint64_t seed = (uint64_t)(t * 100 + p * 10 + m * 2 + desc);
                    rt_init(&r, (gs_dtype)t, (gs_payload)p, desc, n, seed, "host", m,
                            host_stable && desc);
                    rt_run(&r, c);
                    ok = rt_check(&r, why, sizeof why);
                    if (!ok)
                        rt_label(&r, lab, sizeof lab);
                    rt_free(&r);
                }
                tap_ok(ok, "%s values=%s %s, asc and desc: %s%s%s", gs_dtype_name((gs_dtype)t),
                       gs_payload_name((gs_payload)p), m ? "memfd" : "inline", ok ? "" : lab,
                       ok ? "" : ": ", why);
            }
    /* The edges: nothing to sort, and a single element. */
    static const struct { gs_dtype t; gs_payload p; } edge[] = {
        { GS_DT_U32, GS_PL_NONE }, { GS_DT_F64, GS_PL_IDX64 }, { GS_DT_I32, GS_PL_U64 },
        { GS_DT_F32, GS_PL_IDX32 },
    };
    for (size_t e = 0; e < sizeof edge / sizeof edge[0]; e++)
        for (size_t n = 0; n < 2; n++)
            for (int m = 0; m < 2; m++) {
                char why[600] = "";
                int ok = sort_ok(c, edge[e].t, edge[e].p, (int)e % 2, n, 5 + e, "host", m, why,
                                 sizeof why, NULL);
                tap_ok(ok, "n=%zu %s/%s %s: %s", n, gs_dtype_name(edge[e].t),
                       gs_payload_name(edge[e].p), m ? "memfd" : "inline", why);
            }
    /* Without "algorithm": the daemon's own plan (tuned for these) sorts correctly. */
    char why[600] = "";
    gs_client_result res;
    int ok = sort_ok(c, GS_DT_U32, GS_PL_NONE, 0, 10000, 8, NULL, 0, why, sizeof why, &res);
    tap_ok(ok && !strcmp(res.plan, "tuned") && *res.algorithm,
           "no algorithm named, u32 n=10000: plan '%s' -> %s", res.plan, why);
    ok = sort_ok(c, GS_DT_I64, GS_PL_U32, 1, 20000, 9, NULL, 1, why, sizeof why, &res);
    tap_ok(ok && *res.plan && *res.algorithm, "no algorithm named, i64/u32 desc memfd: plan "
           "'%s' -> %s", res.plan, why);

    /* The plan lives in memory (issue 17): serving runs no database
     * statement, whether the shape is tuned, borrowed from the nearest
     * tuned shape, or the client names a device algorithm (its winners). */
    unsigned long q0 = db_queries(c), q1;
    int all = 1;
    static const struct { gs_dtype t; gs_payload p; size_t n; const char *algo; } q[] = {
        { GS_DT_U32, GS_PL_NONE, 10000, NULL }, { GS_DT_F64, GS_PL_IDX64, 3000, NULL },
        { GS_DT_I32, GS_PL_U64, 70000, NULL }, { GS_DT_U32, GS_PL_U32, 5000, "radix" },
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        ok = sort_ok(c, q[i].t, q[i].p, 0, q[i].n, 20 + i, q[i].algo, 0, why, sizeof why, &res);
        if (!ok)
            tap_diag("sort %zu: %s", i, why);
        all &= ok;
    }
    q1 = db_queries(c);
    tap_ok(all && q0 != ULONG_MAX && q0 > 0 && q1 == q0,
           "a tuned daemon serves tuned, untuned and named-algorithm sorts without a database "
           "statement: %lu statements before (loading the plan), %lu after", q0, q1);
    gs_client_close(c);
}

/* ---- rows (issue 38): equal rows in one request, each sorted on its own ---- */

/* A test's keys and values: in one memfd (values 8-aligned after the
 * keys) or on the heap; bails out when out of memory. */
static void arrays_get(int memfd, size_t n, size_t ks, size_t vs, gs_client_shm *shm,
                       char **keys, char **vals)
{
    gs_err err;
    gs_err_clear(&err);
    if (memfd) {
        if (gs_client_shm_alloc(shm, n * (ks + vs) + 8, &err) < 0)
            tap_bail("shm: %s", err.msg);
        *keys = shm->ptr;
        *vals = (char *)shm->ptr + ((n * ks + 7) & ~(size_t)7);
    } else {
        *keys = malloc(n * ks + 1);
        *vals = malloc(n * vs + 1);
    }
    if (!*keys || !*vals)
        tap_bail("out of memory");
}

/* Where a request was served, for a passing check's line. */
static void say_route(char *why, size_t wl, const gs_client_result *res)
{
    snprintf(why, wl, "%s on %s, plan %s", res->algorithm,
             res->device < 0 ? "host" : res->device_name, res->plan);
}

static void arrays_put(int memfd, gs_client_shm *shm, char *keys, char *vals)
{
    if (memfd) {
        gs_client_shm_free(shm);
    } else {
        free(keys);
        free(vals);
    }
}

/* `rows` rows of `len` keys, each its own sortcheck case, sent as one
 * request (inline, or memfd from one block) with `algo` (NULL: the
 * daemon's choice); every row checked against its own reference. */
static int rows_ok(gs_client *c, gs_dtype t, gs_payload p, int desc, size_t rows, size_t len,
                   const char *algo, int memfd, char *why, size_t wl, gs_client_result *res)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p), n = rows * len;
    gs_client_shm shm = { -1, NULL, 0 };
    char *keys, *vals;
    gs_err err;
    gs_err_clear(&err);
    arrays_get(memfd, n, ks, vs, &shm, &keys, &vals);
    sc_case *cs = sc_rows_init(t, p, desc, rows, len, SC_RANDOM, 77, keys, vals);
    gs_client_sort s = { .shape = { .dtype = t, .payload = p, .descending = desc,
                                    .stable = 1, .rows = rows },
                         .n = n, .keys = keys, .values = vs ? vals : NULL, .algorithm = algo,
                         .device = -1, .shm = memfd ? &shm : NULL };
    int ok = gs_client_sort_run(c, &s, res, &err) == 0;
    if (!ok)
        snprintf(why, wl, "%s: %.400s", gs_strerror(err.code), err.msg);
    ok = sc_rows_verify(cs, rows, len, 1, keys, vals, ok, why, wl);
    if (ok)
        say_route(why, wl, res);
    arrays_put(memfd, &shm, keys, vals);
    return ok;
}

static void test_rows(dmn *d)
{
    gs_client *c = conn(d);
    char why[600];
    gs_client_result res;
    for (int m = 0; m < 2; m++) {
        static const struct { gs_dtype t; gs_payload p; int desc; } sh[] = {
            { GS_DT_U32, GS_PL_NONE, 0 }, { GS_DT_F64, GS_PL_IDX32, 1 },
            { GS_DT_I32, GS_PL_U64, 0 }, { GS_DT_F32, GS_PL_IDX64, 1 },
        };
        for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
            memset(&res, 0, sizeof res);
            int ok = rows_ok(c, sh[i].t, sh[i].p, sh[i].desc, 257, 61, NULL, m, why,
                             sizeof why, &res);
            tap_ok(ok && res.device < 0, "257 rows of 61 %s keys, values %s, %s, %s, the "
                   "daemon's choice: each row sorted on its own, on the host (%s)",
                   gs_dtype_name(sh[i].t), gs_payload_name(sh[i].p), sh[i].desc ? "desc" : "asc",
                   m ? "memfd" : "inline", why);
        }
    }
    memset(&res, 0, sizeof res);
    int ok = rows_ok(c, GS_DT_U32, GS_PL_IDX32, 0, 3, 5000, "radix", 1, why, sizeof why, &res);
    tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, "radix"),
           "3 rows of 5000 u32 keys with their indices, radix named: on a device, each row "
           "sorted (%s)", why);
    /* rows that do not divide n: an error, and the connection still serves */
    uint32_t k[10] = { 0 };
    gs_client_sort bad = { .shape = { .dtype = GS_DT_U32, .rows = 3 }, .n = 10, .keys = k,
                           .device = -1 };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_client_sort_run(c, &bad, NULL, &err);
    char pw[300] = "";
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "\"rows\" 3 does not divide \"n\" 10") &&
           ping(c, pw, sizeof pw), "3 rows of 10 keys refused, connection kept (%s)", err.msg);
    gs_client_close(c);
}

/* ---- segments (issue 38): segments of any lengths, each sorted on its own ---- */

/* The segments' keys, values and offsets: in one memfd (values and offsets
 * 8-aligned after the keys) or on the heap. `off` is copied in. */
static int segs_ok(gs_client *c, gs_dtype t, gs_payload p, int desc, const uint64_t *off,
                   size_t S, const char *algo, int dev, int memfd, char *why, size_t wl,
                   gs_client_result *res)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p), n = (size_t)off[S];
    size_t voff = (n * ks + 7) & ~(size_t)7, ooff = (voff + n * vs + 7) & ~(size_t)7;
    gs_client_shm shm = { -1, NULL, 0 };
    char *keys, *vals;
    uint64_t *o;
    gs_err err;
    gs_err_clear(&err);
    if (memfd) {
        if (gs_client_shm_alloc(&shm, ooff + 8 * (S + 1), &err) < 0)
            tap_bail("shm: %s", err.msg);
        keys = shm.ptr;
        vals = keys + voff;
        o = (uint64_t *)(void *)(keys + ooff);
    } else {
        keys = malloc(n * ks + 1);
        vals = malloc(n * vs + 1);
        o = malloc(8 * (S + 1));
        if (!keys || !vals || !o)
            tap_bail("out of memory");
    }
    memcpy(o, off, 8 * (S + 1));
    sc_case *cs = sc_segs_init(t, p, desc, off, S, SC_RANDOM, 78, keys, vals);
    gs_client_sort s = { .shape = { .dtype = t, .payload = p, .descending = desc,
                                    .stable = 1, .segments = S },
                         .n = n, .keys = keys, .values = vs ? vals : NULL, .offsets = o,
                         .algorithm = algo, .device = dev, .shm = memfd ? &shm : NULL };
    int ok = gs_client_sort_run(c, &s, res, &err) == 0;
    if (!ok)
        snprintf(why, wl, "%s: %.400s", gs_strerror(err.code), err.msg);
    ok = sc_segs_verify(cs, off, S, 1, keys, vals, ok, why, wl);
    if (ok)
        say_route(why, wl, res);
    if (memfd) {
        gs_client_shm_free(&shm);
    } else {
        free(keys);
        free(vals);
        free(o);
    }
    return ok;
}

/* A hostile client: rewrites one offset, valid and not, while its sorts run. */
typedef struct flipper {
    volatile uint64_t *at;
    atomic_int stop;
} flipper;

static void *flip_main(void *arg)
{
    flipper *f = arg;
    for (uint64_t i = 0; !atomic_load(&f->stop); i++)
        *f->at = i % 2 ? 4 : 1000000;
    return NULL;
}

static void test_segments(dmn *d)
{
    gs_client *c = conn(d);
    char why[600];
    gs_client_result res;
    /* 120 segments of 0 to 90 keys: empty and one-key ones among them */
    enum { NS = 120 };
    uint64_t off[NS + 1] = { 0 };
    for (size_t i = 0; i < NS; i++)
        off[i + 1] = off[i] + (i % 7 == 3 ? 0 : i % 11 == 5 ? 1 : (i * 37) % 91);
    for (int m = 0; m < 2; m++) {
        static const struct { gs_dtype t; gs_payload p; int desc; } sh[] = {
            { GS_DT_U32, GS_PL_NONE, 0 }, { GS_DT_F64, GS_PL_IDX32, 1 },
            { GS_DT_I32, GS_PL_U64, 0 }, { GS_DT_F32, GS_PL_IDX64, 1 },
            { GS_DT_U64, GS_PL_U32, 1 },
        };
        for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
            memset(&res, 0, sizeof res);
            int ok = segs_ok(c, sh[i].t, sh[i].p, sh[i].desc, off, NS, NULL, -1, m, why,
                             sizeof why, &res);
            tap_ok(ok && res.device < 0, "%d segments of 0-90 %s keys (%llu), values %s, %s, "
                   "%s, the daemon's choice: each sorted on its own, on the host (%s)", NS,
                   gs_dtype_name(sh[i].t), (unsigned long long)off[NS],
                   gs_payload_name(sh[i].p), sh[i].desc ? "desc" : "asc",
                   m ? "memfd" : "inline", why);
        }
    }
    static const uint64_t three[] = { 0, 4000, 4000, 5001 };
    memset(&res, 0, sizeof res);
    int ok = segs_ok(c, GS_DT_U32, GS_PL_IDX32, 0, three, 3, "radix", -1, 1, why, sizeof why,
                     &res);
    tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, "radix"),
           "segments of 4000, 0 and 1001 u32 keys with their indices, radix named: on a "
           "device, each sorted (%s)", why);
    /* a device named: bitonic takes every segment in one launch where the
     * longest fits a work-group; else the device's own choice, segment by
     * segment */
    for (int m = 0; m < 2; m++) {
        memset(&res, 0, sizeof res);
        ok = segs_ok(c, m ? GS_DT_F64 : GS_DT_U32, m ? GS_PL_IDX32 : GS_PL_NONE, m, off, NS,
                     NULL, 0, m, why, sizeof why, &res);
        tap_ok(ok && res.device == 0 && !strcmp(res.algorithm, "bitonic"),
               "%d segments of 0-90 %s keys, device 0 named: bitonic, each sorted (%s)", NS,
               m ? "f64 keys with indices" : "u32", why);
    }
    static const uint64_t wide[] = { 0, 20000, 20001, 20100 };
    memset(&res, 0, sizeof res);
    ok = segs_ok(c, GS_DT_U32, GS_PL_U32, 1, wide, 3, NULL, 0, 1, why, sizeof why, &res);
    tap_ok(ok && strcmp(res.algorithm, "bitonic"),
           "segments of 20000, 1 and 99 u32 keys with values, device 0 named: too long for "
           "bitonic, the device's plan's choice (%s)", why);

    /* offsets that lie: an error, nothing sorted, the connection still serves */
    uint32_t k[10] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 };
    uint64_t lie[4] = { 0, 6, 5, 10 };
    gs_client_sort bad = { .shape = { .dtype = GS_DT_U32, .segments = 3 }, .n = 10, .keys = k,
                           .offsets = lie, .device = -1 };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_client_sort_run(c, &bad, NULL, &err);
    char pw[300] = "";
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "offsets[2] = 5 after offsets[1] = 6") &&
           k[0] == 9 && ping(c, pw, sizeof pw),
           "decreasing offsets inline refused, connection kept (%s)", err.msg);
    gs_client_shm shm = { -1, NULL, 0 };
    if (gs_client_shm_alloc(&shm, 4096, &err) < 0)
        tap_bail("shm: %s", err.msg);
    uint32_t *mk = shm.ptr;
    uint64_t *mo = (uint64_t *)(void *)((char *)shm.ptr + 64);
    for (int i = 0; i < 10; i++)
        mk[i] = (uint32_t)(9 - i);
    mo[0] = 0;
    mo[1] = 4;
    mo[2] = 11;     /* past n */
    gs_client_sort badm = { .shape = { .dtype = GS_DT_U32, .segments = 2 }, .n = 10, .keys = mk,
                            .offsets = mo, .device = -1, .shm = &shm };
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &badm, NULL, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "offsets[2] = 11) must be n = 10") &&
           mk[0] == 9 && ping(c, pw, sizeof pw),
           "offsets past n in a memfd refused, keys untouched, connection kept (%s)", err.msg);
    mo[0] = 3;
    mo[2] = 10;
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &badm, NULL, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "must start at 0, not 3") && ping(c, pw, sizeof pw),
           "offsets from 3 in a memfd refused, connection kept (%s)", err.msg);
    mo[0] = 0;
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &badm, NULL, &err);
    tap_ok(rc == 0 && mk[0] == 6 && mk[3] == 9 && mk[4] == 0 && mk[9] == 5,
           "the same memfd with good offsets: [6 7 8 9 | 0 .. 5] (%s)", err.msg);
    /* offsets rewritten during the sorts: each answered sorted by the offsets
     * it was checked with (4: two segments) or refused, never a crash */
    flipper f = { .at = &mo[1] };
    atomic_init(&f.stop, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, flip_main, &f))
        tap_bail("pthread_create failed");
    int okc = 0, refc = 0, other = 0;
    for (int it = 0; it < 300; it++) {
        for (int i = 0; i < 10; i++)
            mk[i] = (uint32_t)(9 - i);
        gs_err_clear(&err);
        rc = gs_client_sort_run(c, &badm, NULL, &err);
        if (rc == 0 && mk[0] == 6 && mk[3] == 9 && mk[4] == 0 && mk[9] == 5)
            okc++;
        else if (rc == GS_EINVAL && strstr(err.msg, "offsets decrease"))
            refc++;
        else
            other++;
    }
    atomic_store(&f.stop, 1);
    pthread_join(th, NULL);
    tap_ok(other == 0 && okc + refc == 300 && ping(c, pw, sizeof pw),
           "offsets rewritten during 300 sorts: %d sorted by the offsets checked, %d refused, "
           "%d otherwise (%s); the daemon still serves", okc, refc, other, err.msg);
    gs_client_shm_free(&shm);
    /* rows and segments together: refused by the daemon */
    bad.shape.rows = 2;
    bad.shape.segments = 1;
    lie[1] = 10;
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &bad, NULL, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "\"segments\" and \"rows\" together") &&
           ping(c, pw, sizeof pw), "segments with rows refused, connection kept (%s)", err.msg);
    gs_client_close(c);
}

/* Top-k (issue 38) of `rows` rows of len through the daemon: each row's
 * first k exactly as the stable reference lists them, packed row after row
 * inline, in each row's first k places in a memfd. */
static int topk_ok(gs_client *c, gs_dtype t, gs_payload p, int desc, size_t rows, size_t len,
                   size_t k, const char *algo, int device, int memfd, int dist, char *why,
                   size_t wl, gs_client_result *res)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p), n = rows * len;
    gs_client_shm shm = { -1, NULL, 0 };
    char *keys, *vals;
    gs_err err;
    gs_err_clear(&err);
    arrays_get(memfd, n, ks, vs, &shm, &keys, &vals);
    sc_case *cs = sc_rows_init(t, p, desc, rows, len, dist, 91, keys, vals);
    gs_client_sort s = { .shape = { .dtype = t, .payload = p, .descending = desc,
                                    .rows = rows > 1 ? rows : 0, .topk = 1, .k = k },
                         .n = n, .keys = keys, .values = vs ? vals : NULL, .algorithm = algo,
                         .device = device, .shm = memfd ? &shm : NULL };
    int ok = gs_client_sort_run(c, &s, res, &err) == 0;
    if (!ok)
        snprintf(why, wl, "%s: %.400s", gs_strerror(err.code), err.msg);
    for (size_t r = 0; r < rows; r++) {
        size_t at = memfd ? r * len : r * k;
        for (size_t i = 0; ok && i < k; i++)
            if (gs_key_get(keys, at + i, ks) != gs_key_get(cs[r].ref_keys, i, ks) ||
                (vs && gs_key_get(vals, at + i, vs) != gs_key_get(cs[r].ref_vals, i, vs))) {
                snprintf(why, wl, "row %zu place %zu: key %#llx, the stable sort's %#llx", r, i,
                         (unsigned long long)gs_key_get(keys, at + i, ks),
                         (unsigned long long)gs_key_get(cs[r].ref_keys, i, ks));
                ok = 0;
            }
        sc_case_free(&cs[r]);
    }
    free(cs);
    if (ok)
        say_route(why, wl, res);
    arrays_put(memfd, &shm, keys, vals);
    return ok;
}

static void test_topk(dmn *d)
{
    gs_client *c = conn(d);
    char why[600];
    gs_client_result res;
    static const struct { gs_dtype t; gs_payload p; int desc; size_t rows, len, k; int dist; }
        sh[] = {
            { GS_DT_U32, GS_PL_NONE, 1, 1, 100000, 1000, SC_RANDOM },
            { GS_DT_F64, GS_PL_IDX32, 1, 1, 5000, 7, SC_NANMIX },
            { GS_DT_I32, GS_PL_U64, 0, 257, 61, 5, SC_FEW16 },
            { GS_DT_F32, GS_PL_IDX64, 0, 40, 300, 300, SC_FSPECIAL },
            { GS_DT_U64, GS_PL_U32, 1, 3, 1000, 0, SC_RANDOM },
        };
    for (int m = 0; m < 2; m++)
        for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
            memset(&res, 0, sizeof res);
            int ok = topk_ok(c, sh[i].t, sh[i].p, sh[i].desc, sh[i].rows, sh[i].len, sh[i].k,
                             NULL, -1, m, sh[i].dist, why, sizeof why, &res);
            tap_ok(ok && res.device < 0 && !strcmp(res.algorithm, "host"),
                   "top %zu of %zu rows of %zu %s keys (%s), values %s, %s, %s: the stable "
                   "sort's first k, from the host's select (%s)", sh[i].k, sh[i].rows,
                   sh[i].len, gs_dtype_name(sh[i].t), sc_dist_name(sh[i].dist),
                   gs_payload_name(sh[i].p), sh[i].desc ? "largest" : "smallest",
                   m ? "memfd" : "inline", why);
        }
    memset(&res, 0, sizeof res);
    int ok = topk_ok(c, GS_DT_U32, GS_PL_IDX32, 0, 2, 5000, 10, "radix", -1, 1, SC_FEW16, why,
                     sizeof why, &res);
    tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, "radix"),
           "top 10 of 2 rows of 5000 with radix named: the device sorts them whole, the "
           "first k the answer (%s)", why);
    /* a device named, no algorithm: that device's select (algo_select.c) */
    for (int m = 0; m < 2; m++) {
        memset(&res, 0, sizeof res);
        ok = topk_ok(c, GS_DT_F32, GS_PL_IDX64, m, 3, 5000, 10, NULL, 0, m, SC_FSPECIAL, why,
                     sizeof why, &res);
        tap_ok(ok && res.device == 0 && !strcmp(res.algorithm, "select"),
               "top 10 of 3 rows of 5000 f32 on device 0, %s: its select (%s)",
               m ? "memfd" : "inline", why);
    }
    /* a k above the select's 2048: the device's own sort, whole */
    memset(&res, 0, sizeof res);
    ok = topk_ok(c, GS_DT_U32, GS_PL_NONE, 0, 1, 20000, 3000, NULL, 0, 1, SC_RANDOM, why,
                 sizeof why, &res);
    tap_ok(ok && strcmp(res.algorithm, "select"),
           "top 3000 of 20000 on device 0: above the select's k, the device's own plan (%s)",
           why);
    /* k past the row: an error, and the connection still serves */
    uint32_t k[10] = { 0 };
    gs_client_sort bad = { .shape = { .dtype = GS_DT_U32, .rows = 2, .topk = 1, .k = 6 },
                           .n = 10, .keys = k, .device = -1 };
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_client_sort_run(c, &bad, NULL, &err);
    char pw[300] = "";
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "\"topk\" 6 exceeds the 5 keys of a row") &&
           ping(c, pw, sizeof pw), "top 6 of rows of 5 refused, connection kept (%s)",
           err.msg);
    gs_client_close(c);
}

/* ---- device routes ---- */

/* The reply accounts for its total (issue 36): five spans of one clock
 * that follow each other, and on a device the run's steps within the run
 * (each printed to the nanosecond, so the sums agree to a few of them). */
static void spans_ok(const gs_client_result *res, const char *what)
{
    const gs_reply_times *t = &res->times;
    double spans = t->receive + t->admit + t->queue + t->run + t->handback;
    double steps = t->setup + t->enqueue + t->wait + t->writeback + t->release;
    int each = t->receive >= 0 && t->admit >= 0 && t->queue >= 0 && t->run > 0 &&
               t->handback >= 0 && t->setup >= 0 && t->enqueue >= 0 && t->wait >= 0 &&
               t->writeback >= 0 && t->release >= 0;
    int dev = res->device >= 0 ? steps > 0 && t->wait > 0 && steps <= t->run + 1e-5
                               : steps == 0 && t->sort <= t->run + 1e-5;
    tap_ok(each && fabs(spans - t->total) < 1e-5 && dev,
           "%s: total %.6f ms = receive %.6f + admit %.6f + queue %.6f + run %.6f + handback "
           "%.6f (sum %.6f); %s %.6f within the run", what, t->total, t->receive, t->admit,
           t->queue, t->run, t->handback, spans, res->device >= 0 ? "device steps" : "sort",
           res->device >= 0 ? steps : t->sort);
}

static void test_devices(dmn *d)
{
    gs_client *c = conn(d);
    static const char *const algos[] = { "radix", "mergepath" };
    for (int a = 0; a < 2; a++)
        for (int m = 0; m < 2; m++) {
            char why[600] = "";
            gs_client_result res;
            memset(&res, 0, sizeof res);
            double t0 = gs_now_s();
            /* Same dtype, values and order for both modes: one compile each. */
            int ok = sort_ok(c, GS_DT_U32, GS_PL_U32, 0, 60000 + (size_t)m * 1001, 40 + a * 2 + m,
                             algos[a], m, why, sizeof why, &res);
            tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, algos[a]) &&
                   !res.fallback[0],
                   "%s on a device, %s: device %d (%s), params '%s', plan '%s', fallback '%s', "
                   "%.1f s: %s", algos[a], m ? "memfd" : "inline", res.device, res.device_name,
                   res.params, res.plan, res.fallback, gs_now_s() - t0, why);
            spans_ok(&res, algos[a]);
        }
    gs_client_result res;
    memset(&res, 0, sizeof res);
    char why[600] = "";
    tap_ok(sort_ok(c, GS_DT_F32, GS_PL_NONE, 0, 30000, 46, "host", 1, why, sizeof why, &res) &&
           res.device < 0, "the host sort, memfd: %s", why);
    spans_ok(&res, "host");
    gs_client_close(c);
}

/* ---- concurrency ---- */

#define NTHREADS 32
#define PER_THREAD 4

typedef struct worker {
    const dmn *d;
    rt r[PER_THREAD];
    int conn_failed;
    pthread_t th;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    gs_client *c = conn(w->d);
    if (!c) {
        w->conn_failed = 1;
        return NULL;
    }
    for (int i = 0; i < PER_THREAD; i++)
        rt_run(&w->r[i], c);
    gs_client_close(c);
    return NULL;
}

static void test_concurrent(dmn *d)
{
    static worker w[NTHREADS];
    static const size_t sizes[] = { 0, 1, 100, 5000, 40000, 3 };
    memset(w, 0, sizeof w);
    for (int t = 0; t < NTHREADS; t++) {
        w[t].d = d;
        for (int i = 0; i < PER_THREAD; i++) {
            int dev = (t == 3 || t == 17) && i == 1;   /* two device requests in the mix */
            gs_dtype dt = dev ? GS_DT_U32 : (gs_dtype)((t + i) % GS_DT_COUNT);
            gs_payload pl = dev ? GS_PL_U32 : (gs_payload)((t * 3 + i) % GS_PL_COUNT);
            size_t n = dev ? 30000 : sizes[(size_t)(t + i * 7) % 6];
            if (rt_init(&w[t].r[i], dt, pl, dev ? 0 : (t + i) % 2, n,
                        (uint64_t)(1000 + t * 10 + i), dev ? "radix" : "host", (t + i) % 2,
                        0))
                tap_bail("cannot build the concurrent cases");
        }
    }
    double t0 = gs_now_s();
    for (int t = 0; t < NTHREADS; t++)
        if (pthread_create(&w[t].th, NULL, worker_main, &w[t]))
            tap_bail("pthread_create failed");
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(w[t].th, NULL);
    int bad = 0, conn_bad = 0;
    for (int t = 0; t < NTHREADS; t++) {
        conn_bad += w[t].conn_failed;
        for (int i = 0; i < PER_THREAD; i++) {
            char why[600], lab[128];
            if (!w[t].conn_failed && !rt_check(&w[t].r[i], why, sizeof why)) {
                if (bad++ < 8)
                    tap_diag("thread %d request %d (%s): %s", t, i,
                             rt_label(&w[t].r[i], lab, sizeof lab), why);
            }
            rt_free(&w[t].r[i]);
        }
    }
    tap_ok(bad == 0 && conn_bad == 0, "%d concurrent clients x %d mixed requests: %d wrong, "
           "%d could not connect (%.1f s)", NTHREADS, PER_THREAD, bad, conn_bad,
           gs_now_s() - t0);
    /* The main daemon runs io_threads = 3: the clients were spread over
     * every loop, each serving its share to the end. */
    int per[3];
    for (int k = 0; k < 3; k++) {
        char needle[32];
        snprintf(needle, sizeof needle, "(I/O loop %d)", k);
        per[k] = dmn_log_count(d, needle);
    }
    tap_ok(per[0] >= NTHREADS / 4 && per[1] >= NTHREADS / 4 && per[2] >= NTHREADS / 4,
           "the clients were spread over the 3 I/O loops (%d, %d, %d so far)", per[0], per[1],
           per[2]);
}

/* ---- bad input ---- */

static cJSON *parse(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    if (!j)
        tap_bail("test bug: bad JSON %s", text);
    return j;
}

/* Send header text (a JSON object) with a payload and/or descriptor through the client. */
static int send_obj(gs_client *c, const char *text, const void *pl, size_t len, int fd)
{
    cJSON *h = parse(text);
    gs_err err;
    gs_err_clear(&err);
    int rc = c ? gs_client_send(c, h, pl, len, fd, &err) : GS_EIO;
    if (rc)
        tap_diag("send %s: %s", text, err.msg);
    cJSON_Delete(h);
    return rc;
}

static int count_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

/* Lexsort (issue 39) through the daemon: a good request inline and in a
 * memfd, headers that break the lexsort's rules refused with the
 * connection kept, and a client that rewrites its keys while they are
 * packed: every answer is a permutation (the keys are read, never
 * trusted), the daemon keeps serving. */
static void *lexflip_main(void *arg)
{
    flipper *f = arg;
    for (uint64_t i = 0; !atomic_load(&f->stop); i++)
        f->at[i % 4096] = i * 0x9e3779b97f4a7c15ull;
    return NULL;
}

static int is_perm(const uint32_t *idx, size_t n)
{
    static uint8_t seen[1 << 16];
    if (n > sizeof seen)
        return 0;
    memset(seen, 0, n);
    for (size_t i = 0; i < n; i++) {
        if (idx[i] >= n || seen[idx[i]])
            return 0;
        seen[idx[i]] = 1;
    }
    return 1;
}

/* Each header (with payload_bytes of zeros) on a connection of its own:
 * answered with its error code and a message holding needle, the
 * connection kept. */
typedef struct bad_hdr { const char *hdr, *code, *needle; } bad_hdr;
static void bad_headers(dmn *d, const bad_hdr *bad, size_t nbad, const char *what)
{
    static uint8_t pl[64];
    for (size_t b = 0; b < nbad; b++) {
        gs_client *e = conn(d);
        const char *pb = strstr(bad[b].hdr, "\"payload_bytes\":");
        size_t plen = pb ? strtoul(pb + 16, NULL, 10) : 0;
        send_obj(e, bad[b].hdr, pl, plen, -1);
        char label[120];
        snprintf(label, sizeof label, "bad %s header %zu", what, b);
        expect_error(e, bad[b].code, bad[b].needle, 1, label);
        gs_client_close(e);
    }
}

/* 60 sorts of s (indices into idx) while a writer rewrites the words at
 * `at`: how many were answered with a permutation (*perms) and otherwise
 * (*other, err the last error). */
static void raced_sorts(gs_client *c, const gs_client_sort *s, volatile uint64_t *at,
                        const uint32_t *idx, size_t n, int *perms, int *other, gs_err *err)
{
    flipper f = { .at = at };
    atomic_init(&f.stop, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, lexflip_main, &f))
        tap_bail("pthread_create failed");
    *perms = *other = 0;
    for (int it = 0; it < 60; it++) {
        gs_err_clear(err);
        int rc = gs_client_sort_run(c, s, NULL, err);
        if (rc == 0 && is_perm(idx, n))
            ++*perms;
        else
            ++*other;
    }
    atomic_store(&f.stop, 1);
    pthread_join(th, NULL);
}

/* f16 keys in rows, as top-k and in segments, rewritten in the memfd
 * while the daemon encodes, sorts and decodes them (issue 32's rule for
 * issue 39's parts): every answer's indices stay inside their row or
 * segment (its keys may be anything), or the request is refused; then the
 * daemon still answers. */
static void raced_parts(gs_client *c, gs_client_shm *shm, size_t n)
{
    uint32_t *ix = (uint32_t *)(void *)((char *)shm->ptr + 2 * n);
    /* the segments' offsets in the memfd too, after the indices (n is a
     * multiple of 4) */
    uint64_t *off = (uint64_t *)(void *)((char *)shm->ptr + 6 * n);
    const size_t parts = 20, len = n / parts, k = 50;
    for (size_t q = 0; q <= parts; q++)
        off[q] = q == parts ? n : q * len - (q % 3 == 1 ? 7 : 0);
    int inb = 0, refused = 0, stray = 0;
    char why[200] = "";
    for (int v = 0; v < 3; v++) {
        gs_client_sort s = { .shape = { .payload = GS_PL_IDX32, .descending = v == 1,
                                        .rows = v == 2 ? 0 : parts, .segments = v == 2 ? parts : 0,
                                        .topk = v == 1, .k = v == 1 ? k : 0 },
                             .n = n, .keys = shm->ptr, .values = ix,
                             .offsets = v == 2 ? off : NULL, .device = -1, .shm = shm,
                             .narrow = GS_NW_F16 };
        flipper f = { .at = (volatile uint64_t *)shm->ptr };
        atomic_init(&f.stop, 0);
        pthread_t th;
        if (pthread_create(&th, NULL, lexflip_main, &f))
            tap_bail("pthread_create failed");
        for (int it = 0; it < 40; it++) {
            gs_err err;
            gs_err_clear(&err);
            if (gs_client_sort_run(c, &s, NULL, &err) != 0) {
                refused++;
                snprintf(why, sizeof why, "%.190s", err.msg);
                continue;
            }
            int ok = 1;
            for (size_t q = 0; q < parts && ok; q++) {
                size_t lo = v == 2 ? off[q] : q * len, hi = v == 2 ? off[q + 1] : lo + len;
                size_t m = v == 1 ? k : hi - lo, at = lo;   /* top-k: each row's first k */
                for (size_t i = 0; i < m && ok; i++)
                    ok = ix[at + i] < hi - lo;
            }
            ok ? inb++ : stray++;
        }
        atomic_store(&f.stop, 1);
        pthread_join(th, NULL);
    }
    char pw[300];
    tap_ok(stray == 0 && inb + refused == 120 && ping(c, pw, sizeof pw),
           "f16 keys rewritten during 40 sorts each of rows, top-k and segments: %d answered "
           "with every index inside its row or segment, %d refused%s%s, none stray; the "
           "daemon serves on", inb, refused, refused ? ": " : "", why);
}

static void test_lexsort(dmn *d)
{
    gs_client *c = conn(d);
    char pw[300];
    gs_err err;
    enum { N = 30000 };
    gs_client_shm shm = { -1, NULL, 0 };
    if (gs_client_shm_alloc(&shm, 8 * N * 3 + 4 * N, &err) < 0)
        tap_bail("shm: %s", err.msg);
    /* u64, u32 (8-aligned after it), i8: 64 + 32 + 8 bits, two words */
    gs_lex lx = { .nkeys = 3, .key = { { GS_LX_U64, 0, 0 }, { GS_LX_U32, 1, 0 },
                                       { GS_LX_I8, 0, 0 } } };
    uint64_t lb;
    gs_lex_layout(&lx, N, &lb, &err);
    char *base = shm.ptr;
    uint64_t *ka = (uint64_t *)(void *)base;
    uint32_t *kb = (uint32_t *)(void *)(base + lx.key[1].offset);
    int8_t *kc = (int8_t *)(base + lx.key[2].offset);
    uint32_t *idx = (uint32_t *)(void *)(base + lb);
    for (size_t i = 0; i < N; i++) {
        ka[i] = (i * 7) % 11;
        kb[i] = (uint32_t)((i * 13) % 17);
        kc[i] = (int8_t)((int)(i % 5) - 2);
    }
    gs_client_sort s = { .shape = { .dtype = GS_DT_U64, .payload = GS_PL_IDX32 }, .n = N,
                         .keys = base, .values = idx, .device = -1, .shm = &shm, .lex = &lx };
    for (int inl = 0; inl < 2; inl++) {
        static uint32_t out[N];
        s.shm = inl ? NULL : &shm;
        s.values = inl ? out : idx;
        gs_client_result res;
        gs_err_clear(&err);
        int rc = gs_client_sort_run(c, &s, &res, &err);
        const uint32_t *o = inl ? out : idx;
        int ok = rc == 0 && is_perm(o, N);
        for (size_t i = 1; ok && i < N; i++) {
            uint32_t x = o[i - 1], y = o[i];
            int cmp = ka[x] != ka[y] ? (ka[x] < ka[y] ? -1 : 1)
                    : kb[x] != kb[y] ? (kb[x] > kb[y] ? -1 : 1)     /* descending */
                    : kc[x] != kc[y] ? (kc[x] < kc[y] ? -1 : 1) : (x < y ? -1 : 1);
            ok = cmp < 0;
        }
        tap_ok(ok && res.times.pack > 0, "lexsort of %d rows by u64, u32 (desc), i8 %s: in "
               "order, ties by row (rc %d %s, pack %.3f ms)", N, inl ? "inline" : "in a memfd",
               rc, rc ? err.msg : res.algorithm, res.times.pack);
    }
    static const bad_hdr bad[] = {
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"dtype\":\"u32\","
          "\"lexsort\":[{\"dtype\":\"u32\"}],\"payload_bytes\":16}", "GS_EINVAL", "each key has its own" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"lexsort\":[{\"dtype\":\"u32\"}],"
          "\"payload_bytes\":16}", "GS_EINVAL", "answers indices" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"lexsort\":[],"
          "\"payload_bytes\":0}", "GS_EINVAL", "1 to 8 keys" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"lexsort\":[{\"dtype\":"
          "\"u128\"}],\"payload_bytes\":16}", "GS_EINVAL", "u128" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"lexsort\":[{\"dtype\":"
          "\"u32\",\"order\":\"up\"}],\"payload_bytes\":16}", "GS_EINVAL", "\"up\"" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"lexsort\":[{\"dtype\":"
          "\"u32\",\"bits\":3}],\"payload_bytes\":16}", "GS_EINVAL", "unknown field" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"order\":\"desc\","
          "\"lexsort\":[{\"dtype\":\"u32\"}],\"payload_bytes\":16}", "GS_EINVAL", "\"order\" does not go" },
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"rows\":2,"
          "\"lexsort\":[{\"dtype\":\"u32\"}],\"payload_bytes\":16}", "GS_EINVAL", "\"rows\" does not go" },
        /* u8 then u32: 4 bytes padded to 8, then 16: 24 bytes, not 20 */
        { "{\"v\":1,\"op\":\"sort\",\"n\":4,\"values\":\"idx32\",\"lexsort\":[{\"dtype\":"
          "\"u8\"},{\"dtype\":\"u32\"}],\"payload_bytes\":20}", "GS_EINVAL", "payload_bytes 24" },
    };
    bad_headers(d, bad, sizeof bad / sizeof bad[0], "lexsort");
    tap_ok(ping(c, pw, sizeof pw), "the bad lexsort headers leave other clients served (%s)",
           pw);
    /* keys rewritten while the daemon packs them */
    int perms, other;
    s.shm = &shm;
    s.values = idx;
    raced_sorts(c, &s, (volatile uint64_t *)ka, idx, N, &perms, &other, &err);
    tap_ok(other == 0 && ping(c, pw, sizeof pw), "keys rewritten during 60 lexsorts: %d "
           "answered with a permutation of the rows, %d otherwise (%s); the daemon serves on",
           perms, other, err.msg);
    gs_client_shm_free(&shm);
    gs_client_close(c);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* 8- and 16-bit keys (gs_narrow.h): every type, in a memfd and inline,
 * both orders, with indices (stable: ties by index) and with u64 values;
 * floats with NaNs of several patterns and both zeros. The answer: the
 * keys in the encoding's order (its order is checked against the formats
 * in test_narrow), each key the input's at its index, the values moved
 * with their keys. Then keys rewritten during 60 sorts in a memfd. */
/* Parts of narrow keys: code of key i for qsort's stable order */
static const uint32_t *g_pcode;
static int pcode_cmp(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t x = g_pcode[a], y = g_pcode[b];
    return x != y ? (x < y ? -1 : 1) : (a > b) - (a < b);
}

/* f16 keys with NaN patterns in rows (memfd, indices) and in segments
 * (inline, u64 values; keys alone), and the top 300 of each row (inline:
 * packed row after row; memfd: in each row's first places): each part
 * against its stable order by code, the NaNs' bits in input order,
 * indices counted from the part. */
static void narrow_parts(gs_client *c, gs_client_shm *shm)
{
    enum { PN = 12000 };
    static uint16_t kin[PN], kout[PN];
    static uint32_t code[PN], ord[PN];
    static uint64_t off[41], vin[PN], vout[PN];
    static const uint16_t nanp[] = { 0x7e00, 0x7c01, 0xfe00, 0x7fff, 0xfc01 };
    unsigned bad = 0, runs = 0;
    char first[300] = "";
    for (int v = 0; v < 8; v++) {
        const int topk = v >= 6, seg = !topk && (v & 1), desc = v >> 1 & 1;
        const int keys_only = v == 4 || v == 5, memfd = topk ? v == 7 : !seg;
        const size_t parts = seg ? 40 : 30, k = topk ? 300 : 0;
        for (size_t i = 0; i < PN; i++) {
            uint16_t key = (uint16_t)((i * 2654435761u) >> 9);
            if (i % 11 == 0)
                key = nanp[i % 5];
            else if (i % 4 == 0)
                key = (uint16_t)(0x3c00 + i % 3);    /* ties */
            kin[i] = key;
            code[i] = gs_narrow_enc(GS_NW_F16, desc, key);
            vin[i] = i * 0x9e3779b97f4a7c15ull;
        }
        off[0] = 0;
        for (size_t q = 1; q <= parts; q++)
            off[q] = seg ? (q == parts ? PN : off[q - 1] + (q % 7 == 0 ? 0 : PN / parts + q % 5))
                         : q * (PN / parts);
        uint16_t *keys = memfd ? shm->ptr : kout;
        uint32_t *ix = (uint32_t *)(void *)((char *)shm->ptr + 2 * PN);
        memcpy(keys, kin, sizeof kin);
        memcpy(vout, vin, sizeof vin);
        if (!memfd)
            ix = (uint32_t *)(void *)vout;      /* indices inline: into the reply's place */
        gs_client_sort s = { .shape = { .payload = keys_only ? GS_PL_NONE : seg ? GS_PL_U64
                                                                            : GS_PL_IDX32,
                                        .descending = desc, .stable = 1,
                                        .rows = seg ? 0 : parts, .segments = seg ? parts : 0,
                                        .topk = topk, .k = k },
                             .n = PN, .keys = keys, .values = seg ? (void *)vout : ix,
                             .offsets = seg ? off : NULL, .device = -1,
                             .shm = memfd ? shm : NULL, .narrow = GS_NW_F16 };
        gs_err err;
        gs_err_clear(&err);
        int rc = gs_client_sort_run(c, &s, NULL, &err), ok = rc == 0;
        for (size_t q = 0; ok && q < parts; q++) {
            const size_t lo = off[q], hi = off[q + 1];
            for (size_t i = lo; i < hi; i++)
                ord[i - lo] = (uint32_t)i;
            g_pcode = code;
            qsort(ord, hi - lo, sizeof *ord, pcode_cmp);
            /* top-k: the first k places of the row, packed inline */
            const size_t end = topk ? lo + k : hi, shift = topk && !memfd ? lo - q * k : 0;
            for (size_t i = lo; ok && i < end; i++) {
                const uint32_t j = ord[i - lo];
                const size_t at = i - shift;
                ok = keys[at] == kin[j] &&
                     (keys_only || (seg ? vout[at] == vin[j] : ix[at] == j - lo));
                if (!ok && !bad)
                    snprintf(first, sizeof first, " (first wrong: %s %s %s %s, part %zu place "
                             "%zu: key 0x%04x, want 0x%04x; rc %d %.100s)",
                             topk ? "top-k" : seg ? "segments" : "rows", memfd ? "memfd" : "inline",
                             desc ? "desc" : "asc", keys_only ? "keys alone" : "payload", q, i,
                             keys[at], kin[j], rc, err.msg);
            }
        }
        runs++;
        bad += !ok;
    }
    tap_ok(bad == 0, "f16 keys with NaN patterns in 30 rows (memfd, indices) and 40 segments "
           "(inline, u64 values), keys alone too, both orders; the top 300 of 30 rows inline "
           "and in a memfd: %u of %u right, each part on its own%s", runs - bad, runs, first);
}

static void test_narrow_keys(dmn *d)
{
    gs_client *c = conn(d);
    char pw[300];
    gs_err err;
    enum { N = 20000 };
    gs_client_shm shm = { -1, NULL, 0 };
    if (gs_client_shm_alloc(&shm, 2 * N + 8 * N + 64, &err) < 0)
        tap_bail("shm: %s", err.msg);
    static const uint16_t specials[] = { 0x0000, 0x8000, 0x7e00, 0x7c01, 0xfe00, 0x7fc0,
                                         0x7f81, 0xffc1, 0x7c00, 0xfc00, 0x7f80, 0xff80 };
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++) {
        const gs_narrow_info *r = gs_narrow_row(t);
        unsigned bad = 0, runs = 0;
        char first[300] = "";
        for (int v = 0; v < 8; v++) {
            int inl = v & 1, desc = v >> 1 & 1, idx = !(v >> 2 & 1);
            unsigned char *keys = shm.ptr;
            size_t voff = (N * r->bytes + 7) / 8 * 8;
            void *vals = (char *)shm.ptr + voff;
            static unsigned char kin[2 * N];
            static uint64_t vin[N];
            for (size_t i = 0; i < N; i++) {
                uint32_t k = (uint32_t)((i * 2654435761u) >> 7) & (r->bytes == 1 ? 0xff : 0xffff);
                if (i % 5 == 0)
                    k = (uint32_t)(i % 3);      /* ties */
                if (r->kind == GS_KIND_FLOAT && i % 7 == 0)
                    k = specials[i / 7 % (sizeof specials / sizeof specials[0])];
                memcpy(keys + i * r->bytes, &k, r->bytes);     /* little-endian */
                vin[i] = i * 0x9e3779b97f4a7c15ull;
                if (!idx)
                    ((uint64_t *)vals)[i] = vin[i];
            }
            memcpy(kin, keys, (size_t)N * r->bytes);
            static unsigned char kout[2 * N];
            static uint64_t vout[N];
            gs_client_sort s = { .shape = { .payload = idx ? GS_PL_IDX32 : GS_PL_U64,
                                            .descending = desc, .stable = idx },
                                 .n = N, .keys = inl ? (void *)kout : keys,
                                 .values = inl ? (void *)vout : vals, .device = -1,
                                 .shm = inl ? NULL : &shm, .narrow = t };
            if (inl) {
                memcpy(kout, kin, (size_t)N * r->bytes);
                memcpy(vout, vin, sizeof vout);
            }
            gs_client_result res;
            gs_err_clear(&err);
            int rc = gs_client_sort_run(c, &s, &res, &err);
            const unsigned char *ko = inl ? kout : keys;
            const void *vo = inl ? (const void *)vout : vals;
            int ok = rc == 0 && (!idx || is_perm(vo, N));
            uint32_t prev = 0;
            for (size_t i = 0; ok && i < N; i++) {
                uint32_t k = 0;
                memcpy(&k, ko + i * r->bytes, r->bytes);
                uint32_t code = gs_narrow_enc(t, desc, k);
                size_t from = 0;
                if (idx) {
                    from = ((const uint32_t *)vo)[i];
                } else {
                    uint64_t x = ((const uint64_t *)vo)[i];
                    from = (size_t)(x * 0xf1de83e19937733dull);   /* the multiplier's inverse */
                    from = from < N && vin[from] == x ? from : N;
                }
                uint32_t kf = 0;
                if (from < N)
                    memcpy(&kf, kin + from * r->bytes, r->bytes);
                ok = from < N && kf == k && (i == 0 || code >= prev);
                if (ok && idx && i && code == prev)
                    ok = ((const uint32_t *)vo)[i - 1] < from;      /* stable */
                if (!ok && !bad)
                    snprintf(first, sizeof first, " (%s %s %s, place %zu: rc %d %.200s)",
                             inl ? "inline" : "memfd", desc ? "desc" : "asc",
                             idx ? "idx32" : "u64", i, rc, err.msg);
                prev = code;
            }
            runs++;
            bad += !ok;
        }
        tap_ok(bad == 0, "%s keys, %d of them, in a memfd and inline, both orders, indices "
               "(stable) and u64 values: %u of %u sorts right%s", r->name, N, runs - bad, runs,
               first);
    }
    /* keys alone (the host route counts their codes): against the keys
     * sorted stably by code here, NaN patterns in input order */
    unsigned kbad = 0;
    char kwhy[200] = "";
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++) {
        const gs_narrow_info *r = gs_narrow_row(t);
        static uint32_t codes[N];
        static unsigned char want[2 * N];
        unsigned char *keys = shm.ptr;
        for (size_t i = 0; i < N; i++) {
            uint32_t k = (uint32_t)((i * 2654435761u) >> 9) & (r->bytes == 1 ? 0xff : 0xffff);
            if (r->kind == GS_KIND_FLOAT && i % 11 == 0)
                k = specials[i / 11 % (sizeof specials / sizeof specials[0])];
            memcpy(keys + i * r->bytes, &k, r->bytes);
            codes[i] = gs_narrow_enc(t, 1, k) << 15 | (uint32_t)i;     /* descending, stable */
        }
        /* (code, index) words, each distinct: the code is at most 16 bits, i < 2^15 */
        static uint32_t sorted[N];
        memcpy(sorted, codes, sizeof sorted);
        qsort(sorted, N, sizeof sorted[0], cmp_u32);
        for (size_t i = 0; i < N; i++)
            memcpy(want + i * r->bytes, keys + (sorted[i] & 0x7fff) * r->bytes, r->bytes);
        gs_client_sort s = { .shape = { .descending = 1 }, .n = N, .keys = keys, .device = -1,
                             .shm = &shm, .narrow = t };
        gs_client_result res;
        gs_err_clear(&err);
        int rc = gs_client_sort_run(c, &s, &res, &err);
        if (rc || memcmp(keys, want, (size_t)N * r->bytes) || res.device != -1) {
            if (!kbad++)
                snprintf(kwhy, sizeof kwhy, " (%s: rc %d %.100s, device %d)", r->name, rc,
                         err.msg, res.device);
        }
    }
    tap_ok(kbad == 0, "keys alone, every narrow type, descending, %d keys in a memfd: counted "
           "on the host, the input's bits in order, NaN patterns in input order%s", N, kwhy);
    static const bad_hdr bad[] = {
        { "{\"v\":1,\"op\":\"sort\",\"dtype\":\"f16\",\"n\":4,\"topk\":5,\"payload_bytes\":8}",
          "GS_EINVAL", "exceeds" },
        { "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u8\",\"n\":4,\"payload_bytes\":8}", "GS_EINVAL",
          "payload_bytes 4" },
    };
    bad_headers(d, bad, sizeof bad / sizeof bad[0], "8/16-bit");
    narrow_parts(c, &shm);
    /* keys rewritten while the daemon encodes and decodes them */
    int perms, other;
    uint32_t *ix = (uint32_t *)(void *)((char *)shm.ptr + 2 * N);
    gs_client_sort s = { .shape = { .payload = GS_PL_IDX32 }, .n = N, .keys = shm.ptr,
                         .values = ix, .device = -1, .shm = &shm, .narrow = GS_NW_F16 };
    raced_sorts(c, &s, (volatile uint64_t *)shm.ptr, ix, N, &perms, &other, &err);
    tap_ok(other == 0 && ping(c, pw, sizeof pw), "f16 keys rewritten during 60 sorts: %d "
           "answered with a permutation, %d otherwise (%s); the daemon serves on", perms, other,
           err.msg);
    /* the same by radix on a device, which sorts 16-bit keys where they lie:
     * on a CPU device its kernels run on the client's own pages, so a
     * rewrite between two passes may leave that client a wrong answer (as
     * for wider keys, tests/lib/algos/test_race_dev); the daemon serves on,
     * and the next clean sort there is right */
    s.device = 0;
    s.algorithm = "radix";
    raced_sorts(c, &s, (volatile uint64_t *)shm.ptr, ix, N, &perms, &other, &err);
    char rwhy[160];
    snprintf(rwhy, sizeof rwhy, "%.150s", err.msg);   /* the last raced sort's error, if any */
    uint16_t *hk = shm.ptr;
    for (size_t i = 0; i < N; i++)
        hk[i] = (uint16_t)(0x3c00u + (uint16_t)((i * 7919u) % 0x3c00u));   /* 1.0 and up */
    gs_err_clear(&err);
    int crc = gs_client_sort_run(c, &s, NULL, &err), clean = crc == 0 && is_perm(ix, N);
    for (size_t i = 1; clean && i < N; i++)
        clean = hk[i - 1] <= hk[i];
    tap_ok(clean && ping(c, pw, sizeof pw), "f16 keys rewritten during 60 sorts by radix on "
           "device 0 (sorted where they lie): %d answered with a permutation, %d not (%s); "
           "the daemon serves on, and a clean sort there comes out right (rc %d %s)", perms,
           other, rwhy, crc, err.msg);
    s.device = -1;
    s.algorithm = NULL;
    raced_parts(c, &shm, N);
    gs_client_shm_free(&shm);
    gs_client_close(c);
}

/* Bit ranges (begin_bit/end_bit): integer keys of every width and sign,
 * both orders, indices and u64 values, inline and in a memfd, on the
 * daemon's own route, radix (the range's own passes) and the host sort
 * (the range's words): each answer must be the one stable order by the
 * range (keys from the input where the payload says, ranges nondecreasing,
 * ties in input order); then refusals, and keys rewritten meanwhile. */
static void test_bits_keys(dmn *d)
{
    gs_client *c = conn(d);
    char pw[300];
    gs_err err;
    enum { N = 20000 };
    gs_client_shm shm = { -1, NULL, 0 };
    if (gs_client_shm_alloc(&shm, 16 * N + 64, &err) < 0)
        tap_bail("shm: %s", err.msg);
    static const gs_dtype types[] = { GS_DT_U32, GS_DT_I32, GS_DT_U64, GS_DT_I64 };
    static const char *const algos[] = { NULL, "radix", "host" };
    static uint64_t kin[N], vin[N];
    static unsigned char kout[8 * N], seen[N];
    static uint64_t vout[N];
    unsigned bad = 0, runs = 0;
    char first[400] = "";
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const gs_dtype dt = types[t];
        const size_t ks = gs_dtype_size(dt);
        for (int v = 0; v < 24; v++) {
            const int inl = v & 1, desc = v >> 1 & 1, idx = v >> 2 & 1, a = v / 8;
            const unsigned lo = (unsigned)(v % 5) * 3, hi = lo + (v % 3 == 0 ? 3 : 17);
            unsigned char *keys = shm.ptr;
            void *vals = (char *)shm.ptr + 8 * N;
            for (size_t i = 0; i < N; i++) {
                uint64_t k = (i * 0x9e3779b97f4a7c15ull) ^ (i << 40);
                if (i % 3 == 0)
                    k = (k & ~(UINT64_C(0xfffff) << lo)) | ((uint64_t)(i % 7) << lo);   /* ties */
                kin[i] = k & gs_key_max(ks);
                gs_key_put(keys, i, ks, kin[i]);
                vin[i] = i * 0x9e3779b97f4a7c15ull;
                if (!idx)
                    ((uint64_t *)vals)[i] = vin[i];
            }
            if (inl) {
                memcpy(kout, keys, N * ks);
                memcpy(vout, vin, sizeof vout);
            }
            gs_client_sort s = { .shape = { .dtype = dt, .payload = idx ? GS_PL_IDX32 : GS_PL_U64,
                                            .descending = desc, .begin_bit = lo, .end_bit = hi },
                                 .n = N, .keys = inl ? (void *)kout : keys,
                                 .values = inl ? (void *)vout : vals, .device = -1,
                                 .shm = inl ? NULL : &shm, .algorithm = algos[a] };
            gs_client_result res;
            gs_err_clear(&err);
            int rc = gs_client_sort_run(c, &s, &res, &err);
            const unsigned char *ko = inl ? kout : keys;
            const void *vo = inl ? (const void *)vout : vals;
            const uint64_t fm = (UINT64_C(1) << (hi - lo)) - 1;
            int ok = rc == 0;
            uint64_t prev = 0;
            size_t pfrom = 0;
            memset(seen, 0, sizeof seen);
            for (size_t i = 0; ok && i < N; i++) {
                uint64_t k = gs_key_get(ko, i, ks);
                size_t from = idx ? ((const uint32_t *)vo)[i]
                                  : (size_t)(((const uint64_t *)vo)[i] * 0xf1de83e19937733dull);
                ok = from < N && !seen[from] && kin[from] == k &&
                     (idx || ((const uint64_t *)vo)[i] == vin[from]);
                /* the order code, from the rules: sign bit flipped, inverted descending */
                uint64_t code = k ^ (dt == GS_DT_I32 || dt == GS_DT_I64 ? UINT64_C(1) << (ks * 8 - 1)
                                                                        : 0);
                if (desc)
                    code = ~code & gs_key_max(ks);
                uint64_t f = (code >> lo) & fm;
                ok = ok && (i == 0 || f > prev || (f == prev && from > pfrom));
                if (ok)
                    seen[from] = 1;
                if (!ok && !bad)
                    snprintf(first, sizeof first, " (first wrong: %s %s %s %s bits [%u, %u) "
                             "algorithm %s, place %zu: rc %d %.200s)", gs_dtype_name(dt),
                             inl ? "inline" : "memfd", desc ? "desc" : "asc",
                             idx ? "idx32" : "u64", lo, hi, algos[a] ? algos[a] : "auto", i,
                             rc, err.msg);
                prev = f;
                pfrom = from;
            }
            runs++;
            bad += !ok;
        }
    }
    tap_ok(bad == 0, "bit ranges: u32, i32, u64, i64 keys (%d of them) in a memfd and inline, "
           "both orders, indices and u64 values, on the daemon's route, radix and the host "
           "sort: %u of %u answers the stable order by the range%s", N, runs - bad, runs, first);
    static const bad_hdr badh[] = {
        { "{\"v\":1,\"op\":\"sort\",\"dtype\":\"f32\",\"n\":4,\"end_bit\":8,"
          "\"payload_bytes\":16}", "GS_EUNSUPPORTED", "integer keys" },
        { "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":4,\"begin_bit\":9,\"end_bit\":8,"
          "\"payload_bytes\":16}", "GS_EINVAL", "not below" },
        { "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":4,\"end_bit\":8,"
          "\"algorithm\":\"vqsort\",\"payload_bytes\":16}", "GS_EUNSUPPORTED", "stable" },
    };
    bad_headers(d, badh, sizeof badh / sizeof badh[0], "bit range");
    /* keys rewritten meanwhile: the host route reads them once (every
     * answer a permutation); radix sorts them where they lie, so its
     * answer may be a refusal, never a crash */
    int perms, other, rperms, rother;
    uint32_t *ix = (uint32_t *)(void *)((char *)shm.ptr + 8 * N);
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_IDX32, .begin_bit = 4,
                                    .end_bit = 20 },
                         .n = N, .keys = shm.ptr, .values = ix, .device = -1, .shm = &shm,
                         .algorithm = "host" };
    raced_sorts(c, &s, (volatile uint64_t *)shm.ptr, ix, N, &perms, &other, &err);
    s.algorithm = "radix";
    raced_sorts(c, &s, (volatile uint64_t *)shm.ptr, ix, N, &rperms, &rother, &err);
    tap_ok(other == 0 && rperms + rother == 60 && ping(c, pw, sizeof pw),
           "u32 keys by bits [4, 20) rewritten during 60 sorts each: the host sort answered "
           "%d with a permutation, %d otherwise; radix %d and %d (%s); the daemon serves on",
           perms, other, rperms, rother, err.msg);
    gs_client_shm_free(&shm);
    gs_client_close(c);
}

static void test_bad_input(dmn *d)
{
    gs_client *keep = conn(d);
    char why[300];
    tap_ok(ping(keep, why, sizeof why), "a client stays connected through the bad inputs");
    uint8_t len4[4];
    static uint32_t keys[1000];
    for (int i = 0; i < 1000; i++)
        keys[i] = (uint32_t)(i * 2654435761u);

    /* Framing errors: the daemon cannot find the next message, so it answers and closes. */
    gs_client *c = conn(d);
    gs_proto_put_len(len4, 0);
    dmn_send_raw(gs_client_fd(c), len4, 4);
    expect_error(c, "GS_EINVAL", NULL, 1, "header length 0");
    gs_client_close(c);
    unharmed(d, keep, "header length 0");

    c = conn(d);
    gs_proto_put_len(len4, 65536 + 1);
    dmn_send_raw(gs_client_fd(c), len4, 4);
    dmn_send_raw(gs_client_fd(c), "{\"v\":1", 6);
    expect_error(c, "GS_ETOOBIG", NULL, 0, "header length above max_header_bytes (65537)");
    gs_client_close(c);
    unharmed(d, keep, "an over-long header length");

    c = conn(d);
    send_text(gs_client_fd(c), "this is not JSON at all");
    expect_error(c, "GS_EINVAL", NULL, 1, "header not JSON");
    gs_client_close(c);
    unharmed(d, keep, "a non-JSON header");

    c = conn(d);
    send_text(gs_client_fd(c), "[1,2,{\"op\":\"ping\"}]");
    expect_error(c, "GS_EINVAL", NULL, 1, "header a JSON array");
    gs_client_close(c);
    unharmed(d, keep, "a JSON-array header");

    /* Lies about the payload. */
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"payload_bytes\":8000}",
             keys, 1000, -1);
    gs_client_close(c);
    unharmed(d, keep, "payload_bytes larger than sent (and than n needs), then close");

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"payload_bytes\":400,"
             "\"algorithm\":\"host\"}", keys, 400, -1);
    expect_error(c, "GS_EINVAL", NULL, 1, "payload_bytes smaller than n needs");
    gs_client_close(c);
    unharmed(d, keep, "payload_bytes too small");

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"payload_bytes\":4000,"
             "\"algorithm\":\"host\"}", keys, 2000, -1);
    gs_client_close(c);
    unharmed(d, keep, "a truncated payload, then close");

    /* Well-framed but wrong requests: an error, and the connection lives on. */
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"frobnicate\",\"id\":\"x\"}", NULL, 0, -1);
    expect_error(c, "GS_EINVAL", "frobnicate", 1, "unknown op");
    gs_client_close(c);
    unharmed(d, keep, "an unknown op");

    c = conn(d);
    send_obj(c, "{\"v\":2,\"op\":\"ping\"}", NULL, 0, -1);
    expect_error(c, "GS_EUNSUPPORTED", NULL, 1, "protocol version 2");
    gs_client_close(c);

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u24\",\"n\":10,\"payload_bytes\":30}",
             keys, 30, -1);
    expect_error(c, "GS_EINVAL", "u24", 1, "unknown dtype");
    gs_client_close(c);
    unharmed(d, keep, "an unknown dtype");

    c = conn(d);
    /* raw text: cJSON would print 2^53 rounded to 15 digits */
    send_text(gs_client_fd(c), "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u64\",\"values\":\"u64\","
              "\"n\":9007199254740992,\"payload_bytes\":0}");
    expect_error(c, "GS_ETOOBIG GS_EINVAL", NULL, 1, "n = 2^53 u64 keys + u64 values inline");
    gs_client_close(c);
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u64\",\"values\":\"u64\","
             "\"n\":18446744073709551616,\"payload_bytes\":0}", NULL, 0, -1);
    expect_error(c, "GS_ETOOBIG GS_EINVAL", NULL, 1, "n = 2^64 (beyond 2^53)");
    gs_client_close(c);
    unharmed(d, keep, "n*size overflow");

    /* Memfd problems. The descriptors must not pile up in the daemon. */
    int fds_before = count_fds(d->pid);
    gs_client_shm shm;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_shm_alloc(&shm, 4096, &err))
        tap_bail("shm: %s", err.msg);
    memcpy(shm.ptr, keys, 4000);

    int raw = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (raw < 0 || ftruncate(raw, 4096) < 0)
        tap_bail("memfd_create: %s", strerror(errno));
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"memfd\":true,"
             "\"algorithm\":\"host\"}", NULL, 0, raw);
    expect_error(c, "GS_EINVAL GS_EUNSUPPORTED", "seal", 1, "memfd not sealed");
    gs_client_close(c);
    close(raw);
    unharmed(d, keep, "an unsealed memfd");

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":2000,\"memfd\":true,"
             "\"algorithm\":\"host\"}", NULL, 0, shm.fd);
    expect_error(c, "GS_EINVAL GS_ETOOBIG", NULL, 1, "memfd too small (4096 bytes for 2000 u32)");
    gs_client_close(c);
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"values\":\"u64\",\"n\":500,"
             "\"memfd\":true,\"keys_offset\":0,\"values_offset\":2048}", NULL, 0, shm.fd);
    expect_error(c, "GS_EINVAL GS_ETOOBIG", NULL, 1, "memfd values past its end");
    gs_client_close(c);
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u64\",\"values\":\"u64\","
             "\"n\":9007199254740992,\"memfd\":true}", NULL, 0, shm.fd);
    expect_error(c, "GS_EINVAL GS_ETOOBIG", NULL, 1, "memfd with n = 2^53");
    gs_client_close(c);
    unharmed(d, keep, "a too-small memfd");

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"payload_bytes\":4000,"
             "\"algorithm\":\"host\"}", keys, 4000, shm.fd);
    expect_error(c, "GS_EINVAL", NULL, 1, "a descriptor with an inline request");
    gs_client_close(c);
    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"ping\"}", NULL, 0, shm.fd);
    expect_error(c, "GS_EINVAL", NULL, 1, "a descriptor with a ping");
    gs_client_close(c);
    unharmed(d, keep, "a descriptor with a non-memfd request");

    c = conn(d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1000,\"memfd\":true,"
             "\"algorithm\":\"host\"}", NULL, 0, -1);
    expect_error(c, "GS_EINVAL", NULL, 1, "memfd:true without a descriptor");
    gs_client_close(c);
    unharmed(d, keep, "memfd:true without a descriptor");

    /* Still the original keys: nothing sorted a rejected memfd. */
    tap_ok(memcmp(shm.ptr, keys, 4000) == 0, "rejected memfd requests left its bytes alone");
    gs_client_shm_free(&shm);
    int fds_after = -1;
    for (int i = 0; i < 40; i++) {   /* closes are noticed asynchronously */
        fds_after = count_fds(d->pid);
        if (fds_after <= fds_before)
            break;
        dmn_sleep(0.05);
    }
    tap_ok(fds_before > 0 && fds_after <= fds_before,
           "no descriptors leaked in the daemon: %d open before the memfd cases, %d after",
           fds_before, fds_after);

    /* Algorithm choices the daemon must refuse. */
    uint32_t k3[3] = { 3, 1, 2 };
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = 3, .keys = k3, .device = -1,
                         .algorithm = "nosuchsort" };
    gs_err_clear(&err);
    int rc = gs_client_sort_run(keep, &s, NULL, &err);
    tap_ok(rc == GS_ENOTFOUND && strstr(err.msg, "nosuchsort"),
           "unknown algorithm -> GS_ENOTFOUND naming it: %s '%s'", gs_strerror(rc), err.msg);
    s.algorithm = "shellsort";
    s.shape.stable = 1;
    gs_err_clear(&err);
    rc = gs_client_sort_run(keep, &s, NULL, &err);
    tap_ok(rc == GS_EUNSUPPORTED, "stable with shellsort -> GS_EUNSUPPORTED: %s '%s'",
           gs_strerror(rc), err.msg);
    s.algorithm = "radix";
    s.shape.stable = 0;
    s.device = 999;
    gs_err_clear(&err);
    rc = gs_client_sort_run(keep, &s, NULL, &err);
    tap_ok(rc == GS_ENODEV || rc == GS_EINVAL || rc == GS_ENOTFOUND,
           "radix on device 999 is refused: %s '%s'", gs_strerror(rc), err.msg);
    unharmed(d, keep, "refused algorithms");
    gs_client_close(keep);
}

/* ---- clients that leave in the middle of a reply ----
 * A client reads the first bytes of a large inline reply and closes: the
 * daemon's write meets EAGAIN, then EPIPE or a POLLERR (ECONNRESET). It
 * must say "peer closed the connection", never "bad file descriptor", leak
 * no descriptor, and keep serving the clients beside it. Where strace can
 * attach, the daemon's close(2) and epoll_ctl(2) calls are checked too: no
 * epoll_ctl may name a descriptor after it was closed (until an ADD
 * registers the number again for a new client). */

#define ABANDON_N 200             /* 20 under a wrapper (Valgrind): each sort is slow there */
#define ABANDON_KEYS ((size_t)1 << 18)    /* a 1 MiB reply: far beyond a socket buffer */
#define ABANDON_WORKERS 2
#define ABANDON_PER_WORKER 24

typedef struct abandon_worker {
    const dmn *d;
    rt r[ABANDON_PER_WORKER];
    int conn_failed;
    pthread_t th;
} abandon_worker;

static void *abandon_worker_main(void *arg)
{
    abandon_worker *w = arg;
    gs_client *c = conn(w->d);
    if (!c) {
        w->conn_failed = 1;
        return NULL;
    }
    for (int i = 0; i < ABANDON_PER_WORKER; i++)
        rt_run(&w->r[i], c);
    gs_client_close(c);
    return NULL;
}

/* One client: the request, the first 4 bytes of the reply, close. 0 when
 * it got that far. */
static int abandon_one(const dmn *d, const cJSON *hdr, const void *keys, size_t bytes,
                       char *why, size_t len)
{
    gs_client *c = conn(d);
    if (!c) {
        snprintf(why, len, "cannot connect");
        return -1;
    }
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_client_send(c, hdr, keys, bytes, -1, &err);
    if (rc) {
        snprintf(why, len, "send: %.300s", err.msg);
        gs_client_close(c);
        return -1;
    }
    struct pollfd p = { .fd = gs_client_fd(c), .events = POLLIN };
    char head[4];
    ssize_t r = -1;
    if (poll(&p, 1, (int)(REPLY_TIMEOUT_S * dmn_slowdown() * 1000)) == 1)
        r = recv(gs_client_fd(c), head, sizeof head, MSG_WAITALL);
    if (r != (ssize_t)sizeof head)
        snprintf(why, len, "no reply bytes (%zd: %s)", r, r < 0 ? strerror(errno) : "eof");
    gs_client_close(c);   /* with the rest of the reply unread */
    return r == (ssize_t)sizeof head ? 0 : -1;
}

/* strace -f attached to `pid`, writing to `out`: its pid once attached
 * (the daemon's TracerPid is set), else 0 (no strace, or not allowed). */
static pid_t strace_attach(pid_t pid, const char *out)
{
    if (getenv("GSORT_TEST_WRAPPER") && *getenv("GSORT_TEST_WRAPPER"))
        return 0;   /* the daemon already runs under a tool */
    char spid[32];
    snprintf(spid, sizeof spid, "%d", (int)pid);
    fflush(stdout);
    pid_t sp = fork();
    if (sp < 0)
        return 0;
    if (sp == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(nul, 2);
        }
        execlp("strace", "strace", "-f", "-qq", "-e", "trace=close,epoll_ctl", "-o", out,
               "-p", spid, (char *)NULL);
        _exit(127);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    for (int i = 0; i < 200; i++) {
        if (waitpid(sp, NULL, WNOHANG) == sp)
            return 0;   /* not installed, or ptrace refused */
        FILE *f = fopen(path, "r");
        char line[256];
        long tracer = 0;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
                break;
        if (f)
            fclose(f);
        if (tracer == (long)sp)
            return sp;
        dmn_sleep(0.05);
    }
    kill(sp, SIGKILL);
    waitpid(sp, NULL, 0);
    return 0;
}

/* Detach strace (SIGINT) and wait for it. */
static void strace_detach(pid_t sp)
{
    kill(sp, SIGINT);
    for (int i = 0; i < 200; i++) {
        if (waitpid(sp, NULL, WNOHANG) == sp)
            return;
        dmn_sleep(0.05);
    }
    kill(sp, SIGKILL);
    waitpid(sp, NULL, 0);
}

/* Read an strace -f log of close and epoll_ctl: how many epoll_ctl calls
 * named a descriptor closed before them (or failed with EBADF); *closes
 * and *ctls count the calls seen. The first offender goes to `first`. */
static int strace_violations(const char *path, int *closes, int *ctls, char *first,
                             size_t flen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    static unsigned char closed[65536];
    memset(closed, 0, sizeof closed);
    char line[1024];
    int bad = 0;
    /* a close another thread's call interrupted in the log: "PID close(FD
     * <unfinished ...>", then "PID <... close resumed>) = 0" */
    struct { int pid, fd; } pend[64];
    size_t npend = 0;
    *closes = *ctls = 0;
    first[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        const char *p;
        int fd, pid = atoi(line);
        char op[32];
        if ((p = strstr(line, "close(")) && strstr(p, "<unfinished") &&
            sscanf(p, "close(%d", &fd) == 1 && npend < sizeof pend / sizeof pend[0]) {
            pend[npend].pid = pid;
            pend[npend++].fd = fd;
            continue;
        }
        if (strstr(line, "<... close resumed>")) {
            size_t k = 0;
            while (k < npend && pend[k].pid != pid)
                k++;
            if (k == npend)
                continue;
            fd = pend[k].fd;
            pend[k] = pend[--npend];
            if (strstr(line, "= 0") && fd >= 0 && fd < (int)sizeof closed) {
                closed[fd] = 1;
                (*closes)++;
            }
            continue;
        }
        if ((p = strstr(line, "close(")) && sscanf(p, "close(%d) = 0", &fd) == 1 &&
            strstr(p, "= 0") && fd >= 0 && fd < (int)sizeof closed) {
            closed[fd] = 1;
            (*closes)++;
        } else if ((p = strstr(line, "epoll_ctl(")) &&
                   sscanf(p, "epoll_ctl(%*d, %31[A-Z_], %d,", op, &fd) == 2 && fd >= 0 &&
                   fd < (int)sizeof closed) {
            (*ctls)++;
            if (!strcmp(op, "EPOLL_CTL_ADD") && !strstr(p, "EBADF")) {
                closed[fd] = 0;
            } else if (closed[fd] || strstr(p, "EBADF")) {
                if (!bad++)
                    snprintf(first, flen, "%.300s", line);
            }
        }
    }
    fclose(f);
    first[strcspn(first, "\n")] = '\0';
    return bad;
}

static void test_abandon(dmn *d)
{
    static abandon_worker w[ABANDON_WORKERS];
    memset(w, 0, sizeof w);
    for (int t = 0; t < ABANDON_WORKERS; t++) {
        w[t].d = d;
        for (int i = 0; i < ABANDON_PER_WORKER; i++)
            if (rt_init(&w[t].r[i], (gs_dtype)((t + i) % GS_DT_COUNT),
                        (gs_payload)(i % GS_PL_COUNT), i % 2, 3000 + (size_t)i * 997,
                        (uint64_t)(7000 + t * 100 + i), "host", i % 3 == 0, 0))
                tap_bail("cannot build the abandon-test cases");
    }
    uint32_t *keys = malloc(ABANDON_KEYS * sizeof *keys);
    if (!keys)
        tap_bail("out of memory");
    for (size_t i = 0; i < ABANDON_KEYS; i++)
        keys[i] = (uint32_t)(ABANDON_KEYS - i);
    char hdr_text[256];
    snprintf(hdr_text, sizeof hdr_text, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":%zu,"
             "\"algorithm\":\"host\",\"payload_bytes\":%zu}", ABANDON_KEYS,
             ABANDON_KEYS * sizeof *keys);
    cJSON *hdr = parse(hdr_text);
    gs_client *keep = conn(d);

    char trace[600];
    snprintf(trace, sizeof trace, "%s/abandon.strace", dmn_tmpdir());
    pid_t sp = strace_attach(d->pid, trace);
    if (!sp)
        tap_diag("strace cannot attach to the daemon here: its close/epoll_ctl order is "
                 "not traced");

    int fds_before = count_fds(d->pid);
    int peer_before = dmn_log_count(d, "peer closed the connection");
    double t0 = gs_now_s();
    for (int t = 0; t < ABANDON_WORKERS; t++)
        if (pthread_create(&w[t].th, NULL, abandon_worker_main, &w[t]))
            tap_bail("pthread_create failed");
    const int nab = dmn_slowdown() > 1 ? ABANDON_N / 10 : ABANDON_N;
    int failed = 0;
    char why[400] = "", later[400];
    for (int i = 0; i < nab; i++)   /* the first failure's reason is kept */
        failed += abandon_one(d, hdr, keys, ABANDON_KEYS * sizeof *keys,
                              failed ? later : why, sizeof why) < 0;
    for (int t = 0; t < ABANDON_WORKERS; t++)
        pthread_join(w[t].th, NULL);
    double secs = gs_now_s() - t0;
    cJSON_Delete(hdr);
    free(keys);
    tap_ok(failed == 0, "%d clients each sent a %zu-key inline sort, read 4 bytes of the "
           "reply and closed (%.1f s): %d failed %s", nab, ABANDON_KEYS, secs, failed,
           why);

    int bad = 0, conn_bad = 0;
    for (int t = 0; t < ABANDON_WORKERS; t++) {
        conn_bad += w[t].conn_failed;
        for (int i = 0; i < ABANDON_PER_WORKER; i++) {
            char wy[600], lab[128];
            if (!w[t].conn_failed && !rt_check(&w[t].r[i], wy, sizeof wy) && bad++ < 4)
                tap_diag("worker %d request %d (%s): %s", t, i,
                         rt_label(&w[t].r[i], lab, sizeof lab), wy);
            rt_free(&w[t].r[i]);
        }
    }
    tap_ok(bad == 0 && conn_bad == 0, "meanwhile %d other clients x %d sorts: %d wrong, %d "
           "could not connect", ABANDON_WORKERS, ABANDON_PER_WORKER, bad, conn_bad);

    /* The daemon notices each close asynchronously. */
    int peer = 0, fds_after = -1;
    for (int i = 0; i < 200; i++) {
        peer = dmn_log_count(d, "peer closed the connection") - peer_before;
        fds_after = count_fds(d->pid);
        if (peer >= nab && fds_after <= fds_before)
            break;
        dmn_sleep(0.05);
    }
    tap_ok(peer == nab, "the log says \"peer closed the connection\" for each of them "
           "(%d of %d)", peer, nab);
    int ebadf = dmn_log_count(d, "bad file descriptor");
    tap_ok(ebadf == 0, "the log never says \"bad file descriptor\" (%d lines do)", ebadf);
    if (ebadf)
        dmn_dump_log(d, 10);
    tap_ok(fds_before > 0 && fds_after <= fds_before, "no descriptor leaked: %d open before, "
           "%d after", fds_before, fds_after);
    if (sp) {
        strace_detach(sp);
        int closes = 0, ctls = 0;
        char first[400];
        int v = strace_violations(trace, &closes, &ctls, first, sizeof first);
        tap_ok(v == 0 && closes >= nab && ctls >= nab,
               "strace: no epoll_ctl on a closed descriptor or failing with EBADF among %d "
               "close and %d epoll_ctl calls (%d violations%s%s)", closes, ctls, v,
               v > 0 ? ", first: " : "", v > 0 ? first : "");
    }
    unharmed(d, keep, "clients that left in the middle of their replies");
    gs_client_close(keep);
}

/* ---- limits and timeouts: a daemon with small ones ---- */

static void test_limits(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "max_request_bytes=1M", "-o", "max_clients=4", "-o",
                                  "io_timeout=1", "-o", "idle_timeout=5", "-o",
                                  "devices=none", NULL };
    if (dmn_start(&d, "limits", NULL, extra)) {
        tap_ok(0, "daemon with small limits starts");
        return;
    }
    char why[600];

    /* max_request_bytes: refused from the header alone. */
    gs_client *keep = conn(&d);
    gs_client *c = conn(&d);
    send_obj(c, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1048576,"
             "\"payload_bytes\":4194304,\"algorithm\":\"host\"}", NULL, 0, -1);
    expect_error(c, "GS_ETOOBIG", NULL, 0, "payload_bytes above max_request_bytes=1M");
    gs_client_close(c);
    int ok = sort_ok(keep, GS_DT_U32, GS_PL_NONE, 0, 200000, 3, "host", 0, why, sizeof why, NULL);
    tap_ok(ok, "800 KB under the 1M limit is served: %s", why);
    /* Through the client: the daemon refuses from the header and closes
     * while the 4 MiB are still being sent; the client reports its reason. */
    c = conn(&d);
    uint32_t *big = calloc((size_t)1 << 20, sizeof *big);
    gs_client_sort bs = { .shape = { .dtype = GS_DT_U32 },
                          .n = (size_t)1 << 20,
                          .keys = big,
                          .device = -1,
                          .algorithm = "host" };
    gs_err err;
    gs_err_clear(&err);
    int rc = big ? gs_client_sort_run(c, &bs, NULL, &err) : GS_ENOMEM;
    tap_ok(rc == GS_ETOOBIG && strstr(err.msg, "max_request_bytes"),
           "client sorting 4 MiB inline over the 1M limit gets the daemon's reason: %s '%s'",
           gs_strerror(rc), err.msg);
    free(big);
    gs_client_close(c);
    unharmed(&d, keep, "a request above max_request_bytes");
    gs_client_close(keep);

    /* max_clients = 4: the fifth connection is told why and closed. */
    gs_client *cs[4] = { 0 };
    int all = 1;
    for (int i = 0; i < 4; i++) {
        cs[i] = conn(&d);
        all &= ping(cs[i], why, sizeof why);
    }
    tap_ok(all, "4 clients (the maximum) connected and served");
    c = conn(&d);
    if (c) {
        /* the daemon may answer at once or after a request: send one either way */
        send_text(gs_client_fd(c), "{\"v\":1,\"op\":\"ping\"}");
        gs_client_set_timeout(c, 10);
        expect_error(c, "GS_ETOOBIG", NULL, 0, "a fifth client (max_clients=4)");
        tap_ok(dmn_wait_eof(gs_client_fd(c), 5) >= 0, "the fifth client is disconnected");
        gs_client_close(c);
    } else {
        tap_ok(0, "the fifth client could at least connect to be told");
        tap_ok(0, "the fifth client is disconnected");
    }
    all = 1;
    for (int i = 0; i < 4; i++)
        all &= ping(cs[i], why, sizeof why);
    tap_ok(all, "the 4 admitted clients are unaffected");
    gs_client_close(cs[3]);
    cs[3] = NULL;
    /* a freed slot is reusable once the daemon has noticed the close */
    ok = 0;
    double rejected = -1;
    for (int i = 0; i < 40 && !ok; i++) {
        c = conn(&d);
        ok = c && ping(c, why, sizeof why);
        cJSON *st = ok ? call(c, "stats", why, sizeof why) : NULL;
        if (st)
            rejected = jnum(jget(st, "clients"), "rejected", -1);
        cJSON_Delete(st);
        gs_client_close(c);
        if (!ok)
            dmn_sleep(0.05);
    }
    tap_ok(ok, "a slot freed by a closing client is given to a new one");
    tap_ok(rejected >= 1, "stats: clients.rejected %g", rejected);
    for (int i = 0; i < 3; i++)
        gs_client_close(cs[i]);

    /* io_timeout = 1: half a header, then nothing. idle_timeout = 5: connected, quiet. */
    dmn_sleep(0.2);
    gs_client *idle = conn(&d), *active = conn(&d);
    int pre = ping(idle, why, sizeof why) && ping(active, why, sizeof why);
    double t_idle0 = gs_now_s();
    c = conn(&d);
    uint8_t l4[4];
    gs_proto_put_len(l4, 40);
    dmn_send_raw(gs_client_fd(c), l4, 4);
    dmn_send_raw(gs_client_fd(c), "{\"v\":1,\"op\":\"ping\",\"i", 20);
    double ts = dmn_wait_eof(gs_client_fd(c), 8);
    tap_ok(ts >= 0.5 && ts <= 4, "a client stalling mid-header is closed after io_timeout=1 "
           "(%.2f s)", ts);
    gs_client_close(c);
    unharmed(&d, active, "a stalled client");
    /* The active client keeps talking; the idle one must go after ~5 s, not before. */
    double t_close = -1;
    int active_ok = 1;
    while (gs_now_s() - t_idle0 < 12) {
        active_ok &= ping(active, why, sizeof why);
        struct pollfd p = { .fd = gs_client_fd(idle), .events = POLLIN };
        if (poll(&p, 1, 700) > 0) {
            t_close = gs_now_s() - t_idle0;
            double rest = dmn_wait_eof(gs_client_fd(idle), 2);
            if (rest >= 0) {
                t_close += rest;
                break;
            }
        }
    }
    tap_ok(pre && t_close >= 4 && t_close <= 9, "an idle client is closed after "
           "idle_timeout=5 (%.2f s)", t_close);
    tap_ok(active_ok && ping(active, why, sizeof why),
           "a client sending a request every ~0.7 s is not closed as idle");
    gs_client_close(idle);
    gs_client_close(active);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "limits daemon: SIGTERM -> exit %d", st);
}

/* ---- fallback to the host ---- */

static void fallback_case(dmn *d, const char *what, const char *needle)
{
    gs_client *c = conn(d);
    char why[600] = "";
    gs_client_result res;
    memset(&res, 0, sizeof res);
    double t0 = gs_now_s();
    int ok = sort_ok(c, GS_DT_U32, GS_PL_U32, 0, 60000, 77, "radix", 0, why, sizeof why, &res);
    tap_ok(ok, "%s: radix request answered correctly (%.1f s): %s", what, gs_now_s() - t0, why);
    /* The reason may carry a multi-line compiler log: one TAP line shows its start. */
    char shown[200];
    snprintf(shown, sizeof shown, "%.199s", res.fallback);
    shown[strcspn(shown, "\n")] = '\0';
    tap_ok(!strcmp(res.plan, "fallback") && res.fallback[0] && res.device < 0 &&
           (!needle || strstr(res.fallback, needle)),
           "%s: plan '%s', served by %s (%s), fallback '%s'", what, res.plan,
           res.device < 0 ? "the host" : "a device", res.algorithm, shown);
    cJSON *st = call(c, "stats", why, sizeof why);
    tap_ok(st && jnum(jget(st, "requests"), "fallbacks", 0) >= 1,
           "%s: stats count the fallback (%g)", what, jnum(jget(st, "requests"), "fallbacks", -1));
    cJSON_Delete(st);
    /* the same connection still works */
    ok = sort_ok(c, GS_DT_F32, GS_PL_IDX32, 1, 1000, 78, "host", 1, why, sizeof why, NULL);
    tap_ok(ok, "%s: the connection serves on: %s", what, why);
    gs_client_close(c);
}

static void test_fallback(void)
{
    static dmn d;
    const char *const extra[] = { "--inject-fault", "launch:1", NULL };
    if (dmn_start(&d, "fault", NULL, extra) == 0) {
        fallback_case(&d, "every launch fails", "OUT_OF_RESOURCES");
        tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "fault daemon exits 0 on SIGTERM");
    } else {
        tap_ok(0, "daemon with --inject-fault launch:1 starts");
    }

    /* Kernels that do not build: a copy of the sources with radix.cl broken. */
    char kdir[128], cmd[2048];
    snprintf(kdir, sizeof kdir, "%s/kernels", dmn_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%.1000s'/kernels/*.cl '%s'/ && "
             "printf '\\n__kernel void broken( { this is not OpenCL\\n' >> '%s/radix.cl'",
             kdir, dmn_srcdir(), kdir, kdir);
    if (system(cmd) != 0)
        tap_bail("cannot prepare the broken kernel directory: %s", cmd);
    static dmn b;
    const char *const extra2[] = { "--kernel-dir", kdir, NULL };
    if (dmn_start(&b, "broken", NULL, extra2) == 0) {
        fallback_case(&b, "radix.cl does not compile", NULL);
        tap_ok(dmn_stop(&b, SIGTERM, 30) == 0, "broken-kernel daemon exits 0 on SIGTERM");
    } else {
        tap_ok(0, "daemon with a broken --kernel-dir starts");
    }
}

/* ---- routing around a busy device ---- */

typedef struct busy_arg {
    rt r;
    const dmn *d;
} busy_arg;

static void *busy_main(void *arg)
{
    busy_arg *b = arg;
    gs_client *c = conn(b->d);
    rt_run(&b->r, c);
    gs_client_close(c);
    return NULL;
}

static int child_putenv(void *arg)
{
    return putenv((char *)arg) != 0;
}

/* Built-in defaults without a database (issue 17, daemon/sched/gs_defaults.c):
 * a CPU device leaves every size to the host sort; a GPU (here PoCL made
 * to look like one by a test hook) measures its crossover when it starts,
 * logs it, and serves from it. */
static void test_defaults(void)
{
    static dmn d, g;
    char why[600] = "";
    gs_client_result res;
    if (dmn_start(&d, "defaults", NULL, NULL) != 0) {
        tap_ok(0, "untuned daemon starts");
        return;
    }
    gs_client *c = conn(&d);
    int ok = 1;
    static const size_t ns[] = { 1000, 65536, 1u << 20 };
    for (size_t i = 0; i < 3 && ok; i++) {
        memset(&res, 0, sizeof res);
        ok = sort_ok(c, GS_DT_U32, GS_PL_NONE, 0, ns[i], 60 + i, NULL, 1, why, sizeof why, &res) &&
             res.device < 0 && !strcmp(res.algorithm, "host") && !strcmp(res.plan, "default");
    }
    tap_ok(ok, "untuned, a CPU device: 10^3, 2^16 and 2^20 keys all go to the host sort with "
           "plan 'default' (last: %s by %s, plan %s): %s",
           res.device < 0 ? "host" : res.device_name, res.algorithm, res.plan, why);
    /* max_request_bytes = auto (the default): a quarter of max_memory, and a
     * refusal says so (2^52 bytes declared, refused from the header). */
    gs_client *big = conn(&d);
    send_obj(big, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u64\",\"n\":562949953421312,"
             "\"payload_bytes\":4503599627370496}", NULL, 0, -1);
    expect_error(big, "GS_ETOOBIG", "auto: a quarter of max_memory", 0,
                 "2^52 bytes against max_request_bytes = auto");
    gs_client_close(big);
    gs_client_close(c);
    dmn_stop(&d, SIGTERM, 30);

    static char hook[] = "GSORTD_TEST_DEFAULTS=gpu";
    const char *const extra[] = { "--log-level", "info", NULL };
    if (dmn_spawn(&g, "defaults-gpu", NULL, extra, child_putenv, hook) || dmn_wait_ready(&g)) {
        tap_ok(0, "untuned daemon with GPU defaults starts");
        return;
    }
    c = conn(&g);
    /* the measurement is done before the worker serves its first request */
    memset(&res, 0, sizeof res);
    ok = sort_ok(c, GS_DT_U32, GS_PL_NONE, 0, 1u << 20, 64, NULL, 0, why, sizeof why, &res);
    for (int i = 0; i < 100 && !dmn_log_contains(&g, "built-in defaults: the host sort below"); i++)
        dmn_sleep(0.1);
    tap_ok(ok && dmn_log_contains(&g, "built-in defaults: the host sort below 2^") &&
           dmn_log_contains(&g, "ms host/radix: 2^12 "),
           "GPU defaults: the crossover is measured at start and logged; a 2^20 request is "
           "answered (%s by %s): %s", res.device < 0 ? "host" : res.device_name, res.algorithm,
           why);
    /* measuring, the device counted as busy and not ready; measured, ready */
    gs_reply_info inf;
    gs_err ie;
    int irc = 0, rdy = 0;
    /* the log line comes just before the flag is set: on a loaded machine
     * the first info may fall between them */
    for (int i = 0; i < 50 && !rdy && irc == 0; i++) {
        cJSON *ih = NULL;
        gs_err_clear(&ie);
        if (i)
            dmn_sleep(0.1);
        irc = gs_client_info(c, &inf, &ih, &ie);
        rdy = irc == 0 && inf.ndevices > 0 && inf.devices[0].ready;
        if (irc == 0)
            gs_reply_info_free(&inf);
        cJSON_Delete(ih);
    }
    tap_ok(rdy, "GPU defaults measured: info says device 0 is ready (%s)", irc ? ie.msg : "ok");
    if (!ok)
        dmn_dump_log(&g, 20);
    gs_client_close(c);
    dmn_stop(&g, SIGTERM, 30);
}

/* Without a database, a GPU's defaults plan radix on the device from the
 * crossover (a test hook gives PoCL a GPU's defaults with the crossover
 * fixed at 2^15). While a long device sort (2^23 keys, named explicitly)
 * occupies the device's queue, an unnamed 2^16-key request must go to the
 * host sort, predicted sooner, with plan "busy"; with the queue empty
 * again the same request goes back to the device. */
static void test_busy(void)
{
    static dmn d;
    static char hook[] = "GSORTD_TEST_DEFAULTS=gpu:15";
    if (dmn_spawn(&d, "busy", NULL, NULL, child_putenv, hook) != 0 || dmn_wait_ready(&d) != 0) {
        tap_ok(0, "daemon for the busy-routing case starts");
        return;
    }
    static busy_arg b;
    rt *big = &b.r;
    char why[600] = "";
    if (rt_init(big, GS_DT_U32, GS_PL_NONE, 0, (size_t)1 << 23, 41, "mergepath", 0, 0))
        tap_bail("cannot build the 2^23 case");
    b.d = &d;
    pthread_t th;
    if (pthread_create(&th, NULL, busy_main, &b) != 0)
        tap_bail("pthread_create");
    /* Wait until the daemon has read the big request's 32 MiB (its
     * "bytes in"), then a moment for it to be routed and queued: a fixed
     * sleep was too short for the upload under the sanitizers on a loaded
     * 2-core machine, and the small request then found the device idle. */
    double want = (double)((size_t)1 << 23) * 4;
    double in = dmn_wait_stat(&d, "bytes", "in", want, 1, 30 * dmn_slowdown());
    if (in < want)
        tap_diag("busy: the daemon read %.0f of the big request's %.0f bytes in time", in, want);
    dmn_sleep(0.1);   /* routed and queued (or running) by now */
    gs_client *c = conn(&d);
    gs_client_result res;
    memset(&res, 0, sizeof res);
    int ok = sort_ok(c, GS_DT_U32, GS_PL_NONE, 0, 65536, 42, NULL, 0, why, sizeof why, &res);
    tap_ok(ok, "busy device: the 2^16 request is answered correctly: %s", why);
    tap_ok(!strcmp(res.plan, "busy") && res.device < 0 && !strcmp(res.algorithm, "host"),
           "busy device: it went to the host sort with plan 'busy' (plan '%s', %s, %s)",
           res.plan, res.device < 0 ? "host" : res.device_name, res.algorithm);
    pthread_join(th, NULL);
    ok = rt_check(big, why, sizeof why);
    tap_ok(ok && big->res.device >= 0 && !strcmp(big->res.algorithm, "mergepath"),
           "busy device: the long device sort is correct and ran on the device: %s", why);
    rt_free(big);
    memset(&res, 0, sizeof res);
    ok = sort_ok(c, GS_DT_U32, GS_PL_NONE, 0, 65536, 43, NULL, 0, why, sizeof why, &res);
    tap_ok(ok && !strcmp(res.plan, "default") && res.device >= 0,
           "idle device: the same request is planned on the device again (plan '%s', %s): %s",
           res.plan, res.device < 0 ? "host" : res.device_name, why);
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "busy-routing daemon exits 0 on SIGTERM");
}

/* Rows with a GPU's defaults (the hook again, crossover 2^15): from the
 * crossover on, the daemon's choice for rows that fit a work-group is
 * bitonic on the device, all rows in one launch; below it, and for rows
 * too long for a group, the host pool. Every row checked. */
static void test_rows_device(void)
{
    static dmn d;
    static char hook[] = "GSORTD_TEST_DEFAULTS=gpu:15";
    if (dmn_spawn(&d, "rowsdev", NULL, NULL, child_putenv, hook) != 0 ||
        dmn_wait_ready(&d) != 0) {
        tap_ok(0, "daemon for the rows-on-a-device case starts");
        return;
    }
    gs_client *c = conn(&d);
    char why[600] = "";
    gs_client_result res;
    static const struct { gs_dtype t; gs_payload p; int desc; } sh[] = {
        { GS_DT_U32, GS_PL_NONE, 0 }, { GS_DT_F64, GS_PL_IDX32, 1 }, { GS_DT_I32, GS_PL_U64, 0 },
    };
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        memset(&res, 0, sizeof res);
        int ok = rows_ok(c, sh[i].t, sh[i].p, sh[i].desc, 64, 1000, NULL, 1, why, sizeof why,
                         &res);
        tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, "bitonic"),
               "64 rows of 1000 %s keys, values %s, %s, past the crossover: bitonic on device "
               "%d, each row sorted (%s, %s)", gs_dtype_name(sh[i].t), gs_payload_name(sh[i].p),
               sh[i].desc ? "desc" : "asc", res.device, res.algorithm, why);
    }
    memset(&res, 0, sizeof res);
    int ok = rows_ok(c, GS_DT_U32, GS_PL_NONE, 0, 8, 100, NULL, 1, why, sizeof why, &res);
    tap_ok(ok && res.device < 0, "8 rows of 100 keys, below the crossover: the host (%s, %s)",
           res.algorithm, why);
    memset(&res, 0, sizeof res);
    ok = rows_ok(c, GS_DT_U32, GS_PL_NONE, 0, 2, 20000, NULL, 1, why, sizeof why, &res);
    tap_ok(ok && res.device < 0, "2 rows of 20000 keys, too long for a work-group: the host "
           "(%s, %s)", res.algorithm, why);
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "rows-on-a-device daemon exits 0 on SIGTERM");
}

/* ---- SIGHUP reload ---- */

/* A ping whose header is about `bytes` long (the id pads it). 1: ok, 0: refused. */
static int big_ping(const dmn *d, size_t bytes, char *code, size_t len)
{
    char *text = malloc(bytes + 64);
    int n = snprintf(text, bytes + 64, "{\"v\":1,\"op\":\"ping\",\"id\":\"");
    memset(text + n, 'x', bytes);
    snprintf(text + n + bytes, 64, "\"}");
    gs_client *c = conn(d);
    cJSON *h = NULL;
    gs_err err;
    gs_err_clear(&err);
    int ok = -1;
    /* The daemon may refuse from the length prefix and close while the
     * header is still being written: the send can fail, the reply is there. */
    if (c)
        send_text(gs_client_fd(c), text);
    if (c && gs_client_recv(c, &h, NULL, 0, NULL, &err) == 0) {
        ok = cJSON_IsTrue(jget(h, "ok"));
        snprintf(code, len, "%s", ok ? "ok" : err_code(h));
    } else {
        snprintf(code, len, "no reply: %.400s", err.msg);
    }
    cJSON_Delete(h);
    gs_client_close(c);
    free(text);
    return ok;
}

static void test_sighup(void)
{
    static dmn d;
    char conf[512], code[600];
    snprintf(conf, sizeof conf, "%s/hup.conf", dmn_tmpdir());
    if (dmn_write_file(conf, "# test config\nmax_header_bytes = 65536\nlog_level = info\n"))
        tap_bail("cannot write %s", conf);
    const char *const extra[] = { "--config", conf, "-o", "devices=none", NULL };
    if (dmn_start(&d, "hup", NULL, extra)) {
        tap_ok(0, "daemon with --config starts");
        return;
    }
    tap_ok(big_ping(&d, 8000, code, sizeof code) == 1, "an 8000-byte header is accepted "
           "under max_header_bytes=65536: %s", code);
    if (dmn_write_file(conf, "max_header_bytes = 4K\n"))
        tap_bail("cannot rewrite %s", conf);
    gs_client *held = conn(&d);
    char why[300];
    ping(held, why, sizeof why);
    kill(d.pid, SIGHUP);
    int r = 1;
    double t0 = gs_now_s();
    while (r == 1 && gs_now_s() - t0 < 10) {
        dmn_sleep(0.1);
        r = big_ping(&d, 8000, code, sizeof code);
    }
    tap_ok(r == 0 && strstr(code, "GS_ETOOBIG"),
           "after rewriting the config to 4K and SIGHUP, an 8000-byte header is refused: %s "
           "(%.1f s)", code, gs_now_s() - t0);
    tap_ok(big_ping(&d, 2000, code, sizeof code) == 1, "a 2000-byte header still passes: %s",
           code);
    tap_ok(ping(held, why, sizeof why), "a connection open across the SIGHUP still works");
    gs_client_close(held);
    tap_ok(!dmn_exited(&d) && dmn_stop(&d, SIGINT, 20) == 0, "SIGINT: the daemon exits 0");
}

/* A SIGHUP that arrives after the socket exists but before the handler is
 * in place (the hook widens that window to a second) is held and becomes a
 * reload: it must not kill the daemon, whichever of its threads (PoCL's
 * among them) the kernel would hand it to. */
static void test_early_hup(void)
{
    static dmn d;
    static char hook[] = "GSORTD_TEST_SIGNAL_DELAY_MS=1000";
    const char *const extra[] = { "--log-level", "info", NULL };
    if (dmn_spawn(&d, "early-hup", NULL, extra, child_putenv, hook) || dmn_wait_ready(&d)) {
        tap_ok(0, "daemon for the early SIGHUP starts");
        return;
    }
    kill(d.pid, SIGHUP);
    int reloads = dmn_wait_log(&d, "reload: allow_uids", 1, 20);
    char why[300] = "";
    gs_client *c = conn(&d);
    int pong = c && ping(c, why, sizeof why);
    gs_client_close(c);
    tap_ok(reloads == 1 && pong && !dmn_exited(&d),
           "a SIGHUP sent as soon as the socket accepts, before the handler is installed, is "
           "one reload (%d logged) and the daemon serves on: %s", reloads, why);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "early-SIGHUP daemon exits 0 on SIGTERM");
}

/* ---- the plan swapped under load ---- */

typedef struct swap_arg {
    dmn *d;
    int id, sorts, wrong, untuned;
    char why[600];
} swap_arg;

static void *swap_client(void *arg)
{
    swap_arg *a = arg;
    gs_client *c = conn(a->d);
    for (int i = 0; i < 120; i++) {
        gs_client_result res;
        memset(&res, 0, sizeof res);
        char why[600] = "";
        size_t n = 100 + (size_t)((a->id * 7919 + i * 104729) % 16000);
        if (!sort_ok(c, GS_DT_U32, GS_PL_NONE, i % 2, n, (uint64_t)(a->id * 1000 + i), NULL,
                     i % 3 == 0, why, sizeof why, &res)) {
            a->wrong++;
            snprintf(a->why, sizeof a->why, "%s", why);
        } else if (strcmp(res.plan, "tuned")) {
            a->untuned++;
        }
        a->sorts++;
    }
    gs_client_close(c);
    return NULL;
}

/* Issue 17: SIGHUP re-reads the database and swaps each device's plan in
 * memory while clients keep sorting: no request is lost or answered
 * wrongly, and every one is served from the plan. */
static void test_plan_swap(const char *db)
{
    static dmn d;
    const char *const extra[] = { "--db", db, "--log-level", "info", "-o", "io_threads=2",
                                  NULL };
    if (dmn_start(&d, "swap", NULL, extra)) {
        tap_ok(0, "daemon for the plan swap starts");
        return;
    }
    enum { NCL = 4 };
    static swap_arg a[NCL];
    pthread_t th[NCL];
    for (int i = 0; i < NCL; i++) {
        a[i] = (swap_arg){ .d = &d, .id = i };
        if (pthread_create(&th[i], NULL, swap_client, &a[i]) != 0)
            tap_bail("pthread_create");
    }
    /* each SIGHUP after the last one's reload: two sent while the first is
     * pending are one signal to the kernel */
    int hups = 0;
    for (; hups < 8; hups++) {
        dmn_sleep(0.05);
        dmn_wait_log(&d, "reload: allow_uids", hups, 20);
        kill(d.pid, SIGHUP);
    }
    int sorts = 0, wrong = 0, untuned = 0;
    const char *why = "";
    for (int i = 0; i < NCL; i++) {
        pthread_join(th[i], NULL);
        sorts += a[i].sorts;
        wrong += a[i].wrong;
        untuned += a[i].untuned;
        if (a[i].wrong)
            why = a[i].why;
    }
    int reloads = dmn_wait_log(&d, "reload: allow_uids", hups, 5);
    tap_ok(sorts == NCL * 120 && wrong == 0 && untuned == 0 && reloads == hups,
           "plan swapped %d times (SIGHUP) under 4 clients: %d sorts, %d wrong or lost, %d not "
           "from the tuned plan %s", reloads, sorts, wrong, untuned, why);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "plan-swap daemon exits 0 on SIGTERM");
}

/* ---- sockets: mode, stale file, live daemon ---- */

static void test_sockets(dmn *main_d)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    int srt = stat(main_d->sock, &st);
    tap_ok(srt == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0660,
           "socket mode is 0660 (%o)", (unsigned)(st.st_mode & 07777));

    /* A socket file nobody listens on. */
    char path[108];
    snprintf(path, sizeof path, "%s/stale.sock", dmn_tmpdir());
    close(dmn_bind(path, SOCK_STREAM, 0));
    tap_ok(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && !dmn_connectable(path),
           "a stale socket file is in place");
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", NULL };
    char why[300] = "";
    int up = dmn_start(&d, "stale", path, extra) == 0;
    tap_ok(up && fresh_ping(&d, why, sizeof why), "a stale socket is replaced and served %s",
           why);

    /* A second daemon on a live path. */
    static dmn two;
    const char *const extra2[] = { "-o", "devices=none", NULL };
    int st2 = -99;
    if (dmn_spawn(&two, "second", path, extra2, NULL, NULL) == 0)
        st2 = dmn_stop(&two, 0, 30);   /* it is to exit by itself */
    tap_ok(st2 > 0 && dmn_log_contains(&two, path),
           "a second daemon on a live socket exits non-zero (%d) naming %s", st2, path);
    if (!(st2 > 0 && dmn_log_contains(&two, path)))
        dmn_dump_log(&two, 10);
    tap_ok(up && fresh_ping(&d, why, sizeof why), "the first daemon still serves %s", why);
    tap_ok(stat(path, &st) == 0, "its socket file is still there");
    if (up) {
        int rc = dmn_stop(&d, SIGTERM, 20);
        tap_ok(rc == 0 && stat(path, &st) < 0, "SIGTERM: exit %d, socket removed", rc);
    }
}

/* ---- clean shutdown with a request in flight ---- */

static void test_shutdown(dmn *d)
{
    const size_t n = (size_t)1 << 22;
    rt r;
    if (rt_init(&r, GS_DT_U64, GS_PL_NONE, 0, n, 4242, "host", 0, 0))
        tap_bail("cannot build the shutdown case");
    gs_client *c = conn(d);
    gs_proto_req rq;
    memset(&rq, 0, sizeof rq);
    rq.op = GS_OP_SORT;
    rq.shape.dtype = GS_DT_U64;
    rq.shape.payload = GS_PL_NONE;
    rq.n = n;
    rq.device = -1;
    snprintf(rq.algorithm, sizeof rq.algorithm, "host");
    gs_err err;
    gs_err_clear(&err);
    cJSON *h = gs_proto_sort_header(&rq, &err);
    if (!h)
        tap_bail("sort header: %s", err.msg);
    /* The whole request is in the socket (most of it read) before the signal. */
    int rc = gs_client_send(c, h, r.c.req.keys, n * 8, -1, &err);
    cJSON_Delete(h);
    tap_ok(rc == 0, "a %zu-key request sent: %s", n, rc ? err.msg : "ok");
    kill(d->pid, SIGTERM);
    cJSON *reply = NULL;
    uint64_t got = 0;
    rc = gs_client_recv(c, &reply, r.c.req.keys, n * 8, &got, &err);
    char why[600];
    snprintf(why, sizeof why, "%.500s", rc ? err.msg : "");
    int ok = rc == 0 && cJSON_IsTrue(jget(reply, "ok")) && got == n * 8;
    if (ok)
        ok = sc_case_verify(&r.c, 1, why, sizeof why);
    else if (!rc)
        snprintf(why, sizeof why, "reply %s %s, %" PRIu64 " payload bytes",
                 err_code(reply), err_msg(reply), got);
    tap_ok(ok, "SIGTERM during a request: its reply still arrives, correct %s", why);
    cJSON_Delete(reply);
    gs_client_close(c);
    rt_free(&r);
    /* It was told once; a second SIGTERM may mean "stop now". */
    int st = dmn_stop(d, 0, 60);
    struct stat sb;
    tap_ok(st == 0, "the daemon exits 0 (%d)", st);
    tap_ok(stat(d->sock, &sb) < 0 && errno == ENOENT, "the socket file is gone");
    tap_ok(dmn_log_contains(d, "serving on"), "the log said \"serving on\"");
}

/* ---- the client against a misbehaving fake daemon ---- */

/* One scripted reply: header text (the request's id is added unless the
 * text has one), an optional forced length prefix, and what to do after. */
typedef struct fake_reply {
    const char *json;             /* NULL: close instead of replying */
    uint32_t force_len;           /* != 0: this length prefix, header text not sent */
    size_t garbage;               /* bytes of payload to send after the header */
    int hold;                     /* then keep the connection open until the client closes */
} fake_reply;

typedef struct fake {
    int lfd;
    char path[108];
    const fake_reply *replies;
    int nreplies;
    pthread_t th;
} fake;

static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t r = recv(fd, p, len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    int cfd = accept(f->lfd, NULL, NULL);
    if (cfd < 0)
        return NULL;
    for (int i = 0; i < f->nreplies; i++) {
        uint8_t l4[4];
        if (read_full(cfd, l4, 4))
            break;
        uint32_t hl = gs_proto_get_len(l4);
        char *text = hl < (1u << 20) ? malloc(hl + 1) : NULL;
        if (!text || read_full(cfd, text, hl)) {
            free(text);
            break;
        }
        text[hl] = '\0';
        cJSON *req = cJSON_Parse(text);
        free(text);
        double pb = jnum(req, "payload_bytes", 0);
        for (char skip[4096]; pb > 0; pb -= sizeof skip)
            if (read_full(cfd, skip, pb < (double)sizeof skip ? (size_t)pb : sizeof skip))
                break;
        const fake_reply *r = &f->replies[i];
        if (!r->json) {
            cJSON_Delete(req);
            if (r->hold)
                dmn_wait_eof(cfd, 30);
            break;
        }
        if (r->force_len) {
            gs_proto_put_len(l4, r->force_len);
            dmn_send_raw(cfd, l4, 4);
        } else {
            cJSON *h = cJSON_Parse(r->json);
            if (h && !jget(h, "id") && jget(req, "id"))
                cJSON_AddItemToObject(h, "id", cJSON_Duplicate(jget(req, "id"), 1));
            uint8_t *frame = NULL;
            size_t flen = 0;
            if (h && gs_proto_frame(h, 1u << 20, &frame, &flen, NULL) == 0)
                dmn_send_raw(cfd, frame, flen);
            free(frame);
            cJSON_Delete(h);
        }
        cJSON_Delete(req);
        static const char junk[4096];
        for (size_t g = r->garbage; g > 0; g -= g < sizeof junk ? g : sizeof junk)
            if (dmn_send_raw(cfd, junk, g < sizeof junk ? g : sizeof junk))
                break;
        if (r->hold) {
            dmn_wait_eof(cfd, 30);
            break;
        }
    }
    close(cfd);
    return NULL;
}

static int fake_start(fake *f, const char *name, const fake_reply *replies, int n)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s/%s", dmn_tmpdir(), name);
    f->replies = replies;
    f->nreplies = n;
    f->lfd = dmn_bind(f->path, SOCK_STREAM, 4);
    if (pthread_create(&f->th, NULL, fake_main, f))
        tap_bail("fake daemon at %s: pthread_create failed", f->path);
    return 0;
}

static void fake_stop(fake *f)
{
    pthread_join(f->th, NULL);
    close(f->lfd);
    unlink(f->path);
}

static gs_client *fake_conn(const fake *f, double timeout)
{
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, f->path, &err))
        tap_bail("connecting to the fake daemon: %s", err.msg);
    gs_client_set_timeout(c, timeout);
    return c;
}

static void test_client_defenses(void)
{
    gs_err err;
    uint32_t keys[1000];
    for (int i = 0; i < 1000; i++)
        keys[i] = (uint32_t)(1000 - i);
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = 1000, .keys = keys, .device = -1,
                         .algorithm = "host" };

    /* A reply declaring far more payload than the request can take: refused
     * from the header (nothing allocated, keys untouched), connection dead. */
    static const fake_reply big[] = {
        { "{\"v\":1,\"ok\":true,\"op\":\"sort\",\"payload_bytes\":1099511627776}", 0, 65536, 1 },
    };
    fake f;
    fake_start(&f, "fake-big.sock", big, 1);
    gs_client *c = fake_conn(&f, 10);
    gs_err_clear(&err);
    int rc = gs_client_sort_run(c, &s, NULL, &err);
    tap_ok((rc == GS_EWRONG || rc == GS_ECORRUPT) && keys[0] == 1000 && keys[999] == 1,
           "client: a reply declaring 2^40 payload bytes for 4000 is %s, keys untouched (%s)",
           gs_strerror(rc), err.msg);
    char first[4096];
    snprintf(first, sizeof first, "%s", err.msg);
    gs_err_clear(&err);
    double t0 = gs_now_s();
    rc = gs_client_call(c, "ping", NULL, &err);
    tap_ok(rc == GS_EIO && strstr(err.msg, "unusable") && strstr(err.msg, first) &&
           gs_now_s() - t0 < 1,
           "client: the connection then fails at once, naming the first failure: %s (%s)",
           gs_strerror(rc), err.msg);
    gs_client_close(c);
    fake_stop(&f);

    /* A peer that closed before the request: the send fails (EPIPE) and
     * reading the refusal it might have left fails too; the cause kept,
     * and reported by every later call, is the first one. */
    char gpath[200];
    snprintf(gpath, sizeof gpath, "%s/gone.sock", dmn_tmpdir());
    int lfd = dmn_bind(gpath, SOCK_STREAM, 4);
    gs_err_clear(&err);
    rc = gs_client_connect(&c, gpath, &err);
    int afd = rc ? -1 : accept(lfd, NULL, NULL);
    if (afd >= 0)
        close(afd);
    char why[256] = "";
    dmn_sleep(0.05);
    gs_err_clear(&err);
    rc = c ? gs_client_call(c, "ping", NULL, &err) : GS_EIO;
    snprintf(first, sizeof first, "%s", err.msg);
    gs_err_clear(&err);
    int later = c ? gs_client_call(c, "ping", NULL, &err) : 0;
    int stale1 = c ? gs_client_stale(c, why, sizeof why) : -1;
    tap_ok(afd >= 0 && rc == GS_EIO && strstr(first, "sending to gsortd") && later == GS_EIO &&
           strstr(err.msg, first) && stale1 == 1 && !strcmp(why, first),
           "client: a peer gone before the request: the send fails (%s); later calls, and "
           "gs_client_stale, keep that first cause (%s; stale: %s)", first, err.msg, why);
    gs_client_close(c);
    close(lfd);

    /* gs_client_stale notices a peer that closed an idle connection. */
    lfd = dmn_bind(gpath, SOCK_STREAM, 4);
    gs_err_clear(&err);
    rc = gs_client_connect(&c, gpath, &err);
    afd = rc ? -1 : accept(lfd, NULL, NULL);
    int stale_open = c ? gs_client_stale(c, why, sizeof why) : -1;
    if (afd >= 0)
        close(afd);
    dmn_sleep(0.05);
    int stale_gone = c ? gs_client_stale(c, why, sizeof why) : -1;
    gs_err_clear(&err);
    later = c ? gs_client_call(c, "ping", NULL, &err) : 0;
    tap_ok(stale_open == 0 && stale_gone == 1 && strstr(why, "between calls") &&
           later == GS_EIO && strstr(err.msg, why),
           "client: gs_client_stale: 0 while the peer is there, 1 once it closed (%s); a call "
           "then fails at once with that cause (%s)", why, err.msg);
    gs_client_close(c);
    close(lfd);

    /* A header length beyond what a reply may have: refused before allocating it. */
    static const fake_reply huge[] = { { "{}", 0xFFFFFFF0u, 0, 1 } };
    fake_start(&f, "fake-huge.sock", huge, 1);
    c = fake_conn(&f, 10);
    gs_err_clear(&err);
    rc = gs_client_call(c, "ping", NULL, &err);
    tap_ok(rc == GS_ETOOBIG || rc == GS_ECORRUPT, "client: a 4 GiB reply header length is "
           "refused: %s (%s)", gs_strerror(rc), err.msg);
    gs_client_close(c);
    fake_stop(&f);

    /* Error replies: the name maps back to the code, an unknown name to GS_EIO. */
    static const fake_reply errs[] = {
        { "{\"v\":1,\"ok\":false,\"op\":\"sort\",\"error\":{\"code\":\"GS_ENODEV\","
          "\"message\":\"no such device\"}}", 0, 0, 0 },
        { "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_EWHATEVER\",\"message\":\"boom\"}}",
          0, 0, 0 },
        { "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_EINVAL\",\"message\":\"bye\"},"
          "\"close\":true}", 0, 0, 1 },
    };
    fake_start(&f, "fake-err.sock", errs, 3);
    c = fake_conn(&f, 10);
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &s, NULL, &err);
    tap_ok(rc == GS_ENODEV && !strcmp(err.msg, "gsortd: no such device"),
           "client: error name maps to its code: %s '%s'", gs_strerror(rc), err.msg);
    cJSON *h = NULL;
    gs_err_clear(&err);
    rc = gs_client_call(c, "stats", &h, &err);
    tap_ok(rc == GS_EIO && !strcmp(err.msg, "gsortd: boom") && h && !cJSON_IsTrue(jget(h, "ok")),
           "client: an unknown error name is GS_EIO, the reply is still returned: %s '%s'",
           gs_strerror(rc), err.msg);
    cJSON_Delete(h);
    gs_err_clear(&err);
    rc = gs_client_call(c, "ping", NULL, &err);
    int rc2 = gs_client_call(c, "ping", NULL, &err);
    tap_ok(rc == GS_EINVAL && rc2 == GS_EIO, "client: after \"close\":true the connection is "
           "unusable: %s then %s (%s)", gs_strerror(rc), gs_strerror(rc2), err.msg);
    gs_client_close(c);
    fake_stop(&f);

    /* Silence: the timeout fires; a close: a clear error. */
    static const fake_reply mute[] = { { NULL, 0, 0, 1 } };
    fake_start(&f, "fake-mute.sock", mute, 1);
    c = fake_conn(&f, 0.5);
    gs_err_clear(&err);
    t0 = gs_now_s();
    rc = gs_client_sort_run(c, &s, NULL, &err);
    double dt = gs_now_s() - t0;
    tap_ok(rc == GS_EIO && strstr(err.msg, "timed out") && dt >= 0.4 && dt < 3,
           "client: no reply within the 0.5 s timeout is GS_EIO after %.2f s: %s", dt, err.msg);
    gs_client_close(c);
    fake_stop(&f);

    static const fake_reply none[] = { { NULL, 0, 0, 0 } };
    fake_start(&f, "fake-close.sock", none, 1);
    c = fake_conn(&f, 10);
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &s, NULL, &err);
    tap_ok(rc == GS_EIO && strstr(err.msg, "closed"), "client: a daemon closing instead of "
           "replying is GS_EIO: %s", err.msg);
    gs_client_close(c);
    fake_stop(&f);

    /* Arrays that do not lie in the shared memory are refused before sending. */
    gs_client_shm shm;
    gs_err_clear(&err);
    if (gs_client_shm_alloc(&shm, 4096, &err))
        tap_bail("shm: %s", err.msg);
    int seals = fcntl(shm.fd, F_GET_SEALS);
    tap_ok(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) &&
           ftruncate(shm.fd, 100) < 0, "client: shm is sealed against shrinking and growing");
    fake_start(&f, "fake-shm.sock", none, 1);
    c = fake_conn(&f, 10);
    gs_client_sort o = s;
    o.shm = &shm;
    o.keys = (char *)shm.ptr + 2048;   /* 4000 bytes from 2048: past the end */
    gs_err_clear(&err);
    rc = gs_client_sort_run(c, &o, NULL, &err);
    int rc_a = rc;
    o.keys = keys;                    /* not in the shm at all */
    rc = gs_client_sort_run(c, &o, NULL, &err);
    tap_ok(rc_a == GS_EINVAL && rc == GS_EINVAL, "client: keys outside the shm are GS_EINVAL "
           "(%s)", err.msg);
    gs_client_close(c);   /* the fake saw no request: it just closes */
    fake_stop(&f);
    gs_client_shm_free(&shm);

    /* The default socket path comes from gs_paths_socket. */
    char def[GS_CONF_SOCKET_MAX];
    const char *tmp = dmn_tmpdir();
    setenv("XDG_RUNTIME_DIR", tmp, 1);
    gs_err_clear(&err);
    if (gs_paths_socket(def, sizeof def, &err) == 0 && strncmp(def, tmp, strlen(tmp)) == 0) {
        static const fake_reply pong[] = { { "{\"v\":1,\"ok\":true,\"op\":\"ping\"}", 0, 0, 0 } };
        fake_start(&f, "gsortd.sock", pong, 1);
        c = NULL;
        gs_err_clear(&err);
        rc = gs_client_connect(&c, NULL, &err);
        if (!rc)
            rc = gs_client_call(c, "ping", NULL, &err);
        tap_ok(rc == 0, "client: NULL path connects to the default %s: %s", def, err.msg);
        gs_client_close(c);
        if (rc)
            dmn_connectable(f.path);   /* let the fake's accept return */
        fake_stop(&f);
    } else {
        /* root: /run/gsortd/gsortd.sock, which this test does not own */
        c = NULL;
        gs_err_clear(&err);
        rc = gs_client_connect(&c, NULL, &err);
        tap_ok(rc == 0 || (rc == GS_EIO && strstr(err.msg, def)),
               "client: NULL path tries the default %s: %s", def, rc ? err.msg : "connected");
        gs_client_close(c);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    dmn_init();
    tap_diag("build %s, cache %s, temp %s", dmn_builddir(), dmn_cachedir(), dmn_tmpdir());

    double t0 = gs_now_s();
    /* A small tuning database (host only: no kernel compiles) so the main
     * daemon serves from a real plan. */
    static dmn d, tune;
    char db[512];
    snprintf(db, sizeof db, "%s/main.db", dmn_tmpdir());
    const char *const tune_args[] = { "--tune-all", "--quick", "--algorithms", "host",
                                      "--max-log2", "14", "--db", db, "--cache-dir",
                                      dmn_cachedir(), NULL };
    int trc = dmn_run(&tune, "tune", tune_args, 120);
    if (!tap_ok(trc == 0, "gsortd --tune-all (host, up to 2^14) builds a database: exit %d", trc))
        dmn_dump_log(&tune, 20);
    /* Three event loops: every operation, the bad inputs, the abandoned
     * replies and the shutdown below run across loops (the other tests'
     * daemons have the one this 2-CPU machine defaults to). */
    const char *const extra[] = { "-o", "max_request_bytes=64M", "-o", "io_threads=3",
                                  "--log-level", "info", NULL };
    if (dmn_start(&d, "main", NULL, extra))
        tap_bail("the daemon did not start (see its stderr above)");
    test_ops(&d, 64u << 20);
    test_matrix(&d);
    test_rows(&d);
    test_segments(&d);
    test_lexsort(&d);
    test_narrow_keys(&d);
    test_bits_keys(&d);
    test_topk(&d);
    tap_diag("ops + matrix: %.1f s", gs_now_s() - t0);
    test_devices(&d);
    tap_diag("device routes: %.1f s", gs_now_s() - t0);
    test_concurrent(&d);
    test_abandon(&d);
    test_bad_input(&d);
    test_sockets(&d);
    tap_diag("concurrency, bad input, sockets: %.1f s", gs_now_s() - t0);
    test_limits();
    tap_diag("limits: %.1f s", gs_now_s() - t0);
    test_fallback();
    tap_diag("fallback: %.1f s", gs_now_s() - t0);
    test_defaults();
    test_busy();
    test_rows_device();
    tap_diag("defaults, busy routing: %.1f s", gs_now_s() - t0);
    test_sighup();
    test_early_hup();
    test_plan_swap(db);
    test_client_defenses();
    test_shutdown(&d);
    tap_diag("total %.1f s", gs_now_s() - t0);
    return tap_done();
}
