/* Device-side NaN payload saving (gs_clnan.h): count the NaNs per tile and
 * whether any is not canonical (one kernel), read the counts back, turn
 * them into offsets on the host, and save the patterns in input order (a
 * second kernel). Only the first kernel runs when no NaN needs keeping:
 * one extra read of the keys on the device and a read-back of one word per
 * 4096 keys, against a host pass over every key. */
#include "config.h"
#include "gs_clnan.h"

#include <stdio.h>
#include <stdlib.h>

#include "gs_cl.h"
#include "gs_keys.h"

#define NAN_EPT 16      /* GS_NAN_EPT in kernels/keys.cl */

/* Launch without marking the caller's arrays touched: these kernels only
 * read the keys, so a failure after them still leaves the input intact for
 * a fallback. */
static int launch_ro(gs_clrun *r, cl_kernel k, const char *name, size_t groups, size_t wg,
                     gs_err *err)
{
    int before = r->touched ? *r->touched : 0;
    int rc = gs_clrun_launch(r, k, name, groups, wg, err);
    if (r->touched)
        *r->touched = before;
    return rc;
}

int gs_clnan_save(gs_clrun *r, cl_program prog, size_t wg, cl_mem keys, const gs_sort_req *req,
                  gs_clnan *s, gs_err *err)
{
    s->count = 0;
    s->saved = NULL;
    s->hoff = NULL;
    if (!gs_keys_nan_on_device(req))
        return 0;
    const size_t n = req->n, ks = gs_dtype_size(req->shape.dtype);
    const size_t tile = wg * NAN_EPT, ntiles = (n + tile - 1) / tile;
    const int kw = (int)ks * 8;
    char kn_count[32], kn_save[32];
    snprintf(kn_count, sizeof kn_count, "gs_nan_count_k%d", kw);
    snprintf(kn_save, sizeof kn_save, "gs_nan_save_k%d", kw);
    cl_kernel kc = NULL, kv = NULL;
    cl_mem tc;
    int rc;
    if ((rc = gs_clrun_kernel(r, prog, kn_count, wg, &kc, err)) ||
        (rc = gs_clrun_buffer(r, (ntiles + 1) * 4, "NaN counts", &tc, err)))
        goto out;
    s->hoff = calloc(ntiles + 1, sizeof *s->hoff);
    if (!s->hoff) {
        rc = gs_err_set(err, GS_ENOMEM, "%s: out of memory (NaN counts)", r->algo);
        goto out;
    }
    cl_command_queue q = r->q;
    const cl_uint un = (cl_uint)n, unt = (cl_uint)ntiles;
    /* the odd-NaN counter, tcount[ntiles], starts at zero: the whole
     * buffer is written from the zeroed host copy (a write of that word
     * alone leaves it uninitialized to Oclgrind 21.10) */
    cl_int crc = clEnqueueWriteBuffer(q, tc, CL_FALSE, 0, (ntiles + 1) * 4, s->hoff, 0, NULL,
                                      NULL);
    if (crc != CL_SUCCESS) {
        rc = gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "%s: NaN counter", r->algo);
        goto out;
    }
    gs_karg ac[] = { GS_KARG(keys), GS_KARG(un), GS_KARG(unt), GS_KARG(tc) };
    if ((rc = gs_clrun_args(kc, kn_count, ac, 4, err)) ||
        (rc = launch_ro(r, kc, kn_count, ntiles, wg, err)))
        goto out;
    crc = clEnqueueReadBuffer(q, tc, CL_TRUE, 0, (ntiles + 1) * 4, s->hoff, 0, NULL, NULL);
    if (crc != CL_SUCCESS) {
        rc = gs_cl_fail(err, "clEnqueueReadBuffer", crc, "%s: NaN counts", r->algo);
        goto out;
    }
    if (s->hoff[ntiles] == 0)
        goto out;       /* no NaN, or only canonical ones: nothing to keep */
    size_t total = 0;
    for (size_t t = 0; t < ntiles; t++) {
        cl_uint c = s->hoff[t];
        s->hoff[t] = (cl_uint)total;
        total += c;
    }
    s->hoff[ntiles] = (cl_uint)total;   /* the last tile's end (hostile kernels) */
    if ((rc = gs_clrun_kernel(r, prog, kn_save, wg, &kv, err)) ||
        (rc = gs_clrun_buffer(r, total * ks, "NaN patterns", &s->saved, err)))
        goto out;
    /* in-order queue: the offsets are written before the kernel reads them,
     * and s->hoff lives until gs_clnan_free, after the queue has finished;
     * built for client pages (GS_HOSTILE) a tile writes exactly [toff[g],
     * toff[g + 1]), whatever NaNs it finds there now (kernels/keys.cl) */
    crc = clEnqueueWriteBuffer(q, tc, CL_FALSE, 0, (ntiles + 1) * 4, s->hoff, 0, NULL, NULL);
    if (crc != CL_SUCCESS) {
        rc = gs_cl_fail(err, "clEnqueueWriteBuffer", crc, "%s: NaN offsets", r->algo);
        goto out;
    }
    gs_karg av[] = { GS_KARG(keys), GS_KARG(un), GS_KARG(tc), GS_KARG(s->saved) };
    if ((rc = gs_clrun_args(kv, kn_save, av, 4, err)) ||
        (rc = launch_ro(r, kv, kn_save, ntiles, wg, err)))
        goto out;
    s->count = total;
out:
    /* an enqueued kernel keeps what it needs */
    gs_clrun_kernel_done(r, prog, kn_count, kc);
    gs_clrun_kernel_done(r, prog, kn_save, kv);
    return rc;
}

int gs_clnan_restore(gs_clrun *r, const gs_clnan *s, cl_mem sorted, const gs_sort_req *req,
                     gs_err *err)
{
    if (!s->count)
        return 0;
    const size_t ks = gs_dtype_size(req->shape.dtype);
    const size_t first = req->shape.descending ? 0 : req->n - s->count;
    cl_int crc = clEnqueueCopyBuffer(r->q, s->saved, sorted, 0, first * ks,
                                     s->count * ks, 0, NULL, NULL);
    if (crc != CL_SUCCESS)
        return gs_cl_fail(err, "clEnqueueCopyBuffer", crc, "%s: NaN patterns", r->algo);
    return 0;
}

void gs_clnan_free(gs_clnan *s)
{
    free(s->hoff);
    s->hoff = NULL;
}
