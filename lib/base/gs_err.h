/* Error codes and the error record every gsortd function fills in.
 * Functions return 0 or a negative GS_E* code; when they fail they write a
 * human-readable sentence into a caller-supplied gs_err so the caller (CLI,
 * daemon, test) can show it without knowing which layer failed. */
#ifndef GS_ERR_H
#define GS_ERR_H

#include <stddef.h>

enum {
    GS_OK = 0,
    GS_EINVAL = -1,       /* bad argument or request */
    GS_ENOMEM = -2,       /* host allocation failed */
    GS_ECL = -3,          /* an OpenCL call failed (cl_code says which) */
    GS_EIO = -4,          /* file or socket I/O failed */
    GS_ENODEV = -5,       /* no such device */
    GS_EBUILD = -6,       /* kernel program failed to build */
    GS_ECORRUPT = -7,     /* data failed its checksum or format check */
    GS_ETOOBIG = -8,      /* exceeds a device or configured limit */
    GS_EUNSUPPORTED = -9, /* parameter set / request the device cannot run */
    GS_ENOTFOUND = -10,   /* named thing does not exist */
    GS_EWRONG = -11,      /* a result failed verification */
    /* -12 is libgsort's GSORT_ENODAEMON (a client-side condition) */
    GS_EPERM = -13,       /* the daemon does not serve this client (allow_uids/gids) */
};
#define GS_ECODE_MIN GS_EPERM   /* the most negative code */

#define GS_ERR_MSG_MAX 4096

typedef struct gs_err {
    int code;               /* last GS_E* code set, 0 if none */
    int cl_code;            /* OpenCL status when code == GS_ECL, else 0 */
    char msg[GS_ERR_MSG_MAX];
} gs_err;

/* Clear an error record. */
void gs_err_clear(gs_err *e);

/* Record a failure and return `code` so callers can write
 *   return gs_err_set(err, GS_EINVAL, "n must be positive");
 * `e` may be NULL (the message is dropped). */
int gs_err_set(gs_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the current message with more context ("loading cache: " + msg). */
int gs_err_prefix(gs_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The error when a pass finds the keys
 * were not the ones an earlier pass counted, i.e. the client rewrote its
 * shared memory while it was being sorted (issue 32). Client memory is
 * hostile input: every pass that derives positions from keys read earlier
 * bounds them, and a pass that notices the mismatch says so with this
 * (GS_EINVAL, "ALGO: the keys changed while they were being sorted ...").
 * A race a pass does not notice may leave a wrong order; never an access
 * out of bounds. */
int gs_err_raced(const char *algo, gs_err *err);

/* Short name of a code: "GS_ENOMEM". */
const char *gs_strerror(int code);

#endif
