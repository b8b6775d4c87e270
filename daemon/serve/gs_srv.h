/* The serving side of gsortd: a libuv loop on the Unix socket, one
 * connection record per client with its own resumable protocol reader, the
 * ops (sort, info, stats, ping), limits and timeouts, statistics, signals
 * (SIGTERM/SIGINT: drain and exit; SIGHUP: reload the configuration and the
 * database) and the optional background tuning of devices without a plan.
 * Sorting itself happens in the scheduler's worker threads (gs_sched.h).
 * The main loop is gs_srv.c; accepting clients gs_accept.c; the I/O loops
 * that share them gs_io.c, operations gs_ops.c, connections gs_conn.c,
 * admission against the memory budget gs_admit.c, kept client memory
 * blocks gs_blocks.c, access control gs_acl.c, background tuning
 * gs_retune.c (sharing gs_srv_int.h, which maps who calls whom). */
#ifndef GS_SRV_H
#define GS_SRV_H

#include <stddef.h>

#include "gs_conf.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_prog.h"

/* Re-read the configuration for SIGHUP: defaults, the file, then the
 * command-line overrides. 0 with *out filled, or an error (the daemon keeps
 * its current configuration and logs why). */
typedef int (*gs_srv_reload_fn)(gs_conf *out, gs_err *err, void *ud);

typedef struct gs_srv_opts {
    const gs_conf *conf;          /* effective configuration at start */
    const char *socket_path;      /* resolved socket path (unused with listen_fd) */
    int listen_fd;                /* >= 3: a listening socket from systemd (socket
                                     activation) to serve on instead of binding
                                     socket_path; 0: none */
    const char *db_path;          /* resolved database path ("" or NULL: none) */
    gs_dev *devs;                 /* probed devices (not yet opened) */
    size_t ndev;
    gs_pcache *pc;
    gs_srv_reload_fn reload;      /* NULL: SIGHUP only re-opens the database */
    void *reload_ud;
} gs_srv_opts;

/* Serve until SIGTERM or SIGINT, then drain and return 0. Fails before
 * serving (socket in use, no memory) with the reason. systemd is notified
 * (gs_systemd.h) when serving starts (READY), around each SIGHUP reload
 * (RELOADING, then READY) and when shutdown starts (STOPPING). */
int gs_srv_run(const gs_srv_opts *o, gs_err *err);

#endif
