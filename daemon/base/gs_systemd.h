/* Everything gsortd does for systemd, in one place: readiness and state
 * notifications (sd_notify(3): READY, RELOADING, STOPPING, STATUS) and socket
 * activation (sd_listen_fds(3): the listening socket handed over by
 * gsortd.socket). With libsystemd (HAVE_SYSTEMD) these talk to systemd;
 * without it they do nothing, and say so once where someone evidently
 * expected them to work (NOTIFY_SOCKET or LISTEN_FDS set). */
#ifndef GS_SYSTEMD_H
#define GS_SYSTEMD_H

#include "gs_err.h"

/* 1 when this gsortd was built with libsystemd, else 0. */
int gs_systemd_supported(void);

/* Socket activation. *fd = -1 (returning 0) when systemd passed this
 * process no socket; *fd >= 3 (returning 0) when it passed exactly one
 * listening Unix stream socket, which the caller then owns. Anything else
 * systemd passed (several descriptors, a datagram or TCP socket, a socket
 * that is not listening as with Accept=yes, a file) is GS_EINVAL with a
 * message naming the descriptor and what it is. The LISTEN_* variables are
 * removed from the environment in every case. Without libsystemd: a
 * warning when LISTEN_FDS is set, then *fd = -1. */
int gs_systemd_listen_fd(int *fd, gs_err *err);

/* State notifications; each sends one datagram to $NOTIFY_SOCKET, or does
 * nothing when it is not set. A failure to send is logged once, never
 * fatal. `status` is shown by `systemctl status` (STATUS=); printf-style. */
/* READY=1: the socket listens and the devices are set up (also the end of
 * a reload). */
void gs_systemd_ready(const char *status_fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1 with MONOTONIC_USEC (systemd 253+ wants it; older versions
 * ignore it): a SIGHUP reload begins. Follow it with gs_systemd_ready. */
void gs_systemd_reloading(const char *status_fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1: shutdown has begun (requests in flight are finishing). */
void gs_systemd_stopping(const char *status_fmt, ...) __attribute__((format(printf, 1, 2)));
/* STATUS= alone: progress worth showing in `systemctl status`. */
void gs_systemd_status(const char *status_fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
