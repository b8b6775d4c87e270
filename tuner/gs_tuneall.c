/* The front end of `gsortd --tune-all` (see gs_tuneall.h): the live
 * progress line, redrawn in place on a terminal and cut to its width, with
 * log lines drawn above it through a log sink while it shows (one INFO line
 * per finished group instead when stderr is not a terminal); the database
 * opened with the file system's reason when it cannot be written; the
 * algorithm list; the run itself with its report and the "results in" or
 * "tuning failed" lines. Every message is gsortd's, prefixed "gsortd: ". */
#include "config.h"
#include "gs_tuneall.h"
#include "gs_tune.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gs_db.h"
#include "gs_dev.h"
#include "gs_err.h"
#include "gs_log.h"
#include "gs_prog.h"
#include "gs_sort.h"
#include "gs_time.h"

/* The live progress line: redrawn with \r on a terminal; log lines clear it
 * first and redraw it after, so the two never mix. Off a terminal the same
 * words go out as a log line at most every PIPE_EVERY_S seconds. */
#define PIPE_EVERY_S 5.0

typedef struct progress_line {
    int tty;
    int verbose;                    /* --verbose: a log line per (algorithm, group) */
    int shown;
    double last_draw, last_line;
    char line[512];
    unsigned searches, unreached;   /* (algorithm, group) searches ended; none of their trials ran */
} progress_line;

static progress_line g_prog;

static void fmt_duration(double s, char *buf, size_t len)
{
    long t = s > 0 ? lround(s) : 0;
    if (t >= 3600)
        snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%lds", t);
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 100;
}

/* Every log line of the run: standard output first (the report goes
 * there), so that the two streams never interleave mid-line in one pipe;
 * on a terminal around the progress line. */
static void progress_log_sink(int level, const char *msg, void *ud)
{
    progress_line *pl = ud;
    fflush(stdout);
    if (pl->shown)
        fputs("\r\033[K", stderr);
    fprintf(stderr, "gsortd: %s: %s\n", gs_log_level_name(level), msg);
    if (pl->shown)
        fputs(pl->line, stderr);
    fflush(stderr);
}

static void on_progress(const gs_tune_progress *p, void *ud)
{
    progress_line *pl = ud;
    char best[160] = "", eta[32];
    fmt_duration(p->eta_s, eta, sizeof eta);
    if (p->group_end) {
        pl->searches++;
        /* not reached (the budget ran out first): counted, said once at
         * the end instead of a line each */
        if (p->trials_done == 0 && p->best_ms < 0) {
            pl->unreached++;
            return;
        }
        /* one line per (algorithm, group) with --verbose */
        int lvl = pl->verbose ? GS_LOG_INFO : GS_LOG_DEBUG;
        if (p->best_ms >= 0)
            gs_log(lvl, "device %d %s: %s keys, payload %s, n=2^%d: best %.4f ms (%s); %u "
                     "trial(s); group %u/%u", p->device_index, p->algorithm,
                     gs_kw_name(p->key_bits), p->payload, p->bucket, p->best_ms,
                     p->best_params, p->trials_done, p->groups_done + 1, p->groups_total);
        else
            gs_log(lvl, "device %d %s: %s keys, payload %s, n=2^%d: no valid configuration; %u "
                     "trial(s); group %u/%u", p->device_index, p->algorithm,
                     gs_kw_name(p->key_bits), p->payload, p->bucket, p->trials_done,
                     p->groups_done + 1, p->groups_total);
    }
    if (p->probe_ms > 0)
        snprintf(best, sizeof best, "  best at u32 2^%d: %s %.4f ms", p->probe_log2,
                 p->probe_algo, p->probe_ms);
    double now = gs_now_s();
    char text[512];
    unsigned long trials = p->measured + p->reused;
    if (!p->groups_total)       /* before the groups: builds, the probe */
        snprintf(text, sizeof text, "[dev %d] %s%s%s", p->device_index, p->phase,
                 p->algorithm[0] ? ": " : "", p->algorithm);
    else
        snprintf(text, sizeof text, "[dev %d] %s  group %u/%u  %lu trials  ETA %s%s",
                 p->device_index, p->phase, p->groups_done + (p->groups_done < p->groups_total),
                 p->groups_total, trials, eta, best);
    if (!pl->tty) {
        if (pl->last_line == 0)
            pl->last_line = now;        /* the first line after PIPE_EVERY_S */
        else if (now - pl->last_line >= PIPE_EVERY_S) {
            pl->last_line = now;
            GS_INFO("tuning %s", text);
        }
        return;
    }
    if (now - pl->last_draw < 0.1)
        return;   /* at most 10 redraws a second */
    pl->last_draw = now;
    /* most important first: a narrow terminal cuts the end */
    int w = term_width() - 1;
    if ((int)strlen(text) > w)
        text[w] = '\0';
    snprintf(pl->line, sizeof pl->line, "\r%s\033[K", text);
    fputs(pl->line, stderr);
    fflush(stderr);
    pl->shown = 1;
}

/* Why a database could not be opened for writing, as far as the file
 * system says (gs_db_open's message has SQLite's words, not the errno):
 * " (PATH: strerror)" for the file or its directory (SQLite creates the
 * -wal and -shm files there), or "" when both are writable. */
static void db_access_note(const char *path, char *buf, size_t len)
{
    char dir[4096];
    buf[0] = '\0';
    if (!path)
        return;
    if (access(path, W_OK) != 0 && errno != ENOENT) {
        snprintf(buf, len, " (%s: %s)", path, strerror(errno));
        return;
    }
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK) != 0)
        snprintf(buf, len, " (%s: %s)", dir, strerror(errno));
}

/* Open for writing after the whole integrity_check, however long it
 * takes: a damaged file is refused as it is, with what to do. */
static int open_db(const char *db_path, gs_db **db)
{
    gs_err err;
    gs_err_clear(&err);
    if (gs_db_open(db, db_path, GS_DB_FULL_CHECK, &err)) {
        char note[4200] = "";
        /* a damaged file, or a cause gs_db_open named already */
        if (err.code != GS_ECORRUPT && !strstr(err.msg, "not writable"))
            db_access_note(db_path, note, sizeof note);
        fprintf(stderr, "gsortd: cannot use the tuning database: %s%s\n", err.msg, note);
        return 1;
    }
    return 0;
}

int gs_tuneall_db_check(const char *db_path)
{
    gs_db *db;
    if (open_db(db_path, &db))   /* the check itself: a damaged file is refused */
        return 1;
    printf("ok\n");
    gs_db_close(db);
    return 0;
}

#define ALGOS_MAX 64

/* Parse "a,b" into registry entries (out: ALGOS_MAX); exit status 2 on an
 * unknown or repeated name. */
static int parse_algorithms(const char *list, const gs_algo **out, size_t *n)
{
    *n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const gs_algo *a = gs_algo_find(tok);
        if (!a) {
            fprintf(stderr, "gsortd: --algorithms: unknown algorithm '%s' (known:", tok);
            for (size_t i = 0; i < gs_algo_count(); i++)
                fprintf(stderr, " %s", gs_algo_at(i)->name);
            fprintf(stderr, ")\n");
            return 2;
        }
        if (*n == ALGOS_MAX) {
            fprintf(stderr, "gsortd: --algorithms: more than %d names\n", ALGOS_MAX);
            return 2;
        }
        for (size_t i = 0; i < *n; i++)
            if (out[i] == a) {
                fprintf(stderr, "gsortd: --algorithms: '%s' given twice\n", tok);
                return 2;
            }
        out[(*n)++] = a;
    }
    if (*n == 0) {
        fprintf(stderr, "gsortd: --algorithms: empty list\n");
        return 2;
    }
    return 0;
}

/* Parse "none,u32" into o's payload kinds; exit status 2 on an unknown or
 * repeated name. */
static int parse_payloads(const char *list, gs_tune_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    o->npayloads = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        gs_payload p;
        if (gs_payload_parse(tok, &p) < 0) {
            fprintf(stderr, "gsortd: --payloads: unknown payload kind '%s' (known: none u32 u64 "
                    "idx32 idx64)\n", tok);
            return 2;
        }
        for (size_t i = 0; i < o->npayloads; i++)
            if (o->payloads[i] == p) {
                fprintf(stderr, "gsortd: --payloads: '%s' given twice\n", tok);
                return 2;
            }
        o->payloads[o->npayloads++] = p;
    }
    if (o->npayloads == 0) {
        fprintf(stderr, "gsortd: --payloads: empty list\n");
        return 2;
    }
    return 0;
}

int gs_tuneall_run(const gs_tuneall_opts *ta)
{
    const gs_algo *algos[ALGOS_MAX];
    size_t nalgos = 0;
    int rc;
    if (ta->algorithms && (rc = parse_algorithms(ta->algorithms, algos, &nalgos)) != 0)
        return rc;
    const gs_algo *cmp = NULL;
    if (ta->compare && !(cmp = gs_algo_find(ta->compare))) {
        fprintf(stderr, "gsortd: --tune-compare: unknown algorithm '%s'\n", ta->compare);
        return 2;
    }
    gs_dev *devs;
    size_t ndev;
    gs_err err;
    gs_err_clear(&err);
    if (gs_dev_probe(&devs, &ndev, &err)) {
        fprintf(stderr, "gsortd: probing OpenCL devices failed: %s\n", err.msg);
        return 1;
    }
    if (ta->device >= 0 && (size_t)ta->device >= ndev) {
        fprintf(stderr, "gsortd: --device %ld: no such device (%zu found; see --list-devices)\n",
                ta->device, ndev);
        gs_dev_free_list(devs, ndev);
        return 2;
    }
    if (ndev == 0) {
        fprintf(stderr, "gsortd: no OpenCL device found: nothing to tune\n");
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_db *db;
    if (open_db(ta->db_path, &db)) {
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_pcache *pc = NULL;
    if (gs_pcache_open(&pc, NULL, &err)) {
        fprintf(stderr, "gsortd: %s\n", err.msg);
        gs_db_close(db);
        gs_dev_free_list(devs, ndev);
        return 1;
    }
    gs_tune_opts o;
    gs_tune_opts_init(&o, ta->budget > 0 ? ta->budget
                          : ta->quick ? GS_TUNE_QUICK_BUDGET : GS_TUNE_DEFAULT_BUDGET);
    if (nalgos) {
        o.algos = algos;
        o.nalgos = nalgos;
    }
    if (ta->payloads && (rc = parse_payloads(ta->payloads, &o)) != 0) {
        gs_pcache_close(pc);
        gs_db_close(db);
        gs_dev_free_list(devs, ndev);
        return rc;
    }
    if (ta->max_log2)   /* every size up to it, none past it */
        o.max_log2 = o.large_max_log2 = ta->max_log2;
    o.restrict_spec = ta->restrict_spec;
    o.seed = ta->seed;
    /* A quick tune builds no program for a device algorithm on a CPU
     * device that has not been probed there before (gs_tune.h). */
    if (nalgos)                 /* what the user named is tuned */
        o.cpu_probe = GS_TUNE_PROBE_OFF;
    else if (ta->quick && !(ta->budget > 0))
        o.cpu_probe = GS_TUNE_PROBE_RECORDED;
    gs_dev *sel = ta->device >= 0 ? &devs[ta->device] : devs;
    size_t nsel = ta->device >= 0 ? 1 : ndev;
    if (cmp) {
        rc = gs_tune_compare(db, sel, pc, cmp, ta->compare_n, &o, ta->seeds, stdout, &err);
        if (rc)
            fprintf(stderr, "gsortd: --tune-compare: %s\n", err.msg);
        rc = rc ? 1 : 0;
    } else {
        g_prog.tty = isatty(STDERR_FILENO);
        g_prog.verbose = ta->verbose;
        o.progress = on_progress;
        o.progress_ud = &g_prog;
        gs_log_set_sink(progress_log_sink, &g_prog);
        gs_tune_report rep = { 0 };
        rc = gs_tune_all(db, sel, nsel, pc, &o, &rep, &err);
        if (g_prog.shown) {
            fputs("\r\033[K", stderr);
            g_prog.shown = 0;
        }
        if (ta->verbose)                /* the full tables, then the summary */
            gs_tune_report_print(stdout, &rep);
        gs_tune_report_summary(stdout, &rep);
        if (g_prog.unreached) {
            double budget = 0;
            for (size_t i = 0; i < rep.ndevs; i++)
                budget += rep.devs[i].budget_s;
            unsigned reached = g_prog.searches - g_prog.unreached;
            double need = reached ? budget * g_prog.searches / reached : budget * 4;
            printf("%u of %u searches (algorithm, key width, payload, size) were not reached "
                   "within the budget of %.0f s: their shapes take the nearest tuned plan; "
                   "about --budget %.0f would reach them.\n", g_prog.unreached,
                   g_prog.searches, budget, ceil(need / 10) * 10);
        }
        if (!rc)
            printf("Tuning took %.1f s; results in %s%s\n", rep.elapsed_s, gs_db_path(db),
                   ta->verbose ? "" : " (every row: gsort-query plan, gsort-query winners)");
        fflush(stdout);
        gs_log_set_sink(NULL, NULL);
        gs_tune_report_free(&rep);
        int corrupt = rc == GS_ECORRUPT &&
                      (sqlite3_extended_errcode(gs_db_handle(db)) & 0xff) == SQLITE_CORRUPT;
        if (corrupt) {
            /* damaged after the whole check at open (by another writer,
             * the disk): say what to do, as the open would */
            fprintf(stderr, "gsortd: tuning failed: %s; the database %s is damaged: move it "
                    "aside and tune again (gsortd --tune-all)\n", err.msg, gs_db_path(db));
        } else if (rc) {
            /* A full disk or a file made read-only under us: SQLite's
             * message lacks the errno. It keeps no errno for SQLITE_FULL
             * (a short write), whose fixed text is the sign of ENOSPC. */
            sqlite3 *h = gs_db_handle(db);
            int e = sqlite3_system_errno(h);
            if (!e && ((sqlite3_extended_errcode(h) & 0xff) == SQLITE_FULL ||
                       strstr(err.msg, sqlite3_errstr(SQLITE_FULL))))
                e = ENOSPC;
            if (e)
                fprintf(stderr, "gsortd: tuning failed: %s (errno %d: %s)\n", err.msg, e,
                        strerror(e));
            else
                fprintf(stderr, "gsortd: tuning failed: %s\n", err.msg);
        }
        rc = rc ? 1 : 0;
    }
    gs_pcache_close(pc);
    gs_db_close(db);
    gs_dev_free_list(devs, ndev);
    return rc;
}
