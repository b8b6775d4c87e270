/* Parameter sets <-> JSON objects (gs_params.h): one writer and one reader,
 * used by the database, the request and reply codecs and gsort-query, so
 * that a set reads the same wherever it was written. */
#include "config.h"
#include "gs_params.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *gs_params_to_cjson(const gs_params *p)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && p && i < p->count; i++)
        if (!gs_jnum_add_long(o, p->p[i].name, p->p[i].value)) {
            cJSON_Delete(o);
            o = NULL;
        }
    return o;
}

int gs_params_to_json(const gs_params *p, char *buf, size_t len, gs_err *err)
{
    cJSON *o = gs_params_to_cjson(p);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return gs_err_set(err, GS_ENOMEM, "out of memory");
    int rc = 0;
    if (!buf || strlen(s) >= len)
        rc = gs_err_set(err, GS_ETOOBIG, "parameter JSON longer than %zu bytes",
                        len ? len - 1 : 0);
    else
        strcpy(buf, s);
    cJSON_free(s);
    return rc;
}

int gs_params_from_cjson(const cJSON *obj, const gs_jnum_doc *doc, const char *what,
                         gs_params *p, gs_err *err)
{
    char cb[48], cb2[48];
    if (!what)
        what = "";
    if (!cJSON_IsObject(obj))
        return gs_err_set(err, GS_EINVAL, "%sparameters are not a JSON object", what);
    gs_params tmp;
    gs_params_clear(&tmp);
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        const char *name = it->string ? it->string : "";
        long val = 0;
        int ji = gs_jnum_long(doc, it, &val);
        if (ji == GS_JNUM_RANGE)
            return gs_err_set(err, GS_EINVAL, "%sparameter \"%s\" value %s is out of range: "
                              "parameters are integers in [%ld, %ld]", what,
                              gs_jnum_clip(name, cb), gs_jnum_quote(doc, it, cb2), LONG_MIN,
                              LONG_MAX);
        if (ji != GS_JNUM_OK)
            return gs_err_set(err, GS_EINVAL, "%sparameter \"%s\" value %s is not an integer",
                              what, gs_jnum_clip(name, cb), gs_jnum_quote(doc, it, cb2));
        if (strlen(name) >= GS_PARAM_NAME_MAX)
            return gs_err_set(err, GS_EINVAL, "%sparameter name \"%s\" is longer than %d "
                              "characters", what, gs_jnum_clip(name, cb),
                              GS_PARAM_NAME_MAX - 1);
        int rc = gs_params_set(&tmp, name, val);
        if (rc == GS_ETOOBIG)
            return gs_err_set(err, GS_ETOOBIG, "%smore than %d parameters", what,
                              GS_MAX_PARAMS);
        if (rc < 0)
            return gs_err_set(err, GS_EINVAL, "%sparameter name \"%s\" is not an identifier",
                              what, gs_jnum_clip(name, cb));
    }
    *p = tmp;
    return 0;
}

int gs_params_from_json(const char *json, gs_params *p, gs_err *err)
{
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return gs_err_set(err, GS_EINVAL, "parameters are not a JSON object: %.80s",
                          json ? json : "(null)");
    }
    const gs_jnum_doc doc = { json, strlen(json), o };
    int rc = gs_params_from_cjson(o, &doc, NULL, p, err);
    cJSON_Delete(o);
    return rc;
}
