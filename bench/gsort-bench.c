/* gsort-bench: times a sort algorithm over a range of sizes on one device
 * and prints, per size and parameter set, the median kernel time (OpenCL
 * profiling events), the median wall time (upload + kernels + download) and
 * the kernel throughput in Gkeys/s. Every result is validated (sorted in
 * the requested order, keys' checksum preserved, payload consistent) and a
 * wrong one is reported loudly with a non-zero exit. Optionally times libc
 * qsort for comparison. Keys are random bits by default (floats therefore
 * include NaNs and infinities); --dist gives sorted, reversed (both spread
 * over the whole key range, so no radix pass is trivially skipped) or
 * 16-distinct inputs. */
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
            "  --verbose         debug log (per-stage kernel times of the radix sort)\n"
            "  --kernel-dir D    kernel sources from D instead of the built-in copies\n"
            "                    (to time an edited kernel without rebuilding)\n"
            "  --cl-opts S       extra OpenCL compiler options for every build\n"
            "                    (e.g. -cl-nv-maxrregcount=64 -cl-nv-verbose)\n"
            "  --pairs M         radix, 32-bit keys with 32-bit values: 1 ranks each pair\n"
            "                    as one 64-bit word, 0 never, -1 the device's default\n");
}

static uint64_t ld(size_t w, const void *a, size_t i)
{
    return w == 4 ? ((const uint32_t *)a)[i] : ((const uint64_t *)a)[i];
}

static uint64_t enc(gs_dtype t, int desc, uint64_t bits)
{
    return gs_dtype_size(t) == 4 ? gs_key32_encode(t, desc, (uint32_t)bits)
                                 : gs_key64_encode(t, desc, bits);
}

/* Sorted in encoded order, same multiset of keys (sum and xor of the
 * encoded keys; NaN payloads are restored by gs_sort_run so raw bits would
 * do too), and a payload that goes with its key: stored values keep their
 * sum, indices point at an input element with the same key. */
static int validate(const gs_sort_req *r, const void *in_keys, const void *in_vals, char *why,
                    size_t wl)
{
    size_t ks = gs_dtype_size(r->dtype), vs = gs_payload_size(r->payload);
    uint64_t s0 = 0, x0 = 0, s1 = 0, x1 = 0, prev = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t a = enc(r->dtype, r->descending, ld(ks, in_keys, i));
        uint64_t b = enc(r->dtype, r->descending, ld(ks, r->keys, i));
        s0 += a;
        x0 ^= a;
        s1 += b;
        x1 ^= b;
        if (i && b < prev) {
            snprintf(why, wl, "keys out of order at %zu", i);
            return 0;
        }
        prev = b;
    }
    if (s0 != s1 || x0 != x1) {
        snprintf(why, wl, "key checksum changed");
        return 0;
    }
    if (r->payload == GS_PL_U32 || r->payload == GS_PL_U64) {
        uint64_t a = 0, b = 0;
        for (size_t i = 0; i < r->n; i++) {
            a += ld(vs, in_vals, i);
            b += ld(vs, r->values, i);
        }
        if (a != b) {
            snprintf(why, wl, "value checksum changed");
            return 0;
        }
    } else if (r->payload == GS_PL_IDX32 || r->payload == GS_PL_IDX64) {
        for (size_t i = 0; i < r->n; i++) {
            uint64_t j = ld(vs, r->values, i);
            if (j >= r->n || enc(r->dtype, r->descending, ld(ks, in_keys, j)) !=
                                 enc(r->dtype, r->descending, ld(ks, r->keys, i))) {
                snprintf(why, wl, "index %zu -> %" PRIu64 " does not hold that key", i, j);
                return 0;
            }
        }
    }
    return 1;
}

/* qsort comparison on the encoded order (bench only; not stable). */
static gs_dtype q_dtype;
static int q_desc;
static int cmp_key(const void *a, const void *b)
{
    uint64_t x, y;
    if (gs_dtype_size(q_dtype) == 4) {
        x = gs_key32_encode(q_dtype, q_desc, *(const uint32_t *)a);
        y = gs_key32_encode(q_dtype, q_desc, *(const uint32_t *)b);
    } else {
        x = gs_key64_encode(q_dtype, q_desc, *(const uint64_t *)a);
        y = gs_key64_encode(q_dtype, q_desc, *(const uint64_t *)b);
    }
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

int main(int argc, char **argv)
{
    long devidx = -1;
    const char *algo_name = "radix";
    const char *pstr[MAX_SETS];
    int nsets = 0, list = 0, do_qsort = 0, csv = 0, desc = 0;
    gs_dtype dtype = GS_DT_U32;
    gs_payload payload = GS_PL_NONE;
    int min_log2 = 10, max_log2 = 27, reps = 5;
    uint64_t seed = 12345;
    static const char *const dist_names[] = { "random", "sorted", "reversed", "few16" };
    int dist = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "%s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "--device")) { NEEDV(); devidx = strtol(v, NULL, 10); }
        else if (!strcmp(a, "--list")) list = 1;
        else if (!strcmp(a, "--algo")) { NEEDV(); algo_name = v; }
        else if (!strcmp(a, "--params")) {
            NEEDV();
            if (nsets == MAX_SETS) { fprintf(stderr, "too many --params\n"); return 2; }
            pstr[nsets++] = v;
        }
        else if (!strcmp(a, "--dtype")) {
            NEEDV();
            if (gs_dtype_parse(v, &dtype)) { fprintf(stderr, "unknown dtype %s\n", v); return 2; }
        }
        else if (!strcmp(a, "--payload")) {
            NEEDV();
            if (gs_payload_parse(v, &payload)) { fprintf(stderr, "unknown payload %s\n", v); return 2; }
        }
        else if (!strcmp(a, "--desc")) desc = 1;
        else if (!strcmp(a, "--min-log2")) { NEEDV(); min_log2 = atoi(v); }
        else if (!strcmp(a, "--max-log2")) { NEEDV(); max_log2 = atoi(v); }
        else if (!strcmp(a, "--reps")) { NEEDV(); reps = atoi(v); }
        else if (!strcmp(a, "--qsort")) do_qsort = 1;
        else if (!strcmp(a, "--csv")) csv = 1;
        else if (!strcmp(a, "--seed")) { NEEDV(); seed = strtoull(v, NULL, 0); }
        else if (!strcmp(a, "--dist")) {
            NEEDV();
            for (dist = 0; dist < 4 && strcmp(v, dist_names[dist]); dist++)
                ;
            if (dist == 4) {
                fprintf(stderr, "gsort-bench: unknown --dist '%s' (random, sorted, reversed, few16)\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--verbose")) gs_log_set_level(GS_LOG_DEBUG);
        else if (!strcmp(a, "--kernel-dir")) { NEEDV(); gs_kern_set_dir(v); }
        else if (!strcmp(a, "--cl-opts")) { NEEDV(); gs_kern_set_opts(v); }
        else if (!strcmp(a, "--pairs")) { NEEDV(); gs_radix_force_pairs(atoi(v)); }
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
#undef NEEDV
    }
    if (reps < 1 || min_log2 < 0 || max_log2 > 40 || min_log2 > max_log2) {
        fprintf(stderr, "bad --reps / --min-log2 / --max-log2\n");
        return 2;
    }
    const gs_algo *algo = gs_algo_find(algo_name);
    if (!algo) {
        fprintf(stderr, "unknown algorithm '%s'\n", algo_name);
        return 2;
    }

    gs_err err;
    gs_err_clear(&err);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    if (gs_dev_probe(&devs, &ndev, &err) < 0) {
        fprintf(stderr, "probing devices: %s\n", err.msg);
        return 1;
    }
    if (list) {
        for (size_t i = 0; i < ndev; i++) {
            char tb[64];
            printf("%zu: %s | %s | %s | %u CUs | max wg %zu | local %llu | max alloc %llu\n", i,
                   devs[i].info.name, devs[i].info.platform,
                   gs_dev_type_name(devs[i].info.type, tb, sizeof tb), devs[i].info.compute_units,
                   devs[i].info.max_wg_size, (unsigned long long)devs[i].info.local_mem,
                   (unsigned long long)devs[i].info.max_alloc);
        }
        gs_dev_free_list(devs, ndev);
        return 0;
    }
    gs_dev *dev = NULL;
    if (algo->uses_device) {
        if (devidx < 0) {
            for (size_t i = 0; i < ndev && devidx < 0; i++)
                if (devs[i].info.type & CL_DEVICE_TYPE_GPU)
                    devidx = (long)i;
            if (devidx < 0)
                devidx = 0;
        }
        if ((size_t)devidx >= ndev) {
            fprintf(stderr, "no device %ld (%zu found)\n", devidx, ndev);
            gs_dev_free_list(devs, ndev);
            return 1;
        }
        dev = &devs[devidx];
        if (gs_dev_open(dev, &err) < 0) {
            fprintf(stderr, "opening device: %s\n", err.msg);
            gs_dev_free_list(devs, ndev);
            return 1;
        }
    }
    const char *devname = dev ? dev->info.name : "host";

    /* parameter sets */
    gs_params sets[MAX_SETS];
    char setstr[MAX_SETS][256];
    if (nsets == 0) {
        if (algo->defaults)
            algo->defaults(dev ? &dev->info : NULL, &sets[0]);
        else
            gs_params_clear(&sets[0]);
        nsets = 1;
    } else {
        for (int i = 0; i < nsets; i++) {
            gs_params given;
            if (gs_params_parse(pstr[i], &given, &err) < 0) {
                fprintf(stderr, "--params '%s': %s\n", pstr[i], err.msg);
                gs_dev_free_list(devs, ndev);
                return 2;
            }
            /* the defaults, with the given values in their places */
            gs_params_clear(&sets[i]);
            if (algo->defaults)
                algo->defaults(dev ? &dev->info : NULL, &sets[i]);
            for (int j = 0; j < given.count; j++)
                gs_params_set(&sets[i], given.p[j].name, given.p[j].value);
        }
    }
    for (int i = 0; i < nsets; i++) {
        setstr[i][0] = '\0';
        gs_params_format(&sets[i], setstr[i], sizeof setstr[i]);
        if (!setstr[i][0])
            snprintf(setstr[i], sizeof setstr[i], "-");
    }

    gs_pcache *pc = NULL;
    if (gs_pcache_open(&pc, NULL, &err) < 0)
        pc = NULL;   /* no disk cache: build every time */
    gs_sort_ctx ctx = { .dev = dev, .pc = pc };

    if (csv)
        printf("device,algo,params,dtype,payload,n,kernel_ms,wall_ms,gkeys_per_s,note\n");
    else {
        printf("# input: %s keys\n", dist_names[dist]);
        printf("%-24s %-6s %-56s %-4s %-6s %11s %10s %10s %8s\n", "device", "algo", "params",
               "type", "values", "n", "kernel_ms", "wall_ms", "Gkeys/s");
    }

    size_t ks = gs_dtype_size(dtype), vs = gs_payload_size(payload);
    int bad = 0;
    size_t maxn = (size_t)1 << max_log2;
    void *in_k = NULL, *in_v = NULL, *k = NULL, *v = NULL;
    double *tk = calloc((size_t)reps, sizeof *tk), *tw = calloc((size_t)reps, sizeof *tw);
    if (!tk || !tw)
        goto oom;

    for (int lg = min_log2; lg <= max_log2; lg++) {
        size_t n = (size_t)1 << lg;
        /* stop at the first size the device (or this host) cannot take */
        gs_sort_req probe = { .dtype = dtype, .payload = payload, .descending = desc, .n = n };
        int fits = 1;
        for (int s = 0; s < nsets && fits; s++) {
            gs_err_clear(&err);
            if (algo->check && algo->check(dev, &probe, &sets[s], &err) == GS_ETOOBIG) {
                fprintf(stderr, "stopping at n=2^%d: %s\n", lg, err.msg);
                fits = 0;
            }
        }
        if (!fits)
            break;
        if (n > maxn)
            break;
        free(in_k); free(in_v); free(k); free(v);
        in_k = malloc(n * ks);
        k = malloc(n * ks);
        in_v = vs ? malloc(n * vs) : NULL;
        v = vs ? malloc(n * vs) : NULL;
        if (!in_k || !k || (vs && (!in_v || !v))) {
            fprintf(stderr, "stopping at n=2^%d: host out of memory\n", lg);
            break;
        }
        uint64_t s = seed ^ (uint64_t)n;
        uint64_t few[16];
        for (int j = 0; j < 16; j++)
            few[j] = bu_splitmix(&s);
        uint64_t stride = (ks == 4 ? UINT32_MAX : UINT64_MAX) / (n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = bu_splitmix(&s);
            if (dist == 1)
                x = (uint64_t)i * stride;
            else if (dist == 2)
                x = (uint64_t)(n - 1 - i) * stride;
            else if (dist == 3)
                x = few[x >> 60];
            if (ks == 4)
                ((uint32_t *)in_k)[i] = (uint32_t)x;
            else
                ((uint64_t *)in_k)[i] = x;
            if (vs == 4)
                ((uint32_t *)in_v)[i] = (uint32_t)(x >> 17);
            else if (vs == 8)
                ((uint64_t *)in_v)[i] = x * 3;
        }
        for (int si = 0; si < nsets; si++) {
            gs_sort_req req = { .dtype = dtype, .payload = payload, .descending = desc,
                                .stable = algo->stable, .n = n, .keys = k, .values = v };
            const char *note = "ok";
            char why[256] = "";
            int failed = 0;
            /* one warm-up (program build, first-touch allocations), then reps */
            for (int r = -1; r < reps; r++) {
                memcpy(k, in_k, n * ks);
                if (vs)
                    memcpy(v, in_v ? in_v : v, n * vs);
                gs_sort_stats st;
                gs_err_clear(&err);
                double t0 = gs_now_ms();
                int rc = gs_sort_run(algo, &ctx, &req, &sets[si], &st, &err);
                double t1 = gs_now_ms();
                if (rc < 0) {
                    fprintf(stderr, "FAILED: %s %s n=%zu: %s\n", algo->name, setstr[si], n, err.msg);
                    note = "ERROR";
                    failed = 1;
                    break;
                }
                if (r < 0 || r == reps - 1) {
                    if (!validate(&req, in_k, in_v, why, sizeof why)) {
                        fprintf(stderr, "WRONG RESULT: %s %s %s/%s n=%zu: %s\n", algo->name,
                                setstr[si], gs_dtype_name(dtype), gs_payload_name(payload), n, why);
                        note = "WRONG";
                        failed = 1;
                        break;
                    }
                }
                if (r >= 0) {
                    tk[r] = st.kernel_ms > 0 ? st.kernel_ms : (t1 - t0);
                    tw[r] = t1 - t0;
                }
            }
            row rw = { devname, algo->name, setstr[si], gs_dtype_name(dtype),
                       gs_payload_name(payload), n, 0, 0, 0, note };
            if (failed) {
                bad = 1;
            } else {
                rw.kernel_ms = bu_median(tk, (size_t)reps);
                rw.wall_ms = bu_median(tw, (size_t)reps);
                rw.gkeys = rw.kernel_ms > 0 ? (double)n / (rw.kernel_ms * 1e6) : 0;
            }
            print_row(&rw, csv);
        }
        if (do_qsort && lg <= 24) {
            q_dtype = dtype;
            q_desc = desc;
            for (int r = 0; r < reps; r++) {
                memcpy(k, in_k, n * ks);
                double t0 = gs_now_ms();
                qsort(k, n, ks, cmp_key);
                tw[r] = gs_now_ms() - t0;
            }
            double m = bu_median(tw, (size_t)reps);
            row rw = { "host", "qsort", "-", gs_dtype_name(dtype), "none", n, m, m,
                       m > 0 ? (double)n / (m * 1e6) : 0, "keys only" };
            print_row(&rw, csv);
        }
    }
    free(in_k); free(in_v); free(k); free(v);
    free(tk); free(tw);
    gs_pcache_close(pc);
    gs_dev_free_list(devs, ndev);
    if (bad)
        fprintf(stderr, "gsort-bench: SOME RESULTS WERE WRONG OR FAILED (see above)\n");
    return bad ? 1 : 0;
oom:
    fprintf(stderr, "out of memory\n");
    free(tk); free(tw);
    gs_pcache_close(pc);
    gs_dev_free_list(devs, ndev);
    return 1;
}
