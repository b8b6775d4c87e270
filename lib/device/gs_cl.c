/* OpenCL status codes as names, and the one helper every OpenCL failure in
 * gsortd goes through so messages always name the call and the error. */
#include "config.h"
#include "gs_cl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *gs_cl_errname(cl_int s)
{
    switch (s) {
#define N(x) case x: return #x
    N(CL_SUCCESS);
    N(CL_DEVICE_NOT_FOUND);
    N(CL_DEVICE_NOT_AVAILABLE);
    N(CL_COMPILER_NOT_AVAILABLE);
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    N(CL_OUT_OF_RESOURCES);
    N(CL_OUT_OF_HOST_MEMORY);
    N(CL_PROFILING_INFO_NOT_AVAILABLE);
    N(CL_MEM_COPY_OVERLAP);
    N(CL_IMAGE_FORMAT_MISMATCH);
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    N(CL_BUILD_PROGRAM_FAILURE);
    N(CL_MAP_FAILURE);
    N(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    N(CL_COMPILE_PROGRAM_FAILURE);
    N(CL_LINKER_NOT_AVAILABLE);
    N(CL_LINK_PROGRAM_FAILURE);
    N(CL_DEVICE_PARTITION_FAILED);
    N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    N(CL_INVALID_VALUE);
    N(CL_INVALID_DEVICE_TYPE);
    N(CL_INVALID_PLATFORM);
    N(CL_INVALID_DEVICE);
    N(CL_INVALID_CONTEXT);
    N(CL_INVALID_QUEUE_PROPERTIES);
    N(CL_INVALID_COMMAND_QUEUE);
    N(CL_INVALID_HOST_PTR);
    N(CL_INVALID_MEM_OBJECT);
    N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    N(CL_INVALID_IMAGE_SIZE);
    N(CL_INVALID_SAMPLER);
    N(CL_INVALID_BINARY);
    N(CL_INVALID_BUILD_OPTIONS);
    N(CL_INVALID_PROGRAM);
    N(CL_INVALID_PROGRAM_EXECUTABLE);
    N(CL_INVALID_KERNEL_NAME);
    N(CL_INVALID_KERNEL_DEFINITION);
    N(CL_INVALID_KERNEL);
    N(CL_INVALID_ARG_INDEX);
    N(CL_INVALID_ARG_VALUE);
    N(CL_INVALID_ARG_SIZE);
    N(CL_INVALID_KERNEL_ARGS);
    N(CL_INVALID_WORK_DIMENSION);
    N(CL_INVALID_WORK_GROUP_SIZE);
    N(CL_INVALID_WORK_ITEM_SIZE);
    N(CL_INVALID_GLOBAL_OFFSET);
    N(CL_INVALID_EVENT_WAIT_LIST);
    N(CL_INVALID_EVENT);
    N(CL_INVALID_OPERATION);
    N(CL_INVALID_GL_OBJECT);
    N(CL_INVALID_BUFFER_SIZE);
    N(CL_INVALID_MIP_LEVEL);
    N(CL_INVALID_GLOBAL_WORK_SIZE);
    N(CL_INVALID_PROPERTY);
    N(CL_INVALID_IMAGE_DESCRIPTOR);
    N(CL_INVALID_COMPILER_OPTIONS);
    N(CL_INVALID_LINKER_OPTIONS);
    N(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef N
    /* OpenCL 2.x/3.0 and the ICD loader, spelled out so 1.2 headers suffice. */
    case -69: return "CL_INVALID_PIPE_SIZE";
    case -70: return "CL_INVALID_DEVICE_QUEUE";
    case -71: return "CL_INVALID_SPEC_ID";
    case -72: return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL_UNKNOWN_ERROR";
    }
}

int gs_cl_fail(gs_err *e, const char *call, cl_int status, const char *extra_fmt, ...)
{
    if (!e)
        return GS_ECL;
    char extra[GS_ERR_MSG_MAX];
    extra[0] = '\0';
    if (extra_fmt) {
        va_list ap;
        va_start(ap, extra_fmt);
        vsnprintf(extra, sizeof extra, extra_fmt, ap);
        va_end(ap);
    }
    gs_err_set(e, GS_ECL, "%s: %s (%d)%s%s", call, gs_cl_errname(status), (int)status,
               extra[0] ? ": " : "", extra);
    e->cl_code = status;
    return GS_ECL;
}

int gs_cl_is_exhaustion(cl_int s)
{
    return s == CL_OUT_OF_RESOURCES || s == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
           s == CL_OUT_OF_HOST_MEMORY || s == CL_INVALID_BUFFER_SIZE;
}
