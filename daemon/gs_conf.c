/* The daemon's configuration keys (see gs_conf.h and gsortd.conf(5)): the
 * key table (which field each key sets, and whether a reload applies it),
 * the value parsers, one validating setter shared by the config file
 * (gs_conf_file.c) and the command line, the printer whose output reads
 * back to the same configuration, and the reload's copy of the live keys.
 * Values are checked here, when they are read, so a typo stops the daemon
 * at start or leaves the running configuration untouched on SIGHUP,
 * instead of failing later in the middle of serving. */
#include "config.h"
#include "gs_conf.h"
#include "gs_log.h"
#include "gs_mem.h"

#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#define DAY_S 86400.0
#define MAX_DEVICE_INDEX 65535

/* Every key, in the order gs_conf_print writes them, with the gs_conf
 * field it sets. `live`: a reload (SIGHUP) applies the key to the running
 * daemon; the others are used once, at start (the socket, the devices and
 * threads, the paths, tune_missing), so a changed value waits for a
 * restart (gs_conf_apply_live). */
typedef struct conf_key {
    const char *name;
    int live;
    size_t off, size;        /* the field */
    int str;                 /* the field is a string: compared up to its NUL */
} conf_key;

#define KEY(name, live, field, str) \
    { name, live, offsetof(gs_conf, field), sizeof ((gs_conf *)0)->field, str }

static const conf_key keys[] = {
    KEY("socket", 0, socket, 1),
    KEY("socket_mode", 0, socket_mode, 0),
    KEY("socket_group", 0, socket_group, 1),
    KEY("allow_uids", 1, allow_uids, 1),
    KEY("allow_gids", 1, allow_gids, 1),
    KEY("db", 0, db, 1),
    KEY("cache_dir", 0, cache_dir, 1),
    KEY("kernel_dir", 0, kernel_dir, 1),
    KEY("log_level", 1, log_level, 0),
    KEY("log_target", 1, log_syslog, 0),
    KEY("max_request_bytes", 1, max_request_bytes, 0),
    KEY("max_memory", 1, max_memory, 0),
    KEY("max_memory_per_uid", 1, max_memory_per_uid, 0),
    KEY("memory_wait", 1, memory_wait_s, 0),
    KEY("max_pinned_bytes", 1, max_pinned_bytes, 0),
    KEY("max_mapped_bytes", 1, max_mapped_bytes, 0),
    KEY("max_mapped_bytes_per_client", 1, max_mapped_bytes_per_client, 0),
    KEY("device_mem_cap", 1, device_mem_cap, 0),
    KEY("buffer_pool_percent", 1, buffer_pool_percent, 0),
    KEY("max_clients", 1, max_clients, 0),
    KEY("max_clients_per_uid", 1, max_clients_per_uid, 0),
    KEY("inline_sort_max", 1, inline_sort_max, 0),
    KEY("max_header_bytes", 1, max_header_bytes, 0),
    KEY("idle_timeout", 1, idle_timeout_s, 0),
    KEY("io_timeout", 1, io_timeout_s, 0),
    KEY("request_timeout", 1, request_timeout_s, 0),
    KEY("host_threads", 0, host_threads, 0),
    KEY("io_threads", 0, io_threads, 0),
    KEY("devices", 0, devices, 1),
    KEY("tune_missing", 0, tune_missing, 0),
    KEY("tune_budget", 1, tune_budget_s, 0),
};
#define NKEYS (sizeof keys / sizeof keys[0])
_Static_assert(NKEYS <= GS_CONF_MAX_KEYS, "GS_CONF_MAX_KEYS is too small");

uint64_t gs_conf_pinned_cap(const gs_conf *c)
{
    if (c->max_pinned_bytes != GS_CONF_AUTO)
        return c->max_pinned_bytes;
    /* Pinned pages cannot be swapped or reclaimed: a quarter of the RAM
     * keeps the rest of the machine comfortable. */
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 4 : 4ull << 30;
}

unsigned gs_conf_inline_max(const gs_conf *c)
{
    if (c->inline_sort_max != GS_CONF_INLINE_AUTO)
        return c->inline_sort_max;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (cpus > 0 && cpus <= 2) || gs_conf_io_threads(c) >= 4 ? 2048 : 0;
}

unsigned gs_conf_io_threads(const gs_conf *c)
{
    if (c->io_threads)
        return c->io_threads;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus <= 2 ? 1 : cpus >= 16 ? 8 : (unsigned)(cpus / 2);
}

uint64_t gs_conf_request_cap(const gs_conf *c)
{
    if (c->max_request_bytes != GS_CONF_AUTO)
        return c->max_request_bytes;
    uint64_t quarter = gs_conf_memory_cap(c) / 4;
    return quarter < 4096 ? 4096 : quarter;
}

uint64_t gs_conf_memory_cap(const gs_conf *c)
{
    return c->max_memory != GS_CONF_AUTO ? c->max_memory : gs_mem_auto(gs_mem_limit(NULL, 0));
}

uint64_t gs_conf_memory_uid_cap(const gs_conf *c)
{
    uint64_t all = gs_conf_memory_cap(c);
    uint64_t v = c->max_memory_per_uid != GS_CONF_AUTO ? c->max_memory_per_uid : all / 2;
    return v < all ? v : all;
}

uint64_t gs_conf_mapped_cap(const gs_conf *c)
{
    if (c->max_mapped_bytes != GS_CONF_AUTO)
        return c->max_mapped_bytes;
    uint64_t twice = 2 * gs_mem_phys(), most = UINT64_C(32) << 40;
    return twice < most ? twice : most;
}

uint64_t gs_conf_mapped_client_cap(const gs_conf *c)
{
    uint64_t all = gs_conf_mapped_cap(c);
    uint64_t v = c->max_mapped_bytes_per_client != GS_CONF_AUTO ? c->max_mapped_bytes_per_client
                                                                : gs_mem_phys();
    return v < all ? v : all;
}

double gs_conf_request_deadline(const gs_conf *c, uint64_t payload_bytes)
{
    if (c->request_timeout_s > 0)
        return c->request_timeout_s;
    return GS_CONF_REQUEST_TIMEOUT_BASE_S + (double)payload_bytes / GS_CONF_REQUEST_TIMEOUT_RATE;
}

void gs_conf_defaults(gs_conf *c)
{
    memset(c, 0, sizeof *c);
    c->socket_mode = 0660;
    c->log_level = GS_LOG_INFO;
    c->log_syslog = 0;
    c->max_request_bytes = GS_CONF_AUTO;
    c->max_memory = GS_CONF_AUTO;
    c->max_memory_per_uid = GS_CONF_AUTO;
    c->memory_wait_s = 30;
    c->max_pinned_bytes = GS_CONF_AUTO;
    c->max_mapped_bytes = GS_CONF_AUTO;
    c->max_mapped_bytes_per_client = GS_CONF_AUTO;
    c->buffer_pool_percent = 25;
    c->max_clients = 256;
    c->max_clients_per_uid = 64;
    c->inline_sort_max = GS_CONF_INLINE_AUTO;
    c->max_header_bytes = 65536;
    c->idle_timeout_s = 300;
    c->io_timeout_s = 30;
    c->host_threads = 0;
    snprintf(c->devices, sizeof c->devices, "all");
    c->tune_missing = GS_CONF_TUNE_AUTO;
    c->tune_budget_s = 270;
}

/* configure's --sysconfdir (Makefile.am passes it), so the daemon reads the
 * file `make install` put there: /etc for packages, /usr/local/etc for a
 * plain ./configure. */
#ifndef GS_SYSCONFDIR
#define GS_SYSCONFDIR "/etc"
#endif

const char *gs_conf_default_path(void) { return GS_SYSCONFDIR "/gsortd/gsortd.conf"; }

/* ---- value parsers ---- */

/* Plain decimal digits into a uint64_t; no sign, no blanks, no overflow.
 * Returns the number of digits consumed, 0 on none or on overflow. */
static size_t digits_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return i;
}

int gs_conf_parse_size(const char *s, uint64_t *out)
{
    uint64_t v;
    if (!s)
        return GS_EINVAL;
    size_t n = digits_u64(s, &v);
    if (n == 0)
        return GS_EINVAL;
    const char *p = s + n;
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        p++;
        /* "4G", "4GB", "4GiB": the B and iB spellings all mean 1024-based. */
        if (strcasecmp(p, "ib") == 0 || strcasecmp(p, "b") == 0)
            p += strlen(p);
    } else if (strcasecmp(p, "b") == 0) {
        p++;
    }
    if (*p)
        return GS_EINVAL;
    if (shift && v > (UINT64_MAX >> shift))
        return GS_EINVAL;
    *out = v << shift;
    return 0;
}

/* Durations are read as an exact count of nanoseconds, so that the printer
 * can write a value back in a form that reads to the identical double. */
static int parse_duration_ns(const char *s, uint64_t *ns_out)
{
    uint64_t ip = 0, frac = 0, fscale = 1;
    const char *p = s;
    size_t n = digits_u64(p, &ip);
    if (n == 0 && *p != '.')
        return GS_EINVAL;
    if (n == 0 && p[0] >= '0' && p[0] <= '9')
        return GS_EINVAL; /* digits present but overflowed */
    p += n;
    int have_digits = n > 0;
    if (*p == '.') {
        p++;
        /* 12 fraction digits are below a nanosecond even in hours; the rest
         * are read and dropped. */
        int k = 0;
        for (; *p >= '0' && *p <= '9'; p++, k++) {
            have_digits = 1;
            if (k < 12) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                fscale *= 10;
            }
        }
    }
    if (!have_digits)
        return GS_EINVAL;
    uint64_t mul;
    if (*p == '\0' || strcmp(p, "s") == 0)
        mul = 1000000000ull;
    else if (strcmp(p, "ms") == 0)
        mul = 1000000ull;
    else if (strcmp(p, "m") == 0)
        mul = 60ull * 1000000000ull;
    else if (strcmp(p, "h") == 0)
        mul = 3600ull * 1000000000ull;
    else
        return GS_EINVAL;
    if (ip > UINT64_MAX / mul)
        return GS_EINVAL;
    uint64_t ns = ip * mul;
    double f = nearbyint((double)frac / (double)fscale * (double)mul);
    if (f >= (double)(UINT64_MAX - ns))
        return GS_EINVAL;
    ns += (uint64_t)f;
    *ns_out = ns;
    return 0;
}

int gs_conf_parse_duration(const char *s, double *out_s)
{
    uint64_t ns;
    if (!s || parse_duration_ns(s, &ns) != 0)
        return GS_EINVAL;
    *out_s = (double)ns / 1e9;
    return 0;
}

int gs_conf_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "yes", "true", "on", "1" };
    static const char *const no[] = { "no", "false", "off", "0" };
    if (!s)
        return GS_EINVAL;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return GS_EINVAL;
}

/* ---- the setter ---- */

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

/* Strings must fit their field and hold no control characters: a newline
 * could not be written back to the file, and none belongs in a path. */
static int set_string(char *dst, size_t cap, const char *key, const char *v, gs_err *err)
{
    size_t n = strlen(v);
    if (n >= cap)
        return gs_err_set(err, GS_EINVAL, "%s: value is %zu bytes; at most %zu are accepted",
                          key, n, cap - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return gs_err_set(err, GS_EINVAL, "%s: value contains a control character", key);
    memcpy(dst, v, n + 1);
    return 0;
}

static int bad(gs_err *err, const char *key, const char *v, const char *expected)
{
    return gs_err_set(err, GS_EINVAL, "%s: '%s' is not accepted; expected %s", key, v, expected);
}

static int set_uint(unsigned *dst, const char *key, const char *v, unsigned lo, unsigned hi,
                    const char *expected, gs_err *err)
{
    uint64_t x;
    size_t n = digits_u64(v, &x);
    if (n == 0 || v[n] || x < lo || x > hi)
        return bad(err, key, v, expected);
    *dst = (unsigned)x;
    return 0;
}

static int set_timeout(double *dst, const char *key, const char *v, int capped, gs_err *err)
{
    double s;
    const char *expected = capped
        ? "a duration above 0 and at most 1 day, e.g. 30, 1.5s, 250ms, 5m, 2h"
        : "a duration above 0, e.g. 270, 90s, 5m, 2h";
    if (gs_conf_parse_duration(v, &s) != 0 || !(s > 0) || (capped && s > DAY_S))
        return bad(err, key, v, expected);
    *dst = s;
    return 0;
}

static int set_mode(unsigned *dst, const char *v, gs_err *err)
{
    unsigned m = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '7' && i < 8; i++)
        m = m * 8 + (unsigned)(v[i] - '0');
    if (i == 0 || v[i] || m > 0777)
        return bad(err, "socket_mode", v, "an octal mode up to 0777, e.g. 0660");
    if (m & 0002)
        return gs_err_set(err, GS_EINVAL,
                          "socket_mode: %04o is world-writable and is refused: any local "
                          "user could then submit work to the daemon; use 0660 and "
                          "socket_group to choose who may connect", m);
    if ((m & 0600) != 0600)
        return gs_err_set(err, GS_EINVAL,
                          "socket_mode: %04o lacks owner read and write (0600), which the "
                          "daemon's own user needs; e.g. 0660", m);
    *dst = m;
    return 0;
}

/* One user or group name to its id; 0 or -1 when there is no such name. */
static int lookup_id(const char *name, int groups, unsigned *out)
{
    char buf[16384];
    if (groups) {
        struct group g, *res = NULL;
        if (getgrnam_r(name, &g, buf, sizeof buf, &res) != 0 || !res)
            return -1;
        *out = (unsigned)res->gr_gid;
    } else {
        struct passwd pw, *res = NULL;
        if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
            return -1;
        *out = (unsigned)res->pw_uid;
    }
    return 0;
}

int gs_conf_parse_ids(const char *key, const char *list, int groups, unsigned *ids, size_t *n,
                      char *norm, size_t normlen, gs_err *err)
{
    const char *what = groups ? "group" : "user";
    char out[512];
    size_t olen = 0;
    *n = 0;
    out[0] = '\0';
    const char *p = list;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p) {
        const char *b = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        size_t len = (size_t)(p - b);
        while (*p == ' ' || *p == '\t')
            p++;
        if (len == 0 || (*p && *p != ','))
            return gs_err_set(err, GS_EINVAL, "%s: '%s' is not accepted; expected a "
                              "comma-separated list of %s names or numbers, e.g. 0,%s, or "
                              "\"\" for none", key, list, what, groups ? "adm" : "alice");
        char name[256];
        if (len >= sizeof name)
            return gs_err_set(err, GS_EINVAL, "%s: entry '%.*s...' is too long", key, 32, b);
        memcpy(name, b, len);
        name[len] = '\0';
        uint64_t v;
        unsigned id;
        if (digits_u64(name, &v) == len) {
            /* (uid_t)-1 means "no change" to chown and is nobody's id. */
            if (v >= 0xffffffffull)
                return gs_err_set(err, GS_EINVAL, "%s: %s id %s is out of range", key, what,
                                  name);
            id = (unsigned)v;
        } else if (lookup_id(name, groups, &id) != 0) {
            return gs_err_set(err, GS_EINVAL, "%s: no %s named '%s' on this system", key, what,
                              name);
        }
        if (*n == GS_CONF_MAX_IDS)
            return gs_err_set(err, GS_EINVAL, "%s: more than %d entries", key, GS_CONF_MAX_IDS);
        ids[(*n)++] = id;
        int w = snprintf(out + olen, sizeof out - olen, "%s%s", olen ? "," : "", name);
        if (w < 0 || (size_t)w >= sizeof out - olen)
            return gs_err_set(err, GS_EINVAL, "%s: list too long (at most %zu bytes)", key,
                              sizeof out - 1);
        olen += (size_t)w;
        if (*p == ',') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (!*p)
                return gs_err_set(err, GS_EINVAL, "%s: '%s' ends with a comma", key, list);
        }
    }
    if (norm) {
        if (olen >= normlen)
            return gs_err_set(err, GS_EINVAL, "%s: list too long (at most %zu bytes)", key,
                              normlen - 1);
        memcpy(norm, out, olen + 1);
    }
    return 0;
}

/* "all", "none" or a list of device indices, stored in a normal form
 * ("0,2") so equal lists compare equal. */
static int set_devices(char *dst, size_t cap, const char *v, gs_err *err)
{
    static const char *const expected =
        "\"all\", \"none\" or a comma-separated list of distinct device indices, e.g. 0,2";
    if (strcasecmp(v, "all") == 0 || strcasecmp(v, "none") == 0) {
        snprintf(dst, cap, "%s", tolower((unsigned char)v[0]) == 'a' ? "all" : "none");
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
        size_t n = digits_u64(p, &x);
        if (n == 0)
            return bad(err, "devices", v, expected);
        if (x > MAX_DEVICE_INDEX)
            return gs_err_set(err, GS_EINVAL, "devices: index %s is too large; indices go up to %d",
                              p, MAX_DEVICE_INDEX);
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == (unsigned)x)
                return gs_err_set(err, GS_EINVAL, "devices: index %u is listed twice in '%s'",
                                  (unsigned)x, v);
        if (nseen == sizeof seen / sizeof seen[0])
            return gs_err_set(err, GS_EINVAL, "devices: more than %zu devices listed",
                              sizeof seen / sizeof seen[0]);
        seen[nseen++] = (unsigned)x;
        int w = snprintf(out + olen, sizeof out - olen, "%s%u", olen ? "," : "", (unsigned)x);
        if (w < 0 || (size_t)w >= sizeof out - olen || olen + (size_t)w >= cap)
            return gs_err_set(err, GS_EINVAL, "devices: list too long (at most %zu bytes)",
                              cap - 1);
        olen += (size_t)w;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        if (*p != ',')
            return bad(err, "devices", v, expected);
        p++;
    }
    memcpy(dst, out, olen + 1);
    return 0;
}

int gs_conf_set(gs_conf *c, const char *key, const char *v, gs_err *err)
{
    if (!key || !key[0])
        return gs_err_set(err, GS_EINVAL, "empty key");
    if (!v)
        return gs_err_set(err, GS_EINVAL, "%s: missing value", key);

    if (strcmp(key, "socket") == 0) {
        size_t n = strlen(v);
        if (n == 0) { /* "": back to the default socket */
            c->socket[0] = '\0';
            return 0;
        }
        if (v[0] != '/')
            return bad(err, key, v, "an absolute path (starting with /), or \"\" for the default");
        if (n >= GS_CONF_SOCKET_MAX)
            return gs_err_set(err, GS_EINVAL,
                              "socket: path is %zu bytes; a Unix socket path must be shorter "
                              "than %d bytes", n, GS_CONF_SOCKET_MAX);
        return set_string(c->socket, sizeof c->socket, key, v, err);
    }
    if (strcmp(key, "socket_mode") == 0)
        return set_mode(&c->socket_mode, v, err);
    if (strcmp(key, "socket_group") == 0) {
        for (const char *p = v; *p; p++)
            if (*p == ':' || *p == ' ' || *p == '\t')
                return bad(err, key, v, "a group name or number, or \"\" for the daemon's group");
        return set_string(c->socket_group, sizeof c->socket_group, key, v, err);
    }
    if (strcmp(key, "allow_uids") == 0 || strcmp(key, "allow_gids") == 0) {
        int g = key[6] == 'g';
        unsigned ids[GS_CONF_MAX_IDS];
        size_t n;
        char *dst = g ? c->allow_gids : c->allow_uids;
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                return gs_err_set(err, GS_EINVAL, "%s: value contains a control character", key);
        return gs_conf_parse_ids(key, v, g, ids, &n, dst, sizeof c->allow_uids, err);
    }
    /* Relative paths are allowed here: tests and local runs use them. */
    if (strcmp(key, "db") == 0)
        return set_string(c->db, sizeof c->db, key, v, err);
    if (strcmp(key, "cache_dir") == 0)
        return set_string(c->cache_dir, sizeof c->cache_dir, key, v, err);
    if (strcmp(key, "kernel_dir") == 0)
        return set_string(c->kernel_dir, sizeof c->kernel_dir, key, v, err);
    if (strcmp(key, "log_level") == 0) {
        int l = gs_log_parse_level(v);
        if (l < 0)
            return bad(err, key, v, "error, warn, info or debug");
        c->log_level = l;
        return 0;
    }
    if (strcmp(key, "log_target") == 0) {
        if (strcmp(v, "stderr") == 0)
            c->log_syslog = 0;
        else if (strcmp(v, "syslog") == 0)
            c->log_syslog = 1;
        else
            return bad(err, key, v, "stderr or syslog");
        return 0;
    }
    if (strcmp(key, "max_request_bytes") == 0) {
        uint64_t x;
        if (strcasecmp(v, "auto") == 0)
            x = GS_CONF_AUTO;
        else if (gs_conf_parse_size(v, &x) != 0 || x < 4096 || x == GS_CONF_AUTO)
            return bad(err, key, v, "auto (a quarter of max_memory), or a size of at least 4096, "
                       "e.g. 4096, 512M, 4G");
        c->max_request_bytes = x;
        return 0;
    }
    if (strcmp(key, "max_memory") == 0 || strcmp(key, "max_memory_per_uid") == 0) {
        int per = strcmp(key, "max_memory") != 0;
        uint64_t x;
        if (strcasecmp(v, "auto") == 0)
            x = GS_CONF_AUTO;
        else if (gs_conf_parse_size(v, &x) != 0 || x < (1u << 20) || x == GS_CONF_AUTO)
            return bad(err, key, v, per ? "auto (half of max_memory), or a size of at least "
                                          "1M, e.g. 256M, 8G"
                                        : "auto (the cgroup's memory limit, else the physical "
                                          "memory, less a headroom), or a size of at least 1M, "
                                          "e.g. 512M, 16G");
        *(per ? &c->max_memory_per_uid : &c->max_memory) = x;
        return 0;
    }
    if (strcmp(key, "memory_wait") == 0) {
        double s;
        if (gs_conf_parse_duration(v, &s) != 0 || !(s >= 0) || s > DAY_S)
            return bad(err, key, v, "a duration from 0 (refuse at once) to 1 day, e.g. 10s, "
                       "500ms, 1m");
        c->memory_wait_s = s;
        return 0;
    }
    if (strcmp(key, "max_mapped_bytes") == 0 || strcmp(key, "max_mapped_bytes_per_client") == 0) {
        int per = strcmp(key, "max_mapped_bytes") != 0;
        uint64_t x;
        if (strcasecmp(v, "auto") == 0)
            x = GS_CONF_AUTO;
        else if (gs_conf_parse_size(v, &x) != 0 || x == GS_CONF_AUTO)
            return bad(err, key, v, per ? "auto (the physical memory), or a size, e.g. 0 "
                       "(keep no memfd mapped), 16G" : "auto (twice the physical memory, at "
                       "most 32T), or a size, e.g. 0 (keep no memfd mapped), 64G");
        *(per ? &c->max_mapped_bytes_per_client : &c->max_mapped_bytes) = x;
        return 0;
    }
    if (strcmp(key, "device_mem_cap") == 0) {
        uint64_t x;
        if (strcmp(v, "auto") == 0)
            x = 0;
        else if (gs_conf_parse_size(v, &x) != 0 || (x && x < 65536) || x == GS_CONF_AUTO)
            return bad(err, key, v, "auto or 0 (the device's own limits), or a size of at "
                       "least 64K, e.g. 64M, 4G");
        c->device_mem_cap = x;
        return 0;
    }
    if (strcmp(key, "buffer_pool_percent") == 0)
        return set_uint(&c->buffer_pool_percent, key, v, 0, 90, "a whole number from 0 to 90",
                        err);
    if (strcmp(key, "max_pinned_bytes") == 0) {
        uint64_t x;
        if (strcmp(v, "auto") == 0)
            x = GS_CONF_AUTO;
        else if (gs_conf_parse_size(v, &x) != 0 || x == GS_CONF_AUTO)
            return bad(err, key, v, "auto (a quarter of the memory), or a size, e.g. 0 "
                       "(never pin), 512M, 16G");
        c->max_pinned_bytes = x;
        return 0;
    }
    if (strcmp(key, "max_clients") == 0)
        return set_uint(&c->max_clients, key, v, 1, 65536, "a whole number from 1 to 65536", err);
    if (strcmp(key, "max_clients_per_uid") == 0)
        return set_uint(&c->max_clients_per_uid, key, v, 0, 65536,
                        "a whole number from 0 (no per-user cap) to 65536", err);
    if (strcmp(key, "inline_sort_max") == 0) {
        if (strcasecmp(v, "auto") == 0) {
            c->inline_sort_max = GS_CONF_INLINE_AUTO;
            return 0;
        }
        return set_uint(&c->inline_sort_max, key, v, 0, 65536,
                        "auto (2048 with at most 2 CPUs or at least 4 I/O loops, else 0), or a "
                        "whole number of keys from 0 (never) to 65536", err);
    }
    if (strcmp(key, "max_header_bytes") == 0) {
        uint64_t x;
        if (gs_conf_parse_size(v, &x) != 0 || x < 256 || x > (16u << 20))
            return bad(err, key, v, "a size from 256 to 16M, e.g. 64K");
        c->max_header_bytes = (uint32_t)x;
        return 0;
    }
    if (strcmp(key, "idle_timeout") == 0)
        return set_timeout(&c->idle_timeout_s, key, v, 1, err);
    if (strcmp(key, "io_timeout") == 0)
        return set_timeout(&c->io_timeout_s, key, v, 1, err);
    if (strcmp(key, "request_timeout") == 0) {
        if (strcasecmp(v, "auto") == 0) {
            c->request_timeout_s = 0;
            return 0;
        }
        double s;
        if (gs_conf_parse_duration(v, &s) != 0 || !(s > 0) || s > DAY_S)
            return bad(err, key, v, "auto (60 s plus 1 s per 32 MiB the request declares), or "
                       "a duration above 0 and at most 1 day, e.g. 90s, 10m");
        c->request_timeout_s = s;
        return 0;
    }
    if (strcmp(key, "host_threads") == 0)
        return set_uint(&c->host_threads, key, v, 0, 1024,
                        "a whole number from 0 to 1024 (0: one per online CPU, at most 8)", err);
    if (strcmp(key, "io_threads") == 0) {
        if (strcasecmp(v, "auto") == 0) {
            c->io_threads = 0;
            return 0;
        }
        return set_uint(&c->io_threads, key, v, 1, 64,
                        "auto (one per 2 online CPUs, 1 with at most 2, at most 8), or a whole "
                        "number of event loops from 1 to 64", err);
    }
    if (strcmp(key, "devices") == 0)
        return set_devices(c->devices, sizeof c->devices, v, err);
    if (strcmp(key, "tune_missing") == 0) {
        int b;
        if (strcmp(v, "auto") == 0)
            b = GS_CONF_TUNE_AUTO;
        else if (gs_conf_parse_bool(v, &b) != 0)
            return bad(err, key, v, "auto, or yes/no, true/false, on/off or 1/0");
        c->tune_missing = b;
        return 0;
    }
    if (strcmp(key, "tune_budget") == 0)
        return set_timeout(&c->tune_budget_s, key, v, 0, err);
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
        if (k->live) {
            memcpy(dst, src, k->size);
            continue;
        }
        int changed = k->str ? strcmp(dst, src) != 0 : memcmp(dst, src, k->size) != 0;
        if (changed && n < cap)
            restart[n] = k->name;
        n += changed;
    }
    return n;
}

/* ---- the printer ---- */

/* key = value, quoted when it must be, then "  # note" when there is one
 * (the parser takes a '#' after a blank as a comment, quoted value or not). */
static void print_string_noted(FILE *out, const char *key, const char *v, const char *note)
{
    if (v[0] && !strpbrk(v, " \t#\"\\")) {
        fprintf(out, "%s = %s", key, v);
    } else {
        fprintf(out, "%s = \"", key);
        for (const char *p = v; *p; p++) {
            if (*p == '"' || *p == '\\')
                fputc('\\', out);
            fputc(*p, out);
        }
        fputc('"', out);
    }
    if (note && note[0])
        fprintf(out, "  # %s", note);
    fputc('\n', out);
}

static void print_string(FILE *out, const char *key, const char *v)
{
    print_string_noted(out, key, v, NULL);
}

static void print_size(FILE *out, const char *key, uint64_t v)
{
    static const char sfx[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        unsigned shift = 40 - 10 * (unsigned)i;
        if (v && (v & ((1ull << shift) - 1)) == 0) {
            fprintf(out, "%s = %llu%c\n", key, (unsigned long long)(v >> shift), sfx[i]);
            return;
        }
    }
    fprintf(out, "%s = %llu\n", key, (unsigned long long)v);
}

/* A size key whose default is worked out on the machine (GS_CONF_AUTO). */
static void print_size_or_auto(FILE *out, const char *key, uint64_t v)
{
    if (v == GS_CONF_AUTO)
        fprintf(out, "%s = auto\n", key);
    else
        print_size(out, key, v);
}

/* The largest unit that states the value exactly. The count of nanoseconds
 * is searched near s*1e9 for the one that reads back to exactly s (any value
 * the parser produced has one). */
static void print_duration(FILE *out, const char *key, double s)
{
    if (!(s >= 0) || s >= 1.8e10) {
        fprintf(out, "%s = %.17g\n", key, s);
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
    const uint64_t S = 1000000000ull;
    if (ns && ns % (3600 * S) == 0)
        fprintf(out, "%s = %lluh\n", key, (unsigned long long)(ns / (3600 * S)));
    else if (ns && ns % (60 * S) == 0)
        fprintf(out, "%s = %llum\n", key, (unsigned long long)(ns / (60 * S)));
    else if (ns % S == 0)
        fprintf(out, "%s = %llus\n", key, (unsigned long long)(ns / S));
    else if (ns % 1000000 == 0)
        fprintf(out, "%s = %llums\n", key, (unsigned long long)(ns / 1000000));
    else {
        char frac[16];
        snprintf(frac, sizeof frac, "%09llu", (unsigned long long)(ns % S));
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0')
            frac[--n] = '\0';
        fprintf(out, "%s = %llu.%ss\n", key, (unsigned long long)(ns / S), frac);
    }
}

void gs_conf_print(const gs_conf *c, FILE *out)
{
    gs_conf_print_noted(c, NULL, out);
}

void gs_conf_print_noted(const gs_conf *c, const gs_conf_notes *n, FILE *out)
{
    print_string_noted(out, "socket", c->socket, n ? n->socket : NULL);
    fprintf(out, "socket_mode = %04o\n", c->socket_mode);
    print_string(out, "socket_group", c->socket_group);
    print_string(out, "allow_uids", c->allow_uids);
    print_string(out, "allow_gids", c->allow_gids);
    print_string_noted(out, "db", c->db, n ? n->db : NULL);
    print_string_noted(out, "cache_dir", c->cache_dir, n ? n->cache_dir : NULL);
    print_string(out, "kernel_dir", c->kernel_dir);
    fprintf(out, "log_level = %s\n", gs_log_level_name(c->log_level));
    fprintf(out, "log_target = %s\n", c->log_syslog ? "syslog" : "stderr");
    print_size_or_auto(out, "max_request_bytes", c->max_request_bytes);
    print_size_or_auto(out, "max_memory", c->max_memory);
    print_size_or_auto(out, "max_memory_per_uid", c->max_memory_per_uid);
    print_duration(out, "memory_wait", c->memory_wait_s);
    fprintf(out, "buffer_pool_percent = %u\n", c->buffer_pool_percent);
    print_size_or_auto(out, "max_pinned_bytes", c->max_pinned_bytes);
    print_size_or_auto(out, "max_mapped_bytes", c->max_mapped_bytes);
    print_size_or_auto(out, "max_mapped_bytes_per_client", c->max_mapped_bytes_per_client);
    if (c->device_mem_cap)
        print_size(out, "device_mem_cap", c->device_mem_cap);
    else
        fprintf(out, "device_mem_cap = auto\n");
    fprintf(out, "max_clients = %u\n", c->max_clients);
    fprintf(out, "max_clients_per_uid = %u\n", c->max_clients_per_uid);
    if (c->inline_sort_max == GS_CONF_INLINE_AUTO)
        fprintf(out, "inline_sort_max = auto\n");
    else
        fprintf(out, "inline_sort_max = %u\n", c->inline_sort_max);
    print_size(out, "max_header_bytes", c->max_header_bytes);
    print_duration(out, "idle_timeout", c->idle_timeout_s);
    print_duration(out, "io_timeout", c->io_timeout_s);
    if (c->request_timeout_s > 0)
        print_duration(out, "request_timeout", c->request_timeout_s);
    else
        fprintf(out, "request_timeout = auto\n");
    fprintf(out, "host_threads = %u\n", c->host_threads);
    if (c->io_threads)
        fprintf(out, "io_threads = %u\n", c->io_threads);
    else
        fprintf(out, "io_threads = auto\n");
    print_string(out, "devices", c->devices);
    fprintf(out, "tune_missing = %s\n", c->tune_missing == GS_CONF_TUNE_AUTO ? "auto"
                                         : c->tune_missing ? "yes" : "no");
    print_duration(out, "tune_budget", c->tune_budget_s);
}
