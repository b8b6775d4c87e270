/* The memory budget (gs_mem.h): the limit max_memory = auto is drawn from
 * (a cgroup's memory limit, found the way the kernel documents it: the
 * process's cgroup path in /proc/self/cgroup, the hierarchy's mount point
 * and root in /proc/self/mountinfo, the limit files walked up from the
 * process's cgroup, since a parent's limit binds its children too), and the
 * lock-free count of what requests hold. */
#include "config.h"
#include "gs_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (UINT64_C(1) << 20)
/* v1 writes "no limit" as the largest page-aligned long; anything this
 * large is no limit in practice. */
#define V1_UNLIMITED (UINT64_C(1) << 62)

/* One cgroup hierarchy that can hold a memory limit: where it is mounted,
 * which of its cgroups the mount shows at its top, and this process's
 * cgroup in it. */
typedef struct hier {
    int found;                  /* in /proc/self/cgroup */
    char path[4096];            /* the process's cgroup, "/a/b" */
    char mroot[4096];           /* the mount's root within the hierarchy */
    char mpoint[4096];          /* where it is mounted */
    int mounted;
} hier;

static void join(char *out, size_t len, const char *root, const char *path)
{
    snprintf(out, len, "%s%s", root ? root : "", path);
}

/* mountinfo escapes blanks, tabs, newlines and backslashes as \ooo. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Whether the comma-separated `list` names `word`. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, word, n))
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* /proc/self/cgroup: "0::/path" is v2; "N:...memory...:/path" is v1's
 * memory hierarchy. */
static void cgroup_line(char *line, hier *v2, hier *v1)
{
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/')
        return;
    *c1 = *c2 = '\0';
    hier *h = !strcmp(line, "0") && c1 + 1 == c2 ? v2 : has_word(c1 + 1, "memory") ? v1 : NULL;
    if (h && !h->found && strlen(c2 + 1) < sizeof h->path) {
        snprintf(h->path, sizeof h->path, "%s", c2 + 1);
        h->found = 1;
    }
}

/* /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE SRC SUPEROPTS".
 * The first cgroup2 mount, and the first cgroup mount with the memory
 * controller. */
static void mount_line(char *line, hier *v2, hier *v1)
{
    char *fld[6] = { 0 }, *save = NULL, *tok = strtok_r(line, " ", &save);
    int k = 0;
    for (; tok && k < 6; tok = strtok_r(NULL, " ", &save))
        fld[k++] = tok;
    if (k < 6)
        return;
    while (tok && strcmp(tok, "-"))         /* the optional tags */
        tok = strtok_r(NULL, " ", &save);
    char *type = tok ? strtok_r(NULL, " ", &save) : NULL;
    char *src = type ? strtok_r(NULL, " ", &save) : NULL;
    char *opts = src ? strtok_r(NULL, " ", &save) : NULL;
    hier *h = !type ? NULL : !strcmp(type, "cgroup2") ? v2
              : !strcmp(type, "cgroup") && opts && has_word(opts, "memory") ? v1 : NULL;
    if (!h || h->mounted || strlen(fld[3]) >= sizeof h->mroot ||
        strlen(fld[4]) >= sizeof h->mpoint)
        return;
    snprintf(h->mroot, sizeof h->mroot, "%s", fld[3]);
    snprintf(h->mpoint, sizeof h->mpoint, "%s", fld[4]);
    unescape(h->mroot);
    unescape(h->mpoint);
    h->mounted = 1;
}

/* Each line of the file at root + path, without its newline, to fn. */
static void each_line(const char *root, const char *path,
                      void (*fn)(char *line, hier *v2, hier *v1), hier *v2, hier *v1)
{
    char name[4200];
    join(name, sizeof name, root, path);
    FILE *f = fopen(name, "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        fn(line, v2, v1);
    }
    free(line);
    fclose(f);
}

/* A limit file: a number of bytes, or "max" (v2's no limit). */
static int read_limit(const char *fn, uint64_t *out)
{
    FILE *f = fopen(fn, "re");
    if (!f)
        return 0;
    char buf[64];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    if (!strcmp(buf, "max")) {
        *out = GS_MEM_UNLIMITED;
        return 1;
    }
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (!n || *end || buf[0] == '-')
        return 0;
    *out = v >= V1_UNLIMITED ? GS_MEM_UNLIMITED : (uint64_t)v;
    return 1;
}

/* The smallest `file` limit from the process's cgroup in h up to the top
 * of its mount (dflt_mpoint when mountinfo did not name one); *best and
 * `where` updated when smaller. */
static void walk(const char *root, const hier *h, const char *dflt_mpoint, const char *file,
                 const char *label, uint64_t *best, char *where, size_t wlen)
{
    if (!h->found)
        return;
    const char *mpoint = h->mounted ? h->mpoint : dflt_mpoint;
    const char *mroot = h->mounted ? h->mroot : "/";
    /* The process's cgroup as a path under the mount: the mount shows the
     * hierarchy from mroot down; a cgroup outside it is seen at the top. */
    const char *rel = h->path;
    size_t rl = strlen(mroot);
    if (strcmp(mroot, "/")) {
        if (!strncmp(rel, mroot, rl) && (rel[rl] == '/' || !rel[rl]))
            rel += rl;
        else
            rel = "";
    }
    char dir[8400];
    int top = snprintf(dir, sizeof dir, "%s%s", root ? root : "", mpoint);
    if (top < 0 || (size_t)top >= sizeof dir)
        return;
    while (top > 1 && dir[top - 1] == '/')      /* "/" as a mount point */
        dir[--top] = '\0';
    snprintf(dir + top, sizeof dir - (size_t)top, "%s", rel);
    for (;;) {
        size_t dl = strlen(dir);
        while (dl > (size_t)top && dir[dl - 1] == '/')
            dir[--dl] = '\0';
        char fn[8500];
        uint64_t v;
        snprintf(fn, sizeof fn, "%s/%s", dir, file);
        if (read_limit(fn, &v) && v < *best) {
            *best = v;
            if (where)
                snprintf(where, wlen, "%s %s of %s", label, file,
                         dl > (size_t)top ? dir + (root ? strlen(root) : 0)
                                          : mpoint);
        }
        if (dl <= (size_t)top)
            break;
        char *slash = strrchr(dir + top, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
}

uint64_t gs_mem_cgroup_limit(const char *root, char *where, size_t wlen)
{
    if (root && !root[0])
        root = NULL;
    if (where && wlen)
        where[0] = '\0';
    hier *v2 = calloc(2, sizeof *v2);
    if (!v2)
        return GS_MEM_UNLIMITED;
    hier *v1 = v2 + 1;
    each_line(root, "/proc/self/cgroup", cgroup_line, v2, v1);
    each_line(root, "/proc/self/mountinfo", mount_line, v2, v1);
    uint64_t best = GS_MEM_UNLIMITED;
    walk(root, v2, "/sys/fs/cgroup", "memory.max", "cgroup v2", &best, where, wlen);
    walk(root, v1, "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "cgroup v1", &best, where,
         wlen);
    free(v2);
    return best;
}

uint64_t gs_mem_phys(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_C(4) << 30;
}

uint64_t gs_mem_auto(uint64_t limit)
{
    uint64_t floor = 192 * MIB < limit / 2 ? 192 * MIB : limit / 2;
    uint64_t head = limit / 4 > floor ? limit / 4 : floor;
    return limit - head;
}

uint64_t gs_mem_limit(char *where, size_t wlen)
{
    uint64_t phys = gs_mem_phys();
    uint64_t cg = gs_mem_cgroup_limit(NULL, where, wlen);
    if (cg < phys)
        return cg;
    if (where && wlen)
        snprintf(where, wlen, "physical memory");
    return phys;
}

/* ---- the count ---- */

int gs_mem_take(gs_mem *m, uint64_t bytes, uint64_t cached)
{
    uint64_t cap = atomic_load(&m->cap), used = atomic_load(&m->used);
    do {
        if (bytes > cap || cached > cap - bytes || used > cap - bytes - cached)
            return 0;
    } while (!atomic_compare_exchange_weak(&m->used, &used, used + bytes));
    uint64_t now = used + bytes, peak = atomic_load(&m->peak);
    while (now > peak && !atomic_compare_exchange_weak(&m->peak, &peak, now))
        ;
    return 1;
}

void gs_mem_give(gs_mem *m, uint64_t bytes)
{
    atomic_fetch_sub(&m->used, bytes);
}
