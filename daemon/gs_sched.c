/* Routing, per-device workers, the host pool and fallback. The loop thread
 * owns the database handle and all routing state except the queues (mutex)
 * and the device health flags (atomics, written by workers). Predictions
 * come from the plan's measured time scaled linearly from its bucket to n,
 * or, without a plan, from a per-route rate (ms per key) learned from the
 * runs served so far. */
#include "config.h"
#include "gs_sched.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_clrun.h"
#include "gs_log.h"
#include "gs_tune.h"
#include "gs_time.h"

#define MAX_ALGOS 16
#define REST_MS 30000.0          /* a device that failed 3 times in a row rests this long */
#define FAILS_TO_REST 3
#define HOST_SMALL_LOG2 15       /* no plan: below 2^15 keys the host sort wins */

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gs_job *head, *tail;
    unsigned len;            /* waiting + running */
    double backlog_ms;       /* predicted time of waiting + running jobs */
    int stop;
} queue;

typedef struct sdev {
    gs_dev *dev;
    int enabled;
    queue q;
    pthread_t th;
    int started;
    atomic_int broken[MAX_ALGOS];    /* build failure: algorithm disabled here */
    atomic_int fails;                /* consecutive failed runs */
    _Atomic double rest_until;       /* gs_now_ms(); 0: healthy */
    /* loop thread only */
    long long db_id;
    long plan_entries;
    int warned_noplan;               /* no plan at all: said once per device */
    unsigned char warned_shape[2][GS_PL_COUNT][2];   /* [64-bit keys][payload][stable] */
    double rate_ms_per_key;          /* learned, untuned routes */
} sdev;

struct gs_sched {
    uv_loop_t *loop;
    sdev *devs;
    size_t ndev;
    queue hostq;
    pthread_t *host_th;
    unsigned nhost, host_started;
    gs_pcache *pc;
    gs_db *db;
    uv_async_t async;
    pthread_mutex_t done_mu;
    gs_job *done_head, *done_tail;
    gs_sched_done_fn done;
    void *ud;
    size_t inflight;                 /* loop thread */
    double host_rate[2];             /* ms per key, 32/64-bit keys, learned */
};

typedef struct worker_arg {
    gs_sched *s;
    int dev;
} worker_arg;

static int algo_index(const gs_algo *a)
{
    for (size_t i = 0; i < gs_algo_count() && i < MAX_ALGOS; i++)
        if (gs_algo_at(i) == a)
            return (int)i;
    return 0;
}

/* ---- queues ---- */

static int queue_init(queue *q)
{
    memset(q, 0, sizeof *q);
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(&q->cv, NULL) != 0) {
        pthread_mutex_destroy(&q->mu);
        return -1;
    }
    return 0;
}

static void queue_push(queue *q, gs_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->len++;
    q->backlog_ms += j->predicted_ms;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Next job, or NULL once stopped and empty. */
static gs_job *queue_pop(queue *q)
{
    pthread_mutex_lock(&q->mu);
    while (!q->head && !q->stop)
        pthread_cond_wait(&q->cv, &q->mu);
    gs_job *j = q->head;
    if (j) {
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return j;
}

static void queue_finish(queue *q, const gs_job *j)
{
    pthread_mutex_lock(&q->mu);
    q->len--;
    q->backlog_ms -= j->predicted_ms;
    if (q->len == 0 || q->backlog_ms < 0)
        q->backlog_ms = 0;
    pthread_mutex_unlock(&q->mu);
}

static void queue_load(queue *q, unsigned *len, double *backlog)
{
    pthread_mutex_lock(&q->mu);
    *len = q->len;
    *backlog = q->backlog_ms;
    pthread_mutex_unlock(&q->mu);
}

static void queue_stop(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* ---- handing finished jobs back to the loop ---- */

static void hand_back(gs_sched *s, gs_job *j)
{
    j->t_done = gs_now_ms();
    j->next = NULL;
    pthread_mutex_lock(&s->done_mu);
    if (s->done_tail)
        s->done_tail->next = j;
    else
        s->done_head = j;
    s->done_tail = j;
    pthread_mutex_unlock(&s->done_mu);
    uv_async_send(&s->async);
}

static void learn(double *rate, const gs_job *j)
{
    if (j->rc < 0 || j->req.n < 4096 || j->st.wall_ms <= 0)
        return;
    double r = j->st.wall_ms / (double)j->req.n;
    *rate = *rate > 0 ? 0.8 * *rate + 0.2 * r : r;
}

static void on_async(uv_async_t *h)
{
    gs_sched *s = h->data;
    pthread_mutex_lock(&s->done_mu);
    gs_job *j = s->done_head;
    s->done_head = s->done_tail = NULL;
    pthread_mutex_unlock(&s->done_mu);
    while (j) {
        gs_job *next = j->next;
        s->inflight--;
        if (j->dev < 0)
            learn(&s->host_rate[gs_dtype_size(j->req.dtype) == 8], j);
        else if (!strcmp(j->plan, "default"))
            learn(&s->devs[j->dev].rate_ms_per_key, j);
        s->done(j, s->ud);
        j = next;
    }
}

/* ---- workers ---- */

static void run_host(gs_sched *s, gs_job *j)
{
    gs_sort_ctx ctx = { NULL, s->pc };
    gs_err_clear(&j->err);
    j->rc = gs_sort_run(j->algo, &ctx, &j->req, &j->run_params, &j->st, &j->err);
}

/* After a failed device run: can the request still be served elsewhere?
 * Only while the caller's arrays still hold the input. */
static int device_failed(gs_sched *s, int d, gs_job *j)
{
    sdev *sd = &s->devs[d];
    const gs_dev *dev = sd->dev;
    if (j->rc == GS_EBUILD) {
        int ai = algo_index(j->algo);
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
    free(wa);
    queue *q = d >= 0 ? &s->devs[d].q : &s->hostq;
    gs_job *j;
    while ((j = queue_pop(q))) {
        j->t_start = gs_now_ms();
        if (j->dev < 0) {
            run_host(s, j);
            queue_finish(q, j);
            hand_back(s, j);
            continue;
        }
        gs_sort_ctx ctx = { s->devs[d].dev, s->pc };
        gs_err_clear(&j->err);
        j->rc = gs_sort_run(j->algo, &ctx, &j->req, &j->run_params, &j->st, &j->err);
        queue_finish(q, j);
        if (j->rc == 0) {
            atomic_store(&s->devs[d].fails, 0);
        } else if (j->rc != GS_EINVAL && device_failed(s, d, j)) {
            /* Re-route to the host pool; the job keeps its submit time so
             * the reply shows the whole wait. */
            j->dev = -1;
            j->algo = gs_algo_find("host");
            gs_params_clear(&j->run_params);
            j->plan = "fallback";
            memset(&j->st, 0, sizeof j->st);
            queue_push(&s->hostq, j);
            continue;
        }
        hand_back(s, j);
    }
    return NULL;
}

static int start_worker(gs_sched *s, int d, pthread_t *th, gs_err *err)
{
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa)
        return gs_err_set(err, GS_ENOMEM, "out of memory starting a worker");
    wa->s = s;
    wa->dev = d;
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

int gs_sched_start(gs_sched **out, uv_loop_t *loop, gs_dev *devs, size_t ndev,
                   const gs_sched_opts *o, gs_sched_done_fn done, void *ud, gs_err *err)
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
    s->loop = loop;
    s->ndev = ndev;
    s->nhost = o->host_threads ? o->host_threads : 1;
    s->pc = o->pc;
    s->done = done;
    s->ud = ud;
    s->host_rate[0] = 1e-5;   /* 10 ns per 32-bit key until measured */
    s->host_rate[1] = 2e-5;
    int rc = 0;
    if (queue_init(&s->hostq) || pthread_mutex_init(&s->done_mu, NULL)) {
        free(s->host_th);
        free(s->devs);
        free(s);
        return gs_err_set(err, GS_ENOMEM, "cannot create the scheduler's locks");
    }
    uv_async_init(loop, &s->async, on_async);
    s->async.data = s;
    *out = s;

    for (size_t i = 0; i < ndev; i++) {
        sdev *sd = &s->devs[i];
        sd->dev = &devs[i];
        sd->db_id = -1;
        sd->rate_ms_per_key = devs[i].info.type & CL_DEVICE_TYPE_GPU ? 2e-6 : 2e-5;
        queue_init(&sd->q);
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
        if ((rc = start_worker(s, (int)i, &sd->th, err)) < 0)
            return rc;
        sd->started = sd->enabled = 1;
        GS_INFO("device %zu (%s, %s): serving", i, devs[i].info.name, devs[i].info.driver);
    }
    for (unsigned t = 0; t < s->nhost; t++) {
        if ((rc = start_worker(s, -1, &s->host_th[t], err)) < 0)
            return rc;
        s->host_started++;
    }
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

void gs_sched_stop(gs_sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ndev; i++) {
        sdev *sd = &s->devs[i];
        queue_stop(&sd->q);
        if (sd->started)
            pthread_join(sd->th, NULL);
    }
    /* Device workers may have pushed fallbacks to the host queue: stop it last. */
    queue_stop(&s->hostq);
    for (unsigned t = 0; t < s->host_started; t++)
        pthread_join(s->host_th[t], NULL);
    on_async(&s->async);
    for (size_t i = 0; i < s->ndev; i++) {
        pthread_mutex_destroy(&s->devs[i].q.mu);
        pthread_cond_destroy(&s->devs[i].q.cv);
    }
    pthread_mutex_destroy(&s->hostq.mu);
    pthread_cond_destroy(&s->hostq.cv);
    pthread_mutex_destroy(&s->done_mu);
    free(s->host_th);
    free(s->devs);
    /* The handle lives inside the scheduler: free it once libuv is done. */
    s->async.data = s;
    uv_close((uv_handle_t *)&s->async, on_closed);
}

/* ---- plans ---- */

void gs_sched_set_db(gs_sched *s, gs_db *db)
{
    s->db = db;
    for (size_t i = 0; i < s->ndev; i++) {
        sdev *sd = &s->devs[i];
        sd->db_id = -1;
        sd->plan_entries = 0;
        sd->warned_noplan = 0;
        memset(sd->warned_shape, 0, sizeof sd->warned_shape);
        atomic_store(&sd->fails, 0);
        atomic_store(&sd->rest_until, 0.0);
        for (int a = 0; a < MAX_ALGOS; a++)
            atomic_store(&sd->broken[a], 0);
        if (!db || !sd->enabled)
            continue;
        gs_err e;
        gs_err_clear(&e);
        int64_t id;
        if (gs_db_device_id(db, &sd->dev->info, 0, &id, &e) == 0) {
            sd->db_id = id;
            if (gs_db_plan_count(db, id, &sd->plan_entries, &e) < 0)
                GS_WARN("device %zu: cannot read its plan: %s", i, e.msg);
        }
    }
}

static int dev_healthy(sdev *sd)
{
    double until = atomic_load(&sd->rest_until);
    return until == 0.0 || gs_now_ms() >= until;
}

static int usable(sdev *sd, const gs_algo *a)
{
    return sd->enabled && dev_healthy(sd) && !atomic_load(&sd->broken[algo_index(a)]);
}

typedef struct cand {
    int dev;                 /* -1 host */
    const gs_algo *algo;
    gs_params params;
    const char *plan;
    double ms;
} cand;

static double host_predict(const gs_sched *s, const gs_sort_req *r)
{
    double ms = s->host_rate[gs_dtype_size(r->dtype) == 8] * (double)r->n;
    return r->payload != GS_PL_NONE ? 1.5 * ms : ms;
}

static void host_cand(const gs_sched *s, const gs_sort_req *r, const char *plan, cand *c)
{
    c->dev = -1;
    c->algo = gs_algo_find("host");
    gs_params_clear(&c->params);
    c->plan = plan;
    c->ms = host_predict(s, r);
}

/* Why a tuned device has no plan entry for this shape, for the log: what
 * the tuner would need to cover it. */
static void shape_hint(gs_payload pl, char *buf, size_t len)
{
    double need = gs_tune_payload_budget(pl);
    if (need < 0)
        snprintf(buf, len, "gsortd --tune-all does not tune payload %s", gs_payload_name(pl));
    else if (need > 0)
        snprintf(buf, len, "gsortd --tune-all tunes payload %s with --budget %.0f or more",
                 gs_payload_name(pl), need);
    else
        snprintf(buf, len, "the last gsortd --tune-all did not get to it; run it again with a "
                 "larger --budget");
}

/* Log once per device and request shape (key width, payload kind,
 * stability: what the plan is keyed by, the size aside) that the built-in
 * defaults serve it, and why: `why` NULL means the device has a plan but
 * not for this shape. */
static void warn_shape(sdev *sd, int d, const gs_sort_req *r, int kb, const char *why)
{
    unsigned char *w = &sd->warned_shape[kb == 64][r->payload][r->stable ? 1 : 0];
    if (*w)
        return;
    *w = 1;
    char hint[160] = "";
    if (!why)
        shape_hint(r->payload, hint, sizeof hint);
    GS_WARN("device %d (%s, driver %s): %s for %d-bit keys, payload %s%s, %s%s%s; using "
            "built-in defaults for that shape%s%s%s", d, sd->dev->info.name, sd->dev->info.driver,
            why ? "the plan entry" : "no tuned plan entry", kb, gs_payload_name(r->payload),
            r->payload == GS_PL_IDX32 || r->payload == GS_PL_IDX64 ? " (argsort)" : "",
            r->stable ? "stable" : "not stable", why ? " " : "", why ? why : "",
            hint[0] ? " (" : "", hint, hint[0] ? ")" : "");
}

/* The device's own choice for this request: its tuned plan, else the
 * built-in defaults. 0, or a negative code when the device cannot serve it
 * at all (the caller then leaves it out). */
static int device_cand(gs_sched *s, int d, const gs_job *j, cand *c)
{
    sdev *sd = &s->devs[d];
    const gs_sort_req *r = &j->req;
    int kb = (int)gs_dtype_size(r->dtype) * 8;
    gs_err e;
    gs_err_clear(&e);
    gs_db_choice ch;
    c->dev = d;
    int tuned = 0;
    if (s->db && sd->db_id >= 0 && sd->plan_entries > 0) {
        int lrc = gs_db_plan_lookup(s->db, sd->db_id, kb, gs_payload_name(r->payload), r->stable,
                                    r->n, &ch, &e);
        char why[GS_ERR_MSG_MAX + 64];
        if (lrc == GS_ENOTFOUND) {
            warn_shape(sd, d, r, kb, NULL);
        } else if (lrc < 0) {
            snprintf(why, sizeof why, "cannot be read: %s", e.msg);
            warn_shape(sd, d, r, kb, why);
        } else if (!(c->algo = gs_algo_find(ch.algorithm))) {
            snprintf(why, sizeof why, "names algorithm '%s', which this gsortd does not have",
                     ch.algorithm);
            warn_shape(sd, d, r, kb, why);
        } else if (gs_db_params_from_json(ch.params, &c->params, &e) < 0) {
            snprintf(why, sizeof why, "has unusable parameters: %s", e.msg);
            warn_shape(sd, d, r, kb, why);
        } else {
            tuned = 1;
        }
    } else if (!sd->warned_noplan) {
        sd->warned_noplan = 1;
        GS_WARN("device %d (%s, driver %s): no tuned plan%s; using built-in defaults "
                "(run gsortd --tune-all, or serve with --tune-missing)", d, sd->dev->info.name,
                sd->dev->info.driver, s->db ? "" : " (no database)");
    }
    if (tuned) {
        c->plan = "tuned";
        c->ms = ch.median_ms * ((double)(r->n ? r->n : 1) / ldexp(1.0, ch.bucket));
    } else {
        c->plan = "default";
        if (r->n < ((size_t)1 << HOST_SMALL_LOG2)) {
            host_cand(s, r, "default", c);
            return 0;
        }
        c->algo = gs_algo_find("mergepath");
        c->algo->defaults(&sd->dev->info, &c->params);
        c->ms = sd->rate_ms_per_key * (double)r->n;
    }
    if (!c->algo->uses_device) {
        c->dev = -1;
        return 0;
    }
    if (!usable(sd, c->algo))
        return GS_EUNSUPPORTED;
    if (c->algo->check && c->algo->check(sd->dev, r, &c->params, &e) < 0)
        return GS_EUNSUPPORTED;
    return 0;
}

static double route_backlog(gs_sched *s, int dev)
{
    unsigned len;
    double b;
    if (dev < 0) {
        queue_load(&s->hostq, &len, &b);
        return b / s->nhost;
    }
    queue_load(&s->devs[dev].q, &len, &b);
    return b;
}

static void apply(gs_job *j, const cand *c)
{
    j->dev = c->dev;
    j->algo = c->algo;
    j->run_params = c->params;
    j->plan = c->plan;
    j->predicted_ms = c->ms;
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
    if (j->req.stable && !a->stable)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s is not stable and the request asks for "
                          "a stable sort", a->name);
    cand best = { 0 }, c;
    if (!a->uses_device) {
        host_cand(s, &j->req, "override", &best);
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
        c.plan = "override";
        c.ms = sd->rate_ms_per_key * (double)j->req.n;
        gs_db_choice ch;
        gs_err e;
        int kb = (int)gs_dtype_size(j->req.dtype) * 8;
        if (j->has_params) {
            c.params = j->params;
        } else if (s->db && sd->db_id >= 0 &&
                   gs_db_winner_get(s->db, sd->db_id, a->name, kb,
                                    gs_payload_name(j->req.payload), gs_db_bucket(j->req.n), &ch,
                                    &e) == 0 &&
                   gs_db_params_from_json(ch.params, &c.params, &e) == 0) {
            c.ms = ch.median_ms;
        } else {
            a->defaults(&sd->dev->info, &c.params);
        }
        gs_err ce;
        gs_err_clear(&ce);
        if (a->check && (rc = a->check(sd->dev, &j->req, &c.params, &ce)) < 0) {
            if (err)
                *err = ce;
            continue;
        }
        double cost = route_backlog(s, (int)d) + c.ms;
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
    host_cand(s, &j->req, "fallback", &best);
    apply(j, &best);
    snprintf(j->fallback, sizeof j->fallback, "%s is disabled on the device(s) after "
             "failures; served by the host sort", a->name);
    return 0;
}

int gs_sched_route(gs_sched *s, gs_job *j, gs_err *err)
{
    j->fallback[0] = '\0';
    j->t_submit = gs_now_ms();
    if (j->device >= 0 && ((size_t)j->device >= s->ndev || !s->devs[j->device].enabled))
        return gs_err_set(err, GS_ENODEV, "device %d is not served (%zu devices; see the "
                          "info op)", j->device, s->ndev);
    if (j->algorithm[0] && strcmp(j->algorithm, "auto"))
        return route_override(s, j, err);
    if (j->has_params)
        return gs_err_set(err, GS_EINVAL, "params need an algorithm");

    /* The plan: the fastest of the devices' own choices when idle. */
    cand planned, c, alt[64];
    size_t nalt = 0;
    int have = 0;
    for (size_t d = 0; d < s->ndev && nalt < 63; d++) {
        if (!s->devs[d].enabled || (j->device >= 0 && (size_t)j->device != d))
            continue;
        if (device_cand(s, (int)d, j, &c) < 0)
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
        host_cand(s, &j->req, any ? "fallback" : "default", &planned);
        if (any)
            snprintf(j->fallback, sizeof j->fallback, "no device can serve this request now "
                     "(resting after failures, or beyond its limits); served by the host sort");
    }
    host_cand(s, &j->req, planned.plan, &alt[nalt++]);

    /* Busy: another route predicted to finish sooner. */
    double pcost = route_backlog(s, planned.dev) + planned.ms;
    cand chosen = planned;
    if (pcost > planned.ms)
        for (size_t i = 0; i < nalt; i++) {
            double cost = route_backlog(s, alt[i].dev) + alt[i].ms;
            if (cost < pcost && alt[i].dev != planned.dev) {
                pcost = cost;
                chosen = alt[i];
                chosen.plan = "busy";
            }
        }
    apply(j, &chosen);
    return 0;
}

void gs_sched_submit(gs_sched *s, gs_job *j)
{
    s->inflight++;
    j->st.output_touched = 0;
    queue_push(j->dev >= 0 ? &s->devs[j->dev].q : &s->hostq, j);
}

size_t gs_sched_inflight(const gs_sched *s)
{
    return s->inflight;
}

size_t gs_sched_ndev(const gs_sched *s)
{
    return s->ndev;
}

void gs_sched_devstat_get(gs_sched *s, size_t i, gs_sched_devstat *out)
{
    sdev *sd = &s->devs[i];
    double b;
    out->dev = sd->dev;
    out->enabled = sd->enabled;
    out->healthy = sd->enabled && dev_healthy(sd);
    out->plan_entries = sd->plan_entries;
    out->tuned = sd->plan_entries > 0;
    out->db_id = sd->db_id;
    queue_load(&sd->q, &out->queued, &b);
}

unsigned gs_sched_host_threads(const gs_sched *s)
{
    return s->nhost;
}

size_t gs_sched_untuned(gs_sched *s, int *idx, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < s->ndev && n < cap; i++)
        if (s->devs[i].enabled && s->devs[i].plan_entries == 0)
            idx[n++] = (int)i;
    return n;
}
