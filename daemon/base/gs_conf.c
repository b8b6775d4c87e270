/* The daemon's configuration values (see gs_conf.h and gsortd.conf(5)): the
 * parsers of sizes, durations, booleans and user or group lists that the
 * keys (gs_conf_keys.c) read their values with, and what the keys whose
 * default is "auto" mean on this machine. The keys themselves, their
 * defaults, bounds, printing and reload are one table in gs_conf_keys.c;
 * the file reader is gs_conf_file.c. */
#include "config.h"
#include "gs_conf.h"
#include "gs_mem.h"

#include <grp.h>
#include <pwd.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

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
    if (cpus > 0 && cpus <= 2)
        return 2048;
    return gs_conf_io_threads(c) >= 4 ? 16384 : 0;
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

/* configure's --sysconfdir (Makefile.am passes it), so the daemon reads the
 * file `make install` put there: /etc for packages, /usr/local/etc for a
 * plain ./configure. */
#ifndef GS_SYSCONFDIR
#define GS_SYSCONFDIR "/etc"
#endif

const char *gs_conf_default_path(void) { return GS_SYSCONFDIR "/gsortd/gsortd.conf"; }

/* ---- value parsers ---- */

size_t gs_conf_digits(const char *s, uint64_t *out)
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
    size_t n = gs_conf_digits(s, &v);
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
    size_t n = gs_conf_digits(p, &ip);
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
        if (gs_conf_digits(name, &v) == len) {
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
