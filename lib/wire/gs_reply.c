/* Reply bodies (gs_reply.h): for each reply, its builder and its parser side
 * by side, so a field added to one is seen missing from the other. Builders
 * write the fields in the order man/gsort-protocol.7 shows them; parsers
 * check each field's kind and say which one is wrong. */
#include "config.h"
#include "gs_reply.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_params.h"

/* ---- building ---- */

static int add_num(cJSON *o, const char *k, double v)
{
    return o && cJSON_AddNumberToObject(o, k, v) != NULL;
}

/* An integer as its digits: a double would print 10^15 and beyond
 * rounded. The text is the same as a double's below that. */
static int add_u64(cJSON *o, const char *k, uint64_t v)
{
    return o && gs_jnum_add_u64(o, k, v);
}

static int add_str(cJSON *o, const char *k, const char *v)
{
    return o && cJSON_AddStringToObject(o, k, v ? v : "") != NULL;
}

static int add_bool(cJSON *o, const char *k, int v)
{
    return o && cJSON_AddBoolToObject(o, k, v != 0) != NULL;
}

/* Add `item` (NULL: out of memory) as `k`: 1, or 0 with item freed. */
static int add_item(cJSON *o, const char *k, cJSON *item)
{
    if (o && item && cJSON_AddItemToObject(o, k, item))
        return 1;
    cJSON_Delete(item);
    return 0;
}

static cJSON *finish(cJSON *r, int ok, const char *op, gs_err *err)
{
    if (ok)
        return r;
    cJSON_Delete(r);
    gs_err_set(err, GS_ENOMEM, "%s: out of memory building the reply", op);
    return NULL;
}

/* ---- parsing ----
 * A parse keeps its first failure; later reads return zeros and "", so a
 * parser reads straight through and reports once at the end. */

typedef struct pctx {
    const gs_jnum_doc *doc;
    const char *op;         /* "sort", "info", "stats": the message's start */
    gs_err *err;
    int rc;
} pctx;

/* "sort reply: \"times_ms.queue\" is missing or not a number". */
static void bad(pctx *p, const char *parent, const char *key, const char *kind)
{
    if (!p->rc)
        p->rc = gs_err_set(p->err, GS_ECORRUPT, "%s reply: \"%s%s%s\" is missing or not %s",
                           p->op, parent ? parent : "", parent ? "." : "", key, kind);
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const cJSON *get_kind(pctx *p, const cJSON *o, const char *parent, const char *key,
                             cJSON_bool (*is)(const cJSON *), const char *kind)
{
    if (p->rc)
        return NULL;
    const cJSON *v = get(o, key);
    if (!is(v)) {
        bad(p, parent, key, kind);
        return NULL;
    }
    return v;
}

static const cJSON *get_obj(pctx *p, const cJSON *o, const char *parent, const char *key)
{
    return get_kind(p, o, parent, key, cJSON_IsObject, "an object");
}

static const cJSON *get_arr(pctx *p, const cJSON *o, const char *parent, const char *key)
{
    return get_kind(p, o, parent, key, cJSON_IsArray, "an array");
}

static const char *get_str(pctx *p, const cJSON *o, const char *parent, const char *key)
{
    const cJSON *v = get_kind(p, o, parent, key, cJSON_IsString, "a string");
    return v ? v->valuestring : "";
}

static int get_bool(pctx *p, const cJSON *o, const char *parent, const char *key)
{
    const cJSON *v = get_kind(p, o, parent, key, cJSON_IsBool, "a boolean");
    return cJSON_IsTrue(v);
}

static double get_num(pctx *p, const cJSON *o, const char *parent, const char *key)
{
    const cJSON *v = get_kind(p, o, parent, key, cJSON_IsNumber, "a number");
    return v ? v->valuedouble : 0;
}

/* An integer in [0, max], read exactly. */
static uint64_t get_uint(pctx *p, const cJSON *o, const char *parent, const char *key,
                         uint64_t max)
{
    uint64_t x = 0;
    if (!p->rc && gs_jnum_u64(p->doc, get(o, key), max, &x) != GS_JNUM_OK) {
        char kind[64];
        snprintf(kind, sizeof kind, "an integer in [0, %llu]", (unsigned long long)max);
        bad(p, parent, key, kind);
        x = 0;
    }
    return x;
}

/* An integer in [min, max]. */
static long get_long(pctx *p, const cJSON *o, const char *parent, const char *key, long min,
                     long max)
{
    long x = 0;
    if (!p->rc && (gs_jnum_long(p->doc, get(o, key), &x) != GS_JNUM_OK || x < min || x > max)) {
        char kind[64];
        snprintf(kind, sizeof kind, "an integer in [%ld, %ld]", min, max);
        bad(p, parent, key, kind);
        x = 0;
    }
    return x;
}

/* "op" names the reply's op. */
static void check_op(pctx *p, const cJSON *h, int op)
{
    const cJSON *v = get(h, "op");
    if (!p->rc && !(cJSON_IsString(v) && !strcmp(v->valuestring, gs_proto_op_name(op)))) {
        char kind[32];
        snprintf(kind, sizeof kind, "\"%s\"", gs_proto_op_name(op));
        bad(p, NULL, "op", kind);
    }
}

static int start(pctx *p, const cJSON *h, const gs_jnum_doc *doc, int op, gs_err *err)
{
    p->doc = doc;
    p->op = gs_proto_op_name(op);
    p->err = err;
    p->rc = 0;
    if (!cJSON_IsObject(h))
        return p->rc = gs_err_set(err, GS_ECORRUPT, "%s reply: the header is not a JSON "
                                  "object", p->op);
    check_op(p, h, op);
    return p->rc;
}

/* ---- every reply ---- */

int gs_reply_code(const char *name)
{
    if (name)
        for (int code = GS_ECODE_MIN; code < 0; code++)
            if (strcmp(gs_strerror(code), name) == 0)
                return code;
    return GS_EIO;
}

int gs_reply_head_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_head *out,
                        gs_err *err)
{
    memset(out, 0, sizeof *out);
    out->message = "(no message)";
    if (!cJSON_IsObject(h))
        return gs_err_set(err, GS_ECORRUPT, "reply header from gsortd is not a JSON object");
    const cJSON *pb = get(h, "payload_bytes");
    if (pb && gs_jnum_u64(doc, pb, GS_PROTO_MAX_N, &out->payload_bytes) != GS_JNUM_OK) {
        out->payload_bytes = 0;
        return gs_err_set(err, GS_ECORRUPT, "reply payload_bytes is not a byte count");
    }
    out->ok = cJSON_IsTrue(get(h, "ok"));
    out->id = get(h, "id");
    out->close = cJSON_IsTrue(get(h, "close"));
    if (!out->ok) {
        const cJSON *e = get(h, "error"), *code = get(e, "code"), *msg = get(e, "message");
        out->code = gs_reply_code(cJSON_IsString(code) ? code->valuestring : NULL);
        if (cJSON_IsString(msg))
            out->message = msg->valuestring;
    }
    return 0;
}

cJSON *gs_reply_error_build(const cJSON *id, int op, int code, const char *msg, int closing,
                            gs_err *err)
{
    cJSON *r = gs_proto_reply_error(id, code, msg, closing);
    int ok = r != NULL;
    if (ok && op >= 0)
        ok = add_str(r, "op", gs_proto_op_name(op));
    return finish(r, ok, "error", err);
}

/* ---- sort ---- */

cJSON *gs_reply_sort_build(const gs_reply_sort *r, const cJSON *id, gs_err *err)
{
    cJSON *h = gs_proto_reply_ok(GS_OP_SORT, id);
    int ok = h != NULL;
    ok = ok && add_u64(h, "n", r->n);
    ok = ok && add_str(h, "dtype", r->narrow ? gs_narrow_row(r->narrow)->name
                                             : gs_dtype_name(r->dtype));
    ok = ok && add_str(h, "values", gs_payload_name(r->values));
    if (r->device >= 0) {
        cJSON *d = ok ? cJSON_AddObjectToObject(h, "device") : NULL;
        ok = add_num(d, "index", r->device);
        ok = ok && add_str(d, "name", r->device_name);
        ok = ok && add_str(d, "platform", r->device_platform);
    } else {
        ok = ok && cJSON_AddNullToObject(h, "device");
    }
    ok = ok && add_str(h, "algorithm", r->algorithm);
    ok = ok && add_item(h, "params", gs_params_to_cjson(&r->params));
    ok = ok && add_str(h, "plan", r->plan);
    if (r->fallback && r->fallback[0])
        ok = ok && add_str(h, "fallback", r->fallback);
    if (r->chunks)
        ok = ok && add_u64(h, "chunks", r->chunks);
    if (r->nparts) {
        cJSON *a = ok ? cJSON_AddArrayToObject(h, "split") : NULL;
        ok = a != NULL;
        for (unsigned i = 0; ok && i < r->nparts && i < GS_REPLY_PARTS_MAX; i++) {
            const gs_reply_part *p = &r->parts[i];
            cJSON *o = cJSON_CreateObject();
            ok = o && cJSON_AddItemToArray(a, o);
            ok = ok && (p->device >= 0 ? add_num(o, "device", p->device)
                                       : cJSON_AddNullToObject(o, "device") != NULL);
            ok = ok && add_str(o, "algorithm", p->algorithm);
            ok = ok && add_u64(o, "n", p->n);
            if (p->chunks)
                ok = ok && add_u64(o, "chunks", p->chunks);
            ok = ok && gs_jnum_add_ms(o, "ms", p->ms);
            ok = ok && gs_jnum_add_ms(o, "predicted_ms", p->predicted_ms);
        }
    }
    if (r->split_declined && r->split_declined[0])
        ok = ok && add_str(h, "split_declined", r->split_declined);
    cJSON *t = ok ? cJSON_AddObjectToObject(h, "times_ms") : NULL;
    ok = t && gs_jnum_add_ms(t, "queue", r->times_ms.queue);
    ok = ok && gs_jnum_add_ms(t, "receive", r->times_ms.receive);
    ok = ok && gs_jnum_add_ms(t, "upload", r->times_ms.upload);
    ok = ok && gs_jnum_add_ms(t, "sort", r->times_ms.sort);
    ok = ok && gs_jnum_add_ms(t, "download", r->times_ms.download);
    if (r->chunks || r->nparts)
        ok = ok && gs_jnum_add_ms(t, "merge", r->times_ms.merge);
    if (r->times_ms.pack > 0)
        ok = ok && gs_jnum_add_ms(t, "pack", r->times_ms.pack);
    ok = ok && gs_jnum_add_ms(t, "admit", r->times_ms.admit);
    ok = ok && gs_jnum_add_ms(t, "run", r->times_ms.run);
    ok = ok && gs_jnum_add_ms(t, "handback", r->times_ms.handback);
    if (r->device >= 0) {
        ok = ok && gs_jnum_add_ms(t, "setup", r->times_ms.setup);
        ok = ok && gs_jnum_add_ms(t, "enqueue", r->times_ms.enqueue);
        ok = ok && gs_jnum_add_ms(t, "wait", r->times_ms.wait);
        ok = ok && gs_jnum_add_ms(t, "writeback", r->times_ms.writeback);
        ok = ok && gs_jnum_add_ms(t, "release", r->times_ms.release);
    }
    ok = ok && gs_jnum_add_ms(t, "total", r->times_ms.total);
    return finish(h, ok, "sort", err);
}

int gs_reply_sort_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_sort *out,
                        gs_err *err)
{
    memset(out, 0, sizeof *out);
    out->device = -1;
    out->device_name = out->device_platform = out->algorithm = out->plan = out->fallback = "";
    out->split_declined = "";
    pctx p;
    if (start(&p, h, doc, GS_OP_SORT, err))
        return p.rc;
    out->n = get_uint(&p, h, NULL, "n", GS_PROTO_MAX_N);
    const char *dt = get_str(&p, h, NULL, "dtype");
    if (gs_dtype_parse(dt, &out->dtype) < 0) {
        if ((out->narrow = gs_narrow_find(dt)))
            out->dtype = GS_DT_U32;
        else
            bad(&p, NULL, "dtype", "a dtype");
    }
    if (gs_payload_parse(get_str(&p, h, NULL, "values"), &out->values) < 0)
        bad(&p, NULL, "values", "a values kind");
    const cJSON *d = get(h, "device");
    if (cJSON_IsObject(d)) {
        out->device = (int)get_uint(&p, d, "device", "index", INT_MAX);
        out->device_name = get_str(&p, d, "device", "name");
        out->device_platform = get_str(&p, d, "device", "platform");
    } else if (!cJSON_IsNull(d)) {
        bad(&p, NULL, "device", "null or an object");
    }
    out->algorithm = get_str(&p, h, NULL, "algorithm");
    const cJSON *ps = get_obj(&p, h, NULL, "params");
    if (ps && gs_params_from_cjson(ps, doc, "sort reply: ", &out->params, err) < 0) {
        if (err)
            err->code = GS_ECORRUPT;
        p.rc = GS_ECORRUPT;
    }
    out->plan = get_str(&p, h, NULL, "plan");
    const cJSON *fb = get(h, "fallback");
    if (fb)
        out->fallback = get_str(&p, h, NULL, "fallback");
    if (get(h, "chunks"))
        out->chunks = (unsigned)get_uint(&p, h, NULL, "chunks", UINT32_MAX);
    const cJSON *sp = get(h, "split");
    if (sp && !cJSON_IsArray(sp))
        bad(&p, NULL, "split", "an array");
    for (const cJSON *o = sp ? sp->child : NULL; o && out->nparts < GS_REPLY_PARTS_MAX;
         o = o->next) {
        gs_reply_part *q = &out->parts[out->nparts++];
        const cJSON *pd = get(o, "device");
        q->device = cJSON_IsNull(pd) ? -1 : (int)get_uint(&p, o, "split", "device", INT_MAX);
        q->algorithm = get_str(&p, o, "split", "algorithm");
        q->n = get_uint(&p, o, "split", "n", GS_PROTO_MAX_N);
        if (get(o, "chunks"))
            q->chunks = (unsigned)get_uint(&p, o, "split", "chunks", UINT32_MAX);
        q->ms = get_num(&p, o, "split", "ms");
        q->predicted_ms = get_num(&p, o, "split", "predicted_ms");
    }
    if (get(h, "split_declined"))
        out->split_declined = get_str(&p, h, NULL, "split_declined");
    const cJSON *t = get_obj(&p, h, NULL, "times_ms");
    out->times_ms.queue = get_num(&p, t, "times_ms", "queue");
    out->times_ms.receive = get_num(&p, t, "times_ms", "receive");
    out->times_ms.upload = get_num(&p, t, "times_ms", "upload");
    out->times_ms.sort = get_num(&p, t, "times_ms", "sort");
    out->times_ms.download = get_num(&p, t, "times_ms", "download");
    /* optional: spans a daemon before them did not write */
    static const struct { const char *name; size_t off; } opt[] = {
        { "merge", offsetof(gs_reply_times, merge) },
        { "admit", offsetof(gs_reply_times, admit) },
        { "run", offsetof(gs_reply_times, run) },
        { "handback", offsetof(gs_reply_times, handback) },
        { "setup", offsetof(gs_reply_times, setup) },
        { "enqueue", offsetof(gs_reply_times, enqueue) },
        { "wait", offsetof(gs_reply_times, wait) },
        { "writeback", offsetof(gs_reply_times, writeback) },
        { "release", offsetof(gs_reply_times, release) },
        { "pack", offsetof(gs_reply_times, pack) },
    };
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++)
        if (get(t, opt[i].name))
            *(double *)(void *)((char *)&out->times_ms + opt[i].off) =
                get_num(&p, t, "times_ms", opt[i].name);
    out->times_ms.total = get_num(&p, t, "times_ms", "total");
    return p.rc;
}

/* ---- info ---- */

cJSON *gs_reply_info_build(const gs_reply_info *r, const cJSON *id, gs_err *err)
{
    cJSON *h = gs_proto_reply_ok(GS_OP_INFO, id);
    int ok = h != NULL;
    ok = ok && add_str(h, "version", r->version);
    ok = ok && add_num(h, "protocol", GS_PROTO_VERSION);
    ok = ok && gs_jnum_add_long(h, "pid", r->pid);
    ok = ok && add_str(h, "socket", r->socket);
    if (r->db && r->db[0])
        ok = ok && add_str(h, "db", r->db);
    else
        ok = ok && cJSON_AddNullToObject(h, "db");
    ok = ok && add_bool(h, "db_ok", r->db_ok);
    cJSON *devs = ok ? cJSON_AddArrayToObject(h, "devices") : NULL;
    ok = devs != NULL;
    for (size_t i = 0; ok && i < r->ndevices; i++) {
        const gs_reply_info_dev *x = &r->devices[i];
        cJSON *d = cJSON_CreateObject();
        ok = d && cJSON_AddItemToArray(devs, d);
        if (!ok) {
            cJSON_Delete(d);
            break;
        }
        ok = add_num(d, "index", (double)i);
        ok = ok && add_str(d, "name", x->name);
        ok = ok && add_str(d, "platform", x->platform);
        ok = ok && add_str(d, "driver", x->driver);
        ok = ok && add_str(d, "type", x->type);
        ok = ok && add_bool(d, "enabled", x->enabled);
        ok = ok && add_bool(d, "tuned", x->tuned);
        ok = ok && gs_jnum_add_long(d, "plan_entries", x->plan_entries);
        ok = ok && add_u64(d, "queued", x->queued);
        ok = ok && add_bool(d, "healthy", x->healthy);
        ok = ok && add_bool(d, "ready", x->ready);
        ok = ok && add_u64(d, "lanes", x->lanes);
    }
    cJSON *host = ok ? cJSON_AddObjectToObject(h, "host") : NULL;
    ok = add_u64(host, "threads", r->host_threads);
    cJSON *al = ok ? cJSON_AddArrayToObject(h, "algorithms") : NULL;
    ok = al != NULL;
    for (size_t i = 0; ok && i < r->nalgorithms; i++) {
        cJSON *s = cJSON_CreateString(r->algorithms[i] ? r->algorithms[i] : "");
        ok = s && cJSON_AddItemToArray(al, s);
        if (!ok)
            cJSON_Delete(s);
    }
    cJSON *l = ok ? cJSON_AddObjectToObject(h, "limits") : NULL;
    ok = add_u64(l, "max_request_bytes", r->limits.max_request_bytes);
    ok = ok && add_u64(l, "max_clients", r->limits.max_clients);
    ok = ok && add_u64(l, "max_header_bytes", r->limits.max_header_bytes);
    ok = ok && add_num(l, "idle_timeout_s", r->limits.idle_timeout_s);
    ok = ok && add_num(l, "io_timeout_s", r->limits.io_timeout_s);
    cJSON *pe = ok ? cJSON_AddObjectToObject(h, "peer") : NULL;
    ok = pe && gs_jnum_add_long(pe, "pid", r->peer.pid);
    ok = ok && add_u64(pe, "uid", r->peer.uid);
    ok = ok && add_u64(pe, "gid", r->peer.gid);
    cJSON *xo = ok ? cJSON_AddArrayToObject(h, "crossover") : NULL;
    ok = xo != NULL;
    for (size_t i = 0; ok && i < r->ncrossover; i++) {
        const gs_reply_crossover *x = &r->crossover[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(xo, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = add_u64(o, "key_bits", (uint64_t)x->key_bits);
        ok = ok && add_str(o, "values", gs_payload_name(x->payload));
        ok = ok && add_bool(o, "stable", x->stable);
        if (x->local_below == UINT64_MAX)
            ok = ok && cJSON_AddNullToObject(o, "local_below");
        else
            ok = ok && add_u64(o, "local_below", x->local_below);
        ok = ok && add_num(o, "device", x->device);
    }
    return finish(h, ok, "info", err);
}

/* calloc for n elements (at least one, so a failure is always NULL). */
static void *alloc_n(pctx *p, size_t n, size_t size)
{
    if (p->rc)
        return NULL;
    void *a = calloc(n ? n : 1, size);
    if (!a)
        p->rc = gs_err_set(p->err, GS_ENOMEM, "%s reply: out of memory for %zu entries",
                           p->op, n);
    return a;
}

int gs_reply_info_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_info *out,
                        gs_err *err)
{
    memset(out, 0, sizeof *out);
    out->version = out->socket = "";
    pctx p;
    if (start(&p, h, doc, GS_OP_INFO, err))
        return p.rc;
    out->version = get_str(&p, h, NULL, "version");
    out->protocol = (int)get_uint(&p, h, NULL, "protocol", INT_MAX);
    out->pid = get_long(&p, h, NULL, "pid", 0, LONG_MAX);
    out->socket = get_str(&p, h, NULL, "socket");
    const cJSON *db = get(h, "db");
    if (cJSON_IsString(db))
        out->db = db->valuestring;
    else if (!cJSON_IsNull(db))
        bad(&p, NULL, "db", "null or a string");
    out->db_ok = get_bool(&p, h, NULL, "db_ok");

    const cJSON *devs = get_arr(&p, h, NULL, "devices");
    size_t n = devs ? (size_t)cJSON_GetArraySize(devs) : 0;
    out->devices = alloc_n(&p, n, sizeof *out->devices);
    const cJSON *d;
    cJSON_ArrayForEach(d, devs) {
        if (p.rc)
            break;
        size_t i = out->ndevices;
        char at[32];
        snprintf(at, sizeof at, "devices[%zu]", i);
        gs_reply_info_dev *x = &out->devices[i];
        if (!cJSON_IsObject(d)) {
            bad(&p, NULL, at, "an object");
            break;
        }
        if (get_uint(&p, d, at, "index", SIZE_MAX) != i)
            bad(&p, at, "index", "its position");
        x->name = get_str(&p, d, at, "name");
        x->platform = get_str(&p, d, at, "platform");
        x->driver = get_str(&p, d, at, "driver");
        x->type = get_str(&p, d, at, "type");
        x->enabled = get_bool(&p, d, at, "enabled");
        x->tuned = get_bool(&p, d, at, "tuned");
        x->plan_entries = get_long(&p, d, at, "plan_entries", 0, LONG_MAX);
        x->queued = (unsigned)get_uint(&p, d, at, "queued", UINT_MAX);
        x->healthy = get_bool(&p, d, at, "healthy");
        /* newer than the rest: optional */
        x->ready = !cJSON_HasObjectItem(d, "ready") || get_bool(&p, d, at, "ready");
        x->lanes = cJSON_HasObjectItem(d, "lanes") ? (unsigned)get_uint(&p, d, at, "lanes", 64)
                                                   : 1;
        out->ndevices++;
    }

    out->host_threads = (unsigned)get_uint(&p, get_obj(&p, h, NULL, "host"), "host", "threads",
                                           UINT_MAX);
    const cJSON *al = get_arr(&p, h, NULL, "algorithms");
    n = al ? (size_t)cJSON_GetArraySize(al) : 0;
    out->algorithms = alloc_n(&p, n, sizeof *out->algorithms);
    const cJSON *a;
    cJSON_ArrayForEach(a, al) {
        if (p.rc)
            break;
        if (!cJSON_IsString(a)) {
            char at[32];
            snprintf(at, sizeof at, "algorithms[%zu]", out->nalgorithms);
            bad(&p, NULL, at, "a string");
            break;
        }
        out->algorithms[out->nalgorithms++] = a->valuestring;
    }

    const cJSON *l = get_obj(&p, h, NULL, "limits");
    out->limits.max_request_bytes = get_uint(&p, l, "limits", "max_request_bytes", UINT64_MAX);
    out->limits.max_clients = (unsigned)get_uint(&p, l, "limits", "max_clients", UINT_MAX);
    out->limits.max_header_bytes = (uint32_t)get_uint(&p, l, "limits", "max_header_bytes",
                                                      UINT32_MAX);
    out->limits.idle_timeout_s = get_num(&p, l, "limits", "idle_timeout_s");
    out->limits.io_timeout_s = get_num(&p, l, "limits", "io_timeout_s");
    const cJSON *pe = get_obj(&p, h, NULL, "peer");
    out->peer.pid = get_long(&p, pe, "peer", "pid", 0, LONG_MAX);
    out->peer.uid = (unsigned)get_uint(&p, pe, "peer", "uid", UINT_MAX);
    out->peer.gid = (unsigned)get_uint(&p, pe, "peer", "gid", UINT_MAX);
    /* newer than the rest: optional */
    const cJSON *xo = cJSON_HasObjectItem(h, "crossover") ? get_arr(&p, h, NULL, "crossover")
                                                          : NULL;
    n = xo ? (size_t)cJSON_GetArraySize(xo) : 0;
    out->crossover = n ? alloc_n(&p, n, sizeof *out->crossover) : NULL;
    const cJSON *x;
    cJSON_ArrayForEach(x, xo) {
        if (p.rc)
            break;
        size_t i = out->ncrossover;
        char at[32];
        snprintf(at, sizeof at, "crossover[%zu]", i);
        gs_reply_crossover *c = &out->crossover[i];
        if (!cJSON_IsObject(x)) {
            bad(&p, NULL, at, "an object");
            break;
        }
        c->key_bits = (int)get_uint(&p, x, at, "key_bits", 64);
        if (!p.rc && gs_kw_find(c->key_bits) < 0)
            bad(&p, at, "key_bits", gs_kw_list());
        const char *v = get_str(&p, x, at, "values");
        if (!p.rc && gs_payload_parse(v, &c->payload) < 0)
            bad(&p, at, "values", "a values kind (none, u32, u64, idx32, idx64)");
        c->stable = get_bool(&p, x, at, "stable");
        const cJSON *lb = get(x, "local_below");
        c->local_below = cJSON_IsNull(lb) ? UINT64_MAX
                                          : get_uint(&p, x, at, "local_below", UINT64_MAX - 1);
        c->device = (int)get_long(&p, x, at, "device", -1, INT_MAX);
        out->ncrossover++;
    }
    if (p.rc)
        gs_reply_info_free(out);
    return p.rc;
}

void gs_reply_info_free(gs_reply_info *r)
{
    if (!r)
        return;
    free(r->devices);
    free(r->algorithms);
    free(r->crossover);
    r->devices = NULL;
    r->algorithms = NULL;
    r->crossover = NULL;
    r->ndevices = r->nalgorithms = r->ncrossover = 0;
}

/* ---- stats ---- */

cJSON *gs_reply_stats_build(const gs_reply_stats *r, const cJSON *id, gs_err *err)
{
    cJSON *h = gs_proto_reply_ok(GS_OP_STATS, id);
    int ok = h != NULL;
    ok = ok && add_num(h, "uptime_s", r->uptime_s);
    cJSON *cl = ok ? cJSON_AddObjectToObject(h, "clients") : NULL;
    ok = add_u64(cl, "current", r->clients.current);
    ok = ok && add_u64(cl, "total", r->clients.total);
    ok = ok && add_u64(cl, "rejected", r->clients.rejected);
    ok = ok && add_u64(cl, "denied", r->clients.denied);
    cJSON *rq = ok ? cJSON_AddObjectToObject(h, "requests") : NULL;
    ok = add_u64(rq, "total", r->requests.total);
    ok = ok && add_u64(rq, "ok", r->requests.ok);
    ok = ok && add_u64(rq, "errors", r->requests.errors);
    ok = ok && add_u64(rq, "fallbacks", r->requests.fallbacks);
    cJSON *bo = ok ? cJSON_AddObjectToObject(rq, "by_op") : NULL;
    ok = bo != NULL;
    for (int op = 0; ok && op < GS_OP_COUNT; op++)
        ok = add_u64(bo, gs_proto_op_name(op), r->requests.by_op[op]);
    cJSON *by = ok ? cJSON_AddObjectToObject(h, "bytes") : NULL;
    ok = add_u64(by, "in", r->bytes.in);
    ok = ok && add_u64(by, "out", r->bytes.out);
    cJSON *bl = ok ? cJSON_AddObjectToObject(h, "blocks") : NULL;
    ok = add_u64(bl, "mapped", r->blocks.mapped);
    ok = ok && add_u64(bl, "reused", r->blocks.reused);
    ok = ok && add_u64(bl, "pinned_bytes", r->blocks.pinned_bytes);
    ok = ok && add_u64(bl, "max_pinned_bytes", r->blocks.max_pinned_bytes);
    ok = ok && add_u64(bl, "pinned", r->blocks.pinned);
    ok = ok && add_u64(bl, "refused", r->blocks.refused);
    ok = ok && add_u64(bl, "kept_bytes", r->blocks.kept_bytes);
    ok = ok && add_u64(bl, "max_mapped_bytes", r->blocks.max_mapped_bytes);
    ok = ok && add_u64(bl, "max_mapped_bytes_per_client", r->blocks.max_mapped_bytes_per_client);
    ok = ok && add_u64(bl, "not_kept", r->blocks.not_kept);
    cJSON *me = ok ? cJSON_AddObjectToObject(h, "memory") : NULL;
    ok = add_u64(me, "max_memory", r->memory.max_memory);
    ok = ok && add_u64(me, "used", r->memory.used);
    ok = ok && add_u64(me, "peak", r->memory.peak);
    ok = ok && add_u64(me, "cached", r->memory.cached);
    ok = ok && add_u64(me, "waiting", r->memory.waiting);
    ok = ok && add_u64(me, "waited", r->memory.waited);
    ok = ok && add_u64(me, "refused", r->memory.refused);
    cJSON *dbo = ok ? cJSON_AddObjectToObject(h, "database") : NULL;
    ok = dbo && cJSON_AddBoolToObject(dbo, "open", r->database.open) != NULL;
    ok = ok && add_u64(dbo, "queries", r->database.queries);
    cJSON *rt = ok ? cJSON_AddArrayToObject(h, "routes") : NULL;
    ok = rt != NULL;
    for (size_t i = 0; ok && i < r->nroutes; i++) {
        const gs_reply_route *x = &r->routes[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(rt, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = add_num(o, "device", x->device);
        ok = ok && add_str(o, "algorithm", x->algorithm);
        ok = ok && add_u64(o, "count", x->count);
        ok = ok && add_u64(o, "errors", x->errors);
        ok = ok && add_num(o, "mean_ms", x->count ? x->total_ms / (double)x->count : 0);
        ok = ok && add_num(o, "max_ms", x->max_ms);
        ok = ok && add_num(o, "total_ms", x->total_ms);
        ok = ok && add_num(o, "queue_ms", x->queue_ms);
        ok = ok && add_num(o, "sort_ms", x->sort_ms);
        ok = ok && add_num(o, "queue_p50_ms", x->queue_p50_ms);
        ok = ok && add_num(o, "queue_p90_ms", x->queue_p90_ms);
        ok = ok && add_num(o, "queue_p99_ms", x->queue_p99_ms);
    }
    return finish(h, ok, "stats", err);
}

int gs_reply_stats_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_stats *out,
                         gs_err *err)
{
    memset(out, 0, sizeof *out);
    pctx p;
    if (start(&p, h, doc, GS_OP_STATS, err))
        return p.rc;
    out->uptime_s = get_num(&p, h, NULL, "uptime_s");
    const cJSON *cl = get_obj(&p, h, NULL, "clients");
    out->clients.current = (unsigned)get_uint(&p, cl, "clients", "current", UINT_MAX);
    out->clients.total = (unsigned long)get_uint(&p, cl, "clients", "total", ULONG_MAX);
    out->clients.rejected = (unsigned long)get_uint(&p, cl, "clients", "rejected", ULONG_MAX);
    out->clients.denied = (unsigned long)get_uint(&p, cl, "clients", "denied", ULONG_MAX);
    const cJSON *rq = get_obj(&p, h, NULL, "requests");
    out->requests.total = (unsigned long)get_uint(&p, rq, "requests", "total", ULONG_MAX);
    out->requests.ok = (unsigned long)get_uint(&p, rq, "requests", "ok", ULONG_MAX);
    out->requests.errors = (unsigned long)get_uint(&p, rq, "requests", "errors", ULONG_MAX);
    out->requests.fallbacks = (unsigned long)get_uint(&p, rq, "requests", "fallbacks",
                                                      ULONG_MAX);
    const cJSON *bo = get_obj(&p, rq, "requests", "by_op");
    for (int op = 0; op < GS_OP_COUNT; op++)
        out->requests.by_op[op] = (unsigned long)get_uint(&p, bo, "requests.by_op",
                                                          gs_proto_op_name(op), ULONG_MAX);
    const cJSON *by = get_obj(&p, h, NULL, "bytes");
    out->bytes.in = get_uint(&p, by, "bytes", "in", UINT64_MAX);
    out->bytes.out = get_uint(&p, by, "bytes", "out", UINT64_MAX);
    const cJSON *bl = get_obj(&p, h, NULL, "blocks");
    out->blocks.mapped = (unsigned long)get_uint(&p, bl, "blocks", "mapped", ULONG_MAX);
    out->blocks.reused = (unsigned long)get_uint(&p, bl, "blocks", "reused", ULONG_MAX);
    out->blocks.pinned_bytes = get_uint(&p, bl, "blocks", "pinned_bytes", UINT64_MAX);
    out->blocks.max_pinned_bytes = get_uint(&p, bl, "blocks", "max_pinned_bytes", UINT64_MAX);
    out->blocks.pinned = (unsigned long)get_uint(&p, bl, "blocks", "pinned", ULONG_MAX);
    out->blocks.refused = (unsigned long)get_uint(&p, bl, "blocks", "refused", ULONG_MAX);
    out->blocks.kept_bytes = get_uint(&p, bl, "blocks", "kept_bytes", UINT64_MAX);
    out->blocks.max_mapped_bytes = get_uint(&p, bl, "blocks", "max_mapped_bytes", UINT64_MAX);
    out->blocks.max_mapped_bytes_per_client = get_uint(&p, bl, "blocks",
                                                       "max_mapped_bytes_per_client",
                                                       UINT64_MAX);
    out->blocks.not_kept = (unsigned long)get_uint(&p, bl, "blocks", "not_kept", ULONG_MAX);
    const cJSON *me = get_obj(&p, h, NULL, "memory");
    out->memory.max_memory = get_uint(&p, me, "memory", "max_memory", UINT64_MAX);
    out->memory.used = get_uint(&p, me, "memory", "used", UINT64_MAX);
    out->memory.peak = get_uint(&p, me, "memory", "peak", UINT64_MAX);
    out->memory.cached = get_uint(&p, me, "memory", "cached", UINT64_MAX);
    out->memory.waiting = (unsigned)get_uint(&p, me, "memory", "waiting", UINT_MAX);
    out->memory.waited = (unsigned long)get_uint(&p, me, "memory", "waited", ULONG_MAX);
    out->memory.refused = (unsigned long)get_uint(&p, me, "memory", "refused", ULONG_MAX);
    const cJSON *dbo = get_obj(&p, h, NULL, "database");
    out->database.open = get_bool(&p, dbo, "database", "open");
    out->database.queries = (unsigned long)get_uint(&p, dbo, "database", "queries", ULONG_MAX);

    const cJSON *rt = get_arr(&p, h, NULL, "routes");
    size_t n = rt ? (size_t)cJSON_GetArraySize(rt) : 0;
    out->routes = alloc_n(&p, n, sizeof *out->routes);
    const cJSON *o;
    cJSON_ArrayForEach(o, rt) {
        if (p.rc)
            break;
        char at[32];
        snprintf(at, sizeof at, "routes[%zu]", out->nroutes);
        if (!cJSON_IsObject(o)) {
            bad(&p, NULL, at, "an object");
            break;
        }
        gs_reply_route *x = &out->routes[out->nroutes];
        x->device = (int)get_long(&p, o, at, "device", -1, INT_MAX);
        x->algorithm = get_str(&p, o, at, "algorithm");
        x->count = (unsigned long)get_uint(&p, o, at, "count", ULONG_MAX);
        x->errors = (unsigned long)get_uint(&p, o, at, "errors", ULONG_MAX);
        x->mean_ms = get_num(&p, o, at, "mean_ms");
        x->max_ms = get_num(&p, o, at, "max_ms");
        x->total_ms = get_num(&p, o, at, "total_ms");
        x->queue_ms = get_num(&p, o, at, "queue_ms");
        x->sort_ms = get_num(&p, o, at, "sort_ms");
        /* newer than the rest: optional */
        if (cJSON_HasObjectItem(o, "queue_p50_ms")) {
            x->queue_p50_ms = get_num(&p, o, at, "queue_p50_ms");
            x->queue_p90_ms = get_num(&p, o, at, "queue_p90_ms");
            x->queue_p99_ms = get_num(&p, o, at, "queue_p99_ms");
        }
        out->nroutes++;
    }
    if (p.rc)
        gs_reply_stats_free(out);
    return p.rc;
}

void gs_reply_stats_free(gs_reply_stats *r)
{
    if (!r)
        return;
    free(r->routes);
    r->routes = NULL;
    r->nroutes = 0;
}
