/* The tuning database: schema creation and migration, refusal of newer or
 * damaged files (left untouched), device identity across driver versions,
 * the params columns' JSON (gs_params.h: exact for every long), trials /
 * winners / plan round trips with nearest-bucket lookup, a reader
 * running while a writer commits, SIGKILL during writes leaving a file
 * that passes integrity_check with every acknowledged write present, a
 * file in a directory this user cannot write (read-only opens still read
 * it; read-write ones name the cause), a page damaged in the middle
 * of the file (refused at open, the file untouched), and damage inside an
 * index that only the whole integrity_check sees: refused by read-write
 * opens, by the first write of a file too large to check at open, and
 * after an unclean shutdown (the -wal and -shm a killed process left);
 * gsortd --tune-all and --db-check refuse it (exit 1, what to do) and the
 * daemon serves with built-in defaults, saying so, its background tune
 * off; the file byte-for-byte as it was after all of it. */
#include "config.h"
#include "dmn.h"
#include "gs_client.h"
#include "gs_db.h"
#include "gs_db_int.h"
#include "gs_dev.h"
#include "gs_embed.h"
#include "gs_sha256.h"
#include "sortcheck.h"
#include "tap.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/gsortd-db-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static int file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static gs_dev_info fake_dev(const char *driver)
{
    gs_dev_info in;
    memset(&in, 0, sizeof in);
    snprintf(in.platform, sizeof in.platform, "Test Platform");
    snprintf(in.name, sizeof in.name, "Test Device");
    snprintf(in.driver, sizeof in.driver, "%s", driver);
    in.type = CL_DEVICE_TYPE_GPU;
    in.compute_units = 4;
    in.max_wg_size = 256;
    in.local_mem = 32768;
    in.global_mem = 1u << 30;
    in.max_alloc = 1u << 28;
    return in;
}

static gs_db_trial trial(int64_t dev, uint64_t n, const char *params, double ms)
{
    gs_db_trial t = { .device_id = dev, .algorithm = "radix", .key_bits = 32, .payload = "none",
                      .n = n, .distribution = "random", .params = params, .median_ms = ms,
                      .min_ms = ms * 0.9, .max_ms = ms * 1.1, .reps = 5, .valid = 1, .reason = "" };
    return t;
}

/* A radix set as saved before lookback existed, the same after migration
 * 005, and one that names lookback (which the migration leaves alone). */
#define RADIX3 "{\"radix_bits\":8,\"wg_size\":256,\"elems_per_thread\":14}"
#define RADIX3_LB0 "{\"radix_bits\":8,\"wg_size\":256,\"elems_per_thread\":14,\"lookback\":0}"
#define RADIX3_LB1 "{\"radix_bits\":8,\"wg_size\":256,\"elems_per_thread\":14,\"lookback\":1}"

/* The single integer a query returns, -1 on any failure. */
static long q_count(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st;
    long n = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return n;
}

static long count_trials(const char *path)
{
    sqlite3 *h;
    long n = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, "SELECT count(*) FROM trials", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(h);
    return n;
}

/* ---- reader while writer ---- */
struct rw { const char *path; int64_t dev; volatile int done; int reader_errors; int reads; int writer_rc; };

static void *writer(void *arg)
{
    struct rw *s = arg;
    gs_db *db;
    gs_err err;
    s->writer_rc = gs_db_open(&db, s->path, 0, &err);
    if (s->writer_rc) {
        s->done = 1;
        return NULL;
    }
    for (int i = 0; i < 300 && !s->writer_rc; i++) {
        gs_db_trial t = trial(s->dev, 1000 + (uint64_t)i, "{\"radix_bits\":4}", 1.0 + i);
        s->writer_rc = gs_db_trial_add(db, &t, NULL, &err);
        if (!s->writer_rc)
            s->writer_rc = gs_db_plan_set(db, s->dev, 32, "none", 1, i % 20, "radix",
                                          "{\"radix_bits\":4}", 1.0 + i, &err);
    }
    gs_db_close(db);
    s->done = 1;
    return NULL;
}

static void *reader(void *arg)
{
    struct rw *s = arg;
    gs_db *db;
    gs_err err;
    if (gs_db_open(&db, s->path, GS_DB_READONLY, &err)) {
        s->reader_errors++;
        return NULL;
    }
    while (!s->done) {
        gs_db_choice c;
        int rc = gs_db_plan_get(db, s->dev, 32, "none", 1, 12, &c, &err);
        if (rc && rc != GS_ENOTFOUND)
            s->reader_errors++;
        s->reads++;
    }
    gs_db_close(db);
    return NULL;
}

/* ---- a database in a directory this user cannot write ---- */

/* A small database at `p`: one device with one plan entry; its id, or -1. */
static int64_t make_small(const char *p)
{
    gs_db *db;
    gs_err err;
    int64_t id = -1;
    if (gs_db_open(&db, p, 0, &err))
        return -1;
    gs_dev_info d = fake_dev("1.0");
    if (gs_db_device_id(db, &d, 1, &id, &err) ||
        gs_db_plan_set(db, id, 32, "none", 0, 16, "radix", "{\"radix_bits\":8}", 1.0, &err))
        id = -1;
    gs_db_close(db);
    return id;
}

typedef struct ro_result {
    int ro_rc, immutable, plan_ok, rw_rc;
    char ro_msg[512], rw_msg[1024];
} ro_result;

/* Open `p` read-only (reading its plan) and then read-write. */
static void ro_try(const char *p, int64_t id, ro_result *r)
{
    gs_db *db;
    gs_err err;
    gs_err_clear(&err);
    r->ro_rc = gs_db_open(&db, p, GS_DB_READONLY, &err);
    snprintf(r->ro_msg, sizeof r->ro_msg, "%.500s", r->ro_rc ? err.msg : "opened");
    if (r->ro_rc == 0) {
        gs_db_choice c;
        r->immutable = gs_db_immutable(db);
        r->plan_ok = gs_db_plan_get(db, id, 32, "none", 0, 16, &c, &err) == 0 &&
                     strcmp(c.algorithm, "radix") == 0;
        gs_db_close(db);
    }
    gs_err_clear(&err);
    r->rw_rc = gs_db_open(&db, p, 0, &err);
    snprintf(r->rw_msg, sizeof r->rw_msg, "%.1000s", r->rw_rc ? err.msg : "opened");
    if (r->rw_rc == 0)
        gs_db_close(db);
}

/* SQLite must create PATH-wal and PATH-shm to read a WAL-mode file. Where
 * it cannot, a read-only open still reads the file (as immutable) and a
 * read-write one names the cause, not the ENOENT of SQLite's last try.
 * Two conditions that also hold as root: a file name too long to take the
 * "-wal" suffix (what SQLite meets on a read-only file system or a
 * chattr +i directory: CANTOPEN), and a 0555 directory opened by an
 * unprivileged process (uid 65534 when the test runs as root: EACCES). */
static void test_readonly_dir(void)
{
    char sub[600], p[700], longp[1400];
    path_of(sub, sizeof sub, "ro");
    mkdir(sub, 0755);
    snprintf(p, sizeof p, "%s/tuning.db", sub);
    int64_t id = make_small(p);
    tap_ok(id > 0, "a small database for the read-only cases");
    ro_result r;
    memset(&r, 0, sizeof r);
    ro_try(p, id, &r);
    tap_ok(r.ro_rc == 0 && !r.immutable && r.plan_ok && r.rw_rc == 0,
           "a writable directory: the plain read-only open is used (%s)", r.ro_msg);

    long nmax = pathconf(sub, _PC_NAME_MAX);
    if (nmax < 16 || nmax > 1000)
        nmax = 255;
    int l = snprintf(longp, sizeof longp, "%s/", sub);
    memset(longp + l, 'x', (size_t)nmax - 5);
    snprintf(longp + l + nmax - 5, sizeof longp - (size_t)l - (size_t)nmax + 5, ".db");
    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    int moved = rename(p, longp) == 0;
    sc_file_sha256(longp, before);
    memset(&r, 0, sizeof r);
    ro_try(longp, id, &r);
    sc_file_sha256(longp, after);
    tap_ok(moved && r.ro_rc == 0 && r.immutable && r.plan_ok,
           "-wal and -shm cannot be created (a %ld-byte name): read-only open reads the plan, "
           "as an immutable file (%s)", nmax - 2, r.ro_msg);
    tap_ok(r.rw_rc == GS_EIO && strstr(r.rw_msg, "too long") &&
           !strstr(r.rw_msg, "No such file"), "... read-write open names the cause: %.160s...",
           r.rw_msg);
    tap_ok(memcmp(before, after, sizeof before) == 0, "... and the file is unchanged");

    int back = rename(longp, p) == 0;
    /* the unprivileged child must reach the directory */
    int dirs = chmod(dir, 0755) == 0 && chmod(sub, 0555) == 0;
    int fds[2];
    if (pipe(fds))
        tap_bail("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        ro_result cr;
        memset(&cr, 0, sizeof cr);
        if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
            snprintf(cr.ro_msg, sizeof cr.ro_msg, "cannot become uid 65534: %s", strerror(errno));
        else
            ro_try(p, id, &cr);
        ssize_t w = write(fds[1], &cr, sizeof cr);
        _exit(w == (ssize_t)sizeof cr ? 0 : 1);
    }
    close(fds[1]);
    ro_result cr;
    memset(&cr, 0, sizeof cr);
    ssize_t got = 0, n;
    while (got < (ssize_t)sizeof cr && (n = read(fds[0], (char *)&cr + got, sizeof cr - (size_t)got)) > 0)
        got += n;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    chmod(sub, 0755);
    tap_ok(back && dirs && got == (ssize_t)sizeof cr && cr.ro_rc == 0 && cr.immutable && cr.plan_ok,
           "a 0555 directory%s: read-only open reads the plan, as an immutable file (%s)",
           geteuid() == 0 ? " (opened as uid 65534)" : "", cr.ro_msg);
    tap_ok(cr.rw_rc == GS_EIO && strstr(cr.rw_msg, "is not writable") && strstr(cr.rw_msg, sub) &&
           !strstr(cr.rw_msg, "No such file"), "... read-write open names the directory: %.200s",
           cr.rw_msg);
}

/* ---- a page damaged in the middle of the file ---- */

/* The check at open finds it: both opens refuse, saying what to do, and
 * the file stays byte-for-byte as it was (no journal-mode switch, no
 * migration, no write). */
static void test_damaged(void)
{
    char p[600], wal[700], shm[700];
    path_of(p, sizeof p, "mid.db");
    snprintf(wal, sizeof wal, "%s-wal", p);
    snprintf(shm, sizeof shm, "%s-shm", p);
    gs_db *db;
    gs_err err;
    int64_t id = 0;
    gs_dev_info d = fake_dev("1.0");
    int rc = gs_db_open(&db, p, 0, &err);
    if (rc == 0) {
        rc = gs_db_device_id(db, &d, 1, &id, &err);
        for (int i = 0; !rc && i < 400; i++) {
            gs_db_trial t = trial(id, 1000 + (uint64_t)i, "{\"radix_bits\":4}", 1.0 + i);
            rc = gs_db_trial_add(db, &t, NULL, &err);
        }
        gs_db_close(db);
    }
    long ps = 0, pages = 0, mid = 0;
    FILE *f = rc ? NULL : fopen(p, "r+b");
    unsigned char hdr[100];
    if (f && fread(hdr, 1, sizeof hdr, f) == sizeof hdr) {
        struct stat sb;
        ps = (hdr[16] << 8) | hdr[17];
        if (ps == 1)
            ps = 65536;
        pages = fstat(fileno(f), &sb) == 0 ? (long)(sb.st_size / ps) : 0;
        mid = pages / 2;   /* 0-based: page number mid + 1 */
        unsigned char junk[64];
        memset(junk, 0xff, sizeof junk);
        if (fseek(f, mid * ps, SEEK_SET) != 0 || fwrite(junk, 1, sizeof junk, f) != sizeof junk)
            pages = 0;
    }
    if (f)
        fclose(f);
    tap_ok(pages >= 8 && mid >= 2, "a %ld-page database with page %ld overwritten", pages, mid + 1);

    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    sc_file_sha256(p, before);
    rc = gs_db_open(&db, p, 0, &err);
    sc_file_sha256(p, after);
    tap_ok(rc == GS_ECORRUPT && db == NULL && strstr(err.msg, "is damaged") &&
           strstr(err.msg, "move it aside"), "read-write open refuses it, saying what to do: %s",
           err.msg);
    tap_ok(memcmp(before, after, sizeof before) == 0 && !file_exists(wal) && !file_exists(shm),
           "... and leaves it byte-for-byte as it was");
    rc = gs_db_open(&db, p, GS_DB_READONLY, &err);
    tap_ok(rc == GS_ECORRUPT && db == NULL && strstr(err.msg, "is damaged"),
           "read-only open refuses it too");
}

/* ---- damage inside an index ---- */

/* SQLite's own view of the file at `p`, read as immutable (no -wal or -shm
 * made, nothing written). */
static sqlite3 *open_immutable(const char *p)
{
    char uri[700];
    snprintf(uri, sizeof uri, "file:%s?immutable=1", p);
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(uri, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return NULL;
    }
    return h;
}

static long sql_long(sqlite3 *h, const char *sql, const char *arg)
{
    sqlite3_stmt *st;
    long v = -1;
    if (h && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (arg)
            sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = (long)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* The first line SQLite answers `pragma` with. */
static void sqlite_says(const char *p, const char *pragma, char *out, size_t len)
{
    sqlite3 *h = open_immutable(p);
    sqlite3_stmt *st;
    snprintf(out, len, "cannot ask");
    if (h && sqlite3_prepare_v2(h, pragma, -1, &st, NULL) == SQLITE_OK) {
        int rc = sqlite3_step(st);
        snprintf(out, len, "%s", rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
                                                  : sqlite3_errmsg(h));
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
}

/* Flip the last two bytes of the root page of `index` in the file at `p`
 * (found from sqlite_master.rootpage and the page size): the end of the
 * page holds the first cell written, whose last bytes are the row id that
 * entry points to. The b-tree stays well formed, so quick_check passes it;
 * integrity_check finds a row missing from the index. 0 when SQLite sees
 * exactly that (else the test's premise does not hold: -1, diagnosed). */
static int flip_index(const char *p, const char *index)
{
    sqlite3 *h = open_immutable(p);
    long ps = sql_long(h, "PRAGMA page_size", NULL);
    long root = sql_long(h, "SELECT rootpage FROM sqlite_master WHERE type='index' AND name=?1",
                         index);
    sqlite3_close(h);
    FILE *f = ps > 0 && root > 0 ? fopen(p, "r+b") : NULL;
    unsigned char b[2] = { 0, 0 };
    int ok = f && fseek(f, root * ps - 2, SEEK_SET) == 0 && fread(b, 1, 2, f) == 2;
    b[0] ^= 0xff;
    b[1] ^= 0xff;
    ok = ok && fseek(f, root * ps - 2, SEEK_SET) == 0 && fwrite(b, 1, 2, f) == 2;
    if (f)
        ok = fclose(f) == 0 && ok;
    char q[512], ic[512];
    sqlite_says(p, "PRAGMA quick_check", q, sizeof q);
    sqlite_says(p, "PRAGMA integrity_check", ic, sizeof ic);
    if (ok && !strcmp(q, "ok") && strstr(ic, index))
        return 0;
    tap_diag("%s: page size %ld, root page %ld; quick_check: %s; integrity_check: %s", index, ps,
             root, q, ic);
    return -1;
}

/* A database with rows in every table, so that every index has entries. */
static int make_full(const char *p)
{
    gs_db *db;
    gs_err err;
    int64_t id = 0, tid = 0;
    gs_dev_info d = fake_dev("1.0");
    int rc = gs_db_open(&db, p, 0, &err);
    if (rc)
        return rc;
    rc = gs_db_device_id(db, &d, 1, &id, &err);
    for (int i = 0; !rc && i < 400; i++) {
        gs_db_trial t = trial(id, 1000 + (uint64_t)i, "{\"radix_bits\":4}", 1.0 + i);
        rc = gs_db_trial_add(db, &t, &tid, &err);
    }
    for (int b = 10; !rc && b < 15; b++) {
        rc = gs_db_winner_set(db, id, "radix", 32, "none", b, "{\"radix_bits\":4}", 1.0, tid,
                              &err);
        rc = rc ? rc : gs_db_plan_set(db, id, 32, "none", 0, b, "radix", "{\"radix_bits\":4}",
                                      1.0, &err);
    }
    gs_db_close(db);
    if (rc)
        tap_diag("building %s: %s", p, err.msg);
    return rc;
}

static int copy_file(const char *from, const char *to)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    return system(cmd) == 0 ? 0 : -1;
}

/* -wal and -shm as a process that is killed leaves them: a child opens
 * `p` with SQLite, reads it (which makes both files) and is SIGKILLed.
 * 1 when both are there after. */
static int leave_wal(const char *p)
{
    int fds[2];
    if (pipe(fds))
        tap_bail("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        sqlite3 *h;
        char c = 1;
        if (sqlite3_open_v2(p, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
            sqlite3_exec(h, "SELECT count(*) FROM devices", NULL, NULL, NULL) != SQLITE_OK)
            c = 0;
        if (write(fds[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    char c = 0;
    ssize_t r = read(fds[0], &c, 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char w[700], m[700];
    snprintf(w, sizeof w, "%s-wal", p);
    snprintf(m, sizeof m, "%s-shm", p);
    return r == 1 && c == 1 && file_exists(w) && file_exists(m);
}

static int says_recovery(const char *msg, const char *index)
{
    return strstr(msg, "is damaged") && strstr(msg, index) && strstr(msg, "move it aside") &&
           strstr(msg, "gsortd --tune-all") && strstr(msg, "gsortd --db-check");
}

/* Every index damaged in turn: read-write opens refuse it, saying what to
 * do, the file left as it was. Then, with one of them: a file too large
 * to check at open (a zero time bound stands for it) opens, and its first
 * write checks the whole file and is refused; GS_DB_FULL_CHECK and the
 * files left by a killed process make the open check the whole file
 * whatever its size. */
static void test_index_damage(void)
{
    static const char *const idx[] = { "trials_by_config", "sqlite_autoindex_plan_1",
                                       "sqlite_autoindex_winners_1", "sqlite_autoindex_devices_1" };
    char base[600], p[600], wal[700], shm[700], q[600];
    path_of(base, sizeof base, "full.db");
    path_of(p, sizeof p, "idx.db");
    path_of(q, sizeof q, "whole.db");
    snprintf(wal, sizeof wal, "%s-wal", p);
    snprintf(shm, sizeof shm, "%s-shm", p);
    if (!tap_ok(make_full(base) == 0, "a database with rows in every table"))
        return;
    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    gs_db *db;
    gs_err err;
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        int flipped = copy_file(base, p) == 0 && flip_index(p, idx[i]) == 0;
        tap_ok(flipped, "%s damaged: SQLite's quick_check passes it, its integrity_check does "
               "not", idx[i]);
        sc_file_sha256(p, before);
        gs_err_clear(&err);
        int rc = gs_db_open(&db, p, 0, &err);
        sc_file_sha256(p, after);
        tap_ok(rc == GS_ECORRUPT && db == NULL && says_recovery(err.msg, idx[i]),
               "... read-write open refuses it, naming the index and what to do: %s", err.msg);
        tap_ok(memcmp(before, after, sizeof before) == 0 && !file_exists(wal) &&
               !file_exists(shm), "... and leaves it byte-for-byte as it was, no -wal or -shm");
        if (rc == 0)
            gs_db_close(db);
    }

    /* p has the last index damaged; too large to check at open: */
    db_set_open_check_s(0);
    sc_file_sha256(p, before);
    int rc = gs_db_open(&db, p, 0, &err);
    int checked = rc == 0 ? gs_db_checked(db) : -1;
    tap_ok(rc == 0 && checked == 0, "a file too large to check at open opens unchecked (%s, "
           "checked %d)", rc ? err.msg : "opened", checked);
    if (rc == 0) {
        gs_db_trial t = trial(1, 77, "{}", 1.0);
        gs_err_clear(&err);
        rc = gs_db_trial_add(db, &t, NULL, &err);
        tap_ok(rc == GS_ECORRUPT && says_recovery(err.msg, idx[3]),
               "... its first write checks the whole file first, and is refused: %s", err.msg);
        gs_err_clear(&err);
        rc = gs_db_plan_set(db, 1, 32, "none", 0, 9, "host", "{}", 1.0, &err);
        int rc2 = gs_db_begin(db, &err);
        tap_ok(rc == GS_ECORRUPT && rc2 == GS_ECORRUPT, "... and so is every write after it, "
               "and a transaction");
        gs_db_close(db);
    }
    sc_file_sha256(p, after);
    tap_ok(memcmp(before, after, sizeof before) == 0 && !file_exists(wal),
           "... the file byte-for-byte as it was");
    rc = gs_db_open(&db, p, GS_DB_FULL_CHECK, &err);
    tap_ok(rc == GS_ECORRUPT && db == NULL && says_recovery(err.msg, idx[3]),
           "GS_DB_FULL_CHECK checks the whole file whatever its size: refused");
    if (rc == 0)
        gs_db_close(db);

    /* An unclean shutdown: the whole check at open, whatever the size. */
    int whole = copy_file(base, q) == 0;
    rc = gs_db_open(&db, q, 0, &err);
    checked = rc == 0 ? gs_db_checked(db) : -1;
    gs_db_close(db);
    int left = whole && leave_wal(q);
    rc = gs_db_open(&db, q, 0, &err);
    int checked2 = rc == 0 ? gs_db_checked(db) : -1;
    gs_db_close(db);
    tap_ok(left && checked == 0 && checked2 == 1, "a whole file too large to check at open: "
           "unchecked after a clean close (%d), checked whole when a killed process left its "
           "-wal and -shm (%d)", checked, checked2);
    int left2 = leave_wal(p);
    sc_file_sha256(p, before);
    rc = gs_db_open(&db, p, 0, &err);
    sc_file_sha256(p, after);
    tap_ok(left2 && rc == GS_ECORRUPT && db == NULL && says_recovery(err.msg, idx[3]),
           "the damaged one, after a killed process left its -wal and -shm: refused at open: %s",
           err.msg);
    tap_ok(memcmp(before, after, sizeof before) == 0 && file_exists(wal) && file_exists(shm),
           "... the file as it was, and its -wal and -shm left as they were found");
    if (rc == 0)
        gs_db_close(db);
    db_set_open_check_s(0.5);
}

/* The programs, with a real tuning database (gsortd --tune-all, the host
 * sort on the first device) damaged inside the plan's index: --tune-all
 * and --db-check refuse it, exit 1, saying what to do; a daemon serving
 * from it (tune_missing=yes, so that its background tune would write)
 * says so loudly, serves with the built-in defaults where the whole copy
 * serves its tuned plan, and tunes nothing; the file is byte-for-byte as
 * it was after all of it. */

/* One u32 sort through daemon d, checked: 1 when right, with the plan
 * that served it ("tuned", "default"...) in plan, else why not. */
static int sort_plan(const dmn *d, char *plan, size_t len)
{
    gs_client *c = NULL;
    gs_err err;
    gs_err_clear(&err);
    snprintf(plan, len, "no answer");
    if (gs_client_connect(&c, d->sock, &err)) {
        snprintf(plan, len, "connect: %.200s", err.msg);
        return 0;
    }
    gs_client_set_timeout(c, 180 * dmn_slowdown());
    sc_case k;
    if (sc_case_init(&k, GS_DT_U32, GS_PL_NONE, 0, 50000, SC_RANDOM, 5))
        tap_bail("out of memory");
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32, .payload = GS_PL_NONE },
                         .n = 50000,
                         .device = -1 };
    gs_client_result res;
    char why[600];
    int ok = dmn_sort_check(c, &s, &k, &res, why, sizeof why);
    snprintf(plan, len, "%s", ok ? res.plan : why);
    sc_case_free(&k);
    gs_client_close(c);
    return ok;
}

static void test_programs(void)
{
    static dmn tune, rtune, check, good, bad;
    char gp[600], bp[600], bwal[700];
    snprintf(gp, sizeof gp, "%s/good.db", dmn_tmpdir());
    snprintf(bp, sizeof bp, "%s/bad.db", dmn_tmpdir());
    snprintf(bwal, sizeof bwal, "%s-wal", bp);
    const char *const targs[] = { "--tune-all", "--quick", "--algorithms", "host", "--payloads",
                                  "none", "--max-log2", "16", "--db", gp, "--cache-dir",
                                  dmn_cachedir(), NULL };
    int rc = dmn_run(&tune, "tune", targs, 300);
    if (!tap_ok(rc == 0, "gsortd --tune-all (host sort, up to 2^16) builds a database: exit %d",
                rc)) {
        dmn_dump_log(&tune, 20);
        return;
    }
    int flipped = copy_file(gp, bp) == 0 && flip_index(bp, "sqlite_autoindex_plan_1") == 0;
    tap_ok(flipped, "a copy with the plan's index damaged (quick_check passes it)");
    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    sc_file_sha256(bp, before);

    const char *const rargs[] = { "--tune-all", "--quick", "--algorithms", "host", "--payloads",
                                  "none", "--max-log2", "16", "--db", bp, "--cache-dir",
                                  dmn_cachedir(), NULL };
    rc = dmn_run(&rtune, "retune", rargs, 300);
    int said = dmn_log_contains(&rtune, "is damaged") &&
               dmn_log_contains(&rtune, "sqlite_autoindex_plan_1") &&
               dmn_log_contains(&rtune, "move it aside") &&
               dmn_log_contains(&rtune, "gsortd --db-check") &&
               !dmn_log_contains(&rtune, "results in");
    if (!tap_ok(rc == 1 && said, "gsortd --tune-all on it: exit %d, refused, saying what to do",
                rc))
        dmn_dump_log(&rtune, 10);
    const char *const cargs[] = { "--db-check", "--db", bp, NULL };
    rc = dmn_run(&check, "check", cargs, 120);
    if (!tap_ok(rc == 1 && dmn_log_contains(&check, "sqlite_autoindex_plan_1") &&
                dmn_log_contains(&check, "move it aside"), "gsortd --db-check on it: exit %d, "
                "naming the index and what to do", rc))
        dmn_dump_log(&check, 10);

    char plan[640];
    const char *const extra[] = { "-o", "tune_missing=yes", "--log-level", "info", NULL };
    if (dmn_start(&good, "good", NULL, extra) == 0) {
        int ok = sort_plan(&good, plan, sizeof plan);
        tap_ok(ok && !strcmp(plan, "tuned"), "a daemon serving from the whole database: a "
               "sort from its tuned plan (%s)", plan);
        dmn_stop(&good, SIGTERM, 60);
    } else {
        tap_ok(0, "a daemon serving from the whole database started");
    }
    if (dmn_start(&bad, "bad", NULL, extra) == 0) {
        int ok = sort_plan(&bad, plan, sizeof plan);
        tap_ok(ok && !strcmp(plan, "default"), "a daemon serving from the damaged one: the sort "
               "is right, with the built-in defaults (%s)", plan);
        int st = dmn_stop(&bad, SIGTERM, 60);
        int loud = dmn_log_contains(&bad, "error: tuning database") &&
                   dmn_log_contains(&bad, "sqlite_autoindex_plan_1") &&
                   dmn_log_contains(&bad, "serving with built-in defaults") &&
                   dmn_log_contains(&bad, "tune_missing: the tuning database") &&
                   !dmn_log_contains(&bad, "in the background");
        if (!tap_ok(st == 0 && loud, "... its log says so as an error, and that it tunes "
                    "nothing into it; exit %d on SIGTERM", st))
            dmn_dump_log(&bad, 20);
    } else {
        tap_ok(0, "a daemon serving from the damaged database started");
    }
    sc_file_sha256(bp, after);
    tap_ok(memcmp(before, after, sizeof before) == 0 && !file_exists(bwal),
           "after all of it the file is byte-for-byte as it was");
}

/* ---- SIGKILL during writes: the child acknowledges each commit on a pipe ---- */
static void child_writer(const char *path, int fd, int64_t dev)
{
    gs_db *db;
    gs_err err;
    if (gs_db_open(&db, path, 0, &err))
        _exit(3);
    for (unsigned i = 0;; i++) {
        gs_db_trial t = trial(dev, 10 + i, "{\"wg_size\":64}", 2.0);
        if (gs_db_trial_add(db, &t, NULL, &err))
            _exit(4);
        char c = 1;
        if (write(fd, &c, 1) != 1)
            _exit(5);
    }
}

int main(void)
{
    gs_err err;
    setvbuf(stdout, NULL, _IOLBF, 0);
    dmn_init();
    if (!mkdtemp(dir))
        tap_bail("mkdtemp failed");
    char p[512], wal[600];

    /* Fresh database: created, migrated, WAL. */
    path_of(p, sizeof p, "fresh.db");
    gs_db *db = NULL;
    int rc = gs_db_open(&db, p, 0, &err);
    tap_ok(rc == 0, "fresh database opens: %s", rc ? err.msg : "ok");
    if (rc)
        return tap_done();
    tap_ok(gs_db_version(db) == gs_db_latest_version() && gs_db_latest_version() >= 1,
           "schema version is the latest (%d)", gs_db_version(db));
    tap_ok(gs_db_check(db, &err) == 0, "integrity_check ok");
    /* the tables migration 006 rebuilt left no free pages behind */
    long freepages = q_count(gs_db_handle(db), "SELECT freelist_count FROM pragma_freelist_count");
    tap_ok(freepages == 0, "a new database has no free pages after its migrations (%ld)",
           freepages);
    gs_db_close(db);
    snprintf(wal, sizeof wal, "%s", p);
    {
        sqlite3 *h;
        sqlite3_open(p, &h);
        sqlite3_stmt *st;
        sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL);
        int is_wal = sqlite3_step(st) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
        sqlite3_finalize(st);
        sqlite3_close(h);
        tap_ok(is_wal, "journal mode is WAL");
    }

    /* Reopening keeps data and does not migrate again. */
    rc = gs_db_open(&db, p, 0, &err);
    gs_dev_info d1 = fake_dev("1.0"), d2 = fake_dev("2.0");
    int64_t id1 = 0, id1b = 0, id2 = 0, idx = 0;
    rc = rc ? rc : gs_db_device_id(db, &d1, 1, &id1, &err);
    tap_ok(rc == 0 && id1 > 0, "device inserted (id %lld)", (long long)id1);
    d1.compute_units = 8;   /* properties refresh, identity stays */
    rc = gs_db_device_id(db, &d1, 1, &id1b, &err);
    tap_ok(rc == 0 && id1b == id1, "same identity, same id");
    rc = gs_db_device_id(db, &d2, 1, &id2, &err);
    tap_ok(rc == 0 && id2 != id1, "a new driver version is a new device");
    gs_dev_info d3 = fake_dev("3.0");
    rc = gs_db_device_id(db, &d3, 0, &idx, &err);
    tap_ok(rc == GS_ENOTFOUND, "lookup without create of an unknown device: GS_ENOTFOUND");

    /* Parameters as JSON. */
    gs_params ps, back;
    gs_params_clear(&ps);
    gs_params_set(&ps, "radix_bits", 8);
    gs_params_set(&ps, "wg_size", 256);
    char json[512];
    rc = gs_params_to_json(&ps, json, sizeof json, &err);
    tap_ok(rc == 0 && strcmp(json, "{\"radix_bits\":8,\"wg_size\":256}") == 0, "params to JSON: %s", json);
    rc = gs_params_from_json(json, &back, &err);
    tap_ok(rc == 0 && back.count == 2 && gs_params_get(&back, "wg_size", 0) == 256, "params from JSON");
    tap_ok(gs_params_from_json("[1,2]", &back, &err) == GS_EINVAL, "JSON array rejected");
    tap_ok(gs_params_from_json("{\"a\":1.5}", &back, &err) == GS_EINVAL, "non-integer parameter rejected");
    tap_ok(gs_params_from_json("{\"a\":", &back, &err) == GS_EINVAL, "truncated JSON rejected");
    {
        /* Every long survives the trip, written as digits, not through a double. */
        gs_params big, bb;
        gs_params_clear(&big);
        gs_params_set(&big, "hi", LONG_MAX);
        gs_params_set(&big, "lo", LONG_MIN);
        gs_params_set(&big, "odd", 9007199254740993L);
        char bj[256];
        rc = gs_params_to_json(&big, bj, sizeof bj, &err);
        int rc2 = rc ? rc : gs_params_from_json(bj, &bb, &err);
        tap_ok(rc2 == 0 && bb.count == 3 && gs_params_get(&bb, "hi", 0) == LONG_MAX &&
               gs_params_get(&bb, "lo", 0) == LONG_MIN &&
               gs_params_get(&bb, "odd", 0) == 9007199254740993L &&
               !strcmp(bj, "{\"hi\":9223372036854775807,\"lo\":-9223372036854775808,"
                       "\"odd\":9007199254740993}"), "params JSON is exact for every long: %s",
               rc2 ? err.msg : bj);
        rc = gs_params_from_json("{\"a\":9223372036854775808}", &bb, &err);
        tap_ok(rc == GS_EINVAL && strstr(err.msg, "out of range"), "a value past LONG_MAX is "
               "refused: %s", err.msg);
        rc = gs_params_from_json("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,"
                                 "\"g\":7,\"h\":8,\"i\":9}", &bb, &err);
        tap_ok(rc == GS_ETOOBIG, "more than %d parameters: %s", GS_MAX_PARAMS, err.msg);
        rc = gs_params_to_json(&ps, bj, 10, &err);
        tap_ok(rc == GS_ETOOBIG, "params JSON longer than the buffer: GS_ETOOBIG");
    }

    /* Trials: valid and invalid, lookup newest of a configuration. */
    gs_db_trial t = trial(id1, 4096, json, 3.5);
    int64_t tid = 0, tid2 = 0;
    rc = gs_db_trial_add(db, &t, &tid, &err);
    tap_ok(rc == 0 && tid > 0, "trial recorded");
    t.median_ms = 2.5;
    rc = gs_db_trial_add(db, &t, &tid2, &err);
    double ms = 0;
    int valid = -1;
    int64_t got = 0;
    rc = gs_db_trial_lookup(db, &t, &ms, &valid, &got, &err);
    tap_ok(rc == 0 && got == tid2 && ms == 2.5 && valid == 1, "lookup returns the newest trial of the configuration");
    gs_db_trial bad = trial(id1, 4096, "{\"radix_bits\":9}", 0);
    bad.valid = 0;
    bad.reason = "radix_bits=9 out of range";
    rc = gs_db_trial_add(db, &bad, NULL, &err);
    rc = rc ? rc : gs_db_trial_lookup(db, &bad, &ms, &valid, NULL, &err);
    tap_ok(rc == 0 && valid == 0, "an invalid trial is recorded as invalid");
    gs_db_trial newer = t;
    newer.code_id = "other-kernels";
    tap_ok(gs_db_trial_lookup(db, &newer, &ms, &valid, NULL, &err) == GS_ENOTFOUND,
           "a trial measured with other code is not found");
    gs_db_trial other = trial(id2, 4096, json, 1.0);
    tap_ok(gs_db_trial_lookup(db, &other, &ms, &valid, NULL, &err) == GS_ENOTFOUND,
           "trials are per device: the other driver has none");

    /* Winners and plan rows, each at its bucket. */
    tap_ok(gs_db_bucket(0) == 0 && gs_db_bucket(1) == 0 && gs_db_bucket(1024) == 10 &&
           gs_db_bucket(1025) == 10 && gs_db_bucket(UINT64_C(1) << 40) == 40, "size buckets are floor(log2 n)");
    rc = gs_db_winner_set(db, id1, "radix", 32, "none", 12, json, 2.5, tid2, &err);
    rc = rc ? rc : gs_db_winner_set(db, id1, "radix", 32, "none", 12, "{\"radix_bits\":4}", 2.0, tid, &err);
    gs_db_choice c;
    rc = rc ? rc : gs_db_winner_get(db, id1, "radix", 32, "none", 12, &c, &err);
    tap_ok(rc == 0 && strcmp(c.params, "{\"radix_bits\":4}") == 0 && c.median_ms == 2.0,
           "winner replaced in place");
    gs_db_plan_set(db, id1, 32, "none", 1, 10, "host", "{}", 0.1, &err);
    gs_db_plan_set(db, id1, 32, "none", 1, 20, "radix", json, 5.0, &err);
    rc = gs_db_plan_get(db, id1, 32, "none", 1, 10, &c, &err);
    tap_ok(rc == 0 && strcmp(c.algorithm, "host") == 0 && c.bucket == 10 && c.median_ms == 0.1,
           "the plan row at 2^10 reads back");
    rc = gs_db_plan_get(db, id1, 32, "none", 1, 20, &c, &err);
    tap_ok(rc == 0 && strcmp(c.algorithm, "radix") == 0 && c.bucket == 20, "the plan row at 2^20 "
           "reads back");
    rc = gs_db_plan_get(db, id1, 32, "none", 1, 12, &c, &err);
    tap_ok(rc == GS_ENOTFOUND, "no row at 2^12: GS_ENOTFOUND (the nearest one is the daemon's "
           "lookup, tests/daemon/sched/test_plans.c)");
    rc = gs_db_plan_get(db, id1, 32, "none", 0, 10, &c, &err);
    tap_ok(rc == GS_ENOTFOUND, "no row for the other stability");
    rc = gs_db_plan_get(db, id2, 32, "none", 1, 10, &c, &err);
    tap_ok(rc == GS_ENOTFOUND, "a device with no plan: GS_ENOTFOUND (%s)", err.msg);
    rc = gs_db_plan_get(db, id1, 64, "none", 1, 10, &c, &err);
    tap_ok(rc == GS_ENOTFOUND, "no plan for another key class");
    gs_db_close(db);

    /* Read-only open sees the data. */
    rc = gs_db_open(&db, p, GS_DB_READONLY, &err);
    rc = rc ? rc : gs_db_plan_get(db, id1, 32, "none", 1, 20, &c, &err);
    tap_ok(rc == 0 && strcmp(c.algorithm, "radix") == 0, "read-only open reads the plan");
    gs_db_close(db);

    /* A newer schema is refused and the file left byte-for-byte as it was. */
    path_of(p, sizeof p, "newer.db");
    {
        sqlite3 *h;
        sqlite3_open(p, &h);
        sqlite3_exec(h, "CREATE TABLE future (x); PRAGMA user_version = 99;", NULL, NULL, NULL);
        sqlite3_close(h);
    }
    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    sc_file_sha256(p, before);
    rc = gs_db_open(&db, p, 0, &err);
    sc_file_sha256(p, after);
    snprintf(wal, sizeof wal, "%s-wal", p);
    tap_ok(rc == GS_EUNSUPPORTED && db == NULL, "newer schema refused (%s)", gs_strerror(rc));
    tap_ok(strstr(err.msg, "99") && strstr(err.msg, "newer"), "message names the version: %s", err.msg);
    tap_ok(memcmp(before, after, sizeof before) == 0 && !file_exists(wal), "newer database untouched (no WAL switch)");

    /* Not a database: a clear error, the file untouched. */
    path_of(p, sizeof p, "garbage.db");
    FILE *f = fopen(p, "wb");
    for (int i = 0; f && i < 512; i++)
        fputs("this is not a database. ", f);
    if (f)
        fclose(f);
    sc_file_sha256(p, before);
    rc = gs_db_open(&db, p, 0, &err);
    sc_file_sha256(p, after);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "not a gsortd tuning database"), "garbage file: %s", err.msg);
    tap_ok(memcmp(before, after, sizeof before) == 0, "garbage file untouched");

    /* Migration from an empty (version 0) file, and read-only refuses to migrate. */
    path_of(p, sizeof p, "v0.db");
    {
        sqlite3 *h;
        sqlite3_open(p, &h);
        sqlite3_exec(h, "CREATE TABLE keepme (x); INSERT INTO keepme VALUES (42);", NULL, NULL, NULL);
        sqlite3_close(h);
    }
    rc = gs_db_open(&db, p, GS_DB_READONLY, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "older"), "read-only open of an old schema asks for a migration");
    rc = gs_db_open(&db, p, 0, &err);
    tap_ok(rc == 0 && gs_db_version(db) == gs_db_latest_version(), "version 0 migrated to %d", gs_db_latest_version());
    gs_db_close(db);
    {
        sqlite3 *h;
        sqlite3_open(p, &h);
        sqlite3_stmt *st;
        sqlite3_prepare_v2(h, "SELECT x FROM keepme", -1, &st, NULL);
        int kept = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 42;
        sqlite3_finalize(st);
        sqlite3_close(h);
        tap_ok(kept, "migration keeps existing data");
    }

    /* Every earlier schema version migrates forward: build each version v
     * from the first v migration files, put a trial in where the schema
     * has trials, and open it with this gsortd. */
    extern const gs_embed gs_db_migrations[];
    for (int v = 1; v < gs_db_latest_version(); v++) {
        char vp[600];
        snprintf(vp, sizeof vp, "%s/v%d.db", dir, v);
        sqlite3 *h;
        int ok = sqlite3_open(vp, &h) == SQLITE_OK;
        for (int i = 0; ok && i < v; i++)
            ok = sqlite3_exec(h, gs_db_migrations[i].text, NULL, NULL, NULL) == SQLITE_OK;
        ok = ok && sqlite3_exec(h,
            "INSERT INTO devices (platform, name, driver) VALUES ('P', 'D', '1');"
            "INSERT INTO trials (device_id, algorithm, key_bits, payload, n, distribution, params,"
            " median_ms, valid) VALUES (1, 'mergepath', 32, 'none', 1024, 'random', '{}', 1.5, 1),"
            " (1, 'radix', 32, 'none', 1024, 'random', '" RADIX3 "', 2.5, 1),"
            " (1, 'radix', 32, 'none', 2048, 'random', '" RADIX3_LB1 "', 3.5, 1);"
            "INSERT INTO winners (device_id, algorithm, key_bits, payload, bucket, params,"
            " median_ms, trial_id) VALUES (1, 'radix', 32, 'none', 10, '" RADIX3 "', 2.5, 2);"
            "INSERT INTO plan (device_id, key_bits, payload, stable, bucket, algorithm, params,"
            " median_ms) VALUES (1, 32, 'none', 0, 10, 'host', '{}', 0.25),"
            " (1, 32, 'none', 0, 11, 'radix', '" RADIX3 "', 0.5);",
            NULL, NULL, NULL) == SQLITE_OK;
        /* a rows plan row where the schema has them (7 on) */
        if (ok && v >= 7)
            ok = sqlite3_exec(h, "INSERT INTO shape_plan (device_id, kind, key_bits, payload,"
                              " bucket, sub, algorithm, params, median_ms) VALUES (1, 'rows', 32,"
                              " 'none', 20, 10, 'host', '{}', 4.5)", NULL, NULL, NULL) == SQLITE_OK;
        sqlite3_close(h);
        rc = ok ? gs_db_open(&db, vp, 0, &err) : -1;
        tap_ok(rc == 0 && gs_db_version(db) == gs_db_latest_version(),
               "schema version %d migrates to %d: %s", v, gs_db_latest_version(), rc ? err.msg : "ok");
        if (rc)
            continue;
        gs_db_trial old = trial(1, 1024, "{}", 0);
        old.algorithm = "mergepath";
        old.code_id = NULL;   /* rows from before code_id match only the empty id */
        double oms = 0;
        tap_ok(gs_db_trial_lookup(db, &old, &oms, NULL, NULL, &err) == 0 && oms == 1.5,
               "version %d trial kept through the migration", v);
        /* radix sets from before lookback meant lookback=0; now that a name
         * left out takes its default (2 on a GPU), migration 005 writes the
         * 0 into every table, and leaves a set that names it alone */
        gs_db_trial r3 = trial(1, 1024, RADIX3_LB0, 0), r1 = trial(1, 2048, RADIX3_LB1, 0);
        r3.code_id = r1.code_id = NULL;
        double r3ms = 0, r1ms = 0;
        int tr = gs_db_trial_lookup(db, &r3, &r3ms, NULL, NULL, &err) == 0 && r3ms == 2.5 &&
                 gs_db_trial_lookup(db, &r1, &r1ms, NULL, NULL, &err) == 0 && r1ms == 3.5;
        int wn = q_count(gs_db_handle(db), "SELECT count(*) FROM winners WHERE algorithm = 'radix' "
                         "AND json_extract(params, '$.lookback') = 0 AND "
                         "json_extract(params, '$.elems_per_thread') = 14") == 1;
        int pl = q_count(gs_db_handle(db), "SELECT count(*) FROM plan WHERE algorithm = 'radix' "
                         "AND json_extract(params, '$.lookback') = 0") == 1 &&
                 q_count(gs_db_handle(db), "SELECT count(*) FROM plan WHERE algorithm = 'host' "
                         "AND params = '{}'") == 1;
        if (v < 5)
            tap_ok(tr && wn && pl, "version %d radix sets without lookback get lookback=0 (trial "
                   "%d, winner %d, plan %d; one naming lookback=1 kept)", v, tr, wn, pl);
        else    /* rows written after 005 are left as they are */
            tap_ok(q_count(gs_db_handle(db), "SELECT count(*) FROM trials WHERE algorithm = "
                           "'radix' AND json_type(params, '$.lookback') IS NULL") == 1,
                   "version %d radix sets written after migration 005 left alone", v);
        old.code_id = "current-code";
        tap_ok(gs_db_trial_lookup(db, &old, &oms, NULL, NULL, &err) == GS_ENOTFOUND,
               "version %d trial is not reused for other code", v);
        tap_ok(gs_db_check(db, &err) == 0, "migrated version %d passes integrity_check", v);
        /* a plan row from before the baseline (schema version 4) has none,
         * and is still served */
        sqlite3_stmt *st = NULL;
        int nob = sqlite3_prepare_v2(gs_db_handle(db), "SELECT count(*) FROM plan WHERE "
                                     "baseline_algorithm = '' AND baseline_ms IS NULL AND "
                                     "algorithm = 'host'", -1, &st, NULL) == SQLITE_OK &&
                  sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
        sqlite3_finalize(st);
        gs_db_choice pc;
        tap_ok(nob && gs_db_plan_get(db, 1, 32, "none", 0, 10, &pc, &err) == 0 &&
               !strcmp(pc.algorithm, "host") && pc.median_ms == 0.25,
               "version %d plan row kept, without a baseline, and read", v);
        /* migration 006 rebuilt the three tables for keys of 8 to 64 bits:
         * the winner still points at its trial, by the table's own name,
         * the index is back, a 16-bit row goes in and a 12-bit one not */
        sqlite3 *hh = gs_db_handle(db);
        int fk = q_count(hh, "SELECT count(*) FROM winners w JOIN trials t ON w.trial_id = t.id "
                         "AND t.n = 1024 AND t.algorithm = 'radix'") == 1 &&
                 q_count(hh, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%_new%'") == 0 &&
                 q_count(hh, "SELECT count(*) FROM pragma_foreign_key_check") == 0;
        int ix = q_count(hh, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                         "name = 'trials_by_config'") == 1;
        int w16 = sqlite3_exec(hh, "INSERT INTO plan (device_id, key_bits, payload, stable, bucket,"
                               " algorithm, params, median_ms) VALUES (1, 16, 'none', 0, 10, 'host',"
                               " '{}', 0.1)", NULL, NULL, NULL) == SQLITE_OK;
        int w12 = sqlite3_exec(hh, "INSERT INTO trials (device_id, algorithm, key_bits, payload, n,"
                               " distribution, params, valid) VALUES (1, 'host', 12, 'none', 1,"
                               " 'random', '{}', 1)", NULL, NULL, NULL) == SQLITE_OK;
        tap_ok(fk && ix && w16 && !w12, "version %d: key_bits of any key width after 006 (winner's "
               "trial %d, index %d, 16-bit row %d, 12-bit row refused %d)", v, fk, ix, w16, !w12);
        /* migration 008 made shape_plan again for segments: a rows row kept,
         * a 'segs' row goes in, an unknown kind not */
        int kept = v < 7 || q_count(hh, "SELECT count(*) FROM shape_plan WHERE kind = 'rows' AND "
                                    "bucket = 20 AND sub = 10 AND median_ms = 4.5") == 1;
        int segs = sqlite3_exec(hh, "INSERT INTO shape_plan (device_id, kind, key_bits, payload,"
                                " bucket, sub, algorithm, params, median_ms) VALUES (1, 'segs', 32,"
                                " 'none', 20, 6, 'bitonic', '{}', 1.5)", NULL, NULL, NULL) ==
                   SQLITE_OK;
        int odd = sqlite3_exec(hh, "INSERT INTO shape_plan (device_id, kind, key_bits, payload,"
                               " bucket, sub, algorithm, params, median_ms) VALUES (1, 'lex', 32,"
                               " 'none', 20, 6, 'host', '{}', 1.5)", NULL, NULL, NULL) == SQLITE_OK;
        tap_ok(kept && segs && !odd, "version %d: shape_plan after 008 (a rows row kept %d, a "
               "segs row %d, another kind refused %d)", v, kept, segs, !odd);
        gs_db_close(db);
    }

    /* Unopenable path. */
    rc = gs_db_open(&db, "/nonexistent-dir/x/tuning.db", 0, &err);
    tap_ok(rc == GS_EIO && strstr(err.msg, "/nonexistent-dir/x/tuning.db"), "unopenable path: %s", err.msg);

    /* Default location follows GSORTD_DATA_DIR. */
    char ddir[600];
    path_of(ddir, sizeof ddir, "data/sub");
    setenv("GSORTD_DATA_DIR", ddir, 1);
    rc = gs_db_open(&db, NULL, 0, &err);
    tap_ok(rc == 0 && strstr(gs_db_path(db), "data/sub/tuning.db"), "default path under GSORTD_DATA_DIR: %s",
           rc ? err.msg : gs_db_path(db));
    gs_db_close(db);

    /* A reader keeps reading while a writer commits. */
    path_of(p, sizeof p, "rw.db");
    rc = gs_db_open(&db, p, 0, &err);
    int64_t rdev = 0;
    rc = rc ? rc : gs_db_device_id(db, &d1, 1, &rdev, &err);
    gs_db_close(db);
    struct rw s = { .path = p, .dev = rdev };
    pthread_t tw, tr;
    pthread_create(&tr, NULL, reader, &s);
    pthread_create(&tw, NULL, writer, &s);
    pthread_join(tw, NULL);
    pthread_join(tr, NULL);
    tap_ok(s.writer_rc == 0, "writer committed 300 trials and plan rows");
    tap_ok(s.reader_errors == 0 && s.reads > 0, "reader ran %d lookups meanwhile with no error", s.reads);
    tap_ok(count_trials(p) == 300, "all 300 trials present");

    /* SIGKILL during writes, repeatedly. */
    path_of(p, sizeof p, "kill.db");
    rc = gs_db_open(&db, p, 0, &err);
    int64_t kdev = 0;
    rc = rc ? rc : gs_db_device_id(db, &d1, 1, &kdev, &err);
    gs_db_close(db);
    srand((unsigned)time(NULL));
    long acked_total = 0;
    int all_ok = 1;
    for (int round = 0; round < 8; round++) {
        int fds[2];
        if (pipe(fds))
            tap_bail("pipe");
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            child_writer(p, fds[1], kdev);
        }
        close(fds[1]);
        usleep(20000 + (useconds_t)(rand() % 60000));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        char buf[4096];
        ssize_t r;
        while ((r = read(fds[0], buf, sizeof buf)) > 0)
            acked_total += r;
        close(fds[0]);
        long have = count_trials(p);
        rc = gs_db_open(&db, p, 0, &err);
        int ok = rc == 0 && gs_db_check(db, &err) == 0;
        gs_db_close(db);
        /* Every acknowledged commit is there; at most one more (killed between commit and ack). */
        if (!ok || have < acked_total || have > acked_total + round + 1) {
            all_ok = 0;
            tap_diag("round %d: integrity %s, %ld rows, %ld acknowledged", round, ok ? "ok" : err.msg, have, acked_total);
        }
        acked_total = have;
    }
    tap_ok(all_ok && acked_total > 0, "8 SIGKILLs mid-write: integrity ok, every acknowledged trial kept (%ld rows)",
           acked_total);

    test_readonly_dir();
    test_damaged();
    test_index_damage();
    test_programs();

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
