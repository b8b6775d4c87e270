/* gsortd's entry point: command-line parsing and dispatch. It lists
 * devices, tunes them (--tune-all: tuner/gs_tune.h, with a live progress
 * line on a terminal and a winners/plan table at the end), checks a tuning
 * database (--db-check) and compares sampled with exhaustive search
 * (--tune-compare); with no mode option it serves (daemon/gs_daemon.c). */
#include "config.h"
#include "gs_conf.h"
#include "gs_daemon.h"
#include "gs_db.h"
#include "gs_dev.h"
#include "gs_devlist.h"
#include "gs_kern.h"
#include "gs_log.h"
#include "gs_prog.h"
#include "gs_systemd.h"
#include "gs_tune.h"
#include "gs_time.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: gsortd [OPTION]...\n"
        "Sort service for OpenCL devices: probes devices, tunes sort kernels,\n"
        "serves sort requests. With no mode option it serves in the foreground.\n"
        "\n"
        "Serving (see gsortd.conf(5); the command line overrides the file):\n"
        "      --config PATH      configuration file (default %s\n"
        "                         when it exists)\n"
        "      --socket PATH      Unix socket (default $XDG_RUNTIME_DIR/gsortd.sock,\n"
        "                         /run/gsortd/gsortd.sock as root; a socket passed by\n"
        "                         systemd, gsortd.socket, takes its place)\n"
        "      --db PATH          tuning database to serve from (and tune into)\n"
        "      --tune-missing     tune devices without a plan in the background\n"
        "  -o, --set KEY=VALUE    set any configuration key\n"
        "      --print-config     print the effective configuration and exit\n"
        "\n"
        "Other modes and common options:\n"
        "  -l, --list-devices     print every OpenCL device and its properties\n"
        "      --json             with --list-devices: print JSON\n"
        "      --kernel-dir DIR   read kernels/NAME.cl from DIR instead of the\n"
        "                         copies built into gsortd (development)\n"
        "      --cache-dir DIR    program-binary cache directory\n"
        "                         (default: $GSORTD_CACHE_DIR, else /var/cache/gsortd\n"
        "                         as root, else $XDG_CACHE_HOME/gsortd)\n"
        "      --log-level LEVEL  error, warn, info (default) or debug\n"
        "\n"
        "Tuning (results go to the tuning database):\n"
        "      --tune-all         tune every device (or --device N), print the\n"
        "                         winners and the plan, and exit\n"
        "      --budget SECONDS   wall-clock budget of the whole run (default %.0f)\n"
        "      --quick            a tiny budget (%.0f s) for demos and tests\n"
        "      --device N         only device N (index from --list-devices)\n"
        "      --algorithms A,B   only these algorithms (default: all registered)\n"
        "      --max-log2 B       largest size bucket 2^B (default: from the budget,\n"
        "                         capped by device and host memory)\n"
        "      --restrict SPEC    only these parameter values, e.g.\n"
        "                         radix_bits=4:8,wg_size=64:128\n"
        "      --seed N           seed of the random sampling (default 1)\n"
        "      --db PATH          tuning database (default: $GSORTD_DATA_DIR/tuning.db,\n"
        "                         /var/lib/gsortd as root, else $XDG_DATA_HOME/gsortd)\n"
        "      --tune-compare ALGO  measure ALGO's whole (restricted) parameter space at\n"
        "                         one size (--n N, default 65536), then replay the\n"
        "                         sampled search on it (--seeds K, default 100)\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 on success, 1 on a runtime failure, 2 on a usage error.\n",
        gs_conf_default_path(), GS_TUNE_DEFAULT_BUDGET, GS_TUNE_QUICK_BUDGET);
}

static int list_devices(int json)
{
    gs_dev *devs;
    size_t n;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &n, &err)) {
        fprintf(stderr, "gsortd: probing OpenCL devices failed: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    if (json) {
        char *s = gs_devlist_json(devs, n);
        if (s) {
            puts(s);
            free(s);
        } else {
            fprintf(stderr, "gsortd: out of memory writing JSON\n");
            rc = 1;
        }
    } else {
        gs_devlist_print_table(stdout, devs, n);
    }
    gs_dev_free_list(devs, n);
    return rc;
}

/* ---- tuning ---- */

typedef struct cli_tune {
    int tune_all, db_check, quick;
    const char *db_path;
    double budget;            /* <= 0: not given */
    long device;              /* -1: all */
    const char *algorithms;
    int max_log2;             /* 0: not given */
    const char *restrict_spec;
    uint64_t seed;
    const char *compare;      /* --tune-compare ALGO */
    size_t compare_n;
    unsigned seeds;
} cli_tune;

/* The live progress line: redrawn with \r on a terminal; log lines clear it
 * first and redraw it after, so the two never mix. */
typedef struct progress_line {
    int tty;
    int shown;
    double last_draw;
    char line[512];
} progress_line;

static progress_line g_prog;

static void fmt_duration(double s, char *buf, size_t len)
{
    long t = s > 0 ? lround(s) : 0;
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lds", t);
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 100;
}

static void progress_log_sink(int level, const char *msg, void *ud)
{
    progress_line *pl = ud;
    if (pl->shown)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "gsortd: %s: %s\n", gs_log_level_name(level), msg);
    if (pl->shown)
        fputs(pl->line, stderr);
    fflush(stderr);
}

static void on_progress(const gs_tune_progress *p, void *ud)
{
    progress_line *pl = ud;
    char best[160], eta[32];
    if (p->best_ms >= 0)
        snprintf(best, sizeof best, "best %.4f ms (%s)", p->best_ms, p->best_params);
    else
        snprintf(best, sizeof best, "no valid configuration yet");
    fmt_duration(p->eta_s, eta, sizeof eta);
    if (!pl->tty) {
        if (p->group_end)
            GS_INFO("device %d %s: %s keys, payload %s, n=2^%d: %s; %u trial(s); group %u/%u; "
                    "%lu measured, %lu reused, %lu invalid so far; ETA %s", p->device_index,
                    p->algorithm, p->key_bits == 64 ? "u64" : "u32", p->payload, p->bucket, best,
                    p->trials_done, p->groups_done + 1, p->groups_total, p->measured, p->reused,
                    p->invalid, eta);
        return;
    }
    double now = gs_now_s();
    if (!p->group_end && now - pl->last_draw < 0.1)
        return;   /* at most 10 redraws a second */
    pl->last_draw = now;
    char text[512];
    /* most important first: a narrow terminal cuts the end */
    snprintf(text, sizeof text, "[dev %d] %s %s/%s 2^%d  trial %u/%u  group %u/%u  ETA %s  %s",
             p->device_index, p->algorithm, p->key_bits == 64 ? "u64" : "u32", p->payload,
             p->bucket, p->trials_done, p->trials_planned, p->groups_done + 1, p->groups_total,
             eta, best);
    int w = term_width() - 1;
    if ((int)strlen(text) > w)
        text[w] = '\0';
    snprintf(pl->line, sizeof pl->line, "\r%s\033[K", text);
    fputs(pl->line, stderr);
    fflush(stderr);
    pl->shown = 1;
}

/* Why a database could not be opened for writing, as far as the file
 * system says (gs_db_open's message has SQLite's words, not the errno):
 * " (PATH: strerror)" for the file or its directory (SQLite creates the
 * -wal and -shm files there), or "" when both are writable. */
static void db_access_note(const char *path, char *buf, size_t len)
{
    char dir[4096];
    buf[0] = '\0';
    if (!path)
        return;
    if (access(path, W_OK) != 0 && errno != ENOENT) {
        snprintf(buf, len, " (%s: %s)", path, strerror(errno));
        return;
    }
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK) != 0)
        snprintf(buf, len, " (%s: %s)", dir, strerror(errno));
}

static int open_db(const cli_tune *ct, gs_db **db)
{
    gs_err err;
    gs_err_clear(&err);
    if (gs_db_open(db, ct->db_path, 0, &err)) {
        char note[4200] = "";
        /* a damaged file, or a cause gs_db_open named already */
        if (err.code != GS_ECORRUPT && !strstr(err.msg, "not writable"))
            db_access_note(ct->db_path, note, sizeof note);
        fprintf(stderr, "gsortd: cannot use the tuning database: %s%s\n", err.msg, note);
        return 1;
    }
    return 0;
}

static int db_check(const cli_tune *ct)
{
    gs_db *db;
    if (open_db(ct, &db))
        return 1;
    gs_err err;
    gs_err_clear(&err);
    int rc = gs_db_check(db, &err);
    if (rc)
        fprintf(stderr, "gsortd: %s\n", err.msg);
    else
        printf("ok\n");
    gs_db_close(db);
    return rc ? 1 : 0;
}

#define ALGOS_MAX 64

/* Parse "a,b" into registry entries (out: ALGOS_MAX); exit status 2 on an
 * unknown or repeated name. */
static int parse_algorithms(const char *list, const gs_algo **out, size_t *n)
{
    *n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const gs_algo *a = gs_algo_find(tok);
        if (!a) {
            fprintf(stderr, "gsortd: --algorithms: unknown algorithm '%s' (known:", tok);
            for (size_t i = 0; i < gs_algo_count(); i++)
                fprintf(stderr, " %s", gs_algo_at(i)->name);
            fprintf(stderr, ")\n");
            return 2;
        }
        if (*n == ALGOS_MAX) {
            fprintf(stderr, "gsortd: --algorithms: more than %d names\n", ALGOS_MAX);
            return 2;
        }
        for (size_t i = 0; i < *n; i++)
            if (out[i] == a) {
                fprintf(stderr, "gsortd: --algorithms: '%s' given twice\n", tok);
                return 2;
            }
        out[(*n)++] = a;
    }
    if (*n == 0) {
        fprintf(stderr, "gsortd: --algorithms: empty list\n");
        return 2;
    }
    return 0;
}

static int tune(const cli_tune *ct)
{
    const gs_algo *algos[ALGOS_MAX];
    size_t nalgos = 0;
    int rc;
    if (ct->algorithms && (rc = parse_algorithms(ct->algorithms, algos, &nalgos)) != 0)
        return rc;
    const gs_algo *cmp = NULL;
    if (ct->compare && !(cmp = gs_algo_find(ct->compare))) {
        fprintf(stderr, "gsortd: --tune-compare: unknown algorithm '%s'\n", ct->compare);
        return 2;
    }
    gs_dev *devs;
    size_t ndev;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &ndev, &err)) {
        fprintf(stderr, "gsortd: probing OpenCL devices failed: %s\n", err.msg);
        return 1;
    }
    if (ct->device >= 0 && (size_t)ct->device >= ndev) {
        fprintf(stderr, "gsortd: --device %ld: no such device (%zu found; see --list-devices)\n",
                ct->device, ndev);
        gs_dev_free_list(devs, ndev);
        return 2;
    }
    if (ndev == 0) {
        fprintf(stderr, "gsortd: no OpenCL device found: nothing to tune\n");
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_db *db;
    if (open_db(ct, &db)) {
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_pcache *pc = NULL;
    if (gs_pcache_open(&pc, NULL, &err)) {
        fprintf(stderr, "gsortd: %s\n", err.msg);
        gs_db_close(db);
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_tune_opts o;
    gs_tune_opts_init(&o, ct->budget > 0 ? ct->budget
                          : ct->quick ? GS_TUNE_QUICK_BUDGET : GS_TUNE_DEFAULT_BUDGET);
    if (nalgos) {
        o.algos = algos;
        o.nalgos = nalgos;
    }
    if (ct->max_log2)
        o.max_log2 = ct->max_log2;
    o.restrict_spec = ct->restrict_spec;
    o.seed = ct->seed;
    gs_dev *sel = ct->device >= 0 ? &devs[ct->device] : devs;
    size_t nsel = ct->device >= 0 ? 1 : ndev;
    if (cmp) {
        rc = gs_tune_compare(db, sel, pc, cmp, ct->compare_n, &o, ct->seeds, stdout, &err);
        if (rc)
            fprintf(stderr, "gsortd: --tune-compare: %s\n", err.msg);
        rc = rc ? 1 : 0;
    } else {
        g_prog.tty = isatty(STDERR_FILENO);
        o.progress = on_progress;
        o.progress_ud = &g_prog;
        if (g_prog.tty)
            gs_log_set_sink(progress_log_sink, &g_prog);
        gs_tune_report rep = { 0 };
        rc = gs_tune_all(db, sel, nsel, pc, &o, &rep, &err);
        if (g_prog.shown) {
            fputs("\r\033[K", stderr);
            g_prog.shown = 0;
        }
        gs_log_set_sink(NULL, NULL);
        gs_tune_report_print(stdout, &rep);
        if (!rc)
            GS_INFO("tuning took %.1f s; results in %s", rep.elapsed_s, gs_db_path(db));
        gs_tune_report_free(&rep);
        int corrupt = rc == GS_ECORRUPT &&
                      (sqlite3_extended_errcode(gs_db_handle(db)) & 0xff) == SQLITE_CORRUPT;
        if (corrupt) {
            /* found past the check at open (a file too large for it, or
             * damaged meanwhile): say what to do, as the open would */
            fprintf(stderr, "gsortd: tuning failed: %s; the database %s is damaged: move it "
                    "aside and tune again (gsortd --tune-all)\n", err.msg, gs_db_path(db));
        } else if (rc) {
            /* A full disk or a file made read-only under us: SQLite's
             * message lacks the errno. It keeps no errno for SQLITE_FULL
             * (a short write), whose fixed text is the sign of ENOSPC. */
            sqlite3 *h = gs_db_handle(db);
            int e = sqlite3_system_errno(h);
            if (!e && ((sqlite3_extended_errcode(h) & 0xff) == SQLITE_FULL ||
                       strstr(err.msg, sqlite3_errstr(SQLITE_FULL))))
                e = ENOSPC;
            if (e)
                fprintf(stderr, "gsortd: tuning failed: %s (errno %d: %s)\n", err.msg, e,
                        strerror(e));
            else
                fprintf(stderr, "gsortd: tuning failed: %s\n", err.msg);
        }
        rc = rc ? 1 : 0;
    }
    gs_pcache_close(pc);
    gs_db_close(db);
    gs_dev_free_list(devs, ndev);
    return rc;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "gsortd: %s '%s': expected an integer from %ld to %ld\n", opt, s, lo, hi);
        return 2;
    }
    *out = v;
    return 0;
}

/* "launch:K" (K >= 1) from --inject-fault or GSORTD_INJECT_FAULT. */
static int parse_fault(const char *what, const char *s, long *at)
{
    char name[64];
    snprintf(name, sizeof name, "%s launch:", what);
    if (strncmp(s, "launch:", 7) || parse_long(name, s + 7, 1, 1000000000L, at)) {
        fprintf(stderr, "gsortd: %s takes launch:K, not '%s'\n", what, s);
        return 2;
    }
    return 0;
}

/* Everything main does, with the override arrays (argc + 1 entries each)
 * owned by main, so every return path here leaves nothing allocated. */
static int run(int argc, char **argv, const char **okeys, const char **ovals)
{
    enum { OPT_JSON = 256, OPT_KDIR, OPT_CACHE, OPT_LOGLEVEL, OPT_TUNE_ALL, OPT_BUDGET, OPT_QUICK,
           OPT_DEVICE, OPT_ALGOS, OPT_DB, OPT_MAXLOG2, OPT_RESTRICT, OPT_SEED, OPT_DBCHECK,
           OPT_COMPARE, OPT_N, OPT_SEEDS, OPT_CONFIG, OPT_SOCKET, OPT_TUNE_MISSING,
           OPT_PRINT_CONFIG, OPT_FAULT };
    static const struct option opts[] = {
        { "list-devices", no_argument, 0, 'l' },
        { "json", no_argument, 0, OPT_JSON },
        { "kernel-dir", required_argument, 0, OPT_KDIR },
        { "cache-dir", required_argument, 0, OPT_CACHE },
        { "log-level", required_argument, 0, OPT_LOGLEVEL },
        { "tune-all", no_argument, 0, OPT_TUNE_ALL },
        { "budget", required_argument, 0, OPT_BUDGET },
        { "quick", no_argument, 0, OPT_QUICK },
        { "device", required_argument, 0, OPT_DEVICE },
        { "algorithms", required_argument, 0, OPT_ALGOS },
        { "db", required_argument, 0, OPT_DB },
        { "max-log2", required_argument, 0, OPT_MAXLOG2 },
        { "restrict", required_argument, 0, OPT_RESTRICT },
        { "seed", required_argument, 0, OPT_SEED },
        { "db-check", no_argument, 0, OPT_DBCHECK },   /* hidden: integrity check, prints ok */
        { "tune-compare", required_argument, 0, OPT_COMPARE },
        { "n", required_argument, 0, OPT_N },
        { "seeds", required_argument, 0, OPT_SEEDS },
        { "config", required_argument, 0, OPT_CONFIG },
        { "socket", required_argument, 0, OPT_SOCKET },
        { "tune-missing", no_argument, 0, OPT_TUNE_MISSING },
        { "set", required_argument, 0, 'o' },
        { "print-config", no_argument, 0, OPT_PRINT_CONFIG },
        /* hidden, for tests: launch:K makes every kernel launch from the
         * K-th on fail (CL_OUT_OF_RESOURCES), so that requests take the
         * fallback. When serving without this option, the environment
         * variable GSORTD_INJECT_FAULT=launch:K does the same (for a
         * daemon started by a script or a service manager). */
        { "inject-fault", required_argument, 0, OPT_FAULT },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    int list = 0, json = 0, c, lvl, tune_opts = 0, compare_opts = 0;
    long v;
    cli_tune ct = { .device = -1, .seed = 1, .compare_n = 65536, .seeds = 100 };
    /* Serving options become configuration overrides, applied after the
     * config file (and again on every SIGHUP). */
    gs_daemon_args da = { .keys = okeys, .values = ovals };
    int serve_opts = 0;
#define OVERRIDE(k, v) (okeys[da.nover] = (k), ovals[da.nover++] = (v))
    while ((c = getopt_long(argc, argv, "lhVo:", opts, NULL)) != -1) {
        switch (c) {
        case 'l': list = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_KDIR: gs_kern_set_dir(optarg); OVERRIDE("kernel_dir", optarg); break;
        case OPT_CACHE:
            setenv("GSORTD_CACHE_DIR", optarg, 1);
            OVERRIDE("cache_dir", optarg);
            break;
        case OPT_LOGLEVEL:
            if ((lvl = gs_log_parse_level(optarg)) < 0) {
                fprintf(stderr, "gsortd: unknown log level '%s' (error, warn, info, debug)\n", optarg);
                return 2;
            }
            gs_log_set_level(lvl);
            OVERRIDE("log_level", optarg);
            break;
        case OPT_CONFIG: da.config_path = optarg; serve_opts = 1; break;
        case OPT_SOCKET: OVERRIDE("socket", optarg); serve_opts = 1; break;
        case OPT_TUNE_MISSING: OVERRIDE("tune_missing", "yes"); serve_opts = 1; break;
        case OPT_PRINT_CONFIG: da.print_config = 1; serve_opts = 1; break;
        case 'o': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "gsortd: -o '%s': expected KEY=VALUE\n", optarg);
                return 2;
            }
            *eq = '\0';
            OVERRIDE(optarg, eq + 1);
            serve_opts = 1;
            break;
        }
        case OPT_FAULT:
            if (parse_fault("--inject-fault", optarg, &da.fault_at))
                return 2;
            serve_opts = 1;
            break;
        case OPT_TUNE_ALL: ct.tune_all = 1; break;
        case OPT_BUDGET: {
            char *end;
            errno = 0;
            double b = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(b) || b <= 0 || b > 30 * 86400.0) {
                fprintf(stderr, "gsortd: --budget '%s': expected a positive number of seconds "
                        "(at most 30 days)\n", optarg);
                return 2;
            }
            ct.budget = b;
            tune_opts = 1;
            break;
        }
        case OPT_QUICK: ct.quick = 1; tune_opts = 1; break;
        case OPT_DEVICE:
            if (parse_long("--device", optarg, 0, 1023, &ct.device))
                return 2;
            tune_opts = 1;
            break;
        case OPT_ALGOS: ct.algorithms = optarg; tune_opts = 1; break;
        case OPT_DB: ct.db_path = optarg; OVERRIDE("db", optarg); break;
        case OPT_MAXLOG2:
            if (parse_long("--max-log2", optarg, GS_TUNE_MIN_LOG2, GS_TUNE_MAX_LOG2, &v))
                return 2;
            ct.max_log2 = (int)v;
            tune_opts = 1;
            break;
        case OPT_RESTRICT: {
            gs_err err;
            gs_err_clear(&err);
            if (gs_tune_restrict_check(optarg, &err)) {
                fprintf(stderr, "gsortd: %s\n", err.msg);
                return 2;
            }
            ct.restrict_spec = optarg;
            tune_opts = 1;
            break;
        }
        case OPT_SEED:
            if (parse_long("--seed", optarg, 0, 2147483647L, &v))
                return 2;
            ct.seed = (uint64_t)v;
            tune_opts = 1;
            break;
        case OPT_DBCHECK: ct.db_check = 1; break;
        case OPT_COMPARE: ct.compare = optarg; break;
        case OPT_N:
            if (parse_long("--n", optarg, 2, 1L << GS_TUNE_MAX_LOG2, &v))
                return 2;
            ct.compare_n = (size_t)v;
            compare_opts = 1;
            break;
        case OPT_SEEDS:
            if (parse_long("--seeds", optarg, 1, 100000, &v))
                return 2;
            ct.seeds = (unsigned)v;
            compare_opts = 1;
            break;
        case 'h': usage(stdout); return 0;
        case 'V':
            printf("gsortd %s\nsystemd support: %s\n", PACKAGE_VERSION,
                   gs_systemd_supported() ? "yes (readiness notification, socket activation)"
                                          : "no (built without libsystemd)");
            return 0;
        default:
            fprintf(stderr, "Try 'gsortd --help'.\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gsortd: unexpected argument '%s'\nTry 'gsortd --help'.\n", argv[optind]);
        return 2;
    }
    if (json && !list) {
        fprintf(stderr, "gsortd: --json goes with --list-devices\n");
        return 2;
    }
    if (list + ct.tune_all + ct.db_check + (ct.compare != NULL) > 1) {
        fprintf(stderr, "gsortd: --list-devices, --tune-all, --tune-compare and --db-check "
                "exclude each other\n");
        return 2;
    }
    if (tune_opts && !ct.tune_all && !ct.compare) {
        fprintf(stderr, "gsortd: --budget, --quick, --device, --algorithms, --max-log2, "
                "--restrict and --seed go with --tune-all (or --tune-compare)\n");
        return 2;
    }
    if (compare_opts && !ct.compare) {
        fprintf(stderr, "gsortd: --n and --seeds go with --tune-compare\n");
        return 2;
    }
    int mode = list || ct.tune_all || ct.db_check || ct.compare;
    if (mode && serve_opts) {
        fprintf(stderr, "gsortd: --config, --socket, --tune-missing, -o, --print-config and "
                "--inject-fault are for serving (no mode option)\n");
        return 2;
    }
    const char *envf = getenv("GSORTD_INJECT_FAULT");
    if (!mode && !da.fault_at && envf && envf[0]) {
        if (parse_fault("GSORTD_INJECT_FAULT", envf, &da.fault_at))
            return 2;
    }
    int rc;
    if (list)
        rc = list_devices(json);
    else if (ct.db_check)
        rc = db_check(&ct);
    else if (ct.tune_all || ct.compare)
        rc = tune(&ct);
    else
        rc = gs_daemon_main(&da);
    return rc;
}

int main(int argc, char **argv)
{
    const char **okeys = calloc((size_t)argc + 1, sizeof *okeys);
    const char **ovals = calloc((size_t)argc + 1, sizeof *ovals);
    int rc = 1;
    if (!okeys || !ovals)
        fprintf(stderr, "gsortd: out of memory\n");
    else
        rc = run(argc, argv, okeys, ovals);
    free(okeys);
    free(ovals);
    return rc;
}
