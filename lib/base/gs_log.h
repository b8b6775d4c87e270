/* Leveled logging to stderr, with a replaceable sink so tests can capture
 * and count what a layer said (e.g. "exactly one warning"). */
#ifndef GS_LOG_H
#define GS_LOG_H

enum gs_log_level { GS_LOG_ERROR = 0, GS_LOG_WARN, GS_LOG_INFO, GS_LOG_DEBUG };

typedef void (*gs_log_sink)(int level, const char *msg, void *ud);

void gs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_log_set_level(int level);   /* messages above this level are dropped */
int gs_log_get_level(void);
/* Replace the sink (NULL restores stderr). Not thread-safe to call while
 * other threads log; set it up at start. */
void gs_log_set_sink(gs_log_sink sink, void *ud);
const char *gs_log_level_name(int level);
/* Parse "error|warn|info|debug"; returns -1 if unknown. */
int gs_log_parse_level(const char *s);

#define GS_ERROR(...) gs_log(GS_LOG_ERROR, __VA_ARGS__)
#define GS_WARN(...) gs_log(GS_LOG_WARN, __VA_ARGS__)
#define GS_INFO(...) gs_log(GS_LOG_INFO, __VA_ARGS__)
#define GS_DEBUG(...) gs_log(GS_LOG_DEBUG, __VA_ARGS__)

#endif
