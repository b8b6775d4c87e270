/* The daemon's listening socket: a Unix stream socket at a path, guarded by
 * a lock file (PATH.lock, flock) so two daemons never share a path. A socket
 * file left by a dead daemon is replaced; a live one, or a path that is not
 * a socket, is refused with the reason. The socket gets a restrictive mode
 * (never world-writable) and optionally a group, and is removed on close
 * only while it is still the one this daemon created. A socket inherited
 * ready-made (systemd socket activation) is adopted instead: no lock, no
 * mode or group changes, and it is never removed (its owner manages it). */
#ifndef GS_LISTEN_H
#define GS_LISTEN_H

#include <sys/types.h>

#include "gs_conf.h"
#include "gs_err.h"

typedef struct gs_listen {
    int fd;                 /* listening, non-blocking, close-on-exec; -1 when closed */
    int lock_fd;
    char path[GS_CONF_SOCKET_MAX];
    char lock_path[GS_CONF_SOCKET_MAX + 8];
    dev_t dev;              /* identity of the socket file we bound */
    ino_t ino;
    int replaced_stale;     /* a dead daemon's socket file was removed */
    int adopted;            /* inherited (gs_listen_adopt): not ours to remove */
} gs_listen;

/* Bind and listen at `path` with `mode` (e.g. 0660) and `group` ("" or
 * NULL: unchanged). The parent directory must exist, except for the
 * root default /run/gsortd, which is created 0755. Errors: GS_EINVAL (path
 * too long, mode world-writable, unknown group), GS_EIO (another daemon
 * holds the lock or listens there, the path is not a socket, a system call
 * failed), each naming the path. */
int gs_listen_open(gs_listen *l, const char *path, unsigned mode, const char *group,
                   gs_err *err);
/* Serve on `fd`, a listening Unix stream socket made by someone else
 * (systemd's gsortd.socket): make it non-blocking and close-on-exec and
 * note its path (from getsockname; "@name" for an abstract one) for logs
 * and replies. GS_EIO when that fails; `fd` is then left open. */
int gs_listen_adopt(gs_listen *l, int fd, gs_err *err);
/* Stop listening, remove the socket (if still ours) and the lock file; an
 * adopted socket is only closed. */
void gs_listen_close(gs_listen *l);

#endif
