/* Default locations of gsortd's files: the program-binary cache and the
 * data directory (the tuning database). An explicit GSORTD_* variable
 * wins; root gets the system directories (/var/cache, /var/lib); other
 * users get the XDG base directories, falling back to $HOME. */
#ifndef GS_PATHS_H
#define GS_PATHS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

#include "gs_err.h"

#define GS_PATHS_MAX 4096
#define GS_PATHS_SOCKET_MAX 108     /* sizeof(sockaddr_un.sun_path) */
#define GS_PATHS_SYSTEM_SOCKET "/run/gsortd/gsortd.sock"   /* the system daemon's */

enum gs_paths_kind { GS_PATHS_CACHE = 0, GS_PATHS_DATA };

/* Resolve the default directory of `kind` as root (as_root != 0) or as a
 * normal user, into buf. Returns 0, GS_ENOTFOUND when no location can be
 * determined (no usable variable and no home directory), GS_ETOOBIG when
 * it does not fit in len. Exposed with as_root so tests can cover both. */
int gs_paths_default(int kind, int as_root, char *buf, size_t len);

/* $GSORTD_CACHE_DIR, else /var/cache/gsortd when euid is 0, else
 * $XDG_CACHE_HOME/gsortd, else $HOME/.cache/gsortd. Same returns. */
int gs_paths_cache_dir(char *buf, size_t len);
/* $GSORTD_DATA_DIR, else /var/lib/gsortd when euid is 0, else
 * $XDG_DATA_HOME/gsortd, else $HOME/.local/share/gsortd. Same returns. */
int gs_paths_data_dir(char *buf, size_t len);

/* mkdir -p: create `path` and missing parents with `mode` less its
 * world-write bit (umask applies too).
 * An existing directory is success; an existing non-directory is not.
 * Returns 0 or GS_EIO with the failing component and errno text in err;
 * errno is left as the failing call set it. */
int gs_paths_mkdir_p(const char *path, mode_t mode, gs_err *err);

/* The default socket: /run/gsortd/gsortd.sock as root, else
 * $XDG_RUNTIME_DIR/gsortd.sock. GS_ENOTFOUND when neither applies (not root
 * and no absolute $XDG_RUNTIME_DIR), GS_ETOOBIG when it does not fit. */
int gs_paths_socket(char *buf, size_t len, gs_err *err);

/* Where a client looks for the daemon: $GSORTD_SOCKET when set and not
 * empty; else the socket a gsortd run by this user makes by default
 * (gs_paths_socket: $XDG_RUNTIME_DIR/gsortd.sock, the system socket for
 * root) when it exists; else the system daemon's GS_PATHS_SYSTEM_SOCKET. `also` (may be NULL) gets a clause for an error
 * message naming the per-user socket that was looked for and absent.
 * GS_ETOOBIG when a path does not fit. */
int gs_paths_client_socket(char *buf, size_t len, char *also, size_t alen, gs_err *err);

/* The address of the Unix socket at `path` (zeroed first): -1 when the path
 * does not fit sun_path (sizeof a->sun_path - 1 bytes at most), else 0. */
int gs_paths_sockaddr(struct sockaddr_un *a, const char *path);

#endif
