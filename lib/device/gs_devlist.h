/* Rendering the probed device list for `gsortd --list-devices`: an aligned
 * text table, or JSON built with cJSON. */
#ifndef GS_DEVLIST_H
#define GS_DEVLIST_H

#include <stdio.h>
#include "gs_dev.h"

/* Print a table (or "no OpenCL platform found" note) to `out`. */
void gs_devlist_print_table(FILE *out, const gs_dev *devs, size_t n);
/* JSON text ({"devices":[...]}) malloc'ed; NULL on allocation failure. */
char *gs_devlist_json(const gs_dev *devs, size_t n);

#endif
