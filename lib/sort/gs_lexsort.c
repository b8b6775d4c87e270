/* A lexsort run (gs_lexsort.h): packing on the host pool, one argsort per
 * group through the caller's function, permutations chained. */
#include "config.h"
#include "gs_lexsort.h"

#include "gs_hostpool.h"
#include "gs_time.h"

#define PACK_TASK ((size_t)1 << 16)     /* rows a packing task takes */

typedef struct pack_job {
    const gs_lexsort_job *jb;
    unsigned first, count, bits;        /* the group */
    unsigned wb;                        /* word bytes */
    const void *perm;                   /* NULL: rows in order; else the row of place i */
    unsigned isz;                       /* perm's index bytes */
} pack_job;

/* words[i] of key j (type T, constant in each case so that the encoding
 * folds) or-ed in at `sh`; `set`: the group's first key assigns. */
#define PACK_LOOP(W, T)                                                        \
    do {                                                                       \
        W *w = (W *)pj->jb->words;                                             \
        for (size_t i = lo; i < hi; i++) {                                     \
            size_t r = !pj->perm ? i : pj->isz == 4 ? ((const uint32_t *)pj->perm)[i] \
                                                    : (size_t)((const uint64_t *)pj->perm)[i]; \
            W v = (W)(gs_lex_enc(T, desc, k, r) << sh);                        \
            w[i] = set ? v : (W)(w[i] | v);                                    \
        }                                                                      \
    } while (0)

#define PACK_TYPES(W)                                                          \
    switch (t) {                                                               \
    case GS_LX_BOOL: PACK_LOOP(W, GS_LX_BOOL); break;                          \
    case GS_LX_U8: PACK_LOOP(W, GS_LX_U8); break;                              \
    case GS_LX_I8: PACK_LOOP(W, GS_LX_I8); break;                              \
    case GS_LX_U16: PACK_LOOP(W, GS_LX_U16); break;                            \
    case GS_LX_I16: PACK_LOOP(W, GS_LX_I16); break;                            \
    case GS_LX_F16: PACK_LOOP(W, GS_LX_F16); break;                            \
    case GS_LX_U32: PACK_LOOP(W, GS_LX_U32); break;                            \
    case GS_LX_I32: PACK_LOOP(W, GS_LX_I32); break;                            \
    case GS_LX_F32: PACK_LOOP(W, GS_LX_F32); break;                            \
    case GS_LX_U64: PACK_LOOP(W, GS_LX_U64); break;                            \
    case GS_LX_I64: PACK_LOOP(W, GS_LX_I64); break;                            \
    default: PACK_LOOP(W, GS_LX_F64); break;                                   \
    }

static void pack_task(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    const pack_job *pj = arg;
    const gs_lex *lx = pj->jb->lx;
    size_t lo = task * PACK_TASK, hi = lo + PACK_TASK;
    if (hi > pj->jb->n)
        hi = pj->jb->n;
    unsigned at = pj->bits;
    for (unsigned j = pj->first; j < pj->first + pj->count; j++) {
        int t = lx->key[j].dt, desc = lx->key[j].desc, set = j == pj->first;
        at -= gs_lex_dt_row(t)->bits;
        const unsigned sh = at;
        const void *k = pj->jb->key[j];
        if (pj->wb == 4)
            PACK_TYPES(uint32_t)
        else
            PACK_TYPES(uint64_t)
    }
}

static void pack(const pack_job *pj)
{
    gs_hostpool_run((pj->jb->n + PACK_TASK - 1) / PACK_TASK, pj->jb->one_thread, pack_task,
                    (void *)pj);
}

static unsigned idx_bytes(size_t n)
{
    return n - 1 <= UINT32_MAX ? 4 : 8;
}

size_t gs_lexsort_scratch(const gs_lex *lx, size_t n)
{
    unsigned first[GS_LEX_MAX_KEYS], count[GS_LEX_MAX_KEYS], bits[GS_LEX_MAX_KEYS];
    if (n == 0 || gs_lex_groups(lx, first, count, bits) < 2)
        return 0;
    return 2 * n * idx_bytes(n);
}

static uint64_t idx_get(const void *a, unsigned isz, size_t i)
{
    return isz == 4 ? ((const uint32_t *)a)[i] : ((const uint64_t *)a)[i];
}

static void idx_put(void *a, unsigned isz, size_t i, uint64_t v)
{
    if (isz == 4)
        ((uint32_t *)a)[i] = (uint32_t)v;
    else
        ((uint64_t *)a)[i] = v;
}

int gs_lexsort_run(const gs_lexsort_job *jb, gs_lexsort_fn fn, void *arg, gs_sort_stats *st,
                   gs_err *err)
{
    const size_t n = jb->n;
    if (n == 0)
        return 0;
    unsigned first[GS_LEX_MAX_KEYS], count[GS_LEX_MAX_KEYS], bits[GS_LEX_MAX_KEYS];
    unsigned ng = gs_lex_groups(jb->lx, first, count, bits);
    unsigned wb = gs_lex_word_bytes(jb->lx), isz = idx_bytes(n);
    unsigned osz = jb->idx == GS_PL_IDX32 ? 4 : 8;
    gs_payload ipl = isz == 4 ? GS_PL_IDX32 : GS_PL_IDX64;
    void *perm = jb->scratch, *tmp = ng > 1 ? (char *)jb->scratch + n * isz : NULL;
    for (unsigned g = 0; g < ng; g++) {
        double t0 = gs_now_ms();
        pack_job pj = { jb, first[g], count[g], bits[g], wb, g ? perm : NULL, isz };
        pack(&pj);
        st->pack_ms += gs_now_ms() - t0;
        gs_sort_req req = {
            .shape = { .dtype = wb == 4 ? GS_DT_U32 : GS_DT_U64, .stable = 1,
                       .payload = ng == 1 ? jb->idx : ipl },
            .n = n, .keys = jb->words, .values = ng == 1 ? jb->out : g == 0 ? perm : tmp };
        gs_sort_stats one = { 0 };
        int rc = fn(arg, &req, &one, err);
        gs_sort_stats_add(st, &one);
        st->wall_ms += one.wall_ms;
        st->chunks += one.chunks;
        st->merge_ms += one.merge_ms;
        if (rc < 0) {
            st->output_touched = 0;     /* the keys were only read */
            return rc;
        }
        if (g == 0)
            continue;
        /* place i holds row perm[tmp[i]]: composed in tmp, or into the answer */
        int last = g == ng - 1;
        for (size_t i = 0; i < n; i++) {
            uint64_t p = idx_get(tmp, isz, i);
            if (p >= n)
                return gs_err_set(err, GS_EIO, "lexsort: the sort of group %u answered "
                                  "index %llu of %zu rows", g, (unsigned long long)p, n);
            uint64_t r = idx_get(perm, isz, (size_t)p);
            if (last)
                idx_put(jb->out, osz, i, r);
            else
                idx_put(tmp, isz, i, r);
        }
        void *sw = perm;
        perm = tmp;
        tmp = sw;
    }
    return 0;
}
