/* The host thread pool (gs_hostpool.h): a fixed table of helper threads
 * under one mutex, each idle helper asleep on its own condition variable
 * until a team takes it; a team runs its phases under its own mutex, so
 * teams never contend with one another. A phase is "closed" once the
 * caller has run out of tasks: a helper that wakes after that skips it, so
 * a slow wake-up never holds the caller back. Between phases a helper
 * spins a while before it sleeps: waking a sleeping thread takes tens of
 * microseconds, as long as a phase of a mid-sized sort. */
#include "config.h"
#include "gs_hostpool.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void relax(void) { _mm_pause(); }
#else
static inline void relax(void) { }
#endif

/* Polls of the next phase before a helper sleeps (some 50 us). */
#define SPIN_POLLS 20000

typedef struct helper {
    pthread_t th;
    pthread_cond_t cv;
    gs_hostpool_team *team;     /* the team it serves, NULL when idle */
    unsigned worker;            /* its index in that team */
} helper;

static struct {
    pthread_mutex_t mu;
    helper h[GS_HOSTPOOL_MAX];
    unsigned started;           /* h[0..started) are running threads */
    unsigned callers;           /* teams formed and not yet left: a core each */
    int quit;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static _Atomic unsigned forced_cpus;

unsigned gs_hostpool_force_cpus(unsigned n)
{
    return atomic_exchange(&forced_cpus, n);
}

/* Counted once: sysconf reads /sys and sched_getaffinity is a system
 * call, together about 6 us, and every host sort asks (its parameters'
 * default): a fifth of a 2^10-key sort through the daemon. */
static _Atomic unsigned counted_cpus;

unsigned gs_hostpool_cpus(void)
{
    unsigned f = atomic_load(&forced_cpus);
    if (f)
        return f > GS_HOSTPOOL_MAX + 1 ? GS_HOSTPOOL_MAX + 1 : f;
    unsigned c = atomic_load_explicit(&counted_cpus, memory_order_relaxed);
    if (c)
        return c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    /* a process limited to fewer CPUs (taskset, a container) gets those */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    c = n < 1 ? 1 : n > GS_HOSTPOOL_MAX + 1 ? GS_HOSTPOOL_MAX + 1 : (unsigned)n;
    atomic_store_explicit(&counted_cpus, c, memory_order_relaxed);
    return c;
}

/* Serve team t as helper h (its worker w) until the team's caller leaves.
 * The helper is idle again (h->team NULL) before the caller learns it
 * left, so that a team formed right after finds it free. */
static void serve(helper *h, gs_hostpool_team *t, unsigned w)
{
    unsigned seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_POLLS && atomic_load(&t->gen) == seen &&
                        !atomic_load(&t->leaving); i++)
            relax();
        pthread_mutex_lock(&t->mu);
        while (t->gen == seen && !t->leaving) {
            t->sleepers++;
            pthread_cond_wait(&t->go, &t->mu);
            t->sleepers--;
        }
        if (t->gen == seen)
            break;
        seen = t->gen;
        if (t->closed) {
            pthread_mutex_unlock(&t->mu);
            continue;
        }
        atomic_fetch_add(&t->busy, 1);
        gs_hostpool_fn fn = t->fn;
        void *arg = t->arg;
        size_t nt = t->ntasks;
        pthread_mutex_unlock(&t->mu);
        for (size_t i; (i = atomic_fetch_add(&t->next, 1)) < nt;)
            fn(arg, i, w);
        pthread_mutex_lock(&t->mu);
        if (atomic_fetch_sub(&t->busy, 1) == 1 && t->closed)
            pthread_cond_signal(&t->done);
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_lock(&pool.mu);        /* t->mu, then pool.mu: nothing nests them the
                                            other way round */
    h->team = NULL;
    pthread_mutex_unlock(&pool.mu);
    if (++t->left == t->nhelpers)
        pthread_cond_signal(&t->done);
    pthread_mutex_unlock(&t->mu);
}

static void *helper_main(void *arg)
{
    helper *h = arg;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!h->team && !pool.quit)
            pthread_cond_wait(&h->cv, &pool.mu);
        gs_hostpool_team *t = h->team;
        if (!t)
            break;
        unsigned w = h->worker;
        pthread_mutex_unlock(&pool.mu);
        serve(h, t, w);                 /* it sets h->team NULL (and a new team may have
                                           taken it since) */
        pthread_mutex_lock(&pool.mu);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

/* fork(): the child has none of the helpers; it starts its own. */
static void fork_prepare(void) { pthread_mutex_lock(&pool.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&pool.mu); }
static void fork_child(void)
{
    for (unsigned i = 0; i < pool.started; i++) {
        pthread_cond_init(&pool.h[i].cv, NULL);
        pool.h[i].team = NULL;
    }
    pool.started = 0;
    pool.callers = 0;
    pthread_mutex_unlock(&pool.mu);
}
static void fork_hook(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Start helper h[pool.started] already assigned to a team (pool.mu held).
 * Helpers take no signals: they belong to whoever handles them. */
static int start_helper(gs_hostpool_team *t, unsigned worker)
{
    helper *h = &pool.h[pool.started];
    if (pthread_cond_init(&h->cv, NULL) != 0)
        return -1;
    h->team = t;
    h->worker = worker;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&h->th, NULL, helper_main, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&h->cv);
        h->team = NULL;
        return -1;
    }
    pool.started++;
    return 0;
}

unsigned gs_hostpool_join(gs_hostpool_team *t, unsigned want)
{
    t->nhelpers = 0;
    atomic_store(&t->gen, 0);
    atomic_store(&t->leaving, 0);
    atomic_store(&t->busy, 0);
    t->left = t->sleepers = 0;
    t->closed = 0;
    t->sync = 0;
    unsigned cap = gs_hostpool_cpus() - 1;
    if (want > cap)
        want = cap;
    if (want == 0)
        return 1;
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return 1;
    if (pthread_cond_init(&t->go, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        return 1;
    }
    if (pthread_cond_init(&t->done, NULL) != 0) {
        pthread_cond_destroy(&t->go);
        pthread_mutex_destroy(&t->mu);
        return 1;
    }
    t->sync = 1;
    pthread_once(&fork_once, fork_hook);
    pthread_mutex_lock(&pool.mu);
    /* Cores are shared: every caller with a team and every helper serving
     * one holds one, so sorts that run at once (the daemon's host workers)
     * never start more threads than there are CPUs between them. */
    unsigned held = ++pool.callers;
    for (unsigned i = 0; i < pool.started; i++)
        held += pool.h[i].team != NULL;
    unsigned room = cap + 1 > held ? cap + 1 - held : 0;
    if (want > room)
        want = room;
    for (unsigned i = 0; !pool.quit && i < pool.started && t->nhelpers < want; i++) {
        helper *h = &pool.h[i];
        if (h->team)
            continue;
        h->team = t;
        h->worker = ++t->nhelpers;
        pthread_cond_signal(&h->cv);
    }
    while (!pool.quit && t->nhelpers < want && pool.started < cap) {
        if (start_helper(t, t->nhelpers + 1) < 0)
            break;      /* no more threads now: run with fewer */
        t->nhelpers++;
    }
    pthread_mutex_unlock(&pool.mu);
    return 1 + t->nhelpers;
}

void gs_hostpool_for(gs_hostpool_team *t, size_t ntasks, gs_hostpool_fn fn, void *arg)
{
    if (t->nhelpers == 0 || ntasks < 2) {
        for (size_t i = 0; i < ntasks; i++)
            fn(arg, i, 0);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->arg = arg;
    t->ntasks = ntasks;
    atomic_store(&t->next, 0);
    t->closed = 0;
    atomic_fetch_add(&t->gen, 1);
    if (t->sleepers)
        pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (size_t i; (i = atomic_fetch_add(&t->next, 1)) < ntasks;)
        fn(arg, i, 0);
    pthread_mutex_lock(&t->mu);
    t->closed = 1;
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < SPIN_POLLS && atomic_load(&t->busy); i++)
        relax();
    pthread_mutex_lock(&t->mu);
    while (atomic_load(&t->busy))
        pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void gs_hostpool_leave(gs_hostpool_team *t)
{
    if (!t->sync)
        return;
    pthread_mutex_lock(&t->mu);
    atomic_store(&t->leaving, 1);
    pthread_cond_broadcast(&t->go);
    while (t->left < t->nhelpers)
        pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
    pthread_cond_destroy(&t->done);
    pthread_cond_destroy(&t->go);
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_lock(&pool.mu);
    pool.callers--;
    pthread_mutex_unlock(&pool.mu);
    t->sync = 0;
    t->nhelpers = 0;
}

/* At exit (or when a shared library holding this is unloaded): end the
 * helpers, each after the team it serves lets it go, and join them, so
 * nothing of theirs is left behind. */
__attribute__((destructor)) static void pool_stop(void)
{
    pthread_mutex_lock(&pool.mu);
    pool.quit = 1;
    unsigned n = pool.started;
    for (unsigned i = 0; i < n; i++)
        pthread_cond_signal(&pool.h[i].cv);
    pthread_mutex_unlock(&pool.mu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(pool.h[i].th, NULL);
    pthread_mutex_lock(&pool.mu);
    for (unsigned i = 0; i < n; i++)
        pthread_cond_destroy(&pool.h[i].cv);
    pool.started = 0;
    pthread_mutex_unlock(&pool.mu);
}

void gs_hostpool_run(size_t ntasks, int one_thread, gs_hostpool_fn fn, void *arg)
{
    if (ntasks <= 1 || one_thread) {
        for (size_t t = 0; t < ntasks; t++)
            fn(arg, t, 0);
        return;
    }
    gs_hostpool_team team;
    if (gs_hostpool_join(&team, gs_hostpool_cpus() - 1) > 1)
        gs_hostpool_for(&team, ntasks, fn, arg);
    else
        for (size_t t = 0; t < ntasks; t++)
            fn(arg, t, 0);
    gs_hostpool_leave(&team);
}
