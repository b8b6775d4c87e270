/* Bitonic sort in local memory, driven by lib/algos/algo_bitonic.c: one
 * work-group sorts a tile of TILE keys held in local memory, which is one
 * row padded to P keys or TILE / P such rows side by side (a request of
 * equal rows, issue 38; a flat request is one row; the segments kernels
 * take rows of unequal lengths, each at most P, from their offsets, or the
 * segments of one size class from a list of their numbers). Each key
 * travels with its position in the row (16 bits: a row holds at most 16384
 * keys), and pairs compare by (encoded key, position), so the network sorts
 * stably and the padding (top key, position 0xffff) ends up behind every
 * real key of its row. One launch reads the keys once and writes them once:
 * no pass through global memory between stages (issue 36: a small array in
 * one dispatch).
 * The output's keys are decoded from local memory, but a NaN's key is read
 * again from the input at its position, so every key leaves with its own
 * bit pattern and nothing need be saved or restored around the sort; values
 * are gathered from the input by position, argsort indices are the
 * positions. Positions are made here, never read from the client's keys,
 * so every gather stays inside its row on any input (safe on the client's
 * own pages as built: rewritten keys give a wrong order, never a wrong
 * address).
 * Stages whose pairs lie less than RC apart run in registers: each
 * work-item takes runs of RC neighbouring keys from local memory, does every
 * such stage of a merge on them and puts them back, so a merge of runs of
 * 2^kl costs kl - log2(RC) passes over local memory and one more, not kl.
 * Local memory is indexed with a word of padding every 32 (BI_AT), so the
 * work-items of a warp reading runs of RC do not meet in one bank.
 * Compile-time: WG work-items, TILE keys a group (a power of two, WG * 2
 * or more), P the padded row length (a power of two <= TILE) and LP its
 * log2, RC (a power of two, 2 or more, with TILE a multiple of RC * WG) and
 * LC its log2; BI_SEGS 1 for the segments kernels. The stage loop, the
 * only one with a barrier, has a constant trip count and is fully
 * unrolled: PoCL 3.1 miscompiles barriers inside run-time loops (see
 * radix.cl). */

#ifndef WG
#error "WG must be defined"
#endif
#ifndef TILE
#error "TILE must be defined"
#endif
#ifndef P
#error "P must be defined"
#endif
#ifndef LP
#error "LP must be defined"
#endif
#ifndef RC
#error "RC must be defined"
#endif
#ifndef LC
#error "LC must be defined"
#endif
#ifndef BI_SEGS
#define BI_SEGS 0
#endif
#if (TILE % P) || (TILE % (2 * WG)) || (P != (1 << LP)) || (RC != (1 << LC)) || (TILE % (RC * WG))
#error "TILE must be a multiple of P, 2 * WG and RC * WG; P = 2^LP, RC = 2^LC"
#endif

/* steps: per merge kl (1..LP), its local stages (jl from kl - 1 down to LC)
 * and one register block (the stages below LC) */
#define BI_STEPS (LP + (LP > LC ? (LP - LC) * (LP - LC + 1) / 2 : 0))
#define BI_ROWS (TILE / P)          /* rows a group sorts */
#define BI_EACH (TILE / WG)         /* keys a work-item loads and stores */
#define BI_PAIRS (TILE / 2 / WG)    /* compare-exchanges a work-item does a stage */
#define BI_RUNS (TILE / RC / WG)    /* runs of RC a work-item does a register block */
#define BI_LOCAL (TILE + TILE / 32) /* local slots with the padding */
#define BI_AT(i) ((i) + ((i) >> 5))

/* One compare-exchange of (key, position) pairs toward `up` (ascending). */
#define BI_CX(KT, KA, IA, KB, IB, up)                                                     \
    {                                                                                   \
        const int gt_ = KA > KB || (KA == KB && IA > IB);                               \
        if (gt_ == (up)) {                                                              \
            const KT k_ = KA;                                                           \
            const ushort i_ = IA;                                                       \
            KA = KB;                                                                    \
            KB = k_;                                                                    \
            IA = IB;                                                                    \
            IB = i_;                                                                    \
        }                                                                               \
    }

/* VW 0: no values (vin, vout unused); else values of VT, or with iota the
 * argsort indices (positions in the row) written as VT. */
/* Row r of a request of equal rows starts at r * len; of segments (SEG 1),
 * segment g = r (or with use_ids, the launch's size class, g = ids[at + r])
 * starts at off[g] and holds off[g + 1] - off[g] keys (at most P: the host
 * checked the offsets, a private copy, made ids from them and sized P to
 * the class's longest). */
#define BI_ROW(SEG, row, rows, len, off, ids, at, use_ids, st, ln)                      \
    ulong st = 0;                                                                       \
    uint ln = 0;                                                                        \
    if ((row) < (rows)) {                                                               \
        const ulong g_ = SEG && (use_ids) ? (ids)[(at) + (row)] : (row);                \
        st = SEG ? (off)[g_] : (row) * (len);                                           \
        ln = SEG ? (uint)((off)[g_ + 1] - st) : (len);                                  \
    }

#define DEF_BITONIC(NAME, SEG, KW, KT, VW, VT)                                          \
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                                \
void bitonic_##NAME##_k##KW##_v##VW(__global const KT *kin, __global KT *kout,          \
                                    __global const VT *vin, __global VT *vout,          \
                                    ulong rows, uint len, uint kind, uint desc,         \
                                    uint iota, __global const ulong *off,               \
                                    __global const ulong *ids, ulong at, uint use_ids)  \
{                                                                                       \
    __local KT lk[BI_LOCAL];                                                            \
    __local ushort li[BI_LOCAL];                                                        \
    const uint lid = get_local_id(0);                                                   \
    const ulong row0 = (ulong)get_group_id(0) * BI_ROWS;                                \
    const KT top = ~(KT)0;                                                              \
    for (uint e = 0; e < BI_EACH; e++) {                                                \
        const uint t = e * WG + lid, pos = t & (P - 1);                                 \
        const ulong row = row0 + t / P;                                                 \
        BI_ROW(SEG, row, rows, len, off, ids, at, use_ids, st, ln)                      \
        KT k = top;                                                                     \
        ushort i = 0xffff;                                                              \
        if (pos < ln) {                                                                 \
            k = gs_enc##KW(kin[st + pos], kind, desc);                                  \
            i = (ushort)pos;                                                            \
        }                                                                               \
        lk[BI_AT(t)] = k;                                                               \
        li[BI_AT(t)] = i;                                                               \
    }                                                                                   \
    barrier(CLK_LOCAL_MEM_FENCE);                                                       \
    /* merge kl joins runs of 2^kl, its stage jl pairs keys 2^jl apart; the             \
     * direction of a pair alternates by runs of 2^kl, except in a row's last           \
     * merge (kl = LP), where every row ascends */                                      \
    uint kl = 1, jl = 0;                                                                \
    _Pragma("unroll")                                                                   \
    for (uint s = 0; s < BI_STEPS; s++) {                                               \
        if (jl >= LC) {                 /* a stage through local memory */              \
            const uint j = 1u << jl;                                                    \
            for (uint q = 0; q < BI_PAIRS; q++) {                                       \
                const uint p = q * WG + lid;                                            \
                const uint a = ((p >> jl) << (jl + 1)) | (p & (j - 1)), b = a | j;      \
                KT ka = lk[BI_AT(a)], kb = lk[BI_AT(b)];                                \
                ushort ia = li[BI_AT(a)], ib = li[BI_AT(b)];                            \
                const int up = kl == LP || !(a & (1u << kl));                           \
                const int gt = ka > kb || (ka == kb && ia > ib);                        \
                if (gt == up) {                                                         \
                    lk[BI_AT(a)] = kb;                                                  \
                    lk[BI_AT(b)] = ka;                                                  \
                    li[BI_AT(a)] = ib;                                                  \
                    li[BI_AT(b)] = ia;                                                  \
                }                                                                       \
            }                                                                           \
            jl--;                                                                       \
        } else {                        /* the stages below LC, in registers */         \
            for (uint q = 0; q < BI_RUNS; q++) {                                        \
                const uint base = (q * WG + lid) * RC;                                  \
                KT x[RC];                                                               \
                ushort y[RC];                                                           \
                _Pragma("unroll")                                                       \
                for (uint u = 0; u < RC; u++) {                                         \
                    x[u] = lk[BI_AT(base + u)];                                         \
                    y[u] = li[BI_AT(base + u)];                                         \
                }                                                                       \
                _Pragma("unroll")                                                       \
                for (uint r = LC; r-- > 0;) {                                           \
                    if (r < kl) {                                                       \
                        _Pragma("unroll")                                               \
                        for (uint u = 0; u < RC; u++) {                                 \
                            if (!(u & (1u << r))) {                                     \
                                const uint w = u | (1u << r);                           \
                                const int up = kl == LP || !((base + u) & (1u << kl));  \
                                BI_CX(KT, x[u], y[u], x[w], y[w], up)                     \
                            }                                                           \
                        }                                                               \
                    }                                                                   \
                }                                                                       \
                _Pragma("unroll")                                                       \
                for (uint u = 0; u < RC; u++) {                                         \
                    lk[BI_AT(base + u)] = x[u];                                         \
                    li[BI_AT(base + u)] = y[u];                                         \
                }                                                                       \
            }                                                                           \
            kl++;                                                                       \
            jl = kl - 1;                                                                \
        }                                                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                   \
    }                                                                                   \
    const KT nan_code = desc ? (KT)0 : top;                                             \
    for (uint e = 0; e < BI_EACH; e++) {                                                \
        const uint t = e * WG + lid, pos = t & (P - 1);                                 \
        const ulong row = row0 + t / P;                                                 \
        BI_ROW(SEG, row, rows, len, off, ids, at, use_ids, st, ln)                      \
        if (pos < ln) {                                                                 \
            /* a real key: the padding sorts behind the row's ln keys */                \
            const ushort i = li[BI_AT(t)];                                              \
            const ulong at = st + pos, src = st + i;                                    \
            const KT c = lk[BI_AT(t)];                                                  \
            kout[at] = kind == GS_KIND_FLOAT && c == nan_code ? kin[src]                \
                                                              : gs_dec##KW(c, kind, desc); \
            if (VW)                                                                     \
                vout[at] = iota ? (VT)i : vin[src];                                     \
        }                                                                               \
    }                                                                                   \
}

/* per key width: no values, 32-bit and 64-bit values (or argsort indices);
 * equal rows, or with BI_SEGS 1 segments (a program of one or the other:
 * each kernel's network is unrolled, and PoCL's build time grows with
 * them) */
#if BI_SEGS
#define DEF_BITONIC_W(KW, KT, KS)                                                       \
    DEF_BITONIC(segs, 1, KW, KT, 0, uint)                                               \
    DEF_BITONIC(segs, 1, KW, KT, 32, uint)                                              \
    DEF_BITONIC(segs, 1, KW, KT, 64, ulong)
#else
#define DEF_BITONIC_W(KW, KT, KS)                                                       \
    DEF_BITONIC(rows, 0, KW, KT, 0, uint)                                               \
    DEF_BITONIC(rows, 0, KW, KT, 32, uint)                                              \
    DEF_BITONIC(rows, 0, KW, KT, 64, ulong)
#endif
GS_KEY_WIDTHS(DEF_BITONIC_W)
