/* gs_algo_host: a stable LSD radix sort on the host CPU, for every dtype,
 * payload and order, on every core. It is the fallback when no device is
 * usable and the baseline the device algorithms are measured against.
 * Keys are encoded in place (gs_keys.h) so one unsigned sort serves all
 * dtypes and both orders. The input is cut into contiguous chunks; one
 * parallel read pass encodes each chunk and counts the digits of every
 * pass in it, which also shows which passes can be skipped (every key has
 * the same digit); each remaining pass then scatters every chunk from
 * offsets prefixed over (digit, chunk), so the result is stable and the
 * same whatever the number of chunks or of threads running them (those
 * come from the shared pool, gs_hostpool.h). Keys and values ping-pong
 * between the caller's buffers and one scratch buffer each. Tiny inputs
 * use insertion sort. Past the cache (msd=1, the default) only the top
 * digit's pass runs over the whole array, through line buffers of
 * top_lines cache lines a bucket; its buckets, each small enough to stay
 * in a core's cache, are then sorted one per task with digits of up to 11
 * bits, straight back into the caller's arrays (whose lines are fetched
 * while the bucket is counted; msd=2: streamed out of the worker's
 * buffers): two trips through memory instead of one per digit. Tunables:
 * threads (chunks, at most; small inputs stay on one), radix_bits (0: by
 * n), msd, top_bits (0: by size and the L2) and top_lines.
 * The caller's arrays may be a client's shared memory, which it can
 * rewrite at any moment (issue 32), so no position comes from keys read
 * there twice: below the cache the keys are copied as they are encoded
 * and counted, and every pass reads private memory with exact counts;
 * past it a pass that reads the caller's keys keeps its writes inside the
 * destination whatever they hold and checks its cursors against its
 * counts, stopping the sort with gs_err_raced when they differ; a
 * bucket's passes read only the scratch and the worker's buffers.
 * A request of equal rows comes whole (rows = 1) and goes to host_rows.c,
 * which sorts many short rows side by side in scratch of each worker's;
 * so that it keeps each row's NaN bit patterns in that row, the host sort
 * says keeps_bits and saves and restores them itself around a flat sort
 * (host_flat_nans), which gs_sort_run did before. */
#include "config.h"
#include "gs_algos.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_log.h"
#include "gs_time.h"
#include "gs_scratch.h"
#include "gs_keys.h"
#include "host_rows.h"

/* An msd bucket this small is insertion-sorted instead of taking its
 * passes: at 64 keys 1.7x (u32) to 3.6x (u64) as many a second as the
 * radix passes; at 128 they are even (2-core machine, gsort-bench). */
#define HOST_SMALL_N 96
/* A whole sort of up to this many keys per byte of key width (64 32-bit
 * keys, 128 64-bit) is an insertion sort, above it the small sort's passes
 * (host_small; in process, median of 4,001 runs, 2-core machine: u32 80
 * and 96 keys 1.16 and 1.66 us by insertion, 112 by the passes 1.14; u64
 * 112 and 128 by the passes 1.94 and 2.09, by insertion 96 keys 1.43). */
#define HOST_ISORT_PER_BYTE 16
/* Up to this many keys per byte of key width (1024 32-bit keys, 2048
 * 64-bit) one thread sorts without the job's machinery (no chunks, no
 * scratch cache, histograms on the stack: host_small): in the time of
 * 0.6-0.8x of the job's one-thread path at 128 to 512 keys, 0.85-0.92x for
 * 64-bit keys at 1024 to 2048, even for 32-bit keys from 1024 (2-core
 * machine, gsort-bench, three rounds in turns). */
#define HOST_LSD_SMALL_PER_BYTE 256
/* radix_bits=0: 8-bit digits while the data is small (histograms and the
 * scatter targets stay in L1); 11-bit digits for large n (3 passes
 * instead of 4 for 32-bit keys, 6 instead of 8 for 64-bit). */
#define HOST_WIDE_N 65536
#define HOST_MAX_BITS 16
#define HOST_MAX_THREADS (GS_HOSTPOOL_MAX + 1)
/* The default thread count, at most: past it a sort is bound by memory. */
#define HOST_DEFAULT_THREADS 64
/* Keys per chunk, at least: below it handing chunks to a helper costs
 * more than it saves (measured on 2 cores: 2 threads lose up to 2^17 keys,
 * break even around 2^18, win 1.5x from 2^19). */
#define HOST_MT_MIN_CHUNK 262144
/* Once the keys no longer fit the last-level cache, scatter through one
 * cache line of buffer per bucket and write full lines with non-temporal
 * stores: it avoids reading every destination line before writing it.
 * Slower below (the next pass would have found the data in cache). With
 * 2^16 buckets the buffers outgrow the L2 but still beat scattering
 * straight (2^24 keys: 112 against 138 ms). */
#define HOST_WC_BYTES ((size_t)6 << 20)
/* Without the line buffers, up to this many bytes of keys and values are
 * copied as the keys are encoded and counted, and every pass reads private
 * memory with exact counts (a client may rewrite its keys at any time,
 * issue 32); only the last pass writes the caller's arrays. Larger ones
 * (and keys not aligned to their size past the cache) ping-pong through
 * the caller's arrays with every cursor clamped. Measured on the 2-core
 * machine, one thread, against the sort before issue 32: the clamp costs
 * 2 instructions a key a pass, +17 to +19% for keys alone (u32 1.2M to
 * 1.5M keys, u64 640K), +2 to +9% with values (u32 + u32 600K to 1M); the
 * copy +2 to +12% for keys alone up to 5 MiB (u32 512K to 1.35M), +31% at
 * 5.7 MiB, where a third array no longer stays in the cache, and with
 * values +10 to +14% at 8 MiB (u32 + u32 1M). */
#define HOST_COPY_BYTES ((size_t)5 << 20)
#define HOST_WC_MAX_BITS 16
#define HOST_LINE 64
/* msd=1: a bucket of the top digit is sorted by one worker while it stays
 * in its cache (L2, or its share of the L3), so at most this big;
 * otherwise the plain LSD passes run. */
#define HOST_MSD_BUCKET_BYTES ((size_t)4 << 20)
/* ... and by default about this big (top_bits_for) */
#define HOST_MSD_BUCKET_AIM ((size_t)64 << 10)
/* The top pass's line buffers take at most half a core's L2 (by default;
 * 512 KiB where the L2's size is not known). */
#define HOST_TOP_LINES_DEFAULT ((size_t)512 << 10)
/* Digit bits inside a bucket: 2 passes for the 22 bits below a 32-bit
 * key's top digit, 5 for a 64-bit key's 55; the 2048 counters and targets
 * stay in L1/L2 with the bucket. */
#define HOST_BB 11
#define HOST_BB_MAXP ((64 + HOST_BB - 1) / HOST_BB)
#define HOST_BB_STRIDE (1 << HOST_BB)   /* counters per pass */
/* Encode and count in blocks that stay in L1 between the two. */
#define HOST_BLOCK 2048

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HOST_HAVE_NT 1
static inline void nt_u32(uint32_t *p, uint32_t v) { _mm_stream_si32((int *)p, (int)v); }
static inline void nt_u64(uint64_t *p, uint64_t v) { _mm_stream_si64((long long *)p, (long long)v); }
static inline void nt_fence(void) { _mm_sfence(); }
/* The first 48 bytes of a line out of an aligned line buffer, to a
 * 16-byte aligned place. The last 16, just written one element at a time,
 * are read back at the elements' size (NT_STORE): a wider load could not
 * be forwarded from those stores. */
static inline void nt_head(void *dst, const void *src)
{
    const __m128i *s = src;
    __m128i *d = dst;
    _mm_stream_si128(d, _mm_load_si128(s));
    _mm_stream_si128(d + 1, _mm_load_si128(s + 1));
    _mm_stream_si128(d + 2, _mm_load_si128(s + 2));
}
/* A whole line out of a line buffer written long enough ago. */
static inline void nt_whole(void *dst, const void *src)
{
    nt_head(dst, src);
    _mm_stream_si128((__m128i *)dst + 3, _mm_load_si128((const __m128i *)src + 3));
}
/* Copy a sorted bucket out of a worker's buffer with streaming stores:
 * its place in the caller's arrays is then never read (msd=2). */
static void nt_copy(void *dst, const void *src, size_t bytes)
{
    char *d = dst;
    const char *s = src;
    size_t i = 0;
    while (i < bytes && ((uintptr_t)(d + i) & 15))
        d[i] = s[i], i++;
    for (; i + 16 <= bytes; i += 16)
        _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
    memcpy(d + i, s + i, bytes - i);
    _mm_sfence();
}
#else
#define HOST_HAVE_NT 0
static inline void nt_u32(uint32_t *p, uint32_t v) { *p = v; }
static inline void nt_u64(uint64_t *p, uint64_t v) { *p = v; }
static inline void nt_fence(void) { }
static inline void nt_head(void *dst, const void *src) { memcpy(dst, src, HOST_LINE - 16); }
static inline void nt_whole(void *dst, const void *src) { memcpy(dst, src, HOST_LINE); }
static void nt_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
#endif
static inline void nt_none(char *p, char v) { *p = v; }
#define NT_STORE(p, v) _Generic((p), uint32_t *: nt_u32, uint64_t *: nt_u64, char *: nt_none)(p, v)

static size_t min_chunk = HOST_MT_MIN_CHUNK;
static size_t past_cache = HOST_WC_BYTES;
static size_t copy_max = HOST_COPY_BYTES;
static gs_race_hook race_hook;
static void *race_arg;

void gs_host_force_race(gs_race_hook fn, void *arg)
{
    race_hook = fn;
    race_arg = arg;
}

/* The test hook's call, at a point where a racing client could write. */
static inline void race_point(int at, size_t lo, size_t hi)
{
    if (race_hook)
        race_hook(race_arg, at, lo, hi);
}

size_t gs_host_force_past_cache(size_t bytes)
{
    size_t old = past_cache;
    past_cache = bytes ? bytes : HOST_WC_BYTES;
    return old;
}

size_t gs_host_force_copy_max(size_t bytes)
{
    size_t old = copy_max;
    copy_max = bytes ? bytes : HOST_COPY_BYTES;
    return old;
}

size_t gs_host_force_min_chunk(size_t keys)
{
    size_t old = min_chunk;
    min_chunk = keys ? keys : HOST_MT_MIN_CHUNK;
    return old;
}

size_t gs_host_mt_min_keys(void)
{
    return 2 * min_chunk;
}

/* ---- parameters ---- */

enum { P_THREADS = 0, P_BITS, P_MSD, P_TOP, P_LINES, P_COUNT };

static size_t values_bits(const gs_dev_info *info, long *out, size_t cap)
{
    static const long bits[] = { 0, 8, 11, 16 };
    (void)info;
    return gs_values_list(bits, sizeof bits / sizeof bits[0], out, cap);
}

static size_t values_msd(const gs_dev_info *info, long *out, size_t cap)
{
    static const long v[] = { 0, 1, 2 };
    (void)info;
    return gs_values_list(v, 3, out, cap);
}

static size_t values_top(const gs_dev_info *info, long *out, size_t cap)
{
    static const long v[] = { 0, 8, 10, 12, 14 };
    (void)info;
    return gs_values_list(v, sizeof v / sizeof v[0], out, cap);
}

static size_t values_lines(const gs_dev_info *info, long *out, size_t cap)
{
    static const long v[] = { 1, 2, 4 };
    (void)info;
    return gs_values_list(v, sizeof v / sizeof v[0], out, cap);
}

static const gs_param_def host_params[P_COUNT] = {
    { "threads", "chunks sorted in parallel, at most (each of 262144 keys or more; "
      "threads beyond the free helpers of the shared pool take turns)", gs_values_threads, 1 },
    { "radix_bits", "bits per digit, 1..16 (0: 8 below 65536 keys, 11 from there)",
      values_bits, 0 },
    { "msd", "1: past the cache, the top digit first, then each of its buckets sorted "
      "whole in cache by one thread (keys skewed into one big bucket: plain LSD); 2: the "
      "same, each bucket sorted between two buffers of the thread's and streamed out (never "
      "reads its place in the output: less memory traffic, more work); 0: LSD passes only",
      values_msd, 0 },
    { "top_bits", "msd: bits of the top digit, 4..16 (0: by size, for buckets of about "
      "64 KiB)", values_top, 0 },
    { "top_lines", "msd: cache lines buffered per bucket in the top pass, 1, 2 or 4 (more: "
      "longer runs of streaming stores to one place in memory, fewer flushes; fewer top "
      "digit bits by default)", values_lines, 0 },
};

static long default_threads(void)
{
    long c = (long)gs_hostpool_cpus();
    return c < HOST_DEFAULT_THREADS ? c : HOST_DEFAULT_THREADS;
}

/* The set's values into v, a parameter left out taking its default. */
static int get_params(const gs_params *p, long v[P_COUNT], gs_err *err)
{
    v[P_THREADS] = default_threads();
    v[P_BITS] = 0;
    v[P_MSD] = 1;
    v[P_TOP] = 0;
    v[P_LINES] = 4;
    for (int i = 0; p && i < p->count; i++) {
        size_t k = 0;
        while (k < P_COUNT && strcmp(p->p[i].name, host_params[k].name) != 0)
            k++;
        if (k == P_COUNT)
            return gs_err_set(err, GS_EUNSUPPORTED, "host: unknown parameter '%s' (known: "
                              "threads, radix_bits, msd, top_bits, top_lines)", p->p[i].name);
        v[k] = p->p[i].value;
    }
    if (v[P_THREADS] < 1 || v[P_THREADS] > HOST_MAX_THREADS)
        return gs_err_set(err, GS_EUNSUPPORTED, "host: threads=%ld out of range 1..%d",
                          v[P_THREADS], HOST_MAX_THREADS);
    if (v[P_BITS] < 0 || v[P_BITS] > HOST_MAX_BITS)
        return gs_err_set(err, GS_EUNSUPPORTED, "host: radix_bits=%ld out of range 1..%d "
                          "(or 0: by n)", v[P_BITS], HOST_MAX_BITS);
    if (v[P_TOP] != 0 && (v[P_TOP] < 4 || v[P_TOP] > HOST_WC_MAX_BITS))
        return gs_err_set(err, GS_EUNSUPPORTED, "host: top_bits=%ld out of range 4..%d (or "
                          "0: by size)", v[P_TOP], HOST_WC_MAX_BITS);
    if (v[P_LINES] != 1 && v[P_LINES] != 2 && v[P_LINES] != 4)
        return gs_err_set(err, GS_EUNSUPPORTED, "host: top_lines=%ld is not 1, 2 or 4",
                          v[P_LINES]);
    if (v[P_MSD] < 0 || v[P_MSD] > 2)
        return gs_err_set(err, GS_EUNSUPPORTED, "host: msd=%ld is not 0, 1 or 2", v[P_MSD]);
    return 0;
}

static int host_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p,
                      gs_err *err)
{
    long v[P_COUNT];
    (void)dev;
    (void)req;
    return get_params(p, v, err);
}

static void host_defaults(const gs_dev_info *info, gs_params *out)
{
    (void)info;
    gs_params_clear(out);
    gs_params_set(out, "threads", default_threads());
    gs_params_set(out, "radix_bits", 0);
    gs_params_set(out, "msd", 1);
    gs_params_set(out, "top_bits", 0);
    gs_params_set(out, "top_lines", 4);
}

/* ---- the sort ---- */

typedef struct hjob hjob;

enum { COUNT_ALL, COUNT_TOP, COUNT_AGAIN };

/* One shape's (key width, value width) tasks. */
typedef struct hops {
    void (*count)(hjob *j, size_t c);
    void (*recount)(hjob *j, size_t c);
    void (*scatter)(hjob *j, size_t c, unsigned worker);
    void (*bucket)(hjob *j, size_t lo, size_t hi, uint32_t *h, void *tk, void *tv);
} hops;

struct hjob {
    const hops *ops;
    gs_dtype dtype;
    int descending, argsort;
    size_t n, kw, vw;
    size_t nchunks, chunk;      /* chunk c: [c * chunk, min(n, (c + 1) * chunk)) */
    unsigned bits, passes;
    size_t nb;                  /* 1 << bits */
    uint32_t *hist;             /* nchunks x passes x nb digit counts */
    size_t *off;                /* nchunks x nb: this pass's next position */
    int wc;                     /* scatter through the line buffers below */
    void **wck, **wcv;          /* per worker, per bucket: wcl lines of keys, as many values */
    unsigned wcl;               /* this pass's lines per bucket buffer */
    unsigned top_lines;         /* the top pass's (top_lines) */
    size_t **beg;               /* per worker, per bucket: where its range starts */
    void *k, *v, *ks, *vs;      /* the caller's arrays and the scratch */
    /* small inputs without line buffers (copied): a private copy of the
     * encoded keys, the argsort indices, and a second values scratch; every
     * pass then reads memory no client can write, so its counts hold */
    int copied;
    void *snap, *vsnap;
    int plain;                  /* the caller's keys were never encoded in place */
    /* this pass */
    const void *sk, *sv;
    void *dk, *dv;
    unsigned sh;
    int moved;                  /* the result is in the scratch */
    /* most significant digit first (host_msd_fits): the top pass scatters
     * into buckets, each then sorted whole by one worker in cache */
    int msd;                    /* allowed */
    int msd_stream;             /* msd=2: buckets sorted between two worker buffers */
    unsigned bb, bnp;           /* a bucket's digit bits and passes */
    int count_mode;             /* COUNT_ALL, COUNT_TOP, COUNT_AGAIN: what task_count does */
    unsigned tsh;               /* the top digit: keys >> tsh, tnb values */
    size_t tnb;
    uint32_t *thist;            /* nchunks x 4 x tnb top digit counts (the first of
                                   each chunk's four tables: the sum) */
    size_t *bstart;             /* tnb + 1 bucket bounds after the top pass */
    void *wblock;               /* the workers' tables below, in one scratch block */
    size_t wblock_bytes;
    uint32_t **bh;              /* per worker: a bucket's digit counts */
    void **btk, **btv;          /* per worker: a bucket's keys and values between passes */
};

static size_t chunk_lo(const hjob *j, size_t c) { return c * j->chunk; }
static size_t chunk_hi(const hjob *j, size_t c)
{
    size_t hi = (c + 1) * j->chunk;
    return hi < j->n ? hi : j->n;
}

/* The straight scatter of keys [lo, hi) of sk (K each; and their values
 * from sv when HASV) to dk (dv) at their digit's cursor in cur, each
 * position through POS: AT_ANY, or AT_CLAMPED for a cursor that may run
 * past the end (counts that may not hold) */
#define AT_ANY(p, last) (p)
#define AT_CLAMPED(p, last) ((p) < (last) ? (p) : (last))
#define HOST_SCATTER(K, HASV, sk, sv, dk, dv, lo, hi, cur, sh, mask, POS, last) \
    for (size_t i_ = (lo); i_ < (hi); i_++) {                                   \
        K x_ = (sk)[i_];                                                        \
        size_t p_ = (cur)[(size_t)((x_ >> (sh)) & (mask))]++;                   \
        p_ = POS(p_, last);                                                     \
        (dk)[p_] = x_;                                                          \
        if (HASV)                                                               \
            (dv)[p_] = (sv)[i_];                                                \
    }

/* The shapes the host sort is compiled for (suffix, key type, value type,
 * has values: V_ is uint32_t/uint64_t, or char with HASV 0 for keys only),
 * each DEFINE_HOST_* below instantiated once per shape. */
#define HOST_SHAPES(X)                                                            \
    X(k32, uint32_t, char, 0)                                                     \
    X(k32v32, uint32_t, uint32_t, 1)                                              \
    X(k32v64, uint32_t, uint64_t, 1)                                              \
    X(k64, uint64_t, char, 0)                                                     \
    X(k64v32, uint64_t, uint32_t, 1)                                              \
    X(k64v64, uint64_t, uint64_t, 1)

/* The small sorts, one thread and no job: insertion sort up to
 * HOST_ISORT_PER_BYTE keys a byte of key width, in place; then (HOST_LSD_SMALL_PER_BYTE) the LSD passes
 * of 8-bit digits between two private buffers (lsd_small: the digits of
 * every pass counted in one read into a histogram on the stack, a pass
 * whose digit all keys share skipped). Returns 1 where the sorted keys
 * and values ended in (tk, tv), 0 in (k, v); small_ takes either (no tk:
 * the insertion sort). */
#define DEFINE_HOST_SMALL(SUF, K, V_, HASV)                                      \
    static void isort_##SUF(K *k, V_ *v, size_t n)                              \
    {                                                                           \
        for (size_t i = 1; i < n; i++) {                                        \
            K x = k[i];                                                         \
            V_ y = HASV ? v[i] : 0;                                             \
            size_t j = i;                                                       \
            for (; j > 0 && k[j - 1] > x; j--) {                                \
                k[j] = k[j - 1];                                                \
                if (HASV)                                                       \
                    v[j] = v[j - 1];                                            \
            }                                                                   \
            k[j] = x;                                                           \
            if (HASV)                                                           \
                v[j] = y;                                                       \
        }                                                                       \
    }                                                                           \
                                                                                \
    static int lsd_small_##SUF(K *k, V_ *v, K *tk, V_ *tv, size_t n)            \
    {                                                                           \
        enum { NP = sizeof(K) };                                                \
        uint32_t h[NP][256];                                                    \
        memset(h, 0, sizeof h);                                                 \
        for (size_t i = 0; i < n; i++) {                                        \
            K x = k[i];                                                         \
            for (unsigned p = 0; p < NP; p++)                                   \
                h[p][(x >> (8 * p)) & 255]++;                                   \
        }                                                                       \
        K *sk = k, *dk = tk;                                                    \
        V_ *sv = v, *dv = tv;                                                   \
        int in_t = 0;                                                           \
        for (unsigned p = 0; p < NP; p++) {                                     \
            const unsigned sh = 8 * p;                                          \
            uint32_t *c = h[p];                                                 \
            if (c[(sk[0] >> sh) & 255] == n)                                    \
                continue;                                                       \
            gs_digit_starts_u32(c);                                             \
            race_point(GS_RACE_SCATTER, p, n);                                  \
            for (size_t i = 0; i < n; i++) {                                    \
                K x = sk[i];                                                    \
                uint32_t at = c[(x >> sh) & 255]++;                             \
                dk[at] = x;                                                     \
                if (HASV)                                                       \
                    dv[at] = sv[i];                                             \
            }                                                                   \
            K *t = sk; sk = dk; dk = t;                                         \
            V_ *u = sv; sv = dv; dv = u;                                        \
            in_t = !in_t;                                                       \
        }                                                                       \
        return in_t;                                                            \
    }                                                                           \
                                                                                \
    static int small_##SUF(void *k, void *v, void *tk, void *tv, size_t n)      \
    {                                                                           \
        if (!tk) {                                                              \
            isort_##SUF(k, v, n);                                               \
            return 0;                                                           \
        }                                                                       \
        return lsd_small_##SUF(k, v, tk, tv, n);                                \
    }

HOST_SHAPES(DEFINE_HOST_SMALL)

/* The job's tasks per shape (key width, value width), in three parts:
 * counting, the scatter of a pass, an msd bucket's passes. */
#define DEFINE_HOST_COUNT(SUF, K, V_, HASV)                                      \
    /* Count the bits-wide digits of np passes of keys [b, e) into h, pass   \
     * p's counters at h + p * stride (np a constant where inlined: the loop \
     * over passes unrolls); with pk, asking meanwhile for the lines of       \
     * pk[b, e) and pv[b, e) (a bucket's place in the caller's arrays: its    \
     * last pass scatters there, and without them at hand each of its        \
     * stores waits for a line from memory). */                               \
    static inline __attribute__((always_inline)) void                          \
    count_block_##SUF(const K *k, size_t b, size_t e, uint32_t *h,              \
                      unsigned bits, size_t stride, K *pk, V_ *pv, unsigned np) \
    {                                                                           \
        enum { LK = HOST_LINE / sizeof(K), LV = HOST_LINE / sizeof(V_) };       \
        const K mask = (K)(((K)1 << bits) - 1);                                 \
        for (size_t i = b; i < e; i++) {                                        \
            K x = k[i];                                                         \
            if (pk && i % LK == 0)                                              \
                __builtin_prefetch(pk + i, 1, 3);                               \
            if (HASV && pk && i % LV == 0)                                      \
                __builtin_prefetch(pv + i, 1, 3);                               \
            for (unsigned p = 0; p < np; p++)                                   \
                h[p * stride + (size_t)((x >> (p * bits)) & mask)]++;           \
        }                                                                       \
    }                                                                           \
                                                                                \
    /* count_block with np made a constant for the pass counts that occur    \
     * (2 to 8: 32- and 64-bit keys, LSD or inside a bucket) */               \
    static inline __attribute__((always_inline)) void                          \
    count_digits_##SUF(const K *k, size_t b, size_t e, uint32_t *h,             \
                       unsigned bits, size_t stride, K *pk, V_ *pv, unsigned np) \
    {                                                                           \
        switch (np) {                                                           \
        case 2: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 2); break;  \
        case 3: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 3); break;  \
        case 4: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 4); break;  \
        case 5: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 5); break;  \
        case 6: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 6); break;  \
        case 8: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, 8); break;  \
        default: count_block_##SUF(k, b, e, h, bits, stride, pk, pv, np); break; \
        }                                                                       \
    }                                                                           \
                                                                                \
    /* Encode chunk c (and fill its indices), counting every pass's digits  \
     * (COUNT_TOP: the top pass's only; COUNT_AGAIN: every pass's, of keys  \
     * already encoded); with the private copy, into it. */                 \
    static void count_##SUF(hjob *j, size_t c)                                  \
    {                                                                           \
        const K *in = j->k;                                                     \
        K *k = j->snap ? (K *)j->snap : j->k;   /* the encoded keys */          \
        V_ *v = j->snap ? (V_ *)j->vsnap : (V_ *)j->v;  /* argsort's indices */ \
        const unsigned bits = j->bits, np = j->passes;                          \
        const size_t nb = j->nb, tnb = j->tnb;                                  \
        const int top = j->count_mode == COUNT_TOP;                             \
        uint32_t *h = top ? j->thist + c * 4 * tnb : j->hist + c * np * nb;     \
        memset(h, 0, (top ? 4 * tnb : np * nb) * sizeof *h);                    \
        for (size_t b = chunk_lo(j, c), hi = chunk_hi(j, c); b < hi;            \
             b += HOST_BLOCK) {                                                 \
            size_t e = hi - b < HOST_BLOCK ? hi : b + HOST_BLOCK;               \
            if (j->count_mode != COUNT_AGAIN) {                                 \
                if (j->snap)    /* counted from the copy: what the passes read */ \
                    memcpy(k + b, in + b, (e - b) * sizeof *k);                 \
                gs_keys_encode(j->dtype, j->descending, k + b, e - b);          \
                if (HASV && j->argsort)                                         \
                    for (size_t i = b; i < e; i++)                              \
                        v[i] = (V_)i;                                           \
            }                                                                   \
            if (top) {                                                          \
                /* four tables in turn: runs of one digit do not wait on     \
                 * their own increments */                                    \
                const unsigned sh = j->tsh;                                     \
                size_t i = b;                                                   \
                for (; i + 4 <= e; i += 4) {                                    \
                    h[(size_t)(k[i] >> sh) & (tnb - 1)]++;                      \
                    h[tnb + ((size_t)(k[i + 1] >> sh) & (tnb - 1))]++;          \
                    h[2 * tnb + ((size_t)(k[i + 2] >> sh) & (tnb - 1))]++;      \
                    h[3 * tnb + ((size_t)(k[i + 3] >> sh) & (tnb - 1))]++;      \
                }                                                               \
                for (; i < e; i++)                                              \
                    h[(size_t)(k[i] >> sh) & (tnb - 1)]++;                      \
                continue;                                                       \
            }                                                                   \
            count_digits_##SUF(k, b, e, h, bits, nb, NULL, NULL, np);           \
        }                                                                       \
        for (size_t d = 0; top && d < tnb; d++)                                 \
            h[d] += h[tnb + d] + h[2 * tnb + d] + h[3 * tnb + d];               \
    }                                                                           \
                                                                                \
    /* Count this pass's digits in chunk c of its source: the pass before       \
     * moved keys between chunks. */                                           \
    static void recount_##SUF(hjob *j, size_t c)                                \
    {                                                                           \
        const K *sk = j->sk;                                                    \
        const unsigned sh = j->sh;                                              \
        const size_t nb = j->nb;                                                \
        const K mask = (K)(nb - 1);                                             \
        uint32_t *h = j->hist + (c * j->passes + sh / j->bits) * nb;            \
        memset(h, 0, nb * sizeof *h);                                           \
        for (size_t i = chunk_lo(j, c), hi = chunk_hi(j, c); i < hi; i++)       \
            h[(size_t)((sk[i] >> sh) & mask)]++;                                \
    }

HOST_SHAPES(DEFINE_HOST_COUNT)

#define DEFINE_HOST_SCATTER(SUF, K, V_, HASV)                                    \
    /* The G elements (whole lines) [pos - G, pos) of bucket d are full in    \
     * its buffer: write the part that is this chunk's (all of it but at the   \
     * bucket's start). Only the last line was just written element by        \
     * element; the others leave as whole lines. */                            \
    static inline void flush_##SUF(K *dk, V_ *dv, const K *bk, const V_ *bv,    \
                                   size_t pos, size_t first, size_t G)          \
    {                                                                           \
        enum { B = HOST_LINE / sizeof(K) };                                     \
        size_t base = pos - G;                                                  \
        if (first == 0) {                                                       \
            for (size_t l = 0; l + B < G; l += B)                               \
                nt_whole(dk + base + l, bk + l);                                \
            nt_head(dk + base + G - B, bk + G - B);                             \
            for (unsigned q = (HOST_LINE - 16) / sizeof(K); q < B; q++)         \
                NT_STORE(dk + base + G - B + q, bk[G - B + q]);                 \
            if (HASV)                                                           \
                for (size_t q = 0; q < G; q++)                                  \
                    NT_STORE(dv + base + q, bv[q]);                             \
            return;                                                             \
        }                                                                       \
        for (size_t q = first; q < G; q++) {                                    \
            dk[base + q] = bk[q];                                               \
            if (HASV)                                                           \
                dv[base + q] = bv[q];                                           \
        }                                                                       \
    }                                                                           \
                                                                                \
    /* Stable scatter of chunk c: straight to the destination, or through       \
     * per-bucket line buffers aligned with the destination's cache lines,      \
     * writing whole lines past the cache; lines shared with a neighbouring     \
     * range (another bucket's, or this bucket's in another chunk) with         \
     * plain stores of this chunk's part only. */                               \
    static void scatter_##SUF(hjob *j, size_t c, unsigned worker)               \
    {                                                                           \
        enum { B = HOST_LINE / sizeof(K) };                                     \
        const K *sk = j->sk;                                                    \
        const V_ *sv = j->sv;                                                   \
        K *dk = j->dk;                                                          \
        V_ *dv = j->dv;                                                         \
        const unsigned sh = j->sh;                                              \
        const size_t nb = j->nb;                                                \
        const K mask = (K)(nb - 1);                                             \
        size_t *off = j->off + c * nb;                                          \
        const size_t lo = chunk_lo(j, c), hi = chunk_hi(j, c), n = j->n;        \
        if (!j->wc && j->snap) {   /* from the private copy: exact counts */    \
            HOST_SCATTER(K, HASV, sk, sv, dk, dv, lo, hi, off, sh, mask, AT_ANY, 0); \
            return;                                                             \
        }                                                                       \
        if (!j->wc) {                                                           \
            /* counts that may not hold (a client rewriting its keys): a     \
             * cursor past the end is clamped (pass_exact tells) */          \
            HOST_SCATTER(K, HASV, sk, sv, dk, dv, lo, hi, off, sh, mask, AT_CLAMPED, \
                         n - 1);                                                \
            return;                                                             \
        }                                                                       \
        K *bk = j->wck[worker];                                                 \
        V_ *bv = j->wcv[worker];                                                \
        size_t *beg = j->beg[worker];                                           \
        /* G elements (wcl lines) a bucket; the destination's first element  \
         * sits `a` elements into its group of wcl lines */                    \
        const size_t G = (size_t)j->wcl * B;                                    \
        const size_t a = ((uintptr_t)dk / sizeof(K)) & (G - 1);                 \
        memcpy(beg, off, nb * sizeof *beg);                                     \
        for (size_t i = lo; i < hi; i++) {                                      \
            K x = sk[i];                                                        \
            size_t d = (size_t)((x >> sh) & mask);                              \
            size_t pos = off[d];                                                \
            size_t s = (pos + a) & (G - 1);                                     \
            bk[d * G + s] = x;                                                  \
            if (HASV)                                                           \
                bv[d * G + s] = sv[i];                                          \
            off[d] = ++pos;                                                     \
            if (s == G - 1) {                                                   \
                size_t have = pos - beg[d];                                     \
                /* keys that are not the ones counted (the client rewrote    \
                 * them) may run a cursor past the end: no line goes there   \
                 * (pass_exact tells the mismatch); tested here, once a line, \
                 * not beside s for every key */                              \
                if (__builtin_expect(pos <= n, 1))                              \
                    flush_##SUF(dk, dv, bk + d * G, HASV ? bv + d * G : NULL, pos, \
                                have >= G ? 0 : G - have, G);                   \
            }                                                                   \
        }                                                                       \
        for (size_t d = 0; d < nb; d++) {                                       \
            size_t pos = off[d], s = (pos + a) & (G - 1), have = pos - beg[d];  \
            size_t q0 = have >= s ? 0 : s - have;                               \
            if (pos > n)                                                        \
                continue;                                                       \
            for (size_t q = q0; q < s; q++) {                                   \
                dk[pos - s + q] = bk[d * G + q];                                \
                if (HASV)                                                       \
                    dv[pos - s + q] = bv[d * G + q];                            \
            }                                                                   \
        }                                                                       \
        nt_fence();     /* the next pass reads what was streamed out */        \
    }

HOST_SHAPES(DEFINE_HOST_SCATTER)

#define DEFINE_HOST_BUCKET(SUF, K, V_, HASV)                                     \
    /* One bucket [lo, hi) of the top pass, in the scratch: an LSD sort of  \
     * the bits below the top digit (bucket_digits) while it sits           \
     * in the cache, between the worker's own buffer tk/tv and the bucket's \
     * place in the scratch, so that the last pass that moves anything      \
     * writes the caller's arrays (no copy back) and no pass reads them: a   \
     * client may rewrite them at any time (issue 32), and the counts taken  \
     * from the scratch hold for every pass. Bits above them in a digit are  \
     * the bucket's own, the same for all its keys. */                      \
    static void bucket_##SUF(hjob *j, size_t lo, size_t hi, uint32_t *h,      \
                             void *tk_, void *tv_)                              \
    {                                                                           \
        K *sk = (K *)j->ks + lo, *ck = (K *)j->k + lo, *tk = tk_;               \
        V_ *sv = HASV ? (V_ *)j->vs + lo : NULL;                                \
        V_ *cv = HASV ? (V_ *)j->v + lo : NULL, *tv = tv_;                      \
        const size_t m = hi - lo;                                               \
        if (m == 0)                                                             \
            return;                                                             \
        if (m <= HOST_SMALL_N) {                                                \
            isort_##SUF(sk, sv, m);                                             \
            memcpy(ck, sk, m * sizeof *ck);                                     \
            if (HASV)                                                           \
                memcpy(cv, sv, m * sizeof *cv);                                 \
            return;                                                             \
        }                                                                       \
        const unsigned np = j->bnp, bb = j->bb;                                 \
        const size_t NB = (size_t)1 << bb;                                      \
        const K mask = (K)(NB - 1);                                             \
        /* msd=2: the passes ping-pong between the worker's two buffers and   \
         * the result streams out; otherwise the last pass writes the         \
         * caller's arrays, their lines fetched while the bucket is counted   \
         * and, after two passes or more, again just before the last (u64    \
         * 2^24, 5 passes: 46 ms in the buckets, 50 with the first only) */  \
        const int stream = j->msd_stream;                                       \
        const size_t half = HOST_MSD_BUCKET_BYTES / (j->kw + j->vw) + 1;        \
        K *tk2 = stream ? tk + half : NULL;                                     \
        V_ *tv2 = HASV && stream ? tv + half : NULL;                            \
        K *pk = stream ? NULL : ck;                                             \
        for (unsigned p = 0; p < np; p++)                                       \
            memset(h + (size_t)p * HOST_BB_STRIDE, 0, NB * sizeof *h);          \
        count_digits_##SUF(sk, 0, m, h, bb, HOST_BB_STRIDE, pk, cv, np);        \
        /* the passes that move anything (one digit: nothing moves) */         \
        unsigned run[HOST_BB_MAXP], nrun = 0;                                   \
        for (unsigned p = 0; p < np; p++)                                       \
            if (h[p * HOST_BB_STRIDE + (size_t)((sk[0] >> (bb * p)) & mask)] != m) \
                run[nrun++] = p;                                                \
        const K *fk = sk;                                                       \
        const V_ *fv = sv;                                                      \
        for (unsigned r = 0; r < nrun; r++) {                                   \
            const unsigned sh = bb * run[r];                                    \
            uint32_t *hp = h + (size_t)run[r] * HOST_BB_STRIDE;                 \
            uint32_t sum = 0;                                                   \
            for (size_t d = 0; d < NB; d++) {                                   \
                uint32_t c = hp[d];                                             \
                hp[d] = sum;                                                    \
                sum += c;                                                       \
            }                                                                   \
            /* the worker's buffer, the bucket's scratch, ..., the caller's */  \
            const int to_caller = r + 1 == nrun;                                \
            if (to_caller && r >= 2 && !stream) {                               \
                enum { LK = HOST_LINE / sizeof(K), LV = HOST_LINE / sizeof(V_) }; \
                for (size_t i = 0; i < m; i += LK)                              \
                    __builtin_prefetch(ck + i, 1, 3);                           \
                for (size_t i = 0; HASV && i < m; i += LV)                      \
                    __builtin_prefetch(cv + i, 1, 3);                           \
            }                                                                   \
            K *dk = stream ? (r % 2 ? tk2 : tk) : to_caller ? ck : r % 2 ? sk : tk; \
            V_ *dv = stream ? (r % 2 ? tv2 : tv) : to_caller ? cv : r % 2 ? sv : tv; \
            HOST_SCATTER(K, HASV, fk, fv, dk, dv, 0, m, hp, sh, mask, AT_ANY, 0); \
            fk = dk;                                                            \
            fv = dv;                                                            \
            if (r + 1 < nrun)                                                   \
                race_point(GS_RACE_BUCKET, lo, hi);                             \
        }                                                                       \
        if (stream && nrun) {                                                   \
            nt_copy(ck, fk, m * sizeof *ck);                                    \
            if (HASV)                                                           \
                nt_copy(cv, fv, m * sizeof *cv);                                \
        } else if (nrun == 0) {                                                 \
            memcpy(ck, sk, m * sizeof *ck);                                     \
            if (HASV)                                                           \
                memcpy(cv, sv, m * sizeof *cv);                                 \
        }                                                                       \
    }                                                                           \
                                                                                \
    static const hops ops_##SUF = { count_##SUF, recount_##SUF, scatter_##SUF, bucket_##SUF };

HOST_SHAPES(DEFINE_HOST_BUCKET)

static void task_count(void *arg, size_t c, unsigned worker)
{
    hjob *j = arg;
    (void)worker;
    j->ops->count(j, c);
}

static void task_recount(void *arg, size_t c, unsigned worker)
{
    hjob *j = arg;
    (void)worker;
    j->ops->recount(j, c);
}

static void task_scatter(void *arg, size_t c, unsigned worker)
{
    hjob *j = arg;
    j->ops->scatter(j, c, worker);
}

/* The sorted chunk c back into the caller's arrays when it ended in the
 * scratch, and decoded there. */
static void task_finish(void *arg, size_t c, unsigned worker)
{
    hjob *j = arg;
    (void)worker;
    size_t lo = chunk_lo(j, c), hi = chunk_hi(j, c);
    char *k = j->k, *v = j->v;
    const char *ks = j->ks, *vs = j->vs;
    for (size_t b = lo; b < hi; b += HOST_BLOCK) {
        size_t m = hi - b < HOST_BLOCK ? hi - b : HOST_BLOCK;
        if (j->moved) {
            memcpy(k + b * j->kw, ks + b * j->kw, m * j->kw);
            if (j->vw)
                memcpy(v + b * j->vw, vs + b * j->vw, m * j->vw);
        }
        gs_keys_decode(j->dtype, j->descending, k + b * j->kw, m);
    }
}

static void task_bucket(void *arg, size_t d, unsigned worker)
{
    hjob *j = arg;
    j->ops->bucket(j, j->bstart[d], j->bstart[d + 1], j->bh[worker], j->btk[worker],
                   j->btv ? j->btv[worker] : NULL);
}

/* Does pass p move anything, or has every key the same digit? */
static int pass_needed(const hjob *j, unsigned p, size_t first_digit)
{
    const size_t nb = j->nb, np = j->passes;
    size_t same = 0;
    for (size_t c = 0; c < j->nchunks; c++)
        same += j->hist[(c * np + p) * nb + first_digit];
    return same != j->n;
}

/* Offsets of one pass for every chunk from its counts (chunk c's at
 * h + c * chunk_stride, nb of them): chunk c's keys with digit d go after
 * every smaller digit's and after chunk c-1's with digit d. */
static void prefix_counts(hjob *j, const uint32_t *h, size_t chunk_stride)
{
    const size_t nb = j->nb, nc = j->nchunks;
    size_t sum = 0;
    for (size_t d = 0; d < nb; d++)
        for (size_t c = 0; c < nc; c++) {
            j->off[c * nb + d] = sum;
            sum += h[c * chunk_stride + d];
        }
}

/* ... of LSD pass p */
static void prefix(hjob *j, unsigned p)
{
    prefix_counts(j, j->hist + (size_t)p * j->nb, j->passes * j->nb);
}

/* Whether the scatter that ran on offsets prefixed from h (as
 * prefix_counts) put exactly the counted keys in every (digit, chunk)
 * range: each cursor ended where the next range begins. Not so when the
 * keys it read were not the ones counted, i.e. a client rewrote its keys
 * in between (issue 32): the scatter kept every write in bounds (no line
 * flushed past the end, cursors clamped), but ranges may hold the wrong
 * keys and parts of the destination none of this sort's. */
static int pass_exact(const hjob *j, const uint32_t *h, size_t chunk_stride)
{
    const size_t nb = j->nb, nc = j->nchunks;
    size_t sum = 0;
    for (size_t d = 0; d < nb; d++)
        for (size_t c = 0; c < nc; c++) {
            sum += h[c * chunk_stride + d];
            if (j->off[c * nb + d] != sum)
                return 0;
        }
    return 1;
}

/* The top digit's buckets, from the counts of the first read, when they
 * are worth sorting one by one: more than one, the largest small enough to
 * stay in the cache while a worker sorts it (skewed keys take the plain
 * LSD passes). */
static int host_msd_fits(hjob *j)
{
    const size_t nb = j->tnb;
    size_t used = 0, most = 0, sum = 0;
    for (size_t d = 0; d < nb; d++) {
        size_t cnt = 0;
        for (size_t c = 0; c < j->nchunks; c++)
            cnt += j->thist[c * 4 * nb + d];
        j->bstart[d] = sum;
        sum += cnt;
        used += cnt > 0;
        if (cnt > most)
            most = cnt;
    }
    j->bstart[nb] = sum;
    return used > 1 && most * (j->kw + j->vw) <= HOST_MSD_BUCKET_BYTES;
}

/* The LSD passes that move anything (every key with the same digit skips
 * one), from the counts and any one key: the encoded keys' first. */
static unsigned passes_needed(const hjob *j, unsigned *run)
{
    const size_t kmask = j->nb - 1;
    const void *k0 = j->snap ? j->snap : j->k;
    unsigned nrun = 0;
    for (unsigned p = 0; p < j->passes; p++) {
        const unsigned sh = p * j->bits;
        size_t d0 = j->kw == 4 ? (size_t)((((const uint32_t *)k0)[0] >> sh) & kmask)
                               : (size_t)((((const uint64_t *)k0)[0] >> sh) & kmask);
        if (pass_needed(j, p, d0))
            run[nrun++] = p;
    }
    return nrun;
}

/* Milliseconds of the phases, for the debug log (gsort-bench --verbose). */
typedef struct phase_ms {
    double count, top, buckets, passes;
} phase_ms;

/* The digits inside a bucket: the bits below the top digit in the fewest
 * passes of at most HOST_BB bits, shared evenly (24 bits: 3 passes of 8,
 * not 11, 11 and 2). Measured on the 2-core machine, u32 2^24, one thread:
 * a pass costs about the same at 8, 11 or 12 bits, so fewer is better. */
static void bucket_digits(hjob *j)
{
    j->bnp = (j->sh + HOST_BB - 1) / HOST_BB;
    j->bb = (j->sh + j->bnp - 1) / j->bnp;
}

/* The LSD passes: through the line buffers, between the caller's arrays
 * and the scratch (each pass checked by pass_exact); otherwise from the
 * private copy between it and the scratch, the last pass into the
 * caller's arrays. Returns -1 as sort_radix does. */
static int lsd_passes(hjob *j, gs_hostpool_team *team, gs_sort_stats *st)
{
    unsigned run[64], nrun = passes_needed(j, run);
    st->passes_skipped += j->passes - nrun;
    if (j->snap && nrun == 0) {
        /* all keys equal: the caller's keys stay as they are */
        j->plain = 1;
        if (j->argsort)
            memcpy(j->v, j->vsnap, j->n * j->vw);
        return 0;
    }
    void *sk = j->snap ? j->snap : j->k, *dk = j->ks;
    void *sv = j->snap && j->argsort ? j->vsnap : j->v, *dv = j->vs;
    if (j->snap && j->vw && !j->argsort && nrun == 1) {
        /* one pass from the caller's values into the caller's values */
        memcpy(j->vsnap, j->v, j->n * j->vw);
        sv = j->vsnap;
    }
    for (unsigned r = 0; r < nrun; r++) {
        const unsigned p = run[r];
        if (j->snap && r + 1 == nrun)
            dk = j->k, dv = j->v;
        j->sk = sk, j->sv = sv, j->dk = dk, j->dv = dv, j->sh = p * j->bits;
        /* the counts per chunk from the first read hold for the keys'
         * first order only */
        if (r && j->nchunks > 1)
            gs_hostpool_for(team, j->nchunks, task_recount, j);
        prefix(j, p);
        race_point(GS_RACE_SCATTER, p, j->n);
        gs_hostpool_for(team, j->nchunks, task_scatter, j);
        if (!j->snap && !pass_exact(j, j->hist + (size_t)p * j->nb, j->passes * j->nb))
            return -1;
        void *t = sk; sk = dk; dk = t;
        if (j->snap) {
            /* the values' first source may be the caller's: the next
             * destination is the other private buffer */
            sv = dv;
            dv = dv == j->vs ? j->vsnap : j->vs;
        } else {
            t = sv; sv = dv; dv = t;
            j->moved = !j->moved;
        }
        st->passes++;
    }
    return 0;
}

/* 0, or -1 when a pass found keys other than those it counted: the client
 * rewrote them during the sort. It stops there, before anything of the
 * scratch that pass may have left unwritten reaches the caller's arrays. */
static int sort_radix(hjob *j, gs_hostpool_team *team, gs_sort_stats *st, phase_ms *ph)
{
    /* top digit first: only its counts are needed, unless the buckets turn
     * out too big, when the keys (encoded by then) are counted again */
    double t0 = gs_now_ms();
    j->count_mode = j->msd ? COUNT_TOP : COUNT_ALL;
    gs_hostpool_for(team, j->nchunks, task_count, j);
    int top = j->msd && host_msd_fits(j);
    if (j->msd && !top) {
        j->count_mode = COUNT_AGAIN;
        gs_hostpool_for(team, j->nchunks, task_count, j);
    }
    double t1 = gs_now_ms();
    ph->count = t1 - t0;
    if (top) {
        /* the top pass into the scratch (its digit as the scatter's), then
         * every bucket to the end */
        j->sk = j->snap ? j->snap : j->k;
        j->sv = j->snap && j->argsort ? j->vsnap : j->v;
        j->dk = j->ks, j->dv = j->vs, j->sh = j->tsh;
        j->nb = j->tnb;
        j->wcl = j->top_lines;
        bucket_digits(j);
        prefix_counts(j, j->thist, 4 * j->tnb);
        race_point(GS_RACE_SCATTER, SIZE_MAX, j->n);
        gs_hostpool_for(team, j->nchunks, task_scatter, j);
        if (!j->snap && !pass_exact(j, j->thist, 4 * j->tnb))
            return -1;
        double t2 = gs_now_ms();
        gs_hostpool_for(team, j->tnb, task_bucket, j);
        ph->top = t2 - t1;
        ph->buckets = gs_now_ms() - t2;
        st->passes += 1 + j->bnp;
        return 0;
    }
    int rc = lsd_passes(j, team, st);
    ph->passes = gs_now_ms() - t1;
    return rc;
}

static size_t line_up(size_t bytes)
{
    return (bytes + HOST_LINE - 1) / HOST_LINE * HOST_LINE;
}

/* With the private copy, the keys' scratch and copy and the values'
 * scratch and copy lie in one block, so that one allocation stays warm
 * (malloc gave two or four of a few MiB back to the system after each sort
 * and faulted them in again on the next: u32 + u32 2^18 took 500 page
 * faults a sort before issue 32, 1,000 with the copy in blocks of its own),
 * each this far past the one before, so that none is a power of two from
 * another (u32 2^14: 87 against 82 us, the scatter's stores aliasing the
 * loads of the next pass). Larger inputs keep a block each for keys and
 * values: in one, u32 + u32 2^20 on two threads took 3.9 ms, not 3.0. */
#define HOST_BLOCK_SKEW (4096 + 9 * HOST_LINE)

/* The offset of the next array in that block after one of `bytes`. */
static size_t block_step(size_t bytes)
{
    return line_up(bytes) + HOST_BLOCK_SKEW;
}

static size_t block_bytes(const hjob *j)
{
    return 2 * block_step(j->n * j->kw) + 2 * block_step(j->n * j->vw);
}

static void job_free(hjob *j)
{
    if (j->copied) {
        gs_scratch_put(j->ks, block_bytes(j));
    } else {
        gs_scratch_put(j->ks, j->n * j->kw);
        gs_scratch_put(j->vs, j->n * j->vw);
    }
    gs_scratch_put(j->wblock, j->wblock_bytes);
    free(j->hist);
    free(j->off);
    free(j->bstart);
    free(j->thist);
    free(j->bh);
    free(j->btk);
    free(j->btv);
    free(j->wck);
    free(j->wcv);
    free(j->beg);
}

/* Everything the radix sort needs, before the input is touched, so that a
 * failure leaves it as it was. The workers' tables (a bucket's counts and
 * buffers, the line buffers) are cut from one block of the scratch cache:
 * allocated and freed per sort, their pages faulted in and unmapped again
 * each time, they cost the GPU machine's 16 threads about 10 ms a sort. */
static int job_alloc(hjob *j, unsigned workers)
{
    /* the top pass's scatter uses the LSD passes' tables with tnb buckets */
    const size_t n = j->n, nb = j->msd && j->tnb > j->nb ? j->tnb : j->nb;
    if (j->copied && (j->ks = gs_scratch_get(block_bytes(j)))) {
        j->snap = (char *)j->ks + block_step(n * j->kw);
        j->vs = j->vw ? (char *)j->snap + block_step(n * j->kw) : NULL;
        j->vsnap = j->vw ? (char *)j->vs + block_step(n * j->vw) : NULL;
    } else if (!j->copied) {
        j->ks = gs_scratch_get(n * j->kw);
        j->vs = j->vw ? gs_scratch_get(n * j->vw) : NULL;
    }
    j->hist = malloc(j->nchunks * j->passes * j->nb * sizeof *j->hist);
    j->off = malloc(j->nchunks * nb * sizeof *j->off);
    j->bstart = j->msd ? malloc((j->tnb + 1) * sizeof *j->bstart) : NULL;
    j->thist = j->msd ? malloc(j->nchunks * 4 * j->tnb * sizeof *j->thist) : NULL;
    j->bh = j->msd ? calloc(workers, sizeof *j->bh) : NULL;
    j->btk = j->msd ? calloc(workers, sizeof *j->btk) : NULL;
    j->btv = j->msd && j->vw ? calloc(workers, sizeof *j->btv) : NULL;
    j->wck = j->wc ? calloc(workers, sizeof *j->wck) : NULL;
    j->wcv = j->wc ? calloc(workers, sizeof *j->wcv) : NULL;
    j->beg = j->wc ? calloc(workers, sizeof *j->beg) : NULL;
    int bad = !j->ks || (j->vw && !j->vs) || !j->hist || !j->off ||
              (j->copied && (!j->snap || (j->vw && !j->vsnap))) ||
              (j->msd && (!j->bstart || !j->thist || !j->bh || !j->btk ||
                          (j->vw && !j->btv))) ||
              (j->wc && (!j->wck || !j->wcv || !j->beg));
    /* a bucket is at most HOST_MSD_BUCKET_BYTES of keys and values (twice
     * that with msd=2); line buffers: one line a bucket in the LSD passes,
     * top_lines in the top pass */
    const size_t bmax = (HOST_MSD_BUCKET_BYTES / (j->kw + j->vw) + 1) * (j->msd_stream ? 2 : 1);
    size_t lines = j->nb;
    if (j->msd && j->tnb * j->top_lines > lines)
        lines = j->tnb * j->top_lines;
    const size_t line_elems = HOST_LINE / j->kw;
    const size_t s_bh = j->msd ? line_up((size_t)HOST_BB_MAXP * HOST_BB_STRIDE * 4) : 0;
    const size_t s_btk = j->msd ? line_up(bmax * j->kw) : 0;
    const size_t s_btv = j->msd && j->vw ? line_up(bmax * j->vw) : 0;
    const size_t s_wck = j->wc ? lines * HOST_LINE : 0;
    const size_t s_wcv = j->wc && j->vw ? line_up(lines * line_elems * j->vw) : 0;
    const size_t s_beg = j->wc ? line_up(nb * sizeof **j->beg) : 0;
    const size_t per = s_bh + s_btk + s_btv + s_wck + s_wcv + s_beg;
    if (!bad && per) {
        j->wblock_bytes = per * workers;
        j->wblock = gs_scratch_get(j->wblock_bytes);
        bad = !j->wblock;
    }
    for (unsigned w = 0; !bad && per && w < workers; w++) {
        char *p = (char *)j->wblock + (size_t)w * per;
        if (j->msd) {
            j->bh[w] = (uint32_t *)p;
            j->btk[w] = p + s_bh;
            if (j->vw)
                j->btv[w] = p + s_bh + s_btk;
        }
        p += s_bh + s_btk + s_btv;
        if (j->wc) {
            j->wck[w] = p;
            j->wcv[w] = j->vw ? p + s_wck : NULL;
            j->beg[w] = (size_t *)(p + s_wck + s_wcv);
        }
    }
    return bad ? -1 : 0;
}

/* Half a core's L2, the most the top pass's line buffers take (glibc
 * answers from cpuid on x86: cheap enough for once a sort). */
static size_t top_lines_bytes(void)
{
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 >= (64 << 10) ? (size_t)l2 / 2 : HOST_TOP_LINES_DEFAULT;
}

/* top_bits=0: the top digit's width for `bytes` of keys and values with
 * kbits-bit keys: as few bits as leave the buckets their fewest passes
 * (10 for 32-bit keys: 22 bits in 2 passes; 9 for 64-bit: 55 in 5), more
 * while a bucket would hold over HOST_MSD_BUCKET_AIM bytes, as long as
 * the top pass's line buffers (`lines` per bucket) stay within half the
 * L2 (top_lines_bytes). On the GPU machine's 16 cores, u32 at 2^27: with
 * one line a bucket 13 bits were best (134 ms, against 163 at 10), with
 * four lines 12 bits (110 ms; 120 at 11 and 127 at 13): smaller buckets
 * sort faster there, until the top pass's buffers outgrow the L2 (2 MiB
 * a core there; on the 2-core machine's 1 MiB, u32 + idx32 at 2^24 took
 * 53 ms with 512 KiB of buffers, 60 with 1 MiB). */
static unsigned top_bits_for(size_t bytes, unsigned kbits, unsigned lines)
{
    unsigned tb = kbits - HOST_BB * ((kbits - HOST_WC_MAX_BITS + HOST_BB - 1) / HOST_BB);
    while (tb < HOST_WC_MAX_BITS && bytes >> tb > HOST_MSD_BUCKET_AIM &&
           ((size_t)lines * HOST_LINE << (tb + 1)) <= top_lines_bytes())
        tb++;
    return tb;
}

/* The column of a value width (none, 4, 8 bytes) in the tables of sorts
 * per shape. */
static inline int vw_index(size_t vw)
{
    return vw == 0 ? 0 : vw == 4 ? 1 : 2;
}

/* A small sort (HOST_LSD_SMALL_PER_BYTE, DEFINE_HOST_SMALL): insertion
 * sort in the caller's arrays (HOST_ISORT_PER_BYTE), above that on a private copy of
 * them (a client may rewrite its shared arrays while the sort reads them:
 * the counts and the scatters read only the copy), written back once
 * sorted. */
static int host_small(const gs_sort_req *req, size_t n, size_t kw, size_t vw, int argsort,
                      gs_err *err)
{
    static int (*const sorts[2][3])(void *, void *, void *, void *, size_t) = {
        { small_k32, small_k32v32, small_k32v64 }, { small_k64, small_k64v32, small_k64v64 },
    };
    const size_t kb = n * kw, vb = n * vw;
    char *buf = NULL;
    void *k = req->keys, *v = req->values, *tk = NULL, *tv = NULL;
    if (n > HOST_ISORT_PER_BYTE * kw) {
        if (!(buf = malloc(2 * (kb + vb))))
            return gs_err_set(err, GS_ENOMEM, "host: out of memory for %zu bytes of scratch",
                              2 * (kb + vb));
        k = buf;
        tk = buf + kb;
        v = vw ? buf + 2 * kb : NULL;
        tv = vw ? buf + 2 * kb + vb : NULL;
        memcpy(k, req->keys, kb);
        if (vw && !argsort)
            memcpy(v, req->values, vb);
    }
    gs_keys_encode(req->shape.dtype, req->shape.descending, k, n);
    for (size_t i = 0; argsort && i < n; i++) {
        if (vw == 4)
            ((uint32_t *)v)[i] = (uint32_t)i;
        else
            ((uint64_t *)v)[i] = i;
    }
    int in_t = sorts[kw == 8][vw_index(vw)](k, v, tk, tv, n);
    void *rk = in_t ? tk : k, *rv = in_t ? tv : v;
    gs_keys_decode(req->shape.dtype, req->shape.descending, rk, n);
    if (buf) {
        memcpy(req->keys, rk, kb);
        if (vw)
            memcpy(req->values, rv, vb);
        free(buf);
    }
    return 0;
}

/* A flat request (no rows) with parameter values pv. */
static int host_flat(const gs_sort_req *req, const long *pv, gs_sort_stats *st, gs_err *err)
{
    const size_t n = req->n, kw = gs_dtype_size(req->shape.dtype);
    const size_t vw = gs_payload_size(req->shape.payload);
    const int argsort = req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64;
    const int k64 = kw == 8;
    if (n == 0)
        return 0;

    /* one chunk, 8-bit digits and no past-the-cache path: the small sort
     * (test hooks that lower those bounds keep the job's paths covered) */
    if (n <= HOST_LSD_SMALL_PER_BYTE * kw && (pv[P_BITS] == 0 || pv[P_BITS] == 8) &&
        n < 2 * min_chunk && n * (kw + vw) < past_cache)
        return host_small(req, n, kw, vw, argsort, err);

    static const hops *const table[2][3] = {
        { &ops_k32, &ops_k32v32, &ops_k32v64 }, { &ops_k64, &ops_k64v32, &ops_k64v64 },
    };
    hjob j = {
        .ops = table[k64][vw_index(vw)],
        .dtype = req->shape.dtype, .descending = req->shape.descending, .argsort = argsort,
        .n = n, .kw = kw, .vw = vw, .k = req->keys, .v = req->values,
    };
    j.bits = pv[P_BITS] ? (unsigned)pv[P_BITS] : n < HOST_WIDE_N ? 8 : 11;
    j.nb = (size_t)1 << j.bits;
    j.passes = (unsigned)((kw * 8 + j.bits - 1) / j.bits);
    /* chunks of min_chunk keys or more, and of under 2^32 (32-bit counts) */
    size_t nc = n / min_chunk;
    if (nc > (size_t)pv[P_THREADS])
        nc = (size_t)pv[P_THREADS];
    if (nc < 1)
        nc = 1;
    while (n / nc >= UINT32_MAX)
        nc++;
    j.chunk = (n + nc - 1) / nc;
    j.nchunks = (n + j.chunk - 1) / j.chunk;
    j.wc = HOST_HAVE_NT && n * kw >= past_cache && j.bits <= HOST_WC_MAX_BITS &&
           (uintptr_t)req->keys % kw == 0;     /* its lines are found by key index */
    j.copied = !j.wc && n * (kw + vw) <= copy_max;
    j.msd = pv[P_MSD] && j.passes >= 2 && n * (kw + vw) >= past_cache;
    j.msd_stream = j.msd && pv[P_MSD] == 2;
    j.wcl = 1;
    if (j.msd) {
        j.top_lines = (unsigned)pv[P_LINES];
        unsigned tb = pv[P_TOP] ? (unsigned)pv[P_TOP]
                                : top_bits_for(n * (kw + vw), (unsigned)(kw * 8),
                                               j.top_lines * (vw ? 2 : 1));
        if (tb > kw * 8 - 1)
            tb = (unsigned)(kw * 8 - 1);
        j.tsh = (unsigned)(kw * 8) - tb;
        j.tnb = (size_t)1 << tb;
    }

    gs_hostpool_team team;
    unsigned workers = gs_hostpool_join(&team, (unsigned)(j.nchunks - 1));
    if (job_alloc(&j, workers) < 0) {
        gs_hostpool_leave(&team);
        job_free(&j);
        return gs_err_set(err, GS_ENOMEM, "host: out of memory for %zu bytes of scratch",
                          n * (kw + vw));
    }
    phase_ms ph = { 0, 0, 0, 0 };
    int raced = sort_radix(&j, &team, st, &ph) < 0;
    double tf = gs_now_ms();
    if (!raced && !j.plain &&
        (j.moved ||
         !(gs_keys_kind(req->shape.dtype) == GS_KIND_UNSIGNED && !req->shape.descending)))
        gs_hostpool_for(&team, j.nchunks, task_finish, &j);
    GS_DEBUG("host: n=%zu %s/%s on %u threads, %zu chunks: ms count %.2f, top pass %.2f, "
             "buckets %.2f, LSD passes %.2f, finish %.2f", n, gs_dtype_name(req->shape.dtype),
             gs_payload_name(req->shape.payload), workers, j.nchunks, ph.count, ph.top,
             ph.buckets, ph.passes, gs_now_ms() - tf);
    gs_hostpool_leave(&team);
    job_free(&j);
    return raced ? gs_err_raced("host", err) : 0;
}

/* A flat request with the NaN bit patterns saved before and put back after
 * (the host sort keeps_bits, so that gs_sort_run leaves it its rows: a
 * save over the whole request would put a row's NaNs into the last row). */
static int host_flat_nans(const gs_sort_req *req, const long *pv, gs_sort_stats *st,
                          gs_err *err)
{
    gs_nan_save ns = { 0, NULL, NULL };
    int rc = gs_keys_nan_save(req, &ns, err);
    if (rc < 0)
        return rc;
    rc = host_flat(req, pv, st, err);
    if (rc == 0)
        gs_keys_nan_restore(req, &ns);
    gs_keys_nan_free(&ns);
    return rc;
}

/* A row too long for host_rows.c, on one thread (the rows side by side). */
static int host_flat_row(void *arg, const gs_sort_req *row, gs_err *err)
{
    long pv[P_COUNT];
    memcpy(pv, arg, sizeof pv);
    pv[P_THREADS] = 1;
    gs_sort_stats st;
    memset(&st, 0, sizeof st);
    return host_flat_nans(row, pv, &st, err);
}

static int host_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                    gs_sort_stats *st, gs_err *err)
{
    (void)ctx;
    long pv[P_COUNT];
    int rc = get_params(p, pv, err);
    if (rc)
        return rc;
    if (req->shape.rows > 1 || req->shape.segments)
        return gs_host_rows(req, (unsigned)pv[P_THREADS], host_flat_row, pv, race_hook,
                            race_arg, st, err);
    return host_flat_nans(req, pv, st, err);
}

const gs_algo gs_algo_host = {
    .name = "host",
    .summary = "LSD radix sort on the host CPU, multi-threaded (stable, every dtype and "
               "payload)",
    .stable = 1,
    .uses_device = 0,
    /* equal rows and segments whole (host_rows.c), every key's bits kept
     * by host_run */
    .rows = 1,
    .segments = 1,
    .keeps_bits = 1,
    .params = host_params,
    .nparams = P_COUNT,
    .defaults = host_defaults,
    .check = host_check,
    .run = host_run,
};
