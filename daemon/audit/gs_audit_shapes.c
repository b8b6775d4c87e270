/* The rows, top-k and segments points of the plan audit (issue 38): the
 * plan of requests that are not one flat array, measured and kept. At
 * each point of a small grid (all the keys 2^b, a row's length, k or the
 * segments' mean length 2^s) it times,
 * as the flat points are timed (gs_audit_run.c), the plan's row for the
 * point (the one the daemon would take; without one, the daemon's route,
 * the rules of gs_route.c), the untuned route, and each route that serves the request
 * on this device and the host: for rows bitonic (one launch), radix (the
 * rows whole), the host sort and vqsort side by side; for top-k the
 * device's select and the host's; for segments (random lengths, 0 to
 * twice the mean) bitonic in one launch and the host sort (on a GPU: a
 * CPU device's own routes are not forced). The fastest route that beats the
 * plan's by the rank test, else the untuned one where the plan's is
 * slower than it by more than the noise, else the plan's own, is
 * the point's row of the shape_plan table (with fix): `gsortd --tune-all`
 * and a background retune end with it, so these requests are planned by
 * measurement as the flat ones are, and an audit without fix reports
 * where the plan loses. Keys are u32 (the 32-bit class; f32 follows it,
 * as for flat arrays), rows and segments keys alone, top-k with the int32
 * indices a client's topk asks for. */
#include "config.h"
#include "gs_audit.h"
#include "gs_audit_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gs_dev.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_time.h"
#include "gs_tune.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* ---- the output's checks (the first run of each choice at a point) ---- */

/* Every row of A->rows in order by the keys' encoding. */
static int rows_ok(actx *A, const shape *h, size_t n)
{
    size_t len = n / A->rows;
    for (size_t i = 1; i < n; i++)
        if (i % len && gs_key_encoded(h->dt, 0, A->base, i - 1) >
                           gs_key_encoded(h->dt, 0, A->base, i))
            return 0;
    return 1;
}

/* Every segment of A->offs in order by the keys' encoding. */
static int segs_ok(actx *A, const shape *h, size_t n)
{
    (void)n;
    for (uint64_t g = 0; g < A->nseg; g++)
        for (uint64_t i = A->offs[g] + 1; i < A->offs[g + 1]; i++)
            if (gs_key_encoded(h->dt, 0, A->base, i - 1) > gs_key_encoded(h->dt, 0, A->base, i))
                return 0;
    return 1;
}

/* Segments of n keys in all, of random lengths from 0 to twice `mean`
 * (xorshift, the same at every run of the audit), the last cut at n: the
 * offsets into A->offs, their count into A->nseg. */
static int make_segments(actx *A, size_t n, uint64_t mean, gs_err *err)
{
    size_t cap = n / (mean ? mean : 1) * 2 + 16;
    A->offs = malloc((cap + 1) * sizeof *A->offs);
    if (!A->offs)
        return gs_err_set(err, GS_ENOMEM, "plan audit: out of memory for %zu segment offsets",
                          cap);
    uint64_t x = 0x9e3779b97f4a7c15ull ^ n ^ (mean << 32), at = 0;
    size_t g = 0;
    A->offs[0] = 0;
    while (at < n && g + 1 < cap) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at += x % (2 * mean + 1);
        A->offs[++g] = at < n ? at : n;
    }
    if (A->offs[g] < n)         /* the cap reached: the last takes the rest */
        A->offs[g] = n;
    A->nseg = g;
    return 0;
}

/* The first k keys in order, each the input's key at the index beside it,
 * and the k-th the input's k-th smallest: fewer than k input keys below
 * it, at least k up to it. */
static int topk_ok(actx *A, const shape *h, size_t n)
{
    size_t k = (size_t)A->k;
    if (!k)
        return 1;
    const uint32_t *idx = (const uint32_t *)((const char *)A->base + A->voff);
    for (size_t i = 0; i < k; i++) {
        if (idx[i] >= n || gs_key_encoded(h->dt, 0, A->src_k, idx[i]) !=
                               gs_key_encoded(h->dt, 0, A->base, i))
            return 0;
        if (i && gs_key_encoded(h->dt, 0, A->base, i - 1) > gs_key_encoded(h->dt, 0, A->base, i))
            return 0;
    }
    uint64_t kth = gs_key_encoded(h->dt, 0, A->base, k - 1);
    size_t below = 0, upto = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = gs_key_encoded(h->dt, 0, A->src_k, i);
        below += x < kth;
        upto += x <= kth;
    }
    return below < k && upto >= k;
}

/* ---- the kinds of point ---- */

/* A grid: log2 of all the keys, log2 of a row's length, of k or of the
 * segments' mean length. */
typedef struct grid {
    int b[4], nb;             /* log2 of all the keys */
    int s[3], ns;             /* log2 of a row's length, of k, or of a mean segment */
} grid;

/* Each kind's points: the shape timed, the output's check, the routes
 * forced beside the plan's and the untuned one (up to 4; the rest NULL),
 * and the grid, [a CPU device]: a CPU device's is smaller (its points are
 * host sorts and PoCL runs of a few cores, under the quick audit's time
 * bound). */
typedef struct kind_def {
    shape h;
    int (*check)(actx *A, const shape *h, size_t n);
    const char *algos[4];
    grid g[2];
} kind_def;
static const kind_def kinds[GS_PK_COUNT] = {
    [GS_PK_ROWS] = { { "rows", GS_DT_U32, GS_PL_NONE, 1, 0 }, rows_ok,
                     { "bitonic", "radix", "host", "vqsort" },
                     { { { 16, 20, 24 }, 3, { 6, 10, 14 }, 3 }, { { 14, 18 }, 2, { 6, 10 }, 2 } } },
    [GS_PK_TOPK] = { { "topk", GS_DT_U32, GS_PL_IDX32, 1, 0 }, topk_ok, { "select", "host" },
                     { { { 16, 20, 24, 26 }, 4, { 4, 10 }, 2 },
                       { { 16, 20 }, 2, { 4, 10 }, 2 } } },
    /* not vqsort: it would sort each segment as a request of its own */
    [GS_PK_SEGS] = { { "segs", GS_DT_U32, GS_PL_NONE, 1, 0 }, segs_ok, { "bitonic", "host" },
                     { { { 16, 20, 24 }, 3, { 4, 7, 10 }, 3 }, { { 14, 18 }, 2, { 6, 10 }, 2 } } },
};

int audit_shape_known(const char *name)
{
    for (size_t k = 0; k < COUNT(kinds); k++)
        if (!strcmp(name, kinds[k].h.name))
            return 1;
    return 0;
}

/* ---- one point ---- */

/* The routes timed at a point, into cs: the daemon's own, the untuned one,
 * then each forced algorithm this gsortd has (device ones on the audited
 * device, with the scheduler's parameters for them). */
static size_t point_choices(const gs_plans_shape *row, gs_plans_kind kind, int host_only,
                            audit_choice *cs)
{
    const char *const *names = kinds[kind].algos;
    size_t nc = 0;
    memset(cs, 0, MAX_CHOICES * sizeof *cs);
    /* the plan's row for the point (as the daemon finds it), run as it
     * says; none: the daemon's route without one */
    snprintf(cs[nc].label, sizeof cs[nc].label, "plan");
    if (row) {
        cs[nc].algo = row->algo;
        cs[nc].params = row->params;
    }
    cs[nc++].routed = 1;
    snprintf(cs[nc++].label, sizeof cs[0].label, "untuned");
    for (size_t i = 0; i < COUNT(kinds[kind].algos) && names[i] && nc < MAX_CHOICES; i++) {
        const gs_algo *a = gs_algo_find(names[i]);
        if (!a || (host_only && a->uses_device))
            continue;
        snprintf(cs[nc].label, sizeof cs[nc].label, "%s", a->name);
        cs[nc].algo = a;
        cs[nc++].auto_params = 1;
    }
    return nc;
}

/* Write the winner as the point's row (its baseline: the untuned route). */
static int write_row(gs_db *db, int64_t db_id, gs_plans_kind kind, const shape *h, int b, int sb,
                     const audit_choice *win, const audit_choice *unt, gs_err *err)
{
    gs_db_shape_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.kind, sizeof r.kind, "%s", gs_plans_kind_name(kind));
    r.key_bits = shape_kb(h);
    snprintf(r.payload, sizeof r.payload, "%s", gs_payload_name(h->pl));
    r.bucket = b;
    r.sub = sb;
    snprintf(r.algorithm, sizeof r.algorithm, "%s", win->ran);
    gs_params p = win->ran_params;
    int rc = gs_params_to_json(&p, r.params, sizeof r.params, err);
    r.median_ms = win->med;
    r.baseline_ms = -1;
    if (audit_usable(unt)) {
        snprintf(r.baseline_algorithm, sizeof r.baseline_algorithm, "%s", unt->ran);
        r.baseline_ms = unt->med;
    }
    if (!rc)
        rc = gs_db_begin(db, err);
    if (!rc) {
        rc = gs_db_shape_set(db, db_id, &r, err);
        if (!rc)
            rc = gs_db_commit(db, err);
        else
            gs_db_rollback(db);
    }
    return rc;
}

/* The point's geometry off A again (the segments' offsets freed). */
static void point_done(actx *A)
{
    A->rows = A->k = A->nseg = 0;
    free(A->offs);
    A->offs = NULL;
    A->check = NULL;
}

static void shape_point(actx *A, gs_db *db, int64_t db_id, const gs_plans *P,
                        gs_plans_kind kind, int b, int sb, point_res *pr)
{
    const gs_audit_opts *o = A->o;
    const shape *h = &kinds[kind].h;
    size_t n = (size_t)1 << b;
    uint64_t sub = (uint64_t)1 << sb;
    int reps = o->reps > 0 ? (o->reps > MAX_REPS / 2 ? MAX_REPS / 2 : o->reps) : 5;
    memset(pr, 0, sizeof *pr);
    pr->plan_untuned = pr->plan_best = pr->after_untuned = -1;
    char label[24];
    snprintf(label, sizeof label, "%s:2^%d", h->name, sb);
    A->rows = kind == GS_PK_ROWS ? n / sub : 0;
    A->k = kind == GS_PK_TOPK ? sub : 0;
    A->check = kinds[kind].check;
    gs_err e;
    gs_err_clear(&e);
    if (kind == GS_PK_SEGS && make_segments(A, n, sub, &e) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", o->device, label, b, e.msg);
        point_done(A);
        return;
    }
    audit_choice cs[MAX_CHOICES];
    /* a CPU device's own routes are not forced: the tuner finds device
     * algorithms far behind the host sort there, and each costs a program
     * build of seconds to a minute on PoCL (a plan row that names one is
     * still timed, as the plan's choice) */
    const int cpu = (A->info->type & CL_DEVICE_TYPE_CPU) != 0;
    gs_shape hs = { .dtype = h->dt, .payload = h->pl, .rows = A->rows, .topk = A->k > 0,
                    .k = A->k, .segments = A->nseg };
    size_t nc = point_choices(gs_plans_shape_lookup(P, kind, &hs, n, sub), kind, cpu, cs);
    unsigned char gone[64] = { 0 };
    double t0 = gs_now_s();
    if (audit_block_make(A, h, n, &e) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", o->device, label, b, e.msg);
        point_done(A);
        return;
    }
    reps = audit_time_choices(A, h, n, cs, nc, gone, reps);
    /* the verdict as at a flat point; the row is the faster choice where
     * the plan loses or is not faster than its baseline, else the plan's */
    audit_choice *plan = &cs[0], *unt = &cs[1], *alt = NULL;
    pr->losing = audit_plan_loses(A, h, label, b, cs, nc, reps, pr, &alt);
    audit_choice *win = (pr->losing || pr->unproven) && alt ? alt : plan;
    /* with fix, every point timed gets its row: the measured winner */
    if (o->fix && audit_usable(win) && !audit_cancelled(A)) {
        gs_err_clear(&e);
        if (write_row(db, db_id, kind, h, b, sb, win, unt, &e) == 0)
            pr->fixed = win != plan;
        else
            GS_WARN("plan audit: cannot write the %s plan row: %s", h->name, e.msg);
    }
    if (pr->plan_untuned > 0) {
        const audit_choice *now = pr->fixed ? win : plan;
        pr->after_untuned = now == unt || audit_same_run(A, now, unt) ? 1.0
                                                                      : now->med / unt->med;
    }
    if (win != plan) {
        char pt[200];
        audit_params_text(&win->ran_params, pt, sizeof pt);
        gs_log(pr->fixed || pr->unproven ? GS_LOG_INFO : GS_LOG_WARN,
               "plan audit, device %d, %s n = 2^%d: the plan (%s, %.4f ms) %s %s "
               "(%s %s, %.4f ms)%s", o->device, label, b, plan->ran,
               audit_usable(plan) ? plan->med : -1.0,
               pr->unproven ? "is not faster than its baseline, the" : "loses to", win->label,
               win->ran, pt, win->med, pr->fixed ? "; planned" : o->fix ? ""
               : " (gsortd --audit-plan --fix plans it)");
    }
    audit_block_free(A);
    point_done(A);
    if (o->out)
        audit_point_line(o->out, label, b, cs, nc, pr, gs_now_s() - t0);
}

void audit_shape_points(actx *A, gs_db *db, int64_t db_id, const gs_plans *P,
                        gs_audit_stats *st, double *logsum, double *logafter, unsigned *nratio)
{
    const gs_audit_opts *o = A->o;
    const int cpu = (A->info->type & CL_DEVICE_TYPE_CPU) != 0;
    double t0 = gs_now_s();
    for (int kind = GS_PK_ROWS; kind < GS_PK_COUNT; kind++) {
        if (!audit_shape_wanted(o->shapes, gs_plans_kind_name((gs_plans_kind)kind)))
            continue;
        const grid *g = &kinds[kind].g[cpu];
        for (int i = 0; i < g->nb; i++) {
            int b = g->b[i];
            if ((o->max_log2 > 0 && b > o->max_log2) || (o->min_log2 > 0 && b < o->min_log2))
                continue;
            for (int k = 0; k < g->ns && !audit_cancelled(A); k++) {
                /* a row shorter than the whole; rows of a few keys are not
                 * planned below 2^6 */
                if (g->s[k] >= b)
                    continue;
                if (o->budget_s > 0 && gs_now_s() - t0 >= o->budget_s) {
                    st->unaudited++;
                    continue;
                }
                point_res pr;
                shape_point(A, db, db_id, P, (gs_plans_kind)kind, b, g->s[k], &pr);
                audit_count(st, &pr, 1, logsum, logafter, nratio);
            }
        }
    }
}
