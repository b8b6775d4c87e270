/* systemd support (see gs_systemd.h), Knot DNS style: one file, two
 * builds. With HAVE_SYSTEMD the functions wrap sd_notify and sd_listen_fds;
 * without it they are no-ops, and the first one that finds systemd's
 * variables in the environment warns that this build cannot honour them,
 * since a unit written for the other build would otherwise fail silently
 * (a Type=notify start that times out, a socket nobody accepts on). */
#include "config.h"
#include "gs_systemd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "gs_log.h"
#include "gs_time.h"

#ifdef HAVE_SYSTEMD

int gs_systemd_supported(void)
{
    return 1;
}

/* STATUS= ends at a newline: keep the text on one line. */
static void fmt_status(char *buf, size_t len, const char *fmt, va_list ap)
{
    vsnprintf(buf, len, fmt, ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

/* What a descriptor is, for the error message: "a datagram Unix socket",
 * "a Unix stream socket that is not listening", "a regular file". */
static void describe_fd(int fd, char *buf, size_t len)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        snprintf(buf, len, "not an open descriptor (%s)", strerror(errno));
        return;
    }
    if (!S_ISSOCK(sb.st_mode)) {
        snprintf(buf, len, "%s, not a socket",
                 S_ISREG(sb.st_mode) ? "a regular file" : S_ISDIR(sb.st_mode) ? "a directory"
                 : S_ISFIFO(sb.st_mode) ? "a pipe" : S_ISCHR(sb.st_mode) ? "a character device"
                 : "a special file");
        return;
    }
    int domain = -1, type = -1, acc = 0;
    socklen_t sl = sizeof domain;
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &sl);
    sl = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl);
    sl = sizeof acc;
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl);
    const char *dom = domain == AF_UNIX ? "Unix" : domain == AF_INET ? "IPv4"
                      : domain == AF_INET6 ? "IPv6" : "non-Unix";
    const char *ty = type == SOCK_STREAM ? "stream" : type == SOCK_DGRAM ? "datagram"
                     : type == SOCK_SEQPACKET ? "seqpacket" : "other";
    snprintf(buf, len, "a %s %s socket%s", dom, ty,
             type == SOCK_STREAM && !acc ? " that is not listening (Accept=yes?)" : "");
}

int gs_systemd_listen_fd(int *fd, gs_err *err)
{
    *fd = -1;
    int n = sd_listen_fds(1);
    if (n < 0)
        return gs_err_set(err, GS_EINVAL, "socket activation: LISTEN_FDS/LISTEN_PID are "
                          "malformed: %s", strerror(-n));
    if (n == 0)
        return 0;   /* not activated (or the variables were for another process) */
    if (n != 1)
        return gs_err_set(err, GS_EINVAL, "socket activation: systemd passed %d descriptors "
                          "(fd %d to %d); gsortd takes exactly one listening Unix stream "
                          "socket (one ListenStream= in gsortd.socket)", n,
                          SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + n - 1);
    int f = SD_LISTEN_FDS_START;
    int r = sd_is_socket_unix(f, SOCK_STREAM, 1, NULL, 0);
    if (r <= 0) {
        char what[128];
        describe_fd(f, what, sizeof what);
        return gs_err_set(err, GS_EINVAL, "socket activation: fd %d passed by systemd is %s; "
                          "gsortd needs a listening Unix stream socket (ListenStream=PATH, "
                          "Accept=no)", f, what);
    }
    *fd = f;
    return 0;
}

static void notify(const char *state, const char *status)
{
    static int warned;
    int r = sd_notifyf(0, "%s%sSTATUS=%s", state, state[0] ? "\n" : "", status);
    if (r < 0 && !warned) {
        warned = 1;
        GS_WARN("cannot notify systemd through NOTIFY_SOCKET: %s", strerror(-r));
    }
}

void gs_systemd_reloading(const char *status_fmt, ...)
{
    char status[512], state[96];
    va_list ap;
    va_start(ap, status_fmt);
    fmt_status(status, sizeof status, status_fmt, ap);
    va_end(ap);
    /* systemd 253+ matches a reload to its request by this timestamp. */
    snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)(gs_now_ns() / 1000));
    notify(state, status);
}

#define GS_NOTIFY_FN(name, state)                          \
    void name(const char *status_fmt, ...)                 \
    {                                                      \
        char status[512];                                  \
        va_list ap;                                        \
        va_start(ap, status_fmt);                          \
        fmt_status(status, sizeof status, status_fmt, ap); \
        va_end(ap);                                        \
        notify(state, status);                             \
    }

#else /* !HAVE_SYSTEMD */

int gs_systemd_supported(void)
{
    return 0;
}

int gs_systemd_listen_fd(int *fd, gs_err *err)
{
    (void)err;
    *fd = -1;
    const char *fds = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
    /* A LISTEN_PID naming another process was inherited, not meant for us. */
    if (fds && (!pid || strtol(pid, NULL, 10) == (long)getpid()))
        GS_WARN("LISTEN_FDS is set (socket activation), but this gsortd was built without "
                "systemd support (libsystemd): ignoring the passed socket and binding the "
                "configured one");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");
    return 0;
}

static void notify(const char *state, const char *status)
{
    static int warned;
    (void)state;
    (void)status;
    if (!warned && getenv("NOTIFY_SOCKET")) {
        warned = 1;
        GS_WARN("NOTIFY_SOCKET is set, but this gsortd was built without systemd support "
                "(libsystemd): systemd is not told when it is ready (use Type=simple)");
    }
}

void gs_systemd_reloading(const char *status_fmt, ...)
{
    (void)status_fmt;
    notify("RELOADING=1", "");
}

#define GS_NOTIFY_FN(name, state)              \
    void name(const char *status_fmt, ...)     \
    {                                          \
        (void)status_fmt;                      \
        notify(state, "");                     \
    }

#endif /* HAVE_SYSTEMD */

GS_NOTIFY_FN(gs_systemd_ready, "READY=1")
GS_NOTIFY_FN(gs_systemd_stopping, "STOPPING=1")
GS_NOTIFY_FN(gs_systemd_status, "")
