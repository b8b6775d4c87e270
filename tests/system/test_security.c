/* Security of a real gsortd (issue 8): the socket and its lock get the
 * configured modes and never a world-writable one, peers are identified
 * with SO_PEERCRED (in the log and in the info reply), allow_uids /
 * allow_gids refuse other clients with one error reply and apply to new
 * connections after SIGHUP, and no file or directory gsortd creates -- the
 * socket, its lock, the tuning database and its journal files, the program
 * cache -- is world-writable even under umask 0. As root a child switches
 * to uid/gid 65534 to be a genuinely different client; without root those
 * checks use the test's own uid against a list that leaves it out (the TAP
 * lines say so). */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "dmn.h"
#include "gs_client.h"
#include "gs_conf.h"
#include "gs_err.h"
#include "tap.h"

#define NOBODY 65534u

static char g_dir[64];   /* sockets here: 0711, so uid 65534 reaches them */

static void rm_dir(void)
{
    if (g_dir[0] && !getenv("GSORT_TEST_KEEP")) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", g_dir);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        tap_bail("cannot write %s: %s", path, strerror(errno));
}

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double jnum(const cJSON *o, const char *k)
{
    const cJSON *v = jget(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Connect and call `op`: 0 and *reply, or the error code with the message
 * in msg. */
static int call(const char *sock, const char *op, cJSON **reply, char *msg, size_t mlen)
{
    gs_err err;
    gs_err_clear(&err);
    gs_client *c = NULL;
    cJSON *r = NULL;
    int rc = gs_client_connect(&c, sock, &err);
    if (rc == 0) {
        gs_client_set_timeout(c, 30);
        rc = gs_client_call(c, op, &r, &err);
        gs_client_close(c);
    }
    snprintf(msg, mlen, "%.400s", rc ? err.msg : "ok");
    if (reply)
        *reply = r;
    else
        cJSON_Delete(r);
    return rc;
}

/* Wait up to a minute for a line of the daemon's log (a reload's). */
static int wait_log(const dmn *d, const char *needle)
{
    for (int i = 0; i < 600; i++) {
        if (dmn_log_contains(d, needle))
            return 1;
        dmn_sleep(0.1);
    }
    tap_diag("'%s' never appeared in %s's log", needle, d->name);
    dmn_dump_log(d, 20);
    return 0;
}

static int reload(dmn *d, const char *conf, const char *text, const char *needle)
{
    write_file(conf, text);
    kill(d->pid, SIGHUP);
    return wait_log(d, needle);
}

/* A client as uid/gid NOBODY (no supplementary groups) pinging `sock`:
 * 0 served, 1 refused by the allow lists, 2 could not connect (EACCES), 3
 * anything else. */
static int ping_as_nobody(const char *sock)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail("fork: %s", strerror(errno));
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(4);
        gs_err err;
        gs_err_clear(&err);
        gs_client *c = NULL;
        if (gs_client_connect(&c, sock, &err) < 0)
            _exit(errno == EACCES ? 2 : 3);
        gs_client_set_timeout(c, 30);
        int rc = gs_client_call(c, "ping", NULL, &err);
        _exit(rc == 0 ? 0 : rc == GS_EPERM && strstr(err.msg, "permission denied") ? 1 : 3);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static unsigned long stat_denied(const char *sock)
{
    cJSON *r = NULL;
    char msg[512];
    double v = -1;
    if (call(sock, "stats", &r, msg, sizeof msg) == 0)
        v = jnum(jget(r, "clients"), "denied");
    cJSON_Delete(r);
    return v < 0 ? 999999 : (unsigned long)v;
}

/* ---- the config keys ---- */

static void test_conf_keys(void)
{
    gs_conf c;
    gs_conf_defaults(&c);
    gs_err e;
    gs_err_clear(&e);
    tap_ok(c.allow_uids[0] == '\0' && c.allow_gids[0] == '\0',
           "allow_uids and allow_gids are empty by default (everyone who can open the socket)");
    int rc = gs_conf_set(&c, "allow_uids", " 0 , root,12345 ", &e);
    tap_ok(rc == 0 && !strcmp(c.allow_uids, "0,root,12345"),
           "allow_uids takes numbers and names, blanks around commas: '%s' (%s)", c.allow_uids,
           rc ? e.msg : "ok");
    rc = gs_conf_set(&c, "allow_gids", "root", &e);
    tap_ok(rc == 0 && !strcmp(c.allow_gids, "root"), "allow_gids takes a group name (%s)",
           rc ? e.msg : "ok");
    static const struct { const char *key, *val, *needle; } bad[] = {
        { "allow_uids", "no-such-user-gsortd", "no user named 'no-such-user-gsortd'" },
        { "allow_gids", "no-such-group-gsortd", "no group named 'no-such-group-gsortd'" },
        { "allow_uids", "1,,2", "expected a comma-separated list" },
        { "allow_uids", "1,", "ends with a comma" },
        { "allow_uids", "1 2", "expected a comma-separated list" },
        { "allow_gids", "4294967295", "out of range" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gs_err_clear(&e);
        rc = gs_conf_set(&c, bad[i].key, bad[i].val, &e);
        tap_ok(rc == GS_EINVAL && strstr(e.msg, bad[i].needle) &&
               !strcmp(c.allow_uids, "0,root,12345") && !strcmp(c.allow_gids, "root"),
               "%s = '%s' refused, configuration unchanged: %s", bad[i].key, bad[i].val, e.msg);
    }
    /* --print-config reads back to the same lists. */
    char path[600];
    snprintf(path, sizeof path, "%s/print.conf", dmn_tmpdir());
    FILE *f = fopen(path, "w");
    if (!f)
        tap_bail("%s: %s", path, strerror(errno));
    gs_conf_print(&c, f);
    fclose(f);
    gs_conf back;
    gs_conf_defaults(&back);
    rc = gs_conf_load(&back, path, &e);
    tap_ok(rc == 0 && !strcmp(back.allow_uids, c.allow_uids) &&
           !strcmp(back.allow_gids, c.allow_gids),
           "the printed configuration reads back to the same allow lists (%s)", rc ? e.msg : "ok");
}

/* ---- socket modes and peer credentials ---- */

static void test_socket_and_peer(void)
{
    static dmn d;
    char sock[128];
    snprintf(sock, sizeof sock, "%s/peer.sock", g_dir);
    const char *const extra[] = { "-o", "devices=none", "-o", "log_level=debug", NULL };
    if (dmn_start(&d, "peer", sock, extra) < 0)
        tap_bail("the daemon did not start");
    struct stat st, lk;
    char lock[140];
    snprintf(lock, sizeof lock, "%s.lock", sock);
    /* (stat first: tap_ok's arguments are evaluated in no set order) */
    memset(&st, 0, sizeof st);
    memset(&lk, 0, sizeof lk);
    int sr = lstat(sock, &st), lr = lstat(lock, &lk);
    tap_ok(sr == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0660,
           "under umask 0 the socket has the default socket_mode 0660 (it has %04o)",
           (unsigned)(st.st_mode & 07777));
    tap_ok(lr == 0 && S_ISREG(lk.st_mode) && (lk.st_mode & 07777) == 0600,
           "under umask 0 the lock file %s is 0600 (it is %04o)", lock,
           (unsigned)(lk.st_mode & 07777));

    cJSON *r = NULL;
    char msg[512];
    int rc = call(sock, "info", &r, msg, sizeof msg);
    const cJSON *p = jget(r, "peer");
    tap_ok(rc == 0 && jnum(p, "pid") == (double)getpid() && jnum(p, "uid") == (double)getuid() &&
           jnum(p, "gid") == (double)getgid(),
           "info names the client as the kernel sees it: pid %.0f uid %.0f gid %.0f (we are "
           "%d, %u, %u) (%s)", jnum(p, "pid"), jnum(p, "uid"), jnum(p, "gid"), (int)getpid(),
           (unsigned)getuid(), (unsigned)getgid(), msg);
    cJSON_Delete(r);

    char cred[128];
    snprintf(cred, sizeof cred, "pid %d, uid %u, gid %u", (int)getpid(), (unsigned)getuid(),
             (unsigned)getgid());
    char line[200];
    snprintf(line, sizeof line, "client connected: fd ");
    tap_ok(wait_log(&d, line) && dmn_log_contains(&d, cred),
           "the log has 'client connected' with the peer's credentials (%s)", cred);

    /* An error from this client: its log line names it. */
    gs_err err;
    gs_err_clear(&err);
    gs_client *c = NULL;
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "v", 1);
    cJSON_AddStringToObject(h, "op", "no-such-op");
    cJSON *rep = NULL;
    rc = gs_client_connect(&c, sock, &err);
    if (rc == 0) {
        gs_client_set_timeout(c, 30);
        rc = gs_client_send(c, h, NULL, 0, -1, &err);
        if (rc == 0)
            rc = gs_client_recv(c, &rep, NULL, 0, NULL, &err);
        gs_client_close(c);
    }
    cJSON_Delete(h);
    cJSON_Delete(rep);
    snprintf(line, sizeof line, "%s: GS_EINVAL", cred);
    tap_ok(rc == 0 && wait_log(&d, line),
           "an error answered to the client is logged with its credentials ('%s')", line);
    snprintf(line, sizeof line, "%s disconnected", cred);
    tap_ok(wait_log(&d, line), "its disconnection too, at debug ('%s')", line);
    tap_ok(stat_denied(sock) == 0, "stats: clients.denied is 0 with no allow lists");

    /* Without a group of its own on the socket, another user cannot even
     * connect: the file mode is the first gate. */
    if (geteuid() == 0) {
        int k = ping_as_nobody(sock);
        tap_ok(k == 2, "uid %u cannot connect to a 0660 socket owned by root:root (EACCES; "
               "got %d)", NOBODY, k);
    } else {
        tap_ok(access(sock, W_OK) == 0 && st.st_uid == getuid() && !(st.st_mode & 0007),
               "not root (no uid switch here): the socket belongs to us and only owner and "
               "group may write it (%04o)", (unsigned)(st.st_mode & 07777));
    }
    int stopped = dmn_stop(&d, SIGTERM, 30);
    tap_ok(stopped == 0 && lstat(sock, &st) < 0 && lstat(lock, &lk) < 0,
           "stopped cleanly; the socket and its lock are removed");
}

static void test_modes_refused(void)
{
    static dmn d;
    char conf[600];
    snprintf(conf, sizeof conf, "%s/empty.conf", dmn_tmpdir());
    write_file(conf, "");
    const char *modes[] = { "0666", "0662", "0777" };
    for (int i = 0; i < 3; i++) {
        char opt[64];
        snprintf(opt, sizeof opt, "socket_mode=%s", modes[i]);
        const char *const args[] = { "--config", conf, "-o", opt, "--print-config", NULL };
        int rc = dmn_run(&d, "mode", args, 30);
        tap_ok(rc == 2 && dmn_log_contains(&d, "world-writable"),
               "socket_mode = %s is refused as world-writable (exit %d)", modes[i], rc);
    }

    /* A mode and a group as configured. */
    static dmn g;
    char sock[128];
    snprintf(sock, sizeof sock, "%s/grp.sock", g_dir);
    char gopt[64];
    unsigned gid = geteuid() == 0 ? NOBODY : (unsigned)getgid();
    snprintf(gopt, sizeof gopt, "socket_group=%u", gid);
    const char *const extra[] = { "-o", "devices=none", "-o", "socket_mode=0640", "-o", gopt,
                                  NULL };
    if (dmn_start(&g, "grp", sock, extra) < 0)
        tap_bail("the daemon did not start");
    struct stat st;
    memset(&st, 0, sizeof st);
    int sr = lstat(sock, &st);
    tap_ok(sr == 0 && (st.st_mode & 07777) == 0640 && st.st_gid == gid,
           "socket_mode = 0640, socket_group = %u: the socket is %04o, group %u", gid,
           (unsigned)(st.st_mode & 07777), (unsigned)st.st_gid);
    dmn_stop(&g, SIGTERM, 30);
}

/* ---- allow_uids / allow_gids ---- */

static void test_allow(void)
{
    static dmn d;
    char sock[128], conf[600];
    snprintf(sock, sizeof sock, "%s/allow.sock", g_dir);
    snprintf(conf, sizeof conf, "%s/allow.conf", dmn_tmpdir());
    unsigned me = (unsigned)getuid(), other = me == 12345 ? 12346 : 12345;
    struct passwd *pw = getpwuid(me);
    struct group *gr = getgrgid(getgid());
    char myname[128], mygroup[128];
    snprintf(myname, sizeof myname, "%s", pw ? pw->pw_name : "");
    snprintf(mygroup, sizeof mygroup, "%s", gr ? gr->gr_name : "");
    if (!myname[0] || !mygroup[0])
        tap_bail("uid %u or gid %u has no name here", me, (unsigned)getgid());

    char text[512];
    /* As root the socket is group NOBODY so the uid-65534 child can reach it. */
    int root = geteuid() == 0;
    snprintf(text, sizeof text, "allow_uids = %u\n%s", other,
             root ? "socket_group = 65534\n" : "");
    write_file(conf, text);
    const char *const extra[] = { "--config", conf, "-o", "devices=none", "-o",
                                  "log_level=debug", NULL };
    if (dmn_start(&d, "allow", sock, extra) < 0)
        tap_bail("the daemon did not start");

    char msg[512];
    int rc = call(sock, "ping", NULL, msg, sizeof msg);
    char want[64];
    snprintf(want, sizeof want, "uid %u", me);
    tap_ok(rc == GS_EPERM && strstr(msg, "permission denied") && strstr(msg, want),
           "allow_uids = %u: our client (uid %u) is refused with one error reply: %s (%s)",
           other, me, gs_strerror(rc), msg);
    char cred[128];
    snprintf(cred, sizeof cred, "pid %d, uid %u, gid %u: not in allow_uids", (int)getpid(), me,
             (unsigned)getgid());
    tap_ok(wait_log(&d, "refusing client fd") && dmn_log_contains(&d, cred),
           "the refusal is logged with the client's credentials ('%s')", cred);
    tap_ok(dmn_log_contains(&d, "only these clients are served"),
           "the start-up log states the allow lists");

    /* SIGHUP: our name in the list, new connections are served. */
    snprintf(text, sizeof text, "allow_uids = %u, %s\n%s", other, myname,
             root ? "socket_group = 65534\n" : "");
    char needle[300];
    snprintf(needle, sizeof needle, "allow_uids = \"%u,%s\"", other, myname);
    int rl = reload(&d, conf, text, needle);
    rc = call(sock, "ping", NULL, msg, sizeof msg);
    tap_ok(rl && rc == 0, "after SIGHUP with allow_uids = %u,%s (our name) a new client is "
           "served (%s)", other, myname, msg);
    /* (The start-up probe of the test's helper was refused too.) */
    unsigned long den = stat_denied(sock);
    tap_ok(den >= 1 && den < 999999, "stats: clients.denied counts the refusals (%lu)", den);

    if (root) {
        int k = ping_as_nobody(sock);
        tap_ok(k == 1, "a client as uid %u (it can open the 0660 socket of group %u) is "
               "refused: not in allow_uids (got %d)", NOBODY, NOBODY, k);
        unsigned long den2 = stat_denied(sock);
        tap_ok(den2 == den + 1, "stats: clients.denied went from %lu to %lu", den, den2);
        snprintf(text, sizeof text, "allow_uids = %u\nallow_gids = nogroup, %u\n"
                 "socket_group = 65534\n", me, NOBODY);
        snprintf(needle, sizeof needle, "allow_gids = \"nogroup,%u\"", NOBODY);
        if (!getgrnam("nogroup")) {   /* not Debian-like: the number alone */
            snprintf(text, sizeof text, "allow_uids = %u\nallow_gids = %u\n"
                     "socket_group = 65534\n", me, NOBODY);
            snprintf(needle, sizeof needle, "allow_gids = \"%u\"", NOBODY);
        }
        rl = reload(&d, conf, text, needle);
        k = ping_as_nobody(sock);
        tap_ok(rl && k == 0, "after SIGHUP with allow_gids listing gid %u the uid-%u client "
               "is served (got %d)", NOBODY, NOBODY, k);
        rc = call(sock, "ping", NULL, msg, sizeof msg);
        tap_ok(rc == 0, "and root, listed in allow_uids, still is (%s)", msg);
    } else {
        tap_diag("not root: no client of another uid can be made here; the refusal of our "
                 "own uid above stands for it");
    }

    /* Our primary group by name lets us in with our uid left out. */
    snprintf(text, sizeof text, "allow_uids = %u\nallow_gids = %s\n%s", other, mygroup,
             root ? "socket_group = 65534\n" : "");
    snprintf(needle, sizeof needle, "allow_gids = \"%s\"", mygroup);
    rl = reload(&d, conf, text, needle);
    rc = call(sock, "ping", NULL, msg, sizeof msg);
    tap_ok(rl && rc == 0, "allow_uids = %u, allow_gids = %s (our primary group, by name): "
           "served (%s)", other, mygroup, msg);

    /* And refused again when neither lists us. */
    snprintf(text, sizeof text, "allow_uids = %u\nallow_gids = %u\n%s", other, other,
             root ? "socket_group = 65534\n" : "");
    snprintf(needle, sizeof needle, "allow_gids = \"%u\"", other);
    rl = reload(&d, conf, text, needle);
    rc = call(sock, "ping", NULL, msg, sizeof msg);
    tap_ok(rl && rc == GS_EPERM && strstr(msg, "permission denied"),
           "neither list names us after another SIGHUP: refused again (%s)", msg);
    /* Our supplementary groups were looked up for that refusal (neither our
     * uid nor our primary gid is listed); the next connection reuses the
     * verdict instead of asking the user database again. */
    char looked[96];
    snprintf(looked, sizeof looked, "supplementary groups of uid %u looked up", me);
    int n1 = dmn_log_count(&d, looked);
    rc = call(sock, "ping", NULL, msg, sizeof msg);
    int n2 = dmn_log_count(&d, looked);
    tap_ok(n1 >= 1 && n2 == n1 && rc == GS_EPERM,
           "a second connection reuses the supplementary-group verdict (%d lookups, then %d)",
           n1, n2);

    /* A bad list on reload keeps the lists in force. */
    write_file(conf, "allow_uids = no-such-user-gsortd\n");
    kill(d.pid, SIGHUP);
    int failed = wait_log(&d, "no user named 'no-such-user-gsortd'");
    rc = call(sock, "ping", NULL, msg, sizeof msg);
    tap_ok(failed && rc == GS_EPERM && !dmn_exited(&d),
           "a reload naming an unknown user fails and keeps the previous lists (%s)", msg);
    tap_ok(dmn_stop(&d, SIGTERM, 30) == 0, "the daemon stops cleanly");
}

/* ---- no world-writable file, under umask 0 ---- */

static int g_nent, g_nww, g_nbin, g_nsock;
static char g_ww[1024];

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag;
    if (ftw->level == 0)
        return 0;   /* the test's own directory */
    g_nent++;
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".bin"))
        g_nbin++;
    if (S_ISSOCK(st->st_mode))
        g_nsock++;
    if ((st->st_mode & S_IWOTH) && !S_ISLNK(st->st_mode)) {
        g_nww++;
        size_t l = strlen(g_ww);
        snprintf(g_ww + l, sizeof g_ww - l, " %s(%04o)", path, (unsigned)(st->st_mode & 07777));
    }
    tap_diag("  %04o %s", (unsigned)(st->st_mode & 07777), path + strlen(g_dir));
    return 0;
}

static void test_file_modes(void)
{
    char top[128], data[160], cache[160], cache2[160];
    snprintf(top, sizeof top, "%s/files", g_dir);
    if (mkdir(top, 0700) < 0)
        tap_bail("mkdir %s: %s", top, strerror(errno));
    snprintf(data, sizeof data, "%s/data/gsortd", top);
    snprintf(cache, sizeof cache, "%s/cache/gsortd", top);
    snprintf(cache2, sizeof cache2, "%s/serve-cache/a/b", top);
    /* The default locations, so gsortd makes the directories itself. */
    setenv("GSORTD_DATA_DIR", data, 1);
    setenv("GSORTD_CACHE_DIR", cache, 1);
    static dmn t;
    const char *const args[] = { "--tune-all", "--quick", "--algorithms", "host", NULL };
    int rc = dmn_run(&t, "tune", args, 300);
    char db[200];
    snprintf(db, sizeof db, "%s/tuning.db", data);
    struct stat st;
    tap_ok(rc == 0 && stat(db, &st) == 0, "gsortd --tune-all --quick --algorithms host under "
           "umask 0 made %s (exit %d)", db, rc);
    if (rc != 0)
        dmn_dump_log(&t, 20);

    /* Serve from it, with a program cache of its own in directories it
     * must create, and compile one kernel so a cache entry is written. */
    static dmn d;
    char sock[160], copt[200], dbopt[220];
    snprintf(sock, sizeof sock, "%s/s.sock", top);
    snprintf(copt, sizeof copt, "cache_dir=%s", cache2);
    snprintf(dbopt, sizeof dbopt, "db=%s", db);
    const char *const extra[] = { "-o", copt, "-o", dbopt, NULL };
    if (dmn_start(&d, "files", sock, extra) < 0)
        tap_bail("the daemon did not start");
    gs_err err;
    gs_err_clear(&err);
    gs_client *c = NULL;
    uint32_t k[256];
    for (unsigned i = 0; i < 256; i++)
        k[i] = (i * 2654435761u) ^ 0x5a5a;
    gs_client_sort s = { .shape = { .dtype = GS_DT_U32 }, .n = 256, .keys = k, .algorithm = "radix",
                         .device = -1 };
    gs_client_result res;
    rc = gs_client_connect(&c, sock, &err);
    if (rc == 0) {
        gs_client_set_timeout(c, 120);
        rc = gs_client_sort_run(c, &s, &res, &err);
        gs_client_close(c);
    }
    int sorted = 1;
    for (unsigned i = 1; i < 256; i++)
        sorted &= k[i - 1] <= k[i];
    tap_ok(rc == 0 && sorted, "a radix sort compiled and ran on %s (%s)",
           rc ? "?" : res.device_name, rc ? err.msg : "ok");

    tap_diag("what gsortd made under %s (umask 0):", top);
    g_nent = g_nww = g_nbin = g_nsock = 0;
    g_ww[0] = '\0';
    nftw(top, visit, 16, FTW_PHYS);
    tap_ok(g_nsock == 1 && g_nbin >= 1 && g_nent >= 10,
           "the walk saw the socket, %d program-cache entries and %d entries in all", g_nbin,
           g_nent);
    tap_ok(g_nww == 0, "none of them is world-writable:%s", g_nww ? g_ww : " (none)");
    dmn_stop(&d, SIGTERM, 30);
    unsetenv("GSORTD_DATA_DIR");
    unsetenv("GSORTD_CACHE_DIR");
}

int main(void)
{
    atexit(rm_dir);   /* after dmn's clean-up has killed the daemons */
    dmn_init();
    /* Everything below runs under umask 0: gsortd must set modes itself. */
    umask(0);
    snprintf(g_dir, sizeof g_dir, "/tmp/gs-sec-XXXXXX");
    if (!mkdtemp(g_dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    chmod(g_dir, 0711);
    tap_diag("running as uid %u%s", (unsigned)geteuid(),
             geteuid() == 0 ? " (root: another client is made with setuid(65534))"
                            : " (not root: the setuid checks are replaced, see their lines)");
    test_conf_keys();
    test_socket_and_peer();
    test_modes_refused();
    test_allow();
    test_file_modes();
    return tap_done();
}
