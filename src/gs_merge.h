/* Merging sorted runs on the host, shared by the host candidates that sort
 * pieces and merge them (vqsort) and by the out-of-core and split sorts
 * (gs_chunk.h): the runs are merged pairwise in rounds, and each pair's
 * merge is split among a team of the shared pool (gs_hostpool.h) by merge
 * path (co-ranks), so every worker writes its own output range. Keys are
 * compared as unsigned integers (callers encode them first, gs_keys.h);
 * values of 0, 4 or 8 bytes move with their keys. Ties go to the earlier
 * run, so a merge of stable runs is stable. */
#ifndef GS_MERGE_H
#define GS_MERGE_H

#include <stddef.h>

#include "gs_hostpool.h"

typedef struct gs_merge {
    size_t ks, vs;          /* key bytes (4, 8), value bytes (0, 4, 8) */
    void *keys, *vals;      /* the runs, end to end (vals NULL when vs is 0) */
    void *kscr, *vscr;      /* scratch of the same sizes */
    size_t *bounds;         /* run r is [bounds[r], bounds[r+1]); bounds[nruns] = n.
                               Overwritten: the rounds merge it down to one run */
    size_t nruns;
} gs_merge;

/* Merge every run into one, in rounds of pairwise merges, each pair's
 * output cut into `parts` ranges run as tasks on the team. Returns 1 when
 * the result lies in the scratch arrays, 0 when in keys/vals; *rounds (may
 * be NULL) gets the number of rounds. */
int gs_merge_runs(gs_hostpool_team *team, unsigned parts, gs_merge *m, unsigned *rounds);

#endif
