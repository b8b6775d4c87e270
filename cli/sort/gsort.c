/* gsort: sort a file of numbers through gsortd, the OpenCL sort service.
 * The input (raw native-endian elements of one type, or text with one
 * number a line) is read into memory the daemon maps (gsort_alloc), sorted
 * there with no copy through libgsort, and written to standard output or
 * to a file that is replaced only once the whole result is written. With
 * --local (or --fallback-local when no daemon runs) the registered host
 * sort does the work in this process instead. man/gsort.1 documents it. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_err.h"
#include "gs_narrow_sort.h"
#include "gs_sort.h"
#include "gs_types.h"
#include "gsort.h"
#include "gsort_io.h"
#include "gsort_text.h"
#include "gs_time.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: gsort [OPTION]... [FILE]...\n"
        "Sort numbers through gsortd, the OpenCL sort service, and write the\n"
        "result to standard output. FILEs are read one after the other; with no\n"
        "FILE, or when FILE is -, read standard input.\n"
        "\n"
        "Input and output:\n"
        "  -t, --type TYPE        element type: u32, i32, f32, u64, i64, f64, u8,\n"
        "                         i8, u16, i16, f16 (IEEE half) or bf16 (bfloat16),\n"
        "                         or numpy's name (uint32, float16, bfloat16, ...);\n"
        "                         required for binary input; text defaults to i64\n"
        "  -n, --text             text: one number per line in and out (decimal\n"
        "                         integers, or floats as strtod reads them);\n"
        "                         blank lines are skipped. Default: raw binary\n"
        "                         elements in the machine's byte order\n"
        "  -o, --output OUT       write to OUT instead of standard output; OUT may\n"
        "                         be an input: it is replaced only after success\n"
        "\n"
        "Ordering:\n"
        "  -r, --reverse          descending order (floats: NaNs first)\n"
        "  -s, --stable           equal keys keep their input order\n"
        "      --argsort          write the input positions of the sorted keys\n"
        "                         instead of the keys (u64; text: one a line)\n"
        "      --top K            only the first K of the order (the K smallest, with\n"
        "                         -r the K largest), found without sorting the rest\n"
        "      --bits LO:HI       order by bits LO to HI-1 of each key alone (bit 0\n"
        "                         the lowest; signed keys with the sign bit flipped,\n"
        "                         -r inverted first), keys equal there in input\n"
        "                         order; u32, i32, u64 and i64 keys\n"
        "\n"
        "Where the sort runs:\n"
        "  -S, --socket PATH      the daemon's socket (default: $GSORTD_SOCKET, else\n"
        "                         $XDG_RUNTIME_DIR/gsortd.sock if it exists and you\n"
        "                         are not root, else /run/gsortd/gsortd.sock)\n"
        "      --local            sort in this process with the host sort; no daemon\n"
        "      --fallback-local   use the daemon, or sort here (with a note on\n"
        "                         stderr) when none can be reached\n"
        "      --algorithm NAME   ask the daemon for radix, mergepath, shellsort,\n"
        "                         bitonic, host or vqsort instead of its tuned plan\n"
        "      --params LIST      with --algorithm: its parameters, name=value,...;\n"
        "                         a name left out takes its default\n"
        "      --device N         ask the daemon for device N\n"
        "      --inline           send the data on the socket, not shared memory\n"
        "      --timeout SECONDS  give up when the daemon makes no progress this long\n"
        "\n"
        "  -v, --verbose          say on stderr what was read, where and how it was\n"
        "                         sorted (device, algorithm, plan, times) and written\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 on success, 1 on a failure (no daemon, unreadable or\n"
        "malformed input, a daemon error, a write error), 2 on a usage error\n"
        "(options are checked before any input is read). A reader that goes away\n"
        "(gsort ... | head) ends gsort quietly by SIGPIPE, as it ends sort.\n"
        "See gsort(1).\n");
}

typedef struct opts {
    gsort_dtype dtype;
    int have_type, text, reverse, stable, argsort, verbose;
    int top;                /* --top: only the first top_k of the order */
    size_t top_k;
    int bits;               /* --bits: sort by bits [bit_lo, bit_hi) of the order code */
    unsigned bit_lo, bit_hi;
    int local, fallback, inline_, device;
    double timeout;
    const char *output, *socket, *algorithm, *params;
    const char *const *files;
    size_t nfiles;
} opts;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "gsort: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'gsort --help'.\n");
    return EXIT_USAGE;
}

/* --algorithm, --params and -s as the daemon would judge them whatever the
 * input, checked against the algorithm registry this build shares with
 * gsortd before any input is read: a mistyped name must not wait for a
 * long (or endless) input to be read and parsed first, and must not pass
 * unnoticed because the input happens to be empty. */
static void algo_names(char *buf, size_t len, int stable_only)
{
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < gs_algo_count() && w < len; i++) {
        const gs_algo *a = gs_algo_at(i);
        if (stable_only && !a->stable)
            continue;
        int k = snprintf(buf + w, len - w, "%s%s", w ? ", " : "", a->name);
        if (k < 0)
            break;
        w += (size_t)k;
    }
}

static int check_algorithm(const opts *o)
{
    if (!o->algorithm)
        return 0;
    if (strcmp(o->algorithm, "auto") == 0)
        return o->params ? usage_error("%s", "--params goes with an algorithm, not 'auto' "
                                       "(the daemon's plan)") : 0;
    const gs_algo *a = gs_algo_find(o->algorithm);
    char msg[512], names[256];
    if (!a) {
        algo_names(names, sizeof names, 0);
        snprintf(msg, sizeof msg, "unknown algorithm '%.200s' (known: %s)", o->algorithm, names);
        return usage_error("%s", msg);
    }
    if ((o->stable || o->bits) && !a->stable) {
        algo_names(names, sizeof names, 1);
        snprintf(msg, sizeof msg, "--algorithm %s is not stable and %s asks for a stable "
                 "sort (stable: %s)", a->name, o->stable ? "-s" : "--bits", names);
        return usage_error("%s", msg);
    }
    if (o->params) {
        gs_params ps;
        gs_err e;
        gs_err_clear(&e);
        if (a->nparams == 0) {
            snprintf(msg, sizeof msg, "--params: %s takes no parameters", a->name);
            return usage_error("%s", msg);
        }
        /* The names, as the algorithm's check() takes them; a name left out
         * takes its default there, and legal values depend on the device,
         * so they stay the daemon's to judge. */
        long v[GS_MAX_PARAMS];
        gs_params d;
        gs_params_clear(&d);
        for (size_t i = 0; i < a->nparams; i++)
            gs_params_set(&d, a->params[i].name, 0);    /* any value: names only */
        if (gs_params_parse(o->params, &ps, &e) < 0 ||
            gs_params_take(a->name, a->params, a->nparams, &ps, &d, v, &e) < 0) {
            snprintf(msg, sizeof msg, "--params '%.200s': %.280s", o->params, e.msg);
            return usage_error("%s", msg);
        }
    }
    return 0;
}

/* The key type's two names, from its row (gsc_type_name: gs_types.c or
 * gs_narrow.c). */
static int parse_type(const char *s, gsort_dtype *out)
{
    for (int i = 0; i < GSC_TYPES; i++) {
        if (strcmp(s, gsc_type_name((gsort_dtype)i)) == 0 ||
            strcmp(s, gsc_type_np_name((gsort_dtype)i)) == 0) {
            *out = (gsort_dtype)i;
            return 0;
        }
    }
    return -1;
}

#define TYPE_LIST "u32, i32, f32, u64, i64, f64, u8, i8, u16, i16, f16 or bf16"

enum {
    OPT_ARGSORT = 256, OPT_LOCAL, OPT_FALLBACK, OPT_ALGO, OPT_PARAMS, OPT_DEVICE,
    OPT_INLINE, OPT_TIMEOUT, OPT_TOP, OPT_BITS,
};

/* --bits LO:HI: two bit numbers (checked against the key type later). */
static int parse_bits(const char *arg, opts *o)
{
    char *end;
    unsigned long v[2];
    const char *p = arg;
    for (int i = 0; i < 2; i++) {
        if (*p < '0' || *p > '9')
            return -1;
        errno = 0;
        v[i] = strtoul(p, &end, 10);
        if (errno || v[i] > 64 || *end != (i ? '\0' : ':'))
            return -1;
        p = end + 1;
    }
    o->bits = 1;
    o->bit_lo = (unsigned)v[0];
    o->bit_hi = (unsigned)v[1];
    return 0;
}

/* --bits against the key type, as gsortd judges a range (gsort_run_bits):
 * 32- and 64-bit integers, 0 <= LO < HI <= the key's bits, not with --top;
 * the whole key is a plain sort. 0 or the exit status of a usage error. */
static int check_bits(opts *o)
{
    if (!o->bits)
        return 0;
    if (o->dtype != GSORT_U32 && o->dtype != GSORT_I32 && o->dtype != GSORT_U64 &&
        o->dtype != GSORT_I64)
        return usage_error("--bits sorts 32- and 64-bit integer keys (u32, i32, u64, i64), "
                           "not %s", gsc_type_name(o->dtype));
    unsigned kb = (unsigned)gsc_type_size(o->dtype) * 8;
    if (o->bit_lo >= o->bit_hi || o->bit_hi > kb) {
        char msg[160];
        snprintf(msg, sizeof msg, "--bits %u:%u is not a range within the %u bits of a %s key "
                 "(LO:HI, 0 <= LO < HI <= %u)", o->bit_lo, o->bit_hi, kb,
                 gsc_type_name(o->dtype), kb);
        return usage_error("%s", msg);
    }
    if (o->top)
        return usage_error("%s", "--bits sorts the whole input; it does not go with --top");
    if (o->bit_lo == 0 && o->bit_hi == kb)
        o->bits = 0;        /* the whole key */
    return 0;
}

/* 0 with *done clear: run; 0 with *done set: --help or --version was
 * answered; else the exit status of a usage error. */
static int parse_args(int argc, char **argv, opts *o, int *done)
{
    static const struct option lopts[] = {
        { "type", required_argument, 0, 't' },
        { "text", no_argument, 0, 'n' },
        { "output", required_argument, 0, 'o' },
        { "reverse", no_argument, 0, 'r' },
        { "stable", no_argument, 0, 's' },
        { "argsort", no_argument, 0, OPT_ARGSORT },
        { "top", required_argument, 0, OPT_TOP },
        { "bits", required_argument, 0, OPT_BITS },
        { "socket", required_argument, 0, 'S' },
        { "local", no_argument, 0, OPT_LOCAL },
        { "fallback-local", no_argument, 0, OPT_FALLBACK },
        { "algorithm", required_argument, 0, OPT_ALGO },
        { "params", required_argument, 0, OPT_PARAMS },
        { "device", required_argument, 0, OPT_DEVICE },
        { "inline", no_argument, 0, OPT_INLINE },
        { "timeout", required_argument, 0, OPT_TIMEOUT },
        { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    int c;
    char *end;
    memset(o, 0, sizeof *o);
    o->device = -1;
    *done = 0;
    while ((c = getopt_long(argc, argv, "t:no:rsS:vhV", lopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_type(optarg, &o->dtype) < 0)
                return usage_error("unknown type '%s' (" TYPE_LIST ")", optarg);
            o->have_type = 1;
            break;
        case 'n': o->text = 1; break;
        case 'o': o->output = optarg; break;
        case 'r': o->reverse = 1; break;
        case 's': o->stable = 1; break;
        case OPT_ARGSORT: o->argsort = 1; break;
        case OPT_TOP: {
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return usage_error("--top '%s': expected a count of keys (0 or more)", optarg);
            o->top = 1;
            o->top_k = v > SIZE_MAX ? SIZE_MAX : (size_t)v;
            break;
        }
        case OPT_BITS:
            if (parse_bits(optarg, o) < 0)
                return usage_error("--bits '%s': expected LO:HI, two bit numbers (--bits 0:8 "
                                   "sorts by the lowest byte)", optarg);
            break;
        case 'S': o->socket = optarg; break;
        case OPT_LOCAL: o->local = 1; break;
        case OPT_FALLBACK: o->fallback = 1; break;
        case OPT_ALGO: o->algorithm = optarg; break;
        case OPT_PARAMS: o->params = optarg; break;
        case OPT_DEVICE: {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0 || v > 1023)
                return usage_error("--device '%s': expected a device index (0 to 1023)",
                                   optarg);
            o->device = (int)v;
            break;
        }
        case OPT_INLINE: o->inline_ = 1; break;
        case OPT_TIMEOUT: {
            errno = 0;
            double v = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(v) || v <= 0)
                return usage_error("--timeout '%s': expected a positive number of seconds",
                                   optarg);
            o->timeout = v;
            break;
        }
        case 'v': o->verbose = 1; break;
        case 'h': usage(stdout); *done = 1; return 0;
        case 'V':
            printf("gsort (gsortd) %s, libgsort %s\n", PACKAGE_VERSION, gsort_version());
            *done = 1;
            return 0;
        default:
            fprintf(stderr, "Try 'gsort --help'.\n");
            return EXIT_USAGE;
        }
    }
    /* No FILE: standard input, as "-" names it. */
    static const char *const stdin_only[] = { "-" };
    o->files = optind < argc ? (const char *const *)argv + optind : stdin_only;
    o->nfiles = optind < argc ? (size_t)(argc - optind) : 1;

    if (!o->have_type) {
        if (!o->text)
            return usage_error("%s", "binary input needs -t TYPE (" TYPE_LIST "); for text, "
                               "one number a line, give -n");
        o->dtype = GSORT_I64;
    }
    if (o->params && !o->algorithm)
        return usage_error("%s", "--params goes with --algorithm NAME");
    int rc = check_bits(o);
    if (rc)
        return rc;
    rc = check_algorithm(o);
    if (rc)
        return rc;
    if (o->local) {
        const char *daemon_only = o->fallback ? "--fallback-local"
            : o->socket ? "--socket" : o->device >= 0 ? "--device"
            : o->params ? "--params" : o->inline_ ? "--inline"
            : o->timeout > 0 ? "--timeout"
            : o->algorithm && strcmp(o->algorithm, "host") ? "--algorithm" : NULL;
        if (daemon_only)
            return usage_error("--local sorts in this process with the host sort; %s needs "
                               "the daemon", daemon_only);
    }
    /* Raw binary on a terminal only garbles it (gzip refuses likewise). */
    if (!o->text && (!o->output || strcmp(o->output, "-") == 0) && isatty(STDOUT_FILENO))
        return usage_error("%s", "not writing binary data to a terminal: redirect standard "
                           "output, give -o FILE, or -n for text");
    return 0;
}

/* Argsort: the u64 indices follow the keys in the same block (8-byte
 * aligned), so one gsort_alloc block holds both and neither is copied. */
static int g_argsort;
static size_t g_esize;

static size_t keys_bytes_padded(size_t n)
{
    return (n * g_esize + 7) & ~(size_t)7;
}

static size_t extra_for(size_t n)
{
    return g_argsort ? keys_bytes_padded(n) - n * g_esize + n * 8 : 0;
}

static const char *inputs_name(const opts *o, char *buf, size_t len)
{
    if (o->nfiles == 1 && strcmp(o->files[0], "-") == 0)
        return "standard input";
    if (o->nfiles == 1)
        return o->files[0];
    snprintf(buf, len, "%zu files", o->nfiles);
    return buf;
}

static void no_daemon_hint(const char *msg)
{
    fprintf(stderr, "gsort: %s\n"
            "gsort: start one with 'gsortd' (see gsortd(8)), name its socket with -S PATH, "
            "or sort here without a daemon with --local\n", msg);
}

/* Connect and apply --timeout; on failure ge says why. */
static int connect_daemon(const opts *o, gsort_conn **c, gsort_error *ge)
{
    int rc = gsort_connect(c, o->socket, ge);
    if (rc == 0 && o->timeout > 0 && (rc = gsort_set_timeout(*c, o->timeout, ge)) < 0) {
        gsort_close(*c);
        *c = NULL;
    }
    return rc;
}

/* 8- and 16-bit keys' words sorted by the host sort (gs_narrow_run's). */
static int narrow_words(void *arg, const gs_sort_req *req, gs_sort_stats *st, gs_err *err)
{
    return gs_sort_run(arg, NULL, req, NULL, st, err);
}

static int sort_local(const opts *o, void *keys, size_t n, uint64_t *idx, size_t k,
                      gs_err *err)
{
    const gs_algo *a = gs_algo_find("host");
    if (!a)
        return gs_err_set(err, GS_ENOTFOUND, "the host sort is not registered");
    int nw = gsc_type_narrow(o->dtype);
    gs_sort_req req = {
        /* the six wide types: the same numbers as gs_dtype (gsort_text.h) */
        .shape = { .dtype = nw ? GS_DT_U32 : (gs_dtype)o->dtype,
                   .payload = o->argsort ? GS_PL_IDX64 : GS_PL_NONE,
                   .descending = o->reverse,
                   .stable = o->stable,
                   .topk = o->top, .k = k,
                   .begin_bit = o->bits ? o->bit_lo : 0, .end_bit = o->bits ? o->bit_hi : 0 },
        .n = n,
        .keys = keys,
        .values = idx,
    };
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    if (!nw)
        return gs_sort_run(a, NULL, &req, NULL, &st, err);
    /* encoded into u32 words, sorted, decoded back (as gsortd does) */
    if (n == 0)
        return 0;
    uint32_t *words = malloc(n * sizeof *words);
    if (!words)
        return gs_err_set(err, GS_ENOMEM, "out of memory for %zu words", n);
    gs_narrow_job jb;
    gs_narrow_job_init(&jb, nw, &req.shape, n, keys, idx, words);
    int rc = gs_narrow_run(&jb, narrow_words, (void *)a, &st, err);
    free(words);
    return rc;
}

static void print_result(const gsort_result *r, const char *sock)
{
    if (strcmp(r->plan, "local") == 0) {
        /* libgsort sorted it here: fewer keys than pay for a round trip,
         * or below the daemon's crossover (it would run the same sort) */
        fprintf(stderr, "gsort: sorted here by libgsort with the host sort (no round trip to "
                "gsortd at %s: it would sort them the same way, or a round trip costs more) "
                "in %.3f ms\n", sock, r->total_ms);
        return;
    }
    if (r->device < 0 && strcmp(r->algorithm, "host") == 0)
        fprintf(stderr, "gsort: gsortd at %s sorted with the host sort; plan %s; %s\n", sock,
                r->plan, r->zero_copy ? "zero-copy" : "inline");
    else if (r->device < 0)
        fprintf(stderr, "gsort: gsortd at %s sorted on the host with %s; plan %s; %s\n", sock,
                r->algorithm, r->plan, r->zero_copy ? "zero-copy" : "inline");
    else
        fprintf(stderr, "gsort: gsortd at %s sorted on device %d (%s) with %s; plan %s; %s\n",
                sock, r->device, r->device_name, r->algorithm, r->plan,
                r->zero_copy ? "zero-copy" : "inline");
    if (r->params[0])
        fprintf(stderr, "gsort: parameters %s\n", r->params);
    if (r->fallback[0])
        fprintf(stderr, "gsort: fallback: %s\n", r->fallback);
    fprintf(stderr, "gsort: daemon %.3f ms (queue %.3f, upload %.3f, sort %.3f, download "
            "%.3f); whole call %.3f ms\n", r->daemon_ms, r->queue_ms, r->upload_ms,
            r->sort_ms, r->download_ms, r->total_ms);
}

/* No daemon to sort with: -1 to go on here (--fallback-local, with a
 * note), else the exit status after saying why. */
static int no_daemon(const opts *o, const gsort_error *ge)
{
    if (o->fallback) {
        fprintf(stderr, "gsort: note: %s; sorting here with the host sort "
                "(--fallback-local)\n", ge->message);
        return -1;
    }
    if (ge->code == GSORT_ENODAEMON)
        no_daemon_hint(ge->message);
    else
        fprintf(stderr, "gsort: %s\n", ge->message);
    return EXIT_FAIL;
}

static int run(const opts *o)
{
    gs_err err;
    gs_err_clear(&err);
    gsort_error ge;
    memset(&ge, 0, sizeof ge);
    int local = o->local, rc;
    char namebuf[64];

    /* One connection, made before reading a possibly long input, so that
     * no daemon (or a daemon that refuses this user) fails at once. */
    gsort_conn *c = NULL;
    if (!local && connect_daemon(o, &c, &ge) < 0) {
        if ((rc = no_daemon(o, &ge)) >= 0)
            return rc;
        local = 1;
    }

    gsc_output out;
    if (gsc_output_open(&out, o->output, &err) < 0) {
        fprintf(stderr, "gsort: %s\n", err.msg);
        gsort_close(c);
        return EXIT_FAIL;
    }

    g_esize = gsc_type_size(o->dtype);
    g_argsort = o->argsort;
    int shared = !local && !o->inline_;
    gsc_buf buf;
    size_t n = 0;
    double t0 = gs_now_ms();
    if (o->text)
        rc = gsc_text_read(o->files, o->nfiles, o->dtype, !o->have_type, extra_for, shared,
                           &buf, &n, &err);
    else
        rc = gsc_read_binary(o->files, o->nfiles, g_esize, gsc_type_name(o->dtype), extra_for,
                             shared, &buf, &n, &err);
    if (rc < 0) {
        fprintf(stderr, "gsort: %s\n", err.msg);
        gsc_output_abort(&out);
        gsort_close(c);
        return EXIT_FAIL;
    }
    double t1 = gs_now_ms();
    if (o->verbose)
        fprintf(stderr, "gsort: read %zu %s keys (%zu bytes) from %s in %.3f ms%s\n", n,
                gsc_type_name(o->dtype), n * g_esize, inputs_name(o, namebuf, sizeof namebuf),
                t1 - t0, !shared || n == 0 ? "" : buf.shared ? ", into shared memory"
                : ", into heap memory (no shared memory available)");

    void *keys = buf.ptr;
    uint64_t *idx = o->argsort && n ? (uint64_t *)((char *)buf.ptr + keys_bytes_padded(n))
                                    : NULL;
    int status = EXIT_OK;
    /* --top K past the input: all of it, sorted (as sort | head) */
    size_t k = o->top ? (o->top_k < n ? o->top_k : n) : n;
    /* Empty input goes to the daemon (or the host sort) too: it judges the
     * request (device, parameters) as it would any other. */
    if (!local) {
        gsort_result res;
        gsort_request rq;
        gsort_request_init(&rq);
        rq.dtype = o->dtype;
        rq.n = n;
        rq.keys = keys;
        rq.values_kind = o->argsort ? GSORT_VALUES_IDX64 : GSORT_VALUES_NONE;
        rq.values = idx;
        rq.flags = (o->reverse ? GSORT_DESCENDING : 0) |
                   (o->stable ? GSORT_STABLE : 0) |
                   (o->inline_ ? GSORT_INLINE : 0);
        rq.algorithm = o->algorithm;
        rq.params = o->params;
        rq.device = o->device;
        /* libgsort replaces a connection the daemon closed while the input
         * was read (idle_timeout, a restart) before it sends; a daemon gone
         * for good is ENODAEMON, which --fallback-local turns into a local
         * sort. */
        if ((o->top ? gsort_topk(c, &rq, 1, k, keys, idx, &res, &ge)
             : o->bits ? gsort_run_bits(c, &rq, o->bit_lo, o->bit_hi, &res, &ge)
                    : gsort_run(c, &rq, &res, &ge)) < 0) {
            if (ge.code != GSORT_ENODAEMON) {
                fprintf(stderr, "gsort: %s\n", ge.message);
                status = EXIT_FAIL;
            } else if ((rc = no_daemon(o, &ge)) >= 0) {
                status = rc;
            } else {
                local = 1;
            }
        } else if (o->verbose) {
            print_result(&res, gsort_socket_path(c));
        }
        gsort_close(c);
        c = NULL;
    }
    if (local && status == EXIT_OK) {
        double s0 = gs_now_ms();
        if (sort_local(o, keys, n, idx, k, &err) < 0) {
            fprintf(stderr, "gsort: host sort: %s\n", err.msg);
            status = EXIT_FAIL;
        } else if (o->verbose) {
            fprintf(stderr, "gsort: sorted here with the host sort in %.3f ms\n",
                    gs_now_ms() - s0);
        }
    }

    if (status == EXIT_OK) {
        double w0 = gs_now_ms();
        if (o->text)
            rc = o->argsort ? gsc_text_write_indices(&out, idx, k, &err)
                            : gsc_text_write_keys(&out, o->dtype, keys, k, &err);
        else
            rc = o->argsort ? gsc_output_write(&out, idx, k * 8, &err)
                            : gsc_output_write(&out, keys, k * g_esize, &err);
        if (rc == 0)
            rc = gsc_output_commit(&out, &err);
        if (rc < 0) {
            /* The reader went away (SIGPIPE ignored, else it ended us
             * already): not worth a message, as with sort. */
            if (!out.broken_pipe)
                fprintf(stderr, "gsort: %s\n", err.msg);
            status = EXIT_FAIL;
        } else if (o->verbose) {
            fprintf(stderr, "gsort: wrote %zu %s to %s in %.3f ms\n", k,
                    o->argsort ? "indices" : "keys", out.display, gs_now_ms() - w0);
        }
    }
    if (status != EXIT_OK)
        gsc_output_abort(&out);
    gsc_buf_free(&buf);
    return status;
}

int main(int argc, char **argv)
{
    opts o;
    int done, rc = parse_args(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    /* SIGPIPE keeps the disposition gsort was started with: by default a
     * reader that goes away (gsort ... | head) ends gsort quietly, with the
     * status sort has there (141 in a shell). The daemon's socket never
     * raises it (libgsort sends with MSG_NOSIGNAL). */
    return run(&o);
}
