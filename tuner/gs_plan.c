/* A tuning run's results: each group's winner, recorded in the database
 * beside the trial it came from, and the device's serving plan, chosen
 * from the winners: per (key class, payload, bucket) the fastest end to
 * end, once for any caller and once among the stable algorithms; between
 * the measured sizes and past the largest one, the fastest by each
 * candidate's measured scaling, marked interpolated or extrapolated. The
 * report (gs_report.c) prints both from the device report kept here. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_grow.h"

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

int gs_tune_beats(double a_med, double b_med, double b_min)
{
    return a_med > 0 && b_med > 0 && a_med < b_min && a_med <= (1 - GS_TUNE_NOISE) * b_med;
}

/* A device time's end to end, as the plan compares it (gs_tune_winner_ms):
 * the kernel time `ms` plus the least transfer time of the group. */
static double e2e_of(const gs_tune_devreport *R, const gs_tune_winner *w, double ms, double e2e)
{
    if (!w->uses_device || !(ms > 0) || !(e2e >= ms))
        return e2e;
    double xfer = e2e - ms;
    for (size_t i = 0; i < R->nwinners; i++) {
        const gs_tune_winner *x = &R->winners[i];
        if (x->uses_device && x->key_bits == w->key_bits && x->payload == w->payload &&
            x->bucket == w->bucket && x->median_ms > 0 && x->e2e_ms >= x->median_ms &&
            x->e2e_ms - x->median_ms < xfer)
            xfer = x->e2e_ms - x->median_ms;
    }
    return ms + xfer;
}

double gs_tune_winner_ms(const gs_tune_devreport *R, const gs_tune_winner *w)
{
    return e2e_of(R, w, w->median_ms, w->e2e_ms);
}

double gs_tune_base_ms(const gs_tune_devreport *R, const gs_tune_winner *w)
{
    return w->base_ms > 0 ? e2e_of(R, w, w->base_ms, w->base_e2e_ms) : -1;
}

int gs_tune_winner_add(gs_tune_devreport *R, const gs_tune_winner *w)
{
    /* a group searched again (time left over) replaces its earlier winner */
    for (size_t i = 0; i < R->nwinners; i++) {
        gs_tune_winner *x = &R->winners[i];
        if (!strcmp(x->algorithm, w->algorithm) && x->key_bits == w->key_bits &&
            x->payload == w->payload && x->bucket == w->bucket) {
            *x = *w;
            return 0;
        }
    }
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

int gs_tune_winner_save(gs_db *db, int64_t dev_id, const char *code_id, int uses_device,
                        gs_tune_winner *w, gs_err *err)
{
    gs_db_trial key = { .device_id = dev_id, .algorithm = w->algorithm,
                        .key_bits = w->key_bits, .payload = gs_payload_name(w->payload),
                        .n = (size_t)1 << w->bucket, .distribution = "random",
                        .params = w->params, .code_id = code_id };
    int64_t tid = 0;
    double e2e = 0;
    int v = 0;
    gs_err lerr;
    int rc = gs_db_trial_lookup(db, &key, NULL, NULL, &tid, err);
    if (rc)
        return rc;
    if (!uses_device) {
        w->e2e_ms = w->median_ms;
        w->base_e2e_ms = w->base_ms;
    } else {
        key.distribution = GS_DB_DIST_E2E;
        if (gs_db_trial_lookup(db, &key, &e2e, &v, NULL, &lerr) == 0 && v)
            w->e2e_ms = e2e;
        key.params = w->base_params;
        if (w->base_ms > 0 && gs_db_trial_lookup(db, &key, &e2e, &v, NULL, &lerr) == 0 && v)
            w->base_e2e_ms = e2e;
    }
    if ((rc = gs_db_begin(db, err)) != 0)
        return rc;
    rc = gs_db_winner_set(db, dev_id, w->algorithm, w->key_bits, gs_payload_name(w->payload),
                          w->bucket, w->params, w->median_ms, tid, err);
    if (!rc)
        rc = gs_db_commit(db, err);
    else
        gs_db_rollback(db);
    return rc;
}

void gs_tune_winners_sort(gs_tune_devreport *R)
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

/* Whether the untuned daemon serves with algorithm `name` on R's device:
 * the host sort everywhere, and a GPU's default algorithm. */
static int is_untuned_algo(const gs_tune_devreport *R, const char *name)
{
    return !strcmp(name, "host") || (!R->cpu && !strcmp(name, R->default_algo));
}

/* ---- past the largest measured size ---- */

/* One candidate's time at 2^b, from its two largest measured sizes up to
 * 2^top: t = a + c n through them (a fixed cost and a cost per key, which
 * is how a device sort's launches and copies and its per-key work add up),
 * or c n through the one when it has one; -1 when it has none. */
static double predict(const gs_tune_devreport *R, const gs_tune_winner *w, int top, int b,
                      const char **params)
{
    const gs_tune_winner *p1 = NULL, *p2 = NULL;     /* p2: the largest bucket */
    for (size_t i = 0; i < R->nwinners; i++) {
        const gs_tune_winner *x = &R->winners[i];
        if (strcmp(x->algorithm, w->algorithm) || x->key_bits != w->key_bits ||
            x->payload != w->payload || x->bucket > top || !(gs_tune_winner_ms(R, x) > 0))
            continue;
        if (!p2 || x->bucket > p2->bucket) {
            p1 = p2;
            p2 = x;
        } else if (!p1 || x->bucket > p1->bucket) {
            p1 = x;
        }
    }
    if (!p2)
        return -1;
    *params = p2->params;
    double n2 = ldexp(1.0, p2->bucket), n = ldexp(1.0, b);
    double t2 = gs_tune_winner_ms(R, p2);
    double per = t2 / n2, fixed = 0;
    if (p1) {
        double n1 = ldexp(1.0, p1->bucket);
        double c = (t2 - gs_tune_winner_ms(R, p1)) / (n2 - n1);
        if (c > 0) {
            per = c;
            fixed = t2 - c * n2 > 0 ? t2 - c * n2 : 0;
        }
    }
    return fixed + per * n;
}

/* A candidate for an unmeasured size: the winner, its predicted time and
 * the params that time is for (w NULL: none yet). */
typedef struct cand_pick {
    const gs_tune_winner *w;
    double ms;
    const char *params;
} cand_pick;

/* Keep w in *p when its prediction ms is one (> 0) and beats p's. */
static void keep_faster(cand_pick *p, const gs_tune_winner *w, double ms, const char *params)
{
    if (ms > 0 && (!p->w || ms < p->ms))
        *p = (cand_pick){ w, ms, params };
}

/* Plan rows for the sizes each shape did not measure, up to
 * GS_TUNE_MAX_LOG2: between two measured sizes (the sparse large-n
 * buckets) and past the largest one. Per size, the candidate predicted
 * fastest from its own measured scaling (predict), among those measured at
 * the next measured size above it (or, past the largest, at one of the two
 * largest, and the untuned daemon's algorithm wherever it was measured
 * last), so a size never goes to another candidate measured only far from
 * it; written marked interpolated or extrapolated. The device's limits
 * stay the algorithms' own: a size a device cannot hold is refused by
 * check() at request time and served elsewhere. */
static int fill_unmeasured(gs_db *db, int64_t dev_id, gs_tune_devreport *R, gs_err *err)
{
    int rc = 0;
    size_t nmeasured = R->nplan;
    for (size_t i = 0; i < nmeasured && !rc; i++) {
        const gs_tune_planrow *p = &R->plan[i];
        char have[GS_TUNE_MAX_LOG2 + 1] = { 0 };
        int seen_earlier = 0, lo = GS_TUNE_MAX_LOG2 + 1;
        for (size_t j = 0; j < nmeasured; j++) {
            const gs_tune_planrow *q = &R->plan[j];
            if (q->key_bits == p->key_bits && q->payload == p->payload && q->stable == p->stable &&
                q->bucket >= 0 && q->bucket <= GS_TUNE_MAX_LOG2) {
                have[q->bucket] = 1;
                lo = q->bucket < lo ? q->bucket : lo;
                seen_earlier |= j < i;
            }
        }
        if (seen_earlier)
            continue;           /* one pass per (key class, payload, stability) */
        const int kb = p->key_bits, stable = p->stable;
        const gs_payload pay = p->payload;
        for (int b = lo + 1; b <= GS_TUNE_MAX_LOG2 && !rc; b++) {
            if (have[b])
                continue;
            int below = b - 1, above = b + 1, below2;
            while (!have[below])
                below--;
            while (above <= GS_TUNE_MAX_LOG2 && !have[above])
                above++;
            int inter = above <= GS_TUNE_MAX_LOG2;
            for (below2 = below - 1; below2 >= lo && !have[below2]; below2--)
                ;
            /* past the largest: measured at one of the two largest */
            int n1 = below2, n2 = below;
            int top = inter ? above : below;
            cand_pick best = { 0 }, unt = { 0 };
            for (size_t k = 0; k < R->nwinners; k++) {
                const gs_tune_winner *w = &R->winners[k];
                /* between: measured at the size above (one measured only
                 * below was dropped there, or never reached it) */
                if (w->key_bits != kb || w->payload != pay || (stable && !w->stable) ||
                    (inter ? w->bucket != above : w->bucket != n1 && w->bucket != n2))
                    continue;
                const char *params = NULL;
                double ms = predict(R, w, top, b, &params);
                keep_faster(&best, w, ms, params);
                if (is_untuned_algo(R, w->algorithm))
                    keep_faster(&unt, w, ms, params);
            }
            /* Past the largest size, the untuned daemon's algorithm is
             * always weighed, from its own largest measurements, even where
             * it was not measured at the shape's two largest sizes (a quick
             * tune's budget can end before it gets there): otherwise the
             * only candidates left there would take every larger size
             * unopposed. */
            if (!inter && !unt.w) {
                for (size_t k = 0; k < R->nwinners; k++) {
                    const gs_tune_winner *w = &R->winners[k];
                    if (w->key_bits != kb || w->payload != pay || (stable && !w->stable) ||
                        w->bucket > below || !is_untuned_algo(R, w->algorithm))
                        continue;
                    const char *params = NULL;
                    keep_faster(&unt, w, predict(R, w, below, b, &params), params);
                }
                if (!best.w)
                    best = unt;
            }
            /* a prediction is no measurement: another algorithm than the
             * untuned daemon's takes the size only predicted 3% faster */
            if (best.w && unt.w && strcmp(best.w->algorithm, unt.w->algorithm) &&
                !(best.ms <= (1 - GS_TUNE_NOISE) * unt.ms))
                best = unt;
            if (!best.w) {
                if (inter)
                    continue;
                break;
            }
            int how = inter ? GS_DB_PLAN_INTERPOLATED : GS_DB_PLAN_EXTRAPOLATED;
            gs_tune_planrow row = { .key_bits = kb, .payload = pay, .stable = stable, .bucket = b,
                                    .ms = best.ms, .extrapolated = how, .base_ms = -1 };
            snprintf(row.algorithm, sizeof row.algorithm, "%s", best.w->algorithm);
            snprintf(row.params, sizeof row.params, "%s", best.params);
            const char *pl = gs_payload_name(pay);
            rc = gs_db_plan_set(db, dev_id, kb, pl, stable, b, row.algorithm, row.params, best.ms,
                                err);
            if (!rc)
                rc = gs_db_plan_mark_source(db, dev_id, kb, pl, stable, b, how, err);
            if (!rc && add_planrow(R, &row))
                rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        }
    }
    return rc;
}

/* The untuned daemon's choice among a group's winners (indices wi): on a
 * CPU device the host sort; on a GPU the host sort below the crossover
 * and the device default above it, which the daemon measures when it
 * starts, so here the faster of the two baselines (the stricter bar).
 * The winner's index in R, or -1 when neither baseline was measured. */
static long untuned(const gs_tune_devreport *R, const size_t *wi, size_t nc, int stable)
{
    long best = -1;
    double bms = 0;
    for (size_t k = 0; k < nc; k++) {
        const gs_tune_winner *x = &R->winners[wi[k]];
        double ms = gs_tune_base_ms(R, x);
        if (!(ms > 0) || (stable && !x->stable) || !x->base_params[0] ||
            !is_untuned_algo(R, x->algorithm))
            continue;
        if (best < 0 || ms < bms) {
            best = (long)wi[k];
            bms = ms;
        }
    }
    return best;
}

int gs_tune_plan_write(gs_db *db, int64_t dev_id, gs_tune_devreport *R, gs_err *err)
{
    int rc = gs_db_begin(db, err);
    if (rc)
        return rc;
    gs_tune_cand *c = malloc((R->nwinners + 1) * sizeof *c);
    size_t *wi = malloc((R->nwinners + 1) * sizeof *wi);
    if (!c || !wi) {
        free(c);
        free(wi);
        gs_db_rollback(db);
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
                c[nc] = (gs_tune_cand){ x->algorithm, x->stable, gs_tune_winner_ms(R, x) };
                wi[nc++] = k;
            }
        }
        for (int stable = 0; stable <= 1 && !rc; stable++) {
            int b = gs_tune_plan_pick(c, nc, stable);
            long u = untuned(R, wi, nc, stable);
            if (b < 0 && u < 0)
                continue;
            const gs_tune_winner *x = b >= 0 ? &R->winners[wi[b]] : NULL;
            const gs_tune_winner *y = u >= 0 ? &R->winners[u] : NULL;
            gs_tune_planrow row = { .stable = stable, .base_ms = -1 };
            if (y) {
                snprintf(row.base_algorithm, sizeof row.base_algorithm, "%s", y->algorithm);
                row.base_ms = gs_tune_base_ms(R, y);
            }
            /* Another algorithm than the untuned daemon's takes the row
             * only by more than the noise; the same one was held to its
             * own defaults already (tune_algo_group). */
            if (x && y && strcmp(x->algorithm, y->algorithm) &&
                !(c[b].ms <= (1 - GS_TUNE_NOISE) * row.base_ms))
                x = NULL;
            if (x) {
                snprintf(row.algorithm, sizeof row.algorithm, "%s", x->algorithm);
                snprintf(row.params, sizeof row.params, "%s", x->params);
                row.ms = c[b].ms;
            } else {
                x = y;
                snprintf(row.algorithm, sizeof row.algorithm, "%s", y->algorithm);
                snprintf(row.params, sizeof row.params, "%s", y->base_params);
                row.ms = row.base_ms;
            }
            row.key_bits = x->key_bits;
            row.payload = x->payload;
            row.bucket = x->bucket;
            const char *pl = gs_payload_name(x->payload);
            rc = gs_db_plan_set(db, dev_id, x->key_bits, pl, stable, x->bucket, row.algorithm,
                                row.params, row.ms, err);
            if (!rc && row.base_ms > 0)
                rc = gs_db_plan_set_baseline(db, dev_id, x->key_bits, pl, stable, x->bucket,
                                             row.base_algorithm, row.base_ms, err);
            if (!rc && add_planrow(R, &row))
                rc = gs_err_set(err, GS_ENOMEM, "out of memory");
        }
    }
    free(c);
    free(wi);
    if (!rc)
        rc = fill_unmeasured(db, dev_id, R, err);
    if (!rc)
        rc = gs_db_commit(db, err);
    else
        gs_db_rollback(db);
    return rc;
}
