/* NaN payloads kept on the device, for stable device algorithms (radix,
 * mergepath): the device twin of gs_keys_nan_save/_restore (gs_keys.h),
 * with the kernels in kernels/keys.cl. Before the sort the NaNs' bit
 * patterns are saved in input order into a device buffer; after it they
 * are copied over the sorted NaN block on the device, so a float sort
 * reads no key on the host (issue 16: floats no slower than integers). A
 * stable sort leaves the values of that block in input order already, so
 * only the keys' bits need restoring. gs_sort_run skips the host scan for
 * an algorithm with keeps_nan set whenever gs_keys_nan_on_device says the
 * device does it. */
#ifndef GS_CLNAN_H
#define GS_CLNAN_H

#include "gs_clrun.h"
#include "gs_types.h"

typedef struct gs_clnan {
    size_t count;       /* NaNs saved (0: none, or all canonical) */
    cl_mem saved;       /* their bit patterns in input order (a gs_clrun buffer) */
    cl_uint *hoff;      /* per-tile counts, then offsets (host copy) */
} gs_clnan;

/* Save the NaN bit patterns of the n keys of req in device buffer `keys`
 * (raw, not yet encoded) with kernels of `prog` (built with -DWG=wg and
 * keys.cl). A no-op (count 0) unless gs_keys_nan_on_device(req) and some
 * NaN is not canonical. Its launches leave r->touched as it was: they only
 * read the keys. */
int gs_clnan_save(gs_clrun *r, cl_program prog, size_t wg, cl_mem keys, const gs_sort_req *req,
                  gs_clnan *s, gs_err *err);
/* Enqueue the copy of the saved patterns over the NaN block of `sorted`
 * (the last count keys ascending, the first descending). */
int gs_clnan_restore(gs_clrun *r, const gs_clnan *s, cl_mem sorted, const gs_sort_req *req,
                     gs_err *err);
/* Free the host copy (the device buffer goes with gs_clrun_release);
 * call after the queue has finished (gs_clrun_release waits for it). */
void gs_clnan_free(gs_clnan *s);

#endif
