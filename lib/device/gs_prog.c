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

/* Kernels stay with their program between sorts (gs_prog_kernel_put). */
#define KEEP_KERNELS 32
struct gs_prog_kernel {
    char name[64];
    cl_kernel k;
};

struct gs_prog_entry {
    struct gs_prog_entry *next;
    char *key;          /* label '\n' source hash '\n' options, or label '\n=\n' options */
    cl_program prog;    /* NULL while a thread builds it */
    struct gs_prog_kernel idle[KEEP_KERNELS];   /* made, not in use */
    unsigned nidle;
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

/* The key of embedded sources: their text cannot change while the process
 * runs, so the label stands for it, and a request finds its program
 * without copying and hashing some 100 KB of source (0.3-0.5 ms, once a
 * large part of every small device sort). '=' is no hex digit: no text
 * key is equal. */
static char *embedded_key(const char *label, const char *options)
{
    size_t a = strlen(label), b = strlen(options);
    char *k = malloc(a + b + 4);
    if (!k)
        return NULL;
    memcpy(k, label, a);
    memcpy(k + a, "\n=\n", 3);
    memcpy(k + a + 3, options, b + 1);
    return k;
}

/* The entry under `key` with its program built, waiting for a build under
 * way; NULL when there is none (the lock held throughout). */
static struct gs_prog_entry *find_built(gs_dev *dev, const char *key)
{
    for (;;) {
        struct gs_prog_entry *e;
        for (e = dev->progs; e && strcmp(e->key, key) != 0; e = e->next)
            ;
        if (!e || e->prog)
            return e;
        pthread_cond_wait(&dev->progs_cv, &dev->lock);   /* being built; a failed one goes */
    }
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

/* `key` (taken over) names the program in the device's list. */
static int get_text(gs_dev *dev, gs_pcache *pc, const char *label, const char *text,
                    const char *options, char *key, cl_program *out, gs_prog_stats *st,
                    gs_err *err)
{
    if (!key)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    size_t len = strlen(text);
    double t0 = gs_now_ms();

    /* Built without the lock, so that several programs build at once (the
     * tuner's warm-up, gs_prebuild.c); an entry without a program marks one
     * being built, and a second thread asking for it waits for that build
     * instead of doing it again. */
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e = find_built(dev, key);
    if (e) {
        *out = e->prog;
        pthread_mutex_unlock(&dev->lock);
        free(key);
        st->origin = GS_PROG_MEMORY;
        st->ms = gs_now_ms() - t0;
        return 0;
    }
    e = malloc(sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&dev->lock);
        free(key);
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    }
    e->key = key;
    e->prog = NULL;
    e->nidle = 0;
    e->next = dev->progs;
    dev->progs = e;
    dev->progs_release = gs_prog_forget;   /* gs_dev_close releases the list */
    pthread_mutex_unlock(&dev->lock);
    cl_program p = NULL;
    int rc;
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

/* The caller's options with the development ones (gs_kern_set_opts) after
 * them: `options` itself, or *owned (to be freed); NULL when out of memory. */
static const char *all_options(const char *options, char **owned)
{
    const char *extra = gs_kern_get_opts();
    *owned = NULL;
    if (!options)
        options = "";
    if (!extra)
        return options;
    size_t a = strlen(options), b = strlen(extra);
    char *all = malloc(a + b + 2);
    if (!all)
        return NULL;
    memcpy(all, options, a);
    all[a] = ' ';
    memcpy(all + a + 1, extra, b + 1);
    return *owned = all;
}

/* Ready for get_text: the device opened, the stats cleared, the options
 * completed into *opts. */
static int prepare(gs_dev *dev, const char *options, const char **opts, char **owned,
                   gs_prog_stats *st, gs_err *err)
{
    memset(st, 0, sizeof *st);
    *owned = NULL;
    int rc = gs_dev_open(dev, err);
    if (rc)
        return rc;
    *opts = all_options(options, owned);
    return *opts ? 0 : gs_err_set(err, GS_ENOMEM, "out of memory");
}

int gs_prog_get_text(gs_dev *dev, gs_pcache *pc, const char *label, const char *text,
                     const char *options, cl_program *out, gs_prog_stats *st, gs_err *err)
{
    gs_prog_stats local;
    st = st ? st : &local;
    char *owned;
    const char *opts;
    int rc = prepare(dev, options, &opts, &owned, st, err);
    if (rc)
        return rc;
    rc = get_text(dev, pc, label, text, opts, make_key(label, text, strlen(text), opts), out,
                      st, err);
    free(owned);
    return rc;
}

/* The embedded sources' program when the device already holds it: 1, 0
 * when not (then built the long way), or an error. */
static int embedded_hit(gs_dev *dev, const char *key, cl_program *out, gs_prog_stats *st)
{
    double t0 = gs_now_ms();
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e = find_built(dev, key);
    if (e)
        *out = e->prog;
    pthread_mutex_unlock(&dev->lock);
    if (!e)
        return 0;
    st->origin = GS_PROG_MEMORY;
    st->ms = gs_now_ms() - t0;
    return 1;
}

int gs_prog_get(gs_dev *dev, gs_pcache *pc, const char *const *sources,
                const char *options, cl_program *out, gs_prog_stats *st, gs_err *err)
{
    gs_prog_stats local;
    st = st ? st : &local;
    char label[512] = "";
    size_t n = 0;
    for (; sources[n]; n++) {
        if (n == 16)
            return gs_err_set(err, GS_EINVAL, "too many kernel sources");
        size_t ll = strlen(label);
        snprintf(label + ll, sizeof label - ll, "%s%s.cl", n ? "+" : "", sources[n]);
    }
    char *owned;
    const char *opts;
    int rc = prepare(dev, options, &opts, &owned, st, err);
    if (rc)
        return rc;
    /* sources from --kernel-dir may be edited meanwhile: their text is the key */
    char *key = gs_kern_get_dir() ? NULL : embedded_key(label, opts);
    rc = key ? embedded_hit(dev, key, out, st) : 0;
    if (rc == 1) {
        free(key);
        free(owned);
        return 0;
    }
    char *texts[16];
    size_t lens[16], total = 0, got = 0;
    for (; got < n && !rc; got++) {
        rc = gs_kern_load(sources[got], &texts[got], &lens[got], err);
        total += rc ? 0 : lens[got] + 1;
    }
    if (rc)
        got--;   /* the one that failed holds nothing */
    char *all = rc ? NULL : malloc(total + 1);
    if (!rc && !all)
        rc = gs_err_set(err, GS_ENOMEM, "out of memory");
    if (!rc) {
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(all + at, texts[i], lens[i]);
            at += lens[i];
            all[at++] = '\n';
        }
        all[at] = '\0';
        if (!key)
            key = make_key(label, all, at, opts);
        rc = get_text(dev, pc, label, all, opts, key, out, st, err);
        key = NULL;   /* get_text took it */
    }
    free(key);
    free(all);
    for (size_t i = 0; i < got; i++)
        free(texts[i]);
    free(owned);
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
        for (unsigned i = 0; i < e->nidle; i++)
            clReleaseKernel(e->idle[i].k);
        if (e->prog)
            clReleaseProgram(e->prog);
        free(e->key);
        free(e);
        e = nx;
    }
}

/* The entry of a built program (the lock held), or NULL. */
static struct gs_prog_entry *entry_of(gs_dev *dev, cl_program prog)
{
    struct gs_prog_entry *e = dev->progs;
    while (e && e->prog != prog)
        e = e->next;
    return e;
}

cl_kernel gs_prog_kernel_take(gs_dev *dev, cl_program prog, const char *name)
{
    cl_kernel k = NULL;
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e = prog ? entry_of(dev, prog) : NULL;
    for (unsigned i = 0; e && i < e->nidle; i++) {
        if (!strcmp(e->idle[i].name, name)) {
            k = e->idle[i].k;
            e->idle[i] = e->idle[--e->nidle];
            break;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return k;
}

void gs_prog_kernel_put(gs_dev *dev, cl_program prog, const char *name, cl_kernel k)
{
    if (!k)
        return;
    pthread_mutex_lock(&dev->lock);
    struct gs_prog_entry *e = prog ? entry_of(dev, prog) : NULL;
    if (e && e->nidle < KEEP_KERNELS && strlen(name) < sizeof e->idle[0].name) {
        snprintf(e->idle[e->nidle].name, sizeof e->idle[0].name, "%s", name);
        e->idle[e->nidle++].k = k;
        k = NULL;
    }
    pthread_mutex_unlock(&dev->lock);
    if (k)
        clReleaseKernel(k);
}
