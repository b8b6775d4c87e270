/* What the server's files share, private to them as libuv's internal.h is:
 * the server (struct srv), its event loops (struct srv_io), a client
 * connection (struct conn), the counters and route statistics, and the
 * functions one file calls in another, all named srv_*. The files, in
 * layers, top first; each calls only files below it (tests/system/layers.test):
 *   gs_srv.c     the main loop, signals, the reload, the stop
 *   gs_retune.c  devices without a plan, tuned in the background
 *   gs_accept.c  a client accepted on the main loop, handed to
 *   gs_io.c      an I/O loop, which opens its connection and ticks
 *   gs_ops.c     the operations: a request answered, or its sort handed to
 *                the scheduler, and the reply written through
 *   gs_conn.c    the connection: reading, writing, closing
 *   gs_admit.c   what a request holds of the memory budget
 *   gs_blocks.c  client memory blocks kept across requests
 *   gs_acl.c     who may connect, and the per-uid counts
 *   gs_ratelog.c log lines at a bounded rate (refusals, clients cut off)
 * The operations reply through the connection, so they sit above it. A
 * file reaches one above it only through a callback that one gave it,
 * which never runs after the call that gave it failed: a whole request
 * goes to the connection's on_request (srv_op_run, given to
 * srv_conn_open), a wait for memory ends in the srv_mem_cb given to
 * srv_mem_admit (gs_conn.c's), a finished sort comes back through the
 * loop's sink (srv_on_job_done), and a tune's end through
 * srv_retune_start's `done` (gs_srv.c's). Who touches what: a connection
 * and its loop's srv_io belong to that loop's thread, but for the fields
 * marked otherwise (atomics, or under srv_io.mu); the srv belongs to the
 * main loop's thread, but for the configuration (under conf_mu, copied by
 * each loop when conf_gen moves) and the atomics. Loop 0 runs on the main
 * loop's thread.
 * gs_srv_opts is named by its struct tag so that this header need not
 * include gs_srv.h (which would make an include cycle with gs_srv.c). */
#ifndef GS_SRV_INT_H
#define GS_SRV_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <uv.h>

#include "gs_conf.h"
#include "gs_db.h"
#include "gs_hist.h"
#include "gs_listen.h"
#include "gs_mem.h"
#include "gs_pin.h"
#include "gs_proto.h"
#include "gs_sched.h"

#define TICK_MS 250
#define POOL_TRIM_MS 5000.0     /* how often idle pooled device buffers are looked at */
#define POOL_IDLE_MS 30000.0    /* and how long one may wait for a taker */
#define MAX_ROUTES 64

/* srv_acl_allowed asks the user database (NSS: files, but maybe LDAP or
 * SSSD, and on the event loop) for a uid's supplementary groups at most
 * once per PEER_MEMO_MS per uid; a reload of the allow lists forgets every
 * verdict. */
#define PEER_MEMO_N 64
#define PEER_MEMO_MS 60000.0

/* A connection keeps the client memory blocks (memfds) it was sent more
 * than once mapped, and registered with the devices that sorted them, for
 * the requests that follow (gs_blocks.c): at most BLOCKS_PER_CONN, least
 * recently used first out. A block sent once is mapped for its request
 * only, and remembered (BLOCKS_SEEN of them) so that its second request
 * keeps it. */
#define BLOCKS_PER_CONN 4
#define BLOCKS_SEEN 8

/* Descriptors: a client holds its socket and up to GS_PROTO_MAX_FDS
 * received ones (a claimed memfd replaces one of them); the daemon keeps
 * FD_HEADROOM beside what it had open at start (devices, database, loops)
 * for files it opens while serving. srv_conn_fit_fds sizes RLIMIT_NOFILE,
 * or max_clients, from these. */
#define FDS_PER_CLIENT (1 + GS_PROTO_MAX_FDS)
#define FD_HEADROOM 64

/* A log line that may repeat as fast as clients can connect (a refusal) is
 * written a few times per window at most (gs_ratelog.c); the others are
 * counted and the count logged once the window is over. One thread uses
 * each. */
typedef struct srv_ratelog {
    const char *what;           /* "refusals": "N more refusals suppressed ..." */
    double t0;                  /* the window's start */
    unsigned logged, suppressed;
} srv_ratelog;

/* Connections held per uid (max_clients_per_uid): every connection is
 * counted from accept to close, under mu (the main loop takes, any I/O
 * loop drops); and the memory its requests hold (max_memory_per_uid),
 * charged and given back by the I/O loops. An entry goes when both are
 * zero. */
typedef struct srv_uids {
    pthread_mutex_t mu;
    struct srv_uid { unsigned uid, n; uint64_t mem; } *v;
    size_t n, cap;
} srv_uids;

typedef struct srv srv;
struct gs_srv_opts;

typedef struct srv_block {
    dev_t st_dev;               /* the memfd's identity */
    ino_t st_ino;
    void *map;                  /* all of it, MAP_SHARED */
    size_t len;
    gs_pin pin;                 /* its registrations with devices */
    double last_used;
    struct srv_block *next;
} srv_block;

struct srv_io;
struct conn;

/* How a wait for memory ended (gs_admit.c calls back the connection): rc 0
 * admitted, < 0 refused with `msg`. */
typedef void srv_mem_cb(struct conn *c, int rc, const char *msg);

typedef struct conn {
    srv *s;
    struct srv_io *io;          /* the loop that serves it */
    void (*on_request)(struct conn *c);   /* a whole, valid request is in (srv_conn_open) */
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
    int counted;                /* the request is in the counters (req_total) */
    int req_err;                /* an error to answer once the payload is skipped */
    char req_msg[1024];
    int fd_lost;                /* a descriptor sent with this message could not be
                                   received (the daemon is out of them): fd_msg says */
    char fd_msg[512];
    int memfd;                  /* claimed descriptor, -1 */
    double t_first, t_recv;
    int busy;                   /* a sort is with the scheduler */
    gs_job job;
    uint8_t *inbuf;             /* inline payload */
    void *valbuf;               /* values kept apart (argsort output, or realigned) */
    void *lexbuf;               /* a lexsort's words and chaining scratch, or 8- and 16-bit
                                   keys' words (gs_ops.c), from
                                   gs_scratch_get */
    size_t lexbytes;
    uint64_t *offbuf;           /* segments: the daemon's own copy of the offsets, checked
                                   once (the client's memory may change under it) */
    void *map;                  /* the request's block mapping, or NULL */
    srv_block *blocks;          /* kept across requests, see BLOCKS_PER_CONN */
    unsigned nblocks;
    srv_block *once;            /* the request's block when it is not kept */
    struct { dev_t dev; ino_t ino; } seen[BLOCKS_SEEN];   /* sent once, not kept */
    unsigned nseen;
    uint64_t kept_bytes;        /* the address space of its kept blocks */
    int kept_noted;             /* a block it was not let keep was logged */
    /* the request's share of the memory budget (gs_admit.c) */
    uint64_t mem_claim;         /* charged to s->mem until the request is released */
    int mem_uid;                /* ... and to its uid's share (not an exempt uid) */
    int mem_wait;               /* waiting for memory: its payload is not read meanwhile */
    srv_mem_cb *mem_cb;         /* ... and told through this when the wait ends */
    double mem_since;
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
    gs_hist queue;           /* each request's queue time, for percentiles */
} route_stat;

/* Counters one loop writes and any loop reads (the stats op): relaxed
 * atomics, so that a reader never sees a torn value and the writer pays no
 * locked instruction (SRV_ADD is a load and a store; one writer). */
typedef struct srv_counters {
    _Atomic unsigned long req_total, req_ok, req_err, fallbacks, by_op[GS_OP_COUNT];
    _Atomic uint64_t bytes_in, bytes_out;
    _Atomic unsigned long blocks_mapped, blocks_reused;   /* memfd requests: new mapping or kept */
} srv_counters;
#define SRV_GET(ctr) atomic_load_explicit(&(ctr), memory_order_relaxed)
#define SRV_ADD(ctr, v) \
    atomic_store_explicit(&(ctr), SRV_GET(ctr) + (v), memory_order_relaxed)

/* A client accepted on the main loop, on its way to an I/O loop. */
typedef struct srv_pend {
    int fd;
    struct ucred cred;
    char who[96];
    struct srv_pend *next;
} srv_pend;

/* One event loop serving clients (gs_io.c): it reads their requests,
 * routes and submits their sorts (their results come back through its
 * sink) and writes the replies. Loop 0 is the main loop; the others run on
 * threads of their own. */
typedef struct srv_io {
    srv *s;
    unsigned idx;
    uv_loop_t *loop;            /* loop 0: &s->loop; the others: &own */
    uv_loop_t own;
    pthread_t th;
    int th_started;
    uv_async_t wake;            /* clients handed over, a reload, draining, stopping */
    uv_timer_t tick;            /* its clients' timeouts */
    gs_sched_sink sink;         /* its sorts come back here */
    int open;                   /* handles initialised: wake, tick, sink */
    pthread_mutex_t mu;         /* pend and routes */
    srv_pend *pend;
    route_stat routes[MAX_ROUTES];
    size_t nroutes;
    _Atomic unsigned nconns;    /* read by the main loop to pick the least loaded */
    _Atomic unsigned mem_waiting;   /* its connections waiting for memory (any loop that
                                       gives memory back wakes it) */
    conn *conns;
    /* its copy of the configuration, taken when s->conf_gen moves */
    gs_conf conf;
    uint64_t req_cap;
    unsigned conf_gen;
    int draining, stopping;
    srv_counters ctr;
    srv_ratelog drop_log;       /* clients cut off (request_timeout), descriptors lost */
} srv_io;

/* allow_uids / allow_gids resolved (both empty: everyone who can open the
 * socket), and the supplementary-group verdicts of recent uids. */
typedef struct srv_acl {
    unsigned uid[GS_CONF_MAX_IDS], gid[GS_CONF_MAX_IDS];
    size_t nuid, ngid;
    struct peer_memo { unsigned uid; int allowed; double until_ms; } memo[PEER_MEMO_N];
    unsigned memo_next;
} srv_acl;

struct srv {
    uv_loop_t loop;
    const struct gs_srv_opts *o;
    /* The configuration and the database: the main loop changes them under
     * conf_mu (SIGHUP) and moves conf_gen; the I/O loops copy the
     * configuration when it moves, and the stats op reads the database's
     * query count under the lock. */
    pthread_mutex_t conf_mu;
    _Atomic unsigned conf_gen;
    gs_conf conf;
    uint64_t req_cap;           /* max_request_bytes resolved (auto: a quarter of max_memory),
                                   at start and on SIGHUP: not per request */
    gs_mem mem;                 /* max_memory and what the requests in flight hold */
    /* client memfds kept mapped (gs_blocks.c): their bytes, all connections,
     * and the bounds resolved (max_mapped_bytes, ..._per_client) */
    _Atomic uint64_t kept_bytes, kept_cap, kept_client_cap;
    _Atomic uint64_t mem_uid_cap;   /* max_memory_per_uid resolved */
    _Atomic unsigned long not_kept;     /* a file a bound did not let a connection keep */
    gs_db *db;
    _Atomic int db_ok;
    int db_damaged;             /* the last open found the file damaged: not written into */
    _Atomic int db_suspect;     /* the background tune found it damaged: the next open
                                   checks the whole file */
    gs_listen lis;
    uv_poll_t lis_poll;
    int lis_active, lis_paused;
    uv_timer_t tick;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_async_t poke;            /* an I/O loop saw a client or a sort end while draining */
    gs_sched *sched;
    srv_io *io;
    unsigned nio, next_io;
    _Atomic unsigned nconns;    /* clients handed to the loops and not yet closed */
    _Atomic int draining, stopping;
    int stopped;
    double t_start, last_trim;
    /* statistics (the loops' own are in srv_io.ctr) */
    _Atomic unsigned long clients_total, clients_rejected, clients_denied;
    srv_acl acl;
    srv_uids uids;              /* connections per uid (max_clients_per_uid) */
    int uid_cap_all;            /* cap root and the daemon's own uid too (test hook
                                   GSORTD_TEST_UID_CAP_ALL=1) */
    srv_ratelog refuse_log;     /* refused clients (main loop) */
    srv_ratelog accept_log;     /* accept(2) out of descriptors (main loop) */
    unsigned fd_base;           /* descriptors open at start, before any client */
    gs_pin_budget pin;          /* max_pinned_bytes and what is pinned now */
    int pin_once;               /* pin a block sent once for an out-of-core sort (test
                                   hook GSORTD_TEST_PIN_ONCE=0: never) */
    /* background tuning (--tune-missing) */
    pthread_t tune_th;
    int tune_running;
    _Atomic int tune_cancel;
    uv_async_t tune_async;
    void (*tune_done)(struct srv *s);   /* on the main loop when a tune ends */
    int tune_dev[64];
    size_t tune_ndev;
};

/* ---- gs_srv.c: the main loop ---- */

/* (Re)open the tuning database and give it to the scheduler. */
void srv_db_open(srv *s);
/* Main loop: draining and nothing left (clients, jobs, the re-tune
 * thread): stop. */
void srv_check_drained(srv *s);

/* ---- gs_retune.c: background tuning ---- */

/* Set up the thread's wake-up handle and, with tune_missing, start tuning
 * the devices that have no plan; `done` runs on the main loop when the
 * tune has ended (gs_srv.c: the new plans take effect), never after a
 * tune that did not start. */
void srv_retune_start(srv *s, void (*done)(srv *s));

/* ---- gs_accept.c: accepting clients ---- */

/* Main loop: the listener is readable: accept every waiting client, let
 * access control and max_clients decide, and hand it to an I/O loop. */
void srv_on_listen(uv_poll_t *h, int status, int events);
/* Set up what the limits at accept keep in s (the per-uid counts, the
 * refusal logs), and free it. */
void srv_accept_setup(srv *s);
void srv_accept_teardown(srv *s);
/* The main loop's tick: the refusal logs' counts of suppressed lines. */
void srv_accept_tick(srv *s, double now_ms);

/* ---- gs_io.c: the I/O loops ---- */

/* Main loop: set up s->nio loops (loop 0 on the main loop) and start the
 * threads of the others. On failure the ones set up are stopped again. */
int srv_io_start(srv *s, gs_err *err);
/* Main loop: give an accepted client to the loop with the fewest. Takes fd. */
void srv_io_hand(srv *s, int fd, const struct ucred *cred, const char *who);
/* Main loop: the configuration changed or draining began: tell every
 * loop. */
void srv_io_wake_all(srv *s);
/* Main loop, once nothing is in flight: stop every loop, join the threads
 * (loop 0's handles close when the main loop runs again). After this no
 * loop sends s->poke. */
void srv_io_stop(srv *s);
/* After the main loop ran dry: close the loops and free them. */
void srv_io_free(srv *s);

/* ---- gs_ops.c: operations ---- */

/* A whole, valid request is in: answer it, or start its sort (the
 * connection's on_request, which the loop gives srv_conn_open). */
void srv_op_run(conn *c);
/* The scheduler's done callback (loop thread): the sort reply. */
void srv_on_job_done(gs_job *j, void *ud);
/* Sum of every loop's counters. */
void srv_counters_sum(srv *s, srv_counters *sum);

/* ---- gs_conn.c: connections ---- */

/* Main loop, at start (`start`: count the daemon's own descriptors first)
 * and after a reload changed max_clients, under conf_mu: raise the soft
 * RLIMIT_NOFILE to what max_clients needs (up to the hard limit), else
 * lower s->conf.max_clients to what the limit allows, and log it. */
void srv_conn_fit_fds(srv *s, int start);
/* An I/O loop's tick: a request whose first byte came longer ago than
 * request_timeout allows and is still not wholly received is answered
 * with an error and its connection closed. 1 when it was. */
int srv_conn_overdue(conn *c, double now_ms);

/* How max_request_bytes came about, for a refusal: " (auto: a quarter of
 * max_memory; set max_request_bytes to change it)", or "". */
const char *srv_cap_note(const gs_conf *cf);

/* Best effort: a short error frame to a client the daemon will not serve,
 * and close fd. */
void srv_conn_refuse(int fd, int code, const char *msg);
/* An I/O loop takes a client handed to it; each whole, valid request it
 * sends goes to on_request (never after a refusal here: then the client
 * is turned away and p->fd closed). */
void srv_conn_open(srv_io *io, srv_pend *p, void (*on_request)(conn *c));
/* Close a client (why NULL: it went away, logged at debug level). The
 * descriptor is closed once the loop lets go of it, the record once no job
 * uses it. */
void srv_conn_close(conn *c, const char *why);
/* A client of io closed, or a sort of one ended, or io began draining:
 * while draining, the main loop looks whether everything is done. */
void srv_conn_poke(srv_io *io);
/* Watch what the connection waits for now: writing a reply, reading the
 * next request, or nothing while a sort runs. */
void srv_conn_update_poll(conn *c);
/* Queue one reply (header + up to two payload arrays) and start writing.
 * Takes the header. */
void srv_conn_send(conn *c, cJSON *hdr, const void *b0, size_t l0, const void *b1, size_t l1,
                   int close_after);
/* An error reply for the request being served; `closing`: then close. */
void srv_reply_error(conn *c, int code, const char *msg, int closing);
/* Free the request's buffers, mapping and memfd. */
void srv_conn_release(conn *c);
/* Free a closed connection's record, once neither its handle nor a job
 * refers to it (refs 0). */
void srv_conn_free(conn *c);

/* ---- gs_admit.c: the memory budget, per request ---- */

/* At start and on SIGHUP: resolve max_memory and the mapped-bytes bounds
 * into s (the caches too, when the budget shrank below what they hold). */
void srv_mem_configure(srv *s);
/* A sort's header is checked: charge what it will hold (its payload, the
 * values the daemon allocates, the sort's scratch) to the budget. 0:
 * charged (or nothing to charge); 1: it does not fit now and waits
 * (c->mem_wait), and `cb` runs once the wait ends, from srv_mem_retry; or
 * GS_ETOOBIG with `msg`: larger than the whole budget, or it waited
 * memory_wait in vain. `cb` never runs but after a 1, nor once the
 * request is released. */
int srv_mem_admit(conn *c, srv_mem_cb *cb, char *msg, size_t mlen);
/* The request is over (or the connection closed): give its charge back and
 * wake the loops whose connections wait for memory. */
void srv_mem_release(conn *c);
/* The loop's thread (its tick, and a wake-up after memory was given back):
 * admit the connections that wait and now fit, oldest first; refuse those
 * that waited memory_wait; either way call their srv_mem_cb. */
void srv_mem_retry(srv_io *io);

/* ---- gs_blocks.c: client blocks kept across requests ---- */

/* The mapping of the memfd `fd` covering at least `need` bytes: a block the
 * connection kept; else, for a file this connection sent before, a new
 * block it keeps (the least recently used goes when there are
 * BLOCKS_PER_CONN); else a mapping for this request only (c->once, gone
 * with srv_block_done). *kept says which. The caller still owns fd. */
int srv_block_get(conn *c, int fd, uint64_t need, srv_block **out, int *kept, gs_err *err);
/* The request is over: unmap its block if it was not kept. */
void srv_block_done(conn *c);
/* Unmap and unregister every block (the connection is gone, or no job
 * runs: a block is never released under a running sort). */
void srv_blocks_free(conn *c);

/* ---- gs_acl.c: access control ---- */

/* Resolve the allow lists of `cf` into s->acl; on failure s keeps what it
 * had. */
int srv_acl_load(srv *s, const gs_conf *cf, gs_err *err);
/* Whether allow_uids or allow_gids restrict who is served. */
int srv_acl_active(const srv *s);
/* Identify the client on `fd` (SO_PEERCRED into *cr, and `who` for the
 * log) and decide: 1 to serve it, 0 to refuse it with `msg`. */
int srv_acl_admit(srv *s, int fd, struct ucred *cr, char *who, size_t wlen, char *msg,
                  size_t mlen);
/* Whether uid is spared the per-uid bounds (max_clients_per_uid,
 * max_memory_per_uid): root and the daemon's own uid, but under the test
 * hook GSORTD_TEST_UID_CAP_ALL=1. */
int srv_acl_uid_exempt(const srv *s, unsigned uid);
/* Charge `bytes` to uid's memory when what it holds stays within `cap`: 1;
 * else 0, nothing charged. */
int srv_acl_uid_mem_take(srv *s, unsigned uid, uint64_t bytes, uint64_t cap);
/* Give back what srv_acl_uid_mem_take charged. */
void srv_acl_uid_mem_give(srv *s, unsigned uid, uint64_t bytes);
/* What uid's requests hold now. */
uint64_t srv_acl_uid_mem(srv *s, unsigned uid);
/* Connections per uid: count one more for cr->uid and return 1; or return
 * 0 with `msg` when max_clients_per_uid (`cap`, 0: none) is reached for a
 * uid that is neither root nor the daemon's own, -1 when out of memory. */
int srv_acl_uid_take(srv *s, const struct ucred *cr, unsigned cap, char *msg, size_t mlen);
/* The connection counted by srv_acl_uid_take closed. */
void srv_acl_uid_drop(srv *s, unsigned uid);
/* Set up and free s->uids. */
void srv_acl_uids_init(srv *s);
void srv_acl_uids_free(srv *s);

/* ---- gs_ratelog.c: log lines at a bounded rate ---- */

/* Whether a line may be logged now (counting it in its window), else
 * counts it as suppressed. */
int srv_ratelog_allow(srv_ratelog *r, double now_ms);
/* Once a window is over: log how many lines it suppressed, if any. On the
 * tick of the thread that owns it. */
void srv_ratelog_flush(srv_ratelog *r, double now_ms);

#endif
