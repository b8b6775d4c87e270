/* libFuzzer target for sorts of memory that changes under them (issue 32):
 * the input picks a host algorithm and its parameters (host with msd 0, 1
 * or 2, forced onto its line-buffer and several-chunk paths; vqsort; or
 * the k-way merge alone), the dtype, payload, order and n (up to 2^16), the
 * initial keys, and a writer thread: its seed, what it writes (bytes 0x00
 * and 0xff in turn, random bytes, a descending ramp, single bytes poked,
 * the input's bytes again, or nothing), whether it writes the keys or the
 * values, and how long it waits before starting; and whether only the
 * first k are asked for (top-k, gs_select.c), and k; or, for integer keys
 * sorted whole, a bit range (gs_bits.c: the range's words sorted with the
 * keys or an index). The arrays lie between
 * inaccessible pages, so an access past either end faults here too. A sort
 * must return 0 or the raced error (gs_err_raced); without a writer it
 * must return 0 with the keys in order (and an argsort's indices pointing
 * at equal keys; top-k: the first k as a sort's first k); anything else, a crash or a sanitizer report is a
 * finding. Also built with the normal compiler into the corpus replay test
 * (tests/fuzz/replay.c). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_algos.h"
#include "gs_err.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_merge.h"
#include "gs_sort.h"
#include "racer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)
#define MAX_N 65536
/* The input's fixed head, then the initial key bytes. */
#define HEAD 16

enum { W_NONE, W_FLIP, W_RANDOM, W_RAMP, W_POKE, W_INPUT, W_COUNT };

typedef struct writer {
    pthread_t th;
    unsigned char *buf;
    size_t bytes;
    uint64_t seed;
    int mode;
    unsigned delay;         /* spins before the first write */
    const uint8_t *src;     /* W_INPUT: the bytes written, over and over */
    size_t srclen;
    _Atomic int stop;
} writer;

static void *writer_main(void *arg)
{
    writer *w = arg;
    uint64_t s = w->seed | 1;
    unsigned flip = 0;
    for (volatile unsigned k = 0; k < w->delay && !atomic_load(&w->stop); k++)
        ;
    while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
        switch (w->mode) {
        case W_FLIP:
            memset(w->buf, flip++ & 1 ? 0xff : 0x00, w->bytes);
            break;
        case W_RANDOM:
            for (size_t i = 0; i + 8 <= w->bytes; i += 8) {
                uint64_t v = racer_rand(&s);
                memcpy(w->buf + i, &v, 8);
            }
            break;
        case W_RAMP:
            for (size_t i = 0; i < w->bytes; i++)
                w->buf[i] = (unsigned char)(w->bytes - i + flip);
            flip++;
            break;
        case W_POKE:
            for (unsigned k = 0; k < 64; k++)
                w->buf[racer_rand(&s) % w->bytes] = (unsigned char)racer_rand(&s);
            break;
        default:
            for (size_t i = 0; i < w->bytes; i++)
                w->buf[i] = w->src[(i + flip) % w->srclen];
            flip++;
            break;
        }
    }
    return NULL;
}

/* n bytes between two inaccessible pages, ending at the second. */
typedef struct gbuf {
    void *map;
    size_t len;
} gbuf;

static void *gbuf_alloc(gbuf *g, size_t bytes)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + pg - 1) / pg * pg;
    g->len = body + 2 * pg;
    g->map = mmap(NULL, g->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(g->map != MAP_FAILED);
    CHECK(mprotect((char *)g->map + pg, body, PROT_READ | PROT_WRITE) == 0);
    return (char *)g->map + pg + body - bytes;
}

static void gbuf_free(gbuf *g)
{
    if (g->map)
        munmap(g->map, g->len);
}

static uint64_t ld(const void *p, size_t w, size_t i)
{
    return w == 4 ? ((const uint32_t *)p)[i] : ((const uint64_t *)p)[i];
}

/* Without a writer: the keys in the requested order (encoded, ascending),
 * an argsort's indices each naming an input key equal to the key beside
 * it. */
static void check_sorted(const gs_sort_req *req, const void *in)
{
    size_t kw = gs_dtype_size(req->shape.dtype), n = req->n;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = ld(req->keys, kw, i);
        if (kw == 4)
            k = gs_key32_encode(req->shape.dtype, req->shape.descending, (uint32_t)k);
        else
            k = gs_key64_encode(req->shape.dtype, req->shape.descending, k);
        /* a bit range: in order by the range alone */
        const unsigned w = gs_shape_bit_width(&req->shape);
        const uint64_t f = (k >> gs_shape_bit_lo(&req->shape)) &
                           (w >= 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1);
        CHECK(i == 0 || prev <= f);
        prev = f;
        if (req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64) {
            uint64_t ix = ld(req->values, gs_payload_size(req->shape.payload), i);
            CHECK(ix < n);
            uint64_t o = ld(in, kw, (size_t)ix);
            if (kw == 4)
                o = gs_key32_encode(req->shape.dtype, req->shape.descending, (uint32_t)o);
            else
                o = gs_key64_encode(req->shape.dtype, req->shape.descending, o);
            CHECK(o == k);
        }
    }
}

static int cmp_enc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Top-k without a writer: the first k keys, encoded, are the input's k
 * smallest encodings in order; indices name input keys equal to them. */
static void check_topk(const gs_sort_req *req, const void *in)
{
    size_t kw = gs_dtype_size(req->shape.dtype), n = req->n, k = (size_t)req->shape.k;
    uint64_t *e = malloc((n + 1) * sizeof *e);
    CHECK(e);
    for (size_t i = 0; i < n; i++)
        e[i] = gs_key_encoded(req->shape.dtype, req->shape.descending, in, i);
    qsort(e, n, sizeof *e, cmp_enc);
    for (size_t i = 0; i < k; i++) {
        uint64_t g = gs_key_encoded(req->shape.dtype, req->shape.descending, req->keys, i);
        CHECK(g == e[i]);
        if (req->shape.payload == GS_PL_IDX32 || req->shape.payload == GS_PL_IDX64) {
            uint64_t ix = ld(req->values, gs_payload_size(req->shape.payload), i);
            CHECK(ix < n);
            CHECK(gs_key_encoded(req->shape.dtype, req->shape.descending, in, (size_t)ix) == g);
        }
    }
    (void)kw;
    free(e);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The k-way merge alone: runs sorted from the input, merged while the
 * writer rewrites them (a client's pieces in an out-of-core or split sort). */
static void run_merge(const gs_sort_req *req, unsigned nruns, unsigned parts, writer *w,
                      int on_vals)
{
    size_t n = req->n, ks = gs_dtype_size(req->shape.dtype),
           vs = gs_payload_size(req->shape.payload);
    size_t bounds[GS_MERGE_FANIN + 1];
    for (unsigned r = 0; r <= nruns; r++)
        bounds[r] = n * r / nruns;
    for (unsigned r = 0; r < nruns; r++)
        qsort((char *)req->keys + bounds[r] * ks, bounds[r + 1] - bounds[r], ks,
              ks == 4 ? cmp_u32 : cmp_u64);
    gbuf kb = { 0 }, vb = { 0 };
    void *kout = gbuf_alloc(&kb, n * ks), *vout = vs ? gbuf_alloc(&vb, n * vs) : NULL;
    gs_merge m = { .ks = ks, .vs = vs, .keys = req->keys, .vals = req->values, .kscr = kout,
                   .vscr = vout, .bounds = bounds, .nruns = nruns };
    if (w->mode != W_NONE) {
        w->buf = on_vals ? req->values : req->keys;
        w->bytes = n * (on_vals ? vs : ks);
        CHECK(pthread_create(&w->th, NULL, writer_main, w) == 0);
    }
    gs_hostpool_team team;
    gs_hostpool_join(&team, 3);
    int where = gs_merge_runs(&team, parts, &m, NULL);
    gs_hostpool_leave(&team);
    if (w->mode != W_NONE) {
        atomic_store(&w->stop, 1);
        pthread_join(w->th, NULL);
    } else {
        const void *o = where ? kout : req->keys;
        for (size_t i = 1; i < n; i++)
            CHECK(ld(o, ks, i - 1) <= ld(o, ks, i));
        CHECK(!atomic_load(&m.unsorted));
    }
    gbuf_free(&kb);
    gbuf_free(&vb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEAD)
        return 0;
    /* the head: what runs, on what, and the writer */
    unsigned conf = data[0] % 10;
    gs_dtype t = (gs_dtype)(data[1] % GS_DT_COUNT);
    gs_payload pl = (gs_payload)(data[2] % GS_PL_COUNT);
    int desc = data[3] & 1, on_vals = data[3] >> 1 & 1, stable = data[3] >> 2 & 1;
    int topk = data[3] >> 3 & 1;
    unsigned kq = data[3] >> 4;         /* top-k: k = 1, else kq fifteenths of n */
    size_t n = 1 + ((size_t)data[4] | (size_t)data[5] << 8) % MAX_N;
    static const long bits[] = { 0, 8, 11, 16, 1, 3, 5, 13 };
    static const long tops[] = { 0, 4, 8, 10, 12, 16 };
    long radix_bits = bits[data[6] & 7], top_bits = tops[(data[6] >> 3) % 6];
    long top_lines = 1L << (data[7] & 3) % 3, threads = 1 + (data[7] >> 2 & 3);
    writer w = { .mode = data[8] % W_COUNT, .delay = (unsigned)data[9] << 6 };
    memcpy(&w.seed, data + 10, 6);
    const uint8_t *body = data + HEAD;
    size_t blen = size - HEAD;
    w.src = blen ? body : data;
    w.srclen = blen ? blen : HEAD;

    const int vq = conf == 8, merge = conf == 9;
#ifndef HAVE_VQSORT
    if (vq)
        return 0;
#endif
    if (vq)
        pl = GS_PL_NONE;
    if (merge && (pl == GS_PL_IDX32 || pl == GS_PL_IDX64))
        pl = pl == GS_PL_IDX32 ? GS_PL_U32 : GS_PL_U64;
    size_t kw = gs_dtype_size(t), vw = gs_payload_size(pl);
    if (!vw)
        on_vals = 0;

    gbuf kb = { 0 }, vb = { 0 };
    gs_sort_req req = { .shape = { .dtype = t, .payload = pl, .descending = desc,
                                   .stable = stable && !vq },
                        .n = n };
    if (topk && !merge) {
        req.shape.topk = 1;
        req.shape.k = kq == 1 ? 1 : (uint64_t)n * kq / 15;
    } else if (kq && !merge && !vq && gs_dtype_row(t)->kind != GS_KIND_FLOAT) {
        /* a bit range: kq picks its lowest bit, the seed's first byte its width */
        const unsigned kbits = (unsigned)gs_dtype_size(t) * 8, lo = kq * 5 % kbits;
        req.shape.begin_bit = lo;
        req.shape.end_bit = lo + 1 + data[10] % (kbits - lo);
    }
    req.keys = gbuf_alloc(&kb, n * kw);
    req.values = vw ? gbuf_alloc(&vb, n * vw) : NULL;
    for (size_t i = 0; i < n * kw; i++)
        ((unsigned char *)req.keys)[i] = w.src[i % w.srclen];
    for (size_t i = 0; i < n * vw; i++)
        ((unsigned char *)req.values)[i] = (unsigned char)(i * 7);
    void *in = NULL;
    if (w.mode == W_NONE && !merge) {
        in = malloc(n * kw);
        CHECK(in);
        memcpy(in, req.keys, n * kw);
    }

    if (merge) {
        unsigned nruns = 1 + data[6] % (n < GS_MERGE_FANIN ? n : GS_MERGE_FANIN);
        run_merge(&req, nruns, 1 + data[7] % 16, &w, on_vals);
    } else {
        gs_params ps;
        gs_params_clear(&ps);
        const gs_algo *a = &gs_algo_host;
        size_t pc = 0, mc = 0;
        if (vq) {
#ifdef HAVE_VQSORT
            a = &gs_algo_vqsort;
#endif
            gs_params_set(&ps, "threads", threads);
        } else {
            /* 0 default, 1-2 msd=0 (2: line buffers), 3 msd=1, 4 msd=2,
             * 5 msd=0 chunks, 6 msd=1 chunks, 7 msd=1 keys-and-values past
             * the cache but not the keys (straight top pass) */
            static const int msd[] = { 1, 0, 0, 1, 2, 0, 1, 1 };
            gs_params_set(&ps, "msd", msd[conf]);
            gs_params_set(&ps, "threads", threads);
            gs_params_set(&ps, "radix_bits", radix_bits);
            gs_params_set(&ps, "top_bits", top_bits);
            gs_params_set(&ps, "top_lines", top_lines);
            pc = conf == 2 || conf == 3 || conf == 4 || conf == 6 ? 1
                 : conf == 7 ? n * kw + 1 : 0;
            mc = conf == 5 || conf == 6 ? 1 + n / 4 : 0;
            if (conf == 0) {
                gs_params_clear(&ps);
                gs_params_set(&ps, "threads", threads);
            }
        }
        size_t old_pc = gs_host_force_past_cache(pc), old_mc = gs_host_force_min_chunk(mc);
        if (w.mode != W_NONE) {
            w.buf = on_vals ? req.values : req.keys;
            w.bytes = n * (on_vals ? vw : kw);
            CHECK(pthread_create(&w.th, NULL, writer_main, &w) == 0);
        }
        gs_err err;
        gs_err_clear(&err);
        int rc = gs_sort_run(a, NULL, &req, &ps, NULL, &err);
        if (w.mode != W_NONE) {
            atomic_store(&w.stop, 1);
            pthread_join(w.th, NULL);
        }
        gs_host_force_past_cache(old_pc);
        gs_host_force_min_chunk(old_mc);
        if (w.mode == W_NONE) {
            CHECK(rc == 0);
            if (req.shape.topk)
                check_topk(&req, in);
            else
                check_sorted(&req, in);
        } else {
            CHECK(rc == 0 || (rc == GS_EINVAL && strstr(err.msg, "changed while")));
        }
    }
    free(in);
    gbuf_free(&kb);
    gbuf_free(&vb);
    return 0;
}
