/* gsort-load: the load test of a running gsortd (issue 8). N client threads,
 * each on its own connection, send M requests each: sorts of every dtype and
 * payload (none, u32, u64, idx32, idx64), ascending and descending, stable
 * or not, n from 0 to 2^max (log-uniform, seeded), inline and through a
 * sealed memfd, with a fraction of malformed requests mixed in (bad JSON,
 * bad dtype, bad version, payload_bytes that does not match, an unsealed
 * memfd, a header length above the limit, and clients that disconnect in
 * the middle of a header or of a payload). Every sort reply is checked
 * (bench/sortverify.h); every malformed request must get its documented
 * error (and "close" when the framing is lost), or, for a disconnect, the
 * next connection must be served. It reports wrong answers, errors by kind
 * (expected for malformed requests, unexpected otherwise), latency
 * percentiles per size class, requests/s, and the daemon's resident memory
 * (VmRSS of the pid that info reports) before, after a warm-up and at the
 * end, bounded by: end <= warm-up x (1 + slack%) + slack MiB.
 *
 * For the soak of issue 16 (ten minutes of mixed load on the GPU machine,
 * bench/soak-run) a run can last a time instead of a count (--duration: a
 * soak is planned in minutes, and requests of 2^10..2^26 keys take wildly
 * different times) and draw sizes from 2^A up (--min-log2: tiny requests
 * prove little there). A third of the sorts go through each client's
 * registered block (bench/load/loadxport.c), one memfd reused for every such
 * request and replaced by a larger one only when a request needs more, up to
 * 2^K keys (--block-max-log2), since the daemon keeps and pins a block only
 * when it sees it again; it is rewritten every time, so that a stale mapping
 * or a stale device copy shows as a wrong answer. A share of the valid sorts
 * is sent whole and then abandoned, the connection closed unread
 * (--vanish-pct), as a killed client would: the daemon must drop the reply
 * and the connection's blocks and go on. Kept blocks are client memory the
 * daemon maps, so the RSS bound leaves out its RssShmem (and the scratch and
 * CPU-device buffers the daemon keeps for reuse, stats memory.cached, each
 * under its own cap: --racers fill them after the warm-up); what it pins of them
 * (stats blocks.pinned_bytes) is followed instead: it rises and falls with
 * the clients' blocks and connections, so the end is bounded by the peak seen
 * before the last tenth (growth still going on at the end), and once every
 * client has hung up it must fall back to where it started, which catches a
 * leak even after it has reached max_pinned_bytes (--pinned-slack-mib).
 *
 * The malformed requests and their documented answers are
 * bench/load/malformed.c, how the sorts travel (buffers, memfds, the block, the
 * vanishing send) bench/load/loadxport.c, the options bench/load/loadopts.c, the
 * talk with the daemon besides the requests (socket, info, ping, RSS,
 * stats) bench/benchclient.c; what stays
 * here is one concept, the load run itself: the client threads with their
 * tallies, the phases, and the report that sums them, which share the
 * client record.
 *
 * Exit status 0 only if no answer was wrong, no error was unexpected, the
 * daemon still answers a ping at the end and its RSS and pinned bytes
 * stayed bounded; 1 otherwise, 2 on a usage error. */
#include "config.h"
#include "benchclient.h"
#include "loadopts.h"
#include "loadrace.h"
#include "benchutil.h"
#include "loadxport.h"
#include "malformed.h"
#include "sortverify.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_paths.h"

#define NCLASS 6            /* latency size classes: n <= 16, 256, 4096, 65536, 2^20, more */
#define MAX_ALGOS 16

static const char *const class_name[NCLASS] = { "0..2^4", "2^4..2^8", "2^8..2^12",
                                                "2^12..2^16", "2^16..2^20", ">2^20" };


/* Error tallies by code name (unexpected ones; a few distinct codes). */
#define MAX_CODES 16
typedef struct tally {
    char name[MAX_CODES][24];
    uint64_t count[MAX_CODES];
    int n;
} tally;

static void tally_add(tally *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->name[i], name)) {
            t->count[i]++;
            return;
        }
    if (t->n < MAX_CODES) {
        snprintf(t->name[t->n], sizeof t->name[0], "%s", name);
        t->count[t->n++] = 1;
    }
}

typedef struct lat {
    float ms;
    uint8_t cls;
} lat;

typedef struct client {
    const lo_opts *o;
    pthread_t tid;
    int id;
    gs_client *c;
    uint64_t rng;
    lx_client x;              /* buffers, the registered block (bench/load/loadxport.c) */
    /* results */
    uint64_t sorts, wrong, unexpected, corrupted, on_device;
    uint64_t by_xport[LX_COUNT], vanished[LX_COUNT], demoted;
    uint64_t by_dtype[6], by_payload[5];
    uint64_t mk_sent[MALFORMED_COUNT], mk_ok[MALFORMED_COUNT];
    tally errs;               /* unexpected, by code */
    lat *lat;
    size_t nlat, latcap;
    char algo[MAX_ALGOS][48];
    uint64_t algo_n[MAX_ALGOS];
    int nalgo;
    int fatal;                /* cannot go on (no connection) */
} client;

static atomic_int g_msgs;     /* unexpected-event lines printed, capped */

static void complain(const client *cl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void complain(const client *cl, const char *fmt, ...)
{
    if (atomic_fetch_add(&g_msgs, 1) >= 50)
        return;   /* the tallies carry the rest */
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gsort-load: client %d: %s\n", cl->id, buf);
}

static int size_class(size_t n)
{
    int c = 0;
    for (size_t lim = 16; c < NCLASS - 1 && n > lim; lim <<= 4)
        c++;
    return c;
}

static double unit(uint64_t *s)
{
    return (double)(bu_splitmix(s) >> 11) * 0x1.0p-53;
}

/* ---- connection ---- */

static int reconnect(client *cl)
{
    if (cl->c)
        gs_client_close(cl->c);
    cl->c = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(&cl->c, cl->o->socket, &err) < 0) {
        complain(cl, "cannot connect: %s", err.msg);
        cl->c = NULL;
        return -1;
    }
    gs_client_set_timeout(cl->c, cl->o->timeout_s);
    return 0;
}

static void note_algo(client *cl, const gs_client_result *r)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s", r->device >= 0 ? "dev:" : "host:", r->algorithm);
    for (int i = 0; i < cl->nalgo; i++)
        if (!strcmp(cl->algo[i], name)) {
            cl->algo_n[i]++;
            return;
        }
    if (cl->nalgo < MAX_ALGOS) {
        snprintf(cl->algo[cl->nalgo], sizeof cl->algo[0], "%s", name);
        cl->algo_n[cl->nalgo++] = 1;
    }
}

/* ---- a valid sort ---- */

static void lat_push(client *cl, double ms, size_t n)
{
    if (cl->nlat == cl->latcap) {
        size_t cap = cl->latcap ? cl->latcap * 2 : 1024;
        lat *l = realloc(cl->lat, cap * sizeof *l);
        if (!l)
            return;   /* the percentiles are a report, not a check */
        cl->lat = l;
        cl->latcap = cap;
    }
    cl->lat[cl->nlat].ms = (float)ms;
    cl->lat[cl->nlat].cls = (uint8_t)size_class(n);
    cl->nlat++;
}

/* Sent whole through `kind`, then the connection closed unread. */
static void vanish(client *cl, lx_kind kind, const gs_client_sort *rq, uint64_t seed)
{
    gs_err err;
    gs_err_clear(&err);
    if (lx_vanish(&cl->x, cl->c, kind, rq, seed, &err) < 0) {
        cl->unexpected++;
        tally_add(&cl->errs, "vanish-send");
        complain(cl, "sort %s/%s n=%zu by %s, to vanish from: %s", gs_dtype_name(rq->shape.dtype),
                 gs_payload_name(rq->shape.payload), rq->n, lx_name[kind], err.msg);
    } else {
        cl->vanished[kind]++;
    }
    reconnect(cl);
}

/* --corrupt-every: key 0 becomes one of another encoding (the last key's,
 * else 0 or 1), so the checksum must change. (A flipped low bit would not
 * do: every NaN encodes alike, and a descending float sort starts with its
 * NaNs.) */
static void spoil(gs_dtype t, int desc, void *keys, size_t n)
{
    size_t ks = gs_dtype_size(t);
    uint64_t e0 = sv_key_enc(t, desc, keys, 0);
    if (n > 1 && sv_key_enc(t, desc, keys, n - 1) != e0) {
        memcpy(keys, (char *)keys + (n - 1) * ks, ks);
        return;
    }
    memset(keys, 0, ks);
    if (sv_key_enc(t, desc, keys, 0) == e0)
        ((uint8_t *)keys)[0] = 1;
}

static void one_sort(client *cl, int timed)
{
    const lo_opts *o = cl->o;
    uint64_t *s = &cl->rng;
    gs_dtype t = (gs_dtype)(bu_splitmix(s) % 6);
    gs_payload p = (gs_payload)(bu_splitmix(s) % 5);
    int desc = bu_splitmix(s) & 1, stable = bu_splitmix(s) % 3 == 0;
    uint64_t xdraw = bu_splitmix(s);
    int few = bu_splitmix(s) % 4 == 0;
    int dev = o->device >= 0 && (int)(bu_splitmix(s) % 100) < o->device_pct ? o->device : -1;
    /* Untuned, the daemon's plan may well pick the host: a device sort names
     * one of the device algorithms (shellsort is not stable). */
    static const char *const dev_algo[] = { "radix", "mergepath", "shellsort" };
    const char *algo = dev >= 0 ? dev_algo[bu_splitmix(s) % (stable ? 2 : 3)] : NULL;
    size_t n;
    if (bu_splitmix(s) % 32 == 0 && !o->min_log2)
        n = 0;
    else
        n = (size_t)exp2(o->min_log2 + unit(s) * (o->max_log2 - o->min_log2));
    uint64_t seed = bu_splitmix(s);
    int demoted, flags = (desc ? SV_DESC : 0) | (stable ? SV_STABLE : 0) | (few ? SV_FEW : 0);
    lx_kind kind = lx_pick(xdraw, n, o->block_max_log2, &demoted);
    size_t ks = gs_dtype_size(t);
    int idx = p == GS_PL_IDX32 || p == GS_PL_IDX64;
    gs_client_sort rq = {
        .shape = { .dtype = t, .payload = p, .descending = desc, .stable = stable },
        .n = n,
        .device = dev,
        .algorithm = algo
    };
    cl->by_dtype[t]++;
    cl->by_payload[p]++;
    cl->demoted += (uint64_t)demoted;
    if (o->vanish_pct && (int)(bu_splitmix(s) % 100) < o->vanish_pct) {
        vanish(cl, kind, &rq, seed);
        return;
    }
    gs_err err;
    gs_err_clear(&err);
    lx_req x;
    if (lx_prepare(&cl->x, kind, t, p, n, &x, &err) < 0) {
        complain(cl, "%s of n=%zu: %s", lx_name[kind], n, err.msg);
        cl->unexpected++;
        tally_add(&cl->errs, "client-memfd");
        return;
    }
    sv_keysum want;
    sv_fill(t, p, flags, n, x.keys, x.vals, seed, &want);
    if (idx && n)
        memcpy(x.in_keys, x.keys, n * ks);
    rq.keys = x.keys;
    rq.values = x.vals;
    rq.shm = x.shm;
    gs_client_result res;
    memset(&res, 0, sizeof res);
    double t0 = gs_now_ms();
    int rc = gs_client_sort_run(cl->c, &rq, &res, &err);
    double t1 = gs_now_ms();
    cl->by_xport[kind]++;
    if (rc < 0) {
        cl->unexpected++;
        tally_add(&cl->errs, gs_strerror(rc));
        complain(cl, "sort %s/%s n=%zu %s%s %s%s%s failed: %s", gs_dtype_name(t),
                 gs_payload_name(p), n, desc ? "desc" : "asc", stable ? " stable" : "",
                 lx_name[kind], algo ? " with " : "", algo ? algo : "", err.msg);
        lx_finish(&cl->x, &x, 1);   /* the daemon may still be sorting in the block */
        reconnect(cl);   /* whatever state the stream is in */
        return;
    }
    cl->sorts++;
    if (res.device >= 0)
        cl->on_device++;
    note_algo(cl, &res);
    if (o->corrupt_every && n && cl->sorts % (uint64_t)o->corrupt_every == 0) {
        spoil(t, desc, x.keys, n);
        cl->corrupted++;
    }
    char why[256];
    if (!sv_verify(t, p, flags, n, x.keys, x.vals, x.in_keys, &want, why, sizeof why)) {
        cl->wrong++;
        complain(cl, "WRONG ANSWER: sort %s/%s n=%zu %s%s %s by %s (%s, plan %s): %s",
                 gs_dtype_name(t), gs_payload_name(p), n, desc ? "desc" : "asc",
                 stable ? " stable" : "", lx_name[kind], res.algorithm,
                 res.device >= 0 ? res.device_name : "host", res.plan, why);
    }
    lx_finish(&cl->x, &x, 0);
    if (timed)
        lat_push(cl, t1 - t0, n);
}

/* ---- malformed requests (bench/load/malformed.c) ---- */

static void one_malformed(client *cl)
{
    int k = (int)(bu_splitmix(&cl->rng) % MALFORMED_COUNT), again = 0;
    char why[1024];
    cl->mk_sent[k]++;
    switch (malformed_send(cl->c, k, &again, why, sizeof why)) {
    case MALFORMED_AS_DOCUMENTED:
        cl->mk_ok[k]++;
        break;
    case MALFORMED_LOCAL:
        cl->unexpected++;
        tally_add(&cl->errs, "client-memfd");
        complain(cl, "%s", why);
        break;
    case MALFORMED_NOT_SENT:
        cl->unexpected++;
        tally_add(&cl->errs, "send");
        complain(cl, "%s", why);
        break;
    case MALFORMED_WRONG_ANSWER: {
        cl->unexpected++;
        char name[48];
        snprintf(name, sizeof name, "malformed-%s", malformed_kinds[k].name);
        tally_add(&cl->errs, name);
        complain(cl, "%s", why);
        break;
    }
    }
    if (again)
        reconnect(cl);
}

/* ---- the client threads ---- */

static pthread_barrier_t g_bar;
static double g_t0, g_t1;     /* main phase */
static double g_deadline;     /* --duration: no request starts after it */
static atomic_ulong g_done;   /* main-phase requests done, for the RSS samples */
static atomic_int g_finished; /* clients past their main phase */

static void *client_main(void *arg)
{
    client *cl = arg;
    const lo_opts *o = cl->o;
    for (int phase = 0; phase < 2; phase++) {
        int count = phase ? o->requests : o->warmup, timed = phase && o->duration_s > 0;
        pthread_barrier_wait(&g_bar);   /* main: take RSS, start the clock */
        pthread_barrier_wait(&g_bar);
        for (int i = 0; (timed ? gs_now_ms() < g_deadline : i < count) && !cl->fatal; i++) {
            if (!cl->c && reconnect(cl) < 0) {
                cl->fatal = 1;
                cl->unexpected++;
                tally_add(&cl->errs, "connect");
                break;
            }
            if ((int)(bu_splitmix(&cl->rng) % 100) < o->malformed_pct)
                one_malformed(cl);
            else
                one_sort(cl, phase);
            if (phase)
                atomic_fetch_add(&g_done, 1);
        }
    }
    atomic_fetch_add(&g_finished, 1);
    pthread_barrier_wait(&g_bar);
    return NULL;
}

/* ---- the daemon's pid, RSS (bench/benchclient.c) and ping ---- */

static int ping_ok(const lo_opts *o)
{
    gs_err err;
    gs_err_clear(&err);
    int rc = bc_ping(o->socket, o->timeout_s, &err);
    if (rc < 0)
        fprintf(stderr, "gsort-load: final ping failed: %s\n", err.msg);
    return rc == 0;
}

/* The daemon's own RSS, or -1: without the client memfds it maps (its kept
 * blocks grow with the clients' blocks, which is no leak of its own) and
 * without what it keeps for reuse (stats memory.cached: host-sort scratch
 * and CPU-device buffers, each bounded by a cap of its own and given back
 * when idle; --racers, which start after the warm-up with sorts of every
 * size, fill them). */
static long own_rss(const lo_opts *o, long pid, gs_client **mon)
{
    if (!o->check_rss)
        return -1;
    long rss = bc_rss_own_kib(pid);
    bc_stats st;
    if (rss >= 0 && bc_stats_poll(mon, o->socket, o->timeout_s, "gsort-load", &st) == 0) {
        long c = (long)(st.cached / 1024);
        rss = c < rss ? rss - c : 0;
    }
    return rss;
}

/* blocks.pinned_bytes now (the rest of the stats into *st), or -1. */
static long long pinned_now(const lo_opts *o, gs_client **mon, bc_stats *st)
{
    bc_stats local;
    if (!st)
        st = &local;
    return bc_stats_poll(mon, o->socket, o->timeout_s, "gsort-load", st) < 0
               ? -1 : (long long)st->pinned_bytes;
}

/* With --vanish-pct, a request whose client has hung up may still run (its
 * buffers and blocks with it): before RSS and pinned bytes are read, wait
 * (up to the reply timeout) until the daemon has no more connections than
 * `conns`, its count while only ours are open. */
static void quiesce(const lo_opts *o, gs_client **mon, uint64_t conns)
{
    bc_stats st;
    double t0 = gs_now_ms();
    while (o->vanish_pct && pinned_now(o, mon, &st) >= 0 && st.conns > conns &&
           gs_now_ms() - t0 < o->timeout_s * 1e3) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* Which tenth of the main phase has been reached (0..10): by the clock
 * with --duration, else by the requests done. */
static int tenths_done(const lo_opts *o)
{
    if (o->duration_s > 0) {
        double f = (gs_now_ms() - g_t0) / (o->duration_s * 1e3);
        return f >= 1 ? 10 : f > 0 ? (int)(f * 10) : 0;
    }
    uint64_t total = (uint64_t)o->clients * (uint64_t)o->requests;
    return total ? (int)(atomic_load(&g_done) * 10 / total) : 0;
}

/* ---- report ---- */

static int cmp_lat(const void *a, const void *b)
{
    const lat *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls - y->cls;
    return (x->ms > y->ms) - (x->ms < y->ms);
}

static double pctl(const lat *v, size_t n, double p)
{
    size_t r = (size_t)ceil(p * (double)n);
    return v[r ? r - 1 : 0].ms;
}

/* ---- the run: its steps, and what they hand each other ---- */

/* What the steps of a run share: the options, the daemon, the clients and
 * racers, and the figures each phase takes for the report. */
typedef struct load_run {
    lo_opts o;
    long pid;                 /* the daemon's, as info reports it */
    gs_client *mon;           /* the stats connection that follows pinned bytes and caches */
    client *cl;
    int started;              /* client threads running */
    lr_client *racer;
    int nracers;
    double w0, w1;            /* the warm-up's start and end */
    /* the daemon's own RSS (KiB): before, after the warm-up, at each tenth
     * of the main phase, at the end (with VmRSS and RssShmem there) */
    long rss0, rss1, rss_at[11], rss2, rss2_vm, shm2;
    /* its pinned bytes at the same points, the peak before the last tenth,
     * and once every client hung up (pin3, pin_wait s after) */
    long long pin0, pin1, pin_at[11], pin_peak, pin2, pin3;
    double pin_wait;
    int dec;                  /* entries of rss_at and pin_at taken */
    int pin_unread;           /* a stats poll failed: pinned bytes unknown */
    int alive;                /* the daemon answered the final ping */
    bc_stats bend;            /* its block counters at the end */
} load_run;

/* Every client's tallies summed for the report. */
typedef struct totals {
    uint64_t sorts, wrong, unexp, sent_mk, corrupted, on_device;
    uint64_t by_xport[LX_COUNT], vanished[LX_COUNT], nvanished, demoted, blocks_made;
    uint64_t by_dtype[6], by_payload[5], mk_sent[MALFORMED_COUNT], mk_ok[MALFORMED_COUNT];
    tally errs;
    char algo[MAX_ALGOS * 2][48];
    uint64_t algo_n[MAX_ALGOS * 2];
    int nalgo;
    lat *all;                 /* every latency, by size class then time */
    size_t nlat;
} totals;

/* The socket: -S, else $GSORTD_SOCKET, else the default (an empty name is
 * none). 0, or -1 on a usage error (said on stderr). */
static int pick_socket(lo_opts *o)
{
    if (!o->socket)
        o->socket = getenv("GSORTD_SOCKET");
    if (o->socket && !*o->socket)
        o->socket = NULL;
    if (bc_socket_shown(o->socket, o->socket_shown, sizeof o->socket_shown, "gsort-load",
                        "-S") < 0)
        return -1;
    return 0;
}

/* The daemon (its pid into r->pid) and the run's plan, as the report's
 * first lines. 0, or -1 when the daemon does not answer (said). */
static int print_header(load_run *r)
{
    const lo_opts *o = &r->o;
    char desc[1024];
    r->pid = -1;
    if (bc_daemon_desc(o->socket, o->timeout_s, "gsort-load", &r->pid, desc, sizeof desc) < 0)
        return -1;
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    printf("# gsort-load %s, socket %s, daemon pid %ld: %s\n", date, o->socket_shown, r->pid,
           desc);
    if (o->duration_s > 0)
        printf("# %d clients x (%d warm-up requests + %g s)", o->clients, o->warmup,
               o->duration_s);
    else
        printf("# %d clients x (%d warm-up + %d) requests", o->clients, o->warmup, o->requests);
    if (o->min_log2)
        printf(", n log-uniform in 2^%d..2^%d", o->min_log2, o->max_log2);
    else
        printf(", n log-uniform in 0..2^%d", o->max_log2);
    printf(", %d%% malformed, seed %" PRIu64 ", reply timeout %g s", o->malformed_pct, o->seed,
           o->timeout_s);
    if (o->device >= 0)
        printf(", %d%% of sorts name device %d", o->device_pct, o->device);
    if (o->vanish_pct)
        printf(", %d%% of sorts vanish", o->vanish_pct);
    if (o->block_max_log2 < o->max_log2)
        printf(", blocks up to 2^%d keys", o->block_max_log2);
    if (o->racers)
        printf(", %d racing clients in the main phase", o->racers);
    printf("\n");
    fflush(stdout);
    return 0;
}

/* The daemon's RSS and pinned bytes before any client. 0, or -1 when its
 * RSS, asked for, cannot be read (said). */
static int take_start(load_run *r)
{
    r->rss0 = own_rss(&r->o, r->pid, &r->mon);
    if (r->o.check_rss && r->rss0 < 0) {
        fprintf(stderr, "gsort-load: cannot read VmRSS from /proc/%ld/status (daemon on another "
                "host or pid namespace? use --no-rss)\n", r->pid);
        return -1;
    }
    r->pin0 = pinned_now(&r->o, &r->mon, NULL);
    return 0;
}

/* The clients, each connected, their threads waiting at the barrier for
 * the warm-up. 0, or -1 (said). */
static int start_clients(load_run *r)
{
    const lo_opts *o = &r->o;
    r->cl = calloc((size_t)o->clients, sizeof *r->cl);
    if (!r->cl) {
        fprintf(stderr, "gsort-load: out of memory\n");
        return -1;
    }
    pthread_barrier_init(&g_bar, NULL, (unsigned)o->clients + 1);
    for (int i = 0; i < o->clients; i++) {
        client *c = &r->cl[i];
        c->o = o;
        c->id = i;
        c->rng = o->seed ^ (UINT64_C(0x5851f42d4c957f2d) * (uint64_t)(i + 1));
        lx_init(&c->x, o->block_max_log2);
    }
    for (int i = 0; i < o->clients; i++)
        if (reconnect(&r->cl[i]) < 0)
            return -1;
    for (int i = 0; i < o->clients; i++) {
        if (pthread_create(&r->cl[i].tid, NULL, client_main, &r->cl[i]) != 0) {
            fprintf(stderr, "gsort-load: cannot start client thread %d\n", i);
            /* the barrier counts every client: without them all, none can run */
            abort();
        }
        r->started++;
    }
    return 0;
}

/* The warm-up, then the daemon's RSS and pinned bytes after it. */
static void warm_up(load_run *r)
{
    r->w0 = gs_now_ms();
    pthread_barrier_wait(&g_bar);   /* warm-up starts */
    pthread_barrier_wait(&g_bar);
    pthread_barrier_wait(&g_bar);   /* warm-up done */
    r->w1 = gs_now_ms();
    quiesce(&r->o, &r->mon, (uint64_t)r->o.clients + 1);   /* theirs and the stats one */
    r->rss1 = own_rss(&r->o, r->pid, &r->mon);
    r->pin1 = pinned_now(&r->o, &r->mon, NULL);
    /* progress as it happens, so a run stopped from outside still leaves
     * its figures */
    if (!r->o.quiet) {
        printf("# warm-up done in %.1f s: daemon RSS %.1f MiB, pinned %.1f MiB\n",
               (r->w1 - r->w0) / 1e3, r->rss1 / 1024.0, r->pin1 / 1048576.0);
        fflush(stdout);
    }
}

/* The racers, then the clients' main phase and its clock. */
static void start_main(load_run *r)
{
    const lo_opts *o = &r->o;
    r->racer = o->racers ? calloc((size_t)o->racers, sizeof *r->racer) : NULL;
    if (o->racers && !r->racer) {
        fprintf(stderr, "gsort-load: out of memory\n");
        abort();   /* the clients wait at the barrier */
    }
    while (r->nracers < o->racers && lr_start(&r->racer[r->nracers], o, r->nracers) == 0)
        r->nracers++;
    g_t0 = gs_now_ms();
    g_deadline = g_t0 + o->duration_s * 1e3;
    pthread_barrier_wait(&g_bar);   /* main phase starts */
}

/* Until every client is past its main phase: RSS and pinned bytes at every
 * tenth of it (a leak climbs with the requests, a high-water mark levels
 * off), and the pinned peak before the last tenth, also polled about once
 * a second. */
static void watch_main(load_run *r)
{
    const lo_opts *o = &r->o;
    r->pin_peak = r->pin1;
    r->dec = 1;
    r->pin_unread = r->pin0 < 0 || r->pin1 < 0;
    r->rss_at[0] = r->rss1;
    r->pin_at[0] = r->pin1;
    double last_poll = g_t0;
    while (atomic_load(&g_finished) < o->clients) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        int tenth = tenths_done(o);
        for (; r->dec <= 10 && r->dec <= tenth; r->dec++) {
            int d = r->dec;
            r->rss_at[d] = own_rss(o, r->pid, &r->mon);
            r->pin_at[d] = pinned_now(o, &r->mon, NULL);
            r->pin_unread |= r->pin_at[d] < 0;
            if (d < 10 && r->pin_at[d] > r->pin_peak)
                r->pin_peak = r->pin_at[d];
            if (!o->quiet) {
                printf("# tenth %d at %.0f s: %lu requests, daemon RSS %.1f MiB, pinned %.1f "
                       "MiB\n", d, (gs_now_ms() - g_t0) / 1e3, atomic_load(&g_done),
                       r->rss_at[d] / 1024.0, r->pin_at[d] / 1048576.0);
                fflush(stdout);
            }
        }
        if (tenth < 9 && gs_now_ms() - last_poll >= 1000) {
            long long v = pinned_now(o, &r->mon, NULL);
            r->pin_unread |= v < 0;
            if (v > r->pin_peak)
                r->pin_peak = v;
            last_poll = gs_now_ms();
        }
    }
}

/* The end: racers stopped, clients joined, the daemon's figures with the
 * clients still connected, its final ping, and then its pinned bytes once
 * every client has hung up. */
static void end_main(load_run *r)
{
    const lo_opts *o = &r->o;
    pthread_barrier_wait(&g_bar);   /* main phase done */
    g_t1 = gs_now_ms();
    for (int i = 0; i < r->nracers; i++)
        lr_stop(&r->racer[i]);
    for (int i = 0; i < r->started; i++)
        pthread_join(r->cl[i].tid, NULL);
    quiesce(o, &r->mon, (uint64_t)o->clients + 1);
    r->rss2 = own_rss(o, r->pid, &r->mon);
    r->rss2_vm = o->check_rss ? bc_rss_kib(r->pid) : -1;
    r->shm2 = o->check_rss ? bc_status_kib(r->pid, "RssShmem") : -1;
    memset(&r->bend, 0, sizeof r->bend);
    r->pin2 = pinned_now(o, &r->mon, &r->bend);
    r->alive = ping_ok(o);
    /* Every client hangs up: the daemon must let go of all their blocks
     * (a vanished request may still be sorting in one: wait up to the
     * reply timeout). */
    for (int i = 0; i < o->clients; i++) {
        if (r->cl[i].c)
            gs_client_close(r->cl[i].c);
        r->cl[i].c = NULL;
    }
    double pin_wait0 = gs_now_ms();
    for (;;) {   /* until back where it was, or within the slack for 5 s */
        r->pin3 = pinned_now(o, &r->mon, NULL);
        double w = gs_now_ms() - pin_wait0;
        if ((r->pin3 >= 0 && r->pin0 >= 0 && r->pin3 <= r->pin0 + o->pin_mib * 1048576 &&
             (r->pin3 <= r->pin0 || w > 5e3)) || w > o->timeout_s * 1e3)
            break;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    r->pin_wait = (gs_now_ms() - pin_wait0) / 1e3;
    r->pin_unread |= r->pin2 < 0 || r->pin3 < 0;
}

/* One client's tallies into *t (its latencies apart). */
static void sum_client(const client *c, totals *t)
{
    t->sorts += c->sorts;
    for (int k = 0; k < LX_COUNT; k++) {
        t->by_xport[k] += c->by_xport[k];
        t->vanished[k] += c->vanished[k];
    }
    t->demoted += c->demoted;
    t->blocks_made += c->x.regrow;
    t->wrong += c->wrong;
    t->corrupted += c->corrupted;
    t->on_device += c->on_device;
    t->unexp += c->unexpected;
    t->nlat += c->nlat;
    for (int k = 0; k < 6; k++)
        t->by_dtype[k] += c->by_dtype[k];
    for (int k = 0; k < 5; k++)
        t->by_payload[k] += c->by_payload[k];
    for (int k = 0; k < MALFORMED_COUNT; k++) {
        t->mk_sent[k] += c->mk_sent[k];
        t->mk_ok[k] += c->mk_ok[k];
        t->sent_mk += c->mk_sent[k];
    }
    for (int k = 0; k < c->errs.n; k++)
        for (uint64_t j = 0; j < c->errs.count[k]; j++)
            tally_add(&t->errs, c->errs.name[k]);
    for (int k = 0; k < c->nalgo; k++) {
        int j;
        for (j = 0; j < t->nalgo && strcmp(t->algo[j], c->algo[k]); j++)
            ;
        if (j == t->nalgo) {
            if (t->nalgo == MAX_ALGOS * 2)
                continue;
            snprintf(t->algo[t->nalgo++], sizeof t->algo[0], "%s", c->algo[k]);
        }
        t->algo_n[j] += c->algo_n[k];
    }
}

/* Every client's tallies into *t, and their latencies sorted into t->all
 * (the caller frees it). 0, or -1 out of memory (said). */
static int sum_clients(const load_run *r, totals *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < r->o.clients; i++)
        sum_client(&r->cl[i], t);
    t->nvanished = t->vanished[LX_INLINE] + t->vanished[LX_ONESHOT] + t->vanished[LX_BLOCK];
    t->all = malloc((t->nlat ? t->nlat : 1) * sizeof *t->all);
    if (!t->all) {
        fprintf(stderr, "gsort-load: out of memory\n");
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < r->o.clients; i++) {
        memcpy(t->all + k, r->cl[i].lat, r->cl[i].nlat * sizeof *t->all);
        k += r->cl[i].nlat;
    }
    qsort(t->all, t->nlat, sizeof *t->all, cmp_lat);
    return 0;
}

/* What was sent, how, what served it, and the malformed kinds with their
 * answers (left out with --quiet). */
static void report_mix(const lo_opts *o, const totals *t)
{
    printf("sorts sent: %" PRIu64 " inline, %" PRIu64 " memfd; dtype", t->by_xport[LX_INLINE],
           t->by_xport[LX_ONESHOT] + t->by_xport[LX_BLOCK]);
    for (int i = 0; i < 6; i++)
        printf(" %s %" PRIu64, gs_dtype_name((gs_dtype)i), t->by_dtype[i]);
    printf("; values");
    for (int p = 0; p < 5; p++)
        printf(" %s %" PRIu64, gs_payload_name((gs_payload)p), t->by_payload[p]);
    printf("\nmemfd sorts: %" PRIu64 " one-shot, %" PRIu64 " registered block (%" PRIu64
           " blocks made; %" PRIu64 " block draws above 2^%d keys went one-shot)\n",
           t->by_xport[LX_ONESHOT], t->by_xport[LX_BLOCK], t->blocks_made, t->demoted,
           o->block_max_log2);
    if (o->vanish_pct)
        printf("vanished (sent whole, hung up unread): %" PRIu64 " inline, %" PRIu64
               " one-shot memfd, %" PRIu64 " registered block\n", t->vanished[LX_INLINE],
               t->vanished[LX_ONESHOT], t->vanished[LX_BLOCK]);
    printf("served by (%" PRIu64 " on a device):", t->on_device);
    for (int i = 0; i < t->nalgo; i++)
        printf(" %s %" PRIu64, t->algo[i], t->algo_n[i]);
    printf("\nmalformed requests (expected answer: sent / answered as expected):\n");
    for (int m = 0; m < MALFORMED_COUNT; m++)
        printf("  %-12s %-44s %-26s %6" PRIu64 " / %" PRIu64 "\n", malformed_kinds[m].name, malformed_kinds[m].what,
               malformed_kinds[m].code ? malformed_kinds[m].closes ? "error + close" : "error, kept" : "(no reply)",
               t->mk_sent[m], t->mk_ok[m]);
    printf("  (codes: bad_json/bad_dtype/bad_bytes/unsealed GS_EINVAL, bad_version "
           "GS_EUNSUPPORTED, big_header GS_ETOOBIG)\n");
}

/* Latency percentiles per size class (left out with --quiet). */
static void report_latency(const totals *t)
{
    const lat *all = t->all;
    size_t nlat = t->nlat;
    printf("latency, client wall ms per sort, main phase:\n");
    printf("  %-11s %7s %9s %9s %9s %9s\n", "n", "count", "p50", "p90", "p99", "max");
    for (size_t a = 0; a < nlat;) {
        size_t b = a;
        while (b < nlat && all[b].cls == all[a].cls)
            b++;
        printf("  %-11s %7zu %9.3f %9.3f %9.3f %9.3f\n", class_name[all[a].cls], b - a,
               pctl(all + a, b - a, .5), pctl(all + a, b - a, .9), pctl(all + a, b - a, .99),
               all[b - 1].ms);
        a = b;
    }
}

/* The requests: counts, the mix, latency, rate, wrong answers and
 * unexpected errors. */
static void report_requests(const load_run *r, const totals *t)
{
    const lo_opts *o = &r->o;
    uint64_t total = t->sorts + t->sent_mk + t->nvanished;
    printf("requests: %" PRIu64 " (%" PRIu64 " sorts answered, %" PRIu64 " malformed", total,
           t->sorts, t->sent_mk);
    if (o->vanish_pct)
        printf(", %" PRIu64 " vanished", t->nvanished);
    printf("); warm-up %.2f s, main phase %.2f s\n", (r->w1 - r->w0) / 1e3, (g_t1 - g_t0) / 1e3);
    if (!o->quiet) {
        report_mix(o, t);
        report_latency(t);
    }
    double secs = (g_t1 - g_t0) / 1e3;
    uint64_t main_reqs = atomic_load(&g_done);
    printf("requests/s: %.1f (%" PRIu64 " main-phase requests in %.2f s, %d clients)\n",
           secs > 0 ? (double)main_reqs / secs : 0, main_reqs, secs, o->clients);
    if (o->corrupt_every)
        printf("replies spoiled on purpose (--corrupt-every %d): %" PRIu64 "\n", o->corrupt_every,
               t->corrupted);
    printf("wrong answers: %" PRIu64 "\n", t->wrong);
    printf("unexpected errors: %" PRIu64, t->unexp);
    for (int i = 0; i < t->errs.n; i++)
        printf("%s %s %" PRIu64, i ? "," : " (", t->errs.name[i], t->errs.count[i]);
    printf("%s\n", t->errs.n ? ")" : "");
}

/* The daemon's RSS against its bound: 1 when within it (or not checked). */
static int report_rss(const load_run *r)
{
    const lo_opts *o = &r->o;
    if (!o->check_rss) {
        printf("daemon RSS: not checked (--no-rss)\n");
        return 1;
    }
    double bound = (double)r->rss1 * (1 + o->rss_pct / 100) + o->rss_mib * 1024;
    int rss_ok = r->rss1 >= 0 && r->rss2 >= 0 && (double)r->rss2 <= bound;
    printf("daemon RSS: before %.1f MiB, after warm-up %.1f MiB, end %.1f MiB; bound %.1f MiB "
           "(warm-up + %g%% + %g MiB): %s\n",
           r->rss0 / 1024.0, r->rss1 / 1024.0, r->rss2 / 1024.0, bound / 1024, o->rss_pct,
           o->rss_mib, rss_ok ? "ok" : "EXCEEDED");
    if (r->dec > 1) {
        printf("daemon RSS (MiB) at each tenth of the main phase:");
        for (int i = 0; i < r->dec; i++)
            printf(" %.1f", r->rss_at[i] / 1024.0);
        printf("\n");
    }
    printf("  (RSS less RssShmem and the daemon's caches for reuse, stats memory.cached; "
           "at the end VmRSS %.1f MiB, of it %.1f MiB client memfds)\n",
           r->rss2_vm / 1024.0, r->shm2 > 0 ? r->shm2 / 1024.0 : 0.0);
    return rss_ok;
}

/* The daemon's pinned bytes against their bounds: 1 when within them. */
static int report_pinned(const load_run *r)
{
    const lo_opts *o = &r->o;
    double mib = 1048576, pslack = o->pin_mib * mib;
    int pin_ok = !r->pin_unread && r->pin2 <= r->pin_peak + pslack && r->pin3 <= r->pin0 + pslack;
    if (r->pin_unread) {
        printf("daemon pinned bytes: could not be read (stats failed): FAIL\n");
        return pin_ok;
    }
    printf("daemon pinned MiB: before %.1f, after warm-up %.1f, end %.1f; bound %.1f (peak "
           "before the last tenth + %g MiB): %s\n",
           r->pin0 / mib, r->pin1 / mib, r->pin2 / mib, (r->pin_peak + pslack) / mib, o->pin_mib,
           r->pin2 <= r->pin_peak + pslack ? "ok" : "EXCEEDED");
    if (r->dec > 1) {
        printf("daemon pinned MiB at each tenth of the main phase:");
        for (int i = 0; i < r->dec; i++)
            printf(" %.1f", r->pin_at[i] / mib);
        printf("\n");
    }
    printf("daemon pinned MiB once the clients hung up: %.1f after %.1f s; bound %.1f "
           "(before + %g MiB): %s\n",
           r->pin3 / mib, r->pin_wait, (r->pin0 + pslack) / mib, o->pin_mib,
           r->pin3 <= r->pin0 + pslack ? "ok" : "EXCEEDED");
    printf("daemon blocks at the end: %" PRIu64 " mapped, %" PRIu64 " reused, %" PRIu64
           " pinned, %" PRIu64 " refused; max_pinned_bytes %.1f MiB\n",
           r->bend.mapped, r->bend.reused, r->bend.pinned, r->bend.refused,
           r->bend.max_pinned_bytes / mib);
    return pin_ok;
}

/* The report and its verdict: 0 when the run passed, -1 when it failed
 * (or the report could not be made). */
static int report(const load_run *r)
{
    totals t;
    if (sum_clients(r, &t) < 0)
        return -1;
    report_requests(r, &t);
    int rss_ok = report_rss(r);
    int pin_ok = report_pinned(r);
    uint64_t lost = r->o.racers ? lr_report(r->racer, r->nracers) : 0;
    int racers_ok = r->nracers == r->o.racers && !lost;
    printf("daemon answers ping at the end: %s\n", r->alive ? "yes" : "NO");
    int pass = !t.wrong && !t.unexp && r->alive && rss_ok && pin_ok && racers_ok;
    printf("RESULT: %s\n", pass ? "PASS" : "FAIL");
    free(t.all);
    return pass ? 0 : -1;
}

static void run_free(load_run *r)
{
    free(r->racer);
    for (int i = 0; r->cl && i < r->o.clients; i++) {
        if (r->cl[i].c)
            gs_client_close(r->cl[i].c);
        lx_free(&r->cl[i].x);
        free(r->cl[i].lat);
    }
    free(r->cl);
    gs_client_close(r->mon);
}

int main(int argc, char **argv)
{
    load_run r;
    memset(&r, 0, sizeof r);
    int prc = lo_parse(argc, argv, &r.o);
    if (prc)
        return prc == 1 ? 0 : 2;
    if (pick_socket(&r.o) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    int rc = 1;
    if (print_header(&r) == 0 && take_start(&r) == 0 && start_clients(&r) == 0) {
        warm_up(&r);
        start_main(&r);
        watch_main(&r);
        end_main(&r);
        rc = report(&r) == 0 ? 0 : 1;
    }
    run_free(&r);
    return rc;
}
