/* The process-wide pool of helper threads that multi-threaded host work
 * (the host sort) shares, so that several sorts at once never start more
 * threads than the machine has cores: at most (online CPUs - 1) helpers,
 * started lazily on first need. A caller forms a team with the helpers
 * that are idle right now (it never waits for busy ones; possibly none),
 * runs phases of independent tasks on it, the caller itself working too,
 * and lets them go. Tasks are taken in any order by any team member, so a
 * caller's result must not depend on which worker ran what or on how many
 * there were. The helpers end when the process exits (or the library is
 * unloaded); a child process after fork() starts with none. */
#ifndef GS_HOSTPOOL_H
#define GS_HOSTPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* The most helpers a team can have. */
#define GS_HOSTPOOL_MAX 255

/* One task of a phase: `worker` is 0 for the caller and 1..helpers for the
 * team's helpers, so per-worker scratch can be indexed by it. */
typedef void (*gs_hostpool_fn)(void *arg, size_t task, unsigned worker);

/* A team, on the caller's stack between join and leave. Its fields are the
 * pool's. */
typedef struct gs_hostpool_team {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned nhelpers;
    atomic_uint gen;        /* phases started (read unlocked by spinning helpers) */
    atomic_uint busy;       /* helpers in the current phase */
    unsigned left;          /* helpers gone after leave */
    unsigned sleepers;      /* helpers waiting on go */
    int closed;             /* the current phase takes no more helpers */
    atomic_int leaving;
    int sync;               /* mu, go and done are initialised */
    gs_hostpool_fn fn;
    void *arg;
    size_t ntasks;
    atomic_size_t next;     /* the next task to take */
} gs_hostpool_team;

/* The online CPUs (at least 1): what a caller should ask a team for. */
unsigned gs_hostpool_cpus(void);
/* Test hook: pretend the machine has n CPUs (0: what it has); returns the
 * previous setting. */
unsigned gs_hostpool_force_cpus(unsigned n);
/* Form a team of the caller and up to `want` helpers idle now, within the
 * CPUs the teams formed elsewhere leave free (each caller and each helper
 * serving a team holds one); returns how many workers it has, 1 + helpers
 * (1: the caller alone, when no CPU or helper is free, none can be started
 * or want is 0). */
unsigned gs_hostpool_join(gs_hostpool_team *t, unsigned want);
/* Run fn(arg, i, worker) for every i < ntasks across the team; returns when
 * all have run. Memory the tasks wrote is visible to the caller after it. */
void gs_hostpool_for(gs_hostpool_team *t, size_t ntasks, gs_hostpool_fn fn, void *arg);
/* Give the helpers back to the pool; t may go out of scope after it. */
void gs_hostpool_leave(gs_hostpool_team *t);
/* fn(arg, i, worker) for every i < ntasks on a team of the free CPUs
 * (join, for, leave), or on the caller alone when there is one task or
 * one_thread (a client library's process keeps no pool). */
void gs_hostpool_run(size_t ntasks, int one_thread, gs_hostpool_fn fn, void *arg);

#endif
