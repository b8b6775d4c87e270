/* The plan audit's flat points (see gs_audit.h): per (shape, size) the
 * choices (the plan's row, the untuned route, each algorithm with its
 * tuned parameters), one warm-up run each (program builds, the block's
 * registration), one timed run each, after which a forced algorithm more
 * than PRUNE times behind the fastest is left with that one figure; then
 * `reps` rounds (more where runs are short: TARGET_MS) in which every
 * remaining choice runs once, so that drift in the machine's speed falls
 * on all of them alike (gs_audit_run.c); then the verdict, and with fix
 * the losing row replaced in the plan table. */
#include "config.h"
#include "gs_audit.h"
#include "gs_audit_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_grow.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_pcopy.h"
#include "gs_plans.h"
#include "gs_time.h"
#include "gs_tune.h"

#define DEFAULT_MIN_LOG2 10
#define DEFAULT_STEP 1

static const shape shapes[] = {
    { "u32", GS_DT_U32, GS_PL_NONE, 1, 0 },
    { "u64", GS_DT_U64, GS_PL_NONE, 1, 0 },
    { "f32", GS_DT_F32, GS_PL_NONE, 0, 0 },
    { "u32+u32", GS_DT_U32, GS_PL_U32, 1, 0 },
    { "argsort", GS_DT_U32, GS_PL_IDX32, 1, 0 },
    { "u16", GS_DT_U32, GS_PL_NONE, 1, GS_NW_U16 },
};

#define NSHAPES (sizeof shapes / sizeof shapes[0])

int audit_flat_known(const char *name)
{
    for (size_t i = 0; i < NSHAPES; i++)
        if (!strcmp(name, shapes[i].name))
            return 1;
    return 0;
}


/* The winner of a for this shape at the bucket nearest b (ties: the
 * larger), or NULL. */
static const gs_plans_entry *nearest_winner(const gs_plans *P, const gs_algo *a, int kb,
                                            gs_payload pl, int b)
{
    const gs_plans_entry *best = NULL;
    for (size_t i = 0; i < P->nwin; i++) {
        const gs_plans_entry *w = &P->win[i];
        if (w->algo != a || w->key_bits != kb || w->payload != pl)
            continue;
        int d = abs(w->bucket - b), bd = best ? abs(best->bucket - b) : 1 << 20;
        if (d < bd || (d == bd && w->bucket > best->bucket))
            best = w;
    }
    return best;
}

static int same(const audit_choice *c, const gs_algo *a, const gs_params *p)
{
    if (c->algo != a || c->params.count != p->count)
        return 0;
    for (int i = 0; i < p->count; i++)
        if (gs_params_get(&c->params, p->p[i].name, LONG_MIN) != p->p[i].value)
            return 0;
    return 1;
}

/* Write the faster choice into the plan row of (kb, pl, any caller, b). */
static int fix_row(gs_db *db, int64_t db_id, int kb, gs_payload pl, int b, const audit_choice *win,
                   const audit_choice *untuned, gs_err *err)
{
    char json[512];
    gs_params p = win->ran_params;
    int rc = gs_params_to_json(&p, json, sizeof json, err);
    const char *pn = gs_payload_name(pl);
    if (!rc)
        rc = gs_db_begin(db, err);
    if (!rc) {
        rc = gs_db_plan_set(db, db_id, kb, pn, 0, b, win->ran, json, win->med, err);
        if (!rc)
            rc = gs_db_plan_mark_source(db, db_id, kb, pn, 0, b, GS_DB_PLAN_AUDITED, err);
        if (!rc && audit_usable(untuned))
            rc = gs_db_plan_set_baseline(db, db_id, kb, pn, 0, b, untuned->ran, untuned->med,
                                         err);
        if (!rc)
            rc = gs_db_commit(db, err);
        else
            gs_db_rollback(db);
    }
    return rc;
}


/* What the untuned route would run for n keys of shape h, routed but not
 * run (the request's arrays are not read by routing): c->ran and
 * c->ran_params. 0, or the routing error. */
static int untuned_route(actx *A, const shape *h, size_t n, audit_choice *c)
{
    static char dummy[16];
    gs_job j;
    memset(&j, 0, sizeof j);
    j.req = (gs_sort_req){ .shape = { .dtype = h->dt, .payload = h->pl }, .n = n, .keys = dummy,
                           .values = h->pl == GS_PL_NONE ? NULL : dummy };
    audit_narrow_job(&j, h, NULL);
    j.device = A->o->device;
    j.untuned = 1;
    j.split_ask = -1;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_sched_route(A->s, &j, &e);
    if (rc < 0 || !j.algo)
        return rc < 0 ? rc : GS_EINVAL;
    snprintf(c->ran, sizeof c->ran, "%s", j.algo->name);
    c->ran_params = j.run_params;
    return 0;
}

/* The choices timed at point (h, 2^b), into cs (MAX_CHOICES of them):
 * the plan's row pe, the untuned route, then each algorithm's nearest
 * winner that is neither the plan's nor gone. Returns how many; 0 with
 * pr->same for a predicted row that runs what the untuned route runs (not
 * timed). */
static size_t point_choices(actx *A, const gs_plans *P, const shape *h, int b,
                            const gs_plans_entry *pe, const unsigned char *gone, audit_choice *cs,
                            point_res *pr)
{
    size_t n = (size_t)1 << b;
    int kb = shape_kb(h);
    size_t nc = 0;
    memset(cs, 0, MAX_CHOICES * sizeof *cs);
    snprintf(cs[nc].label, sizeof cs[nc].label, "plan");
    cs[nc].algo = pe->algo;
    cs[nc++].params = pe->params;
    snprintf(cs[nc++].label, sizeof cs[0].label, "untuned");
    if (pe->bucket != b || pe->source == GS_DB_PLAN_EXTRAPOLATED ||
        pe->source == GS_DB_PLAN_INTERPOLATED) {
        /* a predicted row: timed unless it runs what the untuned route runs */
        if (untuned_route(A, h, n, &cs[1]) == 0) {
            snprintf(cs[0].ran, sizeof cs[0].ran, "%s", pe->algo->name);
            cs[0].ran_params = pe->params;
            if (audit_same_run(A, &cs[0], &cs[1])) {
                pr->same = 1;
                return 0;
            }
        }
    }
    for (size_t i = 0; i < gs_algo_count() && nc < MAX_CHOICES; i++) {
        const gs_algo *a = gs_algo_at(i);
        const gs_plans_entry *w = nearest_winner(P, a, kb, h->pl, b);
        if (!w || gone[i] || same(&cs[0], a, &w->params))
            continue;
        snprintf(cs[nc].label, sizeof cs[nc].label, "%s", a->name);
        cs[nc].algo = a;
        cs[nc++].params = w->params;
    }
    return nc;
}

/* The shape whose plan rows h follows (f32: u32's), or NULL. */
static const shape *owner_of(const shape *h)
{
    for (size_t i = 0; i < NSHAPES; i++)
        if (shapes[i].own_rows && shape_kb(&shapes[i]) == shape_kb(h) &&
            shapes[i].pl == h->pl)
            return &shapes[i];
    return NULL;
}

/* win into shape h's plan row at 2^b (untuned: its baseline, where
 * usable); 1 when written, else said. */
static int replace_row(gs_db *db, int64_t db_id, const shape *h, int b, const audit_choice *win,
                       const audit_choice *untuned)
{
    gs_err e;
    gs_err_clear(&e);
    if (fix_row(db, db_id, shape_kb(h), h->pl, b, win, untuned, &e) == 0)
        return 1;
    GS_WARN("plan audit: cannot replace the plan row: %s", e.msg);
    return 0;
}

/* A shape that follows own's rows (f32 on u32's) and loses on one: the
 * row is shared, so alt replaces it only where own loses nothing by it:
 * the plan's choice and alt timed again, in turns, on own's keys, and
 * alt's median at most the noise (GS_TUNE_NOISE) above the plan's. The
 * float keys' host sort pays their encoding where a device sort does
 * not, so their crossover can lie below the integers' (H100: f32 2^14
 * host 0.254 against radix 0.200 ms, u32 0.205 against 0.211). 1 when
 * own's row was replaced; own_ms: own's two medians, said either way. */
static int shared_fix(actx *A, gs_db *db, int64_t db_id, const shape *own, int b,
                      const audit_choice *plan, const audit_choice *alt, double own_ms[2], int reps)
{
    if (!own || !audit_usable(alt) || audit_cancelled(A))
        return 0;
    size_t n = (size_t)1 << b;
    audit_choice two[2];
    memset(two, 0, sizeof two);
    snprintf(two[0].label, sizeof two[0].label, "%s", plan->label);
    two[0].algo = plan->algo;
    two[0].params = plan->params;
    snprintf(two[1].label, sizeof two[1].label, "%s", alt->label);
    two[1].algo = alt->algo;
    two[1].params = alt->params;
    gs_err e;
    gs_err_clear(&e);
    audit_block_free(A);                      /* the follower's keys are done with */
    if (audit_block_make(A, own, n, &e) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", A->o->device, own->name, b,
                e.msg);
        return 0;
    }
    audit_choice *p2[2] = { &two[0], &two[1] };
    audit_sample(A, own, n, &two[0], 0);      /* warm-ups */
    audit_sample(A, own, n, &two[1], 0);
    audit_rounds(A, own, n, p2, 2, reps);
    audit_block_free(A);
    if (!audit_usable(&two[0]) || !audit_usable(&two[1]))
        return 0;
    own_ms[0] = two[0].med;
    own_ms[1] = two[1].med;
    if (two[1].med > (1 + GS_TUNE_NOISE) * two[0].med)
        return 0;
    audit_choice none;                        /* own's baseline is not known here: kept */
    memset(&none, 0, sizeof none);
    return replace_row(db, db_id, own, b, &two[1], &none);
}

/* A plan row (h, 2^b) that loses to alt: replaced by alt's with --fix
 * (*Pp then reloaded), and said. A shape that follows another's rows has
 * the row replaced only where its owner loses nothing by it
 * (shared_fix). */
static void point_fix(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, const shape *h, int b,
                      const audit_choice *plan, const audit_choice *alt,
                      const audit_choice *unt, point_res *pr, int reps)
{
    const gs_audit_opts *o = A->o;
    const shape *own = h->own_rows ? h : owner_of(h);
    double own_ms[2] = { -1, -1 };
    if (o->fix && alt) {
        pr->fixed = h->own_rows ? replace_row(db, db_id, h, b, alt, unt)
                                : shared_fix(A, db, db_id, own, b, plan, alt, own_ms, reps);
        gs_plans *np = NULL;
        gs_err fe;
        gs_err_clear(&fe);
        /* the shapes after this one (f32 on the u32 rows) see the new row */
        if (pr->fixed && gs_plans_load(db, db_id, &np, &fe) == 0) {
            gs_plans_free(*Pp);
            *Pp = np;
        }
    }
    char pt[200], shared[200] = "";
    audit_params_text(&alt->ran_params, pt, sizeof pt);
    if (!h->own_rows && own && own_ms[0] > 0)
        snprintf(shared, sizeof shared, "; the %s row it follows %s (%s: the plan %.4f ms, "
                 "%s %.4f)", own->name, pr->fixed ? "replaced" : "kept: it would lose there",
                 own->name, own_ms[0], alt->label, own_ms[1]);
    else if (!h->own_rows)
        snprintf(shared, sizeof shared, " (this shape follows the %s rows: not replaced)",
                 own ? own->name : "other");
    /* a row replaced, or one of a shape that borrows another's rows:
     * counted in the summary; a row of its own left losing: a warning */
    gs_log(pr->fixed || !h->own_rows || pr->unproven ? GS_LOG_INFO : GS_LOG_WARN,
           "plan audit, device %d, %s n = 2^%d: the plan (%s, %.4f ms) %s %s "
            "(%s %s, %.4f ms)%s", o->device, h->name, b, plan->algo->name,
            audit_usable(plan) ? plan->med : -1.0,
            pr->unproven ? "is not faster than its baseline, the" : "loses to", alt->label,
            alt->ran, pt, alt->med,
            !h->own_rows ? shared
            : pr->fixed ? (pr->unproven ? "; the baseline put back" : "; row replaced")
            : o->fix ? "" : pr->unproven ? " (gsortd --audit-plan --fix puts the baseline back)"
            : " (gsortd --audit-plan --fix replaces it)");
}


/* gone[i]: algorithm i was pruned at a smaller size of this shape, and is
 * not forced again (a 4x gap does not close in 4x n). */
static void audit_point(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, const shape *h,
                        int b, unsigned char *gone, point_res *pr)
{
    const gs_audit_opts *o = A->o;
    size_t n = (size_t)1 << b;
    int reps = o->reps > 0 ? (o->reps > MAX_REPS / 2 ? MAX_REPS / 2 : o->reps) : 5;
    pr->plan_untuned = pr->plan_best = pr->after_untuned = -1;
    pr->losing = pr->fixed = pr->same = pr->unproven = 0;
    pr->what[0] = '\0';
    const gs_shape hs = { .dtype = h->dt, .payload = h->pl, .plan16 = h->nw != 0 };
    const gs_plans_entry *pe = gs_plans_lookup(*Pp, &hs, n);
    if (!pe)
        return;                         /* no plan for the shape: nothing to audit */
    audit_choice cs[MAX_CHOICES];
    size_t nc = point_choices(A, *Pp, h, b, pe, gone, cs, pr);
    if (pr->same)
        return;
    double t0 = gs_now_s();
    gs_err be;
    gs_err_clear(&be);
    if (audit_block_make(A, h, n, &be) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", o->device, h->name, b,
                be.msg);
        return;
    }
    reps = audit_time_choices(A, h, n, cs, nc, gone, reps);
    audit_choice *alt = NULL;
    pr->losing = audit_plan_loses(A, h, h->name, b, cs, nc, reps, pr, &alt);
    if (pr->losing || pr->unproven)
        point_fix(A, db, db_id, Pp, h, b, &cs[0], alt, &cs[1], pr, reps);
    /* what the plan costs where it differs from the untuned daemon: a row
     * that runs the same sort (from the start, or once its baseline is put
     * back) is the untuned daemon, and 1 whatever the noise between runs */
    const audit_choice *now = pr->fixed ? alt : &cs[0];
    if (pr->plan_untuned < 0)
        pr->after_untuned = -1;
    else if (now == &cs[1] || audit_same_run(A, now, &cs[1]))
        pr->after_untuned = 1.0;
    else
        pr->after_untuned = audit_usable(now) ? now->med / cs[1].med : pr->plan_untuned;
    audit_block_free(A);
    if (o->out)
        audit_point_line(o->out, h->name, b, cs, nc, pr, gs_now_s() - t0);
}

/* One (shape, size) point to audit, and its bytes. */
typedef struct apoint {
    int si, b;
    double cost;
} apoint;

static int cmp_cost(const void *x, const void *y)
{
    const apoint *a = x, *b = y;
    if (a->cost != b->cost)
        return a->cost < b->cost ? -1 : 1;
    return a->si != b->si ? a->si - b->si : a->b - b->b;
}

/* The sizes: every step-th from the first, and the largest whatever the step. */
static int next_size(int b, int step, int hi)
{
    return b < hi && b + step > hi ? hi : b + step;
}

/* The largest bucket the plan has a row for the shape at (measured or
 * predicted), or -1. */
static int planned_top(const gs_plans *P, const shape *h)
{
    int kb = shape_kb(h), top = -1;
    for (size_t i = 0; i < P->nplan; i++)
        if (P->plan[i].key_bits == kb && P->plan[i].payload == h->pl && P->plan[i].bucket > top)
            top = P->plan[i].bucket;
    return top;
}

int audit_flat_points(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, gs_audit_stats *st,
                      double *logsum, double *logafter, unsigned *nratio, gs_err *err)
{
    const gs_audit_opts *o = A->o;
    int rc = 0;
    int lo = o->min_log2 > 0 ? o->min_log2 : DEFAULT_MIN_LOG2;
    int step = o->step > 0 ? o->step : DEFAULT_STEP;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t host = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_C(1) << 32;
    /* The points: shape by shape, size by size; with a time budget the
     * cheapest first over all shapes, so that what the budget leaves out
     * is the largest sizes. */
    apoint *pts = NULL;
    size_t npts = 0, ptcap = 0;
    for (size_t si = 0; si < NSHAPES && !rc; si++) {
        const shape *h = &shapes[si];
        if (!audit_shape_wanted(o->shapes, h->name))
            continue;
        int hi = o->max_log2 > 0 ? o->max_log2 : planned_top(*Pp, h);
        size_t per = shape_ks(h) + gs_payload_size(h->pl);
        while (hi >= lo && (UINT64_C(1) << hi) * per * 4 > host / 2)
            hi--;                       /* the block, the input, the scratch */
        for (int b = lo; b <= hi; b = next_size(b, step, hi)) {
            if (gs_grow(&pts, &ptcap, npts, sizeof *pts, 64)) {
                rc = gs_err_set(err, GS_ENOMEM, "out of memory");
                break;
            }
            pts[npts++] = (apoint){ (int)si, b, ldexp((double)per, b) };
        }
    }
    if (o->budget_s > 0 && npts > 1)
        qsort(pts, npts, sizeof *pts, cmp_cost);
    double t0 = gs_now_s();
    unsigned char gone[NSHAPES][64];
    memset(gone, 0, sizeof gone);
    for (size_t k = 0; k < npts && !rc && !audit_cancelled(A); k++) {
        const shape *h = &shapes[pts[k].si];
        if (o->budget_s > 0 && gs_now_s() - t0 >= o->budget_s) {
            st->unaudited++;
            continue;
        }
        point_res pr;
        audit_point(A, db, db_id, Pp, h, pts[k].b, gone[pts[k].si], &pr);
        audit_count(st, &pr, h->own_rows, logsum, logafter, nratio);
    }
    free(pts);
    return rc;
}
