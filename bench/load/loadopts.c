/* gsort-load's options (loadopts.h): the usage text and the parser. */
#include "config.h"
#include "loadopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsort-load [options]\n"
            "Load test of a running gsortd: concurrent clients send mixed sorts (every dtype\n"
            "and payload, asc/desc, stable or not, n log-uniform in 0..2^B; a third each\n"
            "inline, through a one-shot memfd and through the client's registered block)\n"
            "and malformed requests; every answer is checked.\n"
            "  -S, --socket PATH     the daemon's socket (default: $GSORTD_SOCKET, else gsortd's)\n"
            "  -c, --clients N       concurrent client threads (default 8)\n"
            "  -m, --requests M      requests per client after the warm-up (default 200)\n"
            "      --duration SEC    instead of -m: the main phase lasts SEC seconds (no\n"
            "                        request starts after them; RSS and pinned samples at\n"
            "                        tenths of the time)\n"
            "  -w, --warmup W        warm-up requests per client (default 20)\n"
            "  -B, --max-log2 B      largest n = 2^B (default 16, at most %d)\n"
            "      --min-log2 A      n log-uniform in 2^A..2^B (default 0: 0..2^B, n = 0 too)\n"
            "      --block-max-log2 K  a client's registered block holds up to 2^K u64 keys\n"
            "                        and values (default 24); larger block requests go\n"
            "                        through a one-shot memfd\n"
            "      --vanish-pct P    percent of valid sorts sent whole and then abandoned:\n"
            "                        the connection closed without reading the reply, a new\n"
            "                        one opened (default 0); RSS and pinned bytes are then\n"
            "                        read once the daemon holds only this run's connections\n"
            "                        (at most the reply timeout later)\n"
            "  -p, --malformed PCT   percent of requests that are malformed (default 5)\n"
            "  -s, --seed S          random seed (default 1)\n"
            "  -t, --timeout SEC     longest wait for one reply (default 120)\n"
            "  -d, --device N        daemon device that --device-pct of the sorts name, with\n"
            "                        a device algorithm (radix, mergepath, shellsort)\n"
            "      --device-pct P    percent of sorts sent to --device (default 25)\n"
            "      --racers R        R more clients during the main phase, each sorting\n"
            "                        through a memfd (one-shot or its block) while a thread\n"
            "                        of its own rewrites the keys and values (every\n"
            "                        algorithm and the plan in turn, n in 2^A..2^B): their\n"
            "                        answers are not checked, but each must come back as a\n"
            "                        reply (a lost connection fails the run) while the\n"
            "                        other clients' answers stay exact (default 0)\n"
            "      --corrupt-every K spoil every Kth reply before checking it (tests the\n"
            "                        checker: each must count as a wrong answer)\n"
            "      --rss-slack-pct P RSS bound: end <= warm-up x (1 + P/100) + MiB (default 10)\n"
            "      --rss-slack-mib M ... + M MiB (default 16)\n"
            "                        (RSS less RssShmem: the client memfds the daemon maps\n"
            "                        are the clients' memory, and its kept blocks grow\n"
            "                        with theirs; and less the scratch and CPU-device\n"
            "                        buffers it keeps for reuse, stats memory.cached,\n"
            "                        each under a cap of its own)\n"
            "      --no-rss          do not read or bound the daemon's RSS (another host/pid ns)\n"
            "      --pinned-slack-mib M  slack of the pinned-bytes bounds (default 64). The\n"
            "                        daemon's pinned bytes rise and fall as blocks are kept\n"
            "                        (used twice on a connection) and dropped (with it), so\n"
            "                        the end must stay <= the peak polled (each second)\n"
            "                        before the last tenth + M: a leak still climbing fails;\n"
            "                        and with every client gone they must fall back to\n"
            "                        their value before the run + M: a leak that already\n"
            "                        reached max_pinned_bytes (flat since) fails too\n"
            "  -q, --quiet           only the summary lines\n"
            "Exit status: 0 when every answer is right, every error expected, the daemon\n"
            "answers a ping at the end and its RSS and pinned bytes stayed bounded; 1\n"
            "otherwise; 2 usage.\n",
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

int lo_parse(int argc, char **argv, lo_opts *o)
{
    *o = (lo_opts){ .clients = 8, .requests = 200, .warmup = 20, .max_log2 = 16,
                    .malformed_pct = 5, .device = -1, .device_pct = 25, .timeout_s = 120,
                    .rss_pct = 10, .rss_mib = 16, .seed = 1, .check_rss = 1,
                    .block_max_log2 = 24, .pin_mib = 64 };
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
            o->socket = v;
            i++;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--clients")) NUM(1, 1024, o->clients);
        else if (!strcmp(a, "-m") || !strcmp(a, "--requests")) NUM(0, 1e8, o->requests);
        else if (!strcmp(a, "-w") || !strcmp(a, "--warmup")) NUM(0, 1e8, o->warmup);
        else if (!strcmp(a, "-B") || !strcmp(a, "--max-log2")) NUM(0, MAX_LOG2_LIMIT, o->max_log2);
        else if (!strcmp(a, "--min-log2")) NUM(0, MAX_LOG2_LIMIT, o->min_log2);
        else if (!strcmp(a, "--duration")) NUM(0.001, 1e7, o->duration_s);
        else if (!strcmp(a, "--block-max-log2")) NUM(0, MAX_LOG2_LIMIT, o->block_max_log2);
        else if (!strcmp(a, "--vanish-pct")) NUM(0, 100, o->vanish_pct);
        else if (!strcmp(a, "--pinned-slack-mib")) NUM(0, 1e7, o->pin_mib);
        else if (!strcmp(a, "-p") || !strcmp(a, "--malformed")) NUM(0, 100, o->malformed_pct);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) NUM(0, 1e18, o->seed);
        else if (!strcmp(a, "-t") || !strcmp(a, "--timeout")) NUM(0.1, 86400, o->timeout_s);
        else if (!strcmp(a, "--rss-slack-pct")) NUM(0, 1000, o->rss_pct);
        else if (!strcmp(a, "--rss-slack-mib")) NUM(0, 1e6, o->rss_mib);
        else if (!strcmp(a, "-d") || !strcmp(a, "--device")) NUM(0, 1023, o->device);
        else if (!strcmp(a, "--device-pct")) NUM(0, 100, o->device_pct);
        else if (!strcmp(a, "--corrupt-every")) NUM(0, 1e9, o->corrupt_every);
        else if (!strcmp(a, "--racers")) NUM(0, 256, o->racers);
        else if (!strcmp(a, "--no-rss")) o->check_rss = 0;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "gsort-load: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef NUM
    }
    if (o->min_log2 > o->max_log2) {
        fprintf(stderr, "gsort-load: --min-log2 %d is above --max-log2 %d\n", o->min_log2,
                o->max_log2);
        return 2;
    }
    return 0;
}
