/* What the tuner's files share and nothing else uses (the tuner's
 * "internal.h"): its deterministic randomness, the key distributions of the
 * trial inputs, a parameter space's code arithmetic, one trial's input,
 * checks and run, the winners' and the plan's database writes, the CPU
 * probe, and the measuring half of the sampled-versus-exhaustive
 * comparison. It includes only core headers and names the tuner's public
 * types by their struct tags, so that gs_tune.c can include it without an
 * include circle through gs_tune.h. */
#ifndef GS_TUNE_INT_H
#define GS_TUNE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_pin.h"
#include "gs_prog.h"
#include "gs_sort.h"

struct gs_tune_space;
struct gs_tune_opts;
struct gs_tune_winner;
struct gs_tune_devreport;

/* ---- randomness: splitmix64, deterministic everywhere ---- */

static inline uint64_t gs_tune_mix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static inline uint64_t gs_tune_rng_next(uint64_t *s)
{
    *s += UINT64_C(0x9E3779B97F4A7C15);
    return gs_tune_mix64(*s);
}

/* A sampler's seed per algorithm: the run's seed mixed with its name. */
static inline uint64_t gs_tune_hash_str(uint64_t h, const char *s)
{
    h ^= UINT64_C(0xCBF29CE484222325);
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001B3);
    return gs_tune_mix64(h);
}

/* ---- parameter spaces (gs_space.c) ---- */

/* A code's index vector (first parameter fastest) and back. */
void gs_tune_code_split(const struct gs_tune_space *s, uint64_t code, size_t *idx);
uint64_t gs_tune_code_join(const struct gs_tune_space *s, const size_t *idx);
/* "radix_bits=8,wg_size=64"; "-" for no parameters, "?" if unprintable. */
void gs_tune_params_text(const gs_params *p, char *buf, size_t len);

/* ---- one trial: inputs, checks, the run (gs_trial.c) ---- */

enum { GS_TUNE_DIST_RANDOM = 0, GS_TUNE_DIST_SORTED, GS_TUNE_DIST_REVERSED, GS_TUNE_DIST_FEW16,
       GS_TUNE_DIST_COUNT };
/* Their names in the database ("random", ...). */
extern const char *const gs_tune_dist_names[GS_TUNE_DIST_COUNT];

#define GS_TUNE_REASON_MAX 1000

typedef struct gs_tune_input {
    gs_dtype dt;            /* u32 for the narrow keys' class */
    int nw;                 /* the 16-bit class: GS_NW_U16 (keys of 2 bytes); else 0 */
    gs_payload pl;
    size_t n, ks, vs;
    int dist;
    void *in_k, *in_v;      /* input (in_v: u32/u64 payloads only) */
    void *wk, *wv;          /* what the algorithm sorts: one mapping of wlen bytes
                               from wk, registered with a GPU as a client's block is
                               (pin) */
    size_t wlen;
    gs_pin pin;
    uint64_t h1, h2;        /* multiset hash of the input keys */
    uint8_t *seen;          /* bitmap for the permutation check */
} gs_tune_input;

/* Keys of one distribution, deterministic in (key class, payload, n, dist),
 * so a resumed run measures on the same data. key_bits: a key width
 * (gs_kw_bits): 32 and 64 are u32 and u64 keys, 16 the narrow keys' class,
 * timed as u16 keys. */
int gs_tune_input_make(gs_tune_input *t, int key_bits, gs_payload pl, size_t n, int dist,
                       gs_err *err);
/* The request that sorts t's working arrays (wk, wv). */
gs_sort_req gs_tune_input_req(const gs_tune_input *t);
/* Whether algorithm a serves the key class key_bits with payload pl in a
 * tune: every class, for a device algorithm (its refusals depend on its
 * parameters), or a host one its check accepts with params p (host
 * algorithms' parameters are thread counts and pass shapes). The narrow
 * keys' class is timed for keys alone, where the daemon sends them: to an
 * algorithm that sorts 16-bit keys itself (radix), or to the host's count,
 * which the host sort stands for (no other host algorithm is ever asked
 * for them). */
int gs_tune_serves(const gs_algo *a, int key_bits, gs_payload pl, const gs_params *p,
                   gs_err *err);
void gs_tune_input_free(gs_tune_input *t);

/* Result of running one configuration. */
typedef struct gs_tune_result {
    int valid;
    char reason[GS_TUNE_REASON_MAX];
    double med, mn, mx;     /* timing used to rank (kernel, or wall) */
    double wmed, wmn, wmx;  /* wall time, transfers included */
    int reps;
    double warm_wall;       /* ms, the warm-up (includes any build) */
} gs_tune_result;

/* The budget the trials' inputs register with a GPU under (gs_pin.h);
 * tests set any_device to register on PoCL too. */
gs_pin_budget *gs_tune_pins(void);
/* Warm-up, then `reps` timed runs (<= 0: 5) of `a` on `dev` (ignored by a
 * host algorithm); every output is checked. The verdict and the times go
 * into r. */
void gs_tune_trial_run(gs_dev *dev, gs_pcache *pc, int reps, const gs_algo *a,
                       gs_tune_input *in, const gs_params *p, gs_tune_result *r);
/* qsort comparator of doubles, ascending. */
int gs_tune_cmp_double(const void *a, const void *b);

/* ---- winners and the plan in the database (gs_plan.c) ---- */

/* A winner's end-to-end time as the plan compares it: the host's wall
 * time; a device algorithm's kernel time plus the least transfer time any
 * device algorithm of its group measured (the same bytes cross the same
 * bus for each, and the tuner's pageable copies swing by more than the
 * kernels differ); its measured e2e when it has no kernel time. */
double gs_tune_winner_ms(const struct gs_tune_devreport *R, const struct gs_tune_winner *w);
/* The same for the winner's baseline (its algorithm's defaults in the
 * group); -1 when that was not measured. */
double gs_tune_base_ms(const struct gs_tune_devreport *R, const struct gs_tune_winner *w);
/* Add w to the report's winners, replacing the same (algorithm, group)'s;
 * GS_ENOMEM. */
int gs_tune_winner_add(struct gs_tune_devreport *R, const struct gs_tune_winner *w);
/* Record w as the winner of its group (n = 2^bucket) on device dev_id,
 * linked to its trial; fills in w->e2e_ms from the end-to-end twin (host
 * algorithm: its own time). */
int gs_tune_winner_save(gs_db *db, int64_t dev_id, const char *code_id, int uses_device,
                        struct gs_tune_winner *w, gs_err *err);
/* Report order: bucket, key class, payload, then algorithm (stable). */
void gs_tune_winners_sort(struct gs_tune_devreport *R);
/* The serving plan from R's winners, written in one transaction and kept
 * in R. */
int gs_tune_plan_write(gs_db *db, int64_t dev_id, struct gs_tune_devreport *R, gs_err *err);

/* ---- the CPU probe (gs_cpuprobe.c) ---- */

/* An algorithm as the probe sees it (the tuning loop keeps the rest). */
typedef struct gs_tune_probe_algo {
    const gs_algo *a;
    int ok;                 /* in this tune; the probe clears it to leave the algorithm out */
    int serves;             /* it serves the probe shape */
} gs_tune_probe_algo;

/* What the probe asks of the tuning loop (gs_tune.c), which calls it: the
 * probe reaches the loop's trials only through these. */
typedef struct gs_tune_probe_fns {
    void *ud;
    /* 1 when algorithm i's defaults were timed at the probe shape (key
     * width kc, payload pl) before: then deciding costs no build */
    int (*recorded)(void *ud, size_t i, int kc, gs_payload pl);
    /* Time algorithm i's defaults at the probe shape, a trial recorded as
     * any other: 0 (*ms, *valid set), GS_TUNE_STOP (cancelled), or an error */
    int (*measure)(void *ud, size_t i, int kc, gs_payload pl, double *ms, int *valid,
                   gs_err *err);
    /* the progress line's phase, and what it is at */
    void (*phase)(void *ud, const char *phase, const char *what);
} gs_tune_probe_fns;

/* The probe shape: the run's first key width, keys alone when the run
 * includes them (else its first payload). */
void gs_tune_probe_shape(const struct gs_tune_opts *o, int *kc, gs_payload *pl);
/* On a CPU device (R->cpu), unless o->cpu_probe is GS_TUNE_PROBE_OFF: time
 * each device algorithm's defaults at the probe shape at n = 2^probe_b
 * beside the host sorts' (the programs built first, on dev through pc),
 * and clear A[i].ok of one more than GS_TUNE_CPU_DROP times the fastest
 * host sort, saying which and why in R->dropped; in GS_TUNE_PROBE_RECORDED
 * mode, also of one with no recorded probe, unbuilt. Takes no time limit
 * of its own (the caller's trials must not be refused for time). 0 or an
 * error (the database). */
int gs_tune_probe_cpu(gs_dev *dev, gs_pcache *pc, const struct gs_tune_opts *o, int probe_b,
                      gs_tune_probe_algo *A, size_t na, const gs_tune_probe_fns *f,
                      struct gs_tune_devreport *R, gs_err *err);

/* ---- the comparison's measurements (gs_tune.c) ---- */

/* Measure, or reuse from the database, every configuration of `sp` for `a`
 * on u32 keys, no payload, n keys, in code order until `deadline`, as the
 * tuner's trials are (resumable). ms/valid per code; *measured: how many
 * codes got a result; R counts the trials measured, reused and invalid.
 * Returns 0, GS_TUNE_STOP (budget), or an error. */
int gs_tune_measure_all(gs_db *db, gs_dev *dev, gs_pcache *pc, int64_t dev_id,
                        const char *code_id, const gs_algo *a, const struct gs_tune_space *sp,
                        size_t n, const struct gs_tune_opts *o, double deadline, double *ms,
                        int *valid, uint64_t *measured, struct gs_tune_devreport *R, gs_err *err);

#endif
