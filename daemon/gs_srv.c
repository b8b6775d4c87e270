/* The event loop: accepting clients, reading their messages through a
 * per-connection gs_proto_rd (resumable across partial reads, reading
 * straight into the payload buffer), answering ping/info/stats at once and
 * handing sorts to the scheduler, writing replies without blocking, and
 * enforcing the limits and timeouts. A connection has at most one request
 * in flight: while a sort runs the daemon reads nothing more from it, which
 * is the backpressure. Nothing a client sends can make the daemon allocate
 * more than max_header_bytes before the header is checked, or more than it
 * actually received afterwards. */
#include "config.h"
#include "gs_srv.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <uv.h>

#include "gs_clrun.h"
#include "gs_db.h"
#include "gs_listen.h"
#include "gs_log.h"
#include "gs_proto.h"
#include "gs_sched.h"
#include "gs_systemd.h"
#include "gs_tune.h"
#include "gs_time.h"

#define TICK_MS 250
#define MAX_ROUTES 64
#define MAX_REPLY_HEADER (16u << 20)

typedef struct srv srv;

typedef struct conn {
    srv *s;
    int fd;
    struct ucred cred;          /* the peer at connect time (SO_PEERCRED) */
    char who[96];               /* "fd 7, pid 123, uid 1000, gid 1000" for the log */
    uv_poll_t poll;
    int events;                 /* what poll watches now */
    int refs;                   /* the poll handle, and a job in flight */
    int dead;                   /* closed: waiting for the handle and the job */
    struct conn *prev, *next;
    gs_proto_rd rd;
    int fds[GS_PROTO_MAX_FDS];  /* descriptors received, not yet claimed */
    int nfds;
    /* the request being read or served */
    gs_proto_req rq;
    int have_rq;
    int op_known;               /* the header parsed far enough to name its op */
    int req_err;                /* an error to answer once the payload is skipped */
    char req_msg[1024];
    int memfd;                  /* claimed descriptor, -1 */
    double t_first, t_recv;
    int busy;                   /* a sort is with the scheduler */
    gs_job job;
    uint8_t *inbuf;             /* inline payload */
    void *valbuf;               /* values kept apart (argsort output, or realigned) */
    void *map;                  /* memfd mapping */
    size_t maplen;
    uint64_t tiny[2];           /* n = 0 arrays */
    /* the reply being written */
    int wr_active;
    uint8_t *wr_head;
    struct iovec wr_iov[3];
    size_t wr_total, wr_sent;
    int close_after;
    double last_progress, last_activity;
} conn;

typedef struct route_stat {
    int dev;
    const char *algo;
    unsigned long count, errors;
    double total_ms, max_ms, queue_ms, sort_ms;
} route_stat;

/* peer_allowed asks the user database (NSS: files, but maybe LDAP or SSSD,
 * and on the event loop) for a uid's supplementary groups at most once per
 * PEER_MEMO_MS per uid; a reload of the allow lists forgets every verdict. */
#define PEER_MEMO_N 64
#define PEER_MEMO_MS 60000.0

struct srv {
    uv_loop_t loop;
    const gs_srv_opts *o;
    gs_conf conf;
    gs_listen lis;
    uv_poll_t lis_poll;
    int lis_active, lis_paused;
    uv_timer_t tick;
    uv_signal_t sig_term, sig_int, sig_hup;
    gs_sched *sched;
    gs_db *db;
    int db_ok;
    conn *conns;
    unsigned nconns;
    int draining, stopped;
    double t_start;
    /* statistics */
    unsigned long clients_total, clients_rejected, clients_denied;
    /* allow_uids / allow_gids resolved; both empty: everyone who can open
     * the socket */
    unsigned allow_uid[GS_CONF_MAX_IDS], allow_gid[GS_CONF_MAX_IDS];
    size_t nallow_uid, nallow_gid;
    /* the supplementary-group verdicts of recent uids (peer_allowed) */
    struct peer_memo { unsigned uid; int allowed; double until_ms; } memo[PEER_MEMO_N];
    unsigned memo_next;
    unsigned long req_total, req_ok, req_err, fallbacks, by_op[GS_OP_COUNT];
    uint64_t bytes_in, bytes_out;
    route_stat routes[MAX_ROUTES];
    size_t nroutes;
    /* background tuning (--tune-missing) */
    pthread_t tune_th;
    int tune_running;
    _Atomic int tune_cancel;
    uv_async_t tune_async;
    int tune_dev[64];
    size_t tune_ndev;
};

static void conn_update_poll(conn *c);
static void conn_close(conn *c, const char *why);
static void conn_read(conn *c);
static void check_drained(srv *s);

/* ---- database ---- */

static void db_open(srv *s)
{
    if (s->db) {
        gs_db_close(s->db);
        s->db = NULL;
    }
    s->db_ok = 0;
    const char *path = s->o->db_path;
    if (path && path[0] && !s->conf.tune_missing && access(path, F_OK) != 0) {
        GS_WARN("no tuning database at %s (run gsortd --tune-all, or serve with "
                "--tune-missing); serving with built-in defaults", path);
    } else if (path && path[0]) {
        gs_err e;
        gs_err_clear(&e);
        if (gs_db_open(&s->db, path, 0, &e) < 0) {
            GS_WARN("tuning database %s is unusable: %s; serving with built-in defaults",
                    path, e.msg);
            s->db = NULL;
        } else {
            s->db_ok = 1;
        }
    }
    gs_sched_set_db(s->sched, s->db);
}

/* ---- writing replies ---- */

static void release_sort(conn *c)
{
    free(c->inbuf);
    c->inbuf = NULL;
    free(c->valbuf);
    c->valbuf = NULL;
    if (c->map) {
        munmap(c->map, c->maplen);
        c->map = NULL;
    }
    if (c->memfd >= 0) {
        close(c->memfd);
        c->memfd = -1;
    }
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
    conn_close(c, why);
}

static void conn_flush(conn *c)
{
    srv *s = c->s;
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
                conn_update_poll(c);
                return;
            }
            conn_fail(c, errno);
            return;
        }
        c->wr_sent += (size_t)r;
        s->bytes_out += (uint64_t)r;
        c->last_progress = gs_now_ms();
    }
    free(c->wr_head);
    c->wr_head = NULL;
    c->wr_active = 0;
    release_sort(c);
    c->last_activity = gs_now_ms();
    if (c->close_after || s->draining) {
        conn_close(c, c->close_after ? "after a fatal protocol error" : "shutting down");
        return;
    }
    conn_update_poll(c);
    conn_read(c);
}

/* Queue one reply (header + up to two payload arrays) and start writing.
 * Takes the header. */
static void conn_send(conn *c, cJSON *hdr, const void *b0, size_t l0, const void *b1, size_t l1,
                      int close_after)
{
    cJSON_AddNumberToObject(hdr, "payload_bytes", (double)(l0 + l1));
    uint8_t *head = NULL;
    size_t hlen = 0;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_proto_frame(hdr, MAX_REPLY_HEADER, &head, &hlen, &e);
    cJSON_Delete(hdr);
    if (rc < 0) {
        GS_ERROR("cannot encode a reply: %s", e.msg);
        conn_close(c, "reply encoding failed");
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

static void reply_error(conn *c, int code, const char *msg, int closing)
{
    srv *s = c->s;
    s->req_err++;
    GS_DEBUG("client %s: %s: %s%s", c->who, gs_strerror(code), msg,
             closing ? " (closing)" : "");
    cJSON *r = gs_proto_reply_error(c->have_rq ? c->rq.id : NULL, code, msg, closing);
    if (!r) {
        conn_close(c, "out of memory");
        return;
    }
    if (c->have_rq && c->op_known)
        cJSON_AddStringToObject(r, "op", gs_proto_op_name(c->rq.op));
    release_sort(c);
    conn_send(c, r, NULL, 0, NULL, 0, closing);
}

/* ---- ops answered on the loop thread ---- */

static cJSON *limits_json(const gs_conf *cf)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddNumberToObject(l, "max_request_bytes", (double)cf->max_request_bytes);
    cJSON_AddNumberToObject(l, "max_clients", cf->max_clients);
    cJSON_AddNumberToObject(l, "max_header_bytes", cf->max_header_bytes);
    cJSON_AddNumberToObject(l, "idle_timeout_s", cf->idle_timeout_s);
    cJSON_AddNumberToObject(l, "io_timeout_s", cf->io_timeout_s);
    return l;
}

static cJSON *op_info(srv *s, conn *c)
{
    cJSON *r = gs_proto_reply_ok(GS_OP_INFO, c->rq.id);
    cJSON_AddStringToObject(r, "version", PACKAGE_VERSION);
    cJSON_AddNumberToObject(r, "protocol", GS_PROTO_VERSION);
    cJSON_AddNumberToObject(r, "pid", (double)getpid());
    cJSON_AddStringToObject(r, "socket", s->lis.path);
    if (s->o->db_path && s->o->db_path[0])
        cJSON_AddStringToObject(r, "db", s->o->db_path);
    else
        cJSON_AddNullToObject(r, "db");
    cJSON_AddBoolToObject(r, "db_ok", s->db_ok);
    cJSON *devs = cJSON_AddArrayToObject(r, "devices");
    char type[64];
    for (size_t i = 0; i < gs_sched_ndev(s->sched); i++) {
        gs_sched_devstat ds;
        gs_sched_devstat_get(s->sched, i, &ds);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "index", (double)i);
        cJSON_AddStringToObject(d, "name", ds.dev->info.name);
        cJSON_AddStringToObject(d, "platform", ds.dev->info.platform);
        cJSON_AddStringToObject(d, "driver", ds.dev->info.driver);
        cJSON_AddStringToObject(d, "type", gs_dev_type_name(ds.dev->info.type, type, sizeof type));
        cJSON_AddBoolToObject(d, "enabled", ds.enabled);
        cJSON_AddBoolToObject(d, "tuned", ds.tuned);
        cJSON_AddNumberToObject(d, "plan_entries", (double)ds.plan_entries);
        cJSON_AddNumberToObject(d, "queued", ds.queued);
        cJSON_AddBoolToObject(d, "healthy", ds.healthy);
        cJSON_AddItemToArray(devs, d);
    }
    cJSON *h = cJSON_AddObjectToObject(r, "host");
    cJSON_AddNumberToObject(h, "threads", gs_sched_host_threads(s->sched));
    cJSON *al = cJSON_AddArrayToObject(r, "algorithms");
    for (size_t i = 0; i < gs_algo_count(); i++)
        cJSON_AddItemToArray(al, cJSON_CreateString(gs_algo_at(i)->name));
    cJSON_AddItemToObject(r, "limits", limits_json(&s->conf));
    /* Who the daemon takes this client to be (SO_PEERCRED at connect). */
    cJSON *p = cJSON_AddObjectToObject(r, "peer");
    cJSON_AddNumberToObject(p, "pid", (double)c->cred.pid);
    cJSON_AddNumberToObject(p, "uid", (double)c->cred.uid);
    cJSON_AddNumberToObject(p, "gid", (double)c->cred.gid);
    return r;
}

static cJSON *op_stats(srv *s, conn *c)
{
    cJSON *r = gs_proto_reply_ok(GS_OP_STATS, c->rq.id);
    cJSON_AddNumberToObject(r, "uptime_s", (gs_now_ms() - s->t_start) / 1000.0);
    cJSON *cl = cJSON_AddObjectToObject(r, "clients");
    cJSON_AddNumberToObject(cl, "current", s->nconns);
    cJSON_AddNumberToObject(cl, "total", (double)s->clients_total);
    cJSON_AddNumberToObject(cl, "rejected", (double)s->clients_rejected);
    cJSON_AddNumberToObject(cl, "denied", (double)s->clients_denied);
    cJSON *rq = cJSON_AddObjectToObject(r, "requests");
    cJSON_AddNumberToObject(rq, "total", (double)s->req_total);
    cJSON_AddNumberToObject(rq, "ok", (double)s->req_ok);
    cJSON_AddNumberToObject(rq, "errors", (double)s->req_err);
    cJSON_AddNumberToObject(rq, "fallbacks", (double)s->fallbacks);
    cJSON *bo = cJSON_AddObjectToObject(rq, "by_op");
    for (int op = 0; op < GS_OP_COUNT; op++)
        cJSON_AddNumberToObject(bo, gs_proto_op_name(op), (double)s->by_op[op]);
    cJSON *by = cJSON_AddObjectToObject(r, "bytes");
    cJSON_AddNumberToObject(by, "in", (double)s->bytes_in);
    cJSON_AddNumberToObject(by, "out", (double)s->bytes_out);
    cJSON *rt = cJSON_AddArrayToObject(r, "routes");
    for (size_t i = 0; i < s->nroutes; i++) {
        const route_stat *x = &s->routes[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "device", x->dev);
        cJSON_AddStringToObject(o, "algorithm", x->algo);
        cJSON_AddNumberToObject(o, "count", (double)x->count);
        cJSON_AddNumberToObject(o, "errors", (double)x->errors);
        cJSON_AddNumberToObject(o, "mean_ms", x->count ? x->total_ms / (double)x->count : 0);
        cJSON_AddNumberToObject(o, "max_ms", x->max_ms);
        cJSON_AddNumberToObject(o, "total_ms", x->total_ms);
        cJSON_AddNumberToObject(o, "queue_ms", x->queue_ms);
        cJSON_AddNumberToObject(o, "sort_ms", x->sort_ms);
        cJSON_AddItemToArray(rt, o);
    }
    return r;
}

static route_stat *route_of(srv *s, int dev, const char *algo)
{
    for (size_t i = 0; i < s->nroutes; i++)
        if (s->routes[i].dev == dev && !strcmp(s->routes[i].algo, algo))
            return &s->routes[i];
    if (s->nroutes == MAX_ROUTES)
        return NULL;
    route_stat *r = &s->routes[s->nroutes++];
    memset(r, 0, sizeof *r);
    r->dev = dev;
    r->algo = algo;
    return r;
}

/* ---- sorts ---- */

static cJSON *params_json(const gs_params *p)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < p->count; i++)
        cJSON_AddNumberToObject(o, p->p[i].name, (double)p->p[i].value);
    return o;
}

static void on_job_done(gs_job *j, void *ud)
{
    conn *c = j->ud;
    srv *s = ud;
    c->busy = 0;
    c->refs--;
    double qms = j->t_start - j->t_submit, total = gs_now_ms() - c->t_first;
    double sort_ms = j->dev >= 0 ? j->st.kernel_ms : j->st.wall_ms;
    route_stat *rs = j->algo ? route_of(s, j->dev, j->algo->name) : NULL;
    if (rs) {
        rs->count++;
        rs->errors += j->rc < 0;
        rs->total_ms += total;
        rs->queue_ms += qms;
        rs->sort_ms += sort_ms;
        if (total > rs->max_ms)
            rs->max_ms = total;
    }
    if (j->fallback[0])
        s->fallbacks++;
    if (c->dead) {
        release_sort(c);
        if (c->refs == 0) {
            gs_proto_rd_free(&c->rd);
            gs_proto_req_free(&c->rq);
            free(c);
        }
        check_drained(s);
        return;
    }
    if (j->rc < 0) {
        reply_error(c, j->rc, j->err.msg, 0);
        return;
    }
    s->req_ok++;
    const gs_proto_req *rq = &c->rq;
    cJSON *r = gs_proto_reply_ok(GS_OP_SORT, rq->id);
    cJSON_AddNumberToObject(r, "n", (double)rq->n);
    cJSON_AddStringToObject(r, "dtype", gs_dtype_name(rq->dtype));
    cJSON_AddStringToObject(r, "values", gs_payload_name(rq->payload));
    if (j->dev >= 0) {
        gs_sched_devstat ds;
        gs_sched_devstat_get(s->sched, (size_t)j->dev, &ds);
        cJSON *d = cJSON_AddObjectToObject(r, "device");
        cJSON_AddNumberToObject(d, "index", j->dev);
        cJSON_AddStringToObject(d, "name", ds.dev->info.name);
        cJSON_AddStringToObject(d, "platform", ds.dev->info.platform);
    } else {
        cJSON_AddNullToObject(r, "device");
    }
    cJSON_AddStringToObject(r, "algorithm", j->algo->name);
    cJSON_AddItemToObject(r, "params", params_json(&j->run_params));
    cJSON_AddStringToObject(r, "plan", j->plan);
    if (j->fallback[0])
        cJSON_AddStringToObject(r, "fallback", j->fallback);
    cJSON *t = cJSON_AddObjectToObject(r, "times_ms");
    cJSON_AddNumberToObject(t, "queue", qms);
    cJSON_AddNumberToObject(t, "receive", c->t_recv - c->t_first);
    cJSON_AddNumberToObject(t, "upload", j->st.upload_ms);
    cJSON_AddNumberToObject(t, "sort", sort_ms);
    cJSON_AddNumberToObject(t, "download", j->st.download_ms);
    cJSON_AddNumberToObject(t, "total", total);
    if (c->map || rq->memfd) {
        conn_send(c, r, NULL, 0, NULL, 0, 0);
        return;
    }
    size_t kb = (size_t)rq->n * gs_dtype_size(rq->dtype);
    size_t vb = rq->payload == GS_PL_NONE ? 0 : (size_t)rq->n * gs_payload_size(rq->payload);
    conn_send(c, r, rq->n ? j->req.keys : NULL, rq->n ? kb : 0,
              rq->n && vb ? j->req.values : NULL, rq->n ? vb : 0, 0);
}

/* Map the client's memfd after checking it cannot be shrunk under us. */
static int map_memfd(conn *c, gs_err *e)
{
    const gs_proto_req *rq = &c->rq;
    int seals = fcntl(c->memfd, F_GET_SEALS);
    if (seals < 0)
        return gs_err_set(e, GS_EINVAL, "the descriptor is not a memfd that supports seals "
                          "(memfd_create with MFD_ALLOW_SEALING)");
    if (!(seals & F_SEAL_SHRINK))
        return gs_err_set(e, GS_EINVAL, "the memfd must be sealed with F_SEAL_SHRINK: "
                          "truncating it during a sort would crash the daemon");
    if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
        return gs_err_set(e, GS_EINVAL, "the memfd is sealed against writing; it is sorted "
                          "in place");
    struct stat sb;
    if (fstat(c->memfd, &sb) < 0)
        return gs_err_set(e, GS_EIO, "fstat of the memfd: %s", strerror(errno));
    if ((uint64_t)sb.st_size < rq->fd_bytes)
        return gs_err_set(e, GS_EINVAL, "the memfd holds %lld bytes and the request needs %llu",
                          (long long)sb.st_size, (unsigned long long)rq->fd_bytes);
    if (rq->fd_bytes == 0)
        return 0;
    void *m = mmap(NULL, (size_t)rq->fd_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd, 0);
    if (m == MAP_FAILED)
        return gs_err_set(e, errno == ENOMEM ? GS_ENOMEM : GS_EIO, "mapping the memfd: %s",
                          strerror(errno));
    c->map = m;
    c->maplen = (size_t)rq->fd_bytes;
    return 0;
}

static void start_sort(conn *c)
{
    srv *s = c->s;
    const gs_proto_req *rq = &c->rq;
    gs_job *j = &c->job;
    memset(j, 0, sizeof *j);
    size_t ks = gs_dtype_size(rq->dtype), vs = gs_payload_size(rq->payload);
    size_t n = (size_t)rq->n;
    gs_err e;
    gs_err_clear(&e);
    void *keys = c->tiny, *values = rq->payload != GS_PL_NONE ? (void *)c->tiny : NULL;
    int rc = 0;
    if (rq->memfd) {
        if ((rc = map_memfd(c, &e)) < 0) {
            reply_error(c, rc, e.msg, 0);
            return;
        }
        if (n) {
            keys = (char *)c->map + rq->keys_offset;
            if (values)
                values = (char *)c->map + rq->values_offset;
        }
    } else if (n) {
        keys = c->inbuf;
        if (rq->payload == GS_PL_U32 || rq->payload == GS_PL_U64) {
            values = c->inbuf + n * ks;
            if ((uintptr_t)values % vs) {
                /* u64 values after an odd count of u32 keys: realign. */
                if (!(c->valbuf = malloc(n * vs))) {
                    reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
                    return;
                }
                memcpy(c->valbuf, values, n * vs);
                values = c->valbuf;
            }
        } else if (values) {
            if (!(c->valbuf = malloc(n * vs))) {
                reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
                return;
            }
            values = c->valbuf;
        }
    }
    j->req = (gs_sort_req){ .dtype = rq->dtype, .payload = rq->payload,
                            .descending = rq->descending, .stable = rq->stable, .n = n,
                            .keys = keys, .values = values };
    snprintf(j->algorithm, sizeof j->algorithm, "%s", rq->algorithm);
    j->params = rq->params;
    j->has_params = rq->has_params;
    j->device = rq->device;
    j->ud = c;
    if ((rc = gs_sched_route(s->sched, j, &e)) < 0) {
        reply_error(c, rc, e.msg, 0);
        return;
    }
    c->busy = 1;
    c->refs++;
    conn_update_poll(c);
    gs_sched_submit(s->sched, j);
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

/* The header is complete: check it and decide what to do with the payload. */
static void on_header(conn *c)
{
    srv *s = c->s;
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
        reply_error(c, rc, e.msg, 1);
        return;
    }
    if (c->rq.payload_bytes > s->conf.max_request_bytes) {
        char msg[256];
        snprintf(msg, sizeof msg, "the request declares %llu payload bytes and "
                 "max_request_bytes is %llu", (unsigned long long)c->rq.payload_bytes,
                 (unsigned long long)s->conf.max_request_bytes);
        close_fds(c);
        reply_error(c, GS_ETOOBIG, msg, 1);
        return;
    }
    if (rc < 0)
        pend_error(c, rc, "%.1000s", e.msg);
    else if (c->rq.op == GS_OP_SORT && !c->rq.memfd &&
             c->rq.out_bytes > s->conf.max_request_bytes) {
        char msg[256];
        snprintf(msg, sizeof msg, "the reply would carry %llu bytes and max_request_bytes is "
                 "%llu", (unsigned long long)c->rq.out_bytes,
                 (unsigned long long)s->conf.max_request_bytes);
        pend_error(c, GS_ETOOBIG, "%s", msg);
    } else if (c->rq.op == GS_OP_SORT && c->rq.memfd) {
        if (c->rq.fd_bytes > s->conf.max_request_bytes) {
            char msg[256];
            snprintf(msg, sizeof msg, "the memfd request spans %llu bytes and "
                     "max_request_bytes is %llu", (unsigned long long)c->rq.fd_bytes,
                     (unsigned long long)s->conf.max_request_bytes);
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
    int keep = !c->req_err && c->rq.op == GS_OP_SORT && !c->rq.memfd;
    gs_proto_rd_expect(&c->rd, c->rq.payload_bytes, keep);
}

/* A whole message is in. */
static void on_message(conn *c)
{
    srv *s = c->s;
    uint64_t plen;
    c->inbuf = gs_proto_rd_take(&c->rd, &plen);
    c->t_recv = gs_now_ms();
    c->last_activity = c->t_recv;
    s->req_total++;
    if (c->rq.op >= 0 && c->rq.op < GS_OP_COUNT)
        s->by_op[c->rq.op]++;
    if (c->req_err) {
        reply_error(c, c->req_err, c->req_msg, 0);
        return;
    }
    switch (c->rq.op) {
    case GS_OP_PING: {
        cJSON *r = gs_proto_reply_ok(GS_OP_PING, c->rq.id);
        cJSON_AddStringToObject(r, "version", PACKAGE_VERSION);
        cJSON_AddNumberToObject(r, "protocol", GS_PROTO_VERSION);
        s->req_ok++;
        conn_send(c, r, NULL, 0, NULL, 0, 0);
        return;
    }
    case GS_OP_INFO:
        s->req_ok++;
        conn_send(c, op_info(s, c), NULL, 0, NULL, 0, 0);
        return;
    case GS_OP_STATS:
        s->req_ok++;
        conn_send(c, op_stats(s, c), NULL, 0, NULL, 0, 0);
        return;
    case GS_OP_SORT:
        start_sort(c);
        return;
    default:
        reply_error(c, GS_EINVAL, "unknown op", 0);
    }
}

/* Take descriptors from a received message; 0, or -1 if there were too many. */
static int take_fds(conn *c, struct msghdr *mh)
{
    int over = (mh->msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfd; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            if (c->nfds < GS_PROTO_MAX_FDS)
                c->fds[c->nfds++] = fd;
            else {
                close(fd);
                over = 1;
            }
        }
    }
    return over ? -1 : 0;
}

static void conn_read(conn *c)
{
    srv *s = c->s;
    while (!c->dead && !c->busy && !c->wr_active) {
        if (c->rd.state == GS_RD_LEN && c->rd.len_have == 0)
            c->rd.max_header = s->conf.max_header_bytes;   /* a reload applies from here */
        void *buf;
        size_t len;
        gs_err e;
        gs_err_clear(&e);
        if (gs_proto_rd_space(&c->rd, &buf, &len, &e) < 0) {
            reply_error(c, e.code ? e.code : GS_ENOMEM, e.msg, 1);
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
        ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                conn_fail(c, errno);
            return;
        }
        if (take_fds(c, &mh) < 0) {
            close_fds(c);
            reply_error(c, GS_EINVAL, "more descriptors than one message may carry", 1);
            return;
        }
        if (r == 0) {
            conn_close(c, c->rd.state != GS_RD_LEN || c->rd.len_have
                              ? "the client closed mid-message (truncated request)" : NULL);
            return;
        }
        double t = gs_now_ms();
        if (c->rd.state == GS_RD_LEN && c->rd.len_have == 0)
            c->t_first = t;
        c->last_progress = t;
        s->bytes_in += (uint64_t)r;
        if (gs_proto_rd_commit(&c->rd, (size_t)r, &e) < 0) {
            close_fds(c);
            reply_error(c, e.code ? e.code : GS_EINVAL, e.msg, 1);
            return;
        }
        if (c->rd.state == GS_RD_HEADER_DONE)
            on_header(c);
        if (c->dead || c->wr_active)
            return;
        if (c->rd.state == GS_RD_DONE)
            on_message(c);
    }
}

/* ---- connections ---- */

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
            conn_close(c, status == UV_EBADF ? "the socket reported an error (POLLERR) "
                          "with no error pending" : uv_strerror(status));
        return;
    }
    if (c->wr_active && (events & UV_WRITABLE))
        conn_flush(c);
    if (!c->dead && (events & UV_READABLE))
        conn_read(c);
}

static void conn_update_poll(conn *c)
{
    if (c->dead)
        return;
    int ev = 0;
    if (c->wr_active)
        ev = UV_WRITABLE;
    else if (!c->busy)
        ev = UV_READABLE;
    if (ev == c->events)
        return;
    c->events = ev;
    if (ev)
        uv_poll_start(&c->poll, ev, on_conn_event);
    else
        uv_poll_stop(&c->poll);
}

/* The loop is done with the handle: only now may the descriptor go. Closed
 * any earlier, its number could be handed to a new client (or to a file
 * another thread opens) while the loop still had it registered, and the
 * loop's own clean-up would then act on that new descriptor. */
static void on_poll_closed(uv_handle_t *h)
{
    conn *c = h->data;
    srv *s = c->s;
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    if (--c->refs == 0) {
        release_sort(c);
        gs_proto_rd_free(&c->rd);
        gs_proto_req_free(&c->rq);
        free(c);
    }
    check_drained(s);
}

static void conn_close(conn *c, const char *why)
{
    if (c->dead)
        return;
    srv *s = c->s;
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
        release_sort(c);   /* a running job still uses the buffers: freed when it ends */
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    /* uv_close stops the watcher and takes the descriptor out of epoll at
     * once; on_poll_closed closes it. */
    uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}

/* Best effort: a short error frame to a client we will not serve. */
static void refuse_client(int fd, int code, const char *msg)
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

/* The peer's pid, uid and gid as the kernel recorded them at connect();
 * 1, or 0 when the kernel will not say (cred is then nobody's). */
static int peer_cred(int fd, struct ucred *cr, char *who, size_t wlen)
{
    socklen_t len = sizeof *cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof *cr) {
        int e = errno;
        cr->pid = 0;
        cr->uid = (uid_t)-1;
        cr->gid = (gid_t)-1;
        snprintf(who, wlen, "fd %d, unidentified (SO_PEERCRED: %s)", fd, strerror(e));
        return 0;
    }
    snprintf(who, wlen, "fd %d, pid %ld, uid %u, gid %u", fd, (long)cr->pid,
             (unsigned)cr->uid, (unsigned)cr->gid);
    return 1;
}

static int id_listed(const unsigned *ids, size_t n, unsigned id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* allow_uids / allow_gids: the uid, the primary gid the kernel reports, or
 * one of the supplementary groups the user database gives the uid's name
 * (getgrouplist: membership as of now, not as of the client's login). */
static int peer_allowed(srv *s, const struct ucred *cr)
{
    if (!s->nallow_uid && !s->nallow_gid)
        return 1;
    if (id_listed(s->allow_uid, s->nallow_uid, (unsigned)cr->uid) ||
        id_listed(s->allow_gid, s->nallow_gid, (unsigned)cr->gid))
        return 1;
    if (!s->nallow_gid)
        return 0;
    const double now = gs_now_ms();
    for (unsigned i = 0; i < PEER_MEMO_N; i++)
        if (s->memo[i].until_ms > now && s->memo[i].uid == (unsigned)cr->uid)
            return s->memo[i].allowed;
    int allowed = 0;
    char buf[16384];
    struct passwd pw, *res = NULL;
    if (getpwuid_r(cr->uid, &pw, buf, sizeof buf, &res) == 0 && res) {
        gid_t groups[256];
        int ng = (int)(sizeof groups / sizeof groups[0]);
        if (getgrouplist(res->pw_name, res->pw_gid, groups, &ng) < 0)
            ng = (int)(sizeof groups / sizeof groups[0]);   /* the first 256 are filled */
        for (int i = 0; i < ng && !allowed; i++)
            allowed = id_listed(s->allow_gid, s->nallow_gid, (unsigned)groups[i]);
    }
    GS_DEBUG("allow_gids: supplementary groups of uid %u looked up: %s (kept %.0f s)",
             (unsigned)cr->uid, allowed ? "listed" : "not listed", PEER_MEMO_MS / 1000);
    s->memo[s->memo_next++ % PEER_MEMO_N] =
        (struct peer_memo){ (unsigned)cr->uid, allowed, now + PEER_MEMO_MS };
    return allowed;
}

/* Resolve the allow lists of `cf` into s; on failure s keeps what it had. */
static int allow_load(srv *s, const gs_conf *cf, gs_err *err)
{
    unsigned u[GS_CONF_MAX_IDS], g[GS_CONF_MAX_IDS];
    size_t nu, ng;
    int rc = gs_conf_parse_ids("allow_uids", cf->allow_uids, 0, u, &nu, NULL, 0, err);
    if (rc == 0)
        rc = gs_conf_parse_ids("allow_gids", cf->allow_gids, 1, g, &ng, NULL, 0, err);
    if (rc < 0)
        return rc;
    memcpy(s->allow_uid, u, sizeof u);
    memcpy(s->allow_gid, g, sizeof g);
    s->nallow_uid = nu;
    s->nallow_gid = ng;
    memset(s->memo, 0, sizeof s->memo);   /* verdicts under the old lists */
    return 0;
}

static void on_listen(uv_poll_t *h, int status, int events)
{
    srv *s = h->data;
    (void)status;
    (void)events;
    for (;;) {
        int fd = accept4(s->lis.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
                /* Out of descriptors: pause accepting for a tick instead of
                 * spinning on a listener that stays readable. */
                GS_WARN("cannot accept clients: %s; pausing for %d ms", strerror(errno), TICK_MS);
                uv_poll_stop(&s->lis_poll);
                s->lis_paused = 1;
            }
            return;
        }
        struct ucred cr;
        char who[96];
        int have_cred = peer_cred(fd, &cr, who, sizeof who);
        int lists = s->nallow_uid || s->nallow_gid;
        if (lists && (!have_cred || !peer_allowed(s, &cr))) {
            s->clients_denied++;
            char msg[256];
            if (have_cred)
                snprintf(msg, sizeof msg, "permission denied: uid %u (gid %u) is not allowed "
                         "by this daemon's allow_uids/allow_gids", (unsigned)cr.uid,
                         (unsigned)cr.gid);
            else
                snprintf(msg, sizeof msg, "permission denied: the daemon cannot identify this "
                         "client (SO_PEERCRED) and allow_uids/allow_gids are set");
            GS_WARN("refusing client %s: not in allow_uids/allow_gids", who);
            refuse_client(fd, GS_EPERM, msg);
            continue;
        }
        if (s->nconns >= s->conf.max_clients) {
            s->clients_rejected++;
            char msg[128];
            snprintf(msg, sizeof msg, "too many clients (max_clients = %u); try again later",
                     s->conf.max_clients);
            GS_WARN("refusing client %s: %s", who, msg);
            refuse_client(fd, GS_ETOOBIG, msg);
            continue;
        }
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            refuse_client(fd, GS_ENOMEM, "out of memory");
            continue;
        }
        c->s = s;
        c->fd = fd;
        c->cred = cr;
        snprintf(c->who, sizeof c->who, "%s", who);
        GS_INFO("client connected: %s", who);
        c->memfd = -1;
        c->refs = 1;
        gs_proto_rd_init(&c->rd, s->conf.max_header_bytes);
        if (uv_poll_init(&s->loop, &c->poll, fd) < 0) {
            gs_proto_rd_free(&c->rd);
            free(c);
            close(fd);
            continue;
        }
        c->poll.data = c;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        s->clients_total++;
        c->last_activity = c->last_progress = gs_now_ms();
        conn_update_poll(c);
    }
}

/* ---- timeouts, shutdown, reload ---- */

static void stop_everything(srv *s)
{
    if (s->stopped)
        return;
    s->stopped = 1;
    uv_timer_stop(&s->tick);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->sig_term, NULL);
    uv_close((uv_handle_t *)&s->sig_int, NULL);
    uv_close((uv_handle_t *)&s->sig_hup, NULL);
    /* With the handlers gone a repeated SIGTERM would kill the process
     * mid-exit; the drain is done, so ignore it. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    uv_close((uv_handle_t *)&s->tune_async, NULL);
    gs_sched_stop(s->sched);
    s->sched = NULL;
}

static void check_drained(srv *s)
{
    if (s->draining && !s->stopped && s->nconns == 0 && gs_sched_inflight(s->sched) == 0 &&
        !s->tune_running)
        stop_everything(s);
}

static void on_tick(uv_timer_t *t)
{
    srv *s = t->data;
    double now = gs_now_ms();
    if (s->lis_paused && s->lis_active) {
        s->lis_paused = 0;
        uv_poll_start(&s->lis_poll, UV_READABLE, on_listen);
    }
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->busy)
            continue;
        int mid = c->wr_active || c->rd.state != GS_RD_LEN || c->rd.len_have;
        if (mid && now - c->last_progress > s->conf.io_timeout_s * 1000) {
            char why[128];
            snprintf(why, sizeof why, "no progress for %.1f s (io_timeout) in the middle of a %s",
                     s->conf.io_timeout_s, c->wr_active ? "reply" : "request");
            conn_close(c, why);
        } else if (!mid && now - c->last_activity > s->conf.idle_timeout_s * 1000) {
            conn_close(c, "idle (idle_timeout)");
        }
    }
    check_drained(s);
}

static void begin_shutdown(srv *s, int signum)
{
    if (s->draining) {
        GS_INFO("already shutting down (%zu requests in flight)", gs_sched_inflight(s->sched));
        return;
    }
    s->draining = 1;
    GS_INFO("signal %d: shutting down, finishing %zu requests in flight", signum,
            gs_sched_inflight(s->sched));
    gs_systemd_stopping("shutting down: finishing %zu requests in flight",
                        gs_sched_inflight(s->sched));
    if (s->lis_active) {
        uv_poll_stop(&s->lis_poll);
        uv_close((uv_handle_t *)&s->lis_poll, NULL);
        s->lis_active = 0;
    }
    gs_listen_close(&s->lis);
    atomic_store(&s->tune_cancel, 1);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (!c->busy && !c->wr_active)
            conn_close(c, NULL);
    }
    check_drained(s);
}

/* READY=1 with a one-line summary for `systemctl status`. */
static void notify_serving(srv *s, const char *note)
{
    gs_systemd_ready("serving on %s%s: %zu devices, %u host threads, database %s%s",
                     s->lis.path, s->lis.adopted ? " (socket-activated)" : "",
                     gs_sched_ndev(s->sched), gs_sched_host_threads(s->sched),
                     s->db_ok ? s->o->db_path : "none", note);
}

static void on_signal(uv_signal_t *h, int signum)
{
    srv *s = h->data;
    if (signum != SIGHUP) {
        begin_shutdown(s, signum);
        return;
    }
    gs_systemd_reloading("SIGHUP: reloading the configuration and the tuning database");
    int failed = 0;
    if (s->o->reload) {
        gs_conf nc;
        gs_err e;
        gs_err_clear(&e);
        if (s->o->reload(&nc, &e, s->o->reload_ud) < 0) {
            GS_ERROR("reload failed, keeping the current configuration: %s", e.msg);
            failed = 1;
        } else {
            static const char *const restart_only[] = { "socket", "socket_mode", "socket_group",
                "devices", "host_threads", "cache_dir", "kernel_dir", "tune_missing", "db" };
            int changed[9] = {
                strcmp(nc.socket, s->conf.socket) != 0, nc.socket_mode != s->conf.socket_mode,
                strcmp(nc.socket_group, s->conf.socket_group) != 0,
                strcmp(nc.devices, s->conf.devices) != 0, nc.host_threads != s->conf.host_threads,
                strcmp(nc.cache_dir, s->conf.cache_dir) != 0,
                strcmp(nc.kernel_dir, s->conf.kernel_dir) != 0,
                nc.tune_missing != s->conf.tune_missing, strcmp(nc.db, s->conf.db) != 0 };
            for (int i = 0; i < 9; i++)
                if (changed[i])
                    GS_WARN("reload: '%s' changed; it takes effect at the next restart",
                            restart_only[i]);
            s->conf.log_level = nc.log_level;
            s->conf.log_syslog = nc.log_syslog;
            s->conf.max_request_bytes = nc.max_request_bytes;
            s->conf.max_clients = nc.max_clients;
            s->conf.max_header_bytes = nc.max_header_bytes;
            s->conf.idle_timeout_s = nc.idle_timeout_s;
            s->conf.io_timeout_s = nc.io_timeout_s;
            s->conf.tune_budget_s = nc.tune_budget_s;
            gs_log_set_level(nc.log_level);
            /* Applies to connections accepted from now on. */
            if (allow_load(s, &nc, &e) < 0) {
                GS_ERROR("reload: %s; keeping allow_uids = \"%s\", allow_gids = \"%s\"",
                         e.msg, s->conf.allow_uids, s->conf.allow_gids);
                failed = 1;
            } else {
                memcpy(s->conf.allow_uids, nc.allow_uids, sizeof nc.allow_uids);
                memcpy(s->conf.allow_gids, nc.allow_gids, sizeof nc.allow_gids);
                GS_INFO("reload: allow_uids = \"%s\", allow_gids = \"%s\" (new connections)",
                        s->conf.allow_uids, s->conf.allow_gids);
            }
        }
    }
    db_open(s);
    GS_INFO("SIGHUP: configuration and tuning database reloaded (max_header_bytes %u, "
            "max_request_bytes %llu, max_clients %u)", s->conf.max_header_bytes,
            (unsigned long long)s->conf.max_request_bytes, s->conf.max_clients);
    /* READY=1 ends the reload either way: a bad file leaves the daemon
     * serving with what it had, which STATUS says. */
    notify_serving(s, failed ? "; reload failed, kept the previous configuration (see the log)"
                             : "");
}

/* ---- background tuning of devices without a plan ---- */

static void *tune_main(void *arg)
{
    srv *s = arg;
    gs_db *db = NULL;
    gs_err e;
    gs_err_clear(&e);
    if (gs_db_open(&db, s->o->db_path, 0, &e) < 0) {
        GS_ERROR("--tune-missing: cannot open %s: %s", s->o->db_path, e.msg);
        uv_async_send(&s->tune_async);
        return NULL;
    }
    for (size_t i = 0; i < s->tune_ndev && !atomic_load(&s->tune_cancel); i++) {
        gs_dev *d = &s->o->devs[s->tune_dev[i]];
        gs_tune_opts o;
        gs_tune_opts_init(&o, s->conf.tune_budget_s);
        o.cancel = &s->tune_cancel;
        gs_tune_report rep = { 0 };
        GS_INFO("--tune-missing: tuning device %d (%s) in the background, budget %.0f s",
                s->tune_dev[i], d->info.name, o.budget_s);
        gs_err_clear(&e);
        if (gs_tune_device(db, d, s->o->pc, &o, gs_now_s() + o.budget_s, &rep, &e) < 0)
            GS_ERROR("--tune-missing: device %d (%s): %s", s->tune_dev[i], d->info.name, e.msg);
        else
            GS_INFO("--tune-missing: device %d (%s) tuned: %zu plan entries", s->tune_dev[i],
                    d->info.name, rep.ndevs ? rep.devs[0].nplan : (size_t)0);
        gs_tune_report_free(&rep);
    }
    gs_db_close(db);
    uv_async_send(&s->tune_async);
    return NULL;
}

static void on_tune_done(uv_async_t *h)
{
    srv *s = h->data;
    if (!s->tune_running)
        return;
    pthread_join(s->tune_th, NULL);
    s->tune_running = 0;
    if (!s->draining)
        db_open(s);   /* the new plans take effect */
    check_drained(s);
}

static void start_tuning(srv *s)
{
    if (!s->o->db_path || !s->o->db_path[0]) {
        GS_WARN("--tune-missing needs a tuning database; not tuning");
        return;
    }
    s->tune_ndev = gs_sched_untuned(s->sched, s->tune_dev, 64);
    if (!s->tune_ndev)
        return;
    if (pthread_create(&s->tune_th, NULL, tune_main, s) != 0) {
        GS_WARN("--tune-missing: cannot start the tuning thread");
        return;
    }
    s->tune_running = 1;
}

/* ---- entry ---- */

int gs_srv_run(const gs_srv_opts *o, gs_err *err)
{
    srv *s = calloc(1, sizeof *s);
    if (!s)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    s->o = o;
    s->conf = *o->conf;
    s->t_start = gs_now_ms();
    int rc = allow_load(s, &s->conf, err);
    if (rc < 0) {
        free(s);
        return rc;
    }
    rc = uv_loop_init(&s->loop);
    if (rc < 0) {
        free(s);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    rc = o->listen_fd > 0 ? gs_listen_adopt(&s->lis, o->listen_fd, err)
         : gs_listen_open(&s->lis, o->socket_path, s->conf.socket_mode, s->conf.socket_group,
                          err);
    if (rc < 0) {
        uv_loop_close(&s->loop);
        free(s);
        return rc;
    }
    unsigned ht = s->conf.host_threads;
    if (!ht) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        ht = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (unsigned)ncpu;
    }
    gs_sched_opts so = { .host_threads = ht, .devices = s->conf.devices, .pc = o->pc };
    if ((rc = gs_sched_start(&s->sched, &s->loop, o->devs, o->ndev, &so, on_job_done, s,
                             err)) < 0) {
        gs_listen_close(&s->lis);
        if (s->sched)
            gs_sched_stop(s->sched);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        free(s);
        return rc;
    }
    db_open(s);

    uv_poll_init(&s->loop, &s->lis_poll, s->lis.fd);
    s->lis_poll.data = s;
    uv_poll_start(&s->lis_poll, UV_READABLE, on_listen);
    s->lis_active = 1;
    uv_timer_init(&s->loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
    uv_signal_t *sigs[3] = { &s->sig_term, &s->sig_int, &s->sig_hup };
    int signums[3] = { SIGTERM, SIGINT, SIGHUP };
    for (int i = 0; i < 3; i++) {
        uv_signal_init(&s->loop, sigs[i]);
        sigs[i]->data = s;
        uv_signal_start(sigs[i], on_signal, signums[i]);
    }
    uv_async_init(&s->loop, &s->tune_async, on_tune_done);
    s->tune_async.data = s;
    if (s->conf.tune_missing)
        start_tuning(s);

    GS_INFO("serving on %s (%s%zu devices, %u host threads, database %s)", s->lis.path,
            s->lis.adopted ? "socket-activated, " : "", gs_sched_ndev(s->sched), ht,
            s->db_ok ? o->db_path : "none");
    if (s->nallow_uid || s->nallow_gid)
        GS_INFO("only these clients are served: allow_uids = \"%s\", allow_gids = \"%s\"",
                s->conf.allow_uids, s->conf.allow_gids);
    notify_serving(s, "");
    uv_run(&s->loop, UV_RUN_DEFAULT);

    if (!s->stopped) {   /* the loop ran dry without a signal: should not happen */
        begin_shutdown(s, 0);
        uv_run(&s->loop, UV_RUN_DEFAULT);
    }
    gs_listen_close(&s->lis);
    if (s->db)
        gs_db_close(s->db);
    int lrc = uv_loop_close(&s->loop);
    if (lrc < 0)
        GS_DEBUG("uv_loop_close: %s", uv_strerror(lrc));
    GS_INFO("stopped: %lu requests served, %lu errors", s->req_ok, s->req_err);
    free(s);
    return 0;
}
