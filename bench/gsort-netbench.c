/* gsort-netbench: the end-to-end benchmark of a running gsortd (issue 6).
 * As a client on its socket it measures, for n = 2^min..2^max and for inline
 * and memfd requests, the wall time per sort seen by the client (request
 * sent to reply fully read; median and min of --reps after one warm-up) and
 * the end-to-end Mkeys/s, beside the daemon's own account from the reply
 * (queue, receive, upload, sort = kernels, download, total; medians) and the
 * algorithm and device that served it; on a GPU it also times, with OpenCL
 * directly, the pinned-memory PCIe round trip of the same bytes, the floor
 * that no request can go below (bench/pcie.c), and before the sweep the
 * socket's own floor (a ping through gsortd, a bare round trip between two
 * processes), against which the client column is read. Then it measures
 * requests per second: many clients, each on its own connection, sending
 * small inline sorts back to back (total requests/s, p50/p99 latency). Keys are random (seeded), fresh
 * for every request, and every reply is verified (sorted, same keys by sum
 * and xor, values still with their keys, indices pointing at their key); a
 * wrong one stops the run with a non-zero exit. The talk with the daemon
 * besides the sorts (socket, info) is bench/benchclient.c's.
 *
 * usage: gsort-netbench [--socket PATH] [--dtype u32] [--values none|u32|u64|idx32|idx64]
 *          [--algorithm NAME] [--device N] [--split|--no-split] [--min-log2 10] [--max-log2 24] [--reps 5]
 *          [--mode inline|memfd|fresh|both|all] [--rps-clients 16] [--rps-n 1000] [--rps-seconds 5]
 *          [--pcie-device INDEX|-1] [--seed S] [--csv] [--no-sweep] [--no-rps]
 * bench/netbench-run BUILD_DIR [args] starts a throwaway daemon and runs it. */
#include "config.h"
#include "benchclient.h"
#include "benchutil.h"
#include "pcie.h"
#include "sortverify.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs_client.h"
#include "gs_err.h"
#include "gs_paths.h"
#include "gs_types.h"

/* 2^32 keys: past that the daemon's request cap (by default half the RAM)
 * refuses what the host cannot hold, with its own message. */
#define MAX_LOG2_LIMIT 32

/* memfd: one memfd per point, sent again every request (a block the daemon
 * keeps: gsort_alloc memory); fresh: a new memfd every request (memory the
 * daemon has not seen: the one-shot path). */
enum { MODE_INLINE = 1, MODE_MEMFD = 2, MODE_FRESH = 4 };
static const char *mode_name(int m)
{
    return m == MODE_MEMFD ? "memfd" : m == MODE_FRESH ? "fresh" : "inline";
}

typedef struct opts {
    const char *socket;       /* NULL: the client's default */
    char socket_shown[GS_PATHS_SOCKET_MAX];
    gs_dtype dtype;
    gs_payload payload;
    const char *algorithm;    /* NULL: the daemon's plan */
    int device;               /* daemon device to force, -1: any */
    int split;                /* --split 1 (ask: the note says why not), --no-split -1 */
    int min_log2, max_log2, reps, warmup, modes;
    int rps_clients, rps_seconds;
    size_t rps_n;
    int pcie_device;          /* -2: first GPU, -1: off */
    uint64_t seed;
    int csv, sweep, rps;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gsort-netbench [options]\n"
            "End-to-end benchmark of a running gsortd: latency per request through the\n"
            "socket (inline and memfd) beside the daemon's own times and the PCIe round\n"
            "trip, then requests/s from many clients. Every reply is verified.\n"
            "  --socket PATH       the daemon's socket (default: gsortd's default socket)\n"
            "  --dtype T           u32 i32 f32 u64 i64 f64 (default u32)\n"
            "  --values P          none u32 u64 idx32 idx64 (default none)\n"
            "  --algorithm NAME    force an algorithm (default: the daemon's plan)\n"
            "  --device N          force the daemon's device N (default: any)\n"
            "  --split             ask for a split over devices at any size (the note\n"
            "                      column lists the parts, or says why the daemon declined)\n"
            "  --no-split          never split (default: the daemon decides)\n"
            "  --min-log2 A        smallest n = 2^A (default 10)\n"
            "  --max-log2 B        largest n = 2^B (default 24, at most %d)\n"
            "  --reps R            timed requests per point after the warm-up (default 5)\n"
            "  --warmup W          untimed requests per point before them (default 1; more\n"
            "                      to time the daemon's steady state, its caches warm)\n"
            "  --mode M            inline, memfd (one block per size, kept by the daemon),\n"
            "                      fresh (a new memfd every request), both (inline and\n"
            "                      memfd; the default) or all\n"
            "  --pcie-device I     OpenCL device for the pinned PCIe round trip (default:\n"
            "                      the first GPU; -1 or no GPU: skipped)\n"
            "  --rps-clients C     concurrent connections for requests/s (default 16)\n"
            "  --rps-n N           keys per requests/s request, inline (default 1000)\n"
            "  --rps-seconds S     how long the requests/s run lasts (default 5)\n"
            "  --seed S            random seed (default 12345)\n"
            "  --csv               comma-separated rows (comments start with '#')\n"
            "  --no-sweep          skip the size sweep\n"
            "  --no-rps            skip the requests/s run\n"
            "Start a throwaway daemon and run this against it:\n"
            "  bench/netbench-run BUILD_DIR [options]\n"
            "Exit status: 0 on success, 1 on an error or a wrong result, 2 on a usage error.\n",
            MAX_LOG2_LIMIT);
}

/* ---- keys: generation and verification: bench/sortverify.h ---- */

/* ---- daemon ---- */

static int connect_or_explain(gs_client **c, const opts *o)
{
    char hint[GS_PATHS_SOCKET_MAX + 200];
    snprintf(hint, sizeof hint,
             "  is gsortd running there? start one with: gsortd --socket %s --db DB\n"
             "  or let bench/netbench-run BUILD_DIR [options] start a throwaway one\n",
             o->socket_shown);
    return bc_connect(c, o->socket, 0, "gsort-netbench", hint);
}

/* The self-describing header: what the daemon serves with, what is sent. */
static int print_header(gs_client *c, const opts *o)
{
    cJSON *info = NULL;
    if (bc_info(c, "gsort-netbench", &info) < 0)
        return -1;
    char date[64], host[128] = "?";
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
    gethostname(host, sizeof host - 1);
    printf("# gsort-netbench %s on %s, socket %s\n", date, host, o->socket_shown);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(info, "version");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(info, "devices");
    if (cJSON_IsString(ver))
        printf("# daemon: gsortd %s\n", ver->valuestring);
    if (cJSON_IsArray(devs)) {
        int i = 0;
        const cJSON *d;
        if (!cJSON_GetArraySize(devs))
            printf("# daemon devices: none (host sorts only)\n");
        cJSON_ArrayForEach(d, devs) {
            const cJSON *idx = cJSON_GetObjectItemCaseSensitive(d, "index");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "name");
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(d, "type");
            const cJSON *plat = cJSON_GetObjectItemCaseSensitive(d, "platform");
            const cJSON *tuned = cJSON_GetObjectItemCaseSensitive(d, "tuned");
            printf("# daemon device %d: %s%s%s%s%s%s%s\n", cJSON_IsNumber(idx) ? idx->valueint : i,
                   cJSON_IsString(name) ? name->valuestring : "?",
                   cJSON_IsString(type) ? " (" : "", cJSON_IsString(type) ? type->valuestring : "",
                   cJSON_IsString(type) ? ")" : "", cJSON_IsString(plat) ? ", " : "",
                   cJSON_IsString(plat) ? plat->valuestring : "",
                   !cJSON_IsBool(tuned) ? "" : cJSON_IsTrue(tuned) ? ", tuned" : ", not tuned");
            i++;
        }
        const cJSON *host_o = cJSON_GetObjectItemCaseSensitive(info, "host");
        const cJSON *ht = cJSON_GetObjectItemCaseSensitive(host_o, "threads");
        if (cJSON_IsNumber(ht))
            printf("# daemon host sort threads: %d\n", ht->valueint);
    } else {
        /* an info reply of another shape: show it rather than guess */
        char *s = cJSON_PrintUnformatted(info);
        printf("# daemon info: %.400s\n", s ? s : "?");
        free(s);
    }
    printf("# keys: %s random (seed %" PRIu64 "), values: %s, algorithm: %s, daemon device: ",
           gs_dtype_name(o->dtype), o->seed, gs_payload_name(o->payload),
           o->algorithm ? o->algorithm : "daemon's plan");
    if (o->device >= 0)
        printf("%d\n", o->device);
    else
        printf("any\n");
    if (o->sweep)
        printf("# sweep: n = 2^%d..2^%d, %s, %d reps after %d warm-up; e2e = client wall, send to "
               "reply read; queue..total = daemon's reply (medians); kernel time = sort\n",
               o->min_log2, o->max_log2,
               o->modes == (MODE_INLINE | MODE_MEMFD) ? "inline and memfd"
               : o->modes == (MODE_INLINE | MODE_MEMFD | MODE_FRESH) ? "inline, memfd and fresh memfd"
               : mode_name(o->modes),
               o->reps, o->warmup);
    if (o->rps)
        printf("# rps: %d clients, %zu keys each, inline, %d s\n", o->rps_clients, o->rps_n,
               o->rps_seconds);
    cJSON_Delete(info);
    fflush(stdout);
    return 0;
}

/* ---- the socket's own floor ----
 * What the "client" column (e2e less the daemon's total) is to be read
 * against: a ping through gsortd (the I/O loop's wake, a JSON header each
 * way, the client's wake), and a bare round trip between two processes over
 * a Unix socket carrying what a memfd request carries (88 bytes and a
 * descriptor out, 160 bytes back), where no gsortd code runs at all; the
 * bare one also with the answer held back 0.1, 0.3 and 1 ms (the peer
 * spinning, as a device wait would hold it), so that what a longer sleep
 * costs the waiting process to wake shows as the round trip less the
 * hold; and after both sides sat idle 1 and 10 ms (a client that fills and
 * checks its arrays between sorts leaves the daemon's threads asleep that
 * long), where the waking is the peer's. */

#define FLOOR_REPS 101

/* The child's side of the bare round trip: read a message (and its
 * descriptor, closed at once), spin for the hold it names (a double, ms,
 * in its first bytes), answer 160 bytes; until the peer closes. */
static void floor_echo(int s)
{
    char buf[256], ctl[CMSG_SPACE(sizeof(int))];
    for (;;) {
        struct iovec iov = { buf, sizeof buf };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof ctl };
        ssize_t r = recvmsg(s, &m, 0);
        if (r <= 0)
            return;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
            if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                int fd;
                memcpy(&fd, CMSG_DATA(h), sizeof fd);
                close(fd);
            }
        double hold = 0, t0 = gs_now_ms();
        if ((size_t)r >= sizeof hold)
            memcpy(&hold, buf, sizeof hold);
        while (gs_now_ms() - t0 < hold)
            ;
        memset(buf, 'r', 160);
        if (write(s, buf, 160) != 160)
            return;
    }
}

/* Median ms of the bare round trip with the answer held `hold` ms, less
 * the hold, each sent after `idle` ms asleep; -1 when the socket failed. */
static double floor_trip(int s, double hold, double idle)
{
    double t[FLOOR_REPS];
    char buf[256], ctl[CMSG_SPACE(sizeof(int))];
    memset(buf, 'q', sizeof buf);
    memcpy(buf, &hold, sizeof hold);
    int fd = 0;   /* standard input stands for the memfd: any descriptor travels alike */
    for (int i = -10; i < FLOOR_REPS; i++) {
        struct iovec iov = { buf, 88 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof ctl };
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof fd);
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
        if (idle > 0) {
            struct timespec ts = { (time_t)(idle / 1000), (long)(fmod(idle, 1000) * 1e6) };
            nanosleep(&ts, NULL);
        }
        double t0 = gs_now_ms();
        if (sendmsg(s, &m, 0) != 88)
            return -1;
        char in[160];
        size_t got = 0;
        while (got < sizeof in) {
            ssize_t r = read(s, in + got, sizeof in - got);
            if (r <= 0)
                return -1;
            got += (size_t)r;
        }
        if (i >= 0)
            t[i] = gs_now_ms() - t0 - hold;
    }
    return bu_median(t, FLOOR_REPS);
}

/* The bare round trips into over[6]: held 0, 0.1, 0.3, 1 ms, then
 * after 1 and 10 ms idle; -1 (said why on stderr) when they could not be
 * measured. */
#define FLOOR_TRIPS 6
static const double floor_holds[FLOOR_TRIPS] = { 0, 0.1, 0.3, 1.0, 0, 0 };
static const double floor_idles[FLOOR_TRIPS] = { 0, 0, 0, 0, 1.0, 10.0 };
static int floor_bare(double over[FLOOR_TRIPS])
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        perror("gsort-netbench: socketpair");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("gsort-netbench: fork");
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        floor_echo(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    int rc = 0;
    for (int k = 0; k < FLOOR_TRIPS && rc == 0; k++)
        if ((over[k] = floor_trip(sv[0], floor_holds[k], floor_idles[k])) < 0) {
            fprintf(stderr, "gsort-netbench: the bare socket round trip failed\n");
            rc = -1;
        }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return rc;
}

/* Prints "# socket floor: ..." (ping through gsortd, bare round trips). */
static int print_floor(gs_client *c)
{
    double t[FLOOR_REPS], over[FLOOR_TRIPS];
    gs_err err;
    for (int i = -10; i < FLOOR_REPS; i++) {
        gs_err_clear(&err);
        double t0 = gs_now_ms();
        if (gs_client_call(c, "ping", NULL, &err) < 0) {
            fprintf(stderr, "gsort-netbench: ping failed: %s\n", err.msg);
            return -1;
        }
        if (i >= 0)
            t[i] = gs_now_ms() - t0;
    }
    double ping = bu_median(t, FLOOR_REPS);
    if (floor_bare(over) < 0)
        return -1;
    printf("# socket floor (medians of %d, ms): ping through gsortd %.4f; bare Unix socket round "
           "trip between two processes (88 bytes and a descriptor out, 160 back) %.4f, and less "
           "the hold with the answer held 0.1 / 0.3 / 1 ms: %.4f / %.4f / %.4f; after 1 / 10 ms "
           "idle: %.4f / %.4f (compare the client column)\n", FLOOR_REPS, ping, over[0],
           over[1], over[2], over[3], over[4], over[5]);
    fflush(stdout);
    return 0;
}

/* ---- sweep ---- */

typedef struct srow {
    size_t n;
    const char *mode;
    double e2e_med, e2e_min, mkeys;
    double queue, recv, upload, sort, download, total;
    /* the spans of total, a device run's steps, and what they leave: the
     * daemon's time no field accounts for, and the client's own (e2e less
     * the daemon's total: the socket, the copies, the header) */
    double admit, run, handback, setup, enqueue, wait, writeback, release, unacc, client;
    const pcie_res *pcie;
    char algo[32], device[256], plan[32];
    const char *note;
} srow;

static void sweep_header(int csv)
{
    if (csv)
        printf("kind,n,mode,e2e_ms,e2e_min_ms,e2e_mkeys_per_s,queue_ms,receive_ms,upload_ms,"
               "sort_ms,download_ms,total_ms,admit_ms,run_ms,handback_ms,setup_ms,enqueue_ms,"
               "wait_ms,writeback_ms,release_ms,unaccounted_ms,client_ms,pcie_ms,pcie_h2d_ms,"
               "pcie_d2h_ms,algorithm,device,plan,note\n");
    else
        printf("%11s %-6s %9s %9s %8s | %7s %7s %7s %8s %7s %8s | %7s %7s %7s %7s %7s %7s "
               "%7s %7s | %7s %7s | %8s | %-9s %-8s %s\n", "n",
               "mode", "e2e_ms", "min_ms", "Mkeys/s", "queue", "recv", "upload", "sort", "dnload",
               "total", "admit", "run", "hback", "setup", "enq", "wait", "wrback", "release",
               "unacc", "client", "pcie_ms", "algorithm", "plan", "device");
    fflush(stdout);
}

static void sweep_print(const srow *r, int csv)
{
    char pc[32] = "-", ph[32] = "", pd[32] = "";
    if (r->pcie && r->pcie->ok) {
        snprintf(pc, sizeof pc, "%.3f", r->pcie->wall_ms);
        snprintf(ph, sizeof ph, "%.3f", r->pcie->h2d_ms);
        snprintf(pd, sizeof pd, "%.3f", r->pcie->d2h_ms);
    } else if (csv) {
        pc[0] = '\0';
    }
    if (csv)
        printf("sweep,%zu,%s,%.4f,%.4f,%.3f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
               "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%s,%s,%s,%s,\"%s\",%s,%s\n",
               r->n, r->mode, r->e2e_med, r->e2e_min, r->mkeys, r->queue, r->recv, r->upload,
               r->sort, r->download, r->total, r->admit, r->run, r->handback, r->setup,
               r->enqueue, r->wait, r->writeback, r->release, r->unacc, r->client, pc, ph, pd,
               r->algo, r->device, r->plan, r->note ? r->note : "ok");
    else
        printf("%11zu %-6s %9.3f %9.3f %8.2f | %7.3f %7.3f %7.3f %8.3f %7.3f %8.3f | %7.3f %7.3f "
               "%7.3f %7.3f %7.3f %7.3f %7.3f %7.3f | %7.3f %7.3f | %8s | %-9s %-8s %s%s%s\n",
               r->n, r->mode, r->e2e_med, r->e2e_min, r->mkeys, r->queue, r->recv, r->upload,
               r->sort, r->download, r->total, r->admit, r->run, r->handback, r->setup,
               r->enqueue, r->wait, r->writeback, r->release, r->unacc, r->client, pc, r->algo,
               r->plan, r->device, r->note ? "  " : "", r->note ? r->note : "");
    fflush(stdout);
}

/* A point's columns of times: e2e, the reply's times, the unaccounted and
 * the client's. */
enum { NT = 17 };

/* The times of rep r into column r of t: e2e (ms), the reply's times, the
 * spans of its total, what no span accounts for and the client's own. */
static void record_rep(double *const t[NT], size_t r, double e2e, const gs_client_result *res)
{
    t[0][r] = e2e;
    t[1][r] = res->queue_ms;
    t[2][r] = res->receive_ms;
    t[3][r] = res->upload_ms;
    t[4][r] = res->sort_ms;
    t[5][r] = res->download_ms;
    t[6][r] = res->total_ms;
    const gs_reply_times *x = &res->times;
    double steps = x->setup + x->enqueue + x->wait + x->writeback + x->release;
    double v[] = { x->admit, x->run, x->handback, x->setup, x->enqueue, x->wait,
                   x->writeback, x->release };
    for (int k = 0; k < 8; k++)
        t[7 + k][r] = v[k];
    /* a device run is its steps; a host run is its sort */
    t[15][r] = x->total - (x->receive + x->admit + x->queue + x->handback +
                           (res->device >= 0 ? steps : x->sort + x->merge));
    t[16][r] = e2e - x->total;
}

/* A point's row: the medians of its nr reps (bu_median sorts each column
 * of t in place), what served the last one, and a note for an out-of-core,
 * split or fallback sort. */
static void print_point(const opts *o, const char *mname, size_t n, const pcie_res *pr,
                        double *const t[NT], size_t nr, const gs_client_result *r)
{
    srow row = { .n = n, .mode = mname, .pcie = pr };
    row.e2e_med = bu_median(t[0], nr);
    row.e2e_min = t[0][0];   /* bu_median() sorted it */
    row.mkeys = row.e2e_med > 0 ? (double)n / (row.e2e_med * 1e3) : 0;
    row.queue = bu_median(t[1], nr);
    row.recv = bu_median(t[2], nr);
    row.upload = bu_median(t[3], nr);
    row.sort = bu_median(t[4], nr);
    row.download = bu_median(t[5], nr);
    row.total = bu_median(t[6], nr);
    double *m[] = { &row.admit, &row.run, &row.handback, &row.setup, &row.enqueue, &row.wait,
                    &row.writeback, &row.release, &row.unacc, &row.client };
    for (int k = 0; k < 10; k++)
        *m[k] = bu_median(t[7 + k], nr);
    snprintf(row.algo, sizeof row.algo, "%s", r->algorithm[0] ? r->algorithm : "?");
    snprintf(row.plan, sizeof row.plan, "%s", r->plan[0] ? r->plan : "-");
    snprintf(row.device, sizeof row.device, "%s", r->device >= 0 ? r->device_name : "host");
    char ooc[96];
    if (r->chunks) {
        snprintf(ooc, sizeof ooc, "out of core: %u pieces, merge %.1f ms", r->chunks,
                 r->merge_ms);
        row.note = ooc;
    }
    char sp[256];
    if (r->nparts) {
        int w = snprintf(sp, sizeof sp, "split:");
        for (unsigned i = 0; i < r->nparts && w > 0 && (size_t)w < sizeof sp; i++)
            w += snprintf(sp + w, sizeof sp - (size_t)w, " dev %d %llu keys %.1f ms (pred %.1f);",
                          r->parts[i].device, (unsigned long long)r->parts[i].n,
                          r->parts[i].ms, r->parts[i].predicted_ms);
        if (w > 0 && (size_t)w < sizeof sp)
            snprintf(sp + w, sizeof sp - (size_t)w, " merge %.1f ms", r->merge_ms);
        row.note = sp;
    } else if (r->split_declined[0]) {
        snprintf(sp, sizeof sp, "split declined: %.200s", r->split_declined);
        row.note = sp;
    }
    if (r->fallback[0])
        row.note = r->fallback;
    sweep_print(&row, o->csv);
}

/* One point: warm-up + reps of n keys in one mode. Returns 0, 1 when the
 * daemon refuses the size (GS_ETOOBIG: later sizes are skipped), -1 on a
 * failure or a wrong result. */
static int sweep_point(gs_client *c, const opts *o, int mode, size_t n, const pcie_res *pr)
{
    size_t ks = gs_dtype_size(o->dtype), vs = gs_payload_size(o->payload);
    int idx = o->payload == GS_PL_IDX32 || o->payload == GS_PL_IDX64;
    gs_client_shm shm = { .fd = -1 };
    void *keys = NULL, *vals = NULL, *in_keys = NULL;
    size_t nr = (size_t)o->reps;
    double *t[NT];
    int rc = -1;
    gs_err err;
    gs_err_clear(&err);
    for (int i = 0; i < NT; i++)
        t[i] = calloc(nr, sizeof(double));
    for (int i = 0; i < NT; i++)
        if (!t[i])
            goto oom;
    if (mode == MODE_MEMFD || mode == MODE_FRESH) {
        if (gs_client_shm_alloc(&shm, n * (ks + vs), &err) < 0) {
            fprintf(stderr, "gsort-netbench: n=%zu: memfd of %zu bytes: %s\n", n, n * (ks + vs),
                    err.msg);
            shm.fd = -1;
            goto out;
        }
        keys = shm.ptr;
        vals = vs ? (char *)shm.ptr + n * ks : NULL;
    } else {
        keys = malloc(n * ks);
        vals = vs ? malloc(n * vs) : NULL;
        if (!keys || (vs && !vals))
            goto oom;
    }
    if (idx && !(in_keys = malloc(n * ks)))
        goto oom;

    gs_client_sort s = { .shape = { .dtype = o->dtype, .payload = o->payload },
                         .n = n,
                         .keys = keys,
                         .values = vals,
                         .algorithm = o->algorithm,
                         .device = o->device,
                         .split = o->split,
                         .shm = mode != MODE_INLINE ? &shm : NULL };
    gs_client_result res;
    const char *mname = mode_name(mode);
    for (int r = -o->warmup; r < o->reps; r++) {
        if (mode == MODE_FRESH && r >= 0) {
            /* a new file, the same size, not timed: memory the daemon has
             * not seen before */
            gs_client_shm_free(&shm);
            if (gs_client_shm_alloc(&shm, n * (ks + vs), &err) < 0) {
                fprintf(stderr, "gsort-netbench: n=%zu: memfd: %s\n", n, err.msg);
                shm.fd = -1;
                goto out;
            }
            s.keys = keys = shm.ptr;
            s.values = vals = vs ? (char *)shm.ptr + n * ks : NULL;
        }
        sv_keysum want;
        sv_fill(o->dtype, o->payload, 0, n, keys, vals,
             o->seed ^ ((uint64_t)n * 0x100000001b3u) ^ (uint64_t)(r + 2) << 56, &want);
        if (idx)
            memcpy(in_keys, keys, n * ks);
        memset(&res, 0, sizeof res);
        gs_err_clear(&err);
        double t0 = gs_now_ms();
        int e = gs_client_sort_run(c, &s, &res, &err);
        double t1 = gs_now_ms();
        if (e == GS_ETOOBIG) {
            srow row = { .n = n, .mode = mname, .note = "refused as too big" };
            fprintf(stderr, "gsort-netbench: n=%zu %s: %s; stopping this mode here\n", n, mname,
                    err.msg);
            snprintf(row.algo, sizeof row.algo, "-");
            snprintf(row.plan, sizeof row.plan, "-");
            snprintf(row.device, sizeof row.device, "-");
            sweep_print(&row, o->csv);
            rc = 1;
            goto out;
        }
        if (e < 0) {
            fprintf(stderr, "gsort-netbench: n=%zu %s: sort request failed: %s\n", n, mname,
                    err.msg);
            goto out;
        }
        char why[256];
        if (!sv_verify(o->dtype, o->payload, 0, n, keys, vals, in_keys, &want, why, sizeof why)) {
            fprintf(stderr,
                    "gsort-netbench: WRONG RESULT: n=%zu %s %s/%s, served by %s on %s (%s): %s\n",
                    n, mname, gs_dtype_name(o->dtype), gs_payload_name(o->payload), res.algorithm,
                    res.device >= 0 ? res.device_name : "host", res.params, why);
            goto out;
        }
        if (r >= 0)
            record_rep(t, (size_t)r, t1 - t0, &res);
    }
    print_point(o, mname, n, pr, t, nr, &res);
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "gsort-netbench: n=%zu: host out of memory\n", n);
out:
    for (int i = 0; i < NT; i++)
        free(t[i]);
    free(in_keys);
    if (mode != MODE_INLINE) {
        if (shm.fd >= 0)
            gs_client_shm_free(&shm);
    } else {
        free(keys);
        free(vals);
    }
    return rc;
}

static int run_sweep(const opts *o)
{
    gs_client *c = NULL;
    pcie pc;
    if (connect_or_explain(&c, o) < 0)
        return -1;
    if (pcie_open(&pc, o->pcie_device) < 0) {
        gs_client_close(c);
        return -1;
    }
    sweep_header(o->csv);
    int rc = 0, stopped = 0;
    for (int lg = o->min_log2; lg <= o->max_log2 && rc == 0; lg++) {
        size_t n = (size_t)1 << lg;
        pcie_res pr;
        if (pcie_measure(&pc, o->dtype, o->payload, o->reps, n, &pr) < 0) {
            rc = -1;
            break;
        }
        for (int m = MODE_INLINE; m <= MODE_FRESH && rc == 0; m <<= 1) {
            if (!(o->modes & m) || (stopped & m))
                continue;
            int e = sweep_point(c, o, m, n, pc.dev ? &pr : NULL);
            if (e < 0)
                rc = -1;
            else if (e > 0)
                stopped |= m;
        }
        if ((stopped & o->modes) == o->modes)
            break;
    }
    pcie_close(&pc);
    gs_client_close(c);
    return rc;
}

/* ---- requests per second ---- */

typedef struct rps_thread {
    const opts *o;
    pthread_t tid;
    gs_client *c;
    int id;
    double *lat, *srv;        /* client latency, daemon total per request */
    size_t count, cap;
    double end_ms;
    int failed;
} rps_thread;

static atomic_int rps_stop;
static double rps_t0;
/* Every client starts at once, when main has started them all. */
static pthread_mutex_t rps_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rps_cond = PTHREAD_COND_INITIALIZER;
static int rps_go;

static void *rps_main(void *arg)
{
    rps_thread *th = arg;
    const opts *o = th->o;
    size_t n = o->rps_n, ks = gs_dtype_size(o->dtype), vs = gs_payload_size(o->payload);
    int idx = o->payload == GS_PL_IDX32 || o->payload == GS_PL_IDX64;
    void *keys = malloc(n * ks + 8), *vals = vs ? malloc(n * vs + 8) : NULL;
    void *in_keys = idx ? malloc(n * ks + 8) : NULL;
    uint64_t seed = o->seed ^ (UINT64_C(0x5851f42d4c957f2d) * (uint64_t)(th->id + 1));
    gs_err err;
    pthread_mutex_lock(&rps_lock);
    while (!rps_go)
        pthread_cond_wait(&rps_cond, &rps_lock);
    pthread_mutex_unlock(&rps_lock);
    if (!keys || (vs && !vals) || (idx && !in_keys)) {
        fprintf(stderr, "gsort-netbench: rps client %d: out of memory\n", th->id);
        th->failed = 1;
        goto out;
    }
    double deadline = rps_t0 + o->rps_seconds * 1e3;
    gs_client_sort s = { .shape = { .dtype = o->dtype, .payload = o->payload },
                         .n = n,
                         .keys = keys,
                         .values = vals,
                         .algorithm = o->algorithm,
                         .device = o->device };
    while (!atomic_load(&rps_stop) && gs_now_ms() < deadline) {
        sv_keysum want;
        sv_fill(o->dtype, o->payload, 0, n, keys, vals, bu_splitmix(&seed), &want);
        if (idx)
            memcpy(in_keys, keys, n * ks);
        gs_client_result res;
        gs_err_clear(&err);
        double t0 = gs_now_ms();
        int e = gs_client_sort_run(th->c, &s, &res, &err);
        double t1 = gs_now_ms();
        char why[256];
        if (e < 0) {
            fprintf(stderr, "gsort-netbench: rps client %d: request failed: %s\n", th->id,
                    err.msg);
            th->failed = 1;
            break;
        }
        if (!sv_verify(o->dtype, o->payload, 0, n, keys, vals, in_keys, &want, why, sizeof why)) {
            fprintf(stderr, "gsort-netbench: rps client %d: WRONG RESULT from %s on %s: %s\n",
                    th->id, res.algorithm, res.device >= 0 ? res.device_name : "host", why);
            th->failed = 1;
            break;
        }
        if (th->count == th->cap) {
            size_t nc = th->cap ? th->cap * 2 : 4096;
            double *a = realloc(th->lat, nc * sizeof *a);
            if (a)
                th->lat = a;
            double *b = a ? realloc(th->srv, nc * sizeof *b) : NULL;
            if (b)
                th->srv = b;
            if (!a || !b) {
                fprintf(stderr, "gsort-netbench: rps client %d: out of memory\n", th->id);
                th->failed = 1;
                break;
            }
            th->cap = nc;
        }
        th->lat[th->count] = t1 - t0;
        th->srv[th->count] = res.total_ms;
        th->count++;
    }
out:
    if (th->failed)
        atomic_store(&rps_stop, 1);   /* one wrong or failed reply ends the run */
    th->end_ms = gs_now_ms();
    free(keys);
    free(vals);
    free(in_keys);
    return NULL;
}

static int run_rps(const opts *o)
{
    int nt = o->rps_clients, rc = -1, started = 0;
    rps_thread *th = calloc((size_t)nt, sizeof *th);
    double *all = NULL, *srv = NULL;
    if (!th) {
        fprintf(stderr, "gsort-netbench: out of memory\n");
        return -1;
    }
    for (int i = 0; i < nt; i++)
        if (connect_or_explain(&th[i].c, o) < 0)
            goto out;
    atomic_store(&rps_stop, 0);
    rps_go = 0;
    for (int i = 0; i < nt; i++) {
        th[i].o = o;
        th[i].id = i;
        if (pthread_create(&th[i].tid, NULL, rps_main, &th[i]) != 0) {
            fprintf(stderr, "gsort-netbench: cannot start client thread %d\n", i);
            atomic_store(&rps_stop, 1);   /* the started ones leave at once */
            break;
        }
        started++;
    }
    pthread_mutex_lock(&rps_lock);
    rps_t0 = gs_now_ms();
    rps_go = 1;
    pthread_cond_broadcast(&rps_cond);
    pthread_mutex_unlock(&rps_lock);
    size_t total = 0;
    double end = rps_t0;
    int failed = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(th[i].tid, NULL);
        total += th[i].count;
        failed |= th[i].failed;
        if (th[i].end_ms > end)
            end = th[i].end_ms;
    }
    if (failed || started < nt)
        goto out;
    all = malloc((total ? total : 1) * sizeof *all);
    srv = malloc((total ? total : 1) * sizeof *srv);
    if (!all || !srv) {
        fprintf(stderr, "gsort-netbench: out of memory\n");
        goto out;
    }
    size_t k = 0;
    for (int i = 0; i < nt; i++) {
        memcpy(all + k, th[i].lat, th[i].count * sizeof *all);
        memcpy(srv + k, th[i].srv, th[i].count * sizeof *srv);
        k += th[i].count;
    }
    qsort(all, total, sizeof *all, bu_cmp_double);
    qsort(srv, total, sizeof *srv, bu_cmp_double);
    double secs = (end - rps_t0) / 1e3;
    double rps = secs > 0 ? (double)total / secs : 0;
    if (o->csv) {
        printf("kind,clients,n,seconds,requests,requests_per_s,p50_ms,p99_ms,max_ms,"
               "daemon_total_p50_ms,daemon_total_p99_ms\n");
        printf("rps,%d,%zu,%.3f,%zu,%.1f,%.4f,%.4f,%.4f,%.4f,%.4f\n", nt, o->rps_n, secs, total,
               rps, bu_pctl(all, total, .5), bu_pctl(all, total, .99), total ? all[total - 1] : NAN,
               bu_pctl(srv, total, .5), bu_pctl(srv, total, .99));
    } else {
        printf("%7s %7s %7s %9s %11s %9s %9s %9s | %14s %14s\n", "clients", "n", "secs",
               "requests", "requests/s", "p50_ms", "p99_ms", "max_ms", "daemon_p50_ms",
               "daemon_p99_ms");
        printf("%7d %7zu %7.2f %9zu %11.1f %9.3f %9.3f %9.3f | %14.3f %14.3f\n", nt, o->rps_n, secs,
               total, rps, bu_pctl(all, total, .5), bu_pctl(all, total, .99),
               total ? all[total - 1] : NAN, bu_pctl(srv, total, .5), bu_pctl(srv, total, .99));
    }
    fflush(stdout);
    rc = total ? 0 : -1;
    if (!total)
        fprintf(stderr, "gsort-netbench: no request completed in the requests/s run\n");
out:
    for (int i = 0; i < nt; i++) {
        if (th[i].c)
            gs_client_close(th[i].c);
        free(th[i].lat);
        free(th[i].srv);
    }
    free(th);
    free(all);
    free(srv);
    return rc;
}

/* ---- command line ---- */

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gsort-netbench: %s: '%s' is not an integer in %ld..%ld\n", opt, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv)
{
    opts o = { .dtype = GS_DT_U32, .payload = GS_PL_NONE, .device = -1, .min_log2 = 10,
               .max_log2 = 24, .reps = 5, .warmup = 1, .modes = MODE_INLINE | MODE_MEMFD, .rps_clients = 16,
               .rps_seconds = 5, .rps_n = 1000, .pcie_device = -2, .seed = 12345, .sweep = 1,
               .rps = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int x;
#define NEEDV()                                                                   \
    do {                                                                          \
        if (!v) {                                                                 \
            fprintf(stderr, "gsort-netbench: %s needs a value (see --help)\n", a); \
            return 2;                                                             \
        }                                                                         \
        i++;                                                                      \
    } while (0)
#define INTV(lo, hi, dst)                         \
    do {                                          \
        NEEDV();                                  \
        if (parse_int(a, v, (lo), (hi), &x) < 0)  \
            return 2;                             \
        (dst) = x;                                \
    } while (0)
        if (!strcmp(a, "--socket")) { NEEDV(); o.socket = v; }
        else if (!strcmp(a, "--dtype")) {
            NEEDV();
            if (gs_dtype_parse(v, &o.dtype)) {
                fprintf(stderr, "gsort-netbench: unknown --dtype '%s' (u32 i32 f32 u64 i64 f64)\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--values")) {
            NEEDV();
            if (gs_payload_parse(v, &o.payload)) {
                fprintf(stderr, "gsort-netbench: unknown --values '%s' (none u32 u64 idx32 idx64)\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--algorithm")) { NEEDV(); o.algorithm = v; }
        else if (!strcmp(a, "--device")) INTV(-1, 1023, o.device);
        else if (!strcmp(a, "--min-log2")) INTV(0, MAX_LOG2_LIMIT, o.min_log2);
        else if (!strcmp(a, "--max-log2")) {
            NEEDV();
            if (parse_int(a, v, 0, 1000, &x) < 0)
                return 2;
            if (x > MAX_LOG2_LIMIT) {
                fprintf(stderr, "gsort-netbench: --max-log2 %d: at most %d\n", x,
                        MAX_LOG2_LIMIT);
                return 2;
            }
            o.max_log2 = x;
        }
        else if (!strcmp(a, "--reps")) INTV(1, 100000, o.reps);
        else if (!strcmp(a, "--warmup")) INTV(1, 100000, o.warmup);
        else if (!strcmp(a, "--mode")) {
            NEEDV();
            if (!strcmp(v, "inline")) o.modes = MODE_INLINE;
            else if (!strcmp(v, "memfd")) o.modes = MODE_MEMFD;
            else if (!strcmp(v, "fresh")) o.modes = MODE_FRESH;
            else if (!strcmp(v, "both")) o.modes = MODE_INLINE | MODE_MEMFD;
            else if (!strcmp(v, "all")) o.modes = MODE_INLINE | MODE_MEMFD | MODE_FRESH;
            else {
                fprintf(stderr, "gsort-netbench: unknown --mode '%s' (inline, memfd, fresh, both, "
                        "all)\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--rps-clients")) INTV(1, 4096, o.rps_clients);
        else if (!strcmp(a, "--rps-n")) {
            int nn;
            INTV(1, 1 << 24, nn);
            o.rps_n = (size_t)nn;
        }
        else if (!strcmp(a, "--rps-seconds")) INTV(1, 86400, o.rps_seconds);
        else if (!strcmp(a, "--pcie-device")) INTV(-1, 1023, o.pcie_device);
        else if (!strcmp(a, "--seed")) { NEEDV(); o.seed = strtoull(v, NULL, 0); }
        else if (!strcmp(a, "--csv")) o.csv = 1;
        else if (!strcmp(a, "--no-sweep")) o.sweep = 0;
        else if (!strcmp(a, "--no-rps")) o.rps = 0;
        else if (!strcmp(a, "--split")) o.split = 1;
        else if (!strcmp(a, "--no-split")) o.split = -1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else {
            fprintf(stderr, "gsort-netbench: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef INTV
#undef NEEDV
    }
    if (o.min_log2 > o.max_log2) {
        fprintf(stderr, "gsort-netbench: --min-log2 %d > --max-log2 %d\n", o.min_log2, o.max_log2);
        return 2;
    }
    if (o.socket && strlen(o.socket) >= sizeof o.socket_shown) {
        fprintf(stderr, "gsort-netbench: --socket: path too long\n");
        return 2;
    }
    if (bc_socket_shown(o.socket, o.socket_shown, sizeof o.socket_shown, "gsort-netbench",
                        "--socket") < 0)
        return 2;
    /* a daemon that goes away mid-request must be an error message, not a silent death */
    signal(SIGPIPE, SIG_IGN);

    gs_client *c = NULL;
    if (connect_or_explain(&c, &o) < 0)
        return 1;
    int rc = print_header(c, &o);
    if (rc == 0 && o.sweep)
        rc = print_floor(c);
    gs_client_close(c);
    if (rc == 0 && o.sweep)
        rc = run_sweep(&o);
    if (rc == 0 && o.rps)
        rc = run_rps(&o);
    if (rc < 0) {
        fprintf(stderr, "gsort-netbench: FAILED (see above)\n");
        return 1;
    }
    return 0;
}
