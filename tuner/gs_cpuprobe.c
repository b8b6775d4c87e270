/* The CPU probe (gs_tune_opts.cpu_probe; docs/TUNING.md): on a CPU device
 * the device algorithms run on the very cores the host sorts use, and a
 * first program build takes up to a minute, so before any program is warmed
 * each device algorithm's defaults are timed once at the probe shape
 * (gs_tune_probe_shape, at the probe group's bucket) beside the host sorts'
 * defaults,
 * and one more than GS_TUNE_CPU_DROP times the fastest host sort is left
 * out of the tune, said once in the report. The trials are recorded as any
 * other, so the probe group reuses them and the next run decides without a
 * build; in GS_TUNE_PROBE_RECORDED mode (--quick) an algorithm with no
 * recorded probe is left out unbuilt. What a trial is, and its budget, is
 * the tuning loop's (gs_tune.c), which calls this file and which this file
 * reaches only through the callbacks it is given (gs_tune_probe_fns), so
 * that the two do not call each other. */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <stdio.h>
#include <string.h>

#include "gs_log.h"

void gs_tune_probe_shape(const gs_tune_opts *o, int *kc, gs_payload *pl)
{
    *kc = o->key_bits[0];
    *pl = o->payloads[0];
    for (size_t pi = 0; pi < o->npayloads; pi++)
        if (o->payloads[pi] == GS_PL_NONE)
            *pl = GS_PL_NONE;
}

int gs_tune_probe_cpu(gs_dev *dev, gs_pcache *pc, const gs_tune_opts *o, int probe_b,
                      gs_tune_probe_algo *A, size_t na, const gs_tune_probe_fns *f,
                      gs_tune_devreport *R, gs_err *err)
{
    if (!R->cpu || o->cpu_probe == GS_TUNE_PROBE_OFF)
        return 0;
    int kc;
    gs_payload pl;
    gs_tune_probe_shape(o, &kc, &pl);
    char unprobed[256] = "";
    const gs_algo *build[64];
    size_t nbuild = 0, ndevalgo = 0;
    for (size_t i = 0; i < na; i++) {
        gs_tune_probe_algo *S = &A[i];
        if (!S->ok || !S->a->uses_device || !S->serves)
            continue;
        ndevalgo++;
        if (f->recorded(f->ud, i, kc, pl))
            continue;
        if (o->cpu_probe == GS_TUNE_PROBE_RECORDED) {
            S->ok = 0;
            size_t l = strlen(unprobed);
            snprintf(unprobed + l, sizeof unprobed - l, "%s%s", l ? ", " : "", S->a->name);
        } else if (nbuild < 64) {
            build[nbuild++] = S->a;
        }
    }
    if (!ndevalgo)
        return 0;
    /* The programs the probe needs are built side by side first
     * (gs_prebuild.c), for the probe's shape alone, then each algorithm is
     * timed alone. */
    if (nbuild) {
        gs_tune_opts po = *o;
        po.key_bits[0] = kc;
        po.nkey_bits = 1;
        po.payloads[0] = pl;
        po.npayloads = 1;
        f->phase(f->ud, "probe", "building programs");
        gs_tune_prebuild(dev, pc, &po, build, nbuild);
    }
    double host = -1, ms[64];
    int valid[64], rc = 0;
    const char *host_name = "";
    for (int pass = 0; pass < 2 && !rc; pass++) {       /* host sorts first */
        for (size_t i = 0; i < na && i < 64 && !rc; i++) {
            gs_tune_probe_algo *S = &A[i];
            ms[i] = -1;
            valid[i] = 0;
            if (!S->ok || !S->serves || S->a->uses_device != pass)
                continue;
            f->phase(f->ud, "probe", S->a->name);
            rc = f->measure(f->ud, i, kc, pl, &ms[i], &valid[i], err);
            if (rc == GS_TUNE_STOP)     /* cancelled */
                rc = 0;
            if (!pass && valid[i] && (host < 0 || ms[i] < host)) {
                host = ms[i];
                host_name = S->a->name;
            }
        }
        if (!pass && host < 0)
            break;                      /* no host time to compare with: tune them all */
    }
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < na && i < 64 && host > 0; i++) {
        gs_tune_probe_algo *S = &A[i];
        if (!S->ok || !S->a->uses_device || !S->serves)
            continue;
        if (valid[i] && ms[i] <= GS_TUNE_CPU_DROP * host)
            continue;
        S->ok = 0;
        size_t l = strlen(R->dropped);
        if (valid[i])
            snprintf(R->dropped + l, sizeof R->dropped - l, "%s%s %.1fx", l ? ", " : "",
                     S->a->name, ms[i] / host);
        else
            snprintf(R->dropped + l, sizeof R->dropped - l, "%s%s (its probe failed)",
                     l ? ", " : "", S->a->name);
    }
    if (R->dropped[0]) {
        size_t l = strlen(R->dropped);
        snprintf(R->dropped + l, sizeof R->dropped - l, " the time of %s at %s keys, 2^%d",
                 host_name, gs_kw_name(kc), probe_b);
    }
    if (unprobed[0]) {
        size_t l = strlen(R->dropped);
        snprintf(R->dropped + l, sizeof R->dropped - l, "%s%s (not probed: a quick tune builds "
                 "no program on a CPU device; a full tune probes each once)", l ? "; " : "",
                 unprobed);
    }
    if (R->dropped[0])
        GS_DEBUG("%s: not tuned on this CPU device: %s", dev->info.name, R->dropped);
    return 0;
}
