/* Private to the tuning database (gs_db_open.c, gs_db.c), as libuv's
 * internal.h: the handle's state and the SQLite error helpers both files
 * use. Names here start with db_. */
#ifndef GS_DB_INT_H
#define GS_DB_INT_H

#include <stddef.h>
#include <sqlite3.h>

#include "gs_err.h"

/* gs_db.h's handle; that header is not included here, so that the files
 * including both form no include cycle. */
typedef struct gs_db gs_db;

struct gs_db {
    sqlite3 *h;
    char *path;
    int immutable;    /* read through an immutable=1 URI (see open_immutable) */
    int checked;      /* the whole integrity_check passed on this connection */
    int damaged;      /* a check failed: nothing may be written */
    int wal_found;    /* -wal or -shm was there before the open (left_behind) */
    unsigned long queries;   /* statements prepared: gs_db_queries */
};

/* GS_ECORRUPT, GS_ENOMEM or GS_EIO for an SQLite result code. */
int db_code_of(int rc);
/* The operating system's reason behind SQLite's last error ("; No space
 * left on device"), or "" when SQLite kept none: a full disk or a
 * read-only file system then says so instead of only "disk I/O error". */
const char *db_os_reason(gs_db *db, char *buf, size_t len);
/* "database PATH: WHAT: sqlite's message" with a code from SQLite's result. */
int db_fail(gs_db *db, int rc, gs_err *err, const char *what);
int db_exec(gs_db *db, const char *sql, gs_err *err);
int db_prepare(gs_db *db, const char *sql, sqlite3_stmt **st, gs_err *err);
/* Before a write: 0 when the whole integrity_check has passed on this
 * connection (it runs now, without a time bound, if it has not);
 * GS_ECORRUPT saying what to do when the file is damaged. db_prepare calls
 * it for every statement that writes, gs_db_begin for a transaction. */
int db_writable(gs_db *db, gs_err *err);
/* How long each check at open may take, in seconds (0.5 by default): for
 * the tests, which set 0 to stand for a file too large to check at open. */
void db_set_open_check_s(double s);
/* Step a write statement to completion and finalize it. */
int db_step_done(gs_db *db, sqlite3_stmt *st, gs_err *err, const char *what);

#endif
