/* Tests of gsortd's systemd support (daemon/base/gs_systemd.c) on the real daemon.
 * Readiness: the test listens on a datagram socket named by NOTIFY_SOCKET,
 * as systemd does, and checks that READY=1 comes only once the daemon's
 * socket accepts connections, that a SIGHUP is bracketed by RELOADING=1
 * (with a CLOCK_MONOTONIC MONOTONIC_USEC) and READY=1 (also when the new
 * configuration is bad), and that SIGTERM sends STOPPING=1. Socket
 * activation: the test binds and listens a Unix socket and starts gsortd
 * with it as fd 3 and LISTEN_FDS=1, LISTEN_PID=<gsortd's pid>, as systemd
 * does; the daemon must serve on it without binding its own, take no lock
 * and leave the file when it stops, and must refuse clearly what is not
 * one listening Unix stream socket. A build without libsystemd is tested
 * for what it does instead (warns, binds its own socket, sends nothing).
 * Last, the units generated from etc/: Type= matching the build, ExecStart
 * the installed gsortd with options it accepts, and the socket unit's path
 * the one the service names. Daemons are started through tests/support/dmn.h, a
 * child hook adding what systemd passes, and run with -o devices=none: no
 * OpenCL compiles, so every start is quick. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_err.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

#ifndef GS_TEST_BINDIR
#error "GS_TEST_BINDIR (the configured bindir) must be defined by the Makefile"
#endif

/* What --version and the service's Type= must say for this build. */
#ifdef HAVE_SYSTEMD
#define EXPECT_TYPE "notify"
#define EXPECT_VERSION "systemd support: yes"
#else
#define EXPECT_TYPE "simple"
#define EXPECT_VERSION "systemd support: no"
#endif

/* Helpers that only one of the two builds (with, without libsystemd) calls. */
#define ONE_BUILD __attribute__((unused))

#define START_TIMEOUT_S 60.0
#define MSG_TIMEOUT_S 30.0

static char g_notify[100];      /* NOTIFY_SOCKET path */
static int g_nfd = -1;          /* the test's end of it */

static void path_in_tmp(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dmn_tmpdir(), name);
}

static int exists(const char *name)
{
    char p[256];
    struct stat sb;
    path_in_tmp(p, sizeof p, name);
    return lstat(p, &sb) == 0;
}

static int is_socket(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode);
}

/* The whole of a file, NUL-terminated (caller frees); NULL if unreadable. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    while (s) {
        size_t r = fread(s + n, 1, cap - 1 - n, f);
        n += r;
        if (r == 0)
            break;
        if (n == cap - 1) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
            } else {
                s = t;
            }
        }
    }
    fclose(f);
    if (s)
        s[n] = '\0';
    return s;
}

/* Poll until the log holds `text`; 1 if it does within START_TIMEOUT_S. */
ONE_BUILD static int wait_log(const dmn *d, const char *text)
{
    double t0 = gs_now_s();
    while (gs_now_s() - t0 < START_TIMEOUT_S) {
        if (dmn_log_contains(d, text))
            return 1;
        dmn_sleep(0.05);
    }
    return 0;
}

/* ---- the notification socket ---- */

static void notify_open(void)
{
    path_in_tmp(g_notify, sizeof g_notify, "notify");
    g_nfd = dmn_bind(g_notify, SOCK_DGRAM, 0);
}

/* Next datagram within `timeout_s`, into buf; 0, or -1 on timeout. */
static int notify_recv(char *buf, size_t len, double timeout_s)
{
    struct pollfd p = { .fd = g_nfd, .events = POLLIN };
    int r = poll(&p, 1, (int)(timeout_s * 1000));
    if (r <= 0)
        return -1;
    ssize_t n = recv(g_nfd, buf, len - 1, 0);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* Drop whatever is queued (nothing should be, but a failed step must not
 * shift every later message). */
static int notify_drain(void)
{
    char buf[4096];
    int n = 0;
    while (notify_recv(buf, sizeof buf, 0) == 0)
        n++;
    return n;
}

/* The message on one line, for a TAP description. */
ONE_BUILD static const char *oneline(const char *msg)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s", msg);
    for (char *p = b; *p; p++)
        if (*p == '\n')
            *p = '|';
    return b;
}

/* Does the message hold the assignment `line` ("READY=1") as one line? */
static int msg_has(const char *msg, const char *line)
{
    size_t l = strlen(line);
    for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, line, l) && (p[l] == '\n' || p[l] == '\0'))
            return 1;
    return 0;
}

/* The value of VAR= in the message, into buf; 0 or -1 if absent. */
ONE_BUILD static int msg_get(const char *msg, const char *var, char *buf, size_t len)
{
    size_t l = strlen(var);
    for (const char *p = msg; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, var, l) && p[l] == '=') {
            size_t n = strcspn(p + l + 1, "\n");
            snprintf(buf, len, "%.*s", (int)n, p + l + 1);
            return 0;
        }
    return -1;
}

/* Collect notifications until one holds `line`; the message is left in
 * buf. Messages before it are counted into *before (may be NULL). */
ONE_BUILD static int wait_for(const char *line, char *buf, size_t len, int *before)
{
    double t0 = gs_now_s();
    if (before)
        *before = 0;
    while (gs_now_s() - t0 < START_TIMEOUT_S) {
        if (notify_recv(buf, len, 0.5) < 0)
            continue;
        if (msg_has(buf, line))
            return 1;
        if (before)
            (*before)++;
    }
    buf[0] = '\0';
    return 0;
}

/* ---- daemons (tests/support/dmn.h) as systemd starts them ---- */

/* What systemd gives the daemon besides its command line. */
typedef struct launch {
    int notify;                  /* set NOTIFY_SOCKET */
    const int *fds;              /* passed as fd 3, 4, ... (NULL: none) */
    int nfds;
    const char *listen_fds;      /* LISTEN_FDS value, NULL: unset */
    const char *listen_pid;      /* LISTEN_PID value; NULL with listen_fds: the child's pid */
} launch;

/* In the child (dmn_spawn's hook): the launch's descriptors and variables. */
static int launch_child(void *arg)
{
    const launch *l = arg;
    /* First out of the way of 3.., then into place: a source may sit
     * where another target goes. dup2 clears close-on-exec. */
    int tmp[8];
    if (l->nfds > 8)
        return -1;
    for (int i = 0; i < l->nfds; i++)
        if ((tmp[i] = fcntl(l->fds[i], F_DUPFD_CLOEXEC, 20)) < 0)
            return -1;
    for (int i = 0; i < l->nfds; i++)
        if (dup2(tmp[i], 3 + i) < 0)
            return -1;
    if (l->notify)
        setenv("NOTIFY_SOCKET", g_notify, 1);
    if (l->listen_fds) {
        char pidbuf[32];
        snprintf(pidbuf, sizeof pidbuf, "%ld", (long)getpid());   /* exec keeps the pid */
        setenv("LISTEN_FDS", l->listen_fds, 1);
        setenv("LISTEN_PID", l->listen_pid ? l->listen_pid : pidbuf, 1);
    }
    return 0;
}

/* Start gsortd `name` with `sock` as its --socket, the quick options (no
 * devices: no OpenCL compiles) and the launch; `config` (NULL: an empty
 * one) as its --config. Not waited for. */
static void spawn(dmn *d, const char *name, const char *sock, const char *config,
                  const launch *l)
{
    const char *const args[] = { "-o", "devices=none", "-o", "host_threads=2",
                                 config ? "--config" : NULL, config, NULL };
    if (dmn_spawn(d, name, sock, args, launch_child, (void *)l) < 0)
        tap_bail("cannot start the daemon %s", name);
}

/* A client of `sock` with a 30 s timeout; NULL (said in TAP) if none. */
static gs_client *connect_to(const char *sock)
{
    gs_client *c;
    gs_err e;
    gs_err_clear(&e);
    if (gs_client_connect(&c, sock, &e) < 0) {
        tap_diag("connect %s: %s", sock, e.msg);
        return NULL;
    }
    gs_client_set_timeout(c, 30);
    return c;
}

/* The reply to `op` ("ping", "info") on a new connection (caller frees);
 * NULL, said in TAP, when there is none. */
static cJSON *call(const char *sock, const char *op)
{
    gs_client *c = connect_to(sock);
    if (!c)
        return NULL;
    gs_err e;
    gs_err_clear(&e);
    cJSON *r = NULL;
    if (gs_client_call(c, op, &r, &e) != 0) {
        tap_diag("%s %s: %s", op, sock, e.msg);
        cJSON_Delete(r);
        r = NULL;
    }
    gs_client_close(c);
    return r;
}

static int ping(const char *sock)
{
    cJSON *r = call(sock, "ping");
    int ok = r != NULL;
    cJSON_Delete(r);
    return ok;
}

/* The "socket" the daemon reports in its info reply, into buf. */
static int info_socket(const char *sock, char *buf, size_t len)
{
    cJSON *r = call(sock, "info");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "socket");
    snprintf(buf, len, "%s", cJSON_IsString(s) ? s->valuestring : "");
    cJSON_Delete(r);
    return buf[0] ? 0 : -1;
}

/* Sort 4096 random u32 keys through `sock`; 1 when they come back sorted
 * and a permutation of what was sent (the sum of the keys is kept). */
static int sort_through(const char *sock)
{
    enum { N = 4096 };
    static uint32_t keys[N];
    uint64_t x = 88172645463325252ull, sum0 = 0, sum1 = 0;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        keys[i] = (uint32_t)x;
        sum0 += keys[i];
    }
    gs_client *c = connect_to(sock);
    if (!c)
        return 0;
    gs_client_set_timeout(c, 60);
    gs_err e;
    gs_err_clear(&e);
    gs_client_sort s = {
        .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE }, .n = N, .keys = keys, .device = -1
    };
    int rc = gs_client_sort_run(c, &s, NULL, &e);
    gs_client_close(c);
    if (rc < 0) {
        tap_diag("sort through %s: %s", sock, e.msg);
        return 0;
    }
    for (int i = 0; i < N; i++) {
        sum1 += keys[i];
        if (i && keys[i - 1] > keys[i])
            return 0;
    }
    return sum0 == sum1;
}

/* A Unix socket at tmp/NAME: bound, and listening unless `type` is DGRAM. */
static int make_socket(const char *name, int type, char *path, size_t plen)
{
    path_in_tmp(path, plen, name);
    return dmn_bind(path, type, type == SOCK_STREAM ? 16 : 0);
}

/* ---- the tests ---- */

static void test_version(void)
{
    static dmn v;
    const char *const args[] = { "--version", NULL };
    int rc = dmn_run(&v, "version", args, 20);
    tap_ok(rc == 0 && dmn_log_contains(&v, EXPECT_VERSION), "--version says \"%s\"",
           EXPECT_VERSION);
}

#ifdef HAVE_SYSTEMD

static void test_notify(void)
{
    static dmn d;
    char conf[256], msg[4096], v[512];
    /* The daemon's --config, made bad and good again across reloads. */
    path_in_tmp(conf, sizeof conf, "reload.conf");
    FILE *f = fopen(conf, "w");
    if (!f)
        tap_bail("%s: %s", conf, strerror(errno));
    fclose(f);
    notify_drain();
    launch l = { .notify = 1 };
    spawn(&d, "n", NULL, conf, &l);
    const char *sock = d.sock;
    int before;
    int ready = wait_for("READY=1", msg, sizeof msg, &before);
    /* Checked at once: READY=1 promises that connections are accepted. */
    int conn = ready && dmn_connectable(sock);
    if (!tap_ok(ready, "READY=1 arrives on NOTIFY_SOCKET"))
        dmn_dump_log(&d, 64);
    tap_ok(conn, "when READY=1 arrives the socket already accepts connections");
    tap_ok(ready && before == 0, "READY=1 is the first notification (%d before it)", before);
    tap_ok(msg_get(msg, "STATUS", v, sizeof v) == 0 && strstr(v, "serving on ") &&
               strstr(v, sock),
           "READY=1 carries STATUS=serving on the socket (\"%s\")", v);
    tap_ok(ping(sock), "the daemon answers a ping after READY=1");

    /* SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 again. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(d.pid, SIGHUP);
    int got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tap_ok(got && msg_has(msg, "RELOADING=1"), "SIGHUP: RELOADING=1 comes first (\"%s\")",
           got ? oneline(msg) : "nothing");
    unsigned long long us = 0, lo = (unsigned long long)t0.tv_sec * 1000000ull +
                                    (unsigned long long)t0.tv_nsec / 1000,
                       hi = (unsigned long long)t1.tv_sec * 1000000ull +
                            (unsigned long long)t1.tv_nsec / 1000 + 1;
    int have_us = msg_get(msg, "MONOTONIC_USEC", v, sizeof v) == 0 && sscanf(v, "%llu", &us) == 1;
    tap_ok(have_us && us >= lo && us <= hi,
           "RELOADING=1 carries MONOTONIC_USEC from CLOCK_MONOTONIC, taken during the reload "
           "(%llu in [%llu, %llu])", us, lo, hi);
    got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    tap_ok(got && msg_has(msg, "READY=1") && msg_get(msg, "STATUS", v, sizeof v) == 0 &&
               !strstr(v, "failed"),
           "after the reload READY=1 again, STATUS without a failure (\"%s\")",
           got ? oneline(msg) : "nothing");
    tap_ok(ping(sock) && dmn_log_contains(&d, "SIGHUP: configuration and tuning database reloaded"),
           "the reload happened and the daemon still answers");

    /* A bad file: the reload fails, the daemon keeps serving and must still
     * end the reload with READY=1, or systemctl reload would hang. */
    f = fopen(conf, "w");
    if (f) {
        fputs("max_clients = lots\n", f);
        fclose(f);
    }
    kill(d.pid, SIGHUP);
    got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    tap_ok(got && msg_has(msg, "RELOADING=1"), "bad config, SIGHUP: RELOADING=1");
    got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    tap_ok(got && msg_has(msg, "READY=1") && msg_get(msg, "STATUS", v, sizeof v) == 0 &&
               strstr(v, "reload failed"),
           "a failed reload still ends with READY=1, STATUS says it failed (\"%s\")",
           got ? v : "nothing");
    tap_ok(ping(sock), "after the failed reload the daemon answers");
    f = fopen(conf, "w");
    if (f)
        fclose(f);

    kill(d.pid, SIGTERM);
    got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    tap_ok(got && msg_has(msg, "STOPPING=1"), "SIGTERM: STOPPING=1 (\"%s\")",
           got ? oneline(msg) : "nothing");
    int rc = dmn_stop(&d, 0, 30);
    tap_ok(rc == 0 && !is_socket(sock), "then it exits 0 (rc %d) and removes its socket", rc);
    tap_ok(notify_drain() == 0, "and sends nothing after STOPPING=1");
}

static void test_activation(void)
{
    static dmn d;
    char sock[128], unused[128], msg[4096], v[512], lockp[160];
    int lfd = make_socket("act.sock", SOCK_STREAM, sock, sizeof sock);
    /* Not the daemon's default 0660: a daemon that re-did the socket's mode
     * (as it does for its own) would show here. */
    chmod(sock, 0600);
    path_in_tmp(unused, sizeof unused, "unused.sock");
    notify_drain();
    launch l = { .notify = 1, .fds = &lfd, .nfds = 1, .listen_fds = "1" };
    spawn(&d, "act", unused, NULL, &l);
    close(lfd);   /* the daemon holds the only copy now, as with systemd's gone */
    int ready = wait_for("READY=1", msg, sizeof msg, NULL);
    if (!tap_ok(ready, "socket-activated: READY=1 arrives"))
        dmn_dump_log(&d, 64);
    tap_ok(msg_get(msg, "STATUS", v, sizeof v) == 0 && strstr(v, "socket-activated") &&
               strstr(v, sock),
           "its STATUS says socket-activated on %s (\"%s\")", sock, v);
    tap_ok(ping(sock), "a ping through the passed socket is answered");
    tap_ok(sort_through(sock), "a sort of 4096 u32 keys through the passed socket comes back sorted");
    char isock[256];
    tap_ok(info_socket(sock, isock, sizeof isock) == 0 && !strcmp(isock, sock),
           "info reports the passed socket's path (\"%s\")", isock);
    tap_ok(dmn_log_contains(&d, "socket-activated"), "the log says it was socket-activated");
    snprintf(lockp, sizeof lockp, "act.sock.lock");
    tap_ok(!exists(lockp) && !exists("unused.sock") && !exists("unused.sock.lock"),
           "no lock file was made and the configured --socket was not bound");
    struct stat sb;
    unsigned mode = stat(sock, &sb) == 0 ? (unsigned)(sb.st_mode & 07777) : 01000;
    tap_ok(mode == 0600, "the passed socket's mode was left alone (%04o)", mode);
    kill(d.pid, SIGTERM);
    int got = notify_recv(msg, sizeof msg, MSG_TIMEOUT_S) == 0;
    tap_ok(got && msg_has(msg, "STOPPING=1"), "SIGTERM: STOPPING=1");
    int rc = dmn_stop(&d, 0, 30);
    tap_ok(rc == 0, "it exits 0 (rc %d)", rc);
    tap_ok(is_socket(sock) && !exists(lockp),
           "the socket file is still there after it stops (systemd owns it), no lock file");
    unlink(sock);
}

/* systemd passes something gsortd cannot serve on: exit 2, a message
 * naming fd 3 and what it is, and no socket of its own. */
static void bad_activation(const char *what, const int *fds, int nfds, const char *listen_fds,
                           const char *expect)
{
    static dmn d;
    notify_drain();
    launch l = { .notify = 1, .fds = fds, .nfds = nfds, .listen_fds = listen_fds };
    spawn(&d, "bad", NULL, NULL, &l);
    int rc = dmn_stop(&d, 0, 30);   /* it is to exit by itself */
    int ok = tap_ok(rc == 2 && dmn_log_contains(&d, "socket activation") &&
                        dmn_log_contains(&d, expect),
                    "%s: exit 2 (rc %d), the log says \"%s\"", what, rc, expect);
    if (!ok)
        dmn_dump_log(&d, 64);
    tap_ok(!exists("bad.sock") && !exists("bad.sock.lock"), "%s: no socket of its own", what);
    char msg[4096] = "";
    int got = 0;
    while (notify_recv(msg, sizeof msg, 0) == 0)
        got += msg_has(msg, "READY=1");
    tap_ok(got == 0, "%s: no READY=1", what);
}

static void test_bad_activation(void)
{
    char p1[128], p2[128], p3[128];
    int dg = make_socket("dg.sock", SOCK_DGRAM, p1, sizeof p1);
    bad_activation("a datagram socket as fd 3", &dg, 1, "1", "datagram");
    close(dg);
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
        tap_bail("socketpair: %s", strerror(errno));
    bad_activation("a connected stream socket (Accept=yes)", sp, 1, "1", "not listening");
    close(sp[0]);
    close(sp[1]);
    path_in_tmp(p3, sizeof p3, "plain.file");
    int ff = open(p3, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    bad_activation("a regular file as fd 3", &ff, 1, "1", "regular file");
    close(ff);
    int two[2];
    two[0] = make_socket("two1.sock", SOCK_STREAM, p1, sizeof p1);
    two[1] = make_socket("two2.sock", SOCK_STREAM, p2, sizeof p2);
    bad_activation("two listening sockets (LISTEN_FDS=2)", two, 2, "2", "passed 2 descriptors");
    close(two[0]);
    close(two[1]);
}

/* LISTEN_PID naming another process: the variables were inherited, not
 * meant for this daemon, which binds its own socket as usual. */
static void test_foreign_pid(void)
{
    static dmn d;
    char sock[128], other[128], msg[4096];
    int lfd = make_socket("foreign.sock", SOCK_STREAM, other, sizeof other);
    path_in_tmp(sock, sizeof sock, "own.sock");
    notify_drain();
    char ppid[32];
    snprintf(ppid, sizeof ppid, "%ld", (long)getpid());
    launch l = { .notify = 1, .fds = &lfd, .nfds = 1, .listen_fds = "1", .listen_pid = ppid };
    spawn(&d, "foreign", sock, NULL, &l);
    close(lfd);
    int ready = wait_for("READY=1", msg, sizeof msg, NULL);
    char isock[256];
    tap_ok(ready && info_socket(sock, isock, sizeof isock) == 0 && !strcmp(isock, sock) &&
               exists("own.sock.lock") && !dmn_log_contains(&d, "socket-activated"),
           "LISTEN_PID of another process: ignored, the daemon binds and locks its own socket");
    int rc = dmn_stop(&d, SIGTERM, 30);
    tap_ok(rc == 0 && !exists("own.sock") && !exists("own.sock.lock"),
           "... and removes them when it stops (rc %d)", rc);
    unlink(other);
}

#else /* !HAVE_SYSTEMD */

/* The build cannot notify: it must say so and still serve normally. */
static void test_notify(void)
{
    static dmn d;
    notify_drain();
    launch l = { .notify = 1 };
    spawn(&d, "n", NULL, NULL, &l);
    const char *sock = d.sock;
    int up = dmn_wait_ready(&d) == 0;
    if (!tap_ok(up && ping(sock), "without libsystemd: the daemon serves with NOTIFY_SOCKET set"))
        dmn_dump_log(&d, 64);
    tap_ok(dmn_log_contains(&d, "built without systemd support"),
           "it warns that it was built without systemd support");
    kill(d.pid, SIGHUP);
    tap_ok(wait_log(&d, "SIGHUP: configuration and tuning database reloaded") && ping(sock),
           "SIGHUP reloads, and it answers after");
    int rc = dmn_stop(&d, SIGTERM, 30);
    tap_ok(rc == 0, "SIGTERM: exit 0 (rc %d)", rc);
    tap_ok(notify_drain() == 0, "nothing was sent to NOTIFY_SOCKET");
}

/* LISTEN_FDS cannot be honoured: warn and bind the configured socket. */
static void test_activation(void)
{
    static dmn d;
    char sock[128], passed[128];
    int lfd = make_socket("act.sock", SOCK_STREAM, passed, sizeof passed);
    path_in_tmp(sock, sizeof sock, "own.sock");
    launch l = { .fds = &lfd, .nfds = 1, .listen_fds = "1" };
    spawn(&d, "act", sock, NULL, &l);
    close(lfd);
    int up = dmn_wait_ready(&d) == 0;
    char isock[256];
    if (!tap_ok(up && info_socket(sock, isock, sizeof isock) == 0 && !strcmp(isock, sock),
                "without libsystemd: LISTEN_FDS=1 is ignored and the daemon serves on --socket"))
        dmn_dump_log(&d, 64);
    tap_ok(dmn_log_contains(&d, "LISTEN_FDS") &&
               dmn_log_contains(&d, "built without systemd support"),
           "it warns that LISTEN_FDS cannot be used by this build");
    tap_ok(exists("own.sock.lock"), "its own socket is locked as usual");
    tap_ok(sort_through(sock), "a sort of 4096 u32 keys through it comes back sorted");
    int rc = dmn_stop(&d, SIGTERM, 30);
    tap_ok(rc == 0 && !exists("own.sock") && is_socket(passed),
           "it stops cleanly (rc %d), removing only its own socket", rc);
    unlink(passed);
}

static void test_bad_activation(void) {}
static void test_foreign_pid(void) {}

#endif /* HAVE_SYSTEMD */

/* ---- the generated units ---- */

/* Value of the first "Key=" line of a unit, into buf; -1 if none. */
static int unit_get(const char *unit, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = unit; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(buf, len, "%.*s", (int)strcspn(p + kl + 1, "\n"), p + kl + 1);
            return 0;
        }
    buf[0] = '\0';
    return -1;
}

/* Whether text holds an "@NAME@" the build should have substituted (a
 * lone '@', as in SystemCallFilter=@system-service, is the unit's own). */
static int has_placeholder(const char *text)
{
    for (const char *p = strchr(text, '@'); p; p = strchr(p + 1, '@')) {
        size_t n = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_");
        if (n && p[1 + n] == '@')
            return 1;
    }
    return 0;
}

/* The argument after `opt` in a blank-separated command line. */
static int cmd_opt(const char *cmd, const char *opt, char *buf, size_t len)
{
    char tmp[2048];
    snprintf(tmp, sizeof tmp, "%s", cmd);
    for (char *s = NULL, *t = strtok_r(tmp, " ", &s); t; t = strtok_r(NULL, " ", &s))
        if (!strcmp(t, opt) && (t = strtok_r(NULL, " ", &s))) {
            snprintf(buf, len, "%s", t);
            return 0;
        }
    buf[0] = '\0';
    return -1;
}

static void test_units(void)
{
    char path[4200], v[2048], sockopt[256], group[128];
    snprintf(path, sizeof path, "%s/etc/gsortd.service", dmn_builddir());
    char *svc = slurp(path);
    if (!tap_ok(svc != NULL, "the service unit was generated (%s)", path))
        return;
    const char *type = EXPECT_TYPE;
    tap_ok(unit_get(svc, "Type", v, sizeof v) == 0 && !strcmp(v, type),
           "Type=%s for this build (\"%s\")", type, v);
    tap_ok(!has_placeholder(svc), "no @placeholder@ is left in it");
    char exec[2048];
    unit_get(svc, "ExecStart", exec, sizeof exec);
    char want[4200];
    snprintf(want, sizeof want, "%s/gsortd ", GS_TEST_BINDIR);
    tap_ok(!strncmp(exec, want, strlen(want)), "ExecStart runs the installed %s/gsortd (\"%s\")",
           GS_TEST_BINDIR, exec);
    snprintf(want, sizeof want, "%s/gsortd/gsortd.conf", GS_TEST_SYSCONFDIR);
    tap_ok(cmd_opt(exec, "--config", v, sizeof v) == 0 && !strcmp(v, want),
           "ExecStart reads the installed config file %s", want);
    tap_ok(unit_get(svc, "ExecReload", v, sizeof v) == 0 && strstr(v, "-HUP") &&
               strstr(v, "$MAINPID"),
           "ExecReload sends SIGHUP to the main process");
    int wants_socket = strstr(svc, "Requires=gsortd.socket") != NULL;
#ifdef HAVE_SYSTEMD
    tap_ok(wants_socket, "the service requires gsortd.socket (socket activation)");
#else
    tap_ok(!wants_socket, "the service does not require gsortd.socket (no socket activation)");
#endif

    /* The command line must be one gsortd accepts: run it, with the
     * sample config in place of the installed one, to --print-config. */
    const char *args[32];
    int n = 0;
    char copy[2048], sample[4200];
    snprintf(copy, sizeof copy, "%s", exec);
    snprintf(sample, sizeof sample, "%s/etc/gsortd.conf", dmn_srcdir());
    char *s = NULL;
    strtok_r(copy, " ", &s);   /* the binary */
    for (char *t = strtok_r(NULL, " ", &s); t && n < 29; t = strtok_r(NULL, " ", &s)) {
        args[n++] = t;
        if (!strcmp(t, "--config") && (t = strtok_r(NULL, " ", &s)))
            args[n++] = sample;
    }
    args[n++] = "--print-config";
    args[n] = NULL;
    static dmn u;
    int rc = dmn_run(&u, "units", args, 20);
    cmd_opt(exec, "--socket", sockopt, sizeof sockopt);
    char line[400];
    snprintf(line, sizeof line, "socket = %s\n", sockopt);
    int ok = tap_ok(rc == 0 && sockopt[0] && dmn_log_contains(&u, line) &&
                        dmn_log_contains(&u, "db = /var/lib/gsortd/tuning.db\n") &&
                        dmn_log_contains(&u, "cache_dir = /var/cache/gsortd\n"),
                    "gsortd accepts ExecStart's options: socket %s, db and cache under "
                    "/var/lib/gsortd and /var/cache/gsortd", sockopt);
    if (!ok)
        dmn_dump_log(&u, 64);
    unit_get(svc, "Group", group, sizeof group);
    tap_ok(unit_get(svc, "User", v, sizeof v) == 0 && !strcmp(v, "gsortd") && !strcmp(group, "gsortd"),
           "it runs as user and group gsortd");
    tap_ok(unit_get(svc, "RuntimeDirectory", v, sizeof v) == 0 && !strncmp(sockopt, "/run/", 5) &&
               !strncmp(sockopt + 5, v, strlen(v)) && sockopt[5 + strlen(v)] == '/',
           "the socket lies in its RuntimeDirectory (/run/%s)", v);
    tap_ok(unit_get(svc, "PrivateDevices", v, sizeof v) < 0,
           "PrivateDevices= is not set (it would hide the GPUs)");
    free(svc);

    snprintf(path, sizeof path, "%s/etc/gsortd.socket", dmn_srcdir());
    char *so = slurp(path);
    tap_ok(so && unit_get(so, "ListenStream", v, sizeof v) == 0 && !strcmp(v, sockopt),
           "gsortd.socket listens where the service's --socket points (%s)", v);
    tap_ok(so && unit_get(so, "SocketMode", v, sizeof v) == 0 && !strcmp(v, "0660") &&
               unit_get(so, "SocketGroup", v, sizeof v) == 0 && !strcmp(v, group),
           "gsortd.socket: mode 0660, group %s", group);
    tap_ok(so && unit_get(so, "Accept", v, sizeof v) == 0 && !strcmp(v, "no"),
           "gsortd.socket: Accept=no (one daemon, one listening socket)");
    free(so);
}

int main(void)
{
    dmn_init();
    notify_open();
    tap_diag("this build: %s; service Type=%s", EXPECT_VERSION, EXPECT_TYPE);

    test_version();
    test_notify();
    test_activation();
    test_bad_activation();
    test_foreign_pid();
    test_units();
    return tap_done();
}
