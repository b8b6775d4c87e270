/* One large request split over several devices at once (issue 20): the
 * router weighs, beside the best single route, cutting the request into
 * contiguous parts in proportion to each device's predicted rate (its
 * plan, or its built-in defaults' learned rate) so that every part,
 * behind its queue's backlog, finishes at about the same time, plus the
 * host merge of the parts; it splits only when that is predicted sooner
 * than the single route, and says why not at debug level (and in the
 * reply when the client asked). CPU devices share the host's cores, so
 * only the fastest of them counts. The parts are child jobs of the
 * request, each with its own range of the caller's arrays, queued on
 * their devices and run as any device job (so a part may itself be out of
 * core); a part whose device fails is sorted again by the host sort while
 * its range still holds its input. The last part to finish, on its worker
 * thread, merges the parts on the host (gs_ooc_merge: stable, NaN bits
 * kept, argsort indices shifted by each part's offset) and hands the
 * request back, so its loop sees one completion. The parts lie in the
 * client's memory, which it may rewrite meanwhile (issue 32): their bounds
 * come from the predicted shares alone, and the merge reads a private copy
 * of them (gs_ooc.h); a part that noticed the race (GS_EINVAL) answers
 * the request with its error, unmerged. Equal rows and segments (issue
 * 38) are cut on their borders instead and nothing is merged: each part
 * holds whole rows or segments, sorted where they lie (a part of segments
 * gets its own offsets, rebased from the request's checked private copy). */
#include "config.h"
#include "gs_sched.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_ooc.h"
#include "gs_log.h"
#include "gs_sched_int.h"
#include "gs_time.h"

/* Below this many keys a request is not split unless the client asks:
 * the merge and the hand-offs would cost more than a device's share. */
#define SPLIT_MIN_N ((size_t)1 << 20)
/* The smallest part worth a device (a forced split takes any). */
#define SPLIT_MIN_PART 4096

typedef struct gs_split {
    atomic_uint left;        /* parts not done yet */
    gs_job part[GS_SPLIT_MAX];
    uint64_t offs[];         /* segments: each part's offsets, rebased to it */
} gs_split;

/* ---- routing ---- */

typedef struct sdv {
    const sched_cand *c;
    double rate, backlog;    /* ms per key, ms */
    size_t n;
} sdv;

/* Parts finishing together: the common finish time T of the k devices in
 * v (sum over devices of (T - backlog) / rate = n), dropping devices whose
 * backlog alone passes it or whose part falls below min_part; each
 * device's n set. The devices kept, in v[0..k). */
static size_t water_fill(sdv *v, size_t k, size_t n, size_t min_part)
{
    while (k >= 2) {
        double inv = 0, acc = 0;
        for (size_t i = 0; i < k; i++) {
            inv += 1 / v[i].rate;
            acc += v[i].backlog / v[i].rate;
        }
        double t = ((double)n + acc) / inv;
        size_t worst = 0, given = 0;
        double least = 0;
        for (size_t i = 0; i < k; i++) {
            double share = (t - v[i].backlog) / v[i].rate;
            v[i].n = share > 0 ? (size_t)share : 0;
            if (i == 0 || share < least) {
                least = share;
                worst = i;
            }
            given += v[i].n;
        }
        v[k - 1].n += n > given ? n - given : 0;   /* what rounding left */
        if (given > n)                               /* never: shares sum to n */
            v[k - 1].n -= given - n < v[k - 1].n ? given - n : 0;
        if (least >= (double)min_part)
            return k;
        v[worst] = v[k - 1];
        k--;
    }
    return k;
}

/* Declined: the reason at debug level, and for a client that asked. */
static int declined(gs_job *j, const char *why)
{
    GS_DEBUG("split of %zu %s keys declined: %s", j->req.n, gs_dtype_name(j->req.shape.dtype), why);
    if (j->split_ask > 0)
        snprintf(j->split_why, sizeof j->split_why, "%s", why);
    return 0;
}

/* Equal rows (issue 38): each part's share rounded to whole rows, the
 * last taking what is left; 0 when a part would hold no row. */
static int to_rows(sdv *v, size_t k, size_t n, size_t len)
{
    size_t given = 0;
    for (size_t i = 0; i + 1 < k; i++) {
        v[i].n = (v[i].n + len / 2) / len * len;
        if (v[i].n == 0 || given + v[i].n >= n)
            return 0;
        given += v[i].n;
    }
    v[k - 1].n = n - given;
    return 1;
}

/* Segments: each part's share moved to the segment border nearest it
 * (first[i]: part i's first segment, first[k] = S); 0 when a part would
 * hold no key. The offsets are the request's checked private copy. */
static int to_segs(sdv *v, size_t k, const gs_sort_req *r, size_t *first)
{
    const uint64_t *o = r->offsets;
    const size_t S = (size_t)r->shape.segments;
    size_t want = 0;
    first[0] = 0;
    first[k] = S;
    for (size_t i = 0; i + 1 < k; i++) {
        want += v[i].n;
        size_t lo = first[i] + 1, hi = S;     /* the first border at or past want */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (o[mid] < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > first[i] + 1 && o[lo - 1] > o[first[i]] &&
            (lo == S || want - o[lo - 1] < o[lo] - want))
            lo--;       /* the border before is nearer, or the last must keep one */
        if (lo >= S || o[lo] == o[first[i]])
            return 0;
        first[i + 1] = lo;
    }
    for (size_t i = 0; i < k; i++)
        v[i].n = (size_t)(o[first[i + 1]] - o[first[i]]);
    return v[k - 1].n > 0;
}

int sched_split_route(gs_sched *s, gs_job *j, const sched_cand *alt, size_t nalt, double cost)
{
    const gs_sort_req *r = &j->req;
    /* rows and segments: parts of whole ones, each sorted where it lies,
     * none merged */
    const size_t len = r->shape.rows > 1 ? r->n / r->shape.rows : 0;
    const int segs = r->shape.segments != 0;
    size_t first[GS_SPLIT_MAX + 1] = { 0 };
    int forced = s->test_split;
    char why[256];
    if (j->split_ask < 0 || (!forced && !j->split_ask && r->n < SPLIT_MIN_N))
        return 0;
    if (j->device >= 0)
        return declined(j, "the request names a device");
    if (r->n < 2)
        return declined(j, "fewer than two keys");
    if (segs && r->shape.segments < 2)
        return declined(j, "one segment is not cut");

    /* Each device that would sort it on the device, with its rate; CPU
     * devices run on the same cores, so only the fastest counts. */
    sdv v[GS_SPLIT_MAX];
    size_t k = 0, by_plan = 0, by_default = 0;
    int cpu = -1, shared = -1;
    /* alt ends with the host's own route; the others are the devices'
     * choices, which may be the host sort too (what decided it is said) */
    size_t ndevalt = nalt && alt[nalt - 1].dev < 0 ? nalt - 1 : nalt;
    for (size_t i = 0; i < nalt && k < GS_SPLIT_MAX; i++) {
        const sched_cand *c = &alt[i];
        if (c->dev < 0 || !(c->ms > 0)) {
            if (c->dev < 0 && i < ndevalt)
                *(c->how == GS_ROUTE_TUNED ? &by_plan : &by_default) += 1;
            continue;
        }
        sdv x = { c, c->ms / (double)r->n, sched_route_backlog(s, c->dev), 0 };
        if (!forced && (s->devs[c->dev].dev->info.type & CL_DEVICE_TYPE_CPU)) {
            if (cpu >= 0) {
                shared = c->dev;
                if (x.rate < v[cpu].rate)
                    v[cpu] = x;
                continue;
            }
            cpu = (int)k;
        }
        v[k++] = x;
    }
    if (k < 2) {
        char rest[160] = "";
        size_t host_only = by_plan + by_default;
        if (host_only)
            snprintf(rest, sizeof rest, "; %zu leave%s it to the host sort (%s%s%s)", host_only,
                     host_only == 1 ? "s" : "",
                     by_plan ? (by_plan == host_only ? "the tuned plan chose it" :
                                "tuned plans chose it for some") : "",
                     by_plan && by_default ? ", " : "",
                     by_default ? (by_default == host_only ? "built-in defaults: a CPU device, or "
                                   "below the device's crossover" : "built-in defaults for the "
                                   "others") : "");
        snprintf(why, sizeof why, "%zu device%s would sort it on the device%s", k,
                 k == 1 ? "" : "s", rest);
        if (shared >= 0)
            snprintf(why + strlen(why), sizeof why - strlen(why), "; CPU devices share the "
                     "host's cores, so only the fastest of them counts");
        return declined(j, why);
    }
    size_t kept = water_fill(v, k, r->n, forced ? 1 : SPLIT_MIN_PART);
    if (kept < 2) {
        snprintf(why, sizeof why, "the other devices' shares fall below %d keys (their "
                 "queues or rates)", SPLIT_MIN_PART);
        return declined(j, why);
    }
    if (len && !to_rows(v, kept, r->n, len)) {
        snprintf(why, sizeof why, "a device's share is less than one of the %llu rows of %zu "
                 "keys", (unsigned long long)r->shape.rows, len);
        return declined(j, why);
    }
    for (size_t i = 0; segs && i < kept; i++)
        if (v[i].c->chunk_n) {
            snprintf(why, sizeof why, "device %d would take the segments out of core",
                     v[i].c->dev);
            return declined(j, why);
        }
    if (segs && !to_segs(v, kept, r, first)) {
        snprintf(why, sizeof why, "a device's share holds no key of the %llu segments once cut "
                 "on their borders", (unsigned long long)r->shape.segments);
        return declined(j, why);
    }
    double finish = 0;
    for (size_t i = 0; i < kept; i++) {
        double f = v[i].backlog + v[i].rate * (double)v[i].n;
        if (f > finish)
            finish = f;
    }
    double merge = len || segs ? 0 : sched_merge_ms(s, r, kept), total = finish + merge;
    if (!forced && !(total < cost)) {
        char list[128] = "";
        for (size_t i = 0; i < kept; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "",
                     v[i].c->dev);
        char where[32] = "the host";
        if (j->dev >= 0)
            snprintf(where, sizeof where, "device %d", j->dev);
        snprintf(why, sizeof why, "predicted %.1f ms over devices %s (%.1f ms of parts, %.1f "
                 "ms of merge) is not below %.1f ms on %s", total, list, finish, merge, cost,
                 where);
        return declined(j, why);
    }

    /* Split: parts in request order, each cut to fit its device. */
    size_t off = 0;
    for (size_t i = 0; i < kept; i++) {
        gs_job_part *p = &j->parts[i];
        const sched_cand *c = v[i].c;
        memset(p, 0, sizeof *p);
        p->dev = p->planned_dev = c->dev;
        p->off = off;
        p->n = v[i].n;
        p->algo = c->algo;
        p->params = c->params;
        p->how = c->how;
        p->run_ms = v[i].rate * (double)p->n;
        p->predicted_ms = v[i].backlog + p->run_ms;
        if (segs) {
            /* the device's route takes every segment at once (chunk_n 0,
             * checked above): fewer keys and no longer a segment fit too */
            p->seg_lo = first[i];
            p->seg_n = first[i + 1] - first[i];
            off += p->n;
            continue;
        }
        gs_sort_req piece = gs_ooc_piece(r, off, p->n);
        gs_err e;
        gs_err_clear(&e);
        if (sched_fit(s, c->dev, c->algo, &piece, &p->params, &p->chunk_n, &e) < 0) {
            snprintf(why, sizeof why, "part %zu does not fit device %d: %.160s", i + 1, c->dev,
                     e.msg);
            return declined(j, why);
        }
        off += p->n;
    }
    j->nparts = (unsigned)kept;
    j->dev = -1;
    j->algo = j->parts[0].algo;
    j->run_params = j->parts[0].params;
    j->how = GS_ROUTE_SPLIT;
    j->predicted_ms = total;
    j->chunk_n = 0;
    GS_DEBUG("split of %zu %s keys over %zu devices: predicted %.1f ms (parts %.1f, merge "
             "%.1f) against %.1f ms whole%s", r->n, gs_dtype_name(r->shape.dtype), kept, total,
             finish, merge, cost, forced ? " (GSORTD_TEST_SPLIT)" : "");
    return 1;
}

/* ---- the parts ---- */

int sched_split_submit(gs_sched *s, gs_job *j)
{
    unsigned np = j->nparts;
    const size_t noffs = j->req.shape.segments ? (size_t)j->req.shape.segments + np : 0;
    gs_split *sp = calloc(1, sizeof *sp + noffs * sizeof(uint64_t));
    if (!sp) {
        GS_WARN("out of memory splitting %zu keys over %u devices; the host sort serves "
                "them", j->req.n, np);
        j->dev = -1;
        j->algo = gs_algo_find("host");
        gs_params_clear(&j->run_params);
        j->how = GS_ROUTE_FALLBACK;
        j->nparts = 0;
        snprintf(j->fallback, sizeof j->fallback, "out of memory for the split over %u "
                 "devices; served by the host sort", np);
        return GS_ENOMEM;
    }
    atomic_init(&sp->left, np);
    j->split = sp;
    uint64_t *po = sp->offs;
    for (unsigned i = 0; i < np; i++) {
        const gs_job_part *jp = &j->parts[i];
        gs_job *p = &sp->part[i];
        if (noffs) {            /* its keys are [off, off + n) all the same */
            p->req = gs_ooc_seg_piece(&j->req, jp->seg_lo, jp->seg_n, po);
            po += jp->seg_n + 1;
        } else {
            p->req = gs_ooc_piece(&j->req, jp->off, jp->n);
        }
        p->device = p->dev = jp->dev;
        p->algo = jp->algo;
        p->run_params = jp->params;
        p->how = jp->how;
        p->predicted_ms = jp->run_ms;
        p->chunk_n = jp->chunk_n;
        p->parent = j;
        p->t_submit = j->t_submit;
    }
    /* The last push may be the last part done, which frees sp: nothing
     * of it is read after. */
    for (unsigned i = 0; i < np; i++)
        sched_queue_push(&s->devs[j->parts[i].dev].q, &sp->part[i]);
    return 0;
}

void sched_split_part_done(gs_sched *s, gs_job *part)
{
    gs_job *j = part->parent;
    gs_split *sp = j->split;
    part->t_done = gs_now_ms();
    if (atomic_fetch_sub(&sp->left, 1) != 1)
        return;
    /* The last part: every other part's writes happen before the count. */
    unsigned np = j->nparts;
    size_t bounds[GS_SPLIT_MAX + 1];
    memset(&j->st, 0, sizeof j->st);
    gs_err_clear(&j->err);
    j->rc = 0;
    j->t_start = sp->part[0].t_start;
    for (unsigned i = 0; i < np; i++) {
        gs_job *p = &sp->part[i];
        gs_job_part *jp = &j->parts[i];
        jp->dev = p->dev;
        jp->algo = p->algo;
        jp->chunks = p->st.chunks;
        jp->ms = p->t_done - p->t_start;
        bounds[i] = jp->off;
        if (p->t_start < j->t_start)
            j->t_start = p->t_start;
        /* the parts ran at once: the longest of each phase */
        if (p->st.upload_ms > j->st.upload_ms)
            j->st.upload_ms = p->st.upload_ms;
        if (p->st.kernel_ms > j->st.kernel_ms)
            j->st.kernel_ms = p->st.kernel_ms;
        if (p->st.download_ms > j->st.download_ms)
            j->st.download_ms = p->st.download_ms;
        j->st.passes += p->st.passes;
        j->st.passes_skipped += p->st.passes_skipped;
        j->st.nans_on_device += p->st.nans_on_device;
        j->st.output_touched |= p->st.output_touched;
        if (p->fallback[0]) {
            GS_WARN("split of %zu keys: part %u of %u (%zu keys from %zu) failed on device "
                    "%d and was sorted by the host sort instead", j->req.n, i + 1, np, jp->n,
                    jp->off, jp->planned_dev);
            size_t used = strlen(j->fallback);
            snprintf(j->fallback + used, sizeof j->fallback - used, "%spart %u of %u (%zu "
                     "keys) served by the host sort: %s", used ? "; " : "", i + 1, np, jp->n,
                     p->fallback);
        }
        if (p->rc < 0 && j->rc == 0) {
            j->rc = p->rc;
            j->err = p->err;
            char pre[96];
            snprintf(pre, sizeof pre, "split part %u of %u (%zu keys, device %d): ", i + 1, np,
                     jp->n, jp->planned_dev);
            gs_err_prefix(&j->err, "%s", pre);
        } else if (p->dev >= 0 && p->how == GS_ROUTE_DEFAULT) {
            sched_learn(s, &s->devs[p->dev].rate, p);
        }
    }
    bounds[np] = j->req.n;
    /* rows and segments: each part's are done */
    if (j->rc == 0 && j->req.shape.rows <= 1 && !j->req.shape.segments)
        j->rc = gs_ooc_merge(&j->req, bounds, np, &j->st, &j->err);
    j->st.wall_ms = gs_now_ms() - j->t_start;
    if (j->rc == 0)
        GS_DEBUG("split of %zu %s keys over %u devices: done in %.3f ms (merge %.3f ms)",
                 j->req.n, gs_dtype_name(j->req.shape.dtype), np, j->st.wall_ms, j->st.merge_ms);
    j->split = NULL;
    free(sp);
    sched_hand_back(j);
}
