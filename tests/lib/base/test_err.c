/* Error records, OpenCL error naming and the log sink: the plumbing every
 * message a user sees goes through. */
#include "config.h"
#include "gs_cl.h"
#include "gs_err.h"
#include "gs_log.h"
#include "tap.h"

#include <string.h>

static int warn_count, info_count;
static char last_msg[256];

static void sink(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level == GS_LOG_WARN)
        warn_count++;
    if (level == GS_LOG_INFO)
        info_count++;
    snprintf(last_msg, sizeof last_msg, "%s", msg);
}

int main(void)
{
    gs_err e;
    gs_err_clear(&e);
    tap_ok(e.code == 0 && e.msg[0] == '\0', "cleared error is empty");

    int rc = gs_err_set(&e, GS_EINVAL, "n=%d is bad", 7);
    tap_ok(rc == GS_EINVAL && e.code == GS_EINVAL, "gs_err_set returns and records the code");
    tap_ok(strcmp(e.msg, "n=7 is bad") == 0, "gs_err_set formats the message");
    gs_err_prefix(&e, "request %d: ", 3);
    tap_ok(strcmp(e.msg, "request 3: n=7 is bad") == 0, "gs_err_prefix prepends context: '%s'", e.msg);
    tap_ok(gs_err_set(NULL, GS_EIO, "x") == GS_EIO, "a NULL record still returns the code");

    /* A message longer than the buffer is truncated, never overflows. */
    char big[GS_ERR_MSG_MAX * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gs_err_set(&e, GS_EIO, "%s", big);
    tap_ok(strlen(e.msg) == GS_ERR_MSG_MAX - 1, "long messages are truncated to the buffer");
    gs_err_prefix(&e, "more: ");
    tap_ok(strlen(e.msg) == GS_ERR_MSG_MAX - 1 && strncmp(e.msg, "more: x", 7) == 0,
           "prefixing a full message keeps it bounded");

    tap_ok(strcmp(gs_strerror(GS_ENOMEM), "GS_ENOMEM") == 0, "gs_strerror names codes");
    tap_ok(strcmp(gs_strerror(-999), "GS_E?") == 0, "gs_strerror marks unknown codes");

    /* OpenCL error names: the message must say CL_OUT_OF_RESOURCES, not -5. */
    struct { cl_int code; const char *name; } names[] = {
        { CL_SUCCESS, "CL_SUCCESS" },
        { -5, "CL_OUT_OF_RESOURCES" },
        { -4, "CL_MEM_OBJECT_ALLOCATION_FAILURE" },
        { -11, "CL_BUILD_PROGRAM_FAILURE" },
        { -54, "CL_INVALID_WORK_GROUP_SIZE" },
        { -61, "CL_INVALID_BUFFER_SIZE" },
        { -1001, "CL_PLATFORM_NOT_FOUND_KHR" },
        { -12345, "CL_UNKNOWN_ERROR" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        tap_ok(strcmp(gs_cl_errname(names[i].code), names[i].name) == 0,
               "gs_cl_errname(%d) = %s", (int)names[i].code, gs_cl_errname(names[i].code));
    /* Every code from 0 down to -72 has a name or the explicit unknown marker;
     * distinct known codes never share a name. */
    int dup = 0;
    for (int a = 0; a >= -72; a--)
        for (int b = a - 1; b >= -72; b--)
            if (strcmp(gs_cl_errname(a), "CL_UNKNOWN_ERROR") != 0 &&
                strcmp(gs_cl_errname(a), gs_cl_errname(b)) == 0)
                dup++;
    tap_ok(dup == 0, "no two OpenCL codes share a name");

    rc = gs_cl_fail(&e, "clCreateBuffer", CL_OUT_OF_RESOURCES, "%zu bytes", (size_t)4096);
    tap_ok(rc == GS_ECL && e.cl_code == CL_OUT_OF_RESOURCES, "gs_cl_fail records GS_ECL and the CL code");
    tap_ok(strcmp(e.msg, "clCreateBuffer: CL_OUT_OF_RESOURCES (-5): 4096 bytes") == 0,
           "gs_cl_fail message names the call and the error: '%s'", e.msg);
    tap_ok(gs_cl_is_exhaustion(CL_OUT_OF_RESOURCES) && gs_cl_is_exhaustion(CL_MEM_OBJECT_ALLOCATION_FAILURE) &&
           !gs_cl_is_exhaustion(CL_INVALID_VALUE), "exhaustion codes are recognised");
    gs_err_set(&e, GS_EIO, "plain");
    tap_ok(e.cl_code == 0, "a non-CL error clears cl_code");

    /* Log sink and levels. */
    gs_log_set_sink(sink, NULL);
    gs_log_set_level(GS_LOG_WARN);
    GS_WARN("w %d", 1);
    GS_INFO("dropped");
    tap_ok(warn_count == 1 && info_count == 0 && strcmp(last_msg, "w 1") == 0,
           "level filter drops info at warn level");
    gs_log_set_level(GS_LOG_DEBUG);
    GS_INFO("kept");
    tap_ok(info_count == 1, "info passes at debug level");
    gs_log_set_sink(NULL, NULL);
    tap_ok(gs_log_parse_level("WARN") == GS_LOG_WARN && gs_log_parse_level("debug") == GS_LOG_DEBUG &&
           gs_log_parse_level("loud") == -1, "log level names parse");
    return tap_done();
}
