/* Background tuning (tune_missing, --tune-missing): one thread tunes, one
 * after the other, the devices the scheduler serves without a plan (by
 * default, auto, those that are not CPU devices), each
 * within tune_budget, with its own database connection, while the loop
 * keeps serving them with the built-in defaults. Each plan is then audited
 * on the serving scheduler (gs_audit.h): rows that lose to the untuned
 * defaults are replaced, and a plan that still loses is removed. When it
 * is done it wakes the loop (uv_async_t), which calls the done callback
 * the server gave (gs_srv.c: re-open the database so the new plans take
 * effect); this file calls nothing of the server's. Shutdown cancels it
 * between and within devices (tune_cancel) and waits for it before the
 * loop stops. A database that failed its open-time check is never tuned
 * into; one the thread finds damaged stops it, and the re-open after it
 * checks the whole file. */
#include "config.h"
#include "gs_srv_int.h"

#include <pthread.h>
#include <stdatomic.h>

#include "gs_audit.h"
#include "gs_log.h"
#include "gs_srv.h"   /* gs_srv_opts */
#include "gs_time.h"
#include "gs_tune.h"

/* The plan audit of a device just tuned, on the scheduler that serves
 * (issue 33): the rows that lose to the untuned defaults are replaced; a
 * plan that still loses somewhere, or could not be audited, is removed,
 * so that the daemon goes on with its built-in defaults rather than swap
 * in a plan that hurts. */
static void audit(srv *s, gs_db *db, int d, int64_t db_id)
{
    const gs_dev *dev = &s->o->devs[d];
    gs_audit_opts o = { .device = d, .fix = 1, .pins = &s->pin, .cancel = &s->tune_cancel };
    gs_audit_stats st;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_audit_device(s->sched, db, db_id, &o, &st, &e);
    if (rc == 0 && atomic_load(&s->tune_cancel))
        rc = gs_err_set(&e, GS_EINVAL, "was not audited to the end (shutdown): the next start "
                        "tunes it again");
    if (rc == 0 && !st.unfixable) {
        GS_INFO("--tune-missing: device %d (%s) tuned and audited: %u point(s), plan / untuned "
                "%.3f on average (geometric), worst %.3f; %u row(s) replaced", d, dev->info.name,
                st.points, st.geo_untuned, st.worst_untuned, st.fixed);
        return;
    }
    GS_WARN("--tune-missing: device %d (%s): the plan %s; it is removed and the device is served "
            "with its built-in defaults (gsortd --tune-all, then --audit-plan, to look into it)",
            d, dev->info.name, rc ? e.msg : "still loses to the untuned defaults after its audit");
    /* removed whole, in one statement: the re-open after this thread sees no plan */
    gs_err_clear(&e);
    if (gs_db_plan_clear(db, db_id, &e) < 0)
        GS_ERROR("--tune-missing: device %d: cannot remove its plan: %s", d, e.msg);
}

static void *tune_main(void *arg)
{
    srv *s = arg;
    gs_db *db = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_db_open(&db, s->o->db_path, 0, &e) < 0) {
        GS_ERROR("--tune-missing: cannot open %s: %s", s->o->db_path, e.msg);
        if (e.code == GS_ECORRUPT)
            atomic_store(&s->db_suspect, 1);
        uv_async_send(&s->tune_async);
        return NULL;
    }
    for (size_t i = 0; i < s->tune_ndev && !atomic_load(&s->tune_cancel); i++) {
        gs_dev *d = &s->o->devs[s->tune_dev[i]];
        gs_tune_opts o;
        gs_tune_opts_init(&o, s->conf.tune_budget_s);
        o.cancel = &s->tune_cancel;
        gs_tune_report rep = { 0 };
        GS_INFO("--tune-missing: tuning device %d (%s) in the background, budget %.0f s",
                s->tune_dev[i], d->info.name, o.budget_s);
        gs_err_clear(&e);
        int rc = gs_tune_device(db, d, s->o->pc, &o, gs_now_s() + o.budget_s, &rep, &e);
        if (rc < 0)
            GS_ERROR("--tune-missing: device %d (%s): %s", s->tune_dev[i], d->info.name, e.msg);
        if (rc == GS_ECORRUPT) {
            /* found by the check before the first write (a file too large
             * to check whole at open), or by SQLite: stop writing, and let
             * the daemon's re-open check the whole file */
            atomic_store(&s->db_suspect, 1);
            gs_tune_report_free(&rep);
            break;
        }
        if (rc >= 0 && rep.ndevs)
            audit(s, db, s->tune_dev[i], rep.devs[0].device_id);
        gs_tune_report_free(&rep);
    }
    gs_db_close(db);
    uv_async_send(&s->tune_async);
    return NULL;
}

static void on_tune_done(uv_async_t *h)
{
    srv *s = h->data;
    if (!s->tune_running)
        return;
    pthread_join(s->tune_th, NULL);
    s->tune_running = 0;
    s->tune_done(s);
}

static void start_tuning(srv *s)
{
    s->tune_ndev = gs_sched_untuned(s->sched, s->tune_dev, 64,
                                    s->conf.tune_missing == GS_CONF_TUNE_AUTO);
    if (!s->tune_ndev)
        return;
    if (!s->o->db_path || !s->o->db_path[0]) {
        GS_WARN("tune_missing: no tuning database to write the plans to; not tuning");
        s->tune_ndev = 0;
        return;
    }
    if (s->db_damaged) {
        GS_WARN("tune_missing: the tuning database %s failed its check; not tuning (nothing "
                "is written into a damaged file)", s->o->db_path);
        s->tune_ndev = 0;
        return;
    }
    if (pthread_create(&s->tune_th, NULL, tune_main, s) != 0) {
        GS_WARN("--tune-missing: cannot start the tuning thread");
        return;
    }
    s->tune_running = 1;
}

void srv_retune_start(srv *s, void (*done)(srv *s))
{
    s->tune_done = done;
    /* The handle exists either way: the loop's shutdown closes it. */
    uv_async_init(&s->loop, &s->tune_async, on_tune_done);
    s->tune_async.data = s;
    if (s->conf.tune_missing)
        start_tuning(s);
}
