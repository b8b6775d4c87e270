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
 * --transport NAME times one transport only.
 *
 *   gsort-clientbench [-S SOCKET] [--dtype u32|u64] [--min-log2 A]
 *                     [--max-log2 B] [--reps R] [--algorithm NAME]
 *                     [--transport zero-copy|staged|inline] [--qsort]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "gsort.h"

enum { WAY_BLOCK = 0, WAY_STAGED, WAY_INLINE, WAY_COUNT };
static const char *const way_names[WAY_COUNT] = { "zero-copy", "staged", "inline" };

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
               "                         [--transport zero-copy|staged|inline] [--qsort]\n");
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *algo = NULL;
    int min_log2 = 10, max_log2 = 24, reps = 5, wide = 0, only = -1, vs_qsort = 0;
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 'S' },
        { "dtype", required_argument, NULL, 't' },
        { "min-log2", required_argument, NULL, 'a' },
        { "max-log2", required_argument, NULL, 'b' },
        { "reps", required_argument, NULL, 'r' },
        { "algorithm", required_argument, NULL, 'A' },
        { "transport", required_argument, NULL, 'T' },
        { "qsort", no_argument, NULL, 'Q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "S:h", opts, NULL)) != -1) {
        switch (o) {
        case 'S': sock = optarg; break;
        case 't':
            if (!strcmp(optarg, "u32")) wide = 0;
            else if (!strcmp(optarg, "u64")) wide = 1;
            else { fprintf(stderr, "gsort-clientbench: --dtype u32 or u64\n"); return 2; }
            break;
        case 'a': min_log2 = atoi(optarg); break;
        case 'b': max_log2 = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'A': algo = optarg; break;
        case 'T':
            for (int w = 0; w < WAY_COUNT; w++)
                if (!strcmp(optarg, way_names[w]))
                    only = w;
            if (only < 0) {
                fprintf(stderr, "gsort-clientbench: --transport zero-copy, staged or inline\n");
                return 2;
            }
            break;
        case 'Q': vs_qsort = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || min_log2 < 0 || max_log2 > 31 || min_log2 > max_log2 || reps < 1 ||
        reps > 1000) {
        usage(stderr);
        return 2;
    }
    gsort_conn *c;
    gsort_error err;
    if (gsort_connect(&c, sock, &err) < 0) {
        fprintf(stderr, "gsort-clientbench: %s\n", err.message);
        return 1;
    }
    size_t ks = wide ? 8 : 4;
    gsort_dtype dt = wide ? GSORT_U64 : GSORT_U32;
    printf("# gsort-clientbench: %s keys via %s, median of %d; ms are whole calls "
           "(daemon ms in brackets)\n", wide ? "u64" : "u32", gsort_socket_path(c), reps);
    printf("%-6s %-10s %10s %10s %9s  %s\n", "n", "transport", "ms", "daemon_ms", "Mkeys/s",
           "device/algorithm/plan");
    int rc = 0;
    for (int lg = min_log2; lg <= max_log2 && !rc; lg++) {
        size_t n = (size_t)1 << lg, bytes = n * ks;
        void *src = malloc(bytes), *ref = malloc(bytes), *plain = malloc(bytes);
        void *block = gsort_alloc(bytes, &err);
        if (!src || !ref || !plain || !block) {
            fprintf(stderr, "gsort-clientbench: no memory for 2^%d keys%s%s\n", lg,
                    block ? "" : ": ", block ? "" : err.message);
            free(src); free(ref); free(plain); gsort_free(block);
            rc = 1;
            break;
        }
        uint64_t seed = 0x5eed0000u + (uint64_t)lg;
        for (size_t i = 0; i < n; i++) {
            uint64_t v = bu_splitmix(&seed);
            if (wide) ((uint64_t *)src)[i] = v;
            else ((uint32_t *)src)[i] = (uint32_t)v;
        }
        /* the reference answer, and with --qsort what a program would
         * spend without the daemon: libc qsort, median of reps */
        double qs_ms = -1;
        double *qt = vs_qsort ? calloc((size_t)reps, sizeof *qt) : NULL;
        for (int r = 0; r < (qt ? reps : 1); r++) {
            memcpy(ref, src, bytes);
            double t0 = gs_now_ms();
            qsort(ref, n, ks, wide ? cmp_u64 : cmp_u32);
            if (qt)
                qt[r] = gs_now_ms() - t0;
        }
        if (qt) {
            qs_ms = bu_median(qt, (size_t)reps);
            free(qt);
        }
        for (int w = 0; w < WAY_COUNT && !rc; w++) {
            if (only >= 0 && w != only)
                continue;
            double *t = calloc((size_t)reps, sizeof *t), *d = calloc((size_t)reps, sizeof *d);
            gsort_result res;
            memset(&res, 0, sizeof res);
            /* Rep -1 is a warm-up, not timed: the first request of a size or
             * transport may build a program or grow a staging buffer. */
            for (int r = -1; r < reps && t && d; r++) {
                void *keys = w == WAY_BLOCK ? block : plain;
                memcpy(keys, src, bytes);   /* not timed: the input a program would hold */
                gsort_request rq;
                gsort_request_init(&rq);
                rq.dtype = dt;
                rq.n = n;
                rq.keys = keys;
                /* the transports are measured: never sorted in this process */
                rq.flags = (w == WAY_INLINE ? GSORT_INLINE : 0) | GSORT_NO_LOCAL;
                rq.algorithm = algo;
                double t0 = gs_now_ms();
                if (gsort_run(c, &rq, &res, &err) < 0) {
                    fprintf(stderr, "gsort-clientbench: 2^%d %s: %s\n", lg, way_names[w],
                            err.message);
                    rc = 1;
                    break;
                }
                if (r >= 0) {
                    t[r] = gs_now_ms() - t0;
                    d[r] = res.daemon_ms;
                }
                if (memcmp(keys, ref, bytes) != 0) {
                    fprintf(stderr, "gsort-clientbench: 2^%d %s: WRONG ANSWER\n", lg,
                            way_names[w]);
                    rc = 1;
                    break;
                }
                if (res.zero_copy != (w != WAY_INLINE)) {
                    fprintf(stderr, "gsort-clientbench: 2^%d %s: went %s\n", lg, way_names[w],
                            res.zero_copy ? "through shared memory" : "inline");
                    rc = 1;
                    break;
                }
            }
            if (!t || !d) {
                fprintf(stderr, "gsort-clientbench: out of memory\n");
                rc = 1;
            }
            if (!rc) {
                double mt = bu_median(t, (size_t)reps), md = bu_median(d, (size_t)reps);
                printf("2^%-4d %-10s %10.3f %10.3f %9.1f  %s/%s/%s", lg, way_names[w], mt, md,
                       (double)n / mt / 1e3, res.device < 0 ? "host" : res.device_name,
                       res.algorithm, res.plan);
                if (qs_ms > 0)
                    printf("  %.1fx faster than qsort", qs_ms / mt);
                printf("\n");
                fflush(stdout);
            }
            free(t);
            free(d);
        }
        if (!rc && qs_ms > 0)
            printf("2^%-4d %-10s %10.3f %10s %9.1f  libc qsort in this process, same keys\n", lg,
                   "qsort", qs_ms, "-", (double)n / qs_ms / 1e3);
        free(src);
        free(ref);
        free(plain);
        gsort_free(block);
    }
    gsort_close(c);
    return rc;
}
