/* libFuzzer target for the wire protocol's receiving side: arbitrary bytes
 * go through the incremental reader (gs_proto_rd_*) in chunks whose sizes
 * the input's first two bytes choose, the way a daemon connection gets them
 * from partial reads; every complete header goes to gs_proto_parse_req, and
 * every accepted sort request is written back with gs_proto_sort_header and
 * parsed again. Every header is also read the way a client reads a reply
 * (gs_reply's head, sort, info and stats parsers), and an accepted sort
 * reply is built again and parsed to the same values. Errors are fine; a
 * crash, a sanitizer report, or a broken
 * invariant (checked with abort()) is a finding. Also built with the normal
 * compiler into the corpus replay test (tests/fuzz/replay.c). */
#include "config.h"
#include "gs_proto.h"
#include "gs_reply.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

/* Chunk sizes from a tiny LCG: 1..16 bytes mostly, sometimes everything. */
static size_t next_chunk(uint32_t *s, size_t left)
{
    *s = *s * 1103515245u + 12345u;
    uint32_t r = *s >> 16;
    size_t k = (r & 7) == 0 ? left : 1 + (r >> 3) % 16;
    return k < left ? k : left;
}

/* An accepted sort request survives being written by the client side and
 * parsed again with the same meaning. */
static void roundtrip(gs_proto_req *rq)
{
    gs_err err;
    gs_proto_req copy = *rq;
    copy.id = NULL;           /* the id's JSON is rq's; do not free it twice */
    cJSON *h = gs_proto_sort_header(&copy, &err);
    if (!h)
        return;               /* e.g. offsets past 2^53: refused, not a bug */
    uint8_t *frame;
    size_t flen;
    if (gs_proto_frame(h, SIZE_MAX, &frame, &flen, &err) == 0) {
        gs_proto_req back;
        int fatal;
        int rc = gs_proto_parse_req((const char *)frame + GS_PROTO_LEN_BYTES,
                                    flen - GS_PROTO_LEN_BYTES, &back, &fatal, &err);
        CHECK(rc == 0);
        CHECK(back.op == GS_OP_SORT && back.shape.dtype == rq->shape.dtype && back.n == rq->n &&
              back.shape.payload == rq->shape.payload &&
              back.shape.descending == rq->shape.descending &&
              back.shape.stable == rq->shape.stable && back.memfd == rq->memfd &&
              back.in_bytes == rq->in_bytes && back.out_bytes == rq->out_bytes &&
              back.fd_bytes == rq->fd_bytes && back.device == rq->device &&
              !strcmp(back.algorithm, rq->algorithm));
        gs_proto_req_free(&back);
        free(frame);
    }
    cJSON_Delete(h);
}

/* The header as a client reads a reply: any outcome but a crash is fine;
 * an accepted sort reply survives being built and parsed again. */
static void as_reply(const char *hdr, size_t hlen)
{
    cJSON *h = cJSON_ParseWithLength(hdr, hlen);
    gs_jnum_doc doc = { hdr, hlen, h };
    gs_err err;
    gs_reply_head head;
    if (gs_reply_head_parse(h, &doc, &head, &err) == 0)
        CHECK(head.payload_bytes <= GS_PROTO_MAX_N && head.message != NULL);
    gs_reply_sort rs;
    if (gs_reply_sort_parse(h, &doc, &rs, &err) == 0) {
        cJSON *b = gs_reply_sort_build(&rs, head.id, &err);
        char *t = b ? cJSON_PrintUnformatted(b) : NULL;
        cJSON *h2 = t ? cJSON_Parse(t) : NULL;
        gs_jnum_doc doc2 = { t, t ? strlen(t) : 0, h2 };
        gs_reply_sort back;
        if (t) {
            CHECK(gs_reply_sort_parse(h2, &doc2, &back, &err) == 0);
            CHECK(back.n == rs.n && back.dtype == rs.dtype && back.values == rs.values &&
                  back.device == rs.device && !strcmp(back.algorithm, rs.algorithm) &&
                  !strcmp(back.plan, rs.plan) && !strcmp(back.fallback, rs.fallback) &&
                  back.params.count == rs.params.count);
            for (int i = 0; i < rs.params.count; i++)
                CHECK(gs_params_get(&back.params, rs.params.p[i].name, 1) ==
                      rs.params.p[i].value);
        }
        cJSON_Delete(h2);
        cJSON_free(t);
        cJSON_Delete(b);
    }
    gs_reply_info info;
    if (gs_reply_info_parse(h, &doc, &info, &err) == 0)
        gs_reply_info_free(&info);
    else
        CHECK(info.devices == NULL && info.algorithms == NULL);
    gs_reply_stats st;
    if (gs_reply_stats_parse(h, &doc, &st, &err) == 0)
        gs_reply_stats_free(&st);
    else
        CHECK(st.routes == NULL);
    cJSON_Delete(h);
}

static void on_header(gs_proto_rd *rd, int *closed)
{
    size_t hlen;
    const char *hdr = gs_proto_rd_header(rd, &hlen);
    CHECK(hdr && hlen == rd->hlen && hlen > 0 && hlen <= rd->max_header);
    as_reply(hdr, hlen);
    gs_proto_req rq;
    int fatal = -1;
    gs_err err;
    err.msg[0] = '\0';
    int rc = gs_proto_parse_req(hdr, hlen, &rq, &fatal, &err);
    CHECK(fatal == 0 || fatal == 1);
    CHECK(rc <= 0);
    if (rc < 0) {
        CHECK(err.msg[0] != '\0');    /* every refusal says why */
    } else {
        CHECK(!fatal && rq.op >= 0 && rq.op < GS_OP_COUNT);
        if (rq.op == GS_OP_SORT) {
            CHECK(rq.n <= GS_PROTO_MAX_N);
            CHECK(rq.memfd ? rq.payload_bytes == 0 : rq.payload_bytes == rq.in_bytes);
            CHECK(rq.out_bytes >= rq.in_bytes || rq.memfd);
            roundtrip(&rq);
        } else {
            CHECK(rq.payload_bytes == 0);
        }
    }
    if (fatal) {
        *closed = 1;           /* the daemon closes after the error reply */
    } else {
        /* like the daemon: keep a sort's payload, drop anything else */
        gs_proto_rd_expect(rd, rq.payload_bytes, rc == 0 && rq.op == GS_OP_SORT);
    }
    gs_proto_req_free(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint32_t seed = data[0] | (uint32_t)data[1] << 8;
    int use_feed = data[0] & 1;     /* the copying convenience or space/commit */
    /* a small limit sometimes, so "header too long" is reachable */
    size_t max_header = (data[1] & 0x80) ? 64 : 0;
    data += 2;
    size -= 2;

    gs_proto_rd rd;
    gs_proto_rd_init(&rd, max_header);
    size_t off = 0;
    int closed = 0;
    while (!closed) {
        if (rd.state == GS_RD_HEADER_DONE) {
            on_header(&rd, &closed);
            continue;
        }
        if (rd.state == GS_RD_DONE) {
            uint64_t plen = 0;
            int kept = !rd.discard && rd.payload_len;
            uint64_t want = rd.payload_len;
            uint8_t *p = gs_proto_rd_take(&rd, &plen);
            CHECK(kept ? p != NULL && plen == want : p == NULL && plen == 0);
            free(p);
            CHECK(rd.state == GS_RD_LEN && rd.msg_bytes == 0);
            continue;
        }
        if (off == size)
            break;
        gs_err err;
        size_t k = next_chunk(&seed, size - off);
        if (use_feed) {
            size_t used = 0;
            int rc = gs_proto_rd_feed(&rd, data + off, k, &used, &err);
            CHECK(used <= k);
            off += used;
            if (rc < 0)
                closed = 1;
            continue;
        }
        void *buf;
        size_t room;
        if (gs_proto_rd_space(&rd, &buf, &room, &err) < 0)
            break;
        CHECK(room > 0);
        if (k > room)
            k = room;
        memcpy(buf, data + off, k);
        off += k;
        if (gs_proto_rd_commit(&rd, k, &err) < 0)
            closed = 1;
    }
    /* committing past the space is refused, never written */
    if (!closed && rd.state == GS_RD_LEN) {
        gs_err err;
        CHECK(gs_proto_rd_commit(&rd, GS_PROTO_LEN_BYTES + 1, &err) < 0);
    }
    gs_proto_rd_free(&rd);
    return 0;
}
