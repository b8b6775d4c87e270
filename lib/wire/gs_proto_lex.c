/* The "lexsort" field of a sort request (gs_proto.h): its list of keys
 * parsed and checked on the daemon's side, the sizes it implies, and the
 * list written on the client's. A lexsort answers indices only, so the
 * fields of a plain sort that would say something else (one dtype, one
 * order, rows, top-k, segments) are refused beside it rather than
 * ignored. */
#include "config.h"
#include "gs_proto.h"

#include <stdio.h>
#include <string.h>

#include "gs_jnum.h"

static const char *const not_with[] = { "order", "stable", "rows", "topk", "sorted",
                                        "segments", "offsets_offset" };

int gs_proto_lex_parse(const cJSON *h, const cJSON *list, gs_proto_req *rq, gs_err *err)
{
    char cb[48];
    for (size_t i = 0; i < sizeof not_with / sizeof not_with[0]; i++)
        if (cJSON_GetObjectItemCaseSensitive(h, not_with[i]))
            return gs_err_set(err, GS_EINVAL, "sort: \"%s\" does not go with \"lexsort\" "
                              "(each key has its order; a lexsort is stable)", not_with[i]);
    int nk = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (nk < 1 || nk > GS_LEX_MAX_KEYS)
        return gs_err_set(err, GS_EINVAL, "sort: \"lexsort\" is not a list of 1 to %d keys",
                          GS_LEX_MAX_KEYS);
    const cJSON *k;
    unsigned j = 0;
    cJSON_ArrayForEach(k, list) {
        if (!cJSON_IsObject(k))
            return gs_err_set(err, GS_EINVAL, "sort: \"lexsort\" key %u is not an object "
                              "({\"dtype\": ..., \"order\": ...})", j);
        const cJSON *m;
        cJSON_ArrayForEach(m, k)
            if (!m->string || (strcmp(m->string, "dtype") && strcmp(m->string, "order")))
                return gs_err_set(err, GS_EINVAL, "sort: \"lexsort\" key %u has an unknown "
                                  "field (dtype and order are known)", j);
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(k, "dtype");
        int t = cJSON_IsString(d) ? gs_lex_dt_find(d->valuestring) : -1;
        if (t < 0)
            return gs_err_set(err, GS_EINVAL, "sort: \"lexsort\" key %u: \"dtype\" %s is not "
                              "one of %s", j, d ? gs_jnum_clip_json(d, cb) : "(missing)",
                              gs_lex_dt_list());
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(k, "order");
        int desc = 0;
        if (o && cJSON_IsString(o) && !strcmp(o->valuestring, "desc"))
            desc = 1;
        else if (o && !(cJSON_IsString(o) && !strcmp(o->valuestring, "asc")))
            return gs_err_set(err, GS_EINVAL, "sort: \"lexsort\" key %u: \"order\" %s is not "
                              "\"asc\" or \"desc\"", j, gs_jnum_clip_json(o, cb));
        rq->lex.key[j].dt = t;
        rq->lex.key[j].desc = desc;
        j++;
    }
    rq->lex.nkeys = j;
    if (rq->shape.payload != GS_PL_IDX32 && rq->shape.payload != GS_PL_IDX64)
        return gs_err_set(err, GS_EINVAL, "sort: a \"lexsort\" answers indices: \"values\" "
                          "must be idx32 or idx64");
    int rc = gs_lex_layout(&rq->lex, rq->n, &rq->lex_bytes, err);
    if (rc < 0)
        return rc;
    rq->shape.dtype = gs_lex_word_bytes(&rq->lex) == 4 ? GS_DT_U32 : GS_DT_U64;
    rq->shape.stable = 1;
    rq->shape.descending = 0;
    return 0;
}

int gs_proto_lex_sizes(gs_proto_req *rq, gs_err *err)
{
    uint64_t vs = gs_payload_size(rq->shape.payload), vbytes, bytes;
    if (rq->lex.nkeys > GS_LEX_MAX_KEYS || vs == 0 ||
        (rq->shape.payload != GS_PL_IDX32 && rq->shape.payload != GS_PL_IDX64))
        return gs_err_set(err, GS_EINVAL, "sort: a lexsort of %u keys answering %s (1 to %d "
                          "keys, idx32 or idx64)", rq->lex.nkeys,
                          gs_payload_name(rq->shape.payload), GS_LEX_MAX_KEYS);
    if (rq->shape.payload == GS_PL_IDX32 && rq->n > UINT32_MAX)
        return gs_err_set(err, GS_ETOOBIG, "sort: idx32 cannot index %llu rows (use idx64)",
                          (unsigned long long)rq->n);
    int rc = gs_lex_layout(&rq->lex, rq->n, &bytes, err);
    if (rc < 0)
        return rc;
    rq->lex_bytes = bytes;
    if (__builtin_mul_overflow(rq->n, vs, &vbytes))
        return gs_err_set(err, GS_ETOOBIG, "sort: %llu indices overflow 64 bits",
                          (unsigned long long)rq->n);
    rq->in_bytes = bytes;           /* indices are the daemon's, never sent */
    rq->out_bytes = vbytes;
    rq->fd_bytes = 0;
    if (!rq->memfd)
        return 0;
    uint64_t kend, vend;
    if (rq->keys_offset % 8)
        return gs_err_set(err, GS_EINVAL, "sort: a lexsort's keys_offset %llu is not a "
                          "multiple of 8", (unsigned long long)rq->keys_offset);
    if (rq->values_offset % vs)
        return gs_err_set(err, GS_EINVAL, "sort: values_offset %llu is not a multiple of the "
                          "%llu-byte index", (unsigned long long)rq->values_offset,
                          (unsigned long long)vs);
    if (__builtin_add_overflow(rq->keys_offset, bytes, &kend) ||
        __builtin_add_overflow(rq->values_offset, vbytes, &vend))
        return gs_err_set(err, GS_ETOOBIG, "sort: a lexsort's offsets and sizes overflow "
                          "64 bits");
    /* indices written over keys still to be read would change the answer
     * of this very request */
    if (rq->n && rq->keys_offset < vend && rq->values_offset < kend)
        return gs_err_set(err, GS_EINVAL, "sort: keys [%llu, %llu) and indices [%llu, %llu) "
                          "overlap in the memfd", (unsigned long long)rq->keys_offset,
                          (unsigned long long)kend, (unsigned long long)rq->values_offset,
                          (unsigned long long)vend);
    rq->fd_bytes = kend > vend ? kend : vend;
    return 0;
}

cJSON *gs_proto_lex_list(const gs_proto_req *rq)
{
    cJSON *a = cJSON_CreateArray();
    for (unsigned j = 0; a && j < rq->lex.nkeys; j++) {
        const gs_lex_dtinfo *d = gs_lex_dt_row(rq->lex.key[j].dt);
        cJSON *k = cJSON_CreateObject();
        if (k && !cJSON_AddItemToArray(a, k)) {
            cJSON_Delete(k);
            k = NULL;
        }
        if (!k || !d || !cJSON_AddStringToObject(k, "dtype", d->name) ||
            (rq->lex.key[j].desc && !cJSON_AddStringToObject(k, "order", "desc"))) {
            cJSON_Delete(a);        /* k with it */
            return NULL;
        }
    }
    return a;
}
