/* gsortd's entry point: command-line parsing and dispatch. Today it lists
 * devices; the tuner (--tune-all) and the server grow here as they land. */
#include "config.h"
#include "gs_dev.h"
#include "gs_devlist.h"
#include "gs_kern.h"
#include "gs_log.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: gsortd [OPTION]...\n"
        "Sort service for OpenCL devices: probes devices, tunes sort kernels,\n"
        "serves sort requests.\n"
        "\n"
        "  -l, --list-devices     print every OpenCL device and its properties\n"
        "      --json             with --list-devices: print JSON\n"
        "      --kernel-dir DIR   read kernels/NAME.cl from DIR instead of the\n"
        "                         copies built into gsortd (development)\n"
        "      --cache-dir DIR    program-binary cache directory\n"
        "                         (default: $GSORTD_CACHE_DIR, else /var/cache/gsortd\n"
        "                         as root, else $XDG_CACHE_HOME/gsortd)\n"
        "      --log-level LEVEL  error, warn, info (default) or debug\n"
        "  -h, --help             show this help and exit\n"
        "  -V, --version          show the version and exit\n"
        "\n"
        "Exit status: 0 on success, 1 on a runtime failure, 2 on a usage error.\n");
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

int main(int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_KDIR, OPT_CACHE, OPT_LOGLEVEL };
    static const struct option opts[] = {
        { "list-devices", no_argument, 0, 'l' },
        { "json", no_argument, 0, OPT_JSON },
        { "kernel-dir", required_argument, 0, OPT_KDIR },
        { "cache-dir", required_argument, 0, OPT_CACHE },
        { "log-level", required_argument, 0, OPT_LOGLEVEL },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    int list = 0, json = 0, c, lvl;
    while ((c = getopt_long(argc, argv, "lhV", opts, NULL)) != -1) {
        switch (c) {
        case 'l': list = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_KDIR: gs_kern_set_dir(optarg); break;
        case OPT_CACHE: setenv("GSORTD_CACHE_DIR", optarg, 1); break;
        case OPT_LOGLEVEL:
            if ((lvl = gs_log_parse_level(optarg)) < 0) {
                fprintf(stderr, "gsortd: unknown log level '%s' (error, warn, info, debug)\n", optarg);
                return 2;
            }
            gs_log_set_level(lvl);
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("gsortd %s\n", PACKAGE_VERSION); return 0;
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
    if (list)
        return list_devices(json);
    usage(stderr);
    return 2;
}
