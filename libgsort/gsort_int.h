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

#endif
