/* Log lines at a bounded rate (srv_ratelog, gs_srv_int.h): a warning that
 * may repeat as fast as clients can connect (a refusal, accept(2) out of
 * descriptors, a client cut off) is written at most RATELOG_BURST times per
 * RATELOG_WINDOW_MS, and the lines held back are counted and their number
 * logged once the window is over, so that a flood of clients cannot flood
 * the log too. The accepting (gs_accept.c), the I/O loops' tick (gs_io.c)
 * and the connections (gs_conn.c) each keep their own; one thread uses
 * each, so nothing here locks. Calls no other file of the server. */
#include "config.h"
#include "gs_srv_int.h"

#include "gs_log.h"

#define RATELOG_BURST 5
#define RATELOG_WINDOW_MS 10000.0

int srv_ratelog_allow(srv_ratelog *r, double now_ms)
{
    if (now_ms - r->t0 >= RATELOG_WINDOW_MS) {
        srv_ratelog_flush(r, now_ms);
        r->t0 = now_ms;
        r->logged = 0;
    }
    if (r->logged < RATELOG_BURST) {
        r->logged++;
        return 1;
    }
    r->suppressed++;
    return 0;
}

void srv_ratelog_flush(srv_ratelog *r, double now_ms)
{
    if (!r->suppressed || now_ms - r->t0 < RATELOG_WINDOW_MS)
        return;
    GS_WARN("(%u more %s suppressed in the last %.0f s)", r->suppressed, r->what,
            RATELOG_WINDOW_MS / 1000);
    r->suppressed = 0;
}
