/* An out-of-core sort (gs_ooc_sort, gs_ooc.h): equal rows cut into pieces
 * of whole rows, and segments into pieces of whole segments, each sorted
 * and none merged; else the request cut into
 * pieces of chunk_n keys, each sorted by the algorithm, then either the
 * device route (two passes through the device, gs_ooc_dev.c) or the
 * host's k-way merge of the pieces (gs_ooc.c), with the host sort
 * rescuing pieces a failing device left unwritten. This file sits above
 * both, so neither calls back into the other. */
#include "config.h"
#include "gs_ooc.h"
#include "gs_ooc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_log.h"
#include "gs_time.h"

/* Equal rows (issue 38): pieces of whole rows, as many as chunk_n keys
 * hold, each sorted by the algorithm in turn; a row is sorted on its own,
 * so nothing is merged. A row longer than chunk_n is GS_ETOOBIG. */
static int rows_in_pieces(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                          const gs_params *p, size_t chunk_n, gs_sort_stats *st, gs_err *err)
{
    double t0 = gs_now_ms();
    size_t rows = (size_t)req->shape.rows, len = req->n / rows, per = chunk_n / len;
    if (per == 0)
        return gs_err_set(err, GS_ETOOBIG, "%s: a row of %zu keys does not fit the device at "
                          "once (%zu keys do), and a row is not cut", a->name, len, chunk_n);
    size_t npieces = (rows + per - 1) / per;
    int rc = 0;
    for (size_t c = 0; c < npieces && rc == 0; c++) {
        size_t r0 = c * per, nr = rows - r0 < per ? rows - r0 : per;
        gs_sort_req piece = gs_ooc_piece(req, r0 * len, nr * len);
        gs_sort_stats cs;
        rc = gs_sort_run(a, ctx, &piece, p, &cs, err);
        gs_sort_stats_add(st, &cs);
        st->output_touched |= cs.output_touched;
        if (rc < 0)
            gs_err_prefix(err, "out-of-core piece %zu of %zu (rows %zu..%zu): ", c + 1, npieces,
                          r0, r0 + nr - 1);
    }
    st->chunks = (unsigned)npieces;
    st->wall_ms = gs_now_ms() - t0;
    if (rc == 0)
        GS_DEBUG("%s: sorted %zu rows of %zu keys out of core, %zu pieces of up to %zu rows "
                 "(%.3f ms)", a->name, rows, len, npieces, per, st->wall_ms);
    return rc;
}

/* Segments (issue 38): pieces of whole segments, each as many as fit
 * chunk_n keys, their offsets rebased to the piece (from the request's
 * checked private copy), sorted by the algorithm in turn; nothing merged.
 * A segment longer than chunk_n is GS_ETOOBIG, before anything is sorted. */
static int segs_in_pieces(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                          const gs_params *p, size_t chunk_n, gs_sort_stats *st, gs_err *err)
{
    double t0 = gs_now_ms();
    const uint64_t *o = req->offsets;
    const size_t S = (size_t)req->shape.segments;
    size_t at, most = gs_sort_req_longest(req, &at);
    if (most > chunk_n)
        return gs_err_set(err, GS_ETOOBIG, "%s: segment %zu, the longest (%zu keys), does not "
                          "fit the device at once (%zu keys do), and a segment is not cut",
                          a->name, at, most, chunk_n);
    uint64_t *po = malloc((S + 1) * sizeof *po);
    if (!po)
        return gs_err_set(err, GS_ENOMEM, "out-of-core sort: out of memory for %zu offsets", S);
    int rc = 0;
    size_t g = 0, npieces = 0;
    while (g < S && rc == 0) {
        const size_t first = g;
        while (g < S && o[g + 1] - o[first] <= chunk_n)
            g++;
        gs_sort_req piece = gs_ooc_seg_piece(req, first, g - first, po);
        gs_sort_stats cs;
        npieces++;
        rc = gs_sort_run(a, ctx, &piece, p, &cs, err);
        gs_sort_stats_add(st, &cs);
        st->output_touched |= cs.output_touched;
        if (rc < 0)
            gs_err_prefix(err, "out-of-core piece %zu (segments %zu..%zu): ", npieces, first,
                          g - 1);
    }
    free(po);
    st->chunks = (unsigned)npieces;
    st->wall_ms = gs_now_ms() - t0;
    if (rc == 0)
        GS_DEBUG("%s: sorted %zu segments out of core, %zu pieces of up to %zu keys (%.3f ms)",
                 a->name, S, npieces, chunk_n, st->wall_ms);
    return rc;
}

int gs_ooc_sort(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req,
                const gs_params *p, size_t chunk_n, gs_sort_stats *st, gs_err *err)
{
    double t0 = gs_now_ms();
    memset(st, 0, sizeof *st);
    if (chunk_n == 0 || chunk_n >= req->n)
        return gs_sort_run(a, ctx, req, p, st, err);
    if (req->shape.rows > 1 && !req->shape.topk)
        return rows_in_pieces(a, ctx, req, p, chunk_n, st, err);
    if (req->shape.segments)
        return segs_in_pieces(a, ctx, req, p, chunk_n, st, err);
    gs_sort_req whole;
    if (req->shape.topk) {      /* pieces sort whole: the merged first k are the top k */
        whole = gs_sort_req_whole(req);
        req = &whole;
    }
    unsigned lanes;
    if (gs_ooc_device_route(a, ctx, &lanes))
        return gs_ooc_twopass(a, ctx, req, p, chunk_n, lanes, st, err);
    size_t npieces = (req->n + chunk_n - 1) / chunk_n;
    size_t *bounds = malloc((npieces + 1) * sizeof *bounds);
    if (!bounds)
        return gs_err_set(err, GS_ENOMEM, "out-of-core sort: out of memory");
    int rc = 0;
    unsigned char *sorted = calloc(npieces, 1);
    if (!sorted) {
        free(bounds);
        return gs_err_set(err, GS_ENOMEM, "out-of-core sort: out of memory");
    }
    for (size_t c = 0; c < npieces; c++)
        bounds[c] = c * chunk_n;
    for (size_t c = 0; c < npieces && rc == 0; c++) {
        size_t lo = c * chunk_n, len = req->n - lo < chunk_n ? req->n - lo : chunk_n;
        gs_sort_req piece = gs_ooc_piece(req, lo, len);
        gs_sort_stats cs;
        rc = gs_sort_run(a, ctx, &piece, p, &cs, err);
        gs_sort_stats_add(st, &cs);
        st->output_touched = cs.output_touched;
        if (rc < 0)
            gs_err_prefix(err, "out-of-core piece %zu of %zu (%zu keys): ", c + 1, npieces, len);
        else
            sorted[c] = 1;
    }
    bounds[npieces] = req->n;
    st->chunks = (unsigned)npieces;
    if (rc == 0) {
        rc = gs_ooc_merge(req, bounds, npieces, st, err);
    } else if (!st->output_touched) {
        char why[GS_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = gs_ooc_rescue(req, bounds, npieces, sorted, why, st, err);
        st->output_touched = rc < 0;   /* permuted, indices lost: not to be sorted again */
    }
    free(sorted);
    free(bounds);
    st->wall_ms = gs_now_ms() - t0;
    if (rc == 0)
        GS_DEBUG("%s: sorted %zu %s out of core, %zu pieces of %zu, merged in %.3f ms (%.3f ms "
                 "in all)", a->name, req->n, gs_dtype_name(req->shape.dtype), npieces, chunk_n,
                 st->merge_ms, st->wall_ms);
    return rc;
}
