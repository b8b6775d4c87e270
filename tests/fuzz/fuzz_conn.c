/* libFuzzer target for the daemon's connection state machine (daemon/
 * gs_conn.c, gs_io.c with lib/wire/gs_proto*.c): the real server (gs_srv_run,
 * host sorts only, small limits) runs on a thread of the fuzzing process,
 * started once on a socket in a temporary directory, and every input is a
 * script played on a new connection to it: writes of chosen sizes, of raw
 * bytes or of frames built from the input (ping, info, stats, inline and
 * memfd sorts of every dtype and values kind, with true or lying sizes),
 * descriptors attached to a write (memfds of several sizes and seals, a
 * pipe, the same memfd again, two or three at once), replies read in part
 * or not at all, short pauses, a half-close or an abrupt close. After the
 * script the client half-closes and the daemon must close the connection
 * within 10 s, then answer a ping on a fresh one; anything else, a crash
 * or a sanitizer report is a finding (abort). At exit the server is
 * stopped with SIGTERM (its drain) and joined, so that leaks show. Also
 * built with the normal compiler into the corpus replay test
 * (tests/fuzz/replay.c), where each input runs in a child with a server of
 * its own. The script is a byte code, each op's byte mod 9: 0 raw bytes
 * (a length, then the bytes), 1-2 a frame (op, flags, extra, then the
 * sort's dtype, values, log2 n, algorithm, n), 3 descriptors for the next
 * write (kind, size), 4 half-close, 5 read up to 64*k bytes, 6 pause k ms,
 * 7 chunk size, 8 stop (abruptly when the next byte is 0 mod 4). The seeds
 * in tests/fuzz/corpus/conn/ are named for what they do. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gs_client.h"
#include "gs_conf.h"
#include "gs_log.h"
#include "gs_proto.h"
#include "gs_srv.h"
#include "gs_time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) do { fprintf(stderr, "fuzz_conn: " __VA_ARGS__); fputc('\n', stderr); \
                       abort(); } while (0)

#define SCRIPT_S 3.0        /* a script's writes give up after this long */
#define CLOSE_S 10.0        /* the daemon closes a half-closed connection within this */
#define MAX_N 8192          /* keys in a built sort */
#define MAX_PAUSE_MS 40     /* all the pauses of one input together */

/* ---- the server, once per process ---- */

static char g_dir[64], g_sock[96];
static pthread_t g_th;
static int g_up;
static gs_conf g_conf;
static gs_srv_opts g_opts;

static void *serve(void *arg)
{
    (void)arg;
    gs_err e;
    gs_err_clear(&e);
    if (gs_srv_run(&g_opts, &e) < 0)
        FAIL("the server did not start: %s", e.msg);
    return NULL;
}

static void stop_server(void)
{
    if (!g_up)
        return;
    g_up = 0;
    /* libuv's SIGTERM handler (installed by the server, over libFuzzer's)
     * starts the drain; the server returns once its clients are gone */
    kill(getpid(), SIGTERM);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    if (pthread_timedjoin_np(g_th, NULL, &ts) != 0)
        FAIL("the server did not stop within 20 s of SIGTERM");
    char p[200];
    snprintf(p, sizeof p, "%s.lock", g_sock);
    unlink(p);
    unlink(g_sock);
    rmdir(g_dir);
}

static int connect_to(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", g_sock);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static void start_server(void)
{
    signal(SIGPIPE, SIG_IGN);
    /* GSORT_FUZZ_LOG=debug (info, warn) shows the daemon's log */
    const char *lv = getenv("GSORT_FUZZ_LOG");
    gs_log_set_level(lv && gs_log_parse_level(lv) >= 0 ? gs_log_parse_level(lv) : GS_LOG_ERROR);
    snprintf(g_dir, sizeof g_dir, "/tmp/gsd-fuzz-conn-XXXXXX");
    if (!mkdtemp(g_dir))
        FAIL("mkdtemp: %s", strerror(errno));
    snprintf(g_sock, sizeof g_sock, "%s/s.sock", g_dir);
    gs_conf_defaults(&g_conf);
    static const char *const kv[][2] = {
        { "devices", "none" },           { "io_threads", "1" },
        { "inline_sort_max", "2048" },   { "max_request_bytes", "1M" },
        { "max_header_bytes", "4K" },    { "tune_missing", "no" },
        { "max_clients", "64" },         { "host_threads", "2" },
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        gs_err e;
        if (gs_conf_set(&g_conf, kv[i][0], kv[i][1], &e) < 0)
            FAIL("%s", e.msg);
    }
    g_opts = (gs_srv_opts){ .conf = &g_conf, .socket_path = g_sock, .db_path = "" };
    if (pthread_create(&g_th, NULL, serve, NULL) != 0)
        FAIL("pthread_create");
    for (int i = 0; i < 1000; i++) {
        int fd = connect_to();
        if (fd >= 0) {
            close(fd);
            g_up = 1;
            atexit(stop_server);
            return;
        }
        usleep(10000);
    }
    FAIL("the server did not listen within 10 s");
}

/* ---- reading the script ---- */

typedef struct script {
    const uint8_t *p;
    size_t n, at;
    uint64_t rng;
} script;

static unsigned byte(script *s)
{
    return s->at < s->n ? s->p[s->at++] : 0;
}

static int more(const script *s)
{
    return s->at < s->n;
}

static uint64_t rnd(script *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the client side of one connection ---- */

typedef struct client {
    int fd;
    int wr_shut, dead;       /* no more writing: half-closed, or the daemon is gone */
    size_t chunk;            /* bytes per sendmsg; 0: as many as the socket takes */
    int fds[3], nfds;        /* attached to the next write, owned: closed once sent */
    int last_memfd;          /* kept to be sent again (a dup each time) */
    double t_end;            /* writes give up after this */
    int pause_ms;
} client;

/* Read and drop what the daemon sent, at most `cap` bytes (0: all there is). */
static void drain(client *c, size_t cap)
{
    char buf[65536];
    size_t got = 0;
    while (!cap || got < cap) {
        size_t want = cap && cap - got < sizeof buf ? cap - got : sizeof buf;
        ssize_t r = recv(c->fd, buf, want, MSG_DONTWAIT);
        if (r <= 0)
            return;
        got += (size_t)r;
    }
}

/* Each descriptor is closed exactly once: the daemon's run in this
 * process, and a number closed twice could be one of theirs by then. */
static void drop_fds(client *c)
{
    for (int i = 0; i < c->nfds; i++)
        close(c->fds[i]);
    c->nfds = 0;
}

/* Write len bytes in chunks, the pending descriptors with the first
 * sendmsg; reading replies whenever the socket is full, so that a daemon
 * blocked writing to us still reads. */
static void put(client *c, const void *buf, size_t len)
{
    const char *p = buf;
    while (len && !c->wr_shut && !c->dead) {
        if (gs_now_s() > c->t_end) {
            c->wr_shut = 1;
            break;
        }
        size_t k = c->chunk && c->chunk < len ? c->chunk : len;
        union {
            char b[CMSG_SPACE(sizeof(int) * 3)];
            struct cmsghdr align;
        } cb;
        struct iovec iov = { (void *)p, k };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (c->nfds) {
            mh.msg_control = cb.b;
            mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)c->nfds);
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)c->nfds);
            memcpy(CMSG_DATA(cm), c->fds, sizeof(int) * (size_t)c->nfds);
        }
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            drop_fds(c);
            p += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd pf = { .fd = c->fd, .events = POLLIN | POLLOUT };
            if (poll(&pf, 1, 50) > 0 && (pf.revents & POLLIN))
                drain(c, 0);
            continue;
        }
        c->dead = 1;    /* EPIPE, ECONNRESET: the daemon closed us */
    }
}

/* A memfd of `bytes` holding PRNG bytes, with seals chosen by `kind`. */
static int make_memfd(script *s, size_t bytes, unsigned kind)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)bytes) < 0) {
        close(fd);
        return -1;
    }
    uint64_t buf[512];
    for (size_t off = 0; off < bytes && off < (256u << 10); off += sizeof buf) {
        for (size_t i = 0; i < 512; i++)
            buf[i] = rnd(s);
        size_t k = bytes - off < sizeof buf ? bytes - off : sizeof buf;
        if (pwrite(fd, buf, k, (off_t)off) < 0)
            break;
    }
    static const int seals[] = { F_SEAL_SHRINK, 0, F_SEAL_SHRINK | F_SEAL_GROW,
                                 F_SEAL_SHRINK | F_SEAL_WRITE, F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE,
                                 F_SEAL_SHRINK, F_SEAL_SHRINK, F_SEAL_SHRINK | F_SEAL_SEAL };
    int sl = seals[kind % 8];
    if (sl)
        fcntl(fd, F_ADD_SEALS, sl);
    return fd;
}

/* Attach fd (taken) to the next write. */
static void add_fd(client *c, int fd)
{
    if (fd < 0)
        return;
    if (c->nfds < 3)
        c->fds[c->nfds++] = fd;
    else
        close(fd);
}

/* Descriptors for the next write. */
static void op_fd(client *c, script *s)
{
    unsigned kind = byte(s);
    static const size_t sizes[] = { 0, 4, 64, 4096, 65536, 1u << 20, 2u << 20, 100 };
    size_t bytes = sizes[byte(s) % 8];
    switch (kind % 6) {
    case 0: case 1: {
        int fd = make_memfd(s, bytes, kind / 6);
        if (fd >= 0) {
            if (c->last_memfd >= 0)
                close(c->last_memfd);
            c->last_memfd = fd;
            add_fd(c, fcntl(fd, F_DUPFD_CLOEXEC, 0));
        }
        break;
    }
    case 2:     /* the same file again: the daemon keeps it mapped */
        if (c->last_memfd >= 0)
            add_fd(c, fcntl(c->last_memfd, F_DUPFD_CLOEXEC, 0));
        break;
    case 3: {   /* not a memfd */
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) == 0) {
            close(pp[1]);
            add_fd(c, pp[0]);
        }
        break;
    }
    case 4:     /* two at once */
        add_fd(c, make_memfd(s, bytes, kind / 6));
        add_fd(c, make_memfd(s, 4096, 0));
        break;
    default:    /* three: more than one message may carry */
        for (int i = 0; i < 3; i++)
            add_fd(c, make_memfd(s, 64, 0));
        break;
    }
}

/* A frame built from the script: mostly valid requests, sometimes lying. */
static void op_frame(client *c, script *s)
{
    static const char *const ops[] = { "ping", "info", "stats", "sort", "sort", "sort", "nop" };
    static const char *const dts[] = { "u32", "i32", "f32", "u64", "i64", "f64", "u16" };
    static const char *const vals[] = { "none", "u32", "u64", "idx32", "idx64" };
    static const char *const algos[] = { "", "host", "host", "radix", "vqsort", "nosuch" };
    static const unsigned ks[] = { 4, 4, 4, 8, 8, 8, 2 };
    static const unsigned vs[] = { 0, 4, 8, 0, 0 };
    /* flags: 1 id, 2|4 memfd, 8 desc, 16 stable, 32 keys_offset, 64 lie;
     * extra: 1 version 2, 2 an odd field, 4 the payload cut short */
    unsigned op = byte(s) % 7, flags = byte(s), extra = byte(s);
    char hdr[1024];
    int n = snprintf(hdr, sizeof hdr, "{\"v\":%d,\"op\":\"%s\"", extra & 1 ? 2 : 1, ops[op]);
    if (flags & 1)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"id\":%u", byte(s));
    uint64_t payload = 0;
    if (!strcmp(ops[op], "sort")) {
        unsigned dt = byte(s) % 7, vk = byte(s) % 5, sh = byte(s) % 14, a = byte(s) % 6;
        uint64_t nk = (uint64_t)((1u << sh) + byte(s)) % (MAX_N + 1);
        uint64_t in = nk * ks[dt] + nk * vs[vk];
        int memfd = (flags & 6) == 6;
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"dtype\":\"%s\",\"n\":%llu",
                      dts[dt], (unsigned long long)nk);
        if (vk)
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"values\":\"%s\"", vals[vk]);
        if (a)
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"algorithm\":\"%s\"", algos[a]);
        if (flags & 8)
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"order\":\"desc\"");
        if (flags & 16)
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"stable\":true");
        if (memfd) {
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"memfd\":true");
            if (flags & 32)
                n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"keys_offset\":%u",
                              (byte(s) % 4) * 64);
        } else {
            payload = in;
        }
        if (flags & 64) {   /* a lie: off by a little, or far too much */
            unsigned d = byte(s);
            payload = d & 0x80 ? (uint64_t)(d & 0x7f) << 14 : payload + d - 64;
            if ((int64_t)payload < 0)
                payload = 0;
        }
        if (!memfd || (flags & 64))
            n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"payload_bytes\":%llu",
                          (unsigned long long)payload);
    } else if (flags & 64) {
        payload = byte(s);
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, ",\"payload_bytes\":%llu",
                      (unsigned long long)payload);
    }
    if (extra & 2)   /* a field nobody knows, or a second payload_bytes */
        n += snprintf(hdr + n, sizeof hdr - (size_t)n,
                      byte(s) & 1 ? ",\"payload_bytes\":0" : ",\"x\":[1,{}]");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "}");
    char head[GS_PROTO_LEN_BYTES + sizeof hdr];
    gs_proto_put_len((uint8_t *)head, (uint32_t)n);
    memcpy(head + GS_PROTO_LEN_BYTES, hdr, (size_t)n);
    put(c, head, GS_PROTO_LEN_BYTES + (size_t)n);
    /* the payload, maybe cut short (the declared size is what the daemon
     * waits for; what we send is up to the script) */
    if (payload > (2u << 20))
        payload = 2u << 20;
    if (extra & 4)
        payload = payload * byte(s) / 256;
    uint64_t buf[1024];
    while (payload && !c->wr_shut && !c->dead) {
        for (size_t i = 0; i < 1024; i++)
            buf[i] = rnd(s);
        size_t k = payload < sizeof buf ? (size_t)payload : sizeof buf;
        put(c, buf, k);
        payload -= k;
    }
}

static void op_raw(client *c, script *s)
{
    unsigned len = byte(s);
    size_t have = s->n - s->at < len ? s->n - s->at : len;
    put(c, s->p + s->at, have);
    s->at += have;
}

/* Wait until the daemon closes c (reading what it sends); 0 when it did. */
static int wait_closed(client *c, double limit)
{
    double t0 = gs_now_s();
    char buf[65536];
    while (gs_now_s() - t0 < limit) {
        struct pollfd pf = { .fd = c->fd, .events = POLLIN };
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return 0;
    }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_up)
        start_server();
    script s = { data, size, 0, 0x5eed };
    for (size_t i = 0; i < size && i < 8; i++)
        s.rng = s.rng * 131 + data[i];
    client c = { .fd = connect_to(), .last_memfd = -1, .t_end = gs_now_s() + SCRIPT_S };
    if (c.fd < 0)
        FAIL("cannot connect: %s", strerror(errno));
    int abrupt = 0;
    while (more(&s) && !abrupt) {
        switch (byte(&s) % 9) {
        case 0: op_raw(&c, &s); break;
        case 1: case 2: op_frame(&c, &s); break;
        case 3: op_fd(&c, &s); break;
        case 4:
            if (!c.wr_shut)
                shutdown(c.fd, SHUT_WR);
            c.wr_shut = 1;
            break;
        case 5: drain(&c, (size_t)byte(&s) * 64 + 1); break;
        case 6: {
            int ms = (int)(byte(&s) % 8);
            if (c.pause_ms + ms <= MAX_PAUSE_MS) {
                c.pause_ms += ms;
                usleep((useconds_t)ms * 1000);
            }
            break;
        }
        case 7: {
            unsigned k = byte(&s);
            c.chunk = k < 64 ? 0 : k < 192 ? 1 + k % 16 : (size_t)k * 64;
            break;
        }
        default:
            abrupt = byte(&s) % 4 == 0;
            break;
        }
    }
    drop_fds(&c);
    if (!abrupt) {
        /* a half-close: the daemon answers what it has and closes */
        shutdown(c.fd, SHUT_WR);
        if (wait_closed(&c, CLOSE_S) < 0)
            FAIL("the daemon kept a half-closed connection open for %.0f s", CLOSE_S);
    }
    close(c.fd);
    if (c.last_memfd >= 0)
        close(c.last_memfd);

    /* the daemon still serves */
    gs_client *pc = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_client_connect(&pc, g_sock, &e) < 0)
        FAIL("after the input the daemon does not accept: %s", e.msg);
    gs_client_set_timeout(pc, CLOSE_S);
    int rc = gs_client_call(pc, "ping", NULL, &e);
    gs_client_close(pc);
    if (rc != 0)
        FAIL("after the input the daemon does not answer a ping: %s %s", gs_strerror(rc), e.msg);
    return 0;
}
