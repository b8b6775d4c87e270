/* libgsort's error records (gsort_error in include/gsort.h): filling the
 * caller's record from an internal failure or a message, clearing it, and
 * the code names of gsort_strerror. The connection calls (gsort.c) and the
 * shared-memory calls (gsort_shm.c) both report through these, so they
 * live apart from either and the two depend on each other one way only
 * (gsort.c uses gsort_shm.c's block registry). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gs_err.h"
#include "gsort.h"
#include "gsort_int.h"

int lgs_err_set(gsort_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int lgs_err_from(gsort_error *err, int rc, const gs_err *ge)
{
    int code = (rc < 0 && rc >= GSORT_EWRONG) || rc == GSORT_EPERM ? rc : GSORT_EIO;
    if (err) {
        err->code = code;
        /* An internal message may be longer than the public record. */
        const char *m = ge && ge->msg[0] ? ge->msg : gsort_strerror(code);
        size_t len = strnlen(m, sizeof err->message - 1);
        memcpy(err->message, m, len);
        err->message[len] = '\0';
    }
    return code;
}

void lgs_err_clear(gsort_error *err)
{
    if (err) {
        err->code = 0;
        err->message[0] = '\0';
    }
}

const char *gsort_strerror(int code)
{
    switch (code) {
    case GSORT_OK: return "GSORT_OK";
    case GSORT_EINVAL: return "GSORT_EINVAL";
    case GSORT_ENOMEM: return "GSORT_ENOMEM";
    case GSORT_EDEVICE: return "GSORT_EDEVICE";
    case GSORT_EIO: return "GSORT_EIO";
    case GSORT_ENODEV: return "GSORT_ENODEV";
    case GSORT_EBUILD: return "GSORT_EBUILD";
    case GSORT_ECORRUPT: return "GSORT_ECORRUPT";
    case GSORT_ETOOBIG: return "GSORT_ETOOBIG";
    case GSORT_EUNSUPPORTED: return "GSORT_EUNSUPPORTED";
    case GSORT_ENOTFOUND: return "GSORT_ENOTFOUND";
    case GSORT_EWRONG: return "GSORT_EWRONG";
    case GSORT_ENODAEMON: return "GSORT_ENODAEMON";
    case GSORT_EPERM: return "GSORT_EPERM";
    default: return "GSORT_E?";
    }
}
