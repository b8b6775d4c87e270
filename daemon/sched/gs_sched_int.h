/* What the scheduler's two halves share (private to daemon/sched/gs_sched.c,
 * the queues and workers, and daemon/sched/gs_route.c, the routing): the queue,
 * the per-device state, the scheduler itself, and the few helpers both
 * use, named sched_*. It names gs_job and the done callback through their
 * struct tags instead of including gs_sched.h, so that no include cycle
 * appears between the public header and this one. */
#ifndef GS_SCHED_INT_H
#define GS_SCHED_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <uv.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_plans.h"
#include "gs_prog.h"
#include "gs_sort.h"

#define MAX_ALGOS 16

struct gs_job;
typedef struct gs_sched gs_sched;

/* A planned route's identity, "radix:radix_bits=8,wg_size=256" */
#define SCHED_ROUTE_ID 288

/* Routes of a device's plan to build before they serve (gs_warm.c). */
typedef struct sched_warm_item {
    char id[SCHED_ROUTE_ID];
    const gs_algo *algo;
    gs_params params;
    int key_bits;
    gs_payload payload;
    int kind;                /* -1: a flat plan row; else a rows or top-k row
                                (gs_plans_kind) of row length or k 2^sub */
    int sub;
} sched_warm_item;

typedef struct sched_warm {
    size_t n;
    sched_warm_item item[];
} sched_warm;

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct gs_job *head, *tail;
    unsigned len;            /* waiting + running */
    double backlog_ms;       /* predicted time of waiting + running jobs */
    sched_warm *warm;        /* a device's routes to build, not yet taken by its worker */
    double warm_ms;          /* their predicted build time left (in the backlog) */
    int stop;
    /* A device's lanes (gs_sched.c): more than one worker takes its jobs,
     * each on a queue of its own, so one request's upload overlaps
     * another's kernels or download. A lane beyond the first takes a job
     * only while the device memory of those running leaves room for it
     * (mem_cap) and nothing holds the queue (hold: the built-in defaults
     * measured, or planned routes built, by the first lane alone). */
    unsigned running;        /* jobs popped, not yet finished */
    uint64_t mem_inflight;   /* their device memory, as estimated (sched_job_mem) */
    uint64_t mem_cap;        /* 0: one lane, no gate */
    unsigned hold;
} queue;

/* A route's learned time per key (ms), and how many runs taught it: the
 * start-up guess until the first, then the fastest of the first
 * RATE_SAMPLES (a first run can pay a program build or a pinning), then an
 * average in which one slow run counts at most twice the rate (gs_queue.c). */
typedef struct sched_rate {
    double ms_per_key;
    unsigned samples;
} sched_rate;

#define SCHED_LANES_MAX GS_DEV_LANES  /* a device's own queue and its others (gs_dev_lane) */

typedef struct sdev {
    gs_dev *dev;
    int enabled;
    queue q;
    pthread_t th[SCHED_LANES_MAX];
    unsigned started;                /* lane workers running */
    unsigned nlanes;                 /* lanes it was given (device_lanes) */
    atomic_int broken[MAX_ALGOS];    /* build failure: algorithm disabled here */
    atomic_int fails;                /* consecutive failed runs */
    _Atomic double rest_until;       /* gs_now_ms(); 0: healthy */
    /* routing state, under gs_sched.mu */
    long long db_id;
    long plan_entries;
    gs_plans *plans;                 /* the tuned plan in memory, NULL: none */
    int warned_noplan;               /* no plan at all: said once per device */
    unsigned char warned_shape[GS_KW_COUNT][GS_PL_COUNT][2];   /* [key width][payload][stable] */
    sched_rate rate;                 /* learned: the default algorithm's untuned runs */
    /* built-in defaults without a plan (gs_defaults.c) */
    const gs_algo *dflt_algo;        /* from dflt_min_log2 up; host below */
    _Atomic int dflt_min_log2;       /* written once by the worker when measured */
    int dflt_measure;                /* the worker measures it when it starts */
    atomic_int dflt_known;           /* 1 once dflt_min_log2 is final (measured or not) */
    /* planned routes built (gs_warm.c) */
    atomic_int warming;              /* 1 while routes of its plan are being built */
    char (*warmed)[SCHED_ROUTE_ID];  /* routes built by this process (under q.mu) */
    size_t nwarmed, capwarmed;
} sdev;

struct gs_sched {
    uv_loop_t *loop;
    sdev *devs;
    size_t ndev;
    queue hostq;
    pthread_t *host_th;
    unsigned nhost, host_started;
    gs_pcache *pc;
    /* The routing state (db, each sdev's "loop thread only" part, the
     * learned rates): several event loops route at once, so it is theirs
     * under this lock, held for a route, a learned rate or a plan swap. */
    pthread_mutex_t mu;
    gs_db *db;
    atomic_size_t inflight;          /* submitted, not yet handed back */
    sched_rate host_rate[2];         /* learned: 32/64-bit keys */
    _Atomic size_t inline_max;       /* gs_sched_set_inline_max */
    _Atomic uint64_t mem_cap;        /* gs_sched_set_mem_cap; 0: none */
    int test_split;                  /* GSORTD_TEST_SPLIT=1: split whenever two devices can */
};

/* A route the router weighs (gs_route.c, gs_split.c). */
typedef struct sched_cand {
    int dev;                 /* -1 host */
    const gs_algo *algo;
    gs_params params;
    int how;                 /* gs_route_how */
    double ms;
    size_t chunk_n;          /* out of core: piece size; 0: whole */
    int from_rate;           /* ms is the device's learned rate times n: its run
                                teaches the rate, whatever route picks it */
} sched_cand;

/* ---- the queues, hand-back, rates and health (gs_queue.c) ---- */

/* Set up a queue; 0 or -1. */
int sched_queue_init(queue *q);
/* Queue a job on q (its predicted_ms joins the backlog). */
void sched_queue_push(queue *q, struct gs_job *j);
/* The next job, waiting for one; NULL once the queue is stopped and empty,
 * or (with `warm`, a device's first lane) NULL and *warm set when its
 * routes to build came first (then the caller owns *warm, and the queue is
 * held until sched_queue_unhold). lane > 0: a further lane, which waits
 * while the queue is held or the head job's device memory does not fit
 * beside the running ones'. */
struct gs_job *sched_queue_pop(queue *q, sched_warm **warm, unsigned lane);
/* A popped job has run: its predicted time and memory leave the queue. */
void sched_queue_finish(queue *q, const struct gs_job *j);
/* The first lane is done with what held the queue (a build, a measurement). */
void sched_queue_unhold(queue *q);
/* The backlog a device's defaults measurement counts for until it is done
 * (gs_sched.c): as a program build's (gs_warm.c). */
#define SCHED_MEASURE_MS 2000.0
/* Its defaults are measured: that backlog is gone, and the device is ready
 * unless planned routes wait to be built (gs_warm.c). */
void sched_measured(sdev *sd);
/* Device d's lanes' memory gate from its memory and the cap (gs_predict.c). */
void sched_lanes_cap(gs_sched *s, int d);
/* What a job holds on a device while it runs, as the lanes' gate counts
 * it: its arrays three times (in, out, scratch); out of core, all of it. */
uint64_t sched_job_mem(const struct gs_job *j, uint64_t cap);
/* Wake the queue's workers to stop. */
void sched_queue_stop(queue *q);
/* A queue's predicted backlog for a new job: device d's, or the host
 * pool's (d < 0) shared by its threads. Takes the queue's lock. */
double sched_route_backlog(gs_sched *s, int d);
/* Learn a route's ms per key (*rate, one of s's) from a finished run
 * large enough to tell; takes s->mu when it does. */
void sched_learn(gs_sched *s, sched_rate *rate, const struct gs_job *j);
/* Device d's learned ms per key for its default algorithm, untuned; while
 * d has run none, its start-up guess or an identical device's (same name
 * and driver) learned rate where that is faster. Under s->mu. */
double sched_dev_rate(const gs_sched *s, int d);
/* Hand a finished job back to its sink's loop. */
void sched_hand_back(struct gs_job *j);

/* ---- the split over devices (gs_split.c) ---- */

/* Under s->mu, after the single route is chosen (cost: its predicted
 * finish): split j over the devices among alt[0..nalt) (each device's own
 * choice for the whole request) when that is predicted sooner, filling
 * j's parts and plan; 1 when split, 0 when not (the reason logged at debug
 * level and, with j->split_ask, in j->split_why). */
int sched_split_route(gs_sched *s, struct gs_job *j, const sched_cand *alt, size_t nalt,
                      double cost);
/* The loop thread: allocate the parts of a routed split job and queue
 * them; 0, or GS_ENOMEM (the job is then to be served whole). */
int sched_split_submit(gs_sched *s, struct gs_job *j);
/* A part is done (a worker thread): the last one merges the parts and
 * hands the request back. */
void sched_split_part_done(gs_sched *s, struct gs_job *part);

/* The algorithm's slot in sdev.broken. */
int sched_algo_index(const gs_algo *a);
/* A queue's length and predicted backlog (the routes to build
 * included), under its lock. */
void sched_queue_load(queue *q, unsigned *len, double *backlog);

/* ---- a device's planned programs, built before they serve (gs_warm.c) ---- */

/* Under s->mu, after device d's plan was set: hand its worker the routes
 * of the plan this process has not built yet (their predicted build time
 * joins the device's backlog). */
void sched_warm_post(gs_sched *s, int d);
/* The worker: build each route of w (a small sort each), then free w. */
void sched_warm_run(gs_sched *s, int d, sched_warm *w);
/* At stop: what device sd's warm-up state holds. */
void sched_warm_free(sdev *sd);
/* Not resting after repeated failures. */
int sched_dev_healthy(sdev *sd);
/* The device's built-in defaults (gs_defaults.c): chosen at start, the
 * crossover measured by its worker before it serves. */
void sched_defaults_init(sdev *sd);
void sched_defaults_measure(gs_sched *s, int d);
/* What a request's check() sees of device d: the device itself, or with
 * mem_cap set a copy in *tmp whose max allocation and global memory are
 * lowered to the cap. */
const gs_dev *sched_capped_dev(const gs_sched *s, int d, gs_dev *tmp);
/* check() of algorithm a with params on device d (capped) for req; when
 * the request is too big for it, the piece size (*chunk_n) of the fewest
 * even pieces that pass, from 2 up to 4096 pieces. 0, or the check's
 * error when no cut fits. */
int sched_fit(const gs_sched *s, int d, const gs_algo *a, const gs_sort_req *req,
              const gs_params *p, size_t *chunk_n, gs_err *err);
/* Predicted time of the host merge of `pieces` sorted pieces of r. */
double sched_merge_ms(const gs_sched *s, const gs_sort_req *r, size_t pieces);
/* Predicted time of r sorted out of core on device d in pieces of chunk_n
 * with algorithm a, whose whole sort would take whole_ms: twice that on
 * the device route (gs_ooc.h), else that plus the host merge. */
double sched_ooc_ms(const gs_sched *s, int d, const gs_algo *a, const gs_sort_req *r,
                    double whole_ms, size_t chunk_n);

#endif
