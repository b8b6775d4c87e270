/* Registering host ranges with devices (gs_pin.h): a CL_MEM_USE_HOST_PTR
 * buffer per (range, device), counted against a byte budget. */
#include "config.h"
#include "gs_pin.h"

#include <string.h>

#include "gs_log.h"

void gs_pin_init(gs_pin *p, void *base, size_t len, gs_pin_budget *b)
{
    memset(p, 0, sizeof *p);
    p->base = base;
    p->len = len;
    p->budget = b;
}

/* Reserve len bytes of the budget: 1, or 0 when they would exceed the cap. */
static int budget_take(gs_pin_budget *b, size_t len)
{
    uint64_t used = atomic_load(&b->used);
    uint64_t cap = atomic_load(&b->cap);
    do {
        if (used + len > cap || used + len < used)
            return 0;
    } while (!atomic_compare_exchange_weak(&b->used, &used, used + len));
    return 1;
}

gs_pin_state gs_pin_ensure(gs_pin *p, gs_dev *dev)
{
    gs_pin_budget *b = p->budget;
    int i = dev->index;
    if (!b || i < 0 || i >= GS_PIN_DEVS || !p->len)
        return GS_PIN_REFUSED;
    if (p->state[i] != GS_PIN_UNTRIED)
        return p->state[i];
    p->state[i] = GS_PIN_REFUSED;
    if ((dev->info.type & CL_DEVICE_TYPE_CPU) && !b->any_device)
        return GS_PIN_REFUSED;      /* host memory already: nothing to gain */
    if (!atomic_load(&b->cap) || !dev->ctx)
        return GS_PIN_REFUSED;
    if (!budget_take(b, p->len)) {
        if (atomic_fetch_add(&b->refused, 1) == 0)
            GS_INFO("device %d (%s): pinning a %.1f MiB block would exceed max_pinned_bytes "
                    "(%.1f of %.1f MiB pinned); it is copied the pageable way (slower), as "
                    "are later blocks over the cap", i, dev->info.name,
                    (double)p->len / 1048576.0, (double)atomic_load(&b->used) / 1048576.0,
                    (double)atomic_load(&b->cap) / 1048576.0);
        return GS_PIN_REFUSED;
    }
    cl_int rc = CL_SUCCESS;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, p->len,
                              p->base, &rc);
    if (!m || rc != CL_SUCCESS) {
        atomic_fetch_sub(&b->used, p->len);
        if (atomic_fetch_add(&b->refused, 1) == 0)
            GS_WARN("device %d (%s): the driver refused to pin a %.1f MiB block (%s); it is "
                    "copied the pageable way (slower), as are later blocks it refuses", i,
                    dev->info.name, (double)p->len / 1048576.0, gs_cl_errname(rc));
        return GS_PIN_REFUSED;
    }
    atomic_fetch_add(&b->pinned, 1);
    p->reg[i] = m;
    p->state[i] = GS_PIN_PINNED;
    GS_DEBUG("device %d (%s): pinned a %.1f MiB block", i, dev->info.name,
             (double)p->len / 1048576.0);
    return GS_PIN_PINNED;
}

void gs_pin_release(gs_pin *p)
{
    for (int i = 0; i < GS_PIN_DEVS; i++) {
        if (p->reg[i]) {
            clReleaseMemObject(p->reg[i]);
            p->reg[i] = NULL;
            if (p->budget)
                atomic_fetch_sub(&p->budget->used, p->len);
        }
        p->state[i] = GS_PIN_UNTRIED;
    }
}
