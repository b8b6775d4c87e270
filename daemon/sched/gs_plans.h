/* A device's tuned plan and winners held in memory (issue 17): read from
 * the database whole when the scheduler is given it (start-up, SIGHUP, the
 * end of a background tune), so that routing a request is a lookup in a
 * small table and never a query. A table is built aside and then swapped
 * in on the loop thread, the only thread that routes, so a request sees
 * the old plan or the new one, never half of each. Rows that name an
 * algorithm this gsortd lacks, or parameters it cannot read, are left out
 * at load with one warning each, instead of at every request. */
#ifndef GS_PLANS_H
#define GS_PLANS_H

#include <stddef.h>
#include <stdint.h>

#include "gs_db.h"
#include "gs_sort.h"

#define GS_PLANS_BUCKETS 64

typedef struct gs_plans_entry {
    const gs_algo *algo;
    gs_params params;
    double median_ms;   /* measured at 2^bucket keys */
    int bucket;
    int key_bits;       /* the shape the entry was tuned for */
    gs_payload payload;
    int stable;         /* plan rows: 0/1; winners: -1 */
    int source;         /* plan rows: GS_DB_PLAN_* (the size measured, predicted or
                           audited); winners: 0 */
} gs_plans_entry;

/* The kinds of request that are not one flat array and have a plan of
 * their own (the shape_plan table, schema 7; segments from 8). */
typedef enum gs_plans_kind { GS_PK_ROWS = 0, GS_PK_TOPK = 1, GS_PK_SEGS = 2 } gs_plans_kind;
#define GS_PK_COUNT 3

/* A row of that plan: the route measured fastest at 2^bucket keys in all
 * and a row length (rows), k (top-k) or mean segment length (segments) of
 * 2^sub; algo is a device algorithm of this device or a host one. */
typedef struct gs_plans_shape {
    gs_plans_kind kind;
    int key_bits;
    gs_payload payload;
    int bucket, sub;
    const gs_algo *algo;
    gs_params params;
    double median_ms;          /* end to end at the point */
} gs_plans_shape;

typedef struct gs_plans {
    gs_plans_entry *plan;      /* plan rows */
    size_t nplan;
    gs_plans_entry *win;       /* winners rows */
    size_t nwin;
    gs_plans_shape *shp;       /* rows and top-k plan rows */
    size_t nshp;
    /* per shape [64-bit keys][payload][stable] and bucket: the index in
     * plan of the row at the nearest bucket (ties: the larger), -1 none */
    int near[GS_KW_COUNT][GS_PL_COUNT][2][GS_PLANS_BUCKETS];
} gs_plans;

/* Load every plan and winners row of database device `device_id` into a
 * new table (*out; an empty table for a device with none). */
int gs_plans_load(gs_db *db, int64_t device_id, gs_plans **out, gs_err *err);
void gs_plans_free(gs_plans *p);

/* What of a request's shape a plan is keyed by: the key width (keys of
 * one width share rows: f32 follows u32's; 8- and 16-bit keys, which the
 * daemon sorts as words or codes, the 16-bit class's), the payload and
 * stability; the order is not (a sort runs as fast either way). The one
 * place a request's shape becomes a plan key (the tuner writes rows by the
 * same three). */
typedef struct gs_plans_key {
    int key_bits;
    gs_payload payload;
    int stable;
} gs_plans_key;

static inline gs_plans_key gs_plans_key_of(const gs_shape *s)
{
    return (gs_plans_key){ .key_bits = s->plan16 || s->narrow ? 16
                                                              : (int)gs_dtype_size(s->dtype) * 8,
                           .payload = s->payload, .stable = s->stable ? 1 : 0 };
}

/* The plan entry for this request shape at the bucket nearest log2(n),
 * or NULL when the table has none for the shape. */
const gs_plans_entry *gs_plans_lookup(const gs_plans *p, const gs_shape *shape, uint64_t n);
/* When the exact shape has no entry: the entry of the nearest tuned shape
 * that can serve the request (a stable plan for a request that need not be
 * stable; then another payload of the same value width, then any payload,
 * nearest in value width; then the other key width), at the nearest
 * bucket; NULL when the device has no usable plan at all. */
const gs_plans_entry *gs_plans_nearest(const gs_plans *p, const gs_shape *shape, uint64_t n);
/* The rows or top-k plan's row for a request of this kind: the request's
 * key class, its payload where rows of it exist (else any payload), the
 * point nearest (log2 n, log2 sub) by the sum of both distances (ties:
 * the larger sizes), and an algorithm that is stable where the request
 * asks for it; NULL when there is none. */
const gs_plans_shape *gs_plans_shape_lookup(const gs_plans *p, gs_plans_kind kind,
                                            const gs_shape *shape, uint64_t n, uint64_t sub);
/* "rows" or "topk"; and back (-1: neither). */
const char *gs_plans_kind_name(gs_plans_kind k);
int gs_plans_kind_parse(const char *s);

/* The winner of algorithm a for this shape (stability aside: winners are
 * per algorithm) at exactly this bucket, or NULL. */
const gs_plans_entry *gs_plans_winner(const gs_plans *p, const gs_algo *a,
                                      const gs_shape *shape, int bucket);

#endif
