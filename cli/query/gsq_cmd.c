/* gsort-query's database commands: devices, winners, plan, trials and
 * plot (see gsq_cmd.h). Each turns gs_dbq rows into a gsq_out table
 * (every column for CSV and JSON, the readable ones in the table). */
#include "config.h"
#include "gsq_cmd.h"
#include "gsq_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_types.h"

#define PROG "gsort-query"

/* ---- shared pieces of the database commands ---- */

const gs_dbq_devcopy *gsq_cmd_device_find(const gs_dbq_devlist *l, int64_t id)
{
    static const gs_dbq_devcopy unknown = { .platform = "?", .name = "?", .driver = "?" };
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].id == id)
            return &l->v[i];
    return &unknown;
}

int gsq_cmd_oom(gs_err *err) { return gs_err_set(err, GS_ENOMEM, "out of memory"); }

int gsq_cmd_devices_load(gs_db *db, gs_dbq_devlist *l, gs_err *err)
{
    int rc = gs_dbq_devices(db, gs_dbq_devlist_add, l, err);
    return rc == GS_ENOMEM ? gsq_cmd_oom(err) : rc;
}

int gsq_cmd_select(gsq_cmd_opts *c, gs_db *db, int64_t *id, gs_err *err)
{
    *id = 0;
    return c->device ? gs_dbq_select(db, c->device, id, err) : 0;
}

void gsq_cmd_filter(const gsq_cmd_opts *c, gs_dbq_filter *f)
{
    gs_dbq_filter_init(f);
    f->algorithms = c->algorithms;
    f->key_bits = c->key_bits;
    f->payload = c->payload;
}

const char *gsq_cmd_keys(int key_bits) { return gs_kw_name(key_bits); }

/* "Database device", because gsortd --list-devices and --tune-all --device
 * number devices by OpenCL index, which the database does not keep. */
void gsq_cmd_heading(const gs_dbq_devcopy *d, char *buf, size_t len)
{
    snprintf(buf, len, "Database device %lld: %s (%s, driver %s)", (long long)d->id, d->name,
             d->platform, d->driver);
}

int gsq_cmd_print(gsq_cmd_opts *c, gsq_table *t, const char *note, const char *empty,
                  gs_err *err)
{
    char msg[256];
    if (c->fmt == GSQ_TABLE && !gsq_table_rows(t)) {
        printf("%s\n", empty);
        return 0;
    }
    if (c->fmt == GSQ_TABLE && note)
        printf("%s\n\n", note);
    int rc = gsq_print(stdout, t, c->fmt, c->width, msg, sizeof msg);
    return rc ? gs_err_set(err, rc, "%s", msg) : 0;
}

/* ---- devices ---- */

static const gsq_col device_cols[] = {
    { "id", "db id", GSQ_RIGHT },
    { "name", NULL, GSQ_SHRINK },
    { "platform", NULL, GSQ_NOTABLE },
    { "driver", NULL, GSQ_SHRINK },
    { "vendor", NULL, GSQ_NOTABLE },
    { "type", NULL, 0 },
    { "device_version", NULL, GSQ_NOTABLE },
    { "compute_units", "CUs", GSQ_RIGHT },
    { "max_wg_size", NULL, GSQ_NOTABLE },
    { "local_mem", NULL, GSQ_NOTABLE },
    { "global_mem", "memory", GSQ_RIGHT },
    { "max_alloc", NULL, GSQ_NOTABLE },
    { "profiling", NULL, GSQ_NOTABLE },
    { "first_seen", "first seen", 0 },
    { "last_seen", "last seen", 0 },
    { "plan_entries", "plan", GSQ_RIGHT },
    { "winners", NULL, GSQ_NOTABLE },
    { "trials", NULL, GSQ_RIGHT },
};

typedef struct devctx {
    gsq_table *t;
    const char *sel;
} devctx;

static int device_row(void *ud, const gs_dbq_device *d)
{
    devctx *x = ud;
    if (x->sel && !gs_dbq_matches(d, x->sel))
        return 0;
    gsq_table *t = x->t;
    char g[300], mem[32], f[16], l[16], plan[32];
    snprintf(g, sizeof g, "Platform: %s", d->platform);
    gsq_row(t, g);
    gsq_int(t, d->id);
    gsq_str(t, d->name);
    gsq_str(t, d->platform);
    gsq_str(t, d->driver);
    gsq_str(t, d->vendor);
    gsq_str(t, d->type);
    gsq_str(t, d->device_version);
    gsq_int(t, d->compute_units);
    gsq_int(t, d->max_wg_size);
    gsq_int(t, d->local_mem);
    gsq_intd(t, d->global_mem, gsq_bytes(d->global_mem, mem, sizeof mem));
    gsq_int(t, d->max_alloc);
    gsq_bool(t, d->profiling, NULL);
    /* The table shows the day; CSV and JSON the whole timestamp. */
    snprintf(f, sizeof f, "%.10s", d->first_seen);
    snprintf(l, sizeof l, "%.10s", d->last_seen);
    gsq_strd(t, d->first_seen, f);
    gsq_strd(t, d->last_seen, l);
    snprintf(plan, sizeof plan, "%lld", (long long)d->plan_entries);
    gsq_intd(t, d->plan_entries, d->plan_entries ? plan : "untuned");
    gsq_int(t, d->winners);
    gsq_int(t, d->trials);
    return 0;
}

int gsq_cmd_devices(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    gsq_table *t = gsq_table_new(device_cols, sizeof device_cols / sizeof device_cols[0]);
    if (!t)
        return gsq_cmd_oom(err);
    devctx x = { t, c->device };
    int rc = gs_dbq_devices(db, device_row, &x, err);
    if (!rc && c->device && !gsq_table_rows(t))
        rc = gs_dbq_select(db, c->device, &(int64_t){ 0 }, err);  /* its error lists them */
    if (!rc) {
        char empty[4300];
        snprintf(empty, sizeof empty, "No devices in %s: run gsortd --tune-all to tune this "
                 "machine's.", gs_db_path(db));
        rc = gsq_cmd_print(c, t, NULL, empty, err);
    }
    gsq_table_free(t);
    return rc;
}

/* ---- winners and plan ---- */

static const gsq_col winner_cols[] = {
    { "device_id", NULL, GSQ_NOTABLE },
    { "device", NULL, GSQ_NOTABLE },
    { "driver", NULL, GSQ_NOTABLE },
    { "algorithm", NULL, 0 },
    { "key_bits", "keys", 0 },
    { "payload", NULL, 0 },
    { "bucket", NULL, GSQ_NOTABLE },
    { "n", NULL, GSQ_RIGHT },
    { "params", NULL, GSQ_SHRINK },
    { "median_ms", "median ms", GSQ_RIGHT },
    { "gkeys_s", "Gkeys/s", GSQ_RIGHT },
    { "trial_id", NULL, GSQ_NOTABLE },
    { "updated", NULL, GSQ_NOTABLE },
};

static const gsq_col plan_cols[] = {
    { "device_id", NULL, GSQ_NOTABLE },
    { "device", NULL, GSQ_NOTABLE },
    { "driver", NULL, GSQ_NOTABLE },
    { "key_bits", "keys", 0 },
    { "payload", NULL, 0 },
    { "bucket", NULL, GSQ_NOTABLE },
    { "n", NULL, GSQ_RIGHT },
    { "stable", NULL, 0 },
    { "algorithm", NULL, 0 },
    { "params", NULL, GSQ_SHRINK },
    { "median_ms", "ms", GSQ_RIGHT },
    { "gkeys_s", "Gkeys/s", GSQ_NOTABLE },   /* the table has the baseline instead */
    { "source", NULL, 0 },
    { "baseline", NULL, GSQ_NOTABLE },
    { "x_baseline", "x untuned", GSQ_RIGHT },
    { "updated", NULL, GSQ_NOTABLE },
};

typedef struct choicectx {
    gsq_table *t;
    const gs_dbq_devlist *d;
    int plan;           /* plan rows (plan_cols), else winners (winner_cols) */
} choicectx;

/* A winners or plan row. A winner is one algorithm's best, so the algorithm
 * leads; a plan entry's algorithm is what was chosen for the shape. */
/* A row's start: its device's heading, id, name and driver. */
static void row_device(const choicectx *x, int64_t device_id)
{
    const gs_dbq_devcopy *d = gsq_cmd_device_find(x->d, device_id);
    char g[900];
    gsq_cmd_heading(d, g, sizeof g);
    gsq_row(x->t, g);
    gsq_int(x->t, device_id);
    gsq_str(x->t, d->name);
    gsq_str(x->t, d->driver);
}

/* A plan row's baseline and its time over the baseline's ("-" unknown). */
static void row_baseline(gsq_table *t, const gs_dbq_choice *ch)
{
    if (ch->baseline_algorithm && ch->baseline_algorithm[0] && ch->baseline_ms > 0) {
        gsq_str(t, ch->baseline_algorithm);
        gsq_num(t, ch->median_ms / ch->baseline_ms, 2);
    } else {
        gsq_null(t, "-");
        gsq_null(t, "-");
    }
}

static int choice_row(void *ud, const gs_dbq_choice *ch)
{
    choicectx *x = ud;
    gsq_table *t = x->t;
    uint64_t n = (uint64_t)1 << ch->bucket;
    char nb[32], pb[600];
    row_device(x, ch->device_id);
    if (!x->plan)
        gsq_str(t, ch->algorithm);
    gsq_intd(t, ch->key_bits, gsq_cmd_keys(ch->key_bits));
    gsq_str(t, ch->payload);
    gsq_int(t, ch->bucket);
    gsq_intd(t, (int64_t)n, gsq_pow2(n, nb, sizeof nb));
    if (x->plan) {
        gsq_bool(t, ch->stable, ch->stable ? "stable" : "any");
        gsq_str(t, ch->algorithm);
    }
    gsq_json(t, ch->params, gsq_params(ch->params, pb, sizeof pb));
    gsq_num(t, ch->median_ms, 4);
    gsq_num(t, gsq_gkeys(n, ch->median_ms), -1);
    if (!x->plan) {
        if (ch->trial_id)
            gsq_int(t, ch->trial_id);
        else
            gsq_null(t, "-");
    } else {
        /* measured at this size, or predicted past the largest measured one */
        gsq_str(t, ch->extrapolated == GS_DB_PLAN_INTERPOLATED ? "interp."
                  : ch->extrapolated == GS_DB_PLAN_AUDITED ? "audited"
                  : ch->extrapolated ? "extrap." : "measured");
        /* what the untuned daemon would run there, and this row's time over
           its time in the same tune (< 1: tuning pays) */
        row_baseline(t, ch);
    }
    gsq_str(t, ch->updated);
    return 0;
}

/* ---- the rows and top-k plan ---- */

static const gsq_col shape_cols[] = {
    { "device_id", NULL, GSQ_NOTABLE },
    { "device", NULL, GSQ_NOTABLE },
    { "driver", NULL, GSQ_NOTABLE },
    { "kind", NULL, 0 },
    { "key_bits", "keys", 0 },
    { "payload", NULL, 0 },
    { "bucket", NULL, GSQ_NOTABLE },
    { "n", NULL, GSQ_RIGHT },
    { "sub", NULL, GSQ_NOTABLE },
    { "row_or_k", "row / k", GSQ_RIGHT },
    { "algorithm", NULL, 0 },
    { "params", NULL, GSQ_SHRINK },
    { "median_ms", "ms", GSQ_RIGHT },
    { "baseline", NULL, 0 },
    { "x_baseline", "x untuned", GSQ_RIGHT },
    { "updated", NULL, GSQ_NOTABLE },
};

static int shape_row(void *ud, const gs_dbq_choice *ch)
{
    choicectx *x = ud;
    gsq_table *t = x->t;
    uint64_t n = (uint64_t)1 << ch->bucket, m = (uint64_t)1 << ch->sub;
    char nb[32], mb[32], pb[600];
    row_device(x, ch->device_id);
    gsq_str(t, ch->kind);
    gsq_intd(t, ch->key_bits, gsq_cmd_keys(ch->key_bits));
    gsq_str(t, ch->payload);
    gsq_int(t, ch->bucket);
    gsq_intd(t, (int64_t)n, gsq_pow2(n, nb, sizeof nb));
    gsq_int(t, ch->sub);
    gsq_intd(t, (int64_t)m, gsq_pow2(m, mb, sizeof mb));
    gsq_str(t, ch->algorithm);
    gsq_json(t, ch->params, gsq_params(ch->params, pb, sizeof pb));
    gsq_num(t, ch->median_ms, 4);
    row_baseline(t, ch);
    gsq_str(t, ch->updated);
    return 0;
}

/* What choices() lists: the winners, the plan, or the rows and top-k plan. */
enum { C_WINNERS, C_PLAN, C_SHAPES };

static int choices(gsq_cmd_opts *c, gs_db *db, int what, gs_err *err)
{
    static const char *const titles[] = {
        "Winners: the fastest parameters per algorithm, key width, payload\n"
        "and size (median ms: kernel time from profiling events; host:\n"
        "wall clock)",
        "Plan: the algorithm that serves each request shape and size\n"
        "(ms: end to end, with transfers; stable: for callers that need a\n"
        "stable sort, any: for the others)",
        "Rows and top-k plan: the route measured fastest for rows of a 2-D\n"
        "array (row: a row's length) and top-k (k), per size of the whole\n"
        "request (ms: end to end through the daemon; x untuned: over the\n"
        "untuned daemon's route, same measurement)",
    };
    gs_dbq_devlist d = { 0 };
    gs_dbq_filter f;
    gsq_cmd_filter(c, &f);
    int rc = gsq_cmd_devices_load(db, &d, err);
    if (!rc)
        rc = gsq_cmd_select(c, db, &f.device_id, err);
    const gsq_col *cols = what == C_PLAN ? plan_cols : what == C_SHAPES ? shape_cols : winner_cols;
    size_t nc = what == C_PLAN     ? sizeof plan_cols / sizeof plan_cols[0]
                : what == C_SHAPES ? sizeof shape_cols / sizeof shape_cols[0]
                                   : sizeof winner_cols / sizeof winner_cols[0];
    gsq_table *t = rc ? NULL : gsq_table_new(cols, nc);
    if (!rc && !t)
        rc = gsq_cmd_oom(err);
    choicectx x = { t, &d, what != C_WINNERS };
    if (!rc)
        rc = what == C_PLAN     ? gs_dbq_plan(db, &f, choice_row, &x, err)
             : what == C_SHAPES ? gs_dbq_shapes(db, &f, shape_row, &x, err)
                                : gs_dbq_winners(db, &f, choice_row, &x, err);
    if (!rc) {
        char empty[4300];
        const int some = c->device || c->algorithms || c->key_bits || c->payload;
        if (what == C_SHAPES)
            snprintf(empty, sizeof empty, "No rows or top-k plan entries in %s%s: gsortd "
                     "--tune-all plans them (its audit), or gsortd --audit-plan --fix.",
                     gs_db_path(db), some ? " that match" : "");
        else
            snprintf(empty, sizeof empty, "No %s in %s%s: run gsortd --tune-all to tune.",
                     what == C_PLAN ? "plan entries" : "winners", gs_db_path(db),
                     some ? " that match" : "");
        rc = gsq_cmd_print(c, t, titles[what], empty, err);
    }
    gsq_table_free(t);
    free(d.v);
    return rc;
}

int gsq_cmd_winners(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    return choices(c, db, C_WINNERS, err);
}

int gsq_cmd_plan(gsq_cmd_opts *c, gs_db *db, gs_err *err) { return choices(c, db, C_PLAN, err); }

int gsq_cmd_shapes(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    return choices(c, db, C_SHAPES, err);
}

/* ---- trials ---- */

static const gsq_col trial_cols[] = {
    { "id", NULL, GSQ_RIGHT },
    { "device_id", "dev", GSQ_RIGHT },
    { "device", NULL, GSQ_NOTABLE },
    { "driver", NULL, GSQ_NOTABLE },
    { "algorithm", NULL, 0 },
    { "key_bits", "keys", 0 },
    { "payload", NULL, 0 },
    { "n", NULL, GSQ_RIGHT },
    { "distribution", "input", 0 },
    { "params", NULL, GSQ_SHRINK },
    { "median_ms", "median ms", GSQ_RIGHT },
    { "min_ms", NULL, GSQ_NOTABLE },
    { "max_ms", NULL, GSQ_NOTABLE },
    { "reps", NULL, GSQ_NOTABLE },
    { "gkeys_s", "Gkeys/s", GSQ_RIGHT },
    { "valid", NULL, GSQ_NOTABLE },
    { "reason", "result", GSQ_SHRINK },
    { "code_id", NULL, GSQ_NOTABLE },
    { "created", NULL, GSQ_NOTABLE },
};

static int trial_row(void *ud, const gs_dbq_trial *tr)
{
    choicectx *x = ud;
    gsq_table *t = x->t;
    const gs_dbq_devcopy *d = gsq_cmd_device_find(x->d, tr->device_id);
    char nb[32], pb[600], res[1100];
    gsq_row(t, NULL);
    gsq_int(t, tr->id);
    gsq_int(t, tr->device_id);
    gsq_str(t, d->name);
    gsq_str(t, d->driver);
    gsq_str(t, tr->algorithm);
    gsq_intd(t, tr->key_bits, gsq_cmd_keys(tr->key_bits));
    gsq_str(t, tr->payload);
    gsq_intd(t, (int64_t)tr->n, gsq_pow2(tr->n, nb, sizeof nb));
    gsq_str(t, tr->distribution);
    gsq_json(t, tr->params, gsq_params(tr->params, pb, sizeof pb));
    if (tr->timed) {
        gsq_num(t, tr->median_ms, 4);
        gsq_num(t, tr->min_ms, 4);
        gsq_num(t, tr->max_ms, 4);
    } else {
        gsq_null(t, "-");
        gsq_null(t, "-");
        gsq_null(t, "-");
    }
    gsq_int(t, tr->reps);
    if (tr->timed && tr->valid)
        gsq_num(t, gsq_gkeys(tr->n, tr->median_ms), -1);
    else
        gsq_null(t, "-");
    gsq_bool(t, tr->valid, NULL);
    snprintf(res, sizeof res, tr->valid ? "ok" : "failed: %s", tr->reason[0] ? tr->reason : "?");
    gsq_strd(t, tr->reason, res);
    gsq_str(t, tr->code_id);
    gsq_str(t, tr->created);
    return 0;
}

int gsq_cmd_trials(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    gs_dbq_devlist d = { 0 };
    gs_dbq_filter f;
    gsq_cmd_filter(c, &f);
    f.n = c->n;
    f.valid = c->valid;
    f.distribution = c->distribution;
    f.limit = c->limit;
    int rc = gsq_cmd_devices_load(db, &d, err);
    if (!rc)
        rc = gsq_cmd_select(c, db, &f.device_id, err);
    gsq_table *t = rc ? NULL : gsq_table_new(trial_cols, sizeof trial_cols / sizeof trial_cols[0]);
    if (!rc && !t)
        rc = gsq_cmd_oom(err);
    choicectx x = { t, &d, 0 };
    int64_t total = 0;
    if (!rc)
        rc = gs_dbq_trials(db, &f, trial_row, &x, err);
    if (!rc)
        rc = gs_dbq_trial_count(db, &f, &total, err);
    if (!rc) {
        char empty[4300];
        snprintf(empty, sizeof empty, "No trials in %s%s.", gs_db_path(db),
                 c->device || c->algorithms || c->key_bits || c->payload || c->n ||
                 c->valid >= 0 || c->distribution ? " that match"
                                                  : ": run gsortd --tune-all to tune");
        rc = gsq_cmd_print(c, t, NULL, empty, err);
    }
    if (!rc && c->fmt == GSQ_TABLE && (int64_t)gsq_table_rows(t) < total)
        printf("\n(%zu of %lld rows, newest first; --limit 0 shows all)\n", gsq_table_rows(t),
               (long long)total);
    gsq_table_free(t);
    free(d.v);
    return rc;
}

/* ---- plot ---- */

static const gsq_col point_cols[] = {
    { "algorithm", NULL, 0 },
    { "n", NULL, GSQ_RIGHT },
    { "log2_n", NULL, GSQ_RIGHT },
    { "median_ms", "median ms", GSQ_RIGHT },
    { "gkeys_s", "Gkeys/s", GSQ_RIGHT },
    { "params", NULL, 0 },
    { "distribution", NULL, 0 },
    { "trial_id", NULL, GSQ_RIGHT },
};

typedef struct plotctx {
    gsq_plot *p;
    gsq_table *t;
    gs_err *err;
    size_t points;
} plotctx;

static int plot_point(void *ud, const gs_dbq_point *pt)
{
    plotctx *x = ud;
    int rc = gsq_plot_add(x->p, pt->algorithm, pt->n, pt->median_ms, x->err);
    if (rc)
        return rc;
    x->points++;
    gsq_table *t = x->t;
    gsq_row(t, NULL);
    gsq_str(t, pt->algorithm);
    gsq_int(t, (int64_t)pt->n);
    if ((pt->n & (pt->n - 1)) == 0)
        gsq_int(t, gs_db_bucket(pt->n));
    else
        gsq_num(t, log2((double)pt->n), 3);
    gsq_num(t, pt->median_ms, 4);
    gsq_num(t, gsq_gkeys(pt->n, pt->median_ms), -1);
    gsq_json(t, pt->params, NULL);
    gsq_str(t, pt->distribution);
    gsq_int(t, pt->trial_id);
    return 0;
}

int gsq_cmd_plot(gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    if (!c->output && c->fmt == GSQ_TABLE) {
        fprintf(stderr, PROG ": plot needs -o FILE.svg, -o FILE.png or -o - (SVG on standard "
                        "output), or --csv/--json for the points\n");
        return 2;
    }
    if (c->output && !strcmp(c->output, "-") && c->fmt != GSQ_TABLE) {
        fprintf(stderr, PROG ": plot -o - writes the SVG to standard output, where --csv or "
                        "--json would print the points: use one or the other\n");
        return 2;
    }
    gs_dbq_filter f;
    gsq_cmd_filter(c, &f);
    if (!f.key_bits)
        f.key_bits = 32;
    if (!f.payload)
        f.payload = "none";
    int rc = gs_dbq_select(db, c->device, &f.device_id, err);
    gs_dbq_devlist d = { 0 };
    if (!rc && (rc = gs_dbq_device_get(db, f.device_id, gs_dbq_devlist_add, &d, err)) == GS_ENOMEM)
        rc = gsq_cmd_oom(err);
    if (rc) {
        free(d.v);
        return rc;
    }
    gsq_plot p = { .ns = 0 };
    gsq_table *t = gsq_table_new(point_cols, sizeof point_cols / sizeof point_cols[0]);
    plotctx x = { &p, t, err, 0 };
    if (!t)
        rc = gsq_cmd_oom(err);
    if (!rc)
        rc = gs_dbq_points(db, &f, c->e2e, plot_point, &x, err);
    const gs_dbq_devcopy *dv = &d.v[0];
    if (!rc && !x.points)
        rc = gs_err_set(err, GS_ENOTFOUND,
                        "no valid %s trials of device %lld (%s) with %s keys and payload %s%s in "
                        "%s: nothing to plot", c->e2e ? "end-to-end or random" : "random",
                        (long long)dv->id, dv->name, gsq_cmd_keys(f.key_bits), f.payload,
                        c->algorithms ? " for those algorithms" : "", gs_db_path(db));
    if (!rc) {
        snprintf(p.title, sizeof p.title, "Sort throughput on %s", dv->name);
        snprintf(p.subtitle, sizeof p.subtitle,
                 "%s keys, payload %s; %s; fastest valid trial per n; driver %s",
                 gsq_cmd_keys(f.key_bits), f.payload,
                 c->e2e ? "end to end (with transfers) where measured" :
                          "kernel time (host: wall clock)", dv->driver);
        if (c->output)
            rc = gsq_plot_write(&p, c->output, err);
        if (!rc && c->output && strcmp(c->output, "-") != 0)
            fprintf(stderr, PROG ": wrote %s (%zu algorithms, %zu points)\n", c->output, p.ns,
                    x.points);
    }
    if (!rc && c->fmt != GSQ_TABLE) {
        char msg[256];
        if ((rc = gsq_print(stdout, t, c->fmt, 0, msg, sizeof msg)) != 0)
            gs_err_set(err, rc, "%s", msg);
    }
    gsq_table_free(t);
    gsq_plot_free(&p);
    free(d.v);
    return rc;
}
