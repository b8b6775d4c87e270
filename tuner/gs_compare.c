/* Sampled versus exhaustive search (`gsortd --tune-compare ALGO`): on one
 * (algorithm, n, u32 keys, no payload) it measures the whole (restricted)
 * space into the tuning database as the tuner's own trials (resumable),
 * replays the sampled search with many seeds against those measurements,
 * and re-measures the configurations the replays picked beside the
 * exhaustive top ten, since the exhaustive minimum of many noisy medians
 * is partly luck. It prints how many trials the sampled search needed and
 * how close it came. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_kern.h"
#include "gs_time.h"

typedef struct table {
    double *ms;
    int *valid;
    uint64_t total;
    size_t trials;
} table;

static int table_eval(void *ud, uint64_t code, double *ms, int *valid, gs_err *err)
{
    table *t = ud;
    (void)err;
    *ms = t->ms[code];
    *valid = t->valid[code];
    t->trials++;
    return 0;
}

int gs_tune_compare(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_algo *a, size_t n,
                    const gs_tune_opts *o, unsigned nseeds, FILE *out, gs_err *err)
{
    int bucket = gs_db_bucket(n);
    if (n != (size_t)1 << bucket || bucket > GS_TUNE_MAX_LOG2)
        return gs_err_set(err, GS_EINVAL, "--n %zu: use a power of two up to 2^%d", n,
                          GS_TUNE_MAX_LOG2);
    int rc = gs_dev_open(dev, err);
    if (rc)
        return rc;
    gs_tune_devreport R;
    memset(&R, 0, sizeof R);
    double deadline = gs_now_s() + o->budget_s;
    int64_t dev_id = 0;
    char code_id[65];
    if ((rc = gs_db_device_id(db, &dev->info, 1, &dev_id, err)) != 0 ||
        (rc = gs_kern_code_id(code_id, err)) != 0)
        return rc;
    gs_tune_space sp;
    const gs_dev_info *info = a->uses_device ? &dev->info : NULL;
    if ((rc = gs_tune_space_init(&sp, a, info, o->restrict_spec, err)) != 0)
        return rc;
    if (sp.total > 100000)
        return gs_err_set(err, GS_ETOOBIG, "%s: %llu configurations are too many to measure "
                          "all; narrow them with --restrict", a->name,
                          (unsigned long long)sp.total);
    table t = { calloc(sp.total, sizeof(double)), calloc(sp.total, sizeof(int)), sp.total, 0 };
    if (!t.ms || !t.valid) {
        free(t.ms);
        free(t.valid);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    fprintf(out, "%s on %s, u32 keys, no payload, n = %zu (2^%d): %llu configurations\n",
            a->name, dev->info.name, n, bucket, (unsigned long long)sp.total);
    fflush(out);

    /* Exhaustive: every configuration, until the overall budget. */
    uint64_t measured = 0, best = 0;
    int have = 0;
    rc = gs_tune_measure_all(db, dev, pc, dev_id, code_id, a, &sp, n, o, deadline, t.ms, t.valid,
                             &measured, &R, err);
    for (uint64_t c = 0; c < measured; c++)
        if (t.valid[c] && (!have || t.ms[c] < t.ms[best])) {
            best = c;
            have = 1;
        }
    gs_tune_input in;
    memset(&in, 0, sizeof in);
    if (rc < 0 || measured < sp.total) {
        if (rc >= 0)
            fprintf(out, "budget used up after %llu of %llu configurations; run again with the "
                    "same --db to continue\n", (unsigned long long)measured,
                    (unsigned long long)sp.total);
        free(t.ms);
        free(t.valid);
        return rc < 0 ? rc : 0;
    }
    if (!have) {
        fprintf(out, "no valid configuration\n");
        free(t.ms);
        free(t.valid);
        return 0;
    }
    size_t nvalid = 0;
    double *sorted = malloc(sp.total * sizeof *sorted);
    for (uint64_t c = 0; sorted && c < sp.total; c++)
        if (t.valid[c])
            sorted[nvalid++] = t.ms[c];
    if (sorted)
        qsort(sorted, nvalid, sizeof *sorted, gs_tune_cmp_double);
    gs_params p;
    char pt[256];
    gs_tune_space_params(&sp, best, &p);
    gs_tune_params_text(&p, pt, sizeof pt);
    fprintf(out, "exhaustive: %zu valid of %llu (%lu measured now, %lu reused); best %.4f ms (%s), "
            "median %.4f ms, worst %.4f ms\n", nvalid, (unsigned long long)sp.total,
            R.measured, R.reused, t.ms[best], pt, sorted ? sorted[nvalid / 2] : 0,
            sorted ? sorted[nvalid - 1] : 0);
    free(sorted);

    /* Sampled, replayed on those measurements with nseeds seeds per quota. */
    uint64_t dcode = 0;
    int has_def = 0;
    if (a->defaults) {
        a->defaults(info, &p);
        has_def = gs_tune_space_code(&sp, &p, &dcode) == 0;
    }
    enum { NQ = 4, TOPK = 10, ROUNDS = 3 };
    static const size_t quotas[NQ] = { 4, 8, 16, 32 };
    uint64_t *picks = malloc((size_t)NQ * nseeds * sizeof *picks);
    uint64_t *set = malloc(((size_t)NQ * nseeds + TOPK) * sizeof *set);
    double *rem = malloc(((size_t)NQ * nseeds + TOPK) * sizeof *rem);
    if (!picks || !set || !rem) {
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        goto done;
    }
    fprintf(out, "sampled (defaults + S random + hill climbing from the 3 best, at most %d moves "
            "each), %u seeds per S,\nreplayed on the exhaustive measurements:\n",
            o->refine_rounds, nseeds);
    fprintf(out, "  %4s %11s %10s %10s %10s %10s %14s\n", "S", "mean trials", "max trials",
            "found best", "within 5%", "within 10%", "mean/worst x");
    size_t nq = 0;
    for (size_t qi = 0; qi < NQ && !rc && quotas[qi] < sp.total; qi++, nq++) {
        double sum_trials = 0, sum_ratio = 0, worst = 1;
        size_t max_trials = 0;
        unsigned hit = 0, w5 = 0, w10 = 0;
        for (unsigned sd = 1; sd <= nseeds && !rc; sd++) {
            gs_tune_sampler smp;
            uint64_t seed = gs_tune_hash_str(sd, a->name);
            if ((rc = gs_tune_sampler_init(&smp, sp.total, seed, err)) != 0)
                break;
            gs_tune_search sr;
            memset(&sr, 0, sizeof sr);
            size_t quota = quotas[qi];
            t.trials = 0;
            rc = gs_tune_search_run(&sr, &sp, &dcode, has_def ? 1 : 0, &smp, &quota,
                                    o->refine_rounds, 0, table_eval, &t, err);
            /* a replay always finds a valid point: the defaults or a sample */
            uint64_t pk = !rc && sr.best >= 0 ? sr.ev[sr.best].code : best;
            picks[qi * nseeds + sd - 1] = pk;
            double r = t.ms[pk] / t.ms[best];
            sum_ratio += r;
            worst = r > worst ? r : worst;
            hit += pk == best;
            w5 += r <= 1.05;
            w10 += r <= 1.10;
            sum_trials += (double)t.trials;
            if (t.trials > max_trials)
                max_trials = t.trials;
            gs_tune_search_free(&sr);
            gs_tune_sampler_free(&smp);
        }
        fprintf(out, "  %4zu %11.1f %10zu %9u%% %9u%% %9u%% %7.3f/%-6.3f\n", quotas[qi],
                sum_trials / nseeds, max_trials, 100 * hit / nseeds, 100 * w5 / nseeds,
                100 * w10 / nseeds, sum_ratio / nseeds, worst);
    }
    if (rc || nq == 0)
        goto done;

    /* Timing noise makes the exhaustive minimum partly luck (the least of
     * many noisy medians). Re-measure every configuration the replays
     * picked, and the exhaustive top 10, in ROUNDS interleaved rounds, and
     * compare on those times. */
    size_t nset = 0;
    for (size_t k = 0; k < TOPK; k++) {
        long pick = -1;
        for (uint64_t c = 0; c < sp.total; c++) {
            int used = 0;
            for (size_t j = 0; j < nset; j++)
                used |= set[j] == c;
            if (t.valid[c] && !used && (pick < 0 || t.ms[c] < t.ms[pick]))
                pick = (long)c;
        }
        if (pick >= 0)
            set[nset++] = (uint64_t)pick;
    }
    for (size_t i = 0; i < nq * nseeds; i++) {
        size_t j = 0;
        while (j < nset && set[j] != picks[i])
            j++;
        if (j == nset)
            set[nset++] = picks[i];
    }
    double *rounds = malloc(nset * ROUNDS * sizeof *rounds);
    if (!rounds) {
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = gs_tune_input_make(&in, GS_DT_U32, GS_PL_NONE, n, GS_TUNE_DIST_RANDOM, err)) != 0) {
        free(rounds);
        goto done;
    }
    for (int rd = 0; rd < ROUNDS; rd++)
        for (size_t j = 0; j < nset; j++) {
            gs_tune_result r;
            gs_tune_space_params(&sp, set[j], &p);
            gs_tune_trial_run(dev, pc, o->reps, a, &in, &p, &r);
            rounds[j * ROUNDS + rd] = r.valid ? r.med : 1e30;
        }
    size_t tb = 0;
    for (size_t j = 0; j < nset; j++) {
        qsort(rounds + j * ROUNDS, ROUNDS, sizeof *rounds, gs_tune_cmp_double);
        rem[j] = rounds[j * ROUNDS + ROUNDS / 2];
        if (rem[j] < rem[tb])
            tb = j;
    }
    free(rounds);
    gs_tune_space_params(&sp, set[tb], &p);
    gs_tune_params_text(&p, pt, sizeof pt);
    fprintf(out, "re-measured (%zu configurations, median of %d rounds): best %.4f ms (%s); the "
            "exhaustive pick %.4f ms (%.3f x)\n", nset, ROUNDS, rem[tb], pt, rem[0],
            rem[0] / rem[tb]);
    fprintf(out, "  %4s %10s %10s %14s\n", "S", "within 5%", "within 10%", "mean/worst x");
    for (size_t qi = 0; qi < nq; qi++) {
        double sum = 0, worst = 1;
        unsigned w5 = 0, w10 = 0;
        for (unsigned sd = 0; sd < nseeds; sd++) {
            size_t j = 0;
            while (set[j] != picks[qi * nseeds + sd])
                j++;
            double r = rem[j] / rem[tb];
            sum += r;
            worst = r > worst ? r : worst;
            w5 += r <= 1.05;
            w10 += r <= 1.10;
        }
        fprintf(out, "  %4zu %9u%% %9u%% %7.3f/%-6.3f\n", quotas[qi], 100 * w5 / nseeds,
                100 * w10 / nseeds, sum / nseeds, worst);
    }
done:
    gs_tune_input_free(&in);
    free(picks);
    free(set);
    free(rem);
    free(t.ms);
    free(t.valid);
    return rc;
}
