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

/* The quotas of trials (S) the replays of the sampled search get, the
 * exhaustive top configurations re-measured beside their picks, and the
 * rounds of that re-measuring. */
enum { NQ = 4, TOPK = 10, ROUNDS = 3 };
static const size_t quotas[NQ] = { 4, 8, 16, 32 };

/* One comparison: the space, its exhaustive measurements, and what the
 * replays picked. */
typedef struct compare {
    const gs_algo *a;
    gs_dev *dev;
    gs_pcache *pc;
    size_t n;
    const gs_tune_opts *o;
    unsigned nseeds;
    FILE *out;
    gs_tune_space sp;
    table t;
    int whole;              /* every configuration measured, one of them valid */
    uint64_t best;          /* the exhaustive best (when whole) */
    size_t nq;              /* quotas replayed: those under the space's size */
    uint64_t *picks;        /* quota qi, seed sd (from 0): picks[qi * nseeds + sd] */
    uint64_t *set;          /* the configurations re-measured (the top ones first) */
    double *rem;            /* and their re-measured times */
} compare;

/* The exhaustive line: how many configurations are valid, the best, the
 * median and the worst. */
static void exhaustive_report(const compare *C, const gs_tune_devreport *R)
{
    const table *t = &C->t;
    size_t nvalid = 0;
    double *sorted = malloc(C->sp.total * sizeof *sorted);
    for (uint64_t c = 0; sorted && c < C->sp.total; c++)
        if (t->valid[c])
            sorted[nvalid++] = t->ms[c];
    if (sorted)
        qsort(sorted, nvalid, sizeof *sorted, gs_tune_cmp_double);
    gs_params p;
    char pt[256];
    gs_tune_space_params(&C->sp, C->best, &p);
    gs_tune_params_text(&p, pt, sizeof pt);
    fprintf(C->out, "exhaustive: %zu valid of %llu (%lu measured now, %lu reused); best %.4f ms "
            "(%s), median %.4f ms, worst %.4f ms\n", nvalid, (unsigned long long)C->sp.total,
            R->measured, R->reused, t->ms[C->best], pt, sorted ? sorted[nvalid / 2] : 0,
            sorted ? sorted[nvalid - 1] : 0);
    free(sorted);
}

/* Exhaustive: every configuration, until the overall budget (resumable:
 * the database keeps what was measured). Sets C->whole and C->best when
 * all were measured and one is valid, else says why not. */
static int exhaustive(compare *C, gs_db *db, int64_t dev_id, const char *code_id,
                      double deadline, gs_err *err)
{
    gs_tune_devreport R;
    memset(&R, 0, sizeof R);
    uint64_t measured = 0;
    int rc = gs_tune_measure_all(db, C->dev, C->pc, dev_id, code_id, C->a, &C->sp, C->n, C->o,
                                 deadline, C->t.ms, C->t.valid, &measured, &R, err);
    if (rc < 0)
        return rc;
    if (measured < C->sp.total) {   /* the budget ran out (GS_TUNE_STOP) */
        fprintf(C->out, "budget used up after %llu of %llu configurations; run again with the "
                "same --db to continue\n", (unsigned long long)measured,
                (unsigned long long)C->sp.total);
        return 0;
    }
    for (uint64_t c = 0; c < measured; c++)
        if (C->t.valid[c] && (!C->whole || C->t.ms[c] < C->t.ms[C->best])) {
            C->best = c;
            C->whole = 1;
        }
    if (!C->whole) {
        fprintf(C->out, "no valid configuration\n");
        return 0;
    }
    exhaustive_report(C, &R);
    return 0;
}

/* Quota qi's row: nseeds replays of the sampled search with at most S
 * trials (from the defaults' code dcode when has_def), on the measurements;
 * each replay's pick in C->picks. */
static int replay_quota(compare *C, size_t qi, const uint64_t *dcode, int has_def, gs_err *err)
{
    table *t = &C->t;
    const unsigned nseeds = C->nseeds;
    double sum_trials = 0, sum_ratio = 0, worst = 1;
    size_t max_trials = 0;
    unsigned hit = 0, w5 = 0, w10 = 0;
    int rc = 0;
    for (unsigned sd = 1; sd <= nseeds && !rc; sd++) {
        gs_tune_sampler smp;
        uint64_t seed = gs_tune_hash_str(sd, C->a->name);
        if ((rc = gs_tune_sampler_init(&smp, C->sp.total, seed, err)) != 0)
            break;
        gs_tune_search sr;
        memset(&sr, 0, sizeof sr);
        size_t quota = quotas[qi];
        t->trials = 0;
        rc = gs_tune_search_run(&sr, &C->sp, dcode, has_def ? 1 : 0, &smp, &quota,
                                C->o->refine_rounds, 0, table_eval, t, err);
        /* a replay always finds a valid point: the defaults or a sample */
        uint64_t pk = !rc && sr.best >= 0 ? sr.ev[sr.best].code : C->best;
        C->picks[qi * nseeds + sd - 1] = pk;
        double r = t->ms[pk] / t->ms[C->best];
        sum_ratio += r;
        worst = r > worst ? r : worst;
        hit += pk == C->best;
        w5 += r <= 1.05;
        w10 += r <= 1.10;
        sum_trials += (double)t->trials;
        if (t->trials > max_trials)
            max_trials = t->trials;
        gs_tune_search_free(&sr);
        gs_tune_sampler_free(&smp);
    }
    fprintf(C->out, "  %4zu %11.1f %10zu %9u%% %9u%% %9u%% %7.3f/%-6.3f\n", quotas[qi],
            sum_trials / nseeds, max_trials, 100 * hit / nseeds, 100 * w5 / nseeds,
            100 * w10 / nseeds, sum_ratio / nseeds, worst);
    return rc;
}

/* Sampled, replayed on those measurements with nseeds seeds per quota
 * (info: the device the algorithm's defaults are for). */
static int replay(compare *C, const gs_dev_info *info, gs_err *err)
{
    uint64_t dcode = 0;
    int has_def = 0;
    if (C->a->defaults) {
        gs_params p;
        C->a->defaults(info, &p);
        has_def = gs_tune_space_code(&C->sp, &p, &dcode) == 0;
    }
    const unsigned nseeds = C->nseeds;
    C->picks = malloc((size_t)NQ * nseeds * sizeof *C->picks);
    C->set = malloc(((size_t)NQ * nseeds + TOPK) * sizeof *C->set);
    C->rem = malloc(((size_t)NQ * nseeds + TOPK) * sizeof *C->rem);
    if (!C->picks || !C->set || !C->rem)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    fprintf(C->out, "sampled (defaults + S random + hill climbing from the 3 best, at most %d "
            "moves each), %u seeds per S,\nreplayed on the exhaustive measurements:\n",
            C->o->refine_rounds, nseeds);
    fprintf(C->out, "  %4s %11s %10s %10s %10s %10s %14s\n", "S", "mean trials", "max trials",
            "found best", "within 5%", "within 10%", "mean/worst x");
    int rc = 0;
    for (size_t qi = 0; qi < NQ && !rc && quotas[qi] < C->sp.total; qi++, C->nq++)
        rc = replay_quota(C, qi, &dcode, has_def, err);
    return rc;
}

/* The configurations to re-measure into C->set: the exhaustive top TOPK
 * (best first), then every other one a replay picked. Returns how many. */
static size_t remeasure_set(compare *C)
{
    const table *t = &C->t;
    uint64_t *set = C->set;
    size_t nset = 0;
    for (size_t k = 0; k < TOPK; k++) {
        long pick = -1;
        for (uint64_t c = 0; c < C->sp.total; c++) {
            int used = 0;
            for (size_t j = 0; j < nset; j++)
                used |= set[j] == c;
            if (t->valid[c] && !used && (pick < 0 || t->ms[c] < t->ms[pick]))
                pick = (long)c;
        }
        if (pick >= 0)
            set[nset++] = (uint64_t)pick;
    }
    for (size_t i = 0; i < C->nq * C->nseeds; i++) {
        size_t j = 0;
        while (j < nset && set[j] != C->picks[i])
            j++;
        if (j == nset)
            set[nset++] = C->picks[i];
    }
    return nset;
}

/* Per quota, how close the replays' picks came to the best re-measured
 * time, set[tb]'s. */
static void remeasure_report(const compare *C, size_t tb)
{
    fprintf(C->out, "  %4s %10s %10s %14s\n", "S", "within 5%", "within 10%", "mean/worst x");
    for (size_t qi = 0; qi < C->nq; qi++) {
        double sum = 0, worst = 1;
        unsigned w5 = 0, w10 = 0;
        for (unsigned sd = 0; sd < C->nseeds; sd++) {
            size_t j = 0;
            while (C->set[j] != C->picks[qi * C->nseeds + sd])
                j++;
            double r = C->rem[j] / C->rem[tb];
            sum += r;
            worst = r > worst ? r : worst;
            w5 += r <= 1.05;
            w10 += r <= 1.10;
        }
        fprintf(C->out, "  %4zu %9u%% %9u%% %7.3f/%-6.3f\n", quotas[qi], 100 * w5 / C->nseeds,
                100 * w10 / C->nseeds, sum / C->nseeds, worst);
    }
}

/* Timing noise makes the exhaustive minimum partly luck (the least of
 * many noisy medians). Re-measure every configuration the replays
 * picked, and the exhaustive top 10, in ROUNDS interleaved rounds, and
 * compare on those times. */
static int remeasure(compare *C, gs_err *err)
{
    const size_t nset = remeasure_set(C);
    double *rounds = malloc(nset * ROUNDS * sizeof *rounds);
    if (!rounds)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    gs_tune_input in;
    memset(&in, 0, sizeof in);
    int rc = gs_tune_input_make(&in, 32, GS_PL_NONE, C->n, GS_TUNE_DIST_RANDOM, err);
    if (rc) {
        gs_tune_input_free(&in);
        free(rounds);
        return rc;
    }
    gs_params p;
    for (int rd = 0; rd < ROUNDS; rd++)
        for (size_t j = 0; j < nset; j++) {
            gs_tune_result r;
            gs_tune_space_params(&C->sp, C->set[j], &p);
            gs_tune_trial_run(C->dev, C->pc, C->o->reps, C->a, &in, &p, &r);
            rounds[j * ROUNDS + rd] = r.valid ? r.med : 1e30;
        }
    gs_tune_input_free(&in);
    size_t tb = 0;
    for (size_t j = 0; j < nset; j++) {
        qsort(rounds + j * ROUNDS, ROUNDS, sizeof *rounds, gs_tune_cmp_double);
        C->rem[j] = rounds[j * ROUNDS + ROUNDS / 2];
        if (C->rem[j] < C->rem[tb])
            tb = j;
    }
    free(rounds);
    char pt[256];
    gs_tune_space_params(&C->sp, C->set[tb], &p);
    gs_tune_params_text(&p, pt, sizeof pt);
    fprintf(C->out, "re-measured (%zu configurations, median of %d rounds): best %.4f ms (%s); "
            "the exhaustive pick %.4f ms (%.3f x)\n", nset, ROUNDS, C->rem[tb], pt, C->rem[0],
            C->rem[0] / C->rem[tb]);
    remeasure_report(C, tb);
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
    double deadline = gs_now_s() + o->budget_s;
    int64_t dev_id = 0;
    char code_id[65];
    if ((rc = gs_db_device_id(db, &dev->info, 1, &dev_id, err)) != 0 ||
        (rc = gs_kern_code_id(code_id, err)) != 0)
        return rc;
    compare C = { .a = a, .dev = dev, .pc = pc, .n = n, .o = o, .nseeds = nseeds, .out = out };
    const gs_dev_info *info = a->uses_device ? &dev->info : NULL;
    if ((rc = gs_tune_space_init(&C.sp, a, info, o->restrict_spec, err)) != 0)
        return rc;
    if (C.sp.total > 100000)
        return gs_err_set(err, GS_ETOOBIG, "%s: %llu configurations are too many to measure "
                          "all; narrow them with --restrict", a->name,
                          (unsigned long long)C.sp.total);
    C.t = (table){ calloc(C.sp.total, sizeof(double)), calloc(C.sp.total, sizeof(int)),
                   C.sp.total, 0 };
    if (!C.t.ms || !C.t.valid) {
        free(C.t.ms);
        free(C.t.valid);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    fprintf(out, "%s on %s, u32 keys, no payload, n = %zu (2^%d): %llu configurations\n",
            a->name, dev->info.name, n, bucket, (unsigned long long)C.sp.total);
    fflush(out);
    rc = exhaustive(&C, db, dev_id, code_id, deadline, err);
    if (!rc && C.whole)
        rc = replay(&C, info, err);
    if (!rc && C.nq > 0)
        rc = remeasure(&C, err);
    free(C.picks);
    free(C.set);
    free(C.rem);
    free(C.t.ms);
    free(C.t.valid);
    return rc;
}
