/* Radix select on the device: the top k of each row (issue 38), driven by
 * lib/algos/algo_select.c. A row is cut into tiles of WG * PER keys, one
 * work-group a tile. The k-th key's encoding (kernels/keys.cl: an encoded
 * key's unsigned order is the request's order) is found one 8-bit digit at
 * a time from the top: sel_hist counts the digit of every key whose higher
 * digits equal those chosen so far, sel_pick takes the bucket holding the
 * k-th and narrows k by the keys below it. Every round reads the row whole,
 * so no candidate buffer grows with the input whatever the keys. Then
 * sel_collect takes the keys below the k-th (fewer than k) and counts each
 * tile's keys equal to it, sel_ties takes the earliest of those, as many as
 * are still wanted (ties go by position, as a stable sort leaves them), and
 * sel_order sorts the k by (encoding, position) and gathers their keys'
 * own bits, so NaN payloads survive. The keys are never written: on a CPU
 * device they may be the client's own pages (zero copy), which it can
 * rewrite while the rounds run. Every position written is a loop index
 * inside the row and every slot is bounded by k, so changed keys give a
 * wrong answer, never a wrong address; sel_order sets the race flag where
 * the counts no longer agree (safe on client pages as built).
 * A round whose bucket holds exactly the keys still wanted ends the rounds
 * for its row (sel_pick marks it): every key of that prefix is in the
 * answer, so later rounds skip the row (for random keys the last round or
 * two: one read of the row fewer) and sel_collect and sel_ties compare
 * the keys' encodings down to that digit only.
 * Per row the state is pre[row] (the digits chosen, the k-th key's
 * encoding at the end) and st[row * 4 + ...]: the number still wanted at
 * the chosen prefix, the keys below the prefix, the slots sel_collect
 * handed out, and the round that ended the search (its digit's shift + 1;
 * 0 while it goes on). The loops with a barrier have a
 * constant trip count (PoCL miscompiles barriers in run-time loops, see
 * radix.cl). Compile-time: WG (a power of two), PER keys a work-item a
 * tile, KMAX the largest k. */

#ifndef WG
#error "WG must be defined"
#endif
#ifndef PER
#error "PER must be defined"
#endif
#ifndef KMAX
#error "KMAX must be defined"
#endif

#define SEL_TILE ((uint)WG * PER)
#define SEL_BINS 256u
/* sel_hist's counts in this many copies, a work-item adding to copy lid %
 * SEL_COPIES (interleaved, so the copies of one digit lie in different
 * banks): keys bunched in a few digits (floats' top byte) would otherwise
 * queue on one counter */
#define SEL_COPIES 8u
#define SEL_WANT 0
#define SEL_LESS 1
#define SEL_GIVEN 2
#define SEL_DONE 3

/* The bits of an encoding that decide a row's answer: down to the digit of
 * the round that ended its search (st[SEL_DONE] = its shift + 1), every
 * bit when the rounds ran to the last digit */
#define SEL_MASK(KT, done) ((done) ? (KT)~(((KT)1 << ((done) - 1u)) - (KT)1) : (KT)~(KT)0)

/* hist cleared, every row's state set (nothing chosen, k wanted), every
 * slot of out marked unfilled (a position no row has) */
kernel void sel_init(global uint *hist, global ulong *pre, global uint *st, global uint *out,
                     uint k, uint rows)
{
    const uint i = get_global_id(0);
    if (i < rows * SEL_BINS)
        hist[i] = 0u;
    if (i < rows * k)
        out[i] = 0xffffffffu;
    if (i < rows) {
        pre[i] = 0ul;
        st[i * 4u + SEL_WANT] = k;
        st[i * 4u + SEL_LESS] = 0u;
        st[i * 4u + SEL_GIVEN] = 0u;
        st[i * 4u + SEL_DONE] = 0u;
    }
}

/* The bucket holding the wanted key: one group a row; the row's counts
 * cleared for the next round. Counts that no longer add up (keys
 * rewritten between rounds) end at the top bucket with slots left
 * unfilled, which sel_order notices. */
kernel void sel_pick(global uint *hist, global ulong *pre, global uint *st, uint shift)
{
    local uint h[SEL_BINS];
    const uint row = get_group_id(0), lid = get_local_id(0);
    global uint *hr = hist + (ulong)row * SEL_BINS;
    for (uint d = lid; d < SEL_BINS; d += WG) {
        h[d] = hr[d];
        hr[d] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* a row whose search ended keeps its state (its counts are zero: no
     * early return, PoCL's barriers want every work-item at each) */
    if (lid == 0 && !st[row * 4u + SEL_DONE]) {
        const uint want = st[row * 4u + SEL_WANT];
        uint below = 0u, b = SEL_BINS - 1u;
        for (uint d = 0; d < SEL_BINS; d++) {
            if (below + h[d] >= want) {
                b = d;
                break;
            }
            below += h[d];
        }
        pre[row] |= (ulong)b << shift;
        st[row * 4u + SEL_WANT] = want - min(below, want);
        st[row * 4u + SEL_LESS] += below;
        if (h[b] == want - min(below, want) && shift)
            st[row * 4u + SEL_DONE] = shift + 1u;
    }
}

/* The tile of group g: row g / gpr, keys [lo, hi) of it */
#define SEL_TILE_OF                                                              \
    const uint g = get_group_id(0), row = g / gpr, part = g % gpr;               \
    const uint lo = part * SEL_TILE, hi = min(len, lo + SEL_TILE);               \
    const ulong base = (ulong)row * len;

#define SEL_KERNELS(KW, KT, BYTES)                                               \
/* count the digit at `shift` of the keys matching pre[row] above it         \
 * (hmask: the bits above the digit) */                                       \
kernel void sel_hist_k##KW(global const KT *keys, uint len, uint gpr, uint kind,  \
                           uint desc, uint shift, KT hmask,                       \
                           global const ulong *pre, global uint *hist,           \
                           global const uint *st)                                \
{                                                                                \
    local uint h[SEL_BINS * SEL_COPIES];                                         \
    SEL_TILE_OF                                                                  \
    const uint lid = get_local_id(0), cp = lid % SEL_COPIES;                     \
    /* a row whose search ended reads nothing (the barriers stay: PoCL) */     \
    const uint end = st[row * 4u + SEL_DONE] ? lo : hi;                          \
    for (uint d = lid; d < SEL_BINS * SEL_COPIES; d += WG)                       \
        h[d] = 0u;                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    const KT p = (KT)pre[row];                                                   \
    for (uint i = lo + lid; i < end; i += WG) {                                  \
        const KT e = gs_enc##KW(keys[base + i], kind, desc);                     \
        if (((e ^ p) & hmask) == 0)                                              \
            atomic_inc(&h[((uint)(e >> shift) & (SEL_BINS - 1u)) * SEL_COPIES + cp]); \
    }                                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    global uint *hr = hist + (ulong)row * SEL_BINS;                              \
    for (uint d = lid; d < SEL_BINS; d += WG) {                                  \
        uint c = 0u;                                                             \
        for (uint q = 0; q < SEL_COPIES; q++)                                    \
            c += h[d * SEL_COPIES + q];                                          \
        if (c)                                                                   \
            atomic_add(&hr[d], c);                                               \
    }                                                                            \
}                                                                                \
                                                                                 \
/* the keys below the k-th, each to a slot of its own (fewer than k), and   \
 * eqc[g]: the tile's keys equal to it */                                     \
kernel void sel_collect_k##KW(global const KT *keys, uint len, uint gpr,         \
                              uint kind, uint desc, uint k,                      \
                              global const ulong *pre, global uint *st,          \
                              global uint *out, global uint *eqc)                \
{                                                                                \
    local uint eq;                                                               \
    SEL_TILE_OF                                                                  \
    const uint lid = get_local_id(0);                                            \
    if (lid == 0)                                                                \
        eq = 0u;                                                                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    const KT t = (KT)pre[row], m = SEL_MASK(KT, st[row * 4u + SEL_DONE]);       \
    uint mine = 0u;                                                              \
    for (uint i = lo + lid; i < hi; i += WG) {                                   \
        const KT e = gs_enc##KW(keys[base + i], kind, desc) & m;                 \
        if (e < t) {                                                             \
            const uint s = atomic_inc(&st[row * 4u + SEL_GIVEN]);                \
            if (s < k)                                                           \
                out[(ulong)row * k + s] = i;                                     \
        }                                                                        \
        mine += e == t;                                                          \
    }                                                                            \
    if (mine)                                                                    \
        atomic_add(&eq, mine);                                                   \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    if (lid == 0)                                                                \
        eqc[g] = eq;                                                             \
}                                                                                \
                                                                                 \
/* the earliest keys equal to the k-th, as many as still wanted, after the  \
 * keys below it: a tile holding some, with fewer before it than wanted,    \
 * takes its own in order (each work-item a run of PER of the tile, ranked  \
 * by one group scan) */                                                     \
kernel void sel_ties_k##KW(global const KT *keys, uint len, uint gpr, uint kind, \
                           uint desc, uint k, global const ulong *pre,           \
                           global const uint *st, global uint *out,              \
                           global const uint *eqc)                               \
{                                                                                \
    local uint s[WG];                                                            \
    SEL_TILE_OF                                                                  \
    const uint lid = get_local_id(0);                                            \
    const uint want = st[row * 4u + SEL_WANT], less = st[row * 4u + SEL_LESS];   \
    uint mine = 0u, tot;                                                         \
    /* a tile without such keys (all but a few) adds nothing up */              \
    const uint upto = eqc[g] ? part : 0u;                                        \
    for (uint q = lid; q < upto; q += WG)                                        \
        mine += eqc[row * gpr + q];                                              \
    gs_nan_group_scan(mine, s, &tot);                                            \
    /* no return between the scans: barriers stay unconditional for PoCL */      \
    const uint go = tot < want && eqc[g] != 0u;                                  \
    const KT t = (KT)pre[row], m = SEL_MASK(KT, st[row * 4u + SEL_DONE]);       \
    const uint a = lo + lid * PER, b = go ? min(hi, a + PER) : 0u;               \
    uint c = 0u;                                                                 \
    for (uint i = a; i < b; i++)                                                 \
        c += (gs_enc##KW(keys[base + i], kind, desc) & m) == t;                  \
    uint at = tot + gs_nan_group_scan(c, s, &mine);                              \
    for (uint i = a; i < b && c && at < want; i++)                               \
        if ((gs_enc##KW(keys[base + i], kind, desc) & m) == t) {                 \
            if (less + at < k)                                                   \
                out[(ulong)row * k + less + at] = i;                             \
            at++;                                                                \
            c--;                                                                 \
        }                                                                        \
}                                                                                \
                                                                                 \
/* Check the row's counts (every slot given exactly once, else the race     \
 * flag), order its k by (encoding, position) where `order` (a bitonic      \
 * network over KMAX slots, the empty ones after every key: its barriers    \
 * unconditional, `order` only decides the exchanges), and gather their     \
 * keys' own bits into okeys. One group a row. */                           \
kernel void sel_order_k##KW(global const KT *keys, uint len, uint kind,          \
                            uint desc, uint k, uint order,                       \
                            global const uint *st, global uint *out,             \
                            global KT *okeys, global uint *raced)                \
{                                                                                \
    local KT e[KMAX];                                                            \
    local uint p[KMAX];                                                          \
    const uint row = get_group_id(0), lid = get_local_id(0);                     \
    const ulong base = (ulong)row * len;                                         \
    global uint *o = out + (ulong)row * k;                                       \
    if (lid == 0 && (st[row * 4u + SEL_GIVEN] != st[row * 4u + SEL_LESS] ||      \
                     st[row * 4u + SEL_LESS] + st[row * 4u + SEL_WANT] != k))    \
        atomic_or(raced, 1u);                                                    \
    for (uint i = lid; i < KMAX; i += WG) {                                      \
        const uint q = i < k ? o[i] : 0xffffffffu;                               \
        p[i] = q;                                                                \
        e[i] = i < k ? gs_enc##KW(keys[base + min(q, len - 1u)], kind, desc) : (KT)~(KT)0; \
    }                                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    _Pragma("unroll")                                                            \
    for (uint kk = 2u; kk <= KMAX; kk <<= 1) {                                   \
        _Pragma("unroll")                                                        \
        for (uint j = kk >> 1; j > 0u; j >>= 1) {                                \
            for (uint t = lid; t < KMAX / 2u; t += WG) {                         \
                const uint a = 2u * j * (t / j) + t % j, b = a + j;              \
                const int up = (a & kk) == 0u;                                   \
                const KT ea = e[a], eb = e[b];                                   \
                const uint pa = p[a], pb = p[b];                                 \
                const int gt = ea > eb || (ea == eb && pa > pb);                 \
                if (order && gt == up) {                                         \
                    e[a] = eb;                                                   \
                    e[b] = ea;                                                   \
                    p[a] = pb;                                                   \
                    p[b] = pa;                                                   \
                }                                                                \
            }                                                                    \
            barrier(CLK_LOCAL_MEM_FENCE);                                        \
        }                                                                        \
    }                                                                            \
    for (uint i = lid; i < k; i += WG) {                                         \
        const uint q = p[i];                                                     \
        if (q >= len)                                                            \
            atomic_or(raced, 1u);                                                \
        const uint qq = min(q, len - 1u);                                        \
        o[i] = qq;                                                               \
        okeys[(ulong)row * k + i] = keys[base + qq];                             \
    }                                                                            \
}

SEL_KERNELS(32, uint, 4)
SEL_KERNELS(64, ulong, 8)
