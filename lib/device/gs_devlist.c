/* Table and JSON output of the device list. The JSON keys are a stable
 * interface (scripts and the tuner's tests read them). */
#include "config.h"
#include "gs_devlist.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

void gs_devlist_print_table(FILE *out, const gs_dev *devs, size_t n)
{
    if (n == 0) {
        fprintf(out, "No OpenCL platform or device found; requests will be served by the host sort.\n");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const gs_dev_info *in = &devs[i].info;
        char type[64];
        gs_dev_type_name(in->type, type, sizeof type);
        fprintf(out, "Device %zu: %s\n", i, in->name);
        fprintf(out, "  %-18s %s (%s)\n", "platform", in->platform, in->platform_version);
        fprintf(out, "  %-18s %s\n", "vendor", in->vendor);
        fprintf(out, "  %-18s %s\n", "driver version", in->driver);
        fprintf(out, "  %-18s %s\n", "type", type);
        fprintf(out, "  %-18s %s / %s\n", "OpenCL", in->version, in->c_version);
        fprintf(out, "  %-18s %u\n", "compute units", in->compute_units);
        fprintf(out, "  %-18s %zu\n", "max work-group", in->max_wg_size);
        fprintf(out, "  %-18s %.0f KiB (%s)\n", "local memory", (double)in->local_mem / 1024.0,
                in->local_mem_dedicated ? "dedicated" : "global");
        fprintf(out, "  %-18s %.0f MiB\n", "global memory", mib(in->global_mem));
        fprintf(out, "  %-18s %.0f MiB\n", "max allocation", mib(in->max_alloc));
        fprintf(out, "  %-18s %s\n", "profiling timers", in->profiling ? "yes" : "no");
    }
}

char *gs_devlist_json(const gs_dev *devs, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "devices") : NULL;
    if (!arr) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const gs_dev_info *in = &devs[i].info;
        char type[64];
        cJSON *o = cJSON_CreateObject();
        if (!o) {
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddItemToArray(arr, o);
        cJSON_AddNumberToObject(o, "index", (double)i);
        cJSON_AddStringToObject(o, "platform", in->platform);
        cJSON_AddStringToObject(o, "platform_version", in->platform_version);
        cJSON_AddStringToObject(o, "name", in->name);
        cJSON_AddStringToObject(o, "vendor", in->vendor);
        cJSON_AddStringToObject(o, "driver_version", in->driver);
        cJSON_AddStringToObject(o, "type", gs_dev_type_name(in->type, type, sizeof type));
        cJSON_AddStringToObject(o, "device_version", in->version);
        cJSON_AddStringToObject(o, "opencl_c_version", in->c_version);
        cJSON_AddNumberToObject(o, "compute_units", in->compute_units);
        cJSON_AddNumberToObject(o, "max_work_group_size", (double)in->max_wg_size);
        cJSON_AddNumberToObject(o, "local_mem_bytes", (double)in->local_mem);
        cJSON_AddBoolToObject(o, "local_mem_dedicated", in->local_mem_dedicated);
        cJSON_AddNumberToObject(o, "global_mem_bytes", (double)in->global_mem);
        cJSON_AddNumberToObject(o, "max_alloc_bytes", (double)in->max_alloc);
        cJSON_AddBoolToObject(o, "profiling", in->profiling);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}
