/* The tuner's parameter spaces and options. A space is every legal value
 * of each of an algorithm's parameters on one device (from the registry's
 * param defs, narrowed by --restrict), numbered by a mixed-radix code so
 * that the sampler and the search deal in integers; the options' defaults
 * grow with the budget (see docs/TUNING.md). */
#include "config.h"
#include "gs_tune.h"
#include "gs_tune_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values that `spec` allows for `name`: 0 and *found = 0 when it does not
 * name it; GS_EINVAL on bad syntax. */
static int restrict_lookup(const char *spec, const char *name, long *vals, size_t cap,
                           size_t *nvals, int *found, gs_err *err)
{
    *found = 0;
    *nvals = 0;
    const char *p = spec;
    while (p && *p) {
        const char *eq = strchr(p, '=');
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end || eq == p)
            return gs_err_set(err, GS_EINVAL, "--restrict \"%s\": expected NAME=V[:V...] "
                              "items separated by ','", spec);
        int match = (size_t)(eq - p) == strlen(name) && !strncmp(p, name, (size_t)(eq - p));
        const char *v = eq + 1;
        size_t k = 0;
        while (v < end) {
            char *e;
            long x = strtol(v, &e, 10);
            if (e == v || (e < end && *e != ':'))
                return gs_err_set(err, GS_EINVAL, "--restrict \"%s\": '%.*s' needs integer "
                                  "values separated by ':'", spec, (int)(end - p), p);
            if (match && k < cap)
                vals[k++] = x;
            v = e < end ? e + 1 : e;
        }
        if (match) {
            *found = 1;
            *nvals = k;
        }
        p = *end ? end + 1 : end;
    }
    return 0;
}

int gs_tune_restrict_check(const char *spec, gs_err *err)
{
    long v[1];
    size_t n;
    int found;
    if (!spec || !*spec)
        return gs_err_set(err, GS_EINVAL, "--restrict: empty specification");
    return restrict_lookup(spec, "", v, 1, &n, &found, err);
}

int gs_tune_space_init(gs_tune_space *s, const gs_algo *a, const gs_dev_info *info,
                       const char *restrict_spec, gs_err *err)
{
    memset(s, 0, sizeof *s);
    s->total = 1;
    if (a->nparams > GS_MAX_PARAMS)
        return gs_err_set(err, GS_EUNSUPPORTED, "%s: %zu parameters, the tuner handles %d",
                          a->name, a->nparams, GS_MAX_PARAMS);
    for (size_t i = 0; i < a->nparams; i++) {
        const gs_param_def *d = &a->params[i];
        long buf[1024], keep[256];
        size_t n = d->values ? d->values(info, buf, sizeof buf / sizeof buf[0]) : 0;
        size_t nkeep = 0;
        int found = 0;
        if (restrict_spec) {
            int rc = restrict_lookup(restrict_spec, d->name, keep, 256, &nkeep, &found, err);
            if (rc)
                return rc;
        }
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            int ok = !found;
            for (size_t k = 0; found && k < nkeep; k++)
                ok |= keep[k] == buf[j];
            if (ok)
                buf[m++] = buf[j];
        }
        if (m == 0)
            return gs_err_set(err, GS_EUNSUPPORTED, "%s: parameter %s has no legal value on "
                              "this device%s", a->name, d->name,
                              found ? " among the --restrict values" : "");
        /* Keep an evenly spread subset of a very long list, ends included. */
        size_t nv = m < GS_TUNE_MAX_VALUES ? m : GS_TUNE_MAX_VALUES;
        for (size_t j = 0; j < nv; j++)
            s->val[i][j] = nv == m ? buf[j] : buf[j * (m - 1) / (nv - 1)];
        s->nv[i] = nv;
        s->name[i] = d->name;
        s->by_n[i] = d->by_n;
        s->total *= nv;
    }
    s->np = a->nparams;
    return 0;
}

void gs_tune_code_split(const gs_tune_space *s, uint64_t code, size_t *idx)
{
    for (size_t i = 0; i < s->np; i++) {
        idx[i] = (size_t)(code % s->nv[i]);
        code /= s->nv[i];
    }
}

uint64_t gs_tune_code_join(const gs_tune_space *s, const size_t *idx)
{
    uint64_t c = 0;
    for (size_t i = s->np; i-- > 0;)
        c = c * s->nv[i] + idx[i];
    return c;
}

void gs_tune_space_params(const gs_tune_space *s, uint64_t code, gs_params *out)
{
    size_t idx[GS_MAX_PARAMS];
    gs_tune_code_split(s, code, idx);
    gs_params_clear(out);
    for (size_t i = 0; i < s->np; i++)
        gs_params_set(out, s->name[i], s->val[i][idx[i]]);
}

int gs_tune_space_code(const gs_tune_space *s, const gs_params *p, uint64_t *code)
{
    size_t idx[GS_MAX_PARAMS];
    if (p->count != (int)s->np)
        return GS_ENOTFOUND;
    for (size_t i = 0; i < s->np; i++) {
        if (!gs_params_has(p, s->name[i]))
            return GS_ENOTFOUND;
        long v = gs_params_get(p, s->name[i], 0);
        size_t j = 0;
        while (j < s->nv[i] && s->val[i][j] != v)
            j++;
        if (j == s->nv[i])
            return GS_ENOTFOUND;
        idx[i] = j;
    }
    *code = gs_tune_code_join(s, idx);
    return 0;
}

void gs_tune_params_text(const gs_params *p, char *buf, size_t len)
{
    if (gs_params_format(p, buf, len) || !buf[0])
        snprintf(buf, len, "%s", p->count ? "?" : "-");
}

/* ---- options ---- */

void gs_tune_opts_init(gs_tune_opts *o, double budget_s)
{
    memset(o, 0, sizeof *o);
    if (!(budget_s > 0))
        budget_s = GS_TUNE_DEFAULT_BUDGET;
    o->budget_s = budget_s;
    for (int w = 0; w < GS_KW_COUNT; w++)
        o->key_bits[w] = gs_kw_bits(w);
    o->nkey_bits = GS_KW_COUNT;
    /* every payload kind the protocol serves, at any budget (issue 18) */
    for (int p = 0; p < GS_PL_COUNT; p++)
        o->payloads[o->npayloads++] = (gs_payload)p;
    o->min_log2 = GS_TUNE_MIN_LOG2;
    /* 2^20 for the default budget, two more buckets per 4x the budget;
     * at least 2^16, so even a quick run sees the host/device crossover. */
    long mx = lround(20.0 + 2.0 * log2(budget_s / 300.0));
    o->max_log2 = (int)(mx < 16 ? 16 : mx > GS_TUNE_MAX_LOG2 ? GS_TUNE_MAX_LOG2 : mx);
    /* then every other size up to what memory holds (issue 18: large
     * arrays are where a sort service earns its keep) */
    o->large_max_log2 = GS_TUNE_MAX_LOG2;
    o->reps = budget_s < 60 ? 3 : 5;
    /* Under a minute there is no time to explore on a device whose builds
     * take seconds (PoCL: up to a minute each): measure the defaults and
     * earlier winners only, enough for a plan. */
    double smp = budget_s / 10.0;
    o->samples = budget_s < 60 ? 0 : smp > 256 ? 256 : (size_t)smp;
    o->strategy = GS_TUNE_AUTO;
    o->refine_rounds = budget_s < 60 ? 0 : 8;
    o->extra_dists = budget_s >= 60;
    o->seed = 1;
}
