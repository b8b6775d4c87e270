/* gsort-bench: times a sort algorithm over a range of sizes on one device
 * and prints, per size and parameter set, the median kernel time (OpenCL
 * profiling events), the median wall time (upload + kernels + download) and
 * the kernel throughput in Gkeys/s. Every result is validated (sorted in
 * the requested order, keys' checksum preserved, payload consistent) and a
 * wrong one is reported loudly with a non-zero exit. Optionally times libc
 * qsort for comparison. Keys are random bits by default (floats therefore
 * include NaNs and infinities); --dist gives sorted, reversed (both spread
 * over the whole key range, so no radix pass is trivially skipped) or
 * 16-distinct inputs; --key-bits B keeps each key's low B bits (the u32
 * words that 8- and 16-bit keys become, whose high digits radix skips);
 * --half sorts 16-bit codes held in 2 bytes each (the daemon's words for
 * 8- and 16-bit keys on a device that takes them, radix's GS_K16 build). */
#include "config.h"
#include "benchutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs_algos.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_kern.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_narrow.h"
#include "gs_prog.h"
#include "gs_sort.h"

#define MAX_SETS 32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsort-bench [options]\n"
            "  --device N        OpenCL device index (default: first GPU, else first device)\n"
            "  --list            list devices and exit\n"
            "  --algo NAME       algorithm (default radix; 'host' runs the host sort)\n"
            "  --params S        parameter set, e.g. radix_bits=8,wg_size=256,elems_per_thread=8\n"
            "                    (repeatable; default: the algorithm's defaults for the device;\n"
            "                    names left out take their defaults: --params lookback=0\n"
            "                    --params lookback=1 times radix's two pass structures)\n"
            "  --dtype T         u32 i32 f32 u64 i64 f64 (default u32)\n"
            "  --payload P       none u32 u64 idx32 idx64 (default none)\n"
            "  --desc            sort descending\n"
            "  --min-log2 A      smallest n = 2^A (default 10)\n"
            "  --max-log2 B      largest n = 2^B (default 27; stops at device limits)\n"
            "  --reps R          timed runs per point, median reported (default 5)\n"
            "  --qsort           also time libc qsort (n <= 2^24)\n"
            "  --csv             comma-separated output\n"
            "  --seed S          random seed\n"
            "  --dist D          random (default), sorted, reversed, few16\n"
            "  --key-bits B      keep each key's low B bits (1..64; default all)\n"
            "  --bits LO:HI      sort by bits [LO, HI) of each key alone (integer keys)\n"
            "  --half            16-bit codes, 2 bytes each (u32 ascending, flat; radix):\n"
            "                    what 8- and 16-bit keys become on the device\n"
            "  --count M         radix, 16-bit keys alone: 1 counts their codes, 0 sorts\n"
            "                    them by radix's 8-bit passes, -1 the default (a GPU counts\n"
            "                    from 2^20 keys)\n"
            "  --verbose         debug log (per-stage kernel times of the radix sort)\n"
            "  --kernel-dir D    kernel sources from D instead of the built-in copies\n"
            "                    (to time an edited kernel without rebuilding)\n"
            "  --cl-opts S       extra OpenCL compiler options for every build\n"
            "                    (e.g. -cl-nv-maxrregcount=64 -cl-nv-verbose)\n"
            "  --min-chunk K     host: keys per chunk, at least, before a second thread\n"
            "                    helps (default 262144; 0 keeps it)\n"
            "  --pairs M         radix, 32-bit keys with 32-bit values: 1 ranks each pair\n"
            "                    as one 64-bit word, 0 never, -1 the device's default\n"
            "  --topk K          top-k: only each row's first K of the order (K capped at\n"
            "                    the row), checked against the host sort's first K\n"
            "  --row-len L       each request is n / L rows of L keys (a power of two),\n"
            "                    each sorted on its own (issue 38); n below L is skipped\n"
            "  --segments M[:L]  each request is segments of random lengths 0 to 2M keys\n"
            "                    (the last takes the rest), each sorted on its own; with\n"
            "                    :L one segment in 64 holds L keys instead (long ones among\n"
            "                    short, where padding every one to the longest costs most)\n");
}


/* Sorted in encoded order, same multiset of keys (sum and xor of the
 * encoded keys; NaN payloads are restored by gs_sort_run so raw bits would
 * do too), and a payload that goes with its key: stored values keep their
 * sum, indices point at an input element with the same key. */
static int validate(const gs_sort_req *r, const void *in_keys, const void *in_vals, char *why,
                    size_t wl)
{
    size_t vs = gs_payload_size(r->shape.payload);
    gs_dtype t = r->shape.dtype;
    int desc = r->shape.descending;
    uint64_t s0 = 0, x0 = 0, s1 = 0, x1 = 0, prev = 0;
    /* --bits: in order by the range alone */
    const unsigned lo = gs_shape_bit_lo(&r->shape), w = gs_shape_bit_width(&r->shape);
    const uint64_t fmask = w >= 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
    const int half = r->shape.narrow != 0;    /* --half: unsigned 16-bit codes */
    for (size_t i = 0; i < r->n; i++) {
        uint64_t a = half ? gs_key_get(in_keys, i, 2) : gs_key_encoded(t, desc, in_keys, i);
        uint64_t b = half ? gs_key_get(r->keys, i, 2) : gs_key_encoded(t, desc, r->keys, i);
        s0 += a;
        x0 ^= a;
        s1 += b;
        x1 ^= b;
        const uint64_t f = (b >> lo) & fmask;
        if (i && f < prev) {
            snprintf(why, wl, "keys out of order at %zu", i);
            return 0;
        }
        prev = f;
    }
    if (s0 != s1 || x0 != x1) {
        snprintf(why, wl, "key checksum changed");
        return 0;
    }
    if (r->shape.payload == GS_PL_U32 || r->shape.payload == GS_PL_U64) {
        uint64_t a = 0, b = 0;
        for (size_t i = 0; i < r->n; i++) {
            a += gs_key_get(in_vals, i, vs);
            b += gs_key_get(r->values, i, vs);
        }
        if (a != b) {
            snprintf(why, wl, "value checksum changed");
            return 0;
        }
    } else if (r->shape.payload == GS_PL_IDX32 || r->shape.payload == GS_PL_IDX64) {
        for (size_t i = 0; i < r->n; i++) {
            uint64_t j = gs_key_get(r->values, i, vs);
            if (j >= r->n ||
                (half ? gs_key_get(in_keys, j, 2) != gs_key_get(r->keys, i, 2)
                      : gs_key_encoded(t, desc, in_keys, j) != gs_key_encoded(t, desc, r->keys, i))) {
                snprintf(why, wl, "index %zu -> %" PRIu64 " does not hold that key", i, j);
                return 0;
            }
        }
    }
    return 1;
}

/* validate() for each row of a request of equal rows, or each segment:
 * each on its own, its indices counted within it. */
static int validate_rows(const gs_sort_req *r, const void *in_keys, const void *in_vals,
                         char *why, size_t wl)
{
    const size_t S = (size_t)r->shape.segments;
    if (r->shape.rows <= 1 && !S)
        return validate(r, in_keys, in_vals, why, wl);
    size_t ks = gs_dtype_size(r->shape.dtype), vs = gs_payload_size(r->shape.payload);
    size_t len = S ? 0 : r->n / (size_t)r->shape.rows;
    for (size_t i = 0; i < (S ? S : (size_t)r->shape.rows); i++) {
        gs_sort_req row = S ? gs_sort_req_segment(r, i) : gs_sort_req_row(r, i);
        size_t at = S ? (size_t)r->offsets[i] : i * len;
        char w[200];
        if (!validate(&row, (const char *)in_keys + at * ks,
                      in_vals ? (const char *)in_vals + at * vs : NULL, w, sizeof w)) {
            snprintf(why, wl, "%s %zu: %s", S ? "segment" : "row", i, w);
            return 0;
        }
    }
    return 1;
}

/* Top-k (--topk): each row's first k keys against the host sort's of a
 * copy of the row (encoded: NaN bits aside), indices pointing at them. */
static int validate_topk(const gs_sort_req *r, const void *in_keys, char *why, size_t wl)
{
    size_t rows = r->shape.rows > 1 ? (size_t)r->shape.rows : 1, len = r->n / rows;
    size_t k = (size_t)r->shape.k, ks = gs_dtype_size(r->shape.dtype);
    size_t vs = gs_payload_size(r->shape.payload);
    gs_dtype t = r->shape.dtype;
    int desc = r->shape.descending, ok = 1;
    void *tmp = malloc(len * ks + 1);
    if (!tmp)
        return 0;
    for (size_t i = 0; i < rows && ok; i++) {
        const char *in = (const char *)in_keys + i * len * ks;
        memcpy(tmp, in, len * ks);
        gs_sort_req w = { .shape = { .dtype = t, .descending = desc }, .n = len, .keys = tmp };
        if (gs_sort_run(gs_algo_find("host"), NULL, &w, NULL, NULL, NULL) < 0) {
            snprintf(why, wl, "the reference sort failed");
            ok = 0;
        }
        for (size_t j = 0; j < k && ok; j++) {
            const char *got = (const char *)r->keys + i * len * ks;
            uint64_t e = gs_key_encoded(t, desc, got, j);
            if (e != gs_key_encoded(t, desc, tmp, j)) {
                snprintf(why, wl, "row %zu: place %zu is not the sort's", i, j);
                ok = 0;
            } else if (r->shape.payload == GS_PL_IDX32 || r->shape.payload == GS_PL_IDX64) {
                uint64_t at = gs_key_get((const char *)r->values + i * len * vs, j, vs);
                if (at >= len || gs_key_encoded(t, desc, in, at) != e) {
                    snprintf(why, wl, "row %zu: index at place %zu does not hold its key", i, j);
                    ok = 0;
                }
            }
        }
    }
    free(tmp);
    return ok;
}

/* qsort comparison on the encoded order (bench only; not stable). */
static gs_dtype q_dtype;
static int q_desc;
static int cmp_key(const void *a, const void *b)
{
    uint64_t x = gs_key_encoded(q_dtype, q_desc, a, 0), y = gs_key_encoded(q_dtype, q_desc, b, 0);
    return x < y ? -1 : x > y;
}

typedef struct row {
    const char *dev, *algo, *params, *dtype, *payload;
    size_t n;
    double kernel_ms, wall_ms, gkeys;
    const char *note;
} row;

static void print_row(const row *r, int csv)
{
    if (csv)
        printf("\"%s\",%s,\"%s\",%s,%s,%zu,%.4f,%.4f,%.4f,%s\n", r->dev, r->algo, r->params,
               r->dtype, r->payload, r->n, r->kernel_ms, r->wall_ms, r->gkeys, r->note);
    else
        printf("%-24.24s %-6s %-56.56s %-4s %-6s %11zu %10.4f %10.4f %8.3f %s\n", r->dev,
               r->algo, r->params, r->dtype, r->payload, r->n, r->kernel_ms, r->wall_ms, r->gkeys,
               r->note);
    fflush(stdout);
}

static const char *const dist_names[] = { "random", "sorted", "reversed", "few16" };

/* The command line. */
typedef struct bopts {
    long devidx;              /* -1: the first GPU, else the first device */
    const char *algo_name;
    const char *pstr[MAX_SETS];
    int nsets, list, do_qsort, csv, desc;
    gs_dtype dtype;
    gs_payload payload;
    int min_log2, max_log2, reps;
    size_t row_len;           /* --row-len: rows of this many keys (0: flat) */
    size_t seg_mean, seg_long; /* --segments: mean length (0: none), and the long one's */
    int topk;                 /* --topk: only each row's first topk_k */
    size_t topk_k;
    uint64_t seed;
    int dist;                 /* index into dist_names */
    int key_bits;             /* 0: all; else keys keep their low key_bits */
    unsigned begin_bit, end_bit;   /* --bits: the range sorted by (end 0: the key) */
    int half;                 /* --half: 16-bit codes (shape.narrow GS_NW_U16) */
} bopts;

/* What the steps of a run share: the options, the algorithm, the devices,
 * the parameter sets, and the buffers of the current size. */
typedef struct bench {
    bopts o;
    const gs_algo *algo;
    gs_dev *devs;
    size_t ndev;
    gs_dev *dev;              /* the one opened, NULL for a host algorithm */
    const char *devname;
    gs_params sets[MAX_SETS];
    char setstr[MAX_SETS][256];
    int nsets;
    gs_sort_ctx ctx;
    void *in_k, *in_v, *k, *v; /* the input, and the copy each run sorts */
    uint64_t *offs;           /* --segments: the current size's offsets */
    size_t nsegs;
    double *tk, *tw;          /* kernel and wall ms of each rep */
    int bad;                  /* a run failed or was wrong */
} bench;

/* Stops the command line: *exit_code becomes code. Returns -1. */
static int stop(int *exit_code, int code)
{
    *exit_code = code;
    return -1;
}

/* argv into *o (defaults first). 0 to run, or -1 with *exit_code 0 when
 * --help printed the usage and 2 on a usage error (said on stderr). Some
 * options take effect here (--verbose, --kernel-dir, --cl-opts, --pairs,
 * --min-chunk). */
static int parse_args(int argc, char **argv, bopts *o, int *exit_code)
{
    *o = (bopts){ .devidx = -1, .algo_name = "radix", .dtype = GS_DT_U32,
                  .payload = GS_PL_NONE, .min_log2 = 10, .max_log2 = 27, .reps = 5,
                  .seed = 12345 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "%s needs a value\n", a); return stop(exit_code, 2); } i++; } while (0)
        if (!strcmp(a, "--device")) { NEEDV(); o->devidx = strtol(v, NULL, 10); }
        else if (!strcmp(a, "--list")) o->list = 1;
        else if (!strcmp(a, "--algo")) { NEEDV(); o->algo_name = v; }
        else if (!strcmp(a, "--params")) {
            NEEDV();
            if (o->nsets == MAX_SETS) { fprintf(stderr, "too many --params\n"); return stop(exit_code, 2); }
            o->pstr[o->nsets++] = v;
        }
        else if (!strcmp(a, "--dtype")) {
            NEEDV();
            if (gs_dtype_parse(v, &o->dtype)) { fprintf(stderr, "unknown dtype %s\n", v); return stop(exit_code, 2); }
        }
        else if (!strcmp(a, "--payload")) {
            NEEDV();
            if (gs_payload_parse(v, &o->payload)) { fprintf(stderr, "unknown payload %s\n", v); return stop(exit_code, 2); }
        }
        else if (!strcmp(a, "--desc")) o->desc = 1;
        else if (!strcmp(a, "--min-log2")) { NEEDV(); o->min_log2 = atoi(v); }
        else if (!strcmp(a, "--max-log2")) { NEEDV(); o->max_log2 = atoi(v); }
        else if (!strcmp(a, "--reps")) { NEEDV(); o->reps = atoi(v); }
        else if (!strcmp(a, "--qsort")) o->do_qsort = 1;
        else if (!strcmp(a, "--csv")) o->csv = 1;
        else if (!strcmp(a, "--seed")) { NEEDV(); o->seed = strtoull(v, NULL, 0); }
        else if (!strcmp(a, "--dist")) {
            NEEDV();
            for (o->dist = 0; o->dist < 4 && strcmp(v, dist_names[o->dist]); o->dist++)
                ;
            if (o->dist == 4) {
                fprintf(stderr, "gsort-bench: unknown --dist '%s' (random, sorted, reversed, few16)\n", v);
                return stop(exit_code, 2);
            }
        }
        else if (!strcmp(a, "--key-bits")) {
            NEEDV();
            o->key_bits = atoi(v);
            if (o->key_bits < 1 || o->key_bits > 64) {
                fprintf(stderr, "gsort-bench: --key-bits wants 1..64, not '%s'\n", v);
                return stop(exit_code, 2);
            }
        }
        else if (!strcmp(a, "--half")) {
            o->half = 1;
        }
        else if (!strcmp(a, "--bits")) {
            NEEDV();
            if (sscanf(v, "%u:%u", &o->begin_bit, &o->end_bit) != 2 ||
                o->begin_bit >= o->end_bit || o->end_bit > 64) {
                fprintf(stderr, "gsort-bench: --bits wants LO:HI with 0 <= LO < HI <= 64, "
                        "not '%s'\n", v);
                return stop(exit_code, 2);
            }
        }
        else if (!strcmp(a, "--verbose")) gs_log_set_level(GS_LOG_DEBUG);
        else if (!strcmp(a, "--kernel-dir")) { NEEDV(); gs_kern_set_dir(v); }
        else if (!strcmp(a, "--cl-opts")) { NEEDV(); gs_kern_set_opts(v); }
        else if (!strcmp(a, "--pairs")) { NEEDV(); gs_radix_force_pairs(atoi(v)); }
        else if (!strcmp(a, "--count")) { NEEDV(); gs_radix_force_count(atoi(v)); }
        else if (!strcmp(a, "--min-chunk")) { NEEDV(); gs_host_force_min_chunk(strtoull(v, NULL, 10)); }
        else if (!strcmp(a, "--topk")) {
            NEEDV();
            o->topk = 1;
            o->topk_k = strtoull(v, NULL, 10);
        }
        else if (!strcmp(a, "--row-len")) {
            NEEDV();
            o->row_len = strtoull(v, NULL, 10);
            if (!o->row_len || (o->row_len & (o->row_len - 1))) {
                fprintf(stderr, "gsort-bench: --row-len must be a power of two\n");
                return stop(exit_code, 2);
            }
        }
        else if (!strcmp(a, "--segments")) {
            NEEDV();
            char *end;
            o->seg_mean = strtoull(v, &end, 10);
            o->seg_long = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
            if (!o->seg_mean || *end || o->row_len || o->topk) {
                fprintf(stderr, "gsort-bench: --segments M[:L] (M > 0), not with --row-len "
                        "or --topk\n");
                return stop(exit_code, 2);
            }
        }
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return stop(exit_code, 0); }
        else { usage(stderr); return stop(exit_code, 2); }
#undef NEEDV
    }
    if (o->reps < 1 || o->min_log2 < 0 || o->max_log2 > 40 || o->min_log2 > o->max_log2) {
        fprintf(stderr, "bad --reps / --min-log2 / --max-log2\n");
        return stop(exit_code, 2);
    }
    return 0;
}

/* --list: every device found, one a line. */
static void list_devices(const bench *b)
{
    for (size_t i = 0; i < b->ndev; i++) {
        const gs_dev_info *in = &b->devs[i].info;
        char tb[64];
        printf("%zu: %s | %s | %s | %u CUs | max wg %zu | local %llu | max alloc %llu\n", i,
               in->name, in->platform, gs_dev_type_name(in->type, tb, sizeof tb),
               in->compute_units, in->max_wg_size, (unsigned long long)in->local_mem,
               (unsigned long long)in->max_alloc);
    }
}

/* The device a device algorithm runs on (--device, else the first GPU,
 * else the first device), opened; none for a host one. 0, or -1 (said). */
static int open_device(bench *b)
{
    b->devname = "host";
    if (!b->algo->uses_device)
        return 0;
    long devidx = b->o.devidx;
    if (devidx < 0) {
        for (size_t i = 0; i < b->ndev && devidx < 0; i++)
            if (b->devs[i].info.type & CL_DEVICE_TYPE_GPU)
                devidx = (long)i;
        if (devidx < 0)
            devidx = 0;
    }
    if ((size_t)devidx >= b->ndev) {
        fprintf(stderr, "no device %ld (%zu found)\n", devidx, b->ndev);
        return -1;
    }
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_open(&b->devs[devidx], &err) < 0) {
        fprintf(stderr, "opening device: %s\n", err.msg);
        return -1;
    }
    b->dev = &b->devs[devidx];
    b->devname = b->dev->info.name;
    return 0;
}

/* The parameter sets: the algorithm's defaults for the device, or each
 * --params over them; and each as text for the rows. 0, or -1 on a bad
 * --params (said). */
static int make_sets(bench *b)
{
    const gs_dev_info *info = b->dev ? &b->dev->info : NULL;
    b->nsets = b->o.nsets;
    if (b->nsets == 0) {
        if (b->algo->defaults)
            b->algo->defaults(info, &b->sets[0]);
        else
            gs_params_clear(&b->sets[0]);
        b->nsets = 1;
    } else {
        for (int i = 0; i < b->nsets; i++) {
            gs_params given;
            gs_err err;
            gs_err_clear(&err);
            if (gs_params_parse(b->o.pstr[i], &given, &err) < 0) {
                fprintf(stderr, "--params '%s': %s\n", b->o.pstr[i], err.msg);
                return -1;
            }
            /* the defaults, with the given values in their places */
            gs_params_clear(&b->sets[i]);
            if (b->algo->defaults)
                b->algo->defaults(info, &b->sets[i]);
            for (int j = 0; j < given.count; j++)
                gs_params_set(&b->sets[i], given.p[j].name, given.p[j].value);
        }
    }
    for (int i = 0; i < b->nsets; i++) {
        b->setstr[i][0] = '\0';
        gs_params_format(&b->sets[i], b->setstr[i], sizeof b->setstr[i]);
        if (!b->setstr[i][0])
            snprintf(b->setstr[i], sizeof b->setstr[i], "-");
    }
    return 0;
}

/* Whether every set can sort 2^lg keys here: 0, or GS_ETOOBIG at the first
 * size the device (or this host) cannot take (said). */
static int size_fits(const bench *b, int lg)
{
    const bopts *o = &b->o;
    gs_sort_req probe = {
        .shape = { .dtype = o->dtype, .payload = o->payload, .descending = o->desc,
                   .rows = o->row_len ? ((uint64_t)1 << lg) / o->row_len : 0,
                   .begin_bit = o->begin_bit, .end_bit = o->end_bit,
                   .narrow = o->half ? GS_NW_U16 : GS_NW_NONE },
        .n = (size_t)1 << lg
    };
    for (int s = 0; s < b->nsets; s++) {
        gs_err err;
        gs_err_clear(&err);
        /* --segments: a flat probe says nothing of them (a run says what fails) */
        if (!o->seg_mean && b->algo->check &&
            b->algo->check(b->dev, &probe, &b->sets[s], &err) == GS_ETOOBIG) {
            fprintf(stderr, "stopping at n=2^%d: %s\n", lg, err.msg);
            return GS_ETOOBIG;
        }
    }
    return 0;
}

/* --segments: offsets over n keys, lengths 0 to 2 * mean (one in 64 of
 * seg_long keys where given), the last taking the rest. 0, or -1 out of
 * memory (said). */
static int make_segments(bench *b, size_t n, uint64_t *s)
{
    const bopts *o = &b->o;
    size_t cap = n / (o->seg_mean > 1 ? o->seg_mean / 2 : 1) + 64, S = 0;
    b->offs = malloc((cap + 1) * sizeof *b->offs);
    if (!b->offs) {
        fprintf(stderr, "host out of memory for offsets\n");
        return -1;
    }
    b->offs[0] = 0;
    while (b->offs[S] < n) {
        uint64_t x = bu_splitmix(s);
        size_t len = o->seg_long && x % 64 == 0 ? o->seg_long
                                                  : (size_t)((x >> 8) % (2 * o->seg_mean + 1));
        if (S + 1 == cap || b->offs[S] + len > n)
            len = n - b->offs[S];
        b->offs[S + 1] = b->offs[S] + len;
        S++;
    }
    b->nsegs = S;
    return 0;
}

/* The buffers for 2^lg keys (the last size's freed), and the input in
 * them: --dist's keys from the seed and n, values derived from each key.
 * 0, or -1 when the host is out of memory (said). */
static int make_input(bench *b, int lg)
{
    const bopts *o = &b->o;
    size_t n = (size_t)1 << lg;
    size_t ks = o->half ? 2 : gs_dtype_size(o->dtype), vs = gs_payload_size(o->payload);
    free(b->in_k); free(b->in_v); free(b->k); free(b->v); free(b->offs);
    b->offs = NULL;
    b->in_k = malloc(n * ks);
    b->k = malloc(n * ks);
    b->in_v = vs ? malloc(n * vs) : NULL;
    b->v = vs ? malloc(n * vs) : NULL;
    if (!b->in_k || !b->k || (vs && (!b->in_v || !b->v))) {
        fprintf(stderr, "stopping at n=2^%d: host out of memory\n", lg);
        return -1;
    }
    uint64_t s = o->seed ^ (uint64_t)n;
    uint64_t few[16];
    for (int j = 0; j < 16; j++)
        few[j] = bu_splitmix(&s);
    uint64_t stride = (ks == 4 ? UINT32_MAX : UINT64_MAX) / (n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = bu_splitmix(&s);
        if (o->dist == 1)
            x = (uint64_t)i * stride;
        else if (o->dist == 2)
            x = (uint64_t)(n - 1 - i) * stride;
        else if (o->dist == 3)
            x = few[x >> 60];
        if (o->key_bits && o->key_bits < 64)
            x &= ((uint64_t)1 << o->key_bits) - 1;
        if (ks == 2)
            ((uint16_t *)b->in_k)[i] = (uint16_t)x;
        else if (ks == 4)
            ((uint32_t *)b->in_k)[i] = (uint32_t)x;
        else
            ((uint64_t *)b->in_k)[i] = x;
        if (vs == 4)
            ((uint32_t *)b->in_v)[i] = (uint32_t)(x >> 17);
        else if (vs == 8)
            ((uint64_t *)b->in_v)[i] = x * 3;
    }
    return o->seg_mean ? make_segments(b, n, &s) : 0;
}

/* One set on n keys: a warm-up (program build, first-touch allocations),
 * then the reps, the first and last validated; its row printed. */
static void time_set(bench *b, size_t n, int si)
{
    const bopts *o = &b->o;
    size_t ks = o->half ? 2 : gs_dtype_size(o->dtype), vs = gs_payload_size(o->payload);
    gs_sort_req req = { .shape = { .dtype = o->dtype,
                                   .narrow = o->half ? GS_NW_U16 : GS_NW_NONE,
                                   .payload = o->payload,
                                   .descending = o->desc,
                                   .stable = b->algo->stable,
                                   .rows = o->row_len ? n / o->row_len : 0,
                                   .begin_bit = o->begin_bit, .end_bit = o->end_bit },
                        .n = n,
                        .keys = b->k,
                        .values = b->v };
    if (o->seg_mean) {
        req.shape.segments = b->nsegs;
        req.offsets = b->offs;
    }
    if (o->topk) {
        size_t len = o->row_len ? o->row_len : n;
        req.shape.topk = 1;
        req.shape.k = o->topk_k < len ? o->topk_k : len;
    }
    const char *note = "ok";
    char why[256] = "";
    int failed = 0;
    for (int r = -1; r < o->reps; r++) {
        memcpy(b->k, b->in_k, n * ks);
        if (vs)
            memcpy(b->v, b->in_v ? b->in_v : b->v, n * vs);
        gs_sort_stats st;
        gs_err err;
        gs_err_clear(&err);
        double t0 = gs_now_ms();
        int rc = gs_sort_run(b->algo, &b->ctx, &req, &b->sets[si], &st, &err);
        double t1 = gs_now_ms();
        if (rc < 0) {
            fprintf(stderr, "FAILED: %s %s n=%zu: %s\n", b->algo->name, b->setstr[si], n, err.msg);
            note = "ERROR";
            failed = 1;
            break;
        }
        if ((r < 0 || r == o->reps - 1) &&
            !(o->topk ? validate_topk(&req, b->in_k, why, sizeof why)
                      : validate_rows(&req, b->in_k, b->in_v, why, sizeof why))) {
            fprintf(stderr, "WRONG RESULT: %s %s %s/%s n=%zu: %s\n", b->algo->name,
                    b->setstr[si], gs_dtype_name(o->dtype), gs_payload_name(o->payload), n, why);
            note = "WRONG";
            failed = 1;
            break;
        }
        if (r >= 0) {
            b->tk[r] = st.kernel_ms > 0 ? st.kernel_ms : (t1 - t0);
            b->tw[r] = t1 - t0;
        }
    }
    /* --half: "w16", 16-bit words */
    row rw = { b->devname, b->algo->name, b->setstr[si], o->half ? "w16" : gs_dtype_name(o->dtype),
               gs_payload_name(o->payload), n, 0, 0, 0, note };
    if (failed) {
        b->bad = 1;
    } else {
        rw.kernel_ms = bu_median(b->tk, (size_t)o->reps);
        rw.wall_ms = bu_median(b->tw, (size_t)o->reps);
        rw.gkeys = rw.kernel_ms > 0 ? (double)n / (rw.kernel_ms * 1e6) : 0;
    }
    print_row(&rw, o->csv);
}

/* --qsort: libc qsort of the same keys (keys only), median of the reps. */
static void time_qsort(bench *b, size_t n)
{
    const bopts *o = &b->o;
    size_t ks = gs_dtype_size(o->dtype);
    q_dtype = o->dtype;
    q_desc = o->desc;
    for (int r = 0; r < o->reps; r++) {
        memcpy(b->k, b->in_k, n * ks);
        double t0 = gs_now_ms();
        qsort(b->k, n, ks, cmp_key);
        b->tw[r] = gs_now_ms() - t0;
    }
    double m = bu_median(b->tw, (size_t)o->reps);
    row rw = { "host", "qsort", "-", gs_dtype_name(o->dtype), "none", n, m, m,
               m > 0 ? (double)n / (m * 1e6) : 0, "keys only" };
    print_row(&rw, o->csv);
}

/* Every size from 2^min to 2^max, up to the first one that does not fit:
 * every set, and qsort with --qsort. */
static void sweep_sizes(bench *b)
{
    const bopts *o = &b->o;
    for (int lg = o->min_log2; lg <= o->max_log2; lg++) {
        size_t n = (size_t)1 << lg;
        if (n < o->row_len)
            continue;
        if (size_fits(b, lg) < 0 || make_input(b, lg) < 0)
            break;
        for (int si = 0; si < b->nsets; si++)
            time_set(b, n, si);
        if (o->do_qsort && lg <= 24 && !o->half)
            time_qsort(b, n);
    }
}

/* The table: its header, the sizes, and the verdict. 0, or -1 when a
 * result was wrong or failed, or out of memory (said). */
static int run_sizes(bench *b)
{
    const bopts *o = &b->o;
    gs_pcache *pc = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_pcache_open(&pc, NULL, &err) < 0)
        pc = NULL;   /* no disk cache: build every time */
    b->ctx = (gs_sort_ctx){ .dev = b->dev, .pc = pc };
    if (o->csv)
        printf("device,algo,params,dtype,payload,n,kernel_ms,wall_ms,gkeys_per_s,note\n");
    else {
        printf("# input: %s keys%s\n", dist_names[o->dist], o->key_bits ? " (low bits only, --key-bits)" : "");
        if (o->end_bit)
            printf("# sorted by bits [%u, %u) alone (--bits)\n", o->begin_bit, o->end_bit);
        printf("%-24s %-6s %-56s %-4s %-6s %11s %10s %10s %8s\n", "device", "algo", "params",
               "type", "values", "n", "kernel_ms", "wall_ms", "Gkeys/s");
    }
    int rc = 0;
    b->tk = calloc((size_t)o->reps, sizeof *b->tk);
    b->tw = calloc((size_t)o->reps, sizeof *b->tw);
    if (!b->tk || !b->tw) {
        fprintf(stderr, "out of memory\n");
        rc = -1;
    } else {
        sweep_sizes(b);
        if (b->bad) {
            fprintf(stderr, "gsort-bench: SOME RESULTS WERE WRONG OR FAILED (see above)\n");
            rc = -1;
        }
    }
    free(b->in_k); free(b->in_v); free(b->k); free(b->v); free(b->offs);
    b->offs = NULL;
    free(b->tk); free(b->tw);
    gs_pcache_close(pc);
    return rc;
}

int main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    int code = 0;
    if (parse_args(argc, argv, &b.o, &code) < 0)
        return code;
    b.algo = gs_algo_find(b.o.algo_name);
    if (!b.algo) {
        fprintf(stderr, "unknown algorithm '%s'\n", b.o.algo_name);
        return 2;
    }
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&b.devs, &b.ndev, &err) < 0) {
        fprintf(stderr, "probing devices: %s\n", err.msg);
        return 1;
    }
    int rc;
    if (b.o.list) {
        list_devices(&b);
        rc = 0;
    } else if (open_device(&b) < 0) {
        rc = 1;
    } else if (make_sets(&b) < 0) {
        rc = 2;
    } else {
        rc = run_sizes(&b) < 0 ? 1 : 0;
    }
    gs_dev_free_list(b.devs, b.ndev);
    return rc;
}
