/* STUB: OpenCL LSD radix sort (to be written). */
#include "config.h"
#include "gs_algos.h"
const gs_algo gs_algo_radix = { .name = "radix", .summary = "stub", .stable = 1, .uses_device = 1 };
