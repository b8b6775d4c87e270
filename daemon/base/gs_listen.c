/* Creating, guarding and removing the daemon's Unix socket. The lock file
 * makes "is another daemon using this path?" a race-free question; the
 * connect probe then tells a stale socket file (nobody answers: replace it)
 * from a live listener that does not use our lock (refuse). */
#include "config.h"
#include "gs_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gs_log.h"
#include "gs_paths.h"

static int sys_fail(gs_err *err, const char *what, const char *path)
{
    return gs_err_set(err, GS_EIO, "%s %s: %s", what, path, strerror(errno));
}

/* 1: something accepts connections at path; 0: nobody does (stale file). */
static int someone_listens(const struct sockaddr_un *a)
{
    /* Non-blocking: a listener with a full backlog answers EAGAIN instead
     * of hanging our start-up; it still counts as alive. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return 0;
    int r = connect(fd, (const struct sockaddr *)a, sizeof *a);
    int e = errno;
    close(fd);
    return r == 0 || (e != ECONNREFUSED && e != ENOENT);
}

static int lookup_group(const char *name, gid_t *gid, gs_err *err)
{
    char buf[16384];
    struct group g, *res = NULL;
    if (getgrnam_r(name, &g, buf, sizeof buf, &res) == 0 && res) {
        *gid = res->gr_gid;
        return 0;
    }
    /* A number names the group by id, as chown(1) allows. */
    char *end;
    errno = 0;
    unsigned long v = strtoul(name, &end, 10);
    if (name[0] >= '0' && name[0] <= '9' && !*end && !errno && v < (gid_t)-1) {
        *gid = (gid_t)v;
        return 0;
    }
    return gs_err_set(err, GS_EINVAL, "socket_group '%s': no such group", name);
}

int gs_listen_open(gs_listen *l, const char *path, unsigned mode, const char *group,
                   gs_err *err)
{
    memset(l, 0, sizeof *l);
    l->fd = l->lock_fd = -1;
    struct sockaddr_un a;
    if (!path || path[0] != '/' || gs_paths_sockaddr(&a, path) < 0)
        return gs_err_set(err, GS_EINVAL, "socket path '%s': must be absolute and shorter "
                          "than %zu bytes", path ? path : "", sizeof a.sun_path);
    if (mode & 0002)
        return gs_err_set(err, GS_EINVAL, "socket mode %04o is world-writable: any local "
                          "user could submit work; use 0660 or 0600", mode);
    gid_t gid = (gid_t)-1;
    int rc;
    if (group && group[0] && (rc = lookup_group(group, &gid, err)) < 0)
        return rc;
    snprintf(l->path, sizeof l->path, "%s", path);
    snprintf(l->lock_path, sizeof l->lock_path, "%s.lock", path);

    if (!strcmp(path, "/run/gsortd/gsortd.sock") && (rc = gs_paths_mkdir_p("/run/gsortd", 0755, err)) < 0)
        return rc;

    /* The holder unlinks the lock file when it stops; a lock taken on a file
     * that was unlinked meanwhile guards nothing, so check and retry. */
    for (int tries = 0;; tries++) {
        l->lock_fd = open(l->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (l->lock_fd < 0)
            return sys_fail(err, "cannot open the lock file", l->lock_path);
        if (flock(l->lock_fd, LOCK_EX | LOCK_NB) < 0) {
            rc = errno == EWOULDBLOCK
                 ? gs_err_set(err, GS_EIO, "another gsortd is running on %s (it holds %s)",
                              path, l->lock_path)
                 : sys_fail(err, "cannot lock", l->lock_path);
            close(l->lock_fd);
            l->lock_fd = -1;
            return rc;
        }
        struct stat a1, a2;
        if (fstat(l->lock_fd, &a1) == 0 && stat(l->lock_path, &a2) == 0 &&
            a1.st_dev == a2.st_dev && a1.st_ino == a2.st_ino) {
            /* A lock file left by someone else may be wider than ours. */
            if ((a1.st_mode & 07777) != 0600 && fchmod(l->lock_fd, 0600) < 0)
                GS_WARN("cannot set the mode of %s to 0600: %s", l->lock_path,
                        strerror(errno));
            break;
        }
        close(l->lock_fd);
        l->lock_fd = -1;
        if (tries == 10)
            return gs_err_set(err, GS_EIO, "the lock file %s keeps changing; is another "
                              "gsortd starting on %s?", l->lock_path, path);
    }

    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode)) {
            rc = gs_err_set(err, GS_EIO, "%s exists and is not a socket; refusing to "
                            "replace it", path);
            goto fail;
        }
        if (someone_listens(&a)) {
            rc = gs_err_set(err, GS_EIO, "another process is listening on %s", path);
            goto fail;
        }
        if (unlink(path) < 0) {
            rc = sys_fail(err, "cannot remove the stale socket", path);
            goto fail;
        }
        l->replaced_stale = 1;
        GS_WARN("replaced a stale socket file at %s (its daemon is gone)", path);
    }

    l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l->fd < 0) {
        rc = sys_fail(err, "socket() for", path);
        goto fail;
    }
    /* Bind under a tight umask so the file is never more open than asked,
     * not even between bind() and chmod(). */
    mode_t old = umask(0177);
    int b = bind(l->fd, (struct sockaddr *)&a, sizeof a);
    int be = errno;
    umask(old);
    if (b < 0) {
        errno = be;
        rc = sys_fail(err, "cannot bind", path);
        goto fail;
    }
    if (stat(path, &sb) < 0) {
        rc = sys_fail(err, "cannot stat", path);
        goto fail_unlink;
    }
    l->dev = sb.st_dev;
    l->ino = sb.st_ino;
    if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) {
        rc = sys_fail(err, "cannot set the group of", path);
        goto fail_unlink;
    }
    if (chmod(path, (mode_t)mode) < 0) {
        rc = sys_fail(err, "cannot set the mode of", path);
        goto fail_unlink;
    }
    if (listen(l->fd, 128) < 0) {
        rc = sys_fail(err, "cannot listen on", path);
        goto fail_unlink;
    }
    return 0;
fail_unlink:
    unlink(path);
fail:
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    unlink(l->lock_path);
    close(l->lock_fd);
    l->lock_fd = -1;
    return rc;
}

int gs_listen_adopt(gs_listen *l, int fd, gs_err *err)
{
    memset(l, 0, sizeof *l);
    l->fd = l->lock_fd = -1;
    struct sockaddr_un a;
    socklen_t alen = sizeof a;
    memset(&a, 0, sizeof a);
    if (getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
        return gs_err_set(err, GS_EIO, "inherited socket (fd %d): getsockname: %s", fd,
                          strerror(errno));
    size_t plen = alen > offsetof(struct sockaddr_un, sun_path)
                  ? alen - offsetof(struct sockaddr_un, sun_path) : 0;
    if (plen == 0)
        snprintf(l->path, sizeof l->path, "(unnamed socket, fd %d)", fd);
    else if (a.sun_path[0] == '\0')   /* abstract: shown the way ss(8) shows it */
        snprintf(l->path, sizeof l->path, "@%.*s", (int)(plen - 1), a.sun_path + 1);
    else
        snprintf(l->path, sizeof l->path, "%.*s", (int)strnlen(a.sun_path, plen), a.sun_path);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return gs_err_set(err, GS_EIO, "inherited socket %s (fd %d): fcntl: %s", l->path, fd,
                          strerror(errno));
    l->fd = fd;
    l->adopted = 1;
    return 0;
}

void gs_listen_close(gs_listen *l)
{
    if (l->fd >= 0) {
        close(l->fd);
        l->fd = -1;
        struct stat sb;
        /* Only our own file: an operator may have started another daemon
         * on the path after removing ours by hand; an adopted socket is
         * systemd's, which listens on it again for the next start. */
        if (!l->adopted && lstat(l->path, &sb) == 0 && sb.st_dev == l->dev &&
            sb.st_ino == l->ino)
            unlink(l->path);
    }
    if (l->lock_fd >= 0) {
        unlink(l->lock_path);
        close(l->lock_fd);
        l->lock_fd = -1;
    }
}
