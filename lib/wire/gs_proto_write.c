/* Request headers on the client's side (gs_proto.h): the header of a sort
 * with every field the request sets, sizes checked first so a header the
 * daemon would refuse is never sent, and the header of a request that is
 * only an op (ping, info, stats). */
#include "config.h"
#include "gs_proto.h"

#include <stdio.h>
#include <string.h>

#include "gs_jnum.h"
#include "gs_params.h"

/* A uint64 that a JSON number (a double) carries exactly. */
static int json_exact(uint64_t x)
{
    return x <= (UINT64_C(1) << 53);
}

/* Add `item` (NULL: out of memory) to obj as `name`: 1, or 0 with item freed. */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, name, item))
        return 1;
    cJSON_Delete(item);
    return 0;
}

cJSON *gs_proto_sort_header(gs_proto_req *rq, gs_err *err)
{
    if (gs_proto_sort_sizes(rq, err) < 0)
        return NULL;
    if (rq->n > GS_PROTO_MAX_N) {
        gs_err_set(err, GS_ETOOBIG, "sort: n %llu exceeds 2^53",
                   (unsigned long long)rq->n);
        return NULL;
    }
    uint64_t dflt_vo = rq->keys_offset + (rq->lex.nkeys ? rq->lex_bytes
                                                        : rq->n * gs_proto_key_bytes(rq));
    int want_vo = rq->memfd && rq->shape.payload != GS_PL_NONE && rq->values_offset != dflt_vo;
    if (!rq->memfd && !json_exact(rq->in_bytes)) {
        gs_err_set(err, GS_ETOOBIG, "sort: an inline payload of %llu bytes exceeds 2^53",
                   (unsigned long long)rq->in_bytes);
        return NULL;
    }
    if (rq->has_params && !rq->algorithm[0]) {
        gs_err_set(err, GS_EINVAL, "sort: parameters need an algorithm");
        return NULL;
    }

    cJSON *h = cJSON_CreateObject();
    int ok = h != NULL;
    ok = ok && cJSON_AddNumberToObject(h, "v", GS_PROTO_VERSION);
    ok = ok && cJSON_AddStringToObject(h, "op", "sort");
    if (ok && rq->id)
        ok = add_item(h, "id", cJSON_Duplicate(rq->id, 1));
    if (rq->lex.nkeys)
        ok = ok && add_item(h, "lexsort", gs_proto_lex_list(rq));
    else
        ok = ok && cJSON_AddStringToObject(h, "dtype", rq->narrow ? gs_narrow_row(rq->narrow)->name
                                                               : gs_dtype_name(rq->shape.dtype));
    ok = ok && gs_jnum_add_u64(h, "n", rq->n);
    if (rq->shape.payload != GS_PL_NONE)
        ok = ok && cJSON_AddStringToObject(h, "values", gs_payload_name(rq->shape.payload));
    if (rq->shape.descending)
        ok = ok && cJSON_AddStringToObject(h, "order", "desc");
    if (rq->shape.stable && !rq->lex.nkeys)
        ok = ok && cJSON_AddTrueToObject(h, "stable");
    if (rq->shape.rows > 1)
        ok = ok && gs_jnum_add_u64(h, "rows", rq->shape.rows);
    if (rq->shape.segments)
        ok = ok && gs_jnum_add_u64(h, "segments", rq->shape.segments);
    if (rq->shape.topk)
        ok = ok && gs_jnum_add_u64(h, "topk", rq->shape.k);
    if (rq->shape.topk && rq->shape.unsorted)
        ok = ok && cJSON_AddFalseToObject(h, "sorted");
    if (gs_shape_has_bits(&rq->shape)) {
        ok = ok && gs_jnum_add_u64(h, "begin_bit", rq->shape.begin_bit);
        ok = ok && gs_jnum_add_u64(h, "end_bit", rq->shape.end_bit);
    }
    if (rq->algorithm[0])
        ok = ok && cJSON_AddStringToObject(h, "algorithm", rq->algorithm);
    /* integers as digits, not doubles: cJSON prints a double of 10^15 or
     * more rounded, and parameters and memfd offsets may pass 2^53 (the
     * daemon reads integers from the text) */
    if (ok && rq->has_params)
        ok = add_item(h, "params", gs_params_to_cjson(&rq->params));
    if (rq->device >= 0)
        ok = ok && cJSON_AddNumberToObject(h, "device", rq->device);
    if (rq->split)
        ok = ok && cJSON_AddBoolToObject(h, "split", rq->split > 0);
    if (rq->memfd) {
        ok = ok && cJSON_AddTrueToObject(h, "memfd");
        if (rq->keys_offset)
            ok = ok && gs_jnum_add_u64(h, "keys_offset", rq->keys_offset);
        if (want_vo)
            ok = ok && gs_jnum_add_u64(h, "values_offset", rq->values_offset);
        if (rq->shape.segments)
            ok = ok && gs_jnum_add_u64(h, "offsets_offset", rq->offsets_offset);
    } else {
        ok = ok && gs_jnum_add_u64(h, "payload_bytes", rq->in_bytes);
    }
    if (!ok) {
        cJSON_Delete(h);
        gs_err_set(err, GS_ENOMEM, "sort: out of memory building the request header");
        return NULL;
    }
    rq->payload_bytes = rq->memfd ? 0 : rq->in_bytes;
    return h;
}


cJSON *gs_proto_op_header(const char *op, const cJSON *id, gs_err *err)
{
    cJSON *h = cJSON_CreateObject();
    int ok = h != NULL;
    ok = ok && cJSON_AddNumberToObject(h, "v", GS_PROTO_VERSION);
    ok = ok && cJSON_AddStringToObject(h, "op", op ? op : "");
    if (ok && id)
        ok = add_item(h, "id", cJSON_Duplicate(id, 1));
    if (!ok) {
        cJSON_Delete(h);
        gs_err_set(err, GS_ENOMEM, "out of memory building a request");
        return NULL;
    }
    return h;
}
