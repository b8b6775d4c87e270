/* gsort-cachebench: what the on-disk program cache saves. For each device
 * it times, several times each, building the named kernel sources from
 * source without any cache, building and storing into a fresh cache
 * directory, and loading from that cache after dropping the in-memory copy;
 * then, with a small built-in probe kernel, how long the first launch takes
 * after a build and after a cache load (drivers such as PoCL finish
 * compiling at first launch, which a binary cache may not cover). Loads are
 * also timed in a fresh child process, as after a daemon restart, because a
 * driver may keep compiled code in the process that built it. Medians are
 * printed in milliseconds. Run with POCL_KERNEL_CACHE=0 so PoCL's own
 * cache does not turn "cold" builds warm. */
#include "config.h"
#include "benchutil.h"
#include "gs_dev.h"
#include "gs_log.h"
#include "gs_prog.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOURCES 15
#define MAX_REPS 100

extern char **environ;

/* Cold mode (POCL_KERNEL_CACHE=0): every process gets its own empty
 * POCL_CACHE_DIR under g_base, because even "uncached" PoCL leaves
 * specialised kernels in its cache directory where the next process can
 * find them (and other programs on the machine share ~/.cache/pocl). */
static char g_base[64];
static int g_cold;
static int g_childn;

static const char *const PROBE_SRC =
    "__kernel void gs_cb_probe(__global uint *out, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint x = (uint)i ^ k;\n"
    "    for (int r = 0; r < 16; r++)\n"
    "        x = x * 1664525u + 1013904223u + (x >> 7);\n"
    "    out[i] = x;\n"
    "}\n";
#define PROBE_N 65536

static void usage(FILE *out)
{
    fprintf(out,
        "usage: gsort-cachebench [--device N] [--options STR] [--reps N] [SOURCE...]\n"
        "Times building kernel SOURCEs (names in the kernel table; default: keys radix)\n"
        "from source, building and storing into a fresh program cache, and loading from\n"
        "the cache, on every device (or device N). Prints median ms over --reps runs\n"
        "(default 5). Run with POCL_KERNEL_CACHE=0 for true cold builds on PoCL.\n"
        "  -d, --device N     only device N (see gsortd --list-devices)\n"
        "  -o, --options STR  build options (the -D parameter string), default ''\n"
        "  -r, --reps N       repetitions of each measurement (1..%d)\n"
        "  -h, --help         this text\n"
        "Exit status: 0 on success, 1 on a runtime failure, 2 on a usage error.\n",
        MAX_REPS);
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    printf("  %-40s median %9.2f ms   (min %.2f, max %.2f, n=%d)\n", what, med, v[0], v[n - 1], n);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void remove_base(void)
{
    if (g_base[0])
        nftw(g_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh, empty cache directory under base. */
static int fresh_cache(const char *base, int n, gs_pcache **pc, char *dir, size_t len, gs_err *err)
{
    snprintf(dir, len, "%s/c%d", base, n);
    int rc = gs_pcache_open(pc, dir, err);
    if (rc == 0 && !gs_pcache_enabled(*pc))
        rc = gs_err_set(err, GS_EIO, "cache dir %s is unusable", dir);
    return rc;
}

static long long entry_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    long long total = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 4 && strcmp(de->d_name + l - 4, ".bin") == 0) {
            struct stat st;
            if (fstatat(dirfd(d), de->d_name, &st, 0) == 0)
                total += st.st_size;
        }
    }
    if (d)
        closedir(d);
    return total;
}

/* Launch the probe once; wall time to completion, or a negative value. */
static double launch_probe(gs_dev *dev, cl_program prog, cl_mem buf, gs_err *err)
{
    cl_int rc;
    double t0 = gs_now_ms();
    cl_kernel k = clCreateKernel(prog, "gs_cb_probe", &rc);
    if (rc != CL_SUCCESS) {
        gs_cl_fail(err, "clCreateKernel", rc, "gs_cb_probe");
        return -1;
    }
    cl_uint kk = 5;
    size_t g = PROBE_N;
    if ((rc = clSetKernelArg(k, 0, sizeof buf, &buf)) != CL_SUCCESS ||
        (rc = clSetKernelArg(k, 1, sizeof kk, &kk)) != CL_SUCCESS) {
        clReleaseKernel(k);
        gs_cl_fail(err, "clSetKernelArg", rc, "gs_cb_probe");
        return -1;
    }
    if ((rc = clEnqueueNDRangeKernel(dev->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL)) != CL_SUCCESS ||
        (rc = clFinish(dev->queue)) != CL_SUCCESS) {
        clReleaseKernel(k);
        gs_cl_fail(err, "clEnqueueNDRangeKernel", rc, "gs_cb_probe");
        return -1;
    }
    clReleaseKernel(k);
    return gs_now_ms() - t0;
}

/* Run this program again as "--child-load DIR" for device `devi` and read
 * back its one result line of numbers; a fresh process has none of the
 * driver's in-process state. Returns the count of numbers read, or -1. */
static int run_child(int devi, const char *dir, const char *options, const char *const *sources,
                     int probe, double *vals, int nvals, gs_err *err)
{
    const char *av[MAX_SOURCES + 12];
    char devs[32];
    int n = 0;
    snprintf(devs, sizeof devs, "%d", devi);
    av[n++] = "gsort-cachebench";
    av[n++] = "--child-load";
    av[n++] = dir;
    av[n++] = "--device";
    av[n++] = devs;
    av[n++] = "--options";
    av[n++] = options;
    if (probe)
        av[n++] = "--child-probe";
    av[n++] = "--";
    for (int i = 0; sources[i]; i++)
        av[n++] = sources[i];
    av[n] = NULL;
    /* The child's environment, built before fork (only exec after it). */
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    char **env = calloc(nenv + 2, sizeof *env);
    char pocl_dir[128];
    if (!env)
        return gs_err_set(err, GS_ENOMEM, "out of memory"), -1;
    size_t ne = 0;
    for (size_t i = 0; i < nenv; i++)
        if (!g_cold || strncmp(environ[i], "POCL_CACHE_DIR=", 15) != 0)
            env[ne++] = environ[i];
    if (g_cold) {
        snprintf(pocl_dir, sizeof pocl_dir, "POCL_CACHE_DIR=%s/pocl-child-%d", g_base, g_childn++);
        mkdir(pocl_dir + 15, 0700);
        env[ne++] = pocl_dir;
    }
    env[ne] = NULL;
    int fds[2];
    if (pipe(fds) != 0) {
        free(env);
        return gs_err_set(err, GS_EIO, "pipe: %s", strerror(errno)), -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        free(env);
        return gs_err_set(err, GS_EIO, "fork: %s", strerror(errno)), -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execve("/proc/self/exe", (char *const *)av, env);
        _exit(127);
    }
    free(env);
    close(fds[1]);
    char line[512];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof line - 1 && (r = read(fds[0], line + got, sizeof line - 1 - got)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    line[got] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || strncmp(line, "ok", 2) != 0)
        return gs_err_set(err, GS_EWRONG, "child load from %s failed: %s", dir, line), -1;
    int k = 0;
    char *at = line + 2, *end;
    while (k < nvals) {
        double v = strtod(at, &end);
        if (end == at)
            break;
        vals[k++] = v;
        at = end;
    }
    return k;
}

static double launch_probe(gs_dev *dev, cl_program prog, cl_mem buf, gs_err *err);

/* Child side: load from DIR (must hit), for the probe launch twice; print
 * "ok LOAD_MS [FIRST_MS SECOND_MS]". */
static int child_load(gs_dev *dev, const char *dir, const char *options,
                      const char *const *sources, int probe, gs_err *err)
{
    gs_pcache *pc = NULL;
    gs_prog_stats st;
    cl_program p;
    int rc = gs_dev_open(dev, err);
    if (rc == 0)
        rc = gs_pcache_open(&pc, dir, err);
    if (rc == 0)
        rc = probe ? gs_prog_get_text(dev, pc, "cachebench-probe", PROBE_SRC, options, &p, &st, err)
                   : gs_prog_get(dev, pc, sources, options, &p, &st, err);
    if (rc == 0 && st.origin != GS_PROG_DISK_HIT)
        rc = gs_err_set(err, GS_EWRONG, "expected a cache hit in %s (origin %d)", dir, st.origin);
    double first = 0, second = 0;
    cl_mem buf = NULL;
    if (rc == 0 && probe) {
        cl_int clrc;
        buf = clCreateBuffer(dev->ctx, CL_MEM_WRITE_ONLY, PROBE_N * sizeof(cl_uint), NULL, &clrc);
        if (clrc != CL_SUCCESS)
            rc = gs_cl_fail(err, "clCreateBuffer", clrc, "probe output");
        else if ((first = launch_probe(dev, p, buf, err)) < 0 || (second = launch_probe(dev, p, buf, err)) < 0)
            rc = GS_ECL;
    }
    if (buf)
        clReleaseMemObject(buf);
    gs_prog_forget(dev);
    gs_pcache_close(pc);
    if (rc) {
        printf("fail %s\n", err->msg);
        return rc;
    }
    if (probe)
        printf("ok %.4f %.4f %.4f\n", st.ms, first, second);
    else
        printf("ok %.4f\n", st.ms);
    return 0;
}

static int bench_sources(gs_dev *dev, const char *base, const char *const *sources,
                         const char *options, int reps, int *dirn, gs_err *err)
{
    double nocache[MAX_REPS], store[MAX_REPS], load[MAX_REPS], cload[MAX_REPS];
    char dir[4096];
    gs_prog_stats st;
    cl_program p;
    gs_pcache *pc = NULL;
    int rc;

    for (int i = 0; i < reps; i++) {
        gs_prog_forget(dev);
        if ((rc = gs_prog_get(dev, NULL, sources, options, &p, &st, err)) != 0)
            return rc;
        nocache[i] = st.ms;
    }
    for (int i = 0; i < reps; i++) {
        gs_prog_forget(dev);
        gs_pcache_close(pc);
        pc = NULL;
        if ((rc = fresh_cache(base, (*dirn)++, &pc, dir, sizeof dir, err)) != 0)
            goto out;
        if ((rc = gs_prog_get(dev, pc, sources, options, &p, &st, err)) != 0)
            goto out;
        if (st.origin != GS_PROG_BUILT || !st.stored) {
            rc = gs_err_set(err, GS_EWRONG, "expected a build and a store into %s (origin %d, stored %d)",
                            dir, st.origin, st.stored);
            goto out;
        }
        store[i] = st.ms;
    }
    for (int i = 0; i < reps; i++) {
        gs_prog_forget(dev);
        if ((rc = gs_prog_get(dev, pc, sources, options, &p, &st, err)) != 0)
            goto out;
        if (st.origin != GS_PROG_DISK_HIT) {
            rc = gs_err_set(err, GS_EWRONG, "expected a cache hit in %s (origin %d)", dir, st.origin);
            goto out;
        }
        load[i] = st.ms;
    }
    for (int i = 0; i < reps; i++) {
        if (run_child(dev->index, dir, options, sources, 0, &cload[i], 1, err) != 1) {
            rc = GS_EWRONG;
            goto out;
        }
    }
    printf("program ");
    for (int i = 0; sources[i]; i++)
        printf("%s%s.cl", i ? "+" : "", sources[i]);
    printf(", options '%s', cache entry %lld bytes\n", options, entry_bytes(dir));
    report("build from source (no cache)", nocache, reps);
    report("build + store (fresh cache dir)", store, reps);
    report("load from disk cache, same process", load, reps);
    report("load from disk cache, fresh process", cload, reps);
out:
    gs_prog_forget(dev);
    gs_pcache_close(pc);
    return rc;
}

/* First launch of the probe kernel after a build and after a cache load. */
static int bench_first_launch(gs_dev *dev, const char *base, int reps, int *dirn, gs_err *err)
{
    double build[MAX_REPS], lb[MAX_REPS], load[MAX_REPS], ll[MAX_REPS], steady[MAX_REPS];
    double cload[MAX_REPS], cfirst[MAX_REPS], csecond[MAX_REPS];
    static const char *const none[] = { NULL };
    char dir[4096];
    gs_prog_stats st;
    cl_program p;
    cl_int clrc;
    int rc = 0;
    cl_mem buf = clCreateBuffer(dev->ctx, CL_MEM_WRITE_ONLY, PROBE_N * sizeof(cl_uint), NULL, &clrc);
    if (clrc != CL_SUCCESS)
        return gs_cl_fail(err, "clCreateBuffer", clrc, "probe output");
    for (int i = 0; i < reps && rc == 0; i++) {
        gs_pcache *pc = NULL;
        gs_prog_forget(dev);
        if ((rc = fresh_cache(base, (*dirn)++, &pc, dir, sizeof dir, err)) != 0)
            break;
        rc = gs_prog_get_text(dev, pc, "cachebench-probe", PROBE_SRC, "", &p, &st, err);
        build[i] = st.ms;
        if (rc == 0 && (lb[i] = launch_probe(dev, p, buf, err)) < 0)
            rc = GS_ECL;
        if (rc == 0) {
            gs_prog_forget(dev);
            rc = gs_prog_get_text(dev, pc, "cachebench-probe", PROBE_SRC, "", &p, &st, err);
            if (rc == 0 && st.origin != GS_PROG_DISK_HIT)
                rc = gs_err_set(err, GS_EWRONG, "probe: expected a cache hit (origin %d)", st.origin);
            load[i] = st.ms;
        }
        if (rc == 0 && (ll[i] = launch_probe(dev, p, buf, err)) < 0)
            rc = GS_ECL;
        if (rc == 0 && (steady[i] = launch_probe(dev, p, buf, err)) < 0)
            rc = GS_ECL;
        double v[3];
        if (rc == 0 && run_child(dev->index, dir, "", none, 1, v, 3, err) != 3)
            rc = GS_EWRONG;
        if (rc == 0) {
            cload[i] = v[0];
            cfirst[i] = v[1];
            csecond[i] = v[2];
        }
        gs_prog_forget(dev);
        gs_pcache_close(pc);
    }
    clReleaseMemObject(buf);
    if (rc)
        return rc;
    printf("probe kernel (%d work-items, global size only), first launch = create kernel + run to completion\n",
           PROBE_N);
    report("probe: build + store", build, reps);
    report("probe: first launch after build", lb, reps);
    report("probe: load from cache, same process", load, reps);
    report("probe: first launch after it", ll, reps);
    report("probe: second launch, same process", steady, reps);
    report("probe: load from cache, fresh process", cload, reps);
    report("probe: first launch after it", cfirst, reps);
    report("probe: second launch, fresh process", csecond, reps);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "device", required_argument, NULL, 'd' },
        { "options", required_argument, NULL, 'o' },
        { "reps", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        /* internal: the fresh-process side of a measurement */
        { "child-load", required_argument, NULL, 'C' },
        { "child-probe", no_argument, NULL, 'P' },
        { NULL, 0, NULL, 0 },
    };
    const char *child_dir = NULL;
    int child_probe = 0;
    int only = -1, reps = 5, c;
    const char *options = "";
    while ((c = getopt_long(argc, argv, "d:o:r:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': only = atoi(optarg); break;
        case 'o': options = optarg; break;
        case 'r': reps = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        case 'C': child_dir = optarg; break;
        case 'P': child_probe = 1; break;
        default: usage(stderr); return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || argc - optind > MAX_SOURCES) {
        usage(stderr);
        return 2;
    }
    const char *sources[MAX_SOURCES + 1];
    int ns = 0;
    if (optind == argc) {
        sources[ns++] = "keys";
        sources[ns++] = "radix";
    }
    while (optind < argc)
        sources[ns++] = argv[optind++];
    sources[ns] = NULL;

    const char *pkc = getenv("POCL_KERNEL_CACHE");
    g_cold = pkc && strcmp(pkc, "0") == 0;
    if (!child_dir) {
        snprintf(g_base, sizeof g_base, "/tmp/gsort-cachebench.XXXXXX");
        if (!mkdtemp(g_base)) {
            fprintf(stderr, "gsort-cachebench: mkdtemp: %s\n", strerror(errno));
            return 1;
        }
        if (g_cold) {
            /* Before the first OpenCL call: PoCL reads it when the platform loads. */
            char pd[128];
            snprintf(pd, sizeof pd, "%s/pocl-main", g_base);
            mkdir(pd, 0700);
            setenv("POCL_CACHE_DIR", pd, 1);
        }
    }
    gs_err err;
    gs_err_clear(&err);
    gs_dev *devs = NULL;
    size_t ndev = 0;
    if (gs_dev_probe(&devs, &ndev, &err) != 0) {
        fprintf(stderr, "gsort-cachebench: %s\n", err.msg);
        remove_base();
        return 1;
    }
    if (ndev == 0 || (only >= 0 && (size_t)only >= ndev)) {
        fprintf(stderr, "gsort-cachebench: %s\n", ndev ? "no such device" : "no OpenCL device");
        gs_dev_free_list(devs, ndev);
        remove_base();
        return 1;
    }
    if (child_dir) {
        int rc = only >= 0 ? child_load(&devs[only], child_dir, options, sources, child_probe, &err) : 2;
        gs_dev_free_list(devs, ndev);
        return rc ? 1 : 0;
    }
    const char *base = g_base;
    int status = 0, dirn = 0;
    for (size_t i = 0; i < ndev; i++) {
        if (only >= 0 && (size_t)only != i)
            continue;
        gs_dev *dev = &devs[i];
        printf("device %zu: %s / %s / driver %s\n", i, dev->info.platform, dev->info.name, dev->info.driver);
        if (strstr(dev->info.platform, "Portable Computing Language")) {
            if (!g_cold)
                printf("note: POCL_KERNEL_CACHE is not 0, so PoCL's own kernel cache makes 'cold' builds warm;\n"
                       "      rerun as POCL_KERNEL_CACHE=0 gsort-cachebench ... for true cold figures\n");
            else
                printf("note: POCL_KERNEL_CACHE=0: each process runs with its own empty POCL_CACHE_DIR\n");
        }
        int rc = gs_dev_open(dev, &err);
        if (rc == 0)
            rc = bench_sources(dev, base, sources, options, reps, &dirn, &err);
        if (rc == 0)
            rc = bench_first_launch(dev, base, reps, &dirn, &err);
        if (rc) {
            fprintf(stderr, "gsort-cachebench: device %zu: %s: %s\n", i, gs_strerror(rc), err.msg);
            status = 1;
        }
        gs_dev_close(dev);
    }
    gs_dev_free_list(devs, ndev);
    remove_base();
    return status;
}
