/* Where and how each sort runs. Every enabled device has a queue and one
 * worker thread per lane taking from it (two on a GPU: device_lanes), each
 * with a command queue of its own; the host sort has a pool of threads
 * sharing a queue;
 * OpenCL work never runs on the event-loop thread. The loop thread routes a
 * request (gs_sched_route): the device's tuned plan, loaded from the
 * database into memory when the daemon starts or reloads (gs_plans.h;
 * routing itself reads no database), for its key class, payload kind,
 * stability and size, or built-in defaults
 * (with one warning per device) when it has none; a queue that is busy may
 * send the request to another device or to the host when that is predicted
 * to finish sooner. A device run that fails falls back to the host sort in
 * the worker, so the request still gets a correct answer, and the failure
 * is logged; a build failure disables that algorithm on the device and
 * repeated failures rest the device for a while. Finished jobs are handed
 * back to the event loop that submitted them through that loop's sink (a
 * uv_async_t): the daemon runs several loops, and routing may run on all of
 * them at once (the routing state has its own lock). A large request may
 * be split over several devices at once (gs_split.c). Routing is gs_route.c
 * with its predictions in gs_predict.c, the workers gs_sched.c, the queues
 * gs_queue.c. */
#ifndef GS_SCHED_H
#define GS_SCHED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_lexsort.h"
#include "gs_narrow_sort.h"
#include "gs_pin.h"
#include "gs_plans.h"
#include "gs_prog.h"
#include "gs_sort.h"

typedef struct gs_sched gs_sched;

/* How a job's route was chosen: by the device's plan (the tuner's winners,
 * held by gs_plans.h) or one of the other ways. gs_sched_route_name gives
 * the word the sort reply carries in its "plan" field ("tuned", "default",
 * ...). */
typedef enum gs_route_how {
    GS_ROUTE_TUNED,          /* the device's tuned plan */
    GS_ROUTE_DEFAULT,        /* built-in defaults: no plan for this device or shape */
    GS_ROUTE_OVERRIDE,       /* the client named the algorithm */
    GS_ROUTE_BUSY,           /* the planned queue was busy: a route predicted sooner */
    GS_ROUTE_FALLBACK,       /* the device failed or cannot serve it: the host sort */
    GS_ROUTE_SPLIT,          /* cut over several devices at once, merged on the host */
    GS_ROUTE_COUNT
} gs_route_how;
const char *gs_sched_route_name(gs_route_how how);

struct gs_sched_sink;
struct gs_split;

/* The most devices one request is split over. */
#define GS_SPLIT_MAX 8

/* One part of a split request, as the reply tells it. */
typedef struct gs_job_part {
    int dev;                 /* where it was sorted; -1: the host (its device failed) */
    int planned_dev;         /* the device it was routed to */
    size_t off, n;           /* its range of the request */
    size_t seg_lo, seg_n;    /* segments: its first one and how many (0, 0: none) */
    unsigned chunks;         /* out of core on its device: pieces; 0: whole */
    double predicted_ms, ms; /* predicted finish (with the queue's backlog), and its run */
    /* its route (gs_split.c) */
    const gs_algo *algo;
    gs_params params;
    size_t chunk_n;
    int how;                 /* gs_route_how of its device's own choice */
    double run_ms;           /* predicted run alone (the queue's backlog grows by it) */
} gs_job_part;

typedef struct gs_job {
    /* the request, set by the caller */
    gs_sort_req req;
    char algorithm[32];      /* "" or "auto": the plan */
    gs_params params;        /* with has_params: the client's parameters */
    int has_params;
    int device;              /* device index to use, -1: any */
    gs_pin *pin;             /* the arrays' block, to register with the device that
                                sorts it for fast copies (gs_pin.h); NULL: none */
    int pin_once;            /* pin is a block sent once: registered only to sort it
                                out of core, where every byte crosses the bus four
                                times (released with the block) */
    int untuned;             /* 1: route as if no device had a plan (built-in
                                defaults): the untuned daemon's choice, which the
                                plan audit times (gs_audit.h) */
    int scope_dev;           /* > 0 with device -1: route as for a client that names
                                no device, among device scope_dev - 1 and the host
                                alone (the plan audit's view of one device, rows
                                and top-k: gs_audit_shapes.c); 0: every device */
    gs_lexsort_job lex;      /* lex.lx set: a lexsort (gs_lexsort.h), whose req is the
                                composite words' argsort; each group's sort takes
                                the route */
    gs_narrow_job narrow;    /* narrow.dt set: 8- or 16-bit keys (gs_narrow_sort.h),
                                whose req is their words' sort; it takes the route */
    int split_ask;           /* 1: consider a split over devices at any size and say
                                why not (split_why); -1: never split; 0: from 2^20
                                keys on, when predicted faster (gs_split.c) */
    /* the route, set by gs_sched_route (and by a fallback) */
    int dev;                 /* device index, -1: host */
    const gs_algo *algo;
    gs_params run_params;
    gs_route_how how;
    double predicted_ms;
    int learn;               /* its run teaches its device's rate (sched_cand.from_rate) */
    size_t chunk_n;          /* > 0: out of core, sorted in pieces of this many (gs_ooc.h) */
    struct gs_split *split;  /* GS_ROUTE_SPLIT: the parts in flight (the scheduler's) */
    struct gs_job *parent;   /* a part of a split: the request it is a piece of */
    unsigned nparts;         /* GS_ROUTE_SPLIT: the parts, once done (and as routed) */
    gs_job_part parts[GS_SPLIT_MAX];
    char split_why[256];     /* split_ask and not split: why ("" otherwise) */
    /* the outcome */
    int rc;                  /* 0 or GS_E* */
    gs_err err;
    gs_sort_stats st;
    char fallback[512];      /* why the first route failed; "" if it did not */
    double t_submit, t_start, t_done;   /* gs_now_ms() clock */
    void *ud;                /* the caller's */
    struct gs_sched_sink *sink;   /* where it goes back when done (set by the caller) */
    struct gs_job *next;     /* queue link (owned by the scheduler while queued) */
} gs_job;

typedef void (*gs_sched_done_fn)(gs_job *job, void *ud);

/* Where finished jobs go back to: one per event loop that submits jobs.
 * Workers queue a finished job on its sink and wake the sink's loop, which
 * calls done for it there. */
typedef struct gs_sched_sink {
    gs_sched *s;
    uv_async_t async;
    pthread_mutex_t mu;
    gs_job *head, *tail;
    gs_sched_done_fn done;
    void *ud;
} gs_sched_sink;

/* On the loop's thread. The sink must stay put (the handle lives in it)
 * until gs_sched_sink_close's handle is closed. */
int gs_sched_sink_init(gs_sched_sink *k, gs_sched *s, uv_loop_t *loop, gs_sched_done_fn done,
                       void *ud, gs_err *err);
/* On the loop's thread, once no job of this sink is in flight: deliver what
 * is left and close the handle (the loop must run once more). */
void gs_sched_sink_close(gs_sched_sink *k);

typedef struct gs_sched_opts {
    unsigned host_threads;   /* >= 1 */
    unsigned device_lanes;   /* requests in flight per device, 1 to 4; 0: auto (2 on a
                                GPU, 1 elsewhere) */
    const char *devices;     /* "all", "none" or "0,2" */
    gs_pcache *pc;           /* program cache (may be NULL) */
} gs_sched_opts;

/* Open the chosen devices (a device that fails to open is logged and left
 * out) and start the workers. `devs` stays the caller's and must outlive
 * the scheduler. */
int gs_sched_start(gs_sched **out, gs_dev *devs, size_t ndev, const gs_sched_opts *o,
                   gs_err *err);
/* Wait for every queue to drain, stop and join the workers and free the
 * scheduler. The sinks are their loops' to close. */
void gs_sched_stop(gs_sched *s);

/* Use `db` (NULL: none, built-in defaults) for plans from now on; re-reads
 * which devices have plans and forgets earlier failures (SIGHUP). The plans
 * are read before the routing lock is taken and swapped in under it, so
 * routing on other loops waits for a pointer swap, never for SQLite. */
void gs_sched_set_db(gs_sched *s, gs_db *db);
/* Any loop thread: choose device, algorithm and parameters for j. A
 * client's algorithm, parameters or device that cannot serve the request is
 * an error for the client (GS_ENOTFOUND, GS_EUNSUPPORTED, GS_ETOOBIG,
 * GS_ENODEV). */
int gs_sched_route(gs_sched *s, gs_job *j, gs_err *err);
/* The sink's loop thread: queue a routed job (j->sink set). */
void gs_sched_submit(gs_sched *s, gs_job *j);
/* Jobs submitted and not yet handed back. */
size_t gs_sched_inflight(const gs_sched *s);

typedef struct gs_sched_devstat {
    const gs_dev *dev;
    int enabled;             /* chosen by the devices setting and opened */
    int healthy;             /* not resting after failures */
    int ready;               /* the programs of its plan are built (gs_warm.c) */
    int tuned;               /* has a plan in the database */
    long plan_entries;
    unsigned queued;         /* waiting or running */
    unsigned lanes;          /* requests it works on at once (device_lanes) */
    long long db_id;         /* -1: not in the database */
} gs_sched_devstat;
size_t gs_sched_ndev(const gs_sched *s);
/* Whether device i's built-in defaults are final: its worker measured the
 * crossover to the host sort (a GPU), or had none to measure. Until then
 * an untuned route below the crossover is a guess. */
int gs_sched_defaults_known(gs_sched *s, size_t i);
/* Release the pooled device buffers (gs_bufpool.h) no
 * request has taken for idle_ms. */
void gs_sched_trim(gs_sched *s, double idle_ms);
/* Any thread: the bytes the pools of CPU devices hold (their buffers are
 * host memory, which the daemon's memory budget counts), and releasing
 * them all when the budget needs the room. */
uint64_t gs_sched_host_pooled(gs_sched *s);
void gs_sched_trim_host(gs_sched *s);
void gs_sched_devstat_get(gs_sched *s, size_t i, gs_sched_devstat *out);
unsigned gs_sched_host_threads(const gs_sched *s);
/* Where the daemon stops sorting shape k as a client could in its own
 * process (the info op's "crossover", issue 36): below *below keys every
 * device's own choice (plan or built-in defaults) is the host sort and the
 * host sort runs on one thread; from there on device *dev takes it (-1: the
 * host sort's threads). *below is UINT64_MAX when nothing ever does. */
void gs_sched_crossover(gs_sched *s, const gs_plans_key *k, uint64_t *below, int *dev);
/* Host sorts of at most n keys run on the loop thread, in
 * gs_sched_submit, with done called before it returns: for a small array
 * the hand-off to a worker and back (two wake-ups) costs more than the
 * sort. 0: every sort goes to a worker. */
void gs_sched_set_inline_max(gs_sched *s, size_t n);
/* Loop thread: the device memory one request may use on each device
 * (device_mem_cap), besides the device's own limits; 0: those alone. A
 * request above it is sorted out of core, in pieces that fit (gs_ooc.h). */
void gs_sched_set_mem_cap(gs_sched *s, uint64_t bytes);

/* Indices of enabled devices without a plan (for tune_missing), leaving
 * out CPU devices when no_cpu (tune_missing = auto). */
size_t gs_sched_untuned(gs_sched *s, int *idx, size_t cap, int no_cpu);

#endif
