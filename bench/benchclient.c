/* The daemon-facing helpers of bench/benchclient.h, over the blocking
 * client (gs_client) and /proc. */
#include "config.h"
#include "benchclient.h"

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

long bc_rss_kib(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}
