/* Tests of the order-preserving key encoding (gs_keys.h) against an order
 * written here in plain integer and float comparisons: round trips on edge
 * values for every dtype and order, order preservation over all pairs of
 * edge and random values, NaN handling (one encoding, last ascending, first
 * descending, canonical on decode), the array versions agreeing with the
 * scalar ones at block/tail sizes, the NaN save/restore of bit patterns
 * with their payload (values or indices) after an unstable order, and the
 * key kind each dtype passes to kernels/keys.cl. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_keys.h"
#include "tap.h"

#define NRAND 300

static uint64_t rng = UINT64_C(0x243f6a8885a308d3);

static uint64_t next64(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int is64(gs_dtype t)
{
    return t == GS_DT_U64 || t == GS_DT_I64 || t == GS_DT_F64;
}

static int bnan(gs_dtype t, uint64_t b)
{
    if (t == GS_DT_F32)
        return (b & 0x7fffffffu) > 0x7f800000u;
    if (t == GS_DT_F64)
        return (b & UINT64_C(0x7fffffffffffffff)) > UINT64_C(0x7ff0000000000000);
    return 0;
}

static double as_double(gs_dtype t, uint64_t b)
{
    if (t == GS_DT_F32) {
        uint32_t u = (uint32_t)b;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* The documented total order, spelled out: -1, 0, 1. */
static int ref_cmp(gs_dtype t, uint64_t a, uint64_t b)
{
    switch (t) {
    case GS_DT_U32: case GS_DT_U64:
        return (a > b) - (a < b);
    case GS_DT_I32: {
        int32_t x = (int32_t)(uint32_t)a, y = (int32_t)(uint32_t)b;
        return (x > y) - (x < y);
    }
    case GS_DT_I64: {
        int64_t x = (int64_t)a, y = (int64_t)b;
        return (x > y) - (x < y);
    }
    default: {
        int an = bnan(t, a), bn = bnan(t, b);
        if (an || bn)
            return an - bn;
        double x = as_double(t, a), y = as_double(t, b);
        if (x != y)
            return x < y ? -1 : 1;
        return (signbit(y) != 0) - (signbit(x) != 0);
    }
    }
}

static uint64_t enc(gs_dtype t, int desc, uint64_t b)
{
    return is64(t) ? gs_key64_encode(t, desc, b) : gs_key32_encode(t, desc, (uint32_t)b);
}

static uint64_t dec(gs_dtype t, int desc, uint64_t e)
{
    return is64(t) ? gs_key64_decode(t, desc, e) : gs_key32_decode(t, desc, (uint32_t)e);
}

/* Edge values of a dtype plus NRAND random ones (for floats: random bits,
 * so NaNs, infinities and denormals turn up too, and every sixth value a
 * NaN with a random payload). Returns the count. */
static size_t values_of(gs_dtype t, uint64_t *v)
{
    static const uint64_t e32[] = {
        0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7ffffffe, 0x7fffffff, 0x80000000,
        0x80000001, 0xfffffffe, 0xffffffff,
    };
    static const uint64_t e64[] = {
        0, 1, 2, 0xffffffff, UINT64_C(0x100000000), UINT64_C(0x7ffffffffffffffe),
        UINT64_C(0x7fffffffffffffff), UINT64_C(0x8000000000000000),
        UINT64_C(0x8000000000000001), UINT64_C(0xfffffffffffffffe), UINT64_MAX,
    };
    static const uint64_t f32[] = {
        0x00000000, 0x80000000,             /* +-0 */
        0x7f800000, 0xff800000,             /* +-inf */
        0x00000001, 0x80000001,             /* smallest denormals */
        0x007fffff, 0x807fffff,             /* largest denormals */
        0x00800000, 0x80800000,             /* smallest normals */
        0x7f7fffff, 0xff7fffff,             /* largest finite */
        0x3f800000, 0xbf800000,             /* +-1 */
        0x7fc00000, 0xffc00000,             /* quiet NaN, both signs */
        0x7f800001, 0xff800001,             /* signalling NaN */
        0x7fffffff, 0xffffffff, 0x7fc00123, 0xffa00000, 0x7fa5a5a5,
    };
    static const uint64_t f64[] = {
        0, UINT64_C(0x8000000000000000),
        UINT64_C(0x7ff0000000000000), UINT64_C(0xfff0000000000000),
        1, UINT64_C(0x8000000000000001),
        UINT64_C(0x000fffffffffffff), UINT64_C(0x800fffffffffffff),
        UINT64_C(0x0010000000000000), UINT64_C(0x8010000000000000),
        UINT64_C(0x7fefffffffffffff), UINT64_C(0xffefffffffffffff),
        UINT64_C(0x3ff0000000000000), UINT64_C(0xbff0000000000000),
        UINT64_C(0x7ff8000000000000), UINT64_C(0xfff8000000000000),
        UINT64_C(0x7ff0000000000001), UINT64_C(0xfff0000000000001),
        UINT64_C(0x7fffffffffffffff), UINT64_MAX, UINT64_C(0x7ff8000000000123),
        UINT64_C(0xfff4000000000000),
    };
    const uint64_t *e;
    size_t ne;
    switch (t) {
    case GS_DT_F32: e = f32; ne = sizeof f32 / sizeof *f32; break;
    case GS_DT_F64: e = f64; ne = sizeof f64 / sizeof *f64; break;
    default:
        if (is64(t)) { e = e64; ne = sizeof e64 / sizeof *e64; }
        else { e = e32; ne = sizeof e32 / sizeof *e32; }
        break;
    }
    memcpy(v, e, ne * sizeof *v);
    for (size_t i = 0; i < NRAND; i++) {
        uint64_t r = next64();
        if (!is64(t))
            r >>= 32;
        if ((t == GS_DT_F32 || t == GS_DT_F64) && i % 6 == 0)
            r |= t == GS_DT_F32 ? 0x7f800001u : UINT64_C(0x7ff0000000000001);
        v[ne + i] = r;
    }
    return ne + NRAND;
}

static void test_scalar(gs_dtype t)
{
    uint64_t v[64 + NRAND];
    size_t nv = values_of(t, v);
    const char *name = gs_dtype_name(t);
    uint64_t canon = t == GS_DT_F32 ? GS_F32_CANON_NAN : GS_F64_CANON_NAN;
    uint64_t top = is64(t) ? UINT64_MAX : UINT32_MAX;

    for (int desc = 0; desc <= 1; desc++) {
        size_t bad = SIZE_MAX;
        for (size_t i = 0; i < nv && bad == SIZE_MAX; i++) {
            uint64_t want = bnan(t, v[i]) ? canon : v[i];
            if (dec(t, desc, enc(t, desc, v[i])) != want)
                bad = i;
        }
        tap_ok(bad == SIZE_MAX, "%s %s: decode(encode(x)) == x (NaN -> canonical) for %zu values%s",
               name, desc ? "desc" : "asc", nv, bad == SIZE_MAX ? "" : " FAILED");
        if (bad != SIZE_MAX)
            tap_diag("x = 0x%" PRIx64 " -> 0x%" PRIx64 " -> 0x%" PRIx64, v[bad],
                     enc(t, desc, v[bad]), dec(t, desc, enc(t, desc, v[bad])));
    }

    size_t pairs = 0, wrong = 0;
    uint64_t wa = 0, wb = 0;
    for (size_t i = 0; i < nv; i++)
        for (size_t j = 0; j < nv; j++) {
            int c = ref_cmp(t, v[i], v[j]);
            uint64_t ai = enc(t, 0, v[i]), aj = enc(t, 0, v[j]);
            uint64_t di = enc(t, 1, v[i]), dj = enc(t, 1, v[j]);
            int ca = (ai > aj) - (ai < aj), cd = (di > dj) - (di < dj);
            pairs++;
            if (ca != c || cd != -c) {
                if (!wrong++) {
                    wa = v[i];
                    wb = v[j];
                }
            }
        }
    tap_ok(wrong == 0, "%s: unsigned order of encodings == reference order (asc) and its "
           "reverse (desc), %zu pairs", name, pairs);
    if (wrong)
        tap_diag("%zu wrong, first: 0x%" PRIx64 " vs 0x%" PRIx64, wrong, wa, wb);

    if (t == GS_DT_F32 || t == GS_DT_F64) {
        int ok = 1;
        size_t nnan = 0;
        uint64_t ninf = t == GS_DT_F32 ? 0xff800000u : UINT64_C(0xfff0000000000000);
        for (size_t i = 0; i < nv; i++) {
            if (!bnan(t, v[i]))
                continue;
            nnan++;
            ok &= enc(t, 0, v[i]) == top && enc(t, 1, v[i]) == 0;
            ok &= dec(t, 0, enc(t, 0, v[i])) == canon && dec(t, 1, enc(t, 1, v[i])) == canon;
        }
        /* descending: NaN before -inf, i.e. first */
        ok &= enc(t, 1, canon) < enc(t, 1, ninf);
        tap_ok(ok && nnan >= 8, "%s: all %zu NaNs encode to the top (asc) / bottom (desc) "
               "value and decode to the canonical NaN", name, nnan);
    }
}

/* Spot values straight from the gs_keys.h description. */
static void test_documented(void)
{
    tap_ok(gs_key32_encode(GS_DT_U32, 0, 123) == 123 &&
           gs_key32_encode(GS_DT_U32, 1, 123) == ~UINT32_C(123) &&
           gs_key64_encode(GS_DT_U64, 0, 5) == 5,
           "unsigned: identity, descending complements");
    tap_ok(gs_key32_encode(GS_DT_I32, 0, 0x80000000u) == 0 &&
           gs_key32_encode(GS_DT_I32, 0, 0) == 0x80000000u &&
           gs_key64_encode(GS_DT_I64, 0, UINT64_MAX) == UINT64_C(0x7fffffffffffffff),
           "signed: sign bit flipped");
    tap_ok(gs_key32_encode(GS_DT_F32, 0, 0x80000000u) + 1 == gs_key32_encode(GS_DT_F32, 0, 0),
           "f32: -0.0 immediately below +0.0");
    tap_ok(gs_key32_decode(GS_DT_F32, 0, UINT32_MAX) == 0x7fc00000u &&
           gs_key64_decode(GS_DT_F64, 1, 0) == UINT64_C(0x7ff8000000000000),
           "NaN encodings decode to 0x7fc00000 / 0x7ff8000000000000");
}

static void test_arrays(gs_dtype t)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 17, 33, 1013 };
    size_t w = is64(t) ? 8 : 4;
    uint64_t v[64 + NRAND];
    size_t nv = values_of(t, v);
    unsigned char *a = malloc(1013 * 8 + 8);
    if (!a)
        tap_bail("out of memory");
    for (int desc = 0; desc <= 1; desc++) {
        int ok = 1;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            size_t n = sizes[s];
            for (size_t i = 0; i < n + 1; i++) {   /* one guard element past n */
                uint64_t x = v[(i * 7) % nv];
                if (w == 4)
                    ((uint32_t *)a)[i] = (uint32_t)x;
                else
                    ((uint64_t *)a)[i] = x;
            }
            uint64_t guard = w == 4 ? ((uint32_t *)a)[n] : ((uint64_t *)a)[n];
            gs_keys_encode(t, desc, a, n);
            for (size_t i = 0; i < n; i++) {
                uint64_t x = v[(i * 7) % nv];
                uint64_t got = w == 4 ? ((uint32_t *)a)[i] : ((uint64_t *)a)[i];
                ok &= got == enc(t, desc, x);
            }
            gs_keys_decode(t, desc, a, n);
            for (size_t i = 0; i < n; i++) {
                uint64_t x = v[(i * 7) % nv];
                uint64_t got = w == 4 ? ((uint32_t *)a)[i] : ((uint64_t *)a)[i];
                ok &= got == dec(t, desc, enc(t, desc, x));
            }
            ok &= guard == (w == 4 ? ((uint32_t *)a)[n] : ((uint64_t *)a)[n]);
        }
        tap_ok(ok, "%s %s: array encode/decode == scalar at sizes 0..1013, nothing past n",
               gs_dtype_name(t), desc ? "desc" : "asc");
    }
    free(a);
}

/* An element while "sorting" in test_nan_save. */
typedef struct kv_el {
    uint64_t enc, val;
    size_t i;
} kv_el;

/* Encoded key ascending, equal keys in REVERSED input order: what an
 * unstable algorithm may leave, and the worst case for the NaN block. */
static int kv_cmp(const void *x, const void *y)
{
    const kv_el *a = x, *b = y;
    if (a->enc != b->enc)
        return a->enc < b->enc ? -1 : 1;
    return (a->i < b->i) - (a->i > b->i);
}

static uint64_t ldw(size_t w, const void *p, size_t i)
{
    return w == 4 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}

static void stw(size_t w, void *p, size_t i, uint64_t x)
{
    if (w == 4)
        ((uint32_t *)p)[i] = (uint32_t)x;
    else
        ((uint64_t *)p)[i] = x;
}

/* Save the NaNs (bits and payload), sort keys and payload like an unstable
 * algorithm (encoded keys, which turns NaNs canonical; equal keys reversed),
 * restore, and find the input's NaN patterns in input order in the NaN
 * block, each beside its own value or input index. A large n is scanned in
 * several chunks, one per thread (gs_keys_nan.c), whose NaNs must still
 * come out in input order. */
static void test_nan_save(gs_dtype t, int desc, gs_payload pl, size_t n)
{
    size_t w = is64(t) ? 8 : 4, vw = gs_payload_size(pl);
    int idx = pl == GS_PL_IDX32 || pl == GS_PL_IDX64;
    const char *tn = gs_dtype_name(t), *dn = desc ? "desc" : "asc", *pn = gs_payload_name(pl);
    uint64_t v[64 + NRAND];
    size_t nv = values_of(t, v);
    unsigned char *a = malloc(n * w), *in = malloc(n * w);
    unsigned char *va = malloc(n * 8), *vin = malloc(n * 8);
    uint64_t *nanbits = malloc(n * sizeof *nanbits), *nanvals = malloc(n * sizeof *nanvals);
    kv_el *el = malloc(n * sizeof *el);
    if (!a || !in || !va || !vin || !nanbits || !nanvals || !el)
        tap_bail("out of memory");
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[next64() % nv];
        stw(w, in, i, x);
        /* distinct values (i * odd is a bijection), or poison for indices */
        uint64_t val = idx ? UINT64_C(0xDEADBEEFDEADBEEF) : (uint64_t)i * 0x9e3779b1u + 7;
        if (vw)
            stw(vw, vin, i, val);
        if (bnan(t, x)) {
            nanbits[nn] = x;
            nanvals[nn++] = idx ? (uint64_t)i : vw == 4 ? (uint32_t)val : val;
        }
    }
    memcpy(a, in, n * w);
    if (vw)
        memcpy(va, vin, n * vw);
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc },
                        .n = n,
                        .keys = a,
                        .values = vw ? va : NULL };
    gs_nan_save s;
    gs_err err;
    int rc = gs_keys_nan_save(&req, &s, &err);
    int ok = rc == 0 && s.count == nn && s.bits && !memcmp(a, in, n * w) &&
             (vw ? s.vals != NULL && !memcmp(va, vin, n * vw) : s.vals == NULL);
    for (size_t i = 0; ok && i < nn; i++)
        ok &= ldw(w, s.bits, i) == nanbits[i] && (!vw || ldw(vw, s.vals, i) == nanvals[i]);
    tap_ok(ok && nn > 100, "%s %s %s, n=%zu: nan_save records all %zu NaN patterns and their %s "
           "in input order", tn, dn, pn, n, nn, idx ? "indices" : vw ? "values" : "(no payload)");

    gs_keys_encode(t, desc, a, n);
    for (size_t i = 0; i < n; i++)
        el[i] = (kv_el){ ldw(w, a, i), vw ? ldw(vw, va, i) : 0, i };
    qsort(el, n, sizeof *el, kv_cmp);
    for (size_t i = 0; i < n; i++) {
        stw(w, a, i, el[i].enc);
        if (vw)
            stw(vw, va, i, idx ? el[i].i : el[i].val);
    }
    gs_keys_decode(t, desc, a, n);
    gs_keys_nan_restore(&req, &s);
    size_t first = desc ? 0 : n - nn;
    ok = 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t got = ldw(w, a, i);
        if (i >= first && i < first + nn)
            ok &= got == nanbits[i - first] && (!vw || ldw(vw, va, i) == nanvals[i - first]);
        else
            ok &= !bnan(t, got);
        /* every pair: the value (distinct) or index names an input element
         * whose key is bit-equal */
        if (vw) {
            uint64_t x = ldw(vw, va, i);
            size_t src = idx ? (size_t)x : (size_t)(uint32_t)((x - 7) * 0x0e8b2f51u);
            ok &= src < n && ldw(w, in, src) == got && (idx || ldw(vw, vin, src) == x);
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t x = ldw(w, a, i - 1), y = ldw(w, a, i);
        ok &= desc ? ref_cmp(t, x, y) >= 0 : ref_cmp(t, x, y) <= 0;
    }
    tap_ok(ok, "%s %s %s: after an unstable order, nan_restore puts them back %s with their "
           "payload, every (key bits, value) pair kept, rest sorted and NaN-free", tn, dn, pn,
           desc ? "first" : "last");
    gs_keys_nan_free(&s);
    tap_ok(s.bits == NULL && s.vals == NULL && s.count == 0, "nan_free clears the record");

    /* Only canonical NaNs: nothing to save, restore is a no-op. */
    uint64_t canon = t == GS_DT_F32 ? GS_F32_CANON_NAN : GS_F64_CANON_NAN;
    for (size_t i = 0; i < n; i++)
        stw(w, a, i, i % 3 ? (uint64_t)i : canon);
    memcpy(in, a, n * w);
    if (vw)
        memcpy(vin, va, n * vw);
    rc = gs_keys_nan_save(&req, &s, &err);
    gs_keys_nan_restore(&req, &s);
    tap_ok(rc == 0 && s.count == 0 && s.bits == NULL && s.vals == NULL &&
           !memcmp(in, a, n * w) && (!vw || !memcmp(vin, va, n * vw)),
           "%s %s: only canonical NaNs: nothing saved, restore changes nothing", tn, pn);
    free(a);
    free(in);
    free(va);
    free(vin);
    free(nanbits);
    free(nanvals);
    free(el);
}

int main(void)
{
    for (int t = 0; t < GS_DT_COUNT; t++)
        test_scalar((gs_dtype)t);
    test_documented();
    for (int t = 0; t < GS_DT_COUNT; t++)
        test_arrays((gs_dtype)t);
    for (int desc = 0; desc <= 1; desc++)
        for (int pl = 0; pl < GS_PL_COUNT; pl++) {
            test_nan_save(GS_DT_F32, desc, (gs_payload)pl, 2000);
            test_nan_save(GS_DT_F64, desc, (gs_payload)pl, 2000);
        }
    /* More than one chunk (2^20 keys each) on any machine with two cores. */
    test_nan_save(GS_DT_F32, 0, GS_PL_U32, ((size_t)1 << 21) + 37);
    test_nan_save(GS_DT_F64, 1, GS_PL_IDX64, ((size_t)1 << 21) + 37);
    uint32_t ik[3] = { 0x7f800001u, 1, 2 }, iv[3] = { 4, 5, 6 };
    gs_sort_req ir = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_U32 }, .n = 3, .keys = ik,
                       .values = iv };
    gs_nan_save s;
    gs_err err;
    tap_ok(gs_keys_nan_save(&ir, &s, &err) == 0 && s.count == 0 && !s.bits && !s.vals,
           "nan_save is a no-op for integer dtypes");
    /* kernels/keys.cl: GS_KIND_UNSIGNED 0, GS_KIND_SIGNED 1, GS_KIND_FLOAT 2 */
    tap_ok(gs_keys_kind(GS_DT_U32) == 0 && gs_keys_kind(GS_DT_U64) == 0 &&
               gs_keys_kind(GS_DT_I32) == 1 && gs_keys_kind(GS_DT_I64) == 1 &&
               gs_keys_kind(GS_DT_F32) == 2 && gs_keys_kind(GS_DT_F64) == 2,
           "key kinds: unsigned 0, signed 1, float 2, as kernels/keys.cl numbers them");
    return tap_done();
}
