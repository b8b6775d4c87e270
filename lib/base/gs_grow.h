/* Growing an array by doubling, the one way every growable list in gsortd
 * does it: gs_grow makes room for element n of the array *pptr (any object
 * pointer type, passed by address) whose capacity is *cap, starting at
 * `first` elements. Header-only, so the client library and the tools use
 * it without linking anything. */
#ifndef GS_GROW_H
#define GS_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gs_err.h"

/* 0 when *pptr has room for index n (reallocated to twice its capacity, or
 * to `first`, when n == *cap); GS_ENOMEM, with *pptr and *cap unchanged,
 * when it cannot grow. The pointer travels through memcpy, so callers pass
 * &array of any element type without an aliasing cast. */
static inline int gs_grow(void *pptr, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? 2 * *cap : first;
    if (nc < n + 1 || nc > SIZE_MAX / elem)
        return GS_ENOMEM;
    void *old, *p;
    memcpy(&old, pptr, sizeof old);
    if (!(p = realloc(old, nc * elem)))
        return GS_ENOMEM;
    memcpy(pptr, &p, sizeof p);
    *cap = nc;
    return 0;
}

#endif
