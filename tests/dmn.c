/* Real gsortd daemons for C tests (dmn.h): fork and exec src/gsortd with a
 * test's socket, database, log and the shared program cache, wait for it to
 * accept connections, stop it with a signal, and clean up at exit. */
#include "config.h"
#include "dmn.h"

#include <errno.h>
#include <fcntl.h>
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

#include "tap.h"

#define START_TIMEOUT_S 60.0
#define MAX_DMN 32

static char g_tmp[64];
static char g_build[4096];
static char g_gsortd[4200];
static char g_cache[4200];
static char g_conf[128];
static dmn *g_dmns[MAX_DMN];
static int g_ndmn;

double dmn_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double s)
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

void dmn_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    const char *b = getenv("top_builddir");
    if (!b || !*b)
        b = ".";
    char cwd[2048];
    if (!getcwd(cwd, sizeof cwd))
        tap_bail("getcwd: %s", strerror(errno));
    /* Absolute: the daemon is told these paths and reports them back. */
    size_t w = b[0] == '/' ? (size_t)snprintf(g_build, sizeof g_build, "%s", b)
                           : (size_t)snprintf(g_build, sizeof g_build, "%s/%s", cwd, b);
    if (w >= sizeof g_build)
        tap_bail("build directory path too long");
    snprintf(g_gsortd, sizeof g_gsortd, "%s/src/gsortd", g_build);
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

const char *dmn_tmpdir(void)
{
    return g_tmp;
}

const char *dmn_builddir(void)
{
    return g_build;
}

void dmn_dump_log(const dmn *d, int lines)
{
    FILE *f = fopen(d->log, "r");
    if (!f) {
        tap_diag("%s: no log at %s", d->name, d->log);
        return;
    }
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

int dmn_log_contains(const dmn *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    char buf[1024];
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f))
        found = strstr(buf, needle) != NULL;
    fclose(f);
    return found;
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

static int try_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

int dmn_start(dmn *d, const char *name, const char *sock, const char *const *extra)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    if (sock)
        snprintf(d->sock, sizeof d->sock, "%s", sock);
    else
        snprintf(d->sock, sizeof d->sock, "%s/%s.sock", g_tmp, name);
    snprintf(d->db, sizeof d->db, "%s/%s.db", g_tmp, name);
    snprintf(d->log, sizeof d->log, "%s/%s.log", g_tmp, name);
    char cache_opt[4300];
    snprintf(cache_opt, sizeof cache_opt, "cache_dir=%s", g_cache);
    const char *argv[64];
    int a = 0;
    argv[a++] = g_gsortd;
    argv[a++] = "--config";
    argv[a++] = g_conf;
    argv[a++] = "--socket";
    argv[a++] = d->sock;
    argv[a++] = "--db";
    argv[a++] = d->db;
    argv[a++] = "-o";
    argv[a++] = cache_opt;
    for (int i = 0; extra && extra[i] && a < 63; i++)
        argv[a++] = extra[i];
    argv[a] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        tap_diag("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive a crashed test */
        int lf = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_RDONLY);
        if (lf >= 0) {
            dup2(lf, 1);
            dup2(lf, 2);
        }
        if (nul >= 0)
            dup2(nul, 0);
        execv(g_gsortd, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", g_gsortd, strerror(errno));
        _exit(127);
    }
    d->pid = pid;
    if (g_ndmn < MAX_DMN)
        g_dmns[g_ndmn++] = d;
    double t0 = dmn_now();
    while (dmn_now() - t0 < START_TIMEOUT_S) {
        if (dmn_exited(d)) {
            tap_diag("%s exited during start-up (status 0x%x)", d->name, d->status);
            dmn_dump_log(d, 40);
            return -1;
        }
        if (try_connect(d->sock)) {
            tap_diag("%s (pid %d) up after %.2f s on %s", d->name, (int)d->pid,
                     dmn_now() - t0, d->sock);
            return 0;
        }
        sleep_s(0.05);
    }
    tap_diag("%s did not accept connections within %.0f s", d->name, START_TIMEOUT_S);
    dmn_dump_log(d, 40);
    return -1;
}

int dmn_stop(dmn *d, double timeout)
{
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        double t0 = dmn_now();
        while (!dmn_exited(d) && dmn_now() - t0 < timeout)
            sleep_s(0.02);
        if (d->pid > 0) {
            tap_diag("%s did not exit within %.0f s of SIGTERM: killing it", d->name, timeout);
            dmn_dump_log(d, 20);
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &d->status, 0);
            d->pid = 0;
            return -1;
        }
    }
    return WIFEXITED(d->status) ? WEXITSTATUS(d->status) : -2 - WTERMSIG(d->status);
}
