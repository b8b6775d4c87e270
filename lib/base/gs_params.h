/* Parameter sets (gs_types.h) as JSON objects, {"radix_bits":8,"wg_size":256},
 * the one form shared by the tuning database (its params columns), the
 * wire protocol (a sort request's and a sort reply's "params") and the
 * tools that show them. Names keep their order; values are integers
 * written as their digits and read back exactly (gs_jnum.h), so every
 * long survives the trip. */
#ifndef GS_PARAMS_H
#define GS_PARAMS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "gs_err.h"
#include "gs_jnum.h"
#include "gs_types.h"

/* The set as JSON text into buf: GS_ETOOBIG when it does not fit, GS_ENOMEM. */
int gs_params_to_json(const gs_params *p, char *buf, size_t len, gs_err *err);
/* A set from JSON object text. GS_EINVAL (not an object, a value that is not
 * an integer in long's range, a bad name), GS_ETOOBIG (more than
 * GS_MAX_PARAMS): *p is then unchanged. */
int gs_params_from_json(const char *json, gs_params *p, gs_err *err);

/* The set as a cJSON object (caller deletes); NULL when out of memory. */
cJSON *gs_params_to_cjson(const gs_params *p);
/* A set from the object `obj` of a document parsed from text `doc` (values
 * read exactly; NULL doc: from the doubles, exact up to 2^53). Messages
 * start with `what` ("sort: ", may be NULL). Errors as gs_params_from_json;
 * *p is unchanged on failure. */
int gs_params_from_cjson(const cJSON *obj, const gs_jnum_doc *doc, const char *what,
                         gs_params *p, gs_err *err);

#endif
