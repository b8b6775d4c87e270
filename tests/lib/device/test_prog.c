/* The program builder without the disk cache: embedded and development
 * kernel sources, the in-memory reuse of built programs, and build failures
 * that must surface the compiler's own log. */
#include "config.h"
#include "gs_dev.h"
#include "gs_kern.h"
#include "gs_prog.h"
#include "tap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *good_src =
    "__kernel void scale(__global uint *a, uint k) {\n"
    "  size_t i = get_global_id(0); a[i] = a[i] * k + SHIFT;\n"
    "}\n";

/* Run `scale` on 256 elements, check a[i] == i*k + shift. */
static int run_scale(gs_dev *d, cl_program p, cl_uint k, cl_uint shift)
{
    cl_int rc;
    cl_uint host[256];
    for (cl_uint i = 0; i < 256; i++)
        host[i] = i;
    cl_kernel kn = clCreateKernel(p, "scale", &rc);
    if (rc != CL_SUCCESS)
        return 0;
    cl_mem b = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &rc);
    int ok = 0;
    if (rc == CL_SUCCESS) {
        size_t g = 256;
        clSetKernelArg(kn, 0, sizeof b, &b);
        clSetKernelArg(kn, 1, sizeof k, &k);
        if (clEnqueueNDRangeKernel(d->queue, kn, 1, NULL, &g, NULL, 0, NULL, NULL) == CL_SUCCESS &&
            clEnqueueReadBuffer(d->queue, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL) == CL_SUCCESS) {
            ok = 1;
            for (cl_uint i = 0; i < 256; i++)
                ok &= host[i] == i * k + shift;
        }
        clReleaseMemObject(b);
    }
    clReleaseKernel(kn);
    return ok;
}

typedef struct par_arg {
    gs_dev *d;
    const char *src;
    char opts[32];
    cl_program p;
    int rc, origin;
} par_arg;

static void *par_main(void *arg)
{
    par_arg *a = arg;
    gs_prog_stats st;
    gs_err err;
    gs_err_clear(&err);
    a->rc = gs_prog_get_text(a->d, NULL, "par.cl", a->src, a->opts, &a->p, &st, &err);
    a->origin = st.origin;
    return NULL;
}

int main(void)
{
    gs_dev *devs;
    size_t n;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &n, &err) || n == 0)
        tap_bail("no OpenCL device: %s", err.msg);
    gs_dev *d = &devs[0];
    tap_diag("device: %s", d->info.name);

    /* Build, run, and reuse from memory. */
    cl_program p1 = NULL, p2 = NULL;
    gs_prog_stats st;
    int rc = gs_prog_get_text(d, NULL, "scale.cl", good_src, "-DSHIFT=3u", &p1, &st, &err);
    tap_ok(rc == 0 && p1, "good source builds: %s", rc ? err.msg : "ok");
    tap_ok(st.origin == GS_PROG_BUILT && st.stored == 0, "first get compiles (no disk cache given)");
    tap_ok(p1 && run_scale(d, p1, 5, 3), "built program computes a[i]*5+3 (the -D option reached the compiler)");
    rc = gs_prog_get_text(d, NULL, "scale.cl", good_src, "-DSHIFT=3u", &p2, &st, &err);
    tap_ok(rc == 0 && p2 == p1 && st.origin == GS_PROG_MEMORY, "same source and options reuse the in-memory program");
    rc = gs_prog_get_text(d, NULL, "scale.cl", good_src, "-DSHIFT=7u", &p2, &st, &err);
    tap_ok(rc == 0 && p2 != p1 && st.origin == GS_PROG_BUILT, "other options build another program");
    tap_ok(p2 && run_scale(d, p2, 2, 7), "second program uses its own options");

    /* Kernels kept with their program between sorts: taken back by program
     * and name only, released with the program. */
    cl_int krc;
    cl_kernel k0 = gs_prog_kernel_take(d, p1, "scale");
    cl_kernel k1 = clCreateKernel(p1, "scale", &krc);
    gs_prog_kernel_put(d, p1, "scale", k1);
    cl_kernel k2 = gs_prog_kernel_take(d, p2, "scale");
    cl_kernel k3 = gs_prog_kernel_take(d, p1, "scal");
    cl_kernel k4 = gs_prog_kernel_take(d, p1, "scale");
    cl_kernel k5 = gs_prog_kernel_take(d, p1, "scale");
    tap_ok(!k0 && krc == CL_SUCCESS && !k2 && !k3 && k4 == k1 && !k5,
           "a kernel put back is taken once again, by its own program and name only");
    clRetainKernel(k4);
    gs_prog_kernel_put(d, p1, "scale", k4);
    const char *other_src =
        "__kernel void scale(__global uint *a, uint k) {\n"
        "  size_t i = get_global_id(0); a[i] = a[i] * k + SHIFT + 100u;\n"
        "}\n";
    cl_program p3 = NULL;
    rc = gs_prog_get_text(d, NULL, "scale.cl", other_src, "-DSHIFT=3u", &p3, &st, &err);
    tap_ok(rc == 0 && p3 != p1 && st.origin == GS_PROG_BUILT && run_scale(d, p3, 5, 103),
           "same label and options but other source text is a different program");
    gs_prog_forget(d);
    cl_uint refs = 0;
    clGetKernelInfo(k4, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL);
    tap_ok(refs == 1, "gs_prog_forget releases the kernels kept with the programs (%u "
           "reference(s) left of 2)", refs);
    clReleaseKernel(k4);
    rc = gs_prog_get_text(d, NULL, "scale.cl", good_src, "-DSHIFT=3u", &p2, &st, &err);
    tap_ok(rc == 0 && st.origin == GS_PROG_BUILT, "after gs_prog_forget the program is built again");
    tap_ok(!gs_prog_kernel_take(d, p2, "scale"), "a program built again keeps no kernel yet");

    /* A build failure carries the compiler log (which names our mistake). */
    const char *bad_src =
        "__kernel void broken(__global uint *a) {\n"
        "  a[get_global_id(0)] = undeclared_gsortd_identifier + 1;\n"
        "}\n";
    cl_program pb = NULL;
    rc = gs_prog_get_text(d, NULL, "broken.cl", bad_src, "", &pb, &st, &err);
    tap_ok(rc == GS_EBUILD, "syntax error gives GS_EBUILD (got %s)", gs_strerror(rc));
    tap_ok(strstr(err.msg, "CL_BUILD_PROGRAM_FAILURE") != NULL, "message names CL_BUILD_PROGRAM_FAILURE");
    tap_ok(strstr(err.msg, "undeclared_gsortd_identifier") != NULL, "message contains the compiler log");
    tap_ok(strstr(err.msg, "broken.cl") != NULL, "message names the source");
    tap_diag("build failure message: %.300s", err.msg);
    rc = gs_prog_get_text(d, NULL, "broken.cl", bad_src, "", &pb, &st, &err);
    tap_ok(rc == GS_EBUILD, "a failed build is not cached as success");

    /* Builds run outside the device's lock: threads asking for one program
     * at once build it once and all get it; threads asking for different
     * programs each get theirs; threads asking for a broken one all get
     * the compiler's error, and none is left waiting. */
    enum { NT = 6 };
    static par_arg pa[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        pa[i] = (par_arg){ .d = d };
        snprintf(pa[i].opts, sizeof pa[i].opts, "-DSHIFT=%uu", i < 3 ? 21u : 30u + (unsigned)i);
        pa[i].src = good_src;
        if (pthread_create(&th[i], NULL, par_main, &pa[i]) != 0)
            tap_bail("pthread_create");
    }
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    int built21 = 0, ok_par = 1;
    for (int i = 0; i < NT; i++) {
        ok_par &= pa[i].rc == 0 && pa[i].p && run_scale(d, pa[i].p, 2, i < 3 ? 21u : 30u + (unsigned)i);
        if (i < 3)
            built21 += pa[i].origin == GS_PROG_BUILT;
    }
    tap_ok(ok_par && built21 == 1 && pa[0].p == pa[1].p && pa[1].p == pa[2].p &&
           pa[3].p != pa[0].p && pa[4].p != pa[3].p,
           "6 threads at once: one program asked 3 times is built once and shared (%d builds), "
           "3 others built side by side, all run", built21);
    for (int i = 0; i < 3; i++) {
        pa[i] = (par_arg){ .d = d, .src = bad_src };
        if (pthread_create(&th[i], NULL, par_main, &pa[i]) != 0)
            tap_bail("pthread_create");
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    tap_ok(pa[0].rc == GS_EBUILD && pa[1].rc == GS_EBUILD && pa[2].rc == GS_EBUILD,
           "3 threads at once on a broken source: each gets GS_EBUILD, none hangs");

    /* Embedded sources: every embedded kernel loads; unknown names fail. */
    tap_ok(gs_kern_embedded_count >= 2, "kernels are embedded (%zu)", gs_kern_embedded_count);
    for (size_t i = 0; i < gs_kern_embedded_count; i++) {
        char *t = NULL;
        size_t len = 0;
        rc = gs_kern_load(gs_kern_embedded[i].name, &t, &len, &err);
        tap_ok(rc == 0 && len == strlen(t) && len > 0, "embedded kernel '%s' loads (%zu bytes)",
               gs_kern_embedded[i].name, len);
        free(t);
    }
    rc = gs_prog_get(d, NULL, (const char *const[]){ "no_such_kernel", NULL }, "", &pb, &st, &err);
    tap_ok(rc == GS_ENOTFOUND && strstr(err.msg, "no_such_kernel"), "unknown kernel name: %s", err.msg);

    /* Embedded sources are found again by name and options alone (no copy
     * and hash of their text per request). */
    const char *const keys_only[] = { "keys", NULL };
    cl_program e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL;
    rc = gs_prog_get(d, NULL, keys_only, "-DGS_TEST_PROG=1", &e1, &st, &err);
    int o1 = st.origin;
    rc |= gs_prog_get(d, NULL, keys_only, "-DGS_TEST_PROG=1", &e2, &st, &err);
    tap_ok(rc == 0 && e1 && o1 == GS_PROG_BUILT && e2 == e1 && st.origin == GS_PROG_MEMORY,
           "embedded keys.cl: built once, then the same program from memory: %s",
           rc ? err.msg : "ok");

    /* Development directory overrides the embedded copies. */
    char dir[] = "/tmp/gsortd-kdir-XXXXXX";
    tap_ok(mkdtemp(dir) != NULL, "temp kernel dir");
    char path[256];
    snprintf(path, sizeof path, "%s/devk.cl", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(good_src, f);
        fclose(f);
    }
    char id_embedded[65], id_again[65], id_dir[65];
    rc = gs_kern_code_id(id_embedded, &err);
    tap_ok(rc == 0 && strlen(id_embedded) == 64, "code id of the embedded kernels: %.16s...", id_embedded);
    gs_kern_code_id(id_again, &err);
    tap_ok(strcmp(id_embedded, id_again) == 0, "code id is deterministic");
    gs_kern_set_dir(dir);
    rc = gs_kern_code_id(id_dir, &err);
    tap_ok(rc == GS_ENOTFOUND, "code id with a kernel dir lacking the kernels fails clearly: %s", err.msg);
    rc = gs_prog_get(d, NULL, (const char *const[]){ "devk", NULL }, "-DSHIFT=11u", &p1, &st, &err);
    tap_ok(rc == 0 && p1 && run_scale(d, p1, 3, 11), "kernel read from --kernel-dir builds and runs");
    rc = gs_prog_get(d, NULL, (const char *const[]){ "radix", NULL }, "", &pb, &st, &err);
    tap_ok(rc == GS_ENOTFOUND, "with a kernel dir, a file missing there is an error, not a silent fallback");
    /* A kernel dir holding copies of the embedded kernels, one edited: another code id. */
    int copied = 1;
    for (size_t i = 0; i < gs_kern_embedded_count; i++) {
        char kp[300];
        snprintf(kp, sizeof kp, "%s/%s.cl", dir, gs_kern_embedded[i].name);
        FILE *kf = fopen(kp, "w");
        copied &= kf && fwrite(gs_kern_embedded[i].text, 1, gs_kern_embedded[i].len, kf) == gs_kern_embedded[i].len;
        if (i == 0 && kf)
            fputs("\n/* edited */\n", kf);
        if (kf)
            fclose(kf);
    }
    rc = gs_kern_code_id(id_dir, &err);
    tap_ok(copied && rc == 0 && strcmp(id_dir, id_embedded) != 0, "an edited kernel changes the code id");
    /* From a kernel dir the text is the key: every edit is a new program. */
    char keys_path[300];
    snprintf(keys_path, sizeof keys_path, "%s/keys.cl", dir);
    const gs_kern_src *ks = NULL;
    for (size_t i = 0; i < gs_kern_embedded_count; i++)
        if (!strcmp(gs_kern_embedded[i].name, "keys"))
            ks = &gs_kern_embedded[i];
    int orig[2] = { -1, -1 };
    for (int edit = 0; edit < 2 && ks; edit++) {
        FILE *kf = fopen(keys_path, "w");
        if (kf) {
            fwrite(ks->text, 1, ks->len, kf);
            fprintf(kf, "\n/* edit %d */\n", edit);
            fclose(kf);
        }
        rc = gs_prog_get(d, NULL, keys_only, "-DGS_TEST_PROG=1", edit ? &e4 : &e3, &st, &err);
        orig[edit] = rc ? -1 : st.origin;
    }
    tap_ok(ks && e3 && e4 && e3 != e1 && e4 != e3 && orig[0] == GS_PROG_BUILT &&
           orig[1] == GS_PROG_BUILT, "keys.cl from a kernel dir, edited twice: two new "
           "programs, not the embedded one");
    gs_kern_set_dir(NULL);
    rc = gs_prog_get(d, NULL, keys_only, "-DGS_TEST_PROG=1", &e5, &st, &err);
    tap_ok(rc == 0 && e5 == e1 && st.origin == GS_PROG_MEMORY,
           "the kernel dir unset: the embedded program again, from memory");
    for (size_t i = 0; i < gs_kern_embedded_count; i++) {
        char kp[300];
        snprintf(kp, sizeof kp, "%s/%s.cl", dir, gs_kern_embedded[i].name);
        unlink(kp);
    }
    unlink(path);
    rmdir(dir);

    gs_dev_free_list(devs, n);
    return tap_done();
}
