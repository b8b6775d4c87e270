/* Kernel sources. The .cl files under kernels/ are embedded into the binary
 * at build time (tools/embed-files writes kernels_gen.c), so an installed
 * gsortd needs no source path. For development, gs_kern_set_dir makes the
 * lookups read DIR/NAME.cl instead. */
#ifndef GS_KERN_H
#define GS_KERN_H

#include <stddef.h>
#include "gs_embed.h"
#include "gs_err.h"

typedef gs_embed gs_kern_src;   /* name is the file name without .cl */

/* The embedded table (generated). */
extern const gs_kern_src gs_kern_embedded[];
extern const size_t gs_kern_embedded_count;

/* Use DIR/NAME.cl instead of the embedded copy (NULL: back to embedded). */
void gs_kern_set_dir(const char *dir);
const char *gs_kern_get_dir(void);

/* Extra compiler options appended to every program build (development:
 * gsort-bench --cl-opts, e.g. NVIDIA's -cl-nv-maxrregcount=64); NULL: none. */
void gs_kern_set_opts(const char *opts);
const char *gs_kern_get_opts(void);

/* Source of kernel NAME: *text is malloc'ed (caller frees), NUL-terminated. */
int gs_kern_load(const char *name, char **text, size_t *len, gs_err *err);

/* Hex SHA-256 over gsortd's version and every kernel source as gs_kern_load
 * sees it (embedded, or from the kernel dir): measurements taken with other
 * code are not reused. hex must hold 65 bytes. */
int gs_kern_code_id(char *hex, gs_err *err);

#endif
