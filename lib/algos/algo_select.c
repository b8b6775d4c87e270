/* The device radix select ("select"): host side of kernels/select.cl,
 * for top-k requests only (issue 38). Where the host select
 * (lib/sort/gs_select.c) reads keys that are already in host memory, this
 * one finds the k of each row where the keys are on a device: one round a
 * digit (a count, and a pick of the bucket holding the k-th key, enqueued
 * back to back with no look from the host), then a pass taking the keys
 * below the k-th and one taking the earliest ties, and one group a row
 * ordering the k by (key, position). Only the keys go up; the k positions
 * and the k keys' own bits come back, read with the race flag into the
 * run's own memory and waited for once (issue 36: gs_clrun_fetch), looked
 * at before anything is placed; values are gathered on the host
 * from the request's arrays by those positions (argsort: the positions
 * are the indices), all written to each row's first k places as the host
 * select writes them. Stable in the sense of top-k: of keys equal to the
 * k-th, the earliest. No NaN save is needed: keys are never moved on the
 * device, and the answers are the input's own bits. Rows of up to 2^32
 * keys; k up to SEL_KMAX (a group's local memory orders them: a program for
 * each power of two at or above k). Not a sort:
 * every other request is refused, so the tuner leaves it out and the
 * daemon routes top-k to it only where the client names a device. */
#include "config.h"
#include "gs_algos.h"
#include "gs_cl.h"
#include "gs_clrun.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEL_KMAX 2048L
#define SEL_MIN_WG 16L
#define SEL_MAX_WG 1024L
#define SEL_MAX_PER 256L
#define SEL_BINS 256
#define SEL_MAX_N UINT64_C(0xFFFF0000)   /* positions, counts and slots in 32 bits */
#define SEL_MAX_ROWS (UINT64_C(1) << 23)  /* rows x 256 counts indexed in 32 bits */

enum { P_WG = 0, P_PER, P_COUNT };

static void (*race_fn)(void *);
static void *race_arg;

void gs_select_dev_force_race(void (*fn)(void *arg), void *arg)
{
    race_fn = fn;
    race_arg = arg;
}

static size_t values_wg(const gs_dev_info *info, long *out, size_t cap)
{
    return gs_values_pow2(SEL_MIN_WG, gs_max_wg(info, SEL_MAX_WG), out, cap);
}

static size_t values_per(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_pow2(1, SEL_MAX_PER, out, cap);
}

static const gs_param_def sel_params[P_COUNT] = {
    { "wg_size", "work-items per work-group (power of two)", values_wg, 0 },
    { "per_item", "keys a work-item reads a round (power of two): a tile is wg_size x "
      "per_item keys of a row, one work-group each", values_per, 1 },
};

/* A GPU: groups of 256 reading 32 keys each (2^27 keys: 16384 tiles a
 * round; on an H100, 2^27 u32 with k = 1000 in 1.58 ms against 1.55 with
 * 64 and 1.65 with 16; 4096 rows of 32768 f32, k = 64, 1.84 against 1.94
 * with 64; docs/PERFORMANCE.md). A CPU device: narrow groups, each
 * work-item many keys. */
static void sel_defaults(const gs_dev_info *info, gs_params *out)
{
    int gpu = info && (info->type & CL_DEVICE_TYPE_GPU);
    gs_params_clear(out);
    gs_params_set(out, "wg_size", gs_max_wg(info, gpu ? 256 : 16));
    gs_params_set(out, "per_item", gpu ? 32 : 256);
}

static int get_params(const gs_dev_info *info, const gs_params *p, long v[P_COUNT], gs_err *err)
{
    gs_params d;
    sel_defaults(info, &d);
    int rc = gs_params_take("select", sel_params, P_COUNT, p, &d, v, err);
    if (rc)
        return rc;
    if (v[P_WG] < SEL_MIN_WG || v[P_WG] > SEL_MAX_WG || (v[P_WG] & (v[P_WG] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED, "select: wg_size=%ld is not a power of two in "
                          "%ld..%ld", v[P_WG], SEL_MIN_WG, SEL_MAX_WG);
    if (v[P_PER] < 1 || v[P_PER] > SEL_MAX_PER || (v[P_PER] & (v[P_PER] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED, "select: per_item=%ld is not a power of two in "
                          "1..%ld", v[P_PER], SEL_MAX_PER);
    return 0;
}

/* One select's shape */
typedef struct sel_plan {
    long v[P_COUNT];
    size_t rows, len, k, ks, tile, gpr;
} sel_plan;

static void plan_of(const gs_sort_req *req, const long v[P_COUNT], sel_plan *s)
{
    s->rows = req->shape.rows > 1 ? (size_t)req->shape.rows : 1;
    s->len = req->n / s->rows;
    s->k = (size_t)req->shape.k;
    s->ks = gs_dtype_size(req->shape.dtype);
    s->tile = (size_t)v[P_WG] * (size_t)v[P_PER];
    s->gpr = s->len ? (s->len + s->tile - 1) / s->tile : 1;
}

/* sel_order holds KMAX keys and positions in local memory: k
 * rounded up to a power of two (at least 64), a program for each */
static size_t kmax_of(size_t k)
{
    size_t m = 64;
    while (m < k)
        m *= 2;
    return m;
}

static uint64_t order_local(size_t k, size_t ks)
{
    return (uint64_t)kmax_of(k) * (ks + 4) + 64;
}

static int sel_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p,
                     gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(dev ? &dev->info : NULL, p, v, err);
    if (rc)
        return rc;
    if ((rc = gs_check_device_wg("select", dev, v[P_WG], err)))
        return rc;
    if (!req)
        return 0;
    if (!req->shape.topk)
        return gs_err_set(err, GS_EUNSUPPORTED, "select: answers top-k requests only (it "
                          "finds a row's k first keys, it does not sort)");
    if (req->shape.segments)
        return gs_err_set(err, GS_EUNSUPPORTED, "select: top-k of segments is not supported");
    sel_plan s;
    plan_of(req, v, &s);
    if (s.k > (size_t)SEL_KMAX)
        return gs_err_set(err, GS_EUNSUPPORTED, "select: k=%zu is above the %ld a work-group "
                          "orders (sort the rows, or ask fewer)", s.k, SEL_KMAX);
    if (s.rows > SEL_MAX_ROWS)
        return gs_err_set(err, GS_EUNSUPPORTED, "select: %zu rows, more than the %llu its "
                          "counts index (ask fewer, longer rows, or sort them)", s.rows,
                          (unsigned long long)SEL_MAX_ROWS);
    if (req->n > SEL_MAX_N || s.rows * s.gpr >= UINT32_MAX || s.rows * s.k >= UINT32_MAX)
        return gs_err_set(err, GS_ETOOBIG, "select: %zu rows of %zu keys exceed its 32-bit "
                          "positions (n up to %llu)", s.rows, s.len, (unsigned long long)SEL_MAX_N);
    const gs_dev_info *in = &dev->info;
    if (order_local(s.k, s.ks) > in->local_mem)
        return gs_err_set(err, GS_EUNSUPPORTED, "select: ordering k=%zu keys needs %llu bytes "
                          "of local memory, the device has %llu", s.k,
                          (unsigned long long)order_local(s.k, s.ks),
                          (unsigned long long)in->local_mem);
    if ((rc = gs_check_buffers("select", in, req->n, s.ks, 0, err)))
        return rc;
    uint64_t extra = (uint64_t)s.rows * (SEL_BINS * 4 + 8 + 16 + s.k * (4 + s.ks)) +
                     (uint64_t)s.rows * s.gpr * 4;
    return gs_check_global_mem("select", in, req->n, (uint64_t)req->n * s.ks + extra,
                               "keys and counts", err);
}

/* The run's objects, released on every path */
typedef struct sel_run {
    sel_plan s;
    gs_clrun cr;
    cl_program prog;
    cl_kernel kn[6];
    char names[6][32];
    unsigned nk;
    uint32_t *pos;              /* rows * k positions, downloaded */
    char *okeys;                /* rows * k keys, downloaded */
    char *tmp;                  /* one row's k values, gathered */
    int placing;                /* place() began writing the caller's arrays */
} sel_run;

enum { K_INIT, K_PICK, K_HIST, K_COLLECT, K_TIES, K_ORDER };

static int make_kernels(sel_run *r, gs_sort_ctx *ctx, gs_err *err)
{
    char opts[96];
    snprintf(opts, sizeof opts, "-DWG=%ld -DPER=%ld -DKMAX=%zu", r->s.v[P_WG], r->s.v[P_PER],
             kmax_of(r->s.k));
    int rc = gs_prog_get(r->cr.dev, ctx->pc, (const char *[]){ "keys", "select", NULL }, opts,
                         &r->prog, NULL, err);
    if (rc)
        return rc;
    static const char *const base[6] = { "sel_init", "sel_pick", "sel_hist", "sel_collect",
                                         "sel_ties", "sel_order" };
    for (unsigned i = 0; i < 6; i++) {
        if (i < K_HIST)
            snprintf(r->names[i], sizeof r->names[i], "%s", base[i]);
        else
            snprintf(r->names[i], sizeof r->names[i], "%s_k%d", base[i], (int)r->s.ks * 8);
        cl_kernel k = NULL;
        rc = gs_clrun_kernel(&r->cr, r->prog, r->names[i], (size_t)r->s.v[P_WG], &k, err);
        if (k)
            r->kn[r->nk++] = k;
        if (rc)
            return rc;
    }
    return 0;
}

/* Every round, the collect, the ties and the order, enqueued back to back */
static int enqueue(sel_run *r, const gs_sort_req *req, cl_mem keys, cl_mem hist, cl_mem pre,
                   cl_mem st, cl_mem out, cl_mem eqc, cl_mem okeys, cl_mem raced, gs_err *err)
{
    const sel_plan *s = &r->s;
    const size_t wg = (size_t)s->v[P_WG];
    const cl_uint k = (cl_uint)s->k, rows = (cl_uint)s->rows, len = (cl_uint)s->len;
    const cl_uint gpr = (cl_uint)s->gpr, kind = gs_keys_kind(req->shape.dtype);
    const cl_uint desc = req->shape.descending ? 1 : 0, order = req->shape.unsorted ? 0 : 1;
    const unsigned bits = (unsigned)s->ks * 8;
    const size_t tiles = s->rows * s->gpr;
    size_t init_n = s->rows * (s->k > SEL_BINS ? s->k : SEL_BINS);
    int rc;
    gs_karg ai[] = { GS_KARG(hist), GS_KARG(pre), GS_KARG(st), GS_KARG(out), GS_KARG(k),
                     GS_KARG(rows) };
    if ((rc = gs_clrun_args(r->kn[K_INIT], r->names[K_INIT], ai, 6, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->kn[K_INIT], r->names[K_INIT], (init_n + wg - 1) / wg,
                              wg, err)))
        return rc;
    for (unsigned shift = bits; shift > 0;) {
        shift -= 8;
        cl_uint sh = shift;
        cl_ulong hm64 = shift + 8 >= bits ? 0 : ~(((cl_ulong)1 << (shift + 8)) - 1);
        cl_uint hm32 = (cl_uint)hm64;
        gs_karg ah[] = { GS_KARG(keys), GS_KARG(len), GS_KARG(gpr), GS_KARG(kind),
                         GS_KARG(desc), GS_KARG(sh),
                         bits == 32 ? (gs_karg)GS_KARG(hm32) : (gs_karg)GS_KARG(hm64),
                         GS_KARG(pre), GS_KARG(hist), GS_KARG(st) };
        gs_karg ap[] = { GS_KARG(hist), GS_KARG(pre), GS_KARG(st), GS_KARG(sh) };
        if ((rc = gs_clrun_args(r->kn[K_HIST], r->names[K_HIST], ah, 10, err)) ||
            (rc = gs_clrun_launch(&r->cr, r->kn[K_HIST], r->names[K_HIST], tiles, wg, err)) ||
            (rc = gs_clrun_args(r->kn[K_PICK], r->names[K_PICK], ap, 4, err)) ||
            (rc = gs_clrun_launch(&r->cr, r->kn[K_PICK], r->names[K_PICK], s->rows, wg, err)))
            return rc;
        /* test hook: the client's rewrite after the first round has run
         * (its wait makes it land between two rounds, as the test needs;
         * without the hook the rounds go back to back, never waited for) */
        if (race_fn && shift + 8 == bits) {
            clFinish(r->cr.q);
            race_fn(race_arg);
        }
    }
    gs_karg ac[] = { GS_KARG(keys), GS_KARG(len), GS_KARG(gpr), GS_KARG(kind), GS_KARG(desc),
                     GS_KARG(k), GS_KARG(pre), GS_KARG(st), GS_KARG(out), GS_KARG(eqc) };
    gs_karg ao[] = { GS_KARG(keys), GS_KARG(len), GS_KARG(kind), GS_KARG(desc), GS_KARG(k),
                     GS_KARG(order), GS_KARG(st), GS_KARG(out), GS_KARG(okeys),
                     GS_KARG(raced) };
    if ((rc = gs_clrun_args(r->kn[K_COLLECT], r->names[K_COLLECT], ac, 10, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->kn[K_COLLECT], r->names[K_COLLECT], tiles, wg, err)) ||
        (rc = gs_clrun_args(r->kn[K_TIES], r->names[K_TIES], ac, 10, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->kn[K_TIES], r->names[K_TIES], tiles, wg, err)) ||
        (rc = gs_clrun_args(r->kn[K_ORDER], r->names[K_ORDER], ao, 10, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->kn[K_ORDER], r->names[K_ORDER], s->rows, wg, err)))
        return rc;
    return 0;
}

/* The answers into each row's first k places: the keys as downloaded
 * (their own bits), values gathered by position (positions the device
 * made, checked against the row: a client cannot steer them), argsort's
 * indices the positions themselves. */
static int place(sel_run *r, const gs_sort_req *req, gs_err *err)
{
    const sel_plan *s = &r->s;
    const size_t vs = gs_payload_size(req->shape.payload), k = s->k;
    for (size_t i = 0; i < s->rows * k; i++)
        if (r->pos[i] >= s->len)
            return gs_err_raced("select", err);
    if (vs && !(r->tmp = malloc(k * vs)))
        return gs_err_set(err, GS_ENOMEM, "select: out of memory for %zu values", k);
    for (size_t row = 0; row < s->rows; row++) {
        const uint32_t *p = r->pos + row * k;
        char *kr = (char *)req->keys + row * s->len * s->ks;
        memcpy(kr, r->okeys + row * k * s->ks, k * s->ks);
        if (!vs)
            continue;
        char *vr = (char *)req->values + row * s->len * vs;
        for (size_t i = 0; i < k; i++) {
            uint64_t v = req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64
                             ? p[i] : gs_key_get(vr, p[i], vs);
            gs_key_put(r->tmp, i, vs, v);
        }
        memcpy(vr, r->tmp, k * vs);
    }
    return 0;
}

static int steps(sel_run *r, gs_sort_ctx *ctx, const gs_sort_req *req, gs_sort_stats *st,
                 gs_err *err)
{
    const sel_plan *s = &r->s;
    gs_clrun *cr = &r->cr;
    cl_mem keys, hist, pre, stb, out, eqc, okeys, raced;
    double t0 = gs_now_ms();
    int rc;
    if ((rc = make_kernels(r, ctx, err)) ||
        (rc = gs_clrun_input(cr, req->keys, req->n * s->ks, 1, "keys", &keys, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * SEL_BINS * 4, "counts", &hist, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * 8, "prefixes", &pre, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * 16, "row state", &stb, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * s->k * 4, "positions", &out, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * s->gpr * 4, "tie counts", &eqc, err)) ||
        (rc = gs_clrun_buffer(cr, s->rows * s->k * s->ks, "answers", &okeys, err)) ||
        (rc = gs_clrun_raced(cr, &raced, err)))
        return rc;
    if (!(r->pos = malloc(s->rows * s->k * 4)) || !(r->okeys = malloc(s->rows * s->k * s->ks)))
        return gs_err_set(err, GS_ENOMEM, "select: out of memory for %zu answers",
                          s->rows * s->k);
    double t1 = gs_now_ms();
    st->setup_ms = t1 - t0;
    if ((rc = enqueue(r, req, keys, hist, pre, stb, out, eqc, okeys, raced, err)))
        return rc;
    double t2 = gs_now_ms();
    st->enqueue_ms = t2 - t1;
    /* One wait (issue 36): the answers and the race flag are read into
     * the run's own memory behind the kernels, then the queue is waited
     * for once; only then are they looked at, and the caller's arrays are
     * written only after both checks (the flag, then place()'s positions) */
    if ((rc = gs_clrun_fetch(cr, r->pos, out, s->rows * s->k * 4, err)) ||
        (rc = gs_clrun_fetch(cr, r->okeys, okeys, s->rows * s->k * s->ks, err)) ||
        (rc = gs_clrun_raced_fetch(cr, err)))
        return rc;
    double t2b = gs_now_ms();
    st->writeback_ms = t2b - t2;    /* enqueuing the reads */
    cl_int crc = clFinish(cr->q);
    double t3 = gs_now_ms();
    st->wait_ms = t3 - t2b;
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clFinish", crc, "select");
    gs_clrun_settle(cr);
    if ((rc = gs_clrun_raced_check(cr, err)))
        return rc;
    r->placing = 1;
    if ((rc = place(r, req, err)))
        return rc;
    st->upload_ms = cr->upload_ms;
    st->download_ms = cr->download_ms;
    st->kernel_ms = gs_clrun_kernel_ms(cr);
    st->passes = (unsigned)s->ks;
    st->writeback_ms += gs_now_ms() - t3;
    GS_DEBUG("select: %zu rows of %zu %s, k=%zu, %zu tiles a row of %zu keys: kernels %.3f ms",
             s->rows, s->len, gs_dtype_name(req->shape.dtype), s->k, s->gpr, s->tile,
             st->kernel_ms);
    return 0;
}

static int sel_run_topk(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                        gs_sort_stats *st, gs_err *err)
{
    sel_run r;
    memset(&r, 0, sizeof r);
    int rc = get_params(&ctx->dev->info, p, r.s.v, err);
    if (rc)
        return rc;
    plan_of(req, r.s.v, &r.s);
    if (r.s.len == 0 || r.s.k == 0)
        return 0;
    if ((rc = gs_dev_open(ctx->dev, err)))
        return rc;
    gs_clrun_init(&r.cr, ctx->dev, "select");
    gs_clrun_use(&r.cr, ctx->queue, ctx->host_pinned);
    r.cr.hostile = 1;           /* safe on the client's pages as built (select.cl) */
    r.cr.touched = &st->output_touched;
    rc = steps(&r, ctx, req, st, err);
    /* the kernels only read the keys (adopted or not): until place() the
     * caller's arrays hold the input, whole, for a fallback */
    st->output_touched = r.placing;
    double t1 = gs_now_ms();
    gs_clrun_release(&r.cr);
    for (unsigned i = 0; i < r.nk; i++)
        gs_clrun_kernel_done(&r.cr, r.prog, r.names[i], r.kn[i]);
    free(r.pos);
    free(r.okeys);
    free(r.tmp);
    st->release_ms = gs_now_ms() - t1;
    return rc;
}

const gs_algo gs_algo_select = {
    .name = "select",
    .summary = "OpenCL radix select: the top k of each row (top-k requests only; k up to "
               "2048), one digit a round, keys never moved",
    .stable = 1,
    .uses_device = 1,
    .keeps_bits = 1,
    .topk = 1,
    .not_tuned = 1,
    .params = sel_params,
    .nparams = P_COUNT,
    .defaults = sel_defaults,
    .check = sel_check,
    .run = sel_run_topk,
};
