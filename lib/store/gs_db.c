/* The tuning database's rows (gs_db.h): device identities, the trials the
 * tuner records (and looks up to resume), the winners per size bucket, and
 * the serving plan (its rows; the nearest-bucket lookup a request needs is
 * the daemon's in-memory table, gs_plans.c). Each call is one short
 * statement; gs_db_begin/commit group them. Opening and migrating the file
 * are gs_db_open.c's. */
#include "config.h"
#include "gs_db.h"
#include "gs_db_int.h"

#include <stdio.h>
#include <string.h>

#include "gs_dev.h"

int gs_db_bucket(uint64_t n)
{
    int b = 0;
    while (n > 1) {
        n >>= 1;
        b++;
    }
    return b;
}

int gs_db_device_id(gs_db *db, const gs_dev_info *in, int create, int64_t *id,
                    gs_err *err)
{
    sqlite3_stmt *st;
    int rc;
    if (!create) {
        rc = db_prepare(db, "SELECT id FROM devices WHERE platform=?1 AND name=?2 AND driver=?3", &st, err);
    } else {
        rc = db_prepare(db,
            "INSERT INTO devices (platform, name, driver, vendor, type, device_version, c_version,"
            " compute_units, max_wg_size, local_mem, global_mem, max_alloc, profiling)"
            " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
            " ON CONFLICT (platform, name, driver) DO UPDATE SET vendor=excluded.vendor,"
            " type=excluded.type, device_version=excluded.device_version,"
            " c_version=excluded.c_version, compute_units=excluded.compute_units,"
            " max_wg_size=excluded.max_wg_size, local_mem=excluded.local_mem,"
            " global_mem=excluded.global_mem, max_alloc=excluded.max_alloc,"
            " profiling=excluded.profiling,"
            " last_seen=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"
            " RETURNING id", &st, err);
    }
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, in->platform, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, in->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, in->driver, -1, SQLITE_TRANSIENT);
    if (create) {
        char type[64];
        sqlite3_bind_text(st, 4, in->vendor, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, gs_dev_type_name(in->type, type, sizeof type), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, in->version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 7, in->c_version, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 8, in->compute_units);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)in->max_wg_size);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)in->local_mem);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)in->global_mem);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)in->max_alloc);
        sqlite3_bind_int(st, 13, in->profiling);
    }
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        /* Drain so the RETURNING insert commits. */
        while ((step = sqlite3_step(st)) == SQLITE_ROW)
            ;
        rc = step == SQLITE_DONE ? 0 : db_fail(db, step, err, "device");
    } else if (step == SQLITE_DONE && !create) {
        rc = gs_err_set(err, GS_ENOTFOUND, "device %s / %s / %s is not in %s", in->platform,
                        in->name, in->driver, db->path);
    } else {
        rc = db_fail(db, step, err, "device");
    }
    sqlite3_finalize(st);
    return rc;
}

static void bind_trial_key(sqlite3_stmt *st, const gs_db_trial *t)
{
    sqlite3_bind_int64(st, 1, t->device_id);
    sqlite3_bind_text(st, 2, t->algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, t->key_bits);
    sqlite3_bind_text(st, 4, t->payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)t->n);
    sqlite3_bind_text(st, 6, t->distribution, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, t->params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, t->code_id ? t->code_id : "", -1, SQLITE_TRANSIENT);
}

int gs_db_trial_add(gs_db *db, const gs_db_trial *t, int64_t *id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "INSERT INTO trials (device_id, algorithm, key_bits, payload, n, distribution, params,"
        " code_id, median_ms, min_ms, max_ms, reps, valid, reason)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", &st, err);
    if (rc)
        return rc;
    bind_trial_key(st, t);
    if (t->valid) {
        sqlite3_bind_double(st, 9, t->median_ms);
        sqlite3_bind_double(st, 10, t->min_ms);
        sqlite3_bind_double(st, 11, t->max_ms);
    }
    sqlite3_bind_int(st, 12, t->reps);
    sqlite3_bind_int(st, 13, t->valid ? 1 : 0);
    sqlite3_bind_text(st, 14, t->reason ? t->reason : "", -1, SQLITE_TRANSIENT);
    rc = db_step_done(db, st, err, "recording a trial");
    if (!rc && id)
        *id = sqlite3_last_insert_rowid(db->h);
    return rc;
}

int gs_db_trial_lookup(gs_db *db, const gs_db_trial *key, double *median_ms, int *valid,
                       int64_t *id, gs_err *err)
{
    gs_db_trial t;
    int rc = gs_db_trial_find(db, key, &t, id, err);
    if (!rc && median_ms)
        *median_ms = t.median_ms;
    if (!rc && valid)
        *valid = t.valid;
    return rc;
}

int gs_db_trial_find(gs_db *db, const gs_db_trial *key, gs_db_trial *out, int64_t *id,
                     gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "SELECT id, median_ms, valid, coalesce(min_ms, median_ms), coalesce(max_ms, median_ms),"
        " reps FROM trials WHERE device_id=?1 AND algorithm=?2"
        " AND key_bits=?3 AND payload=?4 AND n=?5 AND distribution=?6 AND params=?7"
        " AND code_id=?8 ORDER BY id DESC LIMIT 1", &st, err);
    if (rc)
        return rc;
    bind_trial_key(st, key);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        if (id)
            *id = sqlite3_column_int64(st, 0);
        *out = *key;
        out->reason = NULL;
        out->median_ms = sqlite3_column_double(st, 1);
        out->valid = sqlite3_column_int(st, 2);
        out->min_ms = sqlite3_column_double(st, 3);
        out->max_ms = sqlite3_column_double(st, 4);
        out->reps = sqlite3_column_int(st, 5);
    } else if (step == SQLITE_DONE) {
        rc = GS_ENOTFOUND;
        gs_err_set(err, rc, "no such trial");
    } else {
        rc = db_fail(db, step, err, "looking up a trial");
    }
    sqlite3_finalize(st);
    return rc;
}

static int read_choice(gs_db *db, sqlite3_stmt *st, gs_db_choice *out, gs_err *err,
                       const char *what)
{
    int step = sqlite3_step(st), rc = 0;
    if (step == SQLITE_ROW) {
        const char *algo = (const char *)sqlite3_column_text(st, 0);
        const char *params = (const char *)sqlite3_column_text(st, 1);
        if (!algo || !params) {
            /* NOT NULL in the schema, so only a damaged or hand-edited file */
            rc = gs_err_set(err, GS_ECORRUPT, "database %s: %s has no %s", db->path, what,
                            algo ? "parameters" : "algorithm");
        } else {
            snprintf(out->algorithm, sizeof out->algorithm, "%s", algo);
            snprintf(out->params, sizeof out->params, "%s", params);
            out->median_ms = sqlite3_column_double(st, 2);
            out->bucket = sqlite3_column_int(st, 3);
        }
    } else if (step == SQLITE_DONE) {
        rc = gs_err_set(err, GS_ENOTFOUND, "no %s recorded", what);
    } else {
        rc = db_fail(db, step, err, what);
    }
    sqlite3_finalize(st);
    return rc;
}

/* ?1..?5 of the winners statements: the row's key. */
static void bind_winner_key(sqlite3_stmt *st, int64_t device_id, const char *algorithm,
                            int key_bits, const char *payload, int bucket)
{
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_text(st, 2, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, key_bits);
    sqlite3_bind_text(st, 4, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, bucket);
}

int gs_db_winner_set(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, const char *params, double median_ms,
                     int64_t trial_id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "INSERT INTO winners (device_id, algorithm, key_bits, payload, bucket, params, median_ms, trial_id)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (device_id, algorithm, key_bits, payload, bucket)"
        " DO UPDATE SET params=excluded.params, median_ms=excluded.median_ms,"
        " trial_id=excluded.trial_id, updated=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, err);
    if (rc)
        return rc;
    bind_winner_key(st, device_id, algorithm, key_bits, payload, bucket);
    sqlite3_bind_text(st, 6, params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 7, median_ms);
    if (trial_id > 0)
        sqlite3_bind_int64(st, 8, trial_id);
    return db_step_done(db, st, err, "recording a winner");
}

int gs_db_winner_get(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, gs_db_choice *out, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "SELECT algorithm, params, median_ms, bucket FROM winners WHERE device_id=?1"
        " AND algorithm=?2 AND key_bits=?3 AND payload=?4 AND bucket=?5", &st, err);
    if (rc)
        return rc;
    bind_winner_key(st, device_id, algorithm, key_bits, payload, bucket);
    return read_choice(db, st, out, err, "winner");
}

/* ?1..?5 of the plan statements: the row's key. */
static void bind_plan_key(sqlite3_stmt *st, int64_t device_id, int key_bits, const char *payload,
                          int stable, int bucket)
{
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_int(st, 2, key_bits);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, stable ? 1 : 0);
    sqlite3_bind_int(st, 5, bucket);
}

int gs_db_plan_set(gs_db *db, int64_t device_id, int key_bits, const char *payload, int stable,
                   int bucket, const char *algorithm, const char *params, double median_ms,
                   gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "INSERT INTO plan (device_id, key_bits, payload, stable, bucket, algorithm, params, median_ms)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (device_id, key_bits, payload, stable, bucket)"
        " DO UPDATE SET algorithm=excluded.algorithm, params=excluded.params,"
        " median_ms=excluded.median_ms, extrapolated=0, baseline_algorithm='', baseline_ms=NULL,"
        " updated=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, err);
    if (rc)
        return rc;
    bind_plan_key(st, device_id, key_bits, payload, stable, bucket);
    sqlite3_bind_text(st, 6, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 8, median_ms);
    return db_step_done(db, st, err, "recording the plan");
}

int gs_db_plan_set_baseline(gs_db *db, int64_t device_id, int key_bits, const char *payload,
                            int stable, int bucket, const char *algorithm, double ms,
                            gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "UPDATE plan SET baseline_algorithm=?6, baseline_ms=?7 WHERE"
                        " device_id=?1 AND key_bits=?2 AND payload=?3 AND stable=?4 AND bucket=?5",
                        &st, err);
    if (rc)
        return rc;
    bind_plan_key(st, device_id, key_bits, payload, stable, bucket);
    sqlite3_bind_text(st, 6, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 7, ms);
    return db_step_done(db, st, err, "recording the plan's baseline");
}

int gs_db_plan_clear(gs_db *db, int64_t device_id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "DELETE FROM plan WHERE device_id=?1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    if ((rc = db_step_done(db, st, err, "removing the plan")) < 0)
        return rc;
    if ((rc = db_prepare(db, "DELETE FROM shape_plan WHERE device_id=?1", &st, err)))
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    return db_step_done(db, st, err, "removing the rows and top-k plan");
}

int gs_db_plan_mark_source(gs_db *db, int64_t device_id, int key_bits, const char *payload,
                           int stable, int bucket, int how, gs_err *err)
{
    if (how != GS_DB_PLAN_EXTRAPOLATED && how != GS_DB_PLAN_INTERPOLATED &&
        how != GS_DB_PLAN_AUDITED)
        return gs_err_set(err, GS_EINVAL, "plan row source %d is not one a row is marked with",
                          how);
    sqlite3_stmt *st;
    int rc = db_prepare(db, "UPDATE plan SET extrapolated=?6 WHERE device_id=?1 AND key_bits=?2"
                        " AND payload=?3 AND stable=?4 AND bucket=?5", &st, err);
    if (rc)
        return rc;
    bind_plan_key(st, device_id, key_bits, payload, stable, bucket);
    sqlite3_bind_int(st, 6, how);
    return db_step_done(db, st, err, "marking a plan row predicted");
}

int gs_db_plan_count(gs_db *db, int64_t device_id, long *count, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT count(*) FROM plan WHERE device_id=?1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *count = (long)sqlite3_column_int64(st, 0);
    else
        rc = db_fail(db, step, err, "counting plan entries");
    sqlite3_finalize(st);
    return rc;
}

int gs_db_trials_any(gs_db *db, int64_t device_id, const char *algorithm, const char *code_id,
                     gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT 1 FROM trials WHERE device_id=?1 AND algorithm=?2"
                        " AND code_id=?3 LIMIT 1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_text(st, 2, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, code_id, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(st);
    rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : db_fail(db, step, err, "trials");
    sqlite3_finalize(st);
    return rc;
}

/* Rows of `sql` (algorithm, params, median_ms, bucket, key_bits, payload,
 * stable) for ?1 = device_id, each handed to fn. */
static int each_row(gs_db *db, const char *sql, int64_t device_id, const char *what,
                    int (*fn)(void *arg, const gs_db_row *row), void *arg, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, sql, &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    int step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        gs_db_row r;
        const char *algo = (const char *)sqlite3_column_text(st, 0);
        const char *params = (const char *)sqlite3_column_text(st, 1);
        const char *pl = (const char *)sqlite3_column_text(st, 5);
        if (!algo || !params || !pl) {
            rc = gs_err_set(err, GS_ECORRUPT, "database %s: a %s row lacks a value", db->path,
                            what);
            break;
        }
        snprintf(r.c.algorithm, sizeof r.c.algorithm, "%s", algo);
        snprintf(r.c.params, sizeof r.c.params, "%s", params);
        r.c.median_ms = sqlite3_column_double(st, 2);
        r.c.bucket = sqlite3_column_int(st, 3);
        r.key_bits = sqlite3_column_int(st, 4);
        snprintf(r.payload, sizeof r.payload, "%s", pl);
        r.stable = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 6);
        r.source = sqlite3_column_int(st, 7);
        rc = fn(arg, &r);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(db, step, err, what);
    sqlite3_finalize(st);
    return rc;
}

int gs_db_plan_each(gs_db *db, int64_t device_id, int (*fn)(void *arg, const gs_db_row *row),
                    void *arg, gs_err *err)
{
    return each_row(db, "SELECT algorithm, params, median_ms, bucket, key_bits, payload, stable,"
                    " extrapolated FROM plan WHERE device_id=?1", device_id, "plan", fn, arg, err);
}

int gs_db_winner_each(gs_db *db, int64_t device_id,
                      int (*fn)(void *arg, const gs_db_row *row), void *arg, gs_err *err)
{
    return each_row(db, "SELECT algorithm, params, median_ms, bucket, key_bits, payload, NULL, 0"
                    " FROM winners WHERE device_id=?1", device_id, "winners", fn, arg, err);
}

int gs_db_plan_get(gs_db *db, int64_t device_id, int key_bits, const char *payload, int stable,
                   int bucket, gs_db_choice *out, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "SELECT algorithm, params, median_ms, bucket FROM plan WHERE device_id=?1 AND key_bits=?2"
        " AND payload=?3 AND stable=?4 AND bucket=?5", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_int(st, 2, key_bits);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, stable ? 1 : 0);
    sqlite3_bind_int(st, 5, bucket);
    return read_choice(db, st, out, err, "plan for this device, request shape and size");
}
