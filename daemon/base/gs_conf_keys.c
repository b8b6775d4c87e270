/* The daemon's configuration keys (see gs_conf.h and gsortd.conf(5)), one
 * row each in one table: the key's name, the gs_conf field it sets, how its
 * value is written (a type with its bounds, enum names or the word "auto",
 * or a parser of its own where a key needs more checks), its default, what
 * its error message says is accepted, and whether a reload (SIGHUP) applies
 * it to the running daemon. The defaults, the setter shared by the config
 * file (gs_conf_file.c) and the command line, the printer whose output
 * reads back to the same configuration, and the reload's copy of the live
 * keys all walk the table, so that a key is named in one place. Values are
 * checked when they are read, so a typo stops the daemon at start or
 * leaves the running configuration untouched on SIGHUP, instead of failing
 * later in the middle of serving. */
#include "config.h"
#include "gs_conf.h"
#include "gs_log.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define NS_PER_S 1000000000ull
#define DAY_NS (86400ull * NS_PER_S)
#define MAX_DEVICE_INDEX 65535
/* The largest size a key whose "auto" is GS_CONF_AUTO can be set to. */
#define NOT_AUTO (GS_CONF_AUTO - 1)

/* How a value is written in the file, and the field that holds it. */
typedef enum {
    KT_STR,        /* char[]: text without control characters */
    KT_UINT,       /* unsigned: plain decimal digits in lo..hi */
    KT_SIZE,       /* uint64_t or uint32_t: a size (gs_conf_parse_size) in lo..hi */
    KT_DURATION,   /* double seconds: a duration, lo..hi in nanoseconds */
    KT_ENUM,       /* int: i for names[i], written exactly so */
} key_type;

enum {
    /* A reload (SIGHUP) applies the key to the running daemon. The others
     * (the socket, the paths, the devices and threads, tune_missing) are
     * used once, at start, so a changed value waits for a restart. */
    F_LIVE = 1,
    F_AUTO = 2,        /* "auto", in any case, stores autov; autov prints as "auto" */
    F_AUTO_LOWER = 4,  /* with F_AUTO: only "auto" itself, as these keys always read it */
    F_ZERO = 8,        /* 0 is accepted besides lo..hi */
    F_BOOL = 16,       /* KT_ENUM: a boolean (gs_conf_parse_bool) stores 0 or 1 as well */
    F_NOTED = 32,      /* gs_conf_print_noted appends the note at note_off */
};

typedef struct conf_key conf_key;
struct conf_key {
    const char *name;
    key_type type;
    unsigned flags;
    size_t off, size;            /* the field in gs_conf */
    const char *def;             /* the default, as the file writes it: read by the setter */
    uint64_t lo, hi;             /* KT_UINT, KT_SIZE, KT_DURATION (nanoseconds) bounds */
    uint64_t autov;              /* F_AUTO: the value "auto" stores (KT_DURATION: ns) */
    const char *const *names;    /* KT_ENUM: NULL-terminated */
    const char *expected;        /* what is accepted, as the error message says it */
    /* A key with checks its type does not make reads its value with `parse`
     * (v into the field, which stays as it was on failure) and, when its
     * text is not its type's, writes it with `format`. */
    int (*parse)(const conf_key *k, void *field, const char *v, gs_err *err);
    void (*format)(const void *field, char *buf, size_t cap);
    size_t note_off;             /* F_NOTED: the note's member of gs_conf_notes */
};

_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "unsigned fields are read as uint32_t");

/* ---- what the keys share ---- */

static int bad(const conf_key *k, const char *v, gs_err *err)
{
    return gs_err_set(err, GS_EINVAL, "%s: '%s' is not accepted; expected %s", k->name, v,
                      k->expected);
}

static int control_char(const conf_key *k, gs_err *err)
{
    return gs_err_set(err, GS_EINVAL, "%s: value contains a control character", k->name);
}

/* Strings must fit their field and hold no control characters: a newline
 * could not be written back to the file, and none belongs in a path. */
static int set_string(const conf_key *k, void *field, const char *v, gs_err *err)
{
    size_t n = strlen(v);
    if (n >= k->size)
        return gs_err_set(err, GS_EINVAL, "%s: value is %zu bytes; at most %zu are accepted",
                          k->name, n, k->size - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return control_char(k, err);
    memcpy(field, v, n + 1);
    return 0;
}

/* ---- keys with parsers of their own ---- */

/* "" (the default socket), or an absolute path that fits a Unix socket's
 * address. */
static int parse_socket(const conf_key *k, void *field, const char *v, gs_err *err)
{
    size_t n = strlen(v);
    if (n == 0) {
        *(char *)field = '\0';
        return 0;
    }
    if (v[0] != '/')
        return bad(k, v, err);
    if (n >= k->size)
        return gs_err_set(err, GS_EINVAL, "%s: path is %zu bytes; a Unix socket path must be "
                          "shorter than %zu bytes", k->name, n, k->size);
    return set_string(k, field, v, err);
}

static int parse_mode(const conf_key *k, void *field, const char *v, gs_err *err)
{
    unsigned m = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '7' && i < 8; i++)
        m = m * 8 + (unsigned)(v[i] - '0');
    if (i == 0 || v[i] || m > 0777)
        return bad(k, v, err);
    if (m & 0002)
        return gs_err_set(err, GS_EINVAL,
                          "%s: %04o is world-writable and is refused: any local "
                          "user could then submit work to the daemon; use 0660 and "
                          "socket_group to choose who may connect", k->name, m);
    if ((m & 0600) != 0600)
        return gs_err_set(err, GS_EINVAL,
                          "%s: %04o lacks owner read and write (0600), which the "
                          "daemon's own user needs; e.g. 0660", k->name, m);
    *(unsigned *)field = m;
    return 0;
}

static void format_mode(const void *field, char *buf, size_t cap)
{
    snprintf(buf, cap, "%04o", *(const unsigned *)field);
}

static int parse_group(const conf_key *k, void *field, const char *v, gs_err *err)
{
    for (const char *p = v; *p; p++)
        if (*p == ':' || *p == ' ' || *p == '\t')
            return bad(k, v, err);
    return set_string(k, field, v, err);
}

/* allow_uids / allow_gids: the names are looked up now, so that a list
 * naming no one on this system is refused when it is read; the field keeps
 * the list without blanks. */
static int parse_id_list(const conf_key *k, void *field, const char *v, int groups, gs_err *err)
{
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t')
            return control_char(k, err);
    unsigned ids[GS_CONF_MAX_IDS];
    size_t n;
    return gs_conf_parse_ids(k->name, v, groups, ids, &n, field, k->size, err);
}

static int parse_uids(const conf_key *k, void *field, const char *v, gs_err *err)
{
    return parse_id_list(k, field, v, 0, err);
}

static int parse_gids(const conf_key *k, void *field, const char *v, gs_err *err)
{
    return parse_id_list(k, field, v, 1, err);
}

static int parse_log_level(const conf_key *k, void *field, const char *v, gs_err *err)
{
    int l = gs_log_parse_level(v);
    if (l < 0)
        return bad(k, v, err);
    *(int *)field = l;
    return 0;
}

static void format_log_level(const void *field, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", gs_log_level_name(*(const int *)field));
}

/* "all", "none" or a list of device indices, stored in a normal form
 * ("0,2") so equal lists compare equal. */
static int parse_devices(const conf_key *k, void *field, const char *v, gs_err *err)
{
    if (strcasecmp(v, "all") == 0 || strcasecmp(v, "none") == 0) {
        snprintf(field, k->size, "%s", tolower((unsigned char)v[0]) == 'a' ? "all" : "none");
        return 0;
    }
    char out[256];
    size_t olen = 0;
    unsigned seen[128];
    size_t nseen = 0;
    const char *p = v;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        uint64_t x;
        size_t n = gs_conf_digits(p, &x);
        if (n == 0)
            return bad(k, v, err);
        if (x > MAX_DEVICE_INDEX)
            return gs_err_set(err, GS_EINVAL, "%s: index %s is too large; indices go up to %d",
                              k->name, p, MAX_DEVICE_INDEX);
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == (unsigned)x)
                return gs_err_set(err, GS_EINVAL, "%s: index %u is listed twice in '%s'",
                                  k->name, (unsigned)x, v);
        if (nseen == sizeof seen / sizeof seen[0])
            return gs_err_set(err, GS_EINVAL, "%s: more than %zu devices listed", k->name,
                              sizeof seen / sizeof seen[0]);
        seen[nseen++] = (unsigned)x;
        int w = snprintf(out + olen, sizeof out - olen, "%s%u", olen ? "," : "", (unsigned)x);
        if (w < 0 || (size_t)w >= sizeof out - olen || olen + (size_t)w >= k->size)
            return gs_err_set(err, GS_EINVAL, "%s: list too long (at most %zu bytes)", k->name,
                              k->size - 1);
        olen += (size_t)w;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        if (*p != ',')
            return bad(k, v, err);
        p++;
    }
    memcpy(field, out, olen + 1);
    return 0;
}

/* ---- the table ---- */

#define AT(f) .off = offsetof(gs_conf, f), .size = sizeof ((gs_conf *)0)->f
#define NOTE(f) .note_off = offsetof(gs_conf_notes, f)
#define NAMES(...) .names = (const char *const[]){ __VA_ARGS__, NULL }
#define UP_TO_A_DAY "a duration above 0 and at most 1 day, e.g. 30, 1.5s, 250ms, 5m, 2h"

/* Every key, in the order gs_conf_print writes them (and gs_conf_apply_live
 * names the restart-only ones). */
static const conf_key keys[] = {
    { .name = "socket", .type = KT_STR, .flags = F_NOTED, AT(socket), NOTE(socket), .def = "",
      .parse = parse_socket,
      .expected = "an absolute path (starting with /), or \"\" for the default" },
    { .name = "socket_mode", .type = KT_UINT, AT(socket_mode), .def = "0660",
      .parse = parse_mode, .format = format_mode,
      .expected = "an octal mode up to 0777, e.g. 0660" },
    { .name = "socket_group", .type = KT_STR, AT(socket_group), .def = "", .parse = parse_group,
      .expected = "a group name or number, or \"\" for the daemon's group" },
    { .name = "allow_uids", .type = KT_STR, .flags = F_LIVE, AT(allow_uids), .def = "",
      .parse = parse_uids },
    { .name = "allow_gids", .type = KT_STR, .flags = F_LIVE, AT(allow_gids), .def = "",
      .parse = parse_gids },
    /* Relative paths are allowed: tests and local runs use them. */
    { .name = "db", .type = KT_STR, .flags = F_NOTED, AT(db), NOTE(db), .def = "" },
    { .name = "cache_dir", .type = KT_STR, .flags = F_NOTED, AT(cache_dir), NOTE(cache_dir),
      .def = "" },
    { .name = "kernel_dir", .type = KT_STR, AT(kernel_dir), .def = "" },
    { .name = "log_level", .type = KT_ENUM, .flags = F_LIVE, AT(log_level), .def = "info",
      .parse = parse_log_level, .format = format_log_level,
      .expected = "error, warn, info or debug" },
    { .name = "log_target", .type = KT_ENUM, .flags = F_LIVE, AT(log_syslog), .def = "stderr",
      NAMES("stderr", "syslog"), .expected = "stderr or syslog" },
    { .name = "max_request_bytes", .type = KT_SIZE, .flags = F_LIVE | F_AUTO,
      AT(max_request_bytes), .def = "auto", .autov = GS_CONF_AUTO, .lo = 4096, .hi = NOT_AUTO,
      .expected = "auto (a quarter of max_memory), or a size of at least 4096, e.g. 4096, "
                  "512M, 4G" },
    { .name = "max_memory", .type = KT_SIZE, .flags = F_LIVE | F_AUTO, AT(max_memory),
      .def = "auto", .autov = GS_CONF_AUTO, .lo = 1u << 20, .hi = NOT_AUTO,
      .expected = "auto (the cgroup's memory limit, else the physical memory, less a "
                  "headroom), or a size of at least 1M, e.g. 512M, 16G" },
    { .name = "max_memory_per_uid", .type = KT_SIZE, .flags = F_LIVE | F_AUTO,
      AT(max_memory_per_uid), .def = "auto", .autov = GS_CONF_AUTO, .lo = 1u << 20,
      .hi = NOT_AUTO,
      .expected = "auto (half of max_memory), or a size of at least 1M, e.g. 256M, 8G" },
    { .name = "memory_wait", .type = KT_DURATION, .flags = F_LIVE, AT(memory_wait_s),
      .def = "30s", .lo = 0, .hi = DAY_NS,
      .expected = "a duration from 0 (refuse at once) to 1 day, e.g. 10s, 500ms, 1m" },
    { .name = "buffer_pool_percent", .type = KT_UINT, .flags = F_LIVE, AT(buffer_pool_percent),
      .def = "25", .lo = 0, .hi = 90, .expected = "a whole number from 0 to 90" },
    { .name = "max_pinned_bytes", .type = KT_SIZE, .flags = F_LIVE | F_AUTO | F_AUTO_LOWER,
      AT(max_pinned_bytes), .def = "auto", .autov = GS_CONF_AUTO, .lo = 0, .hi = NOT_AUTO,
      .expected = "auto (a quarter of the memory), or a size, e.g. 0 (never pin), 512M, 16G" },
    { .name = "max_mapped_bytes", .type = KT_SIZE, .flags = F_LIVE | F_AUTO,
      AT(max_mapped_bytes), .def = "auto", .autov = GS_CONF_AUTO, .lo = 0, .hi = NOT_AUTO,
      .expected = "auto (twice the physical memory, at most 32T), or a size, e.g. 0 (keep no "
                  "memfd mapped), 64G" },
    { .name = "max_mapped_bytes_per_client", .type = KT_SIZE, .flags = F_LIVE | F_AUTO,
      AT(max_mapped_bytes_per_client), .def = "auto", .autov = GS_CONF_AUTO, .lo = 0,
      .hi = NOT_AUTO,
      .expected = "auto (the physical memory), or a size, e.g. 0 (keep no memfd mapped), 16G" },
    { .name = "device_mem_cap", .type = KT_SIZE,
      .flags = F_LIVE | F_AUTO | F_AUTO_LOWER | F_ZERO, AT(device_mem_cap), .def = "auto",
      .autov = 0, .lo = 65536, .hi = NOT_AUTO,
      .expected = "auto or 0 (the device's own limits), or a size of at least 64K, e.g. 64M, "
                  "4G" },
    { .name = "max_clients", .type = KT_UINT, .flags = F_LIVE, AT(max_clients), .def = "256",
      .lo = 1, .hi = 65536, .expected = "a whole number from 1 to 65536" },
    { .name = "max_clients_per_uid", .type = KT_UINT, .flags = F_LIVE, AT(max_clients_per_uid),
      .def = "64", .lo = 0, .hi = 65536,
      .expected = "a whole number from 0 (no per-user cap) to 65536" },
    { .name = "inline_sort_max", .type = KT_UINT, .flags = F_LIVE | F_AUTO, AT(inline_sort_max),
      .def = "auto", .autov = GS_CONF_INLINE_AUTO, .lo = 0, .hi = 65536,
      .expected = "auto (2048 with at most 2 CPUs, else 16384 with at least 4 I/O loops, else 0), "
                  "or a whole "
                  "number of keys from 0 (never) to 65536" },
    { .name = "max_header_bytes", .type = KT_SIZE, .flags = F_LIVE, AT(max_header_bytes),
      .def = "64K", .lo = 256, .hi = 16u << 20, .expected = "a size from 256 to 16M, e.g. 64K" },
    { .name = "idle_timeout", .type = KT_DURATION, .flags = F_LIVE, AT(idle_timeout_s),
      .def = "5m", .lo = 1, .hi = DAY_NS, .expected = UP_TO_A_DAY },
    { .name = "io_timeout", .type = KT_DURATION, .flags = F_LIVE, AT(io_timeout_s),
      .def = "30s", .lo = 1, .hi = DAY_NS, .expected = UP_TO_A_DAY },
    { .name = "request_timeout", .type = KT_DURATION, .flags = F_LIVE | F_AUTO,
      AT(request_timeout_s), .def = "auto", .autov = 0, .lo = 1, .hi = DAY_NS,
      .expected = "auto (60 s plus 1 s per 32 MiB the request declares), or a duration above 0 "
                  "and at most 1 day, e.g. 90s, 10m" },
    { .name = "host_threads", .type = KT_UINT, AT(host_threads), .def = "0", .lo = 0,
      .hi = 1024,
      .expected = "a whole number from 0 to 1024 (0: one per online CPU, at most 8)" },
    { .name = "device_lanes", .type = KT_UINT, .flags = F_AUTO, AT(device_lanes),
      .def = "auto", .autov = 0, .lo = 1, .hi = 4,
      .expected = "auto (2 on a GPU, 1 on other devices), or 1 to 4 requests in flight per "
                  "device" },
    { .name = "io_threads", .type = KT_UINT, .flags = F_AUTO, AT(io_threads), .def = "auto",
      .autov = 0, .lo = 1, .hi = 64,
      .expected = "auto (one per 2 online CPUs, 1 with at most 2, at most 8), or a whole number "
                  "of event loops from 1 to 64" },
    { .name = "devices", .type = KT_STR, AT(devices), .def = "all", .parse = parse_devices,
      .expected = "\"all\", \"none\" or a comma-separated list of distinct device indices, "
                  "e.g. 0,2" },
    /* GS_CONF_TUNE_NO, _YES, _AUTO */
    { .name = "tune_missing", .type = KT_ENUM, .flags = F_BOOL, AT(tune_missing), .def = "auto",
      NAMES("no", "yes", "auto"), .expected = "auto, or yes/no, true/false, on/off or 1/0" },
    /* No upper bound: a whole tuning run may take days. */
    { .name = "tune_budget", .type = KT_DURATION, .flags = F_LIVE, AT(tune_budget_s),
      .def = "270s", .lo = 1, .hi = UINT64_MAX,
      .expected = "a duration above 0, e.g. 270, 90s, 5m, 2h" },
};
#define NKEYS (sizeof keys / sizeof keys[0])
_Static_assert(NKEYS <= GS_CONF_MAX_KEYS, "GS_CONF_MAX_KEYS is too small");

/* ---- reading a value by its type ---- */

static uint64_t get_uint(const conf_key *k, const void *field)
{
    if (k->size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, field, sizeof v);
    return v;
}

/* x fits: the setter checked it against bounds that fit the field. */
static void put_uint(const conf_key *k, void *field, uint64_t x)
{
    if (k->size == sizeof(uint32_t)) {
        uint32_t v = (uint32_t)x;
        memcpy(field, &v, sizeof v);
    } else {
        memcpy(field, &x, sizeof x);
    }
}

/* Seconds from nanoseconds as gs_conf_parse_duration makes them, so that a
 * bound compares exactly with a parsed value. */
static double seconds(uint64_t ns) { return (double)ns / 1e9; }

static int is_auto(const conf_key *k, const char *v)
{
    if (!(k->flags & F_AUTO))
        return 0;
    return (k->flags & F_AUTO_LOWER ? strcmp(v, "auto") : strcasecmp(v, "auto")) == 0;
}

static int in_bounds(const conf_key *k, uint64_t x)
{
    return (x >= k->lo && x <= k->hi) || (x == 0 && (k->flags & F_ZERO));
}

static int set_enum(const conf_key *k, void *field, const char *v, gs_err *err)
{
    for (int i = 0; k->names[i]; i++)
        if (strcmp(v, k->names[i]) == 0) {
            *(int *)field = i;
            return 0;
        }
    int b;
    if (!(k->flags & F_BOOL) || gs_conf_parse_bool(v, &b) != 0)
        return bad(k, v, err);
    *(int *)field = b;
    return 0;
}

/* v into k's field; the field is unchanged on failure. */
static int set_key(const conf_key *k, void *field, const char *v, gs_err *err)
{
    if (k->parse)
        return k->parse(k, field, v, err);
    if (is_auto(k, v)) {
        if (k->type == KT_DURATION)
            *(double *)field = seconds(k->autov);
        else
            put_uint(k, field, k->autov);
        return 0;
    }
    uint64_t x;
    double s;
    switch (k->type) {
    case KT_STR:
        return set_string(k, field, v, err);
    case KT_UINT: {
        size_t n = gs_conf_digits(v, &x);
        if (n == 0 || v[n] || !in_bounds(k, x))
            return bad(k, v, err);
        put_uint(k, field, x);
        return 0;
    }
    case KT_SIZE:
        if (gs_conf_parse_size(v, &x) != 0 || !in_bounds(k, x))
            return bad(k, v, err);
        put_uint(k, field, x);
        return 0;
    case KT_DURATION:
        if (gs_conf_parse_duration(v, &s) != 0 || s < seconds(k->lo) || s > seconds(k->hi))
            return bad(k, v, err);
        *(double *)field = s;
        return 0;
    case KT_ENUM:
        return set_enum(k, field, v, err);
    }
    return bad(k, v, err);
}

/* ---- the setter ---- */

void gs_conf_defaults(gs_conf *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS; i++) {
        gs_err e;
        /* A default its own key refuses is a mistake in the table, which
         * test_conf's defaults catch; said here too, not hidden. */
        if (set_key(&keys[i], (char *)c + keys[i].off, keys[i].def, &e) != 0)
            GS_ERROR("the default of %s is refused: %s", keys[i].name, e.msg);
    }
}

const char *gs_conf_key_name(size_t off)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (keys[i].off == off)
            return keys[i].name;
    return NULL;
}

/* Edit distance, for "did you mean" on a misspelt key. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    size_t row[33];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int unknown_key(const char *key, gs_err *err)
{
    /* Up to two edits, and fewer than a third of the key, so a short
     * unrelated word gets no far-fetched suggestion. */
    const char *best = NULL;
    size_t bd = 3;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = edit_distance(key, keys[i].name);
        if (d < bd && d * 3 <= strlen(key)) {
            bd = d;
            best = keys[i].name;
        }
    }
    if (best)
        return gs_err_set(err, GS_ENOTFOUND, "unknown key '%s' (did you mean '%s'?)", key, best);
    return gs_err_set(err, GS_ENOTFOUND, "unknown key '%s'", key);
}

int gs_conf_set(gs_conf *c, const char *key, const char *v, gs_err *err)
{
    if (!key || !key[0])
        return gs_err_set(err, GS_EINVAL, "empty key");
    if (!v)
        return gs_err_set(err, GS_EINVAL, "%s: missing value", key);
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(key, keys[i].name) == 0)
            return set_key(&keys[i], (char *)c + keys[i].off, v, err);
    return unknown_key(key, err);
}

/* ---- reload ---- */

size_t gs_conf_apply_live(gs_conf *run, const gs_conf *next, const char **restart, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const conf_key *k = &keys[i];
        char *dst = (char *)run + k->off;
        const char *src = (const char *)next + k->off;
        if (k->flags & F_LIVE) {
            memcpy(dst, src, k->size);
            continue;
        }
        /* A string compares up to its NUL: what a longer value left behind
         * it is no change. */
        int changed = k->type == KT_STR ? strcmp(dst, src) != 0 : memcmp(dst, src, k->size) != 0;
        if (changed && n < cap)
            restart[n] = k->name;
        n += changed;
    }
    return n;
}

/* ---- the printer ---- */

/* The value as it stands, quoted when it must be (empty, or with a blank,
 * '#', '"' or '\\', which the parser would read otherwise). */
static void print_string(FILE *out, const char *v)
{
    if (v[0] && !strpbrk(v, " \t#\"\\")) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

static void format_size(uint64_t v, char *buf, size_t cap)
{
    static const char sfx[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        unsigned shift = 40 - 10 * (unsigned)i;
        if (v && (v & ((1ull << shift) - 1)) == 0) {
            snprintf(buf, cap, "%llu%c", (unsigned long long)(v >> shift), sfx[i]);
            return;
        }
    }
    snprintf(buf, cap, "%llu", (unsigned long long)v);
}

/* The largest unit that states the value exactly. The count of nanoseconds
 * is searched near s*1e9 for the one that reads back to exactly s (any value
 * the parser produced has one). */
static void format_duration(double s, char *buf, size_t cap)
{
    if (!(s >= 0) || s >= 1.8e10) {
        snprintf(buf, cap, "%.17g", s);
        return;
    }
    uint64_t ns = (uint64_t)llround(s * 1e9);
    for (int64_t d = 0; d <= 8; d++) {
        uint64_t cand[2] = { ns + (uint64_t)d, ns - (uint64_t)d };
        int hit = 0;
        for (int k = 0; k < 2; k++)
            if ((double)cand[k] / 1e9 == s) {
                ns = cand[k];
                hit = 1;
                break;
            }
        if (hit)
            break;
    }
    const uint64_t S = NS_PER_S;
    if (ns && ns % (3600 * S) == 0)
        snprintf(buf, cap, "%lluh", (unsigned long long)(ns / (3600 * S)));
    else if (ns && ns % (60 * S) == 0)
        snprintf(buf, cap, "%llum", (unsigned long long)(ns / (60 * S)));
    else if (ns % S == 0)
        snprintf(buf, cap, "%llus", (unsigned long long)(ns / S));
    else if (ns % 1000000 == 0)
        snprintf(buf, cap, "%llums", (unsigned long long)(ns / 1000000));
    else {
        char frac[16];
        snprintf(frac, sizeof frac, "%09llu", (unsigned long long)(ns % S));
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0')
            frac[--n] = '\0';
        snprintf(buf, cap, "%llu.%ss", (unsigned long long)(ns / S), frac);
    }
}

static int holds_auto(const conf_key *k, const void *field)
{
    if (!(k->flags & F_AUTO))
        return 0;
    if (k->type == KT_DURATION)
        return *(const double *)field == seconds(k->autov);
    return get_uint(k, field) == k->autov;
}

/* A value that is not a string, as the file writes it. */
static void format_value(const conf_key *k, const void *field, char *buf, size_t cap)
{
    if (k->format) {
        k->format(field, buf, cap);
        return;
    }
    if (holds_auto(k, field)) {
        snprintf(buf, cap, "auto");
        return;
    }
    switch (k->type) {
    case KT_UINT:
        snprintf(buf, cap, "%llu", (unsigned long long)get_uint(k, field));
        return;
    case KT_SIZE:
        format_size(get_uint(k, field), buf, cap);
        return;
    case KT_DURATION:
        format_duration(*(const double *)field, buf, cap);
        return;
    case KT_ENUM: {
        int v = *(const int *)field, i = 0;
        while (k->names[i] && i < v)
            i++;
        snprintf(buf, cap, "%s", v >= 0 && k->names[i] ? k->names[i] : "?");
        return;
    }
    case KT_STR:
        break;
    }
    snprintf(buf, cap, "?");
}

void gs_conf_print(const gs_conf *c, FILE *out)
{
    gs_conf_print_noted(c, NULL, out);
}

void gs_conf_print_noted(const gs_conf *c, const gs_conf_notes *n, FILE *out)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const conf_key *k = &keys[i];
        const void *field = (const char *)c + k->off;
        fprintf(out, "%s = ", k->name);
        if (k->type == KT_STR) {
            print_string(out, field);
        } else {
            char buf[64];
            format_value(k, field, buf, sizeof buf);
            fputs(buf, out);
        }
        /* The parser takes a '#' after a blank as a comment, quoted value
         * or not, so the output still reads back. */
        const char *note = n && (k->flags & F_NOTED)
                               ? *(const char *const *)((const char *)n + k->note_off) : NULL;
        if (note && note[0])
            fprintf(out, "  # %s", note);
        fputc('\n', out);
    }
}
