/* The algorithm descriptors the registry (gs_sort.c) lists. Each lives in
 * its own algo_*.c file. */
#ifndef GS_ALGOS_H
#define GS_ALGOS_H

#include "gs_sort.h"

extern const gs_algo gs_algo_host;   /* algo_host.c: host LSD radix sort */
extern const gs_algo gs_algo_radix;  /* algo_radix.c: OpenCL LSD radix sort */
extern const gs_algo gs_algo_mergepath; /* algo_mergepath.c: MergePath multisort */
extern const gs_algo gs_algo_shellsort; /* algo_shellsort.c: Sedgewick Shellsort */

#endif
