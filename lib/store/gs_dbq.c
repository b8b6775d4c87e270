/* Implementation of the read-only tuning-database queries (see gs_dbq.h):
 * each builds its WHERE clause from the filter, binds the values in order
 * and hands every row to the caller's callback. */
#include "config.h"
#include "gs_dbq.h"
#include "gs_grow.h"

#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int gs_dbq_open(gs_db **out, const char *path, gs_err *err)
{
    *out = NULL;
    char def[4096];
    if (!path) {
        int rc = gs_db_default_path(def, sizeof def, err);
        if (rc)
            return rc;
        path = def;
    }
    /* sqlite would only say "unable to open database file"; say which. */
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gs_err_set(err, GS_ENOTFOUND, "no tuning database at %s", path);
    if (S_ISDIR(sb.st_mode))
        return gs_err_set(err, GS_EIO, "database %s is a directory", path);
    if (sb.st_size == 0)
        return gs_err_set(err, GS_ECORRUPT, "database %s is empty: not a gsortd tuning database",
                          path);
    return gs_db_open(out, path, GS_DB_READONLY, err);
}

void gs_dbq_filter_init(gs_dbq_filter *f)
{
    memset(f, 0, sizeof *f);
    f->stable = -1;
    f->valid = -1;
}

/* ---- statements ---- */

static int fail(gs_db *db, gs_err *err, const char *what)
{
    sqlite3 *h = gs_db_handle(db);
    int c = sqlite3_errcode(h) & 0xff;
    /* A page the open's bounded quick_check did not reach (a large file). */
    if (c == SQLITE_CORRUPT || c == SQLITE_NOTADB)
        return gs_err_set(err, GS_ECORRUPT, "database %s is damaged (%s: %s): move it aside and "
                          "tune again (gsortd --tune-all)", gs_db_path(db), what,
                          sqlite3_errmsg(h));
    return gs_err_set(err, GS_EIO, "database %s: %s: %s", gs_db_path(db), what,
                      sqlite3_errmsg(h));
}

/* A query under construction: SQL text plus the values for its "?"s. */
typedef struct qbval {
    int text;
    int64_t i;
    const char *s;
} qbval;

typedef struct qb {
    char sql[2048];
    size_t len;
    int nb;
    qbval b[16];
    int overflow;
} qb;

static void qb_sql(qb *q, const char *s)
{
    size_t l = strlen(s);
    if (q->len + l + 1 > sizeof q->sql) {
        q->overflow = 1;
        return;
    }
    memcpy(q->sql + q->len, s, l + 1);
    q->len += l;
}

/* Append SQL text holding one "?"; its value goes in the slot returned
 * (NULL when the query is full). */
static qbval *qb_arg(qb *q, const char *s)
{
    if (q->nb == (int)(sizeof q->b / sizeof q->b[0])) {
        q->overflow = 1;
        return NULL;
    }
    qb_sql(q, s);
    return &q->b[q->nb++];
}

static void qb_int(qb *q, const char *s, int64_t v)
{
    qbval *b = qb_arg(q, s);
    if (b)
        *b = (qbval){ .i = v };
}

static void qb_text(qb *q, const char *s, const char *v)
{
    qbval *b = qb_arg(q, s);
    if (b)
        *b = (qbval){ .text = 1, .s = v };
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* Prepare the query, bind its values and call `row` on each result row. */
static int qb_run(gs_db *db, const qb *q, int (*row)(sqlite3_stmt *, void *), void *ud,
                  gs_err *err)
{
    if (q->overflow)
        return gs_err_set(err, GS_ETOOBIG, "query too long");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gs_db_handle(db), q->sql, -1, &st, NULL) != SQLITE_OK)
        return fail(db, err, "preparing a query");
    for (int i = 0; i < q->nb; i++) {
        if (q->b[i].text)
            sqlite3_bind_text(st, i + 1, q->b[i].s, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_int64(st, i + 1, q->b[i].i);
    }
    int rc = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = row(st, ud)) != 0)
            break;
    if (!rc && step != SQLITE_DONE)
        rc = fail(db, err, "reading");
    sqlite3_finalize(st);
    return rc;
}

/* The caller's callback and data, as the row adapters below get them. */
typedef struct rowcb {
    union {
        gs_dbq_device_fn device;
        gs_dbq_choice_fn choice;
        gs_dbq_trial_fn trial;
        gs_dbq_point_fn point;
    } fn;
    void *ud;
    int plan;       /* choice rows come from the plan table, which has a stable column */
    int rows;       /* rows handed over so far */
} rowcb;

/* ---- devices ---- */

/* A device row with its counts. Its trials are what the tuner counts as
 * measured: the end-to-end row written beside a device trial
 * (GS_DB_DIST_E2E) belongs to that trial and is not counted again. */
#define DEVICE_COLS \
    "SELECT d.id, d.platform, d.name, d.driver, d.vendor, d.type, d.device_version," \
    " d.first_seen, d.last_seen, d.compute_units, d.max_wg_size, d.local_mem, d.global_mem," \
    " d.max_alloc, d.profiling," \
    " (SELECT count(*) FROM plan p WHERE p.device_id = d.id)," \
    " (SELECT count(*) FROM winners w WHERE w.device_id = d.id)," \
    " (SELECT count(*) FROM trials t WHERE t.device_id = d.id" \
    "  AND t.distribution <> '" GS_DB_DIST_E2E "')" \
    " FROM devices d"

static int device_row(sqlite3_stmt *st, void *ud)
{
    rowcb *c = ud;
    gs_dbq_device d = {
        .id = sqlite3_column_int64(st, 0),
        .platform = col_text(st, 1), .name = col_text(st, 2), .driver = col_text(st, 3),
        .vendor = col_text(st, 4), .type = col_text(st, 5), .device_version = col_text(st, 6),
        .first_seen = col_text(st, 7), .last_seen = col_text(st, 8),
        .compute_units = sqlite3_column_int64(st, 9), .max_wg_size = sqlite3_column_int64(st, 10),
        .local_mem = sqlite3_column_int64(st, 11), .global_mem = sqlite3_column_int64(st, 12),
        .max_alloc = sqlite3_column_int64(st, 13), .profiling = sqlite3_column_int(st, 14),
        .plan_entries = sqlite3_column_int64(st, 15), .winners = sqlite3_column_int64(st, 16),
        .trials = sqlite3_column_int64(st, 17),
    };
    c->rows++;
    return c->fn.device(c->ud, &d);
}

int gs_dbq_devices(gs_db *db, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, DEVICE_COLS " ORDER BY d.platform COLLATE NOCASE, d.name COLLATE NOCASE,"
               " d.first_seen, d.id");
    rowcb c = { .fn.device = fn, .ud = ud };
    return qb_run(db, &q, device_row, &c, err);
}

/* Run a query for the rows of device `id`: GS_ENOTFOUND when it has none. */
static int device_rows(gs_db *db, const qb *q, int64_t id, gs_dbq_device_fn fn, void *ud,
                       gs_err *err)
{
    rowcb c = { .fn.device = fn, .ud = ud };
    int rc = qb_run(db, q, device_row, &c, err);
    if (!rc && !c.rows)
        rc = gs_err_set(err, GS_ENOTFOUND, "no device with id %lld in %s", (long long)id,
                        gs_db_path(db));
    return rc;
}

int gs_dbq_device_get(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_int(&q, DEVICE_COLS " WHERE d.id = ?", id);
    return device_rows(db, &q, id, fn, ud, err);
}

int gs_dbq_same_device(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_int(&q, DEVICE_COLS " JOIN devices s ON s.platform = d.platform AND s.name = d.name"
               " WHERE s.id = ? ORDER BY d.first_seen, d.id", id);
    return device_rows(db, &q, id, fn, ud, err);
}

int gs_dbq_devlist_add(void *ud, const gs_dbq_device *d)
{
    gs_dbq_devlist *l = ud;
    if (gs_grow(&l->v, &l->cap, l->n, sizeof *l->v, 16))
        return GS_ENOMEM;
    gs_dbq_devcopy *r = &l->v[l->n++];
    r->id = d->id;
    snprintf(r->platform, sizeof r->platform, "%s", d->platform);
    snprintf(r->name, sizeof r->name, "%s", d->name);
    snprintf(r->driver, sizeof r->driver, "%s", d->driver);
    snprintf(r->first_seen, sizeof r->first_seen, "%s", d->first_seen);
    snprintf(r->last_seen, sizeof r->last_seen, "%s", d->last_seen);
    return 0;
}

/* ---- selectors ---- */

static int ci_contains(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++)
        if (strncasecmp(h, needle, nl) == 0)
            return 1;
    return nl == 0;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

int gs_dbq_matches(const gs_dbq_device *d, const char *sel)
{
    if (!sel || !*sel)
        return 1;
    if (all_digits(sel))
        return d->id == strtoll(sel, NULL, 10);
    return ci_contains(d->name, sel);
}

static int same_device(const gs_dbq_devcopy *a, const gs_dbq_devcopy *b)
{
    return !strcmp(a->platform, b->platform) && !strcmp(a->name, b->name);
}

/* Whether selector `sel` picks device r: with `whole`, only a name equal to
 * it (ignoring case), else any name containing it; NULL picks every one. */
static int picks(const gs_dbq_devcopy *r, const char *sel, int whole)
{
    if (!sel)
        return 1;
    return whole ? strcasecmp(r->name, sel) == 0 : ci_contains(r->name, sel);
}

/* "  ID  NAME (PLATFORM, driver DRIVER)" lines of the rows `sel` picks,
 * appended to buf. */
static void list_rows(const gs_dbq_devlist *l, const char *sel, int whole, char *buf,
                      size_t len)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < l->n; i++) {
        const gs_dbq_devcopy *r = &l->v[i];
        if (!picks(r, sel, whole))
            continue;
        int w = snprintf(buf + used, len - used, "\n  %4lld  %s (%s, driver %s)", (long long)r->id,
                         r->name, r->platform, r->driver);
        if (w < 0 || (size_t)w >= len - used) {
            buf[len - 1] = '\0';
            if (len > 5)
                memcpy(buf + len - 5, "...", 4);
            return;
        }
        used += (size_t)w;
    }
}

int gs_dbq_select(gs_db *db, const char *sel, int64_t *id, gs_err *err)
{
    gs_dbq_devlist l = { 0 };
    int rc = gs_dbq_devices(db, gs_dbq_devlist_add, &l, err);
    if (rc == GS_ENOMEM)
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
    if (rc) {
        free(l.v);
        return rc;
    }
    char list[3000] = "";
    if (l.n == 0) {
        free(l.v);
        return gs_err_set(err, GS_ENOTFOUND,
                          "%s has no devices: run gsortd --tune-all to tune this machine's",
                          gs_db_path(db));
    }
    if (sel && all_digits(sel)) {
        int64_t want = strtoll(sel, NULL, 10);
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i].id == want) {
                *id = want;
                free(l.v);
                return 0;
            }
        list_rows(&l, NULL, 0, list, sizeof list);
        free(l.v);
        return gs_err_set(err, GS_ENOTFOUND, "no device with id %s in %s; devices:%s", sel,
                          gs_db_path(db), list);
    }
    /* A name equal to the selector wins over names that only contain it. */
    int whole = 0;
    for (size_t i = 0; i < l.n && sel && *sel; i++)
        whole |= strcasecmp(l.v[i].name, sel) == 0;
    size_t nmatch = 0, first = 0;
    int groups = 0;
    for (size_t i = 0; i < l.n; i++) {
        const gs_dbq_devcopy *r = &l.v[i];
        if (!picks(r, sel, whole))
            continue;
        if (nmatch++ == 0)
            first = i;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = picks(&l.v[j], sel, whole) && same_device(&l.v[j], r);
        groups += !seen;
    }
    if (nmatch == 0) {
        list_rows(&l, NULL, 0, list, sizeof list);
        rc = gs_err_set(err, GS_ENOTFOUND, "no device name contains \"%s\" in %s; devices:%s", sel,
                        gs_db_path(db), list);
    } else if (groups > 1) {
        list_rows(&l, sel, whole, list, sizeof list);
        if (sel && *sel)
            rc = gs_err_set(err, GS_EINVAL,
                            "\"%s\" matches several devices; pick one by id or by more of its "
                            "name (--device):%s", sel, list);
        else
            rc = gs_err_set(err, GS_EINVAL,
                            "%s has several devices; pick one by id or by name (--device):%s",
                            gs_db_path(db), list);
    } else {
        /* One device, maybe several driver versions: the newest serves. */
        size_t best = first;
        for (size_t i = first + 1; i < l.n; i++) {
            if (!picks(&l.v[i], sel, whole))
                continue;
            int c = strcmp(l.v[i].last_seen, l.v[best].last_seen);
            if (c > 0 || (c == 0 && l.v[i].id > l.v[best].id))
                best = i;
        }
        *id = l.v[best].id;
    }
    free(l.v);
    return rc;
}

/* ---- winners and plan ---- */

static void add_common(qb *q, const gs_dbq_filter *f)
{
    if (f->device_id)
        qb_int(q, " AND device_id = ?", f->device_id);
    if (f->algorithms)
        qb_text(q, " AND instr(',' || ? || ',', ',' || algorithm || ',') > 0", f->algorithms);
    if (f->key_bits)
        qb_int(q, " AND key_bits = ?", f->key_bits);
    if (f->payload)
        qb_text(q, " AND payload = ?", f->payload);
}

static int choice_row(sqlite3_stmt *st, void *ud)
{
    rowcb *c = ud;
    gs_dbq_choice ch = {
        .device_id = sqlite3_column_int64(st, 0), .algorithm = col_text(st, 1),
        .key_bits = sqlite3_column_int(st, 2), .payload = col_text(st, 3),
        .stable = c->plan ? sqlite3_column_int(st, 4) : -1, .bucket = sqlite3_column_int(st, 5),
        .params = col_text(st, 6), .median_ms = sqlite3_column_double(st, 7),
        .trial_id = sqlite3_column_int64(st, 8), .updated = col_text(st, 9),
        .extrapolated = sqlite3_column_int(st, 10),
        .baseline_algorithm = col_text(st, 11), .baseline_ms = sqlite3_column_double(st, 12),
    };
    return c->fn.choice(c->ud, &ch);
}

int gs_dbq_winners(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud,
                   gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT device_id, algorithm, key_bits, payload, -1, bucket, params, median_ms,"
               " coalesce(trial_id, 0), updated, 0, '', 0 FROM winners WHERE 1");
    add_common(&q, f);
    qb_sql(&q, " ORDER BY device_id, key_bits, payload, bucket, algorithm");
    rowcb c = { .fn.choice = fn, .ud = ud };
    return qb_run(db, &q, choice_row, &c, err);
}

int gs_dbq_plan(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT device_id, algorithm, key_bits, payload, stable, bucket, params, median_ms,"
               " 0, updated, extrapolated, baseline_algorithm, coalesce(baseline_ms, 0)"
               " FROM plan WHERE 1");
    add_common(&q, f);
    if (f->stable >= 0)
        qb_int(&q, " AND stable = ?", f->stable);
    qb_sql(&q, " ORDER BY device_id, key_bits, payload, bucket, stable");
    rowcb c = { .fn.choice = fn, .ud = ud, .plan = 1 };
    return qb_run(db, &q, choice_row, &c, err);
}

static int shape_row(sqlite3_stmt *st, void *ud)
{
    rowcb *c = ud;
    gs_dbq_choice ch = {
        .device_id = sqlite3_column_int64(st, 0), .kind = col_text(st, 1),
        .key_bits = sqlite3_column_int(st, 2), .payload = col_text(st, 3), .stable = -1,
        .bucket = sqlite3_column_int(st, 4), .sub = sqlite3_column_int(st, 5),
        .algorithm = col_text(st, 6), .params = col_text(st, 7),
        .median_ms = sqlite3_column_double(st, 8), .baseline_algorithm = col_text(st, 9),
        .baseline_ms = sqlite3_column_double(st, 10), .updated = col_text(st, 11),
    };
    return c->fn.choice(c->ud, &ch);
}

int gs_dbq_shapes(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud,
                  gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT device_id, kind, key_bits, payload, bucket, sub, algorithm, params,"
               " median_ms, baseline_algorithm, coalesce(baseline_ms, 0), updated"
               " FROM shape_plan WHERE 1");
    add_common(&q, f);
    qb_sql(&q, " ORDER BY device_id, kind, key_bits, payload, bucket, sub");
    rowcb c = { .fn.choice = fn, .ud = ud };
    return qb_run(db, &q, shape_row, &c, err);
}

/* ---- trials ---- */

static void add_trial_filter(qb *q, const gs_dbq_filter *f)
{
    add_common(q, f);
    if (f->n)
        qb_int(q, " AND n = ?", (int64_t)f->n);
    if (f->valid >= 0)
        qb_int(q, " AND valid = ?", f->valid ? 1 : 0);
    if (f->distribution)
        qb_text(q, " AND distribution = ?", f->distribution);
}

static int trial_row(sqlite3_stmt *st, void *ud)
{
    rowcb *c = ud;
    gs_dbq_trial t = {
        .id = sqlite3_column_int64(st, 0), .device_id = sqlite3_column_int64(st, 1),
        .algorithm = col_text(st, 2), .key_bits = sqlite3_column_int(st, 3),
        .payload = col_text(st, 4), .n = (uint64_t)sqlite3_column_int64(st, 5),
        .distribution = col_text(st, 6), .params = col_text(st, 7), .code_id = col_text(st, 8),
        .timed = sqlite3_column_type(st, 9) != SQLITE_NULL,
        .median_ms = sqlite3_column_double(st, 9), .min_ms = sqlite3_column_double(st, 10),
        .max_ms = sqlite3_column_double(st, 11), .reps = sqlite3_column_int(st, 12),
        .valid = sqlite3_column_int(st, 13), .reason = col_text(st, 14),
        .created = col_text(st, 15),
    };
    return c->fn.trial(c->ud, &t);
}

int gs_dbq_trials(gs_db *db, const gs_dbq_filter *f, gs_dbq_trial_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT id, device_id, algorithm, key_bits, payload, n, distribution, params,"
               " code_id, median_ms, min_ms, max_ms, reps, valid, reason, created"
               " FROM trials WHERE 1");
    add_trial_filter(&q, f);
    qb_sql(&q, " ORDER BY id DESC");
    if (f->limit > 0)
        qb_int(&q, " LIMIT ?", f->limit);
    rowcb c = { .fn.trial = fn, .ud = ud };
    return qb_run(db, &q, trial_row, &c, err);
}

static int count_row(sqlite3_stmt *st, void *ud)
{
    *(int64_t *)ud = sqlite3_column_int64(st, 0);
    return 0;
}

int gs_dbq_trial_count(gs_db *db, const gs_dbq_filter *f, int64_t *count, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT count(*) FROM trials WHERE 1");
    add_trial_filter(&q, f);
    *count = 0;
    return qb_run(db, &q, count_row, count, err);
}

/* ---- plot points ---- */

static int point_row(sqlite3_stmt *st, void *ud)
{
    rowcb *c = ud;
    gs_dbq_point p = {
        .algorithm = col_text(st, 0), .n = (uint64_t)sqlite3_column_int64(st, 1),
        .median_ms = sqlite3_column_double(st, 2), .params = col_text(st, 3),
        .distribution = col_text(st, 4), .trial_id = sqlite3_column_int64(st, 5),
    };
    return c->fn.point(c->ud, &p);
}

int gs_dbq_points(gs_db *db, const gs_dbq_filter *f, int e2e, gs_dbq_point_fn fn, void *ud,
                  gs_err *err)
{
    if (!f->device_id || !f->key_bits)
        return gs_err_set(err, GS_EINVAL, "points need one device and one key width");
    qb q = { .len = 0 };
    /* SQLite takes the bare columns (params, id) from the row that holds
     * the min(). */
    qb_sql(&q, "SELECT algorithm, n, min(median_ms), params, distribution, id FROM trials t"
               " WHERE valid = 1 AND median_ms > 0 AND n > 0");
    qb_int(&q, " AND device_id = ?", f->device_id);
    qb_int(&q, " AND key_bits = ?", f->key_bits);
    qb_text(&q, " AND payload = ?", f->payload ? f->payload : "none");
    if (f->algorithms)
        qb_text(&q, " AND instr(',' || ? || ',', ',' || algorithm || ',') > 0", f->algorithms);
    if (e2e)
        qb_sql(&q, " AND (distribution = '" GS_DB_DIST_E2E "' OR (distribution = 'random'"
                   " AND NOT EXISTS (SELECT 1 FROM trials u WHERE u.device_id = t.device_id"
                   " AND u.algorithm = t.algorithm AND u.key_bits = t.key_bits"
                   " AND u.payload = t.payload AND u.distribution = '" GS_DB_DIST_E2E "'"
                   " AND u.valid = 1)))");
    else
        qb_sql(&q, " AND distribution = 'random'");
    qb_sql(&q, " GROUP BY algorithm, n ORDER BY algorithm, n");
    rowcb c = { .fn.point = fn, .ud = ud };
    return qb_run(db, &q, point_row, &c, err);
}

int gs_dbq_algorithm_seen(gs_db *db, const char *name, int *seen, gs_err *err)
{
    qb q = { .len = 0 };
    qb_text(&q, "SELECT EXISTS (SELECT 1 FROM trials WHERE algorithm = ?)", name);
    qb_text(&q, " OR EXISTS (SELECT 1 FROM winners WHERE algorithm = ?)", name);
    qb_text(&q, " OR EXISTS (SELECT 1 FROM plan WHERE algorithm = ?)", name);
    int64_t v = 0;
    int rc = qb_run(db, &q, count_row, &v, err);
    *seen = v != 0;
    return rc;
}
