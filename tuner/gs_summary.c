/* The short report that `gsortd --tune-all` prints (gs_tune.h,
 * gs_tune_report_summary): a few lines per device that say what the tune
 * did and what it decided, for a person at a terminal. Per device: trials
 * and time, the device algorithms a CPU probe left out and why, then the
 * plan per request shape as runs of sizes served by one algorithm, with the
 * geometric mean of the untuned daemon's time over the plan's where both
 * were measured. Every row, its parameters and times stay in the database
 * (gsort-query plan, winners) and in `--tune-all --verbose`. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *payload_words(gs_payload p)
{
    switch (p) {
    case GS_PL_NONE: return "keys alone";
    case GS_PL_U32: return "+ u32 values";
    case GS_PL_U64: return "+ u64 values";
    case GS_PL_IDX32: return "argsort idx32";
    case GS_PL_IDX64: return "argsort idx64";
    default: return "?";
    }
}

/* "host 2^10..2^15, vqsort 2^16..2^28" for one shape and stability. */
static void ranges(const gs_tune_devreport *R, int kb, gs_payload pl, int stable, char *buf,
                   size_t len)
{
    size_t used = 0;
    const gs_tune_planrow *run = NULL;
    int last = -2;
    buf[0] = '\0';
    for (int b = 0; b <= GS_TUNE_MAX_LOG2 + 1; b++) {
        const gs_tune_planrow *q = NULL;
        for (size_t i = 0; b <= GS_TUNE_MAX_LOG2 && i < R->nplan && !q; i++)
            if (R->plan[i].key_bits == kb && R->plan[i].payload == pl &&
                R->plan[i].stable == stable && R->plan[i].bucket == b)
                q = &R->plan[i];
        if (run && (!q || q->bucket != last + 1 || strcmp(q->algorithm, run->algorithm))) {
            int w = run->bucket == last
                        ? snprintf(buf + used, len - used, "%s%s 2^%d", used ? ", " : "",
                                   run->algorithm, last)
                        : snprintf(buf + used, len - used, "%s%s 2^%d..2^%d", used ? ", " : "",
                                   run->algorithm, run->bucket, last);
            if (w > 0)
                used = used + (size_t)w < len ? used + (size_t)w : len - 1;
            run = NULL;
        }
        if (q) {
            if (!run)
                run = q;
            last = q->bucket;
        }
    }
}

void gs_tune_report_summary(FILE *out, const gs_tune_report *rep)
{
    for (size_t d = 0; d < rep->ndevs; d++) {
        const gs_tune_devreport *R = &rep->devs[d];
        if (R->device_id > 0)
            fprintf(out, "Device %d (database id %lld): %s (%s)\n", R->index,
                    (long long)R->device_id, R->name, R->platform);
        else
            fprintf(out, "Device %d: %s (%s)\n", R->index, R->name, R->platform);
        unsigned tuned = 0;
        for (size_t i = 0; i < R->nwinners; i++)
            tuned += R->winners[i].tuned != 0;
        fprintf(out, "  %lu trials measured, %lu reused, %lu invalid in %.1f s of a %.0f s "
                "budget%s", R->measured, R->reused, R->invalid, R->elapsed_s, R->budget_s,
                R->failed ? " (stopped by an error)" : R->budget_hit ? " (used up)" : "");
        if (R->prebuild_s + R->probe_s >= 0.05)
            fprintf(out, ", +%.1f s of program builds", R->prebuild_s + R->probe_s);
        fprintf(out, "; %u of %zu winners beat their defaults\n", tuned, R->nwinners);
        if (R->dropped[0])
            fprintf(out, "  Not tuned on this CPU device (far behind the host sort): %s\n",
                    R->dropped);
        if (!R->nplan) {
            fprintf(out, "  Plan: none (nothing valid was measured)\n");
            continue;
        }
        fprintf(out, "  Plan (algorithm by size; x: the untuned daemon's time over the plan's, "
                "measured sizes)\n");
        for (int w = 0; w < GS_KW_COUNT; w++)
            for (int pl = 0, kb = gs_kw_bits(w); pl < GS_PL_COUNT; pl++) {
                char any[600], stb[600];
                ranges(R, kb, (gs_payload)pl, 0, any, sizeof any);
                if (!any[0])
                    continue;
                ranges(R, kb, (gs_payload)pl, 1, stb, sizeof stb);
                double logsum = 0;
                unsigned k = 0;
                for (size_t i = 0; i < R->nplan; i++) {
                    const gs_tune_planrow *p = &R->plan[i];
                    if (p->key_bits == kb && p->payload == (gs_payload)pl && !p->stable &&
                        !p->extrapolated && p->ms > 0 && p->base_ms > 0) {
                        logsum += log(p->base_ms / p->ms);
                        k++;
                    }
                }
                char gain[32] = "";
                if (k)
                    snprintf(gain, sizeof gain, "%.2fx", exp(logsum / k));
                char shape[48];
                snprintf(shape, sizeof shape, "%s %s", gs_kw_name(kb),
                         payload_words((gs_payload)pl));
                fprintf(out, "    %-18s %-52s %6s\n", shape, any, gain);
                if (stb[0] && strcmp(stb, any))
                    fprintf(out, "    %-18s %s\n", "  stable callers", stb);
            }
    }
}
