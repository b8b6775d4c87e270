/* Default directory resolution and mkdir -p. The environment is read at
 * each call (not cached) so tests and a daemon reconfigured by its service
 * manager see the current values. */
#include "config.h"
#include "gs_paths.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* A variable counts only when set, non-empty and, for the XDG ones, absolute
 * (the XDG spec says relative values are to be ignored). */
static const char *env_dir(const char *name, int need_abs)
{
    const char *v = getenv(name);
    if (!v || !v[0])
        return NULL;
    if (need_abs && v[0] != '/')
        return NULL;
    return v;
}

/* $HOME, else the passwd entry (daemons may be started without HOME);
 * getpwuid_r because worker threads may resolve paths concurrently. */
static const char *home_dir(char *pwbuf, size_t pwlen)
{
    const char *h = env_dir("HOME", 1);
    if (h)
        return h;
    struct passwd pw, *res = NULL;
    if (getpwuid_r(geteuid(), &pw, pwbuf, pwlen, &res) != 0 || !res)
        return NULL;
    return pw.pw_dir && pw.pw_dir[0] == '/' ? pw.pw_dir : NULL;
}

static int put(char *buf, size_t len, const char *a, const char *b)
{
    int n = snprintf(buf, len, "%s%s", a, b);
    if (n < 0 || (size_t)n >= len) {
        if (len)
            buf[0] = '\0';
        return GS_ETOOBIG;
    }
    return 0;
}

int gs_paths_default(int kind, int as_root, char *buf, size_t len)
{
    int cache = kind == GS_PATHS_CACHE;
    const char *v = env_dir(cache ? "GSORTD_CACHE_DIR" : "GSORTD_DATA_DIR", 0);
    if (v)
        return put(buf, len, v, "");
    if (as_root)
        return put(buf, len, cache ? "/var/cache/gsortd" : "/var/lib/gsortd", "");
    v = env_dir(cache ? "XDG_CACHE_HOME" : "XDG_DATA_HOME", 1);
    if (v)
        return put(buf, len, v, "/gsortd");
    char pwbuf[4096];
    v = home_dir(pwbuf, sizeof pwbuf);
    if (v)
        return put(buf, len, v, cache ? "/.cache/gsortd" : "/.local/share/gsortd");
    if (len)
        buf[0] = '\0';
    return GS_ENOTFOUND;
}

int gs_paths_cache_dir(char *buf, size_t len)
{
    return gs_paths_default(GS_PATHS_CACHE, geteuid() == 0, buf, len);
}

int gs_paths_data_dir(char *buf, size_t len)
{
    return gs_paths_default(GS_PATHS_DATA, geteuid() == 0, buf, len);
}

/* Create one component; EEXIST is fine only if it is a directory. */
static int mkdir_one(const char *p, mode_t mode)
{
    if (mkdir(p, mode) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST) {
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        e = ENOTDIR;
    }
    errno = e;
    return -1;
}

int gs_paths_mkdir_p(const char *path, mode_t mode, gs_err *err)
{
    /* Whatever a caller asks, no directory gsortd makes is world-writable. */
    mode &= ~(mode_t)S_IWOTH;
    if (!path || !path[0])
        return gs_err_set(err, GS_EINVAL, "mkdir: empty path");
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
        return gs_err_set(err, GS_EIO, "mkdir %s: %s", path, strerror(ENOTDIR));
    }
    char *p = strdup(path);
    if (!p)
        return gs_err_set(err, GS_ENOMEM, "mkdir %s: out of memory", path);
    /* Walk the components left to right; each must exist or be creatable. */
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        int bad = mkdir_one(p, mode);
        int e = errno;
        *s = '/';
        if (bad) {
            *s = '\0';
            gs_err_set(err, GS_EIO, "mkdir %s: %s", p, strerror(e));
            free(p);
            errno = e;
            return GS_EIO;
        }
    }
    int rc = 0;
    if (mkdir_one(p, mode) != 0) {
        int e = errno;
        rc = gs_err_set(err, GS_EIO, "mkdir %s: %s", p, strerror(e));
        errno = e;
    }
    free(p);
    return rc;
}

int gs_paths_socket(char *buf, size_t len, gs_err *err)
{
    char tmp[GS_PATHS_MAX + 32];
    if (geteuid() == 0) {
        snprintf(tmp, sizeof tmp, "%s", GS_PATHS_SYSTEM_SOCKET);
    } else {
        const char *d = getenv("XDG_RUNTIME_DIR");
        /* The XDG spec says a relative value is to be ignored. */
        if (!d || d[0] != '/') {
            if (len)
                buf[0] = '\0';
            return gs_err_set(err, GS_ENOTFOUND,
                              "no default socket: XDG_RUNTIME_DIR is %s; set it to an "
                              "absolute directory or pass --socket PATH",
                              !d ? "not set" : !d[0] ? "empty" : "not an absolute path");
        }
        size_t dl = strlen(d);
        while (dl > 1 && d[dl - 1] == '/')
            dl--;
        if (dl >= GS_PATHS_MAX)
            dl = GS_PATHS_MAX; /* still too long below; only bounds the copy */
        snprintf(tmp, sizeof tmp, "%.*s/gsortd.sock", (int)dl, d);
    }
    size_t n = strlen(tmp);
    if (n >= len || n >= GS_PATHS_SOCKET_MAX) {
        if (len)
            buf[0] = '\0';
        return gs_err_set(err, GS_ETOOBIG,
                          "default socket %s is %zu bytes; a Unix socket path must be "
                          "shorter than %d bytes (pass --socket PATH)",
                          tmp, n, GS_PATHS_SOCKET_MAX);
    }
    memcpy(buf, tmp, n + 1);
    return 0;
}

int gs_paths_client_socket(char *buf, size_t len, char *also, size_t alen, gs_err *err)
{
    if (also && alen)
        also[0] = '\0';
    const char *env = getenv("GSORTD_SOCKET");
    if (env && *env) {
        if (strlen(env) >= len || strlen(env) >= GS_PATHS_SOCKET_MAX)
            return gs_err_set(err, GS_ETOOBIG, "GSORTD_SOCKET is %zu bytes long; a Unix "
                              "socket path must be shorter than %d bytes", strlen(env),
                              GS_PATHS_SOCKET_MAX);
        snprintf(buf, len, "%s", env);
        return 0;
    }
    char own[GS_PATHS_SOCKET_MAX];
    if (gs_paths_socket(own, sizeof own, NULL) == 0) {
        struct stat st;
        /* As root this already is the system socket. */
        if (strcmp(own, GS_PATHS_SYSTEM_SOCKET) == 0 || stat(own, &st) == 0) {
            if (strlen(own) >= len)
                return gs_err_set(err, GS_ETOOBIG, "socket path %s does not fit", own);
            snprintf(buf, len, "%s", own);
            return 0;
        }
        if (also && alen)
            snprintf(also, alen, "; %s does not exist either", own);
    }
    if (strlen(GS_PATHS_SYSTEM_SOCKET) >= len)
        return gs_err_set(err, GS_ETOOBIG, "socket path buffer too small");
    snprintf(buf, len, "%s", GS_PATHS_SYSTEM_SOCKET);
    return 0;
}

int gs_paths_sockaddr(struct sockaddr_un *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof a->sun_path)
        return -1;
    memcpy(a->sun_path, path, n + 1);
    return 0;
}
