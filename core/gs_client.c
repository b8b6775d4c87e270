/* The blocking gsortd client (gs_client.h): one Unix-socket connection,
 * requests framed with gs_proto, keys and values sent straight from the
 * caller's buffers with sendmsg (a memfd rides in the same sendmsg as the
 * frame head), reply headers read through the gs_proto reader and reply
 * payloads read straight into the caller's buffers once their declared size
 * has been checked against what the request asked for. Any protocol
 * surprise leaves the connection marked broken, so later calls fail at once
 * instead of reading from the middle of a message. */
#include "config.h"
#include "gs_client.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "gs_paths.h"
#include "gs_proto.h"
#include "gs_time.h"

/* Reply headers are small (info and stats are the largest); this only
 * bounds what a confused peer can make us allocate. Requests may be larger
 * so tests can send over-long headers to the daemon. */
#define CLIENT_MAX_REPLY_HEADER (4u << 20)
#define CLIENT_MAX_REQ_HEADER (64u << 20)
#define CLIENT_IOV_MAX 8

struct gs_client {
    int fd;
    double timeout_s;       /* 0: wait forever; else the longest wait without progress */
    int broken;             /* framing lost or peer closed: every later call fails */
    int peer_gone;          /* a send failed because the daemon closed: it may have said why */
    char broken_why[256];
    uint64_t next_id;
    gs_proto_rd rd;
    char path[GS_PATHS_SOCKET_MAX];
};

static int set_broken(gs_client *c, gs_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fail with the message, and mark the connection unusable. The first
 * cause is the one kept: what goes wrong afterwards (reading the error
 * reply a refused send may have left, say) follows from it. */
static int set_broken(gs_client *c, gs_err *err, int code, const char *fmt, ...)
{
    char msg[sizeof c->broken_why];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!c->broken) {
        memcpy(c->broken_why, msg, sizeof msg);
        c->broken = 1;
    }
    return gs_err_set(err, code, "%s", msg);
}

/* Mark the connection unusable for `why` unless it already is. */
static void note_broken(gs_client *c, const char *why)
{
    if (!c->broken) {
        snprintf(c->broken_why, sizeof c->broken_why, "%s", why);
        c->broken = 1;
    }
}

static int check_usable(const gs_client *c, gs_err *err)
{
    if (!c || c->fd < 0)
        return gs_err_set(err, GS_EINVAL, "gs_client: not connected");
    if (c->broken)
        return gs_err_set(err, GS_EIO, "gs_client: connection unusable after an earlier "
                          "failure (%s)", c->broken_why);
    return 0;
}

/* ---- connection ---- */

int gs_client_connect(gs_client **out, const char *path, gs_err *err)
{
    *out = NULL;
    char def[GS_PATHS_SOCKET_MAX];
    if (!path) {
        int rc = gs_paths_socket(def, sizeof def, err);
        if (rc)
            return rc;
        path = def;
    }
    struct sockaddr_un sa;
    if (gs_paths_sockaddr(&sa, path) < 0)
        return gs_err_set(err, GS_EINVAL, "socket path too long (%zu bytes, at most %zu): %s",
                          strlen(path), sizeof sa.sun_path - 1, path);

    gs_client *c = calloc(1, sizeof *c);
    if (!c)
        return gs_err_set(err, GS_ENOMEM, "out of memory for a client");
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        int e = errno;
        free(c);
        return gs_err_set(err, GS_EIO, "socket: %s", strerror(e));
    }
    int rc;
    do
        rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;
        close(c->fd);
        free(c);
        gs_err_set(err, GS_EIO, "cannot connect to gsortd at %s: %s", path, strerror(e));
        errno = e;  /* callers tell "nobody listens" from other failures by it */
        return GS_EIO;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    c->next_id = 1;
    gs_proto_rd_init(&c->rd, CLIENT_MAX_REPLY_HEADER);
    *out = c;
    return 0;
}

void gs_client_close(gs_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    gs_proto_rd_free(&c->rd);
    free(c);
}

int gs_client_stale(gs_client *c, char *why, size_t len)
{
    if (!c || c->fd < 0) {
        snprintf(why, len, "not connected");
        return 1;
    }
    if (!c->broken) {
        /* Between requests the daemon sends nothing: a readable socket is
         * one it closed (it stopped or restarted, or idle_timeout) or is
         * confused about. */
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        int r;
        do
            r = poll(&p, 1, 0);
        while (r < 0 && errno == EINTR);
        if (r == 0)
            return 0;
        char b;
        ssize_t n = r > 0 ? recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
        char msg[sizeof c->broken_why];
        if (n > 0)
            snprintf(msg, sizeof msg, "gsortd at %s sent bytes between requests", c->path);
        else
            snprintf(msg, sizeof msg, "gsortd at %s closed the connection between calls%s%s",
                     c->path, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        note_broken(c, msg);
    }
    snprintf(why, len, "%s", c->broken_why);
    return 1;
}

int gs_client_fd(const gs_client *c)
{
    return c ? c->fd : -1;
}

void gs_client_set_timeout(gs_client *c, double seconds)
{
    if (c)
        c->timeout_s = seconds > 0 && isfinite(seconds) ? seconds : 0;
}

/* Wait until the socket is ready for `events`, at most the timeout (none
 * set: return at once and let the blocking call wait). */
static int wait_ready(gs_client *c, short events, const char *what, gs_err *err)
{
    if (c->timeout_s <= 0)
        return 0;
    double t0 = gs_now_s();
    for (;;) {
        double left = c->timeout_s - (gs_now_s() - t0);
        if (left <= 0)
            break;
        struct pollfd p = { .fd = c->fd, .events = events };
        double ms = ceil(left * 1000.0);
        int r = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
        if (r > 0)
            return 0;   /* ready, or an error/hangup the next call reports */
        if (r < 0 && errno != EINTR)
            return set_broken(c, err, GS_EIO, "poll on the gsortd socket: %s", strerror(errno));
    }
    /* A half-sent request or half-read reply leaves the stream unusable. */
    return set_broken(c, err, GS_EIO, "timed out after %g s %s gsortd at %s", c->timeout_s,
                      what, c->path);
}

/* Drop `done` transferred bytes from the front of an iovec array, and any
 * empty entries, so the next call starts where this one stopped. */
static void iov_advance(struct iovec **iov, int *n, size_t done)
{
    while (*n > 0 && done >= (*iov)[0].iov_len) {
        done -= (*iov)[0].iov_len;
        (*iov)++;
        (*n)--;
    }
    if (*n > 0) {
        (*iov)[0].iov_base = (char *)(*iov)[0].iov_base + done;
        (*iov)[0].iov_len -= done;
    }
}

/* Send the whole of iov[0..n) with `fd` (if >= 0) as SCM_RIGHTS attached to
 * the first bytes. The iovec array is consumed. */
static int send_all(gs_client *c, struct iovec *iov, int n, int fd, gs_err *err)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    int first = 1;
    iov_advance(&iov, &n, 0);
    /* A descriptor needs at least one byte to travel with; a frame head is never empty. */
    while (n > 0) {
        int rc = wait_ready(c, POLLOUT, "sending to", err);
        if (rc)
            return rc;
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        if (first && fd >= 0) {
            memset(&ctl, 0, sizeof ctl);
            m.msg_control = ctl.buf;
            m.msg_controllen = sizeof ctl.buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        }
        ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | (c->timeout_s > 0 ? MSG_DONTWAIT : 0));
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            c->peer_gone = errno == EPIPE || errno == ECONNRESET;
            return set_broken(c, err, GS_EIO, "sending to gsortd at %s: %s", c->path,
                              strerror(errno));
        }
        first = 0;
        iov_advance(&iov, &n, (size_t)w);
    }
    if (first && fd >= 0)
        return gs_err_set(err, GS_EINVAL, "a descriptor needs a message to travel with");
    return 0;
}

/* Read into the iovecs until they are full. EOF is an error naming `what`. */
static int recv_all(gs_client *c, struct iovec *iov, int n, const char *what, gs_err *err)
{
    iov_advance(&iov, &n, 0);
    while (n > 0) {
        int rc = wait_ready(c, POLLIN, "waiting for", err);
        if (rc)
            return rc;
        ssize_t r = readv(c->fd, iov, n);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return set_broken(c, err, GS_EIO, "reading %s from gsortd at %s: %s", what, c->path,
                              strerror(errno));
        }
        if (r == 0)
            return set_broken(c, err, GS_EIO, "gsortd at %s closed the connection in the "
                              "middle of %s", c->path, what);
        iov_advance(&iov, &n, (size_t)r);
    }
    return 0;
}

/* Read and drop `bytes` of payload. */
static int drain(gs_client *c, uint64_t bytes, gs_err *err)
{
    char scratch[65536];
    while (bytes > 0) {
        size_t k = bytes < sizeof scratch ? (size_t)bytes : sizeof scratch;
        struct iovec v = { scratch, k };
        int rc = recv_all(c, &v, 1, "a reply payload", err);
        if (rc)
            return rc;
        bytes -= k;
    }
    return 0;
}

/* ---- frames ---- */

/* Send a frame head (and its descriptor) followed by payload iovecs. */
static int send_frame(gs_client *c, const cJSON *hdr, const struct iovec *pl, int npl, int fd,
                      gs_err *err)
{
    uint8_t *head = NULL;
    size_t hlen = 0;
    int rc = gs_proto_frame(hdr, CLIENT_MAX_REQ_HEADER, &head, &hlen, err);
    if (rc)
        return rc;
    struct iovec iov[CLIENT_IOV_MAX];
    iov[0].iov_base = head;
    iov[0].iov_len = hlen;
    int n = 1;
    for (int i = 0; i < npl && n < CLIENT_IOV_MAX; i++)
        iov[n++] = pl[i];
    rc = send_all(c, iov, n, fd, err);
    free(head);
    return rc;
}

/* Read one reply header through the gs_proto reader and parse it. The
 * payload (if any) is left unread: *payload_bytes says how long it is. */
static int recv_header(gs_client *c, cJSON **out, uint64_t *payload_bytes, gs_err *err)
{
    *out = NULL;
    *payload_bytes = 0;
    gs_proto_rd_reset(&c->rd);
    while (c->rd.state != GS_RD_HEADER_DONE) {
        void *buf;
        size_t len;
        int rc = gs_proto_rd_space(&c->rd, &buf, &len, err);
        if (rc)
            return set_broken(c, err, rc, "reading a reply from gsortd: %s", err ? err->msg : "");
        if (len == 0)
            return set_broken(c, err, GS_ECORRUPT, "reply reader in an unexpected state %d",
                              c->rd.state);
        struct iovec v = { buf, len };
        /* Every reader state wants at least one byte: read what arrives. */
        rc = wait_ready(c, POLLIN, "waiting for a reply from", err);
        if (rc)
            return rc;
        ssize_t r = readv(c->fd, &v, 1);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return set_broken(c, err, GS_EIO, "reading a reply from gsortd at %s: %s", c->path,
                              strerror(errno));
        }
        if (r == 0)
            return set_broken(c, err, GS_EIO, "gsortd at %s closed the connection %s", c->path,
                              c->rd.state == GS_RD_LEN && c->rd.len_have == 0
                                  ? "without a reply" : "in the middle of a reply");
        rc = gs_proto_rd_commit(&c->rd, (size_t)r, err);
        if (rc)
            return set_broken(c, err, rc == GS_EINVAL ? GS_ECORRUPT : rc,
                              "bad reply frame from gsortd: %s", err ? err->msg : "");
    }
    size_t hl = 0;
    const char *text = gs_proto_rd_header(&c->rd, &hl);
    cJSON *h = cJSON_ParseWithLength(text, hl);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        return set_broken(c, err, GS_ECORRUPT, "reply header from gsortd is not a JSON object");
    }
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(h, "payload_bytes");
    if (pb) {
        double d = cJSON_IsNumber(pb) ? pb->valuedouble : -1;
        if (!(d >= 0 && d <= 9007199254740992.0 && d == floor(d))) {
            cJSON_Delete(h);
            return set_broken(c, err, GS_ECORRUPT, "reply payload_bytes is not a byte count");
        }
        *payload_bytes = (uint64_t)d;
    }
    /* The payload is read by the caller into its own buffers, not by the reader. */
    gs_proto_rd_reset(&c->rd);
    *out = h;
    return 0;
}

/* The code whose gs_strerror name is `name` (GS_EIO when none is). */
static int code_of_name(const char *name)
{
    if (name)
        for (int code = GS_ECODE_MIN; code < 0; code++)
            if (strcmp(gs_strerror(code), name) == 0)
                return code;
    return GS_EIO;
}

/* A reply with "ok":false: its code and message. Also notes "close". */
static int reply_error(gs_client *c, const cJSON *h, gs_err *err)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(h, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    const char *m = cJSON_IsString(msg) ? msg->valuestring : "(no message)";
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "close"))) {
        char why[sizeof c->broken_why];
        snprintf(why, sizeof why, "gsortd closed the connection after: %s", m);
        note_broken(c, why);
    }
    return gs_err_set(err, code_of_name(cJSON_IsString(code) ? code->valuestring : NULL),
                      "gsortd: %s", m);
}

static int reply_ok(const cJSON *h)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "ok"));
}

/* A send failed because the daemon closed the connection: it usually
 * refused the request from its header (too big, too many clients) and
 * closed without reading the rest, leaving its error reply in our receive
 * queue. Report that reply's code instead of the broken pipe. */
static int refused_while_sending(gs_client *c, int rc, gs_err *err)
{
    if (!c->peer_gone)
        return rc;
    c->peer_gone = 0;
    gs_err tmp;
    gs_err_clear(&tmp);
    cJSON *h = NULL;
    uint64_t pb = 0;
    double saved = c->timeout_s;
    c->timeout_s = 1;   /* the reply is already here or never comes */
    int rr = recv_header(c, &h, &pb, &tmp);
    c->timeout_s = saved;
    if (rr == 0 && !reply_ok(h)) {
        /* The refusal is the cause; the broken pipe only followed from it. */
        c->broken = 0;
        rc = reply_error(c, h, err);
    }
    cJSON_Delete(h);
    note_broken(c, "gsortd closed the connection while a request was being sent");
    return rc;
}

/* ---- low level ---- */

int gs_client_send(gs_client *c, const cJSON *hdr, const void *payload, size_t len, int fd,
                   gs_err *err)
{
    int rc = check_usable(c, err);
    if (rc)
        return rc;
    struct iovec pl = { (void *)payload, payload ? len : 0 };
    return send_frame(c, hdr, &pl, 1, fd, err);
}

int gs_client_recv(gs_client *c, cJSON **hdr, void *buf, size_t cap, uint64_t *got,
                   gs_err *err)
{
    *hdr = NULL;
    if (got)
        *got = 0;
    int rc = check_usable(c, err);
    if (rc)
        return rc;
    uint64_t pb = 0;
    cJSON *h = NULL;
    rc = recv_header(c, &h, &pb, err);
    if (rc)
        return rc;
    if (got)
        *got = pb;
    uint64_t take = pb < cap ? pb : cap;
    struct iovec v = { buf, (size_t)take };
    rc = take ? recv_all(c, &v, 1, "a reply payload", err) : 0;
    if (!rc && pb > take) {
        rc = drain(c, pb - take, err);
        if (!rc)
            rc = gs_err_set(err, GS_ETOOBIG, "reply payload of %" PRIu64 " bytes exceeds the "
                            "%zu-byte buffer (dropped the rest)", pb, cap);
    }
    if (!reply_ok(h) && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "close")))
        note_broken(c, "gsortd closed the connection after an error reply");
    *hdr = h;
    return rc;
}

/* ---- ping / info / stats ---- */

int gs_client_call(gs_client *c, const char *op, cJSON **reply, gs_err *err)
{
    if (reply)
        *reply = NULL;
    int rc = check_usable(c, err);
    if (rc)
        return rc;
    cJSON *req = cJSON_CreateObject();
    uint64_t id = c->next_id++;
    if (!req || !cJSON_AddNumberToObject(req, "v", GS_PROTO_VERSION) ||
        !cJSON_AddStringToObject(req, "op", op ? op : "") ||
        !cJSON_AddNumberToObject(req, "id", (double)id)) {
        cJSON_Delete(req);
        return gs_err_set(err, GS_ENOMEM, "out of memory building a request");
    }
    rc = send_frame(c, req, NULL, 0, -1, err);
    cJSON_Delete(req);
    if (rc)
        return refused_while_sending(c, rc, err);
    cJSON *h = NULL;
    uint64_t pb = 0;
    rc = recv_header(c, &h, &pb, err);
    if (rc)
        return rc;
    if (pb) {
        /* ping/info/stats carry everything in the header. */
        rc = set_broken(c, err, GS_ECORRUPT, "reply to %s declares a %" PRIu64 "-byte payload",
                        op, pb);
    } else if (!reply_ok(h)) {
        rc = reply_error(c, h, err);
    } else {
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(h, "id");
        if (!cJSON_IsNumber(rid) || rid->valuedouble != (double)id)
            rc = set_broken(c, err, GS_ECORRUPT, "reply to %s does not echo the request id", op);
    }
    if (reply)
        *reply = h;
    else
        cJSON_Delete(h);
    return rc;
}

/* ---- shared memory ---- */

int gs_client_shm_alloc_named(gs_client_shm *shm, const char *name, size_t bytes,
                              gs_err *err)
{
    shm->fd = -1;
    shm->ptr = NULL;
    shm->size = 0;
    if (bytes > (size_t)INT64_MAX)
        return gs_err_set(err, GS_ETOOBIG, "a %zu-byte memfd is larger than a file can be",
                          bytes);
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return gs_err_set(err, GS_EIO, "memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)bytes) < 0) {
        int e = errno;
        close(fd);
        return gs_err_set(err, GS_ENOMEM, "sizing a %zu-byte memfd: %s", bytes, strerror(e));
    }
    void *p = NULL;
    /* An empty memfd (n = 0) has nothing to map. */
    if (bytes) {
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return gs_err_set(err, GS_ENOMEM, "mapping a %zu-byte memfd: %s", bytes, strerror(e));
        }
    }
    /* The daemon maps it too: a shrink under its feet would SIGBUS it, so
     * it refuses a memfd without F_SEAL_SHRINK. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
        int e = errno;
        if (p)
            munmap(p, bytes);
        close(fd);
        return gs_err_set(err, GS_EIO, "sealing the memfd: %s", strerror(e));
    }
    shm->fd = fd;
    shm->ptr = p;
    shm->size = bytes;
    return 0;
}

int gs_client_shm_alloc(gs_client_shm *shm, size_t bytes, gs_err *err)
{
    return gs_client_shm_alloc_named(shm, "gsort", bytes, err);
}

void gs_client_shm_free(gs_client_shm *shm)
{
    if (!shm)
        return;
    if (shm->ptr)
        munmap(shm->ptr, shm->size);
    if (shm->fd >= 0)
        close(shm->fd);
    shm->fd = -1;
    shm->ptr = NULL;
    shm->size = 0;
}

/* ---- sort ---- */

/* Offset of [p, p + bytes) inside the shm; -1 when it is not inside. A
 * NULL pointer is accepted only for an empty array (n = 0). */
static int shm_offset(const gs_client_shm *shm, const void *p, size_t bytes, uint64_t *off)
{
    if (!p) {
        *off = 0;
        return bytes == 0 ? 0 : -1;
    }
    uintptr_t base = (uintptr_t)shm->ptr, a = (uintptr_t)p;
    if (!shm->ptr || a < base || a - base > shm->size || bytes > shm->size - (a - base))
        return -1;
    *off = (uint64_t)(a - base);
    return 0;
}

static void copy_str(char *dst, size_t len, const cJSON *j)
{
    snprintf(dst, len, "%s", cJSON_IsString(j) ? j->valuestring : "");
}

static double num_or0(const cJSON *obj, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(j) ? j->valuedouble : 0;
}

/* The sort reply's description of how it was served. */
static void parse_result(const cJSON *h, gs_client_result *r)
{
    memset(r, 0, sizeof *r);
    r->device = -1;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(h, "device");
    if (cJSON_IsObject(dev)) {
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(dev, "index");
        if (cJSON_IsNumber(ix))
            r->device = ix->valueint;
        copy_str(r->device_name, sizeof r->device_name,
                 cJSON_GetObjectItemCaseSensitive(dev, "name"));
    }
    copy_str(r->algorithm, sizeof r->algorithm, cJSON_GetObjectItemCaseSensitive(h, "algorithm"));
    copy_str(r->plan, sizeof r->plan, cJSON_GetObjectItemCaseSensitive(h, "plan"));
    copy_str(r->fallback, sizeof r->fallback, cJSON_GetObjectItemCaseSensitive(h, "fallback"));
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(h, "params");
    size_t used = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, ps) {
        if (!p->string || !cJSON_IsNumber(p) || used >= sizeof r->params)
            continue;
        int w = snprintf(r->params + used, sizeof r->params - used, "%s%s=%.0f",
                         used ? "," : "", p->string, p->valuedouble);
        if (w < 0 || (size_t)w >= sizeof r->params - used) {
            r->params[used] = '\0';   /* drop a parameter that does not fit whole */
            break;
        }
        used += (size_t)w;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "times_ms");
    r->queue_ms = num_or0(t, "queue");
    r->receive_ms = num_or0(t, "receive");
    r->upload_ms = num_or0(t, "upload");
    r->sort_ms = num_or0(t, "sort");
    r->download_ms = num_or0(t, "download");
    r->total_ms = num_or0(t, "total");
}

int gs_client_sort_run(gs_client *c, const gs_client_sort *s, gs_client_result *res,
                       gs_err *err)
{
    int rc = check_usable(c, err);
    if (rc)
        return rc;
    if (!s || (int)s->dtype < 0 || s->dtype >= GS_DT_COUNT || (int)s->payload < 0 ||
        s->payload >= GS_PL_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: bad dtype or values kind");
    if (s->n > GS_PROTO_MAX_N)
        return gs_err_set(err, GS_ETOOBIG, "sort: n = %zu exceeds the protocol's %" PRIu64,
                          s->n, GS_PROTO_MAX_N);
    size_t ks = gs_dtype_size(s->dtype), vs = gs_payload_size(s->payload);
    if (s->n && (s->n > SIZE_MAX / ks || (vs && s->n > SIZE_MAX / vs)))
        return gs_err_set(err, GS_ETOOBIG, "sort: %zu elements overflow the address space", s->n);
    size_t kb = s->n * ks, vb = s->n * vs;
    if ((kb && !s->keys) || (vb && !s->values))
        return gs_err_set(err, GS_EINVAL, "sort: keys%s missing", vb ? " or values" : "");

    gs_proto_req rq;
    memset(&rq, 0, sizeof rq);
    rq.op = GS_OP_SORT;
    rq.dtype = s->dtype;
    rq.payload = s->payload;
    rq.descending = s->descending != 0;
    rq.stable = s->stable != 0;
    rq.n = s->n;
    rq.device = s->device;
    if (s->algorithm) {
        if (strlen(s->algorithm) >= sizeof rq.algorithm)
            return gs_err_set(err, GS_EINVAL, "sort: algorithm name '%s' too long",
                              s->algorithm);
        memcpy(rq.algorithm, s->algorithm, strlen(s->algorithm) + 1);
    }
    if (s->params) {
        rc = gs_params_parse(s->params, &rq.params, err);
        if (rc)
            return rc;
        rq.has_params = 1;
    }
    if (s->shm) {
        rq.memfd = 1;
        if (shm_offset(s->shm, s->keys, kb, &rq.keys_offset))
            return gs_err_set(err, GS_EINVAL, "sort: keys do not lie inside the shared memory");
        if (vb) {
            if (shm_offset(s->shm, s->values, vb, &rq.values_offset))
                return gs_err_set(err, GS_EINVAL,
                                  "sort: values do not lie inside the shared memory");
        } else {
            rq.values_offset = rq.keys_offset + kb;
        }
    }
    uint64_t id = c->next_id++;
    rq.id = cJSON_CreateNumber((double)id);
    if (!rq.id)
        return gs_err_set(err, GS_ENOMEM, "out of memory building a request");
    gs_err herr;
    gs_err_clear(&herr);
    cJSON *hdr = gs_proto_sort_header(&rq, &herr);
    cJSON_Delete(rq.id);
    rq.id = NULL;
    if (!hdr)
        return gs_err_set(err, herr.code ? herr.code : GS_ENOMEM, "%s",
                          herr.code ? herr.msg : "out of memory building a request");

    /* Inline: keys, then values the daemon must permute (idx values are
     * produced by it, not sent). */
    struct iovec pl[2];
    int npl = 0;
    if (!s->shm) {
        pl[npl++] = (struct iovec){ s->keys, kb };
        if (s->payload == GS_PL_U32 || s->payload == GS_PL_U64)
            pl[npl++] = (struct iovec){ s->values, vb };
    }
    rc = send_frame(c, hdr, pl, npl, s->shm ? s->shm->fd : -1, err);
    cJSON_Delete(hdr);
    if (rc)
        return refused_while_sending(c, rc, err);

    cJSON *h = NULL;
    uint64_t pb = 0;
    rc = recv_header(c, &h, &pb, err);
    if (rc)
        return rc;
    if (!reply_ok(h)) {
        /* An error carries no payload; one that claims to leaves us lost. */
        rc = pb ? set_broken(c, err, GS_ECORRUPT, "error reply declares a %" PRIu64
                             "-byte payload", pb)
                : reply_error(c, h, err);
        cJSON_Delete(h);
        return rc;
    }
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(h, "id");
    if (!cJSON_IsNumber(rid) || rid->valuedouble != (double)id) {
        cJSON_Delete(h);
        return set_broken(c, err, GS_ECORRUPT, "sort reply does not echo the request id");
    }
    uint64_t want = s->shm ? 0 : rq.out_bytes;
    if (pb != want) {
        cJSON_Delete(h);
        return set_broken(c, err, GS_EWRONG, "sort reply declares %" PRIu64 " payload bytes, "
                          "the request expects %" PRIu64, pb, want);
    }
    if (pb) {
        struct iovec in[2] = { { s->keys, kb }, { s->values, vb } };
        rc = recv_all(c, in, vb ? 2 : 1, "a sort reply payload", err);
        if (rc) {
            cJSON_Delete(h);
            return rc;
        }
    }
    if (res)
        parse_result(h, res);
    cJSON_Delete(h);
    return 0;
}
