/* The per-client limits of a real gsortd (issue 32), each against the
 * defect it closes: a client dripping a request a byte at a time is cut
 * off at request_timeout (in the header and in the payload) while others
 * are served; the (max_clients_per_uid + 1)th connection of one uid is
 * refused while another uid, and root, are served (as root children switch
 * to uids 12345 and 12346; without root the test hook
 * GSORTD_TEST_UID_CAP_ALL caps the test's own uid); refusals are logged at
 * most 5 times per 10 s, then counted in one line; under a low
 * RLIMIT_NOFILE the daemon lowers max_clients (or raises its soft limit)
 * and says so, and a descriptor it cannot receive because it is out of
 * them gets its own error, the connection kept; a descriptor sent with
 * payload bytes is refused and never used by a later request; and the
 * statistics count a fatal framing error as a request. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_err.h"
#include "gs_proto.h"
#include "gs_time.h"
#include "tap.h"

#define UID_A 12345u
#define UID_B 12346u
#define GID_SOCK 65534u


/* ---- helpers ---- */

static gs_client *conn_to(const char *sock)
{
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&c, sock, &err)) {
        tap_diag("connect to %s: %s", sock, err.msg);
        return NULL;
    }
    gs_client_set_timeout(c, 30 * dmn_slowdown());
    return c;
}

/* 0 when served; else the error code, its message in msg. */
static int call(gs_client *c, const char *op, cJSON **reply, char *msg, size_t len)
{
    gs_err err;
    gs_err_clear(&err);
    if (reply)
        *reply = NULL;
    int rc = c ? gs_client_call(c, op, reply, &err) : GS_EIO;
    if (msg)
        snprintf(msg, len, "%.290s", rc ? (c ? err.msg : "no connection") : "");
    return rc;
}

static int ping(gs_client *c)
{
    return call(c, "ping", NULL, NULL, 0) == 0;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *j = jget(o, k);
    return cJSON_IsNumber(j) ? j->valuedouble : -1;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *j = jget(o, k);
    return cJSON_IsString(j) ? j->valuestring : "";
}

/* stats.GROUP.KEY of the daemon at sock (a connection of its own), -1 when unknown. */
static double stat_of(const char *sock, const char *group, const char *key)
{
    gs_client *c = conn_to(sock);
    cJSON *r = NULL;
    double v = call(c, "stats", &r, NULL, 0) == 0 ? jnum(jget(r, group), key) : -1;
    cJSON_Delete(r);
    gs_client_close(c);
    return v;
}

/* `len` bytes in one sendmsg with descriptors fds[0..nfd) attached. */
static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
    union {
        char b[CMSG_SPACE(sizeof(int) * 8)];
        struct cmsghdr align;
    } cb;
    struct iovec iov = { (void *)buf, len };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfd > 0) {
        mh.msg_control = cb.b;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfd);
    }
    ssize_t w = sendmsg(sock, &mh, MSG_NOSIGNAL);
    return w == (ssize_t)len ? 0 : -1;
}

/* A frame head (length prefix and header text) for `text`, in buf. */
static size_t frame(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(text);
    if (n + GS_PROTO_LEN_BYTES > cap)
        tap_bail("test bug: frame too long");
    gs_proto_put_len((uint8_t *)buf, (uint32_t)n);
    memcpy(buf + GS_PROTO_LEN_BYTES, text, n);
    return n + GS_PROTO_LEN_BYTES;
}

/* One reply header (no payload expected); NULL with why. */
static cJSON *reply_of(gs_client *c, char *why, size_t len)
{
    cJSON *h = NULL;
    gs_err err;
    gs_err_clear(&err);
    uint64_t got = 0;
    int rc = c ? gs_client_recv(c, &h, NULL, 0, &got, &err) : GS_EIO;
    if (rc) {
        snprintf(why, len, "no reply: %s %.600s", gs_strerror(rc), c ? err.msg : "");
        cJSON_Delete(h);
        return NULL;
    }
    return h;
}

/* Whether reply h is an error with `code` whose message has `needle`;
 * why says what it was. */
static int is_error(const cJSON *h, const char *code, const char *needle, char *why, size_t len)
{
    const cJSON *e = jget(h, "error");
    snprintf(why, len, "%s%s: %s%s", cJSON_IsTrue(jget(h, "ok")) ? "ok " : "", jstr(e, "code"),
             jstr(e, "message"), cJSON_IsTrue(jget(h, "close")) ? " (close)" : "");
    return h && !strcmp(jstr(e, "code"), code) && strstr(jstr(e, "message"), needle);
}

/* Wait up to `timeout` s for a line of d's log with `needle`. */
static int wait_log(const dmn *d, const char *needle, double timeout)
{
    for (double t0 = gs_now_s(); gs_now_s() - t0 < timeout; dmn_sleep(0.1))
        if (dmn_log_contains(d, needle))
            return 1;
    return 0;
}

/* A sealed memfd holding n u32 keys n-1, ..., 0 (a reversed run). */
static int keys_memfd(uint32_t n, uint32_t **map)
{
    int fd = memfd_create("limits", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t bytes = n * sizeof(uint32_t);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
        tap_bail("memfd: %s", strerror(errno));
    uint32_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        tap_bail("mmap: %s", strerror(errno));
    for (uint32_t i = 0; i < n; i++)
        m[i] = n - 1 - i;
    *map = m;
    return fd;
}

static int sorted(const uint32_t *k, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        if (k[i - 1] > k[i])
            return 0;
    return 1;
}

/* Until c is the daemon's only client: dmn_wait_ready's probe connection
 * holds a slot until the daemon has seen it close. */
static void wait_alone(gs_client *c)
{
    for (int i = 0; i < 100; i++) {
        cJSON *st = NULL;
        double cur = call(c, "stats", &st, NULL, 0) == 0 ? jnum(jget(st, "clients"), "current")
                                                        : -1;
        cJSON_Delete(st);
        if (cur == 1)
            return;
        dmn_sleep(0.05);
    }
    tap_diag("the daemon still counts other clients after 5 s");
}

/* ---- request_timeout: a slow drip is cut off ---- */

/* Send `len` bytes one at a time every `gap` s until the daemon answers;
 * the seconds from the first byte to its answer, -1 if it never did. */
static double drip(int fd, const char *buf, size_t len, double gap)
{
    double t0 = gs_now_s();
    for (size_t i = 0; i < len; i++) {
        if (dmn_send_raw(fd, buf + i, 1) < 0)
            break;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, (int)(gap * 1000)) > 0)
            return gs_now_s() - t0;
    }
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, 5000) > 0 ? gs_now_s() - t0 : -1;
}

static void test_request_timeout(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "request_timeout=2", NULL };
    if (dmn_start(&d, "drip", NULL, extra) < 0) {
        tap_ok(0, "a daemon with request_timeout=2 starts");
        return;
    }
    gs_client *other = conn_to(d.sock);
    char why[600], buf[512];

    /* the header, a byte every 0.25 s: progress all along, so io_timeout
     * (30 s) never fires; the whole header would take 30 s */
    char text[256] = "{\"v\":1,\"op\":\"ping\",\"id\":\"hd\",\"pad\":\"";
    memset(text + strlen(text), 'x', 80);
    strcpy(text + strlen(text), "\"}");
    size_t n = frame(buf, sizeof buf, text);
    gs_client *c = conn_to(d.sock);
    double t = c ? drip(gs_client_fd(c), buf, n, 0.25) : -1;
    cJSON *h = t >= 0 ? reply_of(c, why, sizeof why) : NULL;
    int err_ok = h && is_error(h, "GS_ETOOBIG", "request_timeout", why, sizeof why);
    tap_ok(err_ok && cJSON_IsTrue(jget(h, "close")) && t >= 1.9 && t <= 4,
           "a header dripped a byte every 0.25 s is answered at request_timeout=2 "
           "(%.2f s): %s", t, h ? why : "no reply");
    tap_ok(c && dmn_wait_eof(gs_client_fd(c), 5) >= 0, "and its connection is closed");
    cJSON_Delete(h);
    gs_client_close(c);
    tap_ok(ping(other), "a client beside it is served");

    /* the payload, 16 bytes every 0.25 s: the 4096 bytes would take 64 s */
    static uint32_t keys[1024];
    for (int i = 0; i < 1024; i++)
        keys[i] = (uint32_t)(i * 2654435761u);
    c = conn_to(d.sock);
    n = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"sort\",\"id\":\"pl\",\"dtype\":\"u32\","
              "\"n\":1024,\"payload_bytes\":4096,\"algorithm\":\"host\"}");
    double t0 = gs_now_s();
    int sent = c && dmn_send_raw(gs_client_fd(c), buf, n) == 0;
    const char *pk = (const char *)keys;
    t = -1;
    for (size_t off = 0; sent && off < sizeof keys; off += 16) {
        if (dmn_send_raw(gs_client_fd(c), pk + off, 16) < 0)
            break;
        struct pollfd p = { .fd = gs_client_fd(c), .events = POLLIN };
        if (poll(&p, 1, 250) > 0) {
            t = gs_now_s() - t0;
            break;
        }
    }
    h = t >= 0 ? reply_of(c, why, sizeof why) : NULL;
    err_ok = h && is_error(h, "GS_ETOOBIG", "request_timeout", why, sizeof why);
    tap_ok(err_ok && !strcmp(jstr(h, "id"), "pl") && t >= 1.9 && t <= 4,
           "a payload dripped 16 bytes every 0.25 s is answered at request_timeout=2, its id "
           "echoed (%.2f s): %s", t, h ? why : "no reply");
    tap_ok(c && dmn_wait_eof(gs_client_fd(c), 5) >= 0, "and its connection is closed");
    cJSON_Delete(h);
    gs_client_close(c);

    /* a request that takes less than the limit, sent in pieces, is served */
    c = conn_to(d.sock);
    n = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"ping\",\"id\":\"quick\"}");
    int ok = c && dmn_send_raw(gs_client_fd(c), buf, 6) == 0;
    dmn_sleep(1.0);
    ok = ok && dmn_send_raw(gs_client_fd(c), buf + 6, n - 6) == 0;
    h = ok ? reply_of(c, why, sizeof why) : NULL;
    tap_ok(h && cJSON_IsTrue(jget(h, "ok")) && ping(c),
           "a ping sent in two pieces 1 s apart is served, the connection kept");
    cJSON_Delete(h);
    gs_client_close(c);
    tap_ok(ping(other) && dmn_log_contains(&d, "not received whole within request_timeout"),
           "the daemon serves on and logs why it cut the two clients off");
    gs_client_close(other);
    tap_ok(dmn_stop(&d, SIGTERM, 20) == 0, "drip daemon: SIGTERM -> exit 0");
}

/* ---- max_clients_per_uid ---- */

/* In a child as uid/gid (no supplementary groups): open `n` connections to
 * sock and ping each; report on `rep` one byte per connection ('s' served,
 * 'u' refused naming max_clients_per_uid, 'x' anything else), then hold
 * them until `hold` closes. */
static pid_t clients_as(unsigned uid, unsigned gid, const char *sock, int n, int rep, int hold)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork: %s", strerror(errno));
    if (pid)
        return pid;
    /* only our ends of our pipes: a write end of `hold` left open here, or
     * in a sibling, would keep the read below from ever seeing EOF */
    for (int fd = 3; fd < 1024; fd++)
        if (fd != rep && fd != hold)
            close(fd);
    if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
        _exit(4);
    gs_client *cs[16] = { 0 };
    for (int i = 0; i < n && i < 16; i++) {
        gs_err err;
        gs_err_clear(&err);
        char r = 'x';
        if (gs_client_connect(&cs[i], sock, &err) == 0) {
            gs_client_set_timeout(cs[i], 30);
            int rc = gs_client_call(cs[i], "ping", NULL, &err);
            r = rc == 0 ? 's'
                : rc == GS_ETOOBIG && strstr(err.msg, "max_clients_per_uid") ? 'u' : 'x';
        }
        if (write(rep, &r, 1) != 1)
            _exit(5);
    }
    char b;
    while (read(hold, &b, 1) > 0)
        ;
    _exit(0);
}

/* Run clients_as and collect its n verdicts into out (NUL-terminated); the
 * child keeps its connections until *hold_w is closed. */
static pid_t uid_clients(unsigned uid, unsigned gid, const char *sock, int n, char *out,
                         int *hold_w)
{
    int rep[2], hold[2];
    if (pipe(rep) < 0 || pipe(hold) < 0)
        tap_bail("pipe: %s", strerror(errno));
    pid_t pid = clients_as(uid, gid, sock, n, rep[1], hold[0]);
    close(rep[1]);
    close(hold[0]);
    int got = 0;
    while (got < n && read(rep[0], out + got, 1) == 1)
        got++;
    out[got] = '\0';
    close(rep[0]);
    *hold_w = hold[1];
    return pid;
}

static void reap(pid_t pid, int hold_w)
{
    close(hold_w);
    waitpid(pid, NULL, 0);
}

static void test_per_uid(void)
{
    static dmn d;
    char sock[128];
    snprintf(sock, sizeof sock, "%s/peruid.sock", dmn_tmpdir());
    int root = geteuid() == 0;
    static int hooked;
    if (!root)
        hooked = setenv("GSORTD_TEST_UID_CAP_ALL", "1", 1) == 0;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_clients_per_uid=2", "-o",
                                  "max_clients=16", "-o", "socket_group=65534", NULL };
    const char *const extra_user[] = { "-o", "devices=none", "-o", "max_clients_per_uid=2",
                                       "-o", "max_clients=16", NULL };
    int rc = dmn_start(&d, "peruid", sock, root ? extra : extra_user);
    if (!root)
        unsetenv("GSORTD_TEST_UID_CAP_ALL");
    if (rc < 0) {
        tap_ok(0, "a daemon with max_clients_per_uid=2 starts");
        return;
    }
    if (root) {
        char a[8], b[8];
        int ha, hb;
        pid_t pa = uid_clients(UID_A, GID_SOCK, sock, 3, a, &ha);
        tap_ok(!strcmp(a, "ssu"), "uid %u: 2 connections served, the 3rd refused naming "
               "max_clients_per_uid (%s)", UID_A, a);
        pid_t pb = uid_clients(UID_B, GID_SOCK, sock, 2, b, &hb);
        tap_ok(!strcmp(b, "ss"), "meanwhile uid %u is served on 2 connections (%s)", UID_B, b);
        gs_client *r[3];
        int all = 1;
        for (int i = 0; i < 3; i++)
            all &= ping(r[i] = conn_to(sock));
        tap_ok(all, "root, exempt, is served on 3 connections meanwhile");
        for (int i = 0; i < 3; i++)
            gs_client_close(r[i]);
        reap(pb, hb);
        reap(pa, ha);
        /* uid A's slots come back when its connections close */
        int ok = 0;
        for (int i = 0; i < 50 && !ok; i++) {
            pa = uid_clients(UID_A, GID_SOCK, sock, 2, a, &ha);
            ok = !strcmp(a, "ss");
            reap(pa, ha);
            if (!ok)
                dmn_sleep(0.1);
        }
        tap_ok(ok, "once they closed, uid %u is served on 2 connections again (%s)", UID_A, a);
    } else {
        tap_diag("not root: no second uid here; the test hook caps the test's own uid %u",
                 (unsigned)getuid());
        gs_client *cs[3];
        int v[3];
        char msg[3][300];
        for (int i = 0; i < 3; i++) {
            cs[i] = conn_to(sock);
            v[i] = call(cs[i], "ping", NULL, msg[i], sizeof msg[i]);
            if (i == 0)
                wait_alone(cs[0]);
        }
        tap_ok(hooked && v[0] == 0 && v[1] == 0 && v[2] == GS_ETOOBIG &&
                   strstr(msg[2], "max_clients_per_uid"),
               "uid %u: 2 connections served, the 3rd refused: %s", (unsigned)getuid(), msg[2]);
        tap_ok(ping(cs[0]) && ping(cs[1]), "the 2 served are unaffected");
        for (int i = 0; i < 3; i++)
            gs_client_close(cs[i]);
        tap_diag("not root: another uid served beside it, and root exempt, are not checked");
    }
    char needle[96];
    snprintf(needle, sizeof needle, "too many connections from uid %u (max_clients_per_uid = 2)",
             root ? UID_A : (unsigned)getuid());
    tap_ok(dmn_log_contains(&d, needle), "the refusal is logged: '%s'", needle);
    tap_ok(stat_of(sock, "clients", "rejected") == 1, "stats: clients.rejected 1");
    tap_ok(dmn_stop(&d, SIGTERM, 20) == 0, "per-uid daemon: SIGTERM -> exit 0");
}

/* ---- refusals logged at a bounded rate ---- */

static void test_refusal_log(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_clients=2", NULL };
    if (dmn_start(&d, "refuse", NULL, extra) < 0) {
        tap_ok(0, "a daemon with max_clients=2 starts");
        return;
    }
    gs_client *keep = conn_to(d.sock), *keep2 = NULL;
    int kept = ping(keep);
    wait_alone(keep);
    kept = kept && ping(keep2 = conn_to(d.sock));
    int refused = 0;
    double t0 = gs_now_s();
    for (int i = 0; i < 40; i++) {
        gs_client *c = conn_to(d.sock);
        char msg[300];
        refused += call(c, "ping", NULL, msg, sizeof msg) == GS_ETOOBIG &&
                   strstr(msg, "max_clients = 2");
        gs_client_close(c);
    }
    double took = gs_now_s() - t0;
    tap_ok(kept && refused == 40, "40 clients beyond max_clients=2 refused with GS_ETOOBIG "
           "(%d) in %.1f s", refused, took);
    int lines = dmn_log_count(&d, "refusing client");
    tap_ok(lines == 5, "only the first 5 refusals of the 10 s window are logged (%d lines)", lines);
    int flushed = wait_log(&d, "more refusals suppressed in the last 10 s", 15 * dmn_slowdown());
    int exact = dmn_log_contains(&d, "(35 more refusals suppressed in the last 10 s)");
    tap_ok(flushed && exact && took < 9, "once the window is over, one line counts the other 35");
    if (!exact)
        dmn_dump_log(&d, 10);
    cJSON *st = NULL;
    double rej = call(keep, "stats", &st, NULL, 0) == 0 ? jnum(jget(st, "clients"), "rejected")
                                                       : -1;
    cJSON_Delete(st);
    tap_ok(rej == 40, "stats: clients.rejected counts all 40 (%g)", rej);
    tap_ok(ping(keep) && ping(keep2), "the admitted clients are served throughout");
    gs_client_close(keep);
    gs_client_close(keep2);
    tap_ok(dmn_stop(&d, SIGTERM, 20) == 0, "refusal daemon: SIGTERM -> exit 0");
}

/* ---- descriptors: RLIMIT_NOFILE at start, EMFILE on receive ---- */

static int child_nofile(void *arg)
{
    const struct rlimit *rl = arg;
    return setrlimit(RLIMIT_NOFILE, rl) < 0;
}

static void test_fd_limits(void)
{
    /* a hard limit of 100: fewer clients, said in the log and in info */
    static dmn lo;
    static struct rlimit low = { 100, 100 };
    const char *const extra[] = { "-o", "devices=none", NULL };
    if (dmn_spawn(&lo, "lowfd", NULL, extra, child_nofile, &low) < 0 || dmn_wait_ready(&lo) < 0) {
        tap_ok(0, "a daemon under RLIMIT_NOFILE 100 starts");
        return;
    }
    gs_client *c = conn_to(lo.sock);
    cJSON *info = NULL;
    call(c, "info", &info, NULL, 0);
    double mc = jnum(jget(info, "limits"), "max_clients");
    cJSON_Delete(info);
    char needle[128];
    snprintf(needle, sizeof needle, "max_clients lowered from 256 to %.0f:", mc);
    tap_ok(mc >= 1 && mc * 3 < 100 && dmn_log_contains(&lo, needle) &&
               dmn_log_contains(&lo, "RLIMIT_NOFILE allows 100"),
           "RLIMIT_NOFILE 100 (hard): max_clients lowered to %.0f, in info and the log", mc);
    gs_client *cs[64] = { c };
    int n = mc >= 1 && mc < 64 ? (int)mc : 0, all = n > 0 && ping(c);
    for (int i = 1; i < n; i++)
        all &= ping(cs[i] = conn_to(lo.sock));
    char msg[300] = "", want[64];
    snprintf(want, sizeof want, "max_clients = %d", n);
    gs_client *over = conn_to(lo.sock);
    int rc = call(over, "ping", NULL, msg, sizeof msg);
    tap_ok(all && rc == GS_ETOOBIG && strstr(msg, want),
           "%d clients are served and one more is refused: %s", n, msg);
    gs_client_close(over);
    for (int i = 0; i < n; i++)
        gs_client_close(cs[i]);
    tap_ok(dmn_stop(&lo, SIGTERM, 20) == 0, "low-limit daemon: SIGTERM -> exit 0");

    /* a soft limit of 100 under a hard one of 4096: raised */
    static dmn d;
    static struct rlimit soft = { 100, 4096 };
    if (dmn_spawn(&d, "fds", NULL, extra, child_nofile, &soft) < 0 || dmn_wait_ready(&d) < 0) {
        tap_ok(0, "a daemon under a soft RLIMIT_NOFILE of 100 starts");
        return;
    }
    /* The socket accepts connections from the moment it listens, before
     * the daemon fits its limit to max_clients; a reply comes only once
     * its loop runs, which is after (a race under ASan: CI). */
    c = conn_to(d.sock);
    int answered = ping(c);
    struct rlimit now;
    int got = answered && prlimit(d.pid, RLIMIT_NOFILE, NULL, &now) == 0;
    tap_ok(got && now.rlim_cur >= 256 * 3 && now.rlim_cur <= 4096 && now.rlim_max == 4096 &&
               dmn_log_contains(&d, "raised the open-file limit (RLIMIT_NOFILE) from 100 to"),
           "soft RLIMIT_NOFILE 100, hard 4096: raised to %llu for max_clients = 256, said in "
           "the log", got ? (unsigned long long)now.rlim_cur : 0ull);

    /* out of descriptors: a memfd request gets its own error, and the
     * connection lives on */
    uint32_t *keys;
    int mfd = keys_memfd(64, &keys);
    cJSON *hdr = cJSON_Parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":64,"
                             "\"memfd\":true,\"algorithm\":\"host\"}");
    int pinged = ping(c);
    struct rlimit tight = { 3, now.rlim_max };
    int lowered = prlimit(d.pid, RLIMIT_NOFILE, &tight, NULL) == 0;
    gs_err err;
    gs_err_clear(&err);
    char why[700] = "";
    cJSON *h = NULL;
    if (lowered && gs_client_send(c, hdr, NULL, 0, mfd, &err) == 0)
        h = reply_of(c, why, sizeof why);
    int e_ok = h && is_error(h, "GS_EIO", "out of file descriptors", why, sizeof why);
    tap_ok(pinged && e_ok && !cJSON_IsTrue(jget(h, "close")) && !sorted(keys, 64),
           "with the daemon's RLIMIT_NOFILE at 3, a memfd request gets GS_EIO saying the daemon "
           "is out of descriptors (not 'too many'), the connection kept: %s", why);
    cJSON_Delete(h);
    h = NULL;
    int restored = prlimit(d.pid, RLIMIT_NOFILE, &now, NULL) == 0;
    if (restored && gs_client_send(c, hdr, NULL, 0, mfd, &err) == 0)
        h = reply_of(c, why, sizeof why);
    tap_ok(h && cJSON_IsTrue(jget(h, "ok")) && sorted(keys, 64),
           "the limit restored, the same connection sorts the memfd (%s)",
           h ? "ok" : why);
    cJSON_Delete(h);
    tap_ok(dmn_log_contains(&d, "a descriptor it sent was lost: out of file descriptors"),
           "the daemon logs the lost descriptor");

    /* too many descriptors stays its own, fatal error */
    int three[3] = { mfd, mfd, mfd };
    char buf[256];
    size_t fl = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":64,"
                      "\"memfd\":true,\"algorithm\":\"host\"}");
    gs_client *c3 = conn_to(d.sock);
    h = c3 && send_fds(gs_client_fd(c3), buf, fl, three, 3) == 0 ? reply_of(c3, why, sizeof why)
                                                               : NULL;
    e_ok = h && is_error(h, "GS_EINVAL", "more descriptors than one message may carry", why,
                         sizeof why);
    tap_ok(e_ok && cJSON_IsTrue(jget(h, "close")), "3 descriptors in one message: %s", why);
    cJSON_Delete(h);
    gs_client_close(c3);
    cJSON_Delete(hdr);
    munmap(keys, 64 * sizeof *keys);
    close(mfd);
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 20) == 0, "fd daemon: SIGTERM -> exit 0");
}

/* ---- a descriptor with payload bytes; stats count every request ---- */

static void test_fd_rule_and_stats(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_request_bytes=1M", NULL };
    if (dmn_start(&d, "fdrule", NULL, extra) < 0) {
        tap_ok(0, "a daemon starts");
        return;
    }
    char why[700], buf[512];

    /* Fatal framing errors first: each is a request, counted once. */
    gs_client *c = conn_to(d.sock);
    uint8_t zero[4] = { 0, 0, 0, 0 };
    cJSON *h = c && dmn_send_raw(gs_client_fd(c), zero, 4) == 0 ? reply_of(c, why, sizeof why) : NULL;
    int e1 = h && is_error(h, "GS_EINVAL", "header length 0", why, sizeof why);
    cJSON_Delete(h);
    gs_client_close(c);
    c = conn_to(d.sock);
    size_t n = frame(buf, sizeof buf, "this is not JSON");
    h = c && dmn_send_raw(gs_client_fd(c), buf, n) == 0 ? reply_of(c, why, sizeof why) : NULL;
    int e2 = h && is_error(h, "GS_EINVAL", "not a JSON object", why, sizeof why);
    cJSON_Delete(h);
    gs_client_close(c);
    c = conn_to(d.sock);
    n = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1048576,"
              "\"payload_bytes\":4194304}");
    h = c && dmn_send_raw(gs_client_fd(c), buf, n) == 0 ? reply_of(c, why, sizeof why) : NULL;
    int e3 = h && is_error(h, "GS_ETOOBIG", "max_request_bytes", why, sizeof why);
    cJSON_Delete(h);
    gs_client_close(c);
    c = conn_to(d.sock);
    cJSON *st = NULL;
    int served = ping(c) && call(c, "stats", &st, NULL, 0) == 0;
    const cJSON *rq = jget(st, "requests");
    double total = jnum(rq, "total"), ok = jnum(rq, "ok"), errors = jnum(rq, "errors");
    tap_ok(e1 && e2 && e3 && served && total == 5 && errors == 3 && total == ok + errors,
           "3 fatal framing errors, a ping and this stats: requests total %g (want 5: every "
           "request counted once), ok %g, errors %g", total, ok, errors);
    cJSON_Delete(st);

    /* An inline sort whose payload bytes bring a memfd: refused, the memfd
     * closed, and the next memfd request that brings none is not given it. */
    uint32_t *keys;
    int mfd = keys_memfd(4, &keys);
    static const uint32_t inl[4] = { 9, 7, 8, 6 };
    n = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"sort\",\"id\":1,\"dtype\":\"u32\",\"n\":4,"
              "\"payload_bytes\":16,\"algorithm\":\"host\"}");
    int sent = dmn_send_raw(gs_client_fd(c), buf, n) == 0 &&
               send_fds(gs_client_fd(c), inl, sizeof inl, &mfd, 1) == 0;
    h = sent ? reply_of(c, why, sizeof why) : NULL;
    int r1 = h && is_error(h, "GS_EINVAL", "a descriptor came with payload bytes", why,
                           sizeof why) && !cJSON_IsTrue(jget(h, "close"));
    tap_ok(r1, "a descriptor sent with an inline sort's payload bytes is refused, the "
           "connection kept: %s", why);
    cJSON_Delete(h);
    n = frame(buf, sizeof buf, "{\"v\":1,\"op\":\"sort\",\"id\":2,\"dtype\":\"u32\",\"n\":4,"
              "\"memfd\":true,\"algorithm\":\"host\"}");
    h = dmn_send_raw(gs_client_fd(c), buf, n) == 0 ? reply_of(c, why, sizeof why) : NULL;
    int r2 = h && is_error(h, "GS_EINVAL", "no descriptor came with the message", why,
                           sizeof why);
    tap_ok(r2 && !sorted(keys, 4) && keys[0] == 3,
           "the next memfd request, sent without one, is refused and the earlier memfd is "
           "left alone (not sorted): %s", why);
    cJSON_Delete(h);
    tap_ok(ping(c), "and the connection still serves");
    munmap(keys, 4 * sizeof *keys);
    close(mfd);
    gs_client_close(c);
    tap_ok(dmn_stop(&d, SIGTERM, 20) == 0, "fd-rule daemon: SIGTERM -> exit 0");
}

int main(void)
{
    dmn_init();
    /* uids 12345 and 12346 reach the per-uid socket there (0660, group 65534) */
    if (chmod(dmn_tmpdir(), 0711) < 0)
        tap_bail("chmod %s: %s", dmn_tmpdir(), strerror(errno));
    test_fd_rule_and_stats();
    test_request_timeout();
    test_per_uid();
    test_refusal_log();
    test_fd_limits();
    return tap_done();
}
