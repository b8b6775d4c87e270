/* A blocking client for the gsortd socket protocol (man/gsort-protocol.7):
 * connect, send a sort (inline, or zero-copy through a sealed memfd) or a
 * ping/info/stats, read the reply. One request at a time per connection;
 * use one gs_client per thread. The tests, the benchmarks and the public
 * client library are built on it. */
#ifndef GS_CLIENT_H
#define GS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_proto.h"
#include "gs_reply.h"
#include "gs_types.h"

typedef struct gs_client gs_client;

/* Connect to `path` (NULL: the default socket, see gs_paths_socket).
 * GS_EIO with the path and errno text when nothing listens there; errno
 * is then connect()'s (ENOENT, ECONNREFUSED, ...). */
int gs_client_connect(gs_client **out, const char *path, gs_err *err);
void gs_client_close(gs_client *c);
/* Whether the connection cannot carry another request: 0 when it can; 1
 * when an earlier failure broke it or the daemon closed it while it was
 * idle (checked without blocking), with the first cause in `why`. The
 * caller then connects anew (libgsort does). */
int gs_client_stale(gs_client *c, char *why, size_t len);
/* The socket descriptor (tests send raw bytes through it). */
int gs_client_fd(const gs_client *c);
/* Reply timeout for every later call (default 0: wait forever). */
void gs_client_set_timeout(gs_client *c, double seconds);

/* Shared memory for zero-copy sorts: a memfd of `bytes` (0: nothing
 * mapped), mapped shared, sealed against shrinking and growing (the daemon
 * refuses an unsealed one, since truncation while it sorts would crash it).
 * GS_EIO when memfd_create or sealing is not available here (libgsort then
 * falls back to ordinary memory), GS_ENOMEM when it cannot be sized or
 * mapped, GS_ETOOBIG above INT64_MAX bytes. */
typedef struct gs_client_shm {
    int fd;
    void *ptr;
    size_t size;
} gs_client_shm;
int gs_client_shm_alloc(gs_client_shm *shm, size_t bytes, gs_err *err);
/* The same, with the name /proc/PID/maps shows ("/memfd:NAME"); the plain
 * call names it "gsort". */
int gs_client_shm_alloc_named(gs_client_shm *shm, const char *name, size_t bytes,
                              gs_err *err);
void gs_client_shm_free(gs_client_shm *shm);

typedef struct gs_client_sort {
    gs_shape shape;
    size_t n;
    void *keys;                 /* n keys, sorted in place (top-k, shape.topk: inline,
                                   each row's k packed at the front of keys and values;
                                   in shared memory, in each row's first k places) */
    void *values;               /* n values (u32/u64 in and out, idx out); NULL for none */
    const uint64_t *offsets;    /* with shape.segments S: S + 1 offsets, sent after the
                                   values (inside shm when it is set), never sent back */
    const char *algorithm;      /* NULL: the daemon's plan */
    const char *params;         /* "name=value,..." with an algorithm, or NULL */
    int device;                 /* -1: any */
    int split;                  /* 0: the daemon decides; 1: consider a split over
                                   devices at any size (split_declined says why not);
                                   -1: never split */
    const gs_client_shm *shm;   /* non-NULL: keys/values lie inside it; sent as memfd */
    const gs_lex *lex;          /* non-NULL (nkeys > 0): a lexsort of n rows. keys holds
                                   its key arrays as gs_lex_layout places them (offsets
                                   filled in by the call), values gets the indices
                                   (shape.payload idx32 or idx64; shape.dtype is set
                                   from the keys) */
    int narrow;                 /* gs_narrow_dt: n keys of 1 or 2 bytes of that type
                                   (shape.dtype is then ignored); GS_NW_NONE: shape's */
} gs_client_sort;

/* What the daemon said about a served sort. */
typedef struct gs_client_result {
    int device;                 /* -1: host */
    char device_name[256];
    char algorithm[32];
    char params[512];           /* "name=value,..." */
    char plan[32];              /* "tuned", "default", "override", "busy", "fallback" */
    char fallback[512];         /* why the first choice failed, "" if it did not */
    unsigned chunks;            /* out of core: pieces sorted in turn; 0: none */
    unsigned nparts;            /* plan "split": the parts, on several devices at once */
    struct {
        int device;             /* -1: the host (its device failed) */
        char algorithm[32];
        uint64_t n;
        unsigned chunks;
        double ms, predicted_ms;
    } parts[8];
    char split_declined[256];   /* asked for a split (split = 1) and not split: why */
    double queue_ms, receive_ms, upload_ms, sort_ms, download_ms, merge_ms, total_ms;
    gs_reply_times times;       /* all of the reply's times_ms, the spans of total
                                   and a device run's steps included */
} gs_client_result;

/* The request of a sort as the protocol has it (op, shape, device,
 * algorithm and parameters; no transport): what gs_client_sort_run sends,
 * for a caller that frames and sends it itself. */
int gs_client_sort_req(const gs_client_sort *s, gs_proto_req *rq, gs_err *err);

/* Sort through the daemon. Inline: keys (and u32/u64 values) are sent, the
 * sorted arrays are read back into the same buffers. With shm: only the
 * header and the descriptor are sent and the daemon sorts in place. A
 * daemon-side error comes back as its GS_E* code and message (err->msg
 * starts with "gsortd: "). `res` may be NULL. */
int gs_client_sort_run(gs_client *c, const gs_client_sort *s, gs_client_result *res,
                       gs_err *err);

/* Send {"v":1,"op":op} ("ping", "info", "stats") and return the whole reply
 * header (the caller cJSON_Deletes it). A reply with "ok":false becomes its
 * error code, with the header still returned when `reply` is not NULL. */
int gs_client_call(gs_client *c, const char *op, cJSON **reply, gs_err *err);
/* The info op, parsed: *out's strings and arrays point into *hdr; free
 * with gs_reply_info_free(out), then cJSON_Delete(*hdr). */
int gs_client_info(gs_client *c, gs_reply_info *out, cJSON **hdr, gs_err *err);

/* Lower level, for tests: send one frame (header object, optional payload,
 * optional descriptor) and read one reply frame: the header (caller
 * deletes) and up to `cap` payload bytes into `buf` (*got: how many the
 * reply carried; an over-long payload is GS_ETOOBIG after draining it). */
int gs_client_send(gs_client *c, const cJSON *hdr, const void *payload, size_t len, int fd,
                   gs_err *err);
int gs_client_recv(gs_client *c, cJSON **hdr, void *buf, size_t cap, uint64_t *got,
                   gs_err *err);

#endif
