/* Radix sort's path for 16-bit keys alone (kernels/radix.cl, GS_K16):
 * their one 16-bit digit is counted, the counts scanned and each code's
 * run written back decoded, instead of two 8-bit passes that rank and move
 * every key twice. The device frame (gs_devrun.h) uploads, keeps NaN
 * patterns and writes back as for every device sort. */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_devrun.h"
#include "gs_narrow.h"
#include "radix_int.h"

/* kernels/radix.cl: CNT_CODES */
#define CODES ((size_t)1 << 16)
/* Keys a group of the count reads at least: each adds up to a slice's
 * 8192 counts to the global table at its end. Above a chunk per compute
 * unit, chunks grow instead of their number. */
#define CHUNK_MIN ((size_t)1 << 16)

/* From this many keys radix counts 16-bit keys alone on a GPU, unless a
 * test or gsort-bench says otherwise (gs_radix_force_count). This build
 * (slices counted in local memory, a fill that searches past empty codes,
 * 8-key loads) against radix's 8-bit passes on an H100, 2026-12-07
 * (.gpucarry/call46.sh, kernel ms, median of 9): 2^20 0.051 against 0.055,
 * 2^22 0.066 against 0.124, 2^24 0.208 against 0.365 (cupy.sort u16
 * 0.322), 2^27 1.64 against 2.34 (cupy 2.14); 16 distinct keys 0.073 /
 * 0.243 / 1.58 against 0.133 / 0.358 / 2.31 at 2^22 / 2^24 / 2^27. Below,
 * the first build lost (2^16: 0.071 against 0.040 ms): the count's five
 * launches cost more than two passes over few keys. A CPU device (PoCL)
 * keeps the passes: it was never timed there. */
#define COUNT_FROM ((size_t)1 << 20)

static _Atomic int count_forced = -1;

int gs_radix_force_count(int mode)
{
    return atomic_exchange(&count_forced, mode);
}

int gs_radix_counts(const gs_dev_info *info, const gs_sort_req *req)
{
    const gs_shape *s = &req->shape;
    const int forced = atomic_load(&count_forced);
    const int dflt = (info->type & CL_DEVICE_TYPE_GPU) && req->n >= COUNT_FROM;
    return (forced > 0 || (forced < 0 && dflt)) && s->narrow &&
           s->payload == GS_PL_NONE && gs_shape_flat(s) &&
           gs_shape_bit_lo(s) == 0 && gs_shape_bit_width(s) == 16 &&
           gs_radix_count_sb(info) && req->n <= UINT32_MAX;
}

typedef struct count_run {
    int bits;
    size_t wg, ept, chunks, blocks, slices;
    cl_uint un, chunk, kind, desc;
    char opts[160];
    cl_kernel k_zero, k_count, k_sums, k_scan, k_fill;
    cl_mem counts, bsum, starts;
} count_run;

static int count_kernels(gs_devrun *d, void *self, gs_err *err)
{
    count_run *c = self;
    /* the program radix's own passes would use here: no other build */
    int rc = gs_radix_program(d->ctx, c->bits, c->wg, c->ept, d->cr.hostile, 2,
                              c->opts, sizeof c->opts, &d->prog, err);
    if (rc)
        return rc;
    d->wg = c->wg;
    d->second = 0;    /* the fill writes over the keys */
    if ((rc = gs_devrun_kernel(d, "radix_count16_zero", &c->k_zero, err)) ||
        (rc = gs_devrun_kernel(d, "radix_count16", &c->k_count, err)) ||
        (rc = gs_devrun_kernel(d, "radix_count16_sums", &c->k_sums, err)) ||
        (rc = gs_devrun_kernel(d, "radix_count16_scan", &c->k_scan, err)) ||
        (rc = gs_devrun_kernel(d, "radix_count16_fill", &c->k_fill, err)))
        return rc;
    return 0;
}

static int count_buffers(gs_devrun *d, void *self, gs_err *err)
{
    count_run *c = self;
    int rc;
    if ((rc = gs_clrun_buffer(&d->cr, CODES * 4, "code counts", &c->counts, err)) ||
        (rc = gs_clrun_buffer(&d->cr, c->blocks * 4, "code block sums", &c->bsum, err)) ||
        (rc = gs_clrun_buffer(&d->cr, (CODES + 1) * 4, "code starts", &c->starts, err)))
        return rc;
    return 0;
}

/* Five launches, no read-back: zero the table, count, sum its blocks,
 * scan, fill. */
static int count_enqueue(gs_devrun *d, void *self, gs_err *err)
{
    count_run *c = self;
    gs_clrun *cr = &d->cr;
    const size_t zgroups = (CODES / c->wg + 15) / 16;
    const size_t fgroups = ((d->n + 7) / 8 + c->wg - 1) / c->wg;
    gs_karg az[] = { GS_KARG(c->counts) };
    gs_karg ac[] = { GS_KARG(d->keys[0]), GS_KARG(c->un), GS_KARG(c->chunk), GS_KARG(c->kind),
                     GS_KARG(c->desc), GS_KARG(c->counts) };
    gs_karg ab[] = { GS_KARG(c->counts), GS_KARG(c->bsum) };
    gs_karg as[] = { GS_KARG(c->counts), GS_KARG(c->bsum), GS_KARG(c->starts) };
    gs_karg af[] = { GS_KARG(c->starts), GS_KARG(c->un), GS_KARG(c->kind), GS_KARG(c->desc),
                     GS_KARG(d->keys[0]) };
    int rc;
    if ((rc = gs_clrun_args(c->k_zero, "radix_count16_zero", az, 1, err)) ||
        (rc = gs_clrun_launch(cr, c->k_zero, "radix_count16_zero", zgroups, c->wg, err)) ||
        (rc = gs_clrun_args(c->k_count, "radix_count16", ac, 6, err)) ||
        (rc = gs_clrun_launch(cr, c->k_count, "radix_count16", c->chunks * c->slices, c->wg,
                              err)) ||
        (rc = gs_clrun_args(c->k_sums, "radix_count16_sums", ab, 2, err)) ||
        (rc = gs_clrun_launch(cr, c->k_sums, "radix_count16_sums", c->blocks, c->wg, err)) ||
        (rc = gs_clrun_args(c->k_scan, "radix_count16_scan", as, 3, err)) ||
        (rc = gs_clrun_launch(cr, c->k_scan, "radix_count16_scan", c->blocks, c->wg, err)) ||
        (rc = gs_clrun_args(c->k_fill, "radix_count16_fill", af, 5, err)) ||
        (rc = gs_clrun_launch(cr, c->k_fill, "radix_count16_fill", fgroups, c->wg, err)))
        return rc;
    d->cur = 0;
    d->st->passes = 1;
    return 0;
}

/* The frame's algorithm: radix by name, NaN patterns saved and restored
 * by the frame (as for radix's flat passes) */
static const gs_algo count_frame = {
    .name = "radix",
    .stable = 1,
    .uses_device = 1,
    .keeps_nan = 1,
};

static const gs_devrun_ops count_ops = {
    .algo = &count_frame,
    .finish_what = "radix: counting",
    .kernels = count_kernels,
    .buffers = count_buffers,
    .sort = count_enqueue,
};

int gs_radix_count_sort(gs_sort_ctx *ctx, const gs_sort_req *req, int bits, size_t wg,
                        size_t ept, gs_sort_stats *st, gs_err *err)
{
    const gs_dev *dev = ctx->dev;
    count_run c;
    memset(&c, 0, sizeof c);
    c.bits = bits;
    c.wg = wg;
    c.ept = ept;
    /* chunks of a multiple of 8 keys (the count reads 8 at a time), at
     * least CHUNK_MIN, at most one a compute unit */
    const size_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    size_t chunk = (req->n + cu - 1) / cu;
    chunk = chunk < CHUNK_MIN ? CHUNK_MIN : (chunk + 7) & ~(size_t)7;
    c.chunk = (cl_uint)chunk;
    c.chunks = (req->n + chunk - 1) / chunk;
    c.blocks = CODES / (wg * 16);
    c.slices = (size_t)1 << (16 - gs_radix_count_sb(&dev->info));
    c.un = (cl_uint)req->n;
    c.kind = gs_radix_kind(&req->shape);
    c.desc = req->shape.descending ? 1 : 0;
    return gs_devrun_sort(&count_ops, &c, ctx, req, st, err);
}
