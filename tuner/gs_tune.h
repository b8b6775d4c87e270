/* The tuner behind `gsortd --tune-all`: for every device, algorithm, key
 * class (u32/u64 keys), payload kind and size bucket (n = 2^b) it searches
 * the algorithm's parameter space (legal values from the registry's param
 * defs for that device), checks every candidate's output, times it (kernel
 * time from profiling events; host: wall clock), records every trial in the
 * tuning database as it completes, and writes the winners per group and the
 * serving plan per device. A rerun looks every trial up first and reuses it,
 * so a killed run resumes where it stopped. Everything runs against a wall
 * clock budget. The search core (space, sampler, search) is exposed for the
 * tests and for the sampled-versus-exhaustive comparison. See
 * docs/TUNING.md. */
#ifndef GS_TUNE_H
#define GS_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_prog.h"
#include "gs_sort.h"

#define GS_TUNE_DEFAULT_BUDGET 270.0  /* seconds: leaves room for one overrunning trial */
#define GS_TUNE_QUICK_BUDGET 15.0
#define GS_TUNE_MIN_LOG2 10
#define GS_TUNE_MAX_LOG2 28
#define GS_TUNE_MAX_VALUES 64         /* legal values kept per parameter */

/* A search callback's answer that ends the search (budget, trial cap). */
#define GS_TUNE_STOP 1

enum gs_tune_strategy {
    GS_TUNE_AUTO = 0,     /* exhaustive when the space fits the sample quota */
    GS_TUNE_EXHAUSTIVE,
    GS_TUNE_SAMPLED,      /* random samples, then hill climbing */
};

/* ---- parameter spaces ---- */

typedef struct gs_tune_space {
    size_t np;
    const char *name[GS_MAX_PARAMS];
    int by_n[GS_MAX_PARAMS];   /* gs_param_def.by_n */
    long val[GS_MAX_PARAMS][GS_TUNE_MAX_VALUES];  /* ascending legal values */
    size_t nv[GS_MAX_PARAMS];
    uint64_t total;       /* product of nv (1 for no parameters) */
} gs_tune_space;

/* The space of `a` on a device (`info` NULL: host). `restrict_spec`
 * ("radix_bits=4:8,wg_size=64", may be NULL) keeps only the listed values
 * of the named parameters (names a does not have are ignored). A parameter
 * with no legal value left is GS_EUNSUPPORTED. */
int gs_tune_space_init(gs_tune_space *s, const gs_algo *a, const gs_dev_info *info,
                       const char *restrict_spec, gs_err *err);
/* A point's code is its mixed-radix index vector (first parameter fastest). */
void gs_tune_space_params(const gs_tune_space *s, uint64_t code, gs_params *out);
/* Code of a parameter set whose values are all legal; GS_ENOTFOUND if not. */
int gs_tune_space_code(const gs_tune_space *s, const gs_params *p, uint64_t *code);
/* Check a --restrict spec's syntax (names and integer lists). */
int gs_tune_restrict_check(const char *spec, gs_err *err);

/* ---- random sampling without replacement, deterministic in the seed ---- */

typedef struct gs_tune_sampler {
    uint64_t total, rng;
    uint64_t *perm;       /* shuffled codes, for spaces up to 2^16 points */
    size_t next;
    uint64_t *drawn;      /* codes handed out, for larger spaces */
    size_t ndrawn, cap;
} gs_tune_sampler;

int gs_tune_sampler_init(gs_tune_sampler *s, uint64_t total, uint64_t seed, gs_err *err);
/* 0 and the next code, or GS_TUNE_STOP when the space is used up. */
int gs_tune_sampler_next(gs_tune_sampler *s, uint64_t *code);
void gs_tune_sampler_free(gs_tune_sampler *s);

/* ---- one search over one space ---- */

/* Evaluate one point: 0 with *ms and *valid set, GS_TUNE_STOP to end the
 * search without evaluating it, or a negative GS_E* code (search fails). */
typedef int (*gs_tune_eval_fn)(void *ud, uint64_t code, double *ms, int *valid, gs_err *err);

typedef struct gs_tune_eval {
    uint64_t code;
    double ms;
    int valid;
} gs_tune_eval;

typedef struct gs_tune_search {
    gs_tune_eval *ev;     /* every point evaluated, in order */
    size_t nev, cap;
    long best;            /* index into ev of the fastest valid point, -1: none */
    int stopped;          /* the callback said GS_TUNE_STOP */
    int starts;           /* hill climbs, from the best points found; 0: 3 */
    int large;            /* a large n: the climbs try the parameters whose best value
                             moves with n first (gs_param_def.by_n), upward first, so
                             that the few moves a large size has time for go there */
} gs_tune_search;

/* Evaluate `cands` in order, then take up to *quota new points from the
 * sampler (decrementing *quota; sampled points already evaluated are
 * skipped for free), then hill-climb from each of the 3 best points so far
 * (sr->starts when set):
 * evaluate every neighbour (each parameter one legal value up or down,
 * stepping over one invalid neighbour to the next value) and move to the
 * best of them while that improves, at most `refine_rounds` moves per
 * climb. At most `max_trials` evaluations (0: no cap). `sr` must be zeroed
 * (or reused after gs_tune_search_free) by the caller. */
int gs_tune_search_run(gs_tune_search *sr, const gs_tune_space *s, const uint64_t *cands,
                       size_t ncands, gs_tune_sampler *smp, size_t *quota, int refine_rounds,
                       size_t max_trials, gs_tune_eval_fn eval, void *ud, gs_err *err);
void gs_tune_search_free(gs_tune_search *sr);

/* ---- the acceptance rule (issue 33) ---- */

/* How much faster than its baseline a tuned choice must be, at least. */
#define GS_TUNE_NOISE 0.03

/* Whether a measurement with median a_med beats a baseline measured in
 * the same run (median b_med, fastest run b_min) by more than the noise:
 * its median lies below every run of the baseline and at least
 * GS_TUNE_NOISE below the baseline's median. A tuned configuration enters
 * the plan only where it does; otherwise the baseline stands. */
int gs_tune_beats(double a_med, double b_med, double b_min);

/* ---- the plan's choice ---- */

typedef struct gs_tune_cand {
    const char *algorithm;
    int stable;           /* the algorithm keeps equal keys in input order */
    double ms;            /* end-to-end time, <0: not measured */
} gs_tune_cand;

/* Index of the fastest measured candidate usable for `stable` (ties: the
 * first), -1 if none. */
int gs_tune_plan_pick(const gs_tune_cand *c, size_t n, int stable);

/* ---- tuning devices ---- */

typedef struct gs_tune_progress {
    const char *device;
    int device_index;
    const char *algorithm;
    int key_bits;
    const char *payload;
    int bucket;
    unsigned trials_done;     /* in this (algorithm, group) */
    unsigned trials_planned;  /* candidates known now; climbing may add some */
    double best_ms;           /* < 0: no valid configuration yet */
    const char *best_params;  /* "radix_bits=8,wg_size=64,..." */
    unsigned groups_done, groups_total;   /* (key class, payload, bucket) groups */
    double elapsed_s, eta_s;
    int group_end;            /* this report closes the (algorithm, group) */
    unsigned long measured, reused, invalid;
    const char *phase;        /* "probe", "dense sizes", "large sizes", "refining" */
    /* the fastest time measured so far at the probe shape (u32 keys alone,
     * n = 2^probe_log2) and its algorithm; probe_ms < 0: none yet */
    int probe_log2;
    double probe_ms;
    const char *probe_algo;
} gs_tune_progress;

typedef void (*gs_tune_progress_fn)(const gs_tune_progress *p, void *ud);

typedef struct gs_tune_opts {
    double budget_s;          /* wall-clock budget of the whole run */
    const gs_algo *const *algos;   /* NULL: the registry */
    size_t nalgos;
    int key_bits[GS_KW_COUNT];    /* key widths (gs_kw_bits): 32 (u32 keys), 64 (u64) */
    size_t nkey_bits;
    gs_payload payloads[GS_PL_COUNT];
    size_t npayloads;
    int min_log2, max_log2;   /* size buckets measured densely (every power of two) */
    int large_max_log2;       /* then every other bucket up to this one, defaults and
                                 earlier winners only (<= max_log2: none); both are
                                 further capped by device and host memory */
    int reps;                 /* timed runs per trial after one warm-up */
    size_t samples;           /* new configurations per (device, algorithm); 0: only
                                 the defaults and earlier winners (no climbing either
                                 unless refine_rounds says so) */
    int strategy;             /* enum gs_tune_strategy */
    int refine_rounds;
    size_t max_trials;        /* per (algorithm, group); 0: no cap */
    int extra_dists;          /* also time the winner on sorted/reversed/few16 */
    const char *restrict_spec;/* see gs_tune_space_init; NULL: none */
    uint64_t seed;
    gs_tune_progress_fn progress;
    void *progress_ud;
    _Atomic int *cancel;      /* non-NULL and set: start no more trials (daemon shutdown) */
    int cpu_probe;            /* enum gs_tune_cpu_probe: device algorithms on a CPU device */
} gs_tune_opts;

/* On a CPU device the device algorithms run on the very cores the host
 * sort uses, through the OpenCL runtime (PoCL), and a first program build
 * there takes up to a minute. Before any program is warmed each of them is
 * timed once at the probe shape (u32 keys alone, 2^16, its defaults) beside
 * the host sorts; one more than GS_TUNE_CPU_DROP times the fastest host
 * sort is not tuned on that device (the report says so once). `gsortd
 * --tune-all --algorithms LIST` tunes what it names (GS_TUNE_PROBE_OFF); a
 * GPU is never probed this way. */
enum gs_tune_cpu_probe {
    GS_TUNE_PROBE_MEASURE = 0,  /* probe (a build when the trial is not recorded) */
    GS_TUNE_PROBE_RECORDED,     /* a recorded probe only; none: left out unbuilt (--quick) */
    GS_TUNE_PROBE_OFF,          /* tune every device algorithm */
};
#define GS_TUNE_CPU_DROP 2.0

/* Defaults for a budget (<= 0: GS_TUNE_DEFAULT_BUDGET): the largest bucket,
 * the payload kinds, the sample quota and the extra distributions grow with
 * it (see docs/TUNING.md). */
void gs_tune_opts_init(gs_tune_opts *o, double budget_s);

typedef struct gs_tune_winner {
    char algorithm[32];
    int key_bits;
    gs_payload payload;
    int bucket;
    char params[512];         /* JSON */
    double median_ms;         /* kernel time (host: wall) */
    double e2e_ms;            /* wall time with transfers, < 0: unknown */
    int stable;
    int uses_device;          /* median_ms is kernel time; e2e adds the transfers */
    /* The baseline: the algorithm's built-in defaults on this device,
     * timed in the same group (issue 33). */
    char base_params[512];    /* JSON; "" when not measured */
    double base_ms;           /* as median_ms; < 0: not measured or invalid */
    double base_e2e_ms;       /* as e2e_ms */
    int tuned;                /* 1: a tuned configuration beat the baseline (or the
                                 baseline failed); 0: the baseline stands */
} gs_tune_winner;

typedef struct gs_tune_planrow {
    int key_bits;
    gs_payload payload;
    int stable;
    int bucket;
    char algorithm[32];
    char params[512];         /* JSON */
    double ms;                /* end to end (extrapolated: predicted) */
    int extrapolated;         /* 0 measured; GS_PLAN_EXTRAPOLATED past the shape's
                                 largest measured size; GS_PLAN_INTERPOLATED between
                                 two measured ones */
    char base_algorithm[32];  /* the untuned daemon's choice here ("": unknown) */
    double base_ms;           /* its end-to-end time in this tune; < 0: unknown */
} gs_tune_planrow;

typedef struct gs_tune_devreport {
    char name[256];
    char platform[256];
    int index;
    int cpu;                  /* a CPU device: the untuned daemon sorts on the host */
    char default_algo[32];    /* the untuned daemon's device algorithm (a GPU's) */
    int64_t device_id;
    unsigned long measured, reused, invalid;
    double elapsed_s, budget_s;
    int budget_hit;           /* stopped starting trials: budget used up */
    int failed;               /* stopped by an error (logged), not by the budget */
    int max_log2;             /* largest bucket tuned */
    unsigned pruned;          /* (algorithm, large group)s skipped: far behind below */
    unsigned refined;         /* (algorithm, group)s searched again with leftover time */
    double prebuild_s;        /* program builds before the budget started */
    double probe_s;           /* the CPU probe's trials, before the budget started */
    char dropped[512];        /* device algorithms left out by the CPU probe, and why;
                                 "" when none */
    unsigned skipped;         /* (algorithm, shape) pairs the algorithm cannot serve
                                 (vqsort with a payload): not searched */
    gs_tune_winner *winners;
    size_t nwinners, wcap;
    gs_tune_planrow *plan;
    size_t nplan, pcap;
} gs_tune_devreport;

typedef struct gs_tune_report {
    gs_tune_devreport *devs;
    size_t ndevs;
    double elapsed_s;
} gs_tune_report;

/* Build the default programs of the device algorithms among `algos`, and
 * launch each kernel a shape of `o` uses once (a sort of 4096 keys): the
 * seconds it took. gs_tune_device calls it before its clock starts. */
double gs_tune_prebuild(gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                        const gs_algo *const *algos, size_t na);

/* Tune one opened-or-openable device until `deadline` (CLOCK_MONOTONIC
 * seconds, gs_now_s) moved on by the program builds done first
 * (gs_tune_prebuild, not charged to the budget), appending its results to
 * rep. */
int gs_tune_device(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o,
                   double deadline, gs_tune_report *rep, gs_err *err);
/* Tune every device in turn, splitting the budget between them. A device
 * that fails is logged and skipped; returns its error after the others. */
int gs_tune_all(gs_db *db, gs_dev *devs, size_t ndev, gs_pcache *pc, const gs_tune_opts *o,
                gs_tune_report *rep, gs_err *err);
/* The full report (`--tune-all --verbose`): per device its trial counts,
 * every group's winner and the plan row by row. */
void gs_tune_report_print(FILE *out, const gs_tune_report *rep);
/* The short report `--tune-all` prints (gs_summary.c): per device its
 * trials and time, what was not tuned and why, and the plan per shape as
 * size ranges ("u32 keys alone   host 2^10..2^15, vqsort 2^16..2^28"),
 * with its speedup over the untuned daemon where measured. */
void gs_tune_report_summary(FILE *out, const gs_tune_report *rep);
void gs_tune_report_free(gs_tune_report *rep);

/* Sampled versus exhaustive on one (algorithm, n, u32 keys, no payload):
 * measure the whole (restricted) space into the database (resumable), then
 * replay the sampled search `nseeds` times against those measurements and
 * print how many trials it needed and how close it came. */
int gs_tune_compare(gs_db *db, gs_dev *dev, gs_pcache *pc, const gs_algo *a, size_t n,
                    const gs_tune_opts *o, unsigned nseeds, FILE *out, gs_err *err);

#endif
