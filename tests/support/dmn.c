/* Real gsortd daemons for C tests (dmn.h): fork and exec daemon/gsortd with a
 * test's socket, database, log and the shared program cache, wait for it to
 * accept connections, stop it with a signal, run it in other modes, bind
 * the socket files tests need, and clean up at exit. GSORT_TEST_WRAPPER
 * (e.g. "valgrind --error-exitcode=99 ...", words split at blanks) runs
 * every daemon under that command (tools/run-valgrind); a wrapped daemon is
 * slow, so every time limit here is multiplied by GSORT_TEST_SLOWDOWN
 * (default 20 with a wrapper, else 1). */
#include "config.h"
#include "dmn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs_client.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

#define START_TIMEOUT_S 60.0
#define MAX_DMN 32
#define MAX_ARGS 64
#define MAX_WRAP 32

static char g_tmp[64];
static char g_build[4096];
static char g_src[4096];
static char g_gsortd[4200];
static char g_cache[4200];
static char g_conf[128];
static dmn *g_dmns[MAX_DMN];
static int g_ndmn;
static char g_wrapbuf[2048];
static char *g_wrap[MAX_WRAP + 1];  /* NULL-terminated; g_wrap[0] NULL: none */
static double g_slow = 1.0;         /* time limits are multiplied by this */

/* GSORT_TEST_WRAPPER split at blanks (no quoting: suppression files and
 * log paths with blanks are not supported), and GSORT_TEST_SLOWDOWN. */
static void read_wrapper(void)
{
    const char *w = getenv("GSORT_TEST_WRAPPER");
    if (w && *w) {
        if (strlen(w) >= sizeof g_wrapbuf)
            tap_bail("GSORT_TEST_WRAPPER: too long");
        snprintf(g_wrapbuf, sizeof g_wrapbuf, "%s", w);
        int n = 0;
        for (char *save = NULL, *t = strtok_r(g_wrapbuf, " \t", &save); t;
             t = strtok_r(NULL, " \t", &save)) {
            if (n >= MAX_WRAP)
                tap_bail("GSORT_TEST_WRAPPER: more than %d words", MAX_WRAP);
            g_wrap[n++] = t;
        }
        g_wrap[n] = NULL;
        g_slow = 20.0;
    }
    const char *s = getenv("GSORT_TEST_SLOWDOWN");
    if (s && *s) {
        char *end;
        double v = strtod(s, &end);
        if (*end || !(v >= 1.0 && v <= 1000.0))
            tap_bail("GSORT_TEST_SLOWDOWN=%s: want a number from 1 to 1000", s);
        g_slow = v;
    }
    if (g_wrap[0])
        tap_diag("daemons run under: %s (time limits x%g)", w, g_slow);
}

void dmn_sleep(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void cleanup(void)
{
    for (int i = 0; i < g_ndmn; i++)
        if (g_dmns[i]->pid > 0) {
            kill(g_dmns[i]->pid, SIGKILL);
            waitpid(g_dmns[i]->pid, NULL, 0);
            g_dmns[i]->pid = 0;
        }
    if (g_tmp[0] && !getenv("GSORT_TEST_KEEP")) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", g_tmp);
    }
}

/* $var (default: the current directory) made absolute: the daemon is told these paths and
 * reports them back, and tests compare. */
static void abs_dir(char *out, size_t len, const char *var, const char *cwd)
{
    const char *v = getenv(var);
    if (!v || !*v || !strcmp(v, "."))
        v = cwd;
    size_t w = v[0] == '/' ? (size_t)snprintf(out, len, "%s", v)
                           : (size_t)snprintf(out, len, "%s/%s", cwd, v);
    if (w >= len || w > 3000)
        tap_bail("$%s: path too long", var);
}

void dmn_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    read_wrapper();
    char cwd[2048];
    if (!getcwd(cwd, sizeof cwd))
        tap_bail("getcwd: %s", strerror(errno));
    abs_dir(g_build, sizeof g_build, "top_builddir", cwd);
    abs_dir(g_src, sizeof g_src, "top_srcdir", cwd);
    snprintf(g_gsortd, sizeof g_gsortd, "%s/daemon/gsortd", g_build);
    snprintf(g_cache, sizeof g_cache, "%s/tests/pcache", g_build);
    if (access(g_gsortd, X_OK) != 0)
        tap_bail("no daemon binary at %s", g_gsortd);
    mkdir(g_cache, 0755);
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gsd-test-XXXXXX");
    if (!mkdtemp(g_tmp))
        tap_bail("mkdtemp: %s", strerror(errno));
    atexit(cleanup);
    snprintf(g_conf, sizeof g_conf, "%s/empty.conf", g_tmp);
    int fd = open(g_conf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        tap_bail("creating %s: %s", g_conf, strerror(errno));
    close(fd);
}

/* A field of the daemon's stats ("memory.used", "blocks.not_kept"); -1
 * when it cannot be read. */
double dmn_stat(const dmn *d, const char *obj, const char *field)
{
    gs_client *c = NULL;
    gs_err err;
    cJSON *r = NULL;
    double v = -1;
    if (gs_client_connect(&c, d->sock, &err) == 0 && gs_client_call(c, "stats", &r, &err) == 0) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(r, obj), field);
        v = cJSON_IsNumber(x) ? x->valuedouble : -1;
    } else {
        tap_diag("stats: %s", err.msg);
    }
    cJSON_Delete(r);
    gs_client_close(c);
    return v;
}

/* Wait up to `s` seconds for stats obj.field to reach `want` (cmp 0: equal,
 * 1: at least); the last value read. */
double dmn_wait_stat(const dmn *d, const char *obj, const char *field, double want,
                     int atleast, double s)
{
    double v = -1, t0 = gs_now_s();
    do {
        v = dmn_stat(d, obj, field);
        if (atleast ? v >= want : v == want)
            break;
        dmn_sleep(0.05);
    } while (gs_now_s() - t0 < s);
    return v;
}

int dmn_wait_log(const dmn *d, const char *needle, int want, double s)
{
    int v;
    double t0 = gs_now_s();
    while ((v = dmn_log_count(d, needle)) < want && gs_now_s() - t0 < s)
        dmn_sleep(0.05);
    return v;
}

double dmn_slowdown(void)
{
    return g_slow;
}

const char *dmn_tmpdir(void)
{
    return g_tmp;
}

const char *dmn_builddir(void)
{
    return g_build;
}

const char *dmn_srcdir(void)
{
    return g_src;
}

const char *dmn_cachedir(void)
{
    return g_cache;
}

void dmn_dump_log(const dmn *d, int lines)
{
    FILE *f = fopen(d->log, "r");
    if (!f) {
        tap_diag("%s: no log at %s", d->name, d->log);
        return;
    }
    /* Keep the last `lines` lines in a ring. */
    char ring[64][512];
    int n = 0;
    if (lines > 64)
        lines = 64;
    if (lines < 1)
        lines = 1;
    char buf[512];
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        snprintf(ring[n % lines], sizeof ring[0], "%s", buf);
        n++;
    }
    fclose(f);
    int first = n > lines ? n - lines : 0;
    tap_diag("---- %s stderr (%s), last %d lines ----", d->name, d->log, n - first);
    for (int i = first; i < n; i++)
        tap_diag("  %s", ring[i % lines]);
}

int dmn_log_count(const dmn *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    char buf[1024];
    int n = 0;
    while (fgets(buf, sizeof buf, f))
        n += strstr(buf, needle) != NULL;
    fclose(f);
    return n;
}

int dmn_log_contains(const dmn *d, const char *needle)
{
    return dmn_log_count(d, needle) > 0;
}

int dmn_exited(dmn *d)
{
    if (d->pid <= 0)
        return 1;
    int st;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
        d->status = st;
        d->pid = 0;
        return 1;
    }
    return 0;
}

int dmn_connectable(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int dmn_bind(const char *path, int type, int backlog)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path)
        tap_bail("socket path too long: %s", path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    unlink(path);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (backlog > 0 && listen(fd, backlog) < 0))
        tap_bail("socket at %s: %s", path, strerror(errno));
    return fd;
}

/* argv[a..] = the NULL-terminated `list` (NULL: none); the new count. */
static int add_args(const char **argv, int a, const char *const *list, const char *who)
{
    for (int i = 0; list && list[i]; i++) {
        if (a >= MAX_ARGS + MAX_WRAP - 1)
            tap_bail("%s: too many arguments", who);
        argv[a++] = list[i];
    }
    return a;
}

/* Fork and exec gsortd with `head` then `tail` (NULL-terminated lists;
 * tail may be NULL) as its arguments, its output to d->log, stdin from
 * /dev/null, no systemd variables but what `child` sets; d remembers the
 * pid. */
static int launch(dmn *d, const char *const *head, const char *const *tail,
                  dmn_child_fn *child, void *arg)
{
    const char *argv[MAX_ARGS + MAX_WRAP] = { NULL };
    int a = 0;
    for (; g_wrap[a]; a++)
        argv[a] = g_wrap[a];
    const char *prog = a ? argv[0] : g_gsortd;
    argv[a++] = g_gsortd;
    a = add_args(argv, a, head, d->name);
    a = add_args(argv, a, tail, d->name);
    argv[a] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        tap_diag("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a crashed test */
        int lf = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (lf < 0 || nul < 0 || dup2(lf, 1) < 0 || dup2(lf, 2) < 0 || dup2(nul, 0) < 0)
            _exit(126);
        unsetenv("NOTIFY_SOCKET");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDNAMES");
        if (child && child(arg) != 0)
            _exit(126);
        execvp(prog, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    d->pid = pid;
    int known = 0;
    for (int i = 0; i < g_ndmn; i++)
        known |= g_dmns[i] == d;
    if (!known && g_ndmn < MAX_DMN)
        g_dmns[g_ndmn++] = d;
    return 0;
}

static void name_files(dmn *d, const char *name)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->log, sizeof d->log, "%s/%s.log", g_tmp, name);
}

int dmn_spawn(dmn *d, const char *name, const char *sock, const char *const *extra,
              dmn_child_fn *child, void *arg)
{
    name_files(d, name);
    if (sock)
        snprintf(d->sock, sizeof d->sock, "%s", sock);
    else
        snprintf(d->sock, sizeof d->sock, "%s/%s.sock", g_tmp, name);
    snprintf(d->db, sizeof d->db, "%s/%s.db", g_tmp, name);
    char cache_opt[4300];
    snprintf(cache_opt, sizeof cache_opt, "cache_dir=%s", g_cache);
    const char *const head[] = { "--config", g_conf, "--socket", d->sock, "--db", d->db,
                                 "-o", cache_opt, NULL };
    return launch(d, head, extra, child, arg);
}

int dmn_wait_ready(dmn *d)
{
    double t0 = gs_now_s(), limit = START_TIMEOUT_S * g_slow;
    while (gs_now_s() - t0 < limit) {
        if (dmn_exited(d)) {
            tap_diag("%s exited during start-up (status 0x%x)", d->name, d->status);
            dmn_dump_log(d, 40);
            return -1;
        }
        if (dmn_connectable(d->sock)) {
            tap_diag("%s (pid %d) up after %.2f s on %s", d->name, (int)d->pid,
                     gs_now_s() - t0, d->sock);
            return 0;
        }
        dmn_sleep(0.05);
    }
    tap_diag("%s did not accept connections within %.0f s", d->name, limit);
    dmn_dump_log(d, 40);
    return -1;
}

int dmn_start(dmn *d, const char *name, const char *sock, const char *const *extra)
{
    if (dmn_spawn(d, name, sock, extra, NULL, NULL) < 0)
        return -1;
    return dmn_wait_ready(d);
}

int dmn_stop(dmn *d, int sig, double timeout)
{
    timeout *= g_slow;
    if (d->pid > 0) {
        if (sig)
            kill(d->pid, sig);
        double t0 = gs_now_s();
        while (!dmn_exited(d) && gs_now_s() - t0 < timeout)
            dmn_sleep(0.02);
        if (d->pid > 0) {
            if (sig)
                tap_diag("%s did not exit within %.0f s of signal %d: killing it", d->name,
                         timeout, sig);
            else
                tap_diag("%s did not exit within %.0f s: killing it", d->name, timeout);
            dmn_dump_log(d, 20);
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &d->status, 0);
            d->pid = 0;
            return -1;
        }
    }
    return WIFEXITED(d->status) ? WEXITSTATUS(d->status) : -2 - WTERMSIG(d->status);
}

int dmn_run(dmn *d, const char *name, const char *const *args, double timeout)
{
    name_files(d, name);
    if (launch(d, args, NULL, NULL, NULL) < 0)
        return -1;
    return dmn_stop(d, 0, timeout);
}

int dmn_sort_check(gs_client *c, gs_client_sort *s, sc_case *k, gs_client_result *res,
                   char *why, size_t len)
{
    gs_err err;
    gs_err_clear(&err);
    s->keys = k->req.keys;
    s->values = k->req.values;
    memset(res, 0, sizeof *res);
    if (gs_client_sort_run(c, s, res, &err) != 0) {
        snprintf(why, len, "%.500s", err.msg);
        return 0;
    }
    return sc_case_verify(k, s->shape.stable, why, len);
}

int dmn_rows_check(gs_client *c, gs_client_sort *s, int dist, uint64_t seed,
                   gs_client_result *res, char *why, size_t len)
{
    const size_t S = (size_t)s->shape.segments;
    size_t rows = S ? 0 : (size_t)s->shape.rows, rl = S ? 0 : s->n / rows;
    size_t vs = gs_payload_size(s->shape.payload);
    void *k = malloc(s->n * gs_dtype_size(s->shape.dtype) + 1);
    void *v = vs ? malloc(s->n * vs + 1) : NULL;
    if (!k || (vs && !v))
        tap_bail("out of memory");
    sc_case *cs = S ? sc_segs_init(s->shape.dtype, s->shape.payload, s->shape.descending,
                                   s->offsets, S, dist, seed, k, v)
                    : sc_rows_init(s->shape.dtype, s->shape.payload, s->shape.descending, rows,
                                   rl, dist, seed, k, v);
    s->keys = k;
    s->values = v;
    gs_err err;
    gs_err_clear(&err);
    memset(res, 0, sizeof *res);
    int ok = gs_client_sort_run(c, s, res, &err) == 0;
    ok = S ? sc_segs_verify(cs, s->offsets, S, s->shape.stable, k, v, ok, why, len)
           : sc_rows_verify(cs, rows, rl, s->shape.stable, k, v, ok, why, len);
    if (err.msg[0])
        snprintf(why, len, "%.500s", err.msg);
    free(k);
    free(v);
    s->keys = s->values = NULL;
    return ok;
}

int dmn_send_raw(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

double dmn_wait_eof(int fd, double timeout)
{
    double t0 = gs_now_s();
    char buf[4096];
    for (;;) {
        double left = timeout - (gs_now_s() - t0);
        if (left <= 0)
            return -1;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return gs_now_s() - t0;
    }
}

/* Written whole or not at all (a reload never reads half a file). */
int dmn_write_file(const char *path, const char *text)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fputs(text, f);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

void dmn_db_shape_row(struct gs_db *db, long long id, const char *kind, const char *payload,
                      int bucket, int sub, const char *algo)
{
    gs_db_shape_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    r.key_bits = 32;
    snprintf(r.payload, sizeof r.payload, "%s", payload);
    r.bucket = bucket;
    r.sub = sub;
    snprintf(r.algorithm, sizeof r.algorithm, "%s", algo);
    snprintf(r.params, sizeof r.params, "{}");
    r.median_ms = 0.01;
    r.baseline_ms = -1;
    gs_err e;
    gs_err_clear(&e);
    if (gs_db_shape_set(db, id, &r, &e) < 0)
        tap_bail("shape row: %s", e.msg);
}

void dmn_db_first_device(const char *path, struct gs_db **db, long long *id)
{
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_err e;
    gs_err_clear(&e);
    if (gs_dev_probe(&devs, &ndev, &e) < 0 || ndev == 0)
        tap_bail("no OpenCL device: %s", e.msg);
    unlink(path);
    int64_t i64 = 0;
    if (gs_db_open(db, path, 0, &e) < 0 || gs_db_device_id(*db, &devs[0].info, 1, &i64, &e) < 0)
        tap_bail("database %s: %s", path, e.msg);
    *id = (long long)i64;
    gs_dev_free_list(devs, ndev);
}
