/* A file embedded into the binary at build time by tools/embed-files
 * (kernel sources, database migrations). */
#ifndef GS_EMBED_H
#define GS_EMBED_H

#include <stddef.h>

typedef struct gs_embed {
    const char *name;   /* file name without its extension: "radix", "001_initial" */
    const char *text;   /* NUL-terminated contents */
    size_t len;
} gs_embed;

#endif
