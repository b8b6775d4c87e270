/* gsort-query's database commands (devices, winners, plan, trials, plot;
 * history is in gsq_history.c) and what they share: the parsed command
 * line, the device names behind the table headings, the --device filter
 * and printing with a sentence for an empty answer. Each command returns 0
 * or a negative GS_E* code with the message in err, or 2 for a usage error
 * it has already reported. */
#ifndef GSQ_CMD_H
#define GSQ_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "gs_dbq.h"
#include "gsq_out.h"

typedef struct gsq_cmd_opts {
    const char *db_path;
    gsq_fmt fmt;
    const char *device;
    char *algorithms;        /* spaces removed */
    int key_bits;
    const char *payload;
    uint64_t n;
    int valid;               /* -1 any */
    const char *distribution;
    long limit;
    const char *output;
    int e2e;
    const char *socket;
    int seen;                /* options given (gsort-query.c's O_* bits) */
    int width;               /* table width, 0: unlimited */
} gsq_cmd_opts;

/* Every device of the database into l (gs_dbq_devlist_add, with an "out of
 * memory" message when the list cannot grow). */
int gsq_cmd_devices_load(gs_db *db, gs_dbq_devlist *l, gs_err *err);
/* The row of device `id`, or one of "?" names. */
const gs_dbq_devcopy *gsq_cmd_device_find(const gs_dbq_devlist *l, int64_t id);
int gsq_cmd_oom(gs_err *err);
/* The --device selector as a filter: 0 (every device) when not given. */
int gsq_cmd_select(gsq_cmd_opts *c, gs_db *db, int64_t *id, gs_err *err);
/* A filter with the command line's algorithms, key width and payload. */
void gsq_cmd_filter(const gsq_cmd_opts *c, gs_dbq_filter *f);
const char *gsq_cmd_keys(int key_bits);    /* "u32" or "u64" */
/* "Database device ID: NAME (PLATFORM, driver DRIVER)" */
void gsq_cmd_heading(const gs_dbq_devcopy *d, char *buf, size_t len);
/* Print t in c->fmt: a table with `note` above it, or the `empty`
 * sentence when it has no rows. */
int gsq_cmd_print(gsq_cmd_opts *c, gsq_table *t, const char *note, const char *empty,
                  gs_err *err);

int gsq_cmd_devices(gsq_cmd_opts *c, gs_db *db, gs_err *err);
int gsq_cmd_winners(gsq_cmd_opts *c, gs_db *db, gs_err *err);
int gsq_cmd_plan(gsq_cmd_opts *c, gs_db *db, gs_err *err);
/* shapes: the rows and top-k plan (shape_plan) */
int gsq_cmd_shapes(gsq_cmd_opts *c, gs_db *db, gs_err *err);
int gsq_cmd_trials(gsq_cmd_opts *c, gs_db *db, gs_err *err);
int gsq_cmd_plot(gsq_cmd_opts *c, gs_db *db, gs_err *err);

#endif
