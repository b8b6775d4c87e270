/* Pinning a client's host memory for a device's DMA. On NVIDIA's OpenCL a
 * copy from pageable memory goes through the driver's bounce buffers (about
 * 6 GB/s on the H200 machine), while a range the driver has pinned moves at
 * the PCIe rate (55 GB/s). Creating a CL_MEM_USE_HOST_PTR buffer over a
 * range pins it; from then on a plain clEnqueueWriteBuffer/ReadBuffer whose
 * host pointer lies inside the range takes the fast path. So a block the
 * daemon sees again (a client's gsort_alloc memory, libgsort's staging
 * memfd) is registered once per device and kept: the algorithms need no
 * change, since they already copy from and to the request's arrays.
 *
 * The registration buffer itself is never read, written or passed to a
 * kernel: the runtime keeps a device-side mirror of a USE_HOST_PTR buffer
 * that goes stale when the host rewrites the memory, so the current bytes
 * are always moved from the host range, every request.
 *
 * A budget caps the bytes pinned at once (max_pinned_bytes); a registration
 * over the cap, or one the driver refuses, leaves the block on the pageable
 * path, which is correct, only slower. CPU devices are never registered
 * (device memory is host memory there). */
#ifndef GS_PIN_H
#define GS_PIN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gs_dev.h"

#define GS_PIN_DEVS 16           /* devices a block can be registered with */

typedef struct gs_pin_budget {
    _Atomic uint64_t cap;        /* bytes; 0: never pin (changed live on a reload) */
    _Atomic uint64_t used;       /* bytes pinned now */
    _Atomic unsigned long pinned, refused;   /* registrations made, and refused */
    int any_device;              /* test hook: register on CPU devices too */
} gs_pin_budget;

typedef enum gs_pin_state {
    GS_PIN_UNTRIED = 0,
    GS_PIN_PINNED,
    GS_PIN_REFUSED               /* over the cap, or the driver said no */
} gs_pin_state;

typedef struct gs_pin {
    void *base;                  /* the host range, page-aligned (an mmap) */
    size_t len;
    cl_mem reg[GS_PIN_DEVS];     /* the registration per device index */
    gs_pin_state state[GS_PIN_DEVS];
    gs_pin_budget *budget;       /* where reg's bytes are counted */
} gs_pin;

/* A range not registered anywhere yet. */
void gs_pin_init(gs_pin *p, void *base, size_t len, gs_pin_budget *b);
/* Register the range with dev (its index in the probe list) unless that was
 * done or refused before: GS_PIN_PINNED, GS_PIN_REFUSED, or the state it
 * already had. Never an error: a refusal is logged once per device and
 * reason, and the copy goes the pageable way. Called on the device's
 * worker thread; one block is never registered from two threads at once
 * (a connection has one request in flight). */
gs_pin_state gs_pin_ensure(gs_pin *p, gs_dev *dev);
/* Release every registration (the caller has finished all copies), giving
 * the bytes back to the budget. The range itself stays the caller's. */
void gs_pin_release(gs_pin *p);

#endif
