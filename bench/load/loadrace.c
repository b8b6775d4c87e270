/* gsort-load's racing clients (loadrace.h): a sort loop and a writer
 * thread per racer. The writer rewrites the request's arrays only while
 * the request is in flight (armed), under a mutex the sort loop takes to
 * disarm it, so that the memory is never written once the loop lets go of
 * it (a one-shot memfd is unmapped then). */
#include "config.h"
#include "loadrace.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "gs_err.h"
#include "gs_types.h"

const char *const lr_algo_name[LR_ALGOS] = { "auto", "host", "vqsort", "radix", "mergepath",
                                             "shellsort" };

static void pause_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

/* One rewrite of the armed arrays: all 0x00 or all 0xff (every key to one
 * end), or a few thousand bytes poked at random (a few keys moved between
 * two passes over them). */
static void rewrite(lr_client *r, uint64_t *s, unsigned *flip)
{
    if (bu_splitmix(s) % 2) {
        int v = (*flip)++ & 1 ? 0xff : 0x00;
        memset(r->wk, v, r->wkb);
        if (r->wv)
            memset(r->wv, v, r->wvb);
        return;
    }
    for (unsigned i = 0; i < 4096; i++) {
        uint64_t x = bu_splitmix(s);
        r->wk[x % r->wkb] = (unsigned char)(x >> 56);
        if (r->wv)
            r->wv[(x >> 8) % r->wvb] = (unsigned char)(x >> 48);
    }
}

static void *writer_main(void *arg)
{
    lr_client *r = arg;
    uint64_t s = r->rng ^ UINT64_C(0x2545f4914f6cdd1d);
    unsigned flip = 0;
    while (!atomic_load(&r->quit)) {
        if (!atomic_load(&r->armed)) {
            pause_us(50);
            continue;
        }
        pthread_mutex_lock(&r->wmu);
        if (atomic_load(&r->armed)) {
            rewrite(r, &s, &flip);
            atomic_fetch_add(&r->rewrites, 1);
        }
        pthread_mutex_unlock(&r->wmu);
    }
    return NULL;
}

static void arm(lr_client *r, void *k, size_t kb, void *v, size_t vb)
{
    pthread_mutex_lock(&r->wmu);
    r->wk = k;
    r->wkb = kb;
    r->wv = vb ? v : NULL;
    r->wvb = vb;
    atomic_store(&r->armed, kb > 0);
    pthread_mutex_unlock(&r->wmu);
}

/* Once this returns the writer touches the arrays no more. */
static void disarm(lr_client *r)
{
    atomic_store(&r->armed, 0);
    pthread_mutex_lock(&r->wmu);
    pthread_mutex_unlock(&r->wmu);
}

static int reconnect(lr_client *r)
{
    gs_err err;
    gs_err_clear(&err);
    if (r->c)
        gs_client_close(r->c);
    r->c = NULL;
    if (gs_client_connect(&r->c, r->o->socket, &err) < 0) {
        snprintf(r->last_loss, sizeof r->last_loss, "connect: %.200s", err.msg);
        r->c = NULL;
        return -1;
    }
    gs_client_set_timeout(r->c, r->o->timeout_s);
    return 0;
}

static void one_race(lr_client *r)
{
    const lo_opts *o = r->o;
    uint64_t *s = &r->rng;
    int a;
    do
        a = (int)(bu_splitmix(s) % LR_ALGOS);
    while (r->skip[a]);
    gs_dtype t = (gs_dtype)(bu_splitmix(s) % 6);
    /* vqsort sorts keys alone */
    gs_payload p = a == 2 ? GS_PL_NONE : (gs_payload)(bu_splitmix(s) % 5);
    int desc = bu_splitmix(s) & 1;
    int lo = o->min_log2 ? o->min_log2 : 1;
    double u = (double)(bu_splitmix(s) >> 11) * 0x1.0p-53;
    size_t n = (size_t)exp2(lo + u * (o->max_log2 - lo));
    lx_kind kind = n > ((size_t)1 << o->block_max_log2) || bu_splitmix(s) % 2 ? LX_ONESHOT
                                                                               : LX_BLOCK;
    gs_err err;
    gs_err_clear(&err);
    lx_req x;
    if (lx_prepare(&r->x, kind, t, p, n, &x, &err) < 0) {
        snprintf(r->last_refusal, sizeof r->last_refusal, "client memfd: %.200s", err.msg);
        r->refused++;
        return;
    }
    size_t kb = n * gs_dtype_size(t), vb = p == GS_PL_NONE ? 0 : n * gs_payload_size(p);
    for (size_t i = 0; i + 8 <= kb; i += 8) {
        uint64_t v = bu_splitmix(s);
        memcpy((char *)x.keys + i, &v, 8);
    }
    gs_client_sort rq = { .shape = { .dtype = t, .payload = p, .descending = desc }, .n = n,
                          .keys = x.keys, .values = x.vals, .device = -1, .shm = x.shm,
                          .algorithm = a ? lr_algo_name[a] : NULL };
    arm(r, x.keys, kb, x.vals, vb);
    int rc = gs_client_sort_run(r->c, &rq, NULL, &err);
    disarm(r);
    r->sent++;
    r->by_algo[a]++;
    r->by_kind[kind]++;
    if (rc == 0) {
        r->ok++;
    } else if (!strncmp(err.msg, "gsortd: ", 8)) {
        /* the daemon answered: a race it noticed, or a request it refuses */
        if (strstr(err.msg, "changed while they were being sorted")) {
            r->raced++;
        } else {
            r->refused++;
            snprintf(r->last_refusal, sizeof r->last_refusal, "%s %s/%s n=%zu: %.200s",
                     lr_algo_name[a], gs_dtype_name(t), gs_payload_name(p), n, err.msg);
            if (rc == GS_ENOTFOUND)
                r->skip[a] = a != 0;
        }
    } else {
        r->lost++;
        snprintf(r->last_loss, sizeof r->last_loss, "%s %s/%s n=%zu by %s: %.200s",
                 lr_algo_name[a], gs_dtype_name(t), gs_payload_name(p), n, lx_name[kind],
                 err.msg);
        reconnect(r);
    }
    lx_finish(&r->x, &x, rc < 0);
}

static void *loop_main(void *arg)
{
    lr_client *r = arg;
    while (!atomic_load(&r->quit)) {
        if (!r->c && reconnect(r) < 0) {
            r->lost++;
            pause_us(100000);
            continue;
        }
        one_race(r);
    }
    return NULL;
}

int lr_start(lr_client *r, const lo_opts *o, int id)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->id = id;
    r->rng = o->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(id + 1001));
    lx_init(&r->x, o->block_max_log2);
    pthread_mutex_init(&r->wmu, NULL);
    if (reconnect(r) < 0) {
        fprintf(stderr, "gsort-load: racer %d: %s\n", id, r->last_loss);
        return -1;
    }
    if (pthread_create(&r->wtid, NULL, writer_main, r) != 0) {
        fprintf(stderr, "gsort-load: racer %d: cannot start its writer\n", id);
        return -1;
    }
    if (pthread_create(&r->tid, NULL, loop_main, r) != 0) {
        atomic_store(&r->quit, 1);
        pthread_join(r->wtid, NULL);
        fprintf(stderr, "gsort-load: racer %d: cannot start its thread\n", id);
        return -1;
    }
    return 0;
}

void lr_stop(lr_client *r)
{
    atomic_store(&r->quit, 1);
    pthread_join(r->tid, NULL);
    pthread_join(r->wtid, NULL);
    if (r->c)
        gs_client_close(r->c);
    r->c = NULL;
    lx_free(&r->x);
    pthread_mutex_destroy(&r->wmu);
}

uint64_t lr_report(const lr_client *r, int n)
{
    uint64_t sent = 0, ok = 0, raced = 0, refused = 0, lost = 0, rw = 0;
    uint64_t by_algo[LR_ALGOS] = { 0 }, by_kind[LX_COUNT] = { 0 };
    for (int i = 0; i < n; i++) {
        sent += r[i].sent;
        ok += r[i].ok;
        raced += r[i].raced;
        refused += r[i].refused;
        lost += r[i].lost;
        rw += atomic_load(&r[i].rewrites);
        for (int a = 0; a < LR_ALGOS; a++)
            by_algo[a] += r[i].by_algo[a];
        for (int k = 0; k < LX_COUNT; k++)
            by_kind[k] += r[i].by_kind[k];
    }
    printf("racing clients: %d, %" PRIu64 " sorts raced by %" PRIu64 " rewrites (%" PRIu64
           " one-shot memfd, %" PRIu64 " registered block); by algorithm:", n, sent, rw,
           by_kind[LX_ONESHOT], by_kind[LX_BLOCK]);
    for (int a = 0; a < LR_ALGOS; a++)
        printf(" %s %" PRIu64, lr_algo_name[a], by_algo[a]);
    printf("\nracing answers: %" PRIu64 " sorted (maybe wrongly), %" PRIu64 " 'keys changed' "
           "errors, %" PRIu64 " other refusals, %" PRIu64 " connections lost\n", ok, raced,
           refused, lost);
    for (int i = 0; i < n; i++) {
        if (r[i].last_refusal[0])
            printf("  racer %d's last refusal: %s\n", r[i].id, r[i].last_refusal);
        if (r[i].last_loss[0])
            printf("  racer %d's last LOST connection: %s\n", r[i].id, r[i].last_loss);
    }
    return lost;
}
