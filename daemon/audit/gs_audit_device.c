/* The plan audit of one device (gs_audit_device, gs_audit.h): its plan
 * loaded, a loop and sink of its own on the running scheduler, the flat
 * points (gs_audit_flat.c), then the rows and top-k points
 * (gs_audit_shapes.c), and the summary; and the check of a --shapes
 * list. Every run goes through gs_sched_route and gs_sched_submit as a
 * request of the daemon does, from one memfd block, with the input copied
 * in before it and the output checked after it (gs_audit_run.c); its time
 * is the job's, from routing to done (the socket's own costs are the same
 * for every choice). */
#include "config.h"
#include "gs_audit.h"
#include "gs_audit_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gs_time.h"

int gs_audit_shapes_check(const char *list, gs_err *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    int any = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!audit_flat_known(t) && !audit_shape_known(t))
            return gs_err_set(err, GS_EINVAL, "unknown shape '%s' (known: u32, u64, f32, "
                              "u32+u32, argsort, u16, rows, topk)", t);
        any = 1;
    }
    return any ? 0 : gs_err_set(err, GS_EINVAL, "an empty list of shapes");
}

int gs_audit_device(gs_sched *s, gs_db *db, int64_t db_id, const gs_audit_opts *o,
                    gs_audit_stats *st, gs_err *err)
{
    memset(st, 0, sizeof *st);
    if (o->device < 0 || (size_t)o->device >= gs_sched_ndev(s))
        return gs_err_set(err, GS_EINVAL, "plan audit: no device %d", o->device);
    if (o->shapes && gs_audit_shapes_check(o->shapes, err) < 0)
        return GS_EINVAL;
    gs_plans *P = NULL;
    int rc = gs_plans_load(db, db_id, &P, err);
    if (rc < 0)
        return rc;
    gs_sched_devstat ds;
    gs_sched_devstat_get(s, (size_t)o->device, &ds);
    actx A = { .s = s, .o = o, .info = &ds.dev->info };
    if ((rc = uv_loop_init(&A.loop)) < 0) {
        gs_plans_free(P);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    if ((rc = gs_sched_sink_init(&A.sink, s, &A.loop, audit_on_done, &A, err)) < 0) {
        uv_loop_close(&A.loop);
        gs_plans_free(P);
        return rc;
    }
    if (o->out)
        fprintf(o->out, "  %-10s %-5s %-10s %10s  %-10s %10s  %12s %10s  %-7s %7s  %s\n", "shape",
                "n", "plan", "ms", "untuned", "ms", "plan/untuned", "plan/best", "verdict",
                "s", "each algorithm at its tuned best, ms");
    double logsum = 0, logafter = 0, t0 = gs_now_s();
    unsigned nratio = 0;
    rc = audit_flat_points(&A, db, db_id, &P, st, &logsum, &logafter, &nratio, err);
    /* the rows and top-k points, after the flat ones whose plan they
     * build on (their own time bound) */
    if (!rc && !audit_cancelled(&A))
        audit_shape_points(&A, db, db_id, P, st, &logsum, &logafter, &nratio);
    if (nratio) {
        st->geo_untuned = exp(logsum / nratio);
        st->geo_after = exp(logafter / nratio);
    }
    st->times = A.tm;
    st->times.total_s = gs_now_s() - t0;
    audit_block_free(&A);
    gs_sched_sink_close(&A.sink);
    uv_run(&A.loop, UV_RUN_DEFAULT);
    uv_loop_close(&A.loop);
    gs_plans_free(P);
    if (!rc && o->out)
        fprintf(o->out, "  %u point(s); plan / untuned: geometric mean %.3f, worst %.3f; plan / "
                "best forced: worst %.3f; %u losing (%u replaced); %u not faster than their "
                "baseline (%u put back); with the rows replaced, plan / untuned: geometric mean "
                "%.3f, worst %.3f; %u predicted row(s) not timed: they run what the untuned daemon "
                "runs%s\n", st->points, st->geo_untuned, st->worst_untuned, st->worst_best,
                st->losing, st->fixed, st->unproven, st->reverted, st->geo_after,
                st->worst_after, st->same, st->unaudited ? "; some points not audited (time)" : "");
    if (!rc && o->out)
        fprintf(o->out, "  %.3f s: %u runs %.3f s (routing to done; warm-ups, with their "
                "program builds, %.3f s), copies in %.3f s, order checks %.3f s, inputs %.3f s\n",
                st->times.total_s, st->times.runs, st->times.run_s, st->times.warm_s,
                st->times.copy_s, st->times.check_s, st->times.input_s);
    return rc;
}
