/* gsort-pinbench: whether registering a client's memfd with a GPU (gs_pin.h,
 * the daemon's own code) gives its uploads and downloads the pinned rate,
 * every time (issue 36: on some H100 machines a kept block's 4 MiB upload
 * took 0.08-0.10 ms in one daemon run and 0.35-0.42 ms, the pageable rate,
 * in the next). For each of --trials fresh memfds of --mib MiB, filled by
 * another process through its own mapping (as a client fills the block it
 * sends) and then mapped here, as the daemon maps it:
 * the median of --reps blocking uploads and downloads before registering,
 * after registering, and after releasing and registering again; beside
 * them the device's own pinned buffers (CL_MEM_ALLOC_HOST_PTR, mapped),
 * the rate no registration can beat. GB/s; "slow" marks a registered copy
 * at less than half the pinned buffers' rate. --any-device registers with
 * a CPU device too (the daemon never does: device memory is host memory
 * there), so that the test suite runs it on PoCL. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchutil.h"
#include "gs_cl.h"
#include "gs_dev.h"
#include "gs_pin.h"
#include "gs_time.h"

typedef struct pb {
    gs_dev *dev;
    cl_mem dbuf;
    size_t bytes;
    unsigned reps;
} pb;

/* Median GB/s of reps blocking copies between host and dbuf (dir 0 up,
 * 1 down); 0 when a copy failed. */
static double rate(pb *b, void *host, int dir)
{
    double *v = calloc(b->reps, sizeof *v);
    if (!v)
        return 0;
    for (unsigned r = 0; r < b->reps; r++) {
        double t0 = gs_now_ms();
        cl_int rc = dir == 0
            ? clEnqueueWriteBuffer(b->dev->queue, b->dbuf, CL_TRUE, 0, b->bytes, host, 0, NULL,
                                   NULL)
            : clEnqueueReadBuffer(b->dev->queue, b->dbuf, CL_TRUE, 0, b->bytes, host, 0, NULL,
                                  NULL);
        if (rc != CL_SUCCESS) {
            free(v);
            return 0;
        }
        v[r] = (double)b->bytes / ((gs_now_ms() - t0) * 1e6);
    }
    double m = bu_median(v, b->reps);
    free(v);
    return m;
}

int main(int argc, char **argv)
{
    long devidx = -1, trials = 12, mib = 4;
    int any = 0;
    pb b = { .reps = 9 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            devidx = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            trials = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            b.reps = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--any-device"))
            any = 1;
        else {
            fprintf(stderr, "usage: gsort-pinbench [--device N] [--trials 12] [--mib 4] "
                    "[--reps 9] [--any-device]\n");
            return 2;
        }
    }
    if (trials < 1 || mib < 1 || mib > 4096 || b.reps < 1) {
        fprintf(stderr, "gsort-pinbench: --trials and --reps from 1, --mib 1..4096\n");
        return 2;
    }
    b.bytes = (size_t)mib << 20;
    gs_dev *devs = NULL;
    size_t ndev = 0;
    int ret = 1;
    cl_int rc = CL_SUCCESS;
    cl_mem pinned = NULL;
    void *ph = NULL;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &ndev, &err) < 0 || ndev == 0) {
        fprintf(stderr, "gsort-pinbench: no OpenCL device (%s)\n", err.msg);
        goto out;
    }
    for (size_t i = 0; i < ndev && devidx < 0; i++)
        if (devs[i].info.type & CL_DEVICE_TYPE_GPU)
            devidx = (long)i;
    if (devidx < 0 && any)
        devidx = 0;
    if (devidx < 0 || (size_t)devidx >= ndev || gs_dev_open(&devs[devidx], &err) < 0) {
        fprintf(stderr, "gsort-pinbench: no GPU to register with (%s)\n",
                err.msg[0] ? err.msg : "none found");
        goto out;
    }
    b.dev = &devs[devidx];
    b.dbuf = clCreateBuffer(b.dev->ctx, CL_MEM_READ_WRITE, b.bytes, NULL, &rc);
    pinned = b.dbuf ? clCreateBuffer(b.dev->ctx, CL_MEM_READ_WRITE |
                                            CL_MEM_ALLOC_HOST_PTR, b.bytes, NULL, &rc) : NULL;
    if (!b.dbuf || !pinned) {
        fprintf(stderr, "gsort-pinbench: device buffers of %zu bytes: %d\n", b.bytes, rc);
        goto out;
    }
    ph = clEnqueueMapBuffer(b.dev->queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                  b.bytes, 0, NULL, NULL, &rc);
    if (!ph) {
        fprintf(stderr, "gsort-pinbench: mapping the pinned buffer: %d\n", rc);
        goto out;
    }
    memset(ph, 1, b.bytes);
    double pin_up = rate(&b, ph, 0), pin_down = rate(&b, ph, 1);
    printf("device %ld: %s (%s); %ld MiB, median of %u copies, GB/s\n", devidx,
           b.dev->info.name, b.dev->info.driver, mib, b.reps);
    printf("the device's pinned buffers: up %.1f, down %.1f\n", pin_up, pin_down);
    printf("%5s %9s %9s %9s %9s %9s %9s %8s\n", "trial", "plain up", "down", "reg up", "down",
           "again up", "down", "reg ms");
    gs_pin_budget budget = { .cap = UINT64_MAX, .any_device = any };
    int slow = 0, slow_again = 0;
    for (long t = 0; t < trials; t++) {
        int fd = memfd_create("gsort-pinbench", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)b.bytes) < 0) {
            perror("gsort-pinbench: memfd");
            goto out;
        }
        pid_t pid = fork();
        if (pid == 0) {     /* the client: its own mapping, its first touch */
            void *c = mmap(NULL, b.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (c == MAP_FAILED)
                _exit(1);
            memset(c, (int)(t + 2), b.bytes);
            _exit(0);
        }
        int ws = 0;
        if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
            fprintf(stderr, "gsort-pinbench: the filling process failed\n");
            goto out;
        }
        void *m = mmap(NULL, b.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            perror("gsort-pinbench: mmap");
            goto out;
        }
        double up0 = rate(&b, m, 0), dn0 = rate(&b, m, 1);
        gs_pin p;
        gs_pin_init(&p, m, b.bytes, &budget);
        double t0 = gs_now_ms();
        gs_pin_state st = gs_pin_ensure(&p, b.dev);
        double reg_ms = gs_now_ms() - t0;
        double up1 = rate(&b, m, 0), dn1 = rate(&b, m, 1);
        gs_pin_release(&p);
        gs_pin_init(&p, m, b.bytes, &budget);
        gs_pin_ensure(&p, b.dev);
        double up2 = rate(&b, m, 0), dn2 = rate(&b, m, 1);
        gs_pin_release(&p);
        int s1 = up1 < pin_up / 2 || dn1 < pin_down / 2, s2 = up2 < pin_up / 2 ||
                                                               dn2 < pin_down / 2;
        slow += s1;
        slow_again += s2;
        printf("%5ld %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f%s%s%s\n", t, up0, dn0, up1, dn1,
               up2, dn2, reg_ms, st == GS_PIN_PINNED ? "" : " (not registered)",
               s1 ? " slow" : "", s2 ? " slow again" : "");
        munmap(m, b.bytes);
        close(fd);
    }
    printf("registered copies under half the pinned rate: %d of %ld; after registering again: "
           "%d of %ld\n", slow, trials, slow_again, trials);
    ret = 0;
out:
    if (ph)
        clEnqueueUnmapMemObject(b.dev->queue, pinned, ph, 0, NULL, NULL);
    if (b.dev)
        clFinish(b.dev->queue);
    if (pinned)
        clReleaseMemObject(pinned);
    if (b.dbuf)
        clReleaseMemObject(b.dbuf);
    gs_dev_free_list(devs, ndev);
    return ret;
}
