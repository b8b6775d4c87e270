/* The plan audit (see gs_audit.h). Per (shape, size) point: the choices
 * (the plan's row, the untuned route, each algorithm with its tuned
 * parameters), one warm-up run each (program builds, the block's
 * registration), one timed run each, after which a forced algorithm more
 * than PRUNE times behind the fastest is left with that one figure; then
 * `reps` rounds (more where runs are short: TARGET_MS) in which every
 * remaining choice runs once, so that drift in the machine's speed falls
 * on all of them alike. Every run goes
 * through gs_sched_route and gs_sched_submit as a request of the daemon
 * does, from the same memfd block, with the input copied in before it and
 * the keys checked for order after it; its time is the job's, from routing
 * to done (the socket's own costs are the same for every choice). */
#include "config.h"
#include "gs_audit.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_grow.h"
#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_pcopy.h"
#include "gs_plans.h"
#include "gs_time.h"
#include "gs_tune.h"

#define MAX_REPS 32
#define MAX_CHOICES 16
/* A forced algorithm this many times behind the fastest first run is timed
 * no further at that point. */
#define PRUNE 4.0
#define DEFAULT_MIN_LOG2 10
#define DEFAULT_STEP 1
/* A point's rounds: at least the asked reps, more (up to MAX_REPS / 2)
 * where runs are short, until each choice has about this much time. */
#define TARGET_MS 20.0
/* The rank test's bar: one-sided Mann-Whitney, normal approximation,
 * z above this (p < 0.01). */
#define RANK_Z 2.326

typedef struct shape {
    const char *name;
    gs_dtype dt;
    gs_payload pl;
    int own_rows;             /* the plan rows are this shape's (f32 uses u32's) */
    int nw;                   /* u16: 16-bit keys (gs_narrow.h), the 16-bit class's rows,
                                 sorted as the daemon sorts a client's (gs_narrow_sort.h) */
} shape;

static const shape shapes[] = {
    { "u32", GS_DT_U32, GS_PL_NONE, 1, 0 },
    { "u64", GS_DT_U64, GS_PL_NONE, 1, 0 },
    { "f32", GS_DT_F32, GS_PL_NONE, 0, 0 },
    { "u32+u32", GS_DT_U32, GS_PL_U32, 1, 0 },
    { "argsort", GS_DT_U32, GS_PL_IDX32, 1, 0 },
    { "u16", GS_DT_U32, GS_PL_NONE, 1, GS_NW_U16 },
};

/* A shape's bytes per key and the key width its plan rows have */
static size_t shape_ks(const shape *h) { return h->nw ? 2 : gs_dtype_size(h->dt); }
static int shape_kb(const shape *h) { return h->nw ? 16 : (int)gs_dtype_size(h->dt) * 8; }
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct choice {
    char label[40];           /* "plan", "untuned", or the forced algorithm */
    const gs_algo *algo;      /* forced; NULL: the untuned route */
    gs_params params;
    double t[MAX_REPS];
    int nt;
    double med, mn;
    int failed, pruned;
    int checked;              /* runs whose output was checked for order */
    char why[200];
    char ran[32];             /* what ran, as routed */
    gs_params ran_params;
} choice;

typedef struct actx {
    gs_sched *s;
    const gs_audit_opts *o;
    const gs_dev_info *info;  /* the device audited */
    uv_loop_t loop;
    gs_sched_sink sink;
    int done;
    void *base;               /* the block: keys, then values at voff */
    size_t len, voff;
    gs_pin pin;
    void *src_k, *src_v;      /* the input, copied in before every run */
    uint32_t *words;          /* 16-bit keys: the words of the daemon's narrow sort */
    gs_audit_times tm;        /* where the audit's time went */
} actx;

int gs_audit_shapes_check(const char *list, gs_err *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    int any = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < NSHAPES && strcmp(t, shapes[i].name))
            i++;
        if (i == NSHAPES)
            return gs_err_set(err, GS_EINVAL, "unknown shape '%s' (known: u32, u64, f32, "
                              "u32+u32, argsort, u16)", t);
        any = 1;
    }
    return any ? 0 : gs_err_set(err, GS_EINVAL, "an empty list of shapes");
}

static int shape_wanted(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t l = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += l)
        if ((p == list || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
            return 1;
    return 0;
}

static void on_done(gs_job *j, void *ud)
{
    (void)j;
    ((actx *)ud)->done = 1;
}

/* ---- the block and its input ---- */

static void block_free(actx *A)
{
    if (!A->base)
        return;
    gs_pin_release(&A->pin);
    munmap(A->base, A->len);
    A->base = NULL;
    free(A->src_k);
    free(A->src_v);
    free(A->words);
    A->src_k = A->src_v = NULL;
    A->words = NULL;
}

/* ---- work split over the host pool's helpers (gs_hostpool.h): one
 * thread takes seconds over 2^28 keys, and a GPU's audit makes dozens of
 * inputs and checks hundreds of outputs ---- */

#define PAR_PARTS 8
#define PAR_MIN_N ((size_t)1 << 20)

typedef struct apart {
    actx *A;
    const shape *h;
    const void *k;            /* the keys to check (order_part) */
    size_t n, lo, hi;
    int ok;
} apart;

typedef struct ajob {
    apart *parts;
    void (*fn)(apart *);
} ajob;

static void part_task(void *arg, size_t i, unsigned worker)
{
    (void)worker;
    ajob *j = arg;
    j->fn(&j->parts[i]);
}

/* fn over [0, t->n) in up to PAR_PARTS parts, each a copy of t with its
 * lo and hi, on a team of the pool's idle helpers (none: this thread
 * alone). 1 when every part left ok set. */
static int in_parallel(const apart *t, void (*fn)(apart *))
{
    apart parts[PAR_PARTS];
    size_t np = t->n >= PAR_MIN_N ? PAR_PARTS : 1;
    for (size_t i = 0; i < np; i++) {
        parts[i] = *t;
        parts[i].lo = t->n * i / np;
        parts[i].hi = t->n * (i + 1) / np;
        parts[i].ok = 1;
    }
    ajob job = { parts, fn };
    gs_hostpool_team team;
    gs_hostpool_join(&team, (unsigned)(np - 1));
    gs_hostpool_for(&team, np, part_task, &job);
    gs_hostpool_leave(&team);
    int ok = 1;
    for (size_t i = 0; i < np; i++)
        ok &= parts[i].ok;
    return ok;
}

/* Input keys [lo, hi): splitmix64 of the index (floats: +-1e6), values
 * their index. */
static void gen_part(apart *p)
{
    actx *A = p->A;
    size_t ks = shape_ks(p->h);
    unsigned cls = p->h->nw ? 0 : gs_dtype_class(p->h->dt);
    uint64_t x0 = 0x9e3779b97f4a7c15u ^ ((uint64_t)p->n << 8) ^ (uint64_t)p->h->dt ^
                  ((uint64_t)p->h->nw << 4);
    for (size_t i = p->lo; i < p->hi; i++) {
        uint64_t z = x0 + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15u;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        double f = (double)(z >> 11) * 0x1p-53 * 2e6 - 1e6;
        if (cls == GS_DT_CLASS(GS_KIND_FLOAT, 8))
            ((double *)A->src_k)[i] = f;
        else if (cls == GS_DT_CLASS(GS_KIND_FLOAT, 4))
            ((float *)A->src_k)[i] = (float)f;
        else
            gs_key_put(A->src_k, i, ks, z);      /* integers of any width */
        if (A->src_v)
            ((uint32_t *)A->src_v)[i] = (uint32_t)i;
    }
}

/* A memfd block for n keys of shape h (a client's gsort_alloc block), and
 * the input: random keys, values their input index. */
static int block_make(actx *A, const shape *h, size_t n, gs_err *err)
{
    double t0 = gs_now_s();
    size_t ks = shape_ks(h), vs = gs_payload_size(h->pl);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    A->voff = (n * ks + pg - 1) / pg * pg;
    A->len = A->voff + (vs ? (n * vs + pg - 1) / pg * pg : 0);
    int fd = memfd_create("gsortd-audit", MFD_CLOEXEC);
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)A->len) == 0)
        m = mmap(NULL, A->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED)
        return gs_err_set(err, GS_ENOMEM, "a block of %zu bytes for n = %zu: %s", A->len, n,
                          strerror(e));
    A->base = m;
    gs_pin_init(&A->pin, m, A->len, A->o->pins);
    A->src_k = malloc(n * ks);
    A->src_v = h->pl == GS_PL_U32 ? malloc(n * 4) : NULL;
    A->words = h->nw ? malloc(n * sizeof *A->words) : NULL;
    if (!A->src_k || (h->pl == GS_PL_U32 && !A->src_v) || (h->nw && !A->words)) {
        block_free(A);
        return gs_err_set(err, GS_ENOMEM, "out of memory for the input of n = %zu", n);
    }
    apart tmpl = { .A = A, .h = h, .n = n };
    in_parallel(&tmpl, gen_part);
    A->tm.input_s += gs_now_s() - t0;
    return 0;
}

/* Keys [lo, hi) in order after their predecessors, by the keys' own
 * encoding (gs_keys.h), so any dtype is checked the way the sort ordered
 * it. */
static void order_part(apart *p)
{
    gs_dtype dt = p->h->dt;
    const int u16 = p->h->nw == GS_NW_U16;
    for (size_t i = p->lo > 0 ? p->lo : 1; i < p->hi; i++)
        if (u16 ? gs_key_get(p->k, i - 1, 2) > gs_key_get(p->k, i, 2)
                : gs_key_encoded(dt, 0, p->k, i - 1) > gs_key_encoded(dt, 0, p->k, i)) {
            p->ok = 0;
            break;
        }
}

static int sorted(const shape *h, const void *k, size_t n)
{
    apart t = { .h = h, .k = k, .n = n };
    return in_parallel(&t, order_part);
}

/* ---- one run ---- */

/* A job of 16-bit keys as the daemon makes one for a client's (gs_ops.c):
 * the words' request (gs_narrow_job_init: routed by the 16-bit class's
 * plan). */
static void narrow_job(gs_job *j, const shape *h, uint32_t *words)
{
    if (!h->nw)
        return;
    gs_narrow_job_init(&j->narrow, h->nw, &j->req.shape, j->req.n, j->req.keys, NULL, words);
    j->req = j->narrow.req;
}

/* A run's keys are checked for order the first time a choice runs at a
 * point (its warm-up): later runs repeat the same sort of the same input,
 * and a check costs more than a copy in. */
static int run_once(actx *A, const shape *h, size_t n, choice *c, double *ms, gs_err *err)
{
    size_t ks = shape_ks(h);
    double t0 = gs_now_s();
    gs_pcopy(A->base, A->src_k, n * ks);
    if (A->src_v)
        gs_pcopy((char *)A->base + A->voff, A->src_v, n * 4);
    double t1 = gs_now_s();
    A->tm.copy_s += t1 - t0;
    gs_job j;
    memset(&j, 0, sizeof j);
    j.req = (gs_sort_req){ .shape = { .dtype = h->dt, .payload = h->pl }, .n = n, .keys = A->base,
                           .values = h->pl == GS_PL_NONE ? NULL : (char *)A->base + A->voff };
    narrow_job(&j, h, A->words);
    j.device = A->o->device;
    if (c->algo) {
        snprintf(j.algorithm, sizeof j.algorithm, "%s", c->algo->name);
        j.params = c->params;
        j.has_params = 1;
    } else {
        j.untuned = 1;
    }
    j.split_ask = -1;
    j.pin = &A->pin;
    j.sink = &A->sink;
    j.ud = A;
    A->done = 0;
    int rc = gs_sched_route(A->s, &j, err);
    if (rc < 0)
        return rc;
    gs_sched_submit(A->s, &j);
    while (!A->done)
        uv_run(&A->loop, UV_RUN_ONCE);
    double t2 = gs_now_s();
    A->tm.run_s += t2 - t1;
    A->tm.runs++;
    if (j.rc < 0) {
        *err = j.err;
        return j.rc;
    }
    if (j.fallback[0])
        return gs_err_set(err, GS_EUNSUPPORTED, "fell back: %s", j.fallback);
    if (!c->checked) {
        c->checked++;
        int ok = sorted(h, A->base, n);
        A->tm.check_s += gs_now_s() - t2;
        if (!ok)
            return gs_err_set(err, GS_EINVAL, "%s: the keys came back out of order",
                              j.algo ? j.algo->name : "?");
    }
    snprintf(c->ran, sizeof c->ran, "%s", j.algo ? j.algo->name : "?");
    c->ran_params = j.run_params;
    *ms = j.t_done - j.t_submit;
    return 0;
}

static int cancelled(const actx *A)
{
    return A->o->cancel && atomic_load(A->o->cancel);
}

/* Run c once more, into its samples (warm-up: not kept). */
static void sample(actx *A, const shape *h, size_t n, choice *c, int keep)
{
    if (c->failed || c->pruned || cancelled(A))
        return;
    double ms = 0;
    gs_err e;
    gs_err_clear(&e);
    double r0 = A->tm.run_s;
    int rc = run_once(A, h, n, c, &ms, &e);
    if (!keep)
        A->tm.warm_s += A->tm.run_s - r0;
    if (rc < 0) {
        c->failed = 1;
        snprintf(c->why, sizeof c->why, "%.190s", e.msg);
        return;
    }
    if (keep && c->nt < MAX_REPS)
        c->t[c->nt++] = ms;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summarize(choice *c)
{
    if (!c->nt) {
        c->med = c->mn = -1;
        return;
    }
    double t[MAX_REPS];
    memcpy(t, c->t, (size_t)c->nt * sizeof *t);
    qsort(t, (size_t)c->nt, sizeof *t, cmp_d);
    c->mn = t[0];
    c->med = c->nt % 2 ? t[c->nt / 2] : 0.5 * (t[c->nt / 2 - 1] + t[c->nt / 2]);
}

static int usable(const choice *c)
{
    return !c->failed && !c->pruned && c->nt > 0;
}

/* Whether a is faster than b by more than the noise: its median at least
 * GS_TUNE_NOISE below b's, and its runs faster than b's by a one-sided
 * Mann-Whitney rank test (ties count half). The tuner's rule
 * (gs_tune_beats) has only medians and minima; here every run is known,
 * and a minimum gets harder to beat the more runs there are. */
static int faster(const choice *a, const choice *b)
{
    if (!usable(a) || !usable(b) || !(a->med <= (1 - GS_TUNE_NOISE) * b->med))
        return 0;
    double u = 0, n1 = a->nt, n2 = b->nt;
    for (int i = 0; i < a->nt; i++)
        for (int k = 0; k < b->nt; k++)
            u += a->t[i] < b->t[k] ? 1.0 : a->t[i] == b->t[k] ? 0.5 : 0.0;
    double mu = n1 * n2 / 2, sd = sqrt(n1 * n2 * (n1 + n2 + 1) / 12);
    return sd > 0 && (u - mu) / sd > RANK_Z;
}

/* `reps` rounds over the choices in cs, every other one in reverse order,
 * so that running first (or after a given other) favours none. */
static void rounds(actx *A, const shape *h, size_t n, choice **cs, size_t nc, int reps)
{
    for (int r = 0; r < reps && !cancelled(A); r++)
        for (size_t k = 0; k < nc; k++)
            sample(A, h, n, cs[r % 2 ? nc - 1 - k : k], 1);
    for (size_t i = 0; i < nc; i++)
        summarize(cs[i]);
}

/* ---- the choices of one point ---- */

/* The winner of a for this shape at the bucket nearest b (ties: the
 * larger), or NULL. */
static const gs_plans_entry *nearest_winner(const gs_plans *P, const gs_algo *a, int kb,
                                            gs_payload pl, int b)
{
    const gs_plans_entry *best = NULL;
    for (size_t i = 0; i < P->nwin; i++) {
        const gs_plans_entry *w = &P->win[i];
        if (w->algo != a || w->key_bits != kb || w->payload != pl)
            continue;
        int d = abs(w->bucket - b), bd = best ? abs(best->bucket - b) : 1 << 20;
        if (d < bd || (d == bd && w->bucket > best->bucket))
            best = w;
    }
    return best;
}

static int same(const choice *c, const gs_algo *a, const gs_params *p)
{
    if (c->algo != a || c->params.count != p->count)
        return 0;
    for (int i = 0; i < p->count; i++)
        if (gs_params_get(&c->params, p->p[i].name, LONG_MIN) != p->p[i].value)
            return 0;
    return 1;
}

/* p with every parameter it leaves out at the algorithm's default on the
 * device: what actually runs. */
static void effective(const gs_algo *a, const gs_dev_info *info, const gs_params *p,
                      gs_params *out)
{
    gs_params_clear(out);
    if (a->defaults)
        a->defaults(a->uses_device ? info : NULL, out);
    for (int i = 0; i < p->count; i++)
        gs_params_set(out, p->p[i].name, p->p[i].value);
}

/* Whether two routes run the same algorithm with the same parameters (the
 * untuned route's defaults and a plan row that holds them, say): one is
 * never faster than the other but by noise. */
static int same_run(const actx *A, const choice *x, const choice *y)
{
    const gs_algo *a = gs_algo_find(x->ran);
    if (!a || strcmp(x->ran, y->ran))
        return 0;
    gs_params ex, ey;
    effective(a, A->info, &x->ran_params, &ex);
    effective(a, A->info, &y->ran_params, &ey);
    if (ex.count != ey.count)
        return 0;
    for (int i = 0; i < ex.count; i++)
        if (gs_params_get(&ey, ex.p[i].name, LONG_MIN) != ex.p[i].value)
            return 0;
    return 1;
}

static void params_text(const gs_params *p, char *buf, size_t len)
{
    if (gs_params_format(p, buf, len) || !buf[0])
        snprintf(buf, len, "-");
}

/* Write the faster choice into the plan row of (kb, pl, any caller, b). */
static int fix_row(gs_db *db, int64_t db_id, int kb, gs_payload pl, int b, const choice *win,
                   const choice *untuned, gs_err *err)
{
    char json[512];
    gs_params p = win->ran_params;
    int rc = gs_params_to_json(&p, json, sizeof json, err);
    const char *pn = gs_payload_name(pl);
    if (!rc)
        rc = gs_db_begin(db, err);
    if (!rc) {
        rc = gs_db_plan_set(db, db_id, kb, pn, 0, b, win->ran, json, win->med, err);
        if (!rc)
            rc = gs_db_plan_mark_source(db, db_id, kb, pn, 0, b, GS_DB_PLAN_AUDITED, err);
        if (!rc && usable(untuned))
            rc = gs_db_plan_set_baseline(db, db_id, kb, pn, 0, b, untuned->ran, untuned->med,
                                         err);
        if (!rc)
            rc = gs_db_commit(db, err);
        else
            gs_db_rollback(db);
    }
    return rc;
}

typedef struct point_res {
    double plan_untuned, plan_best;   /* ratios; < 0: not known */
    double after_untuned;     /* plan / untuned once a replaced row is the new plan's */
    int unproven;             /* slower than the untuned route by more than the noise,
                                 though not by the rank test: the baseline stands */
    int losing, fixed;
    int same;                 /* a predicted row that runs what the untuned route
                                 runs: not timed */
    char what[200];           /* the point, both routes' times, and why a plan
                                 slower than the untuned route stands */
} point_res;

/* What the untuned route would run for n keys of shape h, routed but not
 * run (the request's arrays are not read by routing): c->ran and
 * c->ran_params. 0, or the routing error. */
static int untuned_route(actx *A, const shape *h, size_t n, choice *c)
{
    static char dummy[16];
    gs_job j;
    memset(&j, 0, sizeof j);
    j.req = (gs_sort_req){ .shape = { .dtype = h->dt, .payload = h->pl }, .n = n, .keys = dummy,
                           .values = h->pl == GS_PL_NONE ? NULL : dummy };
    narrow_job(&j, h, NULL);
    j.device = A->o->device;
    j.untuned = 1;
    j.split_ask = -1;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_sched_route(A->s, &j, &e);
    if (rc < 0 || !j.algo)
        return rc < 0 ? rc : GS_EINVAL;
    snprintf(c->ran, sizeof c->ran, "%s", j.algo->name);
    c->ran_params = j.run_params;
    return 0;
}

/* The choices timed at point (h, 2^b), into cs (MAX_CHOICES of them):
 * the plan's row pe, the untuned route, then each algorithm's nearest
 * winner that is neither the plan's nor gone. Returns how many; 0 with
 * pr->same for a predicted row that runs what the untuned route runs (not
 * timed). */
static size_t point_choices(actx *A, const gs_plans *P, const shape *h, int b,
                            const gs_plans_entry *pe, const unsigned char *gone, choice *cs,
                            point_res *pr)
{
    size_t n = (size_t)1 << b;
    int kb = shape_kb(h);
    size_t nc = 0;
    memset(cs, 0, MAX_CHOICES * sizeof *cs);
    snprintf(cs[nc].label, sizeof cs[nc].label, "plan");
    cs[nc].algo = pe->algo;
    cs[nc++].params = pe->params;
    snprintf(cs[nc++].label, sizeof cs[0].label, "untuned");
    if (pe->bucket != b || pe->source == GS_DB_PLAN_EXTRAPOLATED ||
        pe->source == GS_DB_PLAN_INTERPOLATED) {
        /* a predicted row: timed unless it runs what the untuned route runs */
        if (untuned_route(A, h, n, &cs[1]) == 0) {
            snprintf(cs[0].ran, sizeof cs[0].ran, "%s", pe->algo->name);
            cs[0].ran_params = pe->params;
            if (same_run(A, &cs[0], &cs[1])) {
                pr->same = 1;
                return 0;
            }
        }
    }
    for (size_t i = 0; i < gs_algo_count() && nc < MAX_CHOICES; i++) {
        const gs_algo *a = gs_algo_at(i);
        const gs_plans_entry *w = nearest_winner(P, a, kb, h->pl, b);
        if (!w || gone[i] || same(&cs[0], a, &w->params))
            continue;
        snprintf(cs[nc].label, sizeof cs[nc].label, "%s", a->name);
        cs[nc].algo = a;
        cs[nc++].params = w->params;
    }
    return nc;
}

/* Times the nc choices on n keys: a warm-up and a first run each; a
 * forced choice more than PRUNE times the fastest is pruned (its
 * algorithm gone for the larger sizes); then rounds of reps runs, more
 * where one run is short of TARGET_MS. Returns the reps the rounds took. */
static int time_choices(actx *A, const shape *h, size_t n, choice *cs, size_t nc,
                        unsigned char *gone, int reps)
{
    choice *all[MAX_CHOICES];
    for (size_t i = 0; i < nc; i++) {
        sample(A, h, n, &cs[i], 0);     /* warm-up: builds, registration */
        all[i] = &cs[i];
    }
    for (size_t i = 0; i < nc; i++)
        sample(A, h, n, &cs[i], 1);
    double first = -1;
    for (size_t i = 0; i < nc; i++)
        if (cs[i].nt && (first < 0 || cs[i].t[0] < first))
            first = cs[i].t[0];
    for (size_t i = 2; i < nc; i++)     /* the plan and the untuned route always stay */
        if (cs[i].nt && cs[i].t[0] > PRUNE * first) {
            summarize(&cs[i]);
            cs[i].pruned = 1;
            snprintf(cs[i].why, sizeof cs[i].why, "more than %.0fx the fastest", PRUNE);
            for (size_t k = 0; k < gs_algo_count(); k++)
                if (gs_algo_at(k) == cs[i].algo)
                    gone[k] = 1;
        }
    if (first > 0 && first * reps < TARGET_MS)
        reps = (int)ceil(TARGET_MS / first) < MAX_REPS / 2 ? (int)ceil(TARGET_MS / first)
                                                          : MAX_REPS / 2;
    rounds(A, h, n, all, nc, reps);
    return reps;
}

/* Does the plan (cs[0]) lose to the fastest other choice (*altp), timed
 * again with it alone so that a lucky round does not rewrite the plan?
 * Also the plan's ratios to the untuned route (cs[1]) and to the fastest
 * forced choice, and what the point says, into pr. */
static int point_loses(actx *A, const shape *h, int b, choice *cs, size_t nc, int reps,
                       point_res *pr, choice **altp)
{
    size_t n = (size_t)1 << b;
    choice *plan = &cs[0], *unt = &cs[1];
    /* the fastest other choice, and the fastest forced one */
    choice *alt = NULL, *bestf = NULL;
    for (size_t i = 1; i < nc; i++) {
        if (!usable(&cs[i]))
            continue;
        if (!alt || cs[i].med < alt->med)
            alt = &cs[i];
        if (i >= 2 && (!bestf || cs[i].med < bestf->med))
            bestf = &cs[i];
    }
    int lose = alt && !same_run(A, plan, alt) && faster(alt, plan);
    if (lose && !cancelled(A)) {
        plan->nt = alt->nt = 0;
        choice *two[2] = { plan, alt };
        rounds(A, h, n, two, 2, reps);
        lose = faster(alt, plan);
    }
    /* The acceptance rule's other half (the tuner's, gs_tune_beats): a row
     * stands where it beats its baseline. A plan whose median is slower
     * than the untuned route's by more than the noise has not shown that
     * here, even where too few or too spread runs keep the rank test from
     * calling it slower: the baseline, what the untuned route runs, is put
     * back (with fix; said either way). */
    if (!lose && !plan->failed && usable(plan) && usable(unt) && !same_run(A, plan, unt) &&
        plan->med > (1 + GS_TUNE_NOISE) * unt->med) {
        pr->unproven = 1;
        lose = A->o->fix && h->own_rows;
        alt = unt;
    }
    if (usable(plan) && usable(unt)) {
        pr->plan_untuned = plan->med / unt->med;
        /* why a slower plan stands: the untuned route runs the same sort
         * (their difference is noise), or the timings did not show it
         * slower by the tuner's rule (GS_TUNE_NOISE and the rank test) */
        const char *why = lose ? "" : same_run(A, plan, unt) ? ": the same sort"
                                    : pr->unproven ? ": not faster than its baseline"
                                    : ": not slower by the rank test";
        snprintf(pr->what, sizeof pr->what, "%s 2^%d: %s %.4f ms, untuned %s %.4f ms%s",
                 h->name, b, plan->algo->name, plan->med, unt->ran, unt->med,
                 pr->plan_untuned > 1 ? why : "");
    }
    if (usable(plan) && bestf)
        pr->plan_best = plan->med / bestf->med;
    if (plan->failed) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: the plan's %s failed: %s", A->o->device,
                h->name, b, plan->label, plan->why);
        lose = alt != NULL;             /* a plan row that cannot run loses to any that can */
    }
    *altp = alt;
    return lose;
}

/* The shape whose plan rows h follows (f32: u32's), or NULL. */
static const shape *owner_of(const shape *h)
{
    for (size_t i = 0; i < NSHAPES; i++)
        if (shapes[i].own_rows && shape_kb(&shapes[i]) == shape_kb(h) &&
            shapes[i].pl == h->pl)
            return &shapes[i];
    return NULL;
}

/* win into shape h's plan row at 2^b (untuned: its baseline, where
 * usable); 1 when written, else said. */
static int replace_row(gs_db *db, int64_t db_id, const shape *h, int b, const choice *win,
                       const choice *untuned)
{
    gs_err e;
    gs_err_clear(&e);
    if (fix_row(db, db_id, shape_kb(h), h->pl, b, win, untuned, &e) == 0)
        return 1;
    GS_WARN("plan audit: cannot replace the plan row: %s", e.msg);
    return 0;
}

/* A shape that follows own's rows (f32 on u32's) and loses on one: the
 * row is shared, so alt replaces it only where own loses nothing by it:
 * the plan's choice and alt timed again, in turns, on own's keys, and
 * alt's median at most the noise (GS_TUNE_NOISE) above the plan's. The
 * float keys' host sort pays their encoding where a device sort does
 * not, so their crossover can lie below the integers' (H100: f32 2^14
 * host 0.254 against radix 0.200 ms, u32 0.205 against 0.211). 1 when
 * own's row was replaced; own_ms: own's two medians, said either way. */
static int shared_fix(actx *A, gs_db *db, int64_t db_id, const shape *own, int b,
                      const choice *plan, const choice *alt, double own_ms[2], int reps)
{
    if (!own || !usable(alt) || cancelled(A))
        return 0;
    size_t n = (size_t)1 << b;
    choice two[2];
    memset(two, 0, sizeof two);
    snprintf(two[0].label, sizeof two[0].label, "%s", plan->label);
    two[0].algo = plan->algo;
    two[0].params = plan->params;
    snprintf(two[1].label, sizeof two[1].label, "%s", alt->label);
    two[1].algo = alt->algo;
    two[1].params = alt->params;
    gs_err e;
    gs_err_clear(&e);
    block_free(A);                      /* the follower's keys are done with */
    if (block_make(A, own, n, &e) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", A->o->device, own->name, b,
                e.msg);
        return 0;
    }
    choice *p2[2] = { &two[0], &two[1] };
    sample(A, own, n, &two[0], 0);      /* warm-ups */
    sample(A, own, n, &two[1], 0);
    rounds(A, own, n, p2, 2, reps);
    block_free(A);
    if (!usable(&two[0]) || !usable(&two[1]))
        return 0;
    own_ms[0] = two[0].med;
    own_ms[1] = two[1].med;
    if (two[1].med > (1 + GS_TUNE_NOISE) * two[0].med)
        return 0;
    choice none;                        /* own's baseline is not known here: kept */
    memset(&none, 0, sizeof none);
    return replace_row(db, db_id, own, b, &two[1], &none);
}

/* A plan row (h, 2^b) that loses to alt: replaced by alt's with --fix
 * (*Pp then reloaded), and said. A shape that follows another's rows has
 * the row replaced only where its owner loses nothing by it
 * (shared_fix). */
static void point_fix(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, const shape *h, int b,
                      const choice *plan, const choice *alt, const choice *unt, point_res *pr,
                      int reps)
{
    const gs_audit_opts *o = A->o;
    const shape *own = h->own_rows ? h : owner_of(h);
    double own_ms[2] = { -1, -1 };
    if (o->fix && alt) {
        pr->fixed = h->own_rows ? replace_row(db, db_id, h, b, alt, unt)
                                : shared_fix(A, db, db_id, own, b, plan, alt, own_ms, reps);
        gs_plans *np = NULL;
        gs_err fe;
        gs_err_clear(&fe);
        /* the shapes after this one (f32 on the u32 rows) see the new row */
        if (pr->fixed && gs_plans_load(db, db_id, &np, &fe) == 0) {
            gs_plans_free(*Pp);
            *Pp = np;
        }
    }
    char pt[200], shared[200] = "";
    params_text(&alt->ran_params, pt, sizeof pt);
    if (!h->own_rows && own && own_ms[0] > 0)
        snprintf(shared, sizeof shared, "; the %s row it follows %s (%s: the plan %.4f ms, "
                 "%s %.4f)", own->name, pr->fixed ? "replaced" : "kept: it would lose there",
                 own->name, own_ms[0], alt->label, own_ms[1]);
    else if (!h->own_rows)
        snprintf(shared, sizeof shared, " (this shape follows the %s rows: not replaced)",
                 own ? own->name : "other");
    /* a row replaced, or one of a shape that borrows another's rows:
     * counted in the summary; a row of its own left losing: a warning */
    gs_log(pr->fixed || !h->own_rows || pr->unproven ? GS_LOG_INFO : GS_LOG_WARN,
           "plan audit, device %d, %s n = 2^%d: the plan (%s, %.4f ms) %s %s "
            "(%s %s, %.4f ms)%s", o->device, h->name, b, plan->algo->name,
            usable(plan) ? plan->med : -1.0,
            pr->unproven ? "is not faster than its baseline, the" : "loses to", alt->label,
            alt->ran, pt, alt->med,
            !h->own_rows ? shared
            : pr->fixed ? (pr->unproven ? "; the baseline put back" : "; row replaced")
            : o->fix ? "" : pr->unproven ? " (gsortd --audit-plan --fix puts the baseline back)"
            : " (gsortd --audit-plan --fix replaces it)");
}

/* The point's row of the audit table. */
static void point_row(FILE *out, const shape *h, int b, const choice *cs, size_t nc,
                      const point_res *pr, double secs)
{
    const choice *plan = &cs[0], *unt = &cs[1];
    char others[600] = "";
    size_t ol = 0;
    for (size_t i = 2; i < nc; i++) {
        int w;
        if (cs[i].failed)
            w = snprintf(others + ol, sizeof others - ol, "%s%s failed", ol ? ", " : "",
                         cs[i].label);
        else
            w = snprintf(others + ol, sizeof others - ol, "%s%s %.4f%s", ol ? ", " : "",
                         cs[i].label, cs[i].med, cs[i].pruned ? " (1 run)" : "");
        if (w > 0 && (size_t)w < sizeof others - ol)
            ol += (size_t)w;
    }
    char pr1[16] = "-", pr2[16] = "-";
    if (pr->plan_untuned > 0)
        snprintf(pr1, sizeof pr1, "%.2f", pr->plan_untuned);
    if (pr->plan_best > 0)
        snprintf(pr2, sizeof pr2, "%.2f", pr->plan_best);
    fprintf(out, "  %-8s 2^%-3d %-10s %10.4f  %-10s %10.4f  %12s %10s  %-7s %7.2f  %s\n",
            h->name, b, plan->failed ? "(failed)" : plan->algo->name, plan->med,
            usable(unt) ? unt->ran : "(failed)", unt->med, pr1, pr2,
            pr->fixed ? "FIXED" : pr->losing ? "LOSES" : pr->unproven ? "slower" : "ok", secs,
            others);
    fflush(out);
}

/* gone[i]: algorithm i was pruned at a smaller size of this shape, and is
 * not forced again (a 4x gap does not close in 4x n). */
static void audit_point(actx *A, gs_db *db, int64_t db_id, gs_plans **Pp, const shape *h,
                        int b, unsigned char *gone, point_res *pr)
{
    const gs_audit_opts *o = A->o;
    size_t n = (size_t)1 << b;
    int reps = o->reps > 0 ? (o->reps > MAX_REPS / 2 ? MAX_REPS / 2 : o->reps) : 5;
    pr->plan_untuned = pr->plan_best = pr->after_untuned = -1;
    pr->losing = pr->fixed = pr->same = pr->unproven = 0;
    pr->what[0] = '\0';
    const gs_shape hs = { .dtype = h->dt, .payload = h->pl, .plan16 = h->nw != 0 };
    const gs_plans_entry *pe = gs_plans_lookup(*Pp, &hs, n);
    if (!pe)
        return;                         /* no plan for the shape: nothing to audit */
    choice cs[MAX_CHOICES];
    size_t nc = point_choices(A, *Pp, h, b, pe, gone, cs, pr);
    if (pr->same)
        return;
    double t0 = gs_now_s();
    gs_err be;
    gs_err_clear(&be);
    if (block_make(A, h, n, &be) < 0) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: not timed: %s", o->device, h->name, b,
                be.msg);
        return;
    }
    reps = time_choices(A, h, n, cs, nc, gone, reps);
    choice *alt = NULL;
    pr->losing = point_loses(A, h, b, cs, nc, reps, pr, &alt);
    if (pr->losing || pr->unproven)
        point_fix(A, db, db_id, Pp, h, b, &cs[0], alt, &cs[1], pr, reps);
    /* what the plan costs where it differs from the untuned daemon: a row
     * that runs the same sort (from the start, or once its baseline is put
     * back) is the untuned daemon, and 1 whatever the noise between runs */
    const choice *now = pr->fixed ? alt : &cs[0];
    if (pr->plan_untuned < 0)
        pr->after_untuned = -1;
    else if (now == &cs[1] || same_run(A, now, &cs[1]))
        pr->after_untuned = 1.0;
    else
        pr->after_untuned = usable(now) ? now->med / cs[1].med : pr->plan_untuned;
    block_free(A);
    if (o->out)
        point_row(o->out, h, b, cs, nc, pr, gs_now_s() - t0);
}

/* One (shape, size) point to audit, and its bytes. */
typedef struct apoint {
    int si, b;
    double cost;
} apoint;

static int cmp_cost(const void *x, const void *y)
{
    const apoint *a = x, *b = y;
    if (a->cost != b->cost)
        return a->cost < b->cost ? -1 : 1;
    return a->si != b->si ? a->si - b->si : a->b - b->b;
}

/* The sizes: every step-th from the first, and the largest whatever the step. */
static int next_size(int b, int step, int hi)
{
    return b < hi && b + step > hi ? hi : b + step;
}

/* The largest bucket the plan has a row for the shape at (measured or
 * predicted), or -1. */
static int planned_top(const gs_plans *P, const shape *h)
{
    int kb = shape_kb(h), top = -1;
    for (size_t i = 0; i < P->nplan; i++)
        if (P->plan[i].key_bits == kb && P->plan[i].payload == h->pl && P->plan[i].bucket > top)
            top = P->plan[i].bucket;
    return top;
}

int gs_audit_device(gs_sched *s, gs_db *db, int64_t db_id, const gs_audit_opts *o,
                    gs_audit_stats *st, gs_err *err)
{
    memset(st, 0, sizeof *st);
    if (o->device < 0 || (size_t)o->device >= gs_sched_ndev(s))
        return gs_err_set(err, GS_EINVAL, "plan audit: no device %d", o->device);
    if (o->shapes && gs_audit_shapes_check(o->shapes, err) < 0)
        return GS_EINVAL;
    gs_plans *P = NULL;
    int rc = gs_plans_load(db, db_id, &P, err);
    if (rc < 0)
        return rc;
    gs_sched_devstat ds;
    gs_sched_devstat_get(s, (size_t)o->device, &ds);
    actx A = { .s = s, .o = o, .info = &ds.dev->info };
    if ((rc = uv_loop_init(&A.loop)) < 0) {
        gs_plans_free(P);
        return gs_err_set(err, GS_EIO, "libuv: %s", uv_strerror(rc));
    }
    if ((rc = gs_sched_sink_init(&A.sink, s, &A.loop, on_done, &A, err)) < 0) {
        uv_loop_close(&A.loop);
        gs_plans_free(P);
        return rc;
    }
    int lo = o->min_log2 > 0 ? o->min_log2 : DEFAULT_MIN_LOG2;
    int step = o->step > 0 ? o->step : DEFAULT_STEP;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t host = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_C(1) << 32;
    if (o->out)
        fprintf(o->out, "  %-8s %-5s %-10s %10s  %-10s %10s  %12s %10s  %-7s %7s  %s\n", "shape",
                "n", "plan", "ms", "untuned", "ms", "plan/untuned", "plan/best", "verdict",
                "s", "each algorithm at its tuned best, ms");
    /* The points: shape by shape, size by size; with a time budget the
     * cheapest first over all shapes, so that what the budget leaves out
     * is the largest sizes. */
    apoint *pts = NULL;
    size_t npts = 0, ptcap = 0;
    for (size_t si = 0; si < NSHAPES && !rc; si++) {
        const shape *h = &shapes[si];
        if (!shape_wanted(o->shapes, h->name))
            continue;
        int hi = o->max_log2 > 0 ? o->max_log2 : planned_top(P, h);
        size_t per = shape_ks(h) + gs_payload_size(h->pl);
        while (hi >= lo && (UINT64_C(1) << hi) * per * 4 > host / 2)
            hi--;                       /* the block, the input, the scratch */
        for (int b = lo; b <= hi; b = next_size(b, step, hi)) {
            if (gs_grow(&pts, &ptcap, npts, sizeof *pts, 64)) {
                rc = gs_err_set(err, GS_ENOMEM, "out of memory");
                break;
            }
            pts[npts++] = (apoint){ (int)si, b, ldexp((double)per, b) };
        }
    }
    if (o->budget_s > 0 && npts > 1)
        qsort(pts, npts, sizeof *pts, cmp_cost);
    double logsum = 0, logafter = 0, t0 = gs_now_s();
    unsigned nratio = 0;
    unsigned char gone[NSHAPES][64];
    memset(gone, 0, sizeof gone);
    for (size_t k = 0; k < npts && !rc && !cancelled(&A); k++) {
        const shape *h = &shapes[pts[k].si];
        if (o->budget_s > 0 && gs_now_s() - t0 >= o->budget_s) {
            st->unaudited++;
            continue;
        }
        point_res pr;
        audit_point(&A, db, db_id, &P, h, pts[k].b, gone[pts[k].si], &pr);
        st->same += (unsigned)pr.same;
        if (pr.plan_untuned < 0)
            continue;
        st->points++;
        /* a plan not faster than its baseline is counted apart from one
         * the rank test found slower */
        st->losing += (unsigned)(pr.losing && !pr.unproven);
        st->fixed += (unsigned)(pr.fixed && !pr.unproven);
        st->unproven += (unsigned)pr.unproven;
        st->reverted += (unsigned)(pr.unproven && pr.fixed);
        if (pr.losing && !pr.fixed && h->own_rows && !pr.unproven)
            st->unfixable++;
        if (pr.losing && !pr.fixed && !h->own_rows)
            st->borrowed_losing++;
        logsum += log(pr.plan_untuned);
        logafter += log(pr.after_untuned > 0 ? pr.after_untuned : pr.plan_untuned);
        if (pr.after_untuned > st->worst_after)
            st->worst_after = pr.after_untuned;
        nratio++;
        if (pr.plan_untuned > st->worst_untuned) {
            st->worst_untuned = pr.plan_untuned;
            snprintf(st->worst, sizeof st->worst, "%s", pr.what);
        }
        if (pr.plan_best > st->worst_best)
            st->worst_best = pr.plan_best;
    }
    free(pts);
    if (nratio) {
        st->geo_untuned = exp(logsum / nratio);
        st->geo_after = exp(logafter / nratio);
    }
    st->times = A.tm;
    st->times.total_s = gs_now_s() - t0;
    block_free(&A);
    gs_sched_sink_close(&A.sink);
    uv_run(&A.loop, UV_RUN_DEFAULT);
    uv_loop_close(&A.loop);
    gs_plans_free(P);
    if (!rc && o->out)
        fprintf(o->out, "  %u point(s); plan / untuned: geometric mean %.3f, worst %.3f; plan / "
                "best forced: worst %.3f; %u losing (%u replaced); %u not faster than their "
                "baseline (%u put back); with the rows replaced, plan / untuned: geometric mean "
                "%.3f, worst %.3f; %u predicted row(s) not timed: they run what the untuned daemon "
                "runs%s\n", st->points, st->geo_untuned, st->worst_untuned, st->worst_best,
                st->losing, st->fixed, st->unproven, st->reverted, st->geo_after,
                st->worst_after, st->same, st->unaudited ? "; some points not audited (time)" : "");
    if (!rc && o->out)
        fprintf(o->out, "  %.3f s: %u runs %.3f s (routing to done; warm-ups, with their "
                "program builds, %.3f s), copies in %.3f s, order checks %.3f s, inputs %.3f s\n",
                st->times.total_s, st->times.runs, st->times.run_s, st->times.warm_s,
                st->times.copy_s, st->times.check_s, st->times.input_s);
    return rc;
}
