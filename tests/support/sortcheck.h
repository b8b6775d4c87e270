/* Shared test code for every sort algorithm (issues 3 and 4 use the same
 * matrix): input generators for each distribution, an independent reference
 * (qsort on the total order, written without gs_keys), and checks of an
 * algorithm's output against it. Stable algorithms must match the reference
 * exactly (keys bit for bit, values/indices too); unstable ones must match
 * the keys and hold the same (key bits, value) pairs: a NaN's exact bit
 * pattern must stay beside its own value or index. */
#ifndef GS_SORTCHECK_H
#define GS_SORTCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gs_sort.h"

enum sc_dist {
    SC_RANDOM = 0, SC_SORTED, SC_REVERSED, SC_EQUAL, SC_FEW16, SC_SAWTOOTH,
    SC_FSPECIAL,   /* floats only: NaNs (both signs, payloads), +-0, +-inf, denormals mixed in */
    SC_NANMIX,     /* floats only: half NaNs, every one a distinct bit pattern (both signs,
                      quiet and signalling), half a few values (+-0, +-inf among them) */
    SC_DIST_COUNT
};

const char *sc_dist_name(int dist);

/* Fill keys (n elements of dtype t) with distribution `dist`, deterministic in seed. */
void sc_fill(gs_dtype t, int dist, void *keys, size_t n, uint64_t seed);
/* Fill u32/u64 values with arbitrary distinct-ish data (so mismatches show). */
void sc_fill_values(gs_payload p, void *values, size_t n, uint64_t seed);

/* A test case: owns the input copy, the reference result and the buffers the
 * algorithm sorts. */
typedef struct sc_case {
    gs_sort_req req;        /* keys/values point at the work buffers */
    void *in_keys, *in_vals;   /* original input */
    void *ref_keys, *ref_vals; /* reference output (stable) */
} sc_case;

/* Build a case (allocates); returns 0 or -1 on allocation failure. */
int sc_case_init(sc_case *c, gs_dtype t, gs_payload p, int descending, size_t n,
                 int dist, uint64_t seed);
/* Restore the work buffers to the input (to rerun with other parameters). */
void sc_case_reset(sc_case *c);
/* Compare the work buffers with the reference. `stable`: exact match needed;
 * otherwise keys must match (NaN positions: the same multiset of bit
 * patterns), (key bits, value) pairs be a permutation of the input's, and
 * indices a permutation pointing at input keys bit-equal to the output
 * keys beside them. Writes a description of the first mismatch into why.
 * Returns 1 if correct. */
int sc_case_verify(const sc_case *c, int stable, char *why, size_t whylen);
void sc_case_free(sc_case *c);

/* Float sorts from GS_NAN_DEVICE_MIN keys on with distinct NaN patterns,
 * for an algorithm that keeps NaN payloads on the device (keeps_nan): right
 * against the reference and kept there (stats.nans_on_device); below that
 * size left to the host; with only canonical NaNs nothing kept. One TAP
 * line each; returns failures. */
int sc_check_nan_device(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p);

/* Run the standard matrix (every dtype x order x payload x n x dist) for one
 * algorithm and parameter set, emitting one TAP line per (dtype, payload,
 * order) group with failures described in diagnostics. `sizes`/`nsizes` may
 * override the issue-3 n list (NULL: the full list). Returns failures. */
int sc_run_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p,
                  const size_t *sizes, size_t nsizes, const char *label);

/* Under the sanitizers (GSORT_TEST_SANITIZED set, tools/run-sanitizers)
 * sc_run_matrix runs sizes above this one distribution per group, a
 * different one in each group; elsewhere every case runs. Returns the old
 * threshold (by default 2^17). sc_run_sets thins every size of its extreme
 * sets (0 while they run); a test may do the same around its own. */
size_t sc_thin_from(size_t n);

/* A parameter set for sc_run_sets with the sizes to run it over. */
typedef struct sc_set {
    long v[4];              /* the algorithm's parameters, in a->params order (v[3] only
                               where it has a fourth: radix's lookback) */
    const size_t *sizes;
    size_t nsizes;
} sc_set;
#define SC_SIZES(list) (list), sizeof(list) / sizeof(list)[0]

/* The matrix for each set in turn (sc_run_matrix with `label`; thinned at
 * every size under the sanitizers, see sc_thin_from): wg_size
 * first lowered to cap_wg when cap_wg > 0; with `fit`, the set is then
 * fitted to the device (sc_fit_set) and the test bails out if check()
 * still refuses it. A diagnostic "<diag> I: S s" times each. Returns the
 * failures. */
int sc_run_sets(const gs_algo *a, gs_sort_ctx *ctx, const sc_set *sets, size_t nsets,
                long cap_wg, int fit, const char *label, const char *diag);

/* The device a device-algorithm test runs on: probes, picks
 * $GSORT_TEST_DEVICE (an index, or "gpu" for the first GPU; default 0),
 * opens it and describes it in a TAP diagnostic. Bails out (never skips)
 * when there is none: CI always has PoCL. `who` names the test in messages.
 * The list is returned in *devs / *ndev for gs_dev_free_list. */
gs_dev *sc_test_device(gs_dev **devs, size_t *ndev, const char *who);

/* One TAP check: a->check() refuses (dev, req, p) with `code` and a
 * message containing `needle`; `what` describes the case. */
void sc_expect_reject(const gs_algo *a, const gs_dev *dev, const gs_sort_req *req,
                      const gs_params *p, int code, const char *needle, const char *what);

/* Set p to exactly a's first three parameters, v0..v2 in a->params order
 * (every device algorithm has three; radix's fourth, lookback, may be left
 * out and then means 0). */
void sc_set3(const gs_algo *a, gs_params *p, long v0, long v1, long v2);

/* A made-up GPU-like device from dev: 1024 work-items per group, 48 KiB
 * of dedicated local memory, 132 compute units, 80 GiB of global memory
 * and 20 GiB allocations. */
gs_dev sc_gpu_like(const gs_dev *dev);

/* Shrink an extreme parameter set (with wg_size and elems_per_thread) to
 * one this device runs: halve elems_per_thread until check() accepts it
 * without a request (local memory; never on PoCL), then wg_size while a
 * one-key sort is refused with GS_EUNSUPPORTED (built kernels' work-group
 * limit: NVIDIA's OpenCL caps these at 256), then take back the largest
 * elems_per_thread that fits the smaller group. Diagnostics say what was
 * changed; *q is left as the set to test. */
void sc_fit_set(const gs_algo *a, gs_sort_ctx *ctx, gs_params *q);

/* SHA-256 of a file's bytes into out (GS_SHA256_LEN bytes); all zeros
 * when it cannot be read. Tests prove a file was left untouched with it. */
void sc_file_sha256(const char *path, uint8_t *out);

/* Rows (issue 38): `rows` sortcheck cases of `len` keys (input from dist,
 * seeds from seed), their inputs copied side by side into keys and vals
 * (rows * len elements each; vals unused without a payload). Bails out
 * when out of memory. Free with sc_rows_verify. */
sc_case *sc_rows_init(gs_dtype t, gs_payload pl, int desc, size_t rows, size_t len, int dist,
                      uint64_t seed, void *keys, void *vals);
/* With ok (the sort succeeded), check each row of keys and vals against its
 * case (stable: exactly), why saying which row failed and how; frees the
 * cases either way. Returns ok and'ed with every row's verdict. */
int sc_rows_verify(sc_case *c, size_t rows, size_t len, int stable, const void *keys,
                   const void *vals, int ok, char *why, size_t wl);
/* Rows (issue 38): sort `rows` rows of `len` keys (each row its own
 * sc_case, input from dist) as one request through a with parameters p
 * (NULL: the defaults), stable as a is, and check every row against its
 * own reference. 1: all right; else why says which row and how. */
int sc_rows_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, size_t rows, size_t len, int dist, char *why,
                  size_t wl);
/* sc_rows_check over every dtype x payload (keys_only: none) x order x
 * distribution, one TAP line per (dtype, payload) labelled `who`. Returns
 * the failing lines. */
int sc_rows_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, size_t rows,
                   size_t len, int keys_only, const char *who);

/* S + 1 offsets of S segments of random lengths in [0, maxlen]
 * (xorshift from seed); malloc'd, NULL when out of memory. */
uint64_t *sc_random_offsets(size_t S, unsigned maxlen, uint64_t seed);

/* Segments (issue 38): as sc_rows_init and sc_rows_verify, for S segments
 * of any lengths given by S + 1 offsets (0 first, n last): segment s is
 * its own case of offsets[s + 1] - offsets[s] keys. */
sc_case *sc_segs_init(gs_dtype t, gs_payload pl, int desc, const uint64_t *offsets, size_t S,
                      int dist, uint64_t seed, void *keys, void *vals);
int sc_segs_verify(sc_case *c, const uint64_t *offsets, size_t S, int stable, const void *keys,
                   const void *vals, int ok, char *why, size_t wl);
/* Segments: sort S segments (offsets as above, input from dist) as one
 * request (shape.segments) through a with parameters p, stable as a is,
 * and check each against its own reference. 1: right; else why says where. */
int sc_segs_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, const uint64_t *offsets, size_t S, int dist,
                  char *why, size_t wl);

/* sc_segs_check over every dtype x payload (keys_only: none) x order x
 * distribution, one TAP line per (dtype, payload) labelled `who`, as
 * sc_rows_matrix. Returns the failing lines. */
int sc_segs_matrix(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p,
                   const uint64_t *offsets, size_t S, int keys_only, const char *who);

/* Top-k (issue 38): the first k of each of `rows` rows of `len` keys
 * (input from dist) through a as one request (shape.topk); sorted and a
 * stable: exactly the stable reference's first k of each row (keys bit for
 * bit, values, indices); otherwise the same (key bits, value) pairs. The
 * rest of a row is not looked at. 1: right; else why says where. */
int sc_topk_check(const gs_algo *a, gs_sort_ctx *ctx, const gs_params *p, gs_dtype t,
                  gs_payload pl, int desc, size_t rows, size_t len, size_t k, int sorted,
                  int dist, char *why, size_t wl);

extern const size_t sc_std_sizes[];
extern const size_t sc_std_nsizes;

/* An IEEE half's bits as a double, written from the format (not from the
 * code under test): the reference for 16-bit float keys. */
double sc_half(uint32_t h);

/* The stable counting sort of n 16-bit keys `in` of narrow type t
 * (gs_narrow.h) by the bits under mask of their codes in order desc
 * (gs_narrow_enc): from[j] is the input position of the j-th; want[j] its
 * key, decoded from its code where mask is 0xffff (NaNs canonical, as a
 * device leaves them), else as it was. The reference for 16-bit keys on a
 * device. 0, or -1 out of memory. */
int sc_narrow_counting(int t, int desc, unsigned mask, const uint16_t *in, size_t n,
                       uint16_t *want, size_t *from);

#endif
