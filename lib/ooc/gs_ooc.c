/* The merge of sorted pieces for out-of-core sorts (gs_ooc.h; the sort
 * itself is gs_ooc_sort.c). The
 * merge reads the caller's arrays into the scratch once, encoding the keys
 * to unsigned total order (gs_keys.h) on the way so gs_merge.h compares
 * plain integers, then merges the scratch back into the caller's arrays in
 * one k-way round, decoding each output block while it is in cache: two
 * passes over memory whatever the number of pieces. Encoding sends every
 * NaN to one key, losing its bits: as gs_sort_run does around a whole
 * sort, the NaNs' bits and values are saved before (gs_keys_nan_save reads
 * the pieces in order, and each piece's NaN block is already in its input
 * order) and written back into the merged NaN block after. The
 * per-element passes (index offsets, the copy) run as tasks of TASK_N
 * elements on a team of the shared pool.
 * The pieces lie in the caller's arrays, which a client may rewrite during
 * the sort (issue 32): nothing here takes a size or an offset from their
 * contents (the pieces are cut by n alone), the merge reads a private copy
 * (the scratch), and gs_merge keeps its co-ranks inside runs that need not
 * be sorted; a piece whose sort noticed the race (GS_EINVAL, arrays
 * touched) ends the sort with that error, with no rescue. */
#include "config.h"
#include "gs_ooc.h"
#include "gs_ooc_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_scratch.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_merge.h"
#include "gs_time.h"

#define TASK_N ((size_t)1 << 20)

gs_sort_req gs_ooc_piece(const gs_sort_req *req, size_t lo, size_t n)
{
    size_t vs = gs_payload_size(req->shape.payload);
    gs_sort_req r = *req;
    r.n = n;
    r.keys = (char *)req->keys + lo * gs_dtype_size(req->shape.dtype);
    r.values = vs ? (char *)req->values + lo * vs : NULL;
    if (req->shape.rows > 1)            /* whole rows: lo and n count them */
        r.shape.rows = n / (req->n / req->shape.rows);
    return r;
}

gs_sort_req gs_ooc_seg_piece(const gs_sort_req *req, size_t first, size_t count,
                             uint64_t *offs)
{
    const uint64_t *o = req->offsets + first;
    for (size_t g = 0; g <= count; g++)
        offs[g] = o[g] - o[0];
    gs_sort_req r = gs_ooc_piece(req, (size_t)o[0], (size_t)(o[count] - o[0]));
    r.shape.segments = count;
    r.offsets = offs;
    return r;
}

size_t gs_ooc_piece_size(size_t n, size_t pieces)
{
    return pieces ? (n + pieces - 1) / pieces : n;
}

typedef struct mjob {
    const gs_sort_req *req;
    size_t ks, vs;
    const size_t *bounds;   /* the pieces, for the index offsets */
    size_t npieces;
    char *kscr, *vscr;      /* the scratch the merge reads */
} mjob;

/* Task t's elements [lo, hi). */
static void task_range(const mjob *m, size_t t, size_t *lo, size_t *hi)
{
    *lo = t * TASK_N;
    *hi = *lo + TASK_N < m->req->n ? *lo + TASK_N : m->req->n;
}

/* Argsort: a piece's indices count from its own start. */
static void task_offsets(void *arg, size_t t, unsigned worker)
{
    const mjob *m = arg;
    (void)worker;
    size_t lo, hi, pc = 0;
    task_range(m, t, &lo, &hi);
    while (lo < hi) {
        while (m->bounds[pc + 1] <= lo)
            pc++;
        size_t end = m->bounds[pc + 1] < hi ? m->bounds[pc + 1] : hi, off = m->bounds[pc];
        if (m->req->shape.payload == GS_PL_IDX32)
            for (uint32_t *v = (uint32_t *)m->req->values; lo < end; lo++)
                v[lo] += (uint32_t)off;
        else
            for (uint64_t *v = (uint64_t *)m->req->values; lo < end; lo++)
                v[lo] += off;
    }
}

/* The copy into the scratch, encoded. */
static void task_encode(void *arg, size_t t, unsigned worker)
{
    const mjob *m = arg;
    (void)worker;
    size_t lo, hi;
    task_range(m, t, &lo, &hi);
    char *k = m->kscr + lo * m->ks;
    memcpy(k, (const char *)m->req->keys + lo * m->ks, (hi - lo) * m->ks);
    if (m->vs)
        memcpy(m->vscr + lo * m->vs, (const char *)m->req->values + lo * m->vs,
               (hi - lo) * m->vs);
    gs_keys_encode(m->req->shape.dtype, m->req->shape.descending, k, hi - lo);
}

/* The merge's post pass on each output block. */
static void post_decode(void *arg, void *keys, void *vals, size_t n)
{
    const gs_sort_req *req = arg;
    (void)vals;
    gs_keys_decode(req->shape.dtype, req->shape.descending, keys, n);
}

/* A merge of more than GS_MERGE_FANIN pieces that ended in the scratch
 * (already decoded): the copy back. */
static void task_copyback(void *arg, size_t t, unsigned worker)
{
    const mjob *m = arg;
    (void)worker;
    size_t lo, hi;
    task_range(m, t, &lo, &hi);
    memcpy((char *)m->req->keys + lo * m->ks, m->kscr + lo * m->ks, (hi - lo) * m->ks);
    if (m->vs)
        memcpy((char *)m->req->values + lo * m->vs, m->vscr + lo * m->vs, (hi - lo) * m->vs);
}

int gs_ooc_merge(const gs_sort_req *req, size_t *bounds, size_t npieces, gs_sort_stats *st,
                 gs_err *err)
{
    double t0 = gs_now_ms();
    mjob m = { .req = req,
               .ks = gs_dtype_size(req->shape.dtype),
               .vs = gs_payload_size(req->shape.payload),
               .bounds = bounds,
               .npieces = npieces };
    if (npieces < 2 || req->n == 0) {
        st->merge_ms += gs_now_ms() - t0;
        return 0;
    }
    char *kscr = gs_scratch_get(req->n * m.ks);
    char *vscr = m.vs ? gs_scratch_get(req->n * m.vs) : NULL;
    if (!kscr || (m.vs && !vscr)) {
        gs_scratch_put(kscr, req->n * m.ks);
        gs_scratch_put(vscr, req->n * m.vs);
        return gs_err_set(err, GS_ENOMEM, "merging %zu sorted pieces: out of memory for "
                          "%zu bytes of scratch", npieces, req->n * (m.ks + m.vs));
    }
    m.kscr = kscr;
    m.vscr = vscr;
    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, gs_hostpool_cpus() - 1);
    size_t tasks = (req->n + TASK_N - 1) / TASK_N;
    if (req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64)
        gs_hostpool_for(&team, tasks, task_offsets, &m);
    /* The save reads the pieces' indices as plain values: for an argsort it
     * would otherwise record positions, the input indices of an unsorted array. */
    gs_sort_req asval = *req;
    if (req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64)
        asval.shape.payload = req->shape.payload == GS_PL_IDX32 ? GS_PL_U32 : GS_PL_U64;
    gs_nan_save ns = { 0, NULL, NULL };
    int rc = gs_keys_nan_save(&asval, &ns, err);
    if (rc == 0) {
        gs_hostpool_for(&team, tasks, task_encode, &m);
        gs_merge mg = { .ks = m.ks, .vs = m.vs, .keys = kscr, .vals = vscr,
                        .kscr = req->keys, .vscr = req->values, .bounds = bounds,
                        .nruns = npieces, .post = post_decode, .post_arg = (void *)req };
        /* more tasks than workers: a worker the pool lends late still finds some */
        if (!gs_merge_runs(&team, workers * 4, &mg, NULL))
            gs_hostpool_for(&team, tasks, task_copyback, &m);
        gs_keys_nan_restore(&asval, &ns);
        gs_keys_nan_free(&ns);
        /* pieces the client rewrote after they were sorted: merged within
         * bounds (gs_merge.h), but the result is no sort */
        if (atomic_load_explicit(&mg.unsorted, memory_order_relaxed))
            rc = gs_err_raced("out of core", err);
    }
    gs_hostpool_leave(&team);
    gs_scratch_put(kscr, req->n * m.ks);
    gs_scratch_put(vscr, req->n * m.vs);
    st->merge_ms += gs_now_ms() - t0;
    return rc;
}

int gs_ooc_rescue(const gs_sort_req *req, size_t *bounds, size_t npieces,
                  const unsigned char *sorted, const char *why, gs_sort_stats *st,
                  gs_err *err)
{
    size_t left = 0;
    for (size_t c = 0; c < npieces; c++)
        left += !sorted[c];
    GS_WARN("out-of-core sort of %zu keys: %s; sorting %zu of its %zu pieces on the host and "
            "merging them there", req->n, why, left, npieces);
    for (size_t c = 0; c < npieces; c++) {
        if (sorted[c])
            continue;
        gs_sort_req piece = gs_ooc_piece(req, bounds[c], bounds[c + 1] - bounds[c]);
        gs_sort_stats hs;
        gs_err_clear(err);
        int rc = gs_sort_run(&gs_algo_host, NULL, &piece, NULL, &hs, err);
        if (rc < 0)
            return gs_err_prefix(err, "out-of-core piece %zu of %zu on the host: ", c + 1,
                                 npieces), rc;
    }
    return gs_ooc_merge(req, bounds, npieces, st, err);
}
