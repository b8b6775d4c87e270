/* Private to libgsort (libgsort/gsort*.c): the error-record helpers
 * (gsort_err.c) that every call reports through, the shared-memory side
 * (gsort_shm.c) that the sort calls use, and the connection and its helpers
 * (gsort.c) that the lexsort (gsort_lex.c) shares. Names here start with
 * lgs_, not gsort_, so that the library's export filter
 * (-export-symbols-regex '^gsort_') keeps them hidden. */
#ifndef GSORT_INT_H
#define GSORT_INT_H

#include <stddef.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_narrow.h"
#include "gs_paths.h"
#include "gs_sort.h"
#include "gs_types.h"
#include "gsort.h"

/* ---- key types: the one place a gsort_dtype becomes an internal type ----
 * The public numbers (include/gsort.h, an ABI) are not the internal ones:
 * the six wide types are gs_dtype's (gs_types.h), the 8- and 16-bit ones
 * gs_narrow_dt's (gs_narrow.h), which the daemon sorts as u32 words. */
#define LGS_DTYPES ((int)GSORT_BF16 + 1)    /* gsort_dtype's count */
typedef struct lgs_dt {
    gs_dtype dt;        /* the wide type; a narrow key's words: GS_DT_U32 */
    int narrow;         /* gs_narrow_dt; GS_NW_NONE for a wide type */
    unsigned bytes;     /* the key's width: 1, 2, 4 or 8 */
    const char *name;   /* "u32", "f16": the protocol's word */
} lgs_dt;

/* The row of a gsort_dtype, or NULL for a number outside the enum. */
static inline const lgs_dt *lgs_dt_of(int dtype)
{
    static const lgs_dt rows[LGS_DTYPES] = {
        [GSORT_U32] = { GS_DT_U32, GS_NW_NONE, 4, "u32" },
        [GSORT_I32] = { GS_DT_I32, GS_NW_NONE, 4, "i32" },
        [GSORT_F32] = { GS_DT_F32, GS_NW_NONE, 4, "f32" },
        [GSORT_U64] = { GS_DT_U64, GS_NW_NONE, 8, "u64" },
        [GSORT_I64] = { GS_DT_I64, GS_NW_NONE, 8, "i64" },
        [GSORT_F64] = { GS_DT_F64, GS_NW_NONE, 8, "f64" },
        [GSORT_U8] = { GS_DT_U32, GS_NW_U8, 1, "u8" },
        [GSORT_I8] = { GS_DT_U32, GS_NW_I8, 1, "i8" },
        [GSORT_U16] = { GS_DT_U32, GS_NW_U16, 2, "u16" },
        [GSORT_I16] = { GS_DT_U32, GS_NW_I16, 2, "i16" },
        [GSORT_F16] = { GS_DT_U32, GS_NW_F16, 2, "f16" },
        [GSORT_BF16] = { GS_DT_U32, GS_NW_BF16, 2, "bf16" },
    };
    return dtype >= 0 && dtype < LGS_DTYPES ? &rows[dtype] : NULL;
}

/* The key width a gsort_dtype's shapes are timed and announced by (the
 * daemon's info op: "key_bits"): a narrow key's words are 32 bits. */
static inline int lgs_dt_key_bits(int dtype)
{
    const lgs_dt *d = lgs_dt_of(dtype);
    return !d ? 0 : d->narrow ? 32 : (int)d->bytes * 8;
}

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
 * (dtype, values kind, descending, stable), lgs_shape's number for it; a
 * sort by a bit range (gsort_run_bits) has a twin of its shape, timed
 * apart, so that its times (a word per key made, then a stable sort) do
 * not move the plain sort's route. */
#define LGS_PLAIN_SHAPES (LGS_DTYPES * GS_PL_COUNT * 2 * 2)
#define LGS_SHAPES (2 * LGS_PLAIN_SHAPES)
typedef struct lgs_router lgs_router;
unsigned lgs_shape(int dtype, int values_kind, int descending, int stable);
/* The bit-range twin of a plain shape. */
static inline unsigned lgs_shape_bits(unsigned shape) { return shape + LGS_PLAIN_SHAPES; }
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
/* The same on up to `threads` threads of the host pool (the caller's
 * included; 0: the host sort's default, the machine's cores; 1:
 * lgs_inproc_sort). The result is the same on any number. */
int lgs_inproc_sort_threads(const gs_sort_req *req, unsigned threads, double *ms,
                            gs_err *err);
/* The same for 8- or 16-bit keys of gs_narrow_dt nw (req: their count,
 * keys, values and shape; shape.dtype is ignored): encoded into the n
 * words at `words` (the caller's scratch), the words sorted by
 * lgs_inproc_sort, decoded back, on this thread, as the daemon does
 * (gs_narrow_run). The arrays are as they were on failure. */
int lgs_inproc_narrow(int nw, const gs_sort_req *req, uint32_t *words, double *ms,
                      gs_err *err);
/* lgs_inproc_narrow on up to `threads` threads (as lgs_inproc_sort_threads). */
int lgs_inproc_narrow_threads(int nw, const gs_sort_req *req, uint32_t *words,
                              unsigned threads, double *ms, gs_err *err);

/* ---- the connection (gsort.c), shared with the lexsort (gsort_lex.c) ---- */
struct gsort_conn {
    gs_client *cl;          /* NULL while a lost connection could not be replaced */
    char path[GS_PATHS_SOCKET_MAX];
    double timeout_s;       /* gsort_set_timeout's, for a replacement too */
    char lost[256];         /* why the connection was lost, until one is made again */
    gs_client_shm stage;    /* the staging memfd; fd -1 until a sort needs it */
    int no_memfd;           /* memfds failed here: every later sort goes inline */
    void *heap;             /* the inline route's copy of the arrays (the local
                               route's copy of an argsort's keys) */
    size_t heap_cap;
    lgs_router *router;     /* the two routes' times (gsort_local.c) */
    int no_local;           /* GSORT_NO_LOCAL=1 at connect: never sort here */
    double xo_ms;           /* when the daemon's crossover was last asked (0: never) */
    uint64_t dev_from[LGS_SHAPES];  /* from the crossover: n from which a device takes a
                                       shape over (0: none), where rows go to the daemon */
};

/* The daemon's crossover per shape (its info op), asked again after this
 * long: a new plan (a tune, SIGHUP) or a device's measured defaults move
 * it. One round trip a while, on a call that would time a route anyway. */
#define LGS_XO_REFRESH_MS 10000.0

/* Hidden, not only unexported: gsort.c's calls may still inline them (-fPIC
 * would otherwise treat them as interposable), as when they were static. */
#define LGS_HIDDEN __attribute__((visibility("hidden")))

/* Replace a failed or daemon-closed connection before a request; 0 or GSORT_E*. */
LGS_HIDDEN int lgs_conn_ready(gsort_conn *c, gsort_error *err);
/* Grow the connection's heap copy (c->heap) to at least need bytes. */
LGS_HIDDEN int lgs_heap_reserve(gsort_conn *c, size_t need, gs_err *ge);
/* Room for a call's copy: the staging memfd, else the heap (*is_inl 1). */
LGS_HIDDEN int lgs_copy_space(gsort_conn *c, size_t need, int inl, char **base, int *is_inl,
                              gs_err *ge);
/* The caller's result from the daemon's reply r, timed from t0. */
LGS_HIDDEN void lgs_fill_result(gsort_result *res, const gs_client_result *r, int zero_copy,
                                double t0);
/* Every result field empty or 0, the device -1. */
LGS_HIDDEN void lgs_result_clear(gsort_result *res);
/* The result of a sort in this process (plan "local"); t0 < 0: untimed. */
LGS_HIDDEN void lgs_fill_local(gsort_result *res, double sort_ms, double t0);
/* Ask the daemon its crossover per shape and tell the router (failures ignored). */
LGS_HIDDEN void lgs_crossover_refresh(gsort_conn *c, double now);
/* The request checked before anything is sent or sorted (known dtype,
 * values kind and flags, an addressable size, arrays there, apart and
 * inside their gsort_alloc blocks); 0 or GSORT_E* with err filled. */
LGS_HIDDEN int lgs_check_request(const gsort_request *rq, gsort_error *err);
/* Whether the call may be sorted in this process at all. */
LGS_HIDDEN int lgs_local_allowed(const gsort_conn *c, const gsort_request *rq);

#endif
