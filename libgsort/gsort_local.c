/* When libgsort sorts in the caller's process instead of asking gsortd
 * (issue 36): the C twin of the Python client's Router (python/gsort/
 * _local.py), with the same rules and constants, so that a call is never
 * slower than the local sort for long. Below a round trip's worth of keys
 * the local sort always wins, and so it does below the size the daemon
 * announces as a shape's crossover (there it would run the same host sort
 * on one thread); above, the two routes' times are measured as the caller
 * sees them, per request shape (dtype, values kind, order, stability) and
 * power-of-two size bucket, and the faster is taken. This file only
 * decides and remembers; gsort_inproc.c runs the local sort and
 * gsort.c routes each call. It uses nothing but libc, so a test can link
 * it alone and check the rules on recorded times. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "gsort_int.h"

/* Below this a round trip to the daemon (tens of microseconds) cannot pay:
 * the host sort takes about a microsecond for 256 keys. */
#define LOCAL_ALWAYS_BELOW 256
/* Never try the local sort on more keys than this (one thread: 2^27 keys
 * would take seconds where the daemon's device takes milliseconds). */
#define LOCAL_TRY_MAX ((size_t)1 << 22)
/* Of this many calls at a size, one goes to the losing route, to notice
 * when it becomes the faster (a loaded daemon, a new plan). */
#define RETRY_EVERY 64
/* A loser this many times slower than the winner is not tried again. */
#define RETRY_RATIO 4.0

/* One bucket's times in ms per key (so that sizes within a bucket compare
 * alike); negative: not measured yet. The first SAMPLES of a route keep
 * their fastest (a route's first call at a size is often cold: a new
 * staging size, a new mapping in the daemon), later ones an exponential
 * average. */
typedef struct lgs_times {
    double loc, dae;
    unsigned nloc, ndae;    /* samples taken */
    uint64_t calls;         /* choices made here with both measured */
} lgs_times;
#define SAMPLES 2
/* The daemon's route one more: a grown staging memfd's first two calls are
 * both cold (the daemon maps it for the one request, then keeps it and, on
 * a GPU, pins it: 0.3-4 ms), so the fastest of two still lost to numpy at
 * sizes where the route, warm, is 2-3x faster (H100, 2^17-2^18). */
#define DAEMON_SAMPLES 3
/* After those, a sample counts for at most this many times the route's
 * current time: one preempted call (a busy machine) must not hand a size
 * to the slower route until its next retry; a route that stays slower
 * still moves up, by a quarter of this a call. */
#define SPIKE 2.0

/* Every size_t n has a bucket: 0..64. */
#define NBUCKETS 65

struct lgs_router {
    lgs_times *t[LGS_SHAPES];   /* per shape, allocated when first measured */
    uint64_t below[LGS_SHAPES]; /* the daemon's announced crossover; 0: none */
};

/* ceil(log2 n): Python's (n - 1).bit_length() */
static unsigned bucket(size_t n)
{
    unsigned b = 0;
    for (size_t m = n ? n - 1 : 0; m; m >>= 1)
        b++;
    return b;
}

unsigned lgs_shape(int dtype, int values_kind, int descending, int stable)
{
    return (((unsigned)dtype * GS_PL_COUNT + (unsigned)values_kind) * 2 + (descending != 0)) * 2 +
           (stable != 0);
}

lgs_router *lgs_router_new(void)
{
    return calloc(1, sizeof(lgs_router));
}

void lgs_router_free(lgs_router *r)
{
    if (!r)
        return;
    for (unsigned i = 0; i < LGS_SHAPES; i++)
        free(r->t[i]);
    free(r);
}

static int measured(const lgs_times *v)
{
    return v->loc >= 0 && v->dae >= 0;
}

int lgs_router_local_only(size_t n)
{
    return n < LOCAL_ALWAYS_BELOW;
}

int lgs_router_choose(lgs_router *r, unsigned shape, size_t n)
{
    if (n < LOCAL_ALWAYS_BELOW)
        return 1;
    if (!r || shape >= LGS_SHAPES)
        return 0;
    if (n < r->below[shape])
        return 1;       /* the daemon would run the same sort on one thread */
    if (!r->t[shape])
        return 0;       /* nothing measured for this shape: the daemon first */
    unsigned b = bucket(n);
    lgs_times *t = r->t[shape], *cur = &t[b];
    if (measured(cur)) {
        /* each route SAMPLES times before either wins */
        if (cur->ndae < DAEMON_SAMPLES)
            return 0;
        if (cur->nloc < SAMPLES && n <= LOCAL_TRY_MAX)
            return 1;
        cur->calls++;
        int win = cur->loc <= cur->dae;     /* 1: local is the faster */
        double lo = win ? cur->loc : cur->dae, lose = win ? cur->dae : cur->loc;
        /* now and then the loser, unless far behind; local only where it may be tried */
        if (cur->calls % RETRY_EVERY == 0 && lose < RETRY_RATIO * lo &&
            (win || n <= LOCAL_TRY_MAX))
            return !win;
        return win;
    }
    /* Unmeasured here: a measured neighbour decides (the daemon pays off
     * more the larger the array): a smaller size the daemon won sends this
     * one to the daemon, a larger size local won keeps this one local.
     * Lower buckets are looked at first, so where the two disagree the
     * daemon is asked. */
    for (unsigned k = 0; k < NBUCKETS; k++) {
        if (k == b || !measured(&t[k]))
            continue;
        if (k < b && t[k].dae < t[k].loc)
            return 0;
        if (k > b && t[k].loc <= t[k].dae)
            return 1;
    }
    if (cur->dae < 0)
        return 0;               /* the daemon first */
    return n <= LOCAL_TRY_MAX;  /* the daemon was timed here: try local once */
}

int lgs_router_record(lgs_router *r, unsigned shape, size_t n, int local, double ms)
{
    if (n < LOCAL_ALWAYS_BELOW || !r || shape >= LGS_SHAPES)
        return 0;
    if (!r->t[shape]) {
        lgs_times *t = malloc(NBUCKETS * sizeof *t);
        if (!t)
            return GSORT_ENOMEM;    /* not remembered: the daemon next, as at first */
        for (unsigned k = 0; k < NBUCKETS; k++)
            t[k] = (lgs_times){ -1, -1, 0, 0, 0 };
        r->t[shape] = t;
    }
    lgs_times *cur = &r->t[shape][bucket(n)];
    double v = ms / (double)n, *slot = local ? &cur->loc : &cur->dae;
    unsigned *cnt = local ? &cur->nloc : &cur->ndae;
    if (!(v >= 0))
        v = 0;          /* a clock step back: as if free */
    if (*cnt < (local ? SAMPLES : DAEMON_SAMPLES))
        *slot = *slot < 0 || v < *slot ? v : *slot;
    else    /* one preempted call must not flip the route: see SPIKE */
        *slot = 0.75 * *slot + 0.25 * (v < SPIKE * *slot ? v : SPIKE * *slot);
    if (*cnt < UINT32_MAX)
        (*cnt)++;
    return 0;
}

void lgs_router_set_below(lgs_router *r, unsigned shape, uint64_t n)
{
    if (r && shape < LGS_SHAPES)
        r->below[shape] = n;
}

int lgs_router_get(const lgs_router *r, unsigned shape, size_t n, double *loc, double *dae)
{
    *loc = *dae = -1;
    if (!r || shape >= LGS_SHAPES || !r->t[shape])
        return 0;
    const lgs_times *cur = &r->t[shape][bucket(n)];
    *loc = cur->loc;
    *dae = cur->dae;
    return 0;
}
