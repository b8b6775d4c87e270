/* libFuzzer target for the daemon's config parser: the input is a config
 * file, written to a memfd and read with gs_conf_load through
 * /proc/self/fd/N (gs_conf.h offers only a path). Checked besides "no
 * crash": a refused file leaves the configuration untouched and says why;
 * an accepted one never makes the socket world-writable; and what
 * gs_conf_print writes loads back to the same printed configuration. The
 * first line is also handed to the value parsers (sizes, durations,
 * booleans) directly. Also built with the normal compiler into the corpus
 * replay test (tests/fuzz/replay.c). */
#define _GNU_SOURCE
#include "config.h"
#include "gs_conf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* A memfd holding `len` bytes, and its path; -1 on failure. */
static int memfile(const void *buf, size_t len, char path[64])
{
    int fd = memfd_create("gsortd-fuzz-conf", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

/* gs_conf_print's text in a malloc'd string. */
static char *printed(const gs_conf *c, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    CHECK(f);
    gs_conf_print(c, f);
    CHECK(fclose(f) == 0);
    return buf;
}

static void value_parsers(const uint8_t *data, size_t size)
{
    size_t n = 0;
    while (n < size && n < 256 && data[n] != '\n')
        n++;
    char s[257];
    memcpy(s, data, n);
    s[n] = '\0';
    uint64_t sz;
    double d;
    int b = -1;
    gs_conf_parse_size(s, &sz);
    if (gs_conf_parse_duration(s, &d) == 0)
        CHECK(d == d);           /* never NaN */
    if (gs_conf_parse_bool(s, &b) == 0)
        CHECK(b == 0 || b == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    value_parsers(data, size);

    char path[64];
    int fd = memfile(data, size, path);
    if (fd < 0)
        return 0;
    gs_conf c, before;
    gs_conf_defaults(&c);
    memcpy(&before, &c, sizeof c);
    gs_err err;
    err.msg[0] = '\0';
    int rc = gs_conf_load(&c, path, &err);
    close(fd);
    if (rc < 0) {
        CHECK(memcmp(&c, &before, sizeof c) == 0);   /* all or nothing */
        CHECK(err.msg[0] != '\0');
        return 0;
    }
    CHECK(rc == 0);
    CHECK((c.socket_mode & 0002) == 0);              /* never world-writable */

    size_t len1, len2;
    char *t1 = printed(&c, &len1);
    fd = memfile(t1, len1, path);
    if (fd >= 0) {
        gs_conf again;
        gs_conf_defaults(&again);
        rc = gs_conf_load(&again, path, &err);
        close(fd);
        if (rc != 0) {
            fprintf(stderr, "printed configuration does not load back: %s\n%s", err.msg, t1);
            abort();
        }
        char *t2 = printed(&again, &len2);
        if (len1 != len2 || memcmp(t1, t2, len1) != 0) {
            fprintf(stderr, "printed configuration changes when loaded back:\n%s---\n%s", t1, t2);
            abort();
        }
        free(t2);
    }
    free(t1);
    return 0;
}
