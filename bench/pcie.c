/* The PCIe floors of bench/pcie.h, timed on pinned host buffers
 * (CL_MEM_ALLOC_HOST_PTR, mapped once and touched before timing): netbench's
 * round trip, each request array in its own device buffer, and
 * gsort-throughput's duplex bandwidth, an upload and a download on two
 * queues of each device (a thread per device when all run at once); the
 * h2d and d2h parts come from the profiling events. A GPU shared with the
 * daemon may run out of resources: that is noted, not an error. */
#include "config.h"
#include "pcie.h"
#include "benchutil.h"

#include <pthread.h>
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

/* ---- the duplex bandwidth (gsort-throughput) ---- */

/* One device's part: its two queues and buffers (0 the upload, 1 the
 * download), and each rep's start, end and event times. */
typedef struct dx_dev {
    gs_dev *d;
    cl_command_queue q[2];
    cl_mem host[2], dbuf[2];
    void *hp[2];
    size_t bytes;
    int reps;
    double *t0, *t1, *th, *td;    /* reps each, one allocation (t0) */
    pthread_barrier_t *bar;       /* all at once: every rep starts on every device together */
    struct dx_gate *gate;         /* all at once: no rep before every thread exists */
    const char *prog;
    int rc;                       /* 0; 1: not measured, note says why; -1: failed */
    char note[128];
} dx_dev;

/* Threads wait here until all are made, so that a thread that could not be
 * made leaves none of the others waiting at the barrier. */
typedef struct dx_gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int go, abort;
} dx_gate;

/* A failed OpenCL call: noted when the device ran out of resources (it is
 * shared with the daemon), else a message. */
static void dx_fail(dx_dev *x, const char *call, cl_int st)
{
    if (gs_cl_is_exhaustion(st)) {
        snprintf(x->note, sizeof x->note, "%s: %s", call, gs_cl_errname(st));
        x->rc = 1;
        return;
    }
    fprintf(stderr, "%s: PCIe floor on device %d (%s): %s: %s (%d)\n", x->prog, x->d->index,
            x->d->info.name, call, gs_cl_errname(st), (int)st);
    x->rc = -1;
}

static void dx_setup(dx_dev *x)
{
    gs_err err;
    gs_err_clear(&err);
    cl_int st = CL_SUCCESS;
    const char *call = "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)";
    if (!(x->t0 = calloc(4 * (size_t)x->reps, sizeof(double)))) {
        fprintf(stderr, "%s: PCIe floor: out of memory\n", x->prog);
        x->rc = -1;
        return;
    }
    x->t1 = x->t0 + x->reps;
    x->th = x->t1 + x->reps;
    x->td = x->th + x->reps;
    if (gs_dev_lane(x->d, 1, &x->q[1], &err) < 0) {
        fprintf(stderr, "%s: PCIe floor on device %d: %s\n", x->prog, x->d->index, err.msg);
        x->rc = -1;
        return;
    }
    x->q[0] = x->d->queue;
    if (x->bytes > x->d->info.max_alloc) {
        snprintf(x->note, sizeof x->note, "%zu bytes > device max alloc", x->bytes);
        x->rc = 1;
        return;
    }
    for (int a = 0; a < 2 && st == CL_SUCCESS; a++) {
        call = "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)";
        x->host[a] = clCreateBuffer(x->d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                    x->bytes, NULL, &st);
        if (st != CL_SUCCESS)
            break;
        call = "clCreateBuffer";
        x->dbuf[a] = clCreateBuffer(x->d->ctx, CL_MEM_READ_WRITE, x->bytes, NULL, &st);
        if (st != CL_SUCCESS)
            break;
        call = "clEnqueueMapBuffer";
        x->hp[a] = clEnqueueMapBuffer(x->q[0], x->host[a], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      x->bytes, 0, NULL, NULL, &st);
        if (st == CL_SUCCESS)
            memset(x->hp[a], 0x5a, x->bytes);   /* touch every page before timing */
    }
    if (st != CL_SUCCESS)
        dx_fail(x, call, st);
}

static void dx_teardown(dx_dev *x)
{
    for (int a = 0; a < 2; a++)
        if (x->hp[a])
            clEnqueueUnmapMemObject(x->q[0], x->host[a], x->hp[a], 0, NULL, NULL);
    for (int q = 0; q < 2; q++)
        if (x->q[q])
            clFinish(x->q[q]);
    for (int a = 0; a < 2; a++) {
        if (x->host[a])
            clReleaseMemObject(x->host[a]);
        if (x->dbuf[a])
            clReleaseMemObject(x->dbuf[a]);
    }
    free(x->t0);
}

/* One rep (r < 0: the warm-up, not kept): the upload and the download both
 * submitted before either is waited for, so that they cross the bus
 * together. */
static void dx_rep(dx_dev *x, int r)
{
    cl_event ev[2] = { 0 };
    const char *call = "clEnqueueWriteBuffer";
    double t0 = gs_now_ms();
    cl_int st = clEnqueueWriteBuffer(x->q[0], x->dbuf[0], CL_FALSE, 0, x->bytes, x->hp[0], 0,
                                     NULL, &ev[0]);
    if (st == CL_SUCCESS) {
        call = "clEnqueueReadBuffer";
        st = clEnqueueReadBuffer(x->q[1], x->dbuf[1], CL_FALSE, 0, x->bytes, x->hp[1], 0, NULL,
                                 &ev[1]);
    }
    for (int q = 0; q < 2 && st == CL_SUCCESS; q++) {
        call = "clFlush";
        st = clFlush(x->q[q]);
    }
    for (int q = 0; q < 2 && st == CL_SUCCESS; q++) {
        call = "clFinish";
        st = clFinish(x->q[q]);
    }
    double t1 = gs_now_ms();
    if (st == CL_SUCCESS && r >= 0) {
        x->t0[r] = t0;
        x->t1[r] = t1;
        x->th[r] = gs_clrun_event_ms(ev[0]);
        x->td[r] = gs_clrun_event_ms(ev[1]);
    }
    for (int e = 0; e < 2; e++)
        if (ev[e])
            clReleaseEvent(ev[e]);
    if (st != CL_SUCCESS)
        dx_fail(x, call, st);
}

static void *dx_thread(void *arg)
{
    dx_dev *x = arg;
    if (x->gate) {
        pthread_mutex_lock(&x->gate->m);
        while (!x->gate->go)
            pthread_cond_wait(&x->gate->c, &x->gate->m);
        int abort = x->gate->abort;
        pthread_mutex_unlock(&x->gate->m);
        if (abort)
            return NULL;
    }
    for (int r = -1; r < x->reps; r++) {
        /* a device that failed still meets the others at every rep */
        if (x->bar)
            pthread_barrier_wait(x->bar);
        if (x->rc == 0)
            dx_rep(x, r);
    }
    return NULL;
}

/* A rate in 1e9 B/s of `bytes` in `ms`; 0 for no time. */
static double dx_gbps(double bytes, double ms)
{
    return ms > 0 ? bytes / (ms * 1e6) : 0;
}

/* The median of each way's event time (the wall when there is no
 * profiling). */
static void dx_ways(dx_dev *x, double wall_ms, double *h2d_gbps, double *d2h_gbps)
{
    double h = bu_median(x->th, (size_t)x->reps), d = bu_median(x->td, (size_t)x->reps);
    *h2d_gbps = dx_gbps((double)x->bytes, h > 0 ? h : wall_ms);
    *d2h_gbps = dx_gbps((double)x->bytes, d > 0 ? d : wall_ms);
}

static void dx_alone(dx_dev *x, pcie_duplex_res *o)
{
    dx_thread(x);
    snprintf(o->note, sizeof o->note, "%s", x->note);
    if (x->rc != 0)
        return;
    for (int r = 0; r < x->reps; r++)
        x->t1[r] -= x->t0[r];   /* t1 becomes each rep's wall */
    o->ok = 1;
    o->way_bytes = x->bytes;
    o->wall_ms = bu_median(x->t1, (size_t)x->reps);
    o->gbps = dx_gbps(2.0 * (double)x->bytes, o->wall_ms);
    dx_ways(x, o->wall_ms, &o->h2d_gbps, &o->d2h_gbps);
}

/* Run the devices whose flag is set in `on` at once, a thread each: 0, or
 * -1 when a thread could not be made (none then runs a rep). */
static int dx_run_all(dx_dev *xs, size_t nd, const int *on, size_t non, const char *prog)
{
    pthread_t *tid = calloc(nd, sizeof *tid);
    pthread_barrier_t bar;
    dx_gate gate = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };
    if (!tid || pthread_barrier_init(&bar, NULL, (unsigned)non) != 0) {
        fprintf(stderr, "%s: PCIe floor: out of memory\n", prog);
        free(tid);
        return -1;
    }
    size_t made = 0;
    for (size_t i = 0; i < nd && !gate.abort; i++) {
        if (!on[i])
            continue;
        xs[i].bar = &bar;
        xs[i].gate = &gate;
        if (pthread_create(&tid[made], NULL, dx_thread, &xs[i]) != 0)
            gate.abort = 1;
        else
            made++;
    }
    pthread_mutex_lock(&gate.m);
    gate.go = 1;
    pthread_cond_broadcast(&gate.c);
    pthread_mutex_unlock(&gate.m);
    for (size_t k = 0; k < made; k++)
        pthread_join(tid[k], NULL);
    pthread_barrier_destroy(&bar);
    free(tid);
    if (gate.abort)
        fprintf(stderr, "%s: PCIe floor: cannot start a thread per device\n", prog);
    return gate.abort ? -1 : 0;
}

/* Every device measured alone (rc 0), at once. A rep's wall is its first
 * start to its last end over the devices; each way's rate is the sum of
 * the devices'. */
static int dx_all(dx_dev *xs, size_t nd, const char *prog, pcie_duplex_res *o)
{
    int *on = calloc(nd, sizeof *on);
    double *wall = calloc((size_t)xs[0].reps, sizeof *wall);
    size_t non = 0;
    int rc = on && wall ? 0 : -1;
    for (size_t i = 0; i < nd && on; i++)
        if ((on[i] = xs[i].rc == 0))
            non++;
        else
            snprintf(o->note, sizeof o->note, "device %d left out (%.90s)", xs[i].d->index,
                     xs[i].note);
    if (rc < 0)
        fprintf(stderr, "%s: PCIe floor: out of memory\n", prog);
    else if (!non)
        snprintf(o->note, sizeof o->note, "no device could be measured alone");
    else
        rc = dx_run_all(xs, nd, on, non, prog);
    for (size_t i = 0; i < nd && rc == 0 && non; i++)
        if (on[i] && xs[i].rc != 0) {
            /* failed meanwhile: its reps are not all there to time */
            snprintf(o->note, sizeof o->note, "device %d failed when all ran at once (%.80s)",
                     xs[i].d->index, xs[i].note);
            rc = xs[i].rc < 0 ? -1 : 0;
            non = 0;
        }
    for (int r = 0; r < xs[0].reps && rc == 0 && non; r++) {
        double first = 0, last = 0;
        for (size_t i = 0, seen = 0; i < nd; i++)
            if (on[i]) {
                first = seen && first < xs[i].t0[r] ? first : xs[i].t0[r];
                last = seen && last > xs[i].t1[r] ? last : xs[i].t1[r];
                seen = 1;
            }
        wall[r] = last - first;
    }
    if (rc == 0 && non) {
        o->ok = 1;
        o->wall_ms = bu_median(wall, (size_t)xs[0].reps);
        for (size_t i = 0; i < nd; i++)
            if (on[i]) {
                double h, d;
                dx_ways(&xs[i], o->wall_ms, &h, &d);
                o->h2d_gbps += h;
                o->d2h_gbps += d;
                o->way_bytes += xs[i].bytes;
            }
        o->gbps = dx_gbps(2.0 * (double)o->way_bytes, o->wall_ms);
    }
    free(on);
    free(wall);
    return rc;
}

int pcie_duplex(gs_dev *const *devs, size_t nd, size_t bytes, int reps, const char *prog,
                pcie_duplex_res *per, pcie_duplex_res *all)
{
    memset(all, 0, sizeof *all);
    memset(per, 0, nd * sizeof *per);
    dx_dev *xs = calloc(nd ? nd : 1, sizeof *xs);
    if (!xs) {
        fprintf(stderr, "%s: PCIe floor: out of memory\n", prog);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < nd && rc == 0; i++) {
        xs[i] = (dx_dev){ .d = devs[i], .bytes = bytes, .reps = reps, .prog = prog };
        dx_setup(&xs[i]);
        if (xs[i].rc == 0)
            dx_alone(&xs[i], &per[i]);
        else
            snprintf(per[i].note, sizeof per[i].note, "%s", xs[i].note);
        if (xs[i].rc < 0)
            rc = -1;
    }
    if (rc == 0 && nd)
        rc = dx_all(xs, nd, prog, all);
    for (size_t i = 0; i < nd; i++)
        if (xs[i].d)
            dx_teardown(&xs[i]);
    free(xs);
    return rc;
}
