/* gsort-query: inspect the tuning database without the daemon (devices,
 * winners, plan, trials, the plan across driver versions, a throughput
 * plot) and ask a running daemon for its info and stats. This file holds
 * the command line and the dispatch; the database commands are in
 * gsq_cmd.c and gsq_history.c, output formats in gsq_out.c, the plot in
 * gsq_plot.c, the daemon part in gsq_daemon.c and the queries in
 * lib/store/gs_dbq.c. See man/gsort-query.1. */
#include "config.h"
#include "gs_dbq.h"
#include "gs_sort.h"
#include "gs_types.h"
#include "gsq_cmd.h"
#include "gsq_daemon.h"
#include "gsq_history.h"
#include "gsq_plot.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PROG "gsort-query"

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: gsort-query [OPTION]... COMMAND\n"
        "Inspect gsortd's tuning database, or ask a running gsortd.\n"
        "\n"
        "Commands (tuning database):\n"
        "  devices         devices in the database, tuned or not\n"
        "  winners         best parameters per algorithm, key width, payload and size\n"
        "  plan            which algorithm serves each request shape and size\n"
        "  shapes          the rows, top-k and segments plan: the route per size and\n"
        "                  row, k or mean segment\n"
        "  trials          measured and failed configurations, newest first\n"
        "  history [SEL]   one device's plan across its driver versions\n"
        "  plot            Gkeys/s against n per algorithm, for one device\n"
        "Commands (running daemon):\n"
        "  info            the daemon's devices, database, algorithms and limits\n"
        "  stats           its counters: clients, requests, bytes, sorts per route\n"
        "\n"
        "Options:\n"
        "      --db PATH            tuning database (default: $GSORTD_DATA_DIR/tuning.db,\n"
        "                           /var/lib/gsortd as root, else $XDG_DATA_HOME/gsortd)\n"
        "      --json               JSON output\n"
        "      --csv                CSV output (RFC 4180)\n"
        "  -d, --device SEL         a device id, or part of its name (any case)\n"
        "  -a, --algorithm A[,B]    only these algorithms\n"
        "      --key-bits 16|32|64  only u16 (8- and 16-bit keys), u32 or u64 keys (plot: default 32)\n"
        "      --payload KIND       none, u32, u64, idx32, idx64 (plot: default none)\n"
        "  -n, --n N                trials: only this n (a number or 2^K)\n"
        "      --valid, --failed    trials: only valid, or only failed ones\n"
        "      --distribution D     trials: only this input (random, random-e2e, sorted,\n"
        "                           reversed, few16)\n"
        "      --limit N            trials: at most N, newest first (default 50; 0: all)\n"
        "  -o, --output FILE        plot: FILE.svg, FILE.png (gnuplot) or - (SVG on\n"
        "                           standard output)\n"
        "      --e2e                plot: end-to-end times (with transfers) where\n"
        "                           measured\n"
        "  -S, --socket PATH        info, stats: the daemon's socket (default:\n"
        "                           $GSORTD_SOCKET, else $XDG_RUNTIME_DIR/gsortd.sock\n"
        "                           if it exists, else /run/gsortd/gsortd.sock)\n"
        "  -h, --help               show this help and exit\n"
        "  -V, --version            show the version and exit\n"
        "\n"
        "Exit status: 0 on success, 1 on a runtime failure (no database, no daemon,\n"
        "no such device), 2 on a usage error.\n");
}

/* ---- options ---- */

enum {
    O_DB = 1 << 0, O_FMT = 1 << 1, O_DEVICE = 1 << 2, O_ALGO = 1 << 3, O_KEYBITS = 1 << 4,
    O_PAYLOAD = 1 << 5, O_N = 1 << 6, O_VALID = 1 << 7, O_DIST = 1 << 8, O_LIMIT = 1 << 9,
    O_OUTPUT = 1 << 10, O_E2E = 1 << 11, O_SOCKET = 1 << 12,
};

static const char *const opt_names[] = {
    "--db", "--json/--csv", "--device", "--algorithm", "--key-bits", "--payload", "--n",
    "--valid/--failed", "--distribution", "--limit", "--output", "--e2e", "--socket",
};

typedef struct command {
    const char *name;
    int allowed;             /* O_* that apply */
    int (*run)(gsq_cmd_opts *c, gs_db *db, gs_err *err);
} command;

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
    return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (s[0] == '2' && s[1] == '^') {
        unsigned long k = strtoul(s + 2, &end, 10);
        if (end == s + 2 || *end || k > 63)
            return -1;
        *out = (uint64_t)1 << k;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

/* ---- daemon ---- */

static int daemon_op(gsq_cmd_opts *c, const char *op, gs_err *err)
{
    char path[4200];
    int rc = gsq_socket_path(c->socket, path, sizeof path, err);
    return rc ? rc : gsq_daemon_show(stdout, op, path, c->fmt, c->width, err);
}

static int cmd_info(gsq_cmd_opts *c, gs_db *db, gs_err *err) { (void)db; return daemon_op(c, "info", err); }
static int cmd_stats(gsq_cmd_opts *c, gs_db *db, gs_err *err) { (void)db; return daemon_op(c, "stats", err); }

static const command commands[] = {
    { "devices", O_DB | O_FMT | O_DEVICE, gsq_cmd_devices },
    { "winners", O_DB | O_FMT | O_DEVICE | O_ALGO | O_KEYBITS | O_PAYLOAD, gsq_cmd_winners },
    { "plan", O_DB | O_FMT | O_DEVICE | O_ALGO | O_KEYBITS | O_PAYLOAD, gsq_cmd_plan },
    { "shapes", O_DB | O_FMT | O_DEVICE | O_ALGO | O_KEYBITS | O_PAYLOAD, gsq_cmd_shapes },
    { "trials", O_DB | O_FMT | O_DEVICE | O_ALGO | O_KEYBITS | O_PAYLOAD | O_N | O_VALID | O_DIST |
                O_LIMIT, gsq_cmd_trials },
    { "history", O_DB | O_FMT | O_DEVICE | O_KEYBITS | O_PAYLOAD, gsq_history },
    { "plot", O_DB | O_FMT | O_DEVICE | O_ALGO | O_KEYBITS | O_PAYLOAD | O_OUTPUT | O_E2E, gsq_cmd_plot },
    { "info", O_FMT | O_SOCKET, cmd_info },
    { "stats", O_FMT | O_SOCKET, cmd_stats },
};

/* Every name in --algorithm must be registered or appear in the database. */
static int check_algorithms(const gsq_cmd_opts *c, gs_db *db, gs_err *err)
{
    if (!c->algorithms)
        return 0;
    char *list = strdup(c->algorithms), *save = NULL;
    if (!list)
        return gsq_cmd_oom(err);
    int rc = 0;
    for (char *a = strtok_r(list, ",", &save); a && !rc; a = strtok_r(NULL, ",", &save)) {
        int seen = 0;
        if (gs_algo_find(a))
            continue;
        if ((rc = gs_dbq_algorithm_seen(db, a, &seen, err)) != 0)
            break;
        if (!seen) {
            char known[256] = "";
            for (size_t i = 0; i < gs_algo_count(); i++) {
                size_t l = strlen(known);
                snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", gs_algo_at(i)->name);
            }
            rc = gs_err_set(err, GS_EINVAL, "unknown algorithm \"%s\" (known: %s)", a, known);
        }
    }
    free(list);
    return rc;
}

static int terminal_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *e = getenv("COLUMNS");
    int w = e ? atoi(e) : 0;
    return w > 20 ? w : 0;
}

enum { OPT_DB = 256, OPT_JSON, OPT_CSV, OPT_KEYBITS, OPT_PAYLOAD, OPT_VALID, OPT_FAILED,
       OPT_DIST, OPT_LIMIT, OPT_E2E };

static const struct option longopts[] = {
    { "db", required_argument, NULL, OPT_DB },
    { "json", no_argument, NULL, OPT_JSON },
    { "csv", no_argument, NULL, OPT_CSV },
    { "device", required_argument, NULL, 'd' },
    { "algorithm", required_argument, NULL, 'a' },
    { "algorithms", required_argument, NULL, 'a' },
    { "key-bits", required_argument, NULL, OPT_KEYBITS },
    { "payload", required_argument, NULL, OPT_PAYLOAD },
    { "n", required_argument, NULL, 'n' },
    { "valid", no_argument, NULL, OPT_VALID },
    { "failed", no_argument, NULL, OPT_FAILED },
    { "distribution", required_argument, NULL, OPT_DIST },
    { "limit", required_argument, NULL, OPT_LIMIT },
    { "output", required_argument, NULL, 'o' },
    { "e2e", no_argument, NULL, OPT_E2E },
    { "socket", required_argument, NULL, 'S' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

/* --algorithm's list, its spaces dropped, into c->algorithms. Returns 0
 * or the exit status, as read_option does. */
static int set_algorithms(gsq_cmd_opts *c, const char *arg)
{
    size_t k = 0;
    free(c->algorithms);
    if (!(c->algorithms = malloc(strlen(arg) + 1))) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    for (const char *s = arg; *s; s++)
        if (*s != ' ')
            c->algorithms[k++] = *s;
    c->algorithms[k] = '\0';
    if (!k || strstr(c->algorithms, ",,") || c->algorithms[0] == ',' ||
        c->algorithms[k - 1] == ',')
        return usage_error("--algorithm needs a name or a list A,B (got \"%s\")", arg);
    return 0;
}

/* Option opt of getopt_long (its value in optarg) into c, --help and
 * --version aside. Returns 0, or the exit status to stop with: 2 after a
 * usage error (said), 1 when out of memory. */
static int read_option(gsq_cmd_opts *c, int opt, char **argv)
{
    int rc;
    gs_payload pl;
    uint64_t v;
    switch (opt) {
    case OPT_DB: c->db_path = optarg; c->seen |= O_DB; break;
    case OPT_JSON:
    case OPT_CSV: {
        gsq_fmt f = opt == OPT_JSON ? GSQ_JSON : GSQ_CSV;
        if ((c->seen & O_FMT) && c->fmt != f)
            return usage_error("--json and --csv exclude each other");
        c->fmt = f;
        c->seen |= O_FMT;
        break;
    }
    case 'd': c->device = optarg; c->seen |= O_DEVICE; break;
    case 'a':
        if ((rc = set_algorithms(c, optarg)) != 0)
            return rc;
        c->seen |= O_ALGO;
        break;
    case OPT_KEYBITS:
    {
        char *end;
        long kb = strtol(optarg, &end, 10);
        if (end == optarg || *end || gs_kw_find((int)kb) < 0)
            return usage_error("--key-bits must be %s, not \"%s\"", gs_kw_list(), optarg);
        c->key_bits = (int)kb;
    }
        c->seen |= O_KEYBITS;
        break;
    case OPT_PAYLOAD:
        if (gs_payload_parse(optarg, &pl) != 0)
            return usage_error("--payload must be none, u32, u64, idx32 or idx64, not "
                               "\"%s\"", optarg);
        c->payload = gs_payload_name(pl);
        c->seen |= O_PAYLOAD;
        break;
    case 'n':
        if (parse_u64(optarg, &c->n) != 0 || c->n == 0)
            return usage_error("--n must be a positive number or 2^K, not \"%s\"", optarg);
        c->seen |= O_N;
        break;
    case OPT_VALID:
    case OPT_FAILED: {
        int valid = opt == OPT_VALID;
        if ((c->seen & O_VALID) && c->valid != valid)
            return usage_error("--valid and --failed exclude each other");
        c->valid = valid;
        c->seen |= O_VALID;
        break;
    }
    case OPT_DIST: c->distribution = optarg; c->seen |= O_DIST; break;
    case OPT_LIMIT:
        if (parse_u64(optarg, &v) != 0 || v > 100000000)
            return usage_error("--limit must be a number (0: no limit), not \"%s\"", optarg);
        c->limit = (long)v;
        c->seen |= O_LIMIT;
        break;
    case 'o':
        if (!gsq_plot_path_ok(optarg))
            return usage_error("-o %s: a plot file name must end in .svg or .png (or be - "
                               "for SVG on standard output)", optarg);
        c->output = optarg;
        c->seen |= O_OUTPUT;
        break;
    case OPT_E2E: c->e2e = 1; c->seen |= O_E2E; break;
    case 'S': c->socket = optarg; c->seen |= O_SOCKET; break;
    case ':':
        return usage_error("option %s needs a value", argv[optind - 1]);
    default:
        if (optopt && optopt < 128 && argv[optind - 1][1] != '-')
            return usage_error("unknown option -%c", optopt);
        return usage_error("unknown option %s", argv[optind - 1]);
    }
    return 0;
}

/* The command the arguments left after the options name (and history's
 * selector), into *out, with every option given one it takes. Returns 0
 * or the exit status (2: a usage error, said). */
static int pick_command(gsq_cmd_opts *c, int argc, char **argv, const command **out)
{
    if (optind >= argc)
        return usage_error("no command given (devices, winners, plan, shapes, trials, history, "
                           "plot, info or stats)");
    const char *name = argv[optind++];
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            cmd = &commands[i];
    if (!cmd)
        return usage_error("unknown command \"%s\" (devices, winners, plan, shapes, trials, "
                           "history, plot, info, stats)", name);
    if (!strcmp(cmd->name, "history") && optind < argc) {
        if (c->device)
            return usage_error("history takes one device: --device %s or %s, not both",
                               c->device, argv[optind]);
        c->device = argv[optind++];
    }
    if (optind < argc)
        return usage_error("%s: unexpected argument \"%s\"", cmd->name, argv[optind]);
    for (size_t i = 0; i < sizeof opt_names / sizeof opt_names[0]; i++)
        if ((c->seen & (1 << i)) && !(cmd->allowed & (1 << i)))
            return usage_error("%s does not apply to %s", opt_names[i], cmd->name);
    *out = cmd;
    return 0;
}

/* Runs cmd, on the database when it reads one; the exit status. */
static int run_command(gsq_cmd_opts *c, const command *cmd)
{
    gs_err err;
    gs_err_clear(&err);
    gs_db *db = NULL;
    int rc = 0;
    if (cmd->allowed & O_DB) {
        rc = gs_dbq_open(&db, c->db_path, &err);
        if (rc == GS_ENOTFOUND && strstr(err.msg, "no tuning database")) {
            fprintf(stderr, PROG ": %s: run gsortd --tune-all to create it, or name another "
                            "with --db PATH\n", err.msg);
            return 1;
        }
        if (!rc && (rc = check_algorithms(c, db, &err)) == GS_EINVAL) {
            gs_db_close(db);
            fprintf(stderr, PROG ": %s\n", err.msg);
            return 2;
        }
    }
    if (!rc)
        rc = cmd->run(c, db, &err);
    gs_db_close(db);
    if (rc == 2)    /* a usage error the command reported itself */
        return 2;
    if (rc) {
        fprintf(stderr, PROG ": %s\n", err.msg[0] ? err.msg : gs_strerror(rc));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    gsq_cmd_opts c = { .fmt = GSQ_TABLE, .valid = -1, .limit = 50 };
    int opt, rc;
    opterr = 0;
    /* GNU getopt moves the command (and history's selector) to the end,
     * so options may come before or after it. */
    while ((opt = getopt_long(argc, argv, ":hVd:a:n:o:S:", longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == 'V') {
            printf("gsort-query (gsortd) %s\n", PACKAGE_VERSION);
            return 0;
        }
        if ((rc = read_option(&c, opt, argv)) != 0)
            return rc;
    }
    const command *cmd = NULL;
    if ((rc = pick_command(&c, argc, argv, &cmd)) != 0)
        return rc;
    c.width = c.fmt == GSQ_TABLE ? terminal_width() : 0;
    rc = run_command(&c, cmd);
    free(c.algorithms);
    return rc;
}
