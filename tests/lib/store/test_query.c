/* Tests of the read-only tuning-database queries (lib/store/gs_dbq.c) on a
 * database of known rows written through the gs_db API: opening (missing,
 * empty, newer), device selectors, winners/plan/trials filters and order,
 * and the plot's points (fastest valid "random" trial per n, end-to-end
 * where asked). `test_query --fixture PATH` writes that database and exits,
 * for tests/cli/query/gsort-query.test; `--newer PATH` writes a database with a
 * newer schema version. */
#include "config.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "gs_dbq.h"
#include "tap.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the fixture ---- */

typedef struct fixture {
    int64_t a5, a6, b, c;   /* cpu-fake driver 5.0 and 6.0, Fake GPU 9000, ... Ti */
    int ntrials, nfailed;
} fixture;

static gs_dev_info dev(const char *platform, const char *name, const char *driver,
                       cl_device_type type, unsigned cus, uint64_t mem)
{
    gs_dev_info in;
    memset(&in, 0, sizeof in);
    snprintf(in.platform, sizeof in.platform, "%s", platform);
    snprintf(in.name, sizeof in.name, "%s", name);
    snprintf(in.driver, sizeof in.driver, "%s", driver);
    snprintf(in.vendor, sizeof in.vendor, "Test Vendor");
    snprintf(in.version, sizeof in.version, "OpenCL 3.0");
    snprintf(in.c_version, sizeof in.c_version, "OpenCL C 1.2");
    in.type = type;
    in.compute_units = cus;
    in.max_wg_size = 1024;
    in.local_mem = 65536;
    in.global_mem = mem;
    in.max_alloc = mem / 4;
    in.profiling = 1;
    return in;
}

static void must(int rc, const gs_err *err, const char *what)
{
    if (rc)
        tap_bail("fixture: %s: %s", what, err->msg);
}

static int64_t trial(gs_db *db, fixture *fx, int64_t dev_id, const char *algo, int kb,
                     const char *payload, uint64_t n, const char *dist, const char *params,
                     double ms, const char *reason)
{
    gs_err err;
    int64_t id;
    gs_db_trial t = { .device_id = dev_id, .algorithm = algo, .key_bits = kb, .payload = payload,
                      .n = n, .distribution = dist, .params = params, .code_id = "test",
                      .median_ms = ms, .min_ms = ms * 0.9, .max_ms = ms * 1.2, .reps = 5,
                      .valid = reason == NULL, .reason = reason };
    must(gs_db_trial_add(db, &t, &id, &err), &err, "trial");
    fx->ntrials++;
    fx->nfailed += reason != NULL;
    return id;
}

static void plan(gs_db *db, int64_t d, int bucket, int stable, const char *algo, double ms)
{
    gs_err err;
    const char *params = strcmp(algo, "host") ? "{\"radix_bits\":8,\"wg_size\":128}" : "{}";
    must(gs_db_plan_set(db, d, 32, "none", stable, bucket, algo, params, ms, &err), &err, "plan");
}

static void shape(gs_db *db, int64_t d, const char *kind, const char *payload, int bucket,
                  int sub, const char *algo, const char *params, double ms, const char *base,
                  double base_ms)
{
    gs_err err;
    gs_db_shape_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    r.key_bits = 32;
    snprintf(r.payload, sizeof r.payload, "%s", payload);
    r.bucket = bucket;
    r.sub = sub;
    snprintf(r.algorithm, sizeof r.algorithm, "%s", algo);
    snprintf(r.params, sizeof r.params, "%s", params);
    r.median_ms = ms;
    snprintf(r.baseline_algorithm, sizeof r.baseline_algorithm, "%s", base);
    r.baseline_ms = base_ms;
    must(gs_db_shape_set(db, d, &r, &err), &err, "rows and top-k plan");
}

#define R8 "{\"radix_bits\":8,\"wg_size\":128}"
#define R4 "{\"radix_bits\":4,\"wg_size\":64}"
#define MP "{\"wg_size\":256,\"tile\":8}"

static void make_fixture(const char *path, fixture *fx)
{
    gs_db *db;
    gs_err err;
    memset(fx, 0, sizeof *fx);
    unlink(path);
    must(gs_db_open(&db, path, 0, &err), &err, "open");
    const char *pocl = "Portable Computing Language";
    gs_dev_info i5 = dev(pocl, "cpu-fake-Test CPU", "5.0", CL_DEVICE_TYPE_CPU, 4, 8ull << 30);
    gs_dev_info i6 = dev(pocl, "cpu-fake-Test CPU", "6.0", CL_DEVICE_TYPE_CPU, 4, 8ull << 30);
    gs_dev_info ib = dev("FakeGL", "Fake GPU 9000", "1.2.3", CL_DEVICE_TYPE_GPU, 80, 16ull << 30);
    gs_dev_info ic = dev("FakeGL", "Fake GPU 9000 Ti", "1.2.3", CL_DEVICE_TYPE_GPU, 96, 24ull << 30);
    must(gs_db_device_id(db, &i5, 1, &fx->a5, &err), &err, "device a5");
    must(gs_db_device_id(db, &i6, 1, &fx->a6, &err), &err, "device a6");
    must(gs_db_device_id(db, &ib, 1, &fx->b, &err), &err, "device b");
    must(gs_db_device_id(db, &ic, 1, &fx->c, &err), &err, "device c");

    /* Driver 5.0: a few trials and a plan (the older driver was faster
     * at 2^12, and had a 2^16 entry). */
    trial(db, fx, fx->a5, "radix", 32, "none", 4096, "random", R8, 0.05, NULL);
    trial(db, fx, fx->a5, "host", 32, "none", 4096, "random", "{}", 0.09, NULL);
    plan(db, fx->a5, 10, 0, "host", 0.03);
    plan(db, fx->a5, 10, 1, "host", 0.03);
    plan(db, fx->a5, 12, 0, "radix", 0.6);
    plan(db, fx->a5, 12, 1, "radix", 0.6);
    plan(db, fx->a5, 14, 0, "radix", 1.6);
    plan(db, fx->a5, 14, 1, "mergepath", 2.0);
    plan(db, fx->a5, 16, 0, "radix", 4.0);

    /* Driver 6.0: the full set. */
    int64_t a6 = fx->a6, w10, w12, w14, m10, m12, h10;
    trial(db, fx, a6, "radix", 32, "none", 1024, "random", R4, 0.08, NULL);
    w10 = trial(db, fx, a6, "radix", 32, "none", 1024, "random", R8, 0.05, NULL);
    w12 = trial(db, fx, a6, "radix", 32, "none", 4096, "random", R8, 0.1, NULL);
    w14 = trial(db, fx, a6, "radix", 32, "none", 16384, "random", R8, 0.3, NULL);
    trial(db, fx, a6, "radix", 32, "none", 1024, "random-e2e", R8, 0.5, NULL);
    trial(db, fx, a6, "radix", 32, "none", 4096, "random-e2e", R8, 0.8, NULL);
    trial(db, fx, a6, "radix", 32, "none", 16384, "random-e2e", R8, 1.5, NULL);
    /* Faster, but sorted input: never a plot point. */
    trial(db, fx, a6, "radix", 32, "none", 4096, "sorted", R8, 0.01, NULL);
    m10 = trial(db, fx, a6, "mergepath", 32, "none", 1024, "random", MP, 0.07, NULL);
    m12 = trial(db, fx, a6, "mergepath", 32, "none", 4096, "random", MP, 0.2, NULL);
    trial(db, fx, a6, "mergepath", 32, "none", 16384, "random", MP, 0,
          "CL_OUT_OF_RESOURCES: clEnqueueNDRangeKernel (mergepath_merge)");
    h10 = trial(db, fx, a6, "host", 32, "none", 1024, "random", "{}", 0.02, NULL);
    trial(db, fx, a6, "host", 32, "none", 4096, "random", "{}", 0.09, NULL);
    trial(db, fx, a6, "host", 32, "none", 16384, "random", "{}", 0.4, NULL);
    trial(db, fx, a6, "host", 32, "none", 65536, "random", "{}", 2.0, NULL);
    trial(db, fx, a6, "radix", 64, "none", 1024, "random", R8, 0.15, NULL);
    trial(db, fx, a6, "radix", 32, "u32", 1024, "random", R8, 0.09, NULL);

    must(gs_db_winner_set(db, a6, "radix", 32, "none", 10, R8, 0.05, w10, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "radix", 32, "none", 12, R8, 0.1, w12, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "radix", 32, "none", 14, R8, 0.3, w14, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "mergepath", 32, "none", 10, MP, 0.07, m10, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "mergepath", 32, "none", 12, MP, 0.2, m12, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "host", 32, "none", 10, "{}", 0.02, h10, &err), &err, "winner");
    must(gs_db_winner_set(db, a6, "radix", 64, "none", 10, R8, 0.15, 0, &err), &err, "winner");

    plan(db, a6, 10, 0, "host", 0.03);
    plan(db, a6, 10, 1, "host", 0.03);
    plan(db, a6, 12, 0, "radix", 0.9);
    plan(db, a6, 12, 1, "radix", 0.9);
    plan(db, a6, 14, 0, "radix", 1.6);
    plan(db, a6, 14, 1, "mergepath", 2.0);

    /* the rows and top-k plan: rows of 64 by bitonic at 2^20 (0.5 of the
     * untuned host's 1.0 ms), top-k of k 2^10 by the host at 2^24 (no
     * baseline known) */
    shape(db, a6, "rows", "none", 20, 6, "bitonic", "{\"wg_size\":256}", 0.5, "host", 1.0);
    shape(db, a6, "topk", "idx32", 24, 10, "host", "{}", 7.0, "", -1);
    gs_db_close(db);
}

/* A database whose schema is newer than this build's. */
static int make_newer(const char *path)
{
    fixture fx;
    make_fixture(path, &fx);
    sqlite3 *h;
    if (sqlite3_open(path, &h) != SQLITE_OK)
        return 1;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", gs_db_latest_version() + 7);
    int rc = sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK ||
             sqlite3_exec(h, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK;
    sqlite3_close(h);
    return rc;
}

/* ---- collecting rows ---- */

typedef struct rows {
    int n;
    int64_t ids[64];
    char text[64][96];
    double ms[64];
} rows;

/* Append a row: its id, time and text (printf); counted past 64, not kept. */
__attribute__((format(printf, 4, 5)))
static int row_add(rows *r, int64_t id, double ms, const char *fmt, ...)
{
    if (r->n < 64) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->text[r->n], sizeof r->text[0], fmt, ap);
        va_end(ap);
        r->ids[r->n] = id;
        r->ms[r->n] = ms;
    }
    r->n++;
    return 0;
}

static int dev_cb(void *ud, const gs_dbq_device *d)
{
    return row_add(ud, d->id, 0, "%s|%s|%lld", d->name, d->driver, (long long)d->plan_entries);
}

/* "driver:trials" per device: the trial count devices reports. */
static int dev_trials_cb(void *ud, const gs_dbq_device *d)
{
    return row_add(ud, d->id, 0, "%s:%lld", d->driver, (long long)d->trials);
}

static int choice_cb(void *ud, const gs_dbq_choice *c)
{
    return row_add(ud, c->device_id, c->median_ms, "%s/%d/%s/%d/%d", c->algorithm,
                   c->key_bits, c->payload, c->bucket, c->stable);
}

static int trial_cb(void *ud, const gs_dbq_trial *t)
{
    return row_add(ud, t->id, t->median_ms, "%s/%llu/%s/%d/%s", t->algorithm,
                   (unsigned long long)t->n, t->distribution, t->valid, t->reason);
}

static int point_cb(void *ud, const gs_dbq_point *p)
{
    return row_add(ud, p->trial_id, p->median_ms, "%s/%llu/%s", p->algorithm,
                   (unsigned long long)p->n, p->distribution);
}

static int find(const rows *r, const char *text)
{
    for (int i = 0; i < r->n && i < 64; i++)
        if (!strcmp(r->text[i], text))
            return i;
    return -1;
}

static int stop_cb(void *ud, const gs_dbq_trial *t)
{
    (void)t;
    return ++*(int *)ud == 2 ? 42 : 0;
}

/* ---- tests ---- */

static void test_open(const char *dir)
{
    char path[512];
    gs_db *db = NULL;
    gs_err err;
    struct stat sb;
    snprintf(path, sizeof path, "%s/missing.db", dir);
    int rc = gs_dbq_open(&db, path, &err);
    tap_ok(rc == GS_ENOTFOUND && !db && strstr(err.msg, path), "missing database: GS_ENOTFOUND "
           "naming the path (%s)", err.msg);
    tap_ok(stat(path, &sb) != 0, "... and the file was not created");

    snprintf(path, sizeof path, "%s/empty.db", dir);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    rc = gs_dbq_open(&db, path, &err);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "empty"), "empty file: GS_ECORRUPT (%s)", err.msg);

    snprintf(path, sizeof path, "%s/junk.db", dir);
    f = fopen(path, "w");
    if (f) {
        fputs("this is not an SQLite database, just some text that is long enough\n", f);
        fclose(f);
    }
    rc = gs_dbq_open(&db, path, &err);
    tap_ok(rc == GS_ECORRUPT, "a text file: GS_ECORRUPT (%s)", err.msg);

    snprintf(path, sizeof path, "%s/newer.db", dir);
    tap_ok(make_newer(path) == 0, "a newer-schema database was written");
    stat(path, &sb);
    off_t size = sb.st_size;
    rc = gs_dbq_open(&db, path, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "newer"), "newer schema: GS_EUNSUPPORTED (%s)",
           err.msg);
    tap_ok(stat(path, &sb) == 0 && sb.st_size == size, "... and the file is left as it was");
}

static void test_select(gs_db *db, const fixture *fx)
{
    gs_err err;
    int64_t id = -1;
    int rc = gs_dbq_select(db, "cpu-fake", &id, &err);
    tap_ok(rc == 0 && id == fx->a6, "\"cpu-fake\" (two driver versions) selects the newer, id %lld "
           "(got %lld)", (long long)fx->a6, (long long)id);
    rc = gs_dbq_select(db, "CPU-FAKE-test cpu", &id, &err);
    tap_ok(rc == 0 && id == fx->a6, "the whole name, in another case, selects it too");
    char sel[32];
    snprintf(sel, sizeof sel, "%lld", (long long)fx->a5);
    rc = gs_dbq_select(db, sel, &id, &err);
    tap_ok(rc == 0 && id == fx->a5, "id %s selects the older driver version", sel);
    rc = gs_dbq_select(db, "fake gpu 9000", &id, &err);
    tap_ok(rc == 0 && id == fx->b, "an exact name wins over a longer name containing it (got %lld)",
           (long long)id);
    rc = gs_dbq_select(db, "9000 ti", &id, &err);
    tap_ok(rc == 0 && id == fx->c, "a substring of one name selects that device");
    rc = gs_dbq_select(db, "fake", &id, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "several") && strstr(err.msg, "cpu-fake-Test CPU") &&
           strstr(err.msg, "Fake GPU 9000 Ti"), "\"fake\" is ambiguous, listing the candidates "
           "(%s)", err.msg);
    rc = gs_dbq_select(db, "gpu", &id, &err);
    tap_ok(rc == GS_EINVAL && !strstr(err.msg, "cpu-fake"), "the candidate list holds only the "
           "matching devices");
    rc = gs_dbq_select(db, "quantum", &id, &err);
    tap_ok(rc == GS_ENOTFOUND && strstr(err.msg, "quantum") && strstr(err.msg, "Fake GPU 9000"),
           "no match: GS_ENOTFOUND listing every device");
    rc = gs_dbq_select(db, "999", &id, &err);
    tap_ok(rc == GS_ENOTFOUND && strstr(err.msg, "999"), "an unknown id: GS_ENOTFOUND");
    rc = gs_dbq_select(db, NULL, &id, &err);
    tap_ok(rc == GS_EINVAL, "no selector with several devices: GS_EINVAL");
}

static void test_devices(gs_db *db, const fixture *fx)
{
    gs_err err;
    rows r = { 0 };
    int rc = gs_dbq_devices(db, dev_cb, &r, &err);
    tap_ok(rc == 0 && r.n == 4, "4 devices (got %d)", r.n);
    tap_ok(find(&r, "cpu-fake-Test CPU|5.0|7") >= 0 && find(&r, "cpu-fake-Test CPU|6.0|6") >= 0 &&
           find(&r, "Fake GPU 9000|1.2.3|0") >= 0, "names, drivers and plan-entry counts are "
           "the ones written");
    rows s = { 0 };
    rc = gs_dbq_same_device(db, fx->a6, dev_cb, &s, &err);
    tap_ok(rc == 0 && s.n == 2 && s.ids[0] == fx->a5 && s.ids[1] == fx->a6,
           "the same device across drivers: 5.0 then 6.0");
    /* Driver 6.0 has 17 rows in trials, 3 of them the random-e2e rows the
     * tuner writes beside a device trial: 14 trials, as the tuner counts. */
    rows t = { 0 };
    rc = gs_dbq_devices(db, dev_trials_cb, &t, &err);
    tap_ok(rc == 0 && find(&t, "6.0:14") >= 0 && find(&t, "5.0:2") >= 0 &&
           find(&t, "1.2.3:0") >= 0, "trial counts leave out the end-to-end rows: driver 6.0 "
           "has 14, 5.0 has 2, the GPUs 0");
    rows one = { 0 };
    rc = gs_dbq_device_get(db, fx->b, dev_cb, &one, &err);
    tap_ok(rc == 0 && one.n == 1 && one.ids[0] == fx->b, "one device by id");
    rc = gs_dbq_device_get(db, 12345, dev_cb, &one, &err);
    tap_ok(rc == GS_ENOTFOUND, "an absent id: GS_ENOTFOUND");
}

static void test_choices(gs_db *db, const fixture *fx)
{
    gs_err err;
    gs_dbq_filter f;
    gs_dbq_filter_init(&f);
    rows r = { 0 };
    int rc = gs_dbq_winners(db, &f, choice_cb, &r, &err);
    tap_ok(rc == 0 && r.n == 7, "7 winners (got %d)", r.n);
    f.algorithms = "radix";
    memset(&r, 0, sizeof r);
    gs_dbq_winners(db, &f, choice_cb, &r, &err);
    tap_ok(r.n == 4, "--algorithm radix: 4 winners (got %d)", r.n);
    f.key_bits = 32;
    memset(&r, 0, sizeof r);
    gs_dbq_winners(db, &f, choice_cb, &r, &err);
    int i = find(&r, "radix/32/none/12/-1");
    tap_ok(r.n == 3 && i >= 0 && r.ms[i] == 0.1, "... with 32-bit keys: 3, 2^12 at 0.1 ms");
    f.algorithms = "host,mergepath";
    f.key_bits = 0;
    memset(&r, 0, sizeof r);
    gs_dbq_winners(db, &f, choice_cb, &r, &err);
    tap_ok(r.n == 3 && find(&r, "radix/32/none/10/-1") < 0, "a list host,mergepath: 3 winners");

    gs_dbq_filter_init(&f);
    memset(&r, 0, sizeof r);
    rc = gs_dbq_plan(db, &f, choice_cb, &r, &err);
    tap_ok(rc == 0 && r.n == 13, "13 plan entries in all (got %d)", r.n);
    f.device_id = fx->a6;
    memset(&r, 0, sizeof r);
    gs_dbq_plan(db, &f, choice_cb, &r, &err);
    i = find(&r, "mergepath/32/none/14/1");
    tap_ok(r.n == 6 && i >= 0 && r.ms[i] == 2.0 && r.ids[0] == fx->a6,
           "driver 6.0: 6 entries, stable 2^14 by mergepath in 2.0 ms");
    tap_ok(!strcmp(r.text[0], "host/32/none/10/0") && !strcmp(r.text[1], "host/32/none/10/1"),
           "ordered by bucket, then stable");
    f.stable = 1;
    f.algorithms = "radix";
    memset(&r, 0, sizeof r);
    gs_dbq_plan(db, &f, choice_cb, &r, &err);
    tap_ok(r.n == 1 && find(&r, "radix/32/none/12/1") == 0, "stable entries served by radix: 1");
}

static void test_trials(gs_db *db, const fixture *fx)
{
    gs_err err;
    gs_dbq_filter f;
    gs_dbq_filter_init(&f);
    rows r = { 0 };
    int64_t count = 0;
    int rc = gs_dbq_trials(db, &f, trial_cb, &r, &err);
    gs_dbq_trial_count(db, &f, &count, &err);
    tap_ok(rc == 0 && r.n == fx->ntrials && count == fx->ntrials, "every trial (%d, count %lld)",
           r.n, (long long)count);
    int desc = 1;
    for (int i = 1; i < r.n; i++)
        desc &= r.ids[i] < r.ids[i - 1];
    tap_ok(desc, "newest first");
    f.limit = 3;
    memset(&r, 0, sizeof r);
    gs_dbq_trials(db, &f, trial_cb, &r, &err);
    gs_dbq_trial_count(db, &f, &count, &err);
    tap_ok(r.n == 3 && count == fx->ntrials, "limit 3: 3 rows, the count ignores the limit");
    gs_dbq_filter_init(&f);
    f.valid = 0;
    memset(&r, 0, sizeof r);
    gs_dbq_trials(db, &f, trial_cb, &r, &err);
    tap_ok(r.n == 1 && strstr(r.text[0], "mergepath/16384/random/0/CL_OUT_OF_RESOURCES"),
           "failed only: the mergepath trial and its reason");
    gs_dbq_filter_init(&f);
    f.n = 4096;
    f.distribution = "random";
    f.device_id = fx->a6;
    memset(&r, 0, sizeof r);
    gs_dbq_trials(db, &f, trial_cb, &r, &err);
    tap_ok(r.n == 3, "n=4096, random, driver 6.0: 3 trials (got %d)", r.n);
    gs_dbq_filter_init(&f);
    f.payload = "u32";
    memset(&r, 0, sizeof r);
    gs_dbq_trials(db, &f, trial_cb, &r, &err);
    tap_ok(r.n == 1 && r.ms[0] == 0.09, "payload u32: 1 trial");
    int calls = 0;
    gs_dbq_filter_init(&f);
    rc = gs_dbq_trials(db, &f, stop_cb, &calls, &err);
    tap_ok(rc == 42 && calls == 2, "a callback's non-zero return ends the query with it");
    int seen = 0;
    gs_dbq_algorithm_seen(db, "mergepath", &seen, &err);
    tap_ok(seen, "mergepath appears in the database");
    gs_dbq_algorithm_seen(db, "bogosort", &seen, &err);
    tap_ok(!seen, "bogosort does not");
}

static void test_points(gs_db *db, const fixture *fx)
{
    gs_err err;
    gs_dbq_filter f;
    gs_dbq_filter_init(&f);
    f.device_id = fx->a6;
    f.key_bits = 32;
    rows r = { 0 };
    int rc = gs_dbq_points(db, &f, 0, point_cb, &r, &err);
    tap_ok(rc == 0 && r.n == 9, "9 points: host 4, mergepath 2, radix 3 (got %d)", r.n);
    int i = find(&r, "radix/1024/random");
    tap_ok(i >= 0 && r.ms[i] == 0.05, "radix at 1024: the faster of two parameter sets (0.05 ms)");
    i = find(&r, "radix/4096/random");
    tap_ok(i >= 0 && r.ms[i] == 0.1, "radix at 4096: 0.1 ms, not the sorted input's 0.01");
    tap_ok(find(&r, "mergepath/16384/random") < 0, "the failed trial is no point");
    tap_ok(!strcmp(r.text[0], "host/1024/random") && !strcmp(r.text[8], "radix/16384/random"),
           "ordered by algorithm, then n");
    memset(&r, 0, sizeof r);
    gs_dbq_points(db, &f, 1, point_cb, &r, &err);
    i = find(&r, "radix/4096/random-e2e");
    tap_ok(r.n == 9 && i >= 0 && r.ms[i] == 0.8 && find(&r, "host/1024/random") >= 0 &&
           find(&r, "mergepath/4096/random") >= 0,
           "end to end: radix's e2e trials, random for host and mergepath (which have none)");
    f.key_bits = 64;
    memset(&r, 0, sizeof r);
    gs_dbq_points(db, &f, 0, point_cb, &r, &err);
    tap_ok(r.n == 1 && r.ms[0] == 0.15, "64-bit keys: one radix point");
    f.key_bits = 32;
    f.payload = "u32";
    memset(&r, 0, sizeof r);
    gs_dbq_points(db, &f, 0, point_cb, &r, &err);
    tap_ok(r.n == 1 && r.ms[0] == 0.09, "payload u32: one point");
    f.device_id = 0;
    rc = gs_dbq_points(db, &f, 0, point_cb, &r, &err);
    tap_ok(rc == GS_EINVAL, "points without a device: GS_EINVAL");
}

int main(int argc, char **argv)
{
    fixture fx;
    if (argc == 3 && !strcmp(argv[1], "--fixture")) {
        make_fixture(argv[2], &fx);
        printf("%lld %lld %lld %lld %d %d\n", (long long)fx.a5, (long long)fx.a6,
               (long long)fx.b, (long long)fx.c, fx.ntrials, fx.nfailed);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--newer"))
        return make_newer(argv[2]);

    char dir[] = "/tmp/test_query.XXXXXX";
    if (!mkdtemp(dir))
        tap_bail("mkdtemp failed");
    test_open(dir);

    char path[512];
    snprintf(path, sizeof path, "%s/q.db", dir);
    make_fixture(path, &fx);
    gs_db *db;
    gs_err err;
    if (gs_dbq_open(&db, path, &err) != 0)
        tap_bail("opening the fixture: %s", err.msg);
    tap_ok(1, "the fixture opens read-only");
    test_select(db, &fx);
    test_devices(db, &fx);
    test_choices(db, &fx);
    test_trials(db, &fx);
    test_points(db, &fx);
    gs_db_close(db);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
