/* gsort-launchbench: what the OpenCL driver charges for the commands one
 * small device sort is made of (issue 36: the fixed cost of a request), so
 * that a change to the device frame is judged against the driver's floor
 * rather than guessed: a launch with and without its profiling event, on a
 * profiling queue and on a plain one, the argument setting before it, a
 * small pageable write, a fill, a blocking read, a clFinish of an empty
 * queue, and a sort-shaped chain (an upload, six launches, a download) with
 * one wait at the end against a wait before the download, with and without
 * a clFlush after the upload. Medians over --reps batches, µs per command
 * (the enqueue call's own cost) or per chain (wall, first enqueue to the
 * wait's return). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "gs_cl.h"
#include "gs_dev.h"
#include "gs_time.h"

static const char *src =
    "__kernel void nop(__global uint *a, uint n, uint b, uint c)\n"
    "{ if (get_global_id(0) == n) a[0] = b + c; }\n";

enum { BATCH = 64 };

typedef struct lb {
    gs_dev *dev;
    cl_command_queue qp, qn;   /* profiling, plain */
    cl_kernel k;
    cl_mem buf, big;
    size_t groups, wg, bigbytes;
    unsigned reps;
    void *host, *hbig;
} lb;

static void die(const char *what, cl_int rc)
{
    fprintf(stderr, "gsort-launchbench: %s: %d\n", what, rc);
    exit(1);
}

static void args(lb *b)
{
    cl_uint n = 0xffffffffu, x = 1, y = 2;
    clSetKernelArg(b->k, 0, sizeof b->buf, &b->buf);
    clSetKernelArg(b->k, 1, sizeof n, &n);
    clSetKernelArg(b->k, 2, sizeof x, &x);
    clSetKernelArg(b->k, 3, sizeof y, &y);
}

static void launch(lb *b, cl_command_queue q, cl_event *ev)
{
    size_t g = b->groups * b->wg;
    cl_int rc = clEnqueueNDRangeKernel(q, b->k, 1, NULL, &g, &b->wg, 0, NULL, ev);
    if (rc != CL_SUCCESS)
        die("clEnqueueNDRangeKernel", rc);
}

/* Per-command enqueue cost of `what` (0 launch+event, 1 launch, 2 launch
 * on the plain queue, 3 args+launch, 4 17 KiB pageable write, 5 fill of
 * 17 KiB), µs: the batch's enqueue wall over BATCH, median of reps. */
static double per_command(lb *b, int what)
{
    double *v = calloc(b->reps, sizeof *v);
    cl_event ev[BATCH];
    for (unsigned r = 0; r < b->reps; r++) {
        cl_command_queue q = what == 2 ? b->qn : b->qp;
        clFinish(q);
        double t0 = gs_now_ms();
        for (int i = 0; i < BATCH; i++) {
            static const cl_uint zero = 0;
            switch (what) {
            case 0: launch(b, q, &ev[i]); break;
            case 3: args(b); /* fall through */
            case 1: case 2: launch(b, q, NULL); break;
            case 4: clEnqueueWriteBuffer(q, b->buf, CL_FALSE, 0, 17408, b->host, 0, NULL, NULL);
                break;
            case 5: clEnqueueFillBuffer(q, b->buf, &zero, sizeof zero, 0, 17408, 0, NULL, NULL);
                break;
            }
        }
        v[r] = (gs_now_ms() - t0) * 1000.0 / BATCH;
        clFinish(q);
        if (what == 0)
            for (int i = 0; i < BATCH; i++)
                clReleaseEvent(ev[i]);
    }
    double m = bu_median(v, b->reps);
    free(v);
    return m;
}

/* Wall of one sort-shaped chain, µs: upload `bytes`, six launches, then
 * the download; mode 0: one wait at the end (non-blocking read, clFinish),
 * 1: clFinish then a blocking read (two waits), 2: as 0 with a clFlush
 * after the upload, 3: as 0 with every launch's event kept (profiling). */
static double chain(lb *b, size_t bytes, int mode)
{
    double *v = calloc(b->reps, sizeof *v);
    cl_command_queue q = b->qp;
    for (unsigned r = 0; r < b->reps; r++) {
        cl_event ev[8] = { 0 };
        int ne = 0;
        clFinish(q);
        double t0 = gs_now_ms();
        clEnqueueWriteBuffer(q, b->big, CL_FALSE, 0, bytes, b->hbig, 0, NULL,
                             mode == 3 ? &ev[ne++] : NULL);
        if (mode == 2)
            clFlush(q);
        for (int i = 0; i < 6; i++) {
            args(b);
            launch(b, q, mode == 3 ? &ev[ne++] : NULL);
        }
        if (mode == 1) {
            clFinish(q);
            clEnqueueReadBuffer(q, b->big, CL_TRUE, 0, bytes, b->hbig, 0, NULL, NULL);
        } else {
            clEnqueueReadBuffer(q, b->big, CL_FALSE, 0, bytes, b->hbig, 0, NULL,
                                mode == 3 ? &ev[ne++] : NULL);
            clFinish(q);
        }
        v[r] = (gs_now_ms() - t0) * 1000.0;
        for (int i = 0; i < ne; i++)
            clReleaseEvent(ev[i]);
    }
    double m = bu_median(v, b->reps);
    free(v);
    return m;
}

/* Round trip of one command, µs: a clFinish of an empty queue (what == 0),
 * a blocking 4-byte read (1), one launch and clFinish (2). */
static double round_trip(lb *b, int what)
{
    double *v = calloc(b->reps, sizeof *v);
    for (unsigned r = 0; r < b->reps; r++) {
        cl_uint w;
        clFinish(b->qp);
        double t0 = gs_now_ms();
        if (what == 1)
            clEnqueueReadBuffer(b->qp, b->buf, CL_TRUE, 0, sizeof w, &w, 0, NULL, NULL);
        if (what == 2)
            launch(b, b->qp, NULL);
        if (what != 1)
            clFinish(b->qp);
        v[r] = (gs_now_ms() - t0) * 1000.0;
    }
    double m = bu_median(v, b->reps);
    free(v);
    return m;
}

int main(int argc, char **argv)
{
    long devidx = -1;
    lb b;
    memset(&b, 0, sizeof b);
    b.reps = 101;
    b.groups = 256;
    b.wg = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            devidx = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            b.reps = (unsigned)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: gsort-launchbench [--device N] [--reps R]\n");
            return 2;
        }
    }
    gs_dev *devs = NULL;
    size_t ndev = 0;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &ndev, &err) < 0 || ndev == 0) {
        fprintf(stderr, "gsort-launchbench: no OpenCL device (%s)\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < ndev && devidx < 0; i++)
        if (devs[i].info.type & CL_DEVICE_TYPE_GPU)
            devidx = (long)i;
    if (devidx < 0)
        devidx = 0;
    if ((size_t)devidx >= ndev || gs_dev_open(&devs[devidx], &err) < 0) {
        fprintf(stderr, "gsort-launchbench: device %ld: %s\n", devidx, err.msg);
        return 1;
    }
    b.dev = &devs[devidx];
    if (!b.dev->info.profiling) {
        fprintf(stderr, "gsort-launchbench: device %ld has no profiling queue\n", devidx);
        return 1;
    }
    cl_int rc;
    b.qp = b.dev->queue;
    b.qn = clCreateCommandQueue(b.dev->ctx, b.dev->id, 0, &rc);
    if (rc != CL_SUCCESS)
        die("clCreateCommandQueue", rc);
    cl_program p = clCreateProgramWithSource(b.dev->ctx, 1, &src, NULL, &rc);
    if (rc != CL_SUCCESS || (rc = clBuildProgram(p, 1, &b.dev->id, "", NULL, NULL)) != CL_SUCCESS)
        die("building the kernel", rc);
    b.k = clCreateKernel(p, "nop", &rc);
    if (rc != CL_SUCCESS)
        die("clCreateKernel", rc);
    b.bigbytes = (size_t)1 << 22;
    b.buf = clCreateBuffer(b.dev->ctx, CL_MEM_READ_WRITE, 17408, NULL, &rc);
    b.big = clCreateBuffer(b.dev->ctx, CL_MEM_READ_WRITE, b.bigbytes, NULL, &rc);
    b.host = calloc(1, 17408);
    b.hbig = calloc(1, b.bigbytes);
    if (rc != CL_SUCCESS || !b.host || !b.hbig)
        die("buffers", rc);
    args(&b);
    for (int w = 0; w < 3; w++)   /* warm the driver's paths */
        (void)chain(&b, 4096, w);
    printf("device %ld: %s (%s), %zu x %zu work-items per launch, median of %u\n", devidx,
           b.dev->info.name, b.dev->info.driver, b.groups, b.wg, b.reps);
    printf("enqueue cost per command, us:\n");
    static const char *names[] = { "launch, profiling queue, event kept",
                                   "launch, profiling queue, no event",
                                   "launch, plain queue, no event",
                                   "4 clSetKernelArg + launch, no event",
                                   "17 KiB pageable write, non-blocking",
                                   "17 KiB fill" };
    for (int w = 0; w < 6; w++)
        printf("  %-40s %8.2f\n", names[w], per_command(&b, w));
    printf("round trips, us:\n");
    printf("  %-40s %8.2f\n", "clFinish of an empty queue", round_trip(&b, 0));
    printf("  %-40s %8.2f\n", "blocking 4-byte read", round_trip(&b, 1));
    printf("  %-40s %8.2f\n", "one launch + clFinish", round_trip(&b, 2));
    printf("upload, 6 launches, download (wall, us):\n");
    printf("  %10s %12s %12s %12s %12s\n", "bytes", "one wait", "two waits", "flush+one",
           "events+one");
    for (size_t bytes = 4096; bytes <= b.bigbytes; bytes *= 4)
        printf("  %10zu %12.2f %12.2f %12.2f %12.2f\n", bytes, chain(&b, bytes, 0),
               chain(&b, bytes, 1), chain(&b, bytes, 2), chain(&b, bytes, 3));
    return 0;
}
