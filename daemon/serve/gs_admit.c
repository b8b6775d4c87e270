/* Admission against the memory budget (gs_mem.h holds the count): what a
 * sort will hold while the daemon serves it is charged when its header has
 * been checked, before anything is allocated for it, and given back when
 * its reply is written. A sort holds its inline payload (or, in a memfd,
 * the pages it touches, which the daemon itself faults in where the file
 * has holes), the values the daemon allocates (argsort output, realigned
 * values) and the sort's scratch, estimated as one more copy of the keys
 * and values (the host sort's; a device that fails falls back to it, and a
 * CPU device's buffers are host memory too). A sort that does not fit now
 * waits, its payload left unread, until memory is given back (or the
 * loop's tick), for at most memory_wait, and is then refused; one larger
 * than the whole budget is refused at once; the connection (gs_conn.c,
 * above this file) hears how a wait ended through the callback it gave
 * srv_mem_admit, run by its loop's retry. A waiting request holds
 * nothing, so waiters never hold each other up; they are admitted oldest
 * first, each as soon as it fits, none kept waiting behind a larger one
 * (which would let one large request stall every other). The host caches
 * (sort scratch kept for reuse, the buffer pools of CPU devices) count as
 * used, and are emptied before a request has to wait. One uid's requests
 * together hold at most max_memory_per_uid (half of the budget by default;
 * root and the daemon's own uid are spared): without it, one user's stalled
 * uploads could hold the whole budget and every other user's sort would
 * wait for them. */
#include "config.h"
#include "gs_srv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_lexsort.h"
#include "gs_log.h"
#include "gs_scratch.h"
#include "gs_time.h"

#define MIB (1024.0 * 1024.0)

/* What a request will hold: its data, the values the daemon allocates, the
 * sort's scratch. */
typedef struct claim {
    uint64_t data, values, scratch;
} claim;

static void claim_of(const gs_proto_req *rq, claim *k)
{
    memset(k, 0, sizeof *k);
    if (rq->op != GS_OP_SORT)
        return;
    /* gs_ops.c's offbuf: the segment offsets copied (S <= 2^53) */
    k->values = rq->shape.segments ? 8 * (rq->shape.segments + 1) : 0;
    if (rq->n == 0)
        return;
    /* n <= 2^53 and the sizes <= 8: no product here overflows */
    uint64_t n = rq->n, ks = gs_dtype_size(rq->shape.dtype),
             vs = gs_payload_size(rq->shape.payload);
    k->scratch = n * (ks + vs);
    if (rq->lex.nkeys) {
        /* a lexsort: its key arrays, the words it sorts (ks is their width)
         * and chaining scratch; the indices inline */
        k->data = rq->memfd ? rq->lex_bytes + n * vs : rq->payload_bytes;
        k->values = n * ks + gs_lexsort_scratch(&rq->lex, (size_t)n) + (rq->memfd ? 0 : n * vs);
        return;
    }
    /* the client's keys are nb bytes each; 8- and 16-bit keys are sorted
     * as words of ks bytes, the daemon's */
    uint64_t nb = gs_proto_key_bytes(rq);
    if (rq->narrow)
        k->values += n * ks;
    if (rq->memfd) {
        k->data = n * (nb + vs);
        return;
    }
    k->data = rq->payload_bytes;
    /* gs_ops.c's valbuf: argsort output, or u64 values after an odd count
     * of u32 keys (the payload buffer is malloc-aligned) */
    if (rq->shape.payload == GS_PL_IDX32 || rq->shape.payload == GS_PL_IDX64 ||
        (vs && (n * nb) % vs))
        k->values += n * vs;
}

static uint64_t cached(srv *s)
{
    return gs_scratch_cached() + (s->sched ? gs_sched_host_pooled(s->sched) : 0);
}

/* Charge `need`, emptying the host caches first when that makes it fit. */
static int take_global(srv *s, uint64_t need)
{
    uint64_t c = cached(s), cap = atomic_load(&s->mem.cap);
    if (gs_mem_take(&s->mem, need, c))
        return 1;
    if (!c || need > cap || atomic_load(&s->mem.used) > cap - need)
        return 0;
    gs_scratch_trim(0);
    if (s->sched)
        gs_sched_trim_host(s->sched);
    return gs_mem_take(&s->mem, need, cached(s));
}

/* Charge `need` to the budget and, unless exempt, to the uid's share. */
static int take(conn *c, uint64_t need)
{
    srv *s = c->s;
    unsigned uid = (unsigned)c->cred.uid;
    int per = !srv_acl_uid_exempt(s, uid);
    if (per && !srv_acl_uid_mem_take(s, uid, need, atomic_load(&s->mem_uid_cap)))
        return 0;
    if (!take_global(s, need)) {
        if (per)
            srv_acl_uid_mem_give(s, uid, need);
        return 0;
    }
    c->mem_claim = need;
    c->mem_uid = per;
    return 1;
}

/* Give back what take charged. */
static void give(conn *c)
{
    gs_mem_give(&c->s->mem, c->mem_claim);
    if (c->mem_uid)
        srv_acl_uid_mem_give(c->s, (unsigned)c->cred.uid, c->mem_claim);
    c->mem_claim = 0;
    c->mem_uid = 0;
}

static void unwait(conn *c)
{
    if (!c->mem_wait)
        return;
    c->mem_wait = 0;
    atomic_fetch_sub(&c->io->mem_waiting, 1);
    atomic_fetch_sub(&c->s->mem.waiting, 1);
}

/* " (auto: ...; set max_memory to change it)" or "" */
static const char *cap_note(const conn *c)
{
    return c->io->conf.max_memory == GS_CONF_AUTO
               ? " (auto: the memory limit of the daemon's cgroup, else the machine's memory, "
                 "less a headroom; set max_memory to change it)"
               : "";
}

/* srv_mem_admit but for the callback: 0, 1 (waits) or GS_ETOOBIG. */
static int admit(conn *c, char *msg, size_t mlen)
{
    srv *s = c->s;
    claim k;
    claim_of(&c->rq, &k);
    uint64_t need = k.data + k.values + k.scratch, cap = atomic_load(&s->mem.cap);
    unsigned uid = (unsigned)c->cred.uid;
    uint64_t ucap = srv_acl_uid_exempt(s, uid) ? cap : atomic_load(&s->mem_uid_cap);
    if (c->mem_claim)           /* never two charges at once: a request is released first */
        give(c);
    if (need == 0 || take(c, need)) {
        unwait(c);
        return 0;
    }
    if (need > ucap && ucap < cap) {
        unwait(c);
        atomic_fetch_add(&s->mem.refused, 1);
        snprintf(msg, mlen, "the request would hold %llu bytes of the daemon's memory (%llu "
                 "of %s, %llu of values, %llu of sort scratch) and max_memory_per_uid, what "
                 "one user's requests may hold at once, is %llu%s",
                 (unsigned long long)need, (unsigned long long)k.data,
                 c->rq.memfd ? "memfd pages" : "payload", (unsigned long long)k.values,
                 (unsigned long long)k.scratch, (unsigned long long)ucap,
                 c->io->conf.max_memory_per_uid == GS_CONF_AUTO ? " (auto: half of max_memory)"
                                                                : "");
        return GS_ETOOBIG;
    }
    if (need > cap) {
        unwait(c);
        atomic_fetch_add(&s->mem.refused, 1);
        snprintf(msg, mlen, "the request would hold %llu bytes of the daemon's memory (%llu "
                 "of %s, %llu of values, %llu of sort scratch) and max_memory is %llu%s",
                 (unsigned long long)need, (unsigned long long)k.data,
                 c->rq.memfd ? "memfd pages" : "payload", (unsigned long long)k.values,
                 (unsigned long long)k.scratch, (unsigned long long)cap, cap_note(c));
        return GS_ETOOBIG;
    }
    double now = gs_now_ms(), wait_s = c->io->conf.memory_wait_s;
    if (!c->mem_wait && wait_s > 0) {
        c->mem_wait = 1;
        c->mem_since = now;
        atomic_fetch_add(&c->io->mem_waiting, 1);
        atomic_fetch_add(&s->mem.waiting, 1);
        atomic_fetch_add(&s->mem.waited, 1);
        GS_DEBUG("client %s: waiting for %llu bytes of memory (max_memory %llu, %llu held)",
                 c->who, (unsigned long long)need, (unsigned long long)cap,
                 (unsigned long long)atomic_load(&s->mem.used));
        return 1;
    }
    if (c->mem_wait && now - c->mem_since < wait_s * 1000)
        return 1;
    unwait(c);
    atomic_fetch_add(&s->mem.refused, 1);
    uint64_t held = srv_acl_uid_mem(s, uid);
    if (ucap < cap && held > ucap - need)
        snprintf(msg, mlen, "this user's other requests hold the memory it may use: this one "
                 "needs %llu bytes, uid %u's requests hold %llu of max_memory_per_uid = %llu, "
                 "and it waited %.1f s (memory_wait); retry later", (unsigned long long)need,
                 uid, (unsigned long long)held, (unsigned long long)ucap, wait_s);
    else
        snprintf(msg, mlen, "the daemon's memory is held by other requests: this one needs "
                 "%llu bytes, %llu of max_memory = %llu are held, and it waited %.1f s "
                 "(memory_wait); retry later", (unsigned long long)need,
                 (unsigned long long)atomic_load(&s->mem.used), (unsigned long long)cap,
                 wait_s);
    return GS_ETOOBIG;
}

int srv_mem_admit(conn *c, srv_mem_cb *cb, char *msg, size_t mlen)
{
    int rc = admit(c, msg, mlen);
    c->mem_cb = rc == 1 ? cb : NULL;
    return rc;
}

void srv_mem_release(conn *c)
{
    unwait(c);
    if (!c->mem_claim)
        return;
    srv *s = c->s;
    give(c);
    if (!atomic_load(&s->mem.waiting))
        return;
    for (unsigned i = 0; i < s->nio; i++)
        if (s->io[i].open && atomic_load(&s->io[i].mem_waiting))
            uv_async_send(&s->io[i].wake);
}

static int older(const void *a, const void *b)
{
    double x = (*(conn *const *)a)->mem_since, y = (*(conn *const *)b)->mem_since;
    return x < y ? -1 : x > y;
}

void srv_mem_retry(srv_io *io)
{
    unsigned n = atomic_load(&io->mem_waiting);
    if (!n)
        return;
    conn **w = malloc(n * sizeof *w);
    if (!w)
        return;             /* the next tick tries again */
    unsigned k = 0;
    for (conn *c = io->conns; c && k < n; c = c->next)
        if (c->mem_wait && !c->dead)
            w[k++] = c;
    qsort(w, k, sizeof *w, older);
    /* Admitting one may answer it at once (an inline sort) or close it;
     * its record outlives this loop iteration either way. Its callback is
     * spent before it runs: reading on may admit the next request. */
    for (unsigned i = 0; i < k; i++) {
        char msg[512];
        int rc = w[i]->mem_wait && !w[i]->dead ? admit(w[i], msg, sizeof msg) : 1;
        if (rc != 1) {
            srv_mem_cb *cb = w[i]->mem_cb;
            w[i]->mem_cb = NULL;
            cb(w[i], rc, msg);
        }
    }
    free(w);
}

void srv_mem_configure(srv *s)
{
    uint64_t cap = gs_conf_memory_cap(&s->conf);
    atomic_store(&s->mem.cap, cap);
    atomic_store(&s->mem_uid_cap, gs_conf_memory_uid_cap(&s->conf));
    atomic_store(&s->kept_cap, gs_conf_mapped_cap(&s->conf));
    atomic_store(&s->kept_client_cap, gs_conf_mapped_client_cap(&s->conf));
    char where[512] = "";
    uint64_t limit = s->conf.max_memory == GS_CONF_AUTO ? gs_mem_limit(where, sizeof where) : 0;
    if (limit)
        GS_INFO("memory: max_memory %.0f MiB (auto: %.0f MiB of %s, less a headroom of %.0f "
                "MiB), %.0f MiB per uid, max_request_bytes %.0f MiB", cap / MIB, limit / MIB,
                where, (limit - cap) / MIB, atomic_load(&s->mem_uid_cap) / MIB,
                s->req_cap / MIB);
    else
        GS_INFO("memory: max_memory %.0f MiB, %.0f MiB per uid, max_request_bytes %.0f MiB",
                cap / MIB, atomic_load(&s->mem_uid_cap) / MIB, s->req_cap / MIB);
    /* A budget that shrank below what the caches hold: they go now. */
    if (cached(s) + atomic_load(&s->mem.used) > cap) {
        gs_scratch_trim(0);
        if (s->sched)
            gs_sched_trim_host(s->sched);
    }
}
