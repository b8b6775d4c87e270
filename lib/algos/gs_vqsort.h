/* Highway's vqsort behind a C interface (gs_vqsort.cc): in-place ascending
 * sorts of unsigned 32- and 64-bit keys, used by the "vqsort" host
 * candidate (algo_vqsort.c). Built only when configure finds libhwy-contrib
 * (HAVE_VQSORT). */
#ifndef GS_VQSORT_H
#define GS_VQSORT_H

#include <stddef.h>
#include <stdint.h>

void gs_vqsort_u32(uint32_t *keys, size_t n);
void gs_vqsort_u64(uint64_t *keys, size_t n);

#endif
