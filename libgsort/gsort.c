/* libgsort (include/gsort.h): the public C client of gsortd, built on the
 * internal blocking client (gs_client). This file holds connections, the
 * sort calls and the daemon queries (error records: gsort_err.c; lexsort:
 * gsort_lex.c, which shares this file's helpers through gsort_int.h). A
 * sort takes one of three routes: arrays inside one gsort_alloc block go to the
 * daemon as that block's memfd with offsets (no copy); other memory is
 * copied into a per-connection staging memfd and back (one copy each way,
 * no socket copy); with GSORT_INLINE, or where memfds are not available,
 * the bytes travel on the socket. The staged and inline routes work on
 * copies, so a failure never leaves the caller's arrays half written.
 * Before those, a call may not go to the daemon at all: small arrays are
 * sorted in the caller's process when that is measured faster (issue 36:
 * gsort_local.c decides, gsort_inproc.c sorts). A
 * connection that failed, or that the daemon closed between calls (a
 * restart), is replaced before the next request is sent, never during
 * one. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gs_client.h"
#include "gs_paths.h"
#include "gs_pcopy.h"
#include "gs_select.h"
#include "gs_sort.h"
#include "gs_proto.h"
#include "gs_types.h"
#include "gsort.h"
#include "gsort_int.h"
#include "gs_time.h"

/* The public numbers are the internal ones, so codes pass through. */
_Static_assert((int)GSORT_EINVAL == (int)GS_EINVAL && (int)GSORT_ENOMEM == (int)GS_ENOMEM &&
               (int)GSORT_EDEVICE == (int)GS_ECL && (int)GSORT_EIO == (int)GS_EIO &&
               (int)GSORT_ENODEV == (int)GS_ENODEV && (int)GSORT_EBUILD == (int)GS_EBUILD &&
               (int)GSORT_ECORRUPT == (int)GS_ECORRUPT && (int)GSORT_ETOOBIG == (int)GS_ETOOBIG &&
               (int)GSORT_EUNSUPPORTED == (int)GS_EUNSUPPORTED &&
               (int)GSORT_ENOTFOUND == (int)GS_ENOTFOUND && (int)GSORT_EWRONG == (int)GS_EWRONG &&
               (int)GSORT_EPERM == (int)GS_EPERM,
               "GSORT_E* and GS_E* codes differ");
/* Key types are not: lgs_dt_of (gsort_int.h) maps them, wide and narrow. */
_Static_assert((int)GSORT_VALUES_NONE == GS_PL_NONE && (int)GSORT_VALUES_U32 == GS_PL_U32 &&
               (int)GSORT_VALUES_U64 == GS_PL_U64 && (int)GSORT_VALUES_IDX32 == GS_PL_IDX32 &&
               (int)GSORT_VALUES_IDX64 == GS_PL_IDX64, "gsort_values and gs_payload differ");

#define ALL_FLAGS (GSORT_DESCENDING | GSORT_STABLE | GSORT_INLINE | GSORT_SPLIT | GSORT_NO_LOCAL | \
                   GSORT_UNSORTED)
#define STAGE_GRAIN ((size_t)64 << 10)

const char *gsort_version(void)
{
    return PACKAGE_VERSION;
}

/* ---- connections ---- */

/* The default socket (see gsort_connect and gs_paths_client_socket). */
static int default_socket(char *buf, size_t len, char *also, size_t alen, gsort_error *err)
{
    gs_err ge;
    gs_err_clear(&ge);
    int rc = gs_paths_client_socket(buf, len, also, alen, &ge);
    return rc ? lgs_err_from(err, rc, &ge) : 0;
}

/* Whether connect()'s errno means nobody is listening: no socket file, a
 * stale one, or not a socket. */
static int no_daemon_errno(int e)
{
    return e == ENOENT || e == ECONNREFUSED || e == ENOTSOCK;
}

int gsort_connect(gsort_conn **out, const char *socket_path, gsort_error *err)
{
    lgs_err_clear(err);
    if (!out)
        return lgs_err_set(err, GSORT_EINVAL, "gsort_connect: out is NULL");
    *out = NULL;
    char def[GS_PATHS_SOCKET_MAX], also[GS_PATHS_SOCKET_MAX + 32];
    also[0] = '\0';
    if (!socket_path) {
        int rc = default_socket(def, sizeof def, also, sizeof also, err);
        if (rc)
            return rc;
        socket_path = def;
    } else if (!*socket_path) {
        return lgs_err_set(err, GSORT_EINVAL, "gsort_connect: the socket path is empty");
    }
    gsort_conn *c = calloc(1, sizeof *c);
    if (!c)
        return lgs_err_set(err, GSORT_ENOMEM, "out of memory for a connection");
    c->stage.fd = -1;
    c->router = lgs_router_new();
    if (!c->router) {
        free(c);
        return lgs_err_set(err, GSORT_ENOMEM, "out of memory for a connection");
    }
    /* as the Python client reads it: set and not "0" */
    const char *nl = getenv("GSORT_NO_LOCAL");
    c->no_local = nl && *nl && strcmp(nl, "0") != 0;
    gs_err ge;
    gs_err_clear(&ge);
    errno = 0;
    int rc = gs_client_connect(&c->cl, socket_path, &ge);
    if (rc) {
        int e = errno;
        lgs_router_free(c->router);
        free(c);
        if (rc == GS_EIO && no_daemon_errno(e))
            return lgs_err_set(err, GSORT_ENODAEMON, "no gsortd is listening at %s (%s)%s",
                               socket_path, strerror(e), also);
        return lgs_err_from(err, rc, &ge);
    }
    snprintf(c->path, sizeof c->path, "%s", socket_path);
    *out = c;
    return 0;
}

void gsort_close(gsort_conn *c)
{
    if (!c)
        return;
    gs_client_close(c->cl);
    gs_client_shm_free(&c->stage);
    free(c->heap);
    lgs_router_free(c->router);
    free(c);
}

const char *gsort_socket_path(const gsort_conn *c)
{
    return c ? c->path : "";
}

int gsort_set_timeout(gsort_conn *c, double seconds, gsort_error *err)
{
    lgs_err_clear(err);
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "gsort_set_timeout: no connection");
    if (!(seconds >= 0))
        return lgs_err_set(err, GSORT_EINVAL, "gsort_set_timeout: %g s is not a timeout (0: "
                           "wait for ever, else a positive number of seconds)", seconds);
    c->timeout_s = seconds;
    gs_client_set_timeout(c->cl, seconds);
    return 0;
}

/* Before each request: a connection that failed, or that the daemon closed
 * while it was idle (it stopped or restarted, idle_timeout), is replaced by
 * a new one to the same socket, as the Python client does. Only a request
 * not yet sent goes on the new connection: a request that failed in flight
 * has returned its error, since the daemon may have carried it out. When no
 * new connection can be made the cause of the loss is kept (the first one,
 * not a failure to reconnect) and each later call tries again. */
int lgs_conn_ready(gsort_conn *c, gsort_error *err)
{
    char why[256];
    if (c->cl && !gs_client_stale(c->cl, why, sizeof why))
        return 0;
    if (c->cl) {
        if (!c->lost[0])
            snprintf(c->lost, sizeof c->lost, "%s", why);
        gs_client_close(c->cl);
        c->cl = NULL;
    }
    gs_err ge;
    gs_err_clear(&ge);
    errno = 0;
    gs_client *nc = NULL;
    int rc = gs_client_connect(&nc, c->path, &ge);
    if (rc) {
        int e = errno;
        if (rc == GS_EIO && no_daemon_errno(e))
            return lgs_err_set(err, GSORT_ENODAEMON, "no gsortd is listening at %s (%s) to "
                               "reconnect to; the connection was lost: %s", c->path,
                               strerror(e), c->lost);
        return lgs_err_set(err, rc == GS_ENOMEM ? GSORT_ENOMEM : GSORT_EIO, "reconnecting: "
                           "%s; the connection was lost: %s", ge.msg, c->lost);
    }
    gs_client_set_timeout(nc, c->timeout_s);
    c->cl = nc;
    c->lost[0] = '\0';
    return 0;
}

/* ---- sorting ---- */

void gsort_request_init(gsort_request *rq)
{
    if (!rq)
        return;
    memset(rq, 0, sizeof *rq);
    rq->dtype = GSORT_U32;
    rq->values_kind = GSORT_VALUES_NONE;
    rq->device = -1;
}

static int overlap(const void *a, size_t al, const void *b, size_t bl)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + bl && y < x + al;
}

/* Make the staging memfd hold at least `need` bytes. It is sealed against
 * growing (the daemon may map it), so a bigger one replaces it; the slack
 * lets slowly growing requests reuse it. */
static int stage_reserve(gsort_conn *c, size_t need, gs_err *ge)
{
    if (c->stage.fd >= 0 && c->stage.size >= need)
        return 0;
    gs_client_shm_free(&c->stage);
    size_t want = need + need / 4;
    if (want < need || want > SIZE_MAX - STAGE_GRAIN)
        want = need;
    else
        want = (want + STAGE_GRAIN - 1) / STAGE_GRAIN * STAGE_GRAIN;
    return gs_client_shm_alloc_named(&c->stage, LGS_MEMFD_STAGE, want, ge);
}

int lgs_heap_reserve(gsort_conn *c, size_t need, gs_err *ge)
{
    if (c->heap_cap >= need)
        return 0;
    free(c->heap);
    c->heap_cap = 0;
    c->heap = malloc(need);
    if (!c->heap)
        return gs_err_set(ge, GS_ENOMEM, "out of memory for a %zu-byte copy of the arrays",
                          need);
    c->heap_cap = need;
    return 0;
}

/* Where a call's copy of its arrays goes: the staging memfd, shared with
 * the daemon; or the heap (sent inline), when `inl` asks for it or no
 * memfd can be had (then never again on this connection). *base and *inl
 * say which; 0 or an error. */
int lgs_copy_space(gsort_conn *c, size_t need, int inl, char **base, int *is_inl,
                      gs_err *ge)
{
    if (!inl) {
        int rc = stage_reserve(c, need, ge);
        if (rc == 0) {
            *base = c->stage.ptr;
            *is_inl = 0;
            return 0;
        }
        if (rc == GS_EIO)
            c->no_memfd = 1;
        gs_err_clear(ge);
    }
    int rc = lgs_heap_reserve(c, need, ge);
    if (rc)
        return rc;
    *base = c->heap;
    *is_inl = 1;
    return 0;
}

void lgs_fill_result(gsort_result *res, const gs_client_result *r, int zero_copy, double t0)
{
    res->device = r->device;
    snprintf(res->device_name, sizeof res->device_name, "%s", r->device_name);
    snprintf(res->algorithm, sizeof res->algorithm, "%s", r->algorithm);
    snprintf(res->params, sizeof res->params, "%s", r->params);
    snprintf(res->plan, sizeof res->plan, "%s", r->plan);
    snprintf(res->fallback, sizeof res->fallback, "%s", r->fallback);
    res->zero_copy = zero_copy;
    res->queue_ms = r->queue_ms;
    res->upload_ms = r->upload_ms;
    res->sort_ms = r->sort_ms;
    res->download_ms = r->download_ms;
    res->daemon_ms = r->total_ms;
    res->total_ms = gs_now_ms() - t0;
}

/* Every field empty or 0, the device -1. Field by field: the strings
 * are over a kilobyte, and clearing them whole took a tenth of a call
 * that sorts 16 keys here. */
void lgs_result_clear(gsort_result *res)
{
    res->device = -1;
    res->device_name[0] = res->algorithm[0] = res->params[0] = res->plan[0] =
        res->fallback[0] = '\0';
    res->zero_copy = 0;
    res->queue_ms = res->upload_ms = res->sort_ms = res->download_ms = 0;
    res->daemon_ms = res->total_ms = 0;
}

/* What a sort in this process reports (include/gsort.h): the host sort,
 * plan "local", no daemon time. */
void lgs_fill_local(gsort_result *res, double sort_ms, double t0)
{
    res->device = -1;
    memcpy(res->algorithm, "host", sizeof "host");
    memcpy(res->plan, "local", sizeof "local");
    res->sort_ms = sort_ms;
    /* t0 < 0: a size the router does not time, whose call around the sort
     * costs some ten nanoseconds; two more clock reads would cost more
     * than sorting 16 keys */
    res->total_ms = t0 < 0 ? sort_ms : gs_now_ms() - t0;
}

/* Ask the daemon where it stops sorting as this process would (issue 36)
 * and tell the router. A daemon before the field, or a failed call, leaves
 * the router measuring as before; the connection's state is the call's
 * to report, not this one's. */
void lgs_crossover_refresh(gsort_conn *c, double now)
{
    c->xo_ms = now;
    if (!c->cl)
        return;
    gs_reply_info in;
    cJSON *h = NULL;
    gs_err ge;
    gs_err_clear(&ge);
    if (gs_client_info(c->cl, &in, &h, &ge) != 0)
        return;
    /* a shape the reply leaves out is measured as before */
    for (unsigned sh = 0; sh < LGS_SHAPES; sh++) {
        lgs_router_set_below(c->router, sh, 0);
        c->dev_from[sh] = 0;
    }
    /* every dtype of its key width; 8- and 16-bit keys: the 16-bit class's
     * (the second pass), or from a daemon that has none the 32-bit one,
     * since it sorts them as 32-bit words */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < in.ncrossover; i++) {
            const gs_reply_crossover *x = &in.crossover[i];
            for (int dt = 0; dt < LGS_DTYPES; dt++) {
                const lgs_dt *d = lgs_dt_of(dt);
                if (pass ? x->key_bits != 16 || !d || !d->narrow
                         : lgs_dt_key_bits(dt) != x->key_bits)
                    continue;
                for (int desc = 0; desc < 2; desc++) {
                    unsigned sh = lgs_shape(dt, x->payload, desc, x->stable);
                    lgs_router_set_below(c->router, sh, x->local_below);
                    c->dev_from[sh] = x->device >= 0 ? x->local_below : 0;
                    /* a bit range sorts stably: the stable shape's crossover */
                    if (x->stable)
                        lgs_router_set_below(c->router, lgs_shape_bits(sh), x->local_below);
                }
            }
        }
    }
    gs_reply_info_free(&in);
    cJSON_Delete(h);
}

/* Whether a call may sort in this process at all: only where the daemon
 * would have chosen for itself. A named algorithm, params, a device or a
 * split ask for something only the daemon does. */
int lgs_local_allowed(const gsort_conn *c, const gsort_request *rq)
{
    return !c->no_local && !(rq->flags & (GSORT_NO_LOCAL | GSORT_SPLIT)) &&
           (!rq->algorithm || strcmp(rq->algorithm, "auto") == 0) && !rq->params &&
           rq->device == -1;
}

/* The local route: 0 when sorted here, else an error with the caller's
 * arrays as they were (the daemon is then asked). An argsort sorts a copy
 * of the keys, which must not change. */
static int sort_local(gsort_conn *c, const gsort_request *rq, int preserve_keys, uint64_t rows,
                      const uint64_t *offsets, size_t segments, const gs_shape *bits,
                      double *ms, gs_err *ge)
{
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    size_t kb = rq->n * d->bytes;
    gs_sort_req req = {
        .shape = { .dtype = d->dt,
                   .payload = (gs_payload)rq->values_kind,
                   .descending = (rq->flags & GSORT_DESCENDING) != 0,
                   .stable = (rq->flags & GSORT_STABLE) != 0,
                   .rows = rows, .segments = segments,
                   .begin_bit = bits->begin_bit, .end_bit = bits->end_bit },
        .n = rq->n,
        .keys = rq->keys,
        .values = rq->values_kind == GSORT_VALUES_NONE ? NULL : rq->values,
        .offsets = offsets,
    };
    /* 8- and 16-bit keys: their words after the keys' copy, 4-aligned */
    size_t kcopy = preserve_keys ? (kb + 7) & ~(size_t)7 : 0;
    size_t need = kcopy + (d->narrow ? rq->n * sizeof(uint32_t) : 0);
    if (need) {
        int rc = lgs_heap_reserve(c, need, ge);
        if (rc)
            return rc;
    }
    if (preserve_keys && rq->n) {
        memcpy(c->heap, rq->keys, kb);
        req.keys = c->heap;
    }
    if (d->narrow)
        return rq->n ? lgs_inproc_narrow(d->narrow, &req, (uint32_t *)(void *)
                                         ((char *)c->heap + kcopy), ms, ge)
                     : (*ms = 0, 0);
    return lgs_inproc_sort(&req, ms, ge);
}

/* The request checked before anything is sent or sorted: a known dtype,
 * values kind and flags, a size that can be addressed, arrays that are
 * there, apart, and inside their gsort_alloc blocks. */
int lgs_check_request(const gsort_request *rq, gsort_error *err)
{
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    if (!d)
        return lgs_err_set(err, GSORT_EINVAL, "sort: unknown dtype %d (GSORT_U32 .. "
                           "GSORT_BF16)", (int)rq->dtype);
    if ((int)rq->values_kind < 0 || (int)rq->values_kind >= GS_PL_COUNT)
        return lgs_err_set(err, GSORT_EINVAL, "sort: unknown values_kind %d "
                           "(GSORT_VALUES_NONE .. GSORT_VALUES_IDX64)", (int)rq->values_kind);
    if (rq->flags & ~(unsigned)ALL_FLAGS)
        return lgs_err_set(err, GSORT_EINVAL, "sort: unknown flags 0x%x", rq->flags & ~ALL_FLAGS);
    if (rq->device < -1)
        return lgs_err_set(err, GSORT_EINVAL, "sort: device %d (an index, or -1 for any)",
                           rq->device);
    gs_payload pl = (gs_payload)rq->values_kind;
    size_t n = rq->n, ks = d->bytes, vs = gs_payload_size(pl);
    /* Bound n so that keys, padding and values (a narrow key's words
     * too, for the local route) fit in size_t together. */
    if ((uint64_t)n > GS_PROTO_MAX_N || n > (SIZE_MAX - 8) / (ks + vs + 4))
        return lgs_err_set(err, GSORT_ETOOBIG, "sort: %zu %s keys%s are more than can be "
                           "addressed or sent", n, d->name, vs ? " with values" : "");
    if (pl == GS_PL_IDX32 && (uint64_t)n > UINT32_MAX)
        return lgs_err_set(err, GSORT_ETOOBIG, "sort: 32-bit indices cannot number %zu keys "
                           "(use 64-bit ones)", n);
    size_t kb = n * ks, vb = n * vs;
    if (n && !rq->keys)
        return lgs_err_set(err, GSORT_EINVAL, "sort: keys is NULL for %zu keys", n);
    if (n && vs && !rq->values)
        return lgs_err_set(err, GSORT_EINVAL, "sort: values is NULL for %zu %s values", n,
                           gs_payload_name(pl));
    if (n && vs && overlap(rq->keys, kb, rq->values, vb))
        return lgs_err_set(err, GSORT_EINVAL, "sort: the keys and values arrays overlap");
    size_t boff, bsize;
    if (n && lgs_block_overrun(rq->keys, kb, &boff, &bsize))
        return lgs_err_set(err, GSORT_EINVAL, "sort: %zu %s keys (%zu bytes) at offset %zu "
                           "run past the end of their gsort_alloc block of %zu bytes", n,
                           d->name, kb, boff, bsize);
    if (n && vs && lgs_block_overrun(rq->values, vb, &boff, &bsize))
        return lgs_err_set(err, GSORT_EINVAL, "sort: %zu %s values (%zu bytes) at offset %zu "
                           "run past the end of their gsort_alloc block of %zu bytes", n,
                           gs_payload_name(pl), vb, boff, bsize);

    return 0;
}

/* A call without a bit range (run_sort's bits). */
static const gs_shape no_bits;

/* Every sort call. preserve_keys (argsort): the caller's keys stay as they
 * are, so the daemon sorts a copy and only the values come back. bits: a
 * bit range (begin_bit and end_bit; end_bit 0: the whole key), checked by
 * gsort_run_bits, sorted stably and timed under its own shape. rows > 1:
 * the n keys are that many equal rows, each sorted on its own; sorted here
 * whenever the call may be (the daemon would sort them with the same host
 * sort, after two copies), else by the daemon. segments > 0: the n keys
 * are that many segments given by segments + 1 offsets, sorted here
 * whenever the call may be (the daemon sorts them on its host too), else
 * by the daemon, the offsets staged after the arrays. */
static int run_sort(gsort_conn *c, const gsort_request *rq, int preserve_keys, uint64_t rows,
                    const uint64_t *offsets, size_t segments, const gs_shape *bits,
                    gsort_result *res, gsort_error *err)
{
    /* The call's start, for the router's times and the result's total:
     * not read for sizes the router does not time until the daemon is
     * asked (a clock read costs a third of sorting 16 keys here: on a
     * virtual machine's clock, 25 ns) */
    double t0 = lgs_router_local_only(rq ? rq->n : 0) ? -1 : gs_now_ms();
    lgs_err_clear(err);
    if (res) {
        lgs_result_clear(res);
    }
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "sort: no connection");
    if (!rq)
        return lgs_err_set(err, GSORT_EINVAL, "sort: no request");
    int rc = lgs_check_request(rq, err);
    if (rc)
        return rc;
    if (rows > 1 && rq->n % rows)
        return lgs_err_set(err, GSORT_EINVAL, "sort: %llu rows do not divide %zu keys into "
                           "equal rows", (unsigned long long)rows, rq->n);
    if (rq->flags & GSORT_UNSORTED)
        return lgs_err_set(err, GSORT_EINVAL, "sort: GSORT_UNSORTED is for gsort_topk only");
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    gs_dtype dt = d->dt;
    gs_payload pl = (gs_payload)rq->values_kind;
    size_t n = rq->n, ks = d->bytes, vs = gs_payload_size(pl);
    size_t kb = n * ks, vb = n * vs;
    gs_err ge;
    gs_err_clear(&ge);
    if (segments) {     /* checked here once, so that a lie is the caller's error at once */
        if ((uint64_t)segments > GS_PROTO_MAX_N)
            return lgs_err_set(err, GSORT_ETOOBIG, "sort: %zu segments are more than can be "
                               "sent", segments);
        gs_sort_req sr = { .shape = { .dtype = dt, .payload = pl, .segments = segments },
                           .n = n, .keys = rq->keys, .values = vs ? rq->values : NULL,
                           .offsets = offsets };
        if ((rc = gs_sort_req_check(&sr, &ge)) < 0)
            return lgs_err_from(err, rc, &ge);
    }

    gs_client_sort s = {
        .shape = { .dtype = dt,
                   .payload = pl,
                   .descending = (rq->flags & GSORT_DESCENDING) != 0,
                   .stable = (rq->flags & GSORT_STABLE) != 0 || gs_shape_has_bits(bits),
                   .begin_bit = bits->begin_bit, .end_bit = bits->end_bit },
        .n = n,
        .keys = n ? rq->keys : NULL,
        .values = n && vs ? rq->values : NULL,
        .algorithm = rq->algorithm,
        .params = rq->params,
        .device = rq->device,
        .split = (rq->flags & GSORT_SPLIT) != 0,
        .narrow = d->narrow,
    };
    s.shape.rows = rows > 1 ? rows : 0;
    s.shape.segments = segments;
    s.offsets = offsets;
    int may_local = lgs_local_allowed(c, rq);
    unsigned shape = lgs_shape(rq->dtype, rq->values_kind, s.shape.descending, s.shape.stable);
    if (gs_shape_has_bits(bits))
        shape = lgs_shape_bits(shape);
    if (may_local && t0 >= 0 && (c->xo_ms == 0 || t0 - c->xo_ms > LGS_XO_REFRESH_MS))
        lgs_crossover_refresh(c, t0);
    /* rows: here, where the daemon would sort them on its host cores too;
     * from the size at which it hands the shape to a device, the daemon
     * (a GPU sorts every row in one launch) */
    int parts = s.shape.rows || segments;   /* rows or segments: not the router's to time */
    int rows_here = (s.shape.rows && !(c->dev_from[shape] && n >= c->dev_from[shape])) ||
                    segments;   /* the daemon's host sorts segments: as well here */
    if (may_local && (rows_here || (!parts && lgs_router_choose(c->router, shape, n)))) {
        double ms = 0;      /* the sort's own time (gs_sort_run's clock) */
        if (sort_local(c, rq, preserve_keys, s.shape.rows, offsets, segments, bits, &ms,
                       &ge) == 0) {
            /* the whole call, as for the daemon's route below */
            if (!lgs_router_local_only(n) && !parts)
                lgs_router_record(c->router, shape, n, 1, gs_now_ms() - t0);
            if (res)
                lgs_fill_local(res, ms, t0);
            return 0;
        }
        gs_err_clear(&ge);      /* out of memory here: the daemon may have it */
    }
    if (t0 < 0)
        t0 = gs_now_ms();
    rc = lgs_conn_ready(c, err);
    if (rc)
        return rc;
    gs_client_result r;
    int zero_copy = 0;
    if (n == 0) {
        /* Nothing to share or copy: the daemon still says how it served. */
        rc = gs_client_sort_run(c->cl, &s, &r, &ge);
        goto done;
    }
    int inl = (rq->flags & GSORT_INLINE) || c->no_memfd;
    size_t voff = (kb + 7) & ~(size_t)7, need = voff + vb;
    /* segments: the offsets staged after the arrays, 8-aligned */
    size_t ooff = (need + 7) & ~(size_t)7, ob = segments ? 8 * (segments + 1) : 0;
    if (segments && (ooff < need || ob / 8 != segments + 1 || ob > SIZE_MAX - ooff))
        return lgs_err_set(err, GSORT_ETOOBIG, "sort: %zu segments overflow the address "
                           "space", segments);
    if (segments)
        need = ooff + ob;

    /* Zero copy: the block's memfd with offsets. Blocks are page-aligned,
     * so an aligned pointer is an aligned offset, as the protocol wants.
     * Segments are staged: their offsets need not lie in the block. */
    gs_client_shm blk;
    if (!inl && !preserve_keys && !segments && (uintptr_t)rq->keys % ks == 0 &&
        (!vs || (uintptr_t)rq->values % vs == 0) &&
        lgs_block_find(rq->keys, kb, s.values, vb, &blk)) {
        s.shm = &blk;
        rc = gs_client_sort_run(c->cl, &s, &r, &ge);
        close(blk.fd);
        uintptr_t end = (uintptr_t)rq->keys + kb;
        if (vs && (uintptr_t)rq->values + vb > end)
            end = (uintptr_t)rq->values + vb;
        /* The daemon limits the mapped length (the end of the last array),
         * so arrays far into a large block may be refused where a staged
         * copy, starting at 0, is not. */
        if (rc != GS_ETOOBIG || end - (uintptr_t)blk.ptr <= need) {
            zero_copy = 1;
            goto done;
        }
        s.shm = NULL;
        gs_err_clear(&ge);
    }

    /* Staged: a copy in the staging memfd, or in memory for inline. */
    if (!inl) {
        rc = stage_reserve(c, need, &ge);
        if (rc == GS_EIO)
            c->no_memfd = 1;    /* memfd_create or sealing is not available here */
        if (rc) {
            inl = 1;            /* inline needs no shared memory */
            gs_err_clear(&ge);
        }
    }
    if (inl && (rc = lgs_heap_reserve(c, need, &ge)) != 0)
        goto done;
    char *base = inl ? c->heap : c->stage.ptr;
    gs_pcopy(base, rq->keys, kb);
    if (pl == GS_PL_U32 || pl == GS_PL_U64)
        gs_pcopy(base + voff, rq->values, vb);
    if (segments)
        memcpy(base + ooff, offsets, ob);
    s.keys = base;
    s.values = vs ? base + voff : NULL;
    s.offsets = segments ? (const uint64_t *)(const void *)(base + ooff) : NULL;
    s.shm = inl ? NULL : &c->stage;
    rc = gs_client_sort_run(c->cl, &s, &r, &ge);
    if (!rc) {
        if (!preserve_keys)
            gs_pcopy(rq->keys, base, kb);
        if (vs)
            gs_pcopy(rq->values, base + voff, vb);
    }
    zero_copy = !inl;

done:
    if (rc)
        return lgs_err_from(err, rc, &ge);
    if (may_local && !parts)            /* the daemon's time as the caller saw it */
        lgs_router_record(c->router, shape, n, 0, gs_now_ms() - t0);
    if (res)
        lgs_fill_result(res, &r, zero_copy, t0);
    return 0;
}

int gsort_topk(gsort_conn *c, const gsort_request *rq, size_t rows, size_t k, void *out_keys,
               void *out_values, gsort_result *res, gsort_error *err)
{
    double t0 = gs_now_ms();
    lgs_err_clear(err);
    if (res)
        lgs_result_clear(res);
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "topk: no connection");
    if (!rq)
        return lgs_err_set(err, GSORT_EINVAL, "topk: no request");
    gsort_request q = *rq;          /* indices are out_values', not an input */
    if (q.values_kind == GSORT_VALUES_IDX32 || q.values_kind == GSORT_VALUES_IDX64) {
        q.values_kind = GSORT_VALUES_NONE;
        q.values = NULL;
    }
    int rc = lgs_check_request(&q, err);
    if (rc)
        return rc;
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    size_t nrows = rows > 1 ? rows : 1, n = rq->n, len = n / nrows;
    if (n % nrows)
        return lgs_err_set(err, GSORT_EINVAL, "topk: %zu rows do not divide %zu keys into "
                           "equal rows", rows, n);
    if (k > len)
        return lgs_err_set(err, GSORT_EINVAL, "topk: k = %zu exceeds the %zu keys of a row",
                           k, len);
    gs_dtype dt = d->dt;
    gs_payload pl = (gs_payload)rq->values_kind;
    size_t ks = d->bytes, vs = gs_payload_size(pl), m = nrows * k;
    if (m && !out_keys)
        return lgs_err_set(err, GSORT_EINVAL, "topk: out_keys is NULL for %zu answers", m);
    if (m && vs && !out_values)
        return lgs_err_set(err, GSORT_EINVAL, "topk: out_values is NULL for %zu answers", m);

    /* the caller's arrays stay as they are: a copy is selected in */
    size_t kb = n * ks, vb = n * vs, voff = (kb + 7) & ~(size_t)7, need = voff + vb;
    gs_client_sort s = {
        .shape = { .dtype = dt, .payload = pl,
                   .descending = (rq->flags & GSORT_DESCENDING) != 0,
                   .stable = (rq->flags & GSORT_STABLE) != 0,
                   .rows = rows > 1 ? rows : 0, .topk = 1, .k = k,
                   .unsorted = (rq->flags & GSORT_UNSORTED) != 0 },
        .n = n, .algorithm = rq->algorithm, .params = rq->params, .device = rq->device,
        .split = (rq->flags & GSORT_SPLIT) != 0, .narrow = d->narrow,
    };
    gs_err ge;
    gs_err_clear(&ge);
    int local = lgs_local_allowed(c, rq) && n < GSORT_TOPK_LOCAL_MAX, zero_copy = 0;
    int inl = local || (rq->flags & GSORT_INLINE) || c->no_memfd;
    char *base = NULL;
    if (n && (rc = lgs_copy_space(c, need, inl, &base, &inl, &ge)) != 0)
        return lgs_err_from(err, rc, &ge);
    if (n) {
        gs_pcopy(base, rq->keys, kb);
        if (pl == GS_PL_U32 || pl == GS_PL_U64)
            gs_pcopy(base + voff, rq->values, vb);
    }
    gs_sort_req sel = { .shape = s.shape, .n = n, .keys = base,
                        .values = vs ? base + voff : NULL };
    double ms = 0;
    gs_client_result r;
    if (local && d->narrow && n) {
        /* 8- and 16-bit keys: their words selected, decoded back */
        uint32_t *words = malloc(n * sizeof *words);
        rc = words ? lgs_inproc_narrow(d->narrow, &sel, words, &ms, &ge)
                   : gs_err_set(&ge, GS_ENOMEM, "topk: out of memory for %zu words", n);
        free(words);
        if (rc == 0)
            gs_select_pack_keys(&sel, base, ks);
    } else if (local) {
        if ((rc = lgs_inproc_sort(&sel, &ms, &ge)) == 0)
            gs_select_pack(&sel);
    } else {
        if ((rc = lgs_conn_ready(c, err)) != 0)
            return rc;
        s.keys = n ? base : NULL;
        s.values = n && vs ? base + voff : NULL;
        s.shm = inl || !n ? NULL : &c->stage;
        rc = gs_client_sort_run(c->cl, &s, &r, &ge);
        zero_copy = !inl;
        if (rc == 0 && s.shm)       /* in each row's first places: together, as inline */
            gs_select_pack_keys(&sel, base, ks);
    }
    if (rc)
        return lgs_err_from(err, rc, &ge);
    if (m) {
        memcpy(out_keys, base, m * ks);
        if (vs)
            memcpy(out_values, base + voff, m * vs);
    }
    if (res) {
        if (local)
            lgs_fill_local(res, ms, t0);
        else
            lgs_fill_result(res, &r, zero_copy, t0);
    }
    return 0;
}

int gsort_run(gsort_conn *c, const gsort_request *rq, gsort_result *res, gsort_error *err)
{
    return run_sort(c, rq, 0, 0, NULL, 0, &no_bits, res, err);
}

int gsort_run_rows(gsort_conn *c, const gsort_request *rq, size_t rows, gsort_result *res,
                   gsort_error *err)
{
    return run_sort(c, rq, 0, rows, NULL, 0, &no_bits, res, err);
}

int gsort_run_segments(gsort_conn *c, const gsort_request *rq, const uint64_t *offsets,
                       size_t segments, gsort_result *res, gsort_error *err)
{
    if (segments == 0 || !offsets) {
        lgs_err_clear(err);
        if (res)
            lgs_result_clear(res);
        return lgs_err_set(err, GSORT_EINVAL, "sort: %s (segments + 1 offsets, 0 first, n "
                           "last)", segments ? "the segment offsets are NULL"
                                             : "no segments (at least one is needed)");
    }
    return run_sort(c, rq, 0, 0, offsets, segments, &no_bits, res, err);
}

int gsort_run_bits(gsort_conn *c, const gsort_request *rq, unsigned begin_bit,
                   unsigned end_bit, gsort_result *res, gsort_error *err)
{
    lgs_err_clear(err);
    if (res)
        lgs_result_clear(res);
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "sort: no connection");
    if (!rq)
        return lgs_err_set(err, GSORT_EINVAL, "sort: no request");
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    if (!d)
        return lgs_check_request(rq, err);      /* says which dtypes there are */
    /* the daemon's rules (gs_proto_req.c), here before anything is sent */
    if (d->narrow || gs_dtype_row(d->dt)->kind == GS_KIND_FLOAT)
        return lgs_err_set(err, GSORT_EUNSUPPORTED, "sort: a bit range sorts 32- and 64-bit "
                           "integer keys (u32, i32, u64, i64), not %s", d->name);
    const unsigned kb = d->bytes * 8;
    if (begin_bit >= end_bit || end_bit > kb)
        return lgs_err_set(err, GSORT_EINVAL, "sort: bit range [%u, %u) is not within the %u "
                           "bits of a %s key (0 <= begin_bit < end_bit <= %u)", begin_bit,
                           end_bit, kb, d->name, kb);
    /* the whole key is no range */
    gs_shape bits = { .begin_bit = begin_bit, .end_bit = end_bit };
    if (begin_bit == 0 && end_bit == kb)
        bits.end_bit = 0;
    return run_sort(c, rq, 0, 0, NULL, 0, &bits, res, err);
}

int gsort_sort_rows(gsort_conn *c, gsort_dtype dtype, void *keys, size_t rows, size_t row_len,
                    unsigned flags, gsort_result *res, gsort_error *err)
{
    if (row_len && rows > SIZE_MAX / row_len)
        return lgs_err_set(err, GSORT_ETOOBIG, "sort: %zu rows of %zu keys overflow the "
                           "address space", rows, row_len);
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = dtype;
    rq.keys = keys;
    rq.n = rows * row_len;
    rq.flags = flags;
    return run_sort(c, &rq, 0, rows, NULL, 0, &no_bits, res, err);
}

int gsort_sort(gsort_conn *c, gsort_dtype dtype, void *keys, size_t n, unsigned flags,
               gsort_result *res, gsort_error *err)
{
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = dtype;
    rq.keys = keys;
    rq.n = n;
    rq.flags = flags;
    return run_sort(c, &rq, 0, 0, NULL, 0, &no_bits, res, err);
}

static int argsort(gsort_conn *c, gsort_dtype dtype, const void *keys, size_t n, void *idx,
                   gsort_values kind, unsigned flags, gsort_result *res, gsort_error *err)
{
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = dtype;
    rq.keys = (void *)keys;     /* only read: run_sort sorts a copy */
    rq.n = n;
    rq.values_kind = kind;
    rq.values = idx;
    rq.flags = flags;
    return run_sort(c, &rq, 1, 0, NULL, 0, &no_bits, res, err);
}

int gsort_argsort(gsort_conn *c, gsort_dtype dtype, const void *keys, size_t n, uint64_t *idx,
                  unsigned flags, gsort_result *res, gsort_error *err)
{
    return argsort(c, dtype, keys, n, idx, GSORT_VALUES_IDX64, flags, res, err);
}

int gsort_argsort32(gsort_conn *c, gsort_dtype dtype, const void *keys, size_t n,
                    uint32_t *idx, unsigned flags, gsort_result *res, gsort_error *err)
{
    return argsort(c, dtype, keys, n, idx, GSORT_VALUES_IDX32, flags, res, err);
}

int gsort_sort_by_key(gsort_conn *c, gsort_dtype dtype, void *keys, void *values,
                      size_t value_size, size_t n, unsigned flags, gsort_result *res,
                      gsort_error *err)
{
    if (value_size != 4 && value_size != 8) {
        lgs_err_clear(err);
        if (res) {
            lgs_result_clear(res);
        }
        return lgs_err_set(err, GSORT_EINVAL, "gsort_sort_by_key: values of %zu bytes (4 or "
                           "8 bytes each)", value_size);
    }
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = dtype;
    rq.keys = keys;
    rq.n = n;
    rq.values_kind = value_size == 4 ? GSORT_VALUES_U32 : GSORT_VALUES_U64;
    rq.values = values;
    rq.flags = flags;
    return run_sort(c, &rq, 0, 0, NULL, 0, &no_bits, res, err);
}

/* ---- the daemon ---- */

int gsort_ping(gsort_conn *c, double *rtt_ms, gsort_error *err)
{
    lgs_err_clear(err);
    if (rtt_ms)
        *rtt_ms = 0;
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "gsort_ping: no connection");
    int rc = lgs_conn_ready(c, err);
    if (rc)
        return rc;
    gs_err ge;
    gs_err_clear(&ge);
    double t0 = gs_now_ms();
    rc = gs_client_call(c->cl, "ping", NULL, &ge);
    if (rc)
        return lgs_err_from(err, rc, &ge);
    if (rtt_ms)
        *rtt_ms = gs_now_ms() - t0;
    return 0;
}

/* info or stats: the reply header as JSON text in memory of our malloc (an
 * application's cJSON hooks must not decide how the caller frees it). */
static int call_json(gsort_conn *c, const char *op, char **json, gsort_error *err)
{
    lgs_err_clear(err);
    if (!json)
        return lgs_err_set(err, GSORT_EINVAL, "gsort_%s: json is NULL", op);
    *json = NULL;
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "gsort_%s: no connection", op);
    int rc = lgs_conn_ready(c, err);
    if (rc)
        return rc;
    gs_err ge;
    gs_err_clear(&ge);
    cJSON *reply = NULL;
    rc = gs_client_call(c->cl, op, &reply, &ge);
    if (rc) {
        cJSON_Delete(reply);
        return lgs_err_from(err, rc, &ge);
    }
    char *text = cJSON_Print(reply);
    cJSON_Delete(reply);
    char *copy = text ? strdup(text) : NULL;
    cJSON_free(text);
    if (!copy)
        return lgs_err_set(err, GSORT_ENOMEM, "gsort_%s: out of memory printing the reply", op);
    *json = copy;
    return 0;
}

int gsort_info(gsort_conn *c, char **json, gsort_error *err)
{
    return call_json(c, "info", json, err);
}

int gsort_stats(gsort_conn *c, char **json, gsort_error *err)
{
    return call_json(c, "stats", json, err);
}
