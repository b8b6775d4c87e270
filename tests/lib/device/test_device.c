/* Device probing on the machine's OpenCL devices (PoCL in CI): the identity
 * and limits the tuner keys on must be read and plausible, the queue must
 * work, and the JSON listing must say the same as the structs. */
#include "config.h"
#include "gs_dev.h"
#include "gs_devlist.h"
#include "tap.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    gs_dev *devs;
    size_t n;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &n, &err))
        tap_bail("gs_dev_probe failed: %s", err.msg);
    if (n == 0)
        tap_bail("no OpenCL device found: the test suite needs one (PoCL: run tools/install-deps)");
    tap_ok(n >= 1, "probe found %zu device(s)", n);

    int saw_pocl = 0;
    for (size_t i = 0; i < n; i++) {
        gs_dev *d = &devs[i];
        gs_dev_info *in = &d->info;
        tap_diag("device %zu: %s / %s / %s", i, in->platform, in->name, in->driver);
        tap_ok(d->index == (int)i, "device %zu has its list index", i);
        tap_ok(in->platform[0] && strcmp(in->platform, "?") != 0, "platform name read: %s", in->platform);
        tap_ok(in->name[0] && strcmp(in->name, "?") != 0, "device name read: %s", in->name);
        tap_ok(in->driver[0] && strcmp(in->driver, "?") != 0, "driver version read: %s", in->driver);
        tap_ok(strncmp(in->version, "OpenCL ", 7) == 0, "device version looks like 'OpenCL x.y': %s", in->version);
        tap_ok(strncmp(in->c_version, "OpenCL C ", 9) == 0, "OpenCL C version read: %s", in->c_version);
        tap_ok(in->type != 0, "device type read");
        tap_ok(in->compute_units >= 1, "compute units %u", in->compute_units);
        tap_ok(in->max_wg_size >= 1, "max work-group size %zu", in->max_wg_size);
        tap_ok(in->local_mem >= 1024, "local memory %llu bytes", (unsigned long long)in->local_mem);
        tap_ok(in->max_alloc > 0 && in->max_alloc <= in->global_mem,
               "0 < max allocation (%llu) <= global memory (%llu)",
               (unsigned long long)in->max_alloc, (unsigned long long)in->global_mem);
        if (strstr(in->platform, "Portable Computing Language")) {
            saw_pocl = 1;
            tap_ok(in->profiling == 1, "PoCL reports working profiling timers");
            tap_ok((in->type & CL_DEVICE_TYPE_CPU) != 0, "PoCL device is a CPU");
        }

        /* Open twice (idempotent), then a real round trip through the queue. */
        int rc = gs_dev_open(d, &err);
        tap_ok(rc == 0, "gs_dev_open: %s", rc ? err.msg : "ok");
        cl_context ctx = d->ctx;
        rc = gs_dev_open(d, &err);
        tap_ok(rc == 0 && d->ctx == ctx, "gs_dev_open is idempotent");
        if (d->ctx) {
            cl_int cr;
            cl_mem b = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 64 * sizeof(cl_uint), NULL, &cr);
            cl_uint pat = 0xC0FFEE11u, back[64] = { 0 };
            if (cr == CL_SUCCESS) {
                cr = clEnqueueFillBuffer(d->queue, b, &pat, sizeof pat, 0, sizeof back, 0, NULL, NULL);
                if (cr == CL_SUCCESS)
                    cr = clEnqueueReadBuffer(d->queue, b, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
                clReleaseMemObject(b);
            }
            int good = cr == CL_SUCCESS;
            for (int k = 0; k < 64; k++)
                good &= back[k] == pat;
            tap_ok(good, "fill + read back through the device queue");
        }
        gs_dev_close(d);
        tap_ok(d->ctx == NULL && d->queue == NULL, "gs_dev_close releases context and queue");
    }
    tap_ok(saw_pocl, "PoCL is among the devices (CI's device)");

    char *json = gs_devlist_json(devs, n);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    cJSON *arr = root ? cJSON_GetObjectItem(root, "devices") : NULL;
    tap_ok(cJSON_IsArray(arr) && (size_t)cJSON_GetArraySize(arr) == n, "JSON lists every device");
    for (size_t i = 0; arr && i < n && i < (size_t)cJSON_GetArraySize(arr); i++) {
        cJSON *o = cJSON_GetArrayItem(arr, (int)i);
        cJSON *name = cJSON_GetObjectItem(o, "name");
        cJSON *drv = cJSON_GetObjectItem(o, "driver_version");
        cJSON *cu = cJSON_GetObjectItem(o, "compute_units");
        cJSON *la = cJSON_GetObjectItem(o, "max_alloc_bytes");
        tap_ok(cJSON_IsString(name) && strcmp(name->valuestring, devs[i].info.name) == 0 &&
               cJSON_IsString(drv) && strcmp(drv->valuestring, devs[i].info.driver) == 0 &&
               cJSON_IsNumber(cu) && (unsigned)cu->valuedouble == devs[i].info.compute_units &&
               cJSON_IsNumber(la) && (uint64_t)la->valuedouble == devs[i].info.max_alloc,
               "JSON entry %zu matches the probed struct", i);
    }
    cJSON_Delete(root);
    free(json);

    char tb[64];
    tap_ok(strcmp(gs_dev_type_name(CL_DEVICE_TYPE_GPU, tb, sizeof tb), "GPU") == 0, "type name GPU");
    tap_ok(strcmp(gs_dev_type_name(CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_DEFAULT, tb, sizeof tb), "CPU|DEFAULT") == 0,
           "combined type names");
    tap_ok(strcmp(gs_dev_type_name(0, tb, sizeof tb), "UNKNOWN") == 0, "no type bits: UNKNOWN");

    gs_dev_free_list(devs, n);
    return tap_done();
}
