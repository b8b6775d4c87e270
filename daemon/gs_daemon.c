/* The daemon's start-up: configuration from its three layers, the log
 * target, the socket systemd may have passed (socket activation), device
 * probing, the program cache, then gs_srv_run. A machine with no OpenCL
 * platform, or whose devices fail to open, still serves: the host sort
 * answers everything and the log says why. */
#include "config.h"
#include "gs_daemon.h"

#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gs_clrun.h"
#include "gs_conf.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "gs_kern.h"
#include "gs_log.h"
#include "gs_paths.h"
#include "gs_prog.h"
#include "gs_srv.h"
#include "gs_systemd.h"

static void syslog_sink(int level, const char *msg, void *ud)
{
    static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
    (void)ud;
    syslog(prio[level < 0 ? 0 : level > 3 ? 3 : level], "%s", msg);
}

/* Defaults, then the file, then the overrides. */
int gs_daemon_conf(const gs_daemon_args *a, gs_conf *c, gs_err *err)
{
    gs_conf_defaults(c);
    const char *path = a->config_path ? a->config_path : gs_conf_default_path();
    int rc = gs_conf_load(c, path, err);
    if (rc == GS_ENOTFOUND && !a->config_path)
        rc = 0;   /* no default file: defaults it is */
    else if (rc < 0)
        return rc;
    for (size_t i = 0; i < a->nover; i++)
        if ((rc = gs_conf_set(c, a->keys[i], a->values[i], err)) < 0)
            return gs_err_prefix(err, "command line: ");
    return 0;
}

static int reload(gs_conf *out, gs_err *err, void *ud)
{
    int rc = gs_daemon_conf(ud, out, err);
    if (rc == 0)
        gs_log_set_sink(out->log_syslog ? syslog_sink : NULL, NULL);
    return rc;
}

/* Where a default directory comes from (gs_paths_default's order), for a
 * note beside the path --print-config shows. */
static void dir_origin(int cache, const char *file, char *buf, size_t len)
{
    const char *v = getenv(cache ? "GSORTD_CACHE_DIR" : "GSORTD_DATA_DIR");
    const char *x = getenv(cache ? "XDG_CACHE_HOME" : "XDG_DATA_HOME");
    if (v && v[0])
        snprintf(buf, len, "default: $%s%s", cache ? "GSORTD_CACHE_DIR" : "GSORTD_DATA_DIR",
                 file);
    else if (geteuid() == 0)
        snprintf(buf, len, "default for root");
    else if (x && x[0] == '/')
        snprintf(buf, len, "default: $%s/gsortd%s", cache ? "XDG_CACHE_HOME" : "XDG_DATA_HOME",
                 file);
    else
        snprintf(buf, len, "default: $HOME/%s/gsortd%s", cache ? ".cache" : ".local/share", file);
}

/* --print-config: the configuration with the paths the daemon would use
 * where it leaves them to the defaults ("" in the configuration), each
 * with a note saying where it came from. A socket passed by systemd would
 * still take the socket's place. */
static void print_config(const gs_conf *conf)
{
    gs_conf c = *conf;
    gs_err err;
    char ns[GS_ERR_MSG_MAX] = "", nd[GS_ERR_MSG_MAX] = "", nc[GS_ERR_MSG_MAX] = "";
    gs_err_clear(&err);
    if (!c.socket[0]) {
        if (gs_paths_socket(c.socket, sizeof c.socket, &err) == 0)
            snprintf(ns, sizeof ns, "%s", geteuid() == 0 ? "default for root"
                                                         : "default: $XDG_RUNTIME_DIR/gsortd.sock");
        else
            snprintf(ns, sizeof ns, "%s", err.msg);
    }
    if (!c.db[0]) {
        if (gs_db_default_path(c.db, sizeof c.db, &err) == 0)
            dir_origin(0, "/tuning.db", nd, sizeof nd);
        else
            snprintf(nd, sizeof nd, "%s", err.msg);
    }
    if (!c.cache_dir[0]) {
        if (gs_paths_cache_dir(c.cache_dir, sizeof c.cache_dir) == 0)
            dir_origin(1, "", nc, sizeof nc);
        else
            snprintf(nc, sizeof nc, "no default location (set GSORTD_CACHE_DIR, XDG_CACHE_HOME "
                     "or HOME): programs are built from source every time");
    }
    gs_conf_notes n = { .socket = ns, .db = nd, .cache_dir = nc };
    gs_conf_print_noted(&c, &n, stdout);
}

/* Request buffers (payloads, values, host-sort scratch, replies) are
 * transient and up to hundreds of MiB. glibc raises its mmap threshold to
 * the largest such block once one is freed, after which big blocks come
 * from the per-thread arenas and stay resident: the idle RSS then climbs
 * to a high-water mark set by how many large requests once overlapped (on
 * the 16-core GPU machine: +90 MiB over 400,000 load-test requests,
 * docs/RELIABILITY.md). A fixed threshold keeps every block of 1 MiB and
 * more in its own mapping, returned to the system when freed (the host
 * sort's scratch from 1 MiB is kept warm by gs_scratch instead). Fixing it
 * also stops glibc raising the trim threshold with it, which then stays at
 * 128 KiB: every block under 1 MiB freed at the top of an arena went back
 * to the system and was faulted in again by the next request (a 2^16-key
 * host sort's 0.5 MiB of scratch: 0.55 ms through the daemon against 0.21
 * in a benchmark). Trimming from twice the mmap threshold, glibc's own
 * rule, keeps those warm and leaves at most 2 MiB idle per arena. */
void gs_daemon_malloc_setup(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, 2 << 20);
#endif
}

int gs_daemon_main(const gs_daemon_args *a)
{
    gs_daemon_malloc_setup();
    gs_conf conf;
    gs_err err;
    gs_err_clear(&err);
    if (gs_daemon_conf(a, &conf, &err) < 0) {
        fprintf(stderr, "gsortd: %s\n", err.msg);
        return 2;
    }
    if (a->print_config) {
        print_config(&conf);
        return 0;
    }
    gs_log_set_level(conf.log_level);
    if (conf.log_syslog) {
        openlog("gsortd", LOG_PID, LOG_DAEMON);
        gs_log_set_sink(syslog_sink, NULL);
    }
    /* A socket from systemd replaces the configured one, whose default may
     * not even resolve for a system user (no XDG_RUNTIME_DIR). */
    int lfd = -1;
    if (gs_systemd_listen_fd(&lfd, &err) < 0) {
        GS_ERROR("%s", err.msg);
        gs_systemd_status("failed: %s", err.msg);
        return 2;
    }
    char sock[GS_CONF_SOCKET_MAX] = "";
    if (lfd >= 0)
        GS_INFO("socket-activated: serving on the socket systemd passed (fd %d); the socket, "
                "socket_mode and socket_group settings are gsortd.socket's to set", lfd);
    else if (conf.socket[0])
        snprintf(sock, sizeof sock, "%s", conf.socket);
    else if (gs_paths_socket(sock, sizeof sock, &err) < 0) {
        GS_ERROR("%s", err.msg);
        return 2;
    }
    char db[GS_CONF_PATH_MAX + 16];
    if (conf.db[0]) {
        snprintf(db, sizeof db, "%s", conf.db);
    } else if (gs_db_default_path(db, sizeof db, &err) < 0) {
        GS_WARN("%s; serving with built-in defaults", err.msg);
        db[0] = '\0';
    }
    if (db[0] && conf.tune_missing) {   /* the tuner creates the database there */
        char dir[GS_CONF_PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s", db);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            if (gs_paths_mkdir_p(dir, 0755, &err) < 0)
                GS_WARN("%s", err.msg);
        }
    }
    if (conf.kernel_dir[0])
        gs_kern_set_dir(conf.kernel_dir);
    if (a->fault_at > 0) {
        char on[48] = "";
        if (a->fault_dev > 0)
            snprintf(on, sizeof on, " on device %ld", a->fault_dev - 1);
        GS_WARN("fault injection: every kernel launch%s from the %ld-th on fails", on,
                a->fault_at);
        gs_clrun_inject_fault_device((int)a->fault_dev - 1);
        gs_clrun_inject_fault(a->fault_at, CL_OUT_OF_RESOURCES);
    }
    signal(SIGPIPE, SIG_IGN);
    /* SIGHUP held pending from here until gs_srv_run installs its handler:
     * threads an OpenCL driver starts while probing (PoCL's workers) would
     * otherwise take a SIGHUP sent once the socket exists and die of its
     * default action, with the whole process. They inherit the block;
     * gs_srv_run lifts it for its own thread only. */
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);

    gs_dev *devs = NULL;
    size_t ndev = 0;
    if (gs_dev_probe(&devs, &ndev, &err) < 0) {
        GS_WARN("probing OpenCL devices failed: %s; the host sort serves everything", err.msg);
        devs = NULL;
        ndev = 0;
    } else if (ndev == 0) {
        GS_WARN("no OpenCL platform found; the host sort serves everything");
    }
    gs_pcache *pc = NULL;
    if (gs_pcache_open(&pc, conf.cache_dir[0] ? conf.cache_dir : NULL, &err) < 0)
        GS_WARN("program cache: %s", err.msg);

    gs_srv_opts so = { .conf = &conf, .socket_path = sock, .listen_fd = lfd > 0 ? lfd : 0,
                       .db_path = db, .devs = devs,
                       .ndev = ndev, .pc = pc, .reload = reload, .reload_ud = (void *)a };
    int rc = gs_srv_run(&so, &err);
    if (rc < 0) {
        GS_ERROR("%s", err.msg);
        gs_systemd_status("failed: %s", err.msg);
    }
    for (size_t i = 0; i < ndev; i++)
        gs_dev_close(&devs[i]);
    gs_dev_free_list(devs, ndev);
    gs_pcache_close(pc);
    if (conf.log_syslog)
        closelog();
    return rc < 0 ? 1 : 0;
}
