/* Logging: one formatted line per call, written with a single fputs so lines
 * from worker threads do not interleave. */
#include "config.h"
#include "gs_log.h"

#include <stdatomic.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Set on SIGHUP by the main loop while workers and other loops log. */
static _Atomic int g_level = GS_LOG_INFO;
static gs_log_sink g_sink;
static void *g_sink_ud;

static const char *const names[] = { "error", "warn", "info", "debug" };

const char *gs_log_level_name(int level)
{
    if (level < 0 || level > GS_LOG_DEBUG)
        return "?";
    return names[level];
}

int gs_log_parse_level(const char *s)
{
    for (int i = 0; i <= GS_LOG_DEBUG; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return GS_LOG_WARN;
    return -1;
}

void gs_log_set_level(int level) { atomic_store_explicit(&g_level, level, memory_order_relaxed); }
int gs_log_get_level(void) { return atomic_load_explicit(&g_level, memory_order_relaxed); }

void gs_log_set_sink(gs_log_sink sink, void *ud)
{
    g_sink = sink;
    g_sink_ud = ud;
}

void gs_log(int level, const char *fmt, ...)
{
    if (level > gs_log_get_level())
        return;
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_sink) {
        g_sink(level, buf, g_sink_ud);
        return;
    }
    char line[8300];
    snprintf(line, sizeof line, "gsortd: %s: %s\n", gs_log_level_name(level), buf);
    fputs(line, stderr);
}
