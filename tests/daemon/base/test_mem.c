/* The daemon's memory and address space are bounded (issue 32, items 2
 * and 3; daemon/base/gs_mem.c, daemon/serve/gs_admit.c, daemon/serve/gs_blocks.c). First
 * without a daemon: the cgroup rule behind max_memory = auto, read from
 * fake /proc and /sys trees (cgroup v1 as on this machine, v2 nested and in
 * a container, limits of parents, mount roots and escapes, no limit at
 * all), the headroom, and the budget's count. Then against real daemons:
 * many stalled uploads of the largest size leave the daemon's VmRSS within
 * max_memory (each used to buffer its whole payload: 16 x 62 MiB took the
 * RSS from 74 to 1,067 MiB) while small sorts and pings are served, and the
 * waiting ones are admitted as memory is given back; a request that waited
 * memory_wait in vain is refused with GS_ETOOBIG and its connection serves
 * on; a request larger than the whole budget is refused at once, inline or
 * in a memfd; kept memfds count their whole size against
 * max_mapped_bytes_per_client and max_mapped_bytes, a file over the bound is
 * not kept and still sorted, and the bytes come back when a connection
 * closes; sparse 32 TiB memfds sent twice with 16-byte requests no longer
 * fill the address space, so another client's 64 MiB sort succeeds. One
 * user's stalled uploads hold at most max_memory_per_uid, so another
 * user's sorts are served beside them (before, one stalled upload of the
 * largest size held the whole budget). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_mem.h"
#include "gs_proto.h"
#include "gs_time.h"
#include "tap.h"

#define MIB (UINT64_C(1) << 20)

/* ---- the cgroup rule, on fake trees ---- */

static char g_fake[600];

static void put(const char *rel, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s%s", g_fake, rel);
    /* make the directories on the way */
    for (char *s = p + strlen(g_fake) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        tap_bail("cannot write %s", p);
}

/* A fresh fake root for one case. */
static void fake_root(const char *name)
{
    snprintf(g_fake, sizeof g_fake, "%s/fake-%s", dmn_tmpdir(), name);
    mkdir(g_fake, 0755);
}

/* The limit under g_fake must be `want`, and the file it came from end
 * with where_has (NULL: any). */
static void limit_is(const char *what, uint64_t want, const char *where_has)
{
    char where[512];
    uint64_t got = gs_mem_cgroup_limit(g_fake, where, sizeof where);
    size_t wl = strlen(where), hl = where_has ? strlen(where_has) : 0;
    tap_ok(got == want && (!where_has || (wl >= hl && !strcmp(where + wl - hl, where_has))),
           "cgroup limit, %s: %llu (want %llu; from '%s')", what, (unsigned long long)got,
           (unsigned long long)want, where);
}

#define V1_NONE "9223372036854771712\n"

static void test_cgroup_rule(void)
{
    /* v1, as on this machine: the memory controller alone in a hierarchy,
     * a v2 mount beside it without the controller. */
    fake_root("v1");
    put("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n");
    put("/proc/self/mountinfo",
        "25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
        "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
        "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:10 - cgroup cgroup rw,cpu\n"
        "32 25 0:28 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw\n");
    put("/sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NONE);
    put("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", V1_NONE);
    put("/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", "536870912\n");
    put("/sys/fs/cgroup/cpu/process_api/abc/memory.limit_in_bytes", "1048576\n");
    limit_is("v1, its own cgroup limited to 512 MiB", 512 * MIB,
             "cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/memory/process_api/abc");
    put("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "268435456\n");
    limit_is("v1, a parent limited to 256 MiB binds the child", 256 * MIB,
             "/sys/fs/cgroup/memory/process_api");
    put("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", V1_NONE);
    put("/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", V1_NONE);
    limit_is("v1, no limit anywhere (the kernel's 'unlimited')", GS_MEM_UNLIMITED, NULL);

    /* v2, nested: the tightest limit on the way up wins. */
    fake_root("v2");
    put("/proc/self/cgroup", "0::/a/b/c\n");
    put("/proc/self/mountinfo",
        "28 22 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n");
    put("/sys/fs/cgroup/a/memory.max", "1073741824\n");
    put("/sys/fs/cgroup/a/b/memory.max", "max\n");
    put("/sys/fs/cgroup/a/b/c/memory.max", "2147483648\n");
    limit_is("v2, a grandparent's 1 GiB below the cgroup's own 2 GiB", 1024 * MIB,
             "cgroup v2 memory.max of /sys/fs/cgroup/a");
    put("/sys/fs/cgroup/a/b/c/memory.max", "536870912\n");
    limit_is("v2, the cgroup's own 512 MiB", 512 * MIB, "/sys/fs/cgroup/a/b/c");
    put("/sys/fs/cgroup/a/memory.max", "max\n");
    put("/sys/fs/cgroup/a/b/c/memory.max", "max\n");
    limit_is("v2, max everywhere", GS_MEM_UNLIMITED, NULL);

    /* v2 in a container: its own cgroup namespace shows "/", the limit is
     * at the top of the mount. */
    fake_root("ctr");
    put("/proc/self/cgroup", "0::/\n");
    put("/proc/self/mountinfo",
        "600 590 0:30 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
    put("/sys/fs/cgroup/memory.max", "805306368\n");
    limit_is("v2 in a container: the mount's top", 768 * MIB, "memory.max of /sys/fs/cgroup");

    /* v1 seen through a mount whose root is the container's cgroup. */
    fake_root("dock");
    put("/proc/self/cgroup", "7:memory:/docker/xyz\n");
    put("/proc/self/mountinfo",
        "700 690 0:40 /docker/xyz /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup "
        "rw,memory\n");
    put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "1610612736\n");
    limit_is("v1 with the mount rooted at the process's cgroup", 1536 * MIB, NULL);

    /* A mount point with a blank (mountinfo writes it \040); no mountinfo
     * at all falls back to /sys/fs/cgroup. */
    fake_root("esc");
    put("/proc/self/cgroup", "0::/g\n");
    put("/proc/self/mountinfo", "40 1 0:50 / /my\\040cg rw - cgroup2 none rw\n");
    put("/my cg/g/memory.max", "314572800\n");
    limit_is("a mount point written with \\040", 300 * MIB, "/my cg/g");
    fake_root("nomnt");
    put("/proc/self/cgroup", "0::/s\n");
    put("/sys/fs/cgroup/s/memory.max", "209715200\n");
    limit_is("no mountinfo: /sys/fs/cgroup", 200 * MIB, NULL);

    /* Both hierarchies limited (a hybrid host): the smaller one. Bad
     * values are no limit. */
    fake_root("both");
    put("/proc/self/cgroup", "5:memory:/m\n0::/u\n");
    put("/proc/self/mountinfo",
        "30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "32 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    put("/sys/fs/cgroup/memory/m/memory.limit_in_bytes", "2147483648\n");
    put("/sys/fs/cgroup/unified/u/memory.max", "1073741824\n");
    limit_is("v1 2 GiB and v2 1 GiB: the smaller", 1024 * MIB,
             "cgroup v2 memory.max of /sys/fs/cgroup/unified/u");
    put("/sys/fs/cgroup/unified/u/memory.max", "lots\n");
    put("/sys/fs/cgroup/memory/m/memory.limit_in_bytes", "-1\n");
    limit_is("values that are not numbers are no limit", GS_MEM_UNLIMITED, NULL);

    fake_root("none");
    limit_is("no /proc/self/cgroup at all", GS_MEM_UNLIMITED, NULL);
    put("/proc/self/cgroup", "");
    limit_is("an empty /proc/self/cgroup", GS_MEM_UNLIMITED, NULL);

    /* The real machine: never above the RAM, and the source named. */
    char where[512];
    uint64_t real = gs_mem_limit(where, sizeof where);
    tap_ok(real > 0 && real <= gs_mem_phys() && where[0],
           "this machine: max_memory = auto starts from %llu bytes (%s)",
           (unsigned long long)real, where);

    /* The headroom: a quarter, at least 192 MiB or half a smaller limit. */
    tap_ok(gs_mem_auto(512 * MIB) == 320 * MIB && gs_mem_auto(100 * MIB) == 50 * MIB &&
               gs_mem_auto(24576 * MIB) == 18432 * MIB && gs_mem_auto(384 * MIB) == 192 * MIB &&
               gs_mem_auto(1024 * MIB) == 768 * MIB,
           "auto: 512M -> 320M, 100M -> 50M, 24G -> 18G, 384M -> 192M, 1G -> 768M");
}

static void test_count(void)
{
    gs_mem m = { 0 };
    atomic_store(&m.cap, 100);
    int a = gs_mem_take(&m, 60, 0), b = gs_mem_take(&m, 50, 0), c = gs_mem_take(&m, 40, 0);
    tap_ok(a && !b && c && atomic_load(&m.used) == 100, "count: 60 + 40 fit in 100, 50 more "
           "does not (used %llu)", (unsigned long long)atomic_load(&m.used));
    gs_mem_give(&m, 60);
    int d = gs_mem_take(&m, 50, 11), e = gs_mem_take(&m, 50, 10), f = gs_mem_take(&m, 101, 0);
    tap_ok(!d && e && !f && atomic_load(&m.used) == 90 && atomic_load(&m.peak) == 100,
           "count: cached bytes count as used; more than the cap never fits; peak 100");
}

/* ---- raw clients ---- */

static int raw_connect(const dmn *d)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s", d->sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        tap_bail("connect %s: %s", d->sock, strerror(errno));
    return fd;
}

/* Send up to len bytes, giving up after `idle` s in which none could go. */
static size_t send_some(int fd, const void *buf, size_t len, double idle)
{
    size_t sent = 0;
    while (sent < len) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, (int)(idle * 1000)) <= 0)
            break;
        ssize_t r = send(fd, (const char *)buf + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            break;
        sent += (size_t)r;
    }
    return sent;
}

/* Send each fds[i] the bytes of buf from sent[i] up to len, all at once
 * without blocking, until none has taken anything for a second. */
static void upload_all(const int *fds, size_t *sent, int n, const void *buf, size_t len)
{
    double idle_since = gs_now_s();
    while (gs_now_s() - idle_since < 1.0 * dmn_slowdown()) {
        int moved = 0;
        for (int i = 0; i < n; i++) {
            if (sent[i] >= len)
                continue;
            ssize_t r = send(fds[i], (const char *)buf + sent[i], len - sent[i],
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (r > 0) {
                sent[i] += (size_t)r;
                moved = 1;
            }
        }
        if (moved)
            idle_since = gs_now_s();
        else
            dmn_sleep(0.02);
    }
}

static void send_header(int fd, const char *json)
{
    uint8_t l4[4];
    gs_proto_put_len(l4, (uint32_t)strlen(json));
    if (send_some(fd, l4, 4, 5) != 4 || send_some(fd, json, strlen(json), 5) != strlen(json))
        tap_bail("cannot send a header");
}

static int read_full(int fd, void *buf, size_t len, double timeout)
{
    size_t got = 0;
    double t0 = gs_now_s();
    while (got < len) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        double left = timeout - (gs_now_s() - t0);
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            return -1;
        ssize_t r = recv(fd, (char *)buf + got, len - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* One reply: its header (NULL on failure), its payload into buf (up to cap;
 * the rest read and dropped). */
static cJSON *read_reply(int fd, void *buf, size_t cap, double timeout)
{
    uint8_t l4[4];
    if (read_full(fd, l4, 4, timeout) < 0)
        return NULL;
    uint32_t hl = gs_proto_get_len(l4);
    char *h = hl < (1u << 24) ? malloc(hl + 1) : NULL;
    if (!h || read_full(fd, h, hl, timeout) < 0) {
        free(h);
        return NULL;
    }
    h[hl] = '\0';
    cJSON *j = cJSON_Parse(h);
    free(h);
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(j, "payload_bytes");
    size_t n = cJSON_IsNumber(pb) ? (size_t)pb->valuedouble : 0;
    char sink[65536];
    for (size_t off = 0; off < n;) {
        size_t k = n - off;
        char *dst = off < cap ? (char *)buf + off : sink;
        if (off < cap && k > cap - off)
            k = cap - off;
        if (off >= cap && k > sizeof sink)
            k = sizeof sink;
        if (read_full(fd, dst, k, timeout) < 0) {
            cJSON_Delete(j);
            return NULL;
        }
        off += k;
    }
    return j;
}

static const char *err_code(const cJSON *h)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, "error");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    return cJSON_IsString(c) ? c->valuestring : "";
}

static const char *err_msg(const cJSON *h)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, "error");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "message");
    return cJSON_IsString(c) ? c->valuestring : "";
}

static long rss_kib(pid_t pid)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            v = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static int ping_ok(const dmn *d)
{
    gs_client *c = NULL;
    gs_err err;
    cJSON *r = NULL;
    int ok = gs_client_connect(&c, d->sock, &err) == 0 && gs_client_call(c, "ping", &r, &err) == 0;
    cJSON_Delete(r);
    gs_client_close(c);
    return ok;
}

/* An inline u32 sort of n keys (n - i: descending) through the client:
 * 0 and sorted, or the error code with err. */
static int small_sort(const dmn *d, size_t n, gs_err *err)
{
    gs_client *c = NULL;
    uint32_t *k = malloc(n * sizeof *k);
    int rc = k ? gs_client_connect(&c, d->sock, err) : GS_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        k[i] = (uint32_t)(n - i);
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = n, .keys = k, .device = -1,
                         .algorithm = "host" };
    if (!rc)
        rc = gs_client_sort_run(c, &s, NULL, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (k[i] != i + 1)
            rc = gs_err_set(err, GS_EWRONG, "key %zu is %u", i, k[i]);
    free(k);
    gs_client_close(c);
    return rc;
}

/* Whether buf holds 1..n (as u32) in order. */
static int ascending(const uint32_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != i + 1)
            return 0;
    return 1;
}

/* The keys n..1 (u32) of an inline host sort, and its header in hdr. */
static uint32_t *inline_request(size_t n, char *hdr, size_t hlen)
{
    uint32_t *keys = malloc(n * 4);
    if (!keys)
        tap_bail("out of memory");
    for (size_t i = 0; i < n; i++)
        keys[i] = (uint32_t)(n - i);
    snprintf(hdr, hlen, "{\"v\":1,\"op\":\"sort\",\"id\":1,\"dtype\":\"u32\",\"n\":%zu,"
             "\"payload_bytes\":%zu,\"algorithm\":\"host\"}", n, n * 4);
    return keys;
}

/* ---- stalled uploads ---- */

#define STALL_CONNS 24
#define STALL_N ((size_t)8 << 20)           /* u32 keys: 32 MiB, claiming 64 MiB */

static void test_stalled(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_memory=160M", "-o",
                                  "max_request_bytes=32M", "-o", "memory_wait=60s", "-o",
                                  "io_timeout=120", "-o", "max_clients=64", NULL };
    if (dmn_start(&d, "stall", NULL, extra)) {
        tap_ok(0, "daemon with max_memory = 160M starts");
        return;
    }
    size_t bytes = STALL_N * 4;
    char hdr[256];
    uint32_t *keys = inline_request(STALL_N, hdr, sizeof hdr), *out = malloc(bytes);
    if (!out)
        tap_bail("out of memory");
    long rss0 = rss_kib(d.pid);
    int fds[STALL_CONNS];
    size_t sent[STALL_CONNS] = { 0 };
    /* Each sends its header and all but the last MiB of its payload, as
     * much as the daemon takes, all at once; then they stall. */
    for (int i = 0; i < STALL_CONNS; i++) {
        fds[i] = raw_connect(&d);
        send_header(fds[i], hdr);
    }
    upload_all(fds, sent, STALL_CONNS, keys, bytes - MIB);
    int full = 0;
    for (int i = 0; i < STALL_CONNS; i++)
        full += sent[i] == bytes - MIB;
    double waiting = dmn_wait_stat(&d, "memory", "waiting", STALL_CONNS - 2, 0, 10);
    long rss1 = rss_kib(d.pid);
    double used = dmn_stat(&d, "memory", "used");
    tap_diag("daemon VmRSS %ld KiB before, %ld KiB with %d uploads of 32 MiB stalled (%d of "
             "them nearly whole); memory.used %.0f, waiting %.0f", rss0, rss1, STALL_CONNS,
             full, used, waiting);
    tap_ok(rss0 > 0 && rss1 > 0 && rss1 - rss0 <= 160 * 1024,
           "%d stalled 32 MiB uploads: the daemon's RSS grew %ld KiB, within max_memory = 160M "
           "(it used to buffer every one: ~%d MiB)", STALL_CONNS, rss1 - rss0, STALL_CONNS * 31);
    tap_ok(full == 2 && used == 128.0 * MIB && waiting == STALL_CONNS - 2,
           "two uploads (64 MiB each, payload and scratch) are admitted, %d wait unread "
           "(admitted %d, used %.0f, waiting %.0f)", STALL_CONNS - 2, full, used, waiting);
    gs_err err;
    int rc = small_sort(&d, 100000, &err);
    tap_ok(rc == 0 && ping_ok(&d), "meanwhile another client's 400 KB sort and a ping are "
           "served (%s)", rc ? err.msg : "ok");

    /* The admitted two finish: sorted; their memory admits two waiting. */
    int done = 0;
    for (int i = 0; i < STALL_CONNS; i++) {
        if (sent[i] != bytes - MIB)
            continue;
        if (send_some(fds[i], (char *)keys + sent[i], bytes - sent[i], 10) != bytes - sent[i])
            continue;
        sent[i] = bytes;
        memset(out, 0, bytes);
        cJSON *r = read_reply(fds[i], out, bytes, 60);
        done += r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
                ascending(out, STALL_N);
        cJSON_Delete(r);
    }
    double w2 = dmn_wait_stat(&d, "memory", "waiting", STALL_CONNS - 4, 0, 10);
    tap_ok(done == 2 && w2 == STALL_CONNS - 4, "the two finish sorted (%d) and two waiting "
           "uploads are admitted in their place (waiting %.0f)", done, w2);
    /* Those two are read to the end and answered; the others still wait. */
    int answered[STALL_CONNS];
    for (int i = 0; i < STALL_CONNS; i++)
        answered[i] = sent[i] == bytes;
    upload_all(fds, sent, STALL_CONNS, keys, bytes);
    int more = 0, whole = 0;
    for (int i = 0; i < STALL_CONNS; i++) {
        if (answered[i] || sent[i] != bytes)
            continue;
        whole++;
        cJSON *r = read_reply(fds[i], out, bytes, 60);
        more += r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
                ascending(out, STALL_N);
        cJSON_Delete(r);
    }
    long rss2 = rss_kib(d.pid);
    tap_ok(more == 2 && whole == 2 && rss2 - rss0 <= 160 * 1024,
           "the two uploads that waited are read and sorted (%d of %d); RSS still within "
           "max_memory (+%ld KiB)", more, whole, rss2 - rss0);
    double waited = dmn_stat(&d, "memory", "waited"), peak = dmn_stat(&d, "memory", "peak");
    tap_ok(waited >= STALL_CONNS - 2 && peak <= 160.0 * MIB, "stats: %.0f requests waited; "
           "the peak charge %.0f is within max_memory", waited, peak);
    for (int i = 0; i < STALL_CONNS; i++)
        close(fds[i]);
    double u = dmn_wait_stat(&d, "memory", "used", 0, 0, 10);
    double wt = dmn_stat(&d, "memory", "waiting");
    tap_ok(u == 0 && wt == 0, "the clients gone, nothing is charged or waiting (used %.0f, "
           "waiting %.0f)", u, wt);
    free(keys);
    free(out);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "stall daemon: SIGTERM -> exit %d", st);
}

/* ---- one user's share ---- */

/* As uid `uid` with group 65534 (a child; root only; the daemon's socket
 * is in that group), an inline sort of n keys: the child's exit status is
 * 0 when it was sorted, 3 when refused, 4 when it could not become uid. */
static int sort_as(const dmn *d, unsigned uid, size_t n)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork: %s", strerror(errno));
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(uid) < 0)
            _exit(4);
        gs_err err;
        _exit(small_sort(d, n, &err) == 0 ? 0 : 3);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#define SHARE_CONNS 2
#define SHARE_N ((size_t)4 << 20)           /* u32 keys: 16 MiB, claiming 32 MiB */

static void test_uid_share(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_memory=160M", "-o",
                                  "max_memory_per_uid=64M", "-o", "memory_wait=1s", "-o",
                                  "socket_group=65534", NULL };
    /* this test's own uid (root, or the daemon's) is held to the share too */
    setenv("GSORTD_TEST_UID_CAP_ALL", "1", 1);
    int started = dmn_start(&d, "share", NULL, extra) == 0;
    unsetenv("GSORTD_TEST_UID_CAP_ALL");
    if (!started) {
        tap_ok(0, "daemon with max_memory = 160M, max_memory_per_uid = 64M starts");
        return;
    }
    size_t bytes = SHARE_N * 4;
    char hdr[256];
    uint32_t *keys = inline_request(SHARE_N, hdr, sizeof hdr), *out = malloc(bytes);
    if (!out)
        tap_bail("out of memory");
    int fds[SHARE_CONNS];
    size_t sent[SHARE_CONNS] = { 0 };
    for (int i = 0; i < SHARE_CONNS; i++) {
        fds[i] = raw_connect(&d);
        send_header(fds[i], hdr);
    }
    upload_all(fds, sent, SHARE_CONNS, keys, bytes - MIB);
    int full = 0;
    for (int i = 0; i < SHARE_CONNS; i++)
        full += sent[i] == bytes - MIB;
    double used = dmn_stat(&d, "memory", "used");
    tap_ok(full == 2 && used == 64.0 * MIB,
           "one uid's two stalled 16 MiB uploads (32 MiB each) are admitted: its 64 MiB share "
           "of max_memory = 160M (admitted %d, used %.0f)", full, used);
    if (getuid() == 0 && chmod(dmn_tmpdir(), 0711) == 0) {
        int st = sort_as(&d, 12345, 1u << 20);
        tap_ok(st == 0, "meanwhile uid 12345's 4 MiB sort is served at once (child status %d)",
               st);
    } else {
        tap_diag("not root: the second uid is not checked");
    }
    /* one more from this uid waits memory_wait in vain, though 96 MiB of
     * max_memory are free, and is refused naming the share */
    int fd = raw_connect(&d);
    double t1 = gs_now_ms();
    send_header(fd, hdr);
    send_some(fd, keys, bytes, 10);     /* skipped once refused: then the reply */
    cJSON *r = read_reply(fd, out, bytes, 20);
    double waited = (gs_now_ms() - t1) / 1000;
    tap_ok(r && !strcmp(err_code(r), "GS_ETOOBIG") && strstr(err_msg(r), "max_memory_per_uid") &&
               strstr(err_msg(r), "memory_wait") && waited >= 0.9,
           "this uid's third 16 MiB sort waits memory_wait (%.2f s) though max_memory has room, "
           "and is refused naming max_memory_per_uid: %s", waited, r ? err_msg(r) : "(no reply)");
    cJSON_Delete(r);
    close(fd);
    /* larger than the share: refused at once */
    fd = raw_connect(&d);
    char hdr3[256];
    snprintf(hdr3, sizeof hdr3, "{\"v\":1,\"op\":\"sort\",\"id\":3,\"dtype\":\"u32\","
             "\"n\":%u,\"payload_bytes\":%u,\"algorithm\":\"host\"}", 10u << 20, 40u << 20);
    double t0 = gs_now_ms();
    send_header(fd, hdr3);
    char *big = calloc(1, 40u << 20);
    if (!big)
        tap_bail("out of memory");
    send_some(fd, big, 40u << 20, 10);
    free(big);
    r = read_reply(fd, out, bytes, 20);
    double dt = (gs_now_ms() - t0) / 1000;
    tap_ok(r && !strcmp(err_code(r), "GS_ETOOBIG") && strstr(err_msg(r), "max_memory_per_uid") &&
               dt < 1.5,
           "a sort claiming 80 MiB, above the uid's share, is refused at once (%.2f s): %s", dt,
           r ? err_msg(r) : "(no reply)");
    cJSON_Delete(r);
    close(fd);
    for (int i = 0; i < SHARE_CONNS; i++)
        close(fds[i]);
    double u = dmn_wait_stat(&d, "memory", "used", 0, 0, 10);
    tap_ok(u == 0, "the clients gone, nothing is charged (used %.0f)", u);
    free(keys);
    free(out);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "share daemon: SIGTERM -> exit %d", st);
}

/* ---- waiting in vain, too big at once ---- */

/* A sealed memfd of `size` bytes (sparse) with n u32 keys n..1 at 0. */
static int memfd_keys(uint64_t size, size_t n)
{
    int fd = memfd_create("gstest", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
        tap_bail("memfd of %llu bytes: %s", (unsigned long long)size, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(n - i);
        if (pwrite(fd, &k, 4, (off_t)(i * 4)) != 4)
            tap_bail("pwrite: %s", strerror(errno));
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
        tap_bail("seal: %s", strerror(errno));
    return fd;
}

/* Send a sort of the n keys at the start of memfd fd on connection c: 0,
 * or the error's code with its message in why. */
static int memfd_send(gs_client *c, int fd, size_t n, char *why, size_t wlen)
{
    char t[256];
    snprintf(t, sizeof t, "{\"v\":1,\"op\":\"sort\",\"id\":7,\"dtype\":\"u32\",\"n\":%zu,"
             "\"memfd\":true,\"algorithm\":\"host\"}", n);
    cJSON *h = cJSON_Parse(t);
    gs_err err;
    int rc = gs_client_send(c, h, NULL, 0, fd, &err);
    cJSON_Delete(h);
    snprintf(why, wlen, "%.500s", rc ? err.msg : "");
    return rc;
}

/* Its reply: 0 and the keys sorted, or the error's code with its message
 * in why. */
static int memfd_recv(gs_client *c, int fd, size_t n, char *why, size_t wlen)
{
    cJSON *r = NULL;
    gs_err err;
    uint64_t got;
    int rc = gs_client_recv(c, &r, NULL, 0, &got, &err);
    snprintf(why, wlen, "%.500s", rc ? err.msg : "");
    if (!rc && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
        rc = GS_EIO;
        for (int k = -1; k >= GS_ECODE_MIN; k--)
            if (!strcmp(gs_strerror(k), err_code(r)))
                rc = k;
        snprintf(why, wlen, "%s: %s", err_code(r), err_msg(r));
    }
    cJSON_Delete(r);
    for (size_t i = 0; !rc && i < n && i < 64; i++) {
        uint32_t k;
        if (pread(fd, &k, 4, (off_t)(i * 4)) != 4 || k != i + 1) {
            snprintf(why, wlen, "key %zu is %u after the sort", i, k);
            rc = GS_EWRONG;
        }
    }
    return rc;
}

static int memfd_sort(gs_client *c, int fd, size_t n, char *why, size_t wlen)
{
    int rc = memfd_send(c, fd, n, why, wlen);
    return rc ? rc : memfd_recv(c, fd, n, why, wlen);
}

static void test_wait_refuse(void)
{
    static dmn d;
    char conf[512];
    snprintf(conf, sizeof conf, "%s/wait.conf", dmn_tmpdir());
    if (dmn_write_file(conf, "memory_wait = 1s\nlog_level = info\n"))
        tap_bail("cannot write %s", conf);
    const char *const extra[] = { "--config", conf, "-o", "devices=none", "-o", "max_memory=64M",
                                  "-o", "max_request_bytes=1G", NULL };
    if (dmn_start(&d, "wait", NULL, extra)) {
        tap_ok(0, "daemon with max_memory = 64M, memory_wait = 1s starts");
        return;
    }
    size_t n = (size_t)6 << 20, bytes = n * 4;      /* 24 MiB: claims 48 MiB */
    char hdr[256];
    uint32_t *keys = inline_request(n, hdr, sizeof hdr), *out = malloc(bytes);
    if (!out)
        tap_bail("out of memory");
    int a = raw_connect(&d), b = raw_connect(&d);
    send_header(a, hdr);
    size_t sa = send_some(a, keys, bytes - 4096, 2);
    send_header(b, hdr);
    double w = dmn_wait_stat(&d, "memory", "waiting", 1, 0, 5);
    double t0 = gs_now_s();
    double w1 = dmn_wait_stat(&d, "memory", "refused", 1, 0, 10);
    double dt = gs_now_s() - t0;
    tap_ok(sa == bytes - 4096 && w == 1 && w1 == 1 && dt >= 0.5,
           "a second 48 MiB claim beside one of 48 in 64M waits (waiting %.0f), then is "
           "refused after memory_wait = 1 s (refused %.0f after %.2f s more)", w, w1, dt);
    size_t sb = send_some(b, keys, bytes, 10);      /* the daemon skips it */
    cJSON *r = sb == bytes ? read_reply(b, NULL, 0, 20) : NULL;
    tap_ok(r && !strcmp(err_code(r), "GS_ETOOBIG") && strstr(err_msg(r), "memory_wait") &&
               strstr(err_msg(r), "max_memory"),
           "its client is told: %s %s", r ? err_code(r) : "(no reply)", r ? err_msg(r) : "");
    cJSON_Delete(r);
    const char *ping = "{\"v\":1,\"op\":\"ping\",\"id\":3}";
    send_header(b, ping);
    r = read_reply(b, NULL, 0, 10);
    tap_ok(r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")),
           "and its connection serves on (a ping)");
    cJSON_Delete(r);

    /* Waiting, then admitted when the first is done: with a wait that a
     * loaded machine cannot run out before the first request is answered
     * (memory_wait changes on a reload). */
    if (dmn_write_file(conf, "memory_wait = 120s\nlog_level = info\n"))
        tap_bail("cannot rewrite %s", conf);
    kill(d.pid, SIGHUP);
    dmn_wait_log(&d, "configuration and tuning database reloaded", 1, 10);
    send_header(b, hdr);
    double w2 = dmn_wait_stat(&d, "memory", "waiting", 1, 0, 5);
    size_t rest = send_some(a, (char *)keys + sa, bytes - sa, 5);
    r = read_reply(a, out, bytes, 60);
    int a_ok = rest == bytes - sa && r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
               ascending(out, n);
    cJSON_Delete(r);
    sb = send_some(b, keys, bytes, 10);
    memset(out, 0, bytes);
    r = sb == bytes ? read_reply(b, out, bytes, 60) : NULL;
    tap_ok(w2 == 1 && a_ok && r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
               ascending(out, n),
           "a request waiting for memory is admitted once the request holding it is answered, "
           "and sorted (waited %.0f; first %s)", w2, a_ok ? "sorted" : "FAILED");
    cJSON_Delete(r);

    /* The same for a memfd request, which has no payload to read on. */
    send_header(b, hdr);
    sa = send_some(b, keys, bytes - 4096, 2);
    gs_client *m = NULL;
    gs_err merr;
    if (gs_client_connect(&m, d.sock, &merr))
        tap_bail("connect: %s", merr.msg);
    char mwhy[600];
    int mfd = memfd_keys(n * 4, n);
    int mrc0 = memfd_send(m, mfd, n, mwhy, sizeof mwhy);
    w2 = dmn_wait_stat(&d, "memory", "waiting", 1, 0, 5);
    rest = send_some(b, (char *)keys + sa, bytes - sa, 5);
    r = read_reply(b, out, bytes, 60);
    cJSON_Delete(r);
    mrc0 = mrc0 ? mrc0 : memfd_recv(m, mfd, n, mwhy, sizeof mwhy);
    tap_ok(w2 == 1 && mrc0 == 0, "a memfd sort waiting for memory is admitted and sorted as "
           "well (waited %.0f; %s)", w2, mrc0 ? mwhy : "sorted");
    close(mfd);
    gs_client_close(m);
    close(a);
    close(b);

    /* Larger than the whole budget: refused at once, inline and in a memfd. */
    gs_client *c = NULL;
    gs_err err;
    if (gs_client_connect(&c, d.sock, &err))
        tap_bail("connect: %s", err.msg);
    size_t nb = (size_t)10 << 20;                     /* 40 MiB: claims 80 MiB */
    uint32_t *big = calloc(nb, 4);
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = nb, .keys = big, .device = -1,
                         .algorithm = "host" };
    double rf0 = dmn_stat(&d, "memory", "refused"), wd0 = dmn_stat(&d, "memory", "waited");
    t0 = gs_now_s();
    int rc = big ? gs_client_sort_run(c, &s, NULL, &err) : GS_ENOMEM;
    dt = gs_now_s() - t0;
    tap_ok(rc == GS_ETOOBIG && strstr(err.msg, "max_memory is 67108864") &&
               strstr(err.msg, "83886080 bytes"),
           "a 40 MiB inline sort (80 MiB with its scratch) over max_memory = 64M: %s '%s'",
           gs_strerror(rc), err.msg);
    char why[600];
    int fd = memfd_keys(40 * MIB, 0);
    int mrc = memfd_sort(c, fd, nb, why, sizeof why);
    close(fd);
    double rf1 = dmn_stat(&d, "memory", "refused"), wd1 = dmn_stat(&d, "memory", "waited");
    tap_ok(mrc == GS_ETOOBIG && strstr(why, "max_memory") && rf1 == rf0 + 2 && wd1 == wd0,
           "the same in a memfd: %s; both refused without waiting (refused +%.0f, waited +%.0f, "
           "%.2f s)", why, rf1 - rf0, wd1 - wd0, dt);
    fd = memfd_keys(8 * MIB, 1000);
    mrc = memfd_sort(c, fd, 1000, why, sizeof why);
    close(fd);
    tap_ok(mrc == 0, "the connection serves on: a memfd sort within the budget (%s)",
           mrc ? why : "sorted");
    gs_client_close(c);
    free(big);
    free(keys);
    free(out);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "wait daemon: SIGTERM -> exit %d", st);
}

/* ---- kept memfds and the mapped-bytes bounds ---- */

static void test_kept_bounds(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", "-o", "max_mapped_bytes=96M", "-o",
                                  "max_mapped_bytes_per_client=64M", NULL };
    if (dmn_start(&d, "kept", NULL, extra)) {
        tap_ok(0, "daemon with max_mapped_bytes = 96M, per client 64M starts");
        return;
    }
    gs_client *a = NULL, *b = NULL, *c = NULL;
    gs_err err;
    if (gs_client_connect(&a, d.sock, &err) || gs_client_connect(&b, d.sock, &err) ||
        gs_client_connect(&c, d.sock, &err))
        tap_bail("connect: %s", err.msg);
    char why[600];
    int fa = memfd_keys(48 * MIB, 100), fa2 = memfd_keys(48 * MIB, 100);
    int fb = memfd_keys(48 * MIB, 100), fc = memfd_keys(48 * MIB, 100);
    int fbig = memfd_keys(65 * MIB, 100);
    int ok = 1;
    /* each file twice: the second time it is kept, if the bounds let it */
    for (int k = 0; k < 2; k++)
        ok &= !memfd_sort(a, fa, 100, why, sizeof why) && !memfd_sort(b, fb, 100, why, sizeof why);
    double kept = dmn_stat(&d, "blocks", "kept_bytes");
    tap_ok(ok && kept == 96.0 * MIB, "two clients keep a 48 MiB memfd each: kept_bytes %.0f "
           "(%s)", kept, ok ? "sorted" : why);
    double nk0 = dmn_stat(&d, "blocks", "not_kept");
    ok = 1;
    for (int k = 0; k < 3; k++)
        ok &= !memfd_sort(c, fc, 100, why, sizeof why);
    double nk1 = dmn_stat(&d, "blocks", "not_kept");
    kept = dmn_stat(&d, "blocks", "kept_bytes");
    tap_ok(ok && kept == 96.0 * MIB && nk1 == nk0 + 2,
           "a third client's 48 MiB memfd does not fit max_mapped_bytes = 96M: not kept "
           "(not_kept +%.0f), its requests still sorted (%s); kept_bytes %.0f", nk1 - nk0,
           ok ? "sorted" : why, kept);
    ok = !memfd_sort(a, fbig, 100, why, sizeof why) && !memfd_sort(a, fbig, 100, why, sizeof why);
    double nk2 = dmn_stat(&d, "blocks", "not_kept");
    tap_ok(ok && nk2 == nk1 + 1 && dmn_stat(&d, "blocks", "kept_bytes") == 96.0 * MIB,
           "a 65 MiB memfd is over max_mapped_bytes_per_client = 64M: not kept, sorted (%s)",
           ok ? "sorted" : why);
    ok = !memfd_sort(a, fa2, 100, why, sizeof why) && !memfd_sort(a, fa2, 100, why, sizeof why);
    tap_ok(ok && dmn_stat(&d, "blocks", "kept_bytes") == 96.0 * MIB &&
               dmn_stat(&d, "blocks", "not_kept") == nk2,
           "a client's second 48 MiB file takes the room of its first (least recently used)");
    gs_client_close(b);
    double k2 = dmn_wait_stat(&d, "blocks", "kept_bytes", 48.0 * MIB, 0, 10);
    ok = !memfd_sort(c, fc, 100, why, sizeof why);
    double k3 = dmn_stat(&d, "blocks", "kept_bytes");
    tap_ok(k2 == 48.0 * MIB && ok && k3 == 96.0 * MIB,
           "a client gone gives its bytes back (%.0f), and the third client's file is kept now "
           "(%.0f)", k2, k3);
    tap_ok(dmn_stat(&d, "blocks", "max_mapped_bytes") == 96.0 * MIB &&
               dmn_stat(&d, "blocks", "max_mapped_bytes_per_client") == 64.0 * MIB,
           "stats: the bounds");
    gs_client_close(a);
    gs_client_close(c);
    close(fa);
    close(fa2);
    close(fb);
    close(fc);
    close(fbig);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "kept daemon: SIGTERM -> exit %d", st);
}

#define ATTACKERS 32

/* Sparse 32 TiB memfds, each sent twice with a 16-byte request, over
 * several connections (4 files each), halving the size whenever the daemon
 * runs out, down to 16 MiB:
 * without the bounds the kept mappings filled the address space and another
 * client's 64 MiB sort then failed with GS_ENOMEM. With the default bounds
 * (max_mapped_bytes auto) none of them is kept. */
static void test_sparse_attack(void)
{
    static dmn d;
    const char *const extra[] = { "-o", "devices=none", NULL };
    if (dmn_start(&d, "sparse", NULL, extra)) {
        tap_ok(0, "daemon with the default bounds starts");
        return;
    }
    uint64_t size = UINT64_C(32) << 40;
    int sorted = 0, failed = 0;
    gs_client *att[ATTACKERS] = { 0 };
    int files[ATTACKERS * 4];
    int nf = 0;
    char why[600] = "";
    for (int i = 0; i < ATTACKERS && size >= 16 * MIB; i++) {
        gs_err err;
        if (gs_client_connect(&att[i], d.sock, &err))
            tap_bail("connect: %s", err.msg);
        for (int f = 0; f < 4 && size >= 16 * MIB; f++) {
            int fd = memfd_keys(size, 4);
            files[nf++] = fd;
            for (int k = 0; k < 2; k++) {
                if (memfd_sort(att[i], fd, 4, why, sizeof why) == 0) {
                    sorted++;
                } else {
                    failed++;
                    size /= 2;
                    break;
                }
            }
        }
    }
    double kept = dmn_stat(&d, "blocks", "kept_bytes"), cap = dmn_stat(&d, "blocks",
                                                                     "max_mapped_bytes");
    tap_ok(failed == 0 && sorted == 2 * nf && kept >= 0 && kept <= cap,
           "%d sparse 32 TiB memfds sent twice: every 16-byte request sorted (%d, %d failed%s%s),"
           " kept_bytes %.0f within max_mapped_bytes %.0f", nf, sorted, failed,
           failed ? ": " : "", failed ? why : "", kept, cap);
    gs_err err;
    int rc = small_sort(&d, (size_t)16 << 20, &err);
    tap_ok(rc == 0, "another client's 64 MiB sort meanwhile: %s", rc ? err.msg : "sorted");
    tap_ok(dmn_stat(&d, "blocks", "not_kept") >= nf, "stats: not_kept %.0f",
           dmn_stat(&d, "blocks", "not_kept"));
    for (int i = 0; i < ATTACKERS; i++)
        gs_client_close(att[i]);
    for (int i = 0; i < nf; i++)
        close(files[i]);
    int st = dmn_stop(&d, SIGTERM, 20);
    tap_ok(st == 0, "sparse daemon: SIGTERM -> exit %d", st);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    dmn_init();
    test_cgroup_rule();
    test_count();
    test_stalled();
    test_uid_share();
    test_wait_refuse();
    test_kept_bounds();
    test_sparse_attack();
    return tap_done();
}
