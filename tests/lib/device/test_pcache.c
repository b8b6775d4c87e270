/* The on-disk program cache, end to end through gs_prog_get_text on the
 * first OpenCL device (PoCL in CI): build then disk hit (and the loaded
 * program computes the right thing), misses for other options and source,
 * recovery from truncated, damaged and driver-rejected entries, creation of
 * a missing directory, degradation to building every time with exactly one
 * warning when the directory is unusable, entry permissions, the compiler
 * log on a failed build, and the default-directory rules of gs_paths. */
#include "config.h"
#include "gs_dev.h"
#include "gs_log.h"
#include "gs_paths.h"
#include "gs_pcache.h"
#include "gs_prog.h"
#include "gs_sha256.h"
#include "tap.h"
#include "gs_time.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define N_ITEMS 1024

/* out[i] = i * MUL + k + BIAS; MUL differs between the two sources, BIAS comes from the options. */
static const char *const SRC_A =
    "__kernel void gs_pc_fill(__global uint *out, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (uint)i * 3u + k + GS_PC_BIAS;\n"
    "}\n";
static const char *const SRC_B =
    "__kernel void gs_pc_fill(__global uint *out, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (uint)i * 5u + k + GS_PC_BIAS;\n"
    "}\n";
static const char *const SRC_BAD =
    "__kernel void gs_pc_fill(__global uint *out)\n"
    "{\n"
    "    out[get_global_id(0)] = gs_pc_undeclared_ident;\n"
    "}\n";

/* ---- log capture ---- */

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_warns;
static char g_warn_text[8192];

static void sink(int level, const char *msg, void *ud)
{
    (void)ud;
    pthread_mutex_lock(&g_log_lock);
    if (level == GS_LOG_WARN) {
        g_warns++;
        size_t n = strlen(g_warn_text);
        snprintf(g_warn_text + n, sizeof g_warn_text - n, "%s\n", msg);
    }
    pthread_mutex_unlock(&g_log_lock);
    tap_diag("log %s: %s", gs_log_level_name(level), msg);
}

static void log_reset(void)
{
    pthread_mutex_lock(&g_log_lock);
    g_warns = 0;
    g_warn_text[0] = '\0';
    pthread_mutex_unlock(&g_log_lock);
}

/* ---- file helpers ---- */

/* snprintf for paths; through a wrapper because the paths here are short
 * and gcc's truncation warning cannot know that. */
__attribute__((format(printf, 3, 4)))
static char *pathf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return buf;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Number of *.bin entries in dir (into `one` the path of the last seen);
 * *other gets the count of any other non-dot-dir files (leftover temps). */
static int count_entries(const char *dir, char *one, size_t onelen, int *other)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (other)
        *other = 0;
    if (!d)
        return -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (ends_with(de->d_name, ".bin")) {
            n++;
            if (one)
                pathf(one, onelen, "%s/%s", dir, de->d_name);
        } else if (other) {
            (*other)++;
        }
    }
    closedir(d);
    return n;
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long long sz = file_size(path);
    *buf = malloc(sz > 0 ? (size_t)sz : 1);
    *len = *buf ? fread(*buf, 1, (size_t)sz, f) : 0;
    fclose(f);
    return *buf && (long long)*len == sz ? 0 : -1;
}

static int write_file(const char *path, const unsigned char *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(buf, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        chmod(p, 0700);
    return remove(p);
}

/* ---- running the program ---- */

/* Enqueue gs_pc_fill and compare with out[i] = i*mul + 11 + bias. *first_ms
 * gets the wall time of the first launch (to its completion). */
static int run_check(gs_dev *dev, cl_program prog, unsigned mul, unsigned bias, double *first_ms)
{
    cl_int rc;
    cl_kernel k = clCreateKernel(prog, "gs_pc_fill", &rc);
    if (rc != CL_SUCCESS) {
        tap_diag("clCreateKernel: %s", gs_cl_errname(rc));
        return 0;
    }
    cl_mem b = clCreateBuffer(dev->ctx, CL_MEM_WRITE_ONLY, N_ITEMS * sizeof(cl_uint), NULL, &rc);
    cl_uint kk = 11, out[N_ITEMS];
    size_t g = N_ITEMS;
    int ok = rc == CL_SUCCESS;
    double t0 = gs_now_ms();
    ok = ok && clSetKernelArg(k, 0, sizeof b, &b) == CL_SUCCESS &&
         clSetKernelArg(k, 1, sizeof kk, &kk) == CL_SUCCESS &&
         clEnqueueNDRangeKernel(dev->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL) == CL_SUCCESS &&
         clFinish(dev->queue) == CL_SUCCESS;
    if (first_ms)
        *first_ms = gs_now_ms() - t0;
    ok = ok && clEnqueueReadBuffer(dev->queue, b, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL) == CL_SUCCESS;
    for (unsigned i = 0; ok && i < N_ITEMS; i++) {
        if (out[i] != i * mul + 11 + bias) {
            tap_diag("out[%u] = %u, want %u", i, out[i], i * mul + 11 + bias);
            ok = 0;
        }
    }
    if (b)
        clReleaseMemObject(b);
    clReleaseKernel(k);
    return ok;
}

static const char *origin_name(int o)
{
    switch (o) {
    case GS_PROG_MEMORY: return "MEMORY";
    case GS_PROG_DISK_HIT: return "DISK_HIT";
    case GS_PROG_BUILT: return "BUILT";
    case GS_PROG_REBUILT: return "REBUILT";
    default: return "?";
    }
}

/* Forget the in-memory copy and get the program again: the disk cache path. */
static int get(gs_dev *dev, gs_pcache *pc, const char *label, const char *src, const char *opts,
               cl_program *p, gs_prog_stats *st, gs_err *err)
{
    gs_prog_forget(dev);
    gs_err_clear(err);
    int rc = gs_prog_get_text(dev, pc, label, src, opts, p, st, err);
    if (rc)
        tap_diag("gs_prog_get_text(%s): %s: %s", label, gs_strerror(rc), err->msg);
    else
        tap_diag("%s: %s, %.1f ms, stored=%d", label, origin_name(st->origin), st->ms, st->stored);
    return rc;
}

/* ---- scenarios ---- */

static void test_paths(const char *base)
{
    char buf[4096], want[4096];
    setenv("GSORTD_CACHE_DIR", "/x/cache", 1);
    setenv("GSORTD_DATA_DIR", "/x/data", 1);
    tap_ok(gs_paths_cache_dir(buf, sizeof buf) == 0 && strcmp(buf, "/x/cache") == 0,
           "paths: GSORTD_CACHE_DIR wins (%s)", buf);
    tap_ok(gs_paths_data_dir(buf, sizeof buf) == 0 && strcmp(buf, "/x/data") == 0,
           "paths: GSORTD_DATA_DIR wins (%s)", buf);
    tap_ok(gs_paths_default(GS_PATHS_CACHE, 1, buf, sizeof buf) == 0 && strcmp(buf, "/x/cache") == 0,
           "paths: GSORTD_CACHE_DIR wins for root too");
    tap_ok(gs_paths_cache_dir(buf, 5) == GS_ETOOBIG, "paths: too small a buffer is GS_ETOOBIG");
    unsetenv("GSORTD_CACHE_DIR");
    setenv("GSORTD_DATA_DIR", "", 1);   /* empty counts as unset */
    setenv("XDG_CACHE_HOME", "/xdg/c", 1);
    setenv("XDG_DATA_HOME", "/xdg/d", 1);
    setenv("HOME", "/home/u", 1);
    tap_ok(gs_paths_default(GS_PATHS_CACHE, 1, buf, sizeof buf) == 0 &&
           strcmp(buf, "/var/cache/gsortd") == 0, "paths: root cache is /var/cache/gsortd");
    tap_ok(gs_paths_default(GS_PATHS_DATA, 1, buf, sizeof buf) == 0 &&
           strcmp(buf, "/var/lib/gsortd") == 0, "paths: root data is /var/lib/gsortd");
    tap_ok(gs_paths_default(GS_PATHS_CACHE, 0, buf, sizeof buf) == 0 &&
           strcmp(buf, "/xdg/c/gsortd") == 0, "paths: user cache is $XDG_CACHE_HOME/gsortd");
    tap_ok(gs_paths_default(GS_PATHS_DATA, 0, buf, sizeof buf) == 0 &&
           strcmp(buf, "/xdg/d/gsortd") == 0, "paths: user data is $XDG_DATA_HOME/gsortd");
    setenv("XDG_CACHE_HOME", "relative", 1);   /* XDG: relative values are ignored */
    unsetenv("XDG_DATA_HOME");
    tap_ok(gs_paths_default(GS_PATHS_CACHE, 0, buf, sizeof buf) == 0 &&
           strcmp(buf, "/home/u/.cache/gsortd") == 0, "paths: user cache falls back to ~/.cache/gsortd");
    tap_ok(gs_paths_default(GS_PATHS_DATA, 0, buf, sizeof buf) == 0 &&
           strcmp(buf, "/home/u/.local/share/gsortd") == 0,
           "paths: user data falls back to ~/.local/share/gsortd");
    snprintf(want, sizeof want, "%s", geteuid() == 0 ? "/var/cache/gsortd" : "/home/u/.cache/gsortd");
    tap_ok(gs_paths_cache_dir(buf, sizeof buf) == 0 && strcmp(buf, want) == 0,
           "paths: gs_paths_cache_dir follows the euid (%s)", buf);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("GSORTD_DATA_DIR");

    gs_err err;
    char deep[4096], file[4096], under[4096];
    pathf(deep, sizeof deep, "%s/mk/a/b/c/", base);
    tap_ok(gs_paths_mkdir_p(deep, 0755, &err) == 0 && is_dir(deep), "mkdir_p creates parents");
    tap_ok(gs_paths_mkdir_p(deep, 0755, &err) == 0, "mkdir_p on an existing directory succeeds");
    pathf(file, sizeof file, "%s/mk/plainfile", base);
    write_file(file, (const unsigned char *)"x", 1);
    pathf(under, sizeof under, "%s/sub/dir", file);
    gs_err_clear(&err);
    int rc = gs_paths_mkdir_p(under, 0755, &err);
    tap_ok(rc == GS_EIO && strstr(err.msg, file) != NULL,
           "mkdir_p below a regular file fails naming it (%s)", err.msg);
    tap_ok(gs_paths_mkdir_p(file, 0755, &err) == GS_EIO, "mkdir_p of an existing file fails");
}

static void test_hit_and_miss(gs_dev *dev, const char *base)
{
    char dir[4096], one[4096];
    gs_err err;
    gs_pcache *pc = NULL;
    gs_prog_stats st;
    cl_program p;
    int other;

    /* Missing, with missing parents: created. Default location via NULL dir. */
    pathf(dir, sizeof dir, "%s/default/cache/gsortd", base);
    setenv("GSORTD_CACHE_DIR", dir, 1);
    tap_ok(gs_pcache_open(&pc, NULL, &err) == 0 && pc, "open with NULL dir");
    unsetenv("GSORTD_CACHE_DIR");
    tap_ok(strcmp(gs_pcache_dir(pc), dir) == 0, "NULL dir uses gs_paths_cache_dir (%s)", gs_pcache_dir(pc));
    struct stat dst;
    tap_ok(stat(dir, &dst) == 0 && S_ISDIR(dst.st_mode), "missing cache dir (and parents) created");
    tap_ok((dst.st_mode & 07777) == 0755, "cache dir created 0755 (umask 0 here): %o",
           (unsigned)(dst.st_mode & 07777));
    tap_ok(gs_pcache_enabled(pc), "cache enabled");

    log_reset();
    int rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_BUILT && st.stored == 1, "first get: BUILT and stored");
    tap_ok(count_entries(dir, one, sizeof one, &other) == 1, "one entry file exists");
    tap_ok(rc == 0 && run_check(dev, p, 3, 7, NULL), "built program computes correctly");

    gs_err_clear(&err);
    rc = gs_prog_get_text(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_MEMORY, "same get without forget: MEMORY");

    rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_DISK_HIT && st.stored == 0, "after forget: DISK_HIT");
    double first = 0, second = 0;
    tap_ok(rc == 0 && run_check(dev, p, 3, 7, &first), "program loaded from the cache computes correctly");
    run_check(dev, p, 3, 7, &second);
    tap_diag("first launch after disk load %.3f ms, second %.3f ms", first, second);
    tap_ok(g_warns == 0, "no warnings on the build/hit path (%d)", g_warns);

    rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=9", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_BUILT && st.stored == 1, "other options: a miss, BUILT");
    tap_ok(count_entries(dir, NULL, 0, NULL) == 2, "other options: a second entry");
    tap_ok(rc == 0 && run_check(dev, p, 3, 9, NULL), "other options: computes with the new bias");

    rc = get(dev, pc, "B", SRC_B, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_BUILT && st.stored == 1, "other source: a miss, BUILT");
    tap_ok(count_entries(dir, NULL, 0, NULL) == 3, "other source: a third entry");
    tap_ok(rc == 0 && run_check(dev, p, 5, 7, NULL), "other source: computes the new formula");

    rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=9", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_DISK_HIT, "earlier entries still hit");

    /* Entry permissions: 0644 at most even with umask 0, so never world-writable. */
    DIR *d = opendir(dir);
    int nchk = 0, bad = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (!ends_with(de->d_name, ".bin"))
            continue;
        char path[4200];
        struct stat est;
        pathf(path, sizeof path, "%s/%s", dir, de->d_name);
        nchk++;
        if (stat(path, &est) != 0 || (est.st_mode & 07777 & ~0644u) != 0 || !S_ISREG(est.st_mode)) {
            tap_diag("%s: mode %o", path, (unsigned)(est.st_mode & 07777));
            bad++;
        }
    }
    if (d)
        closedir(d);
    tap_ok(nchk == 3 && bad == 0, "entry files are mode 0644 at most, not world-writable (%d checked)", nchk);
    count_entries(dir, NULL, 0, &other);
    tap_ok(other == 0, "no temp files left behind (%d)", other);

    /* A failed build reports the compiler log and stores nothing. */
    rc = get(dev, pc, "bad", SRC_BAD, "", &p, &st, &err);
    tap_ok(rc == GS_EBUILD, "syntax error: GS_EBUILD (%s)", gs_strerror(rc));
    tap_ok(strstr(err.msg, "gs_pc_undeclared_ident") != NULL,
           "error message carries the compiler log naming the undeclared identifier");
    tap_ok(count_entries(dir, NULL, 0, NULL) == 3, "failed build stores no entry");
    gs_pcache_close(pc);
}

/* Apply `damage` to the single entry of a fresh cache, then expect REBUILT,
 * a warning containing `why`, a replaced valid entry, and a DISK_HIT after. */
enum damage { TRUNC_HALF, TRUNC_ZERO, FLIP_PAYLOAD, FLIP_MAGIC, JUNK_BINARY };

static void test_damage(gs_dev *dev, const char *base, enum damage dmg, const char *name, const char *why)
{
    char dir[4096], entry[4200];
    gs_err err;
    gs_pcache *pc = NULL;
    gs_prog_stats st;
    cl_program p;
    pathf(dir, sizeof dir, "%s/damage-%d", base, (int)dmg);
    gs_pcache_open(&pc, dir, &err);
    int rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    if (rc || count_entries(dir, entry, sizeof entry, NULL) != 1) {
        tap_ok(0, "%s: setup (build and store)", name);
        gs_pcache_close(pc);
        return;
    }
    long long size = file_size(entry);
    unsigned char *buf = NULL;
    size_t len = 0;
    if (read_file(entry, &buf, &len) != 0) {
        tap_ok(0, "%s: reading the entry", name);
        free(buf);
        gs_pcache_close(pc);
        return;
    }
    switch (dmg) {
    case TRUNC_HALF:
        rc = truncate(entry, size / 2);
        break;
    case TRUNC_ZERO:
        rc = truncate(entry, 0);
        break;
    case FLIP_PAYLOAD:
        buf[len - 10] ^= 0x01;
        rc = write_file(entry, buf, len);
        break;
    case FLIP_MAGIC:
        buf[0] ^= 0x20;
        rc = write_file(entry, buf, len);
        break;
    case JUNK_BINARY: {
        /* A well-formed entry (right length and checksum) whose payload the
         * driver cannot use. Layout: magic 8, version 4, reserved 4, key 32,
         * length 8, payload SHA-256 32, payload. */
        const size_t hdr = 8 + 4 + 4 + 32 + 8 + 32;
        for (size_t i = hdr; i < len; i++)
            buf[i] = (unsigned char)(i * 131u + 7u);
        gs_sha256(buf + hdr, len - hdr, buf + hdr - 32);
        rc = write_file(entry, buf, len);
        break;
    }
    }
    free(buf);
    if (rc != 0) {
        tap_ok(0, "%s: damaging the entry", name);
        gs_pcache_close(pc);
        return;
    }
    log_reset();
    rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_REBUILT && st.stored == 1, "%s: REBUILT and stored", name);
    tap_ok(rc == 0 && run_check(dev, p, 3, 7, NULL), "%s: rebuilt program computes correctly", name);
    tap_ok(strstr(g_warn_text, why) != NULL && strstr(g_warn_text, entry) != NULL,
           "%s: warning names the entry and says '%s'", name, why);
    tap_ok(count_entries(dir, NULL, 0, NULL) == 1 && file_size(entry) == size,
           "%s: entry replaced by a whole one (%lld bytes)", name, file_size(entry));
    rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_DISK_HIT, "%s: next get is a DISK_HIT", name);
    gs_pcache_close(pc);
}

/* An unusable cache: every get builds, nothing is stored, one warning. */
static void expect_disabled(gs_dev *dev, gs_pcache *pc, const char *name, const char *dir,
                            const char *count_dir)
{
    gs_err err;
    gs_prog_stats st;
    cl_program p;
    int builds = 0, stored = 0, runs = 0;
    log_reset();
    for (int i = 0; i < 3; i++) {
        int rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
        builds += rc == 0 && st.origin == GS_PROG_BUILT;
        stored += st.stored;
        runs += rc == 0 && run_check(dev, p, 3, 7, NULL);
    }
    tap_ok(builds == 3 && runs == 3, "%s: every get builds from source and works (%d/3)", name, builds);
    tap_ok(stored == 0, "%s: nothing stored", name);
    tap_ok(g_warns == 1, "%s: exactly one warning (%d)", name, g_warns);
    tap_ok(strstr(g_warn_text, dir) != NULL, "%s: the warning names the directory", name);
    tap_ok(!gs_pcache_enabled(pc), "%s: gs_pcache_enabled is 0", name);
    if (count_dir)
        tap_ok(count_entries(count_dir, NULL, 0, NULL) <= 0, "%s: no entry written", name);
}

struct thr_arg { gs_pcache *pc; gs_dev *dev; int rc[50]; };

static void *hammer(void *ap)
{
    struct thr_arg *a = ap;
    cl_program p;
    gs_err err;
    for (int i = 0; i < 50; i++)
        a->rc[i] = gs_pcache_load(a->pc, a->dev, SRC_A, strlen(SRC_A), "", &p, &err);
    return NULL;
}

static void test_unusable(gs_dev *dev, const char *base)
{
    char file[4096], dir[4096];
    gs_err err;
    gs_pcache *pc = NULL;

    /* Below a regular file: mkdir fails with ENOTDIR even for root. */
    pathf(file, sizeof file, "%s/notadir", base);
    write_file(file, (const unsigned char *)"x", 1);
    pathf(dir, sizeof dir, "%s/cache/gsortd", file);
    log_reset();
    tap_ok(gs_pcache_open(&pc, dir, &err) == 0 && pc, "uncreatable dir: open still succeeds");
    tap_ok(g_warns == 0, "uncreatable dir: no warning before first use");
    expect_disabled(dev, pc, "uncreatable dir", dir, NULL);

    /* Many threads hitting a disabled cache: still one warning. */
    gs_pcache_close(pc);
    gs_pcache_open(&pc, dir, &err);
    log_reset();
    struct thr_arg args[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        args[i].pc = pc;
        args[i].dev = dev;
        pthread_create(&th[i], NULL, hammer, &args[i]);
    }
    int notfound = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        for (int j = 0; j < 50; j++)
            notfound += args[i].rc[j] == GS_ENOTFOUND;
    }
    tap_ok(notfound == 400 && g_warns == 1,
           "8 threads x 50 loads on a disabled cache: all GS_ENOTFOUND, one warning (%d)", g_warns);
    gs_pcache_close(pc);

    /* Read-only directory (chmod 0555). Root writes through mode bits, so
     * there the cache is in fact usable and must be used. */
    pathf(dir, sizeof dir, "%s/readonly", base);
    mkdir(dir, 0755);
    chmod(dir, 0555);
    log_reset();
    gs_pcache_open(&pc, dir, &err);
    if (geteuid() != 0) {
        expect_disabled(dev, pc, "read-only dir", dir, dir);
    } else {
        tap_diag("running as root: a 0555 directory is writable, so expect it to be used");
        gs_prog_stats st;
        cl_program p;
        int rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
        tap_ok(rc == 0 && st.origin == GS_PROG_BUILT && st.stored == 1, "0555 dir as root: BUILT and stored");
        rc = get(dev, pc, "A", SRC_A, "-DGS_PC_BIAS=7", &p, &st, &err);
        tap_ok(rc == 0 && st.origin == GS_PROG_DISK_HIT, "0555 dir as root: DISK_HIT");
        tap_ok(g_warns == 0 && gs_pcache_enabled(pc), "0555 dir as root: no warning, still enabled");
    }
    gs_pcache_close(pc);
    chmod(dir, 0755);

    /* Usable at open, gone at store time (replaced by a file): the store
     * failure disables the cache with the same single warning. */
    pathf(dir, sizeof dir, "%s/vanishing", base);
    log_reset();
    gs_pcache_open(&pc, dir, &err);
    tap_ok(gs_pcache_enabled(pc), "vanishing dir: enabled at open");
    rmdir(dir);
    write_file(dir, (const unsigned char *)"x", 1);
    expect_disabled(dev, pc, "dir replaced by a file after open", dir, NULL);
    gs_pcache_close(pc);
}

int main(void)
{
    char base[] = "/tmp/gs_test_pcache.XXXXXX";
    if (!mkdtemp(base))
        tap_bail("mkdtemp: %s", strerror(errno));
    /* umask 0 so the modes checked below are the ones the code chose, not
     * the umask's. PoCL then gets a private cache directory inside the temp
     * tree (set before the platform loads), so the files it writes under
     * umask 0 never land in the shared ~/.cache/pocl. */
    umask(0);
    char pocl[256];
    pathf(pocl, sizeof pocl, "%s/pocl-cache", base);
    mkdir(pocl, 0700);
    setenv("POCL_CACHE_DIR", pocl, 1);

    gs_err err;
    gs_dev *devs = NULL;
    size_t ndev = 0;
    if (gs_dev_probe(&devs, &ndev, &err) != 0)
        tap_bail("gs_dev_probe: %s", err.msg);
    if (ndev == 0)
        tap_bail("no OpenCL device (CI provides PoCL)");
    gs_dev *dev = &devs[0];
    if (gs_dev_open(dev, &err) != 0)
        tap_bail("gs_dev_open: %s", err.msg);
    tap_diag("device: %s / %s / %s", dev->info.platform, dev->info.name, dev->info.driver);

    gs_log_set_sink(sink, NULL);

    test_paths(base);
    test_hit_and_miss(dev, base);
    test_damage(dev, base, TRUNC_HALF, "truncated entry", "truncated");
    test_damage(dev, base, TRUNC_ZERO, "empty entry", "truncated");
    test_damage(dev, base, FLIP_PAYLOAD, "byte flipped in payload", "checksum mismatch");
    test_damage(dev, base, FLIP_MAGIC, "byte flipped in magic", "bad magic");
    test_damage(dev, base, JUNK_BINARY, "checksummed junk binary", "rejected by the driver");
    test_unusable(dev, base);

    gs_log_set_sink(NULL, NULL);
    gs_dev_free_list(devs, ndev);
    nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return tap_done();
}
