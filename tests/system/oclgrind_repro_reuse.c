/* Minimal reproducer of an Oclgrind 21.10 false positive (--uninitialized):
 * the shadow state of a released buffer is never dropped, and Oclgrind
 * gives the next buffer the released one's number, so the new buffer
 * inherits the old shadow: its size (stores past it are dropped, loads past
 * it read as uninitialized) and its state. Reported against
 * shell_merge_k* (tests/system/oclgrind.test, docs/RELIABILITY.md): a
 * second sort in one process got its merge scratch buffer in the number of
 * the first sort's smaller round-flags buffer.
 *
 * Here: buffer A (24 bytes) is written by a kernel and released; buffer B
 * (32 bytes) then gets A's number; a kernel stores b[i] = i and computes
 * out[i] from b[i]. Work-items 6 and 7 (bytes 24..31, past A's size) are
 * reported, "Uninitialized value written to global memory" (and, with
 * OCLGRIND_BUILD_OPTIONS=-cl-opt-disable, "Controlflow depends on
 * uninitialized value" too), although they wrote b[i] themselves just
 * before. With "fresh" A is kept alive (B gets a new number): no report.
 * Oclgrind's Uninitialized plugin has no memoryDeallocated handler, and
 * kernelBegin only makes a (poisoned, right-sized) shadow for a buffer
 * number that has none yet.
 *
 * Not built by make (it needs no gsortd code); by hand:
 *   cc -std=c11 -Wall -Wextra -Werror -o repro tests/system/oclgrind_repro_reuse.c -lOpenCL
 *   oclgrind --uninitialized --log L ./repro reuse   # L: 2 reports
 *   oclgrind --uninitialized --log L ./repro fresh   # L: empty */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *src =
    "__kernel void fill(__global uint *a) { a[get_global_id(0)] = 1u; }\n"
    "__kernel void use(__global uint *b, __global uint *out)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    b[i] = i;\n"
    "    out[i] = b[i] > 3u ? 1u : 2u;   /* at -O0 a branch on b[i] */\n"
    "    if (b[i] == 7u)\n"
    "        out[i] = 3u;\n"
    "}\n";

#define CK(x) do { cl_int e_ = (x); if (e_ != CL_SUCCESS) { \
        fprintf(stderr, "%s: %d\n", #x, e_); return 1; } } while (0)

int main(int argc, char **argv)
{
    const int reuse = !(argc > 1 && !strcmp(argv[1], "fresh"));
    cl_platform_id plat;
    cl_device_id dev;
    cl_int rc;
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CK(rc);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CK(rc);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CK(rc);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel kfill = clCreateKernel(prog, "fill", &rc);
    CK(rc);
    cl_kernel kuse = clCreateKernel(prog, "use", &rc);
    CK(rc);

    /* A: 6 uints, fully written by a kernel (its shadow: 24 bytes) */
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 6 * sizeof(cl_uint), NULL, &rc);
    CK(rc);
    size_t g = 6;
    CK(clSetKernelArg(kfill, 0, sizeof a, &a));
    CK(clEnqueueNDRangeKernel(q, kfill, 1, NULL, &g, NULL, 0, NULL, NULL));
    CK(clFinish(q));
    if (reuse)
        CK(clReleaseMemObject(a));   /* B below takes A's buffer number */

    /* B: 8 uints; every element is written before it is read */
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 8 * sizeof(cl_uint), NULL, &rc);
    CK(rc);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 8 * sizeof(cl_uint), NULL, &rc);
    CK(rc);
    g = 8;
    CK(clSetKernelArg(kuse, 0, sizeof b, &b));
    CK(clSetKernelArg(kuse, 1, sizeof out, &out));
    CK(clEnqueueNDRangeKernel(q, kuse, 1, NULL, &g, NULL, 0, NULL, NULL));
    cl_uint h[8];
    CK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof h, h, 0, NULL, NULL));
    printf("%s: out =", reuse ? "reuse" : "fresh");
    for (int i = 0; i < 8; i++)
        printf(" %u", h[i]);
    printf("\n");

    if (!reuse)
        clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(out);
    clReleaseKernel(kfill);
    clReleaseKernel(kuse);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
