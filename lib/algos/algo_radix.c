/* The OpenCL LSD radix sort ("radix"): host side of kernels/radix.cl. It
 * describes the four tunables (radix_bits, wg_size, elems_per_thread,
 * lookback) and their legal values on a device, rejects parameter sets a
 * device cannot run before anything is launched, and gives the kernels of
 * one sort to the device frame (gs_devrun.h: upload, NaN patterns,
 * download): above 2^20 keys one reduction read back (the only read-back
 * before the result) to skip passes whose digit is constant: the OR and
 * AND of all keys for reduce-then-scan, which the first pass's upsweep
 * gives on the way, the global digit histogram for onesweep, which needs
 * it anyway (small arrays run every pass instead of waiting); then per
 * pass either upsweep / scan / scatter (lookback=0) or
 * one onesweep kernel (lookback=1: decoupled look-back between tiles, keys
 * read once per pass),
 * with keys and values ping-ponging between two device buffers (32-bit
 * keys with 32-bit values ranked as one 64-bit word on CPU devices).
 * Encoding, decoding and argsort indices happen inside the
 * first and last passes, so keys cross device memory as few times as the
 * pass structure allows.
 * A request of equal rows (issue 38) whose rows a tile divides is sorted
 * whole: the same passes over every row at once, each pass's scan giving
 * each row its own place (radix_scan_rows), argsort indices counted from
 * the row's start, NaN patterns put back row by row; other rows go one by
 * one (rows_ept). */
#include "config.h"
#include "gs_algos.h"
#include "gs_devrun.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_narrow.h"
#include "radix_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Offsets and indices are 32-bit in the kernels; a tile (<= 32768 keys) past
 * n must still fit, hence the margin below 2^32. */
#define RADIX_MAX_N UINT64_C(0xFFFF0000)
#define RADIX_MAX_TILE 32768L   /* 16-bit packed counters in the local ranking */
#define RADIX_MAX_EPT 32L
#define RADIX_MIN_WG 16L
#define RADIX_MAX_WG 1024L

enum { P_BITS = 0, P_WG, P_EPT, P_LB, P_COUNT };

/* The onesweep look-back packs a 30-bit count with its status */
#define RADIX_LB_MAX_N (UINT64_C(1) << 30)
/* Spins on a predecessor's unpublished look-back word before counting its
 * keys instead (the fallback); a tile's predecessors have all started, so
 * on a GPU the wait is short and the fallback rare. */
#define RADIX_LB_SPIN 4096u
/* lookback=2 takes the onesweep path up to this many keys (H200, u32:
 * onesweep 0.160 ms against 0.206 at 2^21, even at 2^22, behind above) */
#define RADIX_AUTO_LB_MAX (UINT64_C(1) << 21)
/* Whether 32-bit key-value pairs rank as one 64-bit word by default
 * (use_pairs): on PoCL it saves 8-10% (u32+u32 2^22: 172 against 192 ms);
 * on the H200 it costs 8% (6.67 against 6.20 ms at 2^27: the 8-byte
 * ranking and exchange cost more than the value exchange they replace) */
#define PAIRS_DEFAULT_GPU 0
#define PAIRS_DEFAULT_CPU 1
/* Default largest n sorted without the histogram read-back */
#define RADIX_SMALL_MAX ((size_t)1 << 20)

/* ---- legal values ---- */

static size_t values_bits(const gs_dev_info *info, long *out, size_t cap)
{
    static const long bits[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    (void)info;
    return gs_values_list(bits, sizeof bits / sizeof bits[0], out, cap);
}

static long max_wg(const gs_dev_info *info)
{
    return gs_max_wg(info, RADIX_MAX_WG);
}

static size_t values_wg(const gs_dev_info *info, long *out, size_t cap)
{
    return gs_values_pow2(RADIX_MIN_WG, max_wg(info), out, cap);
}

/* Every value 1..32 runs; the list is a ladder so a tuner's grid stays
 * small (check() accepts the values in between too). */
static size_t values_ept(const gs_dev_info *info, long *out, size_t cap)
{
    static const long ladder[] = { 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32 };
    (void)info;
    return gs_values_list(ladder, sizeof ladder / sizeof ladder[0], out, cap);
}

/* The onesweep path is offered to the tuner on GPUs, and 2 with it (the
 * GPU default, so that a climb can start from the defaults); on CPU
 * devices (PoCL: work-groups are threads, spinning costs a core) it stays
 * off unless a set asks for it. */
static size_t values_lookback(const gs_dev_info *info, long *out, size_t cap)
{
    static const long lb[] = { 0, 1, 2 };
    size_t n = info && (info->type & CL_DEVICE_TYPE_GPU) ? 3 : 1;
    return gs_values_list(lb, n, out, cap);
}

static const gs_param_def radix_params[P_COUNT] = {
    { "radix_bits", "bits per digit: passes = key bits / radix_bits (rounded up)", values_bits, 0 },
    { "wg_size", "work-items per work-group (power of two)", values_wg, 0 },
    { "elems_per_thread", "keys per work-item per tile (tile = wg_size x elems_per_thread)",
      values_ept, 1 },
    { "lookback", "1: one onesweep kernel per pass (decoupled look-back), 0: upsweep, scan and "
      "scatter per pass (a set without it means 0), 2: 1 up to 2^21 keys, else 0 (the GPU "
      "default)", values_lookback, 0 },
};

/* ---- local memory: mirrors the size macros of kernels/radix.cl ----
 * (for the local-counter ranking; the warp ranking's per-warp counters,
 * RADIX x wg_size / 32 words, never need more than its counter array, so
 * one bound serves both) */

static uint64_t pad4(uint64_t i) { return i + (i >> 5); }
static uint64_t pad8(uint64_t i) { return i + (i >> 4); }

static uint64_t local_bytes(int bits, long wg, long ept, size_t ks, size_t vs, int lb)
{
    uint64_t tile = (uint64_t)wg * (uint64_t)ept, radix = UINT64_C(1) << bits;
    uint64_t rake = wg < 32 ? (uint64_t)wg : 32, seg = (uint64_t)wg / rake;
    uint64_t scn = (uint64_t)(wg - 1) + (seg > 1 ? (uint64_t)(wg - 1) / seg : 0) + 1;
    int sub1 = bits < 4 ? bits : 4;
    uint64_t ncw = sub1 >= 2 ? UINT64_C(1) << (sub1 - 1) : 1;
    /* PAD2 and PAD4 pad alike, PAD8 more: by width, not by a list of widths */
    uint64_t xk = ks >= 8 ? pad8(tile) : pad4(tile);
    uint64_t a = ks * xk + (vs ? 2 * pad4(tile) : 0);
    uint64_t xv = vs ? vs * (vs >= 8 ? pad8(tile) : pad4(tile)) : 0;
    uint64_t x = a > xv ? a : xv;
    uint64_t scan = 4 * (scn + rake + 1);
    uint64_t scatter = (x + 7) / 8 * 8 + 4 * pad4(ncw * (uint64_t)wg) + scan + 4 * radix;
    if (lb)
        scatter += 4 * radix + 4;   /* onesweep: the tile's counts and its ticket */
    uint64_t npos = ((uint64_t)ks * 8 + (uint64_t)bits - 1) / (uint64_t)bits;
    /* the first pass's upsweep also reduces the OR and AND of the keys */
    uint64_t ghist = npos * radix * 4, upsweep = radix * 4 * 4 + 2 * (uint64_t)wg * ks;
    uint64_t m = scatter;
    if (ghist > m) m = ghist;
    if (upsweep > m) m = upsweep;
    if (scan > m) m = scan;
    return m;
}

/* ---- parameter validation ---- */

/* Pull the four values out of p, a name left out taking its default on
 * this device (info NULL: a CPU's), rejecting unknown names and values out
 * of range (device limits aside). Stored sets from before lookback existed
 * got lookback=0 from migration 005, so they still mean what they did. */
static void radix_defaults(const gs_dev_info *info, gs_params *out);

static int get_params(const gs_dev_info *info, const gs_params *p, long v[P_COUNT],
                      gs_err *err)
{
    gs_params d;
    radix_defaults(info, &d);
    int rc = gs_params_take("radix", radix_params, P_COUNT, p, &d, v, err);
    if (rc)
        return rc;
    if (v[P_BITS] < 1 || v[P_BITS] > 8)
        return gs_err_set(err, GS_EUNSUPPORTED, "radix: radix_bits=%ld out of range 1..8",
                          v[P_BITS]);
    if (v[P_WG] < RADIX_MIN_WG || v[P_WG] > RADIX_MAX_WG || (v[P_WG] & (v[P_WG] - 1)))
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "radix: wg_size=%ld is not a power of two in %ld..%ld", v[P_WG],
                          RADIX_MIN_WG, RADIX_MAX_WG);
    if (v[P_EPT] < 1 || v[P_EPT] > RADIX_MAX_EPT)
        return gs_err_set(err, GS_EUNSUPPORTED, "radix: elems_per_thread=%ld out of range 1..%ld",
                          v[P_EPT], RADIX_MAX_EPT);
    if (v[P_WG] * v[P_EPT] > RADIX_MAX_TILE)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "radix: tile wg_size x elems_per_thread = %ld keys exceeds %ld "
                          "(16-bit local counters)", v[P_WG] * v[P_EPT], RADIX_MAX_TILE);
    if (v[P_LB] < 0 || v[P_LB] > 2)
        return gs_err_set(err, GS_EUNSUPPORTED, "radix: lookback=%ld is not 0, 1 or 2", v[P_LB]);
    return 0;
}

/* Whether a sort of n keys takes the onesweep path: lookback=1 does (below
 * its 30-bit counts' limit); lookback=2 does for small arrays, where one
 * launch per pass and no read-back halve the time (H200: 0.063 against
 * 0.132 ms at 2^16), and where onesweep's extra local memory fits the
 * shape (else reduce-then-scan, which the set was checked for). */
static int use_lookback(const long v[P_COUNT], uint64_t n, size_t ks, size_t vs,
                        const gs_dev_info *in)
{
    if (v[P_LB] == 1)
        return n < RADIX_LB_MAX_N;
    return v[P_LB] == 2 && n <= RADIX_AUTO_LB_MAX &&
           local_bytes((int)v[P_BITS], v[P_WG], v[P_EPT], ks, vs, 1) <= in->local_mem;
}

/* A per-request decision (use_lookback, use_pairs) for req with p on a
 * device like info, as the gs_radix_takes_* queries give it. */
typedef int (*radix_use_fn)(const long v[P_COUNT], uint64_t n, size_t ks, size_t vs,
                            const gs_dev_info *in);

static int takes(radix_use_fn use, const gs_dev_info *info, const gs_sort_req *req,
                 const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(info, p, v, err);
    if (rc)
        return rc;
    return use(v, req->n, gs_shape_key_bytes(&req->shape), gs_payload_size(req->shape.payload),
               info);
}

int gs_radix_takes_lookback(const gs_dev_info *info, const gs_sort_req *req, const gs_params *p,
                            gs_err *err)
{
    return takes(use_lookback, info, req, p, err);
}

static int radix_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(dev ? &dev->info : NULL, p, v, err);
    if (rc)
        return rc;
    if ((rc = gs_check_device_wg("radix", dev, v[P_WG], err)))
        return rc;
    const gs_dev_info *in = &dev->info;
    /* Without a request, check the widest shape (64-bit keys and values). */
    size_t ks = req ? gs_shape_key_bytes(&req->shape) : 8;
    size_t vs = req ? gs_payload_size(req->shape.payload) : 8;
    /* lookback=2 falls back to reduce-then-scan where onesweep does not fit */
    uint64_t lb = local_bytes((int)v[P_BITS], v[P_WG], v[P_EPT], ks, vs, v[P_LB] == 1);
    if (lb > in->local_mem)
        return gs_err_set(err, GS_EUNSUPPORTED,
                          "radix: radix_bits=%ld wg_size=%ld elems_per_thread=%ld needs %llu bytes "
                          "of local memory (%zu-byte keys, %zu-byte values), device has %llu",
                          v[P_BITS], v[P_WG], v[P_EPT], (unsigned long long)lb, ks, vs,
                          (unsigned long long)in->local_mem);
    if (!req)
        return 0;
    uint64_t n = req->n;
    if (n > RADIX_MAX_N)
        return gs_err_set(err, GS_ETOOBIG,
                          "radix: n=%llu exceeds the %llu keys its 32-bit offsets allow",
                          (unsigned long long)n, (unsigned long long)RADIX_MAX_N);
    uint64_t kb = n * ks, vb = n * vs;
    if ((rc = gs_check_buffers("radix", in, n, ks, vs, err)) != 0)
        return rc;
    /* the per-tile digit counts: 2^radix_bits words per tile */
    uint64_t tile = (uint64_t)v[P_WG] * (uint64_t)v[P_EPT];
    uint64_t cb = ((n + tile - 1) / tile) * (UINT64_C(4) << v[P_BITS]);
    if (cb > in->max_alloc)
        return gs_err_set(err, GS_ETOOBIG,
                          "radix: %llu keys in tiles of %llu need a %llu-byte digit-count array, "
                          "above the device's max allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE) of "
                          "%llu bytes; a larger tile needs less", (unsigned long long)n,
                          (unsigned long long)tile, (unsigned long long)cb,
                          (unsigned long long)in->max_alloc);
    /* two key and two value buffers, the counts (onesweep: two look-back
     * arrays of that size) and a few small ones */
    uint64_t total = 2 * (kb + vb) + cb * (use_lookback(v, n, ks, vs, in) ? 2 : 1) +
                     (UINT64_C(1) << 20);
    return gs_check_global_mem("radix", in, n, total, "double buffered", err);
}

/* Untuned defaults: 8-bit digits (fewest passes) and a tile large enough to
 * amortise the per-tile scans; the tile shrinks until the widest request
 * (64-bit keys with 64-bit values) fits the device's local memory, so the
 * defaults run every request shape. */
static void radix_defaults(const gs_dev_info *info, gs_params *out)
{
    int gpu = info && (info->type & CL_DEVICE_TYPE_GPU);
    long bits = 8, wg = gpu ? 256 : 64, ept = 16;
    while (wg > RADIX_MIN_WG && wg > max_wg(info))
        wg /= 2;
    if (info) {
        while (ept > 1 && local_bytes((int)bits, wg, ept, 8, 8, 0) > info->local_mem)
            ept -= ept > 8 ? 2 : 1;
        while (wg > RADIX_MIN_WG && local_bytes((int)bits, wg, ept, 8, 8, 0) > info->local_mem)
            wg /= 2;
        while (bits > 4 && local_bytes((int)bits, wg, ept, 8, 8, 0) > info->local_mem)
            bits--;
    }
    gs_params_clear(out);
    gs_params_set(out, "radix_bits", bits);
    gs_params_set(out, "wg_size", wg);
    gs_params_set(out, "elems_per_thread", ept);
    /* GPUs: onesweep for small arrays only (H200, docs/PERFORMANCE.md: it
       halves 2^16 and loses a third at 2^27); CPUs: never (a spinning
       group holds a core). The tuner tries 0 and 1 per size. */
    gs_params_set(out, "lookback", gpu ? 2 : 0);
}

/* Test hooks of the onesweep path (gs_algos.h) */
static _Atomic int fallback_forced;
static _Atomic size_t small_max = RADIX_SMALL_MAX;
static _Atomic int pairs_forced = -1;

int gs_radix_force_fallback(int on)
{
    return atomic_exchange(&fallback_forced, on);
}

size_t gs_radix_small_max(size_t n)
{
    return atomic_exchange(&small_max, n == (size_t)-1 ? RADIX_SMALL_MAX : n);
}

int gs_radix_force_pairs(int mode)
{
    return atomic_exchange(&pairs_forced, mode);
}

/* Whether the reduce-then-scan scatter ranks 32-bit key-value pairs as one
 * 64-bit word (radix_scatter_k32_p32): where its 8-byte exchange slots fit
 * the device's local memory, by default on CPU devices only
 * (PAIRS_DEFAULT_*). */
static int use_pairs(const long v[P_COUNT], uint64_t n, size_t ks, size_t vs,
                     const gs_dev_info *in)
{
    int forced = atomic_load(&pairs_forced);
    int want = forced >= 0 ? forced
                           : (in->type & CL_DEVICE_TYPE_GPU) ? PAIRS_DEFAULT_GPU : PAIRS_DEFAULT_CPU;
    return want && ks == 4 && vs == 4 && !use_lookback(v, n, ks, vs, in) &&
           local_bytes((int)v[P_BITS], v[P_WG], v[P_EPT], 8, 0, 0) <= in->local_mem;
}

int gs_radix_takes_pairs(const gs_dev_info *info, const gs_sort_req *req, const gs_params *p,
                         gs_err *err)
{
    return takes(use_pairs, info, req, p, err);
}

/* ---- one sort ---- */

/* Launch order, for the per-stage times logged at debug level: maybe the
 * NaN save (gs_clnan.h); for reduce-then-scan per pass (upsweep, scan,
 * scatter), the first upsweep alone when its digit turned out constant;
 * for onesweep the global histogram, radix_gstart once and one onesweep
 * per pass; then maybe iota. */
enum { K_NAN = 0, K_GHIST, K_UP, K_SCAN, K_SCATTER, K_GSTART, K_ONESWEEP, K_IOTA, K_COUNT };
static const char *const kstage[K_COUNT] = { "nan", "ghist", "upsweep", "scan", "scatter",
                                             "gstart", "onesweep", "iota" };
/* launches per pass: upsweep, scan reduce / scan / scan down, scatter;
 * rows taken whole: upsweep, radix_scan_rows, scatter */
#define LAUNCHES_PER_PASS 5
static const int pass_stage[LAUNCHES_PER_PASS] = { K_UP, K_SCAN, K_SCAN, K_SCAN, K_SCATTER };
#define LAUNCHES_PER_PASS_ROWS 3
static const int pass_stage_rows[LAUNCHES_PER_PASS_ROWS] = { K_UP, K_SCAN, K_SCATTER };
/* keys per work-item in the NaN save's tiles (GS_NAN_EPT in kernels/keys.cl) */
#define NAN_EPT 16
/* tiles per block of the scan kernels (SBT in kernels/radix.cl) */
#define SCAN_TILES 32
/* ticket words after the histogram and gstart rows (one per pass), then
 * ORAND_COPIES copies of the OR (2 words) and the AND (2 words) of the
 * keys (ORAND_COPIES in kernels/radix.cl) */
#define NTICKETS 64
#define ORAND_COPIES 16
#define NORAND (4 * ORAND_COPIES)

/* The kernel part of one sort, inside the device frame (gs_devrun.h):
 * its shape from the parameters, kernels, buffers, and what the
 * histogram read-back decided. */
typedef struct radix_run {
    int bits, lb, pairs, readback;   /* readback: above small_max */
    size_t wg, ept, radix, ntiles, nblk, ghgroups;
    /* rows taken whole (rows_whole): `rows` rows of rlen keys, tpr tiles
     * each, one radix_scan_rows a pass; else rlen = n. nan_rows: their NaN
     * patterns saved on the device (nan) and put back row by row. */
    int rows_whole, nan_rows;
    size_t rows, tpr;
    cl_uint rlen;
    gs_clnan nan;
    size_t orand_at, ghwords;   /* where the OR and AND lie in the histogram; its words */
    unsigned npos;              /* digit positions of a key */
    unsigned fbegin, fbits;     /* the bits sorted by: [fbegin, fbegin + fbits) of the
                                   encoded key (a request's bit range; else 0 and all) */
    unsigned nfield;            /* digit positions of those bits (<= npos) */
    cl_uint un, kind, desc, spin;
    char opts[160];
    char kn_ghist[32], kn_uporand[40], kn_up[32], kn_scatter[40], kn_os[40], kn_iota[32];
    cl_kernel k_ghist, k_uporand, k_up, k_sred, k_scan, k_sdown, k_scatter, k_gstart, k_os, k_iota,
        k_srows;
    cl_mem look[2], bsum, ghist;   /* look[0]: also the counts */
    cl_mem raced;         /* hostile kernels' race flag (gs_clrun_raced), else NULL */
    cl_event fill_ev;
    uint32_t *hghist;
    size_t kev_ghist;     /* kernel events before the histogram's (the NaN save's) */
    unsigned run_pos[64], nrun;   /* the digit positions of the passes run */
    int first_counted;    /* the first pass's counts came with the OR and AND */
    size_t lone_up;       /* 1: that upsweep ran alone (its digit was constant) */
} radix_run;

static void radix_free(void *self)
{
    radix_run *r = self;
    if (r->fill_ev)
        clReleaseEvent(r->fill_ev);
    free(r->hghist);
    gs_clnan_free(&r->nan);
}

/* Pass i of the sort, on digit position pos, from keys[cur] (and
 * vals[cur]): reduce-then-scan (upsweep, three scan kernels, scatter) or
 * one onesweep kernel. skip_up: the pass's upsweep already ran (the first
 * one, with the OR and AND). */
/* The kernels' `shift` of digit position pos (kernels/radix.cl: DIGIT):
 * its lowest bit, and above it the mask of its bits, narrower than the
 * digit where a bit range ends inside it. */
static cl_uint pass_shift(const radix_run *r, unsigned pos)
{
    const unsigned lo = pos * (unsigned)r->bits, left = r->fbits - lo;
    const cl_uint mask = left >= (unsigned)r->bits ? (cl_uint)r->radix - 1
                                                   : ((cl_uint)1 << left) - 1;
    return (cl_uint)(r->fbegin + lo) | mask << 8;
}

static int run_pass(gs_devrun *d, const radix_run *r, unsigned i, cl_uint pos, cl_uint flags,
                    int cur, int skip_up, gs_err *err)
{
    const cl_uint shift = pass_shift(r, pos);
    /* keys in/out, [values in/out], then the kernel's own */
    gs_karg ax[16] = { GS_KARG(d->keys[cur]), GS_KARG(d->keys[1 - cur]) };
    unsigned na = 2;
    if (d->vs) {
        ax[na++] = (gs_karg)GS_KARG(d->vals[cur]);
        ax[na++] = (gs_karg)GS_KARG(d->vals[1 - cur]);
    }
    int rc;
    if (r->lb) {
        const cl_uint gsoff = (r->npos + pos) * (cl_uint)r->radix;
        const cl_uint tkoff = 2 * r->npos * (cl_uint)r->radix + i;
        gs_karg tail[] = { GS_KARG(r->ghist), GS_KARG(r->look[i % 2]),
                           GS_KARG(r->look[(i + 1) % 2]), GS_KARG(r->un), GS_KARG(shift),
                           GS_KARG(flags), GS_KARG(r->kind), GS_KARG(r->desc), GS_KARG(gsoff),
                           GS_KARG(tkoff), GS_KARG(r->spin) };
        for (size_t j = 0; j < sizeof tail / sizeof tail[0]; j++)
            ax[na++] = tail[j];
        if (r->raced)
            ax[na++] = (gs_karg)GS_KARG(r->raced);
        if ((rc = gs_clrun_args(r->k_os, r->kn_os, ax, na, err)))
            return rc;
        return gs_clrun_launch(&d->cr, r->k_os, r->kn_os, r->ntiles, r->wg, err);
    }
    const cl_uint untiles = (cl_uint)r->ntiles, unblk = (cl_uint)r->nblk;
    gs_karg au[] = { GS_KARG(d->keys[cur]), GS_KARG(r->un), GS_KARG(shift), GS_KARG(flags),
                     GS_KARG(r->kind), GS_KARG(r->desc), GS_KARG(r->look[0]) };
    gs_karg asr[] = { GS_KARG(r->look[0]), GS_KARG(untiles), GS_KARG(unblk), GS_KARG(r->bsum),
                      GS_KARG(r->ghist), GS_KARG(pos) };
    gs_karg as[] = { GS_KARG(r->bsum), GS_KARG(r->ghist), GS_KARG(pos), GS_KARG(unblk) };
    gs_karg asd[] = { GS_KARG(r->look[0]), GS_KARG(r->bsum), GS_KARG(untiles), GS_KARG(unblk) };
    gs_karg tail[] = { GS_KARG(r->look[0]), GS_KARG(r->un), GS_KARG(shift), GS_KARG(flags),
                       GS_KARG(r->kind), GS_KARG(r->desc), GS_KARG(r->rlen) };
    for (size_t j = 0; j < sizeof tail / sizeof tail[0]; j++)
        ax[na++] = tail[j];
    if (r->raced)
        ax[na++] = (gs_karg)GS_KARG(r->raced);
    gs_clrun *cr = &d->cr;
    const size_t wg = r->wg;
    if (r->rows_whole) {
        /* rows: one scan kernel, a group a row */
        const cl_uint utpr = (cl_uint)r->tpr;
        gs_karg arows[] = { GS_KARG(r->look[0]), GS_KARG(utpr), GS_KARG(r->rlen) };
        if ((!skip_up && ((rc = gs_clrun_args(r->k_up, r->kn_up, au, 7, err)) ||
                          (rc = gs_clrun_launch(cr, r->k_up, r->kn_up, r->ntiles, wg, err)))) ||
            (rc = gs_clrun_args(r->k_srows, "radix_scan_rows", arows, 3, err)) ||
            (rc = gs_clrun_launch(cr, r->k_srows, "radix_scan_rows", r->rows, wg, err)) ||
            (rc = gs_clrun_args(r->k_scatter, r->kn_scatter, ax, na, err)))
            return rc;
        return gs_clrun_launch(cr, r->k_scatter, r->kn_scatter, r->ntiles, wg, err);
    }
    if ((!skip_up && ((rc = gs_clrun_args(r->k_up, r->kn_up, au, 7, err)) ||
                      (rc = gs_clrun_launch(cr, r->k_up, r->kn_up, r->ntiles, wg, err)))) ||
        (rc = gs_clrun_args(r->k_sred, "radix_scan_reduce", asr, 6, err)) ||
        (rc = gs_clrun_launch(cr, r->k_sred, "radix_scan_reduce", r->nblk, wg, err)) ||
        (rc = gs_clrun_args(r->k_scan, "radix_scan", as, 4, err)) ||
        (rc = gs_clrun_launch(cr, r->k_scan, "radix_scan", r->radix, wg, err)) ||
        (rc = gs_clrun_args(r->k_sdown, "radix_scan_down", asd, 4, err)) ||
        (rc = gs_clrun_launch(cr, r->k_sdown, "radix_scan_down", r->nblk, wg, err)) ||
        (rc = gs_clrun_args(r->k_scatter, r->kn_scatter, ax, na, err)))
        return rc;
    return gs_clrun_launch(cr, r->k_scatter, r->kn_scatter, r->ntiles, wg, err);
}

/* The program for the parameters (for client pages where the frame adopts
 * them) and the kernels of the path this sort takes. */
static int radix_kernels(gs_devrun *d, void *self, gs_err *err)
{
    radix_run *r = self;
    int rc = gs_radix_program(d->ctx, r->bits, r->wg, r->ept, d->cr.hostile, d->ks, r->opts,
                         sizeof r->opts, &d->prog, err);
    if (rc)
        return rc;
    d->wg = r->wg;
    const int kw = (int)d->ks * 8, vw = (int)d->vs * 8, lb = r->lb;
    snprintf(r->kn_ghist, sizeof r->kn_ghist, "radix_ghist_k%d", kw);
    snprintf(r->kn_uporand, sizeof r->kn_uporand, "radix_upsweep_orand_k%d", kw);
    snprintf(r->kn_up, sizeof r->kn_up, "radix_upsweep_k%d", kw);
    snprintf(r->kn_scatter, sizeof r->kn_scatter, "radix_scatter_k%d_%c%d", kw,
             r->pairs ? 'p' : 'v', vw);
    snprintf(r->kn_os, sizeof r->kn_os, "radix_onesweep_k%d_v%d", kw, vw);
    snprintf(r->kn_iota, sizeof r->kn_iota, "radix_iota_v%d", vw ? vw : 32);
    if ((lb && (rc = gs_devrun_kernel(d, r->kn_ghist, &r->k_ghist, err))) ||
        (!lb && r->readback && (rc = gs_devrun_kernel(d, r->kn_uporand, &r->k_uporand, err))) ||
        (!lb && ((rc = gs_devrun_kernel(d, r->kn_up, &r->k_up, err)) ||
                 (rc = gs_devrun_kernel(d, r->kn_scatter, &r->k_scatter, err)))) ||
        (!lb && r->rows_whole &&
         (rc = gs_devrun_kernel(d, "radix_scan_rows", &r->k_srows, err))) ||
        (!lb && !r->rows_whole &&
         ((rc = gs_devrun_kernel(d, "radix_scan_reduce", &r->k_sred, err)) ||
          (rc = gs_devrun_kernel(d, "radix_scan", &r->k_scan, err)) ||
          (rc = gs_devrun_kernel(d, "radix_scan_down", &r->k_sdown, err)))) ||
        (lb && ((rc = gs_devrun_kernel(d, "radix_gstart", &r->k_gstart, err)) ||
                (rc = gs_devrun_kernel(d, r->kn_os, &r->k_os, err)))) ||
        (d->idx && (rc = gs_devrun_kernel(d, r->kn_iota, &r->k_iota, err))))
        return rc;
    return 0;
}

/* The digit counts (or look-back words), block sums, the histogram with
 * its host copy, and the race flag of hostile kernels. */
static int radix_buffers(gs_devrun *d, void *self, gs_err *err)
{
    radix_run *r = self;
    gs_clrun *cr = &d->cr;
    const size_t counts = r->radix * r->ntiles * 4;
    int rc;
    if ((rc = gs_clrun_buffer(cr, counts, r->lb ? "look-back words" : "digit counts",
                              &r->look[0], err)) ||
        (r->lb && (rc = gs_clrun_buffer(cr, counts, "look-back words (second)", &r->look[1],
                                        err))) ||
        (!r->lb && !r->rows_whole &&
         (rc = gs_clrun_buffer(cr, r->radix * r->nblk * 4, "block sums", &r->bsum, err))) ||
        (rc = gs_clrun_buffer(cr, r->ghwords * 4, "histogram", &r->ghist, err)) ||
        (cr->hostile && (rc = gs_clrun_raced(cr, &r->raced, err))))
        return rc;
    /* On the client's own pages a pass may drop keys (kernels/radix.cl),
     * leaving slots of the second buffers unwritten, which later passes
     * move into the caller's arrays: cleared, they hold nothing of another
     * request's. */
    if (cr->nadopt && cr->adopt[0] == d->keys[0] &&
        ((rc = gs_clrun_clear(cr, d->keys[1], d->n * d->ks, err)) ||
         (d->vs && (rc = gs_clrun_clear(cr, d->vals[1], d->n * d->vs, err)))))
        return rc;
    r->hghist = calloc(r->ghwords, 4);   /* zeros: the histogram's initial value */
    if (!r->hghist)
        return gs_err_set(err, GS_ENOMEM, "radix: out of memory");
    for (size_t c = 0; c < ORAND_COPIES; c++)   /* the ANDs' */
        r->hghist[r->orand_at + 4 * c + 2] = r->hghist[r->orand_at + 4 * c + 3] = UINT32_MAX;
    return 0;
}

/* The histogram zeroed, then where the sort needs it (onesweep always,
 * reduce-then-scan above small_max) its first kernel and the read-back. */
static int histogram(gs_devrun *d, radix_run *r, gs_err *err)
{
    cl_command_queue q = d->cr.q;
    const size_t wg = r->wg;
    int rc;
    /* Zeroed by a write of the (at most 17 KiB) zeroed host copy, not by
     * clEnqueueFillBuffer: Oclgrind 21.10 leaves filled memory marked
     * uninitialized, so every atomic_add into it was reported (see
     * docs/RELIABILITY.md). In-order queue: the write is done
     * before the read-back below reuses hghist. */
    cl_int crc = clEnqueueWriteBuffer(q, r->ghist, CL_FALSE, 0, r->ghwords * 4, r->hghist, 0,
                                      NULL, d->cr.lean ? NULL : &r->fill_ev);
    if (crc != CL_SUCCESS) {
        r->fill_ev = NULL;
        return gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "radix: histogram");
    }
    if (r->lb) {
        /* the global histogram of every digit position; onesweep's first
         * look-back words are cleared on the way */
        const cl_uint nzero = (cl_uint)(r->radix * r->ntiles);
        const cl_uint field = (cl_uint)r->fbegin | (cl_uint)r->fbits << 8;
        gs_karg a[] = { GS_KARG(d->keys[0]), GS_KARG(r->un), GS_KARG(r->kind),
                        GS_KARG(r->desc), GS_KARG(field), GS_KARG(r->ghist),
                        GS_KARG(r->look[0]), GS_KARG(nzero) };
        if ((rc = gs_clrun_args(r->k_ghist, r->kn_ghist, a, 8, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_ghist, r->kn_ghist, r->ghgroups, wg, err)))
            return rc;
    } else if (r->readback) {
        /* reduce-then-scan sums each pass's histogram row from its digit
         * counts (radix_scan_reduce); skipping needs only the OR and AND,
         * which the upsweep of the lowest digit (and the first pass's
         * encoding) gives on the way */
        const cl_uint first = pass_shift(r, 0), enc = 1, off = (cl_uint)r->orand_at;
        gs_karg a[] = { GS_KARG(d->keys[0]), GS_KARG(r->un), GS_KARG(first), GS_KARG(enc),
                        GS_KARG(r->kind), GS_KARG(r->desc), GS_KARG(r->look[0]),
                        GS_KARG(r->ghist), GS_KARG(off) };
        if ((rc = gs_clrun_args(r->k_uporand, r->kn_uporand, a, 9, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_uporand, r->kn_uporand, r->ntiles, wg, err)))
            return rc;
    }
    if (!r->readback)
        return 0;
    /* onesweep: the histogram rows; reduce-then-scan: the OR and AND */
    const size_t at = r->lb ? 0 : r->orand_at, words = r->lb ? (size_t)r->npos * r->radix
                                                            : NORAND;
    crc = clEnqueueReadBuffer(q, r->ghist, CL_TRUE, at * 4, words * 4, r->hghist + at, 0, NULL,
                              NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueReadBuffer", crc, "radix: histogram");
    return 0;
}

/* The passes to run: passes whose digit is shared by all keys change
 * nothing (known only after the read-back): one digit holds every key, or
 * the OR and the AND of the keys agree on its bits. */
static void choose_passes(radix_run *r, size_t n, size_t ks)
{
    uint64_t kor = 0, kand = UINT64_MAX;
    for (size_t c = 0; c < ORAND_COPIES; c++) {
        const uint32_t *w = r->hghist + r->orand_at + 4 * c;
        kor |= w[0] | (uint64_t)w[1] << 32;
        kand &= w[2] | (uint64_t)w[3] << 32;
    }
    kand &= gs_key_max(ks);   /* 32-bit keys: no high word */
    /* the bits that differ somewhere, within the bits sorted by */
    const uint64_t fmask = r->fbits >= 64 ? UINT64_MAX : (UINT64_C(1) << r->fbits) - 1;
    const uint64_t differ = ((kor ^ kand) >> r->fbegin) & fmask;
    r->nrun = 0;
    for (unsigned pos = 0; pos < r->nfield; pos++) {
        int constant = 0;
        if (r->readback && !r->lb)
            constant = ((differ >> (pos * (unsigned)r->bits)) & (r->radix - 1)) == 0;
        else if (r->readback)
            for (size_t d = 0; d < r->radix && !constant; d++)
                constant = r->hghist[(size_t)pos * r->radix + d] == (uint32_t)n;
        if (!constant)
            r->run_pos[r->nrun++] = pos;
    }
    /* reduce-then-scan with the read-back: the first pass takes the lowest
     * digit's counts from the upsweep that gave the OR and AND, unless that
     * digit was constant (then the upsweep stands alone before the passes) */
    r->first_counted = !r->lb && r->readback && r->nrun > 0 && r->run_pos[0] == 0;
    r->lone_up = !r->lb && r->readback && !r->first_counted ? 1 : 0;
}

/* Rows taken whole: the NaN patterns the device saved (gs_clnan.h, the
 * whole request's in input order, counted per NaN tile of wg x NAN_EPT
 * keys, which lie within rows: nan_rows) over each row's own NaN block,
 * the last of the row ascending, the first descending. One copy a row that
 * has NaNs. */
static int restore_nan_rows(gs_devrun *d, const radix_run *r, gs_err *err)
{
    const gs_clnan *s = &r->nan;
    if (!s->count || d->unmoved)
        return 0;
    const size_t len = r->rlen, ntpr = len / (r->wg * NAN_EPT), ks = d->ks;
    for (size_t row = 0; row < r->rows; row++) {
        const size_t at = s->hoff[row * ntpr], c = s->hoff[(row + 1) * ntpr] - at;
        if (!c)
            continue;
        const size_t first = row * len + (d->req->shape.descending ? 0 : len - c);
        cl_int crc = clEnqueueCopyBuffer(d->cr.q, s->saved, d->keys[d->cur], at * ks,
                                         first * ks, c * ks, 0, NULL, NULL);
        if (crc != CL_SUCCESS)
            return gs_cl_fail(err, "clEnqueueCopyBuffer", crc, "radix: NaN patterns of row %zu",
                              row);
    }
    return 0;
}

/* The histogram and its read-back, the passes that change something, and
 * argsort's identity where none does. */
static int radix_enqueue(gs_devrun *d, void *self, gs_err *err)
{
    radix_run *r = self;
    const size_t wg = r->wg;
    int rc;
    /* rows whole: the NaN patterns saved here, not by the frame, which
     * would put them all back at the end of the last row */
    if (r->nan_rows &&
        (rc = gs_clnan_save(&d->cr, d->prog, d->wg, d->keys[0], d->req, &r->nan, err)))
        return rc;
    r->kev_ghist = d->cr.nkev;
    if ((rc = histogram(d, r, err)))
        return rc;
    choose_passes(r, d->n, d->ks);
    d->st->passes = r->nrun;
    d->st->passes_skipped = r->nfield - r->nrun;
    if (r->lb && r->nrun > 0) {
        const cl_uint unpos = r->npos;
        gs_karg a[] = { GS_KARG(r->ghist), GS_KARG(unpos) };
        if ((rc = gs_clrun_args(r->k_gstart, "radix_gstart", a, 2, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_gstart, "radix_gstart", r->npos, wg, err)))
            return rc;
    }
    const int testfb = atomic_load(&fallback_forced);
    r->spin = testfb ? 0 : RADIX_LB_SPIN;
    int cur = 0;
    for (unsigned i = 0; i < r->nrun; i++) {
        cl_uint flags = 0;
        if (i == 0)
            flags |= 1u | (d->idx ? 4u : 0u);   /* encode on load; generate indices */
        if (i + 1 == r->nrun)
            flags |= 2u;                     /* decode on store */
        if (testfb)
            flags |= 8u;                     /* every look-back falls back */
        if (r->lb)                           /* look-back tag; the first pass clears */
            flags |= ((i >> 1) & 1u ? 16u : 0u) | (i == 0 ? 32u : 0u);   /* look[1] */
        const int skip_up = r->first_counted && i == 0;
        if ((rc = run_pass(d, r, i, r->run_pos[i], flags, cur, skip_up, err)))
            return rc;
        cur = 1 - cur;
    }
    d->cur = cur;
    /* nothing moved: the keys (and stored values) are in order as they
     * came, in the caller's arrays; no NaN block to restore */
    d->unmoved = r->nrun == 0;
    if (r->nrun == 0 && d->idx) {
        /* argsort is the identity (in each row) */
        gs_karg a[] = { GS_KARG(d->vals[0]), GS_KARG(r->un), GS_KARG(r->rlen) };
        if ((rc = gs_clrun_args(r->k_iota, r->kn_iota, a, 3, err)) ||
            (rc = gs_clrun_launch(&d->cr, r->k_iota, r->kn_iota, (d->n + wg - 1) / wg, wg,
                                  err)))
            return rc;
    }
    return restore_nan_rows(d, r, err);
}

/* Kernel time by stage (the launch order above kstage), logged at debug
 * level with the shape of the sort; the histogram's fill counts too. */
static double radix_kernel_ms(gs_devrun *d, void *self)
{
    radix_run *r = self;
    const gs_sort_stats *st = d->st;
    const int lb = r->lb;
    const unsigned nrun = r->nrun;
    double by[K_COUNT] = { 0 }, total = 0;
    for (size_t i = 0; i < d->cr.nkev; i++) {
        double ms = gs_clrun_event_ms(d->cr.kev[i]);
        /* after the NaN save: onesweep's histogram (always) and gstart, or
         * the lone upsweep; then the passes */
        const size_t j = i - r->kev_ghist, lead = lb ? 1 : r->lone_up;
        int k = i < r->kev_ghist ? K_NAN : j < lead ? (lb ? K_GHIST : K_UP) : nrun == 0 ? K_IOTA
                : lb ? (j == lead ? K_GSTART : K_ONESWEEP)
                : r->rows_whole ? pass_stage_rows[(j - lead) % LAUNCHES_PER_PASS_ROWS]
                : pass_stage[(j - lead) % LAUNCHES_PER_PASS];
        total += ms;
        by[k] += ms;
    }
    double fill = gs_clrun_event_ms(r->fill_ev);
    char stages[256];
    size_t sl = 0;
    for (int k = 0; k < K_COUNT; k++)
        sl += (size_t)snprintf(stages + sl, sizeof stages - sl, "%s %.3f, ", kstage[k], by[k]);
    char rows[64] = "";
    if (r->rows_whole)
        snprintf(rows, sizeof rows, " (%zu rows of %u keys whole)", r->rows, (unsigned)r->rlen);
    GS_DEBUG("radix: n=%zu%s %s/%s %s lookback=%d%s%s: %u passes (%u skipped), %zu tiles; ms: "
             "%sfill %.3f",
             d->n, rows, gs_dtype_name(d->req->shape.dtype),
             gs_payload_name(d->req->shape.payload), r->opts, lb, r->pairs ? " pairs" : "",
             r->readback ? "" : " (no read-back)", st->passes, st->passes_skipped, r->ntiles,
             stages, fill);
    return total + fill;
}

/* The frame's operations; the frame's algorithm is the only difference
 * between a flat request's and rows taken whole (radix_rows_frame). */
#define RADIX_OPS(frame_algo) {                                                \
        .algo = (frame_algo),                                                  \
        .finish_what = "radix: passes",                                        \
        .kernels = radix_kernels,                                              \
        .buffers = radix_buffers,                                              \
        .sort = radix_enqueue,                                                 \
        .kernel_ms = radix_kernel_ms,                                          \
        .release = radix_free,                                                 \
    }
static const gs_devrun_ops radix_ops = RADIX_OPS(&gs_algo_radix);

/* Rows taken whole keep their NaN patterns themselves, row by row: their
 * frame's algorithm (the same name) has no keeps_nan, so the frame neither
 * saves nor restores the request's patterns as one block. */
static const gs_algo radix_rows_frame = {
    .name = "radix",
    .stable = 1,
    .uses_device = 1,
};

static const gs_devrun_ops radix_rows_ops = RADIX_OPS(&radix_rows_frame);
#undef RADIX_OPS

/* A request of equal rows is sorted whole (issue 38) in tiles of wg_size
 * x e keys, e the largest value up to elems_per_thread whose tile divides
 * the row (no tile spans two rows), when a row has at most this many tiles
 * (a group walks its row's tiles in radix_scan_rows). Longer rows, and
 * rows no tile divides, are sorted one by one, each a flat sort. */
#define RADIX_ROWS_MAX_TILES 256

/* e for req's rows with the parameters v on a device like in, or 0: rows
 * one by one. The smaller tile means more digit counts (2^radix_bits words
 * a tile: short rows may need more than their keys): where those do not
 * fit the device (check() sized them for the parameters' tile), the rows
 * go one by one too. */
static size_t rows_ept(const long v[P_COUNT], const gs_sort_req *req, const gs_dev_info *in)
{
    if (req->shape.rows <= 1 || req->shape.segments || req->n == 0)
        return 0;
    const size_t n = req->n, len = n / (size_t)req->shape.rows, wg = (size_t)v[P_WG];
    size_t e = (size_t)v[P_EPT];
    while (e >= 1 && len % (wg * e))
        e--;
    if (e == 0 || len / (wg * e) > RADIX_ROWS_MAX_TILES)
        return 0;
    const uint64_t ks = gs_shape_key_bytes(&req->shape), vs = gs_payload_size(req->shape.payload);
    const uint64_t cb = (uint64_t)(n / (wg * e)) * (UINT64_C(4) << v[P_BITS]);
    const uint64_t total = 2 * (uint64_t)n * (ks + vs) + cb + (UINT64_C(1) << 20);
    if (cb > in->max_alloc || (in->global_mem && total > in->global_mem))
        return 0;
    return e;
}

int gs_radix_takes_rows_whole(const gs_dev_info *info, const gs_sort_req *req,
                              const gs_params *p, gs_err *err)
{
    long v[P_COUNT];
    int rc = get_params(info, p, v, err);
    return rc ? rc : rows_ept(v, req, info) > 0;
}

/* One sort on the device: flat (rept 0), or req's rows whole in tiles of
 * wg_size x rept keys (reduce-then-scan whatever lookback says). */
static int radix_device(gs_sort_ctx *ctx, const gs_sort_req *req, const long vin[P_COUNT],
                        size_t rept, gs_sort_stats *st, gs_err *err)
{
    gs_dev *dev = ctx->dev;
    long v[P_COUNT];
    memcpy(v, vin, sizeof v);
    const size_t n = req->n;
    const size_t ks = gs_shape_key_bytes(&req->shape), vs = gs_payload_size(req->shape.payload);
    /* 16-bit keys alone, where radix counts them (radix_count.c) */
    if (!rept && gs_radix_counts(&dev->info, req))
        return gs_radix_count_sort(ctx, req, (int)v[P_BITS], (size_t)v[P_WG], (size_t)v[P_EPT], st,
                                   err);
    radix_run r;
    memset(&r, 0, sizeof r);
    if (rept) {
        v[P_EPT] = (long)rept;
        v[P_LB] = 0;
        r.rows_whole = 1;
        r.rows = (size_t)req->shape.rows;
    }
    r.bits = (int)v[P_BITS];
    r.wg = (size_t)v[P_WG];
    r.ept = (size_t)v[P_EPT];
    r.radix = (size_t)1 << r.bits;
    r.npos = (unsigned)((ks * 8 + (size_t)r.bits - 1) / (size_t)r.bits);
    r.fbegin = gs_shape_bit_lo(&req->shape);
    r.fbits = gs_shape_bit_width(&req->shape);
    r.nfield = (r.fbits + (unsigned)r.bits - 1) / (unsigned)r.bits;
    r.lb = use_lookback(v, n, ks, vs, &dev->info);
    r.pairs = use_pairs(v, n, ks, vs, &dev->info);
    /* small arrays: no histogram read-back (every pass runs) */
    r.readback = n > atomic_load(&small_max);
    /* One group per tile in the per-pass kernels; the histogram kernel runs
     * about 4 groups per compute unit, looping over tiles. */
    const size_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    const size_t tile = r.wg * r.ept;
    r.ntiles = (n + tile - 1) / tile;
    r.ghgroups = r.ntiles < cu * 4 ? r.ntiles : cu * 4;
    r.nblk = (r.ntiles + SCAN_TILES - 1) / SCAN_TILES;
    /* the histogram rows, onesweep's gstart rows, its tickets, OR and AND */
    r.orand_at = 2 * (size_t)r.npos * r.radix + NTICKETS;
    r.ghwords = r.orand_at + NORAND;
    r.un = (cl_uint)n;
    r.rlen = rept ? (cl_uint)(n / r.rows) : (cl_uint)n;
    r.tpr = rept ? r.rlen / tile : r.ntiles;
    /* 16-bit keys: their type's encoding (kernels/keys.cl gs_enc16) */
    r.kind = gs_radix_kind(&req->shape);
    r.desc = req->shape.descending ? 1 : 0;
    if (!rept)
        return gs_devrun_sort(&radix_ops, &r, ctx, req, st, err);
    /* the device keeps NaN patterns where the flat sort would, and where
     * its NaN tiles lie within rows (else the caller saves them) */
    r.nan_rows = gs_keys_nan_on_device(req) && r.rlen % (r.wg * NAN_EPT) == 0;
    int rc = gs_devrun_sort(&radix_rows_ops, &r, ctx, req, st, err);
    if (rc == 0)
        st->nans_on_device = r.nan.count;
    return rc;
}

/* Rows one by one, each a flat request through gs_sort_run (as gs_sort.c's
 * sort_rows runs a device algorithm without `rows`): the first failure
 * stops the rest and names its row. */
static int rows_apart(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                      gs_sort_stats *st, gs_err *err)
{
    const size_t rows = (size_t)req->shape.rows;
    const int idx = req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64;
    for (size_t row = 0; row < rows; row++) {
        gs_sort_req s = gs_sort_req_row(req, row);
        if (s.n < 2 && !idx)    /* nothing to move (an index still has a 0 to write) */
            continue;
        gs_sort_stats rs;
        gs_err e;
        gs_err_clear(&e);
        int rc = gs_sort_run(&gs_algo_radix, ctx, &s, p, &rs, &e);
        gs_sort_stats_add(st, &rs);
        st->output_touched |= rs.output_touched || row > 0;
        if (rc < 0)
            return gs_err_set(err, rc, "row %zu of %zu: %s", row, rows, e.msg);
    }
    return 0;
}

static int radix_run_sort(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                          gs_sort_stats *st, gs_err *err)
{
    /* gs_sort_run has checked the request and the parameters (radix_check),
     * handled n = 0 and owns st->wall_ms (see gs_algo.run). With keeps_bits
     * it leaves NaN patterns to this function: the device keeps them from
     * GS_NAN_DEVICE_MIN keys on (gs_keys_nan_on_device), the host below. */
    gs_dev *dev = ctx->dev;
    long v[P_COUNT];
    get_params(dev ? &dev->info : NULL, p, v, err);
    const int rows = req->shape.rows > 1;
    const size_t rept = rows ? rows_ept(v, req, &dev->info) : 0;
    if (rows && !rept)
        return rows_apart(ctx, req, p, st, err);
    /* the host keeps NaN patterns where the device does not: below its
     * size, and for rows whose NaN tiles would span two rows */
    const int host = !gs_keys_nan_on_device(req) ||
                     (rows && (req->n / (size_t)req->shape.rows) % ((size_t)v[P_WG] * NAN_EPT));
    gs_nan_rows h = { 0, NULL };
    int rc;
    if (host && (rc = gs_keys_nan_rows_save(req, &h, err)) < 0) {
        gs_keys_nan_rows_free(&h);
        return rc;
    }
    rc = radix_device(ctx, req, v, rept, st, err);
    if (rc == 0)
        gs_keys_nan_rows_restore(req, &h);
    gs_keys_nan_rows_free(&h);
    return rc;
}

const gs_algo gs_algo_radix = {
    .name = "radix",
    .summary = "OpenCL LSD radix sort: per-tile digit counts, scan (or onesweep look-back), "
               "stable local-memory scatter",
    .stable = 1,
    .uses_device = 1,
    /* NaN patterns kept on the device (gs_clnan.h) by the frame for a flat
     * request, row by row for rows taken whole; below the device's size
     * by radix_run_sort on the host, so that a row's stay in its row */
    .keeps_nan = 1,
    .keeps_bits = 1,
    /* equal rows whole, in one sequence of launches, where a tile divides
     * the row; else row by row (rows_ept) */
    .rows = 1,
    /* a bit range's digits alone: its passes (pass_shift) and histogram */
    .bit_range = 1,
    .half_keys = 1,
    .params = radix_params,
    .nparams = P_COUNT,
    .defaults = radix_defaults,
    .check = radix_check,
    .run = radix_run_sort,
};
