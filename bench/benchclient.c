/* The daemon-facing helpers of bench/benchclient.h, over the blocking
 * client (gs_client) and /proc. */
#include "config.h"
#include "benchclient.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"
#include "gs_paths.h"

int bc_socket_shown(const char *socket, char *shown, size_t len, const char *prog,
                    const char *opt)
{
    if (socket) {
        snprintf(shown, len, "%s", socket);
        return 0;
    }
    gs_err err;
    gs_err_clear(&err);
    if (gs_paths_socket(shown, len, &err) < 0) {
        fprintf(stderr, "%s: no default socket (%s): give %s PATH\n", prog, err.msg, opt);
        return -1;
    }
    return 0;
}

int bc_connect(gs_client **c, const char *socket, double timeout_s, const char *prog,
               const char *hint)
{
    gs_err err;
    gs_err_clear(&err);
    if (gs_client_connect(c, socket, &err) < 0) {
        fprintf(stderr, "%s: %s\n%s", prog, err.msg, hint);
        *c = NULL;
        return -1;
    }
    if (timeout_s > 0)
        gs_client_set_timeout(*c, timeout_s);
    return 0;
}

int bc_info(gs_client *c, const char *prog, cJSON **info)
{
    gs_err err;
    gs_err_clear(&err);
    *info = NULL;
    if (gs_client_call(c, "info", info, &err) < 0) {
        fprintf(stderr, "%s: info request failed: %s\n", prog, err.msg);
        cJSON_Delete(*info);
        *info = NULL;
        return -1;
    }
    return 0;
}

int bc_ping(const char *socket, double timeout_s, gs_err *err)
{
    gs_client *c = NULL;
    int rc = gs_client_connect(&c, socket, err);
    if (rc == 0) {
        if (timeout_s > 0)
            gs_client_set_timeout(c, timeout_s);
        rc = gs_client_call(c, "ping", NULL, err);
        gs_client_close(c);
    }
    return rc;
}

long bc_status_kib(long pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t fl = strlen(field);
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            kib = strtol(line + fl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

long bc_rss_kib(long pid)
{
    return bc_status_kib(pid, "VmRSS");
}

long bc_rss_own_kib(long pid)
{
    long rss = bc_rss_kib(pid), sh = bc_status_kib(pid, "RssShmem");
    return rss >= 0 && sh > 0 && sh <= rss ? rss - sh : rss;
}

int bc_stats_read(gs_client *c, bc_stats *st, gs_err *err)
{
    cJSON *r = NULL;
    int rc = gs_client_call(c, "stats", &r, err);
    static const struct {
        const char *obj, *name;
        size_t off;
    } f[] = {
        { "clients", "current", offsetof(bc_stats, conns) },
        { "blocks", "mapped", offsetof(bc_stats, mapped) },
        { "blocks", "reused", offsetof(bc_stats, reused) },
        { "blocks", "pinned_bytes", offsetof(bc_stats, pinned_bytes) },
        { "blocks", "max_pinned_bytes", offsetof(bc_stats, max_pinned_bytes) },
        { "blocks", "pinned", offsetof(bc_stats, pinned) },
        { "blocks", "refused", offsetof(bc_stats, refused) },
    };
    for (size_t i = 0; rc == 0 && i < sizeof f / sizeof f[0]; i++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(r, f[i].obj);
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, f[i].name);
        if (cJSON_IsNumber(x) && x->valuedouble >= 0)
            *(uint64_t *)((char *)st + f[i].off) = (uint64_t)x->valuedouble;   /* exact < 2^53 */
        else
            rc = gs_err_set(err, GS_ECORRUPT, "the stats reply has no %s.%s", f[i].obj,
                            f[i].name);
    }
    const cJSON *cached = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r, "memory"), "cached");
    st->cached = cJSON_IsNumber(cached) && cached->valuedouble >= 0
                     ? (uint64_t)cached->valuedouble : 0;
    cJSON_Delete(r);
    return rc;
}

int bc_stats_poll(gs_client **c, const char *socket, double timeout_s, const char *prog,
                  bc_stats *st)
{
    gs_err err;
    gs_err_clear(&err);
    for (int tries = 0; tries < 2; tries++) {
        if (!*c && bc_connect(c, socket, timeout_s, prog, "") < 0)
            return -1;
        if (bc_stats_read(*c, st, &err) == 0)
            return 0;
        gs_client_close(*c);
        *c = NULL;
    }
    fprintf(stderr, "%s: stats request failed: %s\n", prog, err.msg);
    return -1;
}

int bc_daemon_desc(const char *socket, double timeout_s, const char *prog, long *pid,
                   char *desc, size_t dl)
{
    gs_client *c = NULL;
    char hint[160];
    snprintf(hint, sizeof hint, "  is gsortd running there? (tools/with-gsortd BUILD_DIR %s ... "
             "starts a throwaway one)\n", prog);
    if (bc_connect(&c, socket, timeout_s, prog, hint) < 0)
        return -1;
    cJSON *info = NULL;
    int rc = bc_info(c, prog, &info);
    gs_client_close(c);
    if (rc < 0)
        return -1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(info, "pid");
    *pid = cJSON_IsNumber(p) ? (long)p->valuedouble : -1;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(info, "version");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(info, "devices");
    size_t used = (size_t)snprintf(desc, dl, "gsortd %s, devices:",
                                   cJSON_IsString(ver) ? ver->valuestring : "?");
    const cJSON *d;
    int nd = 0;
    cJSON_ArrayForEach(d, devs) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "name");
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(d, "enabled");
        if (used < dl)
            used += (size_t)snprintf(desc + used, dl - used, " %s%s",
                                     cJSON_IsString(name) ? name->valuestring : "?",
                                     cJSON_IsFalse(en) ? " (not enabled)" : "");
        nd++;
    }
    if (!nd && used < dl)
        snprintf(desc + used, dl - used, " none (host sorts only)");
    cJSON_Delete(info);
    if (*pid <= 0) {
        fprintf(stderr, "%s: the info reply names no daemon pid\n", prog);
        return -1;
    }
    return 0;
}
