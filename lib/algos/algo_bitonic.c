/* The local-memory bitonic sort ("bitonic"): host side of
 * kernels/bitonic.cl. One launch sorts every row of a request (shape.rows
 * equal rows, issue 38; a flat request is one row), each work-group a tile
 * of rows held in local memory, so a short array is sorted in one dispatch
 * with no pass through global memory between stages (issue 36) and many
 * short rows in one dispatch instead of one sort each. It serves rows up to
 * what fits a group's local memory (4096 keys of 32 or 64 bits on a GPU
 * with 48 KiB: a row is padded to a power of two) and refuses longer ones.
 * Segments too (shape.segments): every segment padded to the power of two
 * at or above the longest, their offsets uploaded for the kernel, so many
 * short segments take one launch, not one device sort each; or, where
 * that padding would waste more than a launch costs, one launch per size
 * class, each over a list of its segments (seg_classes).
 * Stable (pairs compare by key, then position), and every key leaves with
 * its own bit pattern, so neither the host nor the device saves NaN
 * patterns around it (keeps_bits). The tile and work-group are
 * compile-time (-D) options: a program per row length and parameter set,
 * built once and cached. */
#include "config.h"
#include "gs_algos.h"
#include "gs_devrun.h"
#include "gs_keys.h"
#include "gs_log.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BI_MIN_WG 16L
#define BI_MAX_WG 1024L
#define BI_MIN_TILE 64L
#define BI_MAX_RUN 16L        /* keys a work-item sorts in registers at a time */
#define BI_MAX_TILE 16384L   /* keys a group holds: bounds the unrolled network, and
                                positions fit 16 bits */

enum { P_WG = 0, P_TILE, P_RUN, P_CLASS, P_COUNT };

static size_t values_wg(const gs_dev_info *info, long *out, size_t cap)
{
    return gs_values_pow2(BI_MIN_WG, gs_max_wg(info, BI_MAX_WG), out, cap);
}

static size_t values_tile(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_pow2(BI_MIN_TILE, BI_MAX_TILE, out, cap);
}

static size_t values_run(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_pow2(2, BI_MAX_RUN, out, cap);
}

static size_t values_class(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_pow2(1L << 12, 1L << 40, out, cap);
}

static const gs_param_def bi_params[P_COUNT] = {
    { "wg_size", "work-items per work-group (power of two; at most half the tile)", values_wg,
      0 },
    { "tile", "fewest keys a work-group sorts (power of two): rows shorter than it are sorted "
      "several to a group; a longer row takes a group alone", values_tile, 1 },
    { "run", "most keys a work-item sorts in registers at a time (power of two): stages that "
      "pair keys closer than this skip local memory", values_run, 0 },
    { "class_work", "segments: compare-exchange steps a power-of-two length class must save "
      "to take a launch of its own instead of being padded to the next class up", values_class,
      0 },
};

/* On a GPU: wg 128, tile 1024, run 16, the fastest or within 2% of it at
 * rows of 64, 256, 1024 and 4096 u32 keys (2^26 keys, H100: 0.71, 1.12,
 * 1.83 and 2.94 ms, against 0.80, 1.27, 2.54 and 2.99 with wg 256, tile
 * 2048, run 8; docs/PERFORMANCE.md). */
static void bi_defaults(const gs_dev_info *info, gs_params *out)
{
    int gpu = info && (info->type & CL_DEVICE_TYPE_GPU);
    gs_params_clear(out);
    gs_params_set(out, "wg_size", gs_max_wg(info, gpu ? 128 : 16));
    gs_params_set(out, "tile", 1024);
    gs_params_set(out, "run", gpu ? 16 : 8);
    /* a launch costs ~10 us on a GPU, ~2^24 steps at the 2e12 steps a
     * second measured above (2^26 keys in rows of 64, 21 steps a key, in
     * 0.71 ms); a CPU device's launches are cheap but each class a program
     * to build, so it splits only where a class saves much more */
    gs_params_set(out, "class_work", gpu ? 1L << 24 : 1L << 26);
}

/* Keys and their 16-bit positions with a slot of padding every 32 (see
 * kernels/bitonic.cl), and room for what the compiler adds (NVIDIA's takes
 * 8 bytes more than the arrays). */
static size_t local_bytes(size_t tile, size_t ks)
{
    return (tile + tile / 32) * (ks + 2) + 64;
}

/* One launch's geometry: rows padded to p = 2^lp keys, tile keys a group,
 * wg work-items, runs of rc = 2^lc keys in registers; its rows (segments
 * of a size class), where their numbers start in the class list, and its
 * kernel. */
typedef struct bi_cls {
    size_t p, lp, tile, wg, rc, lc;
    uint64_t rows, at;
    char opts[128];
    cl_kernel k;
} bi_cls;

/* Launches one sort may take: segments by size class (below) */
#define BI_MAX_CLASSES 6

/* What one sort runs with: the parameters, the row shape, its launches. */
typedef struct bi_run {
    long v[P_COUNT];
    size_t len;               /* the longest row */
    uint64_t rows;            /* rows, or segments */
    int seg;                  /* segments: rows of unequal lengths */
    unsigned ncls;
    bi_cls cls[BI_MAX_CLASSES];
    cl_ulong *ids;            /* segments by class, non-empty ones (NULL: one class, every
                                 segment in order) */
    uint64_t nids;
    cl_mem off, idm;          /* offsets and class lists on the device (else unused) */
    char kname[40];
    cl_mem vin, vout;         /* the frame's values, or the keys where none */
} bi_run;

static int get_params(const gs_dev_info *info, const gs_params *p, long v[P_COUNT], gs_err *err)
{
    gs_params d;
    bi_defaults(info, &d);
    int rc = gs_params_take("bitonic", bi_params, P_COUNT, p, &d, v, err);
    if (rc)
        return rc;
    if (v[P_WG] < BI_MIN_WG || (v[P_WG] & (v[P_WG] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: wg_size=%ld is not a power of two "
                          ">= %ld", v[P_WG], BI_MIN_WG);
    if (v[P_TILE] < BI_MIN_TILE || v[P_TILE] > BI_MAX_TILE || (v[P_TILE] & (v[P_TILE] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: tile=%ld is not a power of two in "
                          "%ld..%ld", v[P_TILE], BI_MIN_TILE, BI_MAX_TILE);
    if (v[P_RUN] < 2 || v[P_RUN] > BI_MAX_RUN || (v[P_RUN] & (v[P_RUN] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: run=%ld is not a power of two in "
                          "2..%ld", v[P_RUN], BI_MAX_RUN);
    if (v[P_CLASS] < 1)
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: class_work=%ld is not positive",
                          v[P_CLASS]);
    return 0;
}

/* The launch geometry of rows padded to 2^lp keys on a device like info,
 * or GS_EUNSUPPORTED where they do not fit a group's local memory (`what`
 * and len name them in the message). */
static int geometry(const gs_dev_info *info, size_t ks, const long v[P_COUNT], size_t lp,
                    const char *what, size_t len, bi_cls *c, gs_err *err)
{
    c->lp = lp;
    c->p = (size_t)1 << lp;
    const uint64_t room = info->local_mem;
    if (c->p > (size_t)BI_MAX_TILE || local_bytes(c->p, ks) > room) {
        size_t most = BI_MAX_TILE;
        while (most > 2 && local_bytes(most, ks) > room)
            most /= 2;
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: a %s of %zu keys (%zu padded) does "
                          "not fit a work-group's local memory (%llu bytes): %ss of up to %zu "
                          "%zu-byte keys do", what, len, c->p, (unsigned long long)room, what,
                          most, ks);
    }
    c->tile = (size_t)v[P_TILE] > c->p ? (size_t)v[P_TILE] : c->p;
    while (c->tile > c->p && local_bytes(c->tile, ks) > room)
        c->tile /= 2;
    c->wg = (size_t)v[P_WG];
    while (c->wg > c->tile / 2)
        c->wg /= 2;
    /* runs of up to `run` keys a work-item in registers (the tile holds at
     * least two keys a work-item) */
    for (c->rc = 2, c->lc = 1; c->rc < (size_t)v[P_RUN] && c->rc * 2 * c->wg <= c->tile; c->lc++)
        c->rc *= 2;
    return 0;
}

/* log2 of the padded length of a row of len keys (at least 2) */
static size_t pad_log2(size_t len)
{
    size_t lp = 1;
    while (((size_t)1 << lp) < len)
        lp++;
    return lp;
}

/* The shape of req's sort on a device like info (never NULL: check() and
 * run have a device), one launch: refuses a row longer than a group's
 * local memory holds. */
static int plan_run(const gs_dev_info *info, const gs_sort_req *req, const long v[P_COUNT],
                    bi_run *r, gs_err *err)
{
    r->seg = req->shape.segments != 0;
    r->rows = r->seg ? req->shape.segments : req->shape.rows > 1 ? req->shape.rows : 1;
    /* segments: the longest, from the request's checked private copy */
    r->len = r->seg ? gs_sort_req_longest(req, NULL) : req->n / (size_t)r->rows;
    r->ncls = 1;
    r->cls[0].rows = r->rows;
    return geometry(info, gs_dtype_size(req->shape.dtype), v, pad_log2(r->len),
                    r->seg ? "segment" : "row", r->len, &r->cls[0], err);
}

/* Compare-exchange steps of a row padded to 2^lp keys, times its keys: a
 * launch's work per row. */
static double row_work(size_t lp)
{
    return ldexp((double)(lp * (lp + 1) / 2), (int)lp);
}

/* Segments by size class (as CUB's segmented sort groups them): padded to
 * the longest, short segments among long ones waste most of the work. A
 * power-of-two length gets a launch of its own where that saves at least
 * class_work compare-exchange steps (a launch's fixed cost, and a program
 * build on first use), going down from the longest: each launch takes the
 * segments from its length down to the next launch's. Empty segments then
 * take none. 0, with r's classes and their list set where more than one
 * launch pays; GS_ENOMEM for the list. */
static int seg_classes(bi_run *r, const gs_sort_req *req, const gs_dev_info *info,
                       gs_err *err)
{
    const uint64_t *o = req->offsets;
    const size_t S = (size_t)r->rows, top = r->cls[0].lp;
    uint64_t hist[64] = { 0 };
    for (size_t g = 0; g < S; g++) {
        size_t len = (size_t)(o[g + 1] - o[g]);
        if (len)
            hist[pad_log2(len)]++;
    }
    /* below[c]: segments padded to 2^c or less */
    uint64_t below[64] = { 0 };
    for (size_t c = 1; c <= top; c++)
        below[c] = below[c - 1] + hist[c];
    size_t lps[BI_MAX_CLASSES] = { top }, n = 1;
    for (size_t c = top; c-- > 1 && n < BI_MAX_CLASSES;)
        if (hist[c] && (double)below[c] * (row_work(lps[n - 1]) - row_work(c)) >=
                           (double)r->v[P_CLASS])
            lps[n++] = c;
    if (n == 1)
        return 0;
    const size_t ks = gs_dtype_size(req->shape.dtype);
    unsigned of[64];            /* class of each padded length */
    for (size_t c = 0, i = n - 1; c <= top; c++) {
        while (lps[i] < c)
            i--;
        of[c] = (unsigned)i;
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        bi_cls *k = &r->cls[i];
        int rc = geometry(info, ks, r->v, lps[i], "segment", (size_t)1 << lps[i], k, err);
        if (rc)
            return rc;          /* never: shorter than the longest, which fits */
        k->rows = 0;
        for (size_t c = 1; c <= top; c++)
            k->rows += of[c] == i ? hist[c] : 0;
        k->at = at;
        at += k->rows;
    }
    r->ids = malloc((at ? at : 1) * sizeof *r->ids);
    if (!r->ids)
        return gs_err_set(err, GS_ENOMEM, "bitonic: out of memory for %llu segments' classes",
                          (unsigned long long)at);
    uint64_t fill[BI_MAX_CLASSES];
    for (size_t i = 0; i < n; i++)
        fill[i] = r->cls[i].at;
    for (size_t g = 0; g < S; g++) {
        size_t len = (size_t)(o[g + 1] - o[g]);
        if (len)
            r->ids[fill[of[pad_log2(len)]]++] = g;
    }
    r->nids = at;
    r->ncls = (unsigned)n;
    return 0;
}

static int bi_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(dev ? &dev->info : NULL, p, v, err);
    if (rc)
        return rc;
    if ((rc = gs_check_device_wg("bitonic", dev, v[P_WG], err)))
        return rc;
    if (!req)
        return 0;
    const gs_dev_info *in = &dev->info;
    bi_run r;
    memset(&r, 0, sizeof r);
    if ((rc = plan_run(in, req, v, &r, err)))
        return rc;
    size_t ks = gs_dtype_size(req->shape.dtype), vs = gs_payload_size(req->shape.payload);
    if ((rc = gs_check_buffers("bitonic", in, req->n, ks, vs, err)))
        return rc;
    return gs_check_global_mem("bitonic", in, req->n, 2 * (uint64_t)req->n * (ks + vs),
                               "input and output", err);
}

static int bi_kernels(gs_devrun *d, void *self, gs_err *err)
{
    bi_run *r = self;
    snprintf(r->kname, sizeof r->kname, "bitonic_%s_k%d_v%d", r->seg ? "segs" : "rows",
             (int)d->ks * 8, (int)d->vs * 8);
    for (unsigned i = 0; i < r->ncls; i++) {
        bi_cls *c = &r->cls[i];
        snprintf(c->opts, sizeof c->opts, "-DWG=%zu -DTILE=%zu -DP=%zu -DLP=%zu -DRC=%zu "
                 "-DLC=%zu%s", c->wg, c->tile, c->p, c->lp, c->rc, c->lc,
                 r->seg ? " -DBI_SEGS=1" : "");
        int rc = gs_prog_get(d->cr.dev, d->ctx->pc, (const char *[]){ "keys", "bitonic", NULL },
                             c->opts, &d->prog, NULL, err);
        if (rc)
            return rc;
        d->wg = c->wg;
        if ((rc = gs_devrun_kernel(d, r->kname, &c->k, err)))
            return rc;
    }
    return 0;
}

static int bi_buffers(gs_devrun *d, void *self, gs_err *err)
{
    bi_run *r = self;
    /* no values: the kernel never touches these arguments; nor the
     * offsets and class lists of equal rows */
    r->vin = d->vs ? d->vals[0] : d->keys[0];
    r->vout = d->vs ? d->vals[1] : d->keys[1];
    r->off = r->idm = d->keys[0];
    if (!r->seg)
        return 0;
    const size_t ob = ((size_t)r->rows + 1) * sizeof *d->req->offsets;
    int rc = gs_clrun_buffer(&d->cr, ob, "segment offsets", &r->off, err);
    if (!rc)
        rc = gs_clrun_upload(&d->cr, r->off, d->req->offsets, ob, err);
    if (rc || !r->ids)
        return rc;
    const size_t ib = (size_t)r->nids * sizeof *r->ids;
    rc = gs_clrun_buffer(&d->cr, ib, "segments by size class", &r->idm, err);
    return rc ? rc : gs_clrun_upload(&d->cr, r->idm, r->ids, ib, err);
}

static int bi_sort(gs_devrun *d, void *self, gs_err *err)
{
    bi_run *r = self;
    const cl_uint len = (cl_uint)r->len;
    const cl_uint kind = gs_keys_kind(d->req->shape.dtype);
    const cl_uint desc = d->req->shape.descending ? 1 : 0, iota = d->idx ? 1 : 0;
    const cl_uint use_ids = r->ids != NULL;
    for (unsigned i = 0; i < r->ncls; i++) {
        const bi_cls *c = &r->cls[i];
        const cl_ulong rows = c->rows, at = c->at;
        const size_t rpg = c->tile / c->p;
        const size_t groups = (size_t)((rows + rpg - 1) / rpg);
        if (!groups)
            continue;
        gs_karg a[] = { GS_KARG(d->keys[0]), GS_KARG(d->keys[1]), GS_KARG(r->vin),
                        GS_KARG(r->vout), GS_KARG(rows), GS_KARG(len), GS_KARG(kind),
                        GS_KARG(desc), GS_KARG(iota), GS_KARG(r->off), GS_KARG(r->idm),
                        GS_KARG(at), GS_KARG(use_ids) };
        int rc;
        if ((rc = gs_clrun_args(c->k, r->kname, a, 13, err)) ||
            (rc = gs_clrun_launch(&d->cr, c->k, r->kname, groups, c->wg, err)))
            return rc;
    }
    d->cur = 1;
    d->st->passes = r->ncls;
    return 0;
}

static double bi_kernel_ms(gs_devrun *d, void *self)
{
    bi_run *r = self;
    double ms = gs_clrun_kernel_ms(&d->cr);
    char cls[160] = "";
    for (unsigned i = 0; r->ncls > 1 && i < r->ncls; i++)
        snprintf(cls + strlen(cls), sizeof cls - strlen(cls), "%s%llu of up to %zu",
                 i ? ", " : " in size classes: ", (unsigned long long)r->cls[i].rows,
                 r->cls[i].p);
    GS_DEBUG("bitonic: %llu %s of %s%zu keys (padded %zu)%s, tile %zu, %zu work-items, runs "
             "of %zu in registers: %.3f ms", (unsigned long long)r->rows,
             r->seg ? "segments" : "rows", r->seg ? "up to " : "", r->len, r->cls[0].p, cls,
             r->cls[0].tile, r->cls[0].wg, r->cls[0].rc, ms);
    return ms;
}

static const gs_devrun_ops bi_ops = {
    .algo = &gs_algo_bitonic,
    .second = { "keys (output)", "values (output)" },
    .finish_what = "bitonic sort",
    /* Safe on the client's own pages as built: every position the kernel
     * forms comes from the row shape, the offsets and class lists made from
     * the request's checked private copy, and positions it made itself,
     * never from a key (see kernels/bitonic.cl). */
    .safe_as_built = 1,
    .kernels = bi_kernels,
    .buffers = bi_buffers,
    .sort = bi_sort,
    .kernel_ms = bi_kernel_ms,
};

static int bi_run_sort(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                       gs_sort_stats *st, gs_err *err)
{
    bi_run r;
    memset(&r, 0, sizeof r);
    int rc = get_params(&ctx->dev->info, p, r.v, err);
    if (rc || (rc = plan_run(&ctx->dev->info, req, r.v, &r, err)))
        return rc;
    if (r.len == 0)
        return 0;
    if (r.seg && r.rows > 1)
        rc = seg_classes(&r, req, &ctx->dev->info, err);
    if (rc == 0)
        rc = gs_devrun_sort(&bi_ops, &r, ctx, req, st, err);   /* it waits for the queue */
    free(r.ids);
    return rc;
}

const gs_algo gs_algo_bitonic = {
    .name = "bitonic",
    .summary = "OpenCL bitonic sort in local memory: one launch, each work-group sorting rows "
               "that fit its local memory (short arrays, and many equal rows at once)",
    .stable = 1,
    .uses_device = 1,
    .rows = 1,
    .segments = 1,
    .keeps_bits = 1,
    /* Rows are planned by the audit (daemon/audit/gs_audit_shapes.c), not
     * the tuner; and flat it serves only arrays of up to
     * 4096 keys on a GPU, where the host sort in the caller's process wins:
     * as a candidate it spent a fifth of a quick tune's budget and builds
     * (NVIDIA H100, docs/PERFORMANCE.md) for no row of the plan. */
    .not_tuned = 1,
    .params = bi_params,
    .nparams = P_COUNT,
    .defaults = bi_defaults,
    .check = bi_check,
    .run = bi_run_sort,
};
