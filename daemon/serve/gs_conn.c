/* Client connections, on the I/O loop that took each over (gs_io.c;
 * gs_accept.c accepted it on the main loop): reading each message through
 * a per-connection gs_proto_rd (resumable across partial reads, reading
 * straight into the payload buffer) with the descriptors that came with it
 * (SCM_RIGHTS); checking the header against the limits before the payload
 * is read; handing a whole request to the callback the loop gave
 * srv_conn_open (gs_ops.c's srv_op_run: the operations sit above the
 * connection and call it to reply, never the other way); writing replies
 * without blocking (sendmsg of up to three iovecs, resumed when the socket
 * is writable); and closing. A connection has at most one request in
 * flight: while a sort runs nothing more is read from it, which is the
 * backpressure. Nothing a client sends can make the daemon allocate more
 * than max_header_bytes before the header is checked, or more than it
 * actually received afterwards; and a sort is charged to the memory budget
 * (gs_admit.c) before its payload buffer exists, or waits unread until the
 * budget calls back. A descriptor is closed only after the loop has let go
 * of its handle (uv_close first, close(fd) in the close callback).
 * Descriptors belong to the message whose length prefix or header bytes
 * they came with; one that comes with payload bytes is closed and its
 * request refused, and one the kernel could not hand over because the
 * daemon is out of descriptors (MSG_CTRUNC with room to spare) is told
 * apart from too many sent. The per-client limits live here too:
 * request_timeout on the loop's tick, and RLIMIT_NOFILE sized for
 * max_clients at start. */
#include "config.h"
#include "gs_srv_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gs_log.h"
#include "gs_reply.h"
#include "gs_scratch.h"
#include "gs_time.h"

#define MAX_REPLY_HEADER (16u << 20)

static void conn_read(conn *c);
static void conn_admitted(conn *c, int rc, const char *msg);

/* Every request counts once in the statistics, when the daemon runs it or
 * answers it with an error, a fatal one included. */
static void count_request(conn *c)
{
    if (c->counted)
        return;
    c->counted = 1;
    SRV_ADD(c->io->ctr.req_total, 1);
    if (c->have_rq && c->rq.op >= 0 && c->rq.op < GS_OP_COUNT)
        SRV_ADD(c->io->ctr.by_op[c->rq.op], 1);
}

/* ---- writing replies ---- */

void srv_conn_release(conn *c)
{
    free(c->inbuf);
    c->inbuf = NULL;
    free(c->valbuf);
    c->valbuf = NULL;
    gs_scratch_put(c->lexbuf, c->lexbytes);
    c->lexbuf = NULL;
    free(c->offbuf);
    c->offbuf = NULL;
    c->map = NULL;
    srv_block_done(c);          /* a kept block stays for the next request */
    if (c->memfd >= 0) {
        close(c->memfd);
        c->memfd = -1;
    }
    srv_mem_release(c);         /* what it held of max_memory */
}

void srv_conn_free(conn *c)
{
    srv_blocks_free(c);
    gs_proto_rd_free(&c->rd);
    gs_proto_req_free(&c->rq);
    free(c);
}

/* Close a client whose socket failed with errno `e`, logging why. A peer
 * that went away (EPIPE, ECONNRESET: it closed with our reply, or its own
 * request, unread) is said to have done so, not reported as an errno. */
static void conn_fail(conn *c, int e)
{
    char why[256];
    if ((e == EPIPE || e == ECONNRESET) && c->wr_active)
        snprintf(why, sizeof why, "peer closed the connection before reading the whole "
                 "reply (%zu of %zu bytes sent; %s)", c->wr_sent, c->wr_total, strerror(e));
    else if (e == EPIPE || e == ECONNRESET)
        snprintf(why, sizeof why, "peer closed the connection (%s)", strerror(e));
    else
        snprintf(why, sizeof why, "%s", strerror(e));
    srv_conn_close(c, why);
}

static void conn_flush(conn *c)
{
    while (c->wr_sent < c->wr_total) {
        struct iovec iov[3];
        int niov = 0;
        size_t off = c->wr_sent;
        for (int i = 0; i < 3; i++) {
            if (off >= c->wr_iov[i].iov_len) {
                off -= c->wr_iov[i].iov_len;
                continue;
            }
            iov[niov].iov_base = (char *)c->wr_iov[i].iov_base + off;
            iov[niov].iov_len = c->wr_iov[i].iov_len - off;
            niov++;
            off = 0;
        }
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
        ssize_t r = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                srv_conn_update_poll(c);
                return;
            }
            conn_fail(c, errno);
            return;
        }
        c->wr_sent += (size_t)r;
        SRV_ADD(c->io->ctr.bytes_out, (uint64_t)r);
        c->last_progress = gs_now_ms();
    }
    free(c->wr_head);
    c->wr_head = NULL;
    c->wr_active = 0;
    srv_conn_release(c);
    c->last_activity = gs_now_ms();
    if (c->close_after || c->io->draining) {
        srv_conn_close(c, c->close_after ? "after a fatal protocol error" : "shutting down");
        return;
    }
    srv_conn_update_poll(c);
    conn_read(c);
}

/* Queue one reply (header + up to two payload arrays) and start writing.
 * Takes the header. */
void srv_conn_send(conn *c, cJSON *hdr, const void *b0, size_t l0, const void *b1, size_t l1,
                   int close_after)
{
    if (!hdr || !cJSON_AddNumberToObject(hdr, "payload_bytes", (double)(l0 + l1))) {
        cJSON_Delete(hdr);
        srv_conn_close(c, "out of memory");
        return;
    }
    uint8_t *head = NULL;
    size_t hlen = 0;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_proto_frame(hdr, MAX_REPLY_HEADER, &head, &hlen, &e);
    cJSON_Delete(hdr);
    if (rc < 0) {
        GS_ERROR("cannot encode a reply: %s", e.msg);
        srv_conn_close(c, "reply encoding failed");
        return;
    }
    c->wr_head = head;
    c->wr_iov[0] = (struct iovec){ head, hlen };
    c->wr_iov[1] = (struct iovec){ (void *)b0, l0 };
    c->wr_iov[2] = (struct iovec){ (void *)b1, l1 };
    c->wr_total = hlen + l0 + l1;
    c->wr_sent = 0;
    c->wr_active = 1;
    c->close_after = close_after;
    c->last_progress = gs_now_ms();
    conn_flush(c);
}

void srv_reply_error(conn *c, int code, const char *msg, int closing)
{
    count_request(c);
    SRV_ADD(c->io->ctr.req_err, 1);
    GS_DEBUG("client %s: %s: %s%s", c->who, gs_strerror(code), msg,
             closing ? " (closing)" : "");
    cJSON *r = gs_reply_error_build(c->have_rq ? c->rq.id : NULL,
                                    c->have_rq && c->op_known ? (int)c->rq.op : -1, code, msg,
                                    closing, NULL);
    srv_conn_release(c);
    srv_conn_send(c, r, NULL, 0, NULL, 0, closing);
}

/* ---- reading requests ---- */

static void close_fds(conn *c)
{
    for (int i = 0; i < c->nfds; i++)
        close(c->fds[i]);
    c->nfds = 0;
}

static void pend_error(conn *c, int code, const char *fmt, const char *msg)
{
    if (c->req_err)
        return;
    c->req_err = code;
    snprintf(c->req_msg, sizeof c->req_msg, fmt, msg);
}

/* The header is checked (and its memory charged): read the payload into a
 * buffer, or skip it when the request is refused or carries none. */
static void expect_payload(conn *c)
{
    int keep = !c->req_err && c->rq.op == GS_OP_SORT && !c->rq.memfd;
    gs_proto_rd_expect(&c->rd, c->rq.payload_bytes, keep);
}

/* The header is complete: check it and decide what to do with the payload. */
static void on_header(conn *c)
{
    const gs_conf *cf = &c->io->conf;
    size_t hl;
    const char *h = gs_proto_rd_header(&c->rd, &hl);
    gs_proto_req_free(&c->rq);
    memset(&c->rq, 0, sizeof c->rq);
    c->req_err = 0;
    c->req_msg[0] = '\0';
    gs_err e;
    gs_err_clear(&e);
    int fatal = 0;
    int rc = gs_proto_parse_req(h, hl, &c->rq, &fatal, &e);
    c->have_rq = 1;
    c->op_known = rc == 0;
    if (rc < 0 && fatal) {
        close_fds(c);
        srv_reply_error(c, rc, e.msg, 1);
        return;
    }
    const uint64_t cap = c->io->req_cap;
    if (c->rq.payload_bytes > cap) {
        char msg[256];
        snprintf(msg, sizeof msg, "the request declares %llu payload bytes and "
                 "max_request_bytes is %llu%s", (unsigned long long)c->rq.payload_bytes,
                 (unsigned long long)cap, srv_cap_note(cf));
        close_fds(c);
        srv_reply_error(c, GS_ETOOBIG, msg, 1);
        return;
    }
    if (c->fd_lost) {
        /* before anything about the descriptors that did come */
        pend_error(c, GS_EIO, "%s", c->fd_msg);
        close_fds(c);
    }
    if (rc < 0)
        pend_error(c, rc, "%.1000s", e.msg);
    else if (c->rq.op == GS_OP_SORT && !c->rq.memfd &&
             c->rq.out_bytes > cap) {
        char msg[256];
        snprintf(msg, sizeof msg, "the reply would carry %llu bytes and max_request_bytes is "
                 "%llu%s", (unsigned long long)c->rq.out_bytes, (unsigned long long)cap,
                 srv_cap_note(cf));
        pend_error(c, GS_ETOOBIG, "%s", msg);
    } else if (c->rq.op == GS_OP_SORT && c->rq.memfd) {
        if (c->rq.fd_bytes > cap) {
            char msg[256];
            snprintf(msg, sizeof msg, "the memfd request spans %llu bytes and "
                     "max_request_bytes is %llu%s", (unsigned long long)c->rq.fd_bytes,
                     (unsigned long long)cap, srv_cap_note(cf));
            pend_error(c, GS_ETOOBIG, "%s", msg);
        } else if (c->nfds != 1) {
            pend_error(c, GS_EINVAL, "%s", c->nfds ? "a memfd request takes exactly one "
                       "descriptor" : "\"memfd\":true but no descriptor came with the message "
                       "(send it with SCM_RIGHTS alongside the header)");
        } else {
            c->memfd = c->fds[0];
            c->nfds = 0;
        }
    }
    if (c->nfds) {
        close_fds(c);
        pend_error(c, GS_EINVAL, "%s", "a descriptor came with a request that does not use "
                   "one; it was closed");
    }
    if (!c->req_err && c->rq.op == GS_OP_SORT) {
        /* charged to max_memory before its payload buffer exists */
        char msg[512];
        int mrc = srv_mem_admit(c, conn_admitted, msg, sizeof msg);
        if (mrc == 1) {             /* waits: conn_admitted resumes it */
            srv_conn_update_poll(c);
            return;
        }
        if (mrc < 0)
            pend_error(c, mrc, "%s", msg);
    }
    expect_payload(c);
}

/* A whole message is in. */
static void on_message(conn *c)
{
    uint64_t plen;
    c->inbuf = gs_proto_rd_take(&c->rd, &plen);
    c->t_recv = gs_now_ms();
    c->last_activity = c->t_recv;
    count_request(c);
    if (c->req_err) {
        srv_reply_error(c, c->req_err, c->req_msg, 0);
        return;
    }
    c->on_request(c);
}

/* srv_mem_admit's callback: a request that waited for memory was admitted
 * (rc 0) or refused (rc < 0, `msg`): read its payload (or skip it, and
 * answer the refusal). */
static void conn_admitted(conn *c, int rc, const char *msg)
{
    if (rc < 0)
        pend_error(c, rc, "%s", msg);
    c->last_progress = gs_now_ms();     /* io_timeout counts from here */
    expect_payload(c);
    if (c->rd.state == GS_RD_DONE) {    /* no payload to read: a memfd request */
        on_message(c);
        return;
    }
    srv_conn_update_poll(c);
    conn_read(c);
}

/* The first bytes of a message arrived at `t`: what is known about a
 * request starts afresh. */
static void begin_message(conn *c, double t)
{
    c->t_first = t;
    c->counted = 0;
    c->have_rq = 0;
    c->op_known = 0;
    c->fd_lost = 0;
}

enum { FDS_OK = 0, FDS_TOO_MANY = -1, FDS_LOST = -2 };

/* Take the descriptors that came with received bytes. FDS_TOO_MANY: more
 * than GS_PROTO_MAX_FDS came (the kernel filled the room there was and
 * dropped the rest, MSG_CTRUNC). FDS_LOST: the kernel truncated with room
 * to spare, which it does when it cannot install a descriptor in the
 * daemon (EMFILE, ENFILE: out of descriptors). */
static int take_fds(conn *c, struct msghdr *mh)
{
    int over = 0;
    size_t got = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            got++;
            if (c->nfds < GS_PROTO_MAX_FDS)
                c->fds[c->nfds++] = fd;
            else {
                close(fd);
                over = 1;
            }
        }
    }
    if (over)
        return FDS_TOO_MANY;
    if (!(mh->msg_flags & MSG_CTRUNC))
        return FDS_OK;
    return got < GS_PROTO_MAX_FDS ? FDS_LOST : FDS_TOO_MANY;
}

/* Descriptors this process has open, from /proc/self/fd; 0 when unknown. */
static unsigned count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n ? n - 1 : 0;   /* less the directory's own */
}

/* A descriptor sent with this message was lost (FDS_LOST): say why in
 * c->fd_msg, and in the log at a bounded rate. Whether it was this
 * process's limit or the system's is tried again (a dup may succeed now
 * that another client closed). */
static void note_fd_lost(conn *c)
{
    int probe = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    int e = probe < 0 ? errno : 0;
    if (probe >= 0)
        close(probe);
    struct rlimit rl = { 0, 0 };
    getrlimit(RLIMIT_NOFILE, &rl);
    unsigned open = count_open_fds();
    char state[160];
    if (open)
        snprintf(state, sizeof state, "%u open, RLIMIT_NOFILE %llu", open,
                 (unsigned long long)rl.rlim_cur);
    else
        snprintf(state, sizeof state, "RLIMIT_NOFILE %llu", (unsigned long long)rl.rlim_cur);
    snprintf(c->fd_msg, sizeof c->fd_msg, "the daemon could not receive the descriptor sent "
             "with this request: %s (%s); it was dropped. Retry later; if this persists, "
             "the daemon's open-file limit (LimitNOFILE=) is too low for its clients",
             e == ENFILE ? "the system is out of file descriptors (ENFILE)"
             : e == EMFILE || !e ? "the daemon is out of file descriptors (EMFILE)"
                                 : strerror(e),
             state);
    c->fd_lost = 1;
    if (srv_ratelog_allow(&c->io->drop_log, gs_now_ms()))
        GS_WARN("client %s: a descriptor it sent was lost: out of file descriptors (%s, %s); "
                "raise LimitNOFILE or lower max_clients", c->who,
                e == ENFILE ? "ENFILE" : "EMFILE", state);
}

static void conn_read(conn *c)
{
    srv_io *io = c->io;
    while (!c->dead && !c->busy && !c->wr_active && !c->mem_wait) {
        if (c->rd.state == GS_RD_LEN && c->rd.len_have == 0)
            c->rd.max_header = io->conf.max_header_bytes;   /* a reload applies from here */
        void *buf;
        size_t len;
        gs_err e;
        gs_err_clear(&e);
        if (gs_proto_rd_space(&c->rd, &buf, &len, &e) < 0) {
            srv_reply_error(c, e.code ? e.code : GS_ENOMEM, e.msg, 1);
            return;
        }
        if (len == 0)
            break;
        union {
            char buf[CMSG_SPACE(sizeof(int) * GS_PROTO_MAX_FDS)];
            struct cmsghdr align;
        } cbuf;
        struct iovec iov = { buf, len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf,
                             .msg_controllen = sizeof cbuf.buf };
        const int fresh = c->rd.state == GS_RD_LEN && c->rd.len_have == 0;
        const int in_payload = c->rd.state == GS_RD_PAYLOAD;
        ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_fail(c, errno);
            return;
        }
        double t = gs_now_ms();
        if (r > 0 && fresh)
            begin_message(c, t);
        int fds = take_fds(c, &mh);
        if (fds == FDS_TOO_MANY) {
            close_fds(c);
            srv_reply_error(c, GS_EINVAL, "more descriptors than one message may carry", 1);
            return;
        }
        if (fds == FDS_LOST)
            note_fd_lost(c);
        if (in_payload && (c->nfds || c->fd_lost)) {
            /* The header was dealt with: no descriptor belongs to this
             * message any more, and none may wait for the next one. */
            close_fds(c);
            pend_error(c, c->fd_lost ? GS_EIO : GS_EINVAL, "%s", c->fd_lost ? c->fd_msg :
                       "a descriptor came with payload bytes; a descriptor goes with the "
                       "length prefix or header of the request that uses it (it was closed)");
            c->fd_lost = 0;
            gs_proto_rd_drop(&c->rd);
        }
        if (r == 0) {
            srv_conn_close(c, c->rd.state != GS_RD_LEN || c->rd.len_have
                                  ? "the client closed mid-message (truncated request)" : NULL);
            return;
        }
        c->last_progress = t;
        SRV_ADD(io->ctr.bytes_in, (uint64_t)r);
        if (gs_proto_rd_commit(&c->rd, (size_t)r, &e) < 0) {
            close_fds(c);
            srv_reply_error(c, e.code ? e.code : GS_EINVAL, e.msg, 1);
            return;
        }
        if (c->rd.state == GS_RD_HEADER_DONE)
            on_header(c);
        if (c->dead || c->wr_active || c->mem_wait)
            return;
        if (c->rd.state == GS_RD_DONE)
            on_message(c);
    }
}

/* ---- connections: watching, closing, taking one over ---- */

static void on_conn_event(uv_poll_t *h, int status, int events)
{
    conn *c = h->data;
    if (status < 0 && !(events & (UV_READABLE | UV_WRITABLE))) {
        /* libuv reports POLLERR as UV_EBADF (and stops the watcher); the
         * socket's pending error says what actually happened, typically
         * ECONNRESET from a peer that closed with our reply unread. */
        int e = 0;
        socklen_t elen = sizeof e;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &elen) == 0 && e != 0)
            conn_fail(c, e);
        else
            srv_conn_close(c, status == UV_EBADF ? "the socket reported an error (POLLERR) "
                              "with no error pending" : uv_strerror(status));
        return;
    }
    if (c->wr_active && (events & UV_WRITABLE))
        conn_flush(c);
    if (!c->dead && (events & UV_READABLE))
        conn_read(c);
}

void srv_conn_update_poll(conn *c)
{
    if (c->dead)
        return;
    int ev = 0;
    if (c->wr_active)
        ev = UV_WRITABLE;
    else if (!c->busy && !c->mem_wait)
        ev = UV_READABLE;
    if (ev == c->events)
        return;
    c->events = ev;
    if (ev)
        uv_poll_start(&c->poll, ev, on_conn_event);
    else
        uv_poll_stop(&c->poll);
}

void srv_conn_poke(srv_io *io)
{
    if (io->draining || atomic_load(&io->s->draining))
        uv_async_send(&io->s->poke);
}

/* The loop is done with the handle: only now may the descriptor go. Closed
 * any earlier, its number could be handed to a new client (or to a file
 * another thread opens) while the loop still had it registered, and the
 * loop's own clean-up would then act on that new descriptor. */
static void on_poll_closed(uv_handle_t *h)
{
    conn *c = h->data;
    srv_io *io = c->io;
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    if (--c->refs == 0) {
        srv_conn_release(c);
        srv_conn_free(c);
    }
    srv_conn_poke(io);
}

void srv_conn_close(conn *c, const char *why)
{
    if (c->dead)
        return;
    srv_io *io = c->io;
    c->dead = 1;
    if (why)
        GS_INFO("closing client %s: %s", c->who, why);
    else
        GS_DEBUG("client %s disconnected", c->who);
    close_fds(c);
    free(c->wr_head);
    c->wr_head = NULL;
    c->wr_active = 0;
    if (!c->busy)
        srv_conn_release(c);   /* a running job still uses the buffers: freed when it ends */
    if (c->prev)
        c->prev->next = c->next;
    else
        io->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    atomic_fetch_sub(&io->nconns, 1);
    atomic_fetch_sub(&c->s->nconns, 1);
    srv_acl_uid_drop(c->s, (unsigned)c->cred.uid);
    /* uv_close stops the watcher and takes the descriptor out of epoll at
     * once; on_poll_closed closes it. */
    uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}

void srv_conn_refuse(int fd, int code, const char *msg)
{
    cJSON *r = gs_proto_reply_error(NULL, code, msg, 1);
    uint8_t *head = NULL;
    size_t len = 0;
    if (r) {
        cJSON_AddNumberToObject(r, "payload_bytes", 0);
        if (gs_proto_frame(r, MAX_REPLY_HEADER, &head, &len, NULL) == 0)
            (void)!send(fd, head, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(head);
    cJSON_Delete(r);
    close(fd);
}

const char *srv_cap_note(const gs_conf *cf)
{
    return cf->max_request_bytes == GS_CONF_AUTO
               ? " (auto: a quarter of max_memory; set max_request_bytes to change it)"
               : "";
}

void srv_conn_open(srv_io *io, srv_pend *p, void (*on_request)(conn *c))
{
    srv *s = io->s;
    conn *c = calloc(1, sizeof *c);
    int uerr = c ? uv_poll_init(io->loop, &c->poll, p->fd) : 0;
    if (!c || uerr < 0) {
        free(c);
        char msg[160];
        snprintf(msg, sizeof msg, "the daemon cannot watch the connection (%s)",
                 uerr < 0 ? uv_strerror(uerr) : "out of memory");
        GS_ERROR("refusing client %s: %s", p->who, msg);
        srv_conn_refuse(p->fd, uerr < 0 ? GS_EIO : GS_ENOMEM, msg);
        atomic_fetch_sub(&io->nconns, 1);
        atomic_fetch_sub(&s->nconns, 1);
        srv_acl_uid_drop(s, (unsigned)p->cred.uid);
        srv_conn_poke(io);
        return;
    }
    c->s = s;
    c->io = io;
    c->on_request = on_request;
    c->fd = p->fd;
    c->cred = p->cred;
    snprintf(c->who, sizeof c->who, "%s", p->who);
    if (s->nio > 1)
        GS_INFO("client connected: %s (I/O loop %u)", c->who, io->idx);
    else
        GS_INFO("client connected: %s", c->who);
    c->memfd = -1;
    c->refs = 1;
    gs_proto_rd_init(&c->rd, io->conf.max_header_bytes);
    c->poll.data = c;
    c->next = io->conns;
    if (io->conns)
        io->conns->prev = c;
    io->conns = c;
    c->last_activity = c->last_progress = gs_now_ms();
    if (io->draining) {
        srv_conn_close(c, "shutting down");
        return;
    }
    srv_conn_update_poll(c);
}

/* ---- limits: request_timeout, descriptors ---- */

int srv_conn_overdue(conn *c, double now_ms)
{
    if (c->dead || c->busy || c->wr_active || (c->rd.state == GS_RD_LEN && !c->rd.len_have))
        return 0;
    const gs_conf *cf = &c->io->conf;
    /* the payload is known once the header is in: auto grants it time */
    uint64_t pb = c->rd.state == GS_RD_PAYLOAD ? c->rd.payload_len : 0;
    double limit_s = gs_conf_request_deadline(cf, pb);
    double took_s = (now_ms - c->t_first) / 1000;
    if (took_s <= limit_s)
        return 0;
    char msg[400];
    snprintf(msg, sizeof msg, "the request was not received whole within request_timeout "
             "(%.1f s%s): %llu bytes of it came in %.1f s", limit_s,
             cf->request_timeout_s > 0 ? "" : "; auto: 60 s plus 1 s per 32 MiB of payload",
             (unsigned long long)c->rd.msg_bytes, took_s);
    GS_INFO("client %s: %s; closing", c->who, msg);
    srv_reply_error(c, GS_ETOOBIG, msg, 1);
    return 1;
}

void srv_conn_fit_fds(srv *s, int start)
{
    if (start) {
        unsigned n = count_open_fds();
        s->fd_base = n ? n : 32;
    }
    const unsigned want = s->conf.max_clients;
    const unsigned long long reserve = (unsigned long long)s->fd_base + FD_HEADROOM;
    const unsigned long long need = reserve + (unsigned long long)want * FDS_PER_CLIENT;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        GS_WARN("getrlimit(RLIMIT_NOFILE): %s; max_clients = %u is not checked against it",
                strerror(errno), want);
        return;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rlim_t to = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max
                                                                      : (rlim_t)need;
        struct rlimit nl = { to, rl.rlim_max };
        if (to > rl.rlim_cur && setrlimit(RLIMIT_NOFILE, &nl) == 0) {
            GS_INFO("raised the open-file limit (RLIMIT_NOFILE) from %llu to %llu for "
                    "max_clients = %u", (unsigned long long)rl.rlim_cur,
                    (unsigned long long)to, want);
            rl.rlim_cur = to;
        } else if (to > rl.rlim_cur) {
            GS_WARN("cannot raise RLIMIT_NOFILE from %llu to %llu: %s",
                    (unsigned long long)rl.rlim_cur, (unsigned long long)to, strerror(errno));
        }
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        GS_DEBUG("max_clients = %u: %llu open files needed (%d per client, %llu for the "
                 "daemon), RLIMIT_NOFILE %llu", want, need, FDS_PER_CLIENT, reserve,
                 (unsigned long long)rl.rlim_cur);
        return;
    }
    unsigned long long fit = rl.rlim_cur > reserve ? (rl.rlim_cur - reserve) / FDS_PER_CLIENT : 0;
    if (fit < 1)
        fit = 1;
    s->conf.max_clients = (unsigned)fit;
    GS_WARN("max_clients lowered from %u to %llu: %u clients need %llu open files (%d each, "
            "%llu for the daemon itself) and RLIMIT_NOFILE allows %llu (its hard limit %llu); "
            "raise it (LimitNOFILE= in the unit, ulimit -n) to serve more", want, fit, want,
            need, FDS_PER_CLIENT, reserve, (unsigned long long)rl.rlim_cur,
            (unsigned long long)rl.rlim_max);
}
