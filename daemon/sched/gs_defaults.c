/* The built-in defaults of a device the database has no plan for (issue
 * 17): which algorithm serves its requests from which size on. A CPU
 * device (PoCL) leaves every request to the host sort, which runs on the
 * same cores without an OpenCL runtime in between and is several times
 * faster at every size. A GPU runs the registry's default (radix) from a
 * crossover size on and the host sort below it; the crossover is measured
 * once, when the device's worker starts, by timing a few sorts of random
 * u32 keys both ways (milliseconds on a GPU), and logged, so a daemon that
 * was never tuned still sends each request where it runs fastest. Until the
 * measurement is in, the crossover is a guess (2^15). */
#include "config.h"
#include "gs_sched_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_hooks.h"
#include "gs_log.h"
#include "gs_time.h"

#define GUESS_LOG2 15          /* the crossover until measured */
#define MEASURE_MIN_LOG2 12
#define MEASURE_MAX_LOG2 22    /* on a GPU: ~1 ms a sort */
#define MEASURE_TEST_MAX_LOG2 14   /* under the test hook (PoCL: slow) */
#define REPS 3

void sched_defaults_init(sdev *sd)
{
    /* test hook (gs_hooks.h): a GPU's defaults on PoCL, so the suite runs
     * the measurement, or a fixed crossover */
    const gs_hooks *hk = gs_hooks_get();
    int hook = hk->defaults_gpu, fixed = hk->defaults_log2;   /* -1: measured */
    gs_dev_info gpu_like = sd->dev->info;
    if (hook)
        gpu_like.type = CL_DEVICE_TYPE_GPU;
    sd->dflt_algo = gs_algo_default_for(&gpu_like);
    sd->dflt_measure = sd->dflt_algo->uses_device && fixed < 0;
    atomic_store(&sd->dflt_min_log2, fixed >= 0 ? fixed : GUESS_LOG2);
}

/* Median of REPS timed sorts of a copy of `in` (ms), or -1 on a failure. */
static double time_sort(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p,
                        const uint32_t *in, uint32_t *work, size_t n, gs_err *err)
{
    double t[REPS];
    gs_sort_req req = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                        .n = n,
                        .keys = work };
    for (int r = -1; r < REPS; r++) {   /* r = -1: warm-up (a program build) */
        memcpy(work, in, n * sizeof *in);
        double t0 = gs_now_ms();
        if (gs_sort_run(a, ctx, &req, p, NULL, err) < 0)
            return -1;
        if (r >= 0)
            t[r] = gs_now_ms() - t0;
    }
    for (int i = 1; i < REPS; i++)      /* insertion sort of three */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[REPS / 2];
}

void sched_defaults_measure(gs_sched *s, int d)
{
    sdev *sd = &s->devs[d];
    if (!sd->dflt_measure)
        return;
    int max = gs_hooks_get()->defaults_gpu ? MEASURE_TEST_MAX_LOG2 : MEASURE_MAX_LOG2;
    size_t nmax = (size_t)1 << max;
    uint32_t *in = malloc(nmax * sizeof *in), *work = malloc(nmax * sizeof *work);
    if (!in || !work) {
        free(in);
        free(work);
        GS_WARN("device %d (%s): out of memory measuring its built-in defaults; serving from "
                "2^%d keys on it", d, sd->dev->info.name, atomic_load(&sd->dflt_min_log2));
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < nmax; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        in[i] = (uint32_t)x;
    }
    gs_sort_ctx hctx = { .pc = s->pc }, dctx = { .dev = sd->dev, .pc = s->pc };
    gs_params dp, none;
    sd->dflt_algo->defaults(&sd->dev->info, &dp);
    gs_params_clear(&none);
    const gs_algo *host = gs_algo_find("host");
    char line[512] = "";
    int cross = -1;
    gs_err err;
    gs_err_clear(&err);
    double t0 = gs_now_ms();
    for (int l = MEASURE_MIN_LOG2; l <= max; l += 2) {
        size_t n = (size_t)1 << l;
        double h = time_sort(host, &hctx, &none, in, work, n, &err);
        double g = h < 0 ? -1 : time_sort(sd->dflt_algo, &dctx, &dp, in, work, n, &err);
        if (h < 0 || g < 0) {
            GS_WARN("device %d (%s): measuring its built-in defaults failed (%s); serving from "
                    "2^%d keys on it", d, sd->dev->info.name, err.msg,
                    atomic_load(&sd->dflt_min_log2));
            free(in);
            free(work);
            return;
        }
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s2^%d %.3f/%.3f",
                 line[0] ? ", " : "", l, h, g);
        if (cross < 0 && g < h)
            cross = l;
    }
    free(in);
    free(work);
    /* The device never won: from just past the largest size measured,
     * where a GPU's advantage keeps growing. */
    if (cross < 0)
        cross = max + 1;
    atomic_store(&sd->dflt_min_log2, cross);
    GS_INFO("device %d (%s): built-in defaults: the host sort below 2^%d keys, %s from 2^%d "
            "(measured in %.0f ms, u32 keys, ms host/%s: %s)", d, sd->dev->info.name, cross,
            sd->dflt_algo->name, cross, gs_now_ms() - t0, sd->dflt_algo->name, line);
}
