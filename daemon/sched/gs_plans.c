/* The in-memory plan table (gs_plans.h): loading the rows, the nearest-
 * bucket index built once per load, and the lookups routing makes. */
#include "config.h"
#include "gs_plans.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_grow.h"
#include "gs_log.h"
#include "gs_params.h"

typedef struct loader {
    gs_plans *p;
    size_t plancap, wincap, shpcap;
    int64_t device_id;
    unsigned skipped;
} loader;

/* A database row as an entry, or 0 when it is left out (said once). */
static int entry_of(loader *l, const gs_db_row *r, gs_plans_entry *e)
{
    const char *why = NULL;
    char pwhy[GS_ERR_MSG_MAX + 32];
    gs_err pe;
    gs_err_clear(&pe);
    memset(e, 0, sizeof *e);
    e->algo = gs_algo_find(r->c.algorithm);
    if (!e->algo)
        why = "an algorithm this gsortd does not have";
    else if (gs_kw_find(r->key_bits) < 0)
        why = "a key width no key type has";
    else if (gs_payload_parse(r->payload, &e->payload) < 0)
        why = "an unknown payload kind";
    else if (r->c.bucket < 0 || r->c.bucket >= GS_PLANS_BUCKETS)
        why = "a size bucket out of range";
    else if (gs_params_from_json(r->c.params, &e->params, &pe) < 0) {
        snprintf(pwhy, sizeof pwhy, "unreadable parameters (%s)", pe.msg);
        why = pwhy;
    }
    if (why) {
        l->skipped++;
        GS_WARN("database device %lld: a %s row for %s (%d-bit keys, payload %s, 2^%d) has %s; "
                "left out", (long long)l->device_id, r->stable < 0 ? "winners" : "plan",
                r->c.algorithm, r->key_bits, r->payload, r->c.bucket, why);
        return 0;
    }
    e->median_ms = r->c.median_ms;
    e->bucket = r->c.bucket;
    e->key_bits = r->key_bits;
    e->stable = r->stable;
    e->source = r->source;
    return 1;
}

/* Append a row to the plan (r->stable >= 0) or the winners. */
static int add_row(void *arg, const gs_db_row *r)
{
    loader *l = arg;
    gs_plans *p = l->p;
    int win = r->stable < 0;
    gs_plans_entry **arr = win ? &p->win : &p->plan;
    size_t *n = win ? &p->nwin : &p->nplan, *cap = win ? &l->wincap : &l->plancap;
    if (gs_grow(arr, cap, *n, sizeof **arr, 64))
        return GS_ENOMEM;
    *n += (size_t)entry_of(l, r, &(*arr)[*n]);
    return 0;
}

/* near[][][][b]: the row of each shape nearest bucket b, ties the larger
 * bucket (as the database's lookup orders them). */
static void index_near(gs_plans *p)
{
    memset(p->near, 0xff, sizeof p->near);      /* -1 everywhere */
    for (size_t i = 0; i < p->nplan; i++) {
        const gs_plans_entry *e = &p->plan[i];
        int *row = p->near[gs_kw_index(e->key_bits)][e->payload][e->stable ? 1 : 0];
        for (int b = 0; b < GS_PLANS_BUCKETS; b++) {
            if (row[b] < 0) {
                row[b] = (int)i;
                continue;
            }
            const gs_plans_entry *o = &p->plan[row[b]];
            int d = abs(e->bucket - b), od = abs(o->bucket - b);
            if (d < od || (d == od && e->bucket > o->bucket))
                row[b] = (int)i;
        }
    }
}

/* The shape_plan table's kind column, by gs_plans_kind */
static const char *const kind_names[GS_PK_COUNT] = { "rows", "topk", "segs" };

const char *gs_plans_kind_name(gs_plans_kind k)
{
    return (unsigned)k < GS_PK_COUNT ? kind_names[k] : "rows";
}

int gs_plans_kind_parse(const char *s)
{
    for (int k = 0; k < GS_PK_COUNT; k++)
        if (!strcmp(s, kind_names[k]))
            return k;
    return -1;
}

/* Append a rows or top-k plan row, or leave it out (said once). */
static int add_shape(void *arg, const gs_db_shape_row *r)
{
    loader *l = arg;
    gs_plans *p = l->p;
    if (gs_grow(&p->shp, &l->shpcap, p->nshp, sizeof *p->shp, 16))
        return GS_ENOMEM;
    gs_plans_shape *e = &p->shp[p->nshp];
    memset(e, 0, sizeof *e);
    const char *why = NULL;
    char pwhy[GS_ERR_MSG_MAX + 32];
    gs_err pe;
    gs_err_clear(&pe);
    int kind = gs_plans_kind_parse(r->kind);
    if (kind < 0)
        why = "an unknown kind";
    else if (!(e->algo = gs_algo_find(r->algorithm)))
        why = "an algorithm this gsortd does not have";
    else if (gs_kw_find(r->key_bits) < 0)
        why = "a key width no key type has";
    else if (gs_payload_parse(r->payload, &e->payload) < 0)
        why = "an unknown payload kind";
    else if (r->bucket < 0 || r->bucket >= GS_PLANS_BUCKETS || r->sub < 0 || r->sub > r->bucket)
        why = "sizes out of range";
    else if (gs_params_from_json(r->params, &e->params, &pe) < 0) {
        snprintf(pwhy, sizeof pwhy, "unreadable parameters (%s)", pe.msg);
        why = pwhy;
    }
    if (why) {
        l->skipped++;
        GS_WARN("database device %lld: a %s plan row for %s (%d-bit keys, payload %s, 2^%d, "
                "2^%d) has %s; left out", (long long)l->device_id, r->kind, r->algorithm,
                r->key_bits, r->payload, r->bucket, r->sub, why);
        return 0;
    }
    e->kind = (gs_plans_kind)kind;
    e->key_bits = r->key_bits;
    e->bucket = r->bucket;
    e->sub = r->sub;
    e->median_ms = r->median_ms;
    p->nshp++;
    return 0;
}

int gs_plans_load(gs_db *db, int64_t device_id, gs_plans **out, gs_err *err)
{
    *out = NULL;
    gs_plans *p = calloc(1, sizeof *p);
    if (!p)
        return gs_err_set(err, GS_ENOMEM, "plan table: out of memory");
    loader l = { .p = p, .device_id = device_id };
    int rc = gs_db_plan_each(db, device_id, add_row, &l, err);
    if (rc == 0)
        rc = gs_db_winner_each(db, device_id, add_row, &l, err);
    if (rc == 0)
        rc = gs_db_shape_each(db, device_id, add_shape, &l, err);
    if (rc < 0) {
        if (rc == GS_ENOMEM && err && !err->msg[0])
            gs_err_set(err, GS_ENOMEM, "plan table: out of memory");
        gs_plans_free(p);
        return rc;
    }
    index_near(p);
    *out = p;
    return 0;
}

void gs_plans_free(gs_plans *p)
{
    if (!p)
        return;
    free(p->plan);
    free(p->win);
    free(p->shp);
    free(p);
}

static int bucket_of(uint64_t n)
{
    int b = gs_db_bucket(n);
    return b < GS_PLANS_BUCKETS ? b : GS_PLANS_BUCKETS - 1;
}

static const gs_plans_entry *at(const gs_plans *p, int kb64, gs_payload pl, int stable, int b)
{
    int i = p->near[kb64][pl][stable][b];
    return i >= 0 ? &p->plan[i] : NULL;
}

const gs_plans_entry *gs_plans_lookup(const gs_plans *p, const gs_shape *shape, uint64_t n)
{
    const gs_plans_key k = gs_plans_key_of(shape);
    if (!p || (int)k.payload < 0 || k.payload >= GS_PL_COUNT)
        return NULL;
    return at(p, gs_kw_index(k.key_bits), k.payload, k.stable, bucket_of(n));
}

/* Payloads in the order they stand in for `pl`: itself, the other kind of
 * the same value width (u32 <-> idx32, u64 <-> idx64), then by distance in
 * value width. */
static size_t payload_order(gs_payload pl, gs_payload *out)
{
    static const gs_payload all[] = { GS_PL_NONE, GS_PL_U32, GS_PL_IDX32, GS_PL_U64,
                                      GS_PL_IDX64 };
    size_t n = 0, w = gs_payload_size(pl);
    out[n++] = pl;
    for (size_t dist = 0; dist <= 8; dist += 4)
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            size_t aw = gs_payload_size(all[i]);
            size_t d = aw > w ? aw - w : w - aw;
            if (all[i] != pl && d == dist)
                out[n++] = all[i];
        }
    return n;
}

const gs_plans_entry *gs_plans_nearest(const gs_plans *p, const gs_shape *shape, uint64_t n)
{
    const gs_plans_key key = gs_plans_key_of(shape);
    const int stable = key.stable;
    if (!p || (int)key.payload < 0 || key.payload >= GS_PL_COUNT)
        return NULL;
    gs_payload order[GS_PL_COUNT];
    size_t np = payload_order(key.payload, order);
    int b = bucket_of(n), own = gs_kw_index(key.key_bits);
    for (int k = 0; k < GS_KW_COUNT; k++) {     /* the same key width first */
        int w = k == 0 ? own : k <= own ? k - 1 : k;
        for (size_t i = 0; i < np; i++)
            for (int s = stable ? 1 : 0; s <= 1; s++) {   /* a stable plan serves both */
                const gs_plans_entry *e = at(p, w, order[i], s, b);
                if (e && (!stable || e->algo->stable))
                    return e;
            }
    }
    return NULL;
}

const gs_plans_entry *gs_plans_winner(const gs_plans *p, const gs_algo *a,
                                      const gs_shape *shape, int bucket)
{
    const gs_plans_key k = gs_plans_key_of(shape);
    for (size_t i = 0; p && i < p->nwin; i++) {
        const gs_plans_entry *e = &p->win[i];
        if (e->algo == a && e->key_bits == k.key_bits && e->payload == k.payload &&
            e->bucket == bucket)
            return e;
    }
    return NULL;
}

const gs_plans_shape *gs_plans_shape_lookup(const gs_plans *p, gs_plans_kind kind,
                                            const gs_shape *shape, uint64_t n, uint64_t sub)
{
    if (!p || !p->nshp)
        return NULL;
    const gs_plans_key k = gs_plans_key_of(shape);
    int b = bucket_of(n), s = gs_db_bucket(sub);
    int own_pl = 0;             /* rows of the request's own payload exist */
    for (size_t i = 0; i < p->nshp && !own_pl; i++)
        own_pl = p->shp[i].kind == kind && p->shp[i].key_bits == k.key_bits &&
                 p->shp[i].payload == k.payload;
    const gs_plans_shape *best = NULL;
    int bd = 0;
    for (size_t i = 0; i < p->nshp; i++) {
        const gs_plans_shape *e = &p->shp[i];
        if (e->kind != kind || e->key_bits != k.key_bits || (own_pl && e->payload != k.payload) ||
            (k.stable && !e->algo->stable))
            continue;
        int d = abs(e->bucket - b) + abs(e->sub - s);
        if (!best || d < bd || (d == bd && (e->bucket > best->bucket ||
                                            (e->bucket == best->bucket && e->sub > best->sub)))) {
            best = e;
            bd = d;
        }
    }
    return best;
}
