/* The transports of bench/load/loadxport.h: lazily grown buffers, the one-shot
 * memfd, the registered block, and the vanishing send (a request header
 * built with gs_proto_sort_header and sent as one frame with
 * gs_client_send, the way bench/load/malformed.c sends its requests). */
#include "config.h"
#include "loadxport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "benchutil.h"
#include "gs_proto.h"

/* Inline buffers at most this large are kept for the next request; larger
 * ones are allocated per request and given back, like one-shot memfds. */
#define LX_KEEP_BYTES ((size_t)16 << 20)

const char *const lx_name[LX_COUNT] = { "inline", "one-shot memfd", "registered block" };

void lx_init(lx_client *x, int block_max_log2)
{
    memset(x, 0, sizeof *x);
    x->block.fd = x->once.fd = -1;
    x->block_max = ((size_t)16) << block_max_log2;   /* u64 keys + u64 values */
}

static void buf_drop(lx_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}

/* b holds at least `bytes` (contents not kept). */
static int buf_need(lx_buf *b, size_t bytes, gs_err *err)
{
    if (b->p && b->cap >= bytes)
        return 0;
    buf_drop(b);
    size_t cap = bytes < 64 ? 64 : bytes;
    b->p = malloc(cap);
    if (!b->p)
        return gs_err_set(err, GS_ENOMEM, "out of memory for a %zu-byte buffer", bytes);
    b->cap = cap;
    return 0;
}

void lx_free(lx_client *x)
{
    buf_drop(&x->keys);
    buf_drop(&x->vals);
    buf_drop(&x->in_keys);
    gs_client_shm_free(&x->block);
    gs_client_shm_free(&x->once);
}

lx_kind lx_pick(uint64_t draw, size_t n, int block_max_log2, int *demoted)
{
    lx_kind k = (lx_kind)(draw % 3);
    *demoted = k == LX_BLOCK && n > (size_t)1 << block_max_log2;
    return *demoted ? LX_ONESHOT : k;
}

/* The block holds at least `bytes`: else it is replaced by one of the next
 * power of two (at most block_max), so that a client's block grows a few
 * times and then stays. */
static int block_need(lx_client *x, size_t bytes, gs_err *err)
{
    if (x->block.fd >= 0 && x->block.size >= bytes)
        return 0;
    size_t sz = 4096;
    while (sz < bytes)
        sz <<= 1;
    if (sz > x->block_max && bytes <= x->block_max)
        sz = x->block_max;
    gs_client_shm_free(&x->block);
    int rc = gs_client_shm_alloc_named(&x->block, "gsort-load-block", sz, err);
    if (rc == 0)
        x->regrow++;
    return rc;
}

int lx_prepare(lx_client *x, lx_kind kind, gs_dtype t, gs_payload p, size_t n, lx_req *rq,
               gs_err *err)
{
    size_t ks = gs_dtype_size(t), vs = gs_payload_size(p);
    size_t kb = n * ks, vb = n * vs, voff = (kb + 7) & ~(size_t)7;
    int rc = 0;
    memset(rq, 0, sizeof *rq);
    rq->kind = kind;
    switch (kind) {
    case LX_INLINE:
        rc = buf_need(&x->keys, kb, err);
        if (!rc && vs)
            rc = buf_need(&x->vals, vb, err);
        rq->keys = x->keys.p;
        rq->vals = vs ? x->vals.p : NULL;
        break;
    case LX_ONESHOT:
        rc = gs_client_shm_alloc_named(&x->once, "gsort-load", voff + vb, err);
        rq->shm = &x->once;
        break;
    case LX_BLOCK:
        rc = block_need(x, voff + vb, err);
        rq->shm = &x->block;
        break;
    default:
        return gs_err_set(err, GS_EINVAL, "no transport %d", (int)kind);
    }
    if (!rc && rq->shm) {
        rq->keys = rq->shm->ptr;   /* NULL for an empty one-shot memfd (n = 0) */
        rq->vals = vs && rq->keys ? (char *)rq->keys + voff : NULL;
    }
    if (!rc && (p == GS_PL_IDX32 || p == GS_PL_IDX64)) {
        rc = buf_need(&x->in_keys, kb, err);
        rq->in_keys = x->in_keys.p;
    }
    if (rc)
        lx_finish(x, rq, 0);
    return rc;
}

void lx_finish(lx_client *x, const lx_req *rq, int drop_block)
{
    if (rq->kind == LX_ONESHOT)
        gs_client_shm_free(&x->once);
    if (rq->kind == LX_BLOCK && drop_block)
        gs_client_shm_free(&x->block);
    lx_buf *b[] = { &x->keys, &x->vals, &x->in_keys };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i]->cap > LX_KEEP_BYTES)
            buf_drop(b[i]);
}

/* Random bytes (any bits are valid keys and values). */
static void fill_random(void *p, size_t bytes, uint64_t seed)
{
    uint64_t s = seed, *w = p;
    size_t i = 0;
    for (; i < bytes / 8; i++)
        w[i] = bu_splitmix(&s);
    if (bytes % 8) {
        uint64_t last = bu_splitmix(&s);
        memcpy((char *)p + i * 8, &last, bytes % 8);
    }
}

int lx_vanish(lx_client *x, gs_client *c, lx_kind kind, const gs_client_sort *s,
              uint64_t seed, gs_err *err)
{
    gs_proto_req rq;
    int rc = gs_client_sort_req(s, &rq, err);
    if (rc)
        return rc;
    size_t kb = s->n * gs_dtype_size(s->shape.dtype);
    size_t in = kb + (s->shape.payload == GS_PL_U32 || s->shape.payload == GS_PL_U64
                          ? s->n * gs_payload_size(s->shape.payload) : 0);
    lx_req where = { .kind = kind };
    const void *payload = NULL;
    size_t len = 0;
    int fd = -1;
    if (kind == LX_INLINE) {
        /* one frame: keys and values back to back in one buffer */
        rc = buf_need(&x->keys, in, err);
        if (rc)
            return rc;
        fill_random(x->keys.p, in, seed);
        payload = x->keys.p;
        len = in;
    } else {
        rc = lx_prepare(x, kind, s->shape.dtype, s->shape.payload, s->n, &where, err);
        if (rc)
            return rc;
        fill_random(where.shm->ptr, where.shm->size, seed);
        rq.memfd = 1;
        rq.keys_offset = 0;
        rq.values_offset = (kb + 7) & ~(uint64_t)7;
        fd = where.shm->fd;
    }
    cJSON *hdr = gs_proto_sort_header(&rq, err);
    rc = hdr ? gs_client_send(c, hdr, payload, len, fd, err) : err->code ? err->code : GS_ENOMEM;
    cJSON_Delete(hdr);
    lx_finish(x, &where, 1);
    return rc;
}
