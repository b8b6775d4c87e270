// The C interface to Highway's vqsort (Debian libhwy-dev, libhwy_contrib):
// an in-place ascending sort of unsigned 32- and 64-bit keys, for the
// "vqsort" host candidate (algo_vqsort.c). C++ only because the library's
// API is a C++ class; built without exceptions or RTTI, so the programs
// that link the core library need no C++ runtime of their own.
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <hwy/contrib/sort/vqsort.h>

extern "C" {
#include "gs_vqsort.h"
}

void gs_vqsort_u32(uint32_t *keys, size_t n)
{
    hwy::Sorter s;
    s(keys, n, hwy::SortAscending());
}

void gs_vqsort_u64(uint64_t *keys, size_t n)
{
    hwy::Sorter s;
    s(keys, n, hwy::SortAscending());
}
