/* What the daemon-facing benchmarks (gsort-netbench, gsort-load) do to talk
 * to a running gsortd besides their requests: name its socket, connect with
 * a hint when nobody listens, ask for its info, ping it, and read its
 * resident memory. Messages start with the program's name (`prog`). */
#ifndef GS_BENCHCLIENT_H
#define GS_BENCHCLIENT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "gs_client.h"

/* The socket path shown in reports: `socket` itself, or (NULL) the default
 * one gs_client connects to. Without a default prints "PROG: no default
 * socket (why): give OPT PATH" and returns -1. */
int bc_socket_shown(const char *socket, char *shown, size_t len, const char *prog,
                    const char *opt);

/* Connect to `socket` (NULL: the default), with a reply timeout when
 * timeout_s > 0. On failure prints "PROG: why" and the `hint` lines that
 * follow it, and returns -1. */
int bc_connect(gs_client **c, const char *socket, double timeout_s, const char *prog,
               const char *hint);

/* The daemon's info reply into *info (the caller deletes it); on failure
 * prints "PROG: info request failed: why" and returns -1. */
int bc_info(gs_client *c, const char *prog, cJSON **info);

/* A ping over a connection of its own: 0, or a negative code with err. */
int bc_ping(const char *socket, double timeout_s, gs_err *err);

/* VmRSS of process pid in KiB, or -1 (no such process here). */
long bc_rss_kib(long pid);

#endif
