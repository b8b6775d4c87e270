/* The scheduler's workers (gs_sched.h): every enabled device has a queue
 * and a worker thread per lane (device_lanes): each lane enqueues on a
 * command queue of its own, so one request's upload overlaps another's
 * kernels or download (issue 37); the first lane alone measures the
 * device's defaults and builds its planned programs, the others wait for
 * that and for room in the device's memory (gs_queue.c). The host sort has
 * a pool of threads sharing one queue; OpenCL work never runs on the
 * event-loop thread. A device
 * run that fails falls back to the host sort in the worker, so the request
 * still gets a correct answer; a build failure disables that algorithm on
 * the device and repeated failures rest the device for a while. Finished
 * jobs go back to the event loop that submitted them through its sink (a
 * uv_async_t), where the learned rates the router predicts with are
 * updated. Which queue a job goes to is gs_route.c's decision; the
 * queues, the hand-back and the learned rates are gs_queue.c's. The
 * routing state is under the scheduler's lock (several loops route), the
 * queues under theirs, and the device health flags are atomics written by
 * workers; the state the files share is in gs_sched_int.h. The floors,
 * each calling only those below it: gs_route.c and this file (neither
 * calls the other), gs_split.c (the split decision and its parts),
 * gs_warm.c (a device's planned programs built before they serve),
 * gs_predict.c, gs_queue.c. */
#include "config.h"
#include "gs_sched.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_algos.h"
#include "gs_ooc.h"
#include "gs_clrun.h"
#include "gs_hooks.h"
#include "gs_log.h"
#include "gs_sched_int.h"
#include "gs_bufpool.h"
#include "gs_time.h"

#define REST_MS 30000.0          /* a device that failed 3 times in a row rests this long */
#define FAILS_TO_REST 3

typedef struct worker_arg {
    gs_sched *s;
    int dev;
    unsigned lane;      /* a device's: 0 its own queue, 1 its second */
} worker_arg;

/* A worker is done with j: back to its loop, or, for a part of a split,
 * to the split (the last part merges and hands the request back). */
static void job_done(gs_sched *s, gs_job *j)
{
    if (j->parent)
        sched_split_part_done(s, j);
    else
        sched_hand_back(j);
}

/* A job is done, on its sink's loop thread: learn from it (a split's
 * parts taught their devices already), then its callback. */
static void finish(gs_sched *s, gs_job *j)
{
    if (j->how != GS_ROUTE_SPLIT && j->dev < 0)
        sched_learn(s, &s->host_rate[gs_dtype_size(j->req.shape.dtype) == 8], j);
    else if (j->learn && j->dev >= 0)
        sched_learn(s, &s->devs[j->dev].rate, j);
    atomic_fetch_sub(&s->inflight, 1);
    j->sink->done(j, j->sink->ud);
}

static void on_async(uv_async_t *h)
{
    gs_sched_sink *k = h->data;
    pthread_mutex_lock(&k->mu);
    gs_job *j = k->head;
    k->head = k->tail = NULL;
    pthread_mutex_unlock(&k->mu);
    while (j) {
        gs_job *next = j->next;
        finish(k->s, j);
        j = next;
    }
}

int gs_sched_sink_init(gs_sched_sink *k, gs_sched *s, uv_loop_t *loop, gs_sched_done_fn done,
                       void *ud, gs_err *err)
{
    memset(k, 0, sizeof *k);
    k->s = s;
    k->done = done;
    k->ud = ud;
    if (pthread_mutex_init(&k->mu, NULL) != 0)
        return gs_err_set(err, GS_ENOMEM, "cannot create a lock");
    int rc = uv_async_init(loop, &k->async, on_async);
    if (rc < 0) {
        pthread_mutex_destroy(&k->mu);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    k->async.data = k;
    return 0;
}

static void on_sink_closed(uv_handle_t *h)
{
    gs_sched_sink *k = h->data;
    pthread_mutex_destroy(&k->mu);
}

void gs_sched_sink_close(gs_sched_sink *k)
{
    on_async(&k->async);
    uv_close((uv_handle_t *)&k->async, on_sink_closed);
}

/* ---- workers ---- */

/* One sort of the job's route: a lexsort's group, or the whole request. */
typedef struct route_run {
    gs_job *j;
    gs_sort_ctx *ctx;
} route_run;

static int run_route(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    route_run *r = arg;
    gs_job *j = r->j;
    if (j->dev < 0)
        return gs_sort_run(j->algo, r->ctx, req, &j->run_params, st, err);
    return gs_ooc_sort(j->algo, r->ctx, req, &j->run_params, j->chunk_n, st, err);
}

/* The job's sort: a lexsort packs its keys and sorts each group by the
 * route, 8- and 16-bit keys are encoded into words the route sorts. */
static int run_job(gs_job *j, gs_sort_ctx *ctx)
{
    route_run r = { j, ctx };
    if (j->lex.lx)
        return gs_lexsort_run(&j->lex, run_route, &r, &j->st, &j->err);
    if (j->narrow.dt) {
        /* keys alone on the host route, no algorithm named or the host
         * sort (whose parameters a count has no use for; the tuner times
         * it as the host's candidate for these keys): counted */
        j->narrow.counting = j->dev < 0 && (!j->algorithm[0] || j->algo == &gs_algo_host);
        /* the keys as the route's algorithm takes them: 16-bit keys as
         * they are on a device that sorts them whole (no encoding pass,
         * half the bytes of words over the bus and in every pass), 8-bit
         * ones as 16-bit codes there; else words, the code's digits alone
         * where the algorithm sorts by a bit range (2 passes of 16-bit keys
         * whatever their size, where small ones, without the histogram's
         * read-back, ran all 4); set on every run, as a fallback's
         * algorithm may differ */
        gs_narrow_fit(&j->narrow, j->algo,
                      j->dev >= 0 && (j->chunk_n == 0 || j->chunk_n >= j->narrow.req.n));
        /* the words lie in the daemon's scratch, not the registered memfd */
        if (!j->narrow.raw)
            ctx->host_pinned = 0;
        return gs_narrow_run(&j->narrow, run_route, &r, &j->st, &j->err);
    }
    return run_route(&r, &j->req, &j->st, &j->err);
}

static void run_host(gs_sched *s, gs_job *j)
{
    gs_sort_ctx ctx = { .pc = s->pc };
    gs_err_clear(&j->err);
    j->rc = run_job(j, &ctx);
}

/* After a failed device run: can the request still be served elsewhere?
 * Only while the caller's arrays still hold the input. */
static int device_failed(gs_sched *s, int d, gs_job *j)
{
    sdev *sd = &s->devs[d];
    const gs_dev *dev = sd->dev;
    if (j->rc == GS_EBUILD) {
        int ai = sched_algo_index(j->algo);
        if (!atomic_exchange(&sd->broken[ai], 1))
            GS_WARN("device %d (%s): %s failed to build; disabled there until a reload "
                    "(SIGHUP) or restart", d, dev->info.name, j->algo->name);
    }
    int fails = atomic_fetch_add(&sd->fails, 1) + 1;
    if (fails >= FAILS_TO_REST) {
        atomic_store(&sd->rest_until, gs_now_ms() + REST_MS);
        GS_WARN("device %d (%s): %d failed runs in a row; resting it for %.0f s (requests "
                "go elsewhere)", d, dev->info.name, fails, REST_MS / 1000);
    }
    if (j->st.output_touched) {
        GS_ERROR("device %d (%s): %s failed while copying results back: %s; the request's "
                 "data is undefined and it is answered with an error", d, dev->info.name,
                 j->algo->name, j->err.msg);
        gs_err_prefix(&j->err, "device failed while writing the result back (data "
                      "undefined, send again): ");
        j->rc = GS_EIO;
        return 0;
    }
    /* The reason is clipped to the reply field; the log gets all of it. */
    GS_WARN("%s on device %d (%s) failed: %s; serving it with the host sort", j->algo->name, d,
            dev->info.name, j->err.msg);
    snprintf(j->fallback, sizeof j->fallback, "%s on device %d failed: %.400s", j->algo->name,
             d, j->err.msg);
    return 1;
}

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    gs_sched *s = wa->s;
    int d = wa->dev;
    unsigned lane = wa->lane;
    free(wa);
    queue *q = d >= 0 ? &s->devs[d].q : &s->hostq;
    cl_command_queue lane_q = NULL;     /* NULL: the device's own queue */
    if (d >= 0 && lane == 0) {
        sched_defaults_measure(s, d);   /* requests routed here meanwhile wait */
        atomic_store(&s->devs[d].dflt_known, 1);
        if (s->devs[d].dflt_measure)
            sched_measured(&s->devs[d]);
        if (s->devs[d].nlanes > 1)
            sched_queue_unhold(q);      /* the other lane may start */
    } else if (d >= 0) {
        gs_err e;
        gs_err_clear(&e);
        if (gs_dev_lane(s->devs[d].dev, lane, &lane_q, &e) < 0) {
            GS_WARN("device %d (%s): no queue for lane %u (%s); %u request%s at a time there", d,
                    s->devs[d].dev->info.name, lane + 1, e.msg, lane, lane > 1 ? "s" : "");
            return NULL;
        }
    }
    const gs_hooks *hk = gs_hooks_get();
    unsigned slow_ms = d >= 0 && hk->slow_dev == d ? hk->slow_ms : 0;
    gs_job *j;
    sched_warm *warm = NULL;
    int lane_used = 0;
    while ((j = sched_queue_pop(q, d >= 0 && lane == 0 ? &warm : NULL, lane)) || warm) {
        if (!j) {
            sched_warm_run(s, d, warm);
            warm = NULL;
            sched_queue_unhold(q);
            continue;
        }
        j->t_start = gs_now_ms();
        if (d >= 0 && lane > 0 && !lane_used) {
            lane_used = 1;      /* said once: the lanes work (tests/daemon/sched/test_balance) */
            GS_INFO("device %d (%s): its lane %u took a request (%u may run at once)", d,
                    s->devs[d].dev->info.name, lane + 1, lane + 1);
        }
        if (j->dev < 0) {
            run_host(s, j);
            sched_queue_finish(q, j);
            job_done(s, j);
            continue;
        }
        gs_sort_ctx ctx = { .dev = s->devs[d].dev, .pc = s->pc, .lean = 1, .queue = lane_q };
        gs_err_clear(&j->err);
        if (j->pin && (!j->pin_once || j->chunk_n) && gs_dev_open(s->devs[d].dev, &j->err) == 0)
            ctx.host_pinned = gs_pin_ensure(j->pin, s->devs[d].dev) == GS_PIN_PINNED;
        j->rc = run_job(j, &ctx);
        if (slow_ms && j->rc == 0) {   /* test hook: a slower device */
            struct timespec ts = { .tv_sec = slow_ms / 1000,
                                   .tv_nsec = (long)(slow_ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
            j->st.wall_ms += slow_ms;
        }
        sched_queue_finish(q, j);
        if (j->rc == 0) {
            atomic_store(&s->devs[d].fails, 0);
        } else if (j->rc != GS_EINVAL && device_failed(s, d, j)) {
            /* Re-route to the host pool; the job keeps its submit time so
             * the reply shows the whole wait. */
            j->dev = -1;
            j->algo = gs_algo_find("host");
            gs_params_clear(&j->run_params);
            j->how = GS_ROUTE_FALLBACK;
            j->chunk_n = 0;
            memset(&j->st, 0, sizeof j->st);
            sched_queue_push(&s->hostq, j);
            continue;
        }
        job_done(s, j);
    }
    return NULL;
}

static int start_worker(gs_sched *s, int d, unsigned lane, pthread_t *th, gs_err *err)
{
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa)
        return gs_err_set(err, GS_ENOMEM, "out of memory starting a worker");
    wa->s = s;
    wa->dev = d;
    wa->lane = lane;
    if (pthread_create(th, NULL, worker_main, wa) != 0) {
        free(wa);
        return gs_err_set(err, GS_ENOMEM, "cannot start a worker thread");
    }
    return 0;
}

/* ---- start / stop ---- */

/* "all", "none" or a comma list of indices: is device i chosen? */
static int device_chosen(const char *spec, size_t i)
{
    if (!spec || !spec[0] || !strcmp(spec, "all"))
        return 1;
    if (!strcmp(spec, "none"))
        return 0;
    const char *p = spec;
    while (*p) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            return 0;
        if (v == i)
            return 1;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return 0;
    }
    return 0;
}

int gs_sched_start(gs_sched **out, gs_dev *devs, size_t ndev, const gs_sched_opts *o,
                   gs_err *err)
{
    *out = NULL;
    gs_sched *s = calloc(1, sizeof *s);
    if (!s || (ndev && !(s->devs = calloc(ndev, sizeof *s->devs))) ||
        !(s->host_th = calloc(o->host_threads ? o->host_threads : 1, sizeof *s->host_th))) {
        if (s)
            free(s->devs);
        free(s);
        return gs_err_set(err, GS_ENOMEM, "out of memory starting the scheduler");
    }
    s->ndev = ndev;
    s->nhost = o->host_threads ? o->host_threads : 1;
    s->pc = o->pc;
    s->host_rate[0].ms_per_key = 1e-5;   /* 10 ns per 32-bit key until measured */
    s->host_rate[1].ms_per_key = 2e-5;
    s->test_split = gs_hooks_get()->split_always;
    int rc = 0;
    if (sched_queue_init(&s->hostq) || pthread_mutex_init(&s->mu, NULL)) {
        free(s->host_th);
        free(s->devs);
        free(s);
        return gs_err_set(err, GS_ENOMEM, "cannot create the scheduler's locks");
    }
    *out = s;

    for (size_t i = 0; i < ndev; i++) {
        sdev *sd = &s->devs[i];
        sd->dev = &devs[i];
        sd->db_id = -1;
        sd->rate.ms_per_key = devs[i].info.type & CL_DEVICE_TYPE_GPU ? 2e-6 : 2e-5;
        sched_defaults_init(sd);
        sched_queue_init(&sd->q);
        if (!device_chosen(o->devices, i)) {
            GS_INFO("device %zu (%s): not used (devices = %s)", i, devs[i].info.name, o->devices);
            continue;
        }
        gs_err e;
        gs_err_clear(&e);
        if (gs_dev_open(&devs[i], &e) < 0) {
            GS_WARN("device %zu (%s): cannot open it, not used: %s", i, devs[i].info.name, e.msg);
            continue;
        }
        /* lanes: auto, two on a GPU (its copy engines and compute overlap),
         * one elsewhere (a CPU device shares the host's cores) */
        unsigned nl = o->device_lanes ? o->device_lanes
                                      : devs[i].info.type & CL_DEVICE_TYPE_GPU ? 2 : 1;
        sd->nlanes = nl > SCHED_LANES_MAX ? SCHED_LANES_MAX : nl;
        if (sd->nlanes > 1) {
            sched_lanes_cap(s, (int)i);
            if (sd->dflt_measure)
                sd->q.hold = 1;     /* the first lane measures alone */
        }
        if (sd->dflt_measure) {
            /* Until its defaults are measured (a first program build: ~14 s
             * on a fresh H200) the device is busy for the router, which
             * sends what the host finishes sooner there, and not ready. */
            sd->q.warm_ms = SCHED_MEASURE_MS;
            atomic_store(&sd->warming, 1);
        }
        for (unsigned l = 0; l < sd->nlanes; l++) {
            if ((rc = start_worker(s, (int)i, l, &sd->th[l], err)) < 0)
                return rc;
            sd->started++;
        }
        sd->enabled = 1;
        GS_INFO("device %zu (%s, %s): serving, %u request%s at a time", i, devs[i].info.name,
                devs[i].info.driver, sd->nlanes, sd->nlanes > 1 ? "s" : "");
    }
    for (unsigned t = 0; t < s->nhost; t++) {
        if ((rc = start_worker(s, -1, 0, &s->host_th[t], err)) < 0)
            return rc;
        s->host_started++;
    }
    return 0;
}

void gs_sched_stop(gs_sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ndev; i++) {
        sdev *sd = &s->devs[i];
        sched_queue_stop(&sd->q);
        for (unsigned l = 0; l < sd->started; l++)
            pthread_join(sd->th[l], NULL);
    }
    /* Device workers may have pushed fallbacks to the host queue: stop it last. */
    sched_queue_stop(&s->hostq);
    for (unsigned t = 0; t < s->host_started; t++)
        pthread_join(s->host_th[t], NULL);
    for (size_t i = 0; i < s->ndev; i++) {
        pthread_mutex_destroy(&s->devs[i].q.mu);
        pthread_cond_destroy(&s->devs[i].q.cv);
    }
    pthread_mutex_destroy(&s->hostq.mu);
    pthread_cond_destroy(&s->hostq.cv);
    pthread_mutex_destroy(&s->mu);
    free(s->host_th);
    for (size_t i = 0; i < s->ndev; i++) {
        gs_plans_free(s->devs[i].plans);
        sched_warm_free(&s->devs[i]);
    }
    free(s->devs);
    free(s);
}

/* ---- submitting, and what the info op shows ---- */

void gs_sched_set_inline_max(gs_sched *s, size_t n)
{
    atomic_store_explicit(&s->inline_max, n, memory_order_relaxed);
}

void gs_sched_submit(gs_sched *s, gs_job *j)
{
    atomic_fetch_add(&s->inflight, 1);
    j->st.output_touched = 0;
    if (j->how == GS_ROUTE_SPLIT && sched_split_submit(s, j) == 0)
        return;     /* the parts are queued; the last one done hands j back */
    if (j->dev < 0 && j->req.n <= atomic_load_explicit(&s->inline_max, memory_order_relaxed)) {
        /* small enough to sort here: done runs now, on this thread */
        j->t_start = gs_now_ms();
        run_host(s, j);
        j->t_done = gs_now_ms();
        finish(s, j);
        return;
    }
    sched_queue_push(j->dev >= 0 ? &s->devs[j->dev].q : &s->hostq, j);
}

size_t gs_sched_inflight(const gs_sched *s)
{
    return atomic_load(&s->inflight);
}

size_t gs_sched_ndev(const gs_sched *s)
{
    return s->ndev;
}

void gs_sched_trim(gs_sched *s, double idle_ms)
{
    for (size_t i = 0; i < s->ndev; i++)
        if (s->devs[i].enabled)
            gs_bufpool_trim(s->devs[i].dev, idle_ms);
}

uint64_t gs_sched_host_pooled(gs_sched *s)
{
    uint64_t b = 0;
    for (size_t i = 0; i < s->ndev; i++)
        if (s->devs[i].enabled && (s->devs[i].dev->info.type & CL_DEVICE_TYPE_CPU)) {
            gs_bufpool_stats st;
            gs_bufpool_stats_get(s->devs[i].dev, &st);
            b += st.bytes;
        }
    return b;
}

void gs_sched_trim_host(gs_sched *s)
{
    for (size_t i = 0; i < s->ndev; i++)
        if (s->devs[i].enabled && (s->devs[i].dev->info.type & CL_DEVICE_TYPE_CPU))
            gs_bufpool_trim(s->devs[i].dev, 0);
}

int gs_sched_defaults_known(gs_sched *s, size_t i)
{
    return i < s->ndev && s->devs[i].enabled && atomic_load(&s->devs[i].dflt_known);
}

void gs_sched_devstat_get(gs_sched *s, size_t i, gs_sched_devstat *out)
{
    sdev *sd = &s->devs[i];
    double b;
    out->dev = sd->dev;
    out->enabled = sd->enabled;
    out->healthy = sd->enabled && sched_dev_healthy(sd);
    out->ready = sd->enabled && !atomic_load(&sd->warming);
    pthread_mutex_lock(&s->mu);
    out->plan_entries = sd->plan_entries;
    out->db_id = sd->db_id;
    pthread_mutex_unlock(&s->mu);
    out->tuned = out->plan_entries > 0;
    out->lanes = sd->enabled ? sd->nlanes : 0;
    sched_queue_load(&sd->q, &out->queued, &b);
}

unsigned gs_sched_host_threads(const gs_sched *s)
{
    return s->nhost;
}

size_t gs_sched_untuned(gs_sched *s, int *idx, size_t cap, int no_cpu)
{
    size_t n = 0;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->ndev && n < cap; i++)
        if (s->devs[i].enabled && s->devs[i].plan_entries == 0 &&
            !(no_cpu && (s->devs[i].dev->info.type & CL_DEVICE_TYPE_CPU)))
            idx[n++] = (int)i;
    pthread_mutex_unlock(&s->mu);
    return n;
}
