/* The sort front end every caller goes through: request validation, the
 * parameter checks and value lists algorithms share, and gs_sort_run,
 * which checks, times and runs an algorithm and puts NaN bit patterns back
 * afterwards, and runs a request of equal rows or of segments part by part
 * (sort_rows). The registry, which lists the algorithms, is gs_registry.c:
 * this file knows no algorithm by name. Algorithms get the raw keys and do
 * the order-preserving encoding themselves (device algorithms on the
 * device).
 *
 * NaNs: the encoding makes every NaN one canonical key, so gs_sort_run
 * saves the non-canonical NaNs' bit patterns with their payload elements
 * and writes both back into the NaN block in input order: every (key bits,
 * value) pair survives, for unstable algorithms too (see gs_keys.c). */
#include "config.h"
#include "gs_sort.h"
#include "gs_bits.h"
#include "gs_select.h"

#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_narrow.h"
#include "gs_time.h"

/* Segments (shape.segments S): S + 1 offsets that start at 0, never
 * decrease and end at n, checked all before any key is touched. */
static int check_segments(const gs_sort_req *r, gs_err *err)
{
    uint64_t S = r->shape.segments;
    if (r->shape.rows > 1)
        return gs_err_set(err, GS_EINVAL, "sort request: segments and rows together (a "
                          "request is one or the other)");
    if (r->shape.topk)
        return gs_err_set(err, GS_EUNSUPPORTED, "sort request: top-k of segments is not "
                          "supported (sort the segments, or ask top-k of equal rows)");
    if (!r->offsets)
        return gs_err_set(err, GS_EINVAL, "sort request: %llu segments without offsets",
                          (unsigned long long)S);
    if (S > SIZE_MAX / sizeof *r->offsets - 1)
        return gs_err_set(err, GS_ETOOBIG, "sort request: %llu segments overflow the "
                          "address space", (unsigned long long)S);
    const uint64_t *o = r->offsets;
    if (o[0] != 0)
        return gs_err_set(err, GS_EINVAL, "sort request: segment offsets must start at 0, "
                          "not %llu", (unsigned long long)o[0]);
    for (uint64_t s = 0; s < S; s++)
        if (o[s + 1] < o[s])
            return gs_err_set(err, GS_EINVAL, "sort request: segment offsets decrease: "
                              "offsets[%llu] = %llu after offsets[%llu] = %llu",
                              (unsigned long long)(s + 1), (unsigned long long)o[s + 1],
                              (unsigned long long)s, (unsigned long long)o[s]);
    if (o[S] != (uint64_t)r->n)
        return gs_err_set(err, GS_EINVAL, "sort request: the last segment offset "
                          "(offsets[%llu] = %llu) must be n = %zu", (unsigned long long)S,
                          (unsigned long long)o[S], r->n);
    return 0;
}

int gs_sort_req_check(const gs_sort_req *r, gs_err *err)
{
    if (!r)
        return gs_err_set(err, GS_EINVAL, "sort request: NULL request");
    if ((int)r->shape.dtype < 0 || r->shape.dtype >= GS_DT_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort request: dtype %d out of range",
                          (int)r->shape.dtype);
    if ((int)r->shape.payload < 0 || r->shape.payload >= GS_PL_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort request: payload %d out of range",
                          (int)r->shape.payload);
    if (r->shape.descending != 0 && r->shape.descending != 1)
        return gs_err_set(err, GS_EINVAL, "sort request: descending must be 0 or 1, not %d",
                          r->shape.descending);
    if (r->shape.stable != 0 && r->shape.stable != 1)
        return gs_err_set(err, GS_EINVAL, "sort request: stable must be 0 or 1, not %d",
                          r->shape.stable);
    if (r->shape.narrow) {
        const gs_narrow_info *nw = gs_narrow_row(r->shape.narrow);
        if (!nw || nw->bytes != 2 || r->shape.dtype != GS_DT_U32 || !gs_shape_flat(&r->shape))
            return gs_err_set(err, GS_EINVAL, "sort request: narrow keys of type %d are one "
                              "flat u32 request of a 16-bit type (u16, i16, f16, bf16)",
                              r->shape.narrow);
        if (gs_shape_has_bits(&r->shape) && nw->kind == GS_KIND_FLOAT)
            return gs_err_set(err, GS_EUNSUPPORTED, "sort request: a bit range needs integer "
                              "keys, not %s", nw->name);
    }
    size_t ks = gs_shape_key_bytes(&r->shape), vs = gs_payload_size(r->shape.payload);
    if (r->n > SIZE_MAX / ks || (vs && r->n > SIZE_MAX / vs))
        return gs_err_set(err, GS_ETOOBIG, "sort request: %zu %s elements overflow "
                          "the address space", r->n, gs_dtype_name(r->shape.dtype));
    if (r->shape.rows > 1 && (uint64_t)r->n % r->shape.rows)
        return gs_err_set(err, GS_EINVAL, "sort request: %llu rows do not divide %zu keys "
                          "into equal rows", (unsigned long long)r->shape.rows, r->n);
    if (r->shape.segments) {
        int rc = check_segments(r, err);
        if (rc < 0)
            return rc;
    }
    if (r->shape.topk) {
        uint64_t len = r->shape.rows > 1 ? (uint64_t)r->n / r->shape.rows : (uint64_t)r->n;
        if (r->shape.k > len)
            return gs_err_set(err, GS_EINVAL, "sort request: top-k of k=%llu from rows of "
                              "%llu keys (k must not exceed a row's length)",
                              (unsigned long long)r->shape.k, (unsigned long long)len);
    }
    if (gs_shape_has_bits(&r->shape)) {
        const unsigned kb = (unsigned)ks * 8;
        if (gs_dtype_row(r->shape.dtype)->kind == GS_KIND_FLOAT)
            return gs_err_set(err, GS_EUNSUPPORTED, "sort request: a bit range needs integer "
                              "keys, not %s", gs_dtype_name(r->shape.dtype));
        if (r->shape.begin_bit >= r->shape.end_bit || r->shape.end_bit > kb)
            return gs_err_set(err, GS_EINVAL, "sort request: bit range [%u, %u) is not within "
                              "the %u bits of a %s key (0 <= begin_bit < end_bit <= %u)",
                              r->shape.begin_bit, r->shape.end_bit, kb,
                              gs_dtype_name(r->shape.dtype), kb);
        if (!gs_shape_flat(&r->shape))
            return gs_err_set(err, GS_EUNSUPPORTED, "sort request: a bit range sorts one flat "
                              "array, not rows, top-k or segments");
    }
    if (r->shape.payload == GS_PL_IDX32 && (uint64_t)r->n > UINT32_MAX)
        return gs_err_set(err, GS_ETOOBIG, "sort request: idx32 cannot index %zu "
                          "elements (use idx64)", r->n);
    if (r->n == 0)
        return 0;
    if (!r->keys)
        return gs_err_set(err, GS_EINVAL, "sort request: keys is NULL for n=%zu", r->n);
    if (vs && !r->values)
        return gs_err_set(err, GS_EINVAL, "sort request: payload %s needs a values "
                          "buffer, got NULL", gs_payload_name(r->shape.payload));
    if (vs) {
        uintptr_t k0 = (uintptr_t)r->keys, v0 = (uintptr_t)r->values;
        if (k0 < v0 + r->n * vs && v0 < k0 + r->n * ks)
            return gs_err_set(err, GS_EINVAL, "sort request: keys and values overlap");
    }
    return 0;
}

/* ---- helpers for algorithm implementations ---- */

int gs_params_take(const char *algo, const gs_param_def *defs, size_t ndefs,
                   const gs_params *p, const gs_params *dflt, long *v, gs_err *err)
{
    if (!p)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: no parameter set given", algo);
    unsigned char seen[GS_MAX_PARAMS] = { 0 };
    if (ndefs > GS_MAX_PARAMS)
        return gs_err_set(err, GS_EINVAL, "%s: more than %d parameters", algo, GS_MAX_PARAMS);
    for (int i = 0; i < p->count; i++) {
        size_t k = 0;
        while (k < ndefs && strcmp(p->p[i].name, defs[k].name) != 0)
            k++;
        if (k == ndefs) {
            char known[256] = "";
            for (size_t j = 0; j < ndefs; j++) {
                size_t l = strlen(known);
                snprintf(known + l, sizeof known - l, "%s%s", j ? ", " : "", defs[j].name);
            }
            return gs_err_set(err, GS_EUNSUPPORTED, "%s: unknown parameter '%s' (known: %s)",
                              algo, p->p[i].name, known);
        }
        v[k] = p->p[i].value;
        seen[k] = 1;
    }
    for (size_t j = 0; j < ndefs; j++) {
        if (seen[j])
            continue;
        /* one rule everywhere (issue 34): a name left out takes its default */
        if (!dflt || !gs_params_has(dflt, defs[j].name))
            return gs_err_set(err, GS_EUNSUPPORTED, "%s: missing parameter '%s'", algo,
                              defs[j].name);
        v[j] = gs_params_get(dflt, defs[j].name, 0);
    }
    return 0;
}

int gs_check_device_wg(const char *algo, const gs_dev *dev, long wg, gs_err *err)
{
    if (!dev)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: needs an OpenCL device", algo);
    if ((uint64_t)wg > (uint64_t)dev->info.max_wg_size)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "%s: wg_size=%ld exceeds the device's max work-group size "
                          "(CL_DEVICE_MAX_WORK_GROUP_SIZE) %zu", algo, wg, dev->info.max_wg_size);
    return 0;
}

size_t gs_values_pow2(long lo, long hi, long *out, size_t cap)
{
    size_t n = 0;
    for (long w = lo; w <= hi && n < cap; w *= 2)
        out[n++] = w;
    return n;
}

size_t gs_values_list(const long *list, size_t nlist, long *out, size_t cap)
{
    size_t n = 0;
    for (; n < nlist && n < cap; n++)
        out[n] = list[n];
    return n;
}

size_t gs_values_threads(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    long cpus = (long)gs_hostpool_cpus(), list[32];
    size_t n = 0;
    for (long t = 1; t < cpus && n < 31; t *= 2)
        list[n++] = t;
    list[n++] = cpus;
    return gs_values_list(list, n, out, cap);
}

long gs_max_wg(const gs_dev_info *info, long cap)
{
    if (info && info->max_wg_size && (long)info->max_wg_size < cap)
        return (long)info->max_wg_size;
    return cap;
}

int gs_check_buffers(const char *algo, const gs_dev_info *in, uint64_t n, size_t ks,
                     size_t vs, gs_err *err)
{
    const struct { const char *what; uint64_t bytes; } b[2] = {
        { "keys", n * ks }, { "values", n * vs },
    };
    for (int i = 0; i < 2; i++)
        if (b[i].bytes > in->max_alloc)
            return gs_err_set(err, GS_ETOOBIG,
                              "%s: %llu %s need %llu-byte buffers, above the device's max "
                              "allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE) of %llu bytes", algo,
                              (unsigned long long)n, b[i].what, (unsigned long long)b[i].bytes,
                              (unsigned long long)in->max_alloc);
    return 0;
}

int gs_check_global_mem(const char *algo, const gs_dev_info *in, uint64_t n, uint64_t total,
                        const char *what, gs_err *err)
{
    if (in->global_mem && total > in->global_mem)
        return gs_err_set(err, GS_ETOOBIG,
                          "%s: %llu keys need about %llu bytes of device memory (%s), above the "
                          "device's global memory (CL_DEVICE_GLOBAL_MEM_SIZE) of %llu bytes",
                          algo, (unsigned long long)n, (unsigned long long)total, what,
                          (unsigned long long)in->global_mem);
    return 0;
}

/* ---- running ---- */

void gs_sort_stats_add(gs_sort_stats *sum, const gs_sort_stats *s)
{
    sum->upload_ms += s->upload_ms;
    sum->kernel_ms += s->kernel_ms;
    sum->download_ms += s->download_ms;
    sum->passes += s->passes;
    sum->passes_skipped += s->passes_skipped;
    sum->nans_on_device += s->nans_on_device;
    sum->setup_ms += s->setup_ms;
    sum->enqueue_ms += s->enqueue_ms;
    sum->wait_ms += s->wait_ms;
    sum->writeback_ms += s->writeback_ms;
    sum->release_ms += s->release_ms;
}

/* ---- rows and segments ----
 * A request whose n keys are `rows` equal rows, each sorted on its own (a
 * 2-D C-contiguous array along its last axis, np.sort(a, axis=-1); issue
 * 38), or S segments of any lengths given by offsets (CUB's segmented
 * sort; rows are the case of equal segments). Every algorithm serves them
 * unchanged: each part is a request of its own, run through gs_sort_run,
 * so NaN rules, payloads and argsort indices (counted from 0 within the
 * part, as numpy's) are the flat sort's. A host algorithm's parts run side
 * by side on the host pool, one thread each (its `threads` parameter set
 * to 1); a device algorithm's one after another on its device, which is
 * correct and, for many short parts, slow; an algorithm with `rows`
 * (bitonic, the host sort) takes equal rows whole instead, and one with
 * `segments` (the host sort: host_rows.c) segments. The first part that fails
 * stops the rest and its error is the request's; parts sorted before it
 * stay sorted. */

typedef struct rows_job {
    const gs_algo *a;
    gs_sort_ctx ctx;
    const gs_sort_req *req;
    const gs_params *p;
    pthread_mutex_t mu;
    int rc;                 /* the first failure (under mu) */
    gs_err err;
    gs_sort_stats sum;      /* the parts' transfers and kernels, added up (under mu) */
    size_t done;            /* parts sorted (under mu) */
    int touched;            /* a part wrote, or failed after others had (under mu) */
} rows_job;

/* The part [lo, lo + len) of req as a request of its own, no rows or
 * segments. */
static gs_sort_req req_slice(const gs_sort_req *req, size_t lo, size_t len)
{
    const size_t ks = gs_dtype_size(req->shape.dtype), vs = gs_payload_size(req->shape.payload);
    gs_sort_req s = *req;
    s.shape.rows = 0;
    s.shape.segments = 0;
    s.offsets = NULL;
    s.n = len;
    s.keys = (char *)req->keys + lo * ks;
    s.values = vs ? (char *)req->values + lo * vs : NULL;
    return s;
}

gs_sort_req gs_sort_req_row(const gs_sort_req *req, size_t r)
{
    const size_t len = req->n / (size_t)req->shape.rows;
    return req_slice(req, r * len, len);
}

gs_sort_req gs_sort_req_whole(const gs_sort_req *req)
{
    gs_sort_req w = *req;
    w.shape.topk = 0;
    w.shape.k = 0;
    w.shape.unsorted = 0;
    return w;
}

gs_sort_req gs_sort_req_segment(const gs_sort_req *req, size_t s)
{
    const uint64_t *o = req->offsets;
    return req_slice(req, (size_t)o[s], (size_t)(o[s + 1] - o[s]));
}

size_t gs_sort_req_longest(const gs_sort_req *req, size_t *at)
{
    const uint64_t *o = req->offsets;
    size_t most = 0, where = 0;
    for (size_t s = 0; s < (size_t)req->shape.segments; s++)
        if (o[s + 1] - o[s] > most) {
            most = (size_t)(o[s + 1] - o[s]);
            where = s;
        }
    if (at)
        *at = where;
    return most;
}

static void row_task(void *arg, size_t r, unsigned worker)
{
    rows_job *j = arg;
    (void)worker;
    pthread_mutex_lock(&j->mu);
    int stop = j->rc < 0;
    pthread_mutex_unlock(&j->mu);
    if (stop)
        return;
    const int seg = j->req->shape.segments != 0;
    gs_sort_req s = seg ? gs_sort_req_segment(j->req, r) : gs_sort_req_row(j->req, r);
    if (s.n < 2 && s.shape.payload != GS_PL_IDX32 && s.shape.payload != GS_PL_IDX64) {
        pthread_mutex_lock(&j->mu);     /* nothing to move (an index still has a 0 to write) */
        j->done++;
        pthread_mutex_unlock(&j->mu);
        return;
    }
    gs_sort_ctx ctx = j->ctx;
    gs_sort_stats st;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_sort_run(j->a, &ctx, &s, j->p, &st, &e);
    pthread_mutex_lock(&j->mu);
    gs_sort_stats_add(&j->sum, &st);
    j->touched |= st.output_touched || j->done > 0;
    if (rc == 0) {
        j->done++;
    } else if (j->rc == 0) {
        j->rc = rc;
        gs_err_set(&j->err, rc, "%s %zu of %llu: %s", seg ? "segment" : "row", r,
                   (unsigned long long)(seg ? j->req->shape.segments : j->req->shape.rows),
                   e.msg);
    }
    pthread_mutex_unlock(&j->mu);
}

static int sort_rows(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                     const gs_params *p, gs_sort_stats *st, gs_err *err)
{
    rows_job j = { .a = a, .ctx = *ctx, .req = req, .p = p };
    gs_err_clear(&j.err);
    size_t rows = (size_t)(req->shape.segments ? req->shape.segments : req->shape.rows);
    if (!req->shape.segments && req->n / rows == 0)     /* empty rows */
        return 0;
    pthread_mutex_init(&j.mu, NULL);
    if (a->uses_device) {
        for (size_t r = 0; r < rows && j.rc == 0; r++)
            row_task(&j, r, 0);
        gs_sort_stats_add(st, &j.sum);
        st->output_touched |= j.touched;
    } else {
        /* one thread a part, parts side by side: a part's own threads would
         * only split work the pool already spreads */
        gs_params one;
        if (p)
            one = *p;
        else
            gs_params_clear(&one);
        for (size_t i = 0; i < a->nparams; i++)
            if (!strcmp(a->params[i].name, "threads"))
                gs_params_set(&one, "threads", 1);
        j.p = &one;
        gs_hostpool_team team;
        unsigned workers = gs_hostpool_join(&team, gs_hostpool_cpus() - 1);
        if (workers > 1 && rows > 1)
            gs_hostpool_for(&team, rows, row_task, &j);
        else
            for (size_t r = 0; r < rows && j.rc == 0; r++)
                row_task(&j, r, 0);
        gs_hostpool_leave(&team);
        st->output_touched = 1;
    }
    pthread_mutex_destroy(&j.mu);
    if (j.rc < 0 && err)
        *err = j.err;
    return j.rc;
}

/* One row's top-k on the host: the select (gs_select.c), or where k is a
 * large part of the row a whole sort by a, whose first k are the answer
 * (an algorithm that cannot sort it whole, as vqsort with values: the
 * select at any k). */
static int topk_host(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                     const gs_params *p, gs_sort_stats *st, gs_err *err)
{
    st->output_touched = 1;
    gs_sort_req whole = gs_sort_req_whole(req);
    if ((size_t)req->shape.k * GS_SELECT_FULL_DIV > req->n &&
        !(a->check && a->check(NULL, &whole, p, NULL) < 0))
        return gs_sort_run(a, ctx, &whole, p, NULL, err);
    long threads = gs_params_get(p, "threads", 0);
    return gs_select_run(req, threads > 0 ? (unsigned)threads : 0, err);
}

/* A bit range with an algorithm that sorts whole keys: the range's words
 * sorted stably with the keys or an index (gs_bits.c), which then move
 * the caller's arrays; those are written only after the words' sort
 * succeeded, so a failed run can be served again elsewhere. threads=1
 * (libgsort's sort in the caller's process) keeps to the caller's thread. */
static int sort_bits(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                     const gs_params *p, gs_sort_stats *st, gs_err *err)
{
    gs_bits_job jb;
    int rc = gs_bits_words(&jb, req, gs_params_get(p, "threads", 0) == 1, err);
    if (rc < 0)
        return rc;
    rc = gs_sort_run(a, ctx, &jb.words, p, st, err);
    st->output_touched = 0;     /* an argsort's indices are output, not input */
    if (rc == 0) {
        gs_bits_answer(&jb);
        st->output_touched = 1;
    }
    gs_bits_free(&jb);
    return rc;
}

int gs_sort_run(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                const gs_params *p, gs_sort_stats *st, gs_err *err)
{
    gs_sort_stats local_st;
    gs_sort_ctx local_ctx = { 0 };
    gs_params none;
    if (!st)
        st = &local_st;
    memset(st, 0, sizeof *st);
    if (!ctx)
        ctx = &local_ctx;
    if (!p) {
        gs_params_clear(&none);
        p = &none;
    }
    if (!a)
        return gs_err_set(err, GS_EINVAL, "sort: no algorithm");
    int rc = gs_sort_req_check(req, err);
    if (rc < 0)
        return rc;
    if ((req->shape.stable || gs_shape_has_bits(&req->shape)) && !a->stable)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: the request needs a stable sort%s and "
                          "this algorithm is not stable", a->name,
                          req->shape.stable ? "" : " (its bit range keeps ties in input order)");
    if (req->shape.topk && a->uses_device && !a->stable)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: top-k answers as a stable sort's first "
                          "k, and this algorithm is not stable", a->name);
    if (a->uses_device && !ctx->dev)
        return gs_err_set(err, GS_ENODEV, "%s: this algorithm needs a device", a->name);
    if (req->shape.narrow && !a->half_keys)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: sorts no 16-bit keys (%s)", a->name,
                          gs_narrow_row(req->shape.narrow)->name);
    if (a->check && (rc = a->check(ctx->dev, req, p, err)) < 0) {
        size_t nl = strlen(a->name);
        if (err && !(strncmp(err->msg, a->name, nl) == 0 && err->msg[nl] == ':'))
            gs_err_prefix(err, "%s: ", a->name);    /* say which algorithm refused */
        return rc;
    }
    if (!a->run)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: not implemented", a->name);

    double t0 = gs_now_ms();
    if (req->n == 0) {          /* nothing to do; spares device algorithms */
        st->wall_ms = gs_now_ms() - t0;
        return 0;
    }
    gs_sort_req whole;
    if (req->shape.topk) {
        if (req->shape.k == 0) {
            st->wall_ms = gs_now_ms() - t0;
            return 0;
        }
        if (a->topk) {              /* a select of its own (the device's), every row */
            rc = a->run(ctx, req, p, st, err);
            st->wall_ms = gs_now_ms() - t0;
            return rc;
        }
        if (!a->uses_device) {      /* a select on the host (gs_select.c), row by row */
            rc = req->shape.rows > 1 ? sort_rows(a, ctx, req, p, st, err)
                                     : topk_host(a, ctx, req, p, st, err);
            st->wall_ms = gs_now_ms() - t0;
            return rc;
        }
        /* a device sorts the rows whole: their first k are the answer */
        whole = gs_sort_req_whole(req);
        req = &whole;
    }
    if ((req->shape.segments && !a->segments) || (req->shape.rows > 1 && !a->rows)) {
        /* each row or segment a request of its own (sort_rows) */
        rc = sort_rows(a, ctx, req, p, st, err);
        st->wall_ms = gs_now_ms() - t0;
        return rc;
    }
    if (gs_shape_has_bits(&req->shape) && !a->bit_range) {
        rc = sort_bits(a, ctx, req, p, st, err);
        st->wall_ms = gs_now_ms() - t0;
        return rc;
    }
    gs_nan_save ns = { 0, NULL, NULL };
    int on_device = a->keeps_bits || (a->keeps_nan && gs_keys_nan_on_device(req));
    if (!on_device && (rc = gs_keys_nan_save(req, &ns, err)) < 0)
        return rc;
    rc = a->run(ctx, req, p, st, err);
    if (rc == 0)
        gs_keys_nan_restore(req, &ns);
    gs_keys_nan_free(&ns);
    st->wall_ms = gs_now_ms() - t0;
    if (rc < 0) {
        if (err && err->code != rc)
            gs_err_set(err, rc, "%s: failed (%s)", a->name, gs_strerror(rc));
        return rc;
    }
    GS_DEBUG("%s: sorted %zu %s (%s, payload %s) in %.3f ms", a->name, req->n,
             gs_dtype_name(req->shape.dtype), req->shape.descending ? "desc" : "asc",
             gs_payload_name(req->shape.payload), st->wall_ms);
    return 0;
}
