/* How gsort-load's sorts travel to the daemon: inline, through a one-shot
 * memfd (made for the request, freed after it), or through the client's
 * registered block (one memfd it keeps and reuses, so that the daemon keeps
 * it from its second request on and pins it for device copies; grown, that
 * is replaced by a larger one, only when a request needs more, up to a
 * cap). Also where the arrays of each request lie: the inline buffers and
 * the input keys an idx check needs grow lazily to what a request needs,
 * and the large ones are given back after it, so that 64 clients at 2^26
 * hold only what their requests in flight need. And the sort sent whole
 * whose sender then vanishes without reading the reply. Names start with
 * lx_. */
#ifndef GS_BENCH_LOADXPORT_H
#define GS_BENCH_LOADXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_types.h"

typedef enum lx_kind { LX_INLINE, LX_ONESHOT, LX_BLOCK, LX_COUNT } lx_kind;
extern const char *const lx_name[LX_COUNT];   /* "inline", "one-shot memfd", ... */

typedef struct lx_buf {
    void *p;
    size_t cap;
} lx_buf;

/* One client's transport state (zero it, then lx_init). */
typedef struct lx_client {
    lx_buf keys, vals, in_keys;   /* inline arrays; the input keys of an idx sort */
    gs_client_shm block;          /* the registered block (fd -1 until first needed) */
    gs_client_shm once;           /* the one-shot memfd of the request in progress */
    size_t block_max;             /* bytes the block may grow to */
    uint64_t regrow;              /* blocks made (the first one and each replacement) */
} lx_client;

/* Where one request's arrays lie. */
typedef struct lx_req {
    lx_kind kind;
    void *keys, *vals;            /* vals NULL without a payload */
    void *in_keys;                /* n keys' room for an idx check, else NULL */
    const gs_client_shm *shm;     /* the memfd they lie in, NULL inline */
} lx_req;

/* A client whose block holds up to 2^block_max_log2 u64 keys and u64
 * values. */
void lx_init(lx_client *x, int block_max_log2);
void lx_free(lx_client *x);

/* The transport of a request of n keys from a uniform draw: thirds, except
 * that a block request above 2^block_max_log2 keys goes one-shot (*demoted
 * set then). */
lx_kind lx_pick(uint64_t draw, size_t n, int block_max_log2, int *demoted);

/* Room for a sort of n keys of t with payload p through `kind` (the block
 * grown when too small). GS_ENOMEM or the memfd's error with err. */
int lx_prepare(lx_client *x, lx_kind kind, gs_dtype t, gs_payload p, size_t n, lx_req *rq,
               gs_err *err);
/* After the request: the one-shot memfd freed, large inline buffers given
 * back, and with drop_block the block too (the daemon may still be sorting
 * in it: a request that failed or was abandoned), so the next block request
 * makes a new one. */
void lx_finish(lx_client *x, const lx_req *rq, int drop_block);

/* Send the sort `s` describes (its keys, values and shm are ignored) whole
 * through `kind`, with random keys and values, and return without reading
 * the reply: the caller then closes c, as a killed client would. The block
 * used is dropped (the daemon goes on sorting in it). 0, or a negative code
 * with err. */
int lx_vanish(lx_client *x, gs_client *c, lx_kind kind, const gs_client_sort *s,
              uint64_t seed, gs_err *err);

#endif
