/* The daemon's listening socket (daemon/base/gs_listen.c), in a mkdtemp directory:
 * the file gets exactly the requested mode whatever the umask, world-writable
 * modes and bad paths are refused before anything is created, the lock file
 * keeps a second opener out, a dead daemon's socket is replaced while a live
 * listener or a regular file is refused (and left alone), close removes only
 * what is still ours, socket_group sets the file's group, and a client can
 * connect and talk through the accepted descriptor. */
#include "config.h"
#include "gs_listen.h"
#include "gs_log.h"
#include "gs_paths.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[] = "/tmp/gsortd-listen-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int exists(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0;
}

static int is_socket(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISSOCK(sb.st_mode);
}

static unsigned mode_of(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (unsigned)(sb.st_mode & 07777) : 0xffffffffu;
}

static void lock_of(char *buf, size_t len, const char *sock)
{
    snprintf(buf, len, "%s.lock", sock);
}

/* A socket bound at path by the test itself (listening or not); -1 on failure. */
static int bind_at(const char *path, int do_listen)
{
    struct sockaddr_un a;
    if (gs_paths_sockaddr(&a, path) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || (do_listen && listen(fd, 4) < 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int connect_to(const char *path)
{
    struct sockaddr_un a;
    if (gs_paths_sockaddr(&a, path) < 0)
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Connect, accept on the (non-blocking) listener, and pass one byte each
 * way: the whole path a client takes. 1 on success. */
static int round_trip(const gs_listen *l, const char *path)
{
    int c = connect_to(path);
    if (c < 0)
        return 0;
    struct pollfd p = { .fd = l->fd, .events = POLLIN };
    int ok = 0, s = -1;
    if (poll(&p, 1, 5000) == 1 && (s = accept(l->fd, NULL, NULL)) >= 0) {
        /* the accepted fd may inherit O_NONBLOCK; wait for data either way */
        char b = 0;
        struct pollfd ps = { .fd = s, .events = POLLIN }, pc = { .fd = c, .events = POLLIN };
        ok = write(c, "x", 1) == 1 && poll(&ps, 1, 5000) == 1 && read(s, &b, 1) == 1 &&
             b == 'x' && write(s, "y", 1) == 1 && poll(&pc, 1, 5000) == 1 &&
             read(c, &b, 1) == 1 && b == 'y';
        close(s);
    }
    close(c);
    return ok;
}

/* Warnings seen through the log sink (the stale-socket replacement logs one). */
static int g_warns;
static char g_last_warn[1024];

static void count_sink(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level == GS_LOG_WARN) {
        g_warns++;
        snprintf(g_last_warn, sizeof g_last_warn, "%s", msg);
    }
}

static void test_modes(void)
{
    char p[256], lk[300];
    path_of(p, sizeof p, "mode.sock");
    lock_of(lk, sizeof lk, p);
    static const struct { mode_t umask; unsigned mode; } cases[] = {
        { 0, 0660 }, { 0, 0600 }, { 022, 0660 }, { 022, 0600 }, { 077, 0660 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gs_listen l;
        gs_err err;
        gs_err_clear(&err);
        umask(cases[i].umask);
        int rc = gs_listen_open(&l, p, cases[i].mode, NULL, &err);
        mode_t after = umask(022);
        if (!tap_ok(rc == 0, "umask %03o, mode %04o: open succeeds", (unsigned)cases[i].umask,
                    cases[i].mode))
            tap_diag("%s", err.msg);
        tap_ok(is_socket(p), "umask %03o, mode %04o: a socket file at the path",
               (unsigned)cases[i].umask, cases[i].mode);
        unsigned m = mode_of(p);
        tap_ok(m == cases[i].mode, "umask %03o: mode is exactly %04o (got %04o)",
               (unsigned)cases[i].umask, cases[i].mode, m);
        tap_ok(after == cases[i].umask, "umask %03o is restored after open (got %03o)",
               (unsigned)cases[i].umask, (unsigned)after);
        if (rc == 0)
            gs_listen_close(&l);
        tap_ok(!exists(p) && !exists(lk), "umask %03o, mode %04o: close removes socket and lock",
               (unsigned)cases[i].umask, cases[i].mode);
    }
    umask(022);
}

static void test_refusals(void)
{
    char p[256], lk[300];
    gs_listen l;
    gs_err err;
    static const unsigned world[] = { 0666, 0662 };
    for (size_t i = 0; i < 2; i++) {
        path_of(p, sizeof p, "world.sock");
        lock_of(lk, sizeof lk, p);
        gs_err_clear(&err);
        int rc = gs_listen_open(&l, p, world[i], NULL, &err);
        tap_ok(rc == GS_EINVAL, "mode %04o is refused with GS_EINVAL (rc %d)", world[i], rc);
        tap_ok(strstr(err.msg, "world-writable") != NULL, "mode %04o: says world-writable: %s",
               world[i], err.msg);
        tap_ok(!exists(p) && !exists(lk), "mode %04o: no socket or lock file created", world[i]);
        if (rc == 0)
            gs_listen_close(&l);
    }

    gs_err_clear(&err);
    int rc = gs_listen_open(&l, "relative.sock", 0660, NULL, &err);
    tap_ok(rc == GS_EINVAL, "a relative path is refused with GS_EINVAL (rc %d)", rc);
    tap_ok(!exists("relative.sock") && !exists("relative.sock.lock"),
           "relative path: nothing created in the working directory");
    if (rc == 0)
        gs_listen_close(&l);

    /* sun_path holds 108 bytes with the NUL: 107 characters fit, 108 do not */
    static const size_t lens[] = { 108, 150 };
    char lng[200];
    int base = snprintf(lng, sizeof lng, "%s/", dir);
    for (size_t i = 0; i < 2; i++) {
        memset(lng + base, 'a', lens[i] - (size_t)base);
        lng[lens[i]] = '\0';
        lock_of(lk, sizeof lk, lng);
        gs_err_clear(&err);
        rc = gs_listen_open(&l, lng, 0660, NULL, &err);
        tap_ok(rc == GS_EINVAL, "a %zu-byte path is refused with GS_EINVAL (rc %d)",
               strlen(lng), rc);
        tap_ok(!exists(lng) && !exists(lk), "%zu-byte path: nothing created", strlen(lng));
        if (rc == 0)
            gs_listen_close(&l);
    }
    lng[107] = '\0';   /* the longest that fits */
    lock_of(lk, sizeof lk, lng);
    gs_err_clear(&err);
    rc = gs_listen_open(&l, lng, 0660, NULL, &err);
    if (!tap_ok(rc == 0 && is_socket(lng), "a 107-byte path is accepted"))
        tap_diag("%s", err.msg);
    if (rc == 0)
        gs_listen_close(&l);
    tap_ok(!exists(lng) && !exists(lk), "107-byte path: close removes socket and lock");

    gs_err_clear(&err);
    rc = gs_listen_open(&l, NULL, 0660, NULL, &err);
    tap_ok(rc == GS_EINVAL, "a NULL path is refused with GS_EINVAL (rc %d)", rc);
}

static void test_second_open(void)
{
    char p[256], lk[300];
    path_of(p, sizeof p, "twice.sock");
    lock_of(lk, sizeof lk, p);
    gs_listen a, b;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_listen_open(&a, p, 0660, NULL, &err);
    if (!tap_ok(rc == 0, "first open succeeds"))
        tap_diag("%s", err.msg);
    tap_ok(exists(lk), "the lock file exists while open");
    gs_err_clear(&err);
    int rc2 = gs_listen_open(&b, p, 0660, NULL, &err);
    tap_ok(rc2 == GS_EIO, "second open on the same path fails with GS_EIO (rc %d)", rc2);
    tap_ok(strstr(err.msg, p) && strstr(err.msg, "another gsortd"),
           "the message names the path and another gsortd: %s", err.msg);
    if (rc2 == 0)
        gs_listen_close(&b);
    tap_ok(is_socket(p) && exists(lk), "the refused open left the first one's socket and lock");
    if (rc == 0)
        tap_ok(round_trip(&a, p), "the first listener still accepts after the refused open");
    else
        tap_ok(0, "the first listener still accepts after the refused open");
    if (rc == 0)
        gs_listen_close(&a);
    tap_ok(!exists(p) && !exists(lk), "close removes the socket and the lock file");
    gs_err_clear(&err);
    rc = gs_listen_open(&a, p, 0660, NULL, &err);
    tap_ok(rc == 0, "the path can be opened again after close");
    if (rc == 0)
        gs_listen_close(&a);
}

static void test_stale_and_live(void)
{
    char p[256], lk[300];
    gs_listen l;
    gs_err err;

    /* stale: bound, closed, never unlinked, as a SIGKILLed daemon leaves it */
    path_of(p, sizeof p, "stale.sock");
    lock_of(lk, sizeof lk, p);
    int fd = bind_at(p, 1);
    if (fd >= 0)
        close(fd);
    tap_ok(fd >= 0 && is_socket(p), "a stale socket file is in place");
    struct stat before;
    memset(&before, 0, sizeof before);
    lstat(p, &before);
    g_warns = 0;
    gs_log_set_sink(count_sink, NULL);
    gs_err_clear(&err);
    int rc = gs_listen_open(&l, p, 0660, NULL, &err);
    gs_log_set_sink(NULL, NULL);
    if (!tap_ok(rc == 0, "open replaces a stale socket"))
        tap_diag("%s", err.msg);
    tap_ok(rc == 0 && l.replaced_stale == 1, "replaced_stale is 1");
    tap_ok(g_warns == 1 && strstr(g_last_warn, p) && strstr(g_last_warn, "stale"),
           "one warning names the path and says stale (%d: %s)", g_warns, g_last_warn);
    struct stat now;
    tap_ok(lstat(p, &now) == 0 && S_ISSOCK(now.st_mode) && now.st_ino == l.ino &&
           now.st_dev == l.dev, "the file at the path is the new socket");
    tap_ok(rc == 0 && round_trip(&l, p), "the replacement accepts connections");
    if (rc == 0)
        gs_listen_close(&l);

    /* a fresh path is not "replaced" */
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0660, NULL, &err);
    tap_ok(rc == 0 && l.replaced_stale == 0, "a fresh path: replaced_stale is 0");
    if (rc == 0)
        gs_listen_close(&l);

    /* live listener that does not use our lock */
    path_of(p, sizeof p, "live.sock");
    lock_of(lk, sizeof lk, p);
    int live = bind_at(p, 1);
    tap_ok(live >= 0 && !exists(lk), "a foreign listener at the path, no lock file");
    struct stat lb;
    memset(&lb, 0, sizeof lb);
    lstat(p, &lb);
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0660, NULL, &err);
    tap_ok(rc == GS_EIO, "a live listener is refused with GS_EIO (rc %d)", rc);
    tap_ok(strstr(err.msg, "listening") && strstr(err.msg, p),
           "the message says listening and names the path: %s", err.msg);
    struct stat la;
    tap_ok(lstat(p, &la) == 0 && la.st_ino == lb.st_ino, "the foreign socket file is untouched");
    tap_ok(!exists(lk), "the refused open removed its lock file");
    /* and the foreign listener still works */
    int c = connect_to(p);
    tap_ok(c >= 0, "the foreign listener still accepts connections");
    if (c >= 0)
        close(c);
    if (rc == 0)
        gs_listen_close(&l);
    if (live >= 0)
        close(live);
    unlink(p);

    /* a regular file is never replaced */
    path_of(p, sizeof p, "regular.sock");
    lock_of(lk, sizeof lk, p);
    static const char content[] = "precious data, not a socket\n";
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(content, f);
        fclose(f);
    }
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0660, NULL, &err);
    tap_ok(rc == GS_EIO, "a regular file at the path is refused with GS_EIO (rc %d)", rc);
    tap_ok(strstr(err.msg, p) && strstr(err.msg, "not a socket"),
           "the message names the path and says not a socket: %s", err.msg);
    char got[128] = "";
    f = fopen(p, "r");
    size_t n = 0;
    if (f) {
        n = fread(got, 1, sizeof got - 1, f);
        got[n] = '\0';
        fclose(f);
    }
    struct stat rs;
    tap_ok(lstat(p, &rs) == 0 && S_ISREG(rs.st_mode) && strcmp(got, content) == 0,
           "the regular file is left untouched");
    tap_ok(!exists(lk), "no lock file left behind");
    if (rc == 0)
        gs_listen_close(&l);
    unlink(p);
}

static void test_close_not_ours(void)
{
    char p[256], lk[300];
    path_of(p, sizeof p, "replaced.sock");
    lock_of(lk, sizeof lk, p);
    gs_listen l;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_listen_open(&l, p, 0660, NULL, &err);
    tap_ok(rc == 0, "open for the replaced-socket case");
    /* someone removes ours and binds their own at the same path */
    unlink(p);
    int other = bind_at(p, 1);
    struct stat ob;
    memset(&ob, 0, sizeof ob);
    lstat(p, &ob);
    tap_ok(other >= 0, "another socket is bound at the path");
    if (rc == 0)
        gs_listen_close(&l);
    struct stat oa;
    tap_ok(lstat(p, &oa) == 0 && S_ISSOCK(oa.st_mode) && oa.st_ino == ob.st_ino,
           "close leaves the other socket file in place");
    tap_ok(!exists(lk), "close still removes its lock file");
    tap_ok(rc == 0 && l.fd == -1 && l.lock_fd == -1, "close marks both descriptors closed");
    int c = connect_to(p);
    tap_ok(c >= 0, "the other socket still accepts connections");
    if (c >= 0)
        close(c);
    if (other >= 0)
        close(other);
    unlink(p);
}

/* A group to chown to that differs from the current one when we may use one
 * (a supplementary group, or any group as root), else the current group. */
static int pick_group(char *name, size_t len, gid_t *gid)
{
    gid_t eg = getegid();
    gid_t list[256];
    int n = getgroups(256, list);
    for (int i = 0; i < n; i++) {
        struct group *g = list[i] != eg ? getgrgid(list[i]) : NULL;
        if (g) {
            snprintf(name, len, "%s", g->gr_name);
            *gid = g->gr_gid;
            return 1;
        }
    }
    if (geteuid() == 0) {
        setgrent();
        for (struct group *g; (g = getgrent()) != NULL;)
            if (g->gr_gid != eg && strlen(g->gr_name) < len) {
                snprintf(name, len, "%s", g->gr_name);
                *gid = g->gr_gid;
                endgrent();
                return 1;
            }
        endgrent();
    }
    struct group *g = getgrgid(eg);
    if (!g)
        return -1;
    snprintf(name, len, "%s", g->gr_name);
    *gid = g->gr_gid;
    return 0;
}

static void test_group(void)
{
    char p[256], lk[300];
    path_of(p, sizeof p, "group.sock");
    lock_of(lk, sizeof lk, p);
    gs_listen l;
    gs_err err;

    gs_err_clear(&err);
    int rc = gs_listen_open(&l, p, 0660, "gsortd-no-such-group-xyzzy", &err);
    tap_ok(rc == GS_EINVAL, "an unknown socket_group is GS_EINVAL (rc %d)", rc);
    tap_ok(strstr(err.msg, "gsortd-no-such-group-xyzzy") != NULL, "the message names it: %s",
           err.msg);
    tap_ok(!exists(p) && !exists(lk), "unknown group: nothing created");
    if (rc == 0)
        gs_listen_close(&l);

    struct group *g = getgrgid(getegid());
    char own[256];
    snprintf(own, sizeof own, "%s", g ? g->gr_name : "");
    tap_ok(g != NULL, "the current group %u has a name (%s)", (unsigned)getegid(), own);
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0660, own, &err);
    if (!tap_ok(rc == 0, "socket_group '%s' (our own) is accepted", own))
        tap_diag("%s", err.msg);
    struct stat sb;
    tap_ok(rc == 0 && stat(p, &sb) == 0 && sb.st_gid == getegid(),
           "the socket's group is our group %u", (unsigned)getegid());
    tap_ok(mode_of(p) == 0660, "with a group the mode is still 0660");
    if (rc == 0)
        gs_listen_close(&l);

    char num[32];
    snprintf(num, sizeof num, "%u", (unsigned)getegid());
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0660, num, &err);
    if (!tap_ok(rc == 0, "socket_group given by number ('%s') is accepted", num))
        tap_diag("%s", err.msg);
    tap_ok(rc == 0 && stat(p, &sb) == 0 && sb.st_gid == getegid(),
           "numeric group: the socket's group is %s", num);
    if (rc == 0)
        gs_listen_close(&l);

    char other[256];
    gid_t ogid = 0;
    int pr = pick_group(other, sizeof other, &ogid);
    tap_diag("chown test group: %s (%u)%s", other, (unsigned)ogid,
             pr == 1 ? "" : ", our own: no other group usable here");
    gs_err_clear(&err);
    rc = gs_listen_open(&l, p, 0640, other, &err);
    if (!tap_ok(rc == 0, "socket_group '%s' is accepted", other))
        tap_diag("%s", err.msg);
    tap_ok(rc == 0 && stat(p, &sb) == 0 && sb.st_gid == ogid && (sb.st_mode & 07777) == 0640,
           "the socket's group is %u and its mode 0640", (unsigned)ogid);
    if (rc == 0)
        gs_listen_close(&l);
    tap_ok(!exists(p) && !exists(lk), "group case: close removes socket and lock");
}

static void test_listener_fd(void)
{
    char p[256];
    path_of(p, sizeof p, "fd.sock");
    gs_listen l;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_listen_open(&l, p, 0600, "", &err);
    if (!tap_ok(rc == 0, "open with group \"\" succeeds"))
        tap_diag("%s", err.msg);
    if (rc != 0) {
        tap_ok(0, "listener flags");
        tap_ok(0, "listening");
        tap_ok(0, "round trip");
        return;
    }
    int fl = fcntl(l.fd, F_GETFL), fdf = fcntl(l.fd, F_GETFD);
    tap_ok(fl >= 0 && (fl & O_NONBLOCK) && fdf >= 0 && (fdf & FD_CLOEXEC),
           "the listener is non-blocking and close-on-exec");
    int acc = 0;
    socklen_t al = sizeof acc;
    tap_ok(getsockopt(l.fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc,
           "the socket is listening");
    /* nothing pending: accept must not block */
    int none = accept(l.fd, NULL, NULL);
    tap_ok(none < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
           "accept with no client returns EAGAIN at once");
    tap_ok(round_trip(&l, p), "a client connects; a byte goes each way through the accepted fd");
    tap_ok(round_trip(&l, p), "a second client too");
    gs_listen_close(&l);
    int c = connect_to(p);
    tap_ok(c < 0, "after close nobody can connect");
    if (c >= 0)
        close(c);
    gs_listen_close(&l);   /* twice: harmless */
    tap_ok(!exists(p), "a second close is harmless");
}

int main(void)
{
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    test_modes();
    test_refusals();
    test_second_open();
    test_stale_and_live();
    test_close_not_ours();
    test_group();
    test_listener_fd();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
