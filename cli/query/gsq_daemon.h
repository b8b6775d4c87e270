/* gsort-query's view of a running daemon: the socket it talks to (chosen
 * like libgsort chooses it) and the info and stats replies shown as
 * readable tables, as CSV (info: the devices, stats: the routes) or as the
 * reply itself (JSON). */
#ifndef GSQ_DAEMON_H
#define GSQ_DAEMON_H

#include <stddef.h>
#include <stdio.h>

#include "gs_err.h"
#include "gsq_out.h"

/* `given` when not NULL, else $GSORTD_SOCKET when set, else
 * $XDG_RUNTIME_DIR/gsortd.sock when that exists, else
 * /run/gsortd/gsortd.sock. */
int gsq_socket_path(const char *given, char *buf, size_t len, gs_err *err);

/* Ask the daemon at `socket` for `op` ("info" or "stats") and print the
 * reply in `fmt` (table lines cut to `width` when > 0). */
int gsq_daemon_show(FILE *out, const char *op, const char *socket, gsq_fmt fmt, int width,
                    gs_err *err);

#endif
