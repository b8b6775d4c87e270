/* The client memory blocks a connection keeps (gs_srv_int.h, srv_block):
 * a memfd sent with a sort is identified by its inode. The first time a
 * file comes, it is mapped for that request only and its identity noted;
 * when the same file comes again, it is mapped whole and kept, with its
 * device registrations (gs_pin.h), for every later request that sends it.
 * So a block a client sorts again and again (gsort_alloc memory, libgsort's
 * staging memfd) costs no mmap, no page faults in the daemon and no pinning
 * after the second time, while memory sent once (a one-shot memfd) is
 * neither pinned (registering 512 MiB costs more than the copy it speeds
 * up) nor held after its reply (the client frees it; unmapping the last
 * reference to freed pages on a later request would cost that request).
 * A connection keeps at most BLOCKS_PER_CONN blocks, dropping the least
 * recently used; all go when it closes. A kept block is mapped whole, so
 * its file's whole size counts against max_mapped_bytes_per_client
 * (dropping the connection's least recently used blocks to make room) and
 * max_mapped_bytes (all connections): a file larger than they allow is not
 * kept, and each of its requests maps only the part it uses, as for a file
 * sent once; so no client, however large or sparse the files it sends,
 * fills the daemon's address space (issue 32: 32 TiB sparse memfds carrying
 * 16-byte requests left other clients' sorts failing with GS_ENOMEM). A
 * kept block is released only while no sort of the connection runs (a
 * connection has one request in flight, and eviction happens when the next
 * one arrives). A kept mapping
 * holds its file, so its inode cannot be reused by another memfd while the
 * block is kept. */
#include "config.h"
#include "gs_srv_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "gs_log.h"
#include "gs_time.h"

static void block_free(srv_block *b)
{
    gs_pin_release(&b->pin);
    if (b->map)
        munmap(b->map, b->len);
    free(b);
}

/* Unlink *pp from the list and free it. */
static void block_drop(conn *c, srv_block **pp)
{
    srv_block *b = *pp;
    *pp = b->next;
    c->nblocks--;
    c->kept_bytes -= b->len;
    atomic_fetch_sub(&c->s->kept_bytes, b->len);
    block_free(b);
}

static srv_block **block_lru(conn *c)
{
    srv_block **lru = &c->blocks;
    for (srv_block **pp = &c->blocks; *pp; pp = &(*pp)->next)
        if ((*pp)->last_used < (*lru)->last_used)
            lru = pp;
    return lru;
}

/* Count a kept block of `len` bytes against max_mapped_bytes_per_client and
 * max_mapped_bytes, dropping the connection's least recently used blocks to
 * make room (and one when it keeps BLOCKS_PER_CONN): 1, or 0 when it cannot
 * be kept (nothing dropped then). */
static int kept_room(conn *c, uint64_t len)
{
    srv *s = c->s;
    uint64_t per = atomic_load(&s->kept_client_cap), all = atomic_load(&s->kept_cap);
    uint64_t others = atomic_load(&s->kept_bytes) - c->kept_bytes;
    if (len > per || others > all || len > all - others)
        return 0;
    for (;;) {
        if (c->nblocks < BLOCKS_PER_CONN && c->kept_bytes + len <= per) {
            uint64_t cur = atomic_load(&s->kept_bytes);
            while (cur <= all - len)
                if (atomic_compare_exchange_weak(&s->kept_bytes, &cur, cur + len)) {
                    c->kept_bytes += len;
                    return 1;
                }
        }
        if (!c->blocks)
            return 0;       /* other connections took the room meanwhile */
        block_drop(c, block_lru(c));
    }
}

static void kept_unroom(conn *c, uint64_t len)
{
    c->kept_bytes -= len;
    atomic_fetch_sub(&c->s->kept_bytes, len);
}

/* A file the bounds did not let the connection keep: counted, and said
 * once per connection. */
static void not_kept(conn *c, uint64_t size)
{
    srv *s = c->s;
    atomic_fetch_add(&s->not_kept, 1);
    if (c->kept_noted)
        return;
    c->kept_noted = 1;
    GS_INFO("client %s: a memfd of %llu bytes is not kept mapped (max_mapped_bytes_per_client "
            "%llu, max_mapped_bytes %llu, %llu bytes kept now); its requests map only the "
            "part they use", c->who, (unsigned long long)size,
            (unsigned long long)atomic_load(&s->kept_client_cap),
            (unsigned long long)atomic_load(&s->kept_cap),
            (unsigned long long)atomic_load(&s->kept_bytes));
}

/* Whether the file was sent before (and not kept); forgets it when so. */
static int seen_take(conn *c, const struct stat *sb)
{
    for (unsigned i = 0; i < c->nseen; i++) {
        if (c->seen[i].dev == sb->st_dev && c->seen[i].ino == sb->st_ino) {
            c->seen[i] = c->seen[--c->nseen];
            return 1;
        }
    }
    return 0;
}

static void seen_add(conn *c, const struct stat *sb)
{
    if (c->nseen == BLOCKS_SEEN) {      /* forget the oldest */
        memmove(&c->seen[0], &c->seen[1], (BLOCKS_SEEN - 1) * sizeof c->seen[0]);
        c->nseen--;
    }
    c->seen[c->nseen].dev = sb->st_dev;
    c->seen[c->nseen].ino = sb->st_ino;
    c->nseen++;
}

int srv_block_get(conn *c, int fd, uint64_t need, srv_block **out, int *kept, gs_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return gs_err_set(err, GS_EIO, "fstat of the memfd: %s", strerror(errno));
    if ((uint64_t)sb.st_size < need)
        return gs_err_set(err, GS_EINVAL, "the memfd holds %lld bytes and the request needs %llu",
                          (long long)sb.st_size, (unsigned long long)need);
    int again = 0;
    for (srv_block **pp = &c->blocks; *pp; pp = &(*pp)->next) {
        srv_block *b = *pp;
        if (b->st_dev != sb.st_dev || b->st_ino != sb.st_ino)
            continue;
        if (b->len >= need) {
            b->last_used = gs_now_ms();
            SRV_ADD(c->io->ctr.blocks_reused, 1);
            *out = b;
            *kept = 1;
            return 0;
        }
        block_drop(c, pp);      /* it grew past our mapping: map it again */
        again = 1;
        break;
    }
    again = again || seen_take(c, &sb);
    srv_block *b = calloc(1, sizeof *b);
    if (!b)
        return gs_err_set(err, GS_ENOMEM, "out of memory (retry later)");
    /* Kept: the whole file, since a later request may use another part of
     * it (sealed against shrinking, checked before, so the mapping stays
     * backed), when the mapped-bytes bounds leave room for it. Once: only
     * what this request uses. */
    int keep = again && kept_room(c, (uint64_t)sb.st_size);
    if (again && !keep)
        not_kept(c, (uint64_t)sb.st_size);
    again = keep;
    size_t len = again ? (size_t)sb.st_size : (size_t)need;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        if (keep)
            kept_unroom(c, len);
        free(b);
        return gs_err_set(err, e == ENOMEM ? GS_ENOMEM : GS_EIO, "mapping the memfd: %s",
                          strerror(e));
    }
    b->st_dev = sb.st_dev;
    b->st_ino = sb.st_ino;
    b->map = m;
    b->len = len;
    b->last_used = gs_now_ms();
    SRV_ADD(c->io->ctr.blocks_mapped, 1);
    gs_pin_init(&b->pin, m, len, &c->s->pin);
    if (!again) {
        seen_add(c, &sb);
        c->once = b;
        *out = b;
        *kept = 0;
        return 0;
    }
    b->next = c->blocks;
    c->blocks = b;
    c->nblocks++;
    *out = b;
    *kept = 1;
    return 0;
}

void srv_block_done(conn *c)
{
    if (c->once) {
        block_free(c->once);
        c->once = NULL;
    }
}

void srv_blocks_free(conn *c)
{
    srv_block_done(c);
    while (c->blocks)
        block_drop(c, &c->blocks);
}
