/* Building what a tune will run before its clock starts (issue 18): the
 * device algorithms' programs with their default parameters, and every
 * kernel of them a request shape of this tune launches (PoCL compiles a
 * kernel's work-group code at its first launch). On a fresh machine a
 * PoCL build takes seconds to a minute, so charged to the budget it ate a
 * quick tune whole (one trial in 15 s); built here, once, outside the
 * budget, every group's first trials find the programs ready, and the
 * program cache keeps them for the next run. Each algorithm warms up on a
 * thread of its own, so that the builds run side by side (gs_prog builds
 * outside the device's lock); each build is a tiny sort through
 * gs_sort_run of the trials' own random input (gs_tune_input_make), so
 * what is built is exactly what the trials will ask for. A build that
 * fails is logged; its trials are then recorded invalid as usual. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_log.h"
#include "gs_time.h"

#define PREBUILD_N 4096

typedef struct job {
    gs_dev *dev;
    gs_pcache *pc;
    const gs_tune_opts *o;
    const gs_algo *a;
    unsigned built, failed;
    double s;
    pthread_t th;
    int started;
} job;

/* One algorithm's warm-up sorts: its default program for every shape. */
static void *warm_main(void *arg)
{
    job *J = arg;
    const gs_tune_opts *o = J->o;
    const gs_algo *a = J->a;
    double t0 = gs_now_s();
    gs_sort_ctx ctx = { .dev = J->dev, .pc = J->pc };
    gs_params p;
    a->defaults(&J->dev->info, &p);
    for (size_t ki = 0; ki < o->nkey_bits; ki++)
        for (size_t pi = 0; pi < o->npayloads; pi++) {
            if (o->cancel && atomic_load(o->cancel))
                goto out;
            /* the trials' own random input, sorted in place: its output
             * is not checked, only the build and the launches matter */
            gs_tune_input in;
            gs_err e;
            gs_err_clear(&e);
            gs_payload pl = o->payloads[pi];
            if (!gs_tune_serves(a, o->key_bits[ki], pl, &p, &e))
                continue;           /* the narrow keys' class: radix's alone */
            if (gs_tune_input_make(&in, o->key_bits[ki], pl, PREBUILD_N, GS_TUNE_DIST_RANDOM,
                                   &e) < 0)
                goto out;
            gs_sort_req req = gs_tune_input_req(&in);
            req.keys = in.in_k;
            req.values = in.in_v ? in.in_v : in.wv;
            int rc = gs_sort_run(a, &ctx, &req, &p, NULL, &e);
            gs_tune_input_free(&in);
            if (rc < 0) {
                J->failed++;
                GS_WARN("%s on %s: building its default program failed: %s", a->name,
                        J->dev->info.name, e.msg);
                goto out;           /* its other shapes would fail the same way */
            }
            J->built++;
        }
out:
    J->s = gs_now_s() - t0;
    return NULL;
}

double gs_tune_prebuild(gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                        const gs_algo *const *algos, size_t na)
{
    double t0 = gs_now_s();
    job *jobs = calloc(na ? na : 1, sizeof *jobs);
    if (!jobs)
        return 0;
    size_t nj = 0;
    for (size_t i = 0; i < na; i++)
        if (algos[i] && algos[i]->uses_device && algos[i]->defaults)
            jobs[nj++] = (job){ .dev = dev, .pc = pc, .o = o, .a = algos[i] };
    /* one thread per algorithm: the builds (seconds to a minute each on
     * PoCL) run side by side; a thread that cannot start runs here */
    for (size_t i = 0; i < nj; i++)
        jobs[i].started = pthread_create(&jobs[i].th, NULL, warm_main, &jobs[i]) == 0;
    unsigned built = 0, failed = 0;
    char each[256] = "";
    for (size_t i = 0; i < nj; i++) {
        if (jobs[i].started)
            pthread_join(jobs[i].th, NULL);
        else
            warm_main(&jobs[i]);
        built += jobs[i].built;
        failed += jobs[i].failed;
        size_t used = strlen(each);
        snprintf(each + used, sizeof each - used, "%s%s %.1f s", used ? ", " : "",
                 jobs[i].a->name, jobs[i].s);
    }
    free(jobs);
    double s = gs_now_s() - t0;
    if (nj)
        GS_DEBUG("%s: %u program warm-up sort(s) in %.1f s before the budget starts, side by "
                "side (%s)%s", dev->info.name, built, s, each,
                failed ? "; some failed: see above" : "");
    return s;
}
