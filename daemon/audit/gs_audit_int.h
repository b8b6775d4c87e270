/* Private to the plan audit (gs_audit_device.c: one device's audit;
 * gs_audit_flat.c: flat arrays; gs_audit_shapes.c: rows and top-k;
 * gs_audit_run.c: timing one choice), as libuv's
 * internal.h: a point's shape and choices, the audit's state, and the
 * harness that runs a choice through the scheduler and compares runs.
 * Names here start with audit_ (types and constants aside). Include
 * gs_audit.h before it (its types; included here, it would make the two
 * headers a cycle). */
#ifndef GS_AUDIT_INT_H
#define GS_AUDIT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "gs_pin.h"
#include "gs_plans.h"
#include "gs_sched.h"

#define MAX_REPS 32
#define MAX_CHOICES 16
/* A forced algorithm this many times behind the fastest first run is timed
 * no further at that point. */
#define PRUNE 4.0
/* A point's rounds: at least the asked reps, more (up to MAX_REPS / 2)
 * where runs are short, until each choice has about this much time. */
#define TARGET_MS 20.0
/* The rank test's bar: one-sided Mann-Whitney, normal approximation,
 * z above this (p < 0.01). */
#define RANK_Z 2.326

typedef struct shape {
    const char *name;
    gs_dtype dt;
    gs_payload pl;
    int own_rows;             /* the plan rows are this shape's (f32 uses u32's) */
    int nw;                   /* u16: 16-bit keys (gs_narrow.h), the 16-bit class's rows,
                                 sorted as the daemon sorts a client's (gs_narrow_sort.h) */
} shape;

/* A shape's bytes per key and the key width its plan rows have */
static inline size_t shape_ks(const shape *h) { return h->nw ? 2 : gs_dtype_size(h->dt); }
static inline int shape_kb(const shape *h) { return h->nw ? 16 : (int)gs_dtype_size(h->dt) * 8; }

typedef struct audit_choice {
    char label[40];           /* "plan", "untuned", or the forced algorithm */
    const gs_algo *algo;      /* forced; NULL: the untuned route */
    gs_params params;
    double t[MAX_REPS];
    int nt;
    double med, mn;
    int failed, pruned;
    int checked;              /* runs whose output was checked for order */
    char why[200];
    char ran[32];             /* what ran, as routed */
    gs_params ran_params;
    int routed;               /* algo NULL: 1 the daemon's own route (its plan), 0 the
                                 untuned route */
    int auto_params;          /* algo set: its parameters are the scheduler's (its
                                 winner at the size, else its defaults) */
} audit_choice;

typedef struct actx {
    gs_sched *s;
    const gs_audit_opts *o;
    const gs_dev_info *info;  /* the device audited */
    uv_loop_t loop;
    gs_sched_sink sink;
    int done;
    void *base;               /* the block: keys, then values at voff */
    size_t len, voff;
    gs_pin pin;
    void *src_k, *src_v;      /* the input, copied in before every run */
    uint32_t *words;          /* 16-bit keys: the words of the daemon's narrow sort */
    gs_audit_times tm;        /* where the audit's time went */
    /* the request's geometry beyond one flat array (gs_audit_shapes.c):
     * rows > 1 equal rows, k > 0 top-k of each, nseg > 0 segments; check:
     * the output's test
     * for them (NULL: the keys in order) */
    uint64_t rows, k;
    uint64_t nseg, *offs;     /* segments: nseg of them at offs (nseg + 1) */
    int (*check)(struct actx *A, const shape *h, size_t n);
} actx;

typedef struct point_res {
    double plan_untuned, plan_best;   /* ratios; < 0: not known */
    double after_untuned;     /* plan / untuned once a replaced row is the new plan's */
    int unproven;             /* slower than the untuned route by more than the noise,
                                 though not by the rank test: the baseline stands */
    int losing, fixed;
    int same;                 /* a predicted row that runs what the untuned route
                                 runs: not timed */
    char what[200];           /* the point, both routes' times, and why a plan
                                 slower than the untuned route stands */
} point_res;

/* ---- gs_audit_run.c ---- */

/* The scheduler sink's callback: the job A waits for is done. */
void audit_on_done(gs_job *j, void *ud);
/* A memfd block for n keys of shape h (a client's gsort_alloc block),
 * registered as the daemon registers one, and the input: random keys,
 * values their input index. Freed by audit_block_free. */
int audit_block_make(actx *A, const shape *h, size_t n, gs_err *err);
void audit_block_free(actx *A);
/* A job of 16-bit keys as the daemon makes one (gs_narrow_job_init). */
void audit_narrow_job(gs_job *j, const shape *h, uint32_t *words);
int audit_cancelled(const actx *A);
/* Run c once more through the scheduler, into its samples (keep 0: a
 * warm-up, not kept); a failure marks c failed with its reason. */
void audit_sample(actx *A, const shape *h, size_t n, audit_choice *c, int keep);
void audit_summarize(audit_choice *c);
int audit_usable(const audit_choice *c);
/* Whether a is faster than b by more than the noise (GS_TUNE_NOISE and a
 * one-sided rank test over their runs). */
int audit_faster(const audit_choice *a, const audit_choice *b);
/* reps rounds over cs, every other one in reverse order. */
void audit_rounds(actx *A, const shape *h, size_t n, audit_choice **cs, size_t nc, int reps);
/* Whether x and y ran the same algorithm with the same parameters. */
int audit_same_run(const actx *A, const audit_choice *x, const audit_choice *y);
void audit_params_text(const gs_params *p, char *buf, size_t len);
/* Warm-up and a first run of each choice, the forced ones (cs[2..]) more
 * than PRUNE times the fastest pruned (gone[] their algorithm), then the
 * rounds; returns the reps they took. */
int audit_time_choices(actx *A, const shape *h, size_t n, audit_choice *cs, size_t nc,
                       unsigned char *gone, int reps);

/* Does the plan (cs[0]) lose to the fastest other choice (*altp), timed
 * again with it alone so that a lucky round does not rewrite the plan? A
 * plan that failed loses to any choice that ran. A plan slower than the
 * untuned route (cs[1]) by more than the noise, though not by the rank
 * test, is not faster than its baseline (pr->unproven, *altp the untuned
 * route): it loses only with fix, where the row is the shape's own. Also
 * the plan's ratios to the untuned route and to the fastest forced
 * choice, and what the point says (label: its shape), into pr. */
int audit_plan_loses(actx *A, const shape *h, const char *label, int b, audit_choice *cs,
                     size_t nc, int reps, point_res *pr, audit_choice **altp);
/* Whether `name` is in the --shapes list (NULL: every shape). */
int audit_shape_wanted(const char *list, const char *name);
/* A point's verdict into st and the running sums of log(plan / untuned)
 * before and after its row was replaced (own_rows: the row is the
 * shape's own). */
void audit_count(gs_audit_stats *st, const point_res *pr, int own_rows, double *logsum,
                 double *logafter, unsigned *nratio);
/* The audit table's header line and a point's line. */
void audit_point_line(FILE *out, const char *name, int b, const audit_choice *cs, size_t nc,
                      const point_res *pr, double secs);

/* ---- gs_audit_flat.c ---- */

/* Whether `name` is one of the flat shapes (u32, u64, f32, u32+u32,
 * argsort, u16). */
int audit_flat_known(const char *name);
/* The flat points of o->shapes: every size from o->min_log2 (every
 * o->step-th) up to the largest the plan has a row for, or o->max_log2;
 * the cheapest first under a time bound. *Pp is reloaded where a row is
 * replaced. Counted into st and the sums (audit_count). */
int audit_flat_points(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, gs_audit_stats *st,
                      double *logsum, double *logafter, unsigned *nratio, gs_err *err);

/* ---- gs_audit_shapes.c ---- */

/* The rows and top-k points of device A->o->device (the shapes "rows" and
 * "topk" of o->shapes; P: its plan, whose rows and top-k rows are timed):
 * each route timed as the flat points' choices are,
 * and with o->fix the fastest written as the point's row of the rows and
 * top-k plan (shape_plan); counted into st as the flat points are. */
void audit_shape_points(actx *A, gs_db *db, int64_t db_id, const gs_plans *P,
                        gs_audit_stats *st, double *logsum, double *logafter, unsigned *nratio);
/* Whether `name` is one of those shapes. */
int audit_shape_known(const char *name);

#endif
