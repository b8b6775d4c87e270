/* The malformed requests gsort-load mixes into its load, each with the
 * answer the protocol documents for it: bad JSON, a bad dtype, a bad
 * version, payload_bytes that do not match n, an unsealed memfd, a header
 * length above the limit (each an error code, some with "close"), and
 * hang-ups in the middle of a header or a payload (no answer; the daemon
 * must drop the connection and keep serving). */
#ifndef GS_BENCH_MALFORMED_H
#define GS_BENCH_MALFORMED_H

#include <stddef.h>

#include "gs_client.h"

enum {
    MALFORMED_BAD_JSON, MALFORMED_BAD_DTYPE, MALFORMED_BAD_VERSION, MALFORMED_BAD_BYTES,
    MALFORMED_UNSEALED, MALFORMED_BIG_HEADER, MALFORMED_CUT_HEADER, MALFORMED_CUT_PAYLOAD,
    MALFORMED_COUNT
};

typedef struct malformed_kind {
    const char *name;
    const char *code;      /* expected error code; NULL: no reply (we hang up) */
    int closes;            /* the daemon must close after the reply */
    const char *what;
} malformed_kind;

extern const malformed_kind malformed_kinds[MALFORMED_COUNT];

typedef enum malformed_outcome {
    MALFORMED_AS_DOCUMENTED = 0,   /* the documented answer came (or none, for a hang-up) */
    MALFORMED_LOCAL,               /* could not be made here (memfd_create failed) */
    MALFORMED_NOT_SENT,            /* sending it failed */
    MALFORMED_WRONG_ANSWER,        /* another answer, or none, came back */
} malformed_outcome;

/* Send malformed request `kind` on c and check what comes back. *again is
 * set when c is done with (a hang-up, a "close", or a stream in an unknown
 * state) and a new connection must serve the next request; `why` gets the
 * message for any outcome but MALFORMED_AS_DOCUMENTED. */
malformed_outcome malformed_send(gs_client *c, int kind, int *again, char *why, size_t wl);

#endif
