/* The gsortd wire protocol (man/gsort-protocol.7), shared by the daemon and
 * the clients: message framing, an incremental reader that resumes across
 * partial reads and never allocates from a length the peer declared
 * (gs_proto.c), the parsing and validation of request headers
 * (gs_proto_req.c), the client's request headers (gs_proto_write.c), and
 * the frame of every reply. The bodies of replies are gs_reply.h's.
 *
 * A message, in either direction, is
 *     u32 header length, big-endian (1 .. max header bytes)
 *     the header: one JSON object, UTF-8, not NUL-terminated
 *     exactly header.payload_bytes raw bytes (0 when absent)
 * A sort request may instead carry a memfd (SCM_RIGHTS, sent with the
 * message's first bytes) holding the keys and values; the daemon sorts it in
 * place and the reply carries no payload. */
#ifndef GS_PROTO_H
#define GS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_lex.h"
#include "gs_narrow.h"
#include "gs_types.h"

#define GS_PROTO_VERSION 1
#define GS_PROTO_LEN_BYTES 4
#define GS_PROTO_DEFAULT_MAX_HEADER 65536u
#define GS_PROTO_MAX_FDS 2          /* descriptors accepted with one message */
#define GS_PROTO_MAX_N (UINT64_C(1) << 53)   /* exact in a JSON number */

/* ---- framing ---- */

/* The 4-byte prefix of a header of `hlen` bytes. */
void gs_proto_put_len(uint8_t out[GS_PROTO_LEN_BYTES], uint32_t hlen);
uint32_t gs_proto_get_len(const uint8_t in[GS_PROTO_LEN_BYTES]);
/* A whole frame head (length prefix + header text) for `hdr`, printed
 * unformatted, in one malloc'd buffer the caller frees. GS_ETOOBIG when the
 * text exceeds `max_header`. */
int gs_proto_frame(const cJSON *hdr, size_t max_header, uint8_t **out, size_t *len, gs_err *err);

/* ---- incremental reader ----
 * Redis-style: the connection asks where the next bytes go (rd_space), reads
 * at most that many into it, and commits what it got. Space never extends
 * past the current message, so a read never swallows the next one. The
 * payload buffer grows with the bytes that actually arrive (doubling from
 * 64 KiB, capped at the expected length), so a peer that declares 4 GiB and
 * sends 10 bytes costs 64 KiB. */
enum gs_proto_rd_state {
    GS_RD_LEN = 0,       /* reading the 4-byte length */
    GS_RD_HEADER,        /* reading the header text */
    GS_RD_HEADER_DONE,   /* header complete: call gs_proto_rd_expect */
    GS_RD_PAYLOAD,       /* reading (or discarding) the payload */
    GS_RD_DONE,          /* message complete: take the payload, then reset */
};

typedef struct gs_proto_rd {
    size_t max_header;
    int state;                 /* enum gs_proto_rd_state */
    uint8_t len[GS_PROTO_LEN_BYTES];
    size_t len_have;
    char *hdr;                 /* hlen + 1 bytes, NUL-terminated when complete */
    uint32_t hlen;
    size_t hdr_have;
    uint8_t *payload;
    uint64_t payload_len, payload_have;
    size_t payload_cap;
    int discard;               /* payload bytes are read into scratch and dropped */
    uint8_t *scratch;          /* 64 KiB, allocated on first discard */
    uint64_t msg_bytes;        /* bytes of this message committed so far */
} gs_proto_rd;

void gs_proto_rd_init(gs_proto_rd *rd, size_t max_header);
void gs_proto_rd_free(gs_proto_rd *rd);
/* Back to GS_RD_LEN for the next message (frees header and payload). */
void gs_proto_rd_reset(gs_proto_rd *rd);
/* Where the next bytes go and how many this state still wants (> 0 in the
 * reading states; 0 in HEADER_DONE and DONE). May grow the payload buffer:
 * GS_ENOMEM. */
int gs_proto_rd_space(gs_proto_rd *rd, void **buf, size_t *len, gs_err *err);
/* `n` bytes (at most the space's length) were written into the space.
 * Advances the state. A header length of 0 (GS_EINVAL) or above max_header
 * (GS_ETOOBIG) is an error the connection cannot recover from. */
int gs_proto_rd_commit(gs_proto_rd *rd, size_t n, gs_err *err);
/* Copying convenience over space/commit (tests, clients): consume up to
 * `len` bytes of `data`, stopping at HEADER_DONE or DONE; *used says how
 * many were taken. */
int gs_proto_rd_feed(gs_proto_rd *rd, const void *data, size_t len, size_t *used, gs_err *err);
/* In HEADER_DONE (and after): the NUL-terminated header text. */
const char *gs_proto_rd_header(const gs_proto_rd *rd, size_t *len);
/* In HEADER_DONE: the payload that follows is `bytes` long; keep it
 * (keep != 0) or read and drop it. 0 bytes goes straight to DONE. */
void gs_proto_rd_expect(gs_proto_rd *rd, uint64_t bytes, int keep);
/* In PAYLOAD: drop the rest of the payload and what was kept of it (the
 * request is refused after all); the reader still reads it to its end. */
void gs_proto_rd_drop(gs_proto_rd *rd);
/* In DONE: hand the kept payload to the caller (free() it; NULL when there
 * was none) and reset for the next message. */
uint8_t *gs_proto_rd_take(gs_proto_rd *rd, uint64_t *len);

/* ---- requests ---- */

typedef enum gs_proto_op {
    GS_OP_PING = 0, GS_OP_INFO, GS_OP_STATS, GS_OP_SORT, GS_OP_COUNT
} gs_proto_op;
const char *gs_proto_op_name(int op);   /* "ping", ... */

typedef struct gs_proto_req {
    int op;                     /* gs_proto_op */
    cJSON *id;                  /* the request's "id", duplicated, or NULL */
    uint64_t payload_bytes;     /* declared inline payload ("payload_bytes", default 0) */
    /* sort: "dtype", "values" (none|u32|u64|idx32|idx64), "order" ("asc",
     * the default, or "desc"), "stable" (bool, default false),
     * "rows" (k >= 1 dividing n: k equal rows, each sorted on its own),
     * "topk" (k, at most a row's length: only each row's first k in the
     * order; the reply carries k keys and values of each row, a memfd holds
     * them in each row's first k places), "sorted" (with topk, default
     * true; false: the k in any order), "segments" (S >= 1, not with rows
     * or topk: S segments of any lengths, each sorted on its own, given by
     * S + 1 u64 offsets in host order, 0 first, never decreasing, n last,
     * sent inline after the keys and values or in the memfd at
     * "offsets_offset"; the daemon copies and checks them before use) */
    gs_shape shape;
    uint64_t n;
    char algorithm[32];         /* "algorithm": "" (auto) or a registry name */
    gs_params params;           /* "params": {"name": int, ...} with an algorithm */
    int has_params;
    int device;                 /* "device": index to force, -1: any */
    int split;                  /* "split": true 1 (consider a split over devices at any
                                   size; the reply says why not), false -1 (never),
                                   absent 0 (the scheduler decides) */
    int memfd;                  /* "memfd": true: keys/values in the passed fd */
    uint64_t keys_offset;       /* "keys_offset", default 0 */
    uint64_t values_offset;     /* "values_offset", default keys_offset + n * key size */
    uint64_t offsets_offset;    /* "offsets_offset": with segments and memfd (required
                                   then), where the S + 1 offsets lie, 8-aligned */
    uint64_t in_bytes;          /* inline bytes a sort carries in: keys (+ u32/u64 values)
                                   (+ 8 * (S + 1) bytes of segment offsets) */
    uint64_t out_bytes;         /* bytes the reply carries: keys (+ any values) */
    uint64_t fd_bytes;          /* memfd: bytes the fd must hold (end of the last array) */
    /* "lexsort": [{"dtype": T, "order": "asc"|"desc"}, ...], 1 to 8 keys, the
     * primary first (gs_lex.h): the indices that order n rows by them,
     * stable. Instead of "dtype" (each key has its own) and of "order",
     * "stable", "rows", "topk" and "segments"; "values" idx32 or idx64, the
     * answer. The key arrays follow one another, each from a multiple of 8
     * bytes, inline or in the memfd from keys_offset (8-aligned); the
     * indices come back inline or at values_offset (default: after the last
     * key). shape.dtype is then the composite word the keys are packed into
     * (u32 or u64) and shape.stable 1. */
    gs_lex lex;
    uint64_t lex_bytes;         /* the key arrays' bytes, padding included */
    /* "dtype" one of u8, i8, u16, i16, f16, bf16 (gs_narrow.h): 8- and 16-bit
     * keys, n * 1 or 2 bytes where a key array goes; shape.dtype is then u32,
     * the words they are sorted as. Not with topk. */
    int narrow;                 /* gs_narrow_dt; GS_NW_NONE: shape.dtype's keys */
} gs_proto_req;

/* The bytes of one key of rq as it lies in the client's arrays. */
static inline uint64_t gs_proto_key_bytes(const gs_proto_req *rq)
{
    return rq->narrow ? gs_narrow_row(rq->narrow)->bytes : gs_dtype_size(rq->shape.dtype);
}

/* Parse and check a request header.
 * Returns 0, or GS_EINVAL/GS_ETOOBIG/GS_EUNSUPPORTED with the reason. After
 * any failure *fatal says whether the framing is lost (the header is not a
 * JSON object, "payload_bytes" is missing-but-needed/malformed): the reader
 * cannot know where the next message starts and the connection must be
 * closed after the error reply. When *fatal is 0, rq->payload_bytes is
 * valid, so the payload can be skipped and the connection kept. rq->id is
 * set whenever the header was a JSON object, so errors can echo it.
 * Checked: "v" == GS_PROTO_VERSION; op known; dtype and values known; n an
 * integer in [0, GS_PROTO_MAX_N]; sizes not overflowing; inline: payload_bytes
 * == in_bytes; memfd: payload_bytes == 0 and offsets aligned to the element
 * size; params only with an algorithm, integer values. Whether the
 * algorithm or device exists is the daemon's business. */
int gs_proto_parse_req(const char *hdr, size_t len, gs_proto_req *rq, int *fatal, gs_err *err);
void gs_proto_req_free(gs_proto_req *rq);
/* Client side: the header of a sort request with rq's fields (dtype, n,
 * values, order, stable, algorithm/params/device when set, memfd and its
 * offsets, or payload_bytes = in_bytes inline; rq->id when set). Fills
 * rq->in_bytes/out_bytes/fd_bytes. NULL with GS_ETOOBIG/GS_ENOMEM. */
cJSON *gs_proto_sort_header(gs_proto_req *rq, gs_err *err);
/* The "lexsort" field of a sort header (gs_proto_lex.c): its keys into
 * rq->lex (after "n" and "values" were read), rq->shape set for the
 * composite. GS_EINVAL with the reason for a malformed list or a field that
 * does not go with it (cjson: the header). */
int gs_proto_lex_parse(const cJSON *h, const cJSON *list, gs_proto_req *rq, gs_err *err);
/* in_bytes, out_bytes, fd_bytes of a lexsort, as gs_proto_sort_sizes. */
int gs_proto_lex_sizes(gs_proto_req *rq, gs_err *err);
/* Client side: the "lexsort" list of rq->lex (NULL: out of memory). */
cJSON *gs_proto_lex_list(const gs_proto_req *rq);
/* Client side: {"v":1,"op":OP[,"id":ID]}, a request that is only an op
 * (ping, info, stats; any string, for tests). NULL with GS_ENOMEM. */
cJSON *gs_proto_op_header(const char *op, const cJSON *id, gs_err *err);
/* Sizes of a sort: in_bytes, out_bytes, fd_bytes from dtype, payload, n and
 * the offsets (memfd). GS_ETOOBIG on overflow, GS_EINVAL on misalignment. */
int gs_proto_sort_sizes(gs_proto_req *rq, gs_err *err);

/* ---- replies ---- */

/* {"v":1,"ok":true,"op":OP[,"id":ID]}: the start of every success reply. */
cJSON *gs_proto_reply_ok(int op, const cJSON *id);
/* {"v":1,"ok":false[,"id":ID],"error":{"code":"GS_EINVAL","message":MSG}}
 * plus "close":true when the daemon closes the connection after it. */
cJSON *gs_proto_reply_error(const cJSON *id, int code, const char *msg, int closing);

#endif
