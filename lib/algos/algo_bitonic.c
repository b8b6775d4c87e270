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
 * short segments take one launch, not one device sort each.
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

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BI_MIN_WG 16L
#define BI_MAX_WG 1024L
#define BI_MIN_TILE 64L
#define BI_MAX_RUN 16L        /* keys a work-item sorts in registers at a time */
#define BI_MAX_TILE 16384L   /* keys a group holds: bounds the unrolled network, and
                                positions fit 16 bits */

enum { P_WG = 0, P_TILE, P_RUN, P_COUNT };

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

static const gs_param_def bi_params[P_COUNT] = {
    { "wg_size", "work-items per work-group (power of two; at most half the tile)", values_wg,
      0 },
    { "tile", "fewest keys a work-group sorts (power of two): rows shorter than it are sorted "
      "several to a group; a longer row takes a group alone", values_tile, 1 },
    { "run", "most keys a work-item sorts in registers at a time (power of two): stages that "
      "pair keys closer than this skip local memory", values_run, 0 },
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
}

/* Keys and their 16-bit positions with a slot of padding every 32 (see
 * kernels/bitonic.cl), and room for what the compiler adds (NVIDIA's takes
 * 8 bytes more than the arrays). */
static size_t local_bytes(size_t tile, size_t ks)
{
    return (tile + tile / 32) * (ks + 2) + 64;
}

/* What one sort runs with: the parameters, the row shape, the tile and
 * work-group the kernel is built for. */
typedef struct bi_run {
    long v[P_COUNT];
    size_t len, p, lp, tile, wg, rc, lc;
    uint64_t rows;
    int seg;                  /* segments: rows of unequal lengths, len the longest */
    cl_mem off;               /* their offsets on the device (else unused) */
    char opts[128];
    char kname[40];
    cl_kernel k;
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
    return 0;
}

/* The shape of req's sort on a device like info (never NULL: check() and
 * run have a device): refuses a row longer than a group's local memory
 * holds. */
static int plan_run(const gs_dev_info *info, const gs_sort_req *req, const long v[P_COUNT],
                    bi_run *r, gs_err *err)
{
    const size_t ks = gs_dtype_size(req->shape.dtype);
    r->seg = req->shape.segments != 0;
    r->rows = r->seg ? req->shape.segments : req->shape.rows > 1 ? req->shape.rows : 1;
    /* segments: the longest, from the request's checked private copy */
    r->len = r->seg ? gs_sort_req_longest(req, NULL) : req->n / (size_t)r->rows;
    /* padded: the power of two at or above len, at least 2 */
    for (r->p = 2, r->lp = 1; r->p < r->len; r->lp++)
        r->p *= 2;
    const uint64_t room = info->local_mem;
    if (r->p > (size_t)BI_MAX_TILE || local_bytes(r->p, ks) > room) {
        size_t most = BI_MAX_TILE;
        while (most > 2 && local_bytes(most, ks) > room)
            most /= 2;
        return gs_err_set(err, GS_EUNSUPPORTED, "bitonic: a %s of %zu keys (%zu padded) does "
                          "not fit a work-group's local memory (%llu bytes): %ss of up to %zu "
                          "%zu-byte keys do", r->seg ? "segment" : "row", r->len, r->p,
                          (unsigned long long)room, r->seg ? "segment" : "row", most, ks);
    }
    r->tile = (size_t)v[P_TILE] > r->p ? (size_t)v[P_TILE] : r->p;
    while (r->tile > r->p && local_bytes(r->tile, ks) > room)
        r->tile /= 2;
    r->wg = (size_t)v[P_WG];
    while (r->wg > r->tile / 2)
        r->wg /= 2;
    /* runs of up to `run` keys a work-item in registers (the tile holds at
     * least two keys a work-item) */
    for (r->rc = 2, r->lc = 1; r->rc < (size_t)v[P_RUN] && r->rc * 2 * r->wg <= r->tile; r->lc++)
        r->rc *= 2;
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
    snprintf(r->opts, sizeof r->opts, "-DWG=%zu -DTILE=%zu -DP=%zu -DLP=%zu -DRC=%zu -DLC=%zu%s",
             r->wg, r->tile, r->p, r->lp, r->rc, r->lc, r->seg ? " -DBI_SEGS=1" : "");
    int rc = gs_prog_get(d->cr.dev, d->ctx->pc, (const char *[]){ "keys", "bitonic", NULL },
                         r->opts, &d->prog, NULL, err);
    if (rc)
        return rc;
    d->wg = r->wg;
    snprintf(r->kname, sizeof r->kname, "bitonic_%s_k%d_v%d", r->seg ? "segs" : "rows",
             (int)d->ks * 8, (int)d->vs * 8);
    return gs_devrun_kernel(d, r->kname, &r->k, err);
}

static int bi_buffers(gs_devrun *d, void *self, gs_err *err)
{
    bi_run *r = self;
    /* no values: the kernel never touches these arguments; nor the
     * offsets of equal rows */
    r->vin = d->vs ? d->vals[0] : d->keys[0];
    r->vout = d->vs ? d->vals[1] : d->keys[1];
    r->off = d->keys[0];
    if (!r->seg)
        return 0;
    const size_t ob = ((size_t)r->rows + 1) * sizeof *d->req->offsets;
    int rc = gs_clrun_buffer(&d->cr, ob, "segment offsets", &r->off, err);
    return rc ? rc : gs_clrun_upload(&d->cr, r->off, d->req->offsets, ob, err);
}

static int bi_sort(gs_devrun *d, void *self, gs_err *err)
{
    bi_run *r = self;
    const cl_ulong rows = r->rows;
    const cl_uint len = (cl_uint)r->len;
    const cl_uint kind = gs_keys_kind(d->req->shape.dtype);
    const cl_uint desc = d->req->shape.descending ? 1 : 0, iota = d->idx ? 1 : 0;
    const size_t rpg = r->tile / r->p;
    const size_t groups = (size_t)((rows + rpg - 1) / rpg);
    gs_karg a[] = { GS_KARG(d->keys[0]), GS_KARG(d->keys[1]), GS_KARG(r->vin), GS_KARG(r->vout),
                    GS_KARG(rows), GS_KARG(len), GS_KARG(kind), GS_KARG(desc), GS_KARG(iota),
                    GS_KARG(r->off) };
    int rc;
    if ((rc = gs_clrun_args(r->k, r->kname, a, 10, err)) ||
        (rc = gs_clrun_launch(&d->cr, r->k, r->kname, groups, r->wg, err)))
        return rc;
    d->cur = 1;
    d->st->passes = 1;
    return 0;
}

static double bi_kernel_ms(gs_devrun *d, void *self)
{
    bi_run *r = self;
    double ms = gs_clrun_kernel_ms(&d->cr);
    GS_DEBUG("bitonic: %llu %s of %s%zu keys (padded %zu), tile %zu, %zu work-items, runs of "
             "%zu in registers: %.3f ms", (unsigned long long)r->rows, r->seg ? "segments" : "rows",
             r->seg ? "up to " : "", r->len, r->p, r->tile, r->wg, r->rc, ms);
    return ms;
}

static const gs_devrun_ops bi_ops = {
    .algo = &gs_algo_bitonic,
    .second = { "keys (output)", "values (output)" },
    .finish_what = "bitonic sort",
    /* Safe on the client's own pages as built: every position the kernel
     * forms comes from the row shape and positions it made itself, never
     * from a key (see kernels/bitonic.cl). */
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
    return gs_devrun_sort(&bi_ops, &r, ctx, req, st, err);
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
