/* Running a sort of 8- or 16-bit keys (gs_narrow.h): the keys encoded into
 * u32 words on every core of the host pool, the words sorted with the
 * request's payload through a caller's function (the daemon's route: a
 * device, out of core, or the host sort), then decoded back over the keys.
 * Where any NaN key is not the canonical one, each NaN's bits and payload
 * element are saved in input order and written over the sorted NaN block,
 * as gs_keys_nan_save does for wider floats. The keys are read once to
 * encode (and NaNs' once more to save them) and written only after the
 * words' sort succeeded, so a failed run can be run again elsewhere unless
 * the sort touched values it permutes in place. A client that rewrites its
 * keys meanwhile gets a wrong answer, never an access out of bounds: what
 * the run does is decided by the words, which are the daemon's. Where the
 * route's algorithm sorts 16-bit keys itself (gs_narrow_fit: radix on a
 * device), 16-bit keys go to it as they lie, in their own order, with no
 * words (raw: only float keys are read first, for NaNs whose bits to put
 * back; a device's failed run may then have touched them), and 8-bit keys
 * as 16-bit codes. */
#ifndef GS_NARROW_SORT_H
#define GS_NARROW_SORT_H

#include <stddef.h>

#include "gs_narrow.h"
#include "gs_sort.h"

/* One sort of req (u32 words, 16-bit codes with half, the keys themselves
 * with raw; the request's payload; ascending, the descending order in the
 * encoding, but for raw keys). */
typedef int (*gs_narrow_fn)(void *arg, const gs_sort_req *req, gs_sort_stats *st,
                            gs_err *err);

typedef struct gs_narrow_job {
    int dt;             /* gs_narrow_dt; GS_NW_NONE: not a narrow sort */
    int desc;
    void *keys;         /* the n keys, sorted in place */
    uint32_t *words;    /* n words (the caller's scratch) */
    gs_sort_req req;    /* the words' sort: keys = words, the payload's values
                           where they lie, shape.dtype u32, ascending */
    int one_thread;     /* encode and decode on the caller's thread only */
    int half;           /* 8-bit keys: the words are 16-bit codes (req.shape.narrow
                           GS_NW_U16), for an algorithm that sorts those */
    int raw;            /* 16-bit keys: no words; the algorithm sorts the keys where
                           they lie in their own order (req.shape.narrow: their
                           type), the NaNs' bits saved here (gs_narrow_fit) */
    int counting;       /* keys without a payload, sorted here by counting their
                           codes (no words, fn not called): a caller on the host
                           route sets it; n reads and n writes beat any sort */
} gs_narrow_job;

/* jb for a request of n narrow keys of type dt at keys (shape: its payload,
 * order and stability; values: the payload's array) over words. */
void gs_narrow_job_init(gs_narrow_job *jb, int dt, const gs_shape *shape, size_t n, void *keys,
                        void *values, uint32_t *words);

/* Fit jb's sort to algorithm a (call before each run: a fallback's
 * algorithm may differ). Where a takes 16-bit keys (half_keys) and the
 * request is flat, whole (in_core_device: on a device, not cut into
 * pieces): 16-bit keys go to it as they are (raw: no encoding pass, the
 * device encodes and decodes them, and reads them from the client's
 * memory), 8-bit keys as 16-bit codes (half). Otherwise 32-bit words; an
 * algorithm that sorts by a bit range (a flat request) sorts the codes'
 * bits alone, 8 or 16 (one or two 8-bit passes of radix at any size).
 * Returns whether a takes them as 16-bit keys. */
int gs_narrow_fit(gs_narrow_job *jb, const gs_algo *a, int in_core_device);

/* Sort. st sums the words' sort's figures; st->pack_ms is the encoding's
 * and decoding's wall clock (counting: st->wall_ms is the whole sort's). */
int gs_narrow_run(const gs_narrow_job *jb, gs_narrow_fn fn, void *arg, gs_sort_stats *st,
                  gs_err *err);

/* Test hook: counting takes a worker per k keys per code (0: the default,
 * 8); returns the previous value. */
size_t gs_narrow_count_keys_per_code(size_t k);

#endif
