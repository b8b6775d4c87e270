/* Shellsort kernels (the paper's variant D), driven by lib/algos/algo_shellsort.c.
 * One phase per increment h: the subset of residue r (elements r, r+h,
 * r+2h, ...) is cut into T slices of S consecutive subset positions, one
 * work-item per slice insertion-sorts it (shell_slices_*); then rounds of
 * odd/even merge-split between neighbouring slices (shell_merge_*) repair
 * the slice boundaries. T rounds always suffice (block odd-even transposition
 * sort); a round whose two predecessors exchanged nothing returns at once,
 * since the subset is then already sorted, so surplus rounds are cheap.
 * Keys are encoded once (shell_encode_*) to unsigned integers whose plain
 * order is the requested one, so the sorting kernels only compare integers,
 * and decoded at the end. Indices, counts and h are 32-bit (the host caps
 * n). Work-item g of a phase handles residue g % h: neighbouring work-items
 * then touch neighbouring elements while h is large. Kernels exist for every
 * key width (k32/k64) x value width (v0/v32/v64) from one body macro, so a
 * single program build serves every request and parameter set. */

/* Encode keys in place; iota 1/2 also writes argsort indices as u32/u64. */
#define SHELL_ENCODE(KB, KT, ENC)                                                       \
__kernel void shell_encode_k##KB(__global KT *k, __global uint *i32, __global ulong *i64, \
                                 uint n, uint kind, uint desc, uint iota)              \
{                                                                                       \
    uint g = (uint)get_global_id(0);                                                    \
    if (g >= n)                                                                         \
        return;                                                                         \
    k[g] = ENC(k[g], kind, desc);                                                       \
    if (iota == 1u)                                                                     \
        i32[g] = g;                                                                     \
    else if (iota == 2u)                                                                \
        i64[g] = (ulong)g;                                                              \
}                                                                                       \
__kernel void shell_decode_k##KB(__global KT *k, uint n, uint kind, uint desc)          \
{                                                                                       \
    uint g = (uint)get_global_id(0);                                                    \
    if (g < n)                                                                          \
        k[g] = gs_dec##KB(k[g], kind, desc);                                            \
}

#define SHELL_ENCODE_W(KW, KT, KS) SHELL_ENCODE(KW, KT, gs_enc##KW)
GS_KEY_WIDTHS(SHELL_ENCODE_W)

/* Element j of the subset of residue r. */
#define SH_AT(j) (r + (j) * h)

/* HASV is 0 or 1 (compile-time, so the value moves vanish for keys-only
 * sorts); VT is then a placeholder type and v/vs are never touched. */
#define SHELL_SORT(SUF, KT, VT, HASV)                                                   \
__kernel void shell_slices_##SUF(__global KT *k, __global VT *v, uint n, uint h, uint T, \
                                 uint S, __global uint *flags)                          \
{                                                                                       \
    uint g = (uint)get_global_id(0);                                                    \
    if (g < T)                                                                          \
        flags[g] = 0u;   /* this phase's round flags; rounds run after this kernel */   \
    uint t = g / h, r = g - t * h;                                                      \
    if (t >= T)                                                                         \
        return;                                                                         \
    uint len = (n - r + h - 1u) / h;                                                    \
    uint lo = t * S;                                                                    \
    if (lo >= len)                                                                      \
        return;                                                                         \
    uint hi = min(lo + S, len);                                                         \
    for (uint j = lo + 1u; j < hi; j++) {                                               \
        KT x = k[SH_AT(j)];                                                             \
        uint i = j;                                                                     \
        KT y = k[SH_AT(i - 1u)];                                                        \
        if (y <= x)                                                                     \
            continue;   /* already in place: the common case late in Shellsort */      \
        VT xv = 0;                                                                      \
        if (HASV)                                                                       \
            xv = v[SH_AT(j)];                                                           \
        do {                                                                            \
            k[SH_AT(i)] = y;                                                            \
            if (HASV)                                                                   \
                v[SH_AT(i)] = v[SH_AT(i - 1u)];                                         \
            i--;                                                                        \
        } while (i > lo && (y = k[SH_AT(i - 1u)]) > x);                                 \
        k[SH_AT(i)] = x;                                                                \
        if (HASV)                                                                       \
            v[SH_AT(i)] = xv;                                                           \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* Merge-split of slices t (A) and t+1 (B), t = 2q + parity: A keeps the a  \
 * smallest, B the rest, both sorted. Only the c elements that cross are      \
 * staged in the scratch buffers (ks/vs, at their own positions, so pairs     \
 * never collide); each side is then merged in place from the end where the   \
 * staged elements left a gap, stopping once the staged run is used up. */   \
__kernel void shell_merge_##SUF(__global KT *k, __global VT *v, __global KT *ks,        \
                                __global VT *vs, uint n, uint h, uint T, uint S,        \
                                uint round, __global uint *flags)                       \
{                                                                                       \
    if (round >= 2u && flags[round - 1u] == 0u && flags[round - 2u] == 0u)              \
        return;   /* two quiet rounds in a row: every boundary is in order */           \
    uint g = (uint)get_global_id(0);                                                    \
    uint parity = round & 1u;                                                           \
    uint q = g / h, r = g - q * h;                                                      \
    uint t = 2u * q + parity;                                                           \
    if (t + 1u >= T)                                                                    \
        return;                                                                         \
    uint len = (n - r + h - 1u) / h;                                                    \
    uint a0 = t * S, b0 = a0 + S;                                                       \
    if (b0 >= len)                                                                      \
        return;                                                                         \
    uint a = S, b = min(S, len - b0);                                                   \
    if (k[SH_AT(b0 - 1u)] <= k[SH_AT(b0)])                                              \
        return;                                                                         \
    /* c = how many cross: largest c with A[a-c] > B[c-1] (true for c = 1) */           \
    uint lo = 1u, hi = min(a, b);                                                       \
    while (lo < hi) {                                                                   \
        uint mid = (lo + hi + 1u) / 2u;                                                 \
        if (k[SH_AT(b0 - mid)] > k[SH_AT(b0 + mid - 1u)])                               \
            lo = mid;                                                                   \
        else                                                                            \
            hi = mid - 1u;                                                              \
    }                                                                                   \
    uint c = lo;                                                                        \
    for (uint i = 0; i < c; i++) {                                                      \
        ks[SH_AT(b0 + i)] = k[SH_AT(b0 + i)];                                           \
        ks[SH_AT(b0 - c + i)] = k[SH_AT(b0 - c + i)];                                   \
        if (HASV) {                                                                     \
            vs[SH_AT(b0 + i)] = v[SH_AT(b0 + i)];                                       \
            vs[SH_AT(b0 - c + i)] = v[SH_AT(b0 - c + i)];                               \
        }                                                                               \
    }                                                                                   \
    /* A side: A[0..a-c) (in place) with B[0..c) (staged), largest first */            \
    {                                                                                   \
        uint i = a - c, j = c, w = a;   /* counts still to take; next write w-1 */      \
        while (j > 0u) {                                                                \
            KT y = ks[SH_AT(b0 + j - 1u)];                                              \
            if (i > 0u && k[SH_AT(a0 + i - 1u)] > y) {                                  \
                k[SH_AT(a0 + w - 1u)] = k[SH_AT(a0 + i - 1u)];                          \
                if (HASV)                                                               \
                    v[SH_AT(a0 + w - 1u)] = v[SH_AT(a0 + i - 1u)];                      \
                i--;                                                                    \
            } else {                                                                    \
                k[SH_AT(a0 + w - 1u)] = y;                                              \
                if (HASV)                                                               \
                    v[SH_AT(a0 + w - 1u)] = vs[SH_AT(b0 + j - 1u)];                     \
                j--;                                                                    \
            }                                                                           \
            w--;                                                                        \
        }                                                                               \
    }                                                                                   \
    /* B side: A[a-c..a) (staged) with B[c..b) (in place), smallest first */           \
    {                                                                                   \
        uint i = 0, j = c, w = 0;                                                       \
        while (i < c) {                                                                 \
            KT x = ks[SH_AT(b0 - c + i)];                                               \
            if (j < b && k[SH_AT(b0 + j)] < x) {                                        \
                k[SH_AT(b0 + w)] = k[SH_AT(b0 + j)];                                    \
                if (HASV)                                                               \
                    v[SH_AT(b0 + w)] = v[SH_AT(b0 + j)];                                \
                j++;                                                                    \
            } else {                                                                    \
                k[SH_AT(b0 + w)] = x;                                                   \
                if (HASV)                                                               \
                    v[SH_AT(b0 + w)] = vs[SH_AT(b0 - c + i)];                           \
                i++;                                                                    \
            }                                                                           \
            w++;                                                                        \
        }                                                                               \
    }                                                                                   \
    flags[round] = 1u;                                                                  \
}

/* per key width: no values, 32-bit and 64-bit values (or argsort indices) */
#define SHELL_SORT_W(KW, KT, KS)                                                            \
    SHELL_SORT(k##KW##_v0, KT, uint, 0)                                                     \
    SHELL_SORT(k##KW##_v32, KT, uint, 1)                                                    \
    SHELL_SORT(k##KW##_v64, KT, ulong, 1)
GS_KEY_WIDTHS(SHELL_SORT_W)
