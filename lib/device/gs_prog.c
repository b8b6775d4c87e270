/* Program building: concatenates kernel sources, consults the device's
 * in-memory list and then the on-disk binary cache, and compiles from source
 * as the last resort. A failed build reports the compiler's log. */
#include "config.h"
#include "gs_prog.h"
#include "gs_pcache.h"
#include "gs_kern.h"
#include "gs_log.h"
#include "gs_sha256.h"
#include "gs_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gs_prog_entry {
    struct gs_prog_entry *next;
    char *key;          /* label '\n' source hash '\n' options */
    cl_program prog;    /* NULL while a thread builds it */
};

/* The source text is part of the key: the same label may carry other text
 * (a --kernel-dir edit, a test's variants). */
static char *make_key(const char *label, const char *text, size_t len, const char *options)
{
    uint8_t d[GS_SHA256_LEN];
    char hex[GS_SHA256_HEX_LEN];
    gs_sha256(text, len, d);
    gs_sha256_hex(d, hex);
    size_t a = strlen(label), b = strlen(options), h = strlen(hex);
    char *k = malloc(a + h + b + 3);
    if (!k)
        return NULL;
    memcpy(k, label, a);
    k[a] = '\n';
    memcpy(k + a + 1, hex, h);
    k[a + 1 + h] = '\n';
    memcpy(k + a + h + 2, options, b + 1);
    return k;
}

/* Compile `src` for the device; on failure put the build log in err. */
static int build_source(gs_dev *dev, const char *label, const char *src, size_t len,
                        const char *options, cl_program *out, gs_err *err)
{
    cl_int rc;
    const char *srcs[] = { src };
    cl_program p = clCreateProgramWithSource(dev->ctx, 1, srcs, &len, &rc);
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, "clCreateProgramWithSource", rc, "%s", label);
    rc = clBuildProgram(p, 1, &dev->id, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        size_t loglen = 0;
        char *log = NULL;
        if (clGetProgramBuildInfo(p, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen) == CL_SUCCESS &&
            loglen > 0 && (log = malloc(loglen + 1)) != NULL) {
            if (clGetProgramBuildInfo(p, dev->id, CL_PROGRAM_BUILD_LOG, loglen, log, NULL) != CL_SUCCESS)
                log[0] = '\0';
            log[loglen] = '\0';
        }
        gs_err_set(err, GS_EBUILD, "clBuildProgram: %s (%d): building %s for %s with options '%s'; compiler log:\n%s",
                   gs_cl_errname(rc), (int)rc, label, dev->info.name, options,
                   log && log[0] ? log : "(empty)");
        if (err)
            err->cl_code = rc;
        free(log);
        clReleaseProgram(p);
        return GS_EBUILD;
    }
    *out = p;
    return 0;
}

static int get_text(gs_dev *dev, gs_pcache *pc, const char *label, const char *text,
                    const char *options, cl_program *out, gs_prog_stats *st, gs_err *err)
{
    gs_prog_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!options)
        options = "";
    int rc = gs_dev_open(dev, err);
    if (rc)
        return rc;
    size_t len = strlen(text);
    char *key = make_key(label, text, len, options);
    if (!key)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    double t0 = gs_now_ms();

    /* Built without the lock, so that several programs build at once (the
     * tuner's warm-up, gs_prebuild.c); an entry without a program marks one
     * being built, and a second thread asking for it waits for that build
     * instead of doing it again. */
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e;
    for (;;) {
        for (e = dev->progs; e && strcmp(e->key, key) != 0; e = e->next)
            ;
        if (!e)
            break;
        if (e->prog) {
            *out = e->prog;
            pthread_mutex_unlock(&dev->lock);
            free(key);
            st->origin = GS_PROG_MEMORY;
            st->ms = gs_now_ms() - t0;
            return 0;
        }
        pthread_cond_wait(&dev->progs_cv, &dev->lock);   /* being built; a failed one goes */
    }
    e = malloc(sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&dev->lock);
        free(key);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    e->key = key;
    e->prog = NULL;
    e->next = dev->progs;
    dev->progs = e;
    dev->progs_release = gs_prog_forget;   /* gs_dev_close releases the list */
    pthread_mutex_unlock(&dev->lock);
    cl_program p = NULL;
    gs_err cerr;
    gs_err_clear(&cerr);
    rc = pc ? gs_pcache_load(pc, dev, text, len, options, &p, &cerr) : GS_ENOTFOUND;
    if (rc == 0) {
        st->origin = GS_PROG_DISK_HIT;
    } else {
        if (rc != GS_ENOTFOUND)
            GS_WARN("program cache: %s; rebuilding %s", cerr.msg, label);
        st->origin = rc == GS_ECORRUPT ? GS_PROG_REBUILT : GS_PROG_BUILT;
        rc = build_source(dev, label, text, len, options, &p, err);
        if (rc == 0) {
            st->ms = gs_now_ms() - t0;  /* the build alone, not the cache write */
            if (pc && gs_pcache_store(pc, dev, text, len, options, p, &cerr) == 0)
                st->stored = 1;
        }
    }
    pthread_mutex_lock(&dev->lock);
    if (rc == 0) {
        e->prog = p;
    } else {                        /* unlinked: a waiter then builds (and fails) itself */
        struct gs_prog_entry **pp = &dev->progs;
        while (*pp != e)
            pp = &(*pp)->next;
        *pp = e->next;
        free(e->key);
        free(e);
    }
    pthread_cond_broadcast(&dev->progs_cv);
    pthread_mutex_unlock(&dev->lock);
    if (rc)
        return rc;
    *out = p;
    if (st->origin == GS_PROG_DISK_HIT)
        st->ms = gs_now_ms() - t0;
    return 0;
}

int gs_prog_get_text(gs_dev *dev, gs_pcache *pc, const char *label, const char *text,
                     const char *options, cl_program *out, gs_prog_stats *st, gs_err *err)
{
    /* development options (gs_kern_set_opts) go after the caller's */
    const char *extra = gs_kern_get_opts();
    if (!extra)
        return get_text(dev, pc, label, text, options, out, st, err);
    size_t a = options ? strlen(options) : 0, b = strlen(extra);
    char *all = malloc(a + b + 2);
    if (!all)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    memcpy(all, options ? options : "", a);
    all[a] = ' ';
    memcpy(all + a + 1, extra, b + 1);
    int rc = get_text(dev, pc, label, text, all, out, st, err);
    free(all);
    return rc;
}

int gs_prog_get(gs_dev *dev, gs_pcache *pc, const char *const *sources,
                const char *options, cl_program *out, gs_prog_stats *st, gs_err *err)
{
    char label[512] = "";
    size_t total = 0, n = 0;
    char *texts[16];
    size_t lens[16];
    int rc = 0;
    for (; sources[n]; n++) {
        if (n == 16)
            return gs_err_set(err, GS_EINVAL, "too many kernel sources");
        rc = gs_kern_load(sources[n], &texts[n], &lens[n], err);
        if (rc) {
            while (n--)
                free(texts[n]);
            return rc;
        }
        total += lens[n] + 1;
        size_t ll = strlen(label);
        snprintf(label + ll, sizeof label - ll, "%s%s.cl", n ? "+" : "", sources[n]);
    }
    char *all = malloc(total + 1);
    if (!all) {
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
    } else {
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(all + at, texts[i], lens[i]);
            at += lens[i];
            all[at++] = '\n';
        }
        all[at] = '\0';
        rc = gs_prog_get_text(dev, pc, label, all, options, out, st, err);
        free(all);
    }
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    return rc;
}

void gs_prog_forget(gs_dev *dev)
{
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e = dev->progs;
    dev->progs = NULL;
    pthread_mutex_unlock(&dev->lock);
    while (e) {
        struct gs_prog_entry *nx = e->next;
        if (e->prog)
            clReleaseProgram(e->prog);
        free(e->key);
        free(e);
        e = nx;
    }
}
