/* Shared test harness for every sort algorithm: deterministic input
 * generators per distribution, a reference sort written independently of
 * gs_keys (qsort on (key, original index) with the float total order spelled
 * out in float comparisons), verification of an algorithm's output against
 * it, and the standard matrix runner that emits one TAP line per (dtype,
 * payload, order) group. The expensive part, the reference permutation, is
 * cached across cases and across sc_run_matrix calls (one per parameter set
 * in the device tests); descending and every payload derive from the one
 * ascending permutation in O(n). Not thread-safe (tests are single-threaded). */
#include "config.h"
#include "sortcheck.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_narrow.h"
#include "gs_err.h"
#include "gs_keys.h"
#include "gs_sha256.h"
#include "tap.h"
#include "gs_time.h"

const size_t sc_std_sizes[] = { 0, 1, 2, 3, 31, 32, 33, 255, 1000, 4097, 65537, 1000003 };
const size_t sc_std_nsizes = sizeof sc_std_sizes / sizeof sc_std_sizes[0];
/* Above this, sanitized runs thin the distributions (sc_run_matrix). */
static size_t g_thin_n = 131072;

size_t sc_thin_from(size_t n)
{
    size_t old = g_thin_n;
    g_thin_n = n;
    return old;
}

/* Guard bytes written after each work buffer: an algorithm writing past n
 * elements (e.g. a rounded-up device read-back) is caught. */
#define SC_CANARY_BYTES 32
#define SC_CANARY_BYTE 0xA5
/* Pattern in the IDX* payload buffers before the run, so an algorithm that
 * does not write the indices fails. */
#define SC_IDX_POISON UINT64_C(0xDEADBEEFCAFEF00D)
/* Failing cases described per TAP group before the rest are only counted. */
#define SC_MAX_DIAG 8

/* ---- PRNG: splitmix64 (tiny, good enough, deterministic everywhere) ---- */

static uint64_t sm_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A bijection on 64 bits (the splitmix finaliser): distinct inputs give
 * distinct values, which makes payload mix-ups visible. */
static uint64_t sm_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---- element access by dtype, without gs_keys ---- */

static int dt_is64(gs_dtype t)
{
    return t == GS_DT_U64 || t == GS_DT_I64 || t == GS_DT_F64;
}

static size_t dt_size(gs_dtype t)
{
    return dt_is64(t) ? 8 : 4;
}

static int dt_isfloat(gs_dtype t)
{
    return t == GS_DT_F32 || t == GS_DT_F64;
}

static size_t pl_size(gs_payload p)
{
    switch (p) {
    case GS_PL_U32: case GS_PL_IDX32: return 4;
    case GS_PL_U64: case GS_PL_IDX64: return 8;
    default: return 0;
    }
}

static uint64_t ld(size_t w, const void *a, size_t i)
{
    if (w == 4)
        return ((const uint32_t *)a)[i];
    return ((const uint64_t *)a)[i];
}

static void st(size_t w, void *a, size_t i, uint64_t v)
{
    if (w == 4)
        ((uint32_t *)a)[i] = (uint32_t)v;
    else
        ((uint64_t *)a)[i] = v;
}

static float f32_of(uint64_t bits)
{
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static double f64_of(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static uint64_t bits_of_f32(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static uint64_t bits_of_f64(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* NaN test on raw bits, so signalling NaNs are never loaded into the FPU. */
static int bits_isnan(gs_dtype t, uint64_t b)
{
    if (t == GS_DT_F32)
        return (b & 0x7fffffffu) > 0x7f800000u;
    if (t == GS_DT_F64)
        return (b & UINT64_C(0x7fffffffffffffff)) > UINT64_C(0x7ff0000000000000);
    return 0;
}

/* ---- the reference order, in plain comparisons ---- */

/* -inf < ... < -0.0 < +0.0 < ... < +inf < NaN, all NaNs equal. */
static int fcmp(double a, double b)
{
    int an = isnan(a) != 0, bn = isnan(b) != 0;
    if (an || bn)
        return an - bn;
    if (a < b)
        return -1;
    if (a > b)
        return 1;
    /* equal: only -0.0 vs +0.0 can still differ */
    return (signbit(b) != 0) - (signbit(a) != 0);
}

/* Ascending comparison of two raw keys of dtype t. */
static int key_cmp(gs_dtype t, uint64_t a, uint64_t b)
{
    switch (t) {
    case GS_DT_U32:
    case GS_DT_U64:
        return (a > b) - (a < b);
    case GS_DT_I32: {
        int32_t x = (int32_t)(uint32_t)a, y = (int32_t)(uint32_t)b;
        return (x > y) - (x < y);
    }
    case GS_DT_I64: {
        int64_t x = (int64_t)a, y = (int64_t)b;
        return (x > y) - (x < y);
    }
    case GS_DT_F32:
        if (bits_isnan(t, a) || bits_isnan(t, b))
            return bits_isnan(t, a) - bits_isnan(t, b);
        return fcmp((double)f32_of(a), (double)f32_of(b));
    case GS_DT_F64:
        if (bits_isnan(t, a) || bits_isnan(t, b))
            return bits_isnan(t, a) - bits_isnan(t, b);
        return fcmp(f64_of(a), f64_of(b));
    default:
        return 0;
    }
}

/* qsort element: the key in a comparable form plus its input index, which
 * makes any qsort stable. */
typedef struct ref_el {
    union { uint64_t u; int64_t s; double d; } k;
    uint64_t idx;
} ref_el;

static int idx_cmp(const ref_el *x, const ref_el *y)
{
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int ref_cmp_u(const void *a, const void *b)
{
    const ref_el *x = a, *y = b;
    if (x->k.u != y->k.u)
        return x->k.u < y->k.u ? -1 : 1;
    return idx_cmp(x, y);
}

static int ref_cmp_s(const void *a, const void *b)
{
    const ref_el *x = a, *y = b;
    if (x->k.s != y->k.s)
        return x->k.s < y->k.s ? -1 : 1;
    return idx_cmp(x, y);
}

static int ref_cmp_f(const void *a, const void *b)
{
    const ref_el *x = a, *y = b;
    int c = fcmp(x->k.d, y->k.d);
    return c ? c : idx_cmp(x, y);
}

/* Rewrite groups of equal keys in reverse group order, each group's inner
 * order kept: turns a stable ascending permutation into the stable
 * descending one, and the identity of a non-increasing input into its
 * stable ascending permutation. */
static void reverse_groups(gs_dtype t, const void *keys, const uint32_t *in,
                           uint32_t *out, size_t n)
{
    size_t w = dt_size(t), o = 0, j = n;
    while (j > 0) {
        size_t i = j - 1;
        uint64_t kj = ld(w, keys, in[j - 1]);
        while (i > 0 && key_cmp(t, ld(w, keys, in[i - 1]), kj) == 0)
            i--;
        memcpy(out + o, in + i, (j - i) * sizeof *in);
        o += j - i;
        j = i;
    }
}

/* Stable ascending permutation of keys: perm[i] = input index of the i-th
 * smallest. Already-sorted and non-increasing inputs are recognised in
 * O(n) (checked, not assumed from the distribution). */
static int ref_perm(gs_dtype t, const void *keys, size_t n, uint32_t *perm)
{
    size_t w = dt_size(t);
    int nondec = 1, noninc = 1;
    for (size_t i = 1; i < n && (nondec || noninc); i++) {
        int c = key_cmp(t, ld(w, keys, i - 1), ld(w, keys, i));
        if (c > 0)
            nondec = 0;
        if (c < 0)
            noninc = 0;
    }
    if (nondec || noninc) {
        uint32_t *id = nondec ? perm : malloc((n ? n : 1) * sizeof *id);
        if (!id)
            return -1;
        for (size_t i = 0; i < n; i++)
            id[i] = (uint32_t)i;
        if (!nondec) {
            reverse_groups(t, keys, id, perm, n);
            free(id);
        }
        return 0;
    }
    ref_el *el = malloc(n * sizeof *el);
    if (!el)
        return -1;
    int (*cmp)(const void *, const void *);
    for (size_t i = 0; i < n; i++) {
        uint64_t b = ld(w, keys, i);
        el[i].idx = i;
        switch (t) {
        case GS_DT_I32: el[i].k.s = (int32_t)(uint32_t)b; break;
        case GS_DT_I64: el[i].k.s = (int64_t)b; break;
        case GS_DT_F32:
            /* NaNs (even signalling) become a quiet double NaN; fcmp only
             * asks isnan, so payloads do not matter here. */
            el[i].k.d = bits_isnan(t, b) ? NAN : (double)f32_of(b);
            break;
        case GS_DT_F64: el[i].k.d = bits_isnan(t, b) ? NAN : f64_of(b); break;
        default: el[i].k.u = b; break;
        }
    }
    cmp = (t == GS_DT_I32 || t == GS_DT_I64) ? ref_cmp_s
        : dt_isfloat(t) ? ref_cmp_f : ref_cmp_u;
    qsort(el, n, sizeof *el, cmp);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)el[i].idx;
    free(el);
    return 0;
}

/* ---- reference cache: ascending permutations keyed by (dtype, dist, n,
 * seed), which fix the input; least recently used dropped over budget ---- */

typedef struct ref_entry {
    gs_dtype t;
    int dist;
    size_t n;
    uint64_t seed;
    uint32_t *perm;
    uint64_t used;
    struct ref_entry *next;
} ref_entry;

/* The cache is shared by the threads of a test (several clients building
 * their cases at once): rc_mu is held from rc_get until the permutation's
 * last use, so that no other thread evicts it meanwhile. */
static pthread_mutex_t rc_mu = PTHREAD_MUTEX_INITIALIZER;
static ref_entry *rc_head;
static size_t rc_bytes;
static uint64_t rc_clock;

static size_t rc_budget(void)
{
    static size_t budget;
    if (!budget) {
        const char *e = getenv("SC_REF_CACHE_MB");
        long mb = e ? atol(e) : 256;
        budget = (size_t)(mb > 0 ? mb : 1) << 20;
    }
    return budget;
}

static void rc_evict_for(size_t need)
{
    while (rc_head && rc_bytes + need > rc_budget()) {
        ref_entry **victim = &rc_head;
        for (ref_entry **pp = &rc_head; *pp; pp = &(*pp)->next)
            if ((*pp)->used < (*victim)->used)
                victim = pp;
        ref_entry *v = *victim;
        *victim = v->next;
        rc_bytes -= v->n * sizeof *v->perm;
        free(v->perm);
        free(v);
    }
}

/* Ascending permutation for this input; *owned says whether the caller
 * must free it (not cached). NULL on allocation failure. */
static const uint32_t *rc_get(gs_dtype t, int dist, size_t n, uint64_t seed,
                              const void *keys, int *owned)
{
    *owned = 0;
    for (ref_entry *e = rc_head; e; e = e->next)
        if (e->t == t && e->dist == dist && e->n == n && e->seed == seed) {
            e->used = ++rc_clock;
            return e->perm;
        }
    uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
    if (!perm)
        return NULL;
    if (ref_perm(t, keys, n, perm) < 0) {
        free(perm);
        return NULL;
    }
    size_t bytes = n * sizeof *perm;
    /* a short reference is cheaper to make again than to find in a list
     * that many segments' would make long */
    ref_entry *e = n >= 256 && bytes <= rc_budget() ? malloc(sizeof *e) : NULL;
    if (!e) {
        *owned = 1;
        return perm;
    }
    rc_evict_for(bytes);
    *e = (ref_entry){ .t = t, .dist = dist, .n = n, .seed = seed, .perm = perm,
                      .used = ++rc_clock, .next = rc_head };
    rc_head = e;
    rc_bytes += bytes;
    return perm;
}

/* ---- generators ---- */

const char *sc_dist_name(int dist)
{
    static const char *const names[SC_DIST_COUNT] = {
        "random", "sorted", "reversed", "equal", "few16", "sawtooth", "fspecial", "nanmix"
    };
    return dist >= 0 && dist < SC_DIST_COUNT ? names[dist] : "?";
}

/* A random finite float: half with uniformly random bits (every exponent,
 * denormals included, exercises every digit), half "everyday" values
 * u * 10^k with u in [-1, 1) and k in [-3, 6] (shared top bits). */
static double rand_everyday(uint64_t r)
{
    double u = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0;
    static const double p10[] = { 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6 };
    return u * p10[(r >> 1) % 10];
}

static uint64_t rand_key(gs_dtype t, uint64_t *s)
{
    uint64_t r = sm_next(s);
    switch (t) {
    case GS_DT_U32: case GS_DT_I32:
        return r >> 32;
    case GS_DT_F32:
        if (r & 1) {
            uint32_t b = (uint32_t)(r >> 32);
            if ((b & 0x7f800000u) == 0x7f800000u)
                b &= ~UINT32_C(0x00800000);     /* exponent 0xfe: finite */
            return b;
        }
        return bits_of_f32((float)rand_everyday(sm_next(s)));
    case GS_DT_F64:
        if (r & 1) {
            uint64_t b = sm_next(s);
            if ((b & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000))
                b &= ~UINT64_C(0x0010000000000000);
            return b;
        }
        return bits_of_f64(rand_everyday(sm_next(s)));
    default:
        return r;
    }
}

/* The j-th of m non-decreasing values spanning the dtype's range (negative
 * and positive), every fifth repeating its predecessor so runs of equal keys
 * appear in sorted data too. */
static uint64_t sorted_key(gs_dtype t, size_t j, size_t m)
{
    if (j % 5 == 4)
        j--;
    switch (t) {
    case GS_DT_U32: case GS_DT_I32: {
        uint64_t o = ((uint64_t)j << 32) / m;
        return t == GS_DT_I32 ? o ^ 0x80000000u : o;
    }
    case GS_DT_U64: case GS_DT_I64: {
        uint64_t o = (uint64_t)(((unsigned __int128)j << 64) / m);
        return t == GS_DT_I64 ? o ^ (UINT64_C(1) << 63) : o;
    }
    default: {
        /* x^3 * 1e12: monotone in j (also after rounding), from -1e12
         * through +0.0 to 1e12, magnitudes down to about 1e-6 */
        double x = (2.0 * (double)j - (double)m) / (double)m;
        double v = x * x * x * 1e12;
        return t == GS_DT_F32 ? bits_of_f32((float)v) : bits_of_f64(v);
    }
    }
}

/* Floats with the awkward values mixed in: NaNs of both signs, quiet and
 * signalling, several payloads (the canonical one too), +-0, +-inf,
 * denormals, the extreme normals. */
static uint64_t special_key(gs_dtype t, uint64_t *s)
{
    int f32 = t == GS_DT_F32;
    uint64_t sign = f32 ? UINT64_C(0x80000000) : UINT64_C(1) << 63;
    uint64_t expm = f32 ? UINT64_C(0x7f800000) : UINT64_C(0x7ff0000000000000);
    uint64_t mant = f32 ? UINT64_C(0x007fffff) : UINT64_C(0x000fffffffffffff);
    uint64_t quiet = f32 ? UINT64_C(0x00400000) : UINT64_C(0x0008000000000000);
    uint64_t r = sm_next(s);
    uint64_t sg = (r >> 63) ? sign : 0;
    switch ((r >> 8) % 10) {
    case 0: case 1: {           /* NaN */
        static const uint64_t payloads[] = { 0, 1, 0x123, 0x2a2a };
        int q = (r >> 20) & 1;
        uint64_t pl = (r >> 21) & 4 ? (r >> 24) & (quiet - 1)
                                     : payloads[(r >> 22) & 3];
        if ((r >> 26) % 3 == 0)     /* plenty of canonical ones too */
            return expm | quiet;
        if (!q && !pl)
            pl = 1;                 /* a signalling NaN needs a payload */
        return sg | expm | (q ? quiet : 0) | pl;
    }
    case 2:                     /* +-0.0 */
        return sg;
    case 3:                     /* +-inf */
        return sg | expm;
    case 4: {                   /* denormal, or the smallest/largest normal */
        uint64_t m = (r >> 16) & mant;
        switch ((r >> 12) & 3) {
        case 0: return sg | (f32 ? UINT64_C(0x00800000) : UINT64_C(0x0010000000000000));
        case 1: return sg | (expm - (f32 ? UINT64_C(0x00800000) : UINT64_C(0x0010000000000000))) | mant;
        default: return sg | (m ? m : 1);
        }
    }
    default:
        return rand_key(t, s);
    }
}

/* Distributions of float specials; integer dtypes get random keys. */
static int dist_float_only(int dist)
{
    return dist == SC_FSPECIAL || dist == SC_NANMIX;
}

/* The i-th key of SC_NANMIX: even draws a NaN whose bit pattern no other
 * i gives (the payload is i times an odd number, a bijection below 2^22
 * elements; sign and quiet bit random; a zero payload can only be quiet),
 * odd draws one of eight ordinary values, so equal keys are common too. A
 * sort that puts NaN patterns back without their values shows here. */
static uint64_t nanmix_key(gs_dtype t, size_t i, uint64_t *s)
{
    int f32 = t == GS_DT_F32;
    uint64_t sign = f32 ? UINT64_C(0x80000000) : UINT64_C(1) << 63;
    uint64_t expm = f32 ? UINT64_C(0x7f800000) : UINT64_C(0x7ff0000000000000);
    uint64_t quiet = f32 ? UINT64_C(0x00400000) : UINT64_C(0x0008000000000000);
    uint64_t r = sm_next(s);
    if (r & 1) {
        static const double pool[8] = { 0.0, -0.0, INFINITY, -INFINITY, 1.5, -2.25, 1e-3,
                                        3e5 };
        double v = pool[(r >> 1) & 7];
        return f32 ? bits_of_f32((float)v) : bits_of_f64(v);
    }
    uint64_t pl = ((uint64_t)i * UINT64_C(0x9e3779b97f4a7c15)) & (quiet - 1);
    int q = (r >> 2) & 1;
    if (!pl)
        q = 1;
    return ((r >> 3) & 1 ? sign : 0) | expm | (q ? quiet : 0) | pl;
}

void sc_fill(gs_dtype t, int dist, void *keys, size_t n, uint64_t seed)
{
    size_t w = dt_size(t);
    uint64_t s = seed;
    if (dist_float_only(dist) && !dt_isfloat(t))
        dist = SC_RANDOM;
    switch (dist) {
    case SC_SORTED:
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, sorted_key(t, i, n));
        break;
    case SC_REVERSED:
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, sorted_key(t, n - 1 - i, n));
        break;
    case SC_EQUAL: {
        uint64_t v = rand_key(t, &s);
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, v);
        break;
    }
    case SC_FEW16: {
        /* All 16 appear, but half the keys take the first one: most keys
         * then share each digit without all sharing it, the case where a
         * wrong "skip this pass" shortcut shows. */
        uint64_t pool[16];
        for (int i = 0; i < 16; i++)
            pool[i] = rand_key(t, &s);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = sm_next(&s);
            st(w, keys, i, pool[(r >> 63) ? 0 : (r >> 59) & 15]);
        }
        break;
    }
    case SC_SAWTOOTH: {
        /* about sqrt(n) ascending teeth of 2*sqrt(n) values */
        size_t p = 2;
        while (p * p < 4 * n)
            p++;
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, sorted_key(t, i % p, p));
        break;
    }
    case SC_FSPECIAL:
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, special_key(t, &s));
        break;
    case SC_NANMIX:
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, nanmix_key(t, i, &s));
        break;
    default:
        for (size_t i = 0; i < n; i++)
            st(w, keys, i, rand_key(t, &s));
        break;
    }
}

void sc_fill_values(gs_payload p, void *values, size_t n, uint64_t seed)
{
    size_t w = pl_size(p);
    if (!w || !values)
        return;
    for (size_t i = 0; i < n; i++) {
        if (p == GS_PL_IDX32 || p == GS_PL_IDX64)
            st(w, values, i, SC_IDX_POISON ^ i);
        else if (w == 4)    /* i*odd + c is a bijection mod 2^32: distinct */
            st(w, values, i, (uint32_t)i * UINT32_C(0x9e3779b1) + (uint32_t)seed);
        else
            st(w, values, i, sm_mix(i + seed));
    }
}

/* ---- cases ---- */

static void canary_set(void *buf, size_t off)
{
    memset((unsigned char *)buf + off, SC_CANARY_BYTE, SC_CANARY_BYTES);
}

static int canary_ok(const void *buf, size_t off)
{
    const unsigned char *c = (const unsigned char *)buf + off;
    for (size_t i = 0; i < SC_CANARY_BYTES; i++)
        if (c[i] != SC_CANARY_BYTE)
            return 0;
    return 1;
}

void sc_case_reset(sc_case *c)
{
    size_t n = c->req.n, kw = dt_size(c->req.shape.dtype), vw = pl_size(c->req.shape.payload);
    memcpy(c->req.keys, c->in_keys, n * kw);
    canary_set(c->req.keys, n * kw);
    if (vw) {
        memcpy(c->req.values, c->in_vals, n * vw);
        canary_set(c->req.values, n * vw);
    }
}

/* Fill a case whose buffers are already allocated (capacity >= n, plus the
 * canary room in the work buffers): input, reference, work copy. `scratch`
 * holds n u32 (the descending permutation). */
static int case_setup(sc_case *c, gs_dtype t, gs_payload p, int desc, size_t n,
                      int dist, uint64_t seed, uint32_t *scratch)
{
    size_t kw = dt_size(t), vw = pl_size(p);
    c->req.shape.dtype = t;
    c->req.shape.payload = p;
    c->req.shape.descending = desc;
    c->req.shape.stable = 0;
    c->req.n = n;
    sc_fill(t, dist, c->in_keys, n, seed);
    if (vw)
        sc_fill_values(p, c->in_vals, n, sm_mix(seed ^ 0x76616c756573));
    int owned;
    pthread_mutex_lock(&rc_mu);
    const uint32_t *perm = rc_get(t, dist, n, seed, c->in_keys, &owned);
    if (!perm) {
        pthread_mutex_unlock(&rc_mu);
        return -1;
    }
    const uint32_t *use = perm;
    if (desc) {
        reverse_groups(t, c->in_keys, perm, scratch, n);
        use = scratch;
    }
    for (size_t i = 0; i < n; i++)
        st(kw, c->ref_keys, i, ld(kw, c->in_keys, use[i]));
    for (size_t i = 0; vw && i < n; i++) {
        if (p == GS_PL_IDX32 || p == GS_PL_IDX64)
            st(vw, c->ref_vals, i, use[i]);
        else
            st(vw, c->ref_vals, i, ld(vw, c->in_vals, use[i]));
    }
    if (owned)
        free((void *)perm);
    pthread_mutex_unlock(&rc_mu);
    sc_case_reset(c);
    return 0;
}

int sc_case_init(sc_case *c, gs_dtype t, gs_payload p, int descending, size_t n,
                 int dist, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    if ((int)t < 0 || t >= GS_DT_COUNT || (int)p < 0 || p >= GS_PL_COUNT ||
        n > UINT32_MAX)
        return -1;
    size_t kb = n * dt_size(t), vb = n * pl_size(p);
    uint32_t *scratch = descending ? malloc((n ? n : 1) * sizeof *scratch) : NULL;
    c->in_keys = malloc(kb + 1);
    c->ref_keys = malloc(kb + 1);
    c->req.keys = malloc(kb + SC_CANARY_BYTES);
    /* Values buffers exist whenever the payload kind has values, even for
     * n = 0: the canary sits behind an empty array then. */
    int has_vals = pl_size(p) != 0;
    if (has_vals) {
        c->in_vals = malloc(vb + 1);
        c->ref_vals = malloc(vb + 1);
        c->req.values = malloc(vb + SC_CANARY_BYTES);
    }
    int rc = -1;
    if (c->in_keys && c->ref_keys && c->req.keys && (!descending || scratch) &&
        (!has_vals || (c->in_vals && c->ref_vals && c->req.values)))
        rc = case_setup(c, t, p, descending, n, dist, seed, scratch);
    free(scratch);
    if (rc < 0)
        sc_case_free(c);
    return rc;
}

void sc_case_free(sc_case *c)
{
    free(c->in_keys);
    free(c->ref_keys);
    free(c->req.keys);
    free(c->in_vals);
    free(c->ref_vals);
    free(c->req.values);
    memset(c, 0, sizeof *c);
}

/* ---- verification ---- */

static void fmt_key(gs_dtype t, uint64_t b, char *buf, size_t len)
{
    switch (t) {
    case GS_DT_U32: snprintf(buf, len, "%" PRIu32 " (0x%08" PRIx32 ")", (uint32_t)b, (uint32_t)b); break;
    case GS_DT_I32: snprintf(buf, len, "%" PRId32 " (0x%08" PRIx32 ")", (int32_t)(uint32_t)b, (uint32_t)b); break;
    case GS_DT_U64: snprintf(buf, len, "%" PRIu64 " (0x%016" PRIx64 ")", b, b); break;
    case GS_DT_I64: snprintf(buf, len, "%" PRId64 " (0x%016" PRIx64 ")", (int64_t)b, b); break;
    case GS_DT_F32:
        if (bits_isnan(t, b))
            snprintf(buf, len, "nan (0x%08" PRIx32 ")", (uint32_t)b);
        else
            snprintf(buf, len, "%.9g (0x%08" PRIx32 ")", (double)f32_of(b), (uint32_t)b);
        break;
    default:
        if (bits_isnan(t, b))
            snprintf(buf, len, "nan (0x%016" PRIx64 ")", b);
        else
            snprintf(buf, len, "%.17g (0x%016" PRIx64 ")", f64_of(b), b);
        break;
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

typedef struct pair { uint64_t k, v; } pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* Unstable keys: bit-equal to the reference where not NaN; the NaNs (all in
 * the same places) must hold the same multiset of bit patterns. */
static int verify_keys_unstable(const sc_case *c, char *why, size_t whylen)
{
    gs_dtype t = c->req.shape.dtype;
    size_t n = c->req.n, w = dt_size(t), nn = 0;
    char e[64], g[64];
    for (size_t i = 0; i < n; i++) {
        uint64_t r = ld(w, c->ref_keys, i), o = ld(w, c->req.keys, i);
        if (bits_isnan(t, r) && bits_isnan(t, o)) {
            nn++;
            continue;
        }
        if (r != o) {
            fmt_key(t, r, e, sizeof e);
            fmt_key(t, o, g, sizeof g);
            snprintf(why, whylen, "key[%zu]: expected %s, got %s", i, e, g);
            return 0;
        }
    }
    if (!nn)
        return 1;
    uint64_t *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b);
    int ok = 0;
    if (!a || !b) {
        snprintf(why, whylen, "out of memory comparing NaN bits");
        goto out;
    }
    for (size_t i = 0, j = 0; i < n; i++)
        if (bits_isnan(t, ld(w, c->ref_keys, i))) {
            a[j] = ld(w, c->ref_keys, i);
            b[j++] = ld(w, c->req.keys, i);
        }
    qsort(a, nn, sizeof *a, u64_cmp);
    qsort(b, nn, sizeof *b, u64_cmp);
    ok = 1;
    for (size_t j = 0; j < nn && ok; j++)
        if (a[j] != b[j]) {
            fmt_key(t, a[j], e, sizeof e);
            fmt_key(t, b[j], g, sizeof g);
            snprintf(why, whylen, "NaN bit patterns differ from the input's "
                     "(%zu-th smallest: expected %s, got %s)", j, e, g);
            ok = 0;
        }
out:
    free(a);
    free(b);
    return ok;
}

/* Unstable values: (key bits, value) pairs of output and input are the
 * same multiset. NaN keys compare by their exact bits too: every NaN must
 * keep its own pattern beside its own value (the values are distinct, so
 * this also says each value sits beside its key). */
static int verify_pairs_unstable(const sc_case *c, char *why, size_t whylen)
{
    gs_dtype t = c->req.shape.dtype;
    size_t n = c->req.n, kw = dt_size(t), vw = pl_size(c->req.shape.payload);
    pair *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    int ok = 0;
    if (!a || !b) {
        snprintf(why, whylen, "out of memory comparing pairs");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t ki = ld(kw, c->in_keys, i), ko = ld(kw, c->req.keys, i);
        a[i] = (pair){ ki, ld(vw, c->in_vals, i) };
        b[i] = (pair){ ko, ld(vw, c->req.values, i) };
    }
    qsort(a, n, sizeof *a, pair_cmp);
    qsort(b, n, sizeof *b, pair_cmp);
    ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        if (a[i].k != b[i].k || a[i].v != b[i].v) {
            char e[64];
            fmt_key(t, a[i].k, e, sizeof e);
            snprintf(why, whylen, "(key bits, value) pairs are not a permutation of "
                     "the input's: input pair (%s, 0x%" PRIx64 ") missing or "
                     "changed (output has 0x%" PRIx64 " there in sorted-pair order)",
                     e, a[i].v, b[i].v);
            ok = 0;
        }
out:
    free(a);
    free(b);
    return ok;
}

/* Unstable argsort: a permutation of 0..n-1 that points at input keys
 * bit-equal to the output keys (a NaN index must point at the NaN whose
 * pattern is beside it). */
static int verify_idx_unstable(const sc_case *c, char *why, size_t whylen)
{
    gs_dtype t = c->req.shape.dtype;
    size_t n = c->req.n, kw = dt_size(t), vw = pl_size(c->req.shape.payload);
    unsigned char *seen = calloc(n ? n : 1, 1);
    if (!seen) {
        snprintf(why, whylen, "out of memory checking indices");
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        uint64_t ix = ld(vw, c->req.values, i);
        if (ix >= n || seen[ix]) {
            snprintf(why, whylen, "index[%zu] = %" PRIu64 " is %s", i, ix,
                     ix >= n ? "out of range" : "repeated");
            ok = 0;
            break;
        }
        seen[ix] = 1;
        uint64_t ki = ld(kw, c->in_keys, ix), ko = ld(kw, c->req.keys, i);
        if (ki != ko) {
            char e[64], g[64];
            fmt_key(t, ki, e, sizeof e);
            fmt_key(t, ko, g, sizeof g);
            snprintf(why, whylen, "index[%zu] = %" PRIu64 " points at input key "
                     "%s but the output key there is %s", i, ix, e, g);
            ok = 0;
        }
    }
    free(seen);
    return ok;
}

int sc_case_verify(const sc_case *c, int stable, char *why, size_t whylen)
{
    gs_dtype t = c->req.shape.dtype;
    gs_payload p = c->req.shape.payload;
    size_t n = c->req.n, kw = dt_size(t), vw = pl_size(p);
    char e[64], g[64];
    why[0] = '\0';
    if (!canary_ok(c->req.keys, n * kw) || (vw && !canary_ok(c->req.values, n * vw))) {
        snprintf(why, whylen, "wrote past the end of the %s buffer",
                 canary_ok(c->req.keys, n * kw) ? "values" : "keys");
        return 0;
    }
    if (stable) {
        for (size_t i = 0; i < n; i++) {
            uint64_t r = ld(kw, c->ref_keys, i), o = ld(kw, c->req.keys, i);
            if (r != o) {
                fmt_key(t, r, e, sizeof e);
                fmt_key(t, o, g, sizeof g);
                snprintf(why, whylen, "key[%zu]: expected %s, got %s", i, e, g);
                return 0;
            }
        }
        for (size_t i = 0; vw && i < n; i++) {
            uint64_t r = ld(vw, c->ref_vals, i), o = ld(vw, c->req.values, i);
            if (r != o) {
                snprintf(why, whylen, "%s[%zu]: expected %" PRIu64 " (0x%" PRIx64
                         "), got %" PRIu64 " (0x%" PRIx64 ") (key there %s)",
                         p == GS_PL_IDX32 || p == GS_PL_IDX64 ? "index" : "value",
                         i, r, r, o, o,
                         (fmt_key(t, ld(kw, c->ref_keys, i), e, sizeof e), e));
                return 0;
            }
        }
        return 1;
    }
    if (!verify_keys_unstable(c, why, whylen))
        return 0;
    if (p == GS_PL_U32 || p == GS_PL_U64)
        return verify_pairs_unstable(c, why, whylen);
    if (p == GS_PL_IDX32 || p == GS_PL_IDX64)
        return verify_idx_unstable(c, why, whylen);
    return 1;
}

/* ---- the matrix ---- */

void sc_expect_reject(const gs_algo *a, const gs_dev *dev, const gs_sort_req *req,
                      const gs_params *p, int code, const char *needle, const char *what)
{
    gs_err err;
    gs_err_clear(&err);
    int rc = a->check(dev, req, p, &err);
    tap_ok(rc == code && strstr(err.msg, needle) != NULL, "check rejects %s: %s (%s)", what,
           gs_strerror(rc), err.msg);
}

void sc_set3(const gs_algo *a, gs_params *p, long v0, long v1, long v2)
{
    if (a->nparams < 3)
        tap_bail("sc_set3: %s has %zu parameters, fewer than 3", a->name, a->nparams);
    gs_params_clear(p);
    gs_params_set(p, a->params[0].name, v0);
    gs_params_set(p, a->params[1].name, v1);
    gs_params_set(p, a->params[2].name, v2);
}

gs_dev sc_gpu_like(const gs_dev *dev)
{
    gs_dev gpu = *dev;
    gpu.info.type = CL_DEVICE_TYPE_GPU;
    gpu.info.max_wg_size = 1024;
    gpu.info.local_mem = 48 * 1024;
    gpu.info.local_mem_dedicated = 1;
    gpu.info.compute_units = 132;
    gpu.info.global_mem = UINT64_C(80) << 30;
    gpu.info.max_alloc = UINT64_C(20) << 30;
    return gpu;
}

/* a one-key sort with the widest request shape: does the set run here? */
static int fit_probe(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *q, gs_err *err)
{
    uint64_t one[1] = { 1 }, two[1] = { 2 };
    gs_sort_req probe = {
        .shape = { .dtype = GS_DT_U64, .payload = GS_PL_U64 }, .n = 1, .keys = one, .values = two
    };
    gs_err_clear(err);
    return gs_sort_run(a, ctx, &probe, q, NULL, err);
}

void sc_fit_set(const gs_algo *a, gs_sort_ctx *ctx, gs_params *q)
{
    gs_err err;
    long wg = gs_params_get(q, "wg_size", 0), ept0 = gs_params_get(q, "elems_per_thread", 0);
    long ept = ept0;
    if (wg < 1 || ept < 1)
        tap_bail("sc_fit_set: the set has no wg_size or elems_per_thread");
    gs_err_clear(&err);
    while (ept > 1 && a->check(ctx->dev, NULL, q, &err) != 0)
        gs_params_set(q, "elems_per_thread", ept /= 2);
    while (wg > 16 && fit_probe(a, ctx, q, &err) == GS_EUNSUPPORTED) {
        tap_diag("%s: halving wg_size", err.msg);
        gs_params_set(q, "wg_size", wg /= 2);
    }
    /* with fewer work-items, a longer tile may fit again */
    for (long te = ept0; te > ept; te /= 2) {
        gs_params_set(q, "elems_per_thread", te);
        if (a->check(ctx->dev, NULL, q, &err) == 0 && fit_probe(a, ctx, q, &err) == 0)
            return;
    }
    gs_params_set(q, "elems_per_thread", ept);
}

void sc_file_sha256(const char *path, uint8_t *out)
{
    memset(out, 0, GS_SHA256_LEN);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    gs_sha256_ctx c;
    gs_sha256_init(&c);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        gs_sha256_update(&c, buf, n);
    fclose(f);
    gs_sha256_final(&c, out);
}

int sc_run_sets(const gs_algo *a, gs_sort_ctx *ctx, const sc_set *sets, size_t nsets,
                long cap_wg, int fit, const char *label, const char *diag)
{
    int fails = 0;
    for (size_t i = 0; i < nsets; i++) {
        gs_params q;
        sc_set3(a, &q, sets[i].v[0], sets[i].v[1], sets[i].v[2]);
        if (a->nparams > 3)
            gs_params_set(&q, a->params[3].name, sets[i].v[3]);
        if (cap_wg > 0 && gs_params_get(&q, "wg_size", 0) > cap_wg)
            gs_params_set(&q, "wg_size", cap_wg);
        if (fit) {
            /* too big for this device (never on PoCL): a smaller tile or group */
            sc_fit_set(a, ctx, &q);
            gs_err err;
            gs_err_clear(&err);
            if (a->check(ctx->dev, NULL, &q, &err) != 0)
                tap_bail("set %zu does not fit this device: %s", i, err.msg);
        }
        double t1 = gs_now_s();
        size_t thin = sc_thin_from(0);
        fails += sc_run_matrix(a, ctx, &q, sets[i].sizes, sets[i].nsizes, label);
        sc_thin_from(thin);
        tap_diag("%s %zu: %.1f s", diag, i, gs_now_s() - t1);
    }
    return fails;
}

gs_dev *sc_test_device(gs_dev **devs, size_t *ndev, const char *who)
{
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(devs, ndev, &err) < 0)
        tap_bail("probing devices: %s", err.msg);
    if (*ndev == 0)
        tap_bail("no OpenCL device: the %s tests need one (PoCL in CI)", who);
    size_t di = 0;
    const char *e = getenv("GSORT_TEST_DEVICE");
    if (e && !strcmp(e, "gpu")) {
        di = *ndev;
        for (size_t i = *ndev; i-- > 0;)
            if ((*devs)[i].info.type & CL_DEVICE_TYPE_GPU)
                di = i;
    } else if (e) {
        di = (size_t)strtoul(e, NULL, 10);
    }
    if (di >= *ndev)
        tap_bail("GSORT_TEST_DEVICE=%s but only %zu devices", e, *ndev);
    gs_dev *dev = &(*devs)[di];
    if (gs_dev_open(dev, &err) < 0)
        tap_bail("opening %s: %s", dev->info.name, err.msg);
    tap_diag("device %zu: %s (%s), %u CUs, max wg %zu, local %llu bytes", di, dev->info.name,
             dev->info.platform, dev->info.compute_units, dev->info.max_wg_size,
             (unsigned long long)dev->info.local_mem);
    return dev;
}

/* Seed of a case: depends on dtype, distribution and n only, so the input
 * (and the cached reference) is shared by every order and payload. */
static uint64_t case_seed(uint64_t base, gs_dtype t, int dist, size_t n)
{
    return sm_mix(base ^ ((uint64_t)t << 56) ^ ((uint64_t)dist << 48) ^ (uint64_t)n);
}

int sc_run_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p,
                  const size_t *sizes, size_t nsizes, const char *label)
{
    if (!sizes) {
        sizes = sc_std_sizes;
        nsizes = sc_std_nsizes;
    }
    if (!label)
        label = a->name;
    uint64_t base = UINT64_C(0x5eed5eed12345678);
    const char *es = getenv("SC_SEED");
    if (es)
        base = strtoull(es, NULL, 0);

    char pstr[256] = "";
    if (p && p->count)
        gs_params_format(p, pstr, sizeof pstr);
    if (!pstr[0])
        snprintf(pstr, sizeof pstr, "(no params)");

    /* Under the sanitizers (tools/run-sanitizers sets GSORT_TEST_SANITIZED)
     * a size above g_thin_n runs one distribution per group, a different
     * one in each group, so every distribution still meets every such size
     * somewhere: these cases were most of a kernel test's time there (the
     * large sizes, and the extreme parameter sets at every size), and the
     * plain run keeps them all. */
    const int thin = getenv("GSORT_TEST_SANITIZED") != NULL;
    int group = 0;

    size_t maxn = 0;
    for (size_t i = 0; i < nsizes; i++)
        if (sizes[i] > maxn)
            maxn = sizes[i];
    if (maxn > UINT32_MAX) {
        tap_ok(0, "%s %s: n %zu too large for the reference", label, pstr, maxn);
        return 1;
    }
    /* One set of buffers for every case (8-byte elements cover all). */
    size_t cap = (maxn ? maxn : 1) * 8;
    sc_case c;
    memset(&c, 0, sizeof c);
    c.in_keys = malloc(cap);
    c.ref_keys = malloc(cap);
    c.req.keys = malloc(cap + SC_CANARY_BYTES);
    c.in_vals = malloc(cap);
    c.ref_vals = malloc(cap);
    c.req.values = malloc(cap + SC_CANARY_BYTES);
    uint32_t *scratch = malloc((maxn ? maxn : 1) * sizeof *scratch);
    if (!c.in_keys || !c.ref_keys || !c.req.keys || !c.in_vals || !c.ref_vals ||
        !c.req.values || !scratch) {
        tap_ok(0, "%s %s: allocating matrix buffers for n=%zu", label, pstr, maxn);
        free(scratch);
        sc_case_free(&c);
        return 1;
    }
    void *vals_buf = c.req.values;

    int failed_total = 0, cases_total = 0;
    double t0 = gs_now_s(), algo_s = 0;
    for (int t = 0; t < GS_DT_COUNT; t++) {
        for (int desc = 0; desc <= 1; desc++) {
            for (int pl = 0; pl < GS_PL_COUNT; pl++) {
                int cases = 0, failed = 0;
                /* the one distribution a thinned size runs in this group
                 * (random where that one is for floats and t is not) */
                int keep = group % SC_DIST_COUNT;
                if (dist_float_only(keep) && !dt_isfloat((gs_dtype)t))
                    keep = SC_RANDOM;
                for (size_t si = 0; si < nsizes; si++) {
                    for (int dist = 0; dist < SC_DIST_COUNT; dist++) {
                        size_t n = sizes[si];
                        if (dist_float_only(dist) && !dt_isfloat((gs_dtype)t))
                            continue;
                        if (thin && n > g_thin_n && dist != keep)
                            continue;
                        uint64_t seed = case_seed(base, (gs_dtype)t, dist, n);
                        char why[512] = "";
                        int ok = 0;
                        cases++;
                        c.req.values = vals_buf;
                        if (case_setup(&c, (gs_dtype)t, (gs_payload)pl, desc, n,
                                       dist, seed, scratch) < 0) {
                            snprintf(why, sizeof why, "out of memory building the reference");
                        } else {
                            gs_sort_req req = c.req;
                            gs_sort_stats sst;
                            gs_err err;
                            gs_err_clear(&err);
                            memset(&sst, 0, sizeof sst);
                            req.shape.stable = a->stable;
                            if (pl == GS_PL_NONE)
                                req.values = NULL;
                            double ta = gs_now_s();
                            int rc = gs_sort_run(a, ctx, &req, p, &sst, &err);
                            algo_s += gs_now_s() - ta;
                            if (rc < 0)
                                snprintf(why, sizeof why, "gs_sort_run failed: %s: %.400s",
                                         gs_strerror(rc), err.msg);
                            else
                                ok = sc_case_verify(&c, a->stable, why, sizeof why);
                        }
                        if (!ok) {
                            if (failed < SC_MAX_DIAG)
                                tap_diag("  n=%zu dist=%s seed=0x%016" PRIx64 ": %s",
                                         n, sc_dist_name(dist), seed, why);
                            failed++;
                        }
                    }
                }
                if (failed > SC_MAX_DIAG)
                    tap_diag("  ... %d more failing cases in this group",
                             failed - SC_MAX_DIAG);
                tap_ok(failed == 0, "%s %s %s %s %s: %d cases%s", label, pstr,
                       gs_dtype_name((gs_dtype)t), desc ? "desc" : "asc",
                       gs_payload_name((gs_payload)pl), cases,
                       failed ? " (some failed)" : "");
                failed_total += failed;
                cases_total += cases;
                group++;
            }
        }
    }
    c.req.values = vals_buf;
    tap_diag("%s %s: %d cases, %d failed, %.2f s (%.2f s in the algorithm)",
             label, pstr, cases_total, failed_total, gs_now_s() - t0, algo_s);
    free(scratch);
    sc_case_free(&c);
    return failed_total;
}

/* ---- NaN payloads kept on the device (lib/sort/gs_clnan.c) ---- */

/* Only canonical NaNs (every 7th key) among finite floats: bit-equal, so
 * the device need keep nothing. Checked without the reference: finite keys
 * ascending, then the NaNs, the same number, every one canonical, and the
 * same sum of bit patterns as the input. */
static int canonical_nans(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, size_t n)
{
    uint32_t *k = malloc(n * sizeof *k);
    if (!k)
        tap_bail("out of memory");
    uint64_t s = 77, sum = 0;
    size_t nans = 0;
    for (size_t i = 0; i < n; i++) {
        float f = (float)((double)(sm_next(&s) >> 11) * 0x1.0p-53 * 2000.0 - 1000.0);
        memcpy(&k[i], &f, 4);
        if (i % 7 == 0) {
            k[i] = GS_F32_CANON_NAN;
            nans++;
        }
        sum += k[i];
    }
    gs_sort_req req = { .shape = { .dtype = GS_DT_F32, .payload = GS_PL_NONE }, .n = n, .keys = k };
    gs_sort_stats st;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_sort_run(a, ctx, &req, p, &st, &err);
    int ok = rc == 0 && st.nans_on_device == 0;
    uint64_t osum = 0;
    for (size_t i = 0; ok && i < n; i++) {
        osum += k[i];
        if (i >= n - nans)
            ok = k[i] == GS_F32_CANON_NAN;
        else if (i > 0) {
            float x, y;
            memcpy(&x, &k[i - 1], 4);
            memcpy(&y, &k[i], 4);
            ok = x <= y;
        }
    }
    ok = ok && osum == sum;
    tap_ok(ok, "%s: f32 n=%zu with canonical NaNs only: sorted, NaNs last and canonical, "
           "none kept (%zu) %s", a->name, n, st.nans_on_device, rc ? err.msg : "");
    free(k);
    return !ok;
}

int sc_check_nan_device(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p)
{
    /* distinct NaN patterns from GS_NAN_DEVICE_MIN keys on: the device
     * keeps them; below it the host does */
    static const struct {
        gs_dtype t;
        gs_payload pl;
        int desc, dist;
        size_t n;
        int device;     /* whether the device must have kept NaNs */
    } cs[] = {
        { GS_DT_F32, GS_PL_NONE, 0, SC_NANMIX, GS_NAN_DEVICE_MIN + 17, 1 },
        { GS_DT_F32, GS_PL_IDX32, 1, SC_NANMIX, GS_NAN_DEVICE_MIN + 4099, 1 },
        { GS_DT_F64, GS_PL_U64, 0, SC_NANMIX, GS_NAN_DEVICE_MIN, 1 },
        { GS_DT_F64, GS_PL_U32, 1, SC_FSPECIAL, GS_NAN_DEVICE_MIN + 1, 1 },
        { GS_DT_F32, GS_PL_U32, 0, SC_NANMIX, GS_NAN_DEVICE_MIN - 1, 0 },
    };
    int fails = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        sc_case c;
        if (sc_case_init(&c, cs[i].t, cs[i].pl, cs[i].desc, cs[i].n, cs[i].dist, 1000 + i))
            tap_bail("out of memory");
        gs_sort_stats st;
        gs_err err;
        gs_err_clear(&err);
        char why[256] = "";
        int rc = gs_sort_run(a, ctx, &c.req, p, &st, &err);
        int ok = rc == 0 && sc_case_verify(&c, a->stable, why, sizeof why) &&
                 (cs[i].device ? st.nans_on_device > 0 : st.nans_on_device == 0);
        fails += !ok;
        tap_ok(ok, "%s: %s/%s %s n=%zu %s: NaN patterns %s (%zu kept on the device) %s",
               a->name, gs_dtype_name(cs[i].t), gs_payload_name(cs[i].pl),
               cs[i].desc ? "desc" : "asc", cs[i].n, sc_dist_name(cs[i].dist),
               cs[i].device ? "kept by the device" : "left to the host", st.nans_on_device,
               rc ? err.msg : why);
        sc_case_free(&c);
    }
    return fails + canonical_nans(a, ctx, p, GS_NAN_DEVICE_MIN + 3);
}

/* ---- requests of equal rows (issue 38) ---- */

/* sc_rows_init, sc_rows_verify (sortcheck.h) */
sc_case *sc_rows_init(gs_dtype t, gs_payload pl, int desc, size_t rows, size_t len, int dist,
                      uint64_t seed, void *keys, void *vals)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl);
    sc_case *c = calloc(rows ? rows : 1, sizeof *c);
    if (!c)
        tap_bail("out of memory");
    for (size_t r = 0; r < rows; r++) {
        if (sc_case_init(&c[r], t, pl, desc, len, dist, seed + r * 7919 + len) < 0)
            tap_bail("sc_case_init failed");
        memcpy((char *)keys + r * len * ks, c[r].req.keys, len * ks);
        if (vs)
            memcpy((char *)vals + r * len * vs, c[r].req.values, len * vs);
    }
    return c;
}

int sc_rows_verify(sc_case *c, size_t rows, size_t len, int stable, const void *keys,
                   const void *vals, int ok, char *why, size_t wl)
{
    for (size_t r = 0; r < rows; r++) {
        size_t ks = gs_dtype_size(c[r].req.shape.dtype);
        size_t vs = gs_payload_size(c[r].req.shape.payload);
        if (ok) {
            memcpy(c[r].req.keys, (const char *)keys + r * len * ks, len * ks);
            if (vs)
                memcpy(c[r].req.values, (const char *)vals + r * len * vs, len * vs);
            char w[256];
            if (!sc_case_verify(&c[r], stable, w, sizeof w)) {
                snprintf(why, wl, "row %zu of %zu: %.300s", r, rows, w);
                ok = 0;
            }
        }
        sc_case_free(&c[r]);
    }
    free(c);
    return ok;
}

/* sc_rows_check (sortcheck.h) */
int sc_rows_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, size_t rows, size_t len, int dist, char *why,
                  size_t wl)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = rows * len;
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1);
    if (!keys || !vals)
        tap_bail("out of memory");
    sc_case *c = sc_rows_init(t, pl, desc, rows, len, dist, 0x5eed, keys, vals);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc,
                                   .stable = a->stable, .rows = rows },
                        .n = n, .keys = keys, .values = vs ? vals : NULL };
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_sort_run(a, ctx, &req, p, NULL, &err) == 0;
    if (!ok)
        snprintf(why, wl, "sort failed: %.300s", err.msg);
    ok = sc_rows_verify(c, rows, len, a->stable, keys, vals, ok, why, wl);
    free(keys);
    free(vals);
    return ok;
}

/* sc_rows_matrix and sc_segs_matrix: equal rows (off NULL) or segments. */
static int parts_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, size_t rows,
                        size_t len, const uint64_t *off, size_t S, int keys_only,
                        const char *who)
{
    static const gs_payload pls[] = { GS_PL_NONE, GS_PL_U32, GS_PL_U64, GS_PL_IDX32,
                                      GS_PL_IDX64 };
    int fails = 0;
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (size_t pi = 0; pi < sizeof pls / sizeof pls[0]; pi++) {
            if (keys_only && pls[pi] != GS_PL_NONE)
                continue;
            int bad = 0;
            char why[512] = "", what[64];
            for (int desc = 0; desc < 2 && !bad; desc++)
                for (int dist = 0; dist < SC_DIST_COUNT && !bad; dist++)
                    bad = off ? !sc_segs_check(a, ctx, p, (gs_dtype)t, pls[pi], desc, off, S,
                                               dist, why, sizeof why)
                              : !sc_rows_check(a, ctx, p, (gs_dtype)t, pls[pi], desc, rows,
                                               len, dist, why, sizeof why);
            if (off)
                snprintf(what, sizeof what, "%zu segments of %llu", S,
                         (unsigned long long)off[S]);
            else
                snprintf(what, sizeof what, "%zu rows of %zu", rows, len);
            tap_ok(!bad, "%s: %s %s keys, payload %s, both orders, every distribution%s%s",
                   who, what, gs_dtype_name((gs_dtype)t), gs_payload_name(pls[pi]),
                   bad ? ": " : "", why);
            fails += bad;
        }
    return fails;
}

/* sc_rows_matrix (sortcheck.h) */
int sc_rows_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, size_t rows,
                   size_t len, int keys_only, const char *who)
{
    return parts_matrix(a, ctx, p, rows, len, NULL, 0, keys_only, who);
}

/* sc_segs_matrix (sortcheck.h) */
int sc_segs_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p,
                   const uint64_t *offsets, size_t S, int keys_only, const char *who)
{
    return parts_matrix(a, ctx, p, 0, 0, offsets, S, keys_only, who);
}

/* sc_segs_init, sc_segs_verify (sortcheck.h) */
uint64_t *sc_random_offsets(size_t S, unsigned maxlen, uint64_t seed)
{
    uint64_t *o = malloc((S + 1) * sizeof *o);
    if (!o)
        return NULL;
    o[0] = 0;
    for (size_t s = 0; s < S; s++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        o[s + 1] = o[s] + seed % (maxlen + 1);
    }
    return o;
}

sc_case *sc_segs_init(gs_dtype t, gs_payload pl, int desc, const uint64_t *offsets, size_t S,
                      int dist, uint64_t seed, void *keys, void *vals)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl);
    sc_case *c = calloc(S ? S : 1, sizeof *c);
    if (!c)
        tap_bail("out of memory");
    for (size_t s = 0; s < S; s++) {
        size_t lo = (size_t)offsets[s], len = (size_t)(offsets[s + 1] - offsets[s]);
        if (sc_case_init(&c[s], t, pl, desc, len, dist, seed + s * 7919 + len) < 0)
            tap_bail("sc_case_init failed");
        memcpy((char *)keys + lo * ks, c[s].req.keys, len * ks);
        if (vs)
            memcpy((char *)vals + lo * vs, c[s].req.values, len * vs);
    }
    return c;
}

int sc_segs_verify(sc_case *c, const uint64_t *offsets, size_t S, int stable, const void *keys,
                   const void *vals, int ok, char *why, size_t wl)
{
    for (size_t s = 0; s < S; s++) {
        size_t ks = gs_dtype_size(c[s].req.shape.dtype);
        size_t vs = gs_payload_size(c[s].req.shape.payload);
        size_t lo = (size_t)offsets[s], len = (size_t)(offsets[s + 1] - offsets[s]);
        if (ok) {
            memcpy(c[s].req.keys, (const char *)keys + lo * ks, len * ks);
            if (vs)
                memcpy(c[s].req.values, (const char *)vals + lo * vs, len * vs);
            char w[256];
            if (!sc_case_verify(&c[s], stable, w, sizeof w)) {
                snprintf(why, wl, "segment %zu of %zu ([%zu, %zu)): %.300s", s, S, lo,
                         lo + len, w);
                ok = 0;
            }
        }
        sc_case_free(&c[s]);
    }
    free(c);
    return ok;
}

/* sc_segs_check (sortcheck.h) */
int sc_segs_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, const uint64_t *offsets, size_t S, int dist,
                  char *why, size_t wl)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = (size_t)offsets[S];
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1);
    if (!keys || !vals)
        tap_bail("out of memory");
    sc_case *c = sc_segs_init(t, pl, desc, offsets, S, dist, 0x5e65, keys, vals);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc,
                                   .stable = a->stable, .segments = S },
                        .n = n, .keys = keys, .values = vs ? vals : NULL, .offsets = offsets };
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_sort_run(a, ctx, &req, p, NULL, &err) == 0;
    if (!ok)
        snprintf(why, wl, "sort failed: %.300s", err.msg);
    ok = sc_segs_verify(c, offsets, S, a->stable, keys, vals, ok, why, wl);
    free(keys);
    free(vals);
    return ok;
}


/* ---- top-k (issue 38) ---- */

typedef struct sc_kv {
    uint64_t key, val;
} sc_kv;

static int kv_cmp(const void *a, const void *b)
{
    const sc_kv *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->val < y->val ? -1 : x->val > y->val;
}

/* The first k of a row as (key bits, value) pairs, in a canonical order. */
static void kv_of(const void *keys, const void *vals, size_t k, size_t ks, size_t vs, sc_kv *out)
{
    for (size_t i = 0; i < k; i++) {
        out[i].key = gs_key_get(keys, i, ks);
        out[i].val = vs ? gs_key_get(vals, i, vs) : 0;
    }
    qsort(out, k, sizeof *out, kv_cmp);
}

/* sc_topk_check (sortcheck.h) */
int sc_topk_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, size_t rows, size_t len, size_t k, int sorted,
                  int dist, char *why, size_t wl)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(pl), n = rows * len;
    char *keys = malloc(n * ks + 1), *vals = malloc(n * vs + 1);
    sc_kv *x = malloc((k + 1) * sizeof *x), *y = malloc((k + 1) * sizeof *y);
    if (!keys || !vals || !x || !y)
        tap_bail("out of memory");
    sc_case *c = sc_rows_init(t, pl, desc, rows, len, dist, 0x70bc + k, keys, vals);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc,
                                   .stable = a->stable, .rows = rows, .topk = 1, .k = k,
                                   .unsorted = !sorted },
                        .n = n, .keys = keys, .values = vs ? vals : NULL };
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_sort_run(a, ctx, &req, p, NULL, &err) == 0;
    if (!ok)
        snprintf(why, wl, "top-k failed: %.300s", err.msg);
    for (size_t r = 0; r < rows; r++) {
        const char *ok_keys = keys + r * len * ks, *ok_vals = vals + r * len * vs;
        if (ok && sorted && a->stable) {
            /* exactly the stable sort's first k: keys bit for bit, values, indices */
            for (size_t i = 0; i < k && ok; i++)
                if (gs_key_get(ok_keys, i, ks) != gs_key_get(c[r].ref_keys, i, ks) ||
                    (vs && gs_key_get(ok_vals, i, vs) != gs_key_get(c[r].ref_vals, i, vs))) {
                    snprintf(why, wl, "row %zu of %zu, place %zu of k=%zu: key %#llx value "
                             "%llu, the stable sort has %#llx, %llu", r, rows, i, k,
                             (unsigned long long)gs_key_get(ok_keys, i, ks),
                             (unsigned long long)(vs ? gs_key_get(ok_vals, i, vs) : 0),
                             (unsigned long long)gs_key_get(c[r].ref_keys, i, ks),
                             (unsigned long long)(vs ? gs_key_get(c[r].ref_vals, i, vs) : 0));
                    ok = 0;
                }
        } else if (ok) {
            /* the same (key bits, value) pairs as the stable sort's first k */
            /* (an unstable algorithm may take any of the keys tied at the k-th) */
            size_t cvs = a->stable ? vs : 0;
            kv_of(ok_keys, ok_vals, k, ks, cvs, x);
            kv_of(c[r].ref_keys, c[r].ref_vals, k, ks, cvs, y);
            if (memcmp(x, y, k * sizeof *x)) {
                snprintf(why, wl, "row %zu of %zu: the %zu pairs differ from the stable "
                         "sort's first %zu", r, rows, k, k);
                ok = 0;
            }
        }
        sc_case_free(&c[r]);
    }
    free(c);
    free(keys);
    free(vals);
    free(x);
    free(y);
    return ok;
}

double sc_half(uint32_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

int sc_narrow_counting(int t, int desc, unsigned mask, const uint16_t *in, size_t n,
                       uint16_t *want, size_t *from)
{
    size_t *at = calloc(65537, sizeof *at);
    if (!at)
        return -1;
    for (size_t i = 0; i < n; i++)
        at[(gs_narrow_enc(t, desc, in[i]) & mask) + 1]++;
    for (size_t c = 1; c <= 65536; c++)
        at[c] += at[c - 1];
    for (size_t i = 0; i < n; i++) {
        const uint32_t c = gs_narrow_enc(t, desc, in[i]);
        const size_t j = at[c & mask]++;
        want[j] = mask == 0xffffu ? (uint16_t)gs_narrow_dec(t, desc, c) : in[i];
        from[j] = i;
    }
    free(at);
    return 0;
}
