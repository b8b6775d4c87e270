/* Order-preserving key encoding in OpenCL C, the device twin of
 * lib/sort/gs_keys.h (same formulas, kept in step by tests/lib/algos/test_radix.c comparing
 * device results with the host reference): an encoded key's plain unsigned
 * order is the requested order. `kind` is 0 for unsigned, 1 for signed
 * integers, 2 for IEEE floats; `desc` is 1 for descending (the complement
 * of the ascending code, so equal keys still keep input order). Every NaN
 * encodes to the single top value and decodes to the canonical quiet NaN;
 * non-canonical NaN payloads are restored afterwards, by the host
 * (lib/sort/gs_keys_nan.c) or by the save kernels at the end of this file
 * (lib/sort/gs_clnan.c). Functions are
 * branch-light because they sit inside the radix kernels' load/store loops. */

/* GS_HOSTILE=1 (lib/sort/gs_clrun.h: gs_clrun_hostile): the kernels may run on
 * the client's own pages (zero copy on CPU devices), which it can rewrite
 * while they run, so a position derived from keys an earlier pass read is
 * bounded before it is used. The race flag is the kernel's last argument
 * (GS_RACED_ARG). GS_CLAMP(i, n) is i bounded to n - 1 (n > 0), without a
 * branch; a position past it marks the work-item's GS_BAD_DECL variable,
 * which GS_BAD_REPORT folds into the race flag once. Without GS_HOSTILE
 * they are nothing (GS_CLAMP is i) and the kernels are as they were. */
#ifndef GS_HOSTILE
#define GS_HOSTILE 0
#endif
#if GS_HOSTILE
#define GS_RACED_ARG , global uint *raced
#define GS_BAD_DECL uint gs_bad_ = 0;
#define GS_CLAMP(i, n) gs_clamp((i), (n), &gs_bad_)
#define GS_BAD_REPORT                                                            \
    if (gs_bad_)                                                                 \
        atomic_or(raced, 1u);
uint gs_clamp(uint i, uint n, uint *bad)
{
    *bad |= i >= n;
    return min(i, n - 1u);
}
#else
#define GS_RACED_ARG
#define GS_BAD_DECL
#define GS_CLAMP(i, n) (i)
#define GS_BAD_REPORT
#endif

#define GS_KIND_UNSIGNED 0u
#define GS_KIND_SIGNED 1u
#define GS_KIND_FLOAT 2u

/* 16-bit keys (radix's -DGS_K16 build: the daemon's 8- and 16-bit keys,
 * lib/sort/gs_narrow_sort.h): u16, i16, IEEE half (GS_KIND_FLOAT) and
 * bfloat16 (GS_KIND_BF16), whose NaNs lie above 0x7c00 and 0x7f80 and
 * decode to 0x7e00 and 0x7fc0; the same rules as the 32-bit keys'. */
#define GS_KIND_BF16 3u

ushort gs_enc16(ushort b, uint kind, uint desc)
{
    uint e = b;
    if (kind == GS_KIND_SIGNED) {
        e = b ^ 0x8000u;
    } else if (kind >= GS_KIND_FLOAT) {
        const uint inf = kind == GS_KIND_BF16 ? 0x7f80u : 0x7c00u;
        const uint m = (b & 0x8000u) ? 0xffffu : 0x8000u;
        e = ((b & 0x7fffu) > inf) ? 0xffffu : (b ^ m);
    }
    return (ushort)(desc ? ~e : e);
}

ushort gs_dec16(ushort ein, uint kind, uint desc)
{
    uint e = desc ? (~(uint)ein & 0xffffu) : ein;
    if (kind == GS_KIND_SIGNED)
        return (ushort)(e ^ 0x8000u);
    if (kind >= GS_KIND_FLOAT) {
        if (e == 0xffffu)
            return (ushort)(kind == GS_KIND_BF16 ? 0x7fc0u : 0x7e00u);
        const uint m = (e & 0x8000u) ? 0x8000u : 0xffffu;
        return (ushort)(e ^ m);
    }
    return (ushort)e;
}

uint gs_enc32(uint b, uint kind, uint desc)
{
    uint e = b;
    if (kind == GS_KIND_SIGNED) {
        e = b ^ 0x80000000u;
    } else if (kind == GS_KIND_FLOAT) {
        /* negative: flip all bits; positive: set the sign bit; NaN: top */
        uint m = (uint)((int)b >> 31) | 0x80000000u;
        e = ((b & 0x7fffffffu) > 0x7f800000u) ? 0xffffffffu : (b ^ m);
    }
    return desc ? ~e : e;
}

uint gs_dec32(uint e, uint kind, uint desc)
{
    if (desc)
        e = ~e;
    if (kind == GS_KIND_SIGNED)
        return e ^ 0x80000000u;
    if (kind == GS_KIND_FLOAT) {
        if (e == 0xffffffffu)
            return 0x7fc00000u;
        /* top bit set: was positive (clear it); else was negative (flip all) */
        uint m = (e & 0x80000000u) ? 0x80000000u : 0xffffffffu;
        return e ^ m;
    }
    return e;
}

ulong gs_enc64(ulong b, uint kind, uint desc)
{
    ulong e = b;
    if (kind == GS_KIND_SIGNED) {
        e = b ^ 0x8000000000000000ul;
    } else if (kind == GS_KIND_FLOAT) {
        ulong m = (ulong)((long)b >> 63) | 0x8000000000000000ul;
        e = ((b & 0x7ffffffffffffffful) > 0x7ff0000000000000ul) ? 0xfffffffffffffffful : (b ^ m);
    }
    return desc ? ~e : e;
}

ulong gs_dec64(ulong e, uint kind, uint desc)
{
    if (desc)
        e = ~e;
    if (kind == GS_KIND_SIGNED)
        return e ^ 0x8000000000000000ul;
    if (kind == GS_KIND_FLOAT) {
        if (e == 0xfffffffffffffffful)
            return 0x7ff8000000000000ul;
        ulong m = (e & 0x8000000000000000ul) ? 0x8000000000000000ul : 0xfffffffffffffffful;
        return e ^ m;
    }
    return e;
}

/* The key widths every algorithm's kernels are built for, one row each:
 * X(bits, type, bytes). A kernel family is instantiated once per row
 * (GS_KEY_WIDTHS(DEF_...)), naming its kernels _k<bits> and calling
 * gs_enc<bits>/gs_dec<bits>, so a new width is a row here and its two
 * functions above, and no algorithm's file changes. */
#define GS_KEY_WIDTHS(X) X(32, uint, 4) X(64, ulong, 8)

/* ---- NaN payloads kept on the device (lib/sort/gs_clnan.c) ----
 * A stable device sort leaves every NaN, encoded to one value, in input
 * order in one block at the end (ascending) or start (descending); only the
 * bit patterns are lost. These two kernels save the NaNs' patterns in input
 * order before the sort, so the host writes them over that block with one
 * device copy: no host pass over the keys (issue 16: floats no slower than
 * integers). A group takes a tile of WG x GS_NAN_EPT keys, each work-item a
 * contiguous run of GS_NAN_EPT of them (order inside the tile is by
 * work-item, so one group scan ranks them). Built only into programs that
 * define WG (radix, mergepath). */
#ifdef WG
#define GS_NAN_EPT 16u
#define GS_NAN_TILE ((ulong)WG * GS_NAN_EPT)

/* Exclusive prefix of v over the group (Hillis-Steele in s[WG]); *total
 * gets the group's sum. The loop's trip count is a compile-time constant,
 * unrolled, so no barrier sits in a run-time loop (see radix.cl). */
uint gs_nan_group_scan(uint v, local uint *s, uint *total)
{
    const uint lid = get_local_id(0);
    s[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    _Pragma("unroll")
    for (uint off = 1; off < WG; off <<= 1) {
        const uint t = lid >= off ? s[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        s[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *total = s[WG - 1];
    const uint incl = s[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    return incl - v;
}

/* Built for client pages (GS_HOSTILE): keys the client rewrote since the
 * count may hold more or fewer NaNs, so a tile of gs_nan_save writes
 * exactly its own range [toff[g], toff[g + 1]) (the host puts the total at
 * toff[ntiles]): no more NaNs than it has room for, and canonical ones
 * where it found fewer (each work-item in its own part, the last one in
 * what the group's count falls short of). The range is restored over the
 * sorted keys, so it must hold nothing but this sort's. */
#if GS_HOSTILE
#define GS_NAN_LIM const uint lim = toff[get_group_id(0) + 1];
#define GS_NAN_ROOM(at) && (at) < lim
#define GS_NAN_PAD(CANON)                                                        \
    for (; c && at < lim; c--)                                                   \
        out[at++] = CANON;                                                       \
    if (get_local_id(0) == WG - 1)                                               \
        for (uint i = toff[get_group_id(0)] + tot; i < lim; i++)                 \
            out[i] = CANON;
#else
#define GS_NAN_LIM
#define GS_NAN_ROOM(at)
#define GS_NAN_PAD(CANON)
#endif

/* tcount[g] = NaNs in tile g; tcount[ntiles] += NaNs that are not the
 * canonical one (the host zeroes it first; when it stays 0 nothing need be
 * saved: canonical NaNs are bit-equal). */
#define GS_NAN_KERNELS(KW, KT, ABS, INF, CANON)                                  \
kernel void gs_nan_count_k##KW(global const KT *keys, uint n, uint ntiles,        \
                               global uint *tcount)                              \
{                                                                                \
    local uint s[WG];                                                            \
    const ulong base = get_group_id(0) * GS_NAN_TILE +                           \
                       (ulong)get_local_id(0) * GS_NAN_EPT;                      \
    uint c = 0, odd = 0;                                                         \
    for (uint k = 0; k < GS_NAN_EPT; k++) {                                      \
        if (base + k < n) {                                                      \
            const KT b = keys[base + k];                                         \
            const uint f = (b & ABS) > INF;                                      \
            c += f;                                                              \
            odd += f & (b != CANON);                                             \
        }                                                                        \
    }                                                                            \
    uint tot;                                                                    \
    gs_nan_group_scan(c, s, &tot);                                               \
    if (get_local_id(0) == 0)                                                    \
        tcount[get_group_id(0)] = tot;                                           \
    if (odd)                                                                     \
        atomic_add(&tcount[ntiles], odd);                                        \
}                                                                                \
/* out[toff[g] + rank] = the tile's NaN patterns in input order */               \
kernel void gs_nan_save_k##KW(global const KT *keys, uint n,                     \
                              global const uint *toff, global KT *out)           \
{                                                                                \
    local uint s[WG];                                                            \
    const ulong base = get_group_id(0) * GS_NAN_TILE +                           \
                       (ulong)get_local_id(0) * GS_NAN_EPT;                      \
    uint c = 0;                                                                  \
    for (uint k = 0; k < GS_NAN_EPT; k++)                                        \
        if (base + k < n)                                                        \
            c += (keys[base + k] & ABS) > INF;                                   \
    uint tot;                                                                    \
    uint at = toff[get_group_id(0)] + gs_nan_group_scan(c, s, &tot);             \
    GS_NAN_LIM                                                                   \
    for (uint k = 0; k < GS_NAN_EPT && c GS_NAN_ROOM(at); k++) {                 \
        if (base + k < n) {                                                      \
            const KT b = keys[base + k];                                         \
            if ((b & ABS) > INF) {                                               \
                out[at++] = b;                                                   \
                c--;                                                             \
            }                                                                    \
        }                                                                        \
    }                                                                            \
    GS_NAN_PAD(CANON)                                                            \
}

GS_NAN_KERNELS(32, uint, 0x7fffffffu, 0x7f800000u, 0x7fc00000u)
GS_NAN_KERNELS(64, ulong, 0x7ffffffffffffffful, 0x7ff0000000000000ul, 0x7ff8000000000000ul)
#endif
