/* gsort-load's command line (bench/load/gsort-load.c): the options of a load
 * run, their defaults and limits, parsed and checked in one place, and the
 * usage text that documents them. */
#ifndef GS_LOADOPTS_H
#define GS_LOADOPTS_H

#include <stdint.h>

#include "gs_paths.h"

#define MAX_LOG2_LIMIT 26

typedef struct lo_opts {
    const char *socket;
    char socket_shown[GS_PATHS_SOCKET_MAX];
    int clients, requests, warmup, min_log2, max_log2, malformed_pct;
    double duration_s;        /* > 0: the main phase lasts this long (-m unused) */
    int block_max_log2;       /* largest registered block: 2^K u64 keys + values */
    int vanish_pct;           /* valid sorts sent whole, then the connection closed */
    double pin_mib;           /* slack of the pinned-bytes bounds */
    int device, device_pct;   /* this share of sorts names daemon device `device` */
    int corrupt_every;        /* checks the checker: spoil every Kth reply (0: never) */
    int racers;               /* racing clients in the main phase (loadrace.h) */
    double timeout_s, rss_pct, rss_mib;
    uint64_t seed;
    int check_rss, quiet;
} lo_opts;

/* Parse argv into *o (defaults first): 0 to run, 1 when --help printed the
 * usage, 2 after a usage error (said on stderr). */
int lo_parse(int argc, char **argv, lo_opts *o);

#endif
