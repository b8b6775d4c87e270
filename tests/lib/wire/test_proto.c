/* The wire protocol (gs_proto): length prefixes and frames, the incremental
 * reader fed whole streams, byte by byte and in random chunks (never reading
 * past a message, discarding exactly a refused payload, never allocating
 * from a declared length), request parsing of every dtype and values kind
 * and of every kind of bad header with its code and fatal flag, the client's
 * sort header parsed back, integers read exactly from the header text
 * (2^53+1, 2^64, negatives, 1e3, 1.5), the shape of replies, the reply
 * bodies built as the daemon does and parsed back as the clients do (and
 * malformed ones refused, naming the field), and a seeded fuzz loop over
 * mutated headers that must only ever return codes. Over 700 lines because
 * it is one table-driven tour of one codec, the wire format, both ways. */
#include "config.h"
#include "gs_jnum.h"
#include "gs_proto.h"
#include "gs_reply.h"
#include "tap.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    uint64_t x = rng_state;     /* xorshift64*: seeded, reproducible */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static size_t rng_below(size_t n)
{
    return n ? (size_t)(rng() % n) : 0;
}

/* ---- framing ---- */

static void test_len(void)
{
    uint8_t b[4];
    gs_proto_put_len(b, 0x01020304u);
    tap_ok(b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4,
           "put_len writes big-endian (%02x %02x %02x %02x)", b[0], b[1], b[2], b[3]);
    const uint32_t vals[] = { 0, 1, 255, 256, 65535, 65536, 0x7fffffffu, 0x80000000u,
                              UINT32_MAX };
    int bad = 0;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        gs_proto_put_len(b, vals[i]);
        if (gs_proto_get_len(b) != vals[i])
            bad++;
    }
    tap_ok(bad == 0, "length prefix round trip of 9 values (%d wrong)", bad);
    uint8_t hi[4] = { 0xff, 0, 0, 1 };
    tap_ok(gs_proto_get_len(hi) == 0xff000001u, "get_len reads the top byte first");
}

static void test_frame(void)
{
    gs_err err;
    gs_err_clear(&err);
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "v", 1);
    cJSON_AddStringToObject(h, "op", "ping");
    uint8_t *f = NULL;
    size_t fl = 0;
    const char *want = "{\"v\":1,\"op\":\"ping\"}";
    int rc = gs_proto_frame(h, GS_PROTO_DEFAULT_MAX_HEADER, &f, &fl, &err);
    tap_ok(rc == 0 && fl == 4 + strlen(want), "frame: %zu bytes (rc %d)", fl, rc);
    tap_ok(f && gs_proto_get_len(f) == strlen(want) &&
           !memcmp(f + 4, want, strlen(want)), "frame: prefix and unformatted header text");
    free(f);
    f = (uint8_t *)"sentinel";
    rc = gs_proto_frame(h, strlen(want) - 1, &f, &fl, &err);
    tap_ok(rc == GS_ETOOBIG && f == NULL && err.code == GS_ETOOBIG,
           "frame: a header over max_header is GS_ETOOBIG (%s)", gs_strerror(rc));
    rc = gs_proto_frame(h, strlen(want), &f, &fl, &err);
    tap_ok(rc == 0, "frame: a header of exactly max_header fits");
    free(f);
    cJSON_Delete(h);
}

/* ---- reader ---- */

#define NMSG 8
struct msg {
    char *hdr;
    size_t hlen;
    uint8_t *payload;
    size_t plen;
};

static struct msg msgs[NMSG];
static uint8_t *stream;
static size_t stream_len;
static size_t msg_total[NMSG];   /* prefix + header + payload */

static void build_stream(void)
{
    const size_t plens[NMSG] = { 0, 1, 13, 65536, 65537, 200000, 3, 0 };
    const size_t pads[NMSG] = { 0, 5, 60000, 17, 0, 300, 1, 2 };
    stream_len = 0;
    for (int i = 0; i < NMSG; i++) {
        char *pad = malloc(pads[i] + 1);
        memset(pad, 'a' + i, pads[i]);
        pad[pads[i]] = '\0';
        size_t cap = pads[i] + 128;
        msgs[i].hdr = malloc(cap);
        snprintf(msgs[i].hdr, cap, "{\"v\":1,\"op\":\"ping\",\"id\":%d,\"payload_bytes\":%zu,"
                 "\"pad\":\"%s\"}", i, plens[i], pad);
        free(pad);
        msgs[i].hlen = strlen(msgs[i].hdr);
        msgs[i].plen = plens[i];
        msgs[i].payload = malloc(plens[i] ? plens[i] : 1);
        for (size_t k = 0; k < plens[i]; k++)
            msgs[i].payload[k] = (uint8_t)rng();
        msg_total[i] = 4 + msgs[i].hlen + plens[i];
        stream_len += msg_total[i];
    }
    stream = malloc(stream_len);
    size_t o = 0;
    for (int i = 0; i < NMSG; i++) {
        gs_proto_put_len(stream + o, (uint32_t)msgs[i].hlen);
        memcpy(stream + o + 4, msgs[i].hdr, msgs[i].hlen);
        memcpy(stream + o + 4 + msgs[i].hlen, msgs[i].payload, msgs[i].plen);
        o += msg_total[i];
    }
}

static void free_stream(void)
{
    for (int i = 0; i < NMSG; i++) {
        free(msgs[i].hdr);
        free(msgs[i].payload);
    }
    free(stream);
}

static uint64_t header_payload_bytes(const char *h, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(h, len);
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(j, "payload_bytes");
    uint64_t v = cJSON_IsNumber(pb) ? (uint64_t)pb->valuedouble : UINT64_MAX;
    cJSON_Delete(j);
    return v;
}

/* At HEADER_DONE or DONE: check message `mi` and move the reader on.
 * Returns 1 when the message finished, 0 when it wants payload, -1 on a
 * mismatch. */
static int settle(gs_proto_rd *rd, int mi, int *bad_hdr, int *bad_payload)
{
    if (rd->state == GS_RD_HEADER_DONE) {
        size_t hl;
        const char *h = gs_proto_rd_header(rd, &hl);
        if (!h || hl != msgs[mi].hlen || memcmp(h, msgs[mi].hdr, hl) || h[hl] != '\0')
            (*bad_hdr)++;
        gs_proto_rd_expect(rd, header_payload_bytes(h, hl), 1);
    }
    if (rd->state == GS_RD_DONE) {
        uint64_t pl = 12345;
        uint8_t *p = gs_proto_rd_take(rd, &pl);
        if (pl != msgs[mi].plen || (pl && memcmp(p, msgs[mi].payload, pl)) ||
            (!pl && p != NULL))
            (*bad_payload)++;
        free(p);
        if (rd->state != GS_RD_LEN)
            (*bad_payload)++;
        return 1;
    }
    return 0;
}

/* Drive the reader through space/commit the way a connection does; `chunk`
 * 0 means random read sizes. */
static void run_space_commit(const char *mode, size_t chunk)
{
    gs_proto_rd rd;
    gs_err err;
    gs_err_clear(&err);
    gs_proto_rd_init(&rd, 0);
    size_t pos = 0;
    int mi = 0, bad_hdr = 0, bad_payload = 0, bad_space = 0, fail = 0;
    while (mi < NMSG) {
        if (rd.state == GS_RD_HEADER_DONE || rd.state == GS_RD_DONE) {
            mi += settle(&rd, mi, &bad_hdr, &bad_payload);
            continue;
        }
        void *buf;
        size_t room;
        if (gs_proto_rd_space(&rd, &buf, &room, &err) < 0 || pos >= stream_len) {
            fail = 1;
            break;
        }
        if (room == 0 || room > msg_total[mi] - rd.msg_bytes)
            bad_space++;
        size_t want = chunk ? chunk : 1 + rng_below(9000);
        size_t k = room < want ? room : want;
        if (k > stream_len - pos)
            k = stream_len - pos;
        memcpy(buf, stream + pos, k);
        pos += k;
        if (gs_proto_rd_commit(&rd, k, &err) < 0) {
            fail = 1;
            break;
        }
    }
    tap_ok(!fail && mi == NMSG && pos == stream_len,
           "space/commit %s: %d of %d messages, %zu of %zu bytes (%s)", mode, mi, NMSG,
           pos, stream_len, fail ? err.msg : "ok");
    tap_ok(bad_hdr == 0 && bad_payload == 0, "space/commit %s: every header and payload "
           "exact (%d headers, %d payloads wrong)", mode, bad_hdr, bad_payload);
    tap_ok(bad_space == 0, "space/commit %s: rd_space never empty nor past the current "
           "message (%d violations)", mode, bad_space);
    gs_proto_rd_free(&rd);
}

/* Drive the reader through feed with the stream cut into chunks. */
static void run_feed(const char *mode, size_t chunk)
{
    gs_proto_rd rd;
    gs_err err;
    gs_err_clear(&err);
    gs_proto_rd_init(&rd, 0);
    size_t pos = 0;
    int mi = 0, bad_hdr = 0, bad_payload = 0, fail = 0;
    while (pos < stream_len && !fail) {
        size_t c = chunk ? chunk : 1 + rng_below(100000);
        if (c > stream_len - pos)
            c = stream_len - pos;
        size_t end = pos + c;
        /* a chunk may hold the end of one message and the start of others */
        while (pos < end && !fail) {
            size_t used = 0;
            if (gs_proto_rd_feed(&rd, stream + pos, end - pos, &used, &err) < 0 ||
                used > end - pos)
                fail = 1;
            pos += used;
            int moved = 0;
            while (mi < NMSG && (rd.state == GS_RD_HEADER_DONE || rd.state == GS_RD_DONE)) {
                mi += settle(&rd, mi, &bad_hdr, &bad_payload);
                moved = 1;
            }
            if (!used && !moved)
                fail = 1;   /* stuck */
        }
    }
    tap_ok(!fail && mi == NMSG && rd.state == GS_RD_LEN && rd.msg_bytes == 0,
           "feed %s: %d of %d messages, reader back at the length (%s)", mode, mi, NMSG,
           fail ? err.msg : "ok");
    tap_ok(bad_hdr == 0 && bad_payload == 0, "feed %s: every header and payload exact "
           "(%d headers, %d payloads wrong)", mode, bad_hdr, bad_payload);
    gs_proto_rd_free(&rd);
}

static void test_reader_errors(void)
{
    gs_proto_rd rd;
    gs_err err;
    gs_err_clear(&err);
    size_t used;
    uint8_t zero[4] = { 0, 0, 0, 0 };

    gs_proto_rd_init(&rd, 0);
    tap_ok(rd.max_header == GS_PROTO_DEFAULT_MAX_HEADER, "rd_init(0) uses the default max "
           "header (%zu)", rd.max_header);
    int rc = gs_proto_rd_feed(&rd, zero, 4, &used, &err);
    tap_ok(rc == GS_EINVAL && used == 4, "header length 0 is GS_EINVAL (%s)",
           gs_strerror(rc));
    gs_proto_rd_free(&rd);

    gs_proto_rd_init(&rd, 100);
    uint8_t b[4];
    gs_proto_put_len(b, 101);
    rc = gs_proto_rd_feed(&rd, b, 4, &used, &err);
    tap_ok(rc == GS_ETOOBIG && rd.hdr == NULL, "header length max+1 is GS_ETOOBIG with "
           "nothing allocated (%s)", gs_strerror(rc));
    gs_proto_rd_free(&rd);

    gs_proto_rd_init(&rd, 0);
    gs_proto_put_len(b, UINT32_MAX);
    rc = gs_proto_rd_feed(&rd, b, 4, &used, &err);
    tap_ok(rc == GS_ETOOBIG && rd.hdr == NULL, "header length 4 GiB-1 is GS_ETOOBIG with "
           "nothing allocated");
    gs_proto_rd_free(&rd);

    gs_proto_rd_init(&rd, 100);
    gs_proto_put_len(b, 100);
    rc = gs_proto_rd_feed(&rd, b, 4, &used, &err);
    tap_ok(rc == 0 && rd.state == GS_RD_HEADER, "header length == max is accepted");
    void *buf;
    size_t room;
    gs_proto_rd_space(&rd, &buf, &room, &err);
    tap_ok(room == 100, "header space is the whole header (%zu)", room);
    rc = gs_proto_rd_commit(&rd, 101, &err);
    tap_ok(rc == GS_EINVAL && rd.hdr_have == 0, "committing beyond the space is refused");
    gs_proto_rd_free(&rd);

    /* header text of 3 bytes arriving one at a time: state only flips at the end */
    gs_proto_rd_init(&rd, 0);
    gs_proto_put_len(b, 2);
    gs_proto_rd_feed(&rd, b, 4, &used, &err);
    gs_proto_rd_feed(&rd, "{", 1, &used, &err);
    tap_ok(rd.state == GS_RD_HEADER && gs_proto_rd_header(&rd, NULL) == NULL,
           "no header before it is complete");
    gs_proto_rd_feed(&rd, "}xyz", 4, &used, &err);
    size_t hl;
    const char *h = gs_proto_rd_header(&rd, &hl);
    tap_ok(used == 1 && rd.state == GS_RD_HEADER_DONE && h && hl == 2 && !strcmp(h, "{}"),
           "feed stops at HEADER_DONE (used %zu) with a NUL-terminated header", used);
    gs_proto_rd_space(&rd, &buf, &room, &err);
    tap_ok(room == 0 && buf == NULL, "no space in HEADER_DONE");
    gs_proto_rd_expect(&rd, 0, 1);
    uint64_t pl = 99;
    uint8_t *p = gs_proto_rd_take(&rd, &pl);
    tap_ok(rd.state == GS_RD_LEN && p == NULL && pl == 0,
           "expect(0) goes to DONE; take gives no payload and resets");
    gs_proto_rd_free(&rd);
}

static size_t put_msg(uint8_t *out, const char *hdr, const uint8_t *pl, size_t plen)
{
    size_t hl = strlen(hdr);
    gs_proto_put_len(out, (uint32_t)hl);
    memcpy(out + 4, hdr, hl);
    if (plen)
        memcpy(out + 4 + hl, pl, plen);
    return 4 + hl + plen;
}

static void test_discard(void)
{
    const size_t big = 100000;
    uint8_t *junk = malloc(big);
    memset(junk, 0xab, big);
    uint8_t five[5] = { 1, 2, 3, 4, 5 };
    uint8_t *s = malloc(big + 200);
    size_t n = put_msg(s, "{\"v\":1,\"op\":\"sort\"}", junk, big);
    n += put_msg(s + n, "{\"v\":1,\"op\":\"ping\",\"payload_bytes\":5}", five, 5);

    gs_proto_rd rd;
    gs_err err;
    gs_err_clear(&err);
    gs_proto_rd_init(&rd, 0);
    size_t used, off = 0;
    gs_proto_rd_feed(&rd, s, n, &used, &err);
    off += used;
    gs_proto_rd_expect(&rd, big, 0);
    int rc = gs_proto_rd_feed(&rd, s + off, n - off, &used, &err);
    tap_ok(rc == 0 && used == big && rd.state == GS_RD_DONE,
           "expect(keep=0) consumes exactly the declared %zu bytes (used %zu)", big, used);
    tap_ok(rd.payload == NULL && rd.payload_cap == 0 && rd.scratch != NULL,
           "a discarded payload is never buffered");
    off += used;
    uint64_t pl = 7;
    uint8_t *p = gs_proto_rd_take(&rd, &pl);
    tap_ok(p == NULL && pl == 0, "take after a discard gives nothing");
    gs_proto_rd_feed(&rd, s + off, n - off, &used, &err);
    off += used;
    size_t hl;
    const char *h = gs_proto_rd_header(&rd, &hl);
    tap_ok(h && !strcmp(h, "{\"v\":1,\"op\":\"ping\",\"payload_bytes\":5}"),
           "the next message's header parses after the discard");
    gs_proto_rd_expect(&rd, 5, 1);
    gs_proto_rd_feed(&rd, s + off, n - off, &used, &err);
    off += used;
    p = gs_proto_rd_take(&rd, &pl);
    tap_ok(p && pl == 5 && !memcmp(p, five, 5) && off == n,
           "and its payload is exact, ending the stream");
    free(p);
    gs_proto_rd_free(&rd);
    free(s);
    free(junk);
}

static void test_growth(void)
{
    gs_proto_rd rd;
    gs_err err;
    gs_err_clear(&err);
    gs_proto_rd_init(&rd, 0);
    uint8_t s[64];
    size_t used, n = put_msg(s, "{}", NULL, 0);
    gs_proto_rd_feed(&rd, s, n, &used, &err);
    gs_proto_rd_expect(&rd, UINT64_C(1) << 30, 1);
    uint8_t ten[10] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 };
    int rc = gs_proto_rd_feed(&rd, ten, 10, &used, &err);
    tap_ok(rc == 0 && used == 10 && rd.payload_have == 10 && rd.state == GS_RD_PAYLOAD,
           "1 GiB declared, 10 bytes fed: still reading the payload");
    tap_ok(rd.payload_cap > 0 && rd.payload_cap <= 64 * 1024,
           "payload buffer is %zu bytes, not 1 GiB", rd.payload_cap);
    uint8_t *more = calloc(1, 70000);
    gs_proto_rd_feed(&rd, more, 70000, &used, &err);
    tap_ok(used == 70000 && rd.payload_cap == 128 * 1024 && !memcmp(rd.payload, ten, 10),
           "70000 more bytes double it to %zu, keeping the first bytes", rd.payload_cap);
    free(more);
    gs_proto_rd_free(&rd);

    gs_proto_rd_init(&rd, 0);
    gs_proto_rd_feed(&rd, s, n, &used, &err);
    gs_proto_rd_expect(&rd, 100, 1);
    void *buf;
    size_t room;
    gs_proto_rd_space(&rd, &buf, &room, &err);
    tap_ok(room == 100 && rd.payload_cap == 100,
           "a 100-byte payload gets exactly 100 bytes (cap %zu, space %zu)",
           rd.payload_cap, room);
    gs_proto_rd_free(&rd);
}

/* ---- requests ---- */

static int parse(const char *txt, gs_proto_req *rq, int *fatal, gs_err *err)
{
    gs_err_clear(err);
    *fatal = -1;
    return gs_proto_parse_req(txt, strlen(txt), rq, fatal, err);
}

static int id_is(const gs_proto_req *rq, const char *want)
{
    return rq->id && cJSON_IsString(rq->id) && !strcmp(rq->id->valuestring, want);
}

static void test_parse_valid(void)
{
    gs_proto_req rq;
    gs_err err;
    int fatal;
    char h[512];
    int bad_inline = 0, bad_memfd = 0, bad_fatal = 0;

    for (int d = 0; d < GS_DT_COUNT; d++)
        for (int p = 0; p < GS_PL_COUNT; p++) {
            uint64_t n = 7, ks = gs_dtype_size((gs_dtype)d), vs = gs_payload_size((gs_payload)p);
            uint64_t in = n * ks + (p == GS_PL_U32 || p == GS_PL_U64 ? n * vs : 0);
            snprintf(h, sizeof h, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"%s\",\"n\":%" PRIu64
                     ",\"values\":\"%s\",\"payload_bytes\":%" PRIu64 "}",
                     gs_dtype_name((gs_dtype)d), n, gs_payload_name((gs_payload)p), in);
            int rc = parse(h, &rq, &fatal, &err);
            if (rc || fatal)
                bad_fatal++;
            if (rc || rq.op != GS_OP_SORT || rq.shape.dtype != (gs_dtype)d ||
                rq.shape.payload != (gs_payload)p || rq.n != n || rq.in_bytes != in ||
                rq.out_bytes != n * (ks + vs) || rq.fd_bytes != 0 || rq.memfd ||
                rq.payload_bytes != in) {
                bad_inline++;
                tap_diag("inline %s/%s: rc %d %s", gs_dtype_name((gs_dtype)d),
                         gs_payload_name((gs_payload)p), rc, err.msg);
            }
            gs_proto_req_free(&rq);

            /* memfd: keys at 16, values right after (the default) */
            n = 8;
            snprintf(h, sizeof h, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"%s\",\"n\":%" PRIu64
                     ",\"values\":\"%s\",\"memfd\":true,\"keys_offset\":16}",
                     gs_dtype_name((gs_dtype)d), n, gs_payload_name((gs_payload)p));
            rc = parse(h, &rq, &fatal, &err);
            if (rc || fatal)
                bad_fatal++;
            if (rc || !rq.memfd || rq.keys_offset != 16 ||
                (vs && rq.values_offset != 16 + n * ks) ||
                rq.fd_bytes != 16 + n * ks + n * vs || rq.out_bytes != n * (ks + vs) ||
                rq.payload_bytes != 0) {
                bad_memfd++;
                tap_diag("memfd %s/%s: rc %d %s fd_bytes %" PRIu64, gs_dtype_name((gs_dtype)d),
                         gs_payload_name((gs_payload)p), rc, err.msg, rq.fd_bytes);
            }
            gs_proto_req_free(&rq);
        }
    tap_ok(bad_inline == 0, "inline sort: all 6 dtypes x 5 values kinds parse with the "
           "right sizes (%d wrong)", bad_inline);
    tap_ok(bad_memfd == 0, "memfd sort: all 30 kinds parse with the right fd_bytes and "
           "default values_offset (%d wrong)", bad_memfd);
    tap_ok(bad_fatal == 0, "and none of them set *fatal or fail (%d)", bad_fatal);

    int rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":12}",
                   &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.shape.payload == GS_PL_NONE && !rq.shape.descending && !rq.shape.stable &&
           rq.algorithm[0] == '\0' && !rq.has_params && rq.device == -1 && !rq.memfd &&
           rq.id == NULL, "sort defaults: values none, asc, unstable, auto, any device, "
           "inline, no id");
    gs_proto_req_free(&rq);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":3,\"split\":true,"
               "\"payload_bytes\":12}", &rq, &fatal, &err);
    int split_yes = rc == 0 ? rq.split : 0;
    gs_proto_req_free(&rq);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":3,\"split\":false,"
               "\"payload_bytes\":12}", &rq, &fatal, &err);
    int split_no = rc == 0 ? rq.split : 0;
    gs_proto_req_free(&rq);
    tap_ok(split_yes == 1 && split_no == -1, "\"split\": true asks for a split (%d), false "
           "forbids it (%d)", split_yes, split_no);

    rc = parse("{\"v\":1,\"op\":\"sort\",\"id\":{\"k\":[1,2]},\"dtype\":\"f64\",\"n\":2,"
               "\"values\":\"idx64\",\"order\":\"desc\",\"stable\":true,\"algorithm\":"
               "\"radix\",\"params\":{\"radix_bits\":4,\"wg_size\":256,\"neg\":-3},"
               "\"device\":2,\"payload_bytes\":16,\"future_field\":[true]}",
               &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.shape.descending && rq.shape.stable && !strcmp(rq.algorithm, "radix") &&
           rq.has_params && rq.params.count == 3 &&
           gs_params_get(&rq.params, "radix_bits", 0) == 4 &&
           gs_params_get(&rq.params, "wg_size", 0) == 256 &&
           gs_params_get(&rq.params, "neg", 0) == -3 && rq.device == 2 &&
           rq.in_bytes == 16 && rq.out_bytes == 32,
           "sort with every field (unknown fields ignored): %s", rc ? err.msg : "ok");
    char *idtxt = rq.id ? cJSON_PrintUnformatted(rq.id) : NULL;
    tap_ok(idtxt && !strcmp(idtxt, "{\"k\":[1,2]}"), "an object id is copied whole (%s)",
           idtxt ? idtxt : "NULL");
    free(idtxt);
    gs_proto_req_free(&rq);
    tap_ok(rq.id == NULL, "req_free clears the id");

    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":0,\"algorithm\":\"auto\"}",
               &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.algorithm[0] == '\0' && rq.in_bytes == 0,
           "\"auto\" is the daemon's plan; n 0 needs no payload_bytes");
    gs_proto_req_free(&rq);

    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":4,\"values\":\"u64\","
               "\"memfd\":true,\"keys_offset\":64,\"values_offset\":0}", &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.values_offset == 0 && rq.fd_bytes == 80,
           "memfd with values before the keys: fd_bytes %" PRIu64, rq.fd_bytes);
    gs_proto_req_free(&rq);

    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"f64\",\"n\":9007199254740992,"
               "\"memfd\":true}", &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.n == GS_PROTO_MAX_N && rq.fd_bytes == GS_PROTO_MAX_N * 8,
           "n = 2^53 is accepted (%s)", rc ? err.msg : "ok");
    gs_proto_req_free(&rq);

    const char *ops[] = { "ping", "info", "stats" };
    int bad_ops = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(h, sizeof h, "{\"v\":1,\"op\":\"%s\",\"id\":\"x%d\",\"payload_bytes\":0}",
                 ops[i], i);
        char want[16];
        snprintf(want, sizeof want, "x%d", i);
        rc = parse(h, &rq, &fatal, &err);
        if (rc || rq.op != i || !id_is(&rq, want) || strcmp(gs_proto_op_name(rq.op), ops[i]))
            bad_ops++;
        gs_proto_req_free(&rq);
    }
    tap_ok(bad_ops == 0, "ping, info and stats parse with their ids (%d wrong)", bad_ops);

    rc = parse("  {\"v\":1.0,\"op\":\"ping\",\"id\":null}\r\n ", &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.id && cJSON_IsNull(rq.id),
           "surrounding whitespace is fine; v 1.0 is 1; a null id is kept as null");
    gs_proto_req_free(&rq);
}

struct bad_case {
    const char *hdr;
    int code;
    int fatal;
    int has_id;      /* the header is an object with "id":"E" */
};

#define S "{\"v\":1,\"op\":\"sort\",\"id\":\"E\","
static const struct bad_case bad_cases[] = {
    { "not json", GS_EINVAL, 1, 0 },
    { "", GS_EINVAL, 1, 0 },
    { "[1,2,{\"id\":\"E\"}]", GS_EINVAL, 1, 0 },
    { "\"a string\"", GS_EINVAL, 1, 0 },
    { "{\"v\":1,\"op\":\"ping\",\"id\":\"E\"", GS_EINVAL, 1, 0 },
    { "{\"v\":1,\"op\":\"ping\",\"id\":\"E\"}{}", GS_EINVAL, 1, 0 },
    { "{\"v\":1,\"op\":\"ping\",\"id\":\"E\"}x", GS_EINVAL, 1, 0 },
    { "{\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":2,\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":0,\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":\"1\",\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":1.5,\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":true,\"op\":\"ping\",\"id\":\"E\"}", GS_EUNSUPPORTED, 0, 1 },
    { "{\"v\":1,\"id\":\"E\"}", GS_EINVAL, 0, 1 },
    { "{\"v\":1,\"op\":\"frobnicate\",\"id\":\"E\"}", GS_EINVAL, 0, 1 },
    { "{\"v\":1,\"op\":\"PING\",\"id\":\"E\"}", GS_EINVAL, 0, 1 },
    { "{\"v\":1,\"op\":3,\"id\":\"E\"}", GS_EINVAL, 0, 1 },
    { "{\"v\":1,\"op\":\"ping\",\"id\":\"E\",\"payload_bytes\":5}", GS_EINVAL, 0, 1 },
    { "{\"v\":1,\"op\":\"stats\",\"id\":\"E\",\"payload_bytes\":-1}", GS_EINVAL, 1, 1 },
    { "{\"v\":1,\"op\":\"ping\",\"id\":\"E\",\"payload_bytes\":0,\"payload_bytes\":9}",
      GS_EINVAL, 1, 1 },
    /* payload_bytes is checked before v: framing first */
    { "{\"v\":9,\"op\":\"ping\",\"id\":\"E\",\"payload_bytes\":\"x\"}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":\"x\"}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":12.5}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":1e300}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":9007199254740994}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":null}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":[12]}", GS_EINVAL, 1, 1 },
    /* inline keys without payload_bytes: did they follow or not? */
    { S "\"dtype\":\"u32\",\"n\":3}", GS_EINVAL, 1, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":8}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":\"u32\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":\"idx32\",\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"n\":3,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u128\",\"n\":3,\"payload_bytes\":6}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":4,\"n\":3,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"U32\",\"n\":3,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":-1,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":1.5,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":\"3\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":1152921504606846976,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":9007199254740994,\"memfd\":true}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":null,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    /* n * 8 + an offset near 2^64 overflows: keys, explicit values, default values */
    { S "\"dtype\":\"f64\",\"n\":9007199254740992,\"memfd\":true,"
      "\"keys_offset\":18446744073709549568}", GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u64\",\"n\":9007199254740992,\"values\":\"u64\",\"memfd\":true,"
      "\"values_offset\":18446744073709549568}", GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u64\",\"n\":9007199254740992,\"values\":\"idx64\",\"memfd\":true,"
      "\"keys_offset\":18374686479671623680}", GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":1,\"memfd\":true,\"keys_offset\":18446744073709551616}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":4294967297,\"values\":\"idx32\",\"memfd\":true}",
      GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"memfd\":true,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"memfd\":true,\"keys_offset\":2}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":\"u64\",\"memfd\":true,\"values_offset\":4}",
      GS_EINVAL, 0, 1 },
    /* the default values_offset after 3 u32 keys is 12: not u64-aligned */
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":\"u64\",\"memfd\":true}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":4,\"values\":\"u32\",\"memfd\":true,\"values_offset\":8}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"memfd\":true,\"values_offset\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"memfd\":true,\"keys_offset\":-4}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"keys_offset\":0,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"memfd\":1}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":\"idx16\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"values\":null,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"order\":\"up\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"stable\":\"yes\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"stable\":1,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"split\":1,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    /* rows: an integer from 1 that divides n */
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":0,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":4,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":-2,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":1.5,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":\"2\",\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    /* segments: an integer from 1, not with rows or topk; S + 1 u64 offsets
     * inline after the keys, or at an 8-aligned offsets_offset in a memfd
     * (required there, clear of the keys and values) */
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":0,\"payload_bytes\":32}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":-1,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":\"2\",\"payload_bytes\":48}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":9007199254740993,\"payload_bytes\":24}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"rows\":2,\"payload_bytes\":48}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"topk\":1,\"payload_bytes\":48}",
      GS_EUNSUPPORTED, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"offsets_offset\":24,"
      "\"payload_bytes\":48}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"offsets_offset\":24,\"memfd\":true}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"memfd\":true}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"memfd\":true,\"offsets_offset\":28}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"memfd\":true,\"offsets_offset\":16}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"values\":\"u64\",\"segments\":2,\"memfd\":true,"
      "\"values_offset\":32,\"offsets_offset\":64}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"memfd\":true,"
      "\"offsets_offset\":18446744073709551608}", GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"segments\":2,\"memfd\":true,\"offsets_offset\":-8}",
      GS_EINVAL, 0, 1 },
    /* topk: an integer up to a row's length; sorted only with it, a boolean */
    { S "\"dtype\":\"u32\",\"n\":6,\"rows\":2,\"topk\":4,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"topk\":-1,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"topk\":1.5,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"topk\":\"2\",\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"sorted\":false,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":6,\"topk\":2,\"sorted\":0,\"payload_bytes\":24}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"split\":\"yes\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"device\":-1,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"device\":0.5,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"device\":\"0\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"params\":{\"a\":1},\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"auto\",\"params\":{\"a\":1},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":[1],"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"a\":1.5},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"a\":\"4\"},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"a\":1e300},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"a\":1,\"b\":2,"
      "\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9},\"payload_bytes\":12}",
      GS_ETOOBIG, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":"
      "{\"abcdefghijabcdefghijabcdefghijab\":1},\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"1x\":1},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix\",\"params\":{\"\":1},"
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"Radix\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"radix-sort\",\"payload_bytes\":12}",
      GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"../etc\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"\",\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":\"abcdefghijabcdefghijabcdefghijab\","
      "\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
    { S "\"dtype\":\"u32\",\"n\":3,\"algorithm\":7,\"payload_bytes\":12}", GS_EINVAL, 0, 1 },
};
#undef S

static void test_parse_bad(void)
{
    gs_proto_req rq;
    gs_err err;
    int fatal, pb_bad = 0;
    size_t nc = sizeof bad_cases / sizeof bad_cases[0];
    for (size_t i = 0; i < nc; i++) {
        const struct bad_case *c = &bad_cases[i];
        int rc = parse(c->hdr, &rq, &fatal, &err);
        int id_ok = c->has_id ? id_is(&rq, "E") : rq.id == NULL;
        tap_ok(rc == c->code && fatal == c->fatal && id_ok && err.code == rc && err.msg[0],
               "bad %zu: %s -> %s fatal %d%s (%s)", i, c->hdr, gs_strerror(rc), fatal,
               id_ok ? "" : " [id wrong]", err.msg);
        /* non-fatal: the declared payload_bytes must be there to skip */
        const char *pb = strstr(c->hdr, "\"payload_bytes\":");
        if (!c->fatal && pb && rq.payload_bytes != strtoull(pb + 16, NULL, 10))
            pb_bad++;
        gs_proto_req_free(&rq);
    }
    tap_ok(pb_bad == 0, "every non-fatal error leaves the declared payload_bytes to skip "
           "(%d did not)", pb_bad);

    int rc = parse("{\"v\":2,\"op\":\"ping\"}", &rq, &fatal, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "protocol version 2 not supported") &&
           strstr(err.msg, "this daemon speaks 1"), "version message: %s", err.msg);
    gs_proto_req_free(&rq);
    rc = parse("{\"op\":\"ping\"}", &rq, &fatal, &err);
    tap_ok(rc == GS_EUNSUPPORTED && strstr(err.msg, "protocol version") &&
           strstr(err.msg, "missing"), "missing version message: %s", err.msg);
    gs_proto_req_free(&rq);

    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":8}",
               &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && fatal == 0 && rq.payload_bytes == 8,
           "payload_bytes mismatch keeps the declared 8 bytes so they can be skipped");
    gs_proto_req_free(&rq);

    /* long and non-printable peer strings are clipped in messages */
    char h[400];
    snprintf(h, sizeof h, "{\"v\":1,\"op\":\"%s\\u0001\"}",
             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    rc = parse(h, &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && strlen(err.msg) < 120 && !strchr(err.msg, '\x01'),
           "an unknown op is quoted clipped: %s", err.msg);
    gs_proto_req_free(&rq);

    /* the length given is what counts, not a NUL */
    const char nul[] = "{\"v\":1,\"op\":\"ping\"}\0garbage";
    gs_err_clear(&err);
    rc = gs_proto_parse_req(nul, sizeof nul - 1, &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && fatal == 1, "a NUL and bytes after the object are fatal");
    gs_proto_req_free(&rq);
    rc = gs_proto_parse_req(nul, strlen(nul), &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.op == GS_OP_PING, "the same header cut at its length parses");
    gs_proto_req_free(&rq);
}

/* 8- and 16-bit keys (gs_narrow.h): every type by its word and numpy's
 * name, inline and in a memfd, sized by its own width; the reply names
 * the type; the shapes they do not take yet refused. */
/* "begin_bit"/"end_bit": a range of integer keys, stable; the whole key
 * no range; bad ranges and the shapes a range does not take refused */
static void test_bits(void)
{
    gs_proto_req rq;
    gs_err err;
    int fatal;
    const char *pre = "{\"v\":1,\"op\":\"sort\",\"n\":4,";
    char h[512];
    snprintf(h, sizeof h, "%s\"dtype\":\"i64\",\"begin_bit\":3,\"end_bit\":40,"
             "\"payload_bytes\":32}", pre);
    int rc = parse(h, &rq, &fatal, &err);
    int ok = rc == 0 && rq.shape.begin_bit == 3 && rq.shape.end_bit == 40 && rq.shape.stable;
    gs_proto_req_free(&rq);
    snprintf(h, sizeof h, "%s\"dtype\":\"u32\",\"end_bit\":16,\"payload_bytes\":16}", pre);
    rc = parse(h, &rq, &fatal, &err);
    ok = ok && rc == 0 && rq.shape.begin_bit == 0 && rq.shape.end_bit == 16;
    gs_proto_req_free(&rq);
    snprintf(h, sizeof h, "%s\"dtype\":\"u32\",\"begin_bit\":20,\"payload_bytes\":16}", pre);
    rc = parse(h, &rq, &fatal, &err);
    ok = ok && rc == 0 && rq.shape.begin_bit == 20 && rq.shape.end_bit == 32;
    gs_proto_req_free(&rq);
    snprintf(h, sizeof h, "%s\"dtype\":\"u64\",\"begin_bit\":0,\"end_bit\":64,"
             "\"payload_bytes\":32}", pre);
    rc = parse(h, &rq, &fatal, &err);
    ok = ok && rc == 0 && !gs_shape_has_bits(&rq.shape) && !rq.shape.stable;
    gs_proto_req_free(&rq);
    tap_ok(ok, "begin_bit/end_bit: a range (either end left out: 0 or the key's width), "
           "stable; the whole key is no range");

    static const struct { const char *tail; int code; const char *needle; } bad[] = {
        { "\"dtype\":\"f32\",\"end_bit\":8,\"payload_bytes\":16}", GS_EUNSUPPORTED, "f32" },
        { "\"dtype\":\"u16\",\"end_bit\":8,\"payload_bytes\":8}", GS_EUNSUPPORTED, "u16" },
        { "\"dtype\":\"u32\",\"begin_bit\":8,\"end_bit\":8,\"payload_bytes\":16}", GS_EINVAL,
          "not below" },
        { "\"dtype\":\"u32\",\"end_bit\":33,\"payload_bytes\":16}", GS_EINVAL, "[1, 32]" },
        { "\"dtype\":\"u64\",\"begin_bit\":64,\"payload_bytes\":32}", GS_EINVAL, "[0, 63]" },
        { "\"dtype\":\"u32\",\"begin_bit\":-1,\"payload_bytes\":16}", GS_EINVAL, "begin_bit" },
        { "\"dtype\":\"u32\",\"end_bit\":\"8\",\"payload_bytes\":16}", GS_EINVAL, "end_bit" },
        { "\"dtype\":\"u32\",\"end_bit\":8,\"rows\":2,\"payload_bytes\":16}", GS_EUNSUPPORTED,
          "rows" },
        { "\"dtype\":\"i32\",\"end_bit\":8,\"topk\":2,\"payload_bytes\":16}", GS_EUNSUPPORTED,
          "topk" },
    };
    int nbad = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(h, sizeof h, "%s%s", pre, bad[i].tail);
        rc = parse(h, &rq, &fatal, &err);
        if (rc == bad[i].code && !fatal && strstr(err.msg, bad[i].needle))
            nbad++;
        else
            tap_diag("%s: rc %d fatal %d: %s", h, rc, fatal, err.msg);
        gs_proto_req_free(&rq);
    }
    rc = parse("{\"v\":1,\"op\":\"sort\",\"n\":2,\"lexsort\":[{\"dtype\":\"u32\"}],"
               "\"values\":\"idx32\",\"end_bit\":4,\"payload_bytes\":8}", &rq, &fatal, &err);
    nbad += rc == GS_EUNSUPPORTED && !fatal && strstr(err.msg, "lexsort") != NULL;
    gs_proto_req_free(&rq);
    tap_ok(nbad == 10, "bit ranges refused: float and 8/16-bit keys, a lexsort, empty and "
           "out-of-width ranges, non-integers, with rows or topk; the connection kept (%d of 10)",
           nbad);
}

static void test_narrow(void)
{
    gs_proto_req rq;
    gs_err err;
    int fatal, bad = 0;
    char h[512];
    for (int t = GS_NW_NONE + 1; t < GS_NW_COUNT; t++) {
        const gs_narrow_info *r = gs_narrow_row(t);
        for (int np = 0; np < 2; np++) {
            uint64_t n = 7, in = n * r->bytes + n * 8;
            snprintf(h, sizeof h, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"%s\",\"n\":%" PRIu64
                     ",\"values\":\"u64\",\"payload_bytes\":%" PRIu64 "}",
                     np ? r->np_name : r->name, n, in);
            int rc = parse(h, &rq, &fatal, &err);
            if (rc || rq.narrow != t || rq.shape.dtype != GS_DT_U32 || rq.in_bytes != in ||
                rq.out_bytes != in || gs_proto_key_bytes(&rq) != r->bytes) {
                bad++;
                tap_diag("inline %s: rc %d %s", np ? r->np_name : r->name, rc, err.msg);
            }
            gs_proto_req_free(&rq);
        }
        /* memfd: 5 keys at 2, u32 values after them, 4-aligned by the client */
        uint64_t voff = (2 + 5 * r->bytes + 3) / 4 * 4;
        snprintf(h, sizeof h, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"%s\",\"n\":5,\"values\":"
                 "\"u32\",\"memfd\":true,\"keys_offset\":2,\"values_offset\":%" PRIu64 "}",
                 r->name, voff);
        int rc = parse(h, &rq, &fatal, &err);
        if (rc || rq.fd_bytes != voff + 20 || rq.out_bytes != 5 * (r->bytes + 4)) {
            bad++;
            tap_diag("memfd %s: rc %d %s", r->name, rc, err.msg);
        }
        gs_proto_req_free(&rq);
    }
    tap_ok(bad == 0, "8- and 16-bit keys: %s (numpy's names too) parse inline and in a "
           "memfd, sized by their width, sorted as u32 words", gs_narrow_list());

    /* rows and segments (their offsets after the 2-byte keys: 8 + 16
     * bytes) and top-k (the reply: k u8 keys and indices a row) taken */
    int rrc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"f16\",\"n\":4,\"rows\":2,"
                    "\"payload_bytes\":8}", &rq, &fatal, &err);
    int rok = rrc == 0 && rq.shape.rows == 2 && rq.in_bytes == 8;
    gs_proto_req_free(&rq);
    int src = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"i16\",\"n\":4,\"segments\":1,"
                    "\"payload_bytes\":24}", &rq, &fatal, &err);
    int sok = src == 0 && rq.shape.segments == 1 && rq.in_bytes == 24;
    gs_proto_req_free(&rq);
    int trc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u8\",\"n\":4,\"topk\":2,"
                    "\"rows\":2,\"values\":\"idx32\",\"payload_bytes\":4}", &rq, &fatal, &err);
    int tok = trc == 0 && rq.shape.topk && rq.out_bytes == 2 * 2 * (1 + 4);
    gs_proto_req_free(&rq);
    tap_ok(rok && sok && tok, "8- and 16-bit keys in rows, segments and top-k parse, sized by "
           "their width (%d, %d, %d)", rrc, src, trc);
    int rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"f8\",\"n\":1,\"payload_bytes\":1}",
                   &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "bf16"), "an unknown dtype's message lists the "
           "narrow types: %s", err.msg);
    gs_proto_req_free(&rq);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u16\",\"n\":3,\"memfd\":true,"
               "\"keys_offset\":1}", &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "keys_offset"), "u16 keys at an odd offset: "
           "%s", err.msg);
    gs_proto_req_free(&rq);

    /* the client's header and the reply name the type */
    memset(&rq, 0, sizeof rq);
    rq.shape.dtype = GS_DT_U32;
    rq.narrow = GS_NW_BF16;
    rq.n = 3;
    rq.device = -1;
    cJSON *hd = gs_proto_sort_header(&rq, &err);
    const cJSON *dt = hd ? cJSON_GetObjectItemCaseSensitive(hd, "dtype") : NULL;
    char *ht = hd ? cJSON_PrintUnformatted(hd) : NULL;
    tap_ok(dt && cJSON_IsString(dt) && !strcmp(dt->valuestring, "bf16") && ht &&
           strstr(ht, "\"payload_bytes\":6"), "a client's header of 3 bf16 keys: dtype "
           "\"bf16\", 6 bytes: %s", ht ? ht : err.msg);
    free(ht);
    cJSON_Delete(hd);
    gs_reply_sort rs = { .n = 3, .dtype = GS_DT_U32, .narrow = GS_NW_I8, .device = -1,
                         .algorithm = "host", .plan = "default" };
    cJSON *rj = gs_reply_sort_build(&rs, NULL, &err);
    char *txt = rj ? cJSON_PrintUnformatted(rj) : NULL;
    gs_reply_sort back;
    cJSON *rp = txt ? cJSON_Parse(txt) : NULL;
    gs_jnum_doc doc = { txt, txt ? strlen(txt) : 0, rp };
    rc = rp ? gs_reply_sort_parse(rp, &doc, &back, &err) : -1;
    cJSON_Delete(rp);
    tap_ok(txt && strstr(txt, "\"dtype\":\"i8\"") && rc == 0 && back.narrow == GS_NW_I8,
           "the reply names the keys' type (i8) and parses back: %s (rc %d %s)", txt ? txt : "",
           rc, rc ? err.msg : "");
    free(txt);
    cJSON_Delete(rj);
}

static void test_sizes(void)
{
    gs_proto_req rq;
    gs_err err;
    memset(&rq, 0, sizeof rq);
    rq.shape.dtype = GS_DT_U32;
    rq.memfd = 1;
    rq.n = 1;
    rq.keys_offset = UINT64_MAX - 3;
    int rc = gs_proto_sort_sizes(&rq, &err);
    tap_ok(rc == GS_ETOOBIG, "sizes: offset 2^64-4 + 4 bytes overflows (%s)", gs_strerror(rc));
    rq.keys_offset = UINT64_MAX - 7;
    rc = gs_proto_sort_sizes(&rq, &err);
    tap_ok(rc == 0 && rq.fd_bytes == UINT64_MAX - 3, "sizes: offset 2^64-8 + 4 fits");
    rq.memfd = 0;
    rq.keys_offset = 0;
    rq.shape.dtype = GS_DT_F64;
    rq.n = UINT64_MAX / 8 + 1;
    rc = gs_proto_sort_sizes(&rq, &err);
    tap_ok(rc == GS_ETOOBIG, "sizes: n * 8 overflowing 64 bits is GS_ETOOBIG");
    rq.shape.dtype = GS_DT_U32;
    rq.shape.payload = GS_PL_U64;
    rq.n = UINT64_MAX / 8;
    rc = gs_proto_sort_sizes(&rq, &err);
    tap_ok(rc == GS_ETOOBIG, "sizes: keys + values overflowing 64 bits is GS_ETOOBIG");
    rq.n = 5;
    rq.shape.payload = GS_PL_IDX64;
    rc = gs_proto_sort_sizes(&rq, &err);
    tap_ok(rc == 0 && rq.in_bytes == 20 && rq.out_bytes == 60 && rq.fd_bytes == 0,
           "sizes: idx64 values go out, not in (in %" PRIu64 ", out %" PRIu64 ")",
           rq.in_bytes, rq.out_bytes);
    rq.shape.payload = GS_PL_COUNT;
    tap_ok(gs_proto_sort_sizes(&rq, &err) == GS_EINVAL, "sizes: a bad values kind");
}

static void test_sort_header(void)
{
    gs_proto_req a, b;
    gs_err err;
    int fatal;
    memset(&a, 0, sizeof a);
    a.shape.dtype = GS_DT_I64;
    a.shape.payload = GS_PL_U32;
    a.shape.descending = 1;
    a.shape.stable = 1;
    a.n = 1000;
    snprintf(a.algorithm, sizeof a.algorithm, "mergepath");
    gs_params_set(&a.params, "wg_size", 128);
    gs_params_set(&a.params, "tile", -2);
    a.has_params = 1;
    a.device = 3;
    a.id = cJSON_CreateString("req-1");
    cJSON *h = gs_proto_sort_header(&a, &err);
    char *t = h ? cJSON_PrintUnformatted(h) : NULL;
    int rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(h && a.in_bytes == 12000 && a.out_bytes == 12000 && a.payload_bytes == 12000,
           "sort_header inline fills the sizes (in %" PRIu64 ")", a.in_bytes);
    tap_ok(rc == 0 && b.op == GS_OP_SORT && b.shape.dtype == a.shape.dtype &&
               b.shape.payload == a.shape.payload && b.shape.descending && b.shape.stable &&
               b.n == 1000 && !strcmp(b.algorithm, "mergepath") && b.has_params &&
               b.params.count == 2 && gs_params_get(&b.params, "wg_size", 0) == 128 &&
               gs_params_get(&b.params, "tile", 0) == -2 && b.device == 3 && !b.memfd &&
               b.payload_bytes == 12000 && id_is(&b, "req-1"),
           "sort_header -> parse_req round trip, inline (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    gs_proto_req_free(&a);

    memset(&a, 0, sizeof a);
    a.shape.dtype = GS_DT_F32;
    a.shape.payload = GS_PL_IDX64;
    a.n = 10;
    a.device = -1;
    a.memfd = 1;
    a.keys_offset = 4096;
    a.values_offset = 0;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && b.memfd && b.keys_offset == 4096 && b.values_offset == 0 &&
           b.fd_bytes == 4136 && a.fd_bytes == 4136 && b.payload_bytes == 0 &&
           b.device == -1 && b.id == NULL && !b.has_params && b.algorithm[0] == '\0' &&
           !b.shape.descending && !b.shape.stable,
           "sort_header -> parse_req round trip, memfd (%s)", t ? t : "NULL");
    tap_ok(t && !strstr(t, "payload_bytes") && !strstr(t, "\"id\""),
           "a memfd header sends no payload_bytes and no absent id");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);

    /* rows: sent when above 1, parsed back; 1 is the flat sort, not sent */
    a.shape.rows = 5;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && strstr(t, "\"rows\":5") && b.shape.rows == 5,
           "rows round trip (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.shape.rows = 1;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && !strstr(t, "rows") && b.shape.rows <= 1,
           "one row is not sent (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.shape.rows = 0;

    /* topk: sent with its k and "sorted": false when unsorted; the reply
     * carries k of each row */
    a.shape.rows = 5;
    a.shape.topk = 1;
    a.shape.k = 2;
    a.shape.unsorted = 1;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && strstr(t, "\"topk\":2") && strstr(t, "\"sorted\":false") &&
           b.shape.topk && b.shape.k == 2 && b.shape.unsorted &&
           b.out_bytes == 5 * 2 * (gs_dtype_size(a.shape.dtype) +
                                   gs_payload_size(a.shape.payload)),
           "topk round trip, out_bytes k a row (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.shape.unsorted = 0;
    a.shape.k = 0;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && strstr(t, "\"topk\":0") && !strstr(t, "sorted") && b.shape.topk &&
           b.shape.k == 0 && !b.shape.unsorted && b.out_bytes == 0,
           "top 0: sent, nothing comes back (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.shape.topk = 0;
    a.shape.rows = 0;

    /* segments: sent with offsets_offset in a memfd, parsed back; the
     * offsets count in fd_bytes, not in what comes back */
    a.shape.segments = 3;
    a.offsets_offset = 8192;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && strstr(t, "\"segments\":3") && strstr(t, "\"offsets_offset\":8192") &&
           b.shape.segments == 3 && b.offsets_offset == 8192 && b.fd_bytes == 8192 + 32 &&
           b.out_bytes == 10 * (4 + 8) && b.payload_bytes == 0,
           "segments round trip, memfd (%s; fd_bytes %llu)", t ? t : "NULL",
           (unsigned long long)b.fd_bytes);
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.memfd = 0;
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && !strstr(t, "offsets_offset") && b.shape.segments == 3 &&
           b.in_bytes == 10 * 4 + 4 * 8 && b.payload_bytes == 72 && b.out_bytes == 10 * 12,
           "segments inline: the offsets follow the keys in the payload (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);
    a.memfd = 1;
    a.shape.segments = 0;
    a.offsets_offset = 0;
    /* hand-written: offsets after u32 values, and right after the keys */
    rc = parse("{\"v\":1,\"op\":\"sort\",\"id\":\"E\","
               "\"dtype\":\"u32\",\"n\":5,\"values\":\"u32\",\"segments\":2,"
               "\"payload_bytes\":64}", &b, &fatal, &err);
    tap_ok(rc == 0 && b.shape.segments == 2 && b.in_bytes == 64 && b.out_bytes == 40,
           "segments inline with u32 values: keys, values, offsets (%s)", err.msg);
    gs_proto_req_free(&b);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"id\":\"E\","
               "\"dtype\":\"u32\",\"n\":6,\"segments\":1,\"memfd\":true,"
               "\"offsets_offset\":24}", &b, &fatal, &err);
    tap_ok(rc == 0 && b.offsets_offset == 24 && b.fd_bytes == 40,
           "segments in a memfd right after the keys (%s)", err.msg);
    gs_proto_req_free(&b);

    a.values_offset = 4096 + 40;    /* the default: not sent, still parsed back */
    h = gs_proto_sort_header(&a, &err);
    t = h ? cJSON_PrintUnformatted(h) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && t && !strstr(t, "values_offset") && b.values_offset == 4136,
           "the default values_offset round trips (%s)", t ? t : "NULL");
    free(t);
    cJSON_Delete(h);
    gs_proto_req_free(&b);

    memset(&a, 0, sizeof a);
    a.shape.dtype = GS_DT_U32;
    a.n = GS_PROTO_MAX_N + 1;
    a.device = -1;
    gs_err_clear(&err);
    h = gs_proto_sort_header(&a, &err);
    tap_ok(h == NULL && err.code == GS_ETOOBIG, "sort_header refuses n > 2^53 (%s)",
           gs_strerror(err.code));
    cJSON_Delete(h);
}

/* ---- integers read exactly from the header text ----
 * cJSON's doubles round integers beyond 2^53 (2^53 + 1 reads as 2^53): the
 * parser reads every integer field from its digits instead. */

struct int_case {
    const char *text;   /* a parameter value as JSON */
    int ok;
    long want;
    const char *needle; /* in the error message when refused */
};

static const struct int_case int_cases[] = {
    { "9007199254740993", 1, 9007199254740993L, NULL },          /* 2^53 + 1 */
    { "-9007199254740993", 1, -9007199254740993L, NULL },
    { "9007199254740992", 1, 9007199254740992L, NULL },
    { "9223372036854775807", 1, LONG_MAX, NULL },
    { "-9223372036854775808", 1, LONG_MIN, NULL },
    { "-5", 1, -5, NULL },
    { "0", 1, 0, NULL },
    { "-0", 1, 0, NULL },
    { "1e3", 1, 1000, NULL },
    { "1E+3", 1, 1000, NULL },
    { "2.50e1", 1, 25, NULL },
    { "100e-2", 1, 1, NULL },
    { "4.0", 1, 4, NULL },
    { "0.000e7", 1, 0, NULL },
    { "9.007199254740993e15", 1, 9007199254740993L, NULL },
    { "9223372036854775808", 0, 0, "9223372036854775808 is out of range" },
    { "-9223372036854775809", 0, 0, "out of range" },
    { "18446744073709551616", 0, 0, "18446744073709551616 is out of range: parameters are "
      "integers in [-9223372036854775808, 9223372036854775807]" },        /* 2^64 */
    { "123456789012345678901234567890", 0, 0, "out of range" },
    { "1e400", 0, 0, "1e400 is out of range" },
    { "1.5", 0, 0, "value 1.5 is not an integer" },
    { "-1.5", 0, 0, "not an integer" },
    { "1e-3", 0, 0, "value 1e-3 is not an integer" },
    { "9007199254740993.5", 0, 0, "not an integer" },
    { "1e-400", 0, 0, "not an integer" },
};

static void test_exact_ints(void)
{
    gs_proto_req rq;
    gs_err err;
    int fatal;
    char h[512];
    for (size_t i = 0; i < sizeof int_cases / sizeof int_cases[0]; i++) {
        const struct int_case *c = &int_cases[i];
        snprintf(h, sizeof h, "{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":3,"
                 "\"algorithm\":\"radix\",\"params\":{\"p\":%s},\"payload_bytes\":12}", c->text);
        int rc = parse(h, &rq, &fatal, &err);
        long got = rc ? 0 : gs_params_get(&rq.params, "p", 12345);
        if (c->ok)
            tap_ok(rc == 0 && got == c->want, "parameter %s reads exactly as %ld (got %ld%s%s)",
                   c->text, c->want, got, rc ? ": " : "", rc ? err.msg : "");
        else
            tap_ok(rc == GS_EINVAL && !fatal && strstr(err.msg, c->needle),
                   "parameter %s is refused, saying so: %s", c->text, rc ? err.msg : "accepted");
        gs_proto_req_free(&rq);
    }

    /* The token of each number is found past strings (with quotes, digits
     * and escapes in them), keys that are numbers, and nested arrays. */
    int rc = parse("{\"v\":1,\"id\":[\"7\\\"8 -9\",[9e9,-1,{\"2\":3}]],\"op\":\"sort\","
                   "\"x\":{\"1\":2.5,\"s\":\"\\\\\"},\"dtype\":\"u32\",\"n\":3,\"algorithm\":"
                   "\"radix\",\"params\":{\"a\":9007199254740993,\"b\":-9007199254740995,"
                   "\"c\":7},\"payload_bytes\":12}", &rq, &fatal, &err);
    tap_ok(rc == 0 && gs_params_get(&rq.params, "a", 0) == 9007199254740993L &&
           gs_params_get(&rq.params, "b", 0) == -9007199254740995L &&
           gs_params_get(&rq.params, "c", 0) == 7 && rq.n == 3 && rq.payload_bytes == 12,
           "numbers are matched to their own digits past strings, numeric keys and nested "
           "ids (%s)", rc ? err.msg : "ok");
    gs_proto_req_free(&rq);

    /* n: 2^53 + 1 used to read as 2^53 and be accepted */
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"f64\",\"n\":9007199254740993,"
               "\"memfd\":true}", &rq, &fatal, &err);
    tap_ok(rc == GS_EINVAL && strstr(err.msg, "\"n\" 9007199254740993 is not an integer in "
                                     "[0, 2^53]"), "n = 2^53 + 1 is refused, quoted exactly: %s",
           rc ? err.msg : "accepted");
    gs_proto_req_free(&rq);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":2.5e2,\"payload_bytes\":1e3}",
               &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.n == 250 && rq.payload_bytes == 1000,
           "n 2.5e2 and payload_bytes 1e3 are the integers 250 and 1000 (%s)",
           rc ? err.msg : "ok");
    gs_proto_req_free(&rq);

    /* offsets beyond 2^53: 2^55 + 4 is not a double (it would read 2^55) */
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1,\"values\":\"u32\","
               "\"memfd\":true,\"keys_offset\":36028797018963972,"
               "\"values_offset\":18446744073709551608}", &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.keys_offset == UINT64_C(36028797018963972) &&
           rq.values_offset == UINT64_C(18446744073709551608) &&
           rq.fd_bytes == UINT64_C(18446744073709551612),
           "keys_offset 2^55 + 4 and values_offset 2^64 - 8 read exactly (%s)",
           rc ? err.msg : "ok");
    gs_proto_req_free(&rq);
    rc = parse("{\"v\":1,\"op\":\"sort\",\"dtype\":\"u32\",\"n\":1,\"memfd\":true,"
               "\"keys_offset\":36028797018963972}", &rq, &fatal, &err);
    tap_ok(rc == 0 && rq.keys_offset == UINT64_C(36028797018963972) &&
           rq.fd_bytes == UINT64_C(36028797018963976),
           "a memfd sort at keys_offset 2^55 + 4 (%s)", rc ? err.msg : "ok");
    gs_proto_req_free(&rq);

    /* payload_bytes 2^53 + 1 must not frame as 2^53: a fatal error */
    rc = parse("{\"v\":1,\"op\":\"ping\",\"payload_bytes\":9007199254740993}", &rq, &fatal,
               &err);
    tap_ok(rc == GS_EINVAL && fatal == 1 && strstr(err.msg, "9007199254740993"),
           "payload_bytes 2^53 + 1 is a fatal framing error: %s", err.msg);
    gs_proto_req_free(&rq);

    /* the version: 1, 1.0 and 1e0 are 1; a 1 that is only 1 as a double is not */
    rc = parse("{\"v\":1e0,\"op\":\"ping\"}", &rq, &fatal, &err);
    int rc2 = parse("{\"v\":1.0000000000000001,\"op\":\"ping\"}", &rq, &fatal, &err);
    tap_ok(rc == 0 && rc2 == GS_EUNSUPPORTED && strstr(err.msg, "1.0000000000000001"),
           "version 1e0 is 1; 1.0000000000000001 is not (%s)", err.msg);
    gs_proto_req_free(&rq);

    /* the client's header carries the same integers exactly */
    gs_proto_req a, b;
    memset(&a, 0, sizeof a);
    a.shape.dtype = GS_DT_U32;
    a.n = 1;
    a.device = -1;
    a.memfd = 1;
    a.keys_offset = UINT64_C(36028797018963972);
    snprintf(a.algorithm, sizeof a.algorithm, "radix");
    gs_params_set(&a.params, "big", 9007199254740993L);
    gs_params_set(&a.params, "min", LONG_MIN);
    gs_params_set(&a.params, "max", LONG_MAX);
    a.has_params = 1;
    gs_err_clear(&err);
    cJSON *hj = gs_proto_sort_header(&a, &err);
    char *t = hj ? cJSON_PrintUnformatted(hj) : NULL;
    rc = t ? parse(t, &b, &fatal, &err) : -99;
    tap_ok(rc == 0 && strstr(t, "\"big\":9007199254740993") &&
           gs_params_get(&b.params, "big", 0) == 9007199254740993L &&
           gs_params_get(&b.params, "min", 0) == LONG_MIN &&
           gs_params_get(&b.params, "max", 0) == LONG_MAX &&
           b.keys_offset == UINT64_C(36028797018963972),
           "sort_header -> parse_req: parameters 2^53 + 1, LONG_MIN, LONG_MAX and keys_offset "
           "2^55 + 4 round trip exactly (%s)", t ? t : err.msg);
    free(t);
    cJSON_Delete(hj);
    gs_proto_req_free(&b);
}

/* ---- replies ---- */

static int json_is(cJSON *j, const char *want)
{
    char *t = j ? cJSON_PrintUnformatted(j) : NULL;
    int ok = t && !strcmp(t, want);
    if (!ok)
        tap_diag("got %s, want %s", t ? t : "NULL", want);
    free(t);
    cJSON_Delete(j);
    return ok;
}

static void test_replies(void)
{
    cJSON *id = cJSON_CreateNumber(7);
    tap_ok(json_is(gs_proto_reply_ok(GS_OP_PING, id), "{\"v\":1,\"ok\":true,\"op\":\"ping\","
                   "\"id\":7}"), "reply_ok with an id");
    tap_ok(json_is(gs_proto_reply_ok(GS_OP_SORT, NULL), "{\"v\":1,\"ok\":true,\"op\":\"sort\"}"),
           "reply_ok without an id has no \"id\"");
    cJSON_Delete(id);
    id = cJSON_Parse("{\"a\":[1,\"b\"]}");
    tap_ok(json_is(gs_proto_reply_error(id, GS_EINVAL, "bad \"n\"", 1),
                   "{\"v\":1,\"ok\":false,\"id\":{\"a\":[1,\"b\"]},\"error\":{\"code\":"
                   "\"GS_EINVAL\",\"message\":\"bad \\\"n\\\"\"},\"close\":true}"),
           "reply_error with an id, closing");
    tap_ok(json_is(gs_proto_reply_error(NULL, GS_ETOOBIG, "too many clients", 0),
                   "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_ETOOBIG\",\"message\":"
                   "\"too many clients\"}}"), "reply_error without id or close");
    tap_ok(json_is(gs_proto_reply_error(NULL, GS_EUNSUPPORTED, NULL, 0),
                   "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_EUNSUPPORTED\",\"message\":"
                   "\"\"}}"), "reply_error with no message");
    cJSON_Delete(id);
    tap_ok(!strcmp(gs_proto_op_name(GS_OP_STATS), "stats") && !strcmp(gs_proto_op_name(99), "?"),
           "op names");
}

/* ---- reply bodies (gs_reply) ----
 * What the daemon builds, printed as it goes on the wire and parsed back as
 * a client reads it, must be what was built; and a reply missing a field,
 * or holding one of the wrong kind, is refused naming it. */

/* Print `h` (deleted) the way the daemon frames it and parse it back as the
 * client does; *text keeps the text (free it) for the parsers' exact
 * integers. */
static cJSON *wire(cJSON *h, char **text)
{
    *text = h ? cJSON_PrintUnformatted(h) : NULL;
    cJSON_Delete(h);
    return *text ? cJSON_Parse(*text) : NULL;
}

static void test_reply_sort(void)
{
    gs_err err;
    gs_reply_sort in;
    memset(&in, 0, sizeof in);
    in.n = UINT64_C(1) << 53;   /* cJSON would print it rounded, 9.00719925474099e+15 */
    in.dtype = GS_DT_F64;
    in.values = GS_PL_IDX64;
    in.device = 1;
    in.device_name = "Fake \"GPU\"";
    in.device_platform = "FakeGL";
    in.algorithm = "radix";
    gs_params_set(&in.params, "radix_bits", 4);
    gs_params_set(&in.params, "big", LONG_MIN);
    in.plan = "fallback";
    in.fallback = "device 0 failed: out of resources";
    in.times_ms = (gs_reply_times){ .queue = 0.25, .receive = 0.5, .upload = 1.5, .sort = 2.75,
                                    .download = 3.125, .total = 8.0, .admit = 0.125,
                                    .run = 7.0, .handback = 0.0625, .setup = 1.25,
                                    .enqueue = 0.375, .wait = 4.5, .writeback = 0.75,
                                    .release = 0.0078125 };
    cJSON *id = cJSON_CreateString("req-7");
    char *text = NULL;
    gs_err_clear(&err);
    cJSON *h = wire(gs_reply_sort_build(&in, id, &err), &text);
    tap_ok(text && !strcmp(text, "{\"v\":1,\"ok\":true,\"op\":\"sort\",\"id\":\"req-7\","
                           "\"n\":9007199254740992,\"dtype\":\"f64\",\"values\":\"idx64\","
                           "\"device\":{\"index\":1,\"name\":\"Fake \\\"GPU\\\"\","
                           "\"platform\":\"FakeGL\"},\"algorithm\":\"radix\",\"params\":"
                           "{\"radix_bits\":4,\"big\":-9223372036854775808},\"plan\":"
                           "\"fallback\",\"fallback\":\"device 0 failed: out of resources\","
                           "\"times_ms\":{\"queue\":0.25,\"receive\":0.5,\"upload\":1.5,"
                           "\"sort\":2.75,\"download\":3.125,\"admit\":0.125,\"run\":7,"
                           "\"handback\":0.0625,\"setup\":1.25,\"enqueue\":0.375,\"wait\":4.5,"
                           "\"writeback\":0.75,\"release\":0.007813,\"total\":8}}"),
           "sort reply: built in the daemon's field order, params exact: %s",
           text ? text : err.msg);
    gs_reply_sort out;
    gs_jnum_doc doc = { text, text ? strlen(text) : 0, h };
    int rc = gs_reply_sort_parse(h, &doc, &out, &err);
    tap_ok(rc == 0 && out.dtype == GS_DT_F64 && out.values == GS_PL_IDX64 && out.device == 1 &&
           !strcmp(out.device_name, "Fake \"GPU\"") && !strcmp(out.device_platform, "FakeGL") &&
           !strcmp(out.algorithm, "radix") && out.params.count == 2 &&
           gs_params_get(&out.params, "radix_bits", 0) == 4 &&
           gs_params_get(&out.params, "big", 0) == LONG_MIN &&
           !strcmp(out.plan, "fallback") && !strcmp(out.fallback, in.fallback) &&
           out.times_ms.queue == 0.25 && out.times_ms.receive == 0.5 &&
           out.times_ms.upload == 1.5 && out.times_ms.sort == 2.75 &&
           out.times_ms.download == 3.125 && out.times_ms.total == 8.0 &&
           out.times_ms.admit == 0.125 && out.times_ms.run == 7.0 &&
           out.times_ms.handback == 0.0625 && out.times_ms.setup == 1.25 &&
           out.times_ms.enqueue == 0.375 && out.times_ms.wait == 4.5 &&
           out.times_ms.writeback == 0.75 && out.times_ms.release == 0.007813,
           "sort reply: parsed back as built, the spans of total and the device steps too "
           "(%s)", rc ? err.msg : "ok");
    gs_reply_head head;
    rc = gs_reply_head_parse(h, &doc, &head, &err);
    tap_ok(rc == 0 && head.ok && cJSON_IsString(head.id) && !strcmp(head.id->valuestring, "req-7")
           && head.payload_bytes == 0 && !head.close, "sort reply: its head");
    cJSON_Delete(h);
    free(text);

    /* the host served it: "device": null, no "fallback", no params */
    in.n = 3;
    in.dtype = GS_DT_U32;
    in.values = GS_PL_NONE;
    in.device = -1;
    in.algorithm = "host";
    gs_params_clear(&in.params);
    in.plan = "default";
    in.fallback = "";
    h = wire(gs_reply_sort_build(&in, NULL, &err), &text);
    tap_ok(text && strstr(text, "\"op\":\"sort\",\"n\":3,") && strstr(text, "\"device\":null,") &&
           strstr(text, "\"params\":{},\"plan\":\"default\",\"times_ms\"") &&
           !strstr(text, "fallback") && strstr(text, "\"handback\":0.0625,\"total\"") &&
           !strstr(text, "\"wait\""),
           "sort reply from the host: the spans of total, no device steps: %s",
           text ? text : "NULL");
    doc = (gs_jnum_doc){ text, text ? strlen(text) : 0, h };
    rc = gs_reply_sort_parse(h, &doc, &out, &err);
    tap_ok(rc == 0 && out.n == 3 && out.device == -1 && !strcmp(out.device_name, "") &&
           out.params.count == 0 && !strcmp(out.fallback, "") && !strcmp(out.plan, "default"),
           "sort reply from the host: parsed back (%s)", rc ? err.msg : "ok");
    rc = gs_reply_sort_parse(h, NULL, &out, &err);
    tap_ok(rc == 0 && out.n == 3, "sort reply: parsed without its text too");
    cJSON_Delete(h);
    free(text);
    cJSON_Delete(id);
}

static void test_reply_info_stats(void)
{
    gs_err err;
    gs_reply_info_dev devs[2] = {
        { "Fake GPU", "FakeGL", "1.2.3", "GPU", 1, 1, 24, 3, 1, 1, 2 },
        { "cpu-fake", "Portable", "5.0", "CPU", 0, 0, 0, 0, 0, 0, 0 },
    };
    const char *algos[] = { "radix", "mergepath", "host" };
    gs_reply_info in = {
        .version = "1.2.3", .pid = 4242, .socket = "/run/gsortd/gsortd.sock", .db = NULL,
        .db_ok = 1, .devices = devs, .ndevices = 2, .host_threads = 4, .algorithms = algos,
        .nalgorithms = 3,
        .limits = { UINT64_C(4) << 30, 256, 65536, 300, 30.5 },
        .peer = { 77, 1000, 100 },
    };
    gs_reply_crossover xo[2] = { { 32, GS_PL_NONE, 0, 16384, 0 },
                                 { 64, GS_PL_IDX64, 1, UINT64_MAX, -1 } };
    in.crossover = xo;
    in.ncrossover = 2;
    cJSON *id = cJSON_CreateNumber(3);
    char *text = NULL;
    cJSON *h = wire(gs_reply_info_build(&in, id, &err), &text);
    tap_ok(text && !strncmp(text, "{\"v\":1,\"ok\":true,\"op\":\"info\",\"id\":3,\"version\":"
                            "\"1.2.3\",\"protocol\":1,\"pid\":4242,\"socket\":", 80) &&
           strstr(text, "\"db\":null,\"db_ok\":true,\"devices\":[{\"index\":0,\"name\":"
                  "\"Fake GPU\",\"platform\":\"FakeGL\",\"driver\":\"1.2.3\",\"type\":\"GPU\","
                  "\"enabled\":true,\"tuned\":true,\"plan_entries\":24,\"queued\":3,"
                  "\"healthy\":true,\"ready\":true,\"lanes\":2},{\"index\":1,") &&
           strstr(text, "\"host\":{\"threads\":4},\"algorithms\":[\"radix\",\"mergepath\","
                  "\"host\"],\"limits\":{\"max_request_bytes\":4294967296,\"max_clients\":256,"
                  "\"max_header_bytes\":65536,\"idle_timeout_s\":300,\"io_timeout_s\":30.5},"
                  "\"peer\":{\"pid\":77,\"uid\":1000,\"gid\":100},\"crossover\":[{"
                  "\"key_bits\":32,\"values\":\"none\",\"stable\":false,\"local_below\":16384,"
                  "\"device\":0},{\"key_bits\":64,\"values\":\"idx64\",\"stable\":true,"
                  "\"local_below\":null,\"device\":-1}]}"),
           "info reply: built in the daemon's field order: %s", text ? text : err.msg);
    gs_reply_info out;
    gs_jnum_doc doc = { text, text ? strlen(text) : 0, h };
    int rc = gs_reply_info_parse(h, &doc, &out, &err);
    tap_ok(rc == 0 && !strcmp(out.version, "1.2.3") && out.protocol == GS_PROTO_VERSION &&
           out.pid == 4242 && !strcmp(out.socket, in.socket) && out.db == NULL && out.db_ok &&
           out.ndevices == 2 && !strcmp(out.devices[0].name, "Fake GPU") &&
           !strcmp(out.devices[1].type, "CPU") && out.devices[0].plan_entries == 24 &&
           out.devices[0].queued == 3 && out.devices[0].healthy && !out.devices[1].enabled &&
           out.devices[0].ready && !out.devices[1].ready && out.devices[0].lanes == 2 &&
           out.devices[1].lanes == 0 &&
           out.host_threads == 4 && out.nalgorithms == 3 &&
           !strcmp(out.algorithms[2], "host") &&
           out.limits.max_request_bytes == (UINT64_C(4) << 30) &&
           out.limits.max_clients == 256 && out.limits.max_header_bytes == 65536 &&
           out.limits.idle_timeout_s == 300 && out.limits.io_timeout_s == 30.5 &&
           out.peer.pid == 77 && out.peer.uid == 1000 && out.peer.gid == 100 &&
           out.ncrossover == 2 && out.crossover[0].key_bits == 32 &&
           out.crossover[0].payload == GS_PL_NONE && !out.crossover[0].stable &&
           out.crossover[0].local_below == 16384 && out.crossover[0].device == 0 &&
           out.crossover[1].key_bits == 64 && out.crossover[1].payload == GS_PL_IDX64 &&
           out.crossover[1].stable && out.crossover[1].local_below == UINT64_MAX &&
           out.crossover[1].device == -1,
           "info reply: parsed back as built (%s)", rc ? err.msg : "ok");
    gs_reply_info_free(&out);
    cJSON_Delete(h);
    free(text);
    in.db = "/var/lib/gsortd/tuning.db";
    in.ndevices = 0;
    h = wire(gs_reply_info_build(&in, NULL, &err), &text);
    doc = (gs_jnum_doc){ text, text ? strlen(text) : 0, h };
    rc = gs_reply_info_parse(h, &doc, &out, &err);
    tap_ok(rc == 0 && out.db && !strcmp(out.db, in.db) && out.ndevices == 0 &&
           strstr(text, "\"devices\":[]"), "info reply with a --db and no devices");
    gs_reply_info_free(&out);
    cJSON_Delete(h);
    free(text);

    gs_reply_route routes[2] = {
        { 0, "radix", 4, 1, 0, 9.5, 20, 2, 12, 0.25, 0.5, 1.5 },
        { -1, "host", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    };
    gs_reply_stats st = {
        .uptime_s = 12.5, .clients = { 2, 10, 1, 3 },
        .requests = { 40, 35, 5, 2, { 1, 2, 3, 34 } },
        .bytes = { UINT64_C(1) << 40, 12345 },
        .blocks = { 7, 93, UINT64_C(3) << 30, UINT64_C(1) << 35, 5, 1, UINT64_C(1) << 33,
                    UINT64_C(1) << 36, UINT64_C(1) << 34, 2 },
        .memory = { UINT64_C(3) << 31, 1000, UINT64_C(1) << 32, 4096, 3, 8, 2 },
        .database = { 17, 1 },
        .routes = routes, .nroutes = 2,
    };
    h = wire(gs_reply_stats_build(&st, id, &err), &text);
    tap_ok(text && !strcmp(text, "{\"v\":1,\"ok\":true,\"op\":\"stats\",\"id\":3,\"uptime_s\":12.5,"
                           "\"clients\":{\"current\":2,\"total\":10,\"rejected\":1,\"denied\":3},"
                           "\"requests\":{\"total\":40,\"ok\":35,\"errors\":5,\"fallbacks\":2,"
                           "\"by_op\":{\"ping\":1,\"info\":2,\"stats\":3,\"sort\":34}},"
                           "\"bytes\":{\"in\":1099511627776,\"out\":12345},"
                           "\"blocks\":{\"mapped\":7,\"reused\":93,\"pinned_bytes\":3221225472,"
                           "\"max_pinned_bytes\":34359738368,\"pinned\":5,\"refused\":1,"
                           "\"kept_bytes\":8589934592,\"max_mapped_bytes\":68719476736,"
                           "\"max_mapped_bytes_per_client\":17179869184,\"not_kept\":2},"
                           "\"memory\":{\"max_memory\":6442450944,\"used\":1000,"
                           "\"peak\":4294967296,\"cached\":4096,\"waiting\":3,\"waited\":8,"
                           "\"refused\":2},"
                           "\"database\":{\"open\":true,\"queries\":17},"
                           "\"routes\":[{"
                           "\"device\":0,\"algorithm\":\"radix\",\"count\":4,\"errors\":1,"
                           "\"mean_ms\":5,\"max_ms\":9.5,\"total_ms\":20,\"queue_ms\":2,"
                           "\"sort_ms\":12,\"queue_p50_ms\":0.25,\"queue_p90_ms\":0.5,"
                           "\"queue_p99_ms\":1.5},{\"device\":-1,\"algorithm\":\"host\","
                           "\"count\":0,\"errors\":0,\"mean_ms\":0,\"max_ms\":0,"
                           "\"total_ms\":0,\"queue_ms\":0,\"sort_ms\":0,\"queue_p50_ms\":0,"
                           "\"queue_p90_ms\":0,\"queue_p99_ms\":0}]}"),
           "stats reply: built in the daemon's field order, mean_ms = total / count: %s",
           text ? text : err.msg);
    gs_reply_stats so;
    doc = (gs_jnum_doc){ text, text ? strlen(text) : 0, h };
    rc = gs_reply_stats_parse(h, &doc, &so, &err);
    tap_ok(rc == 0 && so.uptime_s == 12.5 && so.clients.current == 2 &&
           so.clients.denied == 3 && so.requests.errors == 5 &&
           so.requests.by_op[GS_OP_SORT] == 34 && so.requests.by_op[GS_OP_PING] == 1 &&
           so.bytes.in == (UINT64_C(1) << 40) && so.nroutes == 2 &&
           so.database.queries == 17 && so.database.open == 1 &&
           so.blocks.kept_bytes == (UINT64_C(1) << 33) &&
           so.blocks.max_mapped_bytes_per_client == (UINT64_C(1) << 34) &&
           so.blocks.not_kept == 2 && so.memory.max_memory == (UINT64_C(3) << 31) &&
           so.memory.used == 1000 && so.memory.peak == (UINT64_C(1) << 32) &&
           so.memory.cached == 4096 && so.memory.waiting == 3 && so.memory.waited == 8 &&
           so.memory.refused == 2 &&
           so.routes[0].mean_ms == 5 && so.routes[1].device == -1 &&
           !strcmp(so.routes[1].algorithm, "host") && so.routes[0].sort_ms == 12 &&
           so.routes[0].queue_p50_ms == 0.25 && so.routes[0].queue_p99_ms == 1.5,
           "stats reply: parsed back as built (%s)", rc ? err.msg : "ok");
    gs_reply_stats_free(&so);
    /* a daemon's reply without the memory budget's counters is not taken */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, "memory"),
                                            "waited");
    rc = gs_reply_stats_parse(h, NULL, &so, &err);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "\"memory.waited\" is missing"),
           "stats reply: a missing memory count names it: %s", err.msg);
    cJSON_Delete(h);
    free(text);
    cJSON_Delete(id);
}

/* A sort reply the daemon would write, with `field` replaced by `value`
 * (NULL: removed). */
static char *sort_reply_with(const char *field, const char *value)
{
    cJSON *h = cJSON_Parse("{\"v\":1,\"ok\":true,\"op\":\"sort\",\"id\":1,\"n\":3,\"dtype\":"
                           "\"u32\",\"values\":\"none\",\"device\":{\"index\":0,\"name\":\"G\","
                           "\"platform\":\"P\"},\"algorithm\":\"radix\",\"params\":{\"b\":4},"
                           "\"plan\":\"tuned\",\"times_ms\":{\"queue\":0,\"receive\":0,"
                           "\"upload\":0,\"sort\":0,\"download\":0,\"total\":0},"
                           "\"payload_bytes\":12}");
    cJSON_DeleteItemFromObjectCaseSensitive(h, field);
    if (value)      /* raw: printed as written, digits and all */
        cJSON_AddItemToObject(h, field, cJSON_CreateRaw(value));
    char *t = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    return t;
}

struct bad_reply {
    const char *field, *value;  /* for sort_reply_with */
    const char *needle;         /* in the message */
};

static const struct bad_reply bad_replies[] = {
    { "op", "\"info\"", "\"op\" is missing or not \"sort\"" },
    { "n", NULL, "\"n\" is missing or not an integer in [0, 9007199254740992]" },
    { "n", "-1", "\"n\" is missing" },
    { "n", "1.5", "\"n\" is missing" },
    { "n", "9007199254740993", "\"n\" is missing" },
    { "dtype", "\"u128\"", "\"dtype\" is missing or not a dtype" },
    { "dtype", "7", "\"dtype\" is missing or not a string" },
    { "values", NULL, "\"values\" is missing or not a string" },
    { "values", "\"idx16\"", "\"values\" is missing or not a values kind" },
    { "device", NULL, "\"device\" is missing or not null or an object" },
    { "device", "0", "\"device\" is missing or not null or an object" },
    { "device", "{\"index\":-1,\"name\":\"G\",\"platform\":\"P\"}", "\"device.index\" is missing" },
    { "device", "{\"index\":0,\"platform\":\"P\"}", "\"device.name\" is missing or not a string" },
    { "algorithm", "null", "\"algorithm\" is missing or not a string" },
    { "params", NULL, "\"params\" is missing or not an object" },
    { "params", "[1]", "\"params\" is missing or not an object" },
    { "params", "{\"b\":1.5}", "sort reply: parameter \"b\" value 1.5 is not an integer" },
    { "params", "{\"b\":\"4\"}", "sort reply: parameter \"b\" value \"4\" is not an integer" },
    { "params", "{\"b\":9223372036854775808}", "value 9223372036854775808 is out of range" },
    { "plan", NULL, "\"plan\" is missing or not a string" },
    { "fallback", "false", "\"fallback\" is missing or not a string" },
    { "times_ms", NULL, "\"times_ms\" is missing or not an object" },
    { "times_ms", "{\"queue\":0,\"receive\":0,\"upload\":0,\"sort\":\"0\",\"download\":0,"
      "\"total\":0}", "\"times_ms.sort\" is missing or not a number" },
    { "times_ms", "{\"queue\":0,\"receive\":0,\"upload\":0,\"sort\":0,\"download\":0,"
      "\"wait\":null,\"total\":0}", "\"times_ms.wait\" is missing or not a number" },
};

static void test_reply_bad(void)
{
    gs_err err;
    size_t nb = sizeof bad_replies / sizeof bad_replies[0], good = 0;
    for (size_t i = 0; i < nb; i++) {
        const struct bad_reply *b = &bad_replies[i];
        char *t = sort_reply_with(b->field, b->value);
        cJSON *h = cJSON_Parse(t);
        gs_jnum_doc doc = { t, strlen(t), h };
        gs_reply_sort out;
        gs_err_clear(&err);
        int rc = gs_reply_sort_parse(h, &doc, &out, &err);
        if (rc == GS_ECORRUPT && strstr(err.msg, b->needle) &&
            !strncmp(err.msg, "sort reply: ", 12))
            good++;
        else
            tap_diag("%s = %s: %s %s (want \"%s\")", b->field, b->value ? b->value : "(none)",
                     gs_strerror(rc), err.msg, b->needle);
        cJSON_Delete(h);
        free(t);
    }
    tap_ok(good == nb, "sort reply: %zu malformed replies refused as GS_ECORRUPT naming the "
           "field (%zu did)", nb, good);
    char *t = sort_reply_with("fallback", NULL);
    cJSON *h = cJSON_Parse(t);
    gs_reply_sort out;
    tap_ok(gs_reply_sort_parse(h, NULL, &out, &err) == 0, "sort reply: the base of those cases "
           "is accepted");
    cJSON_Delete(h);
    free(t);
    tap_ok(gs_reply_sort_parse(NULL, NULL, &out, &err) == GS_ECORRUPT &&
           strstr(err.msg, "not a JSON object"), "sort reply: no object: %s", err.msg);

    /* info and stats: one missing or wrong field each names its path */
    h = cJSON_Parse("{\"v\":1,\"ok\":true,\"op\":\"info\",\"version\":\"1\",\"protocol\":1,"
                    "\"pid\":1,\"socket\":\"s\",\"db\":null,\"db_ok\":false,\"devices\":[{"
                    "\"index\":1}]}");
    gs_reply_info info;
    int rc = gs_reply_info_parse(h, NULL, &info, &err);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "info reply: \"devices[0].index\" is missing or "
           "not its position") && !info.devices, "info reply: a device out of place: %s",
           err.msg);
    cJSON_Delete(h);
    /* a crossover entry with a key width the daemon cannot have */
    h = cJSON_Parse("{\"v\":1,\"ok\":true,\"op\":\"info\",\"version\":\"1\",\"protocol\":1,"
                    "\"pid\":1,\"socket\":\"s\",\"db\":null,\"db_ok\":false,\"devices\":[],"
                    "\"host\":{\"threads\":1},\"algorithms\":[],\"limits\":{"
                    "\"max_request_bytes\":1,\"max_clients\":1,\"max_header_bytes\":1,"
                    "\"idle_timeout_s\":1,\"io_timeout_s\":1},\"peer\":{\"pid\":1,\"uid\":0,"
                    "\"gid\":0},\"crossover\":[{\"key_bits\":8,\"values\":\"none\","
                    "\"stable\":false,\"local_below\":8,\"device\":0}]}");
    rc = gs_reply_info_parse(h, NULL, &info, &err);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "crossover[0].key_bits") && !info.crossover,
           "info reply: a crossover of 8-bit keys (8- and 16-bit keys share the 16-bit "
           "class's) is refused: %s", err.msg);
    cJSON_Delete(h);
    h = cJSON_Parse("{\"v\":1,\"ok\":true,\"op\":\"stats\",\"uptime_s\":1,\"clients\":{"
                    "\"current\":0,\"total\":0,\"rejected\":0,\"denied\":0},\"requests\":{"
                    "\"total\":0,\"ok\":0,\"errors\":0,\"fallbacks\":0,\"by_op\":{\"ping\":0,"
                    "\"info\":0,\"stats\":0}},\"bytes\":{\"in\":0,\"out\":0},\"routes\":[]}");
    gs_reply_stats so;
    rc = gs_reply_stats_parse(h, NULL, &so, &err);
    tap_ok(rc == GS_ECORRUPT && strstr(err.msg, "stats reply: \"requests.by_op.sort\" is "
           "missing"), "stats reply: a missing op count: %s", err.msg);
    cJSON_Delete(h);
}

static void test_reply_head(void)
{
    gs_err err;
    gs_reply_head hd;
    const char *t = "{\"v\":1,\"ok\":false,\"id\":5,\"error\":{\"code\":\"GS_ETOOBIG\","
                    "\"message\":\"too many clients\"},\"close\":true}";
    cJSON *h = cJSON_Parse(t);
    gs_jnum_doc doc = { t, strlen(t), h };
    int rc = gs_reply_head_parse(h, &doc, &hd, &err);
    tap_ok(rc == 0 && !hd.ok && hd.close && hd.code == GS_ETOOBIG &&
           !strcmp(hd.message, "too many clients") && cJSON_IsNumber(hd.id),
           "reply head: an error reply's code, message and close");
    cJSON_Delete(h);
    h = cJSON_Parse("{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_NOPE\"}}");
    rc = gs_reply_head_parse(h, NULL, &hd, &err);
    tap_ok(rc == 0 && hd.code == GS_EIO && !strcmp(hd.message, "(no message)") && !hd.id,
           "reply head: an unknown code is GS_EIO, a missing message \"(no message)\"");
    cJSON_Delete(h);
    static const char *const bad_pb[] = { "-1", "1.5", "\"12\"", "9007199254740993", "null" };
    int good = 0;
    for (size_t i = 0; i < sizeof bad_pb / sizeof bad_pb[0]; i++) {
        char txt[128];
        snprintf(txt, sizeof txt, "{\"v\":1,\"ok\":true,\"payload_bytes\":%s}", bad_pb[i]);
        h = cJSON_Parse(txt);
        doc = (gs_jnum_doc){ txt, strlen(txt), h };
        rc = gs_reply_head_parse(h, &doc, &hd, &err);
        good += rc == GS_ECORRUPT && !strcmp(err.msg, "reply payload_bytes is not a byte count");
        cJSON_Delete(h);
    }
    tap_ok(good == 5, "reply head: payload_bytes that is not a byte count is GS_ECORRUPT "
           "(%d of 5)", good);
    t = "{\"v\":1,\"ok\":true,\"payload_bytes\":9007199254740992}";
    h = cJSON_Parse(t);
    doc = (gs_jnum_doc){ t, strlen(t), h };
    rc = gs_reply_head_parse(h, &doc, &hd, &err);
    tap_ok(rc == 0 && hd.ok && hd.payload_bytes == (UINT64_C(1) << 53),
           "reply head: payload_bytes 2^53");
    cJSON_Delete(h);
    h = cJSON_Parse("[1]");
    tap_ok(gs_reply_head_parse(h, NULL, &hd, &err) == GS_ECORRUPT &&
           !strcmp(err.msg, "reply header from gsortd is not a JSON object"),
           "reply head: not an object");
    cJSON_Delete(h);
    tap_ok(gs_reply_code("GS_EPERM") == GS_EPERM && gs_reply_code(NULL) == GS_EIO,
           "reply codes by name");
    cJSON *id = cJSON_CreateNumber(9);
    tap_ok(json_is(gs_reply_error_build(id, GS_OP_SORT, GS_EINVAL, "bad", 0, &err),
                   "{\"v\":1,\"ok\":false,\"id\":9,\"error\":{\"code\":\"GS_EINVAL\",\"message\":"
                   "\"bad\"},\"op\":\"sort\"}"), "error reply naming its op");
    tap_ok(json_is(gs_reply_error_build(NULL, -1, GS_ETOOBIG, "big", 1, &err),
                   "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"GS_ETOOBIG\",\"message\":"
                   "\"big\"},\"close\":true}"), "error reply without an op, closing");
    cJSON_Delete(id);
    tap_ok(json_is(gs_proto_op_header("info", NULL, &err), "{\"v\":1,\"op\":\"info\"}"),
           "the client's op-only request header");
}

/* ---- fuzz ---- */

static const char *const seeds[] = {
    "{\"v\":1,\"op\":\"sort\",\"id\":1,\"dtype\":\"u32\",\"n\":3,\"payload_bytes\":12}",
    "{\"v\":1,\"op\":\"sort\",\"dtype\":\"f64\",\"n\":8,\"values\":\"idx64\",\"memfd\":true,"
    "\"keys_offset\":64,\"values_offset\":0}",
    "{\"v\":1,\"op\":\"sort\",\"dtype\":\"i32\",\"n\":2,\"values\":\"u64\",\"order\":\"desc\","
    "\"stable\":true,\"algorithm\":\"radix\",\"params\":{\"radix_bits\":4},\"device\":0,"
    "\"payload_bytes\":24}",
    "{\"v\":1,\"op\":\"info\",\"id\":[\"x\",{\"y\":null}]}",
    "{\"v\":1,\"op\":\"ping\"}",
};
static const char *const tokens[] = {
    "-1", "1e999", "-0", "null", "[", "{", "}", "]", "\"", ",", ":", "9007199254740993",
    "18446744073709551615", "1.5", "true", "\\u0000", "\"memfd\":true", "\"n\":", "0x10",
    "\"values\":\"idx32\"", "\"params\":{", "{\"a\":1}", "\"keys_offset\":",
    "0", "8", "12", "4294967297", "\"u64\"", "\"idx64\"", "\"desc\"", "\"auto\"",
    "\"radix\"", "false", "{}", "\"ping\"", "\"sort\"", "2", "-0.0", "1E2",
};

static void test_fuzz(void)
{
    char buf[1024];
    int bad = 0, ok = 0, fatals = 0, inconsistent = 0;
    rng_state = 12345;
    for (int it = 0; it < 20000; it++) {
        const char *s = seeds[rng_below(sizeof seeds / sizeof seeds[0])];
        size_t len = strlen(s);
        memcpy(buf, s, len);
        int muts = 1 + (int)rng_below(4);
        for (int m = 0; m < muts; m++) {
            size_t at = rng_below(len + 1);
            switch (rng_below(6)) {
            case 0:     /* flip a byte */
                if (len)
                    buf[rng_below(len)] = (char)rng();
                break;
            case 1:     /* delete a run */
                if (at < len) {
                    size_t k = 1 + rng_below(len - at < 8 ? len - at : 8);
                    memmove(buf + at, buf + at + k, len - at - k);
                    len -= k;
                }
                break;
            case 2: {   /* insert a token */
                const char *t = tokens[rng_below(sizeof tokens / sizeof tokens[0])];
                size_t k = strlen(t);
                if (len + k < sizeof buf) {
                    memmove(buf + at + k, buf + at, len - at);
                    memcpy(buf + at, t, k);
                    len += k;
                }
                break;
            }
            case 3:     /* truncate */
                len = at;
                break;
            case 4: {   /* replace the value after a ':' with a token */
                char *colon = memchr(buf + at, ':', len - at);
                if (!colon)
                    break;
                size_t v0 = (size_t)(colon - buf) + 1, v1 = v0;
                while (v1 < len && buf[v1] != ',' && buf[v1] != '}')
                    v1++;
                const char *t = tokens[rng_below(sizeof tokens / sizeof tokens[0])];
                size_t k = strlen(t);
                if (len - (v1 - v0) + k < sizeof buf) {
                    memmove(buf + v0 + k, buf + v1, len - v1);
                    memcpy(buf + v0, t, k);
                    len = len - (v1 - v0) + k;
                }
                break;
            }
            default:    /* replace a digit */
                for (size_t i = at; i < len; i++)
                    if (buf[i] >= '0' && buf[i] <= '9') {
                        buf[i] = (char)('0' + rng_below(10));
                        break;
                    }
                break;
            }
        }
        gs_proto_req rq;
        gs_err err;
        int fatal = -1;
        int rc = gs_proto_parse_req(buf, len, &rq, &fatal, &err);
        if (rc > 0 || rc < GS_EWRONG || (fatal != 0 && fatal != 1) || (rc == 0 && fatal))
            bad++;
        if (rc == 0) {
            ok++;
            if (rq.op == GS_OP_SORT &&
                (rq.in_bytes > rq.out_bytes || (rq.memfd && rq.fd_bytes < rq.keys_offset) ||
                 (!rq.memfd && rq.payload_bytes != rq.in_bytes)))
                inconsistent++;
        }
        fatals += fatal == 1;
        gs_proto_req_free(&rq);
    }
    tap_diag("fuzz: %d accepted, %d fatal", ok, fatals);
    tap_ok(bad == 0, "fuzz: 20000 mutated headers return 0 or a code, with a sane fatal "
           "flag (%d bad)", bad);
    tap_ok(inconsistent == 0, "fuzz: accepted sorts have consistent sizes (%d not)",
           inconsistent);
}

/* Durations in replies: six decimals from integer digits (gs_jnum_add_ms). */
static void test_add_ms(void)
{
    static const struct { double v; const char *want; } c[] = {
        { 0, "0" }, { 0.012345, "0.012345" }, { 27, "27" }, { 1.5, "1.5" },
        { 1e-7, "0" }, { 4e-7, "0" }, { 6e-7, "0.000001" }, { -2.25, "-2.25" },
        { 123456.0000004, "123456" }, { 99999.9999996, "100000" }, { -1e-8, "0" },
        { 1234567890.123456, "1234567890.123456" },
    };
    int ok = 1;
    char bad[256] = "";
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cJSON *o = cJSON_CreateObject();
        int r = gs_jnum_add_ms(o, "t", c[i].v);
        char *txt = cJSON_PrintUnformatted(o);
        char want[96];
        snprintf(want, sizeof want, "{\"t\":%s}", c[i].want);
        cJSON *back = txt ? cJSON_Parse(txt) : NULL;
        const cJSON *t = back ? cJSON_GetObjectItem(back, "t") : NULL;
        if (!r || !txt || strcmp(txt, want) || !cJSON_IsNumber(t) ||
            fabs(t->valuedouble - c[i].v) > 5.1e-7) {
            ok = 0;
            snprintf(bad, sizeof bad, "%.9g gave %s, wanted %s", c[i].v, txt ? txt : "(null)",
                     want);
        }
        free(txt);
        cJSON_Delete(back);
        cJSON_Delete(o);
    }
    cJSON *o = cJSON_CreateObject();
    gs_jnum_add_ms(o, "t", NAN);
    char *txt = cJSON_PrintUnformatted(o);
    tap_ok(ok && txt && !strcmp(txt, "{\"t\":null}"),
           "durations: six decimals, trailing zeros dropped, rounded, read back within 0.5 ns; "
           "NaN as cJSON writes it (%s) %s", txt ? txt : "", bad);
    free(txt);
    cJSON_Delete(o);
}

int main(void)
{
    test_len();
    test_add_ms();
    test_frame();

    build_stream();
    tap_diag("stream: %d messages, %zu bytes", NMSG, stream_len);
    run_space_commit("whole", SIZE_MAX);
    run_space_commit("byte-at-a-time", 1);
    rng_state = 42;
    run_space_commit("random chunks", 0);
    run_feed("whole buffer", SIZE_MAX);
    run_feed("byte-at-a-time", 1);
    rng_state = 4242;
    run_feed("random chunks", 0);
    free_stream();

    test_reader_errors();
    test_discard();
    test_growth();
    test_parse_valid();
    test_parse_bad();
    test_sizes();
    test_narrow();
    test_bits();
    test_sort_header();
    test_exact_ints();
    test_replies();
    test_reply_sort();
    test_reply_info_stats();
    test_reply_bad();
    test_reply_head();
    test_fuzz();
    return tap_done();
}
