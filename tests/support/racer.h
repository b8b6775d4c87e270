/* A racing writer for the hostile-memory tests (issue 32): a thread that
 * keeps rewriting a buffer while the code under test sorts it, as a client
 * that writes its own shared memory during a sort does. Each round picks
 * one of the rewrites that broke the daemon or could: all bytes 0x00 then
 * 0xff in turn (every key moves to the first or the last bucket at once),
 * random bytes, a descending ramp (every key different, so a merge's runs
 * are unsorted), and single bytes poked at random places (a few keys
 * changed between a count and a scatter). Header-only, for tests and fuzz
 * targets; the code under test must never read or write out of bounds,
 * whatever answer it gives. */
#ifndef GS_RACER_H
#define GS_RACER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct racer {
    pthread_t th;
    unsigned char *buf;
    size_t bytes;
    uint64_t seed;
    _Atomic int stop;
    _Atomic unsigned long rounds;   /* rewrites done, to show it ran */
    int started;
} racer;

static inline uint64_t racer_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void *racer_main(void *arg)
{
    racer *r = arg;
    uint64_t s = r->seed | 1;
    unsigned flip = 0;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        switch (racer_rand(&s) % 4) {
        case 0:
            memset(r->buf, flip++ & 1 ? 0xff : 0x00, r->bytes);
            break;
        case 1:
            for (size_t i = 0; i + 8 <= r->bytes; i += 8) {
                uint64_t v = racer_rand(&s);
                memcpy(r->buf + i, &v, 8);
            }
            break;
        case 2:
            for (size_t i = 0; i < r->bytes; i++)
                r->buf[i] = (unsigned char)(r->bytes - i);
            break;
        default:
            for (unsigned k = 0; k < 4096 && r->bytes; k++)
                r->buf[racer_rand(&s) % r->bytes] = (unsigned char)racer_rand(&s);
            break;
        }
        atomic_fetch_add_explicit(&r->rounds, 1, memory_order_relaxed);
    }
    return NULL;
}

/* Start rewriting buf[0, bytes); 0, or -1 when no thread could start. */
static inline int racer_start(racer *r, void *buf, size_t bytes, uint64_t seed)
{
    r->buf = buf;
    r->bytes = bytes;
    r->seed = seed;
    atomic_store(&r->stop, 0);
    atomic_store(&r->rounds, 0);
    r->started = pthread_create(&r->th, NULL, racer_main, r) == 0;
    return r->started ? 0 : -1;
}

/* Stop and join; the rounds it ran. */
static inline unsigned long racer_stop(racer *r)
{
    if (r->started) {
        atomic_store(&r->stop, 1);
        pthread_join(r->th, NULL);
        r->started = 0;
    }
    return atomic_load(&r->rounds);
}

#endif
