/* Tests of the in-memory plan table (daemon/sched/gs_plans.c) on a database of
 * known rows: every row is loaded, rows this gsortd cannot use are left
 * out, the nearest bucket wins (ties: the larger), a missing shape
 * borrows the nearest tuned one (a stable plan for a request that need not
 * be stable, then the same value width, then any payload, then the other
 * key width) and never an unstable algorithm for a
 * stable request, winners match exactly, and loading runs a known, small
 * number of statements while lookups run none. No OpenCL device needed. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_narrow.h"
#include "gs_plans.h"
#include "tap.h"

/* A request shape by what the plan is keyed by (unsigned keys of that width). */
#define SH(kb, pl, st) \
    (&(gs_shape){ .dtype = (kb) == 64 ? GS_DT_U64 : GS_DT_U32, .payload = (pl), .stable = (st), \
                  .plan16 = (kb) == 16 })

static gs_db *g_db;
static int64_t g_id;

static void plan(int kb, const char *pl, int stable, int bucket, const char *algo,
                 const char *params, double ms)
{
    gs_err e;
    gs_err_clear(&e);
    if (gs_db_plan_set(g_db, g_id, kb, pl, stable, bucket, algo, params, ms, &e) < 0)
        tap_bail("plan_set: %s", e.msg);
}

static const char *name_of(const gs_plans_entry *e)
{
    return e ? e->algo->name : "(none)";
}

int main(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/gs-plans-%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    unlink(path);
    gs_err e;
    gs_err_clear(&e);
    if (gs_db_open(&g_db, path, 0, &e) < 0)
        tap_bail("open %s: %s", path, e.msg);
    gs_dev_info in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "Plan Test Device");
    snprintf(in.platform, sizeof in.platform, "Test");
    snprintf(in.driver, sizeof in.driver, "1.0");
    if (gs_db_device_id(g_db, &in, 1, &g_id, &e) < 0)
        tap_bail("device: %s", e.msg);

    const char *rp = "{\"radix_bits\":8,\"wg_size\":64,\"elems_per_thread\":4}";
    const char *mp = "{\"size_i\":4,\"wg_size\":64,\"elems_per_thread\":8}";
    const char *sp = "{\"threads_per_subset\":4,\"min_elems_per_thread\":4,\"wg_size\":64}";
    /* 32-bit keys, none, not stable: host at 2^10, radix at 2^14 */
    plan(32, "none", 0, 10, "host", "{}", 0.1);
    plan(32, "none", 0, 14, "radix", rp, 0.5);
    /* 32-bit keys, u32, not stable: shellsort only (unstable) */
    plan(32, "u32", 0, 12, "shellsort", sp, 1.0);
    /* 32-bit keys, u32, stable: mergepath */
    plan(32, "u32", 1, 16, "mergepath", mp, 2.0);
    /* 64-bit keys, u64, stable: radix */
    plan(64, "u64", 1, 20, "radix", rp, 9.0);
    /* 16-bit keys (8- and 16-bit keys' words), none, stable: host (their
     * count) at 2^12, radix at 2^20 */
    plan(16, "none", 1, 12, "host", "{}", 0.01);
    plan(16, "none", 1, 20, "radix", rp, 0.2);
    /* rows this gsortd cannot use: left out, with a warning */
    plan(32, "idx64", 0, 12, "bogosort", "{}", 1.0);
    plan(32, "idx64", 1, 12, "radix", "{not json", 1.0);
    gs_err_clear(&e);
    if (gs_db_winner_set(g_db, g_id, "radix", 32, "none", 14, rp, 0.5, 0, &e) < 0 ||
        gs_db_winner_set(g_db, g_id, "mergepath", 32, "u32", 16, mp, 2.0, 0, &e) < 0)
        tap_bail("winner_set: %s", e.msg);

    unsigned long q0 = gs_db_queries(g_db);
    gs_plans *p = NULL;
    int rc = gs_plans_load(g_db, g_id, &p, &e);
    unsigned long q1 = gs_db_queries(g_db);
    tap_ok(rc == 0 && p && p->nplan == 7 && p->nwin == 2,
           "load: 7 usable plan rows of 9 and 2 winners (%zu, %zu) %s", p ? p->nplan : 0,
           p ? p->nwin : 0, rc ? e.msg : "");
    tap_ok(q1 - q0 == 3, "load: one statement each for the plan, the winners and the rows and "
           "top-k plan (%lu)", q1 - q0);

    /* nearest bucket, ties to the larger */
    tap_ok(!strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 1u << 11)), "host") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 1u << 12)), "radix") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 5000)), "radix") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 1)), "host") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), (uint64_t)1 << 40)), "radix"),
           "lookup: the nearest bucket, 2^12 between 2^10 and 2^14 goes to the larger");
    const gs_plans_entry *x = gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 1u << 14);
    tap_ok(x && x->bucket == 14 && x->median_ms == 0.5 && x->params.count == 3,
           "lookup: the entry carries its bucket, time and parsed parameters");
    tap_ok(!gs_plans_lookup(p, SH(32, GS_PL_IDX32, 0), 4096) &&
           !gs_plans_lookup(p, SH(32, GS_PL_NONE, 1), 4096) &&
           !gs_plans_lookup(p, SH(32, GS_PL_IDX64, 0), 4096),
           "lookup: shapes without rows (and the left-out rows' shapes) have no entry");

    /* nearest shape */
    x = gs_plans_nearest(p, SH(32, GS_PL_NONE, 1), 4096);
    tap_ok(x && !strcmp(x->algo->name, "mergepath") && x->payload == GS_PL_U32 && x->stable,
           "nearest: a stable u32 keys-only request takes the stable mergepath row of payload "
           "u32 (%s), not the unstable keys-only rows", name_of(x));
    x = gs_plans_nearest(p, SH(32, GS_PL_IDX32, 0), 4096);
    tap_ok(x && x->payload == GS_PL_U32 && !x->stable && !strcmp(x->algo->name, "shellsort"),
           "nearest: idx32, not stable, takes u32 (same value width) before none (%s %s)",
           name_of(x), x ? gs_payload_name(x->payload) : "");
    x = gs_plans_nearest(p, SH(32, GS_PL_IDX32, 1), 4096);
    tap_ok(x && !strcmp(x->algo->name, "mergepath") && x->stable,
           "nearest: idx32, stable, skips the unstable shellsort for stable mergepath (%s)",
           name_of(x));
    x = gs_plans_nearest(p, SH(64, GS_PL_NONE, 0), 1u << 19);
    tap_ok(x && x->key_bits == 64 && x->payload == GS_PL_U64,
           "nearest: 64-bit keys-only takes the 64-bit u64 row before any 32-bit one (%d-bit %s)",
           x ? x->key_bits : 0, x ? gs_payload_name(x->payload) : "");
    x = gs_plans_nearest(p, SH(64, GS_PL_IDX64, 0), 1u << 20);
    tap_ok(x && x->key_bits == 64, "nearest: 64-bit idx64 takes the 64-bit u64 row");
    x = gs_plans_nearest(p, SH(32, GS_PL_NONE, 0), 1u << 14);
    tap_ok(x && !strcmp(x->algo->name, "radix"), "nearest: an exact shape is its own nearest");

    /* the narrow keys' class: its own rows, then the 32-bit keys' */
    tap_ok(!strcmp(name_of(gs_plans_lookup(p, SH(16, GS_PL_NONE, 1), 1u << 12)), "host") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(16, GS_PL_NONE, 1), 1u << 19)), "radix") &&
           !strcmp(name_of(gs_plans_lookup(p, SH(32, GS_PL_NONE, 0), 1u << 12)), "radix") &&
           !gs_plans_lookup(p, SH(16, GS_PL_U32, 0), 1u << 12),
           "lookup: 16-bit keys by their own rows (host below, radix above), which 32-bit keys "
           "never take; 16-bit keys with values have none");
    x = gs_plans_nearest(p, SH(16, GS_PL_U32, 0), 1u << 12);
    const gs_plans_entry *x16 = gs_plans_nearest(p, SH(16, GS_PL_NONE, 0), 1u << 12),
                         *n16 = gs_plans_lookup(p, &(gs_shape){ .dtype = GS_DT_U32,
                                                                .narrow = GS_NW_F16,
                                                                .stable = 1 }, 1u << 12);
    tap_ok(x && x->key_bits == 16 && x16 && x16->key_bits == 16 &&
           !strcmp(x16->algo->name, "host") && n16 && n16->key_bits == 16,
           "nearest: 16-bit keys with values take the 16-bit rows (%d-bit), keys alone not "
           "needing stability the stable ones (%s); a request of f16 keys is the 16-bit "
           "class's", x ? x->key_bits : 0, name_of(x16));

    /* winners, exact */
    const gs_algo *radix = gs_algo_find("radix"), *merge = gs_algo_find("mergepath");
    tap_ok(gs_plans_winner(p, radix, SH(32, GS_PL_NONE, 0), 14) &&
           gs_plans_winner(p, merge, SH(32, GS_PL_U32, 0), 16) &&
           !gs_plans_winner(p, radix, SH(32, GS_PL_NONE, 0), 15) &&
           !gs_plans_winner(p, radix, SH(64, GS_PL_NONE, 0), 14) &&
           !gs_plans_winner(p, merge, SH(32, GS_PL_NONE, 0), 14),
           "winner: exact (algorithm, key width, payload, bucket) only");
    tap_ok(gs_db_queries(g_db) == q1, "lookups ran no statement");
    gs_plans_free(p);

    /* the rows and top-k plan (schema 7): rows of 32-bit keys alone at
     * (2^20, rows of 2^10) say bitonic, at (2^20, 2^14) host; top-k of
     * idx32 at (2^24, k 2^10) select; one row of an unknown kind and one
     * of an unknown algorithm are refused or left out */
    gs_db_shape_row sr;
#define SROW(K, KB, PL, B, S, ALG, MS)                                                          \
    do {                                                                                   \
        memset(&sr, 0, sizeof sr);                                                         \
        snprintf(sr.kind, sizeof sr.kind, "%s", K);                                        \
        sr.key_bits = KB;                                                                  \
        snprintf(sr.payload, sizeof sr.payload, "%s", PL);                                 \
        sr.bucket = B;                                                                     \
        sr.sub = S;                                                                        \
        snprintf(sr.algorithm, sizeof sr.algorithm, "%s", ALG);                            \
        snprintf(sr.params, sizeof sr.params, "{}");                                       \
        sr.median_ms = MS;                                                                 \
        sr.baseline_ms = -1;                                                               \
    } while (0)
    int src = 0;
    SROW("rows", 32, "none", 20, 10, "bitonic", 0.5);
    src |= gs_db_shape_set(g_db, g_id, &sr, &e);
    SROW("rows", 32, "none", 20, 14, "host", 2.0);
    src |= gs_db_shape_set(g_db, g_id, &sr, &e);
    SROW("topk", 32, "idx32", 24, 10, "select", 3.0);
    snprintf(sr.baseline_algorithm, sizeof sr.baseline_algorithm, "host");
    sr.baseline_ms = 6.0;
    src |= gs_db_shape_set(g_db, g_id, &sr, &e);
    SROW("segs", 32, "none", 20, 6, "bitonic", 0.7);
    src |= gs_db_shape_set(g_db, g_id, &sr, &e);
    SROW("rows", 32, "none", 16, 6, "bogosort", 0.1);
    src |= gs_db_shape_set(g_db, g_id, &sr, &e);
    gs_err ke;
    gs_err_clear(&ke);
    SROW("lines", 32, "none", 16, 6, "host", 0.1);
    int krc = gs_db_shape_set(g_db, g_id, &sr, &ke);
    tap_ok(src == 0 && krc == GS_EINVAL, "shape rows written; a row of kind 'lines' refused: %s",
           ke.msg);
    gs_plans *ps = NULL;
    int lrc = gs_plans_load(g_db, g_id, &ps, &e);
    tap_ok(lrc == 0 && ps && ps->nshp == 4, "load: 4 usable rows, top-k and segments rows of 5 "
           "(%zu)", ps ? ps->nshp : 0);
    gs_shape rs = { .dtype = GS_DT_U32, .rows = 1024 };
    const gs_plans_shape *r1 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &rs, 1 << 20, 1 << 10);
    const gs_plans_shape *r2 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &rs, 1 << 20, 1 << 13);
    const gs_plans_shape *r3 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &rs, 1 << 12, 1 << 8);
    gs_shape fs = { .dtype = GS_DT_F32, .payload = GS_PL_IDX32, .rows = 64 };
    const gs_plans_shape *r4 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &fs, 1 << 20, 1 << 14);
    gs_shape ws = { .dtype = GS_DT_U64, .rows = 64 };
    const gs_plans_shape *r5 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &ws, 1 << 20, 1 << 14);
    tap_ok(r1 && !strcmp(r1->algo->name, "bitonic") && r2 && !strcmp(r2->algo->name, "host") &&
           r3 && !strcmp(r3->algo->name, "bitonic") && r4 && !strcmp(r4->algo->name, "host") &&
           !r5,
           "rows: the nearest point by both sizes (rows of 2^13: 2^14's row); f32 "
           "argsort takes the 32-bit keys' rows of another payload; 64-bit keys none");
    gs_shape ts = { .dtype = GS_DT_I32, .payload = GS_PL_IDX32, .topk = 1, .k = 1000 };
    const gs_plans_shape *t1 = gs_plans_shape_lookup(ps, GS_PK_TOPK, &ts, 1 << 26, 1000);
    ts.stable = 1;
    const gs_plans_shape *t2 = gs_plans_shape_lookup(ps, GS_PK_TOPK, &ts, 1 << 26, 1000);
    rs.stable = 1;
    const gs_plans_shape *r6 = gs_plans_shape_lookup(ps, GS_PK_ROWS, &rs, 1 << 20, 1 << 10);
    tap_ok(t1 && !strcmp(t1->algo->name, "select") && t1->bucket == 24 && t2 == t1 && r6 &&
           !strcmp(r6->algo->name, "bitonic"),
           "top-k: the select's row for i32 keys of any k; stable requests keep stable "
           "algorithms' rows");
    /* segments: their own rows only (the rows' 2^20 / 2^10 row is nearer) */
    gs_shape ss = { .dtype = GS_DT_F32, .segments = 1000 };
    const gs_plans_shape *g1 = gs_plans_shape_lookup(ps, GS_PK_SEGS, &ss, 1 << 20, 1 << 10);
    ss.dtype = GS_DT_U64;
    const gs_plans_shape *g2 = gs_plans_shape_lookup(ps, GS_PK_SEGS, &ss, 1 << 20, 1 << 10);
    tap_ok(g1 && g1->kind == GS_PK_SEGS && !strcmp(g1->algo->name, "bitonic") &&
           g1->sub == 6 && !g2, "segments: the segments row for f32 keys (not a rows row); "
           "64-bit keys none");
    tap_ok(gs_plans_shape_lookup(NULL, GS_PK_ROWS, &rs, 1, 1) == NULL &&
           gs_plans_kind_parse("rows") == GS_PK_ROWS && gs_plans_kind_parse("topk") == GS_PK_TOPK &&
           gs_plans_kind_parse("segs") == GS_PK_SEGS &&
           !strcmp(gs_plans_kind_name(GS_PK_SEGS), "segs") &&
           gs_plans_kind_parse("x") < 0, "no table: no row; kinds parse");
    gs_plans_free(ps);
    tap_ok(gs_db_plan_clear(g_db, g_id, &e) == 0 && gs_plans_load(g_db, g_id, &ps, &e) == 0 &&
           ps->nshp == 0 && ps->nplan == 0, "clearing the plan clears the rows and top-k plan");
    gs_plans_free(ps);

    /* a device with no rows: an empty table, no entry anywhere */
    gs_dev_info in2 = in;
    snprintf(in2.name, sizeof in2.name, "Untuned Device");
    int64_t id2;
    gs_plans *p2 = NULL;
    tap_ok(gs_db_device_id(g_db, &in2, 1, &id2, &e) == 0 &&
           gs_plans_load(g_db, id2, &p2, &e) == 0 && p2 && p2->nplan == 0 &&
           !gs_plans_nearest(p2, SH(32, GS_PL_NONE, 0), 100) && !gs_plans_lookup(NULL, SH(32, 0, 0), 1),
           "an untuned device loads an empty table");
    gs_plans_free(p2);
    gs_db_close(g_db);
    unlink(path);
    return tap_done();
}
