/* Implementation of the tuner (see gs_tune.h and docs/TUNING.md): parameter
 * spaces and the sampled/exhaustive search core, trial inputs with their
 * output checks, measuring one configuration (reusing a recorded trial when
 * the database has one), the per-device loop over (bucket, key class,
 * payload) groups under a time budget, the winners, the plan, the report,
 * and the sampled-versus-exhaustive comparison.
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
 * flight may overrun it). */
#include "config.h"
#include "gs_tune.h"
#include "gs_kern.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_err.h"
#include "gs_log.h"
#include "gs_grow.h"
#include "gs_time.h"

/* Share of a device's budget that program builds may use up front. */
#define EXPLORE_FRAC 0.5
/* Estimated cost growth from one size bucket to the next (n doubles). */
#define BUCKET_GROWTH 2.2
/* A trial whose first timed run took longer than this uses at most 3 reps. */
#define SLOW_RUN_MS 250.0
#define REASON_MAX 1000
/* Hill climbs per search, from the best points found before climbing. */
#define CLIMB_STARTS 3
/* The group searched first, where the pool of configurations is ranked. */
#define PROBE_LOG2 16
/* Largest space searched exhaustively (candidate list per group). */
#define EXHAUSTIVE_MAX 100000

enum { DIST_RANDOM = 0, DIST_SORTED, DIST_REVERSED, DIST_FEW16, DIST_COUNT };
static const char *const dist_names[DIST_COUNT] = { "random", "sorted", "reversed", "few16" };
/* The end-to-end twin of a device algorithm's random-key trial: the same
 * runs' wall time (upload + kernels + download), which the plan compares
 * with the host sort's wall time. */
static const char DIST_E2E[] = GS_DB_DIST_E2E;

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
    *s += UINT64_C(0x9E3779B97F4A7C15);
    return mix64(*s);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    h ^= UINT64_C(0xCBF29CE484222325);
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001B3);
    return mix64(h);
}

/* ---- parameter spaces ---- */

/* Values that `spec` allows for `name`: 0 and *found = 0 when it does not
 * name it; GS_EINVAL on bad syntax. */
static int restrict_lookup(const char *spec, const char *name, long *vals, size_t cap,
                           size_t *nvals, int *found, gs_err *err)
{
    *found = 0;
    *nvals = 0;
    const char *p = spec;
    while (p && *p) {
        const char *eq = strchr(p, '=');
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end || eq == p)
            return gs_err_set(err, GS_EINVAL, "--restrict \"%s\": expected NAME=V[:V...] "
                              "items separated by ','", spec);
        int match = (size_t)(eq - p) == strlen(name) && !strncmp(p, name, (size_t)(eq - p));
        const char *v = eq + 1;
        size_t k = 0;
        while (v < end) {
            char *e;
            long x = strtol(v, &e, 10);
            if (e == v || (e < end && *e != ':'))
                return gs_err_set(err, GS_EINVAL, "--restrict \"%s\": '%.*s' needs integer "
                                  "values separated by ':'", spec, (int)(end - p), p);
            if (match && k < cap)
                vals[k++] = x;
            v = e < end ? e + 1 : e;
        }
        if (match) {
            *found = 1;
            *nvals = k;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

int gs_tune_restrict_check(const char *spec, gs_err *err)
{
    long v[1];
    size_t n;
    int found;
    if (!spec || !*spec)
        return gs_err_set(err, GS_EINVAL, "--restrict: empty specification");
    return restrict_lookup(spec, "", v, 1, &n, &found, err);
}

int gs_tune_space_init(gs_tune_space *s, const gs_algo *a, const gs_dev_info *info,
                       const char *restrict_spec, gs_err *err)
{
    memset(s, 0, sizeof *s);
    s->total = 1;
    if (a->nparams > GS_MAX_PARAMS)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: %zu parameters, the tuner handles %d",
                          a->name, a->nparams, GS_MAX_PARAMS);
    for (size_t i = 0; i < a->nparams; i++) {
        const gs_param_def *d = &a->params[i];
        long buf[1024], keep[256];
        size_t n = d->values ? d->values(info, buf, sizeof buf / sizeof buf[0]) : 0;
        size_t nkeep = 0;
        int found = 0;
        if (restrict_spec) {
            int rc = restrict_lookup(restrict_spec, d->name, keep, 256, &nkeep, &found, err);
            if (rc)
                return rc;
        }
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            int ok = !found;
            for (size_t k = 0; found && k < nkeep; k++)
                ok |= keep[k] == buf[j];
            if (ok)
                buf[m++] = buf[j];
        }
        if (m == 0)
            return gs_err_set(err, GS_EUNSUPPORTED, "%s: parameter %s has no legal value on "
                              "this device%s", a->name, d->name,
                              found ? " among the --restrict values" : "");
        /* Keep an evenly spread subset of a very long list, ends included. */
        size_t nv = m < GS_TUNE_MAX_VALUES ? m : GS_TUNE_MAX_VALUES;
        for (size_t j = 0; j < nv; j++)
            s->val[i][j] = nv == m ? buf[j] : buf[j * (m - 1) / (nv - 1)];
        s->nv[i] = nv;
        s->name[i] = d->name;
        s->total *= nv;
    }
    s->np = a->nparams;
    return 0;
}

static void code_split(const gs_tune_space *s, uint64_t code, size_t *idx)
{
    for (size_t i = 0; i < s->np; i++) {
        idx[i] = (size_t)(code % s->nv[i]);
        code /= s->nv[i];
    }
}

static uint64_t code_join(const gs_tune_space *s, const size_t *idx)
{
    uint64_t c = 0;
    for (size_t i = s->np; i-- > 0;)
        c = c * s->nv[i] + idx[i];
    return c;
}

void gs_tune_space_params(const gs_tune_space *s, uint64_t code, gs_params *out)
{
    size_t idx[GS_MAX_PARAMS];
    code_split(s, code, idx);
    gs_params_clear(out);
    for (size_t i = 0; i < s->np; i++)
        gs_params_set(out, s->name[i], s->val[i][idx[i]]);
}

int gs_tune_space_code(const gs_tune_space *s, const gs_params *p, uint64_t *code)
{
    size_t idx[GS_MAX_PARAMS];
    if (p->count != (int)s->np)
        return GS_ENOTFOUND;
    for (size_t i = 0; i < s->np; i++) {
        if (!gs_params_has(p, s->name[i]))
            return GS_ENOTFOUND;
        long v = gs_params_get(p, s->name[i], 0);
        size_t j = 0;
        while (j < s->nv[i] && s->val[i][j] != v)
            j++;
        if (j == s->nv[i])
            return GS_ENOTFOUND;
        idx[i] = j;
    }
    *code = code_join(s, idx);
    return 0;
}

/* ---- sampler ---- */

#define PERM_MAX 65536

int gs_tune_sampler_init(gs_tune_sampler *s, uint64_t total, uint64_t seed, gs_err *err)
{
    memset(s, 0, sizeof *s);
    s->total = total;
    s->rng = mix64(seed ^ UINT64_C(0x5EED5EED5EED5EED));
    if (total <= PERM_MAX) {
        s->perm = malloc((size_t)(total ? total : 1) * sizeof *s->perm);
        if (!s->perm)
            return gs_err_set(err, GS_ENOMEM, "out of memory");
        for (uint64_t i = 0; i < total; i++)
            s->perm[i] = i;
        for (uint64_t i = total; i > 1; i--) {   /* Fisher-Yates */
            uint64_t j = rng_next(&s->rng) % i, t = s->perm[i - 1];
            s->perm[i - 1] = s->perm[j];
            s->perm[j] = t;
        }
    }
    return 0;
}

int gs_tune_sampler_next(gs_tune_sampler *s, uint64_t *code)
{
    if (s->perm) {
        if (s->next >= s->total)
            return GS_TUNE_STOP;
        *code = s->perm[s->next++];
        return 0;
    }
    if (s->ndrawn >= s->total)
        return GS_TUNE_STOP;
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t c = rng_next(&s->rng) % s->total;
        size_t i = 0;
        while (i < s->ndrawn && s->drawn[i] != c)
            i++;
        if (i < s->ndrawn)
            continue;
        if (gs_grow(&s->drawn, &s->cap, s->ndrawn, sizeof *s->drawn, 64))
            return GS_TUNE_STOP;
        s->drawn[s->ndrawn++] = c;
        *code = c;
        return 0;
    }
    return GS_TUNE_STOP;
}

/* Hand the last code back (its evaluation was not started). */
static void sampler_unget(gs_tune_sampler *s)
{
    if (s->perm && s->next > 0)
        s->next--;
    else if (!s->perm && s->ndrawn > 0)
        s->ndrawn--;   /* may be drawn again later, at another position */
}

void gs_tune_sampler_free(gs_tune_sampler *s)
{
    free(s->perm);
    free(s->drawn);
    memset(s, 0, sizeof *s);
}

/* ---- search ---- */

static long sr_find(const gs_tune_search *sr, uint64_t code)
{
    for (size_t i = 0; i < sr->nev; i++)
        if (sr->ev[i].code == code)
            return (long)i;
    return -1;
}

/* 0 (evaluated now or before), GS_TUNE_STOP, or an error. */
static int sr_eval(gs_tune_search *sr, uint64_t code, size_t max_trials, gs_tune_eval_fn eval,
                   void *ud, gs_err *err)
{
    if (sr->stopped)
        return GS_TUNE_STOP;
    if (sr_find(sr, code) >= 0)
        return 0;
    if (max_trials && sr->nev >= max_trials) {
        sr->stopped = 1;
        return GS_TUNE_STOP;
    }
    if (gs_grow(&sr->ev, &sr->cap, sr->nev, sizeof *sr->ev, 32))
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    double ms = 0;
    int valid = 0;
    int rc = eval(ud, code, &ms, &valid, err);
    if (rc == GS_TUNE_STOP) {
        sr->stopped = 1;
        return GS_TUNE_STOP;
    }
    if (rc < 0)
        return rc;
    sr->ev[sr->nev] = (gs_tune_eval){ .code = code, .ms = ms, .valid = valid };
    if (valid && (sr->best < 0 || ms < sr->ev[sr->best].ms))
        sr->best = (long)sr->nev;
    sr->nev++;
    return 0;
}

/* Move from `cur` to its best neighbour while that is faster, at most
 * `rounds` moves. */
static int climb(gs_tune_search *sr, const gs_tune_space *s, uint64_t cur, int rounds,
                 size_t max_trials, gs_tune_eval_fn eval, void *ud, gs_err *err)
{
    int rc = 0;
    for (int round = 0; !rc && round < rounds; round++) {
        long ci = sr_find(sr, cur), bi = ci;
        size_t idx[GS_MAX_PARAMS];
        code_split(s, cur, idx);
        for (size_t p = 0; p < s->np && !rc; p++)
            for (int d = -1; d <= 1 && !rc; d += 2) {
                /* An invalid neighbour is stepped over once: a wall of
                 * failing configurations must not hide a better one behind. */
                for (size_t step = 1; step <= 2 && !rc; step++) {
                    if ((d < 0 && idx[p] < step) || (d > 0 && idx[p] + step >= s->nv[p]))
                        break;
                    size_t keep = idx[p];
                    idx[p] = d < 0 ? keep - step : keep + step;
                    uint64_t c = code_join(s, idx);
                    idx[p] = keep;
                    rc = sr_eval(sr, c, max_trials, eval, ud, err);
                    long at = rc ? -1 : sr_find(sr, c);
                    if (at >= 0 && sr->ev[at].valid && (bi < 0 || sr->ev[at].ms < sr->ev[bi].ms))
                        bi = at;
                    if (at < 0 || sr->ev[at].valid)
                        break;
                }
            }
        if (rc || bi == ci)
            break;              /* a local optimum */
        cur = sr->ev[bi].code;
    }
    return rc;
}

int gs_tune_search_run(gs_tune_search *sr, const gs_tune_space *s, const uint64_t *cands,
                       size_t ncands, gs_tune_sampler *smp, size_t *quota, int refine_rounds,
                       size_t max_trials, gs_tune_eval_fn eval, void *ud, gs_err *err)
{
    int rc = 0;
    if (sr->nev == 0)
        sr->best = -1;
    for (size_t i = 0; i < ncands && !rc; i++)
        if (cands[i] < s->total)
            rc = sr_eval(sr, cands[i], max_trials, eval, ud, err);
    while (!rc && smp && quota && *quota > 0) {
        uint64_t c;
        if (gs_tune_sampler_next(smp, &c))
            break;
        if (sr_find(sr, c) >= 0)
            continue;           /* already a candidate: costs nothing */
        rc = sr_eval(sr, c, max_trials, eval, ud, err);
        if (rc == GS_TUNE_STOP)
            sampler_unget(smp);
        else if (!rc)
            (*quota)--;
    }
    /* Hill climbing from the best few points so far (one start can sit
     * behind failing configurations): each parameter one step to either
     * side, moving to the best neighbour while that improves. */
    uint64_t starts[CLIMB_STARTS];
    size_t nstarts = 0;
    for (size_t k = 0; k < CLIMB_STARTS; k++) {
        long pick = -1;
        for (size_t i = 0; i < sr->nev; i++) {
            int used = 0;
            for (size_t j = 0; j < nstarts; j++)
                used |= starts[j] == sr->ev[i].code;
            if (sr->ev[i].valid && !used && (pick < 0 || sr->ev[i].ms < sr->ev[pick].ms))
                pick = (long)i;
        }
        if (pick < 0)
            break;
        starts[nstarts++] = sr->ev[pick].code;
    }
    for (size_t k = 0; k < nstarts && !rc; k++)
        rc = climb(sr, s, starts[k], refine_rounds, max_trials, eval, ud, err);
    return rc < 0 ? rc : 0;
}

void gs_tune_search_free(gs_tune_search *sr)
{
    free(sr->ev);
    memset(sr, 0, sizeof *sr);
    sr->best = -1;
}

int gs_tune_plan_pick(const gs_tune_cand *c, size_t n, int stable)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (c[i].ms < 0 || (stable && !c[i].stable))
            continue;
        if (best < 0 || c[i].ms < c[best].ms)
            best = (int)i;
    }
    return best;
}

/* ---- options ---- */

double gs_tune_payload_budget(gs_payload p)
{
    /* none and u32 always; the wider payloads and the argsort indices only
     * when the budget leaves time for their groups */
    switch (p) {
    case GS_PL_NONE:
    case GS_PL_U32:
        return 0;
    case GS_PL_U64:
        return 900;
    case GS_PL_IDX32:
        return 1800;
    default:
        return -1;
    }
}

void gs_tune_opts_init(gs_tune_opts *o, double budget_s)
{
    memset(o, 0, sizeof *o);
    if (!(budget_s > 0))
        budget_s = GS_TUNE_DEFAULT_BUDGET;
    o->budget_s = budget_s;
    o->key_bits[0] = 32;
    o->key_bits[1] = 64;
    o->nkey_bits = 2;
    for (int p = 0; p < GS_PL_COUNT; p++) {
        double need = gs_tune_payload_budget((gs_payload)p);
        if (need >= 0 && budget_s >= need)
            o->payloads[o->npayloads++] = (gs_payload)p;
    }
    o->min_log2 = GS_TUNE_MIN_LOG2;
    /* 2^20 for the default budget, two more buckets per 4x the budget;
     * at least 2^16, so even a quick run sees the host/device crossover. */
    long mx = lround(20.0 + 2.0 * log2(budget_s / 300.0));
    o->max_log2 = (int)(mx < 16 ? 16 : mx > GS_TUNE_MAX_LOG2 ? GS_TUNE_MAX_LOG2 : mx);
    o->reps = budget_s < 60 ? 3 : 5;
    /* Under a minute there is no time to explore on a device whose builds
     * take seconds (PoCL: up to a minute each): measure the defaults and
     * earlier winners only, enough for a plan. */
    double smp = budget_s / 10.0;
    o->samples = budget_s < 60 ? 0 : smp > 256 ? 256 : (size_t)smp;
    o->strategy = GS_TUNE_AUTO;
    o->refine_rounds = budget_s < 60 ? 0 : 8;
    o->extra_dists = budget_s >= 60;
    o->seed = 1;
}

/* ---- trial inputs and output checks ---- */

typedef struct tinput {
    gs_dtype dt;
    gs_payload pl;
    size_t n, ks, vs;
    int dist;
    void *in_k, *in_v;      /* input (in_v: u32/u64 payloads only) */
    void *wk, *wv;          /* what the algorithm sorts */
    uint64_t h1, h2;        /* multiset hash of the input keys */
    uint8_t *seen;          /* bitmap for the permutation check */
} tinput;

static void tinput_free(tinput *t)
{
    free(t->in_k);
    free(t->in_v);
    free(t->wk);
    free(t->wv);
    free(t->seen);
    memset(t, 0, sizeof *t);
}

static uint64_t key_at(const tinput *t, const void *k, size_t i)
{
    return t->ks == 4 ? ((const uint32_t *)k)[i] : ((const uint64_t *)k)[i];
}

static void key_hash(const tinput *t, const void *k, uint64_t *h1, uint64_t *h2)
{
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t x = key_at(t, k, i);
        a += mix64(x);
        b += mix64(x ^ UINT64_C(0xA5A5A5A5DEADBEEF));
    }
    *h1 = a;
    *h2 = b;
}

/* Keys of one distribution, deterministic in (key class, payload, n, dist),
 * so a resumed run measures on the same data. u32/u64 values carry their
 * input index (u64: in the low half, random bits above), which makes the
 * permutation and stability checks exact. */
static int tinput_make(tinput *t, gs_dtype dt, gs_payload pl, size_t n, int dist, gs_err *err)
{
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->pl = pl;
    t->n = n;
    t->dist = dist;
    t->ks = gs_dtype_size(dt);
    t->vs = gs_payload_size(pl);
    t->in_k = malloc(n * t->ks);
    t->wk = malloc(n * t->ks);
    t->seen = malloc(n / 8 + 1);
    if (t->vs) {
        t->wv = malloc(n * t->vs);
        if (pl == GS_PL_U32 || pl == GS_PL_U64)
            t->in_v = malloc(n * t->vs);
    }
    if (!t->in_k || !t->wk || !t->seen || (t->vs && !t->wv) ||
        ((pl == GS_PL_U32 || pl == GS_PL_U64) && !t->in_v)) {
        tinput_free(t);
        return gs_err_set(err, GS_ENOMEM, "out of memory for a %zu-element trial input", n);
    }
    uint64_t seed = mix64(((uint64_t)dt << 40) ^ ((uint64_t)pl << 32) ^ n ^ ((uint64_t)dist << 56));
    uint64_t few[16];
    for (int i = 0; i < 16; i++)
        few[i] = mix64(seed + 1000 + (uint64_t)i);
    uint64_t kmax = t->ks == 4 ? UINT32_MAX : UINT64_MAX;
    uint64_t step = kmax / (n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t x;
        switch (dist) {
        case DIST_SORTED: x = (uint64_t)i * step; break;
        case DIST_REVERSED: x = (uint64_t)(n - 1 - i) * step; break;
        case DIST_FEW16: x = few[mix64(seed ^ i) & 15]; break;
        default: x = mix64(seed + i); break;
        }
        if (t->ks == 4)
            ((uint32_t *)t->in_k)[i] = (uint32_t)x;
        else
            ((uint64_t *)t->in_k)[i] = x;
        if (pl == GS_PL_U32)
            ((uint32_t *)t->in_v)[i] = (uint32_t)i;
        else if (pl == GS_PL_U64)
            ((uint64_t *)t->in_v)[i] = (mix64(i) << 32) | (uint64_t)i;
    }
    key_hash(t, t->in_k, &t->h1, &t->h2);
    return 0;
}

static void tinput_reset(tinput *t)
{
    memcpy(t->wk, t->in_k, t->n * t->ks);
    if (t->in_v)
        memcpy(t->wv, t->in_v, t->n * t->vs);
    else if (t->wv)
        memset(t->wv, 0xff, t->n * t->vs);   /* argsort output: stale indices must not pass */
}

/* Sorted ascending (unsigned order is u32/u64's total order) and a
 * permutation of the input: keys-only by a multiset hash, with a payload
 * exactly (every input index once, each key still paired with its value);
 * stable algorithms must also keep equal keys in input order. */
static int tinput_verify(tinput *t, int stable, char *why, size_t len)
{
    const size_t n = t->n;
    for (size_t i = 1; i < n; i++)
        if (key_at(t, t->wk, i - 1) > key_at(t, t->wk, i)) {
            snprintf(why, len, "wrong result: not sorted at index %zu", i);
            return 0;
        }
    if (!t->vs) {
        uint64_t a, b;
        key_hash(t, t->wk, &a, &b);
        if (a != t->h1 || b != t->h2) {
            snprintf(why, len, "wrong result: the keys are not a permutation of the input");
            return 0;
        }
        return 1;
    }
    memset(t->seen, 0, n / 8 + 1);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = t->vs == 4 ? ((uint32_t *)t->wv)[i] : ((uint64_t *)t->wv)[i];
        uint64_t idx = t->pl == GS_PL_U64 ? (v & UINT32_MAX) : v;
        if (idx >= n) {
            snprintf(why, len, "wrong result: value at index %zu does not come from the input", i);
            return 0;
        }
        if (t->seen[idx / 8] & (1u << (idx % 8))) {
            snprintf(why, len, "wrong result: (key, value) pairs are not a permutation of the "
                     "input (input element %llu appears twice)", (unsigned long long)idx);
            return 0;
        }
        t->seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
        if (key_at(t, t->wk, i) != key_at(t, t->in_k, (size_t)idx) ||
            (t->in_v && v != (t->vs == 4 ? ((uint32_t *)t->in_v)[idx]
                                         : ((uint64_t *)t->in_v)[idx]))) {
            snprintf(why, len, "wrong result: key and value at index %zu are not an input pair", i);
            return 0;
        }
        if (stable && i > 0 && key_at(t, t->wk, i) == key_at(t, t->wk, i - 1) && idx < prev) {
            snprintf(why, len, "wrong result: not stable (equal keys reordered at index %zu)", i);
            return 0;
        }
        prev = idx;
    }
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- per-device state ---- */

typedef struct pool_ent {
    uint64_t code;
    double score;           /* time / group best where last measured */
} pool_ent;

typedef struct seen_ent {
    uint64_t code;
    int dt, pl;
} seen_ent;

typedef struct astate {
    const gs_algo *a;
    int ok;                 /* space usable */
    gs_tune_space sp;
    gs_tune_sampler smp;
    size_t quota;           /* new configurations still to sample */
    int exhaustive;         /* every group evaluates the whole space */
    int has_defaults;
    uint64_t defaults_code;
    pool_ent *pool;
    size_t npool, poolcap;
    seen_ent *seen;         /* (configuration, variant) run in this process */
    size_t nseen, seencap;
    double build_est;       /* s: estimated build cost of an unseen configuration */
    double build_spent;     /* s of builds charged to its exploration allowance */
    double wall_ms[GS_TUNE_MAX_LOG2 + 2];  /* last median wall time per bucket */
    int has_prev[2][GS_PL_COUNT];
    uint64_t prev[2][GS_PL_COUNT];         /* previous bucket's winner */
} astate;

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
    tinput in[DIST_COUNT];  /* this group's inputs, made on first use */
} tctx;

/* One (algorithm, group) search: what the eval callback needs. */
typedef struct gctx {
    tctx *T;
    astate *A;
    int kc;
    gs_payload pl;
    int bucket;
    size_t n;
    double algo_deadline;
    unsigned trials, planned;
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

static gs_dtype dtype_of(int kc)
{
    return kc == 64 ? GS_DT_U64 : GS_DT_U32;
}

static void params_text(const gs_params *p, char *buf, size_t len)
{
    if (gs_params_format(p, buf, len) || !buf[0])
        snprintf(buf, len, "%s", p->count ? "?" : "-");
}

/* Result of running one configuration. */
typedef struct tresult {
    int valid;
    char reason[REASON_MAX];
    double med, mn, mx;     /* timing used to rank (kernel, or wall) */
    double wmed, wmn, wmx;  /* wall time, transfers included */
    int reps;
    double warm_wall;       /* ms, the warm-up (includes any build) */
} tresult;

static void set_reason(tresult *r, const char *prefix, const gs_err *e)
{
    snprintf(r->reason, sizeof r->reason, "%s%.*s", prefix, REASON_MAX - 100,
             e->msg[0] ? e->msg : gs_strerror(e->code));
}

/* Warm-up, then reps timed runs; every output is checked. The verdict
 * and the times go into r. */
static void run_trial(tctx *T, const gs_algo *a, tinput *in, const gs_params *p, tresult *r)
{
    memset(r, 0, sizeof *r);
    gs_sort_req req = { .dtype = in->dt, .payload = in->pl, .n = in->n, .keys = in->wk,
                        .values = in->wv };
    gs_dev *dev = a->uses_device ? T->dev : NULL;
    gs_sort_ctx ctx = { .dev = dev, .pc = T->pc };
    gs_err e;
    gs_err_clear(&e);
    if (a->check && a->check(dev, &req, p, &e) < 0) {
        set_reason(r, "refused by check(): ", &e);
        return;
    }
    int reps = T->o->reps > 0 ? T->o->reps : 5;
    int use_kernel = a->uses_device && T->dev->info.profiling;
    double km[64], wm[64];
    if (reps > 64)
        reps = 64;
    for (int i = 0; i <= reps; i++) {
        gs_sort_stats st;
        tinput_reset(in);
        gs_err_clear(&e);
        if (gs_sort_run(a, &ctx, &req, p, &st, &e) < 0) {
            set_reason(r, i ? "run failed after a good warm-up: " : "run failed: ", &e);
            return;
        }
        if (!tinput_verify(in, a->stable, r->reason, sizeof r->reason))
            return;
        if (i == 0) {
            r->warm_wall = st.wall_ms;  /* includes any build */
            continue;
        }
        km[i - 1] = use_kernel ? st.kernel_ms : st.wall_ms;
        wm[i - 1] = st.wall_ms;
        if (i == 1 && st.wall_ms > SLOW_RUN_MS && reps > 3)
            reps = 3;
    }
    qsort(km, (size_t)reps, sizeof km[0], cmp_double);
    qsort(wm, (size_t)reps, sizeof wm[0], cmp_double);
    r->valid = 1;
    r->reps = reps;
    r->med = reps % 2 ? km[reps / 2] : (km[reps / 2 - 1] + km[reps / 2]) / 2;
    r->mn = km[0];
    r->mx = km[reps - 1];
    r->wmed = reps % 2 ? wm[reps / 2] : (wm[reps / 2 - 1] + wm[reps / 2]) / 2;
    r->wmn = wm[0];
    r->wmx = wm[reps - 1];
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
    };
    T->o->progress(&p, T->o->progress_ud);
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
    if (first)
        return 0;
    int reps = T->o->reps > 0 ? T->o->reps : 5;
    double w = A->wall_ms[G->bucket];
    if (w <= 0 && G->bucket > 0 && A->wall_ms[G->bucket - 1] > 0)
        w = A->wall_ms[G->bucket - 1] * BUCKET_GROWTH;
    double run_s = (reps + 1) * w / 1000.0;
    double build_s = seen_has(A, code, dtype_of(G->kc), G->pl) ? 0 : A->build_est;
    if (now + run_s + build_s > T->deadline) {
        T->rep->budget_hit = 1;
        return GS_TUNE_STOP;
    }
    int explore = build_s > 0 && A->build_spent + build_s <= T->explore_s;
    double charged = run_s + (explore ? 0 : build_s);
    return now - G->build_s + charged <= G->algo_deadline ? 0 : GS_TUNE_STOP;
}

/* Write one trial (and, for a valid one of a device algorithm, its
 * end-to-end twin) in one transaction. */
static int record(tctx *T, const gs_db_trial *key, const tresult *r, int twin, gs_err *err)
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

/* Measure (or reuse) one configuration on one distribution. */
static int measure(gctx *G, int dist, uint64_t code, int first, double *ms, int *valid,
                   gs_err *err)
{
    tctx *T = G->T;
    astate *A = G->A;
    const gs_algo *a = A->a;
    gs_params p;
    char json[512];
    gs_tune_space_params(&A->sp, code, &p);
    int rc = gs_db_params_to_json(&p, json, sizeof json, err);
    if (rc)
        return rc;
    gs_db_trial key = { .device_id = T->dev_id, .algorithm = a->name, .key_bits = G->kc,
                        .payload = gs_payload_name(G->pl), .n = G->n,
                        .distribution = dist_names[dist], .params = json,
                        .code_id = T->code_id };
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
    tinput *in = &T->in[dist];
    if (!in->in_k && (rc = tinput_make(in, dtype_of(G->kc), G->pl, G->n, dist, err)) != 0)
        return rc;
    int dt = dtype_of(G->kc), is_new = !seen_has(A, code, dt, G->pl);
    tresult r;
    run_trial(T, a, in, &p, &r);
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
        if (G->trials == 0 && dist == DIST_RANDOM)
            T->bucket_cost[G->bucket] += (r.reps + 1) * r.wmed / 1000.0;
    }
    rc = record(T, &key, &r, a->uses_device && dist == DIST_RANDOM && r.valid, err);
    if (rc)
        return rc;
    T->rep->measured++;
    if (!r.valid) {
        T->rep->invalid++;
        char pt[256];
        params_text(&p, pt, sizeof pt);
        GS_DEBUG("%s %s n=%zu %s: invalid: %s", a->name, pt, G->n, dist_names[dist], r.reason);
    }
    *ms = r.med;
    *valid = r.valid;
    return 0;
}

static int eval_cb(void *ud, uint64_t code, double *ms, int *valid, gs_err *err)
{
    gctx *G = ud;
    int rc = measure(G, DIST_RANDOM, code, G->trials == 0, ms, valid, err);
    if (rc)
        return rc;
    G->trials++;
    if (*valid && (G->best_ms < 0 || *ms < G->best_ms)) {
        gs_params p;
        G->best_ms = *ms;
        gs_tune_space_params(&G->A->sp, code, &p);
        params_text(&p, G->best_params, sizeof G->best_params);
    }
    report_progress(G, 0);
    return 0;
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

static int add_winner(gs_tune_devreport *R, const gs_tune_winner *w)
{
    if (gs_grow(&R->winners, &R->wcap, R->nwinners, sizeof *R->winners, 64))
        return GS_ENOMEM;
    R->winners[R->nwinners++] = *w;
    return 0;
}

static int add_planrow(gs_tune_devreport *R, const gs_tune_planrow *row)
{
    if (gs_grow(&R->plan, &R->pcap, R->nplan, sizeof *R->plan, 64))
        return GS_ENOMEM;
    R->plan[R->nplan++] = *row;
    return 0;
}

/* Search one algorithm in one group, write its winner, time the winner on
 * the other distributions when there is time. */
static int tune_algo_group(tctx *T, astate *A, int kc, gs_payload pl, int bucket,
                           double algo_deadline, gs_err *err)
{
    const gs_algo *a = A->a;
    const gs_tune_opts *o = T->o;
    int ki = kc == 64;
    gctx G = { .T = T, .A = A, .kc = kc, .pl = pl, .bucket = bucket,
               .n = (size_t)1 << bucket, .algo_deadline = algo_deadline, .best_ms = -1 };
    snprintf(G.best_params, sizeof G.best_params, "-");

    /* Candidates: the recorded winner (a rerun never does worse), the
     * previous bucket's winner, the defaults, then every configuration this
     * run has found valid, most promising first. */
    size_t ncand = 0, cap = A->npool + 3 + (A->exhaustive ? (size_t)A->sp.total : 0);
    uint64_t *cand = malloc(cap * sizeof *cand);
    if (!cand)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    gs_db_choice ch;
    gs_err lerr;
    gs_params p;
    uint64_t c;
    if (gs_db_winner_get(T->db, T->dev_id, a->name, kc, gs_payload_name(pl), bucket, &ch,
                         &lerr) == 0 &&
        gs_db_params_from_json(ch.params, &p, &lerr) == 0 && gs_tune_space_code(&A->sp, &p, &c) == 0)
        cand[ncand++] = c;
    if (A->has_prev[ki][pl])
        cand[ncand++] = A->prev[ki][pl];
    if (A->has_defaults)
        cand[ncand++] = A->defaults_code;
    if (A->npool > 1)   /* an algorithm without parameters has no pool (NULL) */
        qsort(A->pool, A->npool, sizeof *A->pool, cmp_pool);
    for (size_t i = 0; i < A->npool; i++)
        cand[ncand++] = A->pool[i].code;
    for (uint64_t k = 0; A->exhaustive && k < A->sp.total; k++)
        cand[ncand++] = k;      /* the rest of the space (duplicates cost nothing) */
    G.planned = (unsigned)(A->exhaustive ? A->sp.total : ncand + A->quota);

    gs_tune_search sr;
    memset(&sr, 0, sizeof sr);
    int rc = gs_tune_search_run(&sr, &A->sp, cand, ncand, &A->smp, &A->quota, o->refine_rounds,
                                o->max_trials, eval_cb, &G, err);
    free(cand);
    if (rc) {
        gs_tune_search_free(&sr);
        return rc;
    }
    if (sr.best < 0) {
        /* Nothing valid (the reasons are in the trials): no winner. */
        if (sr.nev > 0)
            GS_DEBUG("%s: no valid configuration for %s keys, payload %s, n=2^%d", a->name,
                     gs_dtype_name(dtype_of(kc)), gs_payload_name(pl), bucket);
        pool_update(A, &sr);
        report_progress(&G, 1);
        gs_tune_search_free(&sr);
        return 0;
    }

    uint64_t bc = sr.ev[sr.best].code;
    double bms = sr.ev[sr.best].ms;
    A->prev[ki][pl] = bc;
    A->has_prev[ki][pl] = 1;
    pool_update(A, &sr);
    gs_tune_search_free(&sr);

    gs_tune_winner w = { .key_bits = kc, .payload = pl, .bucket = bucket, .median_ms = bms,
                         .e2e_ms = -1, .stable = a->stable };
    snprintf(w.algorithm, sizeof w.algorithm, "%s", a->name);
    gs_tune_space_params(&A->sp, bc, &p);
    if ((rc = gs_db_params_to_json(&p, w.params, sizeof w.params, err)) != 0)
        return rc;
    gs_db_trial key = { .device_id = T->dev_id, .algorithm = a->name, .key_bits = kc,
                        .payload = gs_payload_name(pl), .n = G.n, .distribution = "random",
                        .params = w.params, .code_id = T->code_id };
    int64_t tid = 0;
    double e2e = 0;
    int v = 0;
    if ((rc = gs_db_trial_lookup(T->db, &key, NULL, NULL, &tid, err)) != 0)
        return rc;
    if (!a->uses_device) {
        w.e2e_ms = bms;
    } else {
        key.distribution = DIST_E2E;
        if (gs_db_trial_lookup(T->db, &key, &e2e, &v, NULL, &lerr) == 0 && v)
            w.e2e_ms = e2e;
    }
    if ((rc = gs_db_begin(T->db, err)) != 0)
        return rc;
    rc = gs_db_winner_set(T->db, T->dev_id, a->name, kc, gs_payload_name(pl), bucket, w.params,
                          bms, tid, err);
    if (!rc)
        rc = gs_db_commit(T->db, err);
    else
        gs_db_rollback(T->db);
    if (rc)
        return rc;
    if (add_winner(T->rep, &w))
        return gs_err_set(err, GS_ENOMEM, "out of memory");

    /* The winner on the other distributions: informational trials. */
    for (int d = DIST_SORTED; o->extra_dists && d < DIST_COUNT; d++) {
        double ms;
        int valid;
        rc = measure(&G, d, bc, 0, &ms, &valid, err);
        if (rc == GS_TUNE_STOP)
            break;
        if (rc)
            return rc;
    }
    report_progress(&G, 1);
    return 0;
}

/* Report order: bucket, key class, payload, then algorithm (stable). */
static void sort_winners(gs_tune_devreport *R)
{
    for (size_t i = 1; i < R->nwinners; i++) {
        gs_tune_winner w = R->winners[i];
        size_t j = i;
        for (; j > 0; j--) {
            const gs_tune_winner *x = &R->winners[j - 1];
            long kx = ((long)x->bucket << 16) | ((long)x->key_bits << 8) | (long)x->payload;
            long kw = ((long)w.bucket << 16) | ((long)w.key_bits << 8) | (long)w.payload;
            if (kx <= kw)
                break;
            R->winners[j] = *x;
        }
        R->winners[j] = w;
    }
}

/* Largest bucket the device, the host memory and the options allow. */
static int max_bucket(const tctx *T, const astate *A, size_t na)
{
    int hi = T->o->max_log2 > GS_TUNE_MAX_LOG2 ? GS_TUNE_MAX_LOG2 : T->o->max_log2;
    size_t kmax = 4, vmax = 0;
    for (size_t i = 0; i < T->o->nkey_bits; i++)
        if (T->o->key_bits[i] == 64)
            kmax = 8;
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

static int write_plan(tctx *T, gs_err *err)
{
    gs_tune_devreport *R = T->rep;
    int rc = gs_db_begin(T->db, err);
    if (rc)
        return rc;
    gs_tune_cand *c = malloc((R->nwinners + 1) * sizeof *c);
    size_t *wi = malloc((R->nwinners + 1) * sizeof *wi);
    if (!c || !wi) {
        free(c);
        free(wi);
        gs_db_rollback(T->db);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < R->nwinners && !rc; i++) {
        const gs_tune_winner *w = &R->winners[i];
        size_t j = 0;   /* first winner of its (key class, payload, bucket) only */
        while (j < i && !(R->winners[j].key_bits == w->key_bits &&
                          R->winners[j].payload == w->payload && R->winners[j].bucket == w->bucket))
            j++;
        if (j < i)
            continue;
        size_t nc = 0;
        for (size_t k = i; k < R->nwinners; k++) {
            const gs_tune_winner *x = &R->winners[k];
            if (x->key_bits == w->key_bits && x->payload == w->payload && x->bucket == w->bucket) {
                c[nc] = (gs_tune_cand){ x->algorithm, x->stable, x->e2e_ms };
                wi[nc++] = k;
            }
        }
        for (int stable = 0; stable <= 1 && !rc; stable++) {
            int b = gs_tune_plan_pick(c, nc, stable);
            if (b < 0)
                continue;
            const gs_tune_winner *x = &R->winners[wi[b]];
            gs_tune_planrow row = { .key_bits = x->key_bits, .payload = x->payload,
                                    .stable = stable, .bucket = x->bucket, .ms = x->e2e_ms };
            snprintf(row.algorithm, sizeof row.algorithm, "%s", x->algorithm);
            snprintf(row.params, sizeof row.params, "%s", x->params);
            rc = gs_db_plan_set(T->db, T->dev_id, x->key_bits, gs_payload_name(x->payload), stable,
                                x->bucket, x->algorithm, x->params, x->e2e_ms, err);
            if (!rc && add_planrow(R, &row))
                rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        }
    }
    free(c);
    free(wi);
    if (!rc)
        rc = gs_db_commit(T->db, err);
    else
        gs_db_rollback(T->db);
    return rc;
}

static void free_inputs(tctx *T)
{
    for (int d = 0; d < DIST_COUNT; d++)
        tinput_free(&T->in[d]);
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
        if (gs_tune_space_init(&A[i].sp, a, info, o->restrict_spec, &e)) {
            GS_WARN("%s: not tuned on %s: %s", a->name, T->dev->info.name, e.msg);
            continue;
        }
        int rc = gs_tune_sampler_init(&A[i].smp, A[i].sp.total, hash_str(o->seed, a->name), err);
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
        if (a->defaults) {
            gs_params p;
            a->defaults(info, &p);
            A[i].has_defaults = gs_tune_space_code(&A[i].sp, &p, &A[i].defaults_code) == 0;
        }
        if (!A[i].has_defaults && A[i].sp.total == 1) {
            A[i].defaults_code = 0;     /* no parameters: the one point */
            A[i].has_defaults = 1;
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

static int tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                       double deadline, gs_tune_report *rep, gs_err *err);

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

static int tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                       double deadline, gs_tune_report *rep, gs_err *err)
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

    tctx T;
    memset(&T, 0, sizeof T);
    T.db = db;
    T.dev = dev;
    T.pc = pc;
    T.o = o;
    T.rep = R;
    T.start = gs_now_s();
    T.deadline = deadline;
    T.budget = deadline - T.start > 0 ? deadline - T.start : 0;
    R->budget_s = T.budget;

    int rc = gs_dev_open(dev, err);
    if (rc)
        return gs_err_prefix(err, "device %d (%s): ", dev->index, dev->info.name);
    if ((rc = gs_db_device_id(db, &dev->info, 1, &T.dev_id, err)) != 0 ||
        (rc = gs_kern_code_id(T.code_id, err)) != 0)
        return rc;
    R->device_id = T.dev_id;

    astate *A = NULL;
    size_t na = 0;
    if ((rc = init_algos(&T, &A, &na, err)) != 0)
        return rc;
    size_t ntunable = 0;
    for (size_t i = 0; i < na; i++)
        ntunable += A[i].ok && A[i].sp.total > 1;
    T.explore_s = EXPLORE_FRAC * T.budget / (double)(ntunable ? ntunable : 1);
    int lo = o->min_log2 > 0 ? o->min_log2 : GS_TUNE_MIN_LOG2;
    int hi = max_bucket(&T, A, na);
    if (hi < lo)
        hi = lo;
    size_t nkc = o->nkey_bits, npl = o->npayloads;
    T.groups_total = (unsigned)((size_t)(hi - lo + 1) * nkc * npl);
    R->max_log2 = lo - 1;
    GS_INFO("tuning %s (%s): %zu algorithm(s), n = 2^%d..2^%d, %zu key class(es) x %zu "
            "payload(s), budget %.0f s", dev->info.name, dev->info.platform, na, lo, hi, nkc, npl,
            T.budget);

    /* Group order: the probe group (first key class and payload at
     * n = 2^16, or the nearest bucket) first, so exploration ranks the
     * configurations where the device matters rather than at 2^10, where
     * launch overheads hide the differences; then every group by bucket. */
    size_t ng = 0;
    int probe = PROBE_LOG2 < lo ? lo : PROBE_LOG2 > hi ? hi : PROBE_LOG2;
    struct grp { int b; size_t ki, pi; } *gs = malloc(T.groups_total * sizeof *gs);
    if (!gs) {
        free_algos(A, na);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    gs[ng++] = (struct grp){ probe, 0, 0 };
    for (int b = lo; b <= hi; b++)
        for (size_t ki = 0; ki < nkc; ki++)
            for (size_t pi = 0; pi < npl; pi++)
                if (b != probe || ki || pi)
                    gs[ng++] = (struct grp){ b, ki, pi };
    for (size_t g = 0; g < ng && !rc; g++) {
        int b = gs[g].b;
        double now = gs_now_s();
        if (g > 0 && b > lo && gs[g - 1].b != b && T.bucket_cost[b - 1] > 0 &&
            now + BUCKET_GROWTH * T.bucket_cost[b - 1] > deadline) {
            GS_INFO("%s: stopping at n = 2^%d: the next size would not fit the remaining "
                    "budget", dev->info.name, b - 1);
            R->budget_hit = 1;
            break;
        }
        unsigned left = T.groups_total - T.groups_done;
        double gdl = now + (deadline - now) / (left ? left : 1);
        T.group_build_s = 0;
        for (size_t ai = 0; ai < na && !rc; ai++) {
            if (!A[ai].ok)
                continue;
            size_t aleft = 0;
            for (size_t j = ai; j < na; j++)
                aleft += A[j].ok;
            now = gs_now_s();
            /* builds paid from allowances move the group's end, not the
             * later algorithms' share */
            double adl = now + (gdl + T.group_build_s - now) / (double)aleft;
            rc = tune_algo_group(&T, &A[ai], o->key_bits[gs[g].ki], o->payloads[gs[g].pi], b, adl,
                                 err);
        }
        free_inputs(&T);
        T.groups_done++;
        if (!rc && b > R->max_log2)
            R->max_log2 = b;
    }
    free(gs);
    sort_winners(R);
    free_inputs(&T);
    if (!rc)
        rc = write_plan(&T, err);
    free_algos(A, na);
    R->elapsed_s = gs_now_s() - T.start;
    GS_INFO("%s: %lu trial(s) measured, %lu reused, %lu invalid, in %.1f s%s", dev->info.name,
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

/* ---- report ---- */

static const char *param_cell(const char *json, char *buf, size_t len)
{
    gs_params p;
    if (gs_db_params_from_json(json, &p, NULL) != 0)
        return json;
    params_text(&p, buf, len);
    return buf;
}

void gs_tune_report_print(FILE *out, const gs_tune_report *rep)
{
    for (size_t d = 0; d < rep->ndevs; d++) {
        const gs_tune_devreport *R = &rep->devs[d];
        char pb[300];
        /* Both numberings: the OpenCL index of --list-devices and --device,
         * and the database id that gsort-query shows. */
        if (R->device_id > 0)
            fprintf(out, "Device %d (database id %lld): %s (%s)\n", R->index,
                    (long long)R->device_id, R->name, R->platform);
        else
            fprintf(out, "Device %d: %s (%s)\n", R->index, R->name, R->platform);
        fprintf(out, "  %lu trials measured, %lu reused, %lu invalid; %.1f s of a %.0f s budget%s\n",
                R->measured, R->reused, R->invalid, R->elapsed_s, R->budget_s,
                R->failed ? "; stopped by an error" : R->budget_hit ? " (used up)" : "");
        fprintf(out, "  Winners (median ms: kernel time from profiling events, host: wall clock;\n"
                     "  end-to-end: wall clock with transfers)\n");
        fprintf(out, "    %-10s %-4s %-7s %-5s %12s %12s  %s\n", "algorithm", "keys", "payload",
                "n", "median ms", "end-to-end", "params");
        for (size_t i = 0; i < R->nwinners; i++) {
            const gs_tune_winner *w = &R->winners[i];
            char e2e[32];
            if (w->e2e_ms >= 0)
                snprintf(e2e, sizeof e2e, "%12.4f", w->e2e_ms);
            else
                snprintf(e2e, sizeof e2e, "%12s", "-");
            fprintf(out, "    %-10s %-4s %-7s 2^%-3d %12.4f %s  %s\n", w->algorithm,
                    gs_dtype_name(dtype_of(w->key_bits)), gs_payload_name(w->payload), w->bucket,
                    w->median_ms, e2e, param_cell(w->params, pb, sizeof pb));
        }
        if (!R->nwinners)
            fprintf(out, "    (none)\n");
        fprintf(out, "  Plan (fastest end to end, ms; \"stable\": for callers that need a stable sort)\n");
        fprintf(out, "    %-4s %-7s %-5s %-34s %s\n", "keys", "payload", "n", "any", "stable");
        for (size_t i = 0; i < R->nplan; i++) {
            const gs_tune_planrow *p = &R->plan[i], *q = NULL;
            if (p->stable)
                continue;
            for (size_t j = 0; j < R->nplan; j++)
                if (R->plan[j].stable && R->plan[j].key_bits == p->key_bits &&
                    R->plan[j].payload == p->payload && R->plan[j].bucket == p->bucket)
                    q = &R->plan[j];
            char any[700], stb[700];
            snprintf(any, sizeof any, "%s %.4f", p->algorithm, p->ms);
            if (strcmp(p->params, "{}") != 0) {
                size_t l = strlen(any);
                snprintf(any + l, sizeof any - l, " (%.300s)", param_cell(p->params, pb, sizeof pb));
            }
            if (!q)
                snprintf(stb, sizeof stb, "-");
            else if (!strcmp(q->algorithm, p->algorithm) && !strcmp(q->params, p->params))
                snprintf(stb, sizeof stb, "same");
            else
                snprintf(stb, sizeof stb, "%s %.4f%s%.300s%s", q->algorithm, q->ms,
                         strcmp(q->params, "{}") ? " (" : "",
                         strcmp(q->params, "{}") ? param_cell(q->params, pb, sizeof pb) : "",
                         strcmp(q->params, "{}") ? ")" : "");
            fprintf(out, "    %-4s %-7s 2^%-3d %-34s %s\n", gs_dtype_name(dtype_of(p->key_bits)),
                    gs_payload_name(p->payload), p->bucket, any, stb);
        }
        if (!R->nplan)
            fprintf(out, "    (none)\n");
    }
}

void gs_tune_report_free(gs_tune_report *rep)
{
    for (size_t d = 0; d < rep->ndevs; d++) {
        free(rep->devs[d].winners);
        free(rep->devs[d].plan);
    }
    free(rep->devs);
    memset(rep, 0, sizeof *rep);
}

/* ---- sampled versus exhaustive ---- */

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
    tctx T;
    memset(&T, 0, sizeof T);
    T.db = db;
    T.dev = dev;
    T.pc = pc;
    T.o = o;
    T.rep = &R;
    T.start = gs_now_s();
    T.budget = o->budget_s;
    T.deadline = T.start + o->budget_s;
    if ((rc = gs_db_device_id(db, &dev->info, 1, &T.dev_id, err)) != 0 ||
        (rc = gs_kern_code_id(T.code_id, err)) != 0)
        return rc;
    astate A;
    memset(&A, 0, sizeof A);
    A.a = a;
    const gs_dev_info *info = a->uses_device ? &dev->info : NULL;
    if ((rc = gs_tune_space_init(&A.sp, a, info, o->restrict_spec, err)) != 0)
        return rc;
    if (A.sp.total > 100000)
        return gs_err_set(err, GS_ETOOBIG, "%s: %llu configurations are too many to measure "
                          "all; narrow them with --restrict", a->name,
                          (unsigned long long)A.sp.total);
    table t = { calloc(A.sp.total, sizeof(double)), calloc(A.sp.total, sizeof(int)), A.sp.total, 0 };
    if (!t.ms || !t.valid) {
        free(t.ms);
        free(t.valid);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    fprintf(out, "%s on %s, u32 keys, no payload, n = %zu (2^%d): %llu configurations\n",
            a->name, dev->info.name, n, bucket, (unsigned long long)A.sp.total);
    fflush(out);

    /* Exhaustive: every configuration, each its own group-free trial
     * (first = 1: only the overall budget stops it). */
    gctx G = { .T = &T, .A = &A, .kc = 32, .pl = GS_PL_NONE, .bucket = bucket, .n = n,
               .algo_deadline = T.deadline, .best_ms = -1 };
    uint64_t measured = 0, best = 0;
    int have = 0;
    for (uint64_t c = 0; c < A.sp.total && !rc; c++) {
        rc = measure(&G, DIST_RANDOM, c, 1, &t.ms[c], &t.valid[c], err);
        if (rc == GS_TUNE_STOP)
            break;
        if (rc)
            break;
        measured++;
        if (t.valid[c] && (!have || t.ms[c] < t.ms[best])) {
            best = c;
            have = 1;
        }
    }
    free(A.seen);
    A.seen = NULL;
    if (rc < 0 || measured < A.sp.total) {
        free_inputs(&T);
        if (rc >= 0)
            fprintf(out, "budget used up after %llu of %llu configurations; run again with the "
                    "same --db to continue\n", (unsigned long long)measured,
                    (unsigned long long)A.sp.total);
        free(t.ms);
        free(t.valid);
        return rc < 0 ? rc : 0;
    }
    if (!have) {
        free_inputs(&T);
        fprintf(out, "no valid configuration\n");
        free(t.ms);
        free(t.valid);
        return 0;
    }
    size_t nvalid = 0;
    double *sorted = malloc(A.sp.total * sizeof *sorted);
    for (uint64_t c = 0; sorted && c < A.sp.total; c++)
        if (t.valid[c])
            sorted[nvalid++] = t.ms[c];
    if (sorted)
        qsort(sorted, nvalid, sizeof *sorted, cmp_double);
    gs_params p;
    char pt[256];
    gs_tune_space_params(&A.sp, best, &p);
    params_text(&p, pt, sizeof pt);
    fprintf(out, "exhaustive: %zu valid of %llu (%lu measured now, %lu reused); best %.4f ms (%s), "
            "median %.4f ms, worst %.4f ms\n", nvalid, (unsigned long long)A.sp.total,
            R.measured, R.reused, t.ms[best], pt, sorted ? sorted[nvalid / 2] : 0,
            sorted ? sorted[nvalid - 1] : 0);
    free(sorted);

    /* Sampled, replayed on those measurements with nseeds seeds per quota. */
    uint64_t dcode = 0;
    int has_def = 0;
    if (a->defaults) {
        a->defaults(info, &p);
        has_def = gs_tune_space_code(&A.sp, &p, &dcode) == 0;
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
    for (size_t qi = 0; qi < NQ && !rc && quotas[qi] < A.sp.total; qi++, nq++) {
        double sum_trials = 0, sum_ratio = 0, worst = 1;
        size_t max_trials = 0;
        unsigned hit = 0, w5 = 0, w10 = 0;
        for (unsigned sd = 1; sd <= nseeds && !rc; sd++) {
            gs_tune_sampler smp;
            if ((rc = gs_tune_sampler_init(&smp, A.sp.total, hash_str(sd, a->name), err)) != 0)
                break;
            gs_tune_search sr;
            memset(&sr, 0, sizeof sr);
            size_t quota = quotas[qi];
            t.trials = 0;
            rc = gs_tune_search_run(&sr, &A.sp, &dcode, has_def ? 1 : 0, &smp, &quota,
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
        for (uint64_t c = 0; c < A.sp.total; c++) {
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
    tinput *in = &T.in[DIST_RANDOM];
    if (!in->in_k && (rc = tinput_make(in, GS_DT_U32, GS_PL_NONE, n, DIST_RANDOM, err)) != 0) {
        free(rounds);
        goto done;
    }
    for (int rd = 0; rd < ROUNDS; rd++)
        for (size_t j = 0; j < nset; j++) {
            tresult r;
            gs_tune_space_params(&A.sp, set[j], &p);
            run_trial(&T, a, in, &p, &r);
            rounds[j * ROUNDS + rd] = r.valid ? r.med : 1e30;
        }
    size_t tb = 0;
    for (size_t j = 0; j < nset; j++) {
        qsort(rounds + j * ROUNDS, ROUNDS, sizeof *rounds, cmp_double);
        rem[j] = rounds[j * ROUNDS + ROUNDS / 2];
        if (rem[j] < rem[tb])
            tb = j;
    }
    free(rounds);
    gs_tune_space_params(&A.sp, set[tb], &p);
    params_text(&p, pt, sizeof pt);
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
    free_inputs(&T);
    free(picks);
    free(set);
    free(rem);
    free(t.ms);
    free(t.valid);
    return rc;
}
