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
 * The malformed requests and their documented answers are
 * bench/malformed.c, the talk with the daemon besides the requests (socket,
 * info, ping, RSS) bench/benchclient.c; what stays here is one concept, the
 * load run itself: the client threads with their tallies, the phases, and
 * the report that sums them, which share the client record.
 *
 * Exit status 0 only if no answer was wrong, no error was unexpected, the
 * daemon still answers a ping at the end and its RSS stayed bounded; 1
 * otherwise, 2 on a usage error. */
#include "config.h"
#include "benchclient.h"
#include "benchutil.h"
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

#define MAX_LOG2_LIMIT 24
#define NCLASS 6            /* latency size classes: n <= 16, 256, 4096, 65536, 2^20, more */
#define MAX_ALGOS 16

static const char *const class_name[NCLASS] = { "0..2^4", "2^4..2^8", "2^8..2^12",
                                                "2^12..2^16", "2^16..2^20", ">2^20" };

typedef struct opts {
    const char *socket;
    char socket_shown[GS_PATHS_SOCKET_MAX];
    int clients, requests, warmup, max_log2, malformed_pct;
    int device, device_pct;   /* this share of sorts names daemon device `device` */
    int corrupt_every;        /* checks the checker: spoil every Kth reply (0: never) */
    double timeout_s, rss_pct, rss_mib;
    uint64_t seed;
    int check_rss, quiet;
} opts;

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
    const opts *o;
    pthread_t tid;
    int id;
    gs_client *c;
    uint64_t rng;
    /* inline buffers, max size */
    void *keys, *vals, *in_keys;
    /* results */
    uint64_t sorts, inl, memfd, wrong, unexpected, corrupted, on_device;
    uint64_t by_dtype[6], by_payload[5];
    uint64_t mk_sent[MALFORMED_COUNT], mk_ok[MALFORMED_COUNT];
    tally errs;               /* unexpected, by code */
    lat *lat;
    size_t nlat;
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

static void one_sort(client *cl, int timed)
{
    const opts *o = cl->o;
    uint64_t *s = &cl->rng;
    gs_dtype t = (gs_dtype)(bu_splitmix(s) % 6);
    gs_payload p = (gs_payload)(bu_splitmix(s) % 5);
    int desc = bu_splitmix(s) & 1, stable = bu_splitmix(s) % 3 == 0;
    int memfd = bu_splitmix(s) & 1, few = bu_splitmix(s) % 4 == 0;
    int dev = o->device >= 0 && (int)(bu_splitmix(s) % 100) < o->device_pct ? o->device : -1;
    /* Untuned, the daemon's plan may well pick the host: a device sort names
     * one of the device algorithms (shellsort is not stable). */
    static const char *const dev_algo[] = { "radix", "mergepath", "shellsort" };
    const char *algo = dev >= 0 ? dev_algo[bu_splitmix(s) % (stable ? 2 : 3)] : NULL;
    size_t n;
    if (bu_splitmix(s) % 32 == 0)
        n = 0;
    else
        n = (size_t)exp2(unit(s) * o->max_log2);
    uint64_t seed = bu_splitmix(s);
    int flags = (desc ? SV_DESC : 0) | (stable ? SV_STABLE : 0) | (few ? SV_FEW : 0);
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p);
    int idx = p == GS_PL_IDX32 || p == GS_PL_IDX64;
    gs_client_shm shm = { .fd = -1 };
    void *keys = cl->keys, *vals = vs ? cl->vals : NULL;
    gs_err err;
    gs_err_clear(&err);
    if (memfd) {
        size_t voff = (n * ks + 7) & ~(size_t)7;
        if (gs_client_shm_alloc_named(&shm, "gsort-load", voff + n * vs, &err) < 0) {
            complain(cl, "memfd of n=%zu: %s", n, err.msg);
            cl->unexpected++;
            tally_add(&cl->errs, "client-memfd");
            return;
        }
        keys = shm.ptr;
        vals = vs && shm.ptr ? (char *)shm.ptr + voff : NULL;
    }
    sv_keysum want;
    sv_fill(t, p, flags, n, keys, vals, seed, &want);
    if (idx && n)
        memcpy(cl->in_keys, keys, n * ks);
    gs_client_sort rq = { .dtype = t, .payload = p, .descending = desc, .stable = stable,
                          .n = n, .keys = keys, .values = vals, .device = dev, .algorithm = algo,
                          .shm = memfd ? &shm : NULL };
    gs_client_result res;
    memset(&res, 0, sizeof res);
    double t0 = gs_now_ms();
    int rc = gs_client_sort_run(cl->c, &rq, &res, &err);
    double t1 = gs_now_ms();
    cl->by_dtype[t]++;
    cl->by_payload[p]++;
    if (memfd)
        cl->memfd++;
    else
        cl->inl++;
    if (rc < 0) {
        cl->unexpected++;
        tally_add(&cl->errs, gs_strerror(rc));
        complain(cl, "sort %s/%s n=%zu %s%s %s%s%s failed: %s", gs_dtype_name(t),
                 gs_payload_name(p), n, desc ? "desc" : "asc", stable ? " stable" : "",
                 memfd ? "memfd" : "inline", algo ? " with " : "", algo ? algo : "", err.msg);
        if (memfd)
            gs_client_shm_free(&shm);
        reconnect(cl);   /* whatever state the stream is in */
        return;
    }
    cl->sorts++;
    if (res.device >= 0)
        cl->on_device++;
    note_algo(cl, &res);
    if (o->corrupt_every && n && cl->sorts % (uint64_t)o->corrupt_every == 0) {
        /* one key's low bit flipped: its encoding changes, so the checksum must */
        ((uint8_t *)keys)[0] ^= 1;
        cl->corrupted++;
    }
    char why[256];
    if (!sv_verify(t, p, flags, n, keys, vals, cl->in_keys, &want, why, sizeof why)) {
        cl->wrong++;
        complain(cl, "WRONG ANSWER: sort %s/%s n=%zu %s%s %s by %s (%s, plan %s): %s",
                 gs_dtype_name(t), gs_payload_name(p), n, desc ? "desc" : "asc",
                 stable ? " stable" : "", memfd ? "memfd" : "inline", res.algorithm,
                 res.device >= 0 ? res.device_name : "host", res.plan, why);
    }
    if (memfd)
        gs_client_shm_free(&shm);
    if (timed) {
        cl->lat[cl->nlat].ms = (float)(t1 - t0);
        cl->lat[cl->nlat].cls = (uint8_t)size_class(n);
        cl->nlat++;
    }
}

/* ---- malformed requests (bench/malformed.c) ---- */

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
static atomic_ulong g_done;   /* main-phase requests done, for the RSS samples */
static atomic_int g_finished; /* clients past their main phase */

static void *client_main(void *arg)
{
    client *cl = arg;
    const opts *o = cl->o;
    for (int phase = 0; phase < 2; phase++) {
        int count = phase ? o->requests : o->warmup;
        pthread_barrier_wait(&g_bar);   /* main: take RSS, start the clock */
        pthread_barrier_wait(&g_bar);
        for (int i = 0; i < count && !cl->fatal; i++) {
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

static int daemon_pid(const opts *o, long *pid, char *desc, size_t dl)
{
    gs_client *c = NULL;
    if (bc_connect(&c, o->socket, o->timeout_s, "gsort-load",
                   "  is gsortd running there? (tools/with-gsortd BUILD_DIR gsort-load ... "
                   "starts a throwaway one)\n") < 0)
        return -1;
    cJSON *info = NULL;
    int rc = bc_info(c, "gsort-load", &info);
    gs_client_close(c);
    if (rc < 0)
        return -1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(info, "pid");
    *pid = cJSON_IsNumber(p) ? (long)p->valuedouble : -1;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(info, "version");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(info, "devices");
    size_t used = (size_t)snprintf(desc, dl, "gsortd %s, devices:",
                                   cJSON_IsString(ver) ? ver->valuestring : "?");
    const cJSON *d;
    int nd = 0;
    cJSON_ArrayForEach(d, devs) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "name");
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(d, "enabled");
        if (used < dl)
            used += (size_t)snprintf(desc + used, dl - used, " %s%s",
                                     cJSON_IsString(name) ? name->valuestring : "?",
                                     cJSON_IsFalse(en) ? " (not enabled)" : "");
        nd++;
    }
    if (!nd && used < dl)
        snprintf(desc + used, dl - used, " none (host sorts only)");
    cJSON_Delete(info);
    if (*pid <= 0) {
        fprintf(stderr, "gsort-load: the info reply names no daemon pid\n");
        return -1;
    }
    return 0;
}

static int ping_ok(const opts *o)
{
    gs_err err;
    gs_err_clear(&err);
    int rc = bc_ping(o->socket, o->timeout_s, &err);
    if (rc < 0)
        fprintf(stderr, "gsort-load: final ping failed: %s\n", err.msg);
    return rc == 0;
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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsort-load [options]\n"
            "Load test of a running gsortd: concurrent clients send mixed sorts (every dtype\n"
            "and payload, asc/desc, stable or not, inline and memfd, n log-uniform in\n"
            "0..2^B) and malformed requests; every answer is checked.\n"
            "  -S, --socket PATH     the daemon's socket (default: $GSORTD_SOCKET, else gsortd's)\n"
            "  -c, --clients N       concurrent client threads (default 8)\n"
            "  -m, --requests M      requests per client after the warm-up (default 200)\n"
            "  -w, --warmup W        warm-up requests per client (default 20)\n"
            "  -B, --max-log2 B      largest n = 2^B (default 16, at most %d)\n"
            "  -p, --malformed PCT   percent of requests that are malformed (default 5)\n"
            "  -s, --seed S          random seed (default 1)\n"
            "  -t, --timeout SEC     longest wait for one reply (default 120)\n"
            "  -d, --device N        daemon device that --device-pct of the sorts name, with\n"
            "                        a device algorithm (radix, mergepath, shellsort)\n"
            "      --device-pct P    percent of sorts sent to --device (default 25)\n"
            "      --corrupt-every K spoil every Kth reply before checking it (tests the\n"
            "                        checker: each must count as a wrong answer)\n"
            "      --rss-slack-pct P RSS bound: end <= warm-up x (1 + P/100) + MiB (default 10)\n"
            "      --rss-slack-mib M ... + M MiB (default 16)\n"
            "      --no-rss          do not read or bound the daemon's RSS (another host/pid ns)\n"
            "  -q, --quiet           only the summary lines\n"
            "Exit status: 0 when every answer is right, every error expected, the daemon\n"
            "answers a ping at the end and its RSS stayed bounded; 1 otherwise; 2 usage.\n",
            MAX_LOG2_LIMIT);
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "gsort-load: %s: '%s' is not a number in %g..%g\n", opt, v ? v : "",
                lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int main(int argc, char **argv)
{
    opts o = { .clients = 8, .requests = 200, .warmup = 20, .max_log2 = 16,
               .malformed_pct = 5, .device = -1, .device_pct = 25, .timeout_s = 120, .rss_pct = 10, .rss_mib = 16, .seed = 1,
               .check_rss = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
#define NUM(lo, hi, dst)                                    \
    do {                                                    \
        if (parse_num(a, v, (lo), (hi), &x) < 0)            \
            return 2;                                       \
        (dst) = x;                                          \
        i++;                                                \
    } while (0)
        if (!strcmp(a, "-S") || !strcmp(a, "--socket")) {
            if (!v) {
                fprintf(stderr, "gsort-load: %s needs a path\n", a);
                return 2;
            }
            o.socket = v;
            i++;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--clients")) NUM(1, 1024, o.clients);
        else if (!strcmp(a, "-m") || !strcmp(a, "--requests")) NUM(0, 1e8, o.requests);
        else if (!strcmp(a, "-w") || !strcmp(a, "--warmup")) NUM(0, 1e8, o.warmup);
        else if (!strcmp(a, "-B") || !strcmp(a, "--max-log2")) NUM(0, MAX_LOG2_LIMIT, o.max_log2);
        else if (!strcmp(a, "-p") || !strcmp(a, "--malformed")) NUM(0, 100, o.malformed_pct);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) NUM(0, 1e18, o.seed);
        else if (!strcmp(a, "-t") || !strcmp(a, "--timeout")) NUM(0.1, 86400, o.timeout_s);
        else if (!strcmp(a, "--rss-slack-pct")) NUM(0, 1000, o.rss_pct);
        else if (!strcmp(a, "--rss-slack-mib")) NUM(0, 1e6, o.rss_mib);
        else if (!strcmp(a, "-d") || !strcmp(a, "--device")) NUM(0, 1023, o.device);
        else if (!strcmp(a, "--device-pct")) NUM(0, 100, o.device_pct);
        else if (!strcmp(a, "--corrupt-every")) NUM(0, 1e9, o.corrupt_every);
        else if (!strcmp(a, "--no-rss")) o.check_rss = 0;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o.quiet = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "gsort-load: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef NUM
    }
    if (!o.socket)
        o.socket = getenv("GSORTD_SOCKET");
    if (o.socket && !*o.socket)
        o.socket = NULL;
    if (bc_socket_shown(o.socket, o.socket_shown, sizeof o.socket_shown, "gsort-load", "-S") < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);

    long pid = -1;
    char desc[1024];
    if (daemon_pid(&o, &pid, desc, sizeof desc) < 0)
        return 1;
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    printf("# gsort-load %s, socket %s, daemon pid %ld: %s\n", date, o.socket_shown, pid, desc);
    printf("# %d clients x (%d warm-up + %d) requests, n log-uniform in 0..2^%d, %d%% malformed, "
           "seed %" PRIu64 ", reply timeout %g s",
           o.clients, o.warmup, o.requests, o.max_log2, o.malformed_pct, o.seed, o.timeout_s);
    if (o.device >= 0)
        printf(", %d%% of sorts name device %d", o.device_pct, o.device);
    printf("\n");
    fflush(stdout);
    long rss0 = o.check_rss ? bc_rss_kib(pid) : -1;
    if (o.check_rss && rss0 < 0) {
        fprintf(stderr, "gsort-load: cannot read VmRSS from /proc/%ld/status (daemon on another "
                "host or pid namespace? use --no-rss)\n", pid);
        return 1;
    }

    size_t maxn = (size_t)1 << o.max_log2;
    client *cl = calloc((size_t)o.clients, sizeof *cl);
    if (!cl) {
        fprintf(stderr, "gsort-load: out of memory\n");
        return 1;
    }
    int rc = 1, started = 0;
    pthread_barrier_init(&g_bar, NULL, (unsigned)o.clients + 1);
    for (int i = 0; i < o.clients; i++) {
        client *c = &cl[i];
        c->o = &o;
        c->id = i;
        c->rng = o.seed ^ (UINT64_C(0x5851f42d4c957f2d) * (uint64_t)(i + 1));
        c->keys = malloc(maxn * 8 + 8);
        c->vals = malloc(maxn * 8 + 8);
        c->in_keys = malloc(maxn * 8 + 8);
        c->lat = malloc(((size_t)o.requests + 1) * sizeof *c->lat);
        if (!c->keys || !c->vals || !c->in_keys || !c->lat) {
            fprintf(stderr, "gsort-load: out of memory for client %d\n", i);
            goto out;
        }
        if (reconnect(c) < 0)
            goto out;
    }
    for (int i = 0; i < o.clients; i++) {
        if (pthread_create(&cl[i].tid, NULL, client_main, &cl[i]) != 0) {
            fprintf(stderr, "gsort-load: cannot start client thread %d\n", i);
            /* the barrier counts every client: without them all, none can run */
            abort();
        }
        started++;
    }
    double w0 = gs_now_ms();
    pthread_barrier_wait(&g_bar);   /* warm-up starts */
    pthread_barrier_wait(&g_bar);
    pthread_barrier_wait(&g_bar);   /* warm-up done */
    double w1 = gs_now_ms();
    long rss1 = o.check_rss ? bc_rss_kib(pid) : -1;
    g_t0 = gs_now_ms();
    pthread_barrier_wait(&g_bar);   /* main phase starts */
    /* RSS at every tenth of the main phase: a leak climbs with the
     * requests, a high-water mark levels off */
    long rss_at[11];
    uint64_t main_total = (uint64_t)o.clients * (uint64_t)o.requests;
    int dec = 1;
    rss_at[0] = rss1;
    while (atomic_load(&g_finished) < o.clients) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        uint64_t d = atomic_load(&g_done);
        while (dec <= 10 && main_total && d * 10 >= (uint64_t)dec * main_total)
            rss_at[dec++] = o.check_rss ? bc_rss_kib(pid) : -1;
    }
    pthread_barrier_wait(&g_bar);   /* main phase done */
    g_t1 = gs_now_ms();
    for (int i = 0; i < started; i++)
        pthread_join(cl[i].tid, NULL);
    long rss2 = o.check_rss ? bc_rss_kib(pid) : -1;
    int alive = ping_ok(&o);

    /* ---- totals ---- */
    uint64_t sorts = 0, inl = 0, mfd = 0, wrong = 0, unexp = 0, sent_mk = 0, corrupted = 0,
             on_device = 0;
    uint64_t by_dtype[6] = { 0 }, by_payload[5] = { 0 }, mk_sent[MALFORMED_COUNT] = { 0 },
             mk_ok[MALFORMED_COUNT] = { 0 };
    tally errs = { .n = 0 };
    char algo[MAX_ALGOS * 2][48];
    uint64_t algo_n[MAX_ALGOS * 2] = { 0 };
    int nalgo = 0;
    size_t nlat = 0;
    for (int i = 0; i < o.clients; i++) {
        client *c = &cl[i];
        sorts += c->sorts;
        inl += c->inl;
        mfd += c->memfd;
        wrong += c->wrong;
        corrupted += c->corrupted;
        on_device += c->on_device;
        unexp += c->unexpected;
        nlat += c->nlat;
        for (int k = 0; k < 6; k++)
            by_dtype[k] += c->by_dtype[k];
        for (int k = 0; k < 5; k++)
            by_payload[k] += c->by_payload[k];
        for (int k = 0; k < MALFORMED_COUNT; k++) {
            mk_sent[k] += c->mk_sent[k];
            mk_ok[k] += c->mk_ok[k];
            sent_mk += c->mk_sent[k];
        }
        for (int k = 0; k < c->errs.n; k++)
            for (uint64_t j = 0; j < c->errs.count[k]; j++)
                tally_add(&errs, c->errs.name[k]);
        for (int k = 0; k < c->nalgo; k++) {
            int j;
            for (j = 0; j < nalgo && strcmp(algo[j], c->algo[k]); j++)
                ;
            if (j == nalgo) {
                if (nalgo == MAX_ALGOS * 2)
                    continue;
                snprintf(algo[nalgo++], sizeof algo[0], "%s", c->algo[k]);
            }
            algo_n[j] += c->algo_n[k];
        }
    }
    lat *all = malloc((nlat ? nlat : 1) * sizeof *all);
    if (!all) {
        fprintf(stderr, "gsort-load: out of memory\n");
        goto out;
    }
    size_t k = 0;
    for (int i = 0; i < o.clients; i++) {
        memcpy(all + k, cl[i].lat, cl[i].nlat * sizeof *all);
        k += cl[i].nlat;
    }
    qsort(all, nlat, sizeof *all, cmp_lat);

    uint64_t total = sorts + sent_mk;
    printf("requests: %" PRIu64 " (%" PRIu64 " sorts answered, %" PRIu64
           " malformed); warm-up %.2f s, main phase %.2f s\n",
           total, sorts, sent_mk, (w1 - w0) / 1e3, (g_t1 - g_t0) / 1e3);
    if (!o.quiet) {
        printf("sorts sent: %" PRIu64 " inline, %" PRIu64 " memfd; dtype", inl, mfd);
        for (int t = 0; t < 6; t++)
            printf(" %s %" PRIu64, gs_dtype_name((gs_dtype)t), by_dtype[t]);
        printf("; values");
        for (int p = 0; p < 5; p++)
            printf(" %s %" PRIu64, gs_payload_name((gs_payload)p), by_payload[p]);
        printf("\nserved by (%" PRIu64 " on a device):", on_device);
        for (int i = 0; i < nalgo; i++)
            printf(" %s %" PRIu64, algo[i], algo_n[i]);
        printf("\nmalformed requests (expected answer: sent / answered as expected):\n");
        for (int m = 0; m < MALFORMED_COUNT; m++)
            printf("  %-12s %-44s %-26s %6" PRIu64 " / %" PRIu64 "\n", malformed_kinds[m].name, malformed_kinds[m].what,
                   malformed_kinds[m].code ? malformed_kinds[m].closes ? "error + close" : "error, kept" : "(no reply)",
                   mk_sent[m], mk_ok[m]);
        printf("  (codes: bad_json/bad_dtype/bad_bytes/unsealed GS_EINVAL, bad_version "
               "GS_EUNSUPPORTED, big_header GS_ETOOBIG)\n");
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
    double secs = (g_t1 - g_t0) / 1e3;
    uint64_t main_reqs = (uint64_t)o.clients * (uint64_t)o.requests;
    printf("requests/s: %.1f (%" PRIu64 " main-phase requests in %.2f s, %d clients)\n",
           secs > 0 ? (double)main_reqs / secs : 0, main_reqs, secs, o.clients);
    if (o.corrupt_every)
        printf("replies spoiled on purpose (--corrupt-every %d): %" PRIu64 "\n", o.corrupt_every,
               corrupted);
    printf("wrong answers: %" PRIu64 "\n", wrong);
    printf("unexpected errors: %" PRIu64, unexp);
    for (int i = 0; i < errs.n; i++)
        printf("%s %s %" PRIu64, i ? "," : " (", errs.name[i], errs.count[i]);
    printf("%s\n", errs.n ? ")" : "");
    int rss_ok = 1;
    if (o.check_rss) {
        double bound = (double)rss1 * (1 + o.rss_pct / 100) + o.rss_mib * 1024;
        rss_ok = rss1 >= 0 && rss2 >= 0 && (double)rss2 <= bound;
        printf("daemon RSS: before %.1f MiB, after warm-up %.1f MiB, end %.1f MiB; bound %.1f MiB "
               "(warm-up + %g%% + %g MiB): %s\n",
               rss0 / 1024.0, rss1 / 1024.0, rss2 / 1024.0, bound / 1024, o.rss_pct, o.rss_mib,
               rss_ok ? "ok" : "EXCEEDED");
        if (dec > 1) {
            printf("daemon RSS (MiB) at each tenth of the main phase:");
            for (int i = 0; i < dec; i++)
                printf(" %.1f", rss_at[i] / 1024.0);
            printf("\n");
        }
    } else {
        printf("daemon RSS: not checked (--no-rss)\n");
    }
    printf("daemon answers ping at the end: %s\n", alive ? "yes" : "NO");
    int pass = !wrong && !unexp && alive && rss_ok;
    printf("RESULT: %s\n", pass ? "PASS" : "FAIL");
    rc = pass ? 0 : 1;
    free(all);
out:
    for (int i = 0; i < o.clients; i++) {
        if (cl[i].c)
            gs_client_close(cl[i].c);
        free(cl[i].keys);
        free(cl[i].vals);
        free(cl[i].in_keys);
        free(cl[i].lat);
    }
    free(cl);
    return rc;
}
