/* Sorting by a bit range (gs_shape's begin_bit/end_bit, issue 39) with an
 * algorithm that sorts whole keys: gs_sort_run comes here for algorithms
 * without gs_algo.bit_range. gs_bits_words makes the request of the
 * range's words, sorted stably with the keys or their indices as payload,
 * which gs_sort_run then runs; gs_bits_answer writes the answer from it
 * (gs_bits.c). */
#ifndef GS_BITS_H
#define GS_BITS_H

#include "gs_types.h"

typedef struct gs_bits_job {
    const gs_sort_req *req;   /* the caller's request, with a bit range */
    gs_sort_req words;        /* the words' request: stable, ascending */
    unsigned lo, width;
    size_t ks, vs, wb, ib;    /* key, value (u32/u64 values only), word, index bytes */
    void *carry;              /* keys alone: the keys, the words' payload */
    void *keys, *vals;        /* with values: copies of keys and values (vals:
                                 NULL for argsort) */
    void *idx;                /* with values: the words' argsort (argsort: the
                                 caller's own output) */
    int one_thread;
} gs_bits_job;

/* The words of req's range into jb->words, and private copies of keys and
 * values, read once; one_thread: on the calling thread only (a client
 * library's process keeps no pool). 0, or GS_ENOMEM (jb freed). */
int gs_bits_words(gs_bits_job *jb, const gs_sort_req *req, int one_thread, gs_err *err);
/* After jb->words was sorted: the caller's keys (and values) in the
 * range's order. */
void gs_bits_answer(const gs_bits_job *jb);
void gs_bits_free(gs_bits_job *jb);

#endif
