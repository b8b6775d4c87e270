/* What the daemon-facing benchmarks (gsort-netbench, gsort-load) do to talk
 * to a running gsortd besides their requests: name its socket, connect with
 * a hint when nobody listens, ask for its info, ping it, read its resident
 * memory, and read the client blocks it keeps and pins (its stats).
 * Messages start with the program's name (`prog`). */
#ifndef GS_BENCHCLIENT_H
#define GS_BENCHCLIENT_H

#include <stddef.h>
#include <stdint.h>

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

/* The daemon's pid and a one-line description ("gsortd VERSION, devices:
 * NAME ...") from its info reply, over a connection of its own; -1 after
 * printing "PROG: why" (with a hint when nobody listens). */
int bc_daemon_desc(const char *socket, double timeout_s, const char *prog, long *pid,
                   char *desc, size_t dl);

/* A ping over a connection of its own: 0, or a negative code with err. */
int bc_ping(const char *socket, double timeout_s, gs_err *err);

/* VmRSS of process pid in KiB, or -1 (no such process here). */
long bc_rss_kib(long pid);

/* A "Name:  N kB" line of /proc/PID/status in KiB ("VmRSS", "RssShmem":
 * the shared memory it maps, such as memfds clients sent), or -1 (no such
 * process, or a kernel without that line). */
long bc_status_kib(long pid, const char *field);

/* VmRSS less RssShmem in KiB: the process's own memory, without the shared
 * memory it maps (memfds its clients sent), or -1. */
long bc_rss_own_kib(long pid);

/* What the daemon's stats say of its connections and of the client blocks
 * (memfds) it keeps: connections open now (one whose client hung up while
 * its request runs counts until the request ends), memfd requests that
 * mapped a block anew or reused a kept one, the bytes pinned for device
 * copies now and the cap on them, and the registrations made and refused. */
typedef struct bc_stats {
    uint64_t conns;
    uint64_t mapped, reused, pinned_bytes, max_pinned_bytes, pinned, refused;
    uint64_t cached;    /* memory.cached: host scratch and CPU-device buffers kept for
                           reuse (0 from a daemon before issue 32, which has no such field) */
} bc_stats;

/* A stats request on c into *st: 0, or a negative code with err
 * (GS_ECORRUPT when the reply lacks one of those numbers). */
int bc_stats_read(gs_client *c, bc_stats *st, gs_err *err);

/* The same for a program that polls: on *c, connected first when NULL,
 * and tried once more on a new connection when it fails (*c is then
 * replaced). 0, or -1 after printing "PROG: why". */
int bc_stats_poll(gs_client **c, const char *socket, double timeout_s, const char *prog,
                  bc_stats *st);

#endif
