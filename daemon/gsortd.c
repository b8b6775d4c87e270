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
        "      --shapes LIST      of u32,u64,f32,u32+u32,argsort (default: all)\n"
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
        return 2;
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
        return 2;
    }
    if (comma)
        (*dev)++;
    return 0;
}

/* Everything main does, with the override arrays (argc + 1 entries each)
 * owned by main, so every return path here leaves nothing allocated. */
static int run(int argc, char **argv, const char **okeys, const char **ovals)
{
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
    int list = 0, json = 0, c, lvl, tune_opts = 0, compare_opts = 0;
    long v;
    int tune_all = 0, db_check = 0, audit = 0, audit_opts = 0, no_audit = 0;
    gs_audit_args aa = { .device = -1 };
    gs_tuneall_opts ta = { .device = -1, .seed = 1, .compare_n = 65536, .seeds = 100 };
    /* Serving options become configuration overrides, applied after the
     * config file (and again on every SIGHUP). */
    gs_daemon_args da = { .keys = okeys, .values = ovals };
    int serve_opts = 0;
#define OVERRIDE(k, v) (okeys[da.nover] = (k), ovals[da.nover++] = (v))
    int verbose = 0;
    while ((c = getopt_long(argc, argv, "lhVvo:", opts, NULL)) != -1) {
        switch (c) {
        case 'l': list = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_KDIR: gs_kern_set_dir(optarg); OVERRIDE(GS_CONF_KEY(kernel_dir), optarg); break;
        case OPT_CACHE:
            setenv("GSORTD_CACHE_DIR", optarg, 1);
            OVERRIDE(GS_CONF_KEY(cache_dir), optarg);
            break;
        case OPT_LOGLEVEL:
            if ((lvl = gs_log_parse_level(optarg)) < 0) {
                fprintf(stderr, "gsortd: unknown log level '%s' (error, warn, info, debug)\n", optarg);
                return 2;
            }
            gs_log_set_level(lvl);
            OVERRIDE(GS_CONF_KEY(log_level), optarg);
            break;
        case OPT_CONFIG: da.config_path = optarg; serve_opts = 1; break;
        case OPT_SOCKET: OVERRIDE(GS_CONF_KEY(socket), optarg); serve_opts = 1; break;
        case OPT_TUNE_MISSING: OVERRIDE(GS_CONF_KEY(tune_missing), "yes"); serve_opts = 1; break;
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
            if (parse_fault("--inject-fault", optarg, &da.fault_at, &da.fault_dev))
                return 2;
            serve_opts = 1;
            break;
        case OPT_TUNE_ALL: tune_all = 1; break;
        case 'v': verbose = 1; break;
        case OPT_AUDIT: audit = 1; break;
        case OPT_NO_AUDIT: no_audit = 1; break;
        case OPT_FIX: aa.o.fix = 1; audit_opts = 1; break;
        case OPT_MINLOG2:
            if (parse_long("--min-log2", optarg, 1, GS_TUNE_MAX_LOG2, &v))
                return 2;
            aa.o.min_log2 = (int)v;
            audit_opts = 1;
            break;
        case OPT_STEP:
            if (parse_long("--step", optarg, 1, GS_TUNE_MAX_LOG2, &v))
                return 2;
            aa.o.step = (int)v;
            audit_opts = 1;
            break;
        case OPT_REPS:
            if (parse_long("--reps", optarg, 1, 16, &v))
                return 2;
            aa.o.reps = (int)v;
            audit_opts = 1;
            break;
        case OPT_SHAPES: {
            gs_err err;
            gs_err_clear(&err);
            if (gs_audit_shapes_check(optarg, &err) < 0) {
                fprintf(stderr, "gsortd: --shapes: %s\n", err.msg);
                return 2;
            }
            aa.o.shapes = optarg;
            audit_opts = 1;
            break;
        }
        case OPT_BUDGET: {
            char *end;
            errno = 0;
            double b = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(b) || b <= 0 || b > 30 * 86400.0) {
                fprintf(stderr, "gsortd: --budget '%s': expected a positive number of seconds "
                        "(at most 30 days)\n", optarg);
                return 2;
            }
            ta.budget = b;
            tune_opts = 1;
            break;
        }
        case OPT_QUICK: ta.quick = 1; tune_opts = 1; break;
        case OPT_DEVICE:
            if (parse_long("--device", optarg, 0, 1023, &ta.device))
                return 2;
            aa.device = ta.device;
            tune_opts = 1;
            break;
        case OPT_ALGOS: ta.algorithms = optarg; tune_opts = 1; break;
        case OPT_PAYLOADS: ta.payloads = optarg; tune_opts = 1; break;
        case OPT_DB: ta.db_path = optarg; OVERRIDE(GS_CONF_KEY(db), optarg); break;
        case OPT_MAXLOG2:
            if (parse_long("--max-log2", optarg, GS_TUNE_MIN_LOG2, GS_TUNE_MAX_LOG2, &v))
                return 2;
            ta.max_log2 = aa.o.max_log2 = (int)v;
            tune_opts = 1;
            break;
        case OPT_RESTRICT: {
            gs_err err;
            gs_err_clear(&err);
            if (gs_tune_restrict_check(optarg, &err)) {
                fprintf(stderr, "gsortd: %s\n", err.msg);
                return 2;
            }
            ta.restrict_spec = optarg;
            tune_opts = 1;
            break;
        }
        case OPT_SEED:
            if (parse_long("--seed", optarg, 0, 2147483647L, &v))
                return 2;
            ta.seed = (uint64_t)v;
            tune_opts = 1;
            break;
        case OPT_DBCHECK: db_check = 1; break;
        case OPT_COMPARE: ta.compare = optarg; break;
        case OPT_N:
            if (parse_long("--n", optarg, 2, 1L << GS_TUNE_MAX_LOG2, &v))
                return 2;
            ta.compare_n = (size_t)v;
            compare_opts = 1;
            break;
        case OPT_SEEDS:
            if (parse_long("--seeds", optarg, 1, 100000, &v))
                return 2;
            ta.seeds = (unsigned)v;
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
    if (list + tune_all + db_check + audit + (ta.compare != NULL) > 1) {
        fprintf(stderr, "gsortd: --list-devices, --tune-all, --tune-compare, --audit-plan and "
                "--db-check exclude each other\n");
        return 2;
    }
    if (audit) {
        /* the daemon's own options (--config, -o) say whose choices are timed */
        if (ta.budget > 0 || ta.quick || ta.algorithms || ta.payloads || ta.restrict_spec ||
            ta.seed != 1 || ta.compare || compare_opts || no_audit || da.print_config ||
            da.fault_at) {
            fprintf(stderr, "gsortd: --audit-plan takes --db, --device, --config, -o, "
                    "--min-log2, --max-log2, --step, --reps, --shapes and --fix\n");
            return 2;
        }
        aa.daemon = &da;
        aa.db_path = ta.db_path;
        return gs_audit_main(&aa);
    }
    if (audit_opts) {
        fprintf(stderr, "gsortd: --fix, --min-log2, --step, --reps and --shapes go with "
                "--audit-plan\n");
        return 2;
    }
    if (verbose && !tune_all) {
        fprintf(stderr, "gsortd: --verbose goes with --tune-all\n");
        return 2;
    }
    ta.verbose = verbose;   /* a line per search, the full tables (--log-level debug: more) */
    if (no_audit && !tune_all) {
        fprintf(stderr, "gsortd: --no-audit goes with --tune-all\n");
        return 2;
    }
    if (tune_opts && !tune_all && !ta.compare) {
        fprintf(stderr, "gsortd: --budget, --quick, --device, --algorithms, --payloads, "
                "--max-log2, --restrict and --seed go with --tune-all (or --tune-compare)\n");
        return 2;
    }
    if (compare_opts && !ta.compare) {
        fprintf(stderr, "gsortd: --n and --seeds go with --tune-compare\n");
        return 2;
    }
    int mode = list || tune_all || db_check || ta.compare;
    if (mode && serve_opts) {
        fprintf(stderr, "gsortd: --config, --socket, --tune-missing, -o, --print-config and "
                "--inject-fault are for serving (no mode option)\n");
        return 2;
    }
    const char *envf = getenv("GSORTD_INJECT_FAULT");
    if (!mode && !da.fault_at && envf && envf[0]) {
        if (parse_fault("GSORTD_INJECT_FAULT", envf, &da.fault_at, &da.fault_dev))
            return 2;
    }
    int rc;
    if (list)
        rc = list_devices(json);
    else if (db_check)
        rc = gs_tuneall_db_check(ta.db_path);
    else if (tune_all && !no_audit) {
        /* the audit that ends every tune: the rows that lose are replaced */
        rc = gs_tuneall_run(&ta);
        if (rc == 0) {
            aa.daemon = &da;
            aa.db_path = ta.db_path;
            aa.o.fix = 1;
            aa.o.max_log2 = 0;      /* what the tune measured */
            aa.brief = !verbose;    /* a line per device; the table with --verbose */
            if (ta.quick && !(ta.budget > 0))
                aa.o.budget_s = GS_AUDIT_QUICK_BUDGET;
            rc = gs_audit_main(&aa);
        }
    } else if (tune_all || ta.compare)
        rc = gs_tuneall_run(&ta);
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
