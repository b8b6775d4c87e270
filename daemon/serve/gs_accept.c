/* Accepting clients, on the main loop: the listening socket (gs_listen.h)
 * is readable, so every waiting client is accepted, identified and let in
 * by access control (gs_acl.c), max_clients and max_clients_per_uid, then
 * handed to an I/O loop (gs_io.c), which serves it from then on (gs_conn.c).
 * A client turned away gets a short error frame (gs_conn.c writes it) and
 * its refusal is logged at a bounded rate; out of descriptors, accepting
 * pauses for a tick (the main loop's tick resumes it) rather than spin on
 * a listener that stays readable. The limits at accept keep their state
 * here (the refusal logs; the per-uid counts through gs_acl.c). */
#include "config.h"
#include "gs_srv_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "gs_hooks.h"
#include "gs_log.h"
#include "gs_time.h"

void srv_on_listen(uv_poll_t *h, int status, int events)
{
    srv *s = h->data;
    (void)status;
    (void)events;
    for (;;) {
        int fd = accept4(s->lis.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
                /* Out of descriptors: pause accepting for a tick instead of
                 * spinning on a listener that stays readable. */
                if (srv_ratelog_allow(&s->accept_log, gs_now_ms()))
                    GS_WARN("cannot accept clients: %s; pausing for %d ms", strerror(errno),
                            TICK_MS);
                uv_poll_stop(&s->lis_poll);
                s->lis_paused = 1;
            }
            return;
        }
        struct ucred cr;
        char who[96], msg[256];
        if (!srv_acl_admit(s, fd, &cr, who, sizeof who, msg, sizeof msg)) {
            atomic_fetch_add(&s->clients_denied, 1);
            if (srv_ratelog_allow(&s->refuse_log, gs_now_ms()))
                GS_WARN("refusing client %s: not in allow_uids/allow_gids", who);
            srv_conn_refuse(fd, GS_EPERM, msg);
            continue;
        }
        int took = 0;
        if (atomic_load(&s->nconns) >= s->conf.max_clients)
            snprintf(msg, sizeof msg, "too many clients (max_clients = %u); try again later",
                     s->conf.max_clients);
        else
            took = srv_acl_uid_take(s, &cr, s->conf.max_clients_per_uid, msg, sizeof msg);
        if (took <= 0) {
            atomic_fetch_add(&s->clients_rejected, 1);
            if (srv_ratelog_allow(&s->refuse_log, gs_now_ms()))
                GS_WARN("refusing client %s: %s", who, msg);
            srv_conn_refuse(fd, took < 0 ? GS_ENOMEM : GS_ETOOBIG, msg);
            continue;
        }
        atomic_fetch_add(&s->clients_total, 1);
        srv_io_hand(s, fd, &cr, who);
    }
}

void srv_accept_setup(srv *s)
{
    s->refuse_log.what = "refusals";
    s->accept_log.what = "accept failures";
    srv_acl_uids_init(s);
    s->uid_cap_all = gs_hooks_get()->uid_cap_all;
}

void srv_accept_teardown(srv *s)
{
    srv_acl_uids_free(s);
}

void srv_accept_tick(srv *s, double now_ms)
{
    srv_ratelog_flush(&s->refuse_log, now_ms);
    srv_ratelog_flush(&s->accept_log, now_ms);
}
