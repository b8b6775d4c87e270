/* libFuzzer target for opening a damaged tuning database: the input is
 * written as the database file and opened the ways gsortd and the tools do,
 * read-only (the daemon's plan lookups, gsort-query) and read-write (the
 * tuner: migrations, new trials, winners and plan entries), with
 * gs_db_check in both. Any error is fine; a crash or a sanitizer report is
 * a finding, and so is a write into a file that failed its check, or a
 * file refused by the check at open that is not byte-for-byte the input. The seeds in tests/fuzz/corpus/db/ are real databases written
 * through this API (tests/fuzz/gen_db_seeds.c) plus a few broken files. Also
 * built with the normal compiler into the corpus replay test
 * (tests/fuzz/replay.c). */
#include "config.h"
#include "gs_db.h"
#include "gs_dev.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static char dir[256], file[300], wal[310], shm[310], journal[320];

static void cleanup(void)
{
    unlink(file);
    unlink(wal);
    unlink(shm);
    unlink(journal);
}

static void remove_dir(void)
{
    cleanup();
    if (dir[0])
        rmdir(dir);
}

static int setup(void)
{
    if (dir[0])
        return 0;
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gsortd-fuzz-db.XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(dir)) {
        dir[0] = '\0';
        return -1;
    }
    snprintf(file, sizeof file, "%s/tuning.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", file);
    snprintf(shm, sizeof shm, "%s-shm", file);
    snprintf(journal, sizeof journal, "%s-journal", file);
    atexit(remove_dir);
    return 0;
}

static int write_file(const uint8_t *data, size_t size)
{
    cleanup();
    FILE *f = fopen(file, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Whether the file holds exactly `data`. */
static int file_is(const uint8_t *data, size_t size)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return 0;
    int same = 1;
    size_t off = 0, n;
    uint8_t buf[4096];
    while (same && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        same = off + n <= size && memcmp(buf, data + off, n) == 0;
        off += n;
    }
    fclose(f);
    return same && off == size;
}

static const gs_dev_info *device(void)
{
    static gs_dev_info d;
    strcpy(d.platform, "Portable Computing Language");
    strcpy(d.name, "cpu-fuzz");
    strcpy(d.driver, "3.1");
    strcpy(d.vendor, "fuzz");
    d.compute_units = 2;
    return &d;
}

/* What the daemon does with a plan: look it up for every request shape and
 * parse its parameters. */
static void lookups(gs_db *db)
{
    gs_err err;
    static const char *const pl[] = { "none", "u32", "u64", "idx32", "idx64" };
    int64_t id = 1;
    if (gs_db_device_id(db, device(), 0, &id, &err) != 0)
        id = 1;     /* a damaged file may still have rows for device 1 */
    long count = -1;
    gs_db_plan_count(db, id, &count, &err);
    for (int kb = 32; kb <= 64; kb += 32)
        for (int p = 0; p < 5; p++) {
            gs_db_choice ch;
            gs_params params;
            if (gs_db_plan_get(db, id, kb, pl[p], p & 1, 10 + p, &ch, &err) == 0) {
                CHECK(memchr(ch.algorithm, '\0', sizeof ch.algorithm));
                CHECK(memchr(ch.params, '\0', sizeof ch.params));
                gs_params_from_json(ch.params, &params, &err);
            }
            if (gs_db_winner_get(db, id, "radix", kb, pl[p], 16, &ch, &err) == 0)
                gs_params_from_json(ch.params, &params, &err);
        }
    gs_db_trial t = { .device_id = id, .algorithm = "radix", .key_bits = 32,
                      .payload = "none", .n = 1 << 16, .distribution = "random",
                      .params = "{\"radix_bits\":8}", .code_id = "" };
    double ms;
    int valid;
    int64_t tid;
    gs_db_trial_lookup(db, &t, &ms, &valid, &tid, &err);
}

/* What the tuner does: record a device, a trial, a winner and a plan. */
static void writes(gs_db *db)
{
    gs_err err;
    int64_t id, tid = 0;
    if (gs_db_device_id(db, device(), 1, &id, &err) != 0)
        return;
    gs_db_trial t = { .device_id = id, .algorithm = "radix", .key_bits = 32,
                      .payload = "none", .n = 1 << 16, .distribution = "random",
                      .params = "{\"radix_bits\":8}", .code_id = "fuzz",
                      .median_ms = 1.5, .min_ms = 1, .max_ms = 2, .reps = 3, .valid = 1 };
    gs_db_trial_add(db, &t, &tid, &err);
    if (gs_db_begin(db, &err) == 0) {
        if (gs_db_winner_set(db, id, "radix", 32, "none", 16, t.params, 1.5, tid, &err) == 0 &&
            gs_db_plan_set(db, id, 32, "none", 0, 16, "radix", t.params, 1.5, &err) == 0)
            gs_db_commit(db, &err);
        else
            gs_db_rollback(db);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() < 0 || write_file(data, size) < 0)
        return 0;
    gs_db *db;
    gs_err err;
    err.msg[0] = '\0';
    int rc = gs_db_open(&db, file, GS_DB_READONLY, &err);
    if (rc == 0) {
        CHECK(db != NULL);
        gs_db_check(db, &err);
        lookups(db);
        gs_db_close(db);
    } else {
        CHECK(db == NULL && rc < 0 && err.msg[0]);
    }

    err.msg[0] = '\0';
    rc = gs_db_open(&db, file, 0, &err);
    if (rc == 0) {
        CHECK(db != NULL);
        gs_db_version(db);
        if (gs_db_check(db, &err) == 0) {
            /* opened read-write: migrated to this build's schema */
            CHECK(gs_db_version(db) == gs_db_latest_version());
            writes(db);
        } else {
            /* a file that failed the check is never written into */
            int64_t id;
            CHECK(gs_db_device_id(db, device(), 1, &id, &err) != 0);
        }
        lookups(db);
        gs_db_close(db);
    } else {
        CHECK(db == NULL && rc < 0 && err.msg[0]);
        /* refused by the check: left byte-for-byte as it was */
        if (strstr(err.msg, "nothing was written into it"))
            CHECK(file_is(data, size));
    }
    cleanup();
    return 0;
}
