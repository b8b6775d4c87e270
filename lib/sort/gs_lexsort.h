/* Running a lexsort (gs_lex.h): the keys of each group packed into
 * composite words, on every core of the host pool, and one stable argsort
 * of the words per group through a caller's function (the daemon's route:
 * a device's sort, out of core where it must be, or the host sort),
 * chained from the least significant group: each later group's words are
 * packed in the order the earlier sorts left, and the permutations
 * composed. The key arrays are only read, each once per group it belongs
 * to, so a caller can always run a failed lexsort again elsewhere. */
#ifndef GS_LEXSORT_H
#define GS_LEXSORT_H

#include <stddef.h>

#include "gs_lex.h"
#include "gs_sort.h"

/* One stable ascending argsort of req (unsigned words, IDX payload). */
typedef int (*gs_lexsort_fn)(void *arg, const gs_sort_req *req, gs_sort_stats *st,
                             gs_err *err);

typedef struct gs_lexsort_job {
    const gs_lex *lx;
    const void *key[GS_LEX_MAX_KEYS];   /* key j's n elements (lx's order) */
    size_t n;
    void *words;        /* n words of gs_lex_word_bytes(lx) bytes */
    void *scratch;      /* gs_lexsort_scratch(lx, n) bytes (NULL when 0) */
    void *out;          /* n indices of type idx: the answer */
    gs_payload idx;     /* GS_PL_IDX32 (n <= 2^32) or GS_PL_IDX64 */
    int one_thread;     /* pack on the caller's thread only (a client library's
                           process keeps no pool of threads) */
} gs_lexsort_job;

/* The scratch a lexsort of n rows needs besides its words: none for one
 * group, else two index arrays. */
size_t gs_lexsort_scratch(const gs_lex *lx, size_t n);

/* Sort: jb->out gets the indices that order the rows by the keys, ties in
 * row order. st sums the sorts' figures; st->pack_ms is the packing's wall
 * clock. A failing sort's error is returned as it is, with
 * st->output_touched cleared: the keys are never written. */
int gs_lexsort_run(const gs_lexsort_job *jb, gs_lexsort_fn fn, void *arg, gs_sort_stats *st,
                   gs_err *err);

#endif
