/* Private to the blocking client (gs_client.c, gs_client_sort.c), as libuv's
 * internal.h: the connection's state, and the framing and failure helpers
 * that the ping/info/stats calls and the sort call share. Names here start
 * with client_. */
#ifndef GS_CLIENT_INT_H
#define GS_CLIENT_INT_H

#include <stdint.h>
#include <sys/uio.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_jnum.h"
#include "gs_paths.h"
#include "gs_proto.h"
#include "gs_reply.h"

/* Reply headers are small (info and stats are the largest); this only
 * bounds what a confused peer can make us allocate. Requests may be larger
 * so tests can send over-long headers to the daemon. */
#define CLIENT_MAX_REPLY_HEADER (4u << 20)
#define CLIENT_MAX_REQ_HEADER (64u << 20)
#define CLIENT_IOV_MAX 8

/* gs_client.h's handle; that header is not included here, so that the
 * files including both form no include cycle. */
typedef struct gs_client gs_client;

struct gs_client {
    int fd;
    double timeout_s;       /* 0: wait forever; else the longest wait without progress */
    int broken;             /* framing lost or peer closed: every later call fails */
    int peer_gone;          /* a send failed because the daemon closed: it may have said why */
    char broken_why[256];
    uint64_t next_id;
    gs_proto_rd rd;         /* holds the last reply header's text until the next one */
    char path[GS_PATHS_SOCKET_MAX];
};

/* Fail with the message, and mark the connection unusable. The first
 * cause is the one kept: what goes wrong afterwards (reading the error
 * reply a refused send may have left, say) follows from it. */
int client_set_broken(gs_client *c, gs_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Mark the connection unusable for `why` unless it already is. */
void client_note_broken(gs_client *c, const char *why);
/* 0, or why no request can be sent on c. */
int client_check_usable(const gs_client *c, gs_err *err);

/* Send a frame head for `hdr` (and the descriptor fd, if >= 0) followed by
 * the payload iovecs. */
int client_send_frame(gs_client *c, const cJSON *hdr, const struct iovec *pl, int npl, int fd,
                      gs_err *err);
/* Read one reply header and its head (gs_reply_head_parse). The payload, if
 * any, is left unread: head->payload_bytes says how long it is. *out is the
 * caller's to delete. */
int client_recv_header(gs_client *c, cJSON **out, gs_reply_head *head, gs_err *err);
/* The last reply header with its text, for parsers that read integers
 * exactly; valid until the next client_recv_header. */
gs_jnum_doc client_reply_doc(const gs_client *c, const cJSON *h);
/* Read into the iovecs until they are full; EOF is an error naming `what`. */
int client_recv_all(gs_client *c, struct iovec *iov, int n, const char *what, gs_err *err);
/* A reply with "ok":false: its code, and "gsortd: MESSAGE". Notes "close". */
int client_reply_error(gs_client *c, const gs_reply_head *head, gs_err *err);
/* One exchange: client_send_frame (hdr is deleted, sent or not), then
 * client_recv_header. A send that failed because the daemon closed reports
 * the refusal it left in our receive queue, not the broken pipe. */
int client_exchange(gs_client *c, cJSON *hdr, const struct iovec *pl, int npl, int fd,
                    cJSON **out, gs_reply_head *head, gs_err *err);

#endif
