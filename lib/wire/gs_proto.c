/* The gsortd wire protocol (man/gsort-protocol.7): length-prefixed JSON
 * headers with raw payloads, the incremental reader that the daemon and
 * the clients drive from non-blocking reads, the op names, and the frame
 * every reply starts from. Request headers are parsed in gs_proto_req.c and
 * written in gs_proto_write.c; reply bodies are gs_reply.c's. Nothing here
 * trusts a number from the peer before checking it: the header buffer is
 * sized only after its length passed max_header, and a payload buffer grows
 * with the bytes that actually arrived. */
#include "config.h"
#include "gs_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RD_CHUNK (64u * 1024u)     /* first payload allocation and discard buffer */

/* ---- framing ---- */

void gs_proto_put_len(uint8_t out[GS_PROTO_LEN_BYTES], uint32_t hlen)
{
    out[0] = (uint8_t)(hlen >> 24);
    out[1] = (uint8_t)(hlen >> 16);
    out[2] = (uint8_t)(hlen >> 8);
    out[3] = (uint8_t)hlen;
}

uint32_t gs_proto_get_len(const uint8_t in[GS_PROTO_LEN_BYTES])
{
    return (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 |
           (uint32_t)in[3];
}

int gs_proto_frame(const cJSON *hdr, size_t max_header, uint8_t **out, size_t *len, gs_err *err)
{
    *out = NULL;
    *len = 0;
    if (!hdr)
        return gs_err_set(err, GS_EINVAL, "protocol: no header to frame");
    char *txt = cJSON_PrintUnformatted(hdr);
    if (!txt)
        return gs_err_set(err, GS_ENOMEM, "protocol: out of memory printing a header");
    size_t tl = strlen(txt);
    if (tl == 0 || tl > max_header || tl > UINT32_MAX) {
        free(txt);
        return gs_err_set(err, GS_ETOOBIG, "protocol: header of %zu bytes exceeds the "
                          "%zu-byte limit", tl, max_header);
    }
    uint8_t *buf = malloc(GS_PROTO_LEN_BYTES + tl);
    if (!buf) {
        free(txt);
        return gs_err_set(err, GS_ENOMEM, "protocol: out of memory framing a header");
    }
    gs_proto_put_len(buf, (uint32_t)tl);
    memcpy(buf + GS_PROTO_LEN_BYTES, txt, tl);
    free(txt);
    *out = buf;
    *len = GS_PROTO_LEN_BYTES + tl;
    return 0;
}

/* ---- incremental reader ---- */

void gs_proto_rd_init(gs_proto_rd *rd, size_t max_header)
{
    memset(rd, 0, sizeof *rd);
    rd->max_header = max_header ? max_header : GS_PROTO_DEFAULT_MAX_HEADER;
    rd->state = GS_RD_LEN;
}

void gs_proto_rd_reset(gs_proto_rd *rd)
{
    free(rd->hdr);
    free(rd->payload);
    rd->hdr = NULL;
    rd->payload = NULL;
    rd->state = GS_RD_LEN;
    memset(rd->len, 0, sizeof rd->len);
    rd->len_have = 0;
    rd->hlen = 0;
    rd->hdr_have = 0;
    rd->payload_len = rd->payload_have = 0;
    rd->payload_cap = 0;
    rd->discard = 0;
    rd->msg_bytes = 0;
    /* scratch stays: a connection that discards once tends to again */
}

void gs_proto_rd_free(gs_proto_rd *rd)
{
    gs_proto_rd_reset(rd);
    free(rd->scratch);
    rd->scratch = NULL;
}

/* Make room for at least one more payload byte: start at 64 KiB (or the
 * whole payload when smaller), then double, never past the declared length,
 * so memory follows what the peer actually sent. */
static int rd_grow(gs_proto_rd *rd, gs_err *err)
{
    uint64_t want = rd->payload_cap ? (uint64_t)rd->payload_cap * 2 : RD_CHUNK;
    if (want < rd->payload_cap)     /* doubling wrapped */
        want = rd->payload_len;
    if (want > rd->payload_len)
        want = rd->payload_len;
    if (want > SIZE_MAX)
        return gs_err_set(err, GS_ETOOBIG, "protocol: payload of %llu bytes exceeds "
                          "the address space", (unsigned long long)rd->payload_len);
    uint8_t *p = realloc(rd->payload, (size_t)want);
    if (!p)
        return gs_err_set(err, GS_ENOMEM, "protocol: out of memory for a %llu-byte "
                          "payload buffer", (unsigned long long)want);
    rd->payload = p;
    rd->payload_cap = (size_t)want;
    return 0;
}

int gs_proto_rd_space(gs_proto_rd *rd, void **buf, size_t *len, gs_err *err)
{
    *buf = NULL;
    *len = 0;
    switch (rd->state) {
    case GS_RD_LEN:
        *buf = rd->len + rd->len_have;
        *len = GS_PROTO_LEN_BYTES - rd->len_have;
        return 0;
    case GS_RD_HEADER:
        *buf = rd->hdr + rd->hdr_have;
        *len = rd->hlen - rd->hdr_have;
        return 0;
    case GS_RD_PAYLOAD: {
        uint64_t left = rd->payload_len - rd->payload_have;
        if (rd->discard) {
            if (!rd->scratch && !(rd->scratch = malloc(RD_CHUNK)))
                return gs_err_set(err, GS_ENOMEM, "protocol: out of memory for a "
                                  "discard buffer");
            *buf = rd->scratch;
            *len = left < RD_CHUNK ? (size_t)left : RD_CHUNK;
            return 0;
        }
        if (rd->payload_have == rd->payload_cap) {
            int rc = rd_grow(rd, err);
            if (rc < 0)
                return rc;
        }
        uint64_t room = rd->payload_cap - rd->payload_have;
        if (room > left)
            room = left;
        *buf = rd->payload + rd->payload_have;
        *len = (size_t)room;
        return 0;
    }
    default:    /* HEADER_DONE, DONE: the caller has to act first */
        return 0;
    }
}

int gs_proto_rd_commit(gs_proto_rd *rd, size_t n, gs_err *err)
{
    if (n == 0)
        return 0;
    switch (rd->state) {
    case GS_RD_LEN:
        if (n > GS_PROTO_LEN_BYTES - rd->len_have)
            break;
        rd->len_have += n;
        rd->msg_bytes += n;
        if (rd->len_have < GS_PROTO_LEN_BYTES)
            return 0;
        rd->hlen = gs_proto_get_len(rd->len);
        if (rd->hlen == 0)
            return gs_err_set(err, GS_EINVAL, "protocol: header length 0");
        if (rd->hlen > rd->max_header)
            return gs_err_set(err, GS_ETOOBIG, "protocol: header length %u exceeds the "
                              "%zu-byte limit", (unsigned)rd->hlen, rd->max_header);
        /* sized from hlen only now that it passed the limit */
        rd->hdr = malloc((size_t)rd->hlen + 1);
        if (!rd->hdr)
            return gs_err_set(err, GS_ENOMEM, "protocol: out of memory for a %u-byte "
                              "header", (unsigned)rd->hlen);
        rd->hdr_have = 0;
        rd->state = GS_RD_HEADER;
        return 0;
    case GS_RD_HEADER:
        if (n > rd->hlen - rd->hdr_have)
            break;
        rd->hdr_have += n;
        rd->msg_bytes += n;
        if (rd->hdr_have == rd->hlen) {
            rd->hdr[rd->hlen] = '\0';
            rd->state = GS_RD_HEADER_DONE;
        }
        return 0;
    case GS_RD_PAYLOAD:
        if (n > rd->payload_len - rd->payload_have ||
            (rd->discard && n > RD_CHUNK) ||
            (!rd->discard && n > rd->payload_cap - rd->payload_have))
            break;
        rd->payload_have += n;
        rd->msg_bytes += n;
        if (rd->payload_have == rd->payload_len)
            rd->state = GS_RD_DONE;
        return 0;
    default:
        break;
    }
    return gs_err_set(err, GS_EINVAL, "protocol: %zu bytes committed beyond the reader's "
                      "space (state %d)", n, rd->state);
}

int gs_proto_rd_feed(gs_proto_rd *rd, const void *data, size_t len, size_t *used, gs_err *err)
{
    const uint8_t *p = data;
    size_t off = 0;
    int rc = 0;
    while (off < len && rd->state != GS_RD_HEADER_DONE && rd->state != GS_RD_DONE) {
        void *buf;
        size_t room;
        if ((rc = gs_proto_rd_space(rd, &buf, &room, err)) < 0)
            break;
        size_t k = len - off < room ? len - off : room;
        memcpy(buf, p + off, k);
        if ((rc = gs_proto_rd_commit(rd, k, err)) < 0) {
            off += k;   /* they were consumed even though the message is bad */
            break;
        }
        off += k;
    }
    if (used)
        *used = off;
    return rc;
}

const char *gs_proto_rd_header(const gs_proto_rd *rd, size_t *len)
{
    if (rd->state < GS_RD_HEADER_DONE || !rd->hdr) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = rd->hlen;
    return rd->hdr;
}

void gs_proto_rd_expect(gs_proto_rd *rd, uint64_t bytes, int keep)
{
    if (rd->state != GS_RD_HEADER_DONE)
        return;
    rd->payload_len = bytes;
    rd->payload_have = 0;
    rd->discard = !keep;
    rd->state = bytes ? GS_RD_PAYLOAD : GS_RD_DONE;
}

void gs_proto_rd_drop(gs_proto_rd *rd)
{
    if (rd->state != GS_RD_PAYLOAD || rd->discard)
        return;
    free(rd->payload);
    rd->payload = NULL;
    rd->payload_cap = 0;
    rd->discard = 1;
}

uint8_t *gs_proto_rd_take(gs_proto_rd *rd, uint64_t *len)
{
    if (rd->state != GS_RD_DONE) {
        if (len)
            *len = 0;
        return NULL;
    }
    uint8_t *p = NULL;
    uint64_t n = 0;
    if (!rd->discard && rd->payload_len) {
        p = rd->payload;
        n = rd->payload_len;
        rd->payload = NULL;
    }
    if (len)
        *len = n;
    gs_proto_rd_reset(rd);
    return p;
}

/* ---- ops ---- */

static const char *const op_names[GS_OP_COUNT] = { "ping", "info", "stats", "sort" };

const char *gs_proto_op_name(int op)
{
    return op >= 0 && op < GS_OP_COUNT ? op_names[op] : "?";
}

/* ---- replies ---- */

static int add_id(cJSON *r, const cJSON *id)
{
    if (!id)
        return 1;
    cJSON *d = cJSON_Duplicate(id, 1);
    if (d && cJSON_AddItemToObject(r, "id", d))
        return 1;
    cJSON_Delete(d);
    return 0;
}

cJSON *gs_proto_reply_ok(int op, const cJSON *id)
{
    cJSON *r = cJSON_CreateObject();
    int ok = r != NULL;
    ok = ok && cJSON_AddNumberToObject(r, "v", GS_PROTO_VERSION);
    ok = ok && cJSON_AddTrueToObject(r, "ok");
    ok = ok && cJSON_AddStringToObject(r, "op", gs_proto_op_name(op));
    ok = ok && add_id(r, id);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

cJSON *gs_proto_reply_error(const cJSON *id, int code, const char *msg, int closing)
{
    cJSON *r = cJSON_CreateObject();
    int ok = r != NULL;
    ok = ok && cJSON_AddNumberToObject(r, "v", GS_PROTO_VERSION);
    ok = ok && cJSON_AddFalseToObject(r, "ok");
    ok = ok && add_id(r, id);
    cJSON *e = ok ? cJSON_AddObjectToObject(r, "error") : NULL;
    ok = e != NULL;
    ok = ok && cJSON_AddStringToObject(e, "code", gs_strerror(code));
    ok = ok && cJSON_AddStringToObject(e, "message", msg ? msg : "");
    if (closing)
        ok = ok && cJSON_AddTrueToObject(r, "close");
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}
