/* Access to kernel sources: the embedded copies by default, or files in a
 * development directory (gsortd --kernel-dir) so a kernel can be edited
 * without rebuilding. */
#include "config.h"
#include "gs_kern.h"
#include "gs_sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *g_dir;

void gs_kern_set_dir(const char *dir)
{
    free(g_dir);
    g_dir = dir ? strdup(dir) : NULL;
}

const char *gs_kern_get_dir(void) { return g_dir; }

static char *g_opts;

void gs_kern_set_opts(const char *opts)
{
    free(g_opts);
    g_opts = opts && *opts ? strdup(opts) : NULL;
}

const char *gs_kern_get_opts(void) { return g_opts; }

static int load_file(const char *path, char **text, size_t *len, gs_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gs_err_set(err, GS_ENOTFOUND, "kernel source %s: %s", path, strerror(errno));
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        return gs_err_set(err, GS_ENOMEM, "kernel source %s: out of memory", path);
    if (bad) {
        free(buf);
        return gs_err_set(err, GS_EIO, "kernel source %s: read error", path);
    }
    buf[n] = '\0';
    *text = buf;
    if (len)
        *len = n;
    return 0;
}

int gs_kern_load(const char *name, char **text, size_t *len, gs_err *err)
{
    if (g_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.cl", g_dir, name);
        return load_file(path, text, len, err);
    }
    for (size_t i = 0; i < gs_kern_embedded_count; i++) {
        const gs_kern_src *k = &gs_kern_embedded[i];
        if (strcmp(k->name, name) == 0) {
            char *t = malloc(k->len + 1);
            if (!t)
                return gs_err_set(err, GS_ENOMEM, "kernel %s: out of memory", name);
            memcpy(t, k->text, k->len + 1);
            *text = t;
            if (len)
                *len = k->len;
            return 0;
        }
    }
    return gs_err_set(err, GS_ENOTFOUND, "no embedded kernel named '%s'", name);
}

int gs_kern_code_id(char *hex, gs_err *err)
{
    gs_sha256_ctx c;
    gs_sha256_init(&c);
    gs_sha256_update(&c, PACKAGE_VERSION, sizeof PACKAGE_VERSION);
    for (size_t i = 0; i < gs_kern_embedded_count; i++) {
        char *t;
        size_t len;
        int rc = gs_kern_load(gs_kern_embedded[i].name, &t, &len, err);
        if (rc)
            return rc;
        gs_sha256_update(&c, gs_kern_embedded[i].name, strlen(gs_kern_embedded[i].name) + 1);
        gs_sha256_update(&c, t, len + 1);
        free(t);
    }
    uint8_t d[GS_SHA256_LEN];
    gs_sha256_final(&c, d);
    gs_sha256_hex(d, hex);
    return 0;
}
