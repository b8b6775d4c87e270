/* gsort-load's racing clients (--racers, issue 32): each sorts through a
 * memfd (one-shot, or its registered block) while a writer thread of its own
 * keeps rewriting the keys and values it sent, as a client that writes its
 * shared memory during a sort does. Their answers cannot be right, so they
 * are not checked; what is checked is that the daemon survives them and
 * keeps the other clients' answers exact (gsort-load.c does that part):
 * each racing sort must come back as a reply, sorted or an error, never as
 * a connection the daemon dropped. Names start with lr_. */
#ifndef GS_BENCH_LOADRACE_H
#define GS_BENCH_LOADRACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gs_client.h"
#include "loadopts.h"
#include "loadxport.h"

#define LR_ALGOS 6              /* the daemon's plan, then each algorithm */

typedef struct lr_client {
    const lo_opts *o;
    int id;
    pthread_t tid, wtid;
    gs_client *c;
    uint64_t rng;
    lx_client x;
    /* the writer: rewrites [wk, wk + wkb) and [wv, wv + wvb) while armed */
    pthread_mutex_t wmu;
    unsigned char *wk, *wv;
    size_t wkb, wvb;
    _Atomic int armed, quit;
    _Atomic unsigned long rewrites;
    /* results */
    uint64_t sent, ok, raced, refused, lost;
    uint64_t by_algo[LR_ALGOS], by_kind[LX_COUNT];
    int skip[LR_ALGOS];         /* the daemon does not know it (vqsort without Highway) */
    char last_refusal[256], last_loss[256];
} lr_client;

/* The names the racers cycle through ("auto" is the daemon's plan). */
extern const char *const lr_algo_name[LR_ALGOS];

/* Start racer `id` (connects, starts its writer and its sort loop, which
 * runs until lr_stop). 0, or -1 said on stderr. */
int lr_start(lr_client *r, const lo_opts *o, int id);
/* End the loop and the writer, join both, close the connection. */
void lr_stop(lr_client *r);
/* One line per racer total on stdout; returns the connections lost. */
uint64_t lr_report(const lr_client *r, int n);

#endif
