/* The gsort command's file handling (see gsort_io.h): shared or heap
 * arrays, binary inputs read straight into them, a chunk list for input of
 * unknown length, and outputs that replace their file only after every byte
 * was written. */
#include "config.h"
#include "gsort_io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gsort.h"

/* ---- arrays ---- */

int gsc_buf_alloc(gsc_buf *b, size_t bytes, int want_shared, gs_err *err)
{
    b->ptr = NULL;
    b->size = bytes;
    b->shared = 0;
    if (bytes == 0)
        return 0;
    if (want_shared) {
        gsort_error ge;
        b->ptr = gsort_alloc(bytes, &ge);
        if (b->ptr) {
            b->shared = 1;
            return 0;
        }
        /* No shared memory (no memfd, a limit): the library stages heap
         * memory through its own buffer, so this is only slower. */
    }
    b->ptr = malloc(bytes);
    if (!b->ptr)
        return gs_err_set(err, GS_ENOMEM, "out of memory allocating %zu bytes", bytes);
    return 0;
}

void gsc_buf_free(gsc_buf *b)
{
    if (!b)
        return;
    if (b->shared)
        gsort_free(b->ptr);
    else
        free(b->ptr);
    b->ptr = NULL;
    b->size = 0;
    b->shared = 0;
}

/* ---- growing input ---- */

struct gsc_chunk {
    gsc_chunk *next;
    size_t cap, len;
    unsigned char data[];
};

#define CHUNK_FIRST (64u << 10)
#define CHUNK_MAX (64u << 20)

void gsc_chunks_init(gsc_chunks *c)
{
    c->head = c->tail = NULL;
    c->total = 0;
    c->next_cap = CHUNK_FIRST;
}

void *gsc_chunks_room(gsc_chunks *c, size_t min, size_t *avail, gs_err *err)
{
    gsc_chunk *t = c->tail;
    if (t && t->cap - t->len >= min) {
        *avail = t->cap - t->len;
        return t->data + t->len;
    }
    size_t cap = c->next_cap > min ? c->next_cap : min;
    if (cap > SIZE_MAX - sizeof *t) {
        gs_err_set(err, GS_ENOMEM, "out of memory: a chunk of %zu bytes", min);
        return NULL;
    }
    gsc_chunk *n = malloc(sizeof *n + cap);
    if (!n) {
        gs_err_set(err, GS_ENOMEM, "out of memory after reading %zu bytes", c->total);
        return NULL;
    }
    n->next = NULL;
    n->cap = cap;
    n->len = 0;
    if (t)
        t->next = n;
    else
        c->head = n;
    c->tail = n;
    /* Geometric growth keeps the number of chunks (and mallocs) small for
     * large inputs while small inputs stay small. */
    if (c->next_cap < CHUNK_MAX)
        c->next_cap *= 2;
    *avail = cap;
    return n->data;
}

void gsc_chunks_commit(gsc_chunks *c, size_t len)
{
    c->tail->len += len;
    c->total += len;
}

void gsc_chunks_free(gsc_chunks *c)
{
    gsc_chunk *k = c->head;
    while (k) {
        gsc_chunk *nx = k->next;
        free(k);
        k = nx;
    }
    gsc_chunks_init(c);
}

int gsc_chunks_gather(gsc_chunks *c, size_t extra, int want_shared, gsc_buf *out,
                      gs_err *err)
{
    if (extra > SIZE_MAX - c->total) {
        gsc_chunks_free(c);
        return gs_err_set(err, GS_ENOMEM, "out of memory: %zu + %zu bytes", c->total, extra);
    }
    int rc = gsc_buf_alloc(out, c->total + extra, want_shared, err);
    if (rc < 0) {
        gsc_chunks_free(c);
        return rc;
    }
    unsigned char *p = out->ptr;
    gsc_chunk *k = c->head;
    while (k) {
        gsc_chunk *nx = k->next;
        if (k->len) {   /* empty input: p is NULL, and memcpy(NULL, .., 0) is undefined */
            memcpy(p, k->data, k->len);
            p += k->len;
        }
        free(k);
        k = nx;
    }
    gsc_chunks_init(c);
    return 0;
}

/* ---- input files ---- */

static int is_stdin(const char *path)
{
    return !path || strcmp(path, "-") == 0;
}

int gsc_input_open(gsc_input *in, const char *path, gs_err *err)
{
    in->path = path ? path : "-";
    in->display = is_stdin(path) ? "standard input" : path;
    if (is_stdin(path)) {
        in->fd = STDIN_FILENO;
        return 0;
    }
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0)
        return gs_err_set(err, GS_EIO, "%s: %s", path, strerror(errno));
    return 0;
}

void gsc_input_close(gsc_input *in)
{
    if (in->fd > STDIN_FILENO)
        close(in->fd);
    in->fd = -1;
}

long gsc_input_read(gsc_input *in, void *buf, size_t len, gs_err *err)
{
    if (len > LONG_MAX)
        len = LONG_MAX;
    for (;;) {
        ssize_t r = read(in->fd, buf, len);
        if (r >= 0)
            return (long)r;
        if (errno != EINTR)
            return gs_err_set(err, GS_EIO, "%s: read error: %s", in->display, strerror(errno));
    }
}

/* Read exactly len bytes; GS_EIO when the input ends first. */
static int read_exact(gsc_input *in, void *buf, size_t len, gs_err *err)
{
    unsigned char *p = buf;
    size_t done = 0;
    while (done < len) {
        long r = gsc_input_read(in, p + done, len - done, err);
        if (r < 0)
            return (int)r;
        if (r == 0)
            return gs_err_set(err, GS_EIO, "%s: shrank while being read (%zu of %zu bytes "
                              "read)", in->display, done, len);
        done += (size_t)r;
    }
    return 0;
}

static int size_check(const char *display, uint64_t bytes, size_t esize, const char *tname,
                      gs_err *err)
{
    if (bytes % esize == 0)
        return 0;
    return gs_err_set(err, GS_EINVAL, "%s: %" PRIu64 " bytes is not a whole number of %s "
                      "elements (%zu bytes each; %" PRIu64 " bytes left over)", display,
                      bytes, tname, esize, bytes % esize);
}

/* Every input a regular file: sizes known up front, so the array is
 * allocated once and each file read straight into it. */
static int read_regular(const char *const *paths, size_t npaths, const uint64_t *sizes,
                        size_t esize, gsc_extra_fn extra, int want_shared, gsc_buf *out,
                        size_t *count, gs_err *err)
{
    uint64_t total = 0;
    for (size_t i = 0; i < npaths; i++)
        total += sizes[i];
    if (total > SIZE_MAX / 2)
        return gs_err_set(err, GS_ENOMEM, "the input (%" PRIu64 " bytes) does not fit in "
                          "memory", total);
    size_t n = (size_t)total / esize, ex = extra ? extra(n) : 0;
    int rc = gsc_buf_alloc(out, (size_t)total + ex, want_shared, err);
    if (rc < 0)
        return rc;
    unsigned char *p = out->ptr;
    for (size_t i = 0; i < npaths && rc == 0; i++) {
        gsc_input in;
        if ((rc = gsc_input_open(&in, paths[i], err)) < 0)
            break;
        rc = read_exact(&in, p, (size_t)sizes[i], err);
        if (rc == 0) {
            /* A file that grew since stat(2) (or a /proc-style file with a
             * made-up size) must not be cut short silently. */
            unsigned char probe;
            long r = gsc_input_read(&in, &probe, 1, err);
            if (r < 0)
                rc = (int)r;
            else if (r > 0)
                rc = gs_err_set(err, GS_EIO, "%s: grew while being read (beyond its %"
                                PRIu64 " bytes)", in.display, sizes[i]);
        }
        gsc_input_close(&in);
        p += sizes[i];
    }
    if (rc < 0) {
        gsc_buf_free(out);
        return rc;
    }
    *count = n;
    return 0;
}

int gsc_read_binary(const char *const *paths, size_t npaths, size_t esize, const char *tname,
                    gsc_extra_fn extra, int want_shared, gsc_buf *out, size_t *count,
                    gs_err *err)
{
    uint64_t *sizes = calloc(npaths, sizeof *sizes);
    if (!sizes)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int all_regular = 1, stdin_seen = 0, rc = 0;
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        const char *disp = is_stdin(paths[i]) ? "standard input" : paths[i];
        int in0 = is_stdin(paths[i]);
        int r = in0 ? fstat(STDIN_FILENO, &st) : stat(paths[i], &st);
        if (r < 0) {
            rc = gs_err_set(err, GS_EIO, "%s: %s", disp, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = gs_err_set(err, GS_EIO, "%s: is a directory", disp);
            break;
        }
        off_t left = st.st_size;
        if (in0 && S_ISREG(st.st_mode)) {
            /* A redirected stdin reads from its current offset on. */
            off_t pos = lseek(STDIN_FILENO, 0, SEEK_CUR);
            left = pos < 0 || pos > st.st_size ? 0 : st.st_size - pos;
        }
        if (S_ISREG(st.st_mode) && left > 0 && !(in0 && stdin_seen)) {
            /* Checked here, before anything is read or allocated. */
            if ((rc = size_check(disp, (uint64_t)left, esize, tname, err)) < 0)
                break;
            sizes[i] = (uint64_t)left;
            stdin_seen |= in0;
        } else {
            /* Pipes, terminals, size-0 files that may still have content
             * (/proc), and stdin named twice. */
            all_regular = 0;
        }
    }
    if (rc == 0 && all_regular) {
        rc = read_regular(paths, npaths, sizes, esize, extra, want_shared, out, count, err);
        free(sizes);
        return rc;
    }
    free(sizes);
    if (rc < 0)
        return rc;

    gsc_chunks ch;
    gsc_chunks_init(&ch);
    for (size_t i = 0; i < npaths && rc == 0; i++) {
        gsc_input in;
        if ((rc = gsc_input_open(&in, paths[i], err)) < 0)
            break;
        size_t start = ch.total;
        for (;;) {
            size_t avail;
            void *room = gsc_chunks_room(&ch, 1, &avail, err);
            if (!room) {
                rc = GS_ENOMEM;
                break;
            }
            long r = gsc_input_read(&in, room, avail, err);
            if (r < 0) {
                rc = (int)r;
                break;
            }
            if (r == 0)
                break;
            gsc_chunks_commit(&ch, (size_t)r);
        }
        if (rc == 0)
            rc = size_check(in.display, ch.total - start, esize, tname, err);
        gsc_input_close(&in);
    }
    if (rc < 0) {
        gsc_chunks_free(&ch);
        return rc;
    }
    size_t n = ch.total / esize;
    rc = gsc_chunks_gather(&ch, extra ? extra(n) : 0, want_shared, out, err);
    if (rc < 0)
        return rc;
    *count = n;
    return 0;
}

/* ---- output ---- */

/* The temporary file a signal must not leave behind. Only ever one. */
static char g_cleanup[4096];
static volatile sig_atomic_t g_cleanup_set;

static void on_signal(int sig)
{
    if (g_cleanup_set)
        unlink(g_cleanup);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void cleanup_arm(const char *path)
{
    static int installed;
    g_cleanup_set = 0;
    snprintf(g_cleanup, sizeof g_cleanup, "%s", path);
    g_cleanup_set = 1;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        installed = 1;
    }
}

static void cleanup_disarm(void)
{
    g_cleanup_set = 0;
}

int gsc_output_open(gsc_output *o, const char *path, gs_err *err)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!path || strcmp(path, "-") == 0) {
        o->display = "standard output";
        o->fd = STDOUT_FILENO;
        return 0;
    }
    o->display = path;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            if (S_ISDIR(st.st_mode))
                return gs_err_set(err, GS_EIO, "%s: is a directory", path);
            o->direct = path;    /* a FIFO, /dev/null, a terminal: write in place */
            return 0;
        }
        /* Replacing a file the user may not write would bypass its
         * permissions (rename only needs the directory). */
        if (access(path, W_OK) != 0)
            return gs_err_set(err, GS_EIO, "%s: %s", path, strerror(errno));
        /* Through a symbolic link: replace the file it names, not the link. */
        char *real = realpath(path, NULL);
        if (!real)
            return gs_err_set(err, GS_EIO, "%s: %s", path, strerror(errno));
        int fit = snprintf(o->target, sizeof o->target, "%s", real) < (int)sizeof o->target;
        free(real);
        if (!fit)
            return gs_err_set(err, GS_EIO, "%s: path too long", path);
        o->mode = (int)(st.st_mode & 07777);
    } else if (errno == ENOENT) {
        if (snprintf(o->target, sizeof o->target, "%s", path) >= (int)sizeof o->target)
            return gs_err_set(err, GS_EIO, "%s: path too long", path);
        mode_t um = umask(0);
        umask(um);
        o->mode = (int)(0666 & ~um);
    } else {
        return gs_err_set(err, GS_EIO, "%s: %s", path, strerror(errno));
    }

    /* The temporary lies in the target's directory: rename(2) must not
     * cross file systems. */
    char dir[4096];
    const char *slash = strrchr(o->target, '/');
    const char *base = slash ? slash + 1 : o->target;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == o->target)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - o->target), o->target);
    int w = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.gsort-XXXXXX", dir, base);
    if (w < 0 || w >= (int)sizeof o->tmp) {
        o->tmp[0] = '\0';
        return gs_err_set(err, GS_EIO, "%s: path too long", path);
    }
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        int e = errno;
        o->tmp[0] = '\0';
        return gs_err_set(err, GS_EIO, "%s: cannot create a temporary file in %s: %s", path,
                          dir, strerror(e));
    }
    cleanup_arm(o->tmp);
    return 0;
}

int gsc_output_write(gsc_output *o, const void *buf, size_t len, gs_err *err)
{
    if (o->fd < 0 && o->direct) {
        o->fd = open(o->direct, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (o->fd < 0)
            return gs_err_set(err, GS_EIO, "%s: %s", o->display, strerror(errno));
    }
    const unsigned char *p = buf;
    while (len > 0) {
        size_t part = len > (1u << 30) ? (1u << 30) : len;
        ssize_t w = write(o->fd, p, part);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE)
                o->broken_pipe = 1;
            return gs_err_set(err, GS_EIO, "write error on %s: %s", o->display,
                              strerror(errno));
        }
        if (w == 0)
            return gs_err_set(err, GS_EIO, "write error on %s: nothing written", o->display);
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int gsc_output_commit(gsc_output *o, gs_err *err)
{
    if (o->direct) {
        if (o->fd < 0) {
            int rc = gsc_output_write(o, "", 0, err);   /* opens (and truncates) it */
            if (rc < 0)
                return rc;
        }
        int rc = close(o->fd);
        o->fd = -1;
        if (rc < 0)
            return gs_err_set(err, GS_EIO, "write error on %s: %s", o->display,
                              strerror(errno));
        return 0;
    }
    if (!o->tmp[0])
        return 0;      /* standard output: nothing to finish */
    int rc = 0;
    if (fchmod(o->fd, (mode_t)o->mode) < 0)
        rc = gs_err_set(err, GS_EIO, "%s: cannot set permissions %04o: %s", o->display,
                        o->mode, strerror(errno));
    /* close(2) reports deferred write errors (NFS, quota). */
    if (close(o->fd) < 0 && rc == 0)
        rc = gs_err_set(err, GS_EIO, "write error on %s: %s", o->display, strerror(errno));
    o->fd = -1;
    if (rc == 0 && rename(o->tmp, o->target) < 0)
        rc = gs_err_set(err, GS_EIO, "%s: cannot rename %s over it: %s", o->display, o->tmp,
                        strerror(errno));
    if (rc < 0) {
        unlink(o->tmp);
    }
    o->tmp[0] = '\0';
    cleanup_disarm();
    return rc;
}

void gsc_output_abort(gsc_output *o)
{
    if (o->tmp[0]) {
        if (o->fd >= 0)
            close(o->fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        cleanup_disarm();
    } else if (o->direct && o->fd >= 0) {
        close(o->fd);
    }
    o->fd = -1;
}
