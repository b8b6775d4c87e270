/* The PCIe round trip of bench/pcie.h, timed on pinned host buffers
 * (CL_MEM_ALLOC_HOST_PTR, mapped once and touched before timing), each
 * request array in its own device buffer; the h2d and d2h parts come from
 * the profiling events. A GPU shared with the daemon may run out of
 * resources: that is noted on the row, not an error. */
#include "config.h"
#include "pcie.h"
#include "benchutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs_cl.h"
#include "gs_clrun.h"
#include "gs_err.h"
#include "gs_time.h"

int pcie_open(pcie *pc, int device)
{
    memset(pc, 0, sizeof *pc);
    if (device == -1) {
        printf("# pcie: skipped (--pcie-device -1)\n");
        return 0;
    }
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&pc->devs, &pc->ndev, &err) < 0) {
        fprintf(stderr, "gsort-netbench: probing OpenCL devices for the PCIe test: %s\n", err.msg);
        return -1;
    }
    int idx = device;
    if (idx < 0) {
        for (size_t i = 0; i < pc->ndev && idx < 0; i++)
            if (pc->devs[i].info.type & CL_DEVICE_TYPE_GPU)
                idx = (int)i;
        if (idx < 0) {
            /* PoCL and other CPU devices share host memory: no bus to cross */
            printf("# pcie: skipped (no GPU device here; a CPU device has no PCIe transfer)\n");
            return 0;
        }
    } else if ((size_t)idx >= pc->ndev) {
        fprintf(stderr, "gsort-netbench: --pcie-device %d: no such device (%zu found)\n", idx,
                pc->ndev);
        return -1;
    }
    pc->dev = &pc->devs[idx];
    if (gs_dev_open(pc->dev, &err) < 0) {
        fprintf(stderr, "gsort-netbench: opening device %d for the PCIe test: %s\n", idx, err.msg);
        return -1;
    }
    printf("# pcie: device %d %s, pinned host buffers (CL_MEM_ALLOC_HOST_PTR, mapped), "
           "write of the request's bytes + read of the reply's, median of reps\n",
           idx, pc->dev->info.name);
    return 0;
}

void pcie_close(pcie *pc)
{
    if (pc->devs)
        gs_dev_free_list(pc->devs, pc->ndev);
    memset(pc, 0, sizeof *pc);
}

int pcie_measure(pcie *pc, gs_dtype dtype, gs_payload payload, int reps, size_t n,
                 pcie_res *out)
{
    memset(out, 0, sizeof *out);
    if (!pc->dev)
        return 0;
    gs_dev *d = pc->dev;
    size_t ks = gs_dtype_size(dtype), vs = gs_payload_size(payload);
    size_t bytes[2] = { n * ks, n * vs };
    int up[2] = { 1, payload == GS_PL_U32 || payload == GS_PL_U64 };
    int narr = vs ? 2 : 1;
    cl_mem host[2] = { 0 }, dbuf[2] = { 0 };
    void *hp[2] = { 0 };
    double *tw = calloc((size_t)reps, sizeof *tw), *th = calloc((size_t)reps, sizeof *th),
           *td = calloc((size_t)reps, sizeof *td);
    int rc = -1;
    cl_int st = CL_SUCCESS;
    const char *call = "";
    if (!tw || !th || !td) {
        snprintf(out->note, sizeof out->note, "out of memory");
        goto done;
    }
    for (int a = 0; a < narr; a++)
        if (bytes[a] > d->info.max_alloc) {
            snprintf(out->note, sizeof out->note, "%zu bytes > device max alloc", bytes[a]);
            rc = 0;
            goto done;
        }
    for (int a = 0; a < narr; a++) {
        call = "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)";
        host[a] = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes[a], NULL,
                                 &st);
        if (st != CL_SUCCESS)
            goto clfail;
        call = "clCreateBuffer";
        dbuf[a] = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes[a], NULL, &st);
        if (st != CL_SUCCESS)
            goto clfail;
        call = "clEnqueueMapBuffer";
        hp[a] = clEnqueueMapBuffer(d->queue, host[a], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                   bytes[a], 0, NULL, NULL, &st);
        if (st != CL_SUCCESS)
            goto clfail;
        memset(hp[a], 0x5a, bytes[a]);   /* touch every page before timing */
    }
    for (int r = -1; r < reps; r++) {   /* r = -1: warm-up */
        cl_event ev[4];
        int nev = 0, nup = 0;
        double t0 = gs_now_ms();
        for (int a = 0; a < narr; a++)
            if (up[a]) {
                call = "clEnqueueWriteBuffer";
                st = clEnqueueWriteBuffer(d->queue, dbuf[a], CL_FALSE, 0, bytes[a], hp[a], 0, NULL,
                                          &ev[nev]);
                if (st != CL_SUCCESS)
                    goto evfail;
                nev++;
                nup++;
            }
        for (int a = 0; a < narr; a++) {
            call = "clEnqueueReadBuffer";
            st = clEnqueueReadBuffer(d->queue, dbuf[a], CL_FALSE, 0, bytes[a], hp[a], 0, NULL,
                                     &ev[nev]);
            if (st != CL_SUCCESS)
                goto evfail;
            nev++;
        }
        call = "clFinish";
        st = clFinish(d->queue);
        double t1 = gs_now_ms();
        if (r >= 0 && st == CL_SUCCESS) {
            tw[r] = t1 - t0;
            th[r] = td[r] = 0;
            for (int e = 0; e < nev; e++)
                (e < nup ? th : td)[r] += gs_clrun_event_ms(ev[e]);
        }
    evfail:
        for (int e = 0; e < nev; e++)
            clReleaseEvent(ev[e]);
        if (st != CL_SUCCESS)
            goto clfail;
    }
    out->ok = 1;
    out->wall_ms = bu_median(tw, (size_t)reps);
    out->h2d_ms = bu_median(th, (size_t)reps);
    out->d2h_ms = bu_median(td, (size_t)reps);
    rc = 0;
    goto done;
clfail:
    fprintf(stderr, "gsort-netbench: PCIe test n=%zu: %s: %s (%d)\n", n, call, gs_cl_errname(st),
            (int)st);
    if (gs_cl_is_exhaustion(st)) {
        /* the GPU is shared with the daemon: note it, keep benchmarking */
        snprintf(out->note, sizeof out->note, "%s", gs_cl_errname(st));
        rc = 0;
    }
done:
    for (int a = 0; a < 2; a++) {
        if (hp[a])
            clEnqueueUnmapMemObject(d->queue, host[a], hp[a], 0, NULL, NULL);
    }
    clFinish(d->queue);
    for (int a = 0; a < 2; a++) {
        if (host[a])
            clReleaseMemObject(host[a]);
        if (dbuf[a])
            clReleaseMemObject(dbuf[a]);
    }
    free(tw);
    free(th);
    free(td);
    return rc;
}
