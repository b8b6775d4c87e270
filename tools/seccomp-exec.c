/* seccomp-exec: run a command under the system-call filters of gsortd's
 * systemd unit, for tools/unit-sandbox where no systemd runs (a container,
 * the GPU machine): what SystemCallFilter=, SystemCallErrorNumber=,
 * SystemCallArchitectures=native, RestrictAddressFamilies=AF_UNIX,
 * RestrictNamespaces=yes, LockPersonality=yes and RestrictRealtime=yes
 * would do, as one seccomp BPF program of the same shape as systemd's:
 * a call of another architecture kills the process, an x32 call and a call
 * outside the allow-list fail with the errno, socket() of another family
 * with EAFNOSUPPORT, clone/unshare with a namespace flag and setns with
 * EPERM, clone3 with ENOSYS (so that libc falls back to clone, whose flags
 * a filter can read), personality() but to query or keep PER_LINUX and
 * sched_setscheduler() to a real-time policy with EPERM.
 *   cc -O2 -DSC_LIST='"list.h"' tools/seccomp-exec.c -o seccomp-exec
 * where list.h holds one `#ifdef __NR_x / __NR_x, / #endif` per allowed
 * name (tools/unit-sandbox writes it from the unit's SystemCallFilter=).
 *   seccomp-exec ERRNO FAMILIES COMMAND [ARG...]
 * FAMILIES: the address families socket() may open, as numbers separated
 * by commas (1: AF_UNIX, 16: AF_NETLINK), or "any".
 * It needs no_new_privs set already (setpriv --nnp) or CAP_SYS_ADMIN. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SC_LIST
#error "build with -DSC_LIST='\"file\"' naming the allow-list"
#endif

#if !defined(__x86_64__)
#error "seccomp-exec knows x86-64 only (the machines it is used on)"
#endif
#define NATIVE AUDIT_ARCH_X86_64
#define X32_BIT 0x40000000u

static const long allowed[] = {
#include SC_LIST
};

#define NS_FLAGS 0x7e020080u   /* CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME */
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static struct sock_filter prog[4096];
static unsigned families[16], nfamilies;
static int any_family;
static unsigned len;

static void emit(struct sock_filter f)
{
    if (len == sizeof prog / sizeof prog[0]) {
        fprintf(stderr, "seccomp-exec: filter too long\n");
        exit(2);
    }
    prog[len++] = f;
}
#define STMT(c, k) emit((struct sock_filter)BPF_STMT((c), (k)))
#define JUMP(c, k, t, f) emit((struct sock_filter)BPF_JUMP((c), (k), (t), (f)))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define LOAD(off) STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define ERR(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* The check of an allowed call nr, the number in the accumulator: allow
 * it, or test its arguments. Returns whether it loaded an argument (the
 * number must then be loaded again for the next comparison). */
static int allow_one(long nr)
{
    switch (nr) {
    case __NR_socket:   /* RestrictAddressFamilies= */
        if (any_family)
            break;
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, (unsigned char)(2 * nfamilies + 2));
        LOAD(ARG_LO(0));
        for (unsigned i = 0; i < nfamilies; i++) {
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, families[i], 0, 1);
            RET(SECCOMP_RET_ALLOW);
        }
        RET(ERR(EAFNOSUPPORT));
        return 1;
    case __NR_clone:    /* RestrictNamespaces=yes */
    case __NR_unshare:
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 4);
        LOAD(ARG_LO(0));
        JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1);
        RET(ERR(EPERM));
        RET(SECCOMP_RET_ALLOW);
        return 1;
    case __NR_setns:
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
        RET(ERR(EPERM));
        return 0;
    case __NR_clone3:
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
        RET(ERR(ENOSYS));
        return 0;
    case __NR_personality:   /* LockPersonality=yes */
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 5);
        LOAD(ARG_LO(0));
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 2, 0);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
        RET(ERR(EPERM));
        RET(SECCOMP_RET_ALLOW);
        return 1;
    case __NR_sched_setscheduler:   /* RestrictRealtime=yes: SCHED_FIFO, SCHED_RR */
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 6);
        LOAD(ARG_LO(1));
        STMT(BPF_ALU | BPF_AND | BPF_K, 0x3fffffffu);   /* without SCHED_RESET_ON_FORK */
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 0);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1);
        RET(ERR(EPERM));
        RET(SECCOMP_RET_ALLOW);
        return 1;
    default:
        break;
    }
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
    RET(SECCOMP_RET_ALLOW);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: seccomp-exec ERRNO FAMILIES COMMAND [ARG...]\n");
        return 2;
    }
    unsigned eno = (unsigned)strtoul(argv[1], NULL, 10);
    if (!eno)
        eno = EPERM;
    if (!strcmp(argv[2], "any"))
        any_family = 1;
    for (char *p = argv[2]; !any_family && *p && nfamilies < 16; p++) {
        families[nfamilies++] = (unsigned)strtoul(p, &p, 10);
        if (*p != ',')
            break;
    }
    LOAD(offsetof(struct seccomp_data, arch));
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE, 1, 0);
    RET(SECCOMP_RET_KILL_PROCESS);
    LOAD(offsetof(struct seccomp_data, nr));
    JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1);
    RET(ERR(eno));
    size_t n = sizeof allowed / sizeof allowed[0];
    for (size_t i = 0; i < n; i++)
        if (allow_one(allowed[i]))
            LOAD(offsetof(struct seccomp_data, nr));
    RET(ERR(eno));
    struct sock_fprog fp = { .len = (unsigned short)len, .filter = prog };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) != 0) {
        fprintf(stderr, "seccomp-exec: installing the filter: %s (no_new_privs not set?)\n",
                strerror(errno));
        return 2;
    }
    execv(argv[3], argv + 3);
    fprintf(stderr, "seccomp-exec: %s: %s\n", argv[3], strerror(errno));
    return 127;
}
