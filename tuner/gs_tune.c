/* Tuning one device (see gs_tune.h and docs/TUNING.md): the loop over
 * (bucket, key class, payload) groups under a time budget, each algorithm's
 * search in each group (its candidates, then the search core of
 * gs_search.c), and measuring one configuration: a recorded trial reused,
 * else run (gs_trial.c) when its estimated cost fits, and recorded. It is
 * one file of about 1,300 lines because the loop's deadlines and a trial's
 * admission are the two halves of one budget model (below) over one
 * per-device state; gs_tune_measure_all lends the measuring half to the
 * sampled-versus-exhaustive comparison (gs_compare.c), and the callbacks
 * of probe_cpu lend it to the CPU probe (gs_cpuprobe.c), which decides
 * from those trials which device algorithms a CPU device leaves out.
 *
 * Budget model: each group gets an equal share of the device's remaining
 * time, each algorithm an equal share of the group's remainder. Program
 * builds are charged to an exploration allowance instead (half the device
 * budget, split between the algorithms that have parameters), because a
 * configuration built once is then cheap in every later group: on PoCL a
 * build costs seconds to a minute, a run at small n a millisecond. A trial
 * starts only when its estimated cost fits; the first trial of every
 * (algorithm, group) starts whenever any budget is left, so every group
 * gets a winner, and no trial starts once the budget is spent (one trial in
 * flight may overrun it). Past the dense sizes, every other size up to what
 * memory holds is measured with the defaults and earlier winners only,
 * from a share of the budget kept for it (tune_large_group); time left
 * after that widens the searches whose configurations differed most
 * (spend_leftover). See docs/TUNING.md. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"
#include "gs_kern.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs_err.h"
#include "gs_log.h"
#include "gs_grow.h"
#include "gs_time.h"

/* Share of a device's budget that program builds may use up front. */
#define EXPLORE_FRAC 0.5
/* Estimated cost growth from one size bucket to the next (n doubles). */
#define BUCKET_GROWTH 2.2
/* The group searched first, where the pool of configurations is ranked. */
#define PROBE_LOG2 16
/* Largest space searched exhaustively (candidate list per group). */
#define EXHAUSTIVE_MAX 100000
/* Large n (past the dense buckets, every other bucket up to what memory
 * holds): the share of the budget kept for it, its repetitions, how far
 * behind the best an algorithm may be at the shape's previous measured size
 * and still be timed at the next one (a 4x gap does not close in 4x n),
 * and the moves of its local climb from the seeds. */
#define LARGE_FRAC 0.35
#define LARGE_REPS 3
#define PRUNE_RATIO 4.0
#define LARGE_CLIMB_ROUNDS 2
/* The seen-list code of a baseline that lies outside the space. */
#define BASE_CODE UINT64_MAX
/* Time left over: new configurations sampled per widened search. */
#define REFINE_SAMPLES 8

/* The end-to-end twin of a device algorithm's random-key trial: the same
 * runs' wall time (upload + kernels + download), which the plan compares
 * with the host sort's wall time. */
static const char DIST_E2E[] = GS_DB_DIST_E2E;

/* ---- per-device state ---- */

typedef struct pool_ent {
    uint64_t code;
    double score;           /* time / group best where last measured */
} pool_ent;

typedef struct seen_ent {
    uint64_t code;
    int dt, pl;             /* dt: the key class's width */
} seen_ent;

typedef struct astate {
    const gs_algo *a;
    int ok;                 /* space usable */
    gs_tune_space sp;
    gs_tune_sampler smp;
    size_t quota;           /* new configurations still to sample */
    int exhaustive;         /* every group evaluates the whole space */
    int has_defaults;       /* the defaults lie in the space, at defaults_code */
    unsigned char serves[GS_KW_COUNT][GS_PL_COUNT];  /* per key class and payload: 0 when a host
                               algorithm refuses the shape itself (vqsort with a payload):
                               no search, no line */
    uint64_t defaults_code;
    gs_params dparams;      /* the defaults (the baseline), in the space or not */
    pool_ent *pool;
    size_t npool, poolcap;
    seen_ent *seen;         /* (configuration, variant) run in this process */
    size_t nseen, seencap;
    double build_est;       /* s: estimated build cost of an unseen configuration */
    double build_spent;     /* s of builds charged to its exploration allowance */
    double wall_ms[GS_TUNE_MAX_LOG2 + 2];  /* last median wall time per bucket */
    double last_wall[GS_KW_COUNT][GS_PL_COUNT];      /* per shape: last median wall time, */
    int last_b[GS_KW_COUNT][GS_PL_COUNT];            /* and its bucket */
    int has_prev[GS_KW_COUNT][GS_PL_COUNT];
    uint64_t prev[GS_KW_COUNT][GS_PL_COUNT];         /* previous bucket's winner */
} astate;

/* A dense (algorithm, group) search and the spread of what it measured:
 * time left over goes where the spread is largest. */
typedef struct spread_ent {
    int b, kc;
    gs_payload pl;
    astate *A;
    double spread;          /* slowest / fastest valid configuration */
} spread_ent;

typedef struct tctx {
    gs_db *db;
    gs_dev *dev;
    gs_pcache *pc;
    const gs_tune_opts *o;
    int64_t dev_id;
    char code_id[65];       /* gs_kern_code_id: trials of other code are not reused */
    double start, deadline, budget;
    double explore_s;       /* build allowance of each tunable algorithm */
    double group_build_s;   /* builds in this group paid from allowances */
    double bucket_cost[GS_TUNE_MAX_LOG2 + 2];
    gs_tune_devreport *rep;
    unsigned groups_done, groups_total;
    gs_tune_input in[GS_TUNE_DIST_COUNT];  /* this group's inputs, made on first use */
    spread_ent *spread;
    size_t nspread, spreadcap;
    int refining;           /* spending left-over time: note no spreads */
    const char *phase;      /* for the progress line */
    int probe_b;            /* the probe group's bucket */
    double probe_ms;        /* fastest time measured at the probe shape, < 0: none */
    char probe_algo[32];
} tctx;

/* One (algorithm, group) search: what the eval callback needs. */
typedef struct gctx {
    tctx *T;
    astate *A;
    int kc;
    gs_payload pl;
    int bucket;
    size_t n;
    int large;              /* a sparse large-n group: no exploration, fewer reps */
    double algo_deadline;
    unsigned trials, planned;
    unsigned nseeds;        /* the first trials (baseline and candidates): a large
                               group times them whenever the run has time; its climb
                               only within its share */
    double build_s;         /* builds measured in this search: not the group's */
    double best_ms;
    char best_params[256];
} gctx;

static int seen_has(const astate *A, uint64_t code, int dt, int pl)
{
    for (size_t i = 0; i < A->nseen; i++)
        if (A->seen[i].code == code && A->seen[i].dt == dt && A->seen[i].pl == pl)
            return 1;
    return 0;
}

static void seen_add(astate *A, uint64_t code, int dt, int pl)
{
    if (gs_grow(&A->seen, &A->seencap, A->nseen, sizeof *A->seen, 64))
        return;                 /* only an estimate suffers */
    A->seen[A->nseen++] = (seen_ent){ code, dt, pl };
}


/* The fastest time at the probe shape so far, for the progress line. */
static void note_probe(gctx *G, double ms)
{
    tctx *T = G->T;
    if (G->bucket != T->probe_b || G->kc != T->o->key_bits[0] || G->pl != GS_PL_NONE ||
        !(ms > 0) || (T->probe_ms > 0 && ms >= T->probe_ms))
        return;
    T->probe_ms = ms;
    snprintf(T->probe_algo, sizeof T->probe_algo, "%s", G->A->a->name);
}

static void report_progress(gctx *G, int group_end)
{
    tctx *T = G->T;
    if (!T->o->progress)
        return;
    double now = gs_now_s(), el = now - T->start;
    double left = T->deadline - now;
    double eta = left > 0 ? left : 0;
    if (T->groups_done > 0) {
        double per = el / T->groups_done * (T->groups_total - T->groups_done);
        if (per < eta)
            eta = per;
    }
    gs_tune_progress p = {
        .device = T->dev->info.name, .device_index = T->dev->index, .algorithm = G->A->a->name,
        .key_bits = G->kc, .payload = gs_payload_name(G->pl), .bucket = G->bucket,
        .trials_done = G->trials, .trials_planned = G->planned > G->trials ? G->planned : G->trials,
        .best_ms = G->best_ms, .best_params = G->best_params,
        .groups_done = T->groups_done, .groups_total = T->groups_total,
        .elapsed_s = el, .eta_s = eta, .group_end = group_end,
        .measured = T->rep->measured, .reused = T->rep->reused, .invalid = T->rep->invalid,
        .phase = T->phase ? T->phase : "", .probe_log2 = T->probe_b, .probe_ms = T->probe_ms,
        .probe_algo = T->probe_algo,
    };
    T->o->progress(&p, T->o->progress_ud);
}

/* The progress line before the groups start (the probe, the builds). */
static void report_phase(tctx *T, const char *phase, const char *what)
{
    if (!T->o->progress)
        return;
    T->phase = phase;
    gs_tune_progress p = {
        .device = T->dev->info.name, .device_index = T->dev->index, .algorithm = what,
        .payload = "", .best_ms = -1, .best_params = "", .phase = phase,
        .probe_log2 = T->probe_b, .probe_ms = T->probe_ms, .probe_algo = T->probe_algo,
        .measured = T->rep->measured, .reused = T->rep->reused, .invalid = T->rep->invalid,
    };
    T->o->progress(&p, T->o->progress_ud);
}

static int trial_reps(const gctx *G)
{
    int reps = G->T->o->reps > 0 ? G->T->o->reps : 5;
    return G->large && reps > LARGE_REPS ? LARGE_REPS : reps;
}

/* A trial's wall time per run, estimated: measured at this bucket, else
 * grown from the nearest smaller size measured (this shape's first,
 * whose payload moves the same bytes); 0 when nothing is known. */
static double est_wall_ms(const gctx *G)
{
    const astate *A = G->A;
    int b = G->bucket, ki = gs_kw_index(G->kc);
    if (A->wall_ms[b] > 0 && !G->large)
        return A->wall_ms[b];
    if (A->last_wall[ki][G->pl] > 0 && A->last_b[ki][G->pl] <= b)
        return A->last_wall[ki][G->pl] * pow(BUCKET_GROWTH, b - A->last_b[ki][G->pl]);
    for (int m = b; m >= 0; m--)
        if (A->wall_ms[m] > 0)
            return A->wall_ms[m] * pow(BUCKET_GROWTH, b - m);
    return 0;
}

/* Is there time for a trial of this configuration? Returns 0 to go,
 * GS_TUNE_STOP not to start it. */
static int admit(gctx *G, uint64_t code, int first)
{
    tctx *T = G->T;
    astate *A = G->A;
    double now = gs_now_s();
    if (now >= T->deadline || (T->o->cancel && atomic_load(T->o->cancel))) {
        T->rep->budget_hit = 1;
        return GS_TUNE_STOP;
    }
    if (first && !G->large)
        return 0;
    int seed = G->trials < G->nseeds;
    int reps = trial_reps(G);
    double run_s = (reps + 1) * est_wall_ms(G) / 1000.0;
    if (G->large)   /* making, resetting and checking the input: ~20 ns a key */
        run_s += (double)G->n * (reps + 2) * 5e-9;
    double build_s = seen_has(A, code, G->kc, G->pl) ? 0 : A->build_est;
    if (now + run_s + build_s > T->deadline) {
        T->rep->budget_hit = 1;
        return GS_TUNE_STOP;
    }
    if (G->large)   /* seeds by priority, against the run's deadline; the climb in its share */
        return seed || now + run_s + build_s <= G->algo_deadline ? 0 : GS_TUNE_STOP;
    int explore = build_s > 0 && A->build_spent + build_s <= T->explore_s;
    double charged = run_s + (explore ? 0 : build_s);
    return now - G->build_s + charged <= G->algo_deadline ? 0 : GS_TUNE_STOP;
}

/* Write one trial (and, for a valid one of a device algorithm, its
 * end-to-end twin) in one transaction. */
static int record(tctx *T, const gs_db_trial *key, const gs_tune_result *r, int twin,
                  gs_err *err)
{
    gs_db_trial t = *key;
    t.valid = r->valid;
    t.reason = r->valid ? "" : r->reason;
    t.median_ms = r->med;
    t.min_ms = r->mn;
    t.max_ms = r->mx;
    t.reps = r->reps;
    int rc = gs_db_begin(T->db, err);
    if (!rc)
        rc = gs_db_trial_add(T->db, &t, NULL, err);
    if (!rc && twin) {
        t.distribution = DIST_E2E;
        t.median_ms = r->wmed;
        t.min_ms = r->wmn;
        t.max_ms = r->wmx;
        rc = gs_db_trial_add(T->db, &t, NULL, err);
    }
    if (!rc)
        rc = gs_db_commit(T->db, err);
    else
        gs_db_rollback(T->db);
    return rc;
}

/* A trial's database key in this group (json: its params). */
static gs_db_trial trial_key(const gctx *G, int dist, const char *json)
{
    return (gs_db_trial){ .device_id = G->T->dev_id, .algorithm = G->A->a->name,
                          .key_bits = G->kc, .payload = gs_payload_name(G->pl), .n = G->n,
                          .distribution = gs_tune_dist_names[dist], .params = json,
                          .code_id = G->T->code_id };
}

/* The recorded random-key trial of p in this group: median and fastest
 * run, 0; or an error (GS_ENOTFOUND: not measured). */
static int trial_stats(const gctx *G, const gs_params *p, double *med, double *mn, gs_err *err)
{
    char json[512];
    gs_params q = *p;
    int rc = gs_params_to_json(&q, json, sizeof json, err);
    if (rc)
        return rc;
    gs_db_trial key = trial_key(G, GS_TUNE_DIST_RANDOM, json), t;
    if ((rc = gs_db_trial_find(G->T->db, &key, &t, NULL, err)) != 0)
        return rc;
    *med = t.median_ms;
    *mn = t.min_ms;
    return t.valid ? 0 : gs_err_set(err, GS_EINVAL, "invalid trial");
}

/* Measure (or reuse) one parameter set `p` on one distribution; `code`
 * names it among the configurations this run has built (its space code,
 * or BASE_CODE for a baseline outside the space). */
static int measure_p(gctx *G, int dist, const gs_params *pp, uint64_t code, int first,
                     double *ms, int *valid, gs_err *err)
{
    tctx *T = G->T;
    astate *A = G->A;
    const gs_algo *a = A->a;
    gs_params p = *pp;
    char json[512];
    int rc = gs_params_to_json(&p, json, sizeof json, err);
    if (rc)
        return rc;
    gs_db_trial key = trial_key(G, dist, json);
    double med = 0;
    int val = 0;
    gs_err lerr;
    gs_err_clear(&lerr);
    rc = gs_db_trial_lookup(T->db, &key, &med, &val, NULL, &lerr);
    if (rc == 0) {
        T->rep->reused++;
        *ms = med;
        *valid = val;
        return 0;
    }
    if (rc != GS_ENOTFOUND) {
        *err = lerr;
        return rc;
    }
    if ((rc = admit(G, code, first)) != 0)
        return rc;
    gs_tune_input *in = &T->in[dist];
    if (!in->in_k &&
        (rc = gs_tune_input_make(in, G->kc, G->pl, G->n, dist, err)) != 0)
        return rc;
    int dt = G->kc, is_new = !seen_has(A, code, dt, G->pl);
    gs_tune_result r;
    gs_tune_trial_run(T->dev, T->pc, trial_reps(G), a, in, &p, &r);
    if (r.valid) {
        if (is_new) {
            /* Build (and first-launch) cost of a configuration seen first. */
            double b = (r.warm_wall - r.wmed) / 1000.0;
            if (b < 0)
                b = 0;
            if (A->build_spent + b <= T->explore_s) {
                G->build_s += b;    /* within the allowance: not the group's time */
                T->group_build_s += b;
            }
            A->build_spent += b;
            A->build_est = A->build_est > 0 ? 0.5 * (A->build_est + b) : b;
            seen_add(A, code, dt, G->pl);
        }
        A->wall_ms[G->bucket] = r.wmed;
        if (dist == GS_TUNE_DIST_RANDOM) {
            A->last_wall[gs_kw_index(G->kc)][G->pl] = r.wmed;
            A->last_b[gs_kw_index(G->kc)][G->pl] = G->bucket;
        }
        if (G->trials == 0 && dist == GS_TUNE_DIST_RANDOM)
            T->bucket_cost[G->bucket] += (r.reps + 1) * r.wmed / 1000.0;
    }
    rc = record(T, &key, &r, a->uses_device && dist == GS_TUNE_DIST_RANDOM && r.valid, err);
    if (rc)
        return rc;
    T->rep->measured++;
    if (!r.valid) {
        T->rep->invalid++;
        char pt[256];
        gs_tune_params_text(&p, pt, sizeof pt);
        GS_DEBUG("%s %s n=%zu %s: invalid: %s", a->name, pt, G->n, gs_tune_dist_names[dist],
                 r.reason);
    }
    *ms = r.med;
    *valid = r.valid;
    return 0;
}

static int measure(gctx *G, int dist, uint64_t code, int first, double *ms, int *valid,
                   gs_err *err)
{
    gs_params p;
    gs_tune_space_params(&G->A->sp, code, &p);
    return measure_p(G, dist, &p, code, first, ms, valid, err);
}

static int eval_cb(void *ud, uint64_t code, double *ms, int *valid, gs_err *err)
{
    gctx *G = ud;
    int rc = measure(G, GS_TUNE_DIST_RANDOM, code, G->trials == 0, ms, valid, err);
    if (rc)
        return rc;
    G->trials++;
    if (*valid && (G->best_ms < 0 || *ms < G->best_ms)) {
        gs_params p;
        G->best_ms = *ms;
        gs_tune_space_params(&G->A->sp, code, &p);
        gs_tune_params_text(&p, G->best_params, sizeof G->best_params);
        note_probe(G, *ms);
    }
    report_progress(G, 0);
    return 0;
}

/* Remember how far apart the configurations this search timed were. */
static void note_spread(tctx *T, astate *A, int kc, gs_payload pl, int bucket,
                        const gs_tune_search *sr)
{
    double lo = 0, hi = 0;
    for (size_t i = 0; i < sr->nev; i++) {
        const gs_tune_eval *e = &sr->ev[i];
        if (!e->valid || !(e->ms > 0))
            continue;
        lo = lo > 0 && lo < e->ms ? lo : e->ms;
        hi = hi > e->ms ? hi : e->ms;
    }
    if (!(lo > 0) ||
        gs_grow(&T->spread, &T->spreadcap, T->nspread, sizeof *T->spread, 32))
        return;             /* only where left-over time goes suffers */
    T->spread[T->nspread++] = (spread_ent){ .b = bucket, .kc = kc, .pl = pl, .A = A,
                                            .spread = hi / lo };
}

static void pool_update(astate *A, const gs_tune_search *sr)
{
    double best = sr->best >= 0 ? sr->ev[sr->best].ms : 0;
    for (size_t i = 0; i < sr->nev; i++) {
        const gs_tune_eval *e = &sr->ev[i];
        double score = e->valid ? (best > 0 ? e->ms / best : 1.0) : 1e9;
        size_t j = 0;
        while (j < A->npool && A->pool[j].code != e->code)
            j++;
        if (j == A->npool) {
            if (!e->valid)
                continue;       /* failures do not join the pool */
            if (gs_grow(&A->pool, &A->poolcap, A->npool, sizeof *A->pool, 32))
                return;
            A->npool++;
        }
        A->pool[j] = (pool_ent){ e->code, score };
    }
}

static int cmp_pool(const void *x, const void *y)
{
    const pool_ent *a = x, *b = y;
    return a->score < b->score ? -1 : a->score > b->score;
}

/* The baseline of a group: the algorithm's built-in defaults on this
 * device, timed first in every group whatever the space holds (a
 * --restrict, or GPU defaults no sampled value matches), so that nothing
 * tuned enters the plan without having been compared with it in the same
 * run. *code: its space code, or BASE_CODE outside the space. */
static int measure_baseline(gctx *G, gs_params *bp, uint64_t *code, double *ms, int *valid,
                            gs_err *err)
{
    astate *A = G->A;
    if (A->has_defaults) {
        /* the space's spelling of the same set: one trial, not two */
        *code = A->defaults_code;
        gs_tune_space_params(&A->sp, *code, bp);
    } else {
        *code = BASE_CODE;
        *bp = A->dparams;
    }
    int rc = measure_p(G, GS_TUNE_DIST_RANDOM, bp, *code, 1, ms, valid, err);
    if (rc == GS_TUNE_STOP) {   /* no time left, or cancelled: nothing to compare yet */
        *valid = 0;
        return GS_TUNE_STOP;
    }
    if (rc)
        return rc;
    G->trials++;
    if (*valid) {
        G->best_ms = *ms;
        gs_tune_params_text(bp, G->best_params, sizeof G->best_params);
        note_probe(G, *ms);
    }
    report_progress(G, 0);
    return 0;
}

/* The search's candidates in one group, into *out (malloc'd, *nout of
 * them): the recorded winner (a rerun never does worse), the previous
 * bucket's winner, then with explore (not at large n, where a trial costs
 * seconds) every configuration this run has found valid, most promising
 * first, and with an exhaustive space the rest of it. */
static int group_candidates(tctx *T, astate *A, int kc, gs_payload pl, int bucket, int explore,
                            uint64_t **out, size_t *nout, gs_err *err)
{
    int ki = gs_kw_index(kc);
    size_t ncand = 0, cap = A->npool + 3 + (A->exhaustive ? (size_t)A->sp.total : 0);
    uint64_t *cand = malloc(cap * sizeof *cand);
    if (!cand)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    gs_db_choice ch;
    gs_err lerr;
    gs_params p;
    uint64_t c;
    if (gs_db_winner_get(T->db, T->dev_id, A->a->name, kc, gs_payload_name(pl), bucket, &ch,
                         &lerr) == 0 &&
        gs_params_from_json(ch.params, &p, &lerr) == 0 && gs_tune_space_code(&A->sp, &p, &c) == 0)
        cand[ncand++] = c;
    if (A->has_prev[ki][pl])
        cand[ncand++] = A->prev[ki][pl];
    if (A->npool > 1)   /* an algorithm without parameters has no pool (NULL) */
        qsort(A->pool, A->npool, sizeof *A->pool, cmp_pool);
    for (size_t i = 0; explore && i < A->npool; i++)
        cand[ncand++] = A->pool[i].code;
    for (uint64_t k = 0; explore && A->exhaustive && k < A->sp.total; k++)
        cand[ncand++] = k;      /* the rest of the space (duplicates cost nothing) */
    *out = cand;
    *nout = ncand;
    return 0;
}

/* The acceptance rule: the search's best replaces the baseline (bp,
 * bcode, base_ms when base_valid) only where it beats it by more than the
 * noise (gs_tune_beats), or where the baseline is not valid. The winner
 * into *wc, *wms and *wp; returns whether it is the search's (tuned). */
static int accept_best(gctx *G, const gs_tune_search *sr, const gs_params *bp, uint64_t bcode,
                       double base_ms, int base_valid, uint64_t *wc, double *wms, gs_params *wp)
{
    *wc = bcode;
    *wms = base_ms;
    *wp = *bp;
    if (sr->best < 0 || sr->ev[sr->best].code == bcode)
        return !base_valid;
    gs_params sp;
    gs_err lerr;
    double smed = 0, smin = 0, bmed = 0, bmin = 0;
    gs_tune_space_params(&G->A->sp, sr->ev[sr->best].code, &sp);
    gs_err_clear(&lerr);
    if (!base_valid ||
        (trial_stats(G, &sp, &smed, &smin, &lerr) == 0 &&
         trial_stats(G, bp, &bmed, &bmin, &lerr) == 0 && gs_tune_beats(smed, bmed, bmin))) {
        *wc = sr->ev[sr->best].code;
        *wms = sr->ev[sr->best].ms;
        *wp = sp;
        return 1;
    }
    char pt[256];
    gs_tune_params_text(&sp, pt, sizeof pt);
    GS_DEBUG("%s %s keys, payload %s, n=2^%d: %s (%.4f ms) does not beat the defaults "
             "(%.4f ms, fastest run %.4f) by more than the noise: the defaults stand",
             G->A->a->name, gs_kw_name(G->kc), gs_payload_name(G->pl),
             G->bucket, pt, smed, bmed, bmin);
    return 0;
}

/* Write the group's winner w (its parameters wp, code wc; the baseline's
 * bp) to the database and the report, then time it on the other
 * distributions while there is time (informational trials; stopped: none
 * is left). */
static int save_winner(gctx *G, gs_tune_winner *w, const gs_params *wp, uint64_t wc,
                       const gs_params *bp, int stopped, gs_err *err)
{
    tctx *T = G->T;
    const gs_algo *a = G->A->a;
    int rc;
    snprintf(w->algorithm, sizeof w->algorithm, "%s", a->name);
    if ((rc = gs_params_to_json(wp, w->params, sizeof w->params, err)) != 0 ||
        (rc = gs_params_to_json(bp, w->base_params, sizeof w->base_params, err)) != 0 ||
        (rc = gs_tune_winner_save(T->db, T->dev_id, T->code_id, a->uses_device, w, err)) != 0)
        return rc;
    if (gs_tune_winner_add(T->rep, w))
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    for (int d = GS_TUNE_DIST_SORTED; T->o->extra_dists && !stopped && d < GS_TUNE_DIST_COUNT;
         d++) {
        double ms;
        int valid;
        rc = measure_p(G, d, wp, wc, 0, &ms, &valid, err);
        if (rc == GS_TUNE_STOP)
            break;
        if (rc)
            return rc;
    }
    report_progress(G, 1);
    return 0;
}

/* Search one algorithm in one group: its baseline, then the search; the
 * search's best replaces the baseline only where it beats it by more than
 * the noise (accept_best). Write the winner, time it on the other
 * distributions when there is time. */
static int tune_algo_group(tctx *T, astate *A, int kc, gs_payload pl, int bucket, int large,
                           double algo_deadline, gs_err *err)
{
    const gs_algo *a = A->a;
    const gs_tune_opts *o = T->o;
    int ki = gs_kw_index(kc);
    if (!A->serves[ki][pl])
        return 0;               /* a shape the algorithm refuses: not a search */
    gctx G = { .T = T, .A = A, .kc = kc, .pl = pl, .bucket = bucket, .large = large,
               .n = (size_t)1 << bucket, .algo_deadline = algo_deadline, .best_ms = -1,
               .nseeds = 1 /* the baseline is the first seed */ };
    snprintf(G.best_params, sizeof G.best_params, "-");

    gs_params bp;
    uint64_t bcode;
    double base_ms = -1;
    int base_valid = 0;
    int rc = measure_baseline(&G, &bp, &bcode, &base_ms, &base_valid, err);
    if (rc < 0)
        return rc;
    int stopped = rc == GS_TUNE_STOP;

    /* Candidates (group_candidates); at large n a short climb from the
     * best of them follows, within the group's share. The narrow keys'
     * count on the host takes no parameter of the host sort's: its
     * baseline alone. */
    const int fixed = kc == 16 && !a->half_keys;
    int explore = !large && !fixed;
    uint64_t *cand = NULL;
    size_t ncand = 0;
    if ((rc = group_candidates(T, A, kc, pl, bucket, explore, &cand, &ncand, err)) != 0)
        return rc;
    size_t no_quota = 0, *quota = explore ? &A->quota : &no_quota;
    G.planned = 1 + (unsigned)(explore && A->exhaustive ? A->sp.total : ncand + *quota);
    G.nseeds = 1 + (unsigned)ncand;

    gs_tune_search sr;
    memset(&sr, 0, sizeof sr);
    sr.best = -1;
    sr.starts = large ? 1 : 0;  /* at large n one climb, from the best seed */
    sr.large = large;
    if (A->has_defaults && !stopped) {
        /* the baseline is the search's first point: a climb may start there */
        if (gs_grow(&sr.ev, &sr.cap, 0, sizeof *sr.ev, 32)) {
            free(cand);
            return gs_err_set(err, GS_ENOMEM, "out of memory");
        }
        sr.ev[sr.nev++] = (gs_tune_eval){ .code = bcode, .ms = base_ms, .valid = base_valid };
        sr.best = base_valid ? 0 : -1;
    }
    /* (with no time left it still reuses what a killed run recorded) */
    rc = gs_tune_search_run(&sr, &A->sp, cand, fixed ? 0 : ncand, &A->smp, quota,
                            fixed ? 0 : explore ? o->refine_rounds : LARGE_CLIMB_ROUNDS,
                            o->max_trials,
                            eval_cb, &G, err);
    free(cand);
    if (!rc && explore && A->sp.total > 1 && !A->exhaustive && !T->refining)
        note_spread(T, A, kc, pl, bucket, &sr);
    if (rc) {
        gs_tune_search_free(&sr);
        return rc;
    }
    if (sr.best < 0 && !base_valid) {
        /* Nothing valid (the reasons are in the trials): no winner. */
        if (sr.nev > 0 || G.trials > 0)
            GS_DEBUG("%s: no valid configuration for %s keys, payload %s, n=2^%d", a->name,
                     gs_kw_name(kc), gs_payload_name(pl), bucket);
        pool_update(A, &sr);
        report_progress(&G, 1);
        gs_tune_search_free(&sr);
        return 0;
    }

    if (!base_valid && sr.best >= 0 && sr.ev[sr.best].code == bcode) {
        base_ms = sr.ev[sr.best].ms;    /* measured by the search after all (a seed) */
        base_valid = 1;
    }
    uint64_t wc;
    double wms;
    gs_params wp;
    int tuned = accept_best(&G, &sr, &bp, bcode, base_ms, base_valid, &wc, &wms, &wp);
    if (wc != BASE_CODE) {
        A->prev[ki][pl] = wc;
        A->has_prev[ki][pl] = 1;
    } else if (sr.best >= 0) {  /* a seed for the next size still */
        A->prev[ki][pl] = sr.ev[sr.best].code;
        A->has_prev[ki][pl] = 1;
    }
    pool_update(A, &sr);
    gs_tune_search_free(&sr);

    gs_tune_winner w = { .key_bits = kc, .payload = pl, .bucket = bucket, .median_ms = wms,
                         .e2e_ms = -1, .stable = a->stable, .uses_device = a->uses_device,
                         .base_ms = base_valid ? base_ms : -1, .base_e2e_ms = -1,
                         .tuned = tuned };
    return save_winner(&G, &w, &wp, wc, &bp, stopped, err);
}

static int max_bucket(const tctx *T, const astate *A, size_t na)
{
    int hi = T->o->large_max_log2 > T->o->max_log2 ? T->o->large_max_log2 : T->o->max_log2;
    hi = hi > GS_TUNE_MAX_LOG2 ? GS_TUNE_MAX_LOG2 : hi;
    size_t kmax = 0, vmax = 0;
    for (size_t i = 0; i < T->o->nkey_bits; i++)
        if ((size_t)T->o->key_bits[i] / 8 > kmax)
            kmax = (size_t)T->o->key_bits[i] / 8;
    for (size_t i = 0; i < T->o->npayloads; i++)
        if (gs_payload_size(T->o->payloads[i]) > vmax)
            vmax = gs_payload_size(T->o->payloads[i]);
    int any_dev = 0;
    for (size_t i = 0; i < na; i++)
        any_dev |= A[i].ok && A[i].a->uses_device;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t host = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_C(1) << 32;
    const gs_dev_info *in = &T->dev->info;
    while (hi > T->o->min_log2) {
        uint64_t n = UINT64_C(1) << hi;
        /* input + work copies of keys and values, the algorithm's scratch
         * as much again, within a quarter of the host's memory */
        int fits = n * (kmax + vmax) * 4 <= host / 4;
        if (any_dev) {
            fits &= !in->max_alloc || n * (kmax > vmax ? kmax : vmax) <= in->max_alloc;
            fits &= !in->global_mem || 2 * n * (kmax + vmax) + (UINT64_C(1) << 20) <= in->global_mem;
        }
        if (fits)
            break;
        hi--;
    }
    return hi;
}

static void free_inputs(tctx *T)
{
    for (int d = 0; d < GS_TUNE_DIST_COUNT; d++)
        gs_tune_input_free(&T->in[d]);
}

static int init_algos(tctx *T, astate **out, size_t *nout, gs_err *err)
{
    const gs_tune_opts *o = T->o;
    size_t na = o->algos ? o->nalgos : gs_algo_count();
    astate *A = calloc(na ? na : 1, sizeof *A);
    if (!A)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    for (size_t i = 0; i < na; i++) {
        A[i].a = o->algos ? o->algos[i] : gs_algo_at(i);
        const gs_algo *a = A[i].a;
        const gs_dev_info *info = a->uses_device ? &T->dev->info : NULL;
        gs_err e;
        gs_err_clear(&e);
        if (!o->algos && a->not_tuned) {   /* routed by rule; --algorithms tunes it */
            GS_DEBUG("%s: not among the default candidates (--algorithms %s tunes it)",
                     a->name, a->name);
            continue;
        }
        if (gs_tune_space_init(&A[i].sp, a, info, o->restrict_spec, &e)) {
            GS_WARN("%s: not tuned on %s: %s", a->name, T->dev->info.name, e.msg);
            continue;
        }
        int rc = gs_tune_sampler_init(&A[i].smp, A[i].sp.total, gs_tune_hash_str(o->seed, a->name), err);
        if (rc) {
            for (size_t j = 0; j <= i; j++)
                gs_tune_sampler_free(&A[j].smp);
            free(A);
            return rc;
        }
        size_t smp = o->samples;
        A[i].exhaustive = o->strategy == GS_TUNE_EXHAUSTIVE ||
                          (o->strategy == GS_TUNE_AUTO && A[i].sp.total <= smp);
        if (A[i].exhaustive && A[i].sp.total > EXHAUSTIVE_MAX) {
            GS_WARN("%s: %llu configurations are too many for an exhaustive search; "
                    "sampling %zu instead", a->name, (unsigned long long)A[i].sp.total, smp);
            A[i].exhaustive = 0;
        }
        A[i].quota = A[i].exhaustive ? 0 : smp;
        gs_params_clear(&A[i].dparams);     /* no defaults(): every parameter's own */
        if (a->defaults)
            a->defaults(info, &A[i].dparams);
        A[i].has_defaults =
            gs_tune_space_code(&A[i].sp, &A[i].dparams, &A[i].defaults_code) == 0;
        if (!A[i].has_defaults && a->nparams == 0) {
            A[i].defaults_code = 0;     /* no parameters: the one point */
            A[i].has_defaults = 1;
        }
        /* A host algorithm that refuses a shape with its defaults refuses it
         * whatever its parameters (they are thread counts and pass shapes):
         * known before the tune, so no trial and no line. A device
         * algorithm's refusals depend on its parameters: searched. */
        for (size_t ki = 0; ki < o->nkey_bits; ki++)
            for (size_t pi = 0; pi < o->npayloads; pi++) {
                gs_err ce;
                gs_err_clear(&ce);
                int serves = gs_tune_serves(a, o->key_bits[ki], o->payloads[pi], &A[i].dparams,
                                            &ce);
                A[i].serves[gs_kw_index(o->key_bits[ki])][o->payloads[pi]] = (unsigned char)serves;
                if (!serves) {
                    T->rep->skipped++;
                    GS_DEBUG("%s: not searched for %s keys, payload %s%s%s", a->name,
                             gs_kw_name(o->key_bits[ki]), gs_payload_name(o->payloads[pi]),
                             ce.msg[0] ? ": " : "", ce.msg);
                }
            }
        A[i].ok = 1;
        GS_DEBUG("%s on %s: %llu configurations, %s, %zu to sample", a->name, T->dev->info.name,
                 (unsigned long long)A[i].sp.total,
                 A[i].exhaustive ? "exhaustive" : "sampled", A[i].quota);
    }
    *out = A;
    *nout = na;
    return 0;
}

static void free_algos(astate *A, size_t na)
{
    for (size_t i = 0; i < na; i++) {
        gs_tune_sampler_free(&A[i].smp);
        free(A[i].pool);
        free(A[i].seen);
    }
    free(A);
}

static void ctx_init(tctx *T, gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                     gs_tune_devreport *R, double deadline)
{
    memset(T, 0, sizeof *T);
    T->db = db;
    T->dev = dev;
    T->pc = pc;
    T->o = o;
    T->rep = R;
    T->start = gs_now_s();
    T->deadline = deadline;
    T->budget = deadline - T->start > 0 ? deadline - T->start : 0;
}

static int tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                       double deadline, gs_tune_report *rep, gs_err *err);

/* The CPU probe (gs_cpuprobe.c), given the trials of this loop: what the
 * callbacks below share. */
typedef struct probe_ud {
    tctx *T;
    astate *A;
} probe_ud;

/* A probe gctx: algorithm S at the probe group. */
static gctx probe_ctx(tctx *T, astate *S, int kc, gs_payload pl)
{
    gctx G = { .T = T, .A = S, .kc = kc, .pl = pl, .bucket = T->probe_b,
               .n = (size_t)1 << T->probe_b, .algo_deadline = T->deadline, .best_ms = -1,
               .nseeds = 1 };
    snprintf(G.best_params, sizeof G.best_params, "-");
    return G;
}

/* Whether algorithm i's defaults were timed at the probe group before (this
 * code, this device): then deciding costs no build. */
static int probe_recorded(void *ud, size_t i, int kc, gs_payload pl)
{
    probe_ud *u = ud;
    tctx *T = u->T;
    astate *S = &u->A[i];
    gctx G = probe_ctx(T, S, kc, pl);
    char json[512];
    gs_params q = S->dparams;
    double med = 0;
    int val = 0;
    gs_err le;
    gs_err_clear(&le);
    if (gs_params_to_json(&q, json, sizeof json, &le) != 0)
        return 0;
    gs_db_trial key = trial_key(&G, GS_TUNE_DIST_RANDOM, json);
    return gs_db_trial_lookup(T->db, &key, &med, &val, NULL, &le) == 0;
}

/* Algorithm i's defaults timed at the probe group, as its baseline there. */
static int probe_measure(void *ud, size_t i, int kc, gs_payload pl, double *ms, int *valid,
                         gs_err *err)
{
    probe_ud *u = ud;
    gctx G = probe_ctx(u->T, &u->A[i], kc, pl);
    gs_params bp;
    uint64_t code;
    return measure_baseline(&G, &bp, &code, ms, valid, err);
}

static void probe_phase(void *ud, const char *phase, const char *what)
{
    report_phase(((probe_ud *)ud)->T, phase, what);
}

/* The CPU probe over A: device algorithms far behind the host sort on a
 * CPU device leave the tune (A[i].ok = 0, said once in the report). */
static int probe_cpu(tctx *T, astate *A, size_t na, gs_err *err)
{
    gs_tune_probe_algo *pa = calloc(na ? na : 1, sizeof *pa);
    if (!pa)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int kc;
    gs_payload pl;
    gs_tune_probe_shape(T->o, &kc, &pl);
    for (size_t i = 0; i < na; i++)
        pa[i] = (gs_tune_probe_algo){ .a = A[i].a, .ok = A[i].ok,
                                      .serves = A[i].serves[gs_kw_index(kc)][pl] };
    probe_ud u = { .T = T, .A = A };
    gs_tune_probe_fns f = { .ud = &u, .recorded = probe_recorded, .measure = probe_measure,
                            .phase = probe_phase };
    /* Outside the budget, as the builds are: no probe is refused for time,
     * and gs_tune_device moves the clock on by what this took. */
    double saved_deadline = T->deadline;
    T->deadline = INFINITY;
    int rc = gs_tune_probe_cpu(T->dev, T->pc, T->o, T->probe_b, pa, na, &f, T->rep, err);
    T->deadline = saved_deadline;
    free_inputs(T);
    for (size_t i = 0; i < na; i++)
        A[i].ok = pa[i].ok;
    free(pa);
    return rc;
}

/* One large-n group: each algorithm that was within PRUNE_RATIO of the
 * best at the shape's previous measured size, timed with its earlier
 * winner and defaults while the run's deadline allows (a trial there costs
 * seconds, so its cost is estimated even for the first). */
static int tune_large_group(tctx *T, astate *A, size_t na, int kc, gs_payload pl, int b,
                            double group_deadline, gs_err *err)
{
    gs_tune_devreport *R = T->rep;
    int prev = -1;
    for (size_t i = 0; i < R->nwinners; i++) {
        const gs_tune_winner *w = &R->winners[i];
        if (w->key_bits == kc && w->payload == pl && w->bucket < b && w->bucket > prev)
            prev = w->bucket;
    }
    double best = -1;
    for (size_t i = 0; i < R->nwinners; i++) {
        const gs_tune_winner *w = &R->winners[i];
        double ms = gs_tune_winner_ms(R, w);
        if (w->key_bits == kc && w->payload == pl && w->bucket == prev && ms > 0 &&
            (best < 0 || ms < best))
            best = ms;
    }
    size_t before = R->nwinners;
    int rc = 0;
    for (size_t ai = 0; ai < na && !rc; ai++) {
        if (!A[ai].ok || !A[ai].serves[gs_kw_index(kc)][pl])
            continue;
        double mine = -1;
        for (size_t i = 0; i < R->nwinners; i++) {
            const gs_tune_winner *w = &R->winners[i];
            if (w->key_bits == kc && w->payload == pl && w->bucket == prev &&
                !strcmp(w->algorithm, A[ai].a->name))
                mine = gs_tune_winner_ms(R, w);
        }
        if (best > 0 && !(mine > 0 && mine <= PRUNE_RATIO * best)) {
            R->pruned++;
            GS_DEBUG("%s: not timed at n = 2^%d (%s keys, payload %s): %s at 2^%d", A[ai].a->name,
                     b, gs_kw_name(kc), gs_payload_name(pl),
                     mine > 0 ? "more than 4x the best" : "no valid time", prev);
            continue;
        }
        size_t aleft = 0;
        for (size_t j = ai; j < na; j++)
            aleft += A[j].ok;
        double now = gs_now_s();
        rc = tune_algo_group(T, &A[ai], kc, pl, b, 1, now + (group_deadline - now) / (double)aleft,
                             err);
    }
    free_inputs(T);
    T->groups_done++;
    if (!rc && R->nwinners > before && b > R->max_log2)
        R->max_log2 = b;
    return rc;
}

static int cmp_spread(const void *x, const void *y)
{
    const spread_ent *a = x, *b = y;
    return a->spread > b->spread ? -1 : a->spread < b->spread;
}

/* Time left after every group: the dense searches whose configurations
 * were furthest apart are searched again with more samples, most spread
 * first, while the budget lasts. */
static int spend_leftover(tctx *T, gs_err *err)
{
    size_t n = T->nspread;
    if (!n || gs_now_s() + 0.02 * T->budget >= T->deadline)
        return 0;
    qsort(T->spread, n, sizeof *T->spread, cmp_spread);
    T->refining = 1;
    T->phase = "refining";
    int rc = 0;
    for (size_t i = 0; i < n && !rc && T->spread[i].spread > 1.05; i++) {
        double now = gs_now_s();
        if (now >= T->deadline)
            break;
        spread_ent e = T->spread[i];
        e.A->quota += REFINE_SAMPLES;
        rc = tune_algo_group(T, e.A, e.kc, e.pl, e.b, 0,
                             now + (T->deadline - now) / (double)(n - i), err);
        free_inputs(T);
        T->rep->refined++;
    }
    T->refining = 0;
    return rc;
}

int gs_tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                   double deadline, gs_tune_report *rep, gs_err *err)
{
    size_t at = rep->ndevs;
    int rc = tune_device(db, dev, pc, o, deadline, rep, err);
    /* an error ends the run early: that is not the budget running out */
    if (rc && rep->ndevs > at)
        rep->devs[at].failed = 1;
    return rc;
}

/* A new entry of rep for dev, in *out. */
static int report_add(gs_tune_report *rep, const gs_dev *dev, gs_tune_devreport **out,
                      gs_err *err)
{
    gs_tune_devreport *nd = realloc(rep->devs, (rep->ndevs + 1) * sizeof *nd);
    if (!nd)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    rep->devs = nd;
    gs_tune_devreport *R = &rep->devs[rep->ndevs++];
    memset(R, 0, sizeof *R);
    snprintf(R->name, sizeof R->name, "%s", dev->info.name);
    snprintf(R->platform, sizeof R->platform, "%s", dev->info.platform);
    R->index = dev->index;
    R->cpu = (dev->info.type & CL_DEVICE_TYPE_CPU) != 0;
    snprintf(R->default_algo, sizeof R->default_algo, "%s", gs_algo_default_for(&dev->info)->name);
    *out = R;
    return 0;
}

/* What comes before the budget's clock starts: on a CPU device, the
 * device algorithms far behind the host sort are dropped before their
 * programs are warmed (the probe, at the probe group's bucket), then the
 * programs are built; the budget's start and end move on by the time
 * both took. */
static int probe_and_build(tctx *T, astate *A, size_t na, gs_err *err)
{
    gs_tune_devreport *R = T->rep;
    double pt0 = gs_now_s();
    int rc = probe_cpu(T, A, na, err);
    if (rc)
        return rc;
    R->probe_s = gs_now_s() - pt0;
    T->deadline += R->probe_s;
    T->start += R->probe_s;
    /* An algorithm this code has measured on the device before (a rerun,
     * a resumed run) found its programs in the cache then: no warm-up. */
    const gs_algo *al[64];
    size_t nal = 0;
    for (size_t i = 0; i < na && nal < 64; i++) {
        gs_err e;
        gs_err_clear(&e);
        if (A[i].ok && gs_db_trials_any(T->db, T->dev_id, A[i].a->name, T->code_id, &e) == 0)
            al[nal++] = A[i].a;
    }
    for (size_t i = 0; i < nal; i++)
        if (al[i]->uses_device) {
            report_phase(T, "building programs", "");
            break;
        }
    double pb = gs_tune_prebuild(T->dev, T->pc, T->o, al, nal);
    R->prebuild_s = pb;
    T->deadline += pb;
    T->start += pb;
    return 0;
}

/* One group: a bucket, a key class and a payload kind (their indices in
 * the options). */
typedef struct grp {
    int b;
    size_t ki, pi;
} grp;

/* The groups in the order they are tuned, into *out (malloc'd, ng of
 * them, the first ndense the dense ones). Dense: the probe group (first
 * key class and payload at n = 2^16, or the nearest bucket) first, so
 * exploration ranks the configurations where the device matters rather
 * than at 2^10, where launch overheads hide the differences; then every
 * group by bucket, lo to hi. Large: keys alone first at every large size
 * (what most requests are), then each payload kind. */
static int plan_groups(tctx *T, int lo, int hi, const int *large, int nlarge, grp **out,
                       size_t *ng, size_t *ndense, gs_err *err)
{
    const gs_tune_opts *o = T->o;
    size_t nkc = o->nkey_bits, npl = o->npayloads, n = 0;
    int probe = PROBE_LOG2 < lo ? lo : PROBE_LOG2 > hi ? hi : PROBE_LOG2;
    T->probe_b = probe;
    grp *gs = malloc(T->groups_total * sizeof *gs);
    if (!gs)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    gs[n++] = (grp){ probe, 0, 0 };
    for (int b = lo; b <= hi; b++)
        for (size_t ki = 0; ki < nkc; ki++)
            for (size_t pi = 0; pi < npl; pi++)
                if (b != probe || ki || pi)
                    gs[n++] = (grp){ b, ki, pi };
    *ndense = n;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t pi = 0; pi < npl; pi++) {
            if ((o->payloads[pi] == GS_PL_NONE) != !pass)
                continue;
            for (int l = 0; l < nlarge; l++)
                for (size_t ki = 0; ki < nkc; ki++)
                    gs[n++] = (grp){ large[l], ki, pi };
        }
    *out = gs;
    *ng = n;
    return 0;
}

/* The dense groups gs[0, ndense) (buckets from lo), each an equal share of
 * what is left until dense_dl, each algorithm in it an equal share of the
 * group's remainder; stopped before a bucket whose cost, grown from the
 * last one's, would not fit. */
static int tune_dense(tctx *T, astate *A, size_t na, const grp *gs, size_t ndense, int lo,
                      double dense_dl, gs_err *err)
{
    const gs_tune_opts *o = T->o;
    gs_tune_devreport *R = T->rep;
    int rc = 0;
    for (size_t g = 0; g < ndense && !rc; g++) {
        int b = gs[g].b;
        double now = gs_now_s();
        if (g > 0 && b > lo && gs[g - 1].b != b && T->bucket_cost[b - 1] > 0 &&
            now + BUCKET_GROWTH * T->bucket_cost[b - 1] > dense_dl) {
            GS_DEBUG("%s: stopping the dense sizes at n = 2^%d: the next size would not fit "
                    "the remaining budget", T->dev->info.name, b - 1);
            R->budget_hit = 1;
            break;
        }
        unsigned left = (unsigned)(ndense - g);
        double gdl = now + (dense_dl - now) / (left ? left : 1);
        T->group_build_s = 0;
        for (size_t ai = 0; ai < na && !rc; ai++) {
            if (!A[ai].ok)
                continue;
            size_t aleft = 0;
            for (size_t j = ai; j < na; j++)
                aleft += A[j].ok;
            now = gs_now_s();
            /* builds paid from allowances move the group's end, not the
             * later algorithms' share */
            double adl = now + (gdl + T->group_build_s - now) / (double)aleft;
            rc = tune_algo_group(T, &A[ai], o->key_bits[gs[g].ki], o->payloads[gs[g].pi], b, 0,
                                 adl, err);
        }
        free_inputs(T);
        T->groups_done++;
        if (!rc && b > R->max_log2)
            R->max_log2 = b;
    }
    return rc;
}

static int tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                       double deadline, gs_tune_report *rep, gs_err *err)
{
    gs_tune_devreport *R = NULL;
    int rc = report_add(rep, dev, &R, err);
    if (rc)
        return rc;
    tctx T;
    ctx_init(&T, db, dev, pc, o, R, deadline);
    R->budget_s = T.budget;

    if ((rc = gs_dev_open(dev, err)) != 0)
        return gs_err_prefix(err, "device %d (%s): ", dev->index, dev->info.name);
    if ((rc = gs_db_device_id(db, &dev->info, 1, &T.dev_id, err)) != 0 ||
        (rc = gs_kern_code_id(T.code_id, err)) != 0)
        return rc;
    R->device_id = T.dev_id;

    astate *A = NULL;
    size_t na = 0;
    if ((rc = init_algos(&T, &A, &na, err)) != 0)
        return rc;
    int lo = o->min_log2 > 0 ? o->min_log2 : GS_TUNE_MIN_LOG2;
    T.probe_ms = -1;
    T.probe_b = PROBE_LOG2 < lo ? lo : PROBE_LOG2 > o->max_log2 ? o->max_log2 : PROBE_LOG2;
    if (T.probe_b < lo)
        T.probe_b = lo;
    /* outside the budget: the clock starts after */
    if ((rc = probe_and_build(&T, A, na, err)) != 0) {
        free_algos(A, na);
        return rc;
    }
    size_t ntunable = 0;
    for (size_t i = 0; i < na; i++)
        ntunable += A[i].ok && A[i].sp.total > 1;
    T.explore_s = EXPLORE_FRAC * T.budget / (double)(ntunable ? ntunable : 1);
    int top = max_bucket(&T, A, na);    /* what memory holds, within the options */
    if (top < lo)
        top = lo;
    int hi = o->max_log2 < top ? o->max_log2 : top;     /* the dense buckets' end */
    if (hi < lo)
        hi = lo;
    /* Large n: every other bucket past the dense ones, and the largest. */
    int large[GS_TUNE_MAX_LOG2 + 1], nlarge = 0;
    for (int b = hi + 2; b <= top; b += 2)
        large[nlarge++] = b;
    if (top > hi && (!nlarge || large[nlarge - 1] != top))
        large[nlarge++] = top;
    size_t nkc = o->nkey_bits, npl = o->npayloads;
    T.groups_total = (unsigned)((size_t)(hi - lo + 1 + nlarge) * nkc * npl);
    R->max_log2 = lo - 1;
    GS_DEBUG("tuning %s (%s): %zu algorithm(s), n = 2^%d..2^%d, %zu key class(es) x %zu "
             "payload(s), budget %.0f s", dev->info.name, dev->info.platform, na, lo, hi, nkc,
             npl, T.budget);
    if (nlarge)
        GS_DEBUG("%s: then every other size up to 2^%d (what memory holds), defaults and "
                "earlier winners only, with %.0f%% of the budget kept for them",
                dev->info.name, top, 100 * LARGE_FRAC);

    grp *gs = NULL;
    size_t ng = 0, ndense = 0;
    if ((rc = plan_groups(&T, lo, hi, large, nlarge, &gs, &ng, &ndense, err)) != 0) {
        free_algos(A, na);
        return rc;
    }
    double dense_dl = nlarge ? T.start + (1 - LARGE_FRAC) * T.budget : T.deadline;
    T.phase = "dense sizes";
    rc = tune_dense(&T, A, na, gs, ndense, lo, dense_dl, err);
    T.phase = "large sizes";
    for (size_t g = ndense; g < ng && !rc; g++) {
        double now = gs_now_s();
        rc = tune_large_group(&T, A, na, o->key_bits[gs[g].ki], o->payloads[gs[g].pi], gs[g].b,
                              now + (T.deadline - now) / (double)(ng - g), err);
    }
    if (!rc)
        rc = spend_leftover(&T, err);
    free(gs);
    free(T.spread);
    gs_tune_winners_sort(R);
    free_inputs(&T);
    if (!rc)
        rc = gs_tune_plan_write(db, T.dev_id, R, err);
    free_algos(A, na);
    R->elapsed_s = gs_now_s() - T.start;
    GS_DEBUG("%s: %lu trial(s) measured, %lu reused, %lu invalid, in %.1f s%s", dev->info.name,
            R->measured, R->reused, R->invalid, R->elapsed_s,
            rc ? " (stopped by an error)" : R->budget_hit ? " (budget used up)" : "");
    return rc;
}

int gs_tune_all(gs_db *db, gs_dev *devs, size_t ndev, gs_pcache *pc, const gs_tune_opts *o,
                gs_tune_report *rep, gs_err *err)
{
    double t0 = gs_now_s(), end = t0 + o->budget_s;
    int first = 0;
    for (size_t i = 0; i < ndev; i++) {
        double now = gs_now_s();
        double dl = now + (end - now) / (double)(ndev - i);
        gs_err e;
        gs_err_clear(&e);
        int rc = gs_tune_device(db, &devs[i], pc, o, dl, rep, &e);
        if (rep->ndevs)
            end += rep->devs[rep->ndevs - 1].prebuild_s +   /* builds are not the budget's */
                   rep->devs[rep->ndevs - 1].probe_s;
        if (rc) {
            GS_ERROR("tuning device %zu (%s) failed: %s", i, devs[i].info.name, e.msg);
            if (!first) {
                first = rc;
                *err = e;
            }
        }
    }
    rep->elapsed_s = gs_now_s() - t0;
    return first;
}

int gs_tune_measure_all(gs_db *db, gs_dev *dev, gs_pcache *pc, int64_t dev_id,
                        const char *code_id, const gs_algo *a, const gs_tune_space *sp,
                        size_t n, const gs_tune_opts *o, double deadline, double *ms,
                        int *valid, uint64_t *measured, gs_tune_devreport *R, gs_err *err)
{
    tctx T;
    ctx_init(&T, db, dev, pc, o, R, deadline);
    T.dev_id = dev_id;
    snprintf(T.code_id, sizeof T.code_id, "%s", code_id);
    astate A;
    memset(&A, 0, sizeof A);
    A.a = a;
    A.sp = *sp;
    /* Each configuration its own group-free trial (first = 1: only the
     * overall budget stops it). */
    gctx G = { .T = &T, .A = &A, .kc = 32, .pl = GS_PL_NONE, .bucket = gs_db_bucket(n), .n = n,
               .algo_deadline = deadline, .best_ms = -1 };
    int rc = 0;
    *measured = 0;
    for (uint64_t c = 0; c < sp->total && !rc; c++) {
        rc = measure(&G, GS_TUNE_DIST_RANDOM, c, 1, &ms[c], &valid[c], err);
        if (!rc)
            (*measured)++;
    }
    free(A.seen);
    free_inputs(&T);
    return rc;
}
