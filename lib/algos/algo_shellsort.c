/* The OpenCL Shellsort ("shellsort"): host side of kernels/shellsort.cl,
 * the seed paper's variant D. Sedgewick's increments, largest first, one
 * phase per increment h < n. In a phase every subset (residue class mod h)
 * is cut into T = min(threads_per_subset, ceil(subset_len /
 * min_elems_per_thread)) slices, one work-item insertion-sorts each, and
 * then rounds of odd/even merge-split between neighbouring slices make the
 * subset sorted: T rounds always suffice (block odd-even transposition
 * sort), and the host stops earlier once two consecutive rounds exchanged
 * nothing, reading the device-side round flags after batches of rounds of
 * doubling size. Every phase therefore fully h-sorts, and the last (h = 1)
 * sorts. Not stable: merge-split and the insertion sorts move equal keys
 * past each other across slices. All three parameters are kernel arguments
 * or launch sizes, so one program build serves every parameter set. */
#include "config.h"
#include "gs_algos.h"
#include "gs_devrun.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernels index with 32-bit arithmetic: r + j*h < n and n + h must stay
 * below 2^32, and a phase launches up to about 2n work-items. */
#define SHELL_MAX_N UINT64_C(0x7FFF0000)
#define SHELL_MAX_TPS 65536L
#define SHELL_MAX_MEPT 4096L
#define SHELL_MIN_WG 16L
#define SHELL_MAX_WG_HOST 1024L   /* cap for the listing when no device is known */
#define SHELL_FIRST_BATCH 4u      /* merge rounds enqueued before the first flag read */

enum { P_TPS = 0, P_MEPT, P_WG, P_COUNT };

/* ---- legal values ---- */

/* Every value in range runs; the lists are ladders that keep a tuner's grid
 * small (check() accepts the values in between too). threads_per_subset is
 * not bounded by the work-group: merge rounds are separate launches. */
static size_t values_tps(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    return gs_values_pow2(1, SHELL_MAX_TPS, out, cap);
}

static size_t values_mept(const gs_dev_info *info, long *out, size_t cap)
{
    static const long ladder[] = { 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64, 128, 256, 1024, 4096 };
    (void)info;
    return gs_values_list(ladder, sizeof ladder / sizeof ladder[0], out, cap);
}

static long max_wg(const gs_dev_info *info)
{
    return info && info->max_wg_size ? (long)info->max_wg_size : SHELL_MAX_WG_HOST;
}

static size_t values_wg(const gs_dev_info *info, long *out, size_t cap)
{
    return gs_values_pow2(SHELL_MIN_WG, max_wg(info), out, cap);
}

static const gs_param_def shell_params[P_COUNT] = {
    { "threads_per_subset", "most work-items (slices) per subset in a phase (1: one insertion "
      "sort per subset, no merge rounds)", values_tps, 0 },
    { "min_elems_per_thread", "fewest subset elements per work-item: a subset of len elements "
      "gets min(threads_per_subset, ceil(len / this)) slices", values_mept, 1 },
    { "wg_size", "work-items per work-group (power of two)", values_wg, 0 },
};

/* ---- parameter validation ---- */

/* Pull the values out of p, a name left out taking its default on this
 * device (info NULL: a CPU's), rejecting unknown names and values out of
 * range (device limits aside). */
static void shell_defaults(const gs_dev_info *info, gs_params *out);

static int get_params(const gs_dev_info *info, const gs_params *p, long v[P_COUNT],
                      gs_err *err)
{
    gs_params d;
    shell_defaults(info, &d);
    int rc = gs_params_take("shellsort", shell_params, P_COUNT, p, &d, v, err);
    if (rc)
        return rc;
    if (v[P_TPS] < 1 || v[P_TPS] > SHELL_MAX_TPS)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "shellsort: threads_per_subset=%ld out of range 1..%ld", v[P_TPS],
                          SHELL_MAX_TPS);
    if (v[P_MEPT] < 1 || v[P_MEPT] > SHELL_MAX_MEPT)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "shellsort: min_elems_per_thread=%ld out of range 1..%ld", v[P_MEPT],
                          SHELL_MAX_MEPT);
    if (v[P_WG] < SHELL_MIN_WG || (v[P_WG] & (v[P_WG] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "shellsort: wg_size=%ld is not a power of two >= %ld", v[P_WG],
                          SHELL_MIN_WG);
    return 0;
}

static int shell_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(dev ? &dev->info : NULL, p, v, err);
    if (rc)
        return rc;
    if ((rc = gs_check_device_wg("shellsort", dev, v[P_WG], err)))
        return rc;
    const gs_dev_info *in = &dev->info;
    if (!req)
        return 0;
    uint64_t n = req->n;
    if (n > SHELL_MAX_N)
        return gs_err_set(err, GS_ETOOBIG,
                          "shellsort: n=%llu exceeds the %llu keys its 32-bit indexing allows",
                          (unsigned long long)n, (unsigned long long)SHELL_MAX_N);
    size_t ks = gs_dtype_size(req->shape.dtype), vs = gs_payload_size(req->shape.payload);
    uint64_t kb = n * ks, vb = n * vs;
    if ((rc = gs_check_buffers("shellsort", in, n, ks, vs, err)) != 0)
        return rc;
    /* data plus merge scratch of the same size, plus the round flags */
    uint64_t total = 2 * (kb + vb) + 4 * (uint64_t)(SHELL_MAX_TPS + 2);
    return gs_check_global_mem("shellsort", in, n, total, "data and merge scratch", err);
}

/* Untuned defaults. A GPU wants many short slices in the last phases (h = 1
 * alone would otherwise occupy a handful of work-items): enough slices to
 * give every compute unit a couple of groups. A CPU device runs work-items
 * as loop iterations, so longer slices (sequential, cache-friendly insertion
 * sorts, few merge rounds) and small groups (spread over the cores) suit it;
 * on PoCL the choice matters little (see docs/PERFORMANCE.md). */
static void shell_defaults(const gs_dev_info *info, gs_params *out)
{
    int gpu = info && (info->type & CL_DEVICE_TYPE_GPU);
    long wg = gpu ? 256 : 16, mept = gpu ? 8 : 64;
    while (wg > SHELL_MIN_WG && wg > max_wg(info))
        wg /= 2;
    long cus = info && info->compute_units ? (long)info->compute_units : 1;
    long want = gpu ? 2 * cus * wg : 8 * cus * wg, tps = gpu ? 1024 : 64;
    while (tps < want && tps < SHELL_MAX_TPS)
        tps *= 2;
    gs_params_clear(out);
    gs_params_set(out, "threads_per_subset", tps);
    gs_params_set(out, "min_elems_per_thread", mept);
    gs_params_set(out, "wg_size", wg);
}

/* ---- increments ---- */

/* Sedgewick's increments below n, ascending: 9*4^k - 9*2^k + 1 (k >= 0)
 * interleaved with 4^k - 3*2^k + 1 (k >= 2). Returns how many. */
static size_t increments(uint64_t n, uint32_t *out, size_t cap)
{
    size_t c = 0;
    for (unsigned k = 0; c < cap; k++) {
        uint64_t p2 = UINT64_C(1) << k, p4 = p2 * p2;
        uint64_t a = 9 * p4 - 9 * p2 + 1;
        uint64_t b = UINT64_C(16) * p4 - 3 * 4 * p2 + 1;   /* k+2 of the second formula */
        if (a >= n)
            break;
        out[c++] = (uint32_t)a;
        if (b >= n || c == cap)
            break;
        out[c++] = (uint32_t)b;
    }
    return c;
}

/* ---- one sort ---- */

static size_t groups_for(size_t items, size_t wg)
{
    return (items + wg - 1) / wg;
}

/* Slices per subset and slice length for a phase: T from the parameters,
 * then trimmed to the slices the longest subset actually fills. */
static void phase_shape(size_t n, size_t h, long tps, long mept, size_t *T, size_t *S)
{
    size_t L = (n + h - 1) / h;
    size_t t = (L + (size_t)mept - 1) / (size_t)mept;
    if (t > (size_t)tps)
        t = (size_t)tps;
    if (t < 1)
        t = 1;
    *S = (L + t - 1) / t;
    *T = (L + *S - 1) / *S;
}

/* The kernel part of one sort, inside the device frame (gs_devrun.h): the
 * keys sorted in place (keys[0]), keys[1] and vals[1] the merge scratch. */
typedef struct shell_run {
    long v[P_COUNT];
    size_t wg, first_h, last_h;   /* the phases run: last_h <= h <= first_h */
    uint32_t inc[64];
    size_t ninc, maxT;            /* increments below n; most slices of a phase */
    char kn_enc[32], kn_dec[32], kn_slices[40], kn_merge[40];
    cl_kernel k_enc, k_dec, k_slices, k_merge;
    cl_mem flags;
    cl_mem vals, kscr, vscr;      /* the frame's, or flags where unused */
    cl_uint *hflags;              /* host copy of a phase's round flags */
    cl_uint un;
    unsigned phases;
    size_t rounds_total, syncs, first_batch;
} shell_run;

static int shell_kernels(gs_devrun *d, void *self, gs_err *err)
{
    shell_run *r = self;
    int rc = gs_prog_get(d->cr.dev, d->ctx->pc, (const char *[]){ "keys", "shellsort", NULL },
                         "", &d->prog, NULL, err);
    if (rc)
        return rc;
    d->wg = r->wg;
    d->second = r->maxT > 1;   /* merge rounds need scratch */
    const int kw = (int)d->ks * 8, vw = (int)d->vs * 8;
    snprintf(r->kn_enc, sizeof r->kn_enc, "shell_encode_k%d", kw);
    snprintf(r->kn_dec, sizeof r->kn_dec, "shell_decode_k%d", kw);
    snprintf(r->kn_slices, sizeof r->kn_slices, "shell_slices_k%d_v%d", kw, vw);
    snprintf(r->kn_merge, sizeof r->kn_merge, "shell_merge_k%d_v%d", kw, vw);
    if ((rc = gs_devrun_kernel(d, r->kn_enc, &r->k_enc, err)) ||
        (rc = gs_devrun_kernel(d, r->kn_dec, &r->k_dec, err)) ||
        (rc = gs_devrun_kernel(d, r->kn_slices, &r->k_slices, err)) ||
        (rc = gs_devrun_kernel(d, r->kn_merge, &r->k_merge, err)))
        return rc;
    return 0;
}

static int shell_buffers(gs_devrun *d, void *self, gs_err *err)
{
    shell_run *r = self;
    int rc = gs_clrun_buffer(&d->cr, (r->maxT + 2) * 4, "round flags", &r->flags, err);
    if (rc)
        return rc;
    r->hflags = malloc((r->maxT + 2) * sizeof *r->hflags);
    if (!r->hflags)
        return gs_err_set(err, GS_ENOMEM, "shellsort: out of memory");
    /* Unused buffer arguments get a placeholder the kernels never touch. */
    r->vals = d->vs ? d->vals[0] : r->flags;
    r->kscr = d->keys[1] ? d->keys[1] : r->flags;
    r->vscr = d->vals[1] ? d->vals[1] : r->flags;
    return 0;
}

/* Merge rounds of a phase: T of them sort the subset; stop sooner once two
 * in a row exchanged nothing. The flags are read after a batch sized from
 * what the previous phase needed (phases of one sort behave alike),
 * doubling while the subsets are still unsorted. */
static int merge_rounds(gs_devrun *d, shell_run *r, size_t h, size_t T, size_t S, gs_err *err)
{
    const cl_uint uh = (cl_uint)h, uT = (cl_uint)T, uS = (cl_uint)S;
    size_t round = 0, batch = r->first_batch;
    int rc;
    while (round < T) {
        size_t end = round + batch < T ? round + batch : T;
        for (; round < end; round++) {
            size_t pairs = (T - (round & 1)) / 2;
            if (pairs == 0)
                continue;   /* T = 2, odd round: no neighbours; flag stays 0 */
            const cl_uint ur = (cl_uint)round;
            gs_karg am[] = { GS_KARG(d->keys[0]), GS_KARG(r->vals), GS_KARG(r->kscr),
                             GS_KARG(r->vscr), GS_KARG(r->un), GS_KARG(uh), GS_KARG(uT),
                             GS_KARG(uS), GS_KARG(ur), GS_KARG(r->flags) };
            if ((rc = gs_clrun_args(r->k_merge, r->kn_merge, am, 10, err)) ||
                (rc = gs_clrun_launch(&d->cr, r->k_merge, r->kn_merge,
                                      groups_for(h * pairs, r->wg), r->wg, err)))
                return rc;
            r->rounds_total++;
        }
        if (round >= T)
            break;   /* T rounds always sort */
        r->syncs++;
        cl_int crc = clEnqueueReadBuffer(d->cr.q, r->flags, CL_TRUE, 0, round * sizeof(cl_uint),
                                         r->hflags, 0, NULL, NULL);
        if (crc != CL_SUCCESS)
            return gs_cl_fail(err, "clEnqueueReadBuffer", crc, "shellsort: round flags");
        size_t quiet = 0;   /* rounds up to the second of two quiet ones */
        for (size_t j = 1; j < round && !quiet; j++)
            if (r->hflags[j - 1] == 0 && r->hflags[j] == 0)
                quiet = j + 1;
        if (quiet) {
            r->first_batch = quiet + 1 > SHELL_FIRST_BATCH ? quiet + 1 : SHELL_FIRST_BATCH;
            break;
        }
        batch *= 2;
    }
    return 0;
}

/* One phase: the slices' insertion sorts, then the merge rounds. */
static int run_phase(gs_devrun *d, shell_run *r, size_t h, gs_err *err)
{
    size_t T, S;
    phase_shape(d->n, h, r->v[P_TPS], r->v[P_MEPT], &T, &S);
    const cl_uint uh = (cl_uint)h, uT = (cl_uint)T, uS = (cl_uint)S;
    gs_karg as[] = { GS_KARG(d->keys[0]), GS_KARG(r->vals), GS_KARG(r->un), GS_KARG(uh),
                     GS_KARG(uT), GS_KARG(uS), GS_KARG(r->flags) };
    int rc;
    if ((rc = gs_clrun_args(r->k_slices, r->kn_slices, as, 7, err)) ||
        (rc = gs_clrun_launch(&d->cr, r->k_slices, r->kn_slices, groups_for(h * T, r->wg),
                              r->wg, err)))
        return rc;
    r->phases++;
    return merge_rounds(d, r, h, T, S, err);
}

/* Encode (and make argsort's indices), the phases from the largest
 * increment in [last_h, first_h], decode. */
static int shell_enqueue(gs_devrun *d, void *self, gs_err *err)
{
    shell_run *r = self;
    const size_t n = d->n, wg = r->wg;
    const cl_uint kind = gs_keys_kind(d->req->shape.dtype);
    const cl_uint desc = d->req->shape.descending ? 1 : 0;
    const gs_payload pl = d->req->shape.payload;
    const cl_uint iota = !d->idx ? 0 : pl == GS_PL_IDX32 ? 1 : 2;
    int rc;
    r->un = (cl_uint)n;
    r->first_batch = SHELL_FIRST_BATCH;
    gs_karg ae[] = { GS_KARG(d->keys[0]), GS_KARG(r->vals), GS_KARG(r->vals), GS_KARG(r->un),
                     GS_KARG(kind), GS_KARG(desc), GS_KARG(iota) };
    if ((rc = gs_clrun_args(r->k_enc, r->kn_enc, ae, 7, err)) ||
        (rc = gs_clrun_launch(&d->cr, r->k_enc, r->kn_enc, groups_for(n, wg), wg, err)))
        return rc;
    for (size_t pi = r->ninc; pi-- > 0;) {
        const size_t h = r->inc[pi];
        if (h > r->first_h)
            continue;
        if (h < r->last_h)
            break;
        if ((rc = run_phase(d, r, h, err)))
            return rc;
    }
    gs_karg ad[] = { GS_KARG(d->keys[0]), GS_KARG(r->un), GS_KARG(kind), GS_KARG(desc) };
    if ((rc = gs_clrun_args(r->k_dec, r->kn_dec, ad, 4, err)) ||
        (rc = gs_clrun_launch(&d->cr, r->k_dec, r->kn_dec, groups_for(n, wg), wg, err)))
        return rc;
    d->cur = 0;
    d->st->passes = r->phases;
    return 0;
}

static double shell_kernel_ms(gs_devrun *d, void *self)
{
    shell_run *r = self;
    double ms = gs_clrun_kernel_ms(&d->cr);
    GS_DEBUG("shellsort: n=%zu, %u phases, %zu merge rounds, %zu flag reads, %.3f ms in kernels",
             d->n, r->phases, r->rounds_total, r->syncs, ms);
    return ms;
}

static void shell_release(void *self)
{
    shell_run *r = self;
    free(r->hflags);
}

static const gs_devrun_ops shell_ops = {
    .algo = &gs_algo_shellsort,
    .second = { "key scratch", "value scratch" },
    .finish_what = "shellsort phases",
    /* Safe on the client's own pages as built (gs_clrun.h): every index a
     * kernel forms comes from n, h and the slice shape, and each loop is
     * bounded by counts (the merge-split's crossing count c is searched
     * within [1, min(a, b)]), never by what the keys say; rewritten keys
     * give a wrong order, no access out of bounds. */
    .safe_as_built = 1,
    .kernels = shell_kernels,
    .buffers = shell_buffers,
    .sort = shell_enqueue,
    .kernel_ms = shell_kernel_ms,
    .release = shell_release,
};

/* Test hook (tests/lib/algos/test_shellsort.c): a run of only the phases with
 * last_h <= h <= first_h, so a phase can be given any input and the result
 * must be last_h-sorted; (SIZE_MAX, 1) is the full sort. Does not go
 * through gs_sort_run (no request check, no NaN restore). */
int gs_shellsort_run_phases(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                            size_t first_h, size_t last_h, gs_sort_stats *st, gs_err *err)
{
    gs_sort_stats lst;
    if (!st)
        st = &lst;
    memset(st, 0, sizeof *st);
    double t_start = gs_now_ms();
    if (!ctx || !ctx->dev)
        return gs_err_set(err, GS_EUNSUPPORTED, "shellsort: needs an OpenCL device");
    gs_dev *dev = ctx->dev;
    int rc = shell_check(dev, req, p, err);
    if (rc)
        return rc;
    shell_run r;
    memset(&r, 0, sizeof r);
    get_params(&dev->info, p, r.v, err);
    const size_t n = req->n;
    if (n == 0) {
        st->wall_ms = gs_now_ms() - t_start;
        return 0;
    }
    if (gs_payload_size(req->shape.payload) && !req->values)
        return gs_err_set(err, GS_EINVAL, "shellsort: payload %s needs a values array",
                          gs_payload_name(req->shape.payload));
    r.wg = (size_t)r.v[P_WG];
    r.first_h = first_h;
    r.last_h = last_h;
    r.ninc = increments(n, r.inc, sizeof r.inc / sizeof r.inc[0]);
    r.maxT = 1;
    for (size_t i = 0; i < r.ninc; i++) {
        size_t T, S;
        phase_shape(n, r.inc[i], r.v[P_TPS], r.v[P_MEPT], &T, &S);
        if (T > r.maxT)
            r.maxT = T;
    }
    rc = gs_devrun_sort(&shell_ops, &r, ctx, req, st, err);
    st->wall_ms = gs_now_ms() - t_start;
    return rc;
}

static int shell_run_sort(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                          gs_sort_stats *st, gs_err *err)
{
    return gs_shellsort_run_phases(ctx, req, p, SIZE_MAX, 1, st, err);
}

const gs_algo gs_algo_shellsort = {
    .name = "shellsort",
    .summary = "OpenCL Shellsort (Sedgewick increments, paper's variant D): per-slice insertion "
               "sorts, odd/even merge-split rounds between slices",
    .stable = 0,
    .uses_device = 1,
    .params = shell_params,
    .nparams = P_COUNT,
    .defaults = shell_defaults,
    .check = shell_check,
    .run = shell_run_sort,
};
