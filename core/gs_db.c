/* Implementation of the tuning database (see gs_db.h): opening with the
 * version check before anything is written, the migration loop, and the
 * small typed accessors the tuner, the daemon and gsort-query use. */
#include "config.h"
#include "gs_db.h"
#include "gs_embed.h"
#include "gs_paths.h"
#include "gs_time.h"

#include <cjson/cJSON.h>
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

struct gs_db {
    sqlite3 *h;
    char *path;
    int immutable;    /* read through an immutable=1 URI (see open_immutable) */
};

int gs_db_latest_version(void) { return (int)gs_db_migrations_count; }
const char *gs_db_path(const gs_db *db) { return db->path; }
int gs_db_immutable(const gs_db *db) { return db->immutable; }
sqlite3 *gs_db_handle(gs_db *db) { return db->h; }

static int code_of(int rc)
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

/* "PATH: WHAT: sqlite's message" with a code from sqlite's result. */
/* The operating system's reason behind SQLite's last error ("; No space
 * left on device"), or "" when SQLite kept none: a full disk or a
 * read-only file system then says so instead of only "disk I/O error". */
static const char *os_reason(gs_db *db, char *buf, size_t len)
{
    int e = db->h ? sqlite3_system_errno(db->h) : 0;
    if (e)
        snprintf(buf, len, "; %s", strerror(e));
    else if (len)
        buf[0] = '\0';
    return buf;
}

static int fail(gs_db *db, int rc, gs_err *err, const char *what)
{
    char why[128];
    return gs_err_set(err, code_of(rc), "database %s: %s: %s%s", db->path, what,
                      db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                      os_reason(db, why, sizeof why));
}

static int exec(gs_db *db, const char *sql, gs_err *err)
{
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : fail(db, rc, err, sql);
}

static int prepare(gs_db *db, const char *sql, sqlite3_stmt **st, gs_err *err)
{
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    return rc == SQLITE_OK ? 0 : fail(db, rc, err, "prepare");
}

/* Step a write statement to completion and finalize it. */
static int step_done(gs_db *db, sqlite3_stmt *st, gs_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : fail(db, rc, err, what);
    sqlite3_finalize(st);
    return ret;
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

/* Apply migration i (0-based: file NNN = i+1) in one transaction, unless
 * another process got there first. */
static int migrate_one(gs_db *db, size_t i, gs_err *err)
{
    const gs_embed *m = &gs_db_migrations[i];
    if (atoi(m->name) != (int)i + 1)
        return gs_err_set(err, GS_ECORRUPT, "migration %s is out of sequence (expected number %zu)",
                          m->name, i + 1);
    int rc = exec(db, "BEGIN IMMEDIATE", err);
    if (rc)
        return rc;
    int v = gs_db_version(db);
    if (v < 0) {
        exec(db, "ROLLBACK", NULL);
        return fail(db, SQLITE_ERROR, err, "reading the schema version");
    }
    if (v > (int)i) {
        exec(db, "ROLLBACK", NULL);
        return 0;
    }
    char *msg = NULL;
    int src = sqlite3_exec(db->h, m->text, NULL, NULL, &msg);
    if (src != SQLITE_OK || gs_db_version(db) != (int)i + 1) {
        gs_err_set(err, GS_ECORRUPT, "database %s: migration %s failed: %s", db->path, m->name,
                   msg ? msg : "it did not set user_version");
        sqlite3_free(msg);
        exec(db, "ROLLBACK", NULL);
        return GS_ECORRUPT;
    }
    return exec(db, "COMMIT", err);
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

/* How long the check at open may take. A tuning database is well under
 * 10 MiB (quick_check reads it in a few ms); 50 MiB takes about 0.15 s on
 * the 2-core test machine. A larger file is served unchecked rather than
 * delaying every start. */
#define OPEN_CHECK_S 0.5

/* PRAGMA quick_check(1) at open: every b-tree page's structure (not the
 * index contents, which integrity_check adds at about eight times the
 * cost), so that a page damaged in the middle of the file is found before
 * anything reads wrong rows or writes into it. GS_ECORRUPT saying what to
 * do. */
static int quick_check(gs_db *db, gs_err *err)
{
    double deadline = gs_now_s() + OPEN_CHECK_S;
    char first[512] = "";
    sqlite3_progress_handler(db->h, 1000, past_deadline, &deadline);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *r = (const char *)sqlite3_column_text(st, 0);
            if (!r || strcmp(r, "ok") != 0) {
                /* one line: without the "*** in database main ***" heading */
                static const char head[] = "*** in database main ***\n";
                if (r && !strncmp(r, head, sizeof head - 1))
                    r += sizeof head - 1;
                snprintf(first, sizeof first, "%s", r ? r : "no answer");
                for (char *c = first; *c; c++)
                    if (*c == '\n')
                        *c = ' ';
            }
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    if ((rc & 0xff) == SQLITE_INTERRUPT)
        return 0;   /* past OPEN_CHECK_S: too large to check at every open */
    if (rc == SQLITE_OK && !first[0])
        return 0;
    if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_CORRUPT && (rc & 0xff) != SQLITE_NOTADB)
        return fail(db, rc, err, "checking the file");
    return gs_err_set(err, GS_ECORRUPT,
                      "database %s is damaged (SQLite's check: %s); it was left as it is: move "
                      "it aside (mv %s %s.damaged) and tune again (gsortd --tune-all)",
                      db->path, first[0] ? first : sqlite3_errmsg(db->h), db->path, db->path);
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
    int rc = sqlite3_open_v2(path, &db->h,
                             ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             NULL);
    if (rc != SQLITE_OK) {
        char why[128];
        rc = gs_err_set(err, GS_EIO, "database %s: cannot open: %s%s", path,
                        db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc),
                        os_reason(db, why, sizeof why));
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
                            os_reason(db, why, sizeof why));
    } else if (rc != SQLITE_OK) {
        rc = gs_err_set(err, code_of(rc), "database %s: unreadable (%s): not a gsortd tuning database, or damaged",
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
    } else if ((rc = quick_check(db, err)) != 0) {
        /* damaged: nothing is written into it, not even the journal mode */
    } else if (!ro) {
        if ((rc = exec(db, "PRAGMA journal_mode=WAL", err)) == 0 &&
            (rc = exec(db, "PRAGMA synchronous=FULL", err)) == 0 &&
            (rc = exec(db, "PRAGMA foreign_keys=ON", err)) == 0) {
            for (size_t i = (size_t)v; rc == 0 && i < (size_t)latest; i++)
                rc = migrate_one(db, i, err);
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
    if (db->h)
        sqlite3_close_v2(db->h);
    free(db->path);
    free(db);
}

int gs_db_check(gs_db *db, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db, "PRAGMA integrity_check", &st, err);
    if (rc)
        return rc;
    int step = sqlite3_step(st);
    if (step != SQLITE_ROW) {
        rc = fail(db, step, err, "integrity_check");
    } else {
        const char *r = (const char *)sqlite3_column_text(st, 0);
        if (!r || strcmp(r, "ok") != 0)
            rc = gs_err_set(err, GS_ECORRUPT, "database %s: integrity check: %s", db->path, r ? r : "?");
    }
    sqlite3_finalize(st);
    return rc;
}

int gs_db_begin(gs_db *db, gs_err *err)
{
    return exec(db, "BEGIN IMMEDIATE", err);
}

int gs_db_commit(gs_db *db, gs_err *err)
{
    int rc = exec(db, "COMMIT", err);
    if (rc)
        gs_db_rollback(db);
    return rc;
}

void gs_db_rollback(gs_db *db)
{
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

int gs_db_bucket(uint64_t n)
{
    int b = 0;
    while (n > 1) {
        n >>= 1;
        b++;
    }
    return b;
}

int gs_db_device_id(gs_db *db, const gs_dev_info *in, int create, int64_t *id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc;
    if (!create) {
        rc = prepare(db, "SELECT id FROM devices WHERE platform=?1 AND name=?2 AND driver=?3", &st, err);
    } else {
        rc = prepare(db,
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
        rc = step == SQLITE_DONE ? 0 : fail(db, step, err, "device");
    } else if (step == SQLITE_DONE && !create) {
        rc = gs_err_set(err, GS_ENOTFOUND, "device %s / %s / %s is not in %s", in->platform,
                        in->name, in->driver, db->path);
    } else {
        rc = fail(db, step, err, "device");
    }
    sqlite3_finalize(st);
    return rc;
}

int gs_db_params_to_json(const gs_params *p, char *buf, size_t len, gs_err *err)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < p->count; i++)
        if (!cJSON_AddNumberToObject(o, p->p[i].name, (double)p->p[i].value)) {
            cJSON_Delete(o);
            o = NULL;
        }
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int rc = 0;
    if (strlen(s) >= len)
        rc = gs_err_set(err, GS_ETOOBIG, "parameter JSON longer than %zu bytes", len - 1);
    else
        strcpy(buf, s);
    cJSON_free(s);
    return rc;
}

int gs_db_params_from_json(const char *json, gs_params *p, gs_err *err)
{
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return gs_err_set(err, GS_EINVAL, "parameters are not a JSON object: %.80s", json);
    }
    gs_params tmp;
    gs_params_clear(&tmp);
    int rc = 0;
    for (cJSON *it = o->child; it && !rc; it = it->next) {
        double d = it->valuedouble;
        /* range first: converting a double outside long's range is undefined */
        if (!cJSON_IsNumber(it) || !(d >= -9007199254740992.0 && d <= 9007199254740992.0) ||
            d != (double)(long)d)
            rc = gs_err_set(err, GS_EINVAL, "parameter %s is not an integer", it->string);
        else if (gs_params_set(&tmp, it->string, (long)d))
            rc = gs_err_set(err, GS_EINVAL, "parameter %s: name too long or too many parameters",
                            it->string);
    }
    cJSON_Delete(o);
    if (!rc)
        *p = tmp;
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
    int rc = prepare(db,
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
    rc = step_done(db, st, err, "recording a trial");
    if (!rc && id)
        *id = sqlite3_last_insert_rowid(db->h);
    return rc;
}

int gs_db_trial_lookup(gs_db *db, const gs_db_trial *key, double *median_ms, int *valid,
                       int64_t *id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db,
        "SELECT id, median_ms, valid FROM trials WHERE device_id=?1 AND algorithm=?2"
        " AND key_bits=?3 AND payload=?4 AND n=?5 AND distribution=?6 AND params=?7"
        " AND code_id=?8 ORDER BY id DESC LIMIT 1", &st, err);
    if (rc)
        return rc;
    bind_trial_key(st, key);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        if (id)
            *id = sqlite3_column_int64(st, 0);
        if (median_ms)
            *median_ms = sqlite3_column_double(st, 1);
        if (valid)
            *valid = sqlite3_column_int(st, 2);
    } else if (step == SQLITE_DONE) {
        rc = GS_ENOTFOUND;
        gs_err_set(err, rc, "no such trial");
    } else {
        rc = fail(db, step, err, "looking up a trial");
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
        rc = fail(db, step, err, what);
    }
    sqlite3_finalize(st);
    return rc;
}

int gs_db_winner_set(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, const char *params, double median_ms,
                     int64_t trial_id, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db,
        "INSERT INTO winners (device_id, algorithm, key_bits, payload, bucket, params, median_ms, trial_id)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (device_id, algorithm, key_bits, payload, bucket)"
        " DO UPDATE SET params=excluded.params, median_ms=excluded.median_ms,"
        " trial_id=excluded.trial_id, updated=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_text(st, 2, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, key_bits);
    sqlite3_bind_text(st, 4, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, bucket);
    sqlite3_bind_text(st, 6, params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 7, median_ms);
    if (trial_id > 0)
        sqlite3_bind_int64(st, 8, trial_id);
    return step_done(db, st, err, "recording a winner");
}

int gs_db_winner_get(gs_db *db, int64_t device_id, const char *algorithm, int key_bits,
                     const char *payload, int bucket, gs_db_choice *out, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db,
        "SELECT algorithm, params, median_ms, bucket FROM winners WHERE device_id=?1"
        " AND algorithm=?2 AND key_bits=?3 AND payload=?4 AND bucket=?5", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_text(st, 2, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, key_bits);
    sqlite3_bind_text(st, 4, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, bucket);
    return read_choice(db, st, out, err, "winner");
}

int gs_db_plan_set(gs_db *db, int64_t device_id, int key_bits, const char *payload, int stable,
                   int bucket, const char *algorithm, const char *params, double median_ms,
                   gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db,
        "INSERT INTO plan (device_id, key_bits, payload, stable, bucket, algorithm, params, median_ms)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (device_id, key_bits, payload, stable, bucket)"
        " DO UPDATE SET algorithm=excluded.algorithm, params=excluded.params,"
        " median_ms=excluded.median_ms, updated=strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_int(st, 2, key_bits);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, stable ? 1 : 0);
    sqlite3_bind_int(st, 5, bucket);
    sqlite3_bind_text(st, 6, algorithm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, params, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 8, median_ms);
    return step_done(db, st, err, "recording the plan");
}

int gs_db_plan_count(gs_db *db, int64_t device_id, long *count, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db, "SELECT count(*) FROM plan WHERE device_id=?1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *count = (long)sqlite3_column_int64(st, 0);
    else
        rc = fail(db, step, err, "counting plan entries");
    sqlite3_finalize(st);
    return rc;
}

int gs_db_plan_lookup(gs_db *db, int64_t device_id, int key_bits, const char *payload,
                      int stable, uint64_t n, gs_db_choice *out, gs_err *err)
{
    sqlite3_stmt *st;
    int rc = prepare(db,
        "SELECT algorithm, params, median_ms, bucket FROM plan WHERE device_id=?1 AND key_bits=?2"
        " AND payload=?3 AND stable=?4 ORDER BY abs(bucket - ?5) ASC, bucket DESC LIMIT 1", &st, err);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, device_id);
    sqlite3_bind_int(st, 2, key_bits);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, stable ? 1 : 0);
    sqlite3_bind_int(st, 5, gs_db_bucket(n));
    return read_choice(db, st, out, err, "plan for this device and request shape");
}
