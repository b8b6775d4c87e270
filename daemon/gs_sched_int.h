/* What the scheduler's two halves share (private to daemon/gs_sched.c,
 * the queues and workers, and daemon/gs_route.c, the routing): the queue,
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

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct gs_job *head, *tail;
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
    /* routing state, under gs_sched.mu */
    long long db_id;
    long plan_entries;
    gs_plans *plans;                 /* the tuned plan in memory, NULL: none */
    int warned_noplan;               /* no plan at all: said once per device */
    unsigned char warned_shape[2][GS_PL_COUNT][2];   /* [64-bit keys][payload][stable] */
    double rate_ms_per_key;          /* learned, untuned routes */
    /* built-in defaults without a plan (gs_defaults.c) */
    const gs_algo *dflt_algo;        /* from dflt_min_log2 up; host below */
    _Atomic int dflt_min_log2;       /* written once by the worker when measured */
    int dflt_measure;                /* the worker measures it when it starts */
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
    double host_rate[2];             /* ms per key, 32/64-bit keys, learned */
    _Atomic size_t inline_max;       /* gs_sched_set_inline_max */
    _Atomic uint64_t mem_cap;        /* gs_sched_set_mem_cap; 0: none */
};

/* The algorithm's slot in sdev.broken. */
int sched_algo_index(const gs_algo *a);
/* A queue's length and predicted backlog, under its lock. */
void sched_queue_load(queue *q, unsigned *len, double *backlog);
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

#endif
