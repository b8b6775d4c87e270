/* Timing one choice of the plan audit at one point (gs_audit_int.h): the
 * memfd block and its input, a run through gs_sched_route and
 * gs_sched_submit as a client's request runs (its output checked the
 * first time each choice runs at a point), rounds of runs over the
 * choices, and the comparisons the audit's verdicts rest on. Shared by
 * the flat points (gs_audit_flat.c) and the rows and top-k points
 * (gs_audit_shapes.c). */
#include "config.h"
#include "gs_audit.h"
#include "gs_audit_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gs_hostpool.h"
#include "gs_keys.h"
#include "gs_log.h"
#include "gs_pcopy.h"
#include "gs_time.h"
#include "gs_tune.h"

void audit_on_done(gs_job *j, void *ud)
{
    (void)j;
    ((actx *)ud)->done = 1;
}

/* ---- the block and its input ---- */

void audit_block_free(actx *A)
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
int audit_block_make(actx *A, const shape *h, size_t n, gs_err *err)
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
        audit_block_free(A);
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
void audit_narrow_job(gs_job *j, const shape *h, uint32_t *words)
{
    if (!h->nw)
        return;
    gs_narrow_job_init(&j->narrow, h->nw, &j->req.shape, j->req.n, j->req.keys, NULL, words);
    j->req = j->narrow.req;
}

/* A run's keys are checked for order the first time a choice runs at a
 * point (its warm-up): later runs repeat the same sort of the same input,
 * and a check costs more than a copy in. */
static int run_once(actx *A, const shape *h, size_t n, audit_choice *c, double *ms, gs_err *err)
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
    j.req = (gs_sort_req){ .shape = { .dtype = h->dt, .payload = h->pl, .rows = A->rows,
                                      .topk = A->k > 0, .k = A->k, .segments = A->nseg },
                           .n = n, .keys = A->base, .offsets = A->offs,
                           .values = h->pl == GS_PL_NONE ? NULL : (char *)A->base + A->voff };
    audit_narrow_job(&j, h, A->words);
    j.device = A->o->device;
    if (c->algo) {
        snprintf(j.algorithm, sizeof j.algorithm, "%s", c->algo->name);
        j.params = c->params;
        j.has_params = !c->auto_params;
    } else {
        j.untuned = !c->routed;
        if (A->rows > 1 || A->k || A->nseg) {
            /* rows, top-k and segments: routed as for a client that names
             * no device (naming one picks its select, its rows or its
             * bitonic), on this one */
            j.device = -1;
            j.scope_dev = A->o->device + 1;
        }
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
        int ok = A->check ? A->check(A, h, n) : sorted(h, A->base, n);
        A->tm.check_s += gs_now_s() - t2;
        if (!ok)
            return gs_err_set(err, GS_EINVAL, "%s: the keys came back out of order%s",
                              j.algo ? j.algo->name : "?",
                              A->k ? " or not the k smallest" : A->rows > 1 ? " in a row"
                              : A->nseg ? " in a segment" : "");
    }
    snprintf(c->ran, sizeof c->ran, "%s", j.algo ? j.algo->name : "?");
    c->ran_params = j.run_params;
    *ms = j.t_done - j.t_submit;
    return 0;
}

int audit_cancelled(const actx *A)
{
    return A->o->cancel && atomic_load(A->o->cancel);
}

/* Run c once more, into its samples (warm-up: not kept). */
void audit_sample(actx *A, const shape *h, size_t n, audit_choice *c, int keep)
{
    if (c->failed || c->pruned || audit_cancelled(A))
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

void audit_summarize(audit_choice *c)
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

int audit_usable(const audit_choice *c)
{
    return !c->failed && !c->pruned && c->nt > 0;
}

/* Whether a is faster than b by more than the noise: its median at least
 * GS_TUNE_NOISE below b's, and its runs faster than b's by a one-sided
 * Mann-Whitney rank test (ties count half). The tuner's rule
 * (gs_tune_beats) has only medians and minima; here every run is known,
 * and a minimum gets harder to beat the more runs there are. */
int audit_faster(const audit_choice *a, const audit_choice *b)
{
    if (!audit_usable(a) || !audit_usable(b) || !(a->med <= (1 - GS_TUNE_NOISE) * b->med))
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
void audit_rounds(actx *A, const shape *h, size_t n, audit_choice **cs, size_t nc, int reps)
{
    for (int r = 0; r < reps && !audit_cancelled(A); r++)
        for (size_t k = 0; k < nc; k++)
            audit_sample(A, h, n, cs[r % 2 ? nc - 1 - k : k], 1);
    for (size_t i = 0; i < nc; i++)
        audit_summarize(cs[i]);
}

/* ---- comparing choices ---- */


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
int audit_same_run(const actx *A, const audit_choice *x, const audit_choice *y)
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

void audit_params_text(const gs_params *p, char *buf, size_t len)
{
    if (gs_params_format(p, buf, len) || !buf[0])
        snprintf(buf, len, "-");
}


/* Times the nc choices on n keys: a warm-up and a first run each; a
 * forced choice more than PRUNE times the fastest is pruned (its
 * algorithm gone for the larger sizes); then rounds of reps runs, more
 * where one run is short of TARGET_MS. Returns the reps the rounds took. */
int audit_time_choices(actx *A, const shape *h, size_t n, audit_choice *cs, size_t nc,
                        unsigned char *gone, int reps)
{
    audit_choice *all[MAX_CHOICES];
    for (size_t i = 0; i < nc; i++) {
        audit_sample(A, h, n, &cs[i], 0);     /* warm-up: builds, registration */
        all[i] = &cs[i];
    }
    for (size_t i = 0; i < nc; i++)
        audit_sample(A, h, n, &cs[i], 1);
    double first = -1;
    for (size_t i = 0; i < nc; i++)
        if (cs[i].nt && (first < 0 || cs[i].t[0] < first))
            first = cs[i].t[0];
    for (size_t i = 2; i < nc; i++)     /* the plan and the untuned route always stay */
        if (cs[i].nt && cs[i].t[0] > PRUNE * first) {
            audit_summarize(&cs[i]);
            cs[i].pruned = 1;
            snprintf(cs[i].why, sizeof cs[i].why, "more than %.0fx the fastest", PRUNE);
            for (size_t k = 0; k < gs_algo_count(); k++)
                if (gs_algo_at(k) == cs[i].algo)
                    gone[k] = 1;
        }
    if (first > 0 && first * reps < TARGET_MS)
        reps = (int)ceil(TARGET_MS / first) < MAX_REPS / 2 ? (int)ceil(TARGET_MS / first)
                                                          : MAX_REPS / 2;
    audit_rounds(A, h, n, all, nc, reps);
    return reps;
}

/* ---- a point's verdict: counted, and its line ---- */

/* The verdict of a flat or rows/top-k/segments point (gs_audit_int.h). */
int audit_plan_loses(actx *A, const shape *h, const char *label, int b, audit_choice *cs,
                     size_t nc, int reps, point_res *pr, audit_choice **altp)
{
    size_t n = (size_t)1 << b;
    audit_choice *plan = &cs[0], *unt = &cs[1];
    /* the fastest other choice, and the fastest forced one */
    audit_choice *alt = NULL, *bestf = NULL;
    for (size_t i = 1; i < nc; i++) {
        if (!audit_usable(&cs[i]))
            continue;
        if (!alt || cs[i].med < alt->med)
            alt = &cs[i];
        if (i >= 2 && (!bestf || cs[i].med < bestf->med))
            bestf = &cs[i];
    }
    int lose = alt && !audit_same_run(A, plan, alt) && audit_faster(alt, plan);
    if (lose && !audit_cancelled(A)) {
        plan->nt = alt->nt = 0;
        audit_choice *two[2] = { plan, alt };
        audit_rounds(A, h, n, two, 2, reps);
        lose = audit_faster(alt, plan);
    }
    /* The acceptance rule's other half (the tuner's, gs_tune_beats): a row
     * stands where it beats its baseline. A plan whose median is slower
     * than the untuned route's by more than the noise has not shown that
     * here, even where too few or too spread runs keep the rank test from
     * calling it slower: the baseline, what the untuned route runs, is put
     * back (with fix; said either way). */
    if (!lose && !plan->failed && audit_usable(plan) && audit_usable(unt) &&
        !audit_same_run(A, plan, unt) && plan->med > (1 + GS_TUNE_NOISE) * unt->med) {
        pr->unproven = 1;
        lose = A->o->fix && h->own_rows;
        alt = unt;
    }
    if (audit_usable(plan) && audit_usable(unt)) {
        pr->plan_untuned = plan->med / unt->med;
        /* why a slower plan stands: the untuned route runs the same sort
         * (their difference is noise), or the timings did not show it
         * slower by the tuner's rule (GS_TUNE_NOISE and the rank test) */
        const char *why = lose ? "" : audit_same_run(A, plan, unt) ? ": the same sort"
                                    : pr->unproven ? ": not faster than its baseline"
                                    : ": not slower by the rank test";
        snprintf(pr->what, sizeof pr->what, "%s 2^%d: %s %.4f ms, untuned %s %.4f ms%s",
                 label, b, plan->algo ? plan->algo->name : plan->ran, plan->med, unt->ran,
                 unt->med, pr->plan_untuned > 1 ? why : "");
    }
    if (audit_usable(plan) && bestf)
        pr->plan_best = plan->med / bestf->med;
    if (plan->failed) {
        GS_WARN("plan audit, device %d, %s n = 2^%d: the plan's %s failed: %s", A->o->device,
                label, b, plan->label, plan->why);
        lose = alt != NULL;             /* a plan row that cannot run loses to any that can */
    }
    *altp = alt;
    return lose;
}

int audit_shape_wanted(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t l = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += l)
        if ((p == list || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
            return 1;
    return 0;
}

void audit_count(gs_audit_stats *st, const point_res *pr, int own_rows, double *logsum,
                 double *logafter, unsigned *nratio)
{
    st->same += (unsigned)pr->same;
    if (pr->plan_untuned < 0)
        return;
    st->points++;
    /* a plan not faster than its baseline is counted apart from one the
     * rank test found slower */
    st->losing += (unsigned)(pr->losing && !pr->unproven);
    st->fixed += (unsigned)(pr->fixed && !pr->unproven);
    st->unproven += (unsigned)pr->unproven;
    st->reverted += (unsigned)(pr->unproven && pr->fixed);
    if (pr->losing && !pr->fixed && own_rows && !pr->unproven)
        st->unfixable++;
    if (pr->losing && !pr->fixed && !own_rows)
        st->borrowed_losing++;
    *logsum += log(pr->plan_untuned);
    *logafter += log(pr->after_untuned > 0 ? pr->after_untuned : pr->plan_untuned);
    if (pr->after_untuned > st->worst_after)
        st->worst_after = pr->after_untuned;
    (*nratio)++;
    if (pr->plan_untuned > st->worst_untuned) {
        st->worst_untuned = pr->plan_untuned;
        snprintf(st->worst, sizeof st->worst, "%s", pr->what);
    }
    if (pr->plan_best > st->worst_best)
        st->worst_best = pr->plan_best;
}

/* The point's row of the audit table. */
void audit_point_line(FILE *out, const char *name, int b, const audit_choice *cs, size_t nc,
                      const point_res *pr, double secs)
{
    const audit_choice *plan = &cs[0], *unt = &cs[1];
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
    fprintf(out, "  %-10s 2^%-3d %-10s %10.4f  %-10s %10.4f  %12s %10s  %-7s %7.2f  %s\n",
            name, b, plan->failed ? "(failed)" : plan->algo ? plan->algo->name : plan->ran,
            plan->med,
            audit_usable(unt) ? unt->ran : "(failed)", unt->med, pr1, pr2,
            pr->fixed ? "FIXED" : pr->losing ? "LOSES" : pr->unproven ? "slower" : "ok", secs,
            others);
    fflush(out);
}
