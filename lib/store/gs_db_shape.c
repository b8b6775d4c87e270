/* The plan of rows, top-k and segments requests in the tuning database
 * (schema 7; segments from 8; gs_db.h): a row per (device, kind, key
 * width, payload, bucket, sub) point, written by the measurement that
 * chose it (daemon/audit) and read whole into the daemon's plan table
 * (gs_plans.c). */
#include "config.h"
#include "gs_db.h"
#include "gs_db_int.h"

#include <stdio.h>
#include <string.h>

int gs_db_shape_set(gs_db *db, int64_t device_id, const gs_db_shape_row *r, gs_err *err)
{
    if (strcmp(r->kind, "rows") && strcmp(r->kind, "topk") && strcmp(r->kind, "segs"))
        return gs_err_set(err, GS_EINVAL, "a plan row of kind '%s' (rows, topk or segs)",
                          r->kind);
    sqlite3_stmt *st;
    int rc = db_prepare(db,
        "INSERT INTO shape_plan (device_id, kind, key_bits, payload, bucket, sub, algorithm,"
        " params, median_ms, baseline_algorithm, baseline_ms)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
        " ON CONFLICT (device_id, kind, key_bits, payload, bucket, sub) DO UPDATE SET"
        " algorithm=excluded.algorithm, params=excluded.params, median_ms=excluded.median_ms,"
        " baseline_algorithm=excluded.baseline_algorithm, baseline_ms=excluded.baseline_ms,"
        " updated=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_text(st, 2, r->kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, r->key_bits);
    sqlite3_bind_text(st, 4, r->payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, r->bucket);
    sqlite3_bind_int(st, 6, r->sub);
    sqlite3_bind_text(st, 7, r->algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, r->params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 9, r->median_ms);
    sqlite3_bind_text(st, 10, r->baseline_algorithm, -1, SQLITE_TRANSIENT);
    if (r->baseline_ms >= 0)
        sqlite3_bind_double(st, 11, r->baseline_ms);
    else
        sqlite3_bind_null(st, 11);
    return db_step_done(db, st, err, "recording the rows and top-k plan");
}

static void copy_text(char *dst, size_t len, sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    snprintf(dst, len, "%s", t ? t : "");
}

int gs_db_shape_each(gs_db *db, int64_t device_id,
                     int (*fn)(void *arg, const gs_db_shape_row *row), void *arg, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT kind, key_bits, payload, bucket, sub, algorithm, params,"
                        " median_ms, baseline_algorithm, baseline_ms FROM shape_plan"
                        " WHERE device_id=?1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    int step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        gs_db_shape_row r;
        memset(&r, 0, sizeof r);
        copy_text(r.kind, sizeof r.kind, st, 0);
        r.key_bits = sqlite3_column_int(st, 1);
        copy_text(r.payload, sizeof r.payload, st, 2);
        r.bucket = sqlite3_column_int(st, 3);
        r.sub = sqlite3_column_int(st, 4);
        copy_text(r.algorithm, sizeof r.algorithm, st, 5);
        copy_text(r.params, sizeof r.params, st, 6);
        r.median_ms = sqlite3_column_double(st, 7);
        copy_text(r.baseline_algorithm, sizeof r.baseline_algorithm, st, 8);
        r.baseline_ms = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1
                                                                  : sqlite3_column_double(st, 9);
        rc = fn(arg, &r);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(db, step, err, "the rows and top-k plan");
    sqlite3_finalize(st);
    return rc;
}
