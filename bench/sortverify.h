/* How the client tools make and check sort requests (gsort-netbench,
 * gsort-load): random keys of any dtype with the values that go with them,
 * and the check of a reply against them: keys in the dtype's total order
 * (ascending or descending), the same multiset of keys as sent (sum and xor
 * of the encoded keys), u32/u64 values still with their keys, idx32/idx64
 * indices pointing at their key, and for a stable argsort equal keys in
 * input order. Header-only (static inline) over gs_keys/gs_types, like
 * benchutil.h; names start with sv_. */
#ifndef GS_SORTVERIFY_H
#define GS_SORTVERIFY_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "benchutil.h"
#include "gs_keys.h"
#include "gs_types.h"

/* What a request must come back with: the multiset of keys (sum and xor of
 * their encoded form: NaN payloads are encoded away, so any NaN restored in
 * any order still counts). */
typedef struct sv_keysum {
    uint64_t sum, xor;
} sv_keysum;

enum {
    SV_DESC = 1,      /* the reply must be in descending order */
    SV_STABLE = 2,    /* idx payloads: equal keys must keep their input order */
    SV_FEW = 4,       /* fill: few distinct keys (many equal ones) */
};

/* Key i in the order's encoding: encoded keys ascend when the order holds. */
static inline uint64_t sv_key_enc(gs_dtype t, int desc, const void *keys, size_t i)
{
    return gs_key_encoded(t, desc, keys, i);
}

/* A stored value is a hash of its key's encoding, so the check that values
 * travelled with their keys is one comparison per element, stable sort or
 * not (equal keys carry equal values). */
static inline uint64_t sv_val_of(uint64_t enc)
{
    uint64_t s = enc;
    return bu_splitmix(&s);
}

/* Random key bits (floats therefore include NaNs and infinities; with
 * SV_FEW only 32 distinct patterns, both signs) and, for u32/u64 values,
 * the values that go with them. */
static inline void sv_fill(gs_dtype t, gs_payload p, int flags, size_t n, void *keys,
                           void *values, uint64_t seed, sv_keysum *ks)
{
    uint64_t s = seed;
    int desc = !!(flags & SV_DESC), w4 = gs_dtype_size(t) == 4;
    ks->sum = ks->xor = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = bu_splitmix(&s);
        if (flags & SV_FEW)
            x &= w4 ? UINT64_C(0x8000000f) : UINT64_C(0x800000000000000f);
        if (w4)
            ((uint32_t *)keys)[i] = (uint32_t)x;
        else
            ((uint64_t *)keys)[i] = x;
        uint64_t e = sv_key_enc(t, desc, keys, i);
        ks->sum += e;
        ks->xor ^= e;
        if (p == GS_PL_U32)
            ((uint32_t *)values)[i] = (uint32_t)sv_val_of(e);
        else if (p == GS_PL_U64)
            ((uint64_t *)values)[i] = sv_val_of(e);
    }
}

/* 1 if keys[0..n) is the input sorted (flags: SV_DESC, SV_STABLE as
 * sv_fill was given them) with its payload intact, else 0 with the reason
 * in why. `in_keys` (the input, only for idx payloads) may be NULL
 * otherwise. */
static inline int sv_verify(gs_dtype t, gs_payload p, int flags, size_t n, const void *keys,
                            const void *values, const void *in_keys, const sv_keysum *want,
                            char *why, size_t wl)
{
    int desc = !!(flags & SV_DESC);
    uint64_t sum = 0, x = 0, prev = 0, prev_idx = 0;
    if (p == GS_PL_NONE && !desc && (t == GS_DT_U32 || t == GS_DT_U64)) {
        /* unsigned keys alone, ascending: the encoding is the key itself,
         * so one branch-free pass (a client checking 2^24 keys per reply
         * must not be what a throughput run measures) */
        size_t bad = 0;
        if (t == GS_DT_U32) {
            const uint32_t *k = keys;
            for (size_t i = 0; i < n; i++) {
                sum += k[i];
                x ^= k[i];
                bad |= (size_t)(i && k[i] < k[i - 1]);
            }
        } else {
            const uint64_t *k = keys;
            for (size_t i = 0; i < n; i++) {
                sum += k[i];
                x ^= k[i];
                bad |= (size_t)(i && k[i] < k[i - 1]);
            }
        }
        if (bad) {
            snprintf(why, wl, "keys out of ascending order");
            return 0;
        }
        if (sum != want->sum || x != want->xor) {
            snprintf(why, wl, "the keys are not a permutation of the input (checksum changed)");
            return 0;
        }
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t e = sv_key_enc(t, desc, keys, i);
        if (i && e < prev) {
            snprintf(why, wl, "keys out of %s order at %zu", desc ? "descending" : "ascending",
                     i);
            return 0;
        }
        sum += e;
        x ^= e;
        uint64_t v;
        switch (p) {
        case GS_PL_U32:
            v = ((const uint32_t *)values)[i];
            if (v != (uint32_t)sv_val_of(e))
                goto badval;
            break;
        case GS_PL_U64:
            v = ((const uint64_t *)values)[i];
            if (v != sv_val_of(e))
                goto badval;
            break;
        case GS_PL_IDX32:
        case GS_PL_IDX64:
            v = p == GS_PL_IDX32 ? ((const uint32_t *)values)[i] : ((const uint64_t *)values)[i];
            if (v >= n || sv_key_enc(t, desc, in_keys, (size_t)v) != e) {
                snprintf(why, wl, "index %zu -> %" PRIu64 " does not hold that key", i, v);
                return 0;
            }
            if ((flags & SV_STABLE) && i && e == prev && v <= prev_idx) {
                snprintf(why, wl, "stable sort: equal keys out of input order at %zu "
                         "(index %" PRIu64 " after %" PRIu64 ")", i, v, prev_idx);
                return 0;
            }
            prev_idx = v;
            break;
        default:
            break;
        }
        prev = e;
        continue;
    badval:
        snprintf(why, wl, "value at %zu does not belong to its key", i);
        return 0;
    }
    if (sum != want->sum || x != want->xor) {
        snprintf(why, wl, "the keys are not a permutation of the input (checksum changed)");
        return 0;
    }
    return 1;
}

#endif
