/* The blocking gsortd client (gs_client.h): one Unix-socket connection,
 * requests framed with gs_proto, reply headers read through the gs_proto
 * reader and their heads checked with gs_reply, ping/info/stats, and the
 * raw frames the tests send. The sort and its shared memory are
 * gs_client_sort.c's. Any protocol surprise leaves the connection marked
 * broken, so later calls fail at once instead of reading from the middle
 * of a message. */
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
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "gs_client_int.h"
#include "gs_time.h"

int client_set_broken(gs_client *c, gs_err *err, int code, const char *fmt, ...)
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

void client_note_broken(gs_client *c, const char *why)
{
    if (!c->broken) {
        snprintf(c->broken_why, sizeof c->broken_why, "%s", why);
        c->broken = 1;
    }
}

int client_check_usable(const gs_client *c, gs_err *err)
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
        client_note_broken(c, msg);
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
            return client_set_broken(c, err, GS_EIO, "poll on the gsortd socket: %s",
                                     strerror(errno));
    }
    /* A half-sent request or half-read reply leaves the stream unusable. */
    return client_set_broken(c, err, GS_EIO, "timed out after %g s %s gsortd at %s",
                             c->timeout_s, what, c->path);
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
            return client_set_broken(c, err, GS_EIO, "sending to gsortd at %s: %s", c->path,
                                     strerror(errno));
        }
        first = 0;
        iov_advance(&iov, &n, (size_t)w);
    }
    if (first && fd >= 0)
        return gs_err_set(err, GS_EINVAL, "a descriptor needs a message to travel with");
    return 0;
}

int client_recv_all(gs_client *c, struct iovec *iov, int n, const char *what, gs_err *err)
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
            return client_set_broken(c, err, GS_EIO, "reading %s from gsortd at %s: %s", what,
                                     c->path, strerror(errno));
        }
        if (r == 0)
            return client_set_broken(c, err, GS_EIO, "gsortd at %s closed the connection in "
                                     "the middle of %s", c->path, what);
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
        int rc = client_recv_all(c, &v, 1, "a reply payload", err);
        if (rc)
            return rc;
        bytes -= k;
    }
    return 0;
}

/* ---- frames ---- */

int client_send_frame(gs_client *c, const cJSON *hdr, const struct iovec *pl, int npl, int fd,
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

/* Read one reply header through the gs_proto reader and check its head.
 * The header's text stays in the reader until the next reply, so parsers
 * can read its integers exactly (client_reply_doc); the payload is read by
 * the caller into its own buffers, not by the reader. */
int client_recv_header(gs_client *c, cJSON **out, gs_reply_head *head, gs_err *err)
{
    *out = NULL;
    memset(head, 0, sizeof *head);
    gs_proto_rd_reset(&c->rd);
    while (c->rd.state != GS_RD_HEADER_DONE) {
        void *buf;
        size_t len;
        int rc = gs_proto_rd_space(&c->rd, &buf, &len, err);
        if (rc)
            return client_set_broken(c, err, rc, "reading a reply from gsortd: %s",
                                     err ? err->msg : "");
        if (len == 0)
            return client_set_broken(c, err, GS_ECORRUPT, "reply reader in an unexpected "
                                     "state %d", c->rd.state);
        struct iovec v = { buf, len };
        /* Every reader state wants at least one byte: read what arrives. */
        rc = wait_ready(c, POLLIN, "waiting for a reply from", err);
        if (rc)
            return rc;
        ssize_t r = readv(c->fd, &v, 1);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return client_set_broken(c, err, GS_EIO, "reading a reply from gsortd at %s: %s",
                                     c->path, strerror(errno));
        }
        if (r == 0)
            return client_set_broken(c, err, GS_EIO, "gsortd at %s closed the connection %s",
                                     c->path, c->rd.state == GS_RD_LEN && c->rd.len_have == 0
                                                  ? "without a reply"
                                                  : "in the middle of a reply");
        rc = gs_proto_rd_commit(&c->rd, (size_t)r, err);
        if (rc)
            return client_set_broken(c, err, rc == GS_EINVAL ? GS_ECORRUPT : rc,
                                     "bad reply frame from gsortd: %s", err ? err->msg : "");
    }
    size_t hl = 0;
    const char *text = gs_proto_rd_header(&c->rd, &hl);
    cJSON *h = cJSON_ParseWithLength(text, hl);
    gs_jnum_doc doc = { text, hl, h };
    gs_err herr;
    gs_err_clear(&herr);
    int rc = gs_reply_head_parse(h, &doc, head, &herr);
    if (rc) {
        cJSON_Delete(h);
        return client_set_broken(c, err, rc, "%s", herr.msg);
    }
    *out = h;
    return 0;
}

gs_jnum_doc client_reply_doc(const gs_client *c, const cJSON *h)
{
    size_t hl = 0;
    const char *text = gs_proto_rd_header(&c->rd, &hl);
    return (gs_jnum_doc){ text, hl, h };
}

int client_reply_error(gs_client *c, const gs_reply_head *head, gs_err *err)
{
    if (head->close) {
        char why[sizeof c->broken_why];
        snprintf(why, sizeof why, "gsortd closed the connection after: %s", head->message);
        client_note_broken(c, why);
    }
    return gs_err_set(err, head->code, "gsortd: %s", head->message);
}

/* It usually refused the request from its header (too big, too many
 * clients) and closed without reading the rest. */
static int client_refused_while_sending(gs_client *c, int rc, gs_err *err)
{
    if (!c->peer_gone)
        return rc;
    c->peer_gone = 0;
    gs_err tmp;
    gs_err_clear(&tmp);
    cJSON *h = NULL;
    gs_reply_head head;
    double saved = c->timeout_s;
    c->timeout_s = 1;   /* the reply is already here or never comes */
    int rr = client_recv_header(c, &h, &head, &tmp);
    c->timeout_s = saved;
    if (rr == 0 && !head.ok) {
        /* The refusal is the cause; the broken pipe only followed from it. */
        c->broken = 0;
        rc = client_reply_error(c, &head, err);
    }
    cJSON_Delete(h);
    client_note_broken(c, "gsortd closed the connection while a request was being sent");
    return rc;
}

int client_exchange(gs_client *c, cJSON *hdr, const struct iovec *pl, int npl, int fd,
                    cJSON **out, gs_reply_head *head, gs_err *err)
{
    int rc = client_send_frame(c, hdr, pl, npl, fd, err);
    cJSON_Delete(hdr);
    if (rc)
        return client_refused_while_sending(c, rc, err);
    return client_recv_header(c, out, head, err);
}

/* ---- low level ---- */

int gs_client_send(gs_client *c, const cJSON *hdr, const void *payload, size_t len, int fd,
                   gs_err *err)
{
    int rc = client_check_usable(c, err);
    if (rc)
        return rc;
    struct iovec pl = { (void *)payload, payload ? len : 0 };
    return client_send_frame(c, hdr, &pl, 1, fd, err);
}

int gs_client_recv(gs_client *c, cJSON **hdr, void *buf, size_t cap, uint64_t *got,
                   gs_err *err)
{
    *hdr = NULL;
    if (got)
        *got = 0;
    int rc = client_check_usable(c, err);
    if (rc)
        return rc;
    cJSON *h = NULL;
    gs_reply_head head;
    rc = client_recv_header(c, &h, &head, err);
    if (rc)
        return rc;
    uint64_t pb = head.payload_bytes;
    if (got)
        *got = pb;
    uint64_t take = pb < cap ? pb : cap;
    struct iovec v = { buf, (size_t)take };
    rc = take ? client_recv_all(c, &v, 1, "a reply payload", err) : 0;
    if (!rc && pb > take) {
        rc = drain(c, pb - take, err);
        if (!rc)
            rc = gs_err_set(err, GS_ETOOBIG, "reply payload of %" PRIu64 " bytes exceeds the "
                            "%zu-byte buffer (dropped the rest)", pb, cap);
    }
    if (!head.ok && head.close)
        client_note_broken(c, "gsortd closed the connection after an error reply");
    *hdr = h;
    return rc;
}

/* ---- ping / info / stats ---- */

int gs_client_call(gs_client *c, const char *op, cJSON **reply, gs_err *err)
{
    if (reply)
        *reply = NULL;
    int rc = client_check_usable(c, err);
    if (rc)
        return rc;
    uint64_t id = c->next_id++;
    cJSON *idj = cJSON_CreateNumber((double)id);
    cJSON *req = idj ? gs_proto_op_header(op, idj, err) : NULL;
    cJSON_Delete(idj);
    if (!req)
        return gs_err_set(err, GS_ENOMEM, "out of memory building a request");
    cJSON *h = NULL;
    gs_reply_head head;
    if ((rc = client_exchange(c, req, NULL, 0, -1, &h, &head, err)) != 0)
        return rc;
    if (head.payload_bytes) {
        /* ping/info/stats carry everything in the header. */
        rc = client_set_broken(c, err, GS_ECORRUPT, "reply to %s declares a %" PRIu64
                               "-byte payload", op, head.payload_bytes);
    } else if (!head.ok) {
        rc = client_reply_error(c, &head, err);
    } else if (!cJSON_IsNumber(head.id) || head.id->valuedouble != (double)id) {
        rc = client_set_broken(c, err, GS_ECORRUPT, "reply to %s does not echo the request id",
                               op);
    }
    if (reply)
        *reply = h;
    else
        cJSON_Delete(h);
    return rc;
}

int gs_client_info(gs_client *c, gs_reply_info *out, cJSON **hdr, gs_err *err)
{
    memset(out, 0, sizeof *out);
    *hdr = NULL;
    cJSON *h = NULL;
    int rc = gs_client_call(c, "info", &h, err);
    if (rc) {
        cJSON_Delete(h);
        return rc;
    }
    /* the reply's text is still the reader's until the next exchange */
    gs_jnum_doc doc = client_reply_doc(c, h);
    if ((rc = gs_reply_info_parse(h, &doc, out, err)) != 0) {
        cJSON_Delete(h);
        return rc;
    }
    *hdr = h;
    return 0;
}
