/* The on-disk program-binary cache: one file per (platform, device, driver,
 * source, options) holding the driver's program binary behind a header with
 * a magic, a format version, the key, the payload length and the payload's
 * SHA-256. Entries are written to a temp file, fsynced and renamed into
 * place, so a reader sees either nothing or a whole entry even across
 * kill -9; anything that fails a check on load is removed and reported as
 * GS_ECORRUPT so the caller rebuilds and replaces it. A directory that
 * cannot be used disables the cache with one warning: building from source
 * is always a correct fallback, so the cache never makes a request fail. */
#include "config.h"
#include "gs_pcache.h"
#include "gs_paths.h"
#include "gs_sha256.h"
#include "gs_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PC_MAGIC "GSPCBIN\n"
#define PC_MAGIC_LEN 8
#define PC_VERSION 1u
/* magic, u32 version, u32 reserved, key, u64 payload length, payload SHA-256 */
#define PC_HDR_LEN (PC_MAGIC_LEN + 4 + 4 + GS_SHA256_LEN + 8 + GS_SHA256_LEN)
/* Program binaries are a few MB at most; anything bigger is not ours. */
#define PC_MAX_PAYLOAD ((uint64_t)256 << 20)
#define PC_TMP_PREFIX ".gspc-tmp."
/* Temp files older than this are leftovers of a killed writer. */
#define PC_STALE_TMP_S 3600
/* Bumping this changes every key, so entries of an older layout are never looked up. */
#define PC_KEY_TAG "gsortd program cache key v1"

struct gs_pcache {
    char *dir;              /* "" when no default location could be found */
    pthread_mutex_t lock;   /* guards why, warned and the enabled transition */
    atomic_int enabled;     /* 1 until the directory proves unusable */
    int warned;             /* the one warning has been logged */
    char why[GS_ERR_MSG_MAX];
};

/* ---- small helpers ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Length-prefixed so ("ab","c") and ("a","bc") hash differently. */
static void hash_field(gs_sha256_ctx *c, const void *data, size_t len)
{
    uint8_t n[8];
    put_u64(n, (uint64_t)len);
    gs_sha256_update(c, n, sizeof n);
    gs_sha256_update(c, data, len);
}

static void make_key(const gs_dev *dev, const char *src, size_t srclen, const char *options,
                     uint8_t key[GS_SHA256_LEN])
{
    uint8_t srchash[GS_SHA256_LEN];
    gs_sha256(src, srclen, srchash);
    gs_sha256_ctx c;
    gs_sha256_init(&c);
    hash_field(&c, PC_KEY_TAG, strlen(PC_KEY_TAG));
    hash_field(&c, dev->info.platform, strlen(dev->info.platform));
    hash_field(&c, dev->info.name, strlen(dev->info.name));
    hash_field(&c, dev->info.driver, strlen(dev->info.driver));
    hash_field(&c, srchash, sizeof srchash);
    hash_field(&c, options, strlen(options));
    gs_sha256_final(&c, key);
}

static int entry_path(const gs_pcache *pc, const uint8_t key[GS_SHA256_LEN], char *buf,
                      size_t len, gs_err *err)
{
    char hex[GS_SHA256_HEX_LEN];
    int n = snprintf(buf, len, "%s/%s.bin", pc->dir, gs_sha256_hex(key, hex));
    if (n < 0 || (size_t)n >= len)
        return gs_err_set(err, GS_ETOOBIG, "program cache path too long under %s", pc->dir);
    return 0;
}

/* ---- the disabled state and its single warning ---- */

static void pc_disable(gs_pcache *pc, const char *why)
{
    pthread_mutex_lock(&pc->lock);
    if (atomic_load(&pc->enabled)) {
        snprintf(pc->why, sizeof pc->why, "%s", why);
        atomic_store(&pc->enabled, 0);
    }
    pthread_mutex_unlock(&pc->lock);
}

/* Returns 1 if the cache is usable; otherwise logs the warning the first time. */
static int pc_usable(gs_pcache *pc)
{
    if (atomic_load(&pc->enabled))
        return 1;
    pthread_mutex_lock(&pc->lock);
    if (!pc->warned) {
        pc->warned = 1;
        GS_WARN("program cache disabled: directory '%s' is unusable: %s; "
                "programs will be built from source every time", pc->dir, pc->why);
    }
    pthread_mutex_unlock(&pc->lock);
    return 0;
}

/* ---- opening: make sure the directory exists and takes new files ---- */

/* Create (and remove) a probe file: the only reliable writability test,
 * since access(W_OK) is answered from mode bits and says yes to root. */
static int probe_writable(const char *dir, char *why, size_t whylen)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/" PC_TMP_PREFIX "probe.XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path) {
        snprintf(why, whylen, "path too long");
        return -1;
    }
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "cannot create files in it: %s", strerror(errno));
        return -1;
    }
    close(fd);
    unlink(path);
    return 0;
}

/* Remove temp files a killed writer left behind (old enough that no live
 * writer can still own them). Best effort: errors are ignored. */
static void remove_stale_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, PC_TMP_PREFIX, strlen(PC_TMP_PREFIX)) != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && now - st.st_mtime > PC_STALE_TMP_S)
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

int gs_pcache_open(gs_pcache **out, const char *dir, gs_err *err)
{
    *out = NULL;
    gs_pcache *pc = calloc(1, sizeof *pc);
    if (!pc)
        return gs_err_set(err, GS_ENOMEM, "program cache: out of memory");
    char def[PATH_MAX];
    int drc = 0;
    if (!dir) {
        drc = gs_paths_cache_dir(def, sizeof def);
        dir = drc ? "" : def;
    }
    pc->dir = strdup(dir);
    if (!pc->dir || pthread_mutex_init(&pc->lock, NULL) != 0) {
        free(pc->dir);
        free(pc);
        return gs_err_set(err, GS_ENOMEM, "program cache: out of memory");
    }
    atomic_init(&pc->enabled, 1);

    char why[GS_ERR_MSG_MAX];
    gs_err merr;
    gs_err_clear(&merr);
    if (drc == GS_ENOTFOUND) {
        pc_disable(pc, "no default location (set GSORTD_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    } else if (drc) {
        pc_disable(pc, "default location too long");
    } else if (!pc->dir[0]) {
        pc_disable(pc, "empty path");
    } else if (strlen(pc->dir) + 2 + 2 * GS_SHA256_LEN + sizeof ".bin" > PATH_MAX) {
        pc_disable(pc, "path too long");
    } else if (gs_paths_mkdir_p(pc->dir, 0755, &merr) != 0) {
        if (merr.code == GS_ENOMEM) {
            gs_pcache_close(pc);
            return gs_err_set(err, GS_ENOMEM, "program cache: out of memory");
        }
        pc_disable(pc, merr.msg);
    } else if (probe_writable(pc->dir, why, sizeof why) != 0) {
        pc_disable(pc, why);
    } else {
        remove_stale_tmp(pc->dir);
    }
    *out = pc;
    return 0;
}

void gs_pcache_close(gs_pcache *pc)
{
    if (!pc)
        return;
    pthread_mutex_destroy(&pc->lock);
    free(pc->dir);
    free(pc);
}

const char *gs_pcache_dir(const gs_pcache *pc)
{
    return pc ? pc->dir : "";
}

int gs_pcache_enabled(const gs_pcache *pc)
{
    /* atomic_load on a const object is fine in practice but not in C11's
     * prototype; the cast only drops const for the read. */
    return pc ? atomic_load((atomic_int *)&pc->enabled) : 0;
}

/* ---- load ---- */

/* Read exactly len bytes (or fewer at end of file); returns bytes read or -1. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

__attribute__((format(printf, 3, 4)))
static int corrupt(gs_err *err, const char *path, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* Remove it so a rebuild can store a good one even if the rename below fails. */
    unlink(path);
    return gs_err_set(err, GS_ECORRUPT, "cache entry %s: %s; entry removed", path, why);
}

/* The key and entry file of (device, source, options): GS_ENOTFOUND when
 * the cache is disabled. */
static int entry_for(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen,
                     const char *options, uint8_t key[GS_SHA256_LEN], char path[PATH_MAX],
                     gs_err *err)
{
    if (!pc || !pc_usable(pc))
        return gs_err_set(err, GS_ENOTFOUND, "program cache disabled");
    make_key(dev, src, srclen, options ? options : "", key);
    return entry_path(pc, key, path, PATH_MAX, err);
}

int gs_pcache_load(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen,
                   const char *options, cl_program *out, gs_err *err)
{
    uint8_t key[GS_SHA256_LEN];
    char path[PATH_MAX];
    int rc = entry_for(pc, dev, src, srclen, options, key, path, err);
    if (rc)
        return rc;

    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return gs_err_set(err, GS_ENOTFOUND, "no cache entry %s", path);
        if (e == ELOOP)
            return corrupt(err, path, "is a symbolic link");
        if (e == ENOTDIR) {
            /* The directory itself went away (replaced by a file): same as unusable at open. */
            char why[512];
            snprintf(why, sizeof why, "opening an entry: %s", strerror(e));
            pc_disable(pc, why);
            pc_usable(pc);
            return gs_err_set(err, GS_ENOTFOUND, "program cache disabled");
        }
        if (e == EACCES || e == EPERM) {
            /* Unreadable entry: a miss; the store that follows renames over it. */
            GS_DEBUG("program cache: cannot read %s: %s", path, strerror(e));
            return gs_err_set(err, GS_ENOTFOUND, "cache entry %s: %s", path, strerror(e));
        }
        return gs_err_set(err, GS_EIO, "cache entry %s: open: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gs_err_set(err, GS_EIO, "cache entry %s: stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return corrupt(err, path, "not a regular file");
    }
    /* Sizes come from stat, never from the header, until they agree. */
    if ((uint64_t)st.st_size < PC_HDR_LEN) {
        close(fd);
        return corrupt(err, path, "truncated: %lld bytes, shorter than the %d-byte header",
                       (long long)st.st_size, PC_HDR_LEN);
    }
    if ((uint64_t)st.st_size - PC_HDR_LEN > PC_MAX_PAYLOAD) {
        close(fd);
        return corrupt(err, path, "absurd size: %lld bytes", (long long)st.st_size);
    }
    size_t fsize = (size_t)st.st_size;
    uint8_t *buf = malloc(fsize);
    if (!buf) {
        close(fd);
        return gs_err_set(err, GS_ENOMEM, "cache entry %s: out of memory", path);
    }
    ssize_t got = read_full(fd, buf, fsize);
    int e = errno;
    close(fd);
    if (got < 0) {
        free(buf);
        return gs_err_set(err, GS_EIO, "cache entry %s: read: %s", path, strerror(e));
    }
    if ((size_t)got != fsize) {
        free(buf);
        return corrupt(err, path, "truncated while reading (%zd of %zu bytes)", got, fsize);
    }

    const uint8_t *h = buf;
    uint64_t plen = get_u64(h + PC_MAGIC_LEN + 8 + GS_SHA256_LEN);
    const uint8_t *psum = h + PC_MAGIC_LEN + 8 + GS_SHA256_LEN + 8;
    const uint8_t *payload = buf + PC_HDR_LEN;
    uint64_t have = (uint64_t)fsize - PC_HDR_LEN;
    uint8_t sum[GS_SHA256_LEN];
    if (memcmp(h, PC_MAGIC, PC_MAGIC_LEN) != 0)
        rc = corrupt(err, path, "bad magic (not a gsortd program cache entry)");
    else if (get_u32(h + PC_MAGIC_LEN) != PC_VERSION)
        rc = corrupt(err, path, "format version %u, expected %u",
                     (unsigned)get_u32(h + PC_MAGIC_LEN), PC_VERSION);
    else if (memcmp(h + PC_MAGIC_LEN + 8, key, GS_SHA256_LEN) != 0)
        rc = corrupt(err, path, "key in the header does not match its name");
    else if (plen > have)
        rc = corrupt(err, path, "truncated: header says %llu payload bytes, file has %llu",
                     (unsigned long long)plen, (unsigned long long)have);
    else if (plen < have)
        rc = corrupt(err, path, "%llu bytes of trailing garbage after the payload",
                     (unsigned long long)(have - plen));
    else if (plen == 0)
        rc = corrupt(err, path, "empty payload");
    else if (gs_sha256(payload, (size_t)plen, sum), memcmp(sum, psum, GS_SHA256_LEN) != 0)
        rc = corrupt(err, path, "checksum mismatch (payload damaged)");
    if (rc) {
        free(buf);
        return rc;
    }

    size_t blen = (size_t)plen;
    const unsigned char *bins[] = { payload };
    cl_int bstatus = CL_SUCCESS, clrc;
    cl_program p = clCreateProgramWithBinary(dev->ctx, 1, &dev->id, &blen, bins, &bstatus, &clrc);
    free(buf);
    if (clrc == CL_SUCCESS && bstatus != CL_SUCCESS) {
        clReleaseProgram(p);
        clrc = bstatus;
    }
    if (clrc != CL_SUCCESS) {
        /* Running out of memory says nothing about the entry: keep it. */
        if (gs_cl_is_exhaustion(clrc))
            return gs_cl_fail(err, "clCreateProgramWithBinary", clrc, "cache entry %s", path);
        gs_err cerr;
        gs_cl_fail(&cerr, "clCreateProgramWithBinary", clrc, NULL);
        rc = corrupt(err, path, "binary rejected by the driver: %s", cerr.msg);
        if (err)
            err->cl_code = clrc;
        return rc;
    }
    clrc = clBuildProgram(p, 1, &dev->id, options, NULL, NULL);
    if (clrc != CL_SUCCESS) {
        clReleaseProgram(p);
        if (gs_cl_is_exhaustion(clrc))
            return gs_cl_fail(err, "clBuildProgram", clrc, "cache entry %s", path);
        gs_err cerr;
        gs_cl_fail(&cerr, "clBuildProgram", clrc, NULL);
        rc = corrupt(err, path, "binary rejected by the driver: %s", cerr.msg);
        if (err)
            err->cl_code = clrc;
        return rc;
    }
    GS_DEBUG("program cache: hit %s (%llu bytes)", path, (unsigned long long)plen);
    *out = p;
    return 0;
}

/* ---- store ---- */

static int write_full(int fd, const void *buf, size_t len)
{
    size_t put = 0;
    while (put < len) {
        ssize_t w = write(fd, (const char *)buf + put, len - put);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        put += (size_t)w;
    }
    return 0;
}

/* Temp file in the same directory (rename is atomic only within one
 * filesystem), fsync before rename so a crash cannot leave a renamed but
 * empty file, then fsync the directory so the rename itself is durable. */
static int write_atomic(gs_pcache *pc, const char *final, const void *buf, size_t len, gs_err *err)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s/" PC_TMP_PREFIX "XXXXXX", pc->dir);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return gs_err_set(err, GS_ETOOBIG, "program cache path too long under %s", pc->dir);
    const char *step = "mkstemp";
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        goto fail;
    /* mkstemp makes 0600; entries are readable by all, writable by the owner only,
     * whatever the umask. */
    step = "fchmod";
    if (fchmod(fd, 0644) != 0)
        goto fail;
    step = "write";
    if (write_full(fd, buf, len) != 0)
        goto fail;
    step = "fsync";
    if (fsync(fd) != 0)
        goto fail;
    step = "close";
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0)
        goto fail;
    step = "rename";
    if (rename(tmp, final) != 0)
        goto fail;
    int dfd = open(pc->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (strcmp(step, "mkstemp") != 0)
        unlink(tmp);
    return gs_err_set(err, GS_EIO, "%s in %s: %s", step, pc->dir, strerror(e));
}

/* The binary for dev: programs may span several devices, so find its slot. */
static int get_binary(gs_dev *dev, cl_program prog, size_t reserve, uint8_t **out,
                      size_t *outlen, gs_err *err)
{
    cl_uint ndev = 0;
    cl_int rc = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof ndev, &ndev, NULL);
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, "clGetProgramInfo", rc, "CL_PROGRAM_NUM_DEVICES");
    if (ndev == 0 || ndev > 4096)
        return gs_err_set(err, GS_EUNSUPPORTED, "program reports %u devices", (unsigned)ndev);
    cl_device_id *ids = calloc(ndev, sizeof *ids);
    size_t *sizes = calloc(ndev, sizeof *sizes);
    unsigned char **ptrs = calloc(ndev, sizeof *ptrs);
    uint8_t *buf = NULL;
    int ret = 0;
    if (!ids || !sizes || !ptrs) {
        ret = gs_err_set(err, GS_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = clGetProgramInfo(prog, CL_PROGRAM_DEVICES, ndev * sizeof *ids, ids, NULL)) != CL_SUCCESS) {
        ret = gs_cl_fail(err, "clGetProgramInfo", rc, "CL_PROGRAM_DEVICES");
        goto done;
    }
    cl_uint at = 0;
    while (at < ndev && ids[at] != dev->id)
        at++;
    if (at == ndev) {
        ret = gs_err_set(err, GS_EINVAL, "program was not built for %s", dev->info.name);
        goto done;
    }
    if ((rc = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ndev * sizeof *sizes, sizes, NULL)) != CL_SUCCESS) {
        ret = gs_cl_fail(err, "clGetProgramInfo", rc, "CL_PROGRAM_BINARY_SIZES");
        goto done;
    }
    if (sizes[at] == 0) {
        ret = gs_err_set(err, GS_EUNSUPPORTED, "driver returned no program binary for %s",
                         dev->info.name);
        goto done;
    }
    if ((uint64_t)sizes[at] > PC_MAX_PAYLOAD) {
        ret = gs_err_set(err, GS_ETOOBIG, "program binary of %zu bytes is over the cache limit",
                         sizes[at]);
        goto done;
    }
    buf = malloc(reserve + sizes[at]);
    if (!buf) {
        ret = gs_err_set(err, GS_ENOMEM, "out of memory");
        goto done;
    }
    ptrs[at] = buf + reserve;   /* NULL slots: the driver skips those devices */
    if ((rc = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, ndev * sizeof *ptrs, ptrs, NULL)) != CL_SUCCESS) {
        ret = gs_cl_fail(err, "clGetProgramInfo", rc, "CL_PROGRAM_BINARIES");
        free(buf);
        buf = NULL;
        goto done;
    }
    *out = buf;
    *outlen = sizes[at];
done:
    free(ids);
    free(sizes);
    free(ptrs);
    return ret;
}

int gs_pcache_store(gs_pcache *pc, gs_dev *dev, const char *src, size_t srclen,
                    const char *options, cl_program prog, gs_err *err)
{
    uint8_t key[GS_SHA256_LEN];
    char path[PATH_MAX];
    int rc = entry_for(pc, dev, src, srclen, options, key, path, err);
    if (rc)
        return rc;

    uint8_t *buf = NULL;
    size_t plen = 0;
    rc = get_binary(dev, prog, PC_HDR_LEN, &buf, &plen, err);
    if (rc) {
        /* Not the directory's fault: keep the cache on, this program is just not cached. */
        if (rc == GS_EUNSUPPORTED)
            GS_DEBUG("program cache: not storing: %s", err ? err->msg : "");
        else
            GS_WARN("program cache: not storing %s: %s", path, err ? err->msg : "");
        return rc;
    }
    uint8_t *h = buf;
    memcpy(h, PC_MAGIC, PC_MAGIC_LEN);
    put_u32(h + PC_MAGIC_LEN, PC_VERSION);
    put_u32(h + PC_MAGIC_LEN + 4, 0);
    memcpy(h + PC_MAGIC_LEN + 8, key, GS_SHA256_LEN);
    put_u64(h + PC_MAGIC_LEN + 8 + GS_SHA256_LEN, (uint64_t)plen);
    gs_sha256(buf + PC_HDR_LEN, plen, h + PC_MAGIC_LEN + 8 + GS_SHA256_LEN + 8);

    gs_err werr;
    gs_err_clear(&werr);
    rc = write_atomic(pc, path, buf, PC_HDR_LEN + plen, &werr);
    free(buf);
    if (rc) {
        /* The directory stopped taking files (removed, read-only, full):
         * stop trying, with the same single warning as at open. */
        pc_disable(pc, werr.msg);
        pc_usable(pc);
        return gs_err_set(err, rc, "%s", werr.msg);
    }
    GS_DEBUG("program cache: stored %s (%zu bytes)", path, plen);
    return 0;
}
