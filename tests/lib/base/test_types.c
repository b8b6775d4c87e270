/* Key widths as numbers (lib/base/gs_types.h): every width index maps to
 * its bits and back, the unsigned stand-in of each width has that width,
 * unknown widths are refused, and keys of each width are read and written
 * at their own width without touching their neighbours. */
#include "config.h"
#include "gs_types.h"
#include "gs_keys.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    int ok = 1;
    for (int w = 0; w < GS_KW_COUNT; w++) {
        int bits = gs_kw_bits(w);
        gs_dtype u = gs_dtype_unsigned(bits);
        /* a dtype's width has its unsigned dtype; the narrow keys' (16) has none */
        int dtw = bits != 16;
        char want[8];
        snprintf(want, sizeof want, "u%d", bits);
        if (bits <= 0 || gs_kw_find(bits) != w || gs_kw_index(bits) != w ||
            strcmp(gs_kw_name(bits), want) ||
            (dtw && (gs_dtype_size(u) * 8 != (size_t)bits ||
                     gs_dtype_row(u)->kind != GS_KIND_UNSIGNED))) {
            ok = 0;
            tap_diag("width %d: %d bits, found %d, unsigned dtype %s, named %s", w, bits,
                     gs_kw_find(bits), gs_dtype_name(u), gs_kw_name(bits));
        }
    }
    tap_ok(ok, "each of the %d key widths maps to its bits, back, to its name and (32, 64) to "
           "an unsigned dtype of that width", GS_KW_COUNT);
    tap_ok(gs_kw_find(16) == GS_KW_16 && gs_kw_index(16) == GS_KW_16 && GS_KW_16 == GS_KW_COUNT - 1,
           "the narrow keys' width, 16, has the last index: a plan of 32- or 64-bit keys is "
           "nearer to either");
    tap_ok(gs_kw_bits(32) == 0 || GS_KW_COUNT > 32, "an index past the widths has no bits");
    tap_ok(gs_kw_find(48) < 0 && gs_kw_find(0) < 0 && gs_kw_find(-32) < 0,
           "48, 0 and -32 bits are no key width");
    tap_ok(!strcmp(gs_kw_list(), "16, 32 or 64"), "the widths for a message: \"%s\"",
           gs_kw_list());
    ok = 1;
    for (int w = 0; w < GS_KW_COUNT; w++) {
        char b[16];
        snprintf(b, sizeof b, "%d", gs_kw_bits(w));
        ok &= strstr(gs_kw_list(), b) != NULL;
    }
    tap_ok(ok, "the message names every width of the table");
    /* every dtype's width is a known one, so plans and tables have its row */
    ok = 1;
    for (int t = 0; t < GS_DT_COUNT; t++)
        ok &= gs_kw_find((int)gs_dtype_size((gs_dtype)t) * 8) >= 0;
    tap_ok(ok, "every dtype's width is one of the key widths");

    /* get and put at each width, the neighbours untouched */
    unsigned char buf[3 * 8];
    ok = 1;
    for (size_t bytes = 1; bytes <= 8; bytes *= 2) {
        memset(buf, 0xA5, sizeof buf);
        uint64_t v = 0x0123456789abcdefull & gs_key_max(bytes);
        gs_key_put(buf, 1, bytes, v);
        ok &= gs_key_get(buf, 1, bytes) == v;
        ok &= gs_key_get(buf, 0, bytes) == (0xa5a5a5a5a5a5a5a5ull & gs_key_max(bytes));
        ok &= gs_key_get(buf, 2, bytes) == (0xa5a5a5a5a5a5a5a5ull & gs_key_max(bytes));
        if (!ok)
            tap_diag("%zu-byte keys: put %llx, got %llx", bytes, (unsigned long long)v,
                     (unsigned long long)gs_key_get(buf, 1, bytes));
    }
    tap_ok(ok, "a key of 1, 2, 4 or 8 bytes is written and read at its own width, its "
           "neighbours untouched");

    /* the width-free encoding orders as the typed ones do */
    const int32_t i32[] = { -5, 3 };
    const double f64[] = { -1.5, 0.25 };
    const uint32_t u32[] = { 7, 9 };
    tap_ok(gs_key_encoded(GS_DT_I32, 0, i32, 0) < gs_key_encoded(GS_DT_I32, 0, i32, 1) &&
           gs_key_encoded(GS_DT_F64, 0, f64, 0) < gs_key_encoded(GS_DT_F64, 0, f64, 1) &&
           gs_key_encoded(GS_DT_U32, 1, u32, 0) > gs_key_encoded(GS_DT_U32, 1, u32, 1) &&
           gs_key_encoded(GS_DT_U32, 0, u32, 1) == gs_key32_encode(GS_DT_U32, 0, 9),
           "encoded keys of any width compare as their values do (i32, f64, u32 descending)");
    return tap_done();
}
