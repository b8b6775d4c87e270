/* gsort-query history: one device's plan under each driver version the
 * database has seen for its platform and name, so that a driver regression
 * shows (a table with a column per driver; CSV and JSON one row per driver
 * and plan entry). */
#ifndef GSQ_HISTORY_H
#define GSQ_HISTORY_H

#include "gsq_cmd.h"

int gsq_history(gsq_cmd_opts *c, gs_db *db, gs_err *err);

#endif
