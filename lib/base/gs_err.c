/* Implementation of the gs_err record: formatting messages into a fixed
 * buffer (no allocation on error paths) and naming the codes. */
#include "config.h"
#include "gs_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gs_err_clear(gs_err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->cl_code = 0;
    e->msg[0] = '\0';
}

int gs_err_set(gs_err *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    if (code != GS_ECL)
        e->cl_code = 0;
    return code;
}

int gs_err_prefix(gs_err *e, const char *fmt, ...)
{
    if (!e)
        return 0;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t hl = strlen(head), ml = strlen(e->msg);
    if (hl >= sizeof e->msg - 1)
        hl = sizeof e->msg - 1;
    if (hl + ml >= sizeof e->msg)
        ml = sizeof e->msg - 1 - hl;
    memmove(e->msg + hl, e->msg, ml);
    memcpy(e->msg, head, hl);
    e->msg[hl + ml] = '\0';
    return e->code;
}

int gs_err_raced(const char *algo, gs_err *err)
{
    return gs_err_set(err, GS_EINVAL, "%s: the keys changed while they were being sorted "
                      "(the client wrote its shared memory during the sort); the result is "
                      "not sorted", algo);
}

const char *gs_strerror(int code)
{
    switch (code) {
    case GS_OK: return "GS_OK";
    case GS_EINVAL: return "GS_EINVAL";
    case GS_ENOMEM: return "GS_ENOMEM";
    case GS_ECL: return "GS_ECL";
    case GS_EIO: return "GS_EIO";
    case GS_ENODEV: return "GS_ENODEV";
    case GS_EBUILD: return "GS_EBUILD";
    case GS_ECORRUPT: return "GS_ECORRUPT";
    case GS_ETOOBIG: return "GS_ETOOBIG";
    case GS_EUNSUPPORTED: return "GS_EUNSUPPORTED";
    case GS_ENOTFOUND: return "GS_ENOTFOUND";
    case GS_EWRONG: return "GS_EWRONG";
    case GS_EPERM: return "GS_EPERM";
    default: return "GS_E?";
    }
}
