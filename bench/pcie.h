/* The benchmarks' PCIe floor, timed with OpenCL directly on the GPUs of
 * this machine (not through the daemon), on pinned host memory. For
 * gsort-netbench the round trip of one request's bytes: host->device of
 * what a request carries in, device->host of what its reply carries out; no
 * request can be served faster, so netbench prints it beside each
 * end-to-end time. For gsort-throughput the duplex bandwidth: an upload and
 * a download in flight together on two queues, per GPU and on all of them
 * at once, the most keys per second any number of clients can get through
 * the bus. */
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

/* The duplex bandwidth of one device, or of several at once. */
typedef struct pcie_duplex_res {
    int ok;                   /* 0: not measured (note says why) */
    size_t way_bytes;         /* bytes moved each way in one rep (all devices together) */
    double wall_ms;           /* median of reps: the upload and the download both done */
    double h2d_gbps, d2h_gbps;/* each way's rate while the other runs (1e9 B/s; from the
                                 profiling events, else from the wall) */
    double gbps;              /* both ways together: 2 * way_bytes / wall_ms */
    char note[128];
} pcie_duplex_res;

/* For each of devs[0..nd) (opened here: gs_dev_open and its second queue,
 * gs_dev_lane), `bytes` each way between pinned host buffers
 * (CL_MEM_ALLOC_HOST_PTR, mapped, touched) and device buffers: one write
 * on the device's queue and one read on its second queue, in flight
 * together, one warm-up then `reps` timed. per[i]: device i alone; all:
 * every device that could be measured alone, at once (a thread per device,
 * each rep started together; the wall of a rep is first start to last
 * end). A device that runs out of resources (shared with the daemon) or
 * cannot hold `bytes` is noted (ok 0), not an error. Returns 0, or -1
 * after a message "PROG: why" on stderr. */
int pcie_duplex(gs_dev *const *devs, size_t nd, size_t bytes, int reps, const char *prog,
                pcie_duplex_res *per, pcie_duplex_res *all);

#endif
