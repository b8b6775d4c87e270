/* A device's planned programs, built before its first request needs them
 * (issue 37: a fresh daemon's first GPU answers waited ~11 s each while the
 * radix programs were built on the request path). When a plan is set
 * (start-up, SIGHUP, the end of a background tune), each device gets the
 * distinct device routes of its plan rows that this process has not run
 * yet; its worker runs one small sort for each before the requests queued
 * behind them, which builds the route's program (or loads it from the
 * program cache, gs_pcache.h). Meanwhile the routes' predicted build time
 * counts in the device's backlog, so the router treats the device as busy
 * and sends what the host (or another device) finishes sooner there; a
 * request that names the device waits for the builds. The log says when a
 * device is ready, and the info op shows it. */
#include "config.h"
#include "gs_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_log.h"
#include "gs_narrow.h"
#include "gs_sched_int.h"
#include "gs_time.h"

/* Predicted time to build one route's program: NVIDIA's OpenCL compiler
 * takes ~2 s for radix's; loaded from the program cache it takes
 * milliseconds, and the backlog then drops as soon as it is done. */
#define WARM_BUILD_MS 2000.0
/* Keys of the small sort that builds a route (one tile or a few). */
#define WARM_N 4096

/* A route's identity: the algorithm and its parameters, formatted; a
 * row of the 16-bit key class apart ("/16"), since an algorithm that
 * sorts 16-bit keys itself builds another program for them (warm_one). */
static void route_id(const gs_algo *a, const gs_params *p, int key_bits, int kind, char *buf,
                     size_t len)
{
    int w = snprintf(buf, len, "%s%s%s:", a->name, key_bits == 16 && a->half_keys ? "/16" : "",
                     kind < 0 ? "" : kind == GS_PK_ROWS ? "/rows" : "/topk");
    if (w > 0 && (size_t)w < len)
        gs_params_format(p, buf + w, len - (size_t)w);
}

/* Under q->mu: whether route `id` was warmed (or run) already. */
static int seen(const sdev *sd, const char *id)
{
    for (size_t i = 0; i < sd->nwarmed; i++)
        if (!strcmp(sd->warmed[i], id))
            return 1;
    return 0;
}

/* Under q->mu: note route `id` as warmed; 0, or -1 out of memory. */
static int note(sdev *sd, const char *id)
{
    if (sd->nwarmed == sd->capwarmed) {
        size_t cap = sd->capwarmed ? 2 * sd->capwarmed : 16;
        char(*w)[SCHED_ROUTE_ID] = realloc(sd->warmed, cap * sizeof *w);
        if (!w)
            return -1;
        sd->warmed = w;
        sd->capwarmed = cap;
    }
    snprintf(sd->warmed[sd->nwarmed++], SCHED_ROUTE_ID, "%s", id);
    return 0;
}

void sched_warm_post(gs_sched *s, int d)
{
    sdev *sd = &s->devs[d];
    const gs_plans *p = sd->plans;
    if (!sd->enabled || !p || p->nplan + p->nshp == 0)
        return;
    sched_warm *w = calloc(1, sizeof *w + (p->nplan + p->nshp) * sizeof w->item[0]);
    if (!w) {
        GS_WARN("device %d (%s): out of memory listing its plan's programs; they are built "
                "when first used", d, sd->dev->info.name);
        return;
    }
    queue *q = &sd->q;
    pthread_mutex_lock(&q->mu);
    /* the flat plan's rows, then the rows and top-k plan's (a route of
     * their own: bitonic and the select serve only them, and radix's rows
     * whole take another scan kernel) */
    for (size_t i = 0; i < p->nplan + p->nshp; i++) {
        const int flat = i < p->nplan;
        const gs_plans_entry *e = flat ? &p->plan[i] : NULL;
        const gs_plans_shape *h = flat ? NULL : &p->shp[i - p->nplan];
        const gs_algo *a = flat ? e->algo : h->algo;
        /* a segments row's program depends on the longest segment of each
         * request (bitonic pads every one to it): built by the first */
        if (!a->uses_device || (h && h->kind == GS_PK_SEGS))
            continue;
        sched_warm_item *it = &w->item[w->n];
        it->kind = flat ? -1 : (int)h->kind;
        it->sub = flat ? 0 : h->sub;
        it->key_bits = flat ? e->key_bits : h->key_bits;
        it->payload = flat ? e->payload : h->payload;
        it->params = flat ? e->params : h->params;
        route_id(a, &it->params, it->key_bits, it->kind, it->id, sizeof it->id);
        int dup = seen(sd, it->id);
        for (size_t k = 0; k < w->n && !dup; k++)
            dup = !strcmp(w->item[k].id, it->id);
        if (dup)
            continue;
        it->algo = a;
        w->n++;
    }
    if (w->n == 0) {
        pthread_mutex_unlock(&q->mu);
        free(w);
        return;
    }
    if (q->warm) {                       /* an earlier list its worker has not taken */
        q->warm_ms -= (double)q->warm->n * WARM_BUILD_MS;
        free(q->warm);
    }
    q->warm = w;
    q->warm_ms += (double)w->n * WARM_BUILD_MS;
    atomic_store(&sd->warming, 1);
    pthread_cond_broadcast(&q->cv);     /* the first lane, whichever lane wakes first */
    pthread_mutex_unlock(&q->mu);
    GS_INFO("device %d (%s): building the programs of %zu planned route(s) before they serve; "
            "the host serves meanwhile", d, sd->dev->info.name, w->n);
}

void sched_measured(sdev *sd)
{
    queue *q = &sd->q;
    pthread_mutex_lock(&q->mu);
    /* what is left: the planned builds posted meanwhile, if any */
    q->warm_ms = q->warm && q->warm_ms > SCHED_MEASURE_MS ? q->warm_ms - SCHED_MEASURE_MS : 0;
    if (!q->warm)
        atomic_store(&sd->warming, 0);
    pthread_mutex_unlock(&q->mu);
}

/* One small sort of the item's shape: the route's program built (or
 * loaded), as its first request would have. */
static int warm_one(gs_sched *s, int d, const sched_warm_item *it, gs_err *err)
{
    const gs_dtype t = gs_dtype_unsigned(it->key_bits);
    const size_t ks = gs_dtype_size(t), vs = gs_payload_size(it->payload);
    unsigned char *keys = malloc(WARM_N * ks), *vals = vs ? malloc(WARM_N * vs) : NULL;
    if (!keys || (vs && !vals)) {
        free(keys);
        free(vals);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < WARM_N * ks; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        keys[i] = (unsigned char)x;
    }
    if (vals)
        memset(vals, 0, WARM_N * vs);
    /* a row of the 16-bit key class: the 16-bit keys' program of an
     * algorithm that takes them as they are (radix), else the words' */
    const int k16 = it->key_bits == 16 && it->algo->half_keys && it->payload == GS_PL_NONE;
    gs_sort_req req = { .shape = { .dtype = t,
                                   .payload = it->payload, .narrow = k16 ? GS_NW_U16 : 0 },
                        .n = WARM_N, .keys = keys, .values = vals };
    /* a rows or top-k row: rows of its length, or its k (at most half the
     * keys: two rows at least) */
    const uint64_t sub = it->sub < 11 ? (uint64_t)1 << it->sub : WARM_N / 2;
    if (it->kind == GS_PK_ROWS) {
        req.shape.rows = WARM_N / sub;
    } else if (it->kind == GS_PK_TOPK) {
        req.shape.topk = 1;
        req.shape.k = sub;
    }
    gs_sort_ctx ctx = { .dev = s->devs[d].dev, .pc = s->pc };
    int rc = gs_sort_run(it->algo, &ctx, &req, &it->params, NULL, err);
    /* 8- and 16-bit keys alone follow the u32 plan where their own class
     * has no rows; where its algorithm takes 16-bit keys (a program of its
     * own), that one too */
    if (rc == 0 && !k16 && it->algo->half_keys && t == GS_DT_U32 &&
        it->payload == GS_PL_NONE && it->kind < 0) {
        req.shape.narrow = GS_NW_U16;
        rc = gs_sort_run(it->algo, &ctx, &req, &it->params, NULL, err);
    }
    free(keys);
    free(vals);
    return rc;
}

void sched_warm_run(gs_sched *s, int d, sched_warm *w)
{
    sdev *sd = &s->devs[d];
    queue *q = &sd->q;
    double t0 = gs_now_ms();
    unsigned failed = 0;
    size_t i;
    for (i = 0; i < w->n; i++) {
        pthread_mutex_lock(&q->mu);
        const int stopping = q->stop;   /* shutting down: no more builds */
        pthread_mutex_unlock(&q->mu);
        if (stopping)
            break;
        const sched_warm_item *it = &w->item[i];
        gs_err err;
        gs_err_clear(&err);
        double t1 = gs_now_ms();
        if (warm_one(s, d, it, &err) < 0) {
            /* the route's requests meet the same failure and fall back */
            failed++;
            GS_WARN("device %d (%s): building planned route %s failed: %s", d,
                    sd->dev->info.name, it->id, err.msg);
        } else {
            GS_DEBUG("device %d: planned route %s ready in %.0f ms", d, it->id,
                     gs_now_ms() - t1);
        }
        pthread_mutex_lock(&q->mu);
        q->warm_ms -= WARM_BUILD_MS;
        if (q->warm_ms < 0 || (i + 1 == w->n && !q->warm))
            q->warm_ms = 0;
        if (note(sd, it->id) < 0)
            GS_WARN("device %d: out of memory noting a built route", d);
        pthread_mutex_unlock(&q->mu);
    }
    pthread_mutex_lock(&q->mu);
    const int more = q->warm != NULL;
    if (!more)
        atomic_store(&sd->warming, 0);
    pthread_mutex_unlock(&q->mu);
    if (i < w->n) {                      /* stopped before the end */
        GS_INFO("device %d (%s): stopping after %zu of %zu planned route(s)", d,
                sd->dev->info.name, i, w->n);
        free(w);
        return;
    }
    GS_INFO("device %d (%s): %s: %zu planned route(s) built in %.2f s%s%s", d,
            sd->dev->info.name, more ? "built" : "ready", w->n, (gs_now_ms() - t0) / 1000.0,
            failed ? ", some failed (see above)" : "", more ? "; more to build" : "");
    free(w);
}

void sched_warm_free(sdev *sd)
{
    free(sd->q.warm);
    sd->q.warm = NULL;
    free(sd->warmed);
    sd->warmed = NULL;
    sd->nwarmed = sd->capwarmed = 0;
}
