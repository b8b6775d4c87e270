/* The router's predictions (gs_sched_int.h): what an out-of-core sort
 * costs (the pieces that fit a device under mem_cap, the host merge, the
 * device route) and a queue's backlog. Routing (gs_route.c) and the split
 * decision (gs_split.c) both ask them; they read the queues (gs_queue.c)
 * and call neither. */
#include "config.h"
#include "gs_sched.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "gs_ooc.h"
#include "gs_merge.h"
#include "gs_sched_int.h"

/* ---- out of core: the device memory cap and the pieces that fit ---- */

void gs_sched_set_mem_cap(gs_sched *s, uint64_t bytes)
{
    atomic_store(&s->mem_cap, bytes);
    for (size_t d = 0; d < s->ndev; d++)
        sched_lanes_cap(s, (int)d);
}

void sched_lanes_cap(gs_sched *s, int d)
{
    sdev *sd = &s->devs[d];
    if (sd->nlanes < 2)
        return;
    uint64_t mem = sd->dev->info.global_mem, cap = atomic_load(&s->mem_cap);
    if (cap && cap < mem)
        mem = cap;
    pthread_mutex_lock(&sd->q.mu);
    /* a quarter left to the pooled buffers, the programs and the driver */
    sd->q.mem_cap = mem - mem / 4;
    if (!sd->q.mem_cap)
        sd->q.mem_cap = 1;
    pthread_cond_broadcast(&sd->q.cv);
    pthread_mutex_unlock(&sd->q.mu);
}

const gs_dev *sched_capped_dev(const gs_sched *s, int d, gs_dev *tmp)
{
    const gs_dev *dev = s->devs[d].dev;
    uint64_t cap = atomic_load(&s->mem_cap);
    if (!cap || (dev->info.max_alloc <= cap && dev->info.global_mem <= cap))
        return dev;
    /* check() reads only the device's info: a copy with the limits lowered */
    memcpy(tmp, dev, sizeof *tmp);
    if (tmp->info.max_alloc > cap)
        tmp->info.max_alloc = cap;
    if (tmp->info.global_mem > cap)
        tmp->info.global_mem = cap;
    return tmp;
}

/* The most pieces an out-of-core sort is cut into: beyond it the pieces
 * are too small for a device to be worth it. */
#define FIT_MAX_PIECES 4096

int sched_fit(const gs_sched *s, int d, const gs_algo *a, const gs_sort_req *req,
              const gs_params *p, size_t *chunk_n, gs_err *err)
{
    gs_dev tmp;
    const gs_dev *dev = sched_capped_dev(s, d, &tmp);
    *chunk_n = 0;
    if (!a->check)
        return 0;
    int rc = a->check(dev, req, p, err);
    if (rc != GS_ETOOBIG)
        return rc;
    gs_sort_req piece = *req;
    for (size_t k = 2; k <= FIT_MAX_PIECES; k = k < 8 ? k + 1 : 2 * k) {
        piece.n = gs_ooc_piece_size(req->n, k);
        gs_err pe;
        gs_err_clear(&pe);
        int prc = a->check(dev, &piece, p, &pe);
        if (prc == 0) {
            *chunk_n = piece.n;
            return 0;
        }
        if (prc != GS_ETOOBIG)
            break;
    }
    return rc;   /* the whole request's reason */
}

/* The host merge of `pieces` sorted pieces of r: a k-way round per
 * GS_MERGE_FANIN (two passes over the keys and values, gs_ooc.c) at about a third of a host
 * sort's time (a radix sort makes three or more such passes). */
double sched_merge_ms(const gs_sched *s, const gs_sort_req *r, size_t pieces)
{
    double rounds = pieces > 1 ? ceil(log((double)pieces) / log(GS_MERGE_FANIN)) : 0;
    double ms = s->host_rate[gs_dtype_size(r->shape.dtype) == 8].ms_per_key * (double)r->n / 3 * rounds;
    return r->shape.payload != GS_PL_NONE ? 1.5 * ms : ms;
}

double sched_ooc_ms(const gs_sched *s, int d, const gs_algo *a, const gs_sort_req *r,
                    double whole_ms, size_t chunk_n)
{
    gs_sort_ctx ctx = { .dev = s->devs[d].dev };
    unsigned lanes;
    /* the device route sorts every key twice, at the device's rate */
    if (gs_ooc_device_route(a, &ctx, &lanes))
        return 2 * whole_ms;
    return whole_ms + sched_merge_ms(s, r, (r->n + chunk_n - 1) / chunk_n);
}

double sched_route_backlog(gs_sched *s, int dev)
{
    unsigned len;
    double b;
    if (dev < 0) {
        sched_queue_load(&s->hostq, &len, &b);
        return b / s->nhost;
    }
    sched_queue_load(&s->devs[dev].q, &len, &b);
    /* lanes run that much at once (as the host pool's threads do) */
    return s->devs[dev].nlanes > 1 ? b / s->devs[dev].nlanes : b;
}
