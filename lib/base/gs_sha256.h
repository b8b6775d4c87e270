/* SHA-256 (FIPS 180-4), written from the specification so gsortd needs no
 * crypto library. Used to key and checksum the on-disk program cache; it is
 * an integrity check against truncation and bit rot, not a security boundary. */
#ifndef GS_SHA256_H
#define GS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define GS_SHA256_LEN 32
#define GS_SHA256_HEX_LEN 65   /* 64 hex digits and the NUL */

typedef struct gs_sha256_ctx {
    uint32_t h[8];
    uint64_t total;         /* bytes hashed so far */
    uint8_t buf[64];
    size_t used;            /* bytes waiting in buf */
} gs_sha256_ctx;

void gs_sha256_init(gs_sha256_ctx *c);
void gs_sha256_update(gs_sha256_ctx *c, const void *data, size_t len);
/* Write the digest; the context must be re-initialised before reuse. */
void gs_sha256_final(gs_sha256_ctx *c, uint8_t out[GS_SHA256_LEN]);

/* One-shot digest of a buffer. */
void gs_sha256(const void *data, size_t len, uint8_t out[GS_SHA256_LEN]);
/* Lower-case hex of a digest into `hex` (GS_SHA256_HEX_LEN bytes); returns hex. */
char *gs_sha256_hex(const uint8_t digest[GS_SHA256_LEN], char hex[GS_SHA256_HEX_LEN]);

#endif
