/* Device probing and the per-device context/queue. Probing reads every
 * platform's devices and the properties the tuner and planner need; a
 * platform that fails to list devices is logged and skipped so one broken
 * ICD does not hide the others. */
#include "config.h"
#include "gs_dev.h"
#include "gs_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
    buf[len - 1] = '\0';
    /* Some drivers pad names with trailing spaces. */
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\n'))
        buf[--n] = '\0';
}

#define GET_NUM(dev, what, var) do { \
        __typeof__(var) v_ = 0; \
        if (clGetDeviceInfo(dev, what, sizeof v_, &v_, NULL) == CL_SUCCESS) (var) = v_; \
    } while (0)

/* Profiling works if a queue with CL_QUEUE_PROFILING_ENABLE can be made and
 * a real command's START/END timestamps come back ordered. */
static int check_profiling(cl_platform_id plat, cl_device_id dev)
{
    cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0 };
    cl_int rc;
    cl_context ctx = clCreateContext(props, 1, &dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return 0;
    int ok = 0;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (rc == CL_SUCCESS) {
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &rc);
        if (rc == CL_SUCCESS) {
            cl_uint pat = 0x5a5a5a5a;
            cl_event ev;
            if (clEnqueueFillBuffer(q, b, &pat, sizeof pat, 0, 4096, 0, NULL, &ev) == CL_SUCCESS) {
                cl_ulong t0 = 0, t1 = 0;
                if (clWaitForEvents(1, &ev) == CL_SUCCESS &&
                    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
                    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS)
                    ok = t0 != 0 && t1 >= t0;
                clReleaseEvent(ev);
            }
            clReleaseMemObject(b);
        }
        clReleaseCommandQueue(q);
    }
    clReleaseContext(ctx);
    return ok;
}

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000   /* cl_nv_device_attribute_query */
#endif

static void read_info(gs_dev *d)
{
    gs_dev_info *in = &d->info;
    clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof in->platform, in->platform, NULL);
    clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof in->platform_version,
                      in->platform_version, NULL);
    in->platform[sizeof in->platform - 1] = '\0';
    in->platform_version[sizeof in->platform_version - 1] = '\0';
    get_str(d->id, CL_DEVICE_NAME, in->name, sizeof in->name);
    get_str(d->id, CL_DEVICE_VENDOR, in->vendor, sizeof in->vendor);
    get_str(d->id, CL_DRIVER_VERSION, in->driver, sizeof in->driver);
    get_str(d->id, CL_DEVICE_VERSION, in->version, sizeof in->version);
    get_str(d->id, CL_DEVICE_OPENCL_C_VERSION, in->c_version, sizeof in->c_version);
    GET_NUM(d->id, CL_DEVICE_TYPE, in->type);
    cl_uint cu = 0;
    GET_NUM(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, cu);
    in->compute_units = cu;
    GET_NUM(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, in->max_wg_size);
    cl_ulong v = 0;
    GET_NUM(d->id, CL_DEVICE_LOCAL_MEM_SIZE, v);
    in->local_mem = v;
    cl_device_local_mem_type lt = CL_GLOBAL;
    GET_NUM(d->id, CL_DEVICE_LOCAL_MEM_TYPE, lt);
    in->local_mem_dedicated = lt == CL_LOCAL;
    v = 0;
    GET_NUM(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, v);
    in->global_mem = v;
    v = 0;
    GET_NUM(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, v);
    in->max_alloc = v;
    char ext[8192];
    get_str(d->id, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    in->has_int64_atomics = strstr(ext, "cl_khr_int64_base_atomics") != NULL;
    /* only where it is known: other runtimes (and Oclgrind's API check)
     * treat the NVIDIA query as an invalid argument */
    if (strstr(ext, "cl_nv_device_attribute_query") || strstr(in->vendor, "NVIDIA")) {
        cl_uint major = 0;
        GET_NUM(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, major);
        in->nv_cc_major = major;
    }
    in->profiling = check_profiling(d->platform, d->id);
}

int gs_dev_probe(gs_dev **devs, size_t *count, gs_err *err)
{
    *devs = NULL;
    *count = 0;
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(0, NULL, &np);
    if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no platform */ || np == 0)
        return 0;
    if (rc != CL_SUCCESS)
        return gs_cl_fail(err, "clGetPlatformIDs", rc, NULL);
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats)
        return gs_err_set(err, GS_ENOMEM, "probing devices: out of memory");
    rc = clGetPlatformIDs(np, plats, NULL);
    if (rc != CL_SUCCESS) {
        free(plats);
        return gs_cl_fail(err, "clGetPlatformIDs", rc, NULL);
    }
    gs_dev *list = NULL;
    size_t n = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        rc = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (rc == CL_DEVICE_NOT_FOUND || nd == 0)
            continue;
        if (rc != CL_SUCCESS) {
            char pname[256] = "?";
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
            pname[sizeof pname - 1] = '\0';
            GS_WARN("platform %s: clGetDeviceIDs: %s (%d); skipping it", pname,
                    gs_cl_errname(rc), (int)rc);
            continue;
        }
        cl_device_id *ids = calloc(nd, sizeof *ids);
        gs_dev *nl = ids ? realloc(list, (n + nd) * sizeof *list) : NULL;
        if (!nl) {
            free(ids);
            gs_dev_free_list(list, n);
            free(plats);
            return gs_err_set(err, GS_ENOMEM, "probing devices: out of memory");
        }
        list = nl;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) != CL_SUCCESS)
            nd = 0;
        for (cl_uint i = 0; i < nd; i++) {
            gs_dev *d = &list[n];
            memset(d, 0, sizeof *d);
            d->index = (int)n;
            d->platform = plats[p];
            d->id = ids[i];
            pthread_mutex_init(&d->lock, NULL);
            pthread_cond_init(&d->progs_cv, NULL);
            read_info(d);
            n++;
        }
        free(ids);
    }
    free(plats);
    *devs = list;
    *count = n;
    return 0;
}

int gs_dev_open(gs_dev *d, gs_err *err)
{
    if (d->ctx)
        return 0;
    cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0 };
    cl_int rc;
    d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        d->ctx = NULL;
        return gs_cl_fail(err, "clCreateContext", rc, "device %s", d->info.name);
    }
    cl_command_queue_properties qp = d->info.profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    d->queue = clCreateCommandQueue(d->ctx, d->id, qp, &rc);
    if (rc != CL_SUCCESS) {
        clReleaseContext(d->ctx);
        d->ctx = NULL;
        d->queue = NULL;
        return gs_cl_fail(err, "clCreateCommandQueue", rc, "device %s", d->info.name);
    }
    return 0;
}

int gs_dev_lane(gs_dev *d, unsigned k, cl_command_queue *out, gs_err *err)
{
    *out = NULL;
    if (k < 1 || k >= GS_DEV_LANES)
        return gs_err_set(err, GS_EINVAL, "device %s: no queue %u (1 to %d)", d->info.name, k,
                          GS_DEV_LANES - 1);
    int rc = gs_dev_open(d, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&d->lock);
    cl_command_queue *q = &d->lanes[k - 1];
    if (!*q) {
        cl_int crc;
        cl_command_queue_properties qp = d->info.profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
        *q = clCreateCommandQueue(d->ctx, d->id, qp, &crc);
        if (crc != CL_SUCCESS) {
            *q = NULL;
            rc = gs_cl_fail(err, "clCreateCommandQueue", crc, "device %s: queue %u",
                            d->info.name, k + 1);
        }
    }
    *out = *q;
    pthread_mutex_unlock(&d->lock);
    return rc;
}

void gs_dev_close(gs_dev *d)
{
    if (d->progs_release)
        d->progs_release(d);
    if (d->bufpool_release)
        d->bufpool_release(d);
    if (d->stage_release)
        d->stage_release(d);
    for (int k = 0; k < GS_DEV_LANES - 1; k++)
        if (d->lanes[k])
            clReleaseCommandQueue(d->lanes[k]);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->ctx)
        clReleaseContext(d->ctx);
    d->queue = NULL;
    memset(d->lanes, 0, sizeof d->lanes);
    d->ctx = NULL;
}

void gs_dev_free_list(gs_dev *devs, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        gs_dev_close(&devs[i]);
        pthread_mutex_destroy(&devs[i].lock);
        pthread_cond_destroy(&devs[i].progs_cv);
    }
    free(devs);
}

const char *gs_dev_type_name(cl_device_type t, char *buf, size_t len)
{
    static const struct { cl_device_type bit; const char *name; } names[] = {
        { CL_DEVICE_TYPE_GPU, "GPU" }, { CL_DEVICE_TYPE_CPU, "CPU" },
        { CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR" }, { CL_DEVICE_TYPE_CUSTOM, "CUSTOM" },
        { CL_DEVICE_TYPE_DEFAULT, "DEFAULT" },
    };
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(t & names[i].bit))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i].name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, len, "UNKNOWN");
    return buf;
}
