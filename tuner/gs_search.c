/* The tuner's search core, over a space's codes (gs_space.c): random
 * sampling without replacement, deterministic in the seed, and one search
 * that evaluates the candidates it is given, then samples, then climbs
 * hills from the best points found. It knows nothing of devices, time or
 * the database: a callback evaluates each point, so that the tests and the
 * sampled-versus-exhaustive comparison can replay it on a table. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <stdlib.h>
#include <string.h>

#include "gs_grow.h"

/* Hill climbs per search, from the best points found before climbing. */
#define CLIMB_STARTS 3

/* ---- sampler ---- */

#define PERM_MAX 65536

int gs_tune_sampler_init(gs_tune_sampler *s, uint64_t total, uint64_t seed, gs_err *err)
{
    memset(s, 0, sizeof *s);
    s->total = total;
    s->rng = gs_tune_mix64(seed ^ UINT64_C(0x5EED5EED5EED5EED));
    if (total <= PERM_MAX) {
        s->perm = malloc((size_t)(total ? total : 1) * sizeof *s->perm);
        if (!s->perm)
            return gs_err_set(err, GS_ENOMEM, "out of memory");
        for (uint64_t i = 0; i < total; i++)
            s->perm[i] = i;
        for (uint64_t i = total; i > 1; i--) {   /* Fisher-Yates */
            uint64_t j = gs_tune_rng_next(&s->rng) % i, t = s->perm[i - 1];
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
        uint64_t c = gs_tune_rng_next(&s->rng) % s->total;
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
        size_t idx[GS_MAX_PARAMS], order[GS_MAX_PARAMS], no = 0;
        gs_tune_code_split(s, cur, idx);
        for (int pass = sr->large ? 0 : 1; pass < 2; pass++)
            for (size_t p = 0; p < s->np; p++)
                if (!sr->large || (s->by_n[p] ? 0 : 1) == pass)
                    order[no++] = p;
        for (size_t o = 0; o < no && !rc; o++)
            for (int t = 0; t < 2 && !rc; t++) {
                const size_t p = order[o];
                const int d = (t == 0) == (sr->large && s->by_n[p]) ? 1 : -1;
                /* An invalid neighbour is stepped over once: a wall of
                 * failing configurations must not hide a better one behind. */
                for (size_t step = 1; step <= 2 && !rc; step++) {
                    if ((d < 0 && idx[p] < step) || (d > 0 && idx[p] + step >= s->nv[p]))
                        break;
                    size_t keep = idx[p];
                    idx[p] = d < 0 ? keep - step : keep + step;
                    uint64_t c = gs_tune_code_join(s, idx);
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
    size_t nstarts = 0, want = sr->starts > 0 && sr->starts < CLIMB_STARTS ? (size_t)sr->starts
                                                                           : CLIMB_STARTS;
    for (size_t k = 0; k < want; k++) {
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
