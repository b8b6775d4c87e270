/* The front end of `gsortd --tune-all`, `--tune-compare` and `--db-check`:
 * it opens the devices, the tuning database and the program cache, runs
 * the tuner with a live progress line on a terminal (log lines between
 * otherwise), prints the winners/plan report or the comparison, and says
 * what went wrong in gsortd's words. gsortd.c parses the options into a
 * gs_tuneall_opts and calls it; the answer is gsortd's exit status (0,
 * 1 on a runtime failure, 2 on a usage error found here). */
#ifndef GS_TUNEALL_H
#define GS_TUNEALL_H

#include <stddef.h>
#include <stdint.h>

typedef struct gs_tuneall_opts {
    const char *db_path;      /* NULL: the default database */
    double budget;            /* <= 0: not given */
    int quick;                /* --quick: the quick budget unless --budget */
    long device;              /* -1: every device */
    const char *algorithms;   /* "a,b"; NULL: every registered algorithm */
    const char *payloads;     /* "none,u32"; NULL: every payload kind */
    int max_log2;             /* 0: from the budget */
    const char *restrict_spec;/* NULL: none */
    uint64_t seed;
    const char *compare;      /* --tune-compare ALGO; NULL: --tune-all */
    size_t compare_n;
    unsigned seeds;
    int verbose;              /* --verbose: the full tables and a line per search */
} gs_tuneall_opts;

/* --tune-all, or --tune-compare when o->compare is set. */
int gs_tuneall_run(const gs_tuneall_opts *o);
/* --db-check: the database's whole integrity check (creating or
 * migrating it once the check passed); prints "ok", or says what is wrong
 * and what to do (exit status 1). */
int gs_tuneall_db_check(const char *db_path);

#endif
