/* gsort_local_run (include/gsort.h): one flat array, or equal rows each on
 * its own, sorted in the caller's process with the daemon's own host sort,
 * no connection and no router,
 * for a program that keeps its own route to gsortd and wants what a gsort
 * call below the crossover does (the Python client through ctypes, issue
 * 36: numpy's sort of 32-bit keys is 3-10x slower than this one on a
 * machine without AVX-512). The request is checked as gsort_run checks
 * it; the answer is the daemon's bit for bit (gsort_inproc.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gs_time.h"
#include "gsort_int.h"

int gsort_local_run(const gsort_request *rq, size_t rows, unsigned threads,
                    gsort_result *res, gsort_error *err)
{
    double t0 = res ? gs_now_ms() : 0;
    lgs_err_clear(err);
    if (res)
        lgs_result_clear(res);
    if (!rq)
        return lgs_err_set(err, GSORT_EINVAL, "local sort: no request");
    int rc = lgs_check_request(rq, err);
    if (rc)
        return rc;
    if (rq->flags & ~(unsigned)(GSORT_DESCENDING | GSORT_STABLE))
        return lgs_err_set(err, GSORT_EINVAL, "local sort: flags 0x%x: only GSORT_DESCENDING "
                           "and GSORT_STABLE mean something here",
                           rq->flags & ~(unsigned)(GSORT_DESCENDING | GSORT_STABLE));
    if ((rq->algorithm && strcmp(rq->algorithm, "auto") && strcmp(rq->algorithm, "host")) ||
        rq->params || rq->device != -1)
        return lgs_err_set(err, GSORT_EINVAL, "local sort: it is the host sort in this "
                           "process; an algorithm, params or a device are the daemon's to "
                           "honour (gsort_run)");
    if (rows > 1 && rq->n % rows)
        return lgs_err_set(err, GSORT_EINVAL, "local sort: %zu rows do not divide %zu keys "
                           "into equal rows", rows, rq->n);
    const lgs_dt *d = lgs_dt_of((int)rq->dtype);
    gs_sort_req req = {
        .shape = { .dtype = d->dt,
                   .payload = (gs_payload)rq->values_kind,
                   .descending = (rq->flags & GSORT_DESCENDING) != 0,
                   .stable = (rq->flags & GSORT_STABLE) != 0,
                   .rows = rows > 1 ? rows : 0 },
        .n = rq->n,
        .keys = rq->keys,
        .values = rq->values_kind == GSORT_VALUES_NONE ? NULL : rq->values,
    };
    double ms = 0;
    gs_err ge;
    gs_err_clear(&ge);
    if (!rq->n) {
        rc = 0;
    } else if (d->narrow) {
        /* the words of 8- and 16-bit keys: scratch of this call's */
        uint32_t *words = malloc(rq->n * sizeof *words);
        if (!words)
            return lgs_err_set(err, GSORT_ENOMEM, "local sort: no memory for the words of "
                               "%zu %s keys", rq->n, d->name);
        rc = lgs_inproc_narrow_threads(d->narrow, &req, words, threads, &ms, &ge);
        free(words);
    } else {
        rc = lgs_inproc_sort_threads(&req, threads, &ms, &ge);
    }
    if (rc)
        return lgs_err_from(err, rc, &ge);
    if (res)
        lgs_fill_local(res, ms, t0);
    return 0;
}
