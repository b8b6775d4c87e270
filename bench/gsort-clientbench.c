/* gsort-clientbench: what a sort costs a program that uses libgsort, by
 * transport. For each size it sorts the same random keys through a running
 * gsortd three ways: in place in gsort_alloc memory (zero copy), from
 * ordinary memory through the connection's staging memfd (one copy each
 * way), and inline on the socket (GSORT_INLINE). After one untimed
 * warm-up call per size and transport it prints the median whole-call
 * time, the daemon's share and Mkeys/s, and checks every answer against a
 * host sort of the same keys. With --qsort it also times the libc qsort a
 * program would call instead, on the same keys in the same run, and prints
 * how many times faster each transport was (the demo's C client line);
 * --transport NAME times one transport only. "auto" is what a program
 * gets by default from ordinary memory: the library sorts in its own
 * process where it measured that faster (issue 36), and the row says
 * where the timed calls went ("local" plan). With --host it also times the
 * library's default call against the project's host sort called in this
 * process (gs_sort_run, one thread: what the library's local route runs,
 * without the library), interleaved and in batches (time_host): what the
 * library itself costs a call.
 *
 *   gsort-clientbench [-S SOCKET] [--dtype u32|u64] [--min-log2 A]
 *                     [--max-log2 B] [--reps R] [--algorithm NAME]
 *                     [--transport zero-copy|staged|inline|auto] [--qsort] [--host]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "gs_algos.h"
#include "gs_sort.h"
#include "gsort.h"

enum { WAY_BLOCK = 0, WAY_STAGED, WAY_INLINE, WAY_AUTO, WAY_COUNT };
static const char *const way_names[WAY_COUNT] = { "zero-copy", "staged", "inline", "auto" };
/* Untimed calls before an "auto" row: the library times each route twice
 * at a size before either wins (gsort_local.c), then settles. */
#define AUTO_WARMUP 6

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gsort-clientbench [-S SOCKET] [--dtype u32|u64] [--min-log2 A] "
               "[--max-log2 B] [--reps R] [--algorithm NAME]\n"
               "                         [--transport zero-copy|staged|inline|auto] [--qsort] "
               "[--host]\n");
}

/* The command line. */
typedef struct cb_opts {
    const char *sock, *algo;
    int min_log2, max_log2, reps;
    int wide;                 /* u64 keys, else u32 */
    int only;                 /* the one transport timed, or -1 for all */
    int vs_qsort;
    int vs_host;
} cb_opts;

/* Stops the command line: *exit_code becomes code. Returns -1. */
static int stop(int *exit_code, int code)
{
    *exit_code = code;
    return -1;
}

/* argv into *o (defaults first). 0 to run, or -1 with *exit_code 0 when
 * --help printed the usage and 2 on a usage error (said on stderr). */
static int parse_args(int argc, char **argv, cb_opts *o, int *exit_code)
{
    *o = (cb_opts){ .min_log2 = 10, .max_log2 = 24, .reps = 5, .only = -1 };
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 'S' },
        { "dtype", required_argument, NULL, 't' },
        { "min-log2", required_argument, NULL, 'a' },
        { "max-log2", required_argument, NULL, 'b' },
        { "reps", required_argument, NULL, 'r' },
        { "algorithm", required_argument, NULL, 'A' },
        { "transport", required_argument, NULL, 'T' },
        { "qsort", no_argument, NULL, 'Q' },
        { "host", no_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "S:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'S': o->sock = optarg; break;
        case 't':
            if (!strcmp(optarg, "u32")) o->wide = 0;
            else if (!strcmp(optarg, "u64")) o->wide = 1;
            else { fprintf(stderr, "gsort-clientbench: --dtype u32 or u64\n"); return stop(exit_code, 2); }
            break;
        case 'a': o->min_log2 = atoi(optarg); break;
        case 'b': o->max_log2 = atoi(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 'A': o->algo = optarg; break;
        case 'T':
            for (int w = 0; w < WAY_COUNT; w++)
                if (!strcmp(optarg, way_names[w]))
                    o->only = w;
            if (o->only < 0) {
                fprintf(stderr, "gsort-clientbench: --transport zero-copy, staged, inline or "
                                "auto\n");
                return stop(exit_code, 2);
            }
            break;
        case 'Q': o->vs_qsort = 1; break;
        case 'H': o->vs_host = 1; break;
        case 'h': usage(stdout); return stop(exit_code, 0);
        default: usage(stderr); return stop(exit_code, 2);
        }
    }
    if (optind != argc || o->min_log2 < 0 || o->max_log2 > 31 || o->min_log2 > o->max_log2 ||
        o->reps < 1 || o->reps > 1000) {
        usage(stderr);
        return stop(exit_code, 2);
    }
    return 0;
}

/* One size's keys: the input, the reference answer, and the two places a
 * program would sort them in. */
typedef struct cb_size {
    int lg;
    size_t n, bytes;
    void *src, *ref, *plain, *block;
    double qs_ms;             /* libc qsort's median with --qsort, else -1 */
    double host_ms, lib_ms;   /* with --host: the host sort's and the library's
                                 (time_host), else -1 */
} cb_size;

/* The library against the project's host sort called in this process
 * (gs_sort_run, one thread: what the library's local route runs, without
 * the library): ROUNDS rounds, each timing a batch of calls of each (the
 * input copied in before every call, the same for both), their order
 * alternating; batches of about 2^16 keys, so that a call of 16 keys is
 * timed over thousands and the clock's own cost drops out. The medians per
 * call into z->lib_ms and z->host_ms. 0, or -1 (said). */
#define ROUNDS 21
static int time_host(gsort_conn *c, const cb_opts *o, cb_size *z)
{
    size_t ks = o->wide ? 8 : 4;
    size_t batch = z->n >= 65536 ? 1 : 65536 / z->n;
    double tl[ROUNDS], th[ROUNDS];
    gs_params p;
    gs_params_clear(&p);
    gs_params_set(&p, "threads", 1);
    gs_sort_req req = { .shape = { .dtype = o->wide ? GS_DT_U64 : GS_DT_U32,
                                   .payload = GS_PL_NONE },
                        .n = z->n,
                        .keys = z->plain };
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = o->wide ? GSORT_U64 : GSORT_U32;
    rq.n = z->n;
    rq.keys = z->plain;
    for (int r = -1; r < ROUNDS; r++) {        /* round -1: a warm-up */
        for (int w = 0; w < 2; w++) {
            int lib = (r + w) % 2 != 0;
            double t0 = gs_now_ms();
            for (size_t b = 0; b < batch; b++) {
                memcpy(z->plain, z->src, z->n * ks);
                gs_err e;
                gsort_error err;
                if (lib ? gsort_run(c, &rq, NULL, &err) < 0
                        : gs_sort_run(&gs_algo_host, NULL, &req, &p, NULL, &e) < 0) {
                    fprintf(stderr, "gsort-clientbench: 2^%d %s: %s\n", z->lg,
                            lib ? "library" : "host sort", lib ? err.message : e.msg);
                    return -1;
                }
            }
            double t = (gs_now_ms() - t0) / (double)batch;
            if (r >= 0)
                *(lib ? &tl[r] : &th[r]) = t;
            if (memcmp(z->plain, z->ref, z->n * ks) != 0) {
                fprintf(stderr, "gsort-clientbench: 2^%d %s: WRONG ANSWER\n", z->lg,
                        lib ? "library" : "host sort");
                return -1;
            }
        }
    }
    z->lib_ms = bu_median(tl, ROUNDS);
    z->host_ms = bu_median(th, ROUNDS);
    return 0;
}

/* The keys of 2^lg (random, from a seed of the size) and the reference
 * answer, with --qsort timed as what a program would spend without the
 * daemon (median of reps). 0, or -1 out of memory (said). */
static int make_size(const cb_opts *o, int lg, cb_size *z)
{
    size_t ks = o->wide ? 8 : 4;
    gsort_error err;
    *z = (cb_size){ .lg = lg, .n = (size_t)1 << lg, .qs_ms = -1, .host_ms = -1, .lib_ms = -1 };
    z->bytes = z->n * ks;
    z->src = malloc(z->bytes);
    z->ref = malloc(z->bytes);
    z->plain = malloc(z->bytes);
    z->block = gsort_alloc(z->bytes, &err);
    if (!z->src || !z->ref || !z->plain || !z->block) {
        fprintf(stderr, "gsort-clientbench: no memory for 2^%d keys%s%s\n", lg,
                z->block ? "" : ": ", z->block ? "" : err.message);
        return -1;
    }
    uint64_t seed = 0x5eed0000u + (uint64_t)lg;
    for (size_t i = 0; i < z->n; i++) {
        uint64_t v = bu_splitmix(&seed);
        if (o->wide) ((uint64_t *)z->src)[i] = v;
        else ((uint32_t *)z->src)[i] = (uint32_t)v;
    }
    double *qt = o->vs_qsort ? calloc((size_t)o->reps, sizeof *qt) : NULL;
    for (int r = 0; r < (qt ? o->reps : 1); r++) {
        memcpy(z->ref, z->src, z->bytes);
        double t0 = gs_now_ms();
        qsort(z->ref, z->n, ks, o->wide ? cmp_u64 : cmp_u32);
        if (qt)
            qt[r] = gs_now_ms() - t0;
    }
    if (qt) {
        z->qs_ms = bu_median(qt, (size_t)o->reps);
        free(qt);
    }
    return 0;
}

static void free_size(cb_size *z)
{
    free(z->src);
    free(z->ref);
    free(z->plain);
    gsort_free(z->block);
}

/* One sort of the size's keys through transport w, checked against the
 * reference and against the transport it went by; its whole-call ms into
 * *ms. 0, or -1 (said). */
static int sort_once(gsort_conn *c, const cb_opts *o, const cb_size *z, int w,
                     gsort_result *res, double *ms)
{
    gsort_error err;
    void *keys = w == WAY_BLOCK ? z->block : z->plain;
    memcpy(keys, z->src, z->bytes);   /* not timed: the input a program would hold */
    gsort_request rq;
    gsort_request_init(&rq);
    rq.dtype = o->wide ? GSORT_U64 : GSORT_U32;
    rq.n = z->n;
    rq.keys = keys;
    /* the transports are measured: never sorted in this process, but by "auto" */
    rq.flags = w == WAY_AUTO ? 0 : (w == WAY_INLINE ? GSORT_INLINE : 0) | GSORT_NO_LOCAL;
    rq.algorithm = o->algo;
    double t0 = gs_now_ms();
    if (gsort_run(c, &rq, res, &err) < 0) {
        fprintf(stderr, "gsort-clientbench: 2^%d %s: %s\n", z->lg, way_names[w], err.message);
        return -1;
    }
    *ms = gs_now_ms() - t0;
    if (memcmp(keys, z->ref, z->bytes) != 0) {
        fprintf(stderr, "gsort-clientbench: 2^%d %s: WRONG ANSWER\n", z->lg, way_names[w]);
        return -1;
    }
    if (w != WAY_AUTO && res->zero_copy != (w != WAY_INLINE)) {
        fprintf(stderr, "gsort-clientbench: 2^%d %s: went %s\n", z->lg, way_names[w],
                res->zero_copy ? "through shared memory" : "inline");
        return -1;
    }
    return 0;
}

/* Transport w on the size's keys: an untimed warm-up and the reps, and
 * its row. 0, or -1 (said). */
static int time_way(gsort_conn *c, const cb_opts *o, const cb_size *z, int w)
{
    int rc = 0;
    double *t = calloc((size_t)o->reps, sizeof *t), *d = calloc((size_t)o->reps, sizeof *d);
    gsort_result res;
    memset(&res, 0, sizeof res);
    /* Rep -1 is a warm-up, not timed: the first request of a size or
     * transport may build a program or grow a staging buffer. */
    for (int r = w == WAY_AUTO ? -AUTO_WARMUP : -1; r < o->reps && t && d; r++) {
        double ms;
        if (sort_once(c, o, z, w, &res, &ms) < 0) {
            rc = -1;
            break;
        }
        if (r >= 0) {
            t[r] = ms;
            d[r] = res.daemon_ms;
        }
    }
    if (!t || !d) {
        fprintf(stderr, "gsort-clientbench: out of memory\n");
        rc = -1;
    }
    if (rc == 0) {
        double mt = bu_median(t, (size_t)o->reps), md = bu_median(d, (size_t)o->reps);
        printf("2^%-4d %-10s %10.5f %10.4f %9.1f  %s/%s/%s", z->lg, way_names[w], mt, md,
               (double)z->n / mt / 1e3, res.device < 0 ? "host" : res.device_name,
               res.algorithm, res.plan);
        if (z->qs_ms > 0)
            printf("  %.1fx faster than qsort", z->qs_ms / mt);
        printf("\n");
        fflush(stdout);
    }
    free(t);
    free(d);
    return rc;
}

/* One size: every transport asked for, then qsort's row with --qsort.
 * 0, or -1 (said). */
static int run_size(gsort_conn *c, const cb_opts *o, int lg)
{
    cb_size z;
    int rc = make_size(o, lg, &z);
    for (int w = 0; w < WAY_COUNT && !rc; w++)
        if (o->only < 0 || w == o->only)
            rc = time_way(c, o, &z, w);
    if (!rc && z.qs_ms > 0)
        printf("2^%-4d %-10s %10.5f %10s %9.1f  libc qsort in this process, same keys\n", lg,
               "qsort", z.qs_ms, "-", (double)z.n / z.qs_ms / 1e3);
    if (!rc && o->vs_host && (rc = time_host(c, o, &z)) == 0)
        printf("2^%-4d %-10s %10.6f %10s %9.1f  the library, batched, / the host sort in this "
               "process (%.6f ms): %.2fx\n", lg, "lib/host", z.lib_ms, "-",
               (double)z.n / z.lib_ms / 1e3, z.host_ms, z.lib_ms / z.host_ms);
    free_size(&z);
    return rc;
}

int main(int argc, char **argv)
{
    cb_opts o;
    int code = 0;
    if (parse_args(argc, argv, &o, &code) < 0)
        return code;
    gsort_conn *c;
    gsort_error err;
    if (gsort_connect(&c, o.sock, &err) < 0) {
        fprintf(stderr, "gsort-clientbench: %s\n", err.message);
        return 1;
    }
    printf("# gsort-clientbench: %s keys via %s, median of %d; ms are whole calls "
           "(daemon ms in brackets)\n", o.wide ? "u64" : "u32", gsort_socket_path(c), o.reps);
    printf("%-6s %-10s %10s %10s %9s  %s\n", "n", "transport", "ms", "daemon_ms", "Mkeys/s",
           "device/algorithm/plan");
    int rc = 0;
    for (int lg = o.min_log2; lg <= o.max_log2 && !rc; lg++)
        rc = run_size(c, &o, lg);
    gsort_close(c);
    return rc < 0 ? 1 : 0;
}
