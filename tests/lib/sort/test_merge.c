/* Tests of the host merge of sorted pieces (gs_ooc_merge over
 * gs_merge.h's k-way rounds) against tests/support/sortcheck's stable reference:
 * every dtype x payload x order, k = 2, 3, 5, 17 and 70 pieces (70: two
 * rounds), even pieces and skewed ones (one piece holding half the keys,
 * every third one empty), with sorted input (one piece holds every small
 * key), reversed, all-equal keys across the pieces and few distinct keys
 * (stability: ties to the earlier piece), float specials and distinct NaN
 * patterns (bits kept beside their values). Each piece is laid out as a
 * stable sort of it would leave it (argsort indices relative to the piece),
 * from the reference permutation of the same input; the merged result
 * must equal the whole reference exactly. The pool pretends to have 4 CPUs
 * so the output is cut into many ranges whose co-ranks are searched. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_ooc.h"
#include "gs_hostpool.h"
#include "sortcheck.h"
#include "tap.h"

#define N 1500
#define MAXK 70

/* Piece boundaries for k pieces of n: even, or skewed. */
static void cut(size_t n, size_t k, int skewed, size_t *bounds)
{
    size_t w[MAXK], total = 0;
    for (size_t i = 0; i < k; i++) {
        w[i] = !skewed ? 1 : i == 0 ? k : i % 3 == 1 ? 0 : 1;
        total += w[i];
    }
    size_t acc = 0;
    for (size_t i = 0; i < k; i++) {
        bounds[i] = n * acc / total;
        acc += w[i];
    }
    bounds[k] = n;
}

/* Lay c's work buffers out as k stably sorted pieces, from perm (the input
 * index of each element of the stable reference). */
static void lay_out(sc_case *c, const uint64_t *perm, const size_t *bounds, size_t k)
{
    size_t n = c->req.n, ks = gs_dtype_size(c->req.shape.dtype),
           vs = gs_payload_size(c->req.shape.payload);
    size_t *piece = malloc(n * sizeof *piece), cur[MAXK];
    if (!piece)
        tap_bail("out of memory");
    for (size_t i = 0; i < k; i++) {
        cur[i] = bounds[i];
        for (size_t j = bounds[i]; j < bounds[i + 1]; j++)
            piece[j] = i;
    }
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)perm[i], pc = piece[j], d = cur[pc]++;
        memcpy((char *)c->req.keys + d * ks, (const char *)c->in_keys + j * ks, ks);
        if (c->req.shape.payload == GS_PL_IDX32)
            ((uint32_t *)c->req.values)[d] = (uint32_t)(j - bounds[pc]);
        else if (c->req.shape.payload == GS_PL_IDX64)
            ((uint64_t *)c->req.values)[d] = j - bounds[pc];
        else if (vs)
            memcpy((char *)c->req.values + d * vs, (const char *)c->in_vals + j * vs, vs);
    }
    free(piece);
}

int main(void)
{
    static const size_t ks[] = { 2, 3, 5, 17, MAXK };
    static const int idist[] = { SC_RANDOM, SC_SORTED, SC_REVERSED, SC_EQUAL, SC_FEW16 };
    static const int fdist[] = { SC_RANDOM, SC_SORTED, SC_EQUAL, SC_FSPECIAL, SC_NANMIX };
    gs_hostpool_force_cpus(4);
    for (int t = 0; t < GS_DT_COUNT; t++)
        for (int p = 0; p < GS_PL_COUNT; p++) {
            int fl = t == GS_DT_F32 || t == GS_DT_F64, cases = 0, ok = 1;
            char why[600] = "";
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0] && ok; ki++)
                for (int d = 0; d < 5 && ok; d++)
                    for (int desc = 0; desc < 2 && ok; desc++)
                        for (int skewed = 0; skewed < 2 && ok; skewed++) {
                            int dist = fl ? fdist[d] : idist[d];
                            size_t k = ks[ki], n = N + (size_t)(t * 7 + p), bounds[MAXK + 1];
                            uint64_t seed = (uint64_t)(t * 1000 + p * 100 + d * 10 + desc);
                            sc_case c, perm;
                            if (sc_case_init(&c, (gs_dtype)t, (gs_payload)p, desc, n, dist,
                                             seed) ||
                                sc_case_init(&perm, (gs_dtype)t, GS_PL_IDX64, desc, n, dist,
                                             seed))
                                tap_bail("out of memory");
                            if (memcmp(c.in_keys, perm.in_keys,
                                       n * gs_dtype_size(c.req.shape.dtype)))
                                tap_bail("sc_case_init: the same seed gave other keys");
                            cut(n, k, skewed, bounds);
                            lay_out(&c, perm.ref_vals, bounds, k);
                            gs_sort_stats st;
                            memset(&st, 0, sizeof st);
                            gs_err err;
                            gs_err_clear(&err);
                            int rc = gs_ooc_merge(&c.req, bounds, k, &st, &err);
                            char w[300] = "";
                            ok = rc == 0 && sc_case_verify(&c, 1, w, sizeof w);
                            if (!ok)
                                snprintf(why, sizeof why, "k=%zu %s %s %s: %.300s", k,
                                         skewed ? "skewed" : "even", sc_dist_name(dist),
                                         desc ? "desc" : "asc", rc ? err.msg : w);
                            cases++;
                            sc_case_free(&c);
                            sc_case_free(&perm);
                        }
            tap_ok(ok, "%s/%s: %d merges of 2 to %d pieces exact%s%s", gs_dtype_name((gs_dtype)t),
                   gs_payload_name((gs_payload)p), cases, MAXK, ok ? "" : ", not: ", why);
        }
    return tap_done();
}
