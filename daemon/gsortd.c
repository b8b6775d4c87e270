/* gsortd's entry point: command-line parsing and dispatch. It lists
 * devices; it hands --tune-all, --tune-compare and --db-check to the
 * tuner's front end (tuner/gs_tuneall.c: progress line, report, database
 * check); with no mode option it serves (daemon/gs_daemon.c). */
#include "config.h"
#include "gs_audit.h"
#include "gs_conf.h"
#include "gs_daemon.h"
#include "gs_dev.h"
#include "gs_devlist.h"
#include "gs_kern.h"
#include "gs_log.h"
#include "gs_systemd.h"
#include "gs_tune.h"
#include "gs_tuneall.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "      --tune-all         tune every device (or --device N), audit the plan,\n"
        "                         print it per request shape, and exit\n"
        "      --budget SECONDS   wall-clock budget of the whole run (default %.0f)\n"
        "      --quick            a tiny budget (%.0f s) for demos and tests\n"
        "      --device N         only device N (index from --list-devices)\n"
        "      --algorithms A,B   only these algorithms (default: all registered)\n"
        "      --payloads P,Q     only these payload kinds (none u32 u64 idx32 idx64;\n"
        "                         default: all)\n"
        "      --max-log2 B       measure every size up to 2^B and none past it\n"
        "                         (default: every size to 2^20 at the default budget,\n"
        "                         then every other one up to what device and host\n"
        "                         memory hold, at most 2^28)\n"
        "      --restrict SPEC    only these parameter values, e.g.\n"
        "                         radix_bits=4:8,wg_size=64:128\n"
        "      --seed N           seed of the random sampling (default 1)\n"
        "      --db PATH          tuning database (default: $GSORTD_DATA_DIR/tuning.db,\n"
        "                         /var/lib/gsortd as root, else $XDG_DATA_HOME/gsortd)\n"
        "      --tune-compare ALGO  measure ALGO's whole (restricted) parameter space at\n"
        "                         one size (--n N, default 65536), then replay the\n"
        "                         sampled search on it (--seeds K, default 100)\n"
        "      --no-audit         with --tune-all: skip the plan audit that ends it\n"
        "  -v, --verbose          with --tune-all: a log line per search, and the\n"
        "                         winners, the plan and the audit as full tables\n"
        "\n"
        "Plan audit (a tuned plan never loses to the untuned defaults):\n"
        "      --audit-plan       time, end to end through the daemon's request path,\n"
        "                         the plan's choice, the untuned daemon's and each\n"
        "                         algorithm at its tuned best, per shape and size;\n"
        "                         report where the plan loses (exit status 3); also\n"
        "                         takes --config, -o, --db and --device\n"
        "      --fix              replace the rows that lose (writes the database;\n"
        "                         --tune-all's audit always does)\n"
        "      --min-log2 A, --max-log2 B, --step K  sizes 2^A, 2^(A+K), ... 2^B\n"
        "                         (default 2^10, every other size, up to the largest\n"
        "                         the tune measured)\n"
        "      --reps R           timed runs per choice (default 5)\n"
        "      --shapes LIST      of u32,u64,f32,u32+u32,argsort,u16,rows,topk,segs\n"
        "                         (default: all)\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 on success, 1 on a runtime failure, 2 on a usage error,\n"
        "3 when the plan audit finds rows that lose and are not replaced.\n",
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

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "gsortd: %s '%s': expected an integer from %ld to %ld\n", opt, s, lo, hi);
        return GS_EINVAL;
    }
    *out = v;
    return 0;
}

/* "launch:K" (K >= 1), or "launch:K,device:D" (only device D's launches),
 * from --inject-fault or GSORTD_INJECT_FAULT; *dev gets D + 1, or 0. */
static int parse_fault(const char *what, const char *s, long *at, long *dev)
{
    char name[64], k[32] = "";
    const char *comma = strchr(s, ',');
    size_t klen = comma ? (size_t)(comma - s) : strlen(s);
    *dev = 0;
    if (klen < sizeof k)
        memcpy(k, s, klen);
    snprintf(name, sizeof name, "%s launch:", what);
    if (strncmp(k, "launch:", 7) || parse_long(name, k + 7, 1, 1000000000L, at) ||
        (comma && (strncmp(comma + 1, "device:", 7) ||
                   parse_long(name, comma + 8, 0, 4095, dev)))) {
        fprintf(stderr, "gsortd: %s takes launch:K or launch:K,device:D, not '%s'\n", what,
                s);
        return GS_EINVAL;
    }
    if (comma)
        (*dev)++;
    return 0;
}

enum { OPT_JSON = 256, OPT_KDIR, OPT_CACHE, OPT_LOGLEVEL, OPT_TUNE_ALL, OPT_BUDGET, OPT_QUICK,
       OPT_DEVICE, OPT_ALGOS, OPT_DB, OPT_MAXLOG2, OPT_RESTRICT, OPT_SEED, OPT_DBCHECK,
       OPT_COMPARE, OPT_N, OPT_SEEDS, OPT_CONFIG, OPT_SOCKET, OPT_TUNE_MISSING,
       OPT_PRINT_CONFIG, OPT_FAULT, OPT_PAYLOADS, OPT_AUDIT, OPT_FIX, OPT_MINLOG2, OPT_STEP,
       OPT_REPS, OPT_SHAPES, OPT_NO_AUDIT, OPT_VERBOSE };

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
    { "payloads", required_argument, 0, OPT_PAYLOADS },
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
     * fallback; launch:K,device:D only device D's launches. When serving
     * without this option, the environment
     * variable GSORTD_INJECT_FAULT=launch:K does the same (for a
     * daemon started by a script or a service manager). */
    { "inject-fault", required_argument, 0, OPT_FAULT },
    { "audit-plan", no_argument, 0, OPT_AUDIT },
    { "fix", no_argument, 0, OPT_FIX },
    { "min-log2", required_argument, 0, OPT_MINLOG2 },
    { "step", required_argument, 0, OPT_STEP },
    { "reps", required_argument, 0, OPT_REPS },
    { "shapes", required_argument, 0, OPT_SHAPES },
    { "no-audit", no_argument, 0, OPT_NO_AUDIT },
    { "verbose", no_argument, 0, 'v' },
    { "help", no_argument, 0, 'h' },
    { "version", no_argument, 0, 'V' },
    { 0, 0, 0, 0 },
};

/* The command line as read: the mode, which options of each kind were
 * given, and what each mode is handed. */
typedef struct cmdline {
    int list, json, tune_all, db_check, audit, no_audit, verbose;
    int serve_opts, audit_opts, tune_opts, compare_opts;
    int done;                   /* --help or --version answered */
    gs_audit_args aa;
    gs_tuneall_opts ta;
    /* Serving options become configuration overrides, applied after the
     * config file (and again on every SIGHUP); the arrays (argc + 1
     * entries each) are da's keys and values. */
    gs_daemon_args da;
    const char **okeys, **ovals;
} cmdline;

static void override(cmdline *cl, const char *key, const char *value)
{
    cl->okeys[cl->da.nover] = key;
    cl->ovals[cl->da.nover++] = value;
}

/* Each *_option below reads one kind of option: it returns 0, GS_EINVAL
 * for a usage error (said on stderr), or GS_ENOTFOUND for another kind. */

/* Serving's (--db too: the tuning modes read it as well). */
static int serve_option(cmdline *cl, int c, char *arg)
{
    switch (c) {
    case OPT_KDIR: gs_kern_set_dir(arg); override(cl, GS_CONF_KEY(kernel_dir), arg); return 0;
    case OPT_CACHE:
        setenv("GSORTD_CACHE_DIR", arg, 1);
        override(cl, GS_CONF_KEY(cache_dir), arg);
        return 0;
    case OPT_LOGLEVEL: {
        int lvl = gs_log_parse_level(arg);
        if (lvl < 0) {
            fprintf(stderr, "gsortd: unknown log level '%s' (error, warn, info, debug)\n", arg);
            return GS_EINVAL;
        }
        gs_log_set_level(lvl);
        override(cl, GS_CONF_KEY(log_level), arg);
        return 0;
    }
    case OPT_DB: cl->ta.db_path = arg; override(cl, GS_CONF_KEY(db), arg); return 0;
    case OPT_CONFIG: cl->da.config_path = arg; break;
    case OPT_SOCKET: override(cl, GS_CONF_KEY(socket), arg); break;
    case OPT_TUNE_MISSING: override(cl, GS_CONF_KEY(tune_missing), "yes"); break;
    case OPT_PRINT_CONFIG: cl->da.print_config = 1; break;
    case 'o': {
        char *eq = strchr(arg, '=');
        if (!eq || eq == arg) {
            fprintf(stderr, "gsortd: -o '%s': expected KEY=VALUE\n", arg);
            return GS_EINVAL;
        }
        *eq = '\0';
        override(cl, arg, eq + 1);
        break;
    }
    case OPT_FAULT:
        if (parse_fault("--inject-fault", arg, &cl->da.fault_at, &cl->da.fault_dev))
            return GS_EINVAL;
        break;
    default: return GS_ENOTFOUND;
    }
    cl->serve_opts = 1;     /* those for serving only */
    return 0;
}

/* --audit-plan's. */
static int audit_option(cmdline *cl, int c, char *arg)
{
    long v;
    gs_audit_opts *o = &cl->aa.o;
    switch (c) {
    case OPT_AUDIT: cl->audit = 1; return 0;
    case OPT_NO_AUDIT: cl->no_audit = 1; return 0;
    case OPT_FIX: o->fix = 1; break;
    case OPT_MINLOG2:
        if (parse_long("--min-log2", arg, 1, GS_TUNE_MAX_LOG2, &v))
            return GS_EINVAL;
        o->min_log2 = (int)v;
        break;
    case OPT_STEP:
        if (parse_long("--step", arg, 1, GS_TUNE_MAX_LOG2, &v))
            return GS_EINVAL;
        o->step = (int)v;
        break;
    case OPT_REPS:
        if (parse_long("--reps", arg, 1, 16, &v))
            return GS_EINVAL;
        o->reps = (int)v;
        break;
    case OPT_SHAPES: {
        gs_err err;
        gs_err_clear(&err);
        if (gs_audit_shapes_check(arg, &err) < 0) {
            fprintf(stderr, "gsortd: --shapes: %s\n", err.msg);
            return GS_EINVAL;
        }
        o->shapes = arg;
        break;
    }
    default: return GS_ENOTFOUND;
    }
    cl->audit_opts = 1;     /* those that go with --audit-plan only */
    return 0;
}

/* --budget's: seconds, up to 30 days. */
static int parse_budget(const char *arg, double *budget)
{
    char *end;
    errno = 0;
    double b = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(b) || b <= 0 || b > 30 * 86400.0) {
        fprintf(stderr, "gsortd: --budget '%s': expected a positive number of seconds "
                "(at most 30 days)\n", arg);
        return GS_EINVAL;
    }
    *budget = b;
    return 0;
}

/* --tune-compare's own. */
static int compare_option(cmdline *cl, int c, char *arg)
{
    long v;
    switch (c) {
    case OPT_COMPARE: cl->ta.compare = arg; return 0;
    case OPT_N:
        if (parse_long("--n", arg, 2, 1L << GS_TUNE_MAX_LOG2, &v))
            return GS_EINVAL;
        cl->ta.compare_n = (size_t)v;
        break;
    case OPT_SEEDS:
        if (parse_long("--seeds", arg, 1, 100000, &v))
            return GS_EINVAL;
        cl->ta.seeds = (unsigned)v;
        break;
    default: return GS_ENOTFOUND;
    }
    cl->compare_opts = 1;
    return 0;
}

/* --tune-all's (and --tune-compare's). */
static int tune_option(cmdline *cl, int c, char *arg)
{
    long v;
    gs_tuneall_opts *ta = &cl->ta;
    switch (c) {
    case OPT_TUNE_ALL: cl->tune_all = 1; return 0;
    case 'v': cl->verbose = 1; return 0;
    case OPT_BUDGET:
        if (parse_budget(arg, &ta->budget))
            return GS_EINVAL;
        break;
    case OPT_QUICK: ta->quick = 1; break;
    case OPT_DEVICE:
        if (parse_long("--device", arg, 0, 1023, &ta->device))
            return GS_EINVAL;
        cl->aa.device = ta->device;
        break;
    case OPT_ALGOS: ta->algorithms = arg; break;
    case OPT_PAYLOADS: ta->payloads = arg; break;
    case OPT_MAXLOG2:
        if (parse_long("--max-log2", arg, GS_TUNE_MIN_LOG2, GS_TUNE_MAX_LOG2, &v))
            return GS_EINVAL;
        ta->max_log2 = cl->aa.o.max_log2 = (int)v;
        break;
    case OPT_RESTRICT: {
        gs_err err;
        gs_err_clear(&err);
        if (gs_tune_restrict_check(arg, &err)) {
            fprintf(stderr, "gsortd: %s\n", err.msg);
            return GS_EINVAL;
        }
        ta->restrict_spec = arg;
        break;
    }
    case OPT_SEED:
        if (parse_long("--seed", arg, 0, 2147483647L, &v))
            return GS_EINVAL;
        ta->seed = (uint64_t)v;
        break;
    default: return compare_option(cl, c, arg);
    }
    cl->tune_opts = 1;      /* those for tuning only */
    return 0;
}

/* The other modes', --help's and --version's (cl->done), or an unknown
 * option. */
static int mode_option(cmdline *cl, int c)
{
    switch (c) {
    case 'l': cl->list = 1; return 0;
    case OPT_JSON: cl->json = 1; return 0;
    case OPT_DBCHECK: cl->db_check = 1; return 0;
    case 'h': usage(stdout); cl->done = 1; return 0;
    case 'V':
        printf("gsortd %s\nsystemd support: %s\n", PACKAGE_VERSION,
               gs_systemd_supported() ? "yes (readiness notification, socket activation)"
                                      : "no (built without libsystemd)");
        cl->done = 1;
        return 0;
    default:
        fprintf(stderr, "Try 'gsortd --help'.\n");
        return GS_EINVAL;
    }
}

/* Option c of getopt_long, its argument in arg: 0 or GS_EINVAL. */
static int parse_option(cmdline *cl, int c, char *arg)
{
    int rc = serve_option(cl, c, arg);
    if (rc == GS_ENOTFOUND)
        rc = audit_option(cl, c, arg);
    if (rc == GS_ENOTFOUND)
        rc = tune_option(cl, c, arg);
    if (rc == GS_ENOTFOUND)
        rc = mode_option(cl, c);
    return rc;
}

/* No argument but options, and one mode at most: 0 or GS_EINVAL. */
static int check_mode(const cmdline *cl, int argc, char **argv)
{
    if (optind < argc) {
        fprintf(stderr, "gsortd: unexpected argument '%s'\nTry 'gsortd --help'.\n", argv[optind]);
        return GS_EINVAL;
    }
    if (cl->json && !cl->list) {
        fprintf(stderr, "gsortd: --json goes with --list-devices\n");
        return GS_EINVAL;
    }
    if (cl->list + cl->tune_all + cl->db_check + cl->audit + (cl->ta.compare != NULL) > 1) {
        fprintf(stderr, "gsortd: --list-devices, --tune-all, --tune-compare, --audit-plan and "
                "--db-check exclude each other\n");
        return GS_EINVAL;
    }
    return 0;
}

/* --audit-plan with nothing it does not take; the daemon's own options
 * (--config, -o) say whose choices are timed. */
static int check_audit(const cmdline *cl)
{
    const gs_tuneall_opts *ta = &cl->ta;
    if (ta->budget > 0 || ta->quick || ta->algorithms || ta->payloads || ta->restrict_spec ||
        ta->seed != 1 || ta->compare || cl->compare_opts || cl->no_audit ||
        cl->da.print_config || cl->da.fault_at) {
        fprintf(stderr, "gsortd: --audit-plan takes --db, --device, --config, -o, "
                "--min-log2, --max-log2, --step, --reps, --shapes and --fix\n");
        return GS_EINVAL;
    }
    return 0;
}

/* Is a mode other than serving chosen (--audit-plan aside)? */
static int other_mode(const cmdline *cl)
{
    return cl->list || cl->tune_all || cl->db_check || cl->ta.compare;
}

/* Every option with the mode it goes with: 0 or GS_EINVAL. */
static int check_options(const cmdline *cl)
{
    if (cl->audit_opts) {
        fprintf(stderr, "gsortd: --fix, --min-log2, --step, --reps and --shapes go with "
                "--audit-plan\n");
        return GS_EINVAL;
    }
    if (cl->verbose && !cl->tune_all) {
        fprintf(stderr, "gsortd: --verbose goes with --tune-all\n");
        return GS_EINVAL;
    }
    if (cl->no_audit && !cl->tune_all) {
        fprintf(stderr, "gsortd: --no-audit goes with --tune-all\n");
        return GS_EINVAL;
    }
    if (cl->tune_opts && !cl->tune_all && !cl->ta.compare) {
        fprintf(stderr, "gsortd: --budget, --quick, --device, --algorithms, --payloads, "
                "--max-log2, --restrict and --seed go with --tune-all (or --tune-compare)\n");
        return GS_EINVAL;
    }
    if (cl->compare_opts && !cl->ta.compare) {
        fprintf(stderr, "gsortd: --n and --seeds go with --tune-compare\n");
        return GS_EINVAL;
    }
    if (other_mode(cl) && cl->serve_opts) {
        fprintf(stderr, "gsortd: --config, --socket, --tune-missing, -o, --print-config and "
                "--inject-fault are for serving (no mode option)\n");
        return GS_EINVAL;
    }
    return 0;
}

/* --tune-all, then the audit that ends every tune: the rows that lose are
 * replaced. The exit status. */
static int tune_and_audit(cmdline *cl)
{
    int rc = gs_tuneall_run(&cl->ta);
    if (rc)
        return rc;
    cl->aa.daemon = &cl->da;
    cl->aa.db_path = cl->ta.db_path;
    cl->aa.o.fix = 1;
    cl->aa.o.max_log2 = 0;          /* what the tune measured */
    cl->aa.brief = !cl->verbose;    /* a line per device; the table with --verbose */
    if (cl->ta.quick && !(cl->ta.budget > 0))
        cl->aa.o.budget_s = GS_AUDIT_QUICK_BUDGET;
    return gs_audit_main(&cl->aa);
}

/* Everything main does, with the override arrays (argc + 1 entries each)
 * owned by main, so every return path here leaves nothing allocated. */
static int run(int argc, char **argv, const char **okeys, const char **ovals)
{
    cmdline cl = {
        .aa = { .device = -1 },
        .ta = { .device = -1, .seed = 1, .compare_n = 65536, .seeds = 100 },
        .da = { .keys = okeys, .values = ovals },
        .okeys = okeys, .ovals = ovals,
    };
    int c;
    while ((c = getopt_long(argc, argv, "lhVvo:", opts, NULL)) != -1) {
        if (parse_option(&cl, c, optarg) < 0)
            return 2;
        if (cl.done)
            return 0;
    }
    if (check_mode(&cl, argc, argv) < 0)
        return 2;
    if (cl.audit) {
        if (check_audit(&cl) < 0)
            return 2;
        cl.aa.daemon = &cl.da;
        cl.aa.db_path = cl.ta.db_path;
        return gs_audit_main(&cl.aa);
    }
    if (check_options(&cl) < 0)
        return 2;
    /* a line per search, the full tables (--log-level debug: more) */
    cl.ta.verbose = cl.verbose;
    const char *envf = getenv("GSORTD_INJECT_FAULT");
    if (!other_mode(&cl) && !cl.da.fault_at && envf && envf[0] &&
        parse_fault("GSORTD_INJECT_FAULT", envf, &cl.da.fault_at, &cl.da.fault_dev))
        return 2;
    if (cl.list)
        return list_devices(cl.json);
    if (cl.db_check)
        return gs_tuneall_db_check(cl.ta.db_path);
    if (cl.tune_all && !cl.no_audit)
        return tune_and_audit(&cl);
    if (cl.tune_all || cl.ta.compare)
        return gs_tuneall_run(&cl.ta);
    return gs_daemon_main(&cl.da);
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
