/* Writes the seed databases of the fuzz_db target into DIR (argument):
 * real tuning databases made through the gs_db API (a device, trials,
 * winners and a plan), rewritten with 512-byte pages so the fuzzer's inputs
 * stay small; the same at schema version 1 (the migration path); and one
 * claiming a newer schema. Run by hand when the schema changes:
 *     make tests/fuzz/gen-db-seeds && tests/fuzz/gen-db-seeds ../tests/fuzz/corpus/db */
#include "config.h"
#include "gs_db.h"
#include "gs_dev.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const gs_err *err)
{
    fprintf(stderr, "gen-db-seeds: %s: %s\n", what, err ? err->msg : "failed");
    exit(1);
}

static void sql(gs_db *db, const char *q)
{
    char *msg = NULL;
    if (sqlite3_exec(gs_db_handle(db), q, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "gen-db-seeds: %s: %s\n", q, msg ? msg : "?");
        exit(1);
    }
}

/* A populated database at `path`; `extra` SQL run last (NULL: none). */
static void make(const char *path, int rows, const char *extra)
{
    gs_db *db;
    gs_err err;
    unlink(path);
    if (gs_db_open(&db, path, 0, &err))
        die(path, &err);
    gs_dev_info d;
    memset(&d, 0, sizeof d);
    strcpy(d.platform, "Portable Computing Language");
    strcpy(d.name, "cpu-fuzz");
    strcpy(d.driver, "3.1");
    strcpy(d.vendor, "fuzz");
    d.compute_units = 2;
    int64_t id;
    if (gs_db_device_id(db, &d, 1, &id, &err))
        die("device", &err);
    static const char *const algos[] = { "radix", "mergepath", "host" };
    for (int i = 0; i < rows; i++) {
        const char *a = algos[i % 3];
        int kb = i & 1 ? 64 : 32;
        const char *pl = i & 2 ? "u32" : "none";
        char params[64];
        snprintf(params, sizeof params, "{\"radix_bits\":%d}", 4 + i % 5);
        gs_db_trial t = { .device_id = id, .algorithm = a, .key_bits = kb, .payload = pl,
                          .n = 1u << (10 + i), .distribution = "random", .params = params,
                          .code_id = "seed", .median_ms = 1.0 + i, .min_ms = 1, .max_ms = 9,
                          .reps = 3, .valid = i != 2, .reason = i == 2 ? "failed" : "" };
        int64_t tid;
        if (gs_db_trial_add(db, &t, &tid, &err) ||
            gs_db_winner_set(db, id, a, kb, pl, 10 + i, params, 1.0 + i, tid, &err) ||
            gs_db_plan_set(db, id, kb, pl, i & 1, 10 + i, a, params, 1.0 + i, &err))
            die("rows", &err);
    }
    sql(db, "PRAGMA journal_mode=DELETE");
    sql(db, "PRAGMA page_size=512");
    sql(db, "VACUUM");
    if (extra)
        sql(db, extra);
    gs_db_close(db);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen-db-seeds DIR\n");
        return 2;
    }
    char p[4096];
    snprintf(p, sizeof p, "%s/gen-plan.db", argv[1]);
    make(p, 6, NULL);
    snprintf(p, sizeof p, "%s/gen-empty.db", argv[1]);
    make(p, 0, NULL);
    /* version 1: without trials.code_id, as gsortd 0.1 wrote it */
    snprintf(p, sizeof p, "%s/gen-v1.db", argv[1]);
    make(p, 2, "DROP INDEX trials_by_config; ALTER TABLE trials DROP COLUMN code_id;"
               " CREATE INDEX trials_by_config ON trials (device_id, algorithm, key_bits,"
               " payload, n, distribution, params); PRAGMA user_version = 1; VACUUM");
    snprintf(p, sizeof p, "%s/gen-newer.db", argv[1]);
    make(p, 1, "PRAGMA user_version = 99");
    return 0;
}
