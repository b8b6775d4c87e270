/* The device layer: finds every OpenCL device on the machine, reads the
 * properties tuning and planning depend on, and owns the context and
 * profiling-enabled queue each device is used through. A device's identity
 * (platform name, device name, driver version) is the tuning-database key. */
#ifndef GS_DEV_H
#define GS_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "gs_cl.h"

typedef struct gs_dev_info {
    char platform[256];     /* CL_PLATFORM_NAME */
    char platform_version[256];
    char name[256];         /* CL_DEVICE_NAME */
    char vendor[256];       /* CL_DEVICE_VENDOR */
    char driver[256];       /* CL_DRIVER_VERSION */
    char version[256];      /* CL_DEVICE_VERSION */
    char c_version[256];    /* CL_DEVICE_OPENCL_C_VERSION */
    cl_device_type type;
    unsigned compute_units;
    size_t max_wg_size;
    uint64_t local_mem;     /* bytes */
    int local_mem_dedicated;/* CL_LOCAL (1) or emulated in global (0) */
    uint64_t global_mem;    /* bytes */
    uint64_t max_alloc;     /* bytes */
    int profiling;          /* 1 if a profiled command returned usable timestamps */
    int has_int64_atomics;  /* cl_khr_int64_base_atomics */
    unsigned nv_cc_major;   /* NVIDIA compute capability major (cl_nv_device_attribute_query),
                               0 on other devices */
} gs_dev_info;

struct gs_prog_entry;

/* The device knows nothing of programs: the program layer (gs_prog.c) keeps
 * its list here and, with the first entry, sets progs_release, which
 * gs_dev_close calls to release them. So the dependency runs one way. */
/* Queues a device may have: its own and up to three more (gs_dev_lane). */
#define GS_DEV_LANES 4

typedef struct gs_dev {
    gs_dev_info info;
    int index;                  /* position in the probe list */
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;             /* NULL until gs_dev_open */
    cl_command_queue queue;     /* in-order, profiling enabled when available */
    cl_command_queue lanes[GS_DEV_LANES - 1];   /* further such queues, each made on
                                                   first need (gs_dev_lane) */
    pthread_mutex_t lock;       /* guards progs */
    pthread_cond_t progs_cv;    /* a program build ended (gs_prog.c builds unlocked) */
    struct gs_prog_entry *progs;/* built programs, see gs_prog.h */
    void (*progs_release)(struct gs_dev *d); /* NULL until a program is kept */
    struct gs_bufpool *bufpool; /* pooled device buffers, see gs_bufpool.h (guarded by lock) */
    void (*bufpool_release)(struct gs_dev *d); /* NULL until a buffer is pooled */
    struct gs_stagebuf *stage;  /* pinned staging buffers, see gs_stage.h (made under lock) */
    void (*stage_release)(struct gs_dev *d); /* NULL until staging is made */
} gs_dev;

/* Probe all platforms and devices. No OpenCL platform at all is not an error:
 * *devs = NULL, *count = 0, returns 0. Devices are not opened; the profiling
 * check opens a temporary context. */
int gs_dev_probe(gs_dev **devs, size_t *count, gs_err *err);
void gs_dev_free_list(gs_dev *devs, size_t count);

/* Create the context and command queue (idempotent). */
int gs_dev_open(gs_dev *d, gs_err *err);
/* The device's queue number k, 1 to GS_DEV_LANES - 1 (each made once,
 * under the lock, on an open device): sorts enqueued on different queues
 * of a device overlap, one's transfers with another's kernels and
 * transfers. */
int gs_dev_lane(gs_dev *d, unsigned k, cl_command_queue *out, gs_err *err);
/* Release programs (through progs_release), pooled buffers (through
 * bufpool_release), queue and context. */
void gs_dev_close(gs_dev *d);

/* "GPU", "CPU", "ACCELERATOR", "CUSTOM", combined with '|'. */
const char *gs_dev_type_name(cl_device_type t, char *buf, size_t len);

#endif
