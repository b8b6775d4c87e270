/* The vocabulary of a lexsort request, shared by the protocol, the clients
 * and the daemon: the key types a lexsort takes (those of a sort, and bool,
 * 8- and 16-bit integers and IEEE half floats), a request's list of keys
 * (primary first, each with its order) and where each key array lies, the
 * order-keeping encoding of one key into an unsigned word of the key's
 * width, and the grouping of keys into composite words of at most 64 bits.
 * A lexsort is sorted as composites: the keys of a group packed side by
 * side, the primary in the highest bits, so that one stable argsort of the
 * composites orders by all of them; more keys than 64 bits hold take
 * several groups, chained from the least significant (gs_lexsort.h). The
 * order is np.lexsort's: -0.0 and +0.0 are one key, every NaN one key
 * after +inf (descending: before everything). */
#ifndef GS_LEX_H
#define GS_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gs_err.h"
#include "gs_types.h"

#define GS_LEX_MAX_KEYS 8

typedef enum gs_lex_dt {
    GS_LX_BOOL = 0, GS_LX_U8, GS_LX_I8, GS_LX_U16, GS_LX_I16, GS_LX_F16,
    GS_LX_U32, GS_LX_I32, GS_LX_F32, GS_LX_U64, GS_LX_I64, GS_LX_F64, GS_LX_COUNT
} gs_lex_dt;

typedef struct gs_lex_dtinfo {
    const char *name;          /* "u16", the protocol's word */
    unsigned bytes;            /* 1, 2, 4 or 8 in memory */
    unsigned bits;             /* bits its encoding takes (bool: 1) */
    enum gs_dtype_kind kind;
} gs_lex_dtinfo;

/* The row of t, or NULL outside the enum. */
const gs_lex_dtinfo *gs_lex_dt_row(int t);
/* The type named s (a protocol word, or numpy's name: "uint16", "bool"):
 * its enum value, or -1. */
int gs_lex_dt_find(const char *s);
/* "bool, u8, ..." for messages (a static string). */
const char *gs_lex_dt_list(void);

typedef struct gs_lex_key {
    int dt;             /* gs_lex_dt */
    int desc;           /* 1: this key descending */
    uint64_t offset;    /* its array's first byte, from the first key's (gs_lex_layout) */
} gs_lex_key;

typedef struct gs_lex {
    unsigned nkeys;     /* 0: not a lexsort; 1 .. GS_LEX_MAX_KEYS */
    gs_lex_key key[GS_LEX_MAX_KEYS];    /* the primary first */
} gs_lex;

/* Where the key arrays of n rows lie: one after another in key order, each
 * from a multiple of 8 bytes (so that every array is aligned for its type
 * wherever the first is 8-aligned). Sets each key's offset and *bytes, the
 * end of the last array. GS_ETOOBIG when the sizes overflow 64 bits. */
int gs_lex_layout(gs_lex *lx, uint64_t n, uint64_t *bytes, gs_err *err);

/* The keys' groups, least significant first: group g is the keys
 * first[g] .. first[g] + count[g] - 1 of lx (primary-first indices), whose
 * widths add up to bits[g] <= 64. Returns the number of groups (1 ..
 * nkeys). */
unsigned gs_lex_groups(const gs_lex *lx, unsigned first[GS_LEX_MAX_KEYS],
                       unsigned count[GS_LEX_MAX_KEYS], unsigned bits[GS_LEX_MAX_KEYS]);
/* The composite width the sort uses for every group: 4 bytes when every
 * group fits 32 bits, else 8. */
unsigned gs_lex_word_bytes(const gs_lex *lx);

/* Key i of an array of type t, encoded: an unsigned number of the type's
 * bits whose plain order is the key order (desc: reversed). Inline: the
 * packing loops call it for every key. A hostile byte (a bool that is not
 * 0 or 1) still encodes into the key's bits. */
static inline uint64_t gs_lex_enc(int t, int desc, const void *keys, size_t i)
{
    uint64_t w, top;
    unsigned bits;
    switch (t) {
    case GS_LX_BOOL: w = ((const uint8_t *)keys)[i] != 0; bits = 1; break;
    case GS_LX_U8: w = ((const uint8_t *)keys)[i]; bits = 8; break;
    case GS_LX_I8: w = ((const uint8_t *)keys)[i] ^ 0x80u; bits = 8; break;
    case GS_LX_U16: case GS_LX_I16: case GS_LX_F16: {
        uint16_t v;
        memcpy(&v, (const char *)keys + 2 * i, 2);
        w = v;
        bits = 16;
        if (t == GS_LX_I16)
            w ^= 0x8000u;
        break;
    }
    case GS_LX_U32: case GS_LX_I32: case GS_LX_F32: {
        uint32_t v;
        memcpy(&v, (const char *)keys + 4 * i, 4);
        w = v;
        bits = 32;
        if (t == GS_LX_I32)
            w ^= UINT32_C(0x80000000);
        break;
    }
    default: {
        uint64_t v;
        memcpy(&v, (const char *)keys + 8 * i, 8);
        w = v;
        bits = 64;
        if (t == GS_LX_I64)
            w ^= UINT64_C(0x8000000000000000);
        break;
    }
    }
    top = UINT64_MAX >> (64 - bits);
    if (t == GS_LX_F16 || t == GS_LX_F32 || t == GS_LX_F64) {
        uint64_t sign = UINT64_C(1) << (bits - 1), abs = w & (sign - 1);
        uint64_t inf = t == GS_LX_F16 ? 0x7c00u : t == GS_LX_F32 ? UINT64_C(0x7f800000)
                                                                 : UINT64_C(0x7ff0000000000000);
        if (abs > inf)
            w = top;                    /* every NaN one key, above +inf */
        else if (abs == 0)
            w = sign;                   /* -0.0 as +0.0 */
        else
            w = (w & sign) ? ~w & top : w | sign;
    }
    return desc ? top - w : w;
}

#endif
