/* The gsortd wire protocol (man/gsort-protocol.7): length-prefixed JSON
 * headers with raw payloads, an incremental reader that the daemon and the
 * clients drive from non-blocking reads, the parsing and validation of
 * request headers (including every size a sort implies, overflow-checked),
 * the client-side sort header, and the common shape of replies. Nothing here
 * trusts a number from the peer before checking it: the header buffer is
 * sized only after its length passed max_header, and a payload buffer grows
 * with the bytes that actually arrived. */
#include "config.h"
#include "gs_proto.h"

#include <ctype.h>
#include <limits.h>
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

/* ---- requests ---- */

static const char *const op_names[GS_OP_COUNT] = { "ping", "info", "stats", "sort" };

const char *gs_proto_op_name(int op)
{
    return op >= 0 && op < GS_OP_COUNT ? op_names[op] : "?";
}

/* A peer string made safe to quote in a message: at most 40 printable
 * ASCII characters, anything else shown as '?'. */
static const char *clip(const char *s, char buf[48])
{
    size_t i = 0;
    for (; s && s[i] && i < 40; i++)
        buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (s && s[i])
        buf[i - 1] = buf[i - 2] = buf[i - 3] = '.';
    buf[i] = '\0';
    return buf;
}

/* A JSON value quoted for a message (its unformatted text, clipped). */
static const char *clip_json(const cJSON *v, char buf[48])
{
    char *t = cJSON_PrintUnformatted(v);
    clip(t ? t : "?", buf);
    free(t);
    return buf;
}

/* ---- exact integers ----
 * cJSON keeps a number only as a double, which rounds integers beyond 2^53:
 * 9007199254740993 reads as 9007199254740992. The header text still holds
 * the digits, and the k-th number of the parsed tree (in document order) is
 * the k-th number token of the text once strings are skipped, so every
 * integer field is read from its token, exactly. */

typedef struct jtext {
    const char *s;          /* the header text cJSON parsed */
    size_t len;
    const cJSON *root;
} jtext;

enum { JI_OK = 0, JI_NAN = -1, JI_FRAC = -2, JI_RANGE = -3 };

/* Count the numbers before `target` in document order (pre-order). */
static int num_index(const cJSON *it, const cJSON *target, size_t *k)
{
    for (; it; it = it->next) {
        if (it == target)
            return 1;
        if (cJSON_IsNumber(it))
            (*k)++;
        if (it->child && num_index(it->child, target, k))
            return 1;
    }
    return 0;
}

static int num_char(char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' ||
           ch == 'E';
}

/* The text of number item `v`: 0, or -1 when it cannot be found. In text
 * cJSON accepted, outside strings a number is the only thing that starts
 * with '-' or a digit. */
static int num_token(const jtext *jt, const cJSON *v, const char **tok, size_t *tlen)
{
    size_t k = 0;
    if (!jt || !cJSON_IsNumber(v) || !(v == jt->root || num_index(jt->root->child, v, &k)))
        return -1;
    const char *p = jt->s, *end = jt->s + jt->len;
    while (p < end) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *t = p;
            while (p < end && num_char(*p))
                p++;
            if (k-- == 0) {
                *tok = t;
                *tlen = (size_t)(p - t);
                return 0;
            }
        } else {
            p++;
        }
    }
    return -1;
}

/* The exact value of a number token, -?D*[.D*][(e|E)[+-]D+] (what cJSON
 * accepts): JI_OK with the sign and magnitude; JI_FRAC when it is not an
 * integer (1.5, 1e-3); JI_RANGE when its magnitude exceeds 2^64 - 1;
 * JI_NAN when it is not such a token. 1e3 and 2.0 are the integers 1000
 * and 2. */
static int token_int(const char *t, size_t n, int *neg, uint64_t *mag)
{
    size_t i = 0, nd = 0, nz = 0, digits = 0;   /* significant digits; zeros after the last */
    long frac = 0, exp = 0;
    int dot = 0;
    *neg = n > 0 && t[0] == '-';
    *mag = 0;
    i += (size_t)*neg;
    size_t m0 = i;
    for (; i < n && ((t[i] >= '0' && t[i] <= '9') || (t[i] == '.' && !dot)); i++) {
        if (t[i] == '.') {
            dot = 1;
            continue;
        }
        digits++;
        frac += dot;
        if (t[i] != '0') {
            nd += nz + 1;
            nz = 0;
        } else if (nd) {
            nz++;
        }
    }
    size_t m1 = i;
    if (!digits)
        return JI_NAN;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        int eneg = 0, edig = 0;
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            eneg = t[i++] == '-';
        for (; i < n && t[i] >= '0' && t[i] <= '9'; i++, edig++)
            if (exp < 100000)
                exp = exp * 10 + (t[i] - '0');
        if (!edig)
            return JI_NAN;
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return JI_NAN;
    if (nd == 0)
        return JI_OK;   /* zero, however written (-0, 0.000, 0e99) */
    /* value = (the nd significant digits) * 10^e10 */
    long e10 = exp - frac + (long)nz;
    if (e10 < 0)
        return JI_FRAC;   /* the last non-zero digit is after the point */
    if ((long)nd + e10 > 20)
        return JI_RANGE;
    uint64_t m = 0;
    size_t taken = 0;
    for (size_t j = m0; j < m1 && taken < nd; j++) {
        if (t[j] == '.' || (taken == 0 && t[j] == '0'))
            continue;
        if (__builtin_mul_overflow(m, 10, &m) || __builtin_add_overflow(m, (uint64_t)(t[j] - '0'), &m))
            return JI_RANGE;
        taken++;
    }
    for (long j = 0; j < e10; j++)
        if (__builtin_mul_overflow(m, 10, &m))
            return JI_RANGE;
    *mag = m;
    return JI_OK;
}

/* The exact integer value of number item `v` as sign and magnitude: JI_OK,
 * or why not. */
static int json_int(const jtext *jt, const cJSON *v, int *neg, uint64_t *mag)
{
    const char *t;
    size_t n;
    if (num_token(jt, v, &t, &n) < 0)
        return JI_NAN;
    return token_int(t, n, neg, mag);
}

/* An integer in [0, max]: JI_OK, or why not. */
static int json_u64(const jtext *jt, const cJSON *v, uint64_t max, uint64_t *out)
{
    int neg;
    uint64_t m;
    int rc = json_int(jt, v, &neg, &m);
    if (rc != JI_OK)
        return rc;
    if ((neg && m) || m > max)
        return JI_RANGE;
    *out = m;
    return JI_OK;
}

/* An integer that fits a long: JI_OK, or why not. */
static int json_long(const jtext *jt, const cJSON *v, long *out)
{
    int neg;
    uint64_t m;
    int rc = json_int(jt, v, &neg, &m);
    if (rc != JI_OK)
        return rc;
    if (neg ? m > (uint64_t)LONG_MAX + 1 : m > (uint64_t)LONG_MAX)
        return JI_RANGE;
    *out = neg ? (m == (uint64_t)LONG_MAX + 1 ? LONG_MIN : -(long)m) : (long)m;
    return JI_OK;
}

/* A value quoted for a message: a number as the peer wrote it, anything
 * else as JSON (both clipped). */
static const char *quote(const jtext *jt, const cJSON *v, char buf[48])
{
    const char *t;
    size_t n;
    if (num_token(jt, v, &t, &n) == 0) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(n < 63 ? n : 63), t);
        return clip(tmp, buf);
    }
    return clip_json(v, buf);
}

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
    if ((int)rq->dtype < 0 || rq->dtype >= GS_DT_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: dtype %d out of range", (int)rq->dtype);
    if ((int)rq->payload < 0 || rq->payload >= GS_PL_COUNT)
        return gs_err_set(err, GS_EINVAL, "sort: values kind %d out of range",
                          (int)rq->payload);
    uint64_t ks = gs_dtype_size(rq->dtype), vs = gs_payload_size(rq->payload);
    uint64_t kbytes, vbytes, in, out;
    if (rq->payload == GS_PL_IDX32 && rq->n > UINT32_MAX)
        return gs_err_set(err, GS_ETOOBIG, "sort: idx32 cannot index %llu elements "
                          "(use idx64)", (unsigned long long)rq->n);
    if (__builtin_mul_overflow(rq->n, ks, &kbytes) ||
        __builtin_mul_overflow(rq->n, vs, &vbytes) ||
        __builtin_add_overflow(kbytes, vbytes, &out))
        return gs_err_set(err, GS_ETOOBIG, "sort: %llu %s elements overflow 64 bits",
                          (unsigned long long)rq->n, gs_dtype_name(rq->dtype));
    /* idx values are produced by the daemon, never sent */
    in = kbytes + (rq->payload == GS_PL_U32 || rq->payload == GS_PL_U64 ? vbytes : 0);
    rq->in_bytes = in;
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
    return 0;
}

/* The sort-specific fields of a request. */
static int parse_sort(const jtext *jt, int has_pb, gs_proto_req *rq, int *fatal, gs_err *err)
{
    const cJSON *h = jt->root;
    char cb[48], cb2[48];
    const cJSON *v;

    v = field(h, "dtype");
    if (!v)
        return gs_err_set(err, GS_EINVAL, "sort: missing \"dtype\"");
    if (!cJSON_IsString(v) || gs_dtype_parse(v->valuestring, &rq->dtype) < 0)
        return gs_err_set(err, GS_EINVAL, "sort: \"dtype\" %s is not one of u32, i32, f32, "
                          "u64, i64, f64", clip_json(v, cb));

    v = field(h, "n");
    if (!v)
        return gs_err_set(err, GS_EINVAL, "sort: missing \"n\"");
    if (json_u64(jt, v, GS_PROTO_MAX_N, &rq->n) != JI_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"n\" %s is not an integer in [0, 2^53]",
                          quote(jt, v, cb));

    rq->payload = GS_PL_NONE;
    if ((v = field(h, "values")) &&
        (!cJSON_IsString(v) || gs_payload_parse(v->valuestring, &rq->payload) < 0))
        return gs_err_set(err, GS_EINVAL, "sort: \"values\" %s is not one of none, u32, "
                          "u64, idx32, idx64", clip_json(v, cb));

    if ((v = field(h, "order"))) {
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "asc"))
            rq->descending = 0;
        else if (cJSON_IsString(v) && !strcmp(v->valuestring, "desc"))
            rq->descending = 1;
        else
            return gs_err_set(err, GS_EINVAL, "sort: \"order\" %s is not \"asc\" or "
                              "\"desc\"", clip_json(v, cb));
    }

    if ((v = field(h, "stable"))) {
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"stable\" %s is not a boolean",
                              clip_json(v, cb));
        rq->stable = cJSON_IsTrue(v);
    }

    if ((v = field(h, "algorithm"))) {
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "auto") && !algo_name_ok(v->valuestring)))
            return gs_err_set(err, GS_EINVAL, "sort: \"algorithm\" %s is not \"auto\" or "
                              "a name of 1-31 characters [a-z0-9_]", clip_json(v, cb));
        if (strcmp(v->valuestring, "auto"))
            snprintf(rq->algorithm, sizeof rq->algorithm, "%s", v->valuestring);
    }

    if ((v = field(h, "params"))) {
        if (!rq->algorithm[0])
            return gs_err_set(err, GS_EINVAL, "sort: \"params\" needs an \"algorithm\" "
                              "(they tune one algorithm)");
        if (!cJSON_IsObject(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"params\" is not an object");
        const cJSON *p;
        cJSON_ArrayForEach(p, v) {
            const char *name = p->string ? p->string : "";
            long val = 0;
            int ji = json_long(jt, p, &val);
            if (ji == JI_RANGE)
                return gs_err_set(err, GS_EINVAL, "sort: parameter \"%s\" value %s is out "
                                  "of range: parameters are integers in [%ld, %ld]",
                                  clip(name, cb), quote(jt, p, cb2), LONG_MIN, LONG_MAX);
            if (ji != JI_OK)
                return gs_err_set(err, GS_EINVAL, "sort: parameter \"%s\" value %s is not "
                                  "an integer", clip(name, cb), quote(jt, p, cb2));
            if (strlen(name) >= GS_PARAM_NAME_MAX)
                return gs_err_set(err, GS_EINVAL, "sort: parameter name \"%s\" is longer "
                                  "than %d characters", clip(name, cb),
                                  GS_PARAM_NAME_MAX - 1);
            int rc = gs_params_set(&rq->params, name, val);
            if (rc == GS_ETOOBIG)
                return gs_err_set(err, GS_ETOOBIG, "sort: more than %d parameters",
                                  GS_MAX_PARAMS);
            if (rc < 0)
                return gs_err_set(err, GS_EINVAL, "sort: parameter name \"%s\" is not an "
                                  "identifier", clip(name, cb));
        }
        rq->has_params = 1;
    }

    if ((v = field(h, "device"))) {
        uint64_t d;
        if (json_u64(jt, v, INT_MAX, &d) != JI_OK)
            return gs_err_set(err, GS_EINVAL, "sort: \"device\" %s is not a device index "
                              "(an integer >= 0)", quote(jt, v, cb));
        rq->device = (int)d;
    }

    if ((v = field(h, "memfd"))) {
        if (!cJSON_IsBool(v))
            return gs_err_set(err, GS_EINVAL, "sort: \"memfd\" %s is not a boolean",
                              clip_json(v, cb));
        rq->memfd = cJSON_IsTrue(v);
    }

    const cJSON *ko = field(h, "keys_offset"), *vo = field(h, "values_offset");
    if ((ko || vo) && !rq->memfd)
        return gs_err_set(err, GS_EINVAL, "sort: \"%s\" is only meaningful with "
                          "\"memfd\": true", ko ? "keys_offset" : "values_offset");
    if (ko && json_u64(jt, ko, UINT64_MAX, &rq->keys_offset) != JI_OK)
        return gs_err_set(err, GS_EINVAL, "sort: \"keys_offset\" %s is not an integer "
                          "in [0, 2^64)", quote(jt, ko, cb));
    if (vo) {
        if (rq->payload == GS_PL_NONE)
            return gs_err_set(err, GS_EINVAL, "sort: \"values_offset\" without \"values\"");
        if (json_u64(jt, vo, UINT64_MAX, &rq->values_offset) != JI_OK)
            return gs_err_set(err, GS_EINVAL, "sort: \"values_offset\" %s is not an "
                              "integer in [0, 2^64)", quote(jt, vo, cb));
    } else if (rq->memfd && rq->payload != GS_PL_NONE) {
        uint64_t kb;
        if (__builtin_mul_overflow(rq->n, (uint64_t)gs_dtype_size(rq->dtype), &kb) ||
            __builtin_add_overflow(rq->keys_offset, kb, &rq->values_offset))
            return gs_err_set(err, GS_ETOOBIG, "sort: keys_offset %llu + %llu keys "
                              "overflow 64 bits", (unsigned long long)rq->keys_offset,
                              (unsigned long long)rq->n);
    }

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
        return gs_err_set(err, GS_EINVAL, "sort: %llu %s keys%s%s need payload_bytes "
                          "%llu, not %llu%s", (unsigned long long)rq->n,
                          gs_dtype_name(rq->dtype),
                          rq->payload == GS_PL_U32 || rq->payload == GS_PL_U64 ?
                          " + values " : "",
                          rq->payload == GS_PL_U32 || rq->payload == GS_PL_U64 ?
                          gs_payload_name(rq->payload) : "",
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

    const jtext jt = { hdr, len, h };
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
    if (pb && json_u64(&jt, pb, UINT64_C(1) << 53, &rq->payload_bytes) != JI_OK) {
        *fatal = 1;
        rc = gs_err_set(err, GS_EINVAL, "protocol: \"payload_bytes\" %s is not an integer "
                        "in [0, 2^53]", quote(&jt, pb, cb));
        goto out;
    }
    if (nomem) {
        rc = gs_err_set(err, GS_ENOMEM, "protocol: out of memory copying the request id");
        goto out;
    }

    v = field(h, "v");
    uint64_t ver = 0;
    if (!v || json_u64(&jt, v, UINT64_MAX, &ver) != JI_OK || ver != GS_PROTO_VERSION) {
        rc = gs_err_set(err, GS_EUNSUPPORTED, "protocol version %s not supported (this "
                        "daemon speaks %d)", v ? quote(&jt, v, cb) : "(missing)",
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
        if (!strcmp(v->valuestring, op_names[i]))
            rq->op = i;
    if (rq->op < 0) {
        rq->op = 0;
        rc = gs_err_set(err, GS_EINVAL, "protocol: unknown op %s (ping, info, stats, sort)",
                        clip_json(v, cb));
        goto out;
    }

    if (rq->op == GS_OP_SORT)
        rc = parse_sort(&jt, pb != NULL, rq, fatal, err);
    else if (rq->payload_bytes)
        rc = gs_err_set(err, GS_EINVAL, "protocol: op \"%s\" takes no payload, but "
                        "payload_bytes is %llu", op_names[rq->op],
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

/* A uint64 that a JSON number (a double) carries exactly. */
static int json_exact(uint64_t x)
{
    return x <= (UINT64_C(1) << 53);
}

/* An integer member written as its decimal digits, not through a double:
 * parameters and memfd offsets beyond 2^53 arrive exactly (the daemon reads
 * integers from the text). */
static int add_int(cJSON *obj, const char *name, int neg, uint64_t mag)
{
    char t[32];
    snprintf(t, sizeof t, "%s%llu", neg ? "-" : "", (unsigned long long)mag);
    return cJSON_AddRawToObject(obj, name, t) != NULL;
}

cJSON *gs_proto_sort_header(gs_proto_req *rq, gs_err *err)
{
    if (gs_proto_sort_sizes(rq, err) < 0)
        return NULL;
    if (rq->n > GS_PROTO_MAX_N) {
        gs_err_set(err, GS_ETOOBIG, "sort: n %llu exceeds 2^53",
                   (unsigned long long)rq->n);
        return NULL;
    }
    uint64_t dflt_vo = rq->keys_offset + rq->n * gs_dtype_size(rq->dtype);
    int want_vo = rq->memfd && rq->payload != GS_PL_NONE && rq->values_offset != dflt_vo;
    if (!rq->memfd && !json_exact(rq->in_bytes)) {
        gs_err_set(err, GS_ETOOBIG, "sort: an inline payload of %llu bytes exceeds 2^53",
                   (unsigned long long)rq->in_bytes);
        return NULL;
    }
    if (rq->has_params && !rq->algorithm[0]) {
        gs_err_set(err, GS_EINVAL, "sort: parameters need an algorithm");
        return NULL;
    }

    cJSON *h = cJSON_CreateObject();
    int ok = h != NULL;
    ok = ok && cJSON_AddNumberToObject(h, "v", GS_PROTO_VERSION);
    ok = ok && cJSON_AddStringToObject(h, "op", "sort");
    if (ok && rq->id) {
        cJSON *id = cJSON_Duplicate(rq->id, 1);
        ok = id != NULL;
        if (ok)
            cJSON_AddItemToObject(h, "id", id);
    }
    ok = ok && cJSON_AddStringToObject(h, "dtype", gs_dtype_name(rq->dtype));
    ok = ok && cJSON_AddNumberToObject(h, "n", (double)rq->n);
    if (rq->payload != GS_PL_NONE)
        ok = ok && cJSON_AddStringToObject(h, "values", gs_payload_name(rq->payload));
    if (rq->descending)
        ok = ok && cJSON_AddStringToObject(h, "order", "desc");
    if (rq->stable)
        ok = ok && cJSON_AddTrueToObject(h, "stable");
    if (rq->algorithm[0])
        ok = ok && cJSON_AddStringToObject(h, "algorithm", rq->algorithm);
    if (rq->has_params) {
        cJSON *ps = ok ? cJSON_AddObjectToObject(h, "params") : NULL;
        ok = ps != NULL;
        for (int i = 0; ok && i < rq->params.count; i++)
            ok = add_int(ps, rq->params.p[i].name, rq->params.p[i].value < 0,
                         rq->params.p[i].value < 0 ? -(uint64_t)rq->params.p[i].value
                                                   : (uint64_t)rq->params.p[i].value);
    }
    if (rq->device >= 0)
        ok = ok && cJSON_AddNumberToObject(h, "device", rq->device);
    if (rq->memfd) {
        ok = ok && cJSON_AddTrueToObject(h, "memfd");
        if (rq->keys_offset)
            ok = ok && add_int(h, "keys_offset", 0, rq->keys_offset);
        if (want_vo)
            ok = ok && add_int(h, "values_offset", 0, rq->values_offset);
    } else {
        ok = ok && cJSON_AddNumberToObject(h, "payload_bytes", (double)rq->in_bytes);
    }
    if (!ok) {
        cJSON_Delete(h);
        gs_err_set(err, GS_ENOMEM, "sort: out of memory building the request header");
        return NULL;
    }
    rq->payload_bytes = rq->memfd ? 0 : rq->in_bytes;
    return h;
}

/* ---- replies ---- */

static int add_id(cJSON *r, const cJSON *id)
{
    if (!id)
        return 1;
    cJSON *d = cJSON_Duplicate(id, 1);
    if (!d)
        return 0;
    cJSON_AddItemToObject(r, "id", d);
    return 1;
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
