/* The server's main loop and its lifecycle (gs_srv_run): the listening
 * socket, the scheduler, the tuning database and the I/O loops (gs_io.c)
 * are set up, then the daemon serves until SIGTERM or SIGINT, when it stops
 * accepting, lets the requests in flight finish and exits. SIGHUP reloads
 * the configuration's live keys (gs_conf_apply_live), which every loop then
 * copies, and re-opens the database. The main loop accepts clients
 * (gs_accept.c) and hands them to the I/O loops (gs_io.c; loop 0 is this
 * one); what one request goes through is elsewhere: gs_conn.c (the
 * connection), gs_ops.c (the operation), gs_admit.c (its memory),
 * gs_acl.c (who may connect) and gs_retune.c (the background tuning);
 * gs_srv_int.h is what they share, and maps who calls whom. */
#include "config.h"
#include "gs_srv.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "gs_db.h"
#include "gs_listen.h"
#include "gs_hooks.h"
#include "gs_log.h"
#include "gs_sched.h"
#include "gs_srv_int.h"
#include "gs_systemd.h"
#include "gs_bufpool.h"
#include "gs_clrun.h"
#include "gs_scratch.h"
#include "gs_ooc.h"
#include "gs_stage.h"
#include "gs_time.h"

/* ---- database ---- */

void srv_db_open(srv *s)
{
    /* The stats op of any loop reads the database's query count under
     * conf_mu; the plans are swapped under the scheduler's own lock. */
    pthread_mutex_lock(&s->conf_mu);
    if (s->db) {
        gs_db_close(s->db);
        s->db = NULL;
    }
    atomic_store(&s->db_ok, 0);
    const char *path = s->o->db_path;
    int idx[64];
    int tunes = s->conf.tune_missing == GS_CONF_TUNE_YES ||
                (s->conf.tune_missing == GS_CONF_TUNE_AUTO &&
                 gs_sched_untuned(s->sched, idx, 64, 1));
    if (path && path[0] && !tunes && access(path, F_OK) != 0) {
        GS_WARN("no tuning database at %s (run gsortd --tune-all, or serve with "
                "--tune-missing); serving with built-in defaults", path);
    } else if (path && path[0]) {
        gs_err e;
        gs_err_clear(&e);
        s->db_damaged = 0;
        if (gs_db_open(&s->db, path, atomic_load(&s->db_suspect) ? GS_DB_FULL_CHECK : 0,
                       &e) < 0) {
            /* A file that failed its check is never written into: not by
             * this connection, nor by the background tune (gs_retune.c). */
            if (e.code == GS_ECORRUPT) {
                s->db_damaged = 1;
                GS_ERROR("tuning %s; serving with built-in defaults and writing nothing into "
                         "it, background tuning included, until it is replaced (then "
                         "reload: SIGHUP)", e.msg);
            } else {
                GS_WARN("tuning database %s is unusable: %s; serving with built-in defaults",
                        path, e.msg);
            }
            s->db = NULL;
        } else {
            atomic_store(&s->db_ok, 1);
            if (gs_db_checked(s->db))
                atomic_store(&s->db_suspect, 0);
            else
                GS_WARN("tuning database %s is too large to check whole at every start: "
                        "serving it with its structure checked at most; its first write "
                        "checks it whole, and so does gsortd --db-check", path);
        }
    }
    gs_sched_set_db(s->sched, s->db);
    pthread_mutex_unlock(&s->conf_mu);
}

/* ---- timeouts, shutdown, reload ---- */

static void stop_everything(srv *s)
{
    if (s->stopped)
        return;
    s->stopped = 1;
    uv_timer_stop(&s->tick);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->sig_term, NULL);
    uv_close((uv_handle_t *)&s->sig_int, NULL);
    uv_close((uv_handle_t *)&s->sig_hup, NULL);
    /* With the handlers gone a repeated SIGTERM would kill the process
     * mid-exit; the drain is done, so ignore it. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    uv_close((uv_handle_t *)&s->tune_async, NULL);
    /* The loops first: their sinks go before the scheduler they point to,
     * and none of them pokes once they are joined. */
    srv_io_stop(s);
    uv_close((uv_handle_t *)&s->poke, NULL);
    gs_sched_stop(s->sched);
    s->sched = NULL;
}

void srv_check_drained(srv *s)
{
    if (s->draining && !s->stopped && atomic_load(&s->nconns) == 0 &&
        gs_sched_inflight(s->sched) == 0 && !s->tune_running)
        stop_everything(s);
}

static void on_poke(uv_async_t *h)
{
    srv_check_drained(h->data);
}

static void on_tick(uv_timer_t *t)
{
    srv *s = t->data;
    double now = gs_now_ms();
    srv_accept_tick(s, now);
    if (s->lis_paused && s->lis_active) {
        s->lis_paused = 0;
        uv_poll_start(&s->lis_poll, UV_READABLE, srv_on_listen);
    }
    /* Device buffers and host scratch nobody took for a while go back. */
    if (now - s->last_trim >= POOL_TRIM_MS) {
        s->last_trim = now;
        gs_sched_trim(s->sched, POOL_IDLE_MS);
        gs_scratch_trim(POOL_IDLE_MS);      /* host sort scratch kept for reuse */
    }
    srv_check_drained(s);
}

static void begin_shutdown(srv *s, int signum)
{
    if (s->draining) {
        GS_INFO("already shutting down (%zu requests in flight)", gs_sched_inflight(s->sched));
        return;
    }
    s->draining = 1;
    GS_INFO("signal %d: shutting down, finishing %zu requests in flight", signum,
            gs_sched_inflight(s->sched));
    gs_systemd_stopping("shutting down: finishing %zu requests in flight",
                        gs_sched_inflight(s->sched));
    if (s->lis_active) {
        uv_poll_stop(&s->lis_poll);
        uv_close((uv_handle_t *)&s->lis_poll, NULL);
        s->lis_active = 0;
    }
    gs_listen_close(&s->lis);
    atomic_store(&s->tune_cancel, 1);
    srv_io_wake_all(s);          /* each loop closes its idle clients */
    srv_check_drained(s);
}

/* READY=1 with a one-line summary for `systemctl status`. */
static void notify_serving(srv *s, const char *note)
{
    gs_systemd_ready("serving on %s%s: %zu devices, %u host threads, database %s%s",
                     s->lis.path, s->lis.adopted ? " (socket-activated)" : "",
                     gs_sched_ndev(s->sched), gs_sched_host_threads(s->sched),
                     atomic_load(&s->db_ok) ? s->o->db_path : "none", note);
}

/* SIGHUP's configuration half: the file and the command line read again,
 * their live keys applied, the restart-only ones that changed named. 0, or
 * 1 when it failed (in part: the allow lists) and the old values stay. */
static int reload_conf(srv *s)
{
    gs_conf nc;
    gs_err e;
    gs_err_clear(&e);
    if (s->o->reload(&nc, &e, s->o->reload_ud) < 0) {
        GS_ERROR("reload failed, keeping the current configuration: %s", e.msg);
        return 1;
    }
    /* The allow lists are resolved before anything is applied: when that
     * fails the running lists stay, so the new ones must not be copied. */
    gs_err acl_e;
    gs_err_clear(&acl_e);
    int acl_rc = srv_acl_load(s, &nc, &acl_e);
    if (acl_rc < 0) {
        memcpy(nc.allow_uids, s->conf.allow_uids, sizeof nc.allow_uids);
        memcpy(nc.allow_gids, s->conf.allow_gids, sizeof nc.allow_gids);
    }
    const char *restart[GS_CONF_MAX_KEYS];
    pthread_mutex_lock(&s->conf_mu);
    size_t nrestart = gs_conf_apply_live(&s->conf, &nc, restart, GS_CONF_MAX_KEYS);
    srv_conn_fit_fds(s, 0);      /* max_clients may have changed */
    s->req_cap = gs_conf_request_cap(&s->conf);
    atomic_fetch_add(&s->conf_gen, 1);
    pthread_mutex_unlock(&s->conf_mu);
    srv_mem_configure(s);        /* max_memory and the mapped-bytes bounds */
    srv_io_wake_all(s);          /* each loop takes the new copy */
    for (size_t i = 0; i < nrestart && i < GS_CONF_MAX_KEYS; i++)
        GS_WARN("reload: '%s' changed; it takes effect at the next restart", restart[i]);
    gs_log_set_level(s->conf.log_level);
    atomic_store(&s->pin.cap, gs_conf_pinned_cap(&s->conf));   /* new registrations */
    gs_bufpool_set_share(s->conf.buffer_pool_percent);
    gs_sched_set_inline_max(s->sched, gs_conf_inline_max(&s->conf));
    gs_sched_set_mem_cap(s->sched, s->conf.device_mem_cap);
    /* The allow lists apply to connections accepted from now on. */
    if (acl_rc < 0) {
        GS_ERROR("reload: %s; keeping allow_uids = \"%s\", allow_gids = \"%s\"",
                 acl_e.msg, s->conf.allow_uids, s->conf.allow_gids);
        return 1;
    }
    GS_INFO("reload: allow_uids = \"%s\", allow_gids = \"%s\" (new connections)",
            s->conf.allow_uids, s->conf.allow_gids);
    return 0;
}

/* A background tune (gs_retune.c) has ended: its plans take effect unless
 * the daemon is on its way out. */
static void on_retune_done(srv *s)
{
    if (!s->draining)
        srv_db_open(s);
    srv_check_drained(s);
}

static void on_signal(uv_signal_t *h, int signum)
{
    srv *s = h->data;
    if (signum != SIGHUP) {
        begin_shutdown(s, signum);
        return;
    }
    gs_systemd_reloading("SIGHUP: reloading the configuration and the tuning database");
    int failed = s->o->reload ? reload_conf(s) : 0;
    srv_db_open(s);
    GS_INFO("SIGHUP: configuration and tuning database reloaded (max_header_bytes %u, "
            "max_request_bytes %llu, max_clients %u)", s->conf.max_header_bytes,
            (unsigned long long)s->req_cap, s->conf.max_clients);
    /* READY=1 ends the reload either way: a bad file leaves the daemon
     * serving with what it had, which STATUS says. */
    notify_serving(s, failed ? "; reload failed, kept the previous configuration (see the log)"
                             : "");
}

/* ---- entry ---- */

int gs_srv_run(const gs_srv_opts *o, gs_err *err)
{
    srv *s = calloc(1, sizeof *s);
    if (!s)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    s->o = o;
    s->conf = *o->conf;
    pthread_mutex_init(&s->conf_mu, NULL);
    srv_accept_setup(s);
    s->t_start = gs_now_ms();
    atomic_store(&s->pin.cap, gs_conf_pinned_cap(&s->conf));
    s->req_cap = gs_conf_request_cap(&s->conf);
    gs_bufpool_set_share(s->conf.buffer_pool_percent);
    /* test hooks (gs_hooks.h): paths a GPU takes, forced on PoCL */
    const gs_hooks *hk = gs_hooks_get();
    s->pin.any_device = hk->pin_any_device;
    s->pin_once = !hk->pin_once_off;
    if (hk->stage_min) {
        gs_stage_force(hk->stage_min, hk->stage_chunk);
        gs_clrun_no_adopt(1);       /* copy as a GPU does, not in place */
    }
    if (hk->ooc_route >= 0)
        gs_ooc_force(hk->ooc_route, hk->ooc_lanes);
    gs_ooc_copy_plain(hk->ooc_copy_plain);
    int rc = srv_acl_load(s, &s->conf, err);
    if (rc < 0) {
        pthread_mutex_destroy(&s->conf_mu);
        free(s);
        return rc;
    }
    rc = uv_loop_init(&s->loop);
    if (rc < 0) {
        pthread_mutex_destroy(&s->conf_mu);
        free(s);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    /* A client may connect as soon as the socket exists, and send SIGHUP
     * (its default action kills the process) before the handler below is
     * in place: held pending until then, it becomes a reload. The threads
     * started meanwhile inherit the mask and keep it (gs_daemon_main blocks
     * it before the drivers start theirs), so it reaches this one, the
     * only thread that unblocks it below. */
    sigset_t hup, before;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, &before);
    rc = o->listen_fd > 0 ? gs_listen_adopt(&s->lis, o->listen_fd, err)
         : gs_listen_open(&s->lis, o->socket_path, s->conf.socket_mode, s->conf.socket_group,
                          err);
    if (rc < 0) {
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        uv_loop_close(&s->loop);
        pthread_mutex_destroy(&s->conf_mu);
        free(s);
        return rc;
    }
    unsigned ht = s->conf.host_threads;
    if (!ht) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        ht = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (unsigned)ncpu;
    }
    gs_sched_opts so = { .host_threads = ht, .device_lanes = s->conf.device_lanes,
                         .devices = s->conf.devices, .pc = o->pc };
    if ((rc = gs_sched_start(&s->sched, o->devs, o->ndev, &so, err)) < 0 ||
        (rc = srv_io_start(s, err)) < 0) {
        gs_listen_close(&s->lis);
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        if (s->sched)
            gs_sched_stop(s->sched);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        pthread_mutex_destroy(&s->conf_mu);
        free(s);
        return rc;
    }
    uv_async_init(&s->loop, &s->poke, on_poke);
    s->poke.data = s;
    gs_sched_set_inline_max(s->sched, gs_conf_inline_max(&s->conf));
    gs_sched_set_mem_cap(s->sched, s->conf.device_mem_cap);
    srv_mem_configure(s);
    srv_db_open(s);
    /* the descriptors the daemon itself holds are open now */
    pthread_mutex_lock(&s->conf_mu);
    srv_conn_fit_fds(s, 1);
    atomic_fetch_add(&s->conf_gen, 1);
    pthread_mutex_unlock(&s->conf_mu);

    uv_poll_init(&s->loop, &s->lis_poll, s->lis.fd);
    s->lis_poll.data = s;
    uv_poll_start(&s->lis_poll, UV_READABLE, srv_on_listen);
    s->lis_active = 1;
    uv_timer_init(&s->loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
    if (gs_hooks_get()->signal_delay_ms)
        usleep(gs_hooks_get()->signal_delay_ms * 1000u);
    uv_signal_t *sigs[3] = { &s->sig_term, &s->sig_int, &s->sig_hup };
    int signums[3] = { SIGTERM, SIGINT, SIGHUP };
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&s->loop, sigs[i]);
        sigs[i]->data = s;
        uv_signal_start(sigs[i], on_signal, signums[i]);
    }
    pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
    srv_retune_start(s, on_retune_done);

    GS_INFO("serving on %s (%s%zu devices, %u host threads, %u I/O loop%s, database %s)",
            s->lis.path, s->lis.adopted ? "socket-activated, " : "", gs_sched_ndev(s->sched), ht,
            s->nio, s->nio == 1 ? "" : "s", atomic_load(&s->db_ok) ? o->db_path : "none");
    if (srv_acl_active(s))
        GS_INFO("only these clients are served: allow_uids = \"%s\", allow_gids = \"%s\"",
                s->conf.allow_uids, s->conf.allow_gids);
    notify_serving(s, "");
    uv_run(&s->loop, UV_RUN_DEFAULT);

    if (!s->stopped) {   /* the loop ran dry without a signal: should not happen */
        begin_shutdown(s, 0);
        uv_run(&s->loop, UV_RUN_DEFAULT);
    }
    srv_counters t;
    srv_counters_sum(s, &t);
    srv_io_free(s);
    gs_listen_close(&s->lis);
    if (s->db)
        gs_db_close(s->db);
    int lrc = uv_loop_close(&s->loop);
    if (lrc < 0)
        GS_DEBUG("uv_loop_close: %s", uv_strerror(lrc));
    GS_INFO("stopped: %lu requests served, %lu errors", SRV_GET(t.req_ok), SRV_GET(t.req_err));
    srv_accept_teardown(s);
    pthread_mutex_destroy(&s->conf_mu);
    free(s);
    return 0;
}
