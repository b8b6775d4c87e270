/* The configuration module: the size, duration and boolean parsers at their
 * boundaries, every key's validation (and that a refused value leaves the
 * configuration untouched), the file syntax and its "PATH:LINE:" errors,
 * all-or-nothing loading, the default socket path, the print/load round
 * trip, the reload's copy of the live keys, the key named for a field
 * (GS_CONF_KEY), and that the shipped etc/gsortd.conf documents the real
 * defaults. */
#include "config.h"
#include "gs_conf.h"
#include "gs_mem.h"
#include "gs_log.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gsortd-conf-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static void write_bytes(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        tap_bail("cannot write %s: %s", path, strerror(errno));
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* Write `text` to a scratch file and load it into *c. */
static int load_text(gs_conf *c, const char *text, gs_err *err, char *path, size_t plen)
{
    char p[512];
    path_of(p, sizeof p, "t.conf");
    write_text(p, text);
    if (path)
        snprintf(path, plen, "%s", p);
    gs_err_clear(err);
    return gs_conf_load(c, p, err);
}

/* Name of the first field that differs, NULL when equal. Field by field:
 * the bytes after a string's NUL may differ and do not matter. */
static const char *conf_diff(const gs_conf *a, const gs_conf *b)
{
#define S(f) if (strcmp(a->f, b->f) != 0) return #f
#define V(f) if (a->f != b->f) return #f
    S(socket); V(socket_mode); S(socket_group); S(allow_uids); S(allow_gids); S(db); S(cache_dir); S(kernel_dir);
    V(log_level); V(log_syslog); V(max_request_bytes); V(max_pinned_bytes); V(device_mem_cap);
    V(max_memory); V(max_memory_per_uid); V(memory_wait_s); V(max_mapped_bytes); V(max_mapped_bytes_per_client);
    V(buffer_pool_percent); V(max_clients); V(inline_sort_max);
    V(max_header_bytes); V(idle_timeout_s); V(io_timeout_s); V(host_threads); V(device_lanes); V(io_threads);
    S(devices); V(tune_missing); V(tune_budget_s);
    V(max_clients_per_uid); V(request_timeout_s);
    return NULL;
}

static int conf_ndiff(const gs_conf *a, const gs_conf *b)
{
    int n = 0;
#define SC(f) n += strcmp(a->f, b->f) != 0
#define VC(f) n += a->f != b->f
    SC(socket); VC(socket_mode); SC(socket_group); SC(allow_uids); SC(allow_gids); SC(db); SC(cache_dir); SC(kernel_dir);
    VC(log_level); VC(log_syslog); VC(max_request_bytes); VC(max_pinned_bytes); VC(device_mem_cap);
    VC(max_memory); VC(max_memory_per_uid); VC(memory_wait_s); VC(max_mapped_bytes); VC(max_mapped_bytes_per_client);
    VC(buffer_pool_percent); VC(max_clients); VC(inline_sort_max);
    VC(max_header_bytes); VC(idle_timeout_s); VC(io_timeout_s); VC(host_threads); VC(device_lanes); VC(io_threads);
    SC(devices); VC(tune_missing); VC(tune_budget_s);
    VC(max_clients_per_uid); VC(request_timeout_s);
    return n;
}
#define NFIELDS 32

/* ---- parsers ---- */

static void size_ok(const char *s, uint64_t want)
{
    uint64_t v = 12345;
    int rc = gs_conf_parse_size(s, &v);
    tap_ok(rc == 0 && v == want, "size '%s' = %llu (got rc %d, %llu)", s,
           (unsigned long long)want, rc, (unsigned long long)v);
}

static void size_bad(const char *s)
{
    uint64_t v = 12345;
    int rc = gs_conf_parse_size(s, &v);
    tap_ok(rc == GS_EINVAL && v == 12345, "size '%s' refused, output untouched", s ? s : "(null)");
}

static void dur_ok(const char *s, double want)
{
    double v = -7;
    int rc = gs_conf_parse_duration(s, &v);
    tap_ok(rc == 0 && v == want, "duration '%s' = %.9g s (got rc %d, %.17g)", s, want, rc, v);
}

static void dur_bad(const char *s)
{
    double v = -7;
    int rc = gs_conf_parse_duration(s, &v);
    tap_ok(rc == GS_EINVAL && v == -7, "duration '%s' refused, output untouched", s ? s : "(null)");
}

static void bool_ok(const char *s, int want)
{
    int v = 42;
    int rc = gs_conf_parse_bool(s, &v);
    tap_ok(rc == 0 && v == want, "bool '%s' = %d", s, want);
}

static void bool_bad(const char *s)
{
    int v = 42;
    int rc = gs_conf_parse_bool(s, &v);
    tap_ok(rc == GS_EINVAL && v == 42, "bool '%s' refused", s ? s : "(null)");
}

static void test_parsers(void)
{
    size_ok("0", 0);
    size_ok("4096", 4096);
    size_ok("64K", 65536);
    size_ok("64k", 65536);
    size_ok("512M", 512ull << 20);
    size_ok("512m", 512ull << 20);
    size_ok("4G", 4ull << 30);
    size_ok("4g", 4ull << 30);
    size_ok("1T", 1ull << 40);
    size_ok("1t", 1ull << 40);
    size_ok("4GiB", 4ull << 30);
    size_ok("4gib", 4ull << 30);
    size_ok("4GB", 4ull << 30);
    size_ok("1KiB", 1024);
    size_ok("100B", 100);
    size_ok("007", 7);
    size_ok("18446744073709551615", UINT64_MAX);
    size_ok("16777215T", 16777215ull << 40);
    size_bad("");
    size_bad(NULL);
    size_bad("-1");
    size_bad("+1");
    size_bad(" 1");
    size_bad("1 ");
    size_bad("1 K");
    size_bad("1.5G");
    size_bad("G");
    size_bad("K1");
    size_bad("4X");
    size_bad("4Gi");
    size_bad("4iB");
    size_bad("4GiBB");
    size_bad("4KK");
    size_bad("0x10");
    size_bad("17179869184T");
    size_bad("16777216T");
    size_bad("18446744073709551616");
    size_bad("99999999999999999999999");

    dur_ok("30", 30);
    dur_ok("0", 0);
    dur_ok("1.5s", 1.5);
    dur_ok("250ms", 0.25);
    dur_ok("5m", 300);
    dur_ok("2h", 7200);
    dur_ok(".5", 0.5);
    dur_ok("5.", 5);
    dur_ok("0.5m", 30);
    dur_ok("1.000000001s", 1.000000001);
    dur_ok("86400", 86400);
    dur_ok("5124095h", 5124095.0 * 3600);
    dur_bad("");
    dur_bad(NULL);
    dur_bad("-1");
    dur_bad("+1");
    dur_bad(" 1");
    dur_bad("1 s");
    dur_bad("1.5x");
    dur_bad("5M");
    dur_bad("1d");
    dur_bad("s");
    dur_bad(".");
    dur_bad(".s");
    dur_bad("1..5");
    dur_bad("1.2.3");
    dur_bad("1e3");
    dur_bad("nan");
    dur_bad("inf");
    dur_bad("1sec");
    dur_bad("99999999999999999999");
    dur_bad("5124096h");

    bool_ok("yes", 1);
    bool_ok("YES", 1);
    bool_ok("true", 1);
    bool_ok("True", 1);
    bool_ok("on", 1);
    bool_ok("1", 1);
    bool_ok("no", 0);
    bool_ok("FALSE", 0);
    bool_ok("off", 0);
    bool_ok("Off", 0);
    bool_ok("0", 0);
    bool_bad("");
    bool_bad(NULL);
    bool_bad("2");
    bool_bad("y");
    bool_bad("yess");
    bool_bad(" yes");
    bool_bad("enabled");
}

/* ---- keys ---- */

static gs_conf base;   /* defaults with a few fields changed */

static void set_good(const char *key, const char *val)
{
    gs_conf c = base;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_conf_set(&c, key, val, &e);
    tap_ok(rc == 0, "%s = '%s' accepted%s%s", key, val, rc ? ": " : "", rc ? e.msg : "");
}

/* A refused value: GS_EINVAL, a message naming the key and containing
 * `want`, and the configuration untouched. */
static void set_bad(const char *key, const char *val, const char *want)
{
    gs_conf c = base;
    gs_err e;
    gs_err_clear(&e);
    int rc = gs_conf_set(&c, key, val, &e);
    int named = strncmp(e.msg, key, strlen(key)) == 0 && e.msg[strlen(key)] == ':';
    char shown[41];
    size_t i = 0;
    for (; val[i] && i < sizeof shown - 1; i++) /* keep the TAP line one line */
        shown[i] = (unsigned char)val[i] < 0x20 || val[i] == 0x7f ? '?' : val[i];
    shown[i] = '\0';
    tap_ok(rc == GS_EINVAL && e.code == GS_EINVAL && named && strstr(e.msg, want) &&
               !conf_diff(&c, &base),
           "%s = '%s' refused: %s", key, shown, e.msg);
}

static void test_keys(void)
{
    gs_conf c;
    gs_err e;
    gs_conf_defaults(&base);
    base.max_clients = 17;
    snprintf(base.socket, sizeof base.socket, "/tmp/base.sock");
    snprintf(base.devices, sizeof base.devices, "3");

    /* Defaults as documented. */
    gs_conf_defaults(&c);
    tap_ok(c.socket[0] == '\0' && c.socket_mode == 0660 && c.socket_group[0] == '\0' &&
               c.db[0] == '\0' && c.cache_dir[0] == '\0' && c.kernel_dir[0] == '\0',
           "defaults: socket, mode 0660, group and paths empty");
    tap_ok(c.log_level == GS_LOG_INFO && c.log_syslog == 0, "defaults: log info to stderr");
    uint64_t quarter = gs_conf_memory_cap(&c) / 4;
    tap_ok(c.max_request_bytes == GS_CONF_AUTO && gs_conf_request_cap(&c) == quarter &&
               c.max_clients == 256 && c.max_header_bytes == 65536,
           "defaults: limits auto (a quarter of max_memory: %llu) / 256 / 64K",
           (unsigned long long)gs_conf_request_cap(&c));
    tap_ok(c.max_memory_per_uid == GS_CONF_AUTO &&
               gs_conf_memory_uid_cap(&c) == gs_conf_memory_cap(&c) / 2,
           "defaults: max_memory_per_uid auto (half of max_memory: %llu)",
           (unsigned long long)gs_conf_memory_uid_cap(&c));
    {
        /* max_memory = auto: the cgroup's limit or the RAM, less a quarter */
        uint64_t lim = gs_mem_limit(NULL, 0), cap = gs_conf_memory_cap(&c);
        tap_ok(c.max_memory == GS_CONF_AUTO && lim <= gs_mem_phys() && cap == gs_mem_auto(lim) &&
                   cap >= lim / 2 && cap < lim && c.memory_wait_s == 30,
               "defaults: max_memory auto (%llu of a %llu-byte limit), memory_wait 30 s",
               (unsigned long long)cap, (unsigned long long)lim);
        uint64_t ram = gs_mem_phys(), all = gs_conf_mapped_cap(&c);
        tap_ok(c.max_mapped_bytes == GS_CONF_AUTO && c.max_mapped_bytes_per_client == GS_CONF_AUTO &&
                   all == (2 * ram < (UINT64_C(32) << 40) ? 2 * ram : UINT64_C(32) << 40) &&
                   gs_conf_mapped_client_cap(&c) == (ram < all ? ram : all),
               "defaults: max_mapped_bytes auto (%llu: twice the RAM, at most 32T), per client "
               "auto (%llu: the RAM)", (unsigned long long)all,
               (unsigned long long)gs_conf_mapped_client_cap(&c));
        gs_conf m = c;
        gs_err me;
        tap_ok(gs_conf_set(&m, "max_memory", "100M", &me) == 0 &&
                   gs_conf_memory_cap(&m) == 100u << 20 && gs_conf_request_cap(&m) == 25u << 20 &&
                   gs_conf_memory_uid_cap(&m) == 50u << 20,
               "max_memory = 100M: the budget is 100 MiB, max_request_bytes = auto a quarter of "
               "it, max_memory_per_uid = auto half of it");
        tap_ok(gs_conf_set(&m, "max_memory_per_uid", "200M", &me) == 0 &&
                   gs_conf_memory_uid_cap(&m) == 100u << 20,
               "max_memory_per_uid is never above max_memory");
        tap_ok(gs_conf_set(&m, "max_mapped_bytes", "1G", &me) == 0 &&
                   gs_conf_set(&m, "max_mapped_bytes_per_client", "2G", &me) == 0 &&
                   gs_conf_mapped_cap(&m) == 1u << 30 && gs_conf_mapped_client_cap(&m) == 1u << 30,
               "max_mapped_bytes_per_client is never above max_mapped_bytes");
    }
    tap_ok(c.idle_timeout_s == 300 && c.io_timeout_s == 30, "defaults: timeouts 300 s / 30 s");
    tap_ok(c.host_threads == 0 && strcmp(c.devices, "all") == 0 &&
               c.tune_missing == GS_CONF_TUNE_AUTO && c.tune_budget_s == 270,
           "defaults: host_threads 0, devices all, tune_missing auto, budget 270 s");
    tap_ok(strcmp(gs_conf_default_path(), GS_SYSCONFDIR "/gsortd/gsortd.conf") == 0,
           "default config path is SYSCONFDIR/gsortd/gsortd.conf (" GS_SYSCONFDIR ")");

    /* Values land in the right field. */
    struct {
        const char *k, *v;
    } sets[] = {
        { "socket", "/run/x/gs.sock" }, { "socket_mode", "0600" }, { "socket_group", "gsort" },
        { "db", "rel/tuning.db" },      { "cache_dir", "/var/tmp/c" }, { "kernel_dir", "kern" },
        { "log_level", "debug" },       { "log_target", "syslog" },
        { "max_request_bytes", "1G" },  { "max_clients", "1000" },
        { "max_header_bytes", "1M" },   { "idle_timeout", "2m" },      { "io_timeout", "250ms" },
        { "host_threads", "12" },       { "devices", " 2 , 0 " },      { "tune_missing", "on" },
        { "tune_budget", "1h" },
    };
    gs_conf_defaults(&c);
    int all = 1;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        gs_err_clear(&e);
        if (gs_conf_set(&c, sets[i].k, sets[i].v, &e) != 0) {
            tap_diag("%s: %s", sets[i].k, e.msg);
            all = 0;
        }
    }
    tap_ok(all, "every key accepts a good value");
    tap_ok(strcmp(c.socket, "/run/x/gs.sock") == 0 && c.socket_mode == 0600 &&
               strcmp(c.socket_group, "gsort") == 0 && strcmp(c.db, "rel/tuning.db") == 0 &&
               strcmp(c.cache_dir, "/var/tmp/c") == 0 && strcmp(c.kernel_dir, "kern") == 0,
           "string keys and socket_mode stored");
    tap_ok(c.log_level == GS_LOG_DEBUG && c.log_syslog == 1 &&
               c.max_request_bytes == (1ull << 30) && c.max_clients == 1000 &&
               c.max_header_bytes == (1u << 20),
           "log and limit keys stored");
    tap_ok(c.idle_timeout_s == 120 && c.io_timeout_s == 0.25 && c.host_threads == 12 &&
               strcmp(c.devices, "2,0") == 0 && c.tune_missing == 1 && c.tune_budget_s == 3600,
           "timeouts, threads, devices (normalised to '%s'), tuning stored", c.devices);
    gs_conf d = c;
    gs_conf_set(&c, "log_target", "stderr", &e);
    gs_conf_set(&c, "tune_missing", "0", &e);
    gs_conf_set(&c, "socket", "", &e);
    gs_conf_set(&c, "socket_group", "", &e);
    gs_conf_set(&c, "devices", "NONE", &e);
    gs_conf_set(&c, "log_level", "Warn", &e);
    tap_ok(c.log_syslog == 0 && c.tune_missing == 0 && c.socket[0] == '\0' &&
               c.socket_group[0] == '\0' && strcmp(c.devices, "none") == 0 &&
               c.log_level == GS_LOG_WARN && d.log_syslog == 1,
           "keys can be set back (stderr, no, \"\" for default socket/group, none, Warn)");

    /* Unknown keys. */
    gs_conf_defaults(&c);
    d = c;
    gs_err_clear(&e);
    int rc = gs_conf_set(&c, "max_clinets", "10", &e);
    tap_ok(rc == GS_ENOTFOUND && strstr(e.msg, "unknown key 'max_clinets'") &&
               strstr(e.msg, "max_clients") && !conf_diff(&c, &d),
           "unknown key: GS_ENOTFOUND with a suggestion: %s", e.msg);
    gs_err_clear(&e);
    rc = gs_conf_set(&c, "zzzzzzzzzzzz", "1", &e);
    tap_ok(rc == GS_ENOTFOUND && strstr(e.msg, "unknown key 'zzzzzzzzzzzz'") &&
               !strstr(e.msg, "did you mean"),
           "unknown key far from any: no suggestion: %s", e.msg);
    tap_ok(gs_conf_set(&c, "Socket", "/x", &e) == GS_ENOTFOUND, "keys are case-sensitive");
    tap_ok(gs_conf_set(&c, "", "1", &e) == GS_EINVAL, "empty key refused");
    tap_ok(gs_conf_set(&c, "max_clients", NULL, &e) == GS_EINVAL, "NULL value refused");

    /* socket */
    char p107[GS_CONF_SOCKET_MAX + 1], p108[GS_CONF_SOCKET_MAX + 1];
    memset(p107, 'a', 107);
    p107[0] = '/';
    p107[107] = '\0';
    memcpy(p108, p107, 107);
    p108[107] = 'a';
    p108[108] = '\0';
    set_good("socket", "/run/gsortd/gsortd.sock");
    set_good("socket", p107);
    set_good("socket", "");
    set_bad("socket", p108, "shorter than 108");
    set_bad("socket", "gsortd.sock", "absolute path");
    set_bad("socket", "./gsortd.sock", "absolute path");
    set_bad("socket", "  ", "absolute path");
    set_bad("socket", " /run/x.sock", "absolute path");
    set_bad("socket", "/run/a\nb", "control character");

    /* socket_mode */
    set_good("socket_mode", "0660");
    set_good("socket_mode", "660");
    set_good("socket_mode", "0600");
    set_good("socket_mode", "0770");
    set_good("socket_mode", "0664");
    set_bad("socket_mode", "0666", "world-writable");
    set_bad("socket_mode", "0662", "any local user");
    set_bad("socket_mode", "0777", "world-writable");
    set_bad("socket_mode", "0460", "owner read and write");
    set_bad("socket_mode", "0260", "owner read and write");
    set_bad("socket_mode", "0060", "0600");
    set_bad("socket_mode", "01660", "octal mode up to 0777");
    set_bad("socket_mode", "0680", "octal");
    set_bad("socket_mode", "0x1b0", "octal");
    set_bad("socket_mode", "", "octal");
    set_bad("socket_mode", "-0660", "octal");
    set_bad("socket_mode", "00000000660", "octal");

    /* socket_group and paths */
    char g63[64], g64[65];
    memset(g63, 'g', 63);
    g63[63] = '\0';
    memset(g64, 'g', 64);
    g64[64] = '\0';
    set_good("socket_group", "gsortd");
    set_good("socket_group", "1001");
    set_good("socket_group", g63);
    set_bad("socket_group", g64, "at most 63");
    set_bad("socket_group", "a b", "group name");
    set_bad("socket_group", "a:b", "group name");
    static char p4095[4096], p4096[4097];
    memset(p4095, 'p', 4095);
    memset(p4096, 'p', 4096);
    set_good("db", "tuning.db");
    set_good("db", "/var/lib/gsortd/tuning.db");
    set_good("db", p4095);
    set_good("cache_dir", "cache");
    set_good("kernel_dir", "../kernels");
    set_bad("db", p4096, "at most 4095");
    set_bad("cache_dir", p4096, "at most 4095");
    set_bad("kernel_dir", "a\tb", "control character");
    set_bad("db", "x\x7f", "control character");

    /* log */
    set_good("log_level", "error");
    set_good("log_level", "info");
    set_bad("log_level", "loud", "error, warn, info or debug");
    set_bad("log_level", "", "error, warn, info or debug");
    set_good("log_target", "syslog");
    set_bad("log_target", "file", "stderr or syslog");
    set_bad("log_target", "SYSLOG", "stderr or syslog");

    /* limits */
    set_good("max_request_bytes", "4096");
    set_good("max_request_bytes", "4K");
    set_good("max_request_bytes", "1T");
    set_good("max_request_bytes", "Auto");
    set_bad("max_request_bytes", "4095", "auto (a quarter of max_memory), or a size of at least 4096");
    set_bad("max_request_bytes", "0", "at least 4096");
    set_bad("max_request_bytes", "-4G", "at least 4096");
    set_bad("max_request_bytes", "17179869184T", "at least 4096");
    set_bad("max_request_bytes", "lots", "at least 4096");
    set_good("max_memory_per_uid", "auto");
    set_good("max_memory_per_uid", "64M");
    set_bad("max_memory_per_uid", "1000", "auto (half of max_memory), or a size of at least 1M");
    set_good("max_memory", "auto");
    set_good("max_memory", "1M");
    set_good("max_memory", "64G");
    set_bad("max_memory", "1048575", "or a size of at least 1M");
    set_bad("max_memory", "0", "auto (the cgroup's memory limit");
    set_bad("max_memory", "half", "auto (the cgroup's memory limit");
    set_good("memory_wait", "0");
    set_good("memory_wait", "250ms");
    set_good("memory_wait", "24h");
    set_bad("memory_wait", "-1", "a duration from 0 (refuse at once) to 1 day");
    set_bad("memory_wait", "25h", "a duration from 0 (refuse at once) to 1 day");
    set_good("max_mapped_bytes", "0");
    set_good("max_mapped_bytes", "auto");
    set_good("max_mapped_bytes", "32T");
    set_bad("max_mapped_bytes", "lots", "auto (twice the physical memory, at most 32T)");
    set_good("max_mapped_bytes_per_client", "16G");
    set_bad("max_mapped_bytes_per_client", "-1", "auto (the physical memory)");
    set_good("buffer_pool_percent", "0");
    set_good("buffer_pool_percent", "90");
    set_bad("buffer_pool_percent", "91", "from 0 to 90");
    set_bad("buffer_pool_percent", "25%", "from 0 to 90");
    set_good("max_pinned_bytes", "0");
    set_good("max_pinned_bytes", "auto");
    set_good("max_pinned_bytes", "16G");
    set_good("device_mem_cap", "auto");
    set_good("device_mem_cap", "0");
    set_good("device_mem_cap", "4G");
    set_bad("device_mem_cap", "4095", "at least 64K");
    set_bad("device_mem_cap", "lots", "the device's own limits");
    set_bad("max_pinned_bytes", "Auto", "auto (a quarter of the memory)");
    set_bad("max_pinned_bytes", "-1", "auto (a quarter of the memory)");
    set_bad("max_pinned_bytes", "18446744073709551615", "auto (a quarter of the memory)");
    {
        gs_conf pc;
        gs_conf_defaults(&pc);
        uint64_t q = gs_conf_pinned_cap(&pc);
        tap_ok(pc.max_pinned_bytes == GS_CONF_AUTO && q > 0 && q != GS_CONF_AUTO,
               "max_pinned_bytes defaults to auto: %llu bytes here", (unsigned long long)q);
        gs_err pe;
        tap_ok(gs_conf_set(&pc, "max_pinned_bytes", "3G", &pe) == 0 &&
               gs_conf_pinned_cap(&pc) == 3ull << 30, "max_pinned_bytes = 3G: the cap is 3 GiB");
    }
    set_good("max_clients", "1");
    set_good("max_clients", "65536");
    set_bad("max_clients", "0", "1 to 65536");
    set_bad("max_clients", "65537", "1 to 65536");
    set_bad("max_clients", "-1", "1 to 65536");
    set_bad("max_clients", "1K", "1 to 65536");
    set_bad("max_clients", "", "1 to 65536");
    set_bad("max_clients", "99999999999999999999999", "1 to 65536");
    set_good("max_header_bytes", "256");
    set_good("max_header_bytes", "16M");
    set_good("max_header_bytes", "16777216");
    set_bad("max_header_bytes", "255", "256 to 16M");
    set_bad("max_header_bytes", "16777217", "256 to 16M");
    set_bad("max_header_bytes", "4G", "256 to 16M");
    set_bad("max_header_bytes", "64KB!", "256 to 16M");

    /* timeouts */
    set_good("idle_timeout", "1ms");
    set_good("idle_timeout", "24h");
    set_good("idle_timeout", "86400");
    set_good("io_timeout", "0.5");
    set_bad("idle_timeout", "0", "above 0");
    set_bad("idle_timeout", "0ms", "at most 1 day");
    set_bad("idle_timeout", "86400.001", "at most 1 day");
    set_bad("idle_timeout", "25h", "at most 1 day");
    set_bad("io_timeout", "0", "above 0");
    set_bad("io_timeout", "-5", "above 0");
    set_bad("io_timeout", "1441m", "at most 1 day");
    set_bad("io_timeout", "soon", "e.g. 30");
    set_good("request_timeout", "auto");
    set_good("request_timeout", "2s");
    set_good("request_timeout", "24h");
    set_bad("request_timeout", "0", "auto (60 s plus 1 s per 32 MiB");
    set_bad("request_timeout", "25h", "at most 1 day");
    set_bad("request_timeout", "never", "auto (60 s");
    {
        gs_conf tc;
        gs_conf_defaults(&tc);
        double a0 = gs_conf_request_deadline(&tc, 0);
        double a1 = gs_conf_request_deadline(&tc, 1ull << 30);
        gs_err re;
        int r2 = gs_conf_set(&tc, "request_timeout", "2s", &re);
        tap_ok(a0 == 60 && a1 == 60 + 32 && r2 == 0 &&
                   gs_conf_request_deadline(&tc, 1ull << 30) == 2,
               "request_timeout auto: %g s for a bare header, %g s for 1 GiB; set: 2 s for any",
               a0, a1);
    }
    set_good("max_clients_per_uid", "0");
    set_good("max_clients_per_uid", "65536");
    set_bad("max_clients_per_uid", "65537", "0 (no per-user cap) to 65536");
    set_bad("max_clients_per_uid", "auto", "0 (no per-user cap) to 65536");

    /* threads, devices, tuning */
    set_good("host_threads", "0");
    set_good("host_threads", "1024");
    set_bad("host_threads", "1025", "0 to 1024");
    set_bad("host_threads", "-1", "0 to 1024");
    set_bad("host_threads", "auto", "0 to 1024");
    {
        static const char *const good[] = { "1", "64", "AUTO" }, *const bad[] = { "0", "65", "x" };
        for (size_t i = 0; i < 3; i++) {
            set_good("io_threads", good[i]);
            set_bad("io_threads", bad[i], "1 to 64");
        }
        gs_conf io;
        gs_conf_defaults(&io);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned want = cpus <= 2 ? 1 : cpus >= 16 ? 8 : (unsigned)(cpus / 2);
        tap_ok(io.io_threads == 0 && gs_conf_io_threads(&io) == want,
               "io_threads defaults to auto: %u loop(s) with %ld CPUs", gs_conf_io_threads(&io),
               cpus);
        gs_conf_set(&io, "io_threads", "5", NULL);
        tap_ok(gs_conf_io_threads(&io) == 5, "io_threads = 5 means 5 loops");
        /* with at least 4 loops small sorts stay on them (auto), with 2 they
         * go to the workers, unless the machine has at most 2 CPUs */
        unsigned with4 = gs_conf_inline_max(&io);
        gs_conf_set(&io, "io_threads", "2", NULL);
        unsigned with2 = gs_conf_inline_max(&io);
        tap_ok(with4 == (cpus <= 2 ? 2048u : 16384u) && with2 == (cpus <= 2 ? 2048u : 0u),
               "inline_sort_max auto: %u keys with 5 I/O loops, %u with 2", with4, with2);
    }
    set_good("device_lanes", "1");
    set_good("device_lanes", "4");
    set_good("device_lanes", "auto");
    set_bad("device_lanes", "0", "1 to 4 requests in flight");
    set_bad("device_lanes", "5", "1 to 4 requests in flight");
    set_good("devices", "all");
    set_good("devices", "ALL");
    set_good("devices", "none");
    set_good("devices", "0");
    set_good("devices", "0,1,2,3");
    set_good("devices", "65535");
    set_bad("devices", "1,1", "listed twice");
    set_bad("devices", "0,2,0", "listed twice");
    set_bad("devices", "0,,1", "comma-separated");
    set_bad("devices", ",0", "comma-separated");
    set_bad("devices", "0,", "comma-separated");
    set_bad("devices", "-1", "comma-separated");
    set_bad("devices", "gpu0", "comma-separated");
    set_bad("devices", "0 1", "comma-separated");
    set_bad("devices", "", "comma-separated");
    set_bad("devices", "all,0", "comma-separated");
    set_bad("devices", "65536", "too large");
    set_bad("devices", "99999999999999999999999", "comma-separated");
    gs_conf_defaults(&c);
    tap_ok(gs_conf_set(&c, "devices", "00,  7", &e) == 0 && strcmp(c.devices, "0,7") == 0,
           "devices list normalised: '%s'", c.devices);
    tap_ok(gs_conf_set(&c, "devices", "0,00", &e) == GS_EINVAL, "devices 0 and 00 are duplicates");
    set_good("tune_missing", "yes");
    set_good("tune_missing", "FALSE");
    set_good("tune_missing", "auto");
    set_good("inline_sort_max", "0");
    set_good("inline_sort_max", "65536");
    set_good("inline_sort_max", "AUTO");
    {
        gs_conf dc;
        gs_conf_defaults(&dc);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned want = cpus > 0 && cpus <= 2 ? 2048 : gs_conf_io_threads(&dc) >= 4 ? 16384 : 0;
        tap_ok(dc.inline_sort_max == GS_CONF_INLINE_AUTO && gs_conf_inline_max(&dc) == want,
               "inline_sort_max defaults to auto: %u keys on this %ld-CPU machine", want, cpus);
        gs_conf_set(&dc, "inline_sort_max", "100", &e);
        tap_ok(gs_conf_inline_max(&dc) == 100, "a number set is what it means");
    }
    set_bad("inline_sort_max", "65537", "0 (never) to 65536");
    set_bad("inline_sort_max", "sometimes", "auto (2048 with at most 2 CPUs, else 16384");
    set_bad("inline_sort_max", "-1", "0 (never) to 65536");
    set_bad("inline_sort_max", "2k", "0 (never) to 65536");
    set_bad("tune_missing", "maybe", "auto, or yes/no");
    set_good("tune_budget", "1000h");
    set_good("tune_budget", "30s");
    set_bad("tune_budget", "0", "above 0");
    set_bad("tune_budget", "-1", "above 0");
    set_bad("tune_budget", "forever", "above 0");
}

/* ---- files ---- */

static void test_file(void)
{
    gs_conf c, d;
    gs_err e;
    char path[512], msg[1024];

    gs_conf_defaults(&c);
    int rc = load_text(&c,
                       "# a comment\n"
                       "\n"
                       "   \t\n"
                       "  # an indented comment\n"
                       "socket = /tmp/g.sock   # trailing comment\n"
                       "\tsocket_mode=0600\t\n"
                       "socket_group = \"gsortd\" # quoted\n"
                       "db = \"/data/a #b/tuning.db\"\n"
                       "cache_dir = \" my cache \"\n"
                       "kernel_dir = \"a \\\"q\\\" \\\\ b\"\n"
                       "max_clients = 10\n"
                       "max_clients = 20\n"
                       "log_level = debug #\n"
                       "io_timeout = 1.5s\n"
                       "devices = 0, 1\n",
                       &e, path, sizeof path);
    tap_ok(rc == 0, "a file with comments, blanks, quotes and tabs loads%s%s", rc ? ": " : "",
           rc ? e.msg : "");
    tap_ok(strcmp(c.socket, "/tmp/g.sock") == 0, "trailing comment stripped: socket '%s'", c.socket);
    tap_ok(c.socket_mode == 0600, "blanks around '=' optional");
    tap_ok(strcmp(c.socket_group, "gsortd") == 0, "quoted value, then a comment: '%s'",
           c.socket_group);
    tap_ok(strcmp(c.cache_dir, " my cache ") == 0, "quoted value keeps blanks: '%s'",
           c.cache_dir);
    tap_ok(strcmp(c.db, "/data/a #b/tuning.db") == 0, "quoted value keeps ' #': '%s'", c.db);
    tap_ok(strcmp(c.kernel_dir, "a \"q\" \\ b") == 0, "\\\" and \\\\ escapes: '%s'", c.kernel_dir);
    tap_ok(c.max_clients == 20, "duplicate key: the last one wins (%u)", c.max_clients);
    tap_ok(c.log_level == GS_LOG_DEBUG && c.io_timeout_s == 1.5 && strcmp(c.devices, "0,1") == 0,
           "other keys read");

    gs_conf_defaults(&c);
    rc = load_text(&c, "cache_dir = /c#1 #x\nkernel_dir = a\t#b\n", &e, NULL, 0);
    tap_ok(rc == 0 && strcmp(c.cache_dir, "/c#1") == 0 && strcmp(c.kernel_dir, "a") == 0,
           "'#' inside a word is kept, after a blank or tab it starts a comment: '%s' '%s'",
           c.cache_dir, c.kernel_dir);

    /* CRLF line endings, no final newline, a byte-order mark. */
    gs_conf_defaults(&c);
    rc = load_text(&c, "\xEF\xBB\xBF# dos\r\nmax_clients = 5\r\n\r\nsocket = \"/x y\"\r\n"
                       "host_threads = 3",
                   &e, NULL, 0);
    tap_ok(rc == 0 && c.max_clients == 5 && strcmp(c.socket, "/x y") == 0 && c.host_threads == 3,
           "CRLF endings, a BOM and a last line without newline are read%s%s", rc ? ": " : "",
           rc ? e.msg : "");

    /* An empty file changes nothing. */
    gs_conf_defaults(&c);
    c.max_clients = 9;
    d = c;
    rc = load_text(&c, "", &e, NULL, 0);
    tap_ok(rc == 0 && !conf_diff(&c, &d), "an empty file loads and changes nothing");

    /* Unknown key: the exact location. */
    gs_conf_defaults(&c);
    d = c;
    rc = load_text(&c,
                   "# 1\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n# 10\n"
                   "max_clients = 3\n"
                   "max_clinets = 4\n",
                   &e, path, sizeof path);
    snprintf(msg, sizeof msg, "%s:12: unknown key 'max_clinets'", path);
    tap_ok(rc == GS_EINVAL && e.code == GS_EINVAL && strncmp(e.msg, msg, strlen(msg)) == 0,
           "unknown key at line 12: %s", e.msg);
    tap_ok(!conf_diff(&c, &d), "all or nothing: the good line 11 was not applied");

    /* Bad values and bad syntax, each with its line number. */
    struct {
        const char *text, *want;
    } bads[] = {
        { "max_clients = 1\nmax_clients = 0\n", ":2: max_clients: '0'" },
        { "socket_mode = 0666\n", ":1: socket_mode: 0666 is world-writable" },
        { "socket = relative.sock\n", ":1: socket: 'relative.sock'" },
        { "\n\nmax_clients 5\n", ":3: expected 'key = value'" },
        { "= 5\n", ":1: expected 'key = value' but the key is missing" },
        { "max_clients =\n", ":1: max_clients: missing value" },
        { "max_clients =   # nothing\n", ":1: max_clients: missing value" },
        { "db = \"/open\n", ":1: db: the quoted value has no closing" },
        { "db = \"/a\" b\n", ":1: db: unexpected text after the closing quote" },
        { "db = \"/a\\n\"\n", ":1: db: unknown escape" },
        { "max clients = 5\n", ":1: expected 'key = value'" },
        { "devices = 1,1\n", ":1: devices: index 1 is listed twice" },
        { "socket = \"\" \"\"\n", ":1: socket: unexpected text" },
        { "ok = 1\r\n", ":1: unknown key 'ok'" },
        { "sockt = /x\n", ":1: unknown key 'sockt' (did you mean 'socket'?)" },
    };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        gs_conf_defaults(&c);
        c.max_clients = 77;
        d = c;
        rc = load_text(&c, bads[i].text, &e, path, sizeof path);
        snprintf(msg, sizeof msg, "%s%s", path, bads[i].want);
        tap_ok(rc == GS_EINVAL && strncmp(e.msg, msg, strlen(msg)) == 0 && !conf_diff(&c, &d),
               "bad line %zu refused, conf untouched: %s", i, e.msg);
    }

    gs_conf_defaults(&c);
    rc = load_text(&c, "ok = 1\n", &e, path, sizeof path);
    snprintf(msg, sizeof msg, "%s:1: unknown key 'ok'", path);
    tap_ok(rc == GS_EINVAL && strcmp(e.msg, msg) == 0,
           "a short unknown key gets no far-fetched suggestion: %s", e.msg);

    /* All or nothing with every field touched before the bad line. */
    gs_conf_defaults(&c);
    d = c;
    rc = load_text(&c,
                   "socket = /tmp/s.sock\nsocket_mode = 0600\nsocket_group = g\ndb = d\n"
                   "cache_dir = c\nkernel_dir = k\nlog_level = error\nlog_target = syslog\n"
                   "max_request_bytes = 1M\nmax_clients = 2\nmax_header_bytes = 1K\n"
                   "idle_timeout = 1s\nio_timeout = 1s\nhost_threads = 1\ndevices = 1\n"
                   "tune_missing = yes\ntune_budget = 1s\nmax_clients = many\n",
                   &e, NULL, 0);
    tap_ok(rc == GS_EINVAL && strstr(e.msg, ":18: max_clients") && !conf_diff(&c, &d),
           "a bad last line leaves every key as it was: %s", e.msg);

    /* Line length: 4096 bytes is fine (also with CRLF), 4097 is refused. */
    static char big[8192];
    memcpy(big, "db = ", 5);
    memset(big + 5, 'x', 4091);
    strcpy(big + 4096, "\n");
    gs_conf_defaults(&c);
    rc = load_text(&c, big, &e, NULL, 0);
    tap_ok(rc == 0 && strlen(c.db) == 4091, "a 4096-byte line is read%s%s", rc ? ": " : "",
           rc ? e.msg : "");
    strcpy(big + 4096, "\r\n");
    gs_conf_defaults(&c);
    rc = load_text(&c, big, &e, NULL, 0);
    tap_ok(rc == 0 && strlen(c.db) == 4091, "a 4096-byte line ending in CRLF is read");
    /* The limit is the longest line gs_conf_print can write: a comment of
     * exactly GS_CONF_LINE_MAX bytes is read, one byte more is refused. */
    static char lng[GS_CONF_LINE_MAX + 64];
    lng[0] = '#';
    memset(lng + 1, 'c', GS_CONF_LINE_MAX - 1);
    strcpy(lng + GS_CONF_LINE_MAX, "\ndb = /x\n");
    gs_conf_defaults(&c);
    rc = load_text(&c, lng, &e, NULL, 0);
    tap_ok(rc == 0 && strcmp(c.db, "/x") == 0, "a %d-byte line is read%s%s", GS_CONF_LINE_MAX,
           rc ? ": " : "", rc ? e.msg : "");
    strcpy(lng + GS_CONF_LINE_MAX, "y\n");
    gs_conf_defaults(&c);
    d = c;
    char text[GS_CONF_LINE_MAX + 128];
    snprintf(text, sizeof text, "# one\n%s", lng);
    rc = load_text(&c, text, &e, path, sizeof path);
    snprintf(msg, sizeof msg, "%s:2: line is longer than %d bytes", path, GS_CONF_LINE_MAX);
    tap_ok(rc == GS_EINVAL && strcmp(e.msg, msg) == 0 && !conf_diff(&c, &d),
           "a %d-byte line is refused, not truncated: %s", GS_CONF_LINE_MAX + 1, e.msg);
    memset(lng, 'x', GS_CONF_LINE_MAX + 10);
    lng[GS_CONF_LINE_MAX + 10] = '\0';
    rc = load_text(&c, lng, &e, path, sizeof path);
    snprintf(msg, sizeof msg, ":1: line is longer than %d bytes", GS_CONF_LINE_MAX);
    tap_ok(rc == GS_EINVAL && strstr(e.msg, msg),
           "a %d-byte line without newline is refused", GS_CONF_LINE_MAX + 10);

    /* A NUL byte. */
    char nul[] = "max_clients = 5\nde\0vices = 1\n";
    path_of(path, sizeof path, "nul.conf");
    write_bytes(path, nul, sizeof nul - 1);
    gs_conf_defaults(&c);
    d = c;
    rc = gs_conf_load(&c, path, &e);
    tap_ok(rc == GS_EINVAL && strstr(e.msg, ":2: line contains a NUL byte") && !conf_diff(&c, &d),
           "a NUL byte is refused: %s", e.msg);

    /* Missing file, directory, unreadable file. */
    path_of(path, sizeof path, "no-such.conf");
    gs_conf_defaults(&c);
    d = c;
    gs_err_clear(&e);
    rc = gs_conf_load(&c, path, &e);
    tap_ok(rc == GS_ENOTFOUND && strstr(e.msg, path) && strstr(e.msg, strerror(ENOENT)) &&
               !conf_diff(&c, &d),
           "missing file: GS_ENOTFOUND: %s", e.msg);
    path_of(path, sizeof path, "no-such-dir/x.conf");
    tap_ok(gs_conf_load(&c, path, &e) == GS_ENOTFOUND, "missing parent directory: GS_ENOTFOUND");
    gs_err_clear(&e);
    rc = gs_conf_load(&c, dir, &e);
    tap_ok(rc == GS_EIO && strstr(e.msg, strerror(EISDIR)) && !conf_diff(&c, &d),
           "a directory: GS_EIO: %s", e.msg);
    path_of(path, sizeof path, "t.conf");
    write_text(path, "max_clients = 5\n");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", path);
    rc = gs_conf_load(&c, sub, &e);
    tap_ok(rc == GS_EIO && strstr(e.msg, strerror(ENOTDIR)), "a file as a directory: GS_EIO: %s",
           e.msg);
    if (geteuid() != 0) {
        chmod(path, 0);
        gs_err_clear(&e);
        rc = gs_conf_load(&c, path, &e);
        tap_ok(rc == GS_EIO && strstr(e.msg, strerror(EACCES)) && !conf_diff(&c, &d),
               "an unreadable file: GS_EIO: %s", e.msg);
        chmod(path, 0600);
    } else {
        tap_diag("running as root: every file is readable, the EACCES case is not exercised");
    }
    tap_ok(gs_conf_load(&c, "", &e) == GS_EINVAL, "an empty path is refused");
}

/* ---- default socket ---- */

static void nonroot_socket(void)
{
    char buf[GS_CONF_SOCKET_MAX];
    gs_err e;
    setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
    int rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == 0 && strcmp(buf, "/run/user/1000/gsortd.sock") == 0,
           "non-root: $XDG_RUNTIME_DIR/gsortd.sock (%s)", rc ? e.msg : buf);
    setenv("XDG_RUNTIME_DIR", "/run/user/1000//", 1);
    rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == 0 && strcmp(buf, "/run/user/1000/gsortd.sock") == 0,
           "non-root: trailing slashes of XDG_RUNTIME_DIR dropped (%s)", rc ? e.msg : buf);
    unsetenv("XDG_RUNTIME_DIR");
    gs_err_clear(&e);
    rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == GS_ENOTFOUND && strstr(e.msg, "XDG_RUNTIME_DIR") && strstr(e.msg, "--socket") &&
               buf[0] == '\0',
           "non-root, XDG_RUNTIME_DIR unset: GS_ENOTFOUND: %s", e.msg);
    setenv("XDG_RUNTIME_DIR", "run/user/1000", 1);
    gs_err_clear(&e);
    rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == GS_ENOTFOUND && strstr(e.msg, "not an absolute path") && strstr(e.msg, "--socket"),
           "non-root, relative XDG_RUNTIME_DIR ignored: %s", e.msg);
    setenv("XDG_RUNTIME_DIR", "", 1);
    rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == GS_ENOTFOUND, "non-root, empty XDG_RUNTIME_DIR: GS_ENOTFOUND");
    char longdir[200];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[0] = '/';
    longdir[sizeof longdir - 1] = '\0';
    setenv("XDG_RUNTIME_DIR", longdir, 1);
    rc = gs_paths_socket(buf, sizeof buf, &e);
    tap_ok(rc == GS_ETOOBIG && strstr(e.msg, "shorter than 108"),
           "non-root, XDG_RUNTIME_DIR too long for a socket: GS_ETOOBIG");
    setenv("XDG_RUNTIME_DIR", "/r", 1);
    char small[8];
    rc = gs_paths_socket(small, sizeof small, &e);
    tap_ok(rc == GS_ETOOBIG && small[0] == '\0', "non-root, small buffer: GS_ETOOBIG");
}

static void test_default_socket(void)
{
    char buf[GS_CONF_SOCKET_MAX];
    gs_err e;
    const char *saved = getenv("XDG_RUNTIME_DIR");
    char *keep = saved ? strdup(saved) : NULL;
    if (geteuid() == 0) {
        setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
        int rc = gs_paths_socket(buf, sizeof buf, &e);
        tap_ok(rc == 0 && strcmp(buf, "/run/gsortd/gsortd.sock") == 0,
               "root: /run/gsortd/gsortd.sock whatever XDG_RUNTIME_DIR says (%s)", buf);
        unsetenv("XDG_RUNTIME_DIR");
        rc = gs_paths_socket(buf, sizeof buf, &e);
        tap_ok(rc == 0 && strcmp(buf, "/run/gsortd/gsortd.sock") == 0,
               "root: /run/gsortd/gsortd.sock without XDG_RUNTIME_DIR");
        rc = gs_paths_socket(buf, 10, &e);
        tap_ok(rc == GS_ETOOBIG, "root: small buffer: GS_ETOOBIG");
        /* As root the effective uid can be dropped for a moment to reach
         * the other branch; where that is not allowed, it is not reached. */
        if (seteuid(65534) == 0) {
            nonroot_socket();
            if (seteuid(0) != 0)
                tap_bail("cannot restore euid 0: %s", strerror(errno));
        } else {
            tap_diag("seteuid(65534) failed (%s): non-root branch not exercised",
                     strerror(errno));
        }
    } else {
        tap_diag("not root: the root branch (/run/gsortd/gsortd.sock) is not exercised");
        nonroot_socket();
    }
    if (keep)
        setenv("XDG_RUNTIME_DIR", keep, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    free(keep);
}

/* ---- print / load ---- */

static int print_load(const gs_conf *in, gs_conf *out, gs_err *e, char *text, size_t tlen)
{
    char path[512];
    path_of(path, sizeof path, "print.conf");
    FILE *f = fopen(path, "w");
    if (!f)
        tap_bail("cannot write %s", path);
    gs_conf_print(in, f);
    fclose(f);
    if (text) {
        f = fopen(path, "r");
        size_t n = f ? fread(text, 1, tlen - 1, f) : 0;
        text[n] = '\0';
        if (f)
            fclose(f);
    }
    gs_err_clear(e);
    return gs_conf_load(out, path, e);
}

/* A configuration in which every field differs from the defaults. */
static void all_changed(gs_conf *c)
{
    gs_err e;
    gs_conf_defaults(c);
    static const char *const kv[][2] = {
        { "socket", "/tmp/odd \"name\" #1.sock" }, { "socket_mode", "0640" },
        { "socket_group", "wheel" },               { "db", "rel dir/\\tuning.db" },
        { "allow_uids", "0, root" },               { "allow_gids", "root,0" },
        { "cache_dir", "#cache" },                 { "kernel_dir", "\"k\"" },
        { "log_level", "error" },                  { "log_target", "syslog" },
        { "max_request_bytes", "5000" },           { "max_clients", "65536" },
        { "max_memory", "3G" },                    { "memory_wait", "90s" },
        { "max_memory_per_uid", "2G" },
        { "max_mapped_bytes", "0" },               { "max_mapped_bytes_per_client", "1T" },
        { "inline_sort_max", "0" },                { "device_mem_cap", "96M" },
        { "max_pinned_bytes", "0" },               { "buffer_pool_percent", "90" },
        { "max_header_bytes", "3M" },              { "idle_timeout", "0.123456789s" },
        { "io_timeout", "1.5s" },                  { "host_threads", "1024" },
        { "io_threads", "64" },                    { "devices", "3,1,2" },
        { "tune_missing", "yes" },                 { "tune_budget", "1000h" },
        { "max_clients_per_uid", "0" },            { "request_timeout", "90s" },
        { "device_lanes", "1" },
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (gs_conf_set(c, kv[i][0], kv[i][1], &e) != 0)
            tap_bail("all_changed: %s", e.msg);
}

static void test_print(void)
{
    gs_conf a, b, def;
    gs_err e;
    static char text[65536];

    gs_conf_defaults(&def);
    gs_conf_defaults(&a);
    all_changed(&b);
    int rc = print_load(&a, &b, &e, text, sizeof text);
    const char *diff = conf_diff(&a, &b);
    tap_ok(rc == 0 && !diff, "defaults: print then load gives the defaults back (%s)",
           rc ? e.msg : diff ? diff : "equal");
    tap_ok(strstr(text, "socket = \"\"\n") && strstr(text, "socket_mode = 0660\n") &&
               strstr(text, "max_request_bytes = auto\n") &&
               strstr(text, "max_header_bytes = 64K\n") && strstr(text, "devices = all\n") &&
               strstr(text, "tune_missing = auto\n") && strstr(text, "log_level = info\n") &&
               strstr(text, "log_target = stderr\n"),
           "printed defaults use suffixes, octal mode and \"\"");
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    tap_ok(lines == NFIELDS, "every key printed once (%d lines)", lines);

    all_changed(&a);
    tap_ok(conf_ndiff(&a, &def) == NFIELDS, "the changed configuration differs in every field (%d)",
           conf_ndiff(&a, &def));
    gs_conf_defaults(&b);
    rc = print_load(&a, &b, &e, text, sizeof text);
    diff = conf_diff(&a, &b);
    tap_ok(rc == 0 && !diff, "every key changed: print then load gives it back (%s)",
           rc ? e.msg : diff ? diff : "equal");
    if (rc || diff)
        tap_diag("printed:\n%s", text);
    tap_ok(strstr(text, "max_request_bytes = 5000\n") && strstr(text, "max_header_bytes = 3M\n") &&
               strstr(text, "socket_mode = 0640\n") && strstr(text, "tune_budget = 1000h\n") &&
               strstr(text, "io_timeout = 1500ms\n") &&
               strstr(text, "idle_timeout = 0.123456789s\n"),
           "sizes and durations in their largest exact unit");

    /* Durations over many magnitudes survive the round trip exactly. */
    int bad = 0;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char v[64];
        unsigned long long whole = (x >> 40) % (i % 3 == 0 ? 86400 : i % 3 == 1 ? 60 : 2);
        snprintf(v, sizeof v, "%llu.%09llus", whole, (unsigned long long)(x % 1000000000ull));
        gs_conf_defaults(&a);
        if (gs_conf_set(&a, "io_timeout", v, &e) != 0) /* 0.000000000s: refused */
            continue;
        gs_conf_set(&a, "tune_budget", v, &e);
        gs_conf_defaults(&b);
        if (print_load(&a, &b, &e, NULL, 0) != 0 || conf_diff(&a, &b)) {
            if (bad++ < 3)
                tap_diag("duration %s: %s", v, e.msg);
        }
    }
    tap_ok(bad == 0, "2000 random durations round-trip exactly (%d failed)", bad);

    /* Sizes at their boundaries round-trip. */
    static const char *const sizes[] = { "4096", "4097", "1023K", "1025K", "16383G", "7T",
                                         "18446744073709551615", "16777215T" };
    bad = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        gs_conf_defaults(&a);
        gs_conf_set(&a, "max_request_bytes", sizes[i], &e);
        gs_conf_defaults(&b);
        if (print_load(&a, &b, &e, NULL, 0) != 0 || conf_diff(&a, &b))
            bad++;
    }
    tap_ok(bad == 0, "sizes round-trip (%d failed)", bad);
}

/* ---- reload ---- */

/* SIGHUP's copy: the live keys are taken, the restart-only ones keep the
 * running values and are named, in the order the printer writes them. */
static void test_apply_live(void)
{
    static const char *const want[] = { "socket", "socket_mode", "socket_group", "db",
                                        "cache_dir", "kernel_dir", "host_threads", "device_lanes",
                                        "io_threads",
                                        "devices", "tune_missing" };
    const size_t nwant = sizeof want / sizeof want[0];
    gs_conf run, next, def;
    const char *restart[GS_CONF_MAX_KEYS];
    gs_conf_defaults(&def);
    gs_conf_defaults(&run);
    all_changed(&next);
    size_t n = gs_conf_apply_live(&run, &next, restart, GS_CONF_MAX_KEYS);
    char got[512] = "";
    int same = n == nwant;
    for (size_t i = 0; i < n && i < GS_CONF_MAX_KEYS; i++) {
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", restart[i]);
        same &= i < nwant && !strcmp(restart[i], want[i]);
    }
    tap_ok(same, "every key changed: the %zu restart-only keys are named (%s)", nwant, got);
    tap_ok(conf_ndiff(&run, &next) == (int)nwant && conf_ndiff(&run, &def) == NFIELDS - (int)nwant,
           "the live keys are copied, the restart-only ones keep the running values (%d, %d)",
           conf_ndiff(&run, &next), conf_ndiff(&run, &def));
    tap_ok(!strcmp(run.socket, def.socket) && run.tune_missing == def.tune_missing &&
               run.max_header_bytes == next.max_header_bytes && run.log_syslog == 1 &&
               !strcmp(run.allow_gids, next.allow_gids) &&
               run.tune_budget_s == next.tune_budget_s,
           "e.g. socket and tune_missing kept; max_header_bytes, log_target, allow_gids and "
           "tune_budget taken");

    n = gs_conf_apply_live(&run, &next, restart, 2);
    tap_ok(n == nwant && !strcmp(restart[0], "socket") && !strcmp(restart[1], "socket_mode"),
           "a short list gets the first names and the count of all (%zu)", n);

    /* A string compares up to its NUL: what an earlier, longer value left
     * behind it is no change. */
    gs_err e;
    gs_conf_defaults(&run);
    gs_conf_defaults(&next);
    gs_conf_set(&run, "devices", "0,1,2,3", &e);
    gs_conf_set(&run, "devices", "1", &e);
    gs_conf_set(&next, "devices", "1", &e);
    n = gs_conf_apply_live(&run, &next, restart, GS_CONF_MAX_KEYS);
    tap_ok(n == 0, "the same configuration read again changes nothing (%zu named)", n);
}

/* GS_CONF_KEY: code that sets a key by its field (gsortd's options, the
 * allow lists) gets the name from the key table. */
static void test_key_names(void)
{
    const char *io = GS_CONF_KEY(io_timeout_s), *tgt = GS_CONF_KEY(log_syslog);
    const char *kd = GS_CONF_KEY(kernel_dir);
    tap_ok(io && !strcmp(io, "io_timeout") && tgt && !strcmp(tgt, "log_target") && kd &&
               !strcmp(kd, "kernel_dir"),
           "GS_CONF_KEY names the key of a field (%s, %s, %s)", io ? io : "NULL",
           tgt ? tgt : "NULL", kd ? kd : "NULL");
    tap_ok(gs_conf_key_name(offsetof(gs_conf, socket) + 1) == NULL,
           "an offset inside a field names no key");
}

/* ---- the shipped sample ---- */

static void test_sample(void)
{
    char path[4096];
    const char *top = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/etc/gsortd.conf", top && top[0] ? top : "..");
    gs_conf c, def;
    gs_err e;
    gs_conf_defaults(&def);
    gs_conf_defaults(&c);
    gs_err_clear(&e);
    int rc = gs_conf_load(&c, path, &e);
    const char *diff = conf_diff(&c, &def);
    tap_ok(rc == 0 && !diff, "sample %s loads and equals the defaults (%s)", path,
           rc ? e.msg : diff ? diff : "equal");

    /* Its "#key = value" lines, uncommented, must name every key at its
     * real default: loaded over a configuration that differs in every
     * field, they must give exactly the defaults. */
    FILE *f = fopen(path, "r");
    char un[512];
    path_of(un, sizeof un, "sample-uncommented.conf");
    FILE *o = fopen(un, "w");
    if (!f || !o) {
        tap_ok(0, "sample %s: cannot copy to %s", path, un);
        if (f)
            fclose(f);
        if (o)
            fclose(o);
        return;
    }
    char line[8192];
    int settings = 0;
    while (fgets(line, sizeof line, f)) {
        size_t k = 1;
        while (line[k] == '_' || (line[k] >= 'a' && line[k] <= 'z'))
            k++;
        if (line[0] == '#' && k > 1 && strncmp(line + k, " = ", 3) == 0) {
            fputs(line + 1, o);
            settings++;
        }
    }
    fclose(f);
    fclose(o);
    all_changed(&c);
    gs_err_clear(&e);
    rc = gs_conf_load(&c, un, &e);
    diff = conf_diff(&c, &def);
    tap_ok(rc == 0 && !diff && settings == NFIELDS,
           "sample's %d commented settings cover every key at its default (%s)", settings,
           rc ? e.msg : diff ? diff : "equal");
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char p[600];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    if (!mkdtemp(dir))
        tap_bail("mkdtemp: %s", strerror(errno));
    test_parsers();
    test_keys();
    test_file();
    test_default_socket();
    test_print();
    test_apply_live();
    test_key_names();
    test_sample();
    cleanup();
    return tap_done();
}
