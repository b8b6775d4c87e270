/* The device frame (gs_devrun.h): the steps of one device sort around an
 * algorithm's kernels, so that every device algorithm uploads, keeps NaN
 * patterns, checks for races, writes back and times the same way. */
#include "config.h"
#include "gs_devrun.h"

#include <string.h>

#include "gs_cl.h"
#include "gs_time.h"

int gs_devrun_kernel(gs_devrun *d, const char *name, cl_kernel *out, gs_err *err)
{
    *out = NULL;
    if (d->nkern == GS_DEVRUN_KERNELS)
        return gs_err_set(err, GS_EINVAL, "%s: more than %d kernels in one sort", d->cr.algo,
                          GS_DEVRUN_KERNELS);
    int rc = gs_clrun_kernel(&d->cr, d->prog, name, d->wg, out, err);
    if (*out) {                       /* also when refused: it was made */
        d->kname[d->nkern] = name;
        d->kprog[d->nkern] = d->prog;
        d->kern[d->nkern++] = *out;
    }
    return rc;
}

/* The arrays to sort from, and the second buffers: the caller's arrays
 * where the device adopts them, else uploads (argsort's indices are made
 * by the kernels, so none). */
static int inputs(gs_devrun *d, const gs_devrun_ops *ops, gs_err *err)
{
    gs_clrun *cr = &d->cr;
    const size_t kb = d->n * d->ks, vb = d->n * d->vs;
    const char *k2 = ops->second[0] ? ops->second[0] : "keys (second)";
    const char *v2 = ops->second[1] ? ops->second[1] : "values (second)";
    int rc;
    if ((rc = gs_clrun_input(cr, d->req->keys, kb, 1, "keys", &d->keys[0], err)) ||
        (d->second && (rc = gs_clrun_buffer(cr, kb, k2, &d->keys[1], err))) ||
        (d->vs && (rc = gs_clrun_input(cr, d->req->values, vb, !d->idx, "values", &d->vals[0],
                                       err))) ||
        (d->vs && d->second && (rc = gs_clrun_buffer(cr, vb, v2, &d->vals[1], err))))
        return rc;
    return 0;
}

/* The result back into the caller's arrays, from keys[cur] and vals[cur]
 * (nothing to do where no kernel moved a key, but argsort's indices). */
static int write_back(gs_devrun *d, gs_err *err)
{
    const int c = d->cur;
    int rc;
    if ((!d->unmoved &&
         (rc = gs_clrun_output(&d->cr, d->req->keys, d->keys[c], d->n * d->ks, err))) ||
        (d->vs && (!d->unmoved || d->idx) &&
         (rc = gs_clrun_output(&d->cr, d->req->values, d->vals[c], d->n * d->vs, err))))
        return rc;
    return 0;
}

/* After the kernels: the NaN patterns over the sorted NaN block, the
 * write-back and one wait for the queue, then the timing fields. Where the
 * result needs a look first (the race flag of kernels on adopted pages: a
 * raced result is not written back) or goes back through the caller's own
 * pages, the write-back follows the wait instead (gs_clrun_defer). */
static int finish(gs_devrun *d, const gs_devrun_ops *ops, void *self, gs_err *err)
{
    gs_sort_stats *st = d->st;
    int rc;
    double t0 = gs_now_ms();
    /* unmoved: the keys are as they came, with no NaN block */
    if (!d->unmoved && (rc = gs_clnan_restore(&d->cr, &d->nan, d->keys[d->cur], d->req, err)))
        return rc;
    double t1 = gs_now_ms();
    st->enqueue_ms += t1 - t0;
    const int early = gs_clrun_defer(&d->cr);
    /* from here on a failure leaves the caller's arrays no longer intact,
     * unless the wait shows the early download never ran */
    if (early && ((st->output_touched = 1), (rc = write_back(d, err)))) {
        st->output_touched = gs_clrun_host_written(&d->cr);   /* none enqueued: intact */
        return rc;
    }
    double t2 = gs_now_ms();
    cl_int crc = clFinish(d->cr.q);
    double t3 = gs_now_ms();
    st->wait_ms = t3 - t2;
    if (crc != CL_SUCCESS) {
        /* a failed kernel ends the commands after it unrun: then the early
         * download wrote nothing, and the input is still there to fall
         * back on */
        if (early && !gs_clrun_host_written(&d->cr))
            st->output_touched = 0;
        return gs_cl_fail(err, "clFinish", crc, "%s", ops->finish_what);
    }
    gs_clrun_settle(&d->cr);
    /* a raced sort (the client rewrote its keys) ends here */
    st->output_touched = 1;
    if (!early && ((rc = gs_clrun_raced_check(&d->cr, err)) || (rc = write_back(d, err))))
        return rc;
    st->nans_on_device = d->nan.count;
    st->upload_ms = d->cr.upload_ms;
    st->download_ms = d->cr.download_ms;
    if (d->cr.lean)     /* the span, or at worst the wait that held it */
        st->kernel_ms = d->cr.span_ms >= 0 ? d->cr.span_ms : st->wait_ms;
    else
        st->kernel_ms = ops->kernel_ms ? ops->kernel_ms(d, self) : gs_clrun_kernel_ms(&d->cr);
    st->writeback_ms = (t2 - t1) + (gs_now_ms() - t3);
    return 0;
}

/* t0: when the run began (the device's opening is setup too). */
static int steps(gs_devrun *d, const gs_devrun_ops *ops, void *self, double t0, gs_err *err)
{
    gs_sort_stats *st = d->st;
    int rc;
    if ((rc = ops->kernels(d, self, err)) || (rc = inputs(d, ops, err)) ||
        (ops->buffers && (rc = ops->buffers(d, self, err))))
        return rc;
    gs_clrun_lean(&d->cr, d->ctx->lean, d->n * (d->ks > d->vs ? d->ks : d->vs));
    double t1 = gs_now_ms();
    st->setup_ms = t1 - t0;
    /* NaN patterns of float keys, saved on the device before encoding */
    if (ops->algo->keeps_nan &&
        (rc = gs_clnan_save(&d->cr, d->prog, d->wg, d->keys[0], d->req, &d->nan, err)))
        return rc;
    rc = ops->sort(d, self, err);
    st->enqueue_ms = gs_now_ms() - t1;
    return rc ? rc : finish(d, ops, self, err);
}

int gs_devrun_sort(const gs_devrun_ops *ops, void *self, gs_sort_ctx *ctx,
                   const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    gs_dev *dev = ctx->dev;
    double t0 = gs_now_ms();
    int rc = gs_dev_open(dev, err);
    if (rc)
        return rc;
    gs_devrun d;
    memset(&d, 0, sizeof d);
    d.ctx = ctx;
    d.req = req;
    d.st = st;
    d.n = req->n;
    d.ks = gs_shape_key_bytes(&req->shape);
    d.vs = gs_payload_size(req->shape.payload);
    d.idx = req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64;
    d.second = 1;
    gs_clrun_init(&d.cr, dev, ops->algo->name);
    gs_clrun_use(&d.cr, ctx->queue, ctx->host_pinned);
    /* the caller's pages are adopted only for kernels safe on them */
    d.cr.hostile = ops->safe_as_built || gs_clrun_hostile(dev);
    d.cr.touched = &st->output_touched;
    rc = steps(&d, ops, self, t0, err);
    double t1 = gs_now_ms();
    gs_clrun_release(&d.cr);   /* waits for the queue before anything is freed */
    for (unsigned i = 0; i < d.nkern; i++)
        gs_clrun_kernel_done(&d.cr, d.kprog[i], d.kname[i], d.kern[i]);
    if (ops->release)
        ops->release(self);
    gs_clnan_free(&d.nan);
    st->release_ms = gs_now_ms() - t1;
    return rc;
}
