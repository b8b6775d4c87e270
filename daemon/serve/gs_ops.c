/* The operations, on the client's I/O loop (gs_io.c): ping, info and
 * stats are answered at once; a sort gets its arrays in place (the inline
 * payload, or the client's sealed memfd mapped after its seals are
 * checked; a request of segments gets its own checked copy of the
 * offsets), is routed and queued with the scheduler (gs_sched.h), and when
 * a worker has finished it the sort reply (device, algorithm, parameters,
 * plan, times, and the arrays unless they travelled in the memfd) goes
 * back through gs_conn.c. The loop calls in here (a whole request reaches
 * srv_op_run, the callback it gave the connection; a finished sort,
 * srv_on_job_done through its sink); of the serving files this one calls
 * only those below it, gs_conn.c and gs_blocks.c. The per-route statistics
 * the stats op reports are counted here, per loop, and summed over the
 * loops when asked, with the loops' counters. */
#include "config.h"
#include "gs_srv_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs_log.h"
#include "gs_reply.h"
#include "gs_scratch.h"
#include "gs_lexsort.h"
#include "gs_select.h"
#include "gs_srv.h"
#include "gs_time.h"

/* ---- answered at once ---- */

/* The reply bodies are lib/wire/gs_reply.c's (the clients parse them there
 * too); here they are only filled from the daemon's state. A builder that
 * runs out of memory returns NULL, which srv_conn_send answers by closing
 * the connection. */
static cJSON *op_info(conn *c)
{
    srv *s = c->s;
    size_t nd = gs_sched_ndev(s->sched), na = gs_algo_count();
    gs_reply_info_dev *devs = calloc(nd ? nd : 1, sizeof *devs);
    char (*types)[64] = calloc(nd ? nd : 1, sizeof *types);
    const char **algos = calloc(na ? na : 1, sizeof *algos);
    /* the crossover of every plan shape: key width x payload x stability */
    enum { NXO = GS_KW_COUNT * GS_PL_COUNT * 2 };
    gs_reply_crossover *xo = calloc(NXO, sizeof *xo);
    cJSON *r = NULL;
    if (devs && types && algos && xo) {
        for (size_t i = 0; i < NXO; i++) {
            gs_plans_key k = { .key_bits = gs_kw_bits((int)(i / (GS_PL_COUNT * 2))),
                               .payload = (gs_payload)(i / 2 % GS_PL_COUNT),
                               .stable = (int)(i % 2) };
            xo[i] = (gs_reply_crossover){ .key_bits = k.key_bits, .payload = k.payload,
                                          .stable = k.stable };
            gs_sched_crossover(s->sched, &k, &xo[i].local_below, &xo[i].device);
        }
        for (size_t i = 0; i < nd; i++) {
            gs_sched_devstat ds;
            gs_sched_devstat_get(s->sched, i, &ds);
            devs[i] = (gs_reply_info_dev){
                .name = ds.dev->info.name, .platform = ds.dev->info.platform,
                .driver = ds.dev->info.driver,
                .type = gs_dev_type_name(ds.dev->info.type, types[i], sizeof types[i]),
                .enabled = ds.enabled, .tuned = ds.tuned, .plan_entries = ds.plan_entries,
                .queued = ds.queued, .healthy = ds.healthy, .ready = ds.ready,
                .lanes = ds.lanes };
        }
        for (size_t i = 0; i < na; i++)
            algos[i] = gs_algo_at(i)->name;
        const gs_conf *cf = &c->io->conf;
        gs_reply_info in = {
            .version = PACKAGE_VERSION, .pid = (long)getpid(), .socket = s->lis.path,
            .db = s->o->db_path, .db_ok = atomic_load(&s->db_ok), .devices = devs,
            .ndevices = nd, .host_threads = gs_sched_host_threads(s->sched),
            .algorithms = algos, .nalgorithms = na,
            .limits = { c->io->req_cap, cf->max_clients, cf->max_header_bytes,
                        cf->idle_timeout_s, cf->io_timeout_s },
            /* who the daemon takes this client to be (SO_PEERCRED at connect) */
            .peer = { (long)c->cred.pid, c->cred.uid, c->cred.gid },
            .crossover = xo, .ncrossover = NXO };
        r = gs_reply_info_build(&in, c->rq.id, NULL);
    }
    free(xo);
    free(devs);
    free(types);
    free(algos);
    return r;
}

/* Every loop's route statistics merged into rts (at most MAX_ROUTES). */
static size_t merge_routes(srv *s, gs_reply_route *rts)
{
    /* the loops' queue times, merged per route (none when out of memory:
     * the percentiles then read 0) */
    gs_hist *q = calloc(MAX_ROUTES, sizeof *q);
    size_t n = 0;
    for (unsigned i = 0; i < s->nio; i++) {
        srv_io *io = &s->io[i];
        pthread_mutex_lock(&io->mu);
        for (size_t r = 0; r < io->nroutes; r++) {
            const route_stat *x = &io->routes[r];
            size_t k = 0;
            while (k < n && !(rts[k].device == x->dev && !strcmp(rts[k].algorithm, x->algo)))
                k++;
            if (k == n) {
                if (n == MAX_ROUTES)
                    continue;
                rts[n++] = (gs_reply_route){ .device = x->dev, .algorithm = x->algo };
            }
            gs_reply_route *y = &rts[k];
            y->count += x->count;
            y->errors += x->errors;
            y->total_ms += x->total_ms;
            y->queue_ms += x->queue_ms;
            y->sort_ms += x->sort_ms;
            if (q)
                gs_hist_merge(&q[k], &x->queue);
            if (x->max_ms > y->max_ms)
                y->max_ms = x->max_ms;
        }
        pthread_mutex_unlock(&io->mu);
    }
    for (size_t k = 0; q && k < n; k++) {
        rts[k].queue_p50_ms = gs_hist_quantile(&q[k], 0.50);
        rts[k].queue_p90_ms = gs_hist_quantile(&q[k], 0.90);
        rts[k].queue_p99_ms = gs_hist_quantile(&q[k], 0.99);
    }
    free(q);
    return n;
}

void srv_counters_sum(srv *s, srv_counters *sum)
{
    memset(sum, 0, sizeof *sum);
    for (unsigned i = 0; i < s->nio; i++) {
        srv_counters *c = &s->io[i].ctr;
        SRV_ADD(sum->req_total, SRV_GET(c->req_total));
        SRV_ADD(sum->req_ok, SRV_GET(c->req_ok));
        SRV_ADD(sum->req_err, SRV_GET(c->req_err));
        SRV_ADD(sum->fallbacks, SRV_GET(c->fallbacks));
        for (int k = 0; k < GS_OP_COUNT; k++)
            SRV_ADD(sum->by_op[k], SRV_GET(c->by_op[k]));
        SRV_ADD(sum->bytes_in, SRV_GET(c->bytes_in));
        SRV_ADD(sum->bytes_out, SRV_GET(c->bytes_out));
        SRV_ADD(sum->blocks_mapped, SRV_GET(c->blocks_mapped));
        SRV_ADD(sum->blocks_reused, SRV_GET(c->blocks_reused));
    }
}

static cJSON *op_stats(conn *c)
{
    srv *s = c->s;
    gs_reply_route rts[MAX_ROUTES];
    size_t nr = merge_routes(s, rts);
    srv_counters t;
    srv_counters_sum(s, &t);
    pthread_mutex_lock(&s->conf_mu);    /* the database may be swapped (SIGHUP) */
    long long queries = gs_db_queries(s->db);
    int have_db = s->db != NULL;
    pthread_mutex_unlock(&s->conf_mu);
    gs_reply_stats st = {
        .uptime_s = (gs_now_ms() - s->t_start) / 1000.0,
        .clients = { atomic_load(&s->nconns), atomic_load(&s->clients_total),
                     atomic_load(&s->clients_rejected), atomic_load(&s->clients_denied) },
        .requests = { SRV_GET(t.req_total), SRV_GET(t.req_ok), SRV_GET(t.req_err),
                      SRV_GET(t.fallbacks), { 0 } },
        .bytes = { SRV_GET(t.bytes_in), SRV_GET(t.bytes_out) },
        .blocks = { SRV_GET(t.blocks_mapped), SRV_GET(t.blocks_reused),
                    atomic_load(&s->pin.used), atomic_load(&s->pin.cap),
                    atomic_load(&s->pin.pinned), atomic_load(&s->pin.refused),
                    atomic_load(&s->kept_bytes), atomic_load(&s->kept_cap),
                    atomic_load(&s->kept_client_cap), atomic_load(&s->not_kept) },
        .memory = { atomic_load(&s->mem.cap), atomic_load(&s->mem.used),
                    atomic_load(&s->mem.peak),
                    gs_scratch_cached() + gs_sched_host_pooled(s->sched),
                    atomic_load(&s->mem.waiting), atomic_load(&s->mem.waited),
                    atomic_load(&s->mem.refused) },
        .database = { queries, have_db },
        .routes = rts, .nroutes = nr };
    for (int k = 0; k < GS_OP_COUNT; k++)
        st.requests.by_op[k] = SRV_GET(t.by_op[k]);
    return gs_reply_stats_build(&st, c->rq.id, NULL);
}

/* The loop's own record of a route (under io->mu: the stats op of another
 * loop reads it). */
static route_stat *route_of(srv_io *io, int dev, const char *algo)
{
    for (size_t i = 0; i < io->nroutes; i++)
        if (io->routes[i].dev == dev && !strcmp(io->routes[i].algo, algo))
            return &io->routes[i];
    if (io->nroutes == MAX_ROUTES)
        return NULL;
    route_stat *r = &io->routes[io->nroutes++];
    memset(r, 0, sizeof *r);
    r->dev = dev;
    r->algo = algo;
    return r;
}

/* ---- sorts ---- */

void srv_on_job_done(gs_job *j, void *ud)
{
    conn *c = j->ud;
    srv_io *io = ud;
    srv *s = io->s;
    c->busy = 0;
    c->refs--;
    double now = gs_now_ms();
    double qms = j->t_start - j->t_submit, total = now - c->t_first;
    double sort_ms = j->dev >= 0 ? j->st.kernel_ms : j->st.wall_ms;
    if (j->algo) {
        pthread_mutex_lock(&io->mu);
        route_stat *rt = route_of(io, j->dev, j->algo->name);
        if (rt) {
            rt->count++;
            rt->errors += j->rc < 0;
            rt->total_ms += total;
            rt->queue_ms += qms;
            gs_hist_add(&rt->queue, qms);
            rt->sort_ms += sort_ms;
            if (total > rt->max_ms)
                rt->max_ms = total;
        }
        pthread_mutex_unlock(&io->mu);
    }
    if (j->fallback[0])
        SRV_ADD(io->ctr.fallbacks, 1);
    if (c->dead) {
        srv_conn_release(c);
        if (c->refs == 0)
            srv_conn_free(c);
        srv_conn_poke(io);
        return;
    }
    if (j->rc < 0) {
        srv_reply_error(c, j->rc, j->err.msg, 0);
        return;
    }
    SRV_ADD(io->ctr.req_ok, 1);
    const gs_proto_req *rq = &c->rq;
    gs_reply_sort rs = {
        .n = rq->n, .dtype = rq->shape.dtype, .narrow = rq->narrow, .values = rq->shape.payload,
        .device = j->dev,
        .algorithm = j->algo->name, .params = j->run_params,
        .plan = gs_sched_route_name(j->how), .fallback = j->fallback,
        .times_ms = { .queue = qms, .receive = c->t_recv - c->t_first,
                      .upload = j->st.upload_ms, .sort = sort_ms,
                      .download = j->st.download_ms, .total = total,
                      .merge = j->st.merge_ms, .admit = j->t_submit - c->t_recv,
                      .run = j->t_done - j->t_start, .handback = now - j->t_done,
                      .setup = j->st.setup_ms, .enqueue = j->st.enqueue_ms,
                      .wait = j->st.wait_ms, .writeback = j->st.writeback_ms,
                      .release = j->st.release_ms, .pack = j->st.pack_ms },
        .chunks = j->st.chunks, .nparts = j->nparts, .split_declined = j->split_why };
    for (unsigned i = 0; i < j->nparts && i < GS_REPLY_PARTS_MAX; i++) {
        const gs_job_part *p = &j->parts[i];
        rs.parts[i] = (gs_reply_part){ p->dev, p->algo->name, p->n, p->chunks, p->ms,
                                       p->predicted_ms };
    }
    if (j->dev >= 0) {
        gs_sched_devstat ds;
        gs_sched_devstat_get(s->sched, (size_t)j->dev, &ds);
        rs.device_name = ds.dev->info.name;
        rs.device_platform = ds.dev->info.platform;
    }
    cJSON *r = gs_reply_sort_build(&rs, rq->id, NULL);
    if (c->map || rq->memfd) {
        srv_conn_send(c, r, NULL, 0, NULL, 0, 0);
        return;
    }
    size_t m = (size_t)rq->n;       /* the keys the reply carries */
    void *keys = j->narrow.dt ? j->narrow.keys : j->req.keys;   /* not the words */
    if (rq->shape.topk && m) {
        /* each row's k answers, together */
        gs_select_pack_keys(&j->req, keys, gs_proto_key_bytes(rq));
        m = (size_t)(rq->shape.rows > 1 ? rq->shape.rows : 1) * (size_t)rq->shape.k;
    }
    size_t kb = rq->lex.nkeys ? 0 : m * gs_proto_key_bytes(rq);   /* lexsort: indices */
    size_t vb = m * gs_payload_size(rq->shape.payload);
    srv_conn_send(c, r, m ? keys : NULL, kb, m && vb ? j->req.values : NULL, vb, 0);
}

/* Map the client's memfd after checking it cannot be shrunk under us (or
 * take the mapping kept from earlier requests, gs_blocks.c); a device
 * worker registers a kept block for fast copies (job.pin), and a block
 * sent once only when it sorts it out of core (job.pin_once). */
static int map_memfd(conn *c, gs_err *e)
{
    const gs_proto_req *rq = &c->rq;
    int seals = fcntl(c->memfd, F_GET_SEALS);
    if (seals < 0)
        return gs_err_set(e, GS_EINVAL, "the descriptor is not a memfd that supports seals "
                          "(memfd_create with MFD_ALLOW_SEALING)");
    if (!(seals & F_SEAL_SHRINK))
        return gs_err_set(e, GS_EINVAL, "the memfd must be sealed with F_SEAL_SHRINK: "
                          "truncating it during a sort would crash the daemon");
    if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
        return gs_err_set(e, GS_EINVAL, "the memfd is sealed against writing; it is sorted "
                          "in place");
    if (rq->fd_bytes == 0)
        return 0;
    srv_block *b;
    int kept;
    int rc = srv_block_get(c, c->memfd, rq->fd_bytes, &b, &kept, e);
    if (rc)
        return rc;
    c->map = b->map;
    /* memory sent once is pinned only for an out-of-core sort */
    c->job.pin = kept || c->s->pin_once ? &b->pin : NULL;
    c->job.pin_once = !kept;
    return 0;
}

/* A lexsort: its words and any chaining scratch in one buffer of the
 * daemon's, the key arrays left where they lie (inline or the client's
 * memfd: only read, once per group), the indices into the request's values
 * (`*values`: for an inline request, valbuf). 0, or -1 answered. Its block
 * is not registered with a device: the device reads the words. */
static int start_lex(conn *c, const void *keys, void **values)
{
    const gs_proto_req *rq = &c->rq;
    gs_job *j = &c->job;
    size_t n = (size_t)rq->n, wb = gs_lex_word_bytes(&rq->lex);
    size_t scr = gs_lexsort_scratch(&rq->lex, n);
    /* the scratch cache: faulting fresh pages in would cost more than
     * the packing (gs_scratch.h) */
    c->lexbytes = n * wb + scr;
    if (!(c->lexbuf = gs_scratch_get(c->lexbytes))) {
        srv_reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
        return -1;
    }
    j->lex = (gs_lexsort_job){ .lx = &rq->lex, .n = n, .words = c->lexbuf,
                               .scratch = scr ? (char *)c->lexbuf + n * wb : NULL,
                               .out = *values, .idx = rq->shape.payload };
    for (unsigned k = 0; k < rq->lex.nkeys; k++)
        j->lex.key[k] = (const char *)keys + rq->lex.key[k].offset;
    j->pin = NULL;
    return 0;
}

/* 8- or 16-bit keys: their u32 words in a buffer of the daemon's (the
 * lexsort's, from the scratch cache), the keys decoded back where they lie
 * (inline or the client's memfd), the values sorted where they lie. 0, or
 * -1 answered. The memfd stays registered with a device as any request's:
 * 16-bit keys on radix are read from it, without words (gs_narrow_fit;
 * run_job leaves a words' run unpinned). */
static int start_narrow(conn *c, void *keys, void *values)
{
    const gs_proto_req *rq = &c->rq;
    gs_job *j = &c->job;
    size_t n = (size_t)rq->n;
    c->lexbytes = n * sizeof(uint32_t);
    if (!(c->lexbuf = gs_scratch_get(c->lexbytes))) {
        srv_reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
        return -1;
    }
    gs_narrow_job_init(&j->narrow, rq->narrow, &rq->shape, n, keys, values, c->lexbuf);
    return 0;
}

static void start_sort(conn *c)
{
    srv *s = c->s;
    const gs_proto_req *rq = &c->rq;
    gs_job *j = &c->job;
    memset(j, 0, sizeof *j);
    size_t ks = gs_proto_key_bytes(rq), vs = gs_payload_size(rq->shape.payload);
    size_t n = (size_t)rq->n;
    gs_err e;
    gs_err_clear(&e);
    void *keys = c->tiny, *values = rq->shape.payload != GS_PL_NONE ? (void *)c->tiny : NULL;
    int rc = 0;
    if (rq->memfd) {
        if ((rc = map_memfd(c, &e)) < 0) {
            srv_reply_error(c, rc, e.msg, 0);
            return;
        }
        if (n) {
            keys = (char *)c->map + rq->keys_offset;
            if (values)
                values = (char *)c->map + rq->values_offset;
        }
    } else if (n) {
        keys = c->inbuf;
        if (rq->shape.payload == GS_PL_U32 || rq->shape.payload == GS_PL_U64) {
            values = c->inbuf + n * ks;
            if ((uintptr_t)values % vs) {
                /* u64 values after an odd count of u32 keys: realign. */
                if (!(c->valbuf = malloc(n * vs))) {
                    srv_reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
                    return;
                }
                memcpy(c->valbuf, values, n * vs);
                values = c->valbuf;
            }
        } else if (values) {
            if (!(c->valbuf = malloc(n * vs))) {
                srv_reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
                return;
            }
            values = c->valbuf;
        }
    }
    if (rq->lex.nkeys && n && start_lex(c, keys, &values) < 0)
        return;
    if (rq->narrow && n && start_narrow(c, keys, values) < 0)
        return;
    j->req = rq->narrow && n ? j->narrow.req
                             : (gs_sort_req){ .shape = rq->shape, .n = n,
                                              .keys = rq->lex.nkeys && n ? c->lexbuf : keys,
                                              .values = values };
    if (rq->shape.segments) {
        /* The offsets are copied once and the copy checked: the client may
         * rewrite its memfd at any moment, and a sort that read offsets from
         * it twice could be told two different things. */
        size_t ob = 8 * ((size_t)rq->shape.segments + 1);
        const char *src = rq->memfd ? (const char *)c->map + rq->offsets_offset
                                    : (const char *)c->inbuf + n * ks +
                                      (rq->shape.payload == GS_PL_U32 ||
                                       rq->shape.payload == GS_PL_U64 ? n * vs : 0);
        if (!(c->offbuf = malloc(ob))) {
            srv_reply_error(c, GS_ENOMEM, "out of memory (retry later)", 0);
            return;
        }
        memcpy(c->offbuf, src, ob);
        j->req.offsets = c->offbuf;
        if (rq->narrow)
            j->narrow.req.offsets = c->offbuf;    /* the words' request, which runs */
        if ((rc = gs_sort_req_check(&j->req, &e)) < 0) {
            srv_reply_error(c, rc, e.msg, 0);
            return;
        }
    }
    snprintf(j->algorithm, sizeof j->algorithm, "%s", rq->algorithm);
    j->params = rq->params;
    j->has_params = rq->has_params;
    j->device = rq->device;
    /* a lexsort's groups are chained; narrow keys are decoded after their words'
     * sort; a merge of parts would compare whole keys, not a bit range */
    j->split_ask = rq->lex.nkeys || rq->narrow || gs_shape_has_bits(&rq->shape) ? -1
                                                                            : rq->split;
    j->ud = c;
    j->sink = &c->io->sink;
    if ((rc = gs_sched_route(s->sched, j, &e)) < 0) {
        srv_reply_error(c, rc, e.msg, 0);
        return;
    }
    c->busy = 1;
    c->refs++;
    srv_conn_update_poll(c);
    gs_sched_submit(s->sched, j);
}

/* ---- dispatch ---- */

void srv_op_run(conn *c)
{
    srv_counters *ctr = &c->io->ctr;
    switch (c->rq.op) {
    case GS_OP_PING: {
        cJSON *r = gs_proto_reply_ok(GS_OP_PING, c->rq.id);
        cJSON_AddStringToObject(r, "version", PACKAGE_VERSION);
        cJSON_AddNumberToObject(r, "protocol", GS_PROTO_VERSION);
        SRV_ADD(ctr->req_ok, 1);
        srv_conn_send(c, r, NULL, 0, NULL, 0, 0);
        return;
    }
    case GS_OP_INFO:
        SRV_ADD(ctr->req_ok, 1);
        srv_conn_send(c, op_info(c), NULL, 0, NULL, 0, 0);
        return;
    case GS_OP_STATS:
        SRV_ADD(ctr->req_ok, 1);
        srv_conn_send(c, op_stats(c), NULL, 0, NULL, 0, 0);
        return;
    case GS_OP_SORT:
        start_sort(c);
        return;
    default:
        srv_reply_error(c, GS_EINVAL, "unknown op", 0);
    }
}
