/* Tests of the tuner (tuner/) on the first OpenCL device (PoCL in
 * CI; GSORT_TEST_DEVICE=N picks another), with fake algorithms registered
 * only here, whose reported kernel time is a known function of their
 * parameters: spaces limited by device limits and --restrict, the sampler,
 * the search core, exhaustive search finding the known best and sampled
 * search finding it (or a neighbour) in fewer trials, wrong/refused/failing
 * configurations recorded invalid with their reason and never chosen, the
 * plan (host included, stability honoured), resume without re-measuring,
 * the budget, a reader on another connection while the tuner writes, and
 * gsortd refusing a newer database untouched. */
#include "config.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs_algos.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_sha256.h"
#include "gs_sort.h"
#include "gs_tune.h"
#include "gs_tune_int.h"
#include "sortcheck.h"
#include "tap.h"
#include "gs_time.h"

static char dir[] = "/tmp/gsortd-tune-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* ---- the fake algorithm "fk": params a, b in 1..8 ----
 * kernel time 1 + (a-5)^2 + (b-3)^2 ms, so (5,3) is best at 1 ms; the two
 * neighbours (6,3) and (5,4) claim 0.5 ms but sort wrongly (unsorted; a
 * duplicated element), a = 8 is refused by check(), b = 8 fails to "build". */
/* run() calls per configuration and (bucket, payload, key class) */
#define FK_SLOTS 16
static unsigned long fk_runs[9][9][FK_SLOTS];
static unsigned fk_sleep_us;     /* per run, for the budget and reader tests */
static const gs_sort_req *cmp_req;

static uint64_t req_key(const gs_sort_req *r, size_t i)
{
    return gs_dtype_size(r->shape.dtype) == 4 ? ((const uint32_t *)r->keys)[i]
                                        : ((const uint64_t *)r->keys)[i];
}

static int cmp_idx(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    uint64_t a = req_key(cmp_req, i), b = req_key(cmp_req, j);
    return a < b ? -1 : a > b ? 1 : (i > j) - (i < j);
}

/* A correct stable sort of any u32/u64 request (by an index sort). */
static int ref_sort(const gs_sort_req *r)
{
    size_t n = r->n, ks = gs_dtype_size(r->shape.dtype), vs = gs_payload_size(r->shape.payload);
    size_t *ix = malloc(n * sizeof *ix);
    char *tk = malloc(n * ks), *tv = vs ? malloc(n * vs) : NULL;
    if (!ix || !tk || (vs && !tv)) {
        free(ix);
        free(tk);
        free(tv);
        return GS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    cmp_req = r;
    qsort(ix, n, sizeof *ix, cmp_idx);
    int arg = r->shape.payload == GS_PL_IDX32 || r->shape.payload == GS_PL_IDX64;
    for (size_t i = 0; i < n; i++) {
        memcpy(tk + i * ks, (char *)r->keys + ix[i] * ks, ks);
        if (vs && !arg)
            memcpy(tv + i * vs, (char *)r->values + ix[i] * vs, vs);
        else if (arg && vs == 4)
            ((uint32_t *)tv)[i] = (uint32_t)ix[i];
        else if (arg)
            ((uint64_t *)tv)[i] = ix[i];
    }
    memcpy(r->keys, tk, n * ks);
    if (vs)
        memcpy(r->values, tv, n * vs);
    free(ix);
    free(tk);
    free(tv);
    return 0;
}

static size_t fk_values(const gs_dev_info *info, long *out, size_t cap)
{
    (void)info;
    size_t n = 0;
    for (long v = 1; v <= 8 && n < cap; v++)
        out[n++] = v;
    return n;
}

static const gs_param_def fk_params[] = {
    { "a", "first knob", fk_values, 0 },
    { "b", "second knob", fk_values, 0 },
};

static void fk_defaults(const gs_dev_info *info, gs_params *out)
{
    (void)info;
    gs_params_clear(out);
    gs_params_set(out, "a", 1);
    gs_params_set(out, "b", 1);
}

static int fk_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    (void)dev;
    (void)req;
    if (!gs_params_has(p, "a") || !gs_params_has(p, "b") || p->count != 2)
        return gs_err_set(err, GS_EUNSUPPORTED, "fk: needs exactly a and b");
    if (gs_params_get(p, "a", 0) == 8)
        return gs_err_set(err, GS_EUNSUPPORTED, "fk: a=8 needs more local memory than the device has");
    return 0;
}

/* test_prebuild: the first run of each configuration costs this much more,
 * as a program build does. */
static unsigned fk_build_us;
static int fk_built[9][9];

static int fk_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p, gs_sort_stats *st,
                  gs_err *err)
{
    (void)ctx;
    long a = gs_params_get(p, "a", 0), b = gs_params_get(p, "b", 0);
    int slot = ((gs_db_bucket(req->n) - 10) & 3) * 4 + (req->shape.payload != GS_PL_NONE) * 2 +
               (gs_dtype_size(req->shape.dtype) == 8);
    fk_runs[a][b][slot]++;
    if (fk_sleep_us)
        usleep(fk_sleep_us);
    if (fk_build_us && !fk_built[a][b]) {   /* a program build: once per configuration */
        fk_built[a][b] = 1;
        usleep(fk_build_us);
    }
    if (b == 8)
        return gs_err_set(err, GS_EBUILD, "fk: build failed (b=8): error: no such thing");
    int rc = ref_sort(req);
    if (rc)
        return gs_err_set(err, rc, "fk: out of memory");
    size_t ks = gs_dtype_size(req->shape.dtype);
    char *k = req->keys;
    if (a == 6 && b == 3 && req->n > 1) {   /* swap the first and last keys */
        char t[8];
        memcpy(t, k, ks);
        memcpy(k, k + (req->n - 1) * ks, ks);
        memcpy(k + (req->n - 1) * ks, t, ks);
    }
    if (a == 5 && b == 4 && req->n > 1) {   /* still sorted, not a permutation */
        memcpy(k + ks, k, ks);
        if (req->values) {
            size_t vs = gs_payload_size(req->shape.payload);
            memcpy((char *)req->values + vs, req->values, vs);
        }
    }
    st->kernel_ms = (a == 6 && b == 3) || (a == 5 && b == 4)
                  ? 0.5 : 1.0 + (double)((a - 5) * (a - 5) + (b - 3) * (b - 3));
    return 0;
}

static const gs_algo fk_algo = {
    .name = "fk", .summary = "test: cost known from the parameters", .stable = 0,
    .uses_device = 1, .params = fk_params, .nparams = 2, .defaults = fk_defaults,
    .check = fk_check, .run = fk_run,
};

/* Refuses everything, like a stub in the registry. */
static int refuse_check(const gs_dev *dev, const gs_sort_req *req, const gs_params *p, gs_err *err)
{
    (void)dev;
    (void)req;
    (void)p;
    return gs_err_set(err, GS_EUNSUPPORTED, "nope: not implemented yet");
}

static const gs_algo refuse_algo = {
    .name = "nope", .summary = "test: refuses everything", .stable = 1, .uses_device = 1,
    .check = refuse_check,
};

static double cost(long a, long b)
{
    return 1.0 + (double)((a - 5) * (a - 5) + (b - 3) * (b - 3));
}

static unsigned long fk_total_runs(void)
{
    unsigned long s = 0;
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 9; b++)
            for (int k = 0; k < FK_SLOTS; k++)
                s += fk_runs[a][b][k];
    return s;
}

/* ---- helpers ---- */

static void opts_for_test(gs_tune_opts *o, const gs_algo *const *algos, size_t nalgos)
{
    gs_tune_opts_init(o, 600);
    o->algos = algos;
    o->nalgos = nalgos;
    o->nkey_bits = 1;
    o->key_bits[0] = 32;
    o->npayloads = 2;
    o->payloads[0] = GS_PL_NONE;
    o->payloads[1] = GS_PL_U32;
    o->min_log2 = 10;
    o->max_log2 = 11;
    o->large_max_log2 = 0;      /* test_large has its own */
    o->reps = 3;
    o->extra_dists = 0;
    o->cpu_probe = GS_TUNE_PROBE_OFF;   /* fk is tuned wherever it runs; test_cpu_probe */
}

static long q_int(const char *path, const char *sql)
{
    sqlite3 *h;
    long v = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        } else {
            tap_diag("query failed: %s: %s", sql, sqlite3_errmsg(h));
        }
    }
    sqlite3_close(h);
    return v;
}

static int run_tuner(const char *dbpath, gs_dev *dev, const gs_tune_opts *o, gs_tune_report *rep)
{
    gs_db *db;
    gs_err err;
    gs_err_clear(&err);
    if (gs_db_open(&db, dbpath, 0, &err)) {
        tap_diag("open %s: %s", dbpath, err.msg);
        return -1;
    }
    memset(rep, 0, sizeof *rep);
    int rc = gs_tune_device(db, dev, NULL, o, gs_now_s() + o->budget_s, rep, &err);
    if (rc)
        tap_diag("tuner: %s", err.msg);
    gs_db_close(db);
    return rc;
}

static const gs_tune_winner *find_winner(const gs_tune_report *rep, const char *algo, int kc,
                                         gs_payload pl, int bucket)
{
    const gs_tune_devreport *R = &rep->devs[0];
    for (size_t i = 0; i < R->nwinners; i++)
        if (!strcmp(R->winners[i].algorithm, algo) && R->winners[i].key_bits == kc &&
            R->winners[i].payload == pl && R->winners[i].bucket == bucket)
            return &R->winners[i];
    return NULL;
}

static void winner_ab(const gs_tune_winner *w, long *a, long *b)
{
    gs_params p;
    *a = *b = -1;
    if (w && gs_params_from_json(w->params, &p, NULL) == 0) {
        *a = gs_params_get(&p, "a", -1);
        *b = gs_params_get(&p, "b", -1);
    }
}

/* ---- pure parts ---- */

static void test_space(gs_dev *dev)
{
    const gs_algo *radix = gs_algo_find("radix");
    gs_tune_space s;
    gs_err err;
    gs_dev_info small = dev->info;
    small.max_wg_size = 64;
    int rc = gs_tune_space_init(&s, radix, &small, NULL, &err);
    size_t wi = 0;
    while (wi < s.np && strcmp(s.name[wi], "wg_size"))
        wi++;
    tap_ok(rc == 0 && wi < s.np && s.nv[wi] == 3 && s.val[wi][0] == 16 && s.val[wi][2] == 64,
           "radix space on a device with max work-group 64: wg_size in {16,32,64} (%zu values)",
           wi < s.np ? s.nv[wi] : 0);
    uint64_t t64 = s.total;
    rc = gs_tune_space_init(&s, radix, &dev->info, NULL, &err);
    tap_ok(rc == 0 && s.total > t64, "the real device's space is larger (%llu > %llu configurations)",
           (unsigned long long)s.total, (unsigned long long)t64);
    rc = gs_tune_space_init(&s, radix, &dev->info, "radix_bits=4:8,wg_size=32", &err);
    tap_ok(rc == 0 && s.total == 2 * 1 * s.nv[2], "--restrict radix_bits=4:8,wg_size=32 leaves "
           "2 x 1 x %zu configurations (%llu)", s.nv[2], (unsigned long long)s.total);
    rc = gs_tune_space_init(&s, radix, &small, "wg_size=128", &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "wg_size"),
           "a restriction with no legal value left is refused: %s", err.msg);
    tap_ok(gs_tune_restrict_check("a=1:x", &err) == GS_EINVAL, "bad --restrict syntax: %s", err.msg);

    /* codes round-trip through parameter sets */
    rc = gs_tune_space_init(&s, &fk_algo, &dev->info, NULL, &err);
    int rt = rc == 0 && s.total == 64;
    for (uint64_t c = 0; rt && c < s.total; c++) {
        gs_params p;
        uint64_t back;
        gs_tune_space_params(&s, c, &p);
        rt = gs_tune_space_code(&s, &p, &back) == 0 && back == c;
    }
    tap_ok(rt, "fk: 64 configurations; every code round-trips through its parameters");
}

static void test_sampler(void)
{
    gs_tune_sampler a, b;
    gs_err err;
    int ok = gs_tune_sampler_init(&a, 37, 7, &err) == 0 && gs_tune_sampler_init(&b, 37, 8, &err) == 0;
    int seen[37] = { 0 }, dup = 0, n = 0, differ = 0;
    uint64_t c, d;
    while (ok && gs_tune_sampler_next(&a, &c) == 0) {
        dup |= seen[c]++;
        n++;
        if (gs_tune_sampler_next(&b, &d) == 0 && d != c)
            differ = 1;
    }
    tap_ok(ok && n == 37 && !dup && differ, "sampler: every point of 37 exactly once, seed-dependent order");
    gs_tune_sampler_free(&a);
    gs_tune_sampler_free(&b);
    /* large space: rejection sampling without repeats */
    ok = gs_tune_sampler_init(&a, UINT64_C(1) << 40, 3, &err) == 0;
    uint64_t got[200];
    for (int i = 0; ok && i < 200; i++) {
        ok = gs_tune_sampler_next(&a, &got[i]) == 0 && got[i] < (UINT64_C(1) << 40);
        for (int j = 0; ok && j < i; j++)
            ok = got[j] != got[i];
    }
    tap_ok(ok, "sampler over 2^40 points: 200 distinct draws");
    gs_tune_sampler_free(&a);
}

/* A table-driven evaluation for the search core. */
struct tab { double ms[64]; int valid[64]; int calls; };

static int tab_eval(void *ud, uint64_t code, double *ms, int *valid, gs_err *err)
{
    struct tab *t = ud;
    (void)err;
    t->calls++;
    *ms = t->ms[code];
    *valid = t->valid[code];
    return 0;
}

static void test_search(gs_dev *dev)
{
    gs_tune_space s;
    gs_err err;
    gs_tune_space_init(&s, &fk_algo, &dev->info, NULL, &err);
    struct tab t;
    memset(&t, 0, sizeof t);
    for (uint64_t c = 0; c < 64; c++) {
        gs_params p;
        gs_tune_space_params(&s, c, &p);
        long a = gs_params_get(&p, "a", 0), b = gs_params_get(&p, "b", 0);
        t.ms[c] = cost(a, b);
        t.valid[c] = !(a == 8 || b == 8 || (a == 6 && b == 3) || (a == 5 && b == 4));
    }
    gs_tune_sampler smp;
    gs_tune_search sr;
    memset(&sr, 0, sizeof sr);
    size_t quota = 64;
    gs_tune_sampler_init(&smp, 64, 1, &err);
    int rc = gs_tune_search_run(&sr, &s, NULL, 0, &smp, &quota, 8, 0, tab_eval, &t, &err);
    gs_params p;
    gs_tune_space_params(&s, sr.best >= 0 ? sr.ev[sr.best].code : 0, &p);
    tap_ok(rc == 0 && t.calls == 64 && sr.nev == 64 && gs_params_get(&p, "a", 0) == 5 &&
           gs_params_get(&p, "b", 0) == 3, "search core, exhaustive: 64 evaluations, best a=5,b=3");
    gs_tune_search_free(&sr);
    gs_tune_sampler_free(&smp);

    /* sampled, several seeds: always the best or a neighbour, in fewer trials */
    int all_near = 1, all_fewer = 1, exact = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        memset(&sr, 0, sizeof sr);
        t.calls = 0;
        quota = 8;
        gs_tune_sampler_init(&smp, 64, seed, &err);
        rc = gs_tune_search_run(&sr, &s, NULL, 0, &smp, &quota, 8, 0, tab_eval, &t, &err);
        double got = sr.best >= 0 ? sr.ev[sr.best].ms : 1e9;
        all_near &= rc == 0 && got <= 2.0;
        all_fewer &= t.calls < 40;
        if (rc || got > 2.0 || t.calls >= 40)
            tap_diag("seed %llu: best %.1f ms after %d evaluations", (unsigned long long)seed, got,
                     t.calls);
        exact += got == 1.0;
        gs_tune_search_free(&sr);
        gs_tune_sampler_free(&smp);
    }
    tap_ok(all_near && all_fewer, "search core, sampled (8 samples + climbing), 20 seeds: best or "
           "a neighbour every time (%d exact), under 40 of 64 evaluations", exact);

    /* max_trials caps evaluations */
    memset(&sr, 0, sizeof sr);
    t.calls = 0;
    quota = 64;
    gs_tune_sampler_init(&smp, 64, 1, &err);
    gs_tune_search_run(&sr, &s, NULL, 0, &smp, &quota, 8, 5, tab_eval, &t, &err);
    tap_ok(t.calls == 5 && sr.stopped, "max_trials 5: 5 evaluations, then stopped");
    gs_tune_search_free(&sr);
    gs_tune_sampler_free(&smp);

    /* At a large n the climb tries the parameter that moves with n first,
     * upward first: with time for one move, that is the one made. */
    for (int large = 0; large < 2; large++) {
        gs_tune_space sl = s;
        sl.by_n[0] = 0;
        sl.by_n[1] = 1;                           /* "b" */
        uint64_t start = 3 + 3 * sl.nv[0], second = UINT64_MAX;
        size_t idx[GS_MAX_PARAMS];
        memset(&sr, 0, sizeof sr);
        sr.large = large;
        sr.starts = 1;
        size_t none = 0;
        gs_tune_search_run(&sr, &sl, &start, 1, NULL, &none, 2, 2, tab_eval, &t, &err);
        if (sr.nev == 2)
            second = sr.ev[1].code;
        gs_tune_code_split(&sl, second == UINT64_MAX ? start : second, idx);
        tap_ok(sr.nev == 2 && (large ? idx[0] == 3 && idx[1] == 4 : idx[0] == 2 && idx[1] == 3),
               "climb, %s n: the first neighbour tried is %s (a at %zu, b at %zu, from 3, 3)",
               large ? "large" : "small", large ? "b one step up" : "a one step down", idx[0],
               idx[1]);
        gs_tune_search_free(&sr);
    }

    gs_tune_cand c[] = { { "host", 1, 0.5 }, { "fast", 0, 0.1 }, { "mid", 1, 0.3 }, { "none", 0, -1 } };
    tap_ok(gs_tune_plan_pick(c, 4, 0) == 1 && gs_tune_plan_pick(c, 4, 1) == 2 &&
           gs_tune_plan_pick(c, 1, 1) == 0 && gs_tune_plan_pick(c + 3, 1, 0) == -1,
           "plan pick: fastest overall; fastest stable for stable=1; unmeasured never");
}

/* ---- the tuner on the device ---- */

/* The host sort's configurations on this machine (threads x radix_bits):
 * an exhaustive search measures each of them per group. */
static unsigned long host_points(void)
{
    unsigned long n = 1;
    long v[64];
    for (size_t i = 0; i < gs_algo_host.nparams; i++)
        n *= gs_algo_host.params[i].values(NULL, v, 64);
    return n;
}

struct pcount { unsigned calls, ends, fk_end_trials; };

static void count_progress(const gs_tune_progress *p, void *ud)
{
    struct pcount *c = ud;
    c->calls++;
    if (p->group_end) {
        c->ends++;
        if (!strcmp(p->algorithm, "fk"))
            c->fk_end_trials = p->trials_done;
    }
}

static void test_exhaustive(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "ex.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo, &refuse_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 3);
    o.strategy = GS_TUNE_EXHAUSTIVE;
    struct pcount pc = { 0, 0, 0 };
    o.progress = count_progress;
    o.progress_ud = &pc;
    gs_tune_report rep;
    memset(fk_runs, 0, sizeof fk_runs);
    int rc = run_tuner(db, dev, &o, &rep);
    tap_ok(rc == 0 && rep.ndevs == 1, "exhaustive run completes");
    if (rc || rep.ndevs != 1)
        return;
    const gs_tune_devreport *R = &rep.devs[0];
    int all = 1;
    for (int b = 10; b <= 11; b++)
        for (int pl = 0; pl < 2; pl++) {
            long a, bb;
            const gs_tune_winner *w = find_winner(&rep, "fk", 32, pl ? GS_PL_U32 : GS_PL_NONE, b);
            winner_ab(w, &a, &bb);
            all &= w && a == 5 && bb == 3 && w->median_ms == 1.0;
        }
    tap_ok(all, "exhaustive: fk's winner is a=5,b=3 at 1 ms in all 4 groups");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND distribution='random'") == 4 * 64,
           "exhaustive: 64 fk trials per group recorded");
    tap_ok(pc.ends == 12 && pc.fk_end_trials == 64 && pc.calls > pc.ends,
           "progress: one report per evaluation and one per (algorithm, group) end (%u/%u)",
           pc.calls, pc.ends);
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND params='{\"a\":6,\"b\":3}' "
                     "AND distribution='random' AND valid=0 AND reason LIKE '%not sorted%'") == 4,
           "a=6,b=3 (unsorted output) recorded invalid with the reason, in every group");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND params='{\"a\":5,\"b\":4}' "
                     "AND distribution='random' AND valid=0 AND reason LIKE '%not a permutation%'") == 4,
           "a=5,b=4 (sorted but not a permutation) recorded invalid with the reason");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND params LIKE '{\"a\":8,%' "
                     "AND valid=0 AND reason LIKE 'refused by check(): fk: a=8 needs more local%'") == 4 * 8,
           "a=8 refused by check(): all recorded invalid with check()'s message");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND params LIKE '%\"b\":8}' "
                     "AND params NOT LIKE '{\"a\":8,%' AND valid=0 AND reason LIKE 'run failed: fk: build failed%'") == 4 * 7,
           "b=8 build failures recorded invalid with the build error");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='nope' AND valid=0 "
                     "AND reason LIKE '%not implemented yet%'") == 4 &&
           q_int(db, "SELECT count(*) FROM winners WHERE algorithm='nope'") == 0 &&
           q_int(db, "SELECT count(*) FROM plan WHERE algorithm='nope'") == 0,
           "an algorithm refusing everything: one invalid trial per group, no winner, no plan");
    tap_ok(q_int(db, "SELECT count(*) FROM winners WHERE params IN ('{\"a\":6,\"b\":3}','{\"a\":5,\"b\":4}')") == 0 &&
           q_int(db, "SELECT count(*) FROM plan WHERE params IN ('{\"a\":6,\"b\":3}','{\"a\":5,\"b\":4}')") == 0,
           "the faster-claiming wrong configurations never win or plan");
    tap_ok(R->measured == 4 * (host_points() + 64 + 1) && R->invalid == 4 * (2 + 8 + 7 + 1),
           "counts: %lu measured (%lu host configurations), %lu invalid", R->measured,
           host_points(), R->invalid);

    /* plan: every group, both stabilities; stable rows are host (fk is
     * unstable); unstable rows the faster end to end of host and fk */
    int plan_ok = 1;
    size_t nmeasured = 0;
    for (size_t i = 0; i < R->nplan; i++) {
        const gs_tune_planrow *p = &R->plan[i];
        if (p->extrapolated)
            continue;           /* past 2^11: test_extrapolate's */
        nmeasured++;
        const gs_tune_winner *h = find_winner(&rep, "host", 32, p->payload, p->bucket);
        const gs_tune_winner *f = find_winner(&rep, "fk", 32, p->payload, p->bucket);
        if (!h || !f) {
            plan_ok = 0;
            continue;
        }
        if (p->stable)
            plan_ok &= !strcmp(p->algorithm, "host") && p->ms == h->e2e_ms;
        else
            plan_ok &= !strcmp(p->algorithm, h->e2e_ms <= f->e2e_ms ? "host" : "fk") &&
                       p->ms == (h->e2e_ms <= f->e2e_ms ? h->e2e_ms : f->e2e_ms);
    }
    tap_ok(plan_ok && nmeasured == 8 &&
           q_int(db, "SELECT count(*) FROM plan WHERE stable=1 AND algorithm<>'host'") == 0 &&
           q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0") == 8,
           "plan: 8 measured rows; stable=1 always host; stable=0 the faster end to end of host "
           "and fk");
    gs_db *h;
    gs_err err;
    gs_db_choice ch;
    int lk = gs_db_open(&h, db, GS_DB_READONLY, &err) == 0 &&
             gs_db_plan_get(h, R->device_id, 32, "u32", 1, 11, &ch, &err) == 0 &&
             !strcmp(ch.algorithm, "host") && ch.bucket == 11;
    if (lk)
        gs_db_close(h);
    tap_ok(lk, "gs_db_plan_get reads the stable plan (host) at bucket 11");
    tap_ok(q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND distribution='random-e2e'") ==
           4 * (64 - 8 - 7 - 2), "every valid fk trial has its end-to-end twin");
    gs_tune_report_free(&rep);
}

static void test_sampled(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "sampled.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_SAMPLED;
    o.samples = 8;
    o.refine_rounds = 8;
    o.payloads[0] = GS_PL_NONE;
    o.npayloads = 1;
    o.max_log2 = 10;
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    long a, b;
    const gs_tune_winner *w = rc ? NULL : find_winner(&rep, "fk", 32, GS_PL_NONE, 10);
    winner_ab(w, &a, &b);
    long n = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND distribution='random'");
    tap_ok(w && cost(a, b) <= 2.0 && n < 64,
           "sampled: fk winner a=%ld,b=%ld (cost %.0f ms; best 1 ms) after %ld of 64 trials", a, b,
           w ? cost(a, b) : -1.0, n);
    if (!rc)
        gs_tune_report_free(&rep);
}

static void test_resume(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "resume.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_SAMPLED;
    o.samples = 6;
    gs_tune_report r1, r2, r3;
    memset(fk_runs, 0, sizeof fk_runs);
    int rc = run_tuner(db, dev, &o, &r1);
    static unsigned long before[9][9][FK_SLOTS];
    memcpy(before, fk_runs, sizeof before);
    unsigned long m1 = rc ? 0 : r1.devs[0].measured;

    o.strategy = GS_TUNE_EXHAUSTIVE;      /* the rest of the space, reusing the first run's */
    rc |= run_tuner(db, dev, &o, &r2);
    int rerun = 0;
    for (int a = 1; a <= 8; a++)
        for (int b = 1; b <= 8; b++)
            for (int k = 0; k < FK_SLOTS; k++)
                rerun += before[a][b][k] > 0 && fk_runs[a][b][k] != before[a][b][k];
    tap_ok(rc == 0 && rerun == 0 && r2.devs[0].reused >= m1 &&
           r2.devs[0].measured + m1 == 4 * (64 + host_points()),
           "resume: the exhaustive rerun measured only what the sampled run had not (%lu + %lu), "
           "re-running none of its configurations", m1, rc ? 0 : r2.devs[0].measured);
    unsigned long runs2 = fk_total_runs();
    rc |= run_tuner(db, dev, &o, &r3);
    tap_ok(rc == 0 && fk_total_runs() == runs2 && r3.devs[0].measured == 0 &&
           r3.devs[0].reused >= 4 * (64 + host_points()),
           "a third run measures nothing (%lu reused, fk run() calls unchanged)",
           rc ? 0 : r3.devs[0].reused);
    tap_ok(q_int(db, "SELECT count(*) FROM (SELECT 1 FROM trials GROUP BY device_id, algorithm, "
                     "key_bits, payload, n, distribution, params HAVING count(*) > 1)") == 0,
           "no configuration was recorded twice");
    if (!rc) {
        gs_tune_report_free(&r1);
        gs_tune_report_free(&r2);
        gs_tune_report_free(&r3);
    }
}

static void test_budget(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "budget.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_EXHAUSTIVE;
    o.max_log2 = 12;
    o.budget_s = 1.0;
    fk_sleep_us = 3000;     /* 64 configs x 4 runs x 3 ms = 0.8 s per group, 6 groups */
    gs_tune_report rep;
    double t0 = gs_now_s();
    int rc = run_tuner(db, dev, &o, &rep);
    double el = gs_now_s() - t0;
    fk_sleep_us = 0;
    tap_ok(rc == 0 && rep.devs[0].budget_hit && el < 1.0 + 0.5,
           "a 1 s budget: stops starting trials, returns after %.2f s", el);
    tap_ok(rc == 0 && rep.devs[0].nwinners >= 2 && rep.devs[0].nplan >= 2 &&
           q_int(db, "SELECT count(*) FROM plan") == (long)rep.devs[0].nplan,
           "winners (%zu) and plan (%zu) still written from what was measured",
           rc ? 0 : rep.devs[0].nwinners, rc ? 0 : rep.devs[0].nplan);
    if (!rc)
        gs_tune_report_free(&rep);
}

/* ---- builds outside the budget, every payload kind (issue 18) ---- */

/* A quick tune on a fresh machine: the default configuration's first run
 * costs 1.5 s (its "build"), more than the whole budget of 1 s. The
 * warm-up runs before the budget starts, so every group still gets its
 * trials: both key classes, all five payload kinds, both buckets, for the
 * fake and host (charged to the budget, the build left time for one). */
static void test_prebuild(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "prebuild.db");
    gs_tune_opts q;
    gs_tune_opts_init(&q, GS_TUNE_QUICK_BUDGET);
    tap_ok(q.npayloads == GS_PL_COUNT && q.nkey_bits == 3,
           "a quick tune covers every payload kind (%zu) and the three key classes (%zu)",
           q.npayloads, q.nkey_bits);
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    gs_tune_opts_init(&o, 1.0);
    o.algos = algos;
    o.nalgos = 2;
    o.cpu_probe = GS_TUNE_PROBE_OFF;
    o.min_log2 = 10;
    o.max_log2 = 11;
    o.large_max_log2 = 0;
    o.extra_dists = 0;
    memset(fk_built, 0, sizeof fk_built);
    fk_build_us = 1500 * 1000;
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    fk_build_us = 0;
    long fk = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND distribution='random'");
    long host = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='host' AND "
                          "distribution='random'");
    long pls = q_int(db, "SELECT count(DISTINCT payload) FROM trials WHERE algorithm='fk'");
    long h16 = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='host' AND key_bits=16 "
                         "AND payload='none' AND distribution='random' AND valid=1");
    long f16 = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND key_bits=16");
    long p16 = q_int(db, "SELECT count(*) FROM plan WHERE key_bits=16 AND payload='none' AND "
                         "algorithm='host' AND bucket IN (10, 11)");
    tap_ok(rc == 0 && rep.devs[0].prebuild_s >= 1.4 && fk == 20 && host == 22 && pls == 5,
           "the 1.5 s build ran before the 1 s budget (%.2f s), and every group was measured: "
           "fk %ld trials, host %ld (32 and 64 bits x 5 payloads x 2 buckets; the host's "
           "count of 16-bit keys alone x 2)", rc ? 0 : rep.devs[0].prebuild_s, fk, host);
    tap_ok(h16 == 2 && f16 == 0 && p16 >= 2,
           "16-bit keys: the host's count timed and valid at both sizes (%ld), fk, which does "
           "not sort them itself, not timed (%ld); the plan's rows for them name the host "
           "(%ld, stable and not)", h16, f16, p16);
    if (!rc)
        gs_tune_report_free(&rep);
    /* A rerun of the same code finds trials of it: no warm-up again. */
    unsigned long before = fk_total_runs();
    rc = run_tuner(db, dev, &o, &rep);
    tap_ok(rc == 0 && fk_total_runs() == before && rep.devs[0].prebuild_s < 0.5,
           "a rerun skips the warm-up (no fk run, %.2f s)", rc ? 0 : rep.devs[0].prebuild_s);
    if (!rc)
        gs_tune_report_free(&rep);
}

/* ---- the CPU probe (issue 34) ---- */

/* On a CPU device, fk (a device algorithm: 21 ms at its defaults) is far
 * behind the host sort (microseconds at 2^11): it is timed once at the
 * probe group, left out of the rest of the tune, and the report says so
 * once with the ratio; the host sort is tuned as usual. A quick tune
 * (GS_TUNE_PROBE_RECORDED) on a fresh database runs fk not at all and says
 * it was not probed; on the database that holds the probe it decides from
 * it, again without running fk. Tuning it anyway (GS_TUNE_PROBE_OFF, what
 * --algorithms does) measures it in every group. A GPU is never probed. */
static void test_cpu_probe(gs_dev *dev)
{
    int cpu = (dev->info.type & CL_DEVICE_TYPE_CPU) != 0;
    char db[512], db2[512];
    path_of(db, sizeof db, "probe.db");
    path_of(db2, sizeof db2, "probe2.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.cpu_probe = GS_TUNE_PROBE_MEASURE;
    unsigned long before = fk_total_runs();
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    const gs_tune_devreport *R = rc ? NULL : &rep.devs[0];
    long fk = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND "
                        "distribution='random'");
    long fkw = q_int(db, "SELECT count(*) FROM winners WHERE algorithm='fk'");
    long hostw = q_int(db, "SELECT count(*) FROM winners WHERE algorithm='host'");
    unsigned long runs = fk_total_runs() - before;
    if (cpu)
        tap_ok(R && strstr(R->dropped, "fk ") && strstr(R->dropped, "x the time of host at u32 "
               "keys, 2^11") && fk == 1 && fkw == 0 && hostw == 4 && runs <= 5,
               "CPU device: fk probed once (%ld trial, %lu runs) and left out, the report says "
               "why ('%s'); host tuned in every group (%ld winners)", fk, runs,
               R ? R->dropped : "", hostw);
    else
        tap_ok(R && !R->dropped[0] && fkw == 4, "GPU: no probe, fk tuned in every group (%ld)",
               fkw);
    if (!rc)
        gs_tune_report_free(&rep);

    o.cpu_probe = GS_TUNE_PROBE_RECORDED;
    before = fk_total_runs();
    rc = run_tuner(db2, dev, &o, &rep);
    R = rc ? NULL : &rep.devs[0];
    fk = q_int(db2, "SELECT count(*) FROM trials WHERE algorithm='fk'");
    tap_ok(!cpu || (R && strstr(R->dropped, "fk (not probed") && fk == 0 &&
                    fk_total_runs() == before),
           "quick, fresh database: fk not run at all (%ld trials), said once ('%s')", fk,
           R ? R->dropped : "");
    if (!rc)
        gs_tune_report_free(&rep);
    before = fk_total_runs();
    rc = run_tuner(db, dev, &o, &rep);
    R = rc ? NULL : &rep.devs[0];
    tap_ok(!cpu || (R && strstr(R->dropped, "x the time of host") && fk_total_runs() == before),
           "quick, the database holding the probe: decided from it, fk not run ('%s')",
           R ? R->dropped : "");
    if (!rc)
        gs_tune_report_free(&rep);
}

/* ---- past the largest measured size (issue 18) ---- */

static void winner(gs_tune_devreport *R, const char *algo, int stable, int bucket, double e2e)
{
    gs_tune_winner w = { .key_bits = 32, .payload = GS_PL_NONE, .bucket = bucket,
                         .median_ms = e2e, .e2e_ms = e2e, .stable = stable };
    snprintf(w.algorithm, sizeof w.algorithm, "%s", algo);
    snprintf(w.params, sizeof w.params, "{\"b\":%d}", bucket);
    if (gs_tune_winner_add(R, &w))
        tap_bail("out of memory");
}

/* A stable winner (u32 keys, no payload) of a plan test: its end-to-end
 * time at one bucket. */
struct pw {
    const char *algo;
    int bucket;
    double e2e;
    double kernel;          /* > 0: a device algorithm's kernel time */
};

/* The untuned daemon's device algorithm for plan_of's report (a GPU's;
 * "" leaves the host sort the only untuned one). */
static const char *plan_default_algo = "";

/* The plan of these winners, written to a fresh database with one device;
 * the device report (winners and plan rows) in R. */
static int plan_of(char *db, size_t len, const char *name, const struct pw *ws, size_t n,
                   gs_tune_devreport *R, gs_err *err)
{
    path_of(db, len, name);
    gs_err_clear(err);
    gs_db *h;
    if (gs_db_open(&h, db, 0, err))
        tap_bail("open: %s", err->msg);
    gs_dev_info in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "Plan Device %s", name);
    int64_t id;
    if (gs_db_device_id(h, &in, 1, &id, err))
        tap_bail("device: %s", err->msg);
    memset(R, 0, sizeof *R);
    snprintf(R->default_algo, sizeof R->default_algo, "%s", plan_default_algo);
    for (size_t i = 0; i < n; i++) {
        winner(R, ws[i].algo, 1, ws[i].bucket, ws[i].e2e);
        if (ws[i].kernel > 0) {
            R->winners[R->nwinners - 1].uses_device = 1;
            R->winners[R->nwinners - 1].median_ms = ws[i].kernel;
        }
    }
    int rc = gs_tune_plan_write(h, id, R, err);
    gs_db_close(h);
    return rc;
}

/* What gsortd --tune-all would print for this device report (malloc'd). */
static char *report_text(gs_tune_devreport *R)
{
    gs_tune_report rep = { .devs = R, .ndevs = 1 };
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (f) {
        gs_tune_report_print(f, &rep);
        fclose(f);
    }
    return buf;
}

/* Measured to 2^16: host is faster there (0.1/0.2/0.4 ms, all per key),
 * radix slower (0.5/0.55/0.6 ms: from its two largest sizes a fixed 0.5 ms
 * and a small cost per key), "far" fastest of all but measured only at
 * 2^10. Past 2^16 the plan follows the scaling: radix from 2^17 (predicted
 * 0.7 against host's 0.8), never "far", every row marked extrapolated, with radix's
 * parameters from its largest measured size. */
static void test_extrapolate(void)
{
    static const struct pw ws[] = { { "host", 14, 0.1, 0 }, { "host", 15, 0.2, 0 }, { "host", 16, 0.4, 0 },
                                    { "radix", 14, 0.5, 0 }, { "radix", 15, 0.55, 0 },
                                    { "radix", 16, 0.6, 0 }, { "far", 10, 0.001, 0 } };
    char db[512];
    gs_err err;
    gs_tune_devreport R;
    int rc = plan_of(db, sizeof db, "extrap.db", ws, sizeof ws / sizeof *ws, &R, &err);
    long measured_host = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0 AND "
                                   "algorithm='host' AND bucket BETWEEN 14 AND 16");
    long ex_radix = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=1 AND "
                              "algorithm='radix' AND bucket BETWEEN 17 AND 28");
    long ex_all = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=1");
    long ex_far = q_int(db, "SELECT count(*) FROM plan WHERE algorithm='far' AND bucket > 10");
    long ex_params = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=1 AND "
                               "params='{\"b\":16}'");
    double ms17 = -1;
    for (size_t i = 0; i < R.nplan; i++)
        if (R.plan[i].bucket == 17 && !R.plan[i].stable)
            ms17 = R.plan[i].ms;
    tap_ok(rc == 0 && measured_host == 6 && ex_radix == 24 && ex_all == 24 && ex_far == 0 &&
           ex_params == 24 && ms17 > 0.699 && ms17 < 0.701,
           "past 2^16 the plan follows the measured scaling: radix from 2^17 to 2^28 (%ld rows, "
           "all extrapolated: %ld; 2^17 predicted %.4f ms), never the candidate measured only "
           "at 2^10 (%ld), measured rows kept (%ld) %s", ex_radix, ex_all, ms17, ex_far,
           measured_host, rc ? err.msg : "");
    char *buf = report_text(&R);
    tap_ok(buf && strstr(buf, "Sizes not measured") &&
           strstr(buf, "u32  none    any    ~host 2^11..2^13, >radix 2^17..2^28"),
           "the report says which sizes are predicted, and by what: host between 2^10 and "
           "2^14 (far, measured at 2^10 only, not), radix past 2^16");
    if (buf && !strstr(buf, ">radix 2^17..2^28"))
        tap_diag("%s", buf);
    free(buf);
    free(R.winners);
    free(R.plan);
}

/* A quick tune's budget ended before the GPU's default algorithm (radix)
 * was timed past 2^18, while shellsort was timed to 2^22 (faster up to
 * there, here). Past 2^22 radix is still weighed, from its own 2^16 and
 * 2^18 (a fixed 0.47 ms and 0.5 ns a key: 4.7 ms at 2^23), and takes the
 * sizes shellsort's line (0.27 ms and 0.89 ns a key: 7.7 ms) would
 * otherwise have taken unopposed (an H100's --quick plan, 2026-12-07:
 * shellsort for u32 keys with u32 values at 2^23-2^28, 2.7-3.8x radix). */
static void test_extrapolate_untuned(void)
{
    static const struct pw ws[] = { { "radix", 16, 0.5, 0 }, { "radix", 18, 0.6, 0 },
                                    { "shellsort", 16, 0.4, 0 }, { "shellsort", 18, 0.55, 0 },
                                    { "shellsort", 20, 1.2, 0 }, { "shellsort", 22, 4.0, 0 } };
    char db[512];
    gs_err err;
    gs_tune_devreport R;
    plan_default_algo = "radix";
    int rc = plan_of(db, sizeof db, "untuned.db", ws, sizeof ws / sizeof *ws, &R, &err);
    plan_default_algo = "";
    long rx = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=1 AND algorithm='radix' "
                        "AND bucket BETWEEN 23 AND 28");
    long sh = q_int(db, "SELECT count(*) FROM plan WHERE algorithm='shellsort' AND bucket > 22");
    long meas = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0 AND "
                          "algorithm='shellsort' AND bucket IN (20, 22)");
    tap_ok(rc == 0 && rx == 12 && sh == 0 && meas == 4,
           "past the largest size the untuned algorithm is weighed from wherever it was last "
           "timed: radix at 2^23..2^28 (%ld of 12 rows), shellsort past 2^22 in none (%ld), "
           "its measured rows kept (%ld) %s", rx, sh, meas, rc ? err.msg : "");
    free(R.winners);
    free(R.plan);
}

/* Measured sparsely (2^10, 2^12, 2^14): host 1/2/4 ms, radix 5/3/1 ms.
 * Between measured sizes the plan follows each candidate's line through
 * its neighbouring measurements: host at 2^11 (1.33 against 1.5), radix
 * at 2^13 (0.5 against 2.67), rows marked interpolated; past 2^14 radix,
 * extrapolated. */
static void test_interpolate(void)
{
    static const struct pw ws[] = { { "host", 10, 1, 0 }, { "host", 12, 2, 0 }, { "host", 14, 4, 0 },
                                    { "radix", 10, 5, 0 }, { "radix", 12, 3, 0 }, { "radix", 14, 1, 0 } };
    char db[512];
    gs_err err;
    gs_tune_devreport R;
    int rc = plan_of(db, sizeof db, "interp.db", ws, sizeof ws / sizeof *ws, &R, &err);
    long i11 = q_int(db, "SELECT count(*) FROM plan WHERE bucket=11 AND algorithm='host' AND "
                         "extrapolated=2");
    long i13 = q_int(db, "SELECT count(*) FROM plan WHERE bucket=13 AND algorithm='radix' AND "
                         "extrapolated=2");
    long interp = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=2");
    long ex = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=1 AND algorithm='radix' "
                        "AND bucket BETWEEN 15 AND 28");
    long meas = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0");
    tap_ok(rc == 0 && i11 == 2 && i13 == 2 && interp == 4 && ex == 28 && meas == 6,
           "between sparse sizes: host at 2^11 (%ld of 2 rows), radix at 2^13 (%ld of 2), "
           "%ld rows interpolated, %ld extrapolated past 2^14, %ld measured %s", i11, i13,
           interp, ex, meas, rc ? err.msg : "");
    char *buf = report_text(&R);
    tap_ok(buf && strstr(buf, "~host 2^11, ~radix 2^13, >radix 2^15..2^28"),
           "the report marks interpolated (~) and extrapolated (>) sizes");
    if (buf && !strstr(buf, "~host 2^11"))
        tap_diag("%s", buf);
    free(buf);
    free(R.winners);
    free(R.plan);
}

/* The H200's default tune (u32 keys alone): radix's kernels are faster at
 * every large size (3.09 against 4.12 ms at 2^26, 13.1 against 17.4 at
 * 2^28), but the tuner's pageable copies, 20-64 ms of each e2e, swung
 * mergepath's e2e below radix's at 2^26 and 2^28, and the plan served 2^27
 * with mergepath. Compared as kernel time plus the group's least transfer
 * time, radix serves 2^24..2^28, 2^27 included. */
static void test_plan_kernel_plus_transfer(void)
{
    static const struct pw ws[] = {
        { "radix", 24, 7.6227, 0.8946 },  { "mergepath", 24, 8.2988, 1.1300 },
        { "radix", 26, 24.6427, 3.0945 }, { "mergepath", 26, 23.8679, 4.1231 },
        { "radix", 28, 82.3486, 13.0926 }, { "mergepath", 28, 80.9822, 17.3722 },
        { "host", 24, 150.0, 0 },
    };
    char db[512];
    gs_err err;
    gs_tune_devreport R;
    int rc = plan_of(db, sizeof db, "h200.db", ws, sizeof ws / sizeof *ws, &R, &err);
    long radix = q_int(db, "SELECT count(*) FROM plan WHERE algorithm='radix' AND stable=0 AND "
                           "bucket BETWEEN 24 AND 28");
    long r27 = q_int(db, "SELECT count(*) FROM plan WHERE algorithm='radix' AND bucket=27 AND "
                         "extrapolated=2");
    double ms26 = -1;
    for (size_t i = 0; i < R.nplan; i++)
        if (R.plan[i].bucket == 26 && !R.plan[i].stable)
            ms26 = R.plan[i].ms;
    tap_ok(rc == 0 && radix == 5 && r27 == 2 && ms26 > 22.83 && ms26 < 22.85,
           "H200 winners: radix serves 2^24..2^28 (%ld of 5 sizes; 2^27 interpolated: %ld of 2), "
           "2^26 at kernel 3.09 + the least transfer 19.74 = %.2f ms %s", radix, r27, ms26,
           rc ? err.msg : "");
    free(R.winners);
    free(R.plan);
}

/* Large n: dense to 2^11, then every other size to 2^15. The host sort is
 * timed at 2^13 and 2^15 with its earlier winner and defaults only, with
 * at most LARGE_REPS repetitions; fk (an index qsort, far slower than the
 * host's radix at 2^11) is not timed there at all; the sizes between are
 * interpolated. */
static void test_large(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "large.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.large_max_log2 = 15;
    o.reps = 5;
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    long h13 = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='host' AND n=8192 AND "
                         "distribution='random'");
    long h15 = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='host' AND n=32768 AND "
                         "distribution='random' AND reps<=3");
    long between = q_int(db, "SELECT count(*) FROM trials WHERE n IN (4096, 16384)");
    long fk = q_int(db, "SELECT count(*) FROM trials WHERE algorithm='fk' AND n > 2048");
    long interp = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=2 AND bucket IN (12, 14)");
    long meas = q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0 AND bucket IN (13, 15)");
    /* the baseline at each large size, whatever else is timed there */
    gs_params dp;
    char dj[512], sql[800];
    gs_algo_host.defaults(NULL, &dp);
    gs_params_to_json(&dp, dj, sizeof dj, NULL);
    snprintf(sql, sizeof sql, "SELECT count(DISTINCT n) FROM trials WHERE algorithm='host' AND "
             "n IN (8192, 32768) AND distribution='random' AND params='%s'", dj);
    long base = q_int(db, sql);
    /* seeds (the baseline, the recorded and the previous size's winners),
     * then one local climb of LARGE_CLIMB_ROUNDS (2) moves over host's 5
     * parameters, one step either way (two where a neighbour is invalid,
     * stepped over): at most 3 + 2 x 20 */
    tap_ok(rc == 0 && rep.devs[0].max_log2 == 15 && h13 >= 2 && h13 <= 43 && h15 >= 2 &&
           base == 2 && between == 0 && fk == 0 && rep.devs[0].pruned == 4 && interp == 8 &&
           meas == 8,
           "large n: host timed at 2^13 (%ld trials: seeds and one local climb) and 2^15 (%ld, "
           "3 reps), its defaults at both (%ld), nothing at 2^12/2^14 (%ld), fk pruned (%u, %ld "
           "trials), 2^12/2^14 interpolated (%ld rows), 2^13/2^15 measured (%ld)", h13, h15,
           base, between, rc ? 0 : rep.devs[0].pruned, fk, interp, meas);
    if (!rc)
        gs_tune_report_free(&rep);
}

/* Time left after every group goes to widened searches, most spread
 * first: fk's configurations differ 26x, so with a 4-sample quota its four
 * groups are searched again with more samples, and far more distinct
 * configurations get timed than the quota alone allows. */
static void test_leftover(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "leftover.db");
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_SAMPLED;
    o.samples = 4;
    o.refine_rounds = 0;
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    long distinct = q_int(db, "SELECT count(DISTINCT params) FROM trials WHERE algorithm='fk'");
    tap_ok(rc == 0 && rep.devs[0].refined >= 4 && distinct >= 4 + 3 + 8,
           "time left over widens the searches (%u: fk's 4 and the host's) and times fk's %ld "
           "distinct configurations "
           "(quota 4)", rc ? 0 : rep.devs[0].refined, distinct);
    if (!rc)
        gs_tune_report_free(&rep);
}

/* ---- sampled checks between the whole ones at large n ---- */

static unsigned flaky_calls;

/* The host sort, except that its third run (the second timed one) comes
 * back reversed. */
static int flaky_run(gs_sort_ctx *ctx, const gs_sort_req *req, const gs_params *p,
                     gs_sort_stats *st, gs_err *err)
{
    int rc = gs_algo_host.run(ctx, req, p, st, err);
    if (!rc && ++flaky_calls == 3) {
        uint32_t *k = req->keys;
        for (size_t i = 0, j = req->n - 1; i < j; i++, j--) {
            uint32_t t = k[i];
            k[i] = k[j];
            k[j] = t;
        }
    }
    return rc;
}

static const gs_algo flaky_algo = {
    .name = "flaky", .summary = "test: one wrong run in the middle", .stable = 1,
    .uses_device = 0, .run = flaky_run,
};

/* At 2^22 the runs between the first and the last are checked at sampled
 * positions: a wrong middle run is still caught, and named as such. */
static void test_sampled_check(void)
{
    gs_tune_input in;
    gs_err err;
    gs_err_clear(&err);
    if (gs_tune_input_make(&in, GS_DT_U32, GS_PL_NONE, (size_t)1 << 22, GS_TUNE_DIST_RANDOM, &err))
        tap_bail("input: %s", err.msg);
    gs_params p;
    gs_params_clear(&p);
    gs_tune_result r;
    flaky_calls = 0;
    gs_tune_trial_run(NULL, NULL, 3, &flaky_algo, &in, &p, &r);
    tap_ok(!r.valid && strstr(r.reason, "sampled check") && flaky_calls == 3,
           "2^22: a wrong middle run is caught by the sampled check (%s)", r.reason);
    flaky_calls = 100;
    gs_tune_trial_run(NULL, NULL, 3, &flaky_algo, &in, &p, &r);
    tap_ok(r.valid && r.reps == 3, "and the same sort without it passes (%s)", r.reason);
    gs_tune_input_free(&in);
}

/* A device trial's input is registered for the device's DMA as a client's
 * block is (the daemon's path), here on PoCL by the test switch that lets
 * CPU devices register; the sorts stay checked and right, and freeing the
 * input gives the bytes back. A host trial registers nothing. */
static void test_trial_pinned(gs_dev *dev)
{
    gs_pin_budget *b = gs_tune_pins();
    b->any_device = 1;
    gs_tune_input in;
    gs_err err;
    gs_err_clear(&err);
    size_t n = (size_t)1 << 14;
    if (gs_tune_input_make(&in, GS_DT_U32, GS_PL_U32, n, GS_TUNE_DIST_RANDOM, &err))
        tap_bail("input: %s", err.msg);
    gs_params p;
    gs_params_clear(&p);
    gs_tune_result r;
    gs_tune_trial_run(dev, NULL, 3, &gs_algo_host, &in, &p, &r);
    tap_ok(r.valid && in.pin.state[dev->index] == GS_PIN_UNTRIED && atomic_load(&b->used) == 0,
           "a host trial registers nothing (%s)", r.reason);
    const gs_algo *rx = gs_algo_find("radix");
    if (!rx)
        tap_bail("no radix algorithm");
    rx->defaults(&dev->info, &p);
    gs_tune_trial_run(dev, NULL, 3, rx, &in, &p, &r);
    uint64_t used = atomic_load(&b->used);
    tap_ok(r.valid && in.pin.state[dev->index] == GS_PIN_PINNED && used >= n * 8 &&
           ((uintptr_t)in.wk & 4095) == 0 && (char *)in.wv >= (char *)in.wk + n * 4,
           "a radix trial on %s registers its input (%llu bytes, page-aligned keys then "
           "values) and its outputs check (%s)", dev->info.name, (unsigned long long)used,
           r.valid ? "valid" : r.reason);
    gs_tune_input_free(&in);
    tap_ok(atomic_load(&b->used) == 0, "freeing the input releases the registration");
    /* past the cap (a quarter of the machine's memory; here a page): the
     * pageable way, and the trial as good */
    uint64_t cap = atomic_load(&b->cap);
    tap_ok(cap > 0, "the trials' registration cap is set (%llu bytes)", (unsigned long long)cap);
    atomic_store(&b->cap, 4096);
    if (gs_tune_input_make(&in, GS_DT_U32, GS_PL_U32, n, GS_TUNE_DIST_RANDOM, &err))
        tap_bail("input: %s", err.msg);
    gs_tune_trial_run(dev, NULL, 3, rx, &in, &p, &r);
    tap_ok(r.valid && in.pin.state[dev->index] == GS_PIN_REFUSED && atomic_load(&b->used) == 0,
           "an input past the cap is not registered, and its trial is valid (%s)",
           r.valid ? "valid" : r.reason);
    gs_tune_input_free(&in);
    atomic_store(&b->cap, cap);
    b->any_device = 0;
}

/* ---- a write that fails at the end of a run that used its budget ---- */

/* The plan cannot be written (a trigger refuses it): the run fails after
 * its budget ran out, and its report must say it stopped by an error, not
 * that the budget was used up. */
static void test_failed_write(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "failw.db");
    gs_db *h;
    gs_err err;
    gs_err_clear(&err);
    int ok = gs_db_open(&h, db, 0, &err) == 0;
    ok = ok && sqlite3_exec(gs_db_handle(h), "CREATE TRIGGER no_plan BEFORE INSERT ON plan BEGIN "
                            "SELECT RAISE(ABORT, 'injected write failure'); END", NULL, NULL,
                            NULL) == SQLITE_OK;
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_EXHAUSTIVE;
    o.budget_s = 0.5;
    fk_sleep_us = 3000;
    gs_tune_report rep;
    memset(&rep, 0, sizeof rep);
    int rc = ok ? gs_tune_device(h, dev, NULL, &o, gs_now_s() + o.budget_s, &rep, &err) : 0;
    fk_sleep_us = 0;
    if (ok)
        gs_db_close(h);
    tap_ok(ok && rc < 0 && rep.ndevs == 1 && rep.devs[0].failed && strstr(err.msg, "injected"),
           "a plan write refused at the end of the run: the run fails (%s)", err.msg);
    char text[8192] = "";
    FILE *f = tmpfile();
    if (f && rep.ndevs) {
        gs_tune_report_print(f, &rep);
        rewind(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        text[got] = '\0';
    }
    if (f)
        fclose(f);
    tap_ok(strstr(text, "; stopped by an error") && !strstr(text, "used up"),
           "... and its report says it stopped by an error, not that the budget was used up "
           "(budget_hit %d)", rep.ndevs ? rep.devs[0].budget_hit : -1);
    gs_tune_report_free(&rep);
}

/* ---- a reader on its own connection while the tuner writes ---- */

struct rd { const char *path; int64_t dev; volatile int done; int errors, reads, found; };

static void *reader(void *arg)
{
    struct rd *s = arg;
    gs_db *db;
    gs_err err;
    if (gs_db_open(&db, s->path, GS_DB_READONLY, &err)) {
        s->errors++;
        return NULL;
    }
    while (!s->done) {
        gs_db_choice c;
        int rc = gs_db_plan_get(db, s->dev, 32, "none", 1, 10, &c, &err);
        if (rc == 0 && !strcmp(c.algorithm, "host"))
            s->found++;
        else
            s->errors++;   /* the earlier plan must stay readable throughout */
        s->reads++;
        usleep(500);
    }
    gs_db_close(db);
    return NULL;
}

static void test_reader(gs_dev *dev)
{
    char db[512];
    path_of(db, sizeof db, "ex.db");       /* has a plan from test_exhaustive */
    gs_db *h;
    gs_err err;
    int64_t id = -1;
    if (gs_db_open(&h, db, 0, &err) == 0) {
        gs_db_device_id(h, &dev->info, 0, &id, &err);
        gs_db_close(h);
    }
    struct rd s = { .path = db, .dev = id };
    pthread_t th;
    pthread_create(&th, NULL, reader, &s);
    const gs_algo *algos[] = { &gs_algo_host, &fk_algo };
    gs_tune_opts o;
    opts_for_test(&o, algos, 2);
    o.strategy = GS_TUNE_EXHAUSTIVE;
    o.max_log2 = 12;            /* bucket 12 is new: 2 x 65 trials to write */
    fk_sleep_us = 500;
    gs_tune_report rep;
    int rc = run_tuner(db, dev, &o, &rep);
    fk_sleep_us = 0;
    s.done = 1;
    pthread_join(th, NULL);
    tap_ok(rc == 0 && s.errors == 0 && s.reads > 20 && s.found == s.reads,
           "a reader on another connection: %d plan lookups during the run, all answered, "
           "no errors", s.reads);
    tap_ok(rc == 0 && rep.devs[0].measured >= 2 * 65 && q_int(db, "SELECT count(*) FROM plan WHERE extrapolated=0") == 12,
           "the run wrote its new trials (%lu) and extended the plan to 12 rows",
           rc ? 0 : rep.devs[0].measured);
    if (!rc)
        gs_tune_report_free(&rep);
}

/* ---- gsortd refuses a database from a newer gsortd, untouched ---- */

static void test_newer_db(void)
{
    char db[512], cmd[2048], out[600];
    path_of(db, sizeof db, "newer.db");
    path_of(out, sizeof out, "newer.out");
    sqlite3 *h;
    int ok = sqlite3_open(db, &h) == SQLITE_OK &&
             sqlite3_exec(h, "CREATE TABLE future (x); PRAGMA user_version = 99;", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    uint8_t before[GS_SHA256_LEN], after[GS_SHA256_LEN];
    sc_file_sha256(db, before);
    const char *top = getenv("top_builddir");
    snprintf(cmd, sizeof cmd, "%s/daemon/gsortd --tune-all --quick --algorithms host --db %s >%s 2>&1",
             top ? top : ".", db, out);
    int st = system(cmd);
    sc_file_sha256(db, after);
    char msg[512] = "";
    FILE *f = fopen(out, "r");
    if (f) {
        if (!fgets(msg, sizeof msg, f))
            msg[0] = '\0';
        fclose(f);
    }
    msg[strcspn(msg, "\n")] = '\0';
    tap_ok(ok && WIFEXITED(st) && WEXITSTATUS(st) == 1 && !memcmp(before, after, sizeof before) &&
           strstr(msg, "newer"), "gsortd --tune-all on a newer-schema database: exit 1, file "
           "untouched: %s", msg);
}

int main(void)
{
    if (!mkdtemp(dir))
        tap_bail("mkdtemp failed");
    gs_dev *devs;
    size_t ndev;
    gs_dev *dev = sc_test_device(&devs, &ndev, "tuner");
    tap_ok(dev->info.profiling, "%s has profiling (the fake's kernel times are used)", dev->info.name);

    test_space(dev);
    test_sampler();
    test_search(dev);
    test_exhaustive(dev);
    test_sampled(dev);
    test_resume(dev);
    test_budget(dev);
    test_prebuild(dev);
    test_cpu_probe(dev);
    test_extrapolate();
    test_extrapolate_untuned();
    test_interpolate();
    test_plan_kernel_plus_transfer();
    test_large(dev);
    test_leftover(dev);
    test_sampled_check();
    test_trial_pinned(dev);
    test_failed_write(dev);
    test_reader(dev);
    test_newer_db();

    gs_dev_free_list(devs, ndev);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (getenv("TEST_TUNE_KEEP"))   /* debugging: keep the databases */
        snprintf(cmd, sizeof cmd, "echo kept %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
