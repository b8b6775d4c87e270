/* libgsort's lexsort (gsort_lexsort, include/gsort.h): stable indices of
 * rows ordered by several key columns, each in its own order. Apart from
 * gsort.c because its request is its own (the keys packed into words,
 * gs_lex, not a gsort_request); the connection, copy space, router and
 * result helpers it shares with the other sorts come through gsort_int.h. */
#include "config.h"

#include <stdint.h>

#include "gs_client.h"
#include "gs_lex.h"
#include "gs_lexsort.h"
#include "gs_pcopy.h"
#include "gs_sort.h"
#include "gs_time.h"
#include "gs_types.h"
#include "gsort.h"
#include "gsort_int.h"

static int lex_local_sort(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    double ms = 0;
    (void)arg;
    int rc = lgs_inproc_sort(req, &ms, err);
    st->wall_ms = ms;
    return rc;
}

/* In this process: the words and the chaining scratch in the heap copy,
 * the keys read where they lie, packed on this thread. */
static int lex_local(gsort_conn *c, const gsort_lexkey *keys, const gs_lex *lx, size_t n,
                     void *idx, gs_payload pl, double *ms, gs_err *ge)
{
    size_t wb = gs_lex_word_bytes(lx), scr = gs_lexsort_scratch(lx, n);
    if (n > (SIZE_MAX - scr) / wb)
        return gs_err_set(ge, GS_ETOOBIG, "lexsort: %zu rows overflow the address space", n);
    int rc = lgs_heap_reserve(c, n * wb + scr, ge);
    if (rc)
        return rc;
    gs_lexsort_job jb = { .lx = lx, .n = n, .words = c->heap,
                          .scratch = scr ? c->heap + n * wb : NULL, .out = idx, .idx = pl,
                          .one_thread = 1 };
    for (unsigned j = 0; j < lx->nkeys; j++)
        jb.key[j] = keys[j].keys;
    gs_sort_stats st = { 0 };
    rc = gs_lexsort_run(&jb, lex_local_sort, NULL, &st, ge);
    *ms = st.wall_ms + st.pack_ms;
    return rc;
}

int gsort_lexsort(gsort_conn *c, const gsort_lexkey *keys, size_t nkeys, size_t n, void *idx,
                  gsort_values idx_kind, unsigned flags, gsort_result *res, gsort_error *err)
{
    double t0 = gs_now_ms();
    lgs_err_clear(err);
    if (res)
        lgs_result_clear(res);
    if (!c)
        return lgs_err_set(err, GSORT_EINVAL, "lexsort: no connection");
    if (!keys || nkeys < 1 || nkeys > GSORT_LEX_MAX_KEYS)
        return lgs_err_set(err, GSORT_EINVAL, "lexsort: %zu keys (1 to %d are taken)", keys ?
                           nkeys : 0, GSORT_LEX_MAX_KEYS);
    if (idx_kind != GSORT_VALUES_IDX32 && idx_kind != GSORT_VALUES_IDX64)
        return lgs_err_set(err, GSORT_EINVAL, "lexsort: idx_kind must be GSORT_VALUES_IDX32 "
                           "or GSORT_VALUES_IDX64");
    if (idx_kind == GSORT_VALUES_IDX32 && n > (size_t)UINT32_MAX + 1)
        return lgs_err_set(err, GSORT_ETOOBIG, "lexsort: %zu rows do not fit 32-bit indices",
                           n);
    if (flags & ~(unsigned)(GSORT_INLINE | GSORT_NO_LOCAL))
        return lgs_err_set(err, GSORT_EINVAL, "lexsort: flags other than GSORT_INLINE and "
                           "GSORT_NO_LOCAL (each key has its own order; it is stable)");
    if (n && !idx)
        return lgs_err_set(err, GSORT_EINVAL, "lexsort: idx is NULL for %zu rows", n);
    gs_lex lx = { .nkeys = (unsigned)nkeys };
    for (size_t j = 0; j < nkeys; j++) {
        if ((int)keys[j].type < 0 || !gs_lex_dt_row((int)keys[j].type))
            return lgs_err_set(err, GSORT_EINVAL, "lexsort: key %zu has an unknown type %d", j,
                               (int)keys[j].type);
        if (n && !keys[j].keys)
            return lgs_err_set(err, GSORT_EINVAL, "lexsort: key %zu is NULL for %zu rows", j,
                               n);
        lx.key[j].dt = (int)keys[j].type;
        lx.key[j].desc = keys[j].descending != 0;
    }
    gs_payload pl = idx_kind == GSORT_VALUES_IDX32 ? GS_PL_IDX32 : GS_PL_IDX64;
    gs_err ge;
    gs_err_clear(&ge);
    uint64_t lb;
    int rc = gs_lex_layout(&lx, n, &lb, &ge);
    size_t isz = gs_payload_size(pl);
    if (rc == 0 && (lb > SIZE_MAX - 8 || n > (SIZE_MAX - lb) / isz))
        rc = gs_err_set(&ge, GS_ETOOBIG, "lexsort: %zu rows overflow the address space", n);
    if (rc)
        return lgs_err_from(err, rc, &ge);
    if (n == 0) {
        if (res)
            lgs_fill_local(res, 0, t0);
        return 0;
    }
    /* here where an argsort of the words would be (the router's shape) */
    gsort_request rq;
    gsort_request_init(&rq);
    rq.flags = flags;
    unsigned shape = lgs_shape(GSORT_U64, idx_kind, 0, 1);
    if (lgs_local_allowed(c, &rq)) {
        if (c->xo_ms == 0 || t0 - c->xo_ms > LGS_XO_REFRESH_MS)
            lgs_crossover_refresh(c, t0);
        if (lgs_router_choose(c->router, shape, n)) {
            double ms = 0;
            if (lex_local(c, keys, &lx, n, idx, pl, &ms, &ge) == 0) {
                if (!lgs_router_local_only(n))
                    lgs_router_record(c->router, shape, n, 1, gs_now_ms() - t0);
                if (res)
                    lgs_fill_local(res, ms, t0);
                return 0;
            }
            gs_err_clear(&ge);      /* out of memory here: the daemon may have it */
        }
    }
    if ((rc = lgs_conn_ready(c, err)) != 0)
        return rc;
    size_t need = (size_t)lb + n * isz;
    int inl = (flags & GSORT_INLINE) || c->no_memfd;
    char *base;
    if ((rc = lgs_copy_space(c, need, inl, &base, &inl, &ge)) != 0)
        return lgs_err_from(err, rc, &ge);
    for (size_t j = 0; j < nkeys; j++)
        gs_pcopy(base + lx.key[j].offset, keys[j].keys,
                 n * gs_lex_dt_row(lx.key[j].dt)->bytes);
    gs_client_sort s = {
        .shape = { .dtype = GS_DT_U64, .payload = pl, .stable = 1 },
        .n = n, .keys = base, .values = base + lb, .device = -1,
        .shm = inl ? NULL : &c->stage, .lex = &lx,
    };
    gs_client_result r;
    rc = gs_client_sort_run(c->cl, &s, &r, &ge);
    if (rc)
        return lgs_err_from(err, rc, &ge);
    gs_pcopy(idx, base + lb, n * isz);
    if (!lgs_router_local_only(n) && lgs_local_allowed(c, &rq))
        lgs_router_record(c->router, shape, n, 0, gs_now_ms() - t0);
    if (res)
        lgs_fill_result(res, &r, !inl, t0);
    return 0;
}
