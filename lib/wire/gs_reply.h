/* The bodies of gsortd's replies (man/gsort-protocol.7, "REPLIES"), in one
 * place for both ends: plain C structs for the sort, info and stats
 * replies, builders that turn them into reply headers (the daemon's side),
 * and parsers that read them back (the clients' side), with the head every
 * reply shares (ok, id, payload_bytes, close, error). The frame itself,
 * {"v":1,"ok":...}, is gs_proto.h's.
 *
 * Builders return a new header (the caller frees it, or hands it to the
 * connection, which adds "payload_bytes"), or NULL with GS_ENOMEM. Parsers
 * take the header and, for exact integers, the text it was parsed from
 * (gs_jnum_doc; NULL: numbers as doubles); what they fill points into the
 * header (strings) or was allocated by them (the arrays of info and stats,
 * freed with gs_reply_info_free / gs_reply_stats_free), so it lives as long
 * as the header. A reply that lacks a field or holds one of the wrong kind
 * is GS_ECORRUPT, naming the field. */
#ifndef GS_REPLY_H
#define GS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_jnum.h"
#include "gs_proto.h"
#include "gs_types.h"

/* ---- what every reply has ---- */

typedef struct gs_reply_head {
    int ok;                     /* "ok": true */
    const cJSON *id;            /* "id" as the request had it, or NULL */
    uint64_t payload_bytes;     /* bytes after the header (0 when absent) */
    int close;                  /* "close": true: the daemon closes after it */
    int code;                   /* !ok: "error"."code" as GS_E* (GS_EIO when unknown) */
    const char *message;        /* !ok: "error"."message" ("(no message)" when absent) */
} gs_reply_head;

/* GS_ECORRUPT when h is not an object or payload_bytes is not a byte count
 * (an integer in [0, 2^53]); the rest is read leniently, since an error
 * reply must be understood whatever else it lacks. */
int gs_reply_head_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_head *out,
                        gs_err *err);
/* The code whose name (gs_strerror) is `name`; GS_EIO when none is. */
int gs_reply_code(const char *name);

/* An error reply: gs_proto_reply_error's, with "op" added after it when
 * op >= 0 (the request was read far enough to name one). */
cJSON *gs_reply_error_build(const cJSON *id, int op, int code, const char *msg, int closing,
                            gs_err *err);

/* ---- sort ---- */

/* total = receive + admit + queue + run + handback, five spans of one
 * clock that follow each other; a device run's wall time is further split
 * into setup, enqueue, wait, writeback and release (the device's own
 * upload, sort and download happen within them, mostly during wait). */
typedef struct gs_reply_times {
    double queue;       /* waiting for a worker */
    double receive;     /* reading the request */
    double upload;      /* host -> device */
    double sort;        /* kernels on a device, or the host sort's wall time */
    double download;    /* device -> host */
    double total;       /* first byte received to the reply queued */
    double merge;       /* out of core or split: the host merge of the pieces
                           (written only when chunks or the parts say there
                           were some) */
    /* spans of total (optional when parsed: 0 from a daemon without them) */
    double admit;       /* request read to submitted: checks, mapping the
                           memfd, routing (and a small host sort run inline) */
    double run;         /* a worker's run, start to hand-back */
    double handback;    /* hand-back to the reply: waking the client's loop */
    /* a device run's wall time by step (written only for a device) */
    double setup, enqueue, wait, writeback, release;
    double pack;        /* a lexsort: packing its keys into words (written only then) */
} gs_reply_times;       /* milliseconds: "times_ms" */

/* One part of a split request ("split": [...]). */
typedef struct gs_reply_part {
    int device;                 /* -1: the host sort (its device failed; null) */
    const char *algorithm;
    uint64_t n;
    unsigned chunks;            /* out of core on its device; 0: whole */
    double ms, predicted_ms;    /* its run, and the router's predicted finish */
} gs_reply_part;
#define GS_REPLY_PARTS_MAX 8

typedef struct gs_reply_sort {
    uint64_t n;
    gs_dtype dtype;
    int narrow;                 /* gs_narrow_dt: the keys' type instead of dtype's (which
                                   is then u32); GS_NW_NONE: dtype's */
    gs_payload values;
    int device;                 /* the device's index; -1: the host ("device": null) */
    const char *device_name;    /* with a device */
    const char *device_platform;
    const char *algorithm;
    gs_params params;           /* the set that ran (integers written exactly) */
    const char *plan;           /* "tuned", "default", "override", "busy", "fallback" */
    const char *fallback;       /* why the first choice failed; NULL or "": none */
    unsigned chunks;            /* out of core: pieces the device sorted in turn; 0: none */
    gs_reply_part parts[GS_REPLY_PARTS_MAX];   /* plan "split": the parts */
    unsigned nparts;
    const char *split_declined; /* the client asked for a split and got none: why */
    gs_reply_times times_ms;
} gs_reply_sort;

cJSON *gs_reply_sort_build(const gs_reply_sort *r, const cJSON *id, gs_err *err);
int gs_reply_sort_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_sort *out,
                        gs_err *err);

/* ---- info ---- */

typedef struct gs_reply_info_dev {
    const char *name, *platform, *driver, *type;   /* "index" is its position */
    int enabled;                /* chosen by the devices setting and opened */
    int tuned;                  /* has a plan in the database */
    long plan_entries;
    unsigned queued;            /* waiting or running */
    int healthy;                /* not resting after failures */
    int ready;                  /* the programs of its plan are built; a daemon
                                   before the field: taken as 1 */
    unsigned lanes;             /* requests it works on at once (0: not served; a
                                   daemon before the field: 1) */
} gs_reply_info_dev;

typedef struct gs_reply_limits {
    uint64_t max_request_bytes;
    unsigned max_clients;
    uint32_t max_header_bytes;
    double idle_timeout_s, io_timeout_s;
} gs_reply_limits;

/* Where the daemon stops sorting as a client could in its own process
 * (issue 36), per plan shape: below local_below keys it sorts that shape
 * with one host thread, the sort libgsort links in, so a round trip there
 * cannot pay. From there on `device` sorts it (its plan or built-in
 * defaults), or -1: the host sort on several threads. */
typedef struct gs_reply_crossover {
    int key_bits;               /* 32 or 64 */
    gs_payload payload;
    int stable;
    uint64_t local_below;       /* UINT64_MAX (JSON null): at every size */
    int device;                 /* from local_below on; -1 the host's threads */
} gs_reply_crossover;

typedef struct gs_reply_info {
    const char *version;        /* the daemon's PACKAGE_VERSION */
    int protocol;               /* parsed; the builder writes GS_PROTO_VERSION */
    long pid;
    const char *socket;
    const char *db;             /* the --db path; NULL or "": null (the default) */
    int db_ok;
    gs_reply_info_dev *devices;
    size_t ndevices;
    unsigned host_threads;
    const char **algorithms;
    size_t nalgorithms;
    gs_reply_limits limits;
    struct { long pid; unsigned uid, gid; } peer;   /* the asking client (SO_PEERCRED) */
    gs_reply_crossover *crossover;  /* a daemon before them: none */
    size_t ncrossover;
} gs_reply_info;

cJSON *gs_reply_info_build(const gs_reply_info *r, const cJSON *id, gs_err *err);
int gs_reply_info_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_info *out,
                        gs_err *err);
/* Frees what gs_reply_info_parse allocated (only after it). */
void gs_reply_info_free(gs_reply_info *r);

/* ---- stats ---- */

typedef struct gs_reply_route {
    int device;                 /* -1: the host */
    const char *algorithm;
    unsigned long count, errors;
    double mean_ms;             /* parsed; the builder writes total_ms / count */
    double max_ms, total_ms, queue_ms, sort_ms;
    /* the queue time's percentiles (within its power-of-two bucket of
     * microseconds, gs_hist.h); a daemon before them: 0 */
    double queue_p50_ms, queue_p90_ms, queue_p99_ms;
} gs_reply_route;

typedef struct gs_reply_stats {
    double uptime_s;
    struct { unsigned current; unsigned long total, rejected, denied; } clients;
    struct {
        unsigned long total, ok, errors, fallbacks;
        unsigned long by_op[GS_OP_COUNT];   /* indexed by gs_proto_op */
    } requests;
    struct { uint64_t in, out; } bytes;
    /* client blocks (memfds) kept across requests and pinned for device
     * copies: "blocks" */
    struct {
        unsigned long mapped, reused;       /* memfd requests: a new mapping, or a kept one */
        uint64_t pinned_bytes, max_pinned_bytes;
        unsigned long pinned, refused;      /* registrations made, and refused (cap, driver) */
        uint64_t kept_bytes;                /* the address space kept blocks take now */
        uint64_t max_mapped_bytes, max_mapped_bytes_per_client;
        unsigned long not_kept;             /* files the bounds did not let be kept */
    } blocks;
    /* the memory budget (max_memory): what requests hold now and at most,
     * the host caches counted with them, requests waiting for memory now,
     * those that waited, those refused: "memory" */
    struct {
        uint64_t max_memory, used, peak, cached;
        unsigned waiting;
        unsigned long waited, refused;
    } memory;
    /* the tuning database: statements run since it was opened (loading the
     * plans; serving runs none), and whether one is open: "database" */
    struct { unsigned long queries; int open; } database;
    gs_reply_route *routes;
    size_t nroutes;
} gs_reply_stats;

cJSON *gs_reply_stats_build(const gs_reply_stats *r, const cJSON *id, gs_err *err);
int gs_reply_stats_parse(const cJSON *h, const gs_jnum_doc *doc, gs_reply_stats *out,
                         gs_err *err);
void gs_reply_stats_free(gs_reply_stats *r);

#endif
