/* Real gsortd daemons for C tests, and the socket files around them.
 * dmn_init finds $top_builddir/daemon/gsortd and makes a temporary directory;
 * dmn_start runs the daemon in the foreground on a socket there, with an
 * empty --config file (the machine's /etc/gsortd/gsortd.conf must not leak
 * in; a --config among the extra options wins), its own database and log,
 * and the program cache every test shares ($top_builddir/tests/pcache:
 * PoCL compiles once per build tree), and waits until it accepts
 * connections; dmn_run runs gsortd in another mode to completion. A daemon
 * never inherits NOTIFY_SOCKET or LISTEN_* from the test's environment: a
 * test that wants them sets them in a child hook (dmn_spawn). Every daemon
 * still running is killed, and the directory removed, when the test exits
 * however it exits (GSORT_TEST_KEEP=1 keeps the directory). */
#ifndef GS_TEST_DMN_H
#define GS_TEST_DMN_H

#include <stdint.h>
#include <sys/types.h>

typedef struct dmn {
    pid_t pid;          /* 0 once reaped */
    int status;         /* wait status once reaped */
    char name[32];
    char sock[108];
    char db[512];
    char log[512];      /* its stdout and stderr */
} dmn;

/* Once per test program, before anything else here. Bails out (TAP) when
 * there is no daemon binary or no temporary directory. */
void dmn_init(void);
const char *dmn_tmpdir(void);       /* absolute; sockets may go here */
const char *dmn_builddir(void);     /* absolute $top_builddir */
const char *dmn_srcdir(void);       /* absolute $top_srcdir */
const char *dmn_cachedir(void);     /* the shared program cache */

/* Run in the child after its stdio is in place, just before exec: set
 * environment variables, put descriptors to pass in place. Nonzero makes
 * the child exit 126. */
typedef int dmn_child_fn(void *arg);

/* Start gsortd called `name` on `sock` (NULL: TMPDIR/NAME.sock) with
 * `extra` options (NULL-terminated list, or NULL), e.g. "-o",
 * "devices=none", and `child` (may be NULL) called with `arg` in the
 * child. Does not wait for it: 0 once it runs, -1 when fork fails. `d` must
 * live until the program exits (a static), for the clean-up at exit. */
int dmn_spawn(dmn *d, const char *name, const char *sock, const char *const *extra,
              dmn_child_fn *child, void *arg);
/* Wait until it accepts connections on d->sock: 0; -1 when it exits or
 * does not come up within a minute (its log goes to TAP diagnostics). */
int dmn_wait_ready(dmn *d);
/* dmn_spawn with no child hook, then dmn_wait_ready. */
int dmn_start(dmn *d, const char *name, const char *sock, const char *const *extra);
/* Send `sig` (0: none, it is to exit by itself) and wait up to `timeout` s
 * for the exit, then SIGKILL. Its exit code; -1 when it had to be killed;
 * -2 - signal when a signal ended it. Called on a reaped daemon: its status. */
int dmn_stop(dmn *d, int sig, double timeout);
/* Whether the daemon has exited (reaps it). */
int dmn_exited(dmn *d);
/* Run `gsortd ARGS...` (only these arguments) to completion, its output to
 * TMPDIR/NAME.log (d->log): its status as dmn_stop's, killed after
 * `timeout` s. */
int dmn_run(dmn *d, const char *name, const char *const *args, double timeout);

/* The last `lines` lines of its log as TAP diagnostics. */
void dmn_dump_log(const dmn *d, int lines);
/* Whether one line of its log contains `needle`. */
int dmn_log_contains(const dmn *d, const char *needle);
/* How many lines of its log contain `needle`. */
int dmn_log_count(const dmn *d, const char *needle);
/* path replaced by a file holding text (through a rename): 0 or -1. */
int dmn_write_file(const char *path, const char *text);

struct gs_client;
struct gs_client_sort;
struct gs_client_result;
struct sc_case;
/* Sort case k through the daemon c is connected to, as s says (its keys
 * and values are k's), and check the answer exactly (stable when s is):
 * 1 when right; else 0 with the daemon's error or the first wrong place
 * in why. res (cleared first) gets the daemon's account. */
int dmn_sort_check(struct gs_client *c, struct gs_client_sort *s, struct sc_case *k,
                   struct gs_client_result *res, char *why, size_t len);
/* The same for rows (issue 38): s->shape.rows rows of s->n / rows keys
 * of s->shape's dtype and payload, each row its own sortcheck case (input
 * from dist, seeds from seed: sc_rows_init), sorted as s says and each
 * row checked against its own reference (sc_rows_verify); or, with
 * s->shape.segments, the segments s->offsets cuts (sc_segs_init,
 * sc_segs_verify). s->keys and s->values are set here and freed before
 * the return. */
int dmn_rows_check(struct gs_client *c, struct gs_client_sort *s, int dist, uint64_t seed,
                   struct gs_client_result *res, char *why, size_t len);

/* Whether something accepts connections at the Unix socket `path`. */
int dmn_connectable(const char *path);
/* A Unix socket of `type` (SOCK_STREAM, SOCK_DGRAM) bound at `path`
 * (whatever was there is removed first), listening with `backlog` when
 * that is > 0; close-on-exec. Bails out (TAP) when it cannot. Closed before
 * it listens, it leaves the stale socket file a killed daemon leaves. */
int dmn_bind(const char *path, int type, int backlog);
/* What time limits are multiplied by: GSORT_TEST_SLOWDOWN, default 20
 * when GSORT_TEST_WRAPPER runs the daemons under a tool (Valgrind), else 1.
 * Tests scale their own reply timeouts by it. */
double dmn_slowdown(void);
/* Sleep `s` seconds, signals notwithstanding. */
void dmn_sleep(double s);
/* A field of d's stats reply, read on a connection of its own
 * ("memory", "used"; "bytes", "in"); -1 when it cannot be read. */
double dmn_stat(const dmn *d, const char *obj, const char *field);
/* Wait up to `s` seconds for stats obj.field to equal `want` (atleast 0)
 * or reach it (atleast 1); the last value read. */
double dmn_wait_stat(const dmn *d, const char *obj, const char *field, double want, int atleast,
                     double s);
/* Wait up to `s` seconds for `needle` to stand on at least `want` lines
 * of d's log; the last count read. */
int dmn_wait_log(const dmn *d, const char *needle, int want, double s);
/* Write all `len` bytes to socket `fd` (test framing, half messages): 0,
 * or -1 when the peer is gone. */
int dmn_send_raw(int fd, const void *buf, size_t len);
/* Seconds until the peer of `fd` closes (reading and dropping anything it
 * sends), or -1 if it stays open for `timeout` s. */
double dmn_wait_eof(int fd, double timeout);

/* A new tuning database at `path` (any earlier file removed), open in
 * *db, holding the first OpenCL device, whose database id goes to *id:
 * for a test that writes a plan a daemon then serves by. Bails out (TAP)
 * on failure. */
struct gs_db;
void dmn_db_first_device(const char *path, struct gs_db **db, long long *id);
/* A row of the rows, top-k and segments plan (issue 38) for device id:
 * `kind` ("rows", "topk", "segs") of 32-bit keys with `payload`, at
 * log2 n `bucket` and log2 row length, k or mean segment `sub`, served
 * by `algo` with its defaults (0.01 ms, no baseline). Bails out on
 * failure. */
void dmn_db_shape_row(struct gs_db *db, long long id, const char *kind, const char *payload,
                      int bucket, int sub, const char *algo);

#endif
