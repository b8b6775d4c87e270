/* Routing: where and how each sort runs, decided on the client's event
 * loop under the scheduler's lock (gs_sched_route, declared in
 * gs_sched.h). The device's tuned plan for
 * its key class, payload kind, stability and size, held in memory
 * (gs_plans.h: the request path never queries the database); for a shape
 * the plan lacks, the nearest tuned shape's entry; without a plan, the
 * device's built-in defaults (gs_defaults.c); one warning per device
 * and request shape says which and why. A client that names the algorithm
 * gets the best device for it; a queue that is busy may send the request to
 * another device or to the host when that is predicted to finish sooner.
 * Predictions come from the plan's measured time scaled linearly from its
 * bucket to n, or, without a plan, from a per-route rate (ms per key)
 * learned from the runs served so far (gs_queue.c learns them); what an
 * out-of-core sort and a queue's backlog cost is gs_predict.c's. The
 * workers that then run the job are gs_sched.c's, the queues gs_queue.c's;
 * they share gs_sched_int.h. */
#include "config.h"
#include "gs_sched.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_hostpool.h"
#include "gs_ooc.h"
#include "gs_log.h"
#include "gs_merge.h"
#include "gs_narrow.h"
#include "gs_sched_int.h"
#include "gs_time.h"


/* 8-bit keys alone from this many on are counted on the host even where
 * the plan puts u32 keys on a device (below, they follow it): a device
 * takes them as 16-bit codes the host encodes and decodes. An H100's
 * virtual machine, 16 cores, 2026-12-07, f16 keys from numpy as such
 * codes against the count: 2^21 4.26 against 6.04 ms, 2^22 7.03 against
 * 7.79, 2^23 11.6 against 8.95, 2^24 24.7 against 13.7. 16-bit keys alone
 * follow the plan at every size: a device's radix sorts them where they
 * lie (an H200, 2026-12-07, f16 from numpy: 2^23 5.15 against the host
 * count's 8.03 ms, 2^24 9.68 against 13.9; kernels 0.3 ms of that). */
#define NARROW_DEVICE_BELOW ((uint64_t)1 << 23)

/* ---- plans, and how a route was chosen ---- */

const char *gs_sched_route_name(gs_route_how how)
{
    static const char *const names[GS_ROUTE_COUNT] = {
        [GS_ROUTE_TUNED] = "tuned", [GS_ROUTE_DEFAULT] = "default",
        [GS_ROUTE_OVERRIDE] = "override", [GS_ROUTE_BUSY] = "busy",
        [GS_ROUTE_FALLBACK] = "fallback", [GS_ROUTE_SPLIT] = "split",
    };
    return (int)how >= 0 && how < GS_ROUTE_COUNT ? names[how] : "unknown";
}

void gs_sched_set_db(gs_sched *s, gs_db *db)
{
    /* Read every plan first, without the lock: routing on the other loops
     * goes on meanwhile with the old plans. */
    long long *ids = calloc(s->ndev ? s->ndev : 1, sizeof *ids);
    gs_plans **pts = calloc(s->ndev ? s->ndev : 1, sizeof *pts);
    if (!ids || !pts) {
        GS_ERROR("out of memory reading the plans; keeping the ones in use");
        free(ids);
        free(pts);
        return;
    }
    for (size_t i = 0; i < s->ndev; i++) {
        sdev *sd = &s->devs[i];
        ids[i] = -1;
        if (!db || !sd->enabled)
            continue;
        gs_err e;
        gs_err_clear(&e);
        int64_t id;
        if (gs_db_device_id(db, &sd->dev->info, 0, &id, &e) == 0) {
            ids[i] = id;
            /* the whole plan, read here once: routing never queries */
            if (gs_plans_load(db, id, &pts[i], &e) < 0) {
                GS_WARN("device %zu: cannot read its plan: %s", i, e.msg);
                pts[i] = NULL;
            }
        }
    }
    pthread_mutex_lock(&s->mu);
    s->db = db;
    for (size_t i = 0; i < s->ndev; i++) {
        sdev *sd = &s->devs[i];
        gs_plans *old = sd->plans;
        sd->db_id = ids[i];
        sd->plans = pts[i];
        sd->plan_entries = pts[i] ? (long)pts[i]->nplan : 0;
        pts[i] = old;               /* freed below, out of the lock */
        sd->warned_noplan = 0;
        memset(sd->warned_shape, 0, sizeof sd->warned_shape);
        atomic_store(&sd->fails, 0);
        atomic_store(&sd->rest_until, 0.0);
        for (int a = 0; a < MAX_ALGOS; a++)
            atomic_store(&sd->broken[a], 0);
        sched_warm_post(s, (int)i);
    }
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < s->ndev; i++)
        gs_plans_free(pts[i]);
    free(ids);
    free(pts);
}

/* ---- candidates and the choice ---- */

static int usable(sdev *sd, const gs_algo *a)
{
    return sd->enabled && sched_dev_healthy(sd) && !atomic_load(&sd->broken[sched_algo_index(a)]);
}

typedef sched_cand cand;

static double host_predict(const gs_sched *s, const gs_sort_req *r)
{
    double ms = s->host_rate[gs_dtype_size(r->shape.dtype) == 8].ms_per_key * (double)r->n;
    return r->shape.payload != GS_PL_NONE ? 1.5 * ms : ms;
}

static void host_cand(const gs_sched *s, const gs_sort_req *r, gs_route_how how, cand *c)
{
    c->dev = -1;
    c->algo = gs_algo_find("host");
    gs_params_clear(&c->params);
    c->how = how;
    c->chunk_n = 0;
    c->from_rate = 0;
    c->ms = host_predict(s, r);
}

/* Why a tuned device has no plan entry for this shape, for the log: what
 * the tuner would need to cover it. */
static void shape_hint(int key_bits, gs_payload pl, char *buf, size_t len)
{
    /* every payload kind is tuned at any budget (docs/TUNING.md); 8- and
     * 16-bit keys alone only */
    if (key_bits == 16 && pl != GS_PL_NONE)
        snprintf(buf, len, "the tuner times 8- and 16-bit keys alone only; with a payload "
                 "they sort as 32-bit words");
    else
        snprintf(buf, len, "gsortd --tune-all tunes it unless its --payloads leave %s out or "
                 "its --budget runs out first", gs_payload_name(pl));
}

/* Log once per device and request shape (key width, payload kind,
 * stability: what the plan is keyed by, the size aside) that the plan has
 * no entry for it, what serves it instead (`near`: the nearest tuned
 * shape's entry; NULL: the built-in defaults) and what would tune it. */
static void warn_shape(sdev *sd, int d, const gs_sort_req *r, const gs_plans_entry *near)
{
    const gs_plans_key k = gs_plans_key_of(&r->shape);
    unsigned char *w = &sd->warned_shape[gs_kw_index(k.key_bits)][k.payload][k.stable];
    if (*w)
        return;
    *w = 1;
    char hint[160] = "", instead[160];
    shape_hint(k.key_bits, r->shape.payload, hint, sizeof hint);
    if (near)
        snprintf(instead, sizeof instead, "the plan of the nearest tuned shape (%d-bit keys, "
                 "payload %s, %s: %s)", near->key_bits, gs_payload_name(near->payload),
                 near->stable ? "stable" : "not stable", near->algo->name);
    else
        snprintf(instead, sizeof instead, "built-in defaults");
    GS_WARN("device %d (%s, driver %s): no tuned plan entry for %d-bit keys, payload %s%s, %s; "
            "using %s for that shape (%s)", d, sd->dev->info.name, sd->dev->info.driver,
            k.key_bits, gs_payload_name(r->shape.payload),
            r->shape.payload == GS_PL_IDX32 || r->shape.payload == GS_PL_IDX64 ? " (argsort)" : "",
            r->shape.stable ? "stable" : "not stable", instead, hint);
}

/* Rows or segments that out of core cannot cut into pieces of chunk_n
 * keys: top-k rows, or a row or segment longer than that (gs_ooc_sort
 * cuts them on their borders, each whole). */
static int parts_uncut(const gs_sort_req *r, size_t chunk_n)
{
    if (r->shape.segments)
        return gs_sort_req_longest(r, NULL) > chunk_n;
    return r->shape.rows > 1 && (r->shape.topk || chunk_n < r->n / r->shape.rows);
}

/* The device's own choice for request r: its tuned plan (from memory),
 * else the plan of its nearest tuned shape, else the built-in defaults
 * (always, with `untuned`: the audit's untuned route). 0, or a negative
 * code when the device cannot serve it at all (the caller then leaves it
 * out). quiet: a question about the plan, not a request (the crossover
 * below): nothing logged. */
static int device_cand(gs_sched *s, int d, const gs_sort_req *r, int untuned, cand *c,
                       int quiet)
{
    sdev *sd = &s->devs[d];
    gs_err e;
    gs_err_clear(&e);
    c->dev = d;
    c->chunk_n = 0;
    const gs_plans_entry *pe = NULL;
    if (untuned) {
        /* the audit's untuned route: the built-in defaults, said nowhere */
    } else if (sd->plans && sd->plan_entries > 0) {
        pe = gs_plans_lookup(sd->plans, &r->shape, r->n);
        if (!pe && (pe = gs_plans_nearest(sd->plans, &r->shape, r->n)) && !quiet)
            warn_shape(sd, d, r, pe);
        else if (!pe && !quiet)
            warn_shape(sd, d, r, NULL);
    } else if (!sd->warned_noplan && !quiet) {
        sd->warned_noplan = 1;
        GS_WARN("device %d (%s, driver %s): no tuned plan%s; using built-in defaults "
                "(run gsortd --tune-all, or serve with --tune-missing)", d, sd->dev->info.name,
                sd->dev->info.driver, s->db ? "" : " (no database)");
    }
    if (pe) {
        c->algo = pe->algo;
        c->params = pe->params;
        c->how = GS_ROUTE_TUNED;
        c->from_rate = 0;
        c->ms = pe->median_ms * ((double)(r->n ? r->n : 1) / ldexp(1.0, pe->bucket));
    } else {
        /* built-in defaults (gs_defaults.c): the host sort below the
         * device's crossover, or everywhere on a CPU device */
        c->how = GS_ROUTE_DEFAULT;
        int from = atomic_load(&sd->dflt_min_log2);
        if (!sd->dflt_algo->uses_device || (from < 63 && r->n < ((uint64_t)1 << from))) {
            host_cand(s, r, GS_ROUTE_DEFAULT, c);
            return 0;
        }
        c->algo = sd->dflt_algo;
        c->algo->defaults(&sd->dev->info, &c->params);
        c->ms = sched_dev_rate(s, d) * (double)r->n;
        c->from_rate = 1;
    }
    if (!c->algo->uses_device) {
        c->dev = -1;
        return 0;
    }
    if (!usable(sd, c->algo))
        return GS_EUNSUPPORTED;
    if (sched_fit(s, d, c->algo, r, &c->params, &c->chunk_n, &e) < 0)
        return GS_EUNSUPPORTED;
    /* out of core cuts rows and segments on their borders (parts_uncut),
     * and merges by whole keys */
    if (c->chunk_n && (parts_uncut(r, c->chunk_n) || gs_shape_has_bits(&r->shape)))
        return GS_EUNSUPPORTED;
    if (c->chunk_n)
        c->ms = sched_ooc_ms(s, d, c->algo, r, c->ms, c->chunk_n);
    return 0;
}

/* Rows (issue 38) on GPU d (a device whose defaults are a device
 * algorithm: a GPU, or PoCL under the test hook): bitonic sorts every row
 * in one launch where a row fits a work-group's local memory; longer rows
 * go to radix, which sorts them whole in one sequence of launches where a
 * tile divides the row (its plan's parameters for the shape, else its
 * defaults). Until the tuner times rows, either is predicted to take what
 * the device's own choice for n flat keys takes (the same bytes each way;
 * bitonic's one launch reads and writes them once, radix's rows cost what
 * its flat sort of the same keys costs: 2.36 against 2.42 ms for 2^26 f32
 * keys on an H100), and is a candidate only where that choice is the
 * device's (below the crossover the host sorts rows sooner than a round
 * trip). 0, or a negative code when d does not serve these rows so. */
static int rows_cand(gs_sched *s, int d, const gs_sort_req *r, cand *c)
{
    sdev *sd = &s->devs[d];
    if (!sd->dflt_algo->uses_device)      /* a GPU's defaults */
        return GS_EUNSUPPORTED;
    gs_sort_req flat = *r;
    flat.shape.rows = 0;
    cand f;
    if (device_cand(s, d, &flat, 0, &f, 1) < 0 || f.dev < 0)
        return GS_EUNSUPPORTED;
    gs_err e;
    c->dev = d;
    c->how = GS_ROUTE_DEFAULT;
    c->from_rate = 0;
    c->ms = f.ms;
    const gs_algo *bi = gs_algo_find("bitonic");
    if (bi && usable(sd, bi)) {
        c->algo = bi;
        bi->defaults(&sd->dev->info, &c->params);
        gs_err_clear(&e);
        if (sched_fit(s, d, bi, r, &c->params, &c->chunk_n, &e) == 0 && !c->chunk_n)
            return 0;
    }
    const gs_algo *rx = gs_algo_find("radix");
    if (!rx || !usable(sd, rx))
        return GS_EUNSUPPORTED;
    c->algo = rx;
    const gs_plans_entry *w = gs_plans_winner(sd->plans, rx, &r->shape, gs_db_bucket(r->n));
    if (w)
        c->params = w->params;
    else
        rx->defaults(&sd->dev->info, &c->params);
    gs_err_clear(&e);
    if (gs_radix_takes_rows_whole(&sd->dev->info, r, &c->params, &e) != 1 ||
        sched_fit(s, d, rx, r, &c->params, &c->chunk_n, &e) < 0 || c->chunk_n)
        return GS_EUNSUPPORTED;
    return 0;
}

/* Device d's algorithm `name`, with its defaults, taking r whole in one
 * run there (segments: or in pieces of whole segments, out of core);
 * predicted as the device's sort of `flat`, r's keys as one array (the
 * upload dominates). */
static int whole_cand(gs_sched *s, int d, const char *name, const gs_sort_req *r,
                      const gs_sort_req *flat, cand *c)
{
    sdev *sd = &s->devs[d];
    const gs_algo *a = gs_algo_find(name);
    if (!a || !usable(sd, a))
        return GS_EUNSUPPORTED;
    cand f;
    gs_err e;
    gs_err_clear(&e);
    c->dev = d;
    c->algo = a;
    a->defaults(&sd->dev->info, &c->params);
    c->how = GS_ROUTE_DEFAULT;
    c->from_rate = 0;
    c->ms = device_cand(s, d, flat, 0, &f, 1) == 0 ? f.ms : host_predict(s, r);
    if (sched_fit(s, d, a, r, &c->params, &c->chunk_n, &e) < 0 ||
        (c->chunk_n && (!r->shape.segments || parts_uncut(r, c->chunk_n))))
        return GS_EUNSUPPORTED;
    if (c->chunk_n)             /* segments: pieces of whole ones */
        c->ms = sched_ooc_ms(s, d, a, r, c->ms, c->chunk_n);
    return 0;
}

/* Segments on device d, which the client named: bitonic, every segment
 * in one launch, where the longest fits a work-group (algo_bitonic.c);
 * else the device's flat choice segment by segment, as before. Not a
 * choice of the daemon's own: no audit has timed it against the host. */
static int segs_cand(gs_sched *s, int d, const gs_sort_req *r, cand *c)
{
    gs_sort_req flat = *r;
    flat.shape.segments = 0;
    flat.offsets = NULL;
    return whole_cand(s, d, "bitonic", r, &flat, c);
}

/* Top-k on device d: its radix select (algo_select.c), which reads the
 * keys a few times and sends back k of each row, where it takes the
 * request (k up to its limit, rows that fit the device whole). */
static int topk_cand(gs_sched *s, int d, const gs_sort_req *r, cand *c)
{
    gs_sort_req flat = gs_sort_req_whole(r);
    flat.shape.rows = 0;
    return whole_cand(s, d, "select", r, &flat, c);
}

/* The rows, top-k or segments plan's route for r on device d
 * (gs_plans_shape_lookup: the point nearest r's sizes, measured through
 * this scheduler by the plan audit, gs_audit_shapes.c): a device
 * algorithm on d where it takes r whole (rows: bitonic in one launch,
 * radix with the rows whole; top-k: the select; segments: bitonic), or
 * the host algorithm the row names; predicted as the row's time scaled by
 * n. Negative when d has no such row or cannot run it now (the rules then
 * decide, as untuned). */
static int shape_plan_cand(gs_sched *s, int d, gs_plans_kind kind, const gs_sort_req *r,
                           cand *c)
{
    sdev *sd = &s->devs[d];
    uint64_t sub = kind == GS_PK_TOPK ? r->shape.k
                   : kind == GS_PK_SEGS ? r->n / r->shape.segments : r->n / r->shape.rows;
    const gs_plans_shape *e = gs_plans_shape_lookup(sd->plans, kind, &r->shape, r->n,
                                                    sub ? sub : 1);
    if (!e)
        return GS_ENOTFOUND;
    c->algo = e->algo;
    c->params = e->params;
    c->how = GS_ROUTE_TUNED;
    c->from_rate = 0;
    c->chunk_n = 0;
    c->ms = e->median_ms * ((double)(r->n ? r->n : 1) / ldexp(1.0, e->bucket));
    if (!e->algo->uses_device) {
        c->dev = -1;
        return 0;
    }
    c->dev = d;
    gs_err ce;
    gs_err_clear(&ce);
    if (!usable(sd, e->algo) || sched_fit(s, d, e->algo, r, &c->params, &c->chunk_n, &ce) < 0 ||
        c->chunk_n)
        return GS_EUNSUPPORTED;
    if (kind == GS_PK_ROWS && !strcmp(e->algo->name, "radix") &&
        gs_radix_takes_rows_whole(&sd->dev->info, r, &c->params, &ce) != 1)
        return GS_EUNSUPPORTED;
    return 0;
}

static void apply(gs_job *j, const cand *c)
{
    j->dev = c->dev;
    j->algo = c->algo;
    j->run_params = c->params;
    j->how = c->how;
    j->predicted_ms = c->ms;
    j->chunk_n = c->chunk_n;
    j->learn = c->from_rate && !c->chunk_n;
}

/* The client named the algorithm. */
static int route_override(gs_sched *s, gs_job *j, gs_err *err)
{
    const gs_algo *a = gs_algo_find(j->algorithm);
    if (!a) {
        char names[256] = "";
        for (size_t i = 0; i < gs_algo_count(); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     gs_algo_at(i)->name);
        return gs_err_set(err, GS_ENOTFOUND, "unknown algorithm '%s' (known: %s)", j->algorithm,
                          names);
    }
    if (j->req.shape.stable && !a->stable)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s is not stable and the request asks for "
                          "a stable sort", a->name);
    cand best = { 0 }, c;
    if (!a->uses_device) {
        host_cand(s, &j->req, GS_ROUTE_OVERRIDE, &best);
        best.algo = a;
        if (j->has_params)
            best.params = j->params;
        int rc;
        if (a->check && (rc = a->check(NULL, &j->req, &best.params, err)) < 0)
            return rc;
        apply(j, &best);
        return 0;
    }
    int found = 0, tried = 0, rc = 0;
    double best_cost = INFINITY;
    for (size_t d = 0; d < s->ndev; d++) {
        sdev *sd = &s->devs[d];
        if ((j->device >= 0 && (size_t)j->device != d) || !sd->enabled)
            continue;
        tried = 1;
        if (!usable(sd, a))
            continue;
        c.dev = (int)d;
        c.algo = a;
        c.how = GS_ROUTE_OVERRIDE;
        c.ms = sched_dev_rate(s, (int)d) * (double)j->req.n;
        /* the rate is the default algorithm's with its defaults */
        c.from_rate = a == sd->dflt_algo && !j->has_params;
        const gs_plans_entry *w = NULL;
        if (j->has_params) {
            c.params = j->params;
        } else if ((w = gs_plans_winner(sd->plans, a, &j->req.shape, gs_db_bucket(j->req.n)))) {
            c.params = w->params;
            c.ms = w->median_ms;
            c.from_rate = 0;
        } else {
            a->defaults(&sd->dev->info, &c.params);
        }
        gs_err ce;
        gs_err_clear(&ce);
        c.chunk_n = 0;
        if ((rc = sched_fit(s, (int)d, a, &j->req, &c.params, &c.chunk_n, &ce)) < 0) {
            if (err)
                *err = ce;
            continue;
        }
        if (c.chunk_n && parts_uncut(&j->req, c.chunk_n)) {
            if (j->req.shape.segments)
                rc = gs_err_set(err, GS_ETOOBIG, "%s: %llu segments of %llu keys in all do not "
                                "fit device %zu at once, and the longest is not cut into pieces",
                                a->name, (unsigned long long)j->req.shape.segments,
                                (unsigned long long)j->req.n, d);
            else
                rc = gs_err_set(err, GS_ETOOBIG, "%s: %llu rows of %llu keys do not fit device "
                                "%zu at once, and %s", a->name,
                                (unsigned long long)j->req.shape.rows,
                                (unsigned long long)(j->req.n / j->req.shape.rows), d,
                                j->req.shape.topk ? "top-k rows are not cut into pieces"
                                                  : "a row is not cut into pieces");
            continue;
        }
        if (c.chunk_n && gs_shape_has_bits(&j->req.shape)) {
            rc = gs_err_set(err, GS_ETOOBIG, "%s: %llu keys do not fit device %zu at once, "
                            "and a bit range is not sorted out of core (its merge would "
                            "compare whole keys)", a->name, (unsigned long long)j->req.n, d);
            continue;
        }
        if (c.chunk_n)
            c.ms = sched_ooc_ms(s, (int)d, a, &j->req, c.ms, c.chunk_n);
        double cost = sched_route_backlog(s, (int)d) + c.ms;
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
            found = 1;
        }
    }
    if (found) {
        apply(j, &best);
        return 0;
    }
    if (rc < 0)
        return rc;     /* the algorithm's own reason, e.g. local memory */
    if (j->device >= 0 && !tried)
        return gs_err_set(err, GS_ENODEV, "device %d is not served (%zu devices; see the "
                          "info op)", j->device, s->ndev);
    if (!tried)
        return gs_err_set(err, GS_ENODEV, "%s needs an OpenCL device and none is served",
                          a->name);
    /* Devices exist but are resting or lost this algorithm: answer anyway. */
    host_cand(s, &j->req, GS_ROUTE_FALLBACK, &best);
    apply(j, &best);
    snprintf(j->fallback, sizeof j->fallback, "%s is disabled on the device(s) after "
             "failures; served by the host sort", a->name);
    return 0;
}

/* c into *best where it finishes sooner (its route's backlog and its own
 * predicted time; *have: best holds one). */
static void keep_sooner(gs_sched *s, const cand *c, cand *best, double *bcost, int *have)
{
    double cost = sched_route_backlog(s, c->dev) + c->ms;
    if (!*have || cost < *bcost) {
        *best = *c;
        *bcost = cost;
        *have = 1;
    }
}

/* Whether device d may take j: served, and the one j names (or is
 * scoped to, gs_job.scope_dev) if any. */
static int in_scope(const gs_sched *s, const gs_job *j, size_t d)
{
    if (!s->devs[d].enabled)
        return 0;
    if (j->device >= 0)
        return (size_t)j->device == d;
    return j->scope_dev <= 0 || (size_t)(j->scope_dev - 1) == d;
}

/* Why j, which asked for a split, is not split: `what` (its kind, in the
 * plural) are not. */
static void say_unsplit(gs_job *j, const char *what)
{
    if (j->split_ask > 0)
        snprintf(j->split_why, sizeof j->split_why, "%s are not split over devices", what);
}

/* j by its kind's plan (shape_plan_cand) on the devices in scope, the
 * soonest with their queues; 1 when one had a row for it (applied).
 * Segments may then go over several devices whose rows send them there,
 * cut on segment borders (gs_split.c); top-k is not split. */
static int planned_shape(gs_sched *s, gs_job *j, gs_plans_kind kind)
{
    cand best = { 0 }, c, alt[64];
    size_t nalt = 0;
    int have = 0;
    double bcost = 0;
    for (size_t d = 0; d < s->ndev && nalt < 63; d++)
        if (in_scope(s, j, d) && shape_plan_cand(s, (int)d, kind, &j->req, &c) == 0) {
            keep_sooner(s, &c, &best, &bcost, &have);
            alt[nalt++] = c;
        }
    if (!have)
        return 0;
    apply(j, &best);
    if (kind == GS_PK_SEGS) {
        host_cand(s, &j->req, GS_ROUTE_DEFAULT, &alt[nalt++]);
        sched_split_route(s, j, alt, nalt, bcost);
    } else {
        say_unsplit(j, "top-k requests");
    }
    return 1;
}

static int route_locked(gs_sched *s, gs_job *j, gs_err *err)
{
    j->fallback[0] = '\0';
    j->split_why[0] = '\0';
    j->nparts = 0;
    j->t_submit = gs_now_ms();
    if (j->device >= 0 && ((size_t)j->device >= s->ndev || !s->devs[j->device].enabled))
        return gs_err_set(err, GS_ENODEV, "device %d is not served (%zu devices; see the "
                          "info op)", j->device, s->ndev);
    if (j->algorithm[0] && strcmp(j->algorithm, "auto")) {
        if (j->split_ask > 0)   /* a split runs each device's own choice */
            snprintf(j->split_why, sizeof j->split_why, "the request names its algorithm");
        return route_override(s, j, err);
    }
    if (j->has_params)
        return gs_err_set(err, GS_EINVAL, "params need an algorithm");
    cand tc;
    if (j->device >= 0 && ((j->req.shape.topk && topk_cand(s, j->device, &j->req, &tc) == 0) ||
                           (j->req.shape.segments &&
                            segs_cand(s, j->device, &j->req, &tc) == 0))) {
        /* on the device the client named: top-k its select (not a sort),
         * segments its bitonic */
        apply(j, &tc);
        if (j->split_ask > 0)
            snprintf(j->split_why, sizeof j->split_why, "the request names a device");
        return 0;
    }
    /* 8-bit keys alone, many: counted on the host pool (reading and
     * writing each key once, gs_narrow_sort.h) rather than sent to a device
     * as 16-bit codes encoded and decoded on the host (below, and for
     * 16-bit keys, the plan decides: see the flat route) */
    const int narrow_many = j->narrow.dt && gs_narrow_row(j->narrow.dt)->bytes == 1 &&
                            j->req.shape.payload == GS_PL_NONE && gs_shape_flat(&j->req.shape) &&
                            j->req.n >= NARROW_DEVICE_BELOW;
    /* Top-k of one array, and segments, planned: the fastest of the
     * devices' rows for them (their select or bitonic in one launch, or the
     * host's) with each device's queue; no device with a row: the rules
     * below */
    if (((j->req.shape.topk && j->req.shape.rows <= 1) || j->req.shape.segments) &&
        j->device < 0 && !j->untuned &&
        planned_shape(s, j, j->req.shape.topk ? GS_PK_TOPK : GS_PK_SEGS))
        return 0;
    if ((j->req.shape.topk || j->req.shape.segments || narrow_many) && j->device < 0) {
        /* Top-k: the host's select (gs_select.c) reads the keys once or
         * twice and sorts k of them; a device would sort them all.
         * Segments, with no plan for them: the host pool sorts them side
         * by side (host_rows.c). A client that names a device or an
         * algorithm gets that (top-k on a named device: its select,
         * topk_cand; segments: its bitonic, segs_cand, or segment by
         * segment) */
        cand host;
        host_cand(s, &j->req, GS_ROUTE_DEFAULT, &host);
        apply(j, &host);
        if (j->req.shape.segments && j->split_ask > 0)
            snprintf(j->split_why, sizeof j->split_why, "no device's plan sends segments of "
                     "this shape to it (gsortd --audit-plan --shapes segs measures them)");
        else
            say_unsplit(j, j->req.shape.topk ? "top-k requests" : "8- and 16-bit keys");
        return 0;
    }
    if (j->req.shape.rows > 1) {
        /* Rows: a GPU's one launch for all of them, or radix's one
         * sequence of launches for long rows (rows_cand), where the
         * device is the choice for n keys, the host pool side by side
         * (gs_sort.c) otherwise, or when the device's queue makes the host
         * sooner (as for flat requests below); a device's plan would take
         * them one after another. A client that names an algorithm gets it;
         * one that names a device gets it, row by row where bitonic
         * cannot. */
        cand best, host, c, ralt[64];
        size_t nralt = 0;
        int have = 0;
        double bcost = 0;
        host_cand(s, &j->req, GS_ROUTE_DEFAULT, &host);
        for (size_t d = 0; d < s->ndev && nralt < 63; d++) {
            /* the device's rows plan where it has one (its route may be the
             * host's), else the rules (rows_cand) */
            if (!in_scope(s, j, d) ||
                ((j->untuned || j->device >= 0 ||
                  shape_plan_cand(s, (int)d, GS_PK_ROWS, &j->req, &c) < 0) &&
                 rows_cand(s, (int)d, &j->req, &c) < 0))
                continue;
            keep_sooner(s, &c, &best, &bcost, &have);
            ralt[nralt++] = c;
        }
        if (!have) {
            best = host;
        } else if (j->device < 0 && bcost > best.ms && host.ms < bcost) {
            best = host;            /* the device's queue: the host is sooner */
            best.how = GS_ROUTE_BUSY;
        }
        if (have || j->device < 0) {
            apply(j, &best);
            /* several devices at once, on row borders (gs_split.c); top-k
             * rows are not split */
            if (!j->req.shape.topk) {
                ralt[nralt++] = host;
                sched_split_route(s, j, ralt, nralt, sched_route_backlog(s, best.dev) + best.ms);
            } else {
                say_unsplit(j, "top-k rows");
            }
            return 0;
        }
    }

    /* The plan: the fastest of the devices' own choices when idle. 8- and
     * 16-bit keys go as the 32-bit words a device sorts (a radix sort of
     * their code's bits alone, gs_sched.c); keys alone that the host takes
     * are counted there instead. */
    cand planned, c, alt[64];
    size_t nalt = 0;
    int have = 0;
    for (size_t d = 0; d < s->ndev && nalt < 63; d++) {
        if (!in_scope(s, j, d))
            continue;
        if (device_cand(s, (int)d, &j->req, j->untuned, &c, 0) < 0)
            continue;
        alt[nalt++] = c;
        if (!have || c.ms < planned.ms) {
            planned = c;
            have = 1;
        }
    }
    if (!have) {
        int any = 0;
        for (size_t d = 0; d < s->ndev; d++)
            any |= s->devs[d].enabled;
        host_cand(s, &j->req, any ? GS_ROUTE_FALLBACK : GS_ROUTE_DEFAULT, &planned);
        if (any)
            snprintf(j->fallback, sizeof j->fallback, "no device can serve this request now "
                     "(resting after failures, or beyond its limits); served by the host sort");
    }
    host_cand(s, &j->req, planned.how, &alt[nalt++]);

    /* Busy: another route predicted to finish sooner. */
    double pcost = sched_route_backlog(s, planned.dev) + planned.ms;
    cand chosen = planned;
    if (pcost > planned.ms)
        for (size_t i = 0; i < nalt; i++) {
            double cost = sched_route_backlog(s, alt[i].dev) + alt[i].ms;
            if (cost < pcost && alt[i].dev != planned.dev) {
                pcost = cost;
                chosen = alt[i];
                chosen.how = GS_ROUTE_BUSY;
            }
        }
    apply(j, &chosen);
    /* Large: several devices at once, when predicted sooner (gs_split.c);
     * rows are not cut across; segments reach here only on a device the
     * client named, which the split declines saying so */
    if (gs_shape_flat(&j->req.shape) || j->req.shape.segments)
        sched_split_route(s, j, alt, nalt, pcost);
    else
        say_unsplit(j, j->req.shape.topk ? "top-k requests" : "rows");
    return 0;
}

/* ---- the crossover the info op announces ---- */

/* The device that would sort n keys of r's shape when all are idle (the
 * fastest predicted of the devices' own choices that is a device route);
 * -1: every device's own choice is the host sort. Takes s->mu for each
 * size alone: routing waits for one lookup, not the whole search. */
static int first_device(gs_sched *s, gs_sort_req *r, uint64_t n)
{
    r->n = n;
    int best = -1;
    double best_ms = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t d = 0; d < s->ndev; d++) {
        cand c;
        if (!s->devs[d].enabled || device_cand(s, (int)d, r, 0, &c, 1) < 0 || c.dev < 0)
            continue;
        if (best < 0 || c.ms < best_ms) {
            best = c.dev;
            best_ms = c.ms;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return best;
}

/* Sizes past this are not asked about (2^40 keys: terabytes). */
#define CROSSOVER_MAX_LOG2 40

void gs_sched_crossover(gs_sched *s, const gs_plans_key *k, uint64_t *below, int *dev)
{
    gs_sort_req r = { .shape = { .dtype = gs_dtype_unsigned(k->key_bits),
                                 .payload = k->payload, .stable = k->stable,
                                 .plan16 = k->key_bits == 16 } };
    uint64_t dn = UINT64_MAX;
    int dd = -1;
    /* the first power of two a device takes, then the first size between
     * it and the one before (a plan's buckets meet halfway) */
    for (int e = 0; e <= CROSSOVER_MAX_LOG2 && dd < 0; e++) {
        uint64_t hi = (uint64_t)1 << e;
        if ((dd = first_device(s, &r, hi)) < 0)
            continue;
        uint64_t lo = hi / 2;       /* the host's */
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            int md = first_device(s, &r, mid);
            if (md >= 0) {
                hi = mid;
                dd = md;
            } else {
                lo = mid;
            }
        }
        dn = hi;
    }
    /* the host sort's own threads (one per CPU by default), from two chunks on */
    uint64_t hn = gs_hostpool_cpus() > 1 ? (uint64_t)gs_host_mt_min_keys() : UINT64_MAX;
    *below = dn < hn ? dn : hn;
    *dev = dn < hn ? dd : -1;
}

int gs_sched_route(gs_sched *s, gs_job *j, gs_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = route_locked(s, j, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}
