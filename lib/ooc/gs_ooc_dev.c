/* The out-of-core sort's device route (gs_ooc.h): two passes through the
 * device in place of one pass and a k-way merge on the host. Pass 1 sorts
 * the request's even pieces in place and copies each, once sorted, into
 * the scratch. A co-rank search over the sorted pieces then cuts the
 * output into segments of a piece's size, each made of one slice of every
 * piece (ties to the earlier piece); pass 2 gathers each segment's slices
 * from the scratch into the segment's place in the request and sorts it
 * there. On a GPU the second round trip of every byte over PCIe (55 GB/s
 * each way, pinned) costs less than the host merge (about 2 Gkeys/s on 16
 * cores). Each pass keeps up to two items on the device at once, one per
 * queue (lanes), so one item's upload overlaps another's kernels and
 * download, while the calling thread does the host copies on the shared
 * pool; no copy touches a range a lane is sorting. Stable when the
 * algorithm is: a segment lists its slices in piece order, and the pieces
 * are the request's ranges in order. A failure in pass 2 loses nothing:
 * the scratch still holds every sorted piece, which go back into the
 * request and are merged on the host, and the log says so. The pieces are
 * copied from the caller's arrays, which a client may rewrite during pass
 * 1 (issue 32): the cuts are checked against the runs before any gather
 * (cuts_valid) and a sort whose cuts fail, or whose item noticed the race,
 * ends with gs_err_raced's error. */
#include "config.h"
#include "gs_ooc.h"
#include "gs_ooc_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_pcopy.h"
#include "gs_scratch.h"
#include "gs_time.h"

#define TASK_N ((size_t)1 << 20)
#define LANES_MAX 2

enum { ITEM_WAIT, ITEM_READY, ITEM_SORTED, ITEM_FAILED };

typedef struct tp {
    const gs_algo *a;
    const gs_sort_ctx *ctx;
    const gs_sort_req *req;
    const gs_params *p;
    size_t ks, vs, chunk, npieces;
    size_t *bounds;              /* piece r is [bounds[r], bounds[r+1]) */
    size_t *cut;                 /* cut[j * npieces + r]: run r's keys before segment j */
    char *kscr, *vscr;           /* the sorted pieces, copied */
    int pass;                    /* 1: pieces, 2: segments */
    size_t item;                 /* the item a copy task works on */
    int back;                    /* task_save copies the whole scratch back */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *state;        /* per item of the pass */
    int stop, rc, touched;       /* a failure: lanes take no more items */
    double wait_ms, copy_ms;     /* lanes waiting for gathers; this thread copying */
    gs_err err;
    gs_sort_stats sum;
} tp;

typedef struct lane {
    tp *t;
    unsigned idx, n;
    cl_command_queue q;
} lane;

/* Test hooks (gs_ooc_force, gs_ooc_copy_plain). */
static _Atomic int forced_route;
static _Atomic unsigned forced_lanes;
static _Atomic int copy_plain;

void gs_ooc_copy_plain(int on)
{
    atomic_store(&copy_plain, on);
}

/* The host copies move gigabytes through memory the DMA is using too:
 * streaming stores skip reading each destination line in first. */
static void copy(void *dst, const void *src, size_t n)
{
    if (atomic_load_explicit(&copy_plain, memory_order_relaxed))
        memcpy(dst, src, n);
    else
        gs_copy_stream(dst, src, n);
}

void gs_ooc_force(int route, unsigned lanes)
{
    atomic_store(&forced_route, route);
    atomic_store(&forced_lanes, lanes > LANES_MAX ? LANES_MAX : lanes);
}

int gs_ooc_device_route(const gs_algo *a, const gs_sort_ctx *ctx, unsigned *lanes)
{
    int route = atomic_load(&forced_route);
    unsigned fl = atomic_load(&forced_lanes);
    /* A CPU device sorts on the host's own cores, slower than they merge. */
    int dev = a->uses_device && ctx->dev &&
              (route == GS_OOC_DEVICE ||
               (route == GS_OOC_AUTO && !(ctx->dev->info.type & CL_DEVICE_TYPE_CPU)));
    /* Two lanes copy straight from pinned memory; unpinned copies need the
     * device's one set of staging buffers, so they take turns. */
    *lanes = fl ? fl : ctx->host_pinned ? 2 : 1;
    return dev;
}

/* Item i of the pass as a request: a piece, or a segment whose argsort
 * indices (made global by the gather) now travel as plain values. */
static gs_sort_req item_req(const tp *t, size_t i)
{
    size_t n = t->req->n;
    size_t lo = t->pass == 1 ? t->bounds[i] : i * t->chunk;
    size_t hi = t->pass == 1 ? t->bounds[i + 1] : lo + t->chunk < n ? lo + t->chunk : n;
    gs_sort_req r = gs_ooc_piece(t->req, lo, hi - lo);
    if (t->pass == 2 && r.shape.payload == GS_PL_IDX32)
        r.shape.payload = GS_PL_U32;
    else if (t->pass == 2 && r.shape.payload == GS_PL_IDX64)
        r.shape.payload = GS_PL_U64;
    return r;
}

static void *lane_main(void *arg)
{
    lane *l = arg;
    tp *t = l->t;
    size_t items = t->npieces;
    for (size_t i = l->idx; i < items; i += l->n) {
        pthread_mutex_lock(&t->mu);
        double w0 = gs_now_ms();
        while (t->state[i] == ITEM_WAIT && !t->stop)
            pthread_cond_wait(&t->cv, &t->mu);
        t->wait_ms += gs_now_ms() - w0;
        int stop = t->stop;
        pthread_mutex_unlock(&t->mu);
        if (stop)
            break;
        gs_sort_req r = item_req(t, i);
        gs_sort_ctx c = *t->ctx;
        c.queue = l->q;
        gs_sort_stats cs;
        gs_err e;
        gs_err_clear(&e);
        int rc = gs_sort_run(t->a, &c, &r, t->p, &cs, &e);
        pthread_mutex_lock(&t->mu);
        gs_sort_stats_add(&t->sum, &cs);
        t->state[i] = rc ? ITEM_FAILED : ITEM_SORTED;
        if (rc) {
            t->touched |= cs.output_touched;
            if (!t->stop) {
                t->stop = 1;
                t->rc = rc;
                t->err = e;
                gs_err_prefix(&t->err, "out-of-core %s %zu of %zu (%zu keys): ",
                              t->pass == 1 ? "piece" : "segment", i + 1, items, r.n);
            }
        }
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        if (rc)
            break;
    }
    return NULL;
}

/* Task k of the copy of piece t->item into the scratch, or (t->back, the
 * rescue) of elements [k * TASK_N, ...) from the scratch back. */
static void task_save(void *arg, size_t k, unsigned worker)
{
    const tp *t = arg;
    (void)worker;
    size_t lo = t->back ? k * TASK_N : t->bounds[t->item] + k * TASK_N;
    size_t hi = t->back ? t->req->n : t->bounds[t->item + 1];
    hi = lo + TASK_N < hi ? lo + TASK_N : hi;
    char *rk = (char *)t->req->keys + lo * t->ks, *sk = t->kscr + lo * t->ks;
    copy(t->back ? rk : sk, t->back ? sk : rk, (hi - lo) * t->ks);
    if (t->vs) {
        char *rv = (char *)t->req->values + lo * t->vs, *sv = t->vscr + lo * t->vs;
        copy(t->back ? rv : sv, t->back ? sv : rv, (hi - lo) * t->vs);
    }
}

/* Task k of the gather of segment t->item: its output [lo, hi), taken
 * from the slices in piece order; argsort indices get their piece's start. */
static void task_gather(void *arg, size_t k, unsigned worker)
{
    const tp *t = arg;
    (void)worker;
    size_t j = t->item, seg = j * t->chunk;
    size_t lo = seg + k * TASK_N, end = seg + item_req(t, j).n;
    size_t hi = lo + TASK_N < end ? lo + TASK_N : end, at = seg;
    const size_t *c0 = t->cut + j * t->npieces, *c1 = c0 + t->npieces;
    int idx = t->req->shape.payload == GS_PL_IDX32 || t->req->shape.payload == GS_PL_IDX64;
    for (size_t r = 0; r < t->npieces && at < hi; r++) {
        size_t len = c1[r] - c0[r];
        size_t a = lo > at ? lo : at, b = hi < at + len ? hi : at + len;
        if (a < b) {
            size_t from = t->bounds[r] + c0[r] + (a - at), cnt = b - a;
            copy((char *)t->req->keys + a * t->ks, t->kscr + from * t->ks, cnt * t->ks);
            if (t->vs)
                copy((char *)t->req->values + a * t->vs, t->vscr + from * t->vs,
                       cnt * t->vs);
            if (idx && t->vs == 4)
                for (uint32_t *v = (uint32_t *)t->req->values + a, *e = v + cnt; v < e; v++)
                    *v += (uint32_t)t->bounds[r];
            else if (idx)
                for (uint64_t *v = (uint64_t *)t->req->values + a, *e = v + cnt; v < e; v++)
                    *v += t->bounds[r];
        }
        at += len;
    }
}

/* The scratch's key i of run r in the sort's order, as an unsigned integer. */
static uint64_t enc_at(const tp *t, size_t r, size_t i)
{
    return gs_key_encoded(t->req->shape.dtype, t->req->shape.descending, t->kscr,
                          t->bounds[r] + i);
}

/* Run r's keys below v, or (upper) not above it. */
static size_t run_bound(const tp *t, size_t r, uint64_t v, int upper)
{
    size_t lo = 0, hi = t->bounds[r + 1] - t->bounds[r];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t x = enc_at(t, r, mid);
        if (upper ? x <= v : x < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* off[r]: run r's keys among the pos first of the output (pos < n): the
 * smallest key v with more than pos keys at or below it, every key below
 * v, and v's equals handed out in run order. */
static void corank(const tp *t, size_t pos, size_t *off)
{
    uint64_t lo = 0, hi = gs_key_max(t->ks);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        size_t c = 0;
        for (size_t r = 0; r < t->npieces; r++)
            c += run_bound(t, r, mid, 1);
        if (c > pos)
            hi = mid;
        else
            lo = mid + 1;
    }
    size_t left = pos;
    for (size_t r = 0; r < t->npieces; r++) {
        off[r] = run_bound(t, r, lo, 0);
        left -= off[r];
    }
    for (size_t r = 0; r < t->npieces && left; r++) {
        size_t eq = run_bound(t, r, lo, 1) - off[r], take = eq < left ? eq : left;
        off[r] += take;
        left -= take;
    }
}

/* Whether the cuts make segments that the gather can take: in every run
 * they rise from 0 to its length, and segment j takes exactly its own
 * length from the runs together. The co-rank search guarantees that over
 * sorted runs; the runs are copies of what the client's pages held after
 * pass 1, which a client writing them during the sort may have left
 * unsorted, and then cuts can fall anywhere (each within its run) and
 * the gather would read past a run or leave part of a segment unwritten. */
static int cuts_valid(const tp *t)
{
    for (size_t j = 1; j <= t->npieces; j++) {
        const size_t *c0 = t->cut + (j - 1) * t->npieces, *c1 = c0 + t->npieces;
        size_t sum = 0;
        for (size_t r = 0; r < t->npieces; r++) {
            if (c1[r] < c0[r] || c1[r] > t->bounds[r + 1] - t->bounds[r])
                return 0;
            sum += c1[r] - c0[r];
        }
        if (sum != item_req(t, j - 1).n)
            return 0;
    }
    return 1;
}

/* One pass: lanes sort the items while this thread copies (pass 1: each
 * sorted piece into the scratch, in order) or gathers (pass 2: each
 * segment, ahead of its lane). 0, or the first lane's error. */
static int run_pass(tp *t, int pass, lane *lanes, unsigned nl, gs_hostpool_team *team)
{
    pthread_t th[LANES_MAX];
    unsigned started = 0;
    t->pass = pass;
    memset(t->state, pass == 1 ? ITEM_READY : ITEM_WAIT, t->npieces);
    for (; started < nl; started++)
        if (pthread_create(&th[started], NULL, lane_main, &lanes[started]) != 0)
            break;
    if (started < nl) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        for (unsigned l = 0; l < started; l++)
            pthread_join(th[l], NULL);
        if (!t->rc)
            t->rc = gs_err_set(&t->err, GS_ENOMEM, "out-of-core sort: cannot start a thread");
        return t->rc;
    }
    for (size_t i = 0; i < t->npieces; i++) {
        pthread_mutex_lock(&t->mu);
        while (pass == 1 && t->state[i] == ITEM_READY && !t->stop)
            pthread_cond_wait(&t->cv, &t->mu);
        int go = !t->stop;
        pthread_mutex_unlock(&t->mu);
        if (!go)
            break;
        t->item = i;
        size_t len = item_req(t, i).n;
        double c0 = gs_now_ms();
        gs_hostpool_for(team, (len + TASK_N - 1) / TASK_N, pass == 1 ? task_save : task_gather,
                        t);
        t->copy_ms += gs_now_ms() - c0;   /* only this thread writes it */
        if (pass == 2) {
            pthread_mutex_lock(&t->mu);
            t->state[i] = ITEM_READY;
            pthread_cond_broadcast(&t->cv);
            pthread_mutex_unlock(&t->mu);
        }
    }
    for (unsigned l = 0; l < started; l++)
        pthread_join(th[l], NULL);
    return t->rc;
}

int gs_ooc_twopass(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                   const gs_params *p, size_t chunk_n, unsigned nlanes, gs_sort_stats *st,
                   gs_err *err)
{
    double t0 = gs_now_ms();
    memset(st, 0, sizeof *st);
    if (nlanes < 1)
        nlanes = 1;
    if (nlanes > LANES_MAX)
        nlanes = LANES_MAX;
    tp t = { .a = a, .ctx = ctx, .req = req, .p = p, .ks = gs_dtype_size(req->shape.dtype),
             .vs = gs_payload_size(req->shape.payload) };
    /* Each lane holds an item on the device: together they fit where one
     * piece of chunk_n did. */
    t.chunk = (chunk_n + nlanes - 1) / nlanes;
    t.npieces = (req->n + t.chunk - 1) / t.chunk;
    lane lanes[LANES_MAX];
    for (unsigned l = 0; l < nlanes; l++) {
        lanes[l] = (lane){ .t = &t, .idx = l, .n = nlanes, .q = NULL };
        if (l > 0 && gs_dev_lane(ctx->dev, l, &lanes[l].q, err) < 0) {
            GS_WARN("out-of-core sort on one queue: %s", err->msg);
            gs_err_clear(err);
            nlanes = 1;
            lanes[0].n = 1;
        }
    }
    t.bounds = malloc((t.npieces + 1) * sizeof *t.bounds);
    t.cut = calloc((t.npieces + 1) * t.npieces, sizeof *t.cut);
    t.state = malloc(t.npieces);
    t.kscr = gs_scratch_get(req->n * t.ks);
    t.vscr = t.vs ? gs_scratch_get(req->n * t.vs) : NULL;
    if (!t.bounds || !t.cut || !t.state || !t.kscr || (t.vs && !t.vscr)) {
        free(t.bounds);
        free(t.cut);
        free(t.state);
        gs_scratch_put(t.kscr, req->n * t.ks);
        gs_scratch_put(t.vscr, req->n * t.vs);
        return gs_err_set(err, GS_ENOMEM, "out-of-core sort of %zu keys: out of memory for "
                          "%zu bytes of scratch", req->n, req->n * (t.ks + t.vs));
    }
    for (size_t r = 0; r < t.npieces; r++)
        t.bounds[r] = r * t.chunk;
    t.bounds[t.npieces] = req->n;
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    gs_err_clear(&t.err);
    gs_hostpool_team team;
    gs_hostpool_join(&team, gs_hostpool_cpus() - 1);

    int rc = run_pass(&t, 1, lanes, nlanes, &team);
    double t1 = gs_now_ms(), t2 = t1;
    if (rc && t.touched) {
        /* a piece's arrays were written and are lost: the request with them */
        st->output_touched = 1;
        gs_err_set(err, rc, "%s", t.err.msg);
        gs_hostpool_leave(&team);
    } else if (rc) {
        gs_hostpool_leave(&team);
        unsigned char *done = t.state;
        for (size_t i = 0; i < t.npieces; i++)
            done[i] = t.state[i] == ITEM_SORTED;
        rc = gs_ooc_rescue(req, t.bounds, t.npieces, done, t.err.msg, &t.sum, err);
        st->output_touched = rc < 0;   /* permuted, indices lost: not to be sorted again */
        t2 = gs_now_ms();
    } else {
        for (size_t j = 1; j < t.npieces; j++)
            corank(&t, j * t.chunk, t.cut + j * t.npieces);
        for (size_t r = 0; r < t.npieces; r++)
            t.cut[t.npieces * t.npieces + r] = t.bounds[r + 1] - t.bounds[r];
        t.pass = 2;   /* item_req's segments */
        if (!cuts_valid(&t)) {
            /* the pieces changed under pass 1: the client's doing, its data */
            gs_hostpool_leave(&team);
            rc = gs_err_raced(a->name, err);
            st->output_touched = 1;
        } else if ((rc = run_pass(&t, 2, lanes, nlanes, &team)) == GS_EINVAL) {
            /* a segment's sort found its keys rewritten (gs_err_raced) */
            gs_hostpool_leave(&team);
            gs_err_set(err, rc, "%s", t.err.msg);
            st->output_touched = 1;
        } else if (rc) {
            /* The scratch holds every sorted piece: put them back and merge
             * them on the host. */
            GS_WARN("%s: the out-of-core second pass failed (%s); merging the %zu sorted "
                    "pieces on the host instead", a->name, t.err.msg, t.npieces);
            t.back = 1;
            gs_hostpool_for(&team, (req->n + TASK_N - 1) / TASK_N, task_save, &t);
            gs_hostpool_leave(&team);
            rc = gs_ooc_merge(req, t.bounds, t.npieces, &t.sum, err);
        } else {
            gs_hostpool_leave(&team);
        }
        t2 = gs_now_ms();
    }
    int touched = st->output_touched;
    *st = t.sum;
    st->output_touched = touched;
    st->chunks = (unsigned)t.npieces;
    st->merge_ms = t2 - t1;   /* the co-rank and pass 2 (and any host merge) */
    st->wall_ms = gs_now_ms() - t0;
    if (rc == 0)
        GS_DEBUG("%s: sorted %zu %s out of core on the device, %zu pieces of %zu on %u "
                 "queue(s): pass 1 %.3f ms, pass 2 %.3f ms; host copies %.3f ms, queues "
                 "waiting for them %.3f ms", a->name, req->n, gs_dtype_name(req->shape.dtype),
                 t.npieces, t.chunk, nlanes, t1 - t0, t2 - t1, t.copy_ms, t.wait_ms);
    pthread_mutex_destroy(&t.mu);
    pthread_cond_destroy(&t.cv);
    free(t.bounds);
    free(t.cut);
    free(t.state);
    gs_scratch_put(t.kscr, req->n * t.ks);
    gs_scratch_put(t.vscr, req->n * t.vs);
    return rc;
}
