/* Implementation of the read-only tuning-database queries (see gs_dbq.h):
 * each builds its WHERE clause from the filter, binds the values in order
 * and hands every row to the caller's callback. */
#include "config.h"
#include "gs_dbq.h"

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
    return gs_err_set(err, GS_EIO, "database %s: %s: %s", gs_db_path(db), what,
                      sqlite3_errmsg(gs_db_handle(db)));
}

/* A query under construction: SQL text plus the values for its "?"s. */
typedef struct qb {
    char sql[2048];
    size_t len;
    int nb;
    struct { int text; int64_t i; const char *s; } b[16];
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

static void qb_int(qb *q, const char *s, int64_t v)
{
    if (q->nb == 16) {
        q->overflow = 1;
        return;
    }
    qb_sql(q, s);
    q->b[q->nb].text = 0;
    q->b[q->nb++].i = v;
}

static void qb_text(qb *q, const char *s, const char *v)
{
    if (q->nb == 16) {
        q->overflow = 1;
        return;
    }
    qb_sql(q, s);
    q->b[q->nb].text = 1;
    q->b[q->nb++].s = v;
}

static int qb_prepare(gs_db *db, qb *q, sqlite3_stmt **st, gs_err *err)
{
    if (q->overflow)
        return gs_err_set(err, GS_ETOOBIG, "query too long");
    if (sqlite3_prepare_v2(gs_db_handle(db), q->sql, -1, st, NULL) != SQLITE_OK)
        return fail(db, err, "preparing a query");
    for (int i = 0; i < q->nb; i++) {
        if (q->b[i].text)
            sqlite3_bind_text(*st, i + 1, q->b[i].s, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_int64(*st, i + 1, q->b[i].i);
    }
    return 0;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* Run a prepared statement, calling `row` on each result row; finalizes. */
static int run(gs_db *db, sqlite3_stmt *st, int (*row)(sqlite3_stmt *, void *), void *ud,
               gs_err *err)
{
    int rc = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = row(st, ud)) != 0)
            break;
    if (!rc && step != SQLITE_DONE)
        rc = fail(db, err, "reading");
    sqlite3_finalize(st);
    return rc;
}

/* ---- devices ---- */

#define DEVICE_COLS \
    "SELECT d.id, d.platform, d.name, d.driver, d.vendor, d.type, d.device_version," \
    " d.first_seen, d.last_seen, d.compute_units, d.max_wg_size, d.local_mem, d.global_mem," \
    " d.max_alloc, d.profiling," \
    " (SELECT count(*) FROM plan p WHERE p.device_id = d.id)," \
    " (SELECT count(*) FROM winners w WHERE w.device_id = d.id)," \
    " (SELECT count(*) FROM trials t WHERE t.device_id = d.id)" \
    " FROM devices d"

typedef struct devcb {
    gs_dbq_device_fn fn;
    void *ud;
    int rows;
} devcb;

static int device_row(sqlite3_stmt *st, void *ud)
{
    devcb *c = ud;
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
    return c->fn(c->ud, &d);
}

int gs_dbq_devices(gs_db *db, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, DEVICE_COLS " ORDER BY d.platform COLLATE NOCASE, d.name COLLATE NOCASE,"
               " d.first_seen, d.id");
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    devcb c = { fn, ud, 0 };
    return rc ? rc : run(db, st, device_row, &c, err);
}

int gs_dbq_device_get(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_int(&q, DEVICE_COLS " WHERE d.id = ?", id);
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    devcb c = { fn, ud, 0 };
    if (!rc)
        rc = run(db, st, device_row, &c, err);
    if (!rc && !c.rows)
        rc = gs_err_set(err, GS_ENOTFOUND, "no device with id %lld in %s", (long long)id,
                        gs_db_path(db));
    return rc;
}

int gs_dbq_same_device(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_int(&q, DEVICE_COLS " JOIN devices s ON s.platform = d.platform AND s.name = d.name"
               " WHERE s.id = ? ORDER BY d.first_seen, d.id", id);
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    devcb c = { fn, ud, 0 };
    if (!rc)
        rc = run(db, st, device_row, &c, err);
    if (!rc && !c.rows)
        rc = gs_err_set(err, GS_ENOTFOUND, "no device with id %lld in %s", (long long)id,
                        gs_db_path(db));
    return rc;
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

/* Every device, copied: the selector compares rows with each other. */
typedef struct devrow {
    int64_t id;
    char platform[256], name[256], driver[256], last_seen[32];
    int exact, match;
} devrow;

typedef struct devlist {
    devrow *v;
    size_t n, cap;
} devlist;

static int collect_device(void *ud, const gs_dbq_device *d)
{
    devlist *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        devrow *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return GS_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    devrow *r = &l->v[l->n++];
    memset(r, 0, sizeof *r);
    r->id = d->id;
    snprintf(r->platform, sizeof r->platform, "%s", d->platform);
    snprintf(r->name, sizeof r->name, "%s", d->name);
    snprintf(r->driver, sizeof r->driver, "%s", d->driver);
    snprintf(r->last_seen, sizeof r->last_seen, "%s", d->last_seen);
    return 0;
}

static int same_device(const devrow *a, const devrow *b)
{
    return !strcmp(a->platform, b->platform) && !strcmp(a->name, b->name);
}

/* "  ID  NAME (PLATFORM, driver DRIVER)" lines of the rows with `match`
 * set (all rows when none is), appended to buf. */
static void list_rows(const devlist *l, int only_matches, char *buf, size_t len)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < l->n; i++) {
        if (only_matches && !l->v[i].match)
            continue;
        const devrow *r = &l->v[i];
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
    devlist l = { 0 };
    int rc = gs_dbq_devices(db, collect_device, &l, err);
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
        list_rows(&l, 0, list, sizeof list);
        free(l.v);
        return gs_err_set(err, GS_ENOTFOUND, "no device with id %s in %s; devices:%s", sel,
                          gs_db_path(db), list);
    }
    int any_exact = 0;
    for (size_t i = 0; i < l.n; i++) {
        devrow *r = &l.v[i];
        r->exact = sel && *sel && strcasecmp(r->name, sel) == 0;
        any_exact |= r->exact;
    }
    size_t nmatch = 0, first = 0;
    int groups = 0;
    for (size_t i = 0; i < l.n; i++) {
        devrow *r = &l.v[i];
        r->match = any_exact ? r->exact : (!sel || ci_contains(r->name, sel));
        if (!r->match)
            continue;
        if (nmatch++ == 0)
            first = i;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = l.v[j].match && same_device(&l.v[j], r);
        groups += !seen;
    }
    if (nmatch == 0) {
        list_rows(&l, 0, list, sizeof list);
        rc = gs_err_set(err, GS_ENOTFOUND, "no device name contains \"%s\" in %s; devices:%s", sel,
                        gs_db_path(db), list);
    } else if (groups > 1) {
        list_rows(&l, 1, list, sizeof list);
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
            if (!l.v[i].match)
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

typedef struct choicecb {
    gs_dbq_choice_fn fn;
    void *ud;
    int plan;
} choicecb;

static int choice_row(sqlite3_stmt *st, void *ud)
{
    choicecb *c = ud;
    gs_dbq_choice ch = {
        .device_id = sqlite3_column_int64(st, 0), .algorithm = col_text(st, 1),
        .key_bits = sqlite3_column_int(st, 2), .payload = col_text(st, 3),
        .stable = c->plan ? sqlite3_column_int(st, 4) : -1, .bucket = sqlite3_column_int(st, 5),
        .params = col_text(st, 6), .median_ms = sqlite3_column_double(st, 7),
        .trial_id = sqlite3_column_int64(st, 8), .updated = col_text(st, 9),
    };
    return c->fn(c->ud, &ch);
}

int gs_dbq_winners(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud,
                   gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT device_id, algorithm, key_bits, payload, -1, bucket, params, median_ms,"
               " coalesce(trial_id, 0), updated FROM winners WHERE 1");
    add_common(&q, f);
    qb_sql(&q, " ORDER BY device_id, key_bits, payload, bucket, algorithm");
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    choicecb c = { fn, ud, 0 };
    return rc ? rc : run(db, st, choice_row, &c, err);
}

int gs_dbq_plan(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud, gs_err *err)
{
    qb q = { .len = 0 };
    qb_sql(&q, "SELECT device_id, algorithm, key_bits, payload, stable, bucket, params, median_ms,"
               " 0, updated FROM plan WHERE 1");
    add_common(&q, f);
    if (f->stable >= 0)
        qb_int(&q, " AND stable = ?", f->stable);
    qb_sql(&q, " ORDER BY device_id, key_bits, payload, bucket, stable");
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    choicecb c = { fn, ud, 1 };
    return rc ? rc : run(db, st, choice_row, &c, err);
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

typedef struct trialcb {
    gs_dbq_trial_fn fn;
    void *ud;
} trialcb;

static int trial_row(sqlite3_stmt *st, void *ud)
{
    trialcb *c = ud;
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
    return c->fn(c->ud, &t);
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
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    trialcb c = { fn, ud };
    return rc ? rc : run(db, st, trial_row, &c, err);
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
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    *count = 0;
    return rc ? rc : run(db, st, count_row, count, err);
}

/* ---- plot points ---- */

typedef struct pointcb {
    gs_dbq_point_fn fn;
    void *ud;
} pointcb;

static int point_row(sqlite3_stmt *st, void *ud)
{
    pointcb *c = ud;
    gs_dbq_point p = {
        .algorithm = col_text(st, 0), .n = (uint64_t)sqlite3_column_int64(st, 1),
        .median_ms = sqlite3_column_double(st, 2), .params = col_text(st, 3),
        .distribution = col_text(st, 4), .trial_id = sqlite3_column_int64(st, 5),
    };
    return c->fn(c->ud, &p);
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
        qb_sql(&q, " AND (distribution = 'random-e2e' OR (distribution = 'random' AND NOT EXISTS"
                   " (SELECT 1 FROM trials u WHERE u.device_id = t.device_id"
                   " AND u.algorithm = t.algorithm AND u.key_bits = t.key_bits"
                   " AND u.payload = t.payload AND u.distribution = 'random-e2e'"
                   " AND u.valid = 1)))");
    else
        qb_sql(&q, " AND distribution = 'random'");
    qb_sql(&q, " GROUP BY algorithm, n ORDER BY algorithm, n");
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    pointcb c = { fn, ud };
    return rc ? rc : run(db, st, point_row, &c, err);
}

int gs_dbq_algorithm_seen(gs_db *db, const char *name, int *seen, gs_err *err)
{
    qb q = { .len = 0 };
    qb_text(&q, "SELECT EXISTS (SELECT 1 FROM trials WHERE algorithm = ?)", name);
    qb_text(&q, " OR EXISTS (SELECT 1 FROM winners WHERE algorithm = ?)", name);
    qb_text(&q, " OR EXISTS (SELECT 1 FROM plan WHERE algorithm = ?)", name);
    sqlite3_stmt *st;
    int rc = qb_prepare(db, &q, &st, err);
    int64_t v = 0;
    if (!rc)
        rc = run(db, st, count_row, &v, err);
    *seen = v != 0;
    return rc;
}
