/* One trial of the tuner: its input and its checks and its run. The inputs
 * are deterministic in (key class, payload, n, distribution), so that a
 * resumed run measures on the same data, and carry what makes the output
 * checks exact: every output must be sorted and a permutation of the input
 * (with a payload, each key still paired with its value) and, for a stable
 * algorithm, keep equal keys in input order. A run is a warm-up, which
 * pays any program build, then timed runs, every one checked; a wrong
 * result makes the configuration invalid with the reason recorded. */
#include "config.h"
#include "gs_tune_int.h"
#include "gs_algos.h"
#include "gs_narrow_sort.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A trial whose first timed run took longer than this uses at most 3 reps. */
#define SLOW_RUN_MS 250.0
/* From this n, the runs between the warm-up and the last timed one are
 * checked at sampled positions only: a full check costs more than a device
 * sort there (a random access per element), and the first and last runs of
 * every trial are still checked whole. */
#define SAMPLED_CHECK_N ((size_t)1 << 22)
#define SAMPLED_CHECKS 4096

const char *const gs_tune_dist_names[GS_TUNE_DIST_COUNT] = { "random", "sorted", "reversed",
                                                              "few16" };

/* The trials' registrations with a GPU (gs_pin.h): one per input whose
 * device algorithm ran, at most a quarter of the machine's memory pinned
 * at once (a tune in the daemon's background shares the machine with the
 * clients' blocks); an input past the cap is copied the pageable way, as
 * a client's block past max_pinned_bytes is. */
static gs_pin_budget tune_pins;
static pthread_once_t tune_pins_once = PTHREAD_ONCE_INIT;

static void tune_pins_init(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    atomic_store(&tune_pins.cap, pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4
                                                      : UINT64_C(1) << 32);
}

gs_pin_budget *gs_tune_pins(void)
{
    pthread_once(&tune_pins_once, tune_pins_init);
    return &tune_pins;
}

void gs_tune_input_free(gs_tune_input *t)
{
    free(t->in_k);
    free(t->in_v);
    if (t->wk) {
        gs_pin_release(&t->pin);
        munmap(t->wk, t->wlen);
    }
    free(t->seen);
    memset(t, 0, sizeof *t);
}

static uint64_t key_at(const gs_tune_input *t, const void *k, size_t i)
{
    return gs_key_get(k, i, t->ks);
}

static void key_hash(const gs_tune_input *t, const void *k, uint64_t *h1, uint64_t *h2)
{
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t x = key_at(t, k, i);
        a += gs_tune_mix64(x);
        b += gs_tune_mix64(x ^ UINT64_C(0xA5A5A5A5DEADBEEF));
    }
    *h1 = a;
    *h2 = b;
}

/* Keys of one distribution, deterministic in (key class, payload, n, dist),
 * so a resumed run measures on the same data. u32/u64 values carry their
 * input index (u64: in the low half, random bits above), which makes the
 * permutation and stability checks exact. */
int gs_tune_input_make(gs_tune_input *t, int key_bits, gs_payload pl, size_t n, int dist,
                       gs_err *err)
{
    const gs_dtype dt = gs_dtype_unsigned(key_bits);
    memset(t, 0, sizeof *t);
    t->dt = dt;
    t->nw = key_bits == 16 ? GS_NW_U16 : GS_NW_NONE;
    t->pl = pl;
    t->n = n;
    t->dist = dist;
    t->ks = t->nw ? 2 : gs_dtype_size(dt);
    t->vs = gs_payload_size(pl);
    t->in_k = malloc(n * t->ks);
    t->seen = malloc(n / 8 + 1);
    if (t->vs && (pl == GS_PL_U32 || pl == GS_PL_U64))
        t->in_v = malloc(n * t->vs);
    /* The sorted arrays in one page-aligned mapping, keys then values, as
     * a client's gsort_alloc block: registered for a GPU's DMA at the first
     * device trial (gs_tune_trial_run), so that a device algorithm's time
     * end to end is the daemon's, not that of pageable copies (which on
     * NVIDIA's OpenCL run at a quarter of the bus's rate and made a host
     * sort look as fast as a GPU's from 2^21 keys). */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t voff = (n * t->ks + pg - 1) / pg * pg;
    t->wlen = voff + (t->vs ? (n * t->vs + pg - 1) / pg * pg : 0);
    void *m = mmap(NULL, t->wlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        t->wk = m;
        t->wv = t->vs ? (char *)m + voff : NULL;
        gs_pin_init(&t->pin, m, t->wlen, gs_tune_pins());
    }
    if (!t->in_k || !t->wk || !t->seen || (t->vs && !t->wv) ||
        ((pl == GS_PL_U32 || pl == GS_PL_U64) && !t->in_v)) {
        gs_tune_input_free(t);
        return gs_err_set(err, GS_ENOMEM, "out of memory for a %zu-element trial input", n);
    }
    uint64_t seed = gs_tune_mix64(((uint64_t)dt << 40) ^ ((uint64_t)pl << 32) ^ n ^
                                  ((uint64_t)dist << 56) ^ ((uint64_t)t->nw << 48));
    uint64_t few[16];
    for (int i = 0; i < 16; i++)
        few[i] = gs_tune_mix64(seed + 1000 + (uint64_t)i);
    uint64_t kmax = gs_key_max(t->ks);
    uint64_t step = kmax / (n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t x;
        switch (dist) {
        case GS_TUNE_DIST_SORTED: x = (uint64_t)i * step; break;
        case GS_TUNE_DIST_REVERSED: x = (uint64_t)(n - 1 - i) * step; break;
        case GS_TUNE_DIST_FEW16: x = few[gs_tune_mix64(seed ^ i) & 15]; break;
        default: x = gs_tune_mix64(seed + i); break;
        }
        gs_key_put(t->in_k, i, t->ks, x);
        if (pl == GS_PL_U32)
            ((uint32_t *)t->in_v)[i] = (uint32_t)i;
        else if (pl == GS_PL_U64)
            ((uint64_t *)t->in_v)[i] = (gs_tune_mix64(i) << 32) | (uint64_t)i;
    }
    key_hash(t, t->in_k, &t->h1, &t->h2);
    return 0;
}

static void input_reset(gs_tune_input *t)
{
    memcpy(t->wk, t->in_k, t->n * t->ks);
    if (t->in_v)
        memcpy(t->wv, t->in_v, t->n * t->vs);
    else if (t->wv)
        memset(t->wv, 0xff, t->n * t->vs);   /* argsort output: stale indices must not pass */
}

/* Sorted ascending (unsigned order is u32/u64's total order) and a
 * permutation of the input: keys-only by a multiset hash, with a payload
 * exactly (every input index once, each key still paired with its value);
 * stable algorithms must also keep equal keys in input order. */
static int input_verify(gs_tune_input *t, int stable, char *why, size_t len)
{
    const size_t n = t->n;
    for (size_t i = 1; i < n; i++)
        if (key_at(t, t->wk, i - 1) > key_at(t, t->wk, i)) {
            snprintf(why, len, "wrong result: not sorted at index %zu", i);
            return 0;
        }
    if (!t->vs) {
        uint64_t a, b;
        key_hash(t, t->wk, &a, &b);
        if (a != t->h1 || b != t->h2) {
            snprintf(why, len, "wrong result: the keys are not a permutation of the input");
            return 0;
        }
        return 1;
    }
    memset(t->seen, 0, n / 8 + 1);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = t->vs == 4 ? ((uint32_t *)t->wv)[i] : ((uint64_t *)t->wv)[i];
        uint64_t idx = t->pl == GS_PL_U64 ? (v & UINT32_MAX) : v;
        if (idx >= n) {
            snprintf(why, len, "wrong result: value at index %zu does not come from the input", i);
            return 0;
        }
        if (t->seen[idx / 8] & (1u << (idx % 8))) {
            snprintf(why, len, "wrong result: (key, value) pairs are not a permutation of the "
                     "input (input element %llu appears twice)", (unsigned long long)idx);
            return 0;
        }
        t->seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
        if (key_at(t, t->wk, i) != key_at(t, t->in_k, (size_t)idx) ||
            (t->in_v && v != (t->vs == 4 ? ((uint32_t *)t->in_v)[idx]
                                         : ((uint64_t *)t->in_v)[idx]))) {
            snprintf(why, len, "wrong result: key and value at index %zu are not an input pair", i);
            return 0;
        }
        if (stable && i > 0 && key_at(t, t->wk, i) == key_at(t, t->wk, i - 1) && idx < prev) {
            snprintf(why, len, "wrong result: not stable (equal keys reordered at index %zu)", i);
            return 0;
        }
        prev = idx;
    }
    return 1;
}

/* The cheap check between the whole ones: sorted at sampled adjacent
 * pairs, and with a payload each sampled key still paired with its input
 * element. */
static int input_verify_sampled(gs_tune_input *t, unsigned run, char *why, size_t len)
{
    const size_t n = t->n;
    uint64_t x = gs_tune_mix64(n ^ ((uint64_t)run << 40));
    for (unsigned s = 0; s < SAMPLED_CHECKS; s++) {
        x = gs_tune_mix64(x + s);
        size_t i = 1 + (size_t)(x % (n - 1));
        if (key_at(t, t->wk, i - 1) > key_at(t, t->wk, i)) {
            snprintf(why, len, "wrong result: not sorted at index %zu (sampled check)", i);
            return 0;
        }
        if (!t->vs)
            continue;
        uint64_t v = t->vs == 4 ? ((uint32_t *)t->wv)[i] : ((uint64_t *)t->wv)[i];
        uint64_t idx = t->pl == GS_PL_U64 ? (v & UINT32_MAX) : v;
        if (idx >= n || key_at(t, t->wk, i) != key_at(t, t->in_k, (size_t)idx)) {
            snprintf(why, len, "wrong result: key and value at index %zu are not an input pair "
                     "(sampled check)", i);
            return 0;
        }
    }
    return 1;
}

int gs_tune_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void set_reason(gs_tune_result *r, const char *prefix, const gs_err *e)
{
    snprintf(r->reason, sizeof r->reason, "%s%.*s", prefix, GS_TUNE_REASON_MAX - 100,
             e->msg[0] ? e->msg : gs_strerror(e->code));
}

gs_sort_req gs_tune_input_req(const gs_tune_input *t)
{
    return (gs_sort_req){ .shape = { .dtype = t->dt, .payload = t->pl, .narrow = t->nw },
                          .n = t->n, .keys = t->wk, .values = t->wv };
}

int gs_tune_serves(const gs_algo *a, int key_bits, gs_payload pl, const gs_params *p,
                   gs_err *err)
{
    if (key_bits == 16)
        return pl == GS_PL_NONE && (a->half_keys || a == &gs_algo_host);
    gs_sort_req rq = { .shape = { .dtype = gs_dtype_unsigned(key_bits), .payload = pl },
                       .n = 1024 };
    return a->uses_device || !a->check || a->check(NULL, &rq, p, err) == 0;
}

/* The daemon's sort of narrow keys alone on its host route: their codes
 * counted (gs_narrow_sort.h), on the shared pool. */
static int count_run(const gs_tune_input *in, const gs_sort_req *req, gs_sort_stats *st,
                     gs_err *err)
{
    gs_shape sh = req->shape;
    sh.narrow = GS_NW_NONE;
    gs_narrow_job jb;
    gs_narrow_job_init(&jb, in->nw, &sh, req->n, req->keys, NULL, NULL);
    jb.counting = 1;
    memset(st, 0, sizeof *st);
    return gs_narrow_run(&jb, NULL, NULL, st, err);
}

void gs_tune_trial_run(gs_dev *device, gs_pcache *pc, int reps, const gs_algo *a,
                       gs_tune_input *in, const gs_params *p, gs_tune_result *r)
{
    memset(r, 0, sizeof *r);
    gs_sort_req req = gs_tune_input_req(in);
    /* the narrow keys on the host: the daemon's count, whatever algorithm */
    const int counted = in->nw && !a->half_keys;
    gs_dev *dev = a->uses_device ? device : NULL;
    gs_sort_ctx ctx = { .dev = dev, .pc = pc };
    /* a GPU copies from registered memory as it does from a client's
     * block; a CPU device is never registered (gs_pin.h) */
    if (dev && in->wk)
        ctx.host_pinned = gs_pin_ensure(&in->pin, dev) == GS_PIN_PINNED;
    gs_err e;
    gs_err_clear(&e);
    if (!counted && a->check && a->check(dev, &req, p, &e) < 0) {
        set_reason(r, "refused by check(): ", &e);
        return;
    }
    if (reps <= 0)
        reps = 5;
    int use_kernel = a->uses_device && device->info.profiling;
    double km[64], wm[64];
    if (reps > 64)
        reps = 64;
    for (int i = 0; i <= reps; i++) {
        gs_sort_stats st;
        input_reset(in);
        gs_err_clear(&e);
        if ((counted ? count_run(in, &req, &st, &e) : gs_sort_run(a, &ctx, &req, p, &st, &e)) <
            0) {
            set_reason(r, i ? "run failed after a good warm-up: " : "run failed: ", &e);
            return;
        }
        int whole = i == 0 || i == reps || in->n < SAMPLED_CHECK_N;
        if (whole ? !input_verify(in, a->stable, r->reason, sizeof r->reason)
                  : !input_verify_sampled(in, (unsigned)i, r->reason, sizeof r->reason))
            return;
        if (i == 0) {
            r->warm_wall = st.wall_ms;  /* includes any build */
            continue;
        }
        km[i - 1] = use_kernel ? st.kernel_ms : st.wall_ms;
        wm[i - 1] = st.wall_ms;
        if (i == 1 && st.wall_ms > SLOW_RUN_MS && reps > 3)
            reps = 3;
    }
    qsort(km, (size_t)reps, sizeof km[0], gs_tune_cmp_double);
    qsort(wm, (size_t)reps, sizeof wm[0], gs_tune_cmp_double);
    r->valid = 1;
    r->reps = reps;
    r->med = reps % 2 ? km[reps / 2] : (km[reps / 2 - 1] + km[reps / 2]) / 2;
    r->mn = km[0];
    r->mx = km[reps - 1];
    r->wmed = reps % 2 ? wm[reps / 2] : (wm[reps / 2 - 1] + wm[reps / 2]) / 2;
    r->wmn = wm[0];
    r->wmx = wm[reps - 1];
}
