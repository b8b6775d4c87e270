/* The daemon's test hooks in one place: environment variables the test
 * suite sets to force a path that the machine it runs on (two PoCL CPU
 * devices, no GPU, not root) would otherwise never take. Each is named
 * for what it forces and read once, at the first call; production runs
 * have none set, and then every field is its "off" value. */
#ifndef GS_HOOKS_H
#define GS_HOOKS_H

typedef struct gs_hooks {
    int split_always;        /* GSORTD_TEST_SPLIT=1: split whenever two devices can serve,
                                predicted faster or not (gs_split.c) */
    int uid_cap_all;         /* GSORTD_TEST_UID_CAP_ALL=1: max_clients_per_uid and
                                max_memory_per_uid hold root and the daemon's uid too */
    int pin_any_device;      /* GSORTD_TEST_PIN_ANY=1: register client blocks with CPU
                                devices too, so the pinned path runs on PoCL */
    int pin_once_off;        /* GSORTD_TEST_PIN_ONCE=0: never pin a block sent once */
    unsigned long stage_min, stage_chunk;  /* GSORTD_TEST_STAGE=MIN,CHUNK: stage copies of
                                MIN bytes and more through pinned buffers of CHUNK bytes
                                on every device, copying as a GPU does (0, 0: off) */
    int ooc_route;           /* GSORTD_TEST_OOC=host or device[:LANES]: where out-of-core
                                pieces are merged (-1: the daemon decides; else a
                                gs_ooc_force route) */
    unsigned ooc_lanes;      /* LANES of device[:LANES] (0: the default) */
    int ooc_copy_plain;      /* GSORTD_TEST_OOC_COPY=plain: the device route's copies
                                without non-temporal stores */
    int defaults_gpu;        /* GSORTD_TEST_DEFAULTS=gpu[:N]: every device gets a GPU's
                                built-in defaults, the crossover measured ... */
    int defaults_log2;       /* ... or fixed at 2^N (-1: measured) */
    unsigned signal_delay_ms; /* GSORTD_TEST_SIGNAL_DELAY_MS=N: the server waits N ms between
                                listening and installing its signal handlers, so that a test
                                can send SIGHUP inside that window (gs_srv.c) */
    int slow_dev;            /* GSORTD_TEST_SLOW_DEV=D:MS: device D's worker takes MS ms
                                more over every run, as a slower device would, and its */
    unsigned slow_ms;        /* run times say so (gs_sched.c; -1, 0: off) */
} gs_hooks;

/* The hooks, read from the environment at the first call (thread-safe). */
const gs_hooks *gs_hooks_get(void);

#endif
