/* gsort-throughput: many clients, every GPU (issue 37). K client threads,
 * each on its own connection with its own memory, sort through a running
 * gsortd for a set time: keys of one dtype (with values, or an argsort),
 * sizes from a list that each client cycles through, sent through the
 * client's registered block (one memfd kept and sent again every time,
 * which the daemon keeps mapped and pinned from its second use on, as it
 * does gsort_alloc memory: daemon/serve/gs_blocks.c), a one-shot memfd
 * (made for each request and mapped by the daemon for that request only)
 * or inline on the socket. Every client refills its keys before each sort
 * (its own time, reported apart from the daemon's) and checks every reply
 * (bench/sortverify.h). Then it prints, per device that served and for the
 * host sort pool, the sorts, keys, share and queue-time percentiles the
 * replies report, and the totals over the wall time (sorts/s, Gkeys/s,
 * errors, wrong answers); and, after the load, the PCIe floor this program
 * measures itself with OpenCL (bench/pcie.c: an upload and a download in
 * flight together, per GPU and on all at once) beside the Gkeys/s the run
 * achieved. Exit status 0 when every request succeeded and every answer
 * was right, 1 otherwise, 2 on a usage error. */
#include "config.h"
#include "benchclient.h"
#include "benchutil.h"
#include "pcie.h"
#include "sortverify.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_paths.h"
#include "gs_types.h"

#define PROG "gsort-throughput"
#define MAX_LOG2 32          /* as netbench: the daemon refuses what it cannot hold */
#define MAX_SIZES 64
#define MAX_PCIE 64
#define MAX_DEV 64           /* device names kept for the report */
#define MAX_ALGOS 32         /* the last one stands for any further name */
#define DEV_HOST (-1)        /* a reply's device: the host sort pool */
#define DEV_SPLIT (-2)       /* a request split over several devices */
#define MAX_MESSAGES 10      /* failures and wrong answers told on stderr, then counted */
#define PCIE_REPS 5
/* the floor's transfers: the largest request's keys, but never so small
 * that a transfer's latency (which concurrent requests hide from each
 * other) stands for the bandwidth, nor larger than saturates the bus */
#define PCIE_MIN_BYTES ((size_t)16 << 20)
#define PCIE_MAX_BYTES ((size_t)256 << 20)

enum { XP_REGISTERED, XP_MEMFD, XP_INLINE };
static const char *const xp_names[] = { "registered", "memfd", "inline" };
enum { PCIE_GPUS, PCIE_NONE, PCIE_LIST };

typedef struct opts {
    const char *socket;          /* NULL: the client's default */
    char socket_shown[GS_PATHS_SOCKET_MAX];
    int clients, seconds, xport;
    gs_dtype dtype;
    gs_payload payload;
    int sizes[MAX_SIZES], nsizes, max_log2;
    const char *algorithm;       /* NULL: the daemon's plan */
    int device;                  /* -1: any */
    int pcie_mode, pcie[MAX_PCIE], npcie;
    int csv, verify;
    int refill;                  /* --refill: REFILL_RANDOM, _XOR, _NONE */
    uint64_t seed;
} opts;

/* One reply, as the report needs it. */
typedef struct rec {
    uint64_t n;
    float queue_ms, total_ms, e2e_ms;
    int16_t dev;                 /* a device index, DEV_HOST or DEV_SPLIT */
    uint8_t algo;                /* index into g_algos */
} rec;

enum { REFILL_RANDOM, REFILL_XOR, REFILL_NONE };

typedef struct client {
    const opts *o;
    pthread_t tid;
    int id;
    gs_client *c;
    void *keys, *vals, *in_keys; /* inline arrays (registered: inside the block) */
    gs_client_shm block, once;   /* the registered block; the one-shot memfd */
    uint64_t seed;
    rec *recs;
    size_t nrec, cap;
    uint64_t errors, wrong;
    double refill_ms, check_ms, end_ms;
    size_t last_n;               /* keys of its last reply in its arrays (0: none) */
    sv_keysum last_want;         /* their checksums (--refill none sends them again) */
    int gone;                    /* stopped early: no connection, no memory */
} client;

/* What the clients share: the start, and the names the replies carry. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_go;
static double g_t0, g_deadline;
static char g_devs[MAX_DEV][128];
static char g_algos[MAX_ALGOS][32];
static int g_nalgos;
static atomic_int g_messages;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [options]\n"
            "Many clients against a running gsortd for a set time: sorts, Gkeys/s and\n"
            "queue times per device from the replies, then the PCIe floor measured in the\n"
            "same run, after the load (an upload and a download in flight together, per\n"
            "GPU and on all at once). Every reply is checked.\n"
            "  --socket PATH          the daemon's socket (default: $GSORTD_SOCKET, else\n"
            "                         gsortd's default socket)\n"
            "  --clients K            client threads, each its own connection (default 16)\n"
            "  --seconds S            how long the clients send (default 10)\n"
            "  --transport T          registered (a memfd per client, sent again every\n"
            "                         time: kept and pinned by the daemon), memfd (a new\n"
            "                         memfd every request) or inline (default registered)\n"
            "  --dtype T              u32 u64 f32 f64 i32 i64 (default u32)\n"
            "  --values P             none u32 u64 idx32 idx64 (default none)\n"
            "  --sizes LIST           log2 sizes, each client cycling through them: a comma\n"
            "                         list of numbers and ranges A-B (default 24)\n"
            "  --algorithm NAME       force an algorithm (default: the daemon's plan)\n"
            "  --device N             force the daemon's device N (default: any)\n"
            "  --pcie-devices L       OpenCL device indices for the PCIe floor: a comma list,\n"
            "                         all (every GPU) or none (default all: every GPU\n"
            "                         found; none when there is no GPU)\n"
            "  --csv                  comma-separated rows (comments start with '#')\n"
            "  --seed S               random seed (default 12345)\n"
            "  --no-verify            do not check the replies (default: every one is)\n"
            "  --refill R             random (new random keys every request, the default)\n"
            "                         or xor (keys alone, registered or inline: the last\n"
            "                         reply's keys with every bit flipped by one random\n"
            "                         word, a new unsorted input made in one fast pass)\n"
            "                         or none (keys alone, registered or inline: the last\n"
            "                         reply's sorted keys sent again; the client touches\n"
            "                         nothing but to check, the daemon's ceiling)\n"
            "  --help                 this text\n"
            "Against a throwaway daemon:\n"
            "  tools/with-gsortd BUILD sh -c '\"$0\" --socket \"$GSORTD_SOCKET\" \"$@\"' \\\n"
            "      BUILD/bench/" PROG " [options]\n"
            "Exit status: 0 when every request succeeded and every answer was right, 1\n"
            "otherwise, 2 on a usage error.\n");
}

/* ---- command line ---- */

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, PROG ": %s: '%s' is not an integer in %ld..%ld\n", opt, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* "A,B-C,..." of integers in lo..hi into out[0..*n) (at most cap). */
static int parse_list(const char *opt, const char *v, long lo, long hi, int *out, int cap,
                      int *n)
{
    char buf[512], *save = NULL;
    if (strlen(v) >= sizeof buf || !*v) {
        fprintf(stderr, PROG ": %s: '%s' is not a list\n", opt, v);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", v);
    *n = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int a, b;
        char *dash = strchr(t + 1, '-');   /* t + 1: not the sign of a number */
        if (dash)
            *dash = '\0';
        if (parse_int(opt, t, lo, hi, &a) < 0 ||
            parse_int(opt, dash ? dash + 1 : t, lo, hi, &b) < 0)
            return -1;
        if (b < a) {
            fprintf(stderr, PROG ": %s: range %d-%d runs backwards\n", opt, a, b);
            return -1;
        }
        for (int x = a; x <= b; x++) {
            if (*n == cap) {
                fprintf(stderr, PROG ": %s: more than %d entries\n", opt, cap);
                return -1;
            }
            out[(*n)++] = x;
        }
    }
    return 0;
}

/* A name of names[0..n) into *out: 0, or -1 after a message. */
static int parse_name(const char *opt, const char *v, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    fprintf(stderr, PROG ": %s: unknown '%s' (", opt, v);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? " " : "", names[i]);
    fprintf(stderr, ")\n");
    return -1;
}

/* One option with its value into o: 0, or -1 after a message. */
static int parse_opt(opts *o, int ch, const char *name, const char *v)
{
    static const char *const dtypes[] = { "u32", "u64", "f32", "f64", "i32", "i64" };
    static const char *const payloads[] = { "none", "u32", "u64", "idx32", "idx64" };
    int i;
    switch (ch) {
    case 'S':
        o->socket = v;
        return 0;
    case 'k':
        return parse_int(name, v, 1, 4096, &o->clients);
    case 's':
        return parse_int(name, v, 1, 86400, &o->seconds);
    case 'd':
        return parse_int(name, v, -1, 1023, &o->device);
    case 'a':
        o->algorithm = v;
        return 0;
    case 'c':
        o->csv = 1;
        return 0;
    case 'n':
        o->verify = 0;
        return 0;
    case 'r':
        return parse_name(name, v, (const char *const[]){ "random", "xor", "none" }, 3,
                          &o->refill);
    case 'e':
        o->seed = strtoull(v, NULL, 0);
        return 0;
    case 't':
        return parse_name(name, v, xp_names, 3, &o->xport);
    case 'y':
        if (parse_name(name, v, dtypes, 6, &i) < 0)
            return -1;
        return gs_dtype_parse(dtypes[i], &o->dtype) ? -1 : 0;
    case 'v':
        if (parse_name(name, v, payloads, 5, &i) < 0)
            return -1;
        return gs_payload_parse(payloads[i], &o->payload) ? -1 : 0;
    case 'z':
        return parse_list(name, v, 0, MAX_LOG2, o->sizes, MAX_SIZES, &o->nsizes);
    case 'p':
        o->pcie_mode = !strcmp(v, "all") ? PCIE_GPUS : !strcmp(v, "none") ? PCIE_NONE : PCIE_LIST;
        return o->pcie_mode != PCIE_LIST ? 0
               : parse_list(name, v, 0, 1023, o->pcie, MAX_PCIE, &o->npcie);
    default:
        return -1;
    }
}

/* argv into o: 0 to run, 1 after --help, -1 after a usage error. */
static int parse_args(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {
        { "socket", required_argument, NULL, 'S' },
        { "clients", required_argument, NULL, 'k' },
        { "seconds", required_argument, NULL, 's' },
        { "transport", required_argument, NULL, 't' },
        { "dtype", required_argument, NULL, 'y' },
        { "values", required_argument, NULL, 'v' },
        { "sizes", required_argument, NULL, 'z' },
        { "algorithm", required_argument, NULL, 'a' },
        { "device", required_argument, NULL, 'd' },
        { "pcie-devices", required_argument, NULL, 'p' },
        { "seed", required_argument, NULL, 'e' },
        { "csv", no_argument, NULL, 'c' },
        { "no-verify", no_argument, NULL, 'n' },
        { "refill", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (opts){ .clients = 16, .seconds = 10, .xport = XP_REGISTERED, .dtype = GS_DT_U32,
                 .payload = GS_PL_NONE, .sizes = { 24 }, .nsizes = 1, .device = -1,
                 .pcie_mode = PCIE_GPUS, .verify = 1, .seed = 12345 };
    int ch, li = -1;
    opterr = 0;
    /* ":": a missing value is told apart from an unknown option */
    while ((ch = getopt_long(argc, argv, ":", lo, &li)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            return 1;
        }
        if (ch == '?' || ch == ':') {
            fprintf(stderr, PROG ": %s '%s' (see --help)\n",
                    ch == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
            return -1;
        }
        char name[48];
        snprintf(name, sizeof name, "--%s", li >= 0 ? lo[li].name : "?");
        if (parse_opt(o, ch, name, optarg) < 0)
            return -1;
        li = -1;
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    o->max_log2 = 0;
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] > o->max_log2)
            o->max_log2 = o->sizes[i];
    if (bc_socket_shown(o->socket, o->socket_shown, sizeof o->socket_shown, PROG, "--socket") < 0)
        return -1;
    return 0;
}

/* ---- the clients ---- */

static int is_idx(gs_payload p)
{
    return p == GS_PL_IDX32 || p == GS_PL_IDX64;
}

/* Where values start in a memfd of n keys: aligned for any payload. */
static size_t vals_offset(size_t n, size_t ks)
{
    return (n * ks + 63) & ~(size_t)63;
}

/* The registered block, for the client's largest request: keys at 0,
 * values at vals_offset. */
static int block_alloc(client *cl, gs_err *err)
{
    const opts *o = cl->o;
    size_t n = (size_t)1 << o->max_log2, ks = gs_dtype_size(o->dtype);
    int rc = gs_client_shm_alloc_named(&cl->block, PROG "-block",
                                       vals_offset(n, ks) + n * gs_payload_size(o->payload), err);
    if (rc < 0)
        cl->block.fd = -1;
    return rc;
}

/* A client's memory for its largest request: the inline arrays or the
 * registered block, and the input keys an argsort's check needs. All of it
 * is touched here, before the clock starts: many threads faulting their
 * first pages in at once take seconds on a small machine (16 x 64 MiB: 7.5 s
 * on the 2-core one, against 0.3 s for every later refill), which the first
 * round of sorts would otherwise count as the clients' time. */
static int client_alloc(client *cl, gs_err *err)
{
    const opts *o = cl->o;
    size_t n = (size_t)1 << o->max_log2, ks = gs_dtype_size(o->dtype);
    size_t vs = gs_payload_size(o->payload);
    if (o->xport == XP_INLINE) {
        cl->keys = malloc(n * ks);
        cl->vals = vs ? malloc(n * vs) : NULL;
        if (!cl->keys || (vs && !cl->vals))
            return gs_err_set(err, GS_ENOMEM, "out of memory for %zu keys", n);
        memset(cl->keys, 0, n * ks);
        if (vs)
            memset(cl->vals, 0, n * vs);
    } else if (o->xport == XP_REGISTERED) {
        int rc = block_alloc(cl, err);
        if (rc < 0)
            return rc;
        memset(cl->block.ptr, 0, cl->block.size);
    }
    if (o->verify && is_idx(o->payload)) {
        if (!(cl->in_keys = malloc(n * ks)))
            return gs_err_set(err, GS_ENOMEM, "out of memory for %zu keys", n);
        memset(cl->in_keys, 0, n * ks);
    }
    return 0;
}

static void client_free(client *cl)
{
    if (cl->c)
        gs_client_close(cl->c);
    if (cl->block.fd >= 0)
        gs_client_shm_free(&cl->block);
    if (cl->once.fd >= 0)
        gs_client_shm_free(&cl->once);
    free(cl->keys);
    free(cl->vals);
    free(cl->in_keys);
    free(cl->recs);
}

/* The index of an algorithm's name in g_algos (added when new). */
static int algo_index(const char *name)
{
    pthread_mutex_lock(&g_lock);
    int i = 0;
    while (i < g_nalgos && strcmp(g_algos[i], name))
        i++;
    if (i == g_nalgos && g_nalgos < MAX_ALGOS) {
        snprintf(g_algos[i], sizeof g_algos[i], "%s", i == MAX_ALGOS - 1 ? "other" : name);
        g_nalgos++;
    }
    if (i == MAX_ALGOS)
        i = MAX_ALGOS - 1;
    pthread_mutex_unlock(&g_lock);
    return i;
}

static int record(client *cl, const gs_client_result *res, size_t n, double e2e)
{
    if (cl->nrec == cl->cap) {
        size_t nc = cl->cap ? cl->cap * 2 : 4096;
        rec *r = realloc(cl->recs, nc * sizeof *r);
        if (!r)
            return GS_ENOMEM;
        cl->recs = r;
        cl->cap = nc;
    }
    int dev = res->nparts ? DEV_SPLIT : res->device >= 0 ? res->device : DEV_HOST;
    if (dev >= 0 && dev < MAX_DEV) {
        pthread_mutex_lock(&g_lock);
        if (!g_devs[dev][0])
            snprintf(g_devs[dev], sizeof g_devs[dev], "%.127s", res->device_name);
        pthread_mutex_unlock(&g_lock);
    }
    cl->recs[cl->nrec++] = (rec){ .n = n, .queue_ms = (float)res->queue_ms,
                                  .total_ms = (float)res->total_ms, .e2e_ms = (float)e2e,
                                  .dev = (int16_t)(dev < INT16_MAX ? dev : INT16_MAX),
                                  .algo = (uint8_t)algo_index(res->algorithm) };
    return 0;
}

/* --refill xor: the last reply's keys, every bit flipped by one random
 * word (a new unsorted input, as hard for a radix sort as random keys),
 * with the checksums of their encoding, in one pass: a client refilling
 * 2^24 random keys per request spends most of its time doing so. */
static void xor_refill(gs_dtype t, size_t n, void *keys, uint64_t c, sv_keysum *want)
{
    uint64_t sum = 0, x = 0;
    const int plain = t == GS_DT_U32 || t == GS_DT_U64;   /* encoding = key */
    if (gs_dtype_size(t) == 4) {
        uint32_t *k = keys, m = (uint32_t)c;
        for (size_t i = 0; i < n; i++) {
            k[i] ^= m;
            uint64_t e = plain ? k[i] : sv_key_enc(t, 0, keys, i);
            sum += e;
            x ^= e;
        }
    } else {
        uint64_t *k = keys;
        for (size_t i = 0; i < n; i++) {
            k[i] ^= c;
            uint64_t e = plain ? k[i] : sv_key_enc(t, 0, keys, i);
            sum += e;
            x ^= e;
        }
    }
    want->sum = sum;
    want->xor = x;
}

/* Room for n keys (the one-shot memfd made here) and the fresh keys in it:
 * the client's own time. */
static int refill(client *cl, size_t n, gs_client_sort *s, sv_keysum *want, gs_err *err)
{
    const opts *o = cl->o;
    size_t ks = gs_dtype_size(o->dtype), vs = gs_payload_size(o->payload);
    s->keys = cl->keys;
    s->values = cl->vals;
    s->shm = NULL;
    if (o->xport != XP_INLINE) {
        gs_client_shm *m = o->xport == XP_REGISTERED ? &cl->block : &cl->once;
        int rc = o->xport == XP_MEMFD
                     ? gs_client_shm_alloc_named(m, PROG, vals_offset(n, ks) + n * vs, err) : 0;
        if (rc < 0) {
            m->fd = -1;
            return rc;
        }
        s->shm = m;
        s->keys = m->ptr;
        s->values = vs ? (char *)m->ptr + vals_offset(o->xport == XP_REGISTERED
                                                      ? (size_t)1 << o->max_log2 : n, ks)
                       : NULL;
    }
    s->n = n;
    int again = o->payload == GS_PL_NONE && o->xport != XP_MEMFD && cl->last_n == n;
    if (again && o->refill == REFILL_XOR)
        xor_refill(o->dtype, n, s->keys, bu_splitmix(&cl->seed), want);
    else if (again && o->refill == REFILL_NONE)
        *want = cl->last_want;      /* the same keys, now sorted: the same sums */
    else
        sv_fill(o->dtype, o->payload, 0, n, s->keys, s->values, bu_splitmix(&cl->seed), want);
    cl->last_n = n;
    cl->last_want = *want;
    if (cl->in_keys)
        memcpy(cl->in_keys, s->keys, n * ks);
    return 0;
}

/* After a failed request: a new connection when the old one cannot carry
 * another, and a new block, which the daemon may still be sorting in. */
static int recover(client *cl)
{
    gs_err err;
    char why[256];
    gs_err_clear(&err);
    if (cl->block.fd >= 0) {
        gs_client_shm_free(&cl->block);
        if (block_alloc(cl, &err) < 0)
            goto fail;
    }
    if (gs_client_stale(cl->c, why, sizeof why)) {
        gs_client_close(cl->c);
        cl->c = NULL;
        if (gs_client_connect(&cl->c, cl->o->socket, &err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, PROG ": client %d stops: %s\n", cl->id, err.msg);
    return -1;
}

/* One sort of n keys: refill, send, check, record. 0, or -1 when the client
 * must stop. */
static int client_sort(client *cl, size_t n)
{
    const opts *o = cl->o;
    gs_client_sort s = { .shape = { .dtype = o->dtype, .payload = o->payload },
                         .algorithm = o->algorithm, .device = o->device };
    gs_client_result res;
    sv_keysum want;
    gs_err err;
    char why[256];
    gs_err_clear(&err);
    double t0 = gs_now_ms();
    int e = refill(cl, n, &s, &want, &err);
    double t1 = gs_now_ms();
    if (e == 0)
        e = gs_client_sort_run(cl->c, &s, &res, &err);
    double t2 = gs_now_ms();
    cl->refill_ms += t1 - t0;
    if (e < 0) {
        cl->errors++;
        if (atomic_fetch_add(&g_messages, 1) < MAX_MESSAGES)
            fprintf(stderr, PROG ": client %d: n=%zu: %s\n", cl->id, n, err.msg);
        if (cl->once.fd >= 0)
            gs_client_shm_free(&cl->once);
        cl->last_n = 0;
        return recover(cl);
    }
    if (o->verify && !sv_verify(o->dtype, o->payload, 0, n, s.keys, s.values, cl->in_keys, &want,
                                why, sizeof why)) {
        cl->wrong++;
        if (atomic_fetch_add(&g_messages, 1) < MAX_MESSAGES)
            fprintf(stderr, PROG ": client %d: WRONG ANSWER: n=%zu %s/%s %s, by %s on %s: %s\n",
                    cl->id, n, gs_dtype_name(o->dtype), gs_payload_name(o->payload),
                    xp_names[o->xport], res.algorithm,
                    res.device >= 0 ? res.device_name : "host", why);
    }
    cl->check_ms += gs_now_ms() - t2;
    if (cl->once.fd >= 0)
        gs_client_shm_free(&cl->once);
    if (record(cl, &res, n, t2 - t1) < 0) {
        fprintf(stderr, PROG ": client %d: out of memory for its records\n", cl->id);
        return -1;
    }
    return 0;
}

static void *client_main(void *arg)
{
    client *cl = arg;
    pthread_mutex_lock(&g_lock);
    while (!g_go)
        pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
    /* clients start at different sizes, so that the mix is in flight at once */
    for (int k = cl->id; gs_now_ms() < g_deadline; k++)
        if (client_sort(cl, (size_t)1 << cl->o->sizes[k % cl->o->nsizes]) < 0) {
            cl->gone = 1;
            break;
        }
    cl->end_ms = gs_now_ms();
    return NULL;
}

/* Connect and fill every client, run them all for --seconds, and return
 * the wall time in *wall_ms (start to the last client's end). */
static int run_load(client *cls, const opts *o, double *wall_ms)
{
    int started = 0, rc = 0;
    for (int i = 0; i < o->clients; i++)
        cls[i] = (client){ .o = o, .id = i, .block.fd = -1, .once.fd = -1,
                           .seed = o->seed ^ (UINT64_C(0x5851f42d4c957f2d) * (uint64_t)(i + 1)) };
    for (int i = 0; i < o->clients && rc == 0; i++) {
        gs_err err;
        gs_err_clear(&err);
        if (bc_connect(&cls[i].c, o->socket, 0, PROG, "") < 0)
            rc = -1;
        else if (client_alloc(&cls[i], &err) < 0) {
            fprintf(stderr, PROG ": client %d: %s\n", i, err.msg);
            rc = -1;
        }
    }
    g_go = 0;
    for (int i = 0; i < o->clients && rc == 0; i++) {
        if (pthread_create(&cls[i].tid, NULL, client_main, &cls[i]) != 0) {
            fprintf(stderr, PROG ": cannot start client thread %d\n", i);
            rc = -1;
            break;
        }
        started++;
    }
    pthread_mutex_lock(&g_lock);
    g_t0 = gs_now_ms();
    /* after a failure the started clients leave at once */
    g_deadline = rc == 0 ? g_t0 + o->seconds * 1e3 : -INFINITY;
    g_go = 1;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    double end = g_t0;
    for (int i = 0; i < started; i++) {
        pthread_join(cls[i].tid, NULL);
        end = cls[i].end_ms > end ? cls[i].end_ms : end;
    }
    *wall_ms = end - g_t0;
    return rc;
}

/* ---- the report ---- */

/* What the whole run adds up to. */
typedef struct totals {
    size_t sorts;
    uint64_t keys, errors, wrong, gone;
    double wall_s, refill_ms, check_ms;
    uint64_t dev_keys[MAX_DEV];   /* keys each daemon device sorted, for the floor */
} totals;

/* Devices by index, then the host sort pool, then split requests. */
static int dev_order(int dev)
{
    return dev >= 0 ? dev : dev == DEV_HOST ? INT_MAX - 1 : INT_MAX;
}

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    int ox = dev_order(x->dev), oy = dev_order(y->dev);
    if (ox != oy)
        return (ox > oy) - (ox < oy);
    return (x->queue_ms > y->queue_ms) - (x->queue_ms < y->queue_ms);
}

static void print_header(const opts *o, const char *desc, long pid)
{
    char date[64], host[128] = "?", sizes[MAX_SIZES * 6 + 1] = "";
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
    gethostname(host, sizeof host - 1);
    for (int i = 0, w = 0; i < o->nsizes; i++)
        w += snprintf(sizes + w, sizeof sizes - (size_t)w, "%s2^%d", i ? "," : "", o->sizes[i]);
    static const char *const xp_what[] = {
        "a memfd per client sent again every request, kept and pinned by the daemon",
        "a new memfd every request, mapped by the daemon for it alone",
        "keys sent and read back on the socket" };
    printf("# " PROG " %s on %s, socket %s\n", date, host, o->socket_shown);
    printf("# daemon: %s (pid %ld)\n", desc, pid);
    printf("# load: %d clients x %d s, transport %s (%s); keys %s (%s, seed %" PRIu64
           "), values %s; sizes %s, each client cycling through them; algorithm: %s; "
           "device: ", o->clients, o->seconds, xp_names[o->xport], xp_what[o->xport],
           gs_dtype_name(o->dtype),
           o->refill == REFILL_XOR    ? "random, then each reply's keys xored with a random word"
           : o->refill == REFILL_NONE ? "random, then each reply's sorted keys sent again"
                                      : "random",
           o->seed, gs_payload_name(o->payload), sizes,
           o->algorithm ? o->algorithm : "the daemon's plan");
    if (o->device >= 0)
        printf("%d", o->device);
    else
        printf("any");
    printf("; %s\n", o->verify ? "every reply checked" : "replies not checked (--no-verify)");
    printf("# per device (and the host sort pool): the replies' figures; queue = waiting for a "
           "worker (ms); total = the daemon's time for the request; Gkeys/s over the run's "
           "wall time\n");
    fflush(stdout);
}

/* "name:count ..." of the algorithms that served recs[0..n). */
static void algo_counts(const rec *r, size_t n, char *out, size_t len)
{
    size_t cnt[MAX_ALGOS] = { 0 };
    for (size_t i = 0; i < n; i++)
        cnt[r[i].algo]++;
    out[0] = '\0';
    for (int a = 0, w = 0; a < MAX_ALGOS && (size_t)w < len; a++)
        if (cnt[a])
            w += snprintf(out + w, len - (size_t)w, "%s%s:%zu", w ? " " : "", g_algos[a], cnt[a]);
}

/* One device's row from its records r[0..n) (in ascending queue time). */
static int print_device(const opts *o, const rec *r, size_t n, const totals *t)
{
    double *q = malloc(n * sizeof *q), *tot = malloc(n * sizeof *tot), qsum = 0;
    uint64_t keys = 0;
    if (!q || !tot) {
        free(q);
        free(tot);
        fprintf(stderr, PROG ": out of memory for the report\n");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        q[i] = r[i].queue_ms;
        tot[i] = r[i].total_ms;
        qsum += q[i];
        keys += r[i].n;
    }
    int dev = r[0].dev;
    char name[160], algos[512];
    if (dev >= 0)
        snprintf(name, sizeof name, "%s", dev < MAX_DEV && g_devs[dev][0] ? g_devs[dev] : "?");
    else
        snprintf(name, sizeof name, "%s",
                 dev == DEV_HOST ? "host sort pool" : "split over devices");
    algo_counts(r, n, algos, sizeof algos);
    char id[16];
    snprintf(id, sizeof id, "%s", dev == DEV_HOST ? "host" : dev == DEV_SPLIT ? "split" : "");
    if (dev >= 0)
        snprintf(id, sizeof id, "%d", dev);
    double share = t->keys ? 100.0 * (double)keys / (double)t->keys : 0;
    double gk = t->wall_s > 0 ? (double)keys / t->wall_s / 1e9 : 0, tp50 = bu_median(tot, n);
    if (o->csv)
        printf("device,%s,%zu,%" PRIu64 ",%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%s,\"%s\"\n", id, n,
               keys, share, bu_pctl(q, n, .5), bu_pctl(q, n, .9), bu_pctl(q, n, .99),
               qsum / (double)n, tp50, gk, algos, name);
    else
        printf("%-6s %9zu %14" PRIu64 " %6.1f%% %9.3f %9.3f %9.3f %9.3f %9.3f %8.4f  %-24s %s\n",
               id, n, keys, share, bu_pctl(q, n, .5), bu_pctl(q, n, .9), bu_pctl(q, n, .99),
               qsum / (double)n, tp50, gk, algos, name);
    free(q);
    free(tot);
    return 0;
}

/* The records of every client, sorted by device and queue time, into *all
 * (the caller frees it) and the sums into t. */
static int gather(const client *cls, int nc, double wall_ms, rec **all, totals *t)
{
    memset(t, 0, sizeof *t);
    t->wall_s = wall_ms / 1e3;
    for (int i = 0; i < nc; i++) {
        t->sorts += cls[i].nrec;
        t->errors += cls[i].errors;
        t->wrong += cls[i].wrong;
        t->gone += cls[i].gone;
        t->refill_ms += cls[i].refill_ms;
        t->check_ms += cls[i].check_ms;
    }
    if (!(*all = malloc((t->sorts ? t->sorts : 1) * sizeof **all))) {
        fprintf(stderr, PROG ": out of memory for the report\n");
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < nc; i++) {
        memcpy(*all + k, cls[i].recs, cls[i].nrec * sizeof **all);
        k += cls[i].nrec;
    }
    for (size_t i = 0; i < k; i++) {
        t->keys += (*all)[i].n;
        if ((*all)[i].dev >= 0 && (*all)[i].dev < MAX_DEV)
            t->dev_keys[(*all)[i].dev] += (*all)[i].n;
    }
    qsort(*all, k, sizeof **all, cmp_rec);
    return 0;
}

/* The totals: sorts/s, Gkeys/s, the clients' latency, the failures and
 * the clients' own time. */
static int print_totals(const opts *o, const rec *all, const totals *t)
{
    double *lat = malloc((t->sorts ? t->sorts : 1) * sizeof *lat);
    if (!lat) {
        fprintf(stderr, PROG ": out of memory for the report\n");
        return -1;
    }
    for (size_t i = 0; i < t->sorts; i++)
        lat[i] = all[i].e2e_ms;
    qsort(lat, t->sorts, sizeof *lat, bu_cmp_double);
    double w = t->wall_s > 0 ? t->wall_s : 1, own = (double)o->clients * w * 1e3;
    double p50 = bu_pctl(lat, t->sorts, .5), p99 = bu_pctl(lat, t->sorts, .99);
    if (o->csv) {
        printf("kind,clients,seconds,sorts,sorts_per_s,keys,gkeys_per_s,latency_p50_ms,"
               "latency_p99_ms,errors,wrong,refill_share,check_share\n");
        printf("total,%d,%.3f,%zu,%.1f,%" PRIu64 ",%.4f,%.4f,%.4f,%" PRIu64 ",%" PRIu64
               ",%.4f,%.4f\n", o->clients, t->wall_s, t->sorts, (double)t->sorts / w, t->keys,
               (double)t->keys / w / 1e9, p50, p99, t->errors, t->wrong, t->refill_ms / own,
               t->check_ms / own);
    } else {
        printf("total: %d clients, %.2f s: %zu sorts = %.1f sorts/s, %" PRIu64 " keys = %.4f "
               "Gkeys/s; latency p50 %.3f ms, p99 %.3f ms (client: sent to reply read)\n",
               o->clients, t->wall_s, t->sorts, (double)t->sorts / w, t->keys,
               (double)t->keys / w / 1e9, p50, p99);
        printf("errors: %" PRIu64 "\nwrong answers: %" PRIu64 "%s\n", t->errors, t->wrong,
               o->verify ? "" : " (not checked: --no-verify)");
        printf("clients' own time: refill %.1f%%, check %.1f%% of %d clients x %.2f s\n",
               100 * t->refill_ms / own, 100 * t->check_ms / own, o->clients, t->wall_s);
    }
    free(lat);
    fflush(stdout);
    return 0;
}

static int report(const opts *o, const client *cls, double wall_ms, totals *t)
{
    rec *all = NULL;
    if (gather(cls, o->clients, wall_ms, &all, t) < 0)
        return -1;
    if (o->csv)
        printf("kind,device,sorts,keys,share_pct,queue_p50_ms,queue_p90_ms,queue_p99_ms,"
               "queue_mean_ms,total_p50_ms,gkeys_per_s,algorithms,name\n");
    else
        printf("%-6s %9s %14s %7s %9s %9s %9s %9s %9s %8s  %-24s %s\n", "device", "sorts", "keys",
               "share", "queue_p50", "queue_p90", "queue_p99", "queue_avg", "total_p50", "Gkeys/s",
               "algorithms", "name");
    int rc = 0;
    for (size_t i = 0, j; i < t->sorts && rc == 0; i = j) {
        for (j = i + 1; j < t->sorts && all[j].dev == all[i].dev; j++)
            ;
        rc = print_device(o, all + i, j - i, t);
    }
    if (rc == 0)
        rc = print_totals(o, all, t);
    free(all);
    return rc;
}

/* ---- the PCIe floor ---- */

/* The OpenCL devices the floor is measured on, picked before the load (a
 * wrong index is a usage error, not a surprise after it). */
typedef struct floor_sel {
    gs_dev *devs;
    size_t ndev;
    gs_dev *chosen[MAX_PCIE];
    int nchosen;
    const char *why;          /* nothing chosen: why */
} floor_sel;

/* 0; -1 after a message (probing failed); -2 for an index with no device. */
static int floor_pick(const opts *o, floor_sel *f)
{
    memset(f, 0, sizeof *f);
    if (o->pcie_mode == PCIE_NONE) {
        f->why = "--pcie-devices none";
        return 0;
    }
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&f->devs, &f->ndev, &err) < 0) {
        fprintf(stderr, PROG ": probing OpenCL devices for the PCIe floor: %s\n", err.msg);
        return -1;
    }
    for (size_t i = 0; o->pcie_mode == PCIE_GPUS && i < f->ndev && f->nchosen < MAX_PCIE; i++)
        if (f->devs[i].info.type & CL_DEVICE_TYPE_GPU)
            f->chosen[f->nchosen++] = &f->devs[i];
    for (int k = 0; o->pcie_mode == PCIE_LIST && k < o->npcie; k++) {
        if ((size_t)o->pcie[k] >= f->ndev) {
            fprintf(stderr, PROG ": --pcie-devices %d: no such OpenCL device (%zu found)\n",
                    o->pcie[k], f->ndev);
            return -2;
        }
        int dup = 0;
        for (int j = 0; j < f->nchosen; j++)
            dup |= f->chosen[j] == &f->devs[o->pcie[k]];
        if (!dup)
            f->chosen[f->nchosen++] = &f->devs[o->pcie[k]];
    }
    if (!f->nchosen)
        f->why = "no GPU";
    return 0;
}

static void floor_free(floor_sel *f)
{
    if (f->devs)
        gs_dev_free_list(f->devs, f->ndev);
    memset(f, 0, sizeof *f);
}

/* One row of the floor: `what` (a device index or "all"), its figures, and
 * the Gkeys/s the run achieved there. */
static void floor_row(const opts *o, const char *what, const char *name,
                      const pcie_duplex_res *r, double achieved)
{
    double ks = (double)gs_dtype_size(o->dtype);
    double fl = r->ok && r->wall_ms > 0 ? (double)r->way_bytes / ks / (r->wall_ms * 1e6) : 0;
    if (o->csv) {
        if (r->ok)
            printf("pcie,%s,%zu,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,\"%s\",\"%s\"\n", what,
                   r->way_bytes, r->h2d_gbps, r->d2h_gbps, r->gbps, fl, achieved,
                   fl > 0 ? achieved / fl : 0, name, r->note);
        else
            printf("pcie,%s,,,,,,%.4f,,\"%s\",\"not measured: %s\"\n", what, achieved, name,
                   r->note);
    } else if (r->ok) {
        printf("pcie %-5s h2d %7.2f GB/s, d2h %7.2f GB/s, both at once %7.2f GB/s = %7.3f "
               "Gkeys/s round trip; achieved %.4f Gkeys/s = %.3fx of the floor  %s%s%s\n", what,
               r->h2d_gbps, r->d2h_gbps, r->gbps, fl, achieved, fl > 0 ? achieved / fl : 0, name,
               r->note[0] ? "; " : "", r->note);
    } else {
        printf("pcie %-5s not measured: %s  %s\n", what, r->note, name);
    }
}

/* Measure the floor on the chosen devices (after the load, so that it
 * does not take the bus from the daemon) and print it beside what the run
 * achieved. 0, or -1 when the measurement failed. */
static int floor_report(const opts *o, const floor_sel *f, const totals *t)
{
    if (!f->nchosen) {
        printf("%sPCIe floor: not measured (%s)\n", o->csv ? "# " : "", f->why);
        return 0;
    }
    size_t ks = gs_dtype_size(o->dtype), bytes = ((size_t)1 << o->max_log2) * ks;
    if (bytes < PCIE_MIN_BYTES)
        bytes = PCIE_MIN_BYTES;
    if (bytes > PCIE_MAX_BYTES)
        bytes = PCIE_MAX_BYTES;
    pcie_duplex_res per[MAX_PCIE], all;
    if (pcie_duplex(f->chosen, (size_t)f->nchosen, bytes, PCIE_REPS, PROG, per, &all) < 0)
        return -1;
    printf("# PCIe floor, measured after the load by this program with OpenCL directly: pinned "
           "host buffers, %zu MiB each way, one upload and one download in flight together on "
           "two queues, median of %d after a warm-up; Gkeys/s = %s keys moved up and down per "
           "second (each key crosses the bus twice); achieved = keys the daemon sorted on that "
           "device (its index as the daemon's) / wall\n", bytes >> 20, PCIE_REPS,
           gs_dtype_name(o->dtype));
    if (o->csv)
        printf("kind,device,way_bytes,h2d_gbps,d2h_gbps,duplex_gbps,floor_gkeys_per_s,"
               "achieved_gkeys_per_s,of_floor,name,note\n");
    double w = t->wall_s > 0 ? t->wall_s : 1;
    uint64_t on_chosen = 0;
    for (int i = 0; i < f->nchosen; i++) {
        const gs_dev *d = f->chosen[i];
        char what[16], name[300];
        uint64_t k = d->index < MAX_DEV ? t->dev_keys[d->index] : 0;
        on_chosen += k;
        snprintf(what, sizeof what, "%d", d->index);
        snprintf(name, sizeof name, "%s%s", d->info.name,
                 d->info.type & CL_DEVICE_TYPE_GPU ? "" : " (not a GPU: no bus, a memory copy)");
        floor_row(o, what, name, &per[i], (double)k / w / 1e9);
    }
    char name[64];
    snprintf(name, sizeof name, "%d device%s at once", f->nchosen, f->nchosen > 1 ? "s" : "");
    floor_row(o, "all", name, &all, (double)on_chosen / w / 1e9);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr)
        return pr > 0 ? 0 : 2;
    /* a daemon that goes away mid-request must be an error message, not a silent death */
    signal(SIGPIPE, SIG_IGN);
    long pid;
    char desc[1024];
    if (bc_daemon_desc(o.socket, 0, PROG, &pid, desc, sizeof desc) < 0)
        return 1;
    floor_sel fs;
    int e = floor_pick(&o, &fs);
    if (e < 0) {
        floor_free(&fs);
        return e == -2 ? 2 : 1;
    }
    client *cls = calloc((size_t)o.clients, sizeof *cls);
    if (!cls) {
        fprintf(stderr, PROG ": out of memory\n");
        floor_free(&fs);
        return 1;
    }
    print_header(&o, desc, pid);
    double wall_ms = 0;
    totals t;
    int rc = run_load(cls, &o, &wall_ms);
    if (rc == 0)
        rc = report(&o, cls, wall_ms, &t);
    for (int i = 0; i < o.clients; i++)
        client_free(&cls[i]);
    free(cls);
    if (rc == 0)
        rc = floor_report(&o, &fs, &t);
    floor_free(&fs);
    if (rc == 0 && (t.errors || t.wrong || t.gone || !t.sorts)) {
        fprintf(stderr, PROG ": FAILED: %" PRIu64 " errors, %" PRIu64 " wrong answers, %" PRIu64
                " clients stopped early, %zu sorts\n", t.errors, t.wrong, t.gone, t.sorts);
        rc = -1;
    }
    return rc < 0 ? 1 : 0;
}
