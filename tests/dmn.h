/* Real gsortd daemons for C tests: dmn_init finds $top_builddir/src/gsortd
 * and makes a temporary directory; dmn_start runs the daemon in the
 * foreground on a socket there, with an empty --config file (the machine's
 * /etc/gsortd/gsortd.conf must not leak in), its own database and log, and
 * the program cache every test shares ($top_builddir/tests/pcache: PoCL
 * compiles once per build tree), and waits until it accepts connections.
 * Every daemon still running is killed, and the directory removed, when the
 * test exits however it exits (GSORT_TEST_KEEP=1 keeps the directory). */
#ifndef GS_TEST_DMN_H
#define GS_TEST_DMN_H

#include <sys/types.h>

typedef struct dmn {
    pid_t pid;          /* 0 once reaped */
    int status;         /* wait status once reaped */
    char name[32];
    char sock[108];
    char db[512];
    char log[512];
} dmn;

/* Once per test program, before anything else here. Bails out (TAP) when
 * there is no daemon binary or no temporary directory. */
void dmn_init(void);
const char *dmn_tmpdir(void);       /* absolute; sockets may go here */
const char *dmn_builddir(void);     /* absolute $top_builddir */

/* Start gsortd called `name` on `sock` (NULL: TMPDIR/NAME.sock) with
 * `extra` options (NULL-terminated list, or NULL), e.g. "-o",
 * "devices=none". 0 once it accepts connections; -1 when it exits or does
 * not come up within a minute (its log goes to TAP diagnostics). `d` must
 * live until the program exits (a static), for the clean-up at exit. */
int dmn_start(dmn *d, const char *name, const char *sock, const char *const *extra);
/* Send SIGTERM and wait up to `timeout` s (then SIGKILL). Its exit code;
 * -1 when it had to be killed; -2 - signal when a signal ended it. */
int dmn_stop(dmn *d, double timeout);
/* Whether the daemon has exited (reaps it). */
int dmn_exited(dmn *d);
/* The last `lines` lines of its stderr as TAP diagnostics. */
void dmn_dump_log(const dmn *d, int lines);
/* Whether its stderr contains `needle`. */
int dmn_log_contains(const dmn *d, const char *needle);

/* Monotonic seconds. */
double dmn_now(void);

#endif
