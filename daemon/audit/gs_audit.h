/* The plan audit (issue 33): a tuned plan never loses to the untuned
 * defaults. For each request shape (u32, u64 and f32 keys alone, u32 keys
 * with u32 values, argsort of u32 keys) at every size the plan has a row
 * for, it times end to end through the daemon's own scheduler and data
 * path (a memfd block, registered for device copies as a client's
 * gsort_alloc block is) the plan's choice, the untuned daemon's choice
 * (gs_job.untuned) and each algorithm at its tuned best, interleaved in
 * rounds in the same process; a predicted row that runs what the untuned
 * route runs is not timed. A point where another choice beats the plan by
 * more than the noise (3% of the median and a rank test over the runs) is
 * measured again; where it still does, the plan row is replaced by the
 * faster choice when `fix` is set, else reported. The
 * table and a summary (the geometric mean of plan / untuned) go to `out`.
 * Then the rows and top-k points (gs_audit_shapes.c): each route timed
 * the same way at a small grid, and with `fix` the fastest written as the
 * point's row of the rows and top-k plan (shape_plan).
 * It runs after `gsortd --tune-all`, alone as `gsortd --audit-plan`
 * (gs_audit_cmd.c), and before the daemon swaps in a plan it tuned in
 * the background (gs_retune.c). */
#ifndef GS_AUDIT_H
#define GS_AUDIT_H

#include <stdatomic.h>
#include <stdio.h>

#include "gs_db.h"
#include "gs_pin.h"
#include "gs_sched.h"

typedef struct gs_audit_opts {
    int device;               /* the scheduler's device index to audit */
    int min_log2;             /* 0: 2^10 */
    int max_log2;             /* 0: the largest size the plan has a row for */
    int step;                 /* sizes 2^min, 2^(min+step), ... and the largest; 0: 1 */
    int reps;                 /* timed runs per choice and round; 0: 5 */
    int fix;                  /* write the faster choice into a losing plan row */
    const char *shapes;       /* "u32,u64,f32,u32+u32,argsort,u16,rows,topk" (NULL: all) */
    gs_pin_budget *pins;      /* where the block's registrations count */
    FILE *out;                /* the table (NULL: only the log) */
    double budget_s;          /* > 0: start no point after this many seconds; the
                                 points left are counted in gs_audit_stats.unaudited */
    _Atomic int *cancel;      /* set: stop between runs (daemon shutdown) */
} gs_audit_opts;

/* Where an audit's time went (seconds): the runs (routing to done, the
 * program builds of warm-ups included: warm_s), copying the input in before each,
 * checking the output's order, making the inputs. */
typedef struct gs_audit_times {
    double total_s, run_s, copy_s, check_s, input_s;
    double warm_s;            /* of run_s: each choice's first run at a point */
    unsigned runs;
} gs_audit_times;

typedef struct gs_audit_stats {
    unsigned points;          /* (shape, size) points timed */
    unsigned losing;          /* where the plan lost after measuring again */
    unsigned fixed;           /* of those, plan rows replaced */
    unsigned unfixable;       /* losing rows of their own shape not replaced (no fix
                                 asked, or the write failed); f32, which shares the
                                 u32 rows, is reported and not counted here */
    double geo_untuned;       /* geometric mean of plan / untuned (0: none) */
    double geo_after, worst_after;  /* the same with each replaced row's new plan */
    unsigned unproven;        /* plans slower than the untuned route by more than the
                                 noise, not by the rank test: not faster than their
                                 baseline (not in losing) */
    unsigned reverted;        /* of those, rows given back their baseline (fix) */
    double worst_untuned;     /* the largest plan / untuned */
    double worst_best;        /* the largest plan / the best forced algorithm */
    unsigned same;            /* predicted rows not timed: they run what the untuned
                                 route runs */
    unsigned unaudited;       /* points left when budget_s ran out */
    unsigned borrowed_losing; /* losing points of a shape served by another's rows (f32
                                 by u32's) left losing: not in unfixable (with fix, the
                                 row is replaced only where its owner loses nothing) */
    char worst[200];          /* the worst plan / untuned point: shape, size, both
                                 routes' times, and why it stands when it does */
    gs_audit_times times;
} gs_audit_stats;

/* The audit's time after `gsortd --tune-all --quick` on a CPU device
 * (seconds; a GPU is audited whole): a quick tune is for a first look, and
 * `gsortd --audit-plan --fix` audits every row. */
#define GS_AUDIT_QUICK_BUDGET 6.0

/* Audit device o->device's plan in db (database device db_id) on the
 * running scheduler s (this thread becomes the submitting loop while it
 * runs). 0 with *st filled, GS_EINVAL for bad options, or another error
 * (the database, memory). A plan that lost is not an error: see st. */
int gs_audit_device(gs_sched *s, gs_db *db, int64_t db_id, const gs_audit_opts *o,
                    gs_audit_stats *st, gs_err *err);

/* Check a --shapes list; GS_EINVAL naming the bad one. */
int gs_audit_shapes_check(const char *list, gs_err *err);

/* ---- the command (gs_audit_cmd.c) ---- */

struct gs_daemon_args;
typedef struct gs_audit_args {
    const struct gs_daemon_args *daemon;  /* --config, -o: the daemon whose choices are timed */
    const char *db_path;      /* NULL: the configuration's, else the default database */
    long device;              /* -1: every device with a plan */
    gs_audit_opts o;          /* sizes, reps, fix, shapes (device, pins, out: set here) */
    int brief;                /* one summary line per device instead of the table */
} gs_audit_args;

/* `gsortd --audit-plan`: the exit status (0 passed, 3 rows still lose, 1
 * a runtime failure, 2 a bad configuration). */
int gs_audit_main(const gs_audit_args *a);

#endif
