/* A bit range (issue 39: CUB's begin_bit/end_bit) for algorithms that sort
 * whole keys: each key's range of its order code becomes a word of its
 * own (32 bits where the range has at most 32), and the words are sorted
 * stably with a payload that carries the request along: the key itself
 * where the request has no values, else the key's index, which then
 * gathers keys and values. Radix sorts by the range itself
 * (gs_algo.bit_range) and never comes here.
 * The caller's arrays may be a client's shared memory (issue 32): keys and
 * values are read once, into private arrays, while the words are made,
 * and the answer is written from those, so what the client rewrites
 * meanwhile can make its answer wrong, never send a write astray. */
#include "config.h"
#include "gs_bits.h"

#include <stdlib.h>
#include <string.h>

#include "gs_hostpool.h"
#include "gs_keys.h"

/* Keys a task of the word-making and gathering passes takes */
#define TASK 65536
/* Fewer keys than this stay on the calling thread */
#define ONE_THREAD_N 262144

static size_t task_hi(size_t t, size_t n) { return (t + 1) * TASK < n ? (t + 1) * TASK : n; }

/* Words of keys [t * TASK, ...), the keys (and values) copied as read */
static void words_task(void *arg, size_t t, unsigned worker)
{
    (void)worker;
    const gs_bits_job *b = arg;
    const gs_sort_req *r = b->req;
    const size_t n = r->n, hi = task_hi(t, n);
    const uint64_t mask = b->width >= 64 ? UINT64_MAX : (UINT64_C(1) << b->width) - 1;
    void *kcopy = b->carry ? b->carry : b->keys;
    for (size_t i = t * TASK; i < hi; i++) {
        const uint64_t k = gs_key_get(r->keys, i, b->ks);
        const uint64_t code = b->ks == 4
            ? gs_key32_encode(r->shape.dtype, r->shape.descending, (uint32_t)k)
            : gs_key64_encode(r->shape.dtype, r->shape.descending, k);
        gs_key_put(b->words.keys, i, b->wb, (code >> b->lo) & mask);
        gs_key_put(kcopy, i, b->ks, k);
    }
    if (b->vals)
        memcpy((char *)b->vals + t * TASK * b->vs, (const char *)r->values + t * TASK * b->vs,
               (hi - t * TASK) * b->vs);
}

/* The answer for positions [t * TASK, ...): keys alone copied back from
 * their sorted payload; else keys (and values) gathered by index */
static void answer_task(void *arg, size_t t, unsigned worker)
{
    (void)worker;
    const gs_bits_job *b = arg;
    const gs_sort_req *r = b->req;
    const size_t n = r->n, lo = t * TASK, hi = task_hi(t, n);
    if (b->carry) {
        memcpy((char *)r->keys + lo * b->ks, (const char *)b->carry + lo * b->ks,
               (hi - lo) * b->ks);
        return;
    }
    for (size_t i = lo; i < hi; i++) {
        uint64_t j = gs_key_get(b->idx, i, b->ib);
        if (j >= n)     /* a permutation of private words: never, but no stray read */
            j = n - 1;
        gs_key_put(r->keys, i, b->ks, gs_key_get(b->keys, j, b->ks));
        if (b->vals)
            gs_key_put(r->values, i, b->vs, gs_key_get(b->vals, j, b->vs));
    }
}

int gs_bits_words(gs_bits_job *jb, const gs_sort_req *req, int one_thread, gs_err *err)
{
    gs_bits_job *b = jb;
    const size_t n = req->n;
    memset(b, 0, sizeof *b);
    b->req = req;
    b->lo = gs_shape_bit_lo(&req->shape);
    b->width = gs_shape_bit_width(&req->shape);
    b->ks = gs_dtype_size(req->shape.dtype);
    b->one_thread = one_thread || n < ONE_THREAD_N;
    const gs_payload pl = req->shape.payload;
    const int argsort = pl == GS_PL_IDX32 || pl == GS_PL_IDX64;
    b->wb = b->width <= 32 ? 4 : 8;
    gs_sort_req *w = &b->words;
    w->n = n;
    w->shape.dtype = b->wb == 4 ? GS_DT_U32 : GS_DT_U64;
    w->shape.stable = 1;     /* ties: input order, which the payload keeps */
    if (!(w->keys = malloc(n * b->wb + 1)))
        goto nomem;
    if (pl == GS_PL_NONE) {
        /* keys alone ride with their words */
        if (!(b->carry = malloc(n * b->ks + 1)))
            goto nomem;
        w->shape.payload = b->ks == 4 ? GS_PL_U32 : GS_PL_U64;
        w->values = b->carry;
    } else {
        /* an index gathers keys and values: argsort's is the answer itself */
        b->vs = argsort ? 0 : gs_payload_size(pl);
        w->shape.payload = argsort ? pl : (uint64_t)n > UINT32_MAX ? GS_PL_IDX64 : GS_PL_IDX32;
        b->ib = gs_payload_size(w->shape.payload);
        if (!(b->keys = malloc(n * b->ks + 1)) || (b->vs && !(b->vals = malloc(n * b->vs + 1))))
            goto nomem;
        if (argsort)
            b->idx = req->values;
        else if (!(b->idx = malloc(n * b->ib + 1)))
            goto nomem;
        w->values = b->idx;
    }
    if (n)
        gs_hostpool_run((n + TASK - 1) / TASK, b->one_thread, words_task, b);
    return 0;
nomem:
    gs_bits_free(b);
    return gs_err_set(err, GS_ENOMEM, "sort: out of memory for a bit range's %zu words", n);
}

void gs_bits_answer(const gs_bits_job *jb)
{
    if (jb->req->n)
        gs_hostpool_run((jb->req->n + TASK - 1) / TASK, jb->one_thread, answer_task, (void *)jb);
}

void gs_bits_free(gs_bits_job *jb)
{
    const gs_payload pl = jb->req ? jb->req->shape.payload : GS_PL_NONE;
    free(jb->words.keys);
    free(jb->carry);
    free(jb->keys);
    free(jb->vals);
    if (pl != GS_PL_IDX32 && pl != GS_PL_IDX64)
        free(jb->idx);
    memset(jb, 0, sizeof *jb);
}
