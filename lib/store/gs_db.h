/* The tuning database: one SQLite file holding devices, every tuning trial,
 * the winning parameters and the serving plan. Opened in WAL mode with a
 * busy timeout; every write is a short BEGIN IMMEDIATE transaction, so a
 * kill -9 at any moment leaves a consistent file. The schema version lives
 * in PRAGMA user_version and is raised by the forward-only migrations in
 * db/NNN_*.sql (embedded at build time); a database from a newer gsortd is
 * refused and left untouched. */
#ifndef GS_DB_H
#define GS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "gs_err.h"
#include "gs_params.h"
#include "gs_types.h"

typedef struct gs_db gs_db;
/* gs_dev.h's; declared here so that the readers of the database
 * (gsort-query) need no OpenCL header. */
struct gs_dev_info;

enum {
    GS_DB_READONLY = 1,
    GS_DB_FULL_CHECK = 2,   /* run the whole integrity_check at open, however long */
};

/* Schema version this build writes (the number of embedded migrations). */
int gs_db_latest_version(void);

/* The default database path, gs_paths_data_dir()/tuning.db. GS_ENOTFOUND
 * (no location can be determined) or GS_ETOOBIG, with the reason. */
int gs_db_default_path(char *buf, size_t len, gs_err *err);
/* Open (creating and migrating as needed) the database at `path`; NULL: the
 * default, gs_paths_data_dir()/tuning.db (/var/lib/gsortd as root). With
 * GS_DB_READONLY nothing is created or migrated: an older schema is an
 * error; a file whose -wal and -shm cannot be created (a directory this
 * user cannot write) is still read, as an immutable file.
 * The checks, before anything is written: a read-only open runs PRAGMA
 * quick_check (every b-tree page's structure) for at most 0.5 s; a
 * read-write open runs the whole integrity_check (the structure, and that
 * every index holds exactly its table's rows) for at most 0.5 s, or
 * quick_check when the file is too large for that. A read-write open
 * checks the whole file however long it takes with GS_DB_FULL_CHECK,
 * before a migration, and when SQLite's -wal or -shm was beside the file
 * (left by a process that did not close it: an unclean shutdown; or
 * another process has it open). Whatever the open did not check, the
 * first write on the connection checks first (gs_db_checked): nothing is
 * ever written into a file that fails the check.
 * Errors: GS_EIO (cannot open or read; the message names the cause, e.g.
 * the directory that is not writable), GS_ECORRUPT (not a database, or
 * damaged: left byte-for-byte as it was, with its -wal if it had one; the
 * message says what to do; failed migration), GS_EUNSUPPORTED (newer
 * schema: untouched). */
int gs_db_open(gs_db **out, const char *path, int flags, gs_err *err);
void gs_db_close(gs_db *db);
const char *gs_db_path(const gs_db *db);
/* 1 when a read-only open had to read the file as immutable (above). */
int gs_db_immutable(const gs_db *db);
/* The SQLite connection, for read-only queries beyond this API (gs_dbq.h). */
struct sqlite3 *gs_db_handle(gs_db *db);
int gs_db_version(gs_db *db);              /* PRAGMA user_version, <0 on error */
/* PRAGMA integrity_check, however long it takes: 0 when "ok", else
 * GS_ECORRUPT naming the first problems and what to do (the connection
 * then refuses every write). */
int gs_db_check(gs_db *db, gs_err *err);
/* 1 when the whole integrity_check has passed on this connection (at the
 * open or since); 0 when only quick_check ran, or no check (a file too
 * large to check within the open's bound). Writes check first when 0. */
int gs_db_checked(const gs_db *db);

/* Id of the device with this identity (platform, name, driver); with
 * `create` insert it (or refresh its properties and last_seen). Without
 * `create`, GS_ENOTFOUND if absent. */
int gs_db_device_id(gs_db *db, const struct gs_dev_info *info, int create, int64_t *id,
                     gs_err *err);

/* The params columns hold gs_params_to_json's text (gs_params.h). */

/* The distribution of the row the tuner writes beside each valid trial
 * of a device algorithm: the same run's wall time with transfers. It is
 * part of that trial, not a trial of its own. */
#define GS_DB_DIST_E2E "random-e2e"

typedef struct gs_db_trial {
    int64_t device_id;
    const char *algorithm;
    int key_bits;              /* 32 or 64 */
    const char *payload;       /* gs_payload_name */
    uint64_t n;
    const char *distribution;  /* "random", "sorted", ... */
    const char *params;        /* JSON */
    const char *code_id;       /* gs_kern_code_id(); NULL: "" */
    double median_ms, min_ms, max_ms;
    int reps;
    int valid;                 /* 0: failed; reason says why */
    const char *reason;
} gs_db_trial;

/* Record one trial (its own transaction). */
int gs_db_trial_add(gs_db *db, const gs_db_trial *t, int64_t *id, gs_err *err);
/* Most recent trial of exactly this configuration (device, algorithm,
 * key_bits, payload, n, distribution, params, code_id of `key`): fills median_ms,
 * valid and *id; GS_ENOTFOUND if none. Lets a rerun resume. */
int gs_db_trial_lookup(gs_db *db, const gs_db_trial *key, double *median_ms, int *valid,
                       int64_t *id, gs_err *err);
/* The same, the whole trial: *out is `key` with median, min, max (the
 * median where a row has none), reps and valid filled in, reason NULL. */
int gs_db_trial_find(gs_db *db, const gs_db_trial *key, gs_db_trial *out, int64_t *id,
                     gs_err *err);

typedef struct gs_db_choice {
    char algorithm[32];
    char params[512];          /* JSON */
    double median_ms;
    int bucket;
} gs_db_choice;

int gs_db_winner_set(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, const char *params, double median_ms,
                     int64_t trial_id, gs_err *err);
int gs_db_winner_get(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, gs_db_choice *out, gs_err *err);
int gs_db_plan_set(gs_db *db, int64_t device_id, int key_bits, const char *payload, int stable,
                   int bucket, const char *algorithm, const char *params, double median_ms,
                   gs_err *err);
/* The plan row just set (gs_db_plan_set, which clears it) gets its
 * baseline: what the untuned daemon would have run there (`algorithm`
 * with its built-in parameters) and its end-to-end time in the same
 * tune, ms. */
int gs_db_plan_set_baseline(gs_db *db, int64_t device_id, int key_bits, const char *payload,
                            int stable, int bucket, const char *algorithm, double ms,
                            gs_err *err);
/* Remove every plan row of the device, its rows and top-k rows too (it
 * is then served untuned); its trials and winners stay. */
int gs_db_plan_clear(gs_db *db, int64_t device_id, gs_err *err);
/* plan.extrapolated: how a row's size was chosen. */
enum {
    GS_DB_PLAN_MEASURED = 0,
    GS_DB_PLAN_EXTRAPOLATED = 1,  /* past the shape's largest measured size */
    GS_DB_PLAN_INTERPOLATED = 2,  /* between two measured sizes (sparse large n) */
    GS_DB_PLAN_AUDITED = 3,       /* replaced by the plan audit, which measured it
                                     faster end to end (issue 33) */
};
/* Mark the plan row just set (gs_db_plan_set, which writes rows as
 * measured) with another source (`how`): extrapolated or interpolated (its
 * size was not measured, its choice and time come from the candidates'
 * measured scaling), or audited. */
int gs_db_plan_mark_source(gs_db *db, int64_t device_id, int key_bits, const char *payload,
                           int stable, int bucket, int how, gs_err *err);
/* The plan row of this request shape at exactly this bucket; GS_ENOTFOUND
 * when there is none. (Serving picks the nearest bucket from the rows held
 * in memory, daemon/sched/gs_plans.c, and never queries.) */
int gs_db_plan_get(gs_db *db, int64_t device_id, int key_bits, const char *payload, int stable,
                   int bucket, gs_db_choice *out, gs_err *err);

/* The plan of requests that are not one flat array (schema 7, issue 38;
 * segments from 8): per kind, key width and payload, the route measured
 * fastest at a point of two sizes: bucket, floor(log2) of all the
 * request's keys, and sub, floor(log2) of a row's length (rows), of k
 * (top-k) or of the segments' mean length (segs). */
typedef struct gs_db_shape_row {
    char kind[8];              /* "rows", "topk" or "segs" */
    int key_bits;
    char payload[16];
    int bucket, sub;
    char algorithm[32];
    char params[512];          /* JSON */
    double median_ms;          /* end to end, through the scheduler */
    char baseline_algorithm[32];  /* what the untuned daemon ran there, "" none */
    double baseline_ms;        /* its time in the same measurement, < 0 none */
} gs_db_shape_row;
/* Write (or replace) the row of r's point. */
int gs_db_shape_set(gs_db *db, int64_t device_id, const gs_db_shape_row *r, gs_err *err);
/* Every such row of a device, handed to fn in no particular order; a
 * non-zero return from fn stops the walk and is returned. */
int gs_db_shape_each(gs_db *db, int64_t device_id,
                     int (*fn)(void *arg, const gs_db_shape_row *row), void *arg, gs_err *err);

/* Whether the device has any trial of `algorithm` measured by this code
 * (code_id): 1, 0, or a negative code. */
int gs_db_trials_any(gs_db *db, int64_t device_id, const char *algorithm, const char *code_id,
                     gs_err *err);

/* A row of the plan or the winners table, for loading them whole. */
typedef struct gs_db_row {
    gs_db_choice c;            /* algorithm, params, median_ms, bucket */
    int key_bits;
    char payload[16];
    int stable;                /* plan rows: 0 or 1; winners: -1 */
    int source;                /* plan rows: GS_DB_PLAN_* (measured, predicted, audited) */
} gs_db_row;
/* Every plan (winners) row of a device, handed to fn in no particular
 * order; a non-zero return from fn stops the walk and is returned. */
int gs_db_plan_each(gs_db *db, int64_t device_id, int (*fn)(void *arg, const gs_db_row *row),
                    void *arg, gs_err *err);
int gs_db_winner_each(gs_db *db, int64_t device_id,
                      int (*fn)(void *arg, const gs_db_row *row), void *arg, gs_err *err);
/* Statements this connection has prepared (each query or write is one):
 * lets the daemon's stats, and its tests, show that serving queries none. */
unsigned long gs_db_queries(const gs_db *db);

/* How many plan entries the device has (0 when untuned). */
int gs_db_plan_count(gs_db *db, int64_t device_id, long *count, gs_err *err);

/* Group several writes into one transaction (BEGIN IMMEDIATE ... COMMIT),
 * e.g. a device's whole plan, so readers see all of it or none. A failed
 * group is undone with gs_db_rollback (harmless without a transaction). */
int gs_db_begin(gs_db *db, gs_err *err);
int gs_db_commit(gs_db *db, gs_err *err);
void gs_db_rollback(gs_db *db);

/* Size bucket of n: floor(log2(n)), 0 for n <= 1. */
int gs_db_bucket(uint64_t n);

#endif
