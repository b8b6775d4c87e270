/* The local sort of libgsort (issue 36): a request sorted in the caller's
 * process by the daemon's own host sort (lib/algos/algo_host.c, "host"),
 * run through gs_sort_run as the daemon runs it, so that the result is the
 * daemon's bit for bit: gsortd's order of floats, every NaN's bit pattern
 * kept in input order, equal keys in input order (the host sort is stable
 * whether or not GSORT_STABLE asked for it). gsort_local.c decides when;
 * gsort.c calls this. Only the host sort's objects are linked into the
 * library, no registry and no device code, so nothing here needs OpenCL. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gs_algos.h"
#include "gs_log.h"
#include "gs_narrow_sort.h"
#include "gs_sort.h"
#include "gsort_int.h"

/* The sort code logs (at debug level) for the daemon; in a client library
 * nothing may reach the application's stderr, so the library's own copy of
 * the logger (its objects are private to libgsort) writes nowhere. */
static void drop_log(int level, const char *line, void *ud)
{
    (void)level;
    (void)line;
    (void)ud;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* One thread: the result is the same on any number (algo_host.c), and a
 * client library keeps no pool of threads in the caller's process for
 * sizes it sorts in a few milliseconds at most. Made once: a call on 16
 * keys takes a few hundred nanoseconds, and building the set took a tenth
 * of them. */
static gs_params one_thread;

static void init(void)
{
    gs_log_set_level(GS_LOG_ERROR);
    gs_log_set_sink(drop_log, NULL);
    gs_params_clear(&one_thread);
    gs_params_set(&one_thread, "threads", 1);
}

int lgs_inproc_sort(const gs_sort_req *req, double *ms, gs_err *err)
{
    return lgs_inproc_sort_threads(req, 1, ms, err);
}

int lgs_inproc_sort_threads(const gs_sort_req *req, unsigned threads, double *ms,
                            gs_err *err)
{
    pthread_once(&once, init);
    gs_sort_stats st;
    gs_params many;
    const gs_params *p = &one_thread;
    if (threads != 1) {
        /* gsort_local_run's choice (a caller that keeps its own
         * connection): the shared pool's helpers, started on first need */
        gs_params_clear(&many);
        if (threads)
            gs_params_set(&many, "threads", threads);
        p = &many;
    }
    int rc = gs_sort_run(&gs_algo_host, NULL, req, p, &st, err);
    *ms = st.wall_ms;
    return rc;
}

/* gs_narrow_run's sort of the words: this process's host sort, on the
 * threads *arg says. */
static int narrow_words(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    double ms = 0;
    int rc = lgs_inproc_sort_threads(req, *(const unsigned *)arg, &ms, err);
    st->wall_ms = ms;
    return rc;
}

int lgs_inproc_narrow(int nw, const gs_sort_req *req, uint32_t *words, double *ms,
                      gs_err *err)
{
    return lgs_inproc_narrow_threads(nw, req, words, 1, ms, err);
}

int lgs_inproc_narrow_threads(int nw, const gs_sort_req *req, uint32_t *words,
                              unsigned threads, double *ms, gs_err *err)
{
    gs_narrow_job jb;
    gs_narrow_job_init(&jb, nw, &req->shape, req->n, req->keys, req->values, words);
    jb.req.offsets = req->offsets;      /* segments */
    /* gsort calls keep no pool of threads in the caller's process;
     * gsort_local_run may ask for one */
    jb.one_thread = threads == 1;
    jb.counting = 1;        /* keys alone: counted (gs_narrow_sort.h) */
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    int rc = gs_narrow_run(&jb, narrow_words, &threads, &st, err);
    *ms = st.wall_ms + st.pack_ms;
    return rc;
}
