/* The daemon's configuration: defaults, the config file (man/gsortd.conf.5,
 * sample in etc/gsortd.conf) and command-line overrides, all through one
 * setter so a key means the same thing wherever it is written; every key is
 * one row of the table in gs_conf_keys.c. The file is "key = value" lines;
 * '#' starts a comment; blank lines are ignored. Sizes take K/M/G/T
 * suffixes (powers of 1024), durations ms/s/m/h (a bare number is
 * seconds), booleans yes/no/true/false/on/off/1/0. */
#ifndef GS_CONF_H
#define GS_CONF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gs_err.h"
#include "gs_paths.h"

#define GS_CONF_PATH_MAX GS_PATHS_MAX
#define GS_CONF_SOCKET_MAX GS_PATHS_SOCKET_MAX
/* The longest line the file parser reads: the longest gs_conf_print can
 * write (a value of GS_CONF_PATH_MAX - 1 bytes, every one escaped, plus the
 * key, " = " and the quotes). */
#define GS_CONF_LINE_MAX (2 * GS_CONF_PATH_MAX + 64)

/* tune_missing: never, every device without a plan, or those that are
 * not CPU devices (a CPU device's requests go to the host sort anyway,
 * and tuning it would take the cores the daemon serves with). */
enum { GS_CONF_TUNE_NO = 0, GS_CONF_TUNE_YES = 1, GS_CONF_TUNE_AUTO = 2 };

typedef struct gs_conf {
    char socket[GS_CONF_SOCKET_MAX];   /* "": default (gs_paths_socket) */
    unsigned socket_mode;              /* 0660; never world-writable */
    char socket_group[64];             /* "": the daemon's group */
    char allow_uids[512];              /* "": anyone who can open the socket; else
                                          "0,alice": only these users (or allow_gids) */
    char allow_gids[512];              /* "": no group grants access; "adm,1000" */
    char db[GS_CONF_PATH_MAX];         /* "": default tuning database */
    char cache_dir[GS_CONF_PATH_MAX];  /* "": default program cache */
    char kernel_dir[GS_CONF_PATH_MAX]; /* "": embedded kernels */
    int log_level;                     /* GS_LOG_*; default GS_LOG_INFO */
    int log_syslog;                    /* log_target = stderr (0) | syslog (1) */
    uint64_t max_request_bytes;        /* inline payload or memfd span; GS_CONF_AUTO
                                          (default): gs_conf_request_cap */
    uint64_t max_memory;               /* what requests in flight may hold at once
                                          (gs_mem.h); GS_CONF_AUTO (default):
                                          gs_conf_memory_cap */
    uint64_t max_memory_per_uid;       /* what one uid's requests may hold of it at once;
                                          GS_CONF_AUTO (default): gs_conf_memory_uid_cap.
                                          Root and the daemon's own uid are exempt */
    double memory_wait_s;              /* a request that does not fit max_memory waits
                                          this long for memory, then is refused; 0:
                                          refused at once; 30 */
    unsigned buffer_pool_percent;      /* device buffers kept for reuse, per device:
                                          this share of its memory; 25 */
    uint64_t device_mem_cap;           /* device memory one request may use per device;
                                          0 (auto, default): the device's own limits.
                                          A request above it is sorted out of core */
    uint64_t max_pinned_bytes;         /* client blocks pinned for device copies at
                                          once; 0: none; GS_CONF_AUTO (default): a
                                          quarter of the RAM, gs_conf_pinned_cap */
    uint64_t max_mapped_bytes;         /* address space of the client memfds kept mapped,
                                          all connections; GS_CONF_AUTO (default):
                                          gs_conf_mapped_cap */
    uint64_t max_mapped_bytes_per_client;  /* the same, one connection; GS_CONF_AUTO
                                              (default): gs_conf_mapped_client_cap */
    unsigned max_clients;              /* 256 */
    unsigned max_clients_per_uid;      /* connections one uid may hold; 64; 0: no cap.
                                          Root and the daemon's own uid are exempt */
    unsigned inline_sort_max;          /* host sorts of at most this many keys run on the
                                          loop thread; GS_CONF_INLINE_AUTO (default):
                                          gs_conf_inline_max */
    uint32_t max_header_bytes;         /* 64K */
    double idle_timeout_s;             /* no request in progress for this long: closed; 300 */
    double io_timeout_s;               /* a message half-read or a reply half-written
                                          without progress for this long: closed; 30 */
    double request_timeout_s;          /* a request not wholly received this long after
                                          its first byte: refused and closed; 0 (auto,
                                          the default): gs_conf_request_deadline */
    unsigned host_threads;             /* host-sort workers; 0: min(online CPUs, 8) */
    unsigned device_lanes;             /* requests in flight per device; 0: auto */
    unsigned io_threads;               /* event loops serving clients; 0 (auto, the
                                          default): gs_conf_io_threads */
    char devices[256];                 /* "all" (default), "none", or indices "0,2" */
    int tune_missing;                  /* GS_CONF_TUNE_*: tune devices without a plan while
                                          serving; auto */
    double tune_budget_s;              /* per device for tune_missing; 270 */
} gs_conf;

/* max_pinned_bytes = auto */
#define GS_CONF_AUTO UINT64_MAX
/* The pinned-bytes cap max_pinned_bytes means on this machine. */
uint64_t gs_conf_pinned_cap(const gs_conf *c);
/* The request size cap max_request_bytes means on this machine: auto
 * (GS_CONF_AUTO, the default) is a quarter of max_memory: the daemon holds
 * up to a request's size again in scratch (issue 20), and a request's whole
 * claim must fit one uid's share of the budget, half of it by default
 * (issue 32). */
uint64_t gs_conf_request_cap(const gs_conf *c);
/* The memory budget max_memory means on this machine: auto is the
 * cgroup's memory limit, else the physical memory, less a headroom
 * (gs_mem_limit, gs_mem_auto). */
uint64_t gs_conf_memory_cap(const gs_conf *c);
/* max_memory_per_uid on this machine: auto is half of max_memory, so that
 * no one user's requests (stalled uploads among them) can hold all of it;
 * never above max_memory. */
uint64_t gs_conf_memory_uid_cap(const gs_conf *c);
/* max_mapped_bytes on this machine: auto is twice the physical memory (a
 * kept memfd is the client's memory, not the daemon's: what bounds it is
 * the address space), at most 32 TiB, a quarter of x86-64's user address
 * space. */
uint64_t gs_conf_mapped_cap(const gs_conf *c);
/* max_mapped_bytes_per_client on this machine: auto is the physical memory
 * (a client's array larger than that cannot be resident anyway); never above
 * gs_conf_mapped_cap. */
uint64_t gs_conf_mapped_client_cap(const gs_conf *c);
/* inline_sort_max = auto */
#define GS_CONF_INLINE_AUTO UINT_MAX
/* What inline_sort_max means on this machine: auto is 2048 keys with at
 * most 2 CPUs (one loop: above that, 16 clients' p99 grew 4-6x), else
 * 16384 with at least 4 I/O loops (sorting on the loop thread saves a
 * hand-off that costs more than the sort; measured 1.7x the requests/s on
 * 2 cores, 1.7x with 8 loops on 16 cores; one client's 2^12..2^14-key
 * host sorts in 0.5-0.7x the time handed off, H100 host), else 0 (with
 * one or two loops and cores to spare, the loop threads are the
 * bottleneck: 1.6-1.9x handing every sort to the host workers). */
unsigned gs_conf_inline_max(const gs_conf *c);

/* How many event loops serve clients: io_threads, or for auto one per 2
 * online CPUs (1 with at most 2 CPUs, at most 8). One loop tops out near
 * 40-60k small requests/s (its thread does every read, parse and write);
 * measured on 16 cores: 38k with 1 loop, 68k with 2, 86k with 4, 147k
 * with 8 (p99 0.23 ms). */
unsigned gs_conf_io_threads(const gs_conf *c);

/* request_timeout: the seconds a request declaring `payload_bytes` has,
 * from its first byte, to arrive whole. auto (0, the default) is 60 s plus
 * 1 s per 32 MiB declared: a local socket moves a request of any size
 * allowed many times faster than that, and a client dripping a small one
 * holds its slot a minute at most. */
#define GS_CONF_REQUEST_TIMEOUT_BASE_S 60.0
#define GS_CONF_REQUEST_TIMEOUT_RATE (32.0 * 1024 * 1024)   /* bytes/s */
double gs_conf_request_deadline(const gs_conf *c, uint64_t payload_bytes);

/* Every key at its default. */
void gs_conf_defaults(gs_conf *c);
/* The config file read when none is named: SYSCONFDIR/gsortd/gsortd.conf
 * (configure's --sysconfdir; /etc/gsortd/gsortd.conf for packages). */
const char *gs_conf_default_path(void);
/* Set one key from its text form: the file parser and the command-line
 * options both come through here. GS_ENOTFOUND for an unknown key, GS_EINVAL
 * for a bad value (the message names the key and says what is accepted);
 * `c` is unchanged on failure. */
int gs_conf_set(gs_conf *c, const char *key, const char *value, gs_err *err);
/* The name of the key that sets the gs_conf field at byte `off`, NULL for
 * none. GS_CONF_KEY(db) is the name of the key that sets c->db: code that
 * sets or names a key by its field spells no key name again, and a
 * misspelt field does not compile. */
const char *gs_conf_key_name(size_t off);
#define GS_CONF_KEY(field) gs_conf_key_name(offsetof(gs_conf, field))
/* Read a config file into `c`. GS_ENOTFOUND (errno ENOENT) when the file
 * does not exist, GS_EIO when it cannot be read, GS_EINVAL for any bad line
 * ("PATH:LINE: ..."). All or nothing: `c` is unchanged on failure. */
int gs_conf_load(gs_conf *c, const char *path, gs_err *err);
/* SIGHUP: copy the live keys of `next` (a configuration read again) onto
 * `run` (the running one): logging, limits, timeouts, allow lists and
 * tune_budget. The other keys are used once, at start; those whose value
 * differs are left as they are and named in restart[0..) (up to cap, in
 * the order gs_conf_print writes them). Returns how many differ. */
#define GS_CONF_MAX_KEYS 32
size_t gs_conf_apply_live(gs_conf *run, const gs_conf *next, const char **restart, size_t cap);
/* The effective configuration in file syntax, every key (--print-config). */
void gs_conf_print(const gs_conf *c, FILE *out);
/* Comments gs_conf_print_noted appends to a key's line ("  # NOTE"), e.g.
 * where a resolved default path came from; NULL or "": none. */
typedef struct gs_conf_notes {
    const char *socket, *db, *cache_dir;
} gs_conf_notes;
/* gs_conf_print with notes (n may be NULL); the output still reads back. */
void gs_conf_print_noted(const gs_conf *c, const gs_conf_notes *n, FILE *out);

/* Parsers behind gs_conf_set, exposed for the tests and other options. */
int gs_conf_parse_size(const char *s, uint64_t *out);       /* "4G", "512K", "1000" */
int gs_conf_parse_duration(const char *s, double *out_s);   /* "30", "250ms", "5m" */
int gs_conf_parse_bool(const char *s, int *out);
/* Plain decimal digits at the start of `s`, no sign or blanks: how many
 * (their value in *out), 0 when there are none or they overflow. */
size_t gs_conf_digits(const char *s, uint64_t *out);

/* allow_uids / allow_gids: a comma-separated list of numbers or user
 * (groups != 0: group) names, blanks around commas allowed, "" for none.
 * Names are looked up now (getpwnam_r / getgrnam_r); a list of digits is a
 * number, as chown(1) reads it. Fills ids[0..*n) (up to GS_CONF_MAX_IDS);
 * GS_EINVAL naming `key` and the bad entry otherwise. `norm` (may be NULL,
 * `normlen` bytes) gets the list without blanks. */
#define GS_CONF_MAX_IDS 64
int gs_conf_parse_ids(const char *key, const char *list, int groups, unsigned *ids, size_t *n,
                      char *norm, size_t normlen, gs_err *err);

#endif
