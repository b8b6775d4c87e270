/* Request headers (gs_proto.h): parsing and checking what a client asks,
 * on the daemon's side. Every field is checked before it is used: the
 * version, the op, a sort's dtype, values, order, algorithm name,
 * parameters, device, memfd offsets, and every size the sort implies
 * (overflow-checked), with payload_bytes matched against them. Integers
 * are read exactly from the header text (gs_jnum.h). *fatal tells the
 * connection when the framing is lost and it must close. */
#include "config.h"
#include "gs_proto.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_jnum.h"
#include "gs_params.h"

static const cJSON *field(const cJSON *obj, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(obj, name);
}

static int algo_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 31)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

int gs_proto_sort_sizes(gs_proto_req *rq, gs_err *err)
{
    if (rq->lex.nkeys)
        return gs_proto_lex_sizes(rq, err);
    if ((int)rq->shape.dtype < 0 || rq->shape.dtype >= GS_DT_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: dtype %d out of range", (int)rq->shape.dtype);
    if ((int)rq->shape.payload < 0 || rq->shape.payload >= GS_PL_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: values kind %d out of range",
                          (int)rq->shape.payload);
    if (rq->narrow && !gs_narrow_row(rq->narrow))
        return gs_err_set(err, GS_EINVAL, "sort: narrow key type %d out of range", rq->narrow);
    uint64_t ks = gs_proto_key_bytes(rq), vs = gs_payload_size(rq->shape.payload);
    uint64_t kbytes, vbytes, in, out;
    if (rq->shape.payload == GS_PL_IDX32 && rq->n > UINT32_MAX)
        return gs_err_set(err, GS_ETOOBIG, "sort: idx32 cannot index %llu elements "
                          "(use idx64)", (unsigned long long)rq->n);
    if (__builtin_mul_overflow(rq->n, ks, &kbytes) ||
        __builtin_mul_overflow(rq->n, vs, &vbytes) ||
        __builtin_add_overflow(kbytes, vbytes, &out))
        return gs_err_set(err, GS_ETOOBIG, "sort: %llu %s elements overflow 64 bits",
                          (unsigned long long)rq->n, rq->narrow ? gs_narrow_row(rq->narrow)->name
                                                                : gs_dtype_name(rq->shape.dtype));
    /* idx values are produced by the daemon, never sent */
    in = kbytes + (rq->shape.payload == GS_PL_U32 || rq->shape.payload == GS_PL_U64 ? vbytes : 0);
    /* segments: S + 1 u64 offsets follow (S <= 2^53: no overflow) */
    if (rq->shape.segments > GS_PROTO_MAX_N)
        return gs_err_set(err, GS_ETOOBIG, "sort: %llu segments exceed 2^53",
                          (unsigned long long)rq->shape.segments);
    uint64_t obytes = rq->shape.segments ? 8 * (rq->shape.segments + 1) : 0;
    if (!rq->memfd && __builtin_add_overflow(in, obytes, &in))
        return gs_err_set(err, GS_ETOOBIG, "sort: %llu keys and %llu segments overflow 64 bits",
                          (unsigned long long)rq->n, (unsigned long long)rq->shape.segments);
    rq->in_bytes = in;
    if (rq->shape.topk) {       /* the reply carries k of each row (k <= the row, no overflow) */
        uint64_t rows = rq->shape.rows > 1 ? rq->shape.rows : 1;
        if (rq->shape.k > rq->n / rows)
            return gs_err_set(err, GS_EINVAL, "sort: \"topk\" %llu exceeds the %llu keys of "
                              "a row", (unsigned long long)rq->shape.k,
                              (unsigned long long)(rq->n / rows));
        out = rows * rq->shape.k * (ks + vs);
    }
    rq->out_bytes = out;
    rq->fd_bytes = 0;
    if (!rq->memfd)
        return 0;
    if (rq->keys_offset % ks)
        return gs_err_set(err, GS_EINVAL, "sort: keys_offset %llu is not a multiple of "
                          "the %llu-byte key size", (unsigned long long)rq->keys_offset,
                          (unsigned long long)ks);
    uint64_t kend, vend = 0;
    if (__builtin_add_overflow(rq->keys_offset, kbytes, &kend))
        return gs_err_set(err, GS_ETOOBIG, "sort: keys_offset %llu + %llu key bytes "
                          "overflow 64 bits", (unsigned long long)rq->keys_offset,
                          (unsigned long long)kbytes);
    if (vs) {
        if (rq->values_offset % vs)
            return gs_err_set(err, GS_EINVAL, "sort: values_offset %llu is not a multiple "
                              "of the %llu-byte value size",
                              (unsigned long long)rq->values_offset, (unsigned long long)vs);
        if (__builtin_add_overflow(rq->values_offset, vbytes, &vend))
            return gs_err_set(err, GS_ETOOBIG, "sort: values_offset %llu + %llu value "
                              "bytes overflow 64 bits",
                              (unsigned long long)rq->values_offset,
                              (unsigned long long)vbytes);
        /* sorting keys and values that share bytes would corrupt both */
        if (rq->n && rq->keys_offset < vend && rq->values_offset < kend)
            return gs_err_set(err, GS_EINVAL, "sort: keys [%llu, %llu) and values "
                              "[%llu, %llu) overlap in the memfd",
                              (unsigned long long)rq->keys_offset,
                              (unsigned long long)kend,
                              (unsigned long long)rq->values_offset,
                              (unsigned long long)vend);
    }
    rq->fd_bytes = kend > vend ? kend : vend;
    if (obytes) {
        uint64_t oo = rq->offsets_offset, oend;
        if (oo % 8)
            return gs_err_set(err, GS_EINVAL, "sort: offsets_offset %llu is not a multiple "
                              "of 8", (unsigned long long)oo);
        if (__builtin_add_overflow(oo, obytes, &oend))
            return gs_err_set(err, GS_ETOOBIG, "sort: offsets_offset %llu + %llu offset bytes "
                              "overflow 64 bits", (unsigned long long)oo,
                              (unsigned long long)obytes);
        /* the keys sorted in place would rewrite the offsets under the copy */
        if ((rq->n && oo < kend && rq->keys_offset < oend) ||
            (rq->n && vs && oo < vend && rq->values_offset < oend))
            return gs_err_set(err, GS_EINVAL, "sort: the segment offsets [%llu, %llu) "
                              "overlap the %s in the memfd", (unsigned long long)oo,
                              (unsigned long long)oend,
                              rq->n && oo < kend && rq->keys_offset < oend ? "keys" : "values");
        if (oend > rq->fd_bytes)
            rq->fd_bytes = oend;
    }
    return 0;
}

/* "begin_bit" and "end_bit" (either may be left out: 0 and the key's
 * width): sort by that range of each key's order code, stably; the whole
 * key's range is no range. */
static int parse_bits(const gs_jnum_doc *doc, const cJSON *bb, const cJSON *eb, int lex,
                      gs_proto_req *rq, gs_err *err)
{
    char cb[48];
    if (lex || rq->narrow || gs_dtype_row(rq->shape.dtype)->kind == GS_KIND_FLOAT)
        return gs_err_set(err, GS_EUNSUPPORTED, "sort: \"begin_bit\"/\"end_bit\" sort 32- "
                          "and 64-bit integer keys (u32, i32, u64, i64), not %s",
                          lex ? "a lexsort" : rq->narrow ? gs_narrow_row(rq->narrow)->name
                                                         : gs_dtype_name(rq->shape.dtype));
    const uint64_t kb = gs_dtype_size(rq->shape.dtype) * 8;
    uint64_t b = 0, e = kb;
    if (bb && gs_jnum_u64(doc, bb, kb - 1, &b) != GS_JNUM_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"begin_bit\" %s is not an integer in [0, "
                          "%llu]", gs_jnum_quote(doc, bb, cb), (unsigned long long)kb - 1);
    if (eb && (gs_jnum_u64(doc, eb, kb, &e) != GS_JNUM_OK || e == 0))
        return gs_err_set(err, GS_EINVAL, "sort: \"end_bit\" %s is not an integer in [1, "
                          "%llu]", gs_jnum_quote(doc, eb, cb), (unsigned long long)kb);
    if (b >= e)
        return gs_err_set(err, GS_EINVAL, "sort: \"begin_bit\" %llu is not below \"end_bit\" "
                          "%llu", (unsigned long long)b, (unsigned long long)e);
    if (rq->shape.rows || rq->shape.topk || rq->shape.segments)
        return gs_err_set(err, GS_EUNSUPPORTED, "sort: a bit range with \"%s\" is not "
                          "supported (it sorts one array)", rq->shape.rows ? "rows" :
                          rq->shape.topk ? "topk" : "segments");
    if (b == 0 && e == kb)
        return 0;       /* the whole key */
    rq->shape.begin_bit = (unsigned)b;
    rq->shape.end_bit = (unsigned)e;
    rq->shape.stable = 1;     /* keys equal in the range keep their order, as CUB's */
    return 0;
}

/* The sort-specific fields of a request. */
static int parse_sort(const gs_jnum_doc *doc, int has_pb, gs_proto_req *rq, int *fatal, gs_err *err)
{
    const cJSON *h = doc->root;
    char cb[48];
    const cJSON *v;

    const cJSON *lexv = field(h, "lexsort");
    v = field(h, "dtype");
    if (lexv && v)
        return gs_err_set(err, GS_EINVAL, "sort: \"dtype\" with \"lexsort\" (each key "
                          "has its own)");
    if (!v && !lexv)
        return gs_err_set(err, GS_EINVAL, "sort: missing \"dtype\"");
    if (v && (!cJSON_IsString(v) ||
              (gs_dtype_parse(v->valuestring, &rq->shape.dtype) < 0 &&
               !(rq->narrow = gs_narrow_find(v->valuestring)))))
        return gs_err_set(err, GS_EINVAL, "sort: \"dtype\" %s is not one of u32, i32, f32, "
                          "u64, i64, f64, %s", gs_jnum_clip_json(v, cb), gs_narrow_list());
    if (rq->narrow)
        rq->shape.dtype = GS_DT_U32;    /* the words 8- and 16-bit keys are sorted as */

    v = field(h, "n");
    if (!v)
        return gs_err_set(err, GS_EINVAL, "sort: missing \"n\"");
    if (gs_jnum_u64(doc, v, GS_PROTO_MAX_N, &rq->n) != GS_JNUM_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"n\" %s is not an integer in [0, 2^53]",
                          gs_jnum_quote(doc, v, cb));

    rq->shape.payload = GS_PL_NONE;
    if ((v = field(h, "values")) &&
        (!cJSON_IsString(v) || gs_payload_parse(v->valuestring, &rq->shape.payload) < 0))
        return gs_err_set(err, GS_EINVAL, "sort: \"values\" %s is not one of none, u32, "
                          "u64, idx32, idx64", gs_jnum_clip_json(v, cb));

    int lrc = lexv ? gs_proto_lex_parse(h, lexv, rq, err) : 0;
    if (lrc < 0)
        return lrc;

    if ((v = field(h, "order"))) {
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "asc"))
            rq->shape.descending = 0;
        else if (cJSON_IsString(v) && !strcmp(v->valuestring, "desc"))
            rq->shape.descending = 1;
        else
            return gs_err_set(err, GS_EINVAL, "sort: \"order\" %s is not \"asc\" or "
                              "\"desc\"", gs_jnum_clip_json(v, cb));
    }

    if ((v = field(h, "stable"))) {
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"stable\" %s is not a boolean",
                              gs_jnum_clip_json(v, cb));
        rq->shape.stable = cJSON_IsTrue(v);
    }

    if ((v = field(h, "rows"))) {
        if (gs_jnum_u64(doc, v, GS_PROTO_MAX_N, &rq->shape.rows) != GS_JNUM_OK ||
            rq->shape.rows == 0)
            return gs_err_set(err, GS_EINVAL, "sort: \"rows\" %s is not an integer in "
                              "[1, 2^53]", gs_jnum_quote(doc, v, cb));
        if (rq->n % rq->shape.rows)
            return gs_err_set(err, GS_EINVAL, "sort: \"rows\" %llu does not divide \"n\" "
                              "%llu into equal rows", (unsigned long long)rq->shape.rows,
                              (unsigned long long)rq->n);
    }

    if ((v = field(h, "topk"))) {
        if (gs_jnum_u64(doc, v, GS_PROTO_MAX_N, &rq->shape.k) != GS_JNUM_OK)
            return gs_err_set(err, GS_EINVAL, "sort: \"topk\" %s is not an integer in "
                              "[0, 2^53]", gs_jnum_quote(doc, v, cb));
        rq->shape.topk = 1;
    }
    if ((v = field(h, "sorted"))) {
        if (!rq->shape.topk)
            return gs_err_set(err, GS_EINVAL, "sort: \"sorted\" is only meaningful with "
                              "\"topk\"");
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"sorted\" %s is not a boolean",
                              gs_jnum_clip_json(v, cb));
        rq->shape.unsorted = !cJSON_IsTrue(v);
    }

    if ((v = field(h, "segments"))) {
        if (gs_jnum_u64(doc, v, GS_PROTO_MAX_N, &rq->shape.segments) != GS_JNUM_OK ||
            rq->shape.segments == 0)
            return gs_err_set(err, GS_EINVAL, "sort: \"segments\" %s is not an integer in "
                              "[1, 2^53]", gs_jnum_quote(doc, v, cb));
        if (field(h, "rows"))
            return gs_err_set(err, GS_EINVAL, "sort: \"segments\" and \"rows\" together (a "
                              "request has one or the other)");
        if (rq->shape.topk)
            return gs_err_set(err, GS_EUNSUPPORTED, "sort: \"topk\" of \"segments\" is not "
                              "supported");
    }


    const cJSON *bb = field(h, "begin_bit"), *eb = field(h, "end_bit");
    if (bb || eb) {
        int rc = parse_bits(doc, bb, eb, lexv != NULL, rq, err);
        if (rc < 0)
            return rc;
    }

    if ((v = field(h, "algorithm"))) {
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "auto") && !algo_name_ok(v->valuestring)))
            return gs_err_set(err, GS_EINVAL, "sort: \"algorithm\" %s is not \"auto\" or "
                              "a name of 1-31 characters [a-z0-9_]", gs_jnum_clip_json(v, cb));
        if (strcmp(v->valuestring, "auto"))
            snprintf(rq->algorithm, sizeof rq->algorithm, "%s", v->valuestring);
    }

    if ((v = field(h, "params"))) {
        if (!rq->algorithm[0])
            return gs_err_set(err, GS_EINVAL, "sort: \"params\" needs an \"algorithm\" "
                              "(they tune one algorithm)");
        if (!cJSON_IsObject(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"params\" is not an object");
        int prc = gs_params_from_cjson(v, doc, "sort: ", &rq->params, err);
        if (prc < 0)
            return prc;
        rq->has_params = 1;
    }

    if ((v = field(h, "device"))) {
        uint64_t d;
        if (gs_jnum_u64(doc, v, INT_MAX, &d) != GS_JNUM_OK)
            return gs_err_set(err, GS_EINVAL, "sort: \"device\" %s is not a device index "
                              "(an integer >= 0)", gs_jnum_quote(doc, v, cb));
        rq->device = (int)d;
    }

    if ((v = field(h, "split"))) {
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"split\" %s is not a boolean",
                              gs_jnum_clip_json(v, cb));
        rq->split = cJSON_IsTrue(v) ? 1 : -1;
    }

    if ((v = field(h, "memfd"))) {
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"memfd\" %s is not a boolean",
                              gs_jnum_clip_json(v, cb));
        rq->memfd = cJSON_IsTrue(v);
    }

    const cJSON *ko = field(h, "keys_offset"), *vo = field(h, "values_offset");
    if ((ko || vo) && !rq->memfd)
        return gs_err_set(err, GS_EINVAL, "sort: \"%s\" is only meaningful with "
                          "\"memfd\": true", ko ? "keys_offset" : "values_offset");
    if (ko && gs_jnum_u64(doc, ko, UINT64_MAX, &rq->keys_offset) != GS_JNUM_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"keys_offset\" %s is not an integer "
                          "in [0, 2^64)", gs_jnum_quote(doc, ko, cb));
    if (vo) {
        if (rq->shape.payload == GS_PL_NONE)
            return gs_err_set(err, GS_EINVAL, "sort: \"values_offset\" without \"values\"");
        if (gs_jnum_u64(doc, vo, UINT64_MAX, &rq->values_offset) != GS_JNUM_OK)
            return gs_err_set(err, GS_EINVAL, "sort: \"values_offset\" %s is not an "
                              "integer in [0, 2^64)", gs_jnum_quote(doc, vo, cb));
    } else if (rq->memfd && rq->shape.payload != GS_PL_NONE) {
        uint64_t kb = rq->lex_bytes;
        if ((!rq->lex.nkeys && __builtin_mul_overflow(rq->n, gs_proto_key_bytes(rq), &kb)) ||
            __builtin_add_overflow(rq->keys_offset, kb, &rq->values_offset))
            return gs_err_set(err, GS_ETOOBIG, "sort: keys_offset %llu + %llu keys "
                              "overflow 64 bits", (unsigned long long)rq->keys_offset,
                              (unsigned long long)rq->n);
    }

    const cJSON *oo = field(h, "offsets_offset");
    if (oo && (!rq->memfd || !rq->shape.segments))
        return gs_err_set(err, GS_EINVAL, "sort: \"offsets_offset\" is only meaningful with "
                          "\"segments\" and \"memfd\": true");
    if (rq->memfd && rq->shape.segments && !oo)
        return gs_err_set(err, GS_EINVAL, "sort: \"segments\" in a memfd need "
                          "\"offsets_offset\" (where the offsets lie)");
    if (oo && gs_jnum_u64(doc, oo, UINT64_MAX, &rq->offsets_offset) != GS_JNUM_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"offsets_offset\" %s is not an integer "
                          "in [0, 2^64)", gs_jnum_quote(doc, oo, cb));

    int rc = gs_proto_sort_sizes(rq, err);
    if (rc < 0)
        return rc;

    if (rq->memfd) {
        if (rq->payload_bytes)
            return gs_err_set(err, GS_EINVAL, "sort: a memfd request carries no inline "
                              "payload, but payload_bytes is %llu",
                              (unsigned long long)rq->payload_bytes);
    } else if (rq->payload_bytes != rq->in_bytes) {
        /* Without payload_bytes the client may well have sent the keys anyway:
         * where the next message starts is unknown. */
        if (!has_pb)
            *fatal = 1;
        if (rq->lex.nkeys)
            return gs_err_set(err, GS_EINVAL, "sort: a lexsort's %u key arrays of %llu rows "
                              "(each from a multiple of 8 bytes) need payload_bytes %llu, "
                              "not %llu%s", rq->lex.nkeys, (unsigned long long)rq->n,
                              (unsigned long long)rq->in_bytes,
                              (unsigned long long)rq->payload_bytes,
                              has_pb ? "" : " (payload_bytes missing)");
        return gs_err_set(err, GS_EINVAL, "sort: %llu %s keys%s%s%s need payload_bytes "
                          "%llu, not %llu%s", (unsigned long long)rq->n,
                          rq->narrow ? gs_narrow_row(rq->narrow)->name
                                     : gs_dtype_name(rq->shape.dtype),
                          rq->shape.payload == GS_PL_U32 || rq->shape.payload == GS_PL_U64 ?
                          " + values " : "",
                          rq->shape.payload == GS_PL_U32 || rq->shape.payload == GS_PL_U64 ?
                          gs_payload_name(rq->shape.payload) : "",
                          rq->shape.segments ? " + segment offsets" : "",
                          (unsigned long long)rq->in_bytes,
                          (unsigned long long)rq->payload_bytes,
                          has_pb ? "" : " (payload_bytes missing)");
    }
    return 0;
}

int gs_proto_parse_req(const char *hdr, size_t len, gs_proto_req *rq, int *fatal, gs_err *err)
{
    char cb[48];
    memset(rq, 0, sizeof *rq);
    rq->device = -1;
    *fatal = 0;

    const char *end = NULL;
    cJSON *h = hdr ? cJSON_ParseWithLengthOpts(hdr, len, &end, 0) : NULL;
    if (h && cJSON_IsObject(h)) {
        /* trailing bytes would mean the peer and we disagree on the framing */
        for (; end && end < hdr + len; end++)
            if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n')
                break;
        if (end && end < hdr + len) {
            cJSON_Delete(h);
            *fatal = 1;
            return gs_err_set(err, GS_EINVAL, "protocol: bytes after the header's JSON "
                              "object");
        }
    }
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        *fatal = 1;
        return gs_err_set(err, GS_EINVAL, "protocol: the header is not a JSON object");
    }

    const gs_jnum_doc doc = { hdr, len, h };
    int rc = 0, nomem = 0;
    const cJSON *v = field(h, "id");
    if (v && !(rq->id = cJSON_Duplicate(v, 1)))
        nomem = 1;

    /* Two payload_bytes would let two parsers (the daemon's, a proxy's)
     * disagree on where the next message starts. */
    const cJSON *pb = field(h, "payload_bytes"), *c;
    int npb = 0;
    cJSON_ArrayForEach(c, h)
        npb += c->string && !strcmp(c->string, "payload_bytes");
    if (npb > 1) {
        *fatal = 1;
        rc = gs_err_set(err, GS_EINVAL, "protocol: \"payload_bytes\" given %d times", npb);
        goto out;
    }
    if (pb && gs_jnum_u64(&doc, pb, UINT64_C(1) << 53, &rq->payload_bytes) != GS_JNUM_OK) {
        *fatal = 1;
        rc = gs_err_set(err, GS_EINVAL, "protocol: \"payload_bytes\" %s is not an integer "
                        "in [0, 2^53]", gs_jnum_quote(&doc, pb, cb));
        goto out;
    }
    if (nomem) {
        rc = gs_err_set(err, GS_ENOMEM, "protocol: out of memory copying the request id");
        goto out;
    }

    v = field(h, "v");
    uint64_t ver = 0;
    if (!v || gs_jnum_u64(&doc, v, UINT64_MAX, &ver) != GS_JNUM_OK || ver != GS_PROTO_VERSION) {
        rc = gs_err_set(err, GS_EUNSUPPORTED, "protocol version %s not supported (this "
                        "daemon speaks %d)", v ? gs_jnum_quote(&doc, v, cb) : "(missing)",
                        GS_PROTO_VERSION);
        goto out;
    }

    v = field(h, "op");
    if (!v) {
        rc = gs_err_set(err, GS_EINVAL, "protocol: missing \"op\"");
        goto out;
    }
    rq->op = -1;
    for (int i = 0; cJSON_IsString(v) && i < GS_OP_COUNT; i++)
        if (!strcmp(v->valuestring, gs_proto_op_name(i)))
            rq->op = i;
    if (rq->op < 0) {
        rq->op = 0;
        rc = gs_err_set(err, GS_EINVAL, "protocol: unknown op %s (ping, info, stats, sort)",
                        gs_jnum_clip_json(v, cb));
        goto out;
    }

    if (rq->op == GS_OP_SORT)
        rc = parse_sort(&doc, pb != NULL, rq, fatal, err);
    else if (rq->payload_bytes)
        rc = gs_err_set(err, GS_EINVAL, "protocol: op \"%s\" takes no payload, but "
                        "payload_bytes is %llu", gs_proto_op_name(rq->op),
                        (unsigned long long)rq->payload_bytes);
out:
    cJSON_Delete(h);
    return rc;
}

void gs_proto_req_free(gs_proto_req *rq)
{
    if (!rq)
        return;
    cJSON_Delete(rq->id);
    rq->id = NULL;
}

