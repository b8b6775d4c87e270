/* STUB: host sort (to be written). */
#include "config.h"
#include "gs_algos.h"
const gs_algo gs_algo_host = { .name = "host", .summary = "stub", .stable = 1, .uses_device = 0 };
