/* The algorithm registry (declared in gs_sort.h): the table of every
 * algorithm descriptor (gs_algos.h), looked up by position or name, and the
 * built-in default. The only place that names the algorithms, so the sort
 * front end (gs_sort.c) depends on none of them. Append new algorithms to
 * the table. */
#include "config.h"
#include "gs_sort.h"

#include <string.h>

#include "gs_algos.h"

static const gs_algo *const registry[] = {
    &gs_algo_host,
    &gs_algo_radix,
    &gs_algo_mergepath,
    &gs_algo_shellsort,
#ifdef HAVE_VQSORT
    &gs_algo_vqsort,
#endif
    &gs_algo_bitonic,
    &gs_algo_select,
};

size_t gs_algo_count(void)
{
    return sizeof registry / sizeof registry[0];
}

const gs_algo *gs_algo_at(size_t i)
{
    return i < gs_algo_count() ? registry[i] : NULL;
}

const gs_algo *gs_algo_find(const char *name)
{
    for (size_t i = 0; name && i < gs_algo_count(); i++)
        if (registry[i]->name && !strcmp(registry[i]->name, name))
            return registry[i];
    return NULL;
}

/* What a device without a tuned plan runs from the crossover size up
 * (issue 17): on a GPU radix, stable, so it serves every request, and the
 * fastest there from about 2^16 keys on; on a CPU device (PoCL) the host
 * sort, which shares the same cores without the OpenCL runtime between
 * them and is several times faster at every size. */
const gs_algo *gs_algo_default_for(const gs_dev_info *info)
{
    if (info && (info->type & CL_DEVICE_TYPE_CPU))
        return &gs_algo_host;
    return &gs_algo_radix;
}
