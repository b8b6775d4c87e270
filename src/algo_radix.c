/* The OpenCL LSD radix sort ("radix"): host side of kernels/radix.cl. It
 * describes the four tunables (radix_bits, wg_size, elems_per_thread,
 * lookback) and their legal values on a device, rejects parameter sets a
 * device cannot run before anything is launched, and drives one sort:
 * upload; above 2^20 keys one reduction read back (the only read-back
 * before the result) to skip passes whose digit is constant: the OR and
 * AND of all keys for reduce-then-scan, which the first pass's upsweep
 * gives on the way, the global digit histogram for onesweep, which needs
 * it anyway (small arrays run every pass instead of waiting); then per
 * pass either upsweep / scan / scatter (lookback=0) or
 * one onesweep kernel (lookback=1: decoupled look-back between tiles, keys
 * read once per pass),
 * with keys and values ping-ponging between two device buffers (32-bit
 * keys with 32-bit values ranked as one 64-bit word on CPU devices), and
 * finally the download. Encoding, decoding and argsort indices happen inside the
 * first and last passes, so keys cross device memory as few times as the
 * pass structure allows. */
#include "config.h"
#include "gs_algos.h"
#include "gs_clnan.h"
#include "gs_clrun.h"
#include "gs_keys.h"
#include "gs_log.h"

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
    { "radix_bits", "bits per digit: passes = key bits / radix_bits (rounded up)", values_bits },
    { "wg_size", "work-items per work-group (power of two)", values_wg },
    { "elems_per_thread", "keys per work-item per tile (tile = wg_size x elems_per_thread)",
      values_ept },
    { "lookback", "1: one onesweep kernel per pass (decoupled look-back), 0: upsweep, scan and "
      "scatter per pass (a set without it means 0), 2: 1 up to 2^21 keys, else 0 (the GPU "
      "default)", values_lookback },
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
    uint64_t xk = ks == 4 ? pad4(tile) : pad8(tile);
    uint64_t a = ks * xk + (vs ? 2 * pad4(tile) : 0);
    uint64_t xv = vs ? vs * (vs == 4 ? pad4(tile) : pad8(tile)) : 0;
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
    return use(v, req->n, gs_dtype_size(req->dtype), gs_payload_size(req->payload), info);
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
    size_t ks = req ? gs_dtype_size(req->dtype) : 8;
    size_t vs = req ? gs_payload_size(req->payload) : 8;
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

/* ---- which local ranking the scatter uses (RANK_WARP in kernels/radix.cl) ---- */

enum { RANK_LOCAL = 0, RANK_WARP_EMUL = 1, RANK_WARP_PTX = 2 };

/* Set by the test hook; -1: pick per device. */
static _Atomic int rank_forced = -1;
/* Set when a PTX build failed once: NVIDIA devices then use RANK_LOCAL. */
static _Atomic int ptx_failed;

int gs_radix_force_rank(int mode)
{
    return atomic_exchange(&rank_forced, mode);
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

/* The warp ranking needs whole 32-lane warps; in PTX it needs an NVIDIA
 * device of compute capability 7.0 or later (match.any.sync), read when the
 * device was probed. */
static int rank_mode(const gs_dev *dev, size_t wg)
{
    if (wg % 32)
        return RANK_LOCAL;
    int forced = atomic_load(&rank_forced);
    if (forced >= 0)
        return forced;
    return dev->info.nv_cc_major >= 7 && !atomic_load(&ptx_failed) ? RANK_WARP_PTX : RANK_LOCAL;
}

/* Build (or fetch) the program for one parameter set, for client pages
 * (GS_HOSTILE_OPT) where the device adopts them (gs_clrun_hostile); a PTX
 * build that fails falls back to the portable ranking, says so once, and
 * is not tried again in this process. */
static int get_program(gs_sort_ctx *ctx, int bits, size_t wg, size_t ept, int hostile,
                       char *opts, size_t optsz, cl_program *prog, gs_err *err)
{
    gs_dev *dev = ctx->dev;
    int mode = rank_mode(dev, wg);
    for (;;) {
        int w = snprintf(opts, optsz, "-DRADIX_BITS=%d -DWG=%zu -DEPT=%zu%s", bits, wg, ept,
                         hostile ? GS_HOSTILE_OPT : "");
        /* with PTX, the look-back loads are volatile too (ld.volatile) */
        if (mode != RANK_LOCAL)
            snprintf(opts + w, optsz - (size_t)w, " -DRANK_WARP=%d%s", mode,
                     mode == RANK_WARP_PTX ? " -DLB_PTX=1" : "");
        int rc = gs_prog_get(dev, ctx->pc, (const char *[]){ "keys", "radix", NULL }, opts, prog,
                             NULL, err);
        if (rc == 0 || mode != RANK_WARP_PTX || atomic_load(&rank_forced) >= 0)
            return rc;
        if (!atomic_exchange(&ptx_failed, 1))
            GS_WARN("radix: the warp ranking (inline PTX) did not build on %s, using the "
                    "portable ranking: %s", dev->info.name, err->msg);
        gs_err_clear(err);
        mode = RANK_LOCAL;
    }
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
/* launches per pass: upsweep, scan reduce / scan / scan down, scatter */
#define LAUNCHES_PER_PASS 5
static const int pass_stage[LAUNCHES_PER_PASS] = { K_UP, K_SCAN, K_SCAN, K_SCAN, K_SCATTER };
/* tiles per block of the scan kernels (SBT in kernels/radix.cl) */
#define SCAN_TILES 32
/* ticket words after the histogram and gstart rows (one per pass), then
 * ORAND_COPIES copies of the OR (2 words) and the AND (2 words) of the
 * keys (ORAND_COPIES in kernels/radix.cl) */
#define NTICKETS 64
#define ORAND_COPIES 16
#define NORAND (4 * ORAND_COPIES)

typedef struct radix_run {
    gs_clrun cr;
    cl_kernel k_ghist, k_uporand, k_up, k_sred, k_scan, k_sdown, k_scatter, k_gstart, k_os, k_iota;
    cl_mem keys[2], vals[2], look[2], bsum, ghist;   /* look[0]: also the counts */
    cl_mem raced;         /* hostile kernels' race flag (gs_clrun_raced), else NULL */
    cl_event fill_ev;
    uint32_t *hghist;
    gs_clnan nan;
} radix_run;

static void run_release(radix_run *r)
{
    gs_clrun_release(&r->cr);   /* waits for the queue first */
    cl_kernel ks[] = { r->k_ghist, r->k_uporand, r->k_up, r->k_sred, r->k_scan, r->k_sdown,
                       r->k_scatter, r->k_gstart, r->k_os, r->k_iota };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    /* the buffers went back to the device's pool with gs_clrun_release */
    if (r->fill_ev)
        clReleaseEvent(r->fill_ev);
    free(r->hghist);
    gs_clnan_free(&r->nan);
}

/* What one pass launches: reduce-then-scan (upsweep, three scan kernels,
 * scatter) or one onesweep kernel; the names are those of the kernels. */
typedef struct pass_ctx {
    radix_run *r;
    const char *kn_up, *kn_scatter, *kn_os;
    size_t ntiles, nblk, wg, vs, radix;
    cl_uint un, kind, desc, npos, spin;
} pass_ctx;

/* skip_up: the pass's upsweep already ran (the first one, with the OR and
 * AND) */
static int run_pass(const pass_ctx *c, int lb, unsigned i, cl_uint pos, cl_uint shift,
                    cl_uint flags, int cur, int skip_up, gs_err *err)
{
    radix_run *r = c->r;
    /* keys in/out, [values in/out], then the kernel's own */
    gs_karg ax[16] = { GS_KARG(r->keys[cur]), GS_KARG(r->keys[1 - cur]) };
    unsigned na = 2;
    if (c->vs) {
        ax[na++] = (gs_karg)GS_KARG(r->vals[cur]);
        ax[na++] = (gs_karg)GS_KARG(r->vals[1 - cur]);
    }
    int rc;
    if (lb) {
        const cl_uint gsoff = (c->npos + pos) * (cl_uint)c->radix;
        const cl_uint tkoff = 2 * c->npos * (cl_uint)c->radix + i;
        gs_karg tail[] = { GS_KARG(r->ghist), GS_KARG(r->look[i % 2]),
                           GS_KARG(r->look[(i + 1) % 2]), GS_KARG(c->un), GS_KARG(shift),
                           GS_KARG(flags), GS_KARG(c->kind), GS_KARG(c->desc), GS_KARG(gsoff),
                           GS_KARG(tkoff), GS_KARG(c->spin) };
        for (size_t j = 0; j < sizeof tail / sizeof tail[0]; j++)
            ax[na++] = tail[j];
        if (r->raced)
            ax[na++] = (gs_karg)GS_KARG(r->raced);
        if ((rc = gs_clrun_args(r->k_os, c->kn_os, ax, na, err)))
            return rc;
        return gs_clrun_launch(&r->cr, r->k_os, c->kn_os, c->ntiles, c->wg, err);
    }
    const cl_uint untiles = (cl_uint)c->ntiles, unblk = (cl_uint)c->nblk;
    gs_karg au[] = { GS_KARG(r->keys[cur]), GS_KARG(c->un), GS_KARG(shift), GS_KARG(flags),
                     GS_KARG(c->kind), GS_KARG(c->desc), GS_KARG(r->look[0]) };
    gs_karg asr[] = { GS_KARG(r->look[0]), GS_KARG(untiles), GS_KARG(unblk), GS_KARG(r->bsum),
                      GS_KARG(r->ghist), GS_KARG(pos) };
    gs_karg as[] = { GS_KARG(r->bsum), GS_KARG(r->ghist), GS_KARG(pos), GS_KARG(unblk) };
    gs_karg asd[] = { GS_KARG(r->look[0]), GS_KARG(r->bsum), GS_KARG(untiles), GS_KARG(unblk) };
    gs_karg tail[] = { GS_KARG(r->look[0]), GS_KARG(c->un), GS_KARG(shift), GS_KARG(flags),
                       GS_KARG(c->kind), GS_KARG(c->desc) };
    for (size_t j = 0; j < sizeof tail / sizeof tail[0]; j++)
        ax[na++] = tail[j];
    if (r->raced)
        ax[na++] = (gs_karg)GS_KARG(r->raced);
    if ((!skip_up && ((rc = gs_clrun_args(r->k_up, c->kn_up, au, 7, err)) ||
                      (rc = gs_clrun_launch(&r->cr, r->k_up, c->kn_up, c->ntiles, c->wg, err)))) ||
        (rc = gs_clrun_args(r->k_sred, "radix_scan_reduce", asr, 6, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->k_sred, "radix_scan_reduce", c->nblk, c->wg, err)) ||
        (rc = gs_clrun_args(r->k_scan, "radix_scan", as, 4, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->k_scan, "radix_scan", c->radix, c->wg, err)) ||
        (rc = gs_clrun_args(r->k_sdown, "radix_scan_down", asd, 4, err)) ||
        (rc = gs_clrun_launch(&r->cr, r->k_sdown, "radix_scan_down", c->nblk, c->wg, err)) ||
        (rc = gs_clrun_args(r->k_scatter, c->kn_scatter, ax, na, err)))
        return rc;
    return gs_clrun_launch(&r->cr, r->k_scatter, c->kn_scatter, c->ntiles, c->wg, err);
}

static int radix_run_sort(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                          gs_sort_stats *st, gs_err *err)
{
    /* gs_sort_run has checked the request and the parameters (radix_check),
     * handled n = 0 and owns st->wall_ms (see gs_algo.run). */
    gs_dev *dev = ctx->dev;
    int rc;
    long v[P_COUNT];
    get_params(dev ? &dev->info : NULL, p, v, err);
    const int bits = (int)v[P_BITS];
    const size_t wg = (size_t)v[P_WG], ept = (size_t)v[P_EPT];
    const size_t tile = wg * ept, radix = (size_t)1 << bits;
    const size_t n = req->n;
    const size_t ks = gs_dtype_size(req->dtype), vs = gs_payload_size(req->payload);
    const int idx = req->payload == GS_PL_IDX32 || req->payload == GS_PL_IDX64;
    const unsigned npos = (unsigned)((ks * 8 + (size_t)bits - 1) / (size_t)bits);
    const int lb = use_lookback(v, n, ks, vs, &dev->info);
    const int pairs = use_pairs(v, n, ks, vs, &dev->info);
    /* small arrays: no histogram read-back (every pass runs) */
    const int readback = n > atomic_load(&small_max);

    rc = gs_dev_open(dev, err);
    if (rc)
        return rc;
    char opts[160];
    cl_program prog;
    const int hostile = gs_clrun_hostile(dev);
    rc = get_program(ctx, bits, wg, ept, hostile, opts, sizeof opts, &prog, err);
    if (rc)
        return rc;

    radix_run r;
    memset(&r, 0, sizeof r);
    gs_clrun_init(&r.cr, dev, "radix");
    gs_clrun_use(&r.cr, ctx->queue, ctx->host_pinned);
    r.cr.hostile = hostile;
    const int kw = ks == 4 ? 32 : 64, vw = (int)vs * 8;
    char kn_ghist[32], kn_uporand[40], kn_up[32], kn_scatter[40], kn_os[40], kn_iota[32];
    snprintf(kn_ghist, sizeof kn_ghist, "radix_ghist_k%d", kw);
    snprintf(kn_uporand, sizeof kn_uporand, "radix_upsweep_orand_k%d", kw);
    snprintf(kn_up, sizeof kn_up, "radix_upsweep_k%d", kw);
    snprintf(kn_scatter, sizeof kn_scatter, "radix_scatter_k%d_%c%d", kw, pairs ? 'p' : 'v', vw);
    snprintf(kn_os, sizeof kn_os, "radix_onesweep_k%d_v%d", kw, vw);
    snprintf(kn_iota, sizeof kn_iota, "radix_iota_v%d", vw ? vw : 32);
    if ((lb && (rc = gs_clrun_kernel(&r.cr, prog, kn_ghist, wg, &r.k_ghist, err))) ||
        (!lb && readback &&
         (rc = gs_clrun_kernel(&r.cr, prog, kn_uporand, wg, &r.k_uporand, err))) ||
        (!lb && ((rc = gs_clrun_kernel(&r.cr, prog, kn_up, wg, &r.k_up, err)) ||
                 (rc = gs_clrun_kernel(&r.cr, prog, "radix_scan_reduce", wg, &r.k_sred, err)) ||
                 (rc = gs_clrun_kernel(&r.cr, prog, "radix_scan", wg, &r.k_scan, err)) ||
                 (rc = gs_clrun_kernel(&r.cr, prog, "radix_scan_down", wg, &r.k_sdown, err)) ||
                 (rc = gs_clrun_kernel(&r.cr, prog, kn_scatter, wg, &r.k_scatter, err)))) ||
        (lb && ((rc = gs_clrun_kernel(&r.cr, prog, "radix_gstart", wg, &r.k_gstart, err)) ||
                (rc = gs_clrun_kernel(&r.cr, prog, kn_os, wg, &r.k_os, err)))) ||
        (idx && (rc = gs_clrun_kernel(&r.cr, prog, kn_iota, wg, &r.k_iota, err))))
        goto out;

    /* One group per tile in the per-pass kernels; the histogram kernel runs
     * about 4 groups per compute unit, looping over tiles. */
    const size_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    const size_t ntiles = (n + tile - 1) / tile;
    const size_t ghgroups = ntiles < cu * 4 ? ntiles : cu * 4;
    const size_t nblk = (ntiles + SCAN_TILES - 1) / SCAN_TILES;
    /* the histogram rows, onesweep's gstart rows, its tickets, OR and AND */
    const size_t orand_at = 2 * (size_t)npos * radix + NTICKETS;
    const size_t ghwords = orand_at + NORAND;

    r.cr.touched = &st->output_touched;
    if ((rc = gs_clrun_input(&r.cr, req->keys, n * ks, 1, "keys", &r.keys[0], err)) ||
        (rc = gs_clrun_buffer(&r.cr, n * ks, "keys (second)", &r.keys[1], err)) ||
        (vs && (rc = gs_clrun_input(&r.cr, req->values, n * vs, !idx, "values", &r.vals[0],
                                    err))) ||
        (vs && (rc = gs_clrun_buffer(&r.cr, n * vs, "values (second)", &r.vals[1], err))) ||
        (rc = gs_clrun_buffer(&r.cr, radix * ntiles * 4, lb ? "look-back words" : "digit counts",
                              &r.look[0], err)) ||
        (lb && (rc = gs_clrun_buffer(&r.cr, radix * ntiles * 4, "look-back words (second)",
                                     &r.look[1], err))) ||
        (!lb && (rc = gs_clrun_buffer(&r.cr, radix * nblk * 4, "block sums", &r.bsum, err))) ||
        (rc = gs_clrun_buffer(&r.cr, ghwords * 4, "histogram", &r.ghist, err)) ||
        (r.cr.hostile && (rc = gs_clrun_raced(&r.cr, &r.raced, err))))
        goto out;
    /* On the client's own pages a pass may drop keys (kernels/radix.cl),
     * leaving slots of the second buffers unwritten, which later passes
     * move into the caller's arrays: cleared, they hold nothing of another
     * request's. */
    if (r.cr.nadopt && r.cr.adopt[0] == r.keys[0] &&
        ((rc = gs_clrun_clear(&r.cr, r.keys[1], n * ks, err)) ||
         (vs && (rc = gs_clrun_clear(&r.cr, r.vals[1], n * vs, err)))))
        goto out;
    r.hghist = calloc(ghwords, 4);   /* zeros: the histogram's initial value */
    if (!r.hghist) {
        rc = gs_err_set(err, GS_ENOMEM, "radix: out of memory");
        goto out;
    }
    for (size_t c = 0; c < ORAND_COPIES; c++)   /* the ANDs' */
        r.hghist[orand_at + 4 * c + 2] = r.hghist[orand_at + 4 * c + 3] = UINT32_MAX;
    /* NaN patterns of float keys, saved on the device before encoding */
    if ((rc = gs_clnan_save(&r.cr, prog, wg, r.keys[0], req, &r.nan, err)))
        goto out;
    const size_t kev_ghist = r.cr.nkev;
    cl_command_queue q = r.cr.q;
    const cl_uint un = (cl_uint)n;
    const cl_uint kind = gs_keys_kind(req->dtype);
    const cl_uint desc = req->descending ? 1 : 0;
    /* Zeroed by a write of the (at most 17 KiB) zeroed host copy, not by
     * clEnqueueFillBuffer: Oclgrind 21.10 leaves filled memory marked
     * uninitialized, so every atomic_add into it was reported (see
     * docs/RELIABILITY.md). In-order queue: the write is done
     * before the read-back below reuses hghist. */
    cl_int crc = clEnqueueWriteBuffer(q, r.ghist, CL_FALSE, 0, ghwords * 4, r.hghist, 0, NULL,
                                      &r.fill_ev);
    if (crc != CL_SUCCESS) {
        r.fill_ev = NULL;
        rc = gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "radix: histogram");
        goto out;
    }
    if (lb) {
        /* the global histogram of every digit position; onesweep's first
         * look-back words are cleared on the way */
        const cl_uint nzero = (cl_uint)(radix * ntiles);
        gs_karg a[] = { GS_KARG(r.keys[0]), GS_KARG(un), GS_KARG(kind), GS_KARG(desc),
                        GS_KARG(r.ghist), GS_KARG(r.look[0]), GS_KARG(nzero) };
        if ((rc = gs_clrun_args(r.k_ghist, kn_ghist, a, 7, err)) ||
            (rc = gs_clrun_launch(&r.cr, r.k_ghist, kn_ghist, ghgroups, wg, err)))
            goto out;
    } else if (readback) {
        /* reduce-then-scan sums each pass's histogram row from its digit
         * counts (radix_scan_reduce); skipping needs only the OR and AND,
         * which the upsweep of the lowest digit (and the first pass's
         * encoding) gives on the way */
        const cl_uint zero = 0, enc = 1, off = (cl_uint)orand_at;
        gs_karg a[] = { GS_KARG(r.keys[0]), GS_KARG(un), GS_KARG(zero), GS_KARG(enc),
                        GS_KARG(kind), GS_KARG(desc), GS_KARG(r.look[0]), GS_KARG(r.ghist),
                        GS_KARG(off) };
        if ((rc = gs_clrun_args(r.k_uporand, kn_uporand, a, 9, err)) ||
            (rc = gs_clrun_launch(&r.cr, r.k_uporand, kn_uporand, ntiles, wg, err)))
            goto out;
    }
    if (readback) {
        /* onesweep: the histogram rows; reduce-then-scan: the OR and AND */
        const size_t at = lb ? 0 : orand_at, words = lb ? (size_t)npos * radix : NORAND;
        crc = clEnqueueReadBuffer(q, r.ghist, CL_TRUE, at * 4, words * 4, r.hghist + at, 0,
                                  NULL, NULL);
        if (crc != CL_SUCCESS) {
            rc = gs_cl_fail(err, "clEnqueueReadBuffer", crc, "radix: histogram");
            goto out;
        }
    }

    /* passes whose digit is shared by all keys change nothing (known only
     * after the read-back): one digit holds every key, or the OR and the
     * AND of the keys agree on its bits */
    uint64_t kor = 0, kand = UINT64_MAX;
    for (size_t c = 0; c < ORAND_COPIES; c++) {
        const uint32_t *w = r.hghist + orand_at + 4 * c;
        kor |= w[0] | (uint64_t)w[1] << 32;
        kand &= w[2] | (uint64_t)w[3] << 32;
    }
    kand &= ks == 4 ? UINT32_MAX : UINT64_MAX;   /* 32-bit keys: no high word */
    unsigned run_pos[64], nrun = 0;
    for (unsigned pos = 0; pos < npos; pos++) {
        int constant = 0;
        if (readback && !lb)
            constant = (((kor ^ kand) >> (pos * (unsigned)bits)) & (radix - 1)) == 0;
        else if (readback)
            for (size_t d = 0; d < radix && !constant; d++)
                constant = r.hghist[(size_t)pos * radix + d] == (uint32_t)n;
        if (!constant)
            run_pos[nrun++] = pos;
    }
    st->passes = nrun;
    st->passes_skipped = npos - nrun;
    /* reduce-then-scan with the read-back: the first pass takes the lowest
     * digit's counts from the upsweep that gave the OR and AND, unless that
     * digit was constant (then the upsweep stands alone before the passes) */
    const int first_counted = !lb && readback && nrun > 0 && run_pos[0] == 0;
    const size_t lone_up = !lb && readback && !first_counted ? 1 : 0;

    if (lb && nrun > 0) {
        const cl_uint unpos = npos;
        gs_karg a[] = { GS_KARG(r.ghist), GS_KARG(unpos) };
        if ((rc = gs_clrun_args(r.k_gstart, "radix_gstart", a, 2, err)) ||
            (rc = gs_clrun_launch(&r.cr, r.k_gstart, "radix_gstart", npos, wg, err)))
            goto out;
    }
    const int testfb = atomic_load(&fallback_forced);
    const pass_ctx pc = { .r = &r, .kn_up = kn_up, .kn_scatter = kn_scatter, .kn_os = kn_os,
                          .ntiles = ntiles, .nblk = nblk, .wg = wg, .vs = vs, .radix = radix,
                          .un = un, .kind = kind, .desc = desc, .npos = npos,
                          .spin = testfb ? 0 : RADIX_LB_SPIN };
    int cur = 0;
    for (unsigned i = 0; i < nrun; i++) {
        const cl_uint pos = run_pos[i];
        cl_uint flags = 0;
        if (i == 0)
            flags |= 1u | (idx ? 4u : 0u);   /* encode on load; generate indices */
        if (i + 1 == nrun)
            flags |= 2u;                     /* decode on store */
        if (testfb)
            flags |= 8u;                     /* every look-back falls back */
        if (lb)                              /* look-back tag; the first pass clears */
            flags |= ((i >> 1) & 1u ? 16u : 0u) | (i == 0 ? 32u : 0u);   /* look[1] */
        const int skip_up = first_counted && i == 0;
        if ((rc = run_pass(&pc, lb, i, pos, pos * (cl_uint)bits, flags, cur, skip_up, err)))
            goto out;
        cur = 1 - cur;
    }
    /* the sorted NaN block gets its patterns back (nothing moved when no
     * pass ran: the keys are as they came, in the caller's arrays) */
    if (nrun > 0 && (rc = gs_clnan_restore(&r.cr, &r.nan, r.keys[cur], req, err)))
        goto out;
    if (nrun == 0 && idx) {
        /* nothing moved: argsort is the identity */
        gs_karg a[] = { GS_KARG(r.vals[0]), GS_KARG(un) };
        if ((rc = gs_clrun_args(r.k_iota, kn_iota, a, 2, err)) ||
            (rc = gs_clrun_launch(&r.cr, r.k_iota, kn_iota, (n + wg - 1) / wg, wg, err)))
            goto out;
    }
    crc = clFinish(q);
    if (crc != CL_SUCCESS) {
        rc = gs_cl_fail(err, "clFinish", crc, "radix: passes");
        goto out;
    }
    /* a pass found a key past the end: the client rewrote its keys */
    if ((rc = gs_clrun_raced_check(&r.cr, err))) {
        st->output_touched = 1;
        goto out;
    }

    /* Every kernel finished: write the result back. When no pass ran the
     * keys (and stored values) are already in order in the caller's arrays. */
    st->output_touched = 1;
    if ((nrun > 0 && (rc = gs_clrun_output(&r.cr, req->keys, r.keys[cur], n * ks, err))) ||
        (vs && (nrun > 0 || idx) &&
         (rc = gs_clrun_output(&r.cr, req->values, r.vals[cur], n * vs, err))))
        goto out;

    st->nans_on_device = r.nan.count;
    st->upload_ms = r.cr.upload_ms;
    st->download_ms = r.cr.download_ms;
    double by[K_COUNT] = { 0 };
    for (size_t i = 0; i < r.cr.nkev; i++) {
        double ms = gs_clrun_event_ms(r.cr.kev[i]);
        /* after the NaN save: onesweep's histogram (always) and gstart, or
         * the lone upsweep; then the passes */
        const size_t j = i - kev_ghist, lead = lb ? 1 : lone_up;
        int k = i < kev_ghist ? K_NAN : j < lead ? (lb ? K_GHIST : K_UP) : nrun == 0 ? K_IOTA
                : lb ? (j == lead ? K_GSTART : K_ONESWEEP)
                : pass_stage[(j - lead) % LAUNCHES_PER_PASS];
        st->kernel_ms += ms;
        by[k] += ms;
    }
    double fill = gs_clrun_event_ms(r.fill_ev);
    st->kernel_ms += fill;
    char stages[256];
    size_t sl = 0;
    for (int k = 0; k < K_COUNT; k++)
        sl += (size_t)snprintf(stages + sl, sizeof stages - sl, "%s %.3f, ", kstage[k], by[k]);
    GS_DEBUG("radix: n=%zu %s/%s %s lookback=%d%s%s: %u passes (%u skipped), %zu tiles; ms: "
             "%sfill %.3f", n, gs_dtype_name(req->dtype), gs_payload_name(req->payload), opts, lb,
             pairs ? " pairs" : "", readback ? "" : " (no read-back)", st->passes,
             st->passes_skipped, ntiles, stages, fill);
    rc = 0;
out:
    run_release(&r);
    return rc;
}

const gs_algo gs_algo_radix = {
    .name = "radix",
    .summary = "OpenCL LSD radix sort: per-tile digit counts, scan (or onesweep look-back), "
               "stable local-memory scatter",
    .stable = 1,
    .uses_device = 1,
    .keeps_nan = 1,
    .params = radix_params,
    .nparams = P_COUNT,
    .defaults = radix_defaults,
    .check = radix_check,
    .run = radix_run_sort,
};
