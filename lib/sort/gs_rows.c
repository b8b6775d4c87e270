/* Rows: a request whose n keys are `rows` equal rows, each sorted on its
 * own (a 2-D C-contiguous array sorted along its last axis, numpy's
 * np.sort(a, axis=-1); issue 38). gs_sort_run hands such a request here
 * after its checks, and every algorithm serves it unchanged: each row is a
 * request of its own, run through gs_sort_run, so NaN rules, payloads and
 * argsort indices (counted from 0 within the row, as numpy's) are the
 * flat sort's. A host algorithm's rows run side by side on the host pool,
 * one thread each (its `threads` parameter set to 1); a device
 * algorithm's run one after another on its device, which is correct and,
 * for many short rows, slow (a segmented kernel is the next step). The
 * first row that fails stops the rest and its error is the request's;
 * rows sorted before it stay sorted. */
#include "config.h"
#include "gs_sort.h"

#include <pthread.h>
#include <string.h>

#include "gs_hostpool.h"

typedef struct rows_job {
    const gs_algo *a;
    gs_sort_ctx ctx;
    const gs_sort_req *req;
    const gs_params *p;
    size_t len, ks, vs;
    pthread_mutex_t mu;
    int rc;                 /* the first failure (under mu) */
    gs_err err;
    gs_sort_stats sum;      /* device rows' transfers and kernels, added up */
} rows_job;

/* Row r as a request of its own. */
static gs_sort_req row_req(const rows_job *j, size_t r)
{
    gs_sort_req s = *j->req;
    s.shape.rows = 0;
    s.n = j->len;
    s.keys = (char *)j->req->keys + r * j->len * j->ks;
    s.values = j->vs ? (char *)j->req->values + r * j->len * j->vs : NULL;
    return s;
}

static void row_task(void *arg, size_t r, unsigned worker)
{
    rows_job *j = arg;
    (void)worker;
    pthread_mutex_lock(&j->mu);
    int stop = j->rc < 0;
    pthread_mutex_unlock(&j->mu);
    if (stop)
        return;
    gs_sort_req s = row_req(j, r);
    gs_sort_ctx ctx = j->ctx;
    gs_sort_stats st;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_sort_run(j->a, &ctx, &s, j->p, &st, &e);
    if (rc < 0) {
        pthread_mutex_lock(&j->mu);
        if (j->rc == 0) {
            j->rc = rc;
            gs_err_set(&j->err, rc, "row %zu of %llu: %s", r,
                       (unsigned long long)j->req->shape.rows, e.msg);
        }
        pthread_mutex_unlock(&j->mu);
    }
}

int gs_sort_rows(const gs_algo *a, gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                 gs_sort_stats *st, gs_err *err)
{
    rows_job j = { .a = a, .ctx = *ctx, .req = req, .p = p,
                   .len = req->n / (size_t)req->shape.rows,
                   .ks = gs_dtype_size(req->shape.dtype),
                   .vs = gs_payload_size(req->shape.payload) };
    gs_err_clear(&j.err);
    if (j.len == 0)
        return 0;
    size_t rows = (size_t)req->shape.rows;
    if (a->uses_device) {
        for (size_t r = 0; r < rows && j.rc == 0; r++) {
            gs_sort_req s = row_req(&j, r);
            gs_sort_stats rs;
            gs_err e;
            gs_err_clear(&e);
            int rc = gs_sort_run(a, ctx, &s, p, &rs, &e);
            if (rc < 0) {
                j.rc = rc;
                gs_err_set(&j.err, rc, "row %zu of %zu: %s", r, rows, e.msg);
            }
            gs_sort_stats_add(st, &rs);
            st->output_touched |= rs.output_touched || r > 0;
        }
    } else {
        /* one thread a row, rows side by side: a row's own threads would
         * only split work the pool already spreads */
        gs_params one;
        if (p)
            one = *p;
        else
            gs_params_clear(&one);
        for (size_t i = 0; i < a->nparams; i++)
            if (!strcmp(a->params[i].name, "threads"))
                gs_params_set(&one, "threads", 1);
        j.p = &one;
        pthread_mutex_init(&j.mu, NULL);
        gs_hostpool_team team;
        unsigned workers = gs_hostpool_join(&team, gs_hostpool_cpus() - 1);
        if (workers > 1 && rows > 1)
            gs_hostpool_for(&team, rows, row_task, &j);
        else
            for (size_t r = 0; r < rows && j.rc == 0; r++)
                row_task(&j, r, 0);
        gs_hostpool_leave(&team);
        pthread_mutex_destroy(&j.mu);
        st->output_touched = 1;
    }
    if (j.rc < 0 && err)
        *err = j.err;
    return j.rc;
}
