/* The OpenCL MergePath multisort ("mergepath", seed paper 002): host side of
 * kernels/mergepath.cl. It describes the three tunables (size_i, wg_size,
 * elems_per_thread) and their legal values on a device, rejects parameter
 * sets a device cannot run before anything is launched, and gives the
 * kernels of one sort to the device frame (gs_devrun.h: upload, NaN
 * patterns, download): one tile-sort launch (blocks of size_i sorted, then
 * merged in local memory up to a tile of wg_size x elems_per_thread); then
 * per global merge level a partition launch (merge-path splits per tile)
 * and a merge launch, keys and values ping-ponging between two device
 * buffers with no host round trip. Encoding happens in the first
 * kernel's loads, decoding in the last kernel's stores, and argsort indices
 * are made by the first kernel. */
#include "config.h"
#include "gs_algos.h"
#include "gs_devrun.h"
#include "gs_keys.h"

#include <stdio.h>
#include <string.h>

/* Positions are 32-bit in the kernels; a tile past n must still fit. */
#define MP_MAX_N UINT64_C(0xFFFF0000)
#define MP_MAX_TILE 32768L   /* 16-bit tile positions in local memory */
#define MP_MAX_EPT 32L
#define MP_MAX_SIZE_I 32L    /* blocks are sorted in registers, O(size_i^2) */
#define MP_MIN_WG 16L
#define MP_MAX_WG 1024L

enum { P_SIZE_I = 0, P_WG, P_EPT, P_COUNT };

/* ---- legal values ---- */

static long max_wg(const gs_dev_info *info)
{
    return gs_max_wg(info, MP_MAX_WG);
}

/* Local memory of the tile-sort and merge kernels: a tile of keys plus, with
 * a payload, a tile of 16-bit positions (mirrors kernels/mergepath.cl). */
static uint64_t local_bytes(long wg, long ept, size_t ks, size_t vs)
{
    uint64_t tile = (uint64_t)wg * (uint64_t)ept;
    return tile * ks + (vs ? 2 * tile : 2) + 8;
}

/* Every value 1..32 runs for the two per-element parameters; the lists are
 * ladders (odd values included: an odd stride avoids local-memory bank
 * conflicts) so a tuner's grid stays small. */
static const long ladder[] = { 1, 2, 3, 4, 5, 7, 8, 11, 12, 15, 16, 20, 23, 24, 31, 32 };
#define NLADDER (sizeof ladder / sizeof ladder[0])

static size_t values_size_i(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_list(ladder, NLADDER, out, cap);
}

static size_t values_wg(const gs_dev_info *info, long *out, size_t cap)
{
    return gs_values_pow2(MP_MIN_WG, max_wg(info), out, cap);
}

/* Only values whose smallest tile (wg_size 16) fits the widest shape. */
static size_t values_ept(const gs_dev_info *info, long *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NLADDER && n < cap; i++)
        if (!info || local_bytes(MP_MIN_WG, ladder[i], 8, 8) <= info->local_mem)
            out[n++] = ladder[i];
    return n;
}

static const gs_param_def mp_params[P_COUNT] = {
    { "size_i", "elements per initial sorted block (sorted in registers by one work-item)",
      values_size_i, 0 },
    { "wg_size", "work-items per work-group", values_wg, 0 },
    { "elems_per_thread", "outputs per work-item in every merge (tile = wg_size x "
      "elems_per_thread)", values_ept, 1 },
};

/* ---- parameter validation ---- */

/* Pull the values out of p, a name left out taking its default on this
 * device (info NULL: a CPU's), rejecting unknown names and values out of
 * range (device limits aside). */
static void mp_defaults(const gs_dev_info *info, gs_params *out);

static int get_params(const gs_dev_info *info, const gs_params *p, long v[P_COUNT],
                      gs_err *err)
{
    gs_params d;
    mp_defaults(info, &d);
    int rc = gs_params_take("mergepath", mp_params, P_COUNT, p, &d, v, err);
    if (rc)
        return rc;
    if (v[P_SIZE_I] < 1 || v[P_SIZE_I] > MP_MAX_SIZE_I)
        return gs_err_set(err, GS_EUNSUPPORTED, "mergepath: size_i=%ld out of range 1..%ld",
                          v[P_SIZE_I], MP_MAX_SIZE_I);
    if (v[P_WG] < MP_MIN_WG || v[P_WG] > MP_MAX_WG)
        return gs_err_set(err, GS_EUNSUPPORTED, "mergepath: wg_size=%ld out of range %ld..%ld",
                          v[P_WG], MP_MIN_WG, MP_MAX_WG);
    if (v[P_EPT] < 1 || v[P_EPT] > MP_MAX_EPT)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "mergepath: elems_per_thread=%ld out of range 1..%ld", v[P_EPT],
                          MP_MAX_EPT);
    long tile = v[P_WG] * v[P_EPT];
    if (tile > MP_MAX_TILE)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "mergepath: tile wg_size x elems_per_thread = %ld exceeds %ld "
                          "(16-bit tile positions)", tile, MP_MAX_TILE);
    if (v[P_SIZE_I] > tile)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "mergepath: size_i=%ld exceeds the tile wg_size x elems_per_thread "
                          "= %ld", v[P_SIZE_I], tile);
    return 0;
}

static int mp_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(dev ? &dev->info : NULL, p, v, err);
    if (rc)
        return rc;
    if ((rc = gs_check_device_wg("mergepath", dev, v[P_WG], err)))
        return rc;
    const gs_dev_info *in = &dev->info;
    /* Without a request, check the widest shape (64-bit keys and values). */
    size_t ks = req ? gs_dtype_size(req->shape.dtype) : 8;
    size_t vs = req ? gs_payload_size(req->shape.payload) : 8;
    uint64_t lb = local_bytes(v[P_WG], v[P_EPT], ks, vs);
    if (lb > in->local_mem)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "mergepath: wg_size=%ld elems_per_thread=%ld needs %llu bytes of local "
                          "memory (%zu-byte keys, %zu-byte values), device has %llu",
                          v[P_WG], v[P_EPT], (unsigned long long)lb, ks, vs,
                          (unsigned long long)in->local_mem);
    if (!req)
        return 0;
    uint64_t n = req->n;
    if (n > MP_MAX_N)
        return gs_err_set(err, GS_ETOOBIG,
                          "mergepath: n=%llu exceeds the %llu keys its 32-bit positions allow",
                          (unsigned long long)n, (unsigned long long)MP_MAX_N);
    uint64_t kb = n * ks, vb = n * vs;
    if ((rc = gs_check_buffers("mergepath", in, n, ks, vs, err)) != 0)
        return rc;
    /* ping-pong key and value buffers plus the partitions (4 bytes a tile) */
    uint64_t total = 2 * (kb + vb) + n / (uint64_t)(v[P_WG] * v[P_EPT]) * 4 + (UINT64_C(1) << 20);
    return gs_check_global_mem("mergepath", in, n, total, "double buffered", err);
}

/* Untuned defaults. GPU: 256 x 7 tiles (an odd elems_per_thread keeps the
 * strided local-memory accesses free of bank conflicts; the widest tile
 * takes 18 KiB of local memory, leaving room for a second group per compute
 * unit) and one block of 7 per work-item. CPU: 64 x 32 tiles with blocks of
 * 16, among the best of a sweep on PoCL (docs/PERFORMANCE.md): local memory
 * is cache there, and long serial runs per work-item beat more merge levels;
 * blocks of 32 were no faster and double PoCL's kernel compile time. The
 * tile shrinks until the widest request (64-bit keys and values) fits. */
static void mp_defaults(const gs_dev_info *info, gs_params *out)
{
    int gpu = info && (info->type & CL_DEVICE_TYPE_GPU);
    long size_i = gpu ? 7 : 16, wg = gpu ? 256 : 64, ept = gpu ? 7 : 32;
    while (wg > MP_MIN_WG && wg > max_wg(info))
        wg /= 2;
    if (info) {
        while (ept > 1 && local_bytes(wg, ept, 8, 8) > info->local_mem)
            ept = ept > 4 ? ept / 2 : ept - 1;
        while (wg > MP_MIN_WG && local_bytes(wg, ept, 8, 8) > info->local_mem)
            wg /= 2;
    }
    if (size_i > ept)
        size_i = ept;
    gs_params_clear(out);
    gs_params_set(out, "size_i", size_i);
    gs_params_set(out, "wg_size", wg);
    gs_params_set(out, "elems_per_thread", ept);
}

/* Merge levels of a tile (blocks of size_i up to `valid` elements) and of
 * the global phase (runs of `tile` up to n): what stats.passes reports. */
static unsigned levels(size_t first, size_t upto)
{
    unsigned l = 0;
    for (size_t w = first; w < upto; w *= 2)
        l++;
    return l;
}

/* ---- one sort ---- */

/* The kernel part of one sort, inside the device frame (gs_devrun.h). */
typedef struct mp_run {
    size_t size_i, wg, ept, tile, ngroups;
    unsigned gl;          /* global merge levels */
    char kn_local[32], kn_part[32], kn_merge[32];
    cl_kernel k_local, k_part, k_merge;
    cl_mem part;
    cl_mem raced;         /* hostile kernels' race flag (gs_clrun_raced), else NULL */
} mp_run;

/* Arguments (kin, kout, [vin, vout,] rest...) of a tile-sort or merge kernel. */
static int set_io_args(cl_kernel k, const char *name, const cl_mem *kb, const cl_mem *vb,
                       int has_vals, const gs_karg *rest, unsigned nrest, gs_err *err)
{
    gs_karg a[12];
    unsigned na = 0;
    a[na++] = (gs_karg){ sizeof kb[0], &kb[0] };
    a[na++] = (gs_karg){ sizeof kb[1], &kb[1] };
    if (has_vals) {
        a[na++] = (gs_karg){ sizeof vb[0], &vb[0] };
        a[na++] = (gs_karg){ sizeof vb[1], &vb[1] };
    }
    for (unsigned i = 0; i < nrest; i++)
        a[na++] = rest[i];
    return gs_clrun_args(k, name, a, na, err);
}

/* The program, built for client pages where the device adopts them
 * (gs_clrun.h), and its kernels. */
static int mp_kernels(gs_devrun *d, void *self, gs_err *err)
{
    mp_run *r = self;
    char opts[160];
    snprintf(opts, sizeof opts, "-DWG=%zu -DEPT=%zu -DSIZE_I=%zu%s", r->wg, r->ept, r->size_i,
             d->cr.hostile ? GS_HOSTILE_OPT : "");
    int rc = gs_prog_get(d->cr.dev, d->ctx->pc, (const char *[]){ "keys", "mergepath", NULL },
                         opts, &d->prog, NULL, err);
    if (rc)
        return rc;
    d->wg = r->wg;
    const int kw = (int)d->ks * 8, vw = (int)d->vs * 8;
    snprintf(r->kn_local, sizeof r->kn_local, "mp_local_k%d_v%d", kw, vw);
    snprintf(r->kn_part, sizeof r->kn_part, "mp_partition_k%d", kw);
    snprintf(r->kn_merge, sizeof r->kn_merge, "mp_merge_k%d_v%d", kw, vw);
    if ((rc = gs_devrun_kernel(d, r->kn_local, &r->k_local, err)) ||
        (r->gl && (rc = gs_devrun_kernel(d, r->kn_part, &r->k_part, err))) ||
        (r->gl && (rc = gs_devrun_kernel(d, r->kn_merge, &r->k_merge, err))))
        return rc;
    return 0;
}

/* The partitions, and the race flag that the merges of hostile kernels set */
static int mp_buffers(gs_devrun *d, void *self, gs_err *err)
{
    mp_run *r = self;
    int rc;
    if ((r->gl && (rc = gs_clrun_buffer(&d->cr, (r->ngroups + 1) * 4, "partitions", &r->part,
                                        err))) ||
        (r->gl && d->cr.hostile && (rc = gs_clrun_raced(&d->cr, &r->raced, err))))
        return rc;
    return 0;
}

/* The tile sort, then the merge levels, ping-ponging between the frame's
 * two buffers. */
static int mp_enqueue(gs_devrun *d, void *self, gs_err *err)
{
    mp_run *r = self;
    const size_t wg = r->wg, ngroups = r->ngroups;
    const cl_uint un = (cl_uint)d->n, ung = (cl_uint)ngroups;
    const cl_uint kind = gs_keys_kind(d->req->shape.dtype);
    const cl_uint desc = d->req->shape.descending ? 1 : 0;
    const int hv = d->vs != 0;
    int rc;
    /* tile sort: keys[0] -> keys[1]; decodes when it is the last kernel */
    {
        const cl_uint flags = (r->gl ? 0u : 1u) | (d->idx ? 2u : 0u);
        gs_karg rest[] = { GS_KARG(un), GS_KARG(kind), GS_KARG(desc), GS_KARG(flags) };
        if ((rc = set_io_args(r->k_local, r->kn_local, d->keys, d->vals, hv, rest, 4, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_local, r->kn_local, ngroups, wg, err)))
            return rc;
    }
    int cur = 1;
    size_t w = r->tile;
    for (unsigned l = 0; l < r->gl; l++, w *= 2) {
        const cl_uint uw = (cl_uint)w, flags = l + 1 == r->gl ? 1u : 0u;
        const cl_mem kb[2] = { d->keys[cur], d->keys[1 - cur] };
        const cl_mem vb[2] = { d->vals[cur], d->vals[1 - cur] };
        gs_karg pa[] = { GS_KARG(kb[0]), GS_KARG(un), GS_KARG(uw), GS_KARG(ung),
                         GS_KARG(r->part) };
        gs_karg rest[] = { GS_KARG(r->part), GS_KARG(un), GS_KARG(uw), GS_KARG(kind),
                           GS_KARG(desc), GS_KARG(flags), GS_KARG(r->raced) };
        if ((rc = gs_clrun_args(r->k_part, r->kn_part, pa, 5, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_part, r->kn_part, (ngroups + 1 + wg - 1) / wg,
                                  wg, err)) ||
            (rc = set_io_args(r->k_merge, r->kn_merge, kb, vb, hv, rest,
                              d->cr.hostile ? 7 : 6, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_merge, r->kn_merge, ngroups, wg, err)))
            return rc;
        cur = 1 - cur;
    }
    d->cur = cur;
    d->st->passes = levels(r->size_i, d->n < r->tile ? d->n : r->tile) + r->gl;
    return 0;
}

static const gs_devrun_ops mp_ops = {
    .algo = &gs_algo_mergepath,
    .finish_what = "mergepath: merges",
    .kernels = mp_kernels,
    .buffers = mp_buffers,
    .sort = mp_enqueue,
};

static int mp_run_sort(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                       gs_sort_stats *st, gs_err *err)
{
    /* gs_sort_run has checked the request and the parameters (mp_check),
     * handled n = 0 and owns st->wall_ms (see gs_algo.run). */
    gs_dev *dev = ctx->dev;
    long v[P_COUNT];
    get_params(dev ? &dev->info : NULL, p, v, err);
    mp_run r;
    memset(&r, 0, sizeof r);
    r.size_i = (size_t)v[P_SIZE_I];
    r.wg = (size_t)v[P_WG];
    r.ept = (size_t)v[P_EPT];
    r.tile = r.wg * r.ept;
    r.ngroups = (req->n + r.tile - 1) / r.tile;
    r.gl = levels(r.tile, req->n);
    return gs_devrun_sort(&mp_ops, &r, ctx, req, st, err);
}

const gs_algo gs_algo_mergepath = {
    .name = "mergepath",
    .summary = "OpenCL MergePath multisort: size_i blocks sorted in registers, merged in "
               "local memory per tile, then merge-path partitioned global merge levels",
    .stable = 1,
    .uses_device = 1,
    .keeps_nan = 1,
    .params = mp_params,
    .nparams = P_COUNT,
    .defaults = mp_defaults,
    .check = mp_check,
    .run = mp_run_sort,
};
