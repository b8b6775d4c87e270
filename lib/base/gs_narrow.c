/* The narrow key types' table (gs_narrow.h). */
#include "config.h"
#include "gs_narrow.h"

#include <string.h>

static const gs_narrow_info rows[GS_NW_COUNT] = {
    [GS_NW_U8] = { "u8", "uint8", 1, GS_KIND_UNSIGNED },
    [GS_NW_I8] = { "i8", "int8", 1, GS_KIND_SIGNED },
    [GS_NW_U16] = { "u16", "uint16", 2, GS_KIND_UNSIGNED },
    [GS_NW_I16] = { "i16", "int16", 2, GS_KIND_SIGNED },
    [GS_NW_F16] = { "f16", "float16", 2, GS_KIND_FLOAT },
    [GS_NW_BF16] = { "bf16", "bfloat16", 2, GS_KIND_FLOAT },
};

const gs_narrow_info *gs_narrow_row(int t)
{
    return t > GS_NW_NONE && t < GS_NW_COUNT ? &rows[t] : NULL;
}

int gs_narrow_find(const char *s)
{
    for (int t = GS_NW_NONE + 1; s && t < GS_NW_COUNT; t++)
        if (!strcmp(s, rows[t].name) || !strcmp(s, rows[t].np_name))
            return t;
    return GS_NW_NONE;
}

const char *gs_narrow_list(void)
{
    return "u8, i8, u16, i16, f16, bf16";
}
