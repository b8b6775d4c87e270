/* A sort of 8- or 16-bit keys (gs_narrow_sort.h): encoding and decoding on
 * the host pool, the NaN patterns kept, the words' sort in between (or the
 * keys' own, raw, where the route's algorithm takes 16-bit keys). */
#include "config.h"
#include "gs_narrow_sort.h"

#include <stdlib.h>
#include <string.h>

#include "gs_hostpool.h"
#include "gs_time.h"

#define TASK ((size_t)1 << 16)      /* keys a task takes */
/* Counting: a worker joins for every this many keys per code it counts
 * (65536 codes of 16-bit keys: one per 512 Ki keys), because each brings
 * a table of counts to clear, fill and merge. With a table per 64 Ki keys,
 * 16 workers took 4.4 ms for 2^20 f16 keys on an H100 machine's host, 2.4x
 * cupy from the same numpy array. */
#define COUNT_KEYS_PER_CODE 8
static size_t count_keys_per_code = COUNT_KEYS_PER_CODE;

size_t gs_narrow_count_keys_per_code(size_t k)
{
    size_t was = count_keys_per_code;
    count_keys_per_code = k ? k : COUNT_KEYS_PER_CODE;
    return was;
}

typedef struct pass {
    const gs_narrow_job *jb;
    size_t *nans;           /* per task: NaN codes among its words */
    int *odd;               /* per task: a NaN not the canonical one seen */
    /* the save (pass 2): where each task's NaNs go */
    size_t *at;
    uint16_t *bits;
    unsigned char *vals;
    size_t *starts;         /* rows, segments, top-k: each part's first saved NaN */
} pass;

/* Word i of the job's words (16 or 32 bits wide), and its store */
static inline uint32_t word_get(const gs_narrow_job *jb, size_t i)
{
    return jb->half ? ((const uint16_t *)jb->words)[i] : jb->words[i];
}

static inline void word_put(const gs_narrow_job *jb, size_t i, uint32_t c)
{
    if (jb->half)
        ((uint16_t *)jb->words)[i] = (uint16_t)c;
    else
        jb->words[i] = c;
}

static void span(const gs_narrow_job *jb, size_t task, size_t *lo, size_t *hi)
{
    *lo = task * TASK;
    *hi = *lo + TASK < jb->req.n ? *lo + TASK : jb->req.n;
}

/* The NaN code a word holds after the encoding (the order folded in). */
static uint32_t nan_code(const gs_narrow_job *jb)
{
    return jb->desc ? 0 : 0xffffu;
}

static void enc_task(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    pass *p = arg;
    const gs_narrow_job *jb = p->jb;
    const int t = jb->dt, desc = jb->desc;
    const unsigned b = gs_narrow_row(t)->bytes;
    const int fl = gs_narrow_row(t)->kind == GS_KIND_FLOAT;
    const uint32_t canon = gs_narrow_dec(t, 0, 0xffffu), nc = nan_code(jb);
    size_t lo, hi, nans = 0;
    int odd = 0;
    span(jb, task, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        uint32_t raw = (uint32_t)gs_key_get(jb->keys, i, b);
        int nan;
        if (jb->raw) {          /* no words: the NaNs counted alone */
            nan = gs_narrow_is_nan(t, raw);
        } else {
            uint32_t c = gs_narrow_enc(t, desc, raw);
            word_put(jb, i, c);
            nan = fl && c == nc;
        }
        if (nan) {
            nans++;
            odd |= raw != canon;
        }
    }
    if (fl) {
        p->nans[task] = nans;
        p->odd[task] = odd;
    }
}

/* Each NaN word's key bits (read again: what the client holds now) and
 * payload element, in input order, at the task's place. */
static void save_task(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    pass *p = arg;
    const gs_narrow_job *jb = p->jb;
    const unsigned b = gs_narrow_row(jb->dt)->bytes;
    const size_t vs = gs_payload_size(jb->req.shape.payload);
    const uint32_t nc = nan_code(jb);
    size_t lo, hi, at = p->at[task], end = p->at[task + 1];
    span(jb, task, &lo, &hi);
    for (size_t i = lo; i < hi && at < end; i++) {
        const uint32_t raw = (uint32_t)gs_key_get(jb->keys, i, b);
        if (jb->raw ? !gs_narrow_is_nan(jb->dt, raw) : word_get(jb, i) != nc)
            continue;
        p->bits[at] = (uint16_t)raw;
        switch (jb->req.shape.payload) {
        case GS_PL_U32: case GS_PL_U64:
            memcpy(p->vals + at * vs, (const char *)jb->req.values + i * vs, vs);
            break;
        case GS_PL_IDX32: { uint32_t x = (uint32_t)i; memcpy(p->vals + at * 4, &x, 4); break; }
        case GS_PL_IDX64: { uint64_t x = i; memcpy(p->vals + at * 8, &x, 8); break; }
        default: break;
        }
        at++;
    }
}

/* The parts of a request (rows, segments; one part when flat) and part
 * i's [lo, hi). */
static size_t nparts(const gs_sort_req *r)
{
    return r->shape.segments ? (size_t)r->shape.segments
                             : r->shape.rows > 1 ? (size_t)r->shape.rows : 1;
}

static void part_span(const gs_sort_req *r, size_t i, size_t *lo, size_t *hi)
{
    if (r->shape.segments) {
        *lo = (size_t)r->offsets[i];
        *hi = (size_t)r->offsets[i + 1];
    } else {
        *lo = i * (r->n / nparts(r));
        *hi = *lo + r->n / nparts(r);
    }
}

/* Before the words' sort of rows, segments or top-k: where each part's
 * NaNs start among the saved ones (they are in input order, where the
 * parts follow one another). starts: nparts + 1 entries. */
static void part_nan_starts(const gs_narrow_job *jb, size_t *starts)
{
    const gs_sort_req *r = &jb->req;
    const uint32_t nc = nan_code(jb);
    size_t at = 0, lo, hi;
    for (size_t part = 0; part < nparts(r); part++) {
        starts[part] = at;
        part_span(r, part, &lo, &hi);
        for (size_t i = lo; i < hi; i++)
            at += word_get(jb, i) == nc;
    }
    starts[nparts(r)] = at;
}

/* Rows, segments or top-k: each part's NaN words in its answer (the whole
 * part; top-k: its first k) take the part's saved bits and payload
 * elements in turn, argsort indices counted from the part's start. A
 * stable sort's (or select's) NaNs come in input order, and so do the
 * saved ones. */
static void restore_parts(const gs_narrow_job *jb, const pass *p, const size_t *starts)
{
    const gs_sort_req *r = &jb->req;
    const unsigned b = gs_narrow_row(jb->dt)->bytes;
    const size_t vs = gs_payload_size(r->shape.payload);
    const int idx = r->shape.payload == GS_PL_IDX32 || r->shape.payload == GS_PL_IDX64;
    const uint32_t nc = nan_code(jb);
    for (size_t part = 0; part < nparts(r); part++) {
        size_t lo, hi, at = starts[part];
        part_span(r, part, &lo, &hi);
        if (r->shape.topk && hi - lo > r->shape.k)
            hi = lo + (size_t)r->shape.k;
        for (size_t i = lo; i < hi && at < starts[part + 1]; i++) {
            if (word_get(jb, i) != nc)
                continue;
            gs_key_put(jb->keys, i, b, p->bits[at]);
            if (vs && r->values) {
                uint64_t v = gs_key_get(p->vals, at, vs);
                gs_key_put(r->values, i, vs, idx ? v - lo : v);
            }
            at++;
        }
    }
}

static void dec_task(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    const pass *p = arg;
    const gs_narrow_job *jb = p->jb;
    const int t = jb->dt, desc = jb->desc;
    const unsigned b = gs_narrow_row(t)->bytes;
    size_t lo, hi;
    span(jb, task, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        gs_key_put(jb->keys, i, b, gs_narrow_dec(t, desc, word_get(jb, i)));
}

/* ---- keys without a payload: counting their codes ---- */

/* LOOP(T, D, KB) once per narrow type and order, with the type, the order
 * and the key's bytes as constants, so that the encoding and the key's
 * load fold in the loops over keys below */
#define PER_ORDER(desc, LOOP, T, KB)                                           \
    do { if (desc) { LOOP(T, 1, KB) } else { LOOP(T, 0, KB) } } while (0)
#define PER_TYPE(t, desc, LOOP)                                                \
    switch (t) {                                                               \
    case GS_NW_U8: PER_ORDER(desc, LOOP, GS_NW_U8, 1); break;                  \
    case GS_NW_I8: PER_ORDER(desc, LOOP, GS_NW_I8, 1); break;                  \
    case GS_NW_U16: PER_ORDER(desc, LOOP, GS_NW_U16, 2); break;                \
    case GS_NW_I16: PER_ORDER(desc, LOOP, GS_NW_I16, 2); break;                \
    case GS_NW_F16: PER_ORDER(desc, LOOP, GS_NW_F16, 2); break;                \
    default: PER_ORDER(desc, LOOP, GS_NW_BF16, 2); break;                      \
    }

typedef struct count_job {
    const gs_narrow_job *jb;
    size_t ncodes;
    uint64_t *hist;         /* per worker: ncodes counts */
    int *odd;               /* per worker: a NaN not the canonical one seen */
    size_t *tnan;           /* per task: its NaNs; then where their bits go */
    uint16_t *nanbits;      /* the NaNs' bits in input order */
    const uint64_t *total;  /* merged counts */
    uint32_t *lo;           /* part p writes the codes [lo[p], lo[p + 1]) */
    size_t *at;             /* from place at[p] */
} count_job;

static void hist_task(void *arg, size_t task, unsigned worker)
{
    count_job *c = arg;
    const gs_narrow_job *jb = c->jb;
    const int t = jb->dt, desc = jb->desc;
    const int fl = gs_narrow_row(t)->kind == GS_KIND_FLOAT;
    const uint32_t canon = gs_narrow_dec(t, 0, 0xffffu);
    uint64_t *h = c->hist + (size_t)worker * c->ncodes;
    size_t lo, hi, nans = 0;
    int odd = 0;
    span(jb, task, &lo, &hi);
#define HIST_LOOP(T, D, KB)                                                    \
    for (size_t i = lo; i < hi; i++) {                                         \
        uint32_t raw = (uint32_t)gs_key_get(jb->keys, i, KB);                  \
        h[gs_narrow_enc(T, D, raw)]++;                                         \
        if (fl) {                                                              \
            int nan = gs_narrow_is_nan(T, raw);                                \
            nans += (size_t)nan;                                               \
            odd |= nan & (raw != canon);                                       \
        }                                                                      \
    }
    PER_TYPE(t, desc, HIST_LOOP)
#undef HIST_LOOP
    c->tnan[task] = nans;
    if (odd)
        c->odd[worker] = 1;
}

/* A task's NaNs' bits, from its place in nanbits (at most as many as it
 * counted: a racing client's rewrites decide nothing) */
static void nan_task(void *arg, size_t task, unsigned worker)
{
    (void)worker;
    const count_job *c = arg;
    const gs_narrow_job *jb = c->jb;
    size_t lo, hi, at = c->tnan[task], end = c->tnan[task + 1];
    span(jb, task, &lo, &hi);
    for (size_t i = lo; i < hi && at < end; i++) {
        uint32_t raw = (uint32_t)gs_key_get(jb->keys, i, 2);
        if (gs_narrow_is_nan(jb->dt, raw))
            c->nanbits[at++] = (uint16_t)raw;
    }
}

static void write_task(void *arg, size_t part, unsigned worker)
{
    (void)worker;
    const count_job *c = arg;
    const gs_narrow_job *jb = c->jb;
    const int t = jb->dt, desc = jb->desc;
    const unsigned b = gs_narrow_row(t)->bytes;
    size_t at = c->at[part];
    for (uint32_t code = c->lo[part]; code < c->lo[part + 1]; code++) {
        const uint64_t k = c->total[code];
        if (!k)
            continue;
        const uint32_t v = gs_narrow_dec(t, desc, code);
        if (b == 1) {
            memset((uint8_t *)jb->keys + at, (int)v, (size_t)k);
            at += (size_t)k;
        } else {
            for (uint64_t j = 0; j < k; j++)
                gs_key_put(jb->keys, at++, 2, v);
        }
    }
}

/* Fewer keys than codes: a table of 65536 counts costs more to clear and
 * walk than the keys do (0.45 ms for 1024 u16 keys on the 2-core
 * machine, where numpy sorts them in 10 us). Each key instead becomes a
 * word of its code over its own bits, sorted stably by the code's 8-bit
 * digits (LSD, one or two passes): the bits ride along, so NaN patterns
 * and +-0 need nothing more, and each key is read once. */
static int small_run(const gs_narrow_job *jb, gs_err *err)
{
    const size_t n = jb->req.n;
    const int t = jb->dt, desc = jb->desc;
    const unsigned b = gs_narrow_row(t)->bytes;
    uint32_t *w = malloc(2 * n * sizeof *w);
    if (!w)
        return gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory (%zu keys)", n);
    uint32_t *to = w + n;
    /* the words, and both digits' counts on the way */
    size_t cnt[2][256] = { { 0 } };
#define SMALL_LOOP(T, D, KB)                                                   \
    for (size_t i = 0; i < n; i++) {                                           \
        const uint32_t raw = (uint32_t)gs_key_get(jb->keys, i, KB);            \
        const uint32_t c = gs_narrow_enc(T, D, raw);                           \
        w[i] = c << 16 | raw;                                                  \
        cnt[0][c & 0xffu]++;                                                   \
        cnt[1][c >> 8]++;                                                      \
    }
    PER_TYPE(t, desc, SMALL_LOOP)
#undef SMALL_LOOP
    /* a pass per digit of the code (8-bit keys: one) that not every key shares */
    for (unsigned d = 0; d < b; d++) {
        size_t *c = cnt[d];
        const unsigned shift = 16 + 8 * d;
        if (c[(w[0] >> shift) & 0xffu] == n)
            continue;
        for (size_t k = 0, at = 0; k < 256; k++) {
            const size_t m = c[k];
            c[k] = at;
            at += m;
        }
        for (size_t i = 0; i < n; i++)
            to[c[(w[i] >> shift) & 0xffu]++] = w[i];
        uint32_t *x = w;
        w = to;
        to = x;
    }
    /* the keys' own bits, in order (the caller's array may be unaligned) */
    if (b == 1)
        for (size_t i = 0; i < n; i++)
            gs_key_put(jb->keys, i, 1, w[i] & 0xffu);
    else
        for (size_t i = 0; i < n; i++)
            gs_key_put(jb->keys, i, 2, w[i] & 0xffffu);
    free(w < to ? w : to);
    return 0;
}

static int counting_run(const gs_narrow_job *jb, gs_sort_stats *st, gs_err *err)
{
    const size_t n = jb->req.n, ntasks = (n + TASK - 1) / TASK;
    const unsigned b = gs_narrow_row(jb->dt)->bytes;
    const size_t ncodes = (size_t)1 << (8 * b);
    double t0 = gs_now_ms();
    if (n < ncodes) {
        int rc = small_run(jb, err);
        st->wall_ms += gs_now_ms() - t0;
        return rc;
    }
    gs_hostpool_team team;
    /* as many workers as there are tables' worth of keys, at most a task each */
    size_t want = n / (count_keys_per_code * ncodes);
    want = want < ntasks ? want : ntasks;
    const int team_up = want > 1 && !jb->one_thread;
    unsigned helpers = gs_hostpool_cpus() - 1;
    if (want - 1 < helpers)
        helpers = (unsigned)(want - 1);
    unsigned workers = team_up ? gs_hostpool_join(&team, helpers) : 1;
    count_job c = { .jb = jb, .ncodes = ncodes };
    uint64_t *total = NULL;
    int rc = 0;
    /* one worker counts straight into the total */
    c.hist = calloc((size_t)workers * ncodes, sizeof *c.hist);
    c.odd = calloc(workers, sizeof *c.odd);
    total = workers > 1 ? calloc(ncodes, sizeof *total) : c.hist;
    c.lo = calloc(workers + 1, sizeof *c.lo);
    c.at = calloc(workers + 1, sizeof *c.at);
    c.tnan = calloc(ntasks + 1, sizeof *c.tnan);
    if (!c.hist || !c.odd || !total || !c.lo || !c.at || !c.tnan) {
        rc = gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory (counts)");
        goto out;
    }
    if (workers > 1)
        gs_hostpool_for(&team, ntasks, hist_task, &c);
    else
        for (size_t t = 0; t < ntasks; t++)
            hist_task(&c, t, 0);
    int odd = 0;
    for (unsigned w = 0; w < workers; w++) {
        odd |= c.odd[w];
        const uint64_t *h = c.hist + (size_t)w * ncodes;
        for (size_t k = 0; workers > 1 && k < ncodes; k++)
            total[k] += h[k];
    }
    /* Non-canonical NaNs: their bits in input order, read before the keys
     * are overwritten, each task's from its place (the NaN code's count is
     * the sum of the tasks' counts: the block they go over holds them) */
    const uint32_t nc = nan_code(jb);
    size_t nans = odd ? (size_t)total[nc] : 0;
    if (nans) {
        if (!(c.nanbits = calloc(nans, sizeof *c.nanbits))) {
            rc = gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory (%zu NaN keys)", nans);
            goto out;
        }
        size_t sum = 0;
        for (size_t t = 0; t < ntasks; t++) {
            size_t k = c.tnan[t];
            c.tnan[t] = sum;
            sum += k;
        }
        c.tnan[ntasks] = sum;
        if (workers > 1)
            gs_hostpool_for(&team, ntasks, nan_task, &c);
        else
            for (size_t t = 0; t < ntasks; t++)
                nan_task(&c, t, 0);
    }
    /* the code space cut into parts of about n / workers keys each */
    c.total = total;
    unsigned parts = 0;
    size_t at = 0, acc = 0, share = n / workers + 1;
    c.lo[0] = 0;
    c.at[0] = 0;
    for (size_t k = 0; workers > 1 && k < ncodes; k++) {
        at += (size_t)total[k];
        acc += (size_t)total[k];
        if (acc >= share && parts + 1 < workers && k + 1 < ncodes) {
            parts++;
            c.lo[parts] = (uint32_t)(k + 1);
            c.at[parts] = at;
            acc = 0;
        }
    }
    parts++;
    c.lo[parts] = (uint32_t)ncodes;
    if (workers > 1)
        gs_hostpool_for(&team, parts, write_task, &c);
    else
        for (unsigned p = 0; p < parts; p++)
            write_task(&c, p, 0);
    if (nans) {     /* over the NaN block: the last ascending, the first descending */
        size_t first = jb->desc ? 0 : n - nans;
        for (size_t i = 0; i < nans; i++)
            gs_key_put(jb->keys, first + i, b, c.nanbits[i]);
    }
out:
    if (team_up)
        gs_hostpool_leave(&team);
    st->wall_ms += gs_now_ms() - t0;      /* the sort's: no words to pack */
    if (total != c.hist)
        free(total);
    free(c.hist);
    free(c.odd);
    free(c.lo);
    free(c.at);
    free(c.tnan);
    free(c.nanbits);
    return rc;
}

void gs_narrow_job_init(gs_narrow_job *jb, int dt, const gs_shape *shape, size_t n, void *keys,
                        void *values, uint32_t *words)
{
    memset(jb, 0, sizeof *jb);
    jb->dt = dt;
    jb->desc = shape->descending;
    jb->keys = keys;
    jb->words = words;
    jb->req.shape = *shape;
    jb->req.shape.dtype = GS_DT_U32;
    jb->req.shape.descending = 0;       /* in the encoding */
    jb->req.shape.plan16 = 1;           /* routed by the 16-bit key class's plan */
    jb->req.n = n;
    jb->req.keys = words;
    jb->req.values = values;
}

int gs_narrow_fit(gs_narrow_job *jb, const gs_algo *a, int in_core_device)
{
    const gs_narrow_info *row = gs_narrow_row(jb->dt);
    const int flat = gs_shape_flat(&jb->req.shape);
    const int takes = row && a && a->half_keys && flat && in_core_device;
    jb->raw = takes && row->bytes == 2;
    jb->half = takes && row->bytes == 1;
    jb->req.keys = jb->raw ? jb->keys : (void *)jb->words;
    jb->req.shape.narrow = jb->raw ? jb->dt : jb->half ? GS_NW_U16 : GS_NW_NONE;
    jb->req.shape.descending = jb->raw ? jb->desc : 0;     /* else in the encoding */
    jb->req.shape.end_bit = !jb->raw && row && a && a->bit_range && flat ? row->bytes * 8 : 0;
    return takes;
}

int gs_narrow_run(const gs_narrow_job *jb, gs_narrow_fn fn, void *arg, gs_sort_stats *st,
                  gs_err *err)
{
    const size_t n = jb->req.n;
    if (n == 0)
        return 0;
    if (!gs_narrow_row(jb->dt))
        return gs_err_set(err, GS_EINVAL, "narrow sort: key type %d unknown", jb->dt);
    const int parted = !gs_shape_flat(&jb->req.shape);
    if (jb->counting && jb->req.shape.payload == GS_PL_NONE && !parted)
        return counting_run(jb, st, err);
    const size_t ntasks = (n + TASK - 1) / TASK;
    const size_t vs = gs_payload_size(jb->req.shape.payload);
    const int fl = gs_narrow_row(jb->dt)->kind == GS_KIND_FLOAT;
    pass p = { .jb = jb };
    int rc = 0;
    double t0 = gs_now_ms();
    if (fl &&
        (!(p.nans = calloc(ntasks, sizeof *p.nans)) || !(p.odd = calloc(ntasks, sizeof *p.odd)) ||
         !(p.at = calloc(ntasks + 1, sizeof *p.at)))) {
        rc = gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory");
        goto out;
    }
    /* raw keys of an integer type: nothing to encode or to save */
    if (!jb->raw || fl)
        gs_hostpool_run(ntasks, jb->one_thread, enc_task, &p);
    size_t count = 0;
    int odd = 0;
    for (size_t t = 0; p.nans && t < ntasks; t++) {
        p.at[t] = count;
        count += p.nans[t];
        odd |= p.odd[t];
    }
    if (p.at)
        p.at[ntasks] = count;
    if (count && odd) {     /* some NaN is not canonical: keep them all, in order */
        if (!(p.bits = malloc(count * (2 + vs) + 1))) {
            rc = gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory (%zu NaN keys)",
                            count);
            goto out;
        }
        p.vals = (unsigned char *)(p.bits + count);
        gs_hostpool_run(ntasks, jb->one_thread, save_task, &p);
        if (parted) {
            if (!(p.starts = malloc((nparts(&jb->req) + 1) * sizeof *p.starts))) {
                rc = gs_err_set(err, GS_ENOMEM, "narrow sort: out of memory (%zu parts)",
                                nparts(&jb->req));
                goto out;
            }
            part_nan_starts(jb, p.starts);
        }
    }
    st->pack_ms += gs_now_ms() - t0;

    gs_sort_stats one;
    memset(&one, 0, sizeof one);
    rc = fn(arg, &jb->req, &one, err);
    gs_sort_stats_add(st, &one);
    st->wall_ms += one.wall_ms;
    st->chunks += one.chunks;
    st->merge_ms += one.merge_ms;
    if (rc < 0) {
        /* the keys were only read (raw: sorted where they lie, maybe
         * touched); values sorted in place may be touched */
        st->output_touched = one.output_touched && (jb->raw ||
                                                    jb->req.shape.payload == GS_PL_U32 ||
                                                    jb->req.shape.payload == GS_PL_U64);
        goto out;
    }
    t0 = gs_now_ms();
    if (!jb->raw)       /* raw: the device decoded them, NaNs to the canonical one */
        gs_hostpool_run(ntasks, jb->one_thread, dec_task, &p);
    if (p.bits && parted) {
        restore_parts(jb, &p, p.starts);
    } else if (p.bits) {
        /* the NaN block: the last count words ascending, the first descending */
        size_t first = jb->desc ? 0 : n - count;
        const unsigned b = gs_narrow_row(jb->dt)->bytes;
        for (size_t i = 0; i < count; i++)
            gs_key_put(jb->keys, first + i, b, p.bits[i]);
        if (vs && jb->req.values)
            memcpy((char *)jb->req.values + first * vs, p.vals, count * vs);
    }
    st->pack_ms += gs_now_ms() - t0;
out:
    free(p.nans);
    free(p.odd);
    free(p.at);
    free(p.bits);
    free(p.starts);
    return rc;
}
