/* Read-only queries over the tuning database, for gsort-query: the devices,
 * the winners, the plan, the trials, the devices that share one name across
 * driver versions, the best measured throughput per (algorithm, n) behind a
 * plot, and the rule that turns a user's device selector into one device.
 * Every query calls back once per row; the strings in a row live until the
 * callback returns, and a non-zero return from the callback ends the query
 * with that value. The database is opened by gs_dbq_open (read-only: a
 * missing file is an error, never created). */
#ifndef GS_DBQ_H
#define GS_DBQ_H

#include <stddef.h>
#include <stdint.h>

#include "gs_db.h"
#include "gs_err.h"

/* Open `path` (NULL: gs_db_default_path) read-only. A missing file is
 * GS_ENOTFOUND naming the path (nothing is created); an empty, foreign or
 * damaged file GS_ECORRUPT; a newer or older schema GS_EUNSUPPORTED. A
 * file in a directory this user cannot write is still read (gs_db_open). */
int gs_dbq_open(gs_db **out, const char *path, gs_err *err);

typedef struct gs_dbq_device {
    int64_t id;
    const char *platform, *name, *driver, *vendor, *type, *device_version;
    const char *first_seen, *last_seen;   /* "YYYY-MM-DDTHH:MM:SSZ" */
    int64_t compute_units, max_wg_size, local_mem, global_mem, max_alloc;
    int profiling;
    int64_t plan_entries, winners, trials;
} gs_dbq_device;

typedef int (*gs_dbq_device_fn)(void *ud, const gs_dbq_device *d);

/* Every device, by platform, name (ignoring case), first_seen and id. */
int gs_dbq_devices(gs_db *db, gs_dbq_device_fn fn, void *ud, gs_err *err);
/* One device by id; GS_ENOTFOUND if absent. */
int gs_dbq_device_get(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err);
/* Every driver version of device `id`'s (platform, name), oldest first
 * (first_seen, then id). */
int gs_dbq_same_device(gs_db *db, int64_t id, gs_dbq_device_fn fn, void *ud, gs_err *err);

/* A device row copied out of its callback (a gs_dbq_device's strings live
 * only until the callback returns), and a growing list of such copies. */
typedef struct gs_dbq_devcopy {
    int64_t id;
    char platform[256], name[256], driver[256];
    char first_seen[32], last_seen[32];
} gs_dbq_devcopy;

typedef struct gs_dbq_devlist {
    gs_dbq_devcopy *v;
    size_t n, cap;
} gs_dbq_devlist;

/* A gs_dbq_device_fn appending a copy of each row to the gs_dbq_devlist
 * `ud` (start from { 0 }; free its v when done). GS_ENOMEM, with no message,
 * when the list cannot grow: the query then ends with that code. */
int gs_dbq_devlist_add(void *ud, const gs_dbq_device *d);

/* Resolve a selector to one device id. `sel` is a device id (all digits),
 * or a case-insensitive substring of the device name; a name equal to
 * `sel` (ignoring case) wins over names that only contain it. Rows that
 * share one platform and name (driver versions of one device) count as
 * one device: the most recently seen of them is chosen. NULL or "": every
 * device matches, so a database with one device needs no selector. No
 * match or several devices: GS_ENOTFOUND / GS_EINVAL with a message
 * listing the candidates (id, name, driver). */
int gs_dbq_select(gs_db *db, const char *sel, int64_t *id, gs_err *err);
/* Does `sel` match device row `d` (the substring-or-id test alone)? */
int gs_dbq_matches(const gs_dbq_device *d, const char *sel);

/* What the winners, plan, trials and points queries keep. */
typedef struct gs_dbq_filter {
    int64_t device_id;        /* 0: every device */
    const char *algorithms;   /* "a" or "a,b": only these; NULL: all */
    int key_bits;             /* 32 or 64; 0: both */
    const char *payload;      /* NULL: every payload kind */
    int stable;               /* plan: -1 both, 0 or 1 */
    uint64_t n;               /* trials: 0 any */
    int valid;                /* trials: -1 any, 0 failed only, 1 valid only */
    const char *distribution; /* trials: NULL any */
    long limit;               /* trials: at most this many, newest first; 0: all */
} gs_dbq_filter;

void gs_dbq_filter_init(gs_dbq_filter *f);

/* A winners or plan row. */
typedef struct gs_dbq_choice {
    int64_t device_id;
    const char *algorithm;
    int key_bits;
    const char *payload;
    int stable;               /* plan rows; -1 for winners */
    int bucket;               /* n = 2^bucket */
    const char *params;       /* JSON object text */
    double median_ms;         /* winners: kernel time (host: wall); plan: end to end */
    int64_t trial_id;         /* winners: the trial behind it, 0 none; plan: 0 */
    const char *updated;
    int extrapolated;         /* plan rows: GS_DB_PLAN_*; winners: 0 */
    const char *baseline_algorithm;   /* plan rows: the untuned choice ("": unknown) */
    double baseline_ms;       /* its time in the same tune; <= 0: unknown */
    const char *kind;         /* rows and top-k plan rows: "rows" or "topk"; else NULL */
    int sub;                  /* and their row length or k, 2^sub */
} gs_dbq_choice;

typedef int (*gs_dbq_choice_fn)(void *ud, const gs_dbq_choice *c);

/* Winners by device, key_bits, payload, bucket, algorithm. */
int gs_dbq_winners(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud,
                   gs_err *err);
/* Plan entries by device, key_bits, payload, bucket, stable (the
 * algorithms filter keeps entries served by those algorithms). */
int gs_dbq_plan(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud, gs_err *err);
/* The rows, top-k and segments plan (schema 7, 8) by device, kind, key_bits, payload,
 * bucket, sub: kind and sub set, stable -1, the baseline as for plan rows. */
int gs_dbq_shapes(gs_db *db, const gs_dbq_filter *f, gs_dbq_choice_fn fn, void *ud,
                  gs_err *err);

typedef struct gs_dbq_trial {
    int64_t id, device_id;
    const char *algorithm;
    int key_bits;
    const char *payload;
    uint64_t n;
    const char *distribution, *params, *code_id;
    int timed;                /* median/min/max are set (valid trials) */
    double median_ms, min_ms, max_ms;
    int reps, valid;
    const char *reason;       /* why a failed trial failed, "" otherwise */
    const char *created;
} gs_dbq_trial;

typedef int (*gs_dbq_trial_fn)(void *ud, const gs_dbq_trial *t);

/* Trials, newest first, at most f->limit of them. */
int gs_dbq_trials(gs_db *db, const gs_dbq_filter *f, gs_dbq_trial_fn fn, void *ud, gs_err *err);
/* How many trials the filter keeps, ignoring its limit. */
int gs_dbq_trial_count(gs_db *db, const gs_dbq_filter *f, int64_t *count, gs_err *err);

/* The fastest valid trial of one (algorithm, n) on one device. */
typedef struct gs_dbq_point {
    const char *algorithm;
    uint64_t n;
    double median_ms;
    const char *params;
    const char *distribution;
    int64_t trial_id;
} gs_dbq_point;

typedef int (*gs_dbq_point_fn)(void *ud, const gs_dbq_point *p);

/* The fastest valid trial per (algorithm, n) for f->device_id (required),
 * f->key_bits (required) and f->payload (NULL: "none"), on the tuner's
 * "random" keys: the kernel time for device algorithms and the wall time
 * for the host sort; with `e2e`, an algorithm that has "random-e2e" trials
 * (wall time with transfers) uses those instead. By algorithm, then n. */
int gs_dbq_points(gs_db *db, const gs_dbq_filter *f, int e2e, gs_dbq_point_fn fn, void *ud,
                  gs_err *err);

/* Does any trial, winner or plan entry name algorithm `name`? */
int gs_dbq_algorithm_seen(gs_db *db, const char *name, int *seen, gs_err *err);

#endif
