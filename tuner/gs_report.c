/* The table `gsortd --tune-all` prints at the end of a run: per device its
 * trial counts against the budget, every group's winner (kernel and end to
 * end times, parameters) and the serving plan for any and for stable
 * callers. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *param_cell(const char *json, char *buf, size_t len)
{
    gs_params p;
    if (gs_params_from_json(json, &p, NULL) != 0)
        return json;
    gs_tune_params_text(&p, buf, len);
    return buf;
}

/* The rows of sizes not measured (between sparse large-n buckets, and past
 * the largest measured one), one line per shape and stability: which
 * algorithm serves which sizes, runs of consecutive sizes joined. */
static void print_predicted(FILE *out, const gs_tune_devreport *R)
{
    int header = 0;
    for (size_t i = 0; i < R->nplan; i++) {
        const gs_tune_planrow *p = &R->plan[i];
        if (!p->extrapolated)
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(R->plan[j].extrapolated && R->plan[j].key_bits == p->key_bits &&
                      R->plan[j].payload == p->payload && R->plan[j].stable == p->stable);
        if (!first)
            continue;
        if (!header) {
            fprintf(out, "  Sizes not measured (predicted from each candidate's measured "
                    "scaling: ~ between measured sizes, > past the largest)\n");
            header = 1;
        }
        char line[1024];
        size_t len = 0;
        const gs_tune_planrow *run = NULL;
        int last = -2;
        line[0] = '\0';
        for (size_t j = i; j <= R->nplan; j++) {
            const gs_tune_planrow *q = j < R->nplan ? &R->plan[j] : NULL;
            if (q && (!q->extrapolated || q->key_bits != p->key_bits ||
                      q->payload != p->payload || q->stable != p->stable))
                continue;
            if (run && (!q || q->bucket != last + 1 || strcmp(q->algorithm, run->algorithm) ||
                        q->extrapolated != run->extrapolated)) {
                char span[32];
                if (run->bucket == last)
                    snprintf(span, sizeof span, "2^%d", last);
                else
                    snprintf(span, sizeof span, "2^%d..2^%d", run->bucket, last);
                int w = snprintf(line + len, sizeof line - len, "%s%s%s %s", len ? ", " : "",
                                 run->extrapolated == GS_DB_PLAN_INTERPOLATED ? "~" : ">",
                                 run->algorithm, span);
                len += w > 0 ? (size_t)w : 0;
                if (len >= sizeof line)
                    len = sizeof line - 1;
                run = NULL;
            }
            if (q) {
                if (!run)
                    run = q;
                last = q->bucket;
            }
        }
        fprintf(out, "    %-4s %-7s %-6s %s\n", gs_kw_name(p->key_bits),
                gs_payload_name(p->payload), p->stable ? "stable" : "any", line);
    }
}

void gs_tune_report_print(FILE *out, const gs_tune_report *rep)
{
    for (size_t d = 0; d < rep->ndevs; d++) {
        const gs_tune_devreport *R = &rep->devs[d];
        char pb[300];
        /* Both numberings: the OpenCL index of --list-devices and --device,
         * and the database id that gsort-query shows. */
        if (R->device_id > 0)
            fprintf(out, "Device %d (database id %lld): %s (%s)\n", R->index,
                    (long long)R->device_id, R->name, R->platform);
        else
            fprintf(out, "Device %d: %s (%s)\n", R->index, R->name, R->platform);
        fprintf(out, "  %lu trials measured, %lu reused, %lu invalid; %.1f s of a %.0f s budget%s\n",
                R->measured, R->reused, R->invalid, R->elapsed_s, R->budget_s,
                R->failed ? "; stopped by an error" : R->budget_hit ? " (used up)" : "");
        if (R->pruned || R->refined)
            fprintf(out, "  %u (algorithm, large size) pair(s) skipped as far behind below; "
                    "%u search(es) widened with time left over\n", R->pruned, R->refined);
        fprintf(out, "  Winners (median ms: kernel time from profiling events, host: wall clock;\n"
                     "  end-to-end: wall clock with transfers)\n");
        fprintf(out, "    %-10s %-4s %-7s %-5s %12s %12s  %s\n", "algorithm", "keys", "payload",
                "n", "median ms", "end-to-end", "params");
        for (size_t i = 0; i < R->nwinners; i++) {
            const gs_tune_winner *w = &R->winners[i];
            char e2e[32];
            if (w->e2e_ms >= 0)
                snprintf(e2e, sizeof e2e, "%12.4f", w->e2e_ms);
            else
                snprintf(e2e, sizeof e2e, "%12s", "-");
            fprintf(out, "    %-10s %-4s %-7s 2^%-3d %12.4f %s  %s%s\n", w->algorithm,
                    gs_kw_name(w->key_bits), gs_payload_name(w->payload),
                    w->bucket, w->median_ms, e2e, param_cell(w->params, pb, sizeof pb),
                    w->tuned ? "" : " (the defaults)");
        }
        if (!R->nwinners)
            fprintf(out, "    (none)\n");
        fprintf(out, "  Plan (fastest end to end, ms; \"stable\": for callers that need a stable sort;\n"
                     "  x untuned: its time over the untuned daemon's choice, measured in the same run)\n");
        fprintf(out, "    %-4s %-7s %-5s %-34s %-10s %s\n", "keys", "payload", "n", "any",
                "x untuned", "stable");
        for (size_t i = 0; i < R->nplan; i++) {
            const gs_tune_planrow *p = &R->plan[i], *q = NULL;
            if (p->stable || p->extrapolated)
                continue;
            for (size_t j = 0; j < R->nplan; j++)
                if (R->plan[j].stable && !R->plan[j].extrapolated &&
                    R->plan[j].key_bits == p->key_bits &&
                    R->plan[j].payload == p->payload && R->plan[j].bucket == p->bucket)
                    q = &R->plan[j];
            char any[700], stb[700];
            snprintf(any, sizeof any, "%s %.4f", p->algorithm, p->ms);
            if (strcmp(p->params, "{}") != 0) {
                size_t l = strlen(any);
                snprintf(any + l, sizeof any - l, " (%.300s)", param_cell(p->params, pb, sizeof pb));
            }
            if (!q)
                snprintf(stb, sizeof stb, "-");
            else if (!strcmp(q->algorithm, p->algorithm) && !strcmp(q->params, p->params))
                snprintf(stb, sizeof stb, "same");
            else
                snprintf(stb, sizeof stb, "%s %.4f%s%.300s%s", q->algorithm, q->ms,
                         strcmp(q->params, "{}") ? " (" : "",
                         strcmp(q->params, "{}") ? param_cell(q->params, pb, sizeof pb) : "",
                         strcmp(q->params, "{}") ? ")" : "");
            char vs[32] = "-";
            if (p->base_ms > 0 && p->ms > 0)
                snprintf(vs, sizeof vs, "%.2f", p->ms / p->base_ms);
            fprintf(out, "    %-4s %-7s 2^%-3d %-34s %-10s %s\n",
                    gs_kw_name(p->key_bits), gs_payload_name(p->payload),
                    p->bucket, any, vs, stb);
        }
        if (!R->nplan)
            fprintf(out, "    (none)\n");
        print_predicted(out, R);
    }
}

void gs_tune_report_free(gs_tune_report *rep)
{
    for (size_t d = 0; d < rep->ndevs; d++) {
        free(rep->devs[d].winners);
        free(rep->devs[d].plan);
    }
    free(rep->devs);
    memset(rep, 0, sizeof *rep);
}
