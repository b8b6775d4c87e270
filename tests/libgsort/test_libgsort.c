/* Tests of libgsort (include/gsort.h) against real daemons (tests/support/dmn.h):
 * every call in every dtype, order and stability, through each route (a
 * gsort_alloc block sorted in place, a staged copy, GSORT_INLINE), checked
 * against tests/support/sortcheck's reference; which route ran (the staging memfd
 * seen in /proc/self/maps, result.zero_copy); n = 0 and 1, NaNs, arrays
 * misaligned inside a block; argsort leaving the keys alone; info, stats
 * and ping; each kind of bad input, daemon errors passing through with the
 * connection kept, max_request_bytes, timeouts, a daemon that went away,
 * a daemon restarted under a connection (the next call reconnects; the
 * first cause of the loss is kept while none listens), no daemon at all; the default socket ($GSORTD_SOCKET, $XDG_RUNTIME_DIR);
 * threads sorting their own blocks while others allocate and free; a few
 * sorts on the OpenCL device; and the README's example program. Those
 * checks are about the daemon's routes, so they run with GSORT_NO_LOCAL=1;
 * test_local checks sorting in the caller's process (issue 36): the same
 * bits as the daemon's for every dtype, call, order and NaN case, what
 * never goes local, the environment variable, and the router's rules on
 * recorded times (gsort_local.c, linked into this program directly: its
 * lgs_* functions are not exported). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gsort.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"
#include "gsort_int.h"
#include "gs_err.h"
#include "gs_dev.h"
#include "gs_db.h"

static dmn g_main;      /* host only: most checks */

static gsort_conn *conn_or_bail(const char *sock)
{
    gsort_conn *c = NULL;
    gsort_error err;
    if (gsort_connect(&c, sock, &err) != 0)
        tap_bail("cannot connect to %s: %s", sock, err.message);
    return c;
}

/* A test's own daemon (bails out when it does not start) and a connection to it. */
static gsort_conn *start_and_connect(dmn *d, const char *name, const char *const *extra)
{
    if (dmn_start(d, name, NULL, extra))
        tap_bail("the daemon '%s' did not start", name);
    return conn_or_bail(d->sock);
}

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Lines of /proc/self/maps naming `what` ("memfd:gsort-stage"); the first
 * such line into first (when not NULL). */
static int maps_count(const char *what, char *first, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        tap_bail("/proc/self/maps: %s", strerror(errno));
    char line[1024];
    int n = 0;
    if (first && len)
        first[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (strstr(line, what)) {
            if (!n && first) {
                line[strcspn(line, "\n")] = '\0';
                snprintf(first, len, "%.500s", line);
            }
            n++;
        }
    fclose(f);
    return n;
}

static int stage_maps(char *first, size_t len)
{
    return maps_count("/memfd:gsort-stage", first, len);
}

/* ---- the matrix: every API call x dtype x order x stability x size ---- */

enum { R_BLOCK = 0, R_STAGED, R_INLINE, R_COUNT };
static const char *const route_names[] = { "gsort_alloc block", "staged", "GSORT_INLINE" };

enum { A_SORT = 0, A_BYKEY32, A_BYKEY64, A_ARG32, A_ARG64, A_COUNT };
static const char *const api_names[] = { "gsort_sort", "gsort_sort_by_key(4)",
                                         "gsort_sort_by_key(8)", "gsort_argsort32",
                                         "gsort_argsort" };
static const gs_payload api_payload[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                          GS_PL_IDX64 };

/* One call of the API (api: A_*) on keys and values. */
static int api_call(gsort_conn *c, int api, gsort_dtype dt, void *keys, void *vals, size_t n,
                    unsigned flags, gsort_result *res, gsort_error *err)
{
    switch (api) {
    case A_SORT: return gsort_sort(c, dt, keys, n, flags, res, err);
    case A_BYKEY32: return gsort_sort_by_key(c, dt, keys, vals, 4, n, flags, res, err);
    case A_BYKEY64: return gsort_sort_by_key(c, dt, keys, vals, 8, n, flags, res, err);
    case A_ARG32: return gsort_argsort32(c, dt, keys, n, vals, flags, res, err);
    default: return gsort_argsort(c, dt, keys, n, vals, flags, res, err);
    }
}

/* After an argsort of a sortcheck case: the keys must be as they were;
 * the sorted keys the checker wants are the input keys the indices point
 * at, put in their place. 0, or -1 with the reason in why. */
static int argsort_to_keys(sc_case *sc, int api, gs_dtype t, size_t n, char *why, size_t wl)
{
    size_t ks = gs_dtype_size(t);
    if (memcmp(sc->req.keys, sc->in_keys, n * ks) != 0) {
        snprintf(why, wl, "argsort changed the caller's keys");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t ix = api == A_ARG32 ? ((uint32_t *)sc->req.values)[i]
                                     : ((uint64_t *)sc->req.values)[i];
        if (ix >= n) {
            snprintf(why, wl, "index[%zu] = %" PRIu64 " is out of range", i, ix);
            return -1;
        }
        memcpy((char *)sc->req.keys + i * ks, (char *)sc->in_keys + ix * ks, ks);
    }
    return 0;
}

/* One sort through the API on a sortcheck case; 1 when the answer and the
 * route are right, else 0 with the reason in why. */
static int api_case(gsort_conn *c, int api, int route, gs_dtype t, int desc, int stable,
                    size_t n, int dist, uint64_t seed, char *why, size_t wl)
{
    sc_case sc;
    gs_payload p = api_payload[api];
    if (sc_case_init(&sc, t, p, desc, n, dist, seed) < 0) {
        snprintf(why, wl, "out of memory for the case");
        return 0;
    }
    size_t kb = n * gs_dtype_size(t), vb = n * gs_payload_size(p), voff = (kb + 7) & ~(size_t)7;
    char *blk = NULL;
    void *keys = sc.req.keys, *vals = sc.req.values;
    if (route == R_BLOCK) {
        blk = gsort_alloc(voff + vb + 8, NULL);
        if (!blk) {
            snprintf(why, wl, "gsort_alloc failed");
            sc_case_free(&sc);
            return 0;
        }
        memcpy(blk, sc.req.keys, kb);
        if (vb)
            memcpy(blk + voff, sc.req.values, vb);
        keys = blk;
        vals = blk + voff;
    }
    unsigned flags = (desc ? GSORT_DESCENDING : 0) | (stable ? GSORT_STABLE : 0) |
                     (route == R_INLINE ? GSORT_INLINE : 0);
    gsort_result res;
    gsort_error err;
    int rc = api_call(c, api, (gsort_dtype)t, keys, vals, n, flags, &res, &err);
    int ok = 0;
    if (rc != 0) {
        snprintf(why, wl, "%s: %.400s", gsort_strerror(rc), err.message);
        goto out;
    }
    if (err.code != 0) {
        snprintf(why, wl, "success left err.code = %d", err.code);
        goto out;
    }
    int want_zc = n > 0 && route != R_INLINE;
    if (res.zero_copy != want_zc) {
        snprintf(why, wl, "result.zero_copy = %d, expected %d", res.zero_copy, want_zc);
        goto out;
    }
    if (!res.algorithm[0] || !res.plan[0]) {
        snprintf(why, wl, "the result names no algorithm or plan ('%s', '%s')", res.algorithm,
                 res.plan);
        goto out;
    }
    if (blk) {
        memcpy(sc.req.keys, blk, kb);
        if (vb)
            memcpy(sc.req.values, blk + voff, vb);
    }
    if ((api == A_ARG32 || api == A_ARG64) && argsort_to_keys(&sc, api, t, n, why, wl) < 0)
        goto out;
    ok = sc_case_verify(&sc, stable, why, wl);
out:
    gsort_free(blk);
    sc_case_free(&sc);
    return ok;
}

static void test_matrix(const dmn *d)
{
    static const size_t sizes[] = { 0, 1, 2, 33, 1000, 20011 };
    const size_t ns = sizeof sizes / sizeof sizes[0];
    gsort_conn *c = conn_or_bail(d->sock);
    uint64_t seed = 1;
    for (int route = 0; route < R_COUNT; route++)
        for (int api = 0; api < A_COUNT; api++)
            for (int t = 0; t < GS_DT_COUNT; t++) {
                int isf = t == GS_DT_F32 || t == GS_DT_F64, bad = 0, runs = 0;
                char first[700] = "";
                for (int desc = 0; desc < 2; desc++)
                    for (int stable = 0; stable < 2; stable++)
                        for (size_t si = 0; si < ns; si++) {
                            /* Few distinct keys test stability; floats get
                             * NaNs, signed zeros and infinities. */
                            int dist = stable ? SC_FEW16
                                              : isf && si % 2 ? SC_FSPECIAL : SC_RANDOM;
                            char why[600] = "";
                            runs++;
                            if (!api_case(c, api, route, (gs_dtype)t, desc, stable, sizes[si],
                                          dist, seed++, why, sizeof why) && !bad++)
                                snprintf(first, sizeof first, "%s n=%zu %s: %s",
                                         desc ? "desc" : "asc", sizes[si],
                                         stable ? "stable" : "any", why);
                        }
                tap_ok(!bad, "%s, %s, %s: %d sorts (asc/desc, stable/not, n = 0 .. 20011)%s%s",
                       route_names[route], api_names[api], gs_dtype_name((gs_dtype)t),
                       runs, bad ? ", first failure: " : "", first);
            }
    gsort_close(c);
}

/* ---- routes: what goes through shared memory and what is copied ---- */

static int u32_sorted(const uint32_t *k, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (k[i - 1] > k[i])
            return 0;
    return 1;
}

static void fill_u32(uint32_t *k, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        k[i] = x;
    }
}

static void test_routes(const dmn *d)
{
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_result res;
    gsort_error err;
    char line1[512], line2[512];
    tap_ok(stage_maps(NULL, 0) == 0, "a new connection has no staging memfd mapped");

    size_t n = 50000;
    uint32_t *blk = gsort_alloc(4 * n + 64, &err);
    if (!blk)
        tap_bail("gsort_alloc: %.200s", err.message);
    int blocks = maps_count("/memfd:gsort-block", NULL, 0);
    tap_ok(blocks >= 1, "gsort_alloc maps a memfd block (%d mapped)", blocks);
    for (size_t i = 0; i < n + 16; i++)
        blk[i] = 0;
    fill_u32(blk, n, 1);
    int rc = gsort_sort(c, GSORT_U32, blk, n, 0, &res, &err);
    tap_ok(rc == 0 && u32_sorted(blk, n) && res.zero_copy == 1 && stage_maps(NULL, 0) == 0,
           "keys in a block are sorted in place: rc %d, zero_copy %d, staging memfds %d (0: no "
           "copy was made)", rc, res.zero_copy, stage_maps(NULL, 0));

    /* An interior, aligned slice of a block: still in place. */
    fill_u32(blk + 1000, 2000, 2);
    uint32_t before = blk[999], after = blk[3000];
    rc = gsort_sort(c, GSORT_U32, blk + 1000, 2000, GSORT_DESCENDING, &res, &err);
    int desc_ok = 1;
    for (size_t i = 1001; i < 3000; i++)
        desc_ok &= blk[i - 1] >= blk[i];
    tap_ok(rc == 0 && desc_ok && blk[999] == before && blk[3000] == after &&
           res.zero_copy == 1 && stage_maps(NULL, 0) == 0,
           "an aligned slice inside a block is sorted in place, its neighbours untouched");

    /* n running past the block's end (issue 34: this copied past the
     * mapping and crashed): refused with GSORT_EINVAL naming the block,
     * before anything is read or sent; likewise for values. */
    uint32_t *snap = malloc(4 * (n + 16));
    if (!snap)
        tap_bail("out of memory");
    memcpy(snap, blk, 4 * (n + 16));
    gsort_error oe;
    rc = gsort_sort(c, GSORT_U32, blk + 1000, n, 0, &res, &oe);
    int over_k = rc == GSORT_EINVAL && oe.code == GSORT_EINVAL &&
                 strstr(oe.message, "run past the end of their gsort_alloc block");
    gsort_request orq;
    gsort_request_init(&orq);
    orq.dtype = GSORT_U32;
    orq.n = 2000;
    orq.keys = blk;
    orq.values_kind = GSORT_VALUES_U32;
    orq.values = blk + n + 16 - 100;
    gsort_error verr;
    int rcv = gsort_run(c, &orq, &res, &verr);
    int over_v = rcv == GSORT_EINVAL && strstr(verr.message, "values") &&
                 strstr(verr.message, "run past the end");
    tap_ok(over_k && over_v && memcmp(snap, blk, 4 * (n + 16)) == 0,
           "keys or values running past their gsort_alloc block: GSORT_EINVAL, the block "
           "untouched (%s; %s)", oe.message, verr.message);
    free(snap);

    /* Misaligned inside the block: the protocol wants aligned offsets, so
     * the library stages it. */
    uint32_t ref[777];
    unsigned char *mis = (unsigned char *)blk + 4 * n + 1;
    fill_u32(ref, 777, 3);
    memcpy(mis - 4 * 777 - 8, ref, sizeof ref);   /* inside the block, odd address */
    unsigned char *mk = mis - 4 * 777 - 8;
    rc = gsort_sort(c, GSORT_U32, mk, 777, 0, &res, &err);
    uint32_t got[777];
    memcpy(got, mk, sizeof got);
    tap_ok(((uintptr_t)mk & 3) != 0 && rc == 0 && u32_sorted(got, 777) && res.zero_copy == 1 &&
           stage_maps(line1, sizeof line1) == 1,
           "misaligned keys inside a block are staged through one staging memfd and sorted: "
           "rc %d %s", rc, rc ? err.message : "");

    /* Ordinary memory: staged, the same staging memfd reused. */
    uint32_t *heap = malloc(4 * 3000);
    fill_u32(heap, 3000, 4);
    rc = gsort_sort(c, GSORT_U32, heap, 3000, 0, &res, &err);
    stage_maps(line2, sizeof line2);
    tap_ok(rc == 0 && u32_sorted(heap, 3000) && res.zero_copy == 1 &&
           stage_maps(NULL, 0) == 1 && strcmp(line1, line2) == 0,
           "malloc'd keys are staged, reusing the connection's staging memfd (%s)", line2);
    free(heap);

    /* Keys in a block, values elsewhere: staged as a pair. */
    uint32_t *vals = malloc(4 * 1000);
    fill_u32(blk, 1000, 5);
    for (uint32_t i = 0; i < 1000; i++)
        vals[i] = blk[i] ^ 0x5a5a5a5au;
    rc = gsort_sort_by_key(c, GSORT_U32, blk, vals, 4, 1000, 0, &res, &err);
    int pairs = 1;
    for (uint32_t i = 0; i < 1000; i++)
        pairs &= vals[i] == (blk[i] ^ 0x5a5a5a5au);
    tap_ok(rc == 0 && u32_sorted(blk, 1000) && pairs && res.zero_copy == 1,
           "keys in a block with values in malloc'd memory: staged, values follow their keys");
    free(vals);

    /* Keys and values in one block: in place. */
    uint32_t *bv = blk + 2000;
    fill_u32(blk, 1000, 6);
    for (uint32_t i = 0; i < 1000; i++)
        bv[i] = ~blk[i];
    gsort_close(c);     /* a fresh connection has no staging memfd yet */
    tap_ok(stage_maps(NULL, 0) == 0, "gsort_close frees the staging memfd");
    c = conn_or_bail(d->sock);
    rc = gsort_sort_by_key(c, GSORT_U32, blk, bv, 4, 1000, GSORT_STABLE, &res, &err);
    pairs = 1;
    for (uint32_t i = 0; i < 1000; i++)
        pairs &= bv[i] == ~blk[i];
    tap_ok(rc == 0 && u32_sorted(blk, 1000) && pairs && res.zero_copy == 1 &&
           stage_maps(NULL, 0) == 0, "keys and values in one block are sorted in place");

    /* gsort_run with indices: keys and indices in one block, both in place. */
    fill_u32(blk, 3000, 16);
    uint32_t *orig = malloc(4 * 3000);
    memcpy(orig, blk, 4 * 3000);
    uint64_t *bix = (uint64_t *)(blk + 4000);   /* 8-aligned: blk is page-aligned */
    gsort_request rq;
    gsort_request_init(&rq);
    rq.keys = blk;
    rq.n = 3000;
    rq.values_kind = GSORT_VALUES_IDX64;
    rq.values = bix;
    rq.flags = GSORT_STABLE;
    rc = gsort_run(c, &rq, &res, &err);
    int run_ok = rc == 0 && u32_sorted(blk, 3000);
    for (size_t i = 0; run_ok && i < 3000; i++)
        run_ok = bix[i] < 3000 && orig[bix[i]] == blk[i] &&
                 (i == 0 || blk[i - 1] != blk[i] || bix[i - 1] < bix[i]);
    tap_ok(run_ok && res.zero_copy == 1 && stage_maps(NULL, 0) == 0,
           "gsort_run with 64-bit indices, keys and indices in one block: both in place");
    free(orig);

    /* GSORT_SPLIT goes out (this host-only daemon declines: not plan
     * "split"); a flag libgsort does not know is refused, nothing sent. */
    fill_u32(blk, 700, 11);
    rc = gsort_sort(c, GSORT_U32, blk, 700, GSORT_SPLIT | GSORT_STABLE, &res, &err);
    int split_ok = rc == 0 && u32_sorted(blk, 700) && strcmp(res.plan, "split") != 0;
    char plan[32];
    snprintf(plan, sizeof plan, "%s", res.plan);
    fill_u32(blk, 700, 12);
    memcpy(ref, blk, 700 * sizeof *blk);
    rc = gsort_sort(c, GSORT_U32, blk, 700, 1u << 7, &res, &err);
    tap_ok(split_ok && rc == GSORT_EINVAL && strstr(err.message, "flags") &&
           !memcmp(ref, blk, 700 * sizeof *blk),
           "GSORT_SPLIT is accepted (plan %s); flag 0x80 is refused: %s", plan, err.message);

    /* Overlapping keys and values are refused, whatever the route. */
    fill_u32(blk, 1000, 7);
    memcpy(ref, blk, sizeof ref);
    rc = gsort_sort_by_key(c, GSORT_U32, blk, blk + 500, 4, 1000, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "overlap") &&
           memcmp(ref, blk, sizeof ref) == 0,
           "overlapping keys and values in a block: GSORT_EINVAL, nothing changed (%s)",
           err.message);
    uint32_t *ov = malloc(4 * 1500);
    memcpy(ov, blk, 4 * 1500);
    rc = gsort_sort_by_key(c, GSORT_U32, ov + 10, ov, 8, 500, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "overlap") &&
           memcmp(ov, blk, 4 * 1500) == 0 && !starts_with(err.message, "gsortd: "),
           "overlapping malloc'd keys and values: GSORT_EINVAL here, nothing changed (%s)",
           err.message);
    free(ov);

    /* argsort of keys in a block leaves the block alone. */
    fill_u32(blk, 5000, 8);
    uint32_t *copy = malloc(4 * 5000);
    memcpy(copy, blk, 4 * 5000);
    uint64_t *idx = malloc(8 * 5000);
    rc = gsort_argsort(c, GSORT_U32, blk, 5000, idx, GSORT_STABLE, &res, &err);
    int arg_ok = rc == 0 && memcmp(copy, blk, 4 * 5000) == 0;
    for (size_t i = 1; arg_ok && i < 5000; i++)
        arg_ok = idx[i] < 5000 && idx[i - 1] < 5000 &&
                 (blk[idx[i - 1]] < blk[idx[i]] ||
                  (blk[idx[i - 1]] == blk[idx[i]] && idx[i - 1] < idx[i]));
    tap_ok(arg_ok && res.zero_copy == 1, "argsort of keys in a block: indices in stable order, "
           "the block unchanged");
    free(copy);
    free(idx);

    /* GSORT_INLINE: the socket, even for block memory. */
    fill_u32(blk, 4000, 9);
    rc = gsort_sort(c, GSORT_U32, blk, 4000, GSORT_INLINE, &res, &err);
    tap_ok(rc == 0 && u32_sorted(blk, 4000) && res.zero_copy == 0,
           "GSORT_INLINE sends a block's keys on the socket: zero_copy %d", res.zero_copy);

    /* A bigger staged sort replaces the staging memfd with a bigger one. */
    size_t big = 400000;
    uint32_t *bk = malloc(4 * big);
    fill_u32(bk, big, 10);
    stage_maps(line1, sizeof line1);
    rc = gsort_sort(c, GSORT_U32, bk, big, 0, &res, &err);
    stage_maps(line2, sizeof line2);
    tap_ok(rc == 0 && u32_sorted(bk, big) && stage_maps(NULL, 0) == 1 &&
           strcmp(line1, line2) != 0, "a larger staged sort grows the staging memfd (one "
           "mapped: %s)", line2);
    free(bk);

    /* Over GS_PCOPY_MIN (32 MiB): the staging copies run on several
     * threads; an odd length so the last part is not page-sized. Keys and
     * values both ways, checked pair by pair. */
    size_t huge = ((size_t)40 << 20) / 8 + 3;
    uint64_t *hk = malloc(8 * huge);
    uint32_t *hv = malloc(4 * huge);
    if (!hk || !hv)
        tap_bail("out of memory");
    for (size_t i = 0; i < huge; i++) {
        hk[i] = (uint64_t)(i * 0x9e3779b97f4a7c15u) >> 8;
        hv[i] = (uint32_t)i;
    }
    gsort_request hr;
    gsort_request_init(&hr);
    hr.dtype = GSORT_U64;
    hr.n = huge;
    hr.keys = hk;
    hr.values_kind = GSORT_VALUES_U32;
    hr.values = hv;
    rc = gsort_run(c, &hr, &res, &err);
    int hok = rc == 0;
    for (size_t i = 0; hok && i < huge; i++)
        hok = (i == 0 || hk[i - 1] <= hk[i]) &&
              hk[i] == (uint64_t)((size_t)hv[i] * 0x9e3779b97f4a7c15u) >> 8;
    tap_ok(hok, "a 40 MiB u64 + u32 staged sort (copies over threads): every key sorted "
           "with its own value%s%s", rc ? ": " : "", rc ? err.message : "");
    free(hk);
    free(hv);

    int nb = maps_count("/memfd:gsort-block", NULL, 0);
    gsort_free(blk);
    gsort_free(NULL);
    int stray = 42;
    gsort_free(&stray);     /* not from gsort_alloc: left alone */
    tap_ok(maps_count("/memfd:gsort-block", NULL, 0) == nb - 1 && stray == 42,
           "gsort_free unmaps its block; NULL and foreign pointers are ignored");
    void *z = gsort_alloc(0, &err);
    tap_ok(z != NULL, "gsort_alloc(0) returns a pointer to free");
    gsort_free(z);
    gsort_close(c);
    gsort_close(NULL);
}

/* ---- no memfds at all ---- */

/* In a child where memfd_create fails (a seccomp filter, as some sandboxes
 * have): gsort_alloc hands out ordinary memory and every sort goes inline.
 * The child reports one bit per failed check in its exit status. */
static int no_memfd_child(const char *sock)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_memfd_create, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                         &prog))
        return 0x80;
    int bad = 0;
    int mfd = memfd_create("probe", 0);
    if (mfd >= 0 || errno != ENOSYS)
        return 0x20;    /* the filter did not take */
    gsort_conn *c = NULL;
    gsort_result res;
    if (gsort_connect(&c, sock, NULL))
        return 0x40;
    int blocks = maps_count("/memfd:gsort-block", NULL, 0);
    uint32_t *blk = gsort_alloc(4 * 5000, NULL);
    if (!blk || maps_count("/memfd:gsort-block", NULL, 0) != blocks)
        bad |= 1;   /* no block, or a memfd after all */
    if (blk) {
        fill_u32(blk, 5000, 18);
        if (gsort_sort(c, GSORT_U32, blk, 5000, 0, &res, NULL) || !u32_sorted(blk, 5000) ||
            res.zero_copy != 0)
            bad |= 2;
    }
    uint32_t *heap = malloc(4 * 5000);
    uint64_t *idx = malloc(8 * 5000);
    fill_u32(heap, 5000, 19);
    int stages = stage_maps(NULL, 0);
    if (gsort_sort(c, GSORT_U32, heap, 5000, GSORT_DESCENDING, &res, NULL) ||
        res.zero_copy != 0 || stage_maps(NULL, 0) != stages)
        bad |= 4;
    for (size_t i = 1; i < 5000; i++)
        if (heap[i - 1] < heap[i])
            bad |= 8;
    if (gsort_argsort(c, GSORT_U32, heap, 5000, idx, GSORT_STABLE, &res, NULL) ||
        res.zero_copy != 0 || idx[0] != 4999 || idx[4999] != 0)
        bad |= 16;   /* descending input: the indices run backwards */
    free(heap);
    free(idx);
    gsort_free(blk);
    gsort_close(c);
    return bad;
}

static void test_no_memfd(const dmn *d)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(no_memfd_child(d->sock));
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        tap_bail("fork/wait: %s", strerror(errno));
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 0x100;
    tap_ok(code != 0x80 && code != 0x40 && code != 0x20 && code != 0x100,
           "a child whose memfd_create fails (ENOSYS, by seccomp) connects (status 0x%x)", code);
    tap_ok(!(code & 1), "gsort_alloc there returns ordinary memory");
    tap_ok(!(code & 2), "which sorts correctly, inline (zero_copy 0)");
    tap_ok(!(code & 12), "malloc'd keys sort inline, with no staging memfd");
    tap_ok(!(code & 16), "argsort works inline");
}

/* ---- n = 0, NULL pointers, bad arguments, daemon errors ---- */

static void test_edges(const dmn *d)
{
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_result res;
    gsort_error err;
    int rc = gsort_sort(c, GSORT_F64, NULL, 0, 0, &res, &err);
    tap_ok(rc == 0 && res.zero_copy == 0 && res.algorithm[0], "n = 0 with NULL keys: rc %d, "
           "served by '%s' inline", rc, res.algorithm);
    rc = gsort_argsort(c, GSORT_U64, NULL, 0, NULL, GSORT_STABLE, &res, &err);
    tap_ok(rc == 0, "argsort of n = 0 with NULL keys and indices: rc %d %s", rc,
           rc ? err.message : "");
    rc = gsort_sort_by_key(c, GSORT_I32, NULL, NULL, 8, 0, GSORT_DESCENDING, NULL, &err);
    tap_ok(rc == 0, "sort_by_key of n = 0, no result record: rc %d", rc);
    void *z = gsort_alloc(16, &err);
    rc = gsort_sort(c, GSORT_U32, z, 0, 0, &res, &err);
    tap_ok(rc == 0 && res.zero_copy == 0, "n = 0 inside a block: rc %d", rc);
    gsort_free(z);
    gsort_close(c);
}

static void test_errors(const dmn *d)
{
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_result res;
    gsort_error err;
    uint32_t k[64], ref[64];
    uint64_t idx[64];
    fill_u32(k, 64, 11);
    memcpy(ref, k, sizeof k);
    gsort_request rq;

#define UNCHANGED (memcmp(k, ref, sizeof k) == 0)
    gsort_request_init(&rq);
    tap_ok(rq.dtype == GSORT_U32 && rq.values_kind == GSORT_VALUES_NONE && rq.flags == 0 &&
           !rq.algorithm && !rq.params && rq.device == -1 && !rq.keys && rq.n == 0,
           "gsort_request_init: u32 keys, no values, no flags, the plan, any device");
    rq.keys = k;
    rq.n = 64;
    rq.dtype = (gsort_dtype)17;
    int rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EINVAL && err.code == rc && strstr(err.message, "dtype") && UNCHANGED,
           "unknown dtype: GSORT_EINVAL (%s)", err.message);
    rq.dtype = GSORT_U32;
    rq.values_kind = (gsort_values)9;
    rq.values = idx;
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "values_kind") && UNCHANGED,
           "unknown values_kind: GSORT_EINVAL (%s)", err.message);
    rq.values_kind = GSORT_VALUES_NONE;
    rq.flags = 1u << 9;
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "flags") && UNCHANGED,
           "unknown flag bit: GSORT_EINVAL (%s)", err.message);
    rq.flags = 0;
    rq.device = -3;
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EINVAL && UNCHANGED, "device -3: GSORT_EINVAL (%s)", err.message);
    rc = gsort_sort_by_key(c, GSORT_U32, k, idx, 3, 64, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "3 bytes") && UNCHANGED,
           "sort_by_key with 3-byte values: GSORT_EINVAL (%s)", err.message);
    rc = gsort_sort(c, GSORT_U32, NULL, 5, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "NULL"), "NULL keys with n = 5: "
           "GSORT_EINVAL (%s)", err.message);
    rc = gsort_argsort(c, GSORT_U32, k, 64, NULL, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && UNCHANGED, "argsort with NULL indices: GSORT_EINVAL (%s)",
           err.message);
    rc = gsort_sort(c, GSORT_U64, k, SIZE_MAX / 4, 0, &res, &err);
    tap_ok(rc == GSORT_ETOOBIG && UNCHANGED, "n * 8 overflowing size_t: GSORT_ETOOBIG (%s)",
           err.message);
    rc = gsort_sort(c, GSORT_U32, k, ((size_t)1 << 53) + 1, 0, &res, &err);
    tap_ok(rc == GSORT_ETOOBIG && UNCHANGED, "n = 2^53 + 1: GSORT_ETOOBIG (%s)", err.message);
    rc = gsort_argsort32(c, GSORT_U32, k, (size_t)UINT32_MAX + 1, (uint32_t *)idx, 0, &res,
                         &err);
    tap_ok(rc == GSORT_ETOOBIG && strstr(err.message, "32-bit") && UNCHANGED,
           "argsort32 of 2^32 keys: GSORT_ETOOBIG before touching memory (%s)", err.message);

    /* The daemon's own refusals keep its message and the connection. */
    gsort_request_init(&rq);
    rq.keys = k;
    rq.n = 64;
    rq.algorithm = "nosuch";
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_ENOTFOUND && starts_with(err.message, "gsortd: ") &&
           strstr(err.message, "nosuch") && UNCHANGED,
           "an unknown algorithm: GSORT_ENOTFOUND from the daemon (%s)", err.message);
    double rtt = -1;
    rc = gsort_ping(c, &rtt, &err);
    tap_ok(rc == 0 && rtt >= 0 && isfinite(rtt), "the connection still answers a ping "
           "(%.3f ms)", rtt);
    rq.algorithm = "host";
    rq.params = "bogus=3";
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EUNSUPPORTED && starts_with(err.message, "gsortd: ") &&
           strstr(err.message, "bogus") && UNCHANGED,
           "a parameter the algorithm does not take: GSORT_EUNSUPPORTED (%s)", err.message);
    rq.params = "radix_bits";
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == GSORT_EINVAL && !starts_with(err.message, "gsortd: ") && UNCHANGED,
           "malformed params text: GSORT_EINVAL here (%s)", err.message);
    rq.algorithm = "host";
    rq.params = NULL;
    rq.device = 7;
    rc = gsort_run(c, &rq, &res, &err);
    /* gsort-protocol(7) says GS_ENOTFOUND, the daemon answers GS_ENODEV. */
    tap_ok((rc == GSORT_ENODEV || rc == GSORT_ENOTFOUND) && starts_with(err.message, "gsortd: ") &&
           strstr(err.message, "device 7") && UNCHANGED,
           "device 7 on a host-only daemon: %s (%s)", gsort_strerror(rc), err.message);
    rq.device = -1;
    rq.flags = GSORT_STABLE | GSORT_INLINE;
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == 0 && u32_sorted(k, 64) && !strcmp(res.algorithm, "host") &&
           !strcmp(res.plan, "override") && res.device == -1,
           "forcing the host algorithm: served by '%s', plan '%s', device %d", res.algorithm,
           res.plan, res.device);
    memcpy(ref, k, sizeof k);

    rq.algorithm = "auto";
    rq.flags = 0;
    fill_u32(k, 64, 17);
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == 0 && u32_sorted(k, 64) && strcmp(res.plan, "override") != 0,
           "algorithm \"auto\" is the daemon's plan: '%s' by '%s'", res.plan, res.algorithm);
    memcpy(ref, k, sizeof k);

    /* Every call copes with a NULL error record and a NULL connection. */
    rc = gsort_sort(c, (gsort_dtype)99, k, 64, 0, NULL, NULL);
    int nul = rc == GSORT_EINVAL;
    nul &= gsort_sort(NULL, GSORT_U32, k, 64, 0, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_argsort(NULL, GSORT_U32, k, 64, idx, 0, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_argsort32(NULL, GSORT_U32, k, 64, (uint32_t *)idx, 0, NULL, NULL) ==
           GSORT_EINVAL;
    nul &= gsort_sort_by_key(NULL, GSORT_U32, k, idx, 4, 64, 0, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_run(NULL, &rq, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_run(c, NULL, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_ping(NULL, NULL, NULL) == GSORT_EINVAL;
    char *js = (char *)"x";
    nul &= gsort_info(NULL, &js, NULL) == GSORT_EINVAL && js == NULL;
    nul &= gsort_stats(c, NULL, NULL) == GSORT_EINVAL;
    nul &= gsort_set_timeout(NULL, 1, NULL) == GSORT_EINVAL;
    nul &= gsort_connect(NULL, d->sock, NULL) == GSORT_EINVAL;
    nul &= gsort_alloc(SIZE_MAX, NULL) == NULL;
    nul &= strcmp(gsort_socket_path(NULL), "") == 0;
    tap_ok(nul && UNCHANGED, "NULL error records and NULL connections: GSORT_EINVAL, no crash");
    tap_ok(gsort_ping(c, NULL, NULL) == 0, "the connection still works after all that");
    rc = gsort_set_timeout(c, -1, &err);
    int rc2 = gsort_set_timeout(c, NAN, NULL);
    tap_ok(rc == GSORT_EINVAL && rc2 == GSORT_EINVAL && gsort_set_timeout(c, 30, &err) == 0,
           "gsort_set_timeout refuses -1 and NaN, takes 30 s (%s)", err.message);
#undef UNCHANGED
    gsort_close(c);
}

/* ---- info, stats, ping ---- */

static double num_at(const cJSON *o, const char *a, const char *b, const char *c)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        j = cJSON_GetObjectItemCaseSensitive(j, b);
    if (c)
        j = cJSON_GetObjectItemCaseSensitive(j, c);
    return cJSON_IsNumber(j) ? j->valuedouble : -1;
}

/* gsort_info's or gsort_stats's JSON, parsed (NULL when the call or the
 * parse fails); the call's return code into *rc when rc is not NULL. */
static cJSON *query_json(int (*query)(gsort_conn *, char **, gsort_error *), gsort_conn *c,
                         int *rc)
{
    char *js = NULL;
    gsort_error err;
    int r = query(c, &js, &err);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    free(js);
    if (rc)
        *rc = r;
    return j;
}

static void test_queries(const dmn *d)
{
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_error err;
    int rc;
    cJSON *info = query_json(gsort_info, c, &rc);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(info, "version");
    const cJSON *sock = cJSON_GetObjectItemCaseSensitive(info, "socket");
    const cJSON *algos = cJSON_GetObjectItemCaseSensitive(info, "algorithms");
    int has_host = 0;
    const cJSON *a;
    cJSON_ArrayForEach(a, algos)
        has_host |= cJSON_IsString(a) && !strcmp(a->valuestring, "host");
    tap_ok(rc == 0 && info && cJSON_IsString(ver) && !strcmp(ver->valuestring, gsort_version()) &&
           cJSON_IsString(sock) && !strcmp(sock->valuestring, d->sock) && has_host &&
           num_at(info, "protocol", NULL, NULL) == 1,
           "gsort_info: JSON with the daemon's version (%s, the library's %s), socket and "
           "algorithms", cJSON_IsString(ver) ? ver->valuestring : "?", gsort_version());
    cJSON_Delete(info);
    tap_ok(!strcmp(gsort_socket_path(c), d->sock), "gsort_socket_path: %s",
           gsort_socket_path(c));

    cJSON *s1 = query_json(gsort_stats, c, &rc);
    uint32_t k[100];
    fill_u32(k, 100, 12);
    gsort_result res;
    int rs = gsort_sort(c, GSORT_U32, k, 100, 0, &res, &err);
    double rtt = -1;
    int rp = gsort_ping(c, &rtt, &err);
    int rc2;
    cJSON *s2 = query_json(gsort_stats, c, &rc2);
    double sort1 = num_at(s1, "requests", "by_op", "sort");
    double sort2 = num_at(s2, "requests", "by_op", "sort");
    double ping1 = num_at(s1, "requests", "by_op", "ping");
    double ping2 = num_at(s2, "requests", "by_op", "ping");
    tap_ok(rc == 0 && rc2 == 0 && rs == 0 && rp == 0 && s1 && s2 && sort1 >= 0 &&
           sort2 == sort1 + 1 && ping2 == ping1 + 1,
           "gsort_stats: one sort and one ping later the daemon counts %g -> %g sorts, "
           "%g -> %g pings", sort1, sort2, ping1, ping2);
    tap_ok(rtt >= 0 && isfinite(rtt), "gsort_ping measures the round trip: %.3f ms", rtt);
    tap_ok(res.total_ms >= res.daemon_ms && res.daemon_ms >= 0 && res.sort_ms >= 0,
           "the result's times: total %.3f ms >= daemon %.3f ms >= 0", res.total_ms,
           res.daemon_ms);
    cJSON_Delete(s1);
    cJSON_Delete(s2);
    gsort_close(c);
}

/* ---- connecting: no daemon, the default socket ---- */

static void test_connect(void)
{
    char path[200];
    gsort_conn *c = NULL;
    gsort_error err;
    snprintf(path, sizeof path, "%s/nobody.sock", dmn_tmpdir());
    int rc = gsort_connect(&c, path, &err);
    tap_ok(rc == GSORT_ENODAEMON && err.code == rc && !c && strstr(err.message, path) &&
           strstr(err.message, "no gsortd is listening"),
           "no socket file: GSORT_ENODAEMON naming the path (%s)", err.message);

    /* A socket file nobody listens on (a killed daemon's). */
    snprintf(path, sizeof path, "%s/stale.sock", dmn_tmpdir());
    close(dmn_bind(path, SOCK_STREAM, 0));
    rc = gsort_connect(&c, path, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, path),
           "a stale socket file: GSORT_ENODAEMON (%s)", err.message);
    snprintf(path, sizeof path, "%s/empty.conf", dmn_tmpdir());
    rc = gsort_connect(&c, path, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, path),
           "a regular file: GSORT_ENODAEMON (%s)", err.message);
    char longp[300];
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    rc = gsort_connect(&c, longp, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "too long"),
           "a 299-byte socket path: GSORT_EINVAL (%.60s...)", err.message);
    rc = gsort_connect(&c, "", &err);
    tap_ok(rc == GSORT_EINVAL, "an empty socket path: GSORT_EINVAL (%s)", err.message);
    rc = gsort_connect(&c, path, NULL);
    tap_ok(rc == GSORT_ENODAEMON, "no daemon, no error record: rc %d", rc);
}

static void setenv_or_unset(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void test_default_socket(void)
{
    char *old_sock = getenv("GSORTD_SOCKET") ? strdup(getenv("GSORTD_SOCKET")) : NULL;
    char *old_xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    gsort_conn *c = NULL;
    gsort_error err;

    setenv("GSORTD_SOCKET", g_main.sock, 1);
    int rc = gsort_connect(&c, NULL, &err);
    tap_ok(rc == 0 && !strcmp(gsort_socket_path(c), g_main.sock) &&
           gsort_ping(c, NULL, NULL) == 0,
           "NULL path with GSORTD_SOCKET set: connects to %s", c ? gsort_socket_path(c) : "-");
    gsort_close(c);
    c = NULL;
    char none[200];
    snprintf(none, sizeof none, "%s/env-none.sock", dmn_tmpdir());
    setenv("GSORTD_SOCKET", none, 1);
    rc = gsort_connect(&c, NULL, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, none),
           "GSORTD_SOCKET naming no daemon: GSORT_ENODAEMON naming it (%s)", err.message);

    /* $XDG_RUNTIME_DIR/gsortd.sock when it exists (as non-root). */
    static dmn xdg;
    char dir[200], sock[240];
    snprintf(dir, sizeof dir, "%s/xdg", dmn_tmpdir());
    snprintf(sock, sizeof sock, "%s/gsortd.sock", dir);
    mkdir(dir, 0700);
    const char *const extra[] = { "-o", "devices=none", NULL };
    if (dmn_start(&xdg, "xdg", sock, extra))
        tap_bail("the daemon on %s did not start", sock);
    setenv("GSORTD_SOCKET", "", 1);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    rc = gsort_connect(&c, NULL, &err);
    const char *sys = "/run/gsortd/gsortd.sock";
    if (geteuid() != 0)
        tap_ok(rc == 0 && !strcmp(gsort_socket_path(c), sock),
               "empty GSORTD_SOCKET, XDG_RUNTIME_DIR holding gsortd.sock: connects there "
               "(%s)", rc ? err.message : gsort_socket_path(c));
    else
        tap_ok(rc == 0 ? !strcmp(gsort_socket_path(c), sys) : strstr(err.message, sys) != NULL,
               "as root the default is the system socket %s whatever XDG_RUNTIME_DIR says "
               "(%s)", sys, rc ? err.message : gsort_socket_path(c));
    gsort_close(c);
    c = NULL;
    dmn_stop(&xdg, SIGTERM, 20);

    /* No per-user socket: the system daemon's. */
    snprintf(dir, sizeof dir, "%s/xdg-empty", dmn_tmpdir());
    mkdir(dir, 0700);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    unsetenv("GSORTD_SOCKET");
    rc = gsort_connect(&c, NULL, &err);
    int named = rc == 0 ? !strcmp(gsort_socket_path(c), sys)
                        : rc == GSORT_ENODAEMON && strstr(err.message, sys) &&
                          (geteuid() == 0 || strstr(err.message, dir));
    tap_ok(named, "no $XDG_RUNTIME_DIR/gsortd.sock: the system socket %s (%s)", sys,
           rc ? err.message : "connected");
    gsort_close(c);
    setenv_or_unset("GSORTD_SOCKET", old_sock);
    setenv_or_unset("XDG_RUNTIME_DIR", old_xdg);
    free(old_sock);
    free(old_xdg);
}

/* ---- timeouts and a daemon that goes away ---- */

static void test_broken(void)
{
    /* A socket that accepts (the backlog does) but never answers. */
    char path[200];
    snprintf(path, sizeof path, "%s/mute.sock", dmn_tmpdir());
    int fd = dmn_bind(path, SOCK_STREAM, 4);
    gsort_conn *c = conn_or_bail(path);
    gsort_error err;
    int rc = gsort_set_timeout(c, 0.3, &err);
    int rp = gsort_ping(c, NULL, &err);
    tap_ok(rc == 0 && rp == GSORT_EIO && strstr(err.message, "timed out"),
           "a reply that never comes, 0.3 s timeout: GSORT_EIO (%s)", err.message);
    uint32_t k[8] = { 3, 1, 2, 9, 8, 7, 6, 5 };
    rp = gsort_sort(c, GSORT_U32, k, 8, 0, NULL, &err);
    tap_ok(rp == GSORT_EIO && k[0] == 3 && k[7] == 5 && strstr(err.message, "timed out"),
           "the next call reconnects (the socket still accepts) and times out too: "
           "GSORT_EIO, keys untouched (%s)", err.message);
    gsort_close(c);
    close(fd);

    /* A daemon stopped under a connection. */
    static dmn gone;
    const char *const extra[] = { "-o", "devices=none", NULL };
    c = start_and_connect(&gone, "gone", extra);
    tap_ok(gsort_ping(c, NULL, &err) == 0, "a connection to a second daemon works");
    int st = dmn_stop(&gone, SIGTERM, 20);
    rp = gsort_sort(c, GSORT_U32, k, 8, 0, NULL, &err);
    tap_ok(st == 0 && rp == GSORT_ENODAEMON && k[0] == 3 && k[7] == 5 &&
           strstr(err.message, gone.sock) && strstr(err.message, "between calls"),
           "after the daemon stopped (exit %d): GSORT_ENODAEMON naming the socket and the "
           "cause, keys untouched (%s)", st, err.message);
    gsort_close(c);
    rc = gsort_connect(&c, gone.sock, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, gone.sock),
           "reconnecting: GSORT_ENODAEMON (%s)", err.message);
}

/* ---- a daemon restarted under a connection ----
 * The next call after a restart reconnects and succeeds; with no daemon
 * listening it fails with GSORT_ENODAEMON naming the first cause of the
 * loss, call after call, until one listens again. A call that fails in
 * flight (a timeout) is not retried; the one after it reconnects. */

static void test_reconnect(void)
{
    static dmn d1, d2, d3, d4;
    const char *const extra[] = { "-o", "devices=none", NULL };
    char sock[200];
    snprintf(sock, sizeof sock, "%s/phoenix.sock", dmn_tmpdir());
    if (dmn_start(&d1, "phoenix1", sock, extra))
        tap_bail("the daemon 'phoenix1' did not start");
    gsort_conn *c = conn_or_bail(sock);
    gsort_error err;
    uint32_t k[64];
    fill_u32(k, 64, 21);
    int rc = gsort_sort(c, GSORT_U32, k, 64, 0, NULL, &err);
    tap_ok(rc == 0 && u32_sorted(k, 64), "reconnect: a first sort (%s)",
           rc ? err.message : "ok");

    /* Stopped and started again while the connection was idle. */
    int st = dmn_stop(&d1, SIGTERM, 20);
    if (dmn_start(&d2, "phoenix2", sock, extra))
        tap_bail("the daemon 'phoenix2' did not start");
    fill_u32(k, 64, 22);
    rc = gsort_sort(c, GSORT_U32, k, 64, 0, NULL, &err);
    tap_ok(st == 0 && rc == 0 && u32_sorted(k, 64),
           "the daemon restarted between calls: the next sort reconnects and succeeds (%s)",
           rc ? err.message : "ok");
    double ms = 0;
    rc = gsort_ping(c, &ms, &err);
    tap_ok(rc == 0, "and the new connection stays in use (ping %s)", rc ? err.message : "ok");

    /* Killed (its socket file left behind), then nothing listens. */
    kill(d2.pid, SIGKILL);
    st = dmn_stop(&d2, 0, 20);
    fill_u32(k, 64, 23);
    uint32_t k0 = k[0], k63 = k[63];
    rc = gsort_sort(c, GSORT_U32, k, 64, 0, NULL, &err);
    char first[sizeof err.message];
    snprintf(first, sizeof first, "%s", err.message);
    tap_ok(st == -2 - SIGKILL && rc == GSORT_ENODAEMON && strstr(err.message, sock) &&
           strstr(err.message, "closed the connection between calls") && k[0] == k0 &&
           k[63] == k63, "killed: the next sort fails with GSORT_ENODAEMON naming the socket "
           "and the cause, keys untouched (%s)", err.message);
    rc = gsort_ping(c, NULL, &err);
    char *none = NULL;
    int rc2 = gsort_stats(c, &none, &err);
    tap_ok(rc == GSORT_ENODAEMON && rc2 == GSORT_ENODAEMON && !strcmp(err.message, first),
           "and so does every later call, with the same first cause (%s)", err.message);

    if (dmn_start(&d3, "phoenix3", sock, extra))
        tap_bail("the daemon 'phoenix3' did not start");
    rc = gsort_sort(c, GSORT_U32, k, 64, 0, NULL, &err);
    tap_ok(rc == 0 && u32_sorted(k, 64), "once a daemon listens again the next sort succeeds "
           "(%s)", rc ? err.message : "ok");

    /* A call that fails in flight: the daemon stopped (SIGSTOP) past the
     * timeout. That call fails; it is not sent again. */
    gsort_set_timeout(c, 0.5 * dmn_slowdown(), &err);
    kill(d3.pid, SIGSTOP);
    fill_u32(k, 64, 24);
    k0 = k[0];
    rc = gsort_sort(c, GSORT_U32, k, 64, GSORT_INLINE, NULL, &err);
    snprintf(first, sizeof first, "%s", err.message);
    tap_ok(rc == GSORT_EIO && strstr(err.message, "timed out") && k[0] == k0,
           "a daemon that stops answering: the call times out, GSORT_EIO (%s)", err.message);
    kill(d3.pid, SIGKILL);
    st = dmn_stop(&d3, 0, 20);
    rc = gsort_ping(c, NULL, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, first),
           "then killed: GSORT_ENODAEMON, the message keeping the first cause, the timeout "
           "(%s)", err.message);
    rc = gsort_ping(c, NULL, &err);
    tap_ok(rc == GSORT_ENODAEMON && strstr(err.message, first) &&
           !strstr(err.message, "to reconnect to; the connection was lost: no gsortd"),
           "a failed reconnection does not replace the first cause (%s)", err.message);
    if (dmn_start(&d4, "phoenix4", sock, extra))
        tap_bail("the daemon 'phoenix4' did not start");
    gsort_set_timeout(c, 0, &err);
    rc = gsort_sort(c, GSORT_U32, k, 64, 0, NULL, &err);
    tap_ok(rc == 0 && u32_sorted(k, 64), "after a restart the next sort succeeds (%s)",
           rc ? err.message : "ok");
    char *stats = NULL;
    rc = gsort_stats(c, &stats, &err);
    cJSON *sj = stats ? cJSON_Parse(stats) : NULL;
    double sorts = num_at(sj, "requests", "by_op", "sort");
    tap_ok(rc == 0 && sorts == 1, "the new daemon saw that one sort, nothing sent twice "
           "(stats: %.0f sorts)", sorts);
    cJSON_Delete(sj);
    free(stats);
    gsort_close(c);
    dmn_stop(&d4, SIGTERM, 20);
}

/* ---- max_request_bytes ---- */

static void test_limits(void)
{
    static dmn small;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_request_bytes=1M", NULL };
    gsort_conn *c = start_and_connect(&small, "small", extra);
    gsort_error err;
    gsort_result res;
    cJSON *info = query_json(gsort_info, c, NULL);
    double lim = num_at(info, "limits", "max_request_bytes", NULL);
    cJSON_Delete(info);
    tap_ok(lim == 1048576, "the daemon's max_request_bytes is 1 MiB (info says %.0f)", lim);

    size_t n = 300000;      /* 1.2 MB of u32 */
    uint32_t *k = malloc(4 * n), *ref = malloc(4 * n);
    fill_u32(k, n, 13);
    memcpy(ref, k, 4 * n);
    int rc = gsort_sort(c, GSORT_U32, k, n, 0, &res, &err);
    tap_ok(rc == GSORT_ETOOBIG && starts_with(err.message, "gsortd: ") &&
           !memcmp(k, ref, 4 * n), "1.2 MB staged: GSORT_ETOOBIG from the daemon, keys "
           "untouched (%s)", err.message);
    uint32_t s[16];
    fill_u32(s, 16, 14);
    rc = gsort_sort(c, GSORT_U32, s, 16, 0, &res, &err);
    tap_ok(rc == 0 && u32_sorted(s, 16), "the connection still sorts afterwards");

    uint32_t *blk = gsort_alloc(4u << 20, &err);
    memcpy(blk, ref, 4 * n);
    rc = gsort_sort(c, GSORT_U32, blk, n, 0, &res, &err);
    tap_ok(rc == GSORT_ETOOBIG && !memcmp(blk, ref, 4 * n),
           "1.2 MB in a block: GSORT_ETOOBIG, block untouched (%s)", err.message);
    /* A small array far into a large block: the daemon would map 3 MB of
     * it; the library retries through the staging memfd. */
    uint32_t *far = blk + (3u << 20) / 4;
    fill_u32(far, 1000, 15);
    rc = gsort_sort(c, GSORT_U32, far, 1000, 0, &res, &err);
    tap_ok(rc == 0 && u32_sorted(far, 1000) && res.zero_copy == 1,
           "1000 keys 3 MB into a block are still sorted (staged after the refusal): rc %d %s",
           rc, rc ? err.message : "");
    gsort_free(blk);

    rc = gsort_sort(c, GSORT_U32, k, n, GSORT_INLINE, &res, &err);
    tap_ok(rc == GSORT_ETOOBIG && starts_with(err.message, "gsortd: ") &&
           !memcmp(k, ref, 4 * n), "1.2 MB inline: GSORT_ETOOBIG from the daemon (%s)",
           err.message);
    double ping_ms = 0;
    rc = gsort_ping(c, &ping_ms, &err);
    tap_ok(rc == 0 && ping_ms > 0, "the daemon closed that connection, as the protocol says "
           "for an over-long payload; the next call reconnects: ping %s",
           rc ? err.message : "ok");
    gsort_close(c);
    c = conn_or_bail(small.sock);
    rc = gsort_sort(c, GSORT_U32, s, 16, GSORT_INLINE, &res, &err);
    tap_ok(rc == 0, "a new connection sorts inline again");
    gsort_close(c);
    free(k);
    free(ref);
    dmn_stop(&small, SIGTERM, 20);
}

/* ---- threads ---- */

#define NTHREADS 4
#define ROUNDS 12

typedef struct worker {
    pthread_t th;
    const char *sock;
    int id, bad, sorts;
    char why[256];
} worker;

static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    return x;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    gsort_conn *c = NULL;
    gsort_error err;
    if (gsort_connect(&c, w->sock, &err)) {
        snprintf(w->why, sizeof w->why, "connect: %.200s", err.message);
        w->bad++;
        return NULL;
    }
    for (int r = 0; r < ROUNDS && !w->bad; r++) {
        size_t n = 1000 + (size_t)mix32((uint32_t)(w->id * 100 + r)) % 30000;
        /* Keys and values in one fresh block, or values in a second one. */
        uint32_t *k = gsort_alloc(8 * n, &err);
        uint32_t *v = r % 3 == 2 ? gsort_alloc(4 * n, &err) : k + n;
        if (!k || !v) {
            snprintf(w->why, sizeof w->why, "gsort_alloc: %.200s", err.message);
            w->bad++;
            break;
        }
        fill_u32(k, n, (uint32_t)(w->id * 1000 + r));
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            v[i] = mix32(k[i]);
            sum += k[i];
        }
        gsort_result res;
        int rc = gsort_sort_by_key(c, GSORT_U32, k, v, 4, n, r % 2 ? GSORT_STABLE : 0, &res,
                                   &err);
        uint64_t sum2 = 0;
        int ok = rc == 0 && res.zero_copy == 1;
        for (size_t i = 0; ok && i < n; i++) {
            sum2 += k[i];
            ok = v[i] == mix32(k[i]) && (i == 0 || k[i - 1] <= k[i]);
        }
        if (!ok || sum != sum2) {
            snprintf(w->why, sizeof w->why, "round %d, n %zu: rc %d (%.150s), zero_copy %d", r, n,
                     rc, rc ? err.message : "wrong answer", res.zero_copy);
            w->bad++;
        }
        w->sorts++;
        if (v != k + n)
            gsort_free(v);
        gsort_free(k);
    }
    gsort_close(c);
    return NULL;
}

static volatile int g_churn_stop;

/* Allocate and free blocks while the workers look theirs up. */
static void *churn_main(void *arg)
{
    int *count = arg;
    void *held[32] = { 0 };
    for (unsigned i = 0; !g_churn_stop; i++) {
        unsigned j = mix32(i) % 32;
        gsort_free(held[j]);
        held[j] = gsort_alloc(4096 + (i % 7) * 100, NULL);
        if (held[j])
            memset(held[j], 0x11, 64);
        (*count)++;
    }
    for (int j = 0; j < 32; j++)
        gsort_free(held[j]);
    return NULL;
}

static void test_threads(const dmn *d)
{
    static worker w[NTHREADS];
    pthread_t churn;
    int churned = 0;
    g_churn_stop = 0;
    int before = maps_count("/memfd:gsort-block", NULL, 0);
    if (pthread_create(&churn, NULL, churn_main, &churned))
        tap_bail("pthread_create failed");
    for (int t = 0; t < NTHREADS; t++) {
        w[t].sock = d->sock;
        w[t].id = t;
        if (pthread_create(&w[t].th, NULL, worker_main, &w[t]))
            tap_bail("pthread_create failed");
    }
    int bad = 0, sorts = 0;
    const char *why = "";
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(w[t].th, NULL);
        sorts += w[t].sorts;
        if (w[t].bad && !bad++)
            why = w[t].why;
    }
    g_churn_stop = 1;
    pthread_join(churn, NULL);
    tap_ok(!bad && sorts == NTHREADS * ROUNDS,
           "%d threads, one connection each, sort %d fresh blocks in place while another "
           "thread allocates and frees %d blocks%s%s", NTHREADS, sorts, churned,
           bad ? ": " : "", why);
    int after = maps_count("/memfd:gsort-block", NULL, 0);
    tap_ok(after == before, "every block was unmapped again (%d mapped before, %d after)",
           before, after);
}

/* ---- the OpenCL device (PoCL here) ---- */

static int nw_case(gsort_conn *c, int api, int route, gsort_dtype t, int desc, int stable,
                   size_t n, int dist, uint64_t seed, char *why, size_t wl);
static const gsort_dtype nw_types[] = { GSORT_U8, GSORT_I8, GSORT_U16, GSORT_I16, GSORT_F16,
                                        GSORT_BF16 };
static const char *const nw_names[] = { "u8", "i8", "u16", "i16", "f16", "bf16" };
#define NW_NT 6
/* nw_case's routes; NR_RADIX (not among test_narrow's): radix forced on
 * device 0, where the daemon sorts 16-bit words (kernels/radix.cl's
 * GS_K16 build) */
enum { NR_LOCAL = 0, NR_BLOCK, NR_STAGED, NR_INLINE, NR_COUNT, NR_RADIX = NR_COUNT };

static void test_device(void)
{
    static dmn dev;
    gsort_conn *c = start_and_connect(&dev, "dev", NULL);
    gsort_error err;
    gsort_result res;
    cJSON *info = query_json(gsort_info, c, NULL);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(info, "devices");
    int ndev = cJSON_GetArraySize(devs), enabled = 0;
    const cJSON *dv;
    cJSON_ArrayForEach(dv, devs)
        enabled += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dv, "enabled"));
    cJSON_Delete(info);
    tap_ok(enabled >= 1, "the daemon serves %d of %d OpenCL devices", enabled, ndev);
    gsort_set_timeout(c, 300, NULL);    /* a first device sort includes a PoCL compile */

    /* u32 keys with u32 values, ascending: the shape tests/daemon/test_daemon
     * compiles too, so the shared program cache serves both. */
    static const int routes[] = { R_BLOCK, R_STAGED };
    for (int i = 0; i < 2; i++) {
        size_t n = 60000 + (size_t)i * 1001;
        sc_case sc;
        if (sc_case_init(&sc, GS_DT_U32, GS_PL_U32, 0, n, SC_FEW16, 77 + (uint64_t)i) < 0)
            tap_bail("out of memory");
        char *blk = routes[i] == R_BLOCK ? gsort_alloc(8 * n, &err) : NULL;
        gsort_request rq;
        gsort_request_init(&rq);
        rq.dtype = GSORT_U32;
        rq.values_kind = GSORT_VALUES_U32;
        rq.n = n;
        rq.flags = GSORT_STABLE;
        rq.algorithm = "mergepath";
        rq.keys = blk ? blk : sc.req.keys;
        rq.values = blk ? blk + 4 * n : sc.req.values;
        if (blk) {
            memcpy(blk, sc.req.keys, 4 * n);
            memcpy(blk + 4 * n, sc.req.values, 4 * n);
        }
        double t0 = gs_now_s();
        int rc = gsort_run(c, &rq, &res, &err);
        if (blk) {
            memcpy(sc.req.keys, blk, 4 * n);
            memcpy(sc.req.values, blk + 4 * n, 4 * n);
        }
        char why[600] = "";
        int ok = rc == 0 && sc_case_verify(&sc, 1, why, sizeof why);
        tap_ok(ok && res.device >= 0 && !strcmp(res.algorithm, "mergepath") &&
               !strcmp(res.plan, "override") && !res.fallback[0] && res.zero_copy == 1,
               "mergepath on device %d (%s), %s, stable sort_by_key of %zu u32: plan '%s', "
               "params '%s', %.1f s%s%s", res.device, res.device_name, route_names[routes[i]],
               n, res.plan, res.params, gs_now_s() - t0, rc ? err.message : "", why);
        gsort_free(blk);
        sc_case_free(&sc);
    }
    /* 8- and 16-bit keys by radix on the device: 16-bit words there (the
     * GS_K16 build), every call, both orders, NaN patterns and +-0; an odd
     * count (the words' buffers are not whole 4-byte words) */
    for (int ti = 0; ti < 6; ti++) {
        int bad = 0, runs = 0;
        char first[700] = "";
        for (int api = 0; api < A_COUNT; api++)
            for (int desc = 0; desc < 2; desc++) {
                char why[600] = "";
                size_t nn = api == A_SORT ? 70001 : 4099;
                runs++;
                if (!nw_case(c, api, NR_RADIX, nw_types[ti], desc, 1, nn, api % 2,
                             500 + (uint64_t)(ti * 10 + api * 2 + desc), why, sizeof why) &&
                    !bad++)
                    snprintf(first, sizeof first, "%s %s n=%zu: %s", api_names[api],
                             desc ? "desc" : "asc", nn, why);
            }
        tap_ok(!bad, "%s keys, radix forced on device 0: %d sorts (every call, both orders, "
               "NaN patterns, +-0) match the stable reference%s%s", nw_names[ti], runs,
               bad ? ", first failure: " : "", first);
    }
    /* The plan's choice, any device: whatever serves it must be right. */
    size_t n = 30000;
    float *f = malloc(4 * n);
    uint32_t *ix = malloc(4 * n);
    sc_fill(GS_DT_F32, SC_FSPECIAL, f, n, 99);
    int rc = gsort_argsort32(c, GSORT_F32, f, n, ix, GSORT_DESCENDING | GSORT_STABLE, &res, &err);
    int ok = rc == 0 && ix[0] < n;
    for (size_t i = 1; ok && i < n; i++) {
        ok = ix[i] < n;
        if (!ok)
            break;
        float a = f[ix[i - 1]], b = f[ix[i]];
        int an = isnan(a) != 0, bn = isnan(b) != 0, as = signbit(a) != 0, bs = signbit(b) != 0;
        /* Descending total order: NaNs first; +0.0 before -0.0. */
        ok = an ? 1 : bn ? 0 : a > b || (a == b && as <= bs);
        if (ok && (an ? bn : !bn && a == b && as == bs))
            ok = ix[i - 1] < ix[i];    /* equal keys: stable */
    }
    tap_ok(ok, "descending stable argsort32 of floats with NaNs on the daemon's plan: served by "
           "'%s' on %s: %s", res.algorithm, res.device < 0 ? "the host" : res.device_name,
           rc ? err.message : "in order");
    free(f);
    free(ix);
    gsort_close(c);
    int st = dmn_stop(&dev, SIGTERM, 30);
    tap_ok(st == 0, "the device daemon stops cleanly: exit %d", st);
}

/* ---- the README's example ---- */

static int run_example(const char *sock, char *out, size_t len)
{
    char exe[4200], log[300];
    snprintf(exe, sizeof exe, "%s/libgsort/gsort-example", dmn_builddir());
    snprintf(log, sizeof log, "%s/example.out", dmn_tmpdir());
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(exe, exe, sock, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    out[0] = '\0';
    FILE *f = fopen(log, "r");
    if (f) {
        size_t got = fread(out, 1, len - 1, f);
        out[got] = '\0';
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_example(const dmn *d)
{
    char out[4096];
    int rc = run_example(d->sock, out, sizeof out);
    tap_diag("gsort-example says:");
    for (const char *l = out; *l;) {
        const char *e = strchr(l, '\n');
        int len = e ? (int)(e - l) : (int)strlen(l);
        tap_diag("  %.*s", len, l);
        l += len + (e != NULL);
    }
    tap_ok(rc == 0 && strstr(out, "sorted 1000000 u32 keys on the host") &&
           strstr(out, "zero copy") && strstr(out, "; 0 out of order") &&
           strstr(out, "argsort with host: -7.5 -1 0 2.5 3\n"),
           "libgsort/gsort-example sorts, argsorts and reports against a real daemon (exit %d)", rc);
    char none[200];
    snprintf(none, sizeof none, "%s/example-none.sock", dmn_tmpdir());
    rc = run_example(none, out, sizeof out);
    int ok = rc == 1 && strstr(out, "no gsortd is listening at") && strstr(out, none) &&
             strstr(out, "GSORT_ENODAEMON");
    out[strcspn(out, "\n")] = '\0';
    tap_ok(ok, "with no daemon it prints gsort_error.message and exits 1: %s", out);
}

/* ---- sorting in the caller's process (issue 36) ---- */

/* One sortcheck case sorted twice from the same input, locally (n < 256:
 * always local) and by the daemon (GSORT_NO_LOCAL): the two must agree
 * bit for bit, keys and values, and the local result must be right. The
 * main daemon is host-only, so even an unstable request runs the same
 * stable code there. 1 when all holds, else 0 with the reason in why. */
static int local_case(gsort_conn *c, int api, gs_dtype t, int desc, int stable, size_t n,
                      int dist, uint64_t seed, char *why, size_t wl)
{
    sc_case sc;
    gs_payload p = api_payload[api];
    if (sc_case_init(&sc, t, p, desc, n, dist, seed) < 0) {
        snprintf(why, wl, "out of memory for the case");
        return 0;
    }
    size_t kb = n * gs_dtype_size(t), vb = n * gs_payload_size(p);
    char *dk = malloc(kb + 8), *dv = malloc(vb + 8);
    int ok = 0;
    if (!dk || !dv) {
        snprintf(why, wl, "out of memory for the daemon's copy");
        goto out;
    }
    memcpy(dk, sc.req.keys, kb);
    if (vb)
        memcpy(dv, sc.req.values, vb);
    unsigned flags = (desc ? GSORT_DESCENDING : 0) | (stable ? GSORT_STABLE : 0);
    gsort_dtype dt = (gsort_dtype)t;
    for (int daemon = 0; daemon < 2; daemon++) {
        void *k = daemon ? dk : sc.req.keys, *v = daemon ? dv : sc.req.values;
        unsigned f = flags | (daemon ? GSORT_NO_LOCAL : 0);
        gsort_result res;
        gsort_error err;
        int rc = api_call(c, api, dt, k, v, n, f, &res, &err);
        if (rc != 0) {
            snprintf(why, wl, "%s: %s: %.400s", daemon ? "daemon" : "local",
                     gsort_strerror(rc), err.message);
            goto out;
        }
        int local = !strcmp(res.plan, "local");
        if (local == daemon || (local && (strcmp(res.algorithm, "host") || res.device != -1 ||
                                          res.daemon_ms != 0))) {
            snprintf(why, wl, "%s call: plan '%s', algorithm '%s', device %d",
                     daemon ? "GSORT_NO_LOCAL" : "the n < 256", res.plan, res.algorithm,
                     res.device);
            goto out;
        }
    }
    if (memcmp(sc.req.keys, dk, kb) != 0 || (vb && memcmp(sc.req.values, dv, vb) != 0)) {
        snprintf(why, wl, "the local %s differ from the daemon's",
                 memcmp(sc.req.keys, dk, kb) ? "keys" : "values");
        goto out;
    }
    if ((api == A_ARG32 || api == A_ARG64) && argsort_to_keys(&sc, api, t, n, why, wl) < 0)
        goto out;
    ok = sc_case_verify(&sc, 1, why, wl);
out:
    free(dk);
    free(dv);
    sc_case_free(&sc);
    return ok;
}

/* A call's plan, or the error's name. */
static const char *plan_of(int rc, const gsort_result *res)
{
    return rc ? gsort_strerror(rc) : res->plan;
}

/* The router's rules on times recorded by hand (gsort_local.c). */
static void test_router_rules(void)
{
    lgs_router *r = lgs_router_new();
    if (!r)
        tap_bail("out of memory for a router");
    unsigned s = lgs_shape(GSORT_U32, GSORT_VALUES_NONE, 0, 0);
    unsigned s2 = lgs_shape(GSORT_U32, GSORT_VALUES_NONE, 0, 1);
    tap_ok(lgs_router_choose(r, s, 0) == 1 && lgs_router_choose(r, s, 255) == 1 &&
           lgs_router_choose(r, s, 256) == 0, "router: below 256 keys always local; at 256, "
           "nothing measured: the daemon first");
    lgs_router_record(r, s, 1000, 0, 1.0);
    tap_ok(lgs_router_choose(r, s, 1000) == 1 && lgs_router_choose(r, s2, 1000) == 0,
           "router: the daemon timed at a size: local tried there once; another shape "
           "(stable) is apart");
    /* one sample each: the daemon twice more (a grown stage's first two
     * calls are cold), numpy once more, the fastest of each kept */
    lgs_router_record(r, s, 1000, 1, 0.9);
    int second = lgs_router_choose(r, s, 1000) == 0;
    lgs_router_record(r, s, 1000, 0, 4.0);
    second = second && lgs_router_choose(r, s, 1000) == 0;
    lgs_router_record(r, s, 1000, 0, 3.0);
    second = second && lgs_router_choose(r, s, 1000) == 1;
    lgs_router_record(r, s, 1000, 1, 0.5);
    double loc, dae;
    lgs_router_get(r, s, 1000, &loc, &dae);
    tap_ok(second && fabs(dae - 0.001) < 1e-12 && fabs(loc - 0.0005) < 1e-12,
           "router: three samples of the daemon's route and two of the local one before "
           "either wins, the fastest kept: %g, %g ms/key", dae, loc);
    /* local twice as fast: the daemon, within RETRY_RATIO, is retried */
    int daemon_calls = 0;
    for (int i = 0; i < 128; i++)
        daemon_calls += !lgs_router_choose(r, s, 1000);
    tap_ok(daemon_calls == 2, "router: local twice as fast: local, the daemon retried 1 call "
           "in 64 (%d of 128)", daemon_calls);
    lgs_router_record(r, s, 1000, 0, 1.8);
    lgs_router_get(r, s, 1000, &loc, &dae);
    double avg = dae;
    lgs_router_record(r, s, 1000, 0, 100.0);     /* one preempted call */
    lgs_router_get(r, s, 1000, &loc, &dae);
    tap_ok(fabs(avg - 0.0012) < 1e-12 && fabs(dae - 0.0015) < 1e-12 &&
           fabs(loc - 0.0005) < 1e-12,
           "router: exponential averages per key (0.75 old + 0.25 new): %g ms/key; a sample "
           "counts for at most twice the average (100 ms: %g)", avg, dae);
    for (int i = 0; i < 20; i++)
        lgs_router_record(r, s, 1000, 0, 10.0);
    daemon_calls = 0;
    for (int i = 0; i < 128; i++)
        daemon_calls += !lgs_router_choose(r, s, 1000);
    tap_ok(daemon_calls == 0, "router: a loser over 4x slower is not retried (%d of 128)",
           daemon_calls);
    /* neighbours: bucket 10 (1000) local won; 600 (bucket 10 too) local;
     * 300 (bucket 9), unmeasured, below a size local won: local */
    tap_ok(lgs_router_choose(r, s, 600) == 1 && lgs_router_choose(r, s, 300) == 1,
           "router: an unmeasured size below one local won stays local");
    lgs_router_free(r);
    r = lgs_router_new();
    if (!r)
        tap_bail("out of memory for a router");
    for (int i = 0; i < 2; i++) {
        lgs_router_record(r, s, 1000, 0, 0.1);
        lgs_router_record(r, s, 1000, 1, 0.5);
    }
    int retried = 0;
    for (int i = 0; i < 128; i++)
        retried += lgs_router_choose(r, s, 1000);
    tap_ok(lgs_router_choose(r, s, 5000) == 0 && lgs_router_choose(r, s, 300) == 0 &&
           retried == 0, "router: the daemon won at 1000 (5x): sizes above go to it, an "
           "unmeasured one below asks it first, local not retried (%d)", retried);
    size_t big = ((size_t)1 << 22) + 1;
    lgs_router_record(r, s2, big, 0, 10.0);
    tap_ok(lgs_router_choose(r, s2, big) == 0 && lgs_router_choose(r, s2, (size_t)1 << 22) == 0,
           "router: never tried locally above 2^22 keys");
    lgs_router_record(r, s2, (size_t)1 << 22, 0, 10.0);
    tap_ok(lgs_router_choose(r, s2, (size_t)1 << 22) == 1, "router: at 2^22 keys, once "
           "the daemon was timed, local is tried");
    /* the daemon's crossover: below it local, whatever was measured (here
     * the daemon won at 1000, 5x), at it the measured rules again; 0 forgets */
    lgs_router_set_below(r, s, 5000);
    int below = 0;
    for (int i = 0; i < 128; i++)
        below += lgs_router_choose(r, s, 1000);
    tap_ok(below == 128 && lgs_router_choose(r, s, 4999) == 1 &&
           lgs_router_choose(r, s, 5000) == 0, "router: below the daemon's crossover (5000) "
           "local at every call (%d of 128), at it the daemon it was measured faster", below);
    lgs_router_set_below(r, s, 0);
    tap_ok(lgs_router_choose(r, s, 1000) == 0, "router: with no crossover known, measured "
           "times decide again");
    lgs_router_free(r);
}

/* gsort_local_run: sortcheck cases sorted with no connection, on one
 * thread, on the pool's (0) and on two, against the reference (stable:
 * the host sort is) and against the daemon's answer to the same input
 * (GSORT_NO_LOCAL); then what it refuses, the arrays left as they were. */
static void test_local_run(const dmn *d)
{
    gsort_conn *c = conn_or_bail(d->sock);
    static const size_t sizes[] = { 0, 1, 300, 5000 };
    static const unsigned threads[] = { 1, 0, 2 };
    int bad = 0, runs = 0;
    char first[700] = "";
    uint64_t seed = 91;
    for (int api = 0; api < A_COUNT; api++)
        for (int t = 0; t < GS_DT_COUNT; t++)
            for (int desc = 0; desc < 2; desc++)
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                    int isf = t == GS_DT_F32 || t == GS_DT_F64;
                    size_t n = sizes[si];
                    unsigned th = threads[(api + t + si) % 3];
                    sc_case sc;
                    gs_payload p = api_payload[api];
                    if (sc_case_init(&sc, (gs_dtype)t, p, desc, n,
                                     isf ? (si % 2 ? SC_NANMIX : SC_FSPECIAL) : SC_FEW16,
                                     seed++) < 0)
                        tap_bail("out of memory for a case");
                    size_t kb = n * gs_dtype_size((gs_dtype)t), vb = n * gs_payload_size(p);
                    char *dk = malloc(kb + 8), *dv = malloc(vb + 8);
                    if (!dk || !dv)
                        tap_bail("out of memory for a case");
                    memcpy(dk, sc.req.keys, kb);
                    if (vb)
                        memcpy(dv, sc.req.values, vb);
                    char why[600] = "";
                    gsort_request rq;
                    gsort_request_init(&rq);
                    rq.dtype = (gsort_dtype)t;
                    rq.n = n;
                    rq.keys = sc.req.keys;
                    rq.values_kind = (gsort_values)p;
                    rq.values = sc.req.values;
                    rq.flags = desc ? GSORT_DESCENDING : 0;
                    gsort_result res;
                    gsort_error err;
                    int rc = gsort_local_run(&rq, 0, th, &res, &err);
                    int ok = rc == 0 && !strcmp(res.plan, "local") &&
                             !strcmp(res.algorithm, "host") && res.device == -1;
                    if (!ok)
                        snprintf(why, sizeof why, "gsort_local_run: %s %.300s, plan '%.30s'",
                                 gsort_strerror(rc), err.message, rc ? "" : res.plan);
                    if (ok) {
                        rq.keys = dk;
                        rq.values = dv;
                        rq.flags |= GSORT_NO_LOCAL;
                        rc = gsort_run(c, &rq, &res, &err);
                        ok = rc == 0 && memcmp(sc.req.keys, dk, kb) == 0 &&
                             (!vb || memcmp(sc.req.values, dv, vb) == 0);
                        if (!ok)
                            snprintf(why, sizeof why, "the daemon's answer %.400s",
                                     rc ? err.message : "differs");
                    }
                    if (ok)
                        ok = sc_case_verify(&sc, 1, why, sizeof why);
                    runs++;
                    if (!ok && !bad++)
                        snprintf(first, sizeof first, "%s %s desc=%d n=%zu threads=%u: %s",
                                 gs_dtype_name((gs_dtype)t), gs_payload_name(p), desc, n, th,
                                 why);
                    free(dk);
                    free(dv);
                    sc_case_free(&sc);
                }
    tap_ok(!bad, "gsort_local_run: %d cases (every dtype, values kind, order; 1, 0 and 2 "
           "threads) right and bit-identical to the daemon's%s%s", runs, bad ? ": " : "",
           first);

    /* past two chunks of 2^18 keys: the pool's helpers in this process */
    {
        size_t n = 600000;
        sc_case sc;
        if (sc_case_init(&sc, GS_DT_F32, GS_PL_U32, 1, n, SC_NANMIX, 5) < 0)
            tap_bail("out of memory for a case");
        gsort_request rq;
        gsort_request_init(&rq);
        rq.dtype = GSORT_F32;
        rq.n = n;
        rq.keys = sc.req.keys;
        rq.values_kind = GSORT_VALUES_U32;
        rq.values = sc.req.values;
        rq.flags = GSORT_DESCENDING | GSORT_STABLE;
        gsort_error err;
        char why[600] = "";
        int rc = gsort_local_run(&rq, 0, 0, NULL, &err);
        tap_ok(rc == 0 && sc_case_verify(&sc, 1, why, sizeof why), "gsort_local_run: 600000 "
               "f32 keys with values on the pool's threads, res NULL: %s%s",
               rc ? err.message : "right", why);
        sc_case_free(&sc);
    }

    /* 8- and 16-bit keys: their words sorted and decoded, as gsort_run's */
    {
        size_t n = 3000;
        uint16_t *h = malloc(n * 2), *h2 = malloc(n * 2);
        uint64_t *ix = malloc(n * 8), *ix2 = malloc(n * 8);
        if (!h || !h2 || !ix || !ix2)
            tap_bail("out of memory");
        uint64_t x = 77;
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            h[i] = (uint16_t)(x >> 40);
        }
        memcpy(h2, h, n * 2);
        gsort_request rq;
        gsort_request_init(&rq);
        rq.dtype = GSORT_F16;
        rq.n = n;
        rq.keys = h;
        rq.values_kind = GSORT_VALUES_IDX64;
        rq.values = ix;
        gsort_error err;
        int rc = gsort_local_run(&rq, 0, 1, NULL, &err);
        rq.keys = h2;
        rq.values = ix2;
        rq.flags = GSORT_NO_LOCAL;
        gsort_result res;
        int rc2 = gsort_run(c, &rq, &res, &err);
        tap_ok(rc == 0 && rc2 == 0 && !memcmp(h, h2, n * 2) && !memcmp(ix, ix2, n * 8),
               "gsort_local_run: f16 keys (every bit pattern: NaNs, zeros) with indices, as "
               "the daemon sorts them: %s", err.message);
        free(h);
        free(h2);
        free(ix);
        free(ix2);
    }

    /* rows: each on its own, as gsort_run_rows sorts them by the daemon */
    {
        enum { R = 37, L = 129, N = R * L };
        static const gsort_dtype dts[] = { GSORT_U32, GSORT_I64, GSORT_F32, GSORT_F64,
                                           GSORT_F16, GSORT_I8 };
        static unsigned char k1[N * 8], k2[N * 8];
        static uint32_t i1[N], i2[N];
        int rbad = 0;
        char rwhy[200] = "";
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
            for (int v = 0; v < 4; v++) {
                const lgs_dt *dd = lgs_dt_of((int)dts[di]);
                uint64_t x = 1234 + di * 7 + (uint64_t)v;
                for (size_t i = 0; i < (size_t)N * dd->bytes; i++) {
                    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                    k1[i] = (unsigned char)(x >> 56);
                }
                memcpy(k2, k1, (size_t)N * dd->bytes);
                gsort_request rq;
                gsort_request_init(&rq);
                rq.dtype = dts[di];
                rq.n = N;
                rq.keys = k1;
                rq.values_kind = v & 1 ? GSORT_VALUES_IDX32 : GSORT_VALUES_NONE;
                rq.values = v & 1 ? i1 : NULL;
                rq.flags = (v & 2 ? GSORT_DESCENDING : 0) | GSORT_STABLE;
                gsort_error e1, e2;
                gsort_result r2;
                int rc1 = gsort_local_run(&rq, R, (unsigned)v % 3, NULL, &e1);
                rq.keys = k2;
                rq.values = v & 1 ? i2 : NULL;
                rq.flags |= GSORT_NO_LOCAL;
                int rc2 = gsort_run_rows(c, &rq, R, &r2, &e2);
                if (rc1 || rc2 || memcmp(k1, k2, (size_t)N * dd->bytes) ||
                    ((v & 1) && memcmp(i1, i2, sizeof i1))) {
                    if (!rbad++)
                        snprintf(rwhy, sizeof rwhy, ": %s v=%d: %d %d %.80s %.80s", dd->name, v,
                                 rc1, rc2, e1.message, e2.message);
                }
            }
        uint32_t k[10] = { 0 };
        gsort_request rq;
        gsort_request_init(&rq);
        rq.keys = k;
        rq.n = 10;
        gsort_error err;
        int rc = gsort_local_run(&rq, 3, 1, NULL, &err);
        tap_ok(!rbad && rc == GSORT_EINVAL, "gsort_local_run of %d rows of %d keys (u32, i64, "
               "f32, f64, f16, i8; keys alone and stable indices; both orders): as the "
               "daemon's rows%s; 3 rows of 10 keys: GSORT_EINVAL (%d)", R, L, rwhy, rc);
    }

    /* refused before anything is written */
    {
        uint32_t k[8] = { 5, 3, 9, 1, 7, 2, 8, 4 }, k0[8], v[8] = { 0 };
        memcpy(k0, k, sizeof k);
        gsort_request rq;
        gsort_request_init(&rq);
        rq.keys = k;
        rq.n = 8;
        gsort_error err;
        int rcs[6];
        rcs[0] = gsort_local_run(NULL, 0, 1, NULL, &err);
        rq.flags = GSORT_SPLIT;
        rcs[1] = gsort_local_run(&rq, 0, 1, NULL, &err);
        rq.flags = GSORT_NO_LOCAL;
        rcs[2] = gsort_local_run(&rq, 0, 1, NULL, &err);
        rq.flags = 0;
        rq.algorithm = "radix";
        rcs[3] = gsort_local_run(&rq, 0, 1, NULL, &err);
        rq.algorithm = NULL;
        rq.device = 0;
        rcs[4] = gsort_local_run(&rq, 0, 1, NULL, &err);
        rq.device = -1;
        rq.values_kind = GSORT_VALUES_U32;
        rcs[5] = gsort_local_run(&rq, 0, 1, NULL, &err);
        int all = !memcmp(k, k0, sizeof k);
        for (int i = 0; i < 6; i++)
            all &= rcs[i] == GSORT_EINVAL;
        rq.values = v;
        rq.algorithm = "host";
        int rc = gsort_local_run(&rq, 0, 1, NULL, &err);
        tap_ok(all && rc == 0 && k[0] == 1 && k[7] == 9 && v[0] == 0,
               "gsort_local_run: no request, GSORT_SPLIT, GSORT_NO_LOCAL, an algorithm, a "
               "device and values missing for their kind are GSORT_EINVAL, the keys as they "
               "were; \"host\" is taken (%d %d %d %d %d %d; %d)", rcs[0], rcs[1], rcs[2],
               rcs[3], rcs[4], rcs[5], rc);
    }
    gsort_close(c);
}

static void test_local(const dmn *d)
{
    unsetenv("GSORT_NO_LOCAL");
    gsort_conn *c = conn_or_bail(d->sock);
    static const size_t sizes[] = { 0, 1, 2, 47, 49, 255 };
    const size_t ns = sizeof sizes / sizeof sizes[0];
    uint64_t seed = 7;
    for (int api = 0; api < A_COUNT; api++) {
        int bad = 0, runs = 0;
        char first[700] = "";
        for (int t = 0; t < GS_DT_COUNT; t++) {
            int isf = t == GS_DT_F32 || t == GS_DT_F64;
            for (int desc = 0; desc < 2; desc++)
                for (int stable = 0; stable < 2; stable++)
                    for (size_t si = 0; si < ns; si++) {
                        int dist = !isf ? (si % 2 ? SC_FEW16 : SC_RANDOM)
                                        : si % 3 == 0 ? SC_NANMIX
                                        : si % 3 == 1 ? SC_FSPECIAL : SC_FEW16;
                        char why[600] = "";
                        runs++;
                        if (!local_case(c, api, (gs_dtype)t, desc, stable, sizes[si], dist,
                                        seed++, why, sizeof why) && !bad++)
                            snprintf(first, sizeof first, "%s %s n=%zu %s: %s",
                                     gs_dtype_name((gs_dtype)t), desc ? "desc" : "asc",
                                     sizes[si], stable ? "stable" : "any", why);
                    }
        }
        tap_ok(!bad, "local = daemon, bit for bit: %s, %d sorts (every dtype, asc/desc, "
               "stable/not, NaNs, n = 0 .. 255)%s%s", api_names[api], runs,
               bad ? ", first failure: " : "", first);
    }

    /* What never goes local, even at n < 256. */
    uint32_t k[64];
    gsort_result res;
    gsort_error err;
    gsort_request rq;
    gsort_request_init(&rq);
    rq.keys = k;
    rq.n = 64;
    const char *why = "";
    int never = 1, rc;
    fill_u32(k, 64, 3);
    rq.algorithm = "host";
    rc = gsort_run(c, &rq, &res, &err);
    if (rc || !strcmp(res.plan, "local") || !u32_sorted(k, 64))
        never = 0, why = "a named algorithm";
    rq.params = "radix_bits=8";
    fill_u32(k, 64, 4);
    rc = gsort_run(c, &rq, &res, &err);
    if (rc || !strcmp(res.plan, "local"))
        never = 0, why = "params";
    rq.algorithm = NULL;
    rq.params = NULL;
    rq.device = 0;      /* the host-only daemon has none: refused, but by the daemon */
    rc = gsort_run(c, &rq, &res, &err);
    if (!rc && !strcmp(res.plan, "local"))
        never = 0, why = "a device";
    rq.device = -1;
    rq.flags = GSORT_SPLIT;
    rc = gsort_run(c, &rq, &res, &err);
    if (rc || !strcmp(res.plan, "local"))
        never = 0, why = "GSORT_SPLIT";
    tap_ok(never, "n = 64 naming an algorithm, params, a device or GSORT_SPLIT goes to the "
           "daemon%s%s", never ? "" : ", not: ", why);
    rq.flags = 0;
    rq.algorithm = "auto";
    fill_u32(k, 64, 5);
    rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == 0 && !strcmp(res.plan, "local") && u32_sorted(k, 64),
           "algorithm \"auto\" at n = 64 may sort locally: %s", plan_of(rc, &res));
    /* under 256 keys the call is not timed apart from its sort; every other
     * field as cleared (the result was a daemon's reply before) */
    tap_ok(rc == 0 && res.total_ms == res.sort_ms && res.sort_ms >= 0 && res.device == -1 &&
           !strcmp(res.algorithm, "host") && res.params[0] == '\0' &&
           res.device_name[0] == '\0' && res.fallback[0] == '\0' && res.daemon_ms == 0 &&
           res.queue_ms == 0 && res.zero_copy == 0,
           "a local result: total_ms is the sort's (%.6f, %.6f ms), nothing of an earlier reply "
           "left", res.total_ms, res.sort_ms);

    /* A gsort_alloc block is sorted where it lies, here too. */
    uint32_t *blk = gsort_alloc(200 * sizeof *blk, NULL);
    if (!blk)
        tap_bail("gsort_alloc failed");
    fill_u32(blk, 200, 6);
    rc = gsort_sort(c, GSORT_U32, blk, 200, 0, &res, &err);
    tap_ok(rc == 0 && !strcmp(res.plan, "local") && res.zero_copy == 0 && u32_sorted(blk, 200),
           "a gsort_alloc block of 200 keys: sorted in place locally (%s)", plan_of(rc, &res));
    gsort_free(blk);

    /* Past 256 keys. This daemon has no device: below the size from which
     * its host sort takes several threads (two chunks, 524288 keys) it
     * announces that it would sort as this process does, and every
     * shape is sorted here from its first call; from there on (or with one
     * host thread, never) the daemon is asked first, then local once
     * (nothing measured). */
    cJSON *info = query_json(gsort_info, c, NULL);
    const cJSON *xo = cJSON_GetObjectItemCaseSensitive(info, "crossover"), *x;
    int nxo = 0, xo_ok = 1;
    /* the host sort takes a thread per CPU (the daemon's machine is this one) */
    double want = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 524288 : -1;
    cJSON_ArrayForEach(x, xo) {
        const cJSON *lb = cJSON_GetObjectItemCaseSensitive(x, "local_below");
        const cJSON *dv = cJSON_GetObjectItemCaseSensitive(x, "device");
        nxo++;
        xo_ok &= want < 0 ? cJSON_IsNull(lb)
                          : cJSON_IsNumber(lb) && lb->valuedouble == want &&
                                cJSON_IsNumber(dv) && dv->valuedouble == -1;
    }
    tap_ok(xo_ok && nxo == 30, "info: the crossover of all %d plan shapes (30) is %s "
           "(the host sort's threads)", nxo, want < 0 ? "null: one CPU" : "524288");
    cJSON_Delete(info);
    uint32_t *m = malloc(((size_t)1 << 19) * sizeof *m);
    if (!m)
        tap_bail("out of memory");
    char plans[2][32];
    for (int i = 0; i < 2; i++) {
        fill_u32(m, 1000, 8 + (uint32_t)i);
        rc = gsort_sort(c, GSORT_U32, m, 1000, GSORT_DESCENDING, &res, &err);
        snprintf(plans[i], sizeof plans[i], "%s", plan_of(rc, &res));
    }
    tap_ok(!strcmp(plans[0], "local") && !strcmp(plans[1], "local"),
           "1000 keys, a shape not seen before, below the crossover: local from the first call "
           "('%s', '%s')", plans[0], plans[1]);
    if (want > 0) {
        size_t big = (size_t)want;
        for (int i = 0; i < 2; i++) {
            fill_u32(m, big, 18 + (uint32_t)i);
            rc = gsort_sort(c, GSORT_U32, m, big, GSORT_DESCENDING, &res, &err);
            snprintf(plans[i], sizeof plans[i], "%s", plan_of(rc, &res));
        }
        tap_ok(strcmp(plans[0], "local") && !starts_with(plans[0], "GSORT_") &&
               !strcmp(plans[1], "local"), "%zu keys, at the crossover: the daemon first "
               "('%s'), then local once ('%s')", big, plans[0], plans[1]);
    } else {
        /* one CPU: the daemon never sorts faster than this process */
        fill_u32(m, (size_t)1 << 19, 18);
        rc = gsort_sort(c, GSORT_U32, m, (size_t)1 << 19, GSORT_DESCENDING, &res, &err);
        tap_ok(rc == 0 && !strcmp(res.plan, "local"), "2^19 keys on one CPU: local ('%s')",
               plan_of(rc, &res));
    }
    free(m);
    gsort_close(c);

    /* GSORT_NO_LOCAL in the environment at connect time. */
    int env_ok = 1;
    static const char *const vals[] = { "1", "0", "" };
    static const int want_local[] = { 0, 1, 1 };
    char got[64] = "";
    for (int i = 0; i < 3; i++) {
        setenv("GSORT_NO_LOCAL", vals[i], 1);
        gsort_conn *e = conn_or_bail(d->sock);
        unsetenv("GSORT_NO_LOCAL");     /* read at connect: no longer matters */
        fill_u32(k, 64, 9);
        rc = gsort_sort(e, GSORT_U32, k, 64, 0, &res, &err);
        int local = rc == 0 && !strcmp(res.plan, "local");
        env_ok &= rc == 0 && local == want_local[i] && u32_sorted(k, 64);
        size_t gl = strlen(got);
        snprintf(got + gl, sizeof got - gl, "%s'%s': %s", i ? ", " : "", vals[i],
                 plan_of(rc, &res));
        gsort_close(e);
    }
    tap_ok(env_ok, "GSORT_NO_LOCAL at gsort_connect: 1 asks the daemon, 0 or empty may sort "
           "locally (%s)", got);
    test_router_rules();
    setenv("GSORT_NO_LOCAL", "1", 1);
}

/* Each of `rows` rows of k ascending, holding its row of in (sums). */
static int rows_sorted(const uint32_t *k, size_t rows, size_t len, const uint32_t *in)
{
    for (size_t r = 0; r < rows; r++) {
        uint64_t sum_in = 0, sum_out = 0;
        for (size_t i = 0; i < len; i++) {
            sum_in += in[r * len + i];
            sum_out += k[r * len + i];
            if (i && k[r * len + i - 1] > k[r * len + i])
                return 0;
        }
        if (sum_in != sum_out)
            return 0;
    }
    return 1;
}

/* A daemon whose devices sort from 2^12 keys (a GPU's built-in defaults on
 * PoCL, fixed: GSORTD_TEST_DEFAULTS=gpu:12) announces 4096 as every
 * shape's crossover, and the library follows it: below, local from the
 * first call; from there on, the daemon first. */
static void nw_fill(gsort_dtype t, void *k, size_t n, int dist, uint64_t seed);
static void nw_reference(gsort_dtype t, const void *keys, size_t n, int desc, size_t *ref);

static void test_crossover(void)
{
    static dmn xd;
    unsetenv("GSORT_NO_LOCAL");
    setenv("GSORTD_TEST_DEFAULTS", "gpu:12", 1);
    gsort_conn *c = start_and_connect(&xd, "xo", NULL);
    unsetenv("GSORTD_TEST_DEFAULTS");
    gsort_set_timeout(c, 300, NULL);    /* a first device sort may include a PoCL compile */
    cJSON *info = query_json(gsort_info, c, NULL);
    const cJSON *xo = cJSON_GetObjectItemCaseSensitive(info, "crossover"), *x;
    int nxo = 0, ok = 1;
    char first[160] = "";
    cJSON_ArrayForEach(x, xo) {
        const cJSON *lb = cJSON_GetObjectItemCaseSensitive(x, "local_below");
        const cJSON *dv = cJSON_GetObjectItemCaseSensitive(x, "device");
        int good = cJSON_IsNumber(lb) && lb->valuedouble == 4096 && cJSON_IsNumber(dv) &&
                   dv->valuedouble >= 0;
        if (!good && ok) {
            char *t = cJSON_PrintUnformatted(x);
            snprintf(first, sizeof first, ": %s", t ? t : "?");
            free(t);
        }
        ok &= good;
        nxo++;
    }
    cJSON_Delete(info);
    tap_ok(ok && nxo == 30, "devices from 2^12 keys: info's crossover is 4096, a device, for "
           "all %d shapes (16-, 32- and 64-bit keys)%s", nxo, first);
    uint32_t *k = malloc(5000 * sizeof *k);
    if (!k)
        tap_bail("out of memory");
    gsort_result res;
    gsort_error err;
    char plans[3][40];
    static const size_t ns[3] = { 4095, 4095, 4096 };
    int sorted = 1;
    for (int i = 0; i < 3; i++) {
        fill_u32(k, ns[i], 30 + (uint32_t)i);
        int rc = gsort_sort(c, GSORT_U32, k, ns[i], GSORT_STABLE, &res, &err);
        sorted &= rc == 0 && u32_sorted(k, ns[i]);
        snprintf(plans[i], sizeof plans[i], "%s", plan_of(rc, &res));
    }
    tap_ok(sorted && !strcmp(plans[0], "local") && !strcmp(plans[1], "local") &&
           strcmp(plans[2], "local") && !starts_with(plans[2], "GSORT_"),
           "4095 keys: local from the first call ('%s', '%s'); 4096: the daemon first ('%s')",
           plans[0], plans[1], plans[2]);
    /* 8- and 16-bit keys: the 16-bit class's crossover (the same here,
     * without a plan); from it the device sorts the words */
    {
        uint16_t *h = malloc(5000 * sizeof *h), *in = malloc(5000 * sizeof *in);
        size_t *ref = malloc(5000 * sizeof *ref);
        if (!h || !in || !ref)
            tap_bail("out of memory");
        int right = 1, dev = -1;
        for (int i = 0; i < 3; i++) {
            nw_fill(GSORT_F16, in, ns[i], 0, 60 + (uint64_t)i);
            memcpy(h, in, ns[i] * sizeof *h);
            nw_reference(GSORT_F16, in, ns[i], 1, ref);
            int rc = gsort_sort(c, GSORT_F16, h, ns[i], GSORT_DESCENDING | GSORT_STABLE,
                                &res, &err);
            right &= rc == 0;
            dev = rc ? -1 : res.device;
            for (size_t j = 0; right && j < ns[i]; j++)
                right = h[j] == in[ref[j]];
            snprintf(plans[i], sizeof plans[i], "%.20s%s%.16s", plan_of(rc, &res),
                     rc || !strcmp(res.plan, "local") ? "" : ", ", rc ||
                     !strcmp(res.plan, "local") ? "" : res.algorithm);
        }
        free(h);
        free(in);
        free(ref);
        /* from 2^23, 8-bit keys alone are counted on the host whatever the
         * plan; 16-bit keys alone follow it (a device's radix sorts them
         * where they lie) */
        size_t big = (size_t)1 << 23;
        uint16_t *u = malloc(big * sizeof *u);
        if (!u)
            tap_bail("out of memory");
        for (size_t j = 0; j < big; j++)
            u[j] = (uint16_t)((j * 2654435761u) >> 11);
        int brc = gsort_sort(c, GSORT_U16, u, big, GSORT_NO_LOCAL, &res, &err);
        int bsorted = brc == 0;
        for (size_t j = 1; bsorted && j < big; j++)
            bsorted = u[j - 1] <= u[j];
        tap_ok(bsorted && res.device >= 0 && !strcmp(res.algorithm, "radix"),
               "2^23 u16 keys alone, where the plan puts u32 keys on a device: radix there "
               "(device %d, %s)", brc ? -2 : res.device, brc ? err.message : res.algorithm);
        uint8_t *b8 = (uint8_t *)u;
        for (size_t j = 0; j < big; j++)
            b8[j] = (uint8_t)((j * 2654435761u) >> 13);
        brc = gsort_sort(c, GSORT_U8, b8, big, GSORT_NO_LOCAL, &res, &err);
        bsorted = brc == 0;
        for (size_t j = 1; bsorted && j < big; j++)
            bsorted = b8[j - 1] <= b8[j];
        free(u);
        tap_ok(bsorted && res.device == -1 && !strcmp(res.algorithm, "host"),
               "2^23 u8 keys alone, where the plan puts u32 keys on a device: counted on the "
               "host (device %d, %s)", brc ? -2 : res.device, brc ? err.message : res.algorithm);
        tap_ok(right && !strcmp(plans[0], "local") && !strcmp(plans[1], "local") &&
               strcmp(plans[2], "local") && !starts_with(plans[2], "GSORT_") && dev >= 0,
               "f16 keys take the 16-bit crossover: 4095 local from the first call ('%s', '%s'); "
               "4096 the daemon, whose plan puts u32 keys on a device: its words there ('%s', "
               "device %d); each descending as the reference", plans[0], plans[1], plans[2],
               dev);
    }
    /* rows: here below the crossover, the daemon's device (bitonic: every
     * row in one launch) from it */
    uint32_t *in = malloc(5000 * sizeof *in);
    if (!in)
        tap_bail("out of memory");
    static const size_t shape[2][2] = { { 4, 1000 }, { 4, 1024 } };
    char where[2][80];
    sorted = 1;
    for (int i = 0; i < 2; i++) {
        size_t n = shape[i][0] * shape[i][1];
        fill_u32(in, n, 50 + (uint32_t)i);
        memcpy(k, in, n * sizeof *k);
        int rc = gsort_sort_rows(c, GSORT_U32, k, shape[i][0], shape[i][1], 0, &res, &err);
        sorted &= rc == 0 && rows_sorted(k, shape[i][0], shape[i][1], in);
        snprintf(where[i], sizeof where[i], "%s%s%s", plan_of(rc, &res), rc ? "" : ", ",
                 rc ? "" : res.algorithm);
    }
    free(in);
    tap_ok(sorted && !strcmp(where[0], "local, host") && starts_with(where[1], "default, bitonic"),
           "4 rows of 1000 (4000 keys): here ('%s'); 4 rows of 1024 (4096): the daemon's device, "
           "all rows in one launch ('%s')", where[0], where[1]);
    /* rows longer than a work-group holds: radix on the device, the rows
     * whole, with their argsort indices within each row */
    {
        enum { LR = 2, LL = 32768 };
        uint32_t *lk = malloc(LR * LL * sizeof *lk), *lin = malloc(LR * LL * sizeof *lin);
        uint32_t *lix = malloc(LR * LL * sizeof *lix);
        if (!lk || !lin || !lix)
            tap_bail("out of memory");
        fill_u32(lin, LR * LL, 77);
        memcpy(lk, lin, LR * LL * sizeof *lk);
        gsort_request rq;
        gsort_request_init(&rq);
        rq.dtype = GSORT_U32;
        rq.n = LR * LL;
        rq.keys = lk;
        rq.values_kind = GSORT_VALUES_IDX32;
        rq.values = lix;
        int rc = gsort_run_rows(c, &rq, LR, &res, &err);
        int lok = rc == 0 && rows_sorted(lk, LR, LL, lin);
        for (size_t r = 0; lok && r < LR; r++)
            for (size_t i = 0; lok && i < LL; i++)
                lok = lix[r * LL + i] < LL && lin[r * LL + lix[r * LL + i]] == lk[r * LL + i];
        tap_ok(lok && res.device >= 0 && !strcmp(res.algorithm, "radix") &&
                   !strcmp(res.plan, "default"),
               "2 rows of 32768 (longer than bitonic's group holds): radix on the daemon's "
               "device, each row sorted with its indices (rc %d, %s, %s, device %d)", rc,
               plan_of(rc, &res), rc ? err.message : res.algorithm, rc ? -2 : res.device);
        free(lk);
        free(lin);
        free(lix);
    }
    gsort_close(c);
    /* GSORT_NO_LOCAL still wins */
    setenv("GSORT_NO_LOCAL", "1", 1);
    c = conn_or_bail(xd.sock);
    fill_u32(k, 4095, 40);
    int rc = gsort_sort(c, GSORT_U32, k, 4095, 0, &res, &err);
    tap_ok(rc == 0 && strcmp(res.plan, "local") && u32_sorted(k, 4095),
           "with GSORT_NO_LOCAL=1, 4095 keys go to the daemon ('%s')", plan_of(rc, &res));
    gsort_close(c);
    free(k);
    tap_ok(dmn_stop(&xd, SIGTERM, 20) == 0, "the daemon stops cleanly");
}

/* 8- and 16-bit keys take the crossover of the daemon's 16-bit key class,
 * not the 32-bit one: a daemon whose plan sends u32 keys to the device from
 * the smallest size and 16-bit keys to the host's count at every size
 * announces no device for the 16-bit class, so 4096 u16 keys are sorted in
 * the process from the first call while 4096 u32 keys go to the daemon
 * (with the 32-bit crossover, u16 keys would go there too). */
static void test_crossover16(void)
{
    char db[600];
    snprintf(db, sizeof db, "%s/xo16.db", dmn_tmpdir());
    gs_db *g = NULL;
    long long id;
    gs_err e;
    gs_err_clear(&e);
    dmn_db_first_device(db, &g, &id);
    for (int b = 10; b <= 14; b++)
        for (int st = 0; st < 2; st++)
            if (gs_db_plan_set(g, id, 32, "none", st, b, "radix", "{}", 0.01, &e) < 0 ||
                gs_db_plan_set(g, id, 16, "none", st, b, "host", "{}", 0.001, &e) < 0)
                tap_bail("plan row: %s", e.msg);
    gs_db_close(g);
    static dmn x16;
    unsetenv("GSORT_NO_LOCAL");
    setenv("GSORTD_TEST_DEFAULTS", "gpu:12", 1);
    const char *const extra[] = { "--db", db, "-o", "tune_missing=no", NULL };
    gsort_conn *c = start_and_connect(&x16, "xo16", extra);
    unsetenv("GSORTD_TEST_DEFAULTS");
    gsort_set_timeout(c, 300, NULL);
    enum { NK = 4096 };
    uint16_t *h = malloc(NK * sizeof *h);
    uint32_t *w = malloc(NK * sizeof *w);
    if (!h || !w)
        tap_bail("out of memory");
    for (size_t i = 0; i < NK; i++)
        h[i] = (uint16_t)((i * 2654435761u) >> 9);
    fill_u32(w, NK, 77);
    gsort_result res;
    gsort_error err;
    int rc = gsort_sort(c, GSORT_U16, h, NK, 0, &res, &err);
    int ok16 = rc == 0;
    for (size_t i = 1; ok16 && i < NK; i++)
        ok16 = h[i - 1] <= h[i];
    char p16[40];
    snprintf(p16, sizeof p16, "%s", plan_of(rc, &res));
    rc = gsort_sort(c, GSORT_U32, w, NK, 0, &res, &err);
    tap_ok(ok16 && !strcmp(p16, "local") && rc == 0 && u32_sorted(w, NK) &&
           strcmp(res.plan, "local") && !starts_with(res.plan, "GSORT_"),
           "a plan with 16-bit rows on the host and u32 rows on the device: 4096 u16 keys "
           "sorted in the process ('%s'), 4096 u32 keys by the daemon ('%s')", p16,
           plan_of(rc, &res));
    free(h);
    free(w);
    gsort_close(c);
    setenv("GSORT_NO_LOCAL", "1", 1);
    tap_ok(dmn_stop(&x16, SIGTERM, 20) == 0, "the daemon stops cleanly");
}

/* Rows (issue 38): gsort_sort_rows and gsort_run_rows, through the daemon
 * (GSORT_NO_LOCAL, as main sets) and in the process (local allowed): each
 * row sorted on its own, argsort indices within the row; rows that do not
 * divide n refused. */
static void test_rows(const dmn *d)
{
    enum { R = 300, L = 45 };
    static uint32_t in[R * L], k[R * L], idx[R * L];
    uint64_t s = 12345;
    for (size_t i = 0; i < R * L; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        in[i] = (uint32_t)(s >> 40) % 1000;
    }
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_result res;
    gsort_error err;
    for (int local = 0; local < 2; local++) {
        if (local)
            unsetenv("GSORT_NO_LOCAL");
        gsort_conn *cl = local ? conn_or_bail(d->sock) : c;
        memcpy(k, in, sizeof k);
        int rc = gsort_sort_rows(cl, GSORT_U32, k, R, L, 0, &res, &err);
        /* local allowed: sorted in the process (plan "local"); else the
         * daemon's host sort */
        tap_ok(rc == 0 && rows_sorted(k, R, L, in) && res.device < 0 &&
                   (local ? !strcmp(res.plan, "local") : strcmp(res.plan, "local") != 0),
               "gsort_sort_rows, %d rows of %d u32 keys, %s: each row sorted (rc %d, %s, plan "
               "%s)", R, L, local ? "local allowed" : "GSORT_NO_LOCAL", rc,
               rc ? err.message : res.algorithm, res.plan);
        memcpy(k, in, sizeof k);
        gsort_request rq;
        gsort_request_init(&rq);
        rq.keys = k;
        rq.n = R * L;
        rq.values_kind = GSORT_VALUES_IDX32;
        rq.values = idx;
        rq.flags = GSORT_STABLE | GSORT_DESCENDING;
        rc = gsort_run_rows(cl, &rq, R, &res, &err);
        int ok = rc == 0;
        for (size_t r = 0; ok && r < R; r++)
            for (size_t i = 0; ok && i < L; i++) {
                uint32_t j = idx[r * L + i];
                ok = j < L && in[r * L + j] == k[r * L + i] &&
                     (i == 0 || k[r * L + i - 1] > k[r * L + i] ||
                      (k[r * L + i - 1] == k[r * L + i] && idx[r * L + i - 1] < j));
            }
        tap_ok(ok, "gsort_run_rows, argsort32 descending stable, %s: indices within each row "
               "(rc %d %s)", local ? "local allowed" : "GSORT_NO_LOCAL", rc,
               rc ? err.message : "");
        if (local) {
            setenv("GSORT_NO_LOCAL", "1", 1);
            gsort_close(cl);
        }
    }
    int rc = gsort_sort_rows(c, GSORT_U32, k, 7, 0, 0, NULL, &err);
    tap_ok(rc == 0, "7 rows of no keys: nothing to do (rc %d)", rc);
    gsort_request rq;
    gsort_request_init(&rq);
    rq.keys = k;
    rq.n = 10;
    rc = gsort_run_rows(c, &rq, 3, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "3 rows do not divide 10 keys"),
           "3 rows of 10 keys refused: %s", err.message);
    gsort_close(c);
}

/* Segments (issue 38): gsort_run_segments in the process (local allowed),
 * through the daemon staged in shared memory and inline (GSORT_NO_LOCAL):
 * each segment sorted on its own, argsort indices within the segment,
 * stable; u64 values carried; empty and one-key segments; bad offsets
 * refused before anything is written. */
static void test_segments(const dmn *d)
{
    enum { S = 200 };
    uint64_t off[S + 1];
    off[0] = 0;
    for (size_t i = 0; i < S; i++)
        off[i + 1] = off[i] + (i % 5 == 2 ? 0 : i % 9 == 4 ? 1 : (i * 29) % 83);
    const size_t n = (size_t)off[S];
    uint32_t *in = malloc(n * 4), *k = malloc(n * 4), *idx = malloc(n * 4);
    double *fk = malloc(n * 8);
    uint64_t *fv = malloc(n * 8);
    if (!in || !k || !idx || !fk || !fv)
        tap_bail("out of memory");
    uint64_t s = 777;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        in[i] = (uint32_t)(s >> 40) % 50;
    }
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_result res;
    gsort_error err;
    static const char *how[] = { "local allowed", "GSORT_NO_LOCAL, staged",
                                 "GSORT_NO_LOCAL, inline" };
    for (int m = 0; m < 3; m++) {
        if (m == 0)
            unsetenv("GSORT_NO_LOCAL");
        gsort_conn *cl = m == 0 ? conn_or_bail(d->sock) : c;
        memcpy(k, in, n * 4);
        gsort_request rq;
        gsort_request_init(&rq);
        rq.keys = k;
        rq.n = n;
        rq.values_kind = GSORT_VALUES_IDX32;
        rq.values = idx;
        rq.flags = GSORT_STABLE | GSORT_DESCENDING | (m == 2 ? GSORT_INLINE : 0);
        int rc = gsort_run_segments(cl, &rq, off, S, &res, &err);
        int ok = rc == 0;
        for (size_t g = 0; ok && g < S; g++) {
            size_t lo = (size_t)off[g], len = (size_t)(off[g + 1] - off[g]);
            for (size_t i = 0; ok && i < len; i++) {
                uint32_t j = idx[lo + i];
                ok = j < len && in[lo + j] == k[lo + i] &&
                     (i == 0 || k[lo + i - 1] > k[lo + i] ||
                      (k[lo + i - 1] == k[lo + i] && idx[lo + i - 1] < j));
            }
        }
        tap_ok(ok && (m == 0) == !strcmp(res.plan, "local") && (m != 1 || res.zero_copy) &&
                   (m != 2 || !res.zero_copy),
               "gsort_run_segments, %d segments of 0-82 u32 keys, argsort32 descending stable, "
               "%s: each sorted, indices within it (rc %d %s, plan %s)", S, how[m], rc,
               rc ? err.message : "", res.plan);
        /* f64 keys carrying u64 values: the value is the key's input place */
        for (size_t i = 0; i < n; i++) {
            fk[i] = (double)in[i] - 20.5;
            fv[i] = i;
        }
        rq.dtype = GSORT_F64;
        rq.keys = fk;
        rq.values_kind = GSORT_VALUES_U64;
        rq.values = fv;
        rq.flags = m == 2 ? GSORT_INLINE : 0;
        rc = gsort_run_segments(cl, &rq, off, S, &res, &err);
        ok = rc == 0;
        for (size_t g = 0; ok && g < S; g++)
            for (uint64_t i = off[g]; ok && i < off[g + 1]; i++)
                ok = fv[i] >= off[g] && fv[i] < off[g + 1] &&
                     fk[i] == (double)in[fv[i]] - 20.5 && (i == off[g] || fk[i - 1] <= fk[i]);
        tap_ok(ok, "gsort_run_segments, f64 keys with u64 values, %s: values stay with their "
               "keys inside their segment (rc %d %s)", how[m], rc, rc ? err.message : "");
        if (m == 0) {
            setenv("GSORT_NO_LOCAL", "1", 1);
            gsort_close(cl);
        }
    }
    /* bad offsets: refused, nothing written */
    uint32_t small[6] = { 5, 4, 3, 2, 1, 0 };
    gsort_request rq;
    gsort_request_init(&rq);
    rq.keys = small;
    rq.n = 6;
    static const uint64_t down[] = { 0, 4, 3, 6 }, from2[] = { 2, 6 }, short_[] = { 0, 3, 5 },
                          good[] = { 0, 2, 6 };
    int rc = gsort_run_segments(c, &rq, down, 3, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "offsets decrease") && small[0] == 5,
           "decreasing offsets refused, keys untouched: %s", err.message);
    rc = gsort_run_segments(c, &rq, from2, 1, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "start at 0") && small[0] == 5,
           "offsets from 2 refused: %s", err.message);
    rc = gsort_run_segments(c, &rq, short_, 2, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "must be n = 6") && small[0] == 5,
           "offsets ending before n refused: %s", err.message);
    rc = gsort_run_segments(c, &rq, good, 0, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "no segments"),
           "no segments refused: %s", err.message);
    rc = gsort_run_segments(c, &rq, NULL, 2, &res, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "NULL"), "NULL offsets refused: %s",
           err.message);
    rc = gsort_run_segments(c, &rq, good, 2, &res, &err);
    tap_ok(rc == 0 && small[0] == 4 && small[1] == 5 && small[2] == 0 && small[5] == 3,
           "the same keys with good offsets: [4 5 | 0 1 2 3] through the daemon (rc %d %s)",
           rc, rc ? err.message : res.plan);
    gsort_close(c);
    free(in);
    free(k);
    free(idx);
    free(fk);
    free(fv);
}

/* Bit ranges (gsort_run_bits): every integer key type, payload and order,
 * ranges of 3 bits inside a byte, across bytes and at the top, sorted in
 * this process and by the daemon (staged, inline, in a gsort_alloc block),
 * against a reference written here: each key's field of its order code
 * (the sign bit flipped for signed keys, every bit inverted descending),
 * then a sort by (field, input place). The refusals come before anything
 * is sent or written. */
static const gsort_dtype bt_types[] = { GSORT_U32, GSORT_I32, GSORT_U64, GSORT_I64 };
static const char *const bt_names[] = { "u32", "i32", "u64", "i64" };
static const gsort_values bt_pls[] = { GSORT_VALUES_NONE, GSORT_VALUES_U32, GSORT_VALUES_U64,
                                       GSORT_VALUES_IDX32, GSORT_VALUES_IDX64 };
static const char *const bt_route_names[] = { "local", "daemon, staged", "daemon, GSORT_INLINE",
                                              "daemon, gsort_alloc block" };

static uint64_t bt_key(gsort_dtype t, const void *k, size_t i)
{
    return t == GSORT_U32 || t == GSORT_I32 ? ((const uint32_t *)k)[i]
                                            : ((const uint64_t *)k)[i];
}

/* bits [lo, hi) of key i's order code */
static uint64_t bt_field(gsort_dtype t, const void *k, size_t i, int desc, unsigned lo,
                         unsigned hi)
{
    unsigned kb = t == GSORT_U32 || t == GSORT_I32 ? 32 : 64;
    uint64_t all = kb == 64 ? UINT64_MAX : UINT32_MAX, v = bt_key(t, k, i);
    if (t == GSORT_I32 || t == GSORT_I64)
        v ^= (uint64_t)1 << (kb - 1);
    if (desc)
        v = ~v & all;
    v >>= lo;
    return hi - lo >= 64 ? v : v & (((uint64_t)1 << (hi - lo)) - 1);
}

static const uint64_t *bt_rfield;

static int bt_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    if (bt_rfield[a] != bt_rfield[b])
        return bt_rfield[a] < bt_rfield[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* ref[i]: the input place of the i-th key in the range's stable order */
static void bt_reference(gsort_dtype t, const void *keys, size_t n, int desc, unsigned lo,
                         unsigned hi, size_t *ref, uint64_t *field)
{
    for (size_t i = 0; i < n; i++) {
        field[i] = bt_field(t, keys, i, desc, lo, hi);
        ref[i] = i;
    }
    bt_rfield = field;
    qsort(ref, n, sizeof *ref, bt_cmp);
}

static uint64_t bt_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return *s ^ (*s >> 29);
}

/* One call through `route` (0 local, 1 staged, 2 inline, 3 a gsort_alloc
 * block) checked against the reference; 1 when right, else why. */
static int bt_case(gsort_conn *c, int route, gsort_dtype t, gsort_values pl, int desc,
                   unsigned lo, unsigned hi, size_t n, uint64_t seed, char *why, size_t wl)
{
    size_t ks = t == GSORT_U32 || t == GSORT_I32 ? 4 : 8;
    size_t vs = pl == GSORT_VALUES_U32 || pl == GSORT_VALUES_IDX32 ? 4 :
                pl == GSORT_VALUES_NONE ? 0 : 8;
    size_t voff = (n * ks + 63) & ~(size_t)63;
    char *in = malloc(n * ks + 8), *blk = NULL, *k, *v;
    size_t *ref = malloc(n * sizeof *ref + 8);
    uint64_t *field = malloc(n * 8 + 8);
    if (route == 3) {
        blk = gsort_alloc(voff + n * vs + 8, NULL);
        k = blk;
        v = blk ? blk + voff : NULL;
    } else {
        k = malloc(n * ks + 8);
        v = malloc(n * vs + 8);
    }
    if (!in || !ref || !field || !k || !v)
        tap_bail("out of memory");
    /* keys of every sort: random, a few values (ties in every range), small
     * of both signs */
    for (size_t i = 0; i < n; i++) {
        uint64_t r = bt_rand(&seed);
        uint64_t x = i % 3 == 0 ? r : i % 3 == 1 ? (r >> 20) % 7 * 0x0101010101010101u
                                                  : (uint64_t)(int64_t)(int)((r >> 33) % 41) - 20;
        if (ks == 4)
            ((uint32_t *)(void *)in)[i] = (uint32_t)x;
        else
            ((uint64_t *)(void *)in)[i] = x;
    }
    memcpy(k, in, n * ks);
    for (size_t i = 0; i < n; i++) {
        if (pl == GSORT_VALUES_U32)
            ((uint32_t *)(void *)v)[i] = (uint32_t)(i * 7 + 1);
        else if (pl == GSORT_VALUES_U64)
            ((uint64_t *)(void *)v)[i] = i * 0x100000001u + 3;
    }
    bt_reference(t, in, n, desc, lo, hi, ref, field);
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = t;
    rq.n = n;
    rq.keys = k;
    rq.values_kind = pl;
    rq.values = vs ? v : NULL;
    rq.flags = (desc ? GSORT_DESCENDING : 0) | (route == 2 ? GSORT_INLINE : 0);
    gsort_result res;
    gsort_error err;
    int rc = gsort_run_bits(c, &rq, lo, hi, &res, &err);
    int ok = rc == 0;
    if (!ok)
        snprintf(why, wl, "rc %d: %.300s", rc, err.message);
    else if ((route == 0) != !strcmp(res.plan, "local") || (route == 2 && res.zero_copy) ||
             (route == 1 && !res.zero_copy)) {
        ok = 0;
        snprintf(why, wl, "route: plan %s, zero_copy %d", res.plan, res.zero_copy);
    }
    for (size_t i = 0; ok && i < n; i++) {
        size_t j = ref[i];
        uint64_t got = bt_key(t, k, i), want = bt_key(t, in, j);
        uint64_t gv = 0, wv = 0;
        if (pl == GSORT_VALUES_U32)
            gv = ((uint32_t *)(void *)v)[i], wv = (uint32_t)(j * 7 + 1);
        else if (pl == GSORT_VALUES_U64)
            gv = ((uint64_t *)(void *)v)[i], wv = j * 0x100000001u + 3;
        else if (pl == GSORT_VALUES_IDX32)
            gv = ((uint32_t *)(void *)v)[i], wv = j;
        else if (pl == GSORT_VALUES_IDX64)
            gv = ((uint64_t *)(void *)v)[i], wv = j;
        if (got != want || gv != wv) {
            ok = 0;
            snprintf(why, wl, "place %zu: key %#" PRIx64 " value %" PRIu64 ", want key %#"
                     PRIx64 " value %" PRIu64 " (input place %zu, field %#" PRIx64 ")", i,
                     got, gv, want, wv, j, field[j]);
        }
    }
    free(in);
    free(ref);
    free(field);
    if (route == 3) {
        gsort_free(blk);
    } else {
        free(k);
        free(v);
    }
    return ok;
}

static void test_bits(const dmn *d)
{
    /* the routes: local needs a connection made without GSORT_NO_LOCAL */
    unsetenv("GSORT_NO_LOCAL");
    gsort_conn *cl = conn_or_bail(d->sock);
    setenv("GSORT_NO_LOCAL", "1", 1);
    gsort_conn *c = conn_or_bail(d->sock);
    uint64_t seed = 39;
    for (int route = 0; route < 4; route++) {
        for (size_t ti = 0; ti < 4; ti++) {
            gsort_dtype t = bt_types[ti];
            unsigned kb = t == GSORT_U32 || t == GSORT_I32 ? 32 : 64;
            /* 3 bits inside a byte, across bytes, the top byte, the sign bit
             * alone, the low half, all but the lowest bit */
            const unsigned ranges[][2] = { { 2, 5 }, { 5, 13 }, { kb - 8, kb }, { kb - 1, kb },
                                           { 0, kb / 2 }, { 1, kb } };
            int bad = 0, runs = 0;
            char first[600] = "";
            for (size_t pi = 0; pi < 5; pi++)
                for (int desc = 0; desc < 2; desc++)
                    for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
                        char why[500] = "";
                        /* local: under 256 keys, always sorted here */
                        size_t n = route == 0 ? 200 : 1000 + ri * 37;
                        runs++;
                        if (!bt_case(route == 0 ? cl : c, route, t, bt_pls[pi], desc,
                                     ranges[ri][0], ranges[ri][1], n, seed++, why,
                                     sizeof why) && !bad++)
                            snprintf(first, sizeof first, "%s values %s, [%u, %u): %s",
                                     desc ? "descending" : "ascending",
                                     gs_payload_name((gs_payload)bt_pls[pi]), ranges[ri][0],
                                     ranges[ri][1], why);
                    }
            tap_ok(!bad, "gsort_run_bits %s, %s: %d calls (every payload, both orders, "
                   "ranges of 3 bits in a byte, across bytes, the top byte, the sign bit, "
                   "the low half, all but bit 0) as the reference orders them, ties in input "
                   "order%s%s", bt_names[ti], bt_route_names[route], runs, bad ? ": " : "",
                   first);
        }
    }
    /* the daemon's threaded passes: more keys than one thread takes */
    char why[500] = "";
    int ok = bt_case(c, 1, GSORT_I64, GSORT_VALUES_U64, 1, 20, 45, 300000, 5, why, sizeof why);
    tap_ok(ok, "gsort_run_bits i64 [20, 45) descending with u64 values, 300000 keys through "
           "the daemon%s%s", ok ? "" : ": ", why);

    /* the whole key is no range: the plain sort */
    uint32_t k3[6] = { 5, 0x80000000u, 3, 1, 4, 2 };
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = GSORT_I32;
    rq.keys = k3;
    rq.n = 6;
    gsort_result res;
    gsort_error err;
    int rc = gsort_run_bits(c, &rq, 0, 32, &res, &err);
    tap_ok(rc == 0 && k3[0] == 0x80000000u && k3[1] == 1 && k3[5] == 5,
           "gsort_run_bits [0, 32) of i32 keys: the plain sort, INT32_MIN first (rc %d %s)",
           rc, rc ? err.message : "");

    /* refusals: before anything is sent (a NULL connection would not do) or written */
    float f[4] = { 3, 1, 2, 0 };
    uint16_t h[4] = { 3, 1, 2, 0 };
    uint32_t u[4] = { 3, 1, 2, 0 };
    struct {
        gsort_dtype t;
        void *keys;
        unsigned lo, hi;
        int code;
        const char *says;
    } bad[] = {
        { GSORT_F32, f, 0, 8, GSORT_EUNSUPPORTED, "f32" },
        { GSORT_F64, f, 0, 8, GSORT_EUNSUPPORTED, "f64" },
        { GSORT_U16, h, 0, 8, GSORT_EUNSUPPORTED, "u16" },
        { GSORT_BF16, h, 0, 8, GSORT_EUNSUPPORTED, "bf16" },
        { GSORT_U32, u, 8, 8, GSORT_EINVAL, "[8, 8)" },
        { GSORT_U32, u, 9, 8, GSORT_EINVAL, "[9, 8)" },
        { GSORT_U32, u, 0, 33, GSORT_EINVAL, "32 bits" },
        { GSORT_I64, u, 3, 65, GSORT_EINVAL, "64 bits" },
        { (gsort_dtype)12, u, 0, 8, GSORT_EINVAL, "unknown dtype" },
    };
    int all = 1;
    char said[600] = "";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gsort_request_init(&rq);
        rq.dtype = bad[i].t;
        rq.keys = bad[i].keys;
        rq.n = 2;   /* 8 bytes of every type fit in the arrays */
        rc = gsort_run_bits(c, &rq, bad[i].lo, bad[i].hi, &res, &err);
        int ok1 = rc == bad[i].code && strstr(err.message, bad[i].says) && err.code == rc;
        if (!ok1 && all)
            snprintf(said, sizeof said, "case %zu: rc %d: %.400s", i, rc, err.message);
        all &= ok1;
    }
    all &= f[0] == 3 && h[0] == 3 && u[0] == 3;
    rc = gsort_run_bits(NULL, &rq, 0, 8, &res, &err);
    all &= rc == GSORT_EINVAL;
    tap_ok(all, "gsort_run_bits refuses f32, f64, u16 and bf16 keys (GSORT_EUNSUPPORTED), "
           "empty, reversed and too wide ranges (GSORT_EINVAL), an unknown dtype and no "
           "connection; the keys untouched%s%s", all ? "" : ": ", said);
    /* and the connection still serves */
    uint64_t q[3] = { 0x300, 0x101, 0x200 };
    gsort_request_init(&rq);
    rq.dtype = GSORT_U64;
    rq.keys = q;
    rq.n = 3;
    rc = gsort_run_bits(c, &rq, 8, 16, &res, &err);
    tap_ok(rc == 0 && q[0] == 0x101 && q[1] == 0x200 && q[2] == 0x300 &&
           strcmp(res.plan, "local") != 0, "after them, the connection sorts u64 keys by bits "
           "[8, 16) through the daemon (rc %d %s, plan %s)", rc, rc ? err.message : "", res.plan);
    gsort_close(cl);
    gsort_close(c);
}

/* Top-k (issue 38): gsort_topk of rows in the process, through the
 * daemon staged in shared memory and inline: each row's k exactly as a
 * stable sort lists them (a reference by insertion here), indices within
 * the row, the caller's keys untouched; GSORT_UNSORTED the same set; bad
 * calls refused. */
static int topk_row_ok(const uint32_t *row, size_t len, size_t k, int desc,
                       const uint32_t *got, const uint32_t *gidx, int unsorted)
{
    uint32_t key[64], pos[64];
    size_t m = 0;
    for (size_t i = 0; i < len && len <= 64; i++) {       /* stable insertion */
        size_t j = m++;
        while (j > 0 && (desc ? key[j - 1] < row[i] : key[j - 1] > row[i])) {
            key[j] = key[j - 1];
            pos[j] = pos[j - 1];
            j--;
        }
        key[j] = row[i];
        pos[j] = (uint32_t)i;
    }
    if (!unsorted) {
        for (size_t i = 0; i < k; i++)
            if (got[i] != key[i] || gidx[i] != pos[i])
                return 0;
        return 1;
    }
    for (size_t i = 0; i < k; i++) {      /* the same (key, position) pairs */
        int found = 0;
        for (size_t j = 0; j < k && !found; j++)
            found = got[j] == key[i] && gidx[j] == pos[i];
        if (!found)
            return 0;
    }
    return 1;
}

static void test_topk(const dmn *d)
{
    enum { R = 300, L = 45, K = 4 };
    static uint32_t in[R * L], k[R * L], ok_keys[R * K], ok_idx[R * K];
    uint64_t s = 777;
    for (size_t i = 0; i < R * L; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        in[i] = (uint32_t)(s >> 40) % 50;       /* many ties */
    }
    static const char *const how[] = { "local allowed", "GSORT_NO_LOCAL (shared memory)",
                                       "GSORT_NO_LOCAL | GSORT_INLINE" };
    gsort_result res;
    gsort_error err;
    for (int t = 0; t < 3; t++) {
        if (t == 0)
            unsetenv("GSORT_NO_LOCAL");
        gsort_conn *c = conn_or_bail(d->sock);
        if (t == 0)
            setenv("GSORT_NO_LOCAL", "1", 1);
        for (int v = 0; v < 3; v++) {   /* ascending, descending, descending unsorted */
            memcpy(k, in, sizeof k);
            memset(ok_keys, 0xee, sizeof ok_keys);
            gsort_request rq;
            gsort_request_init(&rq);
            rq.keys = k;
            rq.n = R * L;
            rq.values_kind = GSORT_VALUES_IDX32;
            rq.flags = (v ? GSORT_DESCENDING : 0) | (v == 2 ? GSORT_UNSORTED : 0) |
                       (t == 2 ? GSORT_INLINE : 0);
            int rc = gsort_topk(c, &rq, R, K, ok_keys, ok_idx, &res, &err);
            int ok = rc == 0 && !memcmp(k, in, sizeof k);
            for (size_t r = 0; ok && r < R; r++)
                ok = topk_row_ok(in + r * L, L, K, v > 0, ok_keys + r * K, ok_idx + r * K,
                                 v == 2);
            tap_ok(ok && (t == 0 ? !strcmp(res.plan, "local")
                                 : strcmp(res.plan, "local") && !strcmp(res.algorithm, "host")),
                   "gsort_topk, %d %s of %d rows of %d u32 keys%s, %s: each row's as a "
                   "stable sort lists them, keys untouched (rc %d %s, plan %s)", K,
                   v ? "largest" : "smallest", R, L, v == 2 ? " (unsorted)" : "", how[t], rc,
                   rc ? err.message : res.algorithm, res.plan);
        }
        gsort_close(c);
    }
    gsort_conn *c = conn_or_bail(d->sock);
    gsort_request rq;
    gsort_request_init(&rq);
    rq.keys = k;
    rq.n = R * L;
    int rc = gsort_topk(c, &rq, R, L + 1, ok_keys, NULL, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "k = 46 exceeds the 45 keys of a row"),
           "k past a row refused: %s", err.message);
    rc = gsort_topk(c, &rq, R, 2, NULL, NULL, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "out_keys is NULL"),
           "no out_keys refused: %s", err.message);
    rq.values_kind = GSORT_VALUES_U64;
    rc = gsort_topk(c, &rq, R, 2, ok_keys, NULL, NULL, &err);
    tap_ok(rc == GSORT_EINVAL, "u64 values with no values array refused: %s", err.message);
    rq.values_kind = GSORT_VALUES_NONE;
    rq.flags = GSORT_UNSORTED;
    rc = gsort_run(c, &rq, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "GSORT_UNSORTED is for gsort_topk"),
           "GSORT_UNSORTED on a sort refused: %s", err.message);
    rq.flags = 0;
    rc = gsort_topk(c, &rq, R, 0, NULL, NULL, &res, &err);
    tap_ok(rc == 0, "top 0: nothing to answer (rc %d)", rc);
    gsort_close(c);
}

/* ---- lexsort ---- */

static const uint16_t *lx_a;    /* the reference's keys: u16 desc, f32, i64 desc, bool */
static const float *lx_b;
static const int64_t *lx_c;
static const uint8_t *lx_d;

static int lx_fcmp(float x, float y)
{
    int nx = x != x, ny = y != y;
    if (nx || ny)
        return nx - ny;             /* NaNs one key, after everything */
    return (x > y) - (x < y);       /* -0.0 == +0.0 */
}

static int lx_cmp(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int c = (lx_a[b] > lx_a[a]) - (lx_a[b] < lx_a[a]);          /* descending */
    if (!c)
        c = lx_fcmp(lx_b[a], lx_b[b]);
    if (!c)
        c = (lx_c[b] > lx_c[a]) - (lx_c[b] < lx_c[a]);          /* descending */
    if (!c)
        c = (lx_d[a] != 0) - (lx_d[b] != 0);
    return c ? c : (a > b) - (a < b);
}

static void test_lexsort(const dmn *d)
{
    enum { N = 20000 };
    static uint16_t a[N];
    static float b[N];
    static int64_t c3[N];
    static uint8_t d4[N];
    static uint32_t ref[N], idx32[N];
    static uint64_t idx64[N];
    uint64_t s = 4242;
    for (size_t i = 0; i < N; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        a[i] = (uint16_t)((s >> 33) % 5 * 1000);
        static const float fv[] = { 0.0f, -0.0f, 1.0f, -2.0f, NAN, -NAN, INFINITY };
        b[i] = fv[(s >> 20) % 7];
        c3[i] = (int64_t)((s >> 45) % 3) - 1;
        d4[i] = (uint8_t)((s >> 13) % 3);       /* 2: true too */
        ref[i] = (uint32_t)i;
    }
    lx_a = a; lx_b = b; lx_c = c3; lx_d = d4;
    qsort(ref, N, sizeof ref[0], lx_cmp);
    gsort_lexkey keys[4] = { { GSORT_LEX_U16, a, 1 }, { GSORT_LEX_F32, b, 0 },
                             { GSORT_LEX_I64, c3, 1 }, { GSORT_LEX_BOOL, d4, 0 } };
    static const char *const how[] = { "local allowed", "GSORT_NO_LOCAL (shared memory)",
                                       "GSORT_NO_LOCAL | GSORT_INLINE" };
    gsort_result res;
    gsort_error err;
    for (int t = 0; t < 3; t++) {
        if (t == 0)
            unsetenv("GSORT_NO_LOCAL");
        gsort_conn *c = conn_or_bail(d->sock);
        if (t == 0)
            setenv("GSORT_NO_LOCAL", "1", 1);
        for (int w = 0; w < 2; w++) {
            memset(idx32, 0xee, sizeof idx32);
            memset(idx64, 0xee, sizeof idx64);
            unsigned fl = t == 2 ? GSORT_INLINE : 0;
            int rc = gsort_lexsort(c, keys, 4, N, w ? (void *)idx64 : (void *)idx32,
                                   w ? GSORT_VALUES_IDX64 : GSORT_VALUES_IDX32, fl, &res, &err);
            int ok = rc == 0;
            for (size_t i = 0; ok && i < N; i++)
                ok = (w ? idx64[i] : idx32[i]) == ref[i];
            tap_ok(ok && (t == 0 || strcmp(res.plan, "local")), "gsort_lexsort of %d rows by "
                   "u16 (desc), f32 (NaNs, -0.0), i64 (desc), bool: three words chained, %s, "
                   "idx%d: the reference order (rc %d %s, plan %s)", N, how[t], w ? 64 : 32,
                   rc, rc ? err.message : res.algorithm, res.plan);
        }
        gsort_close(c);
    }
    gsort_conn *c = conn_or_bail(d->sock);
    /* two u32 keys, one word */
    static uint32_t p[N], q[N];
    for (size_t i = 0; i < N; i++) {
        p[i] = (uint32_t)(i * 7919 % 13);
        q[i] = (uint32_t)(N - i) % 5;
    }
    gsort_lexkey two[2] = { { GSORT_LEX_U32, p, 0 }, { GSORT_LEX_U32, q, 0 } };
    int rc = gsort_lexsort(c, two, 2, N, idx64, GSORT_VALUES_IDX64, 0, &res, &err);
    int ok = rc == 0;
    for (size_t i = 1; ok && i < N; i++) {
        uint64_t x = idx64[i - 1], y = idx64[i];
        ok = p[x] < p[y] || (p[x] == p[y] && (q[x] < q[y] || (q[x] == q[y] && x < y)));
    }
    tap_ok(ok, "gsort_lexsort by two u32 keys: ordered by the first, then the second, then "
           "the row (rc %d, %s)", rc, rc ? err.message : res.algorithm);
    rc = gsort_lexsort(c, two, 0, N, idx64, GSORT_VALUES_IDX64, 0, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "0 keys"), "no keys refused: %s",
           err.message);
    gsort_lexkey nine[9];
    for (int j = 0; j < 9; j++)
        nine[j] = two[0];
    rc = gsort_lexsort(c, nine, 9, N, idx64, GSORT_VALUES_IDX64, 0, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "9 keys"), "nine keys refused: %s",
           err.message);
    rc = gsort_lexsort(c, two, 2, N, idx64, GSORT_VALUES_U64, 0, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "idx_kind"), "values, not indices, "
           "refused: %s", err.message);
    rc = gsort_lexsort(c, two, 2, N, idx64, GSORT_VALUES_IDX64, GSORT_DESCENDING, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "flags"), "GSORT_DESCENDING refused "
           "(each key has its order): %s", err.message);
    gsort_lexkey bad = { (gsort_lex_type)12, p, 0 };
    rc = gsort_lexsort(c, &bad, 1, N, idx64, GSORT_VALUES_IDX64, 0, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "unknown type 12"), "an unknown key "
           "type refused: %s", err.message);
    gsort_lexkey nul = { GSORT_LEX_U8, NULL, 0 };
    rc = gsort_lexsort(c, &nul, 1, N, idx64, GSORT_VALUES_IDX64, 0, NULL, &err);
    tap_ok(rc == GSORT_EINVAL && strstr(err.message, "key 0 is NULL"), "a NULL key array "
           "refused: %s", err.message);
    rc = gsort_lexsort(c, &nul, 1, 0, NULL, GSORT_VALUES_IDX32, 0, &res, &err);
    tap_ok(rc == 0, "zero rows: nothing to do (rc %d)", rc);
    gsort_close(c);
}

/* ---- 8- and 16-bit keys (GSORT_U8 .. GSORT_BF16) ----
 * Every call on every narrow type, both orders, stable or not, sorted in
 * this process (n < 256: always local) and by the daemon (GSORT_NO_LOCAL:
 * a gsort_alloc block, a staged copy, GSORT_INLINE), checked against a
 * reference written here from the formats: integers by value; f16 (1 sign,
 * 5 exponent, 10 mantissa bits) and bf16 (1, 8, 7) decoded from their bits,
 * -0.0 before +0.0, every NaN one key after +inf (descending: first) in
 * input order with its exact bits; and the calls they are refused. */


static unsigned nw_bytes(gsort_dtype t)
{
    return t == GSORT_U8 || t == GSORT_I8 ? 1 : 2;
}

static uint32_t nw_get(gsort_dtype t, const void *k, size_t i)
{
    if (nw_bytes(t) == 1)
        return ((const uint8_t *)k)[i];
    uint16_t v;
    memcpy(&v, (const char *)k + 2 * i, 2);
    return v;
}

/* The value of key bits h of type t; *nan set for a NaN. */
static double nw_value(gsort_dtype t, uint32_t h, int *nan)
{
    *nan = 0;
    switch (t) {
    case GSORT_U8: return (uint8_t)h;
    case GSORT_I8: return (int8_t)(uint8_t)h;
    case GSORT_U16: return (uint16_t)h;
    case GSORT_I16: return (int16_t)(uint16_t)h;
    default: break;
    }
    int eb = t == GSORT_F16 ? 5 : 8, mb = t == GSORT_F16 ? 10 : 7;
    int bias = (1 << (eb - 1)) - 1, emax = (1 << eb) - 1;
    int ex = (int)(h >> mb & (uint32_t)emax);
    uint32_t m = h & ((1u << mb) - 1);
    double v;
    if (ex == emax) {
        if (m) {
            *nan = 1;
            return 0;
        }
        v = INFINITY;
    } else if (ex == 0) {
        v = ldexp((double)m, 1 - bias - mb);                    /* subnormal */
    } else {
        v = ldexp((double)(m | 1u << mb), ex - bias - mb);
    }
    return h & 0x8000u ? -v : v;
}

/* The reference: indices stably ordered by key (qsort's context). */
static gsort_dtype nw_rt;
static const void *nw_rkeys;
static int nw_rdesc;

static int nw_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int na, nb;
    double x = nw_value(nw_rt, nw_get(nw_rt, nw_rkeys, a), &na);
    double y = nw_value(nw_rt, nw_get(nw_rt, nw_rkeys, b), &nb);
    int c;
    if (na || nb)
        c = na - nb;                            /* NaNs one key, after +inf */
    else if (x != y)
        c = x < y ? -1 : 1;
    else
        c = (signbit(y) != 0) - (signbit(x) != 0);      /* -0.0 before +0.0 */
    if (nw_rdesc)
        c = -c;
    return c ? c : (a > b) - (a < b);           /* equal keys: input order */
}

static void nw_reference(gsort_dtype t, const void *keys, size_t n, int desc, size_t *ref)
{
    for (size_t i = 0; i < n; i++)
        ref[i] = i;
    nw_rt = t;
    nw_rkeys = keys;
    nw_rdesc = desc;
    qsort(ref, n, sizeof *ref, nw_cmp);
}

static uint64_t nw_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return *s >> 29;
}

/* n keys of type t: dist 0, random bits with the type's special values
 * (zeros of both signs, infinities, NaNs of several patterns, subnormals,
 * the extremes); dist 1, few distinct keys (stability). */
static void nw_fill(gsort_dtype t, void *k, size_t n, int dist, uint64_t seed)
{
    static const uint16_t f16s[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe00,
                                     0x7fff, 0xfd55, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400,
                                     0x3c00, 0xbc00, 0x7bff, 0xfbff };
    static const uint16_t bf16s[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc0,
                                      0x7fff, 0xffa5, 0x0001, 0x8001, 0x007f, 0x807f, 0x0080,
                                      0x3f80, 0xbf80, 0x7f7f, 0xff7f };
    static const uint16_t i16s[] = { 0x0000, 0x0001, 0xffff, 0x8000, 0x7fff, 0x00ff, 0xff00 };
    static const uint16_t few_f16[] = { 0x3c00, 0xbc00, 0x0000, 0x8000, 0x7e00, 0x7d00 };
    static const uint16_t few_bf16[] = { 0x3f80, 0xbf80, 0x0000, 0x8000, 0x7fc0, 0xffc1 };
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = nw_rand(&s);
        uint32_t v;
        if (dist == 1)
            v = t == GSORT_F16 ? few_f16[r % 6] : t == GSORT_BF16 ? few_bf16[r % 6]
                                                               : i16s[r % 5];
        else if (r % 3 == 0)
            v = t == GSORT_F16 ? f16s[(r >> 8) % 18] : t == GSORT_BF16 ? bf16s[(r >> 8) % 18]
                                                                        : i16s[(r >> 8) % 7];
        else
            v = (uint32_t)(r >> 8);
        if (nw_bytes(t) == 1)
            ((uint8_t *)k)[i] = (uint8_t)v;
        else {
            uint16_t w = (uint16_t)v;
            memcpy((char *)k + 2 * i, &w, 2);
        }
    }
}

static const char *const nw_route_names[] = { "local", "daemon, gsort_alloc block",
                                              "daemon, staged", "daemon, GSORT_INLINE",
                                              "daemon, radix on device 0" };

/* api_call's call as a gsort_request with radix forced on device 0 */
static int nw_radix_call(gsort_conn *c, int api, gsort_dtype t, void *keys, void *vals,
                         size_t n, unsigned flags, gsort_result *res, gsort_error *err)
{
    static const gsort_values kinds[A_COUNT] = {
        [A_SORT] = GSORT_VALUES_NONE, [A_BYKEY32] = GSORT_VALUES_U32,
        [A_BYKEY64] = GSORT_VALUES_U64, [A_ARG32] = GSORT_VALUES_IDX32,
        [A_ARG64] = GSORT_VALUES_IDX64 };
    /* an argsort call leaves the caller's keys as they were: a copy sorts */
    const int arg = api == A_ARG32 || api == A_ARG64;
    const size_t kb = n * (t == GSORT_U8 || t == GSORT_I8 ? 1 : 2);
    void *copy = arg ? malloc(kb + 1) : NULL;
    if (arg && !copy)
        tap_bail("out of memory");
    if (arg)
        memcpy(copy, keys, kb);
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = t;
    rq.n = n;
    rq.keys = arg ? copy : keys;
    rq.values_kind = kinds[api];
    rq.values = api == A_SORT ? NULL : vals;
    rq.flags = flags;
    rq.algorithm = "radix";
    rq.device = 0;
    int rc = gsort_run(c, &rq, res, err);
    free(copy);
    return rc;
}

/* The value a sort_by_key case gives input element i. */
static uint64_t nw_val_of(size_t i, int v8)
{
    return v8 ? (uint64_t)i << 32 | (uint64_t)(i * 3 + 7) : (uint64_t)(uint32_t)(i * 3 + 7);
}

/* One call (api: A_*) on n keys of type t through route; 1 when right,
 * else 0 with the reason in why. */
static int nw_case(gsort_conn *c, int api, int route, gsort_dtype t, int desc, int stable,
                   size_t n, int dist, uint64_t seed, char *why, size_t wl)
{
    const unsigned w = nw_bytes(t);
    const size_t vs = api == A_SORT ? 0 : api == A_BYKEY32 || api == A_ARG32 ? 4 : 8;
    const size_t kb = n * w, voff = (kb + 7) & ~(size_t)7;
    int ok = 0, v8 = api == A_BYKEY64;
    unsigned char *in = malloc(kb + 1), *blk = NULL, *heap = NULL;
    size_t *ref = malloc((n + 1) * sizeof *ref);
    char *used = calloc(n + 1, 1);
    if (!in || !ref || !used)
        tap_bail("out of memory");
    nw_fill(t, in, n, dist, seed);
    nw_reference(t, in, n, desc, ref);
    if (route == NR_BLOCK) {
        if (!(blk = gsort_alloc(voff + n * vs + 8, NULL))) {
            snprintf(why, wl, "gsort_alloc failed");
            goto out;
        }
    } else if (!(heap = malloc(voff + n * vs + 8))) {
        tap_bail("out of memory");
    }
    unsigned char *base = blk ? blk : heap, *keys = base, *vals = base + voff;
    memcpy(keys, in, kb);
    for (size_t i = 0; i < n && (api == A_BYKEY32 || api == A_BYKEY64); i++) {
        uint64_t v = nw_val_of(i, v8);
        if (v8)
            memcpy(vals + 8 * i, &v, 8);
        else {
            uint32_t x = (uint32_t)v;
            memcpy(vals + 4 * i, &x, 4);
        }
    }
    unsigned flags = (desc ? GSORT_DESCENDING : 0) | (stable ? GSORT_STABLE : 0) |
                     (route != NR_LOCAL ? GSORT_NO_LOCAL : 0) |
                     (route == NR_INLINE ? GSORT_INLINE : 0);
    gsort_result res;
    gsort_error err;
    int rc = route == NR_RADIX ? nw_radix_call(c, api, t, keys, vals, n, flags, &res, &err)
                               : api_call(c, api, t, keys, vals, n, flags, &res, &err);
    if (rc != 0) {
        snprintf(why, wl, "%s: %.400s", gsort_strerror(rc), err.message);
        goto out;
    }
    if (route == NR_RADIX && n && (res.device != 0 || strcmp(res.algorithm, "radix"))) {
        snprintf(why, wl, "sorted by %s on device %d", res.algorithm, res.device);
        goto out;
    }
    int local = !strcmp(res.plan, "local");
    if (route == NR_LOCAL ? n < 256 && !local : local) {
        snprintf(why, wl, "plan '%s' (%s)", res.plan, route == NR_LOCAL ? "n < 256 is sorted "
                 "here" : "GSORT_NO_LOCAL asks the daemon");
        goto out;
    }
    if (route != NR_LOCAL && res.zero_copy != (n > 0 && route != NR_INLINE)) {
        snprintf(why, wl, "zero_copy %d", res.zero_copy);
        goto out;
    }
    int arg = api == A_ARG32 || api == A_ARG64;
    if (arg && memcmp(keys, in, kb) != 0) {
        snprintf(why, wl, "argsort changed the caller's keys");
        goto out;
    }
    for (size_t j = 0; j < n; j++) {
        /* the key at j: the sorted keys, or the input key the index names */
        uint64_t ix = SIZE_MAX;
        if (vs == 4) {
            uint32_t x;
            memcpy(&x, vals + 4 * j, 4);
            ix = arg ? x : (x - 7) / 3;
            if (!arg && x != (uint32_t)nw_val_of(ix, 0))
                ix = SIZE_MAX;
        } else if (vs == 8) {
            uint64_t x;
            memcpy(&x, vals + 8 * j, 8);
            ix = arg ? x : x >> 32;
            if (!arg && (ix >= n || x != nw_val_of(ix, 1)))
                ix = SIZE_MAX;
        }
        if (vs && (ix >= n || used[ix]++)) {
            snprintf(why, wl, "value %zu names no input element, or one named twice", j);
            goto out;
        }
        uint32_t got = arg ? nw_get(t, in, ix) : nw_get(t, keys, j);
        uint32_t want = nw_get(t, in, ref[j]);
        if (got != want) {
            snprintf(why, wl, "key %zu is 0x%x, the reference's 0x%x (input %zu)", j, got,
                     want, ref[j]);
            goto out;
        }
        if (vs && !arg && nw_get(t, in, ix) != got) {
            snprintf(why, wl, "value %zu travelled without its key", j);
            goto out;
        }
        if (vs && stable && ix != ref[j]) {
            snprintf(why, wl, "stable: element %zu is input %" PRIu64 ", the reference's %zu",
                     j, ix, ref[j]);
            goto out;
        }
    }
    ok = 1;
out:
    gsort_free(blk);
    free(heap);
    free(in);
    free(ref);
    free(used);
    return ok;
}

static void test_narrow(const dmn *d)
{
    static const size_t local_sizes[] = { 0, 1, 2, 37, 200, 255, 3000 };
    static const size_t daemon_sizes[] = { 0, 1, 2, 37, 255, 3000, 70001 };
    unsetenv("GSORT_NO_LOCAL");
    gsort_conn *c = conn_or_bail(d->sock);
    setenv("GSORT_NO_LOCAL", "1", 1);
    uint64_t seed = 39;
    for (int route = 0; route < NR_COUNT; route++)
        for (int ti = 0; ti < NW_NT; ti++) {
            int bad = 0, runs = 0;
            char first[700] = "";
            const size_t *sizes = route == NR_LOCAL ? local_sizes : daemon_sizes;
            for (int api = 0; api < A_COUNT; api++)
                for (int desc = 0; desc < 2; desc++)
                    for (int stable = 0; stable < 2; stable++)
                        for (size_t si = 0; si < 7; si++) {
                            /* the largest size once a type and route: it takes the time */
                            if (sizes[si] > 60000 && (api != A_BYKEY64 || stable))
                                continue;
                            char why[600] = "";
                            int dist = stable ? (int)(si % 2) : 0;
                            runs++;
                            if (!nw_case(c, api, route, nw_types[ti], desc, stable, sizes[si],
                                         dist, seed++, why, sizeof why) && !bad++)
                                snprintf(first, sizeof first, "%s %s n=%zu %s: %s",
                                         api_names[api], desc ? "desc" : "asc", sizes[si],
                                         stable ? "stable" : "any", why);
                        }
            tap_ok(!bad, "%s keys, %s: %d sorts (gsort_sort, gsort_sort_by_key 4 and 8, "
                   "gsort_argsort32 and gsort_argsort; asc/desc, stable/not; NaN patterns, "
                   "+-0, +-inf, subnormals) match the reference%s%s", nw_names[ti],
                   nw_route_names[route], runs, bad ? ", first failure: " : "", first);
        }

    /* numpy's names are the CLI's; here: the gsort_request path */
    uint16_t h[6] = { 0x7e01, 0x3c00, 0x8000, 0xfc00, 0x0000, 0x7c00 };
    uint64_t hv[6] = { 10, 11, 12, 13, 14, 15 };
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = GSORT_F16;
    rq.n = 6;
    rq.keys = h;
    rq.values_kind = GSORT_VALUES_U64;
    rq.values = hv;
    rq.flags = GSORT_DESCENDING | GSORT_STABLE;
    gsort_result res;
    gsort_error err;
    int rc = gsort_run(c, &rq, &res, &err);
    tap_ok(rc == 0 && h[0] == 0x7e01 && h[1] == 0x7c00 && h[2] == 0x3c00 && h[3] == 0x0000 &&
           h[4] == 0x8000 && h[5] == 0xfc00 && hv[0] == 10 && hv[1] == 15 && hv[2] == 11 &&
           hv[3] == 14 && hv[4] == 12 && hv[5] == 13 && !strcmp(res.plan, "local"),
           "gsort_run, f16 descending with u64 values: NaN (its bits kept), inf, 1, +0, -0, "
           "-inf (rc %d, plan %s)", rc, plan_of(rc, &res));

    /* rows and segments sorted, each part on its own; top-k and an
     * unknown dtype refused */
    for (int nl = 0; nl < 2; nl++) {
        uint16_t k[32], k0[32];
        for (int i = 0; i < 32; i++)
            k[i] = k0[i] = (uint16_t)(31 - i);
        unsigned fl = nl ? GSORT_NO_LOCAL : 0;
        const char *how = nl ? "GSORT_NO_LOCAL" : "local allowed";
        rc = gsort_sort_rows(c, GSORT_U16, k, 4, 8, fl, &res, &err);
        int rows_ok = rc == 0;
        for (int i = 0; rows_ok && i < 32; i++)
            rows_ok = k[i] == (uint16_t)(24 - i / 8 * 8 + i % 8);   /* each row ascending */
        tap_ok(rows_ok, "%s: gsort_sort_rows of u16 keys, 4 rows of 8: each row sorted (rc %d, "
               "plan %s)", how, rc, plan_of(rc, &res));
        memcpy(k, k0, sizeof k);
        rc = gsort_sort_rows(c, GSORT_U16, k, 1, 32, fl, &res, &err);
        int sorted = rc == 0;
        for (int i = 0; sorted && i < 32; i++)
            sorted = k[i] == i;
        tap_ok(sorted, "%s: one row of u16 keys is a sort (rc %d)", how, rc);
        memcpy(k, k0, sizeof k);
        uint64_t off[3] = { 0, 10, 32 };
        gsort_request_init(&rq);
        rq.dtype = GSORT_BF16;
        rq.keys = k;
        rq.n = 32;
        rq.flags = fl;
        rc = gsort_run_segments(c, &rq, off, 2, &res, &err);
        /* bf16 words 31..0: the positive ones by value, segment by segment */
        int seg_ok = rc == 0;
        for (int i = 0; seg_ok && i < 32; i++)
            seg_ok = k[i] == (i < 10 ? 22 + i : i - 10);
        tap_ok(seg_ok, "%s: gsort_run_segments of bf16 keys, 10 and 22: each segment sorted "
               "(rc %d, plan %s)", how, rc, plan_of(rc, &res));
        memcpy(k, k0, sizeof k);
        /* top 3 of each of 4 rows of 8 f16 keys, a NaN pattern among them,
         * descending (NaNs first, in input order), with indices */
        uint16_t hk[32], hout[12];
        uint32_t hix[12];
        for (int i = 0; i < 32; i++)
            hk[i] = (uint16_t)(0x3c00 + i);                 /* 1.0 and up */
        hk[9] = 0x7e01;                                     /* row 1: NaNs at 1 and 5 */
        hk[13] = 0xfe02;
        gsort_request_init(&rq);
        rq.dtype = GSORT_F16;
        rq.keys = hk;
        rq.n = 32;
        rq.values_kind = GSORT_VALUES_IDX32;
        rq.flags = fl | GSORT_DESCENDING;
        rc = gsort_topk(c, &rq, 4, 3, hout, hix, &res, &err);
        int top_ok = rc == 0 && hout[3] == 0x7e01 && hout[4] == 0xfe02 &&
                     hout[5] == 0x3c00 + 15 && hix[3] == 1 && hix[4] == 5 && hix[5] == 7;
        for (int r = 0; top_ok && r < 4; r++)
            if (r != 1)
                top_ok = hout[3 * r] == 0x3c00 + 8 * r + 7 && hix[3 * r + 2] == 5;
        tap_ok(top_ok, "%s: gsort_topk of f16 keys, the top 3 of 4 rows: NaN patterns first "
               "in input order, then the largest, with indices (rc %d, plan %s)", how, rc,
               plan_of(rc, &res));
        rc = gsort_sort(c, (gsort_dtype)12, k, 32, fl, &res, &err);
        tap_ok(rc == GSORT_EINVAL && strstr(err.message, "unknown dtype 12") &&
               strstr(err.message, "GSORT_BF16"), "%s: dtype 12 (past GSORT_BF16) refused: %s",
               how, err.message);
    }
    /* the router: a shape of their own per narrow type; lgs_dt_key_bits is
     * 32 for them (the crossover from a daemon without the 16-bit class) */
    int distinct = LGS_SHAPES == LGS_DTYPES * GS_PL_COUNT * 8, bits = 1;
    char *seen = calloc(LGS_SHAPES, 1);
    if (!seen)
        tap_bail("out of memory");
    for (int t = 0; t < LGS_DTYPES; t++) {
        bits &= lgs_dt_key_bits(t) == (t == GSORT_U64 || t == GSORT_I64 || t == GSORT_F64 ?
                                       64 : 32);
        for (int p = 0; p < GS_PL_COUNT; p++)
            for (int o = 0; o < 4; o++) {
                unsigned s = lgs_shape(t, p, o & 1, o >> 1);
                distinct &= s < LGS_SHAPES && !seen[s]++;
                /* its bit-range twin, timed apart */
                distinct &= lgs_shape_bits(s) < LGS_SHAPES && !seen[lgs_shape_bits(s)]++;
            }
    }
    free(seen);
    tap_ok(distinct && bits && lgs_dt_of(GSORT_F16)->narrow == GS_NW_F16 &&
           lgs_dt_of(GSORT_BF16)->bytes == 2 && lgs_dt_of(GSORT_U8)->bytes == 1 &&
           lgs_dt_of(GSORT_F64)->dt == GS_DT_F64 && !lgs_dt_of(LGS_DTYPES) && !lgs_dt_of(-1),
           "router: %d shapes, one each (every dtype, narrow ones included) and a bit range's "
           "twin of each; narrow keys take the 32-bit crossover from a daemon without a 16-bit "
           "one", LGS_SHAPES);
    gsort_close(c);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Every check but test_local's is about the daemon's routes. */
    setenv("GSORT_NO_LOCAL", "1", 1);
    dmn_init();
    tap_diag("temp %s", dmn_tmpdir());
    tap_ok(!strcmp(gsort_version(), PACKAGE_VERSION), "gsort_version: %s", gsort_version());
    static const int codes[] = { GSORT_OK, GSORT_EINVAL, GSORT_ENOMEM, GSORT_EDEVICE,
                                 GSORT_EIO, GSORT_ENODEV, GSORT_EBUILD, GSORT_ECORRUPT,
                                 GSORT_ETOOBIG, GSORT_EUNSUPPORTED, GSORT_ENOTFOUND,
                                 GSORT_EWRONG, GSORT_ENODAEMON };
    static const char *const names[] = { "OK", "EINVAL", "ENOMEM", "EDEVICE", "EIO", "ENODEV",
                                         "EBUILD", "ECORRUPT", "ETOOBIG", "EUNSUPPORTED",
                                         "ENOTFOUND", "EWRONG", "ENODAEMON" };
    int names_ok = 1;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        char want[40];
        snprintf(want, sizeof want, "GSORT_%s", names[i]);
        names_ok &= !strcmp(gsort_strerror(codes[i]), want);
    }
    tap_ok(names_ok && !strcmp(gsort_strerror(-99), "GSORT_E?") &&
           !strcmp(gsort_strerror(5), "GSORT_E?"), "gsort_strerror names every code");

    double t0 = gs_now_s();
    const char *const host_only[] = { "-o", "devices=none", NULL };
    if (dmn_start(&g_main, "main", NULL, host_only))
        tap_bail("the host-only daemon did not start");
    test_connect();
    test_routes(&g_main);
    test_edges(&g_main);
    test_rows(&g_main);
    test_segments(&g_main);
    test_topk(&g_main);
    test_lexsort(&g_main);
    test_narrow(&g_main);
    test_bits(&g_main);
    test_no_memfd(&g_main);
    test_errors(&g_main);
    test_queries(&g_main);
    test_local(&g_main);
    test_local_run(&g_main);
    tap_diag("routes, errors, queries: %.1f s", gs_now_s() - t0);
    test_matrix(&g_main);
    tap_diag("matrix: %.1f s", gs_now_s() - t0);
    test_threads(&g_main);
    test_default_socket();
    test_broken();
    test_reconnect();
    test_limits();
    test_example(&g_main);
    tap_diag("threads, sockets, limits, example: %.1f s", gs_now_s() - t0);
    test_device();
    test_crossover();
    test_crossover16();
    tap_diag("device, crossover: %.1f s", gs_now_s() - t0);
    int st = dmn_stop(&g_main, SIGTERM, 20);
    tap_ok(st == 0, "the host-only daemon stops cleanly: exit %d", st);
    return tap_done();
}
