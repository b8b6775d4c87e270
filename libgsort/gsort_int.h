/* Private to libgsort (libgsort/gsort*.c): the error-record helpers
 * (gsort_err.c) that every call reports through, and the shared-memory side
 * (gsort_shm.c) that the sort calls use. Names here start with lgs_, not
 * gsort_, so that the library's export filter (-export-symbols-regex
 * '^gsort_') keeps them hidden. */
#ifndef GSORT_INT_H
#define GSORT_INT_H

#include <stddef.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_types.h"
#include "gsort.h"

/* Copy an internal failure (code rc, message in ge) into the caller's
 * record (which may be NULL) and return the GSORT_E* code: GS_E* and
 * GSORT_E* share their numbers. */
int lgs_err_from(gsort_error *err, int rc, const gs_err *ge);
/* Fill the caller's record (may be NULL) and return `code`. */
int lgs_err_set(gsort_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clear the caller's record (may be NULL): code 0, empty message. */
void lgs_err_clear(gsort_error *err);

/* Memfd names for gs_client_shm_alloc_named, as /proc/PID/maps shows them
 * ("/memfd:gsort-stage"). */
#define LGS_MEMFD_BLOCK "gsort-block"
#define LGS_MEMFD_STAGE "gsort-stage"

/* Whether [keys, keys + kbytes) and, when vbytes > 0, [values, values +
 * vbytes) lie inside one memfd block from gsort_alloc. If so, *shm describes
 * the block with a duplicate of its descriptor (the caller closes shm->fd),
 * so a gsort_free racing with the sort cannot hand the daemon a reused
 * descriptor number. Returns 1 when found, 0 when not. */
int lgs_block_find(const void *keys, size_t kbytes, const void *values, size_t vbytes,
                   gs_client_shm *shm);
/* Whether the bytes at p start inside a gsort_alloc block and run past
 * its end (a caller's n too large for its block: copying them would read
 * past the mapping); then the offset and the block's size. */
int lgs_block_overrun(const void *p, size_t bytes, size_t *off, size_t *size);

/* ---- sorting locally (issue 36) ----
 * gsort_local.c: when a call sorts in the caller's process, per
 * connection, as the Python client's Router does. A shape is a request's
 * (dtype, values kind, descending, stable), lgs_shape's number for it. */
#define LGS_SHAPES (GS_DT_COUNT * GS_PL_COUNT * 2 * 2)
typedef struct lgs_router lgs_router;
unsigned lgs_shape(int dtype, int values_kind, int descending, int stable);
lgs_router *lgs_router_new(void);       /* NULL: out of memory */
void lgs_router_free(lgs_router *r);
/* 1: sort n keys of this shape locally; 0: ask the daemon. Counts the
 * choice (the loser's retry comes every RETRY_EVERY choices). */
int lgs_router_choose(lgs_router *r, unsigned shape, size_t n);
/* A call's time as the caller saw it, for the route it took (local 1:
 * in process). 0, or GSORT_ENOMEM when it could not be remembered. */
int lgs_router_record(lgs_router *r, unsigned shape, size_t n, int local, double ms);
/* Whether n keys are sorted here whatever was measured (fewer than a round
 * trip's worth): the router neither asks nor records their times. */
int lgs_router_local_only(size_t n);
/* The daemon's crossover for a shape (its info op, issue 36): below n keys
 * it would sort them on one host thread, the sort linked in here, so they
 * are sorted here without asking or timing it. 0: none known. */
void lgs_router_set_below(lgs_router *r, unsigned shape, uint64_t n);
/* For tests: the averages (ms per key, -1: not measured) of n's bucket. */
int lgs_router_get(const lgs_router *r, unsigned shape, size_t n, double *loc, double *dae);

/* gsort_inproc.c: sort req in this process with the daemon's host sort,
 * exactly as the daemon would. 0 or a GS_E* code; on failure the arrays
 * are as they were (only memory can run out). */
int lgs_inproc_sort(const gs_sort_req *req, double *ms, gs_err *err);

#endif
