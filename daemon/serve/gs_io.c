/* The I/O loops: io_threads event loops share the clients, so that reading,
 * parsing, routing and replying scale past what one thread does (one loop
 * tops out near 60k small requests/s however many cores there are). The
 * main loop accepts a client (gs_accept.c) and hands it to the loop with
 * the fewest (srv_io_hand), which serves it to the end: its connection
 * (gs_conn.c), whose whole requests go to the operations (gs_ops.c's
 * srv_op_run, given to each connection it opens), its sorts' completions
 * (its own scheduler sink, gs_ops.c's srv_on_job_done), its waits for
 * memory (gs_admit.c) and its timeouts. Loop 0 runs on the main loop's
 * thread, so one loop costs no extra thread or hand-off. A loop learns of a
 * reload, of draining and of the stop through its wake handle, and takes a
 * fresh copy of the configuration when conf_gen has moved. */
#include "config.h"
#include "gs_srv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gs_log.h"
#include "gs_time.h"

/* ---- on the loop's own thread ---- */

static void io_sync_conf(srv_io *io)
{
    srv *s = io->s;
    unsigned g = atomic_load(&s->conf_gen);
    if (g == io->conf_gen)
        return;
    pthread_mutex_lock(&s->conf_mu);
    io->conf = s->conf;
    io->req_cap = s->req_cap;
    io->conf_gen = atomic_load(&s->conf_gen);
    pthread_mutex_unlock(&s->conf_mu);
}

static void on_io_tick(uv_timer_t *t)
{
    srv_io *io = t->data;
    io_sync_conf(io);
    srv_mem_retry(io);
    double now = gs_now_ms();
    srv_ratelog_flush(&io->drop_log, now);
    for (conn *c = io->conns, *next; c; c = next) {
        next = c->next;
        /* request_timeout first: a wait for memory counts towards it; io_timeout
         * does not (a wait for memory has its own bound, memory_wait) */
        if (c->busy || srv_conn_overdue(c, now) || c->mem_wait)
            continue;
        int mid = c->wr_active || c->rd.state != GS_RD_LEN || c->rd.len_have;
        if (mid && now - c->last_progress > io->conf.io_timeout_s * 1000) {
            char why[128];
            snprintf(why, sizeof why, "no progress for %.1f s (io_timeout) in the middle of a %s",
                     io->conf.io_timeout_s, c->wr_active ? "reply" : "request");
            srv_conn_close(c, why);
        } else if (!mid && now - c->last_activity > io->conf.idle_timeout_s * 1000) {
            srv_conn_close(c, "idle (idle_timeout)");
        }
    }
}

/* Draining: the clients with nothing in progress go now; the others when
 * their reply is written (gs_conn.c). */
static void io_drain(srv_io *io)
{
    io->draining = 1;
    for (conn *c = io->conns, *next; c; c = next) {
        next = c->next;
        if (!c->busy && !c->wr_active)
            srv_conn_close(c, NULL);
    }
    srv_conn_poke(io);
}

static void io_close_handles(srv_io *io)
{
    io->stopping = 1;
    uv_timer_stop(&io->tick);
    uv_close((uv_handle_t *)&io->tick, NULL);
    gs_sched_sink_close(&io->sink);
    uv_close((uv_handle_t *)&io->wake, NULL);
}

static void on_wake(uv_async_t *h)
{
    srv_io *io = h->data;
    srv *s = io->s;
    io_sync_conf(io);
    pthread_mutex_lock(&io->mu);
    srv_pend *p = io->pend;
    io->pend = NULL;
    pthread_mutex_unlock(&io->mu);
    /* handed over in order: the list is last-in first */
    srv_pend *rev = NULL;
    while (p) {
        srv_pend *next = p->next;
        p->next = rev;
        rev = p;
        p = next;
    }
    for (p = rev; p; p = rev) {
        rev = p->next;
        srv_conn_open(io, p, srv_op_run);
        free(p);
    }
    srv_mem_retry(io);          /* memory was given back, maybe */
    if (atomic_load(&s->draining) && !io->draining)
        io_drain(io);
    if (atomic_load(&s->stopping) && !io->stopping)
        io_close_handles(io);
}

static void *io_main(void *arg)
{
    srv_io *io = arg;
    uv_run(io->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* ---- set up, hand over, stop: on the main loop's thread ---- */

static int io_init(srv *s, srv_io *io, unsigned idx, gs_err *err)
{
    io->s = s;
    io->idx = idx;
    io->drop_log.what = "warnings about lost descriptors";
    io->conf = s->conf;
    io->req_cap = s->req_cap;
    io->conf_gen = atomic_load(&s->conf_gen);
    if (pthread_mutex_init(&io->mu, NULL) != 0)
        return gs_err_set(err, GS_ENOMEM, "cannot create a lock");
    int rc = 0;
    if (idx == 0) {
        io->loop = &s->loop;
    } else {
        io->loop = &io->own;
        rc = uv_loop_init(io->loop);
    }
    if (rc == 0)
        rc = uv_async_init(io->loop, &io->wake, on_wake);
    if (rc < 0) {
        if (idx)
            uv_loop_close(io->loop);
        pthread_mutex_destroy(&io->mu);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    io->wake.data = io;
    if ((rc = gs_sched_sink_init(&io->sink, s->sched, io->loop, srv_on_job_done, io, err)) < 0) {
        uv_close((uv_handle_t *)&io->wake, NULL);
        uv_run(io->loop, UV_RUN_DEFAULT);
        if (idx)
            uv_loop_close(io->loop);
        pthread_mutex_destroy(&io->mu);
        return rc;
    }
    uv_timer_init(io->loop, &io->tick);
    io->tick.data = io;
    uv_timer_start(&io->tick, on_io_tick, TICK_MS, TICK_MS);
    io->open = 1;
    return 0;
}

int srv_io_start(srv *s, gs_err *err)
{
    s->nio = gs_conf_io_threads(&s->conf);
    if (!(s->io = calloc(s->nio, sizeof *s->io)))
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int rc = 0;
    for (unsigned i = 0; i < s->nio; i++) {
        srv_io *io = &s->io[i];
        if ((rc = io_init(s, io, i, err)) < 0)
            break;
        if (i && pthread_create(&io->th, NULL, io_main, io) != 0) {
            rc = gs_err_set(err, GS_ENOMEM, "cannot start an I/O thread");
            io_close_handles(io);
            uv_run(io->loop, UV_RUN_DEFAULT);
            uv_loop_close(io->loop);
            pthread_mutex_destroy(&io->mu);
            io->open = 0;
            break;
        }
        io->th_started = i > 0;
    }
    if (rc < 0) {
        srv_io_stop(s);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        srv_io_free(s);
    }
    return rc;
}

void srv_io_hand(srv *s, int fd, const struct ucred *cred, const char *who)
{
    srv_pend *p = malloc(sizeof *p);
    if (!p) {
        GS_WARN("refusing client %s: out of memory", who);
        close(fd);
        srv_acl_uid_drop(s, (unsigned)cred->uid);
        return;
    }
    p->fd = fd;
    p->cred = *cred;
    snprintf(p->who, sizeof p->who, "%s", who);
    /* The loop with the fewest clients; ties go round, so that a burst of
     * connections spreads before any of them is counted. */
    srv_io *best = NULL;
    unsigned bn = 0;
    for (unsigned k = 0; k < s->nio; k++) {
        srv_io *io = &s->io[(s->next_io + k) % s->nio];
        unsigned n = atomic_load(&io->nconns);
        if (!best || n < bn) {
            best = io;
            bn = n;
        }
    }
    s->next_io = (best->idx + 1) % s->nio;
    atomic_fetch_add(&best->nconns, 1);
    atomic_fetch_add(&s->nconns, 1);
    pthread_mutex_lock(&best->mu);
    p->next = best->pend;
    best->pend = p;
    pthread_mutex_unlock(&best->mu);
    uv_async_send(&best->wake);
}

void srv_io_wake_all(srv *s)
{
    for (unsigned i = 0; i < s->nio; i++)
        if (s->io[i].open)
            uv_async_send(&s->io[i].wake);
}

void srv_io_stop(srv *s)
{
    atomic_store(&s->stopping, 1);
    srv_io_wake_all(s);
    for (unsigned i = 1; i < s->nio; i++)
        if (s->io[i].th_started) {
            pthread_join(s->io[i].th, NULL);
            s->io[i].th_started = 0;
        }
    if (s->nio && s->io[0].open && !s->io[0].stopping)
        io_close_handles(&s->io[0]);
}

void srv_io_free(srv *s)
{
    for (unsigned i = 0; i < s->nio; i++) {
        srv_io *io = &s->io[i];
        if (io->open && i) {
            int rc = uv_loop_close(io->loop);
            if (rc < 0)
                GS_DEBUG("I/O loop %u: uv_loop_close: %s", i, uv_strerror(rc));
        }
        /* a client handed over as the loop stopped */
        for (srv_pend *p = io->pend, *next; p; p = next) {
            next = p->next;
            close(p->fd);
            srv_acl_uid_drop(s, (unsigned)p->cred.uid);
            free(p);
        }
        if (io->open)
            pthread_mutex_destroy(&io->mu);
    }
    free(s->io);
    s->io = NULL;
    s->nio = 0;
}
