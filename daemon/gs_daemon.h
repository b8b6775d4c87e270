/* `gsortd` with no mode option: build the effective configuration
 * (built-in defaults < config file < command-line overrides), set up
 * logging, probe the devices and serve until told to stop. The same
 * configuration steps run again on SIGHUP. */
#ifndef GS_DAEMON_H
#define GS_DAEMON_H

#include <stddef.h>

#include "gs_err.h"

typedef struct gs_daemon_args {
    const char *config_path;    /* --config; NULL: the default file if it exists */
    const char *const *keys;    /* command-line overrides, in order */
    const char *const *values;
    size_t nover;
    long fault_at;              /* --inject-fault launch:K (tests); 0: none */
    long fault_dev;             /* launch:K,device:D: D + 1; 0: every device */
    int print_config;           /* --print-config: print and exit */
} gs_daemon_args;

/* Returns the exit status: 0 after a clean shutdown, 1 on a runtime
 * failure, 2 for a bad configuration. */
int gs_daemon_main(const gs_daemon_args *a);

struct gs_conf;
/* The effective configuration: built-in defaults, then the file (a's, or
 * the default one when it exists), then a's overrides. */
int gs_daemon_conf(const gs_daemon_args *a, struct gs_conf *c, gs_err *err);
/* The allocator settings the daemon serves with (see gs_daemon.c), for
 * whatever times its request path in its stead (the plan audit). */
void gs_daemon_malloc_setup(void);

#endif
