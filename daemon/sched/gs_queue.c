/* The scheduler's lowest floor (gs_sched_int.h): the run queues (a job
 * pushed with its predicted time joins the queue's backlog, which routing
 * reads), the hand-back of a finished job to its loop's sink, the learned
 * rates, and a device's health. The workers (gs_sched.c), the router
 * (gs_route.c, gs_predict.c) and a split's parts (gs_split.c) all stand on
 * it; it calls none of them. */
#include "config.h"
#include "gs_sched.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "gs_sched_int.h"
#include "gs_time.h"

int sched_algo_index(const gs_algo *a)
{
    for (size_t i = 0; i < gs_algo_count() && i < MAX_ALGOS; i++)
        if (gs_algo_at(i) == a)
            return (int)i;
    return 0;
}

/* ---- queues ---- */

int sched_queue_init(queue *q)
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

/* Link j at the end of the list head..tail (the caller holds its lock). */
static void job_append(gs_job **head, gs_job **tail, gs_job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

void sched_queue_push(queue *q, gs_job *j)
{
    pthread_mutex_lock(&q->mu);
    job_append(&q->head, &q->tail, j);
    q->len++;
    q->backlog_ms += j->predicted_ms;
    /* with lanes, the one woken may be the lane the gate keeps waiting */
    if (q->mem_cap)
        pthread_cond_broadcast(&q->cv);
    else
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

uint64_t sched_job_mem(const gs_job *j, uint64_t cap)
{
    if (j->chunk_n)
        return cap;      /* out of core takes both of the device's queues itself */
    uint64_t b = (uint64_t)j->req.n *
                 (gs_dtype_size(j->req.shape.dtype) + gs_payload_size(j->req.shape.payload));
    return 3 * b;
}

/* Under q->mu: whether `lane` may take the head job now: another lane's
 * job leaves it room on the device (any lane: the first must not crowd a
 * later one's job either), and for a later lane, nothing holds the queue. */
static int lane_may(const queue *q, unsigned lane)
{
    if (!q->head)
        return 0;
    if (lane > 0 && (q->hold || q->warm))
        return 0;
    return !q->mem_cap || q->running == 0 ||
           q->mem_inflight + sched_job_mem(q->head, q->mem_cap) <= q->mem_cap;
}

gs_job *sched_queue_pop(queue *q, sched_warm **warm, unsigned lane)
{
    gs_job *j = NULL;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        if (warm && q->warm && !q->stop) {
            /* before the jobs: they were routed knowing the builds come
             * first; the other lanes wait for them too */
            *warm = q->warm;
            q->warm = NULL;
            q->hold++;
            break;
        }
        if (lane_may(q, lane)) {
            j = q->head;
            q->head = j->next;
            if (!q->head)
                q->tail = NULL;
            q->running++;
            if (q->mem_cap)
                q->mem_inflight += sched_job_mem(j, q->mem_cap);
            break;
        }
        /* stopping: the first lane drains the queue (waiting for room as
         * ever), the others end */
        if (q->stop && (!q->head || lane > 0))
            break;
        pthread_cond_wait(&q->cv, &q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return j;
}

void sched_queue_finish(queue *q, const gs_job *j)
{
    pthread_mutex_lock(&q->mu);
    q->len--;
    q->backlog_ms -= j->predicted_ms;
    if (q->len == 0 || q->backlog_ms < 0)
        q->backlog_ms = 0;
    if (q->running)
        q->running--;
    if (q->mem_cap) {
        uint64_t m = sched_job_mem(j, q->mem_cap);
        q->mem_inflight = q->mem_inflight > m && q->running ? q->mem_inflight - m : 0;
        pthread_cond_broadcast(&q->cv);     /* a lane waiting for room */
    }
    pthread_mutex_unlock(&q->mu);
}

void sched_queue_unhold(queue *q)
{
    pthread_mutex_lock(&q->mu);
    if (q->hold)
        q->hold--;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void sched_queue_load(queue *q, unsigned *len, double *backlog)
{
    pthread_mutex_lock(&q->mu);
    *len = q->len;
    *backlog = q->backlog_ms + q->warm_ms;
    pthread_mutex_unlock(&q->mu);
}

void sched_queue_stop(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* ---- handing finished jobs back to their loops ---- */

void sched_hand_back(gs_job *j)
{
    gs_sched_sink *k = j->sink;
    j->t_done = gs_now_ms();
    pthread_mutex_lock(&k->mu);
    job_append(&k->head, &k->tail, j);
    pthread_mutex_unlock(&k->mu);
    uv_async_send(&k->async);
}

/* Below this many keys a run says too little about a route's rate. */
#define LEARN_MIN_N 4096
/* The first runs' fastest is kept (gs_sched_int.h: sched_rate) */
#define RATE_SAMPLES 3
/* afterwards one run counts for at most this many times the rate */
#define RATE_SPIKE 2.0

void sched_learn(gs_sched *s, sched_rate *rate, const gs_job *j)
{
    /* checked before the lock: the many small requests never take it; a
     * top-k's time is not a sort's, nor segments' (run one by one) */
    if (j->rc < 0 || j->req.n < LEARN_MIN_N || j->st.wall_ms <= 0 || j->req.shape.topk ||
        j->req.shape.segments)
        return;
    /* without the setup step: a device's first run builds or loads its
     * program there (seconds on a GPU, a tenth of one on PoCL), and a rate
     * taught that way kept the device from ever being chosen again */
    double w = j->st.wall_ms - (j->st.setup_ms < j->st.wall_ms ? j->st.setup_ms : 0);
    double r = w / (double)j->req.n;
    pthread_mutex_lock(&s->mu);
    if (rate->samples == 0 || (rate->samples < RATE_SAMPLES && r < rate->ms_per_key))
        rate->ms_per_key = r;
    else if (rate->samples >= RATE_SAMPLES)
        rate->ms_per_key = 0.8 * rate->ms_per_key +
                           0.2 * (r < RATE_SPIKE * rate->ms_per_key ? r
                                                                    : RATE_SPIKE * rate->ms_per_key);
    rate->samples++;
    pthread_mutex_unlock(&s->mu);
}

double sched_dev_rate(const gs_sched *s, int d)
{
    const sdev *sd = &s->devs[d];
    double r = sd->rate.ms_per_key;
    if (sd->rate.samples >= RATE_SAMPLES)
        return r;
    /* Still learning (fewer than RATE_SAMPLES runs, of which the fastest
     * is kept): a twin's rate where it is faster than its own so far, and
     * a hair faster still, so that ties go to it. Otherwise one slow early
     * run (a machine busy elsewhere, a first pinning) would keep a device
     * from ever running again and correcting it: a twin then took every
     * request (tests/daemon/sched/test_balance, under load). */
    int twin = 0;
    for (size_t i = 0; i < s->ndev; i++) {
        const sdev *o = &s->devs[i];
        if ((int)i != d && o->rate.samples && o->dflt_algo == sd->dflt_algo &&
            !strcmp(o->dev->info.name, sd->dev->info.name) &&
            !strcmp(o->dev->info.driver, sd->dev->info.driver)) {
            twin = 1;
            if (o->rate.ms_per_key < r)
                r = o->rate.ms_per_key;
        }
    }
    return twin ? r * 0.99 : r;
}

int sched_dev_healthy(sdev *sd)
{
    double until = atomic_load(&sd->rest_until);
    return until == 0.0 || gs_now_ms() >= until;
}
