/* STUB: SHA-256 (to be written). */
#ifndef GS_SHA256_H
#define GS_SHA256_H
#include <stddef.h>
#include <stdint.h>
#endif
