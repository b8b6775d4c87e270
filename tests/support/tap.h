/* A tiny TAP producer for the test programs (automake's tap-driver.sh reads
 * it). Header-only: each test program includes it once. A test that cannot
 * run fails; there is no skip here on purpose (CI's PoCL must run all). */
#ifndef GS_TAP_H
#define GS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Weak, not static: one counter per program even when a test library
 * (tests/support/sortcheck.c) emits TAP lines from its own translation unit. */
__attribute__((weak)) int tap_n, tap_failed;

__attribute__((format(printf, 2, 3)))
__attribute__((unused)) static int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!cond)
        tap_failed++;
    fflush(stdout);
    return cond;
}

__attribute__((format(printf, 1, 2)))
__attribute__((unused)) static void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* Abort the whole program: prints "Bail out!" which the driver counts as an error. */
__attribute__((format(printf, 1, 2), noreturn))
__attribute__((unused)) static void tap_bail(const char *fmt, ...)
{
    va_list ap;
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(1);
}

/* Print the plan at the end and return the exit status. */
__attribute__((unused)) static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    if (tap_failed)
        printf("# %d of %d failed\n", tap_failed, tap_n);
    return tap_failed ? 1 : 0;
}

#endif
