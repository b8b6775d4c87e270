/* libgsort: the C client library of gsortd, the OpenCL sort service.
 *
 * Connect to a running gsortd over its Unix socket and sort arrays in
 * place: plain sorts, argsorts and sorts of keys carrying values. Arrays are
 * handed to the daemon through shared memory (a sealed memfd) wherever the
 * system allows, so a sort costs no socket copy; memory from gsort_alloc is
 * sorted with no copy at all. Elsewhere the bytes travel inline on the
 * socket. Link with `pkg-config --cflags --libs gsort`.
 *
 * Every function returns 0 or a negative GSORT_E* code and, when given a
 * gsort_error, fills it with the code and a sentence saying what went
 * wrong. A connection serves one call at a time: use one per thread.
 * gsort_alloc/gsort_free may be called from any thread.
 *
 *     gsort_conn *c;
 *     gsort_error err;
 *     if (gsort_connect(&c, NULL, &err) < 0) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     uint32_t keys[] = {3, 1, 2};
 *     if (gsort_sort(c, GSORT_U32, keys, 3, 0, NULL, &err) < 0)
 *         fprintf(stderr, "%s\n", err.message);
 *     gsort_close(c);
 */
#ifndef GSORT_H
#define GSORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSORT_API_VERSION 1

/* ---- errors ---- */
enum {
    GSORT_OK = 0,
    GSORT_EINVAL = -1,       /* bad argument or request */
    GSORT_ENOMEM = -2,       /* out of memory (here or in the daemon) */
    GSORT_EDEVICE = -3,      /* the OpenCL device failed */
    GSORT_EIO = -4,          /* socket or shared-memory I/O failed (the next call reconnects) */
    GSORT_ENODEV = -5,       /* no such device */
    GSORT_EBUILD = -6,       /* a kernel failed to build */
    GSORT_ECORRUPT = -7,     /* a malformed message */
    GSORT_ETOOBIG = -8,      /* beyond a daemon or device limit */
    GSORT_EUNSUPPORTED = -9, /* a request the daemon cannot serve */
    GSORT_ENOTFOUND = -10,   /* no such algorithm, parameter, ... */
    GSORT_EWRONG = -11,      /* a result failed verification */
    GSORT_ENODAEMON = -12,   /* no gsortd listens on the socket (to connect or reconnect to) */
    GSORT_EPERM = -13,       /* the daemon does not serve this user (allow_uids/allow_gids) */
};

typedef struct gsort_error {
    int code;                /* GSORT_E*, 0 when nothing failed */
    char message[1024];      /* one sentence; a daemon-side error starts "gsortd: " */
} gsort_error;

/* Name of a code: "GSORT_ENODAEMON"; "GSORT_E?" for an unknown one. */
const char *gsort_strerror(int code);
/* The library's version, "0.1.0". */
const char *gsort_version(void);

/* ---- element types ---- */
typedef enum gsort_dtype {
    GSORT_U32 = 0, GSORT_I32, GSORT_F32, GSORT_U64, GSORT_I64, GSORT_F64,
    /* 8- and 16-bit keys: uint8_t, int8_t, uint16_t, int16_t, IEEE half
     * (1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (the top half of
     * a float: 1, 8, 7), the last two as their raw 2-byte words. Every sort
     * call takes them with any values (gsort_sort, gsort_argsort,
     * gsort_argsort32, gsort_sort_by_key, gsort_run), in the order and with
     * the NaN and zero rules below; not gsort_run_rows / gsort_sort_rows
     * with more than one row, gsort_run_segments or gsort_topk, which
     * answer GSORT_EUNSUPPORTED (the daemon serves none of them either).
     * The daemon encodes each key into a 32-bit word that keeps the order
     * and sorts the words (16-bit keys alone on a device: as they are);
     * the daemon plans them as one 16-bit key class, and its crossover
     * for that class applies (an older daemon's: the 32-bit one); a local
     * sort encodes, sorts and decodes the same way in this process, on
     * one thread. */
    GSORT_U8, GSORT_I8, GSORT_U16, GSORT_I16, GSORT_F16, GSORT_BF16
} gsort_dtype;

/* What travels with the keys (gsort_request.values_kind). */
typedef enum gsort_values {
    GSORT_VALUES_NONE = 0,
    GSORT_VALUES_U32,        /* 4-byte values, permuted with the keys */
    GSORT_VALUES_U64,        /* 8-byte values */
    GSORT_VALUES_IDX32,      /* argsort: filled with original indices, uint32_t */
    GSORT_VALUES_IDX64       /* argsort: uint64_t indices */
} gsort_values;

/* Flags for every sort call. */
enum {
    GSORT_DESCENDING = 1u << 0,   /* largest first */
    GSORT_STABLE = 1u << 1,       /* equal keys keep their input order */
    GSORT_INLINE = 1u << 2,       /* send the bytes on the socket, never shared memory */
    GSORT_SPLIT = 1u << 3,        /* weigh splitting over several devices at any size
                                     (res->plan is then "split" where it was split) */
    GSORT_NO_LOCAL = 1u << 4,     /* ask the daemon, never sort in this process */
    GSORT_UNSORTED = 1u << 5,     /* gsort_topk only: a row's k in any order */
};

/* Sorting in the calling process: below a size a round trip to gsortd
 * costs more than the whole sort, so a connection sorts small arrays
 * itself, with the daemon's own host sort (the result is the daemon's, bit
 * for bit). Under 256 keys always, and under the daemon's announced
 * crossover for the shape (info's "crossover": below it the daemon would
 * run the same sort on one thread; asked on the first timed call and every
 * 10 s after); above, it times both routes per request shape (dtype,
 * values, order, stability) and power-of-two size as it goes and takes the
 * faster, trying the slower now and then; never above 2^22 keys unless the
 * daemon's crossover lies past it. GSORT_NO_LOCAL, or GSORT_NO_LOCAL=1 in the environment when
 * gsort_connect runs, always asks the daemon; so does any call that names
 * an algorithm, params or a device, or passes GSORT_SPLIT. A local sort's
 * gsort_result says plan "local", algorithm "host", device -1, and its
 * time in sort_ms and total_ms (daemon_ms 0; under 256 keys total_ms is
 * sort_ms: the call around the sort costs some ten nanoseconds, less than
 * the clock reads that would time it). */

/* Order: integers by value; floats (f16 and bf16 too) -inf < ... < -0.0 <
 * +0.0 < ... < +inf < NaN, every NaN equal (as numpy puts them last), each
 * NaN's bit pattern kept. GSORT_DESCENDING reverses the order (NaNs
 * first); with GSORT_STABLE equal keys keep their input order in either
 * direction. */

/* ---- connections ---- */
typedef struct gsort_conn gsort_conn;

/* Connect to the daemon at `socket_path`. NULL: $GSORTD_SOCKET when set
 * and not empty, else $XDG_RUNTIME_DIR/gsortd.sock when that exists (not
 * for root), else the system daemon's /run/gsortd/gsortd.sock.
 * GSORT_ENODAEMON, naming the path, when nothing listens there (no socket
 * file, a stale one left by a killed daemon, or not a socket).
 *
 * A lost connection is made again, to the same path, at the start of the
 * next call, before anything is sent: one the daemon closed while it was
 * idle (it was stopped or restarted, or closed it after idle_timeout), or
 * one that failed (GSORT_EIO: a timeout, a daemon that died mid-call;
 * GSORT_ECORRUPT; a refused inline request over max_request_bytes). So
 * after a daemon restart the next call simply works. A call is never sent
 * twice: one that fails in flight returns its error, since the daemon may
 * have carried it out, and the call after it reconnects. When reconnecting
 * fails the call returns GSORT_ENODAEMON (nothing listens) or GSORT_EIO,
 * its message naming the socket and the first cause of the loss, and each
 * later call tries again. */
int gsort_connect(gsort_conn **out, const char *socket_path, gsort_error *err);
/* Close the connection and free what it holds, its staging memory
 * included (NULL is fine). */
void gsort_close(gsort_conn *c);
/* The socket the connection uses ("" for NULL). */
const char *gsort_socket_path(const gsort_conn *c);
/* Give up on a reply after `seconds` without progress (0, the default:
 * wait for ever). The call then fails with GSORT_EIO and the connection is
 * dropped (the next call reconnects). */
int gsort_set_timeout(gsort_conn *c, double seconds, gsort_error *err);

/* ---- zero-copy memory ----
 * Memory the daemon maps directly: keys (and values) lying inside one
 * gsort_alloc block, each array aligned to its element size, are sorted
 * where they are, with no copy. Any other memory works too, staged through
 * a per-connection shared buffer (one copy each way); so are argsort's keys,
 * which must not change. A block is zero-filled and cannot be resized. Where
 * the system has no memfds, gsort_alloc returns ordinary memory (sorted
 * inline). */
void *gsort_alloc(size_t bytes, gsort_error *err);    /* NULL on failure */
/* Only pointers gsort_alloc returned; NULL and any other pointer are
 * ignored. Not while a sort on the block is in flight. */
void gsort_free(void *ptr);

/* ---- sorting ---- */

/* What the daemon said about a sort. */
typedef struct gsort_result {
    int device;              /* device index, -1: the host sort */
    char device_name[256];
    char algorithm[32];      /* "radix", "mergepath", "shellsort", "bitonic", "host",
                                "vqsort" */
    char params[512];        /* "name=value,..." */
    char plan[32];           /* "tuned", "default", "override", "busy", "fallback", "split";
                                "local": sorted in this process, not by the daemon */
    char fallback[512];      /* why the first choice failed; "" if it did not */
    int zero_copy;           /* 1: shared memory (in place or staged), 0: inline bytes */
    double queue_ms, upload_ms, sort_ms, download_ms;   /* in the daemon */
    double daemon_ms;        /* the daemon's whole time on the request */
    double total_ms;         /* the whole call as the caller sees it */
} gsort_result;

/* Sort n keys in place. n = 0 is fine (keys may then be NULL). A request
 * the daemon refuses keeps the connection, except an inline one above the
 * daemon's max_request_bytes, after which the daemon closes it (the next
 * call reconnects). On failure the caller's arrays are left as they were; only
 * when a gsort_alloc block was being sorted in place and the connection
 * failed (GSORT_EIO: a timeout, a daemon that died) may the block hold part
 * of the result, or receive it later. */
int gsort_sort(gsort_conn *c, gsort_dtype dtype, void *keys, size_t n, unsigned flags,
               gsort_result *res, gsort_error *err);

/* idx[i] := the position in keys of the i-th key in sorted order; the keys
 * are left as they are. gsort_argsort32 needs n <= UINT32_MAX. With
 * GSORT_STABLE equal keys are listed in input order. */
int gsort_argsort(gsort_conn *c, gsort_dtype dtype, const void *keys, size_t n, uint64_t *idx,
                  unsigned flags, gsort_result *res, gsort_error *err);
int gsort_argsort32(gsort_conn *c, gsort_dtype dtype, const void *keys, size_t n,
                    uint32_t *idx, unsigned flags, gsort_result *res, gsort_error *err);

/* Sort keys in place and permute values (value_size 4 or 8 bytes each, any
 * contents) with them. */
int gsort_sort_by_key(gsort_conn *c, gsort_dtype dtype, void *keys, void *values,
                      size_t value_size, size_t n, unsigned flags, gsort_result *res,
                      gsort_error *err);

/* The general form the calls above are built on. */
typedef struct gsort_request {
    gsort_dtype dtype;
    size_t n;
    void *keys;              /* sorted in place */
    gsort_values values_kind;
    void *values;            /* n values (in and out) or indices (out); NULL for NONE */
    unsigned flags;          /* GSORT_DESCENDING | GSORT_STABLE | GSORT_INLINE | GSORT_SPLIT |
                                GSORT_NO_LOCAL */
    const char *algorithm;   /* NULL or "auto": the daemon's plan; else force one */
    const char *params;      /* with an algorithm: "name=value,..." (a name left
                                out takes its default) or NULL */
    int device;              /* device index to force, -1: any */
} gsort_request;

/* Fill rq with defaults: u32 keys, no values, no flags, the daemon's
 * plan, any device. */
void gsort_request_init(gsort_request *rq);
int gsort_run(gsort_conn *c, const gsort_request *rq, gsort_result *res, gsort_error *err);

/* Sort rq in this process with the daemon's host sort, without a
 * connection or a daemon: what a call that sorts locally does (the result
 * is the daemon's bit for bit), for a program that keeps its own route to
 * the daemon (the Python client). Any dtype and values kind, sorted in
 * place as gsort_run sorts it; rows > 1: the n keys are that many equal
 * rows, each sorted on its own as gsort_run_rows sorts them (argsort
 * indices from 0 within the row; rows that do not divide n are
 * GSORT_EINVAL); flags GSORT_DESCENDING and GSORT_STABLE only, and no
 * algorithm (but NULL, "auto" or "host"), params or device, else
 * GSORT_EINVAL. threads: 1, the calling thread alone; 0, the machine's
 * cores (a flat array from two chunks of 2^18 keys, rows in batches of
 * about 16K keys); N, at most N. Helper threads are started in this
 * process on first need, shared by every call, asleep when idle (a child
 * after fork() starts its own). res (may be NULL) says plan "local",
 * algorithm "host", device -1. GSORT_ENOMEM when the sort's scratch
 * cannot be had, the arrays then as they were. */
int gsort_local_run(const gsort_request *rq, size_t rows, unsigned threads,
                    gsort_result *res, gsort_error *err);

/* Rows: the n keys (and values) are `rows` equal rows of n / rows, laid
 * out one after another, and each row is sorted on its own, as a 2-D
 * array along its last axis (argsort indices count from 0 within each
 * row). rows of 0 or 1 is gsort_run; rows that do not divide n are
 * GSORT_EINVAL. Rows are sorted in this process's host sort whenever the
 * call may sort locally and the daemon would use the same sort (after two
 * copies); from the size at which its info announces a device for the
 * shape (a GPU sorts every row in one launch), and whenever the call may
 * not sort locally, by the daemon. 8- and 16-bit keys (GSORT_U8 ..
 * GSORT_BF16) in rows too, each row's NaN bit patterns kept in it. */
int gsort_run_rows(gsort_conn *c, const gsort_request *rq, size_t rows, gsort_result *res,
                   gsort_error *err);
/* Segments: the n keys (and values) are `segments` segments of any
 * lengths, laid out one after another and each sorted on its own (CUB's
 * segmented sort): offsets holds segments + 1 offsets, offsets[0] == 0,
 * never decreasing, offsets[segments] == n; segment s is keys
 * [offsets[s], offsets[s + 1]) and may be empty. Argsort indices count
 * from 0 within each segment; order, stability and NaN rules are
 * gsort_run's, segment by segment. Offsets that break a rule, no
 * segments, or NULL offsets are GSORT_EINVAL before anything is written.
 * Segments are sorted in this process's host sort whenever the call may
 * sort locally (the daemon sorts them on its host too), else by the
 * daemon, the offsets copied to it with the arrays (a named device sorts
 * them all in one launch of its bitonic sort where the longest fits a
 * work-group, else, as a named algorithm other than bitonic or host does,
 * one segment after another). 8- and 16-bit keys too. */
int gsort_run_segments(gsort_conn *c, const gsort_request *rq, const uint64_t *offsets,
                       size_t segments, gsort_result *res, gsort_error *err);
/* A bit range (CUB's begin_bit/end_bit): the n keys are sorted by bits
 * [begin_bit, end_bit) of each key's order code alone, bit 0 the lowest:
 * for GSORT_U32 and GSORT_U64 the key itself, for GSORT_I32 and GSORT_I64
 * the key with its sign bit flipped (so that the code's order is the
 * values'), and with GSORT_DESCENDING the code inverted (every bit of the
 * key's width) before the range is taken, so the keys come descending by
 * the range. Keys equal within the range keep their input order: the
 * sort is always stable, GSORT_STABLE or not. Any values kind (none,
 * GSORT_VALUES_U32/U64 carried along, IDX32/IDX64 indices), routed as
 * gsort_run's (in this process or by the daemon; a call with a range is
 * timed apart from the plain sort of its shape). 0 <= begin_bit < end_bit
 * <= the key's bits (32 or 64), else GSORT_EINVAL; 0 and the key's bits
 * is gsort_run. Keys of other types (floats, 8- and 16-bit keys) are
 * GSORT_EUNSUPPORTED; both before anything is sent or written. */
int gsort_run_bits(gsort_conn *c, const gsort_request *rq, unsigned begin_bit,
                   unsigned end_bit, gsort_result *res, gsort_error *err);
/* gsort_run_rows of `rows` rows of row_len keys, without values. */
int gsort_sort_rows(gsort_conn *c, gsort_dtype dtype, void *keys, size_t rows, size_t row_len,
                    unsigned flags, gsort_result *res, gsort_error *err);

/* ---- top-k ----
 * The first k keys of each row in the call's order, the k smallest (with
 * GSORT_DESCENDING the k largest), exactly as a stable sort of the row
 * lists them (of keys tied at the k-th, the earliest), with their values
 * (GSORT_VALUES_U32/U64: rq->values, carried along) or their positions in
 * the row (GSORT_VALUES_IDX32/IDX64). rq->keys and rq->values are left as
 * they are; the rows * k answers go to out_keys and out_values (NULL
 * without values), row after row. rows of 0 or 1: one array of rq->n keys;
 * rows that do not divide rq->n, or k above a row's length, are
 * GSORT_EINVAL; k of 0 answers nothing. GSORT_UNSORTED: a row's k in any
 * order. Found by a radix select that reads every key once or twice and
 * sorts only k of them: in this process on one thread below
 * GSORT_TOPK_LOCAL_MAX keys (as for gsort_sort, a call that may sort
 * locally), else by the daemon on its host cores (or, for a call that
 * names a device or an algorithm, by that one's whole sort). 8- and
 * 16-bit keys too (their order-keeping words selected, NaN bit patterns
 * kept). */
#define GSORT_TOPK_LOCAL_MAX ((size_t)1 << 22)
int gsort_topk(gsort_conn *c, const gsort_request *rq, size_t rows, size_t k, void *out_keys,
               void *out_values, gsort_result *res, gsort_error *err);

/* ---- lexsort ----
 * The indices that order n rows by several keys: keys[0] is the primary
 * key (note: np.lexsort lists the primary last), keys[1] breaks its ties,
 * and so on; rows equal on every key keep their order (stable). Each key
 * is an array of n elements of its own type, ascending or descending:
 * bool (one byte, any nonzero is true), 8-, 16-, 32- and 64-bit integers,
 * IEEE half, float and double (-0.0 equal to +0.0, every NaN one key after
 * +inf; descending: first). 1 to GSORT_LEX_MAX_KEYS keys; idx_kind
 * GSORT_VALUES_IDX32 (n <= 2^32) or GSORT_VALUES_IDX64, and idx holds n
 * of them. The keys are left as they are. Flags: GSORT_INLINE,
 * GSORT_NO_LOCAL. The daemon packs the keys into 32- or 64-bit words on
 * its host cores (keys wider than 64 bits together in several words,
 * sorted one after another) and sorts the words stably where its plan
 * says; small calls are sorted in this process, as gsort_argsort's. */
#define GSORT_LEX_MAX_KEYS 8
typedef enum gsort_lex_type {
    GSORT_LEX_BOOL = 0, GSORT_LEX_U8, GSORT_LEX_I8, GSORT_LEX_U16, GSORT_LEX_I16,
    GSORT_LEX_F16, GSORT_LEX_U32, GSORT_LEX_I32, GSORT_LEX_F32, GSORT_LEX_U64,
    GSORT_LEX_I64, GSORT_LEX_F64
} gsort_lex_type;
typedef struct gsort_lexkey {
    gsort_lex_type type;
    const void *keys;        /* n elements of type (NULL only when n is 0) */
    int descending;          /* 1: this key largest first */
} gsort_lexkey;
int gsort_lexsort(gsort_conn *c, const gsort_lexkey *keys, size_t nkeys, size_t n, void *idx,
                  gsort_values idx_kind, unsigned flags, gsort_result *res, gsort_error *err);

/* ---- the daemon ---- */

/* Round trip of an empty request, in milliseconds (rtt_ms may be NULL). */
int gsort_ping(gsort_conn *c, double *rtt_ms, gsort_error *err);
/* The daemon's "info" (version, devices, limits) or "stats" (counters)
 * reply header as indented JSON text, man gsort-protocol(7); free() it. */
int gsort_info(gsort_conn *c, char **json, gsort_error *err);
int gsort_stats(gsort_conn *c, char **json, gsort_error *err);

#ifdef __cplusplus
}
#endif

#endif
