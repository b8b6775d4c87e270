/* Corpus replay for a libFuzzer target, built with the normal compiler and
 * run by `make check`: every file of tests/fuzz/corpus/TARGET/ and
 * tests/fuzz/regress/TARGET/ goes through the target's
 * LLVMFuzzerTestOneInput, each in a child process so a crash names its
 * input and the rest still run. One TAP check per target: the inputs were
 * found (an empty or missing corpus fails) and none crashed. FUZZ_TARGET
 * (the directory name) comes from the build. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int read_all(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = b;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Run one input in a child: 0 when it returned normally. */
static int replay_one(const char *path)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        uint8_t *buf;
        size_t len;
        if (read_all(path, &buf, &len) < 0)
            _exit(3);
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        exit(0);    /* exit, not _exit: the target's atexit cleanups run */
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    if (WIFSIGNALED(st)) {
        tap_diag("%s: killed by signal %d", path, WTERMSIG(st));
        return -1;
    }
    if (WEXITSTATUS(st) != 0) {
        tap_diag("%s: exit status %d", path, WEXITSTATUS(st));
        return -1;
    }
    return 0;
}

/* Replay every regular file of dir; counts into *n and *bad. A missing
 * directory counts as one failure when `required`. */
static void replay_dir(const char *dir, int required, int *n, int *bad)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (required) {
            tap_diag("%s: cannot open", dir);
            (*bad)++;
        }
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        (*n)++;
        if (replay_one(path) != 0)
            (*bad)++;
    }
    closedir(d);
}

int main(int argc, char **argv)
{
    const char *top = getenv("top_srcdir");
    if (!top || !top[0])
        top = ".";
    char corpus[4096], regress[4096];
    snprintf(corpus, sizeof corpus, "%s/tests/fuzz/corpus/%s", top, FUZZ_TARGET);
    snprintf(regress, sizeof regress, "%s/tests/fuzz/regress/%s", top, FUZZ_TARGET);
    int n = 0, bad = 0, ncorpus;
    if (argc > 1) {
        /* replay the named files or directories only (debugging) */
        for (int i = 1; i < argc; i++) {
            struct stat st;
            if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                replay_dir(argv[i], 1, &n, &bad);
            else if (n++, replay_one(argv[i]) != 0)
                bad++;
        }
        ncorpus = n;
    } else {
        replay_dir(corpus, 1, &n, &bad);
        ncorpus = n;
        replay_dir(regress, 0, &n, &bad);
    }
    tap_diag("%s: %d corpus + %d regression inputs", FUZZ_TARGET, ncorpus, n - ncorpus);
    tap_ok(ncorpus > 0 && bad == 0, "fuzz target %s: %d inputs replayed, %d crashed",
           FUZZ_TARGET, n, bad);
    return tap_done();
}
