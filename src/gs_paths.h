/* STUB: default directories (to be written). */
#ifndef GS_PATHS_H
#define GS_PATHS_H
#endif
