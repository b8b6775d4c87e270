/* Opening the tuning database (gs_db.h): the version check before anything
 * is written, the read-only fallbacks for a file in a directory this user
 * cannot write, the checks that refuse a damaged file (bounded at every
 * open, whole before any write), the forward-only migration loop,
 * transactions, and the SQLite error helpers the row accessors (gs_db.c)
 * share. */
#include "config.h"
#include "gs_db.h"
#include "gs_db_int.h"
#include "gs_embed.h"
#include "gs_paths.h"
#include "gs_log.h"
#include "gs_time.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern const gs_embed gs_db_migrations[];
extern const size_t gs_db_migrations_count;

int gs_db_latest_version(void) { return (int)gs_db_migrations_count; }
const char *gs_db_path(const gs_db *db) { return db->path; }
int gs_db_immutable(const gs_db *db) { return db->immutable; }
sqlite3 *gs_db_handle(gs_db *db) { return db->h; }

int db_code_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return GS_ECORRUPT;
    case SQLITE_NOMEM:
        return GS_ENOMEM;
    default:
        return GS_EIO;
    }
}

/* The operating system's reason behind SQLite's last error ("; No space
 * left on device"), or "" when SQLite kept none: a full disk or a
 * read-only file system then says so instead of only "disk I/O error". */
const char *db_os_reason(gs_db *db, char *buf, size_t len)
{
    int e = db->h ? sqlite3_system_errno(db->h) : 0;
    if (e)
        snprintf(buf, len, "; %s", strerror(e));
    else if (len)
        buf[0] = '\0';
    return buf;
}

int db_fail(gs_db *db, int rc, gs_err *err, const char *what)
{
    char why[128];
    return gs_err_set(err, db_code_of(rc), "database %s: %s: %s%s", db->path, what,
                      db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                      db_os_reason(db, why, sizeof why));
}

int db_exec(gs_db *db, const char *sql, gs_err *err)
{
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : db_fail(db, rc, err, sql);
}

int db_prepare(gs_db *db, const char *sql, sqlite3_stmt **st, gs_err *err)
{
    db->queries++;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    if (rc != SQLITE_OK)
        return db_fail(db, rc, err, "prepare");
    /* a write: only into a file that passed the whole check */
    if (!sqlite3_stmt_readonly(*st) && (rc = db_writable(db, err)) != 0) {
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

/* Step a write statement to completion and finalize it. */
int db_step_done(gs_db *db, sqlite3_stmt *st, gs_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : db_fail(db, rc, err, what);
    sqlite3_finalize(st);
    return ret;
}

unsigned long gs_db_queries(const gs_db *db)
{
    return db ? db->queries : 0;
}

int gs_db_version(gs_db *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

/* A migration that rebuilds a table (006) leaves the old one's pages on
 * the free list: a new database would start 20 KiB larger than its rows.
 * Given back once, after migrating, by VACUUM (a transaction of its own,
 * safe against a kill like any other); where it cannot run now (a reader
 * holds the file) the pages stay free for later rows, which is only
 * space, so the open goes on and the log says why. */
static void compact_after_migrating(gs_db *db)
{
    sqlite3_stmt *st;
    int freed = 0;
    if (sqlite3_prepare_v2(db->h, "PRAGMA freelist_count", -1, &st, NULL) == SQLITE_OK) {
        freed = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        sqlite3_finalize(st);
    }
    if (freed <= 0)
        return;
    char *msg = NULL;
    if (sqlite3_exec(db->h, "VACUUM", NULL, NULL, &msg) != SQLITE_OK)
        GS_INFO("database %s: %d free pages after migrating were left for later rows (VACUUM: "
                "%s)", db->path, freed, msg ? msg : "failed");
    sqlite3_free(msg);
}

/* Apply migration i (0-based: file NNN = i+1) in one transaction, unless
 * another process got there first. */
static int migrate_one(gs_db *db, size_t i, gs_err *err)
{
    const gs_embed *m = &gs_db_migrations[i];
    if (atoi(m->name) != (int)i + 1)
        return gs_err_set(err, GS_ECORRUPT, "migration %s is out of sequence (expected number %zu)",
                          m->name, i + 1);
    int rc = db_exec(db, "BEGIN IMMEDIATE", err);
    if (rc)
        return rc;
    int v = gs_db_version(db);
    if (v < 0) {
        db_exec(db, "ROLLBACK", NULL);
        return db_fail(db, SQLITE_ERROR, err, "reading the schema version");
    }
    if (v > (int)i) {
        db_exec(db, "ROLLBACK", NULL);
        return 0;
    }
    char *msg = NULL;
    int src = sqlite3_exec(db->h, m->text, NULL, NULL, &msg);
    if (src != SQLITE_OK || gs_db_version(db) != (int)i + 1) {
        gs_err_set(err, GS_ECORRUPT, "database %s: migration %s failed: %s", db->path, m->name,
                   msg ? msg : "it did not set user_version");
        sqlite3_free(msg);
        db_exec(db, "ROLLBACK", NULL);
        return GS_ECORRUPT;
    }
    return db_exec(db, "COMMIT", err);
}

int gs_db_default_path(char *buf, size_t len, gs_err *err)
{
    char dir[4000];
    int rc = gs_paths_data_dir(dir, sizeof dir);
    if (rc)
        return gs_err_set(err, rc, "no default database location (set --db or GSORTD_DATA_DIR)");
    if ((size_t)snprintf(buf, len, "%s/tuning.db", dir) >= len)
        return gs_err_set(err, GS_ETOOBIG, "the default database path under %s is too long", dir);
    return 0;
}

/* The directory part of `path`: "." for a bare name, "/" for "/name". */
static void dir_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* snprintf that may cut a long path short (a message, not a path). */
__attribute__((format(printf, 3, 4)))
static void say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Why SQLite could not open the -wal and -shm files it keeps beside a
 * WAL-mode database, into buf ("" when no cause is found). SQLite's own
 * errno is that of its last attempt, a read-only open of the missing file
 * (ENOENT), which hides the cause: an unwritable directory (EACCES, EROFS,
 * EPERM for chattr +i), a name too long, or a file that is there but
 * cannot be opened. *absent: neither file exists. */
static void wal_files_note(const char *path, char *buf, size_t len, int *absent)
{
    static const char *const sfx[] = { "-wal", "-shm" };
    char dir[4096], f[4200];
    struct stat sb;
    buf[0] = '\0';
    *absent = 1;
    dir_of(path, dir, sizeof dir);
    for (int i = 0; i < 2; i++) {
        snprintf(f, sizeof f, "%s%s", path, sfx[i]);
        if (lstat(f, &sb) == 0) {
            *absent = 0;
            if (buf[0])
                continue;
            if (!S_ISREG(sb.st_mode))
                say(buf, len, "%s is there but is not a regular file", f);
            else if (access(f, R_OK) != 0)
                say(buf, len, "%s cannot be read (%s)", f, strerror(errno));
        } else if (buf[0]) {
            continue;
        } else if (errno == ENAMETOOLONG) {
            say(buf, len, "SQLite keeps %s beside a WAL-mode database, and that name is "
                "too long for the file system", f);
        } else if (errno == ENOENT && access(dir, W_OK) != 0) {
            say(buf, len, "the directory %s is not writable (%s), and SQLite must create "
                "%s there to read a WAL-mode database", dir, strerror(errno), f);
        }
    }
}

/* Reopen read-only through an immutable=1 URI: SQLite then takes no locks
 * and needs no -wal or -shm file. immutable is only safe while nothing
 * writes the file, so this is the last resort of read-only opens, taken
 * only when the -wal and -shm are both absent and cannot be created:
 * every open connection to a WAL database keeps those files beside it, so
 * none is open, and the file holds every committed write. A writer that
 * starts while we read (someone allowed to write in that directory) could
 * still change pages under us; a read-only tool's short look accepts
 * that, the daemon (which opens read-write) never comes here. */
static int open_immutable(gs_db *db, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    char uri[3 * 4096 + 32];
    size_t o = (size_t)snprintf(uri, sizeof uri, "file:%s", path[0] == '/' ? "//" : "");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (o + 4 >= sizeof uri)
            return SQLITE_CANTOPEN;
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._~-", *p)) {
            uri[o++] = (char)*p;
        } else {
            uri[o++] = '%';
            uri[o++] = hex[*p >> 4];
            uri[o++] = hex[*p & 15];
        }
    }
    if ((size_t)snprintf(uri + o, sizeof uri - o, "?immutable=1") >= sizeof uri - o)
        return SQLITE_CANTOPEN;
    sqlite3_close_v2(db->h);
    db->h = NULL;
    int rc = sqlite3_open_v2(uri, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc == SQLITE_OK) {
        db->immutable = 1;
        sqlite3_extended_result_codes(db->h, 1);
    }
    return rc;
}

/* PRAGMA user_version into *v (-1 unread); SQLite's result code. */
static int read_version(gs_db *db, int *v)
{
    sqlite3_stmt *st;
    *v = -1;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    return rc;
}

static int past_deadline(void *ud)
{
    return gs_now_s() > *(const double *)ud;
}

/* How long each check at open may take. A tuning database is well under
 * 10 MiB: integrity_check reads it in about 30 ms, quick_check (the b-tree
 * structure only) in a third of that; 57 MiB take 0.16 s and 0.06 s on the
 * 2-core test machine. A larger file is served with less checked rather
 * than delaying every start; its first write still waits for the whole
 * check (db_writable). */
static double g_open_check_s = 0.5;

void db_set_open_check_s(double s)
{
    g_open_check_s = s;
}

/* What a check found: up to three of SQLite's problem lines, one line. */
static void add_problem(char *buf, size_t len, int nth, const char *r)
{
    static const char head[] = "*** in database main ***\n";
    size_t o = strlen(buf);
    if (nth > 3) {
        if (nth == 4 && o + 16 < len)
            snprintf(buf + o, len - o, "; ...");
        return;
    }
    if (!strncmp(r, head, sizeof head - 1))
        r += sizeof head - 1;
    say(buf + o, len - o, "%s%s", o ? "; " : "", r);
    for (char *c = buf + o; *c; c++)
        if (*c == '\n')
            *c = ' ';
}

/* PRAGMA `pragma` (quick_check: every b-tree page's structure;
 * integrity_check: that and whether every index holds exactly its table's
 * rows, about three times the work), given at most `limit_s` seconds (< 0:
 * no limit). 0: ok; CHECK_TIMEOUT: out of time, nothing known;
 * GS_ECORRUPT saying what to do; another code when SQLite failed to read. */
enum { CHECK_TIMEOUT = 1 };
static int run_check(gs_db *db, const char *pragma, double limit_s, gs_err *err)
{
    double deadline = gs_now_s() + limit_s;
    char sql[64], probs[900] = "";
    int nprob = 0;
    snprintf(sql, sizeof sql, "PRAGMA %s(20)", pragma);   /* at most 20 problems */
    if (limit_s >= 0)
        sqlite3_progress_handler(db->h, 1000, past_deadline, &deadline);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *r = (const char *)sqlite3_column_text(st, 0);
            if (!r || strcmp(r, "ok") != 0)
                add_problem(probs, sizeof probs, ++nprob, r ? r : "no answer");
        }
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
        sqlite3_finalize(st);
    }
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    if ((rc & 0xff) == SQLITE_INTERRUPT)
        return CHECK_TIMEOUT;
    if (rc == SQLITE_OK && !nprob)
        return 0;
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_CORRUPT && (rc & 0xff) != SQLITE_NOTADB)
        return db_fail(db, rc, err, "checking the file");
    db->damaged = 1;
    db->checked = 0;
    return gs_err_set(err, GS_ECORRUPT,
                      "database %s is damaged (SQLite's %s: %s); nothing was written into it: "
                      "move it aside (mv %s %s.damaged) and tune again (gsortd --tune-all); "
                      "gsortd --db-check tells whether a database is whole",
                      db->path, pragma, nprob ? probs : sqlite3_errmsg(db->h), db->path,
                      db->path);
}

int db_writable(gs_db *db, gs_err *err)
{
    return db->checked ? 0 : gs_db_check(db, err);
}

/* The check at open, before anything is written. Read-only opens run
 * quick_check within the time bound. Read-write ones run the whole
 * integrity_check within it (falling back to quick_check when the file is
 * too large for that), and without a bound when `full` says so: an
 * explicit check (GS_DB_FULL_CHECK), a migration to come, or files left by
 * a process that did not close the database. */
static int check_at_open(gs_db *db, int ro, int full, gs_err *err)
{
    if (full)
        return db_writable(db, err);
    int rc = ro ? CHECK_TIMEOUT : run_check(db, "integrity_check", g_open_check_s, err);
    if (rc == 0) {
        db->checked = 1;
        return 0;
    }
    if (rc != CHECK_TIMEOUT)
        return rc;
    rc = run_check(db, "quick_check", g_open_check_s, err);
    return rc == CHECK_TIMEOUT ? 0 : rc;   /* too large to check at every open */
}

/* Whether SQLite's -wal or -shm file is beside the database before it is
 * opened. Every connection to a WAL-mode database keeps both, and the
 * last one to close cleanly checkpoints and deletes them; so they are
 * there after a process using the database was killed (kill -9, a crash,
 * a power cut), and while another process has it open. Either way the
 * open checks the whole file: the first case is the unclean shutdown, the
 * second costs only the check. */
static int left_behind(const char *path)
{
    static const char *const sfx[] = { "-wal", "-shm" };
    char f[4200];
    struct stat sb;
    for (int i = 0; i < 2; i++) {
        snprintf(f, sizeof f, "%s%s", path, sfx[i]);
        if (lstat(f, &sb) == 0)
            return 1;
    }
    return 0;
}

int gs_db_open(gs_db **out, const char *path, int flags, gs_err *err)
{
    *out = NULL;
    char def[4096];
    if (!path) {
        int rc = gs_db_default_path(def, sizeof def, err);
        if (rc)
            return rc;
        if (!(flags & GS_DB_READONLY)) {
            char *slash = strrchr(def, '/');
            *slash = '\0';
            rc = gs_paths_mkdir_p(def, 0755, err);
            *slash = '/';
            if (rc)
                return gs_err_prefix(err, "database directory: ");
        }
        path = def;
    }
    gs_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path))) {
        free(db);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    int ro = flags & GS_DB_READONLY;
    /* looked at before the open, which creates them */
    db->wal_found = !ro && left_behind(path);
    int rc = sqlite3_open_v2(path, &db->h,
                             ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    if (rc != SQLITE_OK) {
        char why[128];
        rc = gs_err_set(err, GS_EIO, "database %s: cannot open: %s%s", path,
                        db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                        db_os_reason(db, why, sizeof why));
        gs_db_close(db);
        return rc;
    }
    sqlite3_extended_result_codes(db->h, 1);
    sqlite3_busy_timeout(db->h, 5000);

    /* The version check comes before anything that could write (journal
     * mode, migrations): a newer file must stay byte-for-byte untouched. */
    int v = -1;
    rc = read_version(db, &v);
    int latest = gs_db_latest_version();
    char note[4400] = "";
    if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY) {
        /* Reading a WAL-mode file opens (creating if need be) its -wal and
         * -shm; a read-only tool must still read a file in a directory it
         * cannot write. */
        int absent;
        wal_files_note(path, note, sizeof note, &absent);
        if (ro && note[0] && absent && (rc = open_immutable(db, path)) == SQLITE_OK)
            rc = read_version(db, &v);
    }
    if (rc != SQLITE_OK && ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR ||
                            (rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_READONLY)) {
        /* The file may be fine: the system refused to read it. */
        char why[128];
        if (note[0])
            rc = gs_err_set(err, GS_EIO, "database %s: cannot read it: %s (SQLite: %s)%s", path,
                            note, db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                            ro ? "" : "; let this user write there, or use a database in a "
                                      "writable directory");
        else
            rc = gs_err_set(err, GS_EIO, "database %s: cannot read it (%s%s)", path,
                            db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                            db_os_reason(db, why, sizeof why));
    } else if (rc != SQLITE_OK) {
        rc = gs_err_set(err, db_code_of(rc), "database %s: unreadable (%s): not a gsortd tuning database, or damaged",
                        path, db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
    } else if (v < 0) {
        /* A file gsortd never wrote (or a damaged header): migrating from
         * "version -1" would skip every migration and serve a bad schema. */
        rc = gs_err_set(err, GS_ECORRUPT, "database %s has schema version %d: not a gsortd "
                        "tuning database, or damaged", path, v);
    } else if (v > latest) {
        rc = gs_err_set(err, GS_EUNSUPPORTED,
                        "database %s has schema version %d, newer than this gsortd understands (%d); "
                        "left untouched: use a newer gsortd or another --db", path, v, latest);
    } else if (ro && v < latest) {
        rc = gs_err_set(err, GS_EUNSUPPORTED,
                        "database %s has schema version %d, older than %d; open it once read-write "
                        "(gsortd) to migrate it", path, v, latest);
    } else if ((rc = check_at_open(db, ro, !ro && ((flags & GS_DB_FULL_CHECK) || v < latest ||
                                                  db->wal_found), err)) != 0) {
        /* damaged: nothing is written into it, not even the journal mode */
    } else if (!ro) {
        if ((rc = db_exec(db, "PRAGMA journal_mode=WAL", err)) == 0 &&
            (rc = db_exec(db, "PRAGMA synchronous=FULL", err)) == 0 &&
            (rc = db_exec(db, "PRAGMA foreign_keys=ON", err)) == 0) {
            for (size_t i = (size_t)v; rc == 0 && i < (size_t)latest; i++)
                rc = migrate_one(db, i, err);
            if (rc == 0 && v < latest)
                compact_after_migrating(db);
        }
    }
    if (rc) {
        gs_db_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

void gs_db_close(gs_db *db)
{
    if (!db)
        return;
    /* The last connection to close checkpoints the -wal into the file. A
     * damaged file stays as it was found: a -wal that was there before the
     * open stays too (one SQLite made at the open is empty: deleting it
     * writes nothing). */
    if (db->h && db->damaged && db->wal_found)
        sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
    if (db->h)
        sqlite3_close_v2(db->h);
    free(db->path);
    free(db);
}

int gs_db_check(gs_db *db, gs_err *err)
{
    int rc = run_check(db, "integrity_check", -1, err);
    if (rc == 0)
        db->checked = 1;
    return rc;
}

int gs_db_checked(const gs_db *db)
{
    return db->checked;
}

int gs_db_begin(gs_db *db, gs_err *err)
{
    int rc = db_writable(db, err);
    return rc ? rc : db_exec(db, "BEGIN IMMEDIATE", err);
}

int gs_db_commit(gs_db *db, gs_err *err)
{
    int rc = db_exec(db, "COMMIT", err);
    if (rc)
        gs_db_rollback(db);
    return rc;
}

void gs_db_rollback(gs_db *db)
{
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}
