/* libgsort's shared memory: gsort_alloc/gsort_free and the process-wide
 * registry of the blocks they hand out, so that a sort can tell whether an
 * array lies inside a block the daemon can map (and then send the block's
 * memfd with offsets instead of copying). Where memfds are not available
 * gsort_alloc falls back to ordinary memory, which sorts like any other
 * caller memory. The registry is a mutex-protected array sorted by address:
 * lookups are a binary search, and blocks are few and long-lived. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gsort.h"
#include "gsort_int.h"
#include "gs_grow.h"

typedef struct block {
    uintptr_t base;
    size_t size;        /* what was asked for (>= 1), the usable bytes */
    int fd;             /* the memfd; -1 for the ordinary-memory fallback */
} block;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static block *g_blocks;     /* sorted by base */
static size_t g_n, g_cap;
/* g_n, read without the lock by the check every sort call makes
 * (lgs_block_overrun): a program that never called gsort_alloc takes no
 * lock per call. A block's pointer reaches a caller only after it is
 * counted here, so a call with one in hand sees it counted. */
static _Atomic size_t g_live;

/* Index of the last block whose base is <= a, or g_n when there is none.
 * Called with the lock held. */
static size_t find_at_or_below(uintptr_t a)
{
    size_t lo = 0, hi = g_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_blocks[mid].base <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : g_n;
}

static int inside(const block *b, const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    return a >= b->base && a - b->base <= b->size && bytes <= b->size - (a - b->base);
}

int lgs_block_find(const void *keys, size_t kbytes, const void *values, size_t vbytes,
                   gs_client_shm *shm)
{
    int found = 0;
    pthread_mutex_lock(&g_lock);
    size_t i = find_at_or_below((uintptr_t)keys);
    if (i < g_n && g_blocks[i].fd >= 0 && inside(&g_blocks[i], keys, kbytes) &&
        (!vbytes || inside(&g_blocks[i], values, vbytes))) {
        int fd = fcntl(g_blocks[i].fd, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0) {
            shm->fd = fd;
            shm->ptr = (void *)g_blocks[i].base;
            shm->size = g_blocks[i].size;
            found = 1;
        }
        /* Out of descriptors: the caller stages instead, which needs none
         * beyond its own. */
    }
    pthread_mutex_unlock(&g_lock);
    return found;
}

int lgs_block_overrun(const void *p, size_t bytes, size_t *off, size_t *size)
{
    uintptr_t a = (uintptr_t)p;
    int over = 0;
    if (!atomic_load_explicit(&g_live, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&g_lock);
    size_t i = find_at_or_below(a);
    if (i < g_n && a - g_blocks[i].base < g_blocks[i].size &&
        bytes > g_blocks[i].size - (a - g_blocks[i].base)) {
        *off = a - g_blocks[i].base;
        *size = g_blocks[i].size;
        over = 1;
    }
    pthread_mutex_unlock(&g_lock);
    return over;
}

/* Record a block; GS_ENOMEM when the registry cannot grow. */
static int registry_add(const block *b)
{
    pthread_mutex_lock(&g_lock);
    int rc = gs_grow(&g_blocks, &g_cap, g_n, sizeof *g_blocks, 16);
    if (!rc) {
        size_t i = find_at_or_below(b->base);
        i = i == g_n ? 0 : i + 1;
        memmove(g_blocks + i + 1, g_blocks + i, (g_n - i) * sizeof *g_blocks);
        g_blocks[i] = *b;
        g_n++;
        atomic_store_explicit(&g_live, g_n, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

static void block_release(const block *b)
{
    if (b->fd >= 0) {
        munmap((void *)b->base, b->size);
        close(b->fd);
    } else {
        free((void *)b->base);
    }
}

void *gsort_alloc(size_t bytes, gsort_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    /* A zero-byte request still gets a distinct pointer to free. */
    if (bytes == 0)
        bytes = 1;
    if (bytes > (size_t)PTRDIFF_MAX) {
        lgs_err_set(err, GSORT_ETOOBIG, "gsort_alloc: %zu bytes is more than a process can "
                    "address", bytes);
        return NULL;
    }
    gs_err ge;
    gs_err_clear(&ge);
    gs_client_shm shm;
    block b = { 0, bytes, -1 };
    int rc = gs_client_shm_alloc_named(&shm, LGS_MEMFD_BLOCK, bytes, &ge);
    if (rc == 0) {
        b.base = (uintptr_t)shm.ptr;
        b.fd = shm.fd;
    } else if (rc == GS_EIO) {
        /* No memfds here (old kernel, seccomp): ordinary memory still
         * sorts, through the inline path. Zeroed like a fresh memfd. */
        void *p = NULL;
        if (posix_memalign(&p, 4096, bytes) != 0) {
            lgs_err_set(err, GSORT_ENOMEM, "gsort_alloc: out of memory for %zu bytes", bytes);
            return NULL;
        }
        memset(p, 0, bytes);
        b.base = (uintptr_t)p;
    } else {
        gs_err_prefix(&ge, "gsort_alloc: ");
        lgs_err_from(err, rc, &ge);
        return NULL;
    }
    if (registry_add(&b)) {
        block_release(&b);
        lgs_err_set(err, GSORT_ENOMEM, "gsort_alloc: out of memory for the block registry");
        return NULL;
    }
    return (void *)b.base;
}

void gsort_free(void *ptr)
{
    if (!ptr)
        return;
    block b;
    int found = 0;
    pthread_mutex_lock(&g_lock);
    size_t i = find_at_or_below((uintptr_t)ptr);
    if (i < g_n && g_blocks[i].base == (uintptr_t)ptr) {
        b = g_blocks[i];
        memmove(g_blocks + i, g_blocks + i + 1, (g_n - i - 1) * sizeof *g_blocks);
        g_n--;
        atomic_store_explicit(&g_live, g_n, memory_order_release);
        found = 1;
    }
    pthread_mutex_unlock(&g_lock);
    /* A pointer gsort_alloc did not return is left alone: freeing it with
     * the wrong call would corrupt memory the caller still owns. */
    if (found)
        block_release(&b);
}
