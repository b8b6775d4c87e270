/* `gsortd --audit-plan`, and the audit that ends `gsortd --tune-all`: the
 * daemon's configuration (as serving would read it), its devices, program
 * cache and scheduler started as for serving, the tuning database opened
 * read-only unless asked to fix; then gs_audit_device for each device
 * that has a plan, its table on stdout. Exit status: 0 when no row loses
 * (or every losing row was replaced), 3 when some still lose, 1 on a
 * runtime failure, 2 on a bad configuration. */
#include "config.h"
#include "gs_audit.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gs_conf.h"
#include "gs_daemon.h"
#include "gs_kern.h"
#include "gs_log.h"
#include "gs_time.h"

/* Wait (bounded) until device d's worker has settled its built-in
 * defaults: the untuned route depends on the crossover it measures. */
static void wait_defaults(gs_sched *s, size_t d)
{
    double until = gs_now_ms() + 120000;
    while (!gs_sched_defaults_known(s, d) && gs_now_ms() < until)
        usleep(10000);
}

int gs_audit_main(const gs_audit_args *a)
{
    gs_conf conf;
    gs_err err;
    gs_err_clear(&err);
    gs_daemon_malloc_setup();
    if (gs_daemon_conf(a->daemon, &conf, &err) < 0) {
        fprintf(stderr, "gsortd: %s\n", err.msg);
        return 2;
    }
    char db_path[GS_CONF_PATH_MAX + 16];
    if (a->db_path)
        snprintf(db_path, sizeof db_path, "%s", a->db_path);
    else if (conf.db[0])
        snprintf(db_path, sizeof db_path, "%s", conf.db);
    else if (gs_db_default_path(db_path, sizeof db_path, &err) < 0) {
        fprintf(stderr, "gsortd: --audit-plan: %s\n", err.msg);
        return 1;
    }
    gs_db *db = NULL;
    if (gs_db_open(&db, db_path, a->o.fix ? 0 : GS_DB_READONLY, &err) < 0) {
        fprintf(stderr, "gsortd: --audit-plan: cannot use the tuning database: %s\n", err.msg);
        return 1;
    }
    if (conf.kernel_dir[0])
        gs_kern_set_dir(conf.kernel_dir);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    if (gs_dev_probe(&devs, &ndev, &err) < 0) {
        fprintf(stderr, "gsortd: probing OpenCL devices failed: %s\n", err.msg);
        gs_db_close(db);
        return 1;
    }
    if (a->device >= 0 && (size_t)a->device >= ndev) {
        fprintf(stderr, "gsortd: --device %ld: no such device (%zu found; see --list-devices)\n",
                a->device, ndev);
        gs_dev_free_list(devs, ndev);
        gs_db_close(db);
        return 2;
    }
    gs_pcache *pc = NULL;
    if (gs_pcache_open(&pc, conf.cache_dir[0] ? conf.cache_dir : NULL, &err) < 0)
        GS_WARN("program cache: %s", err.msg);
    unsigned ht = conf.host_threads;
    if (!ht) {      /* as gs_srv.c serves */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        ht = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (unsigned)ncpu;
    }
    /* After --tune-all the scheduler's start lines ("serving") are noise */
    int level = gs_log_get_level();
    if (a->brief && level == GS_LOG_INFO)
        gs_log_set_level(GS_LOG_WARN);
    gs_sched_opts so = { .host_threads = ht, .devices = conf.devices, .pc = pc };
    gs_sched *s = NULL;
    int rc = gs_sched_start(&s, devs, ndev, &so, &err);
    if (rc < 0) {
        gs_log_set_level(level);
        fprintf(stderr, "gsortd: --audit-plan: %s\n", err.msg);
        gs_pcache_close(pc);
        gs_dev_free_list(devs, ndev);
        gs_db_close(db);
        return 1;
    }
    gs_sched_set_inline_max(s, gs_conf_inline_max(&conf));
    gs_pin_budget pins;
    memset(&pins, 0, sizeof pins);
    atomic_store(&pins.cap, gs_conf_pinned_cap(&conf));
    int status = 0, audited = 0;
    for (size_t d = 0; d < ndev && status != 1; d++) {
        if (a->device >= 0 && (size_t)a->device != d)
            continue;
        gs_sched_devstat ds;
        gs_sched_devstat_get(s, d, &ds);
        int64_t id = 0;
        long count = 0;
        gs_err e;
        gs_err_clear(&e);
        if (!ds.enabled || gs_db_device_id(db, &devs[d].info, 0, &id, &e) < 0 ||
            gs_db_plan_count(db, id, &count, &e) < 0 || count == 0) {
            if (a->device >= 0) {
                fprintf(stderr, "gsortd: --audit-plan: device %zu (%s) %s\n", d,
                        devs[d].info.name, !ds.enabled ? "is not served (the devices setting)"
                        : "has no plan in the database: nothing to audit");
                status = 1;
            }
            continue;
        }
        wait_defaults(s, d);
        if (!a->brief)
            printf("Plan audit, device %zu (database id %lld): %s (%s)%s\n", d, (long long)id,
                   devs[d].info.name, devs[d].info.platform,
                   a->o.fix ? "; rows that lose are replaced" : "");
        fflush(stdout);
        gs_audit_opts o = a->o;
        o.device = (int)d;
        /* The quick audit's time bound is for a CPU device, whose points
         * are host sorts of up to 2^28 keys on a few cores; a GPU's points
         * take milliseconds, and its predicted rows are where a plan lost
         * (docs/PERFORMANCE.md, issue 33): audited whole. */
        if (!(devs[d].info.type & CL_DEVICE_TYPE_CPU))
            o.budget_s = 0;
        o.pins = &pins;
        o.out = a->brief ? NULL : stdout;
        gs_audit_stats st;
        double t0 = gs_now_s();
        if (gs_audit_device(s, db, id, &o, &st, &e) < 0) {
            fprintf(stderr, "gsortd: plan audit of device %zu: %s\n", d, e.msg);
            status = 1;
            break;
        }
        if (a->brief) {
            /* the line that ends --tune-all's report for this device */
            printf("Plan audit, device %zu: %u point(s) in %.1f s (%u runs %.1f s, warm-ups "
                   "%.1f s of it; copies, checks and inputs %.1f s), end to end through the "
                   "daemon; plan / untuned %.2f (geometric mean), worst %.2f%s%s%s; %u "
                   "row(s) replaced, %u given back their baseline (then %.2f, worst %.2f)%s",
                   d, st.points, gs_now_s() - t0, st.times.runs, st.times.run_s,
                   st.times.warm_s, st.times.copy_s + st.times.check_s + st.times.input_s,
                   st.geo_untuned, st.worst_untuned, st.worst[0] ? " (" : "", st.worst,
                   st.worst[0] ? ")" : "", st.fixed, st.reverted, st.geo_after, st.worst_after,
                   st.unfixable ? ", SOME STILL LOSE" : "");
            if (st.borrowed_losing)
                printf("; %u f32 point(s) lose on the u32 rows they share", st.borrowed_losing);
            if (st.unaudited)
                printf("; %u point(s) left for gsortd --audit-plan --fix (time)", st.unaudited);
            printf("\n");
            fflush(stdout);
        }
        audited++;
        if (st.unfixable)
            status = 3;
    }
    if (!audited && status == 0 && a->device < 0)
        printf("No device has a plan in %s: nothing to audit (gsortd --tune-all tunes).\n",
               gs_db_path(db));
    gs_sched_stop(s);
    gs_log_set_level(level);
    for (size_t i = 0; i < ndev; i++)
        gs_dev_close(&devs[i]);
    gs_dev_free_list(devs, ndev);
    gs_pcache_close(pc);
    gs_db_close(db);
    return status;
}
