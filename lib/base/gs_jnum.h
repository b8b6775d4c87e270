/* Exact integers in JSON text, for the wire protocol and the stored
 * parameter sets. cJSON keeps a number only as a double, which rounds
 * integers beyond 2^53: 9007199254740993 reads as 9007199254740992. The text
 * cJSON parsed still holds the digits, and the k-th number of the parsed
 * tree (in document order) is the k-th number token of the text once
 * strings are skipped, so every integer field is read from its token,
 * exactly; and written as its decimal digits, never through a double. Also
 * here: quoting a peer's value safely in a message. */
#ifndef GS_JNUM_H
#define GS_JNUM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A parsed JSON document with the text it was parsed from. */
typedef struct gs_jnum_doc {
    const char *text;
    size_t len;
    const cJSON *root;
} gs_jnum_doc;

/* What a number item is as an integer. */
enum {
    GS_JNUM_OK = 0,
    GS_JNUM_NAN = -1,     /* not a number (or its token cannot be found) */
    GS_JNUM_FRAC = -2,    /* a number, not an integer: 1.5, 1e-3 */
    GS_JNUM_RANGE = -3,   /* an integer outside the asked range */
};

/* The exact value of number item `v` of `doc` as sign and magnitude
 * (magnitudes up to 2^64 - 1). 1e3 and 2.0 are the integers 1000 and 2;
 * -0 is 0. A NULL doc reads the double instead, exact only up to 2^53. */
int gs_jnum_int(const gs_jnum_doc *doc, const cJSON *v, int *neg, uint64_t *mag);
/* An integer in [0, max]. */
int gs_jnum_u64(const gs_jnum_doc *doc, const cJSON *v, uint64_t max, uint64_t *out);
/* An integer that fits a long. */
int gs_jnum_long(const gs_jnum_doc *doc, const cJSON *v, long *out);

/* Add member `name` with the exact integer value (its digits as a raw
 * number): 1, or 0 when out of memory. */
int gs_jnum_add_u64(cJSON *obj, const char *name, uint64_t x);
int gs_jnum_add_long(cJSON *obj, const char *name, long x);
/* A duration in ms with six decimals (nanoseconds), trailing zeros
 * dropped: "0.012345", "27". Written from integer digits: cJSON's own
 * number printing (printf "%.15g", read back with sscanf, then "%.17g")
 * cost more than the 1000-key sort a reply reports. */
int gs_jnum_add_ms(cJSON *obj, const char *name, double ms);

/* A peer string made safe to quote in a message: at most 40 printable
 * ASCII characters, anything else shown as '?'. Returns buf. */
const char *gs_jnum_clip(const char *s, char buf[48]);
/* A JSON value quoted for a message (its unformatted text, clipped). */
const char *gs_jnum_clip_json(const cJSON *v, char buf[48]);
/* A value quoted for a message: a number as the peer wrote it (doc may be
 * NULL), anything else as JSON (both clipped). */
const char *gs_jnum_quote(const gs_jnum_doc *doc, const cJSON *v, char buf[48]);

#endif
