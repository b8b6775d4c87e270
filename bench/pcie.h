/* gsort-netbench's floor: the pinned-memory PCIe round trip of a request's
 * bytes, timed with OpenCL directly on a GPU of this machine (not through
 * the daemon): host->device of what a request carries in, device->host of
 * what its reply carries out. No request can be served faster, so netbench
 * prints it beside each end-to-end time. */
#ifndef GS_BENCH_PCIE_H
#define GS_BENCH_PCIE_H

#include <stddef.h>

#include "gs_dev.h"
#include "gs_types.h"

typedef struct pcie {
    gs_dev *devs;
    size_t ndev;
    gs_dev *dev;              /* NULL: skipped */
} pcie;

typedef struct pcie_res {
    int ok;
    double wall_ms, h2d_ms, d2h_ms;   /* medians; h2d/d2h from profiling, 0 if unavailable */
    char note[128];
} pcie_res;

/* Pick and open the device: `device` an index, -2 the first GPU, -1 none.
 * Prints a "# pcie: ..." line saying which, or why the round trip is
 * skipped (then pc->dev is NULL and pcie_measure does nothing). Returns 0,
 * or -1 after a message on stderr. */
int pcie_open(pcie *pc, int device);
void pcie_close(pcie *pc);

/* Host->device of what a request of n keys of dtype with payload carries
 * in (keys, u32/u64 values), then device->host of what its reply carries
 * out (keys and any values), each array its own buffer as the daemon has
 * them: the medians of reps after one warm-up. Returns 0 (out->ok 0 with a
 * note when the device cannot hold or allocate the buffers), or -1 after a
 * message on stderr. */
int pcie_measure(pcie *pc, gs_dtype dtype, gs_payload payload, int reps, size_t n,
                 pcie_res *out);

#endif
