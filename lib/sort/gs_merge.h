/* Merging sorted runs on the host, shared by the host candidates that sort
 * pieces and merge them (vqsort) and by the out-of-core and split sorts
 * (gs_ooc.h). Up to GS_MERGE_FANIN runs are merged in one round, k at a
 * time by a loser tree, so every element is read once and written once
 * (pairwise rounds read and wrote it log2(k) times); more runs take more
 * rounds. A round's output is cut into even ranges run as tasks on a team
 * of the shared pool (gs_hostpool.h): a k-way co-rank search finds where
 * each range starts in every run, so every worker writes its own range.
 * Keys are compared as unsigned integers (callers encode them first,
 * gs_keys.h); values of 0, 4 or 8 bytes move with their keys. Ties go to
 * the earlier run, so a merge of stable runs is stable. Runs that are not
 * sorted (a client rewrote them during the merge, issue 32) give a wrong
 * order, never an access outside the arrays, and set `unsorted`. */
#ifndef GS_MERGE_H
#define GS_MERGE_H

#include <stdatomic.h>
#include <stddef.h>

#include "gs_hostpool.h"

/* The most runs one round merges at once. */
#define GS_MERGE_FANIN 64

/* Called on each block of the last round's output just after it was
 * written (still in cache): keys and values [from, from + n) of the array
 * that holds the result. */
typedef void (*gs_merge_post)(void *arg, void *keys, void *vals, size_t n);

typedef struct gs_merge {
    size_t ks, vs;          /* key bytes (4, 8), value bytes (0, 4, 8) */
    void *keys, *vals;      /* the runs, end to end (vals NULL when vs is 0) */
    void *kscr, *vscr;      /* scratch of the same sizes */
    size_t *bounds;         /* run r is [bounds[r], bounds[r+1]); bounds[nruns] = n.
                               Overwritten: the rounds merge it down to one run */
    size_t nruns;
    gs_merge_post post;     /* NULL, or run on the last round's output */
    void *post_arg;
    atomic_int unsorted;    /* out: set (never cleared) when a round found its runs out
                               of order (their memory changed during the merge); the
                               output then holds only the runs' keys and values, in
                               bounds, but not sorted (some may repeat, others go) */
} gs_merge;

/* Merge every run into one, in rounds of up to GS_MERGE_FANIN runs, each
 * group's output cut into `parts` ranges run as tasks on the team. Returns
 * 1 when the result lies in the scratch arrays, 0 when in keys/vals (one
 * run: nothing moved, and post is not called); *rounds (may be NULL) gets
 * the number of rounds. */
int gs_merge_runs(gs_hostpool_team *team, unsigned parts, gs_merge *m, unsigned *rounds);

#endif
