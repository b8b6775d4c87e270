/* The vocabulary shared by the sort code, the protocol and the clients:
 * key dtypes, payload kinds, the sort request, and tunable-parameter sets
 * with their "name=value,..." text form. Nothing here touches OpenCL, so
 * the client library (libgsort) builds on it without the device layer. */
#ifndef GS_TYPES_H
#define GS_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gs_err.h"

typedef enum gs_dtype {
    GS_DT_U32 = 0, GS_DT_I32, GS_DT_F32, GS_DT_U64, GS_DT_I64, GS_DT_F64,
    GS_DT_COUNT
} gs_dtype;

typedef enum gs_payload {
    GS_PL_NONE = 0,  /* keys only */
    GS_PL_U32,       /* a u32 value per key, permuted with the keys */
    GS_PL_U64,       /* a u64 value per key */
    GS_PL_IDX32,     /* argsort: values[i] := original index, u32 */
    GS_PL_IDX64,     /* argsort with u64 indices */
    GS_PL_COUNT
} gs_payload;

/* What a key dtype is, in one row per dtype (gs_types.c): everything
 * else (sizes, names, the encoding's kind, the plan's key width) is read
 * from the row, so a new dtype of an existing kind and width is a row here
 * and in the public enums (include/gsort.h, the Python client). */
enum gs_dtype_kind { GS_KIND_UNSIGNED = 0, GS_KIND_SIGNED = 1, GS_KIND_FLOAT = 2 };
typedef struct gs_dtype_info {
    const char *name;          /* "u32", the protocol's and the command's word */
    const char *np_name;       /* "uint32", numpy's (the command takes either) */
    unsigned bytes;            /* 4 or 8: the key width the algorithms sort */
    enum gs_dtype_kind kind;   /* the order-preserving encoding (gs_keys.h) */
} gs_dtype_info;
/* The row of t, or NULL for a value outside the enum. */
const gs_dtype_info *gs_dtype_row(gs_dtype t);
/* One number per (kind, width), for a switch over the ways keys are
 * handled: case GS_DT_CLASS(GS_KIND_FLOAT, 4). gs_dtype_class(t) is t's
 * (0, no case, outside the enum). */
#define GS_DT_CLASS(kind, bytes) ((unsigned)(kind) << 4 | (unsigned)(bytes))
unsigned gs_dtype_class(gs_dtype t);
size_t gs_dtype_size(gs_dtype t);          /* 4 or 8; 0 for no dtype */

/* Key widths as numbers, so that a table, a mask or a loop needs no 4-or-8
 * branch of its own. Plans and their tables are kept per key width: index
 * gs_kw_index(bits) of [GS_KW_COUNT]; gs_kw_bits(i) is the width at index
 * i. A new width is a new index here and a bits row in gs_types.c. 16 is
 * the width of the narrow keys (gs_narrow.h: 8- and 16-bit keys share its
 * plan, since a device takes 8-bit keys as 16-bit codes and the host
 * counts both), which no dtype has: the algorithms' own widths are 32 and
 * 64, and 16 stands last so that a plan of 32- or
 * 64-bit keys is nearer to either than the narrow keys' plan. */
enum { GS_KW_32, GS_KW_64, GS_KW_16, GS_KW_COUNT };
int gs_kw_bits(int kw);                    /* 32, 64, 16; 0 outside 0..GS_KW_COUNT-1 */
int gs_kw_find(int key_bits);              /* the index of a width; -1: no key has it */
/* The name of the unsigned keys of a width, for reports: "u16", "u32", "u64" */
const char *gs_kw_name(int key_bits);
/* gs_kw_find, but for an unknown width the narrowest's index (callers that
 * checked the width before, or index a table whatever comes) */
static inline int gs_kw_index(int key_bits)
{
    int i = gs_kw_find(key_bits);
    return i < 0 ? 0 : i;
}
/* The widths for a message: "16, 32 or 64" (a static string). */
const char *gs_kw_list(void);
/* The largest key of `bytes` bytes (an all-ones word of that width). */
static inline uint64_t gs_key_max(size_t bytes)
{
    return bytes >= 8 ? UINT64_MAX : (UINT64_C(1) << (bytes * 8)) - 1;
}
/* Key i of an array of keys `bytes` wide, as an unsigned number, and back:
 * the one place a key's width decides how it is read or written. Inline:
 * checks, comparators and input makers call them once per key. */
static inline uint64_t gs_key_get(const void *keys, size_t i, size_t bytes)
{
    const unsigned char *p = (const unsigned char *)keys + i * bytes;
    switch (bytes) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}
static inline void gs_key_put(void *keys, size_t i, size_t bytes, uint64_t v)
{
    unsigned char *p = (unsigned char *)keys + i * bytes;
    switch (bytes) {
    case 1: *p = (unsigned char)v; break;
    case 2: { uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
    case 4: { uint32_t w = (uint32_t)v; memcpy(p, &w, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}
/* The unsigned dtype of keys `bits` wide (the tuner's stand-in per width);
 * the narrowest unsigned dtype for a width no dtype has. */
gs_dtype gs_dtype_unsigned(int key_bits);
const char *gs_dtype_name(gs_dtype t);     /* "u32", "f64", ... */
int gs_dtype_parse(const char *s, gs_dtype *out);     /* 0 or GS_EINVAL */
size_t gs_payload_size(gs_payload p);      /* 0, 4 or 8 */
const char *gs_payload_name(gs_payload p); /* "none","u32","u64","idx32","idx64" */
int gs_payload_parse(const char *s, gs_payload *out);

/* What a sort asks for, apart from its arrays and their length: the one
 * type that carries a request's shape from the wire (gs_proto_req)
 * through routing and the plan's key to the algorithms (gs_sort_req), so
 * that a new kind of request (segments, k, a bit range) is a field here
 * that every hop passes on whole. */
typedef struct gs_shape {
    gs_dtype dtype;
    gs_payload payload;
    int descending;      /* 0 ascending, 1 descending; both stable */
    int stable;          /* caller needs stability (for the planner) */
    uint64_t rows;       /* 0 or 1: one array; k > 1: the n keys (and values)
                            are k equal rows of n / k, each sorted on its own
                            (a 2-D array along its last axis; gs_sort.c) */
    int topk;            /* 1: only the first k of each row in this order are
                            asked for (top-k; gs_select.h): they go to the
                            row's first k places, the rest of the row is left
                            unspecified */
    uint64_t k;          /* with topk: 0 .. the row's length */
    int unsorted;        /* with topk: the k may come in any order (the host
                            select skips ordering them) */
    uint64_t segments;   /* 0: none; S >= 1: the n keys (and values) are S
                            segments of any lengths, given by gs_sort_req's
                            offsets, each sorted on its own (CUB's segmented
                            sort; gs_sort.c). Not with rows > 1 or topk */
    unsigned begin_bit;  /* a bit range (issue 39): sort by bits [begin_bit, */
    unsigned end_bit;    /* end_bit) of each key's order code alone (gs_keys.h:
                            an unsigned key itself, a signed one with its sign
                            bit flipped, after a descending order's inversion),
                            as CUB's begin_bit/end_bit; keys equal there keep
                            their input order. end_bit 0: the whole key. Integer
                            keys only; not with rows > 1, topk or segments */
    int narrow;          /* 0: keys of the dtype. Else a 16-bit narrow type
                            (gs_narrow.h: GS_NW_U16, I16, F16 or BF16; dtype u32,
                            one flat array): n such keys of 2 bytes, sorted in
                            that type's order (bfloat16 and half NaNs decode to
                            the canonical one) by an algorithm that takes them
                            (gs_algo.half_keys; gs_narrow_sort.h) */
    int plan16;          /* 1: the keys are 8- or 16-bit keys' words or codes
                            (gs_narrow_sort.h: gs_narrow_job_init sets it), routed
                            by the plan of the 16-bit key class (gs_plans_key_of);
                            the algorithms ignore it */
} gs_shape;

/* Whether s sorts by a bit range, its lowest bit and its width in bits
 * (the whole key's: 0 and the key's bits). */
static inline int gs_shape_has_bits(const gs_shape *s) { return s->end_bit != 0; }
static inline unsigned gs_shape_bit_lo(const gs_shape *s)
{
    return s->end_bit ? s->begin_bit : 0;
}
unsigned gs_shape_bit_width(const gs_shape *s);
/* The bytes of one key as the algorithm holds it: 2 for a narrow type,
 * else the dtype's. */
size_t gs_shape_key_bytes(const gs_shape *s);
/* Whether s is one flat array sorted whole: not rows, segments or top-k. */
static inline int gs_shape_flat(const gs_shape *s)
{
    return s->rows <= 1 && !s->segments && !s->topk;
}

/* The sort request every algorithm serves (gs_sort.h runs it, gs_keys.h
 * encodes its keys). */
typedef struct gs_sort_req {
    gs_shape shape;
    size_t n;
    void *keys;          /* n keys, sorted in place */
    void *values;        /* n payload elements (NULL for GS_PL_NONE); for
                            GS_PL_IDX* an output the algorithm fills */
    const uint64_t *offsets; /* with shape.segments S: S + 1 offsets, 0 first, never
                                decreasing, n last; segment s is [offsets[s],
                                offsets[s + 1]). Read, never written; memory the
                                caller must keep still during the sort (the daemon
                                sorts from its own checked copy) */
} gs_sort_req;

/* ---- parameter sets ---- */
#define GS_MAX_PARAMS 8
#define GS_PARAM_NAME_MAX 32

typedef struct gs_params {
    int count;
    struct { char name[GS_PARAM_NAME_MAX]; long value; } p[GS_MAX_PARAMS];
} gs_params;

void gs_params_clear(gs_params *ps);
int gs_params_set(gs_params *ps, const char *name, long value);   /* add or replace */
int gs_params_has(const gs_params *ps, const char *name);
long gs_params_get(const gs_params *ps, const char *name, long dflt);
/* "radix_bits=4,wg_size=256" (stable order: insertion order). */
int gs_params_format(const gs_params *ps, char *buf, size_t len);
/* Inverse of format; unknown names are accepted here (the algorithm's check
 * rejects them). */
int gs_params_parse(const char *s, gs_params *ps, gs_err *err);
#endif
