/* One place that includes the OpenCL headers with the target version fixed,
 * plus the mapping from OpenCL status codes to readable names. Every failed
 * OpenCL call in gsortd is reported through gs_cl_fail so messages always
 * name the call and the error ("clCreateBuffer: CL_OUT_OF_RESOURCES (-5)"). */
#ifndef GS_CL_H
#define GS_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "gs_err.h"

/* "CL_OUT_OF_RESOURCES" for -5; "CL_UNKNOWN_ERROR" for codes it does not know. */
const char *gs_cl_errname(cl_int status);

/* Fill `e` with "<call>: <NAME> (<status>)[: extra]" and return GS_ECL
 * (GS_ENOMEM for host-memory exhaustion is still GS_ECL: cl_code tells). */
int gs_cl_fail(gs_err *e, const char *call, cl_int status, const char *extra_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Does this status mean the device ran out of something (memory, resources),
 * so a smaller request or another device might still work? */
int gs_cl_is_exhaustion(cl_int status);

#endif
