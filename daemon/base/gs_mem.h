/* The daemon's memory budget (max_memory, gsortd.conf(5)): how much memory
 * the requests in flight may hold at once, and the count charged against
 * it. The limit it is drawn from is the smallest memory limit of the
 * daemon's own cgroup and its ancestors (cgroup v2 memory.max, v1
 * memory.limit_in_bytes), else the machine's physical memory; auto is that
 * limit less a headroom for what the daemon holds besides requests (the
 * OpenCL runtime and compiled programs, pools and caches, headers, thread
 * stacks). A request is charged before the daemon allocates anything for
 * it, and gives the charge back when its reply is written, so memory the
 * requests hold never passes the budget: a request that does not fit waits
 * or is refused (daemon/serve/gs_admit.c), and the kernel never has to kill the
 * daemon for it. Thread-safe: every I/O loop charges the same budget. */
#ifndef GS_MEM_H
#define GS_MEM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* No limit (no cgroup limit found; an unlimited cgroup). */
#define GS_MEM_UNLIMITED UINT64_MAX

/* The smallest memory limit of this process's cgroups, v2 (memory.max)
 * and v1 (memory.limit_in_bytes), walking up from its own cgroup (from
 * /proc/self/cgroup) to the root of each hierarchy (from
 * /proc/self/mountinfo, else /sys/fs/cgroup and /sys/fs/cgroup/memory).
 * `root` stands for "/" (NULL or "": the real one; the tests give a
 * directory of fake files). GS_MEM_UNLIMITED when none is set. `where`
 * (may be NULL) gets the file the limit came from, or "". */
uint64_t gs_mem_cgroup_limit(const char *root, char *where, size_t wlen);
/* The machine's physical memory (_SC_PHYS_PAGES); 4 GiB when unknown. */
uint64_t gs_mem_phys(void);
/* max_memory = auto for a memory limit of `limit` bytes: the limit less a
 * headroom of a quarter of it, at least min(192 MiB, half of it) (measured
 * in a 512 MiB cgroup: the daemon with PoCL's compiler loaded holds about
 * 120 MiB besides what it charges). */
uint64_t gs_mem_auto(uint64_t limit);
/* The limit max_memory = auto is drawn from on this machine: the cgroup's
 * when set and below the physical memory, else the physical memory;
 * `where` (may be NULL) says which ("cgroup v2 memory.max of /sys/...", or
 * "physical memory"). */
uint64_t gs_mem_limit(char *where, size_t wlen);

/* The count. cap is max_memory resolved (set at start and on SIGHUP); used
 * what requests hold now, peak its highest. */
typedef struct gs_mem {
    _Atomic uint64_t cap, used, peak;
    _Atomic unsigned waiting;           /* requests waiting for memory now */
    _Atomic unsigned long waited;       /* requests that had to wait */
    _Atomic unsigned long refused;      /* refused: larger than the budget, or waited too long */
} gs_mem;

/* Charge `bytes` when used + bytes + `cached` (memory held in caches that
 * could be given back first) stays within cap: 1; else 0, nothing
 * charged. */
int gs_mem_take(gs_mem *m, uint64_t bytes, uint64_t cached);
/* Give back what gs_mem_take charged. */
void gs_mem_give(gs_mem *m, uint64_t bytes);

#endif
